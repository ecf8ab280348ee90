//! Operations of an atomic [`crate::Table::write`] transaction.

use crate::item::Item;

/// A precondition on the current state of one item, evaluated atomically with the whole
/// transaction. An expired item is absent here as everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// No live item exists under the key.
    Absent,
    /// A live item exists under the key.
    Present,
    /// A live item exists and its version is exactly this.
    VersionEquals(u64),
}

/// One operation of a transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// Create or replace an item.
    Put {
        /// The item to store.
        item: Item,
        /// Optional precondition on what is there now.
        condition: Option<Condition>,
    },
    /// Remove an item (a no-op when absent, unless the condition says otherwise).
    Delete {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// Optional precondition on what is there now.
        condition: Option<Condition>,
    },
    /// Write nothing; only require that the condition holds.
    Check {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// The condition that must hold.
        condition: Condition,
    },
}

impl WriteOp {
    /// An unconditional put.
    pub fn put(item: Item) -> Self {
        Self::Put {
            item,
            condition: None,
        }
    }

    /// A put that only succeeds when no live item exists under its key.
    pub fn put_if_absent(item: Item) -> Self {
        Self::Put {
            item,
            condition: Some(Condition::Absent),
        }
    }

    /// A put that only succeeds when the stored item's version is `expected`.
    pub fn put_if_version(item: Item, expected: u64) -> Self {
        Self::Put {
            item,
            condition: Some(Condition::VersionEquals(expected)),
        }
    }

    /// An unconditional delete.
    pub fn delete(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self::Delete {
            pk: pk.into(),
            sk: sk.into(),
            condition: None,
        }
    }

    /// A delete guarded by a condition (e.g. consume a one-time code only if it is present).
    pub fn delete_if(pk: impl Into<String>, sk: impl Into<String>, condition: Condition) -> Self {
        Self::Delete {
            pk: pk.into(),
            sk: sk.into(),
            condition: Some(condition),
        }
    }

    /// A pure condition check.
    pub fn check(pk: impl Into<String>, sk: impl Into<String>, condition: Condition) -> Self {
        Self::Check {
            pk: pk.into(),
            sk: sk.into(),
            condition,
        }
    }

    /// The key this operation touches.
    pub fn key(&self) -> (&str, &str) {
        match self {
            WriteOp::Put { item, .. } => (&item.pk, &item.sk),
            WriteOp::Delete { pk, sk, .. } | WriteOp::Check { pk, sk, .. } => (pk, sk),
        }
    }

    /// The operation's condition, if any.
    pub fn condition(&self) -> Option<Condition> {
        match self {
            WriteOp::Put { condition, .. } | WriteOp::Delete { condition, .. } => *condition,
            WriteOp::Check { condition, .. } => Some(*condition),
        }
    }
}

/// Whether `condition` holds for the current live item (`None` when absent or expired).
// The SQLite adapter's (DynamoDB applies it itself); a build without SQLite has no caller.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn holds(condition: Condition, current: Option<u64>) -> bool {
    match condition {
        Condition::Absent => current.is_none(),
        Condition::Present => current.is_some(),
        Condition::VersionEquals(v) => current == Some(v),
    }
}
