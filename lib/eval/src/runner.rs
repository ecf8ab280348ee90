//! Running cases: each on a fresh in-memory SQLite store with its own manual clock and
//! organiser, starting records made through the registry (the service layer) as the organiser
//! on the web, then the person's messages and presses in order over the web-chat path
//! (`web_message` → `handle_inbound`, as the chat API enqueues them), then the expectations.

use std::sync::Arc;
use std::time::Instant;

use steward_channels::web::WebInput;
use steward_channels::{WebSender, button_id, web_message};
use steward_events::EventsConfig;
use steward_harness::{
    Actor, Agent, Ctx, Domain, InboundOutcome, Links, ModelSettings, ToolOutcome, TurnLimits,
    UserId, accounts, handle_inbound,
};
use steward_llm::LlmClient;
use steward_store::{Clock, ManualClock, SqliteTable, Table};

use crate::cost;
use crate::model::{CaseScript, Recorder, Tokens};
use crate::observe::Observed;
use crate::records::{read_records, resolve};
use crate::suite::{Case, Input, Suite};

/// How far the case's clock moves between two messages of the person: long enough that each
/// message is plainly later than the last, short enough that nothing lapses (confirmations
/// last an hour).
const TURN_GAP_MILLIS: i64 = 30_000;

/// The model id recorded for scripted runs.
pub const SCRIPTED_MODEL: &str = "scripted";

/// Which model answers.
#[derive(Clone)]
pub enum ModelChoice {
    /// Each case's scripted steps; a case without them is skipped.
    Scripted,
    /// A real model: the client and the settings of its requests. Scripted steps are ignored.
    Real {
        /// The client.
        client: Arc<dyn LlmClient>,
        /// The model id and request settings.
        settings: ModelSettings,
    },
}

impl ModelChoice {
    /// The model id, for the report and the cost estimate.
    pub fn model_id(&self) -> &str {
        match self {
            Self::Scripted => SCRIPTED_MODEL,
            Self::Real { settings, .. } => &settings.model,
        }
    }
}

/// How one run of a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held.
    Passed,
    /// The first unmet expectation, or what stopped the case.
    Failed(String),
    /// Not run, and why.
    Skipped(String),
}

/// One run of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRun {
    /// How it ended.
    pub outcome: Outcome,
    /// Messages of the person handled.
    pub turns: usize,
    /// Model calls made.
    pub model_calls: usize,
    /// Tokens used.
    pub tokens: Tokens,
    /// Estimated cost in dollars, when the model's price is known.
    pub cost_usd: Option<f64>,
    /// Wall time in milliseconds.
    pub wall_ms: u64,
}

/// Runs every case of `suite` `repeat` times (at least once), one after another; a case's
/// failure never stops the rest.
pub async fn run_suite(
    suite: &Suite,
    model: &ModelChoice,
    repeat: u32,
    events: &EventsConfig,
) -> Vec<(String, Vec<CaseRun>)> {
    let mut out = Vec::with_capacity(suite.cases.len());
    for case in &suite.cases {
        let mut runs = Vec::new();
        for _ in 0..repeat.max(1) {
            runs.push(run_case(case, suite.now_ms, model, events).await);
        }
        out.push((case.name.clone(), runs));
    }
    out
}

/// What a case leaves behind for the checks.
struct Progress {
    turns: usize,
    replies: Vec<String>,
}

/// Runs one case once.
pub async fn run_case(
    case: &Case,
    now_ms: i64,
    model: &ModelChoice,
    events: &EventsConfig,
) -> CaseRun {
    run_case_keeping_store(case, now_ms, model, events).await.0
}

/// The store a case ran on and its organiser, kept for a look afterwards (export, replay).
pub struct KeptStore {
    /// The case's store.
    pub table: Arc<dyn Table>,
    /// The organiser.
    pub user: UserId,
}

