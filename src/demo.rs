//! An embedded loopback MCP server for the one-command demo, tests, benchmarks and examples:
//! Streamable HTTP (protocol 2025-11-25, also answering 2025-06-18 and 2025-03-26) on
//! `127.0.0.1` only, and the same tools over stdio ([`serve_stdio`], what `mcpwire
//! demo-server --stdio` runs).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let server = mcpwire::demo::DemoServer::start().await?;
//! println!("MCP endpoint: {}", server.url());
//! // ... connect a client to server.url() ...
//! drop(server); // stops the server and every connection
//! # Ok(())
//! # }
//! ```
//!
//! # What it serves
//!
//! Seven tools, each with a JSON Schema `inputSchema` (the last two are for benchmarks):
//!
//! | tool | arguments | result |
//! | --- | --- | --- |
//! | `progress_report` | `steps` 1..=20 (5), `delay_ms` 0..=1000 (100) | progress "step i of N" after each delay (with a `progressToken`), then "done after N steps" |
//! | `tiny_image` | none | one image block: a 2×2 PNG |
//! | `weather` | `city` | `structuredContent` `{city, temperature_c, conditions, humidity}` (an `outputSchema` describes it) and the same JSON as text; the same city always gets the same report |
//! | `echo` | `message` | "Echo: message" |
//! | `fail` | `message` | an `isError` result with the message |
//! | `progress_burst` | `steps` 1..=100000 (1000) | progress "step i of N" `steps` times with no delay (with a `progressToken`), then "done after N steps" |
//! | `big_text` | `bytes` 0..=16 MiB (1024) | one text block of exactly `bytes` bytes: lines of 99 letters and a newline |
//!
//! `tools/list` pages hold two tools, linked by opaque cursors. An unknown tool or invalid
//! arguments give an `isError` result, as the official SDKs do.
//!
//! # Wire behaviour
//!
//! Section names refer to the spec's `basic/transports.mdx` (2025-11-25), "Streamable HTTP".
//!
//! * `POST /mcp` ("Sending Messages to the Server") needs `Accept` listing both
//!   `application/json` and `text/event-stream` (else 406) and `Content-Type: application/json`
//!   (else 415). Malformed JSON gets 400 with -32700; an invalid message 400 with -32600.
//! * `initialize` gets a JSON reply with a fresh `Mcp-Session-Id` (32 hex digits; "Session
//!   Management"). The offered protocol version is echoed when supported, else 2025-11-25.
//! * Every other POST needs the session id: missing is 400, unknown (or deleted) is 404 with
//!   -32600 "Session not found". An `MCP-Protocol-Version` header, when sent, must name a
//!   supported revision (else 400).
//! * Notifications and responses get 202 with no body. `ping` and `tools/list` are answered
//!   in `application/json`; `tools/call` in `text/event-stream`: progress notifications, then
//!   the result, then the stream ends. Unknown methods get -32601.
//! * `notifications/cancelled` for a call in flight stops it: no result is sent and its
//!   stream ends. A client that closes the connection during a call stops it too (there is
//!   no event store, so nobody could resume the stream).
//! * Batches (arrays) are accepted on 2025-03-26 sessions only, which is the one revision
//!   that has them; they are answered with one event stream.
//! * `DELETE /mcp` ends the session (200), stopping its calls; `GET /mcp` is 405: there is
//!   no standalone stream.
//! * The `Host` and any `Origin` must be loopback names (127.0.0.1, localhost, \[::1\]), else
//!   403: a guard against DNS rebinding ("Security Warning").
//! * With [`DemoServer::start_with_token`], requests to `/mcp` need `Authorization: Bearer
//!   TOKEN`; others get 401 with `WWW-Authenticate: Bearer resource_metadata="..."`, whose
//!   protected-resource metadata (RFC 9728) is served at that address.
//!
//! # HTTP and limits
//!
//! HTTP/1.1 with keep-alive (any number of requests per connection), `Content-Length` or
//! chunked request bodies, `Expect: 100-continue`. A request head holds at most 64 header
//! fields in 16 KiB; a body at most 1 MiB (413 beyond). A connection idle for 30 s is closed;
//! a request must arrive within 30 s of its first byte; every write must finish within 30 s.
//! At most 1024 connections are served at once (more wait to be accepted), and at most 4096
//! sessions live at once (sessions idle for 10 minutes are dropped to make room; else 503).

