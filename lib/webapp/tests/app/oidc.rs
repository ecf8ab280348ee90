//! OpenID Connect sign-in against a fake issuer on loopback: discovery, a key set from fixed
//! RSA test keys, and a token endpoint answering with ID tokens these tests sign.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use sha2::{Digest, Sha256};
use steward_harness::{UserId, accounts};
use steward_webapp::SignInMode;
use steward_webapp::auth::oidc::{CALLBACK_PATH, START_PATH};
use steward_webapp::oidc::{ClientSecret, DEFAULT_SCOPES, OidcSettings};
use steward_webapp::session;

use crate::support::{Browser, Page, TestApp, test_config};

/// Test key A: an RSA private key (PKCS#1 DER, standard base64), made for these tests only.
const KEY_A_DER_B64: &str = concat!(
    "MIIEowIBAAKCAQEAw/yb8A1IcAJEcZZwHty0g0VCJZW2FTsIXdgIHe3J4RKeEbokWY55Xpy8K+uXsE9IKt6jc7JmyW",
    "3wtEzCSYxKt+87gf3/ADp5KhQxrfDBBFKQ7qlbkIHtwbz7xm3Q/fCe3p2BclZ4ZTQVDa0l6xxXnlItX/AhoHn3OgCZ",
    "65osNtxk+tqvVAtM48vw2jEvGomJH62Dz9Dsn3dwli32OGkjUAqpeG4lCnbyjGat2Jl/fCKyr7k9+MbV8Qxnwn/Xqj",
    "HugmxaNV/av21Yw51J3Aq279FVYUVg1gPGetB9K10w3Px7o+o3UCBoCG5YRxzKeEyyBXpFr/ZEdFThF7h7SvRogwID",
    "AQABAoIBAA0bdNZeHQ0YqbkrBX6a5hutYxoeZBoRY6LbEtflkk3SL+4hk9LFe4p/Uvpg/DkXZE0xrJ7NPKCWELYOOC",
    "QxFMIuZr1v3kEGqBnPVe87Hb2LRBQiEXSdq+f8Gp6Ps514HTfoMsMR02V5UTsj7FhIAfgdqNk0txsDbSxc4+5k1jYo",
    "80OZq98OgyJcb9Nw72WAMFUvB01512S2XLe+YlGOJJZFND6Rsc6tsr9hkr6odPengnWaDlBZPZYY0AVG8RedYwvp6X",
    "zoRSI/r5TWVuLqVCxoZDmcw+2mkIpvzS/bkjOdhWtbtm9oYjzmsXDgI5DaFJP8BujtOe4xcyZ0xfh0mbECgYEA5Zmm",
    "K0hB5bev2UZ3DokrhszBdGzzGgg0qsiVE/1+peY3nswODuLaBbmeJYzHcTNARjQOONnbv2XkKsYw+RWdOtatZAQqJr",
    "UU9exnj2c7lz/WJL4vaXhxQ5qP+xvD8Z1SEp0YNNeBv9cuANTh8DGTP4C5IfbfljG8Fb2jOyyA54kCgYEA2oWJ0lP0",
    "uu+f6ChFcETCxY7xo4lZPsmfUsrnjhGJWZXgNjM95WvNq6LP4mfJMyIh5/MytJyULniPb/hWrKr7OgyHkWQ2sZ2K6y",
    "IXyAzjvIbjQ617n0NCmT74C901BDAWSW9roiZzdMb0KIMEcxIes2fOsj1ul6HHYipeWgnbwKsCgYEAnLg6QoT55hFx",
    "yL9eeN+MhGCzFANiFLzRJlnv2EtJ7XetM4lZdzPFWe8PUdY8NLqk/sZ9hrS+WHD2Q3Qw7XShdA4hIInvM6ia/Bo3vh",
    "zbAiyiwUXIGxgJR/nymZakMwINiYMNiNQpTodUcWDeMBPGzKvSsqpOh7i/B6AAEV4ZRvECgYBzdt41McF9yUIgRK80",
    "PFECXJ6Xv+pVP+ocsDQcIG4H1SbM3NSW1hit2XCo/BgXGbD6w8mGH7o4t+Fq07jQsePfb2Fu1JoFze3qgnA4d38aTd",
    "fmGdPZeovFN72PX0o1NUeBdAtWeaTGDp5SjbAbMXbhazePfOBj5MratvJ19wGT0wKBgHcDotWfFBira2Sp569yw0Ub",
    "x743xHNMFjsz73KDuMDc1wpxiIOSs6wumWTYnAOofIZ78tyOSOM2vQrCEqtzIEfD/ruPhbceDfTTcAiljs64T11CW1",
    "Fd16AFvxpvPBCalnwaOSMQ5+aq5iFoUXve+GeZhSRGB5Z9AIXrcXwcdkAF",
);
/// Test key A's public modulus (base64url); its exponent is 65537 (`AQAB`).
const KEY_A_N: &str = concat!(
    "w_yb8A1IcAJEcZZwHty0g0VCJZW2FTsIXdgIHe3J4RKeEbokWY55Xpy8K-uXsE9IKt6jc7JmyW3wtEzCSYxKt-",
    "87gf3_ADp5KhQxrfDBBFKQ7qlbkIHtwbz7xm3Q_fCe3p2BclZ4ZTQVDa0l6xxXnlItX_AhoHn3OgCZ65osNtxk-tqv",
    "VAtM48vw2jEvGomJH62Dz9Dsn3dwli32OGkjUAqpeG4lCnbyjGat2Jl_fCKyr7k9-",
    "MbV8Qxnwn_XqjHugmxaNV_av21Yw51J3Aq279FVYUVg1gPGetB9K10w3Px7o-",
    "o3UCBoCG5YRxzKeEyyBXpFr_ZEdFThF7h7SvRogw",
);
/// Test key B: an RSA private key (PKCS#1 DER, standard base64), made for these tests only.
const KEY_B_DER_B64: &str = concat!(
    "MIIEowIBAAKCAQEAul0Knp0QM/5E9yoA9Xil9hq3+NF+S1GevaKOV36E/57xgv7Xf6HcwCvXLHMtKqB7bXXe7nftDc",
    "Pdfk4HD+TXX9wAivxZ5hXxomhQgpo8VBfzis2QPsAVbFjJTqbXHSSia8+GnG0C+UuM4NC2I74ABY5mEkAsAIRSNDnP",
    "ZScXbSzAE2cb5gYWW3klitoXa2xHTyYhObkEIuQY6eoLqecnsMjR2htX+gWaxawkS6gCIz2IV5PYpxHDj2qChZ++sf",
    "KfVmcC21lqviBNNFUFAE+8UCa06+CMko6Nk6xWQRu5bbozE6ou++WHMoG9RTzjrp6hIWFJFXBcu60vlagNZz1RJQID",
    "AQABAoIBAEuYYi5k16W/hoob57eq8Ocbf3TWxbwXp6SUw9iJ4bku6BiS9yc2qSzqm6XUMoYQAwErxvpEe0wSH06UqB",
    "iyYwrnWvEF3BGQ5StT1RSlK8OQ06GCMPjDQe1pNn9I/gk8SwYgcCITthkZpFOtVbS55ZhbYtwUW8T55753lMEbUk1e",
    "H9c4bOpJbp3649n2QUNhazk5lsjY3iKVqnl/J3yyob+pUMg/bHXatEJfeMwyjLYgnQFfXG3iCj8bzPjkWlTc45d/Kz",
    "cZQmBsmLv9TYib3wceohUdDHXMsfQHbRKLDRP/9Ek3HGuxI/YLSz/kt8/l9kVDkKC+kFtXEiAXhS11biECgYEA7Zev",
    "GUAMa4q8IXg+T+Y4hv7kS/qPrWdy0+FWvHpuhuHYWDptOt4+9gJ7KZd0kBTGDmQZan3hHlXRNKpKBGTkXhhq8oNmag",
    "tn7dN+ZMz6bIzDlfwq5mXcdW/LfbXOhxxAnvcm0+6liosl7p2uDTPRMr7SpZOQx7CcmVWXAwcZGC8CgYEAyM1M4vWS",
    "gOl0CuHmUmfTFLj7zftLKywJX2OK5xGjA7RBIWY1ClZVYE2YGpAJms2z6/MNDm2dgAESNz09C1WJlvGwiiias7hamu",
    "xzncFhGh2Ljf2CBJjFIBFz5wIr16cX97YYho08I2mA7XB5u2UFnDEoWfiFW/BqNRzEVg6IQusCgYBsXySyCsHfh796",
    "MMOTZDpicP8nHNnOSYJZ3M3YWKvzgC5TSAssr9TeF5GgDgJP+fnA9K2XImW9lX1AXXA3guGbfd3CUmczdZJpK2/agJ",
    "i1TJul3QigYNPnCSAzbesPO7bKC4e9YXxGrmOV7HxIb1s7n0ir15xRSWCUnDKuYd1zZwKBgBDbm37aWwhTkRhwyqNU",
    "cBYnSYyLck4Xjlnhw4GOq37eHTGuoPlTMiu5l/Fy8jt61YYTi58QeM6MSHk2vO88qSZw9/9BVWuNKJ4lB7fQylQk8t",
    "hi1g2IvdPpYy+bsQ6TyqFTOk/hf5EBhH9ql+2xl3z7a4XSJXAIiQIYfiszYSEtAoGBAOCNiacGVnEnn+ZKypmT2dUI",
    "7FwTCl9UIwTNa+S2+zUZIt1qV2IZVA0cSjGxa1IBjeB5ovs+tH/BmjQXmLH3h5un3XepgE6WKp9zlhEa+VoVRLqNfl",
    "eNwBL4gQ7xn7VchzbNdQXM00LXuqAMP2u3kKCt5DoeJ/HCdayTUu65j35F",
);

