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

/// An item as [`crate::Table::query_raw`] reads it: its data still the JSON text the store
/// holds. For a reader that parses the data straight into its own type, or skips items without
/// parsing them: [`Item`]'s tree of values is built, read into the type and freed again for
/// every item, which a turn's history and context block paid on each row they read (issue
/// #16's profile: about a tenth of a turn).
#[derive(Debug, Clone, PartialEq)]
pub struct RawItem {
    /// Partition key.
    pub pk: String,
    /// Sort key.
    pub sk: String,
    /// Optimistic-concurrency version.
    pub version: u64,
    /// Expiry in epoch seconds.
    pub ttl: Option<i64>,
    /// The record's fields as JSON text. Not checked when read: [`RawItem::parse`] and
    /// [`RawItem::into_item`] say what is wrong with it.
    pub data: String,
}

impl RawItem {
    /// The data parsed into `T`, straight from its text.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.data)
    }

    /// The item with its data parsed into a tree of values.
    pub fn into_item(self) -> Result<Item, serde_json::Error> {
        Ok(Item {
            data: serde_json::from_str(&self.data)?,
            pk: self.pk,
            sk: self.sk,
            version: self.version,
            ttl: self.ttl,
        })
    }
}

impl From<Item> for RawItem {
    /// The item's data written out as JSON text (what an adapter that reads trees, such as
    /// DynamoDB's, answers [`crate::Table::query_raw`] with).
    fn from(item: Item) -> Self {
        Self {
            data: item.data.to_string(),
            pk: item.pk,
            sk: item.sk,
            version: item.version,
            ttl: item.ttl,
        }
    }
}

/// What an adapter's query reads an item into ([`Item`] or [`RawItem`]): something with a
/// sort key, for the page's cursor.
#[cfg(any(feature = "sqlite", feature = "dynamo"))]
pub(crate) trait Keyed {
    fn sk(&self) -> &str;
}

#[cfg(any(feature = "sqlite", feature = "dynamo"))]
impl Keyed for Item {
    fn sk(&self) -> &str {
        &self.sk
    }
}

#[cfg(any(feature = "sqlite", feature = "dynamo"))]
impl Keyed for RawItem {
    fn sk(&self) -> &str {
        &self.sk
    }
}

/// The integer a float with an integral value that fits one is stored as ([`Canonical`]'s
/// rule); `None` for every other number, stored as it is.
fn integral(n: &serde_json::Number) -> Option<serde_json::Number> {
    let f = n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0)?;
    // Integral and in range, so the casts are exact: the same integer DynamoDB's decimal
    // string parses back to.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if (-9.2e18..=9.2e18).contains(&f) {
        Some((f as i64).into())
    } else if (0.0..1.8e19).contains(&f) {
        Some((f as u64).into())
    } else {
        None
    }
}

/// Rewrites `value`'s numbers, in place, into the form the store keeps them in and every read
/// returns (a float with an integral value, `1.0`, becomes the integer `1`; see [`Canonical`]);
/// true when any changed. For a writer that goes on with what it stored: the value it holds
/// is then the one a later read gets.
pub fn canonicalize_numbers(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Number(n) => match integral(n) {
            Some(i) => {
                *n = i;
                true
            }
            None => false,
        },
        Value::Array(a) => a.iter_mut().fold(false, |c, v| canonicalize_numbers(v) | c),
        Value::Object(o) => o
            .values_mut()
            .fold(false, |c, v| canonicalize_numbers(v) | c),
        _ => false,
    }
}

/// Writes `value` with its numbers in the one form both backends round-trip identically: a
/// float with an integral value that fits an integer is written as that integer. DynamoDB stores
/// numbers as decimal strings, so `1.0` comes back as `1`; doing the same before writing to
/// SQLite keeps the two adapters byte-for-byte equal. It serialises the borrowed value as it
/// walks it, with no copy of the tree (a stored step holds the model's whole response).
// The SQLite adapter's (DynamoDB applies it itself); a build without SQLite has no caller.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) struct Canonical<'a>(pub(crate) &'a serde_json::Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        use serde_json::Value;
        match self.0 {
            Value::Number(n) => integral(n).as_ref().unwrap_or(n).serialize(serializer),
            Value::Array(a) => {
                let mut seq = serializer.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(&Canonical(v))?;
                }
                seq.end()
            }
            Value::Object(o) => {
                let mut map = serializer.serialize_map(Some(o.len()))?;
                for (k, v) in o {
                    map.serialize_entry(k, &Canonical(v))?;
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::Canonical;
    use serde_json::json;

    fn written(v: &serde_json::Value) -> String {
        serde_json::to_string(&Canonical(v)).unwrap()
    }

    #[test]
    fn integral_floats_are_written_as_integers_at_every_depth() {
        let v = json!({"b": [1.0, -3.0, 1.5, {"c": 2.0}], "a": 1e19, "z": 1e300, "n": null, "s": "1.0"});
        assert_eq!(
            written(&v),
            r#"{"a":10000000000000000000,"b":[1,-3,1.5,{"c":2}],"n":null,"s":"1.0","z":1e+300}"#
        );
    }

    #[test]
    fn numbers_canonicalized_in_place_are_written_the_same() {
        let mut v = json!({"b": [1.0, -3.0, 1.5, {"c": 2.0}], "a": 1e19, "z": 1e300, "s": "1.0"});
        let before = written(&v);
        assert!(super::canonicalize_numbers(&mut v));
        assert_eq!(serde_json::to_string(&v).unwrap(), before);
        assert_eq!(v["b"][0], json!(1));
        assert!(v["b"][0].is_i64());
        let mut plain = json!({"k": [true, "x", 7, -7, 0.25, {}, []], "e": {"u": u64::MAX}});
        let copy = plain.clone();
        assert!(
            !super::canonicalize_numbers(&mut plain),
            "nothing to change"
        );
        assert_eq!(plain, copy);
    }

    #[test]
    fn everything_else_is_written_as_serde_json_writes_it() {
        let v = json!({"k": [true, false, "x\"y", 7, -7, 0.25, {}, []], "e": {"u": u64::MAX}});
        assert_eq!(written(&v), serde_json::to_string(&v).unwrap());
    }
}
