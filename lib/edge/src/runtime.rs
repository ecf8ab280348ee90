//! The tokio runtime every Steward process runs on: `steward serve`, the operator commands and
//! the four Lambda functions. How many threads run its async work is
//! [`ENV_WORKER_THREADS`], one unless set.
//!
//! Why one. A turn, a webhook ack and an MCP call are almost all waiting (the model, the
//! channel's API, the network); the CPU they use comes in short slices. With a thread per core,
//! those slices met on the store's connection lock, on the allocator's arenas and on task
//! wake-ups from one thread to the other, and each meeting cost futex calls and task switches.
//! Issue #16's turn benchmark, run with one runtime thread against two (the same binary,
//! interleaved): about a fifth less CPU per turn (RESULTS.md, "One runtime thread"). One thread
//! serves hundreds of turns a second at a few milliseconds of CPU each, far above what a
//! deployment's people send; the work that takes long on the CPU (building a timetable, the
//! store's sweep) runs on tokio's blocking pool, so it does not hold the thread. A Lambda
//! function handles one event at a time, often on less than one vCPU, where a second thread
//! only adds hand-offs. Set more threads where one core's worth is not enough.

use tokio::runtime::Runtime;

use crate::config::ConfigError;

/// The number of threads that run async work.
pub const ENV_WORKER_THREADS: &str = "STEWARD_WORKER_THREADS";

/// Threads when [`ENV_WORKER_THREADS`] is not set (see the module's note on why one).
pub const WORKER_THREADS_DEFAULT: usize = 1;

/// The most threads [`ENV_WORKER_THREADS`] may ask for: more than any machine Steward runs on
/// has cores; a larger number is a typo, not a setting.
pub const WORKER_THREADS_MAX: usize = 256;

/// The threads `value` (the setting's value, if set) asks for.
pub fn worker_threads(value: Option<&str>) -> Result<usize, ConfigError> {
    let Some(value) = value else {
        return Ok(WORKER_THREADS_DEFAULT);
    };
    let invalid = || ConfigError::Invalid {
        name: ENV_WORKER_THREADS,
        problem: format!(
            "\"{value}\" is not a number of threads from 1 to {WORKER_THREADS_MAX}; unset it for {WORKER_THREADS_DEFAULT}"
        ),
    };
    match value.trim().parse::<usize>() {
        Ok(n) if (1..=WORKER_THREADS_MAX).contains(&n) => Ok(n),
        _ => Err(invalid()),
    }
}

/// The runtime, with the threads the environment asks for (all drivers on).
pub fn build() -> Result<Runtime, ConfigError> {
    let value = std::env::var(ENV_WORKER_THREADS).ok();
    let threads = worker_threads(value.as_deref())?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|e| ConfigError::Client {
            what: "the tokio runtime",
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_is_one_thread_and_a_count_in_range_is_taken() {
        assert_eq!(worker_threads(None).ok(), Some(1));
        assert_eq!(worker_threads(Some("4")).ok(), Some(4));
        assert_eq!(worker_threads(Some(" 2 ")).ok(), Some(2));
        assert_eq!(
            worker_threads(Some(&WORKER_THREADS_MAX.to_string())).ok(),
            Some(WORKER_THREADS_MAX)
        );
    }

    #[test]
    fn anything_else_is_refused_naming_the_setting_and_the_range() {
        for bad in [
            "0",
            "-1",
            "two",
            "",
            "1.5",
            "257",
            "99999999999999999999999",
        ] {
            let message = match worker_threads(Some(bad)) {
                Ok(n) => panic!("{bad:?} was taken as {n}"),
                Err(e) => e.to_string(),
            };
            assert_eq!(
                message,
                format!(
                    "STEWARD_WORKER_THREADS: \"{bad}\" is not a number of threads from 1 to 256; unset it for 1"
                )
            );
        }
    }

    #[test]
    fn the_runtime_runs_async_work_and_the_blocking_pool() {
        let runtime = build().unwrap_or_else(|e| panic!("{e}"));
        let sum = runtime.block_on(async {
            let blocking = tokio::task::spawn_blocking(|| 40).await.unwrap_or(0);
            let spawned = tokio::spawn(async { 2 }).await.unwrap_or(0);
            blocking + spawned
        });
        assert_eq!(sum, 42);
    }
}