/// The client id the tests register.
const CLIENT_ID: &str = "steward-client";
/// The client secret of the confidential client.
const CLIENT_SECRET: &str = "client-secret-value";
/// Where the issuer sends people back to.
const REDIRECT_URL: &str = "https://steward.test/app/auth/callback";
/// The test app's "now" (see `TestApp::with_config`), in epoch seconds.
const NOW_S: i64 = 1_780_304_400;

/// One token request: its `Authorization` header and its form.
type TokenRequest = (Option<String>, HashMap<String, String>);

/// What the fake issuer has seen and will answer.
#[derive(Default)]
struct Seen {
    /// The ID token the token endpoint answers with next.
    next_id_token: Mutex<Option<String>>,
    /// Each token request: its `Authorization` header and its form.
    token_requests: Mutex<Vec<TokenRequest>>,
    discovery_fetches: AtomicUsize,
    jwks_fetches: AtomicUsize,
}

/// A fake issuer on 127.0.0.1.
struct FakeIssuer {
    issuer: String,
    seen: Arc<Seen>,
}

#[derive(Clone)]
struct IssuerState {
    issuer: String,
    seen: Arc<Seen>,
}

async fn discovery(State(s): State<IssuerState>) -> Json<serde_json::Value> {
    s.seen.discovery_fetches.fetch_add(1, Ordering::SeqCst);
    Json(serde_json::json!({
        "issuer": s.issuer,
        "authorization_endpoint": format!("{}/authorize", s.issuer),
        "token_endpoint": format!("{}/token", s.issuer),
        "jwks_uri": format!("{}/jwks", s.issuer),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"]
    }))
}

