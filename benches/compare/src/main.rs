//! The comparison driver: starts one local MCP server (mcpwire's demo server, in this process)
//! and runs the mcpwire and rmcp client programs against it as child processes, alternately,
//! measuring each child's CPU time and peak RSS with `wait4`.
//!
//! ```sh
//! ./run.sh                      # builds each package on its own, then runs this
//! compare --runs 5 --only fresh,big
//! compare --serve               # only the server, to profile a client by hand
//! compare binding [--runs 7] [--instructions]   # the binding layer, both eras, rmcp (binding.rs)
//! compare soak --calls 100000   # 100,000 calls through one Caller per era (soak.rs)
//! compare suite [--runs 5]      # every contender (TypeScript, Python, floor too), charts (suite.rs)
//! compare charts charts/results.json   # the suite's charts again, from the figures of a run
//! compare --baseline mcpwire@8842c1d=/tmp/.../bench-mcpwire   # one more mcpwire (baseline.sh)
//! ```
//!
//! For each workload: one untimed warm-up run of each contender (which also checks its
//! results), then `--runs` rounds; each round runs every contender once, the order rotating
//! from round to round (A B C, B C A, C A B, ...) so that machine noise and order effects hit
//! all alike. Reported: medians over the rounds of the workload's wall time as the client
//! measured it (process start-up excluded), calls/s from it, the child's user+sys CPU time
//! (whole process, from `wait4`), CPU per call, peak RSS (`VmHWM`, reported by the client at its
//! end: `ru_maxrss` would include the driver's own peak, see the clients), and the server's count
//! of HTTP requests and TCP connections per run. With `--baseline LABEL=PROGRAM` (see
//! `baseline.sh`), another build of the mcpwire client program runs as one more contender, first
//! in the list; this tree's is then called `mcpwire@HEAD`, and its ratios to the baseline are
//! printed.

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcpwire::demo::DemoServer;

mod binding;
mod fault;
mod list_server;
mod soak;
mod suite;
mod svg;
mod wait_server;
use list_server::ListServer;

/// Which server a workload runs against.
#[derive(Clone, Copy)]
enum Server {
    /// `mcpwire::demo::DemoServer`.
    Demo,
    /// `list_server::ListServer`: 100 tools in one `tools/list` page.
    List,
}

struct Workload {
    key: &'static str,
    label: &'static str,
    /// The count passed to the client.
    n: usize,
    /// Tool calls the workload makes (for calls/s and CPU per call).
    calls: usize,
    server: Server,
}

const WORKLOADS: &[Workload] = &[
    Workload {
        key: "fresh",
        label: "1000 sequential calls, fresh session each",
        n: 1000,
        calls: 1000,
        server: Server::Demo,
    },
    Workload {
        key: "session",
        label: "1000 sequential calls, one session",
        n: 1000,
        calls: 1000,
        server: Server::Demo,
    },
    Workload {
        key: "concurrent",
        label: "256 concurrent calls, one session",
        n: 256,
        calls: 256,
        server: Server::Demo,
    },
    Workload {
        key: "concurrent-fresh",
        label: "256 concurrent calls, fresh session each",
        n: 256,
        calls: 256,
        server: Server::Demo,
    },
    Workload {
        key: "big",
        label: "one call, 10 MiB text result",
        n: 10 << 20,
        calls: 1,
        server: Server::Demo,
    },
    Workload {
        key: "progress",
        label: "one call, 1000 progress notifications",
        n: 1000,
        calls: 1,
        server: Server::Demo,
    },
    Workload {
        key: "list",
        label: "100 sequential tools/list calls, 100 tools (121 KiB) each, one session",
        n: 100,
        calls: 100,
        server: Server::List,
    },
    Workload {
        key: "connect",
        label: "connect and close, no call (fixed cost)",
        n: 0,
        calls: 0,
        server: Server::Demo,
    },
];

struct Contender {
    name: &'static str,
    /// A file name in the driver's directory, or a path.
    program: &'static str,
    extra: &'static [&'static str],
}

const CONTENDERS: &[Contender] = &[
    Contender {
        name: "mcpwire",
        program: "bench-mcpwire",
        extra: &[],
    },
    Contender {
        name: "rmcp, shared client",
        program: "bench-rmcp",
        extra: &["shared"],
    },
    Contender {
        name: "rmcp, default client",
        program: "bench-rmcp",
        extra: &["default"],
    },
];

