//! Sending to a channel: one trait every channel implements, so the harness can hold an
//! `Arc<dyn ChannelSender>` per channel, plus the receipt, the error and the typing helper.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use crate::{ChannelProfile, InboundMessage};

/// Who a reply goes to, and what the channel needs to know about them to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    /// The id part of the conversation key ([`InboundMessage::conversation_id`]).
    pub conversation_id: String,
    /// When the user last wrote, in epoch seconds: WhatsApp refuses free-form messages more
    /// than 24 hours after it.
    pub last_inbound_at: i64,
}

impl Recipient {
    /// The recipient `conversation_id`, who last wrote at `last_inbound_at` (epoch seconds).
    pub fn new(conversation_id: impl Into<String>, last_inbound_at: i64) -> Self {
        Self {
            conversation_id: conversation_id.into(),
            last_inbound_at,
        }
    }

    /// The sender of `message`, who wrote just now.
    pub fn of(message: &InboundMessage) -> Self {
        Self::new(message.conversation_id.clone(), message.timestamp)
    }
}

/// One button of a sent reply: the opaque id the provider will send back on a click, and its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentButton {
    /// The id, from [`button_id`].
    pub id: String,
    /// The title shown to the user.
    pub title: String,
}

/// What became of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendReceipt {
    /// Sent (or, for the web chat, nothing needed sending).
    Sent {
        /// The provider's ids of the messages sent, in order; the last one carries the buttons.
        message_ids: Vec<String>,
        /// The buttons attached to the last message, id → title.
        buttons: Vec<SentButton>,
    },
    /// Not attempted: the WhatsApp 24-hour customer-service window is closed (the user last
    /// wrote at `last_inbound_at`), so only a template message could reach them.
    OutsideWindow {
        /// When the user last wrote, in epoch seconds.
        last_inbound_at: i64,
    },
}

/// A send that failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The provider asked us to slow down; retry later (after `retry_after` when it says).
    #[error("{channel} rate limit (code {code}): {message}")]
    RateLimited {
        /// The channel's short name.
        channel: &'static str,
        /// The provider's error code.
        code: i64,
        /// The provider's message.
        message: String,
        /// How long the provider asked us to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// The provider refused the request.
    #[error("{channel} API error {code} (HTTP {status}): {message}")]
    Api {
        /// The channel's short name.
        channel: &'static str,
        /// HTTP status of the response.
        status: u16,
        /// The provider's error code.
        code: i64,
        /// The provider's message.
        message: String,
    },
    /// The request did not complete (connection, timeout, unreadable response). The message
    /// never contains the request URL, which may hold a token.
    #[error("{channel} transport error: {message}")]
    Transport {
        /// The channel's short name.
        channel: &'static str,
        /// What went wrong, without the URL.
        message: String,
        /// Whether the request may not have been sent, or timed out.
        retryable: bool,
    },
    /// A part was delivered but could not be recorded as sent ([`PartLedger`]); the reply is
    /// retried, and resumes after the last part that was recorded.
    #[error("recording part {part} of a {channel} reply as sent failed: {message}")]
    Ledger {
        /// The channel's short name.
        channel: &'static str,
        /// Which part (from 0).
        part: usize,
        /// What went wrong.
        message: String,
    },
    /// The caller asked for something the channel cannot express (e.g. a non-numeric
    /// Telegram message id).
    #[error("invalid {channel} request: {message}")]
    Invalid {
        /// The channel's short name.
        channel: &'static str,
        /// What was wrong.
        message: String,
    },
}

impl SendError {
    /// Whether the same send may succeed later: rate limits, provider 5xx, transport failures.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. } => true,
            Self::Api { status, .. } => *status >= 500,
            Self::Transport { retryable, .. } => *retryable,
            Self::Ledger { .. } => true,
            Self::Invalid { .. } => false,
        }
    }

    /// How long the provider asked us to wait before retrying, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Where a reply sent in several parts records each part the provider accepted, so that the
