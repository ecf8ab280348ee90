//! In-protocol confirmation for MCP clients that can elicit (protocol 2026-07-28 and the
//! `elicitation` capability): a held `tools/call` answers with an `InputRequiredResult` asking
//! the person to accept or decline the description the capability's declaration built, and a
//! sealed `requestState` naming the one confirmation request it is about.
//!
//! The state is untrusted input on its way back. It is sealed with HMAC-SHA256 (rmcp's
//! [`RequestStateCodec`], key [`ENV_MCP_STATE_KEY`]) over a payload holding the request's id,
//! when it was filed and when it lapses, with associated data binding it to the token's
//! owner, the capability and the hash of the validated input. So an altered state, another
//! account's or client's state, or a state sent with other arguments fails to open; a lapsed
//! one is refused by its sealed expiry; and a replayed one names a request that was already
//! used (or filed anew), which the gate's one confirmation record refuses
//! ([`gate::approve_request`]). The answer is the person's: their client shows the question and
//! sends back what they chose; the server only records it and then runs the call through the
//! same gate as every other surface, spending the record in the effect's own transaction.
//!
//! [`gate::approve_request`]: steward_harness::gate::approve_request

use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
    RequestStateCodec, RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use steward_harness::UserId;
use steward_harness::gate::Confirmation;

/// The server key that seals MCP request states (at least 32 bytes; on Lambda give
/// `STEWARD_MCP_STATE_KEY_PARAM`, an SSM SecureString). Without it on Lambda, clients are not
/// asked in-protocol and held calls answer "NOT EXECUTED" as for clients that cannot elicit;
/// `steward serve` makes a random key per process when it is unset.
pub const ENV_MCP_STATE_KEY: &str = "STEWARD_MCP_STATE_KEY";

/// The key of the one input request a held call asks for.
pub const CONFIRM_INPUT: &str = "confirm";

/// Domain separation of Steward's confirmation states from anything else sealed with the key.
const STATE_CONTEXT: &str = "steward/mcp/confirm/v1";

/// The key that seals and opens request states. `Debug` never shows it.
#[derive(Debug, Clone)]
pub struct StateKey {
    codec: RequestStateCodec,
}

/// Why a state key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{ENV_MCP_STATE_KEY} must be at least {min} bytes of random text (e.g. `openssl rand -base64 48`)",
    min = RequestStateCodec::MIN_KEY_LENGTH
)]
pub struct StateKeyError;

impl StateKey {
    /// A key from `secret` (at least 32 bytes).
    pub fn new(secret: &[u8]) -> Result<Self, StateKeyError> {
        RequestStateCodec::try_new(secret.to_vec())
            .map(|codec| Self { codec })
            .map_err(|_| StateKeyError)
    }

    /// A fresh random key: for one local process, whose states need not outlive it.
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        rand::fill(&mut bytes);
        Self {
            codec: RequestStateCodec::new_unchecked(bytes.to_vec()),
        }
    }

    /// Seals `payload` bound to `context`.
    pub(super) fn seal(&self, payload: &[u8], context: &[u8]) -> String {
        self.codec
            .seal_with(payload, &SealOptions::new().associated_data(context))
    }

    /// Opens `sealed`, which must have been sealed with `context`.
    pub(super) fn open(&self, sealed: &str, context: &[u8]) -> Result<Vec<u8>, RequestStateError> {
        self.codec.open_with(sealed, context)
    }
}

/// What a sealed confirmation state says (authentic once opened).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct SealedRequest {
    /// The confirmation record's id.
    pub id: String,
    /// When that request was filed (epoch ms).
    pub filed_ms: i64,
    /// When it lapses (epoch ms).
    pub expires_ms: i64,
}

/// Why a returned state was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StateRefusal {
    /// Altered, or sealed for another account, client, capability or arguments.
    NotThisCall,
    /// Past its expiry.
    Expired,
}

