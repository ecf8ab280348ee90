//! [`WebState`]: everything the web routes share — the store, the clock, the turn queue, the
//! configuration, the registry whose declarations the forms ask, the OIDC client and the
//! registration form's stamp key. A leaf below every handler module.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use steward_edge::client_address::ClientAddress;
use steward_harness::Registry;
use steward_store::{Clock, StoreError, Table, TurnQueue};

use crate::config::{SignInMode, WebConfig};
use crate::form_stamp::StampKey;
use crate::oidc::OidcClient;

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
    oidc: Option<OidcClient>,
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
            SignInMode::Oidc(settings) => Some(OidcClient::new(settings.clone())),
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
    pub fn oidc(&self) -> Option<&OidcClient> {
        self.inner.oidc.as_ref()
    }
}

/// The client address of a public request, believing the header the configuration names.
impl FromRequestParts<WebState> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &WebState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self::of(parts, state.config().trusted_proxy.as_ref()))
    }
}
