//! The production adapter: one DynamoDB table (single-table design). Data is stored as native
//! attributes under `data` (via `serde_dynamo`) so the console shows readable items.
//!
//! Expiry: DynamoDB deletes expired items late, so every read filters on `ttl` and every
//! condition treats an item whose `ttl` has passed as absent, exactly like the SQLite adapter.

mod definition;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, KeysAndAttributes, Put, TransactWriteItem,
};

use crate::item::Keyed;
use crate::query::page_of;
use crate::validate::{validate_key, validate_keys, validate_query, validate_transaction};
use crate::{
    Clock, Condition, Cursor, Item, Order, Page, Query, RawItem, SortKey, StoreError, SystemClock,
    Table, WriteOp,
};

pub use definition::{TableDefinition, create_table};

/// How often a transaction cancelled by a conflicting concurrent transaction is retried
/// before reporting `Throttled`. Conflicts clear in milliseconds; the retry re-evaluates the
/// conditions, so the caller still sees the true outcome (usually a failed condition).
const CONFLICT_RETRIES_MAX: u32 = 6;
/// First backoff after a transaction conflict; doubled each retry.
const CONFLICT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// How often keys a `BatchGetItem` left unprocessed are asked again before reporting
/// `Throttled` (AWS's advice: retry them with exponential backoff).
const UNPROCESSED_RETRIES_MAX: u32 = 6;
/// First backoff before asking for unprocessed keys again; doubled each retry.
const UNPROCESSED_BACKOFF_FIRST: Duration = Duration::from_millis(20);
/// Items fetched per underlying Query call while filling a page (DynamoDB pages by 1 MB).
const QUERY_FETCH_MAX: i32 = 1000;

/// A [`Table`] over one DynamoDB table.
#[derive(Clone)]
pub struct DynamoTable {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for DynamoTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoTable")
            .field("table", &self.table)
            .finish()
    }
}

impl DynamoTable {
    /// A table named `table` reached through `client`, on the system clock.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self::with_clock(client, table, Arc::new(SystemClock))
    }

    /// A table deciding expiry by `clock`.
    pub fn with_clock(client: Client, table: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            table: table.into(),
            clock,
        }
    }

    /// A table with a client configured from the environment (credentials, region, and the
    /// standard `AWS_ENDPOINT_URL` for a local emulator).
    pub async fn from_env(table: impl Into<String>) -> Self {
        let config = crate::aws::load_sdk_config().await;
        Self::new(Client::new(&config), table)
    }

    /// The underlying SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The table's name.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    async fn write_once(&self, ops: &[WriteOp], now: i64) -> Result<(), Attempt> {
        if let [op @ (WriteOp::Put { .. } | WriteOp::Delete { .. })] = ops {
            return self.write_single(op, now).await;
        }
        let items = ops
            .iter()
            .map(|op| self.transact_item(op, now))
            .collect::<Result<Vec<_>, StoreError>>()
            .map_err(Attempt::Done)?;
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(err) => Err(classify_transaction_error(err)),
        }
    }

    async fn write_single(&self, op: &WriteOp, now: i64) -> Result<(), Attempt> {
        let cond = op.condition().map(|c| condition_expr(c, now));
        let result = match op {
            WriteOp::Put { item, .. } => {
                let mut req = self
                    .client
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(to_attrs(item).map_err(Attempt::Done)?));
                if let Some(c) = cond {
                    req = req
                        .condition_expression(c.expression)
                        .set_expression_attribute_names(Some(c.names))
                        .set_expression_attribute_values(Some(c.values));
                }
                req.send()
                    .await
                    .map(|_| ())
                    .map_err(|e| e.map_service_error(|s| s.into()))
            }
            WriteOp::Delete { pk, sk, .. } => {
                let mut req = self
                    .client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(key_attrs(pk, sk)));
                if let Some(c) = cond {
                    req = req
                        .condition_expression(c.expression)
                        .set_expression_attribute_names(Some(c.names))
                        .set_expression_attribute_values(Some(c.values));
                }
                req.send()
                    .await
                    .map(|_| ())
                    .map_err(|e| e.map_service_error(|s| s.into()))
            }
            WriteOp::Check { .. } => {
                return Err(Attempt::Done(StoreError::Backend(
                    "a lone condition check goes through a transaction".into(),
                )));
            }
        };
        result.map_err(|err: SdkError<aws_sdk_dynamodb::Error, _>| {
            if let SdkError::ServiceError(service) = &err
                && matches!(
                    service.err(),
                    aws_sdk_dynamodb::Error::ConditionalCheckFailedException(_)
                )
            {
                return Attempt::Done(StoreError::ConditionFailed { op_index: 0 });
            }
            Attempt::Done(map_sdk_error(&err))
        })
    }

    fn transact_item(&self, op: &WriteOp, now: i64) -> Result<TransactWriteItem, StoreError> {
        let cond = op.condition().map(|c| condition_expr(c, now));
        let built = match op {
            WriteOp::Put { item, .. } => {
                let mut put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(to_attrs(item)?));
                if let Some(c) = cond {
                    put = put
                        .condition_expression(c.expression)
                        .set_expression_attribute_names(Some(c.names))
                        .set_expression_attribute_values(Some(c.values));
                }
                TransactWriteItem::builder().put(put.build().map_err(build_error)?)
            }
            WriteOp::Delete { pk, sk, .. } => {
                let mut del = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_attrs(pk, sk)));
                if let Some(c) = cond {
                    del = del
                        .condition_expression(c.expression)
                        .set_expression_attribute_names(Some(c.names))
                        .set_expression_attribute_values(Some(c.values));
                }
                TransactWriteItem::builder().delete(del.build().map_err(build_error)?)
            }
            WriteOp::Check { pk, sk, .. } => {
                let c =
                    cond.ok_or_else(|| StoreError::Backend("check without condition".into()))?;
                let check = ConditionCheck::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_attrs(pk, sk)))
                    .condition_expression(c.expression)
                    .set_expression_attribute_names(Some(c.names))
                    .set_expression_attribute_values(Some(c.values));
                TransactWriteItem::builder().condition_check(check.build().map_err(build_error)?)
            }
        };
        Ok(built.build())
    }
}

