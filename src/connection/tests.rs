//! Pair tests: the connection machine against an in-memory server stepped with a fake clock
//! that jumps to the machine's next deadline (quinn-proto's `tests/util.rs` `Pair`). No
//! socket, no runtime, no sleep: each scenario runs at parser speed and the same way every
//! time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::*;
use crate::exchange::{HttpConfig, assert_jittered_backoff, assert_rate_limited};
use crate::mcp::error_code;

/// The bearer token the client sends; it must show in nothing handed back.
const TOKEN: &str = "pair-bearer-7c1d9e";

/// What the in-memory server answers to one request.
enum Reply {
    /// `200` with a JSON body.
    Json(Value),
    /// `200` with an event stream: each value one `message` event.
    Sse(Vec<Value>),
    /// A status and a JSON body, with extra headers.
    Status(u16, Value, Vec<(&'static str, String)>),
    /// The connection drops before a response.
    Lost,
    /// An event stream that opens and never sends or ends.
    Hang,
}

/// A request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: http::Method,
    headers: HeaderMap,
    /// The JSON-RPC message, if the body held one.
    body: Option<Value>,
    /// When it arrived, on the fake clock.
    at: Instant,
}

impl Seen {
    fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }

    fn params(&self) -> &Value {
        self.body
            .as_ref()
            .and_then(|b| b.get("params"))
            .unwrap_or(&Value::Null)
    }
}

type Server = Box<dyn FnMut(&Seen) -> Reply>;

/// A dropped connection, as the transport reports it.
fn lost() -> Frame {
    Frame::Failed(TransportError::Lost("connection reset".to_owned()))
}

/// The machine, the server, what went over the wire and the fake clock.
struct Pair {
    connection: Connection,
    server: Server,
    now: Instant,
    frames: VecDeque<(StreamId, Frame)>,
    seen: Vec<Seen>,
    /// Every output that is not I/O, in order.
    outputs: Vec<Output>,
    steps: usize,
}

#[allow(clippy::disallowed_methods)] // The fake clock needs one instant to start from.
fn origin() -> Instant {
    Instant::now()
}

fn limits() -> Limits {
    Limits {
        request_timeout: Duration::from_secs(30),
        max_list_pages: 5,
        max_tools: 100,
        max_input_rounds: 3,
        answers_input: true,
        process_id: 7,
        tasks: false,
    }
}

fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: &Value, code: i64, message: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}})
}

fn id_of(seen: &Seen) -> Value {
    seen.body
        .as_ref()
        .and_then(|b| b.get("id"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A `server/discover` answer at 2026-07-28.
fn discovered(seen: &Seen) -> Reply {
    Reply::Json(response(
        &id_of(seen),
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "pair", "version": "1"},
            "resultType": "complete",
        }),
    ))
}

impl Pair {
    /// A pair whose server answers `server/discover` at 2026-07-28 and everything else with
    /// `server`.
    fn modern(mut server: Server) -> Pair {
        Pair::new(
            session::EraPolicy::Auto,
            Box::new(move |seen| match seen.rpc_method() {
                Some("server/discover") => discovered(seen),
                _ => server(seen),
            }),
        )
    }

    fn new(era: session::EraPolicy, server: Server) -> Pair {
        Pair::traced(era, None, server)
    }

    /// [`new`](Pair::new), with the handshake's requests carrying `trace`.
    fn traced(
        era: session::EraPolicy,
        trace: Option<crate::mcp::TraceContext>,
        server: Server,
    ) -> Pair {
        let session = session::Config {
            era,
            ..session::Config::default()
        };
        Pair::with_session(session, trace, server)
    }

    /// A pair whose session has `session` for its configuration.
    fn with_session(
        session: session::Config,
        trace: Option<crate::mcp::TraceContext>,
        server: Server,
    ) -> Pair {
        let Ok(mut config) = HttpConfig::new("http://127.0.0.1:9/mcp") else {
            unreachable!("a valid URL");
        };
        config.bearer_token = Some(Secret::new(TOKEN));
        let secrets = config.secrets();
        let connection = Connection::http(session, Exchange::new(config, 1), limits(), secrets);
        let mut pair = Pair {
            connection,
            server,
            now: origin(),
            frames: VecDeque::new(),
            seen: Vec::new(),
            outputs: Vec::new(),
            steps: 0,
        };
        pair.connection.set_handshake_trace(trace);
        pair.connection.start(pair.now);
        pair.run(|outputs| {
            outputs
                .iter()
                .any(|o| matches!(o, Output::Connected(_) | Output::ConnectFailed(_)))
        });
        pair
    }

    /// Steps until `done` holds of the outputs: frames first, one at a time; with none
    /// waiting, the clock jumps to the next deadline.
    fn run(&mut self, done: impl Fn(&[Output]) -> bool) {
        loop {
            self.drain();
            if done(&self.outputs) {
                return;
            }
            self.steps += 1;
            assert!(self.steps < 10_000, "no end after 10,000 steps");
            if let Some((stream, frame)) = self.frames.pop_front() {
                self.connection.handle_frame(stream, frame, self.now);
                continue;
            }
            let Some(deadline) = self.connection.poll_timeout() else {
                panic!("nothing to wait for, and not done: {:?}", self.outputs);
            };
            self.now = self.now.max(deadline);
            self.connection.handle_timeout(self.now);
        }
    }

