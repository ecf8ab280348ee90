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

/// A GET of `path` with these headers (and this browser's cookies).
async fn get_with(
    b: &mut crate::support::Browser,
    path: &str,
    headers: &[(&str, &str)],
) -> crate::support::Page {
    let cookies: Vec<String> = b.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut req = axum::http::Request::get(path).header("cookie", cookies.join("; "));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    b.send(req.body(axum::body::Body::empty()).unwrap()).await
}

/// A form POST of `fields` to `path` with these headers (and this browser's cookies).
async fn post_with(
    b: &mut crate::support::Browser,
    path: &str,
    headers: &[(&str, &str)],
    fields: &[(&str, &str)],
) -> crate::support::Page {
    let cookies: Vec<String> = b.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut req = axum::http::Request::post(path)
        .header("cookie", cookies.join("; "))
        .header("content-type", "application/x-www-form-urlencoded");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = serde_urlencoded::to_string(fields).unwrap();
    b.send(req.body(axum::body::Body::from(body)).unwrap())
        .await
}

fn sets_session(page: &crate::support::Page) -> bool {
    page.headers
        .get_all("set-cookie")
        .iter()
        .any(|c| c.to_str().unwrap().starts_with("steward_session="))
}

/// Finding 1 of the security review: through a tunnel (loopback connection, forwarding
/// headers, the tunnel's Host) or under a foreign Host, the development sign-in does not exist
/// — 404 for the page and the form — and no session cookie is ever set.
#[tokio::test]
async fn dev_sign_in_is_404_through_a_tunnel_or_a_foreign_host_and_sets_no_session() {
    let app = TestApp::new().await;
    // A real form token from a local visit, so only the gate can refuse.
    let mut b = app.anonymous();
    let token = csrf_in(&b.get("/app/sign-in").await.body);
    let tunnels: [&[(&str, &str)]; 7] = [
        &[
            ("host", "steward.test"),
            ("cf-connecting-ip", "203.0.113.9"),
            ("x-forwarded-for", "203.0.113.9"),
        ],
        &[("host", "steward.test")],
        &[
            ("host", "127.0.0.1:8080"),
            ("x-forwarded-for", "203.0.113.9"),
        ],
        &[
            ("host", "localhost:8080"),
            ("x-forwarded-host", "random-words.trycloudflare.com"),
        ],
        &[
            ("host", "127.0.0.1:8080"),
            ("forwarded", "for=203.0.113.9;proto=https"),
        ],
        &[("host", "127.0.0.1:8080"), ("x-real-ip", "203.0.113.9")],
        &[
            ("host", "127.0.0.1:8080"),
            ("true-client-ip", "203.0.113.9"),
        ],
    ];
    for headers in tunnels {
        let page = get_with(&mut b, "/app/sign-in", headers).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{headers:?}");
        assert!(
            page.body
                .contains("only available from a browser on the machine")
        );
        let post = post_with(
            &mut b,
            "/app/sign-in",
            headers,
            &[("csrf", &token), ("name", "Dana Lee")],
        )
        .await;
        assert_eq!(post.status, StatusCode::NOT_FOUND, "{headers:?}");
        assert!(!sets_session(&post), "{headers:?}");
    }
    // A foreign Host (DNS rebinding) is refused by the whole web app before anything runs.
    for host in ["attacker.example:8080", "rebind.attacker.example"] {
        let page = get_with(&mut b, "/app/sign-in", &[("host", host)]).await;
        assert_eq!(page.status, StatusCode::MISDIRECTED_REQUEST, "{host}");
        let post = post_with(
            &mut b,
            "/app/sign-in",
            &[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://rebind.attacker.example"),
            ],
            &[("csrf", &token), ("name", "Dana Lee")],
        )
        .await;
        assert_eq!(post.status, StatusCode::MISDIRECTED_REQUEST);
        assert!(!sets_session(&post));
    }
    let dana = steward_harness::UserId::parse("dev-dana-lee").unwrap();
    assert!(
        steward_harness::accounts::get_profile(app.table.as_ref(), &dana)
            .await
            .is_err(),
        "no account was made"
    );
    // Straight from this machine it works.
    let page = post_with(
        &mut b,
        "/app/sign-in",
        &[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ],
        &[("csrf", &token), ("name", "Dana Lee")],
    )
    .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    assert!(sets_session(&page));
}

