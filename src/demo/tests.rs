//! The demo server driven with hand-written HTTP over raw TCP, and once through the crate's
//! own client.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::tools::{TINY_PNG, base64, cursor_for, offset_of, weather_report};
use super::{Config, DemoOptions, DemoServer, http_date, is_loopback_authority, lock, now};

/// Every read in these tests gives up after this long.
pub(super) const PATIENCE: Duration = Duration::from_secs(10);

pub(super) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// The demo server's tools, in the order `tools/list` gives them.
pub(super) const DEMO_TOOLS_IN_ORDER: [&str; 9] = [
    "progress_report",
    "tiny_image",
    "weather",
    "echo",
    "fail",
    "progress_burst",
    "big_text",
    "region_echo",
    "confirm_delete",
];

/// A parsed response.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Reply {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// The JSON of every SSE event in the body.
    pub(super) fn events(&self) -> Vec<Value> {
        assert_eq!(
            self.header("content-type"),
            Some("text/event-stream"),
            "{self:?}"
        );
        sse_events(&self.body)
    }

    pub(super) fn error_code(&self) -> i64 {
        self.json()["error"]["code"]
            .as_i64()
            .expect("an error code")
    }
}

fn sse_events(bytes: &[u8]) -> Vec<Value> {
    let mut decoder = crate::sse::Decoder::new(crate::sse::Limits::default());
    decoder.push(bytes);
    let mut events = Vec::new();
    while let Some(event) = decoder.next_event().expect("valid SSE") {
        assert_eq!(event.event_type(), "message");
        events.push(serde_json::from_str(event.data()).expect("JSON data"));
    }
    events
}

/// A raw HTTP/1.1 client on one connection.
pub(super) struct Raw {
    stream: TcpStream,
    buf: Vec<u8>,
    host: String,
}

impl Raw {
    pub(super) async fn connect(server: &DemoServer) -> Raw {
        Raw {
            stream: TcpStream::connect(server.addr()).await.expect("connect"),
            buf: Vec::new(),
            host: server.addr().to_string(),
        }
    }

    async fn write(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Sends a request with `Host` and `Content-Length` added, and reads the response.
    pub(super) async fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        self.send(method, path, headers, body).await;
        self.response().await
    }

    pub(super) async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) {
        let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host);
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        self.write(text.as_bytes()).await;
    }

    /// Posts a JSON-RPC text with the headers a conforming client sends.
    pub(super) async fn post(&mut self, session: Option<&str>, body: &str) -> Reply {
        self.send_post(session, body).await;
        self.response().await
    }

    async fn send_post(&mut self, session: Option<&str>, body: &str) {
        let mut headers = vec![
            ("Accept", ACCEPT_BOTH),
            ("Content-Type", "application/json"),
        ];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        self.send("POST", "/mcp", &headers, body).await;
    }

    async fn fill(&mut self) -> usize {
        let mut scratch = [0u8; 8192];
        let n = timeout(PATIENCE, self.stream.read(&mut scratch))
            .await
            .expect("the server answers in time")
            .expect("read");
        self.buf.extend_from_slice(&scratch[..n]);
        n
    }

    /// Reads a status line and header fields.
    async fn head(&mut self) -> (u16, Vec<(String, String)>) {
        loop {
            let mut slots = [httparse::EMPTY_HEADER; 32];
            let mut parsed = httparse::Response::new(&mut slots);
            if let httparse::Status::Complete(len) = parsed.parse(&self.buf).expect("valid head") {
                let status = parsed.code.expect("a status");
                let headers = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8(h.value.to_vec()).expect("UTF-8"),
                        )
                    })
                    .collect();
                self.buf.drain(..len);
                return (status, headers);
            }
            assert!(self.fill().await > 0, "the connection closed inside a head");
        }
    }

    /// Reads one chunk of a chunked body; `None` for the last one.
    async fn chunk(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Ok(httparse::Status::Complete((len, size))) =
                httparse::parse_chunk_size(&self.buf)
            {
                let size = usize::try_from(size).expect("a small chunk");
                if size == 0 && self.buf.len() >= len + 2 {
                    assert_eq!(&self.buf[len..len + 2], b"\r\n");
                    self.buf.drain(..len + 2);
                    return None;
                }
                if size > 0 && self.buf.len() >= len + size + 2 {
                    let data = self.buf[len..len + size].to_vec();
                    assert_eq!(&self.buf[len + size..len + size + 2], b"\r\n");
                    self.buf.drain(..len + size + 2);
                    return Some(data);
                }
            }
            assert!(
                self.fill().await > 0,
                "the connection closed inside a chunked body"
            );
        }
    }

    /// Reads a whole response (its body framed by `Content-Length` or chunked).
    pub(super) async fn response(&mut self) -> Reply {
        let (status, headers) = self.head().await;
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        if reply.header("transfer-encoding") == Some("chunked") {
            while let Some(data) = self.chunk().await {
                reply.body.extend_from_slice(&data);
            }
        } else {
            let length: usize = reply
                .header("content-length")
                .expect("Content-Length or chunked")
                .parse()
                .expect("a length");
            while self.buf.len() < length {
                assert!(self.fill().await > 0, "the connection closed inside a body");
            }
            reply.body = self.buf.drain(..length).collect();
        }
        reply
    }

    /// Whether the server closes the connection (within the patience).
    async fn closed(&mut self) -> bool {
        let mut scratch = [0u8; 1024];
        loop {
            match timeout(PATIENCE, self.stream.read(&mut scratch)).await {
                Err(_) => return false,
                Ok(Ok(0) | Err(_)) => return true,
                Ok(Ok(_)) => {}
            }
        }
    }
}

