//! Connect a phone: the account's linked channel identities (`GET /app/linking`) and a fresh
//! one-time code (`POST /app/linking/code`) with links that open WhatsApp or Telegram with the
//! code already typed. Any message holding the code links the sender
//! (`linking::find_code_in_text`), and Telegram's `t.me/<bot>?start=<code>` arrives as
//! `/start <code>`, where the code stands alone and is found the same way.

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use steward_harness::identity::{IdentityRecord, list_identities};
use steward_harness::limits::LINK_CODE_TTL_SECS;
use steward_harness::linking::{IssuedCode, issue_code};
use steward_harness::{ServiceError, accounts};

use super::local_time;
use crate::app::{WebConfig, WebState};
use crate::auth::{SignedIn, csrf};
use crate::ui::layout;
use crate::ui::respond::UiError;

/// The linking page.
pub const LINKING_PATH: &str = "/app/linking";

/// Where the "get a code" button posts.
pub const CODE_PATH: &str = "/app/linking/code";

/// How many trailing characters of an external id stay visible: enough to recognise your own
/// number, not enough to read it off a screen share.
const VISIBLE_TAIL_CHARS: usize = 4;

/// Most mask dots shown, so a long id does not stretch the table.
const MASK_DOTS_MAX: usize = 8;

/// A channel's short name as people know it.
pub fn channel_label(short: &str) -> &str {
    match short {
        "wa" => "WhatsApp",
        "tg" => "Telegram",
        "web" => "Web chat",
        other => other,
    }
}

/// An external id with all but its last few characters hidden: `••••••••5678`. Short ids keep
/// at most a third of their characters.
pub fn masked(external: &str) -> String {
    let chars: Vec<char> = external.chars().collect();
    let visible = VISIBLE_TAIL_CHARS.min(chars.len() / 3);
    let hidden = (chars.len() - visible).clamp(1, MASK_DOTS_MAX);
    let tail: String = chars[chars.len() - visible..].iter().collect();
    format!("{}{tail}", "•".repeat(hidden))
}

/// The "Open WhatsApp" link: a chat with the business number, the code as the message.
pub fn whatsapp_link(config: &WebConfig, code: &str) -> Option<String> {
    let number: String = config
        .whatsapp_number
        .as_deref()?
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    (!number.is_empty()).then(|| format!("https://wa.me/{number}?text={code}"))
}

/// The "Open Telegram" link: the bot, started with the code (Telegram sends `/start <code>`).
pub fn telegram_link(config: &WebConfig, code: &str) -> Option<String> {
    let bot: String = config
        .telegram_bot
        .as_deref()?
        .trim_start_matches('@')
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!bot.is_empty()).then(|| format!("https://t.me/{bot}?start={code}"))
}

fn identities(linked: &[IdentityRecord], tz: &steward_harness::TimeZoneName) -> Markup {
    html! {
        h2 { "Linked" }
        @if linked.is_empty() {
            p.muted { "No phone is linked yet." }
        } @else {
            div.table-wrap {
                table {
                    thead { tr { th { "Channel" } th { "Account" } th { "Linked" } } }
                    tbody {
                        @for record in linked {
                            tr {
                                td { (channel_label(record.identity.channel.as_str())) }
                                td { (masked(record.identity.external.as_str())) }
                                td { (local_time(record.bound_ms, tz)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn code_card(
    config: &WebConfig,
    issued: &IssuedCode,
    tz: &steward_harness::TimeZoneName,
) -> Markup {
    let code = issued.code.as_str();
    let whatsapp = whatsapp_link(config, code);
    let telegram = telegram_link(config, code);
    html! {
        section.card.link-code aria-live="polite" {
            p { "Your code:" }
            p.code { (code) }
            p.muted {
                "Valid for " (LINK_CODE_TTL_SECS / 60) " minutes, until "
                (local_time(issued.expires_at_secs.saturating_mul(1000), tz))
                ", and only once. Getting a new code retires this one."
            }
            p { "Send it to Steward from your phone, in any message." }
            p.links {
                @if let Some(href) = &whatsapp {
                    a.button href=(href) rel="noopener noreferrer" { "Open WhatsApp" }
                    " "
                }
                @if let Some(href) = &telegram {
                    a.button href=(href) rel="noopener noreferrer" { "Open Telegram" }
                }
            }
            @if whatsapp.is_none() {
                p.muted { "No WhatsApp link: this Steward has no WhatsApp number configured \
                           (STEWARD_WHATSAPP_NUMBER)." }
            }
            @if telegram.is_none() {
                p.muted { "No Telegram link: this Steward has no Telegram bot configured \
                           (STEWARD_TELEGRAM_BOT)." }
            }
        }
    }
}

async fn render(
    state: &WebState,
    signed_in: &SignedIn,
    issued: Option<&IssuedCode>,
) -> Result<Markup, ServiceError> {
    let ctx = signed_in.ctx(state);
    let profile = accounts::profile(&ctx).await?;
    let linked = list_identities(state.table().as_ref(), signed_in.user()).await?;
    Ok(layout::app_page(
        "Connect a phone",
        LINKING_PATH,
        &signed_in.session,
        html! {
            h1 { "Connect a phone" }
            p { "Chat with Steward on WhatsApp or Telegram as this account: get a one-time code here \
                 and send it from your phone." }
            @if let Some(issued) = issued {
                (code_card(state.config(), issued, &profile.time_zone))
            }
            form.stack method="post" action=(CODE_PATH) {
                (csrf::field(&signed_in.session))
                button type="submit" { @if issued.is_some() { "Get another code" } @else { "Get a code" } }
            }
            (identities(&linked, &profile.time_zone))
        },
    ))
}

async fn show(State(state): State<WebState>, signed_in: SignedIn) -> Result<Markup, UiError> {
    Ok(render(&state, &signed_in, None).await?)
}

/// Issues a code and shows it (not a redirect: the code is shown on this response only, and
/// not cached).
async fn new_code(State(state): State<WebState>, signed_in: SignedIn) -> Result<Response, UiError> {
    let issued = issue_code(
        state.table().as_ref(),
        state.clock().as_ref(),
        signed_in.user(),
    )
    .await?;
    let page = render(&state, &signed_in, Some(&issued)).await?;
    Ok(([(header::CACHE_CONTROL, "no-store")], page).into_response())
}

/// The linking routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(LINKING_PATH, get(show))
        .route(CODE_PATH, post(new_code))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_masked_to_their_tail() {
        assert_eq!(masked("4915112345678"), "••••••••5678");
        assert_eq!(masked("123456"), "••••56");
        assert_eq!(masked("12"), "••");
        assert_eq!(masked(""), "•");
    }

    #[test]
    fn channels_have_their_names() {
        assert_eq!(channel_label("wa"), "WhatsApp");
        assert_eq!(channel_label("tg"), "Telegram");
        assert_eq!(channel_label("x"), "x");
    }
}
