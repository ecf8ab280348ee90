//! The storage contract, written once and run against every `Table` adapter. Each function
//! takes a fresh, empty table (and the clock it decides expiry by) and panics on a violation.

#![allow(clippy::unwrap_used, missing_docs, dead_code)]

use std::sync::Arc;

use serde_json::json;
use steward_store::{
    Condition, ITEM_BYTES_MAX, Item, ManualClock, Query, SortKey, StoreError, Table, WriteOp,
};

/// A fresh table under test and the clock it uses.
pub struct Fixture {
    pub table: Arc<dyn Table>,
    pub clock: ManualClock,
    /// The folder of a file store, removed with the fixture.
    pub folder: Option<ScratchDir>,
}

/// A temporary folder removed when dropped.
pub struct ScratchDir(pub std::path::PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The moment every fixture's clock starts at (2026-11-30T12:00:00Z).
pub const START_MILLIS: i64 = steward_store::testing::TEST_START_MILLIS;

fn now(fx: &Fixture) -> i64 {
    fx.clock.now_secs_for_tests()
}

trait NowSecs {
    fn now_secs_for_tests(&self) -> i64;
}
impl NowSecs for ManualClock {
    fn now_secs_for_tests(&self) -> i64 {
        use steward_store::Clock;
        self.now_secs()
    }
}

pub async fn get_put_roundtrip(fx: Fixture) {
    let t = &fx.table;
    assert_eq!(t.get("P", "S").await.unwrap(), None);
    let item = Item::new(
        "P",
        "S",
        json!({"name": "Spring Open", "n": 3, "f": 2.5, "ok": true, "none": null,
               "list": [1, "two", {"three": 3}], "nested": {"a": {"b": []}}, "empty": ""}),
    )
    .with_version(7)
    .with_ttl(now(&fx) + 3600);
    t.write(vec![WriteOp::put(item.clone())]).await.unwrap();
    assert_eq!(t.get("P", "S").await.unwrap(), Some(item.clone()));
    // Unconditional put replaces; unconditional delete of a missing item is fine.
    let replaced = Item::new("P", "S", json!({"name": "Autumn"}));
    t.write(vec![WriteOp::put(replaced.clone())]).await.unwrap();
    assert_eq!(t.get("P", "S").await.unwrap(), Some(replaced));
    t.write(vec![WriteOp::delete("P", "S")]).await.unwrap();
    t.write(vec![WriteOp::delete("P", "S")]).await.unwrap();
    assert_eq!(t.get("P", "S").await.unwrap(), None);
}

pub async fn get_many_answers_each_key_in_order(fx: Fixture) {
    let t = &fx.table;
    let now = now(&fx);
    let a = Item::new("P", "A", json!({"v": 1}));
    let b = Item::new("Q", "B", json!({"v": 2})).with_version(3);
    let gone = Item::new("P", "GONE", json!({"v": 3})).with_ttl(now - 1);
    t.write(vec![
        WriteOp::put(a.clone()),
        WriteOp::put(b.clone()),
        WriteOp::put(gone),
    ])
    .await
    .unwrap();
    let key = |pk: &str, sk: &str| (pk.to_owned(), sk.to_owned());
    assert_eq!(t.get_many(&[]).await.unwrap(), vec![]);
    // Across partitions, in the order asked, a missing and an expired key absent, a repeated
    // key answered at each place.
    let got = t
        .get_many(&[
            key("Q", "B"),
            key("P", "MISSING"),
            key("P", "A"),
            key("P", "GONE"),
            key("Q", "B"),
        ])
        .await
        .unwrap();
    assert_eq!(got, vec![Some(b.clone()), None, Some(a), None, Some(b)]);

    // The most keys one call takes, some present.
    let present: Vec<_> = (0..10)
        .map(|i| WriteOp::put(Item::new("M", format!("K{i:03}"), json!({"i": i}))))
        .collect();
    t.write(present).await.unwrap();
    let keys: Vec<_> = (0..steward_store::GET_MANY_KEYS_MAX)
        .map(|i| key("M", &format!("K{i:03}")))
        .collect();
    let got = t.get_many(&keys).await.unwrap();
    assert_eq!(got.len(), keys.len());
    for (i, item) in got.iter().enumerate() {
        assert_eq!(
            item.as_ref().map(|it| it.data["i"].clone()),
            (i < 10).then(|| json!(i)),
            "{i}"
        );
    }

    // One key too many, or a key `get` would refuse, is refused before anything is read.
    let too_many: Vec<_> = (0..=steward_store::GET_MANY_KEYS_MAX)
        .map(|i| key("M", &format!("K{i:03}")))
        .collect();
    for bad in [
        too_many,
        vec![key("", "A")],
        vec![key("P", &"s".repeat(1025))],
    ] {
        assert!(
            matches!(
                t.get_many(&bad).await,
                Err(StoreError::InvalidTransaction(_))
            ),
            "{} keys",
            bad.len()
        );
    }
}

pub async fn integral_floats_read_back_as_integers(fx: Fixture) {
    let t = &fx.table;
    t.write(vec![WriteOp::put(Item::new(
        "P",
        "S",
        json!({"a": 1.0, "b": 2.5, "c": -3.0, "d": [4.0]}),
    ))])
    .await
    .unwrap();
    let got = t.get("P", "S").await.unwrap().unwrap();
    assert_eq!(got.data, json!({"a": 1, "b": 2.5, "c": -3, "d": [4]}));
}

pub async fn non_ascii_keys_and_data_roundtrip(fx: Fixture) {
    let t = &fx.table;
    let items = [
        Item::new(
            "USER#Zoë",
            "EVENT#東京#🎉",
            json!({"name": "Fête — «nuit» 東京 🎉", "emoji": "👩🏽‍💻"}),
        ),
        Item::new("USER#Zoë", "EVENT#東京#a", json!({"x": "ü"})),
        Item::new("USER#Zoë", "EVENT#Zürich", json!({"x": "z"})),
        Item::new("USER#Zoë", "EVENT#Ω", json!({"x": "Ω"})),
    ];
    t.write(items.iter().cloned().map(WriteOp::put).collect())
        .await
        .unwrap();
    assert_eq!(
        t.get("USER#Zoë", "EVENT#東京#🎉").await.unwrap().as_ref(),
        Some(&items[0])
    );
    let page = t
        .query(&Query::prefix("USER#Zoë", "EVENT#東京#"))
        .await
        .unwrap();
    let sks: Vec<_> = page.items.iter().map(|i| i.sk.as_str()).collect();
    // UTF-8 byte order: 'a' < '🎉'.
    assert_eq!(sks, ["EVENT#東京#a", "EVENT#東京#🎉"]);
    let all = t.query(&Query::partition("USER#Zoë")).await.unwrap();
    let sks: Vec<_> = all.items.iter().map(|i| i.sk.as_str()).collect();
    assert_eq!(
        sks,
        ["EVENT#Zürich", "EVENT#Ω", "EVENT#東京#a", "EVENT#東京#🎉"]
    );
    // An empty prefix is the whole partition (DynamoDB refuses an empty key value, so the
    // adapter drops the condition).
    let every = t.query(&Query::prefix("USER#Zoë", "")).await.unwrap();
    assert_eq!(every.items, all.items);
}

pub async fn concurrent_put_if_absent_has_one_winner(fx: Fixture) {
    let mut tasks = Vec::new();
    for i in 0..16 {
        let t = Arc::clone(&fx.table);
        tasks.push(tokio::spawn(async move {
            let r = t
                .write(vec![WriteOp::put_if_absent(Item::new(
                    "RACE",
                    "ONE",
                    json!({ "winner": i }),
                ))])
                .await;
            (i, r)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (i, r) = task.await.unwrap();
        match r {
            Ok(()) => winners.push(i),
            Err(StoreError::ConditionFailed { op_index: 0 }) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer wins: {winners:?}");
    let stored = fx.table.get("RACE", "ONE").await.unwrap().unwrap();
    assert_eq!(stored.data, json!({ "winner": winners[0] }));
}

pub async fn failed_condition_writes_nothing_and_names_the_op(fx: Fixture) {
    let t = &fx.table;
    t.write(vec![
        WriteOp::put(Item::new("P", "B", json!({"v": "b"}))),
        WriteOp::put(Item::new("P", "C", json!({"v": "c"}))),
    ])
    .await
    .unwrap();
    let err = t
        .write(vec![
            WriteOp::put(Item::new("P", "A", json!({"v": "a"}))),
            WriteOp::delete("P", "C"),
            WriteOp::put_if_absent(Item::new("P", "B", json!({"v": "b2"}))),
            WriteOp::put(Item::new("P", "D", json!({"v": "d"}))),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ConditionFailed { op_index: 2 }),
        "{err:?}"
    );
    assert_eq!(err.failed_op(), Some(2));
    assert_eq!(t.get("P", "A").await.unwrap(), None);
    assert_eq!(t.get("P", "D").await.unwrap(), None);
    assert_eq!(
        t.get("P", "B").await.unwrap().unwrap().data,
        json!({"v": "b"})
    );
    assert_eq!(
        t.get("P", "C").await.unwrap().unwrap().data,
        json!({"v": "c"})
    );

    // A lone check and a check inside a transaction.
    let err = t
        .write(vec![WriteOp::check("P", "Z", Condition::Present)])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ConditionFailed { op_index: 0 }),
        "{err:?}"
    );
    t.write(vec![WriteOp::check("P", "B", Condition::Present)])
        .await
        .unwrap();
    let err = t
        .write(vec![
            WriteOp::check("P", "B", Condition::Present),
            WriteOp::check("P", "C", Condition::Absent),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ConditionFailed { op_index: 1 }),
        "{err:?}"
    );
}

pub async fn version_conditions(fx: Fixture) {
    let t = &fx.table;
    let v1 = Item::new("P", "V", json!({"n": 1}));
    t.write(vec![WriteOp::put_if_absent(v1)]).await.unwrap();
    let v2 = Item::new("P", "V", json!({"n": 2})).with_version(2);
    t.write(vec![WriteOp::put_if_version(v2.clone(), 1)])
        .await
        .unwrap();
    // A writer that read version 1 loses.
    let stale = Item::new("P", "V", json!({"n": 99})).with_version(2);
    let err = t
        .write(vec![WriteOp::put_if_version(stale, 1)])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ConditionFailed { op_index: 0 }));
    assert_eq!(t.get("P", "V").await.unwrap(), Some(v2));
    // Version conditions on delete and check; a missing item fails a version condition.
    let err = t
        .write(vec![WriteOp::delete_if(
            "P",
            "V",
            Condition::VersionEquals(1),
        )])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ConditionFailed { op_index: 0 }));
    let err = t
        .write(vec![WriteOp::check(
            "P",
            "MISSING",
            Condition::VersionEquals(1),
        )])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ConditionFailed { op_index: 0 }));
    t.write(vec![
        WriteOp::check("P", "V", Condition::VersionEquals(2)),
        WriteOp::put(Item::new("P", "W", json!({}))),
    ])
    .await
    .unwrap();
    t.write(vec![WriteOp::delete_if(
        "P",
        "V",
        Condition::VersionEquals(2),
    )])
    .await
    .unwrap();
    assert_eq!(t.get("P", "V").await.unwrap(), None);
    let err = t
        .write(vec![WriteOp::delete_if("P", "V", Condition::Present)])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ConditionFailed { op_index: 0 }));
}

