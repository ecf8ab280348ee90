//! Nothing from outside can panic the parsers or the verifiers: arbitrary bytes, arbitrary
//! header strings, and arbitrary JSON dropped into the places real payloads have structure.

use proptest::prelude::*;
use serde_json::{Value, json};
use steward_channels::telegram::{
    check_webhook_secret, parse_update, parse_update_part_by_part, verify_secret,
};
use steward_channels::whatsapp::{
    parse_webhook, parse_webhook_item_by_item, verify_handshake, verify_signature,
};

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

/// A string field as WhatsApp sends it: absent, or a string (sometimes empty or odd).
fn maybe_word() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(word())
}

/// Puts `value` under `key` when there is one.
fn put(object: &mut serde_json::Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        object.insert(key.to_owned(), value);
    }
}

/// One message in the documented shape: every field Steward reads has its documented type,
/// with arbitrary contents, and unknown fields beside them.
fn documented_message() -> impl Strategy<Value = Value> {
    (
        (
            word(),
            proptest::sample::select(&[
                "text", "interactive", "button", "image", "document", "audio", "video",
                "sticker", "location", "contacts", "reaction", "unsupported",
            ][..]),
            maybe_word(),
            maybe_word(),
            proptest::option::of(prop_oneof![
                "[0-9]{1,10}".prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                word().prop_map(Value::from),
            ]),
            maybe_word(),
        ),
        (
            maybe_word(),
            proptest::option::of((
                proptest::sample::select(&["button_reply", "list_reply", "nfm_reply"][..]),
                word(),
                maybe_word(),
            )),
            proptest::option::of((maybe_word(), maybe_word(), maybe_word(), proptest::option::of(any::<bool>()))),
            proptest::option::of((any::<f64>(), "-?[0-9]{1,3}\\.[0-9]{1,6}", maybe_word())),
            proptest::option::of(proptest::collection::vec((maybe_word(), maybe_word()), 0..3)),
            proptest::option::of(json_value()),
        ),
    )
        .prop_map(|((id, kind, from, from_user_id, timestamp, group_id), (text, reply, media, location, cards, extra))| {
            let mut m = serde_json::Map::new();
            m.insert("id".into(), Value::from(id));
            m.insert("type".into(), Value::from(kind));
            put(&mut m, "from", from.map(Value::from));
            put(&mut m, "from_user_id", from_user_id.map(Value::from));
            put(&mut m, "timestamp", timestamp);
            put(&mut m, "group_id", group_id.map(Value::from));
            put(&mut m, "text", text.map(|body| json!({"body": body})));
            if let Some((reply_kind, reply_id, title)) = reply {
                m.insert("interactive".into(), json!({"type": reply_kind, reply_kind: {"id": reply_id, "title": title}}));
                m.insert("button".into(), json!({"payload": reply_id, "text": title}));
                m.insert("context".into(), json!({"id": "wamid.ctx"}));
            }
            if let Some((media_id, mime, caption, voice)) = media.filter(|_| matches!(kind, "image" | "document" | "audio" | "video" | "sticker")) {
                let part = json!({"id": media_id, "mime_type": mime, "caption": caption, "voice": voice, "filename": "a.pdf"});
                m.insert(kind.to_owned(), part);
            }
            if let Some((lat, lon, name)) = location {
                m.insert("location".into(), json!({"latitude": lat, "longitude": lon, "name": name}));
            }
            if let Some(cards) = cards {
                let cards: Vec<Value> = cards
                    .into_iter()
                    .map(|(name, phone)| json!({"name": {"formatted_name": name}, "phones": [{"phone": phone}]}))
                    .collect();
                m.insert("contacts".into(), Value::from(cards));
            }
            put(&mut m, "unknown_extra", extra);
            Value::Object(m)
        })
}