mod http;
mod stdio;
#[cfg(test)]
mod tests;
mod tools;

pub use stdio::serve_stdio;

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::util::{civil_from_days, lock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::{JoinHandle, JoinSet};

use self::http::{Conn, Limits, ReadError, Request, Response};
use crate::jsonrpc::{self, ErrorObject, Id, Message, Packet};
use crate::mcp::ProtocolVersion;

/// The endpoint's path.
const MCP_PATH: &str = "/mcp";
/// Where the protected-resource metadata lives (RFC 9728 §3.1: the well-known prefix, then
/// the resource's path).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// JSON-RPC code for transport-level refusals, as the official SDKs use it.
const SERVER_ERROR: i64 = -32000;

/// Counters of what a [`DemoServer`] has done since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DemoStats {
    /// Sessions created by `initialize`.
    pub sessions_opened: u64,
    /// Sessions ended by `DELETE`.
    pub sessions_deleted: u64,
    /// HTTP requests read (every method and path, answered or refused).
    pub requests: u64,
    /// TCP connections accepted.
    pub connections: u64,
}

/// A running loopback MCP server. Dropping it stops the server: the listener closes and every
/// connection and call in progress is aborted.
pub struct DemoServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for DemoServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoServer")
            .field("addr", &self.addr)
            .field(
                "token",
                &self.shared.config.token.as_ref().map(|_| "<redacted>"),
            )
            .field("stats", &self.stats())
            .finish()
    }
}

impl DemoServer {
    /// Starts a server on `127.0.0.1` at a free port, without authentication. Must be called
    /// within a tokio runtime, which then runs the server.
    pub async fn start() -> std::io::Result<DemoServer> {
        DemoServer::start_with_token(None).await
    }

    /// Starts a server on `127.0.0.1` at a free port. With `Some(token)`, every request to the
    /// endpoint must carry `Authorization: Bearer <token>`.
    pub async fn start_with_token(token: Option<String>) -> std::io::Result<DemoServer> {
        DemoServer::start_with(Config {
            token,
            ..Config::default()
        })
        .await
    }

    async fn start_with(config: Config) -> std::io::Result<DemoServer> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            config,
            addr,
            sessions: Mutex::new(HashMap::new()),
            sessions_opened: AtomicU64::new(0),
            sessions_deleted: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            counter: AtomicU64::new(0),
            started: now(),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(DemoServer { addr, shared, task })
    }

    /// The address the server listens on (always `127.0.0.1`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.addr)
    }

    /// What the server has done so far.
    pub fn stats(&self) -> DemoStats {
        let shared = &self.shared;
        DemoStats {
            sessions_opened: shared.sessions_opened.load(Ordering::Relaxed),
            sessions_deleted: shared.sessions_deleted.load(Ordering::Relaxed),
            requests: shared.requests.load(Ordering::Relaxed),
            connections: shared.connections.load(Ordering::Relaxed),
        }
    }
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection task.
        self.task.abort();
    }
}

/// The server's settings.
#[derive(Clone, Debug)]
struct Config {
    token: Option<String>,
    limits: Limits,
    max_connections: usize,
    max_sessions: usize,
    session_idle: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            token: None,
            limits: Limits::default(),
            max_connections: 1024,
            max_sessions: 4096,
            session_idle: Duration::from_secs(600),
        }
    }
}

/// State shared by the accept loop and every connection.
struct Shared {
    config: Config,
    addr: SocketAddr,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    sessions_opened: AtomicU64,
    sessions_deleted: AtomicU64,
    requests: AtomicU64,
    connections: AtomicU64,
    /// Feeds session ids and in-flight keys.
    counter: AtomicU64,
    started: tokio::time::Instant,
}

