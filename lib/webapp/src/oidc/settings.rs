//! The OpenID Connect settings: the issuer, the client registered with it, where the issuer
//! sends people back to, and the scopes asked for.

use steward_edge::config::{ConfigError, ENV_PUBLIC_URL, Settings};

use crate::paths::OIDC_CALLBACK_PATH as CALLBACK_PATH;

/// The issuer URL (its `/.well-known/openid-configuration` is read on first use).
pub const ENV_OIDC_ISSUER: &str = "STEWARD_OIDC_ISSUER";

/// The OAuth client id registered with the issuer.
pub const ENV_OIDC_CLIENT_ID: &str = "STEWARD_OIDC_CLIENT_ID";

/// The client secret, when the client has one (a secret: may be given as `…_PARAM`).
pub const ENV_OIDC_CLIENT_SECRET: &str = "STEWARD_OIDC_CLIENT_SECRET";

/// Where the issuer sends people back to; default `{STEWARD_PUBLIC_URL}/app/auth/callback`.
pub const ENV_OIDC_REDIRECT_URL: &str = "STEWARD_OIDC_REDIRECT_URL";

/// The scopes asked for: the subject, and a name and email to name the account after.
pub const DEFAULT_SCOPES: &str = "openid email profile";

/// A client secret: its value is never shown by `Debug` (so never in a log line).
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(String);

impl ClientSecret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the token request's `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientSecret(<redacted>)")
    }
}

/// The issuer and the client registered with it.
#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// The issuer URL, exactly as the ID tokens' `iss` claim spells it.
    pub issuer: String,
    /// The client id (the ID tokens' audience).
    pub client_id: String,
    /// The client secret of a confidential client (`client_secret_basic`); `None` for a public
    /// client, which relies on PKCE alone.
    pub client_secret: Option<ClientSecret>,
    /// Where the issuer sends people back to (must be registered with the issuer).
    pub redirect_url: String,
    /// The scopes asked for, space-separated.
    pub scopes: String,
}

impl OidcSettings {
    /// The settings from the environment: [`ConfigError::Missing`] when no issuer is configured
    /// (a local `steward serve` then uses the development sign-in); any other problem is
    /// [`ConfigError::Invalid`], so a half-done configuration never silently falls back.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let issuer = settings.require(ENV_OIDC_ISSUER)?;
        check_url(ENV_OIDC_ISSUER, &issuer)?;
        if issuer.contains(['?', '#']) {
            return Err(ConfigError::Invalid {
                name: ENV_OIDC_ISSUER,
                problem: "an issuer URL has no query or fragment".into(),
            });
        }
        let client_id = settings
            .get(ENV_OIDC_CLIENT_ID)
            .ok_or_else(|| ConfigError::Invalid {
                name: ENV_OIDC_CLIENT_ID,
                problem: format!("set it to the client id registered with {issuer}"),
            })?;
        let redirect_url = match settings.get(ENV_OIDC_REDIRECT_URL) {
            Some(url) => {
                check_url(ENV_OIDC_REDIRECT_URL, &url)?;
                url
            }
            None => {
                let base = settings
                    .get(ENV_PUBLIC_URL)
                    .ok_or_else(|| ConfigError::Invalid {
                        name: ENV_OIDC_REDIRECT_URL,
                        problem: format!(
                            "set {ENV_PUBLIC_URL} (the callback is {CALLBACK_PATH} under it) \
                             or {ENV_OIDC_REDIRECT_URL}"
                        ),
                    })?;
                check_url(ENV_PUBLIC_URL, &base)?;
                format!("{}{CALLBACK_PATH}", base.trim_end_matches('/'))
            }
        };
        Ok(Self {
            issuer,
            client_id,
            client_secret: settings.get(ENV_OIDC_CLIENT_SECRET).map(ClientSecret),
            redirect_url,
            scopes: DEFAULT_SCOPES.to_owned(),
        })
    }
}

/// Checks that `url` is `https://…`, or `http://` to this machine (local runs and tests):
/// tokens and codes never travel in the clear across a network.
fn check_url(name: &'static str, url: &str) -> Result<(), ConfigError> {
    if is_acceptable_url(url) {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            name,
            problem: format!(
                "\"{url}\" is not an https:// URL (http:// is accepted only for localhost)"
            ),
        })
    }
}

