//! `compare soak`: a long-lived host's view. For each era, one child process runs `--calls`
//! calls through one `Caller` (`bench-caller URL soak N ERA CONCURRENCY`, see
//! `clients/mcpwire/src/binding.rs` for the mix: successes, tool errors, timeouts,
//! cancellations, dropped streams), against the demo server behind the fault proxy
//! (`fault.rs`, which cuts the responses to drop). The child samples its resident set
//! (`VmRSS`), peak resident set (`VmHWM`) and open file descriptors (`/proc/self/fd`) at the
//! start and every `--every` calls; the driver prints both series and fails (exit status 1)
//! when, after the warm-up (the first `--warmup` calls), the peak RSS grows by more than
//! `--rss-tolerance-kib` or the descriptors by more than `--fd-tolerance` over the first
//! sample after the warm-up.
//!
//! ```sh
//! compare soak [--calls 100000] [--every 10000] [--concurrency 8] [--eras 2026,2025]
//!              [--warmup 10000] [--rss-tolerance-kib 1024] [--fd-tolerance 0]
//! ```
//!
//! The fd tolerance is against the same point in the call mix: the child samples when it has
//! finished a multiple of `--every` calls, with up to `CONCURRENCY - 1` others in flight, each
//! holding at most one connection, so `--fd-tolerance` defaults to `CONCURRENCY` (plus the
//! pool's idle connections, which the same concurrency bounds).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::fault::FaultProxy;

struct Options {
    calls: usize,
    every: usize,
    concurrency: usize,
    eras: Vec<String>,
    warmup: usize,
    rss_tolerance_kib: u64,
    fd_tolerance: Option<u64>,
}

fn usage() -> ! {
    eprintln!(
        "usage: compare soak [--calls N] [--every N] [--concurrency N] [--eras 2026,2025]\n\
         \x20                   [--warmup N] [--rss-tolerance-kib KIB] [--fd-tolerance N]"
    );
    std::process::exit(2)
}

fn options() -> Options {
    let mut options = Options {
        calls: 100_000,
        every: 10_000,
        concurrency: 8,
        eras: vec!["2026".to_owned(), "2025".to_owned()],
        warmup: 10_000,
        rss_tolerance_kib: 1024,
        fd_tolerance: None,
    };
    let mut args = std::env::args().skip(2);
    while let Some(arg) = args.next() {
        let mut number = || -> u64 {
            args.next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match arg.as_str() {
            "--calls" => options.calls = number() as usize,
            "--every" => options.every = (number() as usize).max(1),
            "--concurrency" => options.concurrency = (number() as usize).max(1),
            "--warmup" => options.warmup = number() as usize,
            "--rss-tolerance-kib" => options.rss_tolerance_kib = number(),
            "--fd-tolerance" => options.fd_tolerance = Some(number()),
            "--eras" => {
                options.eras = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::to_owned)
                    .collect()
            }
            _ => usage(),
        }
    }
    options
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    calls: u64,
    rss_kib: u64,
    hwm_kib: u64,
    fds: u64,
}

