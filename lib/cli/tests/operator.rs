//! The operator commands as a script uses them: one result on stdout, errors on stderr with a
//! non-zero exit, all on one store file.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn steward(db: &Path, args: &[&str]) -> (bool, String, String) {
    steward_with(db, args, &[])
}

/// [`steward`] with `env` set for the process.
fn steward_with(db: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_steward"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("STEWARD_DB")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap().trim().to_owned(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("steward-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("nested").join("steward.db")
}

#[test]
fn users_and_tokens_from_the_command_line() {
    let db = temp_db("ops");
    let (ok, user, err) = steward(
        &db,
        &[
            "user",
            "create",
            "--name",
            "Dana Lee",
            "--timezone",
            "Europe/Berlin",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        !user.is_empty() && !user.contains(' '),
        "one id on stdout: {user:?}"
    );
    assert!(db.exists(), "the store and its folder were created");

    let (ok, code, err) = steward(&db, &["user", "link-code", &user]);
    assert!(ok, "{err}");
    assert_eq!(code.len(), 8, "{code}");

    let (ok, token, err) = steward(
        &db,
        &["token", "create", &user, "--label", "Claude desktop"],
    );
    assert!(ok, "{err}");
    assert!(token.starts_with("stw_"), "{token}");

    let (ok, list, _) = steward(&db, &["token", "list", &user]);
    assert!(ok);
    let line = list.lines().next().unwrap();
    assert!(
        line.contains("Claude desktop") && line.ends_with("active"),
        "{line}"
    );
    let token_id = line.split('\t').next().unwrap();
    assert!(!list.contains(&token), "the secret is never shown again");

    let (ok, out, _) = steward(&db, &["token", "revoke", token_id]);
    assert!(ok && out.ends_with("revoked"));
    let (_, list, _) = steward(&db, &["token", "list", &user]);
    assert!(list.lines().next().unwrap().ends_with("revoked"));

    let (ok, out, _) = steward(&db, &["user", "pause", &user]);
    assert!(ok && out.ends_with("paused"));
    let (ok, out, _) = steward(&db, &["user", "resume", &user]);
    assert!(ok && out.ends_with("active"));
}

#[test]
fn bad_input_gets_a_clear_error_and_a_failing_exit() {
    let db = temp_db("bad");
    let (ok, out, err) = steward(
        &db,
        &[
            "user",
            "create",
            "--name",
            "X",
            "--timezone",
            "Mars/Olympus",
        ],
    );
    assert!(!ok && out.is_empty());
    assert!(
        err.contains("time zone") || err.contains("Mars/Olympus"),
        "{err}"
    );
    let (ok, _, err) = steward(&db, &["user", "pause", "no such user"]);
    assert!(!ok && err.contains("not a user id"), "{err}");
    let (ok, _, err) = steward(&db, &["user", "link-code", "u0000000000000000000000000"]);
    assert!(!ok && err.contains("not found"), "{err}");
    let (ok, _, err) = steward(&db, &["token", "revoke", "abc"]);
    assert!(!ok && err.contains("not a token id"), "{err}");
}

#[test]
fn a_bad_thread_count_stops_the_start_with_one_sentence_and_touches_nothing() {
    let db = temp_db("threads");
    let create = ["user", "create", "--name", "X"];
    let (ok, out, err) = steward_with(&db, &create, &[("STEWARD_WORKER_THREADS", "0")]);
    assert!(!ok && out.is_empty());
    assert_eq!(
        err,
        "steward: STEWARD_WORKER_THREADS: \"0\" is not a number of threads from 1 to 256; unset it for 1\n"
    );
    assert!(!db.exists(), "no store was created");
    let (ok, _, err) = steward_with(&db, &create, &[("STEWARD_WORKER_THREADS", "2")]);
    assert!(ok, "{err}");
}

/// Security review finding 7: the operator can unlink a phone from an account.
#[tokio::test]
async fn linked_phones_can_be_unlinked_by_the_operator() {
    use std::sync::Arc;

    use steward_harness::{ChannelIdentity, UserId, identity};
    use steward_store::{SqliteTable, SystemClock, Table};

    let db = temp_db("unlink");
    let (ok, user, err) = steward(&db, &["user", "create", "--name", "Una"]);
    assert!(ok, "{err}");
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(&db).unwrap());
    let phone = ChannelIdentity::parse("wa", "4915112345678").unwrap();
    let owner = UserId::parse(&user).unwrap();
    identity::bind(table.as_ref(), &SystemClock, &phone, &owner)
        .await
        .unwrap();

    let (ok, out, err) = steward(&db, &["user", "unlink", &user, "wa", "4915112345678"]);
    assert!(ok, "{err}");
    assert_eq!(out, format!("wa:4915112345678 unlinked from {user}"));
    assert_eq!(
        identity::lookup(table.as_ref(), &phone).await.unwrap(),
        None
    );

    let (ok, out, err) = steward(&db, &["user", "unlink", &user, "wa", "4915112345678"]);
    assert!(!ok && out.is_empty());
    assert!(err.contains("not found"), "{err}");
    let (ok, _, err) = steward(&db, &["user", "unlink", &user, "wa", "has space"]);
    assert!(!ok && err.contains("not a channel identity"), "{err}");
}
