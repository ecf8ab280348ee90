//! Every key the harness owns, built in one place.
//!
//! | pk | sk | what |
//! |---|---|---|
//! | `USER#u` | `PROFILE` | the account |
//! | `USER#u` | `ACTION#<action>#<commit>` | one audited commit of a request: actor, kind, label, undone-by |
//! | `USER#u` | `AUDIT#<action>#<commit>#<nn>` | one changed record of that commit: before and after image |
//! | `USER#u` | `IDENT#<channel>#<external>` | index of the user's channel identities |
//! | `USER#u` | `LINKCODE` | the user's one active linking code |
//! | `USER#u` | `TOKEN#<token id>` | index of the user's MCP tokens |
//! | `IDENT#<channel>#<external>` | `IDENT` | a verified channel identity → user |
//! | `LINK#<code>` | `LINK` | a one-time linking code → user |
//! | `TOKEN#<token id>` | `TOKEN` | an MCP token (by SHA-256) → user |
//! | `CONV#c` | `META` | a conversation |
//! | `CONV#c` | `EFFECT#<tool use id>` | the stored result of a tool call that changed data |
//! | `CONV#c` | `GROUPNOTE` | a Telegram group was told, once, that Steward works in private chats only |
//! | `CONV#c` | `APPROVALMSG#<provider message id>` | a sent MCP approval request with Approve / Decline buttons |
//! | `USER#u` | `NOTICE#<confirmation id>#<filed ms>` | the person's linked chats were sent that request, once |
//! | `LINKFAIL#<channel>#<external>` | `HOUR#<n>` | wrong linking codes from one sender in clock hour n |
//! | `LINKFAIL` | `HOUR#<n>` | wrong linking codes from everyone in clock hour n |
//! | `USER#u` | `USAGE#yyyy-mm` | the user's usage that month, and the budget's reservation |
//! | `USAGE#yyyy-mm` | `USER#u` | index: the user had usage that month |
//! | `USER#u` | `BUDGET#LIMIT` | the user's own monthly budget (overrides the default) |
//! | `USER#u` | `BUDGET#NOTICE#yyyy-mm` | the 80 % notice of that month was given, once |
//!
//! The domain's records live under `USER#u` too, with keys it builds from a [`crate::Ctx`]
//! ([`crate::Ctx::key`]), so the tenant gate is structural: a handler cannot even name another
//! user's record. The few domain rows that must be global (a unique public slug) are made with
//! [`index_key`], which cannot name a harness partition.

use crate::ids::LinkCode;
use crate::ids::{
    ActionId, ChannelIdentity, CommitId, ConversationKey, TokenId, ToolUseId, UserId,
};

/// Partition of everything a user owns.
pub fn user_pk(user: &UserId) -> String {
    format!("USER#{user}")
}

/// Sort key of the account profile under [`user_pk`].
pub const PROFILE_SK: &str = "PROFILE";

/// Sort-key prefix of action headers under [`user_pk`].
pub const ACTION_SK_PREFIX: &str = "ACTION#";

/// Prefix of the headers of every commit of one request (action): `ACTION#<action>`. It also
/// matches the single header of an action written before requests could hold several commits.
pub fn action_prefix(action: &ActionId) -> String {
    format!("{ACTION_SK_PREFIX}{action}")
}

/// Sort key of the header of one commit of a request: `ACTION#<action>#<commit>`. The commits
/// of a request sort together, in the order they were made.
pub fn commit_sk(action: &ActionId, commit: &CommitId) -> String {
    format!("{ACTION_SK_PREFIX}{action}#{commit}")
}

/// Sort key of an action header written before requests could hold several commits
/// (`ACTION#<action>`, no commit part); such headers are still read.
pub fn legacy_action_sk(action: &ActionId) -> String {
    format!("{ACTION_SK_PREFIX}{action}")
}

/// Sort-key prefix of all audit rows under [`user_pk`].
pub const AUDIT_SK_PREFIX: &str = "AUDIT#";

/// Sort-key prefix of the audit rows of one commit: `AUDIT#<action>#<commit>#`, or for a
/// header without a commit part (written before), `AUDIT#<action>#`.
pub fn commit_audit_prefix(action: &ActionId, commit: Option<&CommitId>) -> String {
    match commit {
        Some(c) => format!("{AUDIT_SK_PREFIX}{action}#{c}#"),
        None => format!("{AUDIT_SK_PREFIX}{action}#"),
    }
}

/// Sort key of audit row `n` (0-based) of one commit; two digits keep rows in order (a commit
/// holds at most [`crate::limits::AUDITED_CHANGES_MAX`] rows).
pub fn commit_audit_sk(action: &ActionId, commit: Option<&CommitId>, n: usize) -> String {
    format!("{}{n:02}", commit_audit_prefix(action, commit))
}

