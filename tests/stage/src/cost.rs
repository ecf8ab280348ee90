//! The cost model: what the run's requests would cost on AWS at on-demand prices.
//!
//! The fault proxy hands every answered DynamoDB and SQS request to a [`Meter`], which prices
//! it in the units AWS bills. moto does not size `ConsumedCapacity` by item (it answers fixed
//! figures), so the meter computes capacity units itself from the items in the requests and
//! answers, by DynamoDB's published rules:
//!
//! - an item's size is the sum of its attribute names and values ([`item_size`]);
//! - reads: one read unit per 4 KB, rounded up, of each item read (`GetItem`) or of the total
//!   returned by a `Query`; half of that when eventually consistent; at least one unit (half);
//! - writes: one write unit per 1 KB, rounded up, at least one; for `PutItem` the size of the
//!   new item (or the old one, when it is returned and larger);
//! - transactions: twice the units of each item (prepare and commit), `ConditionCheck`s too;
//! - an `UpdateItem`, `DeleteItem`, or a transaction's `Update`/`Delete`/`ConditionCheck`, whose
//!   item the proxy does not see, is priced at the minimum (one unit, two in a transaction)
//!   unless the answer returns the item; such requests are counted as lower bounds
//!   ([`Meter::lower_bounds`]) so the figure says how much of it is a floor.
//!
//! SQS bills each 64 KB chunk of a request's payload as one request (the larger of what was
//! sent and what came back); Lambda bills invocations and GB-seconds (duration rounded up to
//! the millisecond, times the function's `MemorySize`); an HTTP API bills each request (per
//! 512 KB; the stage's are all far smaller). Prices come from `bench/prices-us-east-1.txt`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

/// DynamoDB's read unit: one strongly consistent read of up to 4 KB.
const READ_UNIT_BYTES: u64 = 4 * 1024;
/// DynamoDB's write unit: one write of up to 1 KB.
const WRITE_UNIT_BYTES: u64 = 1024;
/// Transactions cost twice a plain request's units (prepare and commit).
const TRANSACTION_FACTOR: f64 = 2.0;
/// SQS bills each 64 KB chunk of a payload as one request.
const SQS_CHUNK_BYTES: u64 = 64 * 1024;
/// The price table is per million units.
const MILLION: f64 = 1_000_000.0;
/// The goal: at most this many dollars per 1,000 turns, model tokens excluded (issue #20).
pub const GOAL_PER_1000_TURNS: f64 = 0.05;

/// The on-demand prices of `bench/prices-*.txt`, in US dollars.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    /// The region the prices are for.
    pub region: String,
    /// When they were written down.
    pub date: String,
    /// DynamoDB, per million write request units.
    pub dynamodb_write_per_million: f64,
    /// DynamoDB, per million read request units.
    pub dynamodb_read_per_million: f64,
    /// SQS FIFO, per million requests.
    pub sqs_fifo_per_million: f64,
    /// Lambda, per million invocations.
    pub lambda_requests_per_million: f64,
    /// Lambda on arm64, per GB-second.
    pub lambda_gb_second_arm64: f64,
    /// Lambda on x86_64, per GB-second.
    pub lambda_gb_second_x86_64: f64,
    /// API Gateway HTTP API, per million requests.
    pub http_api_per_million: f64,
}

impl Prices {
    /// Parses a price table: `key = value` lines, `#` comments; every key is required.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut values = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                bail!("price table line {}: expected `key = value`", n + 1);
            };
            values.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        let text_of = |key: &str| -> anyhow::Result<String> {
            values
                .get(key)
                .cloned()
                .with_context(|| format!("the price table has no `{key}`"))
        };
        let price = |key: &str| -> anyhow::Result<f64> {
            let value = text_of(key)?;
            let price: f64 = value
                .parse()
                .with_context(|| format!("the price table's `{key}` is not a number: `{value}`"))?;
            if !price.is_finite() || price < 0.0 {
                bail!("the price table's `{key}` must be a price of zero or more: `{value}`");
            }
            Ok(price)
        };
        Ok(Self {
            region: text_of("region")?,
            date: text_of("date")?,
            dynamodb_write_per_million: price("dynamodb_write_per_million")?,
            dynamodb_read_per_million: price("dynamodb_read_per_million")?,
            sqs_fifo_per_million: price("sqs_fifo_per_million")?,
            lambda_requests_per_million: price("lambda_requests_per_million")?,
            lambda_gb_second_arm64: price("lambda_gb_second_arm64")?,
            lambda_gb_second_x86_64: price("lambda_gb_second_x86_64")?,
            http_api_per_million: price("http_api_per_million")?,
        })
    }

    /// The GB-second price of `architecture` (`arm64` or `x86_64`).
    pub fn gb_second(&self, architecture: &str) -> anyhow::Result<f64> {
        match architecture {
            "arm64" => Ok(self.lambda_gb_second_arm64),
            "x86_64" => Ok(self.lambda_gb_second_x86_64),
            other => bail!("no Lambda price for architecture `{other}`"),
        }
    }
}

