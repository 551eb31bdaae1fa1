//! mcpwire parser benchmarks: SSE decoding against sse-stream 0.2 / 0.3 and eventsource-stream
//! (plus memchr and plain-copy baselines), and JSON-RPC decoding against `serde_json::Value`.
//!
//! Run: `cd benches/parsers && cargo run --release` (options: `--runs N`, `--only sse|json`).
//! See README.md beside this file and BENCHMARKS.md at the crate root.

// The library's clippy.toml bans the clock outside the transport driver; a benchmark is all clock.
#![allow(clippy::disallowed_methods)]

mod harness;
mod inputs;
mod jsonrpc;
mod sse;

use std::time::{Duration, Instant};

use harness::{Config, Contender, Progress, Result as Measured, Role, Timing, fmt_time, mib_per_s};
use inputs::{Eol, Feed, JsonInput, SseInput};

/// Limits for every mcpwire decoder in the bench: large enough for the 10 MiB line, the same for
/// all workloads (a limit is a comparison, not work).
pub fn sse_limits() -> mcpwire::sse::Limits {
    mcpwire::sse::Limits::new(16 << 20, 16 << 20)
}

struct Args {
    runs: usize,
    sse: bool,
    json: bool,
    /// `--profile WORKLOAD FEED CONTENDER N`: run one contender N times, untimed, for perf or
    /// callgrind.
    profile: Option<[String; 4]>,
    /// `--child WORKLOAD FEED CONTENDER`: internal, see `isolated`.
    child: Option<[String; 3]>,
    /// `--default-malloc`: leave glibc malloc's trim/mmap heuristics alone (see `steady_heap`).
    default_malloc: bool,
    /// `--filter S`: only SSE cells whose "WORKLOAD FEED" (e.g. "big-line 16k") contains S.
    filter: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        runs: 11,
        sse: true,
        json: true,
        profile: None,
        filter: None,
        default_malloc: false,
        child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--runs" => a.runs = it.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            "--only" => match it.next().as_deref() {
                Some("sse") => a.json = false,
                Some("json") => a.sse = false,
                _ => panic!("--only sse|json"),
            },
            "--default-malloc" => a.default_malloc = true,
            "--child" => {
                let mut next = || it.next().expect("--child WORKLOAD FEED CONTENDER");
                a.child = Some([next(), next(), next()]);
            }
            "--filter" => a.filter = Some(it.next().expect("--filter S")),
            "--profile" => {
                let mut next = || it.next().expect("--profile WORKLOAD FEED CONTENDER N");
                a.profile = Some([next(), next(), next(), next()]);
            }
            "-h" | "--help" => {
                println!(
                    "usage: parsers [--runs N] [--only sse|json] [--filter 'WORKLOAD FEED'] [--default-malloc]"
                );
                println!("       parsers --profile WORKLOAD FEED CONTENDER N");
                println!(
                    "  WORKLOAD: small-lf | small-crlf | big-line | progress | tools | text | image"
                );
                println!("  FEED: whole | 16k | 1-64 (SSE only; anything for JSON)");
                println!(
                    "  CONTENDER: mcpwire | sse02 | sse03 | eventsource | typed | client-path | envelope | raw-then-parse | value"
                );
                std::process::exit(0);
            }
            other => panic!("unknown argument {other:?} (try --help)"),
        }
    }
    assert!(a.runs >= 1);
    a
}

/// A target to check at the end: `ratio >= goal` passes.
struct Target {
    what: String,
    ratio: Option<f64>,
    lower_bound: bool,
    against: String,
    goal: f64,
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or("?".into(), |l| {
        l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    })
}

/// Keep glibc's heap in a steady state: serve allocations up to 32 MiB from the heap (not from
/// fresh `mmap`s) and never give freed memory back to the kernel. Without this, whether a 10 MiB
/// buffer lands on already-mapped pages or on fresh ones (page faults plus zeroing, several ms)
/// depends on what the contender run just before it freed, so the interleaved order, not the
/// decoder, decides the big-line numbers. Returns whether glibc accepted both settings.
fn steady_heap() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_MMAP_THRESHOLD: i32 = -3;
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt only changes allocator tuning; called before any other thread exists.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, i32::MAX) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

