//! Validating an ID token: the signature against the issuer's keys (with `jsonwebtoken`), then
//! the claims by our own code against Steward's clock — issuer, audience and authorised party,
//! expiry and issue time, and the nonce of this sign-in.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::OidcError;

/// The signature algorithms accepted: RSA and ECDSA. Never `none` or HMAC — an HMAC "key" from
/// a key set would be public.
pub(crate) const ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// Clock difference tolerated between Steward and the issuer, in seconds: a minute covers
/// ordinary drift without keeping an expired token useful for long.
pub(crate) const LEEWAY_SECS: i64 = 60;

/// Longest `sub` accepted, in bytes (OpenID Connect Core §2: at most 255 ASCII characters).
const SUBJECT_BYTES_MAX: usize = 255;

/// An ID token's audience: one client id or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Audience {
    /// A single audience.
    One(String),
    /// Several audiences.
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, client_id: &str) -> bool {
        match self {
            Self::One(a) => a == client_id,
            Self::Many(all) => all.iter().any(|a| a == client_id),
        }
    }

    fn count(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Many(all) => all.len(),
        }
    }
}

/// The claims Steward reads from an ID token.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct IdClaims {
    /// Who issued it.
    pub iss: String,
    /// The person, unique within the issuer.
    pub sub: String,
    /// Whom it is for.
    pub aud: Audience,
    /// The authorised party (required when there are several audiences).
    #[serde(default)]
    pub azp: Option<String>,
    /// Expiry, epoch seconds.
    pub exp: f64,
    /// Issue time, epoch seconds.
    pub iat: f64,
    /// Not valid before, epoch seconds.
    #[serde(default)]
    pub nbf: Option<f64>,
    /// The nonce sent with the authorization request.
    #[serde(default)]
    pub nonce: Option<String>,
    /// The person's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Their email address.
    #[serde(default)]
    pub email: Option<String>,
    /// Their user name at the issuer.
    #[serde(default)]
    pub preferred_username: Option<String>,
}

/// What the claims must say.
#[derive(Debug)]
pub(crate) struct Expected<'a> {
    /// The configured issuer.
    pub issuer: &'a str,
    /// The configured client id.
    pub client_id: &'a str,
    /// The nonce of this sign-in.
    pub nonce: &'a str,
    /// Now, epoch seconds (Steward's clock).
    pub now_s: i64,
}

/// The token's algorithm and key id, refused unless the algorithm is one of [`ALGORITHMS`].
pub(crate) fn header(token: &str) -> Result<(Algorithm, Option<String>), OidcError> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|e| OidcError::Rejected(format!("the ID token's header is unreadable: {e}")))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(OidcError::Rejected(format!(
            "the ID token is signed with {:?}, which is not accepted",
            header.alg
        )));
    }
    Ok((header.alg, header.kid))
}

/// The claims of `token` when one of `keys` verifies its signature with `alg`. Only the
/// signature is checked here; [`check_claims`] does the rest.
pub(crate) fn verify_signature(
    token: &str,
    alg: Algorithm,
    keys: &[DecodingKey],
) -> Result<IdClaims, OidcError> {
    let mut validation = Validation::new(alg);
    validation.algorithms = vec![alg];
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let mut last = None;
    for key in keys {
        match jsonwebtoken::decode::<IdClaims>(token, key, &validation) {
            Ok(data) => return Ok(data.claims),
            Err(e) => last = Some(e),
        }
    }
    Err(OidcError::Rejected(match last {
        Some(e) => format!("the ID token failed verification: {e}"),
        None => "no key to verify the ID token with".into(),
    }))
}

