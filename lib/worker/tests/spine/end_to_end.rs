//! End to end in one process: webhook → in-process queue → conversation layer and turn →
//! fake provider API.

use std::sync::atomic::Ordering;

use serde_json::Value;
use steward_harness::{ChannelIdentity, identity, linking};

use crate::support::{
    PUBLIC_URL, Stack, long_text, squash, tg_text, wa_button, wa_text, wait_until,
};
use steward_testkit::fake_api::text_of;

const ADA_WA: &str = "16505550001";
const ADA_TG: i64 = 111_222_333;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_webhook_twice_and_after_the_queue_window_is_one_turn_and_one_reply() {
    let s = Stack::start().await;
    s.bind("wa", ADA_WA).await;
    s.reply("Hello Ada!");
    let body = wa_text(ADA_WA, "wamid.dup1", "hi");
    assert_eq!(s.post_whatsapp(&body).await, 200);
    assert_eq!(s.post_whatsapp(&body).await, 200);
    wait_until("the reply", || async { s.wa.sent().len() == 1 }).await;
    s.settle().await;
    // Past SQS FIFO's five-minute dedupe window the queue accepts it again; the
    // conversation's INBOX claim (8 days) drops it.
    s.clock.advance_millis(6 * 60 * 1000);
    assert_eq!(s.post_whatsapp(&body).await, 200);
    s.settle().await;
    assert_eq!(s.wa.sent_texts(), ["Hello Ada!"]);
    assert_eq!(s.model.calls(), 1);
    // The queue dropped the second post (inside its window) and delivered the third, which
    // the conversation's claim then dropped.
    assert_eq!(s.handled.load(Ordering::SeqCst), 2);
    // The user's message was marked read with the typing indicator.
    assert!(s.wa.requests().iter().any(|r| {
        r.body.get("status").and_then(Value::as_str) == Some("read")
            && r.body.get("message_id").and_then(Value::as_str) == Some("wamid.dup1")
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_quick_messages_are_processed_in_order_and_never_interleaved() {
    let s = Stack::start().await;
    s.bind("tg", &ADA_TG.to_string()).await;
    let first = long_text(2, 4000);
    s.reply(&first);
    s.reply("second answer");
    assert_eq!(
        s.post_telegram(&tg_text(5001, ADA_TG, "first question"))
            .await,
        200
    );
    assert_eq!(
        s.post_telegram(&tg_text(5002, ADA_TG, "second question"))
            .await,
        200
    );
    wait_until("three messages", || async { s.tg.sent().len() == 3 }).await;
    s.settle().await;
    let texts = s.tg.sent_texts();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(squash(&texts[..2].concat()), squash(&first));
    assert_eq!(texts[2], "second answer");
    assert_eq!(
        s.slow.max_active.load(Ordering::SeqCst),
        1,
        "turns overlapped"
    );
    // The second turn saw the first one whole.
    let second = s.model.requests()[1].clone();
    let history = serde_json::to_string(&second.messages).unwrap();
    let at = |needle: &str| history.find(needle).unwrap_or(usize::MAX);
    assert!(at("first question") < at("p1w") && at("p1w") < at("second question"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_sender_gets_the_onboarding_steps_and_the_model_is_never_called() {
    let s = Stack::start().await;
    assert_eq!(
        s.post_whatsapp(&wa_text("447700900123", "wamid.s1", "hello?"))
            .await,
        200
    );
    wait_until("the reply", || async { s.wa.sent().len() == 1 }).await;
    s.settle().await;
    let text = &s.wa.sent_texts()[0];
    assert!(
        text.contains(&format!("1. Sign up (or sign in) at {PUBLIC_URL}/app")),
        "{text}"
    );
    assert!(text.contains("\n2. ") && text.contains("\n3. "), "{text}");
    assert_eq!(s.model.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linking_code_binds_the_sender_and_welcomes_them() {
    let s = Stack::start().await;
    let code = linking::issue_code(s.table.as_ref(), &s.clock, &s.user)
        .await
        .unwrap()
        .code;
    let body = tg_text(6001, 42_4242, &format!("hey, my code is {code}"));
    assert_eq!(s.post_telegram(&body).await, 200);
    wait_until("the welcome", || async { s.tg.sent().len() == 1 }).await;
    s.settle().await;
    assert!(s.tg.sent_texts()[0].starts_with("Linked!"));
    let identity = ChannelIdentity::parse("tg", "424242").unwrap();
    assert_eq!(
        identity::lookup(s.table.as_ref(), &identity).await.unwrap(),
        Some(s.user.clone())
    );
    assert_eq!(s.model.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buttons_become_an_interactive_message_and_a_click_comes_back_as_its_title() {
    let s = Stack::start().await;
    s.bind("wa", ADA_WA).await;
    s.reply("Publish the page now? <buttons>Publish | Not yet</buttons>");
    s.reply("OK, later then.");
    assert_eq!(
        s.post_whatsapp(&wa_text(ADA_WA, "wamid.b1", "done?")).await,
        200
    );
    wait_until("the question", || async { s.wa.sent().len() == 1 }).await;
    let sent = s.wa.sent();
    assert_eq!(sent[0]["type"], "interactive");
    assert_eq!(text_of(&sent[0]), "Publish the page now?");
    let titles: Vec<&str> = sent[0]["interactive"]["action"]["buttons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["reply"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Publish", "Not yet"]);

    assert_eq!(
        s.post_whatsapp(&wa_button(ADA_WA, "wamid.b2", "b1", "Not yet"))
            .await,
        200
    );
    wait_until("the answer", || async { s.wa.sent().len() == 2 }).await;
    s.settle().await;
    assert!(
        s.user_text_of_request(1)
            .contains("<user_message>\\nNot yet\\n</user_message>")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buttons_become_an_inline_keyboard_on_telegram() {
    let s = Stack::start().await;
    s.bind("tg", &ADA_TG.to_string()).await;
    s.reply("Publish? <buttons>Publish | Not yet</buttons>");
    assert_eq!(s.post_telegram(&tg_text(7001, ADA_TG, "ready")).await, 200);
    wait_until("the question", || async { s.tg.sent().len() == 1 }).await;
    let sent = &s.tg.sent()[0];
    assert_eq!(sent["text"], "Publish?");
    assert_eq!(
        sent["reply_markup"]["inline_keyboard"],
        serde_json::json!([[{ "text": "Publish", "callback_data": "b0" }],
                           [{ "text": "Not yet", "callback_data": "b1" }]])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_is_split_in_order_with_buttons_on_the_last_chunk_only() {
    let s = Stack::start().await;
    s.bind("wa", ADA_WA).await;
    s.bind("tg", &ADA_TG.to_string()).await;
    let text = long_text(3, 3000);
    s.reply(&format!("{text}\n<buttons>Yes | No</buttons>"));
    s.reply(&format!("{text}\n<buttons>Yes | No</buttons>"));
    assert_eq!(
        s.post_whatsapp(&wa_text(ADA_WA, "wamid.l1", "plan it"))
            .await,
        200
    );
    assert_eq!(
        s.post_telegram(&tg_text(8001, ADA_TG, "plan it")).await,
        200
    );
    wait_until("both replies", || async {
        s.wa.sent().len() >= 3 && s.tg.sent().len() >= 3
    })
    .await;
    s.settle().await;

    let wa = s.wa.sent();
    let (last, rest) = wa.split_last().unwrap();
    assert!(rest.iter().all(|m| m["type"] == "text"), "{wa:?}");
    assert_eq!(last["type"], "interactive");
    assert_eq!(squash(&s.wa.sent_texts().concat()), squash(&text));

    let tg = s.tg.sent();
    let (last, rest) = tg.split_last().unwrap();
    assert!(
        rest.iter().all(|m| m.get("reply_markup").is_none()),
        "{tg:?}"
    );
    assert!(last.get("reply_markup").is_some());
    assert!(tg.iter().all(|m| text_of(m).chars().count() <= 4096));
    assert_eq!(squash(&s.tg.sent_texts().concat()), squash(&text));
}