pub async fn concurrent_version_updates_lose_nothing(fx: Fixture) {
    let t = &fx.table;
    t.write(vec![WriteOp::put(Item::new(
        "P",
        "COUNTER",
        json!({"n": 0}),
    ))])
    .await
    .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let t = Arc::clone(&fx.table);
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                loop {
                    let cur = t.get("P", "COUNTER").await.unwrap().unwrap();
                    let n = cur.data["n"].as_u64().unwrap();
                    let next = Item::new("P", "COUNTER", json!({"n": n + 1}))
                        .with_version(cur.version + 1);
                    match t
                        .write(vec![WriteOp::put_if_version(next, cur.version)])
                        .await
                    {
                        Ok(()) => break,
                        Err(StoreError::ConditionFailed { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let end = t.get("P", "COUNTER").await.unwrap().unwrap();
    assert_eq!(end.data["n"], json!(40));
    assert_eq!(end.version, 41);
}

async fn seed(t: &Arc<dyn Table>, n: usize) {
    let ops: Vec<WriteOp> = (0..n)
        .map(|i| WriteOp::put(Item::new("Q", format!("ITEM#{i:04}"), json!({ "i": i }))))
        .chain([
            WriteOp::put(Item::new("Q", "AAA", json!({}))),
            WriteOp::put(Item::new("Q", "ZZZ", json!({}))),
            WriteOp::put(Item::new("OTHER", "ITEM#0000", json!({}))),
        ])
        .collect();
    for chunk in ops.chunks(25) {
        t.write(chunk.to_vec()).await.unwrap();
    }
}

async fn collect_pages(t: &Arc<dyn Table>, q: Query) -> (Vec<String>, usize) {
    let mut q = q;
    let mut out = Vec::new();
    let mut pages = 0;
    loop {
        let page = t.query(&q).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= q.limit);
        if page.next.is_some() {
            assert_eq!(page.items.len(), q.limit, "a page with a cursor is full");
        }
        out.extend(page.items.into_iter().map(|i| i.sk));
        match page.next {
            Some(c) => q = q.after(Some(c)),
            None => return (out, pages),
        }
        assert!(pages < 10_000, "pagination does not terminate");
    }
}

pub async fn query_order_prefix_range_limit_and_pages(fx: Fixture) {
    let t = &fx.table;
    seed(t, 230).await;
    let expected: Vec<String> = (0..230).map(|i| format!("ITEM#{i:04}")).collect();

    let (asc, pages) = collect_pages(t, Query::prefix("Q", "ITEM#").limit(7)).await;
    assert_eq!(asc, expected);
    assert_eq!(pages, 33, "230 items in pages of 7");

    let (desc, _) = collect_pages(t, Query::prefix("Q", "ITEM#").descending().limit(9)).await;
    let mut rev = expected.clone();
    rev.reverse();
    assert_eq!(desc, rev);

    // Exactly one full page: no cursor.
    let page = t
        .query(&Query::prefix("Q", "ITEM#00").limit(100))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 100);
    assert!(page.next.is_none(), "no further items, so no cursor");

    let (between, _) = collect_pages(
        t,
        Query::partition("Q")
            .sort(SortKey::Between("ITEM#0010".into(), "ITEM#0020".into()))
            .limit(4),
    )
    .await;
    assert_eq!(between, expected[10..=20]);

    let (after, _) = collect_pages(
        t,
        Query::partition("Q")
            .sort(SortKey::After("ITEM#0225".into()))
            .limit(3),
    )
    .await;
    assert_eq!(
        after,
        ["ITEM#0226", "ITEM#0227", "ITEM#0228", "ITEM#0229", "ZZZ"]
    );

    let (from, _) = collect_pages(
        t,
        Query::partition("Q")
            .sort(SortKey::From("ITEM#0228".into()))
            .limit(50),
    )
    .await;
    assert_eq!(from, ["ITEM#0228", "ITEM#0229", "ZZZ"]);

    let (before, _) = collect_pages(
        t,
        Query::partition("Q")
            .sort(SortKey::Before("ITEM#0002".into()))
            .descending()
            .limit(1),
    )
    .await;
    assert_eq!(before, ["ITEM#0001", "ITEM#0000", "AAA"]);

    let (all, _) = collect_pages(t, Query::partition("Q").limit(1000)).await;
    assert_eq!(all.len(), 232);
    assert_eq!(all.first().map(String::as_str), Some("AAA"));

    let empty = t.query(&Query::prefix("Q", "NOPE#")).await.unwrap();
    assert!(empty.items.is_empty() && empty.next.is_none());

    let everything = t
        .query_all(&Query::prefix("Q", "ITEM#").limit(50), usize::MAX)
        .await
        .unwrap();
    assert_eq!(everything.len(), 230);
    let capped = t
        .query_all(&Query::prefix("Q", "ITEM#").limit(50), 60)
        .await
        .unwrap();
    assert_eq!(capped.len(), 60);
}

/// `count` answers what `query_all` would hold, whatever the query's shape: prefix, range,
/// order, cursor, page size and the bound; expired items are not counted.
pub async fn count_is_what_query_all_would_return(fx: Fixture) {
    let t = &fx.table;
    seed(t, 130).await;
    let now = now(&fx);
    t.write(vec![
        WriteOp::put(Item::new("Q", "ITEM#9998", json!({})).with_ttl(now - 1)),
        WriteOp::put(Item::new("Q", "ITEM#9999", json!({})).with_ttl(now + 60)),
    ])
    .await
    .unwrap();
    // Cursors from real pages: after the 120th item going up, after the 5th going down.
    let up = t
        .query(&Query::prefix("Q", "ITEM#").limit(120))
        .await
        .unwrap()
        .next;
    let down = t
        .query(&Query::prefix("Q", "ITEM#").descending().limit(5))
        .await
        .unwrap()
        .next;
    assert!(up.is_some() && down.is_some());
    let queries = [
        Query::partition("Q"),
        Query::prefix("Q", "ITEM#"),
        Query::prefix("Q", "ITEM#00").descending().limit(3),
        Query::prefix("Q", "NOTHING#"),
        Query::partition("Q").sort(SortKey::Between("ITEM#0010".into(), "ITEM#0020".into())),
        Query::partition("Q").sort(SortKey::After("ITEM#0100".into())),
        Query::partition("Q").sort(SortKey::Before("ITEM#0005".into())),
        Query::prefix("Q", "ITEM#").after(up),
        Query::prefix("Q", "ITEM#").descending().after(down),
        Query::partition("EMPTY"),
    ];
    for q in &queries {
        for max in [0, 1, 7, 100, 1_000] {
            let all = t.query_all(q, max).await.unwrap().len();
            assert_eq!(t.count(q, max).await.unwrap(), all, "{q:?}, at most {max}");
        }
    }
    assert_eq!(
        t.count(&Query::prefix("Q", "ITEM#"), 1_000).await.unwrap(),
        131
    );
    fx.clock.advance_millis(60_000);
    assert_eq!(
        t.count(&Query::prefix("Q", "ITEM#"), 1_000).await.unwrap(),
        130
    );
    assert!(matches!(
        t.count(&Query::partition(""), 10).await,
        Err(StoreError::InvalidTransaction(_))
    ));
}

/// `query_raw` answers what `query` does, page for page and cursor for cursor, each item's data
/// as text that parses to the tree `query` gives (and straight into a type); `query_all_raw`
/// is `query_all` the same way. Expired items are absent from both.
pub async fn raw_queries_answer_what_queries_do(fx: Fixture) {
    let t = &fx.table;
    seed(t, 40).await;
    let now = now(&fx);
    t.write(vec![
        WriteOp::put(Item::new(
            "Q",
            "ITEM#0005x",
            json!({"s": "é \"q\" \\ \u{1}", "f": 1.5, "n": null, "a": [1, {"b": true}]}),
        )),
        WriteOp::put(Item::new("Q", "ITEM#9998", json!({"i": -1})).with_ttl(now - 1)),
        WriteOp::put(Item::new("Q", "ITEM#9999", json!({"i": 9999})).with_ttl(now + 60)),
    ])
    .await
    .unwrap();
    let queries = [
        Query::partition("Q").limit(7),
        Query::prefix("Q", "ITEM#").descending().limit(9),
        Query::partition("Q").sort(SortKey::Between("ITEM#0003".into(), "ITEM#0010".into())),
        Query::prefix("Q", "NOTHING#"),
    ];
    for first in &queries {
        let mut q = first.clone();
        loop {
            let page = t.query(&q).await.unwrap();
            let raw = t.query_raw(&q).await.unwrap();
            assert_eq!(raw.next, page.next, "{q:?}");
            assert_eq!(raw.items.len(), page.items.len(), "{q:?}");
            for (r, i) in raw.items.iter().zip(&page.items) {
                assert_eq!(
                    (&r.pk, &r.sk, r.version, r.ttl),
                    (&i.pk, &i.sk, i.version, i.ttl)
                );
                assert_eq!(r.parse::<serde_json::Value>().unwrap(), i.data, "{}", r.sk);
                assert_eq!(r.clone().into_item().unwrap(), *i);
            }
            match page.next {
                Some(c) => q = q.after(Some(c)),
                None => break,
            }
        }
        for max in [0, 1, 10, 1_000] {
            let all: Vec<Item> = t.query_all(first, max).await.unwrap();
            let raw: Vec<Item> = t
                .query_all_raw(first, max)
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.into_item().unwrap())
                .collect();
            assert_eq!(raw, all, "{first:?}, at most {max}");
        }
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Numbered {
        i: u32,
    }
    let typed: Vec<Numbered> = t
        .query_raw(&Query::prefix("Q", "ITEM#000").limit(3))
        .await
        .unwrap()
        .items
        .iter()
        .map(|r| r.parse().unwrap())
        .collect();
    assert_eq!(
        typed,
        [Numbered { i: 0 }, Numbered { i: 1 }, Numbered { i: 2 }]
    );
    let wrong = t
        .query_raw(&Query::prefix("Q", "ITEM#0005x"))
        .await
        .unwrap();
    assert!(
        wrong.items[0].parse::<Numbered>().is_err(),
        "a type the data does not fit is an error"
    );
    fx.clock.advance_millis(60_000);
    let raw = t.query_raw(&Query::prefix("Q", "ITEM#99")).await.unwrap();
    assert!(raw.items.is_empty(), "expired items are absent: {raw:?}");
    assert!(matches!(
        t.query_raw(&Query::partition("")).await,
        Err(StoreError::InvalidTransaction(_))
    ));
}

pub async fn expired_items_are_absent_everywhere(fx: Fixture) {
    let t = &fx.table;
    let now = now(&fx);
    let gone = Item::new("P", "GONE", json!({"v": 1})).with_ttl(now - 1);
    let soon = Item::new("P", "SOON", json!({"v": 1})).with_ttl(now + 10);
    t.write(vec![WriteOp::put(gone), WriteOp::put(soon)])
        .await
        .unwrap();

    assert_eq!(t.get("P", "GONE").await.unwrap(), None);
    assert!(t.get("P", "SOON").await.unwrap().is_some());
    let sks: Vec<_> = t
        .query(&Query::partition("P"))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.sk)
        .collect();
    assert_eq!(sks, ["SOON"]);

    // Conditions see an expired item as absent.
    for cond in [Condition::Present, Condition::VersionEquals(1)] {
        let err = t
            .write(vec![WriteOp::check("P", "GONE", cond)])
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::ConditionFailed { op_index: 0 }),
            "{cond:?}"
        );
    }
    t.write(vec![WriteOp::check("P", "GONE", Condition::Absent)])
        .await
        .unwrap();
    t.write(vec![WriteOp::put_if_absent(Item::new(
        "P",
        "GONE",
        json!({"v": 2}),
    ))])
    .await
    .unwrap();
    assert_eq!(
        t.get("P", "GONE").await.unwrap().unwrap().data,
        json!({"v": 2})
    );

    // Time passes: at ttl == now the item is gone.
    fx.clock.advance_millis(10_000);
    assert_eq!(t.get("P", "SOON").await.unwrap(), None);
    let err = t
        .write(vec![WriteOp::delete_if("P", "SOON", Condition::Present)])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::ConditionFailed { op_index: 0 }));
    t.write(vec![WriteOp::put_if_absent(Item::new(
        "P",
        "SOON",
        json!({"v": 3}),
    ))])
    .await
    .unwrap();
}

