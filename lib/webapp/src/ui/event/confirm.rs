//! The confirmation step of held actions, for every web form that changes something. A form
//! converts into the capability's own typed input (the same type the chat and MCP send) and
//! [`run`] asks the harness gate, which asks the capability's declaration: a held action answers
//! with a page saying exactly what will happen (described from the stored records) and a form
//! re-posting the same fields plus `confirm=yes`, and a "Keep it" link back. The re-post spends
//! the confirmation record the first post filed, in the same transaction as the change, so a
//! double submit runs once. No script needed.
//!
//! Every form that runs a capability goes through [`run`]: the list of form routes and their
//! capabilities is [`crate::ui::FORMS`], and a test walks it against the registry.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Serialize;
use steward_harness::gate::{self, Admission, Surface};
use steward_harness::{Ctx, ServiceError};

use super::fields::{CONFIRM_FIELD, Fields};
use crate::csrf;
use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;

/// A form's action as the capability's typed input.
#[derive(Debug, Clone)]
pub struct Action<'a, I> {
    /// The capability (`publish_event`, `remove_room`, …).
    pub tool: &'a str,
    /// The form converted into the capability's input type.
    pub input: I,
    /// The button's verb: "Yes, <verb>".
    pub verb: &'a str,
    /// Where the form posts (the same route).
    pub action: String,
    /// Where "Keep it" leads (the page the form is on).
    pub back: String,
}

/// What a form's action came to.
#[derive(Debug)]
pub enum Gated<T> {
    /// Held: answer with this page (the confirmation step); nothing ran.
    Page(Response),
    /// Not held, or confirmed: the action ran once and gave this.
    Ran(T),
}

/// Runs a form's action through the gate. The input is validated against the capability's
/// schema and its declaration decides: a held action answers with the confirmation page and
/// runs nothing; otherwise `act` runs once with a context carrying the spend of the person's
/// confirmation (if one was used) in its transaction. A confirmed action that wrote nothing
/// spends the confirmation afterwards, so it cannot be used again. An unknown capability or an
/// input that does not parse is refused (never "not held"); a failing decision holds.
pub async fn run<I, T>(
    state: &WebState,
    ctx: &Ctx,
    signed: &SignedIn,
    fields: &Fields,
    action: Action<'_, I>,
    act: impl AsyncFnOnce(Ctx) -> Result<T, ServiceError>,
) -> Result<Gated<T>, ServiceError>
where
    I: Serialize,
{
    let Some(tool) = state.registry().get(action.tool) else {
        return Err(ServiceError::internal(format!(
            "the web UI names an unknown capability {}",
            action.tool
        )));
    };
    let args = serde_json::to_value(&action.input)
        .map_err(|e| ServiceError::internal(format!("form input of {}: {e}", action.tool)))?;
    let args = tool.validate(args).map_err(|msg| blamed(&msg))?;
    let surface = Surface::Web {
        confirmed: fields.confirmed(),
    };
    let description = match gate::admit(tool, ctx, &surface, action.tool, &args).await? {
        Admission::Run { ctx, consume } => {
            let table = ctx.table().clone();
            let done = act(*ctx).await?;
            if let Some(consume) = consume {
                // An action that wrote nothing did not carry the spend: spend it now.
                gate::spend(table.as_ref(), consume).await?;
            }
            return Ok(Gated::Ran(done));
        }
        Admission::Refused { message } => return Err(ServiceError::invalid("form", message)),
        Admission::Held { confirmation, .. } => confirmation.description,
    };
    let body = html! {
        div.card.confirm {
            h1 { "Please confirm" }
            p { (description) "." }
            form.inline method="post" action=(action.action) {
                (csrf::field(&signed.session))
                @for (name, value) in fields.carried() {
                    input type="hidden" name=(name) value=(value);
                }
                input type="hidden" name=(CONFIRM_FIELD) value="yes";
                button.danger type="submit" { "Yes, " (action.verb) }
            }
            " "
            a.button.secondary href=(action.back) { "Keep it" }
        }
    };
    let page = layout::app_page("Please confirm", "/app", &signed.session, body);
    Ok(Gated::Page((StatusCode::OK, page).into_response()))
}

/// A schema problem of the form's input as a problem of the field at fault: the first problem
/// of "Invalid arguments: capacity: 0 is less than the minimum of 1; …" names `capacity`.
fn blamed(message: &str) -> ServiceError {
    let first = message
        .strip_prefix("Invalid arguments: ")
        .unwrap_or(message)
        .split("; ")
        .next()
        .unwrap_or_default();
    match first.split_once(": ") {
        Some((field, problem))
            if !field.is_empty()
                && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            ServiceError::invalid(field, problem)
        }
        _ => ServiceError::invalid("form", message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_problem_names_its_field() {
        let e =
            blamed("Invalid arguments: capacity: 0 is less than the minimum of 1; name: too long");
        assert!(
            matches!(&e, ServiceError::Invalid { field, .. } if field == "capacity"),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("0 is less than the minimum of 1"),
            "{e}"
        );
        let odd = blamed("Invalid arguments: /0: something");
        assert!(
            matches!(&odd, ServiceError::Invalid { field, .. } if field == "form"),
            "{odd:?}"
        );
    }
}
