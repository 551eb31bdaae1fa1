//! The call pipeline (SPEC.md "Calling a tool", "Result mapping", "Failures and
//! `unknown_outcome`"): one test per row of those tables, checking `is_error`,
//! `unknown_outcome`, the error kind and the content. The demo server plays a well-behaved MCP
//! server, the fault server the misbehaving ones, and the official Python SDK a real one.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpwire::ErrorKind;
use mcpwire::auth::Secret;
use mcpwire::binding::call::{
    CallContext, Caller, CallerOptions, EnvTokens, Progress, TokenSource, ToolResult,
};
use mcpwire::binding::config::{Binding, Server, load_config};
use mcpwire::binding::discover::{Discovery, discover};
use mcpwire::client::CancelToken;
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use mcpwire::transport::http::{HttpPool, TlsOptions};
use serde_json::{Value, json};

use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::{initialize_reply, mcp_server, rpc_result, sse_event};
use crate::support::peers::{self, Peer, PeerServer, Sdk};

/// A token recognizable anywhere it might leak.
pub(crate) const TOKEN: &str = "tok-BINDING-SECRET-7c1e55aa";
/// The variable [`FixedTokens`] knows.
pub(crate) const TOKEN_ENV: &str = "MCPWIRE_BINDING_TEST_TOKEN";
/// The deadline for waiting on a server to see requests.
pub(crate) const WAIT: Duration = Duration::from_secs(10);
/// The base64 of the PNG signature.
const PNG_BASE64_PREFIX: &str = "iVBORw0KGgo";

/// Hands out [`TOKEN`] for [`TOKEN_ENV`] and nothing else.
pub(crate) struct FixedTokens;

impl TokenSource for FixedTokens {
    fn token(&self, name: &str) -> Option<Secret> {
        (name == TOKEN_ENV).then(|| Secret::new(TOKEN))
    }
}

pub(crate) fn pool() -> HttpPool {
    HttpPool::new(&TlsOptions::default()).expect("pool")
}

/// A binding named `t` (remote tool `t`) for tenant `acme` at `url`, taking `{"q": string}`,
/// with the members of `extra` merged in (a `null` removes a member). Goes through
/// `load_config`, as a host's config would.
pub(crate) fn binding(url: &str, extra: Value) -> Binding {
    let mut object = json!({
        "name": "t",
        "description": "a test tool",
        "input_schema": {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "additionalProperties": false
        },
        "url": url,
        "mcp_tool": "t",
        "tenants": ["acme"],
        "timeout_seconds": 20,
    });
    let members = object.as_object_mut().expect("object");
    for (key, value) in extra.as_object().expect("extra is an object") {
        if value.is_null() {
            members.remove(key);
        } else {
            members.insert(key.clone(), value.clone());
        }
    }
    let mut bindings =
        load_config(&json!([object]).to_string()).unwrap_or_else(|e| panic!("binding: {e}"));
    bindings.remove(0)
}

pub(crate) fn caller(bindings: Vec<Binding>) -> Caller {
    Caller::new(pool(), bindings, Arc::new(FixedTokens)).expect("caller")
}

pub(crate) fn context(call_id: &str) -> CallContext {
    CallContext::new("acme", "conv-1", call_id.to_owned())
}

/// Calls binding `name` as tenant `acme`, ignoring progress.
async fn call(caller: &Caller, name: &str, call_id: &str, arguments: Value) -> ToolResult {
    caller
        .call(name, &context(call_id), &arguments, |_| {}, None)
        .await
}

/// One call of the only binding, `t`, with `{"q": "x"}`.
async fn call_t(binding: Binding) -> ToolResult {
    call(&caller(vec![binding]), "t", "call-1", json!({"q": "x"})).await
}

#[track_caller]
pub(crate) fn assert_failed(result: &ToolResult, kind: &str, unknown_outcome: bool) {
    assert!(result.is_error(), "{result:?}");
    assert_eq!(
        result.unknown_outcome(),
        Some(unknown_outcome),
        "{result:?}"
    );
    assert_eq!(
        result.error_kind().map(ErrorKind::as_str),
        Some(kind),
        "{result:?}"
    );
    assert!(
        result.error_message().is_some_and(|m| !m.is_empty()),
        "{result:?}"
    );
    // The kind's rows of SPEC.md's unknown_outcome table allow this verdict.
    let fixed = result.error_kind().and_then(ErrorKind::unknown_outcome);
    assert!(
        fixed.is_none_or(|fixed| fixed == unknown_outcome),
        "{kind} is always unknown_outcome {fixed:?}: {result:?}"
    );
    let line: Value = serde_json::from_str(&result.to_json_line()).expect("a JSON line");
    assert_eq!(line["unknown_outcome"], json!(unknown_outcome));
    assert_eq!(line["error"]["kind"], json!(kind));
}

#[track_caller]
pub(crate) fn assert_succeeded(result: &ToolResult) {
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(result.unknown_outcome(), None, "{result:?}");
    assert_eq!(result.error_kind(), None, "{result:?}");
}

// --- scripted MCP servers -----------------------------------------------------------------------

/// A `tools/call` answer holding `result`, as one SSE event.
pub(crate) fn tool_reply(req: &Recorded, result: Value) -> Reply {
    Reply::sse(200, &[&sse_event(&rpc_result(req, result))])
}

