//! Which model a deployment names, read from its settings without building a client:
//! `STEWARD_MODEL_PROVIDER` ([`ModelProvider`]), `STEWARD_MODEL` ([`model_id`], with each
//! provider's default) and the one-line label pages and start-up output show ([`describe`]).
//! Pure: the worker builds the client from the same reading; the web app only labels it.

use std::path::PathBuf;

use crate::limits::{DEFAULT_BEDROCK_MODEL, DEFAULT_MODEL};

/// Which model provider: `anthropic`, `bedrock`, `openai`, `none`, `scripted:<path>`, or unset
/// (= anthropic when a key is set).
pub const ENV_MODEL_PROVIDER: &str = "STEWARD_MODEL_PROVIDER";
/// The model id.
pub const ENV_MODEL: &str = "STEWARD_MODEL";
/// The Anthropic API key (a secret: `ANTHROPIC_API_KEY_PARAM` on Lambda).
pub const ENV_ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// The Anthropic API root (default `https://api.anthropic.com`).
pub const ENV_ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The API key of an OpenAI-compatible server (a secret: `OPENAI_API_KEY_PARAM` on Lambda);
/// required for OpenAI's own API, optional for a server that takes none.
pub const ENV_OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// The root of an OpenAI-compatible API, `/v1` included (default `https://api.openai.com/v1`).
pub const ENV_OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";

/// A model setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {problem}")]
pub struct ChoiceError {
    /// The setting.
    pub name: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

/// The prefix of `STEWARD_MODEL_PROVIDER` naming a script to replay: `scripted:<path>`.
pub const SCRIPTED_PREFIX: &str = "scripted:";

/// Which provider serves the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelProvider {
    /// The Anthropic Messages API over HTTPS.
    Anthropic,
    /// Any model on Amazon Bedrock through Converse (IAM credentials of the function).
    Bedrock,
    /// Any OpenAI-compatible server through Chat Completions.
    OpenAi,
    /// A scripted conversation replayed from this JSON file (tests and demos, no network).
    Scripted(PathBuf),
    /// No model: turns answer that none is configured.
    None,
}

impl ModelProvider {
    /// The provider the settings (`get`: name → trimmed, non-blank value) ask for.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, ChoiceError> {
        let raw = get(ENV_MODEL_PROVIDER);
        // The path keeps its case; only the provider word is case-insensitive.
        if let Some(raw) = raw.as_deref().map(str::trim)
            && raw.len() >= SCRIPTED_PREFIX.len()
            && raw.is_char_boundary(SCRIPTED_PREFIX.len())
            && raw[..SCRIPTED_PREFIX.len()].eq_ignore_ascii_case(SCRIPTED_PREFIX)
        {
            let path = raw[SCRIPTED_PREFIX.len()..].trim();
            if path.is_empty() {
                return Err(ChoiceError {
                    name: ENV_MODEL_PROVIDER,
                    problem: "scripted: needs the script's path, e.g. scripted:./chat-script.json"
                        .to_owned(),
                });
            }
            return Ok(Self::Scripted(PathBuf::from(path)));
        }
        match raw.map(|p| p.trim().to_ascii_lowercase()).as_deref() {
            Some("anthropic") => Ok(Self::Anthropic),
            Some("bedrock") => Ok(Self::Bedrock),
            Some("openai") => Ok(Self::OpenAi),
            Some("none") => Ok(Self::None),
            None if get(ENV_ANTHROPIC_API_KEY).is_some() => Ok(Self::Anthropic),
            None => Ok(Self::None),
            Some(other) => Err(ChoiceError {
                name: ENV_MODEL_PROVIDER,
                problem: format!(
                    "\"{other}\" is not anthropic, bedrock, openai, scripted:<path> or none"
                ),
            }),
        }
    }
}

/// The model id `provider` uses: `STEWARD_MODEL`, else the provider's default. Fails, naming
/// `STEWARD_MODEL`, when an OpenAI-compatible server has no model named, a Bedrock id cannot
/// be a Bedrock id, or a Claude API model name is a Bedrock id.
pub fn model_id(
    get: &dyn Fn(&str) -> Option<String>,
    provider: &ModelProvider,
) -> Result<String, ChoiceError> {
    let configured = get(ENV_MODEL);
    match provider {
        ModelProvider::Bedrock => {
            let model = configured.unwrap_or_else(|| DEFAULT_BEDROCK_MODEL.to_owned());
            // Every Bedrock model id, inference-profile id and ARN has a dot or a colon.
            if !model.starts_with("arn:") && !model.contains('.') {
                return Err(ChoiceError {
                    name: ENV_MODEL,
                    problem: format!(
                        "\"{model}\" is not a Bedrock model id; use a Bedrock model or inference-profile id such as {DEFAULT_BEDROCK_MODEL} (or unset it for that default)"
                    ),
                });
            }
            Ok(model)
        }
        ModelProvider::OpenAi => configured.ok_or_else(|| ChoiceError {
            name: ENV_MODEL,
            problem: "must name the model with STEWARD_MODEL_PROVIDER=openai (for example gpt-5-mini on OpenAI, or the name your server lists under /v1/models)".to_owned(),
        }),
        ModelProvider::Anthropic => {
            let model = configured.unwrap_or_else(|| DEFAULT_MODEL.to_owned());
            // A Claude API model name has neither an ARN, a colon version suffix nor Bedrock's
            // `anthropic.` provider prefix; an id with one was meant for Bedrock.
            if model.starts_with("arn:") || model.contains(':') || model.contains("anthropic.") {
                return Err(ChoiceError {
                    name: ENV_MODEL,
                    problem: format!(
                        "\"{model}\" is a Bedrock model id, not a Claude API model name; use a name such as {DEFAULT_MODEL} (or unset it for that default), or set {ENV_MODEL_PROVIDER}=bedrock"
                    ),
                });
            }
            Ok(model)
        }
        _ => Ok(configured.unwrap_or_else(|| DEFAULT_MODEL.to_owned())),
    }
}

/// One line saying which model answers chat, for start-up output and the chat page
/// ("Anthropic claude-…", "scripted (test replay of chat.json)", "none configured").
pub fn describe(get: &dyn Fn(&str) -> Option<String>) -> Result<String, ChoiceError> {
    let provider = ModelProvider::from_lookup(get)?;
    Ok(match &provider {
        ModelProvider::Anthropic => format!("Anthropic {}", model_id(get, &provider)?),
        ModelProvider::Bedrock => format!("Amazon Bedrock {}", model_id(get, &provider)?),
        ModelProvider::OpenAi => format!("OpenAI-compatible {}", model_id(get, &provider)?),
        ModelProvider::Scripted(path) => format!("scripted (test replay of {})", path.display()),
        ModelProvider::None => "none configured".to_owned(),
    })
}
