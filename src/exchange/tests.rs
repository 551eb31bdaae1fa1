//! Deterministic tests of the Streamable HTTP exchange: the test plays the server (response
//! heads, body chunks, ends, transport errors) and the session's part (`finish`), and the
//! clock moves only when told.

// One reading of the clock gives the fake clock its origin; after that time moves only when a
// test says so.
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::{Value, json};

use super::config::{ExtraHeaders, HeaderError};
use super::credentials::{MAX_RESENDS, describe_challenge};
use super::legacy::resolve_same_origin;
use super::reply::decode_result_as;
use super::request::method_header;
use super::*;
use crate::jsonrpc::{Id, Message, Notification, Request};
use crate::secret::Secret;
use crate::session::ResumePolicy;
use serde_json::value::RawValue;

const URL: &str = "http://127.0.0.1:9/mcp";
const TOKEN: &str = "tok-SECRET-0123456789";
const JSON: &[(&str, &str)] = &[("content-type", "application/json")];
const SSE: &[(&str, &str)] = &[("content-type", "text/event-stream")];

/// A response header, as a test writes it.
type Header<'a> = (&'a str, &'a str);

/// One HTTP request the exchange asked for.
#[derive(Debug)]
struct Sent {
    stream: StreamId,
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: String,
    long_lived: bool,
}

impl Sent {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

/// One output of the exchange, as recorded.
#[derive(Debug)]
enum Event {
    Send(Sent),
    Abort(StreamId),
    Message(Message<'static>),
    Progress(f64),
    /// A response decoded by the request's `decode_result`, and its result if it is a
    /// `serde_json::Value` (what these tests decode into).
    Decoded(Id, Option<Value>),
    Failed(Id, Failure),
    Legacy,
    Down(Failure),
    Closed(Option<StatusCode>),
    Refused(Refusal),
    DpopNonce(String),
    Other(String),
}

/// The exchange under test, a fake clock, everything it has output so far and its wire log.
struct Harness {
    exchange: Exchange,
    now: Instant,
    /// The wall clock the driver reads with each response head (seconds since the epoch).
    wall: WallClock,
    events: Vec<Event>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Harness {
    fn new() -> Self {
        Harness::with(|_| {})
    }

    fn with(configure: impl FnOnce(&mut HttpConfig)) -> Self {
        Harness::seeded(7, configure)
    }

    fn seeded(seed: u64, configure: impl FnOnce(&mut HttpConfig)) -> Self {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let mut config = HttpConfig::new(URL).unwrap();
        config.wire_log = Some(Arc::new(move |line: &str| {
            sink.lock().unwrap().push(line.to_owned());
        }));
        configure(&mut config);
        Harness {
            exchange: Exchange::new(config, seed),
            now: Instant::now(),
            wall: WallClock(1_800_000_000),
            events: Vec::new(),
            log,
        }
    }

    /// Drains the exchange's outputs into the record.
    fn pump(&mut self) {
        while let Some(output) = self.exchange.poll_output() {
            let event = match output {
                Output::Send { stream, request } => Event::Send(Sent {
                    stream,
                    method: request.method,
                    uri: request.uri.to_string(),
                    headers: request.headers,
                    body: String::from_utf8(request.body).unwrap(),
                    long_lived: request.long_lived,
                }),
                Output::Abort(stream) => Event::Abort(stream),
                Output::Message(message) => Event::Message(message),
                Output::Progress(params) => Event::Progress(params.progress),
                Output::Decoded { id, result } => {
                    Event::Decoded(id, result.downcast::<Value>().ok().map(|value| *value))
                }
                Output::RequestFailed { id, failure } => Event::Failed(id, failure),
                Output::LegacyTransport => Event::Legacy,
                Output::Down(failure) => Event::Down(failure),
                Output::Closed { status } => Event::Closed(status),
                Output::Refused(refusal) => Event::Refused(refusal),
                Output::DpopNonce(nonce) => {
                    Event::DpopNonce(nonce.to_str().unwrap_or("(not text)").to_owned())
                }
                // `Output` may grow: a variant added later is recorded, not lost.
                #[allow(unreachable_patterns)]
                other => Event::Other(format!("{other:?}")),
            };
            self.events.push(event);
        }
    }

    // --- inputs ---------------------------------------------------------------------------

    /// Sends a message; returns the stream of the first request this issued, if any.
    fn send(
        &mut self,
        message: Message<'static>,
        limits: SendOptions,
        barrier: bool,
    ) -> Option<StreamId> {
        let mark = self.mark();
        self.exchange.send(message, limits, barrier, self.now);
        self.pump();
        self.sent_since(mark).first().map(|sent| sent.stream)
    }

    fn send_request(&mut self, id: i64, method: &str) -> StreamId {
        self.send(request(id, method), SendOptions::default(), false)
            .expect("the request is POSTed")
    }

    fn send_limited(&mut self, id: i64, method: &str, max_response_bytes: u64) -> StreamId {
        let limits = SendOptions {
            max_response_bytes: Some(max_response_bytes),
            ..SendOptions::default()
        };
        self.send(request(id, method), limits, false)
            .expect("the request is POSTed")
    }

    /// A request that must not be sent (after close).
    fn send_request_or_none(&mut self, id: i64) {
        assert_eq!(
            self.send(request(id, "tools/list"), SendOptions::default(), false),
            None
        );
    }

    fn notify(&mut self, method: &str) -> Option<StreamId> {
        self.send(notification(method), SendOptions::default(), false)
    }

    fn head(&mut self, stream: StreamId, status: u16, headers: &[Header]) {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value.as_bytes()).unwrap(),
            );
        }
        let status = StatusCode::from_u16(status).unwrap();
        self.exchange
            .handle_head(stream, status, &map, self.wall, self.now);
        self.pump();
    }

    fn body(&mut self, stream: StreamId, bytes: impl AsRef<[u8]>) {
        self.exchange.handle_body(stream, bytes.as_ref(), self.now);
        self.pump();
    }

    fn end(&mut self, stream: StreamId) {
        self.exchange.handle_end(stream, self.now);
        self.pump();
    }

    fn error(&mut self, stream: StreamId, error: TransportError) {
        self.exchange.handle_error(stream, error, self.now);
        self.pump();
    }

    /// Plays the session: request `id` was settled.
    fn finish(&mut self, id: i64, answered: bool) {
        self.exchange.finish(&Id::Number(id), answered, self.now);
        self.pump();
    }

    fn open_server_stream(&mut self) {
        self.exchange.open_server_stream(self.now);
        self.pump();
    }

    fn close(&mut self) {
        self.exchange.close(self.now);
        self.pump();
    }

    /// Moves the clock on and lets the exchange do what is due.
    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.exchange.handle_timeout(self.now);
        self.pump();
    }

    /// Jumps to the next deadline and handles it; returns how long the wait was.
    fn jump_to_deadline(&mut self) -> Duration {
        let at = self.exchange.poll_timeout().expect("a deadline");
        let wait = at - self.now;
        self.now = at;
        self.exchange.handle_timeout(at);
        self.pump();
        wait
    }

    /// How long until the next deadline.
    fn wait(&self) -> Option<Duration> {
        self.exchange.poll_timeout().map(|at| at - self.now)
    }

    /// A 200 JSON reply carrying `body`, whole.
    fn reply_json(&mut self, stream: StreamId, body: &str) {
        self.head(stream, 200, JSON);
        self.body(stream, body);
        self.end(stream);
    }

    /// A one-way POST answered 202.
    fn accept(&mut self, stream: StreamId) {
        self.head(stream, 202, &[]);
        self.end(stream);
    }

    /// Initializes (request 0), with the session id the server gives, if any.
    fn initialize(&mut self, session_id: Option<&str>) {
        let init = self.send_request(0, "initialize");
        let mut headers = JSON.to_vec();
        if let Some(session_id) = session_id {
            headers.push(("mcp-session-id", session_id));
        }
        self.head(init, 200, &headers);
        self.body(init, result(0));
        self.end(init);
        self.finish(0, true);
    }

    /// Initializes and forgets what was recorded.
    fn ready(&mut self, session_id: Option<&str>) {
        self.initialize(session_id);
        self.clear();
    }

    /// Falls back to the legacy transport: the initialize POST is answered 405, the GET stream
    /// gives `endpoint`. Returns the legacy event stream.
    fn legacy(&mut self, endpoint: &str) -> StreamId {
        let post = self.send_request(0, "initialize");
        self.head(post, 405, &[]);
        let get = self.last_sent().stream;
        self.head(get, 200, SSE);
        self.body(get, format!("event: endpoint\ndata: {endpoint}\n\n"));
        assert!(self.exchange.is_legacy());
        self.clear();
        get
    }

    /// A request stream answered with an event stream that ends after an event with `id`.
    fn stream_ended_after_an_id(&mut self, id: i64, prelude: &str) -> StreamId {
        let post = self.send_request(id, "tools/call");
        self.head(post, 200, SSE);
        self.body(post, format!("{prelude}id: e-1\ndata: {}\n\n", progress(1)));
        self.end(post);
        post
    }

    // --- records --------------------------------------------------------------------------

    fn mark(&self) -> usize {
        self.events.len()
    }

    fn clear(&mut self) {
        self.events.clear();
        self.log.lock().unwrap().clear();
    }

    fn sent(&self) -> Vec<&Sent> {
        self.sent_since(0)
    }

    fn sent_since(&self, mark: usize) -> Vec<&Sent> {
        self.events[mark..]
            .iter()
            .filter_map(|event| match event {
                Event::Send(sent) => Some(sent),
                _ => None,
            })
            .collect()
    }

    fn last_sent(&self) -> &Sent {
        self.sent().pop().expect("a request was issued")
    }

    fn aborted(&self) -> Vec<StreamId> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Abort(stream) => Some(*stream),
                _ => None,
            })
            .collect()
    }

    /// What reached the session, in order: messages, progress (whether decoded in one pass
    /// or as a raw message) and decoded responses.
    fn delivered(&self) -> Vec<Got> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Message(message) => Some(Got::from(message.clone())),
                Event::Progress(progress) => Some(Got::Progress(*progress)),
                Event::Decoded(id, result) => Some(Got::Decoded(id.clone(), result.clone())),
                _ => None,
            })
            .collect()
    }

    fn failures(&self) -> Vec<(&Id, &Failure)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Failed(id, failure) => Some((id, failure)),
                _ => None,
            })
            .collect()
    }

    /// The one failure of request `id`.
    fn failure(&self, id: i64) -> &Failure {
        let of: Vec<_> = self
            .failures()
            .into_iter()
            .filter(|(i, _)| **i == Id::Number(id))
            .map(|(_, failure)| failure)
            .collect();
        assert_eq!(of.len(), 1, "one failure of {id}: {:?}", self.events);
        of[0]
    }

    fn downs(&self) -> Vec<&Failure> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Down(failure) => Some(failure),
                _ => None,
            })
            .collect()
    }

    fn closed(&self) -> Vec<Option<StatusCode>> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Closed(status) => Some(*status),
                _ => None,
            })
            .collect()
    }

    fn legacy_switches(&self) -> usize {
        self.events
            .iter()
            .filter(|event| matches!(event, Event::Legacy))
            .count()
    }

    /// Outputs of variants this file does not know yet.
    fn unknown(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Other(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

// --- messages and frames ------------------------------------------------------------------

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

fn request(id: i64, method: &str) -> Message<'static> {
    Message::Request(Request::new(id, method.to_owned(), None))
}

fn notification(method: &str) -> Message<'static> {
    Message::Notification(Notification::new(method.to_owned(), None))
}

/// A success response to `id`, as a server writes it.
fn result(id: i64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
}

/// A progress notification, as a server writes it.
fn progress(n: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t","progress":{n}}}}}"#
    )
}

/// Something delivered to the session, with progress notifications taken apart (the exchange
/// may hand them over decoded, [`Output::Progress`], or raw).
#[derive(Clone, Debug, PartialEq)]
enum Got {
    Message(Message<'static>),
    Progress(f64),
    Decoded(Id, Option<Value>),
}

impl From<Message<'static>> for Got {
    fn from(message: Message<'static>) -> Self {
        if let Message::Notification(n) = &message
            && n.method == "notifications/progress"
            && let Some(params) = &n.params
        {
            let params: Value = serde_json::from_str(params.get()).unwrap();
            return Got::Progress(params["progress"].as_f64().unwrap());
        }
        Got::Message(message)
    }
}

/// What a server's JSON text delivers to the session.
fn got(text: &str) -> Got {
    Got::from(
        crate::jsonrpc::decode_message(text.as_bytes())
            .unwrap()
            .into_owned(),
    )
}

fn event(id: &str, data: &str) -> String {
    format!("id: {id}\ndata: {data}\n\n")
}

