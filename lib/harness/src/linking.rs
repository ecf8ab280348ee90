//! One-time linking codes (`LINK#<code>` / `LINK`): how a messaging identity joins an account.
//!
//! The signed-in web app shows a short code; the person sends it from their phone, in any
//! message ("hi! my code is K7PQ4MXB"). [`find_code_in_text`] spots it, and [`consume`]
//! deletes the code (only if it is still there) and binds the sender's verified identity in ONE
//! transaction, so a code binds at most once. A user has one active code: issuing a new one
//! retires the old. Codes expire after [`LINK_CODE_TTL_SECS`]. Strangers' wrong codes are
//! counted ([`consume_from_text_counted`], [`crate::link_attempts`]), so guessing stops early.

use serde::{Deserialize, Serialize};
use steward_store::{Clock, Condition, Item, StoreError, Table, WriteOp};

use crate::error::ServiceError;
use crate::ids::{ChannelIdentity, UserId};
pub use crate::ids::{LINK_CODE_ALPHABET, LinkCode};
use crate::limits::{LINK_CODE_LEN, LINK_CODE_TTL_SECS};
use crate::link_attempts::{self, LinkBlocked};
use crate::{identity, keys};

/// How many candidate codes in one message are tried.
const CODES_PER_MESSAGE_MAX: usize = 3;

/// Every well-formed code standing alone in `text` (between non-alphanumeric characters), in
/// order, at most a few.
pub fn find_codes_in_text(text: &str) -> Vec<LinkCode> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| word.len() == LINK_CODE_LEN)
        .filter_map(|word| LinkCode::parse(word).ok())
        .take(CODES_PER_MESSAGE_MAX)
        .collect()
}

/// The first well-formed code standing alone anywhere in `text`.
pub fn find_code_in_text(text: &str) -> Option<LinkCode> {
    find_codes_in_text(text).into_iter().next()
}

/// The stored code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct LinkRecord {
    code: LinkCode,
    user: UserId,
    issued_ms: i64,
}

/// The user's pointer to their one active code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ActiveCode {
    code: LinkCode,
}

/// A freshly issued code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCode {
    /// The code to show.
    pub code: LinkCode,
    /// When it stops working, in epoch seconds.
    pub expires_at_secs: i64,
}

/// What consuming a code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOutcome {
    /// The identity is now bound to this account.
    Linked {
        /// The account.
        user: UserId,
    },
    /// The identity already belonged to the code's account; nothing changed.
    AlreadyLinked {
        /// The account.
        user: UserId,
    },
}

fn unusable_code() -> ServiceError {
    ServiceError::invalid(
        "linking code",
        "that code is unknown, already used or expired (a code works once, for 30 minutes). Get a new code in the web app and send it again.",
    )
}

