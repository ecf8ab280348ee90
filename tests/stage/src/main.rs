//! `steward-stage`: Steward's deployed shape, run locally, under the faults production throws.
//!
//! The four function binaries (`target/debug/{webhook,agent,mcp,web}`, built with
//! `cargo build -p steward-fn-webhook -p steward-fn-agent -p steward-fn-mcp -p steward-fn-web`)
//! run as Lambda functions on a Runtime API emulator ([`runtime`]), behind API Gateway v2 events
//! ([`apigw`]), over moto's SQS FIFO and DynamoDB (through a proxy that injects throttles,
//! [`faults`]), with the agent fed by an event-source-mapping poller ([`esm`]) and loopback
//! fakes for the model and Telegram ([`fakes`]). People ([`scenario`]) send messages with
//! duplicate deliveries and double texts while the stage kills the agent; the figures
//! ([`figures`]) must show zero duplicate effects, zero lost messages and zero disorder.
//!
//! `cargo run -p steward-stage -- --help` lists the knobs; the README's "The deployed shape,
//! locally" section gives the CI and benchmark commands. Exit status 1 when any promise is
//! broken, 2 when a piece of the stage could not start (the run reports no figures then).

mod apigw;
mod cost;
mod esm;
mod fakes;
mod faults;
mod figures;
mod load;
mod runtime;
mod scenario;
mod serve;
mod setup;
mod template;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;

use crate::runtime::{FunctionSpec, Pool};

/// How long the stage waits, after the people are done, for the queue to empty (a record whose
/// agent was killed comes back only when the heartbeat's last extension runs out).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Warm webhook instances (API Gateway's burst is far larger; a few suffice on loopback).
const WEBHOOK_INSTANCES: usize = 4;

#[derive(Debug, Parser)]
#[command(
    about = "Run Steward's four Lambda functions locally under duplicates, double texts, kills and throttles, and print the figures"
)]
struct Args {
    /// Conversations at once.
    #[arg(long, default_value_t = 20)]
    conversations: usize,
    /// Turns per conversation (each asks for one event: a tool call with an effect).
    #[arg(long, default_value_t = 5)]
    turns: usize,
    /// Share of webhook deliveries delivered twice (a third of them after the dedupe window).
    #[arg(long, default_value_t = 0.30)]
    duplicate_rate: f64,
    /// Share of turns sent as a double text (a second message within 200 ms).
    #[arg(long, default_value_t = 0.10)]
    double_text_rate: f64,
    /// Share of turns on which the agent process is killed (SIGKILL) at a random point.
    #[arg(long, default_value_t = 0.05)]
    kill_rate: f64,
    /// A kill lands uniformly within this many milliseconds of the invocation's start (a kill
    /// that would land after the invocation ended does not happen and is not counted).
    #[arg(long, default_value_t = 1_500)]
    kill_window_ms: u64,
    /// Share of the functions' DynamoDB and SQS requests answered with a throttling error.
    #[arg(long, default_value_t = 0.01)]
    throttle_rate: f64,
    /// The SQS deduplication window of the stage's moto, in seconds (AWS: 300).
    #[arg(long, default_value_t = 5)]
    dedupe_window_secs: u64,
    /// The fake model's answer time, in milliseconds.
    #[arg(long, default_value_t = 50)]
    model_latency_ms: u64,
    /// Agent instances (the mapping's maximum concurrency); default: the template's.
    #[arg(long)]
    agents: Option<usize>,
    /// Records per agent invocation; default: the template's.
    #[arg(long)]
    batch_size: Option<usize>,
    /// How long a person waits for a reply before counting the message as lost, in seconds.
    #[arg(long, default_value_t = 240)]
    reply_timeout_secs: u64,
    /// The run's seed (conversations' choices); default: from the clock.
    #[arg(long)]
    seed: Option<u64>,
    /// The price table of the cost model; default: bench/prices-us-east-1.txt.
    #[arg(long)]
    prices: Option<PathBuf>,
    /// What runs the scenario: the Lambda functions on the stage, `steward serve` (its
    /// in-process queue and SQLite, killed and restarted at random points), or both in turn
    /// with their figures side by side.
    #[arg(long, value_enum, default_value_t = Target::Lambda)]
    target: Target,
    /// Where the function binaries (and `steward`, for `--target serve`) are; default: $CARGO_TARGET_DIR/debug or target/debug.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The turn benchmark (`--target serve` only, with `--kill-rate 0`): every conversation
    /// starts each turn together, and the server's CPU time per turn is printed per round
    /// (turn 1 against the last), with its total and peak resident memory.
    #[arg(long)]
    lockstep: bool,
}

