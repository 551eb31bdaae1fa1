//! The rmcp side of the comparison: runs one workload against the server and exits, so the
//! driver can take this process's CPU time and peak RSS from `wait4`.
//!
//! ```sh
//! bench-rmcp URL WORKLOAD N shared|default [2025|2026]
//! ```
//!
//! The workloads are those of `../mcpwire` (see there), done the way rmcp's documentation
//! shows: `().serve(transport)`, `call_tool`, `cancel()` (which ends the session with
//! `DELETE`). `shared`: every session's transport gets a clone of one `reqwest::Client`
//! (`StreamableHttpClientTransport::with_client`), so sessions share its connection pool, as
//! mcpwire's sessions share an `HttpPool`. `default`: `StreamableHttpClientTransport::from_uri`,
//! which builds a new `reqwest::Client` for each session, with idle pooling turned off. Both on a
//! current-thread tokio runtime, as on the mcpwire side. The era (default `2025`): `2025` is
//! rmcp's default lifecycle (`initialize`, `ClientLifecycleMode::Initialize`); `2026` is
//! `serve_with_lifecycle(transport, ClientLifecycleMode::Discover { preferred_versions:
//! [2026-07-28] })`: one `server/discover`, then every request a stateless 2026-07-28 POST with
//! the `_meta` envelope. Every result is checked (and the negotiated revision); a wrong one exits
//! with status 1. `inflight` (N calls at once to the driver's wait server's `wait` tool, which
//! answers after WAIT_MS, the argument after the era, default 1000) is `../mcpwire`'s. Prints
//! the figures of `bench_common::Meter` (`../../common`). The latency of a `fresh` or
//! `concurrent-fresh` call is its whole session's (initialize to DELETE), as the binding
//! layer's `Caller` times a call on its 2025 path; `inflight` raises `max_concurrent_requests`
//! to N on either client.

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bench_common::timed;

use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, NumberOrString, ProgressNotificationParam,
    ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// The tools the `list` workload's server lists (`../../src/list_server.rs`).
const TOOLS: usize = 100;

/// Counts progress notifications.
#[derive(Clone, Default)]
struct Counter(Arc<AtomicUsize>);

impl ClientHandler for Counter {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// How sessions get their HTTP client.
#[derive(Clone)]
enum Http {
    Shared(reqwest::Client),
    Default,
}

fn arguments(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// The text of a result's only block, or an error saying what came instead.
fn only_text(result: CallToolResult) -> Result<String, Failure> {
    match <[ContentBlock; 1]>::try_from(result.content) {
        Ok([ContentBlock::Text(text)]) if result.is_error != Some(true) => Ok(text.text),
        Ok(other) => Err(format!("not one text block: {other:?}").into()),
        Err(blocks) => Err(format!("{} content blocks", blocks.len()).into()),
    }
}

async fn connect<H: ClientHandler>(
    http: &Http,
    url: &str,
    handler: H,
) -> Result<RunningService<RoleClient, H>, Failure> {
    let transport = match http {
        Http::Shared(client) => StreamableHttpClientTransport::with_client(
            client.clone(),
            StreamableHttpClientTransportConfig::with_uri(url)
                .max_concurrent_requests(MAX_CONCURRENT.load(Ordering::Relaxed)),
        ),
        // `from_uri`'s client and config, with the same raised limit as the shared row's.
        Http::Default => StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url)
                .max_concurrent_requests(MAX_CONCURRENT.load(Ordering::Relaxed)),
        ),
    };
    let modern = MODERN.load(Ordering::Relaxed);
    let lifecycle = if modern {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    };
    let service = handler.serve_with_lifecycle(transport, lifecycle).await?;
    let spoken = service
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.clone());
    let right = match &spoken {
        Some(version) if modern => *version == ProtocolVersion::V_2026_07_28,
        Some(version) => version.has_initialize(),
        None => false,
    };
    if !right {
        return Err(format!("rmcp speaks {spoken:?}").into());
    }
    Ok(service)
}

/// The transport's `max_concurrent_requests` (shared client): rmcp's default of 16, raised to
/// N by `inflight`, as a host that wants N calls in flight at once sets it (at 16, 10,000
/// calls of a tool that waits 1 s would take 625 s).
static MAX_CONCURRENT: AtomicUsize = AtomicUsize::new(16);

/// The lifecycle of every session: `Discover` at 2026-07-28, or the default `Initialize`.
static MODERN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

async fn echo(peer: &rmcp::Peer<RoleClient>) -> Result<(), Failure> {
    timed!(echo_untimed(peer))
}

async fn echo_untimed(peer: &rmcp::Peer<RoleClient>) -> Result<(), Failure> {
    let result = peer
        .call_tool(
            CallToolRequestParams::new("echo")
                .with_arguments(arguments(serde_json::json!({"message": "hello"}))),
        )
        .await?;
    let text = only_text(result)?;
    if text != "Echo: hello" {
        return Err(format!("echo said {text:?}").into());
    }
    Ok(())
}

/// One call of the wait server's `wait` tool (`../../src/wait_server.rs`).
async fn wait_call(peer: &rmcp::Peer<RoleClient>, ms: u64) -> Result<(), Failure> {
    let result = timed!(peer.call_tool(
        CallToolRequestParams::new("wait").with_arguments(arguments(serde_json::json!({"ms": ms}))),
    ))?;
    let text = only_text(result)?;
    if text != format!("waited {ms} ms") {
        return Err(format!("wait said {text:?}").into());
    }
    Ok(())
}

