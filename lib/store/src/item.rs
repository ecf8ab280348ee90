//! The unit of storage: one item under a partition key and a sort key.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// One stored record. `version` supports optimistic concurrency (callers write `version + 1`
/// with a [`crate::Condition::VersionEquals`] on the version they read); `ttl`, in epoch seconds,
/// makes the item absent for every read and condition once passed, whether or not the backend
/// has physically deleted it yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Partition key.
    pub pk: String,
    /// Sort key; queries within a partition are ordered by its UTF-8 bytes.
    pub sk: String,
    /// Optimistic-concurrency version; new items start at 1.
    pub version: u64,
    /// Expiry in epoch seconds: the item is gone once `ttl <= now`.
    pub ttl: Option<i64>,
    /// The record's fields.
    pub data: serde_json::Value,
}

impl Item {
    /// A new item at version 1 with no expiry.
    pub fn new(pk: impl Into<String>, sk: impl Into<String>, data: serde_json::Value) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
            version: 1,
            ttl: None,
            data,
        }
    }

    /// A new item whose data is `value` serialized to JSON.
    pub fn from_value<T: Serialize>(
        pk: impl Into<String>,
        sk: impl Into<String>,
        value: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(pk, sk, serde_json::to_value(value)?))
    }

    /// The same item with an expiry (epoch seconds).
    pub fn with_ttl(mut self, ttl: i64) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The same item with another version.
    pub fn with_version(mut self, version: u64) -> Self {
        self.version = version;
        self
    }

    /// The data parsed into `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.data)
    }

    /// Whether the item counts as absent at `now_secs` because its `ttl` has passed.
    pub fn is_expired(&self, now_secs: i64) -> bool {
        self.ttl.is_some_and(|ttl| ttl <= now_secs)
    }
}

/// Rewrites numbers into the one form both backends round-trip identically: a float with an
/// integral value that fits an integer becomes that integer. DynamoDB stores numbers as decimal
/// strings, so `1.0` comes back as `1`; doing the same before writing to SQLite keeps the two
/// adapters byte-for-byte equal.
// The SQLite adapter's (DynamoDB applies it itself); a build without SQLite has no caller.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn canonical(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Number(n) => {
            if n.is_f64()
                && let Some(f) = n.as_f64()
                && f.fract() == 0.0
            {
                // Integral and in range, so the casts are exact: the same integer DynamoDB's
                // decimal string parses back to.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                if (-9.2e18..=9.2e18).contains(&f) {
                    return Value::from(f as i64);
                } else if (0.0..1.8e19).contains(&f) {
                    return Value::from(f as u64);
                }
            }
            Value::Number(n)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(canonical).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, canonical(v))).collect()),
        other => other,
    }
}
