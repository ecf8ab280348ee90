//! The error type of the service layer.

use steward_store::StoreError;

use crate::ids::IdError;

/// What a service function can fail with. Every variant but [`ServiceError::Store`] and
/// [`ServiceError::Internal`] is an *expected* failure: its `Display` is a sentence a person or
/// a model can act on, and it is shown to them as is. `Store` and `Internal` are bugs or
/// infrastructure trouble: callers show a generic "internal error" and log the detail.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The thing asked for does not exist (or belongs to someone else, which looks the same).
    #[error("{what} was not found. Check the id, for example with a list tool, and try again.")]
    NotFound {
        /// What was looked for, e.g. `event 01J…` or `linking code ABC234`.
        what: String,
    },
    /// An input value is wrong.
    #[error("Invalid {field}: {problem}")]
    Invalid {
        /// The field at fault, as the caller named it.
        field: String,
        /// What is wrong and, where possible, what would be right.
        problem: String,
    },
    /// A record changed between reading it and writing it (optimistic concurrency).
    #[error(
        "{what} changed since you read it, so nothing was saved. Read it again and retry if the change still makes sense."
    )]
    Conflict {
        /// What changed, e.g. `event 01J…`.
        what: String,
    },
    /// Something with that identity already exists (a unique name, an identity, a slug).
    #[error("{what} already exists.")]
    AlreadyExists {
        /// What already exists.
        what: String,
    },
    /// The caller may not do this right now (e.g. the account is paused).
    #[error("Not allowed: {reason}")]
    Forbidden {
        /// Why, in words the caller can act on.
        reason: String,
    },
    /// One change is too big to save atomically.
    #[error(
        "This change touches {changes} records, but at most {max} can be changed in one step. Make it in smaller parts."
    )]
    TooManyChanges {
        /// How many records the change touches.
        changes: usize,
        /// The most one audited transaction can hold.
        max: usize,
    },
    /// Undo was asked for but cannot be done safely.
    #[error("Could not undo: {reason}. Nothing was changed.")]
    CannotUndo {
        /// Why, e.g. a record changed since, or there is nothing left to undo.
        reason: String,
    },
    /// A risky call was not run because its confirmation is missing or spent (the
    /// confirmation gate).
    #[error("NOT EXECUTED: {reason}. Ask the user to confirm again.")]
    NotConfirmed {
        /// Why it was not run.
        reason: String,
    },
    /// The store failed: infrastructure trouble or a bug. Not an expected failure.
    #[error("storage error: {0}")]
    Store(#[from] StoreError),
    /// A broken invariant inside the harness or the domain (a bug). Not an expected failure.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ServiceError {
    /// Shorthand for [`ServiceError::NotFound`].
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound { what: what.into() }
    }

    /// Shorthand for [`ServiceError::Invalid`].
    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// Shorthand for [`ServiceError::Conflict`].
    pub fn conflict(what: impl Into<String>) -> Self {
        Self::Conflict { what: what.into() }
    }

    /// Shorthand for [`ServiceError::AlreadyExists`].
    pub fn already_exists(what: impl Into<String>) -> Self {
        Self::AlreadyExists { what: what.into() }
    }

    /// Shorthand for [`ServiceError::Forbidden`].
    pub fn forbidden(reason: impl Into<String>) -> Self {
        Self::Forbidden {
            reason: reason.into(),
        }
    }

    /// Shorthand for [`ServiceError::Internal`].
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::Internal(detail.into())
    }

    /// Whether this is an expected failure whose message may be shown to the caller as is.
    /// `false` for store and internal errors, which must be logged and hidden.
    pub fn is_expected(&self) -> bool {
        !matches!(self, Self::Store(_) | Self::Internal(_))
    }
}

impl From<IdError> for ServiceError {
    fn from(e: IdError) -> Self {
        Self::Invalid {
            field: e.kind.to_owned(),
            problem: e.problem,
        }
    }
}

impl From<serde_json::Error> for ServiceError {
    /// A record that does not (de)serialize is a bug in our own types, not the caller's fault.
    fn from(e: serde_json::Error) -> Self {
        Self::Internal(format!("record (de)serialization failed: {e}"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_sentences() {
        let e = ServiceError::not_found("event 42");
        assert_eq!(
            e.to_string(),
            "event 42 was not found. Check the id, for example with a list tool, and try again."
        );
        let e = ServiceError::invalid("time zone", "\"Mars/Base\" is not an IANA time zone");
        assert_eq!(
            e.to_string(),
            "Invalid time zone: \"Mars/Base\" is not an IANA time zone"
        );
        assert!(
            ServiceError::conflict("event 42")
                .to_string()
                .starts_with("event 42 changed since you read it")
        );
        assert!(
            ServiceError::forbidden("the account is paused")
                .to_string()
                .starts_with("Not allowed: the account is paused")
        );
        let e = ServiceError::TooManyChanges {
            changes: 60,
            max: 48,
        };
        assert!(e.to_string().contains("60 records"));
        assert!(e.to_string().contains("at most 48"));
    }

    #[test]
    fn store_and_internal_errors_are_not_expected() {
        assert!(ServiceError::not_found("x").is_expected());
        assert!(!ServiceError::from(StoreError::Backend("disk".into())).is_expected());
        assert!(!ServiceError::internal("bug").is_expected());
    }

    #[test]
    fn id_errors_become_invalid_input() {
        let e: ServiceError = crate::ids::UserId::parse("").unwrap_err().into();
        assert!(matches!(e, ServiceError::Invalid { ref field, .. } if field == "user id"));
    }
}
