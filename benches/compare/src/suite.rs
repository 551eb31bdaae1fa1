//! `compare suite`: every contender in one run. mcpwire's `Client` and `Caller`, rmcp 3.11's
//! shared and default clients (and the shared one opening a session per call, the shape of the
//! `Caller`'s 2025 path, on the two rows where that path makes many calls), the TypeScript
//! SDK v2 client on Node 22, the Python SDK 2.3 client and the floor (`clients/floor`: the
//! same HTTP requests on hyper-util, no MCP), each in both eras where it speaks them, against
//! the same servers (in this process), rounds interleaved: one warm-up run of every row, then
//! `--runs` rounds, each running every group's rows once in an order that rotates from round
//! to round. Medians, and the spread of CPU per
//! call (half the range over the median). Then the targets of issue 26 as ratios of medians
//! from this run, instruction counts (callgrind) for the Rust rows of the sequential workload
//! with `--instructions`, the SVG charts (`svg.rs`) and `results.json` into `--out`. `compare
//! charts RESULTS.json` draws the charts again from a `results.json`.
//!
//! ```sh
//! compare suite [--runs 5] [--only sequential,concurrent,big,progress,list,inflight,inflight-h2]
//!               [--contenders floor,client,caller,rmcp-shared,rmcp-default,rmcp-fresh,ts,py]
//!               [--inflight 10000] [--wait-ms 1000] [--instructions] [--out DIR]
//! ```
//!
//! The TypeScript and Python rows need `MCPWIRE_PEERS_DIR` (scripts/install-peers components
//! `node22`, `ts2client` and `python`); without it they are left out, and said so.

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::list_server::ListServer;
use crate::svg;
use crate::wait_server::{self, WaitServer};
use crate::{demo_server, driver_dir, loadavg, median};

/// Which server a workload runs against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Demo,
    List,
    /// The wait server, cleartext HTTP/1.1.
    Wait,
    /// The wait server behind TLS, HTTP/2 by ALPN where the client offers it.
    WaitTls,
}

struct Workload {
    key: &'static str,
    label: &'static str,
    /// Tool calls (or `tools/list` calls) the workload makes.
    n: usize,
    target: Target,
    eras: &'static [&'static str],
}

const WORKLOADS: &[Workload] = &[
    Workload {
        key: "sequential",
        label: "1000 sequential echo calls",
        n: 1000,
        target: Target::Demo,
        eras: &["2026", "2025"],
    },
    Workload {
        key: "concurrent",
        label: "256 echo calls at once",
        n: 256,
        target: Target::Demo,
        eras: &["2026", "2025"],
    },
    Workload {
        key: "big",
        label: "one call, 10 MiB text result",
        n: 10 << 20,
        target: Target::Demo,
        eras: &["2026", "2025"],
    },
    Workload {
        key: "progress",
        label: "one call, 1000 progress notifications",
        n: 1000,
        target: Target::Demo,
        eras: &["2026", "2025"],
    },
    Workload {
        key: "list",
        label: "100 sequential tools/list calls, 100 tools (121 KiB) each",
        n: 100,
        target: Target::List,
        eras: &["2025"],
    },
    Workload {
        key: "inflight",
        label: "calls in flight at once to a tool that waits, HTTP/1.1",
        n: 10_000,
        target: Target::Wait,
        eras: &["2026"],
    },
    Workload {
        key: "inflight-h2",
        label: "calls in flight at once to a tool that waits, TLS (HTTP/2 where spoken)",
        n: 10_000,
        target: Target::WaitTls,
        eras: &["2026"],
    },
];

/// How one contender is started.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Runner {
    /// A Rust program beside the driver.
    Native(&'static str),
    /// `node bench-ts.mjs` (Node 22 of the peers directory).
    Node,
    /// `python bench_py.py` (the peers directory's venv-v2).
    Python,
}

struct Contender {
    key: &'static str,
    label: &'static str,
    runner: Runner,
    /// Arguments after `URL WORKLOAD N` and before the era (rmcp's `shared`/`default`).
    mode: Option<&'static str>,
    /// The fill of its bars, the same in every chart.
    colour: &'static str,
}

const CONTENDERS: &[Contender] = &[
    Contender {
        key: "floor",
        label: "floor (hyper-util, no MCP)",
        runner: Runner::Native("bench-floor"),
        mode: None,
        colour: svg::PALETTE[0],
    },
    Contender {
        key: "client",
        label: "mcpwire Client",
        runner: Runner::Native("bench-mcpwire"),
        mode: None,
        colour: svg::PALETTE[1],
    },
    Contender {
        key: "caller",
        label: "mcpwire Caller",
        runner: Runner::Native("bench-caller"),
        mode: None,
        colour: svg::PALETTE[2],
    },
    Contender {
        key: "rmcp-shared",
        label: "rmcp 3.11, shared client",
        runner: Runner::Native("bench-rmcp"),
        mode: Some("shared"),
        colour: svg::PALETTE[3],
    },
    Contender {
        key: "rmcp-default",
        label: "rmcp 3.11, default client",
        runner: Runner::Native("bench-rmcp"),
        mode: Some("default"),
        colour: svg::PALETTE[4],
    },
    // The `Caller`'s 2025 shape on rmcp: a session per call (initialize, initialized, the
    // call, DELETE), the shared client's pool under all of them.
    Contender {
        key: "rmcp-fresh",
        label: "rmcp 3.11, shared, session per call",
        runner: Runner::Native("bench-rmcp"),
        mode: Some("shared"),
        colour: svg::PALETTE[7],
    },
    Contender {
        key: "ts",
        label: "TypeScript SDK 2.4 (Node 22)",
        runner: Runner::Node,
        mode: None,
        colour: svg::PALETTE[5],
    },
    Contender {
        key: "py",
        label: "Python SDK 2.3",
        runner: Runner::Python,
        mode: None,
        colour: svg::PALETTE[6],
    },
];

