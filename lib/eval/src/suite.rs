//! The suite file: TOML parsed into types with every unknown field refused, then checked as a
//! whole before any case runs. Every problem names the case, the line and the field.
//!
//! ```toml
//! now = "2026-11-30T09:00:00Z"   # the throwaway clock's start (optional)
//! timezone = "Europe/Berlin"      # the organiser's zone (optional)
//!
//! [[case]]
//! name = "publish waits for a yes"
//! setup = [{ tool = "create_event", input = { name = "Spring Open", dates = ["2026-12-12"] } }]
//!
//! [[case.turn]]
//! say = "Publish Spring Open"
//! model = [
//!   { tool = "publish_event", input = { event_id = "{{event:Spring Open}}" } },
//!   { text = "Publish Spring Open? <buttons>Yes, publish | No</buttons>" },
//! ]
//!
//! [[case.turn]]
//! press = "Yes, publish"
//! model = [
//!   { tool = "publish_event", input = { event_id = "{{event:Spring Open}}" } },
//!   { text = "Published." },
//! ]
//!
//! [[case.expect]]
//! confirmed = "publish_event"
//! ```

use std::collections::BTreeSet;
use std::ops::Range;

use serde::Deserialize;
use serde_json::{Map, Value};
use toml::Spanned;

use crate::records::RecordKind;

/// Largest suite file read, in bytes: suites are written by hand; anything far bigger is the
/// wrong file.
pub const SUITE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// The clock a case starts at when the suite does not say: a fixed instant, so relative dates
/// ("next Saturday") mean the same on every run.
pub const DEFAULT_NOW: &str = "2026-11-30T09:00:00Z";

/// The organiser's time zone when neither the suite nor the case says.
pub const DEFAULT_TIMEZONE: &str = "Europe/Berlin";

/// Tools every conversation has besides the domain's registry (see the harness's
/// `chat_tools`): scripted steps may call them too.
const CHAT_TOOLS: [&str; 2] = ["set_active_record", "react"];

/// A suite file that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct SuiteError {
    /// The case (counting from 1) and its name, when the problem is inside one.
    pub case: Option<(usize, String)>,
    /// The line (counting from 1), when known.
    pub line: Option<usize>,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
}

impl SuiteError {
    fn render(&self) -> String {
        let mut out = String::new();
        if let Some((n, name)) = &self.case {
            if name.is_empty() {
                out.push_str(&format!("case {n}"));
            } else {
                out.push_str(&format!("case {n} ({name:?})"));
            }
        }
        if let Some(line) = self.line {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(&format!("line {line}"));
        }
        if let Some(field) = &self.field {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(&format!("field `{field}`"));
        }
        if out.is_empty() {
            self.problem.clone()
        } else {
            format!("{out}: {}", self.problem)
        }
    }
}

/// A checked suite, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// Where each case's clock starts, in epoch milliseconds.
    pub now_ms: i64,
    /// The cases, in file order.
    pub cases: Vec<Case>,
}

/// One case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Its name (unique in the suite).
    pub name: String,
    /// The organiser's time zone.
    pub timezone: String,
    /// Starting records, made through the service layer before the first message.
    pub setup: Vec<ToolStep>,
    /// The person's messages and button presses, in order.
    pub turns: Vec<Turn>,
    /// What must hold afterwards.
    pub expect: Vec<Expectation>,
}

impl Case {
    /// Whether every turn has scripted model steps (the case can run without a real model).
    pub fn is_scripted(&self) -> bool {
        self.turns.iter().all(|t| !t.model.is_empty())
    }
}

/// One tool call with its input (placeholders like `{{event:Spring Open}}` resolved when it
/// runs).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    /// The tool.
    pub tool: String,
    /// Its input.
    pub input: Value,
}

/// What the person does.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Types a message.
    Say(String),
    /// Presses the button with this title on the latest reply.
    Press(String),
}

/// One message of the person, with the scripted model's answers to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// What they do.
    pub input: Input,
    /// The scripted model's responses during this turn, one per model call; empty when the
    /// case is meant for a real model.
    pub model: Vec<ModelStep>,
}

/// One scripted model response.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelStep {
    /// A final answer.
    Text(String),
    /// One or more tool calls.
    Tools(Vec<ToolStep>),
}

/// Which records a record expectation is about.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordFilter {
    /// The kind.
    pub kind: RecordKind,
    /// The record's name (a session's title); any when `None`.
    pub name: Option<String>,
    /// For records inside an event: the event's name.
    pub event: Option<String>,
    /// Fields that must match (a subset).
    pub fields: Map<String, Value>,
}

