//! The run's figures, from what the outside saw (Telegram's sends) and what the store recorded
//! (the audit rows): effects per message, lost messages, disorder, duplicate replies, latency.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use steward_harness::audit::AuditRow;
use steward_harness::{UserId, keys};
use steward_store::{Query, Table};

use crate::fakes::{Sent, markers};
use crate::scenario::Message;

/// What the run found.
#[derive(Debug, Default)]
pub struct Figures {
    /// Messages the people sent.
    pub messages: usize,
    /// Extra effects: events created more than once for one message.
    pub duplicate_effects: usize,
    /// Messages with no effect or no reply.
    pub lost: Vec<String>,
    /// Replies that came before the reply to an earlier message of the same conversation.
    pub out_of_order: usize,
    /// Messages whose reply was sent more than once.
    pub duplicate_replies: usize,
    /// Of those, the ones with a copy that no kill explains: no kill fell after the earlier
    /// copy reached Telegram (within [`SEND_RECORD_WINDOW_MAX`]) and before the later one.
    /// Counted only when the kill times are known (`steward serve`); must be 0.
    pub unexplained_duplicate_replies: usize,
    /// Sends that answered no message (apologies, errors), with a sample.
    pub other_sends: Vec<String>,
    /// Time from the first webhook delivery to the reply, per replied message.
    pub latencies: Vec<Duration>,
}

impl Figures {
    /// The `q`-quantile (0–1) of the latencies (nearest rank), if any.
    pub fn percentile(&self, q: f64) -> Option<Duration> {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        if sorted.is_empty() {
            return None;
        }
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted.get(rank - 1).copied()
    }
}

/// Counts, per marker, the events created under its name in `user`'s audit rows.
async fn effects(table: &dyn Table, user: &UserId) -> anyhow::Result<HashMap<String, usize>> {
    let mut counts = HashMap::new();
    let mut query = Query::prefix(keys::user_pk(user), keys::AUDIT_SK_PREFIX);
    loop {
        let page = table.query(&query).await.context("reading audit rows")?;
        for item in &page.items {
            let row: AuditRow = item.parse().context("an audit row")?;
            let created_event = row.before.is_none()
                && row
                    .after
                    .as_ref()
                    .is_some_and(|a| a.data.get("dates").is_some());
            if let Some(name) = row
                .after
                .as_ref()
                .and_then(|a| a.data.get("name"))
                .and_then(|n| n.as_str())
                .filter(|_| created_event)
            {
                for m in markers(name) {
                    *counts.entry(m).or_insert(0) += 1;
                }
            }
        }
        match page.next {
            Some(cursor) => query = query.after(Some(cursor)),
            None => break,
        }
    }
    Ok(counts)
}

/// How long after a reply part reached Telegram a kill may fall and still explain the part
/// being sent again: the part's ledger row is written as soon as Telegram's answer is read, so
/// only a kill in that gap repeats it. The gap is short, but in a 200-conversation run on a
/// debug build on two shared cores the ledger write can wait behind a hundred other turns'
/// writes for seconds; this bound is generous for that and still rules out a reply recorded
/// long before a kill being sent again after the restart (a ledger bug).
pub const SEND_RECORD_WINDOW_MAX: Duration = Duration::from_secs(10);

/// Whether a kill in `kills` fell between `earlier` and `later`, and within
/// [`SEND_RECORD_WINDOW_MAX`] after `earlier`.
fn a_kill_explains(kills: &[Instant], earlier: Instant, later: Instant) -> bool {
    kills.iter().any(|&k| {
        k >= earlier && k <= later && k.saturating_duration_since(earlier) <= SEND_RECORD_WINDOW_MAX
    })
}

/// The figures of a run: `sent` by the people, `users` by chat, `sends` from Telegram; `kills`
/// are the instants the process was killed at, when the stage knows them (each duplicate
/// reply is then checked against them).
pub async fn collect(
    table: &dyn Table,
    sent: &[Message],
    users: &HashMap<i64, UserId>,
    sends: &[Sent],
    kills: Option<&[Instant]>,
) -> anyhow::Result<Figures> {
    let mut figures = Figures {
        messages: sent.len(),
        ..Figures::default()
    };
    let mut by_chat: HashMap<i64, Vec<&Message>> = HashMap::new();
    for m in sent {
        by_chat.entry(m.chat).or_default().push(m);
    }
    let mut sends_by_chat: HashMap<i64, Vec<&Sent>> = HashMap::new();
    for s in sends {
        sends_by_chat.entry(s.chat).or_default().push(s);
    }
    for list in sends_by_chat.values_mut() {
        list.sort_by_key(|s| s.at);
    }
    for (chat, messages) in &mut by_chat {
        messages.sort_by_key(|m| m.position);
        let user = users.get(chat).context("a chat without a user")?;
        let effects = effects(table, user).await?;
        let chat_sends = sends_by_chat.get(chat).cloned().unwrap_or_default();
        for s in &chat_sends {
            if markers(&s.text).is_empty() {
                figures.other_sends.push(s.text.chars().take(120).collect());
            }
        }
        let mut last_first_reply: Option<usize> = None;
        for m in messages.iter() {
            let n = effects.get(&m.marker).copied().unwrap_or(0);
            figures.duplicate_effects += n.saturating_sub(1);
            let replies: Vec<(usize, &&Sent)> = chat_sends
                .iter()
                .enumerate()
                .filter(|(_, s)| markers(&s.text).contains(&m.marker))
                .collect();
            if n == 0 || replies.is_empty() {
                figures.lost.push(format!(
                    "{} (effects {n}, replies {})",
                    m.marker,
                    replies.len()
                ));
            }
            if replies.len() > 1 {
                figures.duplicate_replies += 1;
                if let Some(kills) = kills
                    && replies
                        .windows(2)
                        .any(|w| !a_kill_explains(kills, w[0].1.at, w[1].1.at))
                {
                    figures.unexplained_duplicate_replies += 1;
                }
            }
            if let Some((index, first)) = replies.first() {
                figures
                    .latencies
                    .push(first.at.saturating_duration_since(m.sent_at));
                if last_first_reply.is_some_and(|last| *index < last) {
                    figures.out_of_order += 1;
                }
                last_first_reply = Some(*index);
            }
        }
        // Markers nobody sent must not appear either (an effect for a message never sent).
        for marker in effects.keys() {
            if !messages.iter().any(|m| &m.marker == marker) {
                figures
                    .lost
                    .push(format!("{marker}: an effect for a message never sent"));
            }
        }
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let figures = Figures {
            latencies: (1..=100).map(Duration::from_millis).collect(),
            ..Figures::default()
        };
        assert_eq!(figures.percentile(0.5), Some(Duration::from_millis(50)));
        assert_eq!(figures.percentile(0.95), Some(Duration::from_millis(95)));
        assert_eq!(figures.percentile(0.99), Some(Duration::from_millis(99)));
        assert_eq!(Figures::default().percentile(0.5), None);
    }
}
