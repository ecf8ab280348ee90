//! What a turn leaves behind besides its reply: every tool call of one message is one request
//! (one undo unit), and when reply shaping changed what the model wrote, the model transcript
//! records what the person actually saw — append-only, roles alternating, every earlier request
//! a byte-for-byte prefix of the next.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use serde_json::json;
use steward_harness::shaping::{EMPTY_REPLY_FALLBACK, SILENT_FALLBACK};
use steward_harness::transcript::{self, RowSource};
use steward_harness::{Actor, audit};
use steward_llm::{ContentBlock, CreateResponse, Role, StopReason, text_of};
use steward_store::testing::Backend;

use chat::rig::{Rig, RigOptions};
use support::notes;

async fn rig(backend: Backend) -> Option<Rig> {
    Rig::on(backend).await
}

async fn web(backend: Backend) -> Option<Rig> {
    Rig::with(
        backend,
        RigOptions {
            profile: steward_channels::ChannelProfile::WEB,
            ..RigOptions::default()
        },
    )
    .await
}

fn reply(text: &str) -> CreateResponse {
    CreateResponse::new(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

fn calls(uses: &[(&str, &str, serde_json::Value)]) -> CreateResponse {
    CreateResponse::new(
        uses.iter()
            .map(|(id, name, input)| ContentBlock::tool_use(*id, *name, input.clone()))
            .collect(),
        StopReason::ToolUse,
    )
}

/// Request N+1 starts with request N's messages byte for byte, and roles alternate.
fn assert_append_only(r: &Rig) {
    let reqs = r.model.requests();
    for pair in reqs.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let a_msgs = serde_json::to_vec(&support::without_cache_marks(&a.messages)).unwrap();
        let b_prefix = serde_json::to_vec(&support::without_cache_marks(
            &b.messages[..a.messages.len()],
        ))
        .unwrap();
        assert_eq!(a_msgs, b_prefix, "request N+1 starts with request N");
    }
    for req in &reqs {
        for pair in req.messages.windows(2) {
            assert_ne!(pair[0].role, pair[1].role, "roles alternate");
        }
    }
}

async fn shown_rows(r: &Rig) -> Vec<(u64, String)> {
    transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.row.source == RowSource::Shown)
        .map(|p| (p.turn, text_of(&p.row.message.content)))
        .collect()
}

async fn note_titles(r: &Rig) -> Vec<String> {
    let ctx = r.world.ctx(&r.user, Actor::User);
    let mut t: Vec<String> = notes::list(&ctx)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.title)
        .collect();
    t.sort();
    t
}

// ---- one message, one undo unit -----------------------------------------------------------

async fn every_tool_call_of_a_message_is_one_request_and_undo_reverts_it_whole(r: Rig) {
    // Message 1: one note.
    r.model.push(Ok(calls(&[(
        "tu_1",
        "add_note",
        json!({"title": "Older"}),
    )])));
    r.model.push(Ok(reply("Added.")));
    r.say("m1", "add older").await;
    // Message 2: three calls over two rounds.
    r.model.push(Ok(calls(&[
        ("tu_2", "add_note", json!({"title": "A"})),
        ("tu_3", "add_note", json!({"title": "B"})),
    ])));
    r.model
        .push(Ok(calls(&[("tu_4", "add_note", json!({"title": "C"}))])));
    r.model.push(Ok(reply("Added three.")));
    r.say("m2", "add a, b and c").await;
    assert_eq!(note_titles(&r).await, ["A", "B", "C", "Older"]);

    let requests = audit::recent_requests(r.world.table.as_ref(), &r.user, 10)
        .await
        .unwrap();
    assert_eq!(requests.len(), 2, "one request per message: {requests:?}");
    assert_eq!(requests[0].commits.len(), 3);
    assert_eq!(requests[0].actor, Actor::Agent);
    assert!(
        requests[0]
            .commits
            .iter()
            .all(|c| c.effect.is_some() && c.action == requests[0].action)
    );

    // Message 3: "undo" reverts all three calls of message 2.
    r.model
        .push(Ok(calls(&[("tu_5", "undo_last_action", json!({}))])));
    r.model.push(Ok(reply("Undone.")));
    r.say("m3", "undo that").await;
    assert_eq!(note_titles(&r).await, ["Older"]);
    let result = &r.last_results()[0];
    assert!(!result.2, "{result:?}");

    // Message 4: the next undo reverts message 1, not a part of message 2.
    r.model
        .push(Ok(calls(&[("tu_6", "undo_last_action", json!({}))])));
    r.model.push(Ok(reply("Undone again.")));
    r.say("m4", "and that").await;
    assert!(note_titles(&r).await.is_empty());
}