/// Partition of a verified channel identity.
pub fn ident_pk(identity: &ChannelIdentity) -> String {
    format!("IDENT#{}#{}", identity.channel, identity.external)
}

/// Sort key of a channel identity under [`ident_pk`].
pub const IDENT_SK: &str = "IDENT";

/// Sort-key prefix of the identity index rows under [`user_pk`].
pub const USER_IDENT_SK_PREFIX: &str = "IDENT#";

/// Sort key of one identity's index row under [`user_pk`].
pub fn user_ident_sk(identity: &ChannelIdentity) -> String {
    format!(
        "{USER_IDENT_SK_PREFIX}{}#{}",
        identity.channel, identity.external
    )
}

/// Partition of a linking code.
pub fn link_pk(code: &LinkCode) -> String {
    format!("LINK#{code}")
}

/// Sort key of a linking code under [`link_pk`].
pub const LINK_SK: &str = "LINK";

/// Sort key, under [`user_pk`], of the row naming the user's one active linking code.
pub const USER_LINK_CODE_SK: &str = "LINKCODE";

/// Partition of an MCP token, by its id (the token's SHA-256).
pub fn token_pk(token: &TokenId) -> String {
    format!("TOKEN#{token}")
}

/// Sort key of a token under [`token_pk`].
pub const TOKEN_SK: &str = "TOKEN";

/// Sort-key prefix of the token index rows under [`user_pk`].
pub const USER_TOKEN_SK_PREFIX: &str = "TOKEN#";

/// Sort key of one token's index row under [`user_pk`].
pub fn user_token_sk(token: &TokenId) -> String {
    format!("{USER_TOKEN_SK_PREFIX}{token}")
}

/// Partition of a conversation.
pub fn conversation_pk(conversation: &ConversationKey) -> String {
    format!("CONV#{conversation}")
}

/// Sort key of a conversation's metadata under [`conversation_pk`].
pub const CONVERSATION_META_SK: &str = "META";

/// Sort key, under [`conversation_pk`] of a group chat, of the record that the group was told
/// once that Steward works in private chats only.
pub const GROUP_NOTE_SK: &str = "GROUPNOTE";

/// Partition of one sender's wrong-linking-code counts.
pub fn link_failures_pk(identity: &ChannelIdentity) -> String {
    format!("LINKFAIL#{}#{}", identity.channel, identity.external)
}

/// Partition of everyone's wrong-linking-code counts.
pub const LINK_FAILURES_ALL_PK: &str = "LINKFAIL";

/// Sort key of the count for clock hour `hour` (epoch seconds / 3600).
pub fn link_failures_sk(hour: i64) -> String {
    format!("HOUR#{hour}")
}

/// Sort key of a stored tool-call result under [`conversation_pk`].
pub fn effect_sk(tool_use: &ToolUseId) -> String {
    format!("EFFECT#{tool_use}")
}

/// Sort key of a message's dedupe-and-turn record under [`conversation_pk`].
pub fn inbox_sk(provider_message_id: &str) -> String {
    format!("INBOX#{provider_message_id}")
}

/// Prefix of every model-transcript row of `segment`, in order.
pub fn model_segment_prefix(segment: u32) -> String {
    format!("MODEL#{segment:06}#")
}

/// Prefix of the model-transcript rows of one turn of `segment`, in order.
pub fn model_turn_prefix(segment: u32, turn: u64) -> String {
    format!("MODEL#{segment:06}#{turn:010}#")
}

/// Sort key of one model-transcript row: (segment, turn, step) fixes its place, so writing it
/// again is a no-op and rows sort in the order they were made.
pub fn model_sk(segment: u32, turn: u64, step: u32) -> String {
    format!("MODEL#{segment:06}#{turn:010}#{step:03}")
}

/// Prefix of every visible-transcript row.
pub const SEEN_SK_PREFIX: &str = "SEEN#";

/// Sort key of one visible-transcript row: (turn, index within the turn).
pub fn seen_sk(turn: u64, index: u32) -> String {
    format!("{SEEN_SK_PREFIX}{turn:010}#{index:02}")
}

/// Sort key of the record that part `part` (from 0) of turn `turn`'s reply was delivered
/// ([`crate::sent_parts`]).
pub fn sent_part_sk(turn: u64, part: usize) -> String {
    format!("PART#{turn:010}#{part:02}")
}

/// Sort key of the record that part `part` of the dead-letter apology for message
/// `provider_message_id` was delivered ([`crate::dead_letter`]): keyed by the message, since a
/// message can fail before it has a turn.
pub fn apology_part_sk(provider_message_id: &str, part: usize) -> String {
    format!("APOLOGY#{provider_message_id}#{part:02}")
}

