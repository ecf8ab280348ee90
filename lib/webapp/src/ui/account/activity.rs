//! Activity: the account's audit trail, one row per request, newest first (`GET
//! /app/activity`). A request is one chat message (every tool call of its turn), one web form
//! post or one MCP call; its row lists each change it made. The request `undo::undo_last` would
//! revert gets an Undo button (`POST /app/activity/undo`), which reverts the whole request —
//! through the confirmation gate: an undo that changes a published or cancelled event asks
//! first, like any held form.
//! Public registrations are listed but are never on the undo stack, so never get a button.
//!
//! After an undo the page is fetched again with `?undone=1`, which makes it say what was
//! undone — read from the newest request, never from the URL.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use maud::{Markup, html};
use serde::Deserialize;
use steward_events::tools::NoInput;
use steward_harness::audit::{ActionHeader, ActionKind, RequestRecord, recent_requests};
use steward_harness::undo::PreparedUndo;
use steward_harness::undo::next_to_undo;
use steward_harness::{ActionId, Actor, Ctx, ServiceError, TimeZoneName, accounts, prepare_undo};

use super::local_time;
use crate::csrf;
use crate::layout;
use crate::paths::turns_path;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::event::confirm::{self, Action, Gated};
use crate::ui::event::fields::Fields;
use crate::ui::respond::{UiError, message_of, status_of};

/// The activity page.
pub const ACTIVITY_PATH: &str = "/app/activity";

/// Where the Undo button posts.
pub const UNDO_PATH: &str = "/app/activity/undo";

/// Most requests listed: a screenful of recent history. Older requests stay in the audit trail
/// (and undo can still walk back to them, one request at a time).
pub const ACTIVITY_ACTIONS_MAX: usize = 50;

/// `?undone=1` after an undo.
#[derive(Debug, Default, Deserialize)]
pub struct ActivityQuery {
    /// Whether to say what the last undo reverted.
    #[serde(default)]
    pub undone: Option<String>,
}

/// The Undo button's field: the request (action) id the page offered to undo.
pub const UNDO_ACTION_FIELD: &str = "action";

/// Who did an action, as the account holder reads it.
pub fn who(actor: Actor) -> &'static str {
    match actor {
        Actor::User => "You",
        Actor::Agent => "The assistant",
        Actor::Mcp => "An MCP client",
        Actor::Public => "A member of the public",
    }
}

/// What one commit was: its label, or a generic phrase when the service gave none.
fn what(header: &ActionHeader) -> String {
    match (&header.label, header.kind) {
        (Some(label), _) => label.clone(),
        (None, ActionKind::Undo) => "Undo".to_owned(),
        (None, ActionKind::Change) => "A change".to_owned(),
    }
}

