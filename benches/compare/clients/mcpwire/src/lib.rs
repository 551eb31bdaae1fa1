//! What the two mcpwire client programs share: the command line, the runtime, and the figures
//! each prints at its end. `bench-mcpwire` (`main.rs`) runs the client's workloads and is built
//! without the binding layer, as a program that uses only the client would be (the binding
//! layer's jsonschema tree makes the binary 2.5 times the size and adds 2 MiB of resident pages
//! at start-up, which the driver's peak RSS figures would count); `bench-caller`
//! (`caller.rs`, feature `bindings`) runs the binding layer's.

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

pub type Failure = Box<dyn std::error::Error + Send + Sync>;

/// A workload: `(url, workload, n, the arguments after n)`.
pub type Workload = for<'a> fn(
    &'a str,
    &'a str,
    usize,
    &'a [String],
) -> Pin<Box<dyn Future<Output = Result<(), Failure>> + 'a>>;

/// Parses `PROGRAM URL WORKLOAD N [MORE...]`, runs the workload on a current-thread runtime,
/// and prints `wall_us=...` (the workload alone, without process start-up), `cpu_us=...`
/// (user + system CPU of the process during the workload, from `getrusage`) and `hwm_kib=...`
/// (peak RSS, `VmHWM`); a failure exits with status 1.
pub fn main_for(program: &str, usage: &str, run: Workload) {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, workload, n, rest @ ..] = &args[..] else {
        eprintln!("usage: {program} {usage}");
        std::process::exit(2);
    };
    let n: usize = n.parse().unwrap_or_else(|_| {
        eprintln!("N must be a count");
        std::process::exit(2)
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let cpu = cpu_us();
    let started = Instant::now();
    if let Err(e) = runtime.block_on(run(url, workload, n, rest)) {
        eprintln!("{program} {workload} {n}: {e}");
        std::process::exit(1);
    }
    let wall = started.elapsed();
    println!(
        "wall_us={} cpu_us={} hwm_kib={}",
        wall.as_micros(),
        cpu_us() - cpu,
        peak_rss_kib()
    );
}

/// User + system CPU time of this process (every thread) so far, in microseconds.
pub fn cpu_us() -> u64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

/// This process's peak resident set (`VmHWM`), in KiB. Not `ru_maxrss` from the parent's
/// `wait4`: Linux folds the parent's peak into the child's at `exec` when the child was started
/// with `vfork`/`CLONE_VM` (as `std::process::Command` does), so that figure is never below the
/// driver's own.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
