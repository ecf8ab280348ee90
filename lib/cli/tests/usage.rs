//! `steward usage` and `steward user budget` as a script uses them: one line per user on
//! stdout; bad flag values refused with an error naming the flag, nothing written.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

use steward_harness::{UserId, usage};
use steward_llm::Usage;
use steward_store::{Clock, SqliteTable, SystemClock};

fn steward(db: &Path, env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_steward"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("STEWARD_DB")
        .env_remove("STEWARD_BUDGET_USD")
        .env_remove("STEWARD_BUDGET_TOKENS")
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
    dir.join("steward.db")
}

fn create(db: &Path, name: &str) -> String {
    let (ok, user, err) = steward(db, &[], &["user", "create", "--name", name]);
    assert!(ok, "{err}");
    user
}

/// Records one Sonnet call of `output` output tokens and 900 cached of 1000 input tokens.
async fn spend(db: &Path, user: &str, output: u64) {
    let table = SqliteTable::open(db).unwrap();
    let u = Usage {
        input_tokens: 50,
        cache_creation_input_tokens: 50,
        cache_read_input_tokens: 900,
        output_tokens: output,
        ..Usage::default()
    };
    let user = UserId::parse(user).unwrap();
    let now = SystemClock.now_millis();
    usage::record(&table, &user, now, "claude-sonnet-4-5", &u, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn usage_is_listed_per_user_with_cost_cache_share_and_budget_left() {
    let db = temp_db("usage");
    let dana = create(&db, "Dana");
    let eli = create(&db, "Eli");
    let idle = create(&db, "Idle");
    spend(&db, &dana, 1_000).await;
    spend(&db, &dana, 1_000).await;
    spend(&db, &eli, 100).await;
    let month = usage::month_of(SystemClock.now_millis());

    let budget = [("STEWARD_BUDGET_USD", "1")];
    let (ok, out, err) = steward(&db, &budget, &["usage"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "only users with usage: {out}");
    let dana_line = lines.iter().find(|l| l.starts_with(&dana)).unwrap();
    // Per call: 50 × 3 + 50 × 3.75 + 900 × 0.3 + 1000 × 15 = 15 607.5 → 15 608 micro-dollars.
    assert_eq!(
        *dana_line,
        format!(
            "{dana}\t{month}\tcalls=2\ttokens=4000\tcache_read=90%\tcost=$0.04\tbudget=$0.97 left"
        )
    );
    assert!(!out.contains(&idle));

    let (ok, out, err) = steward(&db, &[], &["usage", &eli, "--month", &month]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        format!(
            "{eli}\t{month}\tcalls=1\ttokens=1100\tcache_read=90%\tcost=$0.01\tbudget=no budget"
        )
    );
    let (ok, out, _) = steward(&db, &[], &["usage", &eli, "--month", "2001-01"]);
    assert!(ok);
    assert!(
        out.contains("calls=0\ttokens=0\tcache_read=-\tcost=$0.00"),
        "{out}"
    );

    // A user's own budget shows in the report.
    let (ok, out, err) = steward(
        &db,
        &budget,
        &["user", "budget", &dana, "--tokens", "10000"],
    );
    assert!(ok, "{err}");
    assert_eq!(
        out,
        format!("{dana} budget: $1.00 and 10000 tokens a month")
    );
    let (_, out, _) = steward(&db, &budget, &["usage", &dana]);
    assert!(out.ends_with("budget=6000 tokens, $0.97 left"), "{out}");
    let (ok, out, _) = steward(
        &db,
        &budget,
        &["user", "budget", &dana, "--usd", "unlimited"],
    );
    assert!(ok);
    assert_eq!(out, format!("{dana} budget: 10000 tokens a month"));
    let (ok, out, _) = steward(&db, &budget, &["user", "budget", &dana, "--clear"]);
    assert!(ok);
    assert_eq!(out, format!("{dana} budget: $1.00 a month"));
}

#[test]
fn bad_budget_values_are_refused_naming_the_flag_and_nothing_is_written() {
    let db = temp_db("budget-bad");
    let user = create(&db, "Dana");
    for (args, flag) in [
        (vec!["--usd", "twenty"], "--usd"),
        (vec!["--usd", "-5"], "--usd"),
        (vec!["--usd", "1.2345678"], "--usd"),
        (vec!["--tokens", "1.5"], "--tokens"),
        (vec!["--tokens", "lots"], "--tokens"),
    ] {
        let mut full = vec!["user", "budget", user.as_str()];
        full.extend(&args);
        let (ok, out, err) = steward(&db, &[], &full);
        assert!(!ok, "{args:?} was accepted: {out}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(out.is_empty());
    }
    let (ok, _, err) = steward(&db, &[], &["user", "budget", &user]);
    assert!(!ok && err.contains("--usd"), "a limit is required: {err}");
    let (ok, _, err) = steward(
        &db,
        &[],
        &["user", "budget", &user, "--clear", "--usd", "3"],
    );
    assert!(!ok && err.contains("--clear"), "{err}");
    let (ok, _, err) = steward(&db, &[], &["user", "budget", "nobody", "--usd", "3"]);
    assert!(!ok, "no such user");
    assert!(!err.is_empty());
    let (ok, _, err) = steward(&db, &[], &["usage", "--month", "2026-13"]);
    assert!(!ok && err.contains("--month"), "{err}");
    let (ok, _, err) = steward(&db, &[("STEWARD_BUDGET_USD", "lots")], &["usage"]);
    assert!(!ok && err.contains("STEWARD_BUDGET_USD"), "{err}");
    // Nothing was stored by the refused commands.
    let (_, out, _) = steward(&db, &[], &["usage", &user]);
    assert!(out.ends_with("budget=no budget"), "{out}");
}
