//! [`BadSecrets`]: the Telegram webhook's throttle for callers presenting a wrong secret.
//!
//! Each source address may present [`BAD_SECRETS_PER_MINUTE`] wrong secrets in a minute; after
//! that its requests are answered 429 without being checked until the minute is over. The
//! counts live in this process's memory (no database on the webhook path), at most
//! [`BAD_SECRET_SOURCES_MAX`] sources at once. Telegram itself always presents the right
//! secret, so it is never throttled unless the configured secret and `setWebhook` disagree —
//! and then every update fails anyway.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong secrets one source may present per minute. A misconfigured deployment or a rotation
/// in progress produces a few; a stream of them is someone probing, and answering those with
/// 429 keeps the log readable and the probe slow.
pub const BAD_SECRETS_PER_MINUTE: u32 = 10;

/// Most sources tracked at once: memory stays bounded whatever the traffic. When full, the
/// source whose window started first is forgotten.
pub const BAD_SECRET_SOURCES_MAX: usize = 4_096;

/// The counting window.
const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    count: u32,
}

impl Window {
    fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.start) >= WINDOW
    }
}

/// Wrong-secret counts per source address.
#[derive(Debug, Default)]
pub struct BadSecrets {
    windows: Mutex<HashMap<String, Window>>,
}

impl BadSecrets {
    /// An empty throttle.
    pub fn new() -> Self {
        Self::default()
    }

    /// `Err(wait)` when `source` used up its wrong secrets for this minute at `now`.
    pub fn check(&self, source: &str, now: Instant) -> Result<(), Duration> {
        let windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        match windows.get(source) {
            Some(w) if !w.expired(now) && w.count >= BAD_SECRETS_PER_MINUTE => {
                Err(WINDOW.saturating_sub(now.saturating_duration_since(w.start)))
            }
            _ => Ok(()),
        }
    }

    /// Counts one wrong secret from `source` at `now`; `true` when it used up the minute's
    /// allowance (the moment to log that the source is now throttled).
    pub fn record(&self, source: &str, now: Instant) -> bool {
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() >= BAD_SECRET_SOURCES_MAX && !windows.contains_key(source) {
            windows.retain(|_, w| !w.expired(now));
            if windows.len() >= BAD_SECRET_SOURCES_MAX
                && let Some(oldest) = windows
                    .iter()
                    .min_by_key(|(_, w)| w.start)
                    .map(|(k, _)| k.clone())
            {
                windows.remove(&oldest);
            }
        }
        let window = windows.entry(source.to_owned()).or_insert(Window {
            start: now,
            count: 0,
        });
        if window.expired(now) {
            *window = Window {
                start: now,
                count: 0,
            };
        }
        window.count = window.count.saturating_add(1);
        window.count == BAD_SECRETS_PER_MINUTE
    }

    /// How many sources are tracked.
    pub fn sources(&self) -> usize {
        self.windows.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_throttled_for_the_rest_of_its_minute() {
        let t = BadSecrets::new();
        let t0 = Instant::now();
        for i in 1..BAD_SECRETS_PER_MINUTE {
            assert!(t.check("a", t0).is_ok());
            assert!(!t.record("a", t0), "attempt {i}");
        }
        assert!(t.record("a", t0), "the limit is reported once");
        let wait = t.check("a", t0 + Duration::from_secs(20));
        assert_eq!(wait, Err(Duration::from_secs(40)));
        assert!(t.check("b", t0).is_ok(), "other sources are not affected");
        assert!(
            t.check("a", t0 + WINDOW).is_ok(),
            "the next minute starts afresh"
        );
        assert!(!t.record("a", t0 + WINDOW));
    }

    #[test]
    fn the_map_has_a_hard_size() {
        let t = BadSecrets::new();
        let t0 = Instant::now();
        for i in 0..BAD_SECRET_SOURCES_MAX + 50 {
            t.record(&format!("10.0.{}.{}", i / 256, i % 256), t0);
        }
        assert_eq!(t.sources(), BAD_SECRET_SOURCES_MAX);
    }
}
