//! Sending over the Telegram Bot API (`POST {base}/bot{token}/{method}`): text split in order,
//! an inline keyboard on the last message, reactions, the typing chat action and answering
//! button clicks. The token is part of the URL, so no URL ever reaches an error or a log.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::config::{self, ConfigError};
use crate::secret::Secret;
use crate::sender::{
    BUTTONS_ONLY_TEXT, ChannelSender, NoLedger, PartLedger, Recipient, SendError, SendReceipt,
    SentButton, normalize_buttons, send_part, transport_error,
};
use crate::{ChannelProfile, split_text};

/// The default API base.
pub const TELEGRAM_API_BASE_DEFAULT: &str = "https://api.telegram.org";

/// Longest `callback_data` of an inline button, in bytes (a Bot API limit).
pub const CALLBACK_DATA_BYTES_MAX: usize = 64;

/// How often the "typing…" action is repeated during a long turn: Telegram shows it for 5 s.
pub const TYPING_REFRESH_SECS: u64 = 4;

/// Longest message text, in UTF-16 code units: Telegram counts those, so characters outside
/// the Basic Multilingual Plane (most emoji) count twice.
const TEXT_UTF16_MAX: usize = 4096;

const CHANNEL: &str = "tg";

/// Which bot, and where its API is.
#[derive(Debug, Clone)]
pub struct TelegramConfig {
    /// Bot API root, without a trailing slash.
    pub api_base: String,
    /// The bot token (never logged; it is in every request path).
    pub bot_token: Secret,
}

impl TelegramConfig {
    /// A config for the real Bot API at [`TELEGRAM_API_BASE_DEFAULT`].
    pub fn new(bot_token: impl Into<Secret>) -> Self {
        Self {
            api_base: TELEGRAM_API_BASE_DEFAULT.to_owned(),
            bot_token: bot_token.into(),
        }
    }

    /// Reads `TELEGRAM_BOT_TOKEN` and the optional `TELEGRAM_API_BASE` through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            api_base: config::base_url(
                config::optional(&lookup, config::ENV_TELEGRAM_API_BASE),
                TELEGRAM_API_BASE_DEFAULT,
            ),
            bot_token: Secret::new(config::required(&lookup, config::ENV_TELEGRAM_BOT_TOKEN)?),
        })
    }
}

/// Sends to Telegram chats through the Bot API.
#[derive(Clone)]
pub struct TelegramSender {
    http: reqwest::Client,
    api_base: String,
    bot_token: Secret,
    part_gap: Duration,
}

/// The pause between two parts of one reply, in milliseconds: Telegram asks bots to send
/// about one message per second to one chat, and answers faster bursts with 429.
pub const PART_GAP_MILLIS: u64 = 1_000;

impl std::fmt::Debug for TelegramSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramSender")
            .field("api_base", &self.api_base)
            .finish_non_exhaustive()
    }
}

impl TelegramSender {
    /// A sender for `config`, over `http` (see [`crate::http_client`]).
    pub fn new(config: TelegramConfig, http: reqwest::Client) -> Self {
        Self {
            http,
            api_base: config.api_base.trim_end_matches('/').to_owned(),
            bot_token: config.bot_token,
            part_gap: Duration::from_millis(PART_GAP_MILLIS),
        }
    }

    /// This sender pausing `gap` between the parts of a reply instead of [`PART_GAP_MILLIS`]
    /// (tests against a local fake use zero).
    pub fn with_part_gap(mut self, gap: Duration) -> Self {
        self.part_gap = gap;
        self
    }

    /// Calls one Bot API method; its `result`, or the classified error.
    async fn call(&self, method: &str, body: &Value) -> Result<Value, SendError> {
        let url = format!("{}/bot{}/{method}", self.api_base, self.bot_token.expose());
        let response = self
            .http
            .post(url)
            .json(body)
            .send()
            .await
            .map_err(|e| transport_error(CHANNEL, e))?;
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| transport_error(CHANNEL, e))?;
        let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if json.get("ok").and_then(Value::as_bool) == Some(true) {
            Ok(json.get("result").cloned().unwrap_or(Value::Null))
        } else {
            Err(classify_error(status, &json))
        }
    }
}

/// A chat id as Telegram wants it: a number, or a `@channel` name as text.
fn chat_id(to: &Recipient) -> Value {
    to.conversation_id
        .parse::<i64>()
        .map_or_else(|_| Value::from(to.conversation_id.as_str()), Value::from)
}

/// A failed call → a typed error; 429 carries `parameters.retry_after`.
fn classify_error(status: u16, json: &Value) -> SendError {
    let code = json
        .get("error_code")
        .and_then(Value::as_i64)
        .unwrap_or(i64::from(status));
    let message = json
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("no description")
        .to_owned();
    if code == 429 || status == 429 {
        let retry_after = json
            .pointer("/parameters/retry_after")
            .and_then(Value::as_u64)
            .map(Duration::from_secs);
        SendError::RateLimited {
            channel: CHANNEL,
            code,
            message,
            retry_after,
        }
    } else {
        SendError::Api {
            channel: CHANNEL,
            status,
            code,
            message,
        }
    }
}

