//! The web application — UI pages, the web chat API and the public event pages — as one
//! router over one shared state. `steward serve` merges it with the webhook, MCP and health
//! routes; the web Lambda serves it alone.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::Redirect;
use axum::routing::get;
use steward_events::EventsConfig;
use steward_harness::Registry;
use steward_store::StoreError;
use steward_store::{Clock, Table, TurnQueue};

use crate::auth::{self, SignInMode};
use crate::hosts::HostPattern;
use crate::public::client_address::TrustedProxy;
use crate::public::form_stamp::StampKey;
use crate::{chat_api, hosts, public, security, ui};

/// How the web app is set up: sign-in, links, and what the pages say about the deployment.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// How people sign in (development sign-in by name locally, OpenID Connect deployed).
    pub sign_in: SignInMode,
    /// Whether cookies are marked `Secure` (true whenever the site is served over HTTPS).
    pub secure_cookies: bool,
    /// The public base URL (`STEWARD_PUBLIC_URL`), used in links shown to people.
    pub public_url: Option<String>,
    /// The WhatsApp business number people message, digits only (`STEWARD_WHATSAPP_NUMBER`),
    /// for the "open WhatsApp" link on the linking page.
    pub whatsapp_number: Option<String>,
    /// The Telegram bot's username without `@` (`STEWARD_TELEGRAM_BOT`), for the "open
    /// Telegram" link.
    pub telegram_bot: Option<String>,
    /// A short description of the configured model, shown on the chat page ("Anthropic
    /// claude-…", "none", "scripted (test replay)").
    pub model_label: String,
    /// Public registrations accepted per client address (IPv6: per /64) per minute, counted
    /// in the table so the limit holds across processes.
    pub registrations_per_minute: u32,
    /// Public registrations accepted per event per hour, from everyone together: what a
    /// flood of fake names can take from a capped event before the organiser notices.
    pub registrations_per_event_per_hour: u32,
    /// The hosts the web app answers for (`Host` and `Origin`): loopback names locally, the
    /// public URL's host, and `STEWARD_ALLOWED_HOSTS`. Anything else gets 421.
    pub allowed_hosts: Vec<HostPattern>,
    /// The header a trusted proxy puts the client's address in (`STEWARD_TRUSTED_PROXY`);
    /// None: no header is believed.
    pub trusted_proxy: Option<TrustedProxy>,
    /// The events domain's settings (public base URL for the links it writes).
    pub events: EventsConfig,
}

/// Public registrations per address per minute unless configured: generous for a family
/// registering together behind one address, far below what a script would need to flood.
pub const DEFAULT_REGISTRATIONS_PER_MINUTE: u32 = 10;

/// Public registrations per event per hour unless configured: a popular event's rush after
/// the link is shared stays far below it; a script filling a capped event hits it.
pub const DEFAULT_REGISTRATIONS_PER_EVENT_PER_HOUR: u32 = 300;

/// Everything the web routes share. Cheap to clone.
#[derive(Clone)]
pub struct WebState {
    inner: Arc<Inner>,
}

struct Inner {
    table: Arc<dyn Table>,
    clock: Arc<dyn Clock>,
    queue: Arc<dyn TurnQueue>,
    config: WebConfig,
    stamp_key: tokio::sync::OnceCell<StampKey>,
    oidc: Option<auth::oidc::OidcClient>,
    registry: Arc<Registry>,
}

impl std::fmt::Debug for WebState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebState")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl WebState {
    /// The state over `table` (records and sessions), `clock`, and `queue` (where web chat
    /// messages go, like every channel's).
    pub fn new(
        table: Arc<dyn Table>,
        clock: Arc<dyn Clock>,
        queue: Arc<dyn TurnQueue>,
        config: WebConfig,
    ) -> Self {
        let oidc = match &config.sign_in {
            SignInMode::Oidc(settings) => Some(auth::oidc::OidcClient::new(settings.clone())),
            SignInMode::Development => None,
        };
        let registry = Arc::new(steward_events::registry(&config.events));
        Self {
            inner: Arc::new(Inner {
                table,
                clock,
                queue,
                config,
                stamp_key: tokio::sync::OnceCell::new(),
                oidc,
                registry,
            }),
        }
    }

    /// The store.
    pub fn table(&self) -> &Arc<dyn Table> {
        &self.inner.table
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The turn queue.
    pub fn queue(&self) -> &Arc<dyn TurnQueue> {
        &self.inner.queue
    }

    /// The configuration.
    pub fn config(&self) -> &WebConfig {
        &self.inner.config
    }

    /// The key signing the registration form's time stamp (read from the table once).
    pub async fn stamp_key(&self) -> Result<&StampKey, StoreError> {
        self.inner
            .stamp_key
            .get_or_try_init(|| StampKey::load_or_create(self.inner.table.as_ref()))
            .await
    }

    /// The capabilities, whose confirmation declarations the UI's forms ask (the same ones
    /// the chat and MCP run through).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// The OpenID Connect client, when sign-in is by OIDC.
    pub fn oidc(&self) -> Option<&auth::oidc::OidcClient> {
        self.inner.oidc.as_ref()
    }
}

/// The web app's routes: `/` (to the app), `/app/…` (signed in, CSRF-checked), `/api/chat/…`
/// and the public pages `/e/{slug}`, all with the security headers, all behind the Host/Origin
/// allow-list (421 for another host).
pub fn routes(state: WebState) -> Router {
    let allowed = Arc::new(state.config().allowed_hosts.clone());
    Router::new()
        .route("/", get(|| async { Redirect::to(ui::APP_HOME) }))
        .merge(auth::routes())
        .merge(ui::routes())
        .merge(chat_api::routes())
        .merge(public::routes())
        .with_state(state.clone())
        .layer(axum::middleware::from_fn_with_state(
            state,
            auth::csrf::guard,
        ))
        .layer(DefaultBodyLimit::max(auth::csrf::FORM_BODY_BYTES_MAX))
        .layer(axum::middleware::from_fn(security::headers))
        .layer(axum::middleware::from_fn_with_state(allowed, hosts::guard))
}
