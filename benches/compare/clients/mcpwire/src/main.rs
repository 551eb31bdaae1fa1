//! The mcpwire side of the comparison: runs one workload against the server and exits, so the
//! driver can take this process's CPU time and peak RSS from `wait4`.
//!
//! ```sh
//! bench-mcpwire URL WORKLOAD N [ERA]
//! ```
//!
//! Workloads (the same in `../rmcp`): `fresh` (N sequential `echo` calls, each in a fresh
//! session: initialize, initialized, tools/call, DELETE), `session` (N sequential calls on one
//! session), `concurrent` (N calls at once on one session), `concurrent-fresh` (N calls at
//! once, each in its own session), `big` (one `big_text` call of N bytes), `progress` (one
//! `progress_burst` call of N steps, every notification counted), `list` (N sequential
//! `tools/list` calls on one session, against the driver's 100-tool server, each listing
//! checked for [`TOOLS`] tools), `connect` (one session, no call: the fixed cost under the
//! single-call workloads), `inflight` (N calls at once on one client to the driver's wait
//! server's `wait` tool, which answers after WAIT_MS, the argument after ERA, default 1000).
//! `ERA` (default `2025`) is the revision the client speaks: `2025`
//! pins the 2025 path (`EraPolicy::Legacy`: initialize, initialized, calls, DELETE), `2026`
//! lets it probe (`server/discover`, once per pool: the verdict is cached) and speak 2026-07-28.
//! The binding-layer workloads, `caller`, `caller-concurrent` and `soak`, are another program,
//! `bench-caller` (`caller.rs`). Every result is checked; a wrong one exits with status 1.
//! Prints the figures of `bench_common::Meter` (`../../common`).
//!
//! Both sides run on a current-thread tokio runtime and share one HTTP connection pool
//! between their sessions (mcpwire's `HttpPool`).

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::mcp::{CallToolResult, ContentBlock};
use mcpwire::session::EraPolicy;
use mcpwire::transport::http::{HttpConfig, HttpPool};

use bench_mcpwire::{Failure, timed};

/// The tools the `list` workload's server lists (`../../src/list_server.rs`).
const TOOLS: usize = 100;

fn arguments(value: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    value.as_object().cloned()
}

/// The text of a result's only block, or an error saying what came instead.
fn only_text(result: CallToolResult) -> Result<String, Failure> {
    match <[ContentBlock; 1]>::try_from(result.content) {
        Ok([ContentBlock::Text(text)]) if result.is_error != Some(true) => Ok(text.text),
        Ok(other) => Err(format!("not one text block: {other:?}").into()),
        Err(blocks) => Err(format!("{} content blocks", blocks.len()).into()),
    }
}

/// The era the `Client` workloads speak: `EraPolicy::Legacy` for `2025`, probing for `2026`.
static MODERN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Requests a session may have in flight: the default (1024), raised to N by `inflight`, as a
/// host that wants N calls in flight on one `Client` sets it (`SessionConfig::
/// max_pending_requests`; beyond it a call fails at once with `TooManyPending`).
static MAX_PENDING: AtomicUsize = AtomicUsize::new(0);

async fn connect(pool: &HttpPool, url: &str) -> Result<Client, Failure> {
    let mut options = ClientOptions::default();
    options.session.max_pending_requests = options
        .session
        .max_pending_requests
        .max(MAX_PENDING.load(Ordering::Relaxed));
    let modern = MODERN.load(Ordering::Relaxed);
    if !modern {
        options.session.era = EraPolicy::Legacy;
    }
    let client = Client::connect_http(pool, HttpConfig::new(url)?, options).await?;
    if client.protocol_version().is_modern() != modern {
        return Err(format!("the client speaks {}", client.protocol_version()).into());
    }
    Ok(client)
}

async fn echo(client: &Client) -> Result<(), Failure> {
    let result = timed!(client.call_tool(
        "echo",
        arguments(serde_json::json!({"message": "hello"})),
        CallOptions::default(),
    ))?;
    let text = only_text(result)?;
    if text != "Echo: hello" {
        return Err(format!("echo said {text:?}").into());
    }
    Ok(())
}