impl Contender {
    /// Whether the contender is another library (not mcpwire, not the floor).
    fn other_library(&self) -> bool {
        !matches!(self.key, "floor" | "client" | "caller")
    }
}

/// Why the `Caller` is left out of an `inflight` row: `limit` is what `bench-caller
/// in-flight-limit` reported, the most calls its `Caller` can have in flight to one server.
fn caller_capped_reason(limit: usize) -> String {
    format!(
        "the Caller refuses a call beyond {limit} in flight on one server (the session's \
         max_pending_requests, which this bench-caller does not raise): at 10,000 the \
         1025th call fails with `refused` (measured)"
    )
}

/// The most calls the built `bench-caller` can have in flight to one server, as it reports
/// (`bench-caller - in-flight-limit 0` prints `in_flight_limit=N`, or `none` when its `Caller`
/// takes N itself): the suite runs the `Caller`'s `inflight` rows only up to it. A program
/// that cannot tell (built before it could) gets the session's default, 1024.
fn caller_in_flight_limit(program: &Path) -> Option<usize> {
    const SESSION_DEFAULT: usize = 1024;
    let output = Command::new(program)
        .args(["-", "in-flight-limit", "0"])
        .stderr(Stdio::null())
        .output();
    let text = match output {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => return Some(SESSION_DEFAULT),
    };
    match text
        .lines()
        .find_map(|l| l.trim().strip_prefix("in_flight_limit="))
    {
        Some("none") => None,
        Some(n) => Some(n.parse().unwrap_or(SESSION_DEFAULT)),
        None => Some(SESSION_DEFAULT),
    }
}

/// The client program's workload name for a suite workload in an era, or `None` when the
/// contender does not run it (and why, for the report).
fn client_workload(c: &Contender, w: &Workload, era: &str) -> Result<&'static str, &'static str> {
    let caller = c.key == "caller";
    match (w.key, c.key) {
        ("list", "caller") => Err("the binding layer makes tool calls only"),
        ("sequential", "rmcp-fresh") if era == "2025" => Ok("fresh"),
        ("concurrent", "rmcp-fresh") if era == "2025" => Ok("concurrent-fresh"),
        (_, "rmcp-fresh") if era == "2026" => Err(
            "at 2026-07-28 the Caller caches the probe and sends stateless POSTs, one session's shape: rmcp shared is its like",
        ),
        (_, "rmcp-fresh") => Err(
            "one call (or one listing session), so one session either way: rmcp shared is the same run",
        ),
        ("inflight-h2", "ts") => Err(
            "the SDK uses Node's built-in fetch, which speaks HTTP/2 only through an undici Agent with allowH2, and the undici package is no dependency of the SDK (not in ts2client); see the HTTP/1.1 row",
        ),
        ("inflight-h2", "py") => Err(
            "httpx2 speaks HTTP/2 only with the `h2` package, which mcp 2.3.0 does not depend on (not in venv-v2); see the HTTP/1.1 row",
        ),
        ("sequential", _) if caller => Ok("caller"),
        ("sequential", _) => Ok("session"),
        ("concurrent", _) if caller => Ok("caller-concurrent"),
        ("concurrent", _) => Ok("concurrent"),
        ("big", _) if caller => Ok("caller-big"),
        ("big", _) => Ok("big"),
        ("progress", _) if caller => Ok("caller-progress"),
        ("progress", _) => Ok("progress"),
        ("list", _) => Ok("list"),
        ("inflight" | "inflight-h2", _) if caller => Ok("caller-inflight"),
        ("inflight" | "inflight-h2", _) => Ok("inflight"),
        _ => Err("not a workload of this contender"),
    }
}

/// Where the peers are (Node 22, the TypeScript client, the Python venv).
struct Peers {
    node: PathBuf,
    ts_modules: PathBuf,
    python: PathBuf,
}

fn peers() -> Result<Peers, String> {
    let dir = std::env::var_os("MCPWIRE_PEERS_DIR")
        .map(PathBuf::from)
        .ok_or("MCPWIRE_PEERS_DIR is not set")?;
    let peers = Peers {
        node: dir.join("node22/node_modules/.bin/node"),
        ts_modules: dir.join("ts2client/node_modules"),
        python: dir.join("venv-v2/bin/python"),
    };
    for path in [&peers.node, &peers.ts_modules, &peers.python] {
        if !path.exists() {
            return Err(format!(
                "{} is missing (scripts/install-peers node22 ts2client python)",
                path.display()
            ));
        }
    }
    Ok(peers)
}

/// The figures of one child run (the keys of `bench_common::Meter`), and the server's counts.
#[derive(Clone, Default)]
struct Run {
    fields: BTreeMap<String, f64>,
    requests: f64,
    connections: f64,
    h2_connections: f64,
}

impl Run {
    fn get(&self, key: &str) -> Option<f64> {
        self.fields.get(key).copied()
    }
}

/// What a group's row needs to start its child.
struct Invocation {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, PathBuf)>,
}

/// The longest a child may run before it is killed and the suite fails.
const CHILD_DEADLINE: Duration = Duration::from_secs(300);

/// The most of a child's stdout read (its figures are one line at the end).
const STDOUT_LIMIT: u64 = 1 << 20;
/// How much of the end of a child's stderr is kept for the error message.
const STDERR_KEPT: usize = 64 << 10;

/// Reads `err` to its end, keeping only its last `STDERR_KEPT` bytes.
fn keep_tail(mut err: impl Read) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match err.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * STDERR_KEPT {
                    kept.drain(..kept.len() - STDERR_KEPT);
                }
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

