//! The Streamable HTTP driver: hyper with a pooled, keep-alive connection set and rustls,
//! under the sans-IO `Exchange`, which decides everything the
//! protocol says (what to send, how to read each reply, resumption, the legacy fallback).
//!
//! The driver only moves bytes: each request the machine asks for
//! (`Output::Send`) becomes a hyper request, polled by the
//! connection's own driver task, whose response head, body chunks and end go to the machine
//! as frames, one at a time and only when the driver asks (so a server that floods waits in
//! its socket buffers instead of filling memory); an abort drops the request, and with it the
//! response. The client driver owns the clock and passes the time in.
//!
//! A pool's TLS settings ([`TlsOptions`]: roots, client certificate) and proxy
//! ([`ProxyConfig`]: CONNECT tunnels) are fixed when it is made; the types are defined in the
//! private `transport::tls` and `transport::proxy` modules and exported here.

use crate::idmap::IdMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::exchange::{HttpRequest, StreamId, TransportError, WallClock};
pub use crate::exchange::{
    config::{EndpointError, EndpointProblem, ExtraHeaders, HeaderError, HttpConfig, HttpLimits},
    overload::OverloadPolicy,
};

/// The wall clock as a response head arrives, for a `Retry-After` HTTP-date the response
/// gives without a `Date` (the sans-IO exchange reads no clock).
#[allow(clippy::disallowed_methods)] // The transport driver owns the clock.
pub(crate) fn wall_clock() -> WallClock {
    WallClock(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs()),
    )
}

use super::proxy;
pub use super::proxy::{ProxyConfig, ProxyError};
use super::tls;
pub use super::tls::{ClientCert, Roots, TlsError, TlsOptions};

type Connector = WatchingConnector<hyper_rustls::HttpsConnector<RoutingConnector>>;

/// A pool of keep-alive HTTP/1.1 and HTTP/2 connections (ALPN decides), shared by every
/// session made with it. Cheap to clone. Create one per tokio runtime: its connections live
/// on the runtime that opened them. Its TLS settings and proxy are fixed when it is made;
/// sessions that need others need a pool of their own.
#[derive(Clone)]
pub struct HttpPool {
    client: HyperClient<Connector, Full<Bytes>>,
    opened: Arc<AtomicU64>,
    /// How many connects are under way (see [`HttpPool::connects_settled`]).
    connecting: Arc<tokio::sync::watch::Sender<usize>>,
    tls: Arc<TlsOptions>,
    proxy: Arc<ProxyConfig>,
    lanes: Arc<Lanes>,
}

impl std::fmt::Debug for HttpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPool")
            .field("connections_opened", &self.connections_opened())
            .field("roots", &self.tls.roots)
            .field("client_cert", &self.tls.client_cert.is_some())
            .field("proxy", &self.proxy)
            .field("origin_limit", &self.lanes.limit)
            .field("origin_patience", &self.lanes.patience)
            .finish()
    }
}

impl HttpPool {
    /// A pool with these TLS settings that connects directly (no proxy).
    ///
    /// # Errors
    ///
    /// A file named in `tls` that cannot be read or used, or a root rustls refuses.
    pub fn new(tls: &TlsOptions) -> Result<Self, TlsError> {
        Self::with_proxy(tls, ProxyConfig::default())
    }

