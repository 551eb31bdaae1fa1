//! The binding layer's side of the comparison (`binding.rs`: `caller`, `caller-concurrent`,
//! `soak`), its own program so that `bench-mcpwire` is built without the binding layer.
//!
//! ```sh
//! bench-caller URL WORKLOAD N ERA [CONCURRENCY|LIMIT]
//! bench-caller - in-flight-limit 0     # the most calls in flight its Caller can hold
//! ```

mod binding;

fn main() {
    bench_mcpwire::main_for(
        "bench-caller",
        "URL caller|caller-concurrent|caller-inflight|caller-big|caller-progress|soak N 2025|2026 [CONCURRENCY|LIMIT|WAIT_MS]\n       bench-caller - in-flight-limit 0",
        |url, workload, n, rest| Box::pin(binding::run(url, workload, n, rest)),
    );
}
