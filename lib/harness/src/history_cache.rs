//! The model transcript of recent conversations, kept in memory between turns, so a turn reads
//! only the rows written since the last one instead of its whole segment (issue #16: a turn's
//! cost may grow only with what is sent to the model, not with re-reading and re-parsing the
//! stored history every turn).
//!
//! Why a remembered segment is still right. Model-transcript rows are written once at their
//! (segment, turn, step) and never rewritten ([`crate::transcript`]), so what was read stays
//! true except in two ways, and both are handled:
//! * **New rows** sort after every remembered one: each load asks the store for the rows after
//!   the last remembered key. A row can only appear *before* it if an attempt of an earlier
//!   turn wrote a step later than a newer turn's load, and it cannot: every attempt of a turn
//!   settles each step by put-if-absent and continues from the stored row, so all attempts
//!   follow one path and the turn's rows are complete when its message is done, before the
//!   conversation's next message is delivered.
//! * **Expiry**: each row keeps its `ttl`, and a load leaves out every row whose `ttl` has
//!   passed on the table's clock, as the store does.
//!
//! A different segment (after compaction) is read whole. What is kept is bounded by
//! [`HISTORY_CACHE_CHARS_MAX`]; the least recently used conversations go first. Another
//! process's cache (another Lambda instance) only ever holds an older prefix of the same rows,
//! which its next load completes from the store.

use std::collections::HashMap;
use std::sync::Mutex;

use steward_store::{StoreError, Table};

use crate::ids::ConversationKey;
use crate::transcript::{self, PlacedRow, ReadRow};

/// Content characters (as [`transcript::content_chars`] counts them) kept over all remembered
/// conversations: about 20 segments at the compaction threshold (180,000), some tens of MB of
/// parsed rows at most, within the agent function's 128 MB and `steward serve`'s memory target.
pub const HISTORY_CACHE_CHARS_MAX: usize = 4_000_000;

/// A conversation's segment as loaded: its rows, and their content characters as
/// [`transcript::content_chars`] counts them (kept per row, so a turn does not recount its whole
/// history to decide on compaction).
#[derive(Debug)]
pub struct LoadedSegment {
    /// The rows, in order.
    pub rows: Vec<PlacedRow>,
    /// Their content characters.
    pub chars: usize,
}

/// The remembered segments of recent conversations.
#[derive(Debug)]
pub struct HistoryCache {
    inner: Mutex<Inner>,
    /// [`HISTORY_CACHE_CHARS_MAX`], smaller in tests.
    chars_max: usize,
}