/// One call of the wait server's `wait` tool (`../../src/wait_server.rs`).
async fn wait_call(client: &Client, ms: u64) -> Result<(), Failure> {
    let result = timed!(client.call_tool(
        "wait",
        arguments(serde_json::json!({"ms": ms})),
        CallOptions::default(),
    ))?;
    let text = only_text(result)?;
    if text != format!("waited {ms} ms") {
        return Err(format!("wait said {text:?}").into());
    }
    Ok(())
}

async fn fresh_echo(pool: HttpPool, url: Arc<str>) -> Result<(), Failure> {
    let client = connect(&pool, &url).await?;
    echo(&client).await?;
    client.close().await;
    Ok(())
}

async fn run(url: &str, workload: &str, n: usize, rest: &[String]) -> Result<(), Failure> {
    match rest.first().map(String::as_str) {
        None | Some("2025") => {}
        Some("2026") => MODERN.store(true, Ordering::Relaxed),
        Some(other) => return Err(format!("unknown era {other}: 2025 or 2026").into()),
    }
    let pool = HttpPool::new(&bench_mcpwire::tls())?;
    let url: Arc<str> = url.into();
    match workload {
        "fresh" => {
            for _ in 0..n {
                fresh_echo(pool.clone(), url.clone()).await?;
            }
        }
        "session" => {
            let client = connect(&pool, &url).await?;
            for _ in 0..n {
                echo(&client).await?;
            }
            client.close().await;
        }
        "concurrent" => {
            let client = Arc::new(connect(&pool, &url).await?);
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let client = client.clone();
                tasks.spawn(async move { echo(&client).await });
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
            if let Ok(client) = Arc::try_unwrap(client) {
                client.close().await;
            }
        }
        "inflight" => {
            // N calls at once, each to a tool that waits WAIT_MS (the driver's wait server).
            let wait: u64 = rest.get(1).and_then(|w| w.parse().ok()).unwrap_or(1000);
            MAX_PENDING.store(n, Ordering::Relaxed);
            let client = Arc::new(connect(&pool, &url).await?);
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let client = client.clone();
                tasks.spawn(async move { wait_call(&client, wait).await });
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
            if let Ok(client) = Arc::try_unwrap(client) {
                client.close().await;
            }
        }
        "concurrent-fresh" => {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                tasks.spawn(fresh_echo(pool.clone(), url.clone()));
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
        }
        "big" => {
            let client = connect(&pool, &url).await?;
            let result = timed!(client.call_tool(
                "big_text",
                arguments(serde_json::json!({"bytes": n})),
                CallOptions::default(),
            ))?;
            let text = only_text(result)?;
            if text.len() != n || !text.starts_with("abc") {
                return Err(format!("big_text gave {} bytes", text.len()).into());
            }
            drop(text);
            client.close().await;
        }
        "progress" => {
            let client = connect(&pool, &url).await?;
            let seen = Arc::new(AtomicUsize::new(0));
            let counter = seen.clone();
            let mut options = CallOptions::default();
            options.on_progress = Some(Box::new(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
            }));
            let result = timed!(client.call_tool(
                "progress_burst",
                arguments(serde_json::json!({"steps": n})),
                options,
            ))?;
            let text = only_text(result)?;
            let seen = seen.load(Ordering::Relaxed);
            if text != format!("done after {n} steps") || seen != n {
                return Err(format!("{seen} progress notifications, then {text:?}").into());
            }
            client.close().await;
        }
        "list" => {
            let client = connect(&pool, &url).await?;
            for _ in 0..n {
                let tools = timed!(client.list_tools())?;
                if tools.len() != TOOLS {
                    return Err(format!("tools/list gave {} tools", tools.len()).into());
                }
            }
            client.close().await;
        }
        "connect" => connect(&pool, &url).await?.close().await,
        other => return Err(format!("unknown workload {other}").into()),
    }
    Ok(())
}

fn main() {
    bench_mcpwire::main_for(
        "bench-mcpwire",
        "URL WORKLOAD N [2025|2026] [WAIT_MS]",
        |url, workload, n, rest| Box::pin(run(url, workload, n, rest)),
    );
}
