//! Sending over the WhatsApp Cloud API (`POST {base}/{phone_number_id}/messages`): text split
//! in order, reply buttons on the last message, reactions, mark-as-read with the typing
//! indicator, and the 24-hour customer-service window.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::ChannelProfile;
use crate::config::{self, ConfigError};
use crate::markup::{self, Document, Flavor};
use crate::secret::Secret;
use crate::sender::{
    BUTTONS_ONLY_TEXT, ChannelSender, NoLedger, PartLedger, Recipient, SendError, SendReceipt,
    SentButton, normalize_buttons, now_epoch_seconds, send_part, transport_error,
};

/// The Graph API version every request is pinned to, so a Meta default change cannot alter
/// payload shapes under us. Bump deliberately, with the webhook fixtures.
pub const GRAPH_API_VERSION: &str = "v26.0";

/// The default API base: the Graph API root with [`GRAPH_API_VERSION`].
pub const WHATSAPP_API_BASE_DEFAULT: &str = "https://graph.facebook.com/v26.0";

/// How long after the user's last message a free-form reply is allowed, in seconds (WhatsApp's
/// customer-service window). Later, only a paid template message can reach the user.
pub const SERVICE_WINDOW_SECS: i64 = 24 * 60 * 60;

/// Longest body of an interactive (reply buttons) message, in characters; the text before it
/// goes out as ordinary text messages.
pub const INTERACTIVE_BODY_CHARS_MAX: usize = 1024;

/// How often the typing indicator is renewed during a long turn: WhatsApp drops it after 25 s.
pub const TYPING_REFRESH_SECS: u64 = 20;

/// Error codes meaning "slow down": throttling (4), account rate limit (80007), throughput
/// (130429), spam rate limit (131048), pair rate limit (131056).
pub const RATE_LIMIT_CODES: [i64; 5] = [4, 80007, 130429, 131048, 131056];

/// The error code for a free-form message sent outside the 24-hour window (re-engagement).
pub const OUTSIDE_WINDOW_CODE: i64 = 131047;

const CHANNEL: &str = "wa";

/// Where and as whom to send.
#[derive(Debug, Clone)]
pub struct WhatsappConfig {
    /// Graph API root including the version, without a trailing slash.
    pub api_base: String,
    /// The business phone number id messages are sent from.
    pub phone_number_id: String,
    /// The access token (never logged).
    pub access_token: Secret,
}

impl WhatsappConfig {
    /// A config for the real Graph API at [`WHATSAPP_API_BASE_DEFAULT`].
    pub fn new(phone_number_id: impl Into<String>, access_token: impl Into<Secret>) -> Self {
        Self {
            api_base: WHATSAPP_API_BASE_DEFAULT.to_owned(),
            phone_number_id: phone_number_id.into(),
            access_token: access_token.into(),
        }
    }

    /// Reads `WHATSAPP_ACCESS_TOKEN`, `WHATSAPP_PHONE_NUMBER_ID` and the optional
    /// `WHATSAPP_API_BASE` through `lookup` (e.g. `|k| std::env::var(k).ok()`).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            api_base: config::base_url(
                config::optional(&lookup, config::ENV_WHATSAPP_API_BASE),
                WHATSAPP_API_BASE_DEFAULT,
            ),
            phone_number_id: config::required(&lookup, config::ENV_WHATSAPP_PHONE_NUMBER_ID)?,
            access_token: Secret::new(config::required(
                &lookup,
                config::ENV_WHATSAPP_ACCESS_TOKEN,
            )?),
        })
    }
}

/// Sends to WhatsApp users through the Cloud API.
#[derive(Debug, Clone)]
pub struct WhatsappSender {
    http: reqwest::Client,
    messages_url: String,
    access_token: Secret,
    part_gap: Duration,
}

/// The pause between two parts of one reply, in milliseconds. Meta limits messages to one
/// person ("pair rate", error 131056) to short bursts; a second between parts keeps a
/// five-part reply inside the burst and in order on the phone.
pub const PART_GAP_MILLIS: u64 = 1_000;

impl WhatsappSender {
    /// A sender for `config`, over `http` (see [`crate::http_client`]).
    pub fn new(config: WhatsappConfig, http: reqwest::Client) -> Self {
        let base = config.api_base.trim_end_matches('/');
        Self {
            http,
            messages_url: format!("{base}/{}/messages", config.phone_number_id),
            access_token: config.access_token,
            part_gap: Duration::from_millis(PART_GAP_MILLIS),
        }
    }

    /// This sender pausing `gap` between the parts of a reply instead of [`PART_GAP_MILLIS`]
    /// (tests against a local fake use zero).
    pub fn with_part_gap(mut self, gap: Duration) -> Self {
        self.part_gap = gap;
        self
    }