fn run_child(inv: &Invocation, stats: &dyn Fn() -> (u64, u64, u64)) -> Result<Run, String> {
    let before = stats();
    let mut command = Command::new(&inv.program);
    command
        .args(&inv.args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in &inv.env {
        command.env(key, value);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("start {}: {e}", inv.program.display()))?;
    let pid = child.id() as libc::pid_t;
    // A watchdog: the child is killed when it outlives the deadline.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(CHILD_DEADLINE).is_err() {
            // SAFETY: `pid` is our child, not yet reaped (the main thread reaps it below,
            // after this thread has been told or has fired).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    // Both pipes drained at once (stderr on a thread of its own): a child that writes more
    // than a pipe's buffer to stderr before it closes stdout would otherwise block for ever.
    // Only the last STDERR_KEPT bytes of stderr are kept.
    let stderr_reader = child
        .stderr
        .take()
        .map(|err| std::thread::spawn(move || keep_tail(err)));
    let mut stdout = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = out.take(STDOUT_LIMIT).read_to_string(&mut stdout);
    }
    let stderr = stderr_reader
        .and_then(|reader| reader.join().ok())
        .unwrap_or_default();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped (std's `Child` is never waited on here);
    // both pointers are to live locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let _ = done_tx.send(());
    let _ = watchdog.join();
    if reaped != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    let command_line = || format!("{} {}", inv.program.display(), inv.args.join(" "));
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let tail: String = stderr
            .trim()
            .chars()
            .rev()
            .take(600)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!(
            "{} failed (status {status:#x}): {tail}",
            command_line()
        ));
    }
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("wall_us="))
        .ok_or_else(|| format!("{}: no figures in {stdout:?}", command_line()))?;
    let fields = line
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect();
    let after = stats();
    Ok(Run {
        fields,
        requests: (after.0 - before.0) as f64,
        connections: (after.1 - before.1) as f64,
        h2_connections: (after.2 - before.2) as f64,
    })
}

/// One row: a contender in one era on one workload.
struct Row {
    workload: usize,
    era: &'static str,
    contender: usize,
    runs: Vec<Run>,
    instructions_per_call: Option<f64>,
}

/// The medians of a row.
#[derive(Clone, Copy, Default)]
pub struct Figures {
    pub calls_per_s: f64,
    pub cpu_per_call_us: f64,
    /// Half the range of CPU per call over the median, in percent.
    pub cpu_spread_pct: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub hwm_mib: f64,
    /// Peak RSS above the RSS at the workload's start, per call (KiB): the memory per call in
    /// flight on the `inflight` workloads.
    pub kib_per_call: f64,
    pub allocs_per_call: Option<f64>,
    pub connections: f64,
    pub h2_connections: f64,
    pub requests: f64,
    pub instructions_per_call: Option<f64>,
}

fn figures(row: &Row, calls: usize) -> Figures {
    if row.runs.is_empty() {
        return Figures::default();
    }
    let calls = calls.max(1) as f64;
    let pick = |f: &dyn Fn(&Run) -> f64| median(row.runs.iter().map(f).collect());
    let field = |r: &Run, k: &str| r.get(k).unwrap_or(0.0);
    let cpu: Vec<f64> = row
        .runs
        .iter()
        .map(|r| field(r, "cpu_us") / calls)
        .collect();
    let cpu_per_call_us = median(cpu.clone());
    let (lo, hi) = cpu
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    Figures {
        calls_per_s: pick(&|r| calls / (field(r, "wall_us") / 1e6)),
        cpu_per_call_us,
        cpu_spread_pct: if cpu_per_call_us > 0.0 {
            (hi - lo) / 2.0 / cpu_per_call_us * 100.0
        } else {
            0.0
        },
        p50_us: pick(&|r| field(r, "p50_us")),
        p99_us: pick(&|r| field(r, "p99_us")),
        max_us: pick(&|r| field(r, "max_us")),
        hwm_mib: pick(&|r| field(r, "hwm_kib") / 1024.0),
        kib_per_call: pick(&|r| (field(r, "hwm_kib") - field(r, "rss0_kib")) / calls),
        allocs_per_call: row
            .runs
            .iter()
            .all(|r| r.get("allocs").is_some())
            .then(|| pick(&|r| field(r, "allocs") / calls)),
        connections: pick(&|r| r.connections),
        h2_connections: pick(&|r| r.h2_connections),
        requests: pick(&|r| r.requests),
        instructions_per_call: row.instructions_per_call,
    }
}

struct Options {
    runs: usize,
    only: Option<Vec<String>>,
    contenders: Option<Vec<String>>,
    inflight: usize,
    wait_ms: u64,
    instructions: bool,
    out: PathBuf,
}

fn usage() -> ! {
    eprintln!(
        "usage: compare suite [--runs N] [--only WORKLOAD,...] [--contenders KEY,...] [--inflight N]\n\
         \x20                    [--wait-ms MS] [--instructions] [--out DIR]\n\
         workloads: {}\ncontenders: {}",
        WORKLOADS
            .iter()
            .map(|w| w.key)
            .collect::<Vec<_>>()
            .join(", "),
        CONTENDERS
            .iter()
            .map(|c| c.key)
            .collect::<Vec<_>>()
            .join(", ")
    );
    std::process::exit(2)
}

fn options() -> Options {
    let mut options = Options {
        runs: 5,
        only: None,
        contenders: None,
        inflight: 10_000,
        wait_ms: 1000,
        instructions: false,
        out: PathBuf::from("suite-results"),
    };
    let mut args = std::env::args().skip(2);
    let list = |v: Option<String>| -> Vec<String> {
        v.unwrap_or_default()
            .split(',')
            .map(str::to_owned)
            .collect()
    };
    while let Some(arg) = args.next() {
        let mut number = |what: &str| -> u64 {
            args.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| {
                eprintln!("{what} needs a number");
                usage()
            })
        };
        match arg.as_str() {
            "--runs" => options.runs = number("--runs") as usize,
            "--inflight" => options.inflight = number("--inflight") as usize,
            "--wait-ms" => options.wait_ms = number("--wait-ms"),
            "--instructions" => options.instructions = true,
            "--only" => options.only = Some(list(args.next())),
            "--contenders" => options.contenders = Some(list(args.next())),
            "--out" => options.out = args.next().map(PathBuf::from).unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    options
}

fn rustc_version() -> String {
    Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "rustc (unknown)".to_owned())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default()
}