/// One MCP session.
struct Session {
    id: String,
    version: ProtocolVersion,
    /// Calls in progress by request id: a key telling registrations apart, and the sender
    /// that cancels the call (dropping it cancels too).
    in_flight: Mutex<HashMap<Id, (u64, oneshot::Sender<()>)>>,
    /// Milliseconds since the server started, at the last request.
    last_used_ms: AtomicU64,
}

/// What to send for a request.
enum Reply {
    /// One response with a `Content-Length`.
    Full(Response),
    /// A `text/event-stream` response running `jobs` one after another.
    Stream {
        headers: Vec<(&'static str, String)>,
        jobs: Vec<Job>,
    },
}

/// One JSON-RPC request's share of a response stream.
struct Job {
    outputs: VecDeque<Output>,
    cancel: Option<Cancel>,
}

impl Job {
    fn message(message: &Message<'_>) -> Job {
        Job {
            outputs: VecDeque::from([Output::Send(message.encode())]),
            cancel: None,
        }
    }
}

enum Output {
    Sleep(Duration),
    /// One JSON-RPC message, sent as one SSE event.
    Send(String),
}

/// Cancellation of a call in flight: fires when `notifications/cancelled` names it or its
/// session ends. Dropping it unregisters the call.
struct Cancel {
    rx: oneshot::Receiver<()>,
    session: Arc<Session>,
    id: Id,
    key: u64,
}

impl Cancel {
    /// Whether the call was cancelled, without waiting.
    fn fired(&mut self) -> bool {
        !matches!(self.rx.try_recv(), Err(oneshot::error::TryRecvError::Empty))
    }
}

impl Drop for Cancel {
    fn drop(&mut self) {
        let mut in_flight = lock(&self.session.in_flight);
        if in_flight
            .get(&self.id)
            .is_some_and(|(key, _)| *key == self.key)
        {
            in_flight.remove(&self.id);
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    let permits = Arc::new(Semaphore::new(shared.config.max_connections));
    loop {
        while connections.try_join_next().is_some() {}
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                shared.connections.fetch_add(1, Ordering::Relaxed);
                // Events are small and latency matters more than packet count.
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                connections.spawn(async move {
                    serve(stream, &shared).await;
                    drop(permit);
                });
            }
            // Out of file descriptors and the like: back off rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn serve(stream: TcpStream, shared: &Shared) {
    let mut conn = Conn::new(stream, shared.config.limits);
    loop {
        let request = match conn.read_request().await {
            Ok(request) => request,
            Err(ReadError::Closed | ReadError::Io) => break,
            Err(ReadError::Reject(status, why)) => {
                shared.requests.fetch_add(1, Ordering::Relaxed);
                let _ = conn.send(&Response::text(status, why), false, false).await;
                conn.linger().await;
                return;
            }
        };
        shared.requests.fetch_add(1, Ordering::Relaxed);
        let keep_alive = request.keep_alive;
        let sent = match shared.handle(&request) {
            Reply::Full(response) => conn
                .send(&response, keep_alive, request.method == "HEAD")
                .await
                .is_ok(),
            Reply::Stream { headers, jobs } => {
                stream_jobs(&mut conn, &headers, jobs, keep_alive, !request.http10).await
            }
        };
        if !sent || !keep_alive {
            break;
        }
    }
    conn.shutdown().await;
}

/// Sends a `text/event-stream` response, running each job's steps; `false` when the
/// connection can no longer be used. Without `chunked` (an HTTP/1.0 client), the body ends
/// when the connection closes.
async fn stream_jobs(
    conn: &mut Conn,
    headers: &[(&'static str, String)],
    jobs: Vec<Job>,
    keep_alive: bool,
    chunked: bool,
) -> bool {
    let keep_alive = keep_alive && chunked;
    let framing = chunked.then_some("Transfer-Encoding: chunked");
    // Output is written when the stream is about to wait and at its end, so events sent
    // back to back (the last one and the end of the body above all) share one write: a
    // client then sees the body end with the result and can reuse the connection at once.
    let mut pending = http::head(200, headers, framing, keep_alive);
    for mut job in jobs {
        while let Some(output) = job.outputs.pop_front() {
            if job.cancel.as_mut().is_some_and(Cancel::fired) {
                break;
            }
            match output {
                Output::Send(message) => {
                    let event = format!("event: message\ndata: {message}\n\n");
                    if chunked {
                        pending.extend_from_slice(&http::chunk(event.as_bytes()));
                    } else {
                        pending.extend_from_slice(event.as_bytes());
                    }
                }
                Output::Sleep(delay) => {
                    if conn.write_all(&pending).await.is_err() {
                        return false;
                    }
                    pending.clear();
                    let cancel = job.cancel.as_mut().map(|c| &mut c.rx);
                    let waited = conn
                        .watch(async move {
                            let sleep = tokio::time::sleep(delay);
                            match cancel {
                                Some(rx) => tokio::select! {
                                    () = sleep => false,
                                    _ = rx => true,
                                },
                                None => {
                                    sleep.await;
                                    false
                                }
                            }
                        })
                        .await;
                    match waited {
                        Ok(false) => {}
                        // Cancelled: no more output for this request, and no result.
                        Ok(true) => break,
                        // The client left: nobody will read the rest.
                        Err(http::PeerGone) => return false,
                    }
                }
            }
        }
    }
    if chunked {
        pending.extend_from_slice(&http::chunk(b""));
    }
    // Without chunking the body ends with the connection.
    conn.write_all(&pending).await.is_ok() && chunked
}

impl Shared {
    fn handle(&self, request: &Request) -> Reply {
        if let Some(refusal) = check_host_and_origin(request) {
            return Reply::Full(refusal);
        }
        match request.path.as_str() {
            MCP_PATH => {}
            METADATA_PATH if self.config.token.is_some() => {
                return Reply::Full(match request.method.as_str() {
                    "GET" | "HEAD" => self.resource_metadata(),
                    _ => Response::text(405, "Method Not Allowed")
                        .with_header("Allow", "GET, HEAD".to_owned()),
                });
            }
            _ => return Reply::Full(Response::text(404, "Not Found")),
        }
        if let Some(refusal) = self.check_token(request) {
            return Reply::Full(refusal);
        }
        match request.method.as_str() {
            "POST" => self.post(request),
            "DELETE" => Reply::Full(self.delete(request)),
            // No standalone server-to-client stream: the spec lets a server answer GET with 405.
            _ => Reply::Full(
                error_response(405, SERVER_ERROR, "Method not allowed")
                    .with_header("Allow", "POST, DELETE".to_owned()),
            ),
        }
    }

    fn post(&self, request: &Request) -> Reply {
        if !accepts_json_and_sse(request) {
            return Reply::Full(error_response(
                406,
                SERVER_ERROR,
                "Not Acceptable: Client must accept both application/json and text/event-stream",
            ));
        }
        let is_json = request
            .header("content-type")
            .is_some_and(|v| media_type(v).eq_ignore_ascii_case("application/json"));
        if !is_json {
            return Reply::Full(error_response(
                415,
                SERVER_ERROR,
                "Unsupported Media Type: Content-Type must be application/json",
            ));
        }
        let (messages, batch) = match jsonrpc::decode(&request.body) {
            Ok(Packet::Single(message)) => (vec![message], false),
            Ok(Packet::Batch(messages)) => (messages, true),
            Err(e) => {
                let what = if e.code() == jsonrpc::PARSE_ERROR {
                    "Parse error"
                } else {
                    "Invalid Request"
                };
                return Reply::Full(error_response(400, e.code(), &format!("{what}: {e}")));
            }
        };
        let is_initialize =
            |m: &Message<'_>| matches!(m, Message::Request(r) if r.method == "initialize");
        if messages.iter().any(is_initialize) {
            if batch {
                return Reply::Full(error_response(
                    400,
                    jsonrpc::INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a JSON-RPC batch",
                ));
            }
            return match messages.into_iter().next() {
                Some(Message::Request(r)) => Reply::Full(self.initialize(&r)),
                _ => Reply::Full(error_response(
                    400,
                    jsonrpc::INVALID_REQUEST,
                    "Invalid Request",
                )),
            };
        }
        let session = match self.session_for(request) {
            Ok(session) => session,
            Err(refusal) => return Reply::Full(refusal),
        };
        if let Some(version) = request.header("mcp-protocol-version")
            && !ProtocolVersion::parse(version).is_some_and(ProtocolVersion::is_supported)
        {
            return Reply::Full(error_response(
                400,
                SERVER_ERROR,
                &format!(
                    "Bad Request: Unsupported protocol version: {version} (supported \
                     versions: 2025-11-25, 2025-06-18, 2025-03-26)"
                ),
            ));
        }
        if batch && !session.version.allows_batching() {
            return Reply::Full(error_response(
                400,
                jsonrpc::INVALID_REQUEST,
                &format!(
                    "Invalid Request: JSON-RPC batches are not part of protocol version {}",
                    session.version.as_str()
                ),
            ));
        }
        let session_header = ("Mcp-Session-Id", session.id.clone());
        let mut jobs = Vec::new();
        let mut streaming = batch;
        for message in messages {
            match message {
                Message::Request(r) => {
                    streaming |= r.method == "tools/call";
                    jobs.push(self.request(&session, r));
                }
                Message::Notification(n) => notification(&session, &n),
                // This server sends no requests, so any response answers nothing.
                Message::Response(_) => {}
            }
        }
        if jobs.is_empty() {
            return Reply::Full(Response {
                status: 202,
                headers: vec![session_header],
                body: Vec::new(),
            });
        }
        if !streaming {
            let body = jobs
                .pop()
                .and_then(|mut job| job.outputs.pop_back())
                .and_then(|output| match output {
                    Output::Send(message) => Some(message),
                    Output::Sleep(_) => None,
                })
                .unwrap_or_default();
            return Reply::Full(
                Response::json(200, body).with_header(session_header.0, session_header.1),
            );
        }
        Reply::Stream {
            headers: vec![
                ("Content-Type", "text/event-stream".to_owned()),
                ("Cache-Control", "no-cache".to_owned()),
                session_header,
            ],
            jobs,
        }
    }

    fn initialize(&self, request: &jsonrpc::Request<'_>) -> Response {
        let version = match negotiate(request) {
            Ok(version) => version,
            Err(message) => return Response::json(200, message.encode()),
        };
        let session = match self.open_session(version) {
            Ok(session) => session,
            Err(refusal) => return refusal,
        };
        Response::json(200, respond(&request.id, &initialize_result(version)))
            .with_header("Mcp-Session-Id", session.id.clone())
    }

    /// Creates and registers a session, dropping long-idle ones when the table is full.
    fn open_session(&self, version: ProtocolVersion) -> Result<Arc<Session>, Response> {
        let now_ms = self.now_ms();
        let mut sessions = lock(&self.sessions);
        if sessions.len() >= self.config.max_sessions {
            let idle_ms = self.config.session_idle.as_millis() as u64;
            sessions.retain(|_, s| {
                now_ms.saturating_sub(s.last_used_ms.load(Ordering::Relaxed)) < idle_ms
                    || !lock(&s.in_flight).is_empty()
            });
            if sessions.len() >= self.config.max_sessions {
                return Err(error_response(
                    503,
                    SERVER_ERROR,
                    "Too many sessions; try again later",
                ));
            }
        }
        let id = loop {
            let id = self.new_session_id();
            if !sessions.contains_key(&id) {
                break id;
            }
        };
        let session = Arc::new(Session {
            id: id.clone(),
            version,
            in_flight: Mutex::new(HashMap::new()),
            last_used_ms: AtomicU64::new(now_ms),
        });
        sessions.insert(id, session.clone());
        self.sessions_opened.fetch_add(1, Ordering::Relaxed);
        Ok(session)
    }

    /// 32 hex digits from std's randomly keyed SipHash over the time, a counter and this
    /// server's address: unguessable enough for a loopback demo, though not a CSPRNG.
    fn new_session_id(&self) -> String {
        let nanos = since_epoch().map_or(0, |d| d.as_nanos());
        let count = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut id = String::with_capacity(32);
        for half in 0..2u8 {
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_u128(nanos);
            hasher.write_u64(count);
            hasher.write_u8(half);
            hasher.write_u16(self.addr.port());
            hasher.write_usize(std::ptr::from_ref(self).addr());
            id.push_str(&format!("{:016x}", hasher.finish()));
        }
        id
    }

    fn now_ms(&self) -> u64 {
        now().duration_since(self.started).as_millis() as u64
    }

    /// The session a request names: 400 without an id, 404 for an unknown one.
    fn session_for(&self, request: &Request) -> Result<Arc<Session>, Response> {
        let Some(id) = request.header("mcp-session-id") else {
            return Err(error_response(
                400,
                SERVER_ERROR,
                "Bad Request: Missing session ID",
            ));
        };
        let session = lock(&self.sessions).get(id).cloned();
        match session {
            Some(session) => {
                session.last_used_ms.store(self.now_ms(), Ordering::Relaxed);
                Ok(session)
            }
            None => Err(error_response(
                404,
                jsonrpc::INVALID_REQUEST,
                "Session not found",
            )),
        }
    }

    fn delete(&self, request: &Request) -> Response {
        let Some(id) = request.header("mcp-session-id") else {
            return error_response(400, SERVER_ERROR, "Bad Request: Missing session ID");
        };
        let removed = lock(&self.sessions).remove(id);
        match removed {
            Some(session) => {
                // Dropping the senders cancels every call still running in the session.
                lock(&session.in_flight).clear();
                self.sessions_deleted.fetch_add(1, Ordering::Relaxed);
                Response {
                    status: 200,
                    headers: Vec::new(),
                    body: Vec::new(),
                }
            }
            None => error_response(404, jsonrpc::INVALID_REQUEST, "Session not found"),
        }
    }

    /// Answers one request (not `initialize`).
    fn request(&self, session: &Arc<Session>, request: jsonrpc::Request<'_>) -> Job {
        let id = request.id.clone();
        let params = match params_object(&request) {
            Ok(params) => params,
            Err(why) => return Job::message(&invalid_params(id, &why)),
        };
        match request.method.as_ref() {
            "ping" => Job::message(&ok(id, &json!({}))),
            "tools/list" => Job::message(&tools_list(id, &params)),
            "tools/call" => self.tools_call(session, id, &params),
            "initialize" => Job::message(&Message::response_error(
                Some(id),
                ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    "Invalid Request: already initialized",
                ),
            )),
            method => {
                let mut error = ErrorObject::new(jsonrpc::METHOD_NOT_FOUND, "Method not found");
                if let Ok(data) = serde_json::value::to_raw_value(method) {
                    error = error.with_data(data);
                }
                Job::message(&Message::response_error(Some(id), error))
            }
        }
    }

    fn tools_call(&self, session: &Arc<Session>, id: Id, params: &Map<String, Value>) -> Job {
        let outputs = match call_outputs(&id, params) {
            Ok(outputs) => outputs,
            Err(refusal) => return Job::message(&refusal),
        };
        let (tx, rx) = oneshot::channel();
        let key = self.counter.fetch_add(1, Ordering::Relaxed);
        {
            let mut in_flight = lock(&session.in_flight);
            if in_flight.contains_key(&id) {
                let error = ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("Invalid Request: request id {id} is already in use"),
                );
                return Job::message(&Message::response_error(Some(id), error));
            }
            in_flight.insert(id.clone(), (key, tx));
        }
        Job {
            outputs,
            cancel: Some(Cancel {
                rx,
                session: session.clone(),
                id,
                key,
            }),
        }
    }

    fn check_token(&self, request: &Request) -> Option<Response> {
        let expected = self.config.token.as_ref()?;
        let credentials = request.header("authorization").and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
        let challenge = match credentials {
            Some(given) if constant_time_eq(given.as_bytes(), expected.as_bytes()) => return None,
            Some(_) => format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"http://{}{METADATA_PATH}\"",
                self.addr
            ),
            None => format!(
                "Bearer resource_metadata=\"http://{}{METADATA_PATH}\"",
                self.addr
            ),
        };
        let body = json!({
            "error": "invalid_token",
            "error_description": if credentials.is_some() { "The bearer token is not valid" } else { "A bearer token is required" },
        });
        Some(Response::json(401, body.to_string()).with_header("WWW-Authenticate", challenge))
    }

    /// Protected-resource metadata (RFC 9728 §2). There is no authorization server: the
    /// token is handed out of band.
    fn resource_metadata(&self) -> Response {
        let body = json!({
            "resource": format!("http://{}{MCP_PATH}", self.addr),
            "resource_name": "mcpwire demo server",
            "bearer_methods_supported": ["header"],
        });
        Response::json(200, body.to_string())
    }
}

/// The revision an `initialize` request gets: the one it offers when supported, else the
/// latest; the error response when it offers none.
fn negotiate(request: &jsonrpc::Request<'_>) -> Result<ProtocolVersion, Message<'static>> {
    let offered = params_object(request).ok().and_then(|p| {
        p.get("protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let Some(offered) = offered else {
        let error = ErrorObject::new(
            jsonrpc::INVALID_PARAMS,
            "Invalid params: initialize needs a protocolVersion string",
        );
        return Err(Message::response_error(Some(request.id.clone()), error));
    };
    Ok(ProtocolVersion::parse(&offered)
        .filter(|v| v.is_supported())
        .unwrap_or(ProtocolVersion::LATEST_INITIALIZE))
}

/// The `initialize` result at `version`.
fn initialize_result(version: ProtocolVersion) -> Value {
    json!({
        "protocolVersion": version.as_str(),
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "mcpwire-demo", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "A demo server bundled with mcpwire. Tools: progress_report, \
            tiny_image, weather, echo, fail.",
    })
}

/// What a `tools/call` sends: a progress notification per step when the request has a
/// progress token, the delays between them, then the result; or the error response for params
/// that do not fit.
fn call_outputs(
    id: &Id,
    params: &Map<String, Value>,
) -> Result<VecDeque<Output>, Message<'static>> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(invalid_params(id.clone(), "name must be a string"));
    };
    let empty = Map::new();
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(arguments)) => arguments,
        Some(_) => return Err(invalid_params(id.clone(), "arguments must be an object")),
    };
    let token = match params.get("_meta").and_then(|m| m.get("progressToken")) {
        None => None,
        Some(Value::String(s)) => Some(json!(s)),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(json!(n)),
        Some(_) => {
            return Err(invalid_params(
                id.clone(),
                "_meta.progressToken must be a string or an integer",
            ));
        }
    };
    let plan = tools::call(name, arguments);
    let mut outputs = VecDeque::with_capacity(plan.steps.len() + 1);
    for step in plan.steps {
        match step {
            tools::Step::Sleep(delay) => outputs.push_back(Output::Sleep(delay)),
            tools::Step::Progress {
                progress,
                total,
                message,
            } => {
                if let Some(token) = &token {
                    let params = json!({
                        "progressToken": token,
                        "progress": progress,
                        "total": total,
                        "message": message,
                    });
                    if let Ok(params) = serde_json::value::to_raw_value(&params) {
                        let notification =
                            Message::notification("notifications/progress", Some(params));
                        outputs.push_back(Output::Send(notification.encode()));
                    }
                }
            }
        }
    }
    outputs.push_back(Output::Send(respond(id, &plan.result)));
    Ok(outputs)
}

/// The request id a `notifications/cancelled` names, if it names one.
fn cancelled_request(notification: &jsonrpc::Notification<'_>) -> Option<Id> {
    if notification.method != "notifications/cancelled" {
        return None;
    }
    let params = notification
        .params
        .as_ref()
        .and_then(|p| serde_json::from_str::<Value>(p.get()).ok());
    match params.as_ref().and_then(|p| p.get("requestId")) {
        Some(Value::String(s)) => Some(Id::String(s.clone())),
        Some(Value::Number(n)) => n.as_i64().map(Id::Number),
        _ => None,
    }
}

/// Handles a notification; unknown ones are ignored (JSON-RPC notifications get no answer).
fn notification(session: &Session, notification: &jsonrpc::Notification<'_>) {
    let Some(id) = cancelled_request(notification) else {
        return;
    };
    let entry = lock(&session.in_flight).remove(&id);
    if let Some((_, cancel)) = entry {
        let _ = cancel.send(());
    }
}

fn tools_list(id: Id, params: &Map<String, Value>) -> Message<'static> {
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => match tools::offset_of(cursor) {
            Some(offset) => offset,
            None => return invalid_params(id, "unknown cursor"),
        },
        Some(_) => return invalid_params(id, "cursor must be a string"),
    };
    let all = tools::definitions();
    let end = (offset + tools::PAGE_SIZE).min(all.len());
    let mut result = json!({"tools": &all[offset..end]});
    if end < all.len() {
        result["nextCursor"] = json!(tools::cursor_for(end));
    }
    ok(id, &result)
}

