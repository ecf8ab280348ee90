//! The account pages: settings, activity with undo, phone linking and MCP tokens.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use steward_events::events::{self, NewEvent};
use steward_events::registration::{PublicForm, register_public};
use steward_events::text::EventName;
use steward_events::when::EventDates;
use steward_harness::audit::recent_actions;
use steward_harness::linking::{self, LinkCode, LinkOutcome};
use steward_harness::{Actor, ChannelIdentity, Ctx, ServiceError, accounts, tokens};

use crate::support::{Browser, Page, TestApp, test_config};

/// The text between `start` and the next `end` in `body`.
fn between<'a>(body: &'a str, start: &str, end: &str) -> &'a str {
    let at = body
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} not in {body}"))
        + start.len();
    body[at..].split(end).next().unwrap()
}

fn user_ctx(app: &TestApp, b: &Browser) -> Ctx {
    Ctx::new(
        app.table.clone(),
        app.clock.clone(),
        b.user().clone(),
        Actor::User,
    )
}

async fn create_event(ctx: &Ctx, name: &str) -> events::Event {
    let new = NewEvent::new(
        EventName::parse(name).unwrap(),
        EventDates::parse(&["2026-07-01"]).unwrap(),
    );
    events::create_event(ctx, new)
        .await
        .unwrap()
        .commit()
        .await
        .unwrap()
}

#[tokio::test]
async fn account_pages_need_a_session() {
    let app = TestApp::new().await;
    let mut b = app.anonymous();
    for path in [
        "/app/settings",
        "/app/activity",
        "/app/linking",
        "/app/tokens",
    ] {
        let page = b.get(path).await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(page.location(), Some("/app/sign-in"), "{path}");
    }
    for path in [
        "/app/settings",
        "/app/activity/undo",
        "/app/linking/code",
        "/app/tokens",
    ] {
        let page = b.post_form(path, &[]).await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(page.location(), Some("/app/sign-in"), "{path}");
    }
}

#[tokio::test]
async fn settings_save_and_an_unknown_zone_is_refused_keeping_the_input() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Grace").await;
    let page = b.get("/app/settings").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("value=\"Grace\""), "{}", page.body);
    assert!(page.body.contains("value=\"Europe/Berlin\""));
    assert!(page.body.contains("<datalist id=\"time-zones\">"));

    let saved = b
        .post_form(
            "/app/settings",
            &[("name", "Grace Hopper"), ("time_zone", "America/New_York")],
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    assert_eq!(saved.location(), Some("/app/settings?saved=1"));
    let profile = accounts::get_profile(app.table.as_ref(), b.user())
        .await
        .unwrap();
    assert_eq!(profile.name, "Grace Hopper");
    assert_eq!(profile.time_zone.as_str(), "America/New_York");
    let page = b.get("/app/settings?saved=1").await;
    assert!(page.body.contains("Saved."));
    assert!(page.body.contains("value=\"Grace Hopper\""));
    assert!(page.body.contains("value=\"America/New_York\""));

    let bad = b
        .post_form(
            "/app/settings",
            &[("name", "Admiral Hopper"), ("time_zone", "Mars/Olympus")],
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        bad.body.contains("is not a known IANA time zone"),
        "{}",
        bad.body
    );
    assert!(bad.body.contains("value=\"Admiral Hopper\""));
    assert!(bad.body.contains("value=\"Mars/Olympus\""));
    let profile = accounts::get_profile(app.table.as_ref(), b.user())
        .await
        .unwrap();
    assert_eq!(profile.name, "Grace Hopper", "nothing saved on a bad zone");

    let empty = b
        .post_form("/app/settings", &[("name", " "), ("time_zone", "UTC")])
        .await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(empty.body.contains("Invalid name"), "{}", empty.body);
}

/// The secret in the page that created a token.
fn token_in(page: &Page) -> String {
    format!("stw_{}", between(&page.body, "stw_", "<"))
}

