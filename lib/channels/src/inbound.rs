//! What arrives from any channel, in one provider-neutral shape: the webhook parses the
//! provider's JSON into [`InboundMessage`]s at the edge, queues them as JSON, and everything
//! after that trusts these fields.

use serde::{Deserialize, Serialize};

use crate::ChannelProfile;

/// Largest webhook body accepted, in bytes. Real provider payloads are a few KiB; anything
/// near a mebibyte is abuse, and the cap bounds the work done before the signature check.
/// Callers answer `413 Payload Too Large` above it.
pub const WEBHOOK_BODY_BYTES_MAX: usize = 1024 * 1024;

/// Longest id accepted from outside (conversation, user, message and media ids), in bytes.
/// Matches the harness's `ConversationKey`/`ExternalId` rule, since these ids become key parts.
pub const ID_BYTES_MAX: usize = 256;

/// The channel a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// WhatsApp Cloud API.
    Whatsapp,
    /// Telegram Bot API.
    Telegram,
    /// Steward's own web chat.
    Web,
}

impl Channel {
    /// The short name used in conversation keys and identities: `wa`, `tg` or `web`
    /// (the same as [`ChannelProfile::name`]).
    pub fn short_name(self) -> &'static str {
        self.profile().name
    }

    /// This channel's limits and capabilities.
    pub fn profile(self) -> ChannelProfile {
        match self {
            Self::Whatsapp => ChannelProfile::WHATSAPP,
            Self::Telegram => ChannelProfile::TELEGRAM,
            Self::Web => ChannelProfile::WEB,
        }
    }

    /// The channel for a short name (`wa`, `tg`, `web`), if known.
    pub fn from_short_name(name: &str) -> Option<Self> {
        [Self::Whatsapp, Self::Telegram, Self::Web]
            .into_iter()
            .find(|c| c.short_name() == name)
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.short_name())
    }
}

/// What kind of attachment a message carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// A photo or image.
    Image,
    /// A file.
    Document,
    /// An audio file (music, a recording sent as a file).
    Audio,
    /// A voice note recorded in the app.
    Voice,
    /// A video (including round video notes).
    Video,
    /// A sticker.
    Sticker,
    /// A shared location or venue; the parser puts it in the message's text.
    Location,
    /// A shared contact card; the parser puts the name and phone in the message's text.
    Contact,
    /// Anything else that is not text: a poll, an animation, a dice roll …
    Other,
}

impl MediaKind {
    /// How the kind is named to a person and in the visible transcript (`photo`, `voice note` …).
    pub fn noun(self) -> &'static str {
        match self {
            Self::Image => "photo",
            Self::Document => "file",
            Self::Audio => "audio",
            Self::Voice => "voice note",
            Self::Video => "video",
            Self::Sticker => "sticker",
            Self::Location => "location",
            Self::Contact => "contact",
            Self::Other => "attachment",
        }
    }
}

/// Longest text taken from a location's name or address or a contact's fields, in characters:
/// enough for any real place or name, and a bound on what a crafted card can put in a turn.
pub const CARD_FIELD_CHARS_MAX: usize = 200;

/// Most contact cards of one message turned into text (WhatsApp can share many at once).
pub const CONTACTS_MAX: usize = 10;

/// What kind of chat a message was written in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    /// A one-to-one chat between the sender and Steward: the only kind that reaches a
    /// conversation.
    #[default]
    Private,
    /// A Telegram group, supergroup or channel. Steward does not take part in shared chats (one
    /// transcript would mix several people's accounts), so such a message carries no text and
    /// no attachment: the worker answers it at most once per chat with a note that Steward
    /// works in private chats only, and does nothing else.
    Group,
}

impl ChatKind {
    /// Whether this is a private chat (the default, left out of the queued JSON).
    pub fn is_private(&self) -> bool {
        *self == Self::Private
    }
}

/// A reference to an attachment held by the provider; Steward does not download it (yet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaRef {
    /// What kind of attachment.
    pub kind: MediaKind,
    /// The provider's id for the file (WhatsApp media id, Telegram `file_id`); `None` for kinds
    /// without a file, such as a shared location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_media_id: Option<String>,
    /// The MIME type, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// The file's name, when the provider says (documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// The size the provider declares, in bytes (Telegram says; WhatsApp does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
}

impl MediaRef {
    /// A reference of `kind` with nothing else known (a location, a contact card …).
    pub fn of(kind: MediaKind) -> Self {
        Self {
            kind,
            provider_media_id: None,
            mime: None,
            file_name: None,
            size_bytes: None,
        }
    }
}

