//! Checks every adapter runs on a transaction before touching its backend, so malformed
//! transactions fail the same way everywhere and nothing is half-written.

use std::collections::HashSet;

use crate::limits::{
    GET_MANY_KEYS_MAX, ITEM_BYTES_MAX, PARTITION_KEY_BYTES_MAX, SORT_KEY_BYTES_MAX,
    TRANSACTION_OPS_MAX,
};
use crate::{StoreError, WriteOp, item_size};

/// Rejects a query without a partition key (both backends would refuse or misread it).
#[cfg(any(feature = "sqlite", feature = "dynamo"))]
pub(crate) fn validate_query(query: &crate::Query) -> Result<(), StoreError> {
    if query.pk.is_empty() {
        return Err(StoreError::InvalidTransaction(
            "partition key must not be empty".into(),
        ));
    }
    Ok(())
}

/// Rejects empty or oversized transactions, an item named twice, bad keys and items over the
/// size limit.
pub(crate) fn validate_transaction(ops: &[WriteOp]) -> Result<(), StoreError> {
    if ops.is_empty() {
        return Err(StoreError::InvalidTransaction(
            "a transaction needs at least one operation".into(),
        ));
    }
    if ops.len() > TRANSACTION_OPS_MAX {
        return Err(StoreError::InvalidTransaction(format!(
            "{} operations, more than the {TRANSACTION_OPS_MAX} a transaction may hold",
            ops.len()
        )));
    }
    let mut seen = HashSet::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let (pk, sk) = op.key();
        validate_key(pk, sk)?;
        if !seen.insert((pk, sk)) {
            return Err(StoreError::InvalidTransaction(format!(
                "operation {i} names item {pk} / {sk} a second time"
            )));
        }
        if let WriteOp::Put { item, .. } = op {
            let bytes = item_size(item);
            if bytes > ITEM_BYTES_MAX {
                return Err(StoreError::ItemTooLarge {
                    pk: item.pk.clone(),
                    sk: item.sk.clone(),
                    bytes,
                    max: ITEM_BYTES_MAX,
                });
            }
        }
    }
    Ok(())
}

/// Rejects a `get_many` DynamoDB would refuse: more than [`GET_MANY_KEYS_MAX`] keys, or any
/// key [`validate_key`] refuses. Repeated keys are fine (each adapter answers every position).
pub(crate) fn validate_keys(keys: &[(String, String)]) -> Result<(), StoreError> {
    if keys.len() > GET_MANY_KEYS_MAX {
        return Err(StoreError::InvalidTransaction(format!(
            "{} keys in one read, over {GET_MANY_KEYS_MAX}",
            keys.len()
        )));
    }
    keys.iter().try_for_each(|(pk, sk)| validate_key(pk, sk))
}

/// Rejects keys DynamoDB would refuse: empty, or longer than its limits.
// Shared by the adapters; a build with neither (the webhook function) has no caller.
#[cfg_attr(not(any(feature = "sqlite", feature = "dynamo")), allow(dead_code))]
pub(crate) fn validate_key(pk: &str, sk: &str) -> Result<(), StoreError> {
    if pk.is_empty() || sk.is_empty() {
        return Err(StoreError::InvalidTransaction(
            "partition and sort keys must not be empty".into(),
        ));
    }
    if pk.len() > PARTITION_KEY_BYTES_MAX {
        return Err(StoreError::InvalidTransaction(format!(
            "partition key is {} bytes, over {PARTITION_KEY_BYTES_MAX}",
            pk.len()
        )));
    }
    if sk.len() > SORT_KEY_BYTES_MAX {
        return Err(StoreError::InvalidTransaction(format!(
            "sort key is {} bytes, over {SORT_KEY_BYTES_MAX}",
            sk.len()
        )));
    }
    Ok(())
}
