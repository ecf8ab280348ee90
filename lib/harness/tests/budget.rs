//! Monthly budgets through whole turns: a runaway model stops within the budget and one call
//! with the cap's final answer; concurrent turns of one user overrun by at most one call; the
//! 80 % notice comes once; a user's own limits replace the default.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde_json::json;
use steward_channels::ChannelProfile;
use steward_harness::budget::{self, Budget, BudgetOverride, Limit};
use steward_harness::{
    Agent, ChannelName, ConversationKey, Domain, ModelSettings, TurnInput, TurnLimits, TurnOutcome,
    UserId, usage,
};
use steward_llm::{ContentBlock, CreateRequest, CreateResponse, LlmClient, LlmError, StopReason};
use steward_store::Clock;

use chat::rig::{NotesContext, RecOutbox};
use support::{World, notes};

/// A priced model id, so money budgets count.
const MODEL: &str = "claude-sonnet-4-5";

/// A model that always calls a tool (or, when `replies`, always answers), each call costing
/// `tokens` output tokens, optionally pausing first so concurrent turns interleave.
struct Runaway {
    tokens: u64,
    replies: bool,
    calls: AtomicU64,
    pause_ms: u64,
}

impl Runaway {
    fn new(tokens: u64, replies: bool, pause_ms: u64) -> Arc<Self> {
        Arc::new(Self {
            tokens,
            replies,
            calls: AtomicU64::new(0),
            pause_ms,
        })
    }
}

#[async_trait]
impl LlmClient for Runaway {
    async fn create(&self, _request: &CreateRequest) -> Result<CreateResponse, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.pause_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(self.pause_ms)).await;
        }
        let mut resp = if self.replies {
            CreateResponse::new(vec![ContentBlock::text("Done.")], StopReason::EndTurn)
        } else {
            // Different arguments each time, so no loop breaker ends the turn first.
            CreateResponse::new(
                vec![ContentBlock::tool_use(
                    format!("toolu_{n}"),
                    "get_note",
                    json!({ "id": format!("n{n}") }),
                )],
                StopReason::ToolUse,
            )
        };
        resp.usage.output_tokens = self.tokens;
        Ok(resp)
    }
}

fn agent(world: &World, model: Arc<Runaway>, budget: Budget) -> Agent {
    let domain = Domain {
        product: "Steward".into(),
        prompt: "# Notes\nThe user keeps notes.".into(),
        registry: Arc::new(notes::registry(Arc::new(notes::Calls::default()))),
        context: Arc::new(NotesContext),
    };
    Agent::new(
        Arc::clone(&world.table),
        world.clock_arc(),
        Some(model as Arc<dyn LlmClient>),
        ModelSettings::new(MODEL),
        TurnLimits {
            // Many messages in one clock hour: the budget, not the hourly cap, must stop it.
            messages_per_hour: 10_000,
            ..TurnLimits::default()
        },
        domain,
    )
    .with_budget(budget)
}

fn input(user: &UserId, chat: i64, id: &str) -> TurnInput {
    TurnInput {
        conversation: ConversationKey::telegram(chat),
        channel: ChannelName::parse("tg").unwrap(),
        user: user.clone(),
        message_id: id.into(),
        text: "go on".into(),
    }
}

fn text(outcome: &TurnOutcome) -> String {
    match outcome {
        TurnOutcome::Replied { reply, .. } => reply.text.clone().unwrap_or_default(),
        TurnOutcome::Duplicate => panic!("a duplicate"),
    }
}

/// A tiny seeded generator (xorshift), so each run's variation is reproducible.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

