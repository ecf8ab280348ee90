//! [`Planned`]: a change that has been checked and is ready to commit.
//!
//! Service functions that change data read what they need, check it, and return a `Planned`
//! holding the audited transaction and the value it produces. The web UI commits it as is
//! ([`Planned::commit`]); a tool handler commits it together with the result it will return
//! ([`Planned::commit_with`]), so a retried tool call gets the stored result back and never
//! acts twice.

use std::collections::BTreeSet;

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

/// A field of a record that an update can change. The logic branches on the field itself;
/// [`Field::label`] is the word a summary shows ("dates", "venue"), used only when rendering.
pub trait Field: Copy + Ord + std::fmt::Debug {
    /// The field as a summary names it.
    fn label(self) -> &'static str;
}

/// A record whose updates report the fields they changed.
pub trait Record {
    /// Its fields.
    type Field: Field;
}

/// Which fields an update changed: a typed set, in the order the fields are declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed<F: Field>(BTreeSet<F>);

impl<F: Field> Default for Changed<F> {
    fn default() -> Self {
        Self(BTreeSet::new())
    }
}

impl<F: Field> Changed<F> {
    /// Nothing changed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `field` changed.
    pub fn insert(&mut self, field: F) {
        self.0.insert(field);
    }

    /// Sets `slot` to `value` when one is given and it differs, recording `field`.
    pub fn set<V: PartialEq>(&mut self, field: F, slot: &mut V, value: Option<V>) {
        if let Some(value) = value
            && *slot != value
        {
            *slot = value;
            self.insert(field);
        }
    }

    /// Whether `field` changed.
    pub fn contains(&self, field: F) -> bool {
        self.0.contains(&field)
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The changed fields, in declaration order.
    pub fn fields(&self) -> impl Iterator<Item = F> + '_ {
        self.0.iter().copied()
    }

    /// The changed fields' labels, each once, in declaration order.
    pub fn labels(&self) -> Vec<&'static str> {
        let mut labels: Vec<&'static str> = Vec::with_capacity(self.0.len());
        for label in self.fields().map(F::label) {
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        labels
    }

    /// The changed fields as a phrase: "dates, venue and capacity".
    pub fn phrase(&self) -> String {
        join_words(&self.labels())
    }
}

impl<F: Field> FromIterator<F> for Changed<F> {
    fn from_iter<I: IntoIterator<Item = F>>(fields: I) -> Self {
        Self(fields.into_iter().collect())
    }
}

/// A record after an update, and which of its fields the update changed. Empty when the
/// record already was as asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Updated<T: Record> {
    /// The record as it is after the update.
    pub record: T,
    /// What changed.
    pub changed: Changed<T::Field>,
}

impl<T: Record> Updated<T> {
    /// The record, unchanged.
    pub fn unchanged(record: T) -> Self {
        Self {
            record,
            changed: Changed::new(),
        }
    }

    /// Whether the update changed nothing.
    pub fn is_unchanged(&self) -> bool {
        self.changed.is_empty()
    }

    /// The changed fields as a phrase: "dates, venue and capacity".
    pub fn changed_phrase(&self) -> String {
        self.changed.phrase()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Part {
        Name,
        Start,
        End,
        Seats,
    }

    impl Field for Part {
        fn label(self) -> &'static str {
            match self {
                Self::Name => "name",
                Self::Start | Self::End => "hours",
                Self::Seats => "seats",
            }
        }
    }

    #[test]
    fn changed_fields_are_a_set_rendered_once_per_label_in_declaration_order() {
        let mut changed = Changed::new();
        let (mut name, mut start, mut seats) = ("a", 1, 10);
        changed.set(Part::Seats, &mut seats, Some(12));
        changed.set(Part::Start, &mut start, Some(2));
        changed.set(Part::Name, &mut name, Some("a"));
        changed.insert(Part::End);
        assert_eq!((name, start, seats), ("a", 2, 12));
        assert!(!changed.contains(Part::Name), "an equal value is no change");
        assert!(changed.contains(Part::Seats));
        assert_eq!(changed.labels(), ["hours", "seats"]);
        assert_eq!(changed.phrase(), "hours and seats");
        assert!(Changed::<Part>::new().is_empty());
    }
}
