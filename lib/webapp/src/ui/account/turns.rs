//! The turn inspector (`GET /app/conversations/{id}/turns` and `…/turns/{n}`): what the
//! assistant did on each turn of one of the signed-in person's conversations — the context
//! block sent, every model call (stop reason, tokens with the cache's share, latency), every
//! tool call (arguments, result, ran / held / confirmed / refused, effect id) and the reply as
//! the channel got it. Read from [`steward_harness::inspection`] as the session's user:
//! another person's conversation, or an id that names none, is the UI's 404 (never a 403,
//! which would say it exists). Every text is escaped by `maud`.

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;
use maud::{Markup, html};
use steward_harness::inspection::{
    self, ConversationInspection, InspectError, Reader, Shown, ToolCallView, TurnInspection,
};
use steward_harness::transcript::ToolState;
use steward_harness::{ConversationKey, ServiceError, TimeZoneName, accounts};

use super::local_time;
use crate::layout;
use crate::paths::{TURN_ROUTE, TURNS_ROUTE, turn_path, turns_path};
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::UiError;

/// Characters of a message or reply shown in the list of turns (the turn's page has more).
const EXCERPT_CHARS: usize = 140;

/// The inspector's routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(TURNS_ROUTE, get(list))
        .route(TURN_ROUTE, get(one))
}

/// The UI's 404 for a conversation or turn the person cannot see.
fn not_found() -> UiError {
    UiError(ServiceError::not_found("that conversation or turn"))
}

fn failed(e: InspectError) -> UiError {
    match e {
        InspectError::ConversationNotFound(_) | InspectError::TurnNotFound { .. } => not_found(),
        InspectError::Store(e) => UiError(ServiceError::from(e)),
    }
}

/// The conversation key in the path, or the 404 (an id that cannot be a key names nothing).
fn key_of(id: &str) -> Result<ConversationKey, UiError> {
    ConversationKey::parse(id).map_err(|_| not_found())
}

async fn time_zone(state: &WebState, signed_in: &SignedIn) -> Result<TimeZoneName, UiError> {
    Ok(accounts::profile(&signed_in.ctx(state)).await?.time_zone)
}

fn excerpt(s: Option<&Shown>) -> String {
    let Some(s) = s else {
        return "–".into();
    };
    let mut text: String = s.text.chars().take(EXCERPT_CHARS).collect();
    if s.chars > EXCERPT_CHARS {
        text.push('…');
    }
    text
}

fn shown(s: &Shown) -> Markup {
    html! {
        (s.text)
        @if s.cut { " " span.muted { "(first " (s.text.chars().count()) " of " (s.chars) " characters)" } }
    }
}

/// The name of a tool call's state, as the page shows it.
fn state_label(state: Option<ToolState>) -> &'static str {
    match state {
        Some(ToolState::Ran) => "Ran",
        Some(ToolState::Confirmed) => "Confirmed",
        Some(ToolState::Replayed) => "Ran earlier",
        Some(ToolState::Held) => "Held",
        Some(ToolState::Refused) => "Refused",
        Some(ToolState::NotRun) => "Not run",
        None => "Not recorded",
    }
}

fn tokens_total(t: &TurnInspection) -> Option<u64> {
    let calls: Vec<_> = t.model_calls.iter().filter_map(|c| c.tokens).collect();
    (!calls.is_empty()).then(|| {
        calls
            .iter()
            .map(|k| k.input + k.output + k.cache_read + k.cache_write)
            .sum()
    })
}

