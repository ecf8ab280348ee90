//! `POST /e/{slug}/register`: the public registration form. In order: the double-submit
//! token (403 without it), the per-address rate limit (429 with `Retry-After`), then the
//! domain's checks — valid name and address, published, open, before the closing time, a
//! place free — through [`registration::register_public`], which acts as the public: the
//! registration is audited but never on the organiser's undo stack.

use std::collections::BTreeMap;
use std::time::Instant;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum_extra::extract::CookieJar;
use maud::html;
use serde::Deserialize;
use steward_events::registration::{self, PublicForm};
use steward_harness::ServiceError;

use super::client_address::ClientAddress;
use super::page::{self, MESSAGE_QUESTION, Typed};
use crate::app::WebState;
use crate::auth::csrf::FormToken;
use crate::rate_limit;
use crate::ui::{layout, respond};

/// The form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct RegisterForm {
    #[serde(default)]
    csrf: String,
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
        return FormToken::refusal();
    }
    if let Err(wait) = state
        .registrations()
        .check(&address.as_str().to_owned(), Instant::now())
    {
        return too_many(rate_limit::retry_after_secs(wait));
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
                Ok(event) => page::render(
                    &state,
                    &event,
                    &token,
                    jar,
                    &typed,
                    Some(&problem),
                    StatusCode::UNPROCESSABLE_ENTITY,
                ),
                Err(e) => page::public_error(&e),
            }
        }
        Err(e) => page::public_error(&e),
    }
}

fn too_many(retry_after: u64) -> Response {
    let body = html! {
        h1 { "Too many registrations" }
        p.error role="alert" {
            "Too many registrations came from your address in the last minute. Please wait "
            (retry_after) " seconds and try again."
        }
    };
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, retry_after.to_string())],
        layout::bare_page("Too many registrations", body),
    )
        .into_response()
}
