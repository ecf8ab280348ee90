//! [`TurnTally`]: a turn's counts added up while it runs, read once at its end as a
//! [`TurnMetrics`].

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use steward_llm::Usage;

use super::{ModelFailureKind, TurnEnd, TurnMetrics};
use crate::ids::{ChannelName, ConversationKey};

/// The counts of one attempt at a turn. Shared by reference between the turn's steps (the
/// model loop, the tool round, compaction's notes call), so the counters are atomics; one
/// turn runs its steps one after another, so `Relaxed` is enough.
#[derive(Debug)]
pub struct TurnTally {
    started: Instant,
    model_calls: AtomicU32,
    model_failures: AtomicU32,
    uncached_input_tokens: AtomicU64,
    cache_write_tokens: AtomicU64,
    cache_read_tokens: AtomicU64,
    output_tokens: AtomicU64,
    tool_calls: AtomicU32,
    error_results: AtomicU32,
    held_actions: AtomicU32,
}

impl Default for TurnTally {
    fn default() -> Self {
        Self::start()
    }
}

fn bump(counter: &AtomicU32) {
    counter.fetch_add(1, Ordering::Relaxed);
}

fn add(counter: &AtomicU64, n: u64) {
    // Saturating: an absurd provider count cannot wrap the turn's total.
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_add(n))
    });
}

impl TurnTally {
    /// A tally whose clock starts now.
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            model_calls: AtomicU32::new(0),
            model_failures: AtomicU32::new(0),
            uncached_input_tokens: AtomicU64::new(0),
            cache_write_tokens: AtomicU64::new(0),
            cache_read_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            tool_calls: AtomicU32::new(0),
            error_results: AtomicU32::new(0),
            held_actions: AtomicU32::new(0),
        }
    }

    /// A model call was answered with `usage`.
    pub fn model_answered(&self, usage: &Usage) {
        bump(&self.model_calls);
        add(&self.uncached_input_tokens, usage.input_tokens);
        add(&self.cache_write_tokens, usage.cache_creation_input_tokens);
        add(&self.cache_read_tokens, usage.cache_read_input_tokens);
        add(&self.output_tokens, usage.output_tokens);
    }

    /// A model call failed (or the model refused), of `kind`: counted for the turn and for
    /// the process ([`super::model_failure`]). `call_made` is false when the call itself was
    /// answered and already counted (a refusal is an answer).
    pub fn model_failed(&self, kind: ModelFailureKind, call_made: bool) {
        if call_made {
            bump(&self.model_calls);
        }
        bump(&self.model_failures);
        super::model_failure(kind);
    }

    /// A tool call ran or was held; `is_error` when its result was marked as an error (a
    /// held call's result is).
    pub fn tool_result(&self, is_error: bool) {
        bump(&self.tool_calls);
        if is_error {
            bump(&self.error_results);
        }
    }

    /// The confirmation gate held a tool call.
    pub fn held(&self) {
        bump(&self.held_actions);
    }

    /// The turn's metrics, ending now with `end`.
    pub fn finish(
        &self,
        channel: &ChannelName,
        conversation: &ConversationKey,
        turn: u64,
        end: TurnEnd,
    ) -> TurnMetrics {
        let held = self.held_actions.load(Ordering::Relaxed);
        TurnMetrics {
            channel: channel.clone(),
            conversation: conversation.clone(),
            turn,
            end,
            latency: self.started.elapsed(),
            model_calls: self.model_calls.load(Ordering::Relaxed),
            model_failures: self.model_failures.load(Ordering::Relaxed),
            uncached_input_tokens: self.uncached_input_tokens.load(Ordering::Relaxed),
            cache_write_tokens: self.cache_write_tokens.load(Ordering::Relaxed),
            cache_read_tokens: self.cache_read_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
            tool_calls: self.tool_calls.load(Ordering::Relaxed),
            // A held call's result reads as an error to the model, but nothing went wrong.
            tool_errors: self
                .error_results
                .load(Ordering::Relaxed)
                .saturating_sub(held),
            held_actions: held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_adds_calls_tokens_and_tool_results() {
        let tally = TurnTally::start();
        let usage = |input, write, read, output| Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: write,
            cache_read_input_tokens: read,
            ..Usage::default()
        };
        tally.model_answered(&usage(100, 50, 0, 10));
        tally.model_answered(&usage(20, 0, 150, 30));
        tally.model_failed(ModelFailureKind::Timeout, true);
        tally.tool_result(false);
        tally.tool_result(true);
        tally.tool_result(true);
        tally.held();
        let channel = ChannelName::parse("web").unwrap_or_else(|e| panic!("{e}"));
        let key = ConversationKey::new(&channel, "u1").unwrap_or_else(|e| panic!("{e}"));
        let m = tally.finish(&channel, &key, 4, TurnEnd::Replied);
        assert_eq!(m.model_calls, 3);
        assert_eq!(m.model_failures, 1);
        assert_eq!(m.input_tokens(), 320);
        assert_eq!(m.output_tokens, 40);
        assert_eq!(m.cache_read_share(), Some(150.0 / 320.0));
        assert_eq!((m.tool_calls, m.tool_errors, m.held_actions), (3, 1, 1));
        assert_eq!(m.turn, 4);
    }

    #[test]
    fn a_turn_without_model_calls_has_no_cache_share() {
        let channel = ChannelName::parse("web").unwrap_or_else(|e| panic!("{e}"));
        let key = ConversationKey::new(&channel, "u1").unwrap_or_else(|e| panic!("{e}"));
        let m = TurnTally::start().finish(&channel, &key, 1, TurnEnd::Replied);
        assert_eq!(m.model_calls, 0);
        assert_eq!(m.cache_read_share(), None);
    }
}
