//! No silence: a message that fails every attempt gets one apology on its channel, recorded in
//! the visible transcript — once, however often the dead-letter path runs: on `steward serve`
//! (the in-process queue's dead-letter hook, the message re-driven and dead-lettered again) and
//! on the agent function (the last SQS receive, delivered twice). The failure is real: the
//! table refuses every model-transcript write, as a full or broken store would.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use steward_channels::{TelegramConfig, TelegramSender, telegram};
use steward_harness::dead_letter::APOLOGY;
use steward_harness::transcript::{self, SEEN_APOLOGY};
use steward_harness::{
    Agent, ChannelIdentity, ConversationKey, Links, ModelSettings, TurnLimits, UserId, accounts,
    identity,
};
use steward_llm::{LlmClient, ScriptedClient};
use steward_store::{
    InProcessQueue, Item, ManualClock, Page, Query, QueueConfig, RECEIVES_MAX, SqliteTable,
    StoreError, Table, TokioSleeper, TurnQueue, WriteOp,
};
use steward_testkit::fake_api::FakeApi;
use steward_worker::agent_batch::{RetryPolicy, Senders, TurnWorker};

use crate::support::{tg_text, tiny_domain, wait_until};

/// A table that refuses every write of a model-transcript row: every turn fails at its first
/// (the person's row, stored with the model's first answer), while the visible transcript, the
/// claim and the ledgers still work.
#[derive(Debug)]
struct NoModelRows(Arc<dyn Table>);

#[async_trait]
impl Table for NoModelRows {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.0.get(pk, sk).await
    }
    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.0.query(query).await
    }
    async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if ops.iter().any(|op| op.key().1.starts_with("MODEL#")) {
            return Err(StoreError::Backend("the disk is full".into()));
        }
        self.0.write(ops).await
    }
}

struct Rig {
    table: Arc<dyn Table>,
    worker: Arc<TurnWorker>,
    tg: FakeApi,
    model: ScriptedClient,
}

const CHAT: i64 = 4242;

async fn rig() -> Rig {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let clock = ManualClock::at_millis(now_ms);
    let inner: Arc<dyn Table> =
        Arc::new(SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap());
    let table: Arc<dyn Table> = Arc::new(NoModelRows(inner));
    let user = UserId::parse("u1").unwrap();
    accounts::create_account_with_id(table.as_ref(), &clock, user.clone(), "Ada", None)
        .await
        .unwrap();
    let ident = ChannelIdentity::parse("tg", &CHAT.to_string()).unwrap();
    identity::bind(table.as_ref(), &clock, &ident, &user)
        .await
        .unwrap();
    let model = ScriptedClient::new().text("never stored");
    let agent = Agent::new(
        Arc::clone(&table),
        Arc::new(clock.clone()),
        Some(Arc::new(model.clone()) as Arc<dyn LlmClient>),
        ModelSettings::new("claude-test"),
        TurnLimits::default(),
        tiny_domain(),
    );
    let tg = FakeApi::telegram(None).await;
    let mut config = TelegramConfig::new("123:TEST");
    config.api_base = tg.base.clone();
    let sender = TelegramSender::new(config, steward_channels::http_client().unwrap());
    let worker = TurnWorker::new(
        Arc::new(agent),
        Senders::new(None, Some(Arc::new(sender))),
        Links::new(None),
    )
    .with_retry(
        RetryPolicy {
            attempts_max: 1,
            ..RetryPolicy::default()
        },
        Arc::new(TokioSleeper),
    );
    Rig {
        table,
        worker: Arc::new(worker),
        tg,
        model,
    }
}

/// The queued body of a Telegram text message from the test chat.
fn body(update_id: i64, text: &str) -> String {
    let message = telegram::parse_update(&tg_text(update_id, CHAT, text))
        .unwrap()
        .unwrap();
    serde_json::to_string(&message).unwrap()
}

