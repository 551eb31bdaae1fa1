//! The `http_response` harness: raw HTTP responses from the fuzz input answer the client's
//! own connection machine (the [`Connection`] the client driver runs, with its session and
//! Streamable HTTP exchange inside) in memory, for a `tools/call` operation, for the
//! notifications the session sends, and for the GETs that resume a response stream. No socket,
//! no runtime, no clock: a fake clock jumps to the machine's next deadline whenever no frame
//! is waiting, so an input runs at parser speed.

use std::collections::{BTreeMap, VecDeque};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

use crate::binding::call::finish_call;
use crate::connection::{CallTool, Connection, Frame, Limits, OpError, OpId, Outcome, Output};
use crate::error::{Error, ErrorKind};
use crate::exchange::config::HttpLimits;
use crate::exchange::{Exchange, HttpConfig, HttpRequest, StreamId, TransportError, WallClock};
use crate::mcp::{CallToolResult, ProgressToken};
use crate::secret::Secret;
use crate::session::{self, ResumePolicy};
use crate::sse;

/// Separates the responses in the input.
pub(crate) const NEXT_RESPONSE: &[u8] = b"\n#next-response\n";

/// The bearer token the client sends; it must never show in an error, a result or a log line.
const TOKEN: &str = "fuzz-bearer-9f3c1a77e2";

/// The call's deadline, and how much later than it the fake clock may be while the call is
/// pending (the clock only ever jumps to a deadline, so the call ends at its deadline at the
/// latest). The same slack bounds closing.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
const SLACK: Duration = Duration::from_millis(10);

/// The `max_response_bytes` a call gets (first byte, bits 2 to 4).
const RESPONSE_LIMITS: [u64; 8] = [64, 256, 1024, 4096, 16_384, 65_536, 1 << 20, 16 << 20];

/// The reply to a notification POST when the input gives none.
const ACCEPTED: &[u8] = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";

/// The reply to the `DELETE` that ends a session.
const DELETED: &[u8] = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

/// As many headers as hyper reads by default; more fail the response.
const MAX_HEADERS: usize = 100;

/// Loop steps (frames delivered, clock jumps, outputs handled) one input may take: far more
/// than any input of the fuzzer's length needs, so reaching it means a machine loops.
const MAX_STEPS: usize = 1 << 20;

/// The fake clock's origin. The machines never read the clock; the harness needs one instant
/// to start from and moves it only to their deadlines.
#[allow(clippy::disallowed_methods)]
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// What the in-memory server answers, by the kind of request.
struct Script {
    /// The initialize reply (fixed: the handshake is not what is fuzzed here).
    initialize: Vec<u8>,
    /// The reply to the `tools/call` POST.
    call: Vec<u8>,
    /// The reply to every notification and response POST.
    one_way: Vec<u8>,
    /// Replies to the GETs that resume a stream, in order; later GETs fail as a connection
    /// closed unanswered does.
    resumes: Vec<Vec<u8>>,
    /// Seeds how reply bodies are cut into chunks (0: each body in one chunk).
    chunk_seed: u64,
}

