//! Evals that judge effects, not wording.
//!
//! A suite file ([`suite`]) lists cases: starting records, the person's messages and button
//! presses, the model's scripted steps (or a real model), and expectations on what actually
//! happened — records, tool calls, held and confirmed actions, undo, replies. [`runner`] runs
//! each case on a throwaway store over the web-chat path; [`observe`] reads what happened
//! from the store and the model's calls; [`report`] renders the results.
//!
//! Beside the runner: [`export`] turns a stored conversation ([`stored`]) into a case,
//! [`replay`] re-drives one with the current prompt and model and finds the first divergence,
//! and
//! [`prefix_guard`] checks that the frozen prompt prefix never changes without a new
//! `PROMPT_VERSION`.

pub mod cost;
pub mod export;
pub mod model;
pub mod observe;
pub mod prefix_guard;
pub mod records;
pub mod replay;
pub mod report;
pub mod runner;
pub mod stored;
pub mod suite;

use std::collections::BTreeSet;

pub use report::Report;
pub use runner::{
    CaseRun, ModelChoice, Outcome, run_case, run_case_keeping_store, run_case_with_domain,
    run_suite,
};
pub use suite::{Suite, SuiteError, parse_suite};

/// The names of every tool a suite may name: the events registry's (the conversation's own
/// tools are added by the parser).
pub fn tool_names(events: &steward_events::EventsConfig) -> BTreeSet<String> {
    steward_events::registry(events)
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}
