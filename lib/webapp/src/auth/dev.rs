//! The sign-in page, and the development sign-in by name (no password), which exists only when
//! `steward serve` runs on a loopback address *and*, per request, only for a request whose
//! `Host` is a loopback name and which carries no proxy header ([`hosts::is_direct_loopback`]):
//! through a tunnel or under a foreign name both the page and the form answer 404.
//!
//! Typing a name signs in as that person's development account (`dev-<name>`), creating it the
//! first time. Only `dev-` accounts can be reached this way: accounts made by
//! `steward user create` (ULID ids) or by OpenID Connect (`oidc-…`) never start with `dev-`, and
//! a typed user id is just another name.

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum_extra::extract::CookieJar;
use maud::html;
use sha2::{Digest, Sha256};
use steward_harness::{ServiceError, UserId, accounts};

use crate::config::SignInMode;
use crate::csrf::FormToken;
use crate::layout;
use crate::paths::SIGN_IN_PATH;
use crate::state::WebState;
use steward_edge::hosts;

/// Longest name accepted by the development sign-in, in characters.
const DEV_NAME_CHARS_MAX: usize = 80;

/// The prefix of every account the development sign-in creates or reuses.
const DEV_ID_PREFIX: &str = "dev-";

/// The answer to the development sign-in when the request is not straight from this machine.
const NOT_HERE: &str = "Sign-in by name is only available from a browser on the machine running Steward (http://127.0.0.1). Through a tunnel or another address, set up OpenID Connect sign-in.";

/// Whether the development sign-in may be served to this request; logs a refusal.
fn dev_sign_in_allowed(uri: &Uri, headers: &HeaderMap) -> bool {
    let allowed = hosts::is_direct_loopback(uri, headers);
    if !allowed {
        tracing::warn!(
            host = ?headers.get(axum::http::header::HOST),
            forwarded = hosts::is_forwarded(headers),
            "development sign-in refused: the request is not from this machine (tunnel, proxy or foreign Host)"
        );
    }
    allowed
}

fn not_here() -> Response {
    (StatusCode::NOT_FOUND, NOT_HERE).into_response()
}

/// The sign-in page: a name field locally, the identity provider's button when deployed.
pub(super) async fn page(
    State(state): State<WebState>,
    uri: Uri,
    headers: HeaderMap,
    token: FormToken,
    jar: CookieJar,
) -> Response {
    if matches!(state.config().sign_in, SignInMode::Development)
        && !dev_sign_in_allowed(&uri, &headers)
    {
        return not_here();
    }
    render(&state, &token, jar, None, StatusCode::OK)
}

