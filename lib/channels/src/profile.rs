//! What a channel can show: the limits reply shaping enforces before anything is sent, so a
//! creative model can never produce a message the provider would reject.

/// One channel's limits and capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelProfile {
    /// Short channel name (`wa`, `tg`, `web`), as used in conversation keys.
    pub name: &'static str,
    /// Longest text of one message, in characters; longer replies are split.
    pub text_chars_max: usize,
    /// Most messages one reply may be split into; text beyond is cut with a marker.
    pub chunks_max: usize,
    /// Most quick-reply buttons on one message (0: the channel shows none).
    pub buttons_max: usize,
    /// Longest button title, in characters.
    pub button_title_chars_max: usize,
    /// Whether the assistant can react to the user's message with an emoji.
    pub reactions: bool,
}

impl ChannelProfile {
    /// WhatsApp Cloud API: 4,096-character texts; interactive reply buttons: at most 3, titles
    /// at most 20 characters; reactions supported.
    pub const WHATSAPP: Self = Self {
        name: "wa",
        text_chars_max: 4096,
        chunks_max: 5,
        buttons_max: 3,
        button_title_chars_max: 20,
        reactions: true,
    };

    /// Telegram Bot API: 4,096-character texts; inline keyboard buttons (we keep 3 short ones
    /// so the same prompt works everywhere); `setMessageReaction` supported.
    pub const TELEGRAM: Self = Self {
        name: "tg",
        text_chars_max: 4096,
        chunks_max: 5,
        buttons_max: 3,
        button_title_chars_max: 20,
        reactions: true,
    };

    /// The web chat: one long message is fine; buttons render as chips; no reactions.
    pub const WEB: Self = Self {
        name: "web",
        text_chars_max: 20_000,
        chunks_max: 1,
        buttons_max: 3,
        button_title_chars_max: 20,
        reactions: false,
    };

    /// The profile for a short channel name, if known.
    pub fn for_name(name: &str) -> Option<Self> {
        [Self::WHATSAPP, Self::TELEGRAM, Self::WEB]
            .into_iter()
            .find(|p| p.name == name)
    }
}
