//! Web sessions: a random id in an `HttpOnly`, `SameSite=Lax` cookie (`Secure` when served over
//! HTTPS); the table keeps only the id's SHA-256, the user and the session's CSRF token, with
//! an expiry. Signing out deletes the record, so a stolen cookie dies with the session.

use axum_extra::extract::cookie::{Cookie, SameSite};
use sha2::{Digest, Sha256};
use steward_harness::UserId;
use steward_store::{Clock, Item, StoreError, Table, WriteOp};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "steward_session";

/// How long a sign-in lasts: a working week, so an organiser is not asked every morning, and
/// short enough that a forgotten laptop session ends on its own.
pub const SESSION_LIFETIME_SECS: i64 = 7 * 24 * 3600;

/// Random bytes in a session id and a CSRF token (256 bits: not guessable).
const SESSION_RANDOM_BYTES: usize = 32;

/// A signed-in session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Session {
    /// Whose session it is.
    pub user: UserId,
    /// The token every form post and API write must echo.
    pub csrf: String,
    /// When it ends, in epoch seconds.
    pub expires_s: i64,
}

/// A fresh random token, URL-safe base64.
pub fn random_token() -> String {
    use base64::Engine;
    let mut bytes = [0u8; SESSION_RANDOM_BYTES];
    rand::fill(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn session_pk(cookie_value: &str) -> String {
    format!(
        "WEBSESSION#{}",
        hex::encode(Sha256::digest(cookie_value.as_bytes()))
    )
}

const SESSION_SK: &str = "SESSION";

/// Starts a session for `user`; returns the cookie value and the session.
pub async fn start(
    table: &dyn Table,
    clock: &dyn Clock,
    user: UserId,
) -> Result<(String, Session), StoreError> {
    let id = random_token();
    let session = start_with_id(table, clock, user, &id, &random_token()).await?;
    Ok((id, session))
}

/// Starts a session for `user` under a given cookie value and CSRF token, which the caller
/// must make unguessable; [`start`] uses fresh random ones. For fixtures such as the web
/// function's sample event, whose cookie and token are fixed.
pub async fn start_with_id(
    table: &dyn Table,
    clock: &dyn Clock,
    user: UserId,
    cookie_value: &str,
    csrf: &str,
) -> Result<Session, StoreError> {
    let expires_s = clock.now_millis() / 1000 + SESSION_LIFETIME_SECS;
    let session = Session {
        user,
        csrf: csrf.to_owned(),
        expires_s,
    };
    let mut item = Item::from_value(session_pk(cookie_value), SESSION_SK, &session)
        .map_err(|e| StoreError::Backend(format!("session record: {e}")))?;
    item.ttl = Some(expires_s);
    table.write(vec![WriteOp::put_if_absent(item)]).await?;
    Ok(session)
}

/// The live session behind a cookie value, if any.
pub async fn load(table: &dyn Table, cookie_value: &str) -> Result<Option<Session>, StoreError> {
    if cookie_value.is_empty() || cookie_value.len() > 128 {
        return Ok(None);
    }
    let Some(item) = table.get(&session_pk(cookie_value), SESSION_SK).await? else {
        return Ok(None);
    };
    Ok(serde_json::from_value(item.data).ok())
}

/// Ends the session behind a cookie value (nothing happens when there is none).
pub async fn end(table: &dyn Table, cookie_value: &str) -> Result<(), StoreError> {
    if let Some(item) = table.get(&session_pk(cookie_value), SESSION_SK).await? {
        table.write(vec![WriteOp::delete(item.pk, item.sk)]).await?;
    }
    Ok(())
}

/// The session cookie carrying `value`.
pub fn cookie(value: String, secure: bool) -> Cookie<'static> {
    Cookie::build((SESSION_COOKIE, value))
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(cookie::time::Duration::seconds(SESSION_LIFETIME_SECS))
        .build()
}

/// A cookie that removes the session cookie.
pub fn removal(secure: bool) -> Cookie<'static> {
    Cookie::build((SESSION_COOKIE, ""))
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(cookie::time::Duration::ZERO)
        .build()
}