/// A request's params as an object (absent params are an empty one).
fn params_object(request: &jsonrpc::Request<'_>) -> Result<Map<String, Value>, String> {
    let Some(raw) = &request.params else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(params)) => Ok(params),
        Ok(_) => Err("params must be an object".to_owned()),
        Err(e) => Err(format!("params are not valid JSON: {e}")),
    }
}

fn ok(id: Id, result: &Value) -> Message<'static> {
    match serde_json::value::to_raw_value(result) {
        Ok(raw) => Message::response_ok(id, raw),
        Err(e) => Message::response_error(
            Some(id),
            ErrorObject::new(jsonrpc::INTERNAL_ERROR, format!("Internal error: {e}")),
        ),
    }
}

fn respond(id: &Id, result: &Value) -> String {
    ok(id.clone(), result).encode()
}

fn invalid_params(id: Id, why: &str) -> Message<'static> {
    Message::response_error(
        Some(id),
        ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("Invalid params: {why}")),
    )
}

/// An HTTP error whose body is a JSON-RPC error response with a null id.
fn error_response(status: u16, code: i64, message: &str) -> Response {
    let body = Message::response_error(None, ErrorObject::new(code, message)).encode();
    Response::json(status, body)
}

/// A header value's media type, without parameters.
fn media_type(value: &str) -> &str {
    value.split(';').next().unwrap_or_default().trim()
}

