//! A conversation exported as a case (personal data replaced, ids as placeholders, the
//! records it used but did not make as setup) runs green as a case of its own.

use steward_eval::export::export_case;
use steward_eval::{ModelChoice, run_case_keeping_store};
use steward_events::EventsConfig;
use steward_harness::ConversationKey;

use crate::support::{parse, run_scripted};

const ORIGINAL: &str = r#"
[[case]]
name = "a conversation worth keeping"
setup = [
  { tool = "create_event", input = { name = "Spring Open", dates = ["2026-12-12"], venue = "Town Hall" } },
  { tool = "register_attendee", input = { event_id = "{{event:Spring Open}}", name = "Sam Roe", email = "sam.roe@example.com" } },
]

[[case.turn]]
say = "Add Priya Natarajan (priya@example.net, +44 7700 900123) to Spring Open, and a room Aula for 80."
model = [
  { tools = [
    { tool = "register_attendee", input = { event_id = "{{event:Spring Open}}", name = "Priya Natarajan", email = "priya@example.net" } },
    { tool = "add_room", input = { event_id = "{{event:Spring Open}}", name = "Aula", capacity = 80 } },
  ] },
  { text = "Priya Natarajan is registered and Aula (80) is added. Sam Roe was already on the list." },
]

[[case.turn]]
say = "Now publish it."
model = [
  { tool = "publish_event", input = { event_id = "{{event:Spring Open}}" } },
  { text = "Publish Spring Open? <buttons>Yes, publish | No</buttons>" },
]

[[case.turn]]
press = "Yes, publish"
model = [
  { tool = "publish_event", input = { event_id = "{{event:Spring Open}}" } },
  { text = "Published." },
]

[[case.expect]]
confirmed = "publish_event"
"#;

#[tokio::test]
async fn an_exported_conversation_runs_green_as_a_case() {
    let original = parse(ORIGINAL).unwrap_or_else(|e| panic!("{e}"));
    let (run, kept) = run_case_keeping_store(
        &original.cases[0],
        original.now_ms,
        &ModelChoice::Scripted,
        &EventsConfig::default(),
    )
    .await;
    assert_eq!(run.outcome, steward_eval::Outcome::Passed);
    let kept = kept.unwrap();
    let key = ConversationKey::web(&kept.user).to_string();

    let exported = export_case(kept.table.as_ref(), &key, "exported")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = exported.suite;
    println!("{text}");
    assert!(
        exported.unresolved_ids.is_empty(),
        "{:?}",
        exported.unresolved_ids
    );
    // Personal data is gone; placeholders stand in consistently.
    for secret in [
        "Sam Roe",
        "sam.roe@example.com",
        "Priya Natarajan",
        "priya@example.net",
        "7700 900123",
        "Eval Organiser",
    ] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
    assert!(text.contains("Attendee 1"), "{text}");
    assert!(text.contains("+15550000001"), "{text}");
    // Record ids are placeholders; the event and the attendee from before the conversation
    // are setup steps, the room it made is not.
    assert!(!text.contains("e_0"), "{text}");
    assert!(text.contains(r#"{ tool = "create_event""#), "{text}");
    assert!(
        text.contains(r#"{ tool = "register_attendee", input = { email = "attendee"#),
        "{text}"
    );
    assert!(
        !text.contains(r#"setup = [\n  { tool = "add_room""#),
        "{text}"
    );
    assert!(text.contains(r#"press = "Yes, publish""#), "{text}");
    assert!(text.contains("confirmed = \"publish_event\""), "{text}");
    assert!(text.contains("ran = \"add_room\"\ntimes = 1"), "{text}");

    let suite = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let report = run_scripted(&suite).await;
    assert!(!report.has_failures(), "{:?}", report.cases[0].first_unmet);
    assert_eq!(report.passed_runs, 1);
}