    fn drain(&mut self) {
        while let Some(output) = self.connection.poll_output() {
            match output {
                Output::HttpSend { stream, request } => self.serve(stream, request),
                Output::HttpAbort(stream) => self.frames.retain(|(s, _)| *s != stream),
                output => self.outputs.push(output),
            }
        }
    }

    fn serve(&mut self, stream: StreamId, request: HttpRequest) {
        let seen = Seen {
            method: request.method.clone(),
            headers: request.headers.clone(),
            body: serde_json::from_slice(&request.body).ok(),
            at: self.now,
        };
        self.seen.push(seen.clone());
        let reply = match (&seen.method, seen.body.as_ref()) {
            (&http::Method::DELETE, _) => Reply::Status(200, Value::Null, Vec::new()),
            // A notification or a response of ours.
            (_, Some(body)) if body.get("id").is_none() || body.get("method").is_none() => {
                Reply::Status(202, Value::Null, Vec::new())
            }
            (&http::Method::GET, _) => Reply::Status(405, Value::Null, Vec::new()),
            _ => (self.server)(&seen),
        };
        let mut headers = HeaderMap::new();
        let (status, body) = match reply {
            Reply::Json(value) => {
                headers.insert("content-type", HeaderValue::from_static("application/json"));
                (200, value.to_string().into_bytes())
            }
            Reply::Sse(events) => {
                headers.insert(
                    "content-type",
                    HeaderValue::from_static("text/event-stream"),
                );
                let text: String = events
                    .iter()
                    .map(|event| format!("event: message\ndata: {event}\n\n"))
                    .collect();
                (200, text.into_bytes())
            }
            Reply::Status(status, value, extra) => {
                if !value.is_null() {
                    headers.insert("content-type", HeaderValue::from_static("application/json"));
                }
                for (name, value) in extra {
                    if let Ok(value) = HeaderValue::from_str(&value) {
                        headers.insert(name, value);
                    }
                }
                let body = match value {
                    Value::Null => Vec::new(),
                    value => value.to_string().into_bytes(),
                };
                (status, body)
            }
            Reply::Lost => {
                self.frames.push_back((stream, lost()));
                return;
            }
            Reply::Hang => {
                headers.insert(
                    "content-type",
                    HeaderValue::from_static("text/event-stream"),
                );
                self.frames.push_back((
                    stream,
                    Frame::Head(StatusCode::OK, headers, WallClock::default()),
                ));
                return;
            }
        };
        let Ok(status) = StatusCode::from_u16(status) else {
            unreachable!("a valid status");
        };
        headers.insert("content-length", HeaderValue::from(body.len()));
        self.frames
            .push_back((stream, Frame::Head(status, headers, WallClock::default())));
        // Two chunks, so every reader sees a body split across frames.
        let half = body.len() / 2;
        if half > 0 {
            self.frames.push_back((
                stream,
                Frame::Data(bytes::Bytes::copy_from_slice(&body[..half])),
            ));
        }
        self.frames.push_back((
            stream,
            Frame::Data(bytes::Bytes::copy_from_slice(&body[half..])),
        ));
        self.frames.push_back((stream, Frame::End));
    }

    /// Runs until operation `op` is done; its outcome.
    fn finish(&mut self, op: OpId) -> Result<Outcome, OpError> {
        self.run(|outputs| {
            outputs
                .iter()
                .any(|o| matches!(o, Output::Done { op: done, .. } if *done == op))
        });
        let at = self
            .outputs
            .iter()
            .position(|o| matches!(o, Output::Done { op: done, .. } if *done == op));
        match at.map(|at| self.outputs.remove(at)) {
            Some(Output::Done { outcome, .. }) => outcome,
            _ => unreachable!("the loop ran until the operation was done"),
        }
    }

    fn calls_seen(&self, method: &str) -> Vec<&Seen> {
        self.seen
            .iter()
            .filter(|s| s.rpc_method() == Some(method))
            .collect()
    }

    fn call(&mut self, name: &str, arguments: Value) -> OpId {
        let arguments = serde_json::value::to_raw_value(&arguments)
            .ok()
            .map(CallArguments::Raw);
        let call = traced_call(name, arguments, None, None);
        self.connection.call_tool(call, self.now)
    }
}

/// A 2025-11-25 initialize answer with session id `s-1`.
fn initialized(seen: &Seen) -> Reply {
    Reply::Status(
        200,
        response(
            &id_of(seen),
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "old", "version": "1"}}),
        ),
        vec![("mcp-session-id", "s-1".to_owned())],
    )
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "resultType": "complete"})
}

