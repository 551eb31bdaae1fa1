//! The `connection` harness: the client's connection machine end to end, at both eras and
//! over both transports, against an in-memory server whose every answer comes from the fuzz
//! input. It runs what a host does with a client: connect (the era probe, or `initialize`
//! after a fallback), list the tools, call one with progress (through `input_required`
//! rounds, `-32020`, `-32022`, broken streams and resumption), ping, close. No socket, no
//! runtime, no clock: a fake clock jumps to the machine's next deadline whenever nothing
//! waits.

use std::collections::VecDeque;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, StatusCode};

use crate::connection::{
    CallArguments, CallTool, Connection, Frame, Limits, OpError, OpId, Outcome, Output,
};
use crate::exchange::{Exchange, HttpConfig, HttpRequest, StreamId, TransportError, WallClock};
use crate::jsonrpc::{self, Message};
use crate::mcp::JsonObject;
use crate::secret::Secret;
use crate::session::{self, Delivery, Failure, FailureKind, ResumePolicy};

/// Separates the server's replies in the input.
pub(crate) const NEXT_REPLY: &[u8] = b"\n#next-reply\n";

/// The bearer token (HTTP) or credential (stdio) the client holds; it must never show in
/// anything the machine hands back.
const TOKEN: &str = "fuzz-connection-token-51d2";

/// The call's deadline; the machine's other deadlines are shorter or equal.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// How much later than a deadline the fake clock may be when an operation ends there.
const SLACK: Duration = Duration::from_millis(10);
/// Loop steps one input may take: far more than any input needs, so reaching it is a loop.
const MAX_STEPS: usize = 1 << 18;

#[allow(clippy::disallowed_methods)] // The fake clock needs one instant to start from.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The `connection` fuzz target. The first byte: bit 0 stdio (else Streamable HTTP), bit 1
/// the host answers input requests, bits 2 and 3 the era policy (probe; 2025 `initialize`;
/// 2026-07-28 known from a verdict; probe), bits 4 to 7 how reply bodies are cut into chunks.
/// The rest: the server's replies, separated by [`NEXT_REPLY`], taken in turn by each request
/// the client sends (notifications and answers of ours get `202`, `DELETE` gets `200`). A
/// reply's first byte is its kind: `j` a JSON body (over stdio: each line a message), `s` an
/// event stream (each line one event's data), `3`..`5` that status class with the rest as
/// body, `l` the connection lost, `h` a stream that opens and stays silent; `$ID` in a reply
/// is the request's id, `$TOKEN` the call's progress token. With no replies left, HTTP
/// requests are lost and stdio is silent.
///
/// Checks: every operation ends in bounded steps; the call never after its deadline plus
/// slack; connecting never outlives the probe and initialize timeouts; a `tools/call` is sent
/// at most once per round the rules allow (one, plus one after `-32020`, one after `-32022`,
/// one per `input_required` round), never again after a reply that may have run it; no
/// progress comes for an operation that ended; the token shows in no outcome, warning,
/// progress or notification; closing ends within the close timeout plus slack.
pub(crate) fn fuzz_connection(data: &[u8]) {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let replies = rest
        .split_inclusive_sections(NEXT_REPLY)
        .into_iter()
        .filter(|reply| !reply.is_empty())
        .collect();
    let era = match (knob >> 2) & 3 {
        1 => session::EraPolicy::Legacy,
        2 => session::EraPolicy::Modern(crate::mcp::ProtocolVersion::V2026_07_28),
        _ => session::EraPolicy::Auto,
    };
    let stdio = knob & 1 == 1;
    Harness::new(stdio, knob & 2 == 2, era, u64::from(knob >> 4), replies).run();
}

/// Cutting a byte string at a separator.
trait Sections {
    fn split_inclusive_sections(&self, separator: &[u8]) -> Vec<Vec<u8>>;
}

