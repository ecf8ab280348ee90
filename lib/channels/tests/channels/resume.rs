//! A multi-part reply retried after a failure resumes at the first part not delivered: the
//! senders consult and fill a [`PartLedger`], on both channels, against a fake API on loopback.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_channels::{
    ChannelSender, PartLedger, Recipient, SendError, SendReceipt, TelegramConfig, TelegramSender,
    WhatsappConfig, WhatsappSender,
};

use steward_testkit::fake_api::{FakeApi, Recorded};

/// The ledger a turn keeps in the table, in memory.
#[derive(Default)]
struct MemoryLedger {
    parts: Mutex<BTreeMap<usize, String>>,
    fail_record: Option<usize>,
}

#[async_trait]
impl PartLedger for MemoryLedger {
    async fn delivered(&self, part: usize) -> Result<Option<String>, String> {
        Ok(self.parts.lock().unwrap().get(&part).cloned())
    }

    async fn record(&self, part: usize, message_id: &str) -> Result<(), String> {
        if self.fail_record == Some(part) {
            return Err("table unavailable".into());
        }
        self.parts
            .lock()
            .unwrap()
            .insert(part, message_id.to_owned());
        Ok(())
    }
}

/// Four paragraphs, each nearly a whole message: four parts on either channel.
fn four_part_text() -> String {
    (1..=4)
        .map(|i| format!("part{i} {}", "word ".repeat(780).trim()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn part_number(text: &str) -> String {
    text.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Telegram's fake: sendMessage number `fail_at` (from 0, across the test) answers 502 once.
fn telegram(fail_at: usize) -> impl Fn(&Recorded, usize) -> (u16, Value) {
    move |r, n| {
        if n == fail_at {
            return (
                502,
                json!({"ok": false, "error_code": 502, "description": "Bad Gateway"}),
            );
        }
        let result = json!({"message_id": 5000 + n, "chat": {"id": 1, "type": "private"}, "date": 0, "text": r.body["text"]});
        (200, json!({"ok": true, "result": result}))
    }
}

fn telegram_sender(base: &str, gap: Duration) -> TelegramSender {
    let mut config = TelegramConfig::new("7000000001:AAH-test");
    config.api_base = base.to_owned();
    TelegramSender::new(config, steward_channels::http_client().unwrap()).with_part_gap(gap)
}

fn whatsapp(fail_at: usize) -> impl Fn(&Recorded, usize) -> (u16, Value) {
    move |_, n| {
        if n == fail_at {
            return (
                500,
                json!({"error": {"message": "Service temporarily unavailable", "type": "OAuthException", "code": 2}}),
            );
        }
        (
            200,
            json!({"messaging_product": "whatsapp", "messages": [{"id": format!("wamid.OUT{n}")}]}),
        )
    }
}

fn whatsapp_sender(base: &str) -> WhatsappSender {
    let mut config = WhatsappConfig::new("106540352242922", "EAAG-test");
    config.api_base = format!("{base}/v26.0");
    WhatsappSender::new(config, steward_channels::http_client().unwrap())
        .with_part_gap(Duration::ZERO)
}

fn sent_texts(api: &FakeApi, field: &str) -> Vec<String> {
    api.requests()
        .iter()
        .map(|r| {
            let text = r
                .body
                .pointer(field)
                .and_then(Value::as_str)
                .unwrap_or_default();
            part_number(text)
        })
        .collect()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn telegram_fails_on_part_3_then_the_retry_sends_parts_3_and_4_only() {
    // Requests 0 and 1 deliver parts 1 and 2; request 2 (part 3) fails.
    let api = FakeApi::start(telegram(2)).await;
    let sender = telegram_sender(&api.base, Duration::ZERO);
    let ledger = MemoryLedger::default();
    let to = Recipient::new("111222333", now());
    let text = four_part_text();
    let buttons = vec!["Publish".to_owned()];

    let err = sender
        .send_reply_resuming(&to, &text, &buttons, &ledger)
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert_eq!(sent_texts(&api, "/text"), ["part1", "part2", "part3"]);
    assert_eq!(
        ledger.parts.lock().unwrap().len(),
        2,
        "parts 1 and 2 recorded"
    );

    let receipt = sender
        .send_reply_resuming(&to, &text, &buttons, &ledger)
        .await
        .unwrap();
    let requests = api.requests();
    assert_eq!(
        sent_texts(&api, "/text"),
        ["part1", "part2", "part3", "part3", "part4"],
        "the retry starts at part 3"
    );
    assert!(
        requests[4].body.get("reply_markup").is_some(),
        "buttons on the last part"
    );
    let SendReceipt::Sent { message_ids, .. } = receipt else {
        panic!("sent");
    };
    assert_eq!(
        message_ids,
        ["5000", "5001", "5003", "5004"],
        "earlier ids from the ledger"
    );

    // A third send of the same reply sends nothing at all.
    sender
        .send_reply_resuming(&to, &text, &buttons, &ledger)
        .await
        .unwrap();
    assert_eq!(api.requests().len(), 5);
}

#[tokio::test]
async fn whatsapp_fails_on_part_3_then_the_retry_sends_parts_3_and_4_only() {
    let api = FakeApi::start(whatsapp(2)).await;
    let sender = whatsapp_sender(&api.base);
    let ledger = MemoryLedger::default();
    let to = Recipient::new("16505551234", now());
    let text = four_part_text();

    let err = sender
        .send_reply_resuming(&to, &text, &[], &ledger)
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Api { status: 500, .. }), "{err}");
    let receipt = sender
        .send_reply_resuming(&to, &text, &[], &ledger)
        .await
        .unwrap();
    assert_eq!(
        sent_texts(&api, "/text/body"),
        ["part1", "part2", "part3", "part3", "part4"]
    );
    let SendReceipt::Sent { message_ids, .. } = receipt else {
        panic!("sent");
    };
    assert_eq!(
        message_ids,
        ["wamid.OUT0", "wamid.OUT1", "wamid.OUT3", "wamid.OUT4"]
    );
}

#[tokio::test]
async fn a_part_that_cannot_be_recorded_fails_the_send_retryably_before_the_next_part() {
    let api = FakeApi::start(telegram(usize::MAX)).await;
    let sender = telegram_sender(&api.base, Duration::ZERO);
    let ledger = MemoryLedger {
        fail_record: Some(1),
        ..MemoryLedger::default()
    };
    let to = Recipient::new("111222333", now());
    let err = sender
        .send_reply_resuming(&to, &four_part_text(), &[], &ledger)
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Ledger { part: 1, .. }), "{err}");
    assert!(err.is_retryable());
    assert_eq!(
        sent_texts(&api, "/text"),
        ["part1", "part2"],
        "part 3 waits for the record"
    );
}

#[tokio::test]
async fn parts_sent_in_one_attempt_are_paced() {
    let gap = Duration::from_millis(150);
    let api = FakeApi::start(telegram(usize::MAX)).await;
    let sender = telegram_sender(&api.base, gap);
    let to = Recipient::new("111222333", now());
    let started = Instant::now();
    sender
        .send_reply_resuming(&to, &four_part_text(), &[], &MemoryLedger::default())
        .await
        .unwrap();
    assert_eq!(api.requests().len(), 4);
    assert!(
        started.elapsed() >= gap * 3,
        "three pauses between four parts"
    );
}
