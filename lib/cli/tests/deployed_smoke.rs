//! `steward smoke --deployed URL` against `steward serve` on loopback (the same routes a
//! deployed stack answers), against one with its channels off, and against an address where
//! nothing listens.

#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::process::Command;

use support::{Server, temp_db};

/// A Telegram webhook secret strong enough to start with.
const TELEGRAM_SECRET: &str = "0f3c9a7e5b2d4816a0c3e9f7b5d1a2c4";

/// Runs `steward smoke --deployed url` as a script would: (exit status, stdout, stderr).
fn smoke(url: &str) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_steward"))
        .args(["smoke", "--deployed", url])
        .env_clear()
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_steward_passes_every_check() {
    let db = temp_db("smoke-deployed-pass");
    let server = Server::start(
        &db,
        &[
            ("WHATSAPP_APP_SECRET", "smoke-app-secret"),
            ("WHATSAPP_VERIFY_TOKEN", "smoke-verify-token"),
            ("TELEGRAM_WEBHOOK_SECRET", TELEGRAM_SECRET),
        ],
    )
    .await;
    let (status, stdout, stderr) = smoke(&format!("{}/", server.base));
    assert_eq!(status, Some(0), "{stdout}\n{stderr}\n{}", server.log());
    let checks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("pass") || l.starts_with("skip") || l.starts_with("FAIL"))
        .collect();
    assert_eq!(checks.len(), 5, "{stdout}");
    assert!(checks.iter().all(|l| l.starts_with("pass  ")), "{stdout}");
    for expected in [
        "pass  GET /healthz: 200 ok",
        "pass  GET /app/sign-in: 200",
        "pass  POST /mcp initialize without a token: 401, WWW-Authenticate: Bearer",
        "pass  GET /webhooks/whatsapp with a wrong verify token: 403",
        "pass  POST /webhooks/telegram with a wrong secret: 401",
    ] {
        assert!(stdout.contains(expected), "{expected}\n{stdout}");
    }
    assert!(stdout.contains("every check passed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn channels_that_are_off_are_skipped_not_failed() {
    let db = temp_db("smoke-deployed-skip");
    let server = Server::start(&db, &[]).await;
    let (status, stdout, stderr) = smoke(&server.base);
    assert_eq!(status, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "skip  GET /webhooks/whatsapp with a wrong verify token: 404, WhatsApp is off"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("skip  POST /webhooks/telegram with a wrong secret: 404, Telegram is off"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_listening_fails_every_check_naming_the_url() {
    // A port that was free a moment ago: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let (status, stdout, stderr) = smoke(&base);
    assert_eq!(status, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("FAIL  GET /healthz: cannot reach {base}/healthz")),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("FAIL  ")).count(),
        5,
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("5 of 5 checks failed against {base}/")),
        "{stderr}"
    );
}

#[test]
fn a_url_that_is_not_one_is_refused_naming_it() {
    let (status, _, stderr) = smoke("steward.example.org");
    assert_eq!(status, Some(1));
    assert!(
        stderr.contains("\"steward.example.org\" is not a URL"),
        "{stderr}"
    );
}
