//! The timetable as a grid: one table per day, a column per room, a row per start time, each
//! session in its room's column spanning the rows it runs through. Fed by the organiser's
//! timetable ([`Grid::from_view`]) and by the public page ([`Grid::from_public`]) through one
//! small view type, so both pages show the same grid.
//!
//! For screen readers each day is a real table named by its heading: the rooms are column
//! headers and the start times row headers, so a session's cell reads as "Hall, 10:00,
//! Opening keynote".

use std::collections::BTreeSet;

use jiff::civil::{Date, Time};
use maud::{Markup, html};
use steward_events::people::{self, Person};
use steward_events::registration::PublicSlot;
use steward_events::rooms::Room;
use steward_events::schedule::TimetableView;
use steward_events::sessions::Session;
use steward_events::when;

/// One session placed in the grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridSlot {
    /// Day.
    pub date: Date,
    /// Start (local).
    pub start: Time,
    /// End (local).
    pub end: Time,
    /// The room's name (the column).
    pub room: String,
    /// The session's title.
    pub title: String,
    /// Speaker names.
    pub speakers: Vec<String>,
    /// Track name, if any.
    pub track: Option<String>,
}

/// A timetable ready to draw: the room columns in order and the placed sessions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grid {
    rooms: Vec<String>,
    slots: Vec<GridSlot>,
}

impl Grid {
    /// A grid with columns for `rooms` (in this order) plus any room a slot names that the
    /// list lacks, in order of first use.
    pub fn new(rooms: Vec<String>, slots: Vec<GridSlot>) -> Self {
        let mut rooms = rooms;
        for s in &slots {
            if !rooms.contains(&s.room) {
                rooms.push(s.room.clone());
            }
        }
        Self { rooms, slots }
    }

    /// The public page's timetable (rooms in order of first use).
    pub fn from_public(slots: &[PublicSlot]) -> Self {
        let slots = slots
            .iter()
            .map(|s| GridSlot {
                date: s.date,
                start: s.start,
                end: s.end,
                room: s.room.clone(),
                title: s.title.clone(),
                speakers: s.speakers.clone(),
                track: s.track.clone(),
            })
            .collect();
        Self::new(Vec::new(), slots)
    }

    /// The organiser's stored timetable, with speakers and tracks from the current records
    /// (rooms in their creation order).
    pub fn from_view(
        view: &TimetableView,
        rooms: &[Room],
        sessions: &[Session],
        people: &[Person],
    ) -> Self {
        let slots = view
            .slots
            .iter()
            .map(|s| {
                let session = sessions.iter().find(|x| x.id.as_str() == s.session_id);
                GridSlot {
                    date: s.date,
                    start: civil(&s.start),
                    end: civil(&s.end),
                    room: s.room.clone(),
                    title: s.title.clone(),
                    speakers: session
                        .map(|x| people::names_of(people, &x.speakers))
                        .unwrap_or_default(),
                    track: session.and_then(|x| x.track.as_ref().map(ToString::to_string)),
                }
            })
            .collect();
        Self::new(rooms.iter().map(|r| r.name.to_string()).collect(), slots)
    }

