//! An embedded loopback MCP server for the one-command demo, tests, benchmarks and examples:
//! Streamable HTTP on `127.0.0.1` only, and the same tools over stdio ([`serve_stdio`], what
//! `mcpwire demo-server --stdio` runs). It is dual-era by default, as the official SDKs'
//! servers are: protocol 2026-07-28 for a request carrying the per-request `_meta` envelope,
//! and 2025-11-25 (also 2025-06-18 and 2025-03-26) with `initialize` and sessions for the rest.
//! [`Era`] picks one era alone ([`DemoServer::start_with_options`], [`serve_stdio`]).
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
//! Nine tools, each with a JSON Schema `inputSchema` (`progress_burst` and `big_text` are for
//! benchmarks):
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
//! | `region_echo` | `region` (mirrored into `Mcp-Param-Region` by its `x-mcp-header`) | `structuredContent` `{region, header}`: the header as received, before decoding (`null` over stdio and at 2025) |
//! | `confirm_delete` | `item` | at 2026-07-28 an `input_required` result asking, through `elicitation/create`, to confirm, with a signed `requestState`; the retry carrying the answer and the state says "Deleted ITEM" (or "Kept ITEM: ..." when declined); at 2025 an `isError` result |
//!
//! `tools/list` pages hold two tools, linked by opaque cursors. An unknown tool or invalid
//! arguments give an `isError` result, as the official SDKs do.
//!
//! # Wire behaviour at 2026-07-28
//!
//! Section names refer to the spec's `2026-07-28/basic/transports/streamable-http.mdx`.
//!
//! * A POST whose message's `params._meta` names `io.modelcontextprotocol/protocolVersion`
//!   (or whose `MCP-Protocol-Version` header names 2026-07-28) is served statelessly: no
//!   session id is read or sent. `Accept` and `Content-Type` are checked as at 2025.
//! * The envelope must hold `protocolVersion` (a string) and `clientCapabilities` (an
//!   object): else 400 with -32602 and `data.envelope.missing`. A revision other than
//!   2026-07-28 gets 400 with -32022 and `data {supported, requested}`.
//! * "Server Validation": `MCP-Protocol-Version` must equal the envelope's version,
//!   `Mcp-Method` the body's method (byte for byte), `Mcp-Name` the `tools/call`'s tool name,
//!   and each `Mcp-Param-{Name}` of an `x-mcp-header` argument the argument (after decoding
//!   the `=?base64?...?=` form; none may come without its argument). A header missing, sent
//!   twice, holding bytes outside visible ASCII, space and tab, or disagreeing with the body
//!   gets 400 with -32020 `HeaderMismatch`, whose message names the header.
//! * `server/discover` answers `supportedVersions: ["2026-07-28"]`, the capabilities, the
//!   instructions and the cache hints (`ttlMs` 60000; `cacheScope` public, or private behind
//!   a token). Every result carries `resultType` and `_meta["io.modelcontextprotocol/serverInfo"]`.
//!   `tools/list` is JSON; `tools/call` an event stream (progress on it with a
//!   `progressToken`, then the result); closing the connection cancels the call.
//! * `confirm_delete` asks only a client that declared form elicitation; any other gets 400
//!   with -32021 and `data.requiredCapabilities`. A `requestState` that fails verification
//!   (changed, for another item, older than 10 minutes) gets -32602.
//! * `ping`, `initialize`, `logging/setLevel`, `subscriptions/listen` and unknown methods get
//!   404 with a JSON-RPC -32601 body ("Protocol Version Header"). Notifications get 202;
//!   batches and responses 400 with -32600.
//!
//! # Wire behaviour at 2025
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
//!   the result, then the stream ends. Unknown methods get -32601, `server/discover` among
//!   them: 2025 has no such method.
//! * `notifications/cancelled` for a call in flight stops it: no result is sent and its
//!   stream ends. A client that closes the connection during a call stops it too (there is
//!   no event store, so nobody could resume the stream).
//! * Batches (arrays) are accepted on 2025-03-26 sessions only, which is the one revision
//!   that has them; they are answered with one event stream.
//! * `DELETE /mcp` ends the session (200), stopping its calls; `GET /mcp` is 405: there is
//!   no standalone stream.
//!
//! # Eras
//!
//! [`Era::Both`] (the default) serves both as above. [`Era::Legacy`] ignores the envelope,
//! as a server written before 2026-07-28 does: the probe `server/discover` is refused like
//! any request outside a session (400, -32000), so a dual-era client falls back to
//! `initialize`. [`Era::Modern`] answers every 2025 request (an `initialize`, anything
//! without the envelope) with 400 and -32022 naming 2026-07-28 and the revision the request
//! named, if any (`2026-07-28/basic/versioning.mdx`), and `GET` and `DELETE` with 405.
//!
//! # Both eras
//!
//! * The `Host` and any `Origin` must be loopback names (127.0.0.1, localhost, \[::1\]), else
//!   403: a guard against DNS rebinding ("Security Warning").
//! * With a [`DemoOptions::token`], requests to `/mcp` need `Authorization: Bearer
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
mod modern;
mod stdio;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_modern;
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
use self::tools::StateKey;
use crate::jsonrpc::{self, ErrorObject, Id, Message, Packet};
use crate::mcp::ProtocolVersion;