pub(super) fn init_body(version: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}
        }
    })
    .to_string()
}

/// Initializes on `raw` and returns the session id and the result.
pub(super) async fn initialize(raw: &mut Raw, version: &str) -> (String, Value) {
    let reply = raw.post(None, &init_body(version)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let session = reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let body = reply.json();
    assert_eq!(body["id"], 1);
    (session, body["result"].clone())
}

fn call_body(id: i64, tool: &str, arguments: Value, token: Option<Value>) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// Calls a tool and returns the result of its (last) event.
async fn call(raw: &mut Raw, session: &str, tool: &str, arguments: Value) -> Value {
    let reply = raw
        .post(Some(session), &call_body(9, tool, arguments, None))
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let events = reply.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], 9);
    events[0]["result"].clone()
}

#[tokio::test]
async fn initialize_opens_a_session_and_negotiates_the_version() {
    let server = DemoServer::start().await.expect("start");
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert!(server.url().ends_with("/mcp"));
    let mut raw = Raw::connect(&server).await;
    let mut ids = Vec::new();
    for (offered, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let (session, result) = initialize(&mut raw, offered).await;
        assert_eq!(result["protocolVersion"], answered, "offered {offered}");
        assert_eq!(
            result["capabilities"],
            json!({"tools": {"listChanged": false}})
        );
        assert_eq!(
            result["serverInfo"],
            json!({"name": "mcpwire-demo", "version": env!("CARGO_PKG_VERSION")})
        );
        assert_eq!(session.len(), 32, "{session}");
        assert!(
            session
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        ids.push(session);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "session ids repeat");
    // Without a protocolVersion there is no session.
    let reply = raw
        .post(
            None,
            r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#,
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.error_code(), -32602);
    assert!(reply.header("mcp-session-id").is_none());
    let stats = server.stats();
    assert_eq!(
        (stats.sessions_opened, stats.requests, stats.connections),
        (5, 6, 1)
    );
}

#[tokio::test]
async fn accept_and_content_type_are_checked() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let body = init_body("2025-11-25");
    for accept in [
        None,
        Some("application/json"),
        Some("text/event-stream"),
        Some("*/*"),
    ] {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(accept) = accept {
            headers.push(("Accept", accept));
        }
        let reply = raw.request("POST", "/mcp", &headers, &body).await;
        assert_eq!(reply.status, 406, "Accept {accept:?}");
        assert_eq!(reply.error_code(), -32000);
        assert_eq!(reply.json()["id"], Value::Null);
    }
    for content_type in [None, Some("text/plain"), Some("application/jsonl")] {
        let mut headers = vec![("Accept", ACCEPT_BOTH)];
        if let Some(content_type) = content_type {
            headers.push(("Content-Type", content_type));
        }
        let reply = raw.request("POST", "/mcp", &headers, &body).await;
        assert_eq!(reply.status, 415, "Content-Type {content_type:?}");
        assert_eq!(reply.error_code(), -32000);
    }
    // Parameters and case do not matter; two Accept fields count together.
    let headers = [
        ("Accept", "application/json;q=0.9"),
        ("accept", "TEXT/EVENT-STREAM"),
        ("Content-Type", "Application/JSON; charset=utf-8"),
    ];
    let reply = raw.request("POST", "/mcp", &headers, &body).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(server.stats().sessions_opened, 1);
}

#[tokio::test]
async fn requests_need_a_known_session() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

    let reply = raw.post(None, list).await;
    assert_eq!(reply.status, 400, "{reply:?}");
    assert_eq!(reply.error_code(), -32000);

    let reply = raw
        .post(Some("0123456789abcdef0123456789abcdef"), list)
        .await;
    assert_eq!(reply.status, 404, "{reply:?}");
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Session not found"}})
    );

    // A notification needs the session too.
    let reply = raw
        .post(
            None,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
    assert_eq!(reply.status, 400);

    let headers = [
        ("Accept", ACCEPT_BOTH),
        ("Content-Type", "application/json"),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2099-01-01"),
    ];
    let reply = raw.request("POST", "/mcp", &headers, list).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("2099-01-01")
    );

    let headers = [
        ("Accept", ACCEPT_BOTH),
        ("Content-Type", "application/json"),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let reply = raw.request("POST", "/mcp", &headers, list).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("mcp-session-id"), Some(session.as_str()));
}

