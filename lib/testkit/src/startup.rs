//! A function binary started the way its start-up check sees it: an empty environment (plus a
//! region, so the AWS SDK needs no lookup, and no instance metadata) and the settings a test
//! names. Each function's `tests/startup.rs` checks that a missing or incoherent setting stops
//! the binary before the Lambda runtime loop (which would need `AWS_LAMBDA_RUNTIME_API`, unset
//! here) with one sentence naming the setting.

use std::process::Command;

/// Runs `bin` with only `vars` set; returns its exit status and its stderr.
///
/// # Panics
/// When the binary cannot be started at all (a test failure).
#[allow(clippy::expect_used)]
pub fn start(bin: &str, vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(bin)
        .env_clear()
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .envs(vars.iter().copied())
        .output()
        .expect("the function binary starts");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that `bin`, started with only `vars`, exits with `status` and prints exactly one
/// line on stderr, beginning with `sentence_start`.
///
/// # Panics
/// When it does not (a test failure), showing what the binary printed.
pub fn assert_refuses(bin: &str, vars: &[(&str, &str)], status: i32, sentence_start: &str) {
    let (code, stderr) = start(bin, vars);
    assert_eq!(code, Some(status), "{stderr}");
    assert!(
        stderr.starts_with(sentence_start),
        "expected a line starting with {sentence_start:?}, got: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one sentence: {stderr}");
}