/// Whether `url` is `https://host…`, or `http://` to localhost or a loopback address.
pub(crate) fn is_acceptable_url(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str().filter(|h| !h.is_empty()) else {
        return false;
    };
    match parsed.scheme() {
        "https" => true,
        "http" => {
            host == "localhost"
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        Settings::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn no_issuer_is_missing() {
        let s = settings(&[(ENV_OIDC_CLIENT_ID, "abc")]);
        assert!(matches!(
            OidcSettings::from_settings(&s),
            Err(ConfigError::Missing(ENV_OIDC_ISSUER))
        ));
    }

    #[test]
    fn a_full_configuration_reads_every_part() {
        let s = settings(&[
            (
                ENV_OIDC_ISSUER,
                "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
            ),
            (ENV_OIDC_CLIENT_ID, "client-1"),
            (ENV_OIDC_CLIENT_SECRET, "s3cret-value"),
            (ENV_PUBLIC_URL, "https://steward.example/"),
        ]);
        let o = OidcSettings::from_settings(&s).unwrap();
        assert_eq!(
            o.issuer,
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc"
        );
        assert_eq!(o.client_id, "client-1");
        assert_eq!(
            o.client_secret.as_ref().map(ClientSecret::expose),
            Some("s3cret-value")
        );
        assert_eq!(o.redirect_url, "https://steward.example/app/auth/callback");
        assert_eq!(o.scopes, "openid email profile");
        let shown = format!("{o:?}");
        assert!(!shown.contains("s3cret-value"), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }

    #[test]
    fn the_redirect_url_can_be_set_and_a_secret_is_optional() {
        let s = settings(&[
            (ENV_OIDC_ISSUER, "https://id.example"),
            (ENV_OIDC_CLIENT_ID, "c"),
            (ENV_PUBLIC_URL, "https://ignored.example"),
            (ENV_OIDC_REDIRECT_URL, "https://steward.example/cb"),
        ]);
        let o = OidcSettings::from_settings(&s).unwrap();
        assert_eq!(o.redirect_url, "https://steward.example/cb");
        assert!(o.client_secret.is_none());
    }

    #[test]
    fn other_problems_are_invalid_not_missing() {
        let cases: [&[(&str, &str)]; 5] = [
            // No client id.
            &[
                (ENV_OIDC_ISSUER, "https://id.example"),
                (ENV_PUBLIC_URL, "https://s.example"),
            ],
            // Plain http to another machine.
            &[
                (ENV_OIDC_ISSUER, "http://id.example"),
                (ENV_OIDC_CLIENT_ID, "c"),
                (ENV_PUBLIC_URL, "https://s.example"),
            ],
            // Not a URL.
            &[
                (ENV_OIDC_ISSUER, "id.example"),
                (ENV_OIDC_CLIENT_ID, "c"),
                (ENV_PUBLIC_URL, "https://s.example"),
            ],
            // Nowhere to come back to.
            &[
                (ENV_OIDC_ISSUER, "https://id.example"),
                (ENV_OIDC_CLIENT_ID, "c"),
            ],
            // A redirect URL in the clear.
            &[
                (ENV_OIDC_ISSUER, "https://id.example"),
                (ENV_OIDC_CLIENT_ID, "c"),
                (ENV_OIDC_REDIRECT_URL, "http://steward.example/cb"),
            ],
        ];
        for pairs in cases {
            let r = OidcSettings::from_settings(&settings(pairs));
            assert!(
                matches!(r, Err(ConfigError::Invalid { .. })),
                "{pairs:?}: {r:?}"
            );
        }
    }

    #[test]
    fn loopback_http_is_accepted_for_local_runs() {
        assert!(is_acceptable_url("http://127.0.0.1:9000/issuer"));
        assert!(is_acceptable_url("http://localhost:8080"));
        assert!(is_acceptable_url("http://[::1]:8080"));
        assert!(!is_acceptable_url("http://10.0.0.1"));
        assert!(!is_acceptable_url("ftp://id.example"));
        assert!(!is_acceptable_url("https://"));
    }
}