/// A notification in the documented shape: entries × changes × (contacts, messages), with the
/// parts Steward skips (metadata, statuses, other fields) present too.
fn documented_notification() -> impl Strategy<Value = Value> {
    let contact = (maybe_word(), maybe_word(), maybe_word()).prop_map(|(wa_id, user_id, name)| {
        json!({"wa_id": wa_id, "user_id": user_id, "profile": {"name": name}})
    });
    let change = (
        proptest::option::of(proptest::sample::select(
            &["messages", "account_update"][..],
        )),
        proptest::collection::vec(contact, 0..3),
        proptest::collection::vec(documented_message(), 0..4),
    )
        .prop_map(|(field, contacts, messages)| {
            json!({
                "field": field,
                "value": {
                    "messaging_product": "whatsapp",
                    "metadata": {"phone_number_id": "1"},
                    "contacts": contacts,
                    "messages": messages,
                    "statuses": [{"id": "wamid.out", "status": "read"}],
                }
            })
        });
    (
        proptest::sample::select(&["whatsapp_business_account", "page"][..]),
        proptest::collection::vec(proptest::collection::vec(change, 0..3), 0..3),
    )
        .prop_map(|(object, entries)| {
            let entries: Vec<Value> = entries
                .into_iter()
                .map(|changes| json!({"id": "1", "changes": changes}))
                .collect();
            json!({"object": object, "entry": entries})
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn whatsapp_parser_never_panics_on_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        prop_assert_eq!(parse_webhook(&body).ok(), parse_webhook_item_by_item(&body).ok());
    }

    /// The one-pass reading and the item-by-item reading give the same messages, on bodies in
    /// the documented shape (which the one-pass reading takes) and on the same bodies with one
    /// part changed to an arbitrary value (which it gives up for the item-by-item reading).
    #[test]
    fn whatsapp_readings_agree(body in documented_notification(), odd in json_value(), at in any::<proptest::sample::Index>()) {
        let bytes = body.to_string().into_bytes();
        let parsed = parse_webhook(&bytes);
        prop_assert!(parsed.is_ok());
        prop_assert_eq!(parsed.ok(), parse_webhook_item_by_item(&bytes).ok());

        let mut changed = body;
        replace_one(&mut changed, at, odd);
        let bytes = changed.to_string().into_bytes();
        prop_assert_eq!(parse_webhook(&bytes).ok(), parse_webhook_item_by_item(&bytes).ok());
    }

    #[test]
    fn telegram_parser_never_panics_on_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        prop_assert_eq!(parse_update(&body).ok(), parse_update_part_by_part(&body).ok());
    }

    /// Each provider fixture with one place changed to an arbitrary value: both readings of
    /// each channel's parser give the same result.
    #[test]
    fn readings_agree_on_changed_fixtures(pick in any::<proptest::sample::Index>(), odd in json_value(), at in any::<proptest::sample::Index>()) {
        let fixtures = fixtures();
        let (channel, body) = &fixtures[pick.index(fixtures.len())];
        let mut changed: Value = serde_json::from_slice(body).unwrap();
        replace_one(&mut changed, at, odd);
        let bytes = changed.to_string().into_bytes();
        if *channel == "whatsapp" {
            prop_assert_eq!(parse_webhook(&bytes).ok(), parse_webhook_item_by_item(&bytes).ok());
        } else {
            prop_assert_eq!(parse_update(&bytes).ok(), parse_update_part_by_part(&bytes).ok());
        }
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
        let bytes = body.to_string().into_bytes();
        let parsed = parse_webhook(&bytes);
        prop_assert!(parsed.is_ok());
        let item_by_item = parse_webhook_item_by_item(&bytes);
        prop_assert_eq!(parsed.as_ref().ok(), item_by_item.as_ref().ok());
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
            let bytes = body.to_string().into_bytes();
            let parsed = parse_update(&bytes);
            prop_assert!(parsed.is_ok());
            let part_by_part = parse_update_part_by_part(&bytes);
            prop_assert_eq!(parsed.as_ref().ok(), part_by_part.as_ref().ok());
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
            let bytes = body.to_string().into_bytes();
            let parsed = parse_update(&bytes);
            prop_assert!(parsed.is_ok());
            let part_by_part = parse_update_part_by_part(&bytes);
            prop_assert_eq!(parsed.as_ref().ok(), part_by_part.as_ref().ok());
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

/// Replaces the value at one place of `value` (picked by `at` among all its places, the root
/// excluded) with `with`.
fn replace_one(value: &mut Value, at: proptest::sample::Index, with: Value) {
    fn places(value: &Value) -> usize {
        match value {
            Value::Array(items) => items.iter().map(|v| 1 + places(v)).sum(),
            Value::Object(map) => map.values().map(|v| 1 + places(v)).sum(),
            _ => 0,
        }
    }
    fn walk(value: &mut Value, target: &mut usize, with: &mut Option<Value>) {
        let children: Vec<&mut Value> = match value {
            Value::Array(items) => items.iter_mut().collect(),
            Value::Object(map) => map.values_mut().collect(),
            _ => return,
        };
        for child in children {
            if with.is_none() {
                return;
            }
            if *target == 0 {
                if let Some(new) = with.take() {
                    *child = new;
                }
                return;
            }
            *target -= 1;
            walk(child, target, with);
        }
    }
    let total = places(value);
    if total == 0 {
        return;
    }
    let mut target = at.index(total);
    walk(value, &mut target, &mut Some(with));
}

/// Every provider fixture: (channel, bytes).
fn fixtures() -> Vec<(&'static str, Vec<u8>)> {
    let mut all = Vec::new();
    for channel in ["whatsapp", "telegram"] {
        let dir = format!("{}/tests/fixtures/{channel}", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        all.extend(
            names
                .into_iter()
                .map(|p| (channel, std::fs::read(p).unwrap())),
        );
    }
    all
}
