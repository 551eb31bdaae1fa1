//! A scriptable in-process HTTP/1.1 server for fault tests: byte-level tricks real MCP servers
//! cannot be made to do (dropped streams, endless lines, drip-feeding, wrong statuses, redirects,
//! floods).
//!
//! # Model
//!
//! [`FaultServer::start`] binds `127.0.0.1:0` in the current tokio runtime. Every request is parsed
//! with `httparse` (at most [`MAX_HEADERS`] headers, a head of at most [`MAX_HEAD_BYTES`], a body
//! framed by `Content-Length` or `Transfer-Encoding: chunked` of at most [`MAX_BODY_BYTES`]),
//! recorded as a [`Recorded`], then handed to the test's synchronous handler, which returns the
//! [`Reply`] to send. The server does the timing: a reply is a status, headers and a [`Body`] whose
//! streaming forms are a list of [`Step`]s (bytes, delays, an abrupt close, a reset, a hang, a
//! flood).
//!
//! Connections are kept alive (several requests per connection, each recorded with the accept index
//! of its connection) unless the request says `Connection: close` (or is HTTP/1.0 without
//! `keep-alive`), the reply carries a `Connection: close` header, or the body form ends the
//! connection ([`Body::Raw`], [`Body::Verbatim`], [`Step::Drop`], [`Step::Reset`]).
//!
//! While a streamed body waits ([`Step::Delay`], [`Step::Hang`], the pauses of a [`Step::Repeat`])
//! the server reads the socket: bytes the client sends are kept for its next request, and
//! end-of-stream means the client has gone away (so a client that half-closes after its request
//! counts as gone). Writing to a client that has closed fails, which also ends the response.
//!
//! Malformed requests get `400`, too many headers or too large a head `431`, too large a body `413`;
//! each then closes the connection and none is recorded or shown to the handler.
//!
//! # Waiting and shutdown
//!
//! Nothing in this API sleeps to synchronise: [`FaultServer::wait_for_requests`],
//! [`FaultServer::wait_idle`] and [`Monitor::wait_stopped`] wait on notifications, each with a
//! deadline. Dropping the [`FaultServer`] stops it: the listener is closed and every connection
//! task is aborted (a [`Step::Hang`] or an endless [`Step::Repeat`] included); [`Monitor`], taken
//! before the drop, tells when that has happened. [`FaultServer::shutdown`] does the same and waits
//! for it.
//!
//! A handler that panics (for instance on a failed `assert!`) gets the client a `500`; the panic is
//! kept and re-raised when the server is dropped or shut down, so the test fails.
//!
//! ```ignore
//! let server = FaultServer::start(|req| match req.jsonrpc_method().as_deref() {
//!     Some("initialize") => Reply::json(200, serde_json::json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(), "result": {}})),
//!     _ => Reply::sse_steps(200, vec![Step::text("data: {\"jsonrpc\""), Step::Drop]),
//! })
//! .await;
//! let url = server.url("/mcp");
//! ```

#![allow(
    dead_code,
    reason = "test support: not every test binary module uses every helper"
)]

use std::fmt;
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// The most headers a request may have; more gets `431`.
pub const MAX_HEADERS: usize = 64;
/// The most bytes a request line plus headers may take; more gets `431`.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The largest request body accepted (after chunked decoding); larger gets `413`.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Chunked framing may add this much on top of [`MAX_BODY_BYTES`] before the request is refused.
const MAX_FRAMING_BYTES: usize = 1024 * 1024;
/// Bytes a client may send ahead (pipelining) while a response is being streamed; past this the
/// server stops reading until the response is done.
const MAX_BUFFERED_BYTES: usize = MAX_HEAD_BYTES + MAX_BODY_BYTES + MAX_FRAMING_BYTES;
/// [`Step::Repeat`] without an interval writes buffers of about this size.
const FLOOD_BUFFER_BYTES: usize = 256 * 1024;
/// How long a graceful close waits for the client to close its side after the server's FIN.
const LINGER: Duration = Duration::from_secs(1);
/// How long [`FaultServer::shutdown`] waits for the tasks to end.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// The handler a server was started with.
type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync + 'static;

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/// One request the server received, as the handler and the test see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The request method, e.g. `POST`.
    pub method: String,
    /// The request target as sent, query included, e.g. `/mcp?x=1`.
    pub path: String,
    /// The headers in the order received; names lower-cased, values as sent (lossy UTF-8).
    pub headers: Vec<(String, String)>,
    /// The body, with chunked transfer-encoding removed.
    pub body: Vec<u8>,
    /// The accept index (0-based) of the connection the request came on.
    pub connection: usize,
    /// The position (0-based) of this request among all requests the server received.
    pub index: usize,
}

impl Recorded {
    /// The value of the first header called `name` (compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The values of every header called `name` (compared case-insensitively), in order.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body parsed as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The `method` member of a JSON-RPC request or notification body (not of a batch).
    pub fn jsonrpc_method(&self) -> Option<String> {
        self.json()?.get("method")?.as_str().map(str::to_owned)
    }

    /// The `id` member of a JSON-RPC message body (not of a batch), `null` included.
    pub fn jsonrpc_id(&self) -> Option<serde_json::Value> {
        self.json()?.get("id").cloned()
    }

    /// The body as (lossy) UTF-8 text.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------------------------

/// What the server sends for one request.
///
/// The server adds a framing header only when the reply has none of that name: `Content-Length`
/// for [`Body::Full`] (not for an empty body with status 1xx, 204 or 304),
/// `Transfer-Encoding: chunked` for [`Body::Chunked`], `Connection: close` for [`Body::Raw`]. So a
/// test can lie (a `Content-Length` larger than the body, a chunked header over raw bytes) by
/// setting the header itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The status code; any number is sent as is, with a reason phrase for the usual ones.
    pub status: u16,
    /// Headers in the order to send them.
    pub headers: Vec<(String, String)>,
    /// The body and how it is framed and timed.
    pub body: Body,
}

/// How a reply's body is framed and timed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// Sent at once after the head, framed by `Content-Length`; the connection stays open.
    Full(Vec<u8>),
    /// `Transfer-Encoding: chunked`: the head is sent at once, then each [`Step::Bytes`] (and each
    /// write of a [`Step::Repeat`]) as one chunk, then the terminating `0\r\n\r\n` unless a
    /// [`Step::Drop`] or [`Step::Reset`] came first. Empty byte steps are skipped (an empty chunk
    /// would end the body). The connection stays open afterwards.
    Chunked(Vec<Step>),
    /// No framing: the head is sent at once, then the steps' bytes as they are, then the connection
    /// is closed (the body is delimited by the close). For a chunk cut short, set a
    /// `Transfer-Encoding: chunked` header and write the framing by hand here.
    Raw(Vec<Step>),
    /// The whole response, status line and headers included, is the steps' bytes; the reply's
    /// `status` and `headers` are ignored. The connection is closed afterwards. For malformed
    /// responses.
    Verbatim(Vec<Step>),
}

/// One step of a streamed body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write these bytes now (one chunk in [`Body::Chunked`]).
    Bytes(Vec<u8>),
    /// Wait this long before the next step (ends early if the client goes away).
    Delay(Duration),
    /// Close the TCP connection here, cleanly (FIN) but abruptly for HTTP: no terminating chunk,
    /// nothing more of the body. Steps after it are not run.
    Drop,
    /// Reset the TCP connection here (RST, by closing with a zero linger). Steps after it are not
    /// run.
    Reset,
    /// Keep the connection open without sending anything until the client goes away (its side
    /// reads end-of-stream or fails) or the server shuts down. Steps after it are not run.
    Hang,
    /// Write `bytes` over and over until `max_bytes` bytes in all have been written (the last copy
    /// cut short if need be; `u64::MAX` for no limit) or the client goes away, then go on with the
    /// next step. With `every` zero the copies are written back to back in large buffers (about
    /// 256 KiB, one chunk each in [`Body::Chunked`]), fast enough for floods of hundreds of MB;
    /// otherwise one copy is written, then the server waits `every`, and so on.
    Repeat {
        /// The bytes repeated.
        bytes: Vec<u8>,
        /// The pause between copies; zero for as fast as possible.
        every: Duration,
        /// The most bytes this step writes in all.
        max_bytes: u64,
    },
}

