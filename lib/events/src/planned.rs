//! [`Planned`]: a change that has been checked and is ready to commit.
//!
//! Service functions that change data read what they need, check it, and return a `Planned`
//! holding the audited transaction and the value it produces. The web UI commits it as is
//! ([`Planned::commit`]); a tool handler commits it together with the result it will return
//! ([`Planned::commit_with`]), so a retried tool call gets the stored result back and never
//! acts twice.

use serde::Serialize;
use serde::de::DeserializeOwned;
use steward_harness::{Audited, Ctx, ServiceError};

/// A checked change and the value it produces. Nothing is written until it is committed.
#[must_use = "a planned change does nothing until it is committed"]
#[derive(Debug)]
pub struct Planned<T> {
    tx: Audited,
    value: T,
}

impl<T> Planned<T> {
    /// A change made of `tx` that produces `value`.
    pub(crate) fn new(tx: Audited, value: T) -> Self {
        Self { tx, value }
    }

    /// Nothing to change (the record already is as asked): commits write nothing.
    pub(crate) fn unchanged(ctx: &Ctx, value: T) -> Self {
        Self {
            tx: Audited::new(ctx),
            value,
        }
    }

    /// The value the change produces.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// Whether committing would write anything.
    pub fn changes_anything(&self) -> bool {
        !self.tx.is_empty()
    }

    /// Commits the change and returns its value. For callers without an effect key (the web
    /// UI, operator commands); a tool handler uses [`Planned::commit_with`], so that a retried
    /// call gets the result stored the first time.
    pub async fn commit(self) -> Result<T, ServiceError> {
        self.tx.commit().await?;
        Ok(self.value)
    }

    /// Commits the change together with `describe(value)` as the tool call's stored result,
    /// and returns that result (or, for a call that already committed, the one stored then).
    pub async fn commit_with<R>(self, describe: impl FnOnce(&T) -> R) -> Result<R, ServiceError>
    where
        R: Serialize + DeserializeOwned,
    {
        let result = describe(&self.value);
        self.tx.commit_with_result(result).await
    }
}

/// A record after an update, and which of its fields the update changed (in words, for
/// summaries: "dates", "venue"). Empty when the record already was as asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Updated<T> {
    /// The record as it is after the update.
    pub record: T,
    /// What changed, in words.
    pub changed: Vec<&'static str>,
}

impl<T> Updated<T> {
    /// Whether the update changed nothing.
    pub fn is_unchanged(&self) -> bool {
        self.changed.is_empty()
    }

    /// The changed fields as a phrase: "dates, venue and capacity".
    pub fn changed_phrase(&self) -> String {
        join_words(&self.changed)
    }
}

/// Joins words as a phrase: "a", "a and b", "a, b and c".
pub fn join_words<S: AsRef<str>>(words: &[S]) -> String {
    match words {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", init.join(", "), last.as_ref())
        }
    }
}
