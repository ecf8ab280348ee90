//! The batch rules with a fake [`MessageVisibility`] and, where time matters, tokio's paused
//! clock (virtual time: nothing here waits for real, and nothing asserts on elapsed time).

use std::sync::Mutex;

use async_trait::async_trait;
use steward_store::{VisibilityChange, VisibilityError};

use super::*;

fn record(id: &str, group: Option<&str>) -> SqsMessage {
    received(id, group, 1)
}

/// A record on its `receive`th receive.
fn received(id: &str, group: Option<&str>, receive: u32) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.receipt_handle = Some(format!("rh-{id}"));
    m.body = Some(id.to_owned());
    m.attributes
        .insert(RECEIVE_COUNT_ATTRIBUTE.to_owned(), receive.to_string());
    if let Some(g) = group {
        m.attributes
            .insert(MESSAGE_GROUP_ATTRIBUTE.to_owned(), g.to_owned());
    }
    m
}

fn event(records: Vec<SqsMessage>) -> SqsEvent {
    let mut e = SqsEvent::default();
    e.records = records;
    e
}

fn ids(response: &SqsBatchResponse) -> Vec<&str> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Ok,
    Fail,
    Stall,
}

/// Records every `change_visibility` call; answers as told.
#[derive(Debug)]
struct FakeVisibility {
    calls: Mutex<Vec<Vec<VisibilityChange>>>,
    answer: Answer,
}

impl FakeVisibility {
    fn new(answer: Answer) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::new(Vec::new()),
            answer,
        })
    }

    fn calls(&self) -> Vec<Vec<(String, u64)>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|call| {
                call.iter()
                    .map(|c| (c.receipt_handle.clone(), c.timeout.as_secs()))
                    .collect()
            })
            .collect()
    }

    /// The calls that were heartbeats (every change a lease), and the others.
    fn beats_and_rest(&self, lease: Duration) -> (usize, Vec<Vec<(String, u64)>>) {
        let calls = self.calls();
        let beats = calls
            .iter()
            .filter(|c| c.iter().all(|(_, secs)| *secs == lease.as_secs()))
            .count();
        let rest = calls
            .into_iter()
            .filter(|c| !c.iter().all(|(_, secs)| *secs == lease.as_secs()))
            .collect();
        (beats, rest)
    }
}

#[async_trait]
impl MessageVisibility for FakeVisibility {
    async fn change_visibility(&self, changes: &[VisibilityChange]) -> Result<(), VisibilityError> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(changes.to_vec());
        match self.answer {
            Answer::Ok => Ok(()),
            Answer::Fail => Err(VisibilityError {
                failed: changes.iter().map(|c| c.receipt_handle.clone()).collect(),
                reason: "AWS.SimpleQueueService.Throttled".into(),
            }),
            Answer::Stall => std::future::pending().await,
        }
    }
}

fn with(visibility: &Arc<FakeVisibility>) -> Invocation {
    Invocation {
        visibility: Some(visibility.clone() as Arc<dyn MessageVisibility>),
        ..Invocation::default()
    }
}

/// Fails the records whose body starts with "fail".
async fn fail_some(m: SqsMessage) -> Result<(), String> {
    match m.body.as_deref() {
        Some(b) if b.starts_with("fail") => Err(format!("{b} failed")),
        _ => Ok(()),
    }
}

fn rh(id: &str, secs: u64) -> (String, u64) {
    (format!("rh-{id}"), secs)
}

#[tokio::test]
async fn records_without_a_group_stand_alone_and_panics_are_failures() {
    let event = event(vec![
        record("a", None),
        record("boom", None),
        record("c", None),
    ]);
    let response = process_batch(event, &Invocation::default(), |m| async move {
        if m.body.as_deref() == Some("boom") {
            panic!("handler bug");
        }
        Ok::<(), String>(())
    })
    .await;
    assert_eq!(ids(&response), ["boom"]);
}

#[tokio::test]
async fn an_empty_batch_has_no_failures_and_changes_no_visibility() {
    let visibility = FakeVisibility::new(Answer::Ok);
    let response = process_batch(SqsEvent::default(), &with(&visibility), |_m| async {
        Ok::<(), String>(())
    })
    .await;
    assert!(response.batch_item_failures.is_empty());
    assert!(visibility.calls().is_empty());
}

