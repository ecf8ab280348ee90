//! The webhook function's binary refuses to start half-configured: exit status 78 (EX_CONFIG) and
//! one line on stderr naming the setting, before the Lambda runtime loop (which would need
//! `AWS_LAMBDA_RUNTIME_API`, unset here) is reached.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use steward_edge::startup::EXIT_CONFIG;

/// Runs the binary with only `vars` (and a region, so the AWS SDK needs no lookup); returns
/// its exit status and stderr.
fn start(vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_webhook"))
        .env_clear()
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_webhook_binary_refuses_to_start_naming_the_missing_setting() {
    let (status, stderr) = start(&[]);
    assert_eq!(status, Some(EXIT_CONFIG), "{stderr}");
    assert!(
        stderr.starts_with("steward webhook refuses to start: STEWARD_QUEUE_URL is not set: "),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one sentence: {stderr}");
}

/// half a WhatsApp webhook (the app secret without the verify token) refuses the start too.
#[test]
fn the_webhook_binary_refuses_an_incoherent_setting() {
    let (status, stderr) = start(&[
        (
            "STEWARD_QUEUE_URL",
            "https://sqs.eu-west-1.amazonaws.com/1/turns.fifo",
        ),
        ("WHATSAPP_APP_SECRET", "app-secret"),
    ]);
    assert_eq!(status, Some(EXIT_CONFIG), "{stderr}");
    assert!(stderr.starts_with("steward webhook refuses to start: the WhatsApp webhook is half configured: WHATSAPP_VERIFY_TOKEN is not set while WHATSAPP_APP_SECRET is set;"), "{stderr}");
}
