//! The binding-layer workloads: calls through one `mcpwire::binding::call::Caller`, the path a
//! host runs (config loaded and validated, arguments checked against the input schema, a
//! session per call, the result mapped), against one server in either era.
//!
//! * `caller N ERA`: N sequential `echo` calls.
//! * `caller-concurrent N ERA [LIMIT]`: N `echo` calls at once; with LIMIT, at most LIMIT of
//!   them in flight (a host-side semaphore: what a cap on POSTs per origin, as rmcp has with
//!   `max_concurrent_requests` = 16, would do).
//! * `caller-inflight N ERA [WAIT_MS]`: N calls at once to the driver's wait server's `wait`
//!   tool, which answers after WAIT_MS (default 1000): the burst a host with N calls in flight
//!   makes, through the pool's origin limit (HTTP/1.1) or one HTTP/2 connection. The caller's
//!   `CallerOptions::max_pending_requests` is raised to N (its default, 1024, refuses the
//!   rest), as a host wanting N in flight sets it.
//! * `in-flight-limit` (URL and N unused): prints `in_flight_limit=none`: the `Caller` here
//!   takes as many calls in flight as it is asked for (`compare suite` asks before an
//!   `inflight` row).
//! * `caller-big N ERA`: one `big_text` call of N bytes; `caller-progress N ERA`: one
//!   `progress_burst` call of N steps, every progress event counted.
//! * `soak N ERA CONCURRENCY`: N calls, CONCURRENCY at a time, mixing successes, tool errors,
//!   timeouts (the binding's 1 s `timeout_seconds` on a 3 s `progress_report`), cancellations
//!   (a `CancelToken` fired 2 ms into a 500 ms call) and dropped streams (an `echo` whose
//!   message the driver's fault proxy recognises: it forwards the response's header block and
//!   then closes both sides). Prints `sample calls=K rss_kib=.. hwm_kib=.. fds=..` at the start
//!   and every `MCPWIRE_SOAK_EVERY` (default 10,000) finished calls, then one `outcomes ..`
//!   line. A success call that fails, or a fault call that succeeds, fails the run.
//!
//! `ERA` is `2026` (the era is probed on the first call and the verdict cached in the pool, as
//! for any host) or `2025` (the pool's era cache is told the endpoint is a 2025-era server, so
//! every call is initialize, initialized, tools/call and DELETE in a fresh session).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use mcpwire::binding::call::{CallContext, Caller, CallerOptions, EnvTokens, ToolResult};
use mcpwire::binding::config::load_config;
use mcpwire::client::CancelToken;
use mcpwire::transport::http::{HttpPool, ProxyConfig};
use serde_json::{Value, json};

use bench_mcpwire::{Failure, timed};

/// The `echo` message the soak's fault proxy cuts off (`../../src/fault.rs`).
pub const DROP_MARKER: &str = "DROP-THIS-STREAM";

fn bindings(url: &str) -> Value {
    let binding = |name: &str, tool: &str, schema: Value, timeout: u64| {
        json!({
            "name": name, "description": "", "input_schema": schema, "url": url,
            "proxy": "none", "mcp_tool": tool, "tenants": ["bench"], "timeout_seconds": timeout,
            // The 10 MiB result of `caller-big` (the default is 1 MiB).
            "max_output_bytes": 16 << 20,
        })
    };
    let count = |member: &str| {
        json!({
            "type": "object", "properties": {member: {"type": "integer"}},
            "required": [member], "additionalProperties": false,
        })
    };
    let text = |member: &str| {
        json!({
            "type": "object", "properties": {member: {"type": "string"}},
            "required": [member], "additionalProperties": false,
        })
    };
    let steps = json!({
        "type": "object",
        "properties": {"steps": {"type": "integer"}, "delay_ms": {"type": "integer"}},
        "additionalProperties": false,
    });
    json!([
        binding("echo", "echo", text("message"), 30),
        binding("fail", "fail", text("message"), 30),
        binding("slow", "progress_report", steps.clone(), 1),
        binding("cancel", "progress_report", steps, 30),
        binding("big", "big_text", count("bytes"), 60),
        binding("burst", "progress_burst", count("steps"), 60),
        binding("wait", "wait", count("ms"), 120),
    ])
}

