//! Turning a service failure into a page: expected failures (not found, invalid input, not
//! allowed, a conflict) keep their readable message and a fitting status; anything else is
//! logged in full and shown as a generic error.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use steward_harness::ServiceError;

use super::layout;

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

/// The message a person may see: the service's own words when expected, else generic.
pub fn message_of(e: &ServiceError) -> String {
    if e.is_expected() {
        e.to_string()
    } else {
        tracing::error!(error = %e, "web request failed");
        "Something went wrong on our side. It has been logged; please try again.".to_owned()
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
                p { a href=(super::APP_HOME) { "Back to your events" } }
            },
        );
        (status, page).into_response()
    }
}