/// The size DynamoDB bills for an item in DynamoDB JSON (`{"name": {"S": "..."}}`): the UTF-8
/// length of each attribute name plus the size of its value ([`value_size`]).
pub fn item_size(item: &Map<String, Value>) -> u64 {
    item.iter()
        .map(|(name, value)| name.len() as u64 + value_size(value))
        .sum()
}

/// The size of one typed attribute value: strings by UTF-8 length, binaries by decoded length,
/// numbers one byte per two significant digits plus one, booleans and nulls one byte; lists and
/// maps three bytes plus one per element plus their elements (a map's keys included); sets the
/// sum of their elements.
pub fn value_size(value: &Value) -> u64 {
    let Some((kind, inner)) = value.as_object().and_then(|o| o.iter().next()) else {
        return 0;
    };
    match (kind.as_str(), inner) {
        ("S", Value::String(s)) => s.len() as u64,
        ("N", Value::String(n)) => number_size(n),
        ("B", Value::String(b)) => base64_len(b),
        ("BOOL" | "NULL", _) => 1,
        ("SS", Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.len() as u64)
            .sum(),
        ("NS", Value::Array(a)) => a.iter().filter_map(Value::as_str).map(number_size).sum(),
        ("BS", Value::Array(a)) => a.iter().filter_map(Value::as_str).map(base64_len).sum(),
        ("L", Value::Array(a)) => 3 + a.iter().map(|v| 1 + value_size(v)).sum::<u64>(),
        ("M", Value::Object(m)) => 3 + m.len() as u64 + item_size(m),
        _ => 0,
    }
}

fn number_size(n: &str) -> u64 {
    let digits: String = n
        .trim_start_matches('-')
        .split(['e', 'E'])
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len() as u64;
    significant.div_ceil(2) + 1
}

fn base64_len(b: &str) -> u64 {
    let padding = b.bytes().rev().take_while(|c| *c == b'=').count() as u64;
    (b.len() as u64 / 4 * 3).saturating_sub(padding)
}

/// Read units of reading `bytes` (one item, or a query's total): 4 KB units rounded up, at
/// least one; half when eventually consistent.
pub fn read_units(bytes: u64, consistent: bool) -> f64 {
    let units = bytes.div_ceil(READ_UNIT_BYTES).max(1) as f64;
    if consistent { units } else { units / 2.0 }
}

/// Write units of writing one item of `bytes`: 1 KB units rounded up, at least one.
pub fn write_units(bytes: u64) -> f64 {
    bytes.div_ceil(WRITE_UNIT_BYTES).max(1) as f64
}

/// Billed SQS requests of one request with this much payload each way.
pub fn sqs_requests(sent: u64, received: u64) -> u64 {
    sent.max(received).div_ceil(SQS_CHUNK_BYTES).max(1)
}

/// What one operation consumed over the run.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Usage {
    /// Requests answered.
    pub requests: u64,
    /// DynamoDB read units.
    pub read_units: f64,
    /// DynamoDB write units.
    pub write_units: f64,
    /// Billed SQS requests (64 KB chunks).
    pub sqs_requests: u64,
    /// Requests priced at the minimum because the item was not visible.
    pub lower_bounds: u64,
}

/// Prices the functions' DynamoDB and SQS requests as the proxy forwards them.
#[derive(Debug, Default)]
pub struct Meter {
    usage: Mutex<BTreeMap<String, Usage>>,
}

impl Meter {
    /// Records one answered request: `target` is its `X-Amz-Target`, `request` and `answer`
    /// its JSON bodies.
    pub fn record(&self, target: &str, request: &[u8], answer: &[u8]) {
        let usage = usage_of(target, request, answer);
        let mut all = self
            .usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = all.entry(target.to_owned()).or_default();
        entry.requests += usage.requests;
        entry.read_units += usage.read_units;
        entry.write_units += usage.write_units;
        entry.sqs_requests += usage.sqs_requests;
        entry.lower_bounds += usage.lower_bounds;
    }