/// A server that must never be reached.
async fn untouchable_server() -> FaultServer {
    FaultServer::start(|_| Reply::empty(500)).await
}

#[track_caller]
fn assert_nothing_sent(server: &FaultServer) {
    assert_eq!(server.connections_accepted(), 0, "{:?}", server.requests());
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

pub(crate) fn posts_of(requests: &[Recorded], method: &str) -> Vec<Recorded> {
    requests
        .iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some(method))
        .cloned()
        .collect()
}

/// Waits until the server has seen a `notifications/cancelled` and returns it with the
/// `tools/call` request.
pub(crate) async fn cancelled_and_call(server: &FaultServer) -> (Value, Value) {
    let deadline = Instant::now() + WAIT;
    loop {
        let requests = server.requests();
        let cancelled = posts_of(&requests, "notifications/cancelled");
        if let Some(cancelled) = cancelled.first() {
            let call = posts_of(&requests, "tools/call")[0].json().unwrap();
            return (cancelled.json().unwrap(), call);
        }
        assert!(
            Instant::now() < deadline,
            "no notifications/cancelled reached the server: {:?}",
            requests
                .iter()
                .map(|r| format!("{} {:?}", r.method, r.jsonrpc_method()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// --- the demo server ---------------------------------------------------------------------------

/// Bindings for the demo server's `tools`, discovered (as `mcp-tools` does) for tenant `acme`.
async fn demo_bindings(server: &DemoServer, tools: &[&str]) -> Vec<Binding> {
    let mut discovery = Discovery::new(
        Server::http(server.url()),
        "acme".to_owned(),
        tools.iter().map(|t| (*t).to_owned()).collect(),
    );
    discovery.timeout = WAIT;
    discover(&pool(), &discovery).await.expect("discovery")
}

async fn demo_caller(server: &DemoServer, tools: &[&str]) -> Caller {
    caller(demo_bindings(server, tools).await)
}

// === Result mapping =============================================================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_content_becomes_a_text_block() {
    let server = DemoServer::start().await.unwrap();
    let caller = demo_caller(&server, &["echo"]).await;
    let result = call(&caller, "echo", "call-text", json!({"message": "hi"})).await;
    assert_succeeded(&result);
    assert_eq!(result.call_id(), "call-text");
    assert_eq!(
        result.content(),
        vec![json!({"type": "text", "text": "Echo: hi"})]
    );
    assert_eq!(result.structured_content(), None);
    assert_eq!(
        result.to_json_line(),
        r#"{"type":"tool.result","call_id":"call-text","is_error":false,"content":[{"text":"Echo: hi","type":"text"}]}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_content_becomes_an_image_block() {
    let server = DemoServer::start().await.unwrap();
    let caller = demo_caller(&server, &["tiny_image"]).await;
    let result = call(&caller, "tiny_image", "call-image", json!({})).await;
    assert_succeeded(&result);
    assert_eq!(result.content().len(), 1, "{result:?}");
    let block = result.content()[0].as_object().expect("an object");
    let mut keys: Vec<&str> = block.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["data", "mime_type", "type"]);
    assert_eq!(block["type"], "image");
    assert_eq!(block["mime_type"], "image/png");
    let data = block["data"].as_str().expect("base64 data");
    assert!(data.starts_with(PNG_BASE64_PREFIX), "{data}");
    assert_eq!(data.len() % 4, 0, "padded base64: {data}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_is_returned_with_its_json_as_text_and_validated() {
    let server = DemoServer::start().await.unwrap();
    let bindings = demo_bindings(&server, &["weather"]).await;
    assert!(bindings[0].output_schema.is_some(), "{bindings:?}");
    let caller = caller(bindings);
    let result = call(
        &caller,
        "weather",
        "call-weather",
        json!({"city": "Lisbon"}),
    )
    .await;
    assert_succeeded(&result);
    let structured = result
        .structured_content()
        .cloned()
        .expect("structured content");
    assert_eq!(structured["city"], "Lisbon");
    for member in ["temperature_c", "conditions", "humidity"] {
        assert!(structured.get(member).is_some(), "{structured}");
    }
    let as_text: Vec<Value> = result
        .content()
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| serde_json::from_str(b["text"].as_str()?).ok())
        .collect();
    assert!(as_text.contains(&structured), "{result:?}");
    // The same city always gets the same report.
    let again = call(
        &caller,
        "weather",
        "call-weather-2",
        json!({"city": "Lisbon"}),
    )
    .await;
    assert_eq!(again.structured_content(), Some(&structured));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_is_error_result_is_a_known_tool_error_with_its_content_kept() {
    let server = DemoServer::start().await.unwrap();
    let caller = demo_caller(&server, &["fail"]).await;
    let result = call(&caller, "fail", "call-fail", json!({"message": "it broke"})).await;
    assert_failed(&result, "tool_error", false);
    assert_eq!(
        result.content(),
        vec![json!({"type": "text", "text": "it broke"})]
    );
    assert!(result.error_message().unwrap().contains("it broke"));
    let line = result.to_json_line();
    assert!(
        line.starts_with(
            r#"{"type":"tool.result","call_id":"call-fail","is_error":true,"unknown_outcome":false,"content":[{"text":"it broke","type":"text"}],"error":{"kind":"tool_error","#
        ),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_other_content_type_fails_the_call_with_an_unknown_outcome() {
    let blocks = [
        json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
        json!({"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt"}),
        json!({"type": "resource", "resource": {"uri": "file:///tmp/b.txt", "mimeType": "text/plain", "text": "an embedded note"}}),
    ];
    for block in blocks {
        let block_type = block["type"].as_str().unwrap().to_owned();
        let sent = block.clone();
        let server = mcp_server(move |req| {
            tool_reply(
                req,
                json!({"content": [{"type": "text", "text": "before"}, sent], "isError": false}),
            )
        })
        .await;
        let result = call_t(binding(&server.url("/mcp"), json!({}))).await;
        assert_failed(&result, "unsupported_content", true);
        assert!(
            result.error_message().unwrap().contains(&block_type),
            "{block_type}: {result:?}"
        );
        assert!(result.content().is_empty(), "{result:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_not_matching_the_output_schema_is_an_unknown_outcome() {
    let schema = json!({
        "type": "object",
        "properties": {"temperature_c": {"type": "number"}},
        "required": ["temperature_c"]
    });
    // A mismatching value, then no structured content at all.
    for structured in [json!({"temperature_c": "warm"}), Value::Null] {
        let value = structured.clone();
        let server = mcp_server(move |req| {
            let mut result = json!({"content": [{"type": "text", "text": value.to_string()}]});
            if !value.is_null() {
                result["structuredContent"] = value.clone();
            }
            tool_reply(req, result)
        })
        .await;
        let result = call_t(binding(
            &server.url("/mcp"),
            json!({"output_schema": schema.clone()}),
        ))
        .await;
        assert_failed(&result, "output_schema_mismatch", true);
        assert_eq!(result.structured_content(), None, "{result:?}");
        assert_eq!(posts_of(&server.requests(), "tools/call").len(), 1);
    }
}

// === Failures and unknown_outcome ===============================================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_locally_unknown_tool_sends_nothing() {
    let server = untouchable_server().await;
    let caller = caller(vec![binding(&server.url("/mcp"), json!({}))]);
    let result = call(&caller, "no_such_tool", "call-1", json!({"q": "x"})).await;
    assert_failed(&result, "unknown_tool", false);
    assert!(result.error_message().unwrap().contains("no_such_tool"));
    assert_nothing_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_locally_wrong_tenant_sends_nothing() {
    let server = untouchable_server().await;
    let caller = caller(vec![binding(&server.url("/mcp"), json!({}))]);
    let mut context = context("call-1");
    context.tenant_id = "someone-else".to_owned();
    let result = caller
        .call("t", &context, &json!({"q": "x"}), |_| {}, None)
        .await;
    assert_failed(&result, "tenant_denied", false);
    assert!(result.error_message().unwrap().contains("someone-else"));
    assert_nothing_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_locally_arguments_not_matching_the_input_schema_send_nothing() {
    let server = untouchable_server().await;
    let caller = caller(vec![binding(
        &server.url("/mcp"),
        json!({"input_schema": {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
            "additionalProperties": false
        }}),
    )]);
    for arguments in [
        json!({"q": 5}),
        json!({}),
        json!({"q": "x", "extra": true}),
        json!(["q"]),
        json!("q"),
    ] {
        let result = call(&caller, "t", "call-1", arguments).await;
        assert_failed(&result, "invalid_arguments", false);
    }
    assert_nothing_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_locally_token_env_unset_sends_nothing() {
    const UNSET: &str = "MCPWIRE_BINDING_TEST_SURELY_UNSET_VARIABLE";
    assert!(std::env::var_os(UNSET).is_none());
    let server = untouchable_server().await;
    let bindings = vec![binding(&server.url("/mcp"), json!({"token_env": UNSET}))];
    let caller = Caller::new(pool(), bindings, Arc::new(EnvTokens)).unwrap();
    let result = call(&caller, "t", "call-1", json!({"q": "x"})).await;
    assert_failed(&result, "missing_token", false);
    assert!(result.error_message().unwrap().contains(UNSET));
    assert_nothing_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn could_not_connect_is_a_known_outcome() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let result = call_t(binding(&format!("http://127.0.0.1:{port}/mcp"), json!({}))).await;
    assert_failed(&result, "connect", false);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_or_403_on_initialize_is_a_known_outcome() {
    for status in [401, 403] {
        let server = FaultServer::start(move |_| {
            Reply::json(status, json!({"error": "invalid_token"})).with_header(
                "www-authenticate",
                r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource""#,
            )
        })
        .await;
        let result = call_t(binding(
            &server.url("/mcp"),
            json!({"token_env": TOKEN_ENV}),
        ))
        .await;
        assert_failed(&result, "unauthorized", false);
        let requests = server.requests();
        assert!(posts_of(&requests, "tools/call").is_empty(), "{requests:?}");
        // An auth answer to the era probe is no era verdict: connecting stops there.
        assert_eq!(
            requests
                .iter()
                .map(|r| r.jsonrpc_method())
                .collect::<Vec<_>>(),
            [Some("server/discover".to_owned())],
            "{requests:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_protocol_version_is_a_known_outcome() {
    let server = FaultServer::start(|req| match req.method.as_str() {
        "DELETE" => Reply::empty(200),
        _ => match req.jsonrpc_method().as_deref() {
            Some("initialize") => initialize_reply(req, "2024-10-07"),
            _ => Reply::empty(202),
        },
    })
    .await;
    let result = call_t(binding(&server.url("/mcp"), json!({}))).await;
    assert_failed(&result, "unsupported_version", false);
    assert!(result.error_message().unwrap().contains("2024-10-07"));
    assert!(posts_of(&server.requests(), "tools/call").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_mcp_reply_to_initialize_is_a_known_outcome() {
    let server = FaultServer::start(|_| {
        Reply::text(200, "<!doctype html><html><body>Welcome!</body></html>")
            .with_header("content-type", "text/html; charset=utf-8")
    })
    .await;
    let result = call_t(binding(&server.url("/mcp"), json!({}))).await;
    assert_failed(&result, "protocol", false);
    assert!(result.error_message().unwrap().contains("text/html"));
    assert!(posts_of(&server.requests(), "tools/call").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_session_on_tools_call_is_a_known_outcome() {
    let server = mcp_server(|_| {
        Reply::json(
            404,
            json!({"jsonrpc": "2.0", "id": null,
                   "error": {"code": -32600, "message": "Session not found"}}),
        )
    })
    .await;
    let result = call_t(binding(&server.url("/mcp"), json!({}))).await;
    assert_failed(&result, "session_expired", false);
    assert_eq!(posts_of(&server.requests(), "tools/call").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_dropped_after_the_call_was_sent_is_an_unknown_outcome() {
    let server = mcp_server(|req| {
        let token = req.json().unwrap()["params"]["_meta"]["progressToken"].clone();
        let progress = sse_event(
            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1}}),
        );
        Reply::sse_steps(200, vec![Step::text(&progress), Step::Drop])
    })
    .await;
    let started = Instant::now();
    let result = call_t(binding(&server.url("/mcp"), json!({}))).await;
    assert_failed(&result, "connection_lost", true);
    assert!(started.elapsed() < Duration::from_secs(5));
    // Sent at most once: never replayed.
    assert_eq!(posts_of(&server.requests(), "tools/call").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_is_an_unknown_outcome_and_cancels_on_the_wire() {
    let server =
        mcp_server(|_| Reply::sse_steps(200, vec![Step::text(": open\n\n"), Step::Hang])).await;
    let started = Instant::now();
    let result = call_t(binding(&server.url("/mcp"), json!({"timeout_seconds": 1}))).await;
    let elapsed = started.elapsed();
    assert_failed(&result, "timeout", true);
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    let (cancelled, call) = cancelled_and_call(&server).await;
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
    assert_eq!(posts_of(&server.requests(), "tools/call").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_error_after_the_call_was_sent_is_an_unknown_outcome() {
    let server = mcp_server(|_| {
        Reply::sse_steps(
            200,
            vec![
                Step::text("event: message\ndata: {\"jsonrpc\": \"2.0\", this is not JSON\n\n"),
                Step::Hang,
            ],
        )
    })
    .await;
    let started = Instant::now();
    let result = call_t(binding(&server.url("/mcp"), json!({}))).await;
    assert_failed(&result, "protocol", true);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "settled at once"
    );
}

// The rows for server requests during the call (`elicitation/create` fails it with an unknown
// outcome; `sampling/createMessage` is answered -32601 and the call goes on) are tested in
// `hostile.rs`.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_max_output_bytes_is_an_unknown_outcome() {
    let server = mcp_server(|req| {
        tool_reply(
            req,
            json!({"content": [{"type": "text", "text": "x".repeat(50_000)}]}),
        )
    })
    .await;
    let result = call_t(binding(
        &server.url("/mcp"),
        json!({"max_output_bytes": 1024}),
    ))
    .await;
    assert_failed(&result, "output_too_large", true);
    assert!(result.error_message().unwrap().contains("1024"));

    // The same result fits the default limit.
    let result = call_t(binding(&server.url("/mcp"), json!({}))).await;
    assert_succeeded(&result);
    assert_eq!(result.content()[0]["text"].as_str().unwrap().len(), 50_000);
}

// === Calling a tool ==============================================================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_identity_and_progress_token_reach_the_server() {
    let server =
        mcp_server(|req| tool_reply(req, json!({"content": [{"type": "text", "text": "found"}]})))
            .await;
    let binding = binding(
        &server.url("/mcp"),
        json!({"name": "docs_search", "mcp_tool": "search", "token_env": TOKEN_ENV}),
    );
    let caller = caller(vec![binding]);
    let context = CallContext::new("acme", "conv-7", "call-42");
    let result = caller
        .call("docs_search", &context, &json!({"q": "rust"}), |_| {}, None)
        .await;
    assert_succeeded(&result);
    assert_eq!(result.call_id(), "call-42");
    let requests = server.requests();
    let calls = posts_of(&requests, "tools/call");
    assert_eq!(calls.len(), 1);
    let params = &calls[0].json().unwrap()["params"];
    assert_eq!(params["name"], "search");
    assert_eq!(params["arguments"], json!({"q": "rust"}));
    assert_eq!(
        params["_meta"]["brain.dev/scope"],
        json!({"tenant_id": "acme", "session_id": "conv-7", "call_id": "call-42"})
    );
    assert_eq!(params["_meta"]["progressToken"], "call-42");
    for post in requests.iter().filter(|r| r.method == "POST") {
        assert_eq!(
            post.header("authorization"),
            Some(&*format!("Bearer {TOKEN}")),
            "{post:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_names_its_own_scope_key() {
    let server =
        mcp_server(|req| tool_reply(req, json!({"content": [{"type": "text", "text": "ok"}]})))
            .await;
    let mut caller = caller(vec![binding(
        &server.url("/mcp"),
        json!({"token_env": TOKEN_ENV}),
    )]);
    for bad in [
        "scope",
        "/scope",
        "a..b/scope",
        "io.modelcontextprotocol/x",
        "dev.mcp/x",
        "a/",
    ] {
        assert!(caller.set_scope_key(bad).is_err(), "{bad}");
    }
    caller.set_scope_key("example.com/who").expect("a host key");
    let result = call(&caller, "t", "call-9", json!({"q": "x"})).await;
    assert_succeeded(&result);
    let requests = server.requests();
    let meta = &posts_of(&requests, "tools/call")[0].json().unwrap()["params"]["_meta"];
    assert_eq!(meta["example.com/who"]["call_id"], "call-9");
    assert!(meta.get("brain.dev/scope").is_none(), "{meta}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_events_arrive_in_order_with_the_call_id() {
    let server = DemoServer::start().await.unwrap();
    let caller = demo_caller(&server, &["progress_report"]).await;
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = seen.clone();
    let result = caller
        .call(
            "progress_report",
            &context("call-p"),
            &json!({"steps": 4, "delay_ms": 20}),
            move |p| sink.lock().unwrap().push(p),
            None,
        )
        .await;
    assert_succeeded(&result);
    assert_eq!(
        result.content(),
        vec![json!({"type": "text", "text": "done after 4 steps"})]
    );
    let seen = seen.lock().unwrap().clone();
    let expected: Vec<(&str, f64, Option<f64>, Option<String>)> = (1..=4)
        .map(|i| {
            (
                "call-p",
                f64::from(i),
                Some(4.0),
                Some(format!("step {i} of 4")),
            )
        })
        .collect();
    let seen_fields: Vec<(&str, f64, Option<f64>, Option<String>)> = seen
        .iter()
        .map(|p| (p.call_id.as_str(), p.progress, p.total, p.message.clone()))
        .collect();
    assert_eq!(seen_fields, expected);
    assert_eq!(
        seen[0].to_json_line(),
        r#"{"type":"tool.progress","call_id":"call-p","progress":1.0,"total":4.0,"message":"step 1 of 4"}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_opens_its_own_session_and_deletes_it() {
    // The 2025 path, which has sessions (at 2026-07-28 a call is one POST).
    let server = DemoServer::start_with_options({
        let mut options = DemoOptions::default();
        options.era = Era::Legacy;
        options
    })
    .await
    .unwrap();
    let caller = demo_caller(&server, &["echo", "fail", "weather"]).await;
    let calls = [
        ("echo", json!({"message": "one"})),
        ("fail", json!({"message": "two"})),
        ("weather", json!({"city": "Oslo"})),
        ("echo", json!({"message": "four"})),
    ];
    for (tool, arguments) in calls {
        let before = server.stats();
        let result = call(&caller, tool, "call-s", arguments).await;
        assert_eq!(result.error_kind().is_some(), tool == "fail", "{result:?}");
        let after = server.stats();
        assert_eq!(
            after.sessions_opened,
            before.sessions_opened + 1,
            "{tool}: {after:?}"
        );
        assert_eq!(
            after.sessions_deleted,
            before.sessions_deleted + 1,
            "{tool}: {after:?}"
        );
    }
    let stats = server.stats();
    assert_eq!(stats.sessions_opened, stats.sessions_deleted, "{stats:?}");
    // Sessions are per call; connections are pooled.
    assert!(
        caller.pool().connections_opened() <= 4,
        "{} connections for 4 calls",
        caller.pool().connections_opened()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_token_ends_the_call_and_cancels_on_the_wire() {
    let cancel = CancelToken::default();
    let trigger = cancel.clone();
    let server = mcp_server(move |_| {
        // Cancel once the call is in flight at the server.
        let trigger = trigger.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            trigger.cancel();
        });
        Reply::sse_steps(200, vec![Step::text(": open\n\n"), Step::Hang])
    })
    .await;
    let caller = caller(vec![binding(&server.url("/mcp"), json!({}))]);
    let started = Instant::now();
    let result = caller
        .call(
            "t",
            &context("call-c"),
            &json!({"q": "x"}),
            |_| {},
            Some(cancel),
        )
        .await;
    assert_failed(&result, "cancelled", true);
    assert!(started.elapsed() < Duration::from_secs(5));
    let (cancelled, call) = cancelled_and_call(&server).await;
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
}

/// What a server that echoes the credentials says.
pub(crate) fn echo_auth(req: &Recorded) -> String {
    format!(
        "you sent Authorization: {}",
        req.header("authorization").unwrap_or("nothing")
    )
}

/// Calls a binding with [`TOKEN`] through `server`, which echoes it, and checks that the
/// result, its JSON line and its Debug form never hold the token.
async fn assert_token_not_leaked(server: &FaultServer) -> ToolResult {
    let result = call_t(binding(
        &server.url("/mcp"),
        json!({"token_env": TOKEN_ENV}),
    ))
    .await;
    assert!(result.is_error(), "{result:?}");
    let first = &server.requests()[0];
    assert_eq!(
        first.header("authorization"),
        Some(&*format!("Bearer {TOKEN}")),
        "the token was sent, so the server could echo it"
    );
    let message = &result.error_message().unwrap();
    assert!(!message.contains(TOKEN), "{message}");
    let line = result.to_json_line();
    assert!(!line.contains(TOKEN), "{line}");
    assert!(!format!("{result:?}").contains(TOKEN), "{result:?}");
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_never_appear_in_a_tool_result() {
    let servers = vec![
        // 401 and 403 on initialize, echoing the credentials in the body.
        FaultServer::start(|req| {
            Reply::text(401, &echo_auth(req)).with_header(
                "www-authenticate",
                r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource""#,
            )
        })
        .await,
        FaultServer::start(|req| Reply::text(403, &echo_auth(req))).await,
        // 500 on initialize.
        FaultServer::start(|req| Reply::text(500, &echo_auth(req))).await,
        // A non-MCP 200 on initialize.
        FaultServer::start(|req| {
            Reply::text(200, &echo_auth(req)).with_header("content-type", "text/html")
        })
        .await,
        // 500 on tools/call.
        mcp_server(|req| Reply::text(500, &echo_auth(req))).await,
        // 400 on tools/call.
        mcp_server(|req| Reply::json(400, json!({"error": echo_auth(req)}))).await,
        // Invalid JSON in an event, holding the token.
        mcp_server(|req| {
            Reply::sse(
                200,
                &[&format!("event: message\ndata: {{{}\n\n", echo_auth(req))],
            )
        })
        .await,
    ];
    for server in &servers {
        assert_token_not_leaked(server).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_never_appear_in_a_tool_result_even_when_the_challenge_echoes_them() {
    let server = FaultServer::start(|req| {
        Reply::json(401, json!({"error": "invalid_token"})).with_header(
            "www-authenticate",
            &format!(
                r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", error="invalid_token", error_description="{}""#,
                echo_auth(req)
            ),
        )
    })
    .await;
    let result = assert_token_not_leaked(&server).await;
    assert_eq!(result.error_kind().unwrap().as_str(), "unauthorized");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_never_appear_in_a_tool_result_even_when_a_json_rpc_error_echoes_them() {
    let server = mcp_server(|req| {
        Reply::json(
            200,
            json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(),
                   "error": {"code": -32603, "message": echo_auth(req), "data": echo_auth(req)}}),
        )
    })
    .await;
    let result = assert_token_not_leaked(&server).await;
    assert_eq!(result.error_kind().unwrap().as_str(), "server_error");
}

// === A real server: the official Python SDK (2.x) ===============================================

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn python_peer_structured_result_tool_error_and_timeout() {
    peers::require(Peer::Python(Sdk::V2));
    let peer = tokio::task::spawn_blocking(|| PeerServer::python(Sdk::V2, &[]))
        .await
        .unwrap();
    let mut discovery = Discovery::new(
        Server::http(peer.url.clone()),
        "acme".to_owned(),
        vec!["weather".into(), "fail".into(), "slow".into()],
    );
    discovery.timeout = Duration::from_secs(15);
    let mut bindings = discover(&pool(), &discovery).await.expect("discovery");
    assert!(bindings[0].output_schema.is_some(), "{:?}", bindings[0]);
    bindings[2].timeout_seconds = 1;
    let caller = caller(bindings);

    let weather = call(&caller, "weather", "py-1", json!({"city": "Kyiv"})).await;
    assert_succeeded(&weather);
    let structured = weather.structured_content().cloned().expect("structured");
    assert_eq!(structured["city"], "Kyiv");
    assert_eq!(structured["temperature_c"], 21.5);
    assert!(
        weather.content().iter().any(|b| b["type"] == "text"
            && serde_json::from_str::<Value>(b["text"].as_str().unwrap()).ok()
                == Some(structured.clone())),
        "{weather:?}"
    );

    let fail = call(&caller, "fail", "py-2", json!({"message": "it broke"})).await;
    assert_failed(&fail, "tool_error", false);
    assert!(
        fail.content()
            .iter()
            .any(|b| b["type"] == "text" && b["text"].as_str().unwrap().contains("it broke")),
        "{fail:?}"
    );

    let started = Instant::now();
    let slow = call(&caller, "slow", "py-3", json!({"seconds": 30})).await;
    let elapsed = started.elapsed();
    assert_failed(&slow, "timeout", true);
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    drop(peer);
}

// === Clients at a stateless revision ============================================================

/// A token source whose token the test changes between calls.
struct Rotating(Mutex<String>);

impl TokenSource for Rotating {
    fn token(&self, name: &str) -> Option<Secret> {
        (name == TOKEN_ENV).then(|| Secret::new(self.0.lock().unwrap().clone()))
    }
}

/// At 2026-07-28 a call opens no session, so a binding's calls share one client: the wire
/// log notes the settled era once per client made. A new client is made when the token read
/// for a call differs from the one the client was made with, and after a call that failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_calls_share_a_client_until_the_token_changes_or_a_call_fails() {
    let mut options = DemoOptions::default();
    options.token = Some("tok-one".to_owned());
    let server = DemoServer::start_with_options(options).await.unwrap();
    let bindings: Vec<Binding> = ["echo", "progress_report"]
        .iter()
        .map(|tool| {
            let mut binding = Binding::new(
                *tool,
                *tool,
                Server::http(server.url()).with_token_env(TOKEN_ENV),
            );
            binding.tenants = vec!["acme".to_owned()];
            binding.timeout_seconds = 20;
            binding
        })
        .collect();
    let tokens = Arc::new(Rotating(Mutex::new("tok-one".to_owned())));
    let mut caller = Caller::new(pool(), bindings, tokens.clone()).expect("caller");
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = log.clone();
    caller.set_wire_log(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned());
    }));
    let clients_made = || {
        log.lock()
            .unwrap()
            .iter()
            .filter(|line| line.starts_with("= era: 2026-07-28"))
            .count()
    };
    let echo = |n: u32| {
        let caller = &caller;
        async move {
            call(
                caller,
                "echo",
                &format!("call-{n}"),
                json!({"message": "hi"}),
            )
            .await
        }
    };
    for n in 0..3 {
        assert_succeeded(&echo(n).await);
    }
    assert_eq!(clients_made(), 1, "{:#?}", log.lock().unwrap());
    // The server takes only the first token: a kept client still sending it would succeed.
    *tokens.0.lock().unwrap() = "tok-two".to_owned();
    let refused = echo(3).await;
    assert_failed(&refused, "unauthorized", false);
    assert_eq!(clients_made(), 2);
    *tokens.0.lock().unwrap() = "tok-one".to_owned();
    assert_succeeded(&echo(4).await);
    assert_succeeded(&echo(5).await);
    assert_eq!(clients_made(), 3);
    // Each binding keeps its own client; one whose call failed (cancelled) is not kept.
    let report = |call_id: &'static str, cancel: Option<CancelToken>| {
        let caller = &caller;
        async move {
            caller
                .call(
                    "progress_report",
                    &context(call_id),
                    &json!({"steps": 1, "delay_ms": 300}),
                    |_| {},
                    cancel,
                )
                .await
        }
    };
    assert_succeeded(&report("call-6", None).await);
    assert_eq!(clients_made(), 4);
    let cancel = CancelToken::default();
    cancel.cancel();
    let cancelled = report("call-7", Some(cancel)).await;
    assert!(cancelled.is_error(), "{cancelled:?}");
    assert_eq!(clients_made(), 4, "the cancelled call used the kept client");
    assert_succeeded(&report("call-8", None).await);
    assert_eq!(clients_made(), 5);
    assert_succeeded(&echo(9).await);
    assert_eq!(clients_made(), 5);
}

/// A `Caller` whose every binding is one of the demo server's tools (tenant `acme`), on
/// `pool`, with its wire log collected.
fn logged_caller(
    server: &DemoServer,
    tools: &[&str],
    pool: HttpPool,
) -> (Arc<Caller>, Arc<Mutex<Vec<String>>>) {
    let bindings = tools
        .iter()
        .map(|tool| {
            let mut binding = Binding::new(*tool, *tool, Server::http(server.url()));
            binding.tenants = vec!["acme".to_owned()];
            binding.timeout_seconds = 20;
            binding
        })
        .collect();
    let mut caller = Caller::new(pool, bindings, Arc::new(FixedTokens)).expect("caller");
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = log.clone();
    caller.set_wire_log(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned());
    }));
    (Arc::new(caller), log)
}

/// `n` `echo` calls at once, each in a task of its own; every one succeeds.
async fn echo_at_once(caller: &Arc<Caller>, n: usize) {
    let calls: Vec<_> = (0..n)
        .map(|n| {
            let caller = caller.clone();
            tokio::spawn(async move {
                let id = format!("call-{n}");
                call(&caller, "echo", &id, json!({"message": "hi"})).await
            })
        })
        .collect();
    for call in calls {
        assert_succeeded(&call.await.unwrap());
    }
}

/// A burst of first calls to a modern server probes once and makes one client; with an
/// origin limit of 4 (and the patience to wait for it) the 64 calls share a few
/// connections. (A few, not 4: a request let go when another's response ended may find its
/// connection not yet back in the pool, and hyper then opens one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_first_modern_calls_makes_one_client_on_few_connections() {
    let server = DemoServer::start().await.unwrap();
    let pool = pool().with_origin_limit(4, Duration::from_secs(15));
    let (caller, log) = logged_caller(&server, &["echo"], pool);
    echo_at_once(&caller, 64).await;
    let made = log
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("= era: 2026-07-28"))
        .count();
    assert_eq!(made, 1, "{:#?}", log.lock().unwrap());
    let opened = caller.pool().connections_opened();
    assert!((1..=16).contains(&opened), "{opened} connections");
}

/// On one thread, 256 calls at once with the default limit of 16 use 16 connections: a
/// call let go when another's response ends is sent only after the task that puts that
/// response's connection back in the pool has run.
#[tokio::test(flavor = "current_thread")]
async fn a_call_let_go_by_the_origin_limit_reuses_the_connection_it_waited_for() {
    let server = DemoServer::start().await.unwrap();
    let pool = pool().with_origin_limit(16, Duration::from_secs(15));
    let (caller, _log) = logged_caller(&server, &["echo"], pool);
    echo_at_once(&caller, 256).await;
    let opened = caller.pool().connections_opened();
    assert!((1..=16).contains(&opened), "{opened} connections");
}

/// The origin limit never holds a call behind a slow one for longer than its patience: with
/// one place and a call that takes seconds in it, another call goes out (on a connection
/// of its own) and ends while the slow one still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_for_a_busy_origin_only_as_long_as_the_patience() {
    let server = DemoServer::start().await.unwrap();
    let pool = pool().with_origin_limit(1, Duration::from_millis(50));
    let (caller, _log) = logged_caller(&server, &["echo", "progress_report"], pool);
    // The era first, so that the slow call is the only request in flight.
    assert_succeeded(&call(&caller, "echo", "call-0", json!({"message": "hi"})).await);
    let (running_tx, running) = tokio::sync::oneshot::channel();
    let running_tx = Mutex::new(Some(running_tx));
    let cancel = CancelToken::default();
    let slow = {
        let caller = caller.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            caller
                .call(
                    "progress_report",
                    &context("call-slow"),
                    &json!({"steps": 20, "delay_ms": 1000}),
                    move |_| {
                        if let Some(tx) = running_tx.lock().unwrap().take() {
                            let _ = tx.send(());
                        }
                    },
                    Some(cancel),
                )
                .await
        })
    };
    // Its first progress has arrived: it holds the origin's one place.
    running.await.expect("the slow call reported progress");
    let quick = call(&caller, "echo", "call-quick", json!({"message": "hi"})).await;
    assert_succeeded(&quick);
    assert!(!slow.is_finished(), "the slow call ended first");
    cancel.cancel();
    let slow = slow.await.unwrap();
    assert!(slow.is_error(), "{slow:?}");
    assert!(caller.pool().connections_opened() >= 2);
}

/// `n` calls at once through `caller` of the demo server's `progress_report`, each held on the
/// server for eight seconds (long enough for every call to be in flight, in a debug build on
/// a busy machine, before the first one ends), each in a task of its own; their results.
async fn waiting_calls_at_once(caller: &Arc<Caller>, n: usize) -> Vec<ToolResult> {
    let calls: Vec<_> = (0..n)
        .map(|n| {
            let caller = caller.clone();
            tokio::spawn(async move {
                let id = format!("call-{n}");
                let arguments = json!({"steps": 8, "delay_ms": 1000});
                call(&caller, "progress_report", &id, arguments).await
            })
        })
        .collect();
    let mut results = Vec::with_capacity(n);
    for call in calls {
        results.push(call.await.unwrap());
    }
    results
}

/// Past 1024 calls in flight to one (stateless) server: a caller with the default options
/// refuses the calls past the session's limit before sending them (`refused`, a known
/// outcome), and one whose `max_pending_requests` is raised serves every call. The pool lets
/// 1000 requests out at once and holds the rest until one ends (the demo server serves at
/// most 1024 connections: calls past that would wait for its idle ones to close), so more
/// than 1024 calls are in flight, and each phase has a server of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_keeps_more_than_1024_calls_in_flight_once_its_limit_is_raised() {
    const CALLS: usize = 1100;
    let caller_on = |server: &DemoServer, options: Option<CallerOptions>| {
        let mut binding = Binding::new(
            "progress_report",
            "progress_report",
            Server::http(server.url()),
        );
        binding.tenants = vec!["acme".to_owned()];
        binding.timeout_seconds = 60;
        let pool = pool().with_origin_limit(1000, Duration::from_secs(60));
        let mut caller = Caller::new(pool, vec![binding], Arc::new(FixedTokens)).expect("caller");
        if let Some(options) = options {
            caller.set_options(options);
        }
        Arc::new(caller)
    };

    let server = DemoServer::start().await.unwrap();
    let default = caller_on(&server, None);
    assert_eq!(default.options().max_pending_requests, 1024);
    let results = waiting_calls_at_once(&default, CALLS).await;
    let refused: Vec<&ToolResult> = results.iter().filter(|r| r.is_error()).collect();
    assert!(!refused.is_empty(), "no call past 1024 was refused");
    for result in &refused {
        assert_failed(result, "refused", false);
        let message = result.error_message().unwrap_or_default();
        assert!(
            message.contains("1024 requests are already in flight"),
            "{result:?}"
        );
    }
    assert!(
        CALLS - refused.len() >= 1024,
        "{} of {CALLS} calls refused",
        refused.len()
    );
    drop(default);

    let server = DemoServer::start().await.unwrap();
    let mut options = CallerOptions::default();
    options.max_pending_requests = 2048;
    let raised = caller_on(&server, Some(options));
    let results = waiting_calls_at_once(&raised, CALLS).await;
    for result in &results {
        assert_succeeded(result);
    }
}