    /// A pool with these TLS settings whose connections go through `proxy` (a CONNECT tunnel
    /// for `http` and `https` targets alike; see [`ProxyConfig`]).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_proxy(tls: &TlsOptions, proxy: ProxyConfig) -> Result<Self, TlsError> {
        let tls_config = tls::client_config(tls, crypto_provider())?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let opened = Arc::new(AtomicU64::new(0));
        let proxy = Arc::new(proxy);
        let routing = RoutingConnector {
            inner: http,
            proxy: proxy.clone(),
            opened: opened.clone(),
        };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(routing);
        let connecting = Arc::new(tokio::sync::watch::Sender::new(0));
        let connector = WatchingConnector {
            inner: connector,
            connecting: connecting.clone(),
        };
        let client = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(connector);
        Ok(HttpPool {
            client,
            opened,
            connecting,
            tls: Arc::new(tls.clone()),
            proxy,
            lanes: Arc::new(Lanes::new(DEFAULT_ORIGIN_LIMIT, DEFAULT_ORIGIN_PATIENCE)),
        })
    }

    /// This pool, with at most `in_flight` requests to one origin over HTTP/1.1 before the
    /// next one waits, up to `patience`, for one of them to end and free its connection;
    /// after `patience` it goes out anyway, on a connection of its own (0: never wait).
    ///
    /// A burst of calls to one origin then reuses a few connections instead of opening one
    /// per call (the default: 16 in flight, 100 ms of patience), and
    /// a call never waits longer than `patience` behind slow ones. Streams that stay open
    /// (a `GET` event stream, `subscriptions/listen`) are not counted, nor are origins that
    /// answered over HTTP/2, whose requests share one connection.
    pub fn with_origin_limit(mut self, in_flight: usize, patience: Duration) -> HttpPool {
        self.lanes = Arc::new(Lanes::new(in_flight, patience));
        self
    }

    /// How many connections this pool has opened (a measure of keep-alive reuse). Through a
    /// proxy, each is a connection to the proxy carrying one tunnel.
    pub fn connections_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Returns once no connection of this pool is being opened (TCP, proxy tunnel and TLS
    /// handshake), at once when none is.
    ///
    /// A connect can outlive the request that started it, and the session too: when a request
    /// finds no idle connection, hyper-util starts one, and when another connection comes
    /// free first the request takes that one and the connect goes on in the background to put
    /// its connection in the pool. [`connections_opened`](Self::connections_opened) counts it
    /// only when it is through, so the count is final once this returns and no request has
    /// started since (after the pool's sessions closed, for example).
    pub async fn connects_settled(&self) {
        let mut connecting = self.connecting.subscribe();
        // The pool holds the sender, so the wait cannot end for want of one.
        let _ = connecting.wait_for(|&under_way| under_way == 0).await;
    }

    /// The TLS settings the pool was made with.
    pub fn tls(&self) -> &TlsOptions {
        &self.tls
    }

    #[cfg(feature = "bindings")]
    /// The proxy settings the pool was made with.
    pub(crate) fn proxy(&self) -> &ProxyConfig {
        &self.proxy
    }
}

/// The requests to one origin that may be in flight at once before the next one waits
/// ([`HttpPool::with_origin_limit`]).
pub(crate) const DEFAULT_ORIGIN_LIMIT: usize = 16;
/// How long a request waits for a connection of its origin to come free
/// ([`HttpPool::with_origin_limit`]).
pub(crate) const DEFAULT_ORIGIN_PATIENCE: Duration = Duration::from_millis(100);

/// How many origins a pool keeps lanes for; beyond it, the idle ones are dropped.
const MAX_LANE_ORIGINS: usize = 256;

/// The in-flight limit of each origin (see [`HttpPool::with_origin_limit`]).
struct Lanes {
    limit: usize,
    patience: Duration,
    origins: std::sync::Mutex<std::collections::HashMap<Origin, Arc<Lane>>>,
}

type Origin = (http::uri::Scheme, http::uri::Authority);

/// One origin's lane: a permit per request in flight, until the origin is seen to speak
/// HTTP/2.
struct Lane {
    permits: Arc<Semaphore>,
    multiplexed: std::sync::atomic::AtomicBool,
}

/// What a link keeps of the origin its last request went to (a session's requests go to one
/// endpoint), so that a request neither hashes the origin under the pool's lock nor formats
/// its `Host` header.
struct KnownOrigin {
    origin: Origin,
    /// `None` when the pool counts no requests.
    lane: Option<Arc<Lane>>,
    /// The `Host` header hyper-util would otherwise format for each HTTP/1.1 request.
    host: Option<http::HeaderValue>,
}