#[tokio::test]
async fn a_token_is_shown_once_authenticates_and_stops_after_revoke() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Ada").await;
    let made = b
        .post_form("/app/tokens", &[("label", "Claude desktop")])
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    assert_eq!(
        made.headers.get("cache-control").unwrap().to_str().unwrap(),
        "no-store"
    );
    let token = token_in(&made);
    assert!(
        made.body
            .contains(&format!("Authorization: Bearer {token}"))
    );
    assert!(made.body.contains("https://steward.test/mcp"));
    assert!(made.body.contains("shown only this once"));

    let record = tokens::authenticate(app.table.as_ref(), app.clock.as_ref(), &token)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&record.user, b.user());
    assert_eq!(record.label, "Claude desktop");

    let list = b.get("/app/tokens").await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains("Claude desktop"));
    assert!(
        !list.body.contains(&token),
        "the list never shows the secret"
    );
    assert!(!list.body.contains("never"), "it was used: {}", list.body);

    let revoke_path = format!("/app/tokens/{}/revoke", record.id);
    assert!(list.body.contains(&revoke_path));
    let revoked = b.post_form(&revoke_path, &[]).await;
    assert_eq!(revoked.status, StatusCode::SEE_OTHER, "{}", revoked.body);
    assert_eq!(revoked.location(), Some("/app/tokens?revoked=1"));
    assert!(
        tokens::authenticate(app.table.as_ref(), app.clock.as_ref(), &token)
            .await
            .unwrap()
            .is_none()
    );
    let list = b.get("/app/tokens?revoked=1").await;
    assert!(list.body.contains("Token revoked."));
    assert!(list.body.contains("Revoked"));
    assert!(
        !list.body.contains(&revoke_path),
        "no button on a revoked token"
    );
}

#[tokio::test]
async fn a_bad_label_is_refused_and_kept_and_no_default_label_is_needed() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Ada").await;
    let long = "x".repeat(500);
    let bad = b.post_form("/app/tokens", &[("label", &long)]).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.body.contains("Invalid label"), "{}", bad.body);
    assert!(bad.body.contains(&format!("value=\"{long}\"")));
    assert!(!bad.body.contains("stw_"));
    assert!(
        tokens::list_tokens(app.table.as_ref(), b.user())
            .await
            .unwrap()
            .is_empty()
    );

    let made = b.post_form("/app/tokens", &[("label", "")]).await;
    assert_eq!(made.status, StatusCode::OK);
    assert!(made.body.contains(tokens::DEFAULT_TOKEN_LABEL));
}

#[tokio::test]
async fn another_users_token_cannot_be_revoked() {
    let app = TestApp::new().await;
    let mut ada = app.signed_in("Ada").await;
    let bob = app.signed_in("Bob").await;
    let bobs = tokens::create_token(
        app.table.as_ref(),
        app.clock.as_ref(),
        bob.user(),
        Some("Bob's"),
    )
    .await
    .unwrap();
    let page = ada
        .post_form(&format!("/app/tokens/{}/revoke", bobs.record.id), &[])
        .await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(
        tokens::authenticate(app.table.as_ref(), app.clock.as_ref(), bobs.token.expose())
            .await
            .unwrap()
            .is_some()
    );
    let list = ada.get("/app/tokens").await;
    assert!(!list.body.contains("Bob&#39;s") && !list.body.contains("Bob's"));
    let nonsense = ada.post_form("/app/tokens/not-an-id/revoke", &[]).await;
    assert_eq!(nonsense.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_linking_code_links_and_both_deep_links_carry_it() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Lin").await;
    let page = b.get("/app/linking").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("No phone is linked yet."));

    let issued = b.post_form("/app/linking/code", &[]).await;
    assert_eq!(issued.status, StatusCode::OK, "{}", issued.body);
    assert_eq!(
        issued
            .headers
            .get("cache-control")
            .unwrap()
            .to_str()
            .unwrap(),
        "no-store"
    );
    let code = between(&issued.body, "<p class=\"code\">", "<").to_owned();
    assert!(issued.body.contains("Valid for 30 minutes"));
    let wa = format!("https://wa.me/15550001111?text={code}");
    let tg = format!("https://t.me/steward_test_bot?start={code}");
    assert!(issued.body.contains(&wa), "{}", issued.body);
    assert!(issued.body.contains(&tg), "{}", issued.body);
    assert!(issued.body.contains("Open WhatsApp") && issued.body.contains("Open Telegram"));
    // What each app sends finds the code: WhatsApp the text itself, Telegram "/start CODE".
    let parsed = LinkCode::parse(&code).unwrap();
    assert_eq!(linking::find_code_in_text(&code), Some(parsed.clone()));
    assert_eq!(
        linking::find_code_in_text(&format!("/start {code}")),
        Some(parsed.clone())
    );

    let phone = ChannelIdentity::parse("wa", "4915112345678").unwrap();
    let outcome = linking::consume(app.table.as_ref(), app.clock.as_ref(), &parsed, &phone)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        LinkOutcome::Linked {
            user: b.user().clone()
        }
    );
    let page = b.get("/app/linking").await;
    assert!(page.body.contains("WhatsApp"));
    assert!(page.body.contains("5678"));
    assert!(!page.body.contains("4915112345678"), "the number is masked");
}

