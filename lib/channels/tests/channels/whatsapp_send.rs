//! The WhatsApp sender against a fake Cloud API on loopback.

use serde_json::{Value, json};
use steward_channels::whatsapp::SERVICE_WINDOW_SECS;
use steward_channels::{
    ChannelSender, Recipient, SendError, SendReceipt, WhatsappConfig, WhatsappSender,
};

use steward_testkit::fake_api::FakeApi;

const TOKEN: &str = "EAAG-test-access-token";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn sender(base: &str) -> WhatsappSender {
    let mut config = WhatsappConfig::new("106540352242922", TOKEN);
    config.api_base = format!("{base}/v26.0");
    WhatsappSender::new(config, steward_channels::http_client().unwrap())
        .with_part_gap(std::time::Duration::ZERO)
}

/// Answers every request like the Cloud API does on success, with ids wamid.OUT<n>.
fn ok(_: &steward_testkit::fake_api::Recorded, n: usize) -> (u16, Value) {
    (
        200,
        json!({
            "messaging_product": "whatsapp",
            "contacts": [{"input": "16505551234", "wa_id": "16505551234"}],
            "messages": [{"id": format!("wamid.OUT{n}")}]
        }),
    )
}

fn user() -> Recipient {
    Recipient::new("16505551234", now() - 60)
}

#[tokio::test]
async fn long_text_is_split_in_order_with_buttons_on_the_last_chunk_only() {
    let api = FakeApi::start(ok).await;
    let paragraphs: Vec<String> = (0..3)
        .map(|i| format!("Part {i}. {}", "word ".repeat(600).trim()))
        .collect();
    let text = paragraphs.join("\n\n");
    let buttons = ["Publish".to_owned(), "Not yet".to_owned()];
    let receipt = sender(&api.base)
        .send_reply(&user(), &text, &buttons)
        .await
        .unwrap();

    let requests = api.requests();
    assert!(requests.len() >= 3, "{requests:?}");
    for r in &requests {
        assert_eq!(r.path, "/v26.0/106540352242922/messages");
        assert_eq!(
            r.authorization.as_deref(),
            Some("Bearer EAAG-test-access-token")
        );
        assert_eq!(r.body["messaging_product"], "whatsapp");
        assert_eq!(r.body["to"], "16505551234");
    }
    let (last, before) = requests.split_last().unwrap();
    for r in before {
        assert_eq!(r.body["type"], "text");
        assert!(r.body["text"]["body"].as_str().unwrap().chars().count() <= 4096);
    }
    assert_eq!(last.body["type"], "interactive");
    assert_eq!(last.body["interactive"]["type"], "button");
    let body = last.body["interactive"]["body"]["text"].as_str().unwrap();
    assert!(body.chars().count() <= 1024);
    assert_eq!(
        last.body["interactive"]["action"]["buttons"],
        json!([
            {"type": "reply", "reply": {"id": "b0", "title": "Publish"}},
            {"type": "reply", "reply": {"id": "b1", "title": "Not yet"}},
        ])
    );
    // Every word arrives, in order.
    let mut sent: Vec<&str> = before
        .iter()
        .map(|r| r.body["text"]["body"].as_str().unwrap())
        .collect();
    sent.push(body);
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(squash(&sent.join(" ")), squash(&text));
    assert!(sent[0].starts_with("Part 0."));

    let SendReceipt::Sent {
        message_ids,
        buttons,
    } = receipt
    else {
        panic!("not sent: {receipt:?}");
    };
    assert_eq!(message_ids.len(), requests.len());
    assert_eq!(
        message_ids.last().map(String::as_str),
        Some(format!("wamid.OUT{}", requests.len() - 1).as_str())
    );
    assert_eq!(buttons.len(), 2);
    assert_eq!(
        (buttons[1].id.as_str(), buttons[1].title.as_str()),
        ("b1", "Not yet")
    );
}

#[tokio::test]
async fn short_text_without_buttons_is_one_text_message() {
    let api = FakeApi::start(ok).await;
    sender(&api.base)
        .send_reply(&user(), "All set.", &[])
        .await
        .unwrap();
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["type"], "text");
    assert_eq!(requests[0].body["text"]["body"], "All set.");
}

