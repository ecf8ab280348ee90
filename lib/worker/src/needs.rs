//! What the agent function needs to start (see `steward_edge::startup`): the table and the turn
//! queue, the media bucket, a model configuration that can work, and whole senders.

use steward_channels::{ENV_WHATSAPP_ACCESS_TOKEN, ENV_WHATSAPP_PHONE_NUMBER_ID};
use steward_edge::config::{ConfigError, ENV_QUEUE_URL, ENV_TABLE, Settings};
use steward_edge::startup::{self, Need};

use crate::model;

/// The agent function's needs, checked in this order at init. The WhatsApp webhook's half
/// (app secret, verify token) is the webhook function's; the template's rules pair the halves.
pub const AGENT_NEEDS: &[Need] = &[
    Need::Set {
        name: ENV_TABLE,
        fix: "set it to the DynamoDB table's name (the template passes its Table)",
    },
    Need::Set {
        name: ENV_QUEUE_URL,
        fix: "set it to the SQS FIFO turn queue's URL (the template passes its TurnQueue)",
    },
    Need::Set {
        name: steward_store::ENV_BLOB_BUCKET,
        fix: "set it to the S3 bucket photos and PDFs are kept in (the template passes its MediaBucket)",
    },
    Need::Rule(model::check_model),
    Need::Valid {
        name: steward_harness::retention::ENV_RETENTION_DAYS,
        check: steward_harness::retention::check_setting,
    },
    Need::Valid {
        name: steward_harness::budget::ENV_BUDGET_USD,
        check: steward_harness::budget::check_usd_setting,
    },
    Need::Valid {
        name: steward_harness::budget::ENV_BUDGET_TOKENS,
        check: steward_harness::budget::check_tokens_setting,
    },
    Need::AllOrNone {
        what: "the WhatsApp sender",
        names: &[ENV_WHATSAPP_ACCESS_TOKEN, ENV_WHATSAPP_PHONE_NUMBER_ID],
    },
];

/// Whether the agent function can start with `settings`; the error names the first setting
/// to fix.
pub fn check_agent_config(settings: &Settings) -> Result<(), ConfigError> {
    startup::check(settings, AGENT_NEEDS)
}

#[cfg(test)]
mod tests {
    use steward_channels::ENV_TELEGRAM_BOT_TOKEN;
    use steward_llm::choice::{ENV_ANTHROPIC_API_KEY, ENV_MODEL, ENV_MODEL_PROVIDER};

    use super::*;

    const COMPLETE: [(&str, &str); 8] = [
        (ENV_TABLE, "steward-table"),
        (steward_store::ENV_BLOB_BUCKET, "steward-media"),
        (
            ENV_QUEUE_URL,
            "https://sqs.eu-west-1.amazonaws.com/1/turns.fifo",
        ),
        (ENV_MODEL_PROVIDER, "anthropic"),
        (ENV_ANTHROPIC_API_KEY, "sk-ant-test"),
        (ENV_WHATSAPP_ACCESS_TOKEN, "EAAG"),
        (ENV_WHATSAPP_PHONE_NUMBER_ID, "1065"),
        (ENV_TELEGRAM_BOT_TOKEN, "1:x"),
    ];

    /// `COMPLETE` without `drop`, with `extra` on top.
    fn refusal(drop: &[&str], extra: &[(&'static str, &'static str)]) -> String {
        let pairs = COMPLETE
            .iter()
            .copied()
            .filter(|(k, _)| !drop.contains(k))
            .chain(extra.iter().copied());
        match check_agent_config(&Settings::from_pairs(pairs)) {
            Err(e) => e.to_string(),
            Ok(()) => String::new(),
        }
    }

    #[test]
    fn a_complete_agent_configuration_passes() {
        assert_eq!(refusal(&[], &[]), "");
        let bedrock = [
            (ENV_MODEL_PROVIDER, "bedrock"),
            (ENV_MODEL, "eu.anthropic.claude-sonnet-4-5-v1:0"),
        ];
        assert_eq!(refusal(&[ENV_ANTHROPIC_API_KEY], &bedrock), "");
        assert_eq!(
            refusal(
                &[ENV_WHATSAPP_ACCESS_TOKEN, ENV_WHATSAPP_PHONE_NUMBER_ID],
                &[]
            ),
            "",
            "a channel may be off"
        );
    }