impl Rig {
    fn apologies(&self) -> usize {
        self.tg
            .sent_texts()
            .iter()
            .filter(|t| t.as_str() == APOLOGY)
            .count()
    }

    /// The visible apology of turn 1, if recorded.
    async fn recorded_apology(&self) -> Option<String> {
        transcript::get_seen(
            self.table.as_ref(),
            &ConversationKey::telegram(CHAT),
            1,
            SEEN_APOLOGY,
        )
        .await
        .unwrap()
        .and_then(|row| row.text)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_apologises_once_even_when_the_dead_letter_path_runs_twice() {
    let r = rig().await;
    let queue = InProcessQueue::start(
        Arc::clone(&r.table),
        r.worker.clone(),
        QueueConfig {
            attempts_max: 2,
            redelivery: vec![Duration::from_millis(10)],
            idle_worker: Duration::from_secs(5),
            sleeper: Arc::new(TokioSleeper),
        },
    )
    .await
    .unwrap();
    let body = body(700_001, "add a note called milk");
    queue
        .enqueue(&format!("tg:{CHAT}"), "700001", &body)
        .await
        .unwrap();
    wait_until("the message is dead-lettered", || async {
        queue.dead_letters().await.unwrap().len() == 1
    })
    .await;
    assert_eq!(r.apologies(), 1, "{:?}", r.tg.sent_texts());
    assert_eq!(r.recorded_apology().await.as_deref(), Some(APOLOGY));

    // The operator re-drives it; it fails again and is dead-lettered again: no second apology.
    let seq = queue.dead_letters().await.unwrap()[0].seq;
    assert!(queue.redrive(seq).await.unwrap());
    wait_until("the re-driven message is dead-lettered again", || async {
        queue
            .dead_letters()
            .await
            .unwrap()
            .iter()
            .any(|d| d.seq != seq)
    })
    .await;
    assert_eq!(r.apologies(), 1, "{:?}", r.tg.sent_texts());
    assert_eq!(r.tg.sent_texts(), [APOLOGY]);
    assert_eq!(
        r.model.calls(),
        4,
        "each of the four attempts failed at the write after its one model call"
    );
    queue.shutdown(Duration::from_secs(1)).await;
}

/// An SQS record of the test chat's message on its `receive`th receive.
fn record(body: &str, receive: u32) -> SqsEvent {
    let mut m = SqsMessage::default();
    m.message_id = Some("sqs-1".into());
    m.receipt_handle = Some("rh-1".into());
    m.body = Some(body.to_owned());
    m.attributes
        .insert("ApproximateReceiveCount".into(), receive.to_string());
    m.attributes
        .insert("MessageGroupId".into(), format!("tg:{CHAT}"));
    let mut e = SqsEvent::default();
    e.records = vec![m];
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_apologises_on_the_last_receive_once_across_two_deliveries() {
    let r = rig().await;
    let body = body(700_002, "add a note called bread");
    // Earlier receives fail without a word: the queue will try again.
    for receive in 1..RECEIVES_MAX {
        let out = r.worker.handle_batch(record(&body, receive), None).await;
        assert_eq!(out.batch_item_failures.len(), 1);
        assert_eq!(r.apologies(), 0, "receive {receive}");
    }
    // The last receive fails too: the person is told before the record goes back.
    let out = r
        .worker
        .handle_batch(record(&body, RECEIVES_MAX), None)
        .await;
    assert_eq!(
        out.batch_item_failures.len(),
        1,
        "still reported, to be dead-lettered"
    );
    assert_eq!(r.apologies(), 1);
    assert_eq!(r.recorded_apology().await.as_deref(), Some(APOLOGY));
    // A redelivery of that last receive (SQS is at least once) sends nothing more.
    r.worker
        .handle_batch(record(&body, RECEIVES_MAX), None)
        .await;
    r.worker
        .handle_batch(record(&body, RECEIVES_MAX + 1), None)
        .await;
    assert_eq!(r.tg.sent_texts(), [APOLOGY]);
}
