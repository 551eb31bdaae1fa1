//! Protocol 2026-07-28 against scripted servers: what real servers cannot be made to do on
//! demand (a stale header once, a -32022 after discovery, a stream broken before the answer,
//! endless input_required, unknown result types, cache hints). Real 2026-07-28 servers are in
//! `interop`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpwire::ErrorKind;
use mcpwire::auth::Secret;
use mcpwire::binding::config::Server;
use mcpwire::binding::discover::{Discovery, discover as discover_tools};
use mcpwire::client::{CallOptions, Client, ClientOptions, InputFuture, InputHandler};
use mcpwire::mcp::InputRequest;
use mcpwire::mcp::{ClientCapabilities, JsonObject, ProtocolVersion};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::{Value, json};

use crate::support::fault_server::{Body, FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::rpc_result;

pub(crate) fn discover(req: &Recorded) -> Reply {
    Reply::json(
        200,
        rpc_result(
            req,
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}}),
        ),
    )
}

fn tools(req: &Recorded, ttl_ms: u64, scope: &str) -> Reply {
    Reply::json(
        200,
        rpc_result(
            req,
            json!({"tools": [{"name": "where", "inputSchema": {"type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}],
                "resultType": "complete", "ttlMs": ttl_ms, "cacheScope": scope}),
        ),
    )
}

fn text(req: &Recorded, text: &str) -> Reply {
    Reply::json(
        200,
        rpc_result(
            req,
            json!({"content": [{"type": "text", "text": text}], "resultType": "complete"}),
        ),
    )
}

/// A 2026-07-28 server: discover answered, the rest left to `rest`.
async fn modern_server(rest: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> FaultServer {
    FaultServer::start(move |req| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => discover(req),
        _ => rest(req),
    })
    .await
}

fn config(server: &FaultServer, token: &str) -> HttpConfig {
    let mut config = HttpConfig::new(&server.url("/mcp")).expect("config");
    config.bearer_token = Some(Secret::new(token));
    config
}

async fn connect(pool: &HttpPool, server: &FaultServer, options: ClientOptions) -> Client {
    let client = Client::connect_http(pool, config(server, "tok-a"), options)
        .await
        .expect("connect");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    client
}

fn pool() -> HttpPool {
    HttpPool::new(&TlsOptions::default()).expect("pool")
}

fn posts(server: &FaultServer, method: &str) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some(method))
        .collect()
}

fn args(value: Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_param_header_relists_the_tools_and_retries_once() {
    // The first call goes out before any listing: no Mcp-Param-Region, so -32020.
    let server = modern_server(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => tools(req, 0, "private"),
        Some("tools/call") => match req.header("mcp-param-region") {
            Some("eu") => text(req, "eu it is"),
            _ => Reply::json(
                400,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32020,
                    "message": "Mcp-Param-Region is missing"}}),
            ),
        },
        _ => Reply::empty(404),
    })
    .await;
    let client = connect(&pool(), &server, ClientOptions::default()).await;
    let result = client
        .call_tool(
            "where",
            args(json!({"region": "eu"})),
            CallOptions::default(),
        )
        .await
        .expect("the retry succeeds");
    assert_eq!(result.content[0].as_text().unwrap(), "eu it is");
    let calls = posts(&server, "tools/call");
    assert_eq!(calls.len(), 2);
    assert_eq!(posts(&server, "tools/list").len(), 1);
    assert_ne!(calls[0].jsonrpc_id(), calls[1].jsonrpc_id(), "a new id");
    assert_eq!(calls[1].header("mcp-name"), Some("where"));
    assert_eq!(calls[1].header("mcp-method"), Some("tools/call"));

    // A server that keeps refusing: one retry, then the error, known to have not run.
    let stubborn = modern_server(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => tools(req, 0, "private"),
        _ => Reply::json(
            400,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32020, "message": "no"}}),
        ),
    })
    .await;
    let client = connect(&pool(), &stubborn, ClientOptions::default()).await;
    let error = client
        .call_tool(
            "where",
            args(json!({"region": "eu"})),
            CallOptions::default(),
        )
        .await
        .expect_err("refused twice");
    assert_eq!(error.kind(), ErrorKind::ServerError);
    assert!(!error.outcome_unknown(), "{error}");
    assert_eq!(posts(&stubborn, "tools/call").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_stream_resends_a_listing_once_and_never_a_call() {
    let lists = Arc::new(AtomicUsize::new(0));
    let seen = lists.clone();
    let server = modern_server(move |req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") if seen.fetch_add(1, Ordering::SeqCst) == 0 => {
            Reply::sse_steps(200, vec![Step::text(": working\n\n"), Step::Drop])
        }
        Some("tools/list") => tools(req, 0, "private"),
        Some("tools/call") => Reply::sse_steps(200, vec![Step::text(": working\n\n"), Step::Drop]),
        _ => Reply::empty(404),
    })
    .await;
    let client = connect(&pool(), &server, ClientOptions::default()).await;
    let listed = client.list_tools().await.expect("the second try");
    assert_eq!(listed.len(), 1);
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    let error = client
        .call_tool("where", None, CallOptions::default())
        .await
        .expect_err("the stream broke");
    assert_eq!(error.kind(), ErrorKind::ConnectionLost);
    assert!(error.outcome_unknown(), "{error}");
    assert_eq!(posts(&server, "tools/call").len(), 1, "at most once");
}