/// What a record expectation asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordClaim {
    /// At least one matches.
    Exists,
    /// None matches.
    Absent,
    /// Exactly this many match.
    Count(usize),
}

/// One expectation on what happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Expectation {
    /// Records that must or must not exist, or how many.
    Record {
        /// Which.
        filter: RecordFilter,
        /// What about them.
        claim: RecordClaim,
    },
    /// The model called this tool with at least these arguments (exactly `times` when given),
    /// and, when `result_contains` is given, a matching call's result had that text.
    ToolCalled {
        /// The tool.
        tool: String,
        /// An argument subset.
        args: Map<String, Value>,
        /// How many matching calls, when it matters.
        times: Option<usize>,
        /// Text a matching call's result contains (case-insensitive).
        result_contains: Option<String>,
    },
    /// The model made no call of this tool with these arguments.
    ToolNotCalled {
        /// The tool.
        tool: String,
        /// An argument subset (empty: any call).
        args: Map<String, Value>,
    },
    /// The gate held a call of this tool, and no call of it ran.
    Held(String),
    /// Calls of this tool committed changes exactly this many times.
    Ran {
        /// The tool.
        tool: String,
        /// How many times.
        times: usize,
    },
    /// A call of this tool was held, the person confirmed, and it ran exactly once.
    Confirmed(String),
    /// Whether an undo reverted a request during the case.
    Undone(bool),
    /// How many tool calls the model made in all.
    ToolCalls(usize),
    /// How many replies the person got.
    Replies(usize),
    /// Some reply contains this text (case-insensitive).
    ReplyContains(String),
    /// No reply contains this text (case-insensitive).
    ReplyLacks(String),
}

impl std::fmt::Display for Expectation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Record { filter, claim } => {
                write!(f, "{}", filter.kind.as_str())?;
                if let Some(name) = &filter.name {
                    write!(f, " {name:?}")?;
                }
                if let Some(event) = &filter.event {
                    write!(f, " in {event:?}")?;
                }
                if !filter.fields.is_empty() {
                    write!(f, " with {}", Value::Object(filter.fields.clone()))?;
                }
                match claim {
                    RecordClaim::Exists => write!(f, " exists"),
                    RecordClaim::Absent => write!(f, " does not exist"),
                    RecordClaim::Count(n) => write!(f, " count {n}"),
                }
            }
            Self::ToolCalled {
                tool,
                args,
                times,
                result_contains,
            } => {
                write!(f, "{tool} called")?;
                if !args.is_empty() {
                    write!(f, " with {}", Value::Object(args.clone()))?;
                }
                if let Some(n) = times {
                    write!(f, " {n} time(s)")?;
                }
                match result_contains {
                    Some(text) => write!(f, " answering {text:?}"),
                    None => Ok(()),
                }
            }
            Self::ToolNotCalled { tool, args } => {
                write!(f, "{tool} not called")?;
                if args.is_empty() {
                    Ok(())
                } else {
                    write!(f, " with {}", Value::Object(args.clone()))
                }
            }
            Self::Held(tool) => write!(f, "{tool} held and not run"),
            Self::Ran { tool, times } => write!(f, "{tool} ran {times} time(s)"),
            Self::Confirmed(tool) => write!(f, "{tool} confirmed and run once"),
            Self::Undone(true) => write!(f, "an undo reverted a request"),
            Self::Undone(false) => write!(f, "nothing undone"),
            Self::ToolCalls(n) => write!(f, "{n} tool call(s) in all"),
            Self::Replies(n) => write!(f, "{n} replies"),
            Self::ReplyContains(text) => write!(f, "a reply contains {text:?}"),
            Self::ReplyLacks(text) => write!(f, "no reply contains {text:?}"),
        }
    }
}