/// The endpoint's path.
const MCP_PATH: &str = "/mcp";
/// Where the protected-resource metadata lives (RFC 9728 §3.1: the well-known prefix, then
/// the resource's path).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// JSON-RPC code for transport-level refusals, as the official SDKs use it.
const SERVER_ERROR: i64 = -32000;

/// The protocol eras a demo server speaks (`2026-07-28/basic/versioning.mdx`, "Backward
/// Compatibility with Initialization-Based Versions").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// Dual-era, as the official SDKs' servers are (the default): a request whose `_meta`
    /// names a protocol version is served at 2026-07-28, statelessly; anything else by the
    /// 2025 rules (`initialize`, sessions).
    #[default]
    Both,
    /// 2025 only, as a server written before 2026-07-28: the envelope means nothing, so
    /// `server/discover` is refused like any request outside a session (or, in one, as an
    /// unknown method), and a dual-era client falls back to `initialize`.
    Legacy,
    /// 2026-07-28 only: a 2025 request (`initialize`, or anything without the envelope) gets
    /// -32022 naming the revision served, and `GET` and `DELETE` get 405.
    Modern,
}

impl Era {
    /// The name `mcpwire demo-server --era` takes (and `Display` writes): `both`, `2025` or
    /// `2026`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Era::Both => "both",
            Era::Legacy => "2025",
            Era::Modern => "2026",
        }
    }

    /// The era named `both`, `2025` or `2026` (as its `Display` writes them).
    pub fn parse(name: &str) -> Option<Era> {
        [Era::Both, Era::Legacy, Era::Modern]
            .into_iter()
            .find(|era| era.as_str() == name)
    }

    fn serves_modern(self) -> bool {
        self != Era::Legacy
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to start a [`DemoServer`].
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct DemoOptions {
    /// With `Some(token)`, every request to the endpoint must carry `Authorization: Bearer
    /// <token>`.
    pub token: Option<String>,
    /// The eras served.
    pub era: Era,
}

impl std::fmt::Debug for DemoOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("era", &self.era)
            .finish()
    }
}

/// Counters of what a [`DemoServer`] has done since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DemoStats {
    /// Sessions created by `initialize`.
    pub sessions_opened: u64,
    /// Sessions ended by `DELETE`.
    pub sessions_deleted: u64,
    /// HTTP requests read (every method and path, answered or refused).
    pub requests: u64,
    /// POSTs served by the 2026-07-28 rules (answered or refused).
    pub modern_requests: u64,
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
            .field("era", &self.shared.config.era)
            .field("stats", &self.stats())
            .finish()
    }
}

