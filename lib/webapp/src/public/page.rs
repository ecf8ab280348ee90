//! The public page of an event: what, when and where, its status, the timetable once built,
//! and the registration form while registration is open.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::CookieJar;
use maud::{Markup, html};
use steward_events::events::EventStatus;
use steward_events::registration::{self, PublicEvent, RegistrationState};
use steward_events::text::{PersonName, Venue};
use steward_events::when;
use steward_harness::ServiceError;

use crate::csrf::FormToken;
use crate::form_stamp::STAMP_FIELD;
use crate::layout;
use crate::state::WebState;
use crate::ui::respond::FormProblem;
use crate::ui::{grid, respond};

/// The question the optional message field is stored under (as a registration answer).
pub const MESSAGE_QUESTION: &str = "Message";

/// Longest message accepted in the form's text area, in characters (the domain's bound on an
/// answer; the browser enforces it too).
const MESSAGE_CHARS_MAX: usize = steward_events::limits::ANSWER_CHARS_MAX;

/// Longest e-mail address the form field allows (the usual limit of an address).
const EMAIL_CHARS_MAX: usize = 254;

/// The honeypot field: hidden from people, filled by form-filling scripts.
pub const HONEYPOT_FIELD: &str = "website";

/// What the visitor typed, kept when the form comes back with a problem.
#[derive(Debug, Clone, Default)]
pub struct Typed {
    /// Name.
    pub name: String,
    /// E-mail address.
    pub email: String,
    /// Optional message to the organiser.
    pub message: String,
}

/// `GET /e/{slug}`.
pub async fn show(
    State(state): State<WebState>,
    Path(slug): Path<String>,
    token: FormToken,
    jar: CookieJar,
) -> Response {
    match registration::public_event(state.table().clone(), state.clock().clone(), &slug).await {
        Ok(event) => {
            render(
                &state,
                &event,
                &token,
                jar,
                &Typed::default(),
                None,
                StatusCode::OK,
            )
            .await
        }
        Err(ServiceError::NotFound { .. }) => moved_or_missing(&state, &slug).await,
        Err(e) => public_error(&e),
    }
}

/// A slug with no public event: a permanent redirect when the event moved to another address
/// (its old address stays reserved to it for a while), else 404.
async fn moved_or_missing(state: &WebState, slug: &str) -> Response {
    match steward_events::events::moved_to(state.table().as_ref(), slug).await {
        Ok(Some(new)) => Redirect::permanent(&new.path()).into_response(),
        Ok(None) => public_error(&ServiceError::not_found("The event")),
        Err(e) => public_error(&e),
    }
}

/// The page for a failure outside the form: not found (404) or a generic error.
pub fn public_error(e: &ServiceError) -> Response {
    let status = respond::status_of(e);
    let (title, text) = match e {
        ServiceError::NotFound { .. } => (
            "Not found",
            "There is no public event at this address. Check the link you were given.".to_owned(),
        ),
        _ => ("Error", respond::message_of(e)),
    };
    let page = layout::bare_page(
        title,
        html! {
            h1 { (title) }
            p.error role="alert" { (text) }
        },
    );
    (status, page).into_response()
}

/// The event page with the form (holding `typed` and `problem`, stamped with the time it is
/// shown), answered with `status` and the form cookie when the browser lacks it.
pub async fn render(
    state: &WebState,
    event: &PublicEvent,
    token: &FormToken,
    jar: CookieJar,
    typed: &Typed,
    problem: Option<&FormProblem>,
    status: StatusCode,
) -> Response {
    let stamp = match state.stamp_key().await {
        Ok(key) => key.stamp(token.value(), state.clock().now_secs()),
        Err(e) => {
            tracing::error!(error = %e, "the registration form's key could not be read");
            return public_error(&ServiceError::internal(e.to_string()));
        }
    };
    let form = FormFields {
        token,
        stamp: &stamp,
    };
    let page = layout::bare_page(&event.name, body(event, &form, typed, problem));
    let jar = match token.cookie(state.config().secure_cookies) {
        Some(c) => jar.add(c),
        None => jar,
    };
    (status, jar, page).into_response()
}

