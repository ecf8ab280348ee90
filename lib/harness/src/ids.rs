//! Identifier newtypes. Each one checks its text when it is built, so code that holds one can
//! trust it: it is non-empty, bounded, and free of the `#` that separates the parts of a key.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use steward_store::Clock;
use ulid::Ulid;

use crate::limits::LINK_CODE_LEN;

/// Why a piece of text is not a valid identifier of some kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: {problem}")]
pub struct IdError {
    /// Which kind of identifier was expected ("user id", "conversation key", …).
    pub kind: &'static str,
    /// What is wrong with the text, in words.
    pub problem: String,
}

impl IdError {
    fn new(kind: &'static str, problem: impl Into<String>) -> Self {
        Self {
            kind,
            problem: problem.into(),
        }
    }
}

/// Checks length (in bytes) and characters; the shared rule of every id here.
fn check(
    kind: &'static str,
    text: &str,
    max_bytes: usize,
    allowed: impl Fn(char) -> bool,
    allowed_words: &str,
) -> Result<(), IdError> {
    if text.is_empty() {
        return Err(IdError::new(kind, "it is empty"));
    }
    if text.len() > max_bytes {
        return Err(IdError::new(
            kind,
            format!(
                "it is {} bytes long, over the {max_bytes}-byte limit",
                text.len()
            ),
        ));
    }
    if let Some(bad) = text.chars().find(|c| !allowed(*c)) {
        return Err(IdError::new(
            kind,
            format!("it contains {bad:?}; only {allowed_words} are allowed"),
        ));
    }
    Ok(())
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Printable, no whitespace, no `#` (the key separator): the rule for ids that come from an
/// outside system (a phone number id, an OIDC subject, a chat id).
fn is_external_char(c: char) -> bool {
    !c.is_control() && !c.is_whitespace() && c != '#'
}

/// Implements `Display`, `FromStr`, `AsRef<str>` and string serde for a `String` newtype whose
/// `parse` constructor validates.
macro_rules! string_id {
    ($name:ident) => {
        impl $name {
            /// The identifier as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Monotonic ULIDs for this process: a new id is never smaller than the previous one, even
/// within one millisecond or when a test clock stands still, so "newest sorts last" holds.
fn next_ulid(clock: &dyn Clock) -> Ulid {
    next_ulid_at(clock.now_millis())
}

/// [`next_ulid`] at `now_ms` (epoch milliseconds).
fn next_ulid_at(now_ms: i64) -> Ulid {
    static LAST: Mutex<Option<Ulid>> = Mutex::new(None);
    let millis = u64::try_from(now_ms).unwrap_or(0);
    let fresh = Ulid::from_parts(millis, rand::random::<u128>());
    // A poisoned lock only means another thread panicked mid-update; the value is still a Ulid.
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let id = match *last {
        Some(prev) if fresh <= prev => prev.increment().unwrap_or_else(|next| next),
        _ => fresh,
    };
    *last = Some(id);
    id
}

/// An account's id: `[A-Za-z0-9_-]`, 1 to 64 bytes. Only authentication produces one for a
/// request (a web session, a verified channel identity, an MCP token), never model output.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId(String);

impl UserId {
    /// Longest accepted user id, in bytes.
    pub const BYTES_MAX: usize = 64;

    /// Parses and checks a user id.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        check(
            "user id",
            text,
            Self::BYTES_MAX,
            is_word_char,
            "letters, digits, '_' and '-'",
        )?;
        Ok(Self(text.to_owned()))
    }

    /// A fresh, time-sortable user id (a lowercase ULID).
    pub fn generate(clock: &dyn Clock) -> Self {
        Self(next_ulid(clock).to_string().to_ascii_lowercase())
    }
}
string_id!(UserId);

/// Groups every audit row written by one request — one chat message (all the tool calls of its
/// turn), one web form post, one MCP call — so undo reverts the request as a whole. A ULID: ids
/// made later sort later, so the newest request of a user is the last one by sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActionId(Ulid);

impl ActionId {
    /// A fresh action id at the clock's current time; never smaller than one made before it in
    /// this process.
    pub fn generate(clock: &dyn Clock) -> Self {
        Self(next_ulid(clock))
    }

    /// A fresh action id at `now_ms` (epoch milliseconds), for code that has the time but no
    /// clock (the claim that starts a turn).
    pub fn generate_at(now_ms: i64) -> Self {
        Self(next_ulid_at(now_ms))
    }

    /// Parses the 26-character ULID text form.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        Ulid::from_string(text)
            .map(Self)
            .map_err(|e| IdError::new("action id", e.to_string()))
    }

    /// Milliseconds since the epoch encoded in the id.
    pub fn timestamp_ms(&self) -> u64 {
        self.0.timestamp_ms()
    }
}

impl fmt::Display for ActionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for ActionId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, IdError> {
        Self::parse(s)
    }
}

