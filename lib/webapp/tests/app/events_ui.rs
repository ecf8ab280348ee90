//! The signed-in events pages: the list, creating an event, the event page's forms (with
//! their 422 re-renders), confirmation of risky actions, the timetable grid, and ownership.

use axum::http::StatusCode;

use crate::support::{Browser, TestApp};

/// A future day of the test clock (2026-06-01).
pub const DAY: &str = "2026-06-15";

/// Creates an event through the form and returns its page path.
pub async fn create_event(b: &mut Browser, name: &str) -> String {
    let page = b
        .post_form(
            "/app/events",
            &[
                ("name", name),
                ("date", DAY),
                ("start", "09:00"),
                ("end", "17:00"),
                ("venue", "Town Hall"),
            ],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    let location = page.location().unwrap();
    location.split('?').next().unwrap().to_owned()
}

/// Posts a form expecting the redirect back to the event page; returns where it leads.
pub async fn ok(b: &mut Browser, path: &str, fields: &[(&str, &str)]) -> String {
    let page = b.post_form(path, fields).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{path}: {}", page.body);
    let to = page.location().unwrap().to_owned();
    assert!(to.starts_with("/app/events/"), "{to}");
    to
}

/// The id in a path like `/app/events/e_…/rooms/r_…/remove` after `marker` in a page.
pub fn id_after(body: &str, marker: &str) -> String {
    let at = body
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not in page"))
        + marker.len();
    body[at..].split(['/', '"']).next().unwrap().to_owned()
}

/// Adds two rooms and three sessions.
pub async fn fill(b: &mut Browser, event: &str) {
    ok(
        b,
        &format!("{event}/rooms"),
        &[("name", "Aula"), ("capacity", "120")],
    )
    .await;
    ok(
        b,
        &format!("{event}/rooms"),
        &[("name", "Lab"), ("capacity", "30")],
    )
    .await;
    for (title, minutes, speakers) in [
        ("Opening keynote", "60", "Dana Lee"),
        ("Rust workshop", "90", "Sam Roe"),
        ("Lightning talks", "45", "Dana Lee, Kim Park"),
    ] {
        ok(
            b,
            &format!("{event}/sessions"),
            &[
                ("title", title),
                ("duration_minutes", minutes),
                ("speakers", speakers),
            ],
        )
        .await;
    }
}

/// Posts a held form: the first post answers with the confirmation page (changing nothing),
/// the re-post with `confirm=yes` (what its button sends) goes ahead.
pub async fn confirmed(b: &mut Browser, path: &str, fields: &[(&str, &str)]) -> String {
    let ask = b.post_form(path, fields).await;
    assert_eq!(ask.status, StatusCode::OK, "{path}: {}", ask.body);
    assert!(ask.body.contains("card confirm"), "{path}: {}", ask.body);
    let mut with = fields.to_vec();
    with.push(("confirm", "yes"));
    ok(b, path, &with).await
}

/// Publishes, confirming.
pub async fn publish(b: &mut Browser, event: &str) {
    confirmed(b, &format!("{event}/publish"), &[]).await;
}

#[tokio::test]
async fn list_create_and_the_event_page() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let empty = b.get("/app").await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("No events yet"), "{}", empty.body);
    assert!(empty.body.contains("action=\"/app/events\""));

    let event = create_event(&mut b, "Summer Meetup").await;
    assert!(event.starts_with("/app/events/e_"), "{event}");
    let page = b.get(&format!("{event}?done=created")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Summer Meetup"));
    assert!(page.body.contains("Event created as a draft"));
    for section in [
        "id=\"details\"",
        "id=\"rooms\"",
        "id=\"sessions\"",
        "id=\"timetable\"",
        "id=\"attendees\"",
        "id=\"registration\"",
        "id=\"program\"",
    ] {
        assert!(page.body.contains(section), "{section}");
    }

    let list = b.get("/app").await;
    assert!(list.body.contains("Summer Meetup"));
    assert!(list.body.contains("badge draft"));
    assert!(list.body.contains(&format!("href=\"{event}\"")));
}

