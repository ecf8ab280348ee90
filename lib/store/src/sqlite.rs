//! The embedded adapter: one SQLite file (WAL), used by `steward serve`, the operator commands
//! and most tests. Several processes may open the same file (the operator commands run while
//! `serve` does): writes take SQLite's write lock up front and wait for it up to a timeout.

mod checkpoint;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use self::checkpoint::{AUTO_CHECKPOINT_PAGES, Checkpointer, WAL_KEEP_BYTES};
use crate::item::{Canonical, Keyed};
use crate::query::page_of;
use crate::validate::{validate_key, validate_keys, validate_query, validate_transaction};
use crate::write::holds;
use crate::{
    Clock, Cursor, Item, Order, Page, Query, RawItem, SortKey, StoreError, SystemClock, Table,
    WriteOp,
};

/// How long a writer waits for another process's write lock before reporting `Throttled`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// SQLite's page cache, in KiB (the pragma's negative form). The default 2 MiB is smaller than
/// a busy `steward serve`'s working set (conversations, queue, events), so pages were read
/// back from the file again and again (about a hundred `pread`s per turn in issue #16's
/// benchmark). 8 MiB holds it; it is an upper bound, filled only as pages are used.
const PAGE_CACHE_KIB: i64 = 8 * 1024;

/// Prepared statements kept per connection: the fixed ones (get, the conditional check, put,
/// delete, begin, commit) plus every shape of query (each sort condition, order and cursor is
/// its own SQL text), with room to spare. SQLite's parser was a tenth of a turn's CPU while
/// rusqlite's default of 16 let query shapes push each other out.
const STATEMENT_CACHE: usize = 64;

/// One live item by key (`get`, and each key of `get_many`).
const GET_SQL: &str = "SELECT pk, sk, version, ttl, data FROM items
                       WHERE pk = ?1 AND sk = ?2 AND (ttl IS NULL OR ttl > ?3)";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    pk      TEXT    NOT NULL,
    sk      TEXT    NOT NULL,
    version INTEGER NOT NULL,
    ttl     INTEGER,
    data    TEXT    NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
";

/// Expired items deleted per statement by [`SqliteTable::sweep_expired`]: small enough that
/// other writers wait milliseconds, large enough that a year of expiries goes in few rounds.
pub const SWEEP_BATCH_ROWS: usize = 1_000;

/// A [`Table`] in one SQLite file. Cheap to clone; clones share one connection.
///
/// Reads and writes run on the calling task's thread under the connection's lock, with cached
/// statements: each is a few microseconds of SQLite work on a local file, less than a hand-off
/// to another thread costs (a `spawn_blocking` per operation was a third of a turn's CPU, most
/// of it futex wake-ups). The one long operation, [`SqliteTable::sweep_expired`], still runs on
/// tokio's blocking pool. A write that meets another process's write lock (an operator command
/// running beside `steward serve`) waits for it on this thread, up to [`BUSY_TIMEOUT`].
#[derive(Clone)]
pub struct SqliteTable {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Mutex<Connection>,
    clock: Arc<dyn Clock>,
    label: String,
    /// A file store's checkpoint thread (`sqlite/checkpoint.rs`); none in memory.
    checkpointer: Option<Checkpointer>,
}

impl std::fmt::Debug for SqliteTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTable")
            .field("file", &self.inner.label)
            .finish()
    }
}