    /// POSTs one request to the messages endpoint; the parsed response, or the classified error.
    async fn post(&self, body: &Value) -> Result<Value, SendError> {
        let response = self
            .http
            .post(&self.messages_url)
            .bearer_auth(self.access_token.expose())
            .json(body)
            .send()
            .await
            .map_err(|e| transport_error(CHANNEL, e))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| transport_error(CHANNEL, e))?;
        let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            Ok(json)
        } else {
            Err(classify_error(status.as_u16(), &json))
        }
    }

    /// Sends one message and returns its id (empty if the response did not say).
    async fn send_message(&self, body: &Value) -> Result<String, SendError> {
        let response = self.post(body).await?;
        Ok(response
            .pointer("/messages/0/id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned())
    }
}

/// The fields every outgoing message starts with, addressed to `to`: by phone number as `to`, or by
/// business-scoped user id as `recipient` when the phone number is withheld.
fn envelope(to: &Recipient, kind: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("messaging_product".into(), "whatsapp".into());
    m.insert("recipient_type".into(), "individual".into());
    let id = to.conversation_id.as_str();
    let field = if id.bytes().all(|b| b.is_ascii_digit()) {
        "to"
    } else {
        "recipient"
    };
    m.insert(field.into(), id.into());
    m.insert("type".into(), kind.into());
    m
}

/// A text message; `preview` asks WhatsApp to show a preview of the first link (set when a
/// link stands on a line of its own, as the prompt promises the model).
fn text_message(to: &Recipient, text: &str, preview: bool) -> Value {
    let mut m = envelope(to, "text");
    m.insert(
        "text".into(),
        json!({ "body": text, "preview_url": preview }),
    );
    Value::Object(m)
}

/// An interactive message with reply buttons under `body`.
fn buttons_message(to: &Recipient, body: &str, buttons: &[SentButton]) -> Value {
    let buttons: Vec<Value> = buttons
        .iter()
        .map(|b| json!({ "type": "reply", "reply": { "id": b.id, "title": b.title } }))
        .collect();
    let mut m = envelope(to, "interactive");
    m.insert(
        "interactive".into(),
        json!({ "type": "button", "body": { "text": body }, "action": { "buttons": buttons } }),
    );
    Value::Object(m)
}

/// The provider's error response → a typed error; rate limits are retryable.
fn classify_error(status: u16, json: &Value) -> SendError {
    let error = json.get("error");
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64)
        .unwrap_or(i64::from(status));
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("no error message")
        .to_owned();
    if RATE_LIMIT_CODES.contains(&code) || status == 429 {
        SendError::RateLimited {
            channel: CHANNEL,
            code,
            message,
            retry_after: None,
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

/// Splits the last part so the message carrying the buttons fits an interactive body:
/// returns (the parts to send before it as text, the body).
fn split_for_buttons(last: &Document, text_chars_max: usize) -> (Vec<Document>, Document) {
    if markup::cost(last, Flavor::Whatsapp) <= INTERACTIVE_BODY_CHARS_MAX {
        return (Vec::new(), last.clone());
    }
    let mut pieces = markup::split(last, Flavor::Whatsapp, INTERACTIVE_BODY_CHARS_MAX);
    let Some(body) = pieces.pop() else {
        return (Vec::new(), markup::parse(BUTTONS_ONLY_TEXT));
    };
    // The pieces before the body came from one part, so together they fit one message again
    // (unless the cut added line breaks past the limit: then they go one by one).
    let head = Document {
        lines: pieces.iter().flat_map(|p| p.lines.clone()).collect(),
    };
    if head.lines.is_empty() {
        (Vec::new(), body)
    } else if markup::cost(&head, Flavor::Whatsapp) <= text_chars_max {
        (vec![head], body)
    } else {
        (pieces, body)
    }
}

#[async_trait]
impl ChannelSender for WhatsappSender {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::WHATSAPP
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
        let age_secs = now_epoch_seconds().saturating_sub(to.last_inbound_at);
        if age_secs > SERVICE_WINDOW_SECS {
            tracing::warn!(
                conversation = %to.conversation_id,
                last_inbound_at = to.last_inbound_at,
                age_secs,
                "whatsapp reply not sent: the 24-hour customer-service window is closed"
            );
            return Ok(SendReceipt::OutsideWindow {
                last_inbound_at: to.last_inbound_at,
            });
        }
        let profile = self.profile();
        let buttons = normalize_buttons(buttons, &profile);
        // The model's markup, parsed once and cut into parts that are each valid on their own.
        let mut parts = markup::split(
            &markup::parse(text),
            Flavor::Whatsapp,
            profile.text_chars_max,
        );
        let mut body = None;
        if !buttons.is_empty() {
            let last = parts
                .pop()
                .unwrap_or_else(|| markup::parse(BUTTONS_ONLY_TEXT));
            let (head, tail) = split_for_buttons(&last, profile.text_chars_max);
            parts.extend(head);
            body = Some(tail);
        }

        let mut message_ids = Vec::new();
        let mut requests: Vec<Value> = parts
            .iter()
            .map(|p| text_message(to, &markup::render_whatsapp(p), p.has_lone_link()))
            .collect();
        if let Some(body) = &body {
            requests.push(buttons_message(
                to,
                &markup::render_whatsapp(body),
                &buttons,
            ));
        }
        let mut sent_now = false;
        for (part, request) in requests.iter().enumerate() {
            let gap = sent_now.then_some(self.part_gap);
            let sent = send_part(CHANNEL, ledger, part, gap, move || {
                self.send_message(request)
            })
            .await;
            match sent {
                Ok((id, now)) => {
                    sent_now |= now;
                    message_ids.push(id);
                }
                Err(SendError::Api { code, .. })
                    if code == OUTSIDE_WINDOW_CODE && message_ids.is_empty() =>
                {
                    tracing::warn!(
                        conversation = %to.conversation_id,
                        last_inbound_at = to.last_inbound_at,
                        "whatsapp reply refused: outside the 24-hour customer-service window"
                    );
                    return Ok(SendReceipt::OutsideWindow {
                        last_inbound_at: to.last_inbound_at,
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(SendReceipt::Sent {
            message_ids,
            buttons,
        })
    }

    async fn react(&self, to: &Recipient, message_ref: &str, emoji: &str) -> Result<(), SendError> {
        let mut m = envelope(to, "reaction");
        m.insert(
            "reaction".into(),
            json!({ "message_id": message_ref, "emoji": emoji }),
        );
        self.post(&Value::Object(m)).await.map(drop)
    }

    async fn typing(&self, _to: &Recipient, message_ref: Option<&str>) -> Result<(), SendError> {
        let Some(message_id) = message_ref else {
            return Ok(());
        };
        let body = json!({
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": message_id,
            "typing_indicator": { "type": "text" },
        });
        self.post(&body).await.map(drop)
    }

    fn typing_refresh(&self) -> Option<Duration> {
        Some(Duration::from_secs(TYPING_REFRESH_SECS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_base_is_pinned_to_the_version() {
        assert!(WHATSAPP_API_BASE_DEFAULT.ends_with(GRAPH_API_VERSION));
    }

    #[test]
    fn addressing_by_phone_or_bsuid() {
        let phone = envelope(&Recipient::new("16505551234", 0), "text");
        assert_eq!(phone.get("to"), Some(&Value::from("16505551234")));
        let bsuid = envelope(&Recipient::new("US.13491208655302741918", 0), "text");
        assert_eq!(
            bsuid.get("recipient"),
            Some(&Value::from("US.13491208655302741918"))
        );
        assert!(bsuid.get("to").is_none());
    }

    #[test]
    fn errors_are_classified() {
        let rate = classify_error(400, &json!({"error": {"code": 131056, "message": "pair"}}));
        assert!(rate.is_retryable());
        assert!(matches!(rate, SendError::RateLimited { code: 131056, .. }));
        let bad = classify_error(
            400,
            &json!({"error": {"code": 100, "message": "bad param"}}),
        );
        assert!(!bad.is_retryable());
        assert!(matches!(bad, SendError::Api { code: 100, .. }));
        let down = classify_error(503, &Value::Null);
        assert!(down.is_retryable());
    }

    #[test]
    fn long_last_chunk_is_split_for_the_button_body() {
        let para = "word ".repeat(150); // 750 characters
        let last = markup::parse(&format!("{}\n\n*{}*", para.trim(), para.trim()));
        let (head, body) = split_for_buttons(&last, 4096);
        let head: Vec<String> = head.iter().map(markup::render_whatsapp).collect();
        assert_eq!(head, [para.trim()]);
        assert_eq!(markup::render_whatsapp(&body), format!("*{}*", para.trim()));
        let (head, body) = split_for_buttons(&markup::parse("short"), 4096);
        assert!(head.is_empty());
        assert_eq!(markup::render_whatsapp(&body), "short");
    }

    #[test]
    fn config_from_lookup() {
        let env = |k: &str| match k {
            "WHATSAPP_ACCESS_TOKEN" => Some("EAAG-xyzzy".to_owned()),
            "WHATSAPP_PHONE_NUMBER_ID" => Some("123".to_owned()),
            "WHATSAPP_API_BASE" => Some("http://127.0.0.1:9/v1/".to_owned()),
            _ => None,
        };
        let c = WhatsappConfig::from_lookup(env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.api_base, "http://127.0.0.1:9/v1");
        assert_eq!(c.phone_number_id, "123");
        assert!(!format!("{c:?}").contains("xyzzy"));
        let missing = WhatsappConfig::from_lookup(|_| None);
        assert_eq!(
            missing.err(),
            Some(ConfigError::Missing("WHATSAPP_PHONE_NUMBER_ID"))
        );
    }
}