impl KnownOrigin {
    fn new(origin: Origin, uri: &Uri, lanes: &Lanes) -> KnownOrigin {
        KnownOrigin {
            lane: lanes.counted(&origin),
            host: host_header(uri),
            origin,
        }
    }

    fn is(&self, scheme: &http::uri::Scheme, authority: &http::uri::Authority) -> bool {
        &self.origin.0 == scheme && &self.origin.1 == authority
    }

    /// The lane a request to this origin enters, while its connections are not multiplexed.
    fn lane(&self) -> Option<Arc<Lane>> {
        self.lane
            .as_ref()
            .filter(|lane| !lane.multiplexed.load(Ordering::Relaxed))
            .cloned()
    }
}

/// `uri`'s `Host` header as hyper-util writes it: the host, and the port unless it is the
/// scheme's default.
fn host_header(uri: &Uri) -> Option<http::HeaderValue> {
    let host = uri.host()?;
    let value = match uri.port() {
        Some(port) if Some(port.as_u16()) != crate::exchange::default_port(uri) => {
            http::HeaderValue::from_str(&format!("{host}:{port}"))
        }
        _ => http::HeaderValue::from_str(host),
    };
    value.ok()
}

impl Lanes {
    fn new(limit: usize, patience: Duration) -> Lanes {
        Lanes {
            limit,
            patience,
            origins: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// The lane of an origin, when requests to it are counted.
    fn counted(&self, origin: &Origin) -> Option<Arc<Lane>> {
        if self.limit == 0 {
            return None;
        }
        self.shared_lane(origin.clone())
    }

    fn shared_lane(&self, key: Origin) -> Option<Arc<Lane>> {
        let mut origins = self.origins.lock().ok()?;
        if origins.len() >= MAX_LANE_ORIGINS && !origins.contains_key(&key) {
            let limit = self.limit;
            origins.retain(|_, lane| {
                Arc::strong_count(lane) > 1 || lane.permits.available_permits() < limit
            });
        }
        let lane = origins
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Lane {
                    permits: Arc::new(Semaphore::new(self.limit)),
                    multiplexed: std::sync::atomic::AtomicBool::new(false),
                })
            })
            .clone();
        Some(lane)
    }

    /// A place in `lane` when one is free; otherwise the wait for one, within the patience,
    /// which gives `None` when it ran out (the request goes anyway).
    fn enter(&self, lane: &Lane) -> Result<OwnedSemaphorePermit, Entering> {
        if let Ok(permit) = lane.permits.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let (permits, patience) = (lane.permits.clone(), self.patience);
        Err(Box::pin(async move {
            tokio::time::timeout(patience, permits.acquire_owned())
                .await
                .ok()?
                .ok()
        }))
    }
}

/// A reply read by [`HttpPool::fetch`]: the head, and the body up to a limit.
#[derive(Debug)]
pub(crate) struct RawReply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    /// The body bytes read, at most the limit given.
    pub(crate) body: Vec<u8>,
    /// Why reading stopped.
    pub(crate) end: RawEnd,
}

/// Why [`HttpPool::fetch`] stopped reading a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RawEnd {
    /// The body ended.
    Complete,
    /// The body reached the byte limit; the rest was not read.
    Limit,
    /// The deadline passed while the body was still coming.
    Deadline,
    /// The caller's `stop` said it had seen enough (an endless event stream).
    Stopped,
    /// The body broke off.
    Broke(String),
}

