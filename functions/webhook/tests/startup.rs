//! The webhook function's binary refuses to start half-configured: exit status 78 (EX_CONFIG) and
//! one line on stderr naming the setting, before the Lambda runtime loop is reached.

use steward_edge::startup::EXIT_CONFIG;
use steward_testkit::startup::assert_refuses;

const BIN: &str = env!("CARGO_BIN_EXE_webhook");

#[test]
fn the_webhook_binary_refuses_to_start_naming_the_missing_setting() {
    assert_refuses(
        BIN,
        &[],
        EXIT_CONFIG,
        "steward webhook refuses to start: STEWARD_QUEUE_URL is not set: ",
    );
}

/// Half a WhatsApp webhook (the app secret without the verify token) refuses the start too.
#[test]
fn the_webhook_binary_refuses_an_incoherent_setting() {
    assert_refuses(
        BIN,
        &[
            (
                "STEWARD_QUEUE_URL",
                "https://sqs.eu-west-1.amazonaws.com/1/turns.fifo",
            ),
            ("WHATSAPP_APP_SECRET", "app-secret"),
        ],
        EXIT_CONFIG,
        "steward webhook refuses to start: the WhatsApp webhook is half configured: WHATSAPP_VERIFY_TOKEN is not set while WHATSAPP_APP_SECRET is set;",
    );
}

/// A function reads its region from the variable Lambda sets; without it the start stops
/// before any AWS client is built (no profile file or instance metadata is consulted).
#[test]
fn the_webhook_binary_refuses_to_start_without_a_region() {
    assert_refuses(
        BIN,
        &[("AWS_REGION", "")],
        EXIT_CONFIG,
        "steward webhook refuses to start: AWS_REGION is not set: Lambda sets it for every function;",
    );
}

/// A `RUST_LOG` that is not a filter stops the start rather than logging with another filter.
#[test]
fn the_webhook_binary_refuses_a_log_filter_it_cannot_read() {
    assert_refuses(
        BIN,
        &[("RUST_LOG", "steward=loud")],
        EXIT_CONFIG,
        "steward webhook refuses to start: RUST_LOG is \"steward=loud\", which is not a log filter:",
    );
}

/// A thread count that is not one stops the start before the runtime is built.
#[test]
fn the_webhook_binary_refuses_a_thread_count_it_cannot_use() {
    assert_refuses(
        BIN,
        &[("STEWARD_WORKER_THREADS", "many")],
        EXIT_CONFIG,
        "steward webhook refuses to start: STEWARD_WORKER_THREADS: \"many\" is not a number of threads from 1 to 256; unset it for 1",
    );
}
