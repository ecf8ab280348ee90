//! What the functions run, built from [`Settings`]: the webhook routes' state, the senders,
//! the links shown to strangers, and the turn worker with its agent.

use std::sync::Arc;

use steward_channels::{
    ChannelSender, ENV_TELEGRAM_WEBHOOK_SECRET, ENV_WHATSAPP_ACCESS_TOKEN, ENV_WHATSAPP_APP_SECRET,
    ENV_WHATSAPP_PHONE_NUMBER_ID, ENV_WHATSAPP_VERIFY_TOKEN, Secret, TelegramConfig,
    TelegramSender, WhatsappConfig, WhatsappSender,
};
use steward_events::{DOMAIN_PROMPT, EventsConfig, EventsContext};
use steward_harness::{Agent, Domain, Links, TurnLimits};
use steward_store::{SystemClock, Table, TurnQueue};

use super::{ConfigError, ENV_PUBLIC_URL, Settings, model};
use crate::agent_batch::{Senders, TurnWorker};
use crate::webhooks::{WebhookState, WhatsappSecrets};

/// A first request the welcome suggests after linking.
pub const FIRST_REQUEST: &str =
    "create an event called Summer Meetup next Saturday, 10:00 to 16:00";

/// The product's name in replies and links.
pub const PRODUCT: &str = "Steward";

/// Steward's chat domain: the events tools (each declaring what it holds), prompt and per-turn
/// context.
pub fn events_domain(events: &EventsConfig) -> Domain {
    Domain {
        product: PRODUCT.into(),
        prompt: DOMAIN_PROMPT.into(),
        registry: Arc::new(steward_events::registry(events)),
        context: Arc::new(EventsContext),
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
            // The secret is all that authenticates an update, whose sender *is* the identity:
            // refuse to start with one that could be guessed (never print it).
            steward_channels::telegram::check_webhook_secret(&secret).map_err(|weak| {
                ConfigError::Invalid {
                    name: ENV_TELEGRAM_WEBHOOK_SECRET,
                    problem: weak.to_string(),
                }
            })?;
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

/// The senders of the configured channels (WhatsApp needs its access token and phone number
/// id, Telegram its bot token; a channel without them has no sender), sharing one HTTP client.
/// Half a WhatsApp sender (the token without the phone-number id, or the id without the
/// token) refuses the start naming the missing setting: it would accept messages it can never
/// answer.
pub fn senders(settings: &Settings) -> Result<Senders, ConfigError> {
    match (
        settings.get(ENV_WHATSAPP_ACCESS_TOKEN).is_some(),
        settings.get(ENV_WHATSAPP_PHONE_NUMBER_ID).is_some(),
    ) {
        (true, false) => return Err(ConfigError::Missing(ENV_WHATSAPP_PHONE_NUMBER_ID)),
        (false, true) => return Err(ConfigError::Missing(ENV_WHATSAPP_ACCESS_TOKEN)),
        _ => {}
    }
    let http = steward_channels::http_client().map_err(|e| ConfigError::Client {
        what: "the channels' HTTP client",
        message: e.to_string(),
    })?;
    let whatsapp: Option<Arc<dyn ChannelSender>> =
        match WhatsappConfig::from_lookup(settings.lookup()) {
            Ok(config) => Some(Arc::new(WhatsappSender::new(config, http.clone()))),
            Err(why) => {
                tracing::info!(%why, "WhatsApp sender not configured");
                None
            }
        };
    let telegram: Option<Arc<dyn ChannelSender>> =
        match TelegramConfig::from_lookup(settings.lookup()) {
            Ok(config) => Some(Arc::new(TelegramSender::new(config, http))),
            Err(why) => {
                tracing::info!(%why, "Telegram sender not configured");
                None
            }
        };
    Ok(Senders::new(whatsapp, telegram))
}

/// The links strangers are pointed to (`STEWARD_PUBLIC_URL`), with a first request to suggest.
pub fn links(settings: &Settings, product: &str) -> Links {
    Links::new(settings.get(ENV_PUBLIC_URL).as_deref())
        .with_product(product)
        .with_first_request(FIRST_REQUEST)
}

/// The turn worker for `domain` over `table`: the model from `settings` (see
/// [`model::model_client`]), the configured senders and the links.
pub fn turn_worker(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
    table: Arc<dyn Table>,
    domain: Domain,
) -> Result<TurnWorker, ConfigError> {
    let (client, model_settings) = model::model_client(settings, sdk)?;
    let links = links(settings, &domain.product);
    let agent = Agent::new(
        table,
        Arc::new(SystemClock),
        client,
        model_settings,
        TurnLimits::default(),
        domain,
    );
    Ok(TurnWorker::new(Arc::new(agent), senders(settings)?, links))
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

    #[test]
    fn half_a_whatsapp_sender_refuses_the_start_naming_what_is_missing() {
        let token_only = senders(&Settings::from_pairs([(ENV_WHATSAPP_ACCESS_TOKEN, "EAAG")]));
        assert!(
            matches!(
                token_only,
                Err(ConfigError::Missing(ENV_WHATSAPP_PHONE_NUMBER_ID))
            ),
            "{:?}",
            token_only.err()
        );
        let id_only = senders(&Settings::from_pairs([(
            ENV_WHATSAPP_PHONE_NUMBER_ID,
            "1065",
        )]));
        let err = id_only.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err, "WHATSAPP_ACCESS_TOKEN is not set");
        let both = senders(&Settings::from_pairs([
            (ENV_WHATSAPP_ACCESS_TOKEN, "EAAG"),
            (ENV_WHATSAPP_PHONE_NUMBER_ID, "1065"),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            both.for_channel(steward_channels::Channel::Whatsapp)
                .is_some()
        );
    }

    #[test]
    fn senders_exist_for_configured_channels_only() {
        let s = senders(&Settings::from_pairs([("TELEGRAM_BOT_TOKEN", "1:x")]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.for_channel(steward_channels::Channel::Telegram).is_some());
        assert!(s.for_channel(steward_channels::Channel::Whatsapp).is_none());
        assert!(s.for_channel(steward_channels::Channel::Web).is_some());
    }
}