/// Outcome of one attempt at a write: final, or cancelled by a concurrent transaction.
enum Attempt {
    Done(StoreError),
    Conflict(String),
}

impl DynamoTable {
    /// One page of the live items `query` matches, each decoded from its attributes by
    /// `decode` (an [`Item`] or a [`RawItem`]).
    async fn query_page<I: Keyed>(
        &self,
        query: &Query,
        decode: fn(HashMap<String, AttributeValue>) -> Result<I, StoreError>,
    ) -> Result<Page<I>, StoreError> {
        validate_query(query)?;
        let now = self.clock.now_secs();
        let limit = query.limit.max(1);
        let mut names = HashMap::from([
            ("#pk".to_owned(), "pk".to_owned()),
            ("#ttl".to_owned(), "ttl".to_owned()),
        ]);
        let mut values = HashMap::from([
            (":pk".to_owned(), AttributeValue::S(query.pk.clone())),
            (":now".to_owned(), AttributeValue::N(now.to_string())),
        ]);
        let sk_cond = match &query.sort {
            // An empty prefix matches every sort key; DynamoDB refuses an empty key value.
            SortKey::All => None,
            SortKey::Prefix(p) if p.is_empty() => None,
            SortKey::Prefix(p) => Some(("begins_with(#sk, :a)", p, None)),
            SortKey::Between(a, b) => Some(("#sk BETWEEN :a AND :b", a, Some(b))),
            SortKey::After(a) => Some(("#sk > :a", a, None)),
            SortKey::From(a) => Some(("#sk >= :a", a, None)),
            SortKey::Before(b) => Some(("#sk < :a", b, None)),
        };
        let mut key_expr = "#pk = :pk".to_owned();
        if let Some((expr, a, b)) = sk_cond {
            key_expr.push_str(" AND ");
            key_expr.push_str(expr);
            names.insert("#sk".into(), "sk".into());
            values.insert(":a".into(), AttributeValue::S(a.clone()));
            if let Some(b) = b {
                values.insert(":b".into(), AttributeValue::S(b.clone()));
            }
        }
        let mut start = query
            .after
            .as_ref()
            .map(|Cursor(sk)| key_attrs(&query.pk, sk));
        let mut items = Vec::new();
        // Fill the page with one item more than asked, so `next` is exact.
        loop {
            let want = limit + 1 - items.len();
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(&key_expr)
                .filter_expression("attribute_not_exists(#ttl) OR #ttl > :now")
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .scan_index_forward(query.order == Order::Ascending)
                .consistent_read(true)
                .limit(
                    i32::try_from(want)
                        .unwrap_or(QUERY_FETCH_MAX)
                        .min(QUERY_FETCH_MAX),
                )
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| map_sdk_error(&e))?;
            for attrs in out.items.unwrap_or_default() {
                items.push(decode(attrs)?);
            }
            match out.last_evaluated_key {
                Some(key) if items.len() <= limit => start = Some(key),
                _ => break,
            }
        }
        Ok(page_of(items, limit))
    }
}