/// What runs the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Target {
    /// The four Lambda functions on the stage.
    Lambda,
    /// `steward serve`.
    Serve,
    /// Both, one after the other.
    Both,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!(
                "stage: could not run: {e:#}\nstage: no figures are reported for a partial run"
            );
            std::process::ExitCode::from(2)
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bin_dir(args: &Args, root: &Path) -> PathBuf {
    args.bin_dir.clone().unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| root.join("target"), PathBuf::from)
            .join("debug")
    })
}

async fn run(args: Args) -> anyhow::Result<bool> {
    if args.lockstep && (args.target != Target::Serve || args.kill_rate > 0.0) {
        bail!(
            "--lockstep measures one `steward serve` process: use it with --target serve and --kill-rate 0"
        );
    }
    let root = repo_root();
    let bins = bin_dir(&args, &root);
    let lambda = args.target != Target::Serve;
    let serve = args.target != Target::Lambda;
    let mut needed: Vec<(&str, &str)> = Vec::new();
    if lambda {
        needed.extend([
            ("webhook", "steward-fn-webhook"),
            ("agent", "steward-fn-agent"),
            ("mcp", "steward-fn-mcp"),
            ("web", "steward-fn-web"),
        ]);
    }
    if serve {
        needed.push(("steward", "steward"));
    }
    let missing: Vec<String> = needed
        .iter()
        .filter(|(b, _)| !bins.join(b).is_file())
        .map(|(b, package)| format!("{b} (cargo build -p {package})"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "function binaries missing in {}: {}",
            bins.display(),
            missing.join(", ")
        );
    }
    let template = template::Template::parse(
        &std::fs::read_to_string(root.join("template.yaml")).context("reading template.yaml")?,
    )?;
    let prices_path = args
        .prices
        .clone()
        .unwrap_or_else(|| root.join("bench/prices-us-east-1.txt"));
    let prices = cost::Prices::parse(
        &std::fs::read_to_string(&prices_path)
            .with_context(|| format!("reading the price table {}", prices_path.display()))?,
    )
    .with_context(|| format!("the price table {}", prices_path.display()))?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    });
    let work = bins.join(format!("stage-{}", std::process::id()));
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let params = scenario::Params {
        conversations: args.conversations,
        turns: args.turns,
        duplicate_rate: args.duplicate_rate,
        double_text_rate: args.double_text_rate,
        dedupe_window: Duration::from_secs(args.dedupe_window_secs),
        reply_timeout: Duration::from_secs(args.reply_timeout_secs),
        seed,
        rounds: None,
    };
    let mut summaries = Vec::new();
    if lambda {
        summaries.push(run_lambda(&args, &root, &bins, &template, &prices, &params, &work).await?);
    }
    if serve {
        summaries.push(run_serve(&args, &bins, &params, &work).await?);
    }
    if summaries.len() > 1 {
        print_side_by_side(&summaries);
    }
    Ok(summaries.iter().all(|s| s.ok))
}