// ----- the file as written -----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    #[serde(default)]
    now: Option<Spanned<String>>,
    #[serde(default)]
    timezone: Option<Spanned<String>>,
    #[serde(default, rename = "case")]
    cases: Vec<Spanned<CaseFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    name: Spanned<String>,
    #[serde(default)]
    timezone: Option<Spanned<String>>,
    #[serde(default)]
    setup: Vec<Spanned<ToolFile>>,
    #[serde(default, rename = "turn")]
    turns: Vec<Spanned<TurnFile>>,
    #[serde(default)]
    expect: Vec<Spanned<ExpectFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolFile {
    tool: Spanned<String>,
    #[serde(default)]
    input: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnFile {
    #[serde(default)]
    say: Option<String>,
    #[serde(default)]
    press: Option<String>,
    #[serde(default)]
    model: Vec<Spanned<StepFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepFile {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool: Option<Spanned<String>>,
    #[serde(default)]
    input: Option<toml::Table>,
    #[serde(default)]
    tools: Option<Vec<Spanned<ToolFile>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectFile {
    #[serde(default)]
    record: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    fields: Option<toml::Table>,
    #[serde(default)]
    exists: Option<bool>,
    #[serde(default)]
    count: Option<usize>,
    #[serde(default)]
    tool_called: Option<String>,
    #[serde(default)]
    tool_not_called: Option<String>,
    #[serde(default)]
    args: Option<toml::Table>,
    #[serde(default)]
    times: Option<usize>,
    #[serde(default)]
    result_contains: Option<String>,
    #[serde(default)]
    held: Option<String>,
    #[serde(default)]
    ran: Option<String>,
    #[serde(default)]
    confirmed: Option<String>,
    #[serde(default)]
    undone: Option<bool>,
    #[serde(default)]
    tool_calls: Option<usize>,
    #[serde(default)]
    replies: Option<usize>,
    #[serde(default)]
    reply_contains: Option<String>,
    #[serde(default)]
    reply_lacks: Option<String>,
}

/// A TOML value as JSON: dates and times become their text, as tools take them.
pub fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(table_to_json(t)),
    }
}

fn table_to_json(table: &toml::Table) -> Map<String, Value> {
    table
        .iter()
        .map(|(k, v)| (k.clone(), toml_to_json(v)))
        .collect()
}

/// Line numbers of byte offsets in one text.
struct Lines<'a>(&'a str);

impl Lines<'_> {
    fn of(&self, offset: usize) -> usize {
        let end = offset.min(self.0.len());
        self.0.as_bytes()[..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1
    }
}

/// Parses and checks a suite. `tools` are the names the domain's registry knows.
pub fn parse_suite(text: &str, tools: &BTreeSet<String>) -> Result<Suite, SuiteError> {
    if text.len() > SUITE_BYTES_MAX {
        return Err(SuiteError {
            case: None,
            line: None,
            field: None,
            problem: format!(
                "the suite is {} bytes; the limit is {SUITE_BYTES_MAX}",
                text.len()
            ),
        });
    }
    let lines = Lines(text);
    let file: SuiteFile = toml::from_str(text).map_err(|e| syntax_error(text, &lines, &e))?;
    let now_ms = match &file.now {
        None => parse_now(DEFAULT_NOW).unwrap_or_default(),
        Some(now) => parse_now(now.get_ref()).map_err(|problem| SuiteError {
            case: None,
            line: Some(lines.of(now.span().start)),
            field: Some("now".into()),
            problem,
        })?,
    };
    let suite_zone = match &file.timezone {
        None => DEFAULT_TIMEZONE.to_owned(),
        Some(zone) => check_zone(zone.get_ref()).map_err(|problem| SuiteError {
            case: None,
            line: Some(lines.of(zone.span().start)),
            field: Some("timezone".into()),
            problem,
        })?,
    };
    if file.cases.is_empty() {
        return Err(SuiteError {
            case: None,
            line: None,
            field: Some("case".into()),
            problem: "the suite has no cases ([[case]] tables)".into(),
        });
    }
    let mut names = BTreeSet::new();
    let mut cases = Vec::with_capacity(file.cases.len());
    for (i, raw) in file.cases.iter().enumerate() {
        let checker = CaseChecker {
            number: i + 1,
            name: raw.get_ref().name.get_ref().trim().to_owned(),
            lines: &lines,
            tools,
        };
        let case = checker.check(raw, &suite_zone)?;
        if !names.insert(case.name.clone()) {
            return Err(checker.error(
                raw.get_ref().name.span(),
                "name",
                "another case has this name",
            ));
        }
        cases.push(case);
    }
    Ok(Suite { now_ms, cases })
}

fn parse_now(text: &str) -> Result<i64, String> {
    text.trim()
        .parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|e| format!("not an RFC 3339 time such as {DEFAULT_NOW}: {e}"))
}

