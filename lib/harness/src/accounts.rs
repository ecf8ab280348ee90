//! Accounts: the profile (name, IANA time zone, status) under `USER#u` / `PROFILE`.
//!
//! Creating, pausing and resuming an account are administrative (operator commands, sign-up)
//! and written directly: they are not the account holder's edits, so they are not on the undo
//! stack, and resume must work on a paused account. Renaming and changing the time zone are the
//! holder's own edits and go through the audited transaction like any other change.

use steward_store::{Clock, Item, StoreError, Table, WriteOp};

use crate::audit::Audited;
use crate::ctx::Ctx;
use crate::error::ServiceError;
use crate::ids::UserId;
use crate::limits::NAME_CHARS_MAX;
pub use crate::profile::{
    AccountStatus, PAUSED_REASON, Profile, TimeZoneName, ensure_can_write, get_profile,
};
use crate::profile::{load, no_account, profile_key};

/// Time zone used when an account is created without one.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Checks a person's or label's name: trimmed, 1 to [`NAME_CHARS_MAX`] characters, no control
/// characters and no invisible formatting characters ([`crate::display_text`]).
pub(crate) fn clean_name(field: &str, name: &str) -> Result<String, ServiceError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ServiceError::invalid(field, "it is empty"));
    }
    let chars = name.chars().count();
    if chars > NAME_CHARS_MAX {
        return Err(ServiceError::invalid(
            field,
            format!("it is {chars} characters long; keep it to {NAME_CHARS_MAX}"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            field,
            "it contains control characters (line breaks, tabs)",
        ));
    }
    crate::display_text::check_visible(field, name)?;
    Ok(name.to_owned())
}

/// Creates an account with a fresh id. `time_zone` defaults to [`DEFAULT_TIME_ZONE`].
pub async fn create_account(
    table: &dyn Table,
    clock: &dyn Clock,
    name: &str,
    time_zone: Option<&str>,
) -> Result<Profile, ServiceError> {
    create_account_with_id(table, clock, UserId::generate(clock), name, time_zone).await
}

/// Creates an account under a given id (for an id issued elsewhere, and for tests).
/// [`ServiceError::AlreadyExists`] when the id is taken.
pub async fn create_account_with_id(
    table: &dyn Table,
    clock: &dyn Clock,
    user: UserId,
    name: &str,
    time_zone: Option<&str>,
) -> Result<Profile, ServiceError> {
    let profile = Profile {
        user,
        name: clean_name("name", name)?,
        time_zone: TimeZoneName::parse(time_zone.unwrap_or(DEFAULT_TIME_ZONE))?,
        status: AccountStatus::Active,
        created_ms: clock.now_millis(),
        version: 1,
    };
    let key = profile_key(&profile.user);
    let item = Item::from_value(key.pk(), key.sk(), &profile)?;
    match table.write(vec![WriteOp::put_if_absent(item)]).await {
        Ok(()) => Ok(profile),
        Err(StoreError::ConditionFailed { .. }) => Err(ServiceError::already_exists(format!(
            "An account with id {}",
            profile.user
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The caller's own account.
pub async fn profile(ctx: &Ctx) -> Result<Profile, ServiceError> {
    get_profile(ctx.table().as_ref(), ctx.user()).await
}

async fn edit_profile(
    ctx: &Ctx,
    label: &str,
    edit: impl FnOnce(&mut Profile),
) -> Result<Profile, ServiceError> {
    let (old, item) = load(ctx.table().as_ref(), ctx.user())
        .await?
        .ok_or_else(|| no_account(ctx.user()))?;
    let mut new = old.clone();
    edit(&mut new);
    if new == old {
        return Ok(old);
    }
    new.version = item.version + 1;
    Audited::new(ctx)
        .allow_harness_keys()
        .label(label)
        .replace(&item, &new)
        .commit_with_result(new)
        .await
}

/// Renames the caller's account (audited, undoable).
pub async fn rename(ctx: &Ctx, name: &str) -> Result<Profile, ServiceError> {
    let name = clean_name("name", name)?;
    edit_profile(ctx, "Rename the account", |p| p.name = name).await
}

/// Changes the caller's time zone (audited, undoable).
pub async fn set_time_zone(ctx: &Ctx, time_zone: &str) -> Result<Profile, ServiceError> {
    let tz = TimeZoneName::parse(time_zone)?;
    edit_profile(ctx, "Change the account's time zone", |p| p.time_zone = tz).await
}

async fn set_status(
    table: &dyn Table,
    user: &UserId,
    status: AccountStatus,
) -> Result<Profile, ServiceError> {
    // A racing rename only moves the version; read again and re-apply.
    for _ in 0..crate::limits::PROFILE_RACE_RETRIES_MAX {
        let (mut profile, item) = load(table, user).await?.ok_or_else(|| no_account(user))?;
        if profile.status == status {
            return Ok(profile);
        }
        profile.status = status;
        profile.version = item.version + 1;
        let new = Item::from_value(&item.pk, &item.sk, &profile)?.with_version(profile.version);
        match table
            .write(vec![WriteOp::put_if_version(new, item.version)])
            .await
        {
            Ok(()) => return Ok(profile),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ServiceError::conflict(format!("The account {user}")))
}

/// Pauses an account (administrative; not undoable): from now on every write is refused.
pub async fn pause(table: &dyn Table, user: &UserId) -> Result<Profile, ServiceError> {
    set_status(table, user, AccountStatus::Paused).await
}

/// Resumes a paused account (administrative; not undoable).
pub async fn resume(table: &dyn Table, user: &UserId) -> Result<Profile, ServiceError> {
    set_status(table, user, AccountStatus::Active).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(clean_name("name", "  Dana  ").unwrap(), "Dana");
        assert!(clean_name("name", "   ").is_err());
        assert!(clean_name("name", &"x".repeat(NAME_CHARS_MAX + 1)).is_err());
        assert!(clean_name("name", "a\nb").is_err());
    }

    /// Security review, info 18: names shown to others cannot hide a direction override.
    #[test]
    fn bidi_and_invisible_characters_are_refused_in_names() {
        let err = clean_name("label", "Dana\u{202E}elif")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("Invalid label:"), "{err}");
        assert!(err.contains("U+202E"), "{err}");
        assert!(clean_name("name", "Dana\u{200B}").is_err());
        assert!(clean_name("name", "Dana 👩\u{200D}💻").is_ok());
    }
}
