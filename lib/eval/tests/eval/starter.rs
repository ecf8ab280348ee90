//! The starter suite in `lib/eval/suites/starter.toml` runs scripted, and every case passes.

use crate::support::{parse, run_scripted};

const STARTER: &str = include_str!("../../suites/starter.toml");

#[tokio::test]
async fn the_starter_suite_passes_with_its_scripted_steps() {
    let suite = parse(STARTER).unwrap_or_else(|e| panic!("{e}"));
    assert!(suite.cases.len() >= 20, "{} cases", suite.cases.len());
    let report = run_scripted(&suite).await;
    let table = report.table();
    println!("{table}");
    let failures: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.result != "pass")
        .map(|c| {
            format!(
                "{}: {}",
                c.name,
                c.first_unmet.as_deref().unwrap_or_default()
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(report.passed_runs, suite.cases.len(), "{table}");
}

/// The full example in the README's "The suite format" parses and passes, so the documented
/// format stays true.
#[tokio::test]
async fn the_readme_example_runs_green() {
    let readme = include_str!("../../../../README.md");
    let section = readme
        .split("### The suite format")
        .nth(1)
        .expect("the README documents the suite format");
    let example = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("with a TOML example");
    let suite = parse(example).unwrap_or_else(|e| panic!("{e}"));
    let report = run_scripted(&suite).await;
    assert!(!report.has_failures(), "{:?}", report.cases[0].first_unmet);
    assert_eq!(report.passed_runs, 1);
}
