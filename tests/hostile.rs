//! Hostile servers (issue 6): one test per way a server can misbehave at the byte level, each
//! driven through the layer a host uses (a [`Caller`] for a call, [`discover`] for `tools/list`)
//! and each checking four things:
//!
//! - the outcome: the error kind (or success, where the call must go on);
//! - `unknown_outcome` as SPEC.md's failure table says;
//! - time: the call ends within its deadline plus [`SLACK`] (the close that follows a call
//!   included), measured on the wall clock;
//! - memory, where the server floods: the server writes a flood only as fast as the client
//!   reads it, so [`FaultServer::bytes_written`] after every connection has closed bounds what
//!   the client ever took in. A flood of 50 or 200 MB must stop near the limit, not be read
//!   (or buffered) to its end. The other cases send a few kilobytes at most.
//!
//! Decisions the cases pin down: a binding's `timeout_seconds` bounds the whole call, not the
//! gap between bytes, so neither keepalive comments nor a one-byte-per-50-ms drip keep a call
//! alive past it (it ends as `timeout`, cancelled on the wire); a response with someone else's
//! id is ignored like any late response, so a stream that then ends without ours has lost the
//! call (`connection_lost`); a redirect is refused without following it, the token with it.
//!
//! The binding layer's own table tests (`binding_call`) use well-behaved scripts; these use the
//! worst ones. Deadlines are short (2 to 5 s) so the suite stays quick, except for one test that
//! waits out `mcp-tools`' real 30 s discovery default (it sleeps; the others run meanwhile).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcpwire::ErrorKind;
use mcpwire::binding::call::{Caller, ToolResult};
use mcpwire::binding::config::{Binding, Server};
use mcpwire::binding::discover::{Discovery, discover};
use serde_json::{Value, json};

use crate::binding_call::{
    TOKEN, TOKEN_ENV, WAIT, assert_failed, assert_succeeded, binding, caller, cancelled_and_call,
    context, pool, posts_of, tool_reply,
};
use crate::cli_tools::{Fault, assert_exit, mcp_tools};
use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::{mcp_handler, mcp_server, rpc_result, sse_event, sse_flood};

/// How far past its deadline a call may end: scheduling on a busy two-core machine, plus the
/// DELETE that closes the session after the call.
const SLACK: Duration = Duration::from_millis(2500);
/// The deadline of calls that must fail at once: far longer than they should take, short
/// enough that a hang fails the test quickly (as a timeout, which the kind check rejects).
const FAST_SECONDS: u64 = 5;
/// How soon a call that fails at once has ended (they take milliseconds).
const AT_ONCE: Duration = Duration::from_secs(2);
/// `max_output_bytes` for the flood cases.
const MIB: u64 = 1024 * 1024;
/// The most a client may take in from a flood: the limit it enforces plus what the loopback
/// sockets buffer in between (a few MiB with autotuning on Linux).
const SOCKET_SLACK: u64 = 16 * MIB;

/// Calls binding `t` (with `{"q": "x"}`) and measures how long the call took.
async fn timed_call(binding: Binding) -> (ToolResult, Duration, Caller) {
    let caller = caller(vec![binding]);
    let started = Instant::now();
    let result = caller
        .call("t", &context("call-h"), &json!({"q": "x"}), |_| {}, None)
        .await;
    (result, started.elapsed(), caller)
}

#[track_caller]
fn assert_within(elapsed: Duration, deadline: Duration) {
    assert!(
        elapsed < deadline + SLACK,
        "took {elapsed:?}, past the {deadline:?} deadline plus {SLACK:?}"
    );
}

/// Starts an MCP server whose `tools/call` answers `call`, and calls it once through a binding
/// with the [`FAST_SECONDS`] deadline.
async fn call_server(
    call: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
) -> (ToolResult, Duration, FaultServer) {
    let server = mcp_server(call).await;
    let (result, elapsed, _caller) =
        timed_call(binding_for(&server, FAST_SECONDS, json!({}))).await;
    (result, elapsed, server)
}

