//! Talking to the issuer: its discovery document and signing keys (fetched on first use and
//! cached, so a cold start never fails because the issuer is briefly unreachable), and the
//! token endpoint.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use super::OidcError;
use super::settings::{OidcSettings, is_acceptable_url};

/// How long connecting to the issuer may take: it answers quickly or is down, and a person is
/// waiting on the other end.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long one request to the issuer may take in all, well inside the web function's timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(8);

/// Largest answer read from the issuer: discovery documents and key sets are a few KiB; this
/// bounds the memory a misbehaving endpoint can make us use.
const RESPONSE_BYTES_MAX: usize = 256 * 1024;

/// How long the discovery document is kept before it is read again: endpoints change rarely,
/// and a long-running `steward serve` should still notice eventually.
const METADATA_MAX_AGE_MS: i64 = 24 * 3600 * 1000;

/// The least time between two key-set fetches caused by an unknown key id: keys rotate rarely,
/// and a flood of forged tokens with made-up key ids must not become a flood of fetches.
const JWKS_REFETCH_MIN_MS: i64 = 60 * 1000;

/// Most keys considered from one key set (issuers publish two or three).
const JWKS_KEYS_MAX: usize = 100;

/// What the discovery document says (the parts Steward uses).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Metadata {
    /// The issuer, which must equal the configured one.
    pub issuer: String,
    /// Where people are sent to sign in.
    pub authorization_endpoint: String,
    /// Where the code is exchanged for tokens.
    pub token_endpoint: String,
    /// The signing keys.
    pub jwks_uri: String,
}

/// The key set and when it was fetched.
#[derive(Default)]
struct KeyCache {
    keys: Option<Arc<Vec<Jwk>>>,
    fetched_ms: Option<i64>,
}

/// The issuer's endpoints and keys, cached.
pub(crate) struct Provider {
    http: Option<reqwest::Client>,
    discovery_url: String,
    metadata: Mutex<Option<(Arc<Metadata>, i64)>>,
    keys: Mutex<KeyCache>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("discovery_url", &self.discovery_url)
            .finish_non_exhaustive()
    }
}

/// The token endpoint's answer (only the ID token is used; the access token is ignored).
#[derive(Deserialize)]
struct TokenResponse {
    id_token: Option<String>,
}

/// The token endpoint's refusal.
#[derive(Deserialize)]
struct TokenError {
    error: String,
}

impl Provider {
    /// A provider for `settings`; nothing is fetched yet.
    pub fn new(settings: &OidcSettings) -> Self {
        let http = steward_net::client_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            // The issuer's endpoints answer directly; following a redirect could send a code
            // or a secret somewhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| tracing::error!(error = %e, "the OIDC HTTP client could not be built"))
            .ok();
        Self {
            http,
            discovery_url: format!(
                "{}/.well-known/openid-configuration",
                settings.issuer.trim_end_matches('/')
            ),
            metadata: Mutex::new(None),
            keys: Mutex::new(KeyCache::default()),
        }
    }

    fn http(&self) -> Result<&reqwest::Client, OidcError> {
        self.http
            .as_ref()
            .ok_or_else(|| OidcError::Issuer("no HTTP client".into()))
    }

    /// The discovery document, from the cache or fetched.
    pub async fn metadata(
        &self,
        settings: &OidcSettings,
        now_ms: i64,
    ) -> Result<Arc<Metadata>, OidcError> {
        if let Some((m, at)) = lock(&self.metadata).as_ref()
            && now_ms - at < METADATA_MAX_AGE_MS
        {
            return Ok(Arc::clone(m));
        }
        let bytes = self.get(&self.discovery_url).await?;
        let m: Metadata = serde_json::from_slice(&bytes)
            .map_err(|e| OidcError::Issuer(format!("discovery document: {e}")))?;
        if m.issuer != settings.issuer {
            return Err(OidcError::Issuer(format!(
                "the discovery document names the issuer \"{}\", not the configured \"{}\"",
                m.issuer, settings.issuer
            )));
        }
        for (what, url) in [
            ("authorization_endpoint", &m.authorization_endpoint),
            ("token_endpoint", &m.token_endpoint),
            ("jwks_uri", &m.jwks_uri),
        ] {
            if !is_acceptable_url(url) {
                return Err(OidcError::Issuer(format!(
                    "discovery document: {what} \"{url}\" is not an https:// URL"
                )));
            }
        }
        let m = Arc::new(m);
        *lock(&self.metadata) = Some((Arc::clone(&m), now_ms));
        Ok(m)
    }