#[tokio::test]
async fn messages_are_answered_by_kind() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let session = Some(session.as_str());

    let reply = raw.post(session, "{").await;
    assert_eq!((reply.status, reply.error_code()), (400, -32700));
    let reply = raw
        .post(session, r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#)
        .await;
    assert_eq!((reply.status, reply.error_code()), (400, -32600));

    let reply = raw
        .post(session, r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "id": "p", "result": {}})
    );

    let reply = raw
        .post(session, r#"{"jsonrpc":"2.0","id":3,"method":"no/such"}"#)
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json()["error"],
        json!({"code": -32601, "message": "Method not found", "data": "no/such"})
    );

    for message in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{"x":1}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-1,"message":"no"}}"#,
    ] {
        let reply = raw.post(session, message).await;
        assert_eq!(reply.status, 202, "{message}");
        assert!(reply.body.is_empty());
    }

    // tools/call without a name is invalid; initialize in a batch is refused.
    let reply = raw
        .post(session, r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#)
        .await;
    assert_eq!(reply.events()[0]["error"]["code"], -32602);
    let batch = format!("[{}]", init_body("2025-03-26"));
    let reply = raw.post(None, &batch).await;
    assert_eq!((reply.status, reply.error_code()), (400, -32600));
}

#[tokio::test]
async fn tools_list_pages_by_two() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut request =
            json!({"jsonrpc": "2.0", "id": pages + 10, "method": "tools/list", "params": {}});
        if let Some(cursor) = &cursor {
            request["params"]["cursor"] = json!(cursor);
        }
        let reply = raw.post(Some(&session), &request.to_string()).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let result = reply.json()["result"].clone();
        let tools = result["tools"].as_array().expect("tools").clone();
        pages += 1;
        assert!(tools.len() <= 2);
        for tool in &tools {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
            assert!(tool["description"].is_string());
            names.push(tool["name"].as_str().expect("a name").to_owned());
        }
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().expect("a string cursor").to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 5);
    assert_eq!(names, DEMO_TOOLS_IN_ORDER);

    let bad = r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":"nope"}}"#;
    let reply = raw.post(Some(&session), bad).await;
    assert_eq!((reply.status, reply.error_code()), (200, -32602));
}

#[tokio::test]
async fn tools_call_streams_progress_then_the_result() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let body = call_body(
        7,
        "progress_report",
        json!({"steps": 3, "delay_ms": 10}),
        Some(json!("tok")),
    );
    let reply = raw.post(Some(&session), &body).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    assert_eq!(reply.header("mcp-session-id"), Some(session.as_str()));
    let events = reply.events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (i, event) in events[..3].iter().enumerate() {
        let step = i + 1;
        assert_eq!(
            event,
            &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": "tok", "progress": step, "total": 3,
                "message": format!("step {step} of 3"),
            }})
        );
    }
    assert_eq!(
        events[3],
        json!({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": "done after 3 steps"}], "isError": false
        }})
    );

    // An integer token works too; without a token there is no progress.
    let body = call_body(
        8,
        "progress_report",
        json!({"steps": 2, "delay_ms": 0}),
        Some(json!(42)),
    );
    let events = raw.post(Some(&session), &body).await.events();
    assert_eq!(events.len(), 3);
    assert_eq!(events[1]["params"]["progressToken"], 42);
    let body = call_body(
        9,
        "progress_report",
        json!({"steps": 2, "delay_ms": 0}),
        None,
    );
    let events = raw.post(Some(&session), &body).await.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0]["result"]["content"][0]["text"],
        "done after 2 steps"
    );
    // A fractional token is not a token.
    let body = call_body(10, "echo", json!({"message": "x"}), Some(json!(1.5)));
    let events = raw.post(Some(&session), &body).await.events();
    assert_eq!(events[0]["error"]["code"], -32602);
}

#[tokio::test]
async fn tools_give_their_results() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;

    let result = call(&mut raw, &session, "echo", json!({"message": "hi there"})).await;
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "Echo: hi there"}], "isError": false})
    );

    let result = call(&mut raw, &session, "fail", json!({"message": "it broke"})).await;
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "it broke"}], "isError": true})
    );

    let result = call(&mut raw, &session, "nope", json!({})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "Unknown tool: nope");

    for (tool, arguments) in [
        ("progress_report", json!({"steps": 0})),
        ("progress_report", json!({"steps": 21})),
        ("progress_report", json!({"delay_ms": "1"})),
        ("progress_report", json!({"steps": 2, "extra": true})),
        ("echo", json!({})),
        ("echo", json!({"message": 5})),
        ("weather", json!({"town": "Oslo"})),
        ("tiny_image", json!({"size": 4})),
    ] {
        let result = call(&mut raw, &session, tool, arguments.clone()).await;
        assert_eq!(result["isError"], true, "{tool} {arguments}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.starts_with(&format!("Invalid arguments for tool {tool}: ")),
            "{text}"
        );
    }
    // 2.0 is an integer in JSON Schema.
    let result = call(
        &mut raw,
        &session,
        "progress_report",
        json!({"steps": 2.0, "delay_ms": 0}),
    )
    .await;
    assert_eq!(result["content"][0]["text"], "done after 2 steps");

    let oslo = call(&mut raw, &session, "weather", json!({"city": "Oslo"})).await;
    let again = call(&mut raw, &session, "weather", json!({"city": "Oslo"})).await;
    assert_eq!(oslo, again, "the weather is deterministic");
    assert_eq!(oslo["isError"], false);
    let report = &oslo["structuredContent"];
    assert_eq!(report["city"], "Oslo");
    assert!(report["temperature_c"].is_number());
    assert!(report["conditions"].is_string());
    let humidity = report["humidity"].as_u64().expect("an integer humidity");
    assert!((0..=100).contains(&humidity));
    let text = oslo["content"][0]["text"].as_str().expect("a text block");
    assert_eq!(
        &serde_json::from_str::<Value>(text).expect("JSON text"),
        report
    );
    // The output schema lists exactly the members sent.
    let schema = &super::tools::definitions()[2]["outputSchema"];
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    let mut members: Vec<&str> = report
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    members.sort_unstable();
    assert_eq!(required, members);
}

