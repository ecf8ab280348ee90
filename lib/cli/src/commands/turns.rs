//! `steward turns CONVERSATION [--turn N] [--json]`: the turn inspector for operators — what
//! each turn of a stored conversation sent to the model and got back, which tools ran, were
//! held, confirmed or refused, and the reply as the channel got it. Read only. The text form
//! is for people; `--json` is the serde form of the harness's
//! [`steward_harness::inspection`] types, stable for scripts.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use steward_harness::ConversationKey;
use steward_harness::inspection::{
    self, ConversationInspection, Reader, Shown, ToolCallView, TurnInspection,
};
use steward_harness::transcript::ToolState;
use steward_store::SqliteTable;

/// Runs `steward turns`.
pub async fn turns(
    cli: &crate::Cli,
    conversation: &str,
    turn: Option<u64>,
    json: bool,
) -> Result<()> {
    let key = ConversationKey::parse(conversation).map_err(|e| {
        anyhow::anyhow!(
            "{conversation:?} is not a conversation key like web:<user id> or tg:<chat id>: {}",
            e.problem
        )
    })?;
    let path = crate::db_path(cli);
    if !path.exists() {
        bail!("there is no store at {}", path.display());
    }
    let table = SqliteTable::open(&path)
        .with_context(|| format!("cannot open the store at {}", path.display()))?;
    let out = match turn {
        Some(n) => {
            let t = inspection::turn(&table, Reader::Operator, &key, n).await?;
            if json {
                serde_json::to_string_pretty(&t)?
            } else {
                turn_text(&t)
            }
        }
        None => {
            let all = inspection::conversation(&table, Reader::Operator, &key).await?;
            if json {
                serde_json::to_string_pretty(&all)?
            } else {
                conversation_text(&all)
            }
        }
    };
    println!("{}", out.trim_end());
    Ok(())
}

/// The readable form of every listed turn, oldest first.
pub fn conversation_text(all: &ConversationInspection) -> String {
    let mut out = format!(
        "conversation {} ({}), {} turns\n",
        all.conversation, all.channel, all.turns
    );
    if all.older {
        let _ = writeln!(
            out,
            "(showing the newest {}; use --turn N for an older one)",
            all.listed.len()
        );
    }
    for t in all.listed.iter().rev() {
        out.push('\n');
        out.push_str(&turn_text(t));
    }
    out
}

fn shown(s: &Shown) -> String {
    if s.cut {
        format!(
            "{} …[{} of {} characters]",
            s.text,
            s.text.chars().count(),
            s.chars
        )
    } else {
        s.text.clone()
    }
}

/// Indents every line of `text` after the first by `pad`.
fn indented(text: &str, pad: &str) -> String {
    text.lines().collect::<Vec<_>>().join(&format!("\n{pad}"))
}

/// The name of a tool call's state.
pub fn state_name(state: Option<ToolState>) -> &'static str {
    match state {
        Some(ToolState::Ran) => "ran",
        Some(ToolState::Confirmed) => "confirmed",
        Some(ToolState::Replayed) => "replayed",
        Some(ToolState::Held) => "held",
        Some(ToolState::Refused) => "refused",
        Some(ToolState::NotRun) => "not run",
        None => "not recorded",
    }
}

fn tool_line(out: &mut String, c: &ToolCallView) {
    let outcome = if c.is_error && c.state != Some(ToolState::Held) {
        ", error"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  tool {} [{}{outcome}] id={}{}{}",
        c.name,
        state_name(c.state),
        c.id,
        c.effect
            .as_ref()
            .map(|e| format!(" effect={e}"))
            .unwrap_or_default(),
        c.action
            .as_ref()
            .map(|a| format!(" action={a}"))
            .unwrap_or_default(),
    );
    let _ = writeln!(out, "    arguments: {}", shown(&c.arguments));
    match &c.result {
        Some(r) => {
            let _ = writeln!(out, "    result: {}", indented(&shown(r), "      "));
        }
        None => out.push_str("    result: (none recorded)\n"),
    }
}

/// The readable form of one turn.
pub fn turn_text(t: &TurnInspection) -> String {
    let mut out = format!("turn {}", t.turn);
    if let Some(at) = t
        .at_ms
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
    {
        let _ = write!(out, " at {}", at.strftime("%Y-%m-%d %H:%M:%S UTC"));
    }
    out.push('\n');
    if let Some(m) = &t.message {
        let _ = writeln!(out, "  message: {}", indented(&shown(m), "    "));
    }
    match &t.context {
        Some(c) => {
            let _ = writeln!(
                out,
                "  context (sent with every model call):\n    {}",
                indented(&shown(c), "    ")
            );
        }
        None => out.push_str("  context: none (the turn did not reach the model)\n"),
    }
    for call in &t.model_calls {
        let _ = write!(
            out,
            "  model call {} ({}): stop={}",
            call.step,
            call.model.as_deref().unwrap_or("model not recorded"),
            call.stop_reason.as_deref().unwrap_or("-"),
        );
        match call.tokens {
            Some(tk) => {
                let _ = write!(
                    out,
                    " input={} output={} cache_read={} cache_write={}",
                    tk.input, tk.output, tk.cache_read, tk.cache_write
                );
            }
            None => out.push_str(" tokens not recorded"),
        }
        if let Some(ms) = call.latency_ms {
            let _ = write!(out, " latency={ms}ms");
        }
        if let Some(rows) = call.rows_sent {
            let _ = write!(out, " rows_sent={rows}");
        }
        out.push('\n');
        if !call.text.text.is_empty() {
            let _ = writeln!(out, "    text: {}", indented(&shown(&call.text), "      "));
        }
        for c in t.tool_calls.iter().filter(|c| c.step == call.step) {
            tool_line(&mut out, c);
        }
    }
    for line in &t.harness_lines {
        let _ = writeln!(out, "  harness: {}", indented(&shown(line), "    "));
    }
    let r = &t.reply;
    match &r.text {
        Some(text) => {
            let _ = writeln!(
                out,
                "  reply on {}: {}",
                r.channel,
                indented(&shown(text), "    ")
            );
        }
        None => {
            let _ = writeln!(out, "  reply on {}: (no text)", r.channel);
        }
    }
    if !r.buttons.is_empty() {
        let _ = writeln!(out, "    buttons: {}", r.buttons.join(" | "));
    }
    if let Some(e) = &r.reaction {
        let _ = writeln!(out, "    reaction: {e}");
    }
    if !r.parts.is_empty() {
        let _ = writeln!(out, "    delivered parts: {}", r.parts.join(", "));
    }
    if let Some(a) = &r.apology {
        let _ = writeln!(out, "  apology: {}", shown(a));
    }
    out
}
