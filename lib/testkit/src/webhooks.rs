//! Provider webhook payloads as the providers send them, and the test secrets that sign them:
//! the webhook routes' tests and the one-process spine build their requests here.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The WhatsApp app secret the tests' webhook state holds.
pub const APP_SECRET: &str = "test-app-secret";
/// The WhatsApp verify token the tests' webhook state holds.
pub const VERIFY_TOKEN: &str = "test-verify-token";
/// The Telegram webhook secret the tests' webhook state holds.
pub const TG_SECRET: &str = "test-telegram-secret";

/// Now, in whole seconds since the epoch (the providers' message timestamps).
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A WhatsApp notification with one text message `id` from `from`, sent now.
pub fn wa_text(from: &str, id: &str, text: &str) -> Vec<u8> {
    wa_message(
        from,
        json!({ "from": from, "id": id, "timestamp": now_secs().to_string(), "type": "text",
                "text": { "body": text } }),
    )
}

/// A WhatsApp notification with a click on reply button `button` ("b0"…) titled `title`.
pub fn wa_button(from: &str, id: &str, button: &str, title: &str) -> Vec<u8> {
    wa_message(
        from,
        json!({ "from": from, "id": id, "timestamp": now_secs().to_string(), "type": "interactive",
                "context": { "from": "15550783881", "id": "wamid.out.0" },
                "interactive": { "type": "button_reply", "button_reply": { "id": button, "title": title } } }),
    )
}

/// A WhatsApp notification carrying `message` from `from`.
pub fn wa_message(from: &str, message: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "object": "whatsapp_business_account",
        "entry": [{
            "id": "102290129340398",
            "changes": [{
                "field": "messages",
                "value": {
                    "messaging_product": "whatsapp",
                    "metadata": { "display_phone_number": "15550783881", "phone_number_id": "PHONE_ID" },
                    "contacts": [{ "profile": { "name": "Ada" }, "wa_id": from }],
                    "messages": [message]
                }
            }]
        }]
    }))
    .expect("a JSON value serializes")
}

/// A Telegram update `update_id` with a private text message from user `from`.
pub fn tg_text(update_id: i64, from: i64, text: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "update_id": update_id,
        "message": {
            "message_id": update_id % 100_000,
            "from": { "id": from, "is_bot": false, "first_name": "Ada" },
            "chat": { "id": from, "first_name": "Ada", "type": "private" },
            "date": now_secs(),
            "text": text
        }
    }))
    .expect("a JSON value serializes")
}