/// One call in a session of its own, timed whole (initialize to DELETE), as the `Caller`'s
/// 2025 path times a call.
async fn fresh_echo(http: Http, url: Arc<str>) -> Result<(), Failure> {
    timed!(async {
        let client = connect(&http, &url, ()).await?;
        echo_untimed(client.peer()).await?;
        client.cancel().await?;
        Ok(())
    })
}

async fn run(url: &str, workload: &str, n: usize, http: Http, wait: u64) -> Result<(), Failure> {
    let url: Arc<str> = url.into();
    match workload {
        "fresh" => {
            for _ in 0..n {
                fresh_echo(http.clone(), url.clone()).await?;
            }
        }
        "session" => {
            let client = connect(&http, &url, ()).await?;
            for _ in 0..n {
                echo(client.peer()).await?;
            }
            client.cancel().await?;
        }
        "concurrent" => {
            let client = connect(&http, &url, ()).await?;
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let peer = client.peer().clone();
                tasks.spawn(async move { echo(&peer).await });
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
            client.cancel().await?;
        }
        "inflight" => {
            // N calls at once to the wait server's `wait` tool, answered after WAIT_MS.
            MAX_CONCURRENT.store(n.max(16), Ordering::Relaxed);
            let client = connect(&http, &url, ()).await?;
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let peer = client.peer().clone();
                tasks.spawn(async move { wait_call(&peer, wait).await });
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
            client.cancel().await?;
        }
        "concurrent-fresh" => {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                tasks.spawn(fresh_echo(http.clone(), url.clone()));
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
        }
        "big" => {
            let client = connect(&http, &url, ()).await?;
            let result = timed!(
                client.call_tool(
                    CallToolRequestParams::new("big_text")
                        .with_arguments(arguments(serde_json::json!({"bytes": n}))),
                ),
            )?;
            let text = only_text(result)?;
            if text.len() != n || !text.starts_with("abc") {
                return Err(format!("big_text gave {} bytes", text.len()).into());
            }
            drop(text);
            client.cancel().await?;
        }
        "progress" => {
            let counter = Counter::default();
            let seen = counter.0.clone();
            let client = connect(&http, &url, counter).await?;
            let mut params = CallToolRequestParams::new("progress_burst")
                .with_arguments(arguments(serde_json::json!({"steps": n})));
            params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
                NumberOrString::String("progress-1".into()),
            )));
            let text = only_text(timed!(client.call_tool(params))?)?;
            // Notifications are handled by the service loop, maybe after the result is
            // delivered: wait (counted in the time) until all of them have been seen.
            let deadline = Instant::now() + Duration::from_secs(10);
            while seen.load(Ordering::Relaxed) < n && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let seen = seen.load(Ordering::Relaxed);
            if text != format!("done after {n} steps") || seen != n {
                return Err(format!("{seen} progress notifications, then {text:?}").into());
            }
            client.cancel().await?;
        }
        "list" => {
            let client = connect(&http, &url, ()).await?;
            for _ in 0..n {
                // One page: the server sends no nextCursor (and no ttlMs, so nothing is cached).
                let tools = timed!(client.list_all_tools())?;
                if tools.len() != TOOLS {
                    return Err(format!("tools/list gave {} tools", tools.len()).into());
                }
            }
            client.cancel().await?;
        }
        "connect" => {
            connect(&http, &url, ()).await?.cancel().await?;
        }
        other => return Err(format!("unknown workload {other}").into()),
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, workload, n, http, era @ ..] = &args[..] else {
        eprintln!("usage: bench-rmcp URL WORKLOAD N shared|default [2025|2026] [WAIT_MS]");
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
    let wait: u64 = era.get(1).and_then(|w| w.parse().ok()).unwrap_or(1000);
    match era.first().map(String::as_str) {
        None | Some("2025") => {}
        Some("2026") => MODERN.store(true, Ordering::Relaxed),
        Some(other) => {
            eprintln!("unknown era {other}: 2025 or 2026");
            std::process::exit(2)
        }
    }
    let meter = bench_common::Meter::start();
    let http = match http.as_str() {
        // Built inside the timed part, as mcpwire's HttpPool is.
        "shared" => Http::Shared(shared_client().unwrap_or_else(|e| {
            eprintln!("bench-rmcp: {e}");
            std::process::exit(2)
        })),
        "default" => Http::Default,
        other => {
            eprintln!("unknown HTTP mode {other}: shared or default");
            std::process::exit(2)
        }
    };
    if let Err(e) = runtime.block_on(run(url, workload, n, http, wait)) {
        eprintln!("bench-rmcp {workload} {n}: {e}");
        std::process::exit(1);
    }
    meter.finish();
}

/// The shared `reqwest::Client`: `reqwest::Client::new()`, trusting the CA file named by
/// `BENCH_CA_FILE` too when set (the driver's HTTP/2 server has a test certificate).
fn shared_client() -> Result<reqwest::Client, Failure> {
    let Some(file) = std::env::var_os("BENCH_CA_FILE") else {
        return Ok(reqwest::Client::new());
    };
    let pem = std::fs::read(file)?;
    Ok(reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem)?)
        .build()?)
}