#[tokio::test]
async fn benchmark_tools_burst_progress_and_send_big_text() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;

    let body = call_body(7, "progress_burst", json!({"steps": 250}), Some(json!("t")));
    let events = raw.post(Some(&session), &body).await.events();
    assert_eq!(events.len(), 251);
    for (i, event) in events[..250].iter().enumerate() {
        assert_eq!(event["params"]["progress"], i + 1);
        assert_eq!(event["params"]["total"], 250);
    }
    assert_eq!(events[249]["params"]["message"], "step 250 of 250");
    assert_eq!(
        events[250]["result"]["content"][0]["text"],
        "done after 250 steps"
    );
    // Without a token there is no progress; 1000 steps by default.
    let body = call_body(8, "progress_burst", json!({}), None);
    let events = raw.post(Some(&session), &body).await.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0]["result"]["content"][0]["text"],
        "done after 1000 steps"
    );

    for bytes in [0, 1, 99, 100, 101, 12_345] {
        let result = call(&mut raw, &session, "big_text", json!({"bytes": bytes})).await;
        assert_eq!(result["isError"], false);
        let text = result["content"][0]["text"].as_str().expect("a text block");
        assert_eq!(text.len(), bytes);
        for (n, line) in text.split('\n').enumerate() {
            assert!(line.len() <= 99, "line {n}");
            assert!(line.bytes().all(|b| b.is_ascii_lowercase()), "line {n}");
        }
        if bytes > 100 {
            assert_eq!(&text[..3], "abc");
            assert_eq!(&text[99..101], "\na");
        }
    }
    assert_eq!(super::tools::big_text(16 * 1024 * 1024).len(), 16 << 20);
    for (tool, arguments) in [
        ("progress_burst", json!({"steps": 0})),
        ("progress_burst", json!({"steps": 100_001})),
        ("progress_burst", json!({"delay_ms": 0})),
        ("big_text", json!({"bytes": -1})),
        ("big_text", json!({"bytes": 16 * 1024 * 1024 + 1})),
        ("big_text", json!({"size": 1})),
    ] {
        let result = call(&mut raw, &session, tool, arguments.clone()).await;
        assert_eq!(result["isError"], true, "{tool} {arguments}");
    }
}

/// CRC-32 (ISO-HDLC), as PNG chunks use it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

pub(super) fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut bits = 0u32;
    let mut count = 0;
    for byte in text.bytes().filter(|b| *b != b'=') {
        let value = ALPHABET
            .iter()
            .position(|a| *a == byte)
            .expect("a base64 digit");
        bits = (bits << 6) | value as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

#[test]
fn base64_matches_rfc_4648_vectors() {
    for (input, output) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(input.as_bytes()), output);
        assert_eq!(base64_decode(output), input.as_bytes());
    }
    let all: Vec<u8> = (0..=255).collect();
    assert_eq!(base64_decode(&base64(&all)), all);
}