impl SqliteTable {
    /// Opens (creating if needed, with its folder) the store at `path`, on the system clock.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with_clock(path, Arc::new(SystemClock))
    }

    /// Opens the store at `path`, deciding expiry by `clock`.
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Backend(format!("cannot create folder {}: {e}", dir.display()))
            })?;
        }
        let conn = Connection::open(path).map_err(backend)?;
        let mut table = Self::init(conn, clock, path.display().to_string())?;
        if let Some(inner) = Arc::get_mut(&mut table.inner) {
            inner.checkpointer = Checkpointer::start(path);
        }
        Ok(table)
    }

    /// A private in-memory store (tests, `steward smoke`).
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::in_memory_with_clock(Arc::new(SystemClock))
    }

    /// A private in-memory store deciding expiry by `clock`.
    pub fn in_memory_with_clock(clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(backend)?;
        Self::init(conn, clock, ":memory:".into())
    }

    fn init(conn: Connection, clock: Arc<dyn Clock>, label: String) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        // WAL lets readers in other processes proceed during a write; NORMAL sync is durable
        // across a process crash (the WAL is written before commit returns).
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(backend)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)?;
        // Checkpoints come from the checkpointer thread every half second; SQLite's own, run by
        // the commit that crosses its threshold, is only the backstop (`sqlite/checkpoint.rs`).
        conn.pragma_update(None, "wal_autocheckpoint", AUTO_CHECKPOINT_PAGES)
            .map_err(backend)?;
        conn.pragma_update(None, "journal_size_limit", WAL_KEEP_BYTES)
            .map_err(backend)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .map_err(backend)?;
        // The query planner's stability guarantee: a cached statement keeps its plan when new
        // values are bound. Without it, this bundled SQLite (built with STAT4) re-prepares a
        // range query on every bind, which cost more than running it; the table has one
        // primary key, so there is no better plan to find.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(backend)?;
        Ok(Self {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                clock,
                label,
                checkpointer: None,
            }),
        })
    }

    /// Deletes every expired item (a `ttl` at or before now) and returns how many went: what
    /// DynamoDB's TTL does by itself. Reads already treat expired items as absent; this keeps
    /// the file from growing with them. Deletes in batches of [`SWEEP_BATCH_ROWS`] so a large
    /// sweep never holds the write lock for long.
    pub async fn sweep_expired(&self) -> Result<usize, StoreError> {
        let mut total = 0;
        loop {
            let deleted = self
                .with_conn(|conn, now| {
                    conn.execute(
                        "DELETE FROM items WHERE (pk, sk) IN (SELECT pk, sk FROM items
                         WHERE ttl IS NOT NULL AND ttl <= ?1 LIMIT ?2)",
                        rusqlite::params![now, SWEEP_BATCH_ROWS as i64],
                    )
                    .map_err(backend)
                })
                .await?;
            total += deleted;
            if deleted > 0 {
                self.inner.wrote();
            }
            if deleted < SWEEP_BATCH_ROWS {
                return Ok(total);
            }
        }
    }

    /// Runs `f` on the blocking pool (for work that may take long: the sweep).
    async fn with_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, i64) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || inner.run(f))
            .await
            .map_err(|e| StoreError::Backend(format!("sqlite task failed: {e}")))?
    }
}

impl Inner {
    /// Runs `f` here, under the connection's lock, with the clock's now in seconds.
    fn run<T>(
        &self,
        f: impl FnOnce(&mut Connection, i64) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let now = self.clock.now_secs();
        // A panic while holding the lock cannot leave SQLite inconsistent (an open
        // transaction rolls back on drop), so a poisoned lock is safe to reuse.
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn, now)
    }

    /// Tells the checkpointer that a transaction committed.
    fn wrote(&self) {
        if let Some(c) = &self.checkpointer {
            c.wrote();
        }
    }
}

