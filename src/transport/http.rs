//! Streamable HTTP (MCP `basic/transports.mdx`) on hyper with a pooled, keep-alive
//! connection set, rustls, and a fallback to the legacy HTTP+SSE transport of 2024-11-05.
//!
//! One POST per message, `Accept: application/json, text/event-stream`. A request's reply is
//! one JSON body or an event stream, decoded as bytes arrive (never buffered whole); an event
//! stream may carry notifications and server requests before the response, and a stream that
//! ends before the response is resumed by GET with `Last-Event-ID` when an event id was seen.
//! `Mcp-Session-Id` comes only from a successful initialize reply; `MCP-Protocol-Version`
//! goes on every request after initialize. The bearer token goes on every request to the
//! configured origin and nowhere else: redirects are never followed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;

use super::{LinkEvent, LinkEvents, Secret, WireLog};
use crate::jsonrpc::{self, Id, Message};
use crate::session::{Delivery, Failure, FailureKind, ResumePolicy, Resumption};
use crate::sse;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
/// The longest session id accepted; the specification only says it must be visible ASCII.
const MAX_SESSION_ID_BYTES: usize = 1024;
/// How much of an error body is kept for the message.
const ERROR_BODY_BYTES: usize = 512;

/// Size limits for what a server sends over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// The largest `application/json` reply body, in bytes.
    pub max_body_bytes: usize,
    /// Line and event limits for `text/event-stream` replies.
    pub sse: sse::Limits,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 16 * 1024 * 1024,
            sse: sse::Limits::default(),
        }
    }
}

/// How to reach one Streamable HTTP endpoint.
#[derive(Clone)]
pub struct HttpConfig {
    /// The MCP endpoint, `http://` or `https://`.
    pub url: Uri,
    /// Sent as `Authorization: Bearer ...` on every request to the endpoint's origin.
    pub bearer_token: Option<Secret>,
    /// Size limits.
    pub limits: HttpLimits,
    /// How response streams that end early are resumed.
    pub resume: ResumePolicy,
    /// How long a notification or response POST may take.
    pub post_timeout: Duration,
    /// How long the `DELETE` that ends a session may take.
    pub close_timeout: Duration,
    /// Fall back to the legacy HTTP+SSE transport when the initialize POST is answered 400,
    /// 404 or 405.
    pub legacy_fallback: bool,
    /// Open the standalone GET stream once the session is initialized, for what the server
    /// sends outside any request (log messages, list changes, its own requests). Off by
    /// default: a session opened for one call does not need it. A server that answers the GET
    /// with 405 offers none; the stream is reopened when it ends (with `Last-Event-ID`, after
    /// the server's `retry` or a backoff), until `resume.max_attempts` tries in a row bring no
    /// event.
    pub server_stream: bool,
    /// Receives a redacted trace of the wire conversation.
    pub wire_log: Option<WireLog>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &self.url)
            .field("bearer_token", &self.bearer_token)
            .field("limits", &self.limits)
            .field("resume", &self.resume)
            .field("legacy_fallback", &self.legacy_fallback)
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// A configuration for `url` with default limits and no token. Fails for anything but an
    /// absolute `http` or `https` URL.
    pub fn new(url: &str) -> Result<Self, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => {
                return Err(format!(
                    "the URL {url:?} must start with http:// or https://"
                ));
            }
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(format!("the URL {url:?} has no host"));
        }
        Ok(HttpConfig {
            url: uri,
            bearer_token: None,
            limits: HttpLimits::default(),
            resume: ResumePolicy::default(),
            post_timeout: Duration::from_secs(30),
            close_timeout: Duration::from_secs(2),
            legacy_fallback: true,
            server_stream: false,
            wire_log: None,
        })
    }
}

/// TLS settings for a pool.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Certificates trusted in addition to the webpki roots (for tests and private CAs).
    pub extra_roots: Vec<CertificateDer<'static>>,
}

type Connector = hyper_rustls::HttpsConnector<CountingConnector>;

/// A pool of keep-alive HTTP/1.1 and HTTP/2 connections (ALPN decides), shared by every
/// session made with it. Cheap to clone. Create one per tokio runtime: its connections live
/// on the runtime that opened them.
#[derive(Clone)]
pub struct HttpPool {
    client: HyperClient<Connector, Full<Bytes>>,
    opened: Arc<AtomicU64>,
}

impl std::fmt::Debug for HttpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPool")
            .field("connections_opened", &self.connections_opened())
            .finish()
    }
}

impl HttpPool {
    /// A pool trusting the webpki roots (loaded once per process) and `tls.extra_roots`.
    pub fn new(tls: &TlsOptions) -> Result<Self, String> {
        let mut roots = webpki_root_store().clone();
        for cert in &tls.extra_roots {
            roots
                .add(cert.clone())
                .map_err(|e| format!("an extra root certificate is invalid: {e}"))?;
        }
        let tls_config = rustls::ClientConfig::builder_with_provider(Arc::new(crypto_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup failed: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let opened = Arc::new(AtomicU64::new(0));
        let counting = CountingConnector {
            inner: http,
            opened: opened.clone(),
        };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(counting);
        let client = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(connector);
        Ok(HttpPool { client, opened })
    }

    /// How many connections this pool has opened (a measure of keep-alive reuse).
    pub fn connections_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        self.client.request(request).await
    }
}

/// The webpki roots, parsed once per process.
fn webpki_root_store() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    })
}