impl HttpPool {
    /// Sends one request as it is and reads its reply: the head, then the body until it ends,
    /// `max_body_bytes` were read, `stop(body so far)` says enough, or `timeout` (for head and
    /// body together) passes. Redirects are not followed. For the probe, which must see the
    /// bytes a server sends, and the OAuth flows' requests; sessions go through the exchange
    /// machine instead.
    pub(crate) async fn fetch(
        &self,
        request: Request<Full<Bytes>>,
        max_body_bytes: usize,
        timeout: Duration,
        stop: &(dyn Fn(&[u8]) -> bool + Sync),
    ) -> Result<RawReply, TransportError> {
        let mut head: Option<(StatusCode, HeaderMap)> = None;
        let mut body = Vec::new();
        let reading = async {
            let response = self.client.request(request).await.map_err(|error| {
                let detail = error_chain(&error);
                if error.is_connect() {
                    TransportError::Connect(detail)
                } else {
                    TransportError::Lost(detail)
                }
            })?;
            let (parts, mut incoming) = response.into_parts();
            head = Some((parts.status, parts.headers));
            loop {
                match incoming.frame().await {
                    None => return Ok(RawEnd::Complete),
                    Some(Err(error)) => return Ok(RawEnd::Broke(error_chain(&error))),
                    Some(Ok(frame)) => {
                        let Ok(data) = frame.into_data() else {
                            continue;
                        };
                        let room = max_body_bytes - body.len();
                        body.extend_from_slice(&data[..data.len().min(room)]);
                        if data.len() > room {
                            return Ok(RawEnd::Limit);
                        }
                        if stop(&body) {
                            return Ok(RawEnd::Stopped);
                        }
                    }
                }
            }
        };
        let end = match tokio::time::timeout(timeout, reading).await {
            Ok(Ok(end)) => end,
            Ok(Err(error)) => return Err(error),
            Err(_) => RawEnd::Deadline,
        };
        let Some((status, headers)) = head else {
            return Err(TransportError::Lost(format!(
                "no response within {} ms",
                timeout.as_millis()
            )));
        };
        Ok(RawReply {
            status,
            headers,
            body,
            end,
        })
    }
}

#[cfg(not(feature = "aws-lc-rs"))]
fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

#[cfg(feature = "aws-lc-rs")]
fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Opens the pool's TCP connections, direct or through a CONNECT tunnel as the proxy settings
/// say for each target, and counts them.
#[derive(Clone)]
struct RoutingConnector {
    inner: HttpConnector,
    proxy: Arc<ProxyConfig>,
    opened: Arc<AtomicU64>,
}

impl tower_service::Service<Uri> for RoutingConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let opened = self.opened.clone();
        match self.proxy.route(&uri).cloned() {
            None => {
                let connecting = self.inner.call(uri);
                Box::pin(async move {
                    let connection = connecting.await?;
                    opened.fetch_add(1, Ordering::Relaxed);
                    Ok(connection)
                })
            }
            Some(proxy) => {
                let connector = self.inner.clone();
                Box::pin(async move {
                    let connection = proxy::tunnel(connector, &proxy, &uri).await?;
                    opened.fetch_add(1, Ordering::Relaxed);
                    Ok(connection)
                })
            }
        }
    }
}

/// What a request in flight reports about its response: the machine's own frame.
pub(crate) use crate::connection::Frame;

/// One connection's Streamable HTTP link: the requests it has in flight, which the
/// connection machine ([`Exchange`](crate::exchange::Exchange) inside it) asked for.
///
/// The requests are polled by the connection's own driver task, through
/// [`poll_frame`](Self::poll_frame): no task per request and no channel between them. Each
/// request has a waker of its own that marks it ready, so a wake polls only the requests that
/// have something to report. A response body is read only when the driver asks for its next
/// frame, so a server that floods waits in its socket buffers instead of filling memory.
pub(crate) struct HttpLink {
    pool: HttpPool,
    carriers: IdMap<StreamId, Carrier>,
    ready: Arc<Ready>,
    /// The origin the last request went to.
    origin: Option<KnownOrigin>,
}

