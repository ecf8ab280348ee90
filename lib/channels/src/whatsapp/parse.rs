//! WhatsApp Cloud API webhook payloads → [`InboundMessage`]s.
//!
//! One POST can carry several entries × changes × messages; each user message becomes its own
//! [`InboundMessage`]. Statuses, the user's reactions, `unsupported`, `system` and other
//! notifications are acknowledged and dropped. Every item is read on its own, so a part in an
//! unexpected shape is dropped without losing the rest, and nothing here can panic.

use serde::Deserialize;
use serde_json::Value;

use crate::inbound::{
    CONTACTS_MAX, Channel, InboundMessage, MediaKind, MediaRef, ParseError, check_body_size,
    contact_text, location_text, non_empty, valid_id,
};

/// The `object` of every WhatsApp Business Account webhook.
const OBJECT: &str = "whatsapp_business_account";

/// The `field` of changes that carry messages and statuses.
const FIELD_MESSAGES: &str = "messages";

/// `contacts[]`: who sent the messages of this change.
#[derive(Debug, Deserialize)]
struct Contact {
    /// The user's WhatsApp id (phone number); omitted when the number is withheld.
    #[serde(default)]
    wa_id: Option<String>,
    /// The business-scoped user id (BSUID).
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    profile: Option<Profile>,
}

#[derive(Debug, Deserialize)]
struct Profile {
    #[serde(default)]
    name: Option<String>,
}

/// `messages[]`: one user message, in the documented common shape.
#[derive(Debug, Deserialize)]
struct Message {
    /// The sender's phone number; omitted when the number is withheld (usernames).
    #[serde(default)]
    from: Option<String>,
    /// The sender's business-scoped user id.
    #[serde(default)]
    from_user_id: Option<String>,
    id: String,
    /// Epoch seconds, documented as a string.
    #[serde(default)]
    timestamp: Option<Value>,
    #[serde(rename = "type")]
    kind: String,
    /// Present for messages in a group, which Steward does not take part in.
    #[serde(default)]
    group_id: Option<String>,
    #[serde(default)]
    context: Option<Context>,
    #[serde(default)]
    text: Option<Text>,
    #[serde(default)]
    interactive: Option<Interactive>,
    #[serde(default)]
    button: Option<Button>,
    #[serde(default)]
    image: Option<Media>,
    #[serde(default)]
    document: Option<Media>,
    #[serde(default)]
    audio: Option<Media>,
    #[serde(default)]
    video: Option<Media>,
    #[serde(default)]
    sticker: Option<Media>,
    #[serde(default)]
    location: Option<Location>,
    /// Shared contact cards (not the sender: that is the change's `contacts`).
    #[serde(default)]
    contacts: Option<Vec<Value>>,
}

/// `location`: a shared place.
#[derive(Debug, Deserialize)]
struct Location {
    #[serde(default)]
    latitude: Option<Value>,
    #[serde(default)]
    longitude: Option<Value>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    address: Option<String>,
}

/// One shared contact card.
#[derive(Debug, Deserialize)]
struct Card {
    #[serde(default)]
    name: Option<CardName>,
    #[serde(default)]
    phones: Vec<CardPhone>,
    #[serde(default)]
    emails: Vec<CardEmail>,
}