impl SqliteTable {
    /// One page of the live items `query` matches, each read from its row by `read` (an
    /// [`Item`] or a [`RawItem`]).
    fn query_page<I: Keyed>(
        &self,
        query: &Query,
        read: impl Fn(&rusqlite::Row<'_>) -> Result<I, StoreError>,
    ) -> Result<Page<I>, StoreError> {
        validate_query(query)?;
        self.inner.run(|conn, now| {
            let (mut sql, mut args) = matching("SELECT pk, sk, version, ttl, data", query, now);
            sql.push_str(match query.order {
                Order::Ascending => " ORDER BY sk ASC",
                Order::Descending => " ORDER BY sk DESC",
            });
            let limit = query.limit.max(1);
            sql.push_str(" LIMIT ?");
            // One extra row tells us, exactly, whether another page exists.
            args.push(
                i64::try_from(limit.saturating_add(1))
                    .unwrap_or(i64::MAX)
                    .into(),
            );

            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            let mut rows = stmt.query(params_from_iter(args.iter())).map_err(backend)?;
            let mut items = Vec::with_capacity(limit.min(1024));
            while let Some(row) = rows.next().map_err(backend)? {
                items.push(read(row)?);
            }
            Ok(page_of(items, limit))
        })
    }
}

#[async_trait]
impl Table for SqliteTable {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        validate_key(pk, sk)?;
        self.inner.run(|conn, now| {
            let row = conn
                .prepare_cached(GET_SQL)
                .map_err(backend)?
                .query_row(rusqlite::params![pk, sk, now], read_row)
                .optional()
                .map_err(backend)?;
            row.map(decode).transpose()
        })
    }

    async fn get_many(&self, keys: &[(String, String)]) -> Result<Vec<Option<Item>>, StoreError> {
        validate_keys(keys)?;
        self.inner.run(|conn, now| {
            // One read transaction for all of them: one snapshot, and the WAL's read lock
            // taken and released once instead of once per key.
            let tx = Tx::read(conn)?;
            let mut stmt = tx.prepare_cached(GET_SQL).map_err(backend)?;
            let rows = keys
                .iter()
                .map(|(pk, sk)| {
                    stmt.query_row(rusqlite::params![pk, sk, now], read_row)
                        .optional()
                        .map_err(backend)?
                        .map(decode)
                        .transpose()
                })
                .collect::<Result<Vec<_>, _>>()?;
            drop(stmt);
            tx.commit()?;
            Ok(rows)
        })
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.query_page(query, |r| decode(read_row(r).map_err(backend)?))
    }

    async fn query_raw(&self, query: &Query) -> Result<Page<RawItem>, StoreError> {
        self.query_page(query, read_raw_row)
    }

