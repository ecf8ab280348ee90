//! The model client from configuration: `STEWARD_MODEL_PROVIDER` (`anthropic`, `bedrock`,
//! `openai`, `scripted:<path>`, `none`, or unset = `anthropic` when `ANTHROPIC_API_KEY` is set,
//! else no model), `STEWARD_MODEL`, `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`,
//! `OPENAI_API_KEY` and `OPENAI_BASE_URL`. Without a model the agent still runs: a turn answers
//! with the not-plugged-in message.
//!
//! The model id defaults per provider: `DEFAULT_MODEL` on the Claude API,
//! `DEFAULT_BEDROCK_MODEL` on Bedrock; an OpenAI-compatible server has no sensible default,
//! so `STEWARD_MODEL` is required there. A Bedrock id that cannot be one (no provider prefix,
//! not an ARN — typically a Claude API id) is refused at start-up naming `STEWARD_MODEL`; an id
//! that is well-formed but not served in the region is reported by the first call as
//! `ModelUnavailable`, naming `STEWARD_MODEL` too (checking at start-up would cost a model call
//! on every cold start). Request features a provider cannot take are logged once here, at
//! start-up, and left out of every request by the client.
//!
//! `scripted:<path>` is for tests and demos: a [`ReplayClient`] plays the JSON script at
//! `<path>` (format in [`steward_llm::replay`]), checked whole at start-up, one step per model
//! call across all conversations. When the steps run out, a turn fails as in a model outage:
//! the person gets the harness's "something went wrong" reply. It is labelled
//! `scripted (test replay of <path>)` wherever the model is shown.

use std::sync::Arc;

use steward_edge::config::{ConfigError, Settings};
use steward_harness::ModelSettings;
use steward_llm::choice::{self, ChoiceError};
use steward_llm::{
    AnthropicClient, AnthropicConfig, BedrockClient, ConverseFeatures, LlmClient,
    OPENAI_DROPPED_FEATURES, OpenAiClient, OpenAiConfig, ReplayClient,
};

pub use steward_llm::choice::{
    ENV_ANTHROPIC_API_KEY, ENV_ANTHROPIC_BASE_URL, ENV_MODEL, ENV_MODEL_PROVIDER,
    ENV_OPENAI_API_KEY, ENV_OPENAI_BASE_URL, ModelProvider, SCRIPTED_PREFIX,
};

/// The secrets the agent function reads (each may be given as `NAME_PARAM`).
pub const AGENT_SECRETS: [&str; 4] = [
    ENV_ANTHROPIC_API_KEY,
    ENV_OPENAI_API_KEY,
    steward_channels::ENV_WHATSAPP_ACCESS_TOKEN,
    steward_channels::ENV_TELEGRAM_BOT_TOKEN,
];

/// A model setting that cannot be used, as a configuration error naming it.
fn invalid(error: ChoiceError) -> ConfigError {
    ConfigError::Invalid {
        name: error.name,
        problem: error.problem,
    }
}

/// The provider `settings` ask for.
pub fn provider(settings: &Settings) -> Result<ModelProvider, ConfigError> {
    ModelProvider::from_lookup(&settings.lookup()).map_err(invalid)
}

/// The model id `provider` uses: `STEWARD_MODEL`, else the provider's default (see
/// [`choice::model_id`]).
pub fn model_id(settings: &Settings, provider: &ModelProvider) -> Result<String, ConfigError> {
    choice::model_id(&settings.lookup(), provider).map_err(invalid)
}

/// One line saying which model answers chat (see [`choice::describe`]).
pub fn describe(settings: &Settings) -> Result<String, ConfigError> {
    choice::describe(&settings.lookup()).map_err(invalid)
}

/// Whether the model settings can work, without building a client: a known provider, a model
/// id of the provider's shape (a Bedrock model or inference-profile id on Bedrock, a Claude API
/// model name on the Claude API, a named model on an OpenAI-compatible server) and the
/// provider's key. Part of the agent's start-up check (`crate::needs`).
pub fn check_model(settings: &Settings) -> Result<(), ConfigError> {
    let provider = provider(settings)?;
    model_id(settings, &provider)?;
    match provider {
        ModelProvider::Anthropic if settings.get(ENV_ANTHROPIC_API_KEY).is_none() => {
            Err(ConfigError::Required {
                name: ENV_ANTHROPIC_API_KEY,
                fix: "the Claude API needs its key (on AWS, AnthropicApiKeyParam names the SSM parameter holding it); or choose another STEWARD_MODEL_PROVIDER",
            })
        }
        ModelProvider::OpenAi
            if settings.get(ENV_OPENAI_API_KEY).is_none()
                && settings.get(ENV_OPENAI_BASE_URL).is_none() =>
        {
            Err(ConfigError::Required {
                name: ENV_OPENAI_API_KEY,
                fix: "OpenAI's API needs a key (on AWS, OpenaiApiKeyParam); for your own server set OPENAI_BASE_URL instead",
            })
        }
        _ => Ok(()),
    }
}