fn failed(outcome: Result<Outcome, OpError>) -> Failure {
    match outcome {
        Err(OpError::Failed(failure)) => failure,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn text_of(outcome: Result<Outcome, OpError>) -> String {
    match outcome {
        Ok(Outcome::Call(result)) => match result.content.first() {
            Some(crate::mcp::ContentBlock::Text(text)) => text.text.clone(),
            other => panic!("not a text block: {other:?}"),
        },
        other => panic!("expected a call result, got {other:?}"),
    }
}

#[test]
fn the_probe_settles_the_stateless_revision_and_every_request_carries_the_envelope() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(response(&id_of(seen), text_result("hi"))),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let connected = pair.outputs.iter().find_map(|o| match o {
        Output::Connected(c) => Some(&**c),
        _ => None,
    });
    let connected = connected.unwrap_or_else(|| panic!("not connected: {:?}", pair.outputs));
    assert_eq!(connected.version, ProtocolVersion::V2026_07_28);
    assert!(connected.session_id.is_none());
    let op = pair.call("echo", json!({"q": 1}));
    assert_eq!(text_of(pair.finish(op)), "hi");
    let call = pair.calls_seen("tools/call")[0].clone();
    let meta = &call.params()["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(meta["progressToken"], format!("mcpwire-7-{op}"));
    assert_eq!(call.headers["mcp-name"], "echo");
    assert!(pair.calls_seen("initialize").is_empty(), "no handshake");
}

#[test]
fn listing_follows_cursors_and_stops_a_loop_or_too_many_pages() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/list") => {
            let page = match seen.params()["cursor"].as_str() {
                None => json!({"tools": [tool("a")], "nextCursor": "2"}),
                Some("2") => json!({"tools": [tool("b")], "nextCursor": "3"}),
                Some("3") => json!({"tools": [tool("c")]}),
                // "loop": a cursor that comes back.
                Some(_) => json!({"tools": [], "nextCursor": "loop"}),
            };
            Reply::Json(response(&id_of(seen), page))
        }
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.connection.list_tools(None, pair.now);
    match pair.finish(op) {
        Ok(Outcome::Tools(tools, _)) => {
            let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, ["a", "b", "c"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(pair.calls_seen("tools/list").len(), 3);
}

#[test]
fn a_repeated_cursor_is_a_loop_not_a_hang() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/list") => Reply::Json(response(
            &id_of(seen),
            json!({"tools": [tool("a")], "nextCursor": "same"}),
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.connection.list_tools(None, pair.now);
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::Protocol);
    assert!(
        failure.detail.contains("repeated the cursor"),
        "{failure:?}"
    );
    assert_eq!(pair.calls_seen("tools/list").len(), 2);
}

#[test]
fn endless_pages_stop_at_the_page_limit() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/list") => {
            let n = seen.params()["cursor"]
                .as_str()
                .and_then(|c| c.parse::<u64>().ok())
                .unwrap_or(0);
            Reply::Json(response(
                &id_of(seen),
                json!({"tools": [], "nextCursor": (n + 1).to_string()}),
            ))
        }
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.connection.list_tools(None, pair.now);
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::LimitExceeded);
    assert_eq!(pair.calls_seen("tools/list").len(), limits().max_list_pages);
}

#[test]
fn a_list_page_whose_stream_breaks_is_asked_for_once_more_and_a_call_never_is() {
    let lost = std::rc::Rc::new(std::cell::Cell::new(0));
    let counter = lost.clone();
    let mut pair = Pair::modern(Box::new(move |seen| match seen.rpc_method() {
        Some("tools/list") if counter.get() == 0 => {
            counter.set(1);
            Reply::Lost
        }
        Some("tools/list") => Reply::Json(response(&id_of(seen), json!({"tools": [tool("a")]}))),
        Some("tools/call") => Reply::Lost,
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.connection.list_tools(None, pair.now);
    assert!(matches!(pair.finish(op), Ok(Outcome::Tools(tools, _)) if tools.len() == 1));
    assert_eq!(pair.calls_seen("tools/list").len(), 2);
    let op = pair.call("a", json!({}));
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::ConnectionLost);
    assert!(failure.outcome_unknown(), "the call may have run");
    assert_eq!(pair.calls_seen("tools/call").len(), 1, "never sent again");
}

#[test]
fn an_input_required_round_asks_the_host_and_echoes_the_request_state() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") if seen.params().get("inputResponses").is_none() => {
            Reply::Json(response(
                &id_of(seen),
                json!({
                    "resultType": "input_required",
                    "inputRequests": {"ask": {"method": "elicitation/create",
                        "params": {"message": "sure?", "requestedSchema": {"type": "object"}}}},
                    "requestState": "opaque-1",
                }),
            ))
        }
        Some("tools/call") => {
            let params = seen.params();
            let text = format!(
                "{} {}",
                params["inputResponses"]["ask"]["action"], params["requestState"]
            );
            Reply::Json(response(&id_of(seen), text_result(&text)))
        }
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.call("confirm", json!({}));
    pair.run(|outputs| outputs.iter().any(|o| matches!(o, Output::Input { .. })));
    let requests = pair.outputs.iter().find_map(|o| match o {
        Output::Input {
            op: asked,
            requests,
            ..
        } if *asked == op => Some(requests),
        _ => None,
    });
    let requests = requests.unwrap_or_else(|| panic!("no input round: {:?}", pair.outputs));
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].key, "ask");
    assert_eq!(requests[0].method, "elicitation/create");
    let mut answers = JsonObject::new();
    answers.insert("ask".to_owned(), json!({"action": "accept"}));
    pair.connection.answer_input(op, Ok(answers), pair.now);
    assert_eq!(text_of(pair.finish(op)), "\"accept\" \"opaque-1\"");
    let calls = pair.calls_seen("tools/call");
    assert_eq!(calls.len(), 2);
    assert_ne!(
        id_of(calls[0]),
        id_of(calls[1]),
        "each round has an id of its own"
    );
}