fn main() {
    let args = args();
    if let Some(c) = &args.child {
        child(c);
        return;
    }
    let heap = if args.default_malloc {
        "default glibc malloc settings"
    } else if steady_heap() {
        "steady heap (glibc mallopt: mmap threshold 32 MiB, no trimming)"
    } else {
        "default allocator settings (mallopt not available)"
    };
    if let Some(p) = &args.profile {
        profile(p);
        return;
    }
    let started = Instant::now();
    let cfg = Config {
        runs: args.runs,
        probe_deadline: Duration::from_secs(3),
        max_repeat: Duration::from_millis(800),
    };
    println!("mcpwire parser benchmarks");
    println!(
        "cpus: {}, {} timed runs per contender (interleaved, after a probe and a warm-up round), median reported",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cfg.runs
    );
    println!("ratio column: mcpwire speed / contender speed (> 1 means mcpwire is faster)");
    println!("allocator: {heap}");
    println!("load average at start: {}", load());
    let mut targets = Vec::new();
    if args.sse {
        sse_section(cfg, args.filter.as_deref(), &mut targets);
    }
    if args.json {
        json_section(cfg, &mut targets);
    }

    println!("\n== Targets");
    for t in &targets {
        let (verdict, ratio) = match t.ratio {
            Some(r) if t.lower_bound => (
                if r >= t.goal { "PASS" } else { "MISS?" },
                format!(">{r:.2}x"),
            ),
            Some(r) => (
                if r >= t.goal { "PASS" } else { "MISS" },
                format!("{r:.2}x"),
            ),
            None => ("n/a ", "n/a".to_string()),
        };
        println!(
            "{verdict:5} {:<58} {ratio:>8}  (target >= {:.1}x; vs {})",
            t.what, t.goal, t.against
        );
    }
    println!("\nload average at end: {}", load());
    println!("total wall time: {:.1} s", started.elapsed().as_secs_f64());
}

// ------------------------------------------------------------------------------------------------
// SSE
// ------------------------------------------------------------------------------------------------

/// mcpwire's decoder through `Decoder::decode` (lines read in place), the API its client uses.
/// Ratios and targets are computed against this row.
const MCPWIRE: &str = "mcpwire decode";
/// The same decoder through `push` and `next_event` (everything buffered).
const MCPWIRE_PUSH: &str = "mcpwire push+next_event";
const SSE02: &str = "sse-stream 0.2";
const SSE03: &str = "sse-stream 0.3";
const EVENTSOURCE: &str = "eventsource-stream 0.2";
const MEMCHR: &str = "baseline: memchr '\\n'";
const COPY: &str = "baseline: copy";

fn sse_section(cfg: Config, filter: Option<&str>, targets: &mut Vec<Target>) {
    let workloads: [(&str, &str, SseInput); 3] = [
        (
            "small-lf",
            "100,000 progress events, LF",
            inputs::small_events(Eol::Lf),
        ),
        (
            "small-crlf",
            "100,000 progress events, CRLF",
            inputs::small_events(Eol::CrLf),
        ),
        (
            "big-line",
            "one event, one 10 MiB data line",
            inputs::big_line(),
        ),
    ];
    let mut big_line_in_process = Vec::new();
    for (id, title, input) in &workloads {
        println!(
            "\n== SSE: {title} ({:.2} MiB in, {} event(s), {:.2} MiB of data)",
            input.bytes.len() as f64 / 1048576.0,
            input.events,
            input.data_bytes as f64 / 1048576.0
        );
        println!(
            "{:<14} {:<24} {:>10} {:>10} {:>8} {:>9} {:>10}",
            "feed", "contender", "median", "min", "spread", "MiB/s", "mcpwire x"
        );
        let newlines = input.bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        for feed in Feed::ALL {
            if filter.is_some_and(|f| !format!("{id} {}", feed.short()).contains(f)) {
                continue;
            }
            let chunks = feed.split(&input.bytes);
            let results = harness::measure(
                cfg,
                sse_contenders(&chunks, input.bytes.len(), input.data_bytes),
                |name, role, v| {
                    let ok = match (role, name) {
                        (Role::Baseline, MEMCHR) => {
                            v.events == newlines && v.data_bytes == input.bytes.len() as u64
                        }
                        (Role::Baseline, _) => v.data_bytes == input.bytes.len() as u64,
                        _ => v.events == input.events && v.data_bytes == input.data_bytes,
                    };
                    assert!(
                        ok,
                        "{name} disagrees on {title}, {}: got {v:?}, expected {} events / {} data bytes",
                        feed.label(),
                        input.events,
                        input.data_bytes
                    );
                },
            );
            print_rows(feed.label(), 14, &results, input.bytes.len());
            add_sse_targets(id, title, feed, &results, targets);
            if *id == "big-line" {
                big_line_in_process.push((feed, results));
            }
        }
    }
    if big_line_in_process.is_empty() {
        return;
    }
    let input = &workloads[2].2;
    println!(
        "\n== SSE: one 10 MiB data line again, every run in a fresh process, default glibc malloc"
    );
    println!(
        "   ({CHILD_WARMUP} warm-up runs, then 1 timed, per process; {} processes per contender, interleaved)",
        cfg.runs
    );
    println!(
        "{:<14} {:<24} {:>10} {:>10} {:>8} {:>9} {:>10}",
        "feed", "contender", "median", "min", "spread", "MiB/s", "mcpwire x"
    );
    for (feed, in_process) in &big_line_in_process {
        let results = isolated(cfg, "big-line", *feed, in_process);
        print_rows(feed.label(), 14, &results, input.bytes.len());
        add_copy_target(
            &format!("10 MiB line, {}, own process", feed.label()),
            &results,
            targets,
        );
    }
}