#[cfg(not(feature = "aws-lc-rs"))]
fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

#[cfg(feature = "aws-lc-rs")]
fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

/// Counts the TCP connections the pool opens.
#[derive(Clone)]
struct CountingConnector {
    inner: HttpConnector,
    opened: Arc<AtomicU64>,
}

impl tower_service::Service<Uri> for CountingConnector {
    type Response = <HttpConnector as tower_service::Service<Uri>>::Response;
    type Error = <HttpConnector as tower_service::Service<Uri>>::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let opened = self.opened.clone();
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let connection = connecting.await?;
            opened.fetch_add(1, Ordering::Relaxed);
            Ok(connection)
        })
    }
}

/// What the link learns during the session and puts on later requests.
#[derive(Debug, Default)]
struct LinkState {
    session_id: Option<String>,
    protocol_version: Option<&'static str>,
    /// Where messages go when the server speaks the legacy HTTP+SSE transport.
    legacy_endpoint: Option<Uri>,
    /// The task reading the legacy event stream; aborting it closes the stream, which ends a
    /// legacy session.
    legacy_stream: Option<tokio::task::AbortHandle>,
    /// The task reading the standalone GET stream, when `server_stream` asked for it.
    server_stream: Option<tokio::task::AbortHandle>,
}

/// One session's connection to a Streamable HTTP endpoint: a handle to the shared state plus
/// the queue of one-way messages (notifications and answers to server requests), which a task
/// of its own POSTs one at a time, in order. Requests go out on tasks of their own, so a long
/// call never holds up a notification.
#[derive(Clone)]
pub(crate) struct HttpLink {
    core: Arc<LinkCore>,
    one_way: tokio::sync::mpsc::Sender<OneWay>,
}

/// A one-way message, and who wants to know when it was delivered.
type OneWay = (Message<'static>, Option<tokio::sync::oneshot::Sender<()>>);

/// How many one-way messages may wait; a server that floods us with requests while not
/// reading our answers cannot grow the queue past this.
const ONE_WAY_QUEUE: usize = 1024;

impl std::ops::Deref for HttpLink {
    type Target = LinkCore;
    fn deref(&self) -> &LinkCore {
        &self.core
    }
}

/// What the link's tasks share.
pub(crate) struct LinkCore {
    pool: HttpPool,
    config: Arc<HttpConfig>,
    state: Mutex<LinkState>,
    events: LinkEvents,
    jitter: AtomicU64,
}

/// Per-request transport options.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RequestLimits {
    /// Bytes of reply (bodies and streams, resumptions included) the request may receive.
    pub max_response_bytes: Option<u64>,
}

impl HttpLink {
    /// A link, with its one-way sender task started on the current runtime. The task ends
    /// when the last handle is dropped.
    pub(crate) fn new(pool: HttpPool, config: HttpConfig, events: LinkEvents) -> Self {
        let seed = std::time::SystemTime::UNIX_EPOCH
            .elapsed()
            .map_or(0x9E37_79B9, |d| d.as_nanos() as u64)
            | 1;
        let core = Arc::new(LinkCore {
            pool,
            config: Arc::new(config),
            state: Mutex::new(LinkState::default()),
            events,
            jitter: AtomicU64::new(seed),
        });
        let (one_way, queue) = tokio::sync::mpsc::channel(ONE_WAY_QUEUE);
        tokio::spawn(send_one_way_in_order(core.clone(), queue));
        HttpLink { core, one_way }
    }

    /// Sends a request on a task of its own and returns the task, so the driver can abort it
    /// when it gives up on the request. One-way messages are queued for the ordered sender;
    /// `delivered` fires once the server has answered their POST (or it failed).
    pub(crate) fn send(
        &self,
        message: Message<'static>,
        limits: RequestLimits,
        delivered: Option<tokio::sync::oneshot::Sender<()>>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let Message::Request(request) = &message else {
            if self.one_way.try_send((message, delivered)).is_err() {
                self.log(|| "dropped a one-way message: the queue is full".to_owned());
            }
            return None;
        };
        let id = request.id.clone();
        let is_initialize = request.method == crate::mcp::methods::INITIALIZE;
        let core = self.core.clone();
        Some(tokio::spawn(async move {
            if let Err(failure) = core
                .request_exchange(&message, &id, is_initialize, limits)
                .await
            {
                core.report(LinkEvent::RequestFailed(id, failure)).await;
            }
        }))
    }
}

/// POSTs one-way messages one at a time, in the order the session produced them: so that,
/// for instance, `notifications/cancelled` reaches the server before our answer to the
/// server request that made us cancel.
async fn send_one_way_in_order(
    core: Arc<LinkCore>,
    mut queue: tokio::sync::mpsc::Receiver<OneWay>,
) {
    while let Some((message, delivered)) = queue.recv().await {
        core.one_way(&message).await;
        if let Some(delivered) = delivered {
            let _ = delivered.send(());
        }
    }
}

impl HttpLink {
    /// Opens the standalone GET stream on a task of its own, when the config asks for it
    /// ([`HttpConfig::server_stream`]) and the session is not a legacy one (whose event stream
    /// is already open). Called once the session is initialized.
    pub(crate) fn open_server_stream(&self) {
        if !self.config.server_stream {
            return;
        }
        let mut state = self.lock();
        if state.legacy_stream.is_some() || state.server_stream.is_some() {
            return;
        }
        let task = tokio::spawn(self.core.clone().server_stream());
        state.server_stream = Some(task.abort_handle());
    }
}

