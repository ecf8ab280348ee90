//! The people: each conversation is one Telegram user who sends a message per turn (each asking
//! for one event, named by a marker), waits for the reply, and goes on. Telegram's side is
//! faulty as in production: a share of webhook deliveries arrives twice (some soon, some after
//! SQS's deduplication window), and a share of turns are double texts (a second message within
//! 200 ms, before any reply).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::json;
use tokio::task::JoinSet;

use crate::apigw::Api;
use crate::fakes::FakeTelegram;

/// The secret the stage's webhook is configured with (a test value).
pub const TELEGRAM_SECRET: &str = "steward-stage-telegram-secret-0123456789";

/// How long Telegram keeps retrying one update after a non-2xx answer or no answer. Telegram
/// holds an undelivered update for up to 24 hours; ten minutes is far longer than any restart
/// here takes. (Five tries over three seconds, as the stage first had it, gave updates up while
/// `steward serve` restarted after kills a second apart in a 200-conversation run, and the
/// people then waited out the reply timeout for messages that had never been accepted.)
const DELIVERY_RETRY_SPAN: Duration = Duration::from_secs(600);

/// Telegram's first retry pause after a non-2xx answer (doubling after each).
const DELIVERY_RETRY_PAUSE: Duration = Duration::from_millis(200);

/// The longest pause between two retries of one update.
const DELIVERY_RETRY_PAUSE_MAX: Duration = Duration::from_secs(5);

/// The longest gap between the two messages of a double text.
const DOUBLE_TEXT_GAP_MAX_MS: u64 = 200;

/// How long after the first delivery an early duplicate arrives, at most.
const EARLY_DUPLICATE_DELAY_MAX_MS: u64 = 1_000;

/// The share of duplicates that arrive after the SQS deduplication window.
const LATE_DUPLICATE_SHARE: f64 = 1.0 / 3.0;

/// What the scenario does.
#[derive(Debug, Clone)]
pub struct Params {
    /// Conversations at once.
    pub conversations: usize,
    /// Turns per conversation.
    pub turns: usize,
    /// Share of webhook deliveries sent twice.
    pub duplicate_rate: f64,
    /// Share of turns that are double texts.
    pub double_text_rate: f64,
    /// The SQS deduplication window the stage's moto applies.
    pub dedupe_window: Duration,
    /// How long a person waits for a reply before counting the message as lost.
    pub reply_timeout: Duration,
    /// The run's seed.
    pub seed: u64,
    /// With `--lockstep`: the rounds every person waits at before each turn and after the last.
    pub rounds: Option<Arc<crate::load::Rounds>>,
}

/// One message a person sent.
#[derive(Debug, Clone)]
pub struct Message {
    /// Its marker.
    pub marker: String,
    /// The conversation (Telegram chat).
    pub chat: i64,
    /// Its position in the conversation.
    pub position: usize,
    /// When its first webhook delivery started.
    pub sent_at: Instant,
}

/// Counters of the people's side.
#[derive(Default)]
pub struct PeopleStats {
    /// Webhook deliveries (with retries and duplicates).
    pub deliveries: AtomicU64,
    /// Deliveries answered with anything but 200 (Telegram retried them).
    pub non_2xx: AtomicU64,
    /// Updates Telegram gave up on after retrying them for [`DELIVERY_RETRY_SPAN`].
    pub given_up: AtomicU64,
    /// Duplicates sent within the deduplication window.
    pub early_duplicates: AtomicU64,
    /// Duplicates sent after it.
    pub late_duplicates: AtomicU64,
    /// Double texts.
    pub double_texts: AtomicU64,
    /// Turns whose reply did not come within the timeout.
    pub timeouts: AtomicU64,
}

/// The Telegram chat id of conversation `i`.
pub fn chat_of(i: usize) -> i64 {
    7_000_000 + i64::try_from(i).unwrap_or(0)
}

/// Runs every conversation; returns the messages sent (in order per conversation) once every
/// person has their replies (or gave up) and every duplicate has been delivered. A person's task
/// that fails is an error: its messages would otherwise go uncounted.
pub async fn run(
    params: &Params,
    api: Arc<Api>,
    telegram: Arc<FakeTelegram>,
    stats: Arc<PeopleStats>,
) -> anyhow::Result<Vec<Message>> {
    let mut people = JoinSet::new();
    for i in 0..params.conversations {
        let (params, api, telegram, stats) =
            (params.clone(), api.clone(), telegram.clone(), stats.clone());
        people.spawn(async move { person(i, &params, api, telegram, stats).await });
    }
    let mut all = Vec::new();
    while let Some(done) = people.join_next().await {
        all.extend(done.map_err(|e| anyhow::anyhow!("a conversation's task failed: {e}"))?);
    }
    Ok(all)
}