    /// The keys that may have signed a token with header `kid` and `alg`: from the cached key
    /// set, refetched when none matches (at most once per [`JWKS_REFETCH_MIN_MS`]).
    pub async fn keys_for(
        &self,
        metadata: &Metadata,
        kid: Option<&str>,
        alg: Algorithm,
        now_ms: i64,
    ) -> Result<Vec<DecodingKey>, OidcError> {
        let (cached, fetched_ms) = {
            let cache = lock(&self.keys);
            (cache.keys.clone(), cache.fetched_ms)
        };
        if let Some(keys) = &cached {
            let found = matching(keys, kid, alg);
            if !found.is_empty() {
                return Ok(found);
            }
        }
        let may_fetch =
            cached.is_none() || fetched_ms.is_none_or(|at| now_ms - at >= JWKS_REFETCH_MIN_MS);
        if !may_fetch {
            return Err(OidcError::Rejected(format!(
                "no key in the issuer's key set matches key id {kid:?} ({alg:?})"
            )));
        }
        // Note the attempt before fetching, so requests arriving meanwhile do not fetch too.
        lock(&self.keys).fetched_ms = Some(now_ms);
        let bytes = self.get(&metadata.jwks_uri).await?;
        let keys = Arc::new(parse_key_set(&bytes)?);
        lock(&self.keys).keys = Some(Arc::clone(&keys));
        let found = matching(&keys, kid, alg);
        if found.is_empty() {
            return Err(OidcError::Rejected(format!(
                "no key in the issuer's key set matches key id {kid:?} ({alg:?})"
            )));
        }
        Ok(found)
    }

    /// Exchanges `code` for an ID token at the token endpoint (`client_secret_basic` when a
    /// secret is configured, else as a public client; PKCE's verifier either way).
    pub async fn exchange(
        &self,
        settings: &OidcSettings,
        metadata: &Metadata,
        code: &str,
        verifier: &str,
    ) -> Result<String, OidcError> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", settings.redirect_url.as_str()),
            ("code_verifier", verifier),
            ("client_id", settings.client_id.as_str()),
        ];
        let mut request = self.http()?.post(&metadata.token_endpoint).form(&form);
        if let Some(secret) = &settings.client_secret {
            // RFC 6749 §2.3.1: both parts are form-encoded before going into Basic.
            request = request.basic_auth(
                form_encode(&settings.client_id),
                Some(form_encode(secret.expose())),
            );
        }
        let response = request
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| OidcError::Issuer(format!("token endpoint: {e}")))?;
        let status = response.status();
        let bytes = read_limited(response).await?;
        if !status.is_success() {
            // Only the error code is kept: the body may echo what was sent.
            let code = serde_json::from_slice::<TokenError>(&bytes)
                .map(|e| e.error)
                .unwrap_or_else(|_| "no error code".into());
            let code: String = code
                .chars()
                .filter(char::is_ascii_graphic)
                .take(64)
                .collect();
            return Err(if status.is_client_error() {
                OidcError::Denied(format!("the token endpoint answered {status}: {code}"))
            } else {
                OidcError::Issuer(format!("the token endpoint answered {status}: {code}"))
            });
        }
        let answer: TokenResponse = serde_json::from_slice(&bytes)
            .map_err(|_| OidcError::Issuer("the token endpoint's answer is not JSON".into()))?;
        answer
            .id_token
            .ok_or_else(|| OidcError::Issuer("the token endpoint sent no id_token".into()))
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, OidcError> {
        let response = self
            .http()?
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| OidcError::Issuer(format!("{url}: {e}")))?;
        if !response.status().is_success() {
            return Err(OidcError::Issuer(format!(
                "{url} answered {}",
                response.status()
            )));
        }
        read_limited(response).await
    }
}

