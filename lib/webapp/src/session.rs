//! Web sessions: a random id in an `HttpOnly`, `SameSite=Lax` cookie (`Secure` when served over
//! HTTPS); the table keeps only the id's SHA-256, the user and the session's CSRF token, with
//! an expiry. Signing out deletes the record, so a stolen cookie dies with the session.
//!
//! Lifetimes: a session ends [`SESSION_IDLE_SECS`] after it was last used and at the latest
//! [`SESSION_ABSOLUTE_SECS`] after sign-in. A new id is issued at every sign-in (the old one,
//! if the browser sent it, is ended), so an id planted before sign-in is worth nothing.
//!
//! "Sign out everywhere": each account has a session generation (`WEBSESSIONS#<user>`); every
//! session records the generation it started in and is live only while that is still the
//! account's generation, so [`end_all`] ends every session of the account with one write.
//! Pausing an account calls it too.

use axum_extra::extract::cookie::{Cookie, SameSite};
use sha2::{Digest, Sha256};
use steward_channels::Secret;
use steward_harness::UserId;
use steward_store::{Clock, Item, StoreError, Table, WriteOp};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "steward_session";

/// The longest a sign-in lasts, however active: a working week, so an organiser is not asked
/// every morning, and short enough that a stolen cookie does not work for long.
pub const SESSION_ABSOLUTE_SECS: i64 = 7 * 24 * 3600;

/// A session unused this long ends: daily use never trips it, and a session left behind on a
/// shared computer dies within a day and a half.
pub const SESSION_IDLE_SECS: i64 = 36 * 3600;

/// How stale the recorded last use may get before a request refreshes it: refreshing on every
/// request would cost a write per page view; this bounds the idle clock's error to 10 minutes.
const LAST_SEEN_REFRESH_SECS: i64 = 10 * 60;

/// Random bytes in a session id and a CSRF token (256 bits: not guessable).
const SESSION_RANDOM_BYTES: usize = 32;

/// Longest cookie value looked up (a session id is 43 characters).
const COOKIE_VALUE_CHARS_MAX: usize = 128;

/// Attempts at bumping an account's session generation when other writes race it.
const GENERATION_RETRIES_MAX: usize = 5;

/// A signed-in session. `Debug` shows no token.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Session {
    /// Whose session it is.
    pub user: UserId,
    /// The token every form post and API write must echo.
    pub csrf: Secret,
    /// When it ends at the latest ([`SESSION_ABSOLUTE_SECS`] after sign-in), epoch seconds.
    pub expires_s: i64,
    /// When it was last used (to [`LAST_SEEN_REFRESH_SECS`]), epoch seconds.
    #[serde(default)]
    pub last_seen_s: i64,
    /// The account's session generation when it started (see the module docs).
    #[serde(default)]
    pub generation: u64,
}

impl Session {
    /// When the session ends if unused from now on: the sooner of the idle and absolute ends.
    fn ends_s(&self) -> i64 {
        (self.last_seen_s + SESSION_IDLE_SECS).min(self.expires_s)
    }
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

fn generation_pk(user: &UserId) -> String {
    format!("WEBSESSIONS#{user}")
}

const GENERATION_SK: &str = "GENERATION";

/// An account's session generation record.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct Generation {
    generation: u64,
}

async fn load_generation(
    table: &dyn Table,
    user: &UserId,
) -> Result<(u64, Option<Item>), StoreError> {
    let Some(item) = table.get(&generation_pk(user), GENERATION_SK).await? else {
        return Ok((0, None));
    };
    let generation = item
        .parse::<Generation>()
        .map_err(|e| StoreError::Backend(format!("session generation record: {e}")))?
        .generation;
    Ok((generation, Some(item)))
}

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
    let now_s = clock.now_millis() / 1000;
    let (generation, _) = load_generation(table, &user).await?;
    let session = Session {
        user,
        csrf: Secret::new(csrf),
        expires_s: now_s + SESSION_ABSOLUTE_SECS,
        last_seen_s: now_s,
        generation,
    };
    let mut item = Item::from_value(session_pk(cookie_value), SESSION_SK, &session)
        .map_err(|e| StoreError::Backend(format!("session record: {e}")))?;
    item.ttl = Some(session.ends_s());
    table.write(vec![WriteOp::put_if_absent(item)]).await?;
    Ok(session)
}

