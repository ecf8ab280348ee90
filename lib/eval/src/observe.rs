//! What a case did, read from where it is true: the records, commit headers and confirmation
//! records in the store, the tool calls the model made (from the [`Recorder`]), and the
//! replies the person got. Expectations are checked against this, never against wording
//! alone.
//!
//! [`Recorder`]: crate::model::Recorder

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use steward_harness::UserId;
use steward_harness::audit::{ActionHeader, ActionKind};
use steward_harness::gate::{ConfirmState, Confirmation};
use steward_harness::keys::{ACTION_SK_PREFIX, CONFIRM_SK_PREFIX, user_pk};
use steward_store::{Query, StoreError, Table};

use crate::model::ToolCall;
use crate::records::{CASE_ITEMS_MAX, Record, read_records, resolve, select, subset_matches};
use crate::suite::{Expectation, RecordClaim};

/// Everything a case's expectations are checked against.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// The organiser's domain records at the end.
    pub records: Vec<Record>,
    /// Every tool call the model made, in order.
    pub calls: Vec<ToolCall>,
    /// The ids of the model's calls that committed a change.
    pub ran: BTreeSet<String>,
    /// How many undo commits there were.
    pub undos: usize,
    /// The confirmation records the gate filed.
    pub confirmations: Vec<Confirmation>,
    /// The text of every reply the person got, in order.
    pub replies: Vec<String>,
}

