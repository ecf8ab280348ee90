//! The account profile record (`USER#u` / `PROFILE`): its types, and the reads every write path
//! needs (is there an account, may it write). Below the audited transaction, which checks
//! [`ensure_can_write`] in every commit; the operations on accounts are in [`crate::accounts`].

use serde::{Deserialize, Serialize};
use steward_store::{Item, Table};

use crate::error::ServiceError;
use crate::ids::UserId;
use crate::keys::{self, RecordKey};

/// Why a paused account cannot change anything, as the caller sees it.
pub const PAUSED_REASON: &str = "this account is paused, so nothing can be changed until it is resumed. Looking things up still works.";

/// Whether an account may change data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccountStatus {
    /// Normal: reads and writes allowed.
    Active,
    /// Reads allowed, every write refused with [`PAUSED_REASON`].
    Paused,
}

/// An IANA time zone name that the time zone database knows, e.g. `Europe/Berlin`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimeZoneName(String);

impl TimeZoneName {
    /// Checks `name` against the time zone database (via `jiff`) and keeps its canonical
    /// spelling.
    pub fn parse(name: &str) -> Result<Self, ServiceError> {
        let trimmed = name.trim();
        let tz = jiff::tz::TimeZone::get(trimmed).map_err(|_| {
            ServiceError::invalid(
                "time zone",
                format!(
                    "{trimmed:?} is not a known IANA time zone; use a name like \"Europe/Berlin\" or \"America/New_York\""
                ),
            )
        })?;
        Ok(Self(tz.iana_name().unwrap_or(trimmed).to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The time zone itself, for date arithmetic.
    pub fn time_zone(&self) -> Result<jiff::tz::TimeZone, ServiceError> {
        jiff::tz::TimeZone::get(&self.0).map_err(|e| {
            ServiceError::internal(format!("stored time zone {:?} vanished: {e}", self.0))
        })
    }
}

impl std::fmt::Display for TimeZoneName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for TimeZoneName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TimeZoneName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// An account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The account's id.
    pub user: UserId,
    /// The holder's name, as they want to be addressed.
    pub name: String,
    /// The holder's time zone; times are shown in it.
    pub time_zone: TimeZoneName,
    /// Active or paused.
    pub status: AccountStatus,
    /// When the account was created, in epoch milliseconds.
    pub created_ms: i64,
    /// The stored item's version (not part of the stored data).
    #[serde(skip)]
    pub version: u64,
}

impl Profile {
    fn from_item(item: &Item) -> Result<Self, ServiceError> {
        let mut profile: Profile = item.parse()?;
        profile.version = item.version;
        Ok(profile)
    }
}

/// The key of `user`'s profile.
pub(crate) fn profile_key(user: &UserId) -> RecordKey {
    RecordKey::raw(keys::user_pk(user), keys::PROFILE_SK)
}

/// The profile of `user` and its stored item, if there is an account.
pub(crate) async fn load(
    table: &dyn Table,
    user: &UserId,
) -> Result<Option<(Profile, Item)>, ServiceError> {
    let key = profile_key(user);
    match table.get(key.pk(), key.sk()).await? {
        Some(item) => Ok(Some((Profile::from_item(&item)?, item))),
        None => Ok(None),
    }
}

/// The error for a missing account.
pub(crate) fn no_account(user: &UserId) -> ServiceError {
    ServiceError::not_found(format!("The account {user}"))
}

/// The account of `user`; [`ServiceError::NotFound`] when there is none.
pub async fn get_profile(table: &dyn Table, user: &UserId) -> Result<Profile, ServiceError> {
    load(table, user)
        .await?
        .map(|(p, _)| p)
        .ok_or_else(|| no_account(user))
}

/// The account if it may change data: [`ServiceError::NotFound`] without an account,
/// [`ServiceError::Forbidden`] with [`PAUSED_REASON`] when paused. Used by every write path.
pub async fn ensure_can_write(table: &dyn Table, user: &UserId) -> Result<Profile, ServiceError> {
    let profile = get_profile(table, user).await?;
    match profile.status {
        AccountStatus::Active => Ok(profile),
        AccountStatus::Paused => Err(ServiceError::forbidden(PAUSED_REASON)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn time_zones_are_checked_against_the_database() {
        assert_eq!(
            TimeZoneName::parse("Europe/Berlin").unwrap().as_str(),
            "Europe/Berlin"
        );
        assert!(TimeZoneName::parse("UTC").is_ok());
        let err = TimeZoneName::parse("Mars/Olympus").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Invalid time zone: \"Mars/Olympus\" is not a known IANA time zone"),
            "{err}"
        );
    }
}
