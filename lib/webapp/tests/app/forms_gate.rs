//! Every form of the signed-in UI against the registry ([`steward_webapp::ui::FORMS`]): each
//! capability the registry declares holdable has a gated form (or is named here as having
//! none), forms that skip the gate run capabilities declared never held, and each gated form,
//! posted where its capability is held, answers with the confirmation page its declaration
//! decided and changes nothing — even with a forged `confirm=yes`, after the confirmation
//! lapsed, with other fields on the confirming post, or posted by another person — then runs
//! exactly once when the person confirms.

use axum::http::StatusCode;
use serde_json::json;
use steward_harness::gate::{ConfirmState, Confirmation};
use steward_harness::{Actor, ConfirmKind, Ctx, ToolOutcome, UserId, keys};
use steward_store::Query;
use steward_webapp::ui::FORMS;

use crate::events_ui::{confirmed, create_event, fill, id_after, ok, publish};
use crate::support::{Browser, TestApp};

/// Holdable capabilities with no form in the web UI: the chat and MCP reach them through the
/// same gate (`steward-events`' gate matrix covers them there).
const NO_FORM: [&str; 2] = ["update_room", "update_session"];

/// The event's state before the form is posted.
#[derive(Debug, Clone, Copy)]
enum State {
    Draft,
    Published,
    Cancelled,
}

