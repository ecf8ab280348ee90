//! What the MCP function needs to start (see `steward_edge::startup`): the table and an MCP
//! configuration it can use (the hosts clients reach it by, the rate, the state key).

use steward_edge::config::{ConfigError, ENV_TABLE, Settings};
use steward_edge::startup::{self, Need};

use crate::config::McpConfig;

/// The MCP function's needs, checked in this order at init.
pub const MCP_NEEDS: &[Need] = &[
    Need::Set {
        name: ENV_TABLE,
        fix: "set it to the DynamoDB table's name (the template passes its Table)",
    },
    Need::Rule(mcp_settings_are_usable),
    Need::Valid {
        name: steward_harness::retention::ENV_RETENTION_DAYS,
        check: steward_harness::retention::check_setting,
    },
];

/// The Lambda MCP configuration reads (its error names the setting and what to change).
fn mcp_settings_are_usable(settings: &Settings) -> Result<(), ConfigError> {
    McpConfig::from_lookup(settings.lookup())
        .map(|_| ())
        .map_err(|e| ConfigError::Unusable(e.to_string()))
}

/// Whether the MCP function can start with `settings`; the error names the first setting to
/// fix.
pub fn check_mcp_config(settings: &Settings) -> Result<(), ConfigError> {
    startup::check(settings, MCP_NEEDS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ENV_MCP_ALLOWED_HOSTS, ENV_MCP_CALLS_PER_MINUTE};
    use crate::elicitation::ENV_MCP_STATE_KEY;

    const COMPLETE: [(&str, &str); 3] = [
        (ENV_TABLE, "steward-table"),
        (
            ENV_MCP_ALLOWED_HOSTS,
            "abc.execute-api.eu-west-1.amazonaws.com",
        ),
        (
            ENV_MCP_STATE_KEY,
            "0f3c9a7e5b2d4816a0c3e9f7b5d1a2c40f3c9a7e5b2d4816",
        ),
    ];

    fn refusal(drop: &str, extra: &[(&'static str, &'static str)]) -> String {
        let pairs = COMPLETE
            .iter()
            .copied()
            .filter(|(k, _)| *k != drop)
            .chain(extra.iter().copied());
        check_mcp_config(&Settings::from_pairs(pairs))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_mcp_start_up_check_names_what_is_missing() {
        assert_eq!(refusal("none", &[]), "", "a complete configuration passes");
        let e = refusal(ENV_TABLE, &[]);
        assert!(e.starts_with("STEWARD_TABLE is not set: "), "{e}");
        let e = refusal(ENV_MCP_ALLOWED_HOSTS, &[]);
        assert!(
            e.starts_with("STEWARD_MCP_ALLOWED_HOSTS is not set: list the host names"),
            "{e}"
        );
        let e = refusal("none", &[(ENV_MCP_CALLS_PER_MINUTE, "lots")]);
        assert!(e.starts_with("STEWARD_MCP_CALLS_PER_MINUTE: "), "{e}");
        let e = refusal("none", &[(ENV_MCP_STATE_KEY, "short")]);
        assert!(e.contains(ENV_MCP_STATE_KEY), "{e}");
    }
}