impl StateRefusal {
    /// The plain sentence for the client.
    pub fn message(&self) -> &'static str {
        match self {
            StateRefusal::NotThisCall => {
                "NOT EXECUTED. The requestState does not belong to this call: it was altered, or it was issued to another account or client, or for other arguments. Nothing ran. Call the tool again without requestState to ask the account holder anew."
            }
            StateRefusal::Expired => {
                "NOT EXECUTED. That confirmation request expired (they last an hour); nothing ran. Call the tool again without requestState to ask the account holder anew."
            }
        }
    }
}

/// What binds a state to one call: the owner, the capability, the validated input's hash and
/// the record (which also names the client's token).
fn binding(user: &UserId, tool: &str, input_hash: &str, record_id: &str) -> Vec<u8> {
    format!("{STATE_CONTEXT}\n{user}\n{tool}\n{input_hash}\n{record_id}").into_bytes()
}

/// The sealed state for `request` (held for `user`).
pub(super) fn seal_request(key: &StateKey, user: &UserId, request: &Confirmation) -> String {
    let payload = SealedRequest {
        id: request.id.clone(),
        filed_ms: request.created_ms,
        expires_ms: request.expires_ms(),
    };
    let bytes = serde_json::to_vec(&payload).unwrap_or_default();
    key.seal(
        &bytes,
        &binding(user, &request.capability, &request.input_hash, &request.id),
    )
}

/// Opens a returned `state` for the call of `tool` with validated input hash `input_hash`
/// whose record id (for this client) is `record_id`, by `user`, at `now_ms`.
pub(super) fn open_request(
    key: &StateKey,
    state: &str,
    user: &UserId,
    tool: &str,
    input_hash: &str,
    record_id: &str,
    now_ms: i64,
) -> Result<SealedRequest, StateRefusal> {
    let bytes = key
        .open(state, &binding(user, tool, input_hash, record_id))
        .map_err(|_| StateRefusal::NotThisCall)?;
    let sealed: SealedRequest =
        serde_json::from_slice(&bytes).map_err(|_| StateRefusal::NotThisCall)?;
    if sealed.id != record_id {
        return Err(StateRefusal::NotThisCall);
    }
    if now_ms >= sealed.expires_ms {
        return Err(StateRefusal::Expired);
    }
    Ok(sealed)
}

/// Whether the client of this request can be asked in-protocol: it speaks 2026-07-28 or later
/// and declared the elicitation capability.
pub(super) fn client_can_elicit(
    version: Option<&ProtocolVersion>,
    capabilities: Option<&ClientCapabilities>,
) -> bool {
    let stateless = version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    stateless && capabilities.is_some_and(|c| c.elicitation.is_some())
}

/// An `elicitation/create` request in form mode with `message` and `schema`.
pub(super) fn form_request(message: &str, schema: Value) -> Option<InputRequest> {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema}
    }))
    .ok()
}

/// The question for the person about `request`: accept or decline what it describes.
pub(super) fn ask(key: &StateKey, user: &UserId, request: &Confirmation) -> InputRequiredResult {
    let client = request.client.as_deref().unwrap_or("Your MCP client");
    let message = format!(
        "{client} asks to do this in Steward: {}. Accept to let it run once; decline to stop it.",
        request.description
    );
    let state = seal_request(key, user, request);
    let schema = json!({"type": "object", "properties": {}});
    match form_request(&message, schema) {
        Some(question) => InputRequiredResult::new(
            Some(InputRequests::from([(CONFIRM_INPUT.to_owned(), question)])),
            Some(state),
        ),
        // The request above is a fixed shape; should rmcp ever refuse it, the state alone
        // still makes the client come back (and nothing runs without an answer).
        None => InputRequiredResult::from_request_state(state),
    }
}

/// The person's answer to an elicitation, as the client returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// They accepted.
    Accept,
    /// They declined.
    Decline,
    /// They dismissed the question without choosing.
    Cancel,
}