/// The `http_response` fuzz target. The first byte chooses whether the initialize reply
/// carries an `Mcp-Session-Id` (bit 0), the negotiated revision (bit 1: 2025-06-18 instead of
/// 2025-11-25), the call's `max_response_bytes` (`RESPONSE_LIMITS`, bits 2 to 4) and how
/// reply bodies are cut into chunks (bits 5 to 7); the rest is raw HTTP/1.1 responses
/// separated by [`NEXT_RESPONSE`]: the reply to `tools/call`, then the reply to every
/// notification and response POST (`notifications/initialized`, `notifications/cancelled`,
/// answers to server requests; `202 Accepted` when absent), then the replies to
/// stream-resuming GETs in order (after them a GET fails with [`TransportError::Lost`], as a
/// connection closed unanswered does). The `DELETE` is answered `200`.
///
/// Everything runs in memory: the harness drives the [`Connection`] exactly as the client
/// driver does, plays the server for each [`Output::HttpSend`], and when no frame is waiting
/// moves a fake clock to the machine's `poll_timeout`. Frames of
/// concurrent responses are delivered one at a time, round robin by stream. Each raw response
/// is read as hyper would: the head with `httparse` (an unparseable or incomplete head, an
/// invalid header name or value, or an invalid `Content-Length` is
/// `handle_error(Lost)`; `1xx` heads other than `101` are skipped), then the body by
/// `Content-Length` (fewer bytes than declared end in `handle_error(Lost)`, extra bytes are
/// ignored), by a simple decoding of `Transfer-Encoding: chunked` (trailers ignored; a
/// malformed or unfinished chunk ends the decoded bytes with `handle_error(Lost)`; the chunked
/// framing's edge cases stay covered by the loopback fault-server tests), or up to the end of
/// the section (`handle_end`); `1xx`, `204` and `304` have no body. The body is cut into
/// chunks by the chunk seed.
///
/// Checks: connecting succeeds whatever a notification's reply was (a notification's answer
/// cannot fail the session or hold the call back: the `tools/call` POST goes out); the call,
/// made as `Client::call_tool` makes it (a progress token, a 3 s deadline on the fake clock),
/// ends within bounded steps and never after its deadline plus `SLACK`, in a result or a
/// classified error (converted and redacted as the client does), where an HTTP refusal (3xx,
/// 4xx) leaves `unknown_outcome` false, a failure after the call may have run (lost stream,
/// protocol error, limit, timeout, 5xx) makes it true, and a result comes only from a 2xx
/// reply; the binding pipeline's `unknown_outcome` (`finish_call`) is the error's; the bearer
/// token shows in no error, result, pipeline result, wire-log line, or `Debug` output of those
/// or of the machines, even when the server echoes it; every request goes to the configured
/// origin with the token, marked sensitive so that its `Debug` hides it (what the server chose
/// and the client echoes, an event id in `Last-Event-ID` or a request id in an answer, may
/// still show there, as the server sent it); closing (`Connection::close`)
/// reaches `Closed` within the close timeout plus slack.
pub(crate) fn fuzz_http_response(data: &[u8]) {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let mut sections = split(rest);
    let call = sections.remove(0);
    let one_way = if sections.is_empty() {
        ACCEPTED.to_vec()
    } else {
        sections.remove(0)
    };
    let script = Script {
        initialize: initialize_reply(knob & 1 == 1, knob & 2 == 2),
        call,
        one_way,
        resumes: sections,
        chunk_seed: u64::from(knob >> 5),
    };
    let max_response_bytes = RESPONSE_LIMITS[usize::from((knob >> 2) & 7)];
    Harness::new(script).run(max_response_bytes);
}

/// The input after the knob byte, cut at every [`NEXT_RESPONSE`]; never empty.
fn split(mut rest: &[u8]) -> Vec<Vec<u8>> {
    let mut sections = Vec::new();
    while let Some(at) = memchr::memmem::find(rest, NEXT_RESPONSE) {
        sections.push(rest[..at].to_vec());
        rest = &rest[at + NEXT_RESPONSE.len()..];
    }
    sections.push(rest.to_vec());
    sections
}