#[tokio::test]
async fn a_bad_new_event_comes_back_with_the_message_and_what_was_typed() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let page = b
        .post_form(
            "/app/events",
            &[
                ("name", "Autumn <Fair>"),
                ("date", "2026-13-45"),
                ("venue", "Barn"),
            ],
        )
        .await;
    assert_eq!(page.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.body.contains("is not a date"), "{}", page.body);
    assert!(page.body.contains("value=\"Autumn &lt;Fair&gt;\""));
    assert!(page.body.contains("value=\"Barn\""));
    let past = b
        .post_form("/app/events", &[("name", "Old"), ("date", "2026-01-01")])
        .await;
    assert_eq!(past.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn rooms_are_added_refused_with_a_reason_and_removed() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Rooms Day").await;
    ok(
        &mut b,
        &format!("{event}/rooms"),
        &[("name", "Aula"), ("capacity", "120")],
    )
    .await;

    let abc = b
        .post_form(
            &format!("{event}/rooms"),
            &[("name", "Lab"), ("capacity", "abc")],
        )
        .await;
    assert_eq!(abc.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        abc.body
            .contains("&quot;abc&quot; is not a number of seats"),
        "{}",
        abc.body
    );
    assert!(abc.body.contains("value=\"Lab\""), "typed name kept");
    assert!(abc.body.contains("value=\"abc\""), "typed seats kept");

    let zero = b
        .post_form(
            &format!("{event}/rooms"),
            &[("name", "Lab"), ("capacity", "0")],
        )
        .await;
    assert_eq!(zero.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(zero.body.contains("0 is not a capacity"), "{}", zero.body);

    let dup = b
        .post_form(
            &format!("{event}/rooms"),
            &[("name", "aula"), ("capacity", "10")],
        )
        .await;
    assert_eq!(dup.status, StatusCode::UNPROCESSABLE_ENTITY);

    let page = b.get(&event).await;
    assert!(page.body.contains("<td>Aula</td>"));
    let room = id_after(&page.body, "/rooms/");
    assert!(room.starts_with("r_"), "{room}");
    // A draft's room goes at once.
    ok(&mut b, &format!("{event}/rooms/{room}/remove"), &[]).await;
    assert!(!b.get(&event).await.body.contains("<td>Aula</td>"));
}

#[tokio::test]
async fn sessions_are_added_with_speakers_refused_with_a_reason_and_removed() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Talks").await;
    ok(
        &mut b,
        &format!("{event}/sessions"),
        &[
            ("title", "Keynote"),
            ("duration_minutes", "60"),
            ("speakers", "Dana Lee, Sam Roe"),
        ],
    )
    .await;
    let page = b.get(&event).await;
    assert!(page.body.contains("Keynote"));
    assert!(page.body.contains("Dana Lee, Sam Roe"));

    let bad = b
        .post_form(
            &format!("{event}/sessions"),
            &[("title", "Workshop"), ("duration_minutes", "long")],
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.body.contains("is not a number of minutes"));
    assert!(bad.body.contains("value=\"Workshop\""));

    let session = id_after(&page.body, "/sessions/");
    assert!(session.starts_with("s_"), "{session}");
    ok(&mut b, &format!("{event}/sessions/{session}/remove"), &[]).await;
    assert!(!b.get(&event).await.body.contains("Keynote"));
}

#[tokio::test]
async fn publishing_asks_first_and_changes_nothing_until_confirmed() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Harbour Fest").await;
    let ask = b.post_form(&format!("{event}/publish"), &[]).await;
    assert_eq!(ask.status, StatusCode::OK);
    assert!(ask.body.contains("card confirm"), "{}", ask.body);
    assert!(
        ask.body.contains("Publish &quot;Harbour Fest&quot;"),
        "{}",
        ask.body
    );
    assert!(ask.body.contains("Yes, publish"));
    assert!(ask.body.contains("name=\"confirm\" value=\"yes\""));
    assert!(ask.body.contains("Keep it"));
    assert!(b.get(&event).await.body.contains("badge draft"));
    let mut visitor = app.anonymous();
    assert_eq!(
        visitor.get("/e/harbour-fest").await.status,
        StatusCode::NOT_FOUND
    );

    publish(&mut b, &event).await;
    let page = b.get(&event).await;
    assert!(page.body.contains("badge published"));
    assert!(page.body.contains("https://steward.test/e/harbour-fest"));
    let public = visitor.get("/e/harbour-fest").await;
    assert_eq!(public.status, StatusCode::OK);
    assert!(public.body.contains("Harbour Fest"));
}

