//! `steward replay`: re-drives a stored conversation's messages with the current prompt, tools
//! and model, and reports the first place it goes differently from the original — another
//! tool, other arguments, another effect, or a held action that now runs (or the reverse).
//!
//! The stored store is never written. The replay runs on a fork: a throwaway store holding
//! the records the conversation used, as they were before it changed them (rebuilt through the
//! service layer exactly as `export-case` writes its setup), with a fresh organiser. Arguments
//! are compared with record ids replaced by placeholders, since the fork's ids are new. Reply
//! wording is never a divergence.

use serde_json::Value;
use steward_harness::Domain;
use steward_harness::profile::get_profile;
use steward_store::Table;

use crate::export::{Privacy, render};
use crate::observe::clip;
use crate::records::{Record, ids_to_placeholders, read_records};
use crate::runner::{ModelChoice, Outcome, run_case_with_domain};
use crate::stored::{CallState, StoredConversation, StoredError, StoredTurn, read_conversation};
use crate::suite::{Input, parse_suite};

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The conversation could not be read.
    #[error(transparent)]
    Stored(#[from] StoredError),
    /// It has no turn the model took part in.
    #[error("conversation {0} has no turn the model answered; nothing to replay")]
    Empty(String),
    /// Its calls name tools the current tool set does not have, or records that are gone.
    #[error("conversation {key} cannot be replayed: {problem}")]
    Unreplayable {
        /// The conversation.
        key: String,
        /// Why.
        problem: String,
    },
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// Turns of the original.
    pub turns: usize,
    /// The first divergence, if any: where and what.
    pub divergence: Option<String>,
    /// Ids the conversation used that name no record any more.
    pub unresolved_ids: Vec<String>,
}

/// Replays conversation `key` of `source` with `model` over `domain`.
pub async fn replay(
    source: &dyn Table,
    key: &str,
    model: &ModelChoice,
    domain: Domain,
) -> Result<ReplayReport, ReplayError> {
    let original = read_conversation(source, key).await?;
    if original.turns.is_empty() {
        return Err(ReplayError::Empty(key.to_owned()));
    }
    let unreplayable = |problem: String| ReplayError::Unreplayable {
        key: key.to_owned(),
        problem,
    };
    let records_then = read_records(source, &original.user)
        .await
        .map_err(|e| unreplayable(e.to_string()))?;
    let organiser = get_profile(source, &original.user)
        .await
        .ok()
        .map(|p| p.name.to_string());
    let exported = render(
        &original,
        &records_then,
        organiser.as_deref(),
        "replay",
        Privacy::Keep,
    );
    let tools = domain
        .registry
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    let suite = parse_suite(&exported.suite, &tools).map_err(|e| unreplayable(e.to_string()))?;
    let Some(mut case) = suite.cases.into_iter().next() else {
        return Err(ReplayError::Empty(key.to_owned()));
    };
    // The person's words are what they typed or pressed; a button the new replies lack is
    // still what they said.
    for turn in &mut case.turns {
        if let Input::Press(title) = &turn.input {
            turn.input = Input::Say(title.clone());
        }
    }
    let now_ms = original.turns.first().map_or(0, |t| t.at_ms);
    let (run, kept) = run_case_with_domain(&case, now_ms, model, domain).await;
    let mut report = ReplayReport {
        turns: original.turns.len(),
        divergence: None,
        unresolved_ids: exported.unresolved_ids,
    };
    let Some(kept) = kept else {
        report.divergence = Some(outcome_text(&run.outcome));
        return Ok(report);
    };
    let key_now = format!("web:{}", kept.user);
    let replayed = match read_conversation(kept.table.as_ref(), &key_now).await {
        Ok(c) => c,
        Err(StoredError::NoOwner(_)) => StoredConversation {
            key: steward_harness::ConversationKey::web(&kept.user),
            user: kept.user.clone(),
            turns: Vec::new(),
            created: Default::default(),
            before: Default::default(),
        },
        Err(e) => return Err(e.into()),
    };
    let records_now = read_records(kept.table.as_ref(), &kept.user)
        .await
        .map_err(|e| unreplayable(e.to_string()))?;
    report.divergence = first_divergence(
        &original.turns,
        &records_then,
        &replayed.turns,
        &records_now,
    )
    .or_else(|| match &run.outcome {
        // The case's own checks (what ran, what was held) passed or failed in line with the
        // per-call comparison; a run that stopped early is reported when nothing else was.
        Outcome::Failed(why) if why.starts_with("turn ") || why.starts_with("setup") => {
            Some(format!("the replay stopped: {why}"))
        }
        _ => None,
    });
    Ok(report)
}

fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Passed => "the replay ran".into(),
        Outcome::Failed(why) | Outcome::Skipped(why) => format!("the replay stopped: {why}"),
    }
}

/// The first place the replayed turns differ from the original ones.
pub fn first_divergence(
    original: &[StoredTurn],
    records_then: &[Record],
    replayed: &[StoredTurn],
    records_now: &[Record],
) -> Option<String> {
    for (i, before) in original.iter().enumerate() {
        let n = i + 1;
        let Some(after) = replayed.get(i) else {
            return Some(format!(
                "turn {n} ({:?}): the replay never got there",
                clip(&before.text, 60)
            ));
        };
        let was: Vec<_> = before.calls().collect();
        let now: Vec<_> = after.calls().collect();
        for (k, (a, b)) in was.iter().zip(&now).enumerate() {
            let call = k + 1;
            let args_a = ids_to_placeholders(&a.input, records_then);
            let args_b = ids_to_placeholders(&b.input, records_now);
            if a.name != b.name {
                return Some(format!(
                    "turn {n}, call {call}: the model called {} {} instead of {} {}",
                    b.name,
                    brief(&args_b),
                    a.name,
                    brief(&args_a)
                ));
            }
            if args_a != args_b {
                return Some(format!(
                    "turn {n}, call {call} ({}): arguments {} instead of {}",
                    a.name,
                    brief(&args_b),
                    brief(&args_a)
                ));
            }
            if a.state != b.state {
                let what = match (a.state, b.state) {
                    (CallState::Held, CallState::Ran) => "a held action now runs".to_owned(),
                    (CallState::Ran, CallState::Held) => {
                        "an action that ran is now held".to_owned()
                    }
                    (was, now) => format!("it {} where it {}", now.as_str(), was.as_str()),
                };
                return Some(format!("turn {n}, call {call} ({}): {what}", a.name));
            }
        }
        if was.len() != now.len() {
            let detail = match now.get(was.len()) {
                Some(extra) => format!(
                    "; the first extra is {} {}",
                    extra.name,
                    brief(&ids_to_placeholders(&extra.input, records_now))
                ),
                None => match was.get(now.len()) {
                    Some(missing) => format!("; {} is no longer called", missing.name),
                    None => String::new(),
                },
            };
            return Some(format!(
                "turn {n}: {} tool call(s) instead of {}{detail}",
                now.len(),
                was.len()
            ));
        }
    }
    None
}

fn brief(value: &Value) -> String {
    clip(&value.to_string(), 120)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::records::RecordKind;
    use crate::stored::{StoredCall, StoredStep};

    fn turn(state: CallState, event: &str) -> StoredTurn {
        StoredTurn {
            number: 1,
            text: "Publish it".into(),
            pressed: false,
            steps: vec![
                StoredStep::Calls(vec![StoredCall {
                    id: "toolu_1".into(),
                    name: "publish_event".into(),
                    input: json!({"event_id": event}),
                    state,
                }]),
                StoredStep::Text("Done.".into()),
            ],
            reply: Some("Done.".into()),
            buttons: Vec::new(),
            at_ms: 0,
        }
    }

    fn event(id: &str) -> Record {
        Record {
            kind: RecordKind::Event,
            event_id: id.into(),
            data: json!({"id": id, "name": "Spring Open"}),
        }
    }

    #[test]
    fn held_versus_ran_and_missing_turns_are_divergences_and_ids_are_not() {
        let then = [event("e_1")];
        let now = [event("e_2")];
        // Other ids for the same record: no divergence.
        assert_eq!(
            first_divergence(
                &[turn(CallState::Held, "e_1")],
                &then,
                &[turn(CallState::Held, "e_2")],
                &now
            ),
            None
        );
        assert_eq!(
            first_divergence(
                &[turn(CallState::Held, "e_1")],
                &then,
                &[turn(CallState::Ran, "e_2")],
                &now
            )
            .as_deref(),
            Some("turn 1, call 1 (publish_event): a held action now runs")
        );
        assert_eq!(
            first_divergence(&[turn(CallState::Ran, "e_1")], &then, &[], &now).as_deref(),
            Some(r#"turn 1 ("Publish it"): the replay never got there"#)
        );
    }
}