fn initialize_reply(session_id: bool, older: bool) -> Vec<u8> {
    let version = if older { "2025-06-18" } else { "2025-11-25" };
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{{\"protocolVersion\":\"{version}\",\
         \"capabilities\":{{\"tools\":{{}}}},\"serverInfo\":{{\"name\":\"fuzz\",\"version\":\"1\"}}}}}}"
    );
    let session = if session_id {
        "mcp-session-id: fuzz-session-1\r\n"
    } else {
        ""
    };
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{session}connection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A dropped connection, as the transport reports it.
fn lost(detail: impl Into<String>) -> Frame {
    Frame::Failed(TransportError::Lost(detail.into()))
}

/// A raw response read as hyper reads it, its body cut into chunks by `chunk_seed`.
fn frames(raw: &[u8], chunk_seed: u64) -> VecDeque<Frame> {
    let mut frames = VecDeque::new();
    let (status, headers, body, complete) = match read_response(raw) {
        Ok(read) => read,
        Err(detail) => {
            frames.push_back(lost(detail));
            return frames;
        }
    };
    frames.push_back(Frame::Head(status, headers, WallClock::default()));
    let mut state = chunk_seed | 0x9E37_79B9_7F4A_7C10;
    let mut rest = &body[..];
    while !rest.is_empty() {
        let take = if chunk_seed == 0 {
            rest.len()
        } else {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            1 + (state % 64) as usize
        };
        let (chunk, after) = rest.split_at(take.min(rest.len()));
        frames.push_back(Frame::Data(bytes::Bytes::copy_from_slice(chunk)));
        rest = after;
    }
    frames.push_back(if complete {
        Frame::End
    } else {
        lost("connection closed before message completed")
    });
    frames
}

/// Status, headers, body and whether the body is complete; `Err` when hyper would yield no
/// response at all.
type Read = (StatusCode, HeaderMap, Vec<u8>, bool);

fn read_response(mut raw: &[u8]) -> Result<Read, String> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut slots);
        let head_len = match response.parse(raw) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                return Err("connection closed before message completed".to_owned());
            }
            Err(error) => return Err(format!("invalid HTTP response: {error}")),
        };
        let code = response.code.unwrap_or(0);
        let status = StatusCode::from_u16(code)
            .map_err(|_| format!("invalid HTTP response: status {code}"))?;
        let mut headers = HeaderMap::new();
        for header in response.headers.iter() {
            let name = HeaderName::from_bytes(header.name.as_bytes())
                .map_err(|_| "invalid HTTP response: header name".to_owned())?;
            let value = HeaderValue::from_bytes(header.value)
                .map_err(|_| "invalid HTTP response: header value".to_owned())?;
            headers.append(name, value);
        }
        let rest = &raw[head_len..];
        if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
            // hyper reads past interim responses to the final one.
            raw = rest;
            continue;
        }
        if status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            return Ok((status, headers, Vec::new(), true));
        }
        if let Some(codings) = headers
            .get_all(http::header::TRANSFER_ENCODING)
            .iter()
            .next_back()
        {
            let last = codings.as_bytes().rsplit(|&b| b == b',').next();
            let chunked = last.is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            if chunked {
                let (body, complete) = dechunk(rest);
                return Ok((status, headers, body, complete));
            }
            return Ok((status, headers, rest.to_vec(), true));
        }
        if headers.contains_key(http::header::CONTENT_LENGTH) {
            let length = content_length(&headers)
                .ok_or_else(|| "invalid HTTP response: content-length".to_owned())?;
            let have = usize::try_from(length).map_or(rest.len(), |l| l.min(rest.len()));
            let complete = have as u64 == length;
            return Ok((status, headers, rest[..have].to_vec(), complete));
        }
        return Ok((status, headers, rest.to_vec(), true));
    }
}

/// The one length all `Content-Length` values (and comma-separated list members) agree on.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    let mut length = None;
    for value in headers.get_all(http::header::CONTENT_LENGTH) {
        for member in value.as_bytes().split(|&b| b == b',') {
            let member = member.trim_ascii();
            if member.is_empty() || !member.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let n: u64 = std::str::from_utf8(member).ok()?.parse().ok()?;
            if length.is_some_and(|l| l != n) {
                return None;
            }
            length = Some(n);
        }
    }
    length
}

