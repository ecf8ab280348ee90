//! The webhook routes' state from [`Settings`]: the queue, and each channel's secrets.

use std::sync::Arc;

use steward_channels::{
    ENV_TELEGRAM_WEBHOOK_SECRET, ENV_WHATSAPP_APP_SECRET, ENV_WHATSAPP_VERIFY_TOKEN, Secret,
};
use steward_edge::config::{ConfigError, ENV_QUEUE_URL, Settings};
use steward_edge::startup::{self, Need};
use steward_store::TurnQueue;

use crate::state::{WebhookState, WhatsappSecrets};

/// The secrets the webhook function reads (each may be given as `NAME_PARAM`).
pub const WEBHOOK_SECRETS: [&str; 3] = [
    ENV_WHATSAPP_APP_SECRET,
    ENV_WHATSAPP_VERIFY_TOKEN,
    ENV_TELEGRAM_WEBHOOK_SECRET,
];

/// The webhook function's needs, checked in this order at init: the turn queue, WhatsApp's
/// webhook secrets together or not at all, and a Telegram webhook secret that cannot be
/// guessed. (The senders' halves are the agent's; the template's rules pair the two.)
pub const WEBHOOK_NEEDS: &[Need] = &[
    Need::Set {
        name: ENV_QUEUE_URL,
        fix: "set it to the SQS FIFO turn queue's URL (the template passes its TurnQueue)",
    },
    Need::AllOrNone {
        what: "the WhatsApp webhook",
        names: &[ENV_WHATSAPP_APP_SECRET, ENV_WHATSAPP_VERIFY_TOKEN],
    },
    Need::Rule(telegram_secret_is_strong),
];

/// Whether the webhook function can start with `settings`; the error names the first setting
/// to fix.
pub fn check_webhook_config(settings: &Settings) -> Result<(), ConfigError> {
    startup::check(settings, WEBHOOK_NEEDS)
}

/// A set Telegram webhook secret must be one that cannot be guessed: it is all that
/// authenticates an update, whose sender *is* the identity (the secret is never printed).
fn telegram_secret_is_strong(settings: &Settings) -> Result<(), ConfigError> {
    match settings.get(ENV_TELEGRAM_WEBHOOK_SECRET) {
        Some(secret) => steward_channels::telegram::check_webhook_secret(&secret).map_err(|weak| {
            ConfigError::Invalid {
                name: ENV_TELEGRAM_WEBHOOK_SECRET,
                problem: weak.to_string(),
            }
        }),
        None => Ok(()),
    }
}