/// Checks a call that must fail at once: its error `kind`, `unknown_outcome`, a message that
/// names `detail`, and an end well before its [`FAST_SECONDS`] deadline (a hang would end at the
/// deadline, as a timeout). Returns the message.
#[track_caller]
fn assert_failed_at_once(
    result: &ToolResult,
    elapsed: Duration,
    kind: &str,
    unknown_outcome: bool,
    detail: &str,
) -> String {
    assert_failed(result, kind, unknown_outcome);
    let message = result.error_message().unwrap_or_default().to_owned();
    assert!(
        message.contains(detail),
        "{kind}: {detail:?} not in {message:?}"
    );
    assert_within(elapsed, Duration::from_secs(FAST_SECONDS));
    assert!(elapsed < AT_ONCE, "{kind}: took {elapsed:?}, not at once");
    message
}

/// A binding for `server` with a deadline of `seconds`, plus `extra` members.
fn binding_for(server: &FaultServer, seconds: u64, extra: Value) -> Binding {
    let mut members = json!({"timeout_seconds": seconds});
    for (key, value) in extra.as_object().expect("extra is an object") {
        members[key] = value.clone();
    }
    binding(&server.url("/mcp"), members)
}

/// Ends every connection of `caller` (its pool goes with it) and waits for the server to see
/// them all closed; then returns how many bytes the server wrote over the whole exchange.
async fn bytes_taken_in(server: &FaultServer, caller: Caller) -> u64 {
    drop(caller);
    server.wait_idle(WAIT).await;
    server.bytes_written()
}

/// The `id` of the one `tools/call` the server received.
fn call_id_on_the_wire(server: &FaultServer) -> Value {
    let calls = posts_of(&server.requests(), "tools/call");
    assert_eq!(calls.len(), 1, "sent exactly once, never replayed");
    calls[0].jsonrpc_id().expect("an id")
}