async fn list(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Path(id): Path<String>,
) -> Result<Markup, UiError> {
    let key = key_of(&id)?;
    let table = state.table().as_ref();
    let user = signed_in.user();
    let all = match inspection::conversation(table, Reader::Person(user), &key).await {
        Ok(all) => all,
        // Their own web chat before its first message: nothing to show yet, not a 404.
        Err(InspectError::ConversationNotFound(_)) if key == ConversationKey::web(user) => {
            ConversationInspection {
                conversation: key.to_string(),
                channel: "web".into(),
                turns: 0,
                listed: Vec::new(),
                older: false,
            }
        }
        Err(e) => return Err(failed(e)),
    };
    let tz = time_zone(&state, &signed_in).await?;
    let path = turns_path(&all.conversation);
    Ok(layout::app_page(
        "Turns",
        &path,
        &signed_in.session,
        html! {
            h1 { "Turns" }
            p.muted {
                "What the assistant did with each of your messages in this conversation ("
                code { (all.conversation) } "): the model calls, the tools it used and the \
                reply you got. Open a turn for the details."
            }
            @if all.listed.is_empty() {
                p { "No turns yet. Send a message in the chat and it will show here." }
            } @else {
                div.table-wrap {
                    table.turns {
                        caption {
                            "The newest " (all.listed.len()) " of " (all.turns) " turns, newest first"
                        }
                        thead {
                            tr {
                                th scope="col" { "Turn" }
                                th scope="col" { "When (" (tz) ")" }
                                th scope="col" { "Your message" }
                                th scope="col" { "Model calls" }
                                th scope="col" { "Tool calls" }
                                th scope="col" { "Tokens" }
                                th scope="col" { "Reply" }
                            }
                        }
                        tbody {
                            @for t in &all.listed {
                                tr {
                                    th scope="row" {
                                        a href=(turn_path(&all.conversation, t.turn)) { "Turn " (t.turn) }
                                    }
                                    td { @if let Some(at) = t.at_ms { (local_time(at, &tz)) } @else { "–" } }
                                    td { (excerpt(t.message.as_ref())) }
                                    td { (t.model_calls.len()) }
                                    td {
                                        (t.tool_calls.len())
                                        @let held = t.tool_calls.iter().filter(|c| c.state == Some(ToolState::Held)).count();
                                        @if held > 0 { " (" (held) " held)" }
                                    }
                                    td { @match tokens_total(t) { Some(n) => { (n) } None => { "–" } } }
                                    td { (excerpt(t.reply.text.as_ref())) }
                                }
                            }
                        }
                    }
                }
                @if all.older {
                    p.muted { "Older turns are not listed here." }
                }
            }
        },
    ))
}

async fn one(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Path((id, n)): Path<(String, String)>,
) -> Result<Markup, UiError> {
    let key = key_of(&id)?;
    let turn: u64 = n.parse().map_err(|_| not_found())?;
    let t = inspection::turn(
        state.table().as_ref(),
        Reader::Person(signed_in.user()),
        &key,
        turn,
    )
    .await
    .map_err(failed)?;
    let tz = time_zone(&state, &signed_in).await?;
    let title = format!("Turn {}", t.turn);
    let path = turn_path(&t.conversation, t.turn);
    Ok(layout::app_page(
        &title,
        &path,
        &signed_in.session,
        turn_body(&t, &tz),
    ))
}

