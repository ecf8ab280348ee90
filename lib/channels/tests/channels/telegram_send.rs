//! The Telegram sender against a fake Bot API on loopback.

use std::time::Duration;

use serde_json::{Value, json};
use steward_channels::telegram::CALLBACK_DATA_BYTES_MAX;
use steward_channels::{
    ChannelSender, Recipient, SendError, SendReceipt, TelegramConfig, TelegramSender,
};

use crate::fixture;
use steward_testkit::fake_api::{FakeApi, Recorded};

const TOKEN: &str = "7000000001:AAH-test-bot-token";

fn sender(base: &str) -> TelegramSender {
    let mut config = TelegramConfig::new(TOKEN);
    config.api_base = base.to_owned();
    TelegramSender::new(config, steward_channels::http_client().unwrap())
        .with_part_gap(Duration::ZERO)
}

fn ok(r: &Recorded, n: usize) -> (u16, Value) {
    let result = if r.path.ends_with("/sendMessage") {
        json!({"message_id": 2000 + n, "chat": {"id": 111222333, "type": "private"}, "date": 0, "text": r.body["text"]})
    } else {
        json!(true)
    };
    (200, json!({"ok": true, "result": result}))
}

fn chat() -> Recipient {
    Recipient::new("111222333", 0)
}

fn method(r: &Recorded) -> &str {
    r.path.rsplit('/').next().unwrap()
}

#[tokio::test]
async fn long_text_is_split_with_the_keyboard_on_the_last_chunk_only() {
    let api = FakeApi::start(ok).await;
    let text = format!(
        "{}\n\n{}",
        "first ".repeat(500).trim(),
        "second ".repeat(500).trim()
    );
    let receipt = sender(&api.base)
        .send_reply(&chat(), &text, &["Publish".into(), "Not yet".into()])
        .await
        .unwrap();
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, format!("/bot{TOKEN}/sendMessage"));
        assert_eq!(r.body["chat_id"], 111_222_333);
        assert!(r.body["text"].as_str().unwrap().chars().count() <= 4096);
    }
    assert!(
        requests[0].body["text"]
            .as_str()
            .unwrap()
            .starts_with("first")
    );
    assert!(requests[0].body.get("reply_markup").is_none());
    assert!(
        requests[1].body["text"]
            .as_str()
            .unwrap()
            .starts_with("second")
    );
    let keyboard = &requests[1].body["reply_markup"]["inline_keyboard"];
    assert_eq!(
        keyboard,
        &json!([
            [{"text": "Publish", "callback_data": "b0"}],
            [{"text": "Not yet", "callback_data": "b1"}],
        ])
    );
    for row in keyboard.as_array().unwrap() {
        for b in row.as_array().unwrap() {
            assert!(b["callback_data"].as_str().unwrap().len() <= CALLBACK_DATA_BYTES_MAX);
        }
    }
    assert_eq!(
        receipt,
        SendReceipt::Sent {
            message_ids: vec!["2000".into(), "2001".into()],
            buttons: vec![
                steward_channels::SentButton {
                    id: "b0".into(),
                    title: "Publish".into()
                },
                steward_channels::SentButton {
                    id: "b1".into(),
                    title: "Not yet".into()
                },
            ],
        }
    );
}

#[tokio::test]
async fn the_window_does_not_apply_to_telegram() {
    let api = FakeApi::start(ok).await;
    // last_inbound_at = 0: long ago.
    let receipt = sender(&api.base)
        .send_reply(&chat(), "Hi", &[])
        .await
        .unwrap();
    assert!(matches!(receipt, SendReceipt::Sent { .. }));
    assert_eq!(api.requests().len(), 1);
}

#[tokio::test]
async fn reaction_and_removal() {
    let api = FakeApi::start(ok).await;
    let s = sender(&api.base);
    s.react(&chat(), "1365", "👍").await.unwrap();
    s.react(&chat(), "1365", "").await.unwrap();
    let requests = api.requests();
    assert_eq!(method(&requests[0]), "setMessageReaction");
    assert_eq!(
        requests[0].body,
        json!({"chat_id": 111222333, "message_id": 1365, "reaction": [{"type": "emoji", "emoji": "👍"}]})
    );
    assert_eq!(requests[1].body["reaction"], json!([]));
    let err = s.react(&chat(), "not-a-number", "👍").await.unwrap_err();
    assert!(matches!(err, SendError::Invalid { .. }));
}

