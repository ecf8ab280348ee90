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

/// Every UI route.
pub fn routes() -> Router<WebState> {
    Router::new()
        .merge(assets::routes())
        .merge(events::routes())
        .merge(event::routes())
        .merge(account::routes())
        .merge(chat::routes())
}