fn turn_body(t: &TurnInspection, tz: &TimeZoneName) -> Markup {
    html! {
        nav aria-label="Turns" {
            a href=(turns_path(&t.conversation)) { "All turns" }
            @if t.turn > 1 { " · " a href=(turn_path(&t.conversation, t.turn - 1)) { "Turn " (t.turn - 1) } }
        }
        h1 { "Turn " (t.turn) }
        p.muted {
            "In " code { (t.conversation) }
            @if let Some(at) = t.at_ms { ", " (local_time(at, tz)) " (" (tz) ")" }
            "."
        }
        section.inspect aria-labelledby="message-h" {
            h2 #message-h { "Your message" }
            @match &t.message {
                Some(m) => { p.said { (shown(m)) } }
                None => { p.muted { "Not recorded." } }
            }
        }
        section.inspect aria-labelledby="context-h" {
            h2 #context-h { "Context block" }
            @match &t.context {
                Some(c) => {
                    p.muted { "Sent with every model call of this turn, before your message." }
                    pre.code-block { (shown(c)) }
                }
                None => { p.muted { "None: this turn was answered without the model." } }
            }
        }
        section.inspect aria-labelledby="calls-h" {
            h2 #calls-h { "Model calls" }
            @if t.model_calls.is_empty() {
                p.muted { "No model calls." }
            } @else {
                div.table-wrap {
                    table.model-calls {
                        caption { "Model calls of turn " (t.turn) ", in order" }
                        thead {
                            tr {
                                th scope="col" { "Call" }
                                th scope="col" { "Model" }
                                th scope="col" { "Stop reason" }
                                th scope="col" { "Input tokens" }
                                th scope="col" { "Output tokens" }
                                th scope="col" { "Cache read" }
                                th scope="col" { "Cache write" }
                                th scope="col" { "Latency" }
                                th scope="col" { "What it wrote" }
                            }
                        }
                        tbody {
                            @for (i, c) in t.model_calls.iter().enumerate() {
                                tr {
                                    th scope="row" { (i + 1) }
                                    td { (c.model.as_deref().unwrap_or("–")) }
                                    td { (c.stop_reason.as_deref().unwrap_or("–")) }
                                    @match c.tokens {
                                        Some(k) => {
                                            td { (k.input) } td { (k.output) }
                                            td { (k.cache_read) } td { (k.cache_write) }
                                        }
                                        None => { td { "–" } td { "–" } td { "–" } td { "–" } }
                                    }
                                    td { @match c.latency_ms { Some(ms) => { (ms) " ms" } None => { "–" } } }
                                    td {
                                        (shown(&c.text))
                                        @if c.tool_calls > 0 {
                                            @if !c.text.text.is_empty() { br; }
                                            span.muted { "Asked for " (c.tool_calls) " tool call" @if c.tool_calls != 1 { "s" } "." }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                @if t.model_calls.iter().any(|c| c.tokens.is_none()) {
                    p.muted { "A dash: recorded before Steward kept these details." }
                }
            }
        }
        section.inspect aria-labelledby="tools-h" {
            h2 #tools-h { "Tool calls" }
            @if t.tool_calls.is_empty() {
                p.muted { "No tool calls." }
            } @else {
                div.table-wrap {
                    table.tool-calls {
                        caption { "Tool calls of turn " (t.turn) ", in order" }
                        thead {
                            tr {
                                th scope="col" { "Tool" }
                                th scope="col" { "Status" }
                                th scope="col" { "Arguments" }
                                th scope="col" { "Result" }
                                th scope="col" { "Effect id" }
                            }
                        }
                        tbody {
                            @for c in &t.tool_calls { (tool_row(c)) }
                        }
                    }
                }
            }
        }
        @if !t.harness_lines.is_empty() {
            section.inspect aria-labelledby="harness-h" {
                h2 #harness-h { "Said by Steward itself" }
                ul { @for line in &t.harness_lines { li { (shown(line)) } } }
            }
        }
        section.inspect aria-labelledby="reply-h" {
            h2 #reply-h { "Reply" }
            table.reply {
                caption { "The reply as the channel got it" }
                tbody {
                    tr { th scope="row" { "Channel" } td { (t.reply.channel) } }
                    tr {
                        th scope="row" { "Text" }
                        td.said { @match &t.reply.text { Some(s) => { (shown(s)) } None => { "(no text)" } } }
                    }
                    @if !t.reply.buttons.is_empty() {
                        tr {
                            th scope="row" { "Buttons" }
                            td { ul.changes { @for b in &t.reply.buttons { li { (b) } } } }
                        }
                    }
                    @if let Some(r) = &t.reply.reaction {
                        tr { th scope="row" { "Reaction" } td { (r) } }
                    }
                    @if !t.reply.parts.is_empty() {
                        tr {
                            th scope="row" { "Delivered as" }
                            td { (t.reply.parts.len()) " message" @if t.reply.parts.len() != 1 { "s" } ": " (t.reply.parts.join(", ")) }
                        }
                    }
                    @if let Some(a) = &t.reply.apology {
                        tr { th scope="row" { "Apology" } td { (shown(a)) } }
                    }
                }
            }
        }
    }
}

fn tool_row(c: &ToolCallView) -> Markup {
    let badge = match c.state {
        Some(ToolState::Held) | Some(ToolState::Refused) | Some(ToolState::NotRun) => {
            "badge undone"
        }
        Some(ToolState::Confirmed) | Some(ToolState::Ran) | Some(ToolState::Replayed) => {
            "badge published"
        }
        None => "badge",
    };
    html! {
        tr {
            th scope="row" { code { (c.name) } }
            td {
                span class=(badge) { (state_label(c.state)) }
                @if c.is_error && c.state != Some(ToolState::Held) { " " span.muted { "(error)" } }
            }
            td { code.args { (shown(&c.arguments)) } }
            td {
                @match &c.result {
                    Some(r) => { (shown(r)) }
                    None => { span.muted { "No result recorded." } }
                }
            }
            td {
                @match &c.effect { Some(e) => { code { (e) } } None => { "–" } }
                @if c.action.is_some() { br; span.muted { "Changed your data" } }
            }
        }
    }
}