impl HttpLink {
    pub(crate) fn new(pool: HttpPool) -> Self {
        HttpLink {
            pool,
            carriers: IdMap::default(),
            ready: Arc::new(Ready::default()),
            origin: None,
        }
    }

    /// The next frame of a request in flight that has one; otherwise `cx` is woken when one
    /// of them has something to report.
    pub(crate) fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<(StreamId, Frame)> {
        loop {
            let Some(stream) = self.ready.next(cx) else {
                return Poll::Pending;
            };
            // A request aborted after its waker fired.
            let Some(carrier) = self.carriers.get_mut(&stream) else {
                continue;
            };
            carrier.marker.queued.store(false, Ordering::Release);
            let mut context = Context::from_waker(&carrier.waker);
            let Poll::Ready(frame) = carrier.flight.poll_frame(&self.pool, &mut context) else {
                continue;
            };
            if matches!(frame, Frame::Data(_) | Frame::Head(..)) {
                // It may have more at once: polled again after the others that are ready, in
                // this turn of the driver, which asks for frames until there are none.
                carrier.marker.enqueue();
            } else {
                // Its place in the origin's lane goes with it.
                self.carriers.remove(&stream);
            }
            return Poll::Ready((stream, frame));
        }
    }

    /// What the link knows of `uri`'s origin, learned again when it is not the last one's.
    fn known_origin(&mut self, uri: &Uri) -> Option<&KnownOrigin> {
        let (scheme, authority) = (uri.scheme()?, uri.authority()?);
        if !self
            .origin
            .as_ref()
            .is_some_and(|known| known.is(scheme, authority))
        {
            let origin = (scheme.clone(), authority.clone());
            self.origin = Some(KnownOrigin::new(origin, uri, &self.pool.lanes));
        }
        self.origin.as_ref()
    }

    /// Issues `request`; its frames are reported under `stream`.
    pub(crate) fn start(&mut self, stream: StreamId, mut request: HttpRequest) {
        let known = self.known_origin(&request.uri);
        if let Some(host) = known.and_then(|known| known.host.clone()) {
            request.headers.entry(http::header::HOST).or_insert(host);
        }
        // A response that stays open for the session's life would hold its lane forever.
        let lane = match request.long_lived {
            true => None,
            false => known.and_then(KnownOrigin::lane),
        };
        let carrier = Carrier::new(&self.pool, stream, request, lane, &self.ready);
        // Polled first by the driver's next look at its link, in this turn.
        carrier.marker.enqueue();
        self.carriers.insert(stream, carrier);
    }

    /// Drops the request on `stream`: dropping it drops its response, and hyper closes its
    /// connection when the response had not ended.
    pub(crate) fn abort(&mut self, stream: StreamId) {
        self.carriers.remove(&stream);
    }
}

/// The requests in flight that have something to report, in the order their wakers fired,
/// and the driver task to wake for them.
#[derive(Default)]
struct Ready {
    state: std::sync::Mutex<ReadyState>,
}

#[derive(Default)]
struct ReadyState {
    streams: std::collections::VecDeque<StreamId>,
    driver: Option<Waker>,
}

impl Ready {
    fn lock(&self) -> std::sync::MutexGuard<'_, ReadyState> {
        // Nothing panics while holding it; a poisoned queue is still a queue.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next ready request; with none, the driver is woken by the next one.
    fn next(&self, cx: &Context<'_>) -> Option<StreamId> {
        let mut state = self.lock();
        let next = state.streams.pop_front();
        if next.is_none()
            && !state
                .driver
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.driver = Some(cx.waker().clone());
        }
        next
    }
}

/// A request's waker: it puts the request in the ready queue (once until polled) and wakes
/// the driver.
struct Marker {
    stream: StreamId,
    queued: AtomicBool,
    ready: Arc<Ready>,
}

impl Marker {
    /// Queues the request and wakes the driver (the request's waker fired).
    fn requeue(&self) {
        if let Some(driver) = self.queue() {
            driver.wake();
        }
    }

