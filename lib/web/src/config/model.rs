//! The model client from configuration: `STEWARD_MODEL_PROVIDER` (`anthropic`, `bedrock`,
//! `none`, or unset = `anthropic` when `ANTHROPIC_API_KEY` is set, else no model),
//! `STEWARD_MODEL`, `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`. Without a model the agent
//! still runs: a turn answers with the not-plugged-in message.

use std::sync::Arc;

use steward_harness::ModelSettings;
use steward_llm::{AnthropicClient, AnthropicConfig, BedrockClient, DEFAULT_MODEL, LlmClient};

use super::{
    ConfigError, ENV_ANTHROPIC_API_KEY, ENV_ANTHROPIC_BASE_URL, ENV_MODEL, ENV_MODEL_PROVIDER,
    Settings,
};

/// Which provider serves the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelProvider {
    /// The Anthropic Messages API over HTTPS.
    Anthropic,
    /// Claude on Amazon Bedrock (IAM credentials of the function).
    Bedrock,
    /// No model: turns answer that none is configured.
    None,
}

impl ModelProvider {
    /// The provider `settings` ask for.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        match settings
            .get(ENV_MODEL_PROVIDER)
            .map(|p| p.to_ascii_lowercase())
            .as_deref()
        {
            Some("anthropic") => Ok(Self::Anthropic),
            Some("bedrock") => Ok(Self::Bedrock),
            Some("none") => Ok(Self::None),
            None if settings.get(ENV_ANTHROPIC_API_KEY).is_some() => Ok(Self::Anthropic),
            None => Ok(Self::None),
            Some(other) => Err(ConfigError::Invalid {
                name: ENV_MODEL_PROVIDER,
                problem: format!("\"{other}\" is not anthropic, bedrock or none"),
            }),
        }
    }
}

/// One line saying which model answers chat, for start-up output and the chat page
/// ("Anthropic claude-…", "none configured").
pub fn describe(settings: &Settings) -> Result<String, ConfigError> {
    let model = settings
        .get(ENV_MODEL)
        .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    Ok(match ModelProvider::from_settings(settings)? {
        ModelProvider::Anthropic => format!("Anthropic {model}"),
        ModelProvider::Bedrock => format!("Amazon Bedrock {model}"),
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
    let client: Option<Arc<dyn LlmClient>> = match provider {
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
