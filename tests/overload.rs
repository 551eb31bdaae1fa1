//! Overload (issue 25, item 2): hostile in-process servers that answer 429 and 503, with and
//! without `Retry-After` (seconds or an HTTP-date), driven through the layers a host uses:
//! discovery, the [`Caller`], a kept [`Client`], the probe.
//!
//! What is checked is counted on the server's side: how many times each request arrived, and
//! the gaps between arrivals as ratios of the wait the server asked for (a gap is never
//! shorter than the server's wait: the client does not come back early). Wall-clock bounds
//! are loose (the deadline plus slack), never the test's point. Each case prints one line,
//! `overload: CASE: ...`, with its counts and ratios (run with `--nocapture` to collect them).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpwire::ErrorKind;
use mcpwire::binding::config::Server;
use mcpwire::binding::discover::{Discovery, discover as discover_tools};
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::mcp::ProtocolVersion;
use mcpwire::probe::{ProbeOptions, probe};
use mcpwire::transport::http::HttpConfig;
use serde_json::{Value, json};

use crate::binding_call::{assert_failed, assert_succeeded, binding, caller, context, pool};
use crate::modern::discover;
use crate::support::fault_server::{FaultServer, Recorded, Reply};
use crate::support::mcp_script::{initialize_reply, legacy_probe_reply, rpc_result};

/// How far past its deadline an operation may end on a busy two-core machine.
const SLACK: Duration = Duration::from_millis(2500);

/// A fixed server clock: the HTTP-date cases measure `Retry-After` from the response's
/// `Date`, so they need no formatter and do not depend on the test machine's clock.
const SERVER_DATE: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
/// Two seconds after [`SERVER_DATE`].
const TWO_SECONDS_LATER: &str = "Sun, 06 Nov 1994 08:49:39 GMT";

/// When each JSON-RPC request arrived, by method, as the server saw it.
#[derive(Clone, Default)]
struct Arrivals(Arc<Mutex<Vec<(String, Instant)>>>);

impl Arrivals {
    fn note(&self, req: &Recorded) {
        if let Some(method) = req.jsonrpc_method() {
            self.0.lock().unwrap().push((method, Instant::now()));
        }
    }

    fn of(&self, method: &str) -> Vec<Instant> {
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|(m, _)| m == method)
            .map(|(_, at)| *at)
            .collect()
    }

    fn count(&self, method: &str) -> usize {
        self.of(method).len()
    }

    /// The gaps between arrivals of `method`, each as a ratio of `wait`.
    fn ratios(&self, method: &str, wait: Duration) -> Vec<f64> {
        self.of(method)
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64() / wait.as_secs_f64())
            .collect()
    }
}

/// A server whose `handler` sees every request, with the arrivals noted first.
async fn server(
    handler: impl Fn(&Recorded, &Arrivals) -> Reply + Send + Sync + 'static,
) -> (FaultServer, Arrivals) {
    let arrivals = Arrivals::default();
    let seen = arrivals.clone();
    let server = FaultServer::start(move |req| {
        seen.note(req);
        match (req.method.as_str(), req.jsonrpc_method().as_deref()) {
            ("DELETE", _) => Reply::empty(200),
            (_, Some(m)) if m.starts_with("notifications/") => Reply::empty(202),
            _ => handler(req, &seen),
        }
    })
    .await;
    (server, arrivals)
}

fn tools_page(req: &Recorded) -> Reply {
    Reply::json(
        200,
        rpc_result(
            req,
            json!({"tools": [{"name": "t", "inputSchema": {"type": "object",
                   "properties": {"q": {"type": "string"}}}}],
                   "resultType": "complete", "ttlMs": 0}),
        ),
    )
}

fn text_result(req: &Recorded, text: &str) -> Reply {
    Reply::json(
        200,
        rpc_result(
            req,
            json!({"content": [{"type": "text", "text": text}], "resultType": "complete"}),
        ),
    )
}

/// 429 or 503 with these extra headers, and a JSON-RPC error body as a 2026-07-28 gateway
/// might send.
fn busy(req: &Recorded, status: u16, headers: &[(&str, &str)]) -> Reply {
    let mut reply = Reply::json(
        status,
        json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(),
               "error": {"code": -32000, "message": "busy"}}),
    );
    for (name, value) in headers {
        reply = reply.with_header(name, value);
    }
    reply
}

/// A 2026-07-28 server (discovery, one tool, calls answered `done`) whose first `refusals`
/// requests of `method` are refused with `status` and `headers`.
async fn modern_refusing(
    method: &'static str,
    refusals: usize,
    status: u16,
    headers: &'static [(&'static str, &'static str)],
) -> (FaultServer, Arrivals) {
    let left = AtomicUsize::new(refusals);
    server(move |req, _| {
        let name = req.jsonrpc_method();
        if name.as_deref() == Some(method)
            && left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return busy(req, status, headers);
        }
        match name.as_deref() {
            Some("server/discover") => discover(req),
            Some("tools/list") => tools_page(req),
            Some("tools/call") => text_result(req, "done"),
            _ => Reply::empty(400),
        }
    })
    .await
}