fn sse_contenders<'a>(
    chunks: &'a [&'a [u8]],
    total: usize,
    expected_data: u64,
) -> Vec<Contender<'a, sse::Outcome>> {
    macro_rules! decoder {
        ($name:expr, $role:expr, $f:ident) => {
            Contender {
                name: $name,
                role: $role,
                probe: Box::new(move |d| {
                    let r = sse::$f::<true>(chunks, Some(d));
                    let progress = r.stopped_at.map(|fed| match r.outcome.data_bytes {
                        0 => Progress::Fed(fed),
                        n => Progress::Decoded(n as f64 / expected_data as f64),
                    });
                    (r.outcome, progress)
                }),
                run: Box::new(move || sse::$f::<false>(chunks, None).outcome),
                iters: 1,
            }
        };
    }
    let mut copy_buf = Vec::with_capacity(total);
    vec![
        decoder!(MCPWIRE, Role::Mcpwire, mcpwire_decode),
        decoder!(MCPWIRE_PUSH, Role::Mcpwire, mcpwire),
        decoder!(SSE02, Role::Rival, sse_stream_02),
        decoder!(SSE03, Role::Rival, sse_stream_03),
        decoder!(EVENTSOURCE, Role::Rival, eventsource_stream),
        Contender {
            name: MEMCHR,
            role: Role::Baseline,
            probe: Box::new(move |_| (sse::memchr_newlines(chunks).outcome, None)),
            run: Box::new(move || sse::memchr_newlines(chunks).outcome),
            iters: 1,
        },
        Contender {
            name: COPY,
            role: Role::Baseline,
            probe: Box::new(move |_| {
                let mut buf = Vec::with_capacity(total);
                (sse::plain_copy(chunks, &mut buf).outcome, None)
            }),
            run: Box::new(move || sse::plain_copy(chunks, &mut copy_buf).outcome),
            iters: 1,
        },
    ]
}

fn find<'r>(results: &'r [Measured], name: &str) -> &'r Measured {
    results.iter().find(|r| r.name == name).expect("contender")
}

fn print_rows(feed: &str, width: usize, results: &[Measured], bytes: usize) {
    let base = results
        .iter()
        .find(|r| r.role == Role::Mcpwire)
        .and_then(|r| r.timing.time());
    for (i, r) in results.iter().enumerate() {
        let feed = if i == 0 { feed } else { "" };
        let (time, min_time, spread, thr, ratio) = match &r.timing {
            Timing::Median {
                median, min, max, ..
            } => (
                fmt_time(*median),
                fmt_time(*min),
                format!(
                    "{:.1}%",
                    (*max - *min).as_secs_f64() / median.as_secs_f64() * 100.0
                ),
                format!("{:.0}", mib_per_s(bytes, *median)),
                base.map_or("-".into(), |b| {
                    format!("{:.2}", median.as_secs_f64() / b.as_secs_f64())
                }),
            ),
            Timing::Once(d) => (
                fmt_time(*d),
                "-".into(),
                "1 run".into(),
                format!("{:.0}", mib_per_s(bytes, *d)),
                base.map_or("-".into(), |b| {
                    format!("{:.2}", d.as_secs_f64() / b.as_secs_f64())
                }),
            ),
            Timing::Dnf { after, progress } => (
                format!("DNF>{}", fmt_time(*after)),
                "-".into(),
                match progress {
                    Progress::Decoded(f) => format!("{:.1}%dec", f * 100.0),
                    Progress::Fed(f) => format!("{:.1}%fed", f * 100.0),
                },
                "-".into(),
                base.map_or("-".into(), |b| {
                    format!(">{:.0}", after.as_secs_f64() / b.as_secs_f64())
                }),
            ),
        };
        println!(
            "{feed:<width$} {:<24} {time:>10} {min_time:>10} {spread:>8} {thr:>9} {ratio:>10}",
            r.name
        );
    }
}