pub async fn expired_items_do_not_break_pagination(fx: Fixture) {
    let t = &fx.table;
    let now = now(&fx);
    let ops: Vec<WriteOp> = (0..40)
        .map(|i| {
            let item = Item::new("E", format!("R#{i:03}"), json!({ "i": i }));
            WriteOp::put(if i % 3 == 0 {
                item.with_ttl(now - 5)
            } else {
                item
            })
        })
        .collect();
    for chunk in ops.chunks(20) {
        t.write(chunk.to_vec()).await.unwrap();
    }
    let live: Vec<String> = (0..40)
        .filter(|i| i % 3 != 0)
        .map(|i| format!("R#{i:03}"))
        .collect();
    let (asc, _) = collect_pages(t, Query::prefix("E", "R#").limit(4)).await;
    assert_eq!(asc, live);
    let (desc, _) = collect_pages(t, Query::prefix("E", "R#").descending().limit(5)).await;
    assert_eq!(desc, live.iter().rev().cloned().collect::<Vec<_>>());
}

pub async fn item_size_limit_is_enforced_before_writing(fx: Fixture) {
    let t = &fx.table;
    let big = Item::new("P", "BIG", json!({ "blob": "x".repeat(ITEM_BYTES_MAX) }));
    let err = t
        .write(vec![
            WriteOp::put(Item::new("P", "SMALL", json!({}))),
            WriteOp::put(big),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ItemTooLarge { ref sk, .. } if sk == "BIG"),
        "{err:?}"
    );
    assert_eq!(t.get("P", "SMALL").await.unwrap(), None, "nothing written");
    // Comfortably under the limit is fine on every backend.
    let ok = Item::new(
        "P",
        "OK",
        json!({ "blob": "y".repeat(ITEM_BYTES_MAX - 2048) }),
    );
    t.write(vec![WriteOp::put(ok.clone())]).await.unwrap();
    assert_eq!(t.get("P", "OK").await.unwrap(), Some(ok));
}