/// Checks every chunk's CRC, the IHDR, and the zlib stream (one stored block with an Adler-32).
fn check_png(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "the PNG signature");
    let mut at = 8;
    let mut chunks = Vec::new();
    while at < png.len() {
        let length = u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes")) as usize;
        let kind = &png[at + 4..at + 8];
        let data = &png[at + 8..at + 8 + length];
        let crc = u32::from_be_bytes(
            png[at + 8 + length..at + 12 + length]
                .try_into()
                .expect("4 bytes"),
        );
        assert_eq!(
            crc32(&png[at + 4..at + 8 + length]),
            crc,
            "CRC of {:?}",
            String::from_utf8_lossy(kind)
        );
        chunks.push((kind.to_vec(), data.to_vec()));
        at += 12 + length;
    }
    assert_eq!(at, png.len());
    let kinds: Vec<&[u8]> = chunks.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(kinds, [b"IHDR".as_slice(), b"IDAT", b"IEND"]);
    let ihdr = &chunks[0].1;
    let width = u32::from_be_bytes(ihdr[0..4].try_into().expect("4 bytes"));
    let height = u32::from_be_bytes(ihdr[4..8].try_into().expect("4 bytes"));
    assert_eq!(&ihdr[8..], [8, 2, 0, 0, 0], "8-bit RGB, no interlace");
    let zlib = &chunks[1].1;
    assert_eq!(
        (u16::from(zlib[0]) << 8 | u16::from(zlib[1])) % 31,
        0,
        "zlib header check"
    );
    assert_eq!(zlib[2], 1, "one final stored block");
    let len = u16::from_le_bytes([zlib[3], zlib[4]]);
    assert_eq!(!len, u16::from_le_bytes([zlib[5], zlib[6]]));
    let raw = &zlib[7..7 + len as usize];
    let stride = 1 + 3 * width as usize;
    assert_eq!(raw.len(), stride * height as usize);
    assert!(
        raw.chunks(stride).all(|row| row[0] == 0),
        "filter type none"
    );
    let (mut a, mut b) = (1u32, 0u32);
    for byte in raw {
        a = (a + u32::from(*byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    let adler = u32::from_be_bytes(zlib[7 + len as usize..].try_into().expect("4 bytes"));
    assert_eq!((b << 16) | a, adler);
    (width, height)
}

#[tokio::test]
async fn tiny_image_is_a_valid_png() {
    assert_eq!(check_png(&TINY_PNG), (2, 2));
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let result = call(&mut raw, &session, "tiny_image", json!({})).await;
    assert_eq!(result["isError"], false);
    let block = &result["content"][0];
    assert_eq!(block["type"], "image");
    assert_eq!(block["mimeType"], "image/png");
    let png = base64_decode(block["data"].as_str().expect("base64 data"));
    assert_eq!(png, TINY_PNG);
    assert_eq!(check_png(&png), (2, 2));
}

#[tokio::test]
async fn delete_ends_the_session() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let reply = raw.request("DELETE", "/mcp", &[], "").await;
    assert_eq!((reply.status, reply.error_code()), (400, -32000));
    let with_id = [("Mcp-Session-Id", session.as_str())];
    let reply = raw.request("DELETE", "/mcp", &with_id, "").await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.is_empty());
    let reply = raw
        .post(
            Some(&session),
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        )
        .await;
    assert_eq!((reply.status, reply.error_code()), (404, -32600));
    let reply = raw.request("DELETE", "/mcp", &with_id, "").await;
    assert_eq!((reply.status, reply.error_code()), (404, -32600));
    let stats = server.stats();
    assert_eq!((stats.sessions_opened, stats.sessions_deleted), (1, 1));
}

#[tokio::test]
async fn one_connection_carries_many_requests() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session_id, _) = initialize(&mut raw, "2025-11-25").await;
    let session = Some(session_id.as_str());
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(raw.post(session, initialized).await.status, 202);
    assert_eq!(
        raw.post(session, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
            .await
            .status,
        200
    );
    assert_eq!(
        raw.post(session, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#)
            .await
            .status,
        200
    );
    for id in 4..7 {
        let body = call_body(
            id,
            "progress_report",
            json!({"steps": 2, "delay_ms": 1}),
            Some(json!(id)),
        );
        let events = raw.post(session, &body).await.events();
        assert_eq!(events.len(), 3);
        assert_eq!(events[2]["id"], id);
    }
    // Two requests written back to back (pipelined) are answered in order.
    raw.send_post(session, r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#)
        .await;
    raw.send_post(
        session,
        &call_body(8, "echo", json!({"message": "b"}), None),
    )
    .await;
    assert_eq!(raw.response().await.json()["id"], "a");
    assert_eq!(raw.response().await.events()[0]["id"], 8);
    let reply = raw
        .request(
            "DELETE",
            "/mcp",
            &[("Mcp-Session-Id", session_id.as_str())],
            "",
        )
        .await;
    assert_eq!(reply.status, 200);
    let stats = server.stats();
    assert_eq!((stats.connections, stats.requests), (1, 10));
}

#[tokio::test]
async fn cancellation_stops_a_long_call() {
    let server = DemoServer::start().await.expect("start");
    let mut streaming = Raw::connect(&server).await;
    let (session, _) = initialize(&mut streaming, "2025-11-25").await;
    // 20 steps of 250 ms: five seconds unless cancelled.
    let body = call_body(
        5,
        "progress_report",
        json!({"steps": 20, "delay_ms": 250}),
        Some(json!("c")),
    );
    streaming.send_post(Some(&session), &body).await;
    let started = now();
    let (status, _) = streaming.head().await;
    assert_eq!(status, 200);
    let first = sse_events(&streaming.chunk().await.expect("a first event"));
    assert_eq!(first[0]["params"]["progress"], 1);

    let mut other = Raw::connect(&server).await;
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"enough"}}"#;
    assert_eq!(other.post(Some(&session), cancel).await.status, 202);

    let mut rest = Vec::new();
    while let Some(data) = streaming.chunk().await {
        rest.extend_from_slice(&data);
    }
    assert!(
        now() - started < Duration::from_secs(4),
        "the call went on: {:?}",
        now() - started
    );
    let events = sse_events(&rest);
    assert!(
        events.iter().all(|e| e.get("id").is_none()),
        "a result was sent: {events:?}"
    );
    // The connection is still good, and the id is free again.
    let reply = streaming
        .post(
            Some(&session),
            r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
        )
        .await;
    assert_eq!(reply.json()["result"], json!({}));
    let session = lock(&server.shared.sessions)
        .get(&session)
        .cloned()
        .expect("the session");
    assert!(lock(&session.in_flight).is_empty());
}

