//! Refusing to start half-configured: each deployed function lists what it needs from its
//! [`Settings`] as [`Need`]s (the list lives beside the surface that reads the settings, e.g.
//! `steward_webhook::WEBHOOK_NEEDS`), [`check`] reads them in order after the secrets are
//! resolved and returns the first one that is not met, and [`refuse_to_start`] prints that one
//! sentence — naming the setting and how to fix it — and exits with [`EXIT_CONFIG`] before the
//! Lambda runtime loop starts. A misconfigured function then fails its first invocation with an
//! init error in its log, instead of accepting messages it can never answer.

use crate::config::{ConfigError, Settings};

/// The exit status of a function that refuses its configuration: `EX_CONFIG` of sysexits(3),
/// so a log reader (and a test) can tell "misconfigured" from a crash.
pub const EXIT_CONFIG: i32 = 78;

/// One thing a function needs from its settings.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// A setting that must have a value; `fix` says where the value comes from.
    Set {
        /// The setting.
        name: &'static str,
        /// How to give it (one clause, e.g. "the URL of the SQS FIFO turn queue").
        fix: &'static str,
    },
    /// Settings that only work together — a channel's secrets: all set, or none.
    AllOrNone {
        /// What they configure, for the sentence ("WhatsApp webhooks").
        what: &'static str,
        /// The settings, in the order they are named.
        names: &'static [&'static str],
    },
    /// A setting that, when set, must pass `check` (whose error is the whole sentence, naming
    /// the setting); unset means the default.
    Valid {
        /// The setting.
        name: &'static str,
        /// Whether its value can be used.
        check: fn(&str) -> Result<(), String>,
    },
    /// A rule of its own (the model id for the provider, a secret's strength, a whole
    /// surface's settings); its error names the setting.
    Rule(fn(&Settings) -> Result<(), ConfigError>),
}

impl Need {
    /// Whether `settings` meet this need; the error is the sentence to refuse with.
    pub fn check(&self, settings: &Settings) -> Result<(), ConfigError> {
        match *self {
            Need::Set { name, fix } => match settings.get(name) {
                Some(_) => Ok(()),
                None => Err(ConfigError::Required { name, fix }),
            },
            Need::AllOrNone { what, names } => {
                let set: Vec<&'static str> = names
                    .iter()
                    .copied()
                    .filter(|n| settings.get(n).is_some())
                    .collect();
                match names.iter().copied().find(|n| settings.get(n).is_none()) {
                    Some(missing) if !set.is_empty() => Err(ConfigError::HalfConfigured {
                        what,
                        missing,
                        set: set_clause(&set),
                    }),
                    _ => Ok(()),
                }
            }
            Need::Valid { name, check } => match settings.get(name) {
                Some(value) => check(&value).map_err(ConfigError::Unusable),
                None => Ok(()),
            },
            Need::Rule(rule) => rule(settings),
        }
    }
}

/// "A is set", "A and B are set", "A, B and C are set".
fn set_clause(names: &[&str]) -> String {
    match names {
        [one] => format!("{one} is set"),
        [rest @ .., last] => format!("{} and {last} are set", rest.join(", ")),
        [] => "nothing is set".to_owned(),
    }
}

/// The first of `needs` that `settings` do not meet, in list order.
pub fn check(settings: &Settings, needs: &[Need]) -> Result<(), ConfigError> {
    needs.iter().try_for_each(|need| need.check(settings))
}

/// The one line a function that refuses to start prints (stderr, which CloudWatch keeps).
pub fn refusal(function: &str, error: &ConfigError) -> String {
    format!("steward {function} refuses to start: {error}")
}

/// Prints [`refusal`] to stderr, logs it, and exits with [`EXIT_CONFIG`].
pub fn refuse_to_start(function: &str, error: &ConfigError) -> ! {
    let line = refusal(function, error);
    tracing::error!(function, "{line}");
    eprintln!("{line}");
    std::process::exit(EXIT_CONFIG)
}

/// `result`'s value, or [`refuse_to_start`] with its error: every configuration error of a
/// function's start goes through here.
pub fn or_refuse<T>(function: &str, result: Result<T, ConfigError>) -> T {
    result.unwrap_or_else(|error| refuse_to_start(function, &error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(value: &str) -> Result<(), String> {
        match value.chars().all(|c| c.is_ascii_digit()) {
            true => Ok(()),
            false => Err(format!("DAYS: \"{value}\" is not a number")),
        }
    }

    const NEEDS: &[Need] = &[
        Need::Set {
            name: "TABLE",
            fix: "set it to the table's name",
        },
        Need::AllOrNone {
            what: "the thing",
            names: &["A", "B", "C"],
        },
        Need::Valid {
            name: "DAYS",
            check: digits,
        },
    ];

    fn sentence(pairs: &[(&str, &str)]) -> Option<String> {
        check(&Settings::from_pairs(pairs.iter().copied()), NEEDS)
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn a_missing_setting_is_named_with_its_fix() {
        assert_eq!(
            sentence(&[]).as_deref(),
            Some("TABLE is not set: set it to the table's name")
        );
        assert_eq!(
            sentence(&[("TABLE", "  ")]),
            sentence(&[]),
            "blank is unset"
        );
    }

    #[test]
    fn settings_that_go_together_are_all_or_none() {
        assert_eq!(sentence(&[("TABLE", "t")]), None, "none is fine");
        assert_eq!(
            sentence(&[("TABLE", "t"), ("A", "a"), ("B", "b"), ("C", "c")]),
            None
        );
        let half = sentence(&[("TABLE", "t"), ("A", "a"), ("C", "c")]).unwrap_or_default();
        assert!(
            half.starts_with("the thing is half configured: B is not set while A and C are set;"),
            "{half}"
        );
        assert!(half.contains("set B too"), "{half}");
        let one = sentence(&[("TABLE", "t"), ("B", "b")]).unwrap_or_default();
        assert!(one.contains("A is not set while B is set;"), "{one}");
    }

    #[test]
    fn a_checked_setting_is_checked_only_when_set() {
        assert_eq!(sentence(&[("TABLE", "t"), ("DAYS", "40")]), None);
        assert_eq!(
            sentence(&[("TABLE", "t"), ("DAYS", "forty")]).as_deref(),
            Some("DAYS: \"forty\" is not a number")
        );
    }

    #[test]
    fn the_refusal_is_one_line_naming_the_function() {
        let error = ConfigError::Required {
            name: "TABLE",
            fix: "set it",
        };
        let line = refusal("webhook", &error);
        assert_eq!(
            line,
            "steward webhook refuses to start: TABLE is not set: set it"
        );
        assert!(!line.contains('\n'));
    }
}
