//! The sign-in page, and the development sign-in by name (no password), which exists only when
//! `steward serve` runs on a loopback address: typing a name signs in as that person, creating
//! their account the first time. Typing an existing user id (from `steward user create`) signs
//! in as that account.

use axum::Form;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum_extra::extract::CookieJar;
use maud::html;
use sha2::{Digest, Sha256};
use steward_harness::{ServiceError, UserId, accounts};

use super::csrf::FormToken;
use super::{SIGN_IN_PATH, SignInMode};
use crate::app::WebState;
use crate::ui::layout;

/// Longest name accepted by the development sign-in, in characters.
const DEV_NAME_CHARS_MAX: usize = 80;

/// The sign-in page: a name field locally, the identity provider's button when deployed.
pub(super) async fn page(
    State(state): State<WebState>,
    token: FormToken,
    jar: CookieJar,
) -> Response {
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
            p { a.button href=(super::oidc::START_PATH) { "Sign in with your organisation account" } }
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

pub(super) async fn submit(
    State(state): State<WebState>,
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

/// The account a development sign-in with `name` uses: an existing user id as typed, else the
/// account derived from the name, created on first use.
async fn dev_account(state: &WebState, name: &str) -> Result<UserId, ServiceError> {
    let table = state.table().as_ref();
    if let Ok(id) = UserId::parse(name)
        && accounts::get_profile(table, &id).await.is_ok()
    {
        return Ok(id);
    }
    let id = dev_user_id(name);
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
    }
}