#[derive(Debug, Deserialize)]
struct CardName {
    #[serde(default)]
    formatted_name: Option<String>,
    #[serde(default)]
    first_name: Option<String>,
    #[serde(default)]
    last_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CardPhone {
    #[serde(default)]
    phone: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CardEmail {
    #[serde(default)]
    email: Option<String>,
}

/// The message this one answers (for button clicks: the message the button was on).
#[derive(Debug, Deserialize)]
struct Context {
    #[serde(default)]
    id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Text {
    #[serde(default)]
    body: Option<String>,
}

/// `interactive`: a click on a reply button or a list row.
#[derive(Debug, Deserialize)]
struct Interactive {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    button_reply: Option<Reply>,
    #[serde(default)]
    list_reply: Option<Reply>,
}

#[derive(Debug, Deserialize)]
struct Reply {
    id: String,
    #[serde(default)]
    title: Option<String>,
}

/// `button`: a click on a template's quick-reply button (the legacy shape).
#[derive(Debug, Deserialize)]
struct Button {
    #[serde(default)]
    payload: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// `image`, `document`, `audio`, `video`, `sticker`.
#[derive(Debug, Default, Deserialize)]
struct Media {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    caption: Option<String>,
    /// Documents: the file's name.
    #[serde(default)]
    filename: Option<String>,
    /// Audio: `true` for a voice note recorded in the app.
    #[serde(default)]
    voice: Option<bool>,
}

/// The whole notification in the documented shape, read in one pass straight into types. Fields
/// Steward does not read (`metadata`, `statuses`, profile details, …) are skipped unread.
#[derive(Debug, Deserialize)]
struct Notification {
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    entry: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    changes: Vec<Change>,
}

#[derive(Debug, Deserialize)]
struct Change {
    #[serde(default)]
    field: Option<String>,
    #[serde(default)]
    value: Option<ChangeValue>,
}

#[derive(Debug, Deserialize)]
struct ChangeValue {
    #[serde(default)]
    contacts: Vec<Contact>,
    #[serde(default)]
    messages: Vec<Message>,
}

/// Parses a WhatsApp webhook body (already signature-checked) into the user messages it holds.
/// Malformed JSON is an error (answer 200 and log: a retry would not fix it); anything else
/// that is not a user message Steward understands is dropped.
///
/// Two readings with one result. A body in the documented shape (nearly every delivery) is read
/// straight into [`Notification`]: no tree of values, nothing built for the fields Steward
/// skips. A body where any part has another shape (or a key twice) fails that reading as a
/// whole and is read again item by item ([`parse_webhook_item_by_item`]), which drops only the
/// odd parts. Where the typed reading succeeds the two give the same messages, since both read
/// each part into the same types (`tests/channels/fuzz.rs` checks it on generated shapes).
pub fn parse_webhook(body: &[u8]) -> Result<Vec<InboundMessage>, ParseError> {
    check_body_size(body.len())?;
    match serde_json::from_slice::<Notification>(body) {
        Ok(notification) => Ok(from_notification(notification)),
        Err(_) => parse_webhook_item_by_item(body),
    }
}

/// The messages of a notification read whole.
fn from_notification(notification: Notification) -> Vec<InboundMessage> {
    if notification.object.as_deref() != Some(OBJECT) {
        tracing::debug!("whatsapp webhook: not a business account notification; dropped");
        return Vec::new();
    }
    let mut out = Vec::new();
    for change in notification.entry.into_iter().flat_map(|e| e.changes) {
        if change.field.as_deref().is_some_and(|f| f != FIELD_MESSAGES) {
            continue;
        }
        let Some(value) = change.value else {
            continue;
        };
        for message in value.messages {
            out.extend(to_inbound(message, &value.contacts));
        }
    }
    out
}

/// [`parse_webhook`]'s second reading: the body as a tree of values, each entry, change,
/// contact and message read on its own, so a part in an unexpected shape is dropped without
/// losing the rest. Public so the tests can hold the two readings to one result.
#[doc(hidden)]
pub fn parse_webhook_item_by_item(body: &[u8]) -> Result<Vec<InboundMessage>, ParseError> {
    check_body_size(body.len())?;
    let root: Value = serde_json::from_slice(body)?;
    if root.get("object").and_then(Value::as_str) != Some(OBJECT) {
        tracing::debug!("whatsapp webhook: not a business account notification; dropped");
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in array(root.get("entry")) {
        for change in array(entry.get("changes")) {
            let field = change.get("field").and_then(Value::as_str);
            if field.is_some_and(|f| f != FIELD_MESSAGES) {
                continue;
            }
            let Some(value) = change.get("value") else {
                continue;
            };
            let contacts: Vec<Contact> = array(value.get("contacts"))
                .filter_map(|c| Contact::deserialize(c).ok())
                .collect();
            for raw in array(value.get("messages")) {
                match Message::deserialize(raw) {
                    Ok(message) => out.extend(to_inbound(message, &contacts)),
                    Err(e) => {
                        tracing::debug!(error = %e, "whatsapp webhook: message in an unexpected shape; dropped")
                    }
                }
            }
            // `statuses` (delivery receipts for our own messages) are acknowledged and dropped.
        }
    }
    Ok(out)
}

/// The items of a JSON array, or nothing if `value` is not one.
fn array(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value.and_then(Value::as_array).into_iter().flatten()
}

/// One message in the documented shape → an [`InboundMessage`], or `None` when it is not
/// something a user said to Steward (a reaction, a system notice, an unsupported type …).
fn to_inbound(message: Message, contacts: &[Contact]) -> Option<InboundMessage> {
    if message.group_id.is_some() {
        tracing::debug!("whatsapp webhook: group message; dropped");
        return None;
    }
    let id = valid_id(Some(message.id.clone()))?;
    let timestamp = epoch_seconds(message.timestamp.as_ref())?;
    let contact = find_contact(contacts, &message);
    // The phone number when WhatsApp shares it, else the business-scoped user id.
    let sender = valid_id(message.from.clone())
        .or_else(|| valid_id(contact.and_then(|c| c.wa_id.clone())))
        .or_else(|| valid_id(message.from_user_id.clone()))
        .or_else(|| valid_id(contact.and_then(|c| c.user_id.clone())))?;
    let display_name = non_empty(contact.and_then(|c| c.profile.as_ref()?.name.clone()));

    let text;
    let mut button_id = None;
    let mut media = None;
    match message.kind.as_str() {
        "text" => text = message.text.and_then(|t| t.body),
        "interactive" => {
            let interactive = message.interactive?;
            let reply = match interactive.kind.as_str() {
                "button_reply" => interactive.button_reply?,
                "list_reply" => interactive.list_reply?,
                other => {
                    tracing::debug!(
                        kind = other,
                        "whatsapp webhook: interactive reply not understood; dropped"
                    );
                    return None;
                }
            };
            button_id = valid_id(Some(reply.id));
            text = reply.title;
        }
        "button" => {
            let button = message.button?;
            button_id = valid_id(button.payload);
            text = button.text;
        }
        kind @ ("image" | "document" | "audio" | "video" | "sticker") => {
            let (media_kind, part) = match kind {
                "image" => (MediaKind::Image, message.image),
                "document" => (MediaKind::Document, message.document),
                "audio" => (MediaKind::Audio, message.audio),
                "video" => (MediaKind::Video, message.video),
                _ => (MediaKind::Sticker, message.sticker),
            };
            let part = part.unwrap_or_default();
            let media_kind = if part.voice == Some(true) {
                MediaKind::Voice
            } else {
                media_kind
            };
            // The caption is the message's text (a linking code in it links).
            text = part.caption;
            media = Some(MediaRef {
                provider_media_id: valid_id(part.id),
                mime: non_empty(part.mime_type),
                file_name: non_empty(part.filename),
                ..MediaRef::of(media_kind)
            });
        }
        "location" => {
            text = message.location.as_ref().and_then(|l| {
                location_text(
                    number(l.latitude.as_ref())?,
                    number(l.longitude.as_ref())?,
                    l.name.as_deref(),
                    l.address.as_deref(),
                )
            });
            media = Some(MediaRef::of(MediaKind::Location));
        }
        "contacts" => {
            let lines: Vec<String> = message
                .contacts
                .iter()
                .flatten()
                .take(CONTACTS_MAX)
                .filter_map(|c| Card::deserialize(c).ok())
                .filter_map(|c| card_text(&c))
                .collect();
            text = (!lines.is_empty()).then(|| lines.join("\n"));
            media = Some(MediaRef::of(MediaKind::Contact));
        }
        other => {
            // reaction, unsupported, system, order, request_welcome, …: acknowledged, dropped.
            tracing::debug!(
                kind = other,
                "whatsapp webhook: message type not handled; dropped"
            );
            return None;
        }
    }
    let text = non_empty(text);
    if text.is_none() && button_id.is_none() && media.is_none() {
        return None;
    }
    let replied_to_id = if button_id.is_some() {
        valid_id(message.context.and_then(|c| c.id))
    } else {
        None
    };
    Some(InboundMessage {
        channel: Channel::Whatsapp,
        conversation_id: sender.clone(),
        external_user_id: sender,
        provider_message_id: id.clone(),
        message_ref: Some(id),
        text,
        button_id,
        replied_to_id,
        media,
        timestamp,
        display_name,
        callback_query_id: None,
        chat: crate::inbound::ChatKind::Private,
    })
}

/// The contact who sent `message`: the one whose ids match, else the only one.
fn find_contact<'a>(contacts: &'a [Contact], message: &Message) -> Option<&'a Contact> {
    contacts
        .iter()
        .find(|c| {
            (c.wa_id.is_some() && c.wa_id == message.from)
                || (c.user_id.is_some() && c.user_id == message.from_user_id)
        })
        .or(match contacts {
            [only] => Some(only),
            _ => None,
        })
}

/// A coordinate: a JSON number, or a number in a string.
fn number(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// One contact card as a line of text.
fn card_text(card: &Card) -> Option<String> {
    let name = card.name.as_ref().and_then(|n| {
        non_empty(n.formatted_name.clone()).or_else(|| {
            let parts: Vec<&str> = [n.first_name.as_deref(), n.last_name.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            non_empty(Some(parts.join(" ")))
        })
    });
    let phones: Vec<&str> = card
        .phones
        .iter()
        .filter_map(|p| p.phone.as_deref())
        .collect();
    let email = card.emails.iter().find_map(|e| e.email.as_deref());
    contact_text(name.as_deref(), &phones, email)
}

/// Epoch seconds from the documented string form (or a plain number).
fn epoch_seconds(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
    .filter(|t| *t >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(body: &str) -> Vec<InboundMessage> {
        parse_webhook(body.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn wrong_object_or_shape_is_dropped() {
        assert!(one(r#"{"object":"page","entry":[]}"#).is_empty());
        assert!(one(r#"{"object":"whatsapp_business_account","entry":"x"}"#).is_empty());
        assert!(one(r#"[1,2,3]"#).is_empty());
        assert!(one(r#"null"#).is_empty());
        assert!(
            one(r#"{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"messages":[{"id":5}]}}]}]}"#)
                .is_empty()
        );
    }

    /// Every fixture (each in the documented shape) is read in one pass, without the second
    /// reading, and both readings give the same messages.
    #[test]
    fn documented_shapes_are_read_in_one_pass() {
        for (path, body) in crate::fixture_bodies("whatsapp") {
            let notification = serde_json::from_slice::<Notification>(&body);
            assert!(notification.is_ok(), "{path:?}: {notification:?}");
            let item_by_item = parse_webhook_item_by_item(&body).ok();
            assert_eq!(parse_webhook(&body).ok(), item_by_item, "{path:?}");
        }
    }

    #[test]
    fn malformed_json_is_an_error() {
        assert!(matches!(
            parse_webhook(b"{not json"),
            Err(ParseError::MalformedJson(_))
        ));
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            epoch_seconds(Some(&Value::from("1749416383"))),
            Some(1_749_416_383)
        );
        assert_eq!(epoch_seconds(Some(&Value::from(17))), Some(17));
        assert_eq!(epoch_seconds(Some(&Value::from("soon"))), None);
        assert_eq!(epoch_seconds(Some(&Value::from(-1))), None);
        assert_eq!(epoch_seconds(None), None);
    }
}