    /// The usage so far, by operation.
    pub fn usage(&self) -> BTreeMap<String, Usage> {
        self.usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The usage of one request (see the module's rules).
pub fn usage_of(target: &str, request: &[u8], answer: &[u8]) -> Usage {
    let mut usage = Usage {
        requests: 1,
        ..Usage::default()
    };
    if target.starts_with("AmazonSQS.") {
        usage.sqs_requests = sqs_requests(request.len() as u64, answer.len() as u64);
        return usage;
    }
    let Some(op) = target.strip_prefix("DynamoDB_20120810.") else {
        return usage;
    };
    let request: Value = serde_json::from_slice(request).unwrap_or(Value::Null);
    let answer: Value = serde_json::from_slice(answer).unwrap_or(Value::Null);
    let consistent = request
        .get("ConsistentRead")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let size_of = |v: Option<&Value>| v.and_then(Value::as_object).map(item_size);
    match op {
        "GetItem" => {
            usage.read_units = read_units(size_of(answer.get("Item")).unwrap_or(0), consistent);
        }
        "Query" | "Scan" => {
            let total = answer
                .get("Items")
                .and_then(Value::as_array)
                .map_or(0, |items| {
                    items.iter().map(|i| size_of(Some(i)).unwrap_or(0)).sum()
                });
            usage.read_units = read_units(total, consistent);
        }
        "PutItem" => {
            let new = size_of(request.get("Item")).unwrap_or(0);
            let old = size_of(answer.get("Attributes")).unwrap_or(0);
            usage.write_units = write_units(new.max(old));
        }
        "UpdateItem" | "DeleteItem" => match size_of(answer.get("Attributes")) {
            Some(size) => usage.write_units = write_units(size),
            None => {
                usage.write_units = write_units(0);
                usage.lower_bounds = 1;
            }
        },
        "TransactWriteItems" => {
            for item in request
                .get("TransactItems")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match size_of(item.get("Put").and_then(|p| p.get("Item"))) {
                    Some(size) => usage.write_units += TRANSACTION_FACTOR * write_units(size),
                    None => {
                        usage.write_units += TRANSACTION_FACTOR * write_units(0);
                        usage.lower_bounds += 1;
                    }
                }
            }
        }
        "TransactGetItems" => {
            for item in answer
                .get("Responses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                usage.read_units +=
                    TRANSACTION_FACTOR * read_units(size_of(item.get("Item")).unwrap_or(0), true);
            }
        }
        "BatchGetItem" => {
            for (table, items) in answer
                .get("Responses")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let consistent = request
                    .pointer(&format!("/RequestItems/{table}/ConsistentRead"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                for item in items.as_array().into_iter().flatten() {
                    usage.read_units += read_units(size_of(Some(item)).unwrap_or(0), consistent);
                }
            }
        }
        "BatchWriteItem" => {
            for writes in request
                .get("RequestItems")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.values())
            {
                for write in writes.as_array().into_iter().flatten() {
                    match size_of(write.pointer("/PutRequest/Item")) {
                        Some(size) => usage.write_units += write_units(size),
                        None => {
                            usage.write_units += write_units(0);
                            usage.lower_bounds += 1;
                        }
                    }
                }
            }
        }
        // Control-plane calls (DescribeTable and the like) are not billed per request.
        _ => {}
    }
    usage
}

/// One priced line of the bill.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// What it is (an operation, a function's invocations or duration).
    pub what: String,
    /// Billed units (request units, requests, GB-seconds).
    pub units: f64,
    /// Their cost in dollars.
    pub dollars: f64,
}

/// One Lambda function's measured work.
#[derive(Debug, Clone)]
pub struct FunctionUse {
    /// Its binary name.
    pub name: &'static str,
    /// Its `MemorySize`, MB.
    pub memory_mb: u32,
    /// Every invocation's duration.
    pub durations: Vec<Duration>,
}

impl FunctionUse {
    /// Billed GB-seconds: each duration rounded up to the millisecond, times the memory.
    pub fn gb_seconds(&self) -> f64 {
        let ms: u128 = self
            .durations
            .iter()
            .map(|d| d.as_micros().div_ceil(1_000))
            .sum();
        ms as f64 / 1_000.0 * f64::from(self.memory_mb) / 1024.0
    }
}

/// The priced bill of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Bill {
    /// Its lines, most expensive first.
    pub lines: Vec<Line>,
    /// Turns it covers.
    pub turns: usize,
}

