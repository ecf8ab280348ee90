//! Turning a service failure into a page: expected failures (not found, invalid input, not
//! allowed, a conflict) keep their readable message and a fitting status; anything else is
//! logged in full and shown as a generic error. A failed form keeps its page: the problem is
//! drawn above the form by [`FormProblem`].

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use steward_harness::ServiceError;

use crate::layout;

/// A failed page request.
#[derive(Debug)]
pub struct UiError(pub ServiceError);

impl From<ServiceError> for UiError {
    fn from(e: ServiceError) -> Self {
        Self(e)
    }
}

/// The HTTP status of a service failure.
pub fn status_of(e: &ServiceError) -> StatusCode {
    match e {
        ServiceError::NotFound { .. } => StatusCode::NOT_FOUND,
        ServiceError::Invalid { .. } | ServiceError::TooManyChanges { .. } => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        ServiceError::Forbidden { .. } => StatusCode::FORBIDDEN,
        ServiceError::Conflict { .. }
        | ServiceError::AlreadyExists { .. }
        | ServiceError::CannotUndo { .. }
        | ServiceError::NotConfirmed { .. } => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The message a person may see: the failure in page words ([`ServiceError::for_page`]);
/// an unexpected failure is logged in full and reads as a generic error.
pub fn message_of(e: &ServiceError) -> String {
    if !e.is_expected() {
        tracing::error!(error = %e, "web request failed");
    }
    e.for_page()
}

/// The form field a failure blames (the field of an invalid input), if any.
pub fn field_of(e: &ServiceError) -> Option<&str> {
    match e {
        ServiceError::Invalid { field, .. } => Some(field),
        _ => None,
    }
}

/// A form that came back with a problem, as shown above the form: the message and the name of
/// the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormProblem {
    /// What is wrong, in words.
    pub message: String,
    /// The `name` of the form field at fault, when one is.
    pub field: Option<String>,
}

impl FormProblem {
    /// The problem a failure describes ([`message_of`], [`field_of`]).
    pub fn of(e: &ServiceError) -> Self {
        Self {
            message: message_of(e),
            field: field_of(e).map(str::to_owned),
        }
    }

    /// A problem not from a service failure.
    pub fn new(message: impl Into<String>, field: Option<&str>) -> Self {
        Self {
            message: message.into(),
            field: field.map(str::to_owned),
        }
    }

    /// The same problem blaming `to` where it blames `from` (a form whose field is named
    /// differently from the service's argument).
    #[must_use]
    pub fn renamed(mut self, from: &str, to: &str) -> Self {
        if self.field.as_deref() == Some(from) {
            self.field = Some(to.to_owned());
        }
        self
    }

    /// The paragraph, placed right before its form: announced when the page loads
    /// (`role="alert"`), with the `id` the field's `aria-describedby` points to and the field's
    /// name in `data-field`, from which the page script marks that field invalid and focuses it.
    pub fn render(&self, id: &str) -> Markup {
        html! {
            p.error role="alert" id=(id) data-field=[self.field.as_deref()] { (self.message) }
        }
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        let message = message_of(&self.0);
        let page = layout::bare_page(
            "Error",
            html! {
                h1 { (status.canonical_reason().unwrap_or("Error")) }
                p.error role="alert" { (message) }
                p { a href=(crate::paths::APP_HOME) { "Back to your events" } }
            },
        );
        (status, page).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_problem_names_its_field_and_can_be_announced() {
        let e = ServiceError::invalid("capacity", "give a number");
        let p = FormProblem::of(&e);
        assert_eq!(p.field.as_deref(), Some("capacity"));
        assert_eq!(
            p.render("room-add-problem").into_string(),
            "<p class=\"error\" role=\"alert\" id=\"room-add-problem\" data-field=\"capacity\">\
             Invalid capacity: give a number</p>"
        );
        let renamed = FormProblem::of(&ServiceError::invalid("start_time", "x"))
            .renamed("start_time", "start");
        assert_eq!(renamed.field.as_deref(), Some("start"));
        let general = FormProblem::of(&ServiceError::conflict("event e_1"));
        assert_eq!(general.field, None);
        assert!(!general.render("p").into_string().contains("data-field"));
        let typed = FormProblem::new("<b>", None).render("p").into_string();
        assert!(typed.contains("&lt;b&gt;"), "{typed}");
    }
}