fn data(data: &str) -> String {
    format!("data: {data}\n\n")
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn policy(max_attempts: u32, initial_delay: Duration) -> ResumePolicy {
    ResumePolicy {
        max_attempts,
        initial_delay,
        max_delay: secs(10),
    }
}

// --- request headers ----------------------------------------------------------------------

#[test]
fn a_request_post_accepts_json_and_event_streams_and_carries_no_credentials_by_default() {
    let mut h = Harness::new();
    let stream = h.send_request(1, "tools/list");
    let sent = h.last_sent();
    assert_eq!(sent.stream, stream);
    assert_eq!(sent.method, Method::POST);
    assert_eq!(sent.uri, URL);
    assert_eq!(
        sent.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("mcp-session-id"), None);
    assert_eq!(sent.header("mcp-protocol-version"), None);
    assert_eq!(
        sent.json(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    );
}

#[test]
fn the_exchange_marks_the_requests_whose_response_stays_open() {
    let mut h = Harness::with(|c| c.server_stream = true);
    h.send_request(1, "tools/call");
    assert!(
        !h.last_sent().long_lived,
        "a call's reply ends with its answer"
    );
    h.exchange.set_modern(Some("2026-07-28"));
    h.send_request(2, "subscriptions/listen");
    assert!(h.last_sent().long_lived, "a listen stream stays open");
    h.exchange.set_modern(None);
    h.open_server_stream();
    let sent = h.last_sent();
    assert_eq!(sent.method, Method::GET);
    assert!(sent.long_lived, "the GET stream stays open");
}

#[test]
fn the_bearer_token_goes_on_every_request_marked_sensitive() {
    let mut h = Harness::with(|c| {
        c.bearer_token = Some(Secret::new(TOKEN));
        c.server_stream = true;
    });
    h.initialize(Some("s-1"));
    let initialized = h.notify("notifications/initialized").unwrap();
    h.accept(initialized);
    h.open_server_stream();
    h.stream_ended_after_an_id(1, "");
    h.jump_to_deadline();
    h.close();
    let methods: Vec<_> = h.sent().iter().map(|s| s.method.clone()).collect();
    assert_eq!(
        methods,
        [
            Method::POST,
            Method::POST,
            Method::GET,
            Method::POST,
            Method::GET,
            Method::DELETE
        ]
    );
    for sent in h.sent() {
        let value = sent.headers.get("authorization").expect("authorization");
        assert_eq!(value.to_str().unwrap(), format!("Bearer {TOKEN}"));
        assert!(value.is_sensitive(), "{} {}", sent.method, sent.uri);
    }
}

#[test]
fn extra_headers_go_on_every_request_marked_sensitive() {
    let mut h = Harness::with(|c| {
        c.headers.insert("X-Api-Key", Secret::new(TOKEN)).unwrap();
        c.headers
            .insert("x-tenant", Secret::new("acme-west"))
            .unwrap();
        c.server_stream = true;
    });
    h.initialize(Some("s-1"));
    let initialized = h.notify("notifications/initialized").unwrap();
    h.accept(initialized);
    h.open_server_stream();
    h.stream_ended_after_an_id(1, "");
    h.jump_to_deadline();
    h.close();
    let methods: Vec<_> = h.sent().iter().map(|s| s.method.clone()).collect();
    assert_eq!(
        methods,
        [
            Method::POST,
            Method::POST,
            Method::GET,
            Method::POST,
            Method::GET,
            Method::DELETE
        ]
    );
    for sent in h.sent() {
        for (name, expected) in [("x-api-key", TOKEN), ("x-tenant", "acme-west")] {
            let values: Vec<_> = sent.headers.get_all(name).iter().collect();
            assert_eq!(values.len(), 1, "{name} on {} {}", sent.method, sent.uri);
            assert_eq!(values[0].to_str().unwrap(), expected);
            assert!(values[0].is_sensitive(), "{name} on {}", sent.method);
        }
        // Beside, not instead of, what the exchange sets.
        assert!(sent.header("accept").is_some());
        assert_eq!(sent.header("authorization"), None);
        assert!(!format!("{sent:?}").contains(TOKEN), "{sent:?}");
    }
    // The legacy transport's requests carry them too.
    let mut h = Harness::with(|c| c.headers.insert("X-Api-Key", Secret::new(TOKEN)).unwrap());
    let post = h.send_request(0, "initialize");
    h.head(post, 405, &[]);
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(get, "event: endpoint\ndata: /messages\n\n");
    h.send_request(1, "tools/list");
    assert_eq!(h.last_sent().uri, "http://127.0.0.1:9/messages");
    let legacy: Vec<_> = h.sent().iter().map(|s| s.header("x-api-key")).collect();
    assert_eq!(legacy, [Some(TOKEN); 3]);
}

#[test]
fn extra_header_names_the_exchange_owns_and_invalid_values_are_refused() {
    let refused = [
        ("Accept", HeaderError::Reserved),
        ("content-type", HeaderError::Reserved),
        ("Content-Length", HeaderError::Reserved),
        ("HOST", HeaderError::Reserved),
        ("Authorization", HeaderError::Authorization),
        ("Mcp-Session-Id", HeaderError::Reserved),
        ("MCP-Protocol-Version", HeaderError::Reserved),
        ("Last-Event-ID", HeaderError::Reserved),
        ("Mcp-Anything-Else", HeaderError::Reserved),
        ("mcp-", HeaderError::Reserved),
        ("Transfer-Encoding", HeaderError::Reserved),
        ("Connection", HeaderError::Reserved),
        ("", HeaderError::InvalidName),
        ("X Api", HeaderError::InvalidName),
        ("X-Api:", HeaderError::InvalidName),
        ("X-Ap\u{e9}", HeaderError::InvalidName),
        ("X-Api\r\nX-Evil", HeaderError::InvalidName),
    ];
    for (name, error) in refused {
        let mut headers = ExtraHeaders::default();
        assert_eq!(
            headers.insert(name, Secret::new("value-1")),
            Err(error),
            "{name:?}"
        );
        assert_eq!(ExtraHeaders::check_name(name), Err(error), "{name:?}");
        assert!(headers.is_empty());
    }
    // Names that merely contain or resemble the owned ones are fine.
    for name in ["X-Mcp-Tenant", "Accept-Language", "McpTenant", "X-Api-Key"] {
        assert!(ExtraHeaders::check_name(name).is_ok(), "{name}");
    }
    let mut headers = ExtraHeaders::default();
    for value in ["a\rb", "a\nb", "a\0b", "a\u{7f}b", "line\r\nX-Evil: 1"] {
        assert_eq!(
            headers.insert("X-Api-Key", Secret::new(value)),
            Err(HeaderError::InvalidValue),
            "{value:?}"
        );
    }
    headers
        .insert("X-Api-Key", Secret::new("with\ttab and space"))
        .unwrap();
    assert_eq!(
        headers.insert("x-api-KEY", Secret::new(TOKEN)),
        Err(HeaderError::Duplicate)
    );
    let names: Vec<_> = headers.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["x-api-key"]);
    // The error never carries the value.
    let message = HeaderError::InvalidValue.to_string();
    assert!(!message.contains("line"), "{message}");
}

#[test]
fn debug_output_shows_extra_header_names_not_values() {
    let mut config = HttpConfig::new(URL).unwrap();
    config
        .headers
        .insert("X-Api-Key", Secret::new(TOKEN))
        .unwrap();
    let exchange = Exchange::new(config.clone(), 1);
    for printed in [format!("{config:?}"), format!("{:?}", config.headers)] {
        assert!(printed.contains("x-api-key"), "{printed}");
        assert!(!printed.contains(TOKEN), "{printed}");
    }
    assert!(!format!("{exchange:?}").contains(TOKEN));
    assert_eq!(config.secrets(), [Secret::new(TOKEN)]);
}

#[test]
fn the_session_id_of_the_initialize_reply_goes_on_every_later_request() {
    let mut h = Harness::with(|c| c.server_stream = true);
    let init = h.send_request(0, "initialize");
    assert_eq!(h.last_sent().header("mcp-session-id"), None);
    let headers = [JSON[0], ("mcp-session-id", "sess-42")];
    h.head(init, 200, &headers);
    assert_eq!(h.exchange.session_id(), Some("sess-42"));
    h.body(init, result(0));
    h.end(init);
    h.finish(0, true);
    h.clear();

    h.notify("notifications/initialized").unwrap();
    h.send_request(1, "tools/list");
    h.open_server_stream();
    h.close();
    let sent = h.sent();
    assert_eq!(sent.len(), 4);
    for sent in &sent {
        assert_eq!(sent.header("mcp-session-id"), Some("sess-42"), "{sent:?}");
    }
    // GET and DELETE carry no body, hence no Content-Type.
    assert_eq!(sent[2].method, Method::GET);
    assert_eq!(sent[2].header("content-type"), None);
    assert_eq!(sent[3].method, Method::DELETE);
    assert_eq!(sent[3].header("content-type"), None);
}

#[test]
fn a_session_id_is_taken_only_from_a_successful_initialize_reply() {
    let mut h = Harness::new();
    let init = h.send_request(0, "initialize");
    h.head(init, 500, &[("mcp-session-id", "from-a-500")]);
    assert_eq!(h.exchange.session_id(), None);

    let list = h.send_request(1, "tools/list");
    let headers = [JSON[0], ("mcp-session-id", "from-tools-list")];
    h.head(list, 200, &headers);
    assert_eq!(h.exchange.session_id(), None);

    h.send_request(2, "tools/list");
    assert_eq!(h.last_sent().header("mcp-session-id"), None);
}

#[test]
fn an_invalid_session_id_fails_initialize_as_protocol() {
    let too_long = "a".repeat(1025);
    let cases = [
        ("a space", "sess 1"),
        ("longer than 1024 bytes", too_long.as_str()),
        ("not ASCII", "caf\u{e9}"),
    ];
    for (name, value) in cases {
        let mut h = Harness::new();
        let init = h.send_request(0, "initialize");
        let headers = [JSON[0], ("mcp-session-id", value)];
        h.head(init, 200, &headers);
        let failure = h.failure(0);
        assert_eq!(failure.kind, FailureKind::Protocol, "{name}");
        assert_eq!(failure.delivery, Delivery::Answered, "{name}");
        assert!(
            failure.detail.contains("Mcp-Session-Id"),
            "{name}: {failure}"
        );
        assert_eq!(h.aborted(), [init], "{name}");
        assert_eq!(h.exchange.session_id(), None, "{name}");
        h.send_request(1, "tools/list");
        assert_eq!(h.last_sent().header("mcp-session-id"), None, "{name}");
    }
    // The longest accepted.
    let longest = "b".repeat(1024);
    let mut h = Harness::new();
    h.initialize(Some(&longest));
    assert_eq!(h.exchange.session_id(), Some(longest.as_str()));
    assert!(
        h.failures()
            .iter()
            .all(|(_, f)| f.kind == FailureKind::Protocol
                && f.detail.contains("does not contain the response"))
    );
}

#[test]
fn the_protocol_version_goes_on_every_request_once_set() {
    let mut h = Harness::with(|c| c.server_stream = true);
    h.send_request(1, "initialize");
    assert_eq!(h.last_sent().header("mcp-protocol-version"), None);
    h.exchange.set_protocol_version("2025-11-25");
    h.notify("notifications/initialized").unwrap();
    h.send_request(2, "tools/list");
    h.open_server_stream();
    let sent = h.sent();
    assert_eq!(sent.len(), 4);
    for sent in &sent[1..] {
        assert_eq!(
            sent.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{sent:?}"
        );
    }
}

// --- status classes -----------------------------------------------------------------------

#[test]
fn a_2xx_json_reply_delivers_its_messages_then_a_failure_the_session_ignores() {
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON",
    ] {
        let mut h = Harness::new();
        let post = h.send_request(1, "tools/list");
        h.head(post, 200, &[("content-type", content_type)]);
        let body = format!("[{},{}]", progress(1), result(1));
        let (a, b) = body.split_at(20);
        h.body(post, a);
        h.body(post, b);
        assert!(h.delivered().is_empty(), "a JSON body is read whole");
        h.end(post);
        assert_eq!(
            h.delivered(),
            [got(&progress(1)), got(&result(1))],
            "{content_type}"
        );
        let failure = h.failure(1);
        assert_eq!(failure.kind, FailureKind::Protocol);
        assert_eq!(failure.delivery, Delivery::Answered);
        assert!(failure.detail.contains("does not contain the response"));
        // The failure comes after the messages, so the session has settled the request first.
        assert!(matches!(h.events.last(), Some(Event::Failed(..))));
        assert!(h.aborted().is_empty());
        h.finish(1, true);
        assert!(h.aborted().is_empty());
    }
}

#[test]
fn a_2xx_event_stream_reply_delivers_its_messages_as_they_arrive() {
    for content_type in [
        "text/event-stream",
        "text/event-stream; charset=utf-8",
        "Text/Event-Stream",
        "TEXT/EVENT-STREAM;charset=UTF-8",
    ] {
        let mut h = Harness::new();
        let post = h.send_request(1, "tools/call");
        h.head(post, 200, &[("content-type", content_type)]);
        h.body(post, data(&progress(1)));
        assert_eq!(h.delivered(), [got(&progress(1))], "{content_type}");
        h.body(post, data(&result(1)));
        assert_eq!(
            h.delivered(),
            [got(&progress(1)), got(&result(1))],
            "{content_type}"
        );
        assert!(h.failures().is_empty(), "{content_type}");
        assert!(h.aborted().is_empty(), "{content_type}");
    }
}

#[test]
fn an_empty_reply_to_a_request_is_a_protocol_failure_that_may_have_reached() {
    let cases: [(u16, &[Header]); 4] = [
        (202, &[]),
        (204, &[]),
        (
            200,
            &[
                ("content-type", "application/json"),
                ("content-length", "0"),
            ],
        ),
        (
            200,
            &[
                ("content-type", "text/event-stream"),
                ("content-length", "0"),
            ],
        ),
    ];
    for (status, headers) in cases {
        let mut h = Harness::new();
        let post = h.send_request(1, "tools/list");
        h.head(post, status, headers);
        let failure = h.failure(1);
        assert_eq!(failure.kind, FailureKind::Protocol, "{status} {headers:?}");
        assert_eq!(failure.delivery, Delivery::MayHaveReached, "{status}");
        assert!(failure.detail.contains("no body"), "{failure}");
        assert_eq!(h.aborted(), [post]);
    }
}

#[test]
fn another_content_type_is_a_protocol_failure_with_a_snippet_of_the_body() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/list");
    h.head(post, 200, &[("content-type", "text/html; charset=utf-8")]);
    h.body(post, "<html>Bad ");
    h.body(post, "gateway</html>\n");
    assert!(h.failures().is_empty(), "the body is read to its end first");
    h.end(post);
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::Protocol);
    assert_eq!(failure.delivery, Delivery::Answered);
    assert!(failure.detail.contains("\"text/html\""), "{failure}");
    assert!(
        failure.detail.contains("<html>Bad gateway</html>"),
        "{failure}"
    );

    // No content type at all.
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/list");
    h.head(post, 200, &[]);
    h.body(post, "hello");
    h.end(post);
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::Protocol);
    assert!(failure.detail.contains("hello"), "{failure}");

    // A long body is cut: the stream is dropped once the snippet is full.
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/list");
    h.head(post, 200, &[("content-type", "text/plain")]);
    h.body(post, "x".repeat(600));
    assert_eq!(h.aborted(), [post]);
    let failure = h.failure(1);
    assert!(failure.detail.contains(&"x".repeat(512)), "{failure}");
    assert!(!failure.detail.contains(&"x".repeat(513)), "{failure}");
}