fn discovery(server: &FaultServer, timeout: Duration) -> Discovery {
    let mut options = Discovery::new(
        Server::http(server.url("/mcp")),
        "acme".to_owned(),
        vec!["t".to_owned()],
    );
    options.timeout = timeout;
    options
}

// === Idempotent requests wait and go again ======================================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_era_probe_429_with_retry_after_seconds_is_waited_out_by_discovery() {
    let (server, arrivals) =
        modern_refusing("server/discover", 2, 429, &[("retry-after", "1")]).await;
    let bindings = discover_tools(&pool(), &discovery(&server, Duration::from_secs(10)))
        .await
        .expect("discovery waits the refusals out");
    assert_eq!(bindings.len(), 1);
    assert_eq!(
        arrivals.count("server/discover"),
        3,
        "two 429s, then the verdict"
    );
    assert_eq!(
        arrivals.count("initialize"),
        0,
        "a 429 is no 2025-era verdict"
    );
    let ratios = arrivals.ratios("server/discover", Duration::from_secs(1));
    assert!(ratios.iter().all(|r| *r >= 1.0), "{ratios:?}");
    println!(
        "overload: probe 429 Retry-After 1 s x2: discover POSTs 3, gap/Retry-After {ratios:.2?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_tools_list_503_with_an_http_date_is_waited_out() {
    // A 2025-era server (the probe answered 400, then initialize) whose first tools/list is
    // refused until two seconds after its own clock's now.
    let refusals = AtomicUsize::new(1);
    let (server, arrivals) = server(move |req, _| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => legacy_probe_reply(),
        Some("initialize") => initialize_reply(req, "2025-11-25"),
        Some("tools/list") if refusals.fetch_sub(1, Ordering::SeqCst) > 0 => busy(
            req,
            503,
            &[("retry-after", TWO_SECONDS_LATER), ("date", SERVER_DATE)],
        ),
        Some("tools/list") => tools_page(req),
        _ => Reply::empty(400),
    })
    .await;
    let bindings = discover_tools(&pool(), &discovery(&server, Duration::from_secs(10)))
        .await
        .expect("discovery waits the date out");
    assert_eq!(bindings.len(), 1);
    assert_eq!(arrivals.count("tools/list"), 2);
    assert_eq!(arrivals.count("initialize"), 1, "the same session");
    let ratios = arrivals.ratios("tools/list", Duration::from_secs(2));
    assert!(ratios[0] >= 1.0, "{ratios:?}");
    println!("overload: tools/list 503 Retry-After HTTP-date +2 s: POSTs 2, gap/wait {ratios:.2?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_503_without_retry_after_backs_off_and_succeeds() {
    let (server, arrivals) = modern_refusing("tools/list", 2, 503, &[]).await;
    discover_tools(&pool(), &discovery(&server, Duration::from_secs(10)))
        .await
        .expect("the backoff outlasts two refusals");
    assert_eq!(arrivals.count("tools/list"), 3);
    // Equal jitter over 0.5 s, then 1 s: each gap at least half its base.
    let at = arrivals.of("tools/list");
    let ratios: Vec<f64> = [(1, 0.5), (2, 1.0)]
        .iter()
        .map(|(i, base)| (at[*i] - at[i - 1]).as_secs_f64() / base)
        .collect();
    assert!(ratios.iter().all(|r| *r >= 0.5), "{ratios:?}");
    println!(
        "overload: tools/list 503 no Retry-After x2: POSTs 3, gap/backoff base (0.5 s, 1 s) \
         {ratios:.2?} (equal jitter: in [0.5, 1) plus scheduling)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_retry_after_past_the_deadline_fails_at_once_as_rate_limited() {
    let (server, arrivals) = server(|req, _| busy(req, 429, &[("retry-after", "120")])).await;
    let timeout = Duration::from_secs(5);
    let started = Instant::now();
    let error = discover_tools(&pool(), &discovery(&server, timeout))
        .await
        .expect_err("the server's wait ends past the deadline");
    let elapsed = started.elapsed();
    assert_eq!(error.kind(), ErrorKind::RateLimited, "{error}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(120)));
    assert!(!error.outcome_unknown());
    assert!(error.to_string().contains("Retry-After 120 s"), "{error}");
    assert_eq!(arrivals.count("server/discover"), 1, "not sent again");
    assert!(
        elapsed < timeout,
        "failed at once, not at the deadline: {elapsed:?}"
    );
    println!(
        "overload: probe 429 Retry-After 120 s, deadline 5 s: POSTs 1, ended at {:.2} of the \
         deadline",
        elapsed.as_secs_f64() / timeout.as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_endless_429_stops_after_four_attempts() {
    let (server, arrivals) = server(|req, _| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => discover(req),
        _ => busy(req, 429, &[("retry-after", "0")]),
    })
    .await;
    let error = discover_tools(&pool(), &discovery(&server, Duration::from_secs(10)))
        .await
        .expect_err("refused forever");
    assert_eq!(error.kind(), ErrorKind::RateLimited, "{error}");
    assert_eq!(error.retry_after(), Some(Duration::ZERO));
    assert!(error.to_string().contains("after 4 attempts"), "{error}");
    assert_eq!(
        arrivals.count("tools/list"),
        4,
        "one sending and three retries"
    );
    println!("overload: endless tools/list 429 Retry-After 0: POSTs 4, then rate_limited");
}

// === A call is never sent again; the client stays usable ========================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_tools_call_429_is_sent_once_and_the_kept_client_serves_the_next_call() {
    let (server, arrivals) = modern_refusing("tools/call", 1, 429, &[("retry-after", "30")]).await;
    let caller = caller(vec![binding(&server.url("/mcp"), json!({}))]);
    let started = Instant::now();
    let refused = caller
        .call("t", &context("call-1"), &json!({"q": "x"}), |_| {}, None)
        .await;
    let elapsed = started.elapsed();
    assert_failed(&refused, "rate_limited", false);
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(30)));
    let line: Value = serde_json::from_str(&refused.to_json_line()).expect("JSON");
    assert_eq!(line["error"]["retry_after_seconds"], json!(30), "{line}");
    assert_eq!(line["unknown_outcome"], json!(false));
    assert_eq!(
        arrivals.count("tools/call"),
        1,
        "exactly one POST: never re-sent"
    );
    assert!(
        elapsed < Duration::from_secs(2) + SLACK,
        "no wait: {elapsed:?}"
    );
    // The host tries again later: the kept client, with no new probe.
    let served = caller
        .call("t", &context("call-2"), &json!({"q": "x"}), |_| {}, None)
        .await;
    assert_succeeded(&served);
    assert_eq!(arrivals.count("tools/call"), 2);
    assert_eq!(
        arrivals.count("server/discover"),
        1,
        "the kept client was used"
    );
    println!(
        "overload: tools/call 429 Retry-After 30 s: call POSTs 1, rate_limited, \
         retry_after_seconds 30, next call served by the kept client (probes 1)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_a_kept_2026_client_survives_503s_and_stays_usable() {
    let lists = AtomicUsize::new(0);
    let calls = AtomicUsize::new(0);
    let tasks = AtomicUsize::new(0);
    let (server, arrivals) = server(move |req, _| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => discover(req),
        Some("tools/list") if lists.fetch_add(1, Ordering::SeqCst) == 0 => {
            busy(req, 503, &[("retry-after", "1")])
        }
        Some("tools/list") => tools_page(req),
        Some("tools/call") if calls.fetch_add(1, Ordering::SeqCst) == 0 => busy(req, 503, &[]),
        Some("tools/call") => text_result(req, "later"),
        Some("tasks/get") if tasks.fetch_add(1, Ordering::SeqCst) == 0 => {
            busy(req, 429, &[("retry-after", "1")])
        }
        Some("tasks/get") => Reply::json(
            200,
            rpc_result(
                req,
                json!({"taskId": "t-1", "status": "working", "resultType": "complete"}),
            ),
        ),
        _ => Reply::empty(400),
    })
    .await;
    let config = HttpConfig::new(&server.url("/mcp")).expect("config");
    let client = Client::connect_http(&pool(), config, ClientOptions::default())
        .await
        .expect("connect");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let tools = client
        .list_tools()
        .await
        .expect("the listing is waited out");
    assert_eq!(tools.len(), 1);
    let task = client
        .request_raw("tasks/get", Some(json!({"taskId": "t-1"})), None)
        .await
        .expect("tasks/get is waited out");
    assert!(task.get().contains("working"), "{}", task.get());
    let error = client
        .call_tool("t", None, CallOptions::default())
        .await
        .expect_err("a call refused with 503 fails");
    assert_eq!(error.kind(), ErrorKind::RateLimited, "{error}");
    assert_eq!(error.retry_after(), None);
    assert!(!error.outcome_unknown());
    assert_eq!(arrivals.count("tools/call"), 1);
    let served = client
        .call_tool("t", None, CallOptions::default())
        .await
        .expect("the same client serves the next call");
    assert_ne!(served.is_error, Some(true));
    assert_eq!(arrivals.count("server/discover"), 1);
    println!(
        "overload: kept 2026 client: tools/list 503 -> POSTs {}, tasks/get 429 -> POSTs {}, \
         tools/call 503 -> POSTs 1 (rate_limited), next call served; probes {}",
        arrivals.count("tools/list"),
        arrivals.count("tasks/get"),
        arrivals.count("server/discover"),
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_a_2025_session_call_answered_503_is_not_resent_and_the_session_goes_on() {
    let calls = AtomicUsize::new(0);
    let (server, arrivals) = server(move |req, _| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => legacy_probe_reply(),
        Some("initialize") => initialize_reply(req, "2025-11-25"),
        Some("tools/call") if calls.fetch_add(1, Ordering::SeqCst) == 0 => {
            busy(req, 503, &[("retry-after", "5")])
        }
        Some("tools/call") => text_result(req, "later"),
        _ => Reply::empty(400),
    })
    .await;
    let config = HttpConfig::new(&server.url("/mcp")).expect("config");
    let client = Client::connect_http(&pool(), config, ClientOptions::default())
        .await
        .expect("connect");
    assert_eq!(client.session_id(), Some("sess-1"));
    let error = client
        .call_tool("t", None, CallOptions::default())
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::RateLimited, "{error}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(5)));
    assert!(!error.outcome_unknown());
    assert_eq!(arrivals.count("tools/call"), 1, "not re-sent");
    client
        .call_tool("t", None, CallOptions::default())
        .await
        .expect("the session is still usable");
    let calls: Vec<Recorded> = server
        .requests()
        .into_iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some("tools/call"))
        .collect();
    assert_eq!(calls[1].header("mcp-session-id"), Some("sess-1"));
    assert_eq!(arrivals.count("initialize"), 1, "no new session");
    println!(
        "overload: 2025 session tools/call 503 Retry-After 5 s: POSTs 1 (rate_limited), next \
         call in the same session; initialize 1"
    );
    client.close().await;
}

