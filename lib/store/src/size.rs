//! Item size as DynamoDB counts it, so the 400 KB limit is enforced identically by every
//! adapter before anything is written.
//!
//! DynamoDB's rules: an attribute costs its name's UTF-8 length plus its value; a string its
//! UTF-8 length; a number about one byte per two significant digits plus one (we charge the
//! maximum, 21, so our count is never below DynamoDB's); a boolean or null 1; a map or list 3
//! bytes plus each element plus 1 byte per element, map keys counted like attribute names.

use crate::Item;

/// The most a DynamoDB number can cost.
const NUMBER_BYTES: usize = 21;
/// Overhead of a map or list value.
const CONTAINER_BYTES: usize = 3;

/// Size of `item` in bytes as DynamoDB would count it (never less than DynamoDB's own count).
pub fn item_size(item: &Item) -> usize {
    let keys = "pk".len() + item.pk.len() + "sk".len() + item.sk.len();
    let version = "version".len() + NUMBER_BYTES;
    let ttl = item.ttl.map_or(0, |_| "ttl".len() + NUMBER_BYTES);
    keys + version + ttl + "data".len() + value_size(&item.data)
}

fn value_size(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(_) => 1,
        Value::Number(_) => NUMBER_BYTES,
        Value::String(s) => s.len(),
        Value::Array(a) => CONTAINER_BYTES + a.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        Value::Object(o) => {
            CONTAINER_BYTES
                + o.iter()
                    .map(|(k, v)| 1 + k.len() + value_size(v))
                    .sum::<usize>()
        }
    }
}
