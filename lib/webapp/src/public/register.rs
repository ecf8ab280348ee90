//! `POST /e/{slug}/register`: the public registration form. In order, each refusal a plain
//! page with a status and a sentence, logged with its reason:
//! 1. the double-submit token (403 without it);
//! 2. the honeypot field empty (400) and the form's signed time stamp at least
//!    [`FILL_SECS_MIN`] old (429 with `Retry-After`; 400 when missing or forged);
//! 3. the per-address limit (IPv6: per /64) and the per-event limit, counted in the table so
//!    they hold across processes (429 with `Retry-After`);
//! 4. the domain's checks — valid name and address, published, open, before the closing time,
//!    a place free — through [`registration::register_public`], which acts as the public: the
//!    registration is audited but never on the organiser's undo stack.
//!
//! Nothing before step 4 touches the event's capacity counter. An address that is already
//! registered gets exactly the answer a new one gets (and no second row), so the form cannot
//! be used to learn who is registered.

use std::collections::BTreeMap;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum_extra::extract::CookieJar;
use maud::html;
use serde::Deserialize;
use steward_events::registration::{self, PublicForm};
use steward_events::slug::Slug;
use steward_harness::ServiceError;

use super::page::{self, MESSAGE_QUESTION, Typed};
use super::throttle::{Limit, ThrottleError};
use crate::csrf::FormToken;
use crate::form_stamp::{FILL_SECS_MIN, StampProblem};
use crate::layout;
use crate::state::WebState;
use crate::ui::respond;
use steward_edge::client_address::ClientAddress;

/// The per-address window: a minute.
const ADDRESS_WINDOW_SECS: i64 = 60;

/// The per-event window: an hour.
const EVENT_WINDOW_SECS: i64 = 3600;

/// The form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct RegisterForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    issued: String,
    #[serde(default)]
    website: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    message: String,
}

/// The handler.
pub async fn submit(
    State(state): State<WebState>,
    Path(slug): Path<String>,
    address: ClientAddress,
    token: FormToken,
    jar: CookieJar,
    Form(form): Form<RegisterForm>,
) -> Response {
    if !token.verify(&form.csrf) {
        tracing::info!(%slug, "registration refused: no valid form token");
        return FormToken::refusal();
    }
    if !form.website.is_empty() {
        tracing::info!(%slug, client = %address.limit_key(), "registration refused: the honeypot field was filled");
        return refusal(
            StatusCode::BAD_REQUEST,
            "Registration refused",
            "This form was filled in by a program, not a person, so it was not accepted. If you are a person, reload the page and try again.",
            None,
        );
    }
    let key = match state.stamp_key().await {
        Ok(key) => key,
        Err(e) => {
            tracing::error!(error = %e, "the registration form's key could not be read");
            return page::public_error(&ServiceError::internal(e.to_string()));
        }
    };
    match key.check(token.value(), &form.issued, state.clock().now_secs()) {
        Ok(()) => {}
        Err(StampProblem::TooFast { wait_secs }) => {
            tracing::info!(%slug, client = %address.limit_key(), "registration refused: sent faster than a person fills the form");
            // The form comes back with what was typed (nothing is lost) and a fresh stamp.
            let typed = Typed {
                name: form.name,
                email: form.email,
                message: form.message,
            };
            let problem = respond::FormProblem::new(
                format!(
                    "The form was sent less than {FILL_SECS_MIN} seconds after it was shown, faster than a person types. Check it and send it again in {wait_secs} seconds."
                ),
                None,
            );
            let event =
                registration::public_event(state.table().clone(), state.clock().clone(), &slug)
                    .await;
            return match event {
                Ok(event) => {
                    let mut response = page::render(
                        &state,
                        &event,
                        &token,
                        jar,
                        &typed,
                        Some(&problem),
                        StatusCode::TOO_MANY_REQUESTS,
                    )
                    .await;
                    if response.status() == StatusCode::TOO_MANY_REQUESTS {
                        response.headers_mut().insert(
                            header::RETRY_AFTER,
                            header::HeaderValue::from(wait_secs.max(1)),
                        );
                    }
                    response
                }
                Err(e) => page::public_error(&e),
            };
        }
        Err(problem) => {
            tracing::info!(%slug, %problem, "registration refused: bad form time stamp");
            return refusal(
                StatusCode::BAD_REQUEST,
                "Registration refused",
                "This form is too old or did not come from this page. Reload the page and try again.",
                None,
            );
        }
    }
    let Ok(parsed_slug) = Slug::parse(&slug) else {
        return page::public_error(&ServiceError::not_found("The event"));
    };
    if let Err(refused) = limits(&state, &address, &parsed_slug).await {
        return refused;
    }
    let typed = Typed {
        name: form.name,
        email: form.email,
        message: form.message,
    };
    let mut answers = BTreeMap::new();
    if !typed.message.trim().is_empty() {
        answers.insert(MESSAGE_QUESTION.to_owned(), typed.message.clone());
    }
    let public = PublicForm {
        name: typed.name.clone(),
        email: typed.email.clone(),
        answers,
    };
    let table = state.table().clone();
    let clock = state.clock().clone();
    match registration::register_public(table.clone(), clock.clone(), &slug, public).await {
        Ok(done) => {
            let body = html! {
                h1 { "Thank you" }
                p.notice role="status" {
                    (done.name) ", you are registered for " (done.event_name) "."
                }
                p { a href=(format!("/e/{slug}")) { "Back to the event" } }
            };
            (StatusCode::OK, layout::bare_page("Registered", body)).into_response()
        }
        Err(e @ ServiceError::NotFound { .. }) => page::public_error(&e),
        Err(e) if e.is_expected() => {
            let problem = respond::FormProblem::of(&e);
            match registration::public_event(table, clock, &slug).await {
                Ok(event) => {
                    page::render(
                        &state,
                        &event,
                        &token,
                        jar,
                        &typed,
                        Some(&problem),
                        StatusCode::UNPROCESSABLE_ENTITY,
                    )
                    .await
                }
                Err(e) => page::public_error(&e),
            }
        }
        Err(e) => page::public_error(&e),
    }
}