    /// Queues the request for the driver that is running now, which looks at the queue again
    /// before it sleeps: waking it would only poll it once more for nothing.
    fn enqueue(&self) {
        self.queue();
    }

    /// Puts the request in the queue unless it is there; the driver's waker, if registered.
    fn queue(&self) -> Option<Waker> {
        if self.queued.swap(true, Ordering::AcqRel) {
            return None;
        }
        let mut state = self.ready.lock();
        state.streams.push_back(self.stream);
        state.driver.take()
    }
}

impl std::task::Wake for Marker {
    fn wake(self: Arc<Self>) {
        self.requeue();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.requeue();
    }
}

/// One request in flight, and its waker.
struct Carrier {
    marker: Arc<Marker>,
    waker: Waker,
    flight: Flight,
}

/// A request's place in its origin's lane, the request, then its response.
struct Flight {
    lane: Option<Arc<Lane>>,
    /// Held until the response has been read to its end, when its connection is free.
    place: Option<OwnedSemaphorePermit>,
    state: Carrying,
}

/// How far a [`Flight`] has got.
enum Carrying {
    /// Waiting, at most the origin's patience, for a place in its lane.
    Waiting(Entering, Box<HttpRequest>),
    /// Has its place, and is sent once the tasks already woken have run. The place came
    /// free when another request's response ended, and that request's connection goes back
    /// to hyper's pool in a task woken at the same time: sent before it runs, the request
    /// would find no idle connection and open one more.
    Entered(Yielding, Box<HttpRequest>),
    /// Sent (or about to be); the response head has not come.
    Requesting(ResponseFuture),
    Reading(Incoming),
    /// hyper refused the request's parts: reported as a failure to connect (nothing was sent).
    Unbuilt,
    /// Reported its last frame.
    Over,
}

type Entering = std::pin::Pin<Box<dyn Future<Output = Option<OwnedSemaphorePermit>> + Send>>;
type Yielding = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;
type ResponseFuture = hyper_util::client::legacy::ResponseFuture;

impl Carrier {
    fn new(
        pool: &HttpPool,
        stream: StreamId,
        request: HttpRequest,
        lane: Option<Arc<Lane>>,
        ready: &Arc<Ready>,
    ) -> Self {
        let marker = Arc::new(Marker {
            stream,
            queued: AtomicBool::new(false),
            ready: ready.clone(),
        });
        let (place, state) = match lane.as_ref().map(|lane| pool.lanes.enter(lane)) {
            Some(Err(entering)) => (None, Carrying::Waiting(entering, Box::new(request))),
            Some(Ok(place)) => (Some(place), issue(pool, request)),
            None => (None, issue(pool, request)),
        };
        Carrier {
            waker: Waker::from(marker.clone()),
            marker,
            flight: Flight { lane, place, state },
        }
    }
}

