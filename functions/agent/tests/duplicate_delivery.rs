//! A message delivered twice at once — the event source mapping's own retry, or a heartbeat
//! that failed long enough for the record to come back while its first copy still runs — is
//! harmless: the claim (the INBOX row) turns the second copy into a resume of the same turn,
//! the stored model rows make both copies follow one transcript, and the tool's effect record
//! lets the change happen once. What can repeat is the reply: both copies send the one stored
//! reply, so the person may see it twice (replies are at least once), never two different ones.

#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::json;
use steward_llm::{CreateRequest, CreateResponse, LlmClient, LlmError, ScriptedClient};
use steward_store::Query;
use tokio::sync::Barrier;

/// The scripted model, holding its first two calls until both have arrived: the two copies
/// are then certainly inside the same turn at the same time.
struct Rendezvous {
    script: ScriptedClient,
    arrivals: AtomicUsize,
    barrier: Barrier,
}

#[async_trait]
impl LlmClient for Rendezvous {
    async fn create(&self, request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        if self.arrivals.fetch_add(1, Ordering::SeqCst) < 2 {
            self.barrier.wait().await;
        }
        self.script.create(request).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_copies_of_one_message_at_once_change_the_data_once() {
    let (table, clock, user) = support::store().await;
    let create = json!({ "name": "Summer Fest", "dates": ["2027-07-03"] });
    // Each copy may call the model at each step; every scripted answer at a step is the same,
    // as a replayed turn would see it.
    let script = ScriptedClient::new()
        .tool_use("toolu_summer", "create_event", create.clone())
        .tool_use("toolu_summer", "create_event", create)
        .text("Summer Fest is set up as a draft.")
        .text("Summer Fest is set up as a draft.");
    let model = Arc::new(Rendezvous {
        script: script.clone(),
        arrivals: AtomicUsize::new(0),
        barrier: Barrier::new(2),
    });
    let agent = support::agent(&table, &clock, model);
    let sender = support::RecordingSender::refusing(0);
    let worker = Arc::new(support::worker(agent, sender.clone()));
    let body = support::body(&support::inbound(7001, "Set up Summer Fest on 3 July 2027"));

    let (first, second) = tokio::join!(
        tokio::spawn({
            let (worker, body) = (worker.clone(), body.clone());
            async move { worker.handle_body(&body).await }
        }),
        tokio::spawn({
            let (worker, body) = (worker.clone(), body.clone());
            async move { worker.handle_body(&body).await }
        }),
    );
    first.unwrap().unwrap();
    second.unwrap().unwrap();

    let user_pk = format!("USER#{user}");
    let records = table
        .query(&Query::prefix(&user_pk, "EVENT#"))
        .await
        .unwrap()
        .items;
    let events: Vec<_> = records
        .iter()
        .filter(|item| item.sk.matches('#').count() == 1)
        .collect();
    assert_eq!(events.len(), 1, "one event created: {records:?}");
    let conversation = table
        .query(&Query::prefix(format!("CONV#tg:{}", support::CHAT), ""))
        .await
        .unwrap()
        .items;
    let effects = conversation
        .iter()
        .filter(|item| item.sk.starts_with("EFFECT#"))
        .count();
    assert_eq!(effects, 1, "one effect record");
    let inbox = conversation
        .iter()
        .filter(|item| item.sk.starts_with("INBOX#"))
        .count();
    assert_eq!(
        inbox, 1,
        "one claim: the second copy resumed the first's turn"
    );

    assert_eq!(
        sender.sent(),
        [
            "Summer Fest is set up as a draft.",
            "Summer Fest is set up as a draft."
        ],
        "both copies send the one stored reply: at least once, never two different replies"
    );

    // A third copy after both finished is a duplicate: nothing runs, nothing is sent.
    worker.handle_body(&body).await.unwrap();
    assert_eq!(sender.sent().len(), 2);
}