#[async_trait]
impl Table for DynamoTable {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        validate_key(pk, sk)?;
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_attrs(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| map_sdk_error(&e))?;
        let now = self.clock.now_secs();
        match out.item {
            Some(attrs) => {
                let item = from_attrs(attrs)?;
                Ok((!item.is_expired(now)).then_some(item))
            }
            None => Ok(None),
        }
    }

    async fn get_many(&self, keys: &[(String, String)]) -> Result<Vec<Option<Item>>, StoreError> {
        validate_keys(keys)?;
        // DynamoDB refuses a request naming a key twice: ask for each distinct key once.
        let mut seen = HashSet::new();
        let mut pending: Vec<_> = keys
            .iter()
            .filter(|k| seen.insert(*k))
            .map(|(pk, sk)| key_attrs(pk, sk))
            .collect();
        let mut found: HashMap<(String, String), Item> = HashMap::new();
        let mut backoff = UNPROCESSED_BACKOFF_FIRST;
        let mut attempt = 0;
        while !pending.is_empty() {
            let request = KeysAndAttributes::builder()
                .set_keys(Some(pending))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::Backend(format!("cannot build the read: {e}")))?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(|e| map_sdk_error(&e))?;
            let answers = out
                .responses
                .and_then(|mut by_table| by_table.remove(&self.table))
                .unwrap_or_default();
            for attrs in answers {
                let item = from_attrs(attrs)?;
                found.insert((item.pk.clone(), item.sk.clone()), item);
            }
            // Keys DynamoDB left unread (throughput, or the 16 MB answer cap) are asked again.
            pending = out
                .unprocessed_keys
                .and_then(|mut by_table| by_table.remove(&self.table))
                .map(|left| left.keys)
                .unwrap_or_default();
            if !pending.is_empty() {
                attempt += 1;
                if attempt > UNPROCESSED_RETRIES_MAX {
                    return Err(StoreError::Throttled(format!(
                        "{} keys were still unread after {UNPROCESSED_RETRIES_MAX} retries",
                        pending.len()
                    )));
                }
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
        let now = self.clock.now_secs();
        Ok(keys
            .iter()
            .map(|key| found.get(key).filter(|i| !i.is_expired(now)).cloned())
            .collect())
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.query_page(query, from_attrs).await
    }

    async fn query_raw(&self, query: &Query) -> Result<Page<RawItem>, StoreError> {
        self.query_page(query, raw_from_attrs).await
    }

    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        validate_transaction(&ops)?;
        let mut backoff = CONFLICT_BACKOFF_FIRST;
        let mut attempt = 0;
        loop {
            let now = self.clock.now_secs();
            match self.write_once(&ops, now).await {
                Ok(()) => return Ok(()),
                Err(Attempt::Done(e)) => return Err(e),
                Err(Attempt::Conflict(why)) => {
                    attempt += 1;
                    if attempt > CONFLICT_RETRIES_MAX {
                        return Err(StoreError::Throttled(format!(
                            "transaction kept conflicting with concurrent writes: {why}"
                        )));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
            }
        }
    }
}

struct CondExpr {
    expression: String,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

/// The condition expression for `condition`, with expiry folded in: an item whose `ttl` has
/// passed counts as absent.
fn condition_expr(condition: Condition, now: i64) -> CondExpr {
    let mut names = HashMap::from([("#ttl".to_owned(), "ttl".to_owned())]);
    let mut values = HashMap::from([(":now".to_owned(), AttributeValue::N(now.to_string()))]);
    let expression = match condition {
        Condition::Absent => {
            names.insert("#pk".into(), "pk".into());
            "attribute_not_exists(#pk) OR #ttl <= :now"
        }
        Condition::Present => {
            names.insert("#pk".into(), "pk".into());
            "attribute_exists(#pk) AND (attribute_not_exists(#ttl) OR #ttl > :now)"
        }
        Condition::VersionEquals(v) => {
            names.insert("#v".into(), "version".into());
            values.insert(":v".into(), AttributeValue::N(v.to_string()));
            "#v = :v AND (attribute_not_exists(#ttl) OR #ttl > :now)"
        }
    };
    CondExpr {
        expression: expression.to_owned(),
        names,
        values,
    }
}

fn key_attrs(pk: &str, sk: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
        ("sk".to_owned(), AttributeValue::S(sk.to_owned())),
    ])
}

fn to_attrs(item: &Item) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let mut attrs = key_attrs(&item.pk, &item.sk);
    attrs.insert(
        "version".into(),
        AttributeValue::N(item.version.to_string()),
    );
    if let Some(ttl) = item.ttl {
        attrs.insert("ttl".into(), AttributeValue::N(ttl.to_string()));
    }
    let data: AttributeValue = serde_dynamo::to_attribute_value(&item.data).map_err(|e| {
        StoreError::Backend(format!(
            "cannot encode data of {} / {}: {e}",
            item.pk, item.sk
        ))
    })?;
    attrs.insert("data".into(), data);
    Ok(attrs)
}

