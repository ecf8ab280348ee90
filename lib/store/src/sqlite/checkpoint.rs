//! Checkpoints by time: a thread with its own connection copies the WAL back into the database
//! file every [`CHECKPOINT_EVERY`] when something was written, instead of the committing
//! connection doing it after every [`AUTO_CHECKPOINT_PAGES`] of WAL.
//!
//! Why: the store's hot pages (the queue's counter and messages, a conversation's rows) are
//! written again by nearly every transaction, so SQLite's default (a checkpoint every 1,000 WAL
//! pages, run by whichever commit crosses the line, `fsync`s included) copied the same few
//! pages back again and again, and a webhook ack or a turn step that happened to cross the line
//! waited for it (issue #16's profile: ~14 µs of every new message's ~100 µs of SQLite work).
//! A checkpoint every half second copies each hot page once per interval, off the request path.
//!
//! Durability is unchanged: a commit is in the WAL when `write` returns, whether or not a
//! checkpoint has copied it yet; the checkpoint only decides when the WAL may be reused.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How often the checkpointer copies the WAL into the database file, when anything was written.
/// Long enough that each hot page is copied once for hundreds of commits at the store's busiest.
///
/// What this does not bound is the WAL file's length. A passive checkpoint never stops a
/// writer, so under writes that do not pause a commit lands while it runs; SQLite restarts the
/// WAL from its start only when a write begins with every frame already copied, so the file
/// keeps growing until the writes pause or it reaches [`AUTO_CHECKPOINT_PAGES`], whose
/// checkpoint runs on the committing connection between its own writes. Issue #16's turn
/// benchmark keeps writing for its whole run and takes the WAL to the backstop's 64 MiB.
/// Checkpoints that wait for the writer (`RESTART`) would keep it at a few MiB, but hold the
/// write lock across two `fsync`s each time (bench/RESULTS.md, "The WAL under writes that do
/// not pause"); not taken.
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// The committing connection's own checkpoint threshold, in WAL pages: the backstop, reached only
/// if the checkpointer cannot keep up (or an operator command writes without one). 64 MiB of
/// 4 KiB pages; SQLite's default is 1,000.
pub(super) const AUTO_CHECKPOINT_PAGES: i64 = 16_384;

/// The size a WAL file is cut back to when it is restarted after a checkpoint: the backstop's
/// length ([`AUTO_CHECKPOINT_PAGES`] frames of a 4 KiB page and a 24-byte header, after the
/// 32-byte file header), so a WAL that reached it is rewritten in place and never grows again.
/// Every write into a fresh region of the file costs the kernel a new zeroed page cache page and
/// a block allocation; with the file cut back to 4 MiB at each restart, a store under writes
/// that never pause grew it anew each time (bench/RESULTS.md, "The WAL kept at its length").
/// The price is that disk space, held until the store closes, once a burst has used it.
pub(super) const WAL_KEEP_BYTES: i64 = 32 + AUTO_CHECKPOINT_PAGES * (4_096 + 24);

/// The handle a table keeps: dropping it (with the table's last clone) ends the thread.
pub(super) struct Checkpointer {
    writes: Arc<AtomicU64>,
    _stop: mpsc::Sender<()>,
}

impl Checkpointer {
    /// Starts the thread on its own connection to `path`. `None` (logged) when that connection
    /// cannot be opened or the thread cannot start: the store then checkpoints by SQLite's
    /// threshold alone, which is slower, never wrong.
    pub(super) fn start(path: &Path) -> Option<Self> {
        let conn = match Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        ) {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "no checkpointer: its connection did not open");
                return None;
            }
        };
        let writes = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = mpsc::channel::<()>();
        let seen = Arc::clone(&writes);
        let label = path.display().to_string();
        let started = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(&conn, &seen, &stopped, &label));
        match started {
            Ok(_) => Some(Self {
                writes,
                _stop: stop,
            }),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "no checkpointer: its thread did not start");
                None
            }
        }
    }

    /// Notes that a transaction committed, so the next round has something to copy.
    pub(super) fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }
}

fn run(conn: &Connection, writes: &AtomicU64, stopped: &mpsc::Receiver<()>, label: &str) {
    let mut copied = 0;
    loop {
        match stopped.recv_timeout(CHECKPOINT_EVERY) {
            Err(RecvTimeoutError::Timeout) => {}
            // The table is gone; the last connection to close checkpoints what is left.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let now = writes.load(Ordering::Relaxed);
        if now == copied {
            continue;
        }
        // PASSIVE: copies what no reader still needs, without waiting for or blocking anyone.
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0)) {
            Ok(_) => copied = now,
            Err(e) => {
                tracing::warn!(file = %label, error = %e, "checkpoint failed; trying again next round")
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use crate::{Item, SqliteTable, Table, WriteOp};

    fn scratch() -> PathBuf {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        std::env::temp_dir().join(format!("steward-checkpoint-{}-{nanos}", std::process::id()))
    }

    fn size(path: &Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    /// Waits (up to 10 s: a loaded machine) for `done`.
    async fn eventually(mut done: impl FnMut() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if done() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        done()
    }

    #[tokio::test]
    async fn the_wal_reaches_the_file_by_time_and_the_thread_ends_with_the_table() {
        let dir = scratch();
        let path = dir.join("store.db");
        let wal = dir.join("store.db-wal");
        let table = SqliteTable::open(&path).unwrap();
        // About 200 pages of WAL: under SQLite's default threshold (1,000) and the backstop, so
        // only the checkpointer copies them into the file before the table closes.
        for i in 0..200 {
            let item = Item::new(
                "P",
                format!("k{i:04}"),
                serde_json::json!({ "pad": "x".repeat(4_000) }),
            );
            table.write(vec![WriteOp::put(item)]).await.unwrap();
        }
        assert!(size(&wal) > 800_000, "the writes are in the WAL");
        assert!(
            eventually(|| size(&path) > 800_000).await,
            "the database file holds the rows within a few checkpoint intervals (it has {} bytes)",
            size(&path)
        );
        let read = table.get("P", "k0199").await.unwrap().unwrap();
        assert_eq!(read.data["pad"].as_str().map(str::len), Some(4_000));
        // The last connection to close removes the WAL: the checkpointer's closes after the
        // table's, once its thread has seen the table go.
        drop(table);
        assert!(
            eventually(|| !wal.exists()).await,
            "the checkpointer's connection closed"
        );
        let reopened = SqliteTable::open(&path).unwrap();
        assert!(reopened.get("P", "k0000").await.unwrap().is_some());
        drop(reopened);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