/// mcpwire's time divided into the fastest rival's: `(ratio, lower_bound, rival name)`.
fn vs_fastest_rival(results: &[Measured]) -> (Option<f64>, bool, String) {
    let mine = find(results, MCPWIRE).timing.time();
    let mut best: Option<(f64, bool, &str)> = None;
    for r in results.iter().filter(|r| r.role == Role::Rival) {
        let (t, lb) = match &r.timing {
            Timing::Dnf { after, .. } => (after.as_secs_f64(), true),
            t => (t.time().expect("time").as_secs_f64(), false),
        };
        if best.is_none_or(|(bt, _, _)| t < bt) {
            best = Some((t, lb, r.name));
        }
    }
    match (mine, best) {
        (Some(m), Some((t, lb, name))) => (
            Some(t / m.as_secs_f64()),
            lb,
            format!("fastest rival, {name}"),
        ),
        _ => (None, false, "fastest rival".into()),
    }
}

fn add_sse_targets(
    id: &str,
    title: &str,
    feed: Feed,
    results: &[Measured],
    targets: &mut Vec<Target>,
) {
    let goal = match (id, feed) {
        ("small-lf" | "small-crlf", Feed::Chunks16K) => Some(2.5),
        ("small-lf" | "small-crlf", Feed::Random1To64) => Some(1.5),
        _ => None,
    };
    if let Some(goal) = goal {
        let (ratio, lower_bound, against) = vs_fastest_rival(results);
        targets.push(Target {
            what: format!("{title}, {}", feed.label()),
            ratio,
            lower_bound,
            against,
            goal,
        });
    }
    if id == "big-line" {
        add_copy_target(
            &format!("10 MiB line, {}, in-process", feed.label()),
            results,
            targets,
        );
    }
}

fn add_copy_target(what: &str, results: &[Measured], targets: &mut Vec<Target>) {
    let mine = find(results, MCPWIRE).timing.time();
    let copy = find(results, COPY).timing.time();
    let ratio = mine
        .zip(copy)
        .map(|(m, c)| c.as_secs_f64() / m.as_secs_f64());
    targets.push(Target {
        what: what.into(),
        ratio,
        lower_bound: false,
        against: "plain copy, same chunks".into(),
        goal: 0.8,
    });
}

// ------------------------------------------------------------------------------------------------
// JSON-RPC
// ------------------------------------------------------------------------------------------------

const TYPED: &str = "mcpwire typed";
const ENVELOPE: &str = "mcpwire envelope only";
const RAW_THEN_PARSE: &str = "mcpwire raw, then parse";
const CLIENT_PATH: &str = "mcpwire client path";
const VALUE: &str = "serde_json::Value";