#[tokio::test]
async fn deleting_the_session_or_leaving_stops_its_calls() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let body = call_body(
        5,
        "progress_report",
        json!({"steps": 20, "delay_ms": 1000}),
        Some(json!(1)),
    );

    // DELETE from another connection ends the stream without a result.
    // The head is sent before the first delay, and the call is registered before that.
    raw.send_post(Some(&session), &body).await;
    assert_eq!(raw.head().await.0, 200);
    let mut other = Raw::connect(&server).await;
    let reply = other
        .request(
            "DELETE",
            "/mcp",
            &[("Mcp-Session-Id", session.as_str())],
            "",
        )
        .await;
    assert_eq!(reply.status, 200);
    let mut rest = Vec::new();
    while let Some(data) = raw.chunk().await {
        rest.extend_from_slice(&data);
    }
    assert!(sse_events(&rest).iter().all(|e| e.get("id").is_none()));

    // A client that hangs up stops its call (nobody could read the result).
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    raw.send_post(Some(&session), &body).await;
    assert_eq!(raw.head().await.0, 200);
    let state = lock(&server.shared.sessions)
        .get(&session)
        .cloned()
        .expect("the session");
    assert_eq!(lock(&state.in_flight).len(), 1);
    drop(raw);
    let mut waited = Duration::ZERO;
    while !lock(&state.in_flight).is_empty() {
        assert!(waited < PATIENCE, "the call is still running");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += Duration::from_millis(10);
    }
}

#[tokio::test]
async fn batches_are_accepted_on_2025_03_26_only() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let batch = format!(
        r#"[{{"jsonrpc":"2.0","id":1,"method":"ping"}},{},{{"jsonrpc":"2.0","method":"notifications/initialized"}}]"#,
        call_body(2, "echo", json!({"message": "x"}), None)
    );
    let (old, _) = initialize(&mut raw, "2025-03-26").await;
    let events = raw.post(Some(&old), &batch).await.events();
    let ids: Vec<&Value> = events.iter().map(|e| &e["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)]);
    assert_eq!(events[1]["result"]["content"][0]["text"], "Echo: x");
    let only_notifications = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    assert_eq!(raw.post(Some(&old), only_notifications).await.status, 202);

    let (new, _) = initialize(&mut raw, "2025-11-25").await;
    let reply = raw.post(Some(&new), &batch).await;
    assert_eq!((reply.status, reply.error_code()), (400, -32600));
}

#[tokio::test]
async fn other_methods_and_paths() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let reply = raw
        .request("GET", "/mcp", &[("Accept", "text/event-stream")], "")
        .await;
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("POST, DELETE"));
    assert_eq!(raw.request("PUT", "/mcp", &[], "").await.status, 405);
    assert_eq!(raw.request("POST", "/other", &[], "").await.status, 404);
    // HEAD gets the head only, and the connection stays in step.
    raw.send("HEAD", "/mcp", &[], "").await;
    let (status, headers) = raw.head().await;
    assert_eq!(status, 405);
    assert!(
        headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("content-length") && v != "0")
    );
    assert_eq!(raw.request("GET", "/mcp", &[], "").await.status, 405);
    // Without a token there is no protected-resource metadata.
    let reply = raw
        .request("GET", "/.well-known/oauth-protected-resource/mcp", &[], "")
        .await;
    assert_eq!(reply.status, 404);
}

#[tokio::test]
async fn host_and_origin_must_be_loopback() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let body = init_body("2025-11-25");
    let json_headers = [
        ("Accept", ACCEPT_BOTH),
        ("Content-Type", "application/json"),
    ];
    let mut origin = json_headers.to_vec();
    origin.push(("Origin", "http://evil.example"));
    assert_eq!(
        raw.request("POST", "/mcp", &origin, &body).await.status,
        403
    );
    let mut origin = json_headers.to_vec();
    origin.push(("Origin", "http://localhost:5173"));
    assert_eq!(
        raw.request("POST", "/mcp", &origin, &body).await.status,
        200
    );
    raw.host = "evil.example".to_owned();
    assert_eq!(
        raw.request("POST", "/mcp", &json_headers, &body)
            .await
            .status,
        403
    );
    raw.host = format!("localhost:{}", server.addr().port());
    assert_eq!(
        raw.request("POST", "/mcp", &json_headers, &body)
            .await
            .status,
        200
    );
    // No Host at all.
    raw.write(b"GET /mcp HTTP/1.1\r\n\r\n").await;
    assert_eq!(raw.response().await.status, 400);

    assert!(is_loopback_authority("127.0.0.1"));
    assert!(is_loopback_authority("LOCALHOST:80"));
    assert!(is_loopback_authority("[::1]:8080"));
    assert!(!is_loopback_authority("127.0.0.1.evil.example"));
    assert!(!is_loopback_authority("[::2]:80"));
}

