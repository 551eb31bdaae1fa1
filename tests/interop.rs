//! Interop: mcpwire's client against real MCP servers whose protocol code somebody else wrote,
//! over HTTP (Streamable HTTP and the legacy HTTP+SSE transport). stdio is in `interop_stdio`.
//!
//! Peers (`tests/support/peers.rs`, installed by `scripts/install-peers`):
//! - server-everything, the official TypeScript SDK's demo server (`everything_*` tests);
//! - `tests/peers/py_server.py` on the official Python SDK 2.x and 1.x (`py_v2::*`, `py_v1::*`,
//!   one test per server mode or feature, generated for both SDKs by `python_tests!`);
//! - `tests/peers/ts2_server.mjs` on the official TypeScript SDK v2 (`ts2_*` tests);
//! - `fixtures/servers/rmcp-server` on rmcp 3, the official Rust SDK (`rmcp_*` tests).
//!
//! Each test starts its own server (a fresh process, so no state crosses tests) and stops it on
//! drop. No test sleeps for a fixed time except the cancellation tests' 500 ms before cancelling;
//! the rest waits on the tools' own small delays or polls (a server log line, a raw request).
//! `MCPWIRE_INTEROP_TRACE=1` prints the wire trace of the tests that record one.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpwire::auth::Secret;
use mcpwire::client::{CallOptions, CancelToken, Client, ClientOptions, ProgressSink};
use mcpwire::jsonrpc::Notification;
use mcpwire::mcp::{
    CallToolResult, ContentBlock, InitializeResult, JsonObject, ProgressNotificationParams,
    ProtocolVersion, ResourceContents, Tool,
};
use mcpwire::probe::{Deviation, ProbeOptions, ProbeReport, ReplySeen, probe};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use mcpwire::{Error, ErrorKind};
use serde_json::{Value, json};

use crate::support::peers::{self, Peer, PeerServer, Sdk};

/// The deadline for any one step of a test (connect, list, call): a hang fails, never blocks.
const STEP: Duration = Duration::from_secs(15);

/// The base64 of the 8-byte PNG signature `\x89PNG\r\n\x1a\n` (and the first bits of IHDR).
const PNG_BASE64_PREFIX: &str = "iVBORw0KGgo";

/// The most connections a pool may open for a session's connect and six sequential calls
/// (8 requests; without keep-alive reuse that is 7 or 8 connections). Up to three requests
/// overlap at the start: the initialize reply's stream is still being drained when
/// `notifications/initialized` goes out on a task of its own, which may still be in flight
/// when the first call goes out. And a connection goes back to hyper's pool on a background
/// task, so now and then a call does not find it there yet. Measured on 2 cores: 1 to 3.
const MAX_CONNECTIONS: u64 = 4;

/// Every tool `py_server.py` has.
const PY_TOOLS: [&str; 13] = [
    "ask_elicitation",
    "ask_sampling",
    "big_text",
    "echo_text",
    "fail",
    "log_messages",
    "mixed_content",
    "progress",
    "resource_links",
    "slow",
    "square",
    "tiny_image",
    "weather",
];

// --- helpers ------------------------------------------------------------------------------------

pub(crate) fn pool() -> HttpPool {
    HttpPool::new(&TlsOptions::default()).expect("pool")
}

fn config(url: &str) -> HttpConfig {
    let mut config = HttpConfig::new(url).expect("config");
    // The peers ignore it; it must not disturb them.
    config.bearer_token = Some(Secret::new("interop-token-1234"));
    config
}

pub(crate) fn options() -> ClientOptions {
    let mut options = ClientOptions::default();
    options.request_timeout = STEP;
    options.session.initialize_timeout = STEP;
    options
}

/// What the Python tests connect with: these tests are of the 2025-era path. `mcp` 1.x speaks
/// only that, so the client probes and falls back as it does for any 2025-era server; `mcp`
/// 2.x speaks 2026-07-28 too, so its 2025 path is taken by a client that does not probe
/// (2026-07-28 has tests of its own).
pub(crate) fn py_options(sdk: Sdk) -> ClientOptions {
    let mut options = options();
    if sdk == Sdk::V2 {
        options.session.era = mcpwire::session::EraPolicy::Legacy;
    }
    options
}

/// A 2025-era client offering `version` in `initialize` (no era probe).
pub(crate) fn offering(version: ProtocolVersion) -> ClientOptions {
    let mut options = options();
    options.session.era = mcpwire::session::EraPolicy::Legacy;
    options.session.offered_version = version;
    options
}

async fn connect(pool: &HttpPool, url: &str) -> Client {
    connect_with(pool, config(url), options()).await
}

async fn connect_with(pool: &HttpPool, config: HttpConfig, options: ClientOptions) -> Client {
    let url = config.url.to_string();
    Client::connect_http(pool, config, options)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {} ({e})", e.kind()))
}

/// Asserts that `client` negotiated 2025-11-25 with the server named `server_name`, which
/// declares tools; returns the initialize result.
fn assert_2025_11_25_with_tools<'a>(client: &'a Client, server_name: &str) -> &'a InitializeResult {
    let init = client.server().expect("the server described itself");
    assert_eq!(init.protocol_version, "2025-11-25");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(init.server_info.name, server_name);
    assert!(init.capabilities.tools.is_some(), "{:?}", init.capabilities);
    init
}

/// Tool arguments from a JSON object literal.
pub(crate) fn args(value: Value) -> Option<JsonObject> {
    match value {
        Value::Object(map) => Some(map),
        other => panic!("tool arguments must be an object, not {other}"),
    }
}

pub(crate) fn call_options() -> CallOptions {
    let mut options = CallOptions::default();
    options.timeout = STEP;
    options
}

/// Calls a tool that must answer with a result (an `isError` result is still a result).
pub(crate) async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    call_with(client, tool, arguments, call_options())
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{tool}: {} (outcome unknown: {}): {e}",
                e.kind(),
                e.outcome_unknown()
            )
        })
}

pub(crate) async fn call_with(
    client: &Client,
    tool: &str,
    arguments: Value,
    options: CallOptions,
) -> Result<CallToolResult, Error> {
    client.call_tool(tool, args(arguments), options).await
}

/// Calls `tool` with a progress recorder; panics if the call fails.
pub(crate) async fn call_with_progress(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> (CallToolResult, Progress) {
    let progress = Progress::default();
    let mut options = call_options();
    options.on_progress = Some(Box::new(progress.sink()));
    let result = call_with(client, tool, arguments, options)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    (result, progress)
}

pub(crate) async fn list_names(client: &Client) -> BTreeSet<String> {
    let tools = client
        .list_tools()
        .await
        .unwrap_or_else(|e| panic!("tools/list: {} ({e})", e.kind()));
    names(&tools)
}

fn names(tools: &[Tool]) -> BTreeSet<String> {
    let names: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(
        names.len(),
        tools.len(),
        "duplicate tool names in {names:?}"
    );
    names
}

pub(crate) fn py_tools() -> BTreeSet<String> {
    PY_TOOLS.iter().map(|s| (*s).to_owned()).collect()
}

/// The result's only block, which must be text.
pub(crate) fn only_text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one block expected: {result:?}");
    result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("a text block expected: {result:?}"))
}

fn text_at(result: &CallToolResult, index: usize) -> &str {
    result
        .content
        .get(index)
        .and_then(ContentBlock::as_text)
        .unwrap_or_else(|| panic!("block {index} should be text: {result:?}"))
}

fn assert_png(block: &ContentBlock) {
    let ContentBlock::Image(image) = block else {
        panic!("an image block expected, got {block:?}");
    };
    assert_eq!(image.mime_type, "image/png");
    assert!(
        image.data.starts_with(PNG_BASE64_PREFIX),
        "not a base64 PNG: {}",
        &image.data[..image.data.len().min(40)]
    );
    assert_eq!(image.data.len() % 4, 0, "base64 length");
    assert!(
        image
            .data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)),
        "not base64"
    );
}

/// The failure of a call that must fail.
pub(crate) fn expect_err(outcome: Result<CallToolResult, Error>, what: &str) -> Error {
    match outcome {
        Ok(result) => panic!("{what}: expected an error, got the result {result:?}"),
        Err(error) => error,
    }
}

/// Collects progress notifications from a call's callback.
#[derive(Clone, Default)]
pub(crate) struct Progress(Arc<Mutex<Vec<ProgressNotificationParams>>>);

impl Progress {
    pub(crate) fn sink(&self) -> ProgressSink {
        let seen = self.0.clone();
        Box::new(move |p| seen.lock().unwrap().push(p.clone()))
    }

    pub(crate) fn seen(&self) -> Vec<ProgressNotificationParams> {
        self.0.lock().unwrap().clone()
    }

    /// Asserts `steps` notifications numbered 1..=steps out of `steps`, all with one token.
    pub(crate) fn assert_steps(&self, steps: usize, messages: bool) {
        let seen = self.seen();
        let got: Vec<f64> = seen.iter().map(|p| p.progress).collect();
        let want: Vec<f64> = (1..=steps).map(|i| i as f64).collect();
        assert_eq!(got, want, "progress values: {seen:?}");
        for (i, p) in seen.iter().enumerate() {
            assert_eq!(p.total, Some(steps as f64), "total: {p:?}");
            assert_eq!(p.progress_token, seen[0].progress_token, "token: {p:?}");
            if messages {
                assert_eq!(
                    p.message.as_deref(),
                    Some(format!("step {} of {steps}", i + 1).as_str()),
                    "message: {p:?}"
                );
            }
        }
    }
}

/// Records the client's redacted wire trace; with `MCPWIRE_INTEROP_TRACE=1` also prints it.
#[derive(Clone, Default)]
struct Wire(Arc<Mutex<Vec<String>>>);

