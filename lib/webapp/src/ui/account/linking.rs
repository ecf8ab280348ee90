//! Connect a phone: the account's linked channel identities (`GET /app/linking`), a fresh
//! one-time code (`POST /app/linking/code`) with links that open WhatsApp or Telegram with the
//! code already typed, and unlinking a phone (`POST /app/linking/{ref}/unlink`: `ref` names one
//! of the caller's own identities by a hash, so the full number never appears in the page and
//! another account's phone cannot even be named). Any message holding the code links the sender
//! (`linking::find_code_in_text`), and Telegram's `t.me/<bot>?start=<code>` arrives as
//! `/start <code>`, where the code stands alone and is found the same way.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use steward_channels::Channel;
use steward_harness::identity::{self, IdentityRecord, list_identities};
use steward_harness::limits::LINK_CODE_TTL_SECS;
use steward_harness::linking::{IssuedCode, issue_code};
use steward_harness::{ServiceError, accounts};

use super::local_time;
use crate::config::WebConfig;
use crate::csrf;
use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::UiError;

/// The linking page.
pub const LINKING_PATH: &str = "/app/linking";

/// Where the "get a code" button posts.
pub const CODE_PATH: &str = "/app/linking/code";

/// Hex digits of an identity's reference in unlink paths: plenty to tell one account's few
/// identities apart, and it reveals nothing of the number.
const IDENTITY_REF_HEX: usize = 16;

/// `?unlinked=1` after an unlink.
#[derive(Debug, Default, Deserialize)]
pub struct LinkingQuery {
    /// Whether to say a phone was unlinked.
    #[serde(default)]
    pub unlinked: Option<String>,
}

/// The reference of a linked identity in its unlink path: a hash of channel and external id.
pub fn identity_ref(record: &IdentityRecord) -> String {
    let digest = Sha256::digest(format!(
        "{}#{}",
        record.identity.channel, record.identity.external
    ));
    hex::encode(digest)[..IDENTITY_REF_HEX].to_owned()
}

/// Where the unlink button of `record` posts.
pub fn unlink_path(record: &IdentityRecord) -> String {
    format!("{LINKING_PATH}/{}/unlink", identity_ref(record))
}

/// Whether `record` is a phone (a WhatsApp or Telegram identity): the only kind this page
/// unlinks. The web sign-in's own identity is not a phone and is not offered.
fn is_phone(record: &IdentityRecord) -> bool {
    Channel::from_short_name(record.identity.channel.as_str()).is_some_and(|c| c != Channel::Web)
}

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

fn identities(
    signed_in: &SignedIn,
    linked: &[IdentityRecord],
    tz: &steward_harness::TimeZoneName,
) -> Markup {
    let phones: Vec<&IdentityRecord> = linked.iter().filter(|r| is_phone(r)).collect();
    html! {
        h2 { "Linked" }
        @if phones.is_empty() {
            p.muted { "No phone is linked yet." }
        } @else {
            div.table-wrap {
                table {
                    thead { tr { th { "Channel" } th { "Account" } th { "Linked" } th { "" } } }
                    tbody {
                        @for record in phones {
                            tr {
                                td { (channel_label(record.identity.channel.as_str())) }
                                td { (masked(record.identity.external.as_str())) }
                                td { (local_time(record.bound_ms, tz)) }
                                td {
                                    form method="post" action=(unlink_path(record)) {
                                        (csrf::field(&signed_in.session))
                                        button type="submit" { "Unlink" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            p.muted { "Unlinking takes effect at once: that phone can no longer act for this \
                       account until it sends a new code, and its chat starts afresh." }
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
    unlinked: bool,
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
            @if unlinked {
                p.notice role="status" { "The phone was unlinked." }
            }
            p { "Chat with Steward on WhatsApp or Telegram as this account: get a one-time code here \
                 and send it from your phone." }
            @if let Some(issued) = issued {
                (code_card(state.config(), issued, &profile.time_zone))
            }
            form.stack method="post" action=(CODE_PATH) {
                (csrf::field(&signed_in.session))
                button type="submit" { @if issued.is_some() { "Get another code" } @else { "Get a code" } }
            }
            (identities(signed_in, &linked, &profile.time_zone))
        },
    ))
}

async fn show(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Query(query): Query<LinkingQuery>,
) -> Result<Markup, UiError> {
    Ok(render(&state, &signed_in, None, query.unlinked.is_some()).await?)
}

/// Unlinks one of the caller's own phones (CSRF-checked like every POST under `/app`). A
/// reference that names none of them is "not found", whoever's phone it might be.
async fn unlink(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Path(reference): Path<String>,
) -> Result<Redirect, UiError> {
    let table = state.table();
    let linked = list_identities(table.as_ref(), signed_in.user()).await?;
    let record = linked
        .iter()
        .filter(|r| is_phone(r))
        .find(|r| identity_ref(r) == reference)
        .ok_or_else(|| ServiceError::not_found("That linked phone"))?;
    identity::unbind(table.as_ref(), &record.identity, signed_in.user()).await?;
    tracing::info!(user = %signed_in.user(), channel = %record.identity.channel, "phone unlinked on the web");
    Ok(Redirect::to(&format!("{LINKING_PATH}?unlinked=1")))
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
    let page = render(&state, &signed_in, Some(&issued), false).await?;
    Ok(([(header::CACHE_CONTROL, "no-store")], page).into_response())
}

/// The linking routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(LINKING_PATH, get(show))
        .route(CODE_PATH, post(new_code))
        .route(
            &format!("{LINKING_PATH}/{{reference}}/unlink"),
            post(unlink),
        )
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
