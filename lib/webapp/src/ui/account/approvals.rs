//! Approvals (`GET /app/approvals`): the held requests of the account's MCP clients — what each
//! would do (described from the database), which client (token label) asked and when — with
//! Approve and Decline (`POST /app/approvals/{id}/approve|decline`, CSRF-checked like every
//! form under `/app`). This is the out-of-band confirmation of the harness gate: only the
//! signed-in person can settle a request, only their own (the record lives in their partition),
//! and after Approve the client's next identical call runs exactly once.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Redirect;
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;
use steward_harness::gate::{self, ApprovalError, ConfirmState, Confirmation};
use steward_harness::{ServiceError, accounts};

use super::local_time;
use crate::csrf;
use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::UiError;

/// The Approvals page.
pub const APPROVALS_PATH: &str = "/app/approvals";

/// Where Approve of request `id` posts.
pub fn approve_path(id: &str) -> String {
    format!("{APPROVALS_PATH}/{id}/approve")
}

/// Where Decline of request `id` posts.
pub fn decline_path(id: &str) -> String {
    format!("{APPROVALS_PATH}/{id}/decline")
}

/// `?done=approved|declined|gone|…` after a post.
#[derive(Debug, Default, Deserialize)]
pub struct ApprovalsQuery {
    /// What the last post did.
    #[serde(default)]
    pub done: Option<String>,
}

fn notice(done: Option<&str>) -> Markup {
    let text = match done {
        Some("approved") => {
            "Approved. The client's next identical call runs once; tell it to try again within the hour."
        }
        Some("declined") => {
            "Declined. Nothing ran, and the client's repeats of that call are refused."
        }
        Some("gone") => "That request has expired or does not exist; nothing was approved.",
        Some("settled") => "That request was already handled; nothing changed.",
        _ => return html! {},
    };
    html! { p.notice role="status" { (text) } }
}

fn request_rows(
    signed: &SignedIn,
    requests: &[Confirmation],
    tz: &steward_harness::TimeZoneName,
) -> Markup {
    html! {
        @if requests.is_empty() {
            p.muted { "No requests are waiting. When an MCP client asks for something that needs you \
                       (deleting an event, or changing what people see on a published one), it shows up here." }
        } @else {
            div.table-wrap {
                table.approvals {
                    thead { tr { th { "What" } th { "Client" } th { "Asked" } th { "Decision" } } }
                    tbody {
                        @for r in requests {
                            tr {
                                td { (r.description) " " span.muted { "(" code { (r.capability) } ")" } }
                                td { (r.client.as_deref().unwrap_or("an MCP client")) }
                                td { (local_time(r.created_ms, tz)) }
                                td {
                                    @match r.state {
                                        ConfirmState::Pending => {
                                            form.inline method="post" action=(approve_path(&r.id)) {
                                                (csrf::field(&signed.session))
                                                button type="submit" { "Approve" }
                                            }
                                            " "
                                            form.inline method="post" action=(decline_path(&r.id)) {
                                                (csrf::field(&signed.session))
                                                button.secondary type="submit" { "Decline" }
                                            }
                                        }
                                        ConfirmState::Approved => span.badge { "Approved — waiting for the client" },
                                        ConfirmState::Declined => span.badge.revoked { "Declined" },
                                        ConfirmState::Spent => span.muted { "Done" },
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

async fn show(
    State(state): State<WebState>,
    signed: SignedIn,
    Query(query): Query<ApprovalsQuery>,
) -> Result<Markup, UiError> {
    let ctx = signed.ctx(&state);
    let profile = accounts::profile(&ctx).await?;
    let requests = gate::list_requests(state.table().as_ref(), signed.user(), ctx.now_millis())
        .await
        .map_err(ServiceError::from)?;
    Ok(layout::app_page(
        "Approvals",
        APPROVALS_PATH,
        &signed.session,
        html! {
            h1 { "Approvals" }
            p { "Requests from your MCP clients that wait for you. Nothing here runs until you \
                 approve it, and each approval lets the client's identical call run once, within \
                 an hour of the request." }
            (notice(query.done.as_deref()))
            (request_rows(&signed, &requests, &profile.time_zone))
        },
    ))
}

fn after(result: Result<Confirmation, ApprovalError>, done: &str) -> Result<Redirect, UiError> {
    let code = match result {
        Ok(_) => done,
        Err(ApprovalError::Gone | ApprovalError::WrongSurface) => "gone",
        Err(ApprovalError::AlreadyDecided(_)) => "settled",
        Err(ApprovalError::Store(e)) => return Err(UiError(ServiceError::from(e))),
    };
    Ok(Redirect::to(&format!("{APPROVALS_PATH}?done={code}")))
}

async fn approve(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
) -> Result<Redirect, UiError> {
    let now = state.clock().now_millis();
    let result = gate::approve(state.table().as_ref(), signed.user(), &id, now).await;
    if let Ok(c) = &result {
        tracing::info!(user = %signed.user(), confirmation = %c.id, tool = %c.capability, "MCP request approved");
    }
    after(result, "approved")
}

async fn decline(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
) -> Result<Redirect, UiError> {
    let now = state.clock().now_millis();
    let result = gate::decline(state.table().as_ref(), signed.user(), &id, now).await;
    after(result, "declined")
}

/// The approvals routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(APPROVALS_PATH, get(show))
        .route(&format!("{APPROVALS_PATH}/{{id}}/approve"), post(approve))
        .route(&format!("{APPROVALS_PATH}/{{id}}/decline"), post(decline))
}
