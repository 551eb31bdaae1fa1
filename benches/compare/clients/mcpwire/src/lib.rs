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

pub type Failure = Box<dyn std::error::Error + Send + Sync>;

/// A workload: `(url, workload, n, the arguments after n)`.
pub type Workload = for<'a> fn(
    &'a str,
    &'a str,
    usize,
    &'a [String],
) -> Pin<Box<dyn Future<Output = Result<(), Failure>> + 'a>>;

/// Parses `PROGRAM URL WORKLOAD N [MORE...]`, runs the workload on a current-thread runtime,
/// and prints the figures of `bench_common::Meter` (the workload alone, without process
/// start-up); a failure exits with status 1.
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
    let meter = bench_common::Meter::start();
    if let Err(e) = runtime.block_on(run(url, workload, n, rest)) {
        eprintln!("{program} {workload} {n}: {e}");
        std::process::exit(1);
    }
    meter.finish();
}

pub use bench_common::timed;

/// TLS settings for the client programs: the default roots, and the CA file named by
/// `BENCH_CA_FILE` when set (the driver's HTTP/2 server has a test certificate).
pub fn tls() -> mcpwire::transport::http::TlsOptions {
    let mut tls = mcpwire::transport::http::TlsOptions::default();
    tls.extra_ca_file = std::env::var_os("BENCH_CA_FILE").map(Into::into);
    tls
}
