//! `steward-webapp`: the web application — the signed-in UI, the public event pages and the
//! web chat API — as one router over one shared state. The web Lambda serves it alone;
//! `steward serve` merges it with the webhooks, MCP and health.
//!
//! Modules, bottom up (each imports only modules above it in this list):
//! * [`paths`]: every path one module links to and another serves; [`session`]: table-backed
//!   sessions; [`form_stamp`]: the registration form's signed time stamp.
//! * [`oidc`]: the OpenID Connect client; [`config`]: [`config::WebConfig`],
//!   [`config::SignInMode`] and reading them from settings.
//! * [`state`]: [`state::WebState`]; [`signed_in`]: the [`signed_in::SignedIn`] extractor;
//!   [`csrf`]: the guard every non-GET under `/app` and `/api` passes; [`layout`]: the page
//!   shell.
//! * [`auth`]: the sign-in and sign-out routes; [`chat_api`]: the web chat API; [`ui`]: the
//!   signed-in pages; [`public`]: the public event pages.
//! * [`app`]: the router composing them, with the security headers and the Host/Origin guard.
//! * [`needs`]: what the web function needs to start, checked at init.
//!
//! Architecture invariant: identity comes only from the session; pages and the chat API call
//! the same service functions as the tools, through the same confirmation declarations.

pub mod app;
pub mod auth;
pub mod chat_api;
pub mod config;
pub mod csrf;
pub mod form_stamp;
pub mod layout;
pub mod needs;
pub mod oidc;
pub mod paths;
pub mod public;
pub mod session;
pub mod signed_in;
pub mod state;
pub mod ui;

pub use app::routes;
pub use config::{SignInMode, WebConfig};
pub use state::WebState;