impl Serialize for ActionId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ActionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// One audited commit within a request (an action): a ULID, so the commits of one request sort
/// in the order they were made. A request that makes several changes (a chat message with
/// three tool calls) has one [`ActionId`] and one commit id per change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(Ulid);

impl CommitId {
    /// A fresh commit id; never smaller than one made before it in this process.
    pub fn generate(clock: &dyn Clock) -> Self {
        Self(next_ulid(clock))
    }

    /// Parses the 26-character ULID text form.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        Ulid::from_string(text)
            .map(Self)
            .map_err(|e| IdError::new("commit id", e.to_string()))
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Serialize for CommitId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CommitId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The model's id for one tool call (`tool_use.id`): `[A-Za-z0-9_-]`, 1 to 128 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolUseId(String);

impl ToolUseId {
    /// Longest accepted tool-use id, in bytes.
    pub const BYTES_MAX: usize = 128;

    /// Parses and checks a tool-use id.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        check(
            "tool use id",
            text,
            Self::BYTES_MAX,
            is_word_char,
            "letters, digits, '_' and '-'",
        )?;
        Ok(Self(text.to_owned()))
    }
}
string_id!(ToolUseId);

/// A channel's name as the harness sees it: an opaque lowercase word such as `web`, `wa` or
/// `tg` (`[a-z0-9_-]`, 1 to 32 bytes). The harness attaches no meaning to any particular name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelName(String);

impl ChannelName {
    /// Longest accepted channel name, in bytes.
    pub const BYTES_MAX: usize = 32;

    /// Parses and checks a channel name.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        check(
            "channel name",
            text,
            Self::BYTES_MAX,
            |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-',
            "lowercase letters, digits, '_' and '-'",
        )?;
        Ok(Self(text.to_owned()))
    }
}
string_id!(ChannelName);

/// One conversation: `<channel>:<id>`, e.g. `wa:<wa_id>`, `tg:<chat id>`, `web:<user id>`.
/// The id part is printable, without whitespace or `#`, at most 256 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConversationKey(String);

impl ConversationKey {
    /// Longest accepted id part, in bytes.
    pub const ID_BYTES_MAX: usize = 256;

    /// The key of the conversation `id` on channel `channel`.
    pub fn new(channel: &ChannelName, id: &str) -> Result<Self, IdError> {
        check(
            "conversation key",
            id,
            Self::ID_BYTES_MAX,
            is_external_char,
            "printable characters other than spaces and '#'",
        )?;
        Ok(Self(format!("{channel}:{id}")))
    }

    /// Builds the key from a channel name given as text (checked like [`ChannelName::parse`]).
    pub fn for_channel(channel: &str, id: &str) -> Result<Self, IdError> {
        Self::new(&ChannelName::parse(channel)?, id)
    }

    /// A WhatsApp conversation: `wa:<wa_id>`.
    pub fn whatsapp(wa_id: &str) -> Result<Self, IdError> {
        Self::for_channel("wa", wa_id)
    }

    /// A Telegram conversation: `tg:<chat id>`.
    pub fn telegram(chat_id: i64) -> Self {
        Self(format!("tg:{chat_id}"))
    }

    /// The web chat of a signed-in user: `web:<user id>`.
    pub fn web(user: &UserId) -> Self {
        Self(format!("web:{user}"))
    }

    /// Parses `<channel>:<id>` text.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let Some((channel, id)) = text.split_once(':') else {
            return Err(IdError::new(
                "conversation key",
                "it has no ':' between the channel and the id",
            ));
        };
        Self::for_channel(channel, id)
    }

    /// The channel part (before the first `:`).
    pub fn channel(&self) -> &str {
        self.0.split_once(':').map_or("", |(c, _)| c)
    }

    /// The id part (after the first `:`).
    pub fn id(&self) -> &str {
        self.0.split_once(':').map_or("", |(_, id)| id)
    }
}
string_id!(ConversationKey);