#[test]
fn without_an_input_handler_an_input_round_fails_the_call_as_answered() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(response(
            &id_of(seen),
            json!({"resultType": "input_required",
                       "inputRequests": {"a": {"method": "elicitation/create", "params": {}}}}),
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    pair.connection.limits.answers_input = false;
    let op = pair.call("confirm", json!({}));
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::ElicitationRequested);
    assert_eq!(failure.delivery, Delivery::Answered);
    assert_eq!(pair.calls_seen("tools/call").len(), 1);
}

#[test]
fn input_rounds_are_bounded() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        // Asks again and again, with no requests: the client retries at once.
        Some("tools/call") => Reply::Json(response(
            &id_of(seen),
            json!({"resultType": "input_required", "requestState": "again"}),
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.call("t", json!({}));
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::LimitExceeded);
    assert_eq!(
        pair.calls_seen("tools/call").len(),
        limits().max_input_rounds + 1
    );
}

/// A server listing one tool `geo` with `schema`, refusing a call without `Mcp-Param-Region`
/// with `-32020` and answering one with it.
fn stale_headers_server(schema: &Value, seen: &Seen) -> Reply {
    match seen.rpc_method() {
        Some("tools/list") => Reply::Json(response(
            &id_of(seen),
            json!({"tools": [{"name": "geo", "inputSchema": schema}]}),
        )),
        Some("tools/call") if seen.headers.get("mcp-param-region").is_none() => Reply::Json(error(
            &id_of(seen),
            error_code::HEADER_MISMATCH,
            "stale",
            Value::Null,
        )),
        Some("tools/call") => Reply::Json(response(&id_of(seen), text_result("ok"))),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }
}

#[test]
fn stale_param_headers_are_relisted_and_the_call_retried_once() {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}});
    let mut pair = Pair::modern(Box::new(move |seen| stale_headers_server(&schema, seen)));
    let op = pair.call("geo", json!({"region": "eu"}));
    assert_eq!(text_of(pair.finish(op)), "ok");
    let calls = pair.calls_seen("tools/call");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].headers["mcp-param-region"], "eu");
    assert_eq!(pair.calls_seen("tools/list").len(), 1);
}

#[test]
fn a_second_header_mismatch_is_the_servers_answer() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/list") => Reply::Json(response(&id_of(seen), json!({"tools": []}))),
        Some("tools/call") => Reply::Json(error(
            &id_of(seen),
            error_code::HEADER_MISMATCH,
            "stale",
            Value::Null,
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.call("geo", json!({}));
    let failure = failed(pair.finish(op));
    assert_eq!(
        failure.kind,
        FailureKind::ServerError {
            code: error_code::HEADER_MISMATCH
        }
    );
    assert_eq!(pair.calls_seen("tools/call").len(), 2);
}

#[test]
fn an_unsupported_revision_switches_once_and_retries() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(error(
            &id_of(seen),
            error_code::UNSUPPORTED_PROTOCOL_VERSION,
            "no",
            json!({"supported": ["2026-07-28"]}),
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.call("t", json!({}));
    let failure = failed(pair.finish(op));
    assert_eq!(
        failure.kind,
        FailureKind::ServerError {
            code: error_code::UNSUPPORTED_PROTOCOL_VERSION
        }
    );
    assert_eq!(pair.calls_seen("tools/call").len(), 2, "one retry only");
    assert!(
        pair.outputs
            .iter()
            .any(|o| matches!(o, Output::VersionSwitched(ProtocolVersion::V2026_07_28)))
    );
}

#[test]
fn a_missing_elicitation_capability_is_an_unknown_outcome() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(error(
            &id_of(seen),
            error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "needs elicitation",
            json!({"requiredCapabilities": {"elicitation": {}}}),
        )),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let op = pair.call("t", json!({}));
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::ElicitationRequested);
    assert!(failure.outcome_unknown());
    assert_eq!(pair.calls_seen("tools/call").len(), 1);
}

