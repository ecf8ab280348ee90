//! Telegram Bot API updates → [`InboundMessage`].
//!
//! An update carries at most one thing. `message` (text, or an attachment) and
//! `callback_query` (a click on an inline keyboard button) become a message; edits, channel
//! posts, messages from bots and every other update kind are acknowledged and dropped.
//!
//! Only private chats reach a conversation: `chat.type` must be `"private"` and the chat must
//! be the sender's own (`chat.id == from.id`). A message in a group, supergroup or channel
//! becomes a [`ChatKind::Group`] message without its text or attachment (the worker answers
//! it once per chat, saying Steward works in private chats only); a button click on a message
//! in such a chat, and anything with a missing or unknown chat type, is dropped.

use serde::Deserialize;
use serde_json::Value;

use crate::inbound::{
    Channel, ChatKind, InboundMessage, MediaKind, MediaRef, ParseError, check_body_size,
    contact_text, location_text, non_empty, valid_id,
};
use crate::sender::now_epoch_seconds;

/// The top level of an update; the parts are read one by one so a surprise in one field
/// cannot hide the others.
#[derive(Debug, Deserialize)]
struct Update {
    update_id: i64,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    callback_query: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct User {
    id: i64,
    #[serde(default)]
    is_bot: bool,
    #[serde(default)]
    first_name: Option<String>,
    #[serde(default)]
    last_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Chat {
    id: i64,
    /// `private`, `group`, `supergroup` or `channel`.
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// What a chat is, as far as Steward cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChatClass {
    /// The sender's own private chat with the bot.
    Own,
    /// A group, supergroup or channel.
    Shared,
    /// Anything else: a private chat that is not the sender's, or a missing or unknown type.
    Unusable,
}

impl Chat {
    /// How a chat with a message from user `from` is treated.
    fn class(&self, from: i64) -> ChatClass {
        match self.kind.as_deref() {
            Some("private") if self.id == from => ChatClass::Own,
            Some("group" | "supergroup" | "channel") => ChatClass::Shared,
            _ => ChatClass::Unusable,
        }
    }
}

/// A file attachment (`document`, `audio`, `voice`, `video`, `video_note`, `sticker`,
/// `animation`, and each size of a `photo`).
#[derive(Debug, Deserialize)]
struct File {
    file_id: String,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    width: Option<u64>,
    #[serde(default)]
    height: Option<u64>,
    #[serde(default)]
    file_size: Option<u64>,
    #[serde(default)]
    file_name: Option<String>,
}

/// `location` (and a venue's `location`).
#[derive(Debug, Deserialize)]
struct Location {
    latitude: f64,
    longitude: f64,
}

/// `venue`: a named place.
#[derive(Debug, Deserialize)]
struct Venue {
    location: Location,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    address: Option<String>,
}

/// `contact`: a shared contact card.
#[derive(Debug, Deserialize)]
struct Contact {
    #[serde(default)]
    phone_number: Option<String>,
    #[serde(default)]
    first_name: Option<String>,
    #[serde(default)]
    last_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Message {
    message_id: i64,
    #[serde(default)]
    from: Option<User>,
    chat: Chat,
    date: i64,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    caption: Option<String>,
    #[serde(default)]
    photo: Option<Vec<File>>,
    #[serde(default)]
    animation: Option<File>,
    #[serde(default)]
    document: Option<File>,
    #[serde(default)]
    audio: Option<File>,
    #[serde(default)]
    voice: Option<File>,
    #[serde(default)]
    video: Option<File>,
    #[serde(default)]
    video_note: Option<File>,
    #[serde(default)]
    sticker: Option<File>,
    #[serde(default)]
    location: Option<Value>,
    #[serde(default)]
    contact: Option<Value>,
    #[serde(default)]
    venue: Option<Value>,
    #[serde(default)]
    poll: Option<Value>,
    #[serde(default)]
    dice: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct CallbackQuery {
    id: String,
    from: User,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    data: Option<String>,
}

/// The bot message a clicked button was on (possibly "inaccessible": only chat and id).
#[derive(Debug, Deserialize)]
struct ButtonMessage {
    message_id: i64,
    chat: Chat,
    #[serde(default)]
    reply_markup: Option<Markup>,
}

#[derive(Debug, Deserialize)]
struct Markup {
    #[serde(default)]
    inline_keyboard: Vec<Vec<InlineButton>>,
}

#[derive(Debug, Deserialize)]
struct InlineButton {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    callback_data: Option<String>,
}

/// An update whose message or button click is in the documented shape, read in one pass.
#[derive(Debug, Deserialize)]
struct TypedUpdate {
    update_id: i64,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    callback_query: Option<CallbackQuery>,
}

/// Parses a Telegram update (already secret-checked). Malformed JSON is an error (answer 200
/// and log); an update that is not a user message or button click is `Ok(None)`.
///
/// Two readings with one result, as for WhatsApp: an update in the documented shape is read
/// straight into [`TypedUpdate`]; one with a part in another shape (or a key twice) is read
/// again part by part ([`parse_update_part_by_part`]), where the odd part is dropped.
pub fn parse_update(body: &[u8]) -> Result<Option<InboundMessage>, ParseError> {
    check_body_size(body.len())?;
    let Ok(update) = serde_json::from_slice::<TypedUpdate>(body) else {
        return parse_update_part_by_part(body);
    };
    let update_id = update.update_id.to_string();
    if let Some(message) = update.message {
        return Ok(from_message(update_id, message));
    }
    if let Some(query) = update.callback_query {
        return Ok(from_callback(update_id, query));
    }
    tracing::debug!("telegram update kind not handled; dropped");
    Ok(None)
}

/// [`parse_update`]'s second reading: the body as a tree of values, the update, its message and
/// its button click each read on its own. Public so the tests can hold the two readings to one
/// result.
#[doc(hidden)]
pub fn parse_update_part_by_part(body: &[u8]) -> Result<Option<InboundMessage>, ParseError> {
    check_body_size(body.len())?;
    let root: Value = serde_json::from_slice(body)?;
    let update = match Update::deserialize(&root) {
        Ok(u) => u,
        Err(e) => {
            tracing::debug!(error = %e, "telegram update in an unexpected shape; dropped");
            return Ok(None);
        }
    };
    let update_id = update.update_id.to_string();
    if let Some(raw) = update.message {
        return Ok(Message::deserialize(&raw)
            .ok()
            .and_then(|m| from_message(update_id, m)));
    }
    if let Some(raw) = update.callback_query {
        return Ok(CallbackQuery::deserialize(&raw)
            .ok()
            .and_then(|q| from_callback(update_id, q)));
    }
    // edited_message, channel_post, my_chat_member, message_reaction, …: acknowledged, dropped.
    tracing::debug!("telegram update kind not handled; dropped");
    Ok(None)
}

/// "First Last", when the user has a name.
fn display_name(user: &User) -> Option<String> {
    let name = [user.first_name.as_deref(), user.last_name.as_deref()]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    non_empty(Some(name))
}

fn from_message(update_id: String, message: Message) -> Option<InboundMessage> {
    let from = message.from.as_ref()?;
    if from.is_bot {
        return None;
    }
    match message.chat.class(from.id) {
        ChatClass::Own => {}
        ChatClass::Shared => {
            tracing::info!(
                chat = message.chat.id,
                "telegram message in a group chat; only the private-chats note may answer it"
            );
            return Some(InboundMessage {
                channel: Channel::Telegram,
                conversation_id: message.chat.id.to_string(),
                external_user_id: from.id.to_string(),
                provider_message_id: update_id,
                message_ref: None,
                text: None,
                button_id: None,
                replied_to_id: None,
                media: None,
                timestamp: message.date,
                display_name: None,
                callback_query_id: None,
                chat: ChatKind::Group,
            });
        }
        ChatClass::Unusable => {
            tracing::info!(
                chat_type = message.chat.kind.as_deref().unwrap_or("(none)"),
                "telegram message outside the sender's own private chat; dropped"
            );
            return None;
        }
    }
    let (media, card) = media_of(&message);
    // A caption is the message's text (a linking code in it links); a location or contact
    // card becomes text the model can use.
    let text = non_empty(
        message
            .text
            .clone()
            .or_else(|| message.caption.clone())
            .or(card),
    );
    if text.is_none() && media.is_none() {
        // Service messages (members joined, pinned, …).
        return None;
    }
    Some(InboundMessage {
        channel: Channel::Telegram,
        conversation_id: message.chat.id.to_string(),
        external_user_id: from.id.to_string(),
        provider_message_id: update_id,
        message_ref: Some(message.message_id.to_string()),
        text,
        button_id: None,
        replied_to_id: None,
        media,
        timestamp: message.date,
        display_name: display_name(from),
        callback_query_id: None,
        chat: ChatKind::Private,
    })
}

/// The attachment of a message, if any (the largest size of a photo), and for a location,
/// venue or contact card its text.
fn media_of(message: &Message) -> (Option<MediaRef>, Option<String>) {
    let file = |kind: MediaKind, f: &File| MediaRef {
        provider_media_id: valid_id(Some(f.file_id.clone())),
        mime: non_empty(f.mime_type.clone()),
        file_name: non_empty(f.file_name.clone()),
        size_bytes: f.file_size,
        ..MediaRef::of(kind)
    };
    if let Some(sizes) = &message.photo {
        let largest = sizes
            .iter()
            .max_by_key(|s| s.width.unwrap_or(0).saturating_mul(s.height.unwrap_or(0)));
        let media = match largest {
            Some(f) => file(MediaKind::Image, f),
            None => MediaRef::of(MediaKind::Image),
        };
        return (Some(media), None);
    }
    // An animation also comes with `document`; it is checked first so it is not called a file.
    let files = [
        (MediaKind::Other, &message.animation),
        (MediaKind::Document, &message.document),
        (MediaKind::Audio, &message.audio),
        (MediaKind::Voice, &message.voice),
        (MediaKind::Video, &message.video),
        (MediaKind::Video, &message.video_note),
        (MediaKind::Sticker, &message.sticker),
    ];
    if let Some((kind, Some(f))) = files.into_iter().find(|(_, f)| f.is_some()) {
        return (Some(file(kind, f)), None);
    }
    // A venue also comes with `location`; it is checked first for its name and address.
    if let Some(raw) = &message.venue {
        let text = Venue::deserialize(raw).ok().and_then(|v| {
            location_text(
                v.location.latitude,
                v.location.longitude,
                v.title.as_deref(),
                v.address.as_deref(),
            )
        });
        return (Some(MediaRef::of(MediaKind::Location)), text);
    }
    if let Some(raw) = &message.location {
        let text = Location::deserialize(raw)
            .ok()
            .and_then(|l| location_text(l.latitude, l.longitude, None, None));
        return (Some(MediaRef::of(MediaKind::Location)), text);
    }
    if let Some(raw) = &message.contact {
        let text = Contact::deserialize(raw).ok().and_then(|c| {
            let parts: Vec<&str> = [c.first_name.as_deref(), c.last_name.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            let phones: Vec<&str> = c.phone_number.as_deref().into_iter().collect();
            contact_text(Some(&parts.join(" ")), &phones, None)
        });
        return (Some(MediaRef::of(MediaKind::Contact)), text);
    }
    let other = message.poll.is_some() || message.dice.is_some();
    (other.then(|| MediaRef::of(MediaKind::Other)), None)
}

fn from_callback(update_id: String, query: CallbackQuery) -> Option<InboundMessage> {
    if query.from.is_bot {
        return None;
    }
    let callback_query_id = valid_id(Some(query.id))?;
    let Some(data) = valid_id(query.data) else {
        tracing::debug!("telegram callback query without usable data; dropped");
        return None;
    };
    let button_message = match &query.message {
        Some(raw) => match ButtonMessage::deserialize(raw) {
            Ok(m) => Some(m),
            Err(_) => {
                tracing::debug!(
                    "telegram callback query on a message of an unexpected shape; dropped"
                );
                return None;
            }
        },
        None => None,
    };
    if let Some(m) = &button_message
        && m.chat.class(query.from.id) != ChatClass::Own
    {
        tracing::info!(
            chat_type = m.chat.kind.as_deref().unwrap_or("(none)"),
            "telegram button click outside the sender's own private chat; dropped"
        );
        return None;
    }
    // Only the sender's private chat gets here, whose id is the user id; without the bot
    // message (an inline-mode button) that is where the click belongs.
    let conversation_id = query.from.id.to_string();
    // The clicked button's title, from the keyboard of the message it was on.
    let title = button_message
        .as_ref()
        .and_then(|m| m.reply_markup.as_ref())
        .and_then(|k| {
            k.inline_keyboard
                .iter()
                .flatten()
                .find(|b| b.callback_data.as_deref() == Some(data.as_str()))
        })
        .and_then(|b| non_empty(b.text.clone()));
    Some(InboundMessage {
        channel: Channel::Telegram,
        conversation_id,
        external_user_id: query.from.id.to_string(),
        provider_message_id: update_id,
        message_ref: None,
        text: title,
        button_id: Some(data),
        replied_to_id: button_message.map(|m| m.message_id.to_string()),
        media: None,
        // A callback query carries no time of its own.
        timestamp: now_epoch_seconds(),
        display_name: display_name(&query.from),
        callback_query_id: Some(callback_query_id),
        chat: ChatKind::Private,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every fixture (each in the documented shape) is read in one pass, and both readings give
    /// the same result.
    #[test]
    fn documented_shapes_are_read_in_one_pass() {
        for (path, body) in crate::fixture_bodies("telegram") {
            let update = serde_json::from_slice::<TypedUpdate>(&body);
            assert!(update.is_ok(), "{path:?}: {update:?}");
            let part_by_part = parse_update_part_by_part(&body).ok();
            assert_eq!(parse_update(&body).ok(), part_by_part, "{path:?}");
        }
    }

    fn parse(body: &str) -> Option<InboundMessage> {
        parse_update(body.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn odd_shapes_are_dropped() {
        assert_eq!(parse("{}"), None);
        assert_eq!(parse("[]"), None);
        assert_eq!(parse(r#"{"update_id":"x"}"#), None);
        assert_eq!(parse(r#"{"update_id":1,"message":{"text":"hi"}}"#), None);
        assert_eq!(parse(r#"{"update_id":1,"message":5}"#), None);
        assert_eq!(
            parse(r#"{"update_id":1,"callback_query":{"id":"q","from":{"id":1}}}"#),
            None
        );
    }

    #[test]
    fn bots_are_ignored() {
        let body = r#"{"update_id":1,"message":{"message_id":2,"date":3,"chat":{"id":4,"type":"private"},
            "from":{"id":5,"is_bot":true,"first_name":"B"},"text":"hi"}}"#;
        assert_eq!(parse(body), None);
    }

    fn message(chat: &str, from: i64) -> String {
        format!(
            r#"{{"update_id":9,"message":{{"message_id":2,"date":3,"chat":{chat},
            "from":{{"id":{from},"first_name":"A"}},"text":"hello"}}}}"#
        )
    }

    #[test]
    fn only_the_senders_own_private_chat_is_a_conversation() {
        let own = parse(&message(r#"{"id":5,"type":"private"}"#, 5)).unwrap();
        assert_eq!(own.chat, ChatKind::Private);
        assert_eq!(own.text.as_deref(), Some("hello"));
        // A private chat that is not the sender's, or a chat without a known type: dropped.
        assert_eq!(parse(&message(r#"{"id":6,"type":"private"}"#, 5)), None);
        assert_eq!(parse(&message(r#"{"id":5}"#, 5)), None);
        assert_eq!(parse(&message(r#"{"id":5,"type":"secret"}"#, 5)), None);
    }

    #[test]
    fn group_messages_keep_nothing_but_where_they_came_from() {
        for kind in ["group", "supergroup", "channel"] {
            let chat = format!(r#"{{"id":-100,"type":"{kind}"}}"#);
            let m = parse(&message(&chat, 5)).unwrap();
            assert_eq!(m.chat, ChatKind::Group, "{kind}");
            assert_eq!(m.conversation_key(), "tg:-100");
            assert_eq!((m.text, m.media, m.display_name), (None, None, None));
        }
    }

    #[test]
    fn button_clicks_outside_the_own_private_chat_are_dropped() {
        let click = |chat: &str| {
            format!(
                r#"{{"update_id":9,"callback_query":{{"id":"q","from":{{"id":5}},"data":"b0",
                "message":{{"message_id":7,"chat":{chat}}}}}}}"#
            )
        };
        let own = parse(&click(r#"{"id":5,"type":"private"}"#)).unwrap();
        assert_eq!(own.conversation_id, "5");
        assert_eq!(parse(&click(r#"{"id":-100,"type":"supergroup"}"#)), None);
        assert_eq!(parse(&click(r#"{"id":6,"type":"private"}"#)), None);
        assert_eq!(parse(&click(r#"{"id":5}"#)), None);
    }

    #[test]
    fn malformed_json_is_an_error() {
        assert!(matches!(
            parse_update(b"{\"update_id\":"),
            Err(ParseError::MalformedJson(_))
        ));
    }
}
