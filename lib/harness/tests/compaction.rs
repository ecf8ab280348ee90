//! Compaction into new segments, silence and reactions through a real turn, and the frozen
//! prefix (snapshot, and byte-stability across compaction).

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use serde_json::json;
use steward_channels::ChannelProfile;
use steward_harness::compaction::{COMPACTION_REQUEST, NOTES_HEADER};
use steward_harness::shaping::SILENT_FALLBACK;
use steward_harness::transcript::{self, RowSource};
use steward_harness::{TurnLimits, TurnOutcome, conversation};
use steward_llm::{ContentBlock, CreateResponse, LlmError, StopReason};
use steward_store::testing::Backend;

use chat::rig::{Rig, RigOptions};

fn text(t: &str) -> CreateResponse {
    CreateResponse::new(vec![ContentBlock::text(t)], StopReason::EndTurn)
}

async fn small_threshold(backend: Backend) -> Option<Rig> {
    let limits = TurnLimits {
        compaction_chars: 600,
        ..TurnLimits::default()
    };
    Rig::with(
        backend,
        RigOptions {
            limits,
            ..RigOptions::default()
        },
    )
    .await
}

async fn segment_of(r: &Rig) -> u32 {
    let ch = steward_harness::ChannelName::parse("tg").unwrap();
    conversation::load(r.world.table.as_ref(), &r.conv, &ch)
        .await
        .unwrap()
        .meta
        .segment
}

async fn compaction_starts_a_new_segment_with_notes(r: Rig) {
    // Two turns push the segment past 600 characters.
    r.model.push(Ok(text(&"long answer ".repeat(30))));
    r.say("m1", "first").await;
    r.model.push(Ok(text(&"more words ".repeat(30))));
    r.say("m2", "second").await;
    assert_eq!(segment_of(&r).await, 0);
    // Third turn: the harness asks for notes (low effort), then answers in the new segment.
    r.model
        .push(Ok(text("- user likes milk\n- promised a list")));
    r.model.push(Ok(text("Here you go.")));
    let out = r.say("m3", "third").await;
    assert_eq!(Rig::text(&out), "Here you go.");
    assert_eq!(segment_of(&r).await, 1);

    let reqs = r.model.requests();
    let summary_req = &reqs[2];
    let last = summary_req.messages.last().unwrap();
    assert!(steward_llm::text_of(&last.content).contains(COMPACTION_REQUEST));
    assert_eq!(
        summary_req.output_config.as_ref().and_then(|o| o.effort),
        Some(steward_llm::Effort::Low)
    );
    // The request after compaction replays only the new segment: notes, then the user row.
    let after = &reqs[3];
    assert_eq!(after.messages.len(), 1, "one merged user message");
    let t = steward_llm::text_of(&after.messages[0].content);
    assert!(
        t.starts_with(NOTES_HEADER) && t.contains("user likes milk"),
        "{t}"
    );
    assert!(t.contains("<user_message>\nthird\n</user_message>"));
    // The prefix is byte-identical before and after.
    assert_eq!(
        serde_json::to_vec(&reqs[0].system).unwrap(),
        serde_json::to_vec(&after.system).unwrap()
    );
    assert_eq!(
        serde_json::to_vec(&reqs[0].tools).unwrap(),
        serde_json::to_vec(&after.tools).unwrap()
    );
    // Old rows stay for audit.
    let old = transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
        .await
        .unwrap();
    assert_eq!(old.len(), 4);
    let new = transcript::load_segment(r.world.table.as_ref(), &r.conv, 1)
        .await
        .unwrap();
    assert_eq!(new[0].row.source, RowSource::Notes);
    // Later turns replay the new segment and keep it append-only.
    r.model.push(Ok(text("ok")));
    r.say("m4", "fourth").await;
    let reqs = r.model.requests();
    assert_eq!(reqs[4].messages[..after.messages.len()].len(), 1);
    assert_eq!(
        steward_llm::text_of(&reqs[4].messages[0].content),
        steward_llm::text_of(&after.messages[0].content)
    );
}

async fn summarization_fails(r: Rig) {
    r.model.push(Ok(text(&"long answer ".repeat(60))));
    r.say("m1", "first").await;
    r.model.push(Err(LlmError::Overloaded));
    r.model.push(Ok(text("Still here.")));
    assert_eq!(Rig::text(&r.say("m2", "second").await), "Still here.");
    assert_eq!(segment_of(&r).await, 0, "no new segment");
    let reqs = r.model.requests();
    assert_eq!(
        reqs[2].messages.len(),
        3,
        "carried on with the full history"
    );
}

steward_store::backend_tests!(setup = small_threshold;
    compaction_starts_a_new_segment_with_notes,
    summarization_fails,
);

mod shaping_through_a_turn {
    use super::*;

    async fn rig(backend: Backend) -> Option<Rig> {
        Rig::on(backend).await
    }

    async fn web(backend: Backend) -> Option<Rig> {
        Rig::with(
            backend,
            RigOptions {
                profile: ChannelProfile::WEB,
                ..RigOptions::default()
            },
        )
        .await
    }