/// Accepts every elicitation and counts the requests it answered.
pub(crate) struct Accept(pub(crate) AtomicUsize);

impl InputHandler for Accept {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(JsonObject::new()),
            ..ClientCapabilities::default()
        }
    }

    fn answer(&self, request: InputRequest) -> InputFuture {
        self.0.fetch_add(1, Ordering::SeqCst);
        let method = request.method;
        Box::pin(async move {
            assert_eq!(method, "elicitation/create");
            Ok(json!({"action": "accept", "content": {"ok": true}}))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_rounds_echo_the_state_and_are_bounded() {
    // The state holds escapes a re-serialisation would change.
    const STATE: &str = r#""{\"n\":\"\u00e9\/1\"}""#;
    let server = modern_server(|req| {
        let body = req.json().unwrap();
        match req.jsonrpc_method().as_deref() {
            Some("tools/call") if body["params"]["name"] == "forever" => Reply::json(
                200,
                rpc_result(req, json!({"resultType": "input_required", "requestState": "again"})),
            ),
            Some("tools/call") if body["params"].get("inputResponses").is_none() => {
                let text = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"input_required","inputRequests":{{"c":{{"method":"elicitation/create","params":{{"message":"ok?","requestedSchema":{{"type":"object"}}}}}}}},"requestState":{STATE}}}}}"#,
                    req.jsonrpc_id().unwrap()
                );
                Reply::sse(200, &[&format!("event: message\ndata: {text}\n\n")])
            }
            Some("tools/call") => {
                let raw = String::from_utf8_lossy(&req.body).into_owned();
                assert!(raw.contains(&format!(r#""requestState":{STATE}"#)), "{raw}");
                assert_eq!(body["params"]["inputResponses"]["c"]["action"], "accept");
                assert_eq!(
                    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
                    json!({"elicitation": {}})
                );
                text(req, "confirmed")
            }
            _ => Reply::empty(404),
        }
    })
    .await;
    let handler = Arc::new(Accept(AtomicUsize::new(0)));
    let mut options = ClientOptions::default();
    options.input_handler = Some(handler.clone());
    options.max_input_rounds = 3;
    let client = connect(&pool(), &server, options).await;
    let result = client
        .call_tool("confirm", None, CallOptions::default())
        .await
        .expect("confirmed");
    assert_eq!(result.content[0].as_text().unwrap(), "confirmed");
    assert_eq!(handler.0.load(Ordering::SeqCst), 1);
    let calls = posts(&server, "tools/call");
    assert_ne!(calls[0].jsonrpc_id(), calls[1].jsonrpc_id());
    // A server that never finishes: three rounds, then an error.
    let error = client
        .call_tool("forever", None, CallOptions::default())
        .await
        .expect_err("bounded");
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert_eq!(posts(&server, "tools/call").len(), 2 + 4);
    // With no handler the call fails at once: the server needs a person.
    let bare = connect(&pool(), &server, ClientOptions::default()).await;
    let error = bare
        .call_tool("confirm", None, CallOptions::default())
        .await
        .expect_err("no handler");
    assert_eq!(error.kind(), ErrorKind::ElicitationRequested, "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_result_type_is_an_invalid_result() {
    let server = modern_server(|req| {
        Reply::json(
            200,
            rpc_result(req, json!({"resultType": "task", "taskId": "t1"})),
        )
    })
    .await;
    let client = connect(&pool(), &server, ClientOptions::default()).await;
    let error = client
        .call_tool("t", None, CallOptions::default())
        .await
        .expect_err("unknown type");
    assert_eq!(error.kind(), ErrorKind::Protocol);
    assert!(error.to_string().contains("task"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_32022_after_discovery_switches_revision_once() {
    let server = modern_server(|req| {
        Reply::json(
            400,
            json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(), "error": {"code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
        )
    })
    .await;
    let client = connect(&pool(), &server, ClientOptions::default()).await;
    let error = client
        .call_tool("t", None, CallOptions::default())
        .await
        .expect_err("still refused");
    assert_eq!(error.kind(), ErrorKind::ServerError);
    assert!(!error.outcome_unknown());
    assert_eq!(posts(&server, "tools/call").len(), 2, "one retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_pages_are_cached_as_their_hints_say() {
    let server = modern_server(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => tools(req, 60_000, "private"),
        _ => Reply::empty(404),
    })
    .await;
    let pool = pool();
    // Clients made with clones of these options share their list cache.
    let options = ClientOptions::default();
    let client = connect(&pool, &server, options.clone()).await;
    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(
        posts(&server, "tools/list").len(),
        1,
        "the second from the cache"
    );
    // Another client with the same credentials shares the private page; other credentials
    // do not.
    let same = connect(&pool, &server, options.clone()).await;
    same.list_tools().await.unwrap();
    assert_eq!(posts(&server, "tools/list").len(), 1);
    let other = Client::connect_http(&pool, config(&server, "tok-b"), options.clone())
        .await
        .unwrap();
    other.list_tools().await.unwrap();
    assert_eq!(posts(&server, "tools/list").len(), 2);
    // Options of their own: a cache of their own.
    let apart = connect(&pool, &server, ClientOptions::default()).await;
    apart.list_tools().await.unwrap();
    assert_eq!(posts(&server, "tools/list").len(), 3);
    assert!(!options.list_cache.is_empty());
    options.list_cache.invalidate(&server.url("/mcp"));
    assert!(options.list_cache.is_empty());

    // A zero ttl is not cached.
    let uncached = modern_server(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => tools(req, 0, "public"),
        _ => Reply::empty(404),
    })
    .await;
    let client = connect(&pool, &uncached, ClientOptions::default()).await;
    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(posts(&uncached, "tools/list").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_with_invalid_annotations_is_left_out_with_a_warning() {
    let server = modern_server(|req| {
        Reply::json(
            200,
            rpc_result(
                req,
                json!({"tools": [
                    {"name": "good", "inputSchema": {"type": "object",
                        "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
                    {"name": "bad", "inputSchema": {"type": "object",
                        "properties": {"r": {"type": "object", "x-mcp-header": "R"}}}},
                    {"name": "dup", "inputSchema": {"type": "object", "properties": {
                        "a": {"type": "string", "x-mcp-header": "X"},
                        "b": {"type": "string", "x-mcp-header": "x"}}}}
                ]}),
            ),
        )
    })
    .await;
    let warnings = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = warnings.clone();
    let mut options = ClientOptions::default();
    options.on_warning = Some(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned());
    }));
    let client = connect(&pool(), &server, options).await;
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["good"]);
    let warnings = warnings.lock().unwrap().clone();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("\"bad\""), "{warnings:?}");
    assert!(warnings[1].contains("\"dup\""), "{warnings:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_names_every_tool_it_cannot_bind_and_binds_none() {
    let server = modern_server(|req| {
        Reply::json(
            200,
            rpc_result(
                req,
                json!({"tools": [
                    {"name": "good", "inputSchema": {"type": "object"}},
                    {"name": "good.too", "inputSchema": {"type": "object"}},
                    {"name": "good_too", "inputSchema": {"type": "object"}},
                    {"name": "bad", "inputSchema": {"type": "object",
                        "properties": {"r": {"type": "object", "x-mcp-header": "R"}}}},
                    {"name": "twin", "inputSchema": {"type": "object"}},
                    {"name": "twin", "inputSchema": {"type": "object"}}
                ]}),
            ),
        )
    })
    .await;
    let names = ["good", "bad", "missing", "twin", "good.too", "good_too"];
    let discovery = Discovery::new(
        Server::http(server.url("/mcp")),
        "local",
        names.iter().map(|n| (*n).to_owned()).collect(),
    );
    let error = discover_tools(&pool(), &discovery)
        .await
        .expect_err("four of the six cannot be bound");
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    let text = error.to_string();
    for expected in [
        "4 of the 6 named cannot be bound",
        "\"bad\" is on the server, but a 2026-07-28 client must leave it out: \
         /properties/r/x-mcp-header: `x-mcp-header` is on a property whose type is not string, integer or \
         boolean",
        "\"missing\" is not on the server",
        "\"twin\" is listed 2 times by the server",
        "\"good_too\" would be bound as \"good_too\", as \"good.too\" is",
        "usable tools: good, good.too, good_too, twin)",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text}");
    }
    assert!(!text.contains("\"good\" "), "{text}");
    // Named twice: refused before connecting.
    let before = server.requests().len();
    let twice = Discovery::new(
        Server::http(server.url("/mcp")),
        "local",
        vec!["good".into(), "good".into()],
    );
    let error = discover_tools(&pool(), &twice)
        .await
        .expect_err("named twice");
    assert!(
        error.to_string().contains("\"good\" is named twice"),
        "{error}"
    );
    assert_eq!(server.requests().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_call_carries_headers_from_the_binding_schema_without_a_listing() {
    let server =
        modern_server(|req| text(req, req.header("mcp-param-region").unwrap_or("none"))).await;
    let client = connect(&pool(), &server, ClientOptions::default()).await;
    let mut options = CallOptions::default();
    options.input_schema = Some(
        json!({"type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}})
        .into(),
    );
    let result = client
        .call_tool("where", args(json!({"region": "Zürich"})), options)
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text().unwrap(),
        "=?base64?WsO8cmljaA==?="
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_delivers_the_acknowledgement_and_list_changes_and_drops_cached_pages() {
    let server = modern_server(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => tools(req, 60_000, "public"),
        Some("subscriptions/listen") => {
            let id = req.jsonrpc_id().unwrap();
            let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"toolsListChanged": true},
                    "_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
            let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
            let end = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
                "_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
            Reply::sse_steps(
                200,
                vec![
                    Step::text(&crate::support::mcp_script::sse_event(&ack)),
                    Step::text(": keepalive\n\n"),
                    Step::text(&crate::support::mcp_script::sse_event(&changed)),
                    Step::text(&crate::support::mcp_script::sse_event(&end)),
                ],
            )
        }
        _ => Reply::empty(404),
    })
    .await;
    let pool = pool();
    let (sink, mut received) = tokio::sync::mpsc::channel(8);
    let mut options = ClientOptions::default();
    options.notifications = Some(sink);
    let lists = options.list_cache.clone();
    let client = connect(&pool, &server, options).await;
    client.list_tools().await.unwrap();
    assert!(!lists.is_empty());
    client
        .listen(
            json!({"toolsListChanged": true}),
            std::time::Duration::from_secs(5),
            None,
        )
        .await
        .expect("the server ended the stream");
    let first = received.recv().await.unwrap();
    assert_eq!(first.method, "notifications/subscriptions/acknowledged");
    let second = received.recv().await.unwrap();
    assert_eq!(second.method, "notifications/tools/list_changed");
    assert!(lists.is_empty(), "the change dropped the cached page");
    let listen = &posts(&server, "subscriptions/listen")[0];
    assert_eq!(listen.header("mcp-method"), Some("subscriptions/listen"));
    assert_eq!(
        listen.json().unwrap()["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_first_connections_to_one_endpoint_probes_once() {
    // The probe's answer takes a while, so the others ask while it is in flight.
    let server = FaultServer::start(|req| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => {
            let steps = match discover(req).body {
                Body::Full(bytes) => vec![Step::delay_ms(200), Step::bytes(bytes)],
                _ => unreachable!("discover answers with a full body"),
            };
            Reply::chunked(200, steps).with_header("content-type", "application/json")
        }
        _ => Reply::empty(404),
    })
    .await;
    let pool = pool();
    // The verdict is shared by the clients made with clones of one `ClientOptions`.
    let options = ClientOptions::default();
    let mut connects = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (pool, config, options) = (pool.clone(), config(&server, "tok-a"), options.clone());
        connects.spawn(async move { Client::connect_http(&pool, config, options).await });
    }
    while let Some(client) = connects.join_next().await {
        let client = client.expect("joined").expect("connected");
        assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    }
    assert_eq!(posts(&server, "server/discover").len(), 1, "one probe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_names_its_own_tool_and_its_host() {
    // The client keeps the last tool's Mcp-Name and its origin's Host: neither may stick to
    // the next call.
    let server = modern_server(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => tools(req, 0, "private"),
        Some("tools/call") => text(req, "done"),
        _ => Reply::empty(404),
    })
    .await;
    let client = connect(&pool(), &server, ClientOptions::default()).await;
    for tool in ["first", "second", "second", "first", "caf\u{e9}"] {
        client
            .call_tool(tool, None, CallOptions::default())
            .await
            .expect("the call succeeds");
    }
    let calls = posts(&server, "tools/call");
    let names: Vec<_> = calls.iter().map(|c| c.header("mcp-name")).collect();
    assert_eq!(
        names,
        [
            Some("first"),
            Some("second"),
            Some("second"),
            Some("first"),
            Some("=?base64?Y2Fmw6k=?="),
        ]
    );
    let host = server.addr().to_string();
    for request in server.requests() {
        assert_eq!(request.header_all("host"), [host.as_str()]);
    }
}
