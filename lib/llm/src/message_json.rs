//! Each message's JSON, kept while its caller keeps the message.
//!
//! A conversation's history goes to the model again with every call, and the harness shares
//! each stored message between calls (`Arc<Message>`): what changes from one call to the next
//! is a message or two at the end. Encoding the whole history each time, with the escaping
//! that JSON written as text needs (the context block, tool results), was the largest part of
//! writing a long conversation's body, and grew with every turn (issue #16's 40-turn profile:
//! 12.9 % of the server's CPU in the body's encoder, bench/RESULTS.md). [`MessageJson`] keeps
//! the JSON of each shared message, and a body splices it in.
//!
//! A message is known by its address, and its entry holds the message itself. So while the
//! entry is kept the address cannot be reused by another message, and the message cannot
//! change: `Arc::make_mut` on a message the entry also holds copies it first, to a new address.
//! An entry is dropped once nothing but the cache holds its message (nobody can present that
//! message again), and the least recently used go first above [`MESSAGE_JSON_BYTES_MAX`].
//! A message only the request holds (the newest, which carries the cache marker in its own
//! copy) is encoded and not kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::value::RawValue;

use crate::wire::Message;

/// JSON kept over all messages. A backstop: entries go sooner, once their messages are let go
/// (by the harness's history cache, whose 4,000,000 characters of content take less than this
/// as JSON, keys and escapes included), and it is well within the agent function's 128 MB.
pub(crate) const MESSAGE_JSON_BYTES_MAX: usize = 16 * 1024 * 1024;

/// A message whose JSON is longer than this share of the cap (a sixteenth) is encoded for each
/// call and not kept: one message must not push out hundreds of others.
const LONGEST_KEPT_SHARE: usize = 16;

/// Bodies encoded between two sweeps of the entries nobody else holds any more.
const SWEEP_EVERY_BODIES: u64 = 32;

/// Kept JSON of shared messages (see the [module docs](self)). Clones share what is kept.
#[derive(Debug, Clone)]
pub(crate) struct MessageJson {
    inner: Arc<Mutex<Inner>>,
    /// [`MESSAGE_JSON_BYTES_MAX`], smaller in tests.
    bytes_max: usize,
}

impl Default for MessageJson {
    fn default() -> Self {
        Self::with_max(MESSAGE_JSON_BYTES_MAX)
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// By the message's address. Each call looks up every message: with SipHash, the standard
    /// map's, that was a quarter of the body encoder's samples at 20 × 60, with this hash a
    /// twentieth. No caller picks an address, so the flooding SipHash guards against cannot
    /// happen here.
    entries: HashMap<usize, Entry, foldhash::fast::FixedState>,
    /// Sum of the entries' JSON lengths.
    bytes: usize,
    /// Bodies encoded: the entry with the smallest `used` is the least recently used.
    tick: u64,
    /// Messages encoded and kept, for the tests.
    #[cfg(test)]
    encoded: u64,
}

#[derive(Debug)]
struct Entry {
    message: Arc<Message>,
    json: Arc<RawValue>,
    used: u64,
}

fn address(message: &Arc<Message>) -> usize {
    Arc::as_ptr(message).addr()
}

impl MessageJson {
    pub(crate) fn with_max(bytes_max: usize) -> Self {
        Self {
            inner: Arc::default(),
            bytes_max,
        }
    }

    /// The JSON of each of `messages`, in order: kept JSON where there is some, the rest
    /// encoded now (outside the lock) and kept if its message is shared.
    pub(crate) fn encode(
        &self,
        messages: &[Arc<Message>],
    ) -> Result<Vec<Arc<RawValue>>, serde_json::Error> {
        let (tick, mut found) = {
            let mut inner = self.lock();
            inner.tick += 1;
            let tick = inner.tick;
            let found: Vec<Option<Arc<RawValue>>> = messages
                .iter()
                .map(|message| {
                    inner.entries.get_mut(&address(message)).map(|entry| {
                        entry.used = tick;
                        Arc::clone(&entry.json)
                    })
                })
                .collect();
            (tick, found)
        };
        let mut fresh = Vec::new();
        for (message, slot) in messages.iter().zip(&mut found) {
            if slot.is_none() {
                let json: Arc<RawValue> = serde_json::value::to_raw_value(&**message)?.into();
                if Arc::strong_count(message) > 1
                    && json.get().len() <= self.bytes_max / LONGEST_KEPT_SHARE
                {
                    fresh.push((Arc::clone(message), Arc::clone(&json)));
                }
                *slot = Some(json);
            }
        }
        if !fresh.is_empty() || tick.is_multiple_of(SWEEP_EVERY_BODIES) {
            self.keep(tick, fresh);
        }
        Ok(found.into_iter().flatten().collect())
    }

