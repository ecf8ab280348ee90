//! Telegram Bot API updates → [`InboundMessage`].
//!
//! An update carries at most one thing. `message` (text, or an attachment) and
//! `callback_query` (a click on an inline keyboard button) become a message; edits, channel
//! posts, messages from bots and every other update kind are acknowledged and dropped.

use serde::Deserialize;
use serde_json::Value;

use crate::inbound::{
    Channel, InboundMessage, MediaKind, MediaRef, ParseError, check_body_size, non_empty, valid_id,
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

/// Parses a Telegram update (already secret-checked). Malformed JSON is an error (answer 200
/// and log); an update that is not a user message or button click is `Ok(None)`.
pub fn parse_update(body: &[u8]) -> Result<Option<InboundMessage>, ParseError> {
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
    let media = media_of(&message);
    let text = non_empty(message.text.clone().or_else(|| message.caption.clone()));
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
    })
}

/// The attachment of a message, if any (the largest size of a photo).
fn media_of(message: &Message) -> Option<MediaRef> {
    let file = |kind: MediaKind, f: &File| MediaRef {
        kind,
        provider_media_id: valid_id(Some(f.file_id.clone())),
        mime: non_empty(f.mime_type.clone()),
    };
    if let Some(sizes) = &message.photo {
        let largest = sizes
            .iter()
            .max_by_key(|s| s.width.unwrap_or(0).saturating_mul(s.height.unwrap_or(0)));
        return Some(match largest {
            Some(f) => file(MediaKind::Image, f),
            None => MediaRef {
                kind: MediaKind::Image,
                provider_media_id: None,
                mime: None,
            },
        });
    }
    // An animation also comes with `document`; it is checked first so it is not called a file.
    let files = [
        (MediaKind::Other, &message.animation),
        (MediaKind::Document, &message.document),
        (MediaKind::Audio, &message.audio),
        (MediaKind::Audio, &message.voice),
        (MediaKind::Video, &message.video),
        (MediaKind::Video, &message.video_note),
        (MediaKind::Sticker, &message.sticker),
    ];
    if let Some((kind, Some(f))) = files.into_iter().find(|(_, f)| f.is_some()) {
        return Some(file(kind, f));
    }
    let other = [
        &message.location,
        &message.contact,
        &message.venue,
        &message.poll,
        &message.dice,
    ];
    other.iter().any(|v| v.is_some()).then_some(MediaRef {
        kind: MediaKind::Other,
        provider_media_id: None,
        mime: None,
    })
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
    let button_message = query
        .message
        .as_ref()
        .and_then(|m| ButtonMessage::deserialize(m).ok());
    // In a private chat the chat id is the user id; it is the fallback when the bot message
    // is not included.
    let conversation_id = button_message
        .as_ref()
        .map_or(query.from.id, |m| m.chat.id)
        .to_string();
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn malformed_json_is_an_error() {
        assert!(matches!(
            parse_update(b"{\"update_id\":"),
            Err(ParseError::MalformedJson(_))
        ));
    }
}
