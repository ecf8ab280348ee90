//! Queries within one partition.

/// A condition on the sort key, as DynamoDB's key conditions allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortKey {
    /// Every item of the partition.
    All,
    /// Sort keys starting with this string (`begins_with`).
    Prefix(String),
    /// Sort keys from the first to the second, both inclusive (`BETWEEN`).
    Between(String, String),
    /// Sort keys strictly greater than this.
    After(String),
    /// Sort keys greater than or equal to this.
    From(String),
    /// Sort keys strictly less than this.
    Before(String),
}

/// Direction of a query over the sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Smallest sort key first.
    #[default]
    Ascending,
    /// Largest sort key first.
    Descending,
}

/// Where the previous page stopped; pass it back to get the next page. It holds the last sort
/// key returned, so it stays valid across processes and adapters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor(pub(crate) String);

impl Cursor {
    /// The cursor as a string a client can hand back later.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A cursor from a string previously returned by [`Cursor::as_str`].
    pub fn from_token(token: impl Into<String>) -> Self {
        Self(token.into())
    }
}

/// A query over one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The partition.
    pub pk: String,
    /// Which sort keys.
    pub sort: SortKey,
    /// In which order.
    pub order: Order,
    /// At most this many items in the page (at least 1).
    pub limit: usize,
    /// Continue after this cursor.
    pub after: Option<Cursor>,
}

impl Query {
    /// Page size when none is given.
    pub const DEFAULT_LIMIT: usize = 100;

    /// Every item of `pk`, ascending, in pages of [`Query::DEFAULT_LIMIT`].
    pub fn partition(pk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sort: SortKey::All,
            order: Order::Ascending,
            limit: Self::DEFAULT_LIMIT,
            after: None,
        }
    }

    /// Items of `pk` whose sort key starts with `prefix`.
    pub fn prefix(pk: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self::partition(pk).sort(SortKey::Prefix(prefix.into()))
    }

    /// The same query with another sort-key condition.
    pub fn sort(mut self, sort: SortKey) -> Self {
        self.sort = sort;
        self
    }

    /// The same query, largest sort key first.
    pub fn descending(mut self) -> Self {
        self.order = Order::Descending;
        self
    }

    /// The same query with a page size (0 is treated as 1).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// The same query continuing after `cursor`.
    pub fn after(mut self, cursor: Option<Cursor>) -> Self {
        self.after = cursor;
        self
    }

    /// Whether `sk` satisfies the sort-key condition (used by adapters that filter in memory).
    pub fn matches(&self, sk: &str) -> bool {
        match &self.sort {
            SortKey::All => true,
            SortKey::Prefix(p) => sk.starts_with(p.as_str()),
            SortKey::Between(a, b) => a.as_str() <= sk && sk <= b.as_str(),
            SortKey::After(a) => sk > a.as_str(),
            SortKey::From(a) => sk >= a.as_str(),
            SortKey::Before(b) => sk < b.as_str(),
        }
    }
}

/// One page of query results: [`crate::Item`]s, or [`crate::RawItem`]s from
/// [`crate::Table::query_raw`].
#[derive(Debug, Clone, PartialEq)]
pub struct Page<I = crate::Item> {
    /// The items, in the query's order; none expired.
    pub items: Vec<I>,
    /// Present exactly when more matching items exist after this page.
    pub next: Option<Cursor>,
}

impl<I> Default for Page<I> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            next: None,
        }
    }
}

/// The page of `limit` items an adapter answers when it read up to one more than asked
/// (`items`): the extra item says, exactly, that another page exists, and the cursor is the
/// last kept item's sort key.
#[cfg(any(feature = "sqlite", feature = "dynamo"))]
pub(crate) fn page_of<I: crate::item::Keyed>(mut items: Vec<I>, limit: usize) -> Page<I> {
    let next = if items.len() > limit {
        items.truncate(limit);
        items.last().map(|i| Cursor(i.sk().to_owned()))
    } else {
        None
    };
    Page { items, next }
}