impl LinkCore {
    /// Records the negotiated revision, sent as `MCP-Protocol-Version` from now on.
    pub(crate) fn set_protocol_version(&self, version: &'static str) {
        self.lock().protocol_version = Some(version);
    }

    /// The session id the server assigned, if any.
    pub(crate) fn session_id(&self) -> Option<String> {
        self.lock().session_id.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LinkState> {
        // A panic while holding this lock cannot leave the state half-written (each access
        // is a single assignment or clone), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn log(&self, line: impl FnOnce() -> String) {
        if let Some(log) = &self.config.wire_log {
            let line = line();
            // A line may end in an excerpt cut from a longer body.
            let line = match &self.config.bearer_token {
                Some(token) => token.redact_cut(&line),
                None => line,
            };
            log(&line);
        }
    }

    async fn report(&self, event: LinkEvent) {
        // The driver may be gone (the client was dropped); nothing is waiting then.
        let _ = self.events.send(event).await;
    }

    /// Builds a request to the endpoint (or the legacy message endpoint) with every header
    /// this session needs.
    fn build(&self, method: Method, uri: Uri, body: Bytes, accept: &str) -> Request<Full<Bytes>> {
        let state = self.lock();
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(uri)
            .header(ACCEPT, accept);
        if method == Method::POST {
            builder = builder.header(CONTENT_TYPE, "application/json");
        }
        if let Some(token) = &self.config.bearer_token {
            builder = builder.header(AUTHORIZATION, format!("Bearer {}", token.expose()));
        }
        if let Some(session_id) = &state.session_id {
            builder = builder.header(SESSION_ID, session_id);
        }
        if let Some(version) = state.protocol_version {
            builder = builder.header(PROTOCOL_VERSION, version);
        }
        drop(state);
        builder
            .body(Full::new(body))
            .unwrap_or_else(|_| Request::new(Full::new(Bytes::new())))
    }

    fn message_uri(&self) -> Uri {
        self.lock()
            .legacy_endpoint
            .clone()
            .unwrap_or_else(|| self.config.url.clone())
    }

    /// POSTs a notification or a response: the server answers 202 (or any 2xx); nothing is
    /// read beyond a bounded error body.
    async fn one_way(&self, message: &Message<'static>) {
        let body = Bytes::from(message.encode());
        self.log(|| {
            format!(
                "> POST {} {}",
                self.message_uri(),
                String::from_utf8_lossy(&body)
            )
        });
        let request = self.build(Method::POST, self.message_uri(), body, ACCEPT_BOTH);
        let exchange = async {
            let response = self.pool.send(request).await.map_err(|e| e.to_string())?;
            let status = response.status();
            let body = read_prefix(response.into_body(), ERROR_BODY_BYTES).await;
            Ok::<_, String>((status, body))
        };
        match tokio::time::timeout(self.config.post_timeout, exchange).await {
            Ok(Ok((status, body))) => {
                self.log(|| format!("< {status} {}", String::from_utf8_lossy(&body)));
            }
            Ok(Err(error)) => self.log(|| format!("< error: {error}")),
            Err(_) => self.log(|| "< timed out".to_owned()),
        }
    }

    /// POSTs a request and reads its reply until the response arrives.
    async fn request_exchange(
        self: &Arc<Self>,
        message: &Message<'static>,
        id: &Id,
        is_initialize: bool,
        limits: RequestLimits,
    ) -> Result<(), Failure> {
        let body = Bytes::from(message.encode());
        let mut budget = ByteBudget::new(limits.max_response_bytes);
        let uri = self.message_uri();
        self.log(|| format!("> POST {uri} {}", String::from_utf8_lossy(&body)));
        let request = self.build(Method::POST, uri, body.clone(), ACCEPT_BOTH);
        let response = self.pool.send(request).await.map_err(send_failure)?;
        let status = response.status();
        self.log(|| format!("< {status} {}", content_type(&response).unwrap_or("")));
        if is_initialize
            && self.config.legacy_fallback
            && self.lock().legacy_endpoint.is_none()
            && matches!(status.as_u16(), 400 | 404 | 405)
        {
            return self.fall_back_to_legacy(body).await;
        }
        self.check_status(&response, is_initialize).await?;
        if is_initialize && status.is_success() {
            self.capture_session_id(&response)?;
        }
        if self.lock().legacy_endpoint.is_some() {
            // Legacy transport: replies arrive on the event stream, not here.
            return Ok(());
        }
        let reply = classify_reply(&response);
        match reply {
            Reply::Empty => Err(Failure::new(
                FailureKind::Protocol,
                Delivery::MayHaveReached,
                format!(
                    "the server answered {status} with no body to a request; a request needs a \
                     JSON or event-stream reply"
                ),
            )),
            Reply::Json => {
                let body = self
                    .read_json_body(response.into_body(), &mut budget)
                    .await?;
                let packet = jsonrpc::decode(&body).map_err(|e| {
                    Failure::new(
                        FailureKind::Protocol,
                        Delivery::Answered,
                        format!("the JSON reply is not JSON-RPC: {e}"),
                    )
                })?;
                let mut answered = false;
                for message in packet.into_messages() {
                    answered |= is_response_to(&message, id);
                    self.report(LinkEvent::Message(message.into_owned())).await;
                }
                if answered {
                    Ok(())
                } else {
                    Err(Failure::new(
                        FailureKind::Protocol,
                        Delivery::Answered,
                        "the JSON reply does not contain the response",
                    ))
                }
            }
            Reply::EventStream => {
                let mut resumption = Resumption::new(self.config.resume);
                let mut decoder = sse::Decoder::new(self.config.limits.sse);
                let mut body = response.into_body();
                loop {
                    match self
                        .read_stream(&mut body, &mut decoder, &mut resumption, &mut budget, id)
                        .await
                    {
                        StreamEnd::Answered => return Ok(()),
                        StreamEnd::Failed(failure) => return Err(failure),
                        StreamEnd::Ended(why) => {
                            body = self.resume(&mut resumption, &why, &mut decoder).await?;
                        }
                    }
                }
            }
            Reply::Other(kind) => {
                let snippet = read_prefix(response.into_body(), ERROR_BODY_BYTES).await;
                Err(Failure::new(
                    FailureKind::Protocol,
                    Delivery::Answered,
                    format!(
                        "the server answered {status} with content type {kind:?}, not JSON or an \
                         event stream: {}",
                        self.snippet(&snippet)
                    ),
                ))
            }
        }
    }

    /// Waits as the resumption policy says and re-opens the stream with a GET carrying
    /// `Last-Event-ID`; gives up with the reason the stream ended.
    async fn resume(
        &self,
        resumption: &mut Resumption,
        why: &str,
        decoder: &mut sse::Decoder,
    ) -> Result<Incoming, Failure> {
        let lost = |detail: String| {
            Failure::new(
                FailureKind::ConnectionLost,
                Delivery::MayHaveReached,
                detail,
            )
        };
        loop {
            let now = tokio::time::Instant::now();
            let Some(at) = resumption.next_attempt(now.into_std(), self.next_jitter()) else {
                return Err(lost(format!(
                    "the response stream {why} before the response{}",
                    if resumption.last_event_id().is_empty() {
                        " (no event id to resume from)"
                    } else {
                        ", and resuming it failed"
                    }
                )));
            };
            self.log(|| {
                format!(
                    "< the response stream {why} before the response; resuming in {} ms",
                    at.saturating_duration_since(now.into_std()).as_millis()
                )
            });
            tokio::time::sleep_until(at.into()).await;
            let mut request = self.build(
                Method::GET,
                self.config.url.clone(),
                Bytes::new(),
                "text/event-stream",
            );
            if let Ok(value) = HeaderValue::from_str(resumption.last_event_id()) {
                request.headers_mut().insert(LAST_EVENT_ID, value);
            }
            self.log(|| {
                format!(
                    "> GET {} (Last-Event-ID: {})",
                    self.config.url,
                    resumption.last_event_id()
                )
            });
            let response = match self.pool.send(request).await {
                Ok(response) => response,
                Err(error) => {
                    self.log(|| format!("< resume failed: {error}"));
                    continue;
                }
            };
            let status = response.status();
            self.log(|| format!("< {status} {}", content_type(&response).unwrap_or("")));
            if status.is_success() && matches!(classify_reply(&response), Reply::EventStream) {
                decoder.reset_stream();
                return Ok(response.into_body());
            }
            if status == StatusCode::NOT_FOUND && self.lock().session_id.is_some() {
                return Err(Failure::new(
                    FailureKind::SessionExpired,
                    Delivery::MayHaveReached,
                    "the session expired while resuming the response stream",
                ));
            }
            if status == StatusCode::METHOD_NOT_ALLOWED {
                return Err(lost(format!(
                    "the response stream {why} before the response, and the server does not \
                     allow resuming it (GET answered 405)"
                )));
            }
        }
    }

    /// Reads events until the response to `id` arrives or the stream ends.
    async fn read_stream(
        &self,
        body: &mut Incoming,
        decoder: &mut sse::Decoder,
        resumption: &mut Resumption,
        budget: &mut ByteBudget,
        id: &Id,
    ) -> StreamEnd {
        let mut answered = false;
        loop {
            let frame = match body.frame().await {
                None => {
                    return if answered {
                        StreamEnd::Answered
                    } else {
                        StreamEnd::Ended("ended".to_owned())
                    };
                }
                Some(Err(error)) => {
                    return if answered {
                        StreamEnd::Answered
                    } else {
                        StreamEnd::Ended(format!("broke ({error})"))
                    };
                }
                Some(Ok(frame)) => frame,
            };
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            if let Err(failure) = budget.take(chunk.len()) {
                return StreamEnd::Failed(failure);
            }
            let mut messages = Vec::new();
            let mut refused = None;
            // `decode` reads the events that lie wholly inside the frame where they are.
            let decoded = decoder.decode(&chunk, |event| {
                if refused.is_some() || event.data().is_empty() || event.event_type() != "message" {
                    // After a refusal nothing more is taken; otherwise this is a priming
                    // event, or an event type MCP does not use.
                    return;
                }
                self.log(|| format!("< event {}", event.data()));
                match jsonrpc::decode(event.data().as_bytes()) {
                    Ok(packet) => {
                        messages.extend(packet.into_messages().into_iter().map(Message::into_owned))
                    }
                    Err(error) => {
                        refused = Some(Failure::new(
                            FailureKind::Protocol,
                            Delivery::MayHaveReached,
                            format!("an event on the response stream is not JSON-RPC: {error}"),
                        ));
                    }
                }
            });
            if let Err(error) = decoded {
                refused.get_or_insert_with(|| {
                    Failure::new(
                        FailureKind::LimitExceeded,
                        Delivery::MayHaveReached,
                        format!("the response stream was refused: {error}"),
                    )
                });
            }
            resumption.observe(decoder.last_event_id(), decoder.retry_ms());
            for message in messages {
                answered |= is_response_to(&message, id);
                self.report(LinkEvent::Message(message)).await;
            }
            if let Some(failure) = refused {
                return StreamEnd::Failed(failure);
            }
            if answered {
                // The server closes the stream after the response. Read on to its end, briefly
                // and boundedly, so the connection can return to the pool; a server that keeps
                // the stream open cannot hold the request longer than that.
                drain(body).await;
                return StreamEnd::Answered;
            }
        }
    }

    async fn read_json_body(
        &self,
        mut body: Incoming,
        budget: &mut ByteBudget,
    ) -> Result<Vec<u8>, Failure> {
        let limit = self.config.limits.max_body_bytes;
        let mut collected = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                Failure::new(
                    FailureKind::ConnectionLost,
                    Delivery::MayHaveReached,
                    format!("the reply body broke off: {e}"),
                )
            })?;
            if let Ok(chunk) = frame.into_data() {
                budget.take(chunk.len())?;
                if collected.len() + chunk.len() > limit {
                    return Err(Failure::new(
                        FailureKind::LimitExceeded,
                        Delivery::MayHaveReached,
                        format!("the reply body is larger than the {limit}-byte limit"),
                    ));
                }
                collected.extend_from_slice(&chunk);
            }
        }
        Ok(collected)
    }

    /// Turns statuses that are not a usable reply into failures.
    async fn check_status(
        &self,
        response: &Response<Incoming>,
        is_initialize: bool,
    ) -> Result<(), Failure> {
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let has_session = self.lock().session_id.is_some();
        let failure = match status.as_u16() {
            300..=399 => Failure::new(
                FailureKind::HttpStatus {
                    status: status.as_u16(),
                },
                Delivery::Refused,
                format!(
                    "the server answered {status} (a redirect{}); redirects are not followed",
                    response
                        .headers()
                        .get(http::header::LOCATION)
                        .and_then(|l| l.to_str().ok())
                        .map(|l| format!(" to {}", self.snippet(l.as_bytes())))
                        .unwrap_or_default()
                ),
            ),
            401 | 403 => Failure::new(
                FailureKind::Unauthorized {
                    status: status.as_u16(),
                },
                Delivery::Refused,
                describe_challenge(status, response.headers(), &|text| self.redact(text)),
            ),
            404 if has_session && !is_initialize => Failure::new(
                FailureKind::SessionExpired,
                Delivery::Refused,
                "the server no longer knows this session (404)",
            ),
            400..=499 => Failure::new(
                FailureKind::HttpStatus {
                    status: status.as_u16(),
                },
                Delivery::Refused,
                format!("the server refused the request with {status}"),
            ),
            _ => Failure::new(
                FailureKind::HttpStatus {
                    status: status.as_u16(),
                },
                Delivery::MayHaveReached,
                format!("the server failed with {status}"),
            ),
        };
        Err(failure)
    }

    fn capture_session_id(&self, response: &Response<Incoming>) -> Result<(), Failure> {
        let Some(value) = response.headers().get(SESSION_ID) else {
            return Ok(());
        };
        let valid = value.len() <= MAX_SESSION_ID_BYTES
            && value.as_bytes().iter().all(|b| (0x21..=0x7E).contains(b));
        let session_id = value.to_str().ok().filter(|_| valid).ok_or_else(|| {
            Failure::new(
                FailureKind::Protocol,
                Delivery::Answered,
                "the server sent an invalid Mcp-Session-Id (it must be visible ASCII)",
            )
        })?;
        self.lock().session_id = Some(session_id.to_owned());
        Ok(())
    }

    /// The server does not speak Streamable HTTP: open the legacy event stream, wait for its
    /// `endpoint` event, and send the initialize request there.
    async fn fall_back_to_legacy(self: &Arc<Self>, initialize: Bytes) -> Result<(), Failure> {
        let refused =
            |detail: String| Failure::new(FailureKind::Protocol, Delivery::Refused, detail);
        let request = self.build(
            Method::GET,
            self.config.url.clone(),
            Bytes::new(),
            "text/event-stream",
        );
        self.log(|| format!("> GET {} (legacy HTTP+SSE)", self.config.url));
        let response = self.pool.send(request).await.map_err(send_failure)?;
        let status = response.status();
        if !status.is_success() || !matches!(classify_reply(&response), Reply::EventStream) {
            self.check_status(&response, true).await?;
            return Err(refused(format!(
                "the server refused the initialize POST and its GET answered {status} without an \
                 event stream: neither Streamable HTTP nor the legacy HTTP+SSE transport"
            )));
        }
        let mut body = response.into_body();
        let mut decoder = sse::Decoder::new(self.config.limits.sse);
        // Events are taken one at a time here (not with `decode`), so that whatever follows
        // the endpoint event in the same frame stays in the decoder for the stream task.
        let endpoint = loop {
            match decoder.next_event() {
                Ok(Some(event)) if event.event_type() == "endpoint" => {
                    break event.data().to_owned();
                }
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(error) => {
                    return Err(refused(format!(
                        "the legacy event stream was refused: {error}"
                    )));
                }
            }
            let Some(Ok(frame)) = body.frame().await else {
                return Err(refused(
                    "the legacy event stream ended before its endpoint event".to_owned(),
                ));
            };
            if let Ok(chunk) = frame.into_data() {
                decoder.push(&chunk);
            }
        };
        let endpoint = resolve_same_origin(&self.config.url, endpoint.trim()).map_err(refused)?;
        self.log(|| format!("< legacy endpoint {endpoint}"));
        self.lock().legacy_endpoint = Some(endpoint.clone());
        self.report(LinkEvent::LegacyTransport).await;
        let stream = tokio::spawn(self.clone().legacy_stream(body, decoder));
        self.lock().legacy_stream = Some(stream.abort_handle());
        // The legacy transport belongs to revision 2024-11-05: offer that one there.
        let initialize = offer_legacy_version(&initialize);
        self.log(|| format!("> POST {endpoint} {}", String::from_utf8_lossy(&initialize)));
        let request = self.build(Method::POST, endpoint, initialize, ACCEPT_BOTH);
        let response = self.pool.send(request).await.map_err(send_failure)?;
        self.log(|| format!("< {}", response.status()));
        self.check_status(&response, true).await?;
        Ok(())
    }

    /// Reads the standalone GET stream, reopening it when it ends, until the server says it
    /// offers none or it stays quiet (see [`HttpConfig::server_stream`]). The link's close
    /// aborts it.
    async fn server_stream(self: Arc<Self>) {
        let policy = self.config.resume;
        let mut decoder = sse::Decoder::new(self.config.limits.sse);
        let mut quiet_tries = 0;
        // Also ends when nobody listens any more (a client dropped without closing).
        while !self.events.is_closed() {
            let mut request = self.build(
                Method::GET,
                self.config.url.clone(),
                Bytes::new(),
                "text/event-stream",
            );
            let last_event_id = decoder.last_event_id().to_owned();
            if !last_event_id.is_empty()
                && let Ok(value) = HeaderValue::from_str(&last_event_id)
            {
                request.headers_mut().insert(LAST_EVENT_ID, value);
            }
            self.log(|| {
                format!(
                    "> GET {} (server stream, Last-Event-ID: {last_event_id:?})",
                    self.config.url
                )
            });
            let heard = match self.pool.send(request).await {
                Err(error) => {
                    self.log(|| format!("< server stream: {}", error_chain(&error)));
                    false
                }
                Ok(response) => {
                    let status = response.status();
                    self.log(|| format!("< {status} {}", content_type(&response).unwrap_or("")));
                    if status.is_success()
                        && matches!(classify_reply(&response), Reply::EventStream)
                    {
                        decoder.reset_stream();
                        match self
                            .read_server_stream(response.into_body(), &mut decoder)
                            .await
                        {
                            Ok(heard) => heard,
                            Err(reason) => {
                                self.log(|| format!("< server stream stopped: {reason}"));
                                return;
                            }
                        }
                    } else {
                        let _ = read_prefix(response.into_body(), ERROR_BODY_BYTES).await;
                        if !(status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS) {
                            // 405: the server offers no such stream; 404: the session is gone;
                            // 409: it allows one stream and has it; 401/403: not ours to fix.
                            self.log(|| format!("< no server stream ({status})"));
                            return;
                        }
                        false
                    }
                }
            };
            quiet_tries = if heard { 0 } else { quiet_tries + 1 };
            if quiet_tries >= policy.max_attempts {
                self.log(|| format!("< server stream given up after {quiet_tries} quiet tries"));
                return;
            }
            let delay = policy.delay(
                decoder.retry_ms().map(Duration::from_millis),
                quiet_tries,
                self.next_jitter(),
            );
            self.log(|| {
                format!(
                    "< server stream ended; reopening in {} ms",
                    delay.as_millis()
                )
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// Forwards the messages of one standalone GET stream until it ends. Says whether any event
    /// arrived; an error means the stream was refused (a limit), and is not reopened.
    async fn read_server_stream(
        &self,
        mut body: Incoming,
        decoder: &mut sse::Decoder,
    ) -> Result<bool, String> {
        let mut heard = false;
        while !self.events.is_closed() {
            let chunk = match body.frame().await {
                None | Some(Err(_)) => return Ok(heard),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(chunk) => chunk,
                    Err(_) => continue,
                },
            };
            match self.forward_events(decoder, &chunk).await {
                Ok(events) => heard |= events,
                Err(error) => return Err(format!("the server stream was refused: {error}")),
            }
        }
        Err("nobody listens any more".to_owned())
    }

    /// Decodes a chunk of a stream that carries no request's response (the standalone stream,
    /// the legacy one) and forwards its messages; says whether the chunk completed any event.
    /// Events that are not JSON-RPC messages are skipped: nobody waits on them.
    async fn forward_events(
        &self,
        decoder: &mut sse::Decoder,
        chunk: &[u8],
    ) -> Result<bool, sse::Error> {
        let mut messages = Vec::new();
        let mut events = false;
        let decoded = decoder.decode(chunk, |event| {
            events = true;
            if event.event_type() == "message" && !event.data().is_empty() {
                self.log(|| format!("< event {}", event.data()));
                if let Ok(packet) = jsonrpc::decode(event.data().as_bytes()) {
                    messages.extend(packet.into_messages().into_iter().map(Message::into_owned));
                }
            }
        });
        for message in messages {
            self.report(LinkEvent::Message(message)).await;
        }
        decoded.map(|()| events)
    }

    /// Forwards every message of the legacy event stream until it ends.
    async fn legacy_stream(self: Arc<Self>, mut body: Incoming, mut decoder: sse::Decoder) {
        // The first round reads no frame: it hands on what the handshake's last frame held
        // after the endpoint event.
        let mut chunk = Bytes::new();
        let reason = 'stream: loop {
            if let Err(error) = self.forward_events(&mut decoder, &chunk).await {
                break format!("the legacy event stream was refused: {error}");
            }
            chunk = loop {
                match body.frame().await {
                    None => break 'stream "the legacy event stream ended".to_owned(),
                    Some(Err(error)) => {
                        break 'stream format!("the legacy event stream broke ({error})");
                    }
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            break data;
                        }
                    }
                }
            };
        };
        self.report(LinkEvent::Down(Failure::new(
            FailureKind::ConnectionLost,
            Delivery::MayHaveReached,
            reason,
        )))
        .await;
    }

    /// Ends the session with `DELETE` (when the server gave a session id). Returns the status,
    /// if one came back within the close timeout; 405 and 404 are a normal end too.
    pub(crate) async fn close(&self) -> Option<StatusCode> {
        if let Some(stream) = self.lock().server_stream.take() {
            stream.abort();
        }
        if let Some(stream) = self.lock().legacy_stream.take() {
            // A legacy (2024-11-05) session ends when its event stream closes.
            stream.abort();
            return None;
        }
        self.lock().session_id.as_ref()?;
        let exchange = async {
            // DELETE is idempotent, so a second try is safe when the first fails to get an
            // answer (typically a pooled keep-alive connection the server had just closed).
            for attempt in 1..=2 {
                let request = self.build(
                    Method::DELETE,
                    self.config.url.clone(),
                    Bytes::new(),
                    ACCEPT_BOTH,
                );
                self.log(|| format!("> DELETE {}", self.config.url));
                match self.pool.send(request).await {
                    Ok(response) => {
                        let status = response.status();
                        // Drain a small body so the connection can go back to the pool.
                        let _ = read_prefix(response.into_body(), ERROR_BODY_BYTES).await;
                        return Some(status);
                    }
                    Err(error) => {
                        self.log(|| {
                            format!("< DELETE attempt {attempt} failed: {}", error_chain(&error))
                        });
                    }
                }
            }
            None
        };
        let status = tokio::time::timeout(self.config.close_timeout, exchange)
            .await
            .ok()
            .flatten();
        self.log(|| format!("< DELETE {status:?}"));
        status
    }

    fn next_jitter(&self) -> f64 {
        let mut x = self.jitter.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.jitter.store(x, Ordering::Relaxed);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `text` with the bearer token, if any, replaced.
    fn redact(&self, text: &str) -> String {
        match &self.config.bearer_token {
            Some(token) => token.redact(text),
            None => text.to_owned(),
        }
    }

    /// A bounded, printable, redacted excerpt of server-sent bytes for an error message.
    fn snippet(&self, bytes: &[u8]) -> String {
        let text: String = String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_BODY_BYTES)])
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        match &self.config.bearer_token {
            Some(token) => token.redact_cut(text.trim()),
            None => text.trim().to_owned(),
        }
    }
}