/// A form's path and its fields.
type Post = (String, Vec<(&'static str, String)>);

/// One gated form, posted where its capability is held.
struct Case {
    capability: &'static str,
    state: State,
    /// The form's path and fields, given the event's page path and its page.
    post: fn(&Fixture) -> Post,
    /// A field changed on the confirming post (other arguments), for forms with fields.
    other: Option<(&'static str, &'static str)>,
    /// Whether the record is gone after it ran, so posting again finds nothing (404).
    gone_after: bool,
}

/// A signed-in organiser with an event in the case's state.
struct Fixture {
    app: TestApp,
    b: Browser,
    event: String,
    page: String,
    attendee: String,
}

fn edit_fields(venue: &str) -> Vec<(&'static str, String)> {
    [
        ("name", "Pier Day"),
        ("date", crate::events_ui::DAY),
        ("start", "09:00"),
        ("end", "17:00"),
        ("time_zone", "Europe/Berlin"),
        ("venue", venue),
        ("capacity", ""),
        ("tracks", ""),
        ("slug", "pier-day"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .collect()
}

fn cases() -> Vec<Case> {
    fn at(f: &Fixture, tail: &str) -> String {
        format!("{}/{tail}", f.event)
    }
    vec![
        Case {
            capability: "update_event",
            state: State::Published,
            post: |f| (at(f, "edit"), edit_fields("Old Pier")),
            other: Some(("venue", "Far Pier")),
            gone_after: false,
        },
        Case {
            capability: "publish_event",
            state: State::Draft,
            post: |f| (at(f, "publish"), vec![]),
            other: None,
            gone_after: false,
        },
        Case {
            capability: "cancel_event",
            state: State::Published,
            post: |f| (at(f, "cancel"), vec![]),
            other: None,
            gone_after: false,
        },
        Case {
            capability: "reopen_event",
            state: State::Cancelled,
            post: |f| (at(f, "reopen"), vec![]),
            other: None,
            gone_after: false,
        },
        Case {
            capability: "delete_event",
            state: State::Draft,
            post: |f| (at(f, "delete"), vec![]),
            other: None,
            gone_after: true,
        },
        Case {
            capability: "set_registration",
            state: State::Published,
            post: |f| {
                (
                    at(f, "registration"),
                    vec![("open", "no".into()), ("closes_at", String::new())],
                )
            },
            other: Some(("closes_at", "2026-06-10T12:00")),
            gone_after: false,
        },
        Case {
            capability: "add_room",
            state: State::Published,
            post: |f| {
                (
                    at(f, "rooms"),
                    vec![("name", "Annex".into()), ("capacity", "10".into())],
                )
            },
            other: Some(("capacity", "11")),
            gone_after: false,
        },
        Case {
            capability: "remove_room",
            state: State::Published,
            post: |f| {
                let room = id_after(&f.page, "/rooms/");
                (at(f, &format!("rooms/{room}/remove")), vec![])
            },
            other: None,
            gone_after: true,
        },
        Case {
            capability: "add_session",
            state: State::Published,
            post: |f| {
                (
                    at(f, "sessions"),
                    vec![("title", "Extra".into()), ("duration_minutes", "30".into())],
                )
            },
            other: Some(("duration_minutes", "31")),
            gone_after: false,
        },
        Case {
            capability: "remove_session",
            state: State::Published,
            post: |f| {
                let session = id_after(&f.page, "/sessions/");
                (at(f, &format!("sessions/{session}/remove")), vec![])
            },
            other: None,
            gone_after: true,
        },
        Case {
            capability: "build_timetable",
            state: State::Published,
            post: |f| (at(f, "timetable"), vec![]),
            other: None,
            gone_after: false,
        },
        Case {
            capability: "withdraw_attendee",
            state: State::Published,
            post: |f| (at(f, &format!("attendees/{}/withdraw", f.attendee)), vec![]),
            other: None,
            gone_after: false,
        },
        Case {
            capability: "undo_last_action",
            state: State::Published,
            post: |f| {
                let action = value_after(&f.page, "name=\"action\" value=\"");
                ("/app/activity/undo".to_owned(), vec![("action", action)])
            },
            other: Some(("action", "00000000000000000000000000")),
            gone_after: false,
        },
    ]
}

fn value_after(body: &str, marker: &str) -> String {
    let at = body
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not in page"))
        + marker.len();
    body[at..].split('"').next().unwrap().to_owned()
}

/// Whether a concrete path fits a route pattern (`{x}` matches one segment).
fn fits(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == q.len()
        && p.iter()
            .zip(&q)
            .all(|(a, b)| a == b || (a.starts_with('{') && a.ends_with('}') && !b.is_empty()))
}

/// Changes recorded for `user` so far: each request that changed something adds one.
async fn changes(app: &TestApp, user: &UserId) -> usize {
    app.table
        .query_all(
            &Query::prefix(keys::user_pk(user), keys::ACTION_SK_PREFIX),
            10_000,
        )
        .await
        .unwrap()
        .len()
}

async fn confirmations(app: &TestApp, user: &UserId) -> Vec<Confirmation> {
    app.table
        .query_all(
            &Query::prefix(keys::user_pk(user), keys::CONFIRM_SK_PREFIX),
            100,
        )
        .await
        .unwrap()
        .iter()
        .map(|i| i.parse().unwrap())
        .collect()
}

async fn fixture(state: State) -> Fixture {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Pier Day").await;
    fill(&mut b, &event).await;
    ok(&mut b, &format!("{event}/timetable"), &[]).await;
    let ctx = Ctx::new(
        app.table.clone(),
        app.clock.clone(),
        b.user().clone(),
        Actor::User,
    );
    let event_id = event.trim_start_matches("/app/events/");
    // An attendee to withdraw (a draft with attendees cannot be deleted: drafts get none).
    let attendee = if matches!(state, State::Draft) {
        String::new()
    } else {
        register(&app, &ctx, event_id).await
    };
    if !matches!(state, State::Draft) {
        publish(&mut b, &event).await;
    }
    if matches!(state, State::Cancelled) {
        confirmed(&mut b, &format!("{event}/cancel"), &[]).await;
    }
    let mut page = b.get(&event).await.body;
    page.push_str(&b.get("/app/activity").await.body);
    Fixture {
        app,
        b,
        event,
        page,
        attendee,
    }
}

async fn register(app: &TestApp, ctx: &Ctx, event_id: &str) -> String {
    let registered = app
        .state
        .registry()
        .call(
            ctx.clone(),
            "register_attendee",
            json!({"event_id": event_id, "name": "Sam Roe", "email": "sam@example.org"}),
        )
        .await
        .unwrap();
    let ToolOutcome::Ok(registered) = registered else {
        panic!("{registered:?}")
    };
    registered.data.unwrap()["id"].as_str().unwrap().to_owned()
}

fn with(
    fields: &[(&'static str, String)],
    extra: &[(&'static str, &str)],
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fields
        .iter()
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    out.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    out
}

async fn post(b: &mut Browser, path: &str, fields: &[(String, String)]) -> crate::support::Page {
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    b.post_form(path, &pairs).await
}

fn is_held(page: &crate::support::Page) -> bool {
    page.status == StatusCode::OK && page.body.contains("card confirm")
}

async fn one(case: &Case, route: &str) {
    let label = case.capability;
    let mut f = fixture(case.state).await;
    let user = f.b.user().clone();
    let (path, fields) = (case.post)(&f);
    assert!(fits(route, &path), "{path} is not the form's route {route}");
    let before = changes(&f.app, &user).await;

    // A forged `confirm=yes` with no confirmation page first: held, nothing changes.
    let forged = post(&mut f.b, &path, &with(&fields, &[("confirm", "yes")])).await;
    assert!(
        is_held(&forged),
        "{label}: {} {}",
        forged.status,
        forged.body
    );
    assert!(forged.body.contains("Yes, "), "{label}");
    assert_eq!(
        changes(&f.app, &user).await,
        before,
        "{label}: held changes nothing"
    );
    let filed = confirmations(&f.app, &user).await;
    let record = filed
        .iter()
        .find(|c| c.capability == case.capability && c.state == ConfirmState::Pending)
        .unwrap_or_else(|| panic!("{label}: the gate filed no record: {filed:?}"));
    // The page says what the capability's declaration described.
    let shown = record.description.replace('"', "&quot;");
    assert!(
        forged.body.contains(&shown),
        "{label}: {shown} not in {}",
        forged.body
    );

    // The hour passes: the confirming post is held again (a fresh request), nothing changes.
    f.app.clock.advance_millis(61 * 60 * 1000);
    let lapsed = post(&mut f.b, &path, &with(&fields, &[("confirm", "yes")])).await;
    assert!(is_held(&lapsed), "{label}: after the hour: {}", lapsed.body);
    assert_eq!(changes(&f.app, &user).await, before, "{label}");

    // Other fields on the confirming post: not what was confirmed, so it never runs.
    if let Some((name, value)) = case.other {
        let other = post(
            &mut f.b,
            &path,
            &with(&fields, &[(name, value), ("confirm", "yes")]),
        )
        .await;
        assert!(
            other.status != StatusCode::SEE_OTHER,
            "{label}: other arguments ran: {}",
            other.body
        );
        assert_eq!(
            changes(&f.app, &user).await,
            before,
            "{label}: other arguments"
        );
    }

    // Another person posting the identical confirmation: nothing of the owner's changes.
    let mut mallory = f.app.signed_in("Mallory").await;
    let theirs = post(&mut mallory, &path, &with(&fields, &[("confirm", "yes")])).await;
    assert!(
        theirs.status != StatusCode::SEE_OTHER,
        "{label}: {}",
        theirs.body
    );
    assert_eq!(
        changes(&f.app, &user).await,
        before,
        "{label}: another person"
    );
    assert_eq!(changes(&f.app, mallory.user()).await, 0, "{label}");

    // The person confirms: it runs, once.
    let done = post(&mut f.b, &path, &with(&fields, &[("confirm", "yes")])).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{label}: {}", done.body);
    let after = changes(&f.app, &user).await;
    assert_eq!(after, before + 1, "{label}: exactly one change");
    let spent = confirmations(&f.app, &user).await;
    assert!(
        spent
            .iter()
            .any(|c| c.capability == case.capability && c.state == ConfirmState::Spent),
        "{label}: the confirmation is spent: {spent:?}"
    );

    // The same confirming post again (a double submit): nothing more happens.
    let again = post(&mut f.b, &path, &with(&fields, &[("confirm", "yes")])).await;
    if case.gone_after {
        assert_eq!(
            again.status,
            StatusCode::NOT_FOUND,
            "{label}: {}",
            again.body
        );
    }
    assert_eq!(changes(&f.app, &user).await, after, "{label}: runs once");
}

#[tokio::test]
async fn every_form_of_a_holdable_capability_goes_through_the_gate() {
    let app = TestApp::new().await;
    let registry = app.state.registry();
    let kind = |name: &str| {
        registry
            .get(name)
            .unwrap_or_else(|| panic!("FORMS names {name}, which the registry does not have"))
            .confirmation()
    };
    let cases = cases();
    for form in FORMS {
        if form.gated {
            assert!(
                cases.iter().any(|c| c.capability == form.capability),
                "the gated form {} needs a case here",
                form.path
            );
            assert_eq!(
                kind(form.capability),
                ConfirmKind::HeldWhen,
                "{}",
                form.path
            );
        } else {
            assert_ne!(
                kind(form.capability),
                ConfirmKind::HeldWhen,
                "{} runs {} without the gate, but the registry says it can be held",
                form.path,
                form.capability
            );
        }
    }
    // Every holdable capability has a gated form, or is named as having none.
    for tool in registry.tools() {
        if tool.confirmation() != ConfirmKind::HeldWhen {
            continue;
        }
        let forms: Vec<_> = FORMS
            .iter()
            .filter(|f| f.capability == tool.name())
            .collect();
        if NO_FORM.contains(&tool.name()) {
            assert!(
                forms.is_empty(),
                "{} has a form now: add its case",
                tool.name()
            );
        } else {
            assert!(
                !forms.is_empty() && forms.iter().all(|f| f.gated),
                "the holdable capability {} needs a gated form in ui::FORMS (or a place in NO_FORM)",
                tool.name()
            );
        }
    }
    assert_eq!(
        cases.len(),
        FORMS.iter().filter(|f| f.gated).count(),
        "one case per gated form"
    );
    for case in &cases {
        let form = FORMS
            .iter()
            .find(|f| f.capability == case.capability)
            .unwrap();
        one(case, form.path).await;
    }
}