async fn month_usage(world: &World, user: &UserId) -> usage::MonthlyUsage {
    let month = usage::month_of(world.clock.now_millis());
    usage::get(world.table.as_ref(), user, &month)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_runaway_model_stops_within_the_budget_and_one_call_over_100_seeded_runs() {
    let mut seeds = Seeded(0x5eed_b0d9);
    for run in 0..100 {
        let world = World::new();
        let user = world.account("u1").await;
        let tokens = 50 + seeds.below(5_000);
        let by_money = run % 2 == 1;
        // Sonnet output is US$ 15 per million tokens: 15 micro-dollars a token.
        let per_call_micros = tokens * 15;
        let calls_allowed = 1 + seeds.below(40);
        let budget = if by_money {
            Budget {
                tokens: None,
                usd_micros: Some(per_call_micros * calls_allowed - seeds.below(per_call_micros)),
            }
        } else {
            Budget {
                tokens: Some(tokens * calls_allowed - seeds.below(tokens)),
                usd_micros: None,
            }
        };
        let model = Runaway::new(tokens, false, 0);
        let agent = agent(&world, Arc::clone(&model), budget);
        let outbox = RecOutbox::new(ChannelProfile::TELEGRAM);
        let cap = budget::cap_text(world.clock.now_millis());
        let mut last = String::new();
        for m in 0..100 {
            let out = agent
                .handle(&input(&user, 42, &format!("m{m}")), &outbox)
                .await
                .unwrap();
            last = text(&out);
            if last == cap {
                break;
            }
        }
        assert_eq!(last, cap, "run {run}: never capped");
        let used = month_usage(&world, &user).await;
        let calls = model.calls.load(Ordering::SeqCst);
        assert_eq!(used.calls, calls, "run {run}");
        // Every call started under the cap: the one that crossed it is the only overrun.
        assert_eq!(calls, calls_allowed, "run {run}: {budget:?}");
        if by_money {
            let limit = budget.usd_micros.unwrap();
            assert!(used.cost_micros >= limit, "run {run}");
            assert!(used.cost_micros < limit + per_call_micros, "run {run}");
        } else {
            let limit = budget.tokens.unwrap();
            assert!(used.total_tokens() >= limit, "run {run}");
            assert!(used.total_tokens() < limit + tokens, "run {run}");
        }
        // Capped means capped: the next message gets the same answer without a model call.
        let again = agent
            .handle(&input(&user, 42, "after"), &outbox)
            .await
            .unwrap();
        assert_eq!(text(&again), cap);
        assert_eq!(model.calls.load(Ordering::SeqCst), calls, "run {run}");
        assert_eq!(month_usage(&world, &user).await.reserved_by, None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_turns_of_one_user_overrun_by_at_most_one_call() {
    let world = World::new();
    let user = world.account("u1").await;
    let tokens = 100;
    let budget = Budget {
        tokens: Some(2_050),
        usd_micros: None,
    };
    let model = Runaway::new(tokens, false, 2);
    let agent = Arc::new(agent(&world, Arc::clone(&model), budget));
    let cap = budget::cap_text(world.clock.now_millis());
    let mut tasks = Vec::new();
    for chat in 0..6 {
        let (agent, user, cap) = (Arc::clone(&agent), user.clone(), cap.clone());
        tasks.push(tokio::spawn(async move {
            let outbox = RecOutbox::new(ChannelProfile::TELEGRAM);
            for m in 0..50 {
                let out = agent
                    .handle(&input(&user, chat, &format!("c{chat}m{m}")), &outbox)
                    .await
                    .unwrap();
                if text(&out) == cap {
                    return true;
                }
            }
            false
        }));
    }
    for task in tasks {
        assert!(task.await.unwrap(), "every conversation ends at the cap");
    }
    let used = month_usage(&world, &user).await;
    assert_eq!(used.calls, model.calls.load(Ordering::SeqCst));
    // 2 050 tokens at 100 a call: 21 calls, the last starting at 2 000 — never a 22nd.
    assert_eq!(used.total_tokens(), 2_100);
    assert_eq!(used.reserved_by, None);
}

#[tokio::test]
async fn the_80_percent_notice_comes_once_a_month() {
    let world = World::new();
    let user = world.account("u1").await;
    let model = Runaway::new(10, true, 0);
    let budget = Budget {
        tokens: Some(100),
        usd_micros: None,
    };
    let agent = agent(&world, Arc::clone(&model), budget);
    let outbox = RecOutbox::new(ChannelProfile::TELEGRAM);
    let notice = budget::notice_text(world.clock.now_millis());
    let mut replies = Vec::new();
    for m in 0..12 {
        let out = agent
            .handle(&input(&user, 42, &format!("m{m}")), &outbox)
            .await
            .unwrap();
        replies.push(text(&out));
    }
    let noticed: Vec<usize> = replies
        .iter()
        .enumerate()
        .filter(|(_, r)| r.contains(&notice))
        .map(|(i, _)| i)
        .collect();
    // The eighth answer brings usage to 80 of 100 tokens.
    assert_eq!(noticed, vec![7], "{replies:#?}");
    assert_eq!(replies[7], format!("{notice}\n\nDone."));
    assert_eq!(replies[10], budget::cap_text(world.clock.now_millis()));
    assert_eq!(model.calls.load(Ordering::SeqCst), 10);
}

#[tokio::test]
async fn a_users_own_budget_replaces_the_default_until_cleared() {
    let world = World::new();
    let user = world.account("u1").await;
    let other = world.account("u2").await;
    let model = Runaway::new(10, true, 0);
    let default = Budget {
        tokens: Some(10),
        usd_micros: None,
    };
    let table = world.table.as_ref();
    budget::set_override(
        table,
        &user,
        BudgetOverride {
            tokens: Some(Limit::Unlimited),
            usd_micros: None,
        },
    )
    .await
    .unwrap();
    budget::set_override(
        table,
        &user,
        BudgetOverride {
            tokens: None,
            usd_micros: Some(Limit::Cap(5_000_000)),
        },
    )
    .await
    .unwrap();
    assert_eq!(
        budget::effective(table, &user, default).await.unwrap(),
        Budget {
            tokens: None,
            usd_micros: Some(5_000_000)
        },
        "a later --usd keeps the earlier --tokens"
    );
    assert_eq!(
        budget::effective(table, &other, default).await.unwrap(),
        default
    );
    let agent = agent(&world, Arc::clone(&model), default);
    let outbox = RecOutbox::new(ChannelProfile::TELEGRAM);
    for m in 0..3 {
        let out = agent
            .handle(&input(&user, 42, &format!("m{m}")), &outbox)
            .await
            .unwrap();
        assert_eq!(text(&out), "Done.");
    }
    budget::clear_override(table, &user).await.unwrap();
    let out = agent
        .handle(&input(&user, 42, "m3"), &outbox)
        .await
        .unwrap();
    assert_eq!(text(&out), budget::cap_text(world.clock.now_millis()));
}

/// A usage record that does not parse is never taken for zero: with a budget the turn fails
/// before any model call (the budget cannot be checked), without one the turn is answered and
/// the call goes unrecorded; either way the stored record is left as it was for an operator.
#[tokio::test]
async fn a_usage_record_that_does_not_parse_stops_budgeted_calls_and_is_kept() {
    use steward_store::{Item, WriteOp};
    let world = World::new();
    let user = world.account("u1").await;
    let month = usage::month_of(world.clock.now_millis());
    let pk = steward_harness::keys::user_pk(&user);
    let sk = steward_harness::keys::usage_sk(&month);
    let corrupt = json!({ "calls": "many", "output_tokens": 999_999 });
    world
        .table
        .write(vec![WriteOp::put(Item::new(&pk, &sk, corrupt.clone()))])
        .await
        .unwrap();
    let stored = || async { world.table.get(&pk, &sk).await.unwrap().unwrap().data };

    let model = Runaway::new(10, true, 0);
    let budgeted = agent(
        &world,
        Arc::clone(&model),
        Budget {
            tokens: Some(1_000),
            usd_micros: None,
        },
    );
    let outbox = RecOutbox::new(ChannelProfile::TELEGRAM);
    let failed = budgeted.handle(&input(&user, 42, "m1"), &outbox).await;
    let error = format!("{:?}", failed.expect_err("the turn fails"));
    assert!(error.contains("does not parse"), "{error}");
    assert_eq!(model.calls.load(Ordering::SeqCst), 0, "no call unchecked");
    assert_eq!(stored().await, corrupt);
    assert!(
        usage::get(world.table.as_ref(), &user, &month)
            .await
            .is_err()
    );

    let unbudgeted = agent(&world, Arc::clone(&model), Budget::NONE);
    let out = unbudgeted
        .handle(&input(&user, 43, "m2"), &outbox)
        .await
        .unwrap();
    assert_eq!(text(&out), "Done.");
    assert_eq!(model.calls.load(Ordering::SeqCst), 1);
    assert_eq!(stored().await, corrupt, "not replaced by this call's usage");
}

/// A user's own budget that does not parse is an error naming it (their limits are never
/// silently the default's), and clearing it needs no read of it.
#[tokio::test]
async fn an_own_budget_that_does_not_parse_is_an_error_until_cleared() {
    use steward_store::{Item, WriteOp};
    let world = World::new();
    let user = world.account("u1").await;
    let table = world.table.as_ref();
    let pk = steward_harness::keys::user_pk(&user);
    world
        .table
        .write(vec![WriteOp::put(Item::new(
            &pk,
            steward_harness::keys::BUDGET_SK,
            json!({ "tokens": { "cap": "lots" } }),
        ))])
        .await
        .unwrap();
    let default = Budget {
        tokens: Some(100),
        usd_micros: None,
    };
    let error = budget::effective(table, &user, default)
        .await
        .expect_err("not taken for no budget of their own")
        .to_string();
    assert!(
        error.contains("does not parse") && error.contains("--clear"),
        "{error}"
    );
    assert!(
        budget::set_override(table, &user, BudgetOverride::default())
            .await
            .is_err()
    );
    budget::clear_override(table, &user).await.unwrap();
    assert_eq!(
        budget::effective(table, &user, default).await.unwrap(),
        default
    );
}