/// Issues a new code for `user` (whose account must exist), retiring the previous one.
pub async fn issue_code(
    table: &dyn Table,
    clock: &dyn Clock,
    user: &UserId,
) -> Result<IssuedCode, ServiceError> {
    crate::profile::get_profile(table, user).await?;
    let user_pk = keys::user_pk(user);
    // Retries cover a code collision and a concurrent issue for the same user.
    for _ in 0..5 {
        let code = LinkCode::generate();
        let expires_at_secs = clock.now_secs() + LINK_CODE_TTL_SECS;
        let record = LinkRecord {
            code: code.clone(),
            user: user.clone(),
            issued_ms: clock.now_millis(),
        };
        let mut ops = vec![WriteOp::put_if_absent(
            Item::from_value(keys::link_pk(&code), keys::LINK_SK, &record)?
                .with_ttl(expires_at_secs),
        )];
        let pointer = Item::from_value(
            &user_pk,
            keys::USER_LINK_CODE_SK,
            &ActiveCode { code: code.clone() },
        )?
        .with_ttl(expires_at_secs);
        match table.get(&user_pk, keys::USER_LINK_CODE_SK).await? {
            Some(old_pointer) => {
                let old: ActiveCode = old_pointer.parse()?;
                if old.code == code {
                    continue;
                }
                let old_pk = keys::link_pk(&old.code);
                if let Some(old_link) = table.get(&old_pk, keys::LINK_SK).await?
                    && old_link.parse::<LinkRecord>()?.user == *user
                {
                    ops.push(WriteOp::delete_if(
                        old_pk,
                        keys::LINK_SK,
                        Condition::VersionEquals(old_link.version),
                    ));
                }
                ops.push(WriteOp::put_if_version(
                    pointer.with_version(old_pointer.version + 1),
                    old_pointer.version,
                ));
            }
            None => ops.push(WriteOp::put_if_absent(pointer)),
        }
        match table.write(ops).await {
            Ok(()) => {
                return Ok(IssuedCode {
                    code,
                    expires_at_secs,
                });
            }
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ServiceError::conflict("Your linking code"))
}

/// Spends `code` to bind `identity` to the code's account: the code's conditional delete and
/// the identity's put-if-absent are ONE transaction, so a code binds at most once. An unknown,
/// used or expired code, or an identity held by another account, gets a readable error.
pub async fn consume(
    table: &dyn Table,
    clock: &dyn Clock,
    code: &LinkCode,
    identity: &ChannelIdentity,
) -> Result<LinkOutcome, ServiceError> {
    let link_pk = keys::link_pk(code);
    let link = table
        .get(&link_pk, keys::LINK_SK)
        .await?
        .ok_or_else(unusable_code)?;
    let user = link.parse::<LinkRecord>()?.user;
    match identity::lookup(table, identity).await? {
        Some(owner) if owner == user => return Ok(LinkOutcome::AlreadyLinked { user }),
        Some(_) => return Err(identity::taken(identity)),
        None => {}
    }
    // Spending the code is op 0; the identity's private chat may have belonged to someone else
    // before, so it is released in the same transaction and the new owner starts with no one
    // else's history.
    let spend = WriteOp::delete_if(
        &link_pk,
        keys::LINK_SK,
        Condition::VersionEquals(link.version),
    );
    let result = identity::write_binding(table, clock, identity, &user, &[spend]).await?;
    match result {
        Ok(()) => Ok(LinkOutcome::Linked { user }),
        Err(StoreError::ConditionFailed { op_index: 0 }) => Err(unusable_code()),
        Err(StoreError::ConditionFailed { .. }) => match identity::lookup(table, identity).await? {
            Some(owner) if owner == user => Ok(LinkOutcome::AlreadyLinked { user }),
            Some(_) => Err(identity::taken(identity)),
            None => Err(ServiceError::conflict(format!(
                "The {} link",
                identity.channel
            ))),
        },
        Err(e) => Err(e.into()),
    }
}

/// Finds codes in a message and consumes the first that works. `Ok(None)` when the message
/// holds no code at all; otherwise the first success, or the first code's error.
pub async fn consume_from_text(
    table: &dyn Table,
    clock: &dyn Clock,
    text: &str,
    identity: &ChannelIdentity,
) -> Result<Option<LinkOutcome>, ServiceError> {
    let mut first_error = None;
    for code in find_codes_in_text(text) {
        match consume(table, clock, &code, identity).await {
            Ok(outcome) => return Ok(Some(outcome)),
            Err(e) if !e.is_expected() => return Err(e),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(None),
    }
}

/// What a stranger's message with codes in it came to.
#[derive(Debug)]
pub enum CountedAttempt {
    /// No code was tried: the sender (or everyone) sent too many wrong codes this hour.
    Blocked(LinkBlocked),
    /// The codes were tried (see [`consume_from_text`]); wrong ones were counted.
    Tried(Result<Option<LinkOutcome>, ServiceError>),
}

/// [`consume_from_text`] for a sender not linked to any account, with wrong codes counted
/// against the limits of [`crate::link_attempts`]: past them no code is tried at all.
pub async fn consume_from_text_counted(
    table: &dyn Table,
    clock: &dyn Clock,
    text: &str,
    identity: &ChannelIdentity,
) -> Result<CountedAttempt, ServiceError> {
    let mut first_error = None;
    for code in find_codes_in_text(text) {
        if let Some(blocked) = link_attempts::check(table, identity, clock.now_secs()).await? {
            return Ok(match first_error {
                // The sender already hears why their first code failed.
                Some(e) => CountedAttempt::Tried(Err(e)),
                None => CountedAttempt::Blocked(blocked),
            });
        }
        match consume(table, clock, &code, identity).await {
            Ok(outcome) => return Ok(CountedAttempt::Tried(Ok(Some(outcome)))),
            Err(e) if !e.is_expected() => return Err(e),
            Err(e) => {
                if matches!(e, ServiceError::Invalid { .. }) {
                    // Unknown, used or expired: a wrong code.
                    link_attempts::record_failure(table, identity, clock.now_secs()).await?;
                }
                first_error.get_or_insert(e);
            }
        }
    }
    Ok(CountedAttempt::Tried(match first_error {
        Some(e) => Err(e),
        None => Ok(None),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_found_anywhere_in_a_message() {
        let code = find_code_in_text("Hi Steward! my code: k7pq4mxb, thanks").unwrap();
        assert_eq!(code.as_str(), "K7PQ4MXB");
        assert_eq!(
            find_code_in_text("link K7PQ4MXB").unwrap().as_str(),
            "K7PQ4MXB"
        );
        assert_eq!(
            find_code_in_text("(K7PQ4MXB)").unwrap().as_str(),
            "K7PQ4MXB"
        );
        // Ordinary words and numbers are not codes.
        assert!(find_code_in_text("thanks, everyone, 23456789 people").is_none());
        // Longer or shorter runs are not cut into codes.
        assert!(find_code_in_text("K7PQ4MXBZ").is_none());
        assert!(find_code_in_text("K7PQ4MX").is_none());
        assert!(find_code_in_text("").is_none());
    }

    proptest::proptest! {
        /// A code surrounded by any words and punctuation is found, in any letter case.
        #[test]
        fn a_code_is_found_wherever_it_stands(
            before in "[a-z ,.!?]{0,30}",
            after in "[a-z ,.!?]{0,30}",
            lower in proptest::bool::ANY,
        ) {
            let code = LinkCode::generate();
            let shown = if lower { code.as_str().to_lowercase() } else { code.as_str().to_owned() };
            let text = format!("{before} {shown} {after}");
            proptest::prop_assert!(find_codes_in_text(&text).contains(&code));
        }
    }
}