#[tokio::test]
async fn a_bearer_token_guards_the_endpoint() {
    let server = DemoServer::start_with_options(DemoOptions {
        token: Some("s3cret".to_owned()),
        ..DemoOptions::default()
    })
    .await
    .expect("start");
    assert!(!format!("{server:?}").contains("s3cret"));
    let mut raw = Raw::connect(&server).await;
    let body = init_body("2025-11-25");
    let metadata = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.addr()
    );
    let mut headers = vec![
        ("Accept", ACCEPT_BOTH),
        ("Content-Type", "application/json"),
    ];
    let reply = raw.request("POST", "/mcp", &headers, &body).await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata}\"").as_str())
    );
    headers.push(("Authorization", "Bearer wrong"));
    let reply = raw.request("POST", "/mcp", &headers, &body).await;
    assert_eq!(reply.status, 401);
    assert!(
        reply
            .header("www-authenticate")
            .unwrap_or_default()
            .contains("error=\"invalid_token\"")
    );
    headers.pop();
    headers.push(("Authorization", "bearer s3cret"));
    let reply = raw.request("POST", "/mcp", &headers, &body).await;
    assert_eq!(reply.status, 200, "{reply:?}");

    let path = metadata
        .split_once("127.0.0.1")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let path = &path[path.find('/').unwrap_or_default()..];
    let reply = raw.request("GET", path, &[], "").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["resource"], server.url());
}

#[tokio::test]
async fn request_framing_and_limits() {
    let server = DemoServer::start().await.expect("start");
    let host = server.addr().to_string();
    let body = init_body("2025-11-25");
    let (first, second) = body.split_at(10);

    // A chunked body with an extension and a trailer, behind Expect: 100-continue.
    let mut raw = Raw::connect(&server).await;
    raw.write(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: {ACCEPT_BOTH}\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(raw.head().await.0, 100);
    raw.write(
        format!(
            "{:x};ext=1\r\n{first}\r\n{:X}\r\n{second}\r\n0\r\nX-Trailer: yes\r\n\r\n",
            first.len(),
            second.len()
        )
        .as_bytes(),
    )
    .await;
    let reply = raw.response().await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.header("mcp-session-id").is_some());
    // The same connection goes on.
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    assert_eq!(
        raw.post(reply.header("mcp-session-id"), ping).await.status,
        200
    );

    for (head, status) in [
        (
            format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2000000\r\n\r\n"),
            413,
        ),
        (
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
            ),
            400,
        ),
        (
            format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: gzip\r\n\r\n"),
            501,
        ),
        (
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
            ),
            400,
        ),
        (
            format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: -1\r\n\r\n"),
            400,
        ),
        (
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{}\r\n",
                (0..70).map(|i| format!("X-{i}: y\r\n")).collect::<String>()
            ),
            431,
        ),
        (
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {host}\r\nX: {}\r\n\r\n",
                "a".repeat(20_000)
            ),
            431,
        ),
        ("GARBAGE\r\n\r\n".to_owned(), 400),
    ] {
        let mut raw = Raw::connect(&server).await;
        raw.write(head.as_bytes()).await;
        let reply = raw.response().await;
        assert_eq!(reply.status, status, "{:?}", &head[..head.len().min(120)]);
        assert_eq!(reply.header("connection"), Some("close"));
        assert!(raw.closed().await);
    }

    // A chunked body over the limit.
    let mut raw = Raw::connect(&server).await;
    raw.write(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n"
        )
        .as_bytes(),
    )
    .await;
    raw.write(&vec![b' '; 0x10_0000]).await;
    raw.write(b"\r\n1\r\n").await;
    assert_eq!(raw.response().await.status, 413);

    // Connection: close is honoured.
    let mut raw = Raw::connect(&server).await;
    let reply = raw
        .request("GET", "/mcp", &[("Connection", "close")], "")
        .await;
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(raw.closed().await);
}

#[tokio::test]
async fn http_1_0_gets_close_delimited_streams() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let body = call_body(
        3,
        "progress_report",
        json!({"steps": 2, "delay_ms": 0}),
        Some(json!(1)),
    );
    let mut raw = Raw::connect(&server).await;
    raw.write(
        format!(
            "POST /mcp HTTP/1.0\r\nHost: {}\r\nAccept: {ACCEPT_BOTH}\r\nContent-Type: application/json\r\n\
             Mcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n{body}",
            server.addr(),
            body.len()
        )
        .as_bytes(),
    )
    .await;
    let (status, headers) = raw.head().await;
    assert_eq!(status, 200);
    assert!(
        !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
    );
    while raw.fill().await > 0 {}
    let events = sse_events(&raw.buf);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        events[2]["result"]["content"][0]["text"],
        "done after 2 steps"
    );
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let mut config = Config::default();
    config.limits.idle_timeout = Duration::from_millis(100);
    let server = DemoServer::start_with(config).await.expect("start");
    let mut raw = Raw::connect(&server).await;
    assert_eq!(raw.request("GET", "/mcp", &[], "").await.status, 405);
    let started = now();
    assert!(raw.closed().await);
    assert!(now() - started < Duration::from_secs(5));
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server = DemoServer::start().await.expect("start");
    let addr = server.addr();
    let mut raw = Raw::connect(&server).await;
    assert_eq!(raw.request("GET", "/mcp", &[], "").await.status, 405);
    drop(server);
    assert!(raw.closed().await, "the open connection is closed");
    let mut refused = false;
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "the listener is still open");
}

