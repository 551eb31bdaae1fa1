//! The rmcp side of the comparison: runs one workload against the server and exits, so the
//! driver can take this process's CPU time and peak RSS from `wait4`.
//!
//! ```sh
//! bench-rmcp URL WORKLOAD N shared|default
//! ```
//!
//! The workloads are those of `../mcpwire` (see there), done the way rmcp's documentation
//! shows: `().serve(transport)`, `call_tool`, `cancel()` (which ends the session with
//! `DELETE`). `shared`: every session's transport gets a clone of one `reqwest::Client`
//! (`StreamableHttpClientTransport::with_client`), so sessions share its connection pool, as
//! mcpwire's sessions share an `HttpPool`. `default`: `StreamableHttpClientTransport::from_uri`,
//! which builds a new `reqwest::Client` for each session, with idle pooling turned off. Both on a
//! current-thread tokio runtime, as on the mcpwire side. Every result is checked; a wrong one
//! exits with status 1. Prints `wall_us=...` (the workload alone, without process start-up) and
//! `hwm_kib=...` (peak RSS, `VmHWM`).

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, NumberOrString, ProgressNotificationParam,
    ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};

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
            StreamableHttpClientTransportConfig::with_uri(url),
        ),
        Http::Default => StreamableHttpClientTransport::from_uri(url),
    };
    Ok(handler.serve(transport).await?)
}

async fn echo(peer: &rmcp::Peer<RoleClient>) -> Result<(), Failure> {
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

async fn fresh_echo(http: Http, url: Arc<str>) -> Result<(), Failure> {
    let client = connect(&http, &url, ()).await?;
    echo(client.peer()).await?;
    client.cancel().await?;
    Ok(())
}

async fn run(url: &str, workload: &str, n: usize, http: Http) -> Result<(), Failure> {
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
            let result = client
                .call_tool(
                    CallToolRequestParams::new("big_text")
                        .with_arguments(arguments(serde_json::json!({"bytes": n}))),
                )
                .await?;
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
            let text = only_text(client.call_tool(params).await?)?;
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
                let tools = client.list_all_tools().await?;
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
    let [_, url, workload, n, http] = &args[..] else {
        eprintln!("usage: bench-rmcp URL WORKLOAD N shared|default");
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
    let started = Instant::now();
    let http = match http.as_str() {
        // Built inside the timed part, as mcpwire's HttpPool is.
        "shared" => Http::Shared(reqwest::Client::new()),
        "default" => Http::Default,
        other => {
            eprintln!("unknown HTTP mode {other}: shared or default");
            std::process::exit(2)
        }
    };
    if let Err(e) = runtime.block_on(run(url, workload, n, http)) {
        eprintln!("bench-rmcp {workload} {n}: {e}");
        std::process::exit(1);
    }
    let wall = started.elapsed();
    println!("wall_us={} hwm_kib={}", wall.as_micros(), peak_rss_kib());
}

/// This process's peak resident set (`VmHWM`), in KiB. Not `ru_maxrss` from the parent's
/// `wait4`: Linux folds the parent's peak into the child's at `exec` when the child was started
/// with `vfork`/`CLONE_VM` (as `std::process::Command` does), so that figure is never below the
/// driver's own.
fn peak_rss_kib() -> u64 {
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
