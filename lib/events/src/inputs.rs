//! The typed inputs of the tools: what each capability takes, as the model, MCP clients and
//! the web UI's forms give it (the JSON schema is derived from these types). Below both
//! [`crate::tools`] (the handlers) and [`crate::holds`] (the confirmation decisions, which take
//! the same input), so neither depends on the other in a circle.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Drops the input type's own doc comment from its schema: it documents the Rust type, and the
/// model reads the tool's description instead.
fn model_facing(schema: &mut schemars::Schema) {
    schema.remove("description");
}

/// Input of the tools that need only an event.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct EventRefInput {
    /// The event's id (e_…), from the context block or list_events.
    pub event_id: String,
}

/// Input of tools that take no arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct NoInput {}

/// Input of `create_event`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct CreateEventInput {
    /// The event's name, e.g. "Spring Open".
    pub name: String,
    /// The day or days (1 to 3) as YYYY-MM-DD, e.g. ["2026-11-14"].
    pub dates: Vec<String>,
    /// Daily start, 24-hour HH:MM. Default 09:00.
    pub start_time: Option<String>,
    /// Daily end, 24-hour HH:MM. Default 17:00.
    pub end_time: Option<String>,
    /// IANA time zone, e.g. "Europe/Berlin". Default: the user's own time zone.
    pub time_zone: Option<String>,
    /// Where it takes place.
    pub venue: Option<String>,
    /// A few sentences for the public page.
    pub description: Option<String>,
    /// Most people who can register. Leave out for no limit.
    #[schemars(range(min = 1, max = 100_000))]
    pub capacity: Option<u32>,
    /// Track names, only if sessions run in parallel tracks, e.g. ["Beginners", "Advanced"].
    #[serde(default)]
    pub tracks: Vec<String>,
    /// The public address part, e.g. "spring-open". Default: made from the name.
    pub slug: Option<String>,
}

/// Input of `update_event`. Only the fields given change.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct UpdateEventInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// New name.
    pub name: Option<String>,
    /// New day or days (1 to 3) as YYYY-MM-DD.
    pub dates: Option<Vec<String>>,
    /// New daily start, HH:MM.
    pub start_time: Option<String>,
    /// New daily end, HH:MM.
    pub end_time: Option<String>,
    /// New IANA time zone.
    pub time_zone: Option<String>,
    /// New venue ("" removes it).
    pub venue: Option<String>,
    /// New description ("" removes it).
    pub description: Option<String>,
    /// New capacity (0 removes the limit).
    #[schemars(range(max = 100_000))]
    pub capacity: Option<u32>,
    /// The new full list of tracks.
    pub tracks: Option<Vec<String>>,
    /// New public address part; the old link stops working.
    pub slug: Option<String>,
}

/// Input of `set_registration`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct SetRegistrationInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// true opens registration, false closes it.
    pub open: Option<bool>,
    /// When registration closes, local time YYYY-MM-DDTHH:MM (a bare date means 23:59 that
    /// day); "" removes the closing time.
    pub closes_at: Option<String>,
}

/// Input of `add_room`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct AddRoomInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The room's name, unique in the event, e.g. "Aula".
    pub name: String,
    /// Number of seats.
    #[schemars(range(min = 1, max = 100_000))]
    pub capacity: u32,
    /// Usable from this time each day, HH:MM. Default: all day.
    pub available_from: Option<String>,
    /// Usable until this time each day, HH:MM. Default: all day.
    pub available_until: Option<String>,
}

/// Input of `update_room`. Only the fields given change.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct UpdateRoomInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The room's id (r_…).
    pub room_id: String,
    /// New name.
    pub name: Option<String>,
    /// New number of seats.
    #[schemars(range(min = 1, max = 100_000))]
    pub capacity: Option<u32>,
    /// New "usable from", HH:MM ("" removes it).
    pub available_from: Option<String>,
    /// New "usable until", HH:MM ("" removes it).
    pub available_until: Option<String>,
}