fn json_section(cfg: Config, targets: &mut Vec<Target>) {
    use jsonrpc::Kind;
    let workloads: [(Kind, JsonInput); 4] = [
        (Kind::Progress, inputs::progress_notification()),
        (Kind::ToolsList, inputs::tools_list()),
        (Kind::TextResult, inputs::text_result()),
        (Kind::ImageResult, inputs::image_result()),
    ];
    println!("\n== JSON-RPC decoding (one message per decode; median time per decode)");
    println!(
        "{:<38} {:<24} {:>10} {:>10} {:>8} {:>9} {:>10}",
        "message", "contender", "median", "min", "spread", "MiB/s", "typed x"
    );
    let per_run = Duration::from_millis(30);
    for (kind, input) in &workloads {
        let bytes = &input.bytes[..];
        let kind = *kind;
        let contenders = vec![
            json_contender(TYPED, Role::Mcpwire, jsonrpc::typed, kind, bytes, per_run),
            json_contender(
                ENVELOPE,
                Role::Baseline,
                |_, b| jsonrpc::envelope(b),
                kind,
                bytes,
                per_run,
            ),
            json_contender(
                CLIENT_PATH,
                Role::Mcpwire,
                jsonrpc::client_path,
                kind,
                bytes,
                per_run,
            ),
            json_contender(
                RAW_THEN_PARSE,
                Role::Baseline,
                jsonrpc::raw_then_parse,
                kind,
                bytes,
                per_run,
            ),
            json_contender(VALUE, Role::Rival, jsonrpc::value, kind, bytes, per_run),
        ];
        let results = harness::measure(cfg, contenders, |name, _, v| match name {
            ENVELOPE => assert!(
                *v > 0 && *v < bytes.len() as u64,
                "{ENVELOPE}: raw payload length {v}"
            ),
            _ => assert_eq!(*v, input.check, "{name} decoded {} wrong", input.name),
        });
        let label = format!("{} ({})", input.name, fmt_bytes(bytes.len()));
        print_rows(&label, 38, &results, bytes.len());
        if let (Some(now), Some(before)) = (
            find(&results, CLIENT_PATH).timing.time(),
            find(&results, RAW_THEN_PARSE).timing.time(),
        ) {
            println!(
                "{:<38} the client's decode now takes {:.2}x the time of raw-then-parse ({:.2}x faster)",
                "",
                now.as_secs_f64() / before.as_secs_f64(),
                before.as_secs_f64() / now.as_secs_f64()
            );
        }
        if matches!(kind, Kind::Progress) {
            let typed = find(&results, TYPED).timing.time();
            let value = find(&results, VALUE).timing.time();
            targets.push(Target {
                what: "typed decode of a progress notification".into(),
                ratio: typed
                    .zip(value)
                    .map(|(t, v)| v.as_secs_f64() / t.as_secs_f64()),
                lower_bound: false,
                against: VALUE.into(),
                goal: 2.5,
            });
        }
    }
}

fn json_contender<'a>(
    name: &'static str,
    role: Role,
    f: fn(jsonrpc::Kind, &[u8]) -> u64,
    kind: jsonrpc::Kind,
    bytes: &'a [u8],
    per_run: Duration,
) -> Contender<'a, u64> {
    let iters = harness::calibrate(
        || {
            std::hint::black_box(f(kind, bytes));
        },
        per_run,
    );
    Contender {
        name,
        role,
        probe: Box::new(move |_| (f(kind, bytes), None)),
        run: Box::new(move || {
            let mut v = 0;
            for _ in 0..iters {
                v = f(kind, bytes);
            }
            v
        }),
        iters,
    }
}

fn fmt_bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.2} MiB", n as f64 / 1048576.0)
    } else if n >= 1 << 10 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{n} B")
    }
}

/// `--profile`: one contender on one input, N times, nothing else (for perf / callgrind).
fn profile([workload, feed, contender, n]: &[String; 4]) {
    use jsonrpc::Kind;
    let n: u64 = n.parse().expect("N");
    let json = match workload.as_str() {
        "progress" => Some((Kind::Progress, inputs::progress_notification())),
        "tools" => Some((Kind::ToolsList, inputs::tools_list())),
        "text" => Some((Kind::TextResult, inputs::text_result())),
        "image" => Some((Kind::ImageResult, inputs::image_result())),
        _ => None,
    };
    if let Some((kind, input)) = json {
        let f: fn(Kind, &[u8]) -> u64 = match contender.as_str() {
            "typed" => jsonrpc::typed,
            "envelope" => |_, b| jsonrpc::envelope(b),
            "raw-then-parse" => jsonrpc::raw_then_parse,
            "client-path" => jsonrpc::client_path,
            "value" => jsonrpc::value,
            other => panic!("unknown JSON contender {other}"),
        };
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(f(kind, &input.bytes));
        }
        println!(
            "{workload} {contender}: {} per decode",
            fmt_time(start.elapsed() / n as u32)
        );
        return;
    }
    let input = sse_workload(workload);
    let feed = Feed::ALL
        .into_iter()
        .find(|f| f.short() == feed)
        .expect("FEED: whole | 16k | 1-64");
    let chunks = feed.split(&input.bytes);
    let mut buf = Vec::with_capacity(input.bytes.len());
    let start = Instant::now();
    for _ in 0..n {
        let out = sse_run(contender, &chunks, &mut buf);
        assert!(
            sse_correct(contender, &input, out),
            "{contender} got {out:?}"
        );
    }
    println!(
        "{workload} {} {contender}: {} per run",
        feed.label(),
        fmt_time(start.elapsed() / n as u32)
    );
}

