//! Sending over the Telegram Bot API (`POST {base}/bot{token}/{method}`): text split in order,
//! an inline keyboard on the last message, reactions, the typing chat action and answering
//! button clicks. The token is part of the URL, so no URL ever reaches an error or a log.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::ChannelProfile;
use crate::config::{self, ConfigError};
use crate::markup::{self, Flavor};
use crate::secret::Secret;
use crate::sender::{
    BUTTONS_ONLY_TEXT, ChannelSender, NoLedger, PartLedger, Recipient, SendError, SendReceipt,
    SentButton, normalize_buttons, send_part, transport_error,
};

/// The default API base.
pub const TELEGRAM_API_BASE_DEFAULT: &str = "https://api.telegram.org";

/// Longest `callback_data` of an inline button, in bytes (a Bot API limit).
pub const CALLBACK_DATA_BYTES_MAX: usize = 64;

/// How often the "typing…" action is repeated during a long turn: Telegram shows it for 5 s.
pub const TYPING_REFRESH_SECS: u64 = 4;

/// Longest message text, in UTF-16 code units after entities are parsed: Telegram counts
/// those, so characters outside the Basic Multilingual Plane (most emoji) count twice. Parts
/// are measured on their plain-text form, which is never shorter than what the HTML shows, so a
/// part fits whether it goes out formatted or as the plain fallback.
const TEXT_UTF16_MAX: usize = 4096;

/// Telegram's answer to HTML it cannot read (`400 Bad Request: can't parse entities: …`): the
/// part is sent again as plain text.
const PARSE_ENTITIES_ERROR: &str = "can't parse entities";

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

/// Whether Telegram refused a message because it could not parse its HTML.
fn is_parse_error(e: &SendError) -> bool {
    matches!(e, SendError::Api { status: 400, message, .. }
        if message.to_ascii_lowercase().contains(PARSE_ENTITIES_ERROR))
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
        // The model's markup, parsed once and cut into parts that are each valid on their own.
        let mut parts = markup::split(
            &markup::parse(text),
            Flavor::TelegramHtml,
            profile.text_chars_max.min(TEXT_UTF16_MAX),
        );
        if parts.is_empty() && !buttons.is_empty() {
            parts.push(markup::parse(BUTTONS_ONLY_TEXT));
        }
        let last = parts.len().saturating_sub(1);
        let mut message_ids = Vec::with_capacity(parts.len());
        let mut sent_now = false;
        for (i, part) in parts.iter().enumerate() {
            let mut html = json!({
                "chat_id": chat_id(to),
                "text": markup::render_telegram_html(part),
                "parse_mode": "HTML",
            });
            let mut plain = json!({ "chat_id": chat_id(to), "text": markup::render_plain(part) });
            if i == last && !buttons.is_empty() {
                for body in [&mut html, &mut plain] {
                    if let Some(m) = body.as_object_mut() {
                        m.insert("reply_markup".into(), keyboard(&buttons));
                    }
                }
            }
            let gap = sent_now.then_some(self.part_gap);
            let (html, plain) = (&html, &plain);
            let (id, now) = send_part(CHANNEL, ledger, i, gap, move || async move {
                let result = match self.call("sendMessage", html).await {
                    Err(e) if is_parse_error(&e) => {
                        tracing::warn!(error = %e, part = i, "telegram could not parse the formatted part; sent as plain text");
                        self.call("sendMessage", plain).await?
                    }
                    other => other?,
                };
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
        let pieces: Vec<String> =
            markup::split(&markup::parse(&text), Flavor::TelegramHtml, TEXT_UTF16_MAX)
                .iter()
                .map(markup::render_telegram_html)
                .collect();
        assert!(pieces.len() >= 2);
        assert!(
            pieces
                .iter()
                .all(|p| p.encode_utf16().count() <= TEXT_UTF16_MAX)
        );
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn parse_errors_are_told_apart() {
        let parse = classify_error(
            400,
            &json!({"ok": false, "error_code": 400,
                    "description": "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 3"}),
        );
        assert!(is_parse_error(&parse));
        let other = classify_error(
            400,
            &json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}),
        );
        assert!(!is_parse_error(&other));
    }

    #[test]
    fn chat_ids() {
        assert_eq!(chat_id(&Recipient::new("-100123", 0)), json!(-100_123));
        assert_eq!(chat_id(&Recipient::new("@news", 0)), json!("@news"));
    }

    #[test]
    fn debug_hides_the_token() {
        let s = TelegramSender::new(
            TelegramConfig::new("123:SECRET"),
            steward_net::client_builder()
                .build()
                .expect("an HTTP client"),
        );
        assert!(!format!("{s:?}").contains("SECRET"));
    }
}
