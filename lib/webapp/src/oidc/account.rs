//! Which Steward account an OpenID Connect identity signs in as: the (issuer, `sub`) pair is a
//! verified channel identity on channel [`OIDC_CHANNEL`], bound through the harness's identity
//! module (one account per identity). The first sign-in creates the account, named from the
//! token's `name` or `email`; later sign-ins find it.

use sha2::{Digest, Sha256};
use steward_harness::limits::NAME_CHARS_MAX;
use steward_harness::{ChannelIdentity, ExternalId, ServiceError, UserId, accounts, identity};
use steward_store::{Clock, Table};

use super::id_token::IdClaims;

/// The identity channel of OpenID Connect sign-ins.
pub const OIDC_CHANNEL: &str = "oidc";

/// The name given to an account whose token carries no usable name, email or user name.
const FALLBACK_NAME: &str = "New organiser";

/// Hex digits of the issuer's hash in an identity: enough that two issuers never collide,
/// short enough to leave room for the subject.
const ISSUER_TAG_HEX: usize = 12;

/// Hex digits of the derived user id's hash (128 bits).
const USER_ID_HEX: usize = 32;

/// The identity of `sub` at `issuer`: `<sub>@<issuer tag>` on [`OIDC_CHANNEL`] (the tag is a
/// short hash of the issuer URL, since several issuers can share one host — every Cognito pool
/// of a region does). A subject that cannot appear as-is is hashed.
pub fn identity_of(issuer: &str, sub: &str) -> Result<ChannelIdentity, ServiceError> {
    let tag = &hex::encode(Sha256::digest(issuer.as_bytes()))[..ISSUER_TAG_HEX];
    let external = ExternalId::parse(&format!("{sub}@{tag}")).or_else(|_| {
        ExternalId::parse(&format!(
            "sha256-{}@{tag}",
            hex::encode(Sha256::digest(sub.as_bytes()))
        ))
    });
    let external = external.map_err(|e| ServiceError::internal(format!("OIDC identity: {e}")))?;
    ChannelIdentity::parse(OIDC_CHANNEL, external.as_str())
        .map_err(|e| ServiceError::internal(format!("OIDC identity: {e}")))
}

/// The account `claims` (already validated, from `issuer`) sign in as, created on first use.
pub async fn user_for(
    table: &dyn Table,
    clock: &dyn Clock,
    issuer: &str,
    claims: &IdClaims,
) -> Result<UserId, ServiceError> {
    let ident = identity_of(issuer, &claims.sub)?;
    if let Some(user) = identity::lookup(table, &ident).await? {
        return Ok(user);
    }
    // The new account's id is derived from the identity, so two first sign-ins racing each
    // other create and bind the same account instead of two.
    let user = derived_user_id(&ident)?;
    match accounts::create_account_with_id(table, clock, user.clone(), &account_name(claims), None)
        .await
    {
        Ok(_) | Err(ServiceError::AlreadyExists { .. }) => {}
        Err(e) => return Err(e),
    }
    match identity::bind(table, clock, &ident, &user).await {
        Ok(_) => Ok(user),
        // Bound meanwhile to another account (linked from elsewhere): that one is theirs.
        Err(ServiceError::Forbidden { .. }) => identity::lookup(table, &ident)
            .await?
            .ok_or_else(|| ServiceError::conflict("The sign-in")),
        Err(e) => Err(e),
    }
}

/// `oidc-<hash of the identity>`.
fn derived_user_id(ident: &ChannelIdentity) -> Result<UserId, ServiceError> {
    let digest = hex::encode(Sha256::digest(ident.to_string().as_bytes()));
    UserId::parse(&format!("oidc-{}", &digest[..USER_ID_HEX]))
        .map_err(|e| ServiceError::internal(format!("OIDC user id: {e}")))
}

/// The new account's name: the token's `name`, else `email`, else `preferred_username`, with
/// control and invisible formatting characters dropped, spaces collapsed, and cut to the
/// accounts' limit.
pub fn account_name(claims: &IdClaims) -> String {
    [&claims.name, &claims.email, &claims.preferred_username]
        .into_iter()
        .flatten()
        .map(|n| sanitise(n))
        .find(|n| !n.is_empty())
        .unwrap_or_else(|| FALLBACK_NAME.to_owned())
}

fn sanitise(name: &str) -> String {
    // Invisible formatting characters (direction overrides …) are refused in account names, so
    // an identity provider's are dropped rather than failing the first sign-in.
    let name: String = if steward_harness::display_text::hidden_format_char(name).is_some() {
        name.chars()
            .filter(|c| {
                steward_harness::display_text::hidden_format_char(c.encode_utf8(&mut [0; 4]))
                    .is_none()
            })
            .collect()
    } else {
        name.to_owned()
    };
    let words: Vec<&str> = name
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    words
        .join(" ")
        .chars()
        .take(NAME_CHARS_MAX)
        .collect::<String>()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn claims(name: Option<&str>, email: Option<&str>) -> IdClaims {
        serde_json::from_value(serde_json::json!({
            "iss": "i", "sub": "s", "aud": "a", "exp": 1, "iat": 1,
            "name": name, "email": email
        }))
        .unwrap()
    }

    #[test]
    fn names_come_from_name_then_email_and_are_cleaned() {
        assert_eq!(
            account_name(&claims(Some("  Ada \n Lovelace\t"), None)),
            "Ada Lovelace"
        );
        assert_eq!(
            account_name(&claims(Some(" \u{7} "), Some("ada@example.org"))),
            "ada@example.org"
        );
        assert_eq!(account_name(&claims(None, None)), FALLBACK_NAME);
        let long = "x".repeat(NAME_CHARS_MAX + 50);
        assert_eq!(
            account_name(&claims(Some(&long), None)).chars().count(),
            NAME_CHARS_MAX
        );
    }

    #[test]
    fn identities_separate_issuers_and_survive_odd_subjects() {
        let a = identity_of("https://cognito-idp.eu-west-1.amazonaws.com/pool-a", "u1").unwrap();
        let b = identity_of("https://cognito-idp.eu-west-1.amazonaws.com/pool-b", "u1").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.channel.as_str(), OIDC_CHANNEL);
        assert!(a.external.as_str().starts_with("u1@"));
        let odd = identity_of("https://id.example", "has space#and hash").unwrap();
        assert!(odd.external.as_str().starts_with("sha256-"));
        assert_ne!(derived_user_id(&a).unwrap(), derived_user_id(&b).unwrap());
    }
}
