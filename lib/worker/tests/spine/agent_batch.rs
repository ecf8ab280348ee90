//! The agent function's batch with FIFO SQS events: per-group order, failures held back with
//! every later record of their group, other groups carrying on — with a handler closure, and
//! with the real turn worker behind a fake Telegram API (a retryable send failure is retried
//! within the delivery before it is reported).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use serde_json::json;
use steward_channels::telegram;
use steward_worker::agent_batch::{Invocation, RETRY_ATTEMPTS_MAX, process_batch};

use crate::support::{Stack, tg_text};

/// A FIFO SQS event as Lambda delivers it: (message id, group, body) per record.
fn fifo_event(records: &[(&str, &str, &str)]) -> SqsEvent {
    let records: Vec<_> = records
        .iter()
        .enumerate()
        .map(|(i, (id, group, body))| {
            json!({
                "messageId": id,
                "receiptHandle": format!("rh-{id}"),
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "1750200000000",
                    "SequenceNumber": format!("{}", 18_849_496_460_467_696_128_u128 + i as u128),
                    "MessageGroupId": group,
                    "SenderId": "AIDAIO23YVJENQZJOL4VO",
                    "MessageDeduplicationId": format!("{group}|{id}"),
                    "ApproximateFirstReceiveTimestamp": "1750200000001"
                },
                "messageAttributes": {},
                "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:steward-turns.fifo",
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

fn failed_ids(response: &SqsBatchResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_holds_back_the_rest_of_its_group_and_the_other_groups_carry_on() {
    let event = fifo_event(&[
        ("a1", "wa:1", "ok"),
        ("b1", "tg:2", "ok"),
        ("a2", "wa:1", "fail"),
        ("b2", "tg:2", "ok"),
        ("a3", "wa:1", "ok"),
        ("c1", "web:3", "fail"),
        ("b3", "tg:2", "ok"),
    ]);
    let log: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let active: Mutex<HashMap<String, usize>> = Mutex::new(HashMap::new());
    let overlap_in_group = Mutex::new(false);
    let max_groups_at_once = Mutex::new(0_usize);
    let response = process_batch(event, &Invocation::default(), |record| {
        let (log, active, overlap_in_group, max_groups_at_once) =
            (&log, &active, &overlap_in_group, &max_groups_at_once);
        async move {
            let group = record.attributes["MessageGroupId"].clone();
            {
                let mut a = active.lock().unwrap();
                let n = a.entry(group.clone()).or_default();
                *n += 1;
                if *n > 1 {
                    *overlap_in_group.lock().unwrap() = true;
                }
                let groups = a.values().filter(|v| **v > 0).count();
                let mut max = max_groups_at_once.lock().unwrap();
                *max = (*max).max(groups);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            *active.lock().unwrap().get_mut(&group).unwrap() -= 1;
            let id = record.message_id.clone().unwrap();
            log.lock().unwrap().push(id.clone());
            if record.body.as_deref() == Some("fail") {
                Err(format!("{id} failed"))
            } else {
                Ok(())
            }
        }
    })
    .await;
    assert_eq!(failed_ids(&response), ["a2", "a3", "c1"]);
    let log = log.into_inner().unwrap();
    assert!(
        !log.contains(&"a3".to_owned()),
        "a record after a failure never runs: {log:?}"
    );
    let order_of = |prefix: char| -> Vec<&str> {
        log.iter()
            .filter(|id| id.starts_with(prefix))
            .map(String::as_str)
            .collect()
    };
    assert_eq!(order_of('a'), ["a1", "a2"]);
    assert_eq!(order_of('b'), ["b1", "b2", "b3"]);
    assert!(
        !*overlap_in_group.lock().unwrap(),
        "two records of one group ran at once"
    );
    assert!(
        *max_groups_at_once.lock().unwrap() >= 2,
        "groups ran concurrently"
    );
    // The response serializes as Lambda expects.
    let wire = serde_json::to_value(&response).unwrap();
    assert_eq!(wire["batchItemFailures"][0]["itemIdentifier"], "a2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_worker_reports_a_retryable_send_failure_and_its_groups_later_records() {
    // Telegram refuses (500) every message to chat 666; chat 777 works.
    let s = Stack::with_failing_telegram_chat(Some(666)).await;
    s.bind("tg", "666").await;
    s.bind("tg", "777").await;
    for text in ["to 666", "to 777 one", "to 777 two"] {
        s.reply(text);
    }
    let body = |update: i64, from: i64, text: &str| {
        let raw = tg_text(update, from, text);
        let message = telegram::parse_update(&raw).unwrap().unwrap();
        serde_json::to_string(&message).unwrap()
    };
    let (m1, m2, n1, n2) = (
        body(1, 666, "first"),
        body(2, 666, "second"),
        body(3, 777, "one"),
        body(4, 777, "two"),
    );
    let event = fifo_event(&[
        ("m1", "tg:666", &m1),
        ("n1", "tg:777", &n1),
        ("m2", "tg:666", &m2),
        ("n2", "tg:777", &n2),
        ("junk", "tg:888", "not an inbound message"),
    ]);
    let response = s.worker.handle_batch(event, None).await;
    assert_eq!(
        failed_ids(&response),
        ["m1", "m2"],
        "junk is dropped, not retried"
    );
    let sends_to = |chat: i64| {
        s.tg.requests()
            .iter()
            .filter(|r| r.method() == "sendMessage" && r.body["chat_id"] == chat)
            .count()
    };
    assert_eq!(sends_to(777), 2, "the other group carried on");
    assert_eq!(
        sends_to(666),
        RETRY_ATTEMPTS_MAX as usize,
        "m1's reply was retried within the delivery, m2's never attempted"
    );
    assert_eq!(
        s.retry_waits.waits().len(),
        RETRY_ATTEMPTS_MAX as usize - 1,
        "a short wait before each retry"
    );
    assert_eq!(
        s.model.calls(),
        3,
        "m2 never reached the model, and m1's retries resent its stored reply without one"
    );
}