    async fn count(&self, query: &Query, max_items: usize) -> Result<usize, StoreError> {
        validate_query(query)?;
        self.inner.run(|conn, now| {
            // The rows are counted where they lie: nothing is decoded.
            let (inner, mut args) = matching("SELECT 1", query, now);
            let sql = format!("SELECT COUNT(*) FROM ({inner} LIMIT ?)");
            args.push(i64::try_from(max_items).unwrap_or(i64::MAX).into());
            let n: i64 = conn
                .prepare_cached(&sql)
                .map_err(backend)?
                .query_row(params_from_iter(args.iter()), |r| r.get(0))
                .map_err(backend)?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }

    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        validate_transaction(&ops)?;
        self.inner.run(|conn, now| {
            let tx = Tx::immediate(conn)?;
            for (op_index, op) in ops.iter().enumerate() {
                if !condition_holds(&tx, op, now)? {
                    // Dropping `tx` rolls back; nothing was written yet anyway.
                    return Err(StoreError::ConditionFailed { op_index });
                }
            }
            for op in &ops {
                apply(&tx, op)?;
            }
            tx.commit()
        })?;
        self.inner.wrote();
        Ok(())
    }

    async fn write_in_order(&self, ops: Vec<WriteOp>) -> Result<usize, StoreError> {
        validate_transaction(&ops)?;
        let applied = self.inner.run(|conn, now| {
            let tx = Tx::immediate(conn)?;
            let mut applied = 0;
            for op in &ops {
                if !condition_holds(&tx, op, now)? {
                    break;
                }
                apply(&tx, op)?;
                applied += 1;
            }
            tx.commit()?;
            Ok(applied)
        })?;
        if applied > 0 {
            self.inner.wrote();
        }
        Ok(applied)
    }
}

/// Whether `op`'s condition (if it has one) holds for the live item under its key, as `tx`
/// sees it.
fn condition_holds(tx: &Tx<'_>, op: &WriteOp, now: i64) -> Result<bool, StoreError> {
    let Some(condition) = op.condition() else {
        return Ok(true);
    };
    let (pk, sk) = op.key();
    let current: Option<(i64, Option<i64>)> = tx
        .prepare_cached("SELECT version, ttl FROM items WHERE pk = ?1 AND sk = ?2")
        .map_err(backend)?
        .query_row(rusqlite::params![pk, sk], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(backend)?;
    let live = current
        .filter(|(_, ttl)| ttl.is_none_or(|t| t > now))
        .map(|(v, _)| u64::try_from(v).unwrap_or(0));
    Ok(holds(condition, live))
}

/// Applies `op` in `tx` (its condition already checked).
fn apply(tx: &Tx<'_>, op: &WriteOp) -> Result<(), StoreError> {
    match op {
        WriteOp::Put { item, .. } => {
            let data = serde_json::to_string(&Canonical(&item.data))
                .map_err(|e| StoreError::Backend(format!("cannot encode data: {e}")))?;
            let version = i64::try_from(item.version).map_err(|_| {
                StoreError::InvalidTransaction(format!("version {} is too large", item.version))
            })?;
            tx.prepare_cached(
                "INSERT OR REPLACE INTO items (pk, sk, version, ttl, data)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(backend)?
            .execute(rusqlite::params![item.pk, item.sk, version, item.ttl, data])
            .map_err(backend)?;
        }
        WriteOp::Delete { pk, sk, .. } => {
            tx.prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")
                .map_err(backend)?
                .execute(rusqlite::params![pk, sk])
                .map_err(backend)?;
        }
        WriteOp::Check { .. } => {}
    }
    Ok(())
}

/// A transaction with its `BEGIN` and `COMMIT` from the statement cache (rusqlite's own
/// transaction parses both every time): [`Tx::immediate`] for a write, which takes the write
/// lock up front, [`Tx::read`] for several reads from one snapshot. Dropped without
/// [`Tx::commit`] (an error or a panic), it rolls back.
struct Tx<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Tx<'c> {
    fn immediate(conn: &'c Connection) -> Result<Self, StoreError> {
        Self::begin(conn, "BEGIN IMMEDIATE")
    }

    fn read(conn: &'c Connection) -> Result<Self, StoreError> {
        Self::begin(conn, "BEGIN")
    }

    fn begin(conn: &'c Connection, begin: &str) -> Result<Self, StoreError> {
        conn.prepare_cached(begin)
            .and_then(|mut s| s.execute([]))
            .map_err(backend)?;
        Ok(Self { conn, open: true })
    }

    fn commit(mut self) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]))
            .map_err(backend)?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        // A failed COMMIT may leave the transaction open (SQLITE_BUSY); `is_autocommit` says
        // whether one is still open.
        if self.open && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// A row as read: the data is parsed straight from SQLite's text (no copy of it first); a
/// parse failure is kept so [`decode`] can name the item.
type RawRow = (
    String,
    String,
    i64,
    Option<i64>,
    Result<serde_json::Value, serde_json::Error>,
);

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    let data = serde_json::from_str(r.get_ref(4)?.as_str()?);
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, data))
}

fn decode((pk, sk, version, ttl, data): RawRow) -> Result<Item, StoreError> {
    let data =
        data.map_err(|e| StoreError::Backend(format!("corrupt data in {pk} / {sk}: {e}")))?;
    Ok(Item {
        version: row_version(version, &pk, &sk)?,
        pk,
        sk,
        ttl,
        data,
    })
}

/// A row's stored version, which a row written by this adapter never has below 1.
fn row_version(version: i64, pk: &str, sk: &str) -> Result<u64, StoreError> {
    u64::try_from(version)
        .map_err(|_| StoreError::Backend(format!("corrupt version in {pk} / {sk}")))
}

