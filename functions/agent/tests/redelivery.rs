//! The deployed shape's retry timing against the SQS emulator (moto, `STEWARD_TEST_AWS_ENDPOINT`;
//! skipped without it), with real visibility semantics and the schedule scaled down to whole
//! seconds. A small poller plays the event source mapping: it receives one record at a time
//! (the template's batch size), hands it to the agent's batch handler and deletes it unless
//! it was reported. Nothing asserts on elapsed time: each test shows *which* visibility the
//! handler set and that the queue then behaved accordingly.

#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use steward_llm::ScriptedClient;
use steward_store::testing::{RecordingSleeper, emulator_config, emulator_endpoint, unique_name};
use steward_store::{
    MessageVisibility, RECEIVES_MAX, SqsQueue, TurnQueue, VisibilityChange, VisibilityError,
};
use steward_worker::agent_batch::{BatchTiming, Invocation, RetryPolicy, process_batch};

/// The redelivery schedule, scaled from 5 s, 30 s, 2 min, 10 min to 1, 2, 3, 4 s.
fn scaled_schedule() -> Vec<Duration> {
    (1..=4).map(Duration::from_secs).collect()
}

/// The real adapter, remembering every change asked of it.
#[derive(Debug)]
struct Recorded {
    queue: SqsQueue,
    calls: Mutex<Vec<Vec<VisibilityChange>>>,
}

impl Recorded {
    /// The changes that were not heartbeats (`lease`), one list per call, in seconds.
    fn schedule_changes(&self, lease: Duration) -> Vec<Vec<u64>> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|call| call.iter().any(|c| c.timeout != lease))
            .map(|call| call.iter().map(|c| c.timeout.as_secs()).collect())
            .collect()
    }

    fn calls(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

#[async_trait]
impl MessageVisibility for Recorded {
    async fn change_visibility(&self, changes: &[VisibilityChange]) -> Result<(), VisibilityError> {
        self.calls.lock().unwrap().push(changes.to_vec());
        self.queue.change_visibility(changes).await
    }
}

struct Emulated {
    client: aws_sdk_sqs::Client,
    url: String,
    dead_url: Option<String>,
    visibility: Arc<Recorded>,
}

/// A fresh FIFO queue whose visibility timeout is `visibility_secs`, with a dead-letter queue
/// after `max_receives` when given; None without the emulator.
async fn fifo_queue(visibility_secs: u32, max_receives: Option<u32>) -> Option<Emulated> {
    let endpoint = emulator_endpoint()?;
    let config = emulator_config(&endpoint).await;
    let client = aws_sdk_sqs::Client::new(&config);
    let create = |name: String| {
        client
            .create_queue()
            .queue_name(format!("{name}.fifo"))
            .attributes(QueueAttributeName::FifoQueue, "true")
            .attributes(QueueAttributeName::ContentBasedDeduplication, "false")
            .attributes(
                QueueAttributeName::VisibilityTimeout,
                visibility_secs.to_string(),
            )
    };
    let mut request = create(unique_name("steward-turns"));
    let mut dead_url = None;
    if let Some(max) = max_receives {
        let dlq = create(unique_name("steward-dead")).send().await.unwrap();
        let url = dlq.queue_url.unwrap();
        dead_url = Some(url.clone());
        let arn = client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap()[&QueueAttributeName::QueueArn]
            .clone();
        request = request.attributes(
            QueueAttributeName::RedrivePolicy,
            serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": max }).to_string(),
        );
    }
    let url = request.send().await.unwrap().queue_url.unwrap();
    let visibility = Arc::new(Recorded {
        queue: SqsQueue::new(client.clone(), &url),
        calls: Mutex::new(Vec::new()),
    });
    Some(Emulated {
        client,
        url,
        dead_url,
        visibility,
    })
}

impl Emulated {
    fn queue(&self) -> SqsQueue {
        SqsQueue::new(self.client.clone(), &self.url)
    }

    /// Receives up to one record as the event source mapping does (no wait).
    async fn receive(&self) -> Option<SqsMessage> {
        let got = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(1)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .unwrap();
        let m = got.messages.unwrap_or_default().into_iter().next()?;
        let mut record = SqsMessage::default();
        record.message_id = m.message_id;
        record.receipt_handle = m.receipt_handle;
        record.body = m.body;
        record.attributes = m
            .attributes
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.as_str().to_owned(), v))
            .collect::<HashMap<_, _>>();
        Some(record)
    }

    /// One delivery: receive, run `handle` on the one-record batch, delete unless reported.
    /// Returns (body, receive count, reported) or None when nothing was visible.
    async fn deliver<F, Fut>(&self, handle: F) -> Option<(String, u32, bool)>
    where
        F: FnOnce(SqsEvent) -> Fut,
        Fut: Future<Output = SqsBatchResponse>,
    {
        let record = self.receive().await?;
        let body = record.body.clone().unwrap_or_default();
        let receive: u32 = record.attributes["ApproximateReceiveCount"]
            .parse()
            .unwrap();
        let handle_of = record.receipt_handle.clone().unwrap();
        let mut event = SqsEvent::default();
        event.records = vec![record];
        let response = handle(event).await;
        let reported = !response.batch_item_failures.is_empty();
        if !reported {
            self.client
                .delete_message()
                .queue_url(&self.url)
                .receipt_handle(handle_of)
                .send()
                .await
                .unwrap();
        }
        Some((body, receive, reported))
    }

    async fn is_empty(&self) -> bool {
        let attributes = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap();
        [
            QueueAttributeName::ApproximateNumberOfMessages,
            QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        ]
        .iter()
        .all(|a| attributes[a] == "0")
    }
}