#[test]
fn statuses_that_are_not_a_usable_reply_fail_the_request() {
    struct Case {
        status: u16,
        headers: &'static [(&'static str, &'static str)],
        session: bool,
        kind: FailureKind,
        delivery: Delivery,
        detail: &'static [&'static str],
    }
    use Delivery::{MayHaveReached, Refused};
    use FailureKind::{HttpStatus, RateLimited, SessionExpired, Unauthorized};
    const CHALLENGE: &str = r#"Bearer resource_metadata="https://as.example/.well-known/oauth-protected-resource", scope="tools:read tools:call", error="invalid_token""#;
    let redirect = |status| Case {
        status,
        headers: &[("location", "http://other.example/mcp")],
        session: false,
        kind: HttpStatus { status },
        delivery: Refused,
        detail: &["redirects are not followed", "http://other.example/mcp"],
    };
    let refused = |status| Case {
        status,
        headers: &[],
        session: false,
        kind: HttpStatus { status },
        delivery: Refused,
        detail: &["refused the request"],
    };
    let server_error = |status| Case {
        status,
        headers: &[],
        session: true,
        kind: HttpStatus { status },
        delivery: MayHaveReached,
        detail: &["failed"],
    };
    let cases = [
        redirect(301),
        redirect(302),
        redirect(307),
        redirect(308),
        Case {
            status: 303,
            headers: &[],
            session: false,
            kind: HttpStatus { status: 303 },
            delivery: Refused,
            detail: &["redirects are not followed"],
        },
        Case {
            status: 401,
            headers: &[("www-authenticate", CHALLENGE)],
            session: false,
            kind: Unauthorized { status: 401 },
            delivery: Refused,
            detail: &[
                "scheme Bearer",
                r#"resource_metadata="https://as.example/.well-known/oauth-protected-resource""#,
                r#"scope="tools:read tools:call""#,
                r#"error="invalid_token""#,
            ],
        },
        Case {
            status: 403,
            headers: &[(
                "www-authenticate",
                r#"Bearer error="insufficient_scope", scope="admin""#,
            )],
            session: true,
            kind: Unauthorized { status: 403 },
            delivery: Refused,
            detail: &[
                "scheme Bearer",
                r#"scope="admin""#,
                r#"error="insufficient_scope""#,
            ],
        },
        Case {
            status: 401,
            headers: &[],
            session: false,
            kind: Unauthorized { status: 401 },
            delivery: Refused,
            detail: &["no WWW-Authenticate"],
        },
        Case {
            status: 404,
            headers: &[],
            session: true,
            kind: SessionExpired,
            delivery: Refused,
            detail: &["no longer knows this session"],
        },
        Case {
            status: 404,
            headers: &[],
            session: false,
            kind: HttpStatus { status: 404 },
            delivery: Refused,
            detail: &["404"],
        },
        refused(400),
        refused(405),
        refused(409),
        refused(422),
        // Overloaded: refused unhandled, and a call is not sent again.
        Case {
            status: 429,
            headers: &[("retry-after", "3")],
            session: false,
            kind: RateLimited {
                status: 429,
                retry_after: Some(Duration::from_secs(3)),
            },
            delivery: Refused,
            detail: &["429", "Retry-After 3 s", "did not run"],
        },
        server_error(500),
        server_error(502),
        Case {
            status: 503,
            headers: &[],
            session: true,
            kind: RateLimited {
                status: 503,
                retry_after: None,
            },
            delivery: Refused,
            detail: &["503"],
        },
    ];
    for case in cases {
        let mut h = Harness::new();
        h.ready(case.session.then_some("s-1"));
        let post = h.send_request(1, "tools/call");
        h.head(post, case.status, case.headers);
        let failure = h.failure(1);
        assert_eq!(failure.kind, case.kind, "{}: {failure}", case.status);
        assert_eq!(failure.delivery, case.delivery, "{}", case.status);
        for part in case.detail {
            assert!(
                failure.detail.contains(part),
                "{}: {part:?} in {failure}",
                case.status
            );
        }
        assert_eq!(h.aborted(), [post], "{}", case.status);
        assert!(h.sent().len() == 1, "{}: no second request", case.status);
    }
}

// --- JSON bodies --------------------------------------------------------------------------

#[test]
fn a_json_body_that_is_not_json_rpc_is_a_protocol_failure() {
    for body in [
        "not json",
        "",
        "{}",
        r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        "[]",
    ] {
        let mut h = Harness::new();
        let post = h.send_request(1, "tools/list");
        h.reply_json(post, body);
        assert!(h.delivered().is_empty(), "{body:?}");
        let failure = h.failure(1);
        assert_eq!(failure.kind, FailureKind::Protocol, "{body:?}");
        assert_eq!(failure.delivery, Delivery::Answered, "{body:?}");
        assert!(failure.detail.contains("not JSON-RPC"), "{failure}");
    }
}

#[test]
fn a_json_body_over_the_limit_is_refused_and_dropped() {
    let mut h = Harness::with(|c| c.limits.max_body_bytes = 64);
    let post = h.send_request(1, "tools/list");
    h.head(post, 200, JSON);
    h.body(post, " ".repeat(60));
    h.body(post, "    ");
    assert!(h.failures().is_empty(), "exactly the limit is accepted");
    h.body(post, " ");
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::LimitExceeded);
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert!(failure.detail.contains("64-byte"), "{failure}");
    assert_eq!(h.aborted(), [post]);
    h.end(post);
    assert_eq!(h.failures().len(), 1, "nothing more after the abort");
}

#[test]
fn the_reply_budget_is_counted_across_chunks() {
    let mut h = Harness::new();
    let post = h.send_limited(1, "tools/call", 10);
    h.head(post, 200, JSON);
    h.body(post, "123456");
    h.body(post, "7890");
    assert!(h.failures().is_empty());
    h.body(post, "1");
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::ReplyOverBudget { limit: 10 });
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert_eq!(h.aborted(), [post]);
}

#[test]
fn the_reply_budget_is_counted_across_resumptions() {
    let first = event("1", &progress(1));
    let limit = first.len() as u64 + 10;
    let mut h = Harness::new();
    let post = h.send_limited(1, "tools/call", limit);
    h.head(post, 200, SSE);
    h.body(post, &first);
    h.end(post);
    h.jump_to_deadline();
    let get = h.last_sent();
    assert_eq!(get.method, Method::GET);
    let get = get.stream;
    h.head(get, 200, SSE);
    h.body(get, ": 2345678\n");
    assert!(h.failures().is_empty(), "exactly the budget is accepted");
    h.body(get, "\n");
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::ReplyOverBudget { limit });
    assert_eq!(h.aborted(), [get]);
}

// --- event streams ------------------------------------------------------------------------

#[test]
fn events_are_delivered_in_order_across_chunk_boundaries() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    let stream = format!(
        "{}{}{}",
        event("1", &progress(1)),
        event("2", &progress(2)),
        event("3", &result(1))
    );
    for chunk in stream.as_bytes().chunks(7) {
        h.body(post, chunk);
    }
    assert_eq!(
        h.delivered(),
        [got(&progress(1)), got(&progress(2)), got(&result(1))]
    );
    assert!(h.failures().is_empty());
}

#[test]
fn a_priming_event_is_not_delivered_but_gives_an_id_to_resume_from() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, "id: prime-1\ndata:\n\n");
    h.body(post, "id: prime-2\ndata\n\n");
    assert!(h.delivered().is_empty());
    h.end(post);
    assert!(h.failures().is_empty(), "{:?}", h.events);
    h.jump_to_deadline();
    assert_eq!(h.last_sent().header("last-event-id"), Some("prime-2"));
}

#[test]
fn progress_on_a_request_stream_is_handed_over_decoded() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, data(&progress(3)));
    assert!(
        matches!(&h.events[..], [Event::Send(_), Event::Progress(p)] if *p == 3.0),
        "{:?}",
        h.events
    );
}

#[test]
fn a_wrong_guess_at_what_a_reply_is_costs_a_pass_and_changes_nothing() {
    let options = || SendOptions {
        decode_result: Some(decode_result_as::<Value>),
        ..SendOptions::default()
    };
    // A notification whose method comes late is read as a response first, and a response
    // whose result names a method early as progress first: both still arrive as they are.
    let late_method = format!(
        r#"{{"params":{{"progressToken":"t","progress":2,"message":"{}"}},"jsonrpc":"2.0","method":"notifications/progress"}}"#,
        "x".repeat(80)
    );
    let early_method = r#"{"jsonrpc":"2.0","id":1,"result":{"method":"tools/call"}}"#;
    let mut h = Harness::new();
    let post = h.send(request(1, "tools/call"), options(), false).unwrap();
    h.head(post, 200, SSE);
    h.body(post, data(&late_method));
    h.body(post, data(early_method));
    assert_eq!(
        h.delivered(),
        [
            Got::Progress(2.0),
            Got::Decoded(Id::Number(1), Some(json!({"method": "tools/call"})))
        ]
    );
}

#[test]
fn a_response_is_decoded_with_the_requests_decoder() {
    let options = || SendOptions {
        decode_result: Some(decode_result_as::<Value>),
        ..SendOptions::default()
    };
    // On an event stream and in a JSON body.
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#;
    let mut h = Harness::new();
    let post = h.send(request(1, "tools/call"), options(), false).unwrap();
    h.head(post, 200, SSE);
    h.body(post, data(&progress(1)));
    h.body(post, data(answer));
    assert_eq!(
        h.delivered(),
        [
            Got::Progress(1.0),
            Got::Decoded(Id::Number(1), Some(json!({"a": 1})))
        ]
    );
    let mut h = Harness::new();
    let post = h.send(request(1, "tools/call"), options(), false).unwrap();
    h.reply_json(post, answer);
    assert_eq!(
        h.delivered(),
        [Got::Decoded(Id::Number(1), Some(json!({"a": 1})))]
    );
    assert_eq!(
        h.failure(1).kind,
        FailureKind::Protocol,
        "ignored by the session"
    );

    // An error response, and a result that echoes the token, stay messages.
    let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#;
    let echo = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{TOKEN}"}}}}"#);
    for (text, token) in [(error, false), (echo.as_str(), true)] {
        let mut h = Harness::with(|c| {
            if token {
                c.bearer_token = Some(Secret::new(TOKEN));
            }
        });
        let post = h.send(request(1, "tools/call"), options(), false).unwrap();
        h.head(post, 200, SSE);
        h.body(post, data(text));
        assert_eq!(h.delivered(), [got(text)], "{text}");
    }
}

#[test]
fn events_of_other_types_are_skipped() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(
        post,
        format!(
            "event: ping\ndata: {}\n\nevent: endpoint\ndata: /x\n\n: comment\n\nevent: message\ndata: {}\n\n",
            progress(1),
            result(1)
        ),
    );
    assert_eq!(h.delivered(), [got(&result(1))]);
    assert!(h.failures().is_empty());
}

#[test]
fn an_event_that_is_not_json_rpc_fails_the_request() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(
        post,
        format!("{}data: hello\n\n{}", data(&progress(1)), data(&result(1))),
    );
    assert_eq!(
        h.delivered(),
        [got(&progress(1))],
        "nothing after the refusal"
    );
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::Protocol);
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert!(failure.detail.contains("not JSON-RPC"), "{failure}");
    assert_eq!(h.aborted(), [post]);
}

#[test]
fn an_event_stream_line_over_the_limit_fails_the_request() {
    let mut h = Harness::with(|c| c.limits.sse.max_line_bytes = 64);
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, format!("data: {}\n\n", "x".repeat(100)));
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::LimitExceeded);
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert!(failure.detail.contains("64-byte"), "{failure}");
    assert_eq!(h.aborted(), [post]);
}

#[test]
fn an_answered_stream_is_drained_up_to_64_kib() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, data(&result(1)));
    assert_eq!(h.delivered(), [got(&result(1))]);
    h.finish(1, true);
    assert!(
        h.aborted().is_empty(),
        "read on so the connection is reused"
    );
    h.body(post, vec![b':'; 64 * 1024 - 10]);
    h.body(post, b": 3456789\n");
    assert!(h.aborted().is_empty(), "64 KiB are read");
    assert_eq!(h.delivered().len(), 1);
    h.body(post, b"\n");
    assert_eq!(h.aborted(), [post]);
    assert_eq!(h.wait(), None);
    assert!(h.failures().is_empty());
}

#[test]
fn an_answered_stream_is_drained_for_one_second() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, data(&result(1)));
    h.finish(1, true);
    assert_eq!(h.wait(), Some(secs(1)));
    h.advance(ms(999));
    assert!(h.aborted().is_empty());
    h.advance(ms(1));
    assert_eq!(h.aborted(), [post]);
    assert_eq!(h.wait(), None);

    // A stream that ends within the drain just ends.
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, event("9", &result(1)));
    h.finish(1, true);
    h.end(post);
    assert!(h.aborted().is_empty());
    assert!(h.failures().is_empty());
    assert_eq!(h.wait(), None, "no resumption of an answered stream");
}

#[test]
fn a_request_settled_without_an_answer_is_dropped_at_once() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, event("1", &progress(1)));
    h.finish(1, false);
    assert_eq!(h.aborted(), [post]);
    h.body(post, data(&result(1)));
    h.end(post);
    assert_eq!(h.delivered().len(), 1);
    assert!(h.failures().is_empty());
    assert_eq!(h.wait(), None);

    // Before its head, too.
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.finish(1, false);
    assert_eq!(h.aborted(), [post]);
}

#[test]
fn a_request_settled_while_its_unusable_reply_trickles_is_dropped() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/list");
    h.head(post, 200, &[("content-type", "text/html")]);
    h.body(post, "<html>");
    h.finish(1, false);
    assert_eq!(h.aborted(), [post]);
}

// --- resuming a response stream -----------------------------------------------------------

#[test]
fn a_stream_that_ends_before_the_response_without_an_id_fails() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, data(&progress(1)));
    h.end(post);
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::ConnectionLost);
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert!(
        failure.detail.contains("no event id to resume from"),
        "{failure}"
    );
    assert_eq!(h.wait(), None);
}