    fn keep(&self, tick: u64, fresh: Vec<(Arc<Message>, Arc<RawValue>)>) {
        let mut inner = self.lock();
        #[cfg(test)]
        {
            inner.encoded += fresh.len() as u64;
        }
        for (message, json) in fresh {
            inner.bytes += json.get().len();
            let entry = Entry {
                message,
                json,
                used: tick,
            };
            // Two calls that encoded one message at once: the second's copy replaces the first.
            if let Some(old) = inner.entries.insert(address(&entry.message), entry) {
                inner.bytes -= old.json.get().len();
            }
        }
        if tick.is_multiple_of(SWEEP_EVERY_BODIES) || inner.bytes > self.bytes_max {
            // Only the cache holds these: no caller can present them again.
            inner.retain(|entry| Arc::strong_count(&entry.message) > 1);
        }
        if inner.bytes > self.bytes_max {
            // Least recently used first, down to three quarters, so the next few bodies do not
            // each evict again.
            let mut by_use: Vec<(u64, usize)> = inner
                .entries
                .iter()
                .map(|(&address, entry)| (entry.used, address))
                .collect();
            by_use.sort_unstable();
            let target = self.bytes_max * 3 / 4;
            for (_, address) in by_use {
                if inner.bytes <= target {
                    break;
                }
                if let Some(gone) = inner.entries.remove(&address) {
                    inner.bytes -= gone.json.get().len();
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) {
        let mut freed = 0;
        self.entries.retain(|_, entry| {
            let kept = keep(entry);
            if !kept {
                freed += entry.json.get().len();
            }
            kept
        });
        self.bytes -= freed;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::wire::{CacheControl, ContentBlock};

    fn message(n: usize) -> Arc<Message> {
        Arc::new(Message::user(vec![ContentBlock::text(format!(
            "{{\"events\": [\"event {n}\", \"tab\\there\"]}} ✓"
        ))]))
    }

    fn plain(messages: &[Arc<Message>]) -> Vec<String> {
        messages
            .iter()
            .map(|m| serde_json::to_string(&**m).unwrap())
            .collect()
    }

    fn texts(json: &[Arc<RawValue>]) -> Vec<String> {
        json.iter().map(|j| j.get().to_owned()).collect()
    }

    fn counts(cache: &MessageJson) -> (usize, usize, u64) {
        let inner = cache.lock();
        (inner.entries.len(), inner.bytes, inner.encoded)
    }

    #[test]
    fn a_shared_message_is_encoded_once_and_spliced_after() {
        let cache = MessageJson::default();
        let mut history: Vec<Arc<Message>> = Vec::new();
        for turn in 0..10 {
            history.push(message(turn));
            // The request's copy: the history's messages, the newest with the cache marker in a
            // copy of its own.
            let mut request = history.clone();
            let last = request.last_mut().unwrap();
            Arc::make_mut(last).set_cache_control_on_last(Some(CacheControl::ephemeral()));
            let json = cache.encode(&request).unwrap();
            assert_eq!(texts(&json), plain(&request), "turn {turn}");
            // The newest message, marked in the request's own copy, is encoded and not kept;
            // each earlier one was kept the first time it went unmarked (the turn after its own).
            let (entries, bytes, _) = counts(&cache);
            assert_eq!(entries, turn, "turn {turn}");
            let expected: usize = plain(&history[..turn]).iter().map(String::len).sum();
            assert_eq!(bytes, expected);
        }
        // Ten turns: nine messages kept, each encoded once unmarked.
        assert_eq!(counts(&cache).2, 9);
        // The whole history unmarked: only the newest is new.
        let json = cache.encode(&history.clone()).unwrap();
        assert_eq!(texts(&json), plain(&history));
        assert_eq!(counts(&cache).2, 10);
    }

    #[test]
    fn a_changed_message_is_encoded_afresh() {
        let cache = MessageJson::default();
        let mut history = vec![message(1), message(2)];
        cache.encode(&history.clone()).unwrap();
        assert_eq!(counts(&cache).0, 2);
        // The cache holds the message too, so a change copies it to a new address.
        Arc::make_mut(&mut history[0]).content = vec![ContentBlock::text("changed")];
        let json = cache.encode(&history.clone()).unwrap();
        assert_eq!(texts(&json), plain(&history));
        assert!(json[0].get().contains("changed"));
        assert_eq!(counts(&cache).2, 3);
    }

    #[test]
    fn entries_nobody_else_holds_are_swept() {
        let cache = MessageJson::default();
        let history: Vec<Arc<Message>> = (0..20).map(message).collect();
        cache.encode(&history.clone()).unwrap();
        assert_eq!(counts(&cache).0, 20);
        drop(history);
        let other = vec![message(99)];
        for _ in 0..SWEEP_EVERY_BODIES {
            cache.encode(&other.clone()).unwrap();
        }
        let (entries, bytes, _) = counts(&cache);
        assert_eq!(entries, 1);
        assert_eq!(bytes, plain(&other)[0].len());
    }

    #[test]
    fn above_the_cap_the_least_recently_used_go_first() {
        let one = plain(&[message(10)])[0].len();
        let cache = MessageJson::with_max(one * 20);
        let old: Vec<Arc<Message>> = (10..20).map(message).collect();
        let recent: Vec<Arc<Message>> = (20..30).map(message).collect();
        cache.encode(&old.clone()).unwrap();
        cache.encode(&recent.clone()).unwrap();
        assert_eq!(counts(&cache).0, 20);
        // Ten more, all still held by the caller: the oldest ten go, down to three quarters.
        let newest: Vec<Arc<Message>> = (30..40).map(message).collect();
        let json = cache.encode(&newest.clone()).unwrap();
        assert_eq!(texts(&json), plain(&newest));
        let (entries, bytes, _) = counts(&cache);
        assert_eq!((entries, bytes), (15, one * 15));
        let inner = cache.lock();
        let kept = |m: &Arc<Message>| inner.entries.contains_key(&address(m));
        assert!(old.iter().all(|m| !kept(m)));
        assert_eq!(recent.iter().filter(|m| kept(m)).count(), 5);
        assert!(newest.iter().all(kept));
    }

    #[test]
    fn a_message_too_long_to_keep_is_encoded_each_time() {
        let cache = MessageJson::with_max(LONGEST_KEPT_SHARE * 128);
        let long = Arc::new(Message::user(vec![ContentBlock::text("x".repeat(200))]));
        let history = vec![Arc::clone(&long), message(1)];
        for _ in 0..2 {
            let json = cache.encode(&history.clone()).unwrap();
            assert_eq!(texts(&json), plain(&history));
        }
        let inner = cache.lock();
        assert!(!inner.entries.contains_key(&address(&long)));
        assert_eq!(inner.encoded, 1);
    }
}