/// Finding 1: the whole web app answers only for its own hosts (421 for another, with a
/// sentence); the public URL's host works, so public pages work through the tunnel.
#[tokio::test]
async fn the_web_app_refuses_a_foreign_host_with_421() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Grace").await;
    for path in ["/app", "/api/chat/messages", "/e/anything", "/"] {
        let page = get_with(&mut b, path, &[("host", "evil.example.com")]).await;
        assert_eq!(page.status, StatusCode::MISDIRECTED_REQUEST, "{path}");
        assert!(
            page.body.contains("does not answer for that Host"),
            "{}",
            page.body
        );
    }
    let page = get_with(&mut b, "/app", &[("host", "steward.test")]).await;
    assert_eq!(page.status, StatusCode::OK);
    let page = get_with(
        &mut b,
        "/e/anything",
        &[("host", "steward.test"), ("x-forwarded-for", "203.0.113.1")],
    )
    .await;
    assert_eq!(
        page.status,
        StatusCode::NOT_FOUND,
        "public pages pass through a tunnel"
    );
}

/// Finding 1: typing an existing account's user id (from `steward user create` or OpenID
/// Connect) signs in as a new development account of that name, never as that account.
#[tokio::test]
async fn typing_a_user_id_never_signs_in_as_that_account() {
    let app = TestApp::new().await;
    let made = steward_harness::accounts::create_account(
        app.table.as_ref(),
        app.clock.as_ref(),
        "Alice Organiser",
        None,
    )
    .await
    .unwrap();
    let oidc = steward_harness::UserId::parse("oidc-0123456789abcdef").unwrap();
    steward_harness::accounts::create_account_with_id(
        app.table.as_ref(),
        app.clock.as_ref(),
        oidc.clone(),
        "Olga OIDC",
        None,
    )
    .await
    .unwrap();
    for typed in [made.user.as_str(), oidc.as_str()] {
        let mut b = app.anonymous();
        let token = csrf_in(&b.get("/app/sign-in").await.body);
        let done = b
            .post_form_raw("/app/sign-in", &[("csrf", &token), ("name", typed)])
            .await;
        assert_eq!(done.status, StatusCode::SEE_OTHER);
        let settings = b.get("/app/settings").await;
        assert!(!settings.body.contains("Alice Organiser"), "{typed}");
        assert!(!settings.body.contains("Olga OIDC"), "{typed}");
    }
}

/// Finding 16: a new session id at every sign-in (the old one ends), and "sign out
/// everywhere" ends every session of the account.
#[tokio::test]
async fn sessions_rotate_at_sign_in_and_sign_out_everywhere_ends_them_all() {
    let app = TestApp::new().await;
    let mut b = app.anonymous();
    let token = csrf_in(&b.get("/app/sign-in").await.body);
    b.post_form_raw("/app/sign-in", &[("csrf", &token), ("name", "Rosa")])
        .await;
    let first = b
        .cookies
        .iter()
        .find(|(k, _)| k == "steward_session")
        .unwrap()
        .1
        .clone();
    b.post_form_raw("/app/sign-in", &[("csrf", &token), ("name", "Rosa")])
        .await;
    let second = b
        .cookies
        .iter()
        .find(|(k, _)| k == "steward_session")
        .unwrap()
        .1
        .clone();
    assert_ne!(first, second);
    let mut stale = app.anonymous();
    stale.cookies = vec![("steward_session".into(), first)];
    assert_eq!(
        stale.get("/app").await.status,
        StatusCode::SEE_OTHER,
        "the old id ended"
    );

    // Two browsers of one account, and another account.
    let mut laptop = app.signed_in("Sam").await;
    let mut phone = app.anonymous();
    let (cookie, s) = steward_webapp::session::start(
        app.table.as_ref(),
        app.clock.as_ref(),
        laptop.user().clone(),
    )
    .await
    .unwrap();
    phone.cookies = vec![("steward_session".into(), cookie)];
    phone.csrf = Some(s.csrf.expose().to_owned());
    let mut other = app.signed_in("Tia").await;
    let settings = laptop.get("/app/settings").await;
    assert!(settings.body.contains("Sign out everywhere"));
    let done = phone.post_form("/app/sign-out-everywhere", &[]).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    assert_eq!(laptop.get("/app").await.status, StatusCode::SEE_OTHER);
    assert_eq!(phone.get("/app").await.status, StatusCode::SEE_OTHER);
    assert_eq!(other.get("/app").await.status, StatusCode::OK);
}

/// Finding 19: pages with personal data are never stored by a cache.
#[tokio::test]
async fn personal_pages_are_no_store() {
    let app = TestApp::new().await;
    let mut b = app.signed_in("Nora").await;
    for path in ["/app", "/app/settings", "/api/chat/messages"] {
        let page = b.get(path).await;
        assert_eq!(
            page.headers
                .get("cache-control")
                .map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "{path}"
        );
    }
}
