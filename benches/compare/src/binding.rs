//! `compare binding`: the binding layer (`mcpwire::binding::call::Caller`, the path a host
//! runs) against the demo server in both eras, beside rmcp's client in each era, in one run.
//!
//! ```sh
//! compare binding [--runs N] [--only sequential,concurrent] [--instructions]
//! ```
//!
//! Each group runs its rows alternately as child processes (one warm-up run each, then `--runs`
//! rounds with the order rotating) and reports medians: calls/s from the child's own wall
//! time, the child's CPU during the workload (its `getrusage`, user + system, start-up
//! excluded) per call, and the server's count of HTTP requests and TCP connections per run.
//! Then the ratios the targets are about, each of medians from the same run.
//!
//! With `--instructions`, every row also runs once under `valgrind --tool=callgrind` at N
//! calls and once at 0 calls (the same program set up, nothing called); the difference over N
//! is the client's user-space instructions per call, a figure that other load on the machine
//! does not move.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::{Run, median, run_child};

/// One contender of a group: a label and the client program's arguments after the URL.
struct Row {
    label: &'static str,
    program: &'static str,
    /// `WORKLOAD N ...` with `{n}` for the call count.
    args: &'static [&'static str],
}

/// A ratio the targets are about: row `a`'s figure over row `b`'s.
struct Check {
    what: &'static str,
    a: usize,
    b: usize,
    metric: Metric,
    /// The target, if any: the ratio must be at least (`Metric::Rate`) or at most (CPU) this.
    target: Option<f64>,
}

#[derive(Clone, Copy, PartialEq)]
enum Metric {
    /// Calls per second (higher is better).
    Rate,
    /// Client CPU per call (lower is better).
    Cpu,
    /// Client user-space instructions per call, from callgrind (lower is better).
    Instructions,
}

struct Group {
    key: &'static str,
    label: &'static str,
    n: usize,
    rows: &'static [Row],
    checks: &'static [Check],
}

const MCPWIRE: &str = "bench-mcpwire";
/// The binding layer's workloads: `clients/mcpwire/src/caller.rs`, built with `bindings`.
const CALLER: &str = "bench-caller";
const RMCP: &str = "bench-rmcp";

const GROUPS: &[Group] = &[
    Group {
        key: "sequential",
        label: "1000 sequential calls (the binding layer's `Caller`, one `echo` per call)",
        n: 1000,
        rows: &[
            Row {
                label: "mcpwire Caller, 2026-07-28",
                program: CALLER,
                args: &["caller", "{n}", "2026"],
            },
            Row {
                label: "mcpwire Caller, 2025 path",
                program: CALLER,
                args: &["caller", "{n}", "2025"],
            },
            Row {
                label: "rmcp 2026-07-28, 1 session",
                program: RMCP,
                args: &["session", "{n}", "shared", "2026"],
            },
            Row {
                label: "rmcp 2025, fresh sessions",
                program: RMCP,
                args: &["fresh", "{n}", "shared", "2025"],
            },
        ],
        checks: &[
            Check {
                what: "modern path vs the 2025 fresh-session path, calls/s",
                a: 0,
                b: 1,
                metric: Metric::Rate,
                target: Some(2.5),
            },
            Check {
                what: "mcpwire 2026 vs rmcp 2026, client CPU per call",
                a: 0,
                b: 2,
                metric: Metric::Cpu,
                target: Some(0.5),
            },
            Check {
                what: "mcpwire 2026 vs rmcp 2026, instructions per call",
                a: 0,
                b: 2,
                metric: Metric::Instructions,
                target: Some(0.5),
            },
            Check {
                what: "mcpwire 2025 vs rmcp 2025 (both fresh sessions), CPU per call",
                a: 1,
                b: 3,
                metric: Metric::Cpu,
                target: Some(0.5),
            },
            Check {
                what: "mcpwire 2025 vs rmcp 2025 (both fresh sessions), instructions",
                a: 1,
                b: 3,
                metric: Metric::Instructions,
                target: Some(0.5),
            },
        ],
    },
    Group {
        key: "concurrent",
        label: "256 calls at once to one origin",
        n: 256,
        rows: &[
            Row {
                label: "mcpwire Caller, 2026-07-28",
                program: CALLER,
                args: &["caller-concurrent", "{n}", "2026"],
            },
            Row {
                label: "mcpwire Client, 2026-07-28",
                program: MCPWIRE,
                args: &["concurrent", "{n}", "2026"],
            },
            Row {
                label: "rmcp 2026-07-28, 1 session",
                program: RMCP,
                args: &["concurrent", "{n}", "shared", "2026"],
            },
            Row {
                label: "mcpwire Caller, 2026, <=16 at once",
                program: CALLER,
                args: &["caller-concurrent", "{n}", "2026", "16"],
            },
            Row {
                label: "mcpwire Client, 2025, 1 session",
                program: MCPWIRE,
                args: &["concurrent", "{n}", "2025"],
            },
            Row {
                label: "rmcp 2025, 1 session",
                program: RMCP,
                args: &["concurrent", "{n}", "shared", "2025"],
            },
        ],
        checks: &[
            Check {
                what: "mcpwire Caller 2026 vs rmcp 2026, CPU per call",
                a: 0,
                b: 2,
                metric: Metric::Cpu,
                target: Some(0.8),
            },
            Check {
                what: "mcpwire Caller 2026 vs rmcp 2026, instructions per call",
                a: 0,
                b: 2,
                metric: Metric::Instructions,
                target: Some(0.8),
            },
            Check {
                what: "mcpwire Client 2026 vs rmcp 2026, CPU per call",
                a: 1,
                b: 2,
                metric: Metric::Cpu,
                target: Some(0.8),
            },
            Check {
                what: "mcpwire Caller, host limit of 16 in flight, vs rmcp 2026, CPU (no target)",
                a: 3,
                b: 2,
                metric: Metric::Cpu,
                target: None,
            },
            Check {
                what: "mcpwire Client 2025 vs rmcp 2025 (the last benchmark's 1.36x), CPU",
                a: 4,
                b: 5,
                metric: Metric::Cpu,
                target: Some(0.8),
            },
        ],
    },
];