#[test]
fn a_stream_that_ends_after_an_id_is_resumed_with_last_event_id() {
    let mut h = Harness::new();
    h.ready(Some("s-1"));
    h.exchange.set_protocol_version("2025-11-25");
    h.stream_ended_after_an_id(1, "");
    assert!(h.failures().is_empty());
    assert_eq!(h.sent().len(), 1, "no GET before the wait");
    assert!(h.wait().is_some());
    h.jump_to_deadline();
    let get = h.last_sent();
    assert_eq!(get.method, Method::GET);
    assert_eq!(get.uri, URL);
    assert_eq!(get.header("last-event-id"), Some("e-1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("content-type"), None);
    assert_eq!(get.header("mcp-session-id"), Some("s-1"));
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-11-25"));
    assert!(get.body.is_empty());
    let get = get.stream;
    h.head(get, 200, SSE);
    h.body(get, event("e-2", &result(1)));
    assert_eq!(h.delivered(), [got(&progress(1)), got(&result(1))]);
    h.finish(1, true);
    assert!(h.aborted().is_empty(), "drained like the first stream");
    h.end(get);
    assert!(h.failures().is_empty());
    assert_eq!(h.wait(), None);
}

#[test]
fn the_servers_retry_sets_the_wait_exactly() {
    let mut h = Harness::new();
    h.stream_ended_after_an_id(1, "retry: 1500\n\n");
    assert_eq!(h.wait(), Some(ms(1500)));
    h.advance(ms(1499));
    assert_eq!(h.sent().len(), 1);
    h.advance(ms(1));
    assert_eq!(h.sent().len(), 2);
    let get = h.last_sent().stream;
    h.error(get, TransportError::Connect("refused".into()));
    assert_eq!(h.wait(), Some(ms(1500)), "retry, not the backoff");
}

#[test]
fn without_retry_the_wait_follows_the_backoff_with_jitter() {
    let mut h = Harness::with(|c| c.resume = policy(5, secs(1)));
    h.stream_ended_after_an_id(1, "");
    for backoff in [secs(1), secs(2), secs(4), secs(8)] {
        let wait = h.wait().unwrap();
        assert!(
            wait >= backoff / 2 && wait <= backoff,
            "{wait:?} within [{:?}, {backoff:?}]",
            backoff / 2
        );
        h.advance(wait - ms(1));
        let sent = h.sent().len();
        h.advance(ms(1));
        assert_eq!(
            h.sent().len(),
            sent + 1,
            "the GET goes when the wait is over"
        );
        let get = h.last_sent().stream;
        h.error(get, TransportError::Lost("reset".into()));
    }
}

#[test]
fn a_resume_refused_with_405_fails_the_request() {
    let mut h = Harness::new();
    h.stream_ended_after_an_id(1, "");
    h.jump_to_deadline();
    let get = h.last_sent().stream;
    h.head(get, 405, &[]);
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::ConnectionLost);
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert!(failure.detail.contains("405"), "{failure}");
    assert_eq!(h.aborted(), [get]);
    assert_eq!(h.wait(), None);
}

#[test]
fn a_resume_answered_404_with_a_session_means_it_expired() {
    let mut h = Harness::new();
    h.ready(Some("s-1"));
    h.stream_ended_after_an_id(1, "");
    h.jump_to_deadline();
    let get = h.last_sent().stream;
    h.head(get, 404, &[]);
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::SessionExpired);
    assert_eq!(h.aborted(), [get]);
    assert_eq!(h.wait(), None);
}

#[test]
fn a_transport_error_on_the_resume_get_leads_to_another_attempt() {
    for error in [
        TransportError::Connect("refused".into()),
        TransportError::Lost("reset".into()),
    ] {
        let mut h = Harness::new();
        h.stream_ended_after_an_id(1, "");
        h.jump_to_deadline();
        let get = h.last_sent().stream;
        h.error(get, error.clone());
        assert!(h.failures().is_empty(), "{error:?}");
        h.jump_to_deadline();
        let again = h.last_sent();
        assert_ne!(again.stream, get);
        assert_eq!(again.method, Method::GET);
        assert_eq!(again.header("last-event-id"), Some("e-1"));
    }
}

#[test]
fn resumption_gives_up_after_max_attempts_without_new_events() {
    let mut h = Harness::with(|c| c.resume = policy(3, ms(100)));
    h.stream_ended_after_an_id(1, "");
    for attempt in 1..=3 {
        assert!(h.failures().is_empty(), "attempt {attempt}");
        h.jump_to_deadline();
        let get = h.last_sent();
        assert_eq!(get.method, Method::GET);
        let get = get.stream;
        h.error(get, TransportError::Connect("refused".into()));
    }
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::ConnectionLost);
    assert!(failure.detail.contains("resuming it failed"), "{failure}");
    assert_eq!(h.sent().len(), 4, "the POST and three GETs");
    assert_eq!(h.wait(), None);
}

#[test]
fn new_events_reset_the_attempts() {
    let mut h = Harness::with(|c| c.resume = policy(2, ms(100)));
    h.stream_ended_after_an_id(1, "");
    h.jump_to_deadline();
    let get = h.last_sent().stream;
    h.error(get, TransportError::Connect("refused".into()));
    h.jump_to_deadline();
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(get, event("e-2", &progress(2)));
    h.end(get);
    // Two more quiet attempts are allowed.
    for _ in 0..2 {
        assert!(h.failures().is_empty());
        h.jump_to_deadline();
        let get = h.last_sent();
        assert_eq!(get.header("last-event-id"), Some("e-2"));
        let get = get.stream;
        h.error(get, TransportError::Connect("refused".into()));
    }
    assert_eq!(h.failure(1).kind, FailureKind::ConnectionLost);
    assert_eq!(h.sent().len(), 5, "the POST and four GETs");
}

#[test]
fn new_events_without_an_id_reset_the_attempts() {
    let mut h = Harness::with(|c| c.resume = policy(2, ms(100)));
    h.stream_ended_after_an_id(1, "");
    h.jump_to_deadline();
    let get = h.last_sent().stream;
    h.error(get, TransportError::Connect("refused".into()));
    h.jump_to_deadline();
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(get, data(&progress(2)));
    h.end(get);
    assert!(h.failures().is_empty(), "{:?}", h.failures());
    assert!(h.wait().is_some());
}

#[test]
fn a_broken_body_is_resumed_like_an_end() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    h.body(post, event("e-7", &progress(1)));
    h.error(post, TransportError::Lost("connection reset".into()));
    assert!(h.failures().is_empty());
    h.jump_to_deadline();
    let get = h.last_sent();
    assert_eq!(get.method, Method::GET);
    assert_eq!(get.header("last-event-id"), Some("e-7"));
}

#[test]
fn a_request_settled_while_waiting_to_resume_is_not_resumed() {
    let mut h = Harness::new();
    h.stream_ended_after_an_id(1, "");
    h.finish(1, false);
    assert_eq!(h.wait(), None);
    h.advance(secs(60));
    assert_eq!(h.sent().len(), 1);
}

#[test]
fn the_same_seed_gives_the_same_waits() {
    fn waits(seed: u64) -> Vec<Duration> {
        let mut h = Harness::seeded(seed, |c| c.resume = policy(5, secs(1)));
        h.stream_ended_after_an_id(1, "");
        let mut waits = Vec::new();
        for _ in 0..4 {
            waits.push(h.jump_to_deadline());
            let get = h.last_sent().stream;
            h.error(get, TransportError::Connect("refused".into()));
        }
        waits
    }
    assert_eq!(waits(1), waits(1));
    // Small seeds too: the exchange spreads the seed over all 64 bits before using it.
    let firsts: std::collections::BTreeSet<_> = (1..=16).map(|n| waits(n)[0]).collect();
    assert!(firsts.len() > 8, "other seeds give other waits: {firsts:?}");
}

// --- transport errors ---------------------------------------------------------------------

#[test]
fn a_request_without_a_response_head_fails_by_how_far_it_got() {
    let cases = [
        (
            Some(TransportError::Connect("connection refused".into())),
            FailureKind::Connect,
            Delivery::NotSent,
            "connection refused",
        ),
        (
            Some(TransportError::Lost("connection reset".into())),
            FailureKind::ConnectionLost,
            Delivery::MayHaveReached,
            "connection reset",
        ),
        (
            None,
            FailureKind::ConnectionLost,
            Delivery::MayHaveReached,
            "no response",
        ),
    ];
    for (error, kind, delivery, detail) in cases {
        let mut h = Harness::new();
        let post = h.send_request(1, "tools/call");
        match error.clone() {
            Some(error) => h.error(post, error),
            None => h.end(post),
        }
        let failure = h.failure(1);
        assert_eq!(failure.kind, kind, "{error:?}");
        assert_eq!(failure.delivery, delivery, "{error:?}");
        assert!(failure.detail.contains(detail), "{failure}");
        assert_eq!(h.wait(), None);
    }
}

#[test]
fn a_json_body_that_breaks_off_fails_the_request() {
    let mut h = Harness::new();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, JSON);
    h.body(post, r#"{"jsonrpc":"2.0","#);
    h.error(post, TransportError::Lost("reset".into()));
    let failure = h.failure(1);
    assert_eq!(failure.kind, FailureKind::ConnectionLost);
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert!(h.delivered().is_empty());
}

// --- one-way messages ---------------------------------------------------------------------

#[test]
fn one_way_messages_are_posted_one_at_a_time_in_order() {
    let mut h = Harness::new();
    let first = h.notify("notifications/a").expect("the first goes at once");
    let response = Message::response_ok(7, raw(r#"{"ok":true}"#));
    assert_eq!(h.send(response, SendOptions::default(), false), None);
    assert_eq!(h.notify("notifications/c"), None);
    assert_eq!(h.sent().len(), 1);
    let sent = h.last_sent();
    assert_eq!(sent.method, Method::POST);
    assert_eq!(sent.uri, URL);
    assert_eq!(
        sent.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.json()["method"], "notifications/a");

    h.head(first, 202, &[]);
    assert_eq!(h.sent().len(), 1, "not before the body ended");
    h.end(first);
    let second = h.last_sent();
    assert_eq!(
        second.json(),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"ok": true}})
    );
    // An error status or a broken connection lets the next one go all the same.
    let second = second.stream;
    h.head(second, 400, &[("content-type", "text/plain")]);
    h.body(second, "no");
    h.end(second);
    let third = h.last_sent();
    assert_eq!(third.json()["method"], "notifications/c");
    let third = third.stream;
    h.error(third, TransportError::Lost("reset".into()));
    assert_eq!(h.sent().len(), 3);
    assert!(h.failures().is_empty());
    assert!(h.delivered().is_empty());
}

#[test]
fn a_one_way_post_that_takes_too_long_is_dropped_and_the_next_goes() {
    let mut h = Harness::with(|c| c.post_timeout = secs(5));
    let first = h.notify("notifications/a").unwrap();
    h.notify("notifications/b");
    assert_eq!(h.wait(), Some(secs(5)));
    h.advance(ms(4999));
    assert!(h.aborted().is_empty());
    h.advance(ms(1));
    assert_eq!(h.aborted(), [first]);
    let second = h.last_sent();
    assert_eq!(second.json()["method"], "notifications/b");
    // A head without an end is still bounded.
    let second = second.stream;
    h.head(second, 202, &[]);
    h.advance(secs(5));
    assert_eq!(h.aborted(), [first, second]);
}

