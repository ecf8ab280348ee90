//! The tool set as the model and MCP clients see it, snapshotted so any change to a name,
//! description, schema or flag shows up in review.

use steward_events::{DOMAIN_PROMPT, EventsConfig, registry};

#[test]
fn the_tool_set_has_a_fixed_order_and_flags() {
    let r = registry(&EventsConfig::default());
    let names: Vec<&str> = r.tools().iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "list_events",
            "get_event",
            "create_event",
            "update_event",
            "publish_event",
            "cancel_event",
            "reopen_event",
            "delete_event",
            "add_room",
            "update_room",
            "remove_room",
            "add_person",
            "add_session",
            "update_session",
            "remove_session",
            "list_sessions",
            "set_program",
            "build_timetable",
            "get_timetable",
            "set_registration",
            "list_attendees",
            "register_attendee",
            "withdraw_attendee",
            "get_public_link",
            "undo_last_action",
        ]
    );
    let read_only: Vec<&str> = r
        .tools()
        .iter()
        .filter(|t| t.is_read_only())
        .map(|t| t.name())
        .collect();
    assert_eq!(
        read_only,
        [
            "list_events",
            "get_event",
            "list_sessions",
            "get_timetable",
            "list_attendees",
            "get_public_link"
        ]
    );
    for t in r.tools() {
        assert!(
            t.description().len() >= 80,
            "{}: describe it for the model",
            t.name()
        );
        assert!(t.description().len() <= 600, "{}: keep it short", t.name());
    }
}

/// Snapshots live in `lib/events/tests/snapshots/`, named without the module path.
macro_rules! snapshot_settings {
    ($body:block) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, $body)
    };
}

#[test]
fn model_tool_list_snapshot() {
    snapshot_settings!({
        insta::assert_json_snapshot!(
            "events_model_tools",
            registry(&EventsConfig::default()).model_tools()
        );
    });
}

#[test]
fn mcp_tool_list_snapshot() {
    snapshot_settings!({
        insta::assert_json_snapshot!(
            "events_mcp_tools",
            registry(&EventsConfig::default()).mcp_tools()
        );
    });
}

#[test]
fn domain_prompt_snapshot() {
    snapshot_settings!({
        insta::assert_snapshot!("events_domain_prompt", DOMAIN_PROMPT);
    });
}

/// The whole frozen prefix Steward sends on every request (system prompt with the domain
/// section, then every tool including the conversation-only ones). A change here costs every
/// conversation its prompt cache and saved reasoning once: it must come with a
/// `PROMPT_VERSION` bump, which this snapshot makes visible in review.
#[test]
fn the_whole_frozen_prefix_is_pinned() {
    let prefix = steward_harness::FrozenPrefix::new(
        "Steward",
        DOMAIN_PROMPT,
        &registry(&EventsConfig::default()),
    );
    let json = prefix.to_json();
    let text = json["system"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(steward_harness::PROMPT_VERSION));
    let lines = text.lines().count();
    assert!(
        (60..=110).contains(&lines),
        "about 70 lines of prompt, organised as a spec: {lines}"
    );
    insta::assert_json_snapshot!("steward_frozen_prefix", json);
}