async fn jwks(State(s): State<IssuerState>) -> Json<serde_json::Value> {
    s.seen.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    Json(serde_json::json!({ "keys": [
        { "kty": "RSA", "kid": "key-a", "use": "sig", "alg": "RS256", "n": KEY_A_N, "e": "AQAB" },
        // A key of a kind Steward does not use must not spoil the set.
        { "kty": "EC", "kid": "enc-1", "use": "enc", "crv": "P-256", "x": "AA", "y": "AA" }
    ]}))
}

async fn token(
    State(s): State<IssuerState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    s.seen.token_requests.lock().unwrap().push((auth, form));
    match s.seen.next_id_token.lock().unwrap().take() {
        Some(id_token) => Json(serde_json::json!({
            "access_token": "access-token-not-used",
            "token_type": "Bearer",
            "expires_in": 3600,
            "id_token": id_token
        }))
        .into_response(),
        None => (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({ "error": "invalid_grant" })),
        )
            .into_response(),
    }
}

impl FakeIssuer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        // A path under the host, like Cognito's `https://cognito-idp.<region>.amazonaws.com/<pool>`.
        let issuer = format!("http://{}/pool-1", listener.local_addr().unwrap());
        let seen = Arc::new(Seen::default());
        let app = Router::new()
            .route("/pool-1/.well-known/openid-configuration", get(discovery))
            .route("/pool-1/jwks", get(jwks))
            .route("/pool-1/token", post(token))
            .with_state(IssuerState {
                issuer: issuer.clone(),
                seen: seen.clone(),
            });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { issuer, seen }
    }

    fn settings(&self, secret: bool) -> OidcSettings {
        OidcSettings {
            issuer: self.issuer.clone(),
            client_id: CLIENT_ID.into(),
            client_secret: secret.then(|| ClientSecret::new(CLIENT_SECRET)),
            redirect_url: REDIRECT_URL.into(),
            scopes: DEFAULT_SCOPES.into(),
        }
    }

    async fn app(&self) -> TestApp {
        self.app_with(true).await
    }

    async fn app_with(&self, secret: bool) -> TestApp {
        let mut config = test_config();
        config.sign_in = SignInMode::Oidc(self.settings(secret));
        config.secure_cookies = true;
        TestApp::with_config(config).await
    }

    /// Claims the issuer would put in a good ID token for `sub` answering `nonce`.
    fn claims(&self, sub: &str, nonce: &str) -> serde_json::Value {
        serde_json::json!({
            "iss": self.issuer,
            "sub": sub,
            "aud": CLIENT_ID,
            "exp": NOW_S + 300,
            "iat": NOW_S - 2,
            "nonce": nonce,
            "name": "Ada\u{0007} Lovelace ",
            "email": "ada@example.org",
        })
    }

    fn will_answer(&self, id_token: String) {
        *self.seen.next_id_token.lock().unwrap() = Some(id_token);
    }

    fn token_requests(&self) -> Vec<TokenRequest> {
        self.seen.token_requests.lock().unwrap().clone()
    }
}