/// Sort-key prefix of the confirmation records under `USER#u` (the gate's).
pub const CONFIRM_SK_PREFIX: &str = "CONFIRM#";

/// Sort key (under `USER#u`) of the confirmation record `id` (see [`crate::gate`]).
pub fn confirm_sk(id: &str) -> String {
    format!("{CONFIRM_SK_PREFIX}{id}")
}

/// Sort key (under [`conversation_pk`]) of an MCP approval request sent to that chat as the
/// provider message `provider_message_id` (see [`crate::approval_chat`]).
pub fn approval_message_sk(provider_message_id: &str) -> String {
    format!("APPROVALMSG#{provider_message_id}")
}

/// Sort-key prefix (under [`user_pk`]) of the records that a request was sent to the person's
/// linked chats.
pub const NOTICE_SK_PREFIX: &str = "NOTICE#";

/// Sort key (under [`user_pk`]) of the record that confirmation `id`, filed at `created_ms`,
/// was sent to the person's linked chats.
pub fn notice_sk(id: &str, created_ms: i64) -> String {
    format!("{NOTICE_SK_PREFIX}{id}#{created_ms}")
}

/// Sort key of a user's token usage for one month (`yyyy-mm`) under [`user_pk`].
pub fn usage_sk(month: &str) -> String {
    format!("{USAGE_SK_PREFIX}{month}")
}

/// Prefix of the per-month usage records under [`user_pk`].
pub const USAGE_SK_PREFIX: &str = "USAGE#";

/// Sort key of a user's media bytes on one day (`yyyy-mm-dd`) under [`user_pk`].
pub fn media_day_sk(day: &str) -> String {
    format!("{MEDIA_DAY_SK_PREFIX}{day}")
}

/// Prefix of the per-day media counters under [`user_pk`].
pub const MEDIA_DAY_SK_PREFIX: &str = "MEDIADAY#";
/// Partition of one month's usage index (`USAGE#yyyy-mm`): one row `USER#u` per user with
/// usage that month.
pub fn usage_month_pk(month: &str) -> String {
    format!("USAGE#{month}")
}

/// Sort-key prefix (under [`user_pk`]) of a user's budget records: the override and the
/// monthly 80 % notice markers.
pub const BUDGET_SK_PREFIX: &str = "BUDGET#";

/// Sort key (under [`user_pk`]) of a user's own budget, overriding the default.
pub const BUDGET_SK: &str = "BUDGET#LIMIT";

/// Sort key (under [`user_pk`]) of the marker that the 80 % notice of `month` was given.
pub fn budget_notice_sk(month: &str) -> String {
    format!("BUDGET#NOTICE#{month}")
}

/// Partition kinds the harness owns; the domain may not write to any of them (nor to another
/// user's `USER#` partition).
const HARNESS_PK_KINDS: [&str; 7] = [
    "USER", "IDENT", "LINK", "LINKFAIL", "TOKEN", "CONV", "USAGE",
];

/// Sort keys (or prefixes, ending in `#`) under `USER#u` that belong to the harness.
const HARNESS_USER_SKS: [&str; 11] = [
    BUDGET_SK_PREFIX,
    CONFIRM_SK_PREFIX,
    NOTICE_SK_PREFIX,
    PROFILE_SK,
    USAGE_SK_PREFIX,
    MEDIA_DAY_SK_PREFIX,
    ACTION_SK_PREFIX,
    AUDIT_SK_PREFIX,
    USER_IDENT_SK_PREFIX,
    USER_LINK_CODE_SK,
    USER_TOKEN_SK_PREFIX,
];

/// The key of a record the domain owns. Made only by [`crate::Ctx::key`] (a record in the
/// caller's own partition) or [`index_key`] (a global uniqueness row such as a public slug).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    pk: String,
    sk: String,
}

impl RecordKey {
    /// Crate-internal: any key, for the harness's own rows.
    pub(crate) fn raw(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
        }
    }

    /// The partition key.
    pub fn pk(&self) -> &str {
        &self.pk
    }

    /// The sort key.
    pub fn sk(&self) -> &str {
        &self.sk
    }
}

impl std::fmt::Display for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {}", self.pk, self.sk)
    }
}

/// A global, domain-owned uniqueness row: pk `<KIND>#<id>`, sk `<KIND>` (e.g. `SLUG#spring-fair`
/// / `SLUG`). `kind` is uppercase ASCII letters and must not be a harness partition kind; `id`
/// must not contain `#`.
pub fn index_key(kind: &str, id: &str) -> Result<RecordKey, crate::ServiceError> {
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(crate::ServiceError::internal(format!(
            "index kind {kind:?} must be uppercase ASCII letters"
        )));
    }
    if HARNESS_PK_KINDS.contains(&kind) {
        return Err(crate::ServiceError::internal(format!(
            "index kind {kind:?} is reserved by the harness"
        )));
    }
    if id.is_empty() || id.contains('#') {
        return Err(crate::ServiceError::invalid(
            kind.to_ascii_lowercase(),
            "it must be non-empty and must not contain '#'",
        ));
    }
    Ok(RecordKey::raw(format!("{kind}#{id}"), kind))
}