fn parse_sample(line: &str) -> Option<Sample> {
    let rest = line.strip_prefix("sample ")?;
    let field = |name: &str| -> Option<u64> {
        rest.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    Some(Sample {
        calls: field("calls")?,
        rss_kib: field("rss_kib")?,
        hwm_kib: field("hwm_kib")?,
        fds: field("fds")?,
    })
}

pub fn main() {
    let options = options();
    let fd_tolerance = options.fd_tolerance.unwrap_or(options.concurrency as u64);
    let dir = crate::driver_dir();
    crate::require(&dir, &["bench-caller"]);
    let (runtime, server) = crate::demo_server();
    let proxy = runtime
        .block_on(FaultProxy::start(server.addr()))
        .expect("the fault proxy");
    let url = proxy.url("/mcp");
    println!(
        "soak: {} calls per era through one Caller, {} at a time, against the dual-era demo \
         server behind a fault proxy at {url}",
        options.calls, options.concurrency
    );
    println!(
        "mix per 1000 calls: 1 timeout (1 s binding timeout, 3 s tool), 10 cancellations \
         (CancelToken at 2 ms), 10 dropped streams (response cut after its headers), 10 tool \
         errors, 969 echo successes"
    );
    println!(
        "tolerance after the first {} calls: peak RSS +{} KiB, open fds +{fd_tolerance}",
        options.warmup, options.rss_tolerance_kib
    );
    println!("load average at start: {}", crate::loadavg());
    let mut failed = false;
    for era in &options.eras {
        let before = server.stats();
        let drops_before = proxy.drops();
        let started = Instant::now();
        let mut child = Command::new(dir.join("bench-caller"))
            .args([
                url.as_str(),
                "soak",
                &options.calls.to_string(),
                era,
                &options.concurrency.to_string(),
            ])
            .env("MCPWIRE_SOAK_EVERY", options.every.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start bench-caller");
        let mut samples = Vec::new();
        let mut outcomes = String::new();
        let mut totals = String::new();
        println!();
        println!("== era {era}");
        println!(
            "{:>8} {:>9} {:>9} {:>5} {:>8}",
            "calls", "RSS KiB", "peak KiB", "fds", "wall s"
        );
        for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
            let Ok(line) = line else { break };
            if let Some(sample) = parse_sample(&line) {
                println!(
                    "{:>8} {:>9} {:>9} {:>5} {:>8.1}",
                    sample.calls,
                    sample.rss_kib,
                    sample.hwm_kib,
                    sample.fds,
                    started.elapsed().as_secs_f64()
                );
                samples.push(sample);
            } else if let Some(rest) = line.strip_prefix("outcomes ") {
                outcomes = rest.to_owned();
            } else {
                totals = line;
            }
        }
        let status = child.wait().expect("wait for bench-caller");
        let after = server.stats();
        println!("outcomes: {outcomes}");
        println!(
            "{totals}; server: {} requests, {} connections, {} sessions opened, {} deleted; \
             responses cut by the proxy: {}",
            after.requests - before.requests,
            after.connections - before.connections,
            after.sessions_opened - before.sessions_opened,
            after.sessions_deleted - before.sessions_deleted,
            proxy.drops() - drops_before
        );
        if !status.success() {
            println!("FAIL  era {era}: the soak client failed ({status})");
            failed = true;
            continue;
        }
        let Some(base) = samples.iter().find(|s| s.calls as usize >= options.warmup) else {
            println!("FAIL  era {era}: no sample after the warm-up");
            failed = true;
            continue;
        };
        let later = samples.iter().filter(|s| s.calls > base.calls);
        let hwm = later
            .clone()
            .map(|s| s.hwm_kib)
            .max()
            .unwrap_or(base.hwm_kib);
        let rss = later
            .clone()
            .map(|s| s.rss_kib)
            .max()
            .unwrap_or(base.rss_kib);
        let fds = later.map(|s| s.fds).max().unwrap_or(base.fds);
        let hwm_growth = hwm.saturating_sub(base.hwm_kib);
        let fd_growth = fds.saturating_sub(base.fds);
        let pass = hwm_growth <= options.rss_tolerance_kib && fd_growth <= fd_tolerance;
        failed |= !pass;
        println!(
            "{}  era {era}: after {} calls, peak RSS {} -> {} KiB (+{hwm_growth}, tolerance \
             {}), RSS at most {rss} KiB, fds {} -> at most {fds} (+{fd_growth}, tolerance \
             {fd_tolerance})",
            if pass { "PASS" } else { "FAIL" },
            base.calls,
            base.hwm_kib,
            hwm,
            options.rss_tolerance_kib,
            base.fds,
        );
    }
    println!();
    println!("load average at end: {}", crate::loadavg());
    if failed {
        std::process::exit(1);
    }
}