/// A user's id inside an outside system: a web login's OIDC subject, a WhatsApp `wa_id` or
/// business-scoped user id, a Telegram user id. Printable, no whitespace or `#`, 1 to 256 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExternalId(String);

impl ExternalId {
    /// Longest accepted external id, in bytes.
    pub const BYTES_MAX: usize = 256;

    /// Parses and checks an external id.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        check(
            "external id",
            text,
            Self::BYTES_MAX,
            is_external_char,
            "printable characters other than spaces and '#'",
        )?;
        Ok(Self(text.to_owned()))
    }
}
string_id!(ExternalId);

/// A verified identity on one channel: who the provider says is talking. The harness treats
/// the channel name as opaque; it only guarantees one account per identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChannelIdentity {
    /// The channel, e.g. `web`, `wa`, `tg`.
    pub channel: ChannelName,
    /// The user's id on that channel.
    pub external: ExternalId,
}

impl ChannelIdentity {
    /// The identity `external` on `channel`.
    pub fn new(channel: ChannelName, external: ExternalId) -> Self {
        Self { channel, external }
    }

    /// Parses both parts from text.
    pub fn parse(channel: &str, external: &str) -> Result<Self, IdError> {
        Ok(Self::new(
            ChannelName::parse(channel)?,
            ExternalId::parse(external)?,
        ))
    }
}

impl fmt::Display for ChannelIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.channel, self.external)
    }
}

/// Identifies an MCP access token without revealing it: the lowercase hex SHA-256 of the token
/// (64 characters). Knowing it does not let anyone authenticate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenId(String);

impl TokenId {
    /// Length of the hex text.
    pub const LEN: usize = 64;

    /// Parses the 64-character lowercase hex form.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        if text.len() != Self::LEN {
            return Err(IdError::new(
                "token id",
                format!("it must be {} hex characters", Self::LEN),
            ));
        }
        check(
            "token id",
            text,
            Self::LEN,
            |c| c.is_ascii_digit() || ('a'..='f').contains(&c),
            "lowercase hex digits",
        )?;
        Ok(Self(text.to_owned()))
    }

    /// The id of a token given its SHA-256 digest.
    pub(crate) fn from_digest(digest: &[u8]) -> Self {
        Self(hex::encode(digest))
    }
}
string_id!(TokenId);

/// The letters of a code: capitals and digits without the look-alikes 0/O and 1/I.
pub const LINK_CODE_ALPHABET: &str = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A one-time linking code ([`crate::linking`]): [`LINK_CODE_LEN`] characters of
/// [`LINK_CODE_ALPHABET`], at least one letter and one digit (so an ordinary word or number is
/// never mistaken for one). Case-insensitive; kept in capitals.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LinkCode(String);

impl LinkCode {
    /// Parses a code as a person typed it (any case).
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let upper = text.trim().to_ascii_uppercase();
        let well_formed = upper.chars().count() == LINK_CODE_LEN
            && upper.chars().all(|c| LINK_CODE_ALPHABET.contains(c))
            && upper.chars().any(|c| c.is_ascii_digit())
            && upper.chars().any(|c| c.is_ascii_alphabetic());
        if well_formed {
            Ok(Self(upper))
        } else {
            Err(IdError::new(
                "linking code",
                format!(
                    "a code is {LINK_CODE_LEN} letters and digits, like K7PQ4MXB; copy it from the web app"
                ),
            ))
        }
    }

    /// A fresh random code.
    pub fn generate() -> Self {
        let alphabet = LINK_CODE_ALPHABET.as_bytes();
        loop {
            let code: String = (0..LINK_CODE_LEN)
                .map(|_| char::from(alphabet[rand::random_range(0..alphabet.len())]))
                .collect();
            if let Ok(code) = Self::parse(&code) {
                return code;
            }
        }
    }
}
string_id!(LinkCode);

