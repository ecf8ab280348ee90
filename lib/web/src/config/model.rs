//! The model client from configuration: `STEWARD_MODEL_PROVIDER` (`anthropic`, `bedrock`,
//! `scripted:<path>`, `none`, or unset = `anthropic` when `ANTHROPIC_API_KEY` is set, else no
//! model), `STEWARD_MODEL`, `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`. Without a model the
//! agent still runs: a turn answers with the not-plugged-in message.
//!
//! `scripted:<path>` is for tests and demos: a [`ReplayClient`] plays the JSON script at
//! `<path>` (format in [`steward_llm::replay`]), checked whole at start-up, one step per model
//! call across all conversations. When the steps run out, a turn fails as in a model outage:
//! the person gets the harness's "something went wrong" reply. It is labelled
//! `scripted (test replay of <path>)` wherever the model is shown.

use std::path::PathBuf;
use std::sync::Arc;

use steward_harness::ModelSettings;
use steward_llm::{
    AnthropicClient, AnthropicConfig, BedrockClient, DEFAULT_MODEL, LlmClient, ReplayClient,
};

use super::{
    ConfigError, ENV_ANTHROPIC_API_KEY, ENV_ANTHROPIC_BASE_URL, ENV_MODEL, ENV_MODEL_PROVIDER,
    Settings,
};

/// The prefix of `STEWARD_MODEL_PROVIDER` naming a script to replay: `scripted:<path>`.
pub const SCRIPTED_PREFIX: &str = "scripted:";

/// Which provider serves the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelProvider {
    /// The Anthropic Messages API over HTTPS.
    Anthropic,
    /// Claude on Amazon Bedrock (IAM credentials of the function).
    Bedrock,
    /// A scripted conversation replayed from this JSON file (tests and demos, no network).
    Scripted(PathBuf),
    /// No model: turns answer that none is configured.
    None,
}

