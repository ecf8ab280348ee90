//! The domain's limits, each named with its unit and the reason for its value.

/// Most days one event spans. Steward plans conferences, fairs and meetups, which run one to
/// three days; a longer run is a series of events.
pub const EVENT_DAYS_MAX: usize = 3;

/// Most tracks an event has. A track is an audience following a series of sessions; more than
/// a handful are parallel conferences, better planned as separate events.
pub const TRACKS_MAX: usize = 8;

/// Most rooms in one event: enough for a large conference day, small enough that an event's
/// rooms are read in one query and listed in the context block.
pub const ROOMS_MAX: usize = 40;

/// Most sessions in one event. The timetable engine is benchmarked up to 200; a little more
/// leaves headroom without letting one event grow without bound.
pub const SESSIONS_MAX: usize = 300;

/// Most people (speakers) in one event.
pub const PEOPLE_MAX: usize = 300;

/// Most speakers on one session (a panel).
pub const SESSION_SPEAKERS_MAX: usize = 8;

/// Most sessions one session can be required to come after.
pub const SESSION_AFTER_MAX: usize = 20;

/// Most events of one user that listing reads. The context block shows fewer
/// ([`CONTEXT_EVENTS_MAX`]); this only bounds the work of a list.
pub const EVENTS_LISTED_MAX: usize = 200;

/// Most attendee records read for one event (registered and withdrawn together). A tool result
/// is capped at 20,000 characters anyway; this bounds the read.
pub const ATTENDEES_LISTED_MAX: usize = 5_000;

/// Largest capacity of an event or a room, in people. Anything bigger is a typo.
pub const CAPACITY_MAX: u32 = 100_000;

/// Longest session, in minutes (a full day).
pub const SESSION_MINUTES_MAX: u16 = 24 * 60;

/// Longest changeover, speaker rest or lunch, in minutes.
pub const BREAK_MINUTES_MAX: u16 = 4 * 60;

/// Most free-text answers on one registration.
pub const ANSWERS_MAX: usize = 10;

/// Longest question label of a free-text answer, in characters.
pub const ANSWER_QUESTION_CHARS_MAX: usize = 100;

/// Longest free-text answer, in characters: a paragraph, not a document.
pub const ANSWER_CHARS_MAX: usize = 2_000;

/// How long an event's former public address stays reserved to its organiser after the event
/// moves to another address or is deleted, in seconds: long enough for links already on
/// posters and in messages to keep working (they redirect) and not to be taken over by another
/// account; short enough that the name is not lost for ever.
pub const SLUG_RESERVED_SECS: i64 = 30 * 24 * 3600;

/// How many numbered variants (`spring-open-2`, `-3`, …) slug generation tries before giving
/// up and asking for a slug. Each try is one read.
pub const SLUG_SUFFIX_TRIES_MAX: u32 = 20;

/// How often a public registration is retried when another registration for the same event
/// committed first (they serialize on the event's registration counter).
pub const REGISTRATION_RETRIES_MAX: usize = 5;

/// Longest context block the domain writes per turn, in characters. It is sent with every
/// user message, so it must stay small: the list and the active event's details are cut to fit.
pub const CONTEXT_CHARS_MAX: usize = 6_000;

/// Most events listed in the context block (the newest first); the rest are reachable with
/// `list_events`.
pub const CONTEXT_EVENTS_MAX: usize = 15;

/// Most rooms of the active event listed in the context block.
pub const CONTEXT_ROOMS_MAX: usize = 20;

/// Most items (sessions, attendees, assignments) a list tool puts in its result; the summary
/// says how many there are in all.
pub const TOOL_LIST_ITEMS_MAX: usize = 200;