/// The hidden fields of the registration form.
struct FormFields<'a> {
    token: &'a FormToken,
    stamp: &'a str,
}

fn body(
    event: &PublicEvent,
    form: &FormFields<'_>,
    typed: &Typed,
    problem: Option<&FormProblem>,
) -> Markup {
    let days: Vec<String> = event.dates.iter().map(|d| when::fmt_day(*d)).collect();
    let grid = grid::Grid::from_public(&event.timetable);
    let cancelled = event.status == EventStatus::Cancelled;
    html! {
        h1 { (event.name) }
        @if cancelled {
            p.error.cancelled role="status" { "This event has been cancelled." }
        }
        div.card {
            p {
                strong { (days.join(", ")) } ", "
                (when::fmt_time(event.start_time)) "–" (when::fmt_time(event.end_time))
                " " span.muted { "(" (event.time_zone) ")" }
            }
            @if let Some(venue) = &event.venue { p { (venue_text(venue)) } }
            @if let Some(description) = &event.description {
                @for line in description.as_str().lines() {
                    @if !line.trim().is_empty() { p { (line) } }
                }
            }
        }
        @if !cancelled {
            @if !grid.is_empty() {
                h2 { "Programme" }
                (grid::timetable_grid(&grid))
            }
            h2 #register { "Register" }
            (registration_part(event, form, typed, problem))
        }
    }
}

fn venue_text(venue: &Venue) -> String {
    format!("Venue: {venue}")
}

fn registration_part(
    event: &PublicEvent,
    form: &FormFields<'_>,
    typed: &Typed,
    problem: Option<&FormProblem>,
) -> Markup {
    match event.registration {
        RegistrationState::Open {
            places_left,
            closes_at,
        } => html! {
            @if let Some(n) = places_left {
                p.muted { (places_phrase(n)) }
            }
            @if let Some(closes) = closes_at {
                p.muted { "Registration closes " (when::fmt_datetime(closes)) "." }
            }
            @if let Some(problem) = problem { (problem.render("register-problem")) }
            form.card method="post" action={ (event.slug.path()) "/register" } {
                (form.token.field())
                input type="hidden" name=(STAMP_FIELD) value=(form.stamp);
                div.hp aria-hidden="true" {
                    label for="reg-website" { "Leave this empty" }
                    input #reg-website type="text" name=(HONEYPOT_FIELD) tabindex="-1"
                        autocomplete="off" value="";
                }
                label for="reg-name" { "Your name" }
                input #reg-name type="text" name="name" required
                    maxlength=(PersonName::CHARS_MAX) autocomplete="name" value=(typed.name);
                label for="reg-email" { "E-mail address" }
                input #reg-email type="email" name="email" required
                    maxlength=(EMAIL_CHARS_MAX) autocomplete="email" value=(typed.email);
                label for="reg-message" { "Anything the organisers should know? (optional)" }
                textarea #reg-message name="message" rows="3" maxlength=(MESSAGE_CHARS_MAX) {
                    (typed.message)
                }
                button type="submit" { "Register" }
            }
        },
        RegistrationState::Closed => closed("Registration is closed.", problem),
        RegistrationState::ClosedAt { closes_at } => closed(
            &format!("Registration closed {}.", when::fmt_datetime(closes_at)),
            problem,
        ),
        RegistrationState::Full => closed("This event is full: every place is taken.", problem),
        RegistrationState::Cancelled => closed("This event has been cancelled.", problem),
    }
}

fn closed(text: &str, problem: Option<&FormProblem>) -> Markup {
    html! {
        @if let Some(problem) = problem { (problem.render("register-problem")) }
        p.card { (text) }
    }
}

fn places_phrase(n: u32) -> String {
    if n == 1 {
        "1 place left.".to_owned()
    } else {
        format!("{n} places left.")
    }
}
