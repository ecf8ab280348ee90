//! The programme settings the timetable follows (session hours, lunch, changeover, speaker
//! rest), the "Build timetable" button, and the timetable itself as a grid.

use axum::response::Response;
use jiff::civil::Time;
use maud::{Markup, html};
use steward_events::program::{self, LunchRule, ProgramChanges};
use steward_events::schedule;
use steward_events::tools::EventRefInput;
use steward_events::when;
use steward_harness::ServiceError;

use super::confirm::Action;
use super::fields::{self, Fields};
use super::form::EventForm;
use super::view::View;
use super::{Done, Outcome, event_path};
use crate::ui::grid::{self, Grid};

/// The settings form's name.
const PROGRAM: &str = "program";
/// The build button's name.
const TIMETABLE: &str = "timetable";

/// The lunch window offered when lunch is first set (the chat tool's default too).
const DEFAULT_LUNCH_WINDOW: (Time, Time) =
    (Time::constant(12, 0, 0, 0), Time::constant(14, 0, 0, 0));

fn opt_time(t: Option<Time>) -> String {
    t.map(when::fmt_time).unwrap_or_default()
}

/// The programme settings section.
pub fn section(v: &View<'_>) -> Markup {
    let p = &v.data.program;
    let (start, end) = p.day_window(&v.data.event);
    let lunch = p.lunch;
    html! {
        section #program {
            h2 { "Programme settings" }
            div.card {
                p {
                    "Sessions " (when::fmt_time(start)) "–" (when::fmt_time(end)) "; "
                    @match lunch { Some(l) => { "lunch " (l.phrase()) }, None => "no lunch" }
                    "; " (p.changeover_minutes) " min changeover; " (p.speaker_rest_minutes) " min speaker rest."
                }
                @if v.changeable() {
                    (v.problem_of(PROGRAM))
                    form.stack method="post" action=(v.action("program")) {
                        (v.csrf())
                        div.grid-2 {
                            div { label for="pr-start" { "Sessions from (empty: the event's start)" }
                                input #pr-start type="time" name="day_start" value=(v.value(PROGRAM, "day_start", opt_time(p.day_start))); }
                            div { label for="pr-end" { "Sessions until (empty: the event's end)" }
                                input #pr-end type="time" name="day_end" value=(v.value(PROGRAM, "day_end", opt_time(p.day_end))); }
                            div { label for="pr-lunch" { "Lunch minutes (empty or 0: no lunch)" }
                                input #pr-lunch type="text" inputmode="numeric" name="lunch_minutes"
                                    value=(v.value(PROGRAM, "lunch_minutes", lunch.map(|l| l.length_minutes.to_string()).unwrap_or_default())); }
                            div { label for="pr-lfrom" { "Lunch not before" }
                                input #pr-lfrom type="time" name="lunch_earliest_start"
                                    value=(v.value(PROGRAM, "lunch_earliest_start", when::fmt_time(lunch.map_or(DEFAULT_LUNCH_WINDOW.0, |l| l.earliest_start)))); }
                            div { label for="pr-luntil" { "Lunch over by" }
                                input #pr-luntil type="time" name="lunch_latest_end"
                                    value=(v.value(PROGRAM, "lunch_latest_end", when::fmt_time(lunch.map_or(DEFAULT_LUNCH_WINDOW.1, |l| l.latest_end)))); }
                            div { label for="pr-change" { "Changeover minutes between sessions in a room" }
                                input #pr-change type="text" inputmode="numeric" name="changeover_minutes"
                                    value=(v.value(PROGRAM, "changeover_minutes", p.changeover_minutes.to_string())); }
                            div { label for="pr-rest" { "Rest minutes between a speaker's sessions" }
                                input #pr-rest type="text" inputmode="numeric" name="speaker_rest_minutes"
                                    value=(v.value(PROGRAM, "speaker_rest_minutes", p.speaker_rest_minutes.to_string())); }
                        }
                        button type="submit" { "Save programme settings" }
                    }
                }
            }
        }
    }
}

/// The timetable section: the build button, the result in words, and the grid.
pub fn timetable_section(v: &View<'_>) -> Markup {
    let d = v.data;
    html! {
        section #timetable {
            h2 { "Timetable" }
            (v.problem_of(TIMETABLE))
            @if v.changeable() {
                form.inline method="post" action=(v.action("timetable")) {
                    (v.csrf())
                    button type="submit" { "Build timetable" }
                }
            }
            @match &d.timetable {
                None => p.muted { "Not built yet. Add rooms and sessions, then build it." },
                Some(view) => {
                    @let finishes: Vec<String> = view.stored.timetable.days.iter().map(|day| match day.finish {
                        Some(f) => format!("{} finishes at {f}", when::fmt_day(day.date)),
                        None => format!("{} has no sessions", when::fmt_day(day.date)),
                    }).collect();
                    @let warnings: Vec<String> = view.stored.timetable.warnings.iter().map(|w| view.names.warning(w)).collect();
                    div.card {
                        p { (steward_events::planned::join_words(&finishes)) "." }
                        @if warnings.is_empty() {
                            p.muted { "No warnings." }
                        } @else {
                            p { strong { "Warnings:" } }
                            ul { @for w in &warnings { li { (w) } } }
                        }
                        @if !view.up_to_date {
                            p.error { "Out of date: rooms, sessions or settings changed since it was built. Build it again." }
                        }
                    }
                    @let g = Grid::from_view(view, &d.rooms, &d.sessions, &d.people);
                    (grid::timetable_grid(&g))
                }
            }
        }
    }
}