/// A row with its data left as the text SQLite holds ([`Table::query_raw`]).
fn read_raw_row(r: &rusqlite::Row<'_>) -> Result<RawItem, StoreError> {
    let (pk, sk, version, ttl, data): (String, String, i64, Option<i64>, String) = (
        r.get(0).map_err(backend)?,
        r.get(1).map_err(backend)?,
        r.get(2).map_err(backend)?,
        r.get(3).map_err(backend)?,
        r.get(4).map_err(backend)?,
    );
    Ok(RawItem {
        version: row_version(version, &pk, &sk)?,
        pk,
        sk,
        ttl,
        data,
    })
}

/// `select` over the live items `query` matches (its sort-key condition and cursor; not its
/// order or page size), with the statement's arguments.
///
/// The condition and the cursor are merged into at most one lower and one upper bound on `sk`
/// before they become SQL. SQLite's planner seeks the primary key on one lower bound and
/// checks any other row by row: given `sk >= prefix AND sk > cursor`, it seeks to the prefix
/// and steps over every row before the cursor, so a page after the first (and a read of the
/// rows after the ones already held) cost as much as reading everything before it.
fn matching(select: &str, query: &Query, now: i64) -> (String, Vec<rusqlite::types::Value>) {
    let mut sql = format!("{select} FROM items WHERE pk = ? AND (ttl IS NULL OR ttl > ?)");
    let mut args: Vec<rusqlite::types::Value> = vec![query.pk.clone().into(), now.into()];
    let (mut lower, mut upper): (Option<Bound<'_>>, Option<Bound<'_>>) = match &query.sort {
        SortKey::All => (None, None),
        SortKey::Prefix(p) => (
            Some(Bound::inclusive(p)),
            prefix_successor(p).map(|u| Bound::exclusive(u.into())),
        ),
        SortKey::Between(a, b) => (Some(Bound::inclusive(a)), Some(Bound::inclusive(b))),
        SortKey::After(a) => (Some(Bound::exclusive(a.into())), None),
        SortKey::From(a) => (Some(Bound::inclusive(a)), None),
        SortKey::Before(b) => (None, Some(Bound::exclusive(b.into()))),
    };
    if let Some(Cursor(c)) = &query.after {
        let past = Bound::exclusive(c.into());
        match query.order {
            Order::Ascending => lower = Some(Bound::tighter_lower(lower, past)),
            Order::Descending => upper = Some(Bound::tighter_upper(upper, past)),
        }
    }
    for (bound, [closed, open]) in [
        (lower, [" AND sk >= ?", " AND sk > ?"]),
        (upper, [" AND sk <= ?", " AND sk < ?"]),
    ] {
        if let Some(b) = bound {
            sql.push_str(if b.inclusive { closed } else { open });
            args.push(b.key.into_owned().into());
        }
    }
    (sql, args)
}

/// One end of the range of sort keys a query reads. Keys compare as SQLite compares TEXT
/// (`BINARY`: by UTF-8 bytes), which is how `str` compares.
struct Bound<'a> {
    key: std::borrow::Cow<'a, str>,
    inclusive: bool,
}

impl<'a> Bound<'a> {
    fn inclusive(key: &'a str) -> Self {
        Self {
            key: key.into(),
            inclusive: true,
        }
    }

    fn exclusive(key: std::borrow::Cow<'a, str>) -> Self {
        Self {
            key,
            inclusive: false,
        }
    }

    /// The lower bound that admits only keys both admit.
    fn tighter_lower(a: Option<Self>, b: Self) -> Self {
        match a {
            Some(a) if a.key > b.key || (a.key == b.key && !a.inclusive) => a,
            _ => b,
        }
    }

    /// The upper bound that admits only keys both admit.
    fn tighter_upper(a: Option<Self>, b: Self) -> Self {
        match a {
            Some(a) if a.key < b.key || (a.key == b.key && !a.inclusive) => a,
            _ => b,
        }
    }
}

