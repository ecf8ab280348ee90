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

mod arguments_against_the_reference_validator {
    //! Every tool's arguments are checked by the harness's own `arg_schema`; on each real
    //! input schema it must refuse and accept exactly what the `jsonschema` crate does.

    use proptest::prelude::*;
    use serde_json::{Map, Value, json};
    use steward_events::{EventsConfig, registry};
    use steward_harness::arg_schema::ArgSchema;

    /// Values around the tools' bounds and of every JSON type.
    fn field_value() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            prop::sample::select(vec![
                -1i64, 0, 1, 5, 6, 240, 241, 1440, 1441, 100_000, 100_001
            ])
            .prop_map(Value::from),
            prop::sample::select(vec![1.0f64, 1.5, -0.5]).prop_map(Value::from),
            "[a-z0-9:-]{0,8}".prop_map(Value::from),
        ];
        let nested = scalar.clone().prop_recursive(2, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        prop_oneof![3 => scalar, 2 => nested]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]
        #[test]
        fn every_tool_refuses_what_the_reference_validator_refuses(
            pick in any::<prop::sample::Index>(),
            fields in prop::collection::vec((any::<prop::sample::Index>(), field_value()), 0..6),
        ) {
            let registry = registry(&EventsConfig::default());
            let tool = pick.get(registry.tools());
            let schema = tool.input_schema();
            let names: Vec<&String> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().collect())
                .unwrap_or_default();
            let mut args = Map::new();
            for (which, value) in fields {
                let name = if names.is_empty() { "extra".to_owned() } else { which.get(&names).to_string() };
                args.insert(name, value);
            }
            let args = Value::Object(args);
            let reference = jsonschema::validator_for(schema).unwrap().is_valid(&args);
            let ours = tool.validate(args.clone());
            prop_assert_eq!(ours.is_ok(), reference, "{} {} {:?}", tool.name(), args, ours);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]
        /// Each property's own schema (its bounds, item types and enums) against values around
        /// them, so a check that a whole call fails for another reason cannot hide.
        #[test]
        fn every_field_refuses_what_the_reference_validator_refuses(
            pick in any::<prop::sample::Index>(),
            field in any::<prop::sample::Index>(),
            value in field_value(),
        ) {
            let registry = registry(&EventsConfig::default());
            let tool = pick.get(registry.tools());
            let Some(properties) = tool.input_schema().get("properties").and_then(Value::as_object) else {
                return Ok(());
            };
            let (name, schema) = field.get(&properties.iter().collect::<Vec<_>>()).to_owned();
            let reference = jsonschema::validator_for(schema).unwrap().is_valid(&value);
            let problems = ArgSchema::compile(schema).unwrap().problems(&value);
            prop_assert_eq!(problems.is_empty(), reference, "{}.{} {} {:?}", tool.name(), name, value, problems);
        }
    }

    #[test]
    fn a_valid_call_of_each_shape_is_accepted() {
        let registry = registry(&EventsConfig::default());
        let create = registry.get("create_event").unwrap();
        assert!(
            create
                .validate(
                    json!({"name": "Spring Open", "dates": ["2026-11-14"], "capacity": 100_000})
                )
                .is_ok()
        );
        assert_eq!(
            create
                .validate(json!({"name": "Spring Open", "dates": ["2026-11-14"], "capacity": 0}))
                .unwrap_err(),
            "Invalid arguments: capacity: 0 is less than the minimum of 1"
        );
    }
}
