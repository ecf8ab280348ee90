//! The frozen prefix: the system prompt and the tool list, byte-identical on every request of
//! every conversation, so prompt caching and preserved reasoning keep working. Everything that
//! changes (time, state) goes into the newest user message instead (see `transcript.rs`).
//!
//! Changing the prompt or a tool description is a deliberate event: the snapshot test of the
//! whole prefix shows the diff, and [`PROMPT_VERSION`] must be bumped with it.

use std::sync::Arc;

use steward_llm::{CacheControl, SystemBlock, ToolSpec};

use crate::Registry;
use crate::chat_tools;

/// Version of the harness's prompt; bump it with any change to the prefix. A changed prompt
/// costs saved reasoning once (handled: rejected signatures are stripped and retried).
pub const PROMPT_VERSION: &str = "2026-12-02.1";

/// The harness's part of the system prompt: an interface spec (voice, what each message
/// contains and what to trust, how to work, risky actions, markers, scope).
const CORE_PROMPT: &str = include_str!("core.md");

/// The system prompt and tools, built once at start-up.
#[derive(Debug, Clone, PartialEq)]
pub struct FrozenPrefix {
    /// Shared with every request (see [`FrozenPrefix::shared_system`]).
    system: Arc<[SystemBlock]>,
    /// Shared with every request (see [`FrozenPrefix::shared_tools`]).
    tools: Arc<[ToolSpec]>,
}

impl FrozenPrefix {
    /// The prefix for a domain: `product` names the assistant, `domain_prompt` is the
    /// domain's primer and playbooks, `registry` its tools (in the registry's order), followed
    /// by the conversation-only tools. Cache breakpoints go on the system prompt and the last
    /// tool.
    pub fn new(product: &str, domain_prompt: &str, registry: &Registry) -> Self {
        let text = format!(
            "You are {product}, an assistant people text to get real work done. Prompt version {PROMPT_VERSION}.\n\n{}\n\n{}\n",
            CORE_PROMPT.trim(),
            domain_prompt.trim()
        );
        let system = vec![SystemBlock::new(text).cached()];
        let mut tools: Vec<ToolSpec> = registry
            .model_tools()
            .into_iter()
            .map(|t| ToolSpec {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
                cache_control: None,
            })
            .chain(chat_tools::specs())
            .collect();
        if let Some(last) = tools.last_mut() {
            last.cache_control = Some(CacheControl::ephemeral());
        }
        Self {
            system: system.into(),
            tools: tools.into(),
        }
    }

    /// The system blocks.
    pub fn system(&self) -> &[SystemBlock] {
        &self.system
    }

    /// The system blocks as a request takes them: the same list, shared, never copied.
    pub fn shared_system(&self) -> Arc<[SystemBlock]> {
        Arc::clone(&self.system)
    }

    /// The tools, in their fixed order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The tools as a request takes them: the same list, shared, never copied.
    pub fn shared_tools(&self) -> Arc<[ToolSpec]> {
        Arc::clone(&self.tools)
    }

    /// The whole prefix as JSON (system, then tools): what the snapshot test pins.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "system": self.system, "tools": self.tools })
    }
}