impl Step {
    /// A [`Step::Bytes`] from anything byte-like.
    pub fn bytes(bytes: impl AsRef<[u8]>) -> Step {
        Step::Bytes(bytes.as_ref().to_vec())
    }

    /// A [`Step::Bytes`] from text.
    pub fn text(text: &str) -> Step {
        Step::Bytes(text.as_bytes().to_vec())
    }

    /// A [`Step::Delay`] of `millis` milliseconds.
    pub fn delay_ms(millis: u64) -> Step {
        Step::Delay(Duration::from_millis(millis))
    }

    /// Drip-feed: each byte of `bytes` as its own step, with `every` between two bytes.
    pub fn drip(bytes: impl AsRef<[u8]>, every: Duration) -> Vec<Step> {
        let mut steps = Vec::new();
        for (i, byte) in bytes.as_ref().iter().enumerate() {
            if i > 0 {
                steps.push(Step::Delay(every));
            }
            steps.push(Step::Bytes(vec![*byte]));
        }
        steps
    }
}

impl Reply {
    /// A reply with this status, no headers and this body.
    pub fn new(status: u16, body: Body) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// A status with an empty `Content-Length` body (no `Content-Length` for 1xx, 204, 304).
    pub fn empty(status: u16) -> Reply {
        Reply::new(status, Body::Full(Vec::new()))
    }

    /// `application/json` with `value` serialised as the whole body.
    pub fn json(status: u16, value: serde_json::Value) -> Reply {
        let body = serde_json::to_vec(&value).expect("a JSON value serialises");
        Reply::new(status, Body::Full(body)).with_header("content-type", "application/json")
    }

    /// `text/plain` with this text as the whole body.
    pub fn text(status: u16, text: &str) -> Reply {
        Reply::new(status, Body::Full(text.as_bytes().to_vec()))
            .with_header("content-type", "text/plain; charset=utf-8")
    }

    /// `text/event-stream`, chunked, one chunk per event; each of `events` must be a complete event
    /// text, blank line included (e.g. `"event: message\ndata: {}\n\n"`). The body then ends.
    pub fn sse(status: u16, events: &[&str]) -> Reply {
        Reply::sse_steps(status, events.iter().map(|e| Step::text(e)).collect())
    }

    /// `text/event-stream`, chunked, with these steps.
    pub fn sse_steps(status: u16, steps: Vec<Step>) -> Reply {
        Reply::new(status, Body::Chunked(steps)).with_header("content-type", "text/event-stream")
    }

    /// A chunked body with these steps (no content type).
    pub fn chunked(status: u16, steps: Vec<Step>) -> Reply {
        Reply::new(status, Body::Chunked(steps))
    }

    /// An unframed body with these steps, delimited by closing the connection.
    pub fn raw(status: u16, steps: Vec<Step>) -> Reply {
        Reply::new(status, Body::Raw(steps))
    }

    /// A response written entirely by the steps, status line and headers included.
    pub fn verbatim(steps: Vec<Step>) -> Reply {
        Reply::new(0, Body::Verbatim(steps))
    }

    /// A redirect (`status` is typically 301, 302, 303, 307 or 308) to `location`, empty body.
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::empty(status).with_header("location", location)
    }

    /// Sets header `name` to `value`, replacing any header of that name (case-insensitively).
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds a header, keeping any others of the same name (for duplicate-header faults).
    pub fn add_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Removes every header called `name` (case-insensitively).
    pub fn without_header(mut self, name: &str) -> Reply {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    /// Adds `Connection: close`: the server closes the connection after this reply.
    pub fn closing(self) -> Reply {
        self.with_header("connection", "close")
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    fn says_close(&self) -> bool {
        self.headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("connection") && has_token(v, "close"))
    }
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// Which of the server's tasks are alive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Live {
    /// The accept task (which owns the listener) is running.
    listening: bool,
    /// Connection tasks running.
    connections: usize,
}

/// State shared by the server handle and its tasks.
struct Shared {
    handler: Box<Handler>,
    requests: Mutex<Vec<Recorded>>,
    /// The number of requests recorded so far.
    received: watch::Sender<usize>,
    accepted: AtomicUsize,
    /// Bytes written to clients, framing and heads included.
    written: AtomicU64,
    live: watch::Sender<Live>,
    /// Messages of handler (or server task) panics, re-raised on drop.
    panics: Mutex<Vec<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn record(&self, mut request: Recorded) -> Recorded {
        let mut requests = lock(&self.requests);
        request.index = requests.len();
        requests.push(request.clone());
        let count = requests.len();
        drop(requests);
        self.received.send_replace(count);
        request
    }

    fn reply_to(&self, request: &Recorded) -> Reply {
        match catch_unwind(AssertUnwindSafe(|| (self.handler)(request))) {
            Ok(reply) => reply,
            Err(payload) => {
                let message = format!(
                    "fault_server: handler panicked on request #{} ({} {}): {}",
                    request.index,
                    request.method,
                    request.path,
                    panic_message(payload.as_ref())
                );
                lock(&self.panics).push(message.clone());
                Reply::text(500, &message).closing()
            }
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

/// Marks a task alive in [`Shared::live`] until dropped (on return, or when the task is aborted).
struct TaskGuard {
    shared: Arc<Shared>,
    listener: bool,
}

impl TaskGuard {
    fn new(shared: &Arc<Shared>, listener: bool) -> TaskGuard {
        shared.live.send_modify(|live| {
            if listener {
                live.listening = true;
            } else {
                live.connections += 1;
            }
        });
        TaskGuard {
            shared: Arc::clone(shared),
            listener,
        }
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        let listener = self.listener;
        self.shared.live.send_modify(|live| {
            if listener {
                live.listening = false;
            } else {
                live.connections -= 1;
            }
        });
    }
}

/// What the accept task owns. Fields drop in order: the listener is closed, then the connection
/// tasks are aborted, then the task is marked ended.
struct AcceptLoop {
    listener: TcpListener,
    connections: JoinSet<()>,
    guard: TaskGuard,
}

/// A scriptable HTTP/1.1 server on `127.0.0.1`. Stops when dropped (see the module docs).
pub struct FaultServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
}

impl fmt::Debug for FaultServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultServer")
            .field("addr", &self.addr)
            .field("requests", &lock(&self.shared.requests).len())
            .field("live", &*self.shared.live.borrow())
            .finish()
    }
}