#[test]
fn the_one_way_queue_is_bounded() {
    let mut h = Harness::new();
    for n in 0..1030 {
        let params = raw(&format!(r#"{{"n":{n}}}"#));
        let message = Message::notification("notifications/n", Some(params));
        h.send(message, SendOptions::default(), false);
    }
    assert!(
        h.log_lines()
            .iter()
            .any(|line| line.contains("the queue is full")),
        "the drop is logged"
    );
    let mut posted = Vec::new();
    while let Some(stream) = h
        .sent()
        .last()
        .map(|sent| sent.stream)
        .filter(|stream| posted.last() != Some(stream))
    {
        posted.push(stream);
        h.accept(stream);
    }
    // One in flight, 1024 queued; the last five were dropped.
    assert_eq!(posted.len(), 1025);
    assert_eq!(h.last_sent().json()["params"]["n"], 1024);
}

#[test]
fn a_barrier_holds_later_messages_until_it_is_delivered() {
    #[derive(Debug, Clone, Copy)]
    enum Delivered {
        Answered,
        Broke,
        TimedOut,
    }
    for how in [Delivered::Answered, Delivered::Broke, Delivered::TimedOut] {
        let mut h = Harness::with(|c| c.server_stream = true);
        let barrier = h
            .send(
                notification("notifications/initialized"),
                SendOptions::default(),
                true,
            )
            .unwrap();
        assert_eq!(
            h.send(request(1, "tools/list"), Default::default(), false),
            None
        );
        assert_eq!(h.notify("notifications/roots/list_changed"), None);
        h.open_server_stream();
        assert_eq!(h.sent().len(), 1, "{how:?}: all held");
        h.head(barrier, 202, &[]);
        assert_eq!(h.sent().len(), 1, "{how:?}: held until the body ended");
        match how {
            Delivered::Answered => h.end(barrier),
            Delivered::Broke => h.error(barrier, TransportError::Lost("reset".into())),
            Delivered::TimedOut => h.advance(secs(30)),
        }
        let sent = h.sent();
        assert_eq!(sent.len(), 4, "{how:?}");
        assert_eq!(sent[1].json()["method"], "tools/list", "{how:?}");
        assert_eq!(
            sent[2].json()["method"],
            "notifications/roots/list_changed",
            "{how:?}"
        );
        assert_eq!(sent[3].method, Method::GET, "{how:?}");
    }
}

#[test]
fn what_a_barrier_holds_is_bounded_too() {
    let mut h = Harness::new();
    let barrier = h
        .send(
            notification("notifications/initialized"),
            SendOptions::default(),
            true,
        )
        .unwrap();
    // A server flooding us with requests while `initialized` is in flight: our answers are
    // held, up to the one-way queue's bound; requests are bounded by the session instead.
    for n in 0..1030 {
        let params = raw(&format!(r#"{{"n":{n}}}"#));
        h.send(
            Message::notification("notifications/n", Some(params)),
            SendOptions::default(),
            false,
        );
    }
    assert_eq!(
        h.send(request(1, "tools/list"), Default::default(), false),
        None
    );
    assert!(
        h.log_lines()
            .iter()
            .any(|line| line.contains("the queue is full")),
        "the drop is logged"
    );
    h.head(barrier, 202, &[]);
    h.end(barrier);
    let sent = h.sent();
    // The barrier, the request (dispatched at once), and the first one-way message; the
    // other 1023 held ones wait in the one-way queue behind it.
    let methods: Vec<_> = sent.iter().map(|s| s.json()["method"].clone()).collect();
    assert_eq!(methods.len(), 3, "{methods:?}");
    assert!(methods.contains(&serde_json::json!("tools/list")));
    let mut posted = Vec::new();
    while let Some(stream) = h
        .sent()
        .iter()
        .rev()
        .find(|s| s.json()["method"] == "notifications/n")
        .map(|s| s.stream)
        .filter(|stream| posted.last() != Some(stream))
    {
        posted.push(stream);
        h.accept(stream);
    }
    assert_eq!(
        posted.len(),
        1024,
        "held one-way messages past the bound were dropped"
    );
}

// --- the legacy HTTP+SSE fallback ---------------------------------------------------------

#[test]
fn an_initialize_refused_with_400_404_or_405_opens_the_legacy_stream() {
    for status in [400, 404, 405] {
        let mut h = Harness::with(|c| c.bearer_token = Some(Secret::new(TOKEN)));
        let post = h.send_request(0, "initialize");
        h.head(post, status, &[]);
        assert!(h.failures().is_empty(), "{status}");
        assert!(
            matches!(&h.events[..], [Event::Send(_), Event::Abort(a), Event::Send(get)]
                if *a == post && get.method == Method::GET),
            "{status}: {:?}",
            h.events
        );
        let get = h.last_sent();
        assert_eq!(get.uri, URL);
        assert_eq!(get.header("accept"), Some("text/event-stream"));
        assert_eq!(
            get.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert!(!h.exchange.is_legacy(), "not before the endpoint event");
    }
}

/// A stateless-era server refuses a 2025 `initialize` with -32022 in a JSON body: that is
/// its answer (the session fails with it), not the legacy transport. Any other JSON body of
/// a 400, 404 or 405 still falls back.
#[test]
fn an_initialize_refused_with_32022_is_answered_not_a_legacy_fallback() {
    let refusal = r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"unsupported protocol version","data":{"supported":["2026-07-28"]}}}"#;
    for status in [400, 404, 405] {
        let mut h = Harness::new();
        let post = h.send_request(0, "initialize");
        h.head(post, status, JSON);
        h.body(post, refusal);
        h.end(post);
        assert_eq!(h.delivered(), [got(refusal)], "{status}");
        assert!(
            !h.events
                .iter()
                .any(|e| matches!(e, Event::Send(sent) if sent.method == Method::GET)),
            "{status}: {:?}",
            h.events
        );
    }
    for body in [
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"no"}}"#,
        r#"{"error":"Not Found"}"#,
    ] {
        let mut h = Harness::new();
        let post = h.send_request(0, "initialize");
        h.head(post, 404, JSON);
        h.body(post, body);
        h.end(post);
        assert!(h.delivered().is_empty(), "{body}");
        assert!(h.failures().is_empty(), "{body}");
        assert_eq!(h.last_sent().method, Method::GET, "{body}: {:?}", h.events);
    }
}

#[test]
fn the_legacy_endpoint_event_switches_the_transport() {
    let mut h = Harness::new();
    let post = h.send_request(0, "initialize");
    h.head(post, 404, &[]);
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(
        get,
        format!("{}event: ping\ndata: x\n\n", data(&progress(1))),
    );
    assert!(h.delivered().is_empty(), "nothing before the endpoint");
    assert_eq!(h.legacy_switches(), 0);
    h.body(
        get,
        format!(
            "event: endpoint\ndata: messages?sessionId=abc\n\n{}",
            data(&progress(2))
        ),
    );
    assert_eq!(h.legacy_switches(), 1);
    assert_eq!(h.delivered(), [got(&progress(2))], "the rest of the chunk");
    assert!(h.exchange.is_legacy());
    assert!(h.failures().is_empty());

    let init = h.send_request(1, "initialize");
    let sent = h.last_sent();
    assert_eq!(sent.method, Method::POST);
    assert_eq!(sent.uri, "http://127.0.0.1:9/messages?sessionId=abc");
    h.head(init, 202, &[]);
    h.body(init, "Accepted");
    h.end(init);
    assert!(h.failures().is_empty(), "the answer comes on the stream");
    h.body(get, data(&result(1)));
    assert_eq!(h.delivered().last(), Some(&got(&result(1))));
    h.finish(1, true);
    assert!(!h.aborted().contains(&get), "the legacy stream stays open");
    let one_way = h.notify("notifications/initialized").unwrap();
    assert_eq!(
        h.last_sent().uri,
        "http://127.0.0.1:9/messages?sessionId=abc"
    );
    h.accept(one_way);
    h.send_request(2, "tools/list");
    assert_eq!(
        h.last_sent().uri,
        "http://127.0.0.1:9/messages?sessionId=abc"
    );
}

#[test]
fn a_legacy_endpoint_on_another_origin_is_refused() {
    for endpoint in [
        "http://evil.example/messages",
        "https://127.0.0.1:9/messages",
        "http://127.0.0.1:10/messages",
    ] {
        let mut h = Harness::new();
        let post = h.send_request(0, "initialize");
        h.head(post, 405, &[]);
        let get = h.last_sent().stream;
        h.head(get, 200, SSE);
        h.body(get, format!("event: endpoint\ndata: {endpoint}\n\n"));
        let failure = h.failure(0);
        assert_eq!(failure.kind, FailureKind::Protocol, "{endpoint}");
        assert_eq!(failure.delivery, Delivery::Refused, "{endpoint}");
        assert!(failure.detail.contains("another origin"), "{failure}");
        assert!(h.aborted().contains(&get));
        assert_eq!(h.legacy_switches(), 0);
        assert!(!h.exchange.is_legacy());
    }
}

#[test]
fn the_legacy_stream_ending_takes_the_connection_down() {
    for broke in [false, true] {
        let mut h = Harness::new();
        let get = h.legacy("/messages");
        if broke {
            h.error(get, TransportError::Lost("reset".into()));
        } else {
            h.end(get);
        }
        let downs = h.downs();
        assert_eq!(downs.len(), 1, "{broke}");
        assert_eq!(downs[0].kind, FailureKind::ConnectionLost);
        assert_eq!(downs[0].delivery, Delivery::MayHaveReached);
        assert!(
            downs[0].detail.contains("legacy event stream"),
            "{}",
            downs[0]
        );
    }
}

#[test]
fn a_refused_legacy_get_fails_the_initialize() {
    let cases: [(u16, &[Header], FailureKind); 3] = [
        (404, &[], FailureKind::HttpStatus { status: 404 }),
        (
            401,
            &[("www-authenticate", "Bearer")],
            FailureKind::Unauthorized { status: 401 },
        ),
        (200, &[("content-type", "text/html")], FailureKind::Protocol),
    ];
    for (status, headers, kind) in cases {
        let mut h = Harness::new();
        let post = h.send_request(0, "initialize");
        h.head(post, 404, &[]);
        let get = h.last_sent().stream;
        h.head(get, status, headers);
        let failure = h.failure(0);
        assert_eq!(failure.kind, kind, "{status}");
        assert_eq!(failure.delivery, Delivery::Refused, "{status}");
        assert!(h.aborted().contains(&get));
        assert!(!h.exchange.is_legacy());
    }

    // No connection for the GET; a stream that ends before its endpoint.
    let mut h = Harness::new();
    let post = h.send_request(0, "initialize");
    h.head(post, 404, &[]);
    let get = h.last_sent().stream;
    h.error(get, TransportError::Connect("refused".into()));
    assert_eq!(h.failure(0).kind, FailureKind::Connect);

    let mut h = Harness::new();
    let post = h.send_request(0, "initialize");
    h.head(post, 404, &[]);
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(get, data(&progress(1)));
    h.end(get);
    let failure = h.failure(0);
    assert_eq!(failure.kind, FailureKind::Protocol);
    assert!(failure.detail.contains("before its endpoint"), "{failure}");
    assert!(h.downs().is_empty());
}

#[test]
fn without_the_fallback_or_for_other_requests_a_404_is_just_a_failure() {
    let mut h = Harness::with(|c| c.legacy_fallback = false);
    let post = h.send_request(0, "initialize");
    h.head(post, 404, &[]);
    assert_eq!(h.failure(0).kind, FailureKind::HttpStatus { status: 404 });
    assert_eq!(h.sent().len(), 1, "no GET");

    let mut h = Harness::new();
    let post = h.send_request(1, "tools/list");
    h.head(post, 405, &[]);
    assert_eq!(h.failure(1).kind, FailureKind::HttpStatus { status: 405 });
    assert_eq!(h.sent().len(), 1, "no GET");

    let mut h = Harness::new();
    let post = h.send_request(0, "initialize");
    h.head(post, 500, &[]);
    assert_eq!(h.failure(0).kind, FailureKind::HttpStatus { status: 500 });
    assert_eq!(h.sent().len(), 1, "no GET");
}

// --- the standalone GET stream ------------------------------------------------------------

#[test]
fn the_server_stream_is_opened_only_when_configured() {
    let mut h = Harness::new();
    h.ready(None);
    h.open_server_stream();
    assert!(h.sent().is_empty());

    let mut h = Harness::with(|c| c.server_stream = true);
    h.ready(None);
    h.open_server_stream();
    let get = h.last_sent();
    assert_eq!(get.method, Method::GET);
    assert_eq!(get.uri, URL);
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("last-event-id"), None);
    let get = get.stream;
    h.open_server_stream();
    assert_eq!(h.sent().len(), 1, "a second call does nothing");
    h.head(get, 200, SSE);
    h.body(
        get,
        format!(
            "{}data: not json\n\n{}",
            data(&progress(1)),
            data(&progress(2))
        ),
    );
    assert_eq!(
        h.delivered(),
        [got(&progress(1)), got(&progress(2))],
        "non-JSON-RPC events are skipped"
    );
    assert!(h.aborted().is_empty());
}

#[test]
fn a_server_stream_refused_for_good_is_not_reopened() {
    for status in [405, 404, 409, 401, 403] {
        let mut h = Harness::with(|c| c.server_stream = true);
        h.ready(Some("s-1"));
        h.open_server_stream();
        let get = h.last_sent().stream;
        h.head(get, status, &[]);
        assert_eq!(h.aborted(), [get], "{status}");
        assert_eq!(h.wait(), None, "{status}");
        h.advance(secs(60));
        assert_eq!(h.sent().len(), 1, "{status}");
        assert!(h.failures().is_empty() && h.downs().is_empty());
    }
}

#[test]
fn a_server_stream_refused_for_now_is_reopened_after_a_wait() {
    for status in [500, 502, 503, 429] {
        let mut h = Harness::with(|c| {
            c.server_stream = true;
            c.resume = policy(5, secs(1));
        });
        h.ready(None);
        h.open_server_stream();
        let get = h.last_sent().stream;
        h.head(get, status, &[]);
        assert_eq!(h.aborted(), [get], "{status}");
        let wait = h.wait().expect("a reopen");
        assert!(wait >= ms(500) && wait <= secs(1), "{status}: {wait:?}");
        h.advance(wait - ms(1));
        assert_eq!(h.sent().len(), 1);
        h.advance(ms(1));
        assert_eq!(h.sent().len(), 2, "{status}");
        assert_eq!(h.last_sent().method, Method::GET);
    }
}

#[test]
fn an_ended_server_stream_is_reopened_with_last_event_id() {
    let mut h = Harness::with(|c| c.server_stream = true);
    h.ready(None);
    h.open_server_stream();
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(get, format!("retry: 700\n{}", event("s-5", &progress(1))));
    h.end(get);
    assert_eq!(h.wait(), Some(ms(700)));
    h.jump_to_deadline();
    let again = h.last_sent();
    assert_eq!(again.method, Method::GET);
    assert_eq!(again.header("last-event-id"), Some("s-5"));
    // A break is an end too.
    let again = again.stream;
    h.head(again, 200, SSE);
    h.body(again, event("s-6", &progress(2)));
    h.error(again, TransportError::Lost("reset".into()));
    h.jump_to_deadline();
    assert_eq!(h.last_sent().header("last-event-id"), Some("s-6"));
    assert_eq!(h.delivered(), [got(&progress(1)), got(&progress(2))]);
}

#[test]
fn the_server_stream_gives_up_after_max_attempts_quiet_tries() {
    let mut h = Harness::with(|c| {
        c.server_stream = true;
        c.resume = policy(2, ms(100));
    });
    h.ready(None);
    h.open_server_stream();
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(get, data(&progress(1)));
    h.end(get);
    for attempt in 1..=2 {
        h.jump_to_deadline();
        let get = h.last_sent().stream;
        h.head(get, 200, SSE);
        h.body(get, ": keep-alive\n\n");
        h.end(get);
        assert_eq!(h.sent().len(), 1 + attempt);
    }
    assert_eq!(h.wait(), None, "given up");
    assert!(
        h.log_lines().iter().any(|l| l.contains("given up")),
        "{:?}",
        h.log_lines()
    );

    // An event between quiet tries resets the count.
    let mut h = Harness::with(|c| {
        c.server_stream = true;
        c.resume = policy(2, ms(100));
    });
    h.ready(None);
    h.open_server_stream();
    let mut get = h.last_sent().stream;
    for round in 0..4 {
        h.head(get, 200, SSE);
        if round % 2 == 1 {
            h.body(get, data(&progress(round)));
        }
        h.end(get);
        h.jump_to_deadline();
        get = h.last_sent().stream;
    }
    assert_eq!(h.sent().len(), 5, "still reopening");
}

#[test]
fn the_server_stream_is_never_opened_on_a_legacy_session() {
    let mut h = Harness::with(|c| c.server_stream = true);
    h.legacy("/messages");
    h.open_server_stream();
    assert!(h.sent().is_empty());
}

// --- closing ------------------------------------------------------------------------------