    #[test]
    fn a_missing_secret_or_name_refuses_the_agent_naming_it() {
        let e = refusal(&[ENV_ANTHROPIC_API_KEY], &[]);
        assert!(e.starts_with("ANTHROPIC_API_KEY is not set: "), "{e}");
        assert!(e.contains("AnthropicApiKeyParam"), "{e}");
        let e = refusal(&[ENV_TABLE], &[]);
        assert!(e.starts_with("STEWARD_TABLE is not set: "), "{e}");
        let e = refusal(&[ENV_QUEUE_URL], &[]);
        assert!(e.starts_with("STEWARD_QUEUE_URL is not set: "), "{e}");
        let e = refusal(&[steward_store::ENV_BLOB_BUCKET], &[]);
        assert!(e.starts_with("STEWARD_BLOB_BUCKET is not set: "), "{e}");
    }

    #[test]
    fn a_retention_setting_that_cannot_be_used_refuses_the_agent() {
        let days = steward_harness::retention::ENV_RETENTION_DAYS;
        assert_eq!(refusal(&[], &[(days, "90")]), "");
        let e = refusal(&[], &[(days, "7")]);
        assert!(
            e.starts_with("STEWARD_RETENTION_DAYS: 7 days is too short; give at least 31"),
            "{e}"
        );
        let e = refusal(&[], &[(days, "a year")]);
        assert!(
            e.starts_with("STEWARD_RETENTION_DAYS: \"a year\" is not a whole number"),
            "{e}"
        );
    }

    #[test]
    fn a_budget_setting_that_cannot_be_used_refuses_the_agent() {
        let usd = steward_harness::budget::ENV_BUDGET_USD;
        let e = refusal(&[], &[(usd, "twenty")]);
        assert!(
            e.starts_with("STEWARD_BUDGET_USD: \"twenty\" is not an amount of US dollars"),
            "{e}"
        );
        let tokens = steward_harness::budget::ENV_BUDGET_TOKENS;
        let e = refusal(&[], &[(tokens, "-3")]);
        assert!(
            e.starts_with("STEWARD_BUDGET_TOKENS: \"-3\" is not a whole number"),
            "{e}"
        );
        assert!(
            check_agent_config(&Settings::from_pairs(
                COMPLETE
                    .into_iter()
                    .chain([(usd, "7.50"), (tokens, "2000000")])
            ))
            .is_ok()
        );
    }

    #[test]
    fn half_a_whatsapp_sender_refuses_the_agent_naming_the_missing_half() {
        let e = refusal(&[ENV_WHATSAPP_PHONE_NUMBER_ID], &[]);
        assert!(
            e.starts_with(
                "the WhatsApp sender is half configured: WHATSAPP_PHONE_NUMBER_ID is not set while WHATSAPP_ACCESS_TOKEN is set;"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_model_id_of_the_wrong_provider_refuses_the_agent() {
        let e = refusal(
            &[],
            &[
                (ENV_MODEL_PROVIDER, "bedrock"),
                (ENV_MODEL, "claude-sonnet-4-5"),
            ],
        );
        assert!(
            e.starts_with("STEWARD_MODEL: \"claude-sonnet-4-5\" is not a Bedrock model id"),
            "{e}"
        );
        let e = refusal(&[], &[(ENV_MODEL, "us.anthropic.claude-sonnet-4-5-v1:0")]);
        assert!(e.starts_with("STEWARD_MODEL: \"us.anthropic.claude-sonnet-4-5-v1:0\" is a Bedrock model id, not a Claude API model name"), "{e}");
        assert!(e.contains("STEWARD_MODEL_PROVIDER=bedrock"), "{e}");
        let e = refusal(&[], &[(ENV_MODEL_PROVIDER, "openai")]);
        assert!(e.starts_with("STEWARD_MODEL: must name the model"), "{e}");
        let e = refusal(
            &[],
            &[(ENV_MODEL_PROVIDER, "openai"), (ENV_MODEL, "gpt-5-mini")],
        );
        assert!(e.starts_with("OPENAI_API_KEY is not set: "), "{e}");
        let e = refusal(&[], &[(ENV_MODEL_PROVIDER, "gpt")]);
        assert!(e.starts_with("STEWARD_MODEL_PROVIDER: "), "{e}");
    }
}