fn key(der_b64: &str) -> EncodingKey {
    let der = base64::engine::general_purpose::STANDARD
        .decode(der_b64)
        .unwrap();
    EncodingKey::from_rsa_der(&der)
}

/// `claims` signed with `key` under key id `kid`.
fn sign(claims: &serde_json::Value, key: &EncodingKey, kid: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn sign_a(claims: &serde_json::Value) -> String {
    sign(claims, &key(KEY_A_DER_B64), "key-a")
}

/// The `Set-Cookie` header setting `name`, if any.
fn set_cookie(page: &Page, name: &str) -> Option<String> {
    page.headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with(&format!("{name}=")))
}

/// The query of the redirect to the issuer.
struct Authorize {
    url: String,
    query: HashMap<String, String>,
}

impl Authorize {
    fn get(&self, k: &str) -> &str {
        self.query
            .get(k)
            .unwrap_or_else(|| panic!("no {k} in {}", self.url))
    }
}

async fn start(b: &mut Browser) -> Authorize {
    let page = b.get(START_PATH).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    let url = page.location().unwrap().to_owned();
    let query: HashMap<String, String> =
        serde_urlencoded::from_str(url.split_once('?').unwrap().1).unwrap();
    Authorize { url, query }
}

async fn come_back(b: &mut Browser, code: &str, state: &str) -> Page {
    let q = serde_urlencoded::to_string([("code", code), ("state", state)]).unwrap();
    b.get(&format!("{CALLBACK_PATH}?{q}")).await
}

/// Signs in through the issuer as `sub`; returns the callback's answer.
async fn sign_in(issuer: &FakeIssuer, b: &mut Browser, sub: &str) -> Page {
    let auth = start(b).await;
    issuer.will_answer(sign_a(&issuer.claims(sub, auth.get("nonce"))));
    come_back(b, "the-code", auth.get("state")).await
}