#[tokio::test]
async fn failed_records_and_their_held_back_records_come_back_by_receive_count() {
    let visibility = FakeVisibility::new(Answer::Ok);
    let event = event(vec![
        received("fail-a1", Some("g"), 1),
        received("ok-b1", Some("h"), 1),
        received("a2", Some("g"), 1),
        received("fail-c1", Some("k"), 2),
        received("fail-d1", Some("m"), 3),
        received("fail-e1", Some("n"), 4),
        received("fail-f1", Some("p"), 9),
    ]);
    let response = process_batch(event, &with(&visibility), fail_some).await;
    assert_eq!(
        ids(&response),
        ["fail-a1", "a2", "fail-c1", "fail-d1", "fail-e1", "fail-f1"]
    );
    let (beats, rest) = visibility.beats_and_rest(VISIBILITY_LEASE);
    assert_eq!(beats, 1, "one heartbeat at the start");
    assert_eq!(
        rest,
        [vec![
            rh("fail-a1", 5),
            rh("a2", 5),
            rh("fail-c1", 30),
            rh("fail-d1", 120),
            rh("fail-e1", 600),
            rh("fail-f1", 600),
        ]],
        "5 s, 30 s, 2 min, 10 min by receive count; a held-back record with its failed one"
    );
}

#[tokio::test]
async fn a_record_failing_its_last_receive_comes_back_at_once_for_the_dead_letter_queue() {
    let visibility = FakeVisibility::new(Answer::Ok);
    let event = event(vec![
        received("fail-x", Some("g"), RECEIVES_MAX),
        received("later", Some("g"), RECEIVES_MAX),
    ]);
    let response = process_batch(event, &with(&visibility), fail_some).await;
    assert_eq!(ids(&response), ["fail-x", "later"]);
    let (_, rest) = visibility.beats_and_rest(VISIBILITY_LEASE);
    assert_eq!(rest, [vec![rh("fail-x", 0), rh("later", 0)]]);
}

#[tokio::test]
async fn a_missing_or_unreadable_receive_count_counts_as_the_first() {
    let visibility = FakeVisibility::new(Answer::Ok);
    let mut unreadable = received("fail-u", Some("g"), 1);
    unreadable
        .attributes
        .insert(RECEIVE_COUNT_ATTRIBUTE.to_owned(), "many".to_owned());
    let mut missing = received("fail-m", Some("h"), 1);
    missing.attributes.remove(RECEIVE_COUNT_ATTRIBUTE);
    let response = process_batch(
        event(vec![unreadable, missing]),
        &with(&visibility),
        fail_some,
    )
    .await;
    assert_eq!(ids(&response), ["fail-u", "fail-m"]);
    let (_, rest) = visibility.beats_and_rest(VISIBILITY_LEASE);
    assert_eq!(rest, [vec![rh("fail-u", 5), rh("fail-m", 5)]]);
}