async fn person(
    i: usize,
    params: &Params,
    api: Arc<Api>,
    telegram: Arc<FakeTelegram>,
    stats: Arc<PeopleStats>,
) -> Vec<Message> {
    let mut rng =
        StdRng::seed_from_u64(params.seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let chat = chat_of(i);
    let mut duplicates = JoinSet::new();
    let mut sent = Vec::new();
    let mut replies = telegram.subscribe();
    for t in 0..params.turns {
        if let Some(rounds) = &params.rounds {
            rounds.wait().await;
        }
        let double = rng.random_bool(params.double_text_rate);
        let parts = if double { 2 } else { 1 };
        let mut turn = Vec::new();
        for part in 0..parts {
            if part > 0 {
                stats.double_texts.fetch_add(1, Ordering::Relaxed);
                let gap = rng.random_range(0..DOUBLE_TEXT_GAP_MAX_MS);
                tokio::time::sleep(Duration::from_millis(gap)).await;
            }
            let marker = format!("stg-{i:04}-{t:02}-{}", ["a", "b"][part]);
            let update_id = i64::try_from(i * 1_000 + t * 10 + part).unwrap_or(0) + 1;
            let update = json!({
                "update_id": update_id,
                "message": {
                    "message_id": update_id,
                    "from": {"id": chat, "is_bot": false, "first_name": format!("Person {i}")},
                    "chat": {"id": chat, "type": "private", "first_name": format!("Person {i}")},
                    "date": unix_now(),
                    "text": format!("Please create the event {marker} on 14 September 2030"),
                },
            })
            .to_string();
            let message = Message {
                marker,
                chat,
                position: sent.len(),
                sent_at: Instant::now(),
            };
            deliver(&api, &update, chat, &stats).await;
            if rng.random_bool(params.duplicate_rate) {
                let late = rng.random_bool(LATE_DUPLICATE_SHARE);
                let delay = if late {
                    stats.late_duplicates.fetch_add(1, Ordering::Relaxed);
                    params.dedupe_window + Duration::from_secs(1)
                } else {
                    stats.early_duplicates.fetch_add(1, Ordering::Relaxed);
                    Duration::from_millis(rng.random_range(0..EARLY_DUPLICATE_DELAY_MAX_MS))
                };
                let (api, stats) = (api.clone(), stats.clone());
                duplicates.spawn(async move {
                    tokio::time::sleep(delay).await;
                    deliver(&api, &update, chat, &stats).await;
                });
            }
            turn.push(message.marker.clone());
            sent.push(message);
        }
        let deadline = Instant::now() + params.reply_timeout;
        loop {
            let replied: Vec<String> = telegram
                .sent_to(chat)
                .iter()
                .flat_map(|s| crate::fakes::markers(&s.text))
                .collect();
            if turn.iter().all(|m| replied.contains(m)) {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                stats.timeouts.fetch_add(1, Ordering::Relaxed);
                break;
            }
            let _ = tokio::time::timeout(left, replies.changed()).await;
        }
    }
    if let Some(rounds) = &params.rounds {
        rounds.wait().await;
    }
    while duplicates.join_next().await.is_some() {}
    sent
}

/// Now, in Unix seconds (a Telegram message's `date`).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One webhook delivery of `update`, retried as Telegram retries a non-2xx answer.
async fn deliver(api: &Api, update: &str, chat: i64, stats: &PeopleStats) {
    let ip = format!("149.154.{}.{}", (chat / 250) % 250, chat % 250);
    let mut pause = DELIVERY_RETRY_PAUSE;
    let give_up_at = Instant::now() + DELIVERY_RETRY_SPAN;
    while Instant::now() < give_up_at {
        stats.deliveries.fetch_add(1, Ordering::Relaxed);
        let answer = api
            .request(
                "POST",
                "/webhooks/telegram",
                &[
                    ("content-type", "application/json"),
                    ("x-telegram-bot-api-secret-token", TELEGRAM_SECRET),
                ],
                update,
                &ip,
            )
            .await;
        match answer {
            Ok(a) if a.status == 200 => return,
            Ok(_) | Err(_) => {
                stats.non_2xx.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(DELIVERY_RETRY_PAUSE_MAX);
            }
        }
    }
    stats.given_up.fetch_add(1, Ordering::Relaxed);
}
