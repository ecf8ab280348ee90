//! Group commit of the in-process queue's deletes: a message is deleted once its handler
//! succeeded, and deletes that arrive while another is being written wait for the writer's
//! lock; whichever takes it next deletes all of them in one transaction (at most
//! [`TRANSACTION_OPS_MAX`]). Each worker still waits for its own delete to commit before it
//! takes its conversation's next message, so the promise is the one a delete each gave:
//! a message is gone only after its handler succeeded, and a crash before the commit hands it
//! to the handler again. Many conversations finishing together pay for one commit.

use std::sync::Mutex;

use tokio::sync::{Mutex as AsyncMutex, oneshot};

use crate::{StoreError, TRANSACTION_OPS_MAX, Table, WriteOp};

/// A delete waiting to be written: its sort key and the channel its worker awaits.
type Waiting = (String, oneshot::Sender<Result<(), StoreError>>);

/// The deletes waiting to be written, and the lock their writer holds.
#[derive(Default)]
pub(super) struct Removals {
    /// The sort keys (in partition `pk` of [`Removals::remove`]) to delete, oldest first, with
    /// the channel each worker awaits its outcome on.
    waiting: Mutex<Vec<Waiting>>,
    writer: AsyncMutex<()>,
}

impl Removals {
    /// Deletes item (`pk`, `sk`), in one transaction with whatever other deletes are waiting;
    /// returns once that transaction committed or failed. Every caller passes the same `pk`.
    pub(super) async fn remove(
        &self,
        table: &dyn Table,
        pk: &str,
        sk: String,
    ) -> Result<(), StoreError> {
        let (done, mut outcome) = oneshot::channel();
        self.lock_waiting().push((sk, done));
        let _writer = self.writer.lock().await;
        // The writer before may have deleted it with its own batch; if not, delete what is
        // waiting, oldest first, until it is.
        loop {
            match outcome.try_recv() {
                Ok(result) => return result,
                Err(oneshot::error::TryRecvError::Closed) => return Err(interrupted()),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let batch: Vec<_> = {
                let mut waiting = self.lock_waiting();
                let n = waiting.len().min(TRANSACTION_OPS_MAX);
                waiting.drain(..n).collect()
            };
            if batch.is_empty() {
                // Neither answered nor waiting: only a writer dropped mid-write leaves that.
                return Err(interrupted());
            }
            let ops = batch
                .iter()
                .map(|(sk, _)| WriteOp::delete(pk, sk.clone()))
                .collect();
            let result = table.write(ops).await;
            for (_, done) in batch {
                // A worker that went away (shutdown) no longer waits; its delete was written.
                let _ = done.send(result.clone());
            }
        }
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        // Nothing is left half-done under this lock (a push or a drain), so a poisoned one is
        // safe to use.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The outcome of a delete whose writer was cancelled mid-write (a shutdown's abort): unknown,
/// so reported as failed; the message is handed to the handler again if it is still there.
fn interrupted() -> StoreError {
    StoreError::Backend("the delete's writer stopped before it answered".into())
}

// Needs `crate::testing`, which the crate's own dev-dependency turns on for every test build.
#[cfg(all(test, feature = "testing"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use tokio::sync::Semaphore;

    use super::Removals;
    use crate::{Item, Page, Query, SqliteTable, StoreError, Table, WriteOp};

    /// Holds the first write until the test opens the gate; counts the deletes in each
    /// committed write; fails every write once `failing` is set.
    struct GatedTable {
        inner: SqliteTable,
        gate: Semaphore,
        held: AtomicBool,
        failing: AtomicBool,
        writes: Mutex<Vec<usize>>,
    }

    impl std::fmt::Debug for GatedTable {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("GatedTable").finish_non_exhaustive()
        }
    }

    #[async_trait]
    impl Table for GatedTable {
        async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
            self.inner.get(pk, sk).await
        }
        async fn query(&self, query: &Query) -> Result<Page, StoreError> {
            self.inner.query(query).await
        }
        async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
            if !self.held.swap(true, Ordering::SeqCst) {
                self.gate.acquire().await.unwrap().forget();
            }
            if self.failing.load(Ordering::SeqCst) {
                return Err(StoreError::Throttled("the test's table refuses".into()));
            }
            let deletes = ops.len();
            self.inner.write(ops).await?;
            self.writes.lock().unwrap().push(deletes);
            Ok(())
        }
    }

    async fn table_with(keys: usize) -> Arc<GatedTable> {
        let inner = SqliteTable::in_memory().unwrap();
        for i in 0..keys {
            let item = Item::new("Q", format!("MSG#{i:03}"), serde_json::json!({}));
            inner.write(vec![WriteOp::put(item)]).await.unwrap();
        }
        Arc::new(GatedTable {
            inner,
            gate: Semaphore::new(0),
            held: AtomicBool::new(false),
            failing: AtomicBool::new(false),
            writes: Mutex::new(Vec::new()),
        })
    }

    /// Removes key 0 with its write held at the gate while keys 1..`keys` are removed behind
    /// it; returns every caller's outcome.
    async fn remove_behind_a_held_write(
        table: &Arc<GatedTable>,
        removals: &Arc<Removals>,
        keys: usize,
    ) -> Vec<Result<(), StoreError>> {
        let remove = |i: usize| {
            let (table, removals) = (Arc::clone(table), Arc::clone(removals));
            async move {
                removals
                    .remove(table.as_ref(), "Q", format!("MSG#{i:03}"))
                    .await
            }
        };
        crate::testing::behind_a_held_write(
            remove(0),
            (1..keys).map(remove).collect(),
            || table.held.load(Ordering::SeqCst),
            || table.gate.add_permits(1),
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deletes_waiting_on_a_write_share_the_next_transactions() {
        let table = table_with(150).await;
        let removals = Arc::new(Removals::default());
        for outcome in remove_behind_a_held_write(&table, &removals, 150).await {
            outcome.expect("every delete committed");
        }
        let writes = table.writes.lock().unwrap().clone();
        assert_eq!(
            writes.iter().sum::<usize>(),
            150,
            "each key once: {writes:?}"
        );
        assert_eq!(writes[0], 1, "the held write had only its own delete");
        assert!(
            writes.len() <= 4,
            "149 waiting deletes go in transactions of up to 100, not one each: {writes:?}"
        );
        assert!(writes.iter().all(|&n| n <= 100), "{writes:?}");
        let left = table
            .inner
            .query_all(&Query::prefix("Q", "MSG#").limit(200), usize::MAX)
            .await
            .unwrap();
        assert!(left.is_empty(), "{} items left", left.len());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_transaction_fails_every_delete_in_it_and_deletes_none() {
        let table = table_with(10).await;
        table.failing.store(true, Ordering::SeqCst);
        let removals = Arc::new(Removals::default());
        for outcome in remove_behind_a_held_write(&table, &removals, 10).await {
            assert!(
                matches!(outcome, Err(StoreError::Throttled(_))),
                "each caller hears the failure: {outcome:?}"
            );
        }
        let left = table
            .inner
            .query_all(&Query::prefix("Q", "MSG#").limit(200), usize::MAX)
            .await
            .unwrap();
        assert_eq!(left.len(), 10, "the messages stay, to be handled again");
        // The next delete is written on its own, by whoever comes.
        table.failing.store(false, Ordering::SeqCst);
        removals
            .remove(table.as_ref(), "Q", "MSG#004".into())
            .await
            .unwrap();
        assert!(table.inner.get("Q", "MSG#004").await.unwrap().is_none());
    }
}
