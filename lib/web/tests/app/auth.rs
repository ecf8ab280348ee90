//! Sign-in, sessions, CSRF and the security headers.

use axum::http::StatusCode;

use crate::support::{TestApp, csrf_in};

#[tokio::test]
async fn app_pages_need_a_session_and_the_api_answers_401() {
    let app = TestApp::new().await;
    let mut b = app.anonymous();
    let page = b.get("/app").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.location(), Some("/app/sign-in"));
    let api = b.get("/api/chat/messages").await;
    assert_eq!(api.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn dev_sign_in_by_name_creates_the_account_and_a_session() {
    let app = TestApp::new().await;
    let mut b = app.anonymous();
    let form = b.get("/app/sign-in").await;
    assert_eq!(form.status, StatusCode::OK);
    let token = csrf_in(&form.body);
    let done = b
        .post_form_raw(
            "/app/sign-in",
            &[("csrf", &token), ("name", "Ada Lovelace")],
        )
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(done.location(), Some("/app"));
    let cookie = done
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("steward_session="))
        .unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let user = steward_harness::UserId::parse("dev-ada-lovelace").unwrap();
    let profile = steward_harness::accounts::get_profile(app.table.as_ref(), &user)
        .await
        .unwrap();
    assert_eq!(profile.name, "Ada Lovelace");
    assert_eq!(b.get("/app/sign-in").await.status, StatusCode::OK);
}

#[tokio::test]
async fn sign_in_without_the_form_cookie_is_refused() {
    let app = TestApp::new().await;
    let mut b = app.anonymous();
    let page = b
        .post_form_raw(
            "/app/sign-in",
            &[("csrf", "x".repeat(43).as_str()), ("name", "Eve")],
        )
        .await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn signed_in_posts_without_the_token_are_refused() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Grace").await;
    let no_token = b.post_form_raw("/app/sign-out", &[]).await;
    assert_eq!(no_token.status, StatusCode::FORBIDDEN);
    let wrong = b.post_form_raw("/app/sign-out", &[("csrf", "nope")]).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    let json_no_header = {
        let req = axum::http::Request::post("/api/chat/messages")
            .header("cookie", format!("steward_session={}", b.cookies[0].1))
            .header("content-type", "application/json")
            .body(axum::body::Body::from("{}"))
            .unwrap();
        b.send(req).await
    };
    assert_eq!(json_no_header.status, StatusCode::FORBIDDEN);
    // With the token, signing out works and ends the session.
    let out = b.post_form("/app/sign-out", &[]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert_eq!(b.get("/app").await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn every_page_carries_the_security_headers() {
    let app = TestApp::new().await;
    let mut b = app.anonymous();
    let page = b.get("/app/sign-in").await;
    for name in [
        "content-security-policy",
        "x-content-type-options",
        "x-frame-options",
        "referrer-policy",
    ] {
        assert!(page.headers.contains_key(name), "missing {name}");
    }
    assert!(
        page.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
}
