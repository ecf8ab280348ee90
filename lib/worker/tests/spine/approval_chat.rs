//! A held MCP call announced in the linked Telegram chat, end to end: the worker sends the
//! queued notice through the real Telegram sender as a message with an inline keyboard, and the
//! person's button press comes back through the webhook, the queue and the conversation layer,
//! approving that request without the model; the same update delivered twice approves once.

use serde_json::json;
use steward_harness::TokenId;
use steward_harness::approval_chat::ApprovalNotice;
use steward_harness::gate::{self, ConfirmState, GateDecision, Surface};
use steward_store::{Clock, Query};

use crate::support::{Stack, now_secs, wait_until};

const ADA_TG: i64 = 444_555_666;

fn press(update_id: i64, message_id: i64, data: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "update_id": update_id,
        "callback_query": {
            "id": format!("cb{update_id}"),
            "from": { "id": ADA_TG, "is_bot": false, "first_name": "Ada" },
            "message": {
                "message_id": message_id,
                "chat": { "id": ADA_TG, "first_name": "Ada", "type": "private" },
                "date": now_secs(),
                "text": "Your MCP client wants to …",
                "reply_markup": { "inline_keyboard": [
                    [{ "text": "Approve", "callback_data": "b0" }],
                    [{ "text": "Decline", "callback_data": "b1" }]
                ]}
            },
            "data": data,
            "chat_instance": "1"
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_mcp_call_is_approved_with_the_button_in_the_linked_telegram_chat() {
    let s = Stack::start().await;
    s.bind("tg", &ADA_TG.to_string()).await;
    let surface = Surface::Mcp {
        token: Some(TokenId::parse(&"d".repeat(64)).unwrap()),
        client: "Claude desktop".into(),
    };
    let decision = gate::check(
        s.table.as_ref(),
        &s.user,
        &surface,
        s.clock.now_millis(),
        "cancel_event",
        &json!({"event_id": "e_1"}),
        Some("Cancel \"Summer Meetup\", Sat 14 Nov 2026".into()),
    )
    .await
    .unwrap();
    let GateDecision::Held { confirmation, .. } = decision else {
        panic!("held");
    };

    // The worker delivers the queued notice (twice: the second is a no-op).
    let body = ApprovalNotice::for_request(&confirmation).to_body();
    assert!(s.worker.handle_body(&body).await.unwrap().is_none());
    assert!(s.worker.handle_body(&body).await.unwrap().is_none());
    let sent = s.tg.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    // The notice's markup goes out in Telegram's HTML parse mode.
    assert_eq!(
        sent[0]["text"],
        "Your MCP client <b>Claude desktop</b> wants to cancel \"Summer Meetup\", Sat 14 Nov 2026. Allow it? If you approve within the hour, its next identical call runs once."
    );
    assert_eq!(sent[0]["parse_mode"], "HTML");
    assert_eq!(
        sent[0]["reply_markup"]["inline_keyboard"],
        json!([[{ "text": "Approve", "callback_data": "b0" }],
               [{ "text": "Decline", "callback_data": "b1" }]])
    );
    let recorded = s
        .table
        .query_all(
            &Query::prefix(format!("CONV#tg:{ADA_TG}"), "APPROVALMSG#"),
            10,
        )
        .await
        .unwrap();
    assert_eq!(recorded.len(), 1);
    let message_id: i64 = recorded[0]
        .sk
        .trim_start_matches("APPROVALMSG#")
        .parse()
        .unwrap();

    // The person presses Approve; the same update arrives twice.
    let update = press(8101, message_id, "b0");
    assert_eq!(s.post_telegram(&update).await, 200);
    assert_eq!(s.post_telegram(&update).await, 200);
    wait_until("the answer", || async { s.tg.sent().len() == 2 }).await;
    s.settle().await;
    let sent = s.tg.sent();
    assert_eq!(sent.len(), 2, "answered once: {sent:?}");
    let answer = sent[1]["text"].as_str().unwrap();
    assert!(
        answer.starts_with("Approved: Cancel \"Summer Meetup\""),
        "{answer}"
    );
    assert_eq!(s.model.calls(), 0, "the model never saw the press");
    let request = gate::get_request(
        s.table.as_ref(),
        &s.user,
        &confirmation.id,
        s.clock.now_millis(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(request.state, ConfirmState::Approved);
}