impl Flight {
    /// The response's next frame, when it has one.
    fn poll_frame(&mut self, pool: &HttpPool, cx: &mut Context<'_>) -> Poll<Frame> {
        loop {
            match &mut self.state {
                Carrying::Waiting(entering, _) => {
                    let Poll::Ready(place) = entering.as_mut().poll(cx) else {
                        return Poll::Pending;
                    };
                    self.place = place;
                    if let Carrying::Waiting(_, request) =
                        std::mem::replace(&mut self.state, Carrying::Over)
                    {
                        self.state = Carrying::Entered(Box::pin(tokio::task::yield_now()), request);
                    }
                }
                Carrying::Entered(yielding, _) => {
                    if yielding.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    let Carrying::Entered(_, request) =
                        std::mem::replace(&mut self.state, Carrying::Over)
                    else {
                        return Poll::Pending;
                    };
                    self.state = issue(pool, *request);
                }
                Carrying::Requesting(response) => {
                    let Poll::Ready(response) = std::pin::Pin::new(response).poll(cx) else {
                        return Poll::Pending;
                    };
                    let response = match response {
                        Ok(response) => response,
                        Err(error) => {
                            self.end();
                            return Poll::Ready(Frame::Failed(transport_error(&error)));
                        }
                    };
                    if response.version() == http::Version::HTTP_2
                        && let Some(lane) = &self.lane
                    {
                        lane.multiplexed.store(true, Ordering::Relaxed);
                    }
                    let (parts, body) = response.into_parts();
                    self.state = Carrying::Reading(body);
                    return Poll::Ready(Frame::Head(parts.status, parts.headers, wall_clock()));
                }
                Carrying::Reading(body) => {
                    let Poll::Ready(frame) = std::pin::Pin::new(body).poll_frame(cx) else {
                        return Poll::Pending;
                    };
                    let frame = match frame {
                        None => Frame::End,
                        Some(Err(error)) => Frame::Failed(TransportError::Lost(error.to_string())),
                        Some(Ok(frame)) => match frame.into_data() {
                            Ok(data) => return Poll::Ready(Frame::Data(data)),
                            // Trailers: nothing the exchange reads.
                            Err(_) => continue,
                        },
                    };
                    self.end();
                    return Poll::Ready(frame);
                }
                Carrying::Unbuilt => {
                    self.end();
                    let error = "the request could not be built".to_owned();
                    return Poll::Ready(Frame::Failed(TransportError::Connect(error)));
                }
                Carrying::Over => return Poll::Pending,
            }
        }
    }

    fn end(&mut self) {
        self.state = Carrying::Over;
        self.place = None;
    }
}

/// Hands the request to hyper; the response is awaited by polling what this returns.
fn issue(pool: &HttpPool, request: HttpRequest) -> Carrying {
    let mut builder = Request::builder().method(request.method).uri(request.uri);
    if let Some(headers) = builder.headers_mut() {
        *headers = request.headers;
    }
    match builder.body(Full::new(Bytes::from(request.body))) {
        Ok(request) => Carrying::Requesting(pool.client.request(request)),
        Err(_) => Carrying::Unbuilt,
    }
}

/// What a request's failure means for its delivery.
fn transport_error(error: &hyper_util::client::legacy::Error) -> TransportError {
    let detail = error_chain(error);
    if error.is_connect() {
        TransportError::Connect(detail)
    } else if let Some(alert) = handshake_refusal(error) {
        TransportError::Connect(format!(
            "the server refused the TLS handshake ({alert:?}; it may require a client \
             certificate it trusts): {detail}"
        ))
    } else {
        TransportError::Lost(detail)
    }
}

/// The alert of a server that refused the TLS handshake after the client's side of it ended.
///
/// In TLS 1.3 the client's handshake ends with its Finished, and it sends the request at
/// once; the server checks the client's certificate only then, and refuses it with an alert
/// that arrives as the answer. The server's TLS layer never passed the request on, so nothing
/// was delivered: a connect failure, not a lost connection. The alert is in the error's chain
/// when the request was written before it came; when it came first, hyper reports only that
/// the connection closed before the request could start, and the connection's [`Watched`]
/// stream has kept it.
fn handshake_refusal(
    error: &hyper_util::client::legacy::Error,
) -> Option<rustls::AlertDescription> {
    let watched = error.connect_info().and_then(|info| {
        let mut extensions = http::Extensions::new();
        info.get_extras(&mut extensions);
        extensions
            .get::<Refusal>()
            .and_then(|refusal| refusal.0.get().copied())
    });
    if watched.is_some() {
        return watched;
    }
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = next {
        let alert = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => refusal_alert(io),
            None => match cause.downcast_ref::<rustls::Error>() {
                Some(rustls::Error::AlertReceived(alert)) => refusing(*alert),
                _ => None,
            },
        };
        if alert.is_some() {
            return alert;
        }
        next = cause.source();
    }
    None
}

