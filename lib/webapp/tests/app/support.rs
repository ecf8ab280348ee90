//! A web app on an in-memory SQLite table with a recording queue, and a `Browser` that keeps a
//! session cookie and sends the CSRF token with its form posts.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use steward_edge::client_address::TrustedProxy;
use steward_edge::hosts::HostPattern;
use steward_events::EventsConfig;
use steward_harness::{UserId, accounts};
use steward_store::{ManualClock, QueueError, SqliteTable, Table, TurnQueue};
use steward_webapp::form_stamp::FILL_SECS_MIN;
use steward_webapp::{SignInMode, session};
use steward_webapp::{WebConfig, WebState, app};
use tower::ServiceExt;

/// What was enqueued: (group, dedupe id, body).
#[derive(Debug, Default)]
pub struct RecordingQueue(pub Mutex<Vec<(String, String, String)>>);

#[async_trait]
impl TurnQueue for RecordingQueue {
    async fn enqueue(&self, group: &str, dedupe_id: &str, body: &str) -> Result<(), QueueError> {
        self.0
            .lock()
            .unwrap()
            .push((group.to_owned(), dedupe_id.to_owned(), body.to_owned()));
        Ok(())
    }
}

/// The configuration tests use unless they change it.
pub fn test_config() -> WebConfig {
    WebConfig {
        sign_in: SignInMode::Development,
        secure_cookies: false,
        public_url: Some("https://steward.test".into()),
        whatsapp_number: Some("15550001111".into()),
        telegram_bot: Some("steward_test_bot".into()),
        model_label: "scripted (test)".into(),
        registrations_per_minute: 3,
        registrations_per_event_per_hour: 100,
        allowed_hosts: ["localhost", "127.0.0.1", "::1", "steward.test"]
            .iter()
            .map(|h| HostPattern::parse(h).unwrap())
            .collect(),
        trusted_proxy: TrustedProxy::parse("X-Forwarded-For"),
        budget: steward_harness::budget::Budget {
            tokens: Some(10_000),
            usd_micros: None,
        },
        events: EventsConfig::with_public_base_url("https://steward.test"),
    }
}

pub struct TestApp {
    pub table: Arc<dyn Table>,
    pub clock: Arc<ManualClock>,
    pub queue: Arc<RecordingQueue>,
    pub state: WebState,
    pub router: Router,
}

impl TestApp {
    pub async fn new() -> Self {
        Self::with_config(test_config()).await
    }

    pub async fn with_config(config: WebConfig) -> Self {
        // 2026-06-01T09:00:00Z: a fixed "now" so dates in pages are predictable.
        let clock = Arc::new(ManualClock::at_millis(1_780_304_400_000));
        let table: Arc<dyn Table> =
            Arc::new(SqliteTable::in_memory_with_clock(clock.clone()).unwrap());
        let queue = Arc::new(RecordingQueue::default());
        let state = WebState::new(table.clone(), clock.clone(), queue.clone(), config);
        let router = app::routes(state.clone());
        Self {
            table,
            clock,
            queue,
            state,
            router,
        }
    }

    /// A browser with no session.
    pub fn anonymous(&self) -> Browser {
        Browser {
            router: self.router.clone(),
            clock: self.clock.clone(),
            cookies: Vec::new(),
            csrf: None,
            user: None,
        }
    }

    /// A browser signed in as a new account named `name` (user id `name` lowercased).
    pub async fn signed_in(&self, name: &str) -> Browser {
        let user = UserId::parse(&name.to_lowercase()).unwrap();
        accounts::create_account_with_id(
            self.table.as_ref(),
            self.clock.as_ref(),
            user.clone(),
            name,
            Some("Europe/Berlin"),
        )
        .await
        .unwrap();
        let (cookie, s) = session::start(self.table.as_ref(), self.clock.as_ref(), user.clone())
            .await
            .unwrap();
        Browser {
            router: self.router.clone(),
            clock: self.clock.clone(),
            cookies: vec![(session::SESSION_COOKIE.to_owned(), cookie)],
            csrf: Some(s.csrf.expose().to_owned()),
            user: Some(user),
        }
    }
}

/// A response, read whole.
#[derive(Debug)]
pub struct Page {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Page {
    pub fn location(&self) -> Option<&str> {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

pub struct Browser {
    pub router: Router,
    /// The app's clock (to let time pass, e.g. while a person fills a form).
    pub clock: Arc<ManualClock>,
    pub cookies: Vec<(String, String)>,
    pub csrf: Option<String>,
    pub user: Option<UserId>,
}

impl Browser {
    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn user(&self) -> &UserId {
        self.user.as_ref().unwrap()
    }

    /// Lets as much time pass as a person needs to fill the registration form.
    pub fn pause_to_type(&self) {
        self.clock.advance_millis(FILL_SECS_MIN * 1000);
    }

    /// Sends `req` as a browser on this machine would (`Host: 127.0.0.1:8080` unless the
    /// request names another).
    pub async fn send(&mut self, mut req: Request<Body>) -> Page {
        if !req.headers().contains_key(header::HOST) {
            req.headers_mut()
                .insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        }
        let res = self.router.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        for set in headers.get_all(header::SET_COOKIE) {
            let set = set.to_str().unwrap();
            let pair = set.split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                self.cookies.retain(|(name, _)| name != k);
                if !v.is_empty() {
                    self.cookies.push((k.to_owned(), v.to_owned()));
                }
            }
        }
        let bytes = axum::body::to_bytes(res.into_body(), 10 << 20)
            .await
            .unwrap();
        Page {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let req = Request::get(path)
            .header(header::COOKIE, self.cookie_header())
            .body(Body::empty())
            .unwrap();
        self.send(req).await
    }

    /// Posts a form with this browser's CSRF token added.
    pub async fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        let csrf = self.csrf.clone().unwrap_or_default();
        all.push(("csrf", &csrf));
        self.post_form_raw(path, &all).await
    }

    /// Posts exactly these fields (no CSRF token added).
    pub async fn post_form_raw(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let req = Request::post(path)
            .header(header::COOKIE, self.cookie_header())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        self.send(req).await
    }

    /// Posts JSON with the CSRF header.
    pub async fn post_json(&mut self, path: &str, json: &serde_json::Value) -> Page {
        let req = Request::post(path)
            .header(header::COOKIE, self.cookie_header())
            .header(header::CONTENT_TYPE, "application/json")
            .header("x-csrf-token", self.csrf.clone().unwrap_or_default())
            .body(Body::from(json.to_string()))
            .unwrap();
        self.send(req).await
    }
}

/// The value of the hidden `csrf` input in a page.
pub fn csrf_in(body: &str) -> String {
    let at = body.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
    body[at..].split('"').next().unwrap().to_owned()
}

/// The value of the registration form's hidden time stamp in a page.
pub fn stamp_in(body: &str) -> String {
    let at = body.find("name=\"issued\" value=\"").unwrap() + "name=\"issued\" value=\"".len();
    body[at..].split('"').next().unwrap().to_owned()
}