impl Sections for [u8] {
    fn split_inclusive_sections(&self, separator: &[u8]) -> Vec<Vec<u8>> {
        let mut sections = Vec::new();
        let mut rest = self;
        while let Some(at) = rest.windows(separator.len()).position(|w| w == separator) {
            sections.push(rest[..at].to_vec());
            rest = &rest[at + separator.len()..];
        }
        sections.push(rest.to_vec());
        sections
    }
}

/// A dropped connection, as the transport reports it.
fn lost() -> Frame {
    Frame::Failed(TransportError::Lost("connection reset".to_owned()))
}

struct Harness {
    connection: Connection,
    stdio: bool,
    now: Instant,
    replies: VecDeque<Vec<u8>>,
    chunk_seed: u64,
    frames: VecDeque<(StreamId, Frame)>,
    /// Each operation's end, as it came.
    done: Vec<(OpId, Result<Outcome, OpError>)>,
    connected: Option<bool>,
    closed: bool,
    /// `tools/call` requests sent, and what ended each round (the server's error code, or
    /// an `input_required` result).
    calls_sent: usize,
    steps: usize,
}

impl Harness {
    fn new(
        stdio: bool,
        answers_input: bool,
        era: session::EraPolicy,
        chunk_seed: u64,
        replies: VecDeque<Vec<u8>>,
    ) -> Harness {
        let config = session::Config {
            era,
            probe_timeout: Duration::from_secs(1),
            initialize_timeout: Duration::from_secs(2),
            silent_probe_means_legacy: stdio,
            forward_input_requests: answers_input,
            ..session::Config::default()
        };
        let limits = Limits {
            request_timeout: Duration::from_secs(2),
            max_list_pages: 4,
            max_tools: 64,
            max_input_rounds: 2,
            answers_input,
            process_id: 1,
            // A 2026-07-28 call may become a task: polled, within the call's deadline.
            tasks: true,
        };
        let secrets = vec![Secret::new(TOKEN)];
        let connection = if stdio {
            Connection::stdio(config, limits, secrets)
        } else {
            let Ok(mut http) = HttpConfig::new("http://127.0.0.1:9/mcp") else {
                unreachable!("a valid URL");
            };
            http.bearer_token = Some(Secret::new(TOKEN));
            http.post_timeout = Duration::from_secs(2);
            http.close_timeout = Duration::from_secs(1);
            http.resume = ResumePolicy {
                max_attempts: 2,
                initial_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(20),
            };
            Connection::http(config, Exchange::new(http, 0x5EED), limits, secrets)
        };
        Harness {
            connection,
            stdio,
            now: origin(),
            replies,
            chunk_seed,
            frames: VecDeque::new(),
            done: Vec::new(),
            connected: None,
            closed: false,
            calls_sent: 0,
            steps: 0,
        }
    }

    fn run(mut self) {
        let start = self.now;
        self.connection.start(self.now);
        self.until("connecting", |h| h.connected.is_some());
        // The probe (1 s) and then `initialize` (2 s), or a second probe: bounded.
        assert!(
            self.now <= start + Duration::from_secs(6),
            "connecting outlived its timeouts"
        );
        if self.connected == Some(true) {
            let list = self.connection.list_tools(None, self.now);
            self.until_done("listing", list);
            let call = CallTool {
                name: "t".into(),
                arguments: serde_json::json!({"q": "x"})
                    .as_object()
                    .cloned()
                    .map(CallArguments::Object),
                meta: None,
                member: None,
                progress_token: None,
                timeout: CALL_TIMEOUT,
                idle_timeout: None,
                max_response_bytes: Some(64 * 1024),
                content_only: false,
                input_schema: None,
                raw: false,
                trace: None,
                task_support: false,
            };
            let calling = self.now;
            let op = self.connection.call_tool(call, self.now);
            self.until_done("calling", op);
            assert!(
                self.now <= calling + CALL_TIMEOUT + SLACK,
                "the call outlived its deadline"
            );
            // One, plus one after -32020, one after -32022, one per input round (2).
            assert!(self.calls_sent <= 5, "{} tools/call sent", self.calls_sent);
            let ping = self.connection.ping(None, self.now);
            self.until_done("pinging", ping);
        }
        let closing = self.now;
        self.connection.close(self.now);
        self.until("closing", |h| h.closed);
        assert!(
            self.now <= closing + Duration::from_secs(1) + SLACK,
            "closing outlived the close timeout"
        );
        for (op, outcome) in &self.done {
            let shown = format!("{op} {outcome:?}");
            assert!(!shown.contains(TOKEN), "the token shows in {shown}");
        }
    }