/// The handshake-refusing alert an I/O error from the TLS stream carries, if any.
fn refusal_alert(error: &std::io::Error) -> Option<rustls::AlertDescription> {
    match error.get_ref()?.downcast_ref::<rustls::Error>()? {
        rustls::Error::AlertReceived(alert) => refusing(*alert),
        _ => None,
    }
}

/// `alert` when it is one a server refuses a handshake with.
fn refusing(alert: rustls::AlertDescription) -> Option<rustls::AlertDescription> {
    use rustls::AlertDescription as A;
    matches!(
        alert,
        A::CertificateRequired
            | A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied
            | A::HandshakeFailure
    )
    .then_some(alert)
}

/// Where a connection's [`Watched`] stream keeps the alert a server refused the handshake
/// with, for [`handshake_refusal`] (reached through the connection's `Connected` extras).
#[derive(Clone, Default)]
struct Refusal(Arc<OnceLock<rustls::AlertDescription>>);

/// Wraps the pool's connector so that each connection's stream is [`Watched`], and counts the
/// connects under way, from the call until its future ends or is dropped.
#[derive(Clone)]
struct WatchingConnector<C> {
    inner: C,
    connecting: Arc<tokio::sync::watch::Sender<usize>>,
}

/// One connect under way, for [`HttpPool::connects_settled`]: counted while it lives.
struct Connecting(Arc<tokio::sync::watch::Sender<usize>>);

impl Connecting {
    fn start(connecting: &Arc<tokio::sync::watch::Sender<usize>>) -> Connecting {
        connecting.send_modify(|under_way| *under_way += 1);
        Connecting(connecting.clone())
    }
}

impl Drop for Connecting {
    fn drop(&mut self) {
        self.0
            .send_modify(|under_way| *under_way = under_way.saturating_sub(1));
    }
}

impl<C> tower_service::Service<Uri> for WatchingConnector<C>
where
    C: tower_service::Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = Watched<C::Response>;
    type Error = C::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let under_way = Connecting::start(&self.connecting);
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let inner = connecting.await;
            drop(under_way);
            Ok(Watched {
                inner: inner?,
                refusal: Refusal::default(),
            })
        })
    }
}

/// A connection's stream that keeps the first handshake-refusing alert it reads.
struct Watched<T> {
    inner: T,
    refusal: Refusal,
}

impl<T: Connection> Connection for Watched<T> {
    fn connected(&self) -> Connected {
        // The inner layers' flags, but not their extras: hyper-util copies every extra into
        // each response's extensions, and nothing here reads the TCP layer's addresses.
        let inner = self.inner.connected();
        let mut connected = Connected::new().proxy(inner.is_proxied());
        if inner.is_negotiated_h2() {
            connected = connected.negotiated_h2();
        }
        connected.extra(self.refusal.clone())
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for Watched<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Err(error)) = &polled
            && let Some(alert) = refusal_alert(error)
        {
            let _ = self.refusal.0.set(alert);
        }
        polled
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for Watched<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
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

#[cfg(test)]
mod tests {
    use super::host_header;

    #[test]
    fn the_host_header_names_the_port_unless_it_is_the_schemes_default() {
        for (uri, host) in [
            ("http://example.com/mcp", "example.com"),
            ("http://example.com:80/mcp", "example.com"),
            ("http://example.com:443/mcp", "example.com:443"),
            ("https://example.com:443/mcp", "example.com"),
            ("https://example.com:80/mcp", "example.com:80"),
            ("http://127.0.0.1:37379/mcp", "127.0.0.1:37379"),
            ("http://[::1]:8080/mcp", "[::1]:8080"),
            ("https://user:pw@example.com:8443/", "example.com:8443"),
        ] {
            let uri: http::Uri = uri.parse().expect(uri);
            assert_eq!(host_header(&uri).expect("a host"), host, "{uri}");
        }
        assert_eq!(host_header(&"/mcp".parse().expect("a path")), None);
    }
}