/// A simple chunked decoding: the bytes decoded, and whether the last chunk arrived.
fn dechunk(mut data: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = memchr::memmem::find(data, b"\r\n") else {
            return (body, false);
        };
        let size = data[..line_end].split(|&b| b == b';').next().unwrap_or(&[]);
        let size = size.trim_ascii();
        let Some(size) = std::str::from_utf8(size)
            .ok()
            .filter(|s| !s.is_empty() && s.len() <= 16)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
        else {
            return (body, false);
        };
        data = &data[line_end + 2..];
        if size == 0 {
            return (body, true);
        }
        let Some(size) = usize::try_from(size).ok().filter(|&s| s <= data.len()) else {
            body.extend_from_slice(data);
            return (body, false);
        };
        body.extend_from_slice(&data[..size]);
        if !data[size..].starts_with(b"\r\n") {
            return (body, false);
        }
        data = &data[size + 2..];
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// The connection machine, the in-memory server and the fake clock.
struct Harness {
    connection: Connection,
    secret: Secret,
    now: Instant,
    script: Script,
    /// Frames not yet delivered, by stream.
    streams: BTreeMap<StreamId, VecDeque<Frame>>,
    /// The stream that got the last frame (round robin).
    cursor: Option<StreamId>,
    resumes_served: usize,
    steps: usize,
    /// Set by `Output::Connected` (`Ok`) or `Output::ConnectFailed`.
    connected: Option<Result<(), OpError>>,
    /// The call's operation, once made.
    call: Option<OpId>,
    /// The stream of the `tools/call` POST, and the status its head had.
    call_stream: Option<StreamId>,
    call_status: Option<u16>,
    call_outcome: Option<Result<Outcome, OpError>>,
    closed: bool,
}

impl Harness {
    fn new(script: Script) -> Self {
        let Ok(mut config) = HttpConfig::new("http://127.0.0.1:9/mcp") else {
            unreachable!("a valid URL");
        };
        config.bearer_token = Some(Secret::new(TOKEN));
        config.post_timeout = Duration::from_secs(2);
        config.close_timeout = Duration::from_secs(1);
        config.resume = ResumePolicy {
            max_attempts: 2,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(20),
        };
        config.limits = HttpLimits {
            max_body_bytes: 256 * 1024,
            sse: sse::Limits {
                max_line_bytes: 16 * 1024,
                max_event_bytes: 64 * 1024,
            },
        };
        config.wire_log = Some(std::sync::Arc::new(|line: &str| {
            assert!(
                !line.contains(TOKEN),
                "the token shows in a log line: {line}"
            );
        }));
        let secrets = config.secrets();
        let session = session::Config {
            // The harness drives the 2025-era handshake over HTTP.
            era: session::EraPolicy::Legacy,
            ..session::Config::default()
        };
        let limits = Limits {
            request_timeout: Duration::from_secs(30),
            max_list_pages: 100,
            max_tools: 10_000,
            max_input_rounds: 8,
            answers_input: false,
            process_id: 1,
            tasks: false,
        };
        Harness {
            connection: Connection::http(session, Exchange::new(config, 0x5EED), limits, secrets),
            secret: Secret::new(TOKEN),
            now: origin(),
            script,
            streams: BTreeMap::new(),
            cursor: None,
            resumes_served: 0,
            steps: 0,
            connected: None,
            call: None,
            call_stream: None,
            call_status: None,
            call_outcome: None,
            closed: false,
        }
    }

    fn run(mut self, max_response_bytes: u64) {
        // Connecting: the handshake (or its failure).
        self.connection.start(self.now);
        self.flush();
        while self.connected.is_none() {
            self.step("connecting");
        }
        if let Some(Err(error)) = &self.connected {
            panic!("connecting failed on a notification's reply: {error:?}");
        }

        // The call, as `Client::call_tool` makes it.
        let call = CallTool {
            name: "echo".into(),
            arguments: None,
            meta: None,
            member: None,
            progress_token: Some(ProgressToken::String("mcpwire-fuzz-0".to_owned())),
            timeout: CALL_TIMEOUT,
            idle_timeout: None,
            max_response_bytes: Some(max_response_bytes),
            content_only: false,
            input_schema: None,
            raw: false,
            trace: None,
            task_support: false,
        };
        let op = self.connection.call_tool(call, self.now);
        self.call = Some(op);
        let deadline = self.now + CALL_TIMEOUT;
        self.flush();
        while self.call_outcome.is_none() {
            self.step("calling");
            assert!(
                self.now <= deadline + SLACK,
                "the call outlived its deadline"
            );
        }
        assert!(
            self.call_stream.is_some(),
            "the tools/call POST never went out"
        );
        let Some(settled) = self.call_outcome.take() else {
            unreachable!("the loop ran until the call settled");
        };
        let outcome = match settled {
            Ok(Outcome::Call(result)) => Ok(result),
            Ok(other) => panic!("a call ended with {other:?}"),
            Err(error) => Err(crate::client::op_error(error)),
        };
        self.check_outcome(&outcome);

        // The binding pipeline classifies the same way.
        let expected_unknown = outcome.as_ref().err().map(Error::outcome_unknown);
        let result = finish_call("call-1", outcome, None, max_response_bytes);
        if let Some(unknown) = expected_unknown {
            assert_eq!(result.unknown_outcome(), Some(unknown));
        }
        assert!(
            !format!("{result:?}").contains(TOKEN) && !result.to_json_line().contains(TOKEN),
            "the token shows in the pipeline's result"
        );

        // Closing, as the client's driver does.
        let closing = self.now;
        let close_timeout = self
            .connection
            .exchange_ref()
            .map_or(Duration::ZERO, |exchange| exchange.config().close_timeout);
        self.connection.close(self.now);
        self.flush();
        while !self.closed {
            self.step("closing");
            assert!(
                self.now <= closing + close_timeout + SLACK,
                "closing outlived the close timeout"
            );
        }
        assert!(
            !format!("{:?}", self.connection.exchange_ref()).contains(TOKEN),
            "the token shows in the machine's Debug output"
        );
        assert!(!self.secret.expose().is_empty());
    }

    fn check_outcome(&self, outcome: &Result<CallToolResult, Error>) {
        let call_status = self.call_status;
        assert!(
            !format!("{outcome:?}").contains(TOKEN),
            "the token shows in the outcome"
        );
        match outcome {
            Ok(_) => assert!(
                call_status.is_some_and(|s| (200..300).contains(&s)),
                "a result from a reply with status {call_status:?}"
            ),
            Err(error) => {
                assert!(
                    !error.to_string().contains(TOKEN),
                    "the token shows in {error}"
                );
                let unknown = error.outcome_unknown();
                match error.kind() {
                    ErrorKind::Unauthorized => {
                        assert!(matches!(call_status, Some(401 | 403)), "{call_status:?}");
                        assert!(!unknown, "a 401/403 refusal has a known outcome");
                    }
                    ErrorKind::Http => {
                        // Refusals (3xx, 4xx) come before the tool runs; a 5xx may come
                        // after. Statuses outside those classes promise nothing either way.
                        let status = call_status.unwrap_or_else(|| panic!("{error:?}"));
                        if (300..600).contains(&status) {
                            assert_eq!(unknown, status >= 500, "{status}: {error:?}");
                        }
                    }
                    ErrorKind::ConnectionLost
                    | ErrorKind::Protocol
                    | ErrorKind::LimitExceeded
                    | ErrorKind::Timeout => assert!(unknown, "{error:?}"),
                    ErrorKind::ServerError | ErrorKind::Connect => {
                        assert!(!unknown, "{error:?}");
                    }
                    // Refused with 404 on the call, or expired while resuming its stream.
                    ErrorKind::SessionExpired => assert!(
                        if unknown {
                            call_status.is_some_and(|s| (200..300).contains(&s))
                        } else {
                            call_status == Some(404)
                        },
                        "{call_status:?}: {error:?}"
                    ),
                    ErrorKind::ElicitationRequested => assert!(unknown),
                    other => panic!("unexpected kind {other:?}: {error:?}"),
                }
            }
        }
    }

    /// One step: the next waiting frame (round robin by stream), else the clock moved to the
    /// next deadline. Panics when there is neither (the machine waits on nothing while
    /// something is unfinished) or after `MAX_STEPS`.
    fn step(&mut self, phase: &str) {
        self.count(phase);
        let next = self
            .cursor
            .and_then(|last| {
                self.streams
                    .range((std::ops::Bound::Excluded(last), std::ops::Bound::Unbounded))
                    .next()
            })
            .or_else(|| self.streams.iter().next())
            .map(|(stream, _)| *stream);
        if let Some(stream) = next {
            self.cursor = Some(stream);
            let frame = self.streams.get_mut(&stream).and_then(VecDeque::pop_front);
            if self.streams.get(&stream).is_some_and(VecDeque::is_empty) {
                self.streams.remove(&stream);
            }
            if let Some(frame) = frame {
                self.deliver(stream, frame);
            }
            self.flush();
            return;
        }
        let deadline = self
            .connection
            .poll_timeout()
            .unwrap_or_else(|| panic!("{phase}: no frame waits and no deadline is set"));
        self.now = self.now.max(deadline);
        self.connection.handle_timeout(self.now);
        self.flush();
    }

    fn count(&mut self, phase: &str) {
        self.steps += 1;
        assert!(
            self.steps <= MAX_STEPS,
            "{phase}: no end after {MAX_STEPS} steps"
        );
    }

    fn deliver(&mut self, stream: StreamId, frame: Frame) {
        if let Frame::Head(status, ..) = &frame
            && self.call_stream == Some(stream)
        {
            self.call_status = Some(status.as_u16());
        }
        self.connection.handle_frame(stream, frame, self.now);
    }

    /// Carries out what the machine asks for until it asks for nothing (the client driver's
    /// `drain`); here the in-memory server answers its requests.
    fn flush(&mut self) {
        while let Some(output) = self.connection.poll_output() {
            self.count("flushing");
            match output {
                Output::HttpSend { stream, request } => self.serve(stream, &request),
                Output::HttpAbort(stream) => {
                    self.streams.remove(&stream);
                }
                Output::Connected(_) => {
                    self.connected.get_or_insert(Ok(()));
                }
                Output::ConnectFailed(error) => {
                    self.connected.get_or_insert(Err(error));
                }
                Output::Done { op, outcome } if Some(op) == self.call => {
                    assert!(
                        self.call_outcome.is_none(),
                        "the call ended twice: {outcome:?}"
                    );
                    self.call_outcome = Some(outcome);
                }
                Output::Closed => self.closed = true,
                // No progress sink and no notification sink, as in a default `CallOptions`;
                // refusals are held only when a token source asks for it, and none does here.
                _ => {}
            }
        }
    }

    /// Picks the script's reply to `request` and queues its frames under `stream`.
    fn serve(&mut self, stream: StreamId, request: &HttpRequest) {
        // The token goes on every request, marked sensitive so that `Debug` hides it. (What
        // the server chose and the client echoes, an event id in `Last-Event-ID` or a request
        // id in an answer's body, may hold it in the request, as the server sent it; the wire
        // log redacts it there.)
        let authorization = request.headers.get(http::header::AUTHORIZATION);
        assert!(
            authorization.is_some_and(|value| value.is_sensitive()
                && value.as_bytes() == format!("Bearer {TOKEN}").as_bytes()
                && !format!("{value:?}").contains(TOKEN)),
            "the token is missing from a request or not hidden in its Debug output"
        );
        let Some(exchange) = self.connection.exchange_ref() else {
            unreachable!("an HTTP connection");
        };
        let url = &exchange.config().url;
        assert!(
            request.uri.scheme() == url.scheme() && request.uri.authority() == url.authority(),
            "a request to another origin: {}",
            request.uri
        );
        let reply: &[u8] = if request.method == Method::GET {
            let n = self.resumes_served;
            self.resumes_served += 1;
            match self.script.resumes.get(n) {
                Some(reply) => reply,
                None => {
                    let lost = lost("connection closed before message completed");
                    self.streams.insert(stream, VecDeque::from([lost]));
                    return;
                }
            }
        } else if request.method == Method::DELETE {
            DELETED
        } else if contains(&request.body, b"\"method\":\"initialize\"") {
            &self.script.initialize
        } else if contains(&request.body, b"\"method\":\"tools/call\"") {
            self.call_stream = Some(stream);
            &self.script.call
        } else {
            &self.script.one_way
        };
        let frames = frames(reply, self.script.chunk_seed);
        self.streams.insert(stream, frames);
    }
}