/// One child run.
#[derive(Clone, Copy)]
struct Run {
    /// The workload's wall time as the client measured it.
    wall: Duration,
    /// User + system CPU time of the whole child process.
    cpu: Duration,
    /// User + system CPU time of the child during the workload alone (its own `getrusage`).
    work_cpu: Duration,
    /// Peak resident set, bytes.
    max_rss: u64,
    requests: u64,
    connections: u64,
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
}

/// Runs one client to its end and takes its resource usage from `wait4`.
/// `stats` gives the server's counts of HTTP requests and TCP connections.
fn run_child(
    program: &Path,
    args: &[String],
    stats: &dyn Fn() -> (u64, u64),
) -> Result<Run, String> {
    let before = stats();
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("start {}: {e}", program.display()))?;
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped (std's `Child` is never waited on here);
    // both pointers are to live locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if reaped != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!(
            "{} {} failed (status {status:#x}): {}",
            program.display(),
            args.join(" "),
            stderr.trim()
        ));
    }
    let field = |name: &str| -> Result<u64, String> {
        stdout
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("no {name} in {stdout:?}"))
    };
    let wall_us = field("wall_us")?;
    let cpu_us = field("cpu_us")?;
    let hwm_kib = field("hwm_kib")?;
    let after = stats();
    Ok(Run {
        wall: Duration::from_micros(wall_us),
        cpu: timeval(usage.ru_utime) + timeval(usage.ru_stime),
        work_cpu: Duration::from_micros(cpu_us),
        // Not `usage.ru_maxrss`: see `peak_rss_kib` in the clients.
        max_rss: hwm_kib * 1024,
        requests: after.0 - before.0,
        connections: after.1 - before.1,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Medians of one contender's runs.
struct Summary {
    wall_ms: f64,
    calls_per_s: f64,
    cpu_ms: f64,
    cpu_per_call_ms: f64,
    rss_mib: f64,
    requests: f64,
    connections: f64,
}

fn summarize(runs: &[Run], calls: usize) -> Summary {
    let pick = |f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
    let wall_ms = pick(&|r| r.wall.as_secs_f64() * 1e3);
    let cpu_ms = pick(&|r| r.cpu.as_secs_f64() * 1e3);
    Summary {
        wall_ms,
        calls_per_s: pick(&|r| calls as f64 / r.wall.as_secs_f64()),
        cpu_ms,
        cpu_per_call_ms: cpu_ms / calls.max(1) as f64,
        rss_mib: pick(&|r| r.max_rss as f64 / 1048576.0),
        requests: pick(&|r| r.requests as f64),
        connections: pick(&|r| r.connections as f64),
    }
}

struct Options {
    /// Only serve (for profiling a client by hand): print the URL and wait.
    serve: bool,
    runs: usize,
    only: Option<Vec<String>>,
    contenders: Option<Vec<String>>,
    /// Other builds of the mcpwire client program: (label, program).
    baselines: Vec<(String, String)>,
}

fn options() -> Options {
    let mut options = Options {
        serve: false,
        runs: 5,
        only: None,
        contenders: None,
        baselines: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let list = |v: Option<String>| -> Vec<String> {
            v.unwrap_or_default()
                .split(',')
                .map(str::to_owned)
                .collect()
        };
        match arg.as_str() {
            "--runs" => {
                options.runs = args.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| {
                    eprintln!("--runs needs a count");
                    std::process::exit(2)
                })
            }
            "--only" => options.only = Some(list(args.next())),
            "--serve" => options.serve = true,
            "--contenders" => options.contenders = Some(list(args.next())),
            "--baseline" => match args.next().as_deref().and_then(|b| b.split_once('=')) {
                Some((label, program)) => options
                    .baselines
                    .push((label.to_owned(), program.to_owned())),
                None => {
                    eprintln!("--baseline needs LABEL=PROGRAM");
                    std::process::exit(2)
                }
            },
            _ => {
                eprintln!(
                    "usage: compare [--runs N] [--only WORKLOAD,...] [--contenders mcpwire,shared,default]\n\
                     \x20      [--baseline LABEL=PROGRAM]...   (another bench-mcpwire build, see baseline.sh)\n\
                     \x20      compare --serve   (only start the server, print its URL, wait)\n\
                     \x20      compare binding ...   (the binding layer in both eras, beside rmcp)\n\
                     \x20      compare soak ...      (100,000 calls through one Caller per era)\n\
                     \x20      compare suite ...     (every contender, both eras, targets, SVG charts)\n\
                     \x20      compare charts RESULTS.json [--out DIR]   (the suite's charts from its figures)\n\
                     workloads: {}",
                    WORKLOADS
                        .iter()
                        .map(|w| w.key)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                std::process::exit(2)
            }
        }
    }
    options
}

/// The directory of the driver, where the client programs are built beside it.
fn driver_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .expect("the driver's directory")
}

/// Exits with a message when one of the client programs is not built beside the driver.
fn require(dir: &Path, programs: &[&str]) {
    for program in programs {
        if !dir.join(program).exists() {
            eprintln!(
                "{} is missing: build with ./run.sh (each package on its own)",
                dir.join(program).display()
            );
            std::process::exit(2);
        }
    }
}

/// The runtime the servers run on (2 worker threads, in this process) and the demo server,
/// started on it (dual-era: 2026-07-28 by default, the 2025 path on request).
fn demo_server() -> (tokio::runtime::Runtime, DemoServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let server = runtime
        .block_on(DemoServer::start())
        .expect("the demo server");
    (runtime, server)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("binding") => return binding::main(),
        Some("soak") => return soak::main(),
        Some("suite") => return suite::main(),
        Some("charts") => return suite::charts_main(),
        _ => {}
    }
    let options = options();
    let dir = driver_dir();
    // The server alone needs no client program (instructions.sh uses it so).
    if !options.serve {
        require(&dir, &["bench-mcpwire", "bench-rmcp"]);
    }
    // Baselines first, then this tree's mcpwire (renamed mcpwire@HEAD beside a baseline), then
    // rmcp. The labels live as long as the driver.
    let mut contenders: Vec<&Contender> = Vec::new();
    for (label, program) in &options.baselines {
        if !Path::new(program).exists() {
            eprintln!("{program} is missing: build it with ./baseline.sh");
            std::process::exit(2);
        }
        contenders.push(Box::leak(Box::new(Contender {
            name: label.clone().leak(),
            program: program.clone().leak(),
            extra: &[],
        })));
    }
    let baselines = contenders.len();
    contenders.extend(
        CONTENDERS
            .iter()
            .filter(|c| {
                options.contenders.as_ref().is_none_or(|keep| {
                    keep.iter()
                        .any(|k| c.name == k || c.extra.first().is_some_and(|e| e == k))
                })
            })
            .map(|c| match c.program {
                "bench-mcpwire" if baselines > 0 => Box::leak(Box::new(Contender {
                    name: "mcpwire@HEAD",
                    ..*c
                })),
                _ => c,
            }),
    );
    let (runtime, server) = demo_server();
    let url = server.url();
    let list_server = runtime
        .block_on(ListServer::start())
        .expect("the tools/list server");
    let demo_stats = || {
        let stats = server.stats();
        (stats.requests, stats.connections)
    };
    let list_stats = || list_server.stats();
    if options.serve {
        println!("{url}");
        eprintln!("the list workload's server: {}", list_server.url());
        // The suite's wait server too, to profile an `inflight` client by hand.
        let wait = runtime
            .block_on(wait_server::WaitServer::start())
            .expect("the wait server");
        eprintln!(
            "the inflight workloads' wait server: {} and {} (CA file {})",
            wait.url(),
            wait.tls_url(),
            wait_server::ca_file().display()
        );
        loop {
            std::thread::park();
        }
    }
    let started = Instant::now();
    println!(
        "mcpwire vs rmcp 3.11.0, against `mcpwire::demo::DemoServer` at {url} (in the driver's process)"
    );
    println!(
        "`list` against a 100-tool server at {} (benches/compare/src/list_server.rs, same process)",
        list_server.url()
    );
    println!(
        "{} timed rounds per workload after one warm-up run each, order rotating; medians. \
         CPU = user+sys of the client process (wait4), RSS = its VmHWM.",
        options.runs
    );
    println!("load average at start: {}", loadavg());
    let mut verdicts = Vec::new();
    let mut changes = Vec::new();
    for workload in WORKLOADS {
        if let Some(only) = &options.only
            && !only.iter().any(|o| o == workload.key)
        {
            continue;
        }
        let (url, stats): (String, &dyn Fn() -> (u64, u64)) = match workload.server {
            Server::Demo => (url.clone(), &demo_stats),
            Server::List => (list_server.url(), &list_stats),
        };
        let args = |c: &Contender| -> Vec<String> {
            let mut args = vec![url.clone(), workload.key.to_owned(), workload.n.to_string()];
            args.extend(c.extra.iter().map(|e| (*e).to_owned()));
            args
        };
        let mut runs: Vec<Vec<Run>> = vec![Vec::new(); contenders.len()];
        let attempt = |c: &Contender| {
            run_child(&dir.join(c.program), &args(c), stats).unwrap_or_else(|e| {
                eprintln!("{}: {e}", workload.key);
                std::process::exit(1)
            })
        };
        for c in &contenders {
            attempt(c);
        }
        for round in 0..options.runs {
            for i in 0..contenders.len() {
                let at = (i + round) % contenders.len();
                runs[at].push(attempt(contenders[at]));
            }
        }
        println!();
        println!("== {} ({} runs)", workload.label, options.runs);
        println!(
            "{:<22} {:>10} {:>10} {:>10} {:>12} {:>10} {:>9} {:>6}",
            "contender",
            "calls/s",
            "wall ms",
            "CPU ms",
            "CPU/call ms",
            "RSS MiB",
            "requests",
            "conns"
        );
        let summaries: Vec<Summary> = runs.iter().map(|r| summarize(r, workload.calls)).collect();
        for (c, s) in contenders.iter().zip(&summaries) {
            let rate = if workload.calls == 0 {
                "-".to_owned()
            } else {
                format!("{:.0}", s.calls_per_s)
            };
            println!(
                "{:<22} {:>10} {:>10.1} {:>10.1} {:>12.3} {:>10.1} {:>9.0} {:>6.0}",
                c.name,
                rate,
                s.wall_ms,
                s.cpu_ms,
                s.cpu_per_call_ms,
                s.rss_mib,
                s.requests,
                s.connections
            );
        }
        let ratio = |m: &Summary, s: &Summary| {
            if workload.calls == 0 {
                "-".to_owned()
            } else {
                format!("{:.2}x", m.calls_per_s / s.calls_per_s)
            }
        };
        // This tree's mcpwire against the baselines before it and the rmcp clients after it.
        if let Some(at) = contenders.iter().position(|c| c.program == "bench-mcpwire") {
            let (name, m) = (contenders[at].name, &summaries[at]);
            for (i, (c, s)) in contenders.iter().zip(&summaries).enumerate() {
                if i == at {
                    continue;
                }
                println!(
                    "{name} / {:<20}  calls/s {}   CPU {:.2}x   peak RSS {:.2}x",
                    c.name,
                    ratio(m, s),
                    m.cpu_ms / s.cpu_ms,
                    m.rss_mib / s.rss_mib
                );
                if i < baselines {
                    changes.push((workload.key, c.name, s.cpu_per_call_ms, m.cpu_per_call_ms));
                    continue;
                }
                if workload.calls > 0 {
                    verdicts.push((workload.key, c.name, "CPU", m.cpu_ms / s.cpu_ms));
                }
                if workload.key == "big" {
                    verdicts.push((workload.key, c.name, "peak RSS", m.rss_mib / s.rss_mib));
                }
            }
        }
    }
    if !changes.is_empty() {
        println!();
        println!(
            "== mcpwire@HEAD / baseline: client CPU per call, medians (below 1: HEAD uses less)"
        );
        for (workload, baseline, before, after) in changes {
            println!(
                "{:<17} {:<20} {:>10.3} ms -> {:>8.3} ms   {:.2}x",
                workload,
                baseline,
                before,
                after,
                after / before
            );
        }
    }
    if !verdicts.is_empty() {
        println!();
        println!(
            "== Targets: mcpwire / rmcp <= 0.5 (client CPU per call; peak RSS on the 10 MiB result)"
        );
        for (workload, rival, what, ratio) in verdicts {
            println!(
                "{}  {:<17} {:<9} vs {:<21} {:.2}x",
                if ratio <= 0.5 { "PASS" } else { "MISS" },
                workload,
                what,
                rival,
                ratio
            );
        }
    }
    println!();
    println!("load average at end: {}", loadavg());
    println!("total wall time: {:.1} s", started.elapsed().as_secs_f64());
}