/// The scenario on the Lambda stage; prints its figures and returns their summary.
async fn run_lambda(
    args: &Args,
    root: &Path,
    bins: &Path,
    template: &template::Template,
    prices: &cost::Prices,
    params: &scenario::Params,
    work: &Path,
) -> anyhow::Result<Summary> {
    let seed = params.seed;

    let moto = setup::Moto::start(root, &work.join("emulator"), args.dedupe_window_secs)?;
    let direct = setup::sdk(&moto.url).await;
    let resources = setup::resources(&direct, template).await?;
    let (proxy, proxy_url) = faults::FaultProxy::start(&moto.url, args.throttle_rate).await?;
    let (model, model_url) = fakes::FakeModel::start(
        Duration::from_millis(args.model_latency_ms),
        &work.join("model.jsonl"),
    )
    .await?;
    let (telegram, telegram_url) = fakes::FakeTelegram::start().await?;

    let mut users = HashMap::new();
    for i in 0..args.conversations {
        let chat = scenario::chat_of(i);
        users.insert(
            chat,
            setup::person(resources.table.as_ref(), i, chat).await?,
        );
    }

    let public_url = format!("https://{}", apigw::HOST);
    let common = |extra: &[(&str, &str)]| -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("AWS_ENDPOINT_URL", proxy_url.as_str()),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "stage"),
            ("AWS_SECRET_ACCESS_KEY", "stage"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true"),
            ("RUST_LOG", "info"),
            ("STEWARD_TABLE", resources.table_name.as_str()),
            ("STEWARD_QUEUE_URL", resources.queue_url.as_str()),
            ("STEWARD_PUBLIC_URL", public_url.as_str()),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        env.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        env
    };
    let spec = |name: &'static str, env: Vec<(String, String)>| {
        let (timeout, memory_mb) = template.function(name);
        FunctionSpec {
            name,
            binary: bins.join(name),
            timeout,
            memory_mb,
            env,
            log: work.join(format!("{name}.log")),
        }
    };
    let agents = args.agents.unwrap_or(template.max_concurrency);
    let batch_size = args.batch_size.unwrap_or(template.batch_size);
    let webhook = Pool::start(
        spec(
            "webhook",
            common(&[("TELEGRAM_WEBHOOK_SECRET", scenario::TELEGRAM_SECRET)]),
        ),
        WEBHOOK_INSTANCES,
    )
    .await?;
    let agent = Pool::start(
        spec(
            "agent",
            common(&[
                ("STEWARD_MODEL_PROVIDER", "anthropic"),
                ("ANTHROPIC_API_KEY", "stage-key"),
                ("ANTHROPIC_BASE_URL", model_url.as_str()),
                ("TELEGRAM_BOT_TOKEN", "123456:stage-bot-token"),
                ("TELEGRAM_API_BASE", telegram_url.as_str()),
                ("STEWARD_BLOB_BUCKET", resources.bucket.as_str()),
                ("STEWARD_BLOB_PATH_STYLE", "true"),
            ]),
        ),
        agents,
    )
    .await?;
    let mcp = Pool::start(
        spec("mcp", common(&[("STEWARD_MCP_ALLOWED_HOSTS", apigw::HOST)])),
        1,
    )
    .await?;
    let web = Pool::start(
        spec(
            "web",
            common(&[
                ("STEWARD_OIDC_ISSUER", "https://issuer.stage.steward.test"),
                ("STEWARD_OIDC_CLIENT_ID", "stage"),
            ]),
        ),
        1,
    )
    .await?;
    let api = Arc::new(apigw::Api {
        backend: apigw::Backend::Lambda {
            webhook: webhook.clone(),
            mcp: mcp.clone(),
            web: web.clone(),
        },
        requests: AtomicU64::new(0),
    });
    smoke(&api).await?;

    let esm = Arc::new(esm::Esm {
        agent: agent.clone(),
        sqs: resources.sqs.clone(),
        queue_url: resources.queue_url.clone(),
        queue_arn: resources.queue_arn.clone(),
        batch_size,
        kill_rate: args.kill_rate,
        kill_window: Duration::from_millis(args.kill_window_ms),
        stats: esm::EsmStats::default(),
        stop: AtomicBool::new(false),
    });
    let poller = tokio::spawn(esm.clone().run());

    println!(
        "stage: {} conversations x {} turns, duplicates {:.0} %, double texts {:.0} %, kills {:.0} %, throttles {:.1} %, batch {batch_size}, {agents} agents, seed {seed}",
        args.conversations,
        args.turns,
        args.duplicate_rate * 100.0,
        args.double_text_rate * 100.0,
        args.kill_rate * 100.0,
        args.throttle_rate * 100.0,
    );
    let people = Arc::new(scenario::PeopleStats::default());
    let started = Instant::now();
    let sent = scenario::run(params, api.clone(), telegram.clone(), people.clone()).await?;
    let conversed = started.elapsed();

    // Let every duplicate and redelivery play out: the queue must drain on its own.
    let drain_started = Instant::now();
    let mut empty_checks = 0;
    while empty_checks < 3 {
        if esm.stop.load(Ordering::Relaxed) {
            bail!("the event source mapping stopped: an agent instance could not be restarted");
        }
        if drain_started.elapsed() > DRAIN_TIMEOUT {
            break;
        }
        match setup::queue_depth(&resources.sqs, &resources.queue_url).await {
            Ok(0) => empty_checks += 1,
            _ => empty_checks = 0,
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let left_in_queue = setup::queue_depth(&resources.sqs, &resources.queue_url).await?;
    esm.stop.store(true, Ordering::Relaxed);
    let _ = poller.await;
    let dead_letters = setup::queue_depth(&resources.sqs, &resources.dlq_url).await?;

    let figures = figures::collect(
        resources.table.as_ref(),
        &sent,
        &users,
        &telegram.all_sent(),
        None,
    )
    .await?;
    let agents_done = agent.drain().await;
    let mut functions = Vec::new();
    let mut cold_starts = Vec::new();
    for (name, pool) in [
        ("webhook", &webhook),
        ("agent", &agent),
        ("mcp", &mcp),
        ("web", &web),
    ] {
        let instances = if name == "agent" {
            &agents_done
        } else {
            &pool.drain().await
        };
        let mut starts: Vec<Duration> = instances
            .iter()
            .flat_map(|i| i.cold_starts.iter().copied())
            .collect();
        starts.sort();
        let mut first: Vec<Duration> = instances
            .iter()
            .flat_map(|i| i.first_responses.iter().copied())
            .collect();
        first.sort();
        let peak_kib = instances
            .iter()
            .map(|i| i.peak_rss_kib())
            .max()
            .unwrap_or(0);
        cold_starts.push(ColdStarts {
            name,
            starts,
            first,
            peak_kib,
            memory_mb: template.function(name).1,
        });
        functions.push(cost::FunctionUse {
            name,
            memory_mb: template.function(name).1,
            durations: instances
                .iter()
                .flat_map(|i| i.durations.iter().copied())
                .collect(),
        });
    }
    let api_requests = api.requests.load(Ordering::Relaxed);
    let bill = cost::Bill::price(
        prices,
        &proxy.meter.usage(),
        esm.stats.invocations.load(Ordering::Relaxed) + esm.stats.deletes.load(Ordering::Relaxed),
        &functions,
        &template.architecture,
        api_requests,
        figures.messages,
    )?;
    let report = Report {
        figures: &figures,
        people: &people,
        esm: &esm.stats,
        proxy: &proxy,
        model_calls: model.calls(),
        sends: telegram.all_sent().len(),
        other_telegram_calls: telegram.other_calls(),
        api_requests,
        bill: &bill,
        prices,
        agent_seconds: agents_done
            .iter()
            .flat_map(|i| i.durations.iter())
            .map(Duration::as_secs_f64)
            .sum(),
        agent_memory_mb: template.function("agent").1,
        agent_restarts: agents_done.iter().map(|i| i.restarts).sum(),
        cold_starts: &cold_starts,
        left_in_queue,
        dead_letters,
        conversed,
        logs: work,
    };
    let ok = report.print();
    Ok(Summary::new(
        "lambda",
        &figures,
        load(&esm.stats.kills),
        Some(dead_letters + left_in_queue),
        Some(bill.per_1000_turns()),
        ok,
    ))
}

/// The server's CPU time per turn (over the whole run, and per round with `--lockstep`) and its
/// peak resident memory; `cost` is `None` when the server was restarted during the run.
async fn print_server_cost(
    cost: Option<(load::CpuTime, u64)>,
    turns: usize,
    rounds: Option<&load::Rounds>,
    conversations: usize,
) -> anyhow::Result<()> {
    println!("---- server cost (serve, one process)");
    let Some((cpu, peak)) = cost else {
        println!("not measured            the server was restarted (use --kill-rate 0)");
        return Ok(());
    };
    let per = u32::try_from(turns.max(1)).unwrap_or(u32::MAX);
    println!(
        "CPU                     user {} ms + system {} ms over {turns} messages: {} per message",
        cpu.user.as_millis(),
        cpu.system.as_millis(),
        load::micros(cpu.total() / per)
    );
    println!(
        "peak resident memory    {:.1} MB",
        peak as f64 / 1_048_576.0
    );
    if let Some(rounds) = rounds {
        let per_round = rounds.per_round(conversations).await?;
        println!(
            "per round               CPU per turn (readings in 10 ms ticks over {conversations} turns) and wall time"
        );
        for (i, round) in per_round.iter().enumerate() {
            println!(
                "  round {:>3}             {}  {} ms",
                i + 1,
                load::micros(round.cpu_per_turn),
                round.wall.as_millis()
            );
        }
    }
    Ok(())
}

fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

/// How long the serve run waits, after the people are done, for Telegram sends to stop.
const SERVE_SETTLE: Duration = Duration::from_secs(5);

/// The scenario against `steward serve` on a SQLite file, killed with `SIGKILL` and restarted
/// at random points; prints its figures and returns their summary.
async fn run_serve(
    args: &Args,
    bins: &Path,
    params: &scenario::Params,
    work: &Path,
) -> anyhow::Result<Summary> {
    let dir = work.join("serve");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let db = dir.join("steward.db");
    let mut users = HashMap::new();
    {
        let table = steward_store::SqliteTable::open(&db)
            .with_context(|| format!("opening {}", db.display()))?;
        for i in 0..args.conversations {
            let chat = scenario::chat_of(i);
            users.insert(chat, setup::person(&table, i, chat).await?);
        }
    }
    let (model, model_url) = fakes::FakeModel::start(
        Duration::from_millis(args.model_latency_ms),
        &dir.join("model.jsonl"),
    )
    .await?;
    let (telegram, telegram_url) = fakes::FakeTelegram::start().await?;
    let port = serve::free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    let env: Vec<(String, String)> = [
        ("STEWARD_DB", &*db.to_string_lossy()),
        ("STEWARD_ADDR", &format!("127.0.0.1:{port}")),
        ("STEWARD_PUBLIC_URL", url.as_str()),
        ("RUST_LOG", "info"),
        ("STEWARD_MODEL_PROVIDER", "anthropic"),
        ("ANTHROPIC_API_KEY", "stage-key"),
        ("ANTHROPIC_BASE_URL", model_url.as_str()),
        ("TELEGRAM_BOT_TOKEN", "123456:stage-bot-token"),
        ("TELEGRAM_API_BASE", telegram_url.as_str()),
        ("TELEGRAM_WEBHOOK_SECRET", scenario::TELEGRAM_SECRET),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let server = serve::Serve::start(serve::ServeSpec {
        binary: bins.join("steward"),
        env,
        log: dir.join("serve.log"),
        url,
    })
    .await?;
    let killer = tokio::spawn(
        server
            .clone()
            .killer(args.kill_rate, Duration::from_millis(args.kill_window_ms)),
    );
    println!(
        "stage (serve): {} conversations x {} turns, duplicates {:.0} %, double texts {:.0} %, kills {:.0} % of webhook deliveries, seed {}",
        args.conversations,
        args.turns,
        args.duplicate_rate * 100.0,
        args.double_text_rate * 100.0,
        args.kill_rate * 100.0,
        params.seed,
    );
    let api = Arc::new(apigw::Api {
        backend: apigw::Backend::Serve(server.clone()),
        requests: AtomicU64::new(0),
    });
    let pid = server
        .pid()
        .await
        .context("steward serve has no process id")?;
    let cpu_at_start = load::cpu_time(pid)?;
    let rounds = args
        .lockstep
        .then(|| Arc::new(load::Rounds::new(args.conversations, pid)));
    let params = &scenario::Params {
        rounds: rounds.clone(),
        ..params.clone()
    };
    let people = Arc::new(scenario::PeopleStats::default());
    let started = Instant::now();
    let sent = scenario::run(params, api, telegram.clone(), people.clone()).await;
    let conversed = started.elapsed();
    // Late redeliveries (after a kill) may still send: wait until the sends stop.
    let mut count = telegram.all_sent().len();
    loop {
        tokio::time::sleep(SERVE_SETTLE).await;
        let now = telegram.all_sent().len();
        if now == count {
            break;
        }
        count = now;
    }
    server.stop.store(true, Ordering::Relaxed);
    let killed = killer.await;
    // One process's cost, read before it stops (a restarted server's time starts again).
    let cost = if load(&server.kills) == 0 {
        Some((
            load::cpu_time(pid)?.since(cpu_at_start),
            load::peak_rss_bytes(pid)?,
        ))
    } else {
        None
    };
    server.stop().await;
    let sent = sent?;
    killed.map_err(|e| anyhow::anyhow!("the killer task failed: {e}"))??;
    let table = steward_store::SqliteTable::open(&db)
        .with_context(|| format!("opening {}", db.display()))?;
    let kill_times = server.kill_times().await;
    let figures = figures::collect(
        &table,
        &sent,
        &users,
        &telegram.all_sent(),
        Some(&kill_times),
    )
    .await?;
    let kills = load(&server.kills);
    let ms = |d: Option<Duration>| d.map_or("-".to_owned(), |d| format!("{} ms", d.as_millis()));
    println!("---- faults injected (serve)");
    println!(
        "webhook deliveries      {} ({} non-2xx retried, {} given up)",
        load(&people.deliveries),
        load(&people.non_2xx),
        load(&people.given_up)
    );
    println!(
        "duplicate deliveries    {} within the dedupe window, {} after it",
        load(&people.early_duplicates),
        load(&people.late_duplicates)
    );
    println!("double texts            {}", load(&people.double_texts));
    println!("serve kills (SIGKILL)   {kills} (each followed by a restart)");
    println!("---- what happened (serve)");
    println!("messages sent           {}", figures.messages);
    println!("model calls             {}", model.calls());
    println!(
        "Telegram calls          {} sendMessage, {} typing/reactions",
        telegram.all_sent().len(),
        telegram.other_calls()
    );
    println!("time conversing         {:.1} s", conversed.as_secs_f64());
    println!(
        "webhook -> reply        p50 {}  p95 {}  p99 {}  max {}",
        ms(figures.percentile(0.5)),
        ms(figures.percentile(0.95)),
        ms(figures.percentile(0.99)),
        ms(figures.percentile(1.0))
    );
    println!("---- promises (serve)");
    println!("duplicate effects       {}", figures.duplicate_effects);
    println!("lost messages           {}", figures.lost.len());
    println!("out-of-order replies    {}", figures.out_of_order);
    println!(
        "duplicate replies       {} ({} with a kill within {} s after the first copy and before \
         the next; {} unexplained)",
        figures.duplicate_replies,
        figures.duplicate_replies - figures.unexplained_duplicate_replies,
        figures::SEND_RECORD_WINDOW_MAX.as_secs(),
        figures.unexplained_duplicate_replies
    );
    println!("other sends             {}", figures.other_sends.len());
    for lost in figures.lost.iter().take(10) {
        println!("  lost: {lost}");
    }
    for other in figures.other_sends.iter().take(5) {
        println!("  other send: {other}");
    }
    print_server_cost(
        cost,
        figures.messages,
        rounds.as_deref(),
        args.conversations,
    )
    .await?;
    println!("serve log and store     {}", dir.display());
    // One process runs many turns at once, so one kill can catch several replies between
    // their send and its record: each duplicate must have a kill in that window instead of
    // one duplicate per kill at most.
    let ok = figures.duplicate_effects == 0
        && figures.lost.is_empty()
        && figures.out_of_order == 0
        && figures.unexplained_duplicate_replies == 0;
    println!(
        "result                  {}",
        if ok { "PASS" } else { "FAIL" }
    );
    Ok(Summary::new("serve", &figures, kills, None, None, ok))
}

/// One target's headline figures, for the side-by-side table.
struct Summary {
    target: &'static str,
    messages: usize,
    duplicate_effects: usize,
    lost: usize,
    out_of_order: usize,
    duplicate_replies: usize,
    kills: u64,
    /// Dead-lettered or left in the queue (measured on the Lambda stage only).
    stranded: Option<u64>,
    p50: Option<Duration>,
    p95: Option<Duration>,
    p99: Option<Duration>,
    cost_per_1000: Option<f64>,
    ok: bool,
}

impl Summary {
    fn new(
        target: &'static str,
        f: &figures::Figures,
        kills: u64,
        stranded: Option<u64>,
        cost_per_1000: Option<f64>,
        ok: bool,
    ) -> Self {
        Self {
            target,
            messages: f.messages,
            duplicate_effects: f.duplicate_effects,
            lost: f.lost.len(),
            out_of_order: f.out_of_order,
            duplicate_replies: f.duplicate_replies,
            kills,
            stranded,
            p50: f.percentile(0.5),
            p95: f.percentile(0.95),
            p99: f.percentile(0.99),
            cost_per_1000,
            ok,
        }
    }
}

/// The targets' figures in columns.
fn print_side_by_side(summaries: &[Summary]) {
    let ms = |d: Option<Duration>| d.map_or("-".to_owned(), |d| format!("{} ms", d.as_millis()));
    let row = |label: &str, cell: &dyn Fn(&Summary) -> String| {
        let cells: Vec<String> = summaries
            .iter()
            .map(|s| format!("{:>14}", cell(s)))
            .collect();
        println!("{label:<24}{}", cells.join(""));
    };
    println!("---- side by side");
    row("", &|s| s.target.to_owned());
    row("messages sent", &|s| s.messages.to_string());
    row("kills (SIGKILL)", &|s| s.kills.to_string());
    row("duplicate effects", &|s| s.duplicate_effects.to_string());
    row("lost messages", &|s| s.lost.to_string());
    row("out-of-order replies", &|s| s.out_of_order.to_string());
    row("duplicate replies", &|s| s.duplicate_replies.to_string());
    row("dead or left in queue", &|s| {
        s.stranded.map_or("-".to_owned(), |n| n.to_string())
    });
    row("webhook -> reply p50", &|s| ms(s.p50));
    row("webhook -> reply p95", &|s| ms(s.p95));
    row("webhook -> reply p99", &|s| ms(s.p99));
    row("$ / 1,000 turns", &|s| {
        s.cost_per_1000
            .map_or("-".to_owned(), |c| format!("{c:.4}"))
    });
    row("result", &|s| {
        (if s.ok { "PASS" } else { "FAIL" }).to_owned()
    });
}

/// Each HTTP function answers through the API before the scenario starts: health, MCP refusing
/// a request without a token, the web app's public landing page.
async fn smoke(api: &apigw::Api) -> anyhow::Result<()> {
    let checks = [
        ("GET", "/healthz", "", 200),
        (
            "POST",
            "/mcp",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            401,
        ),
        ("GET", "/", "", 303),
    ];
    for (method, path, body, want) in checks {
        let answer = api
            .request(
                method,
                path,
                &[
                    ("content-type", "application/json"),
                    ("accept", "application/json, text/event-stream"),
                ],
                body,
                "198.51.100.1",
            )
            .await?;
        if answer.status != want {
            bail!(
                "{method} {path} answered {} (expected {want}): {}",
                answer.status,
                answer.body.chars().take(300).collect::<String>()
            );
        }
    }
    Ok(())
}

impl Report<'_> {
    /// Prints the cost model: the bill's lines, most expensive first, and the cost per 1,000
    /// turns against the goal (with the dominating lines when it is missed).
    fn print_cost(&self) {
        let bill = self.bill;
        let total = bill.total();
        println!(
            "---- cost model ({} on-demand prices of {}; check them against AWS's pricing pages)",
            self.prices.region, self.prices.date
        );
        println!(
            "  {:<52} {:>12} {:>12} {:>7}",
            "what", "units", "$ / 1,000 turns", "share"
        );
        for line in &bill.lines {
            let share = if total > 0.0 {
                line.dollars / total * 100.0
            } else {
                0.0
            };
            let per_1000 = if bill.turns == 0 {
                0.0
            } else {
                line.dollars / bill.turns as f64 * 1_000.0
            };
            println!(
                "  {:<52} {:>12.1} {:>12.5} {:>6.1} %",
                line.what, line.units, per_1000, share
            );
        }
        let lower: u64 = self
            .proxy
            .meter
            .usage()
            .values()
            .map(|u| u.lower_bounds)
            .sum();
        println!(
            "  ({lower} DynamoDB writes priced at the minimum: their item was not visible to the proxy)"
        );
        let per_1000 = bill.per_1000_turns();
        let verdict = if per_1000 <= cost::GOAL_PER_1000_TURNS {
            "within the goal".to_owned()
        } else {
            let top: Vec<&str> = bill.lines.iter().take(3).map(|l| l.what.as_str()).collect();
            format!("over the goal; dominated by {}", top.join(", "))
        };
        println!(
            "cost per 1,000 turns    ${per_1000:.4} (goal ${:.2}, model tokens excluded; {} turns = messages sent): {verdict}",
            cost::GOAL_PER_1000_TURNS,
            bill.turns
        );
    }
}

/// One function's process starts and memory, for the figures.
struct ColdStarts {
    name: &'static str,
    /// Every process start's time to its first `/next`, sorted.
    starts: Vec<Duration>,
    /// Every process start's time to its first answered invocation, sorted.
    first: Vec<Duration>,
    /// The highest peak resident memory of any of its processes, in KiB.
    peak_kib: u64,
    /// Its memory setting in the template.
    memory_mb: u32,
}

struct Report<'a> {
    figures: &'a figures::Figures,
    people: &'a scenario::PeopleStats,
    esm: &'a esm::EsmStats,
    proxy: &'a faults::FaultProxy,
    model_calls: u64,
    sends: usize,
    other_telegram_calls: u64,
    api_requests: u64,
    bill: &'a cost::Bill,
    prices: &'a cost::Prices,
    agent_seconds: f64,
    agent_memory_mb: u32,
    agent_restarts: u32,
    /// Per function: its process starts and its peak memory.
    cold_starts: &'a [ColdStarts],
    left_in_queue: u64,
    dead_letters: u64,
    conversed: Duration,
    logs: &'a Path,
}

