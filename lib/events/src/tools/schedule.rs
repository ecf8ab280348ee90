//! Program and timetable tools: set_program, build_timetable, get_timetable.

use jiff::civil::Time;
use serde_json::{Value, json};
use steward_harness::{Ctx, ServiceError, ToolDef, ToolResult};

use super::{clearable_time, def, opt_time};
use crate::holds;
use crate::ids::EventId;
use crate::inputs::{EventRefInput, SetProgramInput};
use crate::limits::TOOL_LIST_ITEMS_MAX;
use crate::program::{self, LunchRule, ProgramChanges};
use crate::schedule;
use crate::views;
use crate::when;

/// Lunch window used when lunch is first set without one.
const DEFAULT_LUNCH_WINDOW: (Time, Time) =
    (Time::constant(12, 0, 0, 0), Time::constant(14, 0, 0, 0));

impl SetProgramInput {
    /// The checked changes, given the current settings (lunch fields merge with the current
    /// lunch).
    fn changes(&self, current: Option<LunchRule>) -> Result<ProgramChanges, ServiceError> {
        let earliest = opt_time("lunch_earliest_start", self.lunch_earliest_start.as_deref())?;
        let latest = opt_time("lunch_latest_end", self.lunch_latest_end.as_deref())?;
        let lunch = match (self.lunch_minutes, earliest, latest, current) {
            (Some(0), _, _, _) => Some(None),
            (None, None, None, _) => None,
            (minutes, earliest, latest, Some(cur)) => Some(Some(LunchRule {
                earliest_start: earliest.unwrap_or(cur.earliest_start),
                latest_end: latest.unwrap_or(cur.latest_end),
                length_minutes: minutes.unwrap_or(cur.length_minutes),
            })),
            (Some(minutes), earliest, latest, None) => Some(Some(LunchRule {
                earliest_start: earliest.unwrap_or(DEFAULT_LUNCH_WINDOW.0),
                latest_end: latest.unwrap_or(DEFAULT_LUNCH_WINDOW.1),
                length_minutes: minutes,
            })),
            (None, _, _, None) => {
                return Err(ServiceError::invalid(
                    "lunch_minutes",
                    "the event has no lunch yet; give its length in minutes too",
                ));
            }
        };
        Ok(ProgramChanges {
            day_start: clearable_time("day_start", self.day_start.as_deref())?,
            day_end: clearable_time("day_end", self.day_end.as_deref())?,
            lunch,
            changeover_minutes: self.changeover_minutes,
            speaker_rest_minutes: self.speaker_rest_minutes,
        })
    }
}

pub(super) fn set_program() -> ToolDef {
    def::<SetProgramInput, _, _>(
        "set_program",
        "Set the rules the timetable follows for an event: the hours sessions may run each day, the lunch break (length and window), the changeover minutes a room needs between sessions, and the rest a speaker needs between their sessions. Give only what changes. Returns all settings in words.",
        |ctx: Ctx, input: SetProgramInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let current = program::get_program(&ctx, &event).await?;
            let changes = input.changes(current.lunch)?;
            let ev = crate::events::get_event(&ctx, &event).await?;
            let planned = program::set_program(&ctx, &event, changes).await?;
            planned
                .commit_with(|u| {
                    let p = &u.record;
                    let (start, end) = p.day_window(&ev);
                    let lunch = p.lunch.map_or_else(|| "no lunch".to_owned(), |l| format!("lunch {}", l.phrase()));
                    let summary = format!(
                        "{} of {}: sessions {}–{}, {lunch}, {} min changeover, {} min speaker rest.",
                        if u.is_unchanged() { "Nothing changed in the program" } else { "Program" },
                        ev.quoted(),
                        when::fmt_time(start),
                        when::fmt_time(end),
                        p.changeover_minutes,
                        p.speaker_rest_minutes
                    );
                    ToolResult::new(summary).with_data(views::program(&ev, p))
                })
                .await
        },
    )
    .never_held()
    .idempotent()
}

pub(super) fn build_timetable() -> ToolDef {
    def::<EventRefInput, _, _>(
        "build_timetable",
        "Build (or rebuild) the event's timetable from its rooms, sessions and program settings. Needs at least one room and one session. A rebuild keeps every session that can stay where it was. On a published event it is held until the user confirms. Report each day's finish time and any warnings in one or two lines; don't paste the timetable. If nothing fits, the error says why and what to change.",
        |ctx: Ctx, input: EventRefInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let planned = schedule::build_timetable(&ctx, &event).await?;
            planned
                .commit_with(|b| {
                    let days: Vec<Value> = b
                        .timetable
                        .days
                        .iter()
                        .map(|d| {
                            json!({
                                "date": d.date,
                                "finish": d.finish.map(|f| f.to_string()),
                                "lunch": d.lunch.map(|l| format!("{}–{}", l.start, l.end)),
                            })
                        })
                        .collect();
                    let warnings: Vec<String> =
                        b.timetable.warnings.iter().map(|w| b.names.warning(w)).collect();
                    let moved: Vec<Value> = b
                        .timetable
                        .moved
                        .iter()
                        .map(|m| {
                            json!({
                                "session": b.names.session(m.session.as_str()),
                                "reason": b.names.move_reason(&m.reason),
                            })
                        })
                        .collect();
                    ToolResult::new(b.summary()).with_data(json!({
                        "event_id": b.event.id,
                        "sessions": b.timetable.assignments.len(),
                        "days": days,
                        "warnings": warnings,
                        "moved": moved,
                    }))
                })
                .await
        },
    )
    .held_when(holds::rebuild)
    .idempotent()
}

pub(super) fn get_timetable() -> ToolDef {
    def::<EventRefInput, _, _>(
        "get_timetable",
        "Read the event's built timetable: every session's day, start, end and room, and whether it is still up to date with the sessions and rooms. Answer the user's question from it; don't paste the whole grid.",
        |ctx: Ctx, input: EventRefInput| async move {
            let event = EventId::parse(&input.event_id)?;
            let Some(view) = schedule::get_timetable(&ctx, &event).await? else {
                let e = crate::events::get_event(&ctx, &event).await?;
                return Ok(ToolResult::new(format!(
                    "{} has no timetable yet; build one with build_timetable.",
                    e.quoted()
                ))
                .with_data(json!({"event_id": e.id, "built": false})));
            };
            let finishes: Vec<String> = view
                .stored
                .timetable
                .days
                .iter()
                .filter_map(|d| d.finish.map(|f| format!("{} ends {f}", when::fmt_day(d.date))))
                .collect();
            let summary = format!(
                "Timetable of {} ({}): {} session(s); {}.",
                view.event.quoted(),
                if view.up_to_date { "up to date" } else { "out of date: sessions, rooms or settings changed since; rebuild it" },
                view.slots.len(),
                crate::planned::join_words(&finishes)
            );
            let slots: Vec<&schedule::Slot> = view.slots.iter().take(TOOL_LIST_ITEMS_MAX).collect();
            Ok(ToolResult::new(summary).with_data(json!({
                "event_id": view.event.id,
                "built": true,
                "up_to_date": view.up_to_date,
                "slots": slots,
                "warnings": view.stored.timetable.warnings.iter().map(|w| view.names.warning(w)).collect::<Vec<_>>(),
            })))
        },
    )
    .read_only()
}
