//! The signed-in web UI, server-rendered with `maud` (every value escaped) and a little
//! vanilla JavaScript. Each page calls the same service functions as the tools, so anything
//! the chat can do, the UI can do.
//!
//! * [`assets`]: stylesheet and script; [`respond`]: errors as pages (the page shell is
//!   [`crate::layout`]).
//! * [`events`]: the events list and the create form; [`event`]: one event — details, rooms,
//!   sessions, attendees, the timetable — and its forms; [`grid`]: the timetable as a grid
//!   (shared with the public page).
//! * [`account`]: settings, activity with undo, phone linking, MCP tokens; [`chat`]: the chat page.

pub mod account;
mod assets;
pub mod chat;
pub mod event;
pub mod events;
pub mod grid;
pub mod respond;

use axum::Router;

use crate::state::WebState;

/// The signed-in home: the events list.
pub use crate::paths::APP_HOME;

/// One form of the signed-in UI that runs a capability of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormRoute {
    /// The route it posts to, as registered (`{id}` and the like are path parameters).
    pub path: &'static str,
    /// The capability it runs.
    pub capability: &'static str,
    /// Whether the form passes through the confirmation gate ([`event::confirm::run`]).
    /// Forms that skip it run capabilities declared never held (a create of a draft, the
    /// programme settings); a test checks that declaration against the registry, so a
    /// capability that becomes holdable fails it until its form is gated.
    pub gated: bool,
}

/// Every form of the signed-in UI that runs a capability, with that capability. A test walks
/// this list against the registry: every capability the registry declares holdable has a
/// gated form here (or is named there as having no form), and each gated form is shown held
/// on a published event, then runs exactly once on confirmation.
pub const FORMS: [FormRoute; 15] = [
    form("/app/events", "create_event", false),
    form("/app/events/{id}/edit", "update_event", true),
    form("/app/events/{id}/publish", "publish_event", true),
    form("/app/events/{id}/cancel", "cancel_event", true),
    form("/app/events/{id}/reopen", "reopen_event", true),
    form("/app/events/{id}/delete", "delete_event", true),
    form("/app/events/{id}/registration", "set_registration", true),
    form("/app/events/{id}/rooms", "add_room", true),
    form("/app/events/{id}/rooms/{room}/remove", "remove_room", true),
    form("/app/events/{id}/sessions", "add_session", true),
    form(
        "/app/events/{id}/sessions/{session}/remove",
        "remove_session",
        true,
    ),
    form("/app/events/{id}/program", "set_program", false),
    form("/app/events/{id}/timetable", "build_timetable", true),
    form(
        "/app/events/{id}/attendees/{attendee}/withdraw",
        "withdraw_attendee",
        true,
    ),
    form(account::activity::UNDO_PATH, "undo_last_action", true),
];

const fn form(path: &'static str, capability: &'static str, gated: bool) -> FormRoute {
    FormRoute {
        path,
        capability,
        gated,
    }
}

/// Every UI route.
pub fn routes() -> Router<WebState> {
    Router::new()
        .merge(assets::routes())
        .merge(events::routes())
        .merge(event::routes())
        .merge(account::routes())
        .merge(chat::routes())
}