/// Why `read_stream` stopped.
enum StreamEnd {
    Answered,
    Ended(String),
    Failed(Failure),
}

/// What kind of reply a response is, by status and content type.
enum Reply {
    Empty,
    Json,
    EventStream,
    Other(String),
}

fn content_type(response: &Response<Incoming>) -> Option<&str> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
}

/// Media types are compared without parameters and case-insensitively
/// (`text/event-stream; charset=utf-8` is an event stream).
fn classify_reply(response: &Response<Incoming>) -> Reply {
    let status = response.status();
    let declared_empty = response
        .headers()
        .get(CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() == b"0");
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT || declared_empty {
        return Reply::Empty;
    }
    let Some(value) = content_type(response) else {
        return Reply::Other(String::new());
    };
    let media_type = value.split(';').next().unwrap_or("").trim();
    if media_type.eq_ignore_ascii_case("application/json") {
        Reply::Json
    } else if media_type.eq_ignore_ascii_case("text/event-stream") {
        Reply::EventStream
    } else {
        Reply::Other(media_type.chars().take(100).collect())
    }
}

fn is_response_to(message: &Message<'_>, id: &Id) -> bool {
    matches!(message, Message::Response(response) if response.id.as_ref() == Some(id))
}

fn send_failure(error: hyper_util::client::legacy::Error) -> Failure {
    if error.is_connect() {
        Failure::new(
            FailureKind::Connect,
            Delivery::NotSent,
            format!("could not connect: {}", error_chain(&error)),
        )
    } else {
        Failure::new(
            FailureKind::ConnectionLost,
            Delivery::MayHaveReached,
            format!("the connection failed: {}", error_chain(&error)),
        )
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How long, and how many bytes, a finished reply stream is read on for, so its connection
/// can be reused.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);
const DRAIN_BYTES: usize = 64 * 1024;

/// Reads what is left of a body after its response, within [`DRAIN_TIMEOUT`] and
/// [`DRAIN_BYTES`], discarding it.
async fn drain(body: &mut Incoming) {
    let reading = async {
        let mut read = 0;
        while read <= DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, |d| d.len()),
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, reading).await;
}

/// The initialize request with `protocolVersion` set to 2024-11-05.
fn offer_legacy_version(initialize: &Bytes) -> Bytes {
    let Ok(mut message) = serde_json::from_slice::<serde_json::Value>(initialize) else {
        return initialize.clone();
    };
    if let Some(params) = message.get_mut("params").and_then(|p| p.as_object_mut()) {
        params.insert(
            "protocolVersion".to_owned(),
            serde_json::Value::from(crate::mcp::V2024_11_05),
        );
    }
    serde_json::to_vec(&message).map_or_else(|_| initialize.clone(), Bytes::from)
}

/// Reads at most `limit` bytes of a body, for error messages and draining.
async fn read_prefix(mut body: Incoming, limit: usize) -> Vec<u8> {
    let mut collected = Vec::new();
    while collected.len() < limit {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(chunk) = frame.into_data() {
                    let room = limit - collected.len();
                    collected.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
            }
            _ => break,
        }
    }
    collected
}