// ---- the transcript holds what the person saw ---------------------------------------------

async fn fallbacks_and_trimmed_buttons_are_recorded_as_shown(r: Rig) {
    // Turn 1: nothing to say; the person gets the fallback line.
    r.model
        .push(Ok(CreateResponse::new(Vec::new(), StopReason::EndTurn)));
    assert_eq!(
        Rig::text(&r.say("m1", "ok thanks").await),
        EMPTY_REPLY_FALLBACK
    );
    // Turn 2: four buttons; the channel shows three.
    r.model
        .push(Ok(reply("Which one? <buttons>A | B | C | D</buttons>")));
    r.say("m2", "pick for me").await;
    // Turn 3: shown exactly as written, so nothing is added.
    r.model.push(Ok(reply("Fine. <buttons>Ok</buttons>")));
    r.say("m3", "C").await;
    r.model.push(Ok(reply("Bye.")));
    r.say("m4", "bye").await;

    assert_eq!(
        shown_rows(&r).await,
        [
            (
                1,
                "<shown_to_person>\nAll set.\n</shown_to_person>".to_owned()
            ),
            (
                2,
                "<shown_to_person>\nWhich one?\n<buttons>A | B | C</buttons>\n</shown_to_person>"
                    .to_owned()
            ),
        ]
    );
    assert_append_only(&r);
    // The model saw the note as the end of its own turn-1 message, before the next message.
    let last = r.model.requests().pop().unwrap();
    let after_first_user = &last.messages[1];
    assert_eq!(after_first_user.role, Role::Assistant);
    assert_eq!(
        text_of(&after_first_user.content),
        "<shown_to_person>\nAll set.\n</shown_to_person>"
    );
}

async fn a_failed_reaction_is_recorded_as_the_text_sent(r: Rig) {
    r.outbox
        .react_fails
        .store(true, std::sync::atomic::Ordering::SeqCst);
    r.model
        .push(Ok(calls(&[("tu_1", "react", json!({"emoji": "🎉"}))])));
    r.model.push(Ok(reply("<silent/>")));
    assert_eq!(
        Rig::text(&r.say("m1", "we sold out!").await),
        SILENT_FALLBACK
    );
    assert_eq!(
        shown_rows(&r).await,
        [(
            1,
            format!("<shown_to_person>\n{SILENT_FALLBACK}\n</shown_to_person>")
        )]
    );
    // A delivered reaction that answered alone leaves nothing to record.
    r.outbox
        .react_fails
        .store(false, std::sync::atomic::Ordering::SeqCst);
    r.model
        .push(Ok(calls(&[("tu_2", "react", json!({"emoji": "👍"}))])));
    r.model.push(Ok(reply("<silent/>")));
    r.say("m2", "thanks").await;
    assert_eq!(shown_rows(&r).await.len(), 1);
    r.model.push(Ok(reply("Anything else?")));
    r.say("m3", "hm").await;
    assert_append_only(&r);
}

async fn a_reply_cut_to_fit_the_channel_is_recorded_as_cut(r: Rig) {
    let long = "word ".repeat(6_000);
    r.model.push(Ok(reply(&long)));
    let sent = Rig::text(&r.say("m1", "tell me everything").await);
    assert!(sent.chars().count() < long.trim().chars().count());
    let shown = shown_rows(&r).await;
    assert_eq!(
        shown,
        [(1, format!("<shown_to_person>\n{sent}\n</shown_to_person>"))]
    );
    r.model.push(Ok(reply("Short now.")));
    r.say("m2", "shorter").await;
    assert_append_only(&r);
}

