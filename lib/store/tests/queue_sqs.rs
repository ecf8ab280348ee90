//! The SQS FIFO adapter against the emulator: order within a group, deduplication, ids that
//! SQS would refuse as they are, and changing received messages' visibility.

#![allow(clippy::unwrap_used, missing_docs)]

mod conformance;
mod support;

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use steward_store::{
    MessageVisibility, SqsQueue, TRACEPARENT, TRACESTATE, TraceContext, TurnQueue,
    VisibilityChange, sqs_safe_id,
};

async fn fifo_queue() -> Option<(aws_sdk_sqs::Client, String)> {
    let endpoint = support::emulator_endpoint()?;
    let config = support::emulator_config(&endpoint).await;
    let client = aws_sdk_sqs::Client::new(&config);
    let name = format!("{}.fifo", support::unique_name("steward-turns"));
    let url = client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "false")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    Some((client, url))
}

/// Receives until the queue is empty, deleting as it goes; returns (group, body) in order.
async fn drain(client: &aws_sdk_sqs::Client, url: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for _ in 0..50 {
        let got = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
            .send()
            .await
            .unwrap();
        let messages = got.messages.unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        for m in messages {
            let group = m
                .attributes
                .as_ref()
                .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                .cloned()
                .unwrap();
            out.push((group, m.body.clone().unwrap()));
            client
                .delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle.unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    out
}

#[tokio::test]
async fn messages_keep_their_order_within_a_group_and_duplicates_are_dropped() {
    let Some((client, url)) = fifo_queue().await else {
        return;
    };
    let queue = SqsQueue::new(client.clone(), &url);
    for i in 0..6 {
        queue
            .enqueue("wa:15551234567", &format!("wamid.A{i}"), &format!("a{i}"))
            .await
            .unwrap();
        queue
            .enqueue("tg:42", &format!("upd-{i}"), &format!("b{i}"))
            .await
            .unwrap();
    }
    // Provider retries: same dedupe ids again, within the window.
    queue
        .enqueue("wa:15551234567", "wamid.A0", "a0-retry")
        .await
        .unwrap();
    queue.enqueue("tg:42", "upd-5", "b5-retry").await.unwrap();

    let got = drain(&client, &url).await;
    let mut by_group: HashMap<String, Vec<String>> = HashMap::new();
    for (g, b) in got {
        by_group.entry(g).or_default().push(b);
    }
    assert_eq!(
        by_group["wa:15551234567"],
        ["a0", "a1", "a2", "a3", "a4", "a5"]
    );
    assert_eq!(by_group["tg:42"], ["b0", "b1", "b2", "b3", "b4", "b5"]);
}

#[tokio::test]
async fn the_same_dedupe_id_in_two_groups_is_two_messages() {
    let Some((client, url)) = fifo_queue().await else {
        return;
    };
    let queue = SqsQueue::new(client.clone(), &url);
    queue.enqueue("web:u1", "c-1", "from u1").await.unwrap();
    queue.enqueue("web:u2", "c-1", "from u2").await.unwrap();
    queue.enqueue("web:u1", "c-1", "u1 again").await.unwrap();
    let mut got = drain(&client, &url).await;
    got.sort();
    assert_eq!(
        got,
        [
            ("web:u1".to_string(), "from u1".to_string()),
            ("web:u2".to_string(), "from u2".to_string())
        ]
    );
}

#[tokio::test]
async fn ids_sqs_would_refuse_are_hashed_stably() {
    let Some((client, url)) = fifo_queue().await else {
        return;
    };
    let queue = SqsQueue::new(client.clone(), &url);
    let long_id = "x".repeat(200);
    queue.enqueue("web:Zoë Ñ", &long_id, "one").await.unwrap();
    queue
        .enqueue("web:Zoë Ñ", &long_id, "one again")
        .await
        .unwrap();
    let got = drain(&client, &url).await;
    assert_eq!(got, [(sqs_safe_id("web:Zoë Ñ"), "one".to_string())]);
}

/// Receives what is visible now (no wait): (body, receipt handle, receive count).
async fn receive_now(client: &aws_sdk_sqs::Client, url: &str) -> Vec<(String, String, String)> {
    let got = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
        .send()
        .await
        .unwrap();
    got.messages
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            let count = m
                .attributes
                .as_ref()
                .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                .cloned()
                .unwrap();
            (m.body.unwrap(), m.receipt_handle.unwrap(), count)
        })
        .collect()
}

