//! `steward eval` as a script uses it: the report on stdout, a non-zero exit when a case
//! fails, and a suite that cannot run refused before any case runs.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::PathBuf;
use std::process::Command;

fn steward(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_steward"))
        .args(args)
        .env_remove("STEWARD_DB")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn suite_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("steward-eval-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const SUITE: &str = r#"
[[case]]
name = "creates a draft"

[[case.turn]]
say = "Create Summer Meetup on 12 December."
model = [
  { tool = "create_event", input = { name = "Summer Meetup", dates = ["2026-12-12"] } },
  { text = "Done." },
]

[[case.expect]]
record = "event"
name = "Summer Meetup"
fields = { status = "draft" }

[[case]]
name = "wrongly expects publishing"

[[case.turn]]
say = "Create Summer Meetup on 12 December."
model = [
  { tool = "create_event", input = { name = "Summer Meetup", dates = ["2026-12-12"] } },
  { text = "Done." },
]

[[case.expect]]
ran = "publish_event"
"#;

#[test]
fn a_failing_case_fails_the_command_and_the_report_says_which_expectation() {
    let path = suite_file("fail", SUITE);
    let (ok, out, err) = steward(&["eval", path.to_str().unwrap()]);
    assert!(!ok, "{out}\n{err}");
    assert!(err.contains("1 case(s) failed"), "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("wrongly expects publishing"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("fail"), "{row}");
    assert!(
        row.contains("expect 1: publish_event ran 1 time(s)"),
        "{row}"
    );
    assert!(out.contains("1 of 2 runs passed (50%)"), "{out}");

    let (ok, out, _) = steward(&["eval", path.to_str().unwrap(), "--json", "--repeat", "2"]);
    assert!(!ok);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["repeat"], 2);
    assert_eq!(json["cases"][0]["result"], "pass");
    assert_eq!(json["cases"][0]["passed"], 2);
    assert_eq!(json["cases"][1]["result"], "fail");
    assert_eq!(json["cases"][1]["details"].as_array().unwrap().len(), 2);
}

#[test]
fn a_passing_suite_exits_zero() {
    let text = SUITE.split("[[case]]\nname = \"wrongly").next().unwrap();
    let path = suite_file("pass", text);
    let (ok, out, err) = steward(&["eval", path.to_str().unwrap()]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("1 of 1 runs passed (100%)"), "{out}");
}

#[test]
fn a_suite_with_an_unknown_field_runs_nothing_and_names_case_line_and_field() {
    let path = suite_file(
        "typo",
        &SUITE.replace("ran = \"publish_event\"", "rann = \"publish_event\""),
    );
    let (ok, out, err) = steward(&["eval", path.to_str().unwrap()]);
    assert!(!ok);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(
            r#"case 2 ("wrongly expects publishing"), line 28, field `rann`: unknown field"#
        ),
        "{err}"
    );
}