/// Security review finding 7: a linked phone can be unlinked on Connect a phone (a
/// CSRF-checked POST, only the caller's own phones); its chat is released with it.
#[tokio::test]
async fn linked_phones_can_be_unlinked_on_connect_a_phone() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Lin").await;
    let mut other = app.signed_in("Otto").await;
    let phone = ChannelIdentity::parse("wa", "4915112345678").unwrap();
    let bot = ChannelIdentity::parse("tg", "777000111").unwrap();
    for (who, identity) in [(&b, &phone), (&other, &bot)] {
        steward_harness::identity::bind(
            app.table.as_ref(),
            app.clock.as_ref(),
            identity,
            who.user(),
        )
        .await
        .unwrap();
    }
    let page = b.get("/app/linking").await;
    let action = between(&page.body, "<form method=\"post\" action=\"", "\"").to_owned();
    assert!(
        action.starts_with("/app/linking/") && action.ends_with("/unlink"),
        "{action}"
    );
    assert!(
        !action.contains("4915112345678"),
        "the number is not in the path"
    );

    // Without the CSRF token: refused, still linked.
    let forged = b.post_form_raw(&action, &[]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    // Someone else cannot name this phone.
    let theirs = other.post_form(&action, &[]).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    let owner = steward_harness::identity::lookup(app.table.as_ref(), &phone)
        .await
        .unwrap();
    assert_eq!(owner.as_ref(), Some(b.user()));

    let done = b.post_form(&action, &[]).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(done.location(), Some("/app/linking?unlinked=1"));
    let page = b.get("/app/linking?unlinked=1").await;
    assert!(
        page.body.contains("The phone was unlinked."),
        "{}",
        page.body
    );
    assert!(page.body.contains("No phone is linked yet."));
    assert_eq!(
        steward_harness::identity::lookup(app.table.as_ref(), &phone)
            .await
            .unwrap(),
        None
    );
    // Unlinking twice: not found.
    assert_eq!(
        b.post_form(&action, &[]).await.status,
        StatusCode::NOT_FOUND
    );
    // The other account's phone is untouched.
    assert!(
        steward_harness::identity::lookup(app.table.as_ref(), &bot)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn without_configured_numbers_the_page_says_what_to_set() {
    let mut config = test_config();
    config.whatsapp_number = None;
    config.telegram_bot = None;
    let app = TestApp::with_config(config).await;
    let mut b = app.signed_in("Lin").await;
    let issued = b.post_form("/app/linking/code", &[]).await;
    assert_eq!(issued.status, StatusCode::OK);
    assert!(!issued.body.contains("wa.me") && !issued.body.contains("t.me/"));
    assert!(issued.body.contains("STEWARD_WHATSAPP_NUMBER"));
    assert!(issued.body.contains("STEWARD_TELEGRAM_BOT"));
}

#[tokio::test]
async fn activity_lists_a_change_and_undo_reverts_it() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Uma").await;
    let empty = b.get("/app/activity").await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("Nothing has happened yet."));

    let ctx = user_ctx(&app, &b);
    let event = create_event(&ctx, "Summer Camp").await;
    let page = b.get("/app/activity").await;
    assert!(page.body.contains("Create event"), "{}", page.body);
    assert!(page.body.contains("Summer Camp"));
    assert!(page.body.contains("You"));
    // 09:00 UTC in Berlin.
    assert!(page.body.contains("2026-06-01 11:00"), "{}", page.body);
    let offered = between(&page.body, "name=\"action\" value=\"", "\"").to_owned();
    assert_eq!(offered, ctx.action().to_string());

    let undone = b
        .post_form("/app/activity/undo", &[("action", &offered)])
        .await;
    assert_eq!(undone.status, StatusCode::SEE_OTHER, "{}", undone.body);
    assert_eq!(undone.location(), Some("/app/activity?undone=1"));
    let err = events::get_event(&ctx, &event.id).await.unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }), "{err:?}");

    let page = b.get("/app/activity?undone=1").await;
    assert!(
        page.body.contains("Undid &quot;Create event"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Undone"));
    assert!(
        !page.body.contains("name=\"action\""),
        "nothing left to undo"
    );
    // Without the flag the page does not repeat it.
    let plain = b.get("/app/activity").await;
    assert!(!plain.body.contains("Undid"));

    // Nothing left: a stale button gets a readable refusal, not a crash.
    let again = b
        .post_form("/app/activity/undo", &[("action", &offered)])
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again.body.contains("nothing to undo"), "{}", again.body);
}

