//! The attendees section: everyone registered or withdrawn, with where they registered, and a
//! withdraw button (asks first).

use axum::Form;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use steward_events::attendees::{self, AttendeeSource, AttendeeStatus};
use steward_events::ids::AttendeeId;
use steward_events::when;

use super::confirm::{self, Action};
use super::fields::Fields;
use super::page::View;
use super::{Done, Outcome, event_id, event_path, finish, parse_id};
use crate::app::WebState;
use crate::auth::SignedIn;
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
pub async fn withdraw(
    State(state): State<WebState>,
    signed: SignedIn,
    Path((id, attendee)): Path<(String, String)>,
    Form(f): Form<Fields>,
) -> Response {
    let (id, attendee) = match (
        event_id(&id),
        parse_id(&attendee, "Attendee", AttendeeId::parse),
    ) {
        (Ok(id), Ok(a)) => (id, a),
        (Err(e), _) | (_, Err(e)) => return e.into_response(),
    };
    let ctx = signed.ctx(&state);
    let result = async {
        let action = Action {
            tool: "withdraw_attendee",
            input: WithdrawAttendeeInput {
                event_id: id.to_string(),
                attendee_id: attendee.to_string(),
            },
            verb: "withdraw them",
            action: format!("{}/attendees/{attendee}/withdraw", event_path(&id)),
            back: event_path(&id),
        };
        let ran = confirm::run(&state, &ctx, &signed, &f, action, async |ctx| {
            let u = attendees::withdraw(&ctx, &id, &attendee)
                .await?
                .commit()
                .await?;
            Ok(if u.is_unchanged() {
                Done::Unchanged
            } else {
                Done::Withdrawn
            })
        })
        .await?;
        Ok(Outcome::from(ran))
    }
    .await;
    finish(&state, &signed, &ctx, &id, WITHDRAW, f, result).await
}