// === The probe ==================================================================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_the_probe_reports_429_with_retry_after_and_retries_within_its_deadline() {
    let (server, arrivals) =
        modern_refusing("server/discover", 1, 429, &[("retry-after", "1")]).await;
    let mut options = ProbeOptions::new(&server.url("/mcp"));
    options.timeout = Duration::from_secs(20);
    options.request_timeout = Duration::from_secs(5);
    let report = probe(&pool(), &options).await.expect("a valid URL");
    assert_eq!(
        report.eras.modern.speaks_2026_07_28,
        Some(true),
        "{report:?}"
    );
    let seen = &report.overload;
    assert!(!seen.is_empty(), "{report:?}");
    assert_eq!(seen[0].status, 429);
    assert_eq!(seen[0].retry_after_seconds, Some(1));
    assert_eq!(seen[0].attempt, 1);
    assert_eq!(seen[0].waited_ms, Some(1000));
    let text = report.render();
    assert!(text.contains("Overload"), "{text}");
    assert!(
        text.contains("attempt 1: 429 (Retry-After 1 s) -> sent again after 1000 ms"),
        "{text}"
    );
    let ratios = arrivals.ratios("server/discover", Duration::from_secs(1));
    assert!(ratios[0] >= 1.0, "{ratios:?}");
    println!(
        "overload: probe, server/discover 429 Retry-After 1 s once: discover POSTs {}, first \
         gap/Retry-After {:.2}",
        arrivals.count("server/discover"),
        ratios[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_the_probe_gives_up_on_endless_503_with_its_attempts_counted() {
    let (server, arrivals) = server(|_, _| Reply::text(503, "down for maintenance")).await;
    let mut options = ProbeOptions::new(&server.url("/mcp"));
    options.timeout = Duration::from_secs(30);
    options.request_timeout = Duration::from_secs(5);
    let started = Instant::now();
    let report = probe(&pool(), &options).await.expect("a valid URL");
    let elapsed = started.elapsed();
    assert!(elapsed < options.timeout + SLACK, "{elapsed:?}");
    assert_eq!(
        report.eras.modern.speaks_2026_07_28, None,
        "no era evidence"
    );
    assert!(
        report.eras.modern.verdict.contains("overloaded"),
        "{report:?}"
    );
    let discover: Vec<_> = report
        .overload
        .iter()
        .filter(|seen| seen.request.contains("server/discover"))
        .collect();
    assert_eq!(discover.len(), 4, "{discover:?}");
    assert!(
        discover[3].outcome.starts_with("given up after 4 attempts"),
        "{discover:?}"
    );
    assert_eq!(arrivals.count("server/discover"), 4);
    println!(
        "overload: probe, endless 503 without Retry-After: server/discover POSTs 4 of 4 \
         allowed, probe ended at {:.2} of its deadline, {} overload answers listed",
        elapsed.as_secs_f64() / options.timeout.as_secs_f64(),
        report.overload.len()
    );
}
