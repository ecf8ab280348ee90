//! When a failed message is delivered again: one schedule for both queues. The agent Lambda
//! sets a failed SQS record's visibility timeout to it (and its group's held-back records'),
//! and the in-process queue of `steward serve` waits it between attempts, so a conversation
//! behind a failed message waits the same on both.
//!
//! The steps grow because each failure says more about the cause. The first failure has
//! already been retried inside the attempt (the agent retries throttles and 5xx for a few
//! seconds before giving up), so what is left is something that needs seconds to minutes to
//! clear; a message that fails every time is a bug, and goes to the dead-letter queue within
//! [`redelivery_wait_total`] instead of holding its conversation for hours.

use std::time::Duration;

/// Deliveries of one message before it is dead-lettered: the turn queue's `maxReceiveCount`
/// in `template.yaml` (`infra/template_test.py` checks they agree) and the in-process queue's
/// default attempts.
///
/// Five, as AWS advises for Lambda event sources: a throttled invocation uses up a receive
/// too, and four waits of this schedule span about 13 minutes, long enough to ride out a
/// provider's short outage.
pub const RECEIVES_MAX: u32 = 5;

/// Wait after a message's first failed delivery.
///
/// Five seconds: the attempt already retried its transient errors, so this is a throttle or a
/// hiccup that outlasted a few seconds; the person waits about as long as for a slow reply.
pub const REDELIVERY_FIRST: Duration = Duration::from_secs(5);

/// Wait after the second failed delivery.
///
/// Thirty seconds: long enough for a rate limit's window or a restarted dependency.
pub const REDELIVERY_SECOND: Duration = Duration::from_secs(30);

/// Wait after the third failed delivery.
///
/// Two minutes: a provider's partial outage or a deployment in progress.
pub const REDELIVERY_THIRD: Duration = Duration::from_secs(2 * 60);

/// Wait after the fourth and every later failed delivery.
///
/// Ten minutes: the last chance before the dead-letter queue; longer only delays the
/// apology and the operator's alarm.
pub const REDELIVERY_LATER: Duration = Duration::from_secs(10 * 60);

/// The waits in order: entry `n - 1` follows the `n`th failed delivery; the last entry
/// repeats.
pub const REDELIVERY_SCHEDULE: [Duration; 4] = [
    REDELIVERY_FIRST,
    REDELIVERY_SECOND,
    REDELIVERY_THIRD,
    REDELIVERY_LATER,
];

/// The wait before a message whose `delivery`th delivery (1-based) failed is delivered again:
/// `schedule[delivery - 1]`, the last entry past the end, zero for an empty schedule.
pub fn redelivery_delay(schedule: &[Duration], delivery: u32) -> Duration {
    let index = usize::try_from(delivery.saturating_sub(1)).unwrap_or(usize::MAX);
    schedule
        .get(index)
        .or_else(|| schedule.last())
        .copied()
        .unwrap_or_default()
}

/// The longest a message that fails on every one of `deliveries` deliveries keeps its
/// conversation waiting, in waits alone (the attempts' own time comes on top): the delays
/// after every delivery but the last, after which it is dead-lettered.
pub fn redelivery_wait_total(schedule: &[Duration], deliveries: u32) -> Duration {
    (1..deliveries)
        .map(|delivery| redelivery_delay(schedule, delivery))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failed_delivery_waits_longer_up_to_the_last_step() {
        let s = &REDELIVERY_SCHEDULE;
        let secs = |n| redelivery_delay(s, n).as_secs();
        assert_eq!([secs(1), secs(2), secs(3), secs(4)], [5, 30, 120, 600]);
        assert_eq!(secs(5), 600, "the last step repeats");
        assert_eq!(secs(40), 600);
        assert_eq!(secs(0), 5, "a missing receive count counts as the first");
        assert_eq!(redelivery_delay(&[], 3), Duration::ZERO);
    }

    #[test]
    fn a_poison_message_is_dead_lettered_within_the_schedule_total() {
        assert_eq!(
            redelivery_wait_total(&REDELIVERY_SCHEDULE, RECEIVES_MAX),
            Duration::from_secs(5 + 30 + 120 + 600)
        );
        assert_eq!(
            redelivery_wait_total(&REDELIVERY_SCHEDULE, 1),
            Duration::ZERO
        );
    }
}