#[tokio::test]
async fn visibility_changes_bring_messages_back_or_keep_them_hidden() {
    let Some((client, url)) = fifo_queue().await else {
        return;
    };
    let queue = SqsQueue::new(client.clone(), &url);
    // Twelve conversations: more than one ChangeMessageVisibilityBatch request holds.
    for i in 0..12 {
        queue
            .enqueue(&format!("g{i:02}"), "m", &format!("b{i:02}"))
            .await
            .unwrap();
    }
    let mut first = receive_now(&client, &url).await;
    first.extend(receive_now(&client, &url).await);
    assert_eq!(first.len(), 12);
    assert!(receive_now(&client, &url).await.is_empty(), "all in flight");

    // Six come back at once, six stay hidden for ten minutes.
    let changes: Vec<VisibilityChange> = first
        .iter()
        .enumerate()
        .map(|(i, (_, handle, _))| VisibilityChange {
            receipt_handle: handle.clone(),
            timeout: if i % 2 == 0 {
                Duration::ZERO
            } else {
                Duration::from_secs(600)
            },
        })
        .collect();
    queue.change_visibility(&changes).await.unwrap();
    let mut again = receive_now(&client, &url).await;
    again.extend(receive_now(&client, &url).await);
    let mut bodies: Vec<&str> = again.iter().map(|(b, _, _)| b.as_str()).collect();
    bodies.sort_unstable();
    let mut expected: Vec<&str> = first
        .iter()
        .step_by(2)
        .map(|(b, _, _)| b.as_str())
        .collect();
    expected.sort_unstable();
    assert_eq!(bodies, expected);
    assert!(again.iter().all(|(_, _, count)| count == "2"), "{again:?}");
}

#[tokio::test]
async fn a_failed_visibility_change_names_its_message_and_the_others_still_apply() {
    let Some((client, url)) = fifo_queue().await else {
        return;
    };
    let queue = SqsQueue::new(client.clone(), &url);
    queue.enqueue("g", "m", "body").await.unwrap();
    let (_, handle, _) = receive_now(&client, &url).await.remove(0);
    let err = queue
        .change_visibility(&[
            VisibilityChange {
                receipt_handle: "not-a-receipt-handle".into(),
                timeout: Duration::ZERO,
            },
            VisibilityChange {
                receipt_handle: handle,
                timeout: Duration::ZERO,
            },
        ])
        .await
        .unwrap_err();
    assert_eq!(err.failed, ["not-a-receipt-handle"]);
    assert!(!err.reason.is_empty());
    assert_eq!(
        receive_now(&client, &url).await.len(),
        1,
        "the valid one applied"
    );
}

#[tokio::test]
async fn an_unreachable_queue_fails_every_change() {
    let Some((client, url)) = fifo_queue().await else {
        return;
    };
    let queue = SqsQueue::new(client, format!("{url}-missing"));
    let err = queue
        .change_visibility(&[VisibilityChange {
            receipt_handle: "rh".into(),
            timeout: Duration::from_secs(5),
        }])
        .await
        .unwrap_err();
    assert_eq!(err.failed, ["rh"]);
}

/// The trace context goes as String message attributes, and only when there is one.
#[tokio::test]
async fn the_trace_context_travels_as_message_attributes() {
    let Some((client, url)) = fifo_queue().await else {
        return;
    };
    let queue = SqsQueue::new(client.clone(), &url);
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    queue
        .enqueue_traced(
            "tg:1",
            "m1",
            "traced",
            &TraceContext::new(Some(parent), Some("vendor=abc")),
        )
        .await
        .unwrap();
    queue.enqueue("tg:1", "m2", "untraced").await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..10 {
        let got = client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .send()
            .await
            .unwrap();
        for m in got.messages.unwrap_or_default() {
            let attribute = |name: &str| {
                m.message_attributes
                    .as_ref()
                    .and_then(|a| a.get(name))
                    .and_then(|v| v.string_value.clone())
            };
            seen.push((
                m.body.clone().unwrap(),
                attribute(TRACEPARENT),
                attribute(TRACESTATE),
            ));
            client
                .delete_message()
                .queue_url(&url)
                .receipt_handle(m.receipt_handle.clone().unwrap())
                .send()
                .await
                .unwrap();
        }
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            (
                "traced".to_owned(),
                Some(parent.to_owned()),
                Some("vendor=abc".to_owned())
            ),
            ("untraced".to_owned(), None, None),
        ]
    );
}
