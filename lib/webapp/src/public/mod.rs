//! The public event pages, reached without signing in: `/e/{slug}` shows a published (or
//! cancelled) event with its timetable, and `/e/{slug}/register` takes registrations.
//!
//! Everything shown here is what [`steward_events::registration::PublicEvent`] carries —
//! never attendee names or anything else private — and every value is escaped: the page and
//! the organiser's pages show text typed by strangers.
//!
//! * [`page`]: the event page and its registration form; [`register`]: the form's handler
//!   (double-submit token, honeypot and fill time, per-address and per-event limits, then the
//!   domain's checks); `steward_edge::client_address`: who is asking; [`crate::form_stamp`]:
//!   the signed time the form was shown; [`throttle`]: limits counted in the table.

pub mod page;
pub mod register;
pub mod throttle;

use axum::Router;
use axum::routing::{get, post};

use crate::state::WebState;

/// The public page of an event (`{slug}` is the event's public address part).
pub const EVENT_PATH: &str = "/e/{slug}";

/// The public registration form's target.
pub const REGISTER_PATH: &str = "/e/{slug}/register";

/// The public event pages.
pub fn routes() -> Router<WebState> {
    Router::new()
        .route(EVENT_PATH, get(page::show))
        .route(REGISTER_PATH, post(register::submit))
}