async fn session_user(app: &TestApp, b: &Browser) -> Option<UserId> {
    let (_, value) = b
        .cookies
        .iter()
        .find(|(k, _)| k == session::SESSION_COOKIE)?;
    session::load(app.table.as_ref(), app.clock.as_ref(), value)
        .await
        .unwrap()
        .map(|s| s.user)
}

#[tokio::test]
async fn start_redirects_to_the_issuer_with_state_nonce_and_pkce() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app().await;
    // Building the app fetched nothing: a cold start does not depend on the issuer.
    assert_eq!(issuer.seen.discovery_fetches.load(Ordering::SeqCst), 0);

    let mut b = app.anonymous();
    let page = b.get(START_PATH).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    let flow = set_cookie(&page, "steward_oidc").unwrap();
    for attr in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/app/auth"] {
        assert!(flow.contains(attr), "{attr} missing: {flow}");
    }
    let url = page.location().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("{}/authorize?", issuer.issuer)),
        "{url}"
    );
    let query: HashMap<String, String> =
        serde_urlencoded::from_str(url.split_once('?').unwrap().1).unwrap();
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], CLIENT_ID);
    assert_eq!(query["redirect_uri"], REDIRECT_URL);
    assert_eq!(query["scope"], "openid email profile");
    assert_eq!(query["code_challenge_method"], "S256");
    for k in ["state", "nonce", "code_challenge"] {
        assert!(query[k].len() >= 43, "{k} is too short: {url}");
    }
    assert_ne!(query["state"], query["nonce"]);

    // A second start makes fresh values, and reuses the cached discovery document.
    let again = start(&mut app.anonymous()).await;
    assert_ne!(again.get("state"), query["state"]);
    assert_eq!(issuer.seen.discovery_fetches.load(Ordering::SeqCst), 1);

    // The sign-in page offers the issuer, not a name field.
    let sign_in_page = app.anonymous().get("/app/sign-in").await;
    assert!(
        sign_in_page.body.contains(START_PATH),
        "{}",
        sign_in_page.body
    );
    assert!(!sign_in_page.body.contains("name=\"name\""));
}

#[tokio::test]
async fn the_callback_signs_in_creating_the_account_once() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app().await;
    let mut b = app.anonymous();
    let auth = start(&mut b).await;
    issuer.will_answer(sign_a(&issuer.claims("sub-ada", auth.get("nonce"))));
    let done = come_back(&mut b, "code-1", auth.get("state")).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(done.location(), Some("/app"));

    let cookie = set_cookie(&done, session::SESSION_COOKIE).unwrap();
    for attr in ["HttpOnly", "Secure", "SameSite=Lax"] {
        assert!(cookie.contains(attr), "{attr} missing: {cookie}");
    }
    // The sign-in in progress is used up.
    let flow = set_cookie(&done, "steward_oidc").unwrap();
    assert!(flow.contains("Max-Age=0"), "{flow}");

    // The code went to the token endpoint with the PKCE verifier and the client's credentials.
    let requests = issuer.token_requests();
    assert_eq!(requests.len(), 1);
    let (authz, form) = &requests[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], "code-1");
    assert_eq!(form["redirect_uri"], REDIRECT_URL);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(form["code_verifier"].as_bytes()));
    assert_eq!(challenge, auth.get("code_challenge"));
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    assert_eq!(authz.as_deref(), Some(format!("Basic {basic}").as_str()));

    // The account exists, named from the token (cleaned), and the session is theirs.
    let user = session_user(&app, &b).await.unwrap();
    let profile = accounts::get_profile(app.table.as_ref(), &user)
        .await
        .unwrap();
    assert_eq!(profile.name, "Ada Lovelace");

    // Signing in again, from another browser, finds the same account.
    let mut other = app.anonymous();
    let again = sign_in(&issuer, &mut other, "sub-ada").await;
    assert_eq!(again.status, StatusCode::SEE_OTHER, "{}", again.body);
    assert_eq!(session_user(&app, &other).await.as_ref(), Some(&user));

    // Someone else gets their own account.
    let mut third = app.anonymous();
    sign_in(&issuer, &mut third, "sub-grace").await;
    let grace = session_user(&app, &third).await.unwrap();
    assert_ne!(grace, user);

    // Keys and endpoints were fetched once for all three sign-ins.
    assert_eq!(issuer.seen.discovery_fetches.load(Ordering::SeqCst), 1);
    assert_eq!(issuer.seen.jwks_fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_public_client_sends_no_secret() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app_with(false).await;
    let mut b = app.anonymous();
    let done = sign_in(&issuer, &mut b, "sub-1").await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let requests = issuer.token_requests();
    let (authz, form) = &requests[0];
    assert_eq!(authz, &None);
    assert_eq!(form["client_id"], CLIENT_ID);
    assert!(form.contains_key("code_verifier"));
}

