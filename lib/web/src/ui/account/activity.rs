//! Activity: the account's audit trail, newest first (`GET /app/activity`), with an Undo
//! button on the one action `undo::undo_last` would revert (`POST /app/activity/undo`).
//! Public registrations are listed but are never on the undo stack, so never get a button.
//!
//! After an undo the page is fetched again with `?undone=1`, which makes it say what was
//! undone — read from the newest action header, never from the URL.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use maud::{Markup, html};
use serde::Deserialize;
use steward_harness::audit::{ActionHeader, ActionKind, recent_actions};
use steward_harness::undo::next_to_undo;
use steward_harness::{Actor, ServiceError, TimeZoneName, accounts, prepare_undo};

use super::local_time;
use crate::app::WebState;
use crate::auth::{SignedIn, csrf};
use crate::ui::layout;
use crate::ui::respond::{UiError, message_of, status_of};

/// The activity page.
pub const ACTIVITY_PATH: &str = "/app/activity";

/// Where the Undo button posts.
pub const UNDO_PATH: &str = "/app/activity/undo";

/// Most actions listed: a screenful of recent history. Older actions stay in the audit trail
/// (and undo can still walk back to them, one step at a time).
pub const ACTIVITY_ACTIONS_MAX: usize = 50;

/// `?undone=1` after an undo.
#[derive(Debug, Default, Deserialize)]
pub struct ActivityQuery {
    /// Whether to say what the last undo reverted.
    #[serde(default)]
    pub undone: Option<String>,
}

/// The Undo button's form: the action the page offered to undo.
#[derive(Debug, Default, Deserialize)]
pub struct UndoForm {
    /// The action id shown next to the button.
    #[serde(default)]
    pub action: String,
}

/// Who did an action, as the account holder reads it.
pub fn who(actor: Actor) -> &'static str {
    match actor {
        Actor::User => "You",
        Actor::Agent => "The assistant",
        Actor::Mcp => "An MCP client",
        Actor::Public => "A member of the public",
    }
}

/// What an action was: its label, or a generic phrase when the service gave none.
fn what(header: &ActionHeader) -> String {
    match (&header.label, header.kind) {
        (Some(label), _) => label.clone(),
        (None, ActionKind::Undo) => "Undo".to_owned(),
        (None, ActionKind::Change) => "A change".to_owned(),
    }
}

/// "Undid \"Create event …\" (3 records)." for the newest action, when it is an undo.
fn undo_sentence(headers: &[ActionHeader]) -> Option<String> {
    let newest = headers.first().filter(|h| h.kind == ActionKind::Undo)?;
    let undone_label = newest
        .undoes
        .and_then(|id| headers.iter().find(|h| h.action == id))
        .and_then(|h| h.label.clone())
        .or_else(|| {
            newest
                .label
                .as_deref()
                .and_then(|l| l.strip_prefix("Undo: "))
                .map(str::to_owned)
        });
    let what = undone_label.map_or_else(|| "the last change".to_owned(), |l| format!("\"{l}\""));
    let n = newest.changes;
    let records = if n == 1 { "record" } else { "records" };
    Some(format!("Undid {what} ({n} {records})."))
}

fn trail(
    signed_in: &SignedIn,
    headers: &[ActionHeader],
    undoable: Option<&ActionHeader>,
    tz: &TimeZoneName,
) -> Markup {
    html! {
        @if headers.is_empty() {
            p.muted { "Nothing has happened yet. Changes you, the assistant or an MCP client make — \
                       and registrations from your public pages — will be listed here." }
        } @else {
            div.table-wrap {
                table.activity {
                    thead { tr { th { "What" } th { "Who" } th { "When (" (tz) ")" } th { "Status" } } }
                    tbody {
                        @for header in headers {
                            tr {
                                td { (what(header)) }
                                td { (who(header.actor)) }
                                td { (local_time(header.at_ms, tz)) }
                                td {
                                    @if header.undone_by.is_some() {
                                        span.badge.undone { "Undone" }
                                    } @else if header.kind == ActionKind::Undo {
                                        span.badge { "Undo" }
                                    } @else if undoable.is_some_and(|u| u.action == header.action) {
                                        form.inline method="post" action=(UNDO_PATH) {
                                            (csrf::field(&signed_in.session))
                                            input type="hidden" name="action" value=(header.action);
                                            button.secondary type="submit" { "Undo" }
                                        }
                                    } @else if !header.actor.is_undoable() {
                                        span.muted { "Not undoable" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if headers.len() == ACTIVITY_ACTIONS_MAX {
                p.muted { "Showing the newest " (ACTIVITY_ACTIONS_MAX) " actions." }
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
    let headers = recent_actions(
        state.table().as_ref(),
        signed_in.user(),
        ACTIVITY_ACTIONS_MAX,
    )
    .await?;
    let undoable = next_to_undo(&ctx).await?;
    let notice = if show_undone {
        undo_sentence(&headers)
    } else {
        None
    };
    Ok(layout::app_page(
        "Activity",
        ACTIVITY_PATH,
        &signed_in.session,
        html! {
            h1 { "Activity" }
            p.muted { "Every change to your account, newest first. Undo reverts the newest change \
                       that is not undone yet; pressing it again walks further back. Registrations \
                       from the public are never undone here." }
            @if let Some(notice) = notice { p.notice role="status" { (notice) } }
            @if let Some(problem) = problem { p.error role="alert" { (problem) } }
            (trail(signed_in, &headers, undoable.as_ref(), &profile.time_zone))
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
    Form(form): Form<UndoForm>,
) -> Response {
    match undo_offered(&state, &signed_in, &form).await {
        Ok(()) => Redirect::to(&format!("{ACTIVITY_PATH}?undone=1")).into_response(),
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

/// Undoes the newest undoable action, but only if it is still the one the page showed the
/// button next to (the assistant may have acted since): never revert what the person did not
/// see.
async fn undo_offered(
    state: &WebState,
    signed_in: &SignedIn,
    form: &UndoForm,
) -> Result<(), ServiceError> {
    let prepared = prepare_undo(&signed_in.ctx(state)).await?;
    if prepared.summary().undone.to_string() != form.action {
        return Err(ServiceError::CannotUndo {
            reason: "the newest change is not the one shown when this page was loaded; look at the list again"
                .to_owned(),
        });
    }
    prepared.commit().await?;
    Ok(())
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