impl ModelProvider {
    /// The provider `settings` ask for.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let raw = settings.get(ENV_MODEL_PROVIDER);
        // The path keeps its case; only the provider word is case-insensitive.
        if let Some(raw) = raw.as_deref().map(str::trim)
            && raw.len() >= SCRIPTED_PREFIX.len()
            && raw.is_char_boundary(SCRIPTED_PREFIX.len())
            && raw[..SCRIPTED_PREFIX.len()].eq_ignore_ascii_case(SCRIPTED_PREFIX)
        {
            let path = raw[SCRIPTED_PREFIX.len()..].trim();
            if path.is_empty() {
                return Err(ConfigError::Invalid {
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
            Some("none") => Ok(Self::None),
            None if settings.get(ENV_ANTHROPIC_API_KEY).is_some() => Ok(Self::Anthropic),
            None => Ok(Self::None),
            Some(other) => Err(ConfigError::Invalid {
                name: ENV_MODEL_PROVIDER,
                problem: format!("\"{other}\" is not anthropic, bedrock, scripted:<path> or none"),
            }),
        }
    }
}

/// One line saying which model answers chat, for start-up output and the chat page
/// ("Anthropic claude-…", "scripted (test replay of chat.json)", "none configured").
pub fn describe(settings: &Settings) -> Result<String, ConfigError> {
    let model = settings
        .get(ENV_MODEL)
        .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    Ok(match ModelProvider::from_settings(settings)? {
        ModelProvider::Anthropic => format!("Anthropic {model}"),
        ModelProvider::Bedrock => format!("Amazon Bedrock {model}"),
        ModelProvider::Scripted(path) => format!("scripted (test replay of {})", path.display()),
        ModelProvider::None => "none configured".to_owned(),
    })
}

/// The configured model client (None: no model) and the settings every request uses. `sdk`
/// is used for Bedrock only.
pub fn model_client(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
) -> Result<(Option<Arc<dyn LlmClient>>, ModelSettings), ConfigError> {
    let model = settings
        .get(ENV_MODEL)
        .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    let provider = ModelProvider::from_settings(settings)?;
    let client: Option<Arc<dyn LlmClient>> = match &provider {
        ModelProvider::Anthropic => {
            let mut config = AnthropicConfig::new(settings.require(ENV_ANTHROPIC_API_KEY)?);
            if let Some(base) = settings.get(ENV_ANTHROPIC_BASE_URL) {
                config = config.with_base_url(base.trim_end_matches('/'));
            }
            let client = AnthropicClient::new(config).map_err(|e| ConfigError::Client {
                what: "the Anthropic client",
                message: e.to_string(),
            })?;
            Some(Arc::new(client))
        }
        ModelProvider::Bedrock => Some(Arc::new(BedrockClient::new(sdk))),
        ModelProvider::Scripted(path) => {
            let client = ReplayClient::from_file(path).map_err(|e| ConfigError::Invalid {
                name: ENV_MODEL_PROVIDER,
                problem: e.to_string(),
            })?;
            tracing::warn!(steps = client.steps(), script = %path.display(), "the model is a scripted test replay, not a real model");
            Some(Arc::new(client))
        }
        ModelProvider::None => None,
    };
    tracing::info!(?provider, %model, "model configured");
    Ok((client, ModelSettings::new(model)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_defaults_to_anthropic_only_with_a_key() {
        let p = |pairs: &[(&str, &str)]| {
            ModelProvider::from_settings(&Settings::from_pairs(pairs.iter().copied()))
        };
        assert_eq!(p(&[]).ok(), Some(ModelProvider::None));
        assert_eq!(
            p(&[(ENV_ANTHROPIC_API_KEY, "k")]).ok(),
            Some(ModelProvider::Anthropic)
        );
        assert_eq!(
            p(&[
                (ENV_MODEL_PROVIDER, "Bedrock"),
                (ENV_ANTHROPIC_API_KEY, "k")
            ])
            .ok(),
            Some(ModelProvider::Bedrock)
        );
        assert_eq!(
            p(&[(ENV_MODEL_PROVIDER, "none"), (ENV_ANTHROPIC_API_KEY, "k")]).ok(),
            Some(ModelProvider::None)
        );
        assert!(p(&[(ENV_MODEL_PROVIDER, "gpt")]).is_err());
        assert_eq!(
            p(&[(ENV_MODEL_PROVIDER, "Scripted:./Demo Chat.json")]).ok(),
            Some(ModelProvider::Scripted(PathBuf::from("./Demo Chat.json"))),
            "the path keeps its case and spaces"
        );
        assert!(p(&[(ENV_MODEL_PROVIDER, "scripted:")]).is_err());
    }

    #[test]
    fn the_scripted_provider_is_labelled_as_a_test_replay() {
        let settings = Settings::from_pairs([
            (ENV_MODEL_PROVIDER, "scripted:/tmp/chat.json"),
            (ENV_ANTHROPIC_API_KEY, "k"),
        ]);
        assert_eq!(
            describe(&settings).ok().as_deref(),
            Some("scripted (test replay of /tmp/chat.json)")
        );
        assert_eq!(
            describe(&Settings::default()).ok().as_deref(),
            Some("none configured")
        );
    }

    #[test]
    fn a_scripted_provider_checks_its_file_at_start() {
        let dir = std::env::temp_dir().join(format!("steward-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let good = dir.join("good.json");
        std::fs::write(&good, r#"[{"tool": "list_events"}, {"text": "None yet."}]"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let bad = dir.join("bad.json");
        std::fs::write(&bad, r#"[{"text": "fine"}, {"tool": "x", "text": "both"}]"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let sdk = aws_config::SdkConfig::builder().build();
        let provider = |path: &std::path::Path| {
            Settings::from_pairs([(
                ENV_MODEL_PROVIDER,
                format!("scripted:{}", path.display()).as_str(),
            )])
        };
        let (client, _) = model_client(&provider(&good), &sdk).unwrap_or_else(|e| panic!("{e}"));
        assert!(client.is_some());
        let message = match model_client(&provider(&bad), &sdk) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a bad script loads"),
        };
        assert!(message.contains("step 2"), "{message}");
        let message = match model_client(&provider(&dir.join("missing.json")), &sdk) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a missing script loads"),
        };
        assert!(message.contains("missing.json"), "{message}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn anthropic_without_a_key_is_an_error() {
        let settings = Settings::from_pairs([(ENV_MODEL_PROVIDER, "anthropic")]);
        let sdk = aws_config::SdkConfig::builder().build();
        assert!(matches!(
            model_client(&settings, &sdk),
            Err(ConfigError::Missing(ENV_ANTHROPIC_API_KEY))
        ));
        let settings = Settings::from_pairs([(ENV_ANTHROPIC_API_KEY, "k")]);
        let (client, model) = model_client(&settings, &sdk).unwrap_or_else(|e| panic!("{e}"));
        assert!(client.is_some());
        assert_eq!(model.model, DEFAULT_MODEL);
    }
}
