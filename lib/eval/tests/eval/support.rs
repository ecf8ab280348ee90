//! Shared helpers: parse a suite against the real tool set and run it scripted.

use steward_eval::{ModelChoice, Report, Suite, SuiteError, parse_suite, run_suite, tool_names};
use steward_events::EventsConfig;

pub fn parse(text: &str) -> Result<Suite, SuiteError> {
    parse_suite(text, &tool_names(&EventsConfig::default()))
}

pub async fn run_scripted(suite: &Suite) -> Report {
    let results = run_suite(suite, &ModelChoice::Scripted, 1, &EventsConfig::default()).await;
    Report::new("scripted", 1, &results)
}