/// A caller of [`bindings`] at `url`, with at least `in_flight` calls allowed in flight.
fn caller(url: &str, era: &str, in_flight: usize) -> Result<Arc<Caller>, Failure> {
    let pool = HttpPool::new(&bench_mcpwire::tls())?;
    let bindings = load_config(&bindings(url).to_string())?;
    let mut caller =
        Caller::with_default_proxy(pool, bindings, Arc::new(EnvTokens), ProxyConfig::default())?;
    let mut options = CallerOptions::default();
    options.max_pending_requests = options.max_pending_requests.max(in_flight);
    caller.set_options(options);
    match era {
        "2026" => {}
        // What a host that persisted "2025-era server" for this endpoint tells the caller.
        "2025" => caller.era_cache().remember(url, None),
        other => return Err(format!("unknown era {other}: 2026 or 2025").into()),
    }
    Ok(Arc::new(caller))
}

fn context(call: usize) -> CallContext {
    CallContext::new("bench", "bench-session", format!("call-{call}"))
}

fn echo_text(result: &ToolResult) -> Option<&str> {
    match result.content() {
        [block] if !result.is_error() => block.get("text").and_then(Value::as_str),
        _ => None,
    }
}

async fn echo(caller: &Caller, call: usize) -> Result<(), Failure> {
    let result = timed!(caller.call(
        "echo",
        &context(call),
        &json!({"message": "hello"}),
        |_| {},
        None,
    ));
    match echo_text(&result) {
        Some("Echo: hello") => Ok(()),
        _ => Err(format!("echo gave {}", result.to_json_line()).into()),
    }
}

pub async fn run(url: &str, workload: &str, n: usize, rest: &[String]) -> Result<(), Failure> {
    if workload == "in-flight-limit" {
        // `caller` raises the limit to what the workload asks for.
        println!("in_flight_limit=none");
        return Ok(());
    }
    let era = rest.first().map_or("2026", String::as_str);
    let in_flight = if workload == "caller-inflight" { n } else { 0 };
    let caller = caller(url, era, in_flight)?;
    match workload {
        "caller" => {
            for call in 0..n {
                echo(&caller, call).await?;
            }
        }
        "caller-concurrent" => {
            let limit: usize = rest.get(1).and_then(|l| l.parse().ok()).unwrap_or(n.max(1));
            let permits = Arc::new(tokio::sync::Semaphore::new(limit.max(1)));
            let mut tasks = tokio::task::JoinSet::new();
            for call in 0..n {
                let (caller, permits) = (caller.clone(), permits.clone());
                tasks.spawn(async move {
                    let _permit = permits.acquire().await?;
                    echo(&caller, call).await
                });
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
        }
        "caller-inflight" => {
            // N calls at once to the wait server's `wait` tool, answered after WAIT_MS.
            let wait: u64 = rest.get(1).and_then(|w| w.parse().ok()).unwrap_or(1000);
            let mut tasks = tokio::task::JoinSet::new();
            for call in 0..n {
                let caller = caller.clone();
                tasks.spawn(async move {
                    let args = json!({ "ms": wait });
                    let result = timed!(caller.call("wait", &context(call), &args, |_| {}, None));
                    match echo_text(&result) {
                        Some(text) if text == format!("waited {wait} ms") => Ok(()),
                        _ => Err::<(), Failure>(
                            format!("wait gave {}", result.to_json_line()).into(),
                        ),
                    }
                });
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
        }
        "caller-big" => {
            let args = json!({ "bytes": n });
            let result = timed!(caller.call("big", &context(0), &args, |_| {}, None));
            match echo_text(&result) {
                Some(text) if text.len() == n && text.starts_with("abc") => {}
                _ => return Err(format!("big_text gave {:.200}", result.to_json_line()).into()),
            }
        }
        "caller-progress" => {
            let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let counter = seen.clone();
            let on_progress = move |_| {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            };
            let args = json!({ "steps": n });
            let result = timed!(caller.call("burst", &context(0), &args, on_progress, None));
            let seen = seen.load(std::sync::atomic::Ordering::Relaxed);
            let done = format!("done after {n} steps");
            if echo_text(&result) != Some(done.as_str()) || seen != n {
                return Err(
                    format!("{seen} progress events, then {}", result.to_json_line()).into(),
                );
            }
        }
        "soak" => {
            let concurrency: usize = rest.get(1).and_then(|c| c.parse().ok()).unwrap_or(8);
            let every: usize = std::env::var("MCPWIRE_SOAK_EVERY")
                .ok()
                .and_then(|e| e.parse().ok())
                .unwrap_or(10_000);
            soak(caller, n, concurrency.max(1), every.max(1)).await?;
        }
        other => return Err(format!("unknown workload {other}").into()),
    }
    Ok(())
}

/// What the soak's call number `i` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Echo,
    ToolError,
    Timeout,
    Cancel,
    Drop,
}

fn kind(i: usize) -> Kind {
    if i % 1000 == 500 {
        Kind::Timeout
    } else {
        match i % 100 {
            7 => Kind::Cancel,
            13 => Kind::Drop,
            29 => Kind::ToolError,
            _ => Kind::Echo,
        }
    }
}

async fn soak_call(caller: &Caller, i: usize) -> Result<String, String> {
    let ctx = context(i);
    let kind = kind(i);
    let (name, arguments, cancel) = match kind {
        Kind::Echo => ("echo", json!({"message": "hello"}), None),
        Kind::ToolError => ("fail", json!({"message": "no"}), None),
        Kind::Timeout => ("slow", json!({"steps": 3, "delay_ms": 1000}), None),
        Kind::Cancel => {
            let token = CancelToken::default();
            let fire = token.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                fire.cancel();
            });
            ("cancel", json!({"steps": 1, "delay_ms": 500}), Some(token))
        }
        Kind::Drop => ("echo", json!({"message": DROP_MARKER}), None),
    };
    let result = caller.call(name, &ctx, &arguments, |_| {}, cancel).await;
    let error_kind = result.error_kind().map(|k| k.as_str().to_owned());
    let outcome = match (kind, &error_kind) {
        (Kind::Echo, None) if echo_text(&result) == Some("Echo: hello") => "ok".to_owned(),
        (Kind::ToolError, Some(k)) if k == "tool_error" => k.clone(),
        (Kind::Timeout | Kind::Cancel | Kind::Drop, Some(k)) => {
            format!(
                "{k}{}",
                if result.unknown_outcome() == Some(true) {
                    "?"
                } else {
                    ""
                }
            )
        }
        _ => return Err(format!("{kind:?} call {i}: {}", result.to_json_line())),
    };
    Ok(format!("{kind:?}:{outcome}"))
}