/// The webhook routes' state: `queue`, and each channel's secrets when they are all set (a
/// channel with only some of them is a configuration error, not a silently closed door). A
/// Telegram webhook secret that is short or outside Telegram's character set is refused.
pub fn webhook_state(
    settings: &Settings,
    queue: Arc<dyn TurnQueue>,
) -> Result<WebhookState, ConfigError> {
    let whatsapp = match (
        settings.get(ENV_WHATSAPP_APP_SECRET),
        settings.get(ENV_WHATSAPP_VERIFY_TOKEN),
    ) {
        (Some(app_secret), Some(verify_token)) => Some(WhatsappSecrets {
            app_secret: Secret::new(app_secret),
            verify_token: Secret::new(verify_token),
        }),
        (None, None) => None,
        (None, Some(_)) => return Err(ConfigError::Missing(ENV_WHATSAPP_APP_SECRET)),
        (Some(_), None) => return Err(ConfigError::Missing(ENV_WHATSAPP_VERIFY_TOKEN)),
    };
    let telegram = match settings.get(ENV_TELEGRAM_WEBHOOK_SECRET) {
        Some(secret) => {
            telegram_secret_is_strong(settings)?;
            Some(Secret::new(secret))
        }
        None => None,
    };
    tracing::info!(
        whatsapp = whatsapp.is_some(),
        telegram = telegram.is_some(),
        "webhooks configured"
    );
    Ok(WebhookState {
        queue,
        whatsapp,
        telegram,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct NoQueue;

    #[async_trait::async_trait]
    impl TurnQueue for NoQueue {
        async fn enqueue(
            &self,
            _group: &str,
            _dedupe_id: &str,
            _body: &str,
        ) -> Result<(), steward_store::QueueError> {
            Ok(())
        }
    }

    #[test]
    fn webhook_channels_need_all_their_secrets() {
        let queue: Arc<dyn TurnQueue> = Arc::new(NoQueue);
        let none = webhook_state(&Settings::default(), queue.clone());
        assert!(none.is_ok_and(|s| s.whatsapp.is_none() && s.telegram.is_none()));
        let half = Settings::from_pairs([(ENV_WHATSAPP_APP_SECRET, "s")]);
        assert!(matches!(
            webhook_state(&half, queue.clone()),
            Err(ConfigError::Missing(ENV_WHATSAPP_VERIFY_TOKEN))
        ));
        let all = Settings::from_pairs([
            (ENV_WHATSAPP_APP_SECRET, "s"),
            (ENV_WHATSAPP_VERIFY_TOKEN, "v"),
            (ENV_TELEGRAM_WEBHOOK_SECRET, STRONG_SECRET),
        ]);
        assert!(
            webhook_state(&all, queue).is_ok_and(|s| s.whatsapp.is_some() && s.telegram.is_some())
        );
    }

    /// The start-up check: the queue, WhatsApp's secrets in pairs, a strong Telegram secret.
    #[test]
    fn the_webhook_start_up_check_names_what_is_missing() {
        let complete = [
            (
                ENV_QUEUE_URL,
                "https://sqs.eu-west-1.amazonaws.com/1/turns.fifo",
            ),
            (ENV_WHATSAPP_APP_SECRET, "s"),
            (ENV_WHATSAPP_VERIFY_TOKEN, "v"),
            (ENV_TELEGRAM_WEBHOOK_SECRET, STRONG_SECRET),
        ];
        let without = |name: &str| {
            let pairs = complete.iter().copied().filter(|(k, _)| *k != name);
            check_webhook_config(&Settings::from_pairs(pairs))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(without("none"), "", "a complete configuration passes");
        assert_eq!(
            without(ENV_TELEGRAM_WEBHOOK_SECRET),
            "",
            "Telegram may be off"
        );
        let e = without(ENV_QUEUE_URL);
        assert!(e.starts_with("STEWARD_QUEUE_URL is not set: "), "{e}");
        let e = without(ENV_WHATSAPP_VERIFY_TOKEN);
        assert!(
            e.starts_with("the WhatsApp webhook is half configured: WHATSAPP_VERIFY_TOKEN is not set while WHATSAPP_APP_SECRET is set;"),
            "{e}"
        );
        let weak = Settings::from_pairs([
            (ENV_QUEUE_URL, "q"),
            (ENV_TELEGRAM_WEBHOOK_SECRET, "guessable"),
        ]);
        let e = check_webhook_config(&weak)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("TELEGRAM_WEBHOOK_SECRET: "), "{e}");
    }

    const STRONG_SECRET: &str = "0f3c9a7e5b2d4816a0c3e9f7b5d1a2c4";

    /// Security review finding 10: a guessable Telegram webhook secret stops the start, with
    /// one sentence naming the variable and how to make a good one, and never the secret.
    #[test]
    fn weak_telegram_webhook_secret_is_a_start_up_error() {
        let queue: Arc<dyn TurnQueue> = Arc::new(NoQueue);
        for weak in [
            "any random string",
            "short-secret",
            &format!("{STRONG_SECRET}!"),
        ] {
            let settings = Settings::from_pairs([(ENV_TELEGRAM_WEBHOOK_SECRET, weak)]);
            let err = webhook_state(&settings, queue.clone())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.starts_with("TELEGRAM_WEBHOOK_SECRET: "), "{err}");
            assert!(err.contains("openssl rand -hex 32"), "{err}");
            assert!(!err.contains(weak), "the secret is never printed: {err}");
        }
        let good = Settings::from_pairs([(ENV_TELEGRAM_WEBHOOK_SECRET, STRONG_SECRET)]);
        assert!(webhook_state(&good, queue).is_ok_and(|s| s.telegram.is_some()));
    }
}