/// The text a model can use for a shared location: `Location: 52.52, 13.405 — Name, Address`.
/// `None` for coordinates that are not numbers on the globe.
pub fn location_text(
    latitude: f64,
    longitude: f64,
    name: Option<&str>,
    address: Option<&str>,
) -> Option<String> {
    let on_globe = latitude.is_finite()
        && longitude.is_finite()
        && (-90.0..=90.0).contains(&latitude)
        && (-180.0..=180.0).contains(&longitude);
    if !on_globe {
        return None;
    }
    let mut text = format!("Location: {latitude}, {longitude}");
    let words: Vec<String> = [name, address].into_iter().filter_map(card_field).collect();
    if !words.is_empty() {
        text.push_str(" — ");
        text.push_str(&words.join(", "));
    }
    Some(text)
}

/// The text a model can use for a shared contact: `Contact: Ada Lovelace, +44 20 7946 0000`.
/// `None` when the card has neither a name nor a phone number.
pub fn contact_text(name: Option<&str>, phones: &[&str], email: Option<&str>) -> Option<String> {
    let mut fields: Vec<String> = Vec::new();
    fields.extend(card_field(name));
    fields.extend(
        phones
            .iter()
            .take(CONTACTS_MAX)
            .filter_map(|p| card_field(Some(p))),
    );
    if fields.is_empty() {
        return None;
    }
    fields.extend(card_field(email));
    Some(format!("Contact: {}", fields.join(", ")))
}

/// A card field from outside, on one line, trimmed and capped; `None` when empty.
fn card_field(field: Option<&str>) -> Option<String> {
    let one_line: String = field?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .take(CARD_FIELD_CHARS_MAX)
        .collect();
    (!one_line.is_empty()).then_some(one_line)
}

/// One message from a user, whatever the channel. Goes through the turn queue as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundMessage {
    /// Where it came from.
    pub channel: Channel,
    /// The id part of the conversation key: WhatsApp the sender's `wa_id` (or business-scoped
    /// user id when the phone number is withheld), Telegram the chat id, web the user id.
    pub conversation_id: String,
    /// Who is talking, on this channel: WhatsApp as the conversation id, Telegram `from.id`,
    /// web the authenticated user id.
    pub external_user_id: String,
    /// The provider's id for this delivery, for dedupe: WhatsApp `messages[].id`, Telegram
    /// `update_id`, web the client-generated id.
    pub provider_message_id: String,
    /// The id of the user's message inside the chat, used to react to it or mark it read:
    /// WhatsApp the same as `provider_message_id`; Telegram `message.message_id` (none for a
    /// button click, which is not a message of the user's); web none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_ref: Option<String>,
    /// What the user wrote (for a button click, the button's title when the provider says it;
    /// for media, the caption).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The id of the button the user clicked (see [`crate::button_id`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub button_id: Option<String>,
    /// For a button click, the provider's id of the bot message the button was on, so a click
    /// on an old message can be told apart from one on the latest reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replied_to_id: Option<String>,
    /// The attachment, if the message carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaRef>,
    /// When the user sent it, in epoch seconds (for a Telegram button click, which carries no
    /// time, when it was parsed).
    pub timestamp: i64,
    /// The sender's display name, when the provider says (never used as identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Telegram only: the callback query to answer, or the user's client keeps spinning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_query_id: Option<String>,
    /// The kind of chat it was written in (private unless a Telegram group said otherwise;
    /// absent in the queued JSON of a private chat).
    #[serde(default, skip_serializing_if = "ChatKind::is_private")]
    pub chat: ChatKind,
}

impl InboundMessage {
    /// The conversation key `<channel>:<id>` (`wa:…`, `tg:…`, `web:…`), the FIFO message group.
    pub fn conversation_key(&self) -> String {
        format!("{}:{}", self.channel.short_name(), self.conversation_id)
    }

    /// Whether the message carried an attachment (see [`crate::media_reply`]).
    pub fn has_media(&self) -> bool {
        self.media.is_some()
    }
}

/// The webhook body was over [`WEBHOOK_BODY_BYTES_MAX`]: answer 413.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("webhook body of {bytes} bytes is over the {WEBHOOK_BODY_BYTES_MAX}-byte limit")]
pub struct BodyTooLarge {
    /// The size of the refused body.
    pub bytes: usize,
}

/// Checks a webhook body's size before anything else is done with it.
pub fn check_body_size(bytes: usize) -> Result<(), BodyTooLarge> {
    if bytes > WEBHOOK_BODY_BYTES_MAX {
        Err(BodyTooLarge { bytes })
    } else {
        Ok(())
    }
}

