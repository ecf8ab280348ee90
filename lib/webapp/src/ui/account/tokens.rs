//! MCP access tokens: the account's tokens (`GET /app/tokens`), creating one
//! (`POST /app/tokens`, which shows the secret on that response only, uncached) and revoking one
//! (`POST /app/tokens/{id}/revoke`). Only the token's SHA-256 is stored, so a token can never be
//! shown again; it is never logged. Revoking uses `tokens::revoke_own_token`, so another
//! account's token id is simply not found.

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use maud::{Markup, html};
use serde::Deserialize;
use steward_harness::limits::NAME_CHARS_MAX;
use steward_harness::tokens::{
    DEFAULT_TOKEN_LABEL, NewToken, TokenRecord, create_token, list_tokens, revoke_own_token,
};
use steward_harness::{ServiceError, TimeZoneName, TokenId, accounts};

use super::local_time;
use crate::csrf;
use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::{FormProblem, UiError, status_of};
use steward_edge::paths::MCP_PATH;

/// The tokens page; creating a token posts here too.
pub const TOKENS_PATH: &str = "/app/tokens";

/// The create form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct CreateForm {
    /// What the holder calls the token ("Claude desktop"); empty for the default label.
    #[serde(default)]
    pub label: String,
}

/// `?revoked=1` after a revoke.
#[derive(Debug, Default, Deserialize)]
pub struct TokensQuery {
    /// Whether to say a token was revoked.
    #[serde(default)]
    pub revoked: Option<String>,
}

/// Where the revoke button of token `id` posts.
pub fn revoke_path(id: &TokenId) -> String {
    format!("{TOKENS_PATH}/{id}/revoke")
}

/// The MCP endpoint people configure their client with: the public URL's `/mcp`, or the bare
/// path when no public URL is configured.
fn mcp_url(state: &WebState) -> String {
    match state.config().public_url.as_deref() {
        Some(base) => format!("{}{MCP_PATH}", base.trim_end_matches('/')),
        None => MCP_PATH.to_owned(),
    }
}

fn token_list(signed_in: &SignedIn, tokens: &[TokenRecord], tz: &TimeZoneName) -> Markup {
    html! {
        h2 { "Your tokens" }
        @if tokens.is_empty() {
            p.muted { "No tokens yet." }
        } @else {
            div.table-wrap {
                table.tokens {
                    thead { tr { th { "Label" } th { "Created" } th { "Last used" } th { "Status" } } }
                    tbody {
                        @for token in tokens {
                            tr {
                                td { (token.label) }
                                td { (local_time(token.created_ms, tz)) }
                                td {
                                    @match token.last_used_ms {
                                        Some(ms) => (local_time(ms, tz)),
                                        None => span.muted { "never" },
                                    }
                                }
                                td {
                                    @if token.revoked {
                                        span.badge.revoked { "Revoked" }
                                        @if let Some(ms) = token.revoked_ms {
                                            " " span.muted { (local_time(ms, tz)) }
                                        }
                                    } @else {
                                        form.inline method="post" action=(revoke_path(&token.id)) {
                                            (csrf::field(&signed_in.session))
                                            button.danger type="submit" { "Revoke" span.visually-hidden { " " (token.label) } }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn create_form(signed_in: &SignedIn, label: &str, problem: Option<&FormProblem>) -> Markup {
    html! {
        h2 { "New token" }
        @if let Some(problem) = problem { (problem.render("token-problem")) }
        form.card method="post" action=(TOKENS_PATH) {
            (csrf::field(&signed_in.session))
            label for="label" { "Label" }
            input #label type="text" name="label" maxlength=(NAME_CHARS_MAX)
                placeholder=(DEFAULT_TOKEN_LABEL) autocomplete="off" value=(label);
            p.muted { "A name that tells you where the token is used, like \"Claude desktop\"." }
            button type="submit" { "Create token" }
        }
    }
}

fn created(state: &WebState, new: &NewToken) -> Markup {
    let mcp = mcp_url(state);
    html! {
        section.card.new-token aria-live="polite" {
            h2 { "Token \"" (new.record.label) "\" created" }
            p.notice { "Copy it now: it is shown only this once. Steward keeps only a fingerprint \
                        of it and cannot show it again." }
            p { code.code.secret { (new.token.expose()) } }
            p { "Give your MCP client the server URL and the token as a bearer token:" }
            pre.code-block {
                "URL: " (mcp) "\n"
                "Authorization: Bearer " (new.token.expose())
            }
            p.muted { "If it is ever exposed, revoke it below and create a new one." }
        }
    }
}

async fn render(
    state: &WebState,
    signed_in: &SignedIn,
    top: Markup,
    label: &str,
    problem: Option<&FormProblem>,
) -> Result<Markup, ServiceError> {
    let profile = accounts::profile(&signed_in.ctx(state)).await?;
    let tokens = list_tokens(state.table().as_ref(), signed_in.user()).await?;
    let mcp = mcp_url(state);
    Ok(layout::app_page(
        "MCP tokens",
        TOKENS_PATH,
        &signed_in.session,
        html! {
            h1 { "MCP tokens" }
            p { "A token lets an AI client (Claude desktop, an IDE, a script) use Steward's tools \
                 as you, over MCP at " code { (mcp) } ". Revoke a token to shut it out at once." }
            (top)
            (create_form(signed_in, label, problem))
            (token_list(signed_in, &tokens, &profile.time_zone))
        },
    ))
}

async fn show(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Query(query): Query<TokensQuery>,
) -> Result<Markup, UiError> {
    let top = html! {
        @if query.revoked.is_some() { p.notice role="status" { "Token revoked." } }
    };
    Ok(render(&state, &signed_in, top, "", None).await?)
}

/// Creates a token and shows it once: 200 (not a redirect, which would need the secret in a
/// later request) with `Cache-Control: no-store`.
async fn create(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Form(form): Form<CreateForm>,
) -> Response {
    let label = form.label.trim();
    let made = create_token(
        state.table().as_ref(),
        state.clock().as_ref(),
        signed_in.user(),
        (!label.is_empty()).then_some(label),
    )
    .await;
    let (status, page) = match made {
        Ok(new) => (
            StatusCode::OK,
            render(&state, &signed_in, created(&state, &new), "", None).await,
        ),
        Err(e) => {
            let problem = FormProblem::of(&e);
            (
                status_of(&e),
                render(&state, &signed_in, html! {}, &form.label, Some(&problem)).await,
            )
        }
    };
    match page {
        Ok(page) => (status, [(header::CACHE_CONTROL, "no-store")], page).into_response(),
        Err(e) => UiError(e).into_response(),
    }
}

async fn revoke(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Path(id): Path<String>,
) -> Result<Redirect, UiError> {
    let id = TokenId::parse(&id).map_err(|_| ServiceError::not_found("That token"))?;
    revoke_own_token(&signed_in.ctx(&state), &id).await?;
    Ok(Redirect::to(&format!("{TOKENS_PATH}?revoked=1")))
}

/// The token routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(TOKENS_PATH, get(show).post(create))
        .route(&format!("{TOKENS_PATH}/{{id}}/revoke"), post(revoke))
}