/// "Undid \"Create event …\" and \"Add room …\" (3 records)." when the newest request is an
/// undo: the labels of the commits it reverted, read from the reverted request's row.
fn undo_sentence(requests: &[RequestRecord]) -> Option<String> {
    let newest = requests.first()?;
    let undo = newest
        .commits
        .iter()
        .rev()
        .find(|c| c.kind == ActionKind::Undo)?;
    let reverted: Vec<String> = undo
        .undoes
        .and_then(|id| requests.iter().find(|r| r.action == id))
        .map(|r| {
            r.commits
                .iter()
                .filter(|c| c.undone_by == Some(newest.action))
                .filter_map(|c| c.label.clone())
                .collect()
        })
        .filter(|labels: &Vec<String>| !labels.is_empty())
        .or_else(|| {
            undo.label
                .as_deref()
                .and_then(|l| l.strip_prefix("Undo: "))
                .map(|l| vec![l.to_owned()])
        })
        .unwrap_or_default();
    let quoted: Vec<String> = reverted.iter().map(|l| format!("\"{l}\"")).collect();
    let what = match quoted.as_slice() {
        [] => "the last change".to_owned(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    let n = undo.changes;
    let records = if n == 1 { "record" } else { "records" };
    Some(format!("Undid {what} ({n} {records})."))
}

fn trail(
    signed_in: &SignedIn,
    requests: &[RequestRecord],
    undoable: Option<ActionId>,
    tz: &TimeZoneName,
) -> Markup {
    html! {
        @if requests.is_empty() {
            p.muted { "Nothing has happened yet. Changes you, the assistant or an MCP client make — \
                       and registrations from your public pages — will be listed here." }
        } @else {
            div.table-wrap {
                table.activity {
                    thead { tr { th { "What" } th { "Who" } th { "When (" (tz) ")" } th { "Status" } } }
                    tbody {
                        @for request in requests {
                            tr {
                                td {
                                    @if let [only] = request.commits.as_slice() {
                                        (what(only))
                                    } @else {
                                        ul.changes {
                                            @for commit in &request.commits {
                                                li {
                                                    (what(commit))
                                                    @if commit.undone_by.is_some() && !request.is_undone() {
                                                        " " span.badge.undone { "Undone" }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                                td {
                                    (who(request.actor))
                                    @if let Some(conv) = request.commits.iter().find_map(|c| c.effect.as_ref()).map(|e| e.conversation.to_string()) {
                                        br;
                                        a href=(turns_path(&conv)) { "See the turns" }
                                    }
                                }
                                td { (local_time(request.at_ms(), tz)) }
                                td {
                                    @if request.is_undone() {
                                        span.badge.undone { "Undone" }
                                    } @else if undoable == Some(request.action) {
                                        form.inline method="post" action=(UNDO_PATH) {
                                            (csrf::field(&signed_in.session))
                                            input type="hidden" name=(UNDO_ACTION_FIELD) value=(request.action);
                                            button.secondary type="submit" { "Undo" }
                                        }
                                    } @else if !request.has_undoable() && request.commits.iter().any(|c| c.kind == ActionKind::Undo) {
                                        span.badge { "Undo" }
                                    } @else if !request.actor.is_undoable() {
                                        span.muted { "Not undoable" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if requests.len() == ACTIVITY_ACTIONS_MAX {
                p.muted { "Showing the newest " (ACTIVITY_ACTIONS_MAX) " requests." }
            }
        }
    }
}

async fn render(
    state: &WebState,
    signed_in: &SignedIn,
    show_undone: bool,
    problem: Option<&str>,
) -> Result<Markup, ServiceError> {
    let ctx = signed_in.ctx(state);
    let profile = accounts::profile(&ctx).await?;
    let requests = recent_requests(
        state.table().as_ref(),
        signed_in.user(),
        ACTIVITY_ACTIONS_MAX,
    )
    .await?;
    let undoable = next_to_undo(&ctx).await?;
    let notice = if show_undone {
        undo_sentence(&requests)
    } else {
        None
    };
    Ok(layout::app_page(
        "Activity",
        ACTIVITY_PATH,
        &signed_in.session,
        html! {
            h1 { "Activity" }
            p.muted { "Every change to your account, newest first, one row per request: one \
                       message to the assistant, one form you sent, one call of an MCP client. \
                       Undo reverts everything the newest request did that is not undone yet; \
                       pressing it again walks further back. Registrations from the public are \
                       never undone here." }
            @if let Some(notice) = notice { p.notice role="status" { (notice) } }
            @if let Some(problem) = problem { p.error role="alert" { (problem) } }
            (trail(signed_in, &requests, undoable, &profile.time_zone))
        },
    ))
}

async fn show(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Query(query): Query<ActivityQuery>,
) -> Result<Markup, UiError> {
    Ok(render(&state, &signed_in, query.undone.is_some(), None).await?)
}

async fn undo(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Form(f): Form<Fields>,
) -> Response {
    match undo_offered(&state, &signed_in, &f).await {
        Ok(Gated::Ran(())) => Redirect::to(&format!("{ACTIVITY_PATH}?undone=1")).into_response(),
        Ok(Gated::Page(page)) => page,
        Err(e) => {
            let status = status_of(&e);
            let problem = message_of(&e);
            match render(&state, &signed_in, false, Some(&problem)).await {
                Ok(page) => (status, page).into_response(),
                Err(e) => UiError(e).into_response(),
            }
        }
    }
}

/// Refuses unless the newest undoable request is still the one the page showed the button
/// next to (the assistant may have acted since): never revert what the person did not see.
async fn still_offered(ctx: &Ctx, shown: &str) -> Result<PreparedUndo, ServiceError> {
    let prepared = prepare_undo(ctx).await?;
    if prepared.summary().undone.to_string() != shown {
        return Err(ServiceError::CannotUndo {
            reason: "the newest change is not the one shown when this page was loaded; look at the list again"
                .to_owned(),
        });
    }
    Ok(prepared)
}

/// Undoes the newest undoable request if it is the one the page offered, through the gate:
/// an undo that changes an event other people see (see `steward_events::holds::undo`) asks
/// first, like any held form.
async fn undo_offered(
    state: &WebState,
    signed_in: &SignedIn,
    f: &Fields,
) -> Result<Gated<()>, ServiceError> {
    let ctx = signed_in.ctx(state);
    let shown = f.get(UNDO_ACTION_FIELD);
    // Checked before asking too, so the confirmation page never describes another request.
    drop(still_offered(&ctx, shown).await?);
    let action = Action {
        tool: "undo_last_action",
        input: NoInput {},
        verb: "undo it",
        action: UNDO_PATH.to_owned(),
        back: ACTIVITY_PATH.to_owned(),
    };
    confirm::run(state, &ctx, signed_in, f, action, async |ctx| {
        still_offered(&ctx, shown).await?.commit().await?;
        Ok(())
    })
    .await
}

/// The activity routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(ACTIVITY_PATH, get(show))
        .route(UNDO_PATH, post(undo))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_actor_has_a_readable_name() {
        assert_eq!(who(Actor::User), "You");
        assert_eq!(who(Actor::Agent), "The assistant");
        assert_eq!(who(Actor::Mcp), "An MCP client");
        assert_eq!(who(Actor::Public), "A member of the public");
    }
}
