//! Steward's domain: the records an organiser works with, the service functions over them,
//! the timetable engine and its checker, the tool set with the
//! confirmation each capability declares, and the per-turn context.
//!
//! Modules, each named after what it owns:
//! * [`ids`], [`text`], [`email`], [`slug`], [`when`]: checked values (parse, don't validate).
//! * [`keys`]: every key of the domain, all built from a [`steward_harness::Ctx`].
//! * [`planned`]: [`Planned`], a checked change ready to commit with or without a tool result.
//! * [`events`], [`rooms`], [`people`], [`sessions`], [`program`], [`attendees`],
//!   [`schedule`]: the records and the service functions over them (used by the tools and by
//!   the web UI alike); [`overview`]: one event at a glance; [`views`]: the compact JSON the
//!   model sees. Below them `rules` (cross-record invariants) and `session_record` (the
//!   session record and its reads), so the record modules never depend on one another in a
//!   circle.
//! * [`registration`]: the public page and public registration by slug (actor `Public`).
//! * [`inputs`]: the typed input of each tool (below [`tools`] and [`holds`], which both take
//!   it); [`tools`]: the tool set, [`tools::registry`], in one fixed order.
//! * [`holds`]: which calls of each capability wait for the person's confirmation.
//! * [`context`], [`prompt`]: what the chat runtime plugs into the harness; [`wiring`]:
//!   [`domain`], all of it as the harness's `Domain`.
//! * [`timetable`]: the pure timetable engine and its independent checker.
//! * [`limits`], [`config`]: named limits and the one setting (the public base URL).

pub mod attendees;
pub mod config;
pub mod context;
pub mod email;
pub mod events;
pub mod holds;
pub mod ids;
pub mod inputs;
pub mod keys;
pub mod limits;
pub mod overview;
pub mod people;
pub mod planned;
pub mod program;
pub mod prompt;
pub mod registration;
pub mod rooms;
mod rules;
pub mod schedule;
mod session_record;
pub mod sessions;
pub mod slug;
mod store;
pub mod text;
pub mod timetable;
mod timetable_record;
pub mod tools;
pub mod views;
pub mod when;
pub mod wiring;

pub use config::EventsConfig;
pub use context::EventsContext;
pub use planned::Planned;
pub use prompt::DOMAIN_PROMPT;
pub use tools::registry;
pub use wiring::{FIRST_REQUEST, PRODUCT, domain};