struct Options {
    runs: usize,
    only: Option<Vec<String>>,
    instructions: bool,
}

fn options() -> Options {
    let mut options = Options {
        runs: 7,
        only: None,
        instructions: false,
    };
    let mut args = std::env::args().skip(2);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => options.runs = n,
                None => usage(),
            },
            "--only" => {
                options.only = Some(
                    args.next()
                        .unwrap_or_default()
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                )
            }
            "--instructions" => options.instructions = true,
            _ => usage(),
        }
    }
    options
}

fn usage() -> ! {
    eprintln!("usage: compare binding [--runs N] [--only sequential,concurrent] [--instructions]");
    std::process::exit(2)
}

fn args(row: &Row, url: &str, n: usize) -> Vec<String> {
    std::iter::once(url.to_owned())
        .chain(row.args.iter().map(|a| a.replace("{n}", &n.to_string())))
        .collect()
}

/// The instructions callgrind counted in one run of `program` (the whole process).
pub(crate) fn instructions(program: &Path, args: &[String]) -> Result<u64, String> {
    let out = std::env::temp_dir().join(format!("compare-callgrind-{}.out", std::process::id()));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("valgrind: {e}"))?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()));
    let _ = std::fs::remove_file(&out);
    if !status.success() {
        return Err(format!(
            "valgrind {} {}: {status}",
            program.display(),
            args.join(" ")
        ));
    }
    text?
        .lines()
        .find_map(|line| line.strip_prefix("summary:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| "no summary line in callgrind's output".to_owned())
}

struct Figures {
    calls_per_s: f64,
    cpu_per_call_us: f64,
    process_cpu_ms: f64,
    requests: f64,
    connections: f64,
    rss_mib: f64,
    instructions_per_call: Option<f64>,
}

fn figures(runs: &[Run], n: usize) -> Figures {
    let pick = |f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
    Figures {
        calls_per_s: pick(&|r| n as f64 / r.wall.as_secs_f64()),
        cpu_per_call_us: pick(&|r| r.work_cpu.as_secs_f64() * 1e6 / n as f64),
        process_cpu_ms: pick(&|r| r.cpu.as_secs_f64() * 1e3),
        requests: pick(&|r| r.requests as f64),
        connections: pick(&|r| r.connections as f64),
        rss_mib: pick(&|r| r.max_rss as f64 / 1048576.0),
        instructions_per_call: None,
    }
}

pub fn main() {
    let options = options();
    let dir = crate::driver_dir();
    crate::require(&dir, &[MCPWIRE, CALLER, RMCP]);
    // The runtime runs the server: kept to the end.
    let (_runtime, server) = crate::demo_server();
    let url = server.url();
    let stats = || {
        let stats = server.stats();
        (stats.requests, stats.connections)
    };
    println!(
        "binding layer: mcpwire's Caller against `mcpwire::demo::DemoServer` (dual-era, 2026-07-28 \
         by default) at {url}, beside rmcp 3.11.0's client in each era"
    );
    println!(
        "{} timed rounds per group after one warm-up run of each row, order rotating; medians. \
         CPU = user+sys of the client process during the workload (its getrusage).",
        options.runs
    );
    println!("load average at start: {}", crate::loadavg());
    let mut verdicts = Vec::new();
    for group in GROUPS {
        if let Some(only) = &options.only
            && !only.iter().any(|o| o == group.key)
        {
            continue;
        }
        let attempt = |row: &Row| {
            run_child(&dir.join(row.program), &args(row, &url, group.n), &stats).unwrap_or_else(
                |e| {
                    eprintln!("{}: {e}", group.key);
                    std::process::exit(1)
                },
            )
        };
        for row in group.rows {
            attempt(row);
        }
        let mut runs: Vec<Vec<Run>> = vec![Vec::new(); group.rows.len()];
        for round in 0..options.runs {
            for i in 0..group.rows.len() {
                let at = (i + round) % group.rows.len();
                runs[at].push(attempt(&group.rows[at]));
            }
        }
        let mut summaries: Vec<Figures> = runs.iter().map(|r| figures(r, group.n)).collect();
        if options.instructions {
            for (row, summary) in group.rows.iter().zip(&mut summaries) {
                let program = dir.join(row.program);
                let count = |n| {
                    instructions(&program, &args(row, &url, n)).unwrap_or_else(|e| {
                        eprintln!("{}: {e}", group.key);
                        std::process::exit(1)
                    })
                };
                let (full, empty) = (count(group.n), count(0));
                summary.instructions_per_call =
                    Some(full.saturating_sub(empty) as f64 / group.n as f64);
            }
        }
        println!();
        println!("== {} ({} runs)", group.label, options.runs);
        println!(
            "{:<36} {:>9} {:>13} {:>11} {:>9} {:>6} {:>8} {:>12}",
            "row",
            "calls/s",
            "CPU/call µs",
            "proc CPU ms",
            "requests",
            "conns",
            "RSS MiB",
            "instr/call"
        );
        for (row, s) in group.rows.iter().zip(&summaries) {
            println!(
                "{:<36} {:>9.0} {:>13.1} {:>11.1} {:>9.0} {:>6.0} {:>8.1} {:>12}",
                row.label,
                s.calls_per_s,
                s.cpu_per_call_us,
                s.process_cpu_ms,
                s.requests,
                s.connections,
                s.rss_mib,
                s.instructions_per_call
                    .map_or("-".to_owned(), |i| format!("{i:.0}"))
            );
        }
        for check in group.checks {
            let (a, b) = (&summaries[check.a], &summaries[check.b]);
            let ratio = match check.metric {
                Metric::Rate => a.calls_per_s / b.calls_per_s,
                Metric::Cpu => a.cpu_per_call_us / b.cpu_per_call_us,
                Metric::Instructions => match (a.instructions_per_call, b.instructions_per_call) {
                    (Some(a), Some(b)) => a / b,
                    _ => continue,
                },
            };
            let verdict = match check.target {
                Some(t) if check.metric == Metric::Rate => {
                    if ratio >= t {
                        "PASS"
                    } else {
                        "MISS"
                    }
                }
                Some(t) => {
                    if ratio <= t {
                        "PASS"
                    } else {
                        "MISS"
                    }
                }
                None => "    ",
            };
            let target = check.target.map_or(String::new(), |t| {
                format!(
                    " (target {} {t}x)",
                    if check.metric == Metric::Rate {
                        ">="
                    } else {
                        "<="
                    }
                )
            });
            let line = format!("{verdict}  {:<74} {ratio:.2}x{target}", check.what);
            println!("{line}");
            verdicts.push(line);
        }
    }
    println!();
    println!("== Targets");
    for line in verdicts {
        println!("{line}");
    }
    println!();
    println!("load average at end: {}", crate::loadavg());
}
