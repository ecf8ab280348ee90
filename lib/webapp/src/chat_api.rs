//! The web chat API, used by the chat page's script (and by tests):
//!
//! * `POST /api/chat/messages` — `{"id": "<client message id>", "text": "…"}` or
//!   `{"id": …, "button": {"id": "b0", "title": "…"}}`. The user is the signed-in one, never
//!   the body. The message is enqueued like any channel's (group = the conversation, dedupe id
//!   = the client's id) and answered `202 {"id": …}`; the turn runs on the worker. Sending the
//!   same id again is accepted and runs nothing twice (the queue's dedupe, then the
//!   conversation's claim). Bad input → `400 {"error": "…"}`; the queue unavailable → 503.
//! * `GET /api/chat/messages` — the newest page of the visible transcript, at most
//!   [`CHAT_PAGE_MESSAGES`] rows, oldest first: `{"messages": [{"n", "role", "text", "buttons":
//!   [{"id", "title"}]}], "working": bool, "more": false, "earlier": bool}`. One query read
//!   backwards, so opening a long conversation never reads its whole history. `earlier`: older
//!   messages exist; ask for them with `?before=N` (the first `n` shown), which answers the page
//!   before it the same way.
//! * `GET /api/chat/messages?after=N` — the visible transcript after position `N` (0: from the
//!   start), what the page polls with: `{"messages", "working", "more"}`. Pass the last `n` back
//!   as `after`. `working` is true while
//!   the conversation's newest claimed message has no reply yet; a message accepted but not yet
//!   picked up by the worker (normally milliseconds) is not counted, so a client that has just
//!   sent should wait for the reply itself. `more`: the page was full, ask again at once.
//!
//! Positions: a visible row's place is (turn, index within the turn), so `n = turn × 100 +
//! index` — stable, increasing, and cheap to turn back into the transcript's cursor.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};
use serde_json::json;
use steward_channels::web::WebInput;
use steward_channels::{button_id, markup, web_message};
use steward_harness::conversation;
use steward_harness::transcript::{self, SEEN_APOLOGY, SEEN_PAGE_MAX, SEEN_REPLY};
use steward_harness::{ChannelName, ConversationKey, UserId, keys};
use steward_llm::Role;
use steward_store::StoreError;

use crate::signed_in::SignedIn;
use crate::state::WebState;

/// The chat API's path (both methods).
pub const MESSAGES_PATH: &str = "/api/chat/messages";

/// Positions per turn: the visible transcript numbers a turn's rows with two digits
/// (`keys::seen_sk`), so a turn never has 100 rows and `turn × 100 + index` never collides.
const POSITIONS_PER_TURN: u64 = 100;

/// Largest turn number a position may name: the transcript's keys print turns with ten
/// digits, and only keys of that width sort in order.
const TURN_MAX: u64 = 9_999_999_999;

/// Visible rows in the first read of a conversation and in each "earlier messages" read: a
/// screenful or two of conversation, read in one small query however long the history is.
pub const CHAT_PAGE_MESSAGES: usize = 50;

/// How long an unanswered message counts as "working": a turn makes at most 12 model calls of
/// at most two 60-second attempts each (24 minutes) plus its tools; a message unanswered for
/// longer has failed for good (dead-lettered), and the page should stop saying "working…".
const WORKING_STALE_MS: i64 = 30 * 60 * 1000;

/// The web chat API routes.
pub fn routes() -> Router<WebState> {
    Router::new().route(MESSAGES_PATH, get(list).post(send))
}

/// A 4xx/5xx answer with a JSON `{"error": …}` body.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// The body of `POST /api/chat/messages`, as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PostBody {
    id: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    button: Option<PostButton>,
}

/// A clicked button, as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PostButton {
    id: String,
    #[serde(default)]
    title: Option<String>,
}

/// A chat message parsed at the edge: the client's id and what the user did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatPost {
    /// The client-generated message id (the dedupe id).
    pub id: String,
    /// A typed message or a clicked button.
    pub input: WebInput,
}

/// Why a chat post's body is refused (the message is shown to the caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatPostError {
    /// Not JSON of the expected shape (unknown field, wrong type, missing id…).
    #[error("the body is not a chat message: {0}")]
    Shape(String),
    /// Both or neither of `text` and `button`.
    #[error("send either \"text\" or \"button\", not both and not neither")]
    TextOrButton,
}

impl ChatPost {
    /// Parses a request body: exactly one of `text` and `button`, no other fields.
    pub fn parse(body: &[u8]) -> Result<Self, ChatPostError> {
        let body: PostBody =
            serde_json::from_slice(body).map_err(|e| ChatPostError::Shape(e.to_string()))?;
        let input = match (body.text, body.button) {
            (Some(text), None) => WebInput::Text(text),
            (None, Some(button)) => WebInput::Button {
                id: button.id,
                title: button.title,
            },
            _ => return Err(ChatPostError::TextOrButton),
        };
        Ok(Self { id: body.id, input })
    }
}