fn changes(f: &Fields) -> Result<ProgramChanges, ServiceError> {
    let lunch_minutes = fields::number::<u16>(
        "lunch_minutes",
        "a number of minutes",
        f.get("lunch_minutes"),
        "45",
    )?
    .unwrap_or(0);
    let lunch = if lunch_minutes == 0 {
        None
    } else {
        Some(LunchRule {
            earliest_start: fields::time("lunch_earliest_start", f.get("lunch_earliest_start"))?
                .unwrap_or(DEFAULT_LUNCH_WINDOW.0),
            latest_end: fields::time("lunch_latest_end", f.get("lunch_latest_end"))?
                .unwrap_or(DEFAULT_LUNCH_WINDOW.1),
            length_minutes: lunch_minutes,
        })
    };
    let minutes = |field: &str| {
        fields::number::<u16>(field, "a number of minutes", f.get(field), "10")
            .map(Option::unwrap_or_default)
    };
    Ok(ProgramChanges {
        day_start: Some(fields::time("day_start", f.get("day_start"))?),
        day_end: Some(fields::time("day_end", f.get("day_end"))?),
        lunch: Some(lunch),
        changeover_minutes: Some(minutes("changeover_minutes")?),
        speaker_rest_minutes: Some(minutes("speaker_rest_minutes")?),
    })
}

/// `POST /app/events/{id}/program`.
pub async fn set(form: EventForm) -> Response {
    let EventForm {
        ctx, id, fields: f, ..
    } = &form;
    let result = async {
        let u = program::set_program(ctx, id, changes(f)?)
            .await?
            .commit()
            .await?;
        Ok(Done::Program.unless_unchanged(u.is_unchanged()).into())
    }
    .await;
    form.finish(PROGRAM, result).await
}

/// `POST /app/events/{id}/timetable`: builds it; when nothing fits, the page shows why.
pub async fn build(form: EventForm) -> Response {
    let id = &form.id;
    let result = async {
        let action = Action {
            tool: "build_timetable",
            input: EventRefInput {
                event_id: id.to_string(),
            },
            verb: "rebuild it",
            action: format!("{}/timetable", event_path(id)),
            back: event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                schedule::build_timetable(&ctx, id).await?.commit().await?;
                Ok(Done::Timetable)
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(TIMETABLE, result).await
}