/// Runs one case once and hands back its store too (`None` when it could not be made).
pub async fn run_case_keeping_store(
    case: &Case,
    now_ms: i64,
    model: &ModelChoice,
    events: &EventsConfig,
) -> (CaseRun, Option<KeptStore>) {
    run_case_with_domain(case, now_ms, model, steward_events::domain(events)).await
}

/// Runs one case once with `domain` (its prompt and tools) and hands back its store too.
pub async fn run_case_with_domain(
    case: &Case,
    now_ms: i64,
    model: &ModelChoice,
    domain: Domain,
) -> (CaseRun, Option<KeptStore>) {
    let started = Instant::now();
    let mut run = CaseRun {
        outcome: Outcome::Passed,
        turns: 0,
        model_calls: 0,
        tokens: Tokens::default(),
        cost_usd: None,
        wall_ms: 0,
    };
    if matches!(model, ModelChoice::Scripted) && !case.is_scripted() {
        run.outcome = Outcome::Skipped("no scripted steps; runs with a real model only".into());
        return (run, None);
    }
    let clock = ManualClock::at_millis(now_ms);
    let clock_arc: Arc<dyn Clock> = Arc::new(clock.clone());
    let table: Arc<dyn Table> = match SqliteTable::in_memory_with_clock(Arc::clone(&clock_arc)) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            run.outcome = Outcome::Failed(format!("the throwaway store could not open: {e}"));
            return (run, None);
        }
    };
    let profile = match accounts::create_account(
        table.as_ref(),
        &clock,
        "Eval Organiser",
        Some(&case.timezone),
    )
    .await
    {
        Ok(p) => p,
        Err(e) => {
            run.outcome = Outcome::Failed(format!("the organiser's account: {e}"));
            return (run, None);
        }
    };
    let user = profile.user;
    let registry = Arc::clone(&domain.registry);
    let script = Arc::new(CaseScript::new(Arc::clone(&table), user.clone()));
    let (inner, settings): (Arc<dyn LlmClient>, ModelSettings) = match model {
        ModelChoice::Scripted => (
            Arc::clone(&script) as Arc<dyn LlmClient>,
            ModelSettings::new(SCRIPTED_MODEL),
        ),
        ModelChoice::Real { client, settings } => (Arc::clone(client), settings.clone()),
    };
    let recorder = Recorder::new(inner);
    let agent = Agent::new(
        Arc::clone(&table),
        Arc::clone(&clock_arc),
        Some(Arc::new(recorder.clone())),
        settings,
        TurnLimits::default(),
        domain,
    );

    let result = async {
        for (i, step) in case.setup.iter().enumerate() {
            let records = read_records(table.as_ref(), &user)
                .await
                .map_err(|e| Stopped::before_turns(format!("setup step {}: {e}", i + 1)))?;
            let input = resolve(&step.input, &records).map_err(|e| {
                Stopped::before_turns(format!("setup step {} ({}): {e}", i + 1, step.tool))
            })?;
            let ctx = Ctx::new(
                Arc::clone(&table),
                Arc::clone(&clock_arc),
                user.clone(),
                Actor::User,
            );
            match registry.call(ctx, &step.tool, input).await {
                Ok(ToolOutcome::Ok(_)) => {}
                Ok(ToolOutcome::Err(e)) => {
                    return Err(Stopped::before_turns(format!(
                        "setup step {} ({}) failed: {}",
                        i + 1,
                        step.tool,
                        e.message
                    )));
                }
                Err(unknown) => {
                    return Err(Stopped::before_turns(format!(
                        "setup step {}: no tool {}",
                        i + 1,
                        unknown.name
                    )));
                }
            }
        }
        let progress = drive(case, model, &agent, &script, &recorder, &clock, &user).await?;
        Ok::<Progress, Stopped>(progress)
    }
    .await;

    run.model_calls = recorder.model_calls();
    run.tokens = recorder.tokens();
    run.cost_usd = cost::estimate(model.model_id(), &run.tokens);
    run.outcome = match result {
        Err(Stopped { turns, why }) => {
            run.turns = turns;
            Outcome::Failed(why)
        }
        Ok(progress) => {
            run.turns = progress.turns;
            match Observed::read(
                table.as_ref(),
                &user,
                recorder.tool_calls(),
                progress.replies,
            )
            .await
            {
                Err(e) => Outcome::Failed(format!("reading the outcome: {e}")),
                Ok(observed) => first_unmet(case, &observed),
            }
        }
    };
    run.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    (run, Some(KeptStore { table, user }))
}