/// The configured model client (None: no model) and the settings every request uses. `sdk`
/// is used for Bedrock only.
pub fn model_client(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
) -> Result<(Option<Arc<dyn LlmClient>>, ModelSettings), ConfigError> {
    let provider = provider(settings)?;
    let model = model_id(settings, &provider)?;
    let mut dropped: Vec<&'static str> = Vec::new();
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
        ModelProvider::Bedrock => {
            dropped = ConverseFeatures::for_model(&model).dropped();
            Some(Arc::new(BedrockClient::new(sdk)))
        }
        ModelProvider::OpenAi => {
            let base = settings.get(ENV_OPENAI_BASE_URL);
            let key = settings.get(ENV_OPENAI_API_KEY);
            // OpenAI's own API always needs a key; a self-hosted server may take none.
            if base.is_none() && key.is_none() {
                return Err(ConfigError::Missing(ENV_OPENAI_API_KEY));
            }
            let mut config = OpenAiConfig::new(key);
            if let Some(base) = &base {
                config = config.with_base_url(base.trim_end_matches('/'));
            }
            let client = OpenAiClient::new(config).map_err(|e| ConfigError::Invalid {
                name: if base.is_some() {
                    ENV_OPENAI_BASE_URL
                } else {
                    ENV_OPENAI_API_KEY
                },
                problem: e.to_string(),
            })?;
            dropped = OPENAI_DROPPED_FEATURES.to_vec();
            Some(Arc::new(client))
        }
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
    if !dropped.is_empty() {
        tracing::info!(
            ?provider,
            %model,
            left_out = %dropped.join("; "),
            "this provider or model does not take every request feature; those are left out of every request"
        );
    }
    Ok((client, ModelSettings::new(model)))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use steward_llm::{DEFAULT_BEDROCK_MODEL, DEFAULT_MODEL};

    use super::*;

    #[test]
    fn provider_defaults_to_anthropic_only_with_a_key() {
        let p = |pairs: &[(&str, &str)]| provider(&Settings::from_pairs(pairs.iter().copied()));
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
        assert_eq!(
            p(&[(ENV_MODEL_PROVIDER, " OpenAI ")]).ok(),
            Some(ModelProvider::OpenAi)
        );
        match p(&[(ENV_MODEL_PROVIDER, "gpt")]) {
            Err(e) => assert!(e.to_string().contains(ENV_MODEL_PROVIDER), "{e}"),
            Ok(other) => panic!("an unknown provider was accepted: {other:?}"),
        }
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

    fn client_error(settings: &Settings) -> String {
        let sdk = aws_config::SdkConfig::builder().build();
        match model_client(settings, &sdk) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("the configuration was accepted"),
        }
    }

    #[test]
    fn bedrock_defaults_to_a_bedrock_id_and_refuses_a_claude_api_id() {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let settings = Settings::from_pairs([(ENV_MODEL_PROVIDER, "bedrock")]);
        let (client, model) = model_client(&settings, &sdk).unwrap_or_else(|e| panic!("{e}"));
        assert!(client.is_some());
        assert_eq!(model.model, DEFAULT_BEDROCK_MODEL);
        assert_eq!(
            describe(&settings).ok(),
            Some(format!("Amazon Bedrock {DEFAULT_BEDROCK_MODEL}"))
        );
        let settings = Settings::from_pairs([
            (ENV_MODEL_PROVIDER, "bedrock"),
            (ENV_MODEL, "claude-sonnet-5-5"),
        ]);
        let message = client_error(&settings);
        assert!(message.starts_with(ENV_MODEL), "{message}");
        assert!(message.contains(DEFAULT_BEDROCK_MODEL), "{message}");
        for id in [
            "us.amazon.nova-pro-v1:0",
            "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc",
        ] {
            let settings = Settings::from_pairs([(ENV_MODEL_PROVIDER, "bedrock"), (ENV_MODEL, id)]);
            let (_, model) = model_client(&settings, &sdk).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(model.model, id);
        }
    }

    #[test]
    fn openai_needs_a_model_and_a_key_or_a_base_url() {
        let sdk = aws_config::SdkConfig::builder().build();
        let message = client_error(&Settings::from_pairs([
            (ENV_MODEL_PROVIDER, "openai"),
            (ENV_OPENAI_API_KEY, "sk-test"),
        ]));
        assert!(message.starts_with(ENV_MODEL), "{message}");
        let message = client_error(&Settings::from_pairs([
            (ENV_MODEL_PROVIDER, "openai"),
            (ENV_MODEL, "gpt-5-mini"),
        ]));
        assert!(message.contains(ENV_OPENAI_API_KEY), "{message}");
        let message = client_error(&Settings::from_pairs([
            (ENV_MODEL_PROVIDER, "openai"),
            (ENV_MODEL, "llama3.1"),
            (ENV_OPENAI_BASE_URL, "localhost:11434/v1"),
        ]));
        assert!(message.starts_with(ENV_OPENAI_BASE_URL), "{message}");

        let local = Settings::from_pairs([
            (ENV_MODEL_PROVIDER, "openai"),
            (ENV_MODEL, "llama3.1"),
            (ENV_OPENAI_BASE_URL, "http://localhost:11434/v1/"),
        ]);
        let (client, model) = model_client(&local, &sdk).unwrap_or_else(|e| panic!("{e}"));
        assert!(client.is_some(), "a local server needs no key");
        assert_eq!(model.model, "llama3.1");
        assert_eq!(
            describe(&local).ok().as_deref(),
            Some("OpenAI-compatible llama3.1")
        );
        let hosted = Settings::from_pairs([
            (ENV_MODEL_PROVIDER, "openai"),
            (ENV_MODEL, "gpt-5-mini"),
            (ENV_OPENAI_API_KEY, "sk-test"),
        ]);
        assert!(model_client(&hosted, &sdk).is_ok());
        assert_eq!(
            describe(&hosted).ok().as_deref(),
            Some("OpenAI-compatible gpt-5-mini")
        );
    }
}
