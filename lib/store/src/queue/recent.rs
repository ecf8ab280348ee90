//! The dedupe keys the in-process queue has taken lately, in memory: a provider's retry of a
//! message already queued is answered without touching the table.
//!
//! Only keys known to be taken are remembered (their enqueue committed), each until the end of
//! its dedupe window, the same second the table's dedupe item expires. A key not here may still
//! be taken (this process restarted, or the key was evicted): the table's conditional write
//! decides those, so forgetting costs a failed write, never a second delivery.

use std::collections::{HashMap, VecDeque};

/// Keys remembered at most: 8,192 is 27 messages a second for the whole five-minute window,
/// more than one `steward serve` takes in; each costs about 90 bytes (the 32-byte key twice and
/// its expiry), so the set stays under a megabyte.
pub(super) const RECENT_KEYS_MAX: usize = 8_192;

/// A dedupe key: SHA-256 of the group and the dedupe id (see `in_process::dedupe_key`).
pub(super) type DedupeKey = [u8; 32];

/// Taken keys and the second each stops counting, evicted oldest first.
#[derive(Debug)]
pub(super) struct RecentKeys {
    until: HashMap<DedupeKey, i64>,
    order: VecDeque<(DedupeKey, i64)>,
    capacity: usize,
}

impl RecentKeys {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            until: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Whether `key` was taken and its window is still open at `now` (the table's rule: an item
    /// lives while its ttl is after now).
    pub(super) fn contains(&self, key: &DedupeKey, now: i64) -> bool {
        self.until.get(key).is_some_and(|&until| until > now)
    }

    /// Remembers `key` as taken until `until`; drops keys whose window closed by `now`, and the
    /// oldest keys past the capacity.
    pub(super) fn insert(&mut self, key: DedupeKey, until: i64, now: i64) {
        while let Some(&(old, old_until)) = self.order.front() {
            if old_until > now && self.order.len() < self.capacity {
                break;
            }
            self.order.pop_front();
            // A key taken again after its window closed is in `order` twice; only its newest
            // entry speaks for it.
            if self.until.get(&old) == Some(&old_until) {
                self.until.remove(&old);
            }
        }
        self.until.insert(key, until);
        self.order.push_back((key, until));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.until.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> DedupeKey {
        [n; 32]
    }

    #[test]
    fn a_key_counts_until_its_window_closes() {
        let mut recent = RecentKeys::new(4);
        recent.insert(key(1), 100, 0);
        assert!(recent.contains(&key(1), 0));
        assert!(recent.contains(&key(1), 99));
        assert!(
            !recent.contains(&key(1), 100),
            "the table's item is gone at its ttl"
        );
        assert!(!recent.contains(&key(2), 0));
    }

    #[test]
    fn the_oldest_keys_go_past_the_capacity() {
        let mut recent = RecentKeys::new(3);
        for n in 1..=5 {
            recent.insert(key(n), 1_000, 0);
        }
        assert_eq!(recent.len(), 3);
        assert!(!recent.contains(&key(1), 0));
        assert!(!recent.contains(&key(2), 0));
        assert!((3..=5).all(|n| recent.contains(&key(n), 0)));
    }

    #[test]
    fn closed_windows_are_dropped_as_new_keys_come() {
        let mut recent = RecentKeys::new(100);
        recent.insert(key(1), 10, 0);
        recent.insert(key(2), 20, 0);
        recent.insert(key(3), 30, 15);
        assert_eq!(recent.len(), 2, "key 1's window closed at 10");
        assert!(recent.contains(&key(2), 15));
    }

    #[test]
    fn a_key_taken_again_keeps_its_new_window_when_the_old_entry_goes() {
        let mut recent = RecentKeys::new(100);
        recent.insert(key(2), 50, 0);
        recent.insert(key(1), 10, 0);
        // Key 1's first entry sits behind key 2's, so it is still queued when key 1 comes again.
        recent.insert(key(1), 320, 20);
        recent.insert(key(3), 400, 60);
        assert!(
            recent.contains(&key(1), 60),
            "evicting the old entry kept the new window"
        );
        assert!(!recent.contains(&key(2), 60));
    }
}