#[test]
fn close_deletes_the_session_at_once_and_reports_its_status() {
    let mut h = Harness::with(|c| c.server_stream = true);
    h.ready(Some("s-1"));
    h.open_server_stream();
    let server = h.last_sent().stream;
    let first = h.notify("notifications/a").unwrap();
    assert_eq!(h.notify("notifications/b"), None);
    let call = h.send_request(5, "tools/call");
    h.clear();
    h.close();
    let mut aborted = h.aborted();
    aborted.sort();
    assert_eq!(aborted, [server, call], "the one-way POST goes on");
    let delete = h.last_sent();
    assert_eq!(delete.method, Method::DELETE);
    assert_eq!(delete.uri, URL);
    assert_eq!(delete.header("mcp-session-id"), Some("s-1"));
    assert_eq!(h.sent().len(), 1, "the DELETE does not wait for the queue");
    let delete = delete.stream;
    h.head(delete, 200, &[]);
    h.end(delete);
    assert!(h.closed().is_empty(), "one-way messages are still queued");
    h.accept(first);
    let second = h.last_sent();
    assert_eq!(second.json()["method"], "notifications/b");
    let second = second.stream;
    assert!(h.closed().is_empty());
    h.accept(second);
    assert_eq!(h.closed(), [Some(StatusCode::OK)]);
    assert!(matches!(h.events.last(), Some(Event::Closed(_))));
    assert!(h.unknown().is_empty(), "{:?}", h.unknown());
}

#[test]
fn a_delete_without_an_answer_is_tried_a_second_time() {
    for second_answered in [false, true] {
        let mut h = Harness::new();
        h.ready(Some("s-1"));
        h.close();
        let delete = h.last_sent().stream;
        h.error(delete, TransportError::Lost("connection closed".into()));
        assert!(h.closed().is_empty());
        let again = h.last_sent();
        assert_eq!(again.method, Method::DELETE);
        assert_ne!(again.stream, delete);
        let again = again.stream;
        if second_answered {
            h.head(again, 204, &[]);
            h.end(again);
            assert_eq!(h.closed(), [Some(StatusCode::NO_CONTENT)]);
        } else {
            h.error(again, TransportError::Connect("refused".into()));
            assert_eq!(h.closed(), [None]);
        }
        assert_eq!(h.sent().len(), 2, "no third try");
    }

    // An answer, even an error status, is not tried again.
    let mut h = Harness::new();
    h.ready(Some("s-1"));
    h.close();
    let delete = h.last_sent().stream;
    h.head(delete, 405, &[]);
    h.end(delete);
    assert_eq!(h.closed(), [Some(StatusCode::METHOD_NOT_ALLOWED)]);
    assert_eq!(h.sent().len(), 1);
}

#[test]
fn a_delete_that_takes_too_long_closes_without_a_status() {
    let mut h = Harness::with(|c| c.close_timeout = secs(2));
    h.ready(Some("s-1"));
    h.close();
    let delete = h.last_sent().stream;
    assert_eq!(h.wait(), Some(secs(2)));
    h.advance(ms(1999));
    assert!(h.closed().is_empty());
    h.advance(ms(1));
    assert_eq!(h.aborted(), [delete]);
    assert_eq!(h.closed(), [None]);
}

#[test]
fn close_without_a_session_id_sends_no_delete() {
    let mut h = Harness::new();
    h.ready(None);
    h.close();
    assert!(h.sent().is_empty());
    assert_eq!(h.closed(), [None]);

    // The queued one-way messages still go first.
    let mut h = Harness::new();
    h.ready(None);
    let first = h.notify("notifications/a").unwrap();
    h.close();
    assert!(h.closed().is_empty());
    h.accept(first);
    assert_eq!(h.closed(), [None]);
    assert_eq!(h.sent().len(), 1);
}

#[test]
fn the_close_timeout_bounds_the_one_way_queue() {
    let mut h = Harness::with(|c| c.close_timeout = secs(2));
    h.ready(Some("s-1"));
    let first = h.notify("notifications/a").unwrap();
    h.close();
    let delete = h.last_sent().stream;
    h.head(delete, 200, &[]);
    h.end(delete);
    h.advance(secs(2));
    assert!(h.aborted().contains(&first));
    assert_eq!(h.closed(), [Some(StatusCode::OK)]);
}

#[test]
fn nothing_is_sent_at_the_close_deadline() {
    let mut h = Harness::with(|c| c.close_timeout = secs(2));
    h.ready(None);
    h.notify("notifications/a").unwrap();
    h.notify("notifications/b");
    h.close();
    let mark = h.mark();
    h.advance(secs(2));
    assert_eq!(h.closed(), [None]);
    assert!(
        h.sent_since(mark).is_empty(),
        "sent after the deadline: {:?}",
        h.sent_since(mark)
    );
}

#[test]
fn a_legacy_session_closes_without_a_delete() {
    let mut h = Harness::new();
    let get = h.legacy("/messages");
    h.close();
    assert!(h.sent().is_empty());
    assert_eq!(h.aborted(), [get]);
    assert_eq!(h.closed(), [None]);
}

#[test]
fn nothing_is_sent_after_close() {
    let mut h = Harness::with(|c| c.server_stream = true);
    h.ready(Some("s-1"));
    h.close();
    let delete = h.last_sent().stream;
    // While closing...
    h.send_request_or_none(1);
    h.notify("notifications/late");
    h.open_server_stream();
    assert_eq!(h.sent().len(), 1);
    h.head(delete, 200, &[]);
    h.end(delete);
    assert_eq!(h.closed(), [Some(StatusCode::OK)]);
    // ... and after.
    h.send_request_or_none(2);
    h.notify("notifications/later");
    h.open_server_stream();
    h.close();
    h.advance(secs(60));
    assert_eq!(h.sent().len(), 1);
    assert_eq!(h.closed().len(), 1);
    assert!(
        h.log_lines()
            .iter()
            .any(|l| l.contains("dropped a message sent after close"))
    );
}

// --- credentials --------------------------------------------------------------------------

/// Whether `text` shows the token, or a start of it long enough to matter.
fn leaks(text: &str) -> bool {
    text.contains(&TOKEN[..7])
}

#[test]
fn the_bearer_token_never_appears_in_a_failure_or_the_wire_log() {
    credential_never_appears_in_a_failure_or_the_wire_log(|c| {
        c.bearer_token = Some(Secret::new(TOKEN));
    });
}

#[test]
fn an_extra_headers_value_never_appears_in_a_failure_or_the_wire_log() {
    credential_never_appears_in_a_failure_or_the_wire_log(|c| {
        c.headers.insert("X-Api-Key", Secret::new(TOKEN)).unwrap();
    });
}

/// Servers echo [`TOKEN`] everywhere they can, with the config carrying it as `configure`
/// says.
fn credential_never_appears_in_a_failure_or_the_wire_log(configure: fn(&mut HttpConfig)) {
    let echo = format!("your token {TOKEN} is no good");
    let challenge = format!(r#"Bearer error="invalid_token", error_description="{echo}""#);
    let location = format!("https://127.0.0.1:9/login?token={TOKEN}");
    let cut = format!("{}{TOKEN}", "x".repeat(505));
    let mut details = Vec::new();
    let mut logs = Vec::new();
    let mut check = |h: &Harness| {
        for (_, failure) in h.failures() {
            details.push(failure.detail.clone());
        }
        for failure in h.downs() {
            details.push(failure.detail.clone());
        }
        logs.extend(h.log_lines());
    };
    let with_token = || {
        Harness::with(|c| {
            configure(c);
            c.server_stream = true;
        })
    };

    // A challenge, a redirect and error bodies echoing it.
    let cases: [(u16, Vec<Header>, &str); 5] = [
        (401, vec![("www-authenticate", challenge.as_str())], ""),
        (403, vec![("www-authenticate", challenge.as_str())], ""),
        (302, vec![("location", location.as_str())], ""),
        (200, vec![("content-type", "text/plain")], echo.as_str()),
        (200, vec![("content-type", "text/plain")], cut.as_str()),
    ];
    for (status, headers, body) in &cases {
        let mut h = with_token();
        let post = h.send_request(1, "tools/call");
        h.head(post, *status, headers);
        h.body(post, body);
        h.end(post);
        assert_eq!(h.failures().len(), 1, "{status}");
        check(&h);
    }

    // Event streams and JSON bodies echoing it.
    let mut h = with_token();
    let post = h.send_request(1, "tools/call");
    h.head(post, 200, SSE);
    let notice = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{TOKEN}"}}}}"#
    );
    h.body(post, data(&notice));
    h.body(post, format!("id: {TOKEN}\ndata: {TOKEN}\n\n"));
    check(&h);
    for body in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{TOKEN}}}"#),
        format!(r#"{{"jsonrpc":"{TOKEN}","id":1,"result":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{}}}} {TOKEN}"#),
        format!(r#"{{"jsonrpc":"2.0","id":"x","method":5,"{TOKEN}":1}}"#),
    ] {
        let mut h = with_token();
        let post = h.send_request(1, "tools/call");
        h.reply_json(post, &body);
        check(&h);
    }

    // A one-way reply, the server stream, a resume with its id.
    let mut h = with_token();
    let one_way = h.notify("notifications/initialized").unwrap();
    h.head(one_way, 400, &[("content-type", "text/plain")]);
    h.body(one_way, &echo);
    h.end(one_way);
    h.open_server_stream();
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(get, format!("id: {TOKEN}\ndata: {notice}\n\n"));
    h.end(get);
    h.jump_to_deadline();
    check(&h);

    // The legacy stream.
    let mut h = with_token();
    let get = h.legacy("/messages");
    h.body(get, data(&notice));
    h.body(get, format!("data: {TOKEN}\n\n"));
    h.end(get);
    check(&h);

    assert!(details.len() >= 9, "{details:?}");
    assert!(!logs.is_empty());
    for detail in &details {
        assert!(!leaks(detail), "in a failure: {detail}");
    }
    for line in &logs {
        assert!(!leaks(line), "in the wire log: {line}");
    }
}

#[test]
fn the_bearer_token_echoed_in_a_content_type_does_not_appear_in_the_failure() {
    let mut h = Harness::with(|c| c.bearer_token = Some(Secret::new(TOKEN)));
    let post = h.send_request(1, "tools/call");
    let content_type = format!("text/{TOKEN}");
    h.head(post, 200, &[("content-type", content_type.as_str())]);
    h.end(post);
    let failure = h.failure(1);
    assert!(!leaks(&failure.detail), "{failure}");
}

#[test]
fn the_bearer_token_echoed_in_a_legacy_endpoint_does_not_appear_in_the_failure() {
    let mut h = Harness::with(|c| c.bearer_token = Some(Secret::new(TOKEN)));
    let post = h.send_request(0, "initialize");
    h.head(post, 405, &[]);
    let get = h.last_sent().stream;
    h.head(get, 200, SSE);
    h.body(
        get,
        format!("event: endpoint\ndata: http://evil.example/m?t={TOKEN}\n\n"),
    );
    let failure = h.failure(0);
    assert_eq!(failure.kind, FailureKind::Protocol);
    assert!(!leaks(&failure.detail), "{failure}");
}

// --- helpers moved from the old transport -------------------------------------------------

#[test]
fn relative_legacy_endpoints_resolve_against_the_base() {
    let base: Uri = "http://127.0.0.1:3001/sse".parse().unwrap();
    assert_eq!(
        resolve_same_origin(&base, "/messages?sessionId=abc").unwrap(),
        "http://127.0.0.1:3001/messages?sessionId=abc"
    );
    assert_eq!(
        resolve_same_origin(&base, "messages?x=1").unwrap(),
        "http://127.0.0.1:3001/messages?x=1"
    );
    assert_eq!(
        resolve_same_origin(&base, "http://127.0.0.1:3001/m").unwrap(),
        "http://127.0.0.1:3001/m"
    );
    assert!(resolve_same_origin(&base, "http://evil.example/m").is_err());
    assert!(resolve_same_origin(&base, "https://127.0.0.1:3001/m").is_err());
}