#[test]
fn helpers() {
    assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_eq!(http_date(4_102_444_799), "Thu, 31 Dec 2099 23:59:59 GMT");
    assert_eq!(offset_of(&cursor_for(2)), Some(2));
    assert_eq!(offset_of(&cursor_for(4)), Some(4));
    assert_eq!(offset_of(&cursor_for(6)), Some(6));
    assert_eq!(offset_of(&cursor_for(8)), Some(8));
    assert_eq!(offset_of(&cursor_for(0)), None);
    assert_eq!(offset_of(&cursor_for(10)), None);
    // The report ignores case, except for the city's name as given.
    let mut shouted = weather_report("LISBON");
    shouted["city"] = json!("Lisbon");
    assert_eq!(weather_report("Lisbon"), shouted);
    for city in ["Oslo", "Lisbon", "Reykjavík", "", "x"] {
        let report = weather_report(city);
        let t = report["temperature_c"].as_f64().expect("a number");
        assert!((-10.0..=35.0).contains(&t), "{report}");
        let text = t.to_string();
        assert!(
            text.split('.').nth(1).is_none_or(|d| d.len() == 1),
            "{text}"
        );
    }
}

/// The 2025 path of the dual-era server, taken by a client that speaks 2025 only (the
/// 2026-07-28 path through the client is in `tests_modern`).
#[cfg(feature = "client")]
#[tokio::test]
async fn a_full_session_through_the_client() {
    use std::sync::{Arc, Mutex};

    use crate::client::{CallOptions, Client, ClientOptions};
    use crate::mcp::ContentBlock;
    use crate::session::EraPolicy;
    use crate::transport::http::{HttpConfig, HttpPool, TlsOptions};

    let server = DemoServer::start().await.expect("start");
    let pool = HttpPool::new(&TlsOptions::default()).expect("a pool");
    let config = HttpConfig::new(&server.url()).expect("a config");
    let mut options = ClientOptions::default();
    options.session.era = EraPolicy::Legacy;
    let client = Client::connect_http(&pool, config, options)
        .await
        .expect("connect");
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    assert_eq!(
        client
            .server()
            .expect("the server described itself")
            .server_info
            .name,
        "mcpwire-demo"
    );
    assert_eq!(client.session_id().map(str::len), Some(32));
    let tools = client.list_tools().await.expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, DEMO_TOOLS_IN_ORDER);
    assert!(tools[2].output_schema.is_some());

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = CallOptions {
        on_progress: Some(Box::new(move |p| {
            lock(&sink).push((p.progress, p.total, p.message.clone()));
        })),
        ..CallOptions::default()
    };
    let arguments = json!({"steps": 3, "delay_ms": 5});
    let result = client
        .call_tool("progress_report", arguments.as_object().cloned(), options)
        .await
        .expect("a result");
    assert!(!result.is_error());
    assert_eq!(result.content[0].as_text(), Some("done after 3 steps"));
    let seen = lock(&seen).clone();
    assert_eq!(
        seen,
        (1..=3)
            .map(|i| (f64::from(i), Some(3.0), Some(format!("step {i} of 3"))))
            .collect::<Vec<_>>()
    );

    let result = client
        .call_tool(
            "weather",
            json!({"city": "Lisbon"}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .expect("a result");
    assert_eq!(result.structured_content, Some(weather_report("Lisbon")));
    let result = client
        .call_tool("tiny_image", None, CallOptions::default())
        .await
        .expect("a result");
    match &result.content[0] {
        ContentBlock::Image(image) => {
            assert_eq!(image.mime_type, "image/png");
            assert_eq!(base64_decode(&image.data), TINY_PNG);
        }
        other => panic!("not an image: {other:?}"),
    }
    let result = client
        .call_tool(
            "fail",
            json!({"message": "no"}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .expect("a result");
    assert!(result.is_error());
    client.ping().await.expect("ping");
    client.close().await;
    // A connect that lost the race for a request may still be under way, accepted by the
    // server but not yet counted by the pool.
    pool.connects_settled().await;

    let stats = server.stats();
    assert_eq!((stats.sessions_opened, stats.sessions_deleted), (1, 1));
    assert_eq!(stats.modern_requests, 0, "{stats:?}");
    assert!(
        stats.connections <= 2,
        "{stats:?}: the pool reuses connections"
    );
    assert_eq!(stats.connections, pool.connections_opened());
}