#[tokio::test]
async fn an_sqs_error_changing_visibility_never_loses_the_record() {
    let visibility = FakeVisibility::new(Answer::Fail);
    let event = event(vec![record("fail-1", Some("g")), record("2", Some("g"))]);
    let response = process_batch(event, &with(&visibility), fail_some).await;
    assert_eq!(ids(&response), ["fail-1", "2"], "still reported");
    let (_, rest) = visibility.beats_and_rest(VISIBILITY_LEASE);
    assert_eq!(rest, [vec![rh("fail-1", 5), rh("2", 5)]], "it was tried");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_visibility_call_is_abandoned_and_the_record_still_reported() {
    let visibility = FakeVisibility::new(Answer::Stall);
    let event = event(vec![record("fail-1", Some("g")), record("ok", Some("h"))]);
    let response = process_batch(event, &with(&visibility), fail_some).await;
    assert_eq!(ids(&response), ["fail-1"]);
    assert_eq!(
        visibility.calls().len(),
        2,
        "the heartbeat, then the change"
    );
}

#[tokio::test]
async fn without_visibility_failures_are_only_reported() {
    let event = event(vec![record("fail-1", Some("g")), record("2", Some("g"))]);
    let response = process_batch(event, &Invocation::default(), fail_some).await;
    assert_eq!(ids(&response), ["fail-1", "2"]);
}

#[tokio::test(start_paused = true)]
async fn the_heartbeat_keeps_the_batch_invisible_while_a_turn_runs() {
    let visibility = FakeVisibility::new(Answer::Ok);
    let event = event(vec![record("slow", Some("g")), record("quick", Some("h"))]);
    let response = process_batch(event, &with(&visibility), |m| async move {
        if m.body.as_deref() == Some("slow") {
            // Virtual time: beats at 0, 20, 40 and 60 s fall inside this turn.
            tokio::time::sleep(Duration::from_secs(70)).await;
        }
        Ok::<(), String>(())
    })
    .await;
    assert!(response.batch_item_failures.is_empty());
    let calls = visibility.calls();
    assert_eq!(calls.len(), 4, "{calls:?}");
    for call in calls {
        assert_eq!(
            call,
            [rh("slow", 60), rh("quick", 60)],
            "every record, one lease"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_heartbeat_keeps_beating_after_a_failed_beat() {
    let visibility = FakeVisibility::new(Answer::Fail);
    let response = process_batch(
        event(vec![record("slow", Some("g"))]),
        &with(&visibility),
        |_m| async {
            tokio::time::sleep(Duration::from_secs(50)).await;
            Ok::<(), String>(())
        },
    )
    .await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(visibility.calls().len(), 3, "beats at 0, 20 and 40 s");
}

#[tokio::test(start_paused = true)]
async fn records_still_running_near_the_deadline_are_handed_back() {
    let visibility = FakeVisibility::new(Answer::Ok);
    let finished = Mutex::new(Vec::new());
    let invocation = Invocation {
        deadline: Some(Instant::now() + Duration::from_secs(45)),
        ..with(&visibility)
    };
    let event = event(vec![
        record("long", Some("g")),
        record("after-long", Some("g")),
        record("short", Some("h")),
    ]);
    let response = process_batch(event, &invocation, |m| {
        let finished = &finished;
        async move {
            if m.body.as_deref() == Some("long") {
                tokio::time::sleep(Duration::from_secs(600)).await;
            }
            finished
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(m.body.unwrap_or_default());
            Ok::<(), String>(())
        }
    })
    .await;
    assert_eq!(ids(&response), ["long", "after-long"]);
    assert_eq!(
        finished.into_inner().unwrap_or_default(),
        ["short"],
        "the long turn was stopped, the record after it never started"
    );
    let (beats, rest) = visibility.beats_and_rest(VISIBILITY_LEASE);
    assert_eq!(beats, 2, "beats at 0 and 20 s; handed back at 35 s");
    assert_eq!(rest, [vec![rh("long", 5), rh("after-long", 5)]]);
}

#[tokio::test]
async fn a_deadline_already_within_the_reserve_runs_nothing() {
    let invocation = Invocation {
        deadline: Some(Instant::now() + Duration::from_secs(1)),
        ..Invocation::default()
    };
    let ran = Mutex::new(0);
    let response = process_batch(event(vec![record("a", Some("g"))]), &invocation, |_m| {
        let ran = &ran;
        async move {
            *ran.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
            Ok::<(), String>(())
        }
    })
    .await;
    assert_eq!(ids(&response), ["a"]);
    assert_eq!(ran.into_inner().unwrap_or_default(), 0);
}

#[test]
fn lambda_deadlines_become_instants() {
    let before = Instant::now();
    assert!(lambda_deadline(0) >= before, "a past deadline is now");
    assert!(lambda_deadline(0) <= Instant::now());
    let in_a_minute = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(0))
        .unwrap_or(0)
        + 60_000;
    assert!(lambda_deadline(in_a_minute) > Instant::now() + Duration::from_secs(30));
}

#[test]
fn the_last_receive_comes_back_at_once_and_the_others_on_the_schedule() {
    let t = BatchTiming::default();
    let secs: Vec<u64> = (1..=6).map(|r| t.comes_back_in(r).as_secs()).collect();
    assert_eq!(secs, [5, 30, 120, 600, 0, 600]);
}
