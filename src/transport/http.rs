//! The Streamable HTTP driver: hyper with a pooled, keep-alive connection set and rustls,
//! under the sans-IO [`Exchange`], which decides everything the protocol says (what to send,
//! how to read each reply, resumption, the legacy fallback).
//!
//! The driver only moves bytes: each [`Output::Send`] becomes a hyper request on a task of its
//! own, whose response head, body chunks and end come back as frames on one bounded channel
//! (so a server that floods is slowed by backpressure instead of filling memory); an
//! [`Output::Abort`] drops the task, and with it the response. The client driver owns the
//! clock and passes the time in.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

pub(crate) use crate::exchange::over_budget;
use crate::exchange::{Exchange, HttpRequest, Output, SendOptions, StreamId, TransportError};
pub use crate::exchange::{ExtraHeaders, HeaderError, HttpConfig, HttpLimits};
use crate::jsonrpc::Message;

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

/// What a request's task reports about its response.
#[derive(Debug)]
pub(crate) enum Frame {
    Head(StatusCode, HeaderMap),
    /// A body chunk, and the task's leave to read another once the driver is done with it.
    Data(Bytes, OwnedSemaphorePermit),
    End,
    Failed(TransportError),
}

/// How many frames may wait for the driver, across every request of the session.
const FRAME_QUEUE: usize = 256;

/// How many body chunks of one response may be read ahead of the driver: a fast server waits
/// for a slow client here (in its socket buffers), and a response the machine refuses has at
/// most this many chunks read past the refusal.
const READ_AHEAD_CHUNKS: usize = 2;

/// One session's Streamable HTTP link: the exchange machine and the tasks that carry its
/// requests.
pub(crate) struct HttpLink {
    pool: HttpPool,
    exchange: Exchange,
    tasks: HashMap<StreamId, JoinHandle<()>>,
    frames_tx: mpsc::Sender<(StreamId, Frame)>,
    frames: mpsc::Receiver<(StreamId, Frame)>,
}

impl HttpLink {
    pub(crate) fn new(pool: HttpPool, config: HttpConfig) -> Self {
        // The backoff's jitter needs no clock: the standard library's per-process random hash
        // keys seed it.
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let (frames_tx, frames) = mpsc::channel(FRAME_QUEUE);
        HttpLink {
            pool,
            exchange: Exchange::new(config, seed),
            tasks: HashMap::new(),
            frames_tx,
            frames,
        }
    }

    /// The machine, for the inputs that come from the session.
    pub(crate) fn exchange(&mut self) -> &mut Exchange {
        &mut self.exchange
    }

    pub(crate) fn exchange_ref(&self) -> &Exchange {
        &self.exchange
    }

    pub(crate) fn send(
        &mut self,
        message: Message<'static>,
        limits: SendOptions,
        barrier: bool,
        now: Instant,
    ) {
        self.exchange.send(message, limits, barrier, now);
    }

    pub(crate) fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<(StreamId, Frame)>> {
        self.frames.poll_recv(cx)
    }

    /// Hands a frame to the machine.
    pub(crate) fn handle_frame(&mut self, stream: StreamId, frame: Frame, now: Instant) {
        match frame {
            Frame::Head(status, headers) => {
                self.exchange.handle_head(stream, status, &headers, now);
            }
            Frame::Data(chunk, permit) => {
                self.exchange.handle_body(stream, &chunk, now);
                drop(permit);
            }
            Frame::End => {
                self.tasks.remove(&stream);
                self.exchange.handle_end(stream, now);
            }
            Frame::Failed(error) => {
                self.tasks.remove(&stream);
                self.exchange.handle_error(stream, error, now);
            }
        }
    }

    /// The machine's next output for the session; requests to issue and aborts are carried
    /// out here.
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        loop {
            match self.exchange.poll_output()? {
                Output::Send { stream, request } => {
                    let task = tokio::spawn(carry(
                        self.pool.clone(),
                        stream,
                        request,
                        self.frames_tx.clone(),
                    ));
                    self.tasks.insert(stream, task);
                }
                Output::Abort(stream) => {
                    if let Some(task) = self.tasks.remove(&stream) {
                        task.abort();
                    }
                }
                output => return Some(output),
            }
        }
    }

    /// Stops every request still in flight (the session is over).
    pub(crate) fn abort_all(&mut self) {
        for (_, task) in self.tasks.drain() {
            task.abort();
        }
    }
}

impl Drop for HttpLink {
    fn drop(&mut self) {
        self.abort_all();
    }
}

/// Issues one request and reports its response, frame by frame: the one frame loop.
async fn carry(
    pool: HttpPool,
    stream: StreamId,
    request: HttpRequest,
    frames: mpsc::Sender<(StreamId, Frame)>,
) {
    let mut builder = Request::builder().method(request.method).uri(request.uri);
    if let Some(headers) = builder.headers_mut() {
        *headers = request.headers;
    }
    let Ok(request) = builder.body(Full::new(Bytes::from(request.body))) else {
        let error = TransportError::Connect("the request could not be built".to_owned());
        let _ = frames.send((stream, Frame::Failed(error))).await;
        return;
    };
    let response: Response<Incoming> = match pool.client.request(request).await {
        Ok(response) => response,
        Err(error) => {
            let detail = error_chain(&error);
            let error = if error.is_connect() {
                TransportError::Connect(detail)
            } else {
                TransportError::Lost(detail)
            };
            let _ = frames.send((stream, Frame::Failed(error))).await;
            return;
        }
    };
    let (parts, mut body) = response.into_parts();
    if frames
        .send((stream, Frame::Head(parts.status, parts.headers)))
        .await
        .is_err()
    {
        return;
    }
    let credit = Arc::new(Semaphore::new(READ_AHEAD_CHUNKS));
    loop {
        let Ok(permit) = credit.clone().acquire_owned().await else {
            return;
        };
        let frame = match body.frame().await {
            None => Frame::End,
            Some(Err(error)) => Frame::Failed(TransportError::Lost(error.to_string())),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => Frame::Data(data, permit),
                Err(_) => continue,
            },
        };
        let last = !matches!(frame, Frame::Data(..));
        if frames.send((stream, frame)).await.is_err() || last {
            return;
        }
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
