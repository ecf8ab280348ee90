//! The `Table` port.

use async_trait::async_trait;

use crate::{Item, Page, Query, RawItem, StoreError, WriteOp};

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

    /// Applies 1 to 100 operations one after another, each on its own condition, and stops at
    /// the first whose condition fails: the number applied (all of them, or the index of the
    /// one that failed). Not one transaction: an error part-way (a lost connection) may leave
    /// any prefix applied, so callers write only what is safe to write again (`put_if_absent`).
    /// The operations are checked as [`Table::write`] checks a transaction before any is
    /// applied. For writes that must land in order but need not land together, where a backend
    /// can commit them at once for less: SQLite applies them in one transaction (one commit for
    /// all); this default writes them one by one (on DynamoDB a `PutItem` each, which costs
    /// half a two-item transaction's write units).
    async fn write_in_order(&self, ops: Vec<WriteOp>) -> Result<usize, StoreError> {
        crate::validate::validate_transaction(&ops)?;
        let mut applied = 0;
        for op in ops {
            match self.write(vec![op]).await {
                Ok(()) => applied += 1,
                Err(StoreError::ConditionFailed { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(applied)
    }

    /// How many live items [`Table::query_all`] would return for `query` with `max_items`
    /// (its page size does not matter), without handing them over: for a caller that needs
    /// only the number. This default reads them; the SQLite adapter counts them in place.
    async fn count(&self, query: &Query, max_items: usize) -> Result<usize, StoreError> {
        Ok(self.query_all(query, max_items).await?.len())
    }

    /// Every live item matching the query, following cursors to the end. Meant for small
    /// partitions (a conversation's rows, a user's records); `max_items` bounds the work.
    async fn query_all(&self, query: &Query, max_items: usize) -> Result<Vec<Item>, StoreError> {
        let mut gathered = Gathered::new(query, max_items);
        while let Some(q) = &gathered.next {
            let page = self.query(q).await?;
            gathered.add(page);
        }
        Ok(gathered.items)
    }

    /// [`Table::query`], each item's data left as the JSON text the store holds, for a reader
    /// that parses it straight into its own type ([`RawItem`]). This default writes out each
    /// item [`Table::query`] answers (an adapter that reads trees has nothing better); the
    /// SQLite adapter hands over its text as stored.
    async fn query_raw(&self, query: &Query) -> Result<Page<RawItem>, StoreError> {
        let page = self.query(query).await?;
        Ok(Page {
            items: page.items.into_iter().map(RawItem::from).collect(),
            next: page.next,
        })
    }

    /// [`Table::query_all`] of [`Table::query_raw`]'s pages.
    async fn query_all_raw(
        &self,
        query: &Query,
        max_items: usize,
    ) -> Result<Vec<RawItem>, StoreError> {
        let mut gathered = Gathered::new(query, max_items);
        while let Some(q) = &gathered.next {
            let page = self.query_raw(q).await?;
            gathered.add(page);
        }
        Ok(gathered.items)
    }
}

/// The items of a query's pages, gathered by [`Table::query_all`] and
/// [`Table::query_all_raw`]: the query to ask next, until the pages end or `max_items` are in.
struct Gathered<I> {
    items: Vec<I>,
    max_items: usize,
    /// The query for the next page; `None` once done.
    next: Option<Query>,
}

impl<I> Gathered<I> {
    fn new(query: &Query, max_items: usize) -> Self {
        Self {
            items: Vec::new(),
            max_items,
            next: Some(query.clone()),
        }
    }

    fn add(&mut self, page: Page<I>) {
        self.items.extend(page.items);
        if self.items.len() >= self.max_items {
            self.items.truncate(self.max_items);
            self.next = None;
        } else if let (Some(q), Some(cursor)) = (&mut self.next, page.next) {
            q.after = Some(cursor);
        } else {
            self.next = None;
        }
    }
}