#[tokio::test]
async fn removing_from_a_published_event_and_withdrawing_ask_first() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Pier Day").await;
    ok(
        &mut b,
        &format!("{event}/rooms"),
        &[("name", "Aula"), ("capacity", "120")],
    )
    .await;
    publish(&mut b, &event).await;
    let page = b.get(&event).await;
    let room = id_after(&page.body, "/rooms/");
    let ask = b
        .post_form(&format!("{event}/rooms/{room}/remove"), &[])
        .await;
    assert_eq!(ask.status, StatusCode::OK);
    assert!(ask.body.contains("card confirm"));
    assert!(ask.body.contains("Yes, remove it"));
    assert!(b.get(&event).await.body.contains("<td>Aula</td>"));

    // A venue change of a published event asks too, and so does a new name: people see both.
    let edit = |venue: &'static str, name: &'static str| {
        vec![
            ("name", name),
            ("date", DAY),
            ("start", "09:00"),
            ("end", "17:00"),
            ("time_zone", "Europe/Berlin"),
            ("venue", venue),
            ("capacity", ""),
            ("tracks", ""),
            ("slug", "pier-day"),
        ]
    };
    let ask = b
        .post_form(&format!("{event}/edit"), &edit("Old Pier", "Pier Day"))
        .await;
    assert_eq!(ask.status, StatusCode::OK, "{}", ask.body);
    assert!(ask.body.contains("the venue"), "{}", ask.body);
    assert!(ask.body.contains("value=\"Old Pier\""));
    let rename = edit("", "Pier Day 2026");
    confirmed(&mut b, &format!("{event}/edit"), &rename).await;
    assert!(b.get(&event).await.body.contains("Pier Day 2026"));
    // A forged `confirm=yes` without the confirmation page first still asks.
    let mut forged = edit("Far Pier", "Pier Day 2026");
    forged.push(("confirm", "yes"));
    let asked = b.post_form(&format!("{event}/edit"), &forged).await;
    assert_eq!(asked.status, StatusCode::OK);
    assert!(asked.body.contains("card confirm"), "{}", asked.body);
    assert!(!b.get(&event).await.body.contains("Far Pier"));
}

#[tokio::test]
async fn the_timetable_is_built_and_drawn_as_a_grid_on_both_pages() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Grid Conf").await;
    fill(&mut b, &event).await;
    let to = ok(&mut b, &format!("{event}/timetable"), &[]).await;
    assert!(to.contains("?done=timetable#timetable"), "{to}");
    let page = b.get(to.split('#').next().unwrap()).await;
    assert!(page.body.contains("Timetable built."));
    assert!(page.body.contains("finishes at"), "{}", page.body);
    assert!(page.body.contains("class=\"timetable\""));
    assert!(
        page.body
            .contains("<th scope=\"col\">Aula</th><th scope=\"col\">Lab</th>")
    );
    for title in [
        "Opening keynote",
        "Rust workshop",
        "Lightning talks",
        "Dana Lee, Kim Park",
    ] {
        assert!(page.body.contains(title), "{title}");
    }

    publish(&mut b, &event).await;
    let public = app.anonymous().get("/e/grid-conf").await;
    assert!(public.body.contains("class=\"timetable\""));
    assert!(public.body.contains("Rust workshop"));
    assert!(public.body.contains("Sam Roe"));
}