/// SSE contenders by their short (command-line) name, in table order.
const SSE_SHORT: [(&str, &str, Role); 7] = [
    ("mcpwire", MCPWIRE, Role::Mcpwire),
    ("mcpwire-push", MCPWIRE_PUSH, Role::Mcpwire),
    ("sse02", SSE02, Role::Rival),
    ("sse03", SSE03, Role::Rival),
    ("eventsource", EVENTSOURCE, Role::Rival),
    ("memchr", MEMCHR, Role::Baseline),
    ("copy", COPY, Role::Baseline),
];

fn sse_workload(name: &str) -> SseInput {
    match name {
        "small-lf" => inputs::small_events(Eol::Lf),
        "small-crlf" => inputs::small_events(Eol::CrLf),
        "big-line" => inputs::big_line(),
        other => panic!("unknown workload {other}"),
    }
}

/// One timed-variant run of an SSE contender given by short name.
fn sse_run(short: &str, chunks: &[&[u8]], copy_buf: &mut Vec<u8>) -> sse::Outcome {
    match short {
        "mcpwire" => sse::mcpwire_decode::<false>(chunks, None).outcome,
        "mcpwire-push" => sse::mcpwire::<false>(chunks, None).outcome,
        "sse02" => sse::sse_stream_02::<false>(chunks, None).outcome,
        "sse03" => sse::sse_stream_03::<false>(chunks, None).outcome,
        "eventsource" => sse::eventsource_stream::<false>(chunks, None).outcome,
        "memchr" => sse::memchr_newlines(chunks).outcome,
        "copy" => sse::plain_copy(chunks, copy_buf).outcome,
        other => panic!("unknown SSE contender {other}"),
    }
}

fn sse_correct(short: &str, input: &SseInput, v: sse::Outcome) -> bool {
    let total = input.bytes.len() as u64;
    match short {
        "memchr" => {
            v.events == input.bytes.iter().filter(|&&b| b == b'\n').count() as u64
                && v.data_bytes == total
        }
        "copy" => v.data_bytes == total,
        _ => v.events == input.events && v.data_bytes == input.data_bytes,
    }
}

/// Warm-up runs before the one timed run of a child process.
const CHILD_WARMUP: usize = 2;

/// `--child`: in a fresh process with the default allocator settings, run one contender
/// `CHILD_WARMUP` times, then once timed; print that run's nanoseconds.
fn child([workload, feed, contender]: &[String; 3]) {
    let input = sse_workload(workload);
    let feed = Feed::ALL
        .into_iter()
        .find(|f| f.short() == feed)
        .expect("FEED");
    let chunks = feed.split(&input.bytes);
    let mut buf = Vec::with_capacity(input.bytes.len());
    for _ in 0..CHILD_WARMUP {
        let out = sse_run(contender, &chunks, &mut buf);
        assert!(
            sse_correct(contender, &input, out),
            "{contender} got {out:?}"
        );
    }
    let start = Instant::now();
    let out = sse_run(contender, &chunks, &mut buf);
    let took = start.elapsed();
    assert!(
        sse_correct(contender, &input, out),
        "{contender} got {out:?}"
    );
    println!("{}", took.as_nanos());
}

/// The same cell again, but every run of every contender in its own fresh process with glibc's
/// default malloc settings: no contender inherits another's heap layout. Rounds are still
/// interleaved (a process for A, then B, then C, ...). Contenders that were too slow in-process
/// are left out.
fn isolated(cfg: Config, workload: &str, feed: Feed, in_process: &[Measured]) -> Vec<Measured> {
    let exe = std::env::current_exe().expect("current_exe");
    let mut entries: Vec<(&str, &'static str, Role, Vec<Duration>)> = SSE_SHORT
        .iter()
        .filter(|(_, name, _)| matches!(find(in_process, name).timing, Timing::Median { .. }))
        .map(|&(short, name, role)| (short, name, role, Vec::with_capacity(cfg.runs)))
        .collect();
    for _ in 0..cfg.runs {
        for (short, _, _, samples) in entries.iter_mut() {
            let out = std::process::Command::new(&exe)
                .args(["--child", workload, feed.short(), short])
                .output()
                .expect("spawn child");
            assert!(
                out.status.success(),
                "child {short} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let ns: u64 = String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("child output");
            samples.push(Duration::from_nanos(ns));
        }
    }
    entries
        .into_iter()
        .map(|(_, name, role, mut s)| {
            let min = *s.iter().min().expect("samples");
            let max = *s.iter().max().expect("samples");
            Measured {
                name,
                role,
                timing: Timing::Median {
                    median: harness::median(&mut s),
                    min,
                    max,
                },
            }
        })
        .collect()
}