pub async fn malformed_transactions_are_rejected_alike(fx: Fixture) {
    let t = &fx.table;
    let err = t.write(vec![]).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidTransaction(_)), "{err:?}");
    let twice = t
        .write(vec![
            WriteOp::put(Item::new("P", "X", json!({}))),
            WriteOp::delete("P", "X"),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(twice, StoreError::InvalidTransaction(ref m) if m.contains("second time")),
        "{twice:?}"
    );
    let too_many: Vec<WriteOp> = (0..101)
        .map(|i| WriteOp::put(Item::new("P", format!("N#{i}"), json!({}))))
        .collect();
    assert!(matches!(
        t.write(too_many).await.unwrap_err(),
        StoreError::InvalidTransaction(_)
    ));
    let empty_key = t
        .write(vec![WriteOp::put(Item::new("P", "", json!({})))])
        .await
        .unwrap_err();
    assert!(matches!(empty_key, StoreError::InvalidTransaction(_)));
    assert!(
        t.query(&Query::partition("P"))
            .await
            .unwrap()
            .items
            .is_empty(),
        "nothing written"
    );

    let hundred: Vec<WriteOp> = (0..100)
        .map(|i| WriteOp::put(Item::new("P", format!("N#{i:03}"), json!({ "i": i }))))
        .collect();
    t.write(hundred).await.unwrap();
    let all = t
        .query_all(&Query::prefix("P", "N#"), usize::MAX)
        .await
        .unwrap();
    assert_eq!(all.len(), 100);
}

