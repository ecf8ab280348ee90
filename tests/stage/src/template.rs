//! The numbers the stage takes from `template.yaml`, so it runs what would be deployed: the
//! queue's visibility timeout and `maxReceiveCount`, the event source mapping's default batch
//! size and maximum concurrency, and each function's timeout and memory.
//!
//! The template is read line by line (its layout is checked by `infra/template_test.py`); a
//! value that cannot be found stops the run, naming it.

use std::time::Duration;

use anyhow::{Context, bail};

/// What the stage uses from the template.
#[derive(Debug, Clone)]
pub struct Template {
    /// `TurnQueue.VisibilityTimeout`.
    pub visibility_timeout_secs: u64,
    /// `TurnQueue.RedrivePolicy.maxReceiveCount`.
    pub max_receive_count: u64,
    /// The default of `AgentBatchSize`.
    pub batch_size: usize,
    /// The default of `AgentMaxConcurrency`.
    pub max_concurrency: usize,
    /// The default of the `Architecture` parameter (`arm64` or `x86_64`), for Lambda's price.
    pub architecture: String,
    /// Timeout and memory of each function, by binary name.
    pub functions: Vec<(&'static str, Duration, u32)>,
}

impl Template {
    /// Reads `text` (template.yaml).
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut functions = Vec::new();
        for (binary, resource) in [
            ("webhook", "WebhookFunction"),
            ("agent", "AgentFunction"),
            ("mcp", "McpFunction"),
            ("web", "WebFunction"),
        ] {
            let timeout = number_after(text, &format!("  {resource}:"), "Timeout:")?;
            let memory = number_after(text, &format!("  {resource}:"), "MemorySize:")?;
            functions.push((
                binary,
                Duration::from_secs(timeout),
                u32::try_from(memory).context("MemorySize")?,
            ));
        }
        Ok(Self {
            visibility_timeout_secs: number_after(text, "  TurnQueue:", "VisibilityTimeout:")?,
            max_receive_count: number_after(text, "  TurnQueue:", "maxReceiveCount:")?,
            batch_size: usize::try_from(number_after(text, "  AgentBatchSize:", "Default:")?)?,
            max_concurrency: usize::try_from(number_after(
                text,
                "  AgentMaxConcurrency:",
                "Default:",
            )?)?,
            architecture: value_after(text, "  Architecture:", "Default:")?,
            functions,
        })
    }

    /// Timeout and memory of function `binary`.
    pub fn function(&self, binary: &str) -> (Duration, u32) {
        self.functions
            .iter()
            .find(|(b, _, _)| *b == binary)
            .map_or((Duration::from_secs(30), 128), |(_, t, m)| (*t, *m))
    }
}

/// The number [`value_after`] finds.
fn number_after(text: &str, anchor: &str, key: &str) -> anyhow::Result<u64> {
    let value = value_after(text, anchor, key)?;
    value
        .parse()
        .with_context(|| format!("template.yaml: `{}` {key} `{value}`", anchor.trim()))
}

/// The value on the first line starting (after indentation) with `key` below the line
/// `anchor`, before the next line at the anchor's indentation.
fn value_after(text: &str, anchor: &str, key: &str) -> anyhow::Result<String> {
    let mut lines = text.lines().skip_while(|l| *l != anchor);
    if lines.next().is_none() {
        bail!("template.yaml has no `{}`", anchor.trim());
    }
    let indent = anchor.len() - anchor.trim_start().len();
    for line in lines {
        let trimmed = line.trim_start();
        let depth = line.len() - trimmed.len();
        if !trimmed.is_empty() && !trimmed.starts_with('#') && depth <= indent {
            break;
        }
        if let Some(value) = trimmed.strip_prefix(key) {
            return Ok(value.split('#').next().unwrap_or("").trim().to_owned());
        }
    }
    bail!("template.yaml: no {key} under `{}`", anchor.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_template_gives_every_number() {
        let text = include_str!("../../../template.yaml");
        let t = Template::parse(text).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(t.max_receive_count >= 1);
        assert!(t.visibility_timeout_secs >= t.function("agent").0.as_secs());
        assert!(t.batch_size >= 1 && t.max_concurrency >= 1);
        assert_eq!(t.functions.len(), 4);
        assert!(["arm64", "x86_64"].contains(&t.architecture.as_str()));
    }

    #[test]
    fn a_missing_value_is_named() {
        match Template::parse("Resources:\n  TurnQueue:\n    Type: x\n") {
            Err(err) => assert!(err.to_string().contains("WebhookFunction"), "{err}"),
            Ok(t) => panic!("parsed a template without functions: {t:?}"),
        }
    }
}