/// Names the `WWW-Authenticate` challenge of a 401 or 403: scheme, `resource_metadata`,
/// `scope`, `error`. Each challenge goes through `redact` whole, before its parameters are
/// cut to length: a cut could split an echoed credential so that it no longer matches.
fn describe_challenge(
    status: StatusCode,
    headers: &http::HeaderMap,
    redact: &dyn Fn(&str) -> String,
) -> String {
    let challenges: Vec<String> = headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(redact)
        .collect();
    if challenges.is_empty() {
        return format!(
            "the server refused the credentials with {status} and sent no WWW-Authenticate challenge"
        );
    }
    let mut described = Vec::new();
    for challenge in &challenges {
        let scheme = challenge.split_whitespace().next().unwrap_or("");
        let mut parts = vec![format!("scheme {scheme}")];
        for key in [
            "resource_metadata",
            "scope",
            "error",
            "error_description",
            "realm",
        ] {
            if let Some(value) = auth_param(challenge, key) {
                parts.push(format!("{key}={value:?}"));
            }
        }
        described.push(parts.join(", "));
    }
    format!(
        "the server refused the credentials with {status}; WWW-Authenticate: {}",
        described.join("; ")
    )
}

/// The value of one `key=value` or `key="value"` parameter of an auth challenge.
fn auth_param(challenge: &str, key: &str) -> Option<String> {
    let mut rest = challenge;
    while let Some(position) = rest.find(key) {
        let before_ok =
            position == 0 || matches!(rest.as_bytes()[position - 1], b' ' | b',' | b'\t');
        let after = rest[position + key.len()..].trim_start();
        if before_ok && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let value = if let Some(quoted) = value.strip_prefix('"') {
                quoted.split('"').next().unwrap_or("")
            } else {
                value.split([',', ' ']).next().unwrap_or("")
            };
            return Some(value.chars().take(256).collect());
        }
        rest = &rest[position + key.len()..];
    }
    None
}