/// Pieces of `text` that Telegram accepts: the profile's character split, with any piece
/// still too long in UTF-16 split again at half the length (at most 2 units per character).
fn split_for_telegram(text: &str, chars_max: usize) -> Vec<String> {
    split_text(text, chars_max)
        .into_iter()
        .flat_map(|piece| {
            if piece.encode_utf16().count() <= TEXT_UTF16_MAX {
                vec![piece]
            } else {
                split_text(&piece, TEXT_UTF16_MAX / 2)
            }
        })
        .collect()
}

/// The inline keyboard: one button per row, so 20-character titles stay readable on a phone.
fn keyboard(buttons: &[SentButton]) -> Value {
    let rows: Vec<Value> = buttons
        .iter()
        .filter(|b| b.id.len() <= CALLBACK_DATA_BYTES_MAX)
        .map(|b| json!([{ "text": b.title, "callback_data": b.id }]))
        .collect();
    json!({ "inline_keyboard": rows })
}

#[async_trait]
impl ChannelSender for TelegramSender {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::TELEGRAM
    }

    async fn send_reply(
        &self,
        to: &Recipient,
        text: &str,
        buttons: &[String],
    ) -> Result<SendReceipt, SendError> {
        self.send_reply_resuming(to, text, buttons, &NoLedger).await
    }

    async fn send_reply_resuming(
        &self,
        to: &Recipient,
        text: &str,
        buttons: &[String],
        ledger: &dyn PartLedger,
    ) -> Result<SendReceipt, SendError> {
        let profile = self.profile();
        let buttons = normalize_buttons(buttons, &profile);
        let mut chunks = split_for_telegram(text, profile.text_chars_max);
        if chunks.is_empty() && !buttons.is_empty() {
            chunks.push(BUTTONS_ONLY_TEXT.to_owned());
        }
        let last = chunks.len().saturating_sub(1);
        let mut message_ids = Vec::with_capacity(chunks.len());
        let mut sent_now = false;
        for (i, chunk) in chunks.iter().enumerate() {
            let mut body = json!({ "chat_id": chat_id(to), "text": chunk });
            if i == last
                && !buttons.is_empty()
                && let Some(m) = body.as_object_mut()
            {
                m.insert("reply_markup".into(), keyboard(&buttons));
            }
            let gap = sent_now.then_some(self.part_gap);
            let body = &body;
            let (id, now) = send_part(CHANNEL, ledger, i, gap, move || async move {
                let result = self.call("sendMessage", body).await?;
                Ok(result
                    .get("message_id")
                    .and_then(Value::as_i64)
                    .map(|id| id.to_string())
                    .unwrap_or_default())
            })
            .await?;
            sent_now |= now;
            message_ids.push(id);
        }
        Ok(SendReceipt::Sent {
            message_ids,
            buttons,
        })
    }

    async fn react(&self, to: &Recipient, message_ref: &str, emoji: &str) -> Result<(), SendError> {
        let message_id: i64 = message_ref.parse().map_err(|_| SendError::Invalid {
            channel: CHANNEL,
            message: "a Telegram message id is a number".to_owned(),
        })?;
        let reaction = if emoji.is_empty() {
            json!([])
        } else {
            json!([{ "type": "emoji", "emoji": emoji }])
        };
        let body =
            json!({ "chat_id": chat_id(to), "message_id": message_id, "reaction": reaction });
        self.call("setMessageReaction", &body).await.map(drop)
    }

    async fn typing(&self, to: &Recipient, _message_ref: Option<&str>) -> Result<(), SendError> {
        let body = json!({ "chat_id": chat_id(to), "action": "typing" });
        self.call("sendChatAction", &body).await.map(drop)
    }

    async fn answer_callback(&self, callback_query_id: &str) -> Result<(), SendError> {
        let body = json!({ "callback_query_id": callback_query_id });
        self.call("answerCallbackQuery", &body).await.map(drop)
    }

    fn typing_refresh(&self) -> Option<Duration> {
        Some(Duration::from_secs(TYPING_REFRESH_SECS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_carries_the_delay() {
        let e = classify_error(
            429,
            &json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 7",
                    "parameters": {"retry_after": 7}}),
        );
        assert!(e.is_retryable());
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
        let bad = classify_error(
            400,
            &json!({"ok": false, "error_code": 400, "description": "Bad Request"}),
        );
        assert!(!bad.is_retryable());
    }

    #[test]
    fn emoji_heavy_text_fits_in_utf16() {
        let text = "😀".repeat(4096);
        let pieces = split_for_telegram(&text, 4096);
        assert!(pieces.len() >= 2);
        assert!(
            pieces
                .iter()
                .all(|p| p.encode_utf16().count() <= TEXT_UTF16_MAX)
        );
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn chat_ids() {
        assert_eq!(chat_id(&Recipient::new("-100123", 0)), json!(-100_123));
        assert_eq!(chat_id(&Recipient::new("@news", 0)), json!("@news"));
    }

    #[test]
    fn debug_hides_the_token() {
        let s = TelegramSender::new(TelegramConfig::new("123:SECRET"), reqwest::Client::new());
        assert!(!format!("{s:?}").contains("SECRET"));
    }
}
