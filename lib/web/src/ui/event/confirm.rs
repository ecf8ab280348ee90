//! The confirmation step of risky actions. The first post of a risky form (without
//! `confirm=yes`) answers with a page saying exactly what will happen — described by the same
//! risk policy the chat uses, from the stored records — with a form re-posting the same fields
//! plus `confirm=yes`, and a "Keep it" link back. No script needed.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde_json::Value;
use steward_events::EventsRiskPolicy;
use steward_events::ids::EventId;
use steward_harness::{Ctx, RiskPolicy, ServiceError};

use super::event_path;
use super::fields::{CONFIRM_FIELD, Fields};
use crate::auth::{SignedIn, csrf};
use crate::ui::layout;

/// A risky action as the chat's tool would be called.
#[derive(Debug, Clone)]
pub struct Risky<'a> {
    /// The tool the risk policy knows the action as (`publish_event`, `remove_room`, …).
    pub tool: &'a str,
    /// The tool's arguments.
    pub args: Value,
    /// The button's verb: "Yes, <verb>".
    pub verb: &'a str,
    /// Where the form posts (the same route).
    pub action: String,
}

/// When the action is risky and not yet confirmed, the confirmation page to answer with;
/// `None` when it may go ahead.
pub async fn ask(
    ctx: &Ctx,
    signed: &SignedIn,
    event: &EventId,
    fields: &Fields,
    risky: Risky<'_>,
) -> Result<Option<Response>, ServiceError> {
    if fields.confirmed() {
        return Ok(None);
    }
    let Some(description) = EventsRiskPolicy
        .describe_risk(ctx, risky.tool, &risky.args)
        .await?
    else {
        return Ok(None);
    };
    let body = html! {
        div.card.confirm {
            h1 { "Please confirm" }
            p { (description) "." }
            form.inline method="post" action=(risky.action) {
                (csrf::field(&signed.session))
                @for (name, value) in fields.carried() {
                    input type="hidden" name=(name) value=(value);
                }
                input type="hidden" name=(CONFIRM_FIELD) value="yes";
                button.danger type="submit" { "Yes, " (risky.verb) }
            }
            " "
            a.button.secondary href=(event_path(event)) { "Keep it" }
        }
    };
    let page = layout::app_page("Please confirm", "/app", &signed.session, body);
    Ok(Some((StatusCode::OK, page).into_response()))
}
