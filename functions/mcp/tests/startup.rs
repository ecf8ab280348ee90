//! The mcp function's binary refuses to start half-configured: exit status 78 (EX_CONFIG) and
//! one line on stderr naming the setting, before the Lambda runtime loop is reached.

use steward_edge::startup::EXIT_CONFIG;
use steward_testkit::startup::assert_refuses;

const BIN: &str = env!("CARGO_BIN_EXE_mcp");

#[test]
fn the_mcp_binary_refuses_to_start_naming_the_missing_setting() {
    assert_refuses(
        BIN,
        &[],
        EXIT_CONFIG,
        "steward mcp refuses to start: STEWARD_TABLE is not set: ",
    );
}

/// No allowed hosts refuses the start too.
#[test]
fn the_mcp_binary_refuses_an_incoherent_setting() {
    assert_refuses(
        BIN,
        &[("STEWARD_TABLE", "steward-table")],
        EXIT_CONFIG,
        "steward mcp refuses to start: STEWARD_MCP_ALLOWED_HOSTS is not set: ",
    );
}