impl Observed {
    /// Reads the store's side of a case of `user`; `calls` and `replies` come from the run.
    pub async fn read(
        table: &dyn Table,
        user: &UserId,
        calls: Vec<ToolCall>,
        replies: Vec<String>,
    ) -> Result<Self, StoreError> {
        let records = read_records(table, user).await?;
        let headers = table
            .query_all(
                &Query::prefix(user_pk(user), ACTION_SK_PREFIX),
                CASE_ITEMS_MAX,
            )
            .await?;
        let mut ran = BTreeSet::new();
        let mut undos = 0;
        for item in &headers {
            let header: ActionHeader = item.parse().map_err(unreadable)?;
            if header.kind == ActionKind::Undo {
                undos += 1;
            }
            if let Some(effect) = &header.effect {
                ran.insert(effect.tool_use.as_str().to_owned());
            }
        }
        let confirmations = table
            .query_all(
                &Query::prefix(user_pk(user), CONFIRM_SK_PREFIX),
                CASE_ITEMS_MAX,
            )
            .await?
            .iter()
            .map(|i| i.parse::<Confirmation>().map_err(unreadable))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            records,
            calls,
            ran,
            undos,
            confirmations,
            replies,
        })
    }

    fn calls_of<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a ToolCall> + 'a {
        self.calls.iter().filter(move |c| c.name == tool)
    }

    fn ran_count(&self, tool: &str) -> usize {
        self.calls_of(tool)
            .filter(|c| self.ran.contains(&c.id))
            .count()
    }

    fn args_match(&self, args: &Map<String, Value>) -> Result<impl Fn(&ToolCall) -> bool, String> {
        let wanted =
            resolve(&Value::Object(args.clone()), &self.records).map_err(|e| e.to_string())?;
        Ok(move |c: &ToolCall| subset_matches(&wanted, &c.input))
    }

    /// Checks one expectation; `Err` says what was found instead.
    pub fn check(&self, expectation: &Expectation) -> Result<(), String> {
        match expectation {
            Expectation::Record { filter, claim } => {
                let fields = Value::Object(filter.fields.clone());
                let fields = match resolve(&fields, &self.records) {
                    Ok(Value::Object(map)) => map,
                    Ok(_) => Map::new(),
                    Err(e) => return Err(e.to_string()),
                };
                let found = select(
                    &self.records,
                    filter.kind,
                    filter.name.as_deref(),
                    filter.event.as_deref(),
                    &fields,
                );
                let ok = match claim {
                    RecordClaim::Exists => !found.is_empty(),
                    RecordClaim::Absent => found.is_empty(),
                    RecordClaim::Count(n) => found.len() == *n,
                };
                if ok {
                    return Ok(());
                }
                let same_kind = select(
                    &self.records,
                    filter.kind,
                    filter.name.as_deref(),
                    filter.event.as_deref(),
                    &Map::new(),
                );
                Err(format!(
                    "found {} matching; {} of that kind{}: {}",
                    found.len(),
                    same_kind.len(),
                    if filter.name.is_some() {
                        " and name"
                    } else {
                        ""
                    },
                    describe(&same_kind, &filter.fields)
                ))
            }
            Expectation::ToolCalled {
                tool,
                args,
                times,
                result_contains,
            } => {
                let matches = self.args_match(args)?;
                let matching: Vec<&ToolCall> = self.calls_of(tool).filter(|c| matches(c)).collect();
                let n = matching.len();
                let ok = match times {
                    Some(t) => n == *t,
                    None => n > 0,
                };
                if !ok {
                    return Err(format!(
                        "{n} matching call(s); calls made: {}",
                        self.call_list()
                    ));
                }
                let Some(text) = result_contains else {
                    return Ok(());
                };
                let needle = text.to_lowercase();
                if matching.iter().any(|c| {
                    c.result
                        .as_deref()
                        .is_some_and(|r| r.to_lowercase().contains(&needle))
                }) {
                    Ok(())
                } else {
                    let results: Vec<String> = matching
                        .iter()
                        .map(|c| {
                            format!("{:?}", clip(c.result.as_deref().unwrap_or("(none)"), 160))
                        })
                        .collect();
                    Err(format!("its result(s): {}", results.join(", ")))
                }
            }
            Expectation::ToolNotCalled { tool, args } => {
                let matches = self.args_match(args)?;
                match self.calls_of(tool).find(|c| matches(c)) {
                    None => Ok(()),
                    Some(c) => Err(format!("called with {}", c.input)),
                }
            }
            Expectation::Held(tool) => {
                let held = self.calls_of(tool).any(ToolCall::was_held)
                    || self.confirmations.iter().any(|c| &c.capability == tool);
                let ran = self.ran_count(tool);
                match (held, ran) {
                    (true, 0) => Ok(()),
                    (false, 0) => Err(format!("never held; calls made: {}", self.call_list())),
                    (_, n) => Err(format!("it ran {n} time(s)")),
                }
            }
            Expectation::Ran { tool, times } => {
                let n = self.ran_count(tool);
                if n == *times {
                    Ok(())
                } else {
                    Err(format!(
                        "it ran {n} time(s); calls made: {}",
                        self.call_list()
                    ))
                }
            }
            Expectation::Confirmed(tool) => {
                let held = self.calls_of(tool).any(ToolCall::was_held);
                let spent = self
                    .confirmations
                    .iter()
                    .any(|c| &c.capability == tool && c.state == ConfirmState::Spent);
                let n = self.ran_count(tool);
                match (held, spent, n) {
                    (true, true, 1) => Ok(()),
                    (false, ..) => Err(format!(
                        "never held first; calls made: {}",
                        self.call_list()
                    )),
                    (true, false, _) => Err(format!(
                        "its confirmation was never spent (ran {n} time(s))"
                    )),
                    (true, true, n) => Err(format!("it ran {n} times")),
                }
            }
            Expectation::Undone(wanted) => {
                if (self.undos > 0) == *wanted {
                    Ok(())
                } else {
                    Err(format!("{} undo commit(s)", self.undos))
                }
            }
            Expectation::ToolCalls(n) => {
                if self.calls.len() == *n {
                    Ok(())
                } else {
                    Err(format!("calls made: {}", self.call_list()))
                }
            }
            Expectation::Replies(n) => {
                if self.replies.len() == *n {
                    Ok(())
                } else {
                    Err(format!("{} replies", self.replies.len()))
                }
            }
            Expectation::ReplyContains(text) => {
                let needle = text.to_lowercase();
                if self
                    .replies
                    .iter()
                    .any(|r| r.to_lowercase().contains(&needle))
                {
                    Ok(())
                } else {
                    Err(format!("replies were: {}", self.reply_list()))
                }
            }
            Expectation::ReplyLacks(text) => {
                let needle = text.to_lowercase();
                match self
                    .replies
                    .iter()
                    .find(|r| r.to_lowercase().contains(&needle))
                {
                    None => Ok(()),
                    Some(r) => Err(format!("a reply has it: {}", clip(r, 120))),
                }
            }
        }
    }

    fn call_list(&self) -> String {
        if self.calls.is_empty() {
            return "none".into();
        }
        self.calls
            .iter()
            .map(|c| {
                let state = if self.ran.contains(&c.id) {
                    " (ran)"
                } else if c.was_held() {
                    " (held)"
                } else {
                    ""
                };
                format!("{}{}{state}", c.name, clip(&c.input.to_string(), 80))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn reply_list(&self) -> String {
        if self.replies.is_empty() {
            return "none".into();
        }
        self.replies
            .iter()
            .map(|r| format!("{:?}", clip(r, 80)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The records' names and the asked-for fields' actual values, briefly.
fn describe(records: &[&Record], fields: &Map<String, Value>) -> String {
    if records.is_empty() {
        return "none".into();
    }
    records
        .iter()
        .map(|r| {
            let name = r.name().map(|n| format!("{n:?}")).unwrap_or_default();
            let values: Vec<String> = fields
                .keys()
                .map(|k| format!("{k}={}", r.data.get(k).cloned().unwrap_or(Value::Null)))
                .collect();
            format!("{name} {}", values.join(" ")).trim().to_owned()
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A stored item that does not parse as what its key says.
fn unreadable(e: serde_json::Error) -> StoreError {
    StoreError::Backend(format!("an unreadable item in the case's store: {e}"))
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max).collect();
        out.push('…');
        out
    }
}