impl Default for HistoryCache {
    fn default() -> Self {
        Self {
            inner: Mutex::default(),
            chars_max: HISTORY_CACHE_CHARS_MAX,
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<ConversationKey, Entry>,
    /// Sum of the entries' `chars`.
    chars: usize,
    /// Use counter: the entry with the smallest `used` is the least recently used.
    tick: u64,
}

#[derive(Debug)]
struct Entry {
    segment: u32,
    rows: Vec<ReadRow>,
    chars: usize,
    used: u64,
}

impl HistoryCache {
    /// Every row of `conversation`'s `segment` the store holds at `now_secs`, in order, as
    /// [`transcript::load_segment`] reads them, from memory and the rows written since.
    pub async fn load_segment(
        &self,
        table: &dyn Table,
        conversation: &ConversationKey,
        segment: u32,
        now_secs: i64,
    ) -> Result<LoadedSegment, StoreError> {
        // Taken out while the store is read (no lock across an await); a second load of the
        // same conversation meanwhile reads the segment whole.
        let taken = self.take(conversation).filter(|e| e.segment == segment);
        let (mut rows, used_chars) = match taken {
            Some(entry) => (entry.rows, entry.chars),
            None => (Vec::new(), 0),
        };
        let after = rows.last().map(|r| r.placed.sk.clone());
        let new = transcript::read_rows(table, conversation, segment, after.as_deref()).await?;
        let mut chars = used_chars + new.iter().map(row_chars).sum::<usize>();
        rows.extend(new);
        let before = rows.len();
        rows.retain(|r| r.ttl.is_none_or(|ttl| ttl > now_secs));
        if rows.len() != before {
            chars = rows.iter().map(row_chars).sum();
        }
        let loaded: Vec<PlacedRow> = rows.iter().map(|r| r.placed.clone()).collect();
        let count = loaded.len();
        self.put(conversation, segment, rows, chars);
        let loaded = transcript::from_first_plain_user_row(loaded);
        if loaded.len() != count {
            // The oldest rows lost their beginning to retention: count what is left.
            chars = transcript::content_chars(&loaded);
        }
        Ok(LoadedSegment {
            rows: loaded,
            chars,
        })
    }

    /// Adds the rows a turn of `conversation` stored in `segment` (each as
    /// [`transcript::append`] answered it: the row the store holds at its key, with its
    /// expiry) to what is remembered of it, so the next load does not read them back and parse
    /// them again. It still asks the store for the rows after them, which another process may
    /// have written since.
    ///
    /// Kept only where they continue the remembered rows: the entry is of `segment` and every
    /// row sorts after the one before it, the first after the entry's last. Then no row can sit
    /// between them in the store: the entry ended where the store's rows did at the turn's load,
    /// and until the turn's message is done no other turn of the conversation writes (an attempt
    /// of the same turn follows the same path, and the turn took its rows at each step). Where
    /// they do not continue it (a concurrent load took the entry, the turn compacted into a new
    /// segment), the entry is dropped and the next load reads the segment whole.
    pub(crate) fn remember_written(
        &self,
        conversation: &ConversationKey,
        segment: u32,
        written: Vec<ReadRow>,
    ) {
        if written.is_empty() {
            return;
        }
        let Some(mut entry) = self.take(conversation) else {
            return;
        };
        let mut last = entry.rows.last().map(|r| r.placed.sk.as_str());
        let continues = entry.segment == segment
            && written.iter().all(|row| {
                let after = last.is_none_or(|l| row.placed.sk.as_str() > l);
                last = Some(row.placed.sk.as_str());
                after
            });
        if !continues {
            return;
        }
        entry.chars += written.iter().map(row_chars).sum::<usize>();
        entry.rows.extend(written);
        self.put(conversation, segment, entry.rows, entry.chars);
    }

    fn take(&self, conversation: &ConversationKey) -> Option<Entry> {
        let mut inner = lock(&self.inner);
        let entry = inner.entries.remove(conversation)?;
        inner.chars -= entry.chars;
        Some(entry)
    }

    fn put(&self, conversation: &ConversationKey, segment: u32, rows: Vec<ReadRow>, chars: usize) {
        if chars > self.chars_max {
            return;
        }
        let mut inner = lock(&self.inner);
        inner.tick += 1;
        let used = inner.tick;
        let entry = Entry {
            segment,
            rows,
            chars,
            used,
        };
        if let Some(old) = inner.entries.insert(conversation.clone(), entry) {
            inner.chars -= old.chars;
        }
        inner.chars += chars;
        while inner.chars > self.chars_max {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(gone) = inner.entries.remove(&oldest) {
                inner.chars -= gone.chars;
            }
        }
    }

    /// Conversations remembered and their characters (for tests).
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        let inner = lock(&self.inner);
        (inner.entries.len(), inner.chars)
    }

    /// Whether `conversation` is remembered (for tests).
    #[cfg(test)]
    fn holds(&self, conversation: &ConversationKey) -> bool {
        lock(&self.inner).entries.contains_key(conversation)
    }
}

fn row_chars(row: &ReadRow) -> usize {
    transcript::content_chars(std::slice::from_ref(&row.placed))
}

/// The cache holds no invariant a panicking holder could break half-way (an entry is inserted
/// or removed whole), so a poisoned lock is used as is.
fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use steward_llm::{ContentBlock, Message};
    use steward_store::{Clock, ManualClock, SqliteTable, WriteOp};

    use super::*;
    use crate::ids::ChannelName;
    use crate::keys;
    use crate::transcript::{ModelRow, RowSource, load_segment, put_row_op};

    const DAY_MS: i64 = 24 * 60 * 60 * 1000;

    struct Rig {
        clock: ManualClock,
        table: SqliteTable,
        cache: HistoryCache,
    }

    fn rig() -> Rig {
        let clock = ManualClock::at_millis(1_780_000_000_000);
        let table = SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap();
        Rig {
            clock,
            table,
            cache: HistoryCache::default(),
        }
    }

