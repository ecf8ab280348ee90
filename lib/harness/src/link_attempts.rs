//! Wrong linking codes, counted per sender and across everyone, per clock hour
//! (`LINKFAIL#<channel>#<external>` / `HOUR#<n>` and `LINKFAIL` / `HOUR#<n>`).
//!
//! A code binds the sender's phone to an account, so guessing one is an account takeover.
//! Codes are long enough that guessing is hopeless at the rates below; the counters make sure
//! the rates hold whatever the number of chats or Lambda instances: a sender past
//! [`LINK_FAILURES_PER_SENDER_PER_HOUR`] waits for the next hour, and past
//! [`LINK_FAILURES_PER_HOUR`] in all, linking pauses for everyone until the hour is over and
//! an error is logged (once per hour: only the failure that reaches the limit logs it).
//! Counts are conditional updates of one row each, with a TTL, so they hold across processes
//! and clean themselves up.

use serde::{Deserialize, Serialize};
use steward_store::{Item, StoreError, Table, WriteOp};

use crate::ids::ChannelIdentity;
use crate::keys;

/// Wrong codes one sender may send per clock hour. A person mistypes or pastes an expired code
/// once or twice; five leaves room for that and stops a guesser at five tries an hour.
pub const LINK_FAILURES_PER_SENDER_PER_HOUR: u32 = 5;

/// Wrong codes from everyone together per clock hour before linking pauses. Honest mistakes
/// come in ones and twos; this many in an hour means someone is guessing with many phones or
/// accounts. Pausing costs honest people an hour at worst, and the error log tells the
/// operator at once. With 8-character codes and at most this many guesses an hour, finding any
/// of a hundred live codes takes tens of thousands of years.
pub const LINK_FAILURES_PER_HOUR: u32 = 200;

/// Retries of a counter update that lost a race with another one.
const COUNT_RETRIES_MAX: usize = 8;

/// Seconds of one counting window.
const HOUR_SECS: i64 = 60 * 60;

/// Why a linking code is not even tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkBlocked {
    /// This sender sent too many wrong codes this hour.
    Sender {
        /// Seconds until the next hour starts.
        wait_secs: i64,
    },
    /// Too many wrong codes from everyone this hour: linking is paused.
    Everyone {
        /// Seconds until the next hour starts.
        wait_secs: i64,
    },
}

impl LinkBlocked {
    /// What the sender is told: what happened and how long to wait.
    pub fn reason(&self, noun: &str) -> String {
        match *self {
            Self::Sender { wait_secs } => format!(
                "Too many wrong linking codes came from this {noun} in the last hour. Wait {}, then send a fresh code from the web app.",
                minutes(wait_secs)
            ),
            Self::Everyone { wait_secs } => format!(
                "Linking is paused for a while because too many wrong codes were sent. Try again in {}, with a fresh code from the web app.",
                minutes(wait_secs)
            ),
        }
    }
}

/// "1 minute", "37 minutes": rounded up, at least one.
fn minutes(secs: i64) -> String {
    let m = (secs.max(1) + 59) / 60;
    if m == 1 {
        "1 minute".to_owned()
    } else {
        format!("{m} minutes")
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Count {
    count: u32,
}

fn window(now_secs: i64) -> (i64, i64) {
    let hour = now_secs.div_euclid(HOUR_SECS);
    (hour, (hour + 1) * HOUR_SECS - now_secs)
}

async fn read(table: &dyn Table, pk: &str, sk: &str) -> Result<u32, StoreError> {
    Ok(match table.get(pk, sk).await? {
        Some(item) => {
            item.parse::<Count>()
                .map_err(|e| StoreError::Backend(format!("corrupt link-failure count: {e}")))?
                .count
        }
        None => 0,
    })
}

/// Whether `identity` may try a code at `now_secs`: `Some` says why not.
pub async fn check(
    table: &dyn Table,
    identity: &ChannelIdentity,
    now_secs: i64,
) -> Result<Option<LinkBlocked>, StoreError> {
    let (hour, wait_secs) = window(now_secs);
    let sk = keys::link_failures_sk(hour);
    if read(table, keys::LINK_FAILURES_ALL_PK, &sk).await? >= LINK_FAILURES_PER_HOUR {
        return Ok(Some(LinkBlocked::Everyone { wait_secs }));
    }
    if read(table, &keys::link_failures_pk(identity), &sk).await?
        >= LINK_FAILURES_PER_SENDER_PER_HOUR
    {
        return Ok(Some(LinkBlocked::Sender { wait_secs }));
    }
    Ok(None)
}

/// Adds one to the count at `pk`/`sk` (kept until the hour is over, plus an hour); returns
/// the new count.
async fn bump(table: &dyn Table, pk: &str, sk: &str, expires_secs: i64) -> Result<u32, StoreError> {
    for _ in 0..COUNT_RETRIES_MAX {
        let current = table.get(pk, sk).await?;
        let (count, version) = match &current {
            Some(item) => (
                item.parse::<Count>()
                    .map_err(|e| StoreError::Backend(format!("corrupt link-failure count: {e}")))?
                    .count,
                item.version,
            ),
            None => (0, 0),
        };
        let next = count.saturating_add(1);
        let item = Item::from_value(pk, sk, &Count { count: next })
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .with_ttl(expires_secs)
            .with_version(version + 1);
        let op = if current.is_some() {
            WriteOp::put_if_version(item, version)
        } else {
            WriteOp::put_if_absent(item)
        };
        match table.write(vec![op]).await {
            Ok(()) => return Ok(next),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Throttled(
        "the link-failure count kept changing".into(),
    ))
}

/// Counts one wrong code from `identity` at `now_secs`, for the sender and for everyone.
pub async fn record_failure(
    table: &dyn Table,
    identity: &ChannelIdentity,
    now_secs: i64,
) -> Result<(), StoreError> {
    let (hour, wait_secs) = window(now_secs);
    let sk = keys::link_failures_sk(hour);
    let expires = now_secs + wait_secs + HOUR_SECS;
    let mine = bump(table, &keys::link_failures_pk(identity), &sk, expires).await?;
    let all = bump(table, keys::LINK_FAILURES_ALL_PK, &sk, expires).await?;
    tracing::info!(%identity, wrong_codes_this_hour = mine, "wrong linking code");
    if all == LINK_FAILURES_PER_HOUR {
        tracing::error!(
            wrong_codes = all,
            resumes_in_secs = wait_secs,
            "LINKING PAUSED: {LINK_FAILURES_PER_HOUR} wrong linking codes this hour from all senders together, which looks like guessing; no code is tried until the hour is over"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_whole_minutes_rounded_up() {
        assert_eq!(minutes(0), "1 minute");
        assert_eq!(minutes(60), "1 minute");
        assert_eq!(minutes(61), "2 minutes");
        assert_eq!(window(3_600 * 5 + 100), (5, 3_500));
        let text = LinkBlocked::Sender { wait_secs: 2_220 }.reason("Telegram account");
        assert!(text.contains("Wait 37 minutes"), "{text}");
    }
}