// === The response stream ========================================================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_stream_dropped_after_the_request_was_sent_without_event_ids() {
    let (result, elapsed, server) = call_server(|_| {
        Reply::sse_steps(
            200,
            vec![Step::text(": accepted\n\n"), Step::delay_ms(50), Step::Drop],
        )
    })
    .await;
    assert_failed_at_once(&result, elapsed, "connection_lost", true, "no event id");
    call_id_on_the_wire(&server);
    // Nothing to resume from: no GET was tried.
    assert!(server.requests().iter().all(|r| r.method != "GET"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_keepalive_comments_forever_end_at_the_binding_timeout_with_a_cancel() {
    let server = mcp_server(|_| {
        Reply::sse_steps(
            200,
            vec![Step::Repeat {
                bytes: b": keepalive\n\n".to_vec(),
                every: Duration::from_millis(20),
                max_bytes: u64::MAX,
            }],
        )
    })
    .await;
    let (result, elapsed, _caller) = timed_call(binding_for(&server, 3, json!({}))).await;
    assert_failed(&result, "timeout", true);
    assert!(elapsed >= Duration::from_secs(3), "{elapsed:?}");
    assert_within(elapsed, Duration::from_secs(3));
    let (cancelled, call) = cancelled_and_call(&server).await;
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
    call_id_on_the_wire(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_50_mb_result_against_max_output_bytes_of_1_mib() {
    const FLOOD: u64 = 50_000_000;
    let server = mcp_server(|req| {
        let head = format!(
            r#"event: message
data: {{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":""#,
            req.jsonrpc_id().unwrap()
        );
        sse_flood(&head, FLOOD)
    })
    .await;
    let binding = binding_for(&server, FAST_SECONDS, json!({"max_output_bytes": MIB}));
    let (result, elapsed, caller) = timed_call(binding).await;
    assert_failed_at_once(&result, elapsed, "output_too_large", true, "1048576");
    let taken = bytes_taken_in(&server, caller).await;
    assert!(
        taken < MIB + SOCKET_SLACK,
        "the client took in {taken} bytes of a {FLOOD}-byte flood"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_200_mb_sse_line_without_a_newline() {
    const FLOOD: u64 = 200_000_000;
    let server = mcp_server(|_| sse_flood("event: message\ndata: ", FLOOD)).await;
    // An output limit far above the event-stream line limit (16 MiB), so the line limit is what
    // stops the stream.
    let binding = binding_for(
        &server,
        FAST_SECONDS,
        json!({"max_output_bytes": 512 * MIB}),
    );
    let (result, elapsed, caller) = timed_call(binding).await;
    assert_failed_at_once(
        &result,
        elapsed,
        "output_too_large",
        true,
        "line longer than",
    );
    let taken = bytes_taken_in(&server, caller).await;
    let line_limit = mcpwire::sse::Limits::default().max_line_bytes as u64;
    assert!(
        taken < line_limit + SOCKET_SLACK,
        "the client took in {taken} bytes of a {FLOOD}-byte line"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_invalid_json_in_an_event() {
    let (result, elapsed, server) = call_server(|_| {
        Reply::sse_steps(
            200,
            vec![
                Step::text("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\n\n"),
                Step::Hang,
            ],
        )
    })
    .await;
    assert_failed_at_once(&result, elapsed, "protocol", true, "not JSON-RPC");
    call_id_on_the_wire(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_response_with_the_wrong_id() {
    let (result, elapsed, server) = call_server(|req| {
        let mut wrong = rpc_result(
            req,
            json!({"content": [{"type": "text", "text": "for someone else"}]}),
        );
        wrong["id"] = json!("not-your-id");
        Reply::sse(200, &[&sse_event(&wrong)])
    })
    .await;
    // The stranger's response is ignored, and the stream ends without ours.
    assert_failed_at_once(
        &result,
        elapsed,
        "connection_lost",
        true,
        "ended before the response",
    );
    call_id_on_the_wire(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_html_200_to_the_call() {
    let (result, elapsed, server) = call_server(|_| {
        Reply::text(200, "<!doctype html><title>Sign in</title>")
            .with_header("content-type", "text/html; charset=utf-8")
    })
    .await;
    assert_failed_at_once(&result, elapsed, "protocol", true, "text/html");
    call_id_on_the_wire(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_401_with_a_challenge_to_the_call() {
    let server = mcp_server(|_| {
        Reply::json(401, json!({"error": "invalid_token"})).with_header(
            "www-authenticate",
            r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", error="invalid_token""#,
        )
    })
    .await;
    let (result, elapsed, _caller) = timed_call(binding_for(
        &server,
        FAST_SECONDS,
        json!({"token_env": TOKEN_ENV}),
    ))
    .await;
    // Refused before the tool ran: the outcome is known.
    let message =
        assert_failed_at_once(&result, elapsed, "unauthorized", false, "resource_metadata");
    assert!(message.contains("invalid_token"), "{message}");
    assert!(!message.contains(TOKEN), "{message}");
    call_id_on_the_wire(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_500_after_the_call_was_sent() {
    let (result, elapsed, server) = call_server(|_| Reply::text(500, "internal error")).await;
    assert_failed_at_once(&result, elapsed, "http_status", true, "500");
    call_id_on_the_wire(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_307_redirect_is_not_followed_and_the_token_stays_home() {
    let elsewhere = mcp_server(|req| {
        tool_reply(
            req,
            json!({"content": [{"type": "text", "text": "stolen"}]}),
        )
    })
    .await;
    let target = elsewhere.url("/mcp");
    let server = mcp_server(move |_| Reply::redirect(307, &target)).await;
    let (result, elapsed, _caller) = timed_call(binding_for(
        &server,
        FAST_SECONDS,
        json!({"token_env": TOKEN_ENV}),
    ))
    .await;
    // The server sent us elsewhere instead of running the tool.
    assert_failed_at_once(
        &result,
        elapsed,
        "http_status",
        false,
        "redirects are not followed",
    );
    // The token went to the configured origin only, and nothing at all reached the target.
    let call = posts_of(&server.requests(), "tools/call");
    assert_eq!(
        call[0].header("authorization"),
        Some(&*format!("Bearer {TOKEN}"))
    );
    assert_eq!(
        elsewhere.connections_accepted(),
        0,
        "{:?}",
        elsewhere.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_drip_one_byte_every_50_ms_ends_at_the_binding_timeout() {
    // The response, one byte every 50 ms: about 6 s for the whole event. The binding's
    // timeout bounds the whole call, not the gap between bytes, so a server cannot keep a
    // call alive by trickling: the call ends at its 2 s deadline and is cancelled on the wire.
    let server = mcp_server(|req| {
        let event = sse_event(&rpc_result(
            req,
            json!({"content": [{"type": "text", "text": "dripped slowly"}]}),
        ));
        assert!(event.len() > 100, "long enough to outlast the deadline");
        Reply::sse_steps(200, Step::drip(event, Duration::from_millis(50)))
    })
    .await;
    let (result, elapsed, _caller) = timed_call(binding_for(&server, 2, json!({}))).await;
    assert_failed(&result, "timeout", true);
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    assert_within(elapsed, Duration::from_secs(2));
    let (cancelled, call) = cancelled_and_call(&server).await;
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
}

// === Server requests during the call ============================================================

/// A binding call whose server sends `request` on the call's stream, then, 300 ms later, a
/// text result.
async fn server_request_then_text(
    request: Value,
    text: &'static str,
) -> (ToolResult, Duration, FaultServer) {
    call_server(move |req| {
        let done = rpc_result(req, json!({"content": [{"type": "text", "text": text}]}));
        Reply::sse_steps(
            200,
            vec![
                Step::text(&sse_event(&request)),
                Step::delay_ms(300),
                Step::text(&sse_event(&done)),
            ],
        )
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_sampling_request_mid_call_is_answered_and_the_call_goes_on() {
    let sampling = json!({"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                   "maxTokens": 5}});
    let (result, elapsed, server) = server_request_then_text(sampling, "done anyway").await;
    assert_succeeded(&result);
    assert_eq!(
        result.content(),
        vec![json!({"type": "text", "text": "done anyway"})]
    );
    assert_within(elapsed, Duration::from_secs(FAST_SECONDS));
    // Answered on a POST of its own, in the session, with "method not found".
    let requests = server.requests();
    let answer = requests
        .iter()
        .find(|r| {
            r.json()
                .is_some_and(|m| m["id"] == "s-1" && m.get("method").is_none())
        })
        .expect("the sampling request was answered");
    assert_eq!(answer.method, "POST");
    assert_eq!(answer.header("mcp-session-id"), Some("sess-1"));
    assert_eq!(
        answer.json().unwrap()["error"]["code"],
        -32601,
        "{answer:?}"
    );
    assert!(posts_of(&requests, "notifications/cancelled").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_elicitation_request_mid_call_fails_it_with_an_unknown_outcome() {
    let elicit = json!({"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create",
        "params": {"message": "Delete everything?",
                   "requestedSchema": {"type": "object", "properties": {}}}});
    elicitation_ends_the_call(elicit).await;
}

/// A binding call whose server sends `elicit` (id `e-1` or `u-1`) on the call's stream and
/// hangs: the call ends at once with its outcome unknown, is cancelled on the wire, and the
/// server's request is answered too (with an error: this client does not elicit). Returns
/// the six requests the server saw: initialize, initialized, the call, the cancel, the
/// answer, DELETE.
async fn elicitation_ends_the_call(elicit: Value) -> Vec<Recorded> {
    let id = elicit["id"].clone();
    let (result, elapsed, server) = call_server(move |_| {
        Reply::sse_steps(200, vec![Step::text(&sse_event(&elicit)), Step::Hang])
    })
    .await;
    assert_failed_at_once(
        &result,
        elapsed,
        "elicitation_requested",
        true,
        "elicitation/create",
    );
    let (cancelled, call) = cancelled_and_call(&server).await;
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
    let requests = server.wait_for_requests(6, WAIT).await;
    let answer = requests
        .iter()
        .filter_map(Recorded::json)
        .find(|m| m["id"] == id && m.get("method").is_none())
        .expect("the elicitation request was answered");
    assert!(answer["error"]["code"].is_i64(), "{answer}");
    requests
}

/// The binding layer declares no input capability and answers no server input (SPEC.md): a
/// URL-mode elicitation mid-call ends the call as any elicitation does, with its outcome
/// unknown; no handler ever sees its URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_url_elicitation_mid_call_fails_it_with_an_unknown_outcome() {
    let elicit = json!({"jsonrpc": "2.0", "id": "u-1", "method": "elicitation/create",
        "params": {"mode": "url", "elicitationId": "e-1", "message": "Connect your account",
                   "url": "https://mcp.example.com/connect?elicitationId=e-1"}});
    let requests = elicitation_ends_the_call(elicit).await;
    let call = posts_of(&requests, "tools/call")[0].json().unwrap();
    assert!(
        call["params"]["_meta"]
            .get("io.modelcontextprotocol/clientCapabilities")
            .is_none()
            && posts_of(&requests, "initialize")[0].json().unwrap()["params"]["capabilities"]
                .get("elicitation")
                .is_none(),
        "no elicitation declared"
    );
}

/// A sampling request with tools mid-call gets -32601 like any other, and the call goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_sampling_with_tools_mid_call_is_answered_and_the_call_goes_on() {
    let sampling = json!({"jsonrpc": "2.0", "id": "s-2", "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                   "tools": [{"name": "rm", "inputSchema": {"type": "object"}}],
                   "toolChoice": {"mode": "required"}, "maxTokens": 5}});
    let (result, _, server) = server_request_then_text(sampling, "went on").await;
    assert_succeeded(&result);
    let answer = server
        .requests()
        .iter()
        .filter_map(Recorded::json)
        .find(|m| m["id"] == "s-2" && m.get("method").is_none())
        .expect("answered");
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
}

/// A `-32042` (URL elicitation required, 2025-11-25) answer to `req` that lists one URL
/// elicitation with id `elicitation_id`.
pub(crate) fn url_elicitation_required(req: &Recorded, elicitation_id: &str) -> Reply {
    Reply::json(
        200,
        json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(), "error": {"code": -32042,
            "message": "This request requires more information.",
            "data": {"elicitations": [{"mode": "url", "elicitationId": elicitation_id,
                "url": format!("https://mcp.example.com/connect?elicitationId={elicitation_id}"),
                "message": "Authorization is required."}]}}}),
    )
}

/// `-32042` (URL elicitation required, 2025-11-25) is the server's refusal before the tool
/// ran: the binding call fails with its outcome known, and is not sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_url_elicitation_required_error_is_a_known_refusal() {
    let (result, elapsed, server) = call_server(|req| url_elicitation_required(req, "e-2")).await;
    assert_failed_at_once(&result, elapsed, "server_error", false, "-32042");
    assert_eq!(posts_of(&server.requests(), "tools/call").len(), 1);
}

// === Connecting =================================================================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_connection_refused() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let binding = binding(
        &format!("http://127.0.0.1:{port}/mcp"),
        json!({"timeout_seconds": FAST_SECONDS}),
    );
    let (result, elapsed, _caller) = timed_call(binding).await;
    assert_failed_at_once(&result, elapsed, "connect", false, "could not connect");
}

// === tools/list (discovery) =====================================================================

/// Discovery of tool `a` at `server` within `timeout`.
fn discovery(server: &FaultServer, timeout: Duration) -> Discovery {
    let mut options = Discovery::new(
        Server::http(server.url("/mcp")),
        "acme".to_owned(),
        vec!["a".to_owned()],
    );
    options.timeout = timeout;
    options
}

/// A `tools/list` page with tool `name` and, if given, a next cursor.
fn page(req: &Recorded, name: &str, next: Option<&str>) -> Reply {
    let mut page = json!({"tools": [{"name": name, "inputSchema": {"type": "object"}}]});
    if let Some(next) = next {
        page["nextCursor"] = json!(next);
    }
    Reply::json(200, rpc_result(req, page))
}

fn cursor_of(req: &Recorded) -> Option<String> {
    req.json()?["params"]["cursor"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_tools_list_whose_cursor_repeats() {
    let server = mcp_server(|req| page(req, "a", Some("again"))).await;
    let timeout = Duration::from_secs(FAST_SECONDS);
    let started = Instant::now();
    let error = discover(&pool(), &discovery(&server, timeout))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Protocol, "{error}");
    assert!(error.to_string().contains("repeated the cursor"), "{error}");
    assert_within(started.elapsed(), timeout);
    // The first page, then the repeated cursor once: the loop is caught at the first repeat.
    let cursors: Vec<Option<String>> = posts_of(&server.requests(), "tools/list")
        .iter()
        .map(cursor_of)
        .collect();
    assert_eq!(cursors, [None, Some("again".to_owned())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_tools_list_slower_than_the_discovery_bound() {
    // `mcp-tools` bounds discovery by 30 s (its `-timeout` default, the library's
    // `Discovery::timeout`); here the bound is 2 s and the listing would take 31.
    let server = mcp_server(|req| {
        let late = rpc_result(
            req,
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}),
        );
        Reply::sse_steps(
            200,
            vec![
                Step::text(": working\n\n"),
                Step::Delay(Duration::from_secs(31)),
                Step::text(&sse_event(&late)),
            ],
        )
    })
    .await;
    let timeout = Duration::from_secs(2);
    let started = Instant::now();
    let error = discover(&pool(), &discovery(&server, timeout))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(error.to_string().contains("longer than 2 s"), "{error}");
    assert!(elapsed >= timeout, "{elapsed:?}");
    assert_within(elapsed, timeout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_session_expires_between_tools_list_pages() {
    /// Sessions `sess-1`, `sess-2`, ...; page 2 answers 404 in the first `expiring` sessions.
    async fn server(expiring: usize) -> FaultServer {
        let sessions = Arc::new(AtomicUsize::new(0));
        FaultServer::start(move |req| {
            let session = req.header("mcp-session-id").unwrap_or("").to_owned();
            match (req.method.as_str(), req.jsonrpc_method().as_deref()) {
                ("DELETE", _) => Reply::empty(200),
                (_, Some("initialize")) => {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    crate::support::mcp_script::initialize_reply(req, "2025-11-25")
                        .with_header("mcp-session-id", &format!("sess-{n}"))
                }
                (_, Some("tools/list")) => match cursor_of(req).as_deref() {
                    None => page(req, "a", Some("page-2")),
                    Some(_) => {
                        let n: usize = session
                            .strip_prefix("sess-")
                            .and_then(|n| n.parse().ok())
                            .expect("a session id");
                        if n <= expiring {
                            Reply::json(
                                404,
                                json!({"jsonrpc": "2.0", "id": null,
                                       "error": {"code": -32600, "message": "Session not found"}}),
                            )
                        } else {
                            page(req, "b", None)
                        }
                    }
                },
                _ => Reply::empty(202),
            }
        })
        .await
    }
    let timeout = Duration::from_secs(FAST_SECONDS);

    // Expired once: a new session reads the list from the start, and discovery succeeds.
    let once = server(1).await;
    let started = Instant::now();
    let mut found = discovery(&once, timeout);
    found.tools = vec!["a".to_owned(), "b".to_owned()];
    let bindings = discover(&pool(), &found).await.expect("discovery");
    assert_within(started.elapsed(), timeout);
    let names: Vec<&str> = bindings.iter().map(|b| b.mcp_tool.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let requests = once.requests();
    assert_eq!(posts_of(&requests, "initialize").len(), 2);
    let lists: Vec<(String, Option<String>)> = posts_of(&requests, "tools/list")
        .iter()
        .map(|r| {
            let session = r.header("mcp-session-id").unwrap_or("none").to_owned();
            (session, cursor_of(r))
        })
        .collect();
    let page_2 = Some("page-2".to_owned());
    assert_eq!(
        lists,
        [
            ("sess-1".to_owned(), None),
            ("sess-1".to_owned(), page_2.clone()),
            ("sess-2".to_owned(), None),
            ("sess-2".to_owned(), page_2),
        ]
    );

    // Expiring every time: one retry, then the failure, never a loop.
    let always = server(usize::MAX).await;
    let started = Instant::now();
    let error = discover(&pool(), &discovery(&always, timeout))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::SessionExpired, "{error}");
    assert!(!error.outcome_unknown());
    assert_within(started.elapsed(), timeout);
    assert_eq!(posts_of(&always.requests(), "initialize").len(), 2);
}

#[test]
fn hostile_tools_list_slower_than_30_s_with_mcp_tools_default_bound() {
    // The documented default itself, end to end: `mcp-tools` without `-timeout` against a
    // listing that never comes. This one waits the real 30 s (it sleeps, it does not spin).
    let fault = Fault::start(mcp_handler(|_| {
        Reply::sse_steps(200, vec![Step::text(": working\n\n"), Step::Hang])
    }));
    let url = fault.server.url("/mcp");
    let run = mcp_tools(&["-url", &url, "-tenant", "acme", "-tools", "a"], &[]);
    assert_exit(&run, 1);
    assert!(run.stderr.contains("longer than 30 s"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    let bound = Duration::from_secs(30);
    assert!(run.elapsed >= bound, "{run:#?}");
    assert_within(run.elapsed, bound);
}