fn render(
    state: &WebState,
    token: &FormToken,
    jar: CookieJar,
    problem: Option<&str>,
    status: StatusCode,
) -> Response {
    let body = match &state.config().sign_in {
        SignInMode::Development => html! {
            h1 { "Sign in" }
            p.muted { "Development sign-in: this Steward runs on your machine, so a name is enough. \
                       The first sign-in with a name creates that account." }
            // Every problem here is about the name, the form's one field.
            @if let Some(problem) = problem { p.error role="alert" #sign-in-problem data-field="name" { (problem) } }
            form method="post" action=(SIGN_IN_PATH) .card {
                (token.field())
                label for="name" { "Your name" }
                input #name type="text" name="name" required maxlength=(DEV_NAME_CHARS_MAX) autocomplete="name" autofocus;
                button type="submit" { "Sign in" }
            }
        },
        SignInMode::Oidc(_) => html! {
            h1 { "Sign in" }
            @if let Some(problem) = problem { p.error role="alert" { (problem) } }
            p { a.button href=(crate::paths::OIDC_START_PATH) { "Sign in with your organisation account" } }
        },
    };
    let page = layout::bare_page("Sign in", body);
    let jar = match token.cookie(state.config().secure_cookies) {
        Some(c) => jar.add(c),
        None => jar,
    };
    (status, jar, page).into_response()
}

/// The development sign-in form.
#[derive(Debug, serde::Deserialize)]
pub(super) struct DevSignIn {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
}

/// `POST /app/sign-in`: the development sign-in form (404 unless allowed for this request).
pub(super) async fn submit(
    State(state): State<WebState>,
    uri: Uri,
    headers: HeaderMap,
    token: FormToken,
    jar: CookieJar,
    Form(form): Form<DevSignIn>,
) -> Response {
    if !matches!(state.config().sign_in, SignInMode::Development) {
        return (
            StatusCode::NOT_FOUND,
            "Sign-in by name is only available on a local development server.",
        )
            .into_response();
    }
    if !dev_sign_in_allowed(&uri, &headers) {
        return not_here();
    }
    if !token.verify(&form.csrf) {
        return FormToken::refusal();
    }
    let name = form.name.trim();
    if name.is_empty() || name.chars().count() > DEV_NAME_CHARS_MAX {
        let problem = format!("Type a name of 1 to {DEV_NAME_CHARS_MAX} characters.");
        return render(
            &state,
            &token,
            jar,
            Some(&problem),
            StatusCode::UNPROCESSABLE_ENTITY,
        );
    }
    match dev_account(&state, name).await {
        Ok(user) => super::sign_in_as(&state, jar, user).await,
        Err(e) if e.is_expected() => render(
            &state,
            &token,
            jar,
            Some(&e.to_string()),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        Err(e) => {
            tracing::error!(error = %e, "development sign-in failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}

/// The account a development sign-in with `name` uses: the `dev-` account derived from the
/// name, created on first use. Never any other account, whatever is typed.
async fn dev_account(state: &WebState, name: &str) -> Result<UserId, ServiceError> {
    let table = state.table().as_ref();
    let id = dev_user_id(name);
    if !id.as_str().starts_with(DEV_ID_PREFIX) {
        return Err(ServiceError::internal(format!(
            "development account id {id} lacks its prefix"
        )));
    }
    match accounts::get_profile(table, &id).await {
        Ok(_) => Ok(id),
        Err(ServiceError::NotFound { .. }) => {
            match accounts::create_account_with_id(
                table,
                state.clock().as_ref(),
                id.clone(),
                name,
                None,
            )
            .await
            {
                Ok(_) | Err(ServiceError::AlreadyExists { .. }) => Ok(id),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// `dev-<name as a slug>`, with a short hash of the name when the slug lost something (case
/// aside), so "Zoë" and "Zoe" are different people.
fn dev_user_id(name: &str) -> UserId {
    let lower = name.to_lowercase();
    let mut slug = String::new();
    for c in lower.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(40).collect();
    let lossless = lower
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-')
        && lower.len() <= 40;
    let id = if lossless && !slug.is_empty() {
        format!("dev-{slug}")
    } else {
        let digest = hex::encode(Sha256::digest(lower.as_bytes()));
        format!("dev-{slug}-{}", &digest[..8])
    };
    UserId::parse(id.replace("--", "-").as_str()).unwrap_or_else(|_| {
        UserId::parse(&format!(
            "dev-{}",
            &hex::encode(Sha256::digest(lower.as_bytes()))[..16]
        ))
        .unwrap_or_else(|_| unreachable!("hex is a valid user id"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_ids_are_readable_and_distinct() {
        assert_eq!(dev_user_id("Alice Smith").as_str(), "dev-alice-smith");
        assert_eq!(dev_user_id("alice smith").as_str(), "dev-alice-smith");
        assert_ne!(dev_user_id("Zoë").as_str(), dev_user_id("Zoe").as_str());
        assert!(dev_user_id("<script>").as_str().starts_with("dev-script-"));
        assert!(dev_user_id("李").as_str().starts_with("dev-"));
        // A typed user id is just a name: it never maps onto that account.
        assert_eq!(
            dev_user_id("01kbx9y7m6q3f2d1c0b9a8z7y6").as_str(),
            "dev-01kbx9y7m6q3f2d1c0b9a8z7y6"
        );
        assert!(
            dev_user_id("oidc-1234abcd")
                .as_str()
                .starts_with("dev-oidc-")
        );
    }
}
