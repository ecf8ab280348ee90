//! What the worker runs, built from [`Settings`]: the senders, the links shown to strangers, and
//! the turn worker with its agent over a domain the caller wires (`steward_events::domain`).

use std::sync::Arc;

use steward_channels::{
    ChannelSender, ENV_WHATSAPP_ACCESS_TOKEN, ENV_WHATSAPP_PHONE_NUMBER_ID, MediaFetcher,
    TelegramConfig, TelegramMediaFetcher, TelegramSender, WhatsappConfig, WhatsappMediaFetcher,
    WhatsappSender,
};
use steward_edge::config::{ConfigError, ENV_PUBLIC_URL, Settings};
use steward_harness::budget::{Budget, ENV_BUDGET_TOKENS, ENV_BUDGET_USD};
use steward_harness::{Agent, Domain, Links, MediaPorts, TurnLimits};
use steward_store::{
    BlobStore, ENV_BLOB_BUCKET, ENV_BLOB_PATH_STYLE, S3BlobSettings, S3BlobStore, SystemClock,
    Table,
};

use crate::agent_batch::{Senders, TurnWorker};
use crate::model;

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

/// The links strangers are pointed to (`STEWARD_PUBLIC_URL`), with the domain's first request
/// to suggest.
pub fn links(settings: &Settings, product: &str, first_request: &str) -> Links {
    Links::new(settings.get(ENV_PUBLIC_URL).as_deref())
        .with_product(product)
        .with_first_request(first_request)
}

/// What fetches and keeps attachments: a fetcher for each configured channel (from the same
/// settings as its sender) and `blobs`. Without a blob store, photos and PDFs get a line
/// saying attachments cannot be read here.
pub fn media_ports(
    settings: &Settings,
    blobs: Option<Arc<dyn BlobStore>>,
) -> Result<MediaPorts, ConfigError> {
    fn unusable(e: impl std::fmt::Display) -> ConfigError {
        ConfigError::Client {
            what: "the media download client",
            message: e.to_string(),
        }
    }
    let whatsapp: Option<Arc<dyn MediaFetcher>> =
        match WhatsappConfig::from_lookup(settings.lookup()) {
            Ok(config) => Some(Arc::new(
                WhatsappMediaFetcher::new(&config).map_err(unusable)?,
            )),
            Err(_) => None,
        };
    let telegram: Option<Arc<dyn MediaFetcher>> =
        match TelegramConfig::from_lookup(settings.lookup()) {
            Ok(config) => Some(Arc::new(
                TelegramMediaFetcher::new(&config).map_err(unusable)?,
            )),
            Err(_) => None,
        };
    Ok(MediaPorts {
        whatsapp,
        telegram,
        blobs,
    })
}

/// The agent function's blob store: the S3 bucket `STEWARD_BLOB_BUCKET` names.
pub fn s3_blob_store(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
) -> Result<Arc<dyn BlobStore>, ConfigError> {
    let s3 = S3BlobSettings::from_values(
        settings.get(ENV_BLOB_BUCKET).as_deref(),
        settings.get(ENV_BLOB_PATH_STYLE).as_deref(),
    )
    .map_err(ConfigError::unusable)?;
    Ok(Arc::new(S3BlobStore::from_settings(sdk, &s3)))
}

/// Every user's default monthly budget (`STEWARD_BUDGET_USD`, `STEWARD_BUDGET_TOKENS`; unset
/// means none); a value that cannot be used refuses the start, naming the setting.
pub fn default_budget(settings: &Settings) -> Result<Budget, ConfigError> {
    Budget::from_settings(
        settings.get(ENV_BUDGET_USD).as_deref(),
        settings.get(ENV_BUDGET_TOKENS).as_deref(),
    )
    .map_err(ConfigError::Unusable)
}

/// The turn worker for `domain` over `table`: the model from `settings` (see
/// [`model::model_client`]), the configured senders, the media fetchers with `blobs` (see
/// [`media_ports`]) and the links (suggesting `first_request` after linking).
pub fn turn_worker(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
    table: Arc<dyn Table>,
    domain: Domain,
    first_request: &str,
    blobs: Option<Arc<dyn BlobStore>>,
) -> Result<TurnWorker, ConfigError> {
    let (client, model_settings) = model::model_client(settings, sdk)?;
    let links = links(settings, &domain.product, first_request);
    let budget = default_budget(settings)?;
    let agent = Agent::new(
        table,
        Arc::new(SystemClock),
        client,
        model_settings,
        TurnLimits::default(),
        domain,
    )
    .with_media(media_ports(settings, blobs)?)
    .with_budget(budget);
    Ok(TurnWorker::new(Arc::new(agent), senders(settings)?, links))
}

#[cfg(test)]
mod tests {
    use super::*;

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