fn check_zone(zone: &str) -> Result<String, String> {
    let zone = zone.trim();
    jiff::tz::TimeZone::get(zone)
        .map(|_| zone.to_owned())
        .map_err(|_| format!("{zone:?} is not an IANA time zone such as Europe/Berlin"))
}

/// A serde or syntax error, located: the line from the error's span, the case from the
/// `[[case]]` headers before it.
fn syntax_error(text: &str, lines: &Lines<'_>, e: &toml::de::Error) -> SuiteError {
    let offset = e.span().map(|s| s.start);
    let line = offset.map(|o| lines.of(o));
    let message = e.message().trim().to_owned();
    let field = unknown_field(&message).or_else(|| missing_field(&message));
    SuiteError {
        case: offset.and_then(|o| case_at(text, o)),
        line,
        field,
        problem: message,
    }
}

fn unknown_field(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    Some(rest.split('`').next()?.to_owned())
}

fn missing_field(message: &str) -> Option<String> {
    let rest = message.split("missing field `").nth(1)?;
    Some(rest.split('`').next()?.to_owned())
}

/// Which case (counting from 1, with its name when it can be read) the byte `offset` is in,
/// found from the `[[case]]` headers written before it.
fn case_at(text: &str, offset: usize) -> Option<(usize, String)> {
    let mut number = 0;
    let mut name = String::new();
    let mut in_case_table = false;
    let mut position = 0;
    for line in text.split_inclusive('\n') {
        if position > offset {
            break;
        }
        position += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let header: String = trimmed.chars().filter(|c| !c.is_whitespace()).collect();
            if header.starts_with("[[case]]") {
                number += 1;
                name.clear();
                in_case_table = true;
            } else {
                in_case_table = false;
            }
            continue;
        }
        if in_case_table
            && name.is_empty()
            && let Some(value) = trimmed.strip_prefix("name")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            name = value.trim().trim_matches('"').to_owned();
        }
    }
    (number > 0).then_some((number, name))
}

struct CaseChecker<'a> {
    number: usize,
    name: String,
    lines: &'a Lines<'a>,
    tools: &'a BTreeSet<String>,
}