#[tokio::test]
async fn one_form_post_is_one_row_and_one_undo() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Ida").await;
    let earlier = user_ctx(&app, &b);
    create_event(&earlier, "Kept").await;
    let saved = b
        .post_form(
            "/app/settings",
            &[("name", "Ida Lovelace"), ("time_zone", "America/New_York")],
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);

    let page = b.get("/app/activity").await;
    let rows = page.body.matches("<tr>").count();
    assert_eq!(
        rows, 3,
        "a header row and one row per request: {}",
        page.body
    );
    let list = between(&page.body, "<ul class=\"changes\">", "</ul>");
    assert_eq!(list.matches("<li>").count(), 2, "{list}");
    assert!(
        list.starts_with("<li>Rename the account</li><li>Change the account"),
        "{list}"
    );
    assert_eq!(page.body.matches("name=\"action\"").count(), 1);

    let offered = between(&page.body, "name=\"action\" value=\"", "\"").to_owned();
    let undone = b
        .post_form("/app/activity/undo", &[("action", &offered)])
        .await;
    assert_eq!(undone.status, StatusCode::SEE_OTHER, "{}", undone.body);
    let profile = accounts::get_profile(app.table.as_ref(), b.user())
        .await
        .unwrap();
    assert_eq!(profile.name, "Ida", "both changes of the post reverted");
    assert_eq!(profile.time_zone.as_str(), "Europe/Berlin");
    let page = b.get("/app/activity?undone=1").await;
    assert!(
        page.body
            .contains("Undid &quot;Rename the account&quot; and &quot;Change the account"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("time zone&quot; (1 record)."),
        "one record, put back as it was before the post: {}",
        page.body
    );
    assert_eq!(
        events::list_events(&earlier).await.unwrap().len(),
        1,
        "the request before stays"
    );
}

#[tokio::test]
async fn undo_refuses_when_the_newest_change_is_not_the_one_shown() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Uma").await;
    let ctx = user_ctx(&app, &b);
    create_event(&ctx, "First").await;
    let page = b.get("/app/activity").await;
    let offered = between(&page.body, "name=\"action\" value=\"", "\"").to_owned();
    // The assistant acts in the meantime.
    let agent = Ctx::new(
        app.table.clone(),
        app.clock.clone(),
        b.user().clone(),
        Actor::Agent,
    );
    create_event(&agent, "Second").await;
    let refused = b
        .post_form("/app/activity/undo", &[("action", &offered)])
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.body.contains("look at the list again"));
    let listed = events::list_events(&ctx).await.unwrap();
    assert_eq!(listed.len(), 2, "nothing was undone");
    let page = b.get("/app/activity").await;
    assert!(page.body.contains("The assistant"));
}

#[tokio::test]
async fn public_registrations_are_listed_without_an_undo_button() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Pia").await;
    let ctx = user_ctx(&app, &b);
    let event = create_event(&ctx, "Open Day").await;
    let publish = ctx.next_action();
    events::publish_event(&publish, &event.id)
        .await
        .unwrap()
        .commit()
        .await
        .unwrap();
    register_public(
        app.table.clone(),
        app.clock.clone(),
        event.slug.as_str(),
        PublicForm {
            name: "Vic Visitor".into(),
            email: "vic@example.org".into(),
            answers: BTreeMap::new(),
        },
    )
    .await
    .unwrap();
    let trail = recent_actions(app.table.as_ref(), b.user(), 10)
        .await
        .unwrap();
    assert_eq!(trail[0].actor, Actor::Public);
    let public_action = trail[0].action.to_string();

    let page = b.get("/app/activity").await;
    assert!(
        page.body.contains("A member of the public"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Not undoable"));
    assert_eq!(page.body.matches("name=\"action\"").count(), 1);
    assert!(!page.body.contains(&format!("value=\"{public_action}\"")));
    let offered = between(&page.body, "name=\"action\" value=\"", "\"");
    assert_eq!(offered, publish.action().to_string());
}