#[tokio::test]
async fn buttons_are_limited_before_sending() {
    let api = FakeApi::start(ok).await;
    let titles: Vec<String> = [
        "One",
        "One",
        "Two",
        "A title far longer than twenty",
        "Four",
    ]
    .map(String::from)
    .to_vec();
    sender(&api.base)
        .send_reply(&user(), "Pick one", &titles)
        .await
        .unwrap();
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    let buttons = requests[0].body["interactive"]["action"]["buttons"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(buttons.len(), 3);
    let titles: Vec<&str> = buttons
        .iter()
        .map(|b| b["reply"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["One", "Two", "A title far longer t"]);
    assert!(titles.iter().all(|t| t.chars().count() <= 20));
}

#[tokio::test]
async fn business_scoped_recipient() {
    let api = FakeApi::start(ok).await;
    let to = Recipient::new("US.13491208655302741918", now());
    sender(&api.base).send_reply(&to, "Hi", &[]).await.unwrap();
    let body = &api.requests()[0].body;
    assert_eq!(body["recipient"], "US.13491208655302741918");
    assert!(body.get("to").is_none());
}

#[tokio::test]
async fn reaction_and_removal() {
    let api = FakeApi::start(ok).await;
    let s = sender(&api.base);
    s.react(&user(), "wamid.IN1", "👍").await.unwrap();
    s.react(&user(), "wamid.IN1", "").await.unwrap();
    let requests = api.requests();
    assert_eq!(requests[0].body["type"], "reaction");
    assert_eq!(
        requests[0].body["reaction"],
        json!({"message_id": "wamid.IN1", "emoji": "👍"})
    );
    assert_eq!(requests[1].body["reaction"]["emoji"], "");
}

#[tokio::test]
async fn mark_as_read_with_typing_indicator() {
    let api = FakeApi::start(|_, _| (200, json!({"success": true}))).await;
    let s = sender(&api.base);
    s.typing(&user(), Some("wamid.IN1")).await.unwrap();
    s.typing(&user(), None).await.unwrap(); // nothing to mark: no request
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].body,
        json!({
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": "wamid.IN1",
            "typing_indicator": {"type": "text"}
        })
    );
}

#[tokio::test]
async fn outside_the_24_hour_window_nothing_is_attempted() {
    let api = FakeApi::start(ok).await;
    let last = now() - SERVICE_WINDOW_SECS - 60;
    let receipt = sender(&api.base)
        .send_reply(
            &Recipient::new("16505551234", last),
            "Hello again",
            &["Yes".into()],
        )
        .await
        .unwrap();
    assert_eq!(
        receipt,
        SendReceipt::OutsideWindow {
            last_inbound_at: last
        }
    );
    assert!(api.requests().is_empty());
}

#[tokio::test]
async fn provider_window_refusal_is_an_outside_window_outcome() {
    let api = FakeApi::start(|_, _| {
        (
            400,
            json!({"error": {"message": "Re-engagement message", "type": "OAuthException", "code": 131047}}),
        )
    })
    .await;
    let receipt = sender(&api.base)
        .send_reply(&user(), "Hello", &[])
        .await
        .unwrap();
    assert!(matches!(receipt, SendReceipt::OutsideWindow { .. }));
}

#[tokio::test]
async fn rate_limit_is_retryable_and_other_errors_are_typed() {
    let api = FakeApi::start(|_, _| {
        (
            400,
            json!({"error": {"message": "(#131056) Pair rate limit hit", "type": "OAuthException", "code": 131056, "fbtrace_id": "x"}}),
        )
    })
    .await;
    let err = sender(&api.base)
        .send_reply(&user(), "Hello", &[])
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(matches!(err, SendError::RateLimited { code: 131056, .. }));

    let api = FakeApi::start(|_, _| {
        (
            400,
            json!({"error": {"message": "Invalid parameter", "type": "OAuthException", "code": 100}}),
        )
    })
    .await;
    let err = sender(&api.base)
        .send_reply(&user(), "Hello", &[])
        .await
        .unwrap_err();
    assert!(!err.is_retryable());
    match err {
        SendError::Api {
            code,
            status,
            message,
            ..
        } => {
            assert_eq!(
                (code, status, message.as_str()),
                (100, 400, "Invalid parameter")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_failure_stops_the_remaining_chunks() {
    let api = FakeApi::start(|r, n| {
        if n == 1 {
            (500, json!({"error": {"message": "oops", "code": 1}}))
        } else {
            ok(r, n)
        }
    })
    .await;
    let text = format!(
        "{}\n\n{}\n\n{}",
        "a ".repeat(3000),
        "b ".repeat(3000),
        "c ".repeat(3000)
    );
    let err = sender(&api.base)
        .send_reply(&user(), &text, &[])
        .await
        .unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(api.requests().len(), 2);
}

#[tokio::test]
async fn transport_errors_never_show_the_token() {
    // Nothing listens on port 1.
    let err = sender("http://127.0.0.1:1")
        .send_reply(&user(), "Hello", &[])
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Transport { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert!(!format!("{err} {err:?}").contains(TOKEN));
}

#[tokio::test]
async fn the_reply_markup_goes_out_as_whatsapp_markup_with_previews_for_lone_links() {
    let api = FakeApi::start(ok).await;
    let s = sender(&api.base);
    s.send_reply(
        &user(),
        "**Saturday** at _10:00_\n• [Programme](https://ex.org/p)\nhttps://ex.org/e/spring",
        &[],
    )
    .await
    .unwrap();
    s.send_reply(&user(), "See https://ex.org inline.", &[])
        .await
        .unwrap();
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body["text"],
        json!({
            "body": "*Saturday* at _10:00_\n- Programme (https://ex.org/p)\nhttps://ex.org/e/spring",
            "preview_url": true
        })
    );
    assert_eq!(requests[1].body["text"]["preview_url"], false);
}