impl Bill {
    /// Prices the run's usage: DynamoDB and SQS by operation, Lambda by function (`architecture`
    /// from the template), API Gateway requests, plus the event source mapping's receives and
    /// deletes (which AWS bills as SQS requests).
    pub fn price(
        prices: &Prices,
        usage: &BTreeMap<String, Usage>,
        esm_requests: u64,
        functions: &[FunctionUse],
        architecture: &str,
        api_requests: u64,
        turns: usize,
    ) -> anyhow::Result<Self> {
        let per = |units: f64, per_million: f64| units * per_million / MILLION;
        let mut lines = Vec::new();
        for (op, u) in usage {
            let name = op.rsplit('.').next().unwrap_or(op);
            if u.read_units > 0.0 {
                lines.push(Line {
                    what: format!("DynamoDB {name} (read units)"),
                    units: u.read_units,
                    dollars: per(u.read_units, prices.dynamodb_read_per_million),
                });
            }
            if u.write_units > 0.0 {
                lines.push(Line {
                    what: format!("DynamoDB {name} (write units)"),
                    units: u.write_units,
                    dollars: per(u.write_units, prices.dynamodb_write_per_million),
                });
            }
            if u.sqs_requests > 0 {
                lines.push(Line {
                    what: format!("SQS {name}"),
                    units: u.sqs_requests as f64,
                    dollars: per(u.sqs_requests as f64, prices.sqs_fifo_per_million),
                });
            }
        }
        lines.push(Line {
            what: "SQS receive/delete (event source mapping)".into(),
            units: esm_requests as f64,
            dollars: per(esm_requests as f64, prices.sqs_fifo_per_million),
        });
        let gb_second = prices.gb_second(architecture)?;
        for f in functions {
            let invocations = f.durations.len() as f64;
            lines.push(Line {
                what: format!("Lambda {} invocations", f.name),
                units: invocations,
                dollars: per(invocations, prices.lambda_requests_per_million),
            });
            let gbs = f.gb_seconds();
            lines.push(Line {
                what: format!(
                    "Lambda {} GB-seconds ({} MB, {architecture})",
                    f.name, f.memory_mb
                ),
                units: gbs,
                dollars: gbs * gb_second,
            });
        }
        lines.push(Line {
            what: "API Gateway HTTP API requests".into(),
            units: api_requests as f64,
            dollars: per(api_requests as f64, prices.http_api_per_million),
        });
        lines.sort_by(|a, b| b.dollars.total_cmp(&a.dollars));
        Ok(Self { lines, turns })
    }

    /// The whole bill in dollars.
    pub fn total(&self) -> f64 {
        self.lines.iter().map(|l| l.dollars).sum()
    }

