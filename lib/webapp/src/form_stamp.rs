//! The registration form's time stamp: when the server showed the form, signed, so a script
//! that posts faster than a person can type is refused without trusting any clock but the
//! server's. The stamp is `<issued epoch seconds>.<HMAC-SHA256>` over the form's double-submit
//! token and the time, in a hidden field; it cannot be moved to another browser (the token is
//! in that browser's cookie) or back-dated (the MAC).
//!
//! The key is 256 random bits kept in the `Table` (`FORMKEY`), created by whichever process
//! needs it first, so every Lambda instance checks every other's stamps; each process caches
//! it after one read.

use std::sync::Arc;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use steward_store::{Item, StoreError, Table, WriteOp};

/// A person needs longer than this to type a name and an e-mail address; a script posting the
/// form straight after fetching it does not wait.
pub const FILL_SECS_MIN: i64 = 3;

/// A form older than this is refused (reload it): a day covers a tab left open overnight.
pub const STAMP_AGE_SECS_MAX: i64 = 24 * 3600;

/// The hidden field carrying the stamp.
pub const STAMP_FIELD: &str = "issued";

const KEY_PK: &str = "FORMKEY";
const KEY_SK: &str = "FORMKEY";

/// Bytes of the signing key.
const KEY_BYTES: usize = 32;

/// The signing key.
#[derive(Clone)]
pub struct StampKey(Arc<[u8; KEY_BYTES]>);

impl std::fmt::Debug for StampKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StampKey(***)")
    }
}

#[derive(Serialize, Deserialize)]
struct StoredKey {
    key: String,
}

impl StampKey {
    /// The deployment's key from `table`, created on first use.
    pub async fn load_or_create(table: &dyn Table) -> Result<Self, StoreError> {
        for _ in 0..2 {
            if let Some(item) = table.get(KEY_PK, KEY_SK).await? {
                return Self::from_item(&item);
            }
            let mut key = [0u8; KEY_BYTES];
            rand::fill(&mut key);
            let stored = StoredKey {
                key: hex::encode(key),
            };
            let item = Item::from_value(KEY_PK, KEY_SK, &stored)
                .map_err(|e| StoreError::Backend(format!("form key: {e}")))?;
            match table.write(vec![WriteOp::put_if_absent(item)]).await {
                Ok(()) => return Ok(Self(Arc::new(key))),
                // Another process created it first: read theirs.
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Backend(
            "the form key could not be created".into(),
        ))
    }

    fn from_item(item: &Item) -> Result<Self, StoreError> {
        let stored: StoredKey = item
            .parse()
            .map_err(|e| StoreError::Backend(format!("form key: {e}")))?;
        let bytes = hex::decode(&stored.key)
            .ok()
            .and_then(|b| <[u8; KEY_BYTES]>::try_from(b).ok())
            .ok_or_else(|| StoreError::Backend("the stored form key is malformed".into()))?;
        Ok(Self(Arc::new(bytes)))
    }

    /// A key for tests.
    #[cfg(test)]
    fn fixed(byte: u8) -> Self {
        Self(Arc::new([byte; KEY_BYTES]))
    }

    fn mac(&self, token: &str, issued_s: i64) -> Option<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.0.as_slice()).ok()?;
        mac.update(b"steward-register-form\0");
        mac.update(token.as_bytes());
        mac.update(b"\0");
        mac.update(issued_s.to_string().as_bytes());
        Some(mac)
    }

    /// The stamp for a form with double-submit token `token`, shown at `now_s`.
    pub fn stamp(&self, token: &str, now_s: i64) -> String {
        let tag = self
            .mac(token, now_s)
            .map(|m| m.finalize().into_bytes().to_vec())
            .unwrap_or_default();
        format!(
            "{now_s}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Checks a posted stamp for `token` at `now_s`.
    pub fn check(&self, token: &str, stamp: &str, now_s: i64) -> Result<(), StampProblem> {
        let (issued, tag) = stamp.split_once('.').ok_or(StampProblem::Invalid)?;
        let issued_s: i64 = issued.parse().map_err(|_| StampProblem::Invalid)?;
        let tag = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StampProblem::Invalid)?;
        let mac = self.mac(token, issued_s).ok_or(StampProblem::Invalid)?;
        mac.verify_slice(&tag).map_err(|_| StampProblem::Invalid)?;
        let age = now_s - issued_s;
        if age < FILL_SECS_MIN {
            return Err(StampProblem::TooFast {
                wait_secs: u64::try_from(FILL_SECS_MIN - age.max(0)).unwrap_or(1),
            });
        }
        if age > STAMP_AGE_SECS_MAX {
            return Err(StampProblem::Stale);
        }
        Ok(())
    }
}

/// Why a stamp is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StampProblem {
    /// Missing, malformed, forged, or made for another browser's token.
    #[error("the form's time stamp is missing or not ours")]
    Invalid,
    /// Sent sooner than a person fills the form.
    #[error("sent {wait_secs} s too soon after the form was shown")]
    TooFast {
        /// Seconds still to wait.
        wait_secs: u64,
    },
    /// Older than [`STAMP_AGE_SECS_MAX`].
    #[error("the form is too old")]
    Stale,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stamps_need_time_the_right_token_and_the_key() {
        let key = StampKey::fixed(7);
        let stamp = key.stamp("token-a", 1_000);
        assert_eq!(
            key.check("token-a", &stamp, 1_001),
            Err(StampProblem::TooFast { wait_secs: 2 })
        );
        assert_eq!(key.check("token-a", &stamp, 1_000 + FILL_SECS_MIN), Ok(()));
        assert_eq!(
            key.check("token-b", &stamp, 1_010),
            Err(StampProblem::Invalid)
        );
        assert_eq!(
            StampKey::fixed(8).check("token-a", &stamp, 1_010),
            Err(StampProblem::Invalid)
        );
        // Back-dating the time breaks the MAC.
        let (_, tag) = stamp.split_once('.').unwrap();
        let forged = format!("900.{tag}");
        assert_eq!(
            key.check("token-a", &forged, 1_000),
            Err(StampProblem::Invalid)
        );
        for junk in ["", "x", "1.", ".abc", "1.!!"] {
            assert_eq!(
                key.check("token-a", junk, 1_010),
                Err(StampProblem::Invalid)
            );
        }
        assert_eq!(
            key.check("token-a", &stamp, 1_000 + STAMP_AGE_SECS_MAX + 1),
            Err(StampProblem::Stale)
        );
    }
}
