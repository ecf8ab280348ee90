//! The visibility heartbeat: while an invocation works on its records, it keeps them invisible
//! [`VISIBILITY_LEASE`] past the last beat. So a record is never redelivered while its turn
//! runs, however long that takes, and a killed invocation's records (out of memory, the
//! function timeout, a crash) come back within one lease rather than after the queue's
//! visibility timeout.

use std::future::Future;
use std::time::Duration;

use steward_store::{MessageVisibility, VisibilityChange};
use tokio::sync::watch;

use super::BatchTiming;

/// How long each beat keeps the batch's records invisible.
///
/// One minute: a killed invocation's records are back within it, and three beats fit in it,
/// so even two failed SQS calls in a row never let a record go while its turn runs.
pub const VISIBILITY_LEASE: Duration = Duration::from_secs(60);

/// Time between beats: a third of the lease (see [`VISIBILITY_LEASE`]).
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(20);

/// Runs `work` while beating for `receipt_handles`: one beat at once (the queue's own
/// visibility timeout is longer than a lease, and the records may have waited for this
/// invocation), then one every `timing.heartbeat_every`. When `work` is done the beat in
/// flight is allowed to finish, so no late beat can undo a change made after this returns.
pub(super) async fn while_leased<T>(
    visibility: &dyn MessageVisibility,
    receipt_handles: &[String],
    timing: &BatchTiming,
    work: impl Future<Output = T>,
) -> T {
    let (done_tx, mut done_rx) = watch::channel(false);
    let beat = async {
        loop {
            extend(visibility, receipt_handles, timing).await;
            tokio::select! {
                biased;
                _ = done_rx.changed() => return,
                () = tokio::time::sleep(timing.heartbeat_every) => {}
            }
        }
    };
    let work = async {
        let out = work.await;
        // The receiver lives as long as the beat loop; a send error only means it ended.
        let _ = done_tx.send(true);
        out
    };
    let (out, ()) = tokio::join!(work, beat);
    out
}

/// One beat. A failed beat is logged and changes nothing else: the next beat tries again,
/// and the lease still holds for two more intervals.
async fn extend(
    visibility: &dyn MessageVisibility,
    receipt_handles: &[String],
    timing: &BatchTiming,
) {
    let changes: Vec<VisibilityChange> = receipt_handles
        .iter()
        .map(|handle| VisibilityChange {
            receipt_handle: handle.clone(),
            timeout: timing.lease,
        })
        .collect();
    match tokio::time::timeout(
        timing.visibility_call_timeout,
        visibility.change_visibility(&changes),
    )
    .await
    {
        Ok(Ok(())) => tracing::debug!(records = changes.len(), "visibility lease extended"),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "visibility heartbeat failed; retrying at the next beat")
        }
        Err(_) => tracing::warn!("visibility heartbeat timed out; retrying at the next beat"),
    }
}