/// A webhook body that could not be read at all. The route answers 200 and logs it: the
/// provider's retries would send the same bytes again.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The body is not JSON.
    #[error("webhook body is not valid JSON: {0}")]
    MalformedJson(#[from] serde_json::Error),
    /// The body is over [`WEBHOOK_BODY_BYTES_MAX`].
    #[error(transparent)]
    TooLarge(#[from] BodyTooLarge),
}

/// Whether `id` may be used as a key part: 1 to [`ID_BYTES_MAX`] bytes, no control characters,
/// whitespace or `#` (the harness's rule for conversation keys and external ids).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= ID_BYTES_MAX
        && id
            .chars()
            .all(|c| !c.is_control() && !c.is_whitespace() && c != '#')
}

/// `Some(id)` if it is a valid id (see [`is_valid_id`]).
pub(crate) fn valid_id(id: Option<String>) -> Option<String> {
    id.filter(|id| is_valid_id(id))
}

/// Trims text from outside; empty text is no text.
pub(crate) fn non_empty(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_match_profiles() {
        assert_eq!(Channel::Whatsapp.short_name(), "wa");
        assert_eq!(Channel::Telegram.short_name(), "tg");
        assert_eq!(Channel::Web.short_name(), "web");
        for c in [Channel::Whatsapp, Channel::Telegram, Channel::Web] {
            assert_eq!(Channel::from_short_name(c.short_name()), Some(c));
            assert_eq!(ChannelProfile::for_name(c.short_name()), Some(c.profile()));
        }
    }

    #[test]
    fn cards_become_text() {
        assert_eq!(
            location_text(
                52.52,
                13.405,
                Some(" Alexanderplatz "),
                Some("10178 Berlin")
            )
            .as_deref(),
            Some("Location: 52.52, 13.405 — Alexanderplatz, 10178 Berlin")
        );
        assert_eq!(
            location_text(-33.9, 151.2, None, Some("")).as_deref(),
            Some("Location: -33.9, 151.2")
        );
        assert_eq!(location_text(91.0, 0.0, None, None), None);
        assert_eq!(location_text(f64::NAN, 0.0, None, None), None);
        assert_eq!(
            contact_text(
                Some("Ada\nLovelace"),
                &["+44 20 7946 0000"],
                Some("ada@example.org")
            )
            .as_deref(),
            Some("Contact: Ada Lovelace, +44 20 7946 0000, ada@example.org")
        );
        assert_eq!(contact_text(None, &[], Some("x@y.z")), None);
        let long = "x".repeat(1000);
        let capped = contact_text(Some(&long), &[], None).unwrap_or_default();
        assert_eq!(
            capped.chars().count(),
            "Contact: ".len() + CARD_FIELD_CHARS_MAX
        );
    }

    #[test]
    fn body_cap() {
        assert!(check_body_size(WEBHOOK_BODY_BYTES_MAX).is_ok());
        assert_eq!(
            check_body_size(WEBHOOK_BODY_BYTES_MAX + 1),
            Err(BodyTooLarge {
                bytes: WEBHOOK_BODY_BYTES_MAX + 1
            })
        );
    }

    #[test]
    fn ids() {
        assert!(is_valid_id("16505551234"));
        assert!(is_valid_id("US.13491208655302741918"));
        assert!(is_valid_id(
            "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="
        ));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("a b"));
        assert!(!is_valid_id("a#b"));
        assert!(!is_valid_id(&"x".repeat(ID_BYTES_MAX + 1)));
    }

    #[test]
    fn round_trips_as_json() {
        let msg = InboundMessage {
            channel: Channel::Telegram,
            conversation_id: "42".into(),
            external_user_id: "7".into(),
            provider_message_id: "1001".into(),
            message_ref: Some("5".into()),
            text: None,
            button_id: Some("b1".into()),
            replied_to_id: Some("4".into()),
            media: Some(MediaRef {
                provider_media_id: Some("f".into()),
                size_bytes: Some(1234),
                ..MediaRef::of(MediaKind::Image)
            }),
            timestamp: 1_700_000_000,
            display_name: Some("Ada".into()),
            callback_query_id: Some("cb".into()),
            chat: ChatKind::Private,
        };
        let json = serde_json::to_string(&msg).unwrap_or_default();
        assert!(json.contains(r#""channel":"telegram""#));
        let back: InboundMessage = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, msg);
        assert_eq!(msg.conversation_key(), "tg:42");
        assert!(!json.contains("\"chat\""), "private is the default: {json}");
        let group = InboundMessage {
            chat: ChatKind::Group,
            ..msg
        };
        let json = serde_json::to_string(&group).unwrap_or_default();
        assert!(json.contains(r#""chat":"group""#), "{json}");
        let back: InboundMessage = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.chat, ChatKind::Group);
    }
}