    fn conv(id: &str) -> ConversationKey {
        ConversationKey::new(&ChannelName::parse("telegram").unwrap(), id).unwrap()
    }

    fn row(text: &str, user: bool) -> ModelRow {
        let block = vec![ContentBlock::text(text)];
        ModelRow {
            message: if user {
                Message::user(block)
            } else {
                Message::assistant(block)
            }
            .into(),
            source: if user {
                RowSource::User
            } else {
                RowSource::Model
            },
            stop_reason: None,
            note: None,
        }
    }

    impl Rig {
        /// Writes turn `turn` of `c`'s `segment`: the person's row and the model's answer.
        async fn turn(&self, c: &ConversationKey, segment: u32, turn: u64, words: &str) {
            let now = self.clock.now_millis();
            let ops = vec![
                put_row_op(c, segment, turn, 0, &row(words, true), now).unwrap(),
                put_row_op(
                    c,
                    segment,
                    turn,
                    1,
                    &row(&format!("re: {words}"), false),
                    now,
                )
                .unwrap(),
            ];
            self.table.write(ops).await.unwrap();
        }

        /// Overwrites the model row at (`segment`, `turn`, 1) behind the cache's back (which the
        /// harness never does: rows are written once), to tell what the cache read from what
        /// it kept.
        async fn rewrite(&self, c: &ConversationKey, segment: u32, turn: u64, words: &str) {
            let now = self.clock.now_millis();
            let op = put_row_op(c, segment, turn, 1, &row(words, false), now).unwrap();
            let WriteOp::Put { item, .. } = op else {
                panic!("a put")
            };
            self.table.write(vec![WriteOp::put(item)]).await.unwrap();
        }

        /// The rows loaded through the cache, checking the characters it counted for them.
        async fn cached(&self, c: &ConversationKey, segment: u32) -> Vec<PlacedRow> {
            let now = self.clock.now_secs();
            let loaded = self
                .cache
                .load_segment(&self.table, c, segment, now)
                .await
                .unwrap();
            assert_eq!(loaded.chars, transcript::content_chars(&loaded.rows));
            loaded.rows
        }

        async fn stored(&self, c: &ConversationKey, segment: u32) -> Vec<PlacedRow> {
            load_segment(&self.table, c, segment).await.unwrap()
        }
    }

    fn texts(rows: &[PlacedRow]) -> Vec<(String, String)> {
        rows.iter()
            .map(|r| (r.sk.clone(), steward_llm::text_of(&r.row.message.content)))
            .collect()
    }

    #[tokio::test]
    async fn each_load_answers_what_the_store_holds_reading_only_the_new_rows() {
        let r = rig();
        let c = conv("c1");
        for turn in 1..=3 {
            r.turn(&c, 0, turn, &format!("hello {turn}")).await;
            assert_eq!(texts(&r.cached(&c, 0).await), texts(&r.stored(&c, 0).await));
        }
        assert_eq!(r.cached(&c, 0).await.len(), 6);

        // A row already read is not read again: changed behind the cache's back, the cache
        // still answers the old text,
        // while the rows written since are read.
        let sk = keys::model_sk(0, 1, 1);
        r.rewrite(&c, 0, 1, "rewritten").await;
        r.turn(&c, 0, 4, "hello 4").await;
        let got = texts(&r.cached(&c, 0).await);
        assert_eq!(got.len(), 8);
        assert!(got.contains(&(sk.clone(), "re: hello 1".into())), "{got:?}");
        assert!(got.contains(&(keys::model_sk(0, 4, 1), "re: hello 4".into())));
        assert!(texts(&r.stored(&c, 0).await).contains(&(sk, "rewritten".into())));
    }

    #[tokio::test]
    async fn rows_past_their_expiry_leave_as_they_do_in_the_store() {
        let r = rig();
        let c = conv("c1");
        let days = crate::retention::current().days();
        r.turn(&c, 0, 1, "first").await;
        r.clock.advance_millis(10 * DAY_MS);
        r.turn(&c, 0, 2, "second").await;
        r.turn(&c, 0, 3, "third").await;
        assert_eq!(r.cached(&c, 0).await.len(), 6);
        // Past the first turn's retention, not the others'.
        r.clock.advance_millis((days - 5) * DAY_MS);
        let stored = r.stored(&c, 0).await;
        assert_eq!(stored.len(), 4);
        assert_eq!(texts(&r.cached(&c, 0).await), texts(&stored));
        // Past everything's.
        r.clock.advance_millis(6 * DAY_MS);
        assert!(r.stored(&c, 0).await.is_empty());
        assert!(r.cached(&c, 0).await.is_empty());
    }

