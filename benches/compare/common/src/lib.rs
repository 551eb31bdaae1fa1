//! What the Rust client programs of the comparison (`bench-mcpwire`, `bench-caller`,
//! `bench-rmcp`, `bench-floor`) share: the figures each prints at the end of its one workload,
//! in the `key=value` line the driver reads. The TypeScript and Python client programs print
//! the same keys (`../clients/ts`, `../clients/py`).
//!
//! * `wall_us`: the workload's wall time (process start-up excluded);
//! * `cpu_us`: user + system CPU of the whole process during the workload (`getrusage`);
//! * `hwm_kib`: peak resident set (`VmHWM`), `rss0_kib`: resident set when the workload began;
//! * `allocs`: heap allocations during the workload (this crate's counting allocator, linked
//!   into every Rust client program: one relaxed atomic add per allocation);
//! * `timed`, `p50_us`, `p99_us`, `max_us`: how many calls were timed one by one
//!   ([`timed!`]) and their latency percentiles (nearest rank).

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The system allocator, counting allocations.
pub struct CountingAlloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed to the system allocator unchanged.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Heap allocations (and reallocations) so far.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
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

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(field))
                .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// This process's peak resident set (`VmHWM`), in KiB. Not `ru_maxrss` from the parent's
/// `wait4`: Linux folds the parent's peak into the child's at `exec` when the child was started
/// with `vfork`/`CLONE_VM` (as `std::process::Command` does), so that figure is never below the
/// driver's own.
pub fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// This process's resident set now (`VmRSS`), in KiB.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

static LATENCIES: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Awaits a call, recording its latency (microseconds) for the percentiles [`Meter::finish`]
/// prints: `timed!(client.call_tool(..))` is `client.call_tool(..).await`, timed.
///
/// A macro, not a function taking the future: a wrapping future would move the call's future
/// into its own state, a copy the library's users do not pay, and `instructions.sh` counts the
/// client program's instructions. With `BENCH_LATENCY=off` in the environment (which
/// `instructions.sh` sets: the earlier revision it compares with records no latencies) nothing
/// is timed and the percentiles are 0.
#[macro_export]
macro_rules! timed {
    ($call:expr $(,)?) => {{
        let started = $crate::latency_start();
        let out = $call.await;
        $crate::latency_record(started);
        out
    }};
}

/// The start of a timed call ([`timed!`]), unless latencies are off.
#[doc(hidden)]
pub fn latency_start() -> Option<Instant> {
    static ON: OnceLock<bool> = OnceLock::new();
    ON.get_or_init(|| std::env::var_os("BENCH_LATENCY").is_none_or(|v| v != "off"))
        .then(Instant::now)
}

/// Records the latency of a call that started at `started` ([`timed!`]).
#[doc(hidden)]
pub fn latency_record(started: Option<Instant>) {
    let Some(started) = started else { return };
    let us = started.elapsed().as_micros() as u64;
    if let Ok(mut latencies) = LATENCIES.lock() {
        latencies.push(us);
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The figures at the start of a workload.
pub struct Meter {
    started: Instant,
    cpu: u64,
    allocs: u64,
    rss0: u64,
}

impl Meter {
    pub fn start() -> Meter {
        Meter {
            rss0: rss_kib(),
            allocs: allocations(),
            cpu: cpu_us(),
            started: Instant::now(),
        }
    }

    /// Prints the `key=value` line the driver reads.
    pub fn finish(self) {
        let wall = self.started.elapsed();
        let cpu = cpu_us() - self.cpu;
        let allocs = allocations() - self.allocs;
        let mut latencies = LATENCIES.lock().map(|l| l.clone()).unwrap_or_default();
        latencies.sort_unstable();
        println!(
            "wall_us={} cpu_us={cpu} hwm_kib={} rss0_kib={} allocs={allocs} timed={} p50_us={} p99_us={} max_us={}",
            wall.as_micros(),
            peak_rss_kib(),
            self.rss0,
            latencies.len(),
            percentile(&latencies, 50.0),
            percentile(&latencies, 99.0),
            latencies.last().copied().unwrap_or(0),
        );
    }
}