    fn until_done(&mut self, phase: &str, op: OpId) {
        self.until(phase, |h| h.done.iter().any(|(done, _)| *done == op));
    }

    /// Steps until `done`: the outputs first, then one frame, else the clock to the next
    /// deadline.
    fn until(&mut self, phase: &str, done: impl Fn(&Self) -> bool) {
        loop {
            self.drain();
            if done(self) {
                return;
            }
            self.steps += 1;
            assert!(
                self.steps <= MAX_STEPS,
                "{phase}: no end after {MAX_STEPS} steps"
            );
            if let Some((stream, frame)) = self.frames.pop_front() {
                self.connection.handle_frame(stream, frame, self.now);
                continue;
            }
            let deadline = self
                .connection
                .poll_timeout()
                .unwrap_or_else(|| panic!("{phase}: nothing waits and no deadline is set"));
            self.now = self.now.max(deadline);
            self.connection.handle_timeout(self.now);
        }
    }

    fn drain(&mut self) {
        while let Some(output) = self.connection.poll_output() {
            match output {
                Output::HttpSend { stream, request } => self.serve_http(stream, &request),
                Output::HttpAbort(stream) => self.frames.retain(|(s, _)| *s != stream),
                Output::StdioSend(message) => self.serve_stdio(&message),
                Output::Connected(_) => {
                    self.connected.get_or_insert(true);
                }
                Output::ConnectFailed(_) => {
                    self.connected.get_or_insert(false);
                }
                Output::Progress { op, params } => {
                    assert!(
                        !self.done.iter().any(|(done, _)| *done == op),
                        "progress after the operation ended"
                    );
                    assert!(!format!("{params:?}").contains(TOKEN), "{params:?}");
                }
                Output::TaskStatus { op, update } => {
                    assert!(
                        !self.done.iter().any(|(done, _)| *done == op),
                        "a task status after the operation ended"
                    );
                    assert!(!format!("{update:?}").contains(TOKEN), "{update:?}");
                }
                Output::Input { op, requests, .. } => {
                    let mut answers = JsonObject::new();
                    for request in requests {
                        answers.insert(request.key, serde_json::json!({"action": "accept"}));
                    }
                    self.connection.answer_input(op, Ok(answers), self.now);
                }
                Output::ServerRequest(request, _) => {
                    let answer = Ok(serde_json::json!({}));
                    self.connection
                        .answer_server_request(&request.id, answer, self.now);
                }
                Output::Warning(text) => assert!(!text.contains(TOKEN), "{text}"),
                Output::ElicitationComplete(id) => assert!(!id.contains(TOKEN), "{id}"),
                // Handed to the host as the server sent them, as logging is.
                Output::Notification(_) => {}
                Output::Done { op, outcome } => {
                    assert!(
                        !self.done.iter().any(|(done, _)| *done == op),
                        "operation {op} ended twice"
                    );
                    self.done.push((op, outcome));
                }
                Output::Closed => self.closed = true,
                Output::Refused(_)
                | Output::Accepted
                | Output::DpopNonce(_)
                | Output::VersionSwitched(_) => {}
            }
        }
    }

    /// The next reply, with the request's id and the call's progress token put in.
    fn next_reply(&mut self, body: &serde_json::Value) -> Option<(u8, Vec<u8>)> {
        let reply = self.replies.pop_front()?;
        let (&kind, payload) = reply.split_first()?;
        let id = body
            .get("id")
            .map_or("null".to_owned(), ToString::to_string);
        let token = body
            .pointer("/params/_meta/progressToken")
            .map_or("null".to_owned(), ToString::to_string);
        let text = String::from_utf8_lossy(payload)
            .replace("$ID", &id)
            .replace("$TOKEN", &token);
        Some((kind, text.into_bytes()))
    }

