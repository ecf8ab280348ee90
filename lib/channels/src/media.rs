//! Attachments: Steward reads only text and buttons for now, so a message with an image, a
//! file, a voice note, a location … gets a clear short reply instead of silence.

use crate::InboundMessage;

/// The reply to a message Steward cannot read because it is an attachment.
pub const MEDIA_NOT_UNDERSTOOD_REPLY: &str =
    "I can only read text and buttons for now — could you type that?";

/// The reply for `message` if it carried an attachment (even with a caption, since the
/// attachment itself would otherwise go unanswered); `None` for text and button messages.
pub fn media_reply(message: &InboundMessage) -> Option<&'static str> {
    message.media.as_ref().map(|_| MEDIA_NOT_UNDERSTOOD_REPLY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Channel, MediaKind, MediaRef};

    #[test]
    fn only_media_gets_the_reply() {
        let mut m = InboundMessage {
            channel: Channel::Whatsapp,
            conversation_id: "1".into(),
            external_user_id: "1".into(),
            provider_message_id: "m".into(),
            message_ref: None,
            text: Some("hi".into()),
            button_id: None,
            replied_to_id: None,
            media: None,
            timestamp: 0,
            display_name: None,
            callback_query_id: None,
            chat: crate::inbound::ChatKind::Private,
        };
        assert_eq!(media_reply(&m), None);
        m.media = Some(MediaRef {
            kind: MediaKind::Image,
            provider_media_id: Some("x".into()),
            mime: None,
        });
        assert_eq!(media_reply(&m), Some(MEDIA_NOT_UNDERSTOOD_REPLY));
        assert!(MEDIA_NOT_UNDERSTOOD_REPLY.chars().count() < 80);
    }
}