/// Whether `Accept` lists both reply types literally, as the transport requires of clients.
fn accepts_json_and_sse(request: &Request) -> bool {
    let mut json = false;
    let mut sse = false;
    for range in request.headers_named("accept").flat_map(|v| v.split(',')) {
        let range = media_type(range);
        json |= range.eq_ignore_ascii_case("application/json");
        sse |= range.eq_ignore_ascii_case("text/event-stream");
    }
    json && sse
}

/// 400 without `Host` (RFC 9112 §3.2); 403 unless `Host` and any `Origin` are loopback names.
fn check_host_and_origin(request: &Request) -> Option<Response> {
    let Some(host) = request.header("host") else {
        return Some(Response::text(400, "Bad Request: missing Host header"));
    };
    if !is_loopback_authority(host) {
        return Some(Response::text(
            403,
            "Forbidden: the Host must be a loopback address",
        ));
    }
    if let Some(origin) = request.header("origin") {
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if !authority.is_some_and(is_loopback_authority) {
            return Some(Response::text(
                403,
                "Forbidden: the Origin must be a loopback address",
            ));
        }
    }
    None
}

/// Whether `host[:port]` names this machine.
fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    ["127.0.0.1", "localhost", "::1"]
        .iter()
        .any(|name| host.eq_ignore_ascii_case(name))
}

/// Compares secrets in time that depends on their lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The server's monotonic clock (tokio's, so paused-time tests control it).
#[allow(
    clippy::disallowed_methods,
    reason = "the demo server is a driver: it owns the clock"
)]
fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// The server's wall clock: the time since the Unix epoch, `None` before it.
#[allow(
    clippy::disallowed_methods,
    reason = "the demo server is a driver: it owns the clock"
)]
fn since_epoch() -> Option<Duration> {
    SystemTime::now().duration_since(UNIX_EPOCH).ok()
}

/// The current time as an HTTP-date (RFC 9110 §5.6.7), for the `Date` header.
fn http_date_now() -> String {
    let secs = since_epoch().map_or(0, |d| d.as_secs());
    http_date(secs)
}

/// Formats seconds since the Unix epoch as `Sun, 06 Nov 1994 08:49:37 GMT`.
fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Fewer than 2^48 days: the cast is exact.
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
    )
}