fn from_attrs(attrs: HashMap<String, AttributeValue>) -> Result<Item, StoreError> {
    let (pk, sk, version, ttl, data) = parts(attrs)?;
    let data = match data {
        Some(v) => serde_dynamo::from_attribute_value(v)
            .map_err(|_| StoreError::Backend(format!("corrupt `data` in {pk} / {sk}")))?,
        None => serde_json::Value::Null,
    };
    Ok(Item {
        pk,
        sk,
        version,
        ttl,
        data,
    })
}

/// An item with its `data` written straight out as JSON text, with no tree of values in
/// between ([`Table::query_raw`]): the same text a tree read by [`from_attrs`] would give.
fn raw_from_attrs(attrs: HashMap<String, AttributeValue>) -> Result<RawItem, StoreError> {
    let (pk, sk, version, ttl, data) = parts(attrs)?;
    let data = match data {
        Some(v) => {
            let mut text = Vec::new();
            serde_transcode::transcode(
                serde_dynamo::Deserializer::from_attribute_value(v.into()),
                &mut serde_json::Serializer::new(&mut text),
            )
            .map_err(|_| StoreError::Backend(format!("corrupt `data` in {pk} / {sk}")))?;
            // serde_json writes only UTF-8.
            String::from_utf8(text)
                .map_err(|_| StoreError::Backend(format!("corrupt `data` in {pk} / {sk}")))?
        }
        None => "null".to_owned(),
    };
    Ok(RawItem {
        pk,
        sk,
        version,
        ttl,
        data,
    })
}

/// An item's keys, version and expiry, and its `data` attribute as stored.
type Parts = (String, String, u64, Option<i64>, Option<AttributeValue>);

fn parts(mut attrs: HashMap<String, AttributeValue>) -> Result<Parts, StoreError> {
    let mut string = |name: &str| match attrs.remove(name) {
        Some(AttributeValue::S(s)) => Ok(s),
        _ => Err(StoreError::Backend(format!(
            "item without a string `{name}` attribute"
        ))),
    };
    let pk = string("pk")?;
    let sk = string("sk")?;
    let corrupt = |what: &str| StoreError::Backend(format!("corrupt `{what}` in {pk} / {sk}"));
    let version = match attrs.remove("version") {
        Some(AttributeValue::N(n)) => n.parse::<u64>().map_err(|_| corrupt("version"))?,
        _ => return Err(corrupt("version")),
    };
    let ttl = match attrs.remove("ttl") {
        Some(AttributeValue::N(n)) => Some(n.parse::<i64>().map_err(|_| corrupt("ttl"))?),
        None => None,
        Some(_) => return Err(corrupt("ttl")),
    };
    let data = attrs.remove("data");
    Ok((pk, sk, version, ttl, data))
}

fn classify_transaction_error<R>(
    err: SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, R>,
) -> Attempt
where
    R: std::fmt::Debug,
{
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError as E;
    if let SdkError::ServiceError(service) = &err
        && let E::TransactionCanceledException(cancelled) = service.err()
    {
        let reasons = cancelled.cancellation_reasons();
        if let Some(i) = reasons
            .iter()
            .position(|r| r.code() == Some("ConditionalCheckFailed"))
        {
            return Attempt::Done(StoreError::ConditionFailed { op_index: i });
        }
        let codes: Vec<&str> = reasons.iter().filter_map(|r| r.code()).collect();
        if codes.contains(&"TransactionConflict") {
            return Attempt::Conflict(codes.join(","));
        }
        if codes
            .iter()
            .any(|c| matches!(*c, "ThrottlingError" | "ProvisionedThroughputExceeded"))
        {
            return Attempt::Done(StoreError::Throttled(codes.join(",")));
        }
        return Attempt::Done(StoreError::Backend(format!(
            "transaction cancelled: {}",
            codes.join(",")
        )));
    }
    if let SdkError::ServiceError(service) = &err
        && matches!(service.err(), E::TransactionInProgressException(_))
    {
        return Attempt::Conflict("transaction in progress".into());
    }
    Attempt::Done(map_sdk_error(&err))
}

/// Maps any SDK failure: throttling (after the SDK's own retries) to `Throttled`, the rest to
/// `Backend` with the full error chain.
fn map_sdk_error<E, R>(err: &SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = err.code().unwrap_or_default();
    if matches!(
        code,
        "ThrottlingException"
            | "ProvisionedThroughputExceededException"
            | "RequestLimitExceeded"
            | "Throttling"
    ) {
        StoreError::Throttled(format!("{}", DisplayErrorContext(err)))
    } else {
        StoreError::Backend(format!("dynamodb: {}", DisplayErrorContext(err)))
    }
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Backend(format!("cannot build request: {e}"))
}