/// The answer under `key` in the client's `inputResponses`; `None` when it is missing or not an
/// elicitation result (the server then asks again).
pub(super) fn answer(responses: Option<&rmcp::model::InputResponses>, key: &str) -> Option<Answer> {
    let response = responses?.get(key)?;
    match response.get("action")?.as_str()? {
        "accept" => Some(Answer::Accept),
        "decline" => Some(Answer::Decline),
        "cancel" => Some(Answer::Cancel),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use steward_harness::gate::{ConfirmState, SurfaceKind};

    use super::*;

    fn request() -> Confirmation {
        Confirmation {
            id: "ab".repeat(32),
            owner: UserId::parse("u1").unwrap(),
            capability: "cancel_event".into(),
            input_hash: "cd".repeat(32),
            input: json!({"event_id": "e_1"}),
            surface: SurfaceKind::Mcp,
            client: Some("Claude desktop".into()),
            description: "Cancel \"Summer Meetup\"".into(),
            created_turn: None,
            created_ms: 1_000,
            state: ConfirmState::Pending,
            decided_ms: None,
        }
    }

    #[test]
    fn a_sealed_state_opens_only_for_its_own_call_and_hour() {
        let key = StateKey::random();
        let r = request();
        let user = r.owner.clone();
        let state = seal_request(&key, &user, &r);
        let open = |state: &str, user: &UserId, tool: &str, hash: &str, id: &str, now: i64| {
            open_request(&key, state, user, tool, hash, id, now)
        };
        let sealed = open(&state, &user, "cancel_event", &r.input_hash, &r.id, 2_000).unwrap();
        assert_eq!(sealed.filed_ms, 1_000);
        let other = UserId::parse("u2").unwrap();
        for refused in [
            open(&state, &other, "cancel_event", &r.input_hash, &r.id, 2_000),
            open(&state, &user, "delete_event", &r.input_hash, &r.id, 2_000),
            open(
                &state,
                &user,
                "cancel_event",
                &"ef".repeat(32),
                &r.id,
                2_000,
            ),
            open(
                &state,
                &user,
                "cancel_event",
                &r.input_hash,
                &"12".repeat(32),
                2_000,
            ),
            open(
                &format!("{state}x"),
                &user,
                "cancel_event",
                &r.input_hash,
                &r.id,
                2_000,
            ),
            open("", &user, "cancel_event", &r.input_hash, &r.id, 2_000),
        ] {
            assert_eq!(refused, Err(StateRefusal::NotThisCall));
        }
        assert_eq!(
            open(
                &state,
                &user,
                "cancel_event",
                &r.input_hash,
                &r.id,
                r.expires_ms()
            ),
            Err(StateRefusal::Expired)
        );
        // Another server key: not ours.
        let foreign = seal_request(&StateKey::random(), &user, &r);
        assert_eq!(
            open(&foreign, &user, "cancel_event", &r.input_hash, &r.id, 2_000),
            Err(StateRefusal::NotThisCall)
        );
    }

    #[test]
    fn the_question_carries_the_description_and_a_state() {
        let key = StateKey::random();
        let r = request();
        let asked = serde_json::to_value(ask(&key, &r.owner, &r)).unwrap();
        assert_eq!(asked["resultType"], "input_required");
        let q = &asked["inputRequests"][CONFIRM_INPUT];
        assert_eq!(q["method"], "elicitation/create");
        let message = q["params"]["message"].as_str().unwrap();
        assert!(message.contains("Cancel \"Summer Meetup\""), "{message}");
        assert!(message.starts_with("Claude desktop"), "{message}");
        assert!(asked["requestState"].as_str().unwrap().starts_with("rs1."));
    }

    #[test]
    fn short_keys_are_refused_and_keys_never_print() {
        assert_eq!(StateKey::new(b"short").unwrap_err(), StateKeyError);
        let key = StateKey::new(&[7u8; 40]).unwrap();
        assert!(!format!("{key:?}").contains("7, 7"));
    }

    #[test]
    fn answers_are_read_from_their_key_only() {
        let mut responses = rmcp::model::InputResponses::new();
        responses.insert("confirm".into(), json!({"action": "accept"}));
        responses.insert("other".into(), json!(12345));
        assert_eq!(answer(Some(&responses), "confirm"), Some(Answer::Accept));
        assert_eq!(answer(Some(&responses), "other"), None);
        assert_eq!(answer(Some(&responses), "missing"), None);
        assert_eq!(answer(None, "confirm"), None);
    }
}