#[tokio::test]
async fn an_impossible_timetable_explains_itself() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Too Long").await;
    ok(
        &mut b,
        &format!("{event}/rooms"),
        &[("name", "Aula"), ("capacity", "50")],
    )
    .await;
    ok(
        &mut b,
        &format!("{event}/sessions"),
        &[("title", "Marathon"), ("duration_minutes", "600")],
    )
    .await;
    let page = b.post_form(&format!("{event}/timetable"), &[]).await;
    assert_eq!(page.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.body.contains("no timetable fits"), "{}", page.body);
}

#[tokio::test]
async fn programme_and_registration_settings_are_saved_or_explained() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Settings Day").await;
    ok(
        &mut b,
        &format!("{event}/program"),
        &[
            ("day_start", ""),
            ("day_end", ""),
            ("lunch_minutes", "45"),
            ("lunch_earliest_start", "12:00"),
            ("lunch_latest_end", "14:00"),
            ("changeover_minutes", "10"),
            ("speaker_rest_minutes", ""),
        ],
    )
    .await;
    let page = b.get(&event).await;
    assert!(
        page.body.contains("lunch 45 min between 12:00 and 14:00"),
        "{}",
        page.body
    );
    assert!(page.body.contains("10 min changeover"));
    let bad = b
        .post_form(&format!("{event}/program"), &[("lunch_minutes", "lots")])
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.body.contains("value=\"lots\""));

    ok(
        &mut b,
        &format!("{event}/registration"),
        &[("open", "no"), ("closes_at", "")],
    )
    .await;
    assert!(b.get(&event).await.body.contains("Registration is closed"));
    let bad = b
        .post_form(
            &format!("{event}/registration"),
            &[("open", "yes"), ("closes_at", "soon")],
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.body.contains("is not a date and time"));
}

#[tokio::test]
async fn deleting_a_draft_asks_then_returns_to_the_list() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Scratch").await;
    let ask = b.post_form(&format!("{event}/delete"), &[]).await;
    assert!(ask.body.contains("Yes, delete"));
    let done = b
        .post_form(&format!("{event}/delete"), &[("confirm", "yes")])
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    assert_eq!(done.location(), Some("/app?done=deleted"));
    assert_eq!(b.get(&event).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn another_users_event_is_not_found() {
    let app = TestApp::new().await;
    let mut owner = app.signed_in("Olga").await;
    let event = create_event(&mut owner, "Private Party").await;
    let mut other = app.signed_in("Mallory").await;
    let page = other.get(&event).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(!page.body.contains("Private Party"));
    let post = other
        .post_form(
            &format!("{event}/rooms"),
            &[("name", "Mine"), ("capacity", "5")],
        )
        .await;
    assert_eq!(post.status, StatusCode::NOT_FOUND);
    let publish = other
        .post_form(&format!("{event}/publish"), &[("confirm", "yes")])
        .await;
    assert_eq!(publish.status, StatusCode::NOT_FOUND);
    assert_eq!(
        other.get("/app/events/nonsense").await.status,
        StatusCode::NOT_FOUND
    );
    assert!(owner.get(&event).await.body.contains("badge draft"));
}

/// The form extractors: a malformed event id, or a malformed room, session or attendee id under
/// a real event, is the UI's not-found page (never a 400 or a panic), and nothing changes.
#[tokio::test]
async fn malformed_ids_in_form_addresses_are_not_found_and_change_nothing() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Olga").await;
    let event = create_event(&mut b, "Id Check").await;
    for path in [
        "/app/events/nonsense/edit".to_owned(),
        "/app/events/nonsense/publish".to_owned(),
        "/app/events/nonsense/rooms".to_owned(),
        format!("{event}/rooms/not-a-room/remove"),
        format!("{event}/sessions/%20/remove"),
        format!("{event}/attendees/ev_{}/withdraw", "x".repeat(300)),
    ] {
        let page = b
            .post_form(&path, &[("name", "Renamed"), ("confirm", "yes")])
            .await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{path}");
        assert!(
            page.body.contains("Back to your events"),
            "{path}: {}",
            page.body
        );
    }
    let page = b.get(&event).await;
    assert!(page.body.contains("Id Check"));
    assert!(page.body.contains("badge draft"));
}
