//! The attendees section: everyone registered or withdrawn, with where they registered, and a
//! withdraw button (asks first).

use axum::response::Response;
use maud::{Markup, html};
use steward_events::attendees::{self, AttendeeSource, AttendeeStatus};
use steward_events::ids::AttendeeId;
use steward_events::when;

use super::confirm::Action;
use super::form::{EventForm, Record};
use super::view::View;
use super::{Done, Outcome, event_path};
use steward_events::tools::WithdrawAttendeeInput;

/// The withdraw buttons' name.
const WITHDRAW: &str = "withdraw";

fn source(s: AttendeeSource) -> &'static str {
    match s {
        AttendeeSource::Organiser => "added by you",
        AttendeeSource::PublicForm => "public form",
    }
}

/// The attendees section.
pub fn section(v: &View<'_>) -> Markup {
    let d = v.data;
    let tz = d.event.tz().ok();
    html! {
        section #attendees {
            h2 { "Attendees" }
            (v.problem_of(WITHDRAW))
            @if d.attendees.is_empty() {
                p.muted { "Nobody has registered yet." }
            } @else {
                div.table-wrap {
                    table.attendees {
                        thead { tr { th { "Name" } th { "E-mail" } th { "Status" } th { "Source" } th { "Registered" } th { "Answers" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for a in &d.attendees {
                                tr {
                                    td { (a.name) }
                                    td { (a.email) }
                                    td { span class={ "badge " @if a.status == AttendeeStatus::Withdrawn { "cancelled" } } {
                                        @match a.status { AttendeeStatus::Registered => "registered", AttendeeStatus::Withdrawn => "withdrawn" }
                                    } }
                                    td { (source(a.source)) }
                                    td { @if let Some(tz) = &tz { (when::fmt_datetime(when::local_now(a.registered_ms, tz))) } }
                                    td {
                                        @for (q, answer) in a.answers.as_map() {
                                            div { span.muted { (q) ": " } (answer) }
                                        }
                                    }
                                    td {
                                        @if a.status == AttendeeStatus::Registered && v.changeable() {
                                            form.inline method="post" action=(v.action(&format!("attendees/{}/withdraw", a.id))) {
                                                (v.csrf())
                                                button.link type="submit" { "Withdraw" span.visually-hidden { " " (a.name) } }
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
}

/// `POST /app/events/{id}/attendees/{attendee}/withdraw` (asks first).
pub async fn withdraw(Record(attendee): Record<AttendeeId>, form: EventForm) -> Response {
    let id = &form.id;
    let result = async {
        let action = Action {
            tool: "withdraw_attendee",
            input: WithdrawAttendeeInput {
                event_id: id.to_string(),
                attendee_id: attendee.to_string(),
            },
            verb: "withdraw them",
            action: format!("{}/attendees/{attendee}/withdraw", event_path(id)),
            back: event_path(id),
        };
        let ran = form
            .run(action, async |ctx| {
                let u = attendees::withdraw(&ctx, id, &attendee)
                    .await?
                    .commit()
                    .await?;
                Ok(Done::Withdrawn.unless_unchanged(u.is_unchanged()))
            })
            .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    form.finish(WITHDRAW, result).await
}