/// Whether the domain, acting for `user`, may write `pk`/`sk`: a non-harness sort key in the
/// user's own partition, or a global index row of a non-harness kind. `Err` says why not.
pub(crate) fn domain_may_write(user: &UserId, pk: &str, sk: &str) -> Result<(), String> {
    if pk == user_pk(user) {
        let reserved = HARNESS_USER_SKS.iter().any(|r| {
            if r.ends_with('#') {
                sk.starts_with(r)
            } else {
                sk == *r
            }
        });
        return if reserved {
            Err(format!("sort key {sk:?} is reserved by the harness"))
        } else {
            Ok(())
        };
    }
    let kind = pk.split('#').next().unwrap_or(pk);
    if HARNESS_PK_KINDS.contains(&kind) {
        return Err(format!(
            "partition {pk:?} is not the caller's and belongs to the harness or another user"
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn user() -> UserId {
        UserId::parse("u1").unwrap()
    }

    #[test]
    fn harness_keys_have_the_documented_shapes() {
        let u = user();
        assert_eq!(user_pk(&u), "USER#u1");
        let id = ChannelIdentity::parse("wa", "4915112345").unwrap();
        assert_eq!(ident_pk(&id), "IDENT#wa#4915112345");
        assert_eq!(user_ident_sk(&id), "IDENT#wa#4915112345");
        let conv = ConversationKey::telegram(7);
        assert_eq!(conversation_pk(&conv), "CONV#tg:7");
        let t = ToolUseId::parse("toolu_9").unwrap();
        assert_eq!(effect_sk(&t), "EFFECT#toolu_9");
        let action = ActionId::parse("01HZX3M5Q8V6T2N4K7J9R1B0CD").unwrap();
        let commit = CommitId::parse("01HZX3M5Q8V6T2N4K7J9R1B0CE").unwrap();
        assert_eq!(
            commit_audit_sk(&action, Some(&commit), 3),
            "AUDIT#01HZX3M5Q8V6T2N4K7J9R1B0CD#01HZX3M5Q8V6T2N4K7J9R1B0CE#03"
        );
        assert!(
            commit_audit_sk(&action, Some(&commit), 3)
                .starts_with(&commit_audit_prefix(&action, Some(&commit)))
        );
        assert_eq!(
            commit_audit_sk(&action, None, 3),
            "AUDIT#01HZX3M5Q8V6T2N4K7J9R1B0CD#03",
            "the layout of headers written before commits had ids"
        );
        assert_eq!(
            commit_sk(&action, &commit),
            "ACTION#01HZX3M5Q8V6T2N4K7J9R1B0CD#01HZX3M5Q8V6T2N4K7J9R1B0CE"
        );
        assert!(commit_sk(&action, &commit).starts_with(&action_prefix(&action)));
        assert_eq!(
            legacy_action_sk(&action),
            "ACTION#01HZX3M5Q8V6T2N4K7J9R1B0CD"
        );
        assert!(legacy_action_sk(&action).starts_with(&action_prefix(&action)));
    }

    #[test]
    fn domain_writes_stay_in_the_callers_partition() {
        let u = user();
        assert!(domain_may_write(&u, "USER#u1", "EVENT#e1").is_ok());
        assert!(domain_may_write(&u, "USER#u1", "PROFILE").is_err());
        assert!(domain_may_write(&u, "USER#u1", "AUDIT#x#00").is_err());
        assert!(domain_may_write(&u, "USER#u1", "TOKEN#abc").is_err());
        assert!(domain_may_write(&u, "USER#u2", "EVENT#e1").is_err());
        assert!(domain_may_write(&u, "IDENT#wa#1", "IDENT").is_err());
        assert!(domain_may_write(&u, "SLUG#fair", "SLUG").is_ok());
    }

    #[test]
    fn index_keys_refuse_harness_kinds() {
        let k = index_key("SLUG", "spring-fair").unwrap();
        assert_eq!((k.pk(), k.sk()), ("SLUG#spring-fair", "SLUG"));
        assert!(index_key("USER", "u2").is_err());
        assert!(index_key("LINKFAIL", "x").is_err());
        assert!(index_key("slug", "x").is_err());
        assert!(index_key("SLUG", "a#b").is_err());
    }
}