/// same reply sent again (a retried turn) resumes at the first part not yet delivered instead
/// of repeating the others. The parts of one reply are numbered from 0 and the same text always
/// splits into the same parts, so a part's number names it across attempts.
#[async_trait]
pub trait PartLedger: Send + Sync {
    /// The provider's message id of part `part`, when an earlier attempt delivered it.
    async fn delivered(&self, part: usize) -> Result<Option<String>, String>;
    /// Records part `part` as delivered, as the provider's message `message_id`.
    async fn record(&self, part: usize, message_id: &str) -> Result<(), String>;
}

/// A ledger that remembers nothing: every part is sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLedger;

#[async_trait]
impl PartLedger for NoLedger {
    async fn delivered(&self, _part: usize) -> Result<Option<String>, String> {
        Ok(None)
    }

    async fn record(&self, _part: usize, _message_id: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Sends one part of a reply unless `ledger` says an earlier attempt delivered it, and records
/// it once the provider accepted it. Before a part that is sent after another part of the same
/// attempt, waits `gap` (the channel's pacing). Returns the part's message id and whether it
/// was sent now (false: delivered earlier).
pub(crate) async fn send_part<F, Fut>(
    channel: &'static str,
    ledger: &dyn PartLedger,
    part: usize,
    gap: Option<Duration>,
    send: F,
) -> Result<(String, bool), SendError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<String, SendError>>,
{
    let ledger_error = |message: String| SendError::Ledger {
        channel,
        part,
        message,
    };
    if let Some(id) = ledger.delivered(part).await.map_err(ledger_error)? {
        tracing::debug!(part, "part delivered by an earlier attempt; not sent again");
        return Ok((id, false));
    }
    if let Some(gap) = gap.filter(|g| !g.is_zero()) {
        tokio::time::sleep(gap).await;
    }
    let id = send().await?;
    ledger.record(part, &id).await.map_err(ledger_error)?;
    Ok((id, true))
}

/// Sends replies, reactions and typing indicators on one channel.
#[async_trait]
pub trait ChannelSender: Send + Sync {
    /// The channel's limits.
    fn profile(&self) -> ChannelProfile;

    /// Sends `text` (split to the channel's length limit, in order) with `buttons` (titles) on
    /// the last message only. Buttons beyond the profile's count, empty or duplicate titles are
    /// dropped and long titles cut, so an over-long list cannot make the provider reject the
    /// whole reply. Button ids follow [`button_id`].
    async fn send_reply(
        &self,
        to: &Recipient,
        text: &str,
        buttons: &[String],
    ) -> Result<SendReceipt, SendError>;

    /// [`send_reply`](Self::send_reply), skipping the parts `ledger` holds as delivered and
    /// recording each part as the provider accepts it. Channels that send a reply as one
    /// request have nothing to resume: the default sends it whole.
    async fn send_reply_resuming(
        &self,
        to: &Recipient,
        text: &str,
        buttons: &[String],
        ledger: &dyn PartLedger,
    ) -> Result<SendReceipt, SendError> {
        let _ = ledger;
        self.send_reply(to, text, buttons).await
    }

    /// Reacts to the user's message `message_ref` ([`InboundMessage::message_ref`]) with
    /// `emoji`; an empty emoji removes the reaction.
    async fn react(&self, to: &Recipient, message_ref: &str, emoji: &str) -> Result<(), SendError>;

    /// Shows that a reply is being prepared (WhatsApp: marks `message_ref` read with the typing
    /// indicator, and does nothing without it; Telegram: the "typing…" chat action).
    async fn typing(&self, to: &Recipient, message_ref: Option<&str>) -> Result<(), SendError>;

    /// Answers a Telegram button click so the user's client stops spinning; a no-op elsewhere.
    async fn answer_callback(&self, _callback_query_id: &str) -> Result<(), SendError> {
        Ok(())
    }

    /// How often [`with_typing`] repeats [`typing`](Self::typing) while a turn runs, or `None`
    /// when the channel has no indicator.
    fn typing_refresh(&self) -> Option<Duration> {
        None
    }

    /// What to do when a turn starts for `message`: answer its button click (if any) and show
    /// the typing indicator. Both are attempted; the first error is returned for logging.
    async fn start_turn(&self, message: &InboundMessage) -> Result<(), SendError> {
        let answered = match &message.callback_query_id {
            Some(id) => self.answer_callback(id).await,
            None => Ok(()),
        };
        let typing = self
            .typing(&Recipient::of(message), message.message_ref.as_deref())
            .await;
        answered.and(typing)
    }
}

/// Runs `fut` while keeping the channel's typing indicator alive: shows it at once, then again
/// every [`ChannelSender::typing_refresh`] until `fut` completes. Indicator failures are logged
/// and never affect `fut`, which is polled throughout.
pub async fn with_typing<F: Future>(
    sender: &dyn ChannelSender,
    to: &Recipient,
    message_ref: Option<&str>,
    fut: F,
) -> F::Output {
    let Some(every) = sender.typing_refresh() else {
        return fut.await;
    };
    let mut fut = std::pin::pin!(fut);
    loop {
        let tick = async {
            if let Err(e) = sender.typing(to, message_ref).await {
                tracing::debug!(error = %e, "typing indicator not shown");
            }
            tokio::time::sleep(every).await;
        };
        tokio::select! {
            out = &mut fut => return out,
            () = tick => {}
        }
    }
}

/// The opaque id given to the button at `index` of a reply: `b0`, `b1`, `b2`. A click sends it
/// back as [`InboundMessage::button_id`]; [`button_index`] turns it back into the index into
/// the titles of the reply it was on (whose provider id is in [`InboundMessage::replied_to_id`]
/// when the provider says; WhatsApp and Telegram also give the title as the message text).
pub fn button_id(index: usize) -> String {
    format!("b{index}")
}

/// The index a [`button_id`] stands for, if `id` is one.
pub fn button_index(id: &str) -> Option<usize> {
    let digits = id.strip_prefix('b')?;
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The buttons that will actually be sent: trimmed, empty and duplicate titles dropped, titles
/// cut to the profile's length, at most the profile's count; ids by position.
pub(crate) fn normalize_buttons(titles: &[String], profile: &ChannelProfile) -> Vec<SentButton> {
    let mut out: Vec<SentButton> = Vec::new();
    for title in titles {
        if out.len() >= profile.buttons_max {
            break;
        }
        let title: String = title
            .trim()
            .chars()
            .take(profile.button_title_chars_max)
            .collect();
        let title = title.trim_end().to_owned();
        if title.is_empty() || out.iter().any(|b| b.title == title) {
            continue;
        }
        out.push(SentButton {
            id: button_id(out.len()),
            title,
        });
    }
    out
}

/// What a message carrying only buttons says, since both providers require some text.
pub const BUTTONS_ONLY_TEXT: &str = "Please choose:";

/// Now, in epoch seconds.
pub(crate) fn now_epoch_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Turns a reqwest error into a [`SendError::Transport`] without the URL (Telegram's holds the
/// bot token).
pub(crate) fn transport_error(channel: &'static str, error: reqwest::Error) -> SendError {
    let retryable = error.is_timeout() || error.is_connect() || error.is_request();
    let error = error.without_url();
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    SendError::Transport {
        channel,
        message,
        retryable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_ids_round_trip() {
        for i in 0..3 {
            assert_eq!(button_index(&button_id(i)), Some(i));
        }
        assert_eq!(button_index("b"), None);
        assert_eq!(button_index("x1"), None);
        assert_eq!(button_index("b-1"), None);
        assert_eq!(button_index("b99999999999999999999"), None);
    }

    #[test]
    fn buttons_are_capped_unique_and_short() {
        let titles = [
            "Yes".to_owned(),
            "  ".to_owned(),
            "Yes".to_owned(),
            "A very long button title indeed".to_owned(),
            "Later".to_owned(),
            "Never".to_owned(),
        ];
        let b = normalize_buttons(&titles, &ChannelProfile::WHATSAPP);
        let got: Vec<(&str, &str)> = b
            .iter()
            .map(|b| (b.id.as_str(), b.title.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("b0", "Yes"),
                ("b1", "A very long button t"),
                ("b2", "Later")
            ]
        );
    }
}