impl Wire {
    fn attach(&self, config: &mut HttpConfig) {
        let lines = self.0.clone();
        let print = std::env::var("MCPWIRE_INTEROP_TRACE").as_deref() == Ok("1");
        config.wire_log = Some(Arc::new(move |line: &str| {
            if print {
                eprintln!("{line}");
            }
            lines.lock().unwrap().push(line.to_owned());
        }));
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn count(&self, pattern: &str) -> usize {
        self.lines().iter().filter(|l| l.contains(pattern)).count()
    }
}

/// Calls a tool that takes far longer than its 700 ms deadline: a timeout, with the outcome
/// unknown, at the deadline (within 2 s).
async fn times_out_after_700_ms(client: &Client, tool: &str, arguments: Value) {
    let started = Instant::now();
    let mut options = call_options();
    options.timeout = Duration::from_millis(700);
    let error = expect_err(call_with(client, tool, arguments, options).await, tool);
    let elapsed = started.elapsed();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(error.outcome_unknown(), "{error}");
    assert!(
        elapsed >= Duration::from_millis(650) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
}

/// Checks that the client sent only POSTs (no GET stream, no DELETE) and never `initialize`,
/// as at 2026-07-28; returns the request lines.
fn modern_requests_only(wire: &Wire) -> Vec<String> {
    let sent: Vec<String> = wire
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("> "))
        .collect();
    assert!(sent.iter().all(|l| l.starts_with("> POST")), "{sent:#?}");
    assert!(
        !sent.iter().any(|l| l.contains("\"initialize\"")),
        "{sent:#?}"
    );
    sent
}

/// The name the server gave in its discover or initialize result.
pub(crate) fn server_name(client: &Client) -> String {
    client
        .server()
        .expect("the server described itself")
        .server_info
        .name
        .clone()
}

/// One HTTP/1.1 exchange on a fresh connection with `Connection: close`, written by hand so
/// the client under test is not involved. Returns the status and the whole raw response.
fn raw_http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    try_raw_http(port, method, path, headers, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn try_raw_http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(STEP))
        .map_err(|e| e.to_string())?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| format!("read the response: {e}"))?;
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP/1.1 response: {text:?}"))?;
    Ok((status, text))
}

/// A raw `DELETE` of a session, as another party (or an expiry) would end it.
fn raw_delete(port: u16, session_id: Option<&str>) -> (u16, String) {
    let mut headers = vec![("Accept", "application/json, text/event-stream")];
    if let Some(id) = session_id {
        headers.push(("Mcp-Session-Id", id));
    }
    raw_http(port, "DELETE", "/mcp", &headers, "")
}

/// A raw `tools/list` POST on a session.
fn raw_post_tools_list(port: u16, session_id: &str) -> (u16, String) {
    try_raw_post_tools_list(port, session_id).unwrap_or_else(|e| panic!("POST tools/list: {e}"))
}

fn try_raw_post_tools_list(port: u16, session_id: &str) -> Result<(u16, String), String> {
    try_raw_http(
        port,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", session_id),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        r#"{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{}}"#,
    )
}

