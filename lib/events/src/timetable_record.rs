//! Where an event's timetable is kept, and how a reader tells whether it is still up to date
//! without reading it. Two records, written by one audited transaction (so undone together):
//!
//! * the **stamp**, `EVENT#e#TIMETABLE`, inside the event: when the timetable was built and the
//!   SHA-256 of the engine input it was built from, a few dozen bytes. The per-turn context
//!   block reads only the stamp (beside the records it reads anyway) to say "up to date".
//! * the **document**, `TIMETABLE#e`, outside the event's key range: the timetable itself, tens
//!   of kilobytes for hundreds of sessions. Nothing that walks the `EVENT#` range reads it —
//!   above all the newest-events read of every context block, which used to read a newest
//!   event's whole timetable only to skip past it.
//!
//! Before 2026-12-04 one record at the stamp's key held the whole document with a copy of its
//! input. Such a record is still read as it is (compared input to input) until the next build
//! replaces it with a stamp and a document.
//!
//! Below the record modules (like `session_record.rs`): `events.rs` deletes the document with
//! its event, and [`crate::schedule`] builds and reads through here.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use steward_harness::{Audited, Ctx, ServiceError};
use steward_store::Item;

use crate::ids::EventId;
use crate::keys;
use crate::timetable::{Timetable, TimetableInput};

/// The stored document: the timetable and when it was built (what it was built from is in its
/// stamp).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTimetable {
    /// What the engine returned (checked).
    pub timetable: Timetable,
    /// When it was built, in epoch milliseconds.
    pub built_ms: i64,
}

/// The stamp record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    /// [`fingerprint`] of the input the document was built from.
    input_sha256: String,
    /// When it was built, in epoch milliseconds.
    built_ms: i64,
}

/// The one-record layout from before the stamp: the document with its input.
#[derive(Debug, Deserialize)]
struct WholeDocument {
    input: TimetableInput,
    timetable: Timetable,
    built_ms: i64,
}

/// What a stored timetable was built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Basis {
    /// The input's [`fingerprint`] (a stamp).
    Fingerprint(String),
    /// The input itself (a record in the one-record layout).
    Input(Box<TimetableInput>),
}

impl Basis {
    /// What the stored timetable whose stamp is `stamp` was built from (a record in the
    /// one-record layout is read whole), to compare with [`Basis::matches`].
    pub(crate) fn of(stamp: &Item) -> Result<Self, ServiceError> {
        if stamp.data.get("input_sha256").is_some() {
            let s: Stamp = stamp.parse()?;
            Ok(Self::Fingerprint(s.input_sha256))
        } else {
            let whole: WholeDocument = stamp.parse()?;
            Ok(Self::Input(Box::new(whole.input)))
        }
    }

    /// Whether it is `input` (the event's records as they are now).
    pub(crate) fn matches(&self, input: &TimetableInput) -> bool {
        match self {
            Self::Fingerprint(f) => *f == fingerprint(input),
            Self::Input(stored) => **stored == *input,
        }
    }
}

/// An event's stored timetable as read, with the items a rebuild replaces.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The document.
    pub doc: StoredTimetable,
    basis: Basis,
    stamp_item: Item,
    /// `None` in the one-record layout.
    doc_item: Option<Item>,
}

impl Stored {
    /// Whether it was built from `input` (the event's records as they are now).
    pub fn built_from(&self, input: &TimetableInput) -> bool {
        self.basis.matches(input)
    }
}

/// SHA-256 (hex) of `input`'s JSON. The encoding is deterministic (structs and lists only,
/// fields in declaration order), so equal inputs give equal fingerprints; an engine input that
/// gains a field changes every fingerprint, which reads as "out of date": rebuilding fixes it.
pub(crate) fn fingerprint(input: &TimetableInput) -> String {
    let json = serde_json::to_vec(input).unwrap_or_default();
    Sha256::digest(&json)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The event's stored timetable, or `None` when none is built.
pub(crate) async fn load(ctx: &Ctx, event: &EventId) -> Result<Option<Stored>, ServiceError> {
    let Some(stamp_item) = ctx.get(&keys::timetable(ctx, event)).await? else {
        return Ok(None);
    };
    if stamp_item.data.get("input_sha256").is_none() {
        let whole: WholeDocument = stamp_item.parse()?;
        return Ok(Some(Stored {
            doc: StoredTimetable {
                timetable: whole.timetable,
                built_ms: whole.built_ms,
            },
            basis: Basis::Input(Box::new(whole.input)),
            stamp_item,
            doc_item: None,
        }));
    }
    let stamp: Stamp = stamp_item.parse()?;
    // Both are written, undone and deleted together: a stamp without its document is a bug.
    let Some(doc_item) = ctx.get(&keys::timetable_doc(ctx, event)).await? else {
        return Err(ServiceError::internal(format!(
            "the timetable of event {event} has a stamp but no document"
        )));
    };
    Ok(Some(Stored {
        doc: doc_item.parse()?,
        basis: Basis::Fingerprint(stamp.input_sha256),
        stamp_item,
        doc_item: Some(doc_item),
    }))
}

/// Adds storing `doc`, built from `input`, to `tx`: the stamp and the document, each replacing
/// what `existing` read (a record in the one-record layout becomes a stamp).
pub(crate) fn write(
    ctx: &Ctx,
    tx: Audited,
    event: &EventId,
    existing: Option<&Stored>,
    input: &TimetableInput,
    doc: &StoredTimetable,
) -> Audited {
    let stamp = Stamp {
        input_sha256: fingerprint(input),
        built_ms: doc.built_ms,
    };
    let tx = match existing {
        Some(s) => tx.replace(&s.stamp_item, &stamp),
        None => tx.put_new(keys::timetable(ctx, event), &stamp),
    };
    match existing.and_then(|s| s.doc_item.as_ref()) {
        Some(item) => tx.replace(item, doc),
        None => tx.put_new(keys::timetable_doc(ctx, event), doc),
    }
}

/// Adds deleting the event's timetable document, if any, to `tx` (its stamp goes with the
/// event's other records).
pub(crate) async fn delete_doc(
    ctx: &Ctx,
    tx: Audited,
    event: &EventId,
) -> Result<Audited, ServiceError> {
    Ok(match ctx.get(&keys::timetable_doc(ctx, event)).await? {
        Some(doc) => tx.delete(&doc),
        None => tx,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::timetable::generator;

    #[test]
    fn equal_inputs_share_a_fingerprint_and_a_change_shows() {
        let suite = generator::benchmark_suite();
        let (_, input) = &suite[0];
        let copy = input.clone();
        assert_eq!(fingerprint(input), fingerprint(&copy));
        assert_eq!(fingerprint(input).len(), 64);
        let mut changed = input.clone();
        changed.changeover_minutes += 5;
        assert_ne!(fingerprint(input), fingerprint(&changed));
        let (_, other) = &suite[1];
        assert_ne!(fingerprint(input), fingerprint(other));
    }
}