impl DemoServer {
    /// Starts a dual-era server on `127.0.0.1` at a free port, without authentication. Must
    /// be called within a tokio runtime, which then runs the server.
    pub async fn start() -> std::io::Result<DemoServer> {
        DemoServer::start_with_options(DemoOptions::default()).await
    }

    /// Starts a server on `127.0.0.1` at a free port, as `options` say.
    pub async fn start_with_options(options: DemoOptions) -> std::io::Result<DemoServer> {
        DemoServer::start_with(Config {
            token: options.token,
            era: options.era,
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
            modern_requests: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            counter: AtomicU64::new(0),
            started: now(),
            state_key: StateKey::new(),
            traces: Mutex::new(Vec::new()),
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

    /// The eras the server speaks.
    #[cfg(test)]
    pub(crate) fn era(&self) -> Era {
        self.shared.config.era
    }

    /// The method and `_meta.traceparent` of each request received over HTTP with one (SEP-414
    /// trace context), oldest first: the first 256. The server only records it, as a server
    /// that joins the caller's trace would read it.
    pub fn trace_contexts(&self) -> Vec<(String, String)> {
        self.shared
            .traces
            .lock()
            .map(|traces| traces.clone())
            .unwrap_or_default()
    }

    /// What the server has done so far.
    pub fn stats(&self) -> DemoStats {
        let shared = &self.shared;
        DemoStats {
            sessions_opened: shared.sessions_opened.load(Ordering::Relaxed),
            sessions_deleted: shared.sessions_deleted.load(Ordering::Relaxed),
            requests: shared.requests.load(Ordering::Relaxed),
            modern_requests: shared.modern_requests.load(Ordering::Relaxed),
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
    era: Era,
    limits: Limits,
    max_connections: usize,
    max_sessions: usize,
    session_idle: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            token: None,
            era: Era::default(),
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
    modern_requests: AtomicU64,
    connections: AtomicU64,
    /// Feeds session ids and in-flight keys.
    counter: AtomicU64,
    started: tokio::time::Instant,
    /// Signs the `requestState`s of `confirm_delete`.
    state_key: StateKey,
    /// The W3C trace context requests carried ([`DemoServer::trace_contexts`]).
    traces: Mutex<Vec<(String, String)>>,
}

/// The most trace contexts a [`DemoServer`] remembers.
const MAX_TRACES: usize = 256;

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
            // 2026-07-28 alone has no sessions to end (streamable-http.mdx, "Earlier Streamable
            // HTTP Revisions": GET and DELETE get 405).
            "DELETE" if self.config.era != Era::Modern => Reply::Full(self.delete(request)),
            // No standalone server-to-client stream: the spec lets a server answer GET with 405.
            _ => Reply::Full(
                error_response(405, SERVER_ERROR, "Method not allowed").with_header(
                    "Allow",
                    match self.config.era {
                        Era::Modern => "POST",
                        _ => "POST, DELETE",
                    }
                    .to_owned(),
                ),
            ),
        }
    }

    /// Remembers the `_meta.traceparent` of the requests among `messages`.
    fn record_traces(&self, messages: &[Message<'_>]) {
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            traceparent: Option<String>,
        }
        let Ok(mut traces) = self.traces.lock() else {
            return;
        };
        for message in messages {
            let Message::Request(request) = message else {
                continue;
            };
            let traceparent = request
                .params
                .as_ref()
                .and_then(|params| serde_json::from_str::<Params>(params.get()).ok())
                .and_then(|params| params.meta?.traceparent);
            if let Some(traceparent) = traceparent
                && traces.len() < MAX_TRACES
            {
                traces.push((request.method.to_string(), traceparent));
            }
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
        self.record_traces(&messages);
        match self.route(request, &messages) {
            Route::Modern => {
                self.modern_requests.fetch_add(1, Ordering::Relaxed);
                return self.modern_post(request, messages, batch);
            }
            Route::Refuse => return Reply::Full(refuse_legacy(request, &messages)),
            Route::Legacy => {}
        }
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

    /// Which rules a POST's messages are served by: 2026-07-28 when one carries the envelope
    /// (or the `MCP-Protocol-Version` header names a 2026 revision, whose missing envelope is
    /// then refused), else 2025 unless this server speaks 2026-07-28 alone.
    fn route(&self, request: &Request, messages: &[Message<'_>]) -> Route {
        if !self.config.era.serves_modern() {
            return Route::Legacy;
        }
        let header_names_modern = request
            .header("mcp-protocol-version")
            .and_then(ProtocolVersion::parse)
            .is_some_and(ProtocolVersion::is_modern);
        let envelope = messages.iter().any(|message| match message {
            Message::Request(r) => modern::carries_envelope(r.params.as_deref()),
            Message::Notification(n) => modern::carries_envelope(n.params.as_deref()),
            Message::Response(_) => false,
        });
        match (header_names_modern || envelope, self.config.era) {
            (true, _) => Route::Modern,
            (false, Era::Modern) => Route::Refuse,
            (false, _) => Route::Legacy,
        }
    }

    /// Serves a POST by the 2026-07-28 rules: one message per POST, no session, a request
    /// answered on its own response (`basic/transports/streamable-http.mdx`).
    fn modern_post(&self, request: &Request, mut messages: Vec<Message<'_>>, batch: bool) -> Reply {
        if batch || messages.len() != 1 {
            return Reply::Full(error_response(
                400,
                jsonrpc::INVALID_REQUEST,
                "Invalid Request: JSON-RPC batches are not part of protocol 2026-07-28",
            ));
        }
        let request_message = match messages.pop() {
            Some(Message::Request(r)) => r,
            // The revision defines no client notification over HTTP; accepting one is allowed.
            Some(Message::Notification(_)) => {
                return Reply::Full(Response {
                    status: 202,
                    headers: Vec::new(),
                    body: Vec::new(),
                });
            }
            _ => {
                return Reply::Full(error_response(
                    400,
                    jsonrpc::INVALID_REQUEST,
                    "Invalid Request: at protocol 2026-07-28 a client sends no responses",
                ));
            }
        };
        let server = modern::Server {
            state_key: &self.state_key,
            now_ms: self.now_ms(),
            private: self.config.token.is_some(),
        };
        let answer = modern::answer(&request_message, Some(request), &server);
        match answer.reply {
            modern::Reply::Message(message) => {
                Reply::Full(Response::json(answer.status, message.encode()))
            }
            modern::Reply::Call(outputs) => Reply::Stream {
                headers: vec![
                    ("Content-Type", "text/event-stream".to_owned()),
                    ("Cache-Control", "no-cache".to_owned()),
                    ("X-Accel-Buffering", "no".to_owned()),
                ],
                // Cancelling is closing the connection, which the stream notices.
                jobs: vec![Job {
                    outputs,
                    cancel: None,
                }],
            },
        }
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
            // `server/discover` among them: 2025 has no such method, and the 2026-07-28 probe,
            // which carries the envelope, never gets here unless this server speaks 2025 alone.
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
        let context = tools::Context {
            modern: false,
            region_header: None,
            params,
            state_key: &self.state_key,
            now_ms: self.now_ms(),
        };
        let outputs = match call_outputs(&id, params, &context) {
            Ok(outputs) => outputs,
            Err((_, refusal)) => return Job::message(&refusal),
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

/// Where a POST's messages go.
enum Route {
    /// The 2025 rules: `initialize`, sessions.
    Legacy,
    /// The 2026-07-28 rules.
    Modern,
    /// Refused with -32022: a 2025 request to a server that speaks 2026-07-28 alone.
    Refuse,
}

/// The answer a server speaking 2026-07-28 alone gives a 2025 client: 400 with -32022 naming
/// the revision it speaks and the one the request named, if it named one (the `initialize`
/// offer, else `MCP-Protocol-Version`), as `basic/versioning.mdx` asks of such a server.
fn refuse_legacy(request: &Request, messages: &[Message<'_>]) -> Response {
    let header = request.header("mcp-protocol-version");
    let (id, requested) = match messages {
        [Message::Request(r)] => (
            Some(r.id.clone()),
            modern::offered_version(r).or(header.map(str::to_owned)),
        ),
        _ => (None, header.map(str::to_owned)),
    };
    let error = modern::unsupported_version(requested.as_deref());
    Response::json(400, Message::response_error(id, error).encode())
}

/// What the server says of itself, in `initialize` and `server/discover`.
const INSTRUCTIONS: &str = "A demo server bundled with mcpwire. Tools: progress_report, \
    tiny_image, weather, echo, fail, progress_burst, big_text, region_echo, confirm_delete.";

/// The server's `Implementation`.
fn server_info() -> Value {
    json!({"name": "mcpwire-demo", "version": env!("CARGO_PKG_VERSION")})
}

/// The `initialize` result at `version`.
fn initialize_result(version: ProtocolVersion) -> Value {
    json!({
        "protocolVersion": version.as_str(),
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

/// What a `tools/call` sends: a progress notification per step when the request has a
/// progress token, the delays between them, then the result (stamped as 2026-07-28 results
/// are, when `context` is modern); or the error response for params that do not fit, with its
/// HTTP status at 2026-07-28.
fn call_outputs(
    id: &Id,
    params: &Map<String, Value>,
    context: &tools::Context<'_>,
) -> Result<VecDeque<Output>, (u16, Message<'static>)> {
    let refuse = |why: &str| (200, invalid_params(id.clone(), why));
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(refuse("name must be a string"));
    };
    let empty = Map::new();
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(arguments)) => arguments,
        Some(_) => return Err(refuse("arguments must be an object")),
    };
    let token = match params.get("_meta").and_then(|m| m.get("progressToken")) {
        None => None,
        Some(Value::String(s)) => Some(json!(s)),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(json!(n)),
        Some(_) => {
            return Err(refuse("_meta.progressToken must be a string or an integer"));
        }
    };
    let plan = match tools::call(name, arguments, context) {
        Ok(plan) => plan,
        Err(tools::Refusal::InvalidParams(why)) => return Err(refuse(&why)),
        Err(tools::Refusal::MissingCapability(required)) => {
            let names: Vec<&str> = required
                .as_object()
                .map(|r| r.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let mut error = ErrorObject::new(
                crate::mcp::error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!(
                    "Missing required client capability: {} (tool {name} asks the user for \
                     input)",
                    names.join(", ")
                ),
            );
            if let Ok(data) =
                serde_json::value::to_raw_value(&json!({"requiredCapabilities": required}))
            {
                error = error.with_data(data);
            }
            return Err((400, Message::response_error(Some(id.clone()), error)));
        }
    };
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
    let result = match context.modern {
        true => modern::stamp(plan.result),
        false => plan.result,
    };
    outputs.push_back(Output::Send(respond(id, &result)));
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
    match tools_page(params) {
        Ok(page) => ok(id, &page),
        Err(why) => invalid_params(id, why),
    }
}

/// The `tools/list` page the params' cursor names, or why there is none.
fn tools_page(params: &Map<String, Value>) -> Result<Value, &'static str> {
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => tools::offset_of(cursor).ok_or("unknown cursor")?,
        Some(_) => return Err("cursor must be a string"),
    };
    let all = tools::definitions();
    let end = (offset + tools::PAGE_SIZE).min(all.len());
    let mut result = json!({"tools": &all[offset..end]});
    if end < all.len() {
        result["nextCursor"] = json!(tools::cursor_for(end));
    }
    Ok(result)
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