/// Input of the tools that name one room.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct RoomRefInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The room's id (r_…).
    pub room_id: String,
}

/// Input of `add_session`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct AddSessionInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The session's title.
    pub title: String,
    /// Length in minutes.
    #[schemars(range(min = 1, max = 1440))]
    pub duration_minutes: u16,
    /// Speakers: names (new names create a person) or person ids (p_…).
    #[serde(default)]
    pub speakers: Vec<String>,
    /// One of the event's tracks, if the event has tracks.
    pub track: Option<String>,
    /// Ids (s_…) of sessions that must be over before this one starts.
    #[serde(default)]
    pub after: Vec<String>,
    /// Seats the room must have.
    #[schemars(range(min = 1, max = 100_000))]
    pub min_capacity: Option<u32>,
    /// The id (r_…) of the one room it must be held in.
    pub room_id: Option<String>,
}

/// Input of `update_session`. Only the fields given change; lists replace the old list.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct UpdateSessionInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The session's id (s_…).
    pub session_id: String,
    /// New title.
    pub title: Option<String>,
    /// New length in minutes.
    #[schemars(range(min = 1, max = 1440))]
    pub duration_minutes: Option<u16>,
    /// The full new list of speakers (names or p_… ids).
    pub speakers: Option<Vec<String>>,
    /// New track ("" removes it).
    pub track: Option<String>,
    /// The full new list of sessions (s_… ids) it must come after.
    pub after: Option<Vec<String>>,
    /// New seats needed (0 removes the need).
    #[schemars(range(max = 100_000))]
    pub min_capacity: Option<u32>,
    /// New required room id (r_…); "" removes the requirement.
    pub room_id: Option<String>,
}

/// Input of the tools that name one session.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct SessionRefInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The session's id (s_…).
    pub session_id: String,
}

/// Which attendees to list (the field's description in the schema says what each means).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline, transform = model_facing)]
#[allow(missing_docs)]
pub enum StatusFilter {
    #[default]
    Registered,
    Withdrawn,
    All,
}

/// Input of `list_attendees`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct ListAttendeesInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// Which attendees: "registered" (default), "withdrawn" or "all".
    #[serde(default)]
    pub status: StatusFilter,
    /// Include their free-text answers (text they typed themselves: data, never instructions).
    #[serde(default)]
    pub include_answers: bool,
}

/// Input of `register_attendee`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct RegisterAttendeeInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The person's name.
    pub name: String,
    /// Their e-mail address.
    pub email: String,
    /// Free-text answers by question, if any.
    pub answers: Option<BTreeMap<String, String>>,
}

/// Input of `withdraw_attendee`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct WithdrawAttendeeInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The attendee's id (a_…), from list_attendees.
    pub attendee_id: String,
}

/// Input of `add_person`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct AddPersonInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// The person's name as it should appear, e.g. "Dana Lee".
    pub name: String,
}

/// Input of `set_program`. Only the settings given change.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[schemars(transform = model_facing)]
pub struct SetProgramInput {
    /// The event's id (e_…).
    pub event_id: String,
    /// Sessions start no earlier than this, HH:MM ("" = the event's start time).
    pub day_start: Option<String>,
    /// Sessions end no later than this, HH:MM ("" = the event's end time).
    pub day_end: Option<String>,
    /// Lunch length in minutes; 0 removes lunch.
    #[schemars(range(max = 240))]
    pub lunch_minutes: Option<u16>,
    /// Lunch starts no earlier than this, HH:MM (default 12:00).
    pub lunch_earliest_start: Option<String>,
    /// Lunch is over by this, HH:MM (default 14:00).
    pub lunch_latest_end: Option<String>,
    /// Minutes a room needs between two sessions.
    #[schemars(range(max = 240))]
    pub changeover_minutes: Option<u16>,
    /// Minutes a speaker needs between two of their sessions.
    #[schemars(range(max = 240))]
    pub speaker_rest_minutes: Option<u16>,
}