    /// Whether no session is placed.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// `"HH:MM"` from the engine as a civil time; `"24:00"` (a day's very end) as the last
/// representable time.
fn civil(text: &str) -> Time {
    when::parse_time("time", text).unwrap_or(Time::MAX)
}

/// The grid as HTML: for each day a heading and a table (class `timetable`).
pub fn timetable_grid(grid: &Grid) -> Markup {
    let days: BTreeSet<Date> = grid.slots.iter().map(|s| s.date).collect();
    html! {
        @for day in days {
            (day_table(grid, day))
        }
    }
}

/// One cell of a room column in a row.
enum Cell<'a> {
    /// Nothing starts here.
    Empty,
    /// Sessions starting here, spanning this many rows.
    Sessions(usize, Vec<&'a GridSlot>),
    /// Covered by a session from an earlier row (no `td`).
    Covered,
}

/// The rows of one day: each start time with a cell per room column.
fn layout(grid: &Grid, day: Date) -> Vec<(Time, Vec<Cell<'_>>)> {
    let slots: Vec<&GridSlot> = grid.slots.iter().filter(|s| s.date == day).collect();
    let starts: Vec<Time> = slots
        .iter()
        .map(|s| s.start)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // Per room column: the time until which an earlier cell (its rowspan) covers it.
    let mut busy_until: Vec<Option<Time>> = vec![None; grid.rooms.len()];
    let mut rows = Vec::with_capacity(starts.len());
    for start in &starts {
        let mut cells = Vec::with_capacity(grid.rooms.len());
        for (col, room) in grid.rooms.iter().enumerate() {
            if busy_until[col].is_some_and(|until| *start < until) {
                cells.push(Cell::Covered);
                continue;
            }
            let here: Vec<&GridSlot> = slots
                .iter()
                .filter(|s| s.start == *start && &s.room == room)
                .copied()
                .collect();
            let Some(end) = here.iter().map(|s| s.end).max() else {
                cells.push(Cell::Empty);
                continue;
            };
            let span = starts
                .iter()
                .filter(|t| **t >= *start && **t < end)
                .count()
                .max(1);
            busy_until[col] = Some(end);
            cells.push(Cell::Sessions(span, here));
        }
        rows.push((*start, cells));
    }
    rows
}

fn day_table(grid: &Grid, day: Date) -> Markup {
    let rows = layout(grid, day);
    let heading = format!("timetable-{day}");
    html! {
        h3 #(heading) { (when::fmt_day(day)) }
        div.table-wrap {
            table.timetable aria-labelledby=(heading) {
                thead {
                    tr {
                        th.time scope="col" { "Time" }
                        @for room in &grid.rooms { th scope="col" { (room) } }
                    }
                }
                tbody {
                    @for (start, cells) in &rows {
                        tr {
                            th.time scope="row" { (when::fmt_time(*start)) }
                            @for cell in cells {
                                @match cell {
                                    Cell::Empty => { td {} }
                                    Cell::Covered => {}
                                    Cell::Sessions(span, here) => {
                                        td.slot rowspan=(span) {
                                            @for s in here { (slot_cell(s)) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn slot_cell(s: &GridSlot) -> Markup {
    html! {
        div.session {
            strong { (s.title) }
            div.muted { (when::fmt_time(s.start)) "–" (when::fmt_time(s.end)) }
            @if !s.speakers.is_empty() {
                div.speakers { (s.speakers.join(", ")) }
            }
            @if let Some(track) = &s.track {
                span.badge { (track) }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn slot(room: &str, start: (i8, i8), end: (i8, i8), title: &str) -> GridSlot {
        GridSlot {
            date: Date::constant(2026, 6, 15),
            start: Time::constant(start.0, start.1, 0, 0),
            end: Time::constant(end.0, end.1, 0, 0),
            room: room.into(),
            title: title.into(),
            speakers: vec!["Ada <b>".into()],
            track: None,
        }
    }

    #[test]
    fn one_column_per_room_and_long_sessions_span_rows() {
        let grid = Grid::new(
            vec!["Aula".into(), "Lab".into()],
            vec![
                slot("Aula", (9, 0), (11, 0), "Long talk"),
                slot("Lab", (9, 0), (10, 0), "Short one"),
                slot("Lab", (10, 0), (11, 0), "Second"),
            ],
        );
        let html = timetable_grid(&grid).into_string();
        assert!(html.contains("<th scope=\"col\">Aula</th><th scope=\"col\">Lab</th>"));
        // Start times head the rows; the day's heading names the table.
        assert!(
            html.contains("<th class=\"time\" scope=\"row\">09:00</th>"),
            "{html}"
        );
        assert!(html.contains("<h3 id=\"timetable-2026-06-15\">"), "{html}");
        assert!(
            html.contains("aria-labelledby=\"timetable-2026-06-15\""),
            "{html}"
        );
        assert!(html.contains("rowspan=\"2\""), "{html}");
        assert_eq!(html.matches("<tr>").count(), 3, "{html}");
        assert!(html.contains("09:00–11:00"));
        assert!(html.contains("Ada &lt;b&gt;"));
        // The second row has the time and the Lab cell only (Aula is covered).
        let second_row = html.split("<tr>").nth(3).unwrap();
        assert_eq!(second_row.matches("<th").count(), 1, "{second_row}");
        assert_eq!(second_row.matches("<td").count(), 1, "{second_row}");
    }

    #[test]
    fn rooms_missing_from_the_list_are_added_and_days_get_a_table_each() {
        let mut other = slot("Hall", (9, 0), (10, 0), "Day two");
        other.date = Date::constant(2026, 6, 16);
        let grid = Grid::new(Vec::new(), vec![slot("Aula", (9, 0), (10, 0), "A"), other]);
        let html = timetable_grid(&grid).into_string();
        assert_eq!(html.matches("<table").count(), 2);
        assert!(html.contains("Hall"));
        assert!(!Grid::default().slots.iter().any(|_| true));
        assert!(Grid::default().is_empty());
    }
}