async fn a_guarded_reply_is_not_written_into_the_model_transcript(r: Rig) {
    steward_harness::accounts::pause(r.world.table.as_ref(), &r.user)
        .await
        .unwrap();
    r.say("m1", "hi").await;
    assert!(
        transcript::load_segment(r.world.table.as_ref(), &r.conv, 0)
            .await
            .unwrap()
            .is_empty(),
        "the model never saw this turn"
    );
}

async fn transcripts_audit_rows_and_usage_expire_after_the_retention(r: Rig) {
    use steward_harness::keys;
    use steward_harness::limits::RETENTION_DAYS;
    use steward_harness::retention::retained_until;
    use steward_store::{Clock, Query};
    r.model
        .push(Ok(calls(&[("tu_1", "add_note", json!({"title": "Kept"}))])));
    r.model.push(Ok(reply("Added.")));
    r.say("m1", "add a note").await;
    let now = r.world.clock.now_millis();
    let until = retained_until(now);
    assert_eq!(until - now / 1000, RETENTION_DAYS * 86_400);
    let table = r.world.table.as_ref();
    let conv = table
        .query_all(&Query::prefix(keys::conversation_pk(&r.conv), ""), 1_000)
        .await
        .unwrap();
    let retained: Vec<_> = conv
        .iter()
        .filter(|i| i.sk.starts_with("MODEL#") || i.sk.starts_with("SEEN#"))
        .collect();
    assert!(
        retained.len() >= 5,
        "user, tool call, results, reply rows; seen rows: {conv:?}"
    );
    for item in &retained {
        assert_eq!(item.ttl, Some(until), "{}", item.sk);
    }
    let mine = table
        .query_all(&Query::prefix(keys::user_pk(&r.user), ""), 1_000)
        .await
        .unwrap();
    let audit: Vec<_> = mine
        .iter()
        .filter(|i| {
            i.sk.starts_with(keys::ACTION_SK_PREFIX) || i.sk.starts_with(keys::AUDIT_SK_PREFIX)
        })
        .collect();
    assert!(
        audit.len() >= 2,
        "an action header and its audit row: {mine:?}"
    );
    let usage: Vec<_> = mine
        .iter()
        .filter(|i| i.sk.starts_with(keys::USAGE_SK_PREFIX))
        .collect();
    assert_eq!(usage.len(), 1);
    for item in audit.iter().chain(&usage) {
        assert_eq!(item.ttl, Some(until), "{}", item.sk);
    }
    // The note itself (the person's data) and the profile never expire.
    assert!(
        mine.iter()
            .filter(|i| !audit.contains(i) && !usage.contains(i))
            .all(|i| i.ttl.is_none()),
        "{mine:?}"
    );
    // Past the retention every one of them reads as gone, and undo finds nothing to revert.
    r.world
        .clock
        .advance_millis((RETENTION_DAYS * 86_400 + 1) * 1000);
    assert!(
        transcript::load_segment(table, &r.conv, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        audit::recent_requests(table, &r.user, 10)
            .await
            .unwrap()
            .is_empty(),
        "the audit trail expired with its rows"
    );
}

steward_store::backend_tests!(setup = rig;
    transcripts_audit_rows_and_usage_expire_after_the_retention,
    every_tool_call_of_a_message_is_one_request_and_undo_reverts_it_whole,
    fallbacks_and_trimmed_buttons_are_recorded_as_shown,
    a_failed_reaction_is_recorded_as_the_text_sent,
    a_reply_cut_to_fit_the_channel_is_recorded_as_cut,
    a_guarded_reply_is_not_written_into_the_model_transcript,
);

mod web_chat {
    use super::*;
    steward_store::backend_tests!(setup = web; a_reply_cut_to_fit_the_channel_is_recorded_as_cut);
}
