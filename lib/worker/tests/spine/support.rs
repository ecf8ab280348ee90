//! The whole spine in one process: the webhook router on loopback → the in-process queue over
//! SQLite → the turn worker (conversation layer + `Agent` with a scripted model and a tiny test
//! domain) → fake WhatsApp and Telegram APIs on loopback. One `ManualClock` drives the queue's
//! dedupe window and the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use steward_channels::{
    Secret, TelegramConfig, TelegramSender, WhatsappConfig, WhatsappSender, telegram, whatsapp,
};
use steward_harness::{
    Agent, ChannelIdentity, ContextSource, Ctx, Domain, Links, ModelSettings, Registry,
    ServiceError, TurnLimits, UserId, accounts, identity,
};
use steward_llm::{
    ContentBlock, CreateRequest, CreateResponse, LlmClient, LlmError, ScriptedClient, StopReason,
};
use steward_store::testing::RecordingSleeper;
use steward_store::{
    Handler, HandlerError, InProcessQueue, ManualClock, Query, QueueConfig, QueuedMessage,
    SqliteTable, Table, TokioSleeper, TurnQueue,
};
use steward_webhook::{self as webhooks, WebhookState, WhatsappSecrets};
use steward_worker::agent_batch::{RetryPolicy, Senders, TurnWorker};

use steward_testkit::fake_api::FakeApi;

pub use steward_testkit::webhooks::{
    APP_SECRET, TG_SECRET, VERIFY_TOKEN, now_secs, tg_text, wa_button, wa_text,
};

pub const PUBLIC_URL: &str = "https://steward.test";

/// A context block naming the user and channel.
pub struct TinyContext;

#[async_trait]
impl ContextSource for TinyContext {
    async fn context(
        &self,
        ctx: &Ctx,
        _account: Option<&steward_harness::Profile>,
        channel: &steward_harness::ChannelName,
        _active: Option<&str>,
    ) -> Result<String, ServiceError> {
        Ok(format!("User: {} · channel: {channel}", ctx.user()))
    }
}

/// A domain with no tools: these tests are about the spine, not the tools.
pub fn tiny_domain() -> Domain {
    Domain {
        product: "Steward".into(),
        prompt: "# Test\nA test domain without tools.".into(),
        registry: Arc::new(Registry::new()),
        context: Arc::new(TinyContext),
    }
}

/// The scripted model behind a delay, counting how many calls overlap.
#[derive(Clone)]
pub struct SlowModel {
    pub script: ScriptedClient,
    delay: Duration,
    active: Arc<AtomicUsize>,
    pub max_active: Arc<AtomicUsize>,
}

impl SlowModel {
    pub fn new(script: ScriptedClient, delay: Duration) -> Self {
        Self {
            script,
            delay,
            active: Arc::default(),
            max_active: Arc::default(),
        }
    }
}

#[async_trait]
impl LlmClient for SlowModel {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_active.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let out = self.script.create(request).await;
        self.active.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

/// The turn worker, counting the messages the queue hands it.
struct Counting {
    worker: Arc<TurnWorker>,
    handled: Arc<AtomicUsize>,
}

#[async_trait]
impl Handler for Counting {
    async fn handle(&self, message: QueuedMessage) -> Result<(), HandlerError> {
        self.handled.fetch_add(1, Ordering::SeqCst);
        self.worker.handle(message).await
    }

    async fn dead_lettered(&self, message: QueuedMessage, error: &str) {
        self.worker.dead_lettered(message, error).await;
    }
}

/// The running spine.
pub struct Stack {
    pub base: String,
    pub http: reqwest::Client,
    pub clock: ManualClock,
    pub table: Arc<dyn Table>,
    pub model: ScriptedClient,
    pub slow: SlowModel,
    pub user: UserId,
    pub wa: FakeApi,
    pub tg: FakeApi,
    pub worker: Arc<TurnWorker>,
    /// Deliveries the queue made to the worker (attempts included).
    pub handled: Arc<AtomicUsize>,
    /// The waits the worker's retries within a delivery asked for (recorded, not taken).
    pub retry_waits: Arc<RecordingSleeper>,
}

impl Stack {
    pub async fn start() -> Self {
        Self::with_failing_telegram_chat(None).await
    }