async fn send(State(state): State<WebState>, signed_in: SignedIn, body: Bytes) -> Response {
    let post = match ChatPost::parse(&body) {
        Ok(post) => post,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let now = state.clock().now_secs();
    let message = match web_message(signed_in.user().as_str(), &post.id, post.input, now) {
        Ok(message) => message,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    if let Err(e) = steward_edge::inbound::enqueue(state.queue().as_ref(), &message).await {
        tracing::error!(error = %e, message = %post.id, "web chat enqueue failed");
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "The message could not be accepted just now. Please send it again.",
        );
    }
    (StatusCode::ACCEPTED, Json(json!({ "id": post.id }))).into_response()
}

/// One visible message, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    /// Its position; pass the last one back as `after`.
    pub n: u64,
    /// `user` or `assistant`.
    pub role: &'static str,
    /// The text shown (empty for a pure reaction).
    pub text: String,
    /// For the assistant's messages, the text parsed as the reply markup (bold, italic,
    /// lists, http(s) links): the page builds DOM nodes from it, never HTML from the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<markup::Document>,
    /// Quick-reply buttons shown with it.
    pub buttons: Vec<ChatButton>,
    /// An emoji reaction the assistant put on the user's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reaction: Option<String>,
}

/// A quick-reply button: clicking it posts `{"button": {"id", "title"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatButton {
    /// The id to post back.
    pub id: String,
    /// The label.
    pub title: String,
}

/// Which part of the conversation a `GET` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Read {
    /// The newest page (no parameter).
    Newest,
    /// Everything after this cursor (None: from the start), forwards: `?after=N`.
    After(Option<String>),
    /// The page before this cursor: `?before=N`.
    Before(String),
}

/// The read the query string asks for: `after=N`, `before=N` or neither.
fn parse_read(query: Option<&str>) -> Result<Read, String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or_default())
        .map_err(|_| "the query string is malformed".to_owned())?;
    let find = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    match (find("after"), find("before")) {
        (Some(_), Some(_)) => Err("give after or before, not both".to_owned()),
        (Some(value), None) => Ok(Read::After(parse_position("after", value)?)),
        (None, Some(value)) => match parse_position("before", value)? {
            Some(cursor) => Ok(Read::Before(cursor)),
            None => Err("before must be a message position above 0".to_owned()),
        },
        (None, None) => Ok(Read::Newest),
    }
}

/// The cursor of position `value` of parameter `name`; 0 is None (the start).
fn parse_position(name: &str, value: &str) -> Result<Option<String>, String> {
    let n: u64 = value.trim().parse().map_err(|_| {
        format!("{name} must be a message position (a whole number from 0), not {value:?}")
    })?;
    if n == 0 {
        return Ok(None);
    }
    let turn = n / POSITIONS_PER_TURN;
    if turn > TURN_MAX {
        return Err(format!("{name}={n} is beyond any message position"));
    }
    // Both parts are bounded just above, so the casts cannot truncate.
    let index = (n % POSITIONS_PER_TURN) as u32;
    Ok(Some(keys::seen_sk(turn, index)))
}

/// The position of the row at `cursor` (a `SEEN#<turn>#<index>` key).
fn position(cursor: &str, turn: u64) -> u64 {
    let index: u64 = cursor
        .rsplit('#')
        .next()
        .and_then(|i| i.parse().ok())
        .unwrap_or_default();
    turn * POSITIONS_PER_TURN + index
}

/// The web conversation of `user`.
fn conversation_of(user: &UserId) -> ConversationKey {
    ConversationKey::web(user)
}

/// The visible messages after `after` (a cursor) and whether more are waiting.
pub async fn messages_after(
    state: &WebState,
    user: &UserId,
    after: Option<&str>,
) -> Result<(Vec<ChatMessage>, bool), StoreError> {
    let key = conversation_of(user);
    let rows = transcript::read_seen(state.table().as_ref(), &key, after).await?;
    let more = rows.len() >= SEEN_PAGE_MAX;
    Ok((shown(rows), more))
}

/// The newest [`CHAT_PAGE_MESSAGES`] visible rows before `before` (a cursor; None: the end),
/// as messages, and whether earlier ones exist.
pub async fn messages_before(
    state: &WebState,
    user: &UserId,
    before: Option<&str>,
) -> Result<(Vec<ChatMessage>, bool), StoreError> {
    let key = conversation_of(user);
    let (rows, earlier) =
        transcript::read_seen_before(state.table().as_ref(), &key, before, CHAT_PAGE_MESSAGES)
            .await?;
    Ok((shown(rows), earlier))
}

/// The messages `rows` showed, oldest first (a silent reply showed nothing).
fn shown(rows: Vec<transcript::PlacedSeen>) -> Vec<ChatMessage> {
    rows.into_iter()
        .filter_map(|placed| {
            let row = placed.row;
            let text = row.text.unwrap_or_default();
            if text.is_empty() && row.buttons.is_empty() && row.reaction.is_none() {
                return None;
            }
            Some(ChatMessage {
                n: position(&placed.cursor, placed.turn),
                role: match row.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                },
                doc: (row.role == Role::Assistant && !text.is_empty())
                    .then(|| markup::parse(&text)),
                text,
                buttons: row
                    .buttons
                    .into_iter()
                    .enumerate()
                    .map(|(i, title)| ChatButton {
                        id: button_id(i),
                        title,
                    })
                    .collect(),
                reaction: row.reaction,
            })
        })
        .collect()
}