/// Resolves the legacy `endpoint` event's URI against the base URL, refusing another origin
/// (the bearer token must never go there).
fn resolve_same_origin(base: &Uri, reference: &str) -> Result<Uri, String> {
    let resolved: Uri = if reference.starts_with("http://") || reference.starts_with("https://") {
        reference
            .parse()
            .map_err(|e| format!("the legacy endpoint {reference:?} is not a URI: {e}"))?
    } else {
        let path = if reference.starts_with('/') {
            reference.to_owned()
        } else {
            let base_path = base.path();
            let directory = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
            format!("{directory}{reference}")
        };
        let scheme = base.scheme_str().unwrap_or("http");
        let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
        format!("{scheme}://{authority}{path}")
            .parse()
            .map_err(|e| format!("the legacy endpoint {reference:?} is not a URI: {e}"))?
    };
    let same_origin = resolved.scheme() == base.scheme()
        && resolved.host() == base.host()
        && resolved.port_u16().or(default_port(&resolved))
            == base.port_u16().or(default_port(base));
    if same_origin {
        Ok(resolved)
    } else {
        Err(format!(
            "the legacy endpoint {reference:?} is on another origin than {base}; refusing to \
             send messages (and credentials) there"
        ))
    }
}

fn default_port(uri: &Uri) -> Option<u16> {
    match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    }
}

/// The failure of a request whose reply passed its byte budget (`max_response_bytes`).
pub(crate) fn over_budget(limit: u64) -> Failure {
    Failure::new(
        FailureKind::ReplyOverBudget { limit },
        Delivery::MayHaveReached,
        format!("the reply is larger than the {limit}-byte output limit"),
    )
}

/// Counts reply bytes against a request's limit, across resumptions.
struct ByteBudget {
    remaining: Option<u64>,
    limit: u64,
}

impl ByteBudget {
    fn new(limit: Option<u64>) -> Self {
        ByteBudget {
            remaining: limit,
            limit: limit.unwrap_or(u64::MAX),
        }
    }

    fn take(&mut self, bytes: usize) -> Result<(), Failure> {
        let Some(remaining) = &mut self.remaining else {
            return Ok(());
        };
        *remaining = remaining
            .checked_sub(bytes as u64)
            .ok_or_else(|| over_budget(self.limit))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut headers = http::HeaderMap::new();
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
            describe_challenge(
                StatusCode::FORBIDDEN,
                &http::HeaderMap::new(),
                &str::to_owned
            )
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
}