/// The body, refused when larger than [`RESPONSE_BYTES_MAX`].
async fn read_limited(mut response: reqwest::Response) -> Result<Vec<u8>, OidcError> {
    if response
        .content_length()
        .is_some_and(|n| n > RESPONSE_BYTES_MAX as u64)
    {
        return Err(OidcError::Issuer("the issuer's answer is too large".into()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| OidcError::Issuer(format!("reading the issuer's answer: {e}")))?
    {
        if body.len() + chunk.len() > RESPONSE_BYTES_MAX {
            return Err(OidcError::Issuer("the issuer's answer is too large".into()));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The usable keys of a JWKS document; keys of kinds this crate cannot read are skipped
/// rather than failing the whole set.
fn parse_key_set(bytes: &[u8]) -> Result<Vec<Jwk>, OidcError> {
    #[derive(Deserialize)]
    struct RawSet {
        keys: Vec<serde_json::Value>,
    }
    let raw: RawSet =
        serde_json::from_slice(bytes).map_err(|e| OidcError::Issuer(format!("key set: {e}")))?;
    Ok(raw
        .keys
        .into_iter()
        .take(JWKS_KEYS_MAX)
        .filter_map(|k| serde_json::from_value::<Jwk>(k).ok())
        .collect())
}

/// The keys that may verify a token signed with `alg` under key id `kid`: signing keys of the
/// algorithm's family, with the same id when the token names one, and the same algorithm when
/// the key names one.
fn matching(keys: &[Jwk], kid: Option<&str>, alg: Algorithm) -> Vec<DecodingKey> {
    keys.iter()
        .filter(|k| kid.is_none_or(|kid| k.common.key_id.as_deref() == Some(kid)))
        .filter(|k| {
            k.common
                .public_key_use
                .as_ref()
                .is_none_or(|u| *u == PublicKeyUse::Signature)
        })
        .filter(|k| k.common.key_algorithm.is_none_or(|a| a == alg.into()))
        .filter_map(|k| DecodingKey::from_jwk(k).ok())
        .filter(|k| k.family() == alg.family())
        .collect()
}

fn form_encode(text: &str) -> String {
    serde_urlencoded::to_string([("", text)])
        .map(|s| s.trim_start_matches('=').to_owned())
        .unwrap_or_default()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another request panicked mid-update; the cache is still valid.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn key_sets_skip_unreadable_keys_and_match_by_id_and_family() {
        let set = serde_json::json!({ "keys": [
            { "kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": "sXch", "e": "AQAB" },
            { "kty": "RSA", "kid": "enc", "use": "enc", "n": "sXch", "e": "AQAB" },
            { "kty": "weird", "kid": "k3" },
            { "kty": "oct", "kid": "k4", "k": "c2VjcmV0" }
        ]});
        let keys = parse_key_set(set.to_string().as_bytes()).unwrap();
        assert_eq!(matching(&keys, Some("k1"), Algorithm::RS256).len(), 1);
        assert!(matching(&keys, Some("k1"), Algorithm::ES256).is_empty());
        assert!(matching(&keys, Some("enc"), Algorithm::RS256).is_empty());
        assert!(matching(&keys, Some("k4"), Algorithm::RS256).is_empty());
        assert!(matching(&keys, Some("nope"), Algorithm::RS256).is_empty());
        assert_eq!(matching(&keys, None, Algorithm::RS256).len(), 1);
    }

    #[test]
    fn basic_credentials_are_form_encoded() {
        assert_eq!(form_encode("a b:c/d"), "a+b%3Ac%2Fd");
        assert_eq!(form_encode("plain"), "plain");
    }
}
