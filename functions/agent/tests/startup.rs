//! The agent function's binary refuses to start half-configured: exit status 78 (EX_CONFIG) and
//! one line on stderr naming the setting, before the Lambda runtime loop is reached.

use steward_edge::startup::EXIT_CONFIG;
use steward_testkit::startup::assert_refuses;

const BIN: &str = env!("CARGO_BIN_EXE_agent");

#[test]
fn the_agent_binary_refuses_to_start_naming_the_missing_setting() {
    assert_refuses(
        BIN,
        &[],
        EXIT_CONFIG,
        "steward agent refuses to start: STEWARD_TABLE is not set: ",
    );
}

/// A Claude API model name with the Bedrock provider refuses the start too.
#[test]
fn the_agent_binary_refuses_an_incoherent_setting() {
    assert_refuses(
        BIN,
        &[
            ("STEWARD_TABLE", "steward-table"),
            (
                "STEWARD_QUEUE_URL",
                "https://sqs.eu-west-1.amazonaws.com/1/turns.fifo",
            ),
            ("STEWARD_BLOB_BUCKET", "steward-media"),
            ("STEWARD_MODEL_PROVIDER", "bedrock"),
            ("STEWARD_MODEL", "claude-sonnet-4-5"),
        ],
        EXIT_CONFIG,
        "steward agent refuses to start: STEWARD_MODEL: \"claude-sonnet-4-5\" is not a Bedrock model id;",
    );
}

/// A function reads its region from the variable Lambda sets; without it the start stops
/// before any AWS client is built (no profile file or instance metadata is consulted).
#[test]
fn the_agent_binary_refuses_to_start_without_a_region() {
    assert_refuses(
        BIN,
        &[("AWS_REGION", "")],
        EXIT_CONFIG,
        "steward agent refuses to start: AWS_REGION is not set: Lambda sets it for every function;",
    );
}

/// A thread count that is not one stops the start before the runtime is built.
#[test]
fn the_agent_binary_refuses_a_thread_count_it_cannot_use() {
    assert_refuses(
        BIN,
        &[("STEWARD_WORKER_THREADS", "0")],
        EXIT_CONFIG,
        "steward agent refuses to start: STEWARD_WORKER_THREADS: \"0\" is not a number of threads from 1 to 256; unset it for 1",
    );
}
