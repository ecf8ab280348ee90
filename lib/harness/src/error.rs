//! The error types of the service layer ([`ServiceError`]) and of a turn ([`TurnError`]),
//! structured until the edge that renders them.

use steward_store::StoreError;

use crate::ids::IdError;

/// What a service function can fail with, as data: which failure, and about what. Every
/// variant but [`ServiceError::Store`] and [`ServiceError::Internal`] is an *expected* failure
/// the caller can act on; `Store` and `Internal` are bugs or infrastructure trouble, logged in
/// full and shown only as a generic "internal error".
///
/// The error carries no presentation. `Display` states the failure plainly (for logs and
/// operator commands); each surface renders it in its own words at the edge:
/// [`ServiceError::for_model`] (a tool result the model reads, with what to do next),
/// [`ServiceError::for_page`] (a web page a person reads) and [`ServiceError::for_mcp`] (a
/// tool result an MCP client reads).
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The thing asked for does not exist (or belongs to someone else, which looks the same).
    #[error("{what} was not found")]
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
    #[error("{what} changed since it was read, so nothing was saved")]
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
    #[error("This change touches {changes} records, but at most {max} can be changed in one step")]
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
    #[error("not executed: {reason}")]
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

/// What a person reads on a web page for a failure that is not expected (the detail is
/// logged, never shown).
pub const PAGE_INTERNAL_ERROR: &str =
    "Something went wrong on our side. It has been logged; please try again.";

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

    /// The failure as a tool result the model reads: what happened and what to do next
    /// ("Check the id, for example with a list tool, …"). Expected failures only: store and
    /// internal errors get a generic message with a reference instead
    /// ([`crate::ToolOutcome::internal`]); here they are given as their `Display`.
    pub fn for_model(&self) -> String {
        match self {
            Self::NotFound { what } => format!(
                "{what} was not found. Check the id, for example with a list tool, and try again."
            ),
            Self::Conflict { what } => format!(
                "{what} changed since you read it, so nothing was saved. Read it again and retry if the change still makes sense."
            ),
            Self::TooManyChanges { .. } => format!("{self}. Make it in smaller parts."),
            Self::NotConfirmed { reason } => {
                format!("NOT EXECUTED: {reason}. Ask the user to confirm again.")
            }
            _ => self.to_string(),
        }
    }

    /// The failure as a tool result an MCP client reads. Like [`ServiceError::for_model`],
    /// except for a spent or missing confirmation: an MCP client cannot confirm in a chat, the
    /// account holder approves on the web app's Approvals page.
    pub fn for_mcp(&self) -> String {
        match self {
            Self::NotConfirmed { reason } => format!(
                "NOT EXECUTED: {reason}. Call the tool again; if it needs approval, the account holder approves it on the Approvals page of the Steward web app."
            ),
            _ => self.for_model(),
        }
    }

    /// The failure as a person reads it on a web page: plain words, no tool names, no
    /// instructions meant for a model. Unexpected failures read [`PAGE_INTERNAL_ERROR`] (the
    /// caller logs the detail).
    pub fn for_page(&self) -> String {
        match self {
            Self::NotFound { what } => format!("{what} was not found."),
            Self::Conflict { what } => format!(
                "{what} changed while you were editing, so nothing was saved. Reload the page and try again."
            ),
            Self::TooManyChanges { .. } => format!("{self}. Make it in smaller parts."),
            Self::NotConfirmed { reason } => {
                format!("Not done: {reason}. Confirm the change again to go ahead.")
            }
            Self::Store(_) | Self::Internal(_) => PAGE_INTERNAL_ERROR.to_owned(),
            _ => self.to_string(),
        }
    }

    /// Whether this is an expected failure whose message may be shown to the caller (in the
    /// rendering of its surface).
    /// `false` for store and internal errors, which must be logged and hidden.
    pub fn is_expected(&self) -> bool {
        !matches!(self, Self::Store(_) | Self::Internal(_))
    }
}

