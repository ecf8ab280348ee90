//! What the web function needs to start (see `steward_edge::startup`): the table, the turn
//! queue, the OpenID Connect issuer and a deployed web configuration it can use (client,
//! redirect, hosts, the model's label, the public form's limits).

use steward_edge::config::{ConfigError, ENV_QUEUE_URL, ENV_TABLE, Settings};
use steward_edge::startup::{self, Need};

use crate::config::deployed_config;
use crate::oidc::ENV_OIDC_ISSUER;

/// The web function's needs, checked in this order at init.
pub const WEB_NEEDS: &[Need] = &[
    Need::Set {
        name: ENV_TABLE,
        fix: "set it to the DynamoDB table's name (the template passes its Table)",
    },
    Need::Set {
        name: ENV_QUEUE_URL,
        fix: "set it to the SQS FIFO turn queue's URL (the template passes its TurnQueue)",
    },
    Need::Set {
        name: ENV_OIDC_ISSUER,
        fix: "set it to the OpenID Connect issuer URL people sign in with (the template passes its Cognito user pool's unless OidcIssuer is given)",
    },
    Need::Rule(web_settings_are_usable),
    Need::Valid {
        name: steward_harness::retention::ENV_RETENTION_DAYS,
        check: steward_harness::retention::check_setting,
    },
];

/// The deployed web configuration reads (its error names the setting).
fn web_settings_are_usable(settings: &Settings) -> Result<(), ConfigError> {
    deployed_config(settings).map(|_| ())
}

/// Whether the web function can start with `settings`; the error names the first setting to
/// fix.
pub fn check_web_config(settings: &Settings) -> Result<(), ConfigError> {
    startup::check(settings, WEB_NEEDS)
}

#[cfg(test)]
mod tests {
    use steward_edge::config::ENV_PUBLIC_URL;

    use super::*;
    use crate::oidc::ENV_OIDC_CLIENT_ID;

    const COMPLETE: [(&str, &str); 5] = [
        (ENV_TABLE, "steward-table"),
        (
            ENV_QUEUE_URL,
            "https://sqs.eu-west-1.amazonaws.com/1/turns.fifo",
        ),
        (
            ENV_OIDC_ISSUER,
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
        ),
        (ENV_OIDC_CLIENT_ID, "client-1"),
        (ENV_PUBLIC_URL, "https://steward.example.org"),
    ];

    fn refusal(drop: &str, extra: &[(&'static str, &'static str)]) -> String {
        let pairs = COMPLETE
            .iter()
            .copied()
            .filter(|(k, _)| *k != drop)
            .chain(extra.iter().copied());
        check_web_config(&Settings::from_pairs(pairs))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_web_start_up_check_names_what_is_missing() {
        assert_eq!(refusal("none", &[]), "", "a complete configuration passes");
        for name in [ENV_TABLE, ENV_QUEUE_URL, ENV_OIDC_ISSUER] {
            let e = refusal(name, &[]);
            assert!(e.starts_with(&format!("{name} is not set: ")), "{e}");
        }
        let e = refusal(ENV_OIDC_CLIENT_ID, &[]);
        assert!(e.starts_with("STEWARD_OIDC_CLIENT_ID: "), "{e}");
        let e = refusal(
            "none",
            &[
                ("STEWARD_MODEL_PROVIDER", "bedrock"),
                ("STEWARD_MODEL", "claude-sonnet-4-5"),
            ],
        );
        assert!(
            e.starts_with("STEWARD_MODEL: "),
            "the model's label needs a valid id: {e}"
        );
    }
}