    #[tokio::test]
    async fn the_characters_counted_are_those_of_the_rows_returned() {
        let r = rig();
        let c = conv("c1");
        let days = crate::retention::current().days();
        // Turn 1's question now, its answer ten days later: retention takes the question first.
        let now = r.clock.now_millis();
        let question = put_row_op(&c, 0, 1, 0, &row("a question", true), now).unwrap();
        r.table.write(vec![question]).await.unwrap();
        r.clock.advance_millis(10 * DAY_MS);
        let now = r.clock.now_millis();
        let answer = put_row_op(&c, 0, 1, 1, &row("an answer", false), now).unwrap();
        r.table.write(vec![answer]).await.unwrap();
        r.turn(&c, 0, 2, "second").await;
        assert_eq!(r.cached(&c, 0).await.len(), 4);
        r.clock.advance_millis((days - 5) * DAY_MS);
        // The answer outlives its question and is left out with it: the history starts at the
        // first whole exchange, and its characters are counted without the answer's.
        let rows = r.cached(&c, 0).await;
        assert_eq!(texts(&rows), texts(&r.stored(&c, 0).await));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].sk, keys::model_sk(0, 2, 0));
        // And again from memory, with nothing new read.
        assert_eq!(r.cached(&c, 0).await.len(), 2);
    }

    impl Rig {
        /// Writes turn `turn` of `c`'s `segment` as a turn does, answering the rows as stored.
        async fn written(
            &self,
            c: &ConversationKey,
            segment: u32,
            turn: u64,
            words: &str,
        ) -> Vec<ReadRow> {
            let now = self.clock.now_millis();
            let mut out = Vec::new();
            for (step, (text, user)) in [(words.to_owned(), true), (format!("re: {words}"), false)]
                .into_iter()
                .enumerate()
            {
                let step = u32::try_from(step).unwrap();
                let row = row(&text, user);
                out.push(
                    transcript::append(&self.table, c, segment, turn, step, row, now)
                        .await
                        .unwrap(),
                );
            }
            out
        }
    }

    #[tokio::test]
    async fn rows_a_turn_wrote_are_kept_and_not_read_back() {
        let r = rig();
        let c = conv("c1");
        r.turn(&c, 0, 1, "hello 1").await;
        r.cached(&c, 0).await;
        let written = r.written(&c, 0, 2, "hello 2").await;
        r.cache.remember_written(&c, 0, written);
        // Changed behind the cache's back, the kept row still answers as written: it was not
        // read again. The next turn's rows are.
        let sk = keys::model_sk(0, 2, 1);
        r.rewrite(&c, 0, 2, "rewritten").await;
        r.turn(&c, 0, 3, "hello 3").await;
        let got = texts(&r.cached(&c, 0).await);
        assert_eq!(got.len(), 6);
        assert!(got.contains(&(sk, "re: hello 2".into())), "{got:?}");
        assert!(got.contains(&(keys::model_sk(0, 3, 1), "re: hello 3".into())));
    }

    #[tokio::test]
    async fn rows_that_do_not_continue_what_is_kept_are_not_kept() {
        let r = rig();
        let c = conv("c1");
        r.turn(&c, 0, 1, "one").await;
        r.turn(&c, 0, 2, "two").await;
        r.cached(&c, 0).await;
        // Rows sorting before the kept end (turn 1 again) would leave a gap or a repeat.
        let again = r.written(&c, 0, 1, "one").await;
        r.cache.remember_written(&c, 0, again);
        assert!(!r.cache.holds(&c));
        assert_eq!(texts(&r.cached(&c, 0).await), texts(&r.stored(&c, 0).await));
        // Rows of another segment than the one kept.
        let elsewhere = r.written(&c, 1, 3, "three").await;
        r.cache.remember_written(&c, 1, elsewhere);
        assert!(!r.cache.holds(&c));
        assert_eq!(texts(&r.cached(&c, 0).await), texts(&r.stored(&c, 0).await));
        // Out of order among themselves.
        let mut reversed = r.written(&c, 0, 4, "four").await;
        reversed.reverse();
        r.cache.remember_written(&c, 0, reversed);
        assert!(!r.cache.holds(&c));
        let rows = r.cached(&c, 0).await;
        assert_eq!(texts(&rows), texts(&r.stored(&c, 0).await));
        assert_eq!(rows.len(), 6);
        // Nothing is kept for a conversation the cache does not hold.
        let other = conv("c2");
        let written = r.written(&other, 0, 1, "hi").await;
        r.cache.remember_written(&other, 0, written);
        assert!(!r.cache.holds(&other));
    }

    #[tokio::test]
    async fn kept_rows_expire_as_stored_ones_do() {
        let r = rig();
        let c = conv("c1");
        let days = crate::retention::current().days();
        r.cached(&c, 0).await;
        let written = r.written(&c, 0, 1, "first").await;
        let stored_ttl = r
            .table
            .get(&keys::conversation_pk(&c), &written[0].placed.sk)
            .await
            .unwrap()
            .unwrap()
            .ttl;
        assert_eq!(written[0].ttl, stored_ttl);
        assert!(stored_ttl.is_some());
        r.cache.remember_written(&c, 0, written);
        r.clock.advance_millis(10 * DAY_MS);
        r.turn(&c, 0, 2, "second").await;
        assert_eq!(r.cached(&c, 0).await.len(), 4);
        r.clock.advance_millis((days - 5) * DAY_MS);
        let stored = r.stored(&c, 0).await;
        assert_eq!(stored.len(), 2);
        assert_eq!(texts(&r.cached(&c, 0).await), texts(&stored));
    }

    #[tokio::test]
    async fn another_segment_is_read_whole_and_conversations_stay_apart() {
        let r = rig();
        let (a, b) = (conv("a"), conv("b"));
        r.turn(&a, 0, 1, "a one").await;
        r.turn(&b, 0, 1, "b one").await;
        assert_eq!(texts(&r.cached(&a, 0).await), texts(&r.stored(&a, 0).await));
        assert_eq!(texts(&r.cached(&b, 0).await), texts(&r.stored(&b, 0).await));
        // Compaction moved `a` to segment 1.
        r.turn(&a, 1, 2, "a two").await;
        let next = r.cached(&a, 1).await;
        assert_eq!(texts(&next), texts(&r.stored(&a, 1).await));
        assert_eq!(next.len(), 2);
        assert!(next.iter().all(|p| p.sk.starts_with("MODEL#000001#")));
        assert_eq!(texts(&r.cached(&b, 0).await), texts(&r.stored(&b, 0).await));
    }

    #[tokio::test]
    async fn what_is_kept_is_bounded_and_the_least_recently_used_goes_first() {
        let mut r = rig();
        // Each conversation below holds 2 rows of 1,000 characters; room for 5 of them.
        r.cache = HistoryCache {
            inner: Mutex::default(),
            chars_max: 10_000,
        };
        let words = "x".repeat(1_000 - "re: ".len());
        let convs: Vec<_> = (0..6).map(|i| conv(&format!("c{i}"))).collect();
        for c in &convs {
            r.turn(c, 0, 1, &words).await;
        }
        for c in &convs[..5] {
            r.cached(c, 0).await;
        }
        // c0 is used again: c1 is now the least recently used, and goes when c5 comes.
        r.cached(&convs[0], 0).await;
        r.cached(&convs[5], 0).await;
        let (held, chars) = r.cache.size();
        assert!(chars <= 10_000, "{chars}");
        assert_eq!(held, 5);
        assert!(!r.cache.holds(&convs[1]));
        assert!(r.cache.holds(&convs[0]) && r.cache.holds(&convs[5]));
        // A forgotten conversation is read whole again, and still right.
        assert_eq!(
            texts(&r.cached(&convs[1], 0).await),
            texts(&r.stored(&convs[1], 0).await)
        );
        // A segment larger than the whole budget is answered, not kept.
        let big = conv("big");
        r.turn(&big, 0, 1, &"y".repeat(6_000)).await;
        assert_eq!(r.cached(&big, 0).await.len(), 2);
        assert!(!r.cache.holds(&big));
    }
}
