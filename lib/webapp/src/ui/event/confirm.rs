//! The confirmation step of held actions. A form converts into the capability's own typed input
//! (the same type the chat and MCP send) and asks the harness gate, which asks the capability's
//! declaration: a held action answers with a page saying exactly what will happen (described
//! from the stored records) and a form re-posting the same fields plus `confirm=yes`, and a
//! "Keep it" link back. The re-post spends the confirmation record the first post filed, in
//! the same transaction as the change, so a double submit runs once. No script needed.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Serialize;
use steward_events::ids::EventId;
use steward_harness::gate::{self, GateDecision, Surface};
use steward_harness::{Ctx, Decision, ServiceError};

use super::event_path;
use super::fields::{CONFIRM_FIELD, Fields};
use crate::csrf;
use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;

/// A form's action as the capability's typed input.
#[derive(Debug, Clone)]
pub struct Risky<'a, I> {
    /// The capability (`publish_event`, `remove_room`, …).
    pub tool: &'a str,
    /// The form converted into the capability's input type.
    pub input: I,
    /// The button's verb: "Yes, <verb>".
    pub verb: &'a str,
    /// Where the form posts (the same route).
    pub action: String,
}

/// What the gate said about a form's action.
#[derive(Debug)]
pub enum Gated {
    /// Answer with this page (the confirmation step) instead.
    Page(Response),
    /// Go ahead with this context (carrying the spend of the confirmation, if one was used).
    Go(Ctx),
}

/// Asks the capability's declaration through the gate. The arguments of an unknown capability
/// or an input that does not parse are refused (never "not risky").
pub async fn ask<I: Serialize>(
    state: &WebState,
    ctx: &Ctx,
    signed: &SignedIn,
    event: &EventId,
    fields: &Fields,
    risky: Risky<'_, I>,
) -> Result<Gated, ServiceError> {
    let Some(tool) = state.registry().get(risky.tool) else {
        return Err(ServiceError::internal(format!(
            "the web UI names an unknown capability {}",
            risky.tool
        )));
    };
    let args = serde_json::to_value(&risky.input)
        .map_err(|e| ServiceError::internal(format!("form input of {}: {e}", risky.tool)))?;
    let args = tool
        .validate(args)
        .map_err(|msg| ServiceError::invalid("form", msg))?;
    let description = match tool.decide(ctx, &args).await {
        Decision::Run => None,
        Decision::Hold { description } => Some(description),
        Decision::Refuse { message } => return Err(ServiceError::invalid("form", message)),
    };
    let surface = Surface::Web {
        confirmed: fields.confirmed(),
    };
    let decision = gate::check(
        ctx.table().as_ref(),
        ctx.user(),
        &surface,
        ctx.now_millis(),
        risky.tool,
        &args,
        description,
    )
    .await?;
    let description = match decision {
        GateDecision::Pass => return Ok(Gated::Go(ctx.clone())),
        GateDecision::Confirmed { consume } => {
            return Ok(Gated::Go(ctx.clone().with_confirmation(consume)));
        }
        GateDecision::Held { confirmation, .. } => confirmation.description,
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
    Ok(Gated::Page((StatusCode::OK, page).into_response()))
}
