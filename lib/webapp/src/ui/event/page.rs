//! Loading everything the event page shows, and drawing it: a header with the status and the
//! public link, then one section per part, each with its forms.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use steward_events::events::EventStatus;
use steward_events::ids::EventId;
use steward_harness::Ctx;

use super::view::{EventData, View};
use super::{Done, Problem, attendees as attendees_ui, details, program as program_ui};
use super::{rooms as rooms_ui, sessions as sessions_ui};
use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::UiError;

/// The page, with a notice after a successful form, or a form's problem (then 422).
pub async fn render(
    state: &WebState,
    signed: &SignedIn,
    ctx: &Ctx,
    id: &EventId,
    done: Option<Done>,
    problem: Option<&Problem>,
) -> Result<Response, UiError> {
    let data = EventData::load(ctx, id).await?;
    let view = View {
        data: &data,
        signed,
        problem,
        state,
    };
    let status = if problem.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let e = &data.event;
    let body = html! {
        p { a href=(crate::paths::APP_HOME) { "← All events" } }
        h1 { (e.name) " " (status_badge(e.status)) }
        @if let Some(done) = done { p.notice role="status" { (done.text()) } }
        @if let Some(p) = problem {
            p.error role="alert" { "Not saved — see below: " (p.message) }
        }
        nav.sections aria-label="Sections of this event" {
            a href="#details" { "Details" } " · "
            a href="#registration" { "Registration" } " · "
            a href="#rooms" { "Rooms" } " · "
            a href="#sessions" { "Sessions" } " · "
            a href="#program" { "Programme" } " · "
            a href="#timetable" { "Timetable" } " · "
            a href="#attendees" { "Attendees" }
        }
        (details::section(&view))
        (details::status_section(&view))
        (details::registration_section(&view))
        (rooms_ui::section(&view))
        (sessions_ui::section(&view))
        (program_ui::section(&view))
        (program_ui::timetable_section(&view))
        (attendees_ui::section(&view))
    };
    let page = layout::app_page(e.name.as_str(), "/app", &signed.session, body);
    Ok((status, page).into_response())
}

/// The status as a badge (class `badge` plus the status).
pub fn status_badge(status: EventStatus) -> Markup {
    html! { span class={ "badge " (status.as_str()) } { (status.as_str()) } }
}