/// Where a tool call's result is remembered: the conversation and the model's tool-use id.
/// A call that changed data stores its result under this key in the same transaction as its
/// writes, so running the same call again returns that result instead of acting twice.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EffectKey {
    /// The conversation the call was made in.
    pub conversation: ConversationKey,
    /// The model's id for the call.
    pub tool_use: ToolUseId,
}

impl EffectKey {
    /// The effect key of tool call `tool_use` in `conversation`.
    pub fn new(conversation: ConversationKey, tool_use: ToolUseId) -> Self {
        Self {
            conversation,
            tool_use,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use steward_store::ManualClock;

    #[test]
    fn generated_codes_parse_and_avoid_look_alikes() {
        for _ in 0..500 {
            let code = LinkCode::generate();
            assert_eq!(code.as_str().len(), LINK_CODE_LEN);
            assert!(!code.as_str().contains(['0', 'O', '1', 'I']));
            assert_eq!(LinkCode::parse(code.as_str()).unwrap(), code);
        }
    }

    #[test]
    fn bad_linking_codes_get_a_readable_error() {
        let err = crate::ServiceError::from(LinkCode::parse("ABC").unwrap_err());
        assert!(err.to_string().starts_with("Invalid linking code"), "{err}");
    }

    #[test]
    fn user_id_rejects_separators_and_empty() {
        assert!(UserId::parse("abc_DEF-123").is_ok());
        assert!(UserId::parse("").is_err());
        assert!(UserId::parse("a#b").is_err());
        assert!(UserId::parse(&"x".repeat(65)).is_err());
        let err = UserId::parse("a b").unwrap_err();
        assert!(err.to_string().contains("invalid user id"), "{err}");
    }

    #[test]
    fn action_ids_sort_by_creation_even_on_a_frozen_clock() {
        let clock = ManualClock::at_millis(1_700_000_000_000);
        let ids: Vec<ActionId> = (0..200).map(|_| ActionId::generate(&clock)).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        let texts: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let mut sorted_texts = texts.clone();
        sorted_texts.sort();
        assert_eq!(texts, sorted_texts, "text order matches creation order");
        let back = ActionId::parse(&texts[3]).unwrap();
        assert_eq!(back, ids[3]);
    }

    #[test]
    fn action_ids_carry_the_clock_time() {
        let clock = ManualClock::at_millis(4_000_000_000_000);
        let id = ActionId::generate(&clock);
        assert!(id.timestamp_ms() >= 4_000_000_000_000);
    }

    #[test]
    fn conversation_keys_per_channel() {
        assert_eq!(
            ConversationKey::whatsapp("4915112345").unwrap().as_str(),
            "wa:4915112345"
        );
        assert_eq!(ConversationKey::telegram(-100_123).as_str(), "tg:-100123");
        let user = UserId::parse("u1").unwrap();
        let web = ConversationKey::web(&user);
        assert_eq!(web.as_str(), "web:u1");
        assert_eq!(web.channel(), "web");
        assert_eq!(web.id(), "u1");
        assert_eq!(ConversationKey::parse("web:u1").unwrap(), web);
        assert!(ConversationKey::parse("nocolon").is_err());
        assert!(ConversationKey::parse("WA:1").is_err());
        assert!(ConversationKey::parse("wa:1#2").is_err());
        assert!(ConversationKey::parse("wa:").is_err());
    }

    #[test]
    fn token_ids_are_hex_digests() {
        let id = TokenId::from_digest(&[0xab; 32]);
        assert_eq!(TokenId::parse(id.as_str()).unwrap(), id);
        assert!(TokenId::parse("AB").is_err());
        assert!(TokenId::parse(&"g".repeat(64)).is_err());
    }

    #[test]
    fn ids_round_trip_through_serde() {
        let user = UserId::parse("u_1").unwrap();
        let json = serde_json::to_string(&user).unwrap();
        assert_eq!(json, "\"u_1\"");
        assert_eq!(serde_json::from_str::<UserId>(&json).unwrap(), user);
        assert!(serde_json::from_str::<UserId>("\"a#b\"").is_err());
        let key = EffectKey::new(
            ConversationKey::telegram(5),
            ToolUseId::parse("toolu_1").unwrap(),
        );
        let back: EffectKey = serde_json::from_value(serde_json::to_value(&key).unwrap()).unwrap();
        assert_eq!(back, key);
    }
}
