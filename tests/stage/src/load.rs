//! The turn benchmark (issue #16): what one `steward serve` process spends per turn.
//!
//! With `--lockstep`, every conversation starts turn *k* together and the next round starts
//! only when every person has their reply, so the server's CPU time read at each round's start
//! splits into a cost per round — turn 1 against turn *M* shows whether a turn grows with the
//! conversation. The server's time is read from `/proc/PID/stat` (user + system, all threads,
//! including threads that have ended), in clock ticks of 10 ms, and its peak resident memory
//! from `/proc/PID/status` (`VmHWM`); Linux only.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::sync::{Barrier, Mutex};

/// Clock ticks per second of `/proc/PID/stat` times: `USER_HZ`, 100 on every Linux ABI.
const TICKS_PER_SEC: u64 = 100;

/// One reading of a process's CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel on its behalf.
    pub system: Duration,
}

impl CpuTime {
    /// User and system time together.
    pub fn total(self) -> Duration {
        self.user + self.system
    }

    /// The time spent since `earlier`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// Reads process `pid`'s CPU time.
pub fn cpu_time(pid: u32) -> anyhow::Result<CpuTime> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_stat(&stat).with_context(|| format!("reading {path}: unexpected format"))
}

/// `utime` and `stime` of a `/proc/PID/stat` line: fields 14 and 15, counted after the command
/// name, which is in parentheses and may itself hold spaces or parentheses.
fn parse_stat(stat: &str) -> Option<CpuTime> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let ticks = |f: Option<&str>| f?.parse::<u64>().ok();
    let user = ticks(fields.next())?;
    let system = ticks(fields.next())?;
    let of = |t: u64| Duration::from_millis(t * 1000 / TICKS_PER_SEC);
    Some(CpuTime {
        user: of(user),
        system: of(system),
    })
}

/// Process `pid`'s peak resident memory (`VmHWM`), in bytes.
pub fn peak_rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_hwm(&status).with_context(|| format!("{path} has no readable VmHWM line"))
}

fn parse_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// A round's start: when, and the server's CPU time then.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    cpu: CpuTime,
}

/// The rounds of a lockstep run: a barrier every person waits at before each turn (and once
/// after the last), and the server's CPU time read by whichever person arrives last.
#[derive(Debug)]
pub struct Rounds {
    barrier: Barrier,
    pid: u32,
    marks: Mutex<Vec<Mark>>,
    failed: Mutex<Option<String>>,
}

impl Rounds {
    /// Rounds for `people` conversations against the server process `pid` (which must not be
    /// restarted during the run: its CPU time would start again from zero).
    pub fn new(people: usize, pid: u32) -> Self {
        Self {
            barrier: Barrier::new(people),
            pid,
            marks: Mutex::new(Vec::new()),
            failed: Mutex::new(None),
        }
    }

    /// Waits until every person is here; the last one to arrive reads the server's CPU time.
    pub async fn wait(&self) {
        if self.barrier.wait().await.is_leader() {
            match cpu_time(self.pid) {
                Ok(cpu) => self.marks.lock().await.push(Mark {
                    at: Instant::now(),
                    cpu,
                }),
                Err(e) => {
                    self.failed.lock().await.get_or_insert(format!("{e:#}"));
                }
            }
        }
    }

    /// Per round: its wall time and the server's CPU time per conversation in it. An error
    /// when a reading failed (the figures would be partial).
    pub async fn per_round(&self, conversations: usize) -> anyhow::Result<Vec<RoundCost>> {
        if let Some(e) = self.failed.lock().await.clone() {
            bail!("the server's CPU time could not be read: {e}");
        }
        let marks = self.marks.lock().await;
        let per = u32::try_from(conversations.max(1)).unwrap_or(u32::MAX);
        Ok(marks
            .windows(2)
            .map(|w| RoundCost {
                wall: w[1].at - w[0].at,
                cpu_per_turn: w[1].cpu.since(w[0].cpu).total() / per,
            })
            .collect())
    }
}

/// What one round cost.
#[derive(Debug, Clone, Copy)]
pub struct RoundCost {
    /// From the round's first message to its last reply.
    pub wall: Duration,
    /// The server's CPU time in the round divided by the conversations (one turn each).
    pub cpu_per_turn: Duration,
}

/// A short CPU time: microseconds below a millisecond, milliseconds with two decimals above.
pub fn micros(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        // The command name holds a space and a parenthesis, as a thread name may.
        let line = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 567 0 0 20 0 9 0 100 0 0";
        let cpu = parse_stat(line).unwrap();
        assert_eq!(cpu.user, Duration::from_millis(12_340));
        assert_eq!(cpu.system, Duration::from_millis(5_670));
        assert_eq!(parse_stat("4242 (x) S 1 2"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn the_peak_resident_set_is_read_in_bytes() {
        let status = "Name:\tsteward\nVmPeak:\t  900 kB\nVmHWM:\t   38120 kB\nVmRSS:\t 30000 kB\n";
        assert_eq!(parse_hwm(status), Some(38_120 * 1024));
        assert_eq!(parse_hwm("Name: x\n"), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let me = std::process::id();
        assert!(peak_rss_bytes(me).unwrap() > 0);
        let before = cpu_time(me).unwrap();
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(cpu_time(me).unwrap().total() >= before.total());
    }
}