/// A target's verdict line.
struct Verdict {
    what: String,
    ratio: f64,
    limit: f64,
    /// `true` when the ratio must be at most the limit.
    at_most: bool,
}

impl Verdict {
    fn met(&self) -> bool {
        if self.at_most {
            self.ratio <= self.limit
        } else {
            self.ratio >= self.limit
        }
    }
}

pub fn main() {
    let options = options();
    let dir = driver_dir();
    let peers = peers();
    let mut skipped: Vec<String> = Vec::new();
    let contenders: Vec<&Contender> = CONTENDERS
        .iter()
        .filter(|c| {
            options
                .contenders
                .as_ref()
                .is_none_or(|keep| keep.iter().any(|k| k == c.key))
        })
        .filter(|c| match (c.runner, &peers) {
            (Runner::Native(program), _) => {
                let there = dir.join(program).exists();
                if !there {
                    skipped.push(format!("{}: {} is not built (./run.sh)", c.label, program));
                }
                there
            }
            (_, Ok(_)) => true,
            (_, Err(why)) => {
                skipped.push(format!("{}: {why}", c.label));
                false
            }
        })
        .collect();
    let workloads: Vec<&Workload> = WORKLOADS
        .iter()
        .filter(|w| {
            options
                .only
                .as_ref()
                .is_none_or(|only| only.iter().any(|o| o == w.key))
        })
        .collect();
    let calls = |w: &Workload| -> usize {
        match w.key {
            "inflight" | "inflight-h2" => options.inflight,
            "big" | "progress" => 1,
            _ => w.n,
        }
    };
    let n_arg = |w: &Workload| -> usize {
        match w.key {
            "inflight" | "inflight-h2" => options.inflight,
            _ => w.n,
        }
    };

    let (runtime, demo) = demo_server();
    let list = runtime
        .block_on(ListServer::start())
        .expect("the tools/list server");
    let wait = runtime
        .block_on(WaitServer::start())
        .expect("the wait server");
    let ca_file = wait_server::ca_file();
    let stats_of = |target: Target| -> (u64, u64, u64) {
        match target {
            Target::Demo => {
                let s = demo.stats();
                (s.requests, s.connections, 0)
            }
            Target::List => {
                let (r, c) = list.stats();
                (r, c, 0)
            }
            Target::Wait | Target::WaitTls => wait.stats(),
        }
    };
    let url_of = |target: Target| match target {
        Target::Demo => demo.url(),
        Target::List => list.url(),
        Target::Wait => wait.url(),
        Target::WaitTls => wait.tls_url(),
    };
    let invocation = |c: &Contender, w: &Workload, era: &str, workload: &str| -> Invocation {
        let mut args = vec![url_of(w.target), workload.to_owned(), n_arg(w).to_string()];
        args.extend(c.mode.map(str::to_owned));
        args.push(era.to_owned());
        if w.target == Target::Wait || w.target == Target::WaitTls {
            args.push(options.wait_ms.to_string());
        }
        let mut env = vec![("BENCH_CA_FILE".to_owned(), ca_file.clone())];
        if c.mode == Some("default") {
            // rmcp's default reqwest client takes no CA of ours; it trusts the platform's
            // roots (rustls-platform-verifier, rustls-native-certs on Linux), which a host
            // extends the usual way.
            env.push(("SSL_CERT_FILE".to_owned(), ca_file.clone()));
        }
        let program = match (c.runner, &peers) {
            (Runner::Native(program), _) => dir.join(program),
            (Runner::Node, Ok(p)) => {
                args.insert(
                    0,
                    clients_dir().join("ts/bench-ts.mjs").display().to_string(),
                );
                env.push(("BENCH_TS_MODULES".to_owned(), p.ts_modules.clone()));
                env.push(("NODE_EXTRA_CA_CERTS".to_owned(), ca_file.clone()));
                p.node.clone()
            }
            (Runner::Python, Ok(p)) => {
                args.insert(
                    0,
                    clients_dir().join("py/bench_py.py").display().to_string(),
                );
                env.push(("SSL_CERT_FILE".to_owned(), ca_file.clone()));
                p.python.clone()
            }
            (_, Err(_)) => unreachable!("filtered out above"),
        };
        Invocation { program, args, env }
    };

    // The groups (workload, era) and their rows.
    let mut rows: Vec<Row> = Vec::new();
    let mut groups: Vec<(usize, &'static str, Vec<usize>)> = Vec::new();
    let mut not_run: Vec<String> = Vec::new();
    // The `Caller`'s `inflight` rows run only up to what the built bench-caller can hold.
    let caller_limit = contenders
        .iter()
        .any(|c| c.key == "caller")
        .then(|| caller_in_flight_limit(&dir.join("bench-caller")))
        .flatten();
    let mut caller_capped = None;
    if contenders.iter().any(|c| c.key == "rmcp-fresh") {
        not_run.push(
            "rmcp 3.11, shared, session per call: every row but sequential and concurrent at 2025, \
             where the Caller opens a session per call (at 2026-07-28 it caches the probe and \
             sends stateless POSTs, one session's shape; the other rows make one call): rmcp \
             shared is the like there"
                .to_owned(),
        );
    }
    for (wi, w) in workloads.iter().enumerate() {
        for &era in w.eras {
            let mut members = Vec::new();
            for (ci, c) in contenders.iter().enumerate() {
                let runnable = match client_workload(c, w, era) {
                    Ok(_)
                        if c.key == "caller"
                            && w.target != Target::Demo
                            && w.target != Target::List
                            && caller_limit.is_some_and(|limit| options.inflight > limit) =>
                    {
                        let why = caller_capped_reason(caller_limit.unwrap_or_default());
                        caller_capped = Some(why.clone());
                        Err(why)
                    }
                    other => other.map_err(str::to_owned),
                };
                match runnable {
                    Ok(_) => {
                        members.push(rows.len());
                        rows.push(Row {
                            workload: wi,
                            era,
                            contender: ci,
                            runs: Vec::new(),
                            instructions_per_call: None,
                        });
                    }
                    // Said once, before the loop.
                    Err(_) if c.key == "rmcp-fresh" => {}
                    // Said once per workload, unless another era has another reason.
                    Err(why)
                        if era == w.eras[0]
                            || client_workload(c, w, w.eras[0]).err() != Some(why.as_str()) =>
                    {
                        let era = if w.eras.len() > 1 {
                            format!(" {era}")
                        } else {
                            String::new()
                        };
                        not_run.push(format!("{}{era} / {}: {why}", w.key, c.label))
                    }
                    Err(_) => {}
                }
            }
            groups.push((wi, era, members));
        }
    }

    let started = Instant::now();
    println!(
        "compare suite: every MCP client side by side, one run; servers in the driver's process \
         (2 tokio worker threads): the demo server {}, the 100-tool list server {}, the wait server \
         {} and {}",
        demo.url(),
        list.url(),
        wait.url(),
        wait.tls_url()
    );
    println!(
        "machine: {} cores, {}; {}; load average at start: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model(),
        rustc_version(),
        loadavg()
    );
    println!(
        "{} timed rounds after one warm-up run of every row; each round runs every group's rows once, \
         the order rotating; medians. CPU = user+sys of the client process during the workload \
         (its getrusage); spread = half the range of CPU/call over the median.",
        options.runs
    );
    for s in skipped.iter().chain(&not_run) {
        println!("not run: {s}");
    }
    let run_row = |row: &Row| -> Result<Run, String> {
        let (c, w) = (contenders[row.contender], workloads[row.workload]);
        let workload = client_workload(c, w, row.era).expect("rows are made for runnable pairs");
        let inv = invocation(c, w, row.era, workload);
        run_child(&inv, &|| stats_of(w.target))
            .map_err(|e| format!("{} {} {}: {e}", w.key, row.era, c.label))
    };
    // Rows of other libraries that fail their warm-up run: left out of the timed rounds and
    // reported with their error (a library's own limit, e.g. a cap on an SSE event's size).
    // Any other failure (mcpwire's rows, the floor, or a later round) stops the suite.
    let mut failed: Vec<(usize, String)> = Vec::new();
    for round in 0..=options.runs {
        for (_, _, members) in groups.iter_mut() {
            let order: Vec<usize> = (0..members.len())
                .map(|i| members[(i + round) % members.len()])
                .collect();
            for at in order {
                match run_row(&rows[at]) {
                    Ok(run) if round > 0 => rows[at].runs.push(run),
                    Ok(_) => {}
                    Err(e) if round == 0 && contenders[rows[at].contender].other_library() => {
                        eprintln!("{e} (left out of the timed rounds)");
                        members.retain(|&m| m != at);
                        failed.push((at, e));
                    }
                    Err(e) => {
                        eprintln!("{e}");
                        std::process::exit(1)
                    }
                }
            }
        }
        eprintln!(
            "compare suite: round {round} of {} done ({:.0} s, load {})",
            options.runs,
            started.elapsed().as_secs_f64(),
            loadavg()
        );
    }

    if options.instructions {
        // Callgrind counts user-space instructions, which other load does not move: at N calls
        // and at none, the difference over N. The sequential workload's Rust rows.
        for row in rows.iter_mut() {
            let (c, w) = (contenders[row.contender], workloads[row.workload]);
            let Runner::Native(program) = c.runner else {
                continue;
            };
            if w.key != "sequential" || row.runs.is_empty() {
                continue;
            }
            let workload = client_workload(c, w, row.era).expect("runnable");
            let program = dir.join(program);
            let mut args = invocation(c, w, row.era, workload).args;
            let at_n = crate::binding::instructions(&program, &args);
            args[2] = "0".to_owned();
            let at_0 = crate::binding::instructions(&program, &args);
            match (at_n, at_0) {
                (Ok(n), Ok(zero)) => {
                    row.instructions_per_call = Some(n.saturating_sub(zero) as f64 / w.n as f64)
                }
                (Err(e), _) | (_, Err(e)) => eprintln!("callgrind {} {}: {e}", c.label, row.era),
            }
        }
    }

    // The table.
    let figures_of: Vec<Figures> = rows
        .iter()
        .map(|r| figures(r, calls(workloads[r.workload])))
        .collect();
    for (wi, era, members) in &groups {
        let w = workloads[*wi];
        println!();
        let n = calls(w);
        let label = match w.key {
            "inflight" | "inflight-h2" => format!("{n} {} ({} ms)", w.label, options.wait_ms),
            _ => w.label.to_owned(),
        };
        println!("== {label}, era {era} ({} runs)", options.runs);
        println!(
            "{:<36} {:>9} {:>11} {:>7} {:>9} {:>9} {:>9} {:>8} {:>9} {:>10} {:>6} {:>11}",
            "contender",
            "calls/s",
            "CPU/call µs",
            "spread",
            "p50 µs",
            "p99 µs",
            "max µs",
            "RSS MiB",
            "KiB/call",
            "allocs/call",
            "conns",
            "instr/call"
        );
        for &at in members {
            let (r, f) = (&rows[at], &figures_of[at]);
            let c = contenders[r.contender];
            let conns = if f.h2_connections > 0.0 {
                format!("{:.0}h2", f.connections)
            } else {
                format!("{:.0}", f.connections)
            };
            println!(
                "{:<36} {:>9.0} {:>11.1} {:>6.0}% {:>9.0} {:>9.0} {:>9.0} {:>8.1} {:>9.2} {:>10} {:>6} {:>11}",
                c.label,
                f.calls_per_s,
                f.cpu_per_call_us,
                f.cpu_spread_pct,
                f.p50_us,
                f.p99_us,
                f.max_us,
                f.hwm_mib,
                f.kib_per_call,
                f.allocs_per_call
                    .map_or("-".to_owned(), |a| format!("{a:.1}")),
                conns,
                f.instructions_per_call
                    .map_or("-".to_owned(), |i| format!("{i:.0}")),
            );
        }
    }

    if !failed.is_empty() {
        println!();
        println!("== Rows that failed their warm-up run (left out of the timed rounds)");
        for (_, e) in &failed {
            println!("FAIL  {e}");
        }
    }

    // The targets.
    let find = |wkey: &str, era: &str, ckey: &str| -> Option<Figures> {
        rows.iter().zip(&figures_of).find_map(|(r, f)| {
            (workloads[r.workload].key == wkey
                && !r.runs.is_empty()
                && r.era == era
                && contenders[r.contender].key == ckey)
                .then_some(*f)
        })
    };
    let mut verdicts: Vec<Verdict> = Vec::new();
    // Ratios beside a target that are not its measure (the Caller's fresh sessions against
    // one rmcp session): printed and kept in results.json, no verdict.
    let mut comparisons: Vec<(String, f64)> = Vec::new();
    // rmcp's cheaper one-session client on a workload and era: the stricter comparison.
    let cheaper_rmcp = |wkey: &str, era: &str| {
        ["rmcp-shared", "rmcp-default"]
            .into_iter()
            .filter_map(|k| find(wkey, era, k).map(|f| (k, f)))
            .min_by(|a, b| a.1.cpu_per_call_us.total_cmp(&b.1.cpu_per_call_us))
    };
    for (wi, era, _) in &groups {
        let w = workloads[*wi];
        let rmcp = cheaper_rmcp(w.key, era);
        for ours in ["client", "caller"] {
            let Some(m) = find(w.key, era, ours) else {
                continue;
            };
            // The binding layer's 2025 path opens a session per call (a host's shape): where
            // it makes many calls, rmcp opening a session per call is its like.
            let fresh = (ours == "caller" && *era == "2025")
                .then(|| find(w.key, era, "rmcp-fresh"))
                .flatten();
            if let Some(r) = fresh {
                verdicts.push(Verdict {
                    what: format!(
                        "caller / rmcp-fresh, CPU per call, {} 2025 (both a session per call)",
                        w.key
                    ),
                    ratio: m.cpu_per_call_us / r.cpu_per_call_us,
                    limit: 0.35,
                    at_most: true,
                });
                if let Some((rk, r)) = rmcp {
                    comparisons.push((
                        format!(
                            "caller / {rk}, CPU per call, {} 2025 (a session per call / one session)",
                            w.key
                        ),
                        m.cpu_per_call_us / r.cpu_per_call_us,
                    ));
                }
            } else if let Some((rk, r)) = rmcp {
                verdicts.push(Verdict {
                    what: format!(
                        "{ours} / {rk}, CPU per call, {} {era}{}",
                        w.key,
                        if ours == "caller" && *era == "2025" {
                            " (one call: one session each)"
                        } else {
                            ""
                        }
                    ),
                    ratio: m.cpu_per_call_us / r.cpu_per_call_us,
                    limit: 0.35,
                    at_most: true,
                });
            }
        }
    }
    if let (Some(m), Some(f)) = (
        find("sequential", "2026", "client"),
        find("sequential", "2026", "floor"),
    ) {
        verdicts.push(Verdict {
            what: "client / floor, CPU per call, sequential 2026".to_owned(),
            ratio: m.cpu_per_call_us / f.cpu_per_call_us,
            limit: 1.3,
            at_most: true,
        });
    }
    if let (Some(m), Some(f)) = (
        find("sequential", "2026", "client"),
        find("sequential", "2026", "floor"),
    ) && let (Some(mi), Some(fi)) = (m.instructions_per_call, f.instructions_per_call)
    {
        verdicts.push(Verdict {
            what: "client / floor, instructions per call, sequential 2026".to_owned(),
            ratio: mi / fi,
            limit: 1.3,
            at_most: true,
        });
    }
    for era in ["2026", "2025"] {
        for ours in ["client", "caller"] {
            let Some(m) = find("concurrent", era, ours) else {
                continue;
            };
            // Like against like: the Caller's fresh sessions at 2025 against rmcp's; every
            // other row against the one-session contenders.
            let fresh_shape = ours == "caller" && era == "2025";
            let best_other = contenders
                .iter()
                .filter(|c| !["client", "caller", "floor"].contains(&c.key))
                .filter(|c| (c.key == "rmcp-fresh") == fresh_shape)
                .filter_map(|c| find("concurrent", era, c.key).map(|f| (c.key, f.p99_us)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((k, p99)) = best_other {
                verdicts.push(Verdict {
                    what: format!(
                        "{ours} / best other ({k}), p99 latency, concurrent {era}{}",
                        if fresh_shape {
                            " (both a session per call)"
                        } else {
                            ""
                        }
                    ),
                    ratio: m.p99_us / p99,
                    limit: 1.0,
                    at_most: true,
                });
            }
        }
    }
    for era in ["2026", "2025"] {
        for ours in ["client", "caller"] {
            if let Some(m) = find("big", era, ours) {
                verdicts.push(Verdict {
                    what: format!("{ours} peak RSS / 10 MiB result, big {era}"),
                    ratio: m.hwm_mib / 10.0,
                    limit: 2.0,
                    at_most: true,
                });
            }
        }
    }
    for wkey in ["inflight", "inflight-h2"] {
        for ours in ["client", "caller"] {
            let rmcp = ["rmcp-shared", "rmcp-default"]
                .into_iter()
                .filter_map(|k| find(wkey, "2026", k).map(|f| (k, f)))
                .min_by(|a, b| a.1.kib_per_call.total_cmp(&b.1.kib_per_call));
            if let (Some(m), Some((rk, r))) = (find(wkey, "2026", ours), rmcp) {
                verdicts.push(Verdict {
                    what: format!("{ours} / {rk}, RSS per call in flight, {wkey}"),
                    ratio: m.kib_per_call / r.kib_per_call,
                    limit: 0.5,
                    at_most: true,
                });
            }
        }
    }
    if let Some(why) = &caller_capped {
        println!();
        println!(
            "MISS  caller, {} calls in flight with zero failures: {why}",
            options.inflight
        );
    }
    println!();
    println!("== Targets (ratios of medians from this run)");
    for v in &verdicts {
        println!(
            "{}  {:<92} {:>6.2}x (target {} {}x)",
            if v.met() { "MET " } else { "MISS" },
            v.what,
            v.ratio,
            if v.at_most { "<=" } else { ">=" },
            v.limit
        );
    }
    for (what, ratio) in &comparisons {
        println!("      {what:<92} {ratio:>6.2}x (no target: not like for like)");
    }
    println!(
        "failed calls: 0 on every row in the tables (a call that fails, or a wrong result, fails \
         the run{})",
        if failed.is_empty() {
            ""
        } else {
            "; the rows above that failed are not in the tables"
        }
    );
    println!();
    println!("load average at end: {}", loadavg());
    println!("total wall time: {:.0} s", started.elapsed().as_secs_f64());

    // The charts and the figures as JSON.
    if let Err(e) = std::fs::create_dir_all(&options.out) {
        eprintln!("{}: {e}", options.out.display());
        std::process::exit(1);
    }
    let mut json_rows = Vec::new();
    for (r, f) in rows
        .iter()
        .zip(&figures_of)
        .filter(|(r, _)| !r.runs.is_empty())
    {
        json_rows.push(serde_json::json!({
            "workload": workloads[r.workload].key,
            "era": r.era,
            "contender": contenders[r.contender].key,
            "label": contenders[r.contender].label,
            // Which rows open a session per call (the Caller's 2025 path, rmcp-fresh) and
            // which one for all their calls (every other row).
            "sessions": if (contenders[r.contender].key == "caller" && r.era == "2025")
                || contenders[r.contender].key == "rmcp-fresh"
            {
                "per call"
            } else {
                "one"
            },
            "calls_per_s": f.calls_per_s,
            "cpu_per_call_us": f.cpu_per_call_us,
            "cpu_spread_pct": f.cpu_spread_pct,
            "p50_us": f.p50_us, "p99_us": f.p99_us, "max_us": f.max_us,
            "peak_rss_mib": f.hwm_mib,
            "kib_per_call": f.kib_per_call,
            "allocs_per_call": f.allocs_per_call,
            "connections": f.connections,
            "h2_connections": f.h2_connections,
            "requests": f.requests,
            "instructions_per_call": f.instructions_per_call,
            "runs": r.runs.len(),
        }));
    }
    let json = serde_json::json!({
        "runs": options.runs,
        "inflight": options.inflight,
        "wait_ms": options.wait_ms,
        "rows": json_rows,
        "failed": failed.iter().map(|(_, e)| e.as_str()).collect::<Vec<_>>(),
        "targets": verdicts.iter().map(|v| serde_json::json!({
            "what": v.what, "ratio": v.ratio, "limit": v.limit, "met": v.met(),
        })).collect::<Vec<_>>(),
        "comparisons": comparisons.iter().map(|(what, ratio)| serde_json::json!({
            "what": what, "ratio": ratio,
        })).collect::<Vec<_>>(),
        "not_run": not_run,
    });
    let write = |name: &str, text: String| {
        let path = options.out.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("{}: {e}", path.display());
            std::process::exit(1);
        }
        println!("wrote {}", path.display());
    };
    write("results.json", format!("{json:#}\n"));

    let chart_rows: Vec<ChartRow> = rows
        .iter()
        .zip(&figures_of)
        .filter(|(r, _)| !r.runs.is_empty())
        .map(|(r, f)| ChartRow {
            workload: workloads[r.workload].key.to_owned(),
            era: r.era.to_owned(),
            contender: contenders[r.contender].key.to_owned(),
            figures: *f,
        })
        .collect();
    let keys: Vec<&str> = contenders.iter().map(|c| c.key).collect();
    for (name, text) in charts(&chart_rows, &keys, options.inflight) {
        write(&name, text);
    }
}

/// What the charts need of a row with figures: which it is, and its medians.
pub struct ChartRow {
    workload: String,
    era: String,
    contender: String,
    figures: Figures,
}

/// The suite's charts, `(file name, SVG)`, from its rows: CPU per call per era, latency
/// percentiles, memory per call in flight. `contenders` are the keys of the contenders that
/// were run, in the order of the table; one that has no figure in a chart is left out of it.
fn charts(rows: &[ChartRow], contenders: &[&str], inflight: usize) -> Vec<(String, String)> {
    let find = |wkey: &str, era: &str, ckey: &str| {
        rows.iter()
            .find(|r| r.workload == wkey && r.era == era && r.contender == ckey)
            .map(|r| r.figures)
    };
    let known: Vec<&Contender> = contenders
        .iter()
        .filter_map(|k| CONTENDERS.iter().find(|c| c.key == *k))
        .collect();
    let missing = "not run or failed (the table says why)";
    // A chart's contenders: those with a figure in one of its groups.
    let present = |cells: &[(&str, &str)]| -> Vec<&Contender> {
        known
            .iter()
            .copied()
            .filter(|c| cells.iter().any(|(w, era)| find(w, era, c.key).is_some()))
            .collect()
    };
    let series = |present: &[&Contender]| -> Vec<svg::Series<'static>> {
        present
            .iter()
            .map(|c| svg::Series {
                label: c.label,
                colour: c.colour,
            })
            .collect()
    };
    let mut out = Vec::new();
    // CPU per call: one chart per era, a group of bars per workload.
    for era in ["2026", "2025"] {
        let cells: Vec<(&str, &str)> = WORKLOADS
            .iter()
            .filter(|w| w.eras.contains(&era) && rows.iter().any(|r| r.workload == w.key))
            .map(|w| (w.key, era))
            .collect();
        let present = present(&cells);
        if present.is_empty() {
            continue;
        }
        let groups: Vec<svg::Group> = cells
            .iter()
            .map(|(wkey, era)| svg::Group {
                label: (*wkey).to_owned(),
                values: present
                    .iter()
                    .map(|c| find(wkey, era, c.key).map(|f| f.cpu_per_call_us))
                    .collect(),
            })
            .collect();
        out.push((
            format!("cpu-per-call-{era}.svg"),
            svg::bars(&svg::Chart {
                title: &format!("Client CPU per call, era {era} (µs, log scale; lower is better)"),
                series: &series(&present),
                groups: &groups,
                log: true,
                unit: "µs",
                missing,
            }),
        ));
    }
    // Latency percentiles at 256 at once and on the sequential workload.
    for (wkey, era) in [
        ("concurrent", "2026"),
        ("concurrent", "2025"),
        ("sequential", "2026"),
    ] {
        let present = present(&[(wkey, era)]);
        if present.is_empty() {
            continue;
        }
        let groups: Vec<svg::Group> = [("p50", 0), ("p99", 1), ("max", 2)]
            .iter()
            .map(|(label, which)| svg::Group {
                label: (*label).to_owned(),
                values: present
                    .iter()
                    .map(|c| find(wkey, era, c.key).map(|f| [f.p50_us, f.p99_us, f.max_us][*which]))
                    .collect(),
            })
            .collect();
        out.push((
            format!("latency-{wkey}-{era}.svg"),
            svg::bars(&svg::Chart {
                title: &format!("Latency per call, {wkey} {era} (µs, log scale; lower is better)"),
                series: &series(&present),
                groups: &groups,
                log: true,
                unit: "µs",
                missing,
            }),
        ));
    }
    // Memory per call in flight.
    let present = present(&[("inflight", "2026"), ("inflight-h2", "2026")]);
    if !present.is_empty() {
        let groups: Vec<svg::Group> = ["inflight", "inflight-h2"]
            .iter()
            .map(|wkey| svg::Group {
                label: if *wkey == "inflight" {
                    "HTTP/1.1".to_owned()
                } else {
                    "TLS, HTTP/2 where spoken".to_owned()
                },
                values: present
                    .iter()
                    .map(|c| find(wkey, "2026", c.key).map(|f| f.kib_per_call))
                    .collect(),
            })
            .collect();
        out.push((
            "memory-per-call-in-flight.svg".to_owned(),
            svg::bars(&svg::Chart {
                title: &format!(
                    "Resident memory per call in flight, {} calls at once (KiB; lower is better)",
                    thousands(inflight)
                ),
                series: &series(&present),
                groups: &groups,
                log: false,
                unit: "KiB",
                missing,
            }),
        ));
    }
    out
}

/// `10000` as "10,000".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// `compare charts RESULTS.json [--out DIR]`: draws the suite's charts again from a
/// `results.json` it wrote (default: into the file's directory), so a change to the charts
/// does not need a new run and the figures stay those of the run.
pub fn charts_main() {
    let mut args = std::env::args().skip(2);
    let Some(from) = args.next().map(PathBuf::from) else {
        eprintln!("usage: compare charts RESULTS.json [--out DIR]");
        std::process::exit(2)
    };
    let out = match (args.next().as_deref(), args.next()) {
        (Some("--out"), Some(dir)) => PathBuf::from(dir),
        (None, _) => from
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_owned),
        _ => {
            eprintln!("usage: compare charts RESULTS.json [--out DIR]");
            std::process::exit(2)
        }
    };
    let fail = |e: String| -> ! {
        eprintln!("compare charts: {e}");
        std::process::exit(1)
    };
    let text =
        std::fs::read_to_string(&from).unwrap_or_else(|e| fail(format!("{}: {e}", from.display())));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| fail(format!("{}: {e}", from.display())));
    let number =
        |row: &serde_json::Value, key: &str| row.get(key).and_then(serde_json::Value::as_f64);
    let text_of = |row: &serde_json::Value, key: &str| {
        row.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| fail(format!("a row without {key}")))
    };
    let rows: Vec<ChartRow> = json
        .get("rows")
        .and_then(serde_json::Value::as_array)
        .unwrap_or_else(|| fail("no rows".to_owned()))
        .iter()
        .map(|row| ChartRow {
            workload: text_of(row, "workload"),
            era: text_of(row, "era"),
            contender: text_of(row, "contender"),
            figures: Figures {
                cpu_per_call_us: number(row, "cpu_per_call_us").unwrap_or_default(),
                p50_us: number(row, "p50_us").unwrap_or_default(),
                p99_us: number(row, "p99_us").unwrap_or_default(),
                max_us: number(row, "max_us").unwrap_or_default(),
                kib_per_call: number(row, "kib_per_call").unwrap_or_default(),
                ..Figures::default()
            },
        })
        .collect();
    let keys: Vec<&str> = CONTENDERS.iter().map(|c| c.key).collect();
    let inflight = json
        .get("inflight")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_default() as usize;
    if let Err(e) = std::fs::create_dir_all(&out) {
        fail(format!("{}: {e}", out.display()));
    }
    for (name, svg) in charts(&rows, &keys, inflight) {
        let path = out.join(name);
        if let Err(e) = std::fs::write(&path, svg) {
            fail(format!("{}: {e}", path.display()));
        }
        println!("wrote {}", path.display());
    }
}

/// `benches/compare/clients`, where the TypeScript and Python programs are.
fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients")
}