#[test]
fn challenges_are_described() {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::WWW_AUTHENTICATE,
        HeaderValue::from_static(
            r#"Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource", scope="read write", error="invalid_token""#,
        ),
    );
    let text = describe_challenge(StatusCode::UNAUTHORIZED, &headers, &str::to_owned);
    assert!(text.contains("scheme Bearer"), "{text}");
    assert!(
        text.contains(
            r#"resource_metadata="https://a.example/.well-known/oauth-protected-resource""#
        ),
        "{text}"
    );
    assert!(text.contains(r#"scope="read write""#), "{text}");
    assert!(text.contains(r#"error="invalid_token""#), "{text}");
    assert!(
        describe_challenge(StatusCode::FORBIDDEN, &HeaderMap::new(), &str::to_owned)
            .contains("no WWW-Authenticate")
    );
}

#[test]
fn byte_budget_counts_across_calls() {
    let mut budget = ByteBudget::new(Some(10));
    assert!(budget.take(6).is_ok());
    assert!(budget.take(4).is_ok());
    assert_eq!(
        budget.take(1).unwrap_err().kind,
        FailureKind::ReplyOverBudget { limit: 10 }
    );
    assert!(ByteBudget::new(None).take(usize::MAX).is_ok());
}

// --- protocol 2026-07-28 (stateless) --------------------------------------------------------

fn modern() -> Harness {
    let mut h = Harness::new();
    h.exchange.set_modern(Some("2026-07-28"));
    h
}

/// The error response the session receives for request `id`, as `(id, code)`.
fn error_delivered(h: &Harness) -> Vec<(Option<Id>, i64)> {
    h.events
        .iter()
        .filter_map(|event| match event {
            Event::Message(Message::Response(response)) => match &response.outcome {
                Err(error) => Some((response.id.clone(), error.code)),
                Ok(_) => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn modern_requests_carry_the_derived_headers_and_no_session() {
    let mut h = modern();
    let headers = vec![
        (
            HeaderName::from_static("mcp-name"),
            HeaderValue::from_static("echo"),
        ),
        (
            HeaderName::from_static("mcp-param-region"),
            HeaderValue::from_static("=?base64?WsO8cmljaA==?="),
        ),
    ];
    h.send(
        request(3, "tools/call"),
        SendOptions::default().with_headers(headers),
        false,
    );
    let sent = h.last_sent();
    assert_eq!(sent.method, Method::POST);
    assert_eq!(sent.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(sent.header("mcp-method"), Some("tools/call"));
    assert_eq!(sent.header("mcp-name"), Some("echo"));
    assert_eq!(
        sent.header("mcp-param-region"),
        Some("=?base64?WsO8cmljaA==?=")
    );
    assert_eq!(
        sent.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert!(sent.header("mcp-session-id").is_none());
    // The same headers on a 2025-era exchange are not sent.
    let mut old = Harness::new();
    old.send(
        request(3, "tools/call"),
        SendOptions::default().with_headers(vec![(
            HeaderName::from_static("mcp-name"),
            HeaderValue::from_static("echo"),
        )]),
        false,
    );
    assert!(old.last_sent().header("mcp-name").is_none());
    assert!(old.last_sent().header("mcp-method").is_none());
}

#[test]
fn a_modern_4xx_json_rpc_error_answers_the_request_even_without_an_id() {
    for body in [
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"Mcp-Param-Region is missing"}}"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32020,"message":"header mismatch"},"id":4}"#,
    ] {
        let mut h = modern();
        let stream = h.send_request(4, "tools/call");
        h.head(stream, 400, JSON);
        h.body(stream, body);
        h.end(stream);
        assert_eq!(
            error_delivered(&h),
            vec![(Some(Id::Number(4)), -32020)],
            "{body}: {:?}",
            h.events
        );
        assert!(h.failures().is_empty());
    }
    // An error for another request, a result, or no JSON-RPC at all: the status decides.
    for body in [
        r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32020,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
        "Bad Request",
        "",
    ] {
        let mut h = modern();
        let stream = h.send_request(4, "tools/call");
        h.head(stream, 400, JSON);
        h.body(stream, body);
        h.end(stream);
        assert!(error_delivered(&h).is_empty(), "{body}");
        assert_eq!(
            h.failure(4).kind,
            FailureKind::HttpStatus { status: 400 },
            "{body}"
        );
    }
    // 401 and 403 are auth answers, whatever the body.
    let mut h = modern();
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 401, JSON);
    assert_eq!(h.failure(4).kind, FailureKind::Unauthorized { status: 401 });
}

#[test]
fn a_modern_error_body_is_read_within_its_limit() {
    let mut h = modern();
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 404, JSON);
    h.body(stream, vec![b' '; ERROR_REPLY_BYTES + 10]);
    assert!(h.aborted().contains(&stream));
    assert_eq!(h.failure(4).kind, FailureKind::HttpStatus { status: 404 });
}

#[test]
fn modern_streams_are_not_resumed_and_no_server_stream_or_delete_exists() {
    let mut h = Harness::with(|config| config.server_stream = true);
    h.exchange.set_modern(Some("2026-07-28"));
    let stream = h.send_request(5, "tools/call");
    h.head(
        stream,
        200,
        &[
            ("content-type", "text/event-stream"),
            ("mcp-session-id", "s-1"),
        ],
    );
    h.body(stream, "id: 1\nretry: 10\ndata: \n\n");
    h.end(stream);
    let failure = h.failure(5);
    assert_eq!(failure.kind, FailureKind::ConnectionLost);
    assert_eq!(failure.delivery, Delivery::MayHaveReached);
    assert!(failure.detail.contains("does not resume"), "{failure}");
    let mark = h.mark();
    h.open_server_stream();
    h.advance(Duration::from_secs(5));
    assert!(h.sent_since(mark).is_empty(), "no GET");
    assert_eq!(h.notify("notifications/cancelled"), None, "no one-way POST");
    h.close();
    assert!(h.sent_since(mark).is_empty(), "no DELETE");
    assert_eq!(h.closed(), vec![None]);
}

#[test]
fn switching_back_to_the_2025_rules_drops_the_modern_headers() {
    let mut h = modern();
    h.exchange.set_modern(None);
    assert!(!h.exchange.is_modern());
    h.send_request(0, "initialize");
    let sent = h.last_sent();
    assert!(sent.header("mcp-protocol-version").is_none());
    assert!(sent.header("mcp-method").is_none());
}

// --- refused credentials (401/403) and sending again with a new token ----------------------

const CHALLENGE_401: &str = r#"Bearer resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", scope="files:read""#;
const CHALLENGE_403: &str = r#"Bearer error="insufficient_scope", scope="files:write""#;

/// A 2026-07-28 exchange that holds refusals, with `TOKEN` as its bearer.
fn holding() -> Harness {
    let mut h = Harness::with(|config| config.bearer_token = Some(Secret::new(TOKEN)));
    h.exchange.set_modern(Some("2026-07-28"));
    h.exchange.hold_refusals(true);
    h
}

impl Harness {
    fn refusals(&self) -> Vec<&Refusal> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::Refused(refusal) => Some(refusal),
                _ => None,
            })
            .collect()
    }

    fn resend(&mut self, id: i64, token: &str) -> Option<StreamId> {
        let mark = self.mark();
        self.exchange
            .resend(&Id::Number(id), Some(Secret::new(token)), self.now);
        self.pump();
        self.sent_since(mark).first().map(|sent| sent.stream)
    }
}

#[test]
fn a_held_401_is_handed_to_the_driver_with_its_challenge_and_the_token_sent() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    h.head(
        stream,
        401,
        &[
            ("www-authenticate", CHALLENGE_401),
            ("content-type", "application/json"),
        ],
    );
    assert!(h.failures().is_empty(), "not failed: waiting for a token");
    assert!(h.aborted().contains(&stream));
    let refusals = h.refusals();
    assert_eq!(refusals.len(), 1);
    let refusal = refusals[0];
    assert_eq!(refusal.id, Id::Number(4));
    assert_eq!(refusal.status, StatusCode::UNAUTHORIZED);
    assert_eq!(refusal.sent.as_ref().map(Secret::expose), Some(TOKEN));
    assert_eq!(refusal.resends, 0);
    let values: Vec<&str> = refusal
        .challenges
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(values, [CHALLENGE_401]);
    assert!(
        refusal.challenges.get("content-type").is_none(),
        "challenges only"
    );
    let debug = format!("{refusal:?}");
    assert!(!debug.contains(TOKEN), "{debug}");
}

#[test]
fn a_refused_tools_call_is_sent_again_once_with_the_new_token_exactly_as_before() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    let first = h.last_sent();
    let (body, method) = (
        first.body.clone(),
        first.header("mcp-method").map(str::to_owned),
    );
    h.head(stream, 401, &[("www-authenticate", CHALLENGE_401)]);
    let again = h.resend(4, "tok-NEW-abcdefghij").expect("sent again");
    let sent = h.last_sent();
    assert_eq!(sent.body, body, "the same request");
    assert_eq!(sent.header("mcp-method").map(str::to_owned), method);
    let authorization = sent.headers.get("authorization").unwrap();
    assert_eq!(authorization, "Bearer tok-NEW-abcdefghij");
    assert!(authorization.is_sensitive());
    h.reply_json(again, &result(4));
    assert_eq!(h.delivered().len(), 1);
    // Only the end-of-body note the session ignores once the response is in.
    let failures = h.failures();
    assert!(
        failures
            .iter()
            .all(|(_, f)| f.delivery == Delivery::Answered),
        "{failures:?}"
    );
    // Later requests carry the new token too.
    h.send_request(5, "tools/list");
    assert_eq!(
        h.last_sent().header("authorization"),
        Some("Bearer tok-NEW-abcdefghij")
    );
}

#[test]
fn a_401_for_the_token_obtained_after_a_401_fails_as_refused_with_the_outcome_known() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 401, &[("www-authenticate", CHALLENGE_401)]);
    let again = h.resend(4, "tok-NEW-abcdefghij").unwrap();
    h.head(again, 401, &[("www-authenticate", CHALLENGE_401)]);
    assert_eq!(h.refusals().len(), 1, "not handed over a second time");
    let failure = h.failure(4);
    assert_eq!(failure.kind, FailureKind::Unauthorized { status: 401 });
    assert_eq!(failure.delivery, Delivery::Refused);
    assert!(!failure.outcome_unknown());
    assert!(
        failure
            .detail
            .contains("sent again with a new token 1 time"),
        "{failure}"
    );
    assert_eq!(h.sent().len(), 2, "sent twice in all");
}

#[test]
fn a_401_without_a_token_does_not_use_up_the_one_renewal_after_a_401() {
    // A process that starts with a stored token sends its first request with none; the
    // cached token the challenge leads to may be refused (expired by the server's clock a
    // second before ours), and the refreshed one must still be sent.
    let mut h = holding();
    h.exchange.set_bearer(None);
    let stream = h.send_request(4, "tools/call");
    assert_eq!(h.last_sent().header("authorization"), None);
    h.head(stream, 401, &[("www-authenticate", CHALLENGE_401)]);
    assert_eq!(h.refusals().len(), 1);
    assert_eq!(h.refusals()[0].sent, None);
    let cached = h.resend(4, "tok-CACHED-abcdefghij").unwrap();
    h.head(cached, 401, &[("www-authenticate", CHALLENGE_401)]);
    assert_eq!(h.refusals().len(), 2, "held again for a renewed token");
    assert_eq!(
        h.refusals()[1].sent,
        Some(Secret::new("tok-CACHED-abcdefghij"))
    );
    let renewed = h.resend(4, "tok-RENEWED-abcdefghij").unwrap();
    assert_eq!(
        h.last_sent().header("authorization"),
        Some("Bearer tok-RENEWED-abcdefghij")
    );
    h.head(renewed, 401, &[("www-authenticate", CHALLENGE_401)]);
    assert_eq!(
        h.refusals().len(),
        2,
        "a 401 for the renewed token is final"
    );
    let failure = h.failure(4);
    assert_eq!(failure.delivery, Delivery::Refused);
    assert!(
        failure
            .detail
            .contains("sent again with a new token 2 times"),
        "{failure}"
    );
    assert_eq!(h.sent().len(), 3, "sent three times in all");
}

impl Harness {
    fn nonces(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::DpopNonce(nonce) => Some(nonce.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn a_dpop_nonce_on_any_reply_goes_to_the_driver_before_what_the_reply_leads_to() {
    let mut h = holding();
    // A 200 brings a fresh nonce (RFC 9449 section 9): handed out at the head, before the
    // answer itself.
    let first = h.send_request(4, "tools/list");
    let json_nonce: Vec<Header> = JSON
        .iter()
        .copied()
        .chain([("dpop-nonce", "rs-nonce-200")])
        .collect();
    h.head(first, 200, &json_nonce);
    h.body(first, r#"{"jsonrpc":"2.0","id":4,"result":{"tools":[]}}"#);
    h.end(first);
    assert_eq!(h.nonces(), ["rs-nonce-200"]);
    let at = |h: &Harness, wanted: fn(&Event) -> bool| h.events.iter().position(wanted);
    assert!(
        at(&h, |e| matches!(e, Event::DpopNonce(_))) < at(&h, |e| matches!(e, Event::Message(_))),
        "the nonce before the answer"
    );
    // A 401's nonce too, before its refusal.
    let second = h.send_request(5, "tools/call");
    h.head(
        second,
        401,
        &[
            ("www-authenticate", NONCE_CHALLENGE),
            ("dpop-nonce", "rs-nonce-401"),
        ],
    );
    assert_eq!(h.nonces(), ["rs-nonce-200", "rs-nonce-401"]);
    assert!(
        at(
            &h,
            |e| matches!(e, Event::DpopNonce(n) if n == "rs-nonce-401")
        ) < at(&h, |e| matches!(e, Event::Refused(_)))
    );
    // Two nonces, or one too long: none.
    for headers in [
        vec![("dpop-nonce", "a"), ("dpop-nonce", "b")],
        vec![("dpop-nonce", &*"n".repeat(1025))],
    ] {
        let stream = h.send_request(6, "tools/list");
        h.head(stream, 200, &headers);
        assert_eq!(h.nonces().len(), 2);
    }
}

const NONCE_CHALLENGE: &str = r#"DPoP error="use_dpop_nonce", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#;

#[test]
fn a_dpop_nonce_401_after_a_new_token_is_held_and_sent_again_once_with_the_same_token() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    let body = h.last_sent().body.clone();
    h.head(stream, 401, &[("www-authenticate", CHALLENGE_401)]);
    let again = h.resend(4, "tok-NEW-abcdefghij").unwrap();
    // RFC 9449 section 9: the server wants a nonce in the proof; the token is fine.
    h.head(
        again,
        401,
        &[
            ("www-authenticate", NONCE_CHALLENGE),
            ("dpop-nonce", "rs-nonce-1"),
        ],
    );
    let refusals = h.refusals();
    assert_eq!(refusals.len(), 2, "held although it followed a 401");
    let refusal = refusals[1];
    assert_eq!(
        refusal
            .challenges
            .get("dpop-nonce")
            .map(|v| v.to_str().unwrap()),
        Some("rs-nonce-1"),
        "the nonce goes to the driver with the challenge"
    );
    let mark = h.mark();
    assert!(h.exchange.resend_for_nonce(&Id::Number(4), h.now));
    h.pump();
    let third = h
        .sent_since(mark)
        .first()
        .map(|s| s.stream)
        .expect("sent again");
    let sent = h.last_sent();
    assert_eq!(sent.body, body, "the same request");
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer tok-NEW-abcdefghij")
    );
    // Asked for a nonce again: not held a second time for one; it fails as refused.
    h.head(
        third,
        401,
        &[
            ("www-authenticate", NONCE_CHALLENGE),
            ("dpop-nonce", "rs-nonce-2"),
        ],
    );
    assert_eq!(h.refusals().len(), 2);
    let failure = h.failure(4);
    assert_eq!(failure.kind, FailureKind::Unauthorized { status: 401 });
    assert!(!failure.outcome_unknown());
    assert_eq!(h.sent().len(), 3);
}

#[test]
fn a_nonce_resend_is_once_per_request() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    h.head(
        stream,
        401,
        &[
            ("www-authenticate", NONCE_CHALLENGE),
            ("dpop-nonce", "rs-nonce-1"),
        ],
    );
    assert!(h.exchange.resend_for_nonce(&Id::Number(4), h.now));
    h.pump();
    let again = h.last_sent().stream;
    // A 401 with a nonce again (a refused token, say): held for a new token, not a nonce.
    h.head(
        again,
        401,
        &[
            ("www-authenticate", NONCE_CHALLENGE),
            ("dpop-nonce", "rs-nonce-2"),
        ],
    );
    assert_eq!(h.refusals().len(), 2);
    assert!(!h.exchange.resend_for_nonce(&Id::Number(4), h.now));
    h.pump();
    let failure = h.failure(4);
    assert!(
        failure.detail.contains("asked for a new DPoP nonce again"),
        "{failure}"
    );
    assert_eq!(h.sent().len(), 2);
    assert!(
        !h.exchange.resend_for_nonce(&Id::Number(9), h.now),
        "nothing waits"
    );
}

#[test]
fn step_ups_send_a_request_again_at_most_max_resends_times() {
    let mut h = holding();
    let mut stream = h.send_request(4, "tools/call");
    h.head(stream, 401, &[("www-authenticate", CHALLENGE_401)]);
    for n in 0..MAX_RESENDS {
        stream = h.resend(4, &format!("tok-step-{n}-abcdefgh")).unwrap();
        h.head(stream, 403, &[("www-authenticate", CHALLENGE_403)]);
    }
    assert_eq!(h.refusals().len(), usize::from(MAX_RESENDS));
    assert_eq!(h.refusals().last().unwrap().status, StatusCode::FORBIDDEN);
    let failure = h.failure(4);
    assert_eq!(failure.kind, FailureKind::Unauthorized { status: 403 });
    assert!(!failure.outcome_unknown());
    assert_eq!(h.sent().len(), 1 + usize::from(MAX_RESENDS));
}

#[test]
fn a_request_is_never_sent_again_with_the_token_it_was_refused_with() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 401, &[]);
    assert_eq!(h.resend(4, TOKEN), None);
    let failure = h.failure(4);
    assert_eq!(failure.kind, FailureKind::Unauthorized { status: 401 });
    assert!(failure.detail.contains("no other token"), "{failure}");
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 401, &[]);
    h.exchange.resend(&Id::Number(4), None, h.now);
    h.pump();
    assert_eq!(h.sent().len(), 1);
    assert_eq!(h.failure(4).delivery, Delivery::Refused);
}