#[tokio::test]
async fn a_wrong_or_missing_state_is_refused() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app().await;

    let mut b = app.anonymous();
    let auth = start(&mut b).await;
    issuer.will_answer(sign_a(&issuer.claims("sub-1", auth.get("nonce"))));
    let page = come_back(&mut b, "code", &"x".repeat(43)).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.body.contains("Start again"), "{}", page.body);
    assert!(set_cookie(&page, session::SESSION_COOKIE).is_none());

    // The right state in a browser that did not start the sign-in (a forged callback link).
    let mut b = app.anonymous();
    let auth = start(&mut b).await;
    let mut victim = app.anonymous();
    let page = come_back(&mut victim, "code", auth.get("state")).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(set_cookie(&page, session::SESSION_COOKIE).is_none());

    // A sign-in that took longer than ten minutes.
    let auth = start(&mut b).await;
    app.clock.advance_millis(11 * 60 * 1000);
    let page = come_back(&mut b, "code", auth.get("state")).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);

    // No code was ever exchanged.
    assert!(issuer.token_requests().is_empty());
}

#[tokio::test]
async fn bad_id_tokens_are_refused_without_a_session() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app().await;
    type Spoil = fn(&mut serde_json::Value);
    let cases: [(&str, Spoil, bool); 6] = [
        ("bad signature", |_| {}, true),
        (
            "wrong audience",
            |c| c["aud"] = "someone-else".into(),
            false,
        ),
        (
            "several audiences, azp another",
            |c| {
                c["aud"] = serde_json::json!([CLIENT_ID, "other"]);
                c["azp"] = "other".into();
            },
            false,
        ),
        (
            "wrong issuer",
            |c| c["iss"] = "https://evil.example".into(),
            false,
        ),
        ("expired", |c| c["exp"] = (NOW_S - 3600).into(), false),
        ("wrong nonce", |c| c["nonce"] = "not-this-one".into(), false),
    ];
    for (what, spoil, other_key) in cases {
        let mut b = app.anonymous();
        let auth = start(&mut b).await;
        let mut claims = issuer.claims(&format!("sub-{what}"), auth.get("nonce"));
        spoil(&mut claims);
        let token = if other_key {
            // Signed by a key the issuer never published, claiming the issuer's key id.
            sign(&claims, &key(KEY_B_DER_B64), "key-a")
        } else {
            sign_a(&claims)
        };
        issuer.will_answer(token);
        let page = come_back(&mut b, "code", auth.get("state")).await;
        assert_eq!(
            page.status,
            StatusCode::UNAUTHORIZED,
            "{what}: {}",
            page.body
        );
        assert!(
            page.body.contains("could not verify"),
            "{what}: {}",
            page.body
        );
        assert!(
            set_cookie(&page, session::SESSION_COOKIE).is_none(),
            "{what}"
        );
        assert!(session_user(&app, &b).await.is_none(), "{what}");
        let ident =
            steward_webapp::oidc::identity_of(&issuer.issuer, &format!("sub-{what}")).unwrap();
        assert_eq!(
            steward_harness::identity::lookup(app.table.as_ref(), &ident)
                .await
                .unwrap(),
            None,
            "{what}: no account may be made"
        );
    }
}