impl CaseChecker<'_> {
    fn error(&self, span: Range<usize>, field: &str, problem: impl Into<String>) -> SuiteError {
        SuiteError {
            case: Some((self.number, self.name.clone())),
            line: Some(self.lines.of(span.start)),
            field: Some(field.to_owned()),
            problem: problem.into(),
        }
    }

    fn check(&self, raw: &Spanned<CaseFile>, suite_zone: &str) -> Result<Case, SuiteError> {
        let file = raw.get_ref();
        if self.name.is_empty() {
            return Err(self.error(file.name.span(), "name", "a case needs a name"));
        }
        let timezone = match &file.timezone {
            None => suite_zone.to_owned(),
            Some(z) => check_zone(z.get_ref()).map_err(|p| self.error(z.span(), "timezone", p))?,
        };
        let setup = file
            .setup
            .iter()
            .map(|s| self.tool_step(s, "setup", false))
            .collect::<Result<Vec<_>, _>>()?;
        if file.turns.is_empty() {
            return Err(self.error(
                raw.span(),
                "turn",
                "a case needs at least one turn ([[case.turn]] with `say` or `press`)",
            ));
        }
        let mut turns = Vec::with_capacity(file.turns.len());
        for (i, t) in file.turns.iter().enumerate() {
            turns.push(self.turn(t, i == 0)?);
        }
        let scripted = turns.iter().filter(|t| !t.model.is_empty()).count();
        if scripted != 0 && scripted != turns.len() {
            let at = file
                .turns
                .iter()
                .find(|t| t.get_ref().model.is_empty())
                .map(|t| t.span())
                .unwrap_or_else(|| raw.span());
            return Err(self.error(
                at,
                "model",
                "either every turn has scripted model steps or none has (none: the case runs only with a real model)",
            ));
        }
        if file.expect.is_empty() {
            return Err(self.error(
                raw.span(),
                "expect",
                "a case needs at least one expectation ([[case.expect]])",
            ));
        }
        let expect = file
            .expect
            .iter()
            .map(|e| self.expectation(e))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Case {
            name: self.name.clone(),
            timezone,
            setup,
            turns,
            expect,
        })
    }

    fn known_tool(
        &self,
        name: &Spanned<String>,
        field: &str,
        chat_tools: bool,
    ) -> Result<String, SuiteError> {
        let tool = name.get_ref().trim();
        let ok = self.tools.contains(tool) || (chat_tools && CHAT_TOOLS.contains(&tool));
        if ok {
            Ok(tool.to_owned())
        } else {
            Err(self.error(
                name.span(),
                field,
                format!("there is no tool named {tool:?}"),
            ))
        }
    }

    fn tool_step(
        &self,
        raw: &Spanned<ToolFile>,
        field: &str,
        chat_tools: bool,
    ) -> Result<ToolStep, SuiteError> {
        let file = raw.get_ref();
        let tool = self.known_tool(&file.tool, field, chat_tools)?;
        let input = file.input.as_ref().map(table_to_json).unwrap_or_default();
        Ok(ToolStep {
            tool,
            input: Value::Object(input),
        })
    }

    fn turn(&self, raw: &Spanned<TurnFile>, first: bool) -> Result<Turn, SuiteError> {
        let file = raw.get_ref();
        let input = match (&file.say, &file.press) {
            (Some(text), None) if !text.trim().is_empty() => Input::Say(text.trim().to_owned()),
            (None, Some(title)) if !title.trim().is_empty() => {
                if first {
                    return Err(self.error(
                        raw.span(),
                        "press",
                        "the first turn cannot press a button: there is no reply yet",
                    ));
                }
                Input::Press(title.trim().to_owned())
            }
            (Some(_), Some(_)) => {
                return Err(self.error(
                    raw.span(),
                    "press",
                    "a turn has `say` or `press`, not both",
                ));
            }
            _ => {
                return Err(self.error(
                    raw.span(),
                    "say",
                    "a turn needs a non-empty `say` (a message) or `press` (a button title)",
                ));
            }
        };
        let mut model = Vec::with_capacity(file.model.len());
        for step in &file.model {
            model.push(self.model_step(step)?);
        }
        if let Some(last) = model.last()
            && !matches!(last, ModelStep::Text(_))
        {
            let span = file
                .model
                .last()
                .map(|s| s.span())
                .unwrap_or_else(|| raw.span());
            return Err(self.error(
                span,
                "model",
                "a turn's scripted steps end with a `text` answer (after tool calls the model is asked again)",
            ));
        }
        Ok(Turn { input, model })
    }

    fn model_step(&self, raw: &Spanned<StepFile>) -> Result<ModelStep, SuiteError> {
        let file = raw.get_ref();
        match (&file.text, &file.tool, &file.tools) {
            (Some(text), None, None) if file.input.is_none() => Ok(ModelStep::Text(text.clone())),
            (None, Some(tool), None) => {
                let tool = self.known_tool(tool, "tool", true)?;
                let input = file.input.as_ref().map(table_to_json).unwrap_or_default();
                Ok(ModelStep::Tools(vec![ToolStep {
                    tool,
                    input: Value::Object(input),
                }]))
            }
            (None, None, Some(tools)) if file.input.is_none() && !tools.is_empty() => {
                let steps = tools
                    .iter()
                    .map(|t| self.tool_step(t, "tools", true))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(ModelStep::Tools(steps))
            }
            _ => Err(self.error(
                raw.span(),
                "model",
                "a model step is `{ text = \"…\" }`, `{ tool = \"…\", input = { … } }` or `{ tools = [ … ] }`",
            )),
        }
    }

    fn expectation(&self, raw: &Spanned<ExpectFile>) -> Result<Expectation, SuiteError> {
        let e = raw.get_ref();
        let span = raw.span();
        let kinds: Vec<&str> = [
            ("record", e.record.is_some()),
            ("tool_called", e.tool_called.is_some()),
            ("tool_not_called", e.tool_not_called.is_some()),
            ("held", e.held.is_some()),
            ("ran", e.ran.is_some()),
            ("confirmed", e.confirmed.is_some()),
            ("undone", e.undone.is_some()),
            ("tool_calls", e.tool_calls.is_some()),
            ("replies", e.replies.is_some()),
            ("reply_contains", e.reply_contains.is_some()),
            ("reply_lacks", e.reply_lacks.is_some()),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(k, _)| k)
        .collect();
        let kind = match kinds.as_slice() {
            [one] => *one,
            [] => {
                return Err(self.error(
                    span,
                    "expect",
                    "an expectation needs one target: record, tool_called, tool_not_called, held, ran, confirmed, undone, tool_calls, replies, reply_contains or reply_lacks",
                ));
            }
            [_, second, ..] => {
                return Err(self.error(
                    span,
                    second,
                    format!(
                        "one target per expectation; this one has {}",
                        kinds.join(" and ")
                    ),
                ));
            }
        };
        // Which modifiers each target takes.
        let allowed: &[&str] = match kind {
            "record" => &["name", "event", "fields", "exists", "count"],
            "tool_called" => &["args", "times", "result_contains"],
            "tool_not_called" => &["args"],
            "ran" => &["times"],
            _ => &[],
        };
        for (modifier, set) in [
            ("name", e.name.is_some()),
            ("event", e.event.is_some()),
            ("fields", e.fields.is_some()),
            ("exists", e.exists.is_some()),
            ("count", e.count.is_some()),
            ("args", e.args.is_some()),
            ("times", e.times.is_some()),
            ("result_contains", e.result_contains.is_some()),
        ] {
            if set && !allowed.contains(&modifier) {
                return Err(self.error(
                    span.clone(),
                    modifier,
                    format!("`{modifier}` does not go with `{kind}`"),
                ));
            }
        }
        let tool = |name: &Option<String>, field: &str| -> Result<String, SuiteError> {
            let name = name.as_deref().unwrap_or_default().trim();
            if self.tools.contains(name) || CHAT_TOOLS.contains(&name) {
                Ok(name.to_owned())
            } else {
                Err(self.error(
                    span.clone(),
                    field,
                    format!("there is no tool named {name:?}"),
                ))
            }
        };
        let args = || e.args.as_ref().map(table_to_json).unwrap_or_default();
        let text = |value: &Option<String>, field: &str| -> Result<String, SuiteError> {
            let value = value.as_deref().unwrap_or_default();
            if value.trim().is_empty() {
                Err(self.error(span.clone(), field, "the text to look for is empty"))
            } else {
                Ok(value.to_owned())
            }
        };
        Ok(match kind {
            "record" => {
                let raw_kind = e.record.as_deref().unwrap_or_default();
                let kind = RecordKind::parse(raw_kind).ok_or_else(|| {
                    self.error(
                        span.clone(),
                        "record",
                        format!(
                            "{raw_kind:?} is not a record kind ({})",
                            RecordKind::ALL.map(RecordKind::as_str).join(", ")
                        ),
                    )
                })?;
                if kind == RecordKind::Event && e.event.is_some() {
                    return Err(self.error(
                        span.clone(),
                        "event",
                        "an event is not inside an event: name it with `name`",
                    ));
                }
                if !kind.has_name() && e.name.is_some() {
                    return Err(self.error(
                        span.clone(),
                        "name",
                        format!("a {} has no name; use `event`", kind.as_str()),
                    ));
                }
                let claim = match (e.exists, e.count) {
                    (Some(_), Some(_)) => {
                        return Err(self.error(
                            span.clone(),
                            "count",
                            "`exists` or `count`, not both",
                        ));
                    }
                    (Some(false), None) => RecordClaim::Absent,
                    (None, Some(n)) => RecordClaim::Count(n),
                    _ => RecordClaim::Exists,
                };
                Expectation::Record {
                    filter: RecordFilter {
                        kind,
                        name: e.name.clone(),
                        event: e.event.clone(),
                        fields: e.fields.as_ref().map(table_to_json).unwrap_or_default(),
                    },
                    claim,
                }
            }
            "tool_called" => Expectation::ToolCalled {
                tool: tool(&e.tool_called, "tool_called")?,
                args: args(),
                times: e.times,
                result_contains: match &e.result_contains {
                    Some(_) => Some(text(&e.result_contains, "result_contains")?),
                    None => None,
                },
            },
            "tool_not_called" => Expectation::ToolNotCalled {
                tool: tool(&e.tool_not_called, "tool_not_called")?,
                args: args(),
            },
            "held" => Expectation::Held(tool(&e.held, "held")?),
            "ran" => Expectation::Ran {
                tool: tool(&e.ran, "ran")?,
                times: e.times.unwrap_or(1),
            },
            "confirmed" => Expectation::Confirmed(tool(&e.confirmed, "confirmed")?),
            "undone" => Expectation::Undone(e.undone.unwrap_or(true)),
            "tool_calls" => Expectation::ToolCalls(e.tool_calls.unwrap_or_default()),
            "replies" => Expectation::Replies(e.replies.unwrap_or_default()),
            "reply_contains" => {
                Expectation::ReplyContains(text(&e.reply_contains, "reply_contains")?)
            }
            _ => Expectation::ReplyLacks(text(&e.reply_lacks, "reply_lacks")?),
        })
    }
}