/// Why a case stopped before its checks, and after how many turns.
struct Stopped {
    turns: usize,
    why: String,
}

impl Stopped {
    fn before_turns(why: String) -> Self {
        Self { turns: 0, why }
    }
}

fn first_unmet(case: &Case, observed: &Observed) -> Outcome {
    for (i, expectation) in case.expect.iter().enumerate() {
        if let Err(why) = observed.check(expectation) {
            return Outcome::Failed(format!("expect {}: {expectation} — {why}", i + 1));
        }
    }
    Outcome::Passed
}

/// Sends the case's messages in order.
async fn drive(
    case: &Case,
    model: &ModelChoice,
    agent: &Agent,
    script: &CaseScript,
    recorder: &Recorder,
    clock: &ManualClock,
    user: &UserId,
) -> Result<Progress, Stopped> {
    let links = Links::new(None);
    let mut replies = Vec::new();
    let mut buttons: Vec<String> = Vec::new();
    for (i, turn) in case.turns.iter().enumerate() {
        let n = i + 1;
        // A turn that could not start counts the turns before it; one that ran counts itself.
        let stop = |why: String| Stopped {
            turns: i,
            why: format!("turn {n}: {why}"),
        };
        let stop_after = |why: String| Stopped {
            turns: n,
            why: format!("turn {n}: {why}"),
        };
        if matches!(model, ModelChoice::Scripted) {
            script.load(&turn.model);
        }
        let input = match &turn.input {
            Input::Say(text) => WebInput::Text(text.clone()),
            Input::Press(title) => {
                let Some(index) = buttons
                    .iter()
                    .position(|b| b.trim().eq_ignore_ascii_case(title.trim()))
                else {
                    return Err(stop(format!(
                        "no button {title:?} on the last reply (its buttons: {})",
                        if buttons.is_empty() {
                            "none".to_owned()
                        } else {
                            buttons
                                .iter()
                                .map(|b| format!("{b:?}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    )));
                };
                WebInput::Button {
                    id: button_id(index),
                    title: Some(buttons[index].clone()),
                }
            }
        };
        let message = web_message(
            user.as_str(),
            &format!("eval-{n}"),
            input,
            clock.now_millis() / 1000,
        )
        .map_err(|e| stop(format!("the message is not valid web chat input: {e}")))?;
        let errors_before = recorder.errors().len();
        let outcome = handle_inbound(agent, &message, &WebSender, &links)
            .await
            .map_err(|e| stop(format!("the turn failed: {e}")))?;
        if let Some(error) = recorder.errors().get(errors_before) {
            return Err(stop_after(error.clone()));
        }
        let reply = match outcome {
            InboundOutcome::Turn { reply, .. } | InboundOutcome::Answered { reply, .. } => reply,
            other => {
                return Err(stop_after(format!(
                    "the message was not handled: {other:?}"
                )));
            }
        };
        if matches!(model, ModelChoice::Scripted) && script.remaining() > 0 {
            return Err(stop_after(format!(
                "{} scripted step(s) left unused (the turn ended after fewer model calls)",
                script.remaining()
            )));
        }
        if let Some(text) = &reply.text {
            replies.push(text.clone());
        }
        buttons = reply.buttons.clone();
        clock.advance_millis(TURN_GAP_MILLIS);
    }
    Ok(Progress {
        turns: case.turns.len(),
        replies,
    })
}