/// Waits (up to 5 s) until a raw request on the session is answered 404. The Python SDK
/// answers DELETE 200 before it drops the session from its table; a POST in that window
/// meets a closed transport, and uvicorn resets the connection (a server-side race, not
/// something the client could tell from a tool that ran and then lost its connection).
fn wait_until_session_gone(port: u16, session_id: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = try_raw_post_tools_list(port, session_id);
        if matches!(answer, Ok((404, _))) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the session is still served after its DELETE: {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (up to 5 s) until the server's log contains `needle`.
fn wait_for_log(server: &PeerServer, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if server.log_tail(200).contains(needle) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

// --- server-everything over Streamable HTTP ----------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_initialize_and_tools() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let pool = pool();
    let client = connect(&pool, &server.url).await;

    let init = assert_2025_11_25_with_tools(&client, "mcp-servers/everything");
    assert!(init.instructions.is_some());
    let session_id = client.session_id().expect("a session id");
    assert_eq!(session_id.len(), 36, "a dashed UUID: {session_id}");

    let tools = client.list_tools().await.expect("tools/list");
    let names = names(&tools);
    for name in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
        "get-resource-links",
        "get-resource-reference",
        "trigger-long-running-operation",
    ] {
        assert!(names.contains(name), "{name} missing from {names:?}");
    }
    let structured = tools
        .iter()
        .find(|t| t.name == "get-structured-content")
        .unwrap();
    assert!(structured.output_schema.is_some(), "{structured:?}");

    let echo = call(&client, "echo", json!({"message": "héllo ✓"})).await;
    assert!(!echo.is_error());
    assert_eq!(only_text(&echo), "Echo: héllo ✓");

    let sum = call(&client, "get-sum", json!({"a": 2, "b": 3.5})).await;
    assert!(!sum.is_error());
    assert_eq!(only_text(&sum), "The sum of 2 and 3.5 is 5.5.");

    let image = call(&client, "get-tiny-image", json!({})).await;
    assert!(!image.is_error());
    let kinds: Vec<_> = image.content.iter().map(|b| b.type_name()).collect();
    assert_eq!(kinds, ["text", "image", "text"], "{image:?}");
    assert_png(&image.content[1]);

    let weather = call(
        &client,
        "get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    assert!(!weather.is_error());
    let structured = weather
        .structured_content
        .as_ref()
        .expect("structuredContent");
    for key in ["temperature", "conditions", "humidity"] {
        assert!(structured.get(key).is_some(), "{key} in {structured}");
    }
    let as_text: Value = serde_json::from_str(only_text(&weather)).expect("JSON text");
    assert_eq!(&as_text, structured);

    let links = call(&client, "get-resource-links", json!({"count": 2})).await;
    assert!(!links.is_error());
    assert_eq!(links.content.len(), 3, "{links:?}");
    assert!(text_at(&links, 0).contains("2 resource links"));
    for block in &links.content[1..] {
        let ContentBlock::ResourceLink(link) = block else {
            panic!("a resource_link expected: {block:?}");
        };
        assert!(link.uri.starts_with("demo://resource/"), "{link:?}");
        assert!(!link.name.is_empty());
    }

    let reference = call(
        &client,
        "get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await;
    assert!(!reference.is_error());
    let kinds: Vec<_> = reference.content.iter().map(|b| b.type_name()).collect();
    assert_eq!(kinds, ["text", "resource", "text"], "{reference:?}");
    let ContentBlock::Resource(embedded) = &reference.content[1] else {
        unreachable!()
    };
    let ResourceContents::Text(contents) = &embedded.resource else {
        panic!("text contents expected: {embedded:?}");
    };
    assert_eq!(contents.uri, "demo://resource/dynamic/text/1");
    assert!(!contents.text.is_empty());

    // A wrong argument type and an unknown tool are tool errors: results, not `Err`.
    let bad = call(&client, "get-sum", json!({"a": "x", "b": 2})).await;
    assert!(bad.is_error(), "{bad:?}");
    assert!(
        only_text(&bad).contains("-32602") && only_text(&bad).contains("Input validation error"),
        "{bad:?}"
    );
    let unknown = call(&client, "no-such-tool", json!({})).await;
    assert!(unknown.is_error(), "{unknown:?}");
    assert!(
        only_text(&unknown).contains("Tool no-such-tool not found"),
        "{unknown:?}"
    );

    client.ping().await.expect("ping");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_progress() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let pool = pool();
    let client = connect(&pool, &server.url).await;
    let progress = Progress::default();
    let started = Instant::now();
    let result = call_with(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
        {
            let mut options = call_options();
            options.on_progress = Some(Box::new(progress.sink()));
            options
        },
    )
    .await
    .expect("long-running operation");
    assert!(!result.is_error());
    assert_eq!(
        only_text(&result),
        "Long running operation completed. Duration: 1 seconds, Steps: 3."
    );
    progress.assert_steps(3, false);
    assert!(started.elapsed() < Duration::from_secs(5));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_server_stream_carries_simulated_logging() {
    // server-everything sends its simulated log messages on the session's standalone GET
    // stream only (one at once, then every 5 s): a client that opts into that stream sees them.
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let pool = pool();
    let (notifications, mut received) = tokio::sync::mpsc::channel::<Notification<'static>>(64);
    let mut options = options();
    options.notifications = Some(notifications);
    let mut config = config(&server.url);
    config.server_stream = true;
    let client = connect_with(&pool, config, options).await;
    let session = client.session_id().expect("a session id").to_owned();
    let result = call(&client, "toggle-simulated-logging", json!({})).await;
    assert!(!result.is_error(), "{result:?}");
    let log = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            let notification = received.recv().await.expect("the notification channel");
            if notification.method == "notifications/message" {
                break notification;
            }
        }
    })
    .await
    .expect("a simulated log message within 15 s");
    let params: Value = serde_json::from_str(log.params.as_ref().expect("params").get()).unwrap();
    let data = params["data"].as_str().unwrap_or_default();
    assert!(data.ends_with(&format!("SessionId {session}")), "{params}");
    let result = call(&client, "toggle-simulated-logging", json!({})).await;
    assert!(!result.is_error(), "{result:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_reuses_connections_and_deletes_the_session() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let pool = pool();
    let mut config = config(&server.url);
    // This test is about seeing the DELETE answered, not about its speed: on a loaded machine
    // node can take longer than the default 2 s close timeout.
    config.close_timeout = Duration::from_secs(15);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, options()).await;
    let session_id = client.session_id().expect("a session id").to_owned();
    for i in 0..5 {
        let echo = call(&client, "echo", json!({"message": format!("m{i}")})).await;
        assert_eq!(only_text(&echo), format!("Echo: m{i}"));
    }
    client.list_tools().await.expect("tools/list");
    client.ping().await.expect("ping");
    // initialize + initialized + 5 calls + list + ping: 9 connections without reuse.
    assert!(
        pool.connections_opened() <= MAX_CONNECTIONS,
        "{} connections for sequential requests",
        pool.connections_opened()
    );

    // While the session lives, a raw request on it is served...
    let (status, response) = raw_post_tools_list(server.port, &session_id);
    assert_eq!(status, 200, "{response}");
    client.close().await;
    // One DELETE answered 200. (A DELETE that gets no answer, typically on a pooled
    // connection the server just closed, is sent once more: it is idempotent.)
    assert_eq!(wire.count("< DELETE Some(200"), 1, "{:?}", wire.lines());
    assert!(wire.count("> DELETE") <= 2, "{:?}", wire.lines());
    // ...and after close() it is gone: this server answers 400 for an unknown session.
    let (status, response) = raw_post_tools_list(server.port, &session_id);
    assert_eq!(status, 400, "{response}");
    assert!(
        response.contains("No valid session ID provided"),
        "{response}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_legacy_sse_fallback() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("sse");
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, options()).await;
    // The era probe is refused without a JSON-RPC error (a 2025-era server), then the
    // initialize POST to /sse (404), so the client opens the legacy stream.
    let all = wire.lines();
    let probe = all.iter().position(|l| l.contains("server/discover"));
    assert_eq!(probe, Some(0), "{all:#?}");
    assert!(all[1].starts_with("< 404"), "{all:#?}");
    let lines = &all[2..];
    assert!(lines[0].contains("\"initialize\""), "{all:#?}");
    assert!(lines[1].starts_with("< 404"), "{lines:#?}");
    assert!(
        lines[2].starts_with("> GET") && lines[2].contains("legacy"),
        "{lines:#?}"
    );
    assert!(lines[3].contains("/message?sessionId="), "{lines:#?}");
    assert_eq!(client.session_id(), None);
    assert_eq!(
        client
            .server()
            .expect("the server described itself")
            .server_info
            .name,
        "mcp-servers/everything"
    );
    let names = list_names(&client).await;
    assert!(names.contains("echo"), "{names:?}");
    let echo = call(&client, "echo", json!({"message": "over sse"})).await;
    assert_eq!(only_text(&echo), "Echo: over sse");
    let progress = Progress::default();
    call_with(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 0.2, "steps": 2}),
        {
            let mut options = call_options();
            options.on_progress = Some(Box::new(progress.sink()));
            options
        },
    )
    .await
    .expect("long-running operation");
    progress.assert_steps(2, false);
    client.ping().await.expect("ping");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_legacy_sse_negotiates_2024_11_05() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("sse");
    let client = connect(&pool(), &server.url).await;
    assert_eq!(
        client
            .server()
            .expect("the server described itself")
            .protocol_version,
        "2024-11-05"
    );
    assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_downgrade() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let pool = pool();
    for (version, name) in [
        (ProtocolVersion::V2025_03_26, "2025-03-26"),
        (ProtocolVersion::V2025_06_18, "2025-06-18"),
    ] {
        let client = connect_with(&pool, config(&server.url), offering(version)).await;
        assert_eq!(client.protocol_version(), version);
        assert_eq!(
            client
                .server()
                .expect("the server described itself")
                .protocol_version,
            name
        );
        assert!(list_names(&client).await.contains("get-sum"));
        let sum = call(&client, "get-sum", json!({"a": 1, "b": 2})).await;
        assert_eq!(only_text(&sum), "The sum of 1 and 2 is 3.");
        let progress = Progress::default();
        call_with(
            &client,
            "trigger-long-running-operation",
            json!({"duration": 0.2, "steps": 2}),
            {
                let mut options = call_options();
                options.on_progress = Some(Box::new(progress.sink()));
                options
            },
        )
        .await
        .expect("long-running operation");
        progress.assert_steps(2, false);
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_cancel_and_dead_session() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let pool = pool();
    let client = connect(&pool, &server.url).await;

    // This server ignores notifications/cancelled and never answers the cancelled request:
    // the call must still end at once, and the session go on.
    let cancel = CancelToken::default();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let error = expect_err(
        call_with(
            &client,
            "trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
            {
                let mut options = call_options();
                options.cancel = Some(cancel);
                options
            },
        )
        .await,
        "cancelled long-running operation",
    );
    let elapsed = started.elapsed();
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(error.outcome_unknown(), "{error}");
    assert!(
        elapsed >= Duration::from_millis(450) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
    let echo = call(&client, "echo", json!({"message": "after cancel"})).await;
    assert_eq!(only_text(&echo), "Echo: after cancel");

    // A session ended by someone else: this server answers 400, not 404, for an unknown
    // session id, so the client sees an HTTP refusal (the tool never ran), not an expiry.
    let session_id = client.session_id().expect("a session id").to_owned();
    let (status, response) = raw_delete(server.port, Some(&session_id));
    assert_eq!(status, 200, "{response}");
    let error = expect_err(
        call_with(&client, "echo", json!({"message": "x"}), call_options()).await,
        "echo on a deleted session",
    );
    assert_eq!(error.kind(), ErrorKind::Http, "{error}");
    assert!(error.to_string().contains("400"), "{error}");
    assert!(!error.outcome_unknown(), "{error}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_legacy_sse_close_ends_the_stream() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("sse");
    let pool = pool();
    let client = connect(&pool, &server.url).await;
    let echo = call(&client, "echo", json!({"message": "x"})).await;
    assert_eq!(only_text(&echo), "Echo: x");
    assert!(wait_for_log(&server, "Client Connected"));
    client.close().await;
    drop(pool);
    // server-everything logs this when the event stream's connection closes.
    assert!(
        wait_for_log(&server, "Client Disconnected"),
        "the legacy event stream is still open after close(): {}",
        server.log_tail(10)
    );
}

// --- ts2_server.mjs on the official TypeScript SDK v2 ------------------------------------------

/// Every tool `ts2_server.mjs` has.
const TS2_TOOLS: [&str; 10] = [
    "add",
    "confirm",
    "echo",
    "fail",
    "link_account",
    "plan_weather",
    "region_echo",
    "rounds",
    "slow_progress",
    "tools_changed",
];

/// The dual-era ts2 server serves the 2025 path from the same tools as 2026-07-28: a 2025-11-25
/// client gets a session there (without a session id: the SDK serves each 2025 request with a
/// fresh server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_http_2025_path() {
    peers::require(Peer::Ts2);
    let server = PeerServer::ts2(&[]);
    let pool = pool();
    // The dual-era server's 2025 path: a client that does not probe.
    let client = connect_with(
        &pool,
        config(&server.url),
        offering(ProtocolVersion::V2025_11_25),
    )
    .await;

    assert_2025_11_25_with_tools(&client, "mcpwire-ts2-test-server");
    assert_eq!(client.session_id(), None);

    let want: BTreeSet<String> = TS2_TOOLS.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(list_names(&client).await, want);

    for (tool, arguments, text) in [
        ("echo", json!({"text": "héllo ✓"}), "héllo ✓"),
        ("add", json!({"a": 2, "b": 3.5}), "2 + 3.5 = 5.5"),
    ] {
        let result = call(&client, tool, arguments).await;
        assert!(!result.is_error(), "{tool}: {result:?}");
        assert_eq!(only_text(&result), text, "{tool}");
        if tool == "add" {
            assert_eq!(result.structured_content, Some(json!({"sum": 5.5})));
        }
    }

    let failed = call(&client, "fail", json!({"message": "no"})).await;
    assert!(failed.is_error(), "{failed:?}");
    assert_eq!(only_text(&failed), "no");

    client.close().await;
}

// --- py_server.py on the official Python SDK, both majors --------------------------------------

/// Generates `py_v2::NAME` and `py_v1::NAME` tests that run `async fn NAME(sdk)` on that SDK.
macro_rules! python_tests {
    ($($(#[$attr:meta])* $name:ident),* $(,)?) => {
        mod py_v2 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
                $(#[$attr])*
                async fn $name() {
                    use crate::support::peers::{self, Peer, Sdk};
                    peers::require(Peer::Python(Sdk::V2));
                    super::$name(Sdk::V2).await;
                }
            )*
        }
        mod py_v1 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
                $(#[$attr])*
                async fn $name() {
                    use crate::support::peers::{self, Peer, Sdk};
                    peers::require(Peer::Python(Sdk::V1));
                    super::$name(Sdk::V1).await;
                }
            )*
        }
    };
}

python_tests!(
    sse_initialize_and_content,
    sse_progress_and_logging,
    json_response_mode,
    stateless_json_response_mode,
    event_store_priming,
    event_store_resumes_a_dropped_stream,
    paged_tools_list,
    sampling_request_answered_method_not_found,
    elicitation_request_fails_the_call,
    cancel_a_slow_call,
    timeout_of_a_slow_call,
    response_over_max_bytes,
    dead_session_is_session_expired,
    legacy_sse_transport,
    legacy_sse_negotiates_2024_11_05,
    downgrade,
    json_response_connections_are_reused,
    sse_connections_are_reused,
    probe_default_mode,
    probe_stateless_json_mode,
    probe_event_store_mode,
    probe_legacy_sse_transport,
);

async fn sse_initialize_and_content(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;

    let init = client.server().expect("the server described itself");
    assert_eq!(init.server_info.name, "mcpwire-py-test-server");
    assert_eq!(init.protocol_version, "2025-11-25");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert!(init.capabilities.tools.is_some(), "{:?}", init.capabilities);
    assert_eq!(
        init.instructions.as_deref(),
        Some("Test tools for mcpwire interop tests.")
    );
    let session_id = client.session_id().expect("a session id");
    assert!(
        session_id.len() == 32 && session_id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{session_id}"
    );

    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(names(&tools), py_tools());
    let weather_tool = tools.iter().find(|t| t.name == "weather").unwrap();
    assert!(weather_tool.output_schema.is_some(), "{weather_tool:?}");
    assert_eq!(
        weather_tool.input_schema["required"],
        json!(["city"]),
        "{weather_tool:?}"
    );

    let echo = call(
        &client,
        "echo_text",
        json!({"text": "héllo, wörld ✓\nline 2"}),
    )
    .await;
    assert!(!echo.is_error());
    assert_eq!(only_text(&echo), "héllo, wörld ✓\nline 2");
    assert_eq!(echo.structured_content, None);

    let square = call(&client, "square", json!({"n": 7})).await;
    assert!(!square.is_error());
    assert_eq!(only_text(&square), "7^2 = 49");

    let bad = call(&client, "square", json!({"n": "seven"})).await;
    assert!(bad.is_error(), "{bad:?}");
    assert!(only_text(&bad).contains("valid integer"), "{bad:?}");

    let image = call(&client, "tiny_image", json!({})).await;
    assert!(!image.is_error());
    assert_eq!(image.content.len(), 1, "{image:?}");
    assert_png(&image.content[0]);

    let mixed = call(&client, "mixed_content", json!({})).await;
    assert!(!mixed.is_error());
    let kinds: Vec<_> = mixed.content.iter().map(|b| b.type_name()).collect();
    assert_eq!(kinds, ["text", "image", "resource"], "{mixed:?}");
    assert_eq!(
        text_at(&mixed, 0),
        "three blocks follow: text, image, resource"
    );
    assert_png(&mixed.content[1]);
    let ContentBlock::Resource(embedded) = &mixed.content[2] else {
        unreachable!()
    };
    let ResourceContents::Text(note) = &embedded.resource else {
        panic!("text contents expected: {embedded:?}");
    };
    assert_eq!(note.uri, "mcpwire-test://note.txt");
    assert_eq!(note.mime_type.as_deref(), Some("text/plain"));
    assert_eq!(note.text, "an embedded note");

    let links = call(&client, "resource_links", json!({})).await;
    assert!(!links.is_error());
    assert_eq!(links.content.len(), 3, "{links:?}");
    assert_eq!(text_at(&links, 0), "two links follow");
    let got: Vec<_> = links.content[1..]
        .iter()
        .map(|block| match block {
            ContentBlock::ResourceLink(link) => (
                link.uri.as_str(),
                link.name.as_str(),
                link.mime_type.as_deref(),
                link.description.as_deref(),
            ),
            other => panic!("a resource_link expected: {other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            ("mcpwire-test://a.txt", "a.txt", Some("text/plain"), None),
            (
                "mcpwire-test://b.png",
                "b.png",
                Some("image/png"),
                Some("a picture")
            ),
        ]
    );

    let weather = call(&client, "weather", json!({"city": "Paris"})).await;
    assert!(!weather.is_error());
    let want = json!({"city": "Paris", "temperature_c": 21.5, "conditions": "partly cloudy", "humidity": 45});
    assert_eq!(weather.structured_content.as_ref(), Some(&want));
    let as_text: Value = serde_json::from_str(only_text(&weather)).expect("JSON text");
    assert_eq!(as_text, want);

    let fail = call(&client, "fail", json!({"message": "kaput 42"})).await;
    assert!(fail.is_error(), "{fail:?}");
    assert!(only_text(&fail).contains("kaput 42"), "{fail:?}");

    client.ping().await.expect("ping");
    client.close().await;
}

async fn sse_progress_and_logging(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let (notifications, mut received) = tokio::sync::mpsc::channel::<Notification<'static>>(64);
    let mut options = py_options(sdk);
    options.notifications = Some(notifications);
    let client = connect_with(&pool, config(&server.url), options).await;

    let (result, progress) =
        call_with_progress(&client, "progress", json!({"steps": 4, "delay": 0.02})).await;
    assert_eq!(only_text(&result), "done after 4 steps");
    progress.assert_steps(4, true);

    let result = call(&client, "log_messages", json!({"count": 3})).await;
    assert!(!result.is_error());
    assert_eq!(only_text(&result), "sent 3 log messages");
    // The log notifications came on the call's stream before its response.
    let mut logs = Vec::new();
    while let Ok(notification) = received.try_recv() {
        if notification.method == "notifications/message" {
            let params: Value =
                serde_json::from_str(notification.params.as_ref().unwrap().get()).unwrap();
            logs.push(params["data"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert_eq!(
        logs,
        [
            "log message 1 of 3",
            "log message 2 of 3",
            "log message 3 of 3"
        ]
    );
    client.close().await;
}

async fn json_response_mode(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--json-response"]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;
    assert!(client.session_id().is_some());
    assert_eq!(list_names(&client).await, py_tools());
    assert_eq!(
        only_text(&call(&client, "echo_text", json!({"text": "json"})).await),
        "json"
    );
    assert_eq!(
        only_text(&call(&client, "square", json!({"n": -3})).await),
        "-3^2 = 9"
    );
    let weather = call(&client, "weather", json!({"city": "Oslo"})).await;
    assert_eq!(weather.structured_content.as_ref().unwrap()["city"], "Oslo");
    let fail = call(&client, "fail", json!({})).await;
    assert!(
        fail.is_error() && only_text(&fail).contains("boom"),
        "{fail:?}"
    );
    let mixed = call(&client, "mixed_content", json!({})).await;
    assert_eq!(mixed.content.len(), 3);

    // In this mode the server drops the call's notifications: the call works, no progress.
    let (result, progress) =
        call_with_progress(&client, "progress", json!({"steps": 3, "delay": 0.01})).await;
    assert_eq!(only_text(&result), "done after 3 steps");
    assert!(progress.seen().is_empty(), "{:?}", progress.seen());
    let logs = call(&client, "log_messages", json!({"count": 2})).await;
    assert_eq!(only_text(&logs), "sent 2 log messages");
    // The output limit holds for a JSON body too.
    let error = expect_err(
        call_with(&client, "big_text", json!({"bytes": 2_000_000}), {
            let mut options = call_options();
            options.max_response_bytes = Some(1024 * 1024);
            options
        })
        .await,
        "big_text 2 MB as JSON",
    );
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.outcome_unknown(), "{error}");
    client.ping().await.expect("ping");
    client.close().await;
}

async fn stateless_json_response_mode(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--stateless", "--json-response"]);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, py_options(sdk)).await;
    assert_eq!(client.session_id(), None);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(list_names(&client).await, py_tools());
    for i in 0..3 {
        let echo = call(&client, "echo_text", json!({"text": format!("s{i}")})).await;
        assert_eq!(only_text(&echo), format!("s{i}"));
    }
    let weather = call(&client, "weather", json!({"city": "Rome"})).await;
    assert_eq!(weather.structured_content.as_ref().unwrap()["city"], "Rome");
    let started = Instant::now();
    client.close().await;
    assert!(started.elapsed() < Duration::from_secs(2));
    // No session id: nothing to end, so close() sends no DELETE.
    assert_eq!(wire.count("> DELETE"), 0, "{:?}", wire.lines());
    // And had it sent one, the server's 405 is the normal end of a stateless session.
    let (status, response) = raw_delete(server.port, None);
    assert_eq!(status, 405, "{response}");
}

async fn event_store_priming(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--event-store", "--retry-ms", "300"]);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, py_options(sdk)).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(list_names(&client).await, py_tools());
    let echo = call(&client, "echo_text", json!({"text": "primed"})).await;
    assert_eq!(only_text(&echo), "primed");
    let (result, progress) =
        call_with_progress(&client, "progress", json!({"steps": 3, "delay": 0.01})).await;
    assert_eq!(only_text(&result), "done after 3 steps");
    progress.assert_steps(3, true);
    // Every stream had a priming event and ended normally: nothing was resumed.
    assert_eq!(wire.count("> GET"), 0, "{:?}", wire.lines());
    client.close().await;
}

async fn event_store_resumes_a_dropped_stream(sdk: Sdk) {
    let server = PeerServer::python(
        sdk,
        &[
            "--event-store",
            "--retry-ms",
            "200",
            "--drop-stream-after",
            "1",
        ],
    );
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, py_options(sdk)).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let progress = Progress::default();
    let started = Instant::now();
    let result = call_with(&client, "progress", json!({"steps": 4, "delay": 0.05}), {
        let mut options = call_options();
        options.on_progress = Some(Box::new(progress.sink()));
        options
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "progress over a dropped stream: {} ({e}); wire: {:#?}",
            e.kind(),
            wire.lines()
        )
    });
    assert_eq!(only_text(&result), "done after 4 steps");
    progress.assert_steps(4, true);
    let resumes: Vec<String> = wire
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("> GET") && l.contains("Last-Event-ID: "))
        .collect();
    assert!(
        !resumes.is_empty() && !resumes[0].ends_with("Last-Event-ID: )"),
        "no GET with a Last-Event-ID: {:#?}",
        wire.lines()
    );
    assert!(
        wait_for_log(&server, "closing the SSE stream"),
        "{}",
        server.log_tail(30)
    );
    // The retry the server asked for (200 ms) was honoured, but not much more.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(200) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    // The session goes on after a resumed call.
    let echo = call(&client, "echo_text", json!({"text": "after"})).await;
    assert_eq!(only_text(&echo), "after");
    client.close().await;
}

async fn paged_tools_list(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--page-size", "2"]);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, py_options(sdk)).await;
    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(tools.len(), PY_TOOLS.len());
    assert_eq!(names(&tools), py_tools());
    // 13 tools in pages of 2: seven requests, the last six with a cursor.
    let pages: Vec<String> = wire
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("> POST") && l.contains(r#""method":"tools/list""#))
        .collect();
    assert_eq!(pages.len(), 7, "{pages:#?}");
    assert_eq!(pages.iter().filter(|l| l.contains("cursor")).count(), 6);
    client.close().await;
}

async fn sampling_request_answered_method_not_found(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;
    let started = Instant::now();
    let result = call(&client, "ask_sampling", json!({})).await;
    assert!(!result.is_error(), "{result:?}");
    let text = only_text(&result);
    assert!(
        text.starts_with("sampling: client answered error -32601"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The session is still fine.
    assert_eq!(
        only_text(&call(&client, "square", json!({"n": 3})).await),
        "3^2 = 9"
    );
    client.close().await;
}

async fn elicitation_request_fails_the_call(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;
    let started = Instant::now();
    let error = expect_err(
        call_with(&client, "ask_elicitation", json!({}), call_options()).await,
        "ask_elicitation",
    );
    assert_eq!(error.kind(), ErrorKind::ElicitationRequested, "{error}");
    assert!(error.outcome_unknown(), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        only_text(&call(&client, "echo_text", json!({"text": "still here"})).await),
        "still here"
    );
    client.close().await;
}

async fn cancel_a_slow_call(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;
    let cancel = CancelToken::default();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let error = expect_err(
        call_with(&client, "slow", json!({"seconds": 30}), {
            let mut options = call_options();
            options.cancel = Some(cancel);
            options
        })
        .await,
        "slow",
    );
    let elapsed = started.elapsed();
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(error.outcome_unknown(), "{error}");
    assert!(
        elapsed >= Duration::from_millis(450) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
    // notifications/cancelled reached the server, which stopped the tool.
    assert!(
        wait_for_log(&server, "slow: cancelled after"),
        "{}",
        server.log_tail(30)
    );
    assert_eq!(
        only_text(&call(&client, "echo_text", json!({"text": "next"})).await),
        "next"
    );
    client.close().await;
}

async fn timeout_of_a_slow_call(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;
    times_out_after_700_ms(&client, "slow", json!({"seconds": 30})).await;
    // A timeout cancels the request on the server too.
    assert!(
        wait_for_log(&server, "slow: cancelled after"),
        "{}",
        server.log_tail(30)
    );
    client.close().await;
}

async fn response_over_max_bytes(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;
    let limit = 1024 * 1024;
    let within = call_with(&client, "big_text", json!({"bytes": 100_000}), {
        let mut options = call_options();
        options.max_response_bytes = Some(limit);
        options
    })
    .await
    .expect("100 kB within a 1 MiB limit");
    assert_eq!(only_text(&within).len(), 100_000);
    let error = expect_err(
        call_with(&client, "big_text", json!({"bytes": 2_000_000}), {
            let mut options = call_options();
            options.max_response_bytes = Some(limit);
            options
        })
        .await,
        "big_text 2 MB",
    );
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.outcome_unknown(), "{error}");
    assert_eq!(
        only_text(&call(&client, "echo_text", json!({"text": "small"})).await),
        "small"
    );
    client.close().await;
}

async fn dead_session_is_session_expired(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    let client = connect_with(&pool, config(&server.url), py_options(sdk)).await;
    let session_id = client.session_id().expect("a session id").to_owned();
    let (status, response) = raw_delete(server.port, Some(&session_id));
    assert_eq!(status, 200, "{response}");
    wait_until_session_gone(server.port, &session_id);
    let error = expect_err(
        call_with(&client, "echo_text", json!({"text": "x"}), call_options()).await,
        "echo_text on a deleted session",
    );
    assert_eq!(error.kind(), ErrorKind::SessionExpired, "{error}");
    assert!(!error.outcome_unknown(), "{error}");
    // A second DELETE (the client's own, at close) gets 404: still a normal end.
    let started = Instant::now();
    client.close().await;
    assert!(started.elapsed() < Duration::from_secs(3));
}

async fn legacy_sse_transport(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--transport", "sse"]);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, py_options(sdk)).await;
    // The era probe is refused without a JSON-RPC error (a 2025-era server), then the
    // initialize POST to /sse (405), so the client opens the legacy stream.
    let all = wire.lines();
    let probe = all.iter().position(|l| l.contains("server/discover"));
    // mcp 2.x's 2025 path is taken without probing (`py_options`).
    let lines = if sdk == Sdk::V1 {
        assert_eq!(probe, Some(0), "{all:#?}");
        assert!(all[1].starts_with("< 405"), "{all:#?}");
        &all[2..]
    } else {
        assert_eq!(probe, None, "{all:#?}");
        &all[..]
    };
    assert!(lines[0].contains("\"initialize\""), "{all:#?}");
    assert!(lines[1].starts_with("< 405"), "{lines:#?}");
    assert!(
        lines[2].starts_with("> GET") && lines[2].contains("legacy"),
        "{lines:#?}"
    );
    assert!(lines[3].contains("/messages/?session_id="), "{lines:#?}");
    assert_eq!(client.session_id(), None);
    assert_eq!(
        client
            .server()
            .expect("the server described itself")
            .server_info
            .name,
        "mcpwire-py-test-server"
    );
    assert_eq!(list_names(&client).await, py_tools());
    let echo = call(&client, "echo_text", json!({"text": "legacy"})).await;
    assert_eq!(only_text(&echo), "legacy");
    let fail = call(&client, "fail", json!({})).await;
    assert!(fail.is_error(), "{fail:?}");
    let (result, progress) =
        call_with_progress(&client, "progress", json!({"steps": 2, "delay": 0.01})).await;
    assert_eq!(only_text(&result), "done after 2 steps");
    progress.assert_steps(2, true);
    client.close().await;
}

async fn legacy_sse_negotiates_2024_11_05(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--transport", "sse"]);
    let client = connect(&pool(), &server.url).await;
    assert_eq!(
        client
            .server()
            .expect("the server described itself")
            .protocol_version,
        "2024-11-05"
    );
    assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
    client.close().await;
}

async fn downgrade(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let pool = pool();
    for (version, name) in [
        (ProtocolVersion::V2025_03_26, "2025-03-26"),
        (ProtocolVersion::V2025_06_18, "2025-06-18"),
    ] {
        let client = connect_with(&pool, config(&server.url), offering(version)).await;
        assert_eq!(client.protocol_version(), version);
        assert_eq!(
            client
                .server()
                .expect("the server described itself")
                .protocol_version,
            name
        );
        assert_eq!(list_names(&client).await, py_tools());
        let echo = call(&client, "echo_text", json!({"text": "old"})).await;
        assert_eq!(only_text(&echo), "old");
        // The server sends structuredContent on any revision; nothing is lost.
        let weather = call(&client, "weather", json!({"city": "Lima"})).await;
        assert_eq!(weather.structured_content.as_ref().unwrap()["city"], "Lima");
        let progress = Progress::default();
        call_with(&client, "progress", json!({"steps": 2, "delay": 0.01}), {
            let mut options = call_options();
            options.on_progress = Some(Box::new(progress.sink()));
            options
        })
        .await
        .expect("progress");
        progress.assert_steps(2, true);
        client.close().await;
    }
}

/// Six calls after connecting, one after another: how many connections the pool opened.
async fn connections_for_six_calls(server: &PeerServer) -> u64 {
    let pool = pool();
    let client = connect(&pool, &server.url).await;
    for i in 0..6 {
        let echo = call(&client, "echo_text", json!({"text": format!("r{i}")})).await;
        assert_eq!(only_text(&echo), format!("r{i}"));
    }
    let opened = pool.connections_opened();
    client.close().await;
    opened
}

async fn json_response_connections_are_reused(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--json-response"]);
    let opened = connections_for_six_calls(&server).await;
    assert!(
        opened <= MAX_CONNECTIONS,
        "{opened} connections for 8 sequential requests"
    );
}

async fn sse_connections_are_reused(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let opened = connections_for_six_calls(&server).await;
    assert!(
        opened <= MAX_CONNECTIONS,
        "{opened} connections for 8 sequential requests"
    );
}

// --- mcpwire probe against every real server ---------------------------------------------------

/// The token the probes send: the peers ignore it, and it must not show in a report.
const PROBE_TOKEN: &str = "interop-probe-token-5150";

/// Probes `url`; the probe must reach the server, finish, and keep the token out of its report.
/// `MCPWIRE_INTEROP_TRACE=1` prints the report.
async fn probe_peer(url: &str) -> ProbeReport {
    let mut options = ProbeOptions::new(url);
    options.request_timeout = STEP;
    options.token = Some(Secret::new(PROBE_TOKEN));
    let report = probe(&pool(), &options).await.expect("a valid URL");
    let text = report.render();
    if std::env::var("MCPWIRE_INTEROP_TRACE").as_deref() == Ok("1") {
        eprintln!("{text}");
    }
    assert!(report.reachable && report.completed, "{text}");
    assert!(!text.contains(PROBE_TOKEN) && !report.to_json().contains(PROBE_TOKEN));
    assert!(!report.auth.required, "{text}");
    report
}

#[track_caller]
fn probed<'a>(report: &'a ProbeReport, request: &str) -> &'a ReplySeen {
    report
        .replies
        .iter()
        .find(|r| r.request == request)
        .unwrap_or_else(|| panic!("no reply to {request:?}:\n{}", report.render()))
}

/// The deviations, each as the part of its rule before the first colon.
fn deviation_rules(report: &ProbeReport) -> Vec<String> {
    report
        .deviations
        .iter()
        .map(|d: &Deviation| d.rule.split(':').next().unwrap_or("").to_owned())
        .collect()
}

/// `(line endings, events, priming events, events with an id)` of an event-stream reply.
#[track_caller]
fn framing(reply: &ReplySeen) -> (&str, usize, usize, usize) {
    let sse = reply
        .sse
        .as_ref()
        .unwrap_or_else(|| panic!("not an event stream: {reply:?}"));
    (
        sse.line_endings.as_str(),
        sse.events,
        sse.priming_events,
        sse.events_with_id,
    )
}

fn probed_tools(report: &ProbeReport) -> BTreeSet<String> {
    assert!(report.tools.listed, "{}", report.render());
    for tool in &report.tools.tools {
        assert!(tool.problems.is_empty(), "{tool:?}");
        assert_eq!(tool.input_schema, "ok", "{tool:?}");
    }
    report.tools.tools.iter().map(|t| t.name.clone()).collect()
}

fn declares_output_schema(report: &ProbeReport, tool: &str) -> bool {
    report
        .tools
        .tools
        .iter()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("no tool {tool}"))
        .declares_output_schema
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_probe() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let report = probe_peer(&server.url).await;
    let text = report.render();
    // A 2025-era server: TypeScript SDK 1.x knows no server/discover.
    assert_eq!(report.eras.modern.speaks_2026_07_28, Some(false), "{text}");
    assert!(report.eras.modern.verdict.contains("-32000"), "{text}");
    assert_eq!(report.eras.legacy.negotiated.as_deref(), Some("2025-11-25"));
    assert_eq!(
        report.eras.legacy.transport.as_deref(),
        Some("streamable-http")
    );
    assert_eq!(
        report.eras.legacy.accepted(),
        ["2025-11-25", "2025-06-18", "2025-03-26"]
    );
    assert_eq!(
        report.server.as_ref().unwrap().name,
        "mcp-servers/everything"
    );
    // Always SSE, LF; a priming event only on streams of 2025-11-25 (id on every event).
    let init = probed(&report, "POST initialize 2025-11-25");
    assert_eq!(init.content_type.as_deref(), Some("text/event-stream"));
    assert_eq!(framing(init), ("LF", 2, 1, 2));
    assert_eq!(
        framing(probed(&report, "POST initialize 2025-06-18")),
        ("LF", 1, 0, 1)
    );
    assert_eq!(
        framing(probed(&report, "POST tools/list (in the session)")),
        ("LF", 2, 1, 2)
    );
    let session = report.sessions.session_id.as_ref().expect("a session id");
    assert_eq!(
        (session.shape.as_str(), session.visible_ascii),
        ("uuid", true)
    );
    // The Express wrapper answers an unknown session 400, not the spec's 404.
    assert_eq!(
        report.sessions.unknown_session.as_ref().unwrap().status,
        400
    );
    assert_eq!(
        report.sessions.missing_session.as_ref().unwrap().status,
        400
    );
    assert_eq!(
        deviation_rules(&report),
        ["basic/transports.mdx (2025-11-25), Session Management, 3"],
        "{text}"
    );
    let tools = probed_tools(&report);
    assert!(
        tools.contains("echo") && tools.contains("get-sum"),
        "{tools:?}"
    );
    assert!(declares_output_schema(&report, "get-structured-content"));
    assert!(!declares_output_schema(&report, "echo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_legacy_sse_probe() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("sse");
    let report = probe_peer(&server.url).await;
    let text = report.render();
    assert_eq!(report.eras.modern.speaks_2026_07_28, Some(false), "{text}");
    let legacy = &report.eras.legacy;
    assert!(legacy.legacy_fallback, "{text}");
    assert_eq!(legacy.negotiated.as_deref(), Some("2024-11-05"));
    assert_eq!(legacy.transport.as_deref(), Some("http+sse"));
    // Every Streamable HTTP initialize POST to /sse is a 404 page.
    assert_eq!(legacy.offers.len(), 3);
    for offer in &legacy.offers {
        assert_eq!(
            (offer.status, offer.answered.as_deref()),
            (Some(404), None),
            "{offer:?}"
        );
    }
    let stream = probed(&report, "GET (HTTP+SSE event stream)");
    assert_eq!(framing(stream).0, "LF");
    assert_eq!(stream.answer, "an endpoint event first");
    assert!(report.sessions.unknown_session.is_none(), "{text}");
    assert!(text.contains("HTTP+SSE transport"), "{text}");
    assert!(probed_tools(&report).contains("echo"));
    assert!(report.deviations.is_empty(), "{text}");
}

/// The Python server as the kit runs it: SSE replies, sessions.
async fn probe_default_mode(sdk: Sdk) {
    let server = PeerServer::python(sdk, &[]);
    let report = probe_peer(&server.url).await;
    let text = report.render();
    let modern = &report.eras.modern;
    match sdk {
        // mcp 2.x speaks 2026-07-28 next to the initialize revisions.
        Sdk::V2 => {
            assert_eq!(modern.speaks_2026_07_28, Some(true), "{text}");
            assert_eq!(modern.supported_versions, ["2026-07-28"]);
            let listed = probed(&report, "POST tools/list (2026-07-28)");
            assert_eq!((listed.status, listed.body.as_str()), (200, "json"));
            assert_eq!(listed.answer, "result");
        }
        Sdk::V1 => {
            assert_eq!(modern.speaks_2026_07_28, Some(false), "{text}");
            assert!(modern.verdict.contains("Missing session ID"), "{text}");
        }
    }
    assert_eq!(report.eras.legacy.negotiated.as_deref(), Some("2025-11-25"));
    assert_eq!(
        report.eras.legacy.accepted(),
        ["2025-11-25", "2025-06-18", "2025-03-26"]
    );
    // SSE with CRLF line endings, no ids and no priming without an event store.
    for request in [
        "POST initialize 2025-11-25",
        "POST tools/list (in the session)",
    ] {
        let reply = probed(&report, request);
        assert_eq!(reply.content_type.as_deref(), Some("text/event-stream"));
        assert_eq!(framing(reply), ("CRLF", 1, 0, 0), "{request}");
    }
    let session = report.sessions.session_id.as_ref().expect("a session id");
    assert_eq!((session.length, session.shape.as_str()), (32, "hex"));
    // 404 for an unknown session, 400 for none: as the spec says.
    assert_eq!(
        report.sessions.unknown_session.as_ref().unwrap().status,
        404
    );
    assert_eq!(
        report.sessions.missing_session.as_ref().unwrap().status,
        400
    );
    match sdk {
        Sdk::V2 => assert!(report.deviations.is_empty(), "{text}"),
        // mcp 1.x answers errors it raises before reading the request with id "server-error".
        Sdk::V1 => {
            assert_eq!(
                deviation_rules(&report),
                ["JSON-RPC 2.0, 5 Response object"],
                "{text}"
            );
            assert!(
                report.deviations[0].what.contains("\"server-error\""),
                "{text}"
            );
            assert_eq!(report.deviations[0].occurrences, 3, "{text}");
        }
    }
    assert_eq!(probed_tools(&report), py_tools());
    assert!(declares_output_schema(&report, "weather"));
    assert!(!declares_output_schema(&report, "echo_text"));
}

async fn probe_stateless_json_mode(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--stateless", "--json-response"]);
    let report = probe_peer(&server.url).await;
    let text = report.render();
    assert_eq!(
        report.eras.modern.speaks_2026_07_28,
        Some(sdk == Sdk::V2),
        "{text}"
    );
    for reply in report.replies.iter().filter(|r| r.status == 200) {
        assert_eq!(reply.body, "json", "{reply:?}");
        assert!(!reply.session_id, "{reply:?}");
    }
    // No sessions: a made-up session id is ignored, and that is no deviation.
    assert!(report.sessions.session_id.is_none(), "{text}");
    assert_eq!(
        report.sessions.unknown_session.as_ref().unwrap().status,
        200
    );
    assert!(report.sessions.missing_session.is_none());
    assert!(
        !deviation_rules(&report)
            .iter()
            .any(|r| r.contains("Session Management")),
        "{text}"
    );
    assert_eq!(probed_tools(&report), py_tools());
}

async fn probe_event_store_mode(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--event-store", "--retry-ms", "1500"]);
    let report = probe_peer(&server.url).await;
    let init = probed(&report, "POST initialize 2025-11-25");
    // A priming event with an id and `retry`, then the response with its id.
    assert_eq!(framing(init), ("CRLF", 2, 1, 2));
    assert_eq!(init.sse.as_ref().unwrap().retry_ms, Some(1500));
    assert!(
        !report
            .deviations
            .iter()
            .any(|d| d.rule.contains("Sending Messages")),
        "{}",
        report.render()
    );
}

async fn probe_legacy_sse_transport(sdk: Sdk) {
    let server = PeerServer::python(sdk, &["--transport", "sse"]);
    let report = probe_peer(&server.url).await;
    let text = report.render();
    let legacy = &report.eras.legacy;
    assert!(legacy.legacy_fallback, "{text}");
    assert_eq!(legacy.negotiated.as_deref(), Some("2024-11-05"));
    // Starlette answers a POST to the event-stream route 405.
    for offer in &legacy.offers {
        assert_eq!(
            (offer.status, offer.answered.as_deref()),
            (Some(405), None),
            "{offer:?}"
        );
    }
    let stream = probed(&report, "GET (HTTP+SSE event stream)");
    assert_eq!(framing(stream).0, "CRLF");
    assert_eq!(stream.answer, "an endpoint event first");
    assert_eq!(probed_tools(&report), py_tools());
    assert!(report.deviations.is_empty(), "{text}");
}

// --- 2026-07-28 against mcp 2.x ------------------------------------------------------------

/// mcp 2.x (default stateful mode, and stateless JSON) answers the era probe with a
/// DiscoverResult: the client speaks 2026-07-28, one POST per request, no session.
async fn py_v2_modern(extra: &[&str], streams_progress: bool) {
    let server = PeerServer::python(Sdk::V2, extra);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, options()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert!(client.protocol_version().is_modern());
    assert_eq!(client.session_id(), None);
    let server_info = client.server().expect("the discover result");
    assert_eq!(server_info.server_info.name, "mcpwire-py-test-server");
    assert!(server_info.capabilities.tools.is_some());
    assert_eq!(
        server_info.instructions.as_deref(),
        Some("Test tools for mcpwire interop tests.")
    );
    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(names(&tools), py_tools());
    let echo = call(&client, "echo_text", json!({"text": "zwei ✓"})).await;
    assert_eq!(only_text(&echo), "zwei ✓");
    let weather = call(&client, "weather", json!({"city": "Lyon"})).await;
    assert_eq!(weather.structured_content.as_ref().unwrap()["city"], "Lyon");
    let fail = call(&client, "fail", json!({"message": "kaput 2026"})).await;
    assert!(fail.is_error(), "{fail:?}");
    let (result, progress) =
        call_with_progress(&client, "progress", json!({"steps": 3, "delay": 0.01})).await;
    assert_eq!(only_text(&result), "done after 3 steps");
    if streams_progress {
        progress.assert_steps(3, true);
    } else {
        // A JSON reply has no room for notifications before the response.
        progress.assert_steps(0, true);
    }
    let refused = client.ping().await.expect_err("no ping at 2026-07-28");
    assert_eq!(refused.kind(), ErrorKind::Refused);
    client.close().await;
    let lines = wire.lines();
    // Every request a POST with the revision's headers; no GET, no DELETE, no notification.
    assert!(
        lines
            .iter()
            .all(|l| !l.starts_with("> GET") && !l.starts_with("> DELETE")),
        "{lines:#?}"
    );
    let sent: Vec<_> = lines.iter().filter(|l| l.starts_with("> ")).collect();
    assert!(
        !sent.iter().any(|l| l.contains("\"notifications/")),
        "{sent:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("\"initialize\"")),
        "{lines:#?}"
    );
    let probes = sent
        .iter()
        .filter(|l| l.contains("server/discover"))
        .count();
    assert_eq!(probes, 1, "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_v2_speaks_2026_07_28_in_its_default_mode() {
    crate::support::peers::require(crate::support::peers::Peer::Python(Sdk::V2));
    py_v2_modern(&[], true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_v2_speaks_2026_07_28_stateless_with_json() {
    crate::support::peers::require(crate::support::peers::Peer::Python(Sdk::V2));
    py_v2_modern(&["--stateless", "--json-response"], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_v2_modern_cancel_closes_the_stream_and_a_second_client_skips_the_probe() {
    crate::support::peers::require(crate::support::peers::Peer::Python(Sdk::V2));
    let server = PeerServer::python(Sdk::V2, &[]);
    let pool = pool();
    // Clones of one `ClientOptions` share its era cache.
    let shared = options();
    let client = connect_with(&pool, config(&server.url), shared.clone()).await;
    assert!(client.protocol_version().is_modern());
    let cancel = CancelToken::default();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let error = expect_err(
        call_with(&client, "slow", json!({"seconds": 30}), {
            let mut options = call_options();
            options.cancel = Some(cancel);
            options
        })
        .await,
        "slow",
    );
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(error.outcome_unknown());
    assert!(started.elapsed() < Duration::from_secs(2));
    // The options kept the verdict: the next client's first message is its first request.
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let second = connect_with(&pool, config, shared).await;
    assert!(second.protocol_version().is_modern());
    assert_eq!(
        only_text(&call(&second, "echo_text", json!({"text": "one POST"})).await),
        "one POST"
    );
    let lines = wire.lines();
    let posts: Vec<_> = lines.iter().filter(|l| l.starts_with("> POST")).collect();
    assert_eq!(posts.len(), 1, "{lines:#?}");
    assert!(posts[0].contains("tools/call"), "{lines:#?}");
    client.close().await;
    second.close().await;
}

// --- 2026-07-28 against the TypeScript SDK v2 ----------------------------------------------

/// Confirms whatever it is asked to confirm.
struct ConfirmAll;

impl mcpwire::client::InputHandler for ConfirmAll {
    fn capabilities(&self) -> mcpwire::mcp::ClientCapabilities {
        mcpwire::mcp::ClientCapabilities {
            elicitation: Some(JsonObject::new()),
            ..Default::default()
        }
    }

    fn answer(&self, request: mcpwire::mcp::InputRequest) -> mcpwire::client::InputFuture {
        Box::pin(async move {
            assert_eq!(request.method, "elicitation/create");
            Ok(json!({"action": "accept", "content": {"confirmed": true}}))
        })
    }
}

async fn ts2_modern(extra: &[&str]) {
    let server = PeerServer::ts2(extra);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let mut options = options();
    options.input_handler = Some(Arc::new(ConfirmAll));
    let client = connect_with(&pool, config, options).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.session_id(), None);
    let described = client.server().expect("the discover result");
    assert_eq!(described.server_info.name, "mcpwire-ts2-test-server");
    let want: BTreeSet<String> = TS2_TOOLS.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(list_names(&client).await, want);
    let added = call(&client, "add", json!({"a": 2, "b": 3.5})).await;
    assert_eq!(added.structured_content, Some(json!({"sum": 5.5})));
    let failed = call(&client, "fail", json!({"message": "no"})).await;
    assert!(failed.is_error());
    // The annotated argument goes into Mcp-Param-Region, Base64 for non-ASCII; the server
    // refuses the call (-32020) without it.
    let region = call(&client, "region_echo", json!({"region": "Zürich"})).await;
    let echoed = region.structured_content.expect("structured");
    assert_eq!(echoed["region"], "Zürich");
    assert_eq!(echoed["header"], "=?base64?WsO8cmljaA==?=");
    // input_required with an elicitation, answered by the handler, the state echoed exactly.
    let confirmed = call(&client, "confirm", json!({"action": "deploy"})).await;
    assert_eq!(only_text(&confirmed), "confirmed: deploy", "{confirmed:?}");
    // requestState-only rounds: no handler needed.
    let rounds = call(&client, "rounds", json!({"count": 3})).await;
    assert_eq!(only_text(&rounds), "done after 3 rounds");
    let (result, progress) =
        call_with_progress(&client, "slow_progress", json!({"steps": 3, "delay": 0.01})).await;
    assert!(!result.is_error());
    progress.assert_steps(3, true);
    client.close().await;
    modern_requests_only(&wire);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_speaks_2026_07_28() {
    peers::require(Peer::Ts2);
    ts2_modern(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_modern_only_and_always_sse() {
    peers::require(Peer::Ts2);
    ts2_modern(&["--legacy", "reject", "--response-mode", "sse"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_modern_cancel_closes_the_stream_and_the_server_stops() {
    peers::require(Peer::Ts2);
    let server = PeerServer::ts2(&[]);
    let pool = pool();
    let client = connect(&pool, &server.url).await;
    assert!(client.protocol_version().is_modern());
    let cancel = CancelToken::default();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        trigger.cancel();
    });
    let error = expect_err(
        call_with(
            &client,
            "slow_progress",
            json!({"steps": 50, "delay": 0.1}),
            {
                let mut options = call_options();
                options.cancel = Some(cancel);
                options
            },
        )
        .await,
        "slow_progress",
    );
    assert_eq!(error.kind(), ErrorKind::Cancelled);
    assert!(
        wait_for_log(&server, "slow_progress: cancelled after"),
        "{}",
        server.log_tail(20)
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_listen_and_cache_hints() {
    peers::require(Peer::Ts2);
    let server = PeerServer::ts2(&["--ttl-ms", "60000", "--cache-scope", "public"]);
    let pool = pool();
    let (sink, mut received) = tokio::sync::mpsc::channel(16);
    let mut options = options();
    options.notifications = Some(sink);
    let lists = options.list_cache.clone();
    let client = Arc::new(connect_with(&pool, config(&server.url), options).await);
    client.list_tools().await.unwrap();
    assert_eq!(lists.len(), 1, "a 60 s public page");
    let listener = client.clone();
    let cancel = CancelToken::default();
    let stop = cancel.clone();
    let listening = tokio::spawn(async move {
        listener
            .listen(
                json!({"toolsListChanged": true}),
                Duration::from_secs(20),
                Some(stop),
            )
            .await
    });
    let ack = tokio::time::timeout(STEP, received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ack.method, "notifications/subscriptions/acknowledged");
    call(&client, "tools_changed", json!({})).await;
    let changed = tokio::time::timeout(STEP, received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.method, "notifications/tools/list_changed");
    assert!(lists.is_empty(), "the change dropped the page");
    cancel.cancel();
    let ended = listening.await.unwrap();
    assert_eq!(ended.unwrap_err().kind(), ErrorKind::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_binding_calls_are_one_post_each_after_the_first_probe() {
    use mcpwire::binding::call::{CallContext, Caller, EnvTokens};
    use mcpwire::binding::config::load_config;
    peers::require(Peer::Ts2);
    let server = PeerServer::ts2(&[]);
    let bindings = load_config(
        &json!([{
            "name": "region",
            "description": "echoes the region",
            "input_schema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]},
            "url": server.url,
            "mcp_tool": "region_echo",
            "tenants": ["acme"],
            "timeout_seconds": 20
        }])
        .to_string(),
    )
    .expect("bindings");
    let mut caller = Caller::new(pool(), bindings, Arc::new(EnvTokens)).expect("caller");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    caller.set_wire_log(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned());
    }));
    for n in 0..3 {
        let context = CallContext::new("acme", "s", format!("call-{n}"));
        let result = caller
            .call(
                "region",
                &context,
                &json!({"region": "Zürich"}),
                |_| {},
                None,
            )
            .await;
        assert!(!result.is_error(), "{result:?}");
        let structured = result.structured_content().expect("structured");
        assert_eq!(structured["header"], "=?base64?WsO8cmljaA==?=");
    }
    let lines = lines.lock().unwrap().clone();
    let posts: Vec<_> = lines.iter().filter(|l| l.starts_with("> ")).collect();
    // The first call probes; each call is then one tools/call POST, with no session to end.
    assert_eq!(posts.len(), 4, "{posts:#?}");
    assert!(posts[0].contains("server/discover"));
    for (n, post) in posts[1..].iter().enumerate() {
        assert!(
            post.starts_with("> POST") && post.contains("tools/call"),
            "{post}"
        );
        assert!(post.contains("brain.dev/scope"), "{post}");
        assert!(
            post.contains(&format!("\"progressToken\":\"call-{n}\"")),
            "{post}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_http_probe() {
    peers::require(Peer::Ts2);
    let server = PeerServer::ts2(&[]);
    let report = probe_peer(&server.url).await;
    let text = report.render();
    assert_eq!(report.eras.modern.speaks_2026_07_28, Some(true), "{text}");
    assert_eq!(
        report.server.as_ref().unwrap().name,
        "mcpwire-ts2-test-server"
    );
    // region_echo's x-mcp-header annotation is valid: no tool has a problem.
    let want: BTreeSet<String> = TS2_TOOLS.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(probed_tools(&report), want, "{text}");
    assert!(declares_output_schema(&report, "add"), "{text}");
}

// --- rmcp 3, the official Rust SDK ---------------------------------------------------------

/// Every tool `fixtures/servers/rmcp-server` has (listed five to a page).
const RMCP_TOOLS: [&str; 12] = [
    "add",
    "audio_clip",
    "echo",
    "embedded_resource",
    "fail",
    "log_messages",
    "mixed_content",
    "progress",
    "resource_links",
    "slow",
    "tiny_image",
    "weather",
];

fn rmcp_tools() -> BTreeSet<String> {
    RMCP_TOOLS.iter().map(|s| (*s).to_owned()).collect()
}

/// The calls every mode of the rmcp server must serve: the paged tool list, text, an image,
/// structured content matching the listed output schema, an `isError` result, progress.
pub(crate) async fn rmcp_calls(client: &Client) {
    assert_eq!(list_names(client).await, rmcp_tools());
    let tools = client.list_tools().await.expect("tools/list");
    let weather = tools.iter().find(|t| t.name == "weather").expect("weather");
    assert!(weather.output_schema.is_some(), "{weather:?}");
    let echoed = call(client, "echo", json!({"message": "héllo ✓"})).await;
    assert!(!echoed.is_error(), "{echoed:?}");
    assert_eq!(only_text(&echoed), "Echo: héllo ✓");
    assert_eq!(
        only_text(&call(client, "add", json!({"a": 2, "b": 3.5})).await),
        "5.5"
    );
    let image = call(client, "tiny_image", json!({})).await;
    assert_eq!(image.content.len(), 1, "{image:?}");
    assert_png(&image.content[0]);
    let report = call(client, "weather", json!({"city": "Oslo"})).await;
    let structured = report
        .structured_content
        .clone()
        .expect("structured content");
    assert_eq!(structured["city"], "Oslo", "{report:?}");
    assert!(structured["temperature_c"].is_f64(), "{report:?}");
    // The same report, asked twice.
    let again = call(client, "weather", json!({"city": "Oslo"})).await;
    assert_eq!(again.structured_content, Some(structured));
    let failed = call(client, "fail", json!({"message": "deliberate"})).await;
    assert!(failed.is_error(), "{failed:?}");
    assert_eq!(only_text(&failed), "deliberate");
    let (counted, progress) =
        call_with_progress(client, "progress", json!({"steps": 3, "delay_ms": 10})).await;
    assert_eq!(only_text(&counted), "completed 3 steps");
    progress.assert_steps(3, true);
}

/// rmcp 3 negotiates 2026-07-28: the probe is answered, every request is its own POST, and no
/// `initialize`, session id or DELETE is ever sent.
async fn rmcp_modern(extra: &[&str]) {
    let server = PeerServer::rmcp(extra);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, options()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.session_id(), None);
    assert_eq!(server_name(&client), "rmcp-example-server");
    rmcp_calls(&client).await;
    client.close().await;
    let sent = modern_requests_only(&wire);
    assert!(sent[0].contains("server/discover"), "{sent:#?}");
    assert!(
        !wire
            .lines()
            .iter()
            .any(|l| l.to_ascii_lowercase().contains("mcp-session-id")),
        "no session at 2026-07-28"
    );
}

/// rmcp's default mode: sessions for the 2025 revisions, none at 2026-07-28.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_speaks_2026_07_28() {
    peers::require(Peer::Rmcp);
    rmcp_modern(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_speaks_2026_07_28_with_json_replies() {
    peers::require(Peer::Rmcp);
    rmcp_modern(&["--json-response"]).await;
}

/// A client pinned to the 2025 path gets an MCP session from the same server, and ends it
/// with DELETE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_2025_path_with_a_session() {
    peers::require(Peer::Rmcp);
    let server = PeerServer::rmcp(&[]);
    let pool = pool();
    let mut config = config(&server.url);
    let wire = Wire::default();
    wire.attach(&mut config);
    let client = connect_with(&pool, config, offering(ProtocolVersion::V2025_11_25)).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert!(client.session_id().is_some(), "rmcp's session mode");
    rmcp_calls(&client).await;
    client.close().await;
    assert_eq!(wire.count("> DELETE"), 1, "{:#?}", wire.lines());
}

/// With `--stateless`, a client pinned to 2025 is served without a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_2025_path_without_sessions() {
    peers::require(Peer::Rmcp);
    let server = PeerServer::rmcp(&["--stateless"]);
    let pool = pool();
    let client = connect_with(
        &pool,
        config(&server.url),
        offering(ProtocolVersion::V2025_11_25),
    )
    .await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.session_id(), None);
    rmcp_calls(&client).await;
    client.close().await;
}

/// A deadline ends a slow 2026-07-28 call as a timeout whose outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_timeout_of_a_slow_call() {
    peers::require(Peer::Rmcp);
    let server = PeerServer::rmcp(&[]);
    let pool = pool();
    let client = connect(&pool, &server.url).await;
    assert!(client.protocol_version().is_modern());
    times_out_after_700_ms(&client, "slow", json!({"seconds": 30})).await;
    // The client is still usable.
    assert_eq!(
        only_text(&call(&client, "echo", json!({"message": "after"})).await),
        "Echo: after"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_http_probe() {
    peers::require(Peer::Rmcp);
    let server = PeerServer::rmcp(&[]);
    let report = probe_peer(&server.url).await;
    let text = report.render();
    assert_eq!(report.eras.modern.speaks_2026_07_28, Some(true), "{text}");
    assert_eq!(report.server.as_ref().unwrap().name, "rmcp-example-server");
    assert_eq!(probed_tools(&report), rmcp_tools(), "{text}");
    assert!(declares_output_schema(&report, "weather"), "{text}");
}

// --- W3C trace context (SEP-414) into the Python SDK 2.x's OpenTelemetry middleware ------------

/// What `py_trace_server.py`'s `trace_seen` tool reports: the span the SDK made for the call.
async fn trace_seen(client: &Client, trace: &mcpwire::mcp::TraceContext) -> Value {
    let mut options = call_options();
    options.trace_context = Some(trace.clone());
    let result = client
        .call_tool("trace_seen", None, options)
        .await
        .unwrap_or_else(|e| panic!("trace_seen: {} ({e})", e.kind()));
    serde_json::from_str(only_text(&result)).expect("trace_seen answers JSON")
}

/// A call's trace context reaches the official Python SDK 2.x: the server span its
/// `OpenTelemetryMiddleware` makes from `params._meta` (recorded by the OpenTelemetry SDK that
/// `scripts/install-peers` pins beside it) has the call's trace id and the call's parent id,
/// at 2026-07-28 and on the 2025 path, with the `tracestate` and `baggage` as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_v2_server_span_joins_the_calls_trace() {
    peers::require(Peer::Python(Sdk::V2));
    let server = PeerServer::python_trace();
    let pool = pool();
    for (era, parent) in [
        (
            mcpwire::session::EraPolicy::Auto,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
        (
            mcpwire::session::EraPolicy::Legacy,
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ),
    ] {
        let mut options = options();
        options.session.era = era.clone();
        let client = connect_with(&pool, config(&server.url), options).await;
        let trace = mcpwire::mcp::TraceContext::parse(parent)
            .and_then(|t| t.with_tracestate("mcpwire=interop"))
            .and_then(|t| t.with_baggage("tenant=acme"))
            .expect("a valid context");
        let seen = trace_seen(&client, &trace).await;
        println!(
            "{} {:?}: sent traceparent {parent}; the Python SDK's span {:?} ({}) has trace id {} \
             and parent {}",
            client.protocol_version(),
            era,
            seen["span_name"],
            seen["span_kind"],
            seen["trace_id"],
            seen["parent_id"]
        );
        assert_eq!(seen["recording"], true, "{seen}");
        assert_eq!(seen["span_kind"], "SpanKind.SERVER", "{seen}");
        assert_eq!(seen["span_name"], "tools/call trace_seen", "{seen}");
        assert_eq!(seen["trace_id"], trace.trace_id(), "{seen}");
        assert_eq!(seen["parent_id"], trace.parent_id(), "{seen}");
        assert_eq!(seen["parent_remote"], true, "{seen}");
        assert_eq!(seen["meta"]["traceparent"], parent, "{seen}");
        assert_eq!(seen["meta"]["tracestate"], "mcpwire=interop", "{seen}");
        assert_eq!(seen["meta"]["baggage"], "tenant=acme", "{seen}");
        client.close().await;
    }
}
