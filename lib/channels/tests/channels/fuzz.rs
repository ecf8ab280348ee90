//! Nothing from outside can panic the parsers or the verifiers: arbitrary bytes, arbitrary
//! header strings, and arbitrary JSON dropped into the places real payloads have structure.

use proptest::prelude::*;
use serde_json::{Value, json};
use steward_channels::telegram::{check_webhook_secret, parse_update, verify_secret};
use steward_channels::whatsapp::{parse_webhook, verify_handshake, verify_signature};

/// Keys and strings that real payloads use, so generated JSON reaches the deep paths.
const WORDS: &[&str] = &[
    "from",
    "from_user_id",
    "id",
    "type",
    "timestamp",
    "text",
    "body",
    "interactive",
    "button_reply",
    "list_reply",
    "button",
    "payload",
    "title",
    "image",
    "document",
    "mime_type",
    "caption",
    "contacts",
    "wa_id",
    "user_id",
    "profile",
    "name",
    "context",
    "group_id",
    "message_id",
    "chat",
    "date",
    "photo",
    "file_id",
    "width",
    "height",
    "data",
    "message",
    "reply_markup",
    "inline_keyboard",
    "callback_data",
    "is_bot",
    "first_name",
    "last_name",
    "reaction",
    "unsupported",
    "system",
    "sticker",
    "location",
    "audio",
    "voice",
    "video",
    "private",
    "group",
    "supergroup",
    "channel",
    "1749416383",
    "16505551234",
    "US.1",
    "b0",
    "",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(WORDS).prop_map(str::to_owned),
        ".{0,12}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        word().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            proptest::collection::btree_map(word(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn whatsapp_parser_never_panics_on_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_webhook(&body);
    }

    #[test]
    fn telegram_parser_never_panics_on_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_update(&body);
    }

    #[test]
    fn whatsapp_parser_never_panics_on_odd_shapes(message in json_value(), contact in json_value(), value in json_value()) {
        let body = json!({
            "object": "whatsapp_business_account",
            "entry": [
                {"changes": [{"field": "messages", "value": {"contacts": [contact], "messages": [message.clone()]}}]},
                {"changes": [{"field": "messages", "value": value}]},
                {"changes": [{"value": {"messages": [{"id": "m", "type": "text", "timestamp": "1", "from": "1", "text": message}]}}]},
            ]
        });
        let parsed = parse_webhook(body.to_string().as_bytes());
        prop_assert!(parsed.is_ok());
        for m in parsed.unwrap_or_default() {
            prop_assert!(steward_channels::is_valid_id(&m.conversation_id));
            prop_assert!(steward_channels::is_valid_id(&m.provider_message_id));
        }
    }

    #[test]
    fn telegram_parser_never_panics_on_odd_shapes(message in json_value(), query in json_value(), id in any::<i64>()) {
        for body in [
            json!({"update_id": id, "message": message}),
            json!({"update_id": id, "callback_query": query}),
            json!({"update_id": id, "callback_query": {"id": "q", "from": {"id": 1}, "data": "b0", "message": message}}),
            json!({"update_id": id, "message": {"message_id": 1, "date": 1, "chat": {"id": 1}, "from": {"id": 2}, "photo": message}}),
        ] {
            let parsed = parse_update(body.to_string().as_bytes());
            prop_assert!(parsed.is_ok());
        }
    }

    /// Whatever the chat and sender ids and types, a Telegram message reaches a conversation
    /// only from the sender's own private chat; a group's carries nothing of what was said;
    /// a button click counts only in the sender's own private chat.
    #[test]
    fn telegram_only_private_chats_reach_a_conversation(
        chat in prop_oneof![Just(5_i64), any::<i64>()],
        kind in proptest::option::of(word()),
        text in json_value(),
    ) {
        let chat_json = match &kind {
            Some(k) => json!({"id": chat, "type": k}),
            None => json!({"id": chat}),
        };
        let bodies = [
            json!({"update_id": 1, "message": {"message_id": 1, "date": 1, "chat": chat_json, "from": {"id": 5}, "text": text}}),
            json!({"update_id": 1, "callback_query": {"id": "q", "from": {"id": 5}, "data": "b0", "message": {"message_id": 1, "chat": chat_json}}}),
        ];
        for body in bodies {
            let parsed = parse_update(body.to_string().as_bytes());
            prop_assert!(parsed.is_ok());
            if let Ok(Some(m)) = parsed {
                match m.chat {
                    steward_channels::ChatKind::Private => {
                        prop_assert_eq!(kind.as_deref(), Some("private"));
                        prop_assert_eq!(chat, 5);
                        prop_assert_eq!(&m.conversation_id, &m.external_user_id);
                    }
                    steward_channels::ChatKind::Group => {
                        prop_assert!(matches!(kind.as_deref(), Some("group" | "supergroup" | "channel")));
                        prop_assert!(m.text.is_none() && m.media.is_none() && m.button_id.is_none());
                    }
                }
            }
        }
    }

    #[test]
    fn whatsapp_verifiers_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..256),
        header in proptest::option::of(".{0,80}"),
        hex_tail in "[0-9a-fA-F]{0,70}",
        secret in proptest::collection::vec(any::<u8>(), 0..64),
        mode in proptest::option::of(".{0,12}"),
        token in proptest::option::of(".{0,12}"),
        challenge in proptest::option::of(".{0,12}"),
        expected in ".{0,12}",
    ) {
        let _ = verify_signature(&body, header.as_deref(), &secret);
        let _ = verify_signature(&body, Some(&format!("sha256={hex_tail}")), &secret);
        let _ = verify_handshake(mode.as_deref(), token.as_deref(), challenge.as_deref(), &expected);
    }

    #[test]
    fn telegram_secret_rule_never_panics_and_holds(secret in ".{0,300}") {
        if check_webhook_secret(&secret).is_ok() {
            prop_assert!((32..=256).contains(&secret.len()));
            prop_assert!(secret.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        }
    }

    #[test]
    fn telegram_verifier_never_panics(header in proptest::option::of(".{0,80}"), expected in ".{0,80}") {
        let r = verify_secret(header.as_deref(), &expected);
        if header.as_deref() == Some(expected.as_str()) && !expected.is_empty() {
            prop_assert!(r.is_ok());
        } else {
            prop_assert!(r.is_err());
        }
    }
}