/// Whether a turn of `user`'s web conversation is running: its newest claimed message has no
/// reply and no dead-letter apology yet (and was claimed recently enough to still be running).
pub async fn is_working(state: &WebState, user: &UserId) -> Result<bool, StoreError> {
    let table = state.table().as_ref();
    let key = conversation_of(user);
    let channel = ChannelName::parse("web").map_err(|e| StoreError::Backend(e.to_string()))?;
    let conv = conversation::load(table, &key, &channel).await?;
    if conv.version == 0 || conv.meta.turns == 0 {
        return Ok(false);
    }
    let age = state.clock().now_millis() - conv.meta.last_inbound_ms;
    if age > WORKING_STALE_MS {
        return Ok(false);
    }
    let reply = transcript::get_seen(table, &key, conv.meta.turns, SEEN_REPLY).await?;
    if reply.is_some() {
        return Ok(false);
    }
    // A message that failed for good was answered with an apology instead.
    let apology = transcript::get_seen(table, &key, conv.meta.turns, SEEN_APOLOGY).await?;
    Ok(apology.is_none())
}

async fn list(State(state): State<WebState>, signed_in: SignedIn, query: RawQuery) -> Response {
    let read = match parse_read(query.0.as_deref()) {
        Ok(read) => read,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    let user = signed_in.user();
    let answer = async {
        let (messages, more, earlier) = match &read {
            Read::After(after) => {
                let (messages, more) = messages_after(&state, user, after.as_deref()).await?;
                (messages, more, None)
            }
            Read::Newest => {
                let (messages, earlier) = messages_before(&state, user, None).await?;
                (messages, false, Some(earlier))
            }
            Read::Before(before) => {
                let (messages, earlier) = messages_before(&state, user, Some(before)).await?;
                (messages, false, Some(earlier))
            }
        };
        let working = is_working(&state, user).await?;
        Ok::<_, StoreError>((messages, more, earlier, working))
    };
    match answer.await {
        Ok((messages, more, earlier, working)) => {
            let mut body = json!({
                "messages": messages,
                "working": working,
                "more": more,
            });
            if let Some(earlier) = earlier {
                body["earlier"] = json!(earlier);
            }
            Json(body).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "reading the web chat failed");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The conversation could not be read just now.",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posts_parse_into_text_or_button() {
        assert_eq!(
            ChatPost::parse(br#"{"id": "m1", "text": "hi"}"#),
            Ok(ChatPost {
                id: "m1".into(),
                input: WebInput::Text("hi".into())
            })
        );
        assert_eq!(
            ChatPost::parse(br#"{"id": "m2", "button": {"id": "b1", "title": "Yes"}}"#),
            Ok(ChatPost {
                id: "m2".into(),
                input: WebInput::Button {
                    id: "b1".into(),
                    title: Some("Yes".into())
                }
            })
        );
        assert_eq!(
            ChatPost::parse(br#"{"id": "m", "text": "a", "button": {"id": "b0"}}"#),
            Err(ChatPostError::TextOrButton)
        );
        assert_eq!(
            ChatPost::parse(br#"{"id": "m"}"#),
            Err(ChatPostError::TextOrButton)
        );
        assert!(matches!(
            ChatPost::parse(br#"{"id": "m", "text": "a", "user": "mallory"}"#),
            Err(ChatPostError::Shape(m)) if m.contains("unknown field `user`")
        ));
        assert!(matches!(
            ChatPost::parse(br#"{"text": "a"}"#),
            Err(ChatPostError::Shape(m)) if m.contains("missing field `id`")
        ));
        assert!(matches!(
            ChatPost::parse(b"not json"),
            Err(ChatPostError::Shape(_))
        ));
    }

    #[test]
    fn positions_round_trip_through_the_cursor() {
        let after = |q: &str| match parse_read(Some(q)) {
            Ok(Read::After(cursor)) => Ok(cursor),
            Ok(other) => panic!("{q}: {other:?}"),
            Err(e) => Err(e),
        };
        assert_eq!(parse_read(None), Ok(Read::Newest));
        assert_eq!(parse_read(Some("other=1")), Ok(Read::Newest));
        assert_eq!(after("after=0"), Ok(None));
        let cursor = after("after=1202").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cursor.as_deref(), Some(keys::seen_sk(12, 2).as_str()));
        assert_eq!(position(&keys::seen_sk(12, 2), 12), 1202);
        assert!(after("after=-1").is_err());
        assert!(after("after=abc").is_err());
        assert!(after("after=18446744073709551615").is_err());
        assert_eq!(
            parse_read(Some("before=1202")),
            Ok(Read::Before(keys::seen_sk(12, 2)))
        );
        assert!(parse_read(Some("before=0")).is_err());
        assert!(parse_read(Some("before=x")).is_err_and(|e| e.contains("before")));
        assert!(parse_read(Some("after=1&before=2")).is_err());
    }
}
