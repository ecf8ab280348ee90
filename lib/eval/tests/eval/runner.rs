//! The runner on a small suite where one case must fail on an expectation and one on a model
//! error: the report names the unmet expectation and the error, and the other cases still run.

use crate::support::{parse, run_scripted};

const SUITE: &str = r#"
[[case]]
name = "creates a draft"

[[case.turn]]
say = "Create Summer Meetup on 12 December."
model = [
  { tool = "create_event", input = { name = "Summer Meetup", dates = ["2026-12-12"] } },
  { text = "Done." },
]

[[case.expect]]
record = "event"
name = "Summer Meetup"
fields = { status = "draft" }

[[case]]
name = "expects what did not happen"

[[case.turn]]
say = "Create Summer Meetup on 12 December."
model = [
  { tool = "create_event", input = { name = "Summer Meetup", dates = ["2026-12-12"] } },
  { text = "Done." },
]

[[case.expect]]
ran = "create_event"

[[case.expect]]
record = "event"
name = "Summer Meetup"
fields = { status = "published" }

[[case.expect]]
replies = 5

[[case]]
name = "the model fails"

[[case.turn]]
say = "Publish Nowhere Fest."
model = [
  { tool = "publish_event", input = { event_id = "{{event:Nowhere Fest}}" } },
  { text = "Published." },
]

[[case.expect]]
replies = 1

[[case]]
name = "still runs after a failure"

[[case.turn]]
say = "Hello"
model = [{ text = "Hi! What event are we working on?" }]

[[case.expect]]
tool_calls = 0

[[case.expect]]
reply_contains = "what event"
"#;

#[tokio::test]
async fn a_failing_case_is_reported_with_its_first_unmet_expectation() {
    let suite = parse(SUITE).unwrap_or_else(|e| panic!("{e}"));
    let report = run_scripted(&suite).await;
    let table = report.table();
    println!("{table}");
    assert!(report.has_failures());
    let results: Vec<(&str, &str)> = report
        .cases
        .iter()
        .map(|c| (c.name.as_str(), c.result))
        .collect();
    assert_eq!(
        results,
        [
            ("creates a draft", "pass"),
            ("expects what did not happen", "fail"),
            ("the model fails", "fail"),
            ("still runs after a failure", "pass"),
        ]
    );
    // The first unmet expectation (the second; the third is never reached), with what was
    // found instead.
    let unmet = report.cases[1].first_unmet.as_deref().unwrap();
    assert!(
        unmet.starts_with(
            r#"expect 2: event "Summer Meetup" with {"status":"published"} exists — found 0 matching"#
        ),
        "{unmet}"
    );
    assert!(
        unmet.contains(r#""Summer Meetup" status="draft""#),
        "{unmet}"
    );
    assert!(
        table.contains("expect 2: event \"Summer Meetup\""),
        "{table}"
    );
    // A model error fails its case with the error.
    let error = report.cases[2].first_unmet.as_deref().unwrap();
    assert!(
        error.contains("turn 1: model call 1:")
            && error.contains("{{event:Nowhere Fest}}: no event by that name"),
        "{error}"
    );
    assert_eq!(report.passed_runs, 2);
    assert_eq!(report.counted_runs, 4);
    assert!(table.contains("2 of 4 runs passed (50%)"), "{table}");
    // The JSON has every run.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["cases"][1]["result"], "fail");
    assert_eq!(json["cases"][0]["details"][0]["model_calls"], 2);
    assert_eq!(json["cases"][0]["details"][0]["turns"], 1);
}

#[tokio::test]
async fn a_press_of_a_button_that_was_not_offered_fails_the_case() {
    let suite = parse(
        r#"
[[case]]
name = "presses a missing button"

[[case.turn]]
say = "Hello"
model = [{ text = "Hi! <buttons>Create an event | Help</buttons>" }]

[[case.turn]]
press = "Publish"
model = [{ text = "Published." }]

[[case.expect]]
replies = 2
"#,
    )
    .unwrap();
    let report = run_scripted(&suite).await;
    let unmet = report.cases[0].first_unmet.as_deref().unwrap();
    assert_eq!(
        unmet,
        r#"turn 2: no button "Publish" on the last reply (its buttons: "Create an event", "Help")"#
    );
    assert_eq!(report.cases[0].details[0].turns, 1);
}

#[tokio::test]
async fn unused_scripted_steps_fail_the_turn() {
    let suite = parse(
        r#"
[[case]]
name = "scripted more than the turn used"

[[case.turn]]
say = "Hello"
model = [{ text = "Hi!" }, { text = "Never asked for." }]

[[case.expect]]
replies = 1
"#,
    )
    .unwrap();
    let report = run_scripted(&suite).await;
    assert_eq!(
        report.cases[0].first_unmet.as_deref(),
        Some("turn 1: 1 scripted step(s) left unused (the turn ended after fewer model calls)")
    );
}