/// `write_in_order`: each operation on its own condition, in order, stopping at the first that
/// fails (what came before it stays written, nothing after it is tried); malformed input is
/// refused before anything is written, as `write` refuses it.
pub async fn in_order_writes_stop_at_the_first_failed_condition(fx: Fixture) {
    let t = &fx.table;
    let all = t
        .write_in_order(vec![
            WriteOp::put_if_absent(Item::new("P", "A", json!({"v": "a"}))),
            WriteOp::put_if_absent(Item::new("P", "B", json!({"v": "b"}))),
        ])
        .await
        .unwrap();
    assert_eq!(all, 2);
    assert_eq!(
        t.get("P", "B").await.unwrap().unwrap().data,
        json!({"v": "b"})
    );

    // The second fails: the first is written, the third is not tried.
    let applied = t
        .write_in_order(vec![
            WriteOp::put_if_absent(Item::new("P", "C", json!({"v": "c"}))),
            WriteOp::put_if_absent(Item::new("P", "A", json!({"v": "a2"}))),
            WriteOp::put(Item::new("P", "D", json!({"v": "d"}))),
        ])
        .await
        .unwrap();
    assert_eq!(applied, 1);
    assert_eq!(
        t.get("P", "C").await.unwrap().unwrap().data,
        json!({"v": "c"})
    );
    assert_eq!(
        t.get("P", "A").await.unwrap().unwrap().data,
        json!({"v": "a"}),
        "the failed operation changed nothing"
    );
    assert_eq!(
        t.get("P", "D").await.unwrap(),
        None,
        "nothing after it is tried"
    );

    // The first fails: nothing is written; a version condition and a delete in order.
    let v = t.get("P", "B").await.unwrap().unwrap().version;
    assert_eq!(
        t.write_in_order(vec![
            WriteOp::check("P", "Z", Condition::Present),
            WriteOp::put(Item::new("P", "E", json!({}))),
        ])
        .await
        .unwrap(),
        0
    );
    assert_eq!(t.get("P", "E").await.unwrap(), None);
    let mut next = Item::new("P", "B", json!({"v": "b2"}));
    next.version = v + 1;
    assert_eq!(
        t.write_in_order(vec![
            WriteOp::put_if_version(next, v),
            WriteOp::delete("P", "C"),
        ])
        .await
        .unwrap(),
        2
    );
    assert_eq!(
        t.get("P", "B").await.unwrap().unwrap().data,
        json!({"v": "b2"})
    );
    assert_eq!(t.get("P", "C").await.unwrap(), None);

    // Malformed: refused whole, before the well-formed first operation is applied.
    let before = t.query(&Query::partition("P")).await.unwrap().items.len();
    for bad in [
        vec![],
        vec![
            WriteOp::put(Item::new("P", "F", json!({}))),
            WriteOp::put(Item::new("P", "", json!({}))),
        ],
        vec![
            WriteOp::put(Item::new("P", "F", json!({}))),
            WriteOp::delete("P", "F"),
        ],
        vec![
            WriteOp::put(Item::new("P", "F", json!({}))),
            WriteOp::put(Item::new(
                "P",
                "G",
                json!({ "big": "x".repeat(ITEM_BYTES_MAX) }),
            )),
        ],
    ] {
        let err = t.write_in_order(bad).await.unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::InvalidTransaction(_) | StoreError::ItemTooLarge { .. }
            ),
            "{err:?}"
        );
    }
    assert_eq!(
        t.query(&Query::partition("P")).await.unwrap().items.len(),
        before,
        "nothing written"
    );
}