/// Checks the claims against what this sign-in expects.
pub(crate) fn check_claims(claims: &IdClaims, expected: &Expected<'_>) -> Result<(), OidcError> {
    let refuse = |why: String| Err(OidcError::Rejected(why));
    if claims.iss != expected.issuer {
        return refuse(format!(
            "the ID token's issuer \"{}\" is not the configured one",
            claims.iss
        ));
    }
    if !claims.aud.contains(expected.client_id) {
        return refuse("the ID token is not meant for this client (aud)".into());
    }
    match &claims.azp {
        Some(azp) if azp != expected.client_id => {
            return refuse("the ID token was issued to another party (azp)".into());
        }
        None if claims.aud.count() > 1 => {
            return refuse("the ID token has several audiences and no azp".into());
        }
        _ => {}
    }
    let now = expected.now_s;
    if !(claims.exp.is_finite() && claims.iat.is_finite()) {
        return refuse("the ID token's times are not numbers".into());
    }
    // Whole seconds: the claims are NumericDate, fractions are allowed but meaningless here.
    let (exp, iat) = (claims.exp.floor() as i64, claims.iat.floor() as i64);
    if now > exp.saturating_add(LEEWAY_SECS) {
        return refuse(format!("the ID token expired at {exp} (now {now})"));
    }
    if iat > now.saturating_add(LEEWAY_SECS) {
        return refuse(format!(
            "the ID token was issued in the future ({iat}, now {now})"
        ));
    }
    if let Some(nbf) = claims.nbf.filter(|n| n.is_finite())
        && nbf.floor() as i64 > now.saturating_add(LEEWAY_SECS)
    {
        return refuse("the ID token is not valid yet (nbf)".into());
    }
    let nonce_ok = claims
        .nonce
        .as_deref()
        .is_some_and(|n| bool::from(n.as_bytes().ct_eq(expected.nonce.as_bytes())));
    if !nonce_ok {
        return refuse("the ID token's nonce is not this sign-in's".into());
    }
    if claims.sub.is_empty() || claims.sub.len() > SUBJECT_BYTES_MAX {
        return refuse("the ID token's subject is empty or too long".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const NOW: i64 = 1_780_304_400;

    fn claims() -> IdClaims {
        serde_json::from_value(serde_json::json!({
            "iss": "https://id.example", "sub": "abc", "aud": "client",
            "exp": NOW + 300, "iat": NOW - 5, "nonce": "n-1"
        }))
        .unwrap()
    }

    fn expected() -> Expected<'static> {
        Expected {
            issuer: "https://id.example",
            client_id: "client",
            nonce: "n-1",
            now_s: NOW,
        }
    }

    fn refused(c: &IdClaims, e: &Expected<'_>) -> bool {
        matches!(check_claims(c, e), Err(OidcError::Rejected(_)))
    }

    #[test]
    fn good_claims_pass() {
        check_claims(&claims(), &expected()).unwrap();
    }

    #[test]
    fn issuer_audience_and_azp_are_checked() {
        let mut c = claims();
        c.iss = "https://id.example/".into();
        assert!(refused(&c, &expected()));

        let mut c = claims();
        c.aud = Audience::One("other".into());
        assert!(refused(&c, &expected()));

        let mut c = claims();
        c.aud = Audience::Many(vec!["other".into(), "client".into()]);
        assert!(refused(&c, &expected()), "several audiences need azp");
        c.azp = Some("client".into());
        check_claims(&c, &expected()).unwrap();
        c.azp = Some("other".into());
        assert!(refused(&c, &expected()));
    }

    #[test]
    fn times_allow_a_minute_of_drift_and_no_more() {
        let mut c = claims();
        c.exp = (NOW - LEEWAY_SECS) as f64;
        check_claims(&c, &expected()).unwrap();
        c.exp = (NOW - LEEWAY_SECS - 1) as f64;
        assert!(refused(&c, &expected()));

        let mut c = claims();
        c.iat = (NOW + LEEWAY_SECS + 1) as f64;
        assert!(refused(&c, &expected()));

        let mut c = claims();
        c.nbf = Some((NOW + 3600) as f64);
        assert!(refused(&c, &expected()));

        let mut c = claims();
        c.exp = f64::NAN;
        assert!(refused(&c, &expected()));
    }

    #[test]
    fn the_nonce_and_subject_are_checked() {
        let mut c = claims();
        c.nonce = None;
        assert!(refused(&c, &expected()));
        c.nonce = Some("n-2".into());
        assert!(refused(&c, &expected()));

        let mut c = claims();
        c.sub = String::new();
        assert!(refused(&c, &expected()));
    }

    /// A P-256 private key (PKCS#8 DER, standard base64), made for this test only, and its
    /// public point (base64url).
    const P256_DER_B64: &str = concat!(
        "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgV80edY24Tz14ACFLbbq6FMT60oFNC/B79PsFHw3a",
        "4zuhRANCAARjTVkKEyX4KcpIJUg5r9Mvi7ZndkN9UgBG3m3oQd666Ce9ro30NDXE04rB3gw/5+o80SJbiWIqMXZh",
        "WSJh9gFt",
    );
    const P256_X: &str = "Y01ZChMl-CnKSCVIOa_TL4u2Z3ZDfVIARt5t6EHeuug";
    const P256_Y: &str = "J72ujfQ0NcTTisHeDD_n6jzRIluJYioxdmFZImH2AW0";
    /// The same for P-384.
    const P384_DER_B64: &str = concat!(
        "MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDBF7KPAjC9SQ8rSD2optPXcaoXCP1pkyJX+k0EY01u7",
        "uYKtEC4xvWDVha9EvaMb0v2hZANiAATFm1qeQq3Ish/cE2w/Z5Xt0lwO0WccsV1JJtB7FsXEwdc9JD+tv6G271vY",
        "JHyCk6EffTP5GZ8HBqLzExeW8VavCdncU6zp8DNz8oqbnf12Q5OhdujkchvyWSZJgehT9SU=",
    );
    const P384_X: &str = "xZtankKtyLIf3BNsP2eV7dJcDtFnHLFdSSbQexbFxMHXPSQ_rb-htu9b2CR8gpOh";
    const P384_Y: &str = "H30z-RmfBwai8xMXlvFWrwnZ3FOs6fAzc_KKm539dkOToXbo5HIb8lkmSYHoU_Ul";
    /// An RSA private key (PKCS#1 DER, standard base64), made for this test only.
    const RSA_DER_B64: &str = concat!(
        "MIIEpQIBAAKCAQEAuC6rAzgDcnk1qXEKq07HVw8jnF1YhfT6OHlz1NN4tPhZyEkyp1+L2K8OEutXMbk3TA5mxC4T",
        "O4KE7JQ0umjz574jccyOLoWUHNl0LIKPDuc8wGMO4FMykBWpzluGr07zoRBDAofeluLqKWAiqxwnPz6JGAja4S0I",
        "wk0trATG7f4NttBW6bxFYKPzNTJeDC7iu5589WjrEbBREPwGa+RTwmhakkz9vkHrZAIT9fqTx+Gqr8oDcGzIvOjn",
        "awgx5tTNjeakBAyK6nyeEeapWbWYnEk/Y6ZlOieQhmZKjlSKO6bEPy/mf4PVPH1EQ56d1yq27+UNh1qQYD4NZVpX",
        "34WvsQIDAQABAoIBABboucgRC99i6OQmNbUwe6ZThr1ooEiBO9e8cPDpoNukVx6Mzup3UvYPyB4IUcnTMj1D6U/A",
        "32Qz4YQVEdNB7LHy5Nu/HXb3PICzd491vy+TtEBwfHrgk6siVq2z6rZxiTzhFe9W+755g7YZHsF5I1SVhbM3SWpg",
        "EfUrvmDlczeff3SMu0NRPXfg1x5PC/7PXr/FYhUfsZ93UOZcBy7Nnkts8jI6R4+VwjQC2J6FfIMTH/X3r2oMVK3e",
        "29UF8Pc9d9CEay65eXBKZO6cm4Ip/1H2PGdScSoUYZ5HCza9EQOKJYI814j9Uipi6EcEYgjGU+Ejnf+FzFZBPu70",
        "CGN+SpUCgYEA72oEu5VgYlekPAyhFQdRj3ouYEh3sEQ2rBcgAT0ZZOQ0lsJ0iNoyfOo/pIb2AG/z6iCFPeJaGs3I",
        "XYSusaoKakjqZTg8NaHIQMnExDwUkpt4p12mizwjVsAkRcy7muYdZq4ZCrzeafqU+39cgxcb3XwQF/T9nvq0iHJG",
        "WbYEfh8CgYEAxPEekA3BijVtPpIM6mlufcCJ67XWOswwgzSOlJI0fcyrvg80gpvEbEuFF72MCyfJT62V0KYwcviI",
        "FsuMMuSE/ggrDt5CU6iJJ7SOPLXc2uAdmNKK5VrU2HkDXISfK9eetWoS4I9gnfbTvDkNXTKMQkmRDDXHNctSe2gf",
        "ykvseC8CgYEAxZufLmlb9a/bCgluh1nUEvXJA4Ws7JtQ+PfZXcxdgm3tjiYQY8iddYcvYpBWygOdsriG4Y5LyuXh",
        "JHdYbaIpGJL4jPU+lRHkpL0lIMdqP5v9mT7uMOxBSuAq0EXs7yxSRica2kcL2TOP9omoBTd0s3osGmoHUEoj6p9P",
        "u8pFqQcCgYEAgcm9sIXARIsNIa0yodE1pd4bhqFhO4KRfgZG6JapzTXzAOAYZPKusgfbAFhEUJ25x67ICqdbSomL",
        "dipSjL+Y/aj4Z2YGJAfvy6DsFApuMDh+iNZH/vqrRrYJhxFHrKb+yuPK6P7UV4Xw6BxZOFA1qwG8e2V9kXAbPYTT",
        "XohGoLUCgYEAna1AFWO6fCsZtcRHRQC4E8qieBTBe5xb6ct0Q7d4Knzf0Lsq+mqoRwz70DQXOhqTjvSeeSrL041+",
        "RiZMgU2OVZmg+gjNwBlNS1hqNPI6SOyGdKb/c0VEAh6zVzsZkKk7Z7jBH+xpc/DXpbUY9j8xL+bW5AH1CSC3/0uf",
        "Vmr08/4=",
    );
    /// Its public modulus (base64url); the exponent is 65537.
    const RSA_N: &str = concat!(
        "uC6rAzgDcnk1qXEKq07HVw8jnF1YhfT6OHlz1NN4tPhZyEkyp1-L2K8OEutXMbk3TA5mxC4TO4KE7JQ0umjz574j",
        "ccyOLoWUHNl0LIKPDuc8wGMO4FMykBWpzluGr07zoRBDAofeluLqKWAiqxwnPz6JGAja4S0Iwk0trATG7f4NttBW",
        "6bxFYKPzNTJeDC7iu5589WjrEbBREPwGa-RTwmhakkz9vkHrZAIT9fqTx-Gqr8oDcGzIvOjnawgx5tTNjeakBAyK",
        "6nyeEeapWbWYnEk_Y6ZlOieQhmZKjlSKO6bEPy_mf4PVPH1EQ56d1yq27-UNh1qQYD4NZVpX34WvsQ",
    );

    fn der(b64: &str) -> Vec<u8> {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
    }

    fn signed(alg: Algorithm, key: &jsonwebtoken::EncodingKey) -> String {
        let claims = serde_json::json!({
            "iss": "https://id.example", "sub": "abc", "aud": "client",
            "exp": NOW + 300, "iat": NOW - 5, "nonce": "n-1"
        });
        jsonwebtoken::encode(&jsonwebtoken::Header::new(alg), &claims, key).unwrap()
    }

    /// The token with one byte of its signature changed.
    fn tampered(token: &str) -> String {
        let mut bytes = token.as_bytes().to_vec();
        let last = bytes.len() - 2;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn each_key_type_verifies_its_signatures_and_refuses_a_changed_one() {
        use jsonwebtoken::EncodingKey;
        let p256 = DecodingKey::from_ec_components(P256_X, P256_Y).unwrap();
        let p384 = DecodingKey::from_ec_components(P384_X, P384_Y).unwrap();
        let rsa = DecodingKey::from_rsa_components(RSA_N, "AQAB").unwrap();
        let p256_signing = EncodingKey::from_ec_der(&der(P256_DER_B64));
        let p384_signing = EncodingKey::from_ec_der(&der(P384_DER_B64));
        let rsa_signing = EncodingKey::from_rsa_der(&der(RSA_DER_B64));
        let cases = [
            (Algorithm::ES256, &p256_signing, &p256, &p384),
            (Algorithm::ES384, &p384_signing, &p384, &p256),
            (Algorithm::RS256, &rsa_signing, &rsa, &p256),
            (Algorithm::PS256, &rsa_signing, &rsa, &p256),
            (Algorithm::PS512, &rsa_signing, &rsa, &p256),
        ];
        for (alg, signing, verifying, other) in cases {
            let token = signed(alg, signing);
            assert_eq!(header(&token).unwrap().0, alg);
            let got = verify_signature(&token, alg, std::slice::from_ref(verifying))
                .unwrap_or_else(|e| panic!("{alg:?}: {e}"));
            assert_eq!(got.sub, "abc");
            // A changed signature, or a key that did not sign it: refused.
            let changed = tampered(&token);
            assert!(
                verify_signature(&changed, alg, std::slice::from_ref(verifying)).is_err(),
                "{alg:?}: a changed signature passed"
            );
            assert!(
                verify_signature(&token, alg, std::slice::from_ref(other)).is_err(),
                "{alg:?}: another key verified it"
            );
        }
    }

    #[test]
    fn only_asymmetric_algorithms_are_accepted() {
        // {"alg":"HS256","typ":"JWT"} . {} . x
        let hs = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.e30.eA";
        assert!(matches!(header(hs), Err(OidcError::Rejected(_))));
        // {"alg":"none"}
        assert!(header("eyJhbGciOiJub25lIn0.e30.").is_err());
    }
}