impl Report<'_> {
    /// Prints the figures; true when every promise held.
    fn print(&self) -> bool {
        let f = self.figures;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let ms =
            |d: Option<Duration>| d.map_or("-".to_owned(), |d| format!("{} ms", d.as_millis()));
        let kills = load(&self.esm.kills);
        println!("---- faults injected");
        println!(
            "webhook deliveries      {} ({} non-2xx retried, {} given up)",
            load(&self.people.deliveries),
            load(&self.people.non_2xx),
            load(&self.people.given_up)
        );
        println!(
            "duplicate deliveries    {} within the dedupe window, {} after it",
            load(&self.people.early_duplicates),
            load(&self.people.late_duplicates)
        );
        println!(
            "double texts            {}",
            load(&self.people.double_texts)
        );
        println!(
            "agent kills (SIGKILL)   {kills} ({} restarts)",
            self.agent_restarts
        );
        println!(
            "throttled requests      {} DynamoDB, {} SQS",
            load(&self.proxy.throttled_dynamodb),
            load(&self.proxy.throttled_sqs)
        );
        println!("---- what happened");
        println!("messages sent           {}", f.messages);
        println!(
            "agent invocations       {} ({} records, {} reported failed, {} invocations failed)",
            load(&self.esm.invocations),
            load(&self.esm.records),
            load(&self.esm.reported_failures),
            load(&self.esm.failed_invocations)
        );
        println!("model calls             {}", self.model_calls);
        println!(
            "Telegram calls          {} sendMessage, {} typing/reactions",
            self.sends, self.other_telegram_calls
        );
        println!(
            "time conversing         {:.1} s",
            self.conversed.as_secs_f64()
        );
        println!(
            "webhook -> reply        p50 {}  p95 {}  p99 {}  max {}",
            ms(f.percentile(0.5)),
            ms(f.percentile(0.95)),
            ms(f.percentile(0.99)),
            ms(f.percentile(1.0))
        );
        for c in self.cold_starts {
            let at = |sorted: &[Duration], q: f64| {
                let i =
                    ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len().max(1)) - 1;
                sorted
                    .get(i)
                    .map_or("-".to_owned(), |d| format!("{} ms", d.as_millis()))
            };
            println!(
                "{:<24}{} starts: p50 {}  max {} (spawn to first /next); to first response p50 {}  max {}",
                format!("cold start {}", c.name),
                c.starts.len(),
                at(&c.starts, 0.5),
                at(&c.starts, 1.0),
                at(&c.first, 0.5),
                at(&c.first, 1.0)
            );
        }
        for c in self.cold_starts {
            println!(
                "{:<24}{:.1} MB peak RSS (VmHWM) of {} MB configured",
                format!("memory {}", c.name),
                c.peak_kib as f64 / 1024.0,
                c.memory_mb
            );
        }
        println!("---- requests (cost-model inputs)");
        println!("API Gateway requests    {}", self.api_requests);
        println!(
            "agent GB-seconds        {:.1} ({} MB)",
            self.agent_seconds * f64::from(self.agent_memory_mb) / 1024.0,
            self.agent_memory_mb
        );
        println!(
            "ESM receives / deletes  {} / {}",
            load(&self.esm.receives),
            load(&self.esm.deletes)
        );
        for (op, n) in self.proxy.calls() {
            println!("  {op:<44} {n}");
        }
        self.print_cost();
        println!("---- promises");
        let duplicate_rate = if kills == 0 {
            0.0
        } else {
            f.duplicate_replies as f64 / kills as f64
        };
        println!("duplicate effects       {}", f.duplicate_effects);
        println!("lost messages           {}", f.lost.len());
        println!("out-of-order replies    {}", f.out_of_order);
        println!("dead-lettered           {}", self.dead_letters);
        println!("left in the queue       {}", self.left_in_queue);
        println!(
            "duplicate replies       {} ({duplicate_rate:.2} per kill)",
            f.duplicate_replies
        );
        println!("other sends             {}", f.other_sends.len());
        for lost in f.lost.iter().take(10) {
            println!("  lost: {lost}");
        }
        for other in f.other_sends.iter().take(5) {
            println!("  other send: {other}");
        }
        println!("function logs           {}", self.logs.display());
        // A duplicate reply is allowed only where a kill fell between the send and its record.
        let ok = f.duplicate_effects == 0
            && f.lost.is_empty()
            && f.out_of_order == 0
            && self.dead_letters == 0
            && self.left_in_queue == 0
            && f.duplicate_replies as u64 <= kills;
        println!(
            "result                  {}",
            if ok { "PASS" } else { "FAIL" }
        );
        ok
    }
}