/// Polls `step` every 100 ms until it says done, for at most 300 rounds (a hang guard, not a
/// timing assertion: the scaled waits add up to a few seconds).
async fn poll_until<F, Fut>(what: &str, mut step: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..300 {
        if step().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("gave up waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_failing_twice_is_answered_after_two_steps_and_its_conversation_follows_in_order() {
    // The queue's own visibility timeout is long: only the handler's changes bring records back.
    let Some(q) = fifo_queue(900, None).await else {
        return;
    };
    let (table, clock, _user) = support::store().await;
    let model = ScriptedClient::new()
        .text("First answer.")
        .text("Second answer.");
    let agent = support::agent(&table, &clock, Arc::new(model.clone()));
    // Each delivery tries twice (one retry within it); four refused sends fail two deliveries.
    let sender = support::RecordingSender::refusing(4);
    let timing = BatchTiming {
        redelivery: scaled_schedule(),
        ..BatchTiming::default()
    };
    let worker = support::worker(agent, sender.clone())
        .with_retry(
            RetryPolicy {
                attempts_max: 2,
                ..RetryPolicy::default()
            },
            RecordingSleeper::new(),
        )
        .with_visibility(q.visibility.clone())
        .with_timing(timing.clone());
    let first = support::inbound(9001, "first");
    let second = support::inbound(9002, "second");
    let queue = q.queue();
    for m in [&first, &second] {
        queue
            .enqueue(
                &m.conversation_key(),
                &m.provider_message_id,
                &support::body(m),
            )
            .await
            .unwrap();
    }

    let deliveries = Mutex::new(Vec::new());
    poll_until("both messages answered", || async {
        if let Some((body, receive, reported)) =
            q.deliver(|event| worker.handle_batch(event, None)).await
        {
            let text = if body.contains("9001") {
                "first"
            } else {
                "second"
            };
            deliveries.lock().unwrap().push((text, receive, reported));
        }
        sender.sent().len() == 2
    })
    .await;

    assert_eq!(
        deliveries.into_inner().unwrap(),
        [
            ("first", 1, true),
            ("first", 2, true),
            ("first", 3, false),
            ("second", 1, false)
        ],
        "the failed message came back twice, then the later one, in order"
    );
    assert_eq!(
        q.visibility.schedule_changes(timing.lease),
        [vec![1], vec![2]],
        "back after the schedule's first two steps"
    );
    assert_eq!(sender.sent(), ["First answer.", "Second answer."]);
    assert_eq!(model.calls(), 2, "the retries resent the stored reply");
    assert!(q.is_empty().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_invocation_s_record_comes_back_within_the_lease() {
    // Ten minutes of queue visibility: the record can only come back this soon by its lease.
    let Some(q) = fifo_queue(600, None).await else {
        return;
    };
    q.queue().enqueue("tg:1", "m1", "work").await.unwrap();
    let record = q.receive().await.unwrap();
    let invocation = Invocation {
        visibility: Some(q.visibility.clone() as Arc<dyn MessageVisibility>),
        deadline: None,
        timing: BatchTiming {
            lease: Duration::from_secs(1),
            heartbeat_every: Duration::from_millis(300),
            ..BatchTiming::default()
        },
    };
    let mut event = SqsEvent::default();
    event.records = vec![record];
    let running = tokio::spawn(async move {
        process_batch(event, &invocation, |_m| {
            std::future::pending::<Result<(), String>>()
        })
        .await
    });
    poll_until("the first heartbeat", || async {
        q.visibility.calls() >= 2
    })
    .await;
    running.abort(); // the kill: no response, no more heartbeats
    let _ = running.await;

    let back = Mutex::new(None);
    poll_until("the record to come back", || async {
        let got = q.receive().await;
        let came = got.is_some();
        if came {
            *back.lock().unwrap() = got;
        }
        came
    })
    .await;
    let back = back.into_inner().unwrap().unwrap();
    assert_eq!(back.body.as_deref(), Some("work"));
    assert_eq!(back.attributes["ApproximateReceiveCount"], "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_message_is_dead_lettered_after_max_receives_and_its_group_moves_on() {
    let Some(q) = fifo_queue(900, Some(RECEIVES_MAX)).await else {
        return;
    };
    let queue = q.queue();
    queue.enqueue("tg:7", "p", "poison").await.unwrap();
    queue.enqueue("tg:7", "n", "next").await.unwrap();
    let invocation = Invocation {
        visibility: Some(q.visibility.clone() as Arc<dyn MessageVisibility>),
        deadline: None,
        timing: BatchTiming {
            redelivery: scaled_schedule(),
            ..BatchTiming::default()
        },
    };
    let deliveries = Mutex::new(Vec::new());
    poll_until("the next message handled", || async {
        let delivered = q
            .deliver(|event| {
                process_batch(event, &invocation, |m| async move {
                    match m.body.as_deref() {
                        Some("poison") => Err("this message fails every time".to_owned()),
                        _ => Ok(()),
                    }
                })
            })
            .await;
        if let Some(d) = delivered {
            deliveries.lock().unwrap().push(d);
        }
        deliveries
            .lock()
            .unwrap()
            .iter()
            .any(|(body, _, _)| body == "next")
    })
    .await;

    let deliveries = deliveries.into_inner().unwrap();
    let poison: Vec<u32> = deliveries
        .iter()
        .filter(|(b, _, _)| b == "poison")
        .map(|(_, receive, _)| *receive)
        .collect();
    assert_eq!(poison, (1..=RECEIVES_MAX).collect::<Vec<_>>());
    assert_eq!(
        q.visibility.schedule_changes(BatchTiming::default().lease),
        [vec![1], vec![2], vec![3], vec![4], vec![0]],
        "the schedule, then at once on the last receive so the queue dead-letters it"
    );
    assert_eq!(
        deliveries.last().map(|(b, r, rep)| (b.as_str(), *r, *rep)),
        Some(("next", 1, false))
    );
    assert!(q.is_empty().await, "the poison message left the queue");
    let dead = q
        .client
        .receive_message()
        .queue_url(q.dead_url.as_deref().unwrap())
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body.as_deref(), Some("poison"));
}