#[test]
fn a_2025_server_gets_initialize_a_session_and_progress_then_delete() {
    let mut pair = Pair::new(
        session::EraPolicy::Auto,
        Box::new(|seen| match seen.rpc_method() {
            Some("server/discover") => {
                Reply::Json(error(&id_of(seen), -32601, "Method not found", Value::Null))
            }
            Some("initialize") => initialized(seen),
            Some("tools/call") => {
                let token = seen.params()["_meta"]["progressToken"].clone();
                Reply::Sse(vec![
                    json!({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": token, "progress": 1, "total": 2,
                                      "message": format!("half, token {TOKEN}")}}),
                    response(&id_of(seen), text_result(&format!("done {TOKEN}"))),
                ])
            }
            _ => Reply::Status(400, Value::Null, Vec::new()),
        }),
    );
    let connected = pair.outputs.iter().find_map(|o| match o {
        Output::Connected(c) => Some(&**c),
        _ => None,
    });
    let connected = connected.unwrap_or_else(|| panic!("not connected: {:?}", pair.outputs));
    assert_eq!(connected.version, ProtocolVersion::V2025_11_25);
    assert_eq!(connected.session_id.as_deref(), Some("s-1"));
    let op = pair.call("slow", json!({}));
    let text = text_of(pair.finish(op));
    assert_eq!(text, "done <redacted>", "the echoed token is taken out");
    let progress: Vec<_> = pair
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Progress { op: of, params } if *of == op => Some(params),
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 1);
    assert_eq!(
        progress[0].message.as_deref(),
        Some("half, token <redacted>")
    );
    let call = pair.calls_seen("tools/call")[0].clone();
    assert_eq!(call.headers["mcp-session-id"], "s-1");
    assert!(
        call.params()["_meta"]
            .get("io.modelcontextprotocol/protocolVersion")
            .is_none()
    );
    pair.connection.close(pair.now);
    pair.run(|outputs| outputs.iter().any(|o| matches!(o, Output::Closed)));
    assert!(pair.seen.iter().any(|s| s.method == http::Method::DELETE));
}

#[test]
fn a_call_ends_at_its_deadline_on_the_fake_clock_and_cancel_ends_it_at_once() {
    let mut pair = Pair::new(
        session::EraPolicy::Modern(ProtocolVersion::V2026_07_28),
        // A server that never answers a call: its stream opens and stays silent.
        Box::new(|_| Reply::Hang),
    );
    let start = pair.now;
    let call = CallTool {
        name: "slow".into(),
        arguments: None,
        meta: None,
        member: None,
        progress_token: None,
        timeout: Duration::from_secs(5),
        idle_timeout: None,
        max_response_bytes: None,
        content_only: false,
        input_schema: None,
        raw: false,
        trace: None,
        task_support: false,
    };
    let op = pair.connection.call_tool(call, pair.now);
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::Timeout, "{failure:?}");
    assert!(failure.outcome_unknown());
    assert_eq!(
        pair.now,
        start + Duration::from_secs(5),
        "ended at its deadline"
    );

    let op = pair.call("slow", json!({}));
    pair.drain();
    pair.connection.cancel(op, "the host gave up", pair.now);
    let failure = failed(pair.finish(op));
    assert_eq!(failure.kind, FailureKind::Cancelled);
}