    async fn silent_after_a_delivered_reaction(r: Rig) {
        r.model.push(Ok(CreateResponse::new(
            vec![ContentBlock::tool_use(
                "tu_1",
                "react",
                json!({"emoji": "👍"}),
            )],
            StopReason::ToolUse,
        )));
        r.model.push(Ok(text("<silent/>")));
        let out = r.say("m1", "thanks!").await;
        let TurnOutcome::Replied { reply, .. } = out else {
            panic!()
        };
        assert!(reply.is_silent());
        assert!(r.outbox.sent.lock().unwrap().is_empty(), "nothing sent");
        assert_eq!(*r.outbox.reactions.lock().unwrap(), ["👍"]);
        let seen = transcript::read_seen(r.world.table.as_ref(), &r.conv, None)
            .await
            .unwrap();
        assert!(
            seen.iter().any(|s| s.row.reaction.as_deref() == Some("👍")),
            "the reaction is in the visible transcript"
        );
    }

    async fn reaction_fails(r: Rig) {
        r.outbox
            .react_fails
            .store(true, std::sync::atomic::Ordering::SeqCst);
        r.model.push(Ok(CreateResponse::new(
            vec![ContentBlock::tool_use(
                "tu_1",
                "react",
                json!({"emoji": "🎉"}),
            )],
            StopReason::ToolUse,
        )));
        r.model.push(Ok(text("<silent/>")));
        assert_eq!(
            Rig::text(&r.say("m1", "we sold out!").await),
            SILENT_FALLBACK
        );
        assert_eq!(r.outbox.texts(), [SILENT_FALLBACK], "never left hanging");
        let results = r.last_results();
        assert!(results[0].2 && results[0].1.contains("could not be delivered"));
    }

    async fn only_one_reaction_per_turn(r: Rig) {
        r.model.push(Ok(CreateResponse::new(
            vec![
                ContentBlock::tool_use("tu_1", "react", json!({"emoji": "👍"})),
                ContentBlock::tool_use("tu_2", "react", json!({"emoji": "🎉"})),
            ],
            StopReason::ToolUse,
        )));
        r.model.push(Ok(text("<silent/>")));
        r.say("m1", "thanks").await;
        assert_eq!(*r.outbox.reactions.lock().unwrap(), ["👍"]);
        assert!(r.last_results()[1].2);
    }

    async fn silent_on_a_channel_without_reactions(r: Rig) {
        r.model.push(Ok(text("<silent/>")));
        assert_eq!(Rig::text(&r.say("m1", "thanks").await), SILENT_FALLBACK);
    }

    async fn buttons_reach_the_channel(r: Rig) {
        r.model.push(Ok(text(
            "Cancel it? <buttons>Yes, cancel | No, keep it</buttons>",
        )));
        let TurnOutcome::Replied { reply, .. } = r.say("m1", "cancel").await else {
            panic!()
        };
        assert_eq!(reply.text.as_deref(), Some("Cancel it?"));
        assert_eq!(reply.buttons, ["Yes, cancel", "No, keep it"]);
    }

    async fn created_records_become_active(r: Rig) {
        r.model.push(Ok(CreateResponse::new(
            vec![ContentBlock::tool_use(
                "tu_1",
                "add_note",
                json!({"title": "Shopping"}),
            )],
            StopReason::ToolUse,
        )));
        r.model.push(Ok(text("Added.")));
        r.say("m1", "note: shopping").await;
        let results = r.last_results();
        let added: serde_json::Value = serde_json::from_str(&results[0].1).unwrap();
        let id = added["data"]["id"].as_str().unwrap().to_owned();
        r.model.push(Ok(text("Sure.")));
        r.say("m2", "what now").await;
        let req = r.model.requests().pop().unwrap();
        let t = steward_llm::text_of(&req.messages.last().unwrap().content);
        assert!(
            t.contains(&format!("Active: {id}")),
            "the create made it active: {t}"
        );
    }

    async fn set_active_record_switches_the_record(r: Rig) {
        r.model.push(Ok(CreateResponse::new(
            vec![ContentBlock::tool_use(
                "tu_1",
                "set_active_record",
                json!({"record_id": "n123"}),
            )],
            StopReason::ToolUse,
        )));
        r.model.push(Ok(text("Ok.")));
        r.say("m1", "focus on n123").await;
        r.model.push(Ok(text("Sure.")));
        r.say("m2", "what now").await;
        let req = r.model.requests().pop().unwrap();
        let t = steward_llm::text_of(&req.messages.last().unwrap().content);
        assert!(t.contains("Active: n123"), "{t}");
    }

    steward_store::backend_tests!(setup = rig;
        silent_after_a_delivered_reaction,
        reaction_fails,
        only_one_reaction_per_turn,
        buttons_reach_the_channel,
        created_records_become_active,
        set_active_record_switches_the_record,
    );

    mod web_chat {
        use super::*;
        steward_store::backend_tests!(setup = web; silent_on_a_channel_without_reactions);
    }
}

#[tokio::test]
async fn the_frozen_prefix_is_pinned() {
    let r = Rig::on(Backend::Sqlite).await.unwrap();
    insta::assert_json_snapshot!("notes_prefix", r.agent.prefix().to_json());
    let tools: Vec<String> = r
        .agent
        .prefix()
        .tools()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        tools.last().map(String::as_str),
        Some("react"),
        "conversation-only tools come last"
    );
    assert!(
        r.agent
            .prefix()
            .tools()
            .last()
            .unwrap()
            .cache_control
            .is_some()
    );
    assert!(
        !r.agent
            .registry()
            .tools()
            .iter()
            .any(|t| t.name() == "react" || t.name() == "set_active_record"),
        "conversation-only tools are not in the shared registry (so never on MCP)"
    );
}