    fn note_call(&mut self, body: &serde_json::Value) {
        if body.get("method").and_then(|m| m.as_str()) == Some("tools/call") {
            self.calls_sent += 1;
        }
    }

    fn serve_stdio(&mut self, message: &Message<'_>) {
        let Message::Request(_) = message else {
            return;
        };
        let Ok(body) = serde_json::from_str::<serde_json::Value>(&message.encode()) else {
            return;
        };
        self.note_call(&body);
        let Some((kind, payload)) = self.next_reply(&body) else {
            return;
        };
        match kind {
            b'l' => {
                let failure = Failure::new(
                    FailureKind::ConnectionLost,
                    Delivery::MayHaveReached,
                    "the server process exited",
                );
                // A respawn (the probe lost) goes on with the next replies.
                self.connection.handle_link_down(failure, self.now);
            }
            b'h' => {}
            _ => {
                for line in payload.split(|&b| b == b'\n') {
                    if let Ok(packet) = jsonrpc::decode(line) {
                        for message in packet.into_messages() {
                            self.connection.handle_message(message, self.now);
                        }
                    }
                }
            }
        }
    }

    fn serve_http(&mut self, stream: StreamId, request: &HttpRequest) {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let one_way = request.method == http::Method::POST
            && (body.get("id").is_none() || body.get("method").is_none());
        if request.method == http::Method::DELETE || one_way {
            let status = if one_way { 202 } else { 200 };
            self.respond(stream, status, None, Vec::new());
            return;
        }
        self.note_call(&body);
        let Some((kind, payload)) = self.next_reply(&body) else {
            self.frames.push_back((stream, lost()));
            return;
        };
        match kind {
            b'l' => self.frames.push_back((stream, lost())),
            b'h' => {
                let mut headers = HeaderMap::new();
                headers.insert(
                    "content-type",
                    HeaderValue::from_static("text/event-stream"),
                );
                self.frames.push_back((
                    stream,
                    Frame::Head(StatusCode::OK, headers, WallClock::default()),
                ));
            }
            b's' => {
                let events: Vec<u8> = payload
                    .split(|&b| b == b'\n')
                    .flat_map(|line| [b"data: ", line, b"\n\n"].concat())
                    .collect();
                self.respond(stream, 200, Some("text/event-stream"), events);
            }
            b'3' | b'4' | b'5' => {
                let status = 100 * u16::from(kind - b'0') + u16::from(payload.len() as u8 % 100);
                self.respond(stream, status, Some("application/json"), payload);
            }
            _ => self.respond(stream, 200, Some("application/json"), payload),
        }
    }

    fn respond(&mut self, stream: StreamId, status: u16, media: Option<&str>, body: Vec<u8>) {
        let mut headers = HeaderMap::new();
        if let Some(media) = media.and_then(|m| HeaderValue::from_str(m).ok()) {
            headers.insert("content-type", media);
        }
        if !self.stdio && status == 200 && self.connected.is_none() {
            // A 2025-era server names its session in the initialize reply.
            headers.insert("mcp-session-id", HeaderValue::from_static("fuzz-session"));
        }
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        self.frames
            .push_back((stream, Frame::Head(status, headers, WallClock::default())));
        let mut rest = &body[..];
        let mut seed = self.chunk_seed;
        while !rest.is_empty() {
            let size = match seed {
                0 => rest.len(),
                _ => 1 + (seed as usize % 61),
            }
            .min(rest.len());
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407)
                >> 1;
            self.frames.push_back((
                stream,
                Frame::Data(bytes::Bytes::copy_from_slice(&rest[..size])),
            ));
            rest = &rest[size..];
        }
        self.frames.push_back((stream, Frame::End));
    }
}