#[tokio::test]
async fn a_button_click_is_answered_and_typing_shown() {
    let api = FakeApi::start(ok).await;
    let click = steward_channels::telegram::parse_update(&fixture("telegram/callback_query.json"))
        .unwrap()
        .unwrap();
    sender(&api.base).start_turn(&click).await.unwrap();
    let requests = api.requests();
    let methods: Vec<&str> = requests.iter().map(method).collect();
    assert_eq!(methods, ["answerCallbackQuery", "sendChatAction"]);
    assert_eq!(
        requests[0].body,
        json!({"callback_query_id": "4382bfdwdsb323b2d9"})
    );
    assert_eq!(
        requests[1].body,
        json!({"chat_id": 111222333, "action": "typing"})
    );
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let api = FakeApi::start(|_, _| {
        (
            429,
            json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 3", "parameters": {"retry_after": 3}}),
        )
    })
    .await;
    let err = sender(&api.base)
        .send_reply(&chat(), "Hi", &[])
        .await
        .unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
    assert!(!format!("{err} {err:?}").contains(TOKEN));
}

#[tokio::test]
async fn api_errors_are_typed() {
    let api = FakeApi::start(|_, _| {
        (
            400,
            json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}),
        )
    })
    .await;
    let err = sender(&api.base).typing(&chat(), None).await.unwrap_err();
    assert!(!err.is_retryable());
    assert!(matches!(err, SendError::Api { code: 400, .. }));
    assert!(!format!("{err} {err:?}").contains(TOKEN));
}

#[tokio::test]
async fn transport_errors_never_show_the_token() {
    let err = sender("http://127.0.0.1:1")
        .send_reply(&chat(), "Hi", &[])
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Transport { .. }), "{err:?}");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(!shown.contains("AAH-test"), "{shown}");
}

#[tokio::test]
async fn the_reply_markup_goes_out_as_telegram_html() {
    let api = FakeApi::start(ok).await;
    let text = "*Saturday* at _10:00_ for R&D <team>\n- [Programme](https://ex.org/p?a=1&b=2)\n- https://ex.org";
    sender(&api.base)
        .send_reply(&chat(), text, &[])
        .await
        .unwrap();
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["parse_mode"], "HTML");
    assert_eq!(
        requests[0].body["text"],
        "<b>Saturday</b> at <i>10:00</i> for R&amp;D &lt;team&gt;\n\
         • <a href=\"https://ex.org/p?a=1&amp;b=2\">Programme</a>\n\
         • <a href=\"https://ex.org\">https://ex.org</a>"
    );
}

#[tokio::test]
async fn html_telegram_cannot_parse_is_sent_again_as_plain_text() {
    // The fake refuses every formatted message the way Telegram does, and accepts plain ones.
    let api = FakeApi::start(|r: &Recorded, n| {
        if r.body.get("parse_mode").is_some() {
            (
                400,
                json!({"ok": false, "error_code": 400,
                       "description": "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\""}),
            )
        } else {
            ok(r, n)
        }
    })
    .await;
    let text = format!(
        "*Part one* {}\n\n_Part two_ {}",
        "alpha ".repeat(600).trim(),
        "beta ".repeat(700).trim()
    );
    let receipt = sender(&api.base)
        .send_reply(&chat(), &text, &["Publish".into()])
        .await
        .unwrap();
    let requests = api.requests();
    // Each part: the formatted try, then its plain resend; the keyboard stays on the last.
    assert_eq!(requests.len(), 4, "{requests:?}");
    let plain: Vec<&Recorded> = requests
        .iter()
        .filter(|r| r.body.get("parse_mode").is_none())
        .collect();
    assert_eq!(plain.len(), 2);
    assert!(
        plain[0].body["text"]
            .as_str()
            .unwrap()
            .starts_with("Part one alpha")
    );
    assert!(
        plain[1].body["text"]
            .as_str()
            .unwrap()
            .starts_with("Part two beta")
    );
    assert!(plain[0].body.get("reply_markup").is_none());
    assert!(plain[1].body.get("reply_markup").is_some());
    assert!(matches!(receipt, SendReceipt::Sent { ref message_ids, .. } if message_ids.len() == 2));
}

#[tokio::test]
async fn other_refusals_are_not_resent_as_plain_text() {
    let api = FakeApi::start(|_, _| {
        (
            400,
            json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}),
        )
    })
    .await;
    let err = sender(&api.base)
        .send_reply(&chat(), "*hi*", &[])
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Api { code: 400, .. }));
    assert_eq!(api.requests().len(), 1);
}
