//! Reading records: typed loads and prefix listings over the caller's partition.

use serde::de::DeserializeOwned;
use steward_harness::{Ctx, RecordKey, ServiceError};
use steward_store::Item;

/// A record that must exist: parsed, with its item (for version-checked writes).
pub(crate) async fn load<T: DeserializeOwned>(
    ctx: &Ctx,
    key: &RecordKey,
    missing: impl FnOnce() -> ServiceError,
) -> Result<(T, Item), ServiceError> {
    load_opt(ctx, key).await?.ok_or_else(missing)
}

/// A record that may be absent.
pub(crate) async fn load_opt<T: DeserializeOwned>(
    ctx: &Ctx,
    key: &RecordKey,
) -> Result<Option<(T, Item)>, ServiceError> {
    match ctx.get(key).await? {
        Some(item) => Ok(Some((item.parse()?, item))),
        None => Ok(None),
    }
}

/// Up to `max` of the caller's records under `prefix`, in key order, parsed.
pub(crate) async fn list<T: DeserializeOwned>(
    ctx: &Ctx,
    prefix: &str,
    max: usize,
) -> Result<Vec<(T, Item)>, ServiceError> {
    ctx.query_records(prefix, max)
        .await?
        .into_iter()
        .map(|item| Ok((item.parse()?, item)))
        .collect()
}

/// Up to `max` of the caller's records under `prefix`, in key order, each parsed straight from
/// the stored text: for a reader that will not write them back (no [`Item`] to hand over).
pub(crate) async fn list_values<T: DeserializeOwned>(
    ctx: &Ctx,
    prefix: &str,
    max: usize,
) -> Result<Vec<T>, ServiceError> {
    ctx.query_records_raw(prefix, max)
        .await?
        .iter()
        .map(|item| Ok(item.parse()?))
        .collect()
}
