//! The events domain as the harness takes it: [`domain`] wires the tools (each declaring what
//! it holds), the domain's prompt section and the per-turn context, so no surface crate builds
//! the agent's domain itself.

use std::sync::Arc;

use steward_harness::Domain;

use crate::{DOMAIN_PROMPT, EventsConfig, EventsContext};

/// The product's name in replies and links.
pub const PRODUCT: &str = "Steward";

/// A first request the welcome suggests after linking.
pub const FIRST_REQUEST: &str =
    "create an event called Summer Meetup next Saturday, 10:00 to 16:00";

/// Steward's chat domain over `config`: the events tools, prompt and per-turn context.
pub fn domain(config: &EventsConfig) -> Domain {
    Domain {
        product: PRODUCT.into(),
        prompt: DOMAIN_PROMPT.into(),
        registry: Arc::new(crate::registry(config)),
        context: Arc::new(EventsContext),
    }
}