#[tokio::test]
async fn an_unknown_key_id_refetches_the_keys_at_most_once_a_minute() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app().await;
    let mut b = app.anonymous();
    assert_eq!(
        sign_in(&issuer, &mut b, "sub-1").await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(issuer.seen.jwks_fetches.load(Ordering::SeqCst), 1);

    let try_kid = |kid: &'static str| {
        let issuer = &issuer;
        let app = &app;
        async move {
            let mut b = app.anonymous();
            let auth = start(&mut b).await;
            let claims = issuer.claims("sub-1", auth.get("nonce"));
            issuer.will_answer(sign(&claims, &key(KEY_A_DER_B64), kid));
            come_back(&mut b, "code", auth.get("state")).await.status
        }
    };
    // Less than a minute after the first fetch: the cache is trusted.
    assert_eq!(try_kid("rotated").await, StatusCode::UNAUTHORIZED);
    assert_eq!(issuer.seen.jwks_fetches.load(Ordering::SeqCst), 1);
    // A minute later an unknown key id fetches the set again — once.
    app.clock.advance_millis(61_000);
    assert_eq!(try_kid("rotated").await, StatusCode::UNAUTHORIZED);
    assert_eq!(issuer.seen.jwks_fetches.load(Ordering::SeqCst), 2);
    assert_eq!(try_kid("rotated-again").await, StatusCode::UNAUTHORIZED);
    assert_eq!(issuer.seen.jwks_fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_issuers_refusals_and_absence_are_readable_pages() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app().await;
    let mut b = app.anonymous();
    let auth = start(&mut b).await;
    let q = serde_urlencoded::to_string([
        ("error", "access_denied"),
        ("error_description", "<b>User cancelled</b>"),
        ("state", auth.get("state")),
    ])
    .unwrap();
    let page = b.get(&format!("{CALLBACK_PATH}?{q}")).await;
    assert_eq!(page.status, StatusCode::UNAUTHORIZED);
    assert!(page.body.contains("cancelled or refused"), "{}", page.body);
    assert!(
        !page.body.contains("<b>"),
        "the issuer's text is not echoed"
    );
    assert!(set_cookie(&page, session::SESSION_COOKIE).is_none());

    // The token endpoint refusing the code.
    let mut b = app.anonymous();
    let auth = start(&mut b).await;
    let page = come_back(&mut b, "stale-code", auth.get("state")).await;
    assert_eq!(page.status, StatusCode::UNAUTHORIZED, "{}", page.body);

    // An issuer that cannot be reached: a readable 502, not a crash.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut config = test_config();
    config.sign_in = SignInMode::Oidc(OidcSettings {
        issuer: gone,
        ..issuer.settings(true)
    });
    let app = TestApp::with_config(config).await;
    let page = app.anonymous().get(START_PATH).await;
    assert_eq!(page.status, StatusCode::BAD_GATEWAY);
    assert!(page.body.contains("could not be reached"), "{}", page.body);
}

#[tokio::test]
async fn the_development_sign_in_is_not_served_in_oidc_mode() {
    let issuer = FakeIssuer::start().await;
    let app = issuer.app().await;
    let mut b = app.anonymous();
    let form = b.get("/app/sign-in").await;
    assert_eq!(form.status, StatusCode::OK);
    // No name form is shown; post one anyway with the pre-sign-in form token the page set.
    assert!(!form.body.contains("name=\"name\""));
    let token = b
        .cookies
        .iter()
        .find(|(k, _)| k == "steward_form")
        .map(|(_, v)| v.clone())
        .unwrap();
    let page = b
        .post_form_raw("/app/sign-in", &[("csrf", &token), ("name", "Mallory")])
        .await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(set_cookie(&page, session::SESSION_COOKIE).is_none());
}

#[tokio::test]
async fn oidc_routes_are_absent_in_development_mode() {
    let app = TestApp::new().await;
    assert_eq!(
        app.anonymous().get(START_PATH).await.status,
        StatusCode::NOT_FOUND
    );
    let page = app
        .anonymous()
        .get(&format!("{CALLBACK_PATH}?code=c&state=s"))
        .await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
}
