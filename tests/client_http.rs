//! The Streamable HTTP client against the in-process fault server: one test per wire rule.
//! Real servers are covered by `interop`; these are the cases real servers cannot be made to
//! produce on demand.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpwire::ErrorKind;
use mcpwire::auth::Secret;
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::mcp::ContentBlock;
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::{Value, json};

use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::{initialize_reply, mcp_server, rpc_result, sse_event};

const TOKEN: &str = "tok-SECRET-9f8e7d";
const WAIT: Duration = Duration::from_secs(10);

fn pool() -> HttpPool {
    HttpPool::new(&TlsOptions::default()).expect("pool")
}

fn config(url: &str) -> HttpConfig {
    let mut config = HttpConfig::new(url).expect("config");
    config.bearer_token = Some(Secret::new(TOKEN));
    config
}

fn text_result(req: &Recorded, text: &str) -> Value {
    rpc_result(req, json!({"content": [{"type": "text", "text": text}]}))
}

async fn connect(server: &FaultServer) -> Client {
    Client::connect_http(
        &pool(),
        config(&server.url("/mcp")),
        ClientOptions::default(),
    )
    .await
    .expect("connect")
}

fn call_options() -> CallOptions {
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(20);
    options
}

fn posts_of<'a>(requests: &'a [Recorded], method: &str) -> Vec<&'a Recorded> {
    requests
        .iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some(method))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_sends_the_right_headers_and_ends_with_delete() {
    let server = mcp_server(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => Reply::sse(
            200,
            &[
                "id: prime-1\ndata: \n\n",
                &sse_event(&rpc_result(
                    req,
                    json!({"tools": [
                    {"name": "echo", "inputSchema": {"type": "object"}}]}),
                )),
            ],
        ),
        _ => Reply::json(200, text_result(req, "hello")),
    })
    .await;
    let client = connect(&server).await;
    assert_eq!(client.session_id(), Some("sess-1"));
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "echo");
    let result = client
        .call_tool("echo", None, call_options())
        .await
        .unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "hello"));
    client.close().await;
    let requests = server.wait_for_requests(6, WAIT).await;
    // The era probe first, with the 2026-07-28 headers; this 2025-era server refuses it.
    let probe = &requests[0];
    assert_eq!(probe.jsonrpc_method().as_deref(), Some("server/discover"));
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(probe.header("mcp-method"), Some("server/discover"));
    let init = posts_of(&requests, "initialize")[0];
    assert_eq!(init.index, 1);
    assert_eq!(
        init.header("mcp-method"),
        None,
        "2025-era requests as before"
    );
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    for later in &requests[2..] {
        assert_eq!(later.header("mcp-session-id"), Some("sess-1"), "{later:?}");
        assert_eq!(later.header("mcp-protocol-version"), Some("2025-11-25"));
        assert_eq!(
            later.header("authorization"),
            Some(&*format!("Bearer {TOKEN}"))
        );
    }
    assert_eq!(
        posts_of(&requests, "notifications/initialized").len(),
        1,
        "initialized is sent once"
    );
    let delete = requests
        .iter()
        .find(|r| r.method == "DELETE")
        .expect("DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("sess-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_parameters_on_the_media_type() {
    let server = mcp_server(|req| {
        let token = req.json().unwrap()["params"]["_meta"]["progressToken"].clone();
        let progress = |n: u32| {
            sse_event(
                &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": n, "total": 2}}),
            )
        };
        Reply::sse(
            200,
            &[
                &progress(1),
                &progress(2),
                &sse_event(&text_result(req, "done")),
            ],
        )
        .with_header("content-type", "Text/Event-Stream; charset=utf-8")
    })
    .await;
    let client = connect(&server).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut options = call_options();
    options.on_progress = Some(Box::new(move |p| sink.lock().unwrap().push(p.progress)));
    let result = client.call_tool("t", None, options).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "done"));
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0]);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_names_the_challenge_and_nothing_was_called() {
    let server = FaultServer::start(|_| {
        Reply::json(401, json!({"error": "invalid_token"})).with_header(
            "www-authenticate",
            r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", scope="mcp:tools""#,
        )
    })
    .await;
    let error = Client::connect_http(
        &pool(),
        config(&server.url("/mcp")),
        ClientOptions::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert!(error.to_string().contains("resource_metadata"), "{error}");
    assert!(error.to_string().contains("mcp:tools"), "{error}");
    assert!(!error.outcome_unknown());
    assert!(!error.to_string().contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_on_a_call_means_the_session_expired() {
    let server = mcp_server(|_| {
        Reply::json(
            404,
            json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": -32600, "message": "Session not found"}}),
        )
    })
    .await;
    let client = connect(&server).await;
    let error = client
        .call_tool("t", None, call_options())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::SessionExpired);
    assert!(
        !error.outcome_unknown(),
        "the server refused before calling"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_mcp_replies_to_a_request_fail_at_once() {
    for (reply, unknown) in [
        (Reply::empty(202), true),
        (
            Reply::text(200, "<html>hello</html>").with_header("content-type", "text/html"),
            true,
        ),
        (Reply::json(500, json!({"oops": true})), true),
        (Reply::json(400, json!({"bad": true})), false),
    ] {
        let reply = Arc::new(reply);
        let server = mcp_server(move |_| (*reply).clone()).await;
        let client = connect(&server).await;
        let started = Instant::now();
        let error = client
            .call_tool("t", None, call_options())
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "settled at once"
        );
        assert_eq!(error.outcome_unknown(), unknown, "{error}");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_not_followed_and_the_token_stays_home() {
    let elsewhere = FaultServer::start(|req| initialize_reply(req, "2025-11-25")).await;
    let target = elsewhere.url("/mcp");
    let server = FaultServer::start(move |_| Reply::redirect(307, &target)).await;
    let error = Client::connect_http(
        &pool(),
        config(&server.url("/mcp")),
        ClientOptions::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Http);
    assert!(error.to_string().contains("redirect"), "{error}");
    assert!(
        elsewhere.requests().is_empty(),
        "nothing may reach the other origin"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_means_never_sent() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let error = Client::connect_http(
        &pool(),
        config(&format!("http://127.0.0.1:{port}/mcp")),
        ClientOptions::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Connect);
    assert!(!error.outcome_unknown());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_dropped_without_event_ids_settles_at_once() {
    let server = mcp_server(|req| {
        let token = req.json().unwrap()["params"]["_meta"]["progressToken"].clone();
        let progress = sse_event(
            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1}}),
        );
        Reply::sse_steps(200, vec![Step::text(&progress), Step::Drop])
    })
    .await;
    let client = connect(&server).await;
    let started = Instant::now();
    let error = client
        .call_tool("t", None, call_options())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(error.kind(), ErrorKind::ConnectionLost);
    assert!(error.outcome_unknown());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_is_resumed_with_last_event_id_after_retry() {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let log = arrivals.clone();
    let server = mcp_server(move |req| {
        log.lock()
            .unwrap()
            .push((req.method.clone(), Instant::now()));
        if req.method == "GET" {
            // Ids: the era probe 0, initialize 1, the call 2.
            let response = json!({"jsonrpc": "2.0", "id": 2,
                "result": {"content": [{"type": "text", "text": "resumed"}]}});
            return Reply::sse(200, &[&format!("id: e2\n{}", sse_event(&response))]);
        }
        Reply::sse_steps(
            200,
            vec![Step::text("id: e1\nretry: 300\ndata: \n\n"), Step::Drop],
        )
    })
    .await;
    let client = connect(&server).await;
    let result = client.call_tool("t", None, call_options()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "resumed"));
    let requests = server.requests();
    let get = requests.iter().find(|r| r.method == "GET").expect("a GET");
    assert_eq!(get.header("last-event-id"), Some("e1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("sess-1"));
    let arrivals = arrivals.lock().unwrap().clone();
    let post = arrivals.iter().rev().find(|(m, _)| m == "POST").unwrap().1;
    let get = arrivals.iter().find(|(m, _)| m == "GET").unwrap().1;
    assert!(
        get - post >= Duration::from_millis(300),
        "waited {:?}",
        get - post
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stream_is_opt_in_reopened_with_last_event_id_and_ended_by_405() {
    let gets = Arc::new(Mutex::new(0));
    let seen = gets.clone();
    let server = mcp_server(move |req| {
        if req.method != "GET" {
            return Reply::empty(404);
        }
        let mut gets = seen.lock().unwrap();
        *gets += 1;
        let log = |text: &str| {
            sse_event(&json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": text}}))
        };
        match *gets {
            1 => Reply::sse(200, &[&format!("id: s1\nretry: 100\n{}", log("first"))]),
            2 if req.header("last-event-id") == Some("s1") => {
                Reply::sse(200, &[&format!("id: s2\n{}", log("second"))])
            }
            2 => Reply::text(400, "the second GET must carry Last-Event-ID: s1"),
            _ => Reply::empty(405),
        }
    })
    .await;

    // Off by default: a session for calls alone never opens it.
    let client = connect(&server).await;
    client.close().await;
    assert_eq!(*gets.lock().unwrap(), 0, "no GET without server_stream");

    let (notifications, mut received) = tokio::sync::mpsc::channel(8);
    let mut config = config(&server.url("/mcp"));
    config.server_stream = true;
    let mut options = ClientOptions::default();
    options.notifications = Some(notifications);
    let client = Client::connect_http(&pool(), config, options)
        .await
        .expect("connect");
    let mut logs = Vec::new();
    while logs.len() < 2 {
        let notification = tokio::time::timeout(WAIT, received.recv())
            .await
            .expect("a log message from the server stream")
            .expect("the channel");
        let params: Value =
            serde_json::from_str(notification.params.as_ref().expect("params").get()).unwrap();
        logs.push(params["data"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(logs, ["first", "second"]);
    // The third GET is answered 405: the server offers no more, and none is tried after it.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(*gets.lock().unwrap(), 3);
    let requests = server.requests();
    let get = requests.iter().find(|r| r.method == "GET").expect("a GET");
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("sess-1"));
    assert_eq!(
        get.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_sends_notifications_cancelled() {
    let server =
        mcp_server(|_| Reply::sse_steps(200, vec![Step::text(": open\n\n"), Step::Hang])).await;
    let client = connect(&server).await;
    let mut options = CallOptions::default();
    options.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let error = client.call_tool("t", None, options).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert!(error.outcome_unknown());
    assert!(started.elapsed() < Duration::from_secs(3));
    // The probe, initialize, initialized, the call, its cancellation.
    let requests = server.wait_for_requests(5, WAIT).await;
    let call = posts_of(&requests, "tools/call")[0].json().unwrap();
    let cancel = posts_of(&requests, "notifications/cancelled")[0]
        .json()
        .unwrap();
    assert_eq!(cancel["params"]["requestId"], call["id"]);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_on_a_stream_are_answered_by_post() {
    let server = mcp_server(|req| {
        let ping = json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"});
        let sampling = json!({"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 5}});
        Reply::sse_steps(
            200,
            vec![
                Step::text(&sse_event(&ping)),
                Step::text(&sse_event(&sampling)),
                Step::delay_ms(300),
                Step::text(&sse_event(&text_result(req, "still fine"))),
            ],
        )
    })
    .await;
    let client = connect(&server).await;
    let result = client.call_tool("t", None, call_options()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "still fine"));
    let requests = server.wait_for_requests(5, WAIT).await;
    let answers: Vec<Value> = requests
        .iter()
        .filter_map(Recorded::json)
        .filter(|m| m.get("method").is_none())
        .collect();
    let ping = answers
        .iter()
        .find(|m| m["id"] == "s1")
        .expect("ping answered");
    assert_eq!(ping["result"], json!({}));
    let sampling = answers
        .iter()
        .find(|m| m["id"] == "s2")
        .expect("sampling answered");
    assert_eq!(sampling["error"]["code"], -32601);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_ends_the_call_with_an_unknown_outcome() {
    let server = mcp_server(|_| {
        let elicit = json!({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create",
            "params": {"message": "Approve?", "requestedSchema": {"type": "object", "properties": {}}}});
        Reply::sse_steps(200, vec![Step::text(&sse_event(&elicit)), Step::Hang])
    })
    .await;
    let client = connect(&server).await;
    let error = client
        .call_tool("t", None, call_options())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ElicitationRequested);
    assert!(error.outcome_unknown());
    let requests = server.wait_for_requests(5, WAIT).await;
    assert_eq!(posts_of(&requests, "notifications/cancelled").len(), 1);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_output_limit_is_enforced_while_streaming() {
    let server = mcp_server(|_| {
        Reply::sse_steps(
            200,
            vec![
                Step::text("event: message\ndata: "),
                Step::Repeat {
                    bytes: vec![b'x'; 64 * 1024],
                    every: Duration::ZERO,
                    max_bytes: 50 * 1024 * 1024,
                },
            ],
        )
    })
    .await;
    let client = connect(&server).await;
    let mut options = call_options();
    options.max_response_bytes = Some(1024 * 1024);
    let error = client.call_tool("t", None, options).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::LimitExceeded);
    assert!(error.outcome_unknown());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_downgrade_and_unsupported_ones_are_refused() {
    let server = FaultServer::start(|req| match req.jsonrpc_method().as_deref() {
        Some("initialize") => initialize_reply(req, "2025-03-26"),
        Some("tools/list") => Reply::json(200, rpc_result(req, json!({"tools": []}))),
        _ => Reply::empty(202),
    })
    .await;
    let client = connect(&server).await;
    assert_eq!(client.protocol_version().as_str(), "2025-03-26");
    client.list_tools().await.unwrap();
    let list = posts_of(&server.requests(), "tools/list")[0].clone();
    assert_eq!(list.header("mcp-protocol-version"), Some("2025-03-26"));
    client.close().await;

    let server = FaultServer::start(|req| initialize_reply(req, "2024-10-07")).await;
    let error = Client::connect_http(
        &pool(),
        config(&server.url("/mcp")),
        ClientOptions::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnsupportedVersion);
    assert!(error.to_string().contains("2024-10-07"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pagination_follows_cursors_and_stops_a_repeating_one() {
    let server = mcp_server(|req| {
        let cursor = req.json().unwrap()["params"]["cursor"].clone();
        let (name, next) = match cursor.as_str() {
            None => ("a", json!("page-2")),
            Some("page-2") => ("b", json!("page-3")),
            _ => ("c", Value::Null),
        };
        let mut page = json!({"tools": [{"name": name, "inputSchema": {"type": "object"}}]});
        if !next.is_null() {
            page["nextCursor"] = next;
        }
        Reply::json(200, rpc_result(req, page))
    })
    .await;
    let client = connect(&server).await;
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    client.close().await;

    let looping = server_with_repeating_cursor().await;
    let client = connect(&looping).await;
    let error = client.list_tools().await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Protocol);
    assert!(error.to_string().contains("repeated the cursor"), "{error}");
    client.close().await;
}

async fn server_with_repeating_cursor() -> FaultServer {
    mcp_server(|req| {
        Reply::json(
            200,
            rpc_result(req, json!({"tools": [], "nextCursor": "same"})),
        )
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_events_sharing_a_frame_with_the_endpoint_event_are_not_lost() {
    // The endpoint event arrives after another event in the same write, and the initialize
    // response shares the next write with nothing after it: both must be taken from the
    // decoder, not left waiting for a frame that never comes.
    let server = FaultServer::start(|req| match (req.method.as_str(), req.path.as_str()) {
        ("POST", "/sse") => Reply::empty(405),
        ("GET", "/sse") => {
            let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "hello"}});
            // The era probe took id 0; initialize keeps the id it was first sent with.
            let init = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2024-11-05",
                "capabilities": {}, "serverInfo": {"name": "legacy", "version": "1"}}});
            Reply::sse_steps(
                200,
                vec![
                    Step::text(&format!(
                        "{}event: endpoint\ndata: messages?sessionId=7\n\n",
                        sse_event(&log)
                    )),
                    Step::delay_ms(300),
                    Step::text(&format!("{}: trailing comment\n", sse_event(&init))),
                    Step::Hang,
                ],
            )
        }
        _ => Reply::empty(202),
    })
    .await;
    let pool = pool();
    let connect =
        Client::connect_http(&pool, config(&server.url("/sse")), ClientOptions::default());
    let client = tokio::time::timeout(WAIT, connect)
        .await
        .expect("connect must not wait for another frame")
        .expect("legacy connect");
    assert_eq!(client.protocol_version().as_str(), "2024-11-05");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_http_sse_servers_are_reached_through_their_endpoint_event() {
    // The 2024-11-05 transport: POST to the URL is refused; a GET opens the event stream that
    // names the message endpoint and then carries every answer.
    let server = FaultServer::start(|req| match (req.method.as_str(), req.path.as_str()) {
        ("POST", "/sse") => Reply::empty(405),
        ("GET", "/sse") => {
            // The era probe took id 0; initialize keeps the id it was first sent with.
            let init = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2024-11-05",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "1"}}});
            let list = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
                {"name": "old", "inputSchema": {"type": "object"}}]}});
            Reply::sse_steps(
                200,
                vec![
                    Step::text("event: endpoint\ndata: messages?sessionId=42\n\n"),
                    Step::delay_ms(300),
                    Step::text(&sse_event(&init)),
                    Step::delay_ms(300),
                    Step::text(&sse_event(&list)),
                    Step::Hang,
                ],
            )
        }
        _ => Reply::empty(202),
    })
    .await;
    let client = Client::connect_http(
        &pool(),
        config(&server.url("/sse")),
        ClientOptions::default(),
    )
    .await
    .expect("legacy connect");
    assert_eq!(client.protocol_version().as_str(), "2024-11-05");
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "old");
    let requests = server.requests();
    let posted: Vec<_> = requests
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/messages?sessionId=42")
        .collect();
    assert!(
        posted.len() >= 3,
        "initialize, initialized, tools/list: {posted:?}"
    );
    assert!(posted.iter().all(|r| r.header("authorization").is_some()));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_with_every_default_probes_lists_and_calls() {
    let server = mcpwire::demo::DemoServer::start()
        .await
        .expect("demo server");
    let client = Client::connect(&server.url()).await.expect("connect");
    assert!(
        client.protocol_version().is_modern(),
        "the dual-era demo answers the probe"
    );
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    let arguments = serde_json::json!({"message": "hi"}).as_object().cloned();
    let result = client
        .call_tool("echo", arguments, CallOptions::default())
        .await
        .expect("tools/call");
    assert!(!result.is_error());
    client.close().await;
    // Not an endpoint: refused before anything is sent.
    let refused = Client::connect("ftp://127.0.0.1/mcp").await;
    assert_eq!(
        refused.err().map(|e| e.kind()),
        Some(mcpwire::ErrorKind::Config)
    );
}
