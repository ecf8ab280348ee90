//! The Approvals page: an MCP client's held request is listed with what it would do, which
//! client asked and when; Approve and Decline are CSRF-checked posts of the signed-in person,
//! for their own requests only; after Approve the client's identical call runs once.

use axum::http::StatusCode;
use serde_json::json;
use steward_events::events::{self, NewEvent};
use steward_events::text::EventName;
use steward_events::when::EventDates;
use steward_harness::gate::{self, ConfirmState, GateOutcome, Surface};
use steward_harness::{Actor, Ctx, TokenId, UserId};

use crate::support::{Browser, TestApp};

fn ctx(app: &TestApp, user: &UserId, actor: Actor) -> Ctx {
    Ctx::new(app.table.clone(), app.clock.clone(), user.clone(), actor)
}

fn client() -> Surface {
    Surface::Mcp {
        token: Some(TokenId::parse(&"d".repeat(64)).unwrap()),
        client: "Claude desktop".into(),
    }
}

/// A draft event of `b`'s and the MCP client's held `delete_event` of it.
async fn held_delete(app: &TestApp, b: &Browser, name: &str) -> (String, gate::Confirmation) {
    let new = NewEvent::new(
        EventName::parse(name).unwrap(),
        EventDates::parse(&["2026-07-01"]).unwrap(),
    );
    let event = events::create_event(&ctx(app, b.user(), Actor::User), new)
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
    let held = call_delete(app, b.user(), event.id.as_str()).await;
    let GateOutcome::Held { confirmation, .. } = held else {
        panic!("held first: {held:?}")
    };
    (event.id.to_string(), *confirmation)
}

async fn call_delete(app: &TestApp, user: &UserId, event: &str) -> GateOutcome {
    gate::run(
        app.state.registry(),
        ctx(app, user, Actor::Mcp),
        &client(),
        "delete_event",
        json!({"event_id": event}),
    )
    .await
    .unwrap()
    .unwrap()
}

async fn exists(app: &TestApp, user: &UserId, event: &str) -> bool {
    let id = steward_events::ids::EventId::parse(event).unwrap();
    events::get_event(&ctx(app, user, Actor::User), &id)
        .await
        .is_ok()
}

#[tokio::test]
async fn a_held_request_is_listed_and_approving_lets_the_next_call_run_once() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let (event, request) = held_delete(&app, &b, "Scratch Day").await;

    let page = b.get("/app/approvals").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body
            .contains("Delete the draft event &quot;Scratch Day&quot;"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Claude desktop"));
    assert!(
        page.body
            .contains(&format!("/app/approvals/{}/approve", request.id))
    );

    // Without the CSRF token nothing is approved.
    let forged = b
        .post_form_raw(&format!("/app/approvals/{}/approve", request.id), &[])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert!(matches!(
        call_delete(&app, b.user(), &event).await,
        GateOutcome::Held { .. }
    ));
    assert!(exists(&app, b.user(), &event).await);

    let done = b
        .post_form(&format!("/app/approvals/{}/approve", request.id), &[])
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    assert_eq!(done.location(), Some("/app/approvals?done=approved"));
    let ran = call_delete(&app, b.user(), &event).await;
    assert!(matches!(&ran, GateOutcome::Ran(o) if o.is_ok()), "{ran:?}");
    assert!(!exists(&app, b.user(), &event).await);
    let after = b.get("/app/approvals?done=approved").await;
    assert!(
        after.body.contains("No requests are waiting"),
        "{}",
        after.body
    );
}

#[tokio::test]
async fn declining_refuses_the_call_and_another_person_cannot_approve() {
    let app = TestApp::new().await;
    let mut olga = app.signed_in("Olga").await;
    let (event, request) = held_delete(&app, &olga, "Keep Me").await;

    let mut mallory = app.signed_in("Mallory").await;
    let theirs = mallory
        .post_form(&format!("/app/approvals/{}/approve", request.id), &[])
        .await;
    assert_eq!(theirs.location(), Some("/app/approvals?done=gone"));
    assert!(!mallory.get("/app/approvals").await.body.contains("Keep Me"));

    let declined = olga
        .post_form(&format!("/app/approvals/{}/decline", request.id), &[])
        .await;
    assert_eq!(declined.location(), Some("/app/approvals?done=declined"));
    let again = call_delete(&app, olga.user(), &event).await;
    let GateOutcome::Held {
        message,
        confirmation,
    } = again
    else {
        panic!()
    };
    assert!(message.contains("declined"), "{message}");
    assert_eq!(confirmation.state, ConfirmState::Declined);
    // Approving after declining changes nothing.
    let late = olga
        .post_form(&format!("/app/approvals/{}/approve", request.id), &[])
        .await;
    assert_eq!(late.location(), Some("/app/approvals?done=settled"));
    assert!(exists(&app, olga.user(), &event).await);
    let page = olga.get("/app/approvals").await;
    assert!(page.body.contains("Declined"), "{}", page.body);
}
