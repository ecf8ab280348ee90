//! The `Table` port.

use async_trait::async_trait;

use crate::{Item, Page, Query, StoreError, WriteOp};

/// A DynamoDB-shaped table: items under (partition key, sort key), queried per partition and
/// written in atomic conditional transactions. Expired items are absent everywhere.
#[async_trait]
pub trait Table: Send + Sync + std::fmt::Debug + 'static {
    /// The live item under the key, if any.
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError>;

    /// The live items under `keys` (pairs of partition and sort key), answered in the same
    /// order: `None` where there is no live item. 0 to [`crate::GET_MANY_KEYS_MAX`] keys, a key
    /// may repeat. One call to the backend where it has one (DynamoDB's `BatchGetItem`; one
    /// read transaction on SQLite, so the answers are one snapshot there); this default asks
    /// [`Table::get`] key by key.
    async fn get_many(&self, keys: &[(String, String)]) -> Result<Vec<Option<Item>>, StoreError> {
        crate::validate::validate_keys(keys)?;
        let mut out = Vec::with_capacity(keys.len());
        for (pk, sk) in keys {
            out.push(self.get(pk, sk).await?);
        }
        Ok(out)
    }

    /// One page of live items of a partition matching the query.
    async fn query(&self, query: &Query) -> Result<Page, StoreError>;

    /// Applies 1 to 100 operations atomically: either every condition holds and every
    /// operation is applied, or nothing is written and the first failing operation is named
    /// in [`StoreError::ConditionFailed`].
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError>;

    /// How many live items [`Table::query_all`] would return for `query` with `max_items`
    /// (its page size does not matter), without handing them over: for a caller that needs
    /// only the number. This default reads them; the SQLite adapter counts them in place.
    async fn count(&self, query: &Query, max_items: usize) -> Result<usize, StoreError> {
        Ok(self.query_all(query, max_items).await?.len())
    }

    /// Every live item matching the query, following cursors to the end. Meant for small
    /// partitions (a conversation's rows, a user's records); `max_items` bounds the work.
    async fn query_all(&self, query: &Query, max_items: usize) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        let mut q = query.clone();
        loop {
            let page = self.query(&q).await?;
            out.extend(page.items);
            if out.len() >= max_items {
                out.truncate(max_items);
                return Ok(out);
            }
            match page.next {
                Some(c) => q.after = Some(c),
                None => return Ok(out),
            }
        }
    }
}