/// The smallest string greater than every string starting with `prefix` (None when no such
/// string exists). SQLite compares TEXT by UTF-8 bytes, which orders like code points.
fn prefix_successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            char::MAX => None,
            c => char::from_u32(u32::from(c) + 1),
        };
        if let Some(n) = next {
            chars.push(n);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

fn backend(e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Throttled(format!("sqlite is busy: {e}"))
        }
        _ => StoreError::Backend(format!("sqlite: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{SCHEMA, SWEEP_BATCH_ROWS, SqliteTable, matching, prefix_successor};
    use crate::{Cursor, Item, ManualClock, Order, Query, SortKey, Table, WriteOp};

    #[tokio::test]
    #[allow(clippy::unwrap_used)]
    async fn the_sweep_deletes_expired_items_only() {
        let clock = ManualClock::at_millis(1_000_000);
        let table = SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap();
        let n = SWEEP_BATCH_ROWS + 5; // more than one batch
        let mut ops = Vec::new();
        for i in 0..n {
            ops.push(WriteOp::put(
                Item::new("P", format!("old#{i:05}"), serde_json::json!({})).with_ttl(1_500),
            ));
            if ops.len() == 100 {
                table.write(std::mem::take(&mut ops)).await.unwrap();
            }
        }
        table.write(ops).await.unwrap();
        table
            .write(vec![
                WriteOp::put(Item::new("P", "later", serde_json::json!({})).with_ttl(5_000)),
                WriteOp::put(Item::new("P", "forever", serde_json::json!({}))),
            ])
            .await
            .unwrap();
        assert_eq!(
            table.sweep_expired().await.unwrap(),
            0,
            "nothing expired yet"
        );
        clock.set_millis(1_500_000);
        assert_eq!(table.sweep_expired().await.unwrap(), n);
        let left: i64 = table
            .with_conn(|conn, _| {
                conn.query_row("SELECT count(*) FROM items", [], |r| r.get(0))
                    .map_err(super::backend)
            })
            .await
            .unwrap();
        assert_eq!(left, 2, "the unexpired and the ttl-less items stay");
        assert!(table.get("P", "later").await.unwrap().is_some());
        assert_eq!(table.sweep_expired().await.unwrap(), 0);
    }

    #[tokio::test]
    #[allow(clippy::unwrap_used)]
    async fn a_row_whose_data_does_not_parse_is_named_by_every_read() {
        let table = SqliteTable::in_memory_with_clock(Arc::new(ManualClock::at_millis(0))).unwrap();
        table
            .with_conn(|conn, _| {
                conn.execute(
                    "INSERT INTO items (pk, sk, version, ttl, data) VALUES ('P', 'bad', 1, NULL, '{not json')",
                    [],
                )
                .map_err(super::backend)
            })
            .await
            .unwrap();
        let got = table.get("P", "bad").await.unwrap_err().to_string();
        assert!(got.contains("corrupt data in P / bad"), "{got}");
        let listed = table
            .query(&crate::Query::partition("P"))
            .await
            .unwrap_err()
            .to_string();
        assert!(listed.contains("corrupt data in P / bad"), "{listed}");
    }

    #[test]
    fn successor_bounds_every_extension_of_the_prefix() {
        assert_eq!(prefix_successor("EVENT#").as_deref(), Some("EVENT$"));
        assert_eq!(prefix_successor("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_successor("\u{10FFFF}"), None);
        for ext in ["", "x", "\u{10FFFF}\u{10FFFF}", "zzz"] {
            let s = format!("EVENT#{ext}");
            assert!(s.as_str() < "EVENT$");
        }
    }

    /// A connection holding `keys` in partition `P`, and the sort keys (in order) and VM steps
    /// of `query` run through [`matching`] on it.
    fn run_matching(keys: &[String], query: &Query) -> (Vec<String>, i32) {
        let conn = rusqlite::Connection::open_in_memory().expect("an in-memory database opens");
        conn.execute_batch(SCHEMA).expect("the schema applies");
        for k in keys {
            conn.execute(
                "INSERT INTO items (pk, sk, version, ttl, data) VALUES ('P', ?1, 1, NULL, '{}')",
                [k],
            )
            .expect("a row inserts");
        }
        let (mut sql, args) = matching("SELECT sk", query, 0);
        sql.push_str(match query.order {
            Order::Ascending => " ORDER BY sk ASC",
            Order::Descending => " ORDER BY sk DESC",
        });
        let mut stmt = conn.prepare(&sql).expect("the query prepares");
        let got = stmt
            .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(0))
            .expect("the query runs")
            .collect::<Result<Vec<_>, _>>()
            .expect("every row reads");
        (got, stmt.get_status(rusqlite::StatementStatus::VmStep))
    }

    #[test]
    fn a_page_after_a_cursor_starts_at_the_cursor_not_at_the_range() {
        // Issue #16: with the range's lower bound and the cursor both in the SQL, SQLite sought
        // to the range and stepped over every row before the cursor, so the rows after the
        // last one held cost as much as reading the whole range.
        let keys: Vec<String> = (0..2_000).map(|i| format!("MODEL#0000#{i:06}")).collect();
        let q = Query::prefix("P", "MODEL#0000#").after(Some(Cursor::from_token(&keys[1_996])));
        let (got, steps) = run_matching(&keys, &q);
        assert_eq!(got, keys[1_997..]);
        let (_, whole) = run_matching(&keys, &Query::prefix("P", "MODEL#0000#"));
        assert!(
            steps < 100 && whole > 2_000,
            "{steps} VM steps for 3 rows after the cursor, {whole} for all 2,000"
        );
        let q = Query::prefix("P", "MODEL#0000#")
            .descending()
            .after(Some(Cursor::from_token(&keys[3])));
        let (got, steps) = run_matching(&keys, &q);
        assert_eq!(
            got,
            [
                "MODEL#0000#000002",
                "MODEL#0000#000001",
                "MODEL#0000#000000"
            ]
        );
        assert!(steps < 100, "{steps} VM steps for 3 rows before the cursor");
    }

    #[test]
    fn the_merged_bounds_answer_what_the_condition_and_the_cursor_do() {
        let keys: Vec<String> = ["A", "B", "B#1", "B#2", "B#3", "C", "C#1", "D"]
            .map(String::from)
            .to_vec();
        let mut probes = keys.clone();
        probes.extend(["", "B#", "B#2x", "Z"].map(String::from));
        let mut sorts = vec![SortKey::All];
        for a in &probes {
            sorts.push(SortKey::Prefix(a.clone()));
            sorts.push(SortKey::After(a.clone()));
            sorts.push(SortKey::From(a.clone()));
            sorts.push(SortKey::Before(a.clone()));
            for b in &probes {
                sorts.push(SortKey::Between(a.clone(), b.clone()));
            }
        }
        for sort in sorts {
            for order in [Order::Ascending, Order::Descending] {
                for cursor in probes.iter().map(Some).chain([None]) {
                    let mut q = Query::partition("P").sort(sort.clone());
                    if order == Order::Descending {
                        q = q.descending();
                    }
                    let q = q.after(cursor.map(|c| Cursor::from_token(c.clone())));
                    let mut want: Vec<String> = keys
                        .iter()
                        .filter(|k| q.matches(k))
                        .filter(|k| match (cursor, order) {
                            (None, _) => true,
                            (Some(c), Order::Ascending) => k.as_str() > c.as_str(),
                            (Some(c), Order::Descending) => k.as_str() < c.as_str(),
                        })
                        .cloned()
                        .collect();
                    if order == Order::Descending {
                        want.reverse();
                    }
                    assert_eq!(run_matching(&keys, &q).0, want, "{q:?}");
                }
            }
        }
    }
}
