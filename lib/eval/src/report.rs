//! The report of a suite run: a plain table for people, JSON for tools. One row per case; with
//! several runs per case the row shows the pass rate, the first failure, and mean figures.

use serde::Serialize;

use crate::model::Tokens;
use crate::observe::clip;
use crate::runner::{CaseRun, Outcome};

/// Widest "first unmet expectation" cell in the table, in characters; JSON has it whole.
const FAILURE_CELL_CHARS_MAX: usize = 90;

/// A suite's results.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The model that answered (`scripted` for scripted steps).
    pub model: String,
    /// Runs per case.
    pub repeat: u32,
    /// One entry per case, in suite order.
    pub cases: Vec<CaseReport>,
    /// Runs that passed, of all runs that were not skipped.
    pub passed_runs: usize,
    /// Runs that were not skipped.
    pub counted_runs: usize,
}

/// One case's results over its runs.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// `pass`, `fail` or `skip`.
    pub result: &'static str,
    /// Runs that passed.
    pub passed: usize,
    /// Runs.
    pub runs: usize,
    /// The first run's failure, or why it was skipped.
    pub first_unmet: Option<String>,
    /// Every run.
    pub details: Vec<RunReport>,
}

/// One run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `pass`, `fail` or `skip`.
    pub result: &'static str,
    /// What failed, or why it was skipped.
    pub reason: Option<String>,
    /// Messages handled.
    pub turns: usize,
    /// Model calls.
    pub model_calls: usize,
    /// Tokens.
    pub tokens: Tokens,
    /// Share of input tokens read from the cache.
    pub cache_read_share: Option<f64>,
    /// Estimated cost in dollars.
    pub cost_usd: Option<f64>,
    /// Wall time in milliseconds.
    pub wall_ms: u64,
}

impl RunReport {
    fn of(run: &CaseRun) -> Self {
        let (result, reason) = match &run.outcome {
            Outcome::Passed => ("pass", None),
            Outcome::Failed(why) => ("fail", Some(why.clone())),
            Outcome::Skipped(why) => ("skip", Some(why.clone())),
        };
        Self {
            result,
            reason,
            turns: run.turns,
            model_calls: run.model_calls,
            tokens: run.tokens,
            cache_read_share: run.tokens.cache_read_share(),
            cost_usd: run.cost_usd,
            wall_ms: run.wall_ms,
        }
    }
}

impl Report {
    /// The report of `results` (from `run_suite`).
    pub fn new(model: &str, repeat: u32, results: &[(String, Vec<CaseRun>)]) -> Self {
        let mut cases = Vec::with_capacity(results.len());
        let (mut passed_runs, mut counted_runs) = (0, 0);
        for (name, runs) in results {
            let details: Vec<RunReport> = runs.iter().map(RunReport::of).collect();
            let skipped = runs
                .iter()
                .all(|r| matches!(r.outcome, Outcome::Skipped(_)));
            let passed = runs.iter().filter(|r| r.outcome == Outcome::Passed).count();
            let first_unmet = runs.iter().find_map(|r| match &r.outcome {
                Outcome::Passed => None,
                Outcome::Failed(why) | Outcome::Skipped(why) => Some(why.clone()),
            });
            if !skipped {
                passed_runs += passed;
                counted_runs += runs.len();
            }
            cases.push(CaseReport {
                name: name.clone(),
                result: if skipped {
                    "skip"
                } else if passed == runs.len() {
                    "pass"
                } else {
                    "fail"
                },
                passed,
                runs: runs.len(),
                first_unmet,
                details,
            });
        }
        Self {
            model: model.to_owned(),
            repeat,
            cases,
            passed_runs,
            counted_runs,
        }
    }

    /// Whether any case failed (skipped cases do not count).
    pub fn has_failures(&self) -> bool {
        self.cases.iter().any(|c| c.result == "fail")
    }

    /// The report as an aligned plain-text table with a summary line.
    pub fn table(&self) -> String {
        let header = [
            "case",
            "result",
            "first unmet expectation",
            "turns",
            "calls",
            "tokens",
            "cache read",
            "cost",
            "wall",
        ];
        let mut rows: Vec<[String; 9]> = vec![header.map(str::to_owned)];
        for case in &self.cases {
            let counted: Vec<&RunReport> =
                case.details.iter().filter(|r| r.result != "skip").collect();
            let mean = |f: &dyn Fn(&RunReport) -> f64| -> f64 {
                if counted.is_empty() {
                    0.0
                } else {
                    counted.iter().map(|r| f(r)).sum::<f64>() / counted.len() as f64
                }
            };
            let result = if self.repeat > 1 && case.result != "skip" {
                format!("{} {}/{}", case.result, case.passed, case.runs)
            } else {
                case.result.to_owned()
            };
            let tokens = mean(&|r| (r.tokens.all_input() + r.tokens.output) as f64);
            let share = {
                let shares: Vec<f64> = counted.iter().filter_map(|r| r.cache_read_share).collect();
                if shares.is_empty() {
                    "-".to_owned()
                } else {
                    format!(
                        "{:.0}%",
                        100.0 * shares.iter().sum::<f64>() / shares.len() as f64
                    )
                }
            };
            let cost = {
                let costs: Vec<f64> = counted.iter().filter_map(|r| r.cost_usd).collect();
                if costs.is_empty() {
                    "-".to_owned()
                } else {
                    format!("${:.4}", costs.iter().sum::<f64>() / costs.len() as f64)
                }
            };
            rows.push([
                case.name.clone(),
                result,
                case.first_unmet
                    .as_deref()
                    .map(|w| clip(w, FAILURE_CELL_CHARS_MAX))
                    .unwrap_or_else(|| "-".into()),
                format!("{:.0}", mean(&|r| r.turns as f64)),
                format!("{:.0}", mean(&|r| r.model_calls as f64)),
                format!("{tokens:.0}"),
                share,
                cost,
                format!("{:.0} ms", mean(&|r| r.wall_ms as f64)),
            ]);
        }
        let mut widths = [0usize; 9];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .zip(widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        let skipped = self.cases.iter().filter(|c| c.result == "skip").count();
        let rate = if self.counted_runs == 0 {
            0.0
        } else {
            100.0 * self.passed_runs as f64 / self.counted_runs as f64
        };
        out.push_str(&format!(
            "\n{} of {} runs passed ({rate:.0}%) · {} case(s) failed · {skipped} skipped · model {}\n",
            self.passed_runs,
            self.counted_runs,
            self.cases.iter().filter(|c| c.result == "fail").count(),
            self.model
        ));
        out
    }
}