/// Counts the attempt against the client's and the event's budgets; the refusal page when
/// either is spent.
async fn limits(state: &WebState, address: &ClientAddress, slug: &Slug) -> Result<(), Response> {
    let config = state.config();
    let checks = [
        (
            Limit {
                scope: "reg-address",
                limit: config.registrations_per_minute,
                window_secs: ADDRESS_WINDOW_SECS,
            },
            address.limit_key(),
            "Too many registrations came from your address in the last minute.",
        ),
        (
            Limit {
                scope: "reg-event",
                limit: config.registrations_per_event_per_hour,
                window_secs: EVENT_WINDOW_SECS,
            },
            slug.as_str().to_owned(),
            "This event has taken as many registrations as it accepts in an hour.",
        ),
    ];
    for (limit, key, text) in checks {
        match limit
            .take(state.table().as_ref(), state.clock().as_ref(), &key)
            .await
        {
            Ok(()) => {}
            Err(ThrottleError::Limited(l)) => {
                tracing::warn!(scope = l.scope, key = %key, "registration refused: limit reached");
                return Err(refusal(
                    StatusCode::TOO_MANY_REQUESTS,
                    "Too many registrations",
                    &format!(
                        "{text} Please wait {} seconds and try again.",
                        l.retry_after_secs
                    ),
                    Some(l.retry_after_secs),
                ));
            }
            Err(ThrottleError::Store(e)) => {
                tracing::error!(error = %e, "the registration limit could not be counted");
                return Err(page::public_error(&ServiceError::internal(e.to_string())));
            }
        }
    }
    Ok(())
}

/// A refusal page: `status`, a title and one sentence, with `Retry-After` when given.
fn refusal(status: StatusCode, title: &str, text: &str, retry_after: Option<u64>) -> Response {
    let body = html! {
        h1 { (title) }
        p.error role="alert" { (text) }
    };
    let page = layout::bare_page(title, body);
    match retry_after {
        Some(secs) => (
            status,
            [(header::RETRY_AFTER, secs.max(1).to_string())],
            page,
        )
            .into_response(),
        None => (status, page).into_response(),
    }
}