struct Soak {
    done: usize,
    every: usize,
    outcomes: BTreeMap<String, usize>,
    failure: Option<String>,
}

fn sample(calls: usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count);
    println!(
        "sample calls={calls} rss_kib={} hwm_kib={} fds={fds}",
        field("VmRSS:"),
        field("VmHWM:")
    );
}

async fn soak(
    caller: Arc<Caller>,
    n: usize,
    concurrency: usize,
    every: usize,
) -> Result<(), Failure> {
    sample(0);
    let state = Rc::new(RefCell::new(Soak {
        done: 0,
        every,
        outcomes: BTreeMap::new(),
        failure: None,
    }));
    let next = Rc::new(std::cell::Cell::new(0usize));
    let local = tokio::task::LocalSet::new();
    for _ in 0..concurrency {
        let (caller, state, next) = (caller.clone(), state.clone(), next.clone());
        local.spawn_local(async move {
            loop {
                let i = next.get();
                if i >= n || state.borrow().failure.is_some() {
                    return;
                }
                next.set(i + 1);
                let outcome = soak_call(&caller, i).await;
                let mut state = state.borrow_mut();
                match outcome {
                    Ok(key) => *state.outcomes.entry(key).or_default() += 1,
                    Err(failure) => state.failure = Some(failure),
                }
                state.done += 1;
                if state.done % state.every == 0 {
                    sample(state.done);
                }
            }
        });
    }
    local.await;
    let state = state.borrow();
    let outcomes: Vec<String> = state
        .outcomes
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    println!("outcomes {}", outcomes.join(" "));
    match &state.failure {
        Some(failure) => Err(failure.clone().into()),
        None => Ok(()),
    }
}
