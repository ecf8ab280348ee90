//! The tool set: every capability of the domain as one [`ToolDef`], in one fixed order.
//!
//! Conventions every tool keeps, so the chat runtime and MCP clients can rely on them:
//! * A tool that creates a record puts the new record's id in `data.id` (and the event's id in
//!   `data.event_id` for records inside an event), so the runtime can make it the active
//!   record.
//! * Summaries are one or two sentences the model can relay; ids are in `data`; a public link
//!   is in `url` when a public base URL is configured.
//! * Write tools commit their changes together with their result, so a retried call returns
//!   the stored result and never acts twice.
//! * Ids that do not exist, or belong to someone else, are reported as not found.
//! * Every tool declares its confirmation: read-only, never held, or held when its decision in
//!   [`crate::holds`] describes the call. Creates also make the new record the conversation's
//!   active record (`focuses`).

mod attendees;
mod events;
mod people;
mod rooms;
mod schedule;
mod sessions;
mod undo;

use std::future::Future;
use std::sync::Arc;

use jiff::civil::Time;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use steward_harness::{Ctx, Registry, ServiceError, ToolDef, ToolResult, UndecidedTool};

use crate::config::EventsConfig;
use crate::when;
pub(crate) use crate::when::{clearable, clearable_datetime, clearable_time};

pub use crate::inputs::{
    AddPersonInput, AddRoomInput, AddSessionInput, CreateEventInput, EventRefInput,
    ListAttendeesInput, NoInput, RegisterAttendeeInput, RoomRefInput, SessionRefInput,
    SetProgramInput, SetRegistrationInput, StatusFilter, UpdateEventInput, UpdateRoomInput,
    UpdateSessionInput, WithdrawAttendeeInput,
};

/// Every tool of the domain, in the order the model and MCP clients see them. `config` gives
/// the base URL for public links.
pub fn registry(config: &EventsConfig) -> Registry {
    let config = Arc::new(config.clone());
    let tools = [
        events::list_events(),
        events::get_event(),
        events::create_event(&config),
        events::update_event(),
        events::publish_event(&config),
        events::cancel_event(),
        events::reopen_event(),
        events::delete_event(),
        rooms::add_room(),
        rooms::update_room(),
        rooms::remove_room(),
        people::add_person(),
        sessions::add_session(),
        sessions::update_session(),
        sessions::remove_session(),
        sessions::list_sessions(),
        schedule::set_program(),
        schedule::build_timetable(),
        schedule::get_timetable(),
        events::set_registration(),
        attendees::list_attendees(),
        attendees::register_attendee(),
        attendees::withdraw_attendee(),
        events::get_public_link(&config),
        undo::undo_last_action(),
    ];
    let mut registry = Registry::new();
    for tool in tools {
        // Tool definitions are fixed at compile time; a bad one is a bug the tests catch.
        registry
            .add(tool)
            .unwrap_or_else(|e| panic!("the events tool set is inconsistent: {e}"));
    }
    registry
}

/// Defines a tool, whose confirmation is declared next ([`UndecidedTool`]); a definition the
/// harness refuses is a bug in this module. (Racing copies of one call are answered with the
/// winner's stored result by the harness registry.)
fn def<I, F, Fut>(name: &str, description: &str, handler: F) -> UndecidedTool<I>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Ctx, I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolResult, ServiceError>> + Send + 'static,
{
    ToolDef::new::<I, _, _>(name, description, handler)
        .unwrap_or_else(|e| panic!("tool {name} is ill-defined: {e}"))
}

/// An optional time argument.
fn opt_time(field: &str, value: Option<&str>) -> Result<Option<Time>, ServiceError> {
    value.map(|t| when::parse_time(field, t)).transpose()
}

/// Link fields for a public path: the full URL when configured.
fn with_link(result: ToolResult, config: &EventsConfig, path: &str) -> ToolResult {
    match config.url(path) {
        Some(url) => result.with_url(url),
        None => result,
    }
}

/// How a public page is named in a summary: the URL when configured, else the path.
fn page_address(config: &EventsConfig, path: &str) -> String {
    config.url(path).unwrap_or_else(|| path.to_owned())
}