    /// The spine, with the fake Telegram API failing every message to `fail_chat`.
    pub async fn with_failing_telegram_chat(fail_chat: Option<i64>) -> Self {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let clock = ManualClock::at_millis(now_ms);
        let table: Arc<dyn Table> =
            Arc::new(SqliteTable::in_memory_with_clock(Arc::new(clock.clone())).unwrap());
        let user = UserId::parse("u1").unwrap();
        accounts::create_account_with_id(
            table.as_ref(),
            &clock,
            user.clone(),
            "Ada",
            Some("Europe/Berlin"),
        )
        .await
        .unwrap();

        let model = ScriptedClient::new();
        let slow = SlowModel::new(model.clone(), Duration::from_millis(60));
        let agent = Agent::new(
            Arc::clone(&table),
            Arc::new(clock.clone()),
            Some(Arc::new(slow.clone()) as Arc<dyn LlmClient>),
            ModelSettings::new("claude-test"),
            TurnLimits::default(),
            tiny_domain(),
        );

        let wa = FakeApi::whatsapp().await;
        let tg = FakeApi::telegram(fail_chat).await;
        let http = steward_channels::http_client().unwrap();
        let mut wa_config = WhatsappConfig::new("PHONE_ID", "wa-token");
        wa_config.api_base = wa.base.clone();
        let mut tg_config = TelegramConfig::new("123:TEST");
        tg_config.api_base = tg.base.clone();
        let senders = Senders::new(
            Some(Arc::new(WhatsappSender::new(wa_config, http.clone()))),
            Some(Arc::new(TelegramSender::new(tg_config, http))),
        );
        let links = Links::new(Some(PUBLIC_URL)).with_first_request("make a test");
        let retry_waits = RecordingSleeper::new();
        let worker = Arc::new(
            TurnWorker::new(Arc::new(agent), senders, links)
                .with_retry(RetryPolicy::default(), retry_waits.clone()),
        );

        let handled = Arc::new(AtomicUsize::new(0));
        let counting = Arc::new(Counting {
            worker: worker.clone(),
            handled: handled.clone(),
        });
        let queue = InProcessQueue::start_with_clock(
            Arc::clone(&table),
            counting,
            QueueConfig {
                attempts_max: 3,
                redelivery: vec![Duration::from_millis(20), Duration::from_millis(100)],
                idle_worker: Duration::from_secs(5),
                sleeper: Arc::new(TokioSleeper),
            },
            Arc::new(clock.clone()),
        )
        .await
        .unwrap();
        let state = WebhookState {
            queue: Arc::new(queue) as Arc<dyn TurnQueue>,
            whatsapp: Some(WhatsappSecrets {
                app_secret: Secret::new(APP_SECRET),
                verify_token: Secret::new(VERIFY_TOKEN),
            }),
            telegram: Some(Secret::new(TG_SECRET)),
        };
        let app = webhooks::routes(state).merge(steward_edge::health::routes());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            base: format!("http://{addr}"),
            http: steward_net::client_builder().build().unwrap(),
            clock,
            table,
            model,
            slow,
            user,
            wa,
            tg,
            worker,
            handled,
            retry_waits,
        }
    }

    /// Binds `identity` (`wa`/`tg`, external id) to the stack's user.
    pub async fn bind(&self, channel: &str, external: &str) {
        let identity = ChannelIdentity::parse(channel, external).unwrap();
        identity::bind(self.table.as_ref(), &self.clock, &identity, &self.user)
            .await
            .unwrap();
    }

    /// The model answers the next call with `text`.
    pub fn reply(&self, text: &str) {
        self.model.push(Ok(CreateResponse::new(
            vec![ContentBlock::text(text)],
            StopReason::EndTurn,
        )));
    }

    /// POSTs a WhatsApp webhook body, signed.
    pub async fn post_whatsapp(&self, body: &[u8]) -> u16 {
        self.post_whatsapp_signed(body, &whatsapp::sign(body, APP_SECRET.as_bytes()))
            .await
    }

    /// POSTs a WhatsApp webhook body with the given signature header.
    pub async fn post_whatsapp_signed(&self, body: &[u8], signature: &str) -> u16 {
        self.http
            .post(format!("{}/webhooks/whatsapp", self.base))
            .header(whatsapp::SIGNATURE_HEADER, signature)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// POSTs a Telegram update with the right secret.
    pub async fn post_telegram(&self, body: &[u8]) -> u16 {
        self.http
            .post(format!("{}/webhooks/telegram", self.base))
            .header(telegram::SECRET_HEADER, TG_SECRET)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// Messages still queued (not yet handled successfully).
    pub async fn queued(&self) -> usize {
        self.table
            .query(&Query::prefix("QUEUE", "MSG#"))
            .await
            .unwrap()
            .items
            .len()
    }

    /// Waits until every queued message is handled, then a little longer for stragglers.
    pub async fn settle(&self) {
        wait_until("the queue drained", || async { self.queued().await == 0 }).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    /// The text of the user message of the model's `n`th request.
    pub fn user_text_of_request(&self, n: usize) -> String {
        let request = &self.model.requests()[n];
        serde_json::to_string(&request.messages.last().unwrap().content).unwrap()
    }
}

/// Polls `cond` every 10 ms for up to 10 s.
pub async fn wait_until<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..1000 {
        if cond().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Paragraphs of `n` characters each, numbered, so order can be checked after a split.
pub fn long_text(paragraphs: usize, n: usize) -> String {
    (0..paragraphs)
        .map(|i| {
            let word = format!("p{i}w ");
            word.repeat(n / word.len())
        })
        .map(|p| p.trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `text` without whitespace, to compare a split reply with its whole.
pub fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