#[test]
fn nothing_that_may_have_run_is_held_or_sent_again() {
    for (status, body_breaks) in [(500, false), (200, true), (404, false)] {
        let mut h = holding();
        let stream = h.send_request(4, "tools/call");
        if body_breaks {
            h.head(stream, 200, SSE);
            h.body(stream, "id: 1\ndata: \n\n");
            h.error(stream, TransportError::Lost("reset".into()));
        } else {
            h.head(stream, status, &[]);
            h.end(stream);
        }
        assert!(h.refusals().is_empty(), "{status}");
        assert_eq!(h.failures().len(), 1, "{status}");
        assert_eq!(h.sent().len(), 1, "{status}: never sent again");
    }
}

#[test]
fn a_rejected_refusal_fails_as_refused_with_the_reason() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 403, &[("www-authenticate", CHALLENGE_403)]);
    h.exchange.reject(
        &Id::Number(4),
        &format!("the token provider gave up ({TOKEN})"),
    );
    h.pump();
    let failure = h.failure(4);
    assert_eq!(failure.kind, FailureKind::Unauthorized { status: 403 });
    assert_eq!(failure.delivery, Delivery::Refused);
    assert!(
        failure.detail.contains("the token provider gave up"),
        "{failure}"
    );
    assert!(
        failure.detail.contains(r#"scope="files:write""#),
        "{failure}"
    );
    assert!(!failure.detail.contains(TOKEN), "{failure}");
}

#[test]
fn a_refused_request_the_session_settled_is_not_sent_again() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 401, &[]);
    h.finish(4, false);
    assert_eq!(h.resend(4, "tok-NEW-abcdefghij"), None);
    assert!(h.failures().is_empty(), "the session settled it already");
}

#[test]
fn refusals_are_not_held_by_default_and_not_on_the_legacy_transport() {
    let mut h = Harness::with(|config| config.bearer_token = Some(Secret::new(TOKEN)));
    let stream = h.send_request(4, "tools/call");
    h.head(stream, 401, &[("www-authenticate", CHALLENGE_401)]);
    assert!(h.refusals().is_empty());
    assert_eq!(h.failure(4).kind, FailureKind::Unauthorized { status: 401 });
    assert!(h.failure(4).detail.contains(r#"scope="files:read""#));
}

#[test]
fn challenges_echoing_a_credential_are_redacted_and_oversized_ones_dropped() {
    let mut h = holding();
    let stream = h.send_request(4, "tools/call");
    let echo = format!(r#"Bearer error="invalid_token", error_description="{TOKEN} expired""#);
    let huge = format!(r#"Bearer realm="{}""#, "x".repeat(9000));
    h.head(
        stream,
        401,
        &[
            ("www-authenticate", echo.as_str()),
            ("www-authenticate", huge.as_str()),
        ],
    );
    let refusal = h.refusals()[0];
    let values: Vec<&str> = refusal
        .challenges
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(values.len(), 1, "the oversized value is dropped");
    assert!(
        !values[0].contains(TOKEN) && values[0].contains("<redacted>"),
        "{values:?}"
    );
}

#[test]
fn a_replaced_bearer_goes_on_later_requests_and_is_redacted_when_echoed() {
    let mut h = holding();
    h.exchange
        .set_bearer(Some(Secret::new("tok-LATER-0987654321")));
    let stream = h.send_request(4, "tools/call");
    assert_eq!(
        h.last_sent().header("authorization"),
        Some("Bearer tok-LATER-0987654321")
    );
    h.head(stream, 500, &[("content-type", "tok-LATER-0987654321")]);
    h.end(stream);
    for line in h.log_lines() {
        assert!(!line.contains("tok-LATER"), "{line}");
    }
    h.exchange.set_bearer(None);
    h.send_request(5, "tools/list");
    assert_eq!(h.last_sent().header("authorization"), None);
}

#[test]
fn the_mcp_method_header_names_every_method_as_it_is() {
    for method in ["tools/call", "server/discover", "acme/custom"] {
        assert_eq!(method_header(method).unwrap(), method);
    }
    assert_eq!(method_header("bad\nname"), None);
}

// --- overload: 429 and 503 ---------------------------------------------------------------

/// Sends request `id` (`method`) that may go again after a 429 or 503 until `deadline` from
/// now; returns its stream.
fn send_retryable(h: &mut Harness, id: i64, method: &str, deadline: Duration) -> StreamId {
    let until = h.now + deadline;
    h.send(
        request(id, method),
        SendOptions::default().with_retry_until(Some(until)),
        false,
    )
    .expect("the request is POSTed")
}

/// The POSTs issued so far.
fn posts(h: &Harness) -> Vec<&Sent> {
    h.sent()
        .into_iter()
        .filter(|sent| sent.method == Method::POST)
        .collect()
}

fn overloaded(h: &mut Harness, stream: StreamId, status: u16, headers: &[Header]) {
    h.head(stream, status, headers);
    assert!(
        h.aborted().contains(&stream),
        "the refusal's body is not read"
    );
}

#[test]
fn a_listing_answered_429_waits_its_retry_after_and_goes_again_unchanged() {
    let mut h = Harness::with(|c| c.bearer_token = Some(Secret::new(TOKEN)));
    let first = send_retryable(&mut h, 1, "tools/list", Duration::from_secs(30));
    overloaded(&mut h, first, 429, &[("retry-after", "2")]);
    assert!(h.failures().is_empty(), "not failed: it waits");
    assert_eq!(
        h.wait(),
        Some(Duration::from_secs(2)),
        "exactly the server's wait"
    );
    assert_eq!(posts(&h).len(), 1, "nothing sent during the wait");
    h.jump_to_deadline();
    let sent = posts(&h);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].body, sent[0].body, "the same request, same id");
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(sent[1].header("authorization"), Some(bearer.as_str()));
    let again = sent[1].stream;
    h.reply_json(again, &result(1));
    assert_eq!(h.delivered().len(), 1, "the answer reaches the session");
    assert!(
        h.log_lines().iter().any(|l| l.contains("Retry-After 2 s")),
        "{:?}",
        h.log_lines()
    );
}

#[test]
fn an_http_date_retry_after_is_measured_from_the_responses_date_or_the_wall_clock() {
    let mut h = Harness::new();
    let first = send_retryable(&mut h, 1, "server/discover", Duration::from_secs(30));
    // The server's clock says 08:49:57, the client's is an hour ahead: the wait is 10 s.
    h.wall = WallClock(784_111_797 + 3600);
    overloaded(
        &mut h,
        first,
        503,
        &[
            ("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT"),
            ("date", "Sun, 06 Nov 1994 08:49:57 GMT"),
        ],
    );
    assert_eq!(h.wait(), Some(Duration::from_secs(10)));
    h.jump_to_deadline();
    // No Date: the wall clock the driver read with the head.
    let second = posts(&h)[1].stream;
    h.wall = WallClock(784_111_777);
    overloaded(
        &mut h,
        second,
        429,
        &[("retry-after", "Sun, 06 Nov 1994 08:49:41 GMT")],
    );
    assert_eq!(h.wait(), Some(Duration::from_secs(4)));
}

#[test]
fn a_503_without_retry_after_backs_off_with_jitter_and_endless_refusals_stop_after_four_attempts() {
    let mut h = Harness::new();
    let deadline = Duration::from_secs(60);
    let mut stream = send_retryable(&mut h, 1, "tools/list", deadline);
    let mut waits = Vec::new();
    for _ in 0..3 {
        overloaded(&mut h, stream, 503, &[]);
        waits.push(h.jump_to_deadline());
        stream = posts(&h).last().expect("sent again").stream;
    }
    overloaded(&mut h, stream, 503, &[]);
    assert_eq!(posts(&h).len(), 4, "one sending and three retries");
    assert_jittered_backoff(&waits);
    let failure = h.failure(1);
    assert_rate_limited(failure, 503, None);
    assert!(
        failure.detail.contains("after 4 attempts"),
        "{}",
        failure.detail
    );
    assert_eq!(h.wait(), None, "nothing more is due");
}

#[test]
fn a_retry_after_past_the_deadline_fails_at_once_with_the_servers_wait() {
    let mut h = Harness::new();
    let stream = send_retryable(&mut h, 1, "tools/list", Duration::from_secs(10));
    overloaded(&mut h, stream, 429, &[("retry-after", "60")]);
    let failure = h.failure(1);
    assert_rate_limited(failure, 429, Some(60));
    assert!(
        failure.detail.contains("past the request's deadline"),
        "{}",
        failure.detail
    );
    assert_eq!(posts(&h).len(), 1);
    assert_eq!(h.wait(), None, "no sleep past the deadline");
}

#[test]
fn a_call_answered_429_is_never_sent_again_and_did_not_run() {
    let mut h = holding();
    let stream = h.send_request(1, "tools/call");
    // A 2026-07-28 server's 429 may carry a JSON-RPC error: the status decides.
    overloaded(
        &mut h,
        stream,
        429,
        &[("retry-after", "30"), ("content-type", "application/json")],
    );
    let failure = h.failure(1);
    assert_rate_limited(failure, 429, Some(30));
    assert!(
        failure
            .detail
            .contains("429 Too Many Requests, Retry-After 30 s"),
        "{}",
        failure.detail
    );
    h.advance(Duration::from_secs(60));
    assert_eq!(posts(&h).len(), 1, "exactly one POST");
}

#[test]
fn a_retry_goes_with_the_token_of_now_and_not_at_all_once_the_session_gave_up() {
    let mut h = holding();
    let stream = send_retryable(&mut h, 1, "tasks/get", Duration::from_secs(30));
    overloaded(&mut h, stream, 503, &[("retry-after", "1")]);
    h.exchange
        .set_bearer(Some(Secret::new("tok-RENEWED-1234567890")));
    h.jump_to_deadline();
    assert_eq!(
        h.last_sent().header("authorization"),
        Some("Bearer tok-RENEWED-1234567890")
    );
    // Overloaded again, and then the session settles it (its deadline, a cancel): nothing
    // more goes out.
    let stream = h.last_sent().stream;
    overloaded(&mut h, stream, 503, &[("retry-after", "1")]);
    h.finish(1, false);
    h.advance(Duration::from_secs(5));
    assert_eq!(posts(&h).len(), 2);
    assert_eq!(h.wait(), None);
}

#[test]
fn the_server_stream_refused_as_overloaded_reopens_no_sooner_than_its_retry_after() {
    let mut h = Harness::with(|c| c.server_stream = true);
    h.initialize(Some("s-1"));
    h.open_server_stream();
    let get = h.last_sent().stream;
    h.head(get, 503, &[("retry-after", "20")]);
    assert_eq!(h.wait(), Some(Duration::from_secs(20)));
}

#[test]
fn a_settled_request_on_a_resumed_stream_has_that_stream_closed() {
    // The request's note follows it to the GET that resumes its stream.
    let mut h = Harness::new();
    h.ready(Some("s-1"));
    let post = h.stream_ended_after_an_id(5, "");
    h.jump_to_deadline();
    let get = h.last_sent().stream;
    assert_eq!(h.last_sent().method, Method::GET);
    assert_ne!(get, post);
    h.finish(5, false);
    assert_eq!(h.aborted(), vec![get]);
}

#[test]
fn the_notes_of_requests_never_settled_are_bounded_by_the_flights() {
    // A session that never says it settled them (it would): the notes of requests whose
    // streams failed stay only until they outnumber the flights.
    let mut h = Harness::new();
    h.ready(Some("s-1"));
    let waiting = h.send_request(1, "tools/call");
    let slack = crate::deadlines::SLACK;
    for id in 2..2_000 {
        let post = h.send_request(id, "tools/call");
        // Checked as each request is issued (two flights now).
        let (notes, flights) = (
            h.exchange.flights.noted_requests(),
            h.exchange.flights.len(),
        );
        assert!(
            notes <= 2 * flights + slack,
            "{notes} notes for {flights} flights"
        );
        h.error(post, TransportError::Connect("refused".into()));
    }
    assert!(h.exchange.flights.noted_requests() <= 2 * 2 + slack);
    // The request still in flight keeps its note.
    h.finish(1, false);
    assert!(h.aborted().contains(&waiting));
}