/// Why a turn (or the conversation layer before it) could not finish; the message should be
/// retried (the turn resumes).
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// A service function failed (an identity or linking step before the turn, say).
    #[error("service: {0}")]
    Service(ServiceError),
    /// The reply could not be sent.
    #[error("sending the reply failed: {0}")]
    Send(String),
}

impl From<ServiceError> for TurnError {
    /// A store failure stays [`TurnError::Store`], so callers see one kind for it.
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Store(s) => Self::Store(s),
            other => Self::Service(other),
        }
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
    fn the_model_reads_what_to_do_next() {
        let e = ServiceError::not_found("event 42");
        assert_eq!(
            e.for_model(),
            "event 42 was not found. Check the id, for example with a list tool, and try again."
        );
        let e = ServiceError::invalid("time zone", "\"Mars/Base\" is not an IANA time zone");
        assert_eq!(
            e.for_model(),
            "Invalid time zone: \"Mars/Base\" is not an IANA time zone"
        );
        assert_eq!(
            ServiceError::conflict("event 42").for_model(),
            "event 42 changed since you read it, so nothing was saved. Read it again and retry if the change still makes sense."
        );
        assert!(
            ServiceError::forbidden("the account is paused")
                .for_model()
                .starts_with("Not allowed: the account is paused")
        );
        let e = ServiceError::TooManyChanges {
            changes: 60,
            max: 48,
        };
        assert_eq!(
            e.for_model(),
            "This change touches 60 records, but at most 48 can be changed in one step. Make it in smaller parts."
        );
        let e = ServiceError::NotConfirmed {
            reason: "that confirmation was already used by another call".into(),
        };
        assert_eq!(
            e.for_model(),
            "NOT EXECUTED: that confirmation was already used by another call. Ask the user to confirm again."
        );
    }

    #[test]
    fn pages_read_plain_words_without_tool_instructions() {
        let cases = [
            ServiceError::not_found("Event e_1"),
            ServiceError::conflict("Event e_1"),
            ServiceError::NotConfirmed {
                reason: "that confirmation was already used by another call".into(),
            },
            ServiceError::internal("index out of range"),
            ServiceError::from(StoreError::Backend("disk full".into())),
        ];
        for e in &cases {
            let page = e.for_page();
            for model_words in ["list tool", "NOT EXECUTED", "Ask the user", "Read it again"] {
                assert!(!page.contains(model_words), "{page}");
            }
        }
        assert_eq!(cases[0].for_page(), "Event e_1 was not found.");
        assert_eq!(cases[3].for_page(), PAGE_INTERNAL_ERROR);
        assert_eq!(
            cases[4].for_page(),
            PAGE_INTERNAL_ERROR,
            "no storage detail on a page"
        );
        assert_eq!(
            ServiceError::invalid("capacity", "it is 0").for_page(),
            "Invalid capacity: it is 0"
        );
    }

    #[test]
    fn mcp_clients_are_pointed_at_the_approvals_page() {
        let e = ServiceError::NotConfirmed {
            reason: "that confirmation was already used by another call".into(),
        };
        assert!(e.for_mcp().contains("Approvals page"), "{}", e.for_mcp());
        assert!(!e.for_mcp().contains("Ask the user to confirm again"));
        let e = ServiceError::not_found("event 42");
        assert_eq!(e.for_mcp(), e.for_model());
    }

    #[test]
    fn display_states_the_failure_without_instructions() {
        assert_eq!(
            ServiceError::not_found("event 42").to_string(),
            "event 42 was not found"
        );
        assert_eq!(
            ServiceError::conflict("event 42").to_string(),
            "event 42 changed since it was read, so nothing was saved"
        );
    }

    #[test]
    fn service_errors_reach_a_turn_as_themselves() {
        let e = TurnError::from(ServiceError::not_found("the account u1"));
        assert!(
            matches!(e, TurnError::Service(ServiceError::NotFound { .. })),
            "{e}"
        );
        let e = TurnError::from(ServiceError::from(StoreError::Backend("disk".into())));
        assert!(matches!(e, TurnError::Store(StoreError::Backend(_))), "{e}");
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