impl FaultServer {
    /// Starts on `127.0.0.1:0` in the current tokio runtime; `handler` decides each reply.
    ///
    /// # Panics
    /// Outside a tokio runtime, or if no port can be bound.
    pub async fn start<H>(handler: H) -> FaultServer
    where
        H: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("fault_server: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fault_server: local address");
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            requests: Mutex::new(Vec::new()),
            received: watch::Sender::new(0),
            accepted: AtomicUsize::new(0),
            written: AtomicU64::new(0),
            live: watch::Sender::new(Live::default()),
            panics: Mutex::new(Vec::new()),
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        let state = AcceptLoop {
            listener,
            connections: JoinSet::new(),
            guard: TaskGuard::new(&shared, true),
        };
        let accept = tokio::spawn(accept_loop(state, shutdown_rx));
        FaultServer {
            addr,
            shared,
            shutdown,
            accept: Some(accept),
        }
    }

    /// Starts a server that answers the `n`th request (counted over all connections) with
    /// `replies[n]`. A request past the end is a test failure (a handler panic: the client gets
    /// `500`, and dropping the server panics).
    pub async fn start_sequence(replies: Vec<Reply>) -> FaultServer {
        FaultServer::start(move |request| match replies.get(request.index) {
            Some(reply) => reply.clone(),
            None => panic!(
                "request #{} ({} {}) but only {} replies were scripted",
                request.index,
                request.method,
                request.path,
                replies.len()
            ),
        })
        .await
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` followed by `path` (which should start with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// Waits until at least `n` requests have been received, then returns them all.
    ///
    /// # Panics
    /// If fewer than `n` arrive within `timeout`, naming those that did.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Recorded> {
        match self.try_wait_for_requests(n, timeout).await {
            Ok(requests) => requests,
            Err(requests) => panic!(
                "fault_server: waited {timeout:?} for {n} requests, got {}: {:?}",
                requests.len(),
                requests
                    .iter()
                    .map(|r| format!("{} {} {:?}", r.method, r.path, r.jsonrpc_method()))
                    .collect::<Vec<_>>()
            ),
        }
    }

    /// Waits until at least `n` requests have been received: `Ok` with them all, or `Err` with
    /// those received when `timeout` ran out.
    pub async fn try_wait_for_requests(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<Recorded>, Vec<Recorded>> {
        let mut received = self.shared.received.subscribe();
        let reached = tokio::time::timeout(timeout, received.wait_for(|count| *count >= n)).await;
        let requests = self.requests();
        match reached {
            Ok(Ok(_)) => Ok(requests),
            _ => Err(requests),
        }
    }

    /// How many connections have been accepted so far.
    pub fn connections_accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// How many bytes the server has written to clients so far, over all connections (heads,
    /// bodies and chunk framing). A flood is written only as fast as the client reads it, so
    /// this bounds what a client took in: the bytes it read plus what the sockets buffer.
    pub fn bytes_written(&self) -> u64 {
        self.shared.written.load(Ordering::SeqCst)
    }

    /// How many connections are open now (their tasks still running).
    pub fn open_connections(&self) -> usize {
        self.shared.live.borrow().connections
    }

    /// Waits until no connection is open: every connection task has ended (clients gone, hangs
    /// over). A pooling HTTP client keeps idle keep-alive connections open: drop it first.
    ///
    /// # Panics
    /// If connections are still open after `timeout`.
    pub async fn wait_idle(&self, timeout: Duration) {
        let mut live = self.shared.live.subscribe();
        let idle = tokio::time::timeout(timeout, live.wait_for(|l| l.connections == 0)).await;
        if !matches!(idle, Ok(Ok(_))) {
            panic!(
                "fault_server: {} connection(s) still open after {timeout:?}",
                self.open_connections()
            );
        }
    }

    /// A handle that outlives the server and tells whether all its tasks have ended.
    pub fn monitor(&self) -> Monitor {
        Monitor {
            live: self.shared.live.subscribe(),
        }
    }

    /// Messages of the handler panics so far (each answered with `500`).
    pub fn handler_panics(&self) -> Vec<String> {
        lock(&self.shared.panics).clone()
    }

    /// Stops the server and waits (bounded) until the listener is closed and every connection task
    /// has ended.
    ///
    /// # Panics
    /// If the tasks have not ended within a few seconds, or if the handler panicked earlier.
    pub async fn shutdown(mut self) {
        let monitor = self.monitor();
        let _ = self.shutdown.send(true);
        if let Some(accept) = self.accept.take() {
            let abort = accept.abort_handle();
            if tokio::time::timeout(SHUTDOWN_WAIT, accept).await.is_err() {
                abort.abort();
            }
        }
        assert!(
            monitor.wait_stopped(SHUTDOWN_WAIT).await,
            "fault_server: tasks still running after shutdown"
        );
        // Drop re-raises handler panics.
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(accept) = self.accept.take() {
            // Dropping the accept task's state closes the listener and aborts every connection.
            accept.abort();
        }
        let panics = lock(&self.shared.panics).clone();
        if !panics.is_empty() && !std::thread::panicking() {
            panic!("{}", panics.join("\n"));
        }
    }
}

/// Watches a server's tasks; it stays usable after the server is dropped.
#[derive(Clone, Debug)]
pub struct Monitor {
    live: watch::Receiver<Live>,
}

impl Monitor {
    /// Whether the listener is closed and no connection task is left.
    pub fn is_stopped(&self) -> bool {
        let live = *self.live.borrow();
        !live.listening && live.connections == 0
    }

    /// How many connection tasks are running.
    pub fn open_connections(&self) -> usize {
        self.live.borrow().connections
    }

    /// Waits until [`Monitor::is_stopped`]; `false` if `timeout` ran out first.
    pub async fn wait_stopped(&self, timeout: Duration) -> bool {
        let mut live = self.live.clone();
        let stopped = |l: &Live| !l.listening && l.connections == 0;
        match tokio::time::timeout(timeout, live.wait_for(stopped)).await {
            Ok(Ok(_)) => true,
            // Every sender is gone: the guards ran, so the last value is final.
            Ok(Err(_)) => self.is_stopped(),
            Err(_) => false,
        }
    }
}

/// Resolves once shutdown is asked for, or the server handle is gone.
async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

async fn accept_loop(mut state: AcceptLoop, mut shutdown: watch::Receiver<bool>) {
    let shared = Arc::clone(&state.guard.shared);
    loop {
        tokio::select! {
            // Also ends when the server handle (the sender) is gone.
            () = stop_requested(&mut shutdown) => return,
            accepted = state.listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let index = shared.accepted.fetch_add(1, Ordering::SeqCst);
                    let guard = TaskGuard::new(&shared, false);
                    state.connections.spawn(serve_connection(stream, index, guard));
                }
                // Out of descriptors or the like: back off briefly rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(joined) = state.connections.join_next(), if !state.connections.is_empty() => {
                if let Err(error) = joined
                    && error.is_panic()
                {
                    let message = panic_message(error.into_panic().as_ref());
                    lock(&shared.panics).push(format!("fault_server: connection task panicked: {message}"));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// One connection
// ---------------------------------------------------------------------------------------------

/// A client's socket and what it sent that is not consumed yet.
struct Conn {
    stream: TcpStream,
    inbuf: BytesMut,
    shared: Arc<Shared>,
}

/// How a response (or the connection) ended.
enum Flow {
    /// The response is complete; the connection may carry another request.
    Done,
    /// Close gracefully (FIN, then wait briefly for the client to close).
    Close,
    /// Reset the connection (RST).
    Reset,
    /// The client went away (or a write failed): just drop the socket.
    Gone,
}

/// Why a request could not be read.
enum RequestError {
    /// The client closed cleanly between requests.
    Closed,
    /// The socket failed or closed mid-request.
    Io,
    /// The request was malformed: `400`.
    Malformed,
    /// Too many headers or too large a head: `431`.
    HeadTooLarge,
    /// Too large a body: `413`.
    BodyTooLarge,
}

/// A parsed request, before recording.
struct Request {
    recorded: Recorded,
    keep_alive: bool,
}

async fn serve_connection(stream: TcpStream, index: usize, guard: TaskGuard) {
    let shared = Arc::clone(&guard.shared);
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        inbuf: BytesMut::with_capacity(16 * 1024),
        shared: Arc::clone(&shared),
    };
    let flow = loop {
        let request = match conn.read_request(index).await {
            Ok(request) => request,
            Err(RequestError::Closed | RequestError::Io) => break Flow::Gone,
            Err(RequestError::Malformed) => break refuse(&mut conn, 400).await,
            Err(RequestError::HeadTooLarge) => break refuse(&mut conn, 431).await,
            Err(RequestError::BodyTooLarge) => break refuse(&mut conn, 413).await,
        };
        let recorded = shared.record(request.recorded);
        let reply = shared.reply_to(&recorded);
        let keep_alive = request.keep_alive && !reply.says_close();
        match conn.send_reply(reply).await {
            Flow::Done if keep_alive => continue,
            Flow::Done => break Flow::Close,
            other => break other,
        }
    };
    match flow {
        Flow::Close => conn.close_gracefully().await,
        Flow::Reset => conn.reset(),
        Flow::Done | Flow::Gone => {}
    }
    drop(conn);
    drop(guard);
}

async fn refuse(conn: &mut Conn, status: u16) -> Flow {
    let reply = Reply::empty(status).closing();
    match conn.send_reply(reply).await {
        Flow::Done | Flow::Close => Flow::Close,
        other => other,
    }
}

/// The values of the (lower-cased) header `name`, in order.
fn header_values<'a>(
    headers: &'a [(String, String)],
    name: &'a str,
) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(move |(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

impl Conn {
    /// Reads more bytes into `inbuf`; `Ok(0)` at end-of-stream.
    async fn fill(&mut self) -> std::io::Result<usize> {
        self.inbuf.reserve(64 * 1024);
        self.stream.read_buf(&mut self.inbuf).await
    }

    async fn read_request(&mut self, connection: usize) -> Result<Request, RequestError> {
        // The head.
        let (head_len, method, path, version, headers) = loop {
            if !self.inbuf.is_empty() {
                let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut parsed = httparse::Request::new(&mut slots);
                match parsed.parse(&self.inbuf) {
                    Ok(httparse::Status::Complete(len)) => {
                        let headers: Vec<(String, String)> = parsed
                            .headers
                            .iter()
                            .map(|h| {
                                (
                                    h.name.to_ascii_lowercase(),
                                    String::from_utf8_lossy(h.value).into_owned(),
                                )
                            })
                            .collect();
                        break (
                            len,
                            parsed.method.unwrap_or_default().to_owned(),
                            parsed.path.unwrap_or_default().to_owned(),
                            parsed.version.unwrap_or(1),
                            headers,
                        );
                    }
                    Ok(httparse::Status::Partial) if self.inbuf.len() > MAX_HEAD_BYTES => {
                        return Err(RequestError::HeadTooLarge);
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(httparse::Error::TooManyHeaders) => {
                        return Err(RequestError::HeadTooLarge);
                    }
                    Err(_) => return Err(RequestError::Malformed),
                }
            }
            match self.fill().await {
                Ok(0) if self.inbuf.is_empty() => return Err(RequestError::Closed),
                Ok(0) | Err(_) => return Err(RequestError::Io),
                Ok(_) => {}
            }
        };
        let header = |name: &'static str| header_values(&headers, name);
        let connection_header: Vec<&str> = header("connection").collect();
        let keep_alive = if version == 0 {
            connection_header.iter().any(|v| has_token(v, "keep-alive"))
        } else {
            !connection_header.iter().any(|v| has_token(v, "close"))
        };
        let chunked = match header("transfer-encoding").last() {
            None => false,
            Some(te)
                if te
                    .rsplit(',')
                    .next()
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("chunked")) =>
            {
                true
            }
            Some(_) => return Err(RequestError::Malformed),
        };
        let content_length = if chunked {
            None
        } else {
            let mut lengths = header("content-length").map(|v| v.trim().parse::<u64>());
            match lengths.next() {
                None => None,
                Some(Err(_)) => return Err(RequestError::Malformed),
                Some(Ok(first)) => {
                    if lengths.any(|other| other.ok() != Some(first)) {
                        return Err(RequestError::Malformed);
                    }
                    Some(first)
                }
            }
        };
        if content_length.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
            return Err(RequestError::BodyTooLarge);
        }
        let expects_continue = header("expect").any(|v| v.eq_ignore_ascii_case("100-continue"));
        let mut continued = false;

        // The body.
        let body = loop {
            let available = &self.inbuf[head_len..];
            if chunked {
                match scan_chunked(available, MAX_BODY_BYTES) {
                    Ok(Some(decoded)) => {
                        let body = decoded.body(available);
                        self.inbuf.advance(head_len + decoded.consumed);
                        break body;
                    }
                    Ok(None) if available.len() > MAX_BODY_BYTES + MAX_FRAMING_BYTES => {
                        return Err(RequestError::BodyTooLarge);
                    }
                    Ok(None) => {}
                    Err(ChunkError::TooLarge) => return Err(RequestError::BodyTooLarge),
                    Err(ChunkError::Malformed) => return Err(RequestError::Malformed),
                }
            } else {
                // Checked against MAX_BODY_BYTES above, so it fits.
                let len = content_length.unwrap_or(0) as usize;
                if available.len() >= len {
                    let body = available[..len].to_vec();
                    self.inbuf.advance(head_len + len);
                    break body;
                }
            }
            if expects_continue && !continued {
                continued = true;
                if self
                    .stream
                    .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                    .await
                    .is_err()
                {
                    return Err(RequestError::Io);
                }
            }
            match self.fill().await {
                Ok(0) | Err(_) => return Err(RequestError::Io),
                Ok(_) => {}
            }
        };
        Ok(Request {
            recorded: Recorded {
                method,
                path,
                headers,
                body,
                connection,
                index: 0,
            },
            keep_alive,
        })
    }

    async fn write(&mut self, bytes: &[u8]) -> bool {
        let written = self.stream.write_all(bytes).await.is_ok();
        if written {
            self.shared
                .written
                .fetch_add(bytes.len() as u64, Ordering::SeqCst);
        }
        written
    }

    /// Waits `duration` (or forever with `None`) unless the client goes away first: `true` if the
    /// client is still there. Bytes the client sends meanwhile are kept for the next request.
    async fn wait(&mut self, duration: Option<Duration>) -> bool {
        let Conn { stream, inbuf, .. } = self;
        let gone = client_gone(stream, inbuf);
        match duration {
            Some(duration) => tokio::select! {
                () = tokio::time::sleep(duration) => true,
                () = gone => false,
            },
            None => {
                gone.await;
                false
            }
        }
    }

    async fn send_reply(&mut self, reply: Reply) -> Flow {
        let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
        let mut add = |name: &str, value: &str| {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        };
        for (name, value) in &reply.headers {
            add(name, value);
        }
        match &reply.body {
            Body::Full(body) => {
                // 1xx, 204 and 304 responses carry no Content-Length (RFC 9110 section 8.6).
                let no_length = matches!(reply.status, 100..=199 | 204 | 304) && body.is_empty();
                if !no_length && !reply.has_header("content-length") {
                    add("Content-Length", &body.len().to_string());
                }
            }
            Body::Chunked(_) => {
                if !reply.has_header("transfer-encoding") {
                    add("Transfer-Encoding", "chunked");
                }
            }
            Body::Raw(_) => {
                if !reply.has_header("connection") {
                    add("Connection", "close");
                }
            }
            Body::Verbatim(_) => {}
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        match reply.body {
            Body::Full(body) => {
                out.extend_from_slice(&body);
                if self.write(&out).await {
                    Flow::Done
                } else {
                    Flow::Gone
                }
            }
            Body::Chunked(steps) => {
                if !self.write(&out).await {
                    return Flow::Gone;
                }
                match self.run_steps(&steps, true).await {
                    Flow::Done if self.write(b"0\r\n\r\n").await => Flow::Done,
                    Flow::Done => Flow::Gone,
                    other => other,
                }
            }
            Body::Raw(steps) => {
                if !self.write(&out).await {
                    return Flow::Gone;
                }
                match self.run_steps(&steps, false).await {
                    Flow::Done => Flow::Close,
                    other => other,
                }
            }
            Body::Verbatim(steps) => match self.run_steps(&steps, false).await {
                Flow::Done => Flow::Close,
                other => other,
            },
        }
    }

    /// Writes `data` as is, or as one chunk when `chunked` (nothing for empty data).
    async fn write_body(&mut self, data: &[u8], chunked: bool) -> bool {
        if data.is_empty() {
            return true;
        }
        if chunked {
            self.write(&frame_chunk(data)).await
        } else {
            self.write(data).await
        }
    }

    async fn run_steps(&mut self, steps: &[Step], chunked: bool) -> Flow {
        for step in steps {
            match step {
                Step::Bytes(data) => {
                    if !self.write_body(data, chunked).await {
                        return Flow::Gone;
                    }
                }
                Step::Delay(duration) => {
                    if !self.wait(Some(*duration)).await {
                        return Flow::Gone;
                    }
                }
                Step::Drop => return Flow::Close,
                Step::Reset => return Flow::Reset,
                Step::Hang => {
                    self.wait(None).await;
                    return Flow::Gone;
                }
                Step::Repeat {
                    bytes,
                    every,
                    max_bytes,
                } => {
                    if !self.repeat(bytes, *every, *max_bytes, chunked).await {
                        return Flow::Gone;
                    }
                }
            }
        }
        Flow::Done
    }

    /// [`Step::Repeat`]: `false` if the client went away.
    async fn repeat(
        &mut self,
        bytes: &[u8],
        every: Duration,
        max_bytes: u64,
        chunked: bool,
    ) -> bool {
        if bytes.is_empty() {
            return true;
        }
        let mut left = max_bytes;
        if every.is_zero() {
            let copies = FLOOD_BUFFER_BYTES.div_ceil(bytes.len()).max(1);
            let buffer = bytes.repeat(copies);
            let framed = if chunked {
                frame_chunk(&buffer)
            } else {
                buffer.clone()
            };
            while left > 0 {
                let ok = if left >= buffer.len() as u64 {
                    left -= buffer.len() as u64;
                    self.write(&framed).await
                } else {
                    // A prefix of whole copies is the right truncation.
                    let part = &buffer[..left as usize];
                    left = 0;
                    self.write_body(part, chunked).await
                };
                if !ok {
                    return false;
                }
            }
        } else {
            let mut first = true;
            while left > 0 {
                if !first && !self.wait(Some(every)).await {
                    return false;
                }
                first = false;
                let take = bytes.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                left -= take as u64;
                if !self.write_body(&bytes[..take], chunked).await {
                    return false;
                }
            }
        }
        true
    }

    /// Sends FIN, then waits (at most [`LINGER`]) for the client to close, reading and discarding
    /// what it sends, so the close does not turn into a reset that would discard unread response
    /// bytes at the client.
    async fn close_gracefully(&mut self) {
        if self.stream.shutdown().await.is_err() {
            return;
        }
        let mut sink = [0u8; 8192];
        let drain = async {
            loop {
                match self.stream.read(&mut sink).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        };
        let _ = tokio::time::timeout(LINGER, drain).await;
    }

    /// Arranges for the close to send RST (zero linger); the socket is closed when dropped.
    fn reset(&mut self) {
        let _ = self.stream.set_zero_linger();
    }
}

/// Resolves when the client has gone away: its side reads end-of-stream or fails. Anything it sends
/// meanwhile is appended to `inbuf` (up to a bound; then the server stops reading).
async fn client_gone(stream: &mut TcpStream, inbuf: &mut BytesMut) {
    loop {
        if inbuf.len() >= MAX_BUFFERED_BYTES {
            std::future::pending::<()>().await;
        }
        inbuf.reserve(8 * 1024);
        match stream.read_buf(inbuf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

fn frame_chunk(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 20);
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// The usual reason phrase for a status, or `Unknown`.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

// ---------------------------------------------------------------------------------------------
// Chunked decoding (requests here; responses in the tests)
// ---------------------------------------------------------------------------------------------

/// Why a chunked body could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkError {
    /// Bad chunk size line or missing CRLF after chunk data.
    Malformed,
    /// The decoded body would exceed the limit.
    TooLarge,
}

/// Where a complete chunked body's data lies in the bytes that were scanned.
#[derive(Debug)]
struct Chunked {
    /// `(start, len)` of each chunk's data.
    chunks: Vec<(usize, usize)>,
    /// Bytes taken by the whole body, terminating chunk and trailers included.
    consumed: usize,
}

impl Chunked {
    fn body(&self, scanned: &[u8]) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.chunks.iter().map(|(_, len)| len).sum());
        for (start, len) in &self.chunks {
            body.extend_from_slice(&scanned[*start..start + len]);
        }
        body
    }
}

/// Scans `buf` for a complete chunked body without copying: `Ok(None)` if more bytes are needed.
/// Trailers are skipped. The cost is per chunk, not per byte, so rescanning as bytes arrive is
/// cheap.
fn scan_chunked(buf: &[u8], limit: usize) -> Result<Option<Chunked>, ChunkError> {
    let mut pos = 0;
    let mut total = 0usize;
    let mut chunks = Vec::new();
    loop {
        let (header_len, size) = match httparse::parse_chunk_size(&buf[pos..]) {
            Ok(httparse::Status::Complete(found)) => found,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(ChunkError::Malformed),
        };
        pos += header_len;
        if size == 0 {
            // Trailer lines, then the empty line.
            loop {
                let rest = &buf[pos..];
                let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                    return Ok(None);
                };
                pos += end + 2;
                if end == 0 {
                    return Ok(Some(Chunked {
                        chunks,
                        consumed: pos,
                    }));
                }
            }
        }
        let size = usize::try_from(size).map_err(|_| ChunkError::TooLarge)?;
        total = total.checked_add(size).ok_or(ChunkError::TooLarge)?;
        if total > limit {
            return Err(ChunkError::TooLarge);
        }
        if buf.len() - pos < size + 2 {
            return Ok(None);
        }
        chunks.push((pos, size));
        pos += size;
        if &buf[pos..pos + 2] != b"\r\n" {
            return Err(ChunkError::Malformed);
        }
        pos += 2;
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The bound on every wait in these tests.
    const T: Duration = Duration::from_secs(10);

    async fn within<F: Future>(what: &str, future: F) -> F::Output {
        tokio::time::timeout(T, future)
            .await
            .unwrap_or_else(|_| panic!("timed out: {what}"))
    }

    async fn connect(server: &FaultServer) -> TcpStream {
        within("connect", TcpStream::connect(server.addr()))
            .await
            .expect("connect")
    }

    fn post(path: &str, body: &str, extra: &[&str]) -> Vec<u8> {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        for line in extra {
            request.push_str(line);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        request.push_str(body);
        request.into_bytes()
    }

    fn get(path: &str, extra: &[&str]) -> Vec<u8> {
        let mut request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n");
        for line in extra {
            request.push_str(line);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        request.into_bytes()
    }

    async fn send(stream: &mut TcpStream, bytes: &[u8]) {
        within("send", stream.write_all(bytes)).await.expect("send");
    }

    /// A response head as the client saw it.
    #[derive(Debug)]
    struct Head {
        status: u16,
        reason: String,
        headers: Vec<(String, String)>,
    }

    impl Head {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    /// A client connection with its own read buffer.
    struct Client {
        stream: TcpStream,
        buf: Vec<u8>,
    }

    impl Client {
        async fn new(server: &FaultServer) -> Client {
            Client {
                stream: connect(server).await,
                buf: Vec::new(),
            }
        }

        async fn send(&mut self, bytes: &[u8]) {
            send(&mut self.stream, bytes).await;
        }

        /// Reads more; `0` at end-of-stream.
        async fn fill(&mut self) -> usize {
            let mut chunk = [0u8; 64 * 1024];
            let n = within("read", self.stream.read(&mut chunk))
                .await
                .expect("read");
            self.buf.extend_from_slice(&chunk[..n]);
            n
        }

        async fn read_head(&mut self) -> Head {
            loop {
                let mut slots = [httparse::EMPTY_HEADER; 64];
                let mut response = httparse::Response::new(&mut slots);
                if let httparse::Status::Complete(len) =
                    response.parse(&self.buf).expect("a valid response head")
                {
                    let head = Head {
                        status: response.code.expect("status"),
                        reason: response.reason.unwrap_or_default().to_owned(),
                        headers: response
                            .headers
                            .iter()
                            .map(|h| {
                                (
                                    h.name.to_ascii_lowercase(),
                                    String::from_utf8_lossy(h.value).into_owned(),
                                )
                            })
                            .collect(),
                    };
                    self.buf.drain(..len);
                    return head;
                }
                assert!(self.fill().await > 0, "EOF inside the response head");
            }
        }

        async fn read_exact(&mut self, n: usize) -> Vec<u8> {
            while self.buf.len() < n {
                assert!(self.fill().await > 0, "EOF inside a {n}-byte body");
            }
            self.buf.drain(..n).collect()
        }

        /// Reads a chunked body: the exact framing bytes and the decoded data.
        async fn read_chunked(&mut self) -> (Vec<u8>, Vec<u8>) {
            loop {
                if let Some(decoded) = scan_chunked(&self.buf, usize::MAX).expect("valid chunks") {
                    let data = decoded.body(&self.buf);
                    let framing = self.buf.drain(..decoded.consumed).collect();
                    return (framing, data);
                }
                assert!(self.fill().await > 0, "EOF inside a chunked body");
            }
        }

        async fn read_to_eof(&mut self) -> Vec<u8> {
            while self.fill().await > 0 {}
            std::mem::take(&mut self.buf)
        }

        /// Asserts nothing arrives for `quiet` (a bounded negative check, not synchronisation).
        async fn assert_silent(&mut self, quiet: Duration) {
            let mut byte = [0u8; 1];
            if let Ok(read) = tokio::time::timeout(quiet, self.stream.read(&mut byte)).await {
                panic!("expected silence, got {read:?}");
            }
        }
    }

    fn echo_json(request: &Recorded) -> Reply {
        Reply::json(
            200,
            json!({"jsonrpc": "2.0", "id": request.jsonrpc_id(), "result": {"path": request.path}}),
        )
    }

    #[tokio::test]
    async fn full_body_has_content_length_and_request_is_recorded() {
        let server = FaultServer::start(echo_json).await;
        let mut client = Client::new(&server).await;
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
        client
            .send(&post(
                "/mcp?x=1",
                body,
                &["Mcp-Session-Id: abc", "X-Dup: 1", "x-dup: 2"],
            ))
            .await;
        let head = client.read_head().await;
        assert_eq!((head.status, head.reason.as_str()), (200, "OK"));
        assert_eq!(head.header("content-type"), Some("application/json"));
        let len: usize = head.header("content-length").unwrap().parse().unwrap();
        let reply: serde_json::Value =
            serde_json::from_slice(&client.read_exact(len).await).unwrap();
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"path": "/mcp?x=1"}})
        );

        let requests = server.wait_for_requests(1, T).await;
        let request = &requests[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/mcp?x=1");
        assert_eq!(request.body, body.as_bytes());
        assert_eq!(request.header("MCP-SESSION-ID"), Some("abc"));
        assert!(
            request
                .headers
                .iter()
                .any(|(n, v)| n == "mcp-session-id" && v == "abc")
        );
        assert_eq!(request.header_all("x-dup"), ["1", "2"]);
        assert_eq!(request.jsonrpc_method().as_deref(), Some("tools/list"));
        assert_eq!(request.jsonrpc_id(), Some(json!(7)));
        assert_eq!(request.json().unwrap()["method"], "tools/list");
        assert_eq!((request.connection, request.index), (0, 0));
        assert_eq!(server.connections_accepted(), 1);
    }

    #[tokio::test]
    async fn chunked_framing_is_exact_and_the_connection_is_reused() {
        let server = FaultServer::start(|_| {
            Reply::chunked(
                200,
                vec![
                    Step::text("hello"),
                    Step::bytes(b""),
                    Step::text(" wonderful world"),
                ],
            )
        })
        .await;
        let mut client = Client::new(&server).await;
        for _ in 0..2 {
            client.send(&get("/stream", &[])).await;
            let head = client.read_head().await;
            assert_eq!(head.header("transfer-encoding"), Some("chunked"));
            assert_eq!(head.header("content-length"), None);
            let (framing, data) = client.read_chunked().await;
            assert_eq!(
                framing,
                b"5\r\nhello\r\n10\r\n wonderful world\r\n0\r\n\r\n"
            );
            assert_eq!(data, b"hello wonderful world");
        }
        let requests = server.wait_for_requests(2, T).await;
        assert_eq!(
            requests.iter().map(|r| r.connection).collect::<Vec<_>>(),
            [0, 0]
        );
        assert_eq!(server.connections_accepted(), 1);
    }

    #[tokio::test]
    async fn sse_helper_streams_one_chunk_per_event() {
        let events = ["event: message\ndata: {\"a\":1}\n\n", "data: 2\n\n"];
        let server = FaultServer::start(move |_| Reply::sse(200, &events)).await;
        let mut client = Client::new(&server).await;
        client.send(&post("/mcp", "{}", &[])).await;
        let head = client.read_head().await;
        assert_eq!(head.header("content-type"), Some("text/event-stream"));
        let (framing, data) = client.read_chunked().await;
        assert_eq!(data, events.concat().as_bytes());
        assert!(framing.starts_with(format!("{:x}\r\n", events[0].len()).as_bytes()));
    }

    #[tokio::test]
    async fn keep_alive_records_connection_indexes_and_pipelining_works() {
        let server = FaultServer::start(echo_json).await;
        let mut first = Client::new(&server).await;
        // Two requests in one write: both answered, in order.
        let mut pipelined = post("/a", r#"{"id":1}"#, &[]);
        pipelined.extend(post("/b", r#"{"id":2}"#, &[]));
        first.send(&pipelined).await;
        for expected in ["/a", "/b"] {
            let head = first.read_head().await;
            let len = head.header("content-length").unwrap().parse().unwrap();
            let reply: serde_json::Value =
                serde_json::from_slice(&first.read_exact(len).await).unwrap();
            assert_eq!(reply["result"]["path"], expected);
        }
        let mut second = Client::new(&server).await;
        second.send(&post("/c", "{}", &[])).await;
        second.read_head().await;
        first.send(&post("/d", "{}", &[])).await;
        first.read_head().await;

        let requests = server.wait_for_requests(4, T).await;
        let seen: Vec<_> = requests
            .iter()
            .map(|r| (r.path.as_str(), r.connection, r.index))
            .collect();
        assert_eq!(
            seen,
            [("/a", 0, 0), ("/b", 0, 1), ("/c", 1, 2), ("/d", 0, 3)]
        );
        assert_eq!(server.connections_accepted(), 2);
        assert_eq!(server.open_connections(), 2);
    }

    #[tokio::test]
    async fn connection_close_is_honoured_both_ways() {
        let server = FaultServer::start(|r| {
            if r.path == "/bye" {
                Reply::text(200, "bye").closing()
            } else {
                Reply::text(200, "hi")
            }
        })
        .await;
        // The request asks to close.
        let mut client = Client::new(&server).await;
        client.send(&get("/hi", &["Connection: close"])).await;
        let head = client.read_head().await;
        assert_eq!(head.header("content-length"), Some("2"));
        assert_eq!(client.read_to_eof().await, b"hi");
        // The reply asks to close.
        let mut client = Client::new(&server).await;
        client.send(&get("/bye", &[])).await;
        let head = client.read_head().await;
        assert_eq!(head.header("connection"), Some("close"));
        assert_eq!(client.read_to_eof().await, b"bye");
        // HTTP/1.0 without keep-alive.
        let mut client = Client::new(&server).await;
        client.send(b"GET /old HTTP/1.0\r\n\r\n").await;
        client.read_head().await;
        assert_eq!(client.read_to_eof().await, b"hi");
        server.wait_idle(T).await;
    }

    #[tokio::test]
    async fn chunked_request_bodies_are_decoded_and_100_continue_is_sent() {
        let server = FaultServer::start(|_| Reply::empty(202)).await;
        let mut client = Client::new(&server).await;
        client
            .send(b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\n{\"a\r\n")
            .await;
        client
            .send(b"5\r\n\":1}\n\r\n0\r\nx-trailer: 1\r\n\r\n")
            .await;
        let head = client.read_head().await;
        assert_eq!(head.status, 202);
        client
            .send(b"POST /mcp HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
            .await;
        let interim = client.read_head().await;
        assert_eq!(interim.status, 100);
        client.send(b"{}").await;
        let head = client.read_head().await;
        assert_eq!(head.status, 202);
        let requests = server.wait_for_requests(2, T).await;
        assert_eq!(requests[0].body, b"{\"a\":1}\n");
        assert_eq!(requests[1].body, b"{}");
    }

    #[tokio::test]
    async fn empty_204_has_no_content_length_and_statuses_go_out_as_given() {
        let server = FaultServer::start_sequence(vec![
            Reply::empty(204),
            Reply::redirect(307, "http://elsewhere.test/mcp"),
            Reply::text(599, "odd"),
            Reply::empty(202).with_header("content-length", "5"),
        ])
        .await;
        let mut client = Client::new(&server).await;
        client.send(&get("/1", &[])).await;
        let head = client.read_head().await;
        assert_eq!(head.status, 204);
        assert_eq!(head.header("content-length"), None);
        client.send(&get("/2", &[])).await;
        let head = client.read_head().await;
        assert_eq!(
            (head.status, head.reason.as_str()),
            (307, "Temporary Redirect")
        );
        assert_eq!(head.header("location"), Some("http://elsewhere.test/mcp"));
        assert_eq!(head.header("content-length"), Some("0"));
        client.send(&get("/3", &[])).await;
        let head = client.read_head().await;
        assert_eq!((head.status, head.reason.as_str()), (599, "Unknown"));
        assert_eq!(client.read_exact(3).await, b"odd");
        // A lying Content-Length is sent as given: the body never comes.
        client.send(&get("/4", &[])).await;
        let head = client.read_head().await;
        assert_eq!(head.header("content-length"), Some("5"));
        client.assert_silent(Duration::from_millis(100)).await;
    }

    #[tokio::test]
    async fn drop_mid_chunk_closes_the_socket() {
        let server = FaultServer::start(|r| {
            if r.path == "/chunked" {
                Reply::sse_steps(
                    200,
                    vec![Step::text("data: 1\n\n"), Step::Drop, Step::text("never")],
                )
            } else {
                // A chunk cut short: hand-written framing over a raw body.
                Reply::raw(200, vec![Step::text("a\r\nhello"), Step::Drop])
                    .with_header("transfer-encoding", "chunked")
            }
        })
        .await;
        let mut client = Client::new(&server).await;
        client.send(&get("/chunked", &[])).await;
        client.read_head().await;
        assert_eq!(client.read_to_eof().await, b"9\r\ndata: 1\n\n\r\n");

        let mut client = Client::new(&server).await;
        client.send(&get("/raw", &[])).await;
        let head = client.read_head().await;
        assert_eq!(head.header("transfer-encoding"), Some("chunked"));
        assert_eq!(head.header("connection"), Some("close"));
        assert_eq!(client.read_to_eof().await, b"a\r\nhello");
        drop(client);
        server.wait_idle(T).await;
    }

    #[tokio::test]
    async fn reset_sends_rst() {
        let server =
            FaultServer::start(|_| Reply::raw(200, vec![Step::text("x"), Step::Reset])).await;
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        let mut sink = Vec::new();
        let read = within("read to reset", client.stream.read_to_end(&mut sink)).await;
        assert_eq!(
            read.expect_err("a reset, not a clean end").kind(),
            std::io::ErrorKind::ConnectionReset
        );
        server.wait_idle(T).await;
    }

    #[tokio::test]
    async fn hang_stays_open_until_the_client_closes_then_the_task_ends() {
        let server = FaultServer::start(|_| {
            Reply::sse_steps(200, vec![Step::text("data: primed\n\n"), Step::Hang])
        })
        .await;
        let monitor = server.monitor();
        let mut client = Client::new(&server).await;
        client.send(&get("/mcp", &[])).await;
        client.read_head().await;
        while client.buf.len() < b"e\r\ndata: primed\n\n\r\n".len() {
            assert!(client.fill().await > 0);
        }
        client.assert_silent(Duration::from_millis(200)).await;
        assert_eq!(server.open_connections(), 1);
        assert_eq!(monitor.open_connections(), 1);
        drop(client);
        server.wait_idle(T).await;
        assert_eq!(monitor.open_connections(), 0);
        assert!(!monitor.is_stopped(), "the listener is still open");
    }

    #[tokio::test]
    async fn delay_drips_bytes() {
        let every = Duration::from_millis(50);
        let server = FaultServer::start(move |_| Reply::raw(200, Step::drip("abcd", every))).await;
        let mut client = Client::new(&server).await;
        let started = tokio::time::Instant::now();
        client.send(&get("/", &[])).await;
        client.read_head().await;
        let mut reads = 0;
        while client.fill().await > 0 {
            reads += 1;
        }
        assert_eq!(client.buf, b"abcd");
        // Three delays of 50 ms happened between the request and the last byte; sleeps never end
        // early.
        assert!(
            started.elapsed() >= Duration::from_millis(150),
            "{:?}",
            started.elapsed()
        );
        assert!(
            reads >= 2,
            "the bytes came apart, not in one write ({reads} reads)"
        );
    }

    #[tokio::test]
    async fn repeat_floods_200_mb_and_stops_at_max_bytes() {
        const FLOOD: u64 = 200_000_000;
        let server = FaultServer::start(|_| {
            Reply::raw(
                200,
                vec![
                    Step::text("data: "),
                    Step::Repeat {
                        bytes: b"xyz".to_vec(),
                        every: Duration::ZERO,
                        max_bytes: FLOOD,
                    },
                    Step::text("\n\n"),
                ],
            )
        })
        .await;
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        client.read_head().await;
        // Check every byte as it comes, by slices: "data: ", FLOOD bytes of "xyz" repeated, "\n\n".
        let pattern = b"xyz".repeat(1024 * 1024 / 3 + 2);
        let check = |pos: u64, data: &[u8]| {
            let mut pos = pos;
            let mut data = data;
            while !data.is_empty() {
                let (expected, end): (&[u8], u64) = if pos < 6 {
                    (&b"data: "[pos as usize..], 6)
                } else if pos < 6 + FLOOD {
                    (&pattern[((pos - 6) % 3) as usize..], 6 + FLOOD)
                } else {
                    (&b"\n\n"[(pos - 6 - FLOOD).min(2) as usize..], 6 + FLOOD + 2)
                };
                let take = data.len().min((end - pos) as usize).min(expected.len());
                assert!(take > 0, "{} bytes past the end at {pos}", data.len());
                assert!(data[..take] == expected[..take], "wrong bytes at {pos}");
                pos += take as u64;
                data = &data[take..];
            }
        };
        let mut total = client.buf.len() as u64;
        check(0, &client.buf);
        let mut chunk = vec![0u8; 1024 * 1024];
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let n = client.stream.read(&mut chunk).await.expect("read");
                if n == 0 {
                    break;
                }
                check(total, &chunk[..n]);
                total += n as u64;
            }
        })
        .await
        .expect("200 MB within a minute");
        assert_eq!(total, 6 + FLOOD + 2);
    }

    #[tokio::test]
    async fn chunked_repeat_is_cut_at_max_bytes() {
        let server = FaultServer::start(|_| {
            Reply::chunked(
                200,
                vec![Step::Repeat {
                    bytes: b"0123456789".to_vec(),
                    every: Duration::ZERO,
                    max_bytes: 1_000_005,
                }],
            )
        })
        .await;
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        client.read_head().await;
        let (_, data) = client.read_chunked().await;
        assert_eq!(data.len(), 1_000_005);
        assert_eq!(data, &b"0123456789".repeat(100_001)[..1_000_005]);
    }

    #[tokio::test]
    async fn repeat_with_interval_counts_copies() {
        let server = FaultServer::start(|_| {
            Reply::chunked(
                200,
                vec![Step::Repeat {
                    bytes: b": ping\n\n".to_vec(),
                    every: Duration::from_millis(5),
                    max_bytes: 8 * 3 + 4,
                }],
            )
        })
        .await;
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        client.read_head().await;
        let (framing, data) = client.read_chunked().await;
        assert_eq!(data, b": ping\n\n: ping\n\n: ping\n\n: pi");
        assert_eq!(
            framing,
            b"8\r\n: ping\n\n\r\n8\r\n: ping\n\n\r\n8\r\n: ping\n\n\r\n4\r\n: pi\r\n0\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn repeat_ends_when_the_client_disconnects() {
        let server = FaultServer::start(|r| {
            let every = if r.path == "/fast" {
                Duration::ZERO
            } else {
                Duration::from_millis(10)
            };
            Reply::sse_steps(
                200,
                vec![Step::Repeat {
                    bytes: b"data: x\n\n".to_vec(),
                    every,
                    max_bytes: u64::MAX,
                }],
            )
        })
        .await;
        for path in ["/fast", "/slow"] {
            let mut client = Client::new(&server).await;
            client.send(&get(path, &[])).await;
            client.read_head().await;
            while client.buf.len() < 100 {
                assert!(client.fill().await > 0);
            }
            assert_eq!(server.open_connections(), 1);
            drop(client);
            server.wait_idle(T).await;
        }
    }

    #[tokio::test]
    async fn verbatim_writes_the_whole_response() {
        let server =
            FaultServer::start(|_| Reply::verbatim(vec![Step::text("HTTP/1.1 2OO OK\r\n\r\n")]))
                .await;
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        assert_eq!(client.read_to_eof().await, b"HTTP/1.1 2OO OK\r\n\r\n");
    }

    #[tokio::test]
    async fn bytes_written_counts_what_went_out() {
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let server = FaultServer::start(move |_| Reply::verbatim(vec![Step::text(response)])).await;
        assert_eq!(server.bytes_written(), 0);
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        assert_eq!(client.read_to_eof().await, response.as_bytes());
        assert_eq!(server.bytes_written(), response.len() as u64);
    }

    #[tokio::test]
    async fn bad_requests_are_refused_and_not_recorded() {
        let server = FaultServer::start(|_| Reply::empty(200)).await;
        let mut client = Client::new(&server).await;
        client
            .send(
                format!(
                    "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
                    MAX_BODY_BYTES + 1
                )
                .as_bytes(),
            )
            .await;
        assert_eq!(client.read_head().await.status, 413);
        assert_eq!(client.read_to_eof().await, b"");

        let mut client = Client::new(&server).await;
        let mut many = String::from("GET / HTTP/1.1\r\n");
        for i in 0..=MAX_HEADERS {
            many.push_str(&format!("x-{i}: {i}\r\n"));
        }
        many.push_str("\r\n");
        client.send(many.as_bytes()).await;
        assert_eq!(client.read_head().await.status, 431);

        let mut client = Client::new(&server).await;
        client.send(b"NOT HTTP AT ALL\r\n\r\n").await;
        assert_eq!(client.read_head().await.status, 400);

        let mut client = Client::new(&server).await;
        client
            .send(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            .await;
        assert_eq!(client.read_head().await.status, 400);

        assert!(
            server
                .try_wait_for_requests(1, Duration::from_millis(20))
                .await
                .unwrap_err()
                .is_empty()
        );
        assert_eq!(server.connections_accepted(), 4);
    }

    #[tokio::test]
    async fn wait_for_requests_is_bounded() {
        let server = FaultServer::start(|_| Reply::empty(200)).await;
        let early = server
            .try_wait_for_requests(1, Duration::from_millis(20))
            .await;
        assert_eq!(early, Err(Vec::new()));
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        let requests = server.wait_for_requests(1, T).await;
        assert_eq!(requests.len(), 1);
        assert_eq!(server.requests(), requests);
    }

    #[tokio::test]
    async fn drop_stops_everything_and_the_port_refuses() {
        let server = FaultServer::start(|_| Reply::sse_steps(200, vec![Step::Hang])).await;
        let addr = server.addr();
        let monitor = server.monitor();
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        client.read_head().await;
        assert_eq!(monitor.open_connections(), 1);
        drop(server);
        assert!(monitor.wait_stopped(T).await, "tasks still running");
        // The hanging connection was closed by the server...
        assert_eq!(client.read_to_eof().await, b"");
        // ...and nothing listens any more.
        let refused = TcpStream::connect(addr)
            .await
            .expect_err("the port is closed");
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_waits_for_the_tasks() {
        let server = FaultServer::start(|_| {
            Reply::raw(
                200,
                vec![Step::Repeat {
                    bytes: b"x".to_vec(),
                    every: Duration::from_millis(1),
                    max_bytes: u64::MAX,
                }],
            )
        })
        .await;
        let addr = server.addr();
        let monitor = server.monitor();
        let mut client = Client::new(&server).await;
        client.send(&get("/", &[])).await;
        client.read_head().await;
        within("shutdown", server.shutdown()).await;
        assert!(monitor.is_stopped());
        assert!(TcpStream::connect(addr).await.is_err());
    }

    #[tokio::test]
    #[should_panic(expected = "only 1 replies were scripted")]
    async fn a_handler_panic_fails_the_test_when_the_server_drops() {
        let server = FaultServer::start_sequence(vec![Reply::empty(200)]).await;
        let mut client = Client::new(&server).await;
        client.send(&get("/1", &[])).await;
        assert_eq!(client.read_head().await.status, 200);
        client.send(&get("/2", &[])).await;
        assert_eq!(client.read_head().await.status, 500);
        assert_eq!(server.handler_panics().len(), 1);
        drop(server);
    }

    #[test]
    fn chunk_scanner_needs_the_whole_body() {
        let body = b"4\r\nwiki\r\n5;a=b\r\npedia\r\n0\r\nx: y\r\n\r\nNEXT";
        for split in 0..body.len() - 4 {
            assert!(
                scan_chunked(&body[..split], 100).unwrap().is_none(),
                "split {split}"
            );
        }
        let decoded = scan_chunked(body, 100).unwrap().unwrap();
        assert_eq!(decoded.body(body), b"wikipedia");
        assert_eq!(&body[decoded.consumed..], b"NEXT");
        assert_eq!(scan_chunked(body, 8).unwrap_err(), ChunkError::TooLarge);
        assert_eq!(
            scan_chunked(b"4\r\nwikiXX", 100).unwrap_err(),
            ChunkError::Malformed
        );
        assert_eq!(
            scan_chunked(b"g\r\n", 100).unwrap_err(),
            ChunkError::Malformed
        );
    }
}