    /// Dollars per 1,000 turns (zero for a run without turns).
    pub fn per_1000_turns(&self) -> f64 {
        if self.turns == 0 {
            0.0
        } else {
            self.total() / self.turns as f64 * 1_000.0
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn item(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn item_sizes_follow_dynamodbs_rules() {
        let i = item(json!({
            "pk": {"S": "hello"},
            "n1": {"N": "12345"},
            "flag": {"BOOL": true},
            "l": {"L": [{"S": "ab"}, {"NULL": true}]},
            "m": {"M": {"k": {"S": "xyz"}}},
        }));
        // pk: 2 + 5; n1: 2 + 4; flag: 4 + 1; l: 1 + 3 + (1 + 2) + (1 + 1); m: 1 + 3 + 1 + (1 + 3)
        assert_eq!(item_size(&i), 7 + 6 + 5 + 9 + 9);
        assert_eq!(number_size("-0.0012300"), 2 + 1);
        assert_eq!(value_size(&json!({"B": "aGVsbG8="})), 5);
        assert_eq!(value_size(&json!({"S": "é"})), 2, "UTF-8 bytes, not chars");
    }

    #[test]
    fn read_units_round_up_to_4_kb_and_halve_when_eventual() {
        assert_eq!(read_units(0, true), 1.0);
        assert_eq!(read_units(4096, true), 1.0);
        assert_eq!(read_units(4097, true), 2.0);
        assert_eq!(read_units(4097, false), 1.0);
        assert_eq!(read_units(1, false), 0.5);
    }

    #[test]
    fn write_units_round_up_to_1_kb() {
        assert_eq!(write_units(0), 1.0);
        assert_eq!(write_units(1024), 1.0);
        assert_eq!(write_units(1025), 2.0);
    }

    #[test]
    fn sqs_requests_count_64_kb_chunks() {
        assert_eq!(sqs_requests(10, 0), 1);
        assert_eq!(sqs_requests(65_536, 100), 1);
        assert_eq!(sqs_requests(100, 65_537), 2);
    }

    #[test]
    fn a_query_is_priced_by_its_total_and_a_transaction_twice() {
        let big = "x".repeat(3_000);
        let answer = json!({"Items": [{"s": {"S": big}}, {"s": {"S": big}}]}).to_string();
        let q = usage_of(
            "DynamoDB_20120810.Query",
            br#"{"ConsistentRead":true}"#,
            answer.as_bytes(),
        );
        assert_eq!(
            q.read_units, 2.0,
            "6 KB in total is two units, not one per item"
        );
        let q = usage_of("DynamoDB_20120810.Query", b"{}", answer.as_bytes());
        assert_eq!(q.read_units, 1.0);

        let request = json!({"TransactItems": [
            {"Put": {"Item": {"s": {"S": "x".repeat(1_500)}}}},
            {"ConditionCheck": {"Key": {"pk": {"S": "a"}}}},
        ]})
        .to_string();
        let t = usage_of(
            "DynamoDB_20120810.TransactWriteItems",
            request.as_bytes(),
            b"{}",
        );
        assert_eq!(t.write_units, 2.0 * 2.0 + 2.0 * 1.0);
        assert_eq!(t.lower_bounds, 1);

        let g = usage_of("DynamoDB_20120810.GetItem", b"{}", b"{}");
        assert_eq!(
            (g.read_units, g.write_units),
            (0.5, 0.0),
            "a miss still costs"
        );
        let p = usage_of(
            "DynamoDB_20120810.PutItem",
            json!({"Item": {"s": {"S": "x".repeat(2_000)}}})
                .to_string()
                .as_bytes(),
            b"{}",
        );
        assert_eq!(p.write_units, 2.0);
        let s = usage_of("AmazonSQS.SendMessage", &[b'x'; 70_000], b"{}");
        assert_eq!((s.sqs_requests, s.read_units), (2, 0.0));
    }

    fn prices() -> Prices {
        Prices::parse(include_str!("../../../bench/prices-us-east-1.txt"))
            .unwrap_or_else(|e| panic!("{e:#}"))
    }

    #[test]
    fn the_repository_price_table_parses_and_names_a_missing_key() {
        let p = prices();
        assert_eq!(p.region, "us-east-1");
        assert!(p.lambda_gb_second_arm64 < p.lambda_gb_second_x86_64);
        let err = Prices::parse("region = x\ndate = y\n")
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("dynamodb_write_per_million")));
        let err = Prices::parse("region x").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("line 1")));
    }

    #[test]
    fn the_bill_sums_its_lines_and_divides_per_thousand_turns() {
        let p = Prices {
            region: "r".into(),
            date: "d".into(),
            dynamodb_write_per_million: 1.0,
            dynamodb_read_per_million: 0.5,
            sqs_fifo_per_million: 2.0,
            lambda_requests_per_million: 0.25,
            lambda_gb_second_arm64: 0.001,
            lambda_gb_second_x86_64: 0.002,
            http_api_per_million: 4.0,
        };
        let mut usage = BTreeMap::new();
        usage.insert(
            "DynamoDB_20120810.PutItem".to_owned(),
            Usage {
                requests: 10,
                write_units: 1_000_000.0,
                ..Usage::default()
            },
        );
        usage.insert(
            "AmazonSQS.SendMessage".to_owned(),
            Usage {
                requests: 3,
                sqs_requests: 500_000,
                ..Usage::default()
            },
        );
        let agent = FunctionUse {
            name: "agent",
            memory_mb: 512,
            // 1.0004 s rounds up to 1.001 s; two of them: 2.002 s × 0.5 GB.
            durations: vec![Duration::from_micros(1_000_400); 2],
        };
        assert!((agent.gb_seconds() - 1.001).abs() < 1e-9);
        let bill = Bill::price(&p, &usage, 500_000, &[agent], "arm64", 250_000, 2_000)
            .unwrap_or_else(|e| panic!("{e:#}"));
        // writes 1.0 + SQS 1.0 + ESM 1.0 + invocations 0.0000005 + GB-s 0.001001 + API 1.0
        let want = 1.0 + 1.0 + 1.0 + 0.000_000_5 + 0.001_001 + 1.0;
        assert!((bill.total() - want).abs() < 1e-9, "{}", bill.total());
        assert!((bill.per_1000_turns() - want / 2.0).abs() < 1e-9);
        assert!(bill.lines.windows(2).all(|w| w[0].dollars >= w[1].dollars));
        assert!(Bill::price(&p, &usage, 0, &[], "sparc", 0, 1).is_err());
    }
}