#[test]
fn a_call_member_goes_after_the_callers_and_replaces_one_of_its_name() {
    fn params(meta: Option<JsonObject>, member: Option<(&str, &Value)>) -> String {
        let token = ProgressToken::String("call-1".to_owned());
        let stamp = crate::mcp::modern::Stamp::new(crate::mcp::modern::Envelope {
            version: ProtocolVersion::V2026_07_28,
            capabilities: crate::mcp::ClientCapabilities::default(),
            client_info: crate::mcp::Implementation::new("mcpwire", "1"),
        });
        let arguments = serde_json::value::to_raw_value(&json!({"q": 1}))
            .ok()
            .map(CallArguments::Raw);
        let member = member.map(|(k, v)| (k, serde_json::value::to_raw_value(v).ok()));
        let member = member
            .as_ref()
            .and_then(|(k, v)| Some((*k, &**v.as_ref()?)));
        let params = ops::CallParams {
            name: "t",
            arguments: arguments.as_ref(),
            task: None,
            meta: ops::CallMeta {
                meta: meta.as_ref(),
                member,
                trace: None,
                token: &token,
                stamp: Some(&stamp),
            },
        };
        serde_json::to_string(&params).unwrap_or_default()
    }
    let scope = json!({"tenant_id": "t1"});
    let meta = json!({"a": 1, "host/scope": "old", "progressToken": "x"});
    let written = params(meta.as_object().cloned(), Some(("host/scope", &scope)));
    let value: Value = serde_json::from_str(&written).unwrap_or_default();
    let keys: Vec<_> = value["_meta"]
        .as_object()
        .map(|meta| meta.keys().cloned().collect())
        .unwrap_or_default();
    // serde_json's map sorts its keys: the order written is checked on the text.
    assert_eq!(keys.len(), 6, "{written}");
    assert_eq!(value["_meta"]["host/scope"], scope);
    assert_eq!(value["_meta"]["progressToken"], "call-1");
    assert_eq!(value["_meta"]["a"], 1);
    let at = |key: &str| written.find(&format!("\"{key}\"")).unwrap_or(usize::MAX);
    assert!(at("a") < at("host/scope") && at("host/scope") < at("progressToken"));
    assert_eq!(written.matches("\"host/scope\"").count(), 1);
    assert_eq!(written.matches("\"progressToken\"").count(), 1);

    // A member named like the progress token or the envelope is not written.
    let written = params(None, Some(("progressToken", &scope)));
    assert!(!written.contains("tenant_id"), "{written}");
    let written = params(
        None,
        Some(("io.modelcontextprotocol/protocolVersion", &scope)),
    );
    assert!(!written.contains("tenant_id"), "{written}");
    assert!(written.contains(r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#));
}

#[test]
fn a_raw_tools_call_goes_through_the_call_rules() {
    let mut pair = Pair::modern(Box::new(|seen| match seen.rpc_method() {
        Some("tools/call") => Reply::Json(response(&id_of(seen), text_result("raw"))),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let params = json!({"name": "echo", "arguments": {"a": 1}, "_meta": {"progressToken": "mine"}});
    let op = pair
        .connection
        .request_raw("tools/call", Some(params), None, None, pair.now);
    match pair.finish(op) {
        Ok(Outcome::Raw(Some(raw))) => assert!(raw.get().contains("\"raw\""), "{}", raw.get()),
        other => panic!("{other:?}"),
    }
    let call = pair.calls_seen("tools/call")[0].clone();
    assert_eq!(call.headers["mcp-name"], "echo", "the call's headers");
    assert_eq!(call.params()["_meta"]["progressToken"], "mine");
    let op = pair.connection.request_raw(
        "tools/call",
        Some(json!({"arguments": {}})),
        None,
        None,
        pair.now,
    );
    assert!(matches!(pair.finish(op), Err(OpError::Config(_))));
}

/// A call of `name` with these arguments, `_meta` and trace context, and the defaults (a
/// 60-second deadline).
fn traced_call(
    name: &str,
    arguments: Option<CallArguments>,
    meta: Option<JsonObject>,
    trace: Option<crate::mcp::TraceContext>,
) -> CallTool {
    CallTool {
        name: name.into(),
        arguments,
        meta,
        member: None,
        progress_token: None,
        timeout: Duration::from_secs(60),
        idle_timeout: None,
        max_response_bytes: None,
        content_only: false,
        input_schema: None,
        raw: false,
        trace,
        task_support: false,
    }
}

/// The W3C trace context of the tests below: the host's (`HOST`), and the one of an operation.
const HOST_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const OP_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn trace(parent: &str) -> crate::mcp::TraceContext {
    let Ok(trace) = crate::mcp::TraceContext::parse(parent) else {
        unreachable!("a valid traceparent");
    };
    trace
}

/// The trace members of a request's `_meta`, as `(traceparent, tracestate, baggage)`.
fn trace_of(seen: &Seen) -> (Option<&str>, Option<&str>, Option<&str>) {
    let meta = &seen.params()["_meta"];
    (
        meta["traceparent"].as_str(),
        meta["tracestate"].as_str(),
        meta["baggage"].as_str(),
    )
}

#[test]
fn every_2026_request_carries_its_trace_context_beside_the_envelope() {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}});
    let mut pair = Pair::traced(
        session::EraPolicy::Auto,
        Some(trace(HOST_PARENT)),
        Box::new(move |seen| match seen.rpc_method() {
            Some("server/discover") => discovered(seen),
            _ => stale_headers_server(&schema, seen),
        }),
    );
    let probe = pair.calls_seen("server/discover")[0].clone();
    assert_eq!(trace_of(&probe), (Some(HOST_PARENT), None, None));
    assert_eq!(
        probe.params()["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let op_trace = trace(OP_PARENT)
        .with_tracestate("congo=t61rcWkgMzE")
        .and_then(|t| t.with_baggage("userId=alice"))
        .unwrap_or_else(|e| panic!("{e}"));
    // The caller's own trace members are replaced, all three together; the rest stays.
    let meta = json!({"traceparent": HOST_PARENT, "baggage": "old=1", "x": 1});
    let call = traced_call(
        "geo",
        Some(CallArguments::Object(
            json!({"region": "eu"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )),
        meta.as_object().cloned(),
        Some(op_trace),
    );
    let op = pair.connection.call_tool(call, pair.now);
    assert_eq!(text_of(pair.finish(op)), "ok");
    let calls = pair.calls_seen("tools/call");
    assert_eq!(calls.len(), 2, "refused with -32020, relisted, sent again");
    let expected = (
        Some(OP_PARENT),
        Some("congo=t61rcWkgMzE"),
        Some("userId=alice"),
    );
    for call in &calls {
        assert_eq!(trace_of(call), expected, "{:?}", call.body);
        let meta = &call.params()["_meta"];
        assert_eq!(meta["x"], 1);
        assert!(meta["progressToken"].is_string());
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
    // The listing the -32020 made is the call's: it carries the call's context.
    let lists = pair.calls_seen("tools/list");
    assert_eq!(lists.len(), 1);
    assert_eq!(trace_of(lists[0]), expected);
    assert_eq!(
        lists[0].params()["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // A listing of its own carries its own; one without any carries none.
    let op = pair
        .connection
        .list_tools(Some(trace(HOST_PARENT)), pair.now);
    assert!(pair.finish(op).is_ok());
    let op = pair.connection.list_tools(None, pair.now);
    assert!(pair.finish(op).is_ok());
    let lists = pair.calls_seen("tools/list");
    assert_eq!(trace_of(lists[1]), (Some(HOST_PARENT), None, None));
    assert_eq!(trace_of(lists[2]), (None, None, None));
}

#[test]
fn every_2025_request_carries_its_trace_context() {
    let mut pair = Pair::traced(
        session::EraPolicy::Legacy,
        Some(trace(HOST_PARENT)),
        Box::new(|seen| match seen.rpc_method() {
            Some("initialize") => Reply::Json(response(
                &id_of(seen),
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "old", "version": "1"}}),
            )),
            Some("tools/call") => Reply::Json(response(&id_of(seen), text_result("ok"))),
            Some("ping" | "acme/echo") => Reply::Json(response(&id_of(seen), json!({}))),
            _ => Reply::Status(202, Value::Null, Vec::new()),
        }),
    );
    let initialize = pair.calls_seen("initialize")[0].clone();
    assert_eq!(trace_of(&initialize), (Some(HOST_PARENT), None, None));
    assert_eq!(initialize.params()["protocolVersion"], "2025-11-25");
    let op = pair.connection.ping(Some(trace(OP_PARENT)), pair.now);
    assert!(pair.finish(op).is_ok());
    let op = pair.connection.request_raw(
        "acme/echo",
        Some(json!({"name": "p", "_meta": {"x": 1}})),
        None,
        Some(trace(OP_PARENT)),
        pair.now,
    );
    assert!(pair.finish(op).is_ok());
    let call = traced_call("slow", None, None, Some(trace(OP_PARENT)));
    let op = pair.connection.call_tool(call, pair.now);
    assert_eq!(text_of(pair.finish(op)), "ok");
    for method in ["ping", "acme/echo", "tools/call"] {
        let seen = pair.calls_seen(method)[0].clone();
        assert_eq!(trace_of(&seen), (Some(OP_PARENT), None, None), "{method}");
        let meta = &seen.params()["_meta"];
        assert!(
            meta.get("io.modelcontextprotocol/protocolVersion")
                .is_none()
        );
    }
    assert_eq!(pair.calls_seen("acme/echo")[0].params()["_meta"]["x"], 1);
    // Without a context of its own a request carries none: the handshake's is its own.
    let call = traced_call("slow", None, None, None);
    let op = pair.connection.call_tool(call, pair.now);
    assert_eq!(text_of(pair.finish(op)), "ok");
    assert_eq!(
        trace_of(pair.calls_seen("tools/call")[1]),
        (None, None, None)
    );
}

#[test]
fn a_malformed_trace_member_of_the_callers_meta_is_refused_and_never_sent() {
    let mut pair = Pair::modern(Box::new(|seen| {
        Reply::Json(response(&id_of(seen), text_result("ok")))
    }));
    let sent = pair.seen.len();
    let meta = json!({"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"});
    let call = traced_call("t", None, meta.as_object().cloned(), Some(trace(OP_PARENT)));
    let op = pair.connection.call_tool(call, pair.now);
    match pair.finish(op) {
        Err(OpError::Config(message)) => assert!(message.contains("all zeros"), "{message}"),
        other => panic!("not refused: {other:?}"),
    }
    let params = json!({"_meta": {"tracestate": "a=1"}});
    let op = pair
        .connection
        .request_raw("resources/list", Some(params), None, None, pair.now);
    match pair.finish(op) {
        Err(OpError::Config(message)) => {
            assert!(message.contains("without a traceparent"), "{message}");
        }
        other => panic!("not refused: {other:?}"),
    }
    let params = json!({"name": "t", "_meta": {"baggage": "no value"}});
    let op = pair
        .connection
        .request_raw("tools/call", Some(params), None, None, pair.now);
    assert!(matches!(pair.finish(op), Err(OpError::Config(_))));
    assert_eq!(pair.seen.len(), sent, "nothing was sent");
}

// --- overload: 429 and 503 ---------------------------------------------------------------

fn overloaded(status: u16, retry_after: Option<&str>) -> Reply {
    let headers = retry_after
        .map(|value| vec![("retry-after", value.to_owned())])
        .unwrap_or_default();
    Reply::Status(status, Value::Null, headers)
}

/// The gaps between the arrivals of the requests `seen`, on the fake clock.
fn gaps(seen: &[&Seen]) -> Vec<Duration> {
    seen.windows(2).map(|w| w[1].at - w[0].at).collect()
}

#[test]
fn the_era_probe_answered_503_waits_its_retry_after_and_probes_again() {
    let mut refusals = 2;
    let pair = Pair::new(
        session::EraPolicy::Auto,
        Box::new(move |seen| match seen.rpc_method() {
            Some("server/discover") if refusals > 0 => {
                refusals -= 1;
                overloaded(503, Some("1"))
            }
            Some("server/discover") => discovered(seen),
            _ => Reply::Status(400, Value::Null, Vec::new()),
        }),
    );
    assert!(
        pair.outputs.iter().any(|o| matches!(o, Output::Connected(c)
            if c.version == ProtocolVersion::V2026_07_28)),
        "{:?}",
        pair.outputs
    );
    let probes = pair.calls_seen("server/discover");
    assert_eq!(probes.len(), 3, "two refusals, then the verdict");
    assert_eq!(gaps(&probes), [Duration::from_secs(1); 2]);
    assert!(
        pair.calls_seen("initialize").is_empty(),
        "no false 2025 verdict"
    );
}

#[test]
fn an_era_probe_whose_retry_after_passes_its_deadline_fails_at_once_as_rate_limited() {
    let pair = Pair::new(
        session::EraPolicy::Auto,
        Box::new(|_| overloaded(429, Some("60"))),
    );
    let failure = pair.outputs.iter().find_map(|o| match o {
        Output::ConnectFailed(OpError::Failed(failure)) => Some(failure.clone()),
        _ => None,
    });
    let failure = failure.unwrap_or_else(|| panic!("not failed: {:?}", pair.outputs));
    assert_rate_limited(&failure, 429, Some(60));
    assert!(
        failure.detail.contains("server/discover"),
        "{}",
        failure.detail
    );
    assert_eq!(pair.calls_seen("server/discover").len(), 1);
    assert!(
        pair.calls_seen("initialize").is_empty(),
        "a 429 is no era verdict"
    );
    let probe = pair.calls_seen("server/discover")[0].at;
    assert!(
        pair.now - probe < Duration::from_secs(1),
        "failed at once, no sleep"
    );
}

#[test]
fn a_listing_answered_429_goes_again_after_the_wait_and_endless_503_stops_at_four_attempts() {
    let mut answered = 0;
    let mut pair = Pair::modern(Box::new(move |seen| match seen.rpc_method() {
        Some("tools/list") if seen.params().get("cursor").is_none() => {
            answered += 1;
            match answered {
                1 => overloaded(429, Some("2")),
                _ => Reply::Json(response(
                    &id_of(seen),
                    json!({"tools": [tool("a")], "nextCursor": "p2", "resultType": "complete"}),
                )),
            }
        }
        // The second page: refused forever.
        Some("tools/list") => overloaded(503, None),
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    let started = pair.now;
    let op = pair.connection.list_tools(None, pair.now);
    assert_rate_limited(&failed(pair.finish(op)), 503, None);
    let lists = pair.calls_seen("tools/list");
    assert_eq!(lists.len(), 6, "page 1 twice, then page 2 four times");
    assert_eq!(lists[1].at - lists[0].at, Duration::from_secs(2));
    // The backoff: in [0.25, 0.5), [0.5, 1), [1, 2) s, far inside the 30 s page deadline.
    assert_jittered_backoff(&gaps(&lists[2..]));
    assert!(pair.now - started < limits().request_timeout);
}

/// A call the server refuses for overload (`status`, its wait `retry_after`), sent once, and
/// then a call it answers with `text`: the connection stays usable.
fn refused_then_served(pair: &mut Pair, status: u16, retry_after: Option<u64>, text: &str) {
    let op = pair.call("echo", json!({}));
    assert_rate_limited(&failed(pair.finish(op)), status, retry_after);
    assert_eq!(pair.calls_seen("tools/call").len(), 1, "never re-sent");
    let op = pair.call("echo", json!({}));
    assert_eq!(
        text_of(pair.finish(op)),
        text,
        "the connection stays usable"
    );
    assert_eq!(pair.calls_seen("tools/call").len(), 2);
}

#[test]
fn a_modern_call_answered_429_is_sent_once_and_the_next_call_goes_through() {
    let mut calls = 0;
    let mut pair = Pair::modern(Box::new(move |seen| match seen.rpc_method() {
        Some("tools/call") => {
            calls += 1;
            match calls {
                1 => Reply::Status(
                    429,
                    error(&id_of(seen), -32000, "slow down", Value::Null),
                    vec![("retry-after", "30".to_owned())],
                ),
                _ => Reply::Json(response(&id_of(seen), text_result("done"))),
            }
        }
        _ => Reply::Status(400, Value::Null, Vec::new()),
    }));
    refused_then_served(&mut pair, 429, Some(30), "done");
}

#[test]
fn a_2025_session_call_answered_503_fails_rate_limited_and_the_session_goes_on() {
    let mut calls = 0;
    let mut pair = Pair::new(
        session::EraPolicy::Legacy,
        Box::new(move |seen| match seen.rpc_method() {
            Some("initialize") => initialized(seen),
            Some("tools/call") => {
                calls += 1;
                match calls {
                    1 => overloaded(503, Some("5")),
                    _ => Reply::Json(response(&id_of(seen), text_result("later"))),
                }
            }
            _ => Reply::Status(400, Value::Null, Vec::new()),
        }),
    );
    refused_then_served(&mut pair, 503, Some(5), "later");
    let calls = pair.calls_seen("tools/call");
    assert_eq!(
        calls[1].headers.get("mcp-session-id").map(|v| v.as_bytes()),
        Some(&b"s-1"[..]),
        "the same session"
    );
    assert_eq!(pair.calls_seen("initialize").len(), 1, "no new handshake");
}

#[path = "tests_tasks.rs"]
mod tasks;

#[path = "tests_input.rs"]
mod input_rounds;