/// The live session behind a cookie value, if any: not expired (idle or absolute), and of the
/// account's current generation. Refreshes the last use when it is stale.
pub async fn load(
    table: &dyn Table,
    clock: &dyn Clock,
    cookie_value: &str,
) -> Result<Option<Session>, StoreError> {
    if cookie_value.is_empty() || cookie_value.len() > COOKIE_VALUE_CHARS_MAX {
        return Ok(None);
    }
    let Some(item) = table.get(&session_pk(cookie_value), SESSION_SK).await? else {
        return Ok(None);
    };
    let Ok(mut session) = item.parse::<Session>() else {
        return Ok(None);
    };
    let now_s = clock.now_millis() / 1000;
    if now_s >= session.ends_s() {
        return Ok(None);
    }
    let (generation, _) = load_generation(table, &session.user).await?;
    if generation != session.generation {
        return Ok(None);
    }
    if now_s - session.last_seen_s >= LAST_SEEN_REFRESH_SECS {
        session.last_seen_s = now_s;
        let fresh = Item::from_value(&item.pk, &item.sk, &session)
            .map_err(|e| StoreError::Backend(format!("session record: {e}")))?
            .with_version(item.version + 1)
            .with_ttl(session.ends_s());
        match table
            .write(vec![WriteOp::put_if_version(fresh, item.version)])
            .await
        {
            // A concurrent request refreshed it (or signed out): either way this one is served.
            Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(session))
}

/// Ends the session behind a cookie value (nothing happens when there is none).
pub async fn end(table: &dyn Table, cookie_value: &str) -> Result<(), StoreError> {
    if cookie_value.is_empty() || cookie_value.len() > COOKIE_VALUE_CHARS_MAX {
        return Ok(());
    }
    if let Some(item) = table.get(&session_pk(cookie_value), SESSION_SK).await? {
        table.write(vec![WriteOp::delete(item.pk, item.sk)]).await?;
    }
    Ok(())
}

/// Ends every session of `user` ("sign out everywhere", and pausing an account): bumps the
/// account's session generation, so no session started before now is live any more.
pub async fn end_all(table: &dyn Table, user: &UserId) -> Result<(), StoreError> {
    for _ in 0..GENERATION_RETRIES_MAX {
        let (generation, item) = load_generation(table, user).await?;
        let next = Generation {
            generation: generation + 1,
        };
        let new = Item::from_value(generation_pk(user), GENERATION_SK, &next)
            .map_err(|e| StoreError::Backend(format!("session generation record: {e}")))?;
        let op = match &item {
            Some(old) => WriteOp::put_if_version(new.with_version(old.version + 1), old.version),
            None => WriteOp::put_if_absent(new),
        };
        match table.write(vec![op]).await {
            Ok(()) => return Ok(()),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Backend(format!(
        "could not end the sessions of {user}: the record kept changing"
    )))
}

/// The session cookie carrying `value`.
pub fn cookie(value: String, secure: bool) -> Cookie<'static> {
    Cookie::build((SESSION_COOKIE, value))
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(cookie::time::Duration::seconds(SESSION_ABSOLUTE_SECS))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use steward_store::{ManualClock, SqliteTable};

    use super::*;

    async fn world() -> (Arc<ManualClock>, SqliteTable, UserId) {
        let clock = Arc::new(ManualClock::at_millis(1_780_304_400_000));
        let table = SqliteTable::in_memory_with_clock(clock.clone()).unwrap();
        (clock, table, UserId::parse("ada").unwrap())
    }

    #[tokio::test]
    async fn sessions_end_when_idle_and_at_the_absolute_limit() {
        let (clock, table, user) = world().await;
        let (id, _) = start(&table, clock.as_ref(), user.clone()).await.unwrap();
        // Used every 30 hours: idle never trips, but the week ends it.
        for _ in 0..5 {
            clock.advance_millis(30 * 3600 * 1000);
            assert!(load(&table, clock.as_ref(), &id).await.unwrap().is_some());
        }
        clock.advance_millis(30 * 3600 * 1000);
        assert!(load(&table, clock.as_ref(), &id).await.unwrap().is_none());

        let (id, _) = start(&table, clock.as_ref(), user).await.unwrap();
        clock.advance_millis((SESSION_IDLE_SECS + 1) * 1000);
        assert!(load(&table, clock.as_ref(), &id).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn ending_all_sessions_ends_every_earlier_one_only() {
        let (clock, table, user) = world().await;
        let other = UserId::parse("bea").unwrap();
        let (a, _) = start(&table, clock.as_ref(), user.clone()).await.unwrap();
        let (b, _) = start(&table, clock.as_ref(), user.clone()).await.unwrap();
        let (c, _) = start(&table, clock.as_ref(), other).await.unwrap();
        end_all(&table, &user).await.unwrap();
        for id in [&a, &b] {
            assert!(load(&table, clock.as_ref(), id).await.unwrap().is_none());
        }
        assert!(load(&table, clock.as_ref(), &c).await.unwrap().is_some());
        let (d, _) = start(&table, clock.as_ref(), user.clone()).await.unwrap();
        assert!(load(&table, clock.as_ref(), &d).await.unwrap().is_some());
        end_all(&table, &user).await.unwrap();
        assert!(load(&table, clock.as_ref(), &d).await.unwrap().is_none());
    }

    #[test]
    fn debug_shows_no_csrf_token() {
        let s = Session {
            user: UserId::parse("ada").unwrap(),
            csrf: Secret::new("csrf-token-value-0123456789"),
            expires_s: 1,
            last_seen_s: 0,
            generation: 0,
        };
        assert!(!format!("{s:?}").contains("csrf-token-value"));
    }
}
