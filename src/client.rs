//! The async client a host uses: connect (initialize and initialized), list tools, call a
//! tool with progress, deadlines and cancellation, ping, close.
//!
//! Each [`Client`] is one MCP session. A driver task owns the sans-IO
//! [`Session`] and the transport link; the client talks to it over a
//! channel. The driver sleeps until the session's next deadline, so no request outlives it.
//!
//! ```no_run
//! use mcpwire::client::{CallOptions, Client, ClientOptions};
//! use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
//!
//! # async fn demo() -> Result<(), mcpwire::Error> {
//! let pool = HttpPool::new(&TlsOptions::default())?;
//! let config = HttpConfig::new("http://127.0.0.1:3001/mcp")?;
//! let client = Client::connect_http(&pool, config, ClientOptions::default()).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}: {}", tool.name, tool.description.as_deref().unwrap_or(""));
//! }
//! let mut options = CallOptions::default();
//! options.on_progress = Some(Box::new(|p| eprintln!("progress {}", p.progress)));
//! let result = client
//!     .call_tool("echo", serde_json::json!({"message": "hi"}).as_object().cloned(), options)
//!     .await?;
//! println!("{:?}", result.content);
//! client.close().await;
//! # Ok(()) }
//! ```

pub mod auth;
mod reply;

use crate::idmap::IdMap;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::exchange::{Output as ExchangeOutput, SendOptions, StreamId};
use crate::jsonrpc::{Id, Notification};
use crate::mcp::ContentOnly;
use crate::mcp::headers::{self as mcp_headers, ParamHeader};
use crate::mcp::modern::{self, InputRequest, ResultEnvelope, ResultType};
use crate::mcp::{
    CallToolResult, ClientCapabilities, InitializeResult, JsonObject, ListToolsRequestParams,
    ListToolsResult, ProgressNotificationParams, ProgressToken, ProtocolVersion, Tool, error_code,
    methods,
};
use crate::session::{
    self, Delivery, EraPolicy, Failure, FailureKind, Output, Payload, Ready, RequestError,
    RequestOptions, Session,
};
use crate::transport::http::{Frame, HttpConfig, HttpLink, HttpPool};
use crate::transport::stdio::{StdioConfig, StdioLink};
use crate::transport::{LinkEvent, Secret};
use http::{HeaderName, HeaderValue};

/// How long a `tools/list` page or a ping may take by default.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Options for a session.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The session machine's configuration: client info, capabilities, era, versions, limits.
    pub session: session::Config,
    /// How long each `tools/list` page and each ping may take.
    pub request_timeout: Duration,
    /// The most `tools/list` pages read before giving up (a loop guard).
    pub max_list_pages: usize,
    /// The most tools accepted in one listing.
    pub max_tools: usize,
    /// Receives logging and list-changed notifications. Full buffers drop notifications
    /// rather than grow.
    pub notifications: Option<mpsc::Sender<Notification<'static>>>,
    /// Answers what a server asks of the user or the host during a call: the
    /// `inputRequests` of an `input_required` result (2026-07-28). Its capabilities are the
    /// ones declared. With none, a call whose server needs input fails
    /// ([`ErrorKind::ElicitationRequested`](crate::ErrorKind::ElicitationRequested)).
    pub input_handler: Option<Arc<dyn InputHandler>>,
    /// The most `input_required` rounds one call may take.
    pub max_input_rounds: usize,
    /// Receives warnings about what the server sent that the client set aside (a tool dropped
    /// from a listing for invalid `x-mcp-header` annotations). Never holds a credential.
    pub on_warning: Option<WarningSink>,
    /// Where an HTTP session's bearer tokens come from when they are not static: a host's
    /// token provider or OAuth ([`auth::Auth`]). A request the server refuses with 401 or 403
    /// (it did not run) is sent again with the new token the source gives. Not with
    /// [`HttpConfig::bearer_token`] (a static token) at the same time; unused over stdio.
    pub auth: Option<auth::Auth>,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("session", &self.session)
            .field("request_timeout", &self.request_timeout)
            .field("max_list_pages", &self.max_list_pages)
            .field("max_tools", &self.max_tools)
            .field("input_handler", &self.input_handler.is_some())
            .field("max_input_rounds", &self.max_input_rounds)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            session: session::Config::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_list_pages: 100,
            max_tools: 10_000,
            notifications: None,
            input_handler: None,
            max_input_rounds: 8,
            on_warning: None,
            auth: None,
        }
    }
}

/// Where warnings go ([`ClientOptions::on_warning`]).
pub type WarningSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The answer an [`InputHandler`] gives, or why it gives none.
pub type InputFuture = Pin<
    Box<
        dyn Future<Output = Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>>>
            + Send,
    >,
>;

/// What a host plugs in to answer a server's requests for input during a call
/// (`elicitation/create`, `sampling/createMessage`, `roots/list`; 2026-07-28
/// `basic/patterns/input-required.mdx`). One trait for all three; the client declares exactly
/// [`capabilities`](InputHandler::capabilities), so a server asks only for what the handler
/// serves.
pub trait InputHandler: Send + Sync {
    /// What the handler can answer, declared in every request's `_meta` (and in `initialize`).
    fn capabilities(&self) -> ClientCapabilities;
    /// Answers one request with the result for its method (an `ElicitResult`,
    /// `CreateMessageResult` or `ListRootsResult` as JSON). An error fails the call.
    fn answer(&self, request: InputRequest) -> InputFuture;
}

/// A handle that cancels a call from anywhere (another task, a signal handler).
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<(AtomicBool, Notify)>);

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Cancels every call watching this token.
    pub fn cancel(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }

    /// Whether [`cancel`](CancelToken::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    /// Completes once the token is cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// A progress callback.
pub type ProgressSink = Box<dyn FnMut(&ProgressNotificationParams) + Send>;

/// Options for one tool call.
#[non_exhaustive]
pub struct CallOptions {
    /// The hard deadline for the call.
    pub timeout: Duration,
    /// Fail when no progress arrives for this long (the hard deadline still caps it).
    pub idle_timeout: Option<Duration>,
    /// The `progressToken` to send in `_meta`; a fresh unique one when `None`.
    pub progress_token: Option<ProgressToken>,
    /// More `_meta` members to send (for instance a caller's identity).
    pub meta: Option<JsonObject>,
    /// The most reply bytes the call may receive, counted as they stream in.
    pub max_response_bytes: Option<u64>,
    /// Cancels the call when triggered.
    pub cancel: Option<CancelToken>,
    /// Called with each progress notification, in order, before the result is returned.
    pub on_progress: Option<ProgressSink>,
    /// The tool's input schema, when the caller has it (a binding) and the tool was not listed
    /// by this client: at a stateless revision over HTTP its `x-mcp-header` annotations give
    /// the call's `Mcp-Param-*` headers.
    /// Shared (an `Arc`), so that a caller making many calls with one schema copies none.
    pub input_schema: Option<Arc<serde_json::Value>>,
    /// Reads the result without its `_meta` and unknown members (the binding layer, which
    /// maps only the content).
    pub(crate) content_only: bool,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            timeout: Duration::from_secs(300),
            idle_timeout: None,
            progress_token: None,
            meta: None,
            max_response_bytes: None,
            cancel: None,
            on_progress: None,
            input_schema: None,
            content_only: false,
        }
    }
}

impl CallOptions {
    /// The defaults: a 300-second deadline, no idle timeout, a fresh progress token, no byte
    /// budget, no cancellation, no progress callback.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// The hard deadline for the call.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Fail when no progress arrives for this long.
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = Some(idle_timeout);
        self
    }

    /// The `progressToken` to send.
    pub fn with_progress_token(mut self, token: ProgressToken) -> Self {
        self.progress_token = Some(token);
        self
    }

    /// More `_meta` members to send.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The most reply bytes the call may receive.
    pub fn with_max_response_bytes(mut self, limit: u64) -> Self {
        self.max_response_bytes = Some(limit);
        self
    }

    /// Cancels the call when `cancel` is triggered.
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Called with each progress notification, in order.
    pub fn with_on_progress(
        mut self,
        on_progress: impl FnMut(&ProgressNotificationParams) + Send + 'static,
    ) -> Self {
        self.on_progress = Some(Box::new(on_progress));
        self
    }

    /// The tool's input schema, for its `x-mcp-header` annotations.
    pub fn with_input_schema(mut self, schema: impl Into<Arc<serde_json::Value>>) -> Self {
        self.input_schema = Some(schema.into());
        self
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("progress_token", &self.progress_token)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

/// How many tools' `input_schema` header declarations a [`Client`] keeps.
const MAX_SCHEMA_HEADERS: usize = 64;

/// An `input_schema` and the `Mcp-Param-*` headers it declares.
type SchemaHeaders = (Arc<serde_json::Value>, Arc<[ParamHeader]>);

/// One MCP session with a server.
pub struct Client {
    /// The credentials the server holds from us (the bearer token and the extra headers'
    /// values the transport sends, a stdio server's credential variables); scrubbed from every result, progress message and
    /// error this client returns.
    secrets: Vec<Secret>,
    /// With a token source: the tokens sent so far, and the source (whose own secrets, an
    /// OAuth flow's, are kept out too).
    dynamic: Option<(SentTokens, auth::Auth)>,
    commands: mpsc::Sender<Command>,
    driver: Option<JoinHandle<()>>,
    next_key: AtomicU64,
    /// Shared with the era cache's verdict: a connection that skips the probe gets it without
    /// a copy.
    server: Option<Arc<InitializeResult>>,
    version: std::sync::Mutex<ProtocolVersion>,
    /// The session's stamp at a stateless revision, for the params this client builds
    /// itself (until the revision changes).
    stamp: std::sync::Mutex<Option<Arc<modern::Stamp>>>,
    session_id: Option<String>,
    options: ClientOptions,
    /// Over HTTP at a stateless revision: the `Mcp-Param-*` headers each listed tool's
    /// arguments give.
    tool_headers: std::sync::Mutex<HashMap<String, Arc<[ParamHeader]>>>,
    /// The headers the last `input_schema` given for each tool declares, with that schema:
    /// a caller that passes the same schema (the same `Arc`) call after call has it read
    /// once. At most [`MAX_SCHEMA_HEADERS`] tools.
    schema_headers: std::sync::Mutex<HashMap<String, SchemaHeaders>>,
    /// The `Mcp-Name` header of the tool called last, encoded once for a caller that calls
    /// one tool again and again.
    name_header: std::sync::Mutex<Option<(String, HeaderValue)>>,
    /// Where the era verdict is kept for the next connection to the same endpoint.
    era_cache: Option<(EraCache, String)>,
    /// Where `tools/list` pages are kept, with the endpoint and the credentials' fingerprint.
    list_cache: Option<(ListCache, String, u64)>,
}

/// What probing found out about each endpoint: its era (a stateless revision, or `None` for a
/// 2025-era server) and what it said of itself, so a long-lived host probes each endpoint
/// once (`2026-07-28/basic/versioning.mdx`: the verdict is cached per origin). Keyed by the
/// endpoint URL, which is finer than the spec's origin: two endpoints of one origin may be two
/// servers.
#[derive(Clone, Debug, Default)]
pub struct EraCache(
    Arc<std::sync::Mutex<HashMap<String, Verdict>>>,
    /// The endpoints being probed now, each with the lock its prober holds for writing.
    Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>>,
);

/// The right to probe an endpoint while other connections to it wait ([`EraCache::probe_turn`]).
/// Dropping it (after the verdict is put, or when the connection failed) lets them go on.
struct ProbeTurn {
    probes: Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>>,
    key: String,
    _write: tokio::sync::OwnedRwLockWriteGuard<()>,
}

impl Drop for ProbeTurn {
    fn drop(&mut self) {
        // The entry goes first; the write guard (a field) is dropped after this body.
        if let Ok(mut probes) = self.probes.lock() {
            probes.remove(&self.key);
        }
    }
}

#[derive(Clone, Debug)]
struct Verdict {
    modern: Option<ProtocolVersion>,
    server: Option<Arc<InitializeResult>>,
}

/// How many endpoints an [`EraCache`] remembers; past that the oldest verdicts go (a host
/// that connects to ever new URLs cannot grow it).
const ERA_CACHE_ENTRIES: usize = 1024;

impl EraCache {
    /// An empty cache.
    pub fn new() -> Self {
        EraCache::default()
    }

    /// The key of `url`: as [`HttpConfig::url`] prints it (`http://h` and `http://h/` are one
    /// endpoint).
    fn key(url: &str) -> String {
        url.parse::<http::Uri>()
            .map_or_else(|_| url.to_owned(), |uri| uri.to_string())
    }

    fn get(&self, url: &str) -> Option<Verdict> {
        self.0.lock().ok()?.get(&Self::key(url)).cloned()
    }

    fn put(&self, url: &str, verdict: Verdict) {
        let url = &Self::key(url);
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= ERA_CACHE_ENTRIES && !map.contains_key(url) {
                map.clear();
            }
            map.insert(url.to_owned(), verdict);
        }
    }

    /// Remembers a verdict found earlier (one a host persisted): `url` speaks stateless
    /// revision `modern`, or with `None` is a 2025-era server, so the next connection to it
    /// does not probe. A verdict that no longer holds is forgotten when a connection fails.
    pub fn remember(&self, url: &str, modern: Option<ProtocolVersion>) {
        self.put(
            url,
            Verdict {
                modern,
                server: None,
            },
        );
    }

    /// When no connection is probing `url`, makes this one its prober: the turn returned
    /// makes the connections that ask meanwhile wait until it is dropped, so a burst of first
    /// calls to one endpoint probes once, not once per call. Otherwise waits for the probe in
    /// progress to end, at most `limit` (a slow probe holds no one longer than probing
    /// themselves would), and returns `None`: the caller looks for the verdict again, and
    /// probes itself if there is still none.
    async fn probe_turn(&self, url: &str, limit: Duration) -> Option<ProbeTurn> {
        let key = Self::key(url);
        let in_progress = {
            let mut probes = self.1.lock().ok()?;
            match probes.get(&key) {
                Some(lock) => lock.clone(),
                None => {
                    let lock = Arc::new(tokio::sync::RwLock::new(()));
                    // Taken before the lock is shared: no waiter can read it first.
                    let write = lock.clone().try_write_owned().ok()?;
                    probes.insert(key.clone(), lock);
                    return Some(ProbeTurn {
                        probes: self.1.clone(),
                        key,
                        _write: write,
                    });
                }
            }
        };
        let _ = tokio::time::timeout(limit, in_progress.read()).await;
        None
    }

    /// Forgets `url`'s verdict: the next connection probes again.
    pub fn forget(&self, url: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(&Self::key(url));
        }
    }

    /// The stateless revision `url` was found to speak, `Some(None)` for a 2025-era server,
    /// `None` when it was not probed.
    pub fn verdict(&self, url: &str) -> Option<Option<ProtocolVersion>> {
        self.get(url).map(|verdict| verdict.modern)
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field(
                "server",
                &self.server.as_ref().map(|server| &server.server_info.name),
            )
            .field("version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

/// `tools/list` pages kept as long as their `ttlMs` says (2026-07-28
/// `server/utilities/caching.mdx`), per endpoint and cursor; a `private` page only for the
/// same credentials (a fingerprint of them, never the credentials), a `public` one for anyone.
/// `notifications/tools/list_changed` from the endpoint drops its pages. Bounded: past
/// 256 pages the cache starts afresh.
#[derive(Clone, Debug, Default)]
pub struct ListCache(
    Arc<std::sync::Mutex<HashMap<ListKey, (std::time::Instant, ListToolsResult)>>>,
);

/// Endpoint, cursor, and the credentials' fingerprint for a private page.
type ListKey = (String, Option<String>, Option<u64>);

/// How many pages a [`ListCache`] holds at most.
const LIST_CACHE_ENTRIES: usize = 256;

impl ListCache {
    /// An empty cache.
    pub fn new() -> Self {
        ListCache::default()
    }

    fn get(
        &self,
        url: &str,
        cursor: &Option<String>,
        fingerprint: u64,
        now: std::time::Instant,
    ) -> Option<ListToolsResult> {
        let map = self.0.lock().ok()?;
        [None, Some(fingerprint)].into_iter().find_map(|who| {
            map.get(&(url.to_owned(), cursor.clone(), who))
                .filter(|(expires, _)| *expires > now)
                .map(|(_, page)| page.clone())
        })
    }

    fn put(&self, key: ListKey, expires: std::time::Instant, page: ListToolsResult) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= LIST_CACHE_ENTRIES && !map.contains_key(&key) {
                map.clear();
            }
            map.insert(key, (expires, page));
        }
    }

    /// Drops every page of `url` (its tool list changed).
    pub fn invalidate(&self, url: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.retain(|(endpoint, _, _), _| endpoint != url);
        }
    }

    /// How many pages are held.
    pub fn len(&self) -> usize {
        self.0.lock().map_or(0, |map| map.len())
    }

    /// Whether no page is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A fingerprint of the credentials a client sends, for keying private cache entries: a
/// process-keyed SipHash of them, never stored or shown.
fn fingerprint(secrets: &[Secret], principal: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let mut hasher = KEYS.get_or_init(Default::default).build_hasher();
    for secret in secrets {
        hasher.write(secret.expose().as_bytes());
        hasher.write_u8(0);
    }
    hasher.write_u64(principal);
    hasher.finish()
}

/// Why a request produced no result.
#[derive(Debug)]
enum CallError {
    Refused(RequestError),
    Failed(Failure),
}

type Reply = reply::ReplySender<Result<Payload, CallError>>;

/// The handshake's outcome for `connect`: the server's answer, the session id, and the
/// session's stamp at a stateless revision.
type ConnectReply = oneshot::Sender<Result<Connected, CallError>>;
type Connected = (Ready, Option<String>, Option<Arc<modern::Stamp>>);

enum Command {
    Start {
        reply: ConnectReply,
    },
    Request {
        key: u64,
        method: std::borrow::Cow<'static, str>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
        limits: SendOptions,
        /// The stamp the params were built with, if any.
        stamped: Option<Arc<modern::Stamp>>,
        /// Where its progress and answer go.
        reply: Reply,
        #[cfg(feature = "tracing")]
        span: tracing::Span,
    },
    Cancel {
        key: u64,
        reason: String,
    },
    /// Speak another stateless revision, one a `-32022` named.
    SwitchVersion(ProtocolVersion),
    /// The token source's answer to a refused request: the token to send it again with, or
    /// why there is none.
    Reauthorized {
        id: Id,
        /// The token the request was refused with.
        sent: Option<Secret>,
        token: Result<Secret, String>,
    },
    /// The input handler's answer to a server request.
    Answer {
        id: Id,
        answer: Result<Box<RawValue>, crate::jsonrpc::ErrorObject<'static>>,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
}

/// The transport under the session: the HTTP exchange machine and its hyper tasks, or a
/// stdio server process.
enum Link {
    Http(Box<HttpLink>),
    Stdio {
        link: StdioLink,
        events: mpsc::Receiver<LinkEvent>,
        /// How to start the server again, once, if it exits on the era probe.
        respawn: Option<Box<StdioConfig>>,
    },
}

impl Client {
    /// Opens a session over Streamable HTTP (falling back to legacy HTTP+SSE when the server
    /// speaks only that, if the config allows it).
    pub async fn connect_http(
        pool: &HttpPool,
        config: HttpConfig,
        mut options: ClientOptions,
    ) -> Result<Client, Error> {
        // The bearer token and the extra headers' values.
        let secrets = config.secrets();
        let url = config.url.to_string();
        if let Some(auth) = &options.auth {
            if config.bearer_token.is_some() {
                return Err(Error::config(
                    "a static bearer token and a token source (auth) are both configured; \
                     use one",
                ));
            }
            if let Some(server) = auth.as_oauth().and_then(|oauth| oauth.server())
                && !same_origin(&server, &url)
            {
                return Err(Error::config(format!(
                    "the OAuth flow is for {server}, not {url}: its tokens go to no other origin"
                )));
            }
        }
        let cache = pool.era_cache().clone();
        let mut cached = match options.session.era {
            EraPolicy::Auto => cache.get(&url),
            _ => None,
        };
        // Connections that find no verdict while another one probes wait for its verdict. The
        // turn is held until this function returns: after the verdict is put, or on failure.
        let probes = cached.is_none() && options.session.era == EraPolicy::Auto;
        let turn = match probes {
            true => cache.probe_turn(&url, options.session.probe_timeout).await,
            false => None,
        };
        if probes && turn.is_none() {
            cached = cache.get(&url);
        }
        if let Some(verdict) = &cached {
            options.session.era = match verdict.modern {
                Some(version) => EraPolicy::Modern(version),
                None => EraPolicy::Legacy,
            };
        }
        let mut link = HttpLink::new(pool.clone(), config);
        if options.auth.is_some() {
            link.exchange().hold_refusals(true);
        }
        let lists = pool.list_cache().clone();
        let invalidate = Some((lists.clone(), url.clone()));
        let started = Client::start(Link::Http(Box::new(link)), options, secrets, invalidate).await;
        match started {
            Ok(mut client) => {
                let principal = client.dynamic.as_ref().map_or(0, |(_, a)| a.identity());
                let mark = fingerprint(&client.secrets, principal);
                client.list_cache = Some((lists, url.clone(), mark));
                match &cached {
                    // Known already: what the probe learnt stands in for what was not asked.
                    Some(verdict) => {
                        if client.server.is_none() {
                            client.server.clone_from(&verdict.server);
                        }
                    }
                    None => cache.put(
                        &url,
                        Verdict {
                            modern: Some(client.protocol_version()).filter(|v| v.is_modern()),
                            server: client.server.clone(),
                        },
                    ),
                }
                client.era_cache = Some((cache, url));
                Ok(client)
            }
            Err(error) => {
                // A cached verdict that no longer holds (the server was replaced): the next
                // connection probes again.
                if cached.is_some() {
                    cache.forget(&url);
                }
                Err(error)
            }
        }
    }

    /// Opens a session with a server run as a child process speaking newline-delimited JSON on
    /// stdin and stdout. The era probe treats silence and an exit as a 2025-era server; one
    /// that exits on the probe is started again for `initialize`.
    pub async fn connect_stdio(
        config: StdioConfig,
        mut options: ClientOptions,
    ) -> Result<Client, Error> {
        options.session.silent_probe_means_legacy = true;
        let (events_tx, events) = mpsc::channel(256);
        let secrets = crate::transport::stdio::credential_values(&config.env);
        let respawn = config.clone();
        let link = StdioLink::spawn(config, events_tx).map_err(Error::from_failure)?;
        Client::start(
            Link::Stdio {
                link,
                events,
                respawn: Some(Box::new(respawn)),
            },
            options,
            secrets,
            None,
        )
        .await
    }

    async fn start(
        link: Link,
        mut options: ClientOptions,
        secrets: Vec<Secret>,
        lists: Option<(ListCache, String)>,
    ) -> Result<Client, Error> {
        if let Some(handler) = &options.input_handler {
            options.session.capabilities = handler.capabilities();
            options.session.forward_input_requests = true;
        }
        let (commands, command_rx) = mpsc::channel(64);
        let dynamic = match (&link, &options.auth) {
            (Link::Http(link), Some(auth)) => Some(DriverAuth {
                auth: auth.clone(),
                sent: SentTokens::default(),
                pool: link.pool().clone(),
                log: link.exchange_ref().config().wire_log.clone(),
                superseded: None,
            }),
            _ => None,
        };
        let client_dynamic = dynamic.as_ref().map(|d| (d.sent.clone(), d.auth.clone()));
        let driver = Driver {
            auth: dynamic,
            lists,
            input_handler: options.input_handler.clone(),
            answers: commands.clone(),
            session: Session::new(options.session.clone()),
            link,
            commands: command_rx,
            entries: IdMap::default(),
            keys: IdMap::default(),
            notifications: options.notifications.clone(),
            connect: None,
            closing: None,
            link_closed: false,
        };
        // The driver's events belong to the span the connection was made in (a binding
        // call's).
        #[cfg(feature = "tracing")]
        let driver = tokio::spawn(tracing::Instrument::in_current_span(driver.run()));
        #[cfg(not(feature = "tracing"))]
        let driver = tokio::spawn(driver.run());
        let (reply, answer) = oneshot::channel();
        let _ = commands.send(Command::Start { reply }).await;
        let (ready, session_id, stamp) = match answer.await {
            Ok(Ok(ready)) => ready,
            Ok(Err(error)) => {
                let all = all_secrets(&secrets, client_dynamic.as_ref());
                return Err(redact(call_error(error), &all));
            }
            Err(_) => return Err(Error::closed()),
        };
        Ok(Client {
            secrets,
            dynamic: client_dynamic,
            commands,
            driver: Some(driver),
            next_key: AtomicU64::new(0),
            server: ready.server.map(Arc::new),
            version: std::sync::Mutex::new(ready.version),
            stamp: std::sync::Mutex::new(stamp),
            session_id,
            options,
            tool_headers: std::sync::Mutex::new(HashMap::new()),
            schema_headers: std::sync::Mutex::new(HashMap::new()),
            name_header: std::sync::Mutex::new(None),
            era_cache: None,
            list_cache: None,
        })
    }

    /// Whether the client can still carry requests: its driver runs (a client whose link
    /// has gone is made again rather than kept).
    #[cfg(feature = "bindings")]
    pub(crate) fn is_usable(&self) -> bool {
        !self.commands.is_closed()
    }

    /// Every credential to keep out of what this client returns.
    fn secrets(&self) -> Cow<'_, [Secret]> {
        all_secrets(&self.secrets, self.dynamic.as_ref())
    }

    /// What the server said of itself: its answer to `initialize`, or at a stateless revision
    /// its `server/discover` result in that shape (name, version, capabilities,
    /// instructions). `None` only when the era was configured ([`EraPolicy::Modern`]) and the
    /// server was never asked.
    pub fn server(&self) -> Option<&InitializeResult> {
        self.server.as_deref()
    }

    /// The protocol revision both sides speak.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
            .lock()
            .map_or(ProtocolVersion::LATEST_INITIALIZE, |version| *version)
    }

    /// Whether the session speaks a stateless revision (2026-07-28): no handshake, no session
    /// id, one POST per request.
    pub fn is_modern(&self) -> bool {
        self.protocol_version().is_modern()
    }

    /// The `Mcp-Session-Id` the server assigned (Streamable HTTP only).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Lists every tool, following `nextCursor` page by page. A cursor seen twice, more than
    /// `max_list_pages` pages or more than `max_tools` tools is an error, never a loop.
    ///
    /// At a stateless revision a tool whose `x-mcp-header` annotations break the spec's rules
    /// is left out, with a warning ([`ClientOptions::on_warning`]), and the headers the other
    /// tools' arguments give are remembered for [`call_tool`](Client::call_tool); a page whose
    /// stream breaks before its answer is asked for once more (listing changes nothing).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.options.max_list_pages {
            let page = self.list_page(cursor.clone()).await?;
            tools.extend(page.tools);
            if tools.len() > self.options.max_tools {
                return Err(Error::from_failure(Failure::new(
                    FailureKind::LimitExceeded,
                    Delivery::Answered,
                    format!(
                        "the server lists more than {} tools",
                        self.options.max_tools
                    ),
                )));
            }
            match page.next_cursor {
                None => return Ok(self.admit_tools(tools)),
                Some(next) => {
                    if !cursors.insert(next.clone()) {
                        return Err(Error::from_failure(Failure::new(
                            FailureKind::Protocol,
                            Delivery::Answered,
                            format!("tools/list repeated the cursor {next:?}; stopping a loop"),
                        )));
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(Error::from_failure(Failure::new(
            FailureKind::LimitExceeded,
            Delivery::Answered,
            format!(
                "tools/list has more than {} pages",
                self.options.max_list_pages
            ),
        )))
    }

    async fn list_page(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        let params = ListToolsRequestParams {
            cursor,
            ..ListToolsRequestParams::default()
        };
        let cached = match &self.list_cache {
            Some((lists, url, mark)) if self.is_modern() => {
                lists.get(url, &params.cursor, *mark, now())
            }
            _ => None,
        };
        if let Some(page) = cached {
            return Ok(page);
        }
        let cursor = params.cursor.clone();
        let params = serde_json::value::to_raw_value(&params).map_err(Error::internal)?;
        let mut resent = false;
        let page = loop {
            let outcome = self
                .request(
                    methods::TOOLS_LIST,
                    Some(params.clone()),
                    RequestOptions::with_timeout(self.options.request_timeout),
                    SendOptions::decoding::<ListToolsResult>(),
                    &mut None,
                    None,
                )
                .await;
            match outcome {
                // 2026-07-28: a broken stream loses the request; a listing is safe to repeat.
                Err(error) if self.is_modern() && !resent && stream_broke(&error) => {
                    resent = true;
                }
                outcome => break typed::<ListToolsResult>(outcome?, methods::TOOLS_LIST)?,
            }
        };
        if self.is_modern() {
            let result_type = page.extra.get("resultType").and_then(|v| v.as_str());
            if ResultType::read(result_type) != ResultType::Complete {
                return Err(malformed_result(
                    methods::TOOLS_LIST,
                    &format!("resultType {result_type:?}"),
                ));
            }
            let hint = modern::CacheHint::from_members(&page.extra);
            if let Some((lists, url, mark)) = &self.list_cache
                && !hint.ttl.is_zero()
            {
                let who = match hint.scope {
                    modern::CacheScope::Public => None,
                    _ => Some(*mark),
                };
                lists.put((url.clone(), cursor, who), now() + hint.ttl, page.clone());
            }
        }
        Ok(page)
    }

    /// At a stateless revision: drops the tools whose annotations are invalid and remembers
    /// the others' header declarations.
    fn admit_tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        if !self.is_modern() {
            return tools;
        }
        let mut headers = HashMap::new();
        let tools = tools
            .into_iter()
            .filter(
                |tool| match mcp_headers::param_headers(&tool.input_schema) {
                    Ok(declared) => {
                        headers.insert(tool.name.clone(), Arc::from(declared));
                        true
                    }
                    Err(error) => {
                        self.warn(&format!(
                            "tools/list: left out the tool {:?}: {error}",
                            tool.name
                        ));
                        false
                    }
                },
            )
            .collect();
        if let Ok(mut known) = self.tool_headers.lock() {
            *known = headers;
        }
        tools
    }

    fn warn(&self, message: &str) {
        if let Some(sink) = &self.options.on_warning {
            sink(&crate::transport::redact_all(&self.secrets(), message));
        }
    }

    /// `Mcp-Name` and the `Mcp-Param-*` headers of a call to `name` with `arguments`, from the
    /// declarations of the last listing or, for a tool not listed, of `input_schema`.
    fn call_headers(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        input_schema: Option<&Arc<serde_json::Value>>,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, Error> {
        let mut headers: Vec<_> = self.name_header(name).into_iter().collect();
        let declared: Option<Arc<[ParamHeader]>> = match input_schema {
            Some(schema) => Some(self.schema_headers(name, schema)?),
            None => self
                .tool_headers
                .lock()
                .ok()
                .and_then(|known| known.get(name).cloned()),
        };
        let (Some(declared), Some(arguments)) = (declared, arguments) else {
            return Ok(headers);
        };
        for param in declared.iter() {
            if let Some(value) = param.value_in(arguments)
                && let Ok(header) = HeaderName::from_bytes(param.header.as_bytes())
                && let Ok(value) = HeaderValue::from_str(&value)
            {
                headers.push((header, value));
            }
        }
        Ok(headers)
    }

    /// The `Mcp-Name` header for the tool `name`.
    fn name_header(&self, name: &str) -> Option<(HeaderName, HeaderValue)> {
        if let Ok(last) = self.name_header.lock()
            && let Some((last_name, value)) = last.as_ref()
            && last_name == name
        {
            return Some((MCP_NAME, value.clone()));
        }
        let (header, value) = mcp_name_header(name)?;
        if let Ok(mut last) = self.name_header.lock() {
            *last = Some((name.to_owned(), value.clone()));
        }
        Some((header, value))
    }

    /// The headers `schema` declares for the tool `name`, read once per schema.
    fn schema_headers(
        &self,
        name: &str,
        schema: &Arc<serde_json::Value>,
    ) -> Result<Arc<[ParamHeader]>, Error> {
        if let Ok(known) = self.schema_headers.lock()
            && let Some((seen, declared)) = known.get(name)
            && Arc::ptr_eq(seen, schema)
        {
            return Ok(declared.clone());
        }
        let declared: Arc<[ParamHeader]> =
            Arc::from(mcp_headers::param_headers(schema).map_err(|error| {
                Error::config(format!("the input schema of {name:?}: {error}"))
            })?);
        if let Ok(mut known) = self.schema_headers.lock() {
            if known.len() >= MAX_SCHEMA_HEADERS && !known.contains_key(name) {
                known.clear();
            }
            known.insert(name.to_owned(), (schema.clone(), declared.clone()));
        }
        Ok(declared)
    }

    /// Calls a tool. Progress is reported to `options.on_progress` as it arrives; the call
    /// ends at its deadline, on cancellation (with `notifications/cancelled` sent when the
    /// server may have it, or at a stateless revision over HTTP by closing the call's
    /// stream), or when the future is dropped.
    ///
    /// At a stateless revision the call follows `input_required` answers (through
    /// [`ClientOptions::input_handler`], at most [`ClientOptions::max_input_rounds`] rounds,
    /// each under a new id with the server's `requestState` echoed exactly), lists the tools
    /// again and retries once after `-32020` (stale `Mcp-Param-*` headers), and retries once
    /// at another revision after `-32022`: in both cases the server refused the request
    /// before running it. A call whose stream breaks is never sent again.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments.as_ref(), None::<(&str, &())>, options)
            .await
    }

    /// [`call_tool`](Self::call_tool) with borrowed arguments (the binding layer's, which
    /// it keeps) and one more `_meta` member, written after those of `options.meta` (it
    /// replaces one of the same name): the binding layer's caller identity, serialized
    /// straight into the params rather than built as a `Value` first.
    pub(crate) async fn call_tool_with<M: serde::Serialize + ?Sized>(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        member: Option<(&str, &M)>,
        mut options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let token = options.progress_token.take().unwrap_or_else(|| {
            ProgressToken::String(format!(
                "mcpwire-{}-{}",
                process_id(),
                self.next_key.fetch_add(1, Ordering::Relaxed)
            ))
        });
        let modern = self.is_modern();
        let mut headers = match modern {
            true => self.call_headers(name, arguments, options.input_schema.as_ref())?,
            false => Vec::new(),
        };
        let meta = options.meta.take();
        // At a stateless revision the envelope is written here, with the rest, and the
        // session takes the params as they are while it still speaks that revision.
        let stamp = match modern {
            true => self.stamp.lock().ok().and_then(|stamp| stamp.clone()),
            false => None,
        };
        let original = serde_json::value::to_raw_value(&CallParams {
            name,
            arguments,
            meta: CallMeta {
                meta: meta.as_ref(),
                member,
                token: &token,
                stamp: stamp.as_deref(),
            },
        })
        .map_err(Error::internal)?;
        drop(meta);
        let started = now();
        let mut on_progress = options.on_progress.take();
        let cancel = options.cancel.take();
        // The params of an `input_required` retry; until one, `original`, which carries
        // `stamp`.
        let mut retry: Option<Box<RawValue>> = None;
        let (mut rounds, mut relisted, mut switched) = (0, false, false);
        loop {
            let elapsed = now().saturating_duration_since(started);
            let request_options = RequestOptions {
                timeout: options.timeout.saturating_sub(elapsed),
                idle_timeout: options.idle_timeout,
                progress_token: Some(token.clone()),
            };
            let send = match options.content_only {
                true => SendOptions::decoding::<ContentOnly>(),
                false => SendOptions::decoding::<CallToolResult>(),
            }
            .with_max_response_bytes(options.max_response_bytes)
            .with_headers(headers.clone());
            let params = Params {
                raw: Some(retry.as_ref().unwrap_or(&original).clone()),
                stamped: stamp.clone().filter(|_| retry.is_none()),
            };
            let outcome = self
                .request_stamped(
                    methods::TOOLS_CALL,
                    params,
                    request_options,
                    send,
                    &mut on_progress,
                    cancel.clone(),
                )
                .await;
            let payload = match outcome {
                Ok(payload) => payload,
                Err(error) if modern => {
                    let Some(failure) = error.failure() else {
                        return Err(error);
                    };
                    match failure.kind {
                        FailureKind::ServerError {
                            code: error_code::HEADER_MISMATCH,
                        } if !relisted => {
                            relisted = true;
                            trace_info!(
                                code = error_code::HEADER_MISMATCH,
                                tool = name,
                                "the server refused the call's Mcp-Param headers as stale: \
                                 listing the tools again and retrying the call once"
                            );
                            self.list_tools().await?;
                            let arguments = arguments_of(&original);
                            headers = self.call_headers(
                                name,
                                arguments.as_ref(),
                                options.input_schema.as_ref(),
                            )?;
                            continue;
                        }
                        FailureKind::ServerError {
                            code: error_code::UNSUPPORTED_PROTOCOL_VERSION,
                        } if !switched => {
                            match modern::supported_in_error(
                                failure.data(),
                                &self.options.session.modern_versions,
                            ) {
                                Some(version) => {
                                    switched = true;
                                    trace_info!(
                                        code = error_code::UNSUPPORTED_PROTOCOL_VERSION,
                                        tool = name,
                                        protocol_version = version.as_str(),
                                        "the server refused the call's revision: retrying \
                                         the call once at one it supports"
                                    );
                                    self.switch_version(version).await?;
                                    continue;
                                }
                                None => return Err(error),
                            }
                        }
                        FailureKind::ServerError {
                            code: error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                        } => return Err(elicitation_refusal(failure).unwrap_or(error)),
                        _ => return Err(error),
                    }
                }
                Err(error) => return Err(error),
            };
            let raw = match payload {
                Payload::Raw(raw) if modern => raw,
                // Decoded means complete: the typed reader takes no other result type.
                payload => return call_result(payload, options.content_only),
            };
            let envelope = ResultEnvelope::read(&raw)
                .map_err(|e| malformed_result(methods::TOOLS_CALL, &e))?;
            if envelope.result_type() == ResultType::Complete {
                return call_result(Payload::Raw(raw), options.content_only);
            }
            rounds += 1;
            if rounds > self.options.max_input_rounds {
                return Err(Error::from_failure(Failure::new(
                    FailureKind::LimitExceeded,
                    Delivery::Answered,
                    format!(
                        "the server still needs input after {} rounds",
                        self.options.max_input_rounds
                    ),
                )));
            }
            let responses = self.answer_input(&envelope).await?;
            retry = Some(
                modern::retry_params(
                    Some(&original),
                    responses.as_deref(),
                    envelope.request_state.as_deref(),
                )
                .map_err(Error::internal)?,
            );
        }
    }

    /// The answers to an `input_required` result's requests, from the input handler.
    async fn answer_input(
        &self,
        envelope: &ResultEnvelope,
    ) -> Result<Option<Box<RawValue>>, Error> {
        let requests = envelope
            .input_requests()
            .map_err(|e| malformed_result(methods::TOOLS_CALL, &e))?;
        if requests.is_empty() {
            return Ok(None);
        }
        let asked = || {
            requests
                .iter()
                .map(|r| r.method.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(handler) = &self.options.input_handler else {
            return Err(Error::from_failure(Failure::new(
                FailureKind::ElicitationRequested,
                Delivery::Answered,
                format!(
                    "the server needs input ({}) before the tool can finish, and this client \
                     has no input handler",
                    asked()
                ),
            )));
        };
        let methods = asked();
        let mut answers = serde_json::Map::new();
        for request in requests {
            let key = request.key.clone();
            let answer = handler.answer(request).await.map_err(|e| {
                Error::from_failure(Failure::new(
                    FailureKind::ElicitationRequested,
                    Delivery::Answered,
                    format!("the input handler gave no answer to {methods}: {e}"),
                ))
            })?;
            answers.insert(key, answer);
        }
        serde_json::value::to_raw_value(&answers)
            .map(Some)
            .map_err(Error::internal)
    }

    async fn switch_version(&self, version: ProtocolVersion) -> Result<(), Error> {
        self.commands
            .send(Command::SwitchVersion(version))
            .await
            .map_err(|_| Error::closed())?;
        if let Ok(mut current) = self.version.lock() {
            *current = version;
        }
        if let Ok(mut stamp) = self.stamp.lock() {
            *stamp = None;
        }
        if let Some((cache, url)) = &self.era_cache {
            cache.put(
                url,
                Verdict {
                    modern: Some(version),
                    server: self.server.clone(),
                },
            );
        }
        Ok(())
    }

    /// Sends any request (`resources/list`, `prompts/get`, an extension's method) and returns
    /// its result as the server sent it, credentials taken out. At a stateless revision the
    /// `_meta` envelope and `Mcp-Method` are added, and `Mcp-Name` from `params.name` (or
    /// `params.uri` for `resources/read`) as the spec asks; the result's `resultType` is
    /// checked (an `input_required` result is returned as it is, for the caller to answer).
    /// A request whose stream breaks is not sent again: only the caller knows whether it is
    /// safe to repeat.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, Error> {
        let modern = self.is_modern();
        let mut headers = Vec::new();
        if modern {
            let name = params.as_ref().and_then(|p| {
                let member = if method == methods::RESOURCES_READ {
                    "uri"
                } else {
                    "name"
                };
                p.get(member)?.as_str()
            });
            if let Some(name) = name.filter(|_| {
                matches!(
                    method,
                    methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
                )
            }) {
                headers.extend(mcp_name_header(name));
            }
        }
        let params = params
            .map(|p| serde_json::value::to_raw_value(&p))
            .transpose()
            .map_err(Error::internal)?;
        let payload = self
            .request(
                method.to_owned(),
                params,
                RequestOptions::with_timeout(timeout.unwrap_or(self.options.request_timeout)),
                SendOptions::default().with_headers(headers),
                &mut None,
                None,
            )
            .await?;
        let Payload::Raw(raw) = payload else {
            return Err(malformed_result(method, &"decoded as another type"));
        };
        if modern {
            ResultEnvelope::read(&raw).map_err(|e| malformed_result(method, &e))?;
        }
        Ok(raw)
    }

    /// Listens for what the server announces (2026-07-28 `subscriptions/listen`, which
    /// replaces the standalone GET stream): `notifications/subscriptions/acknowledged` with
    /// what was granted, then the list changes and resource updates asked for in
    /// `notifications` (for instance `{"toolsListChanged": true}`), each given to
    /// [`ClientOptions::notifications`]; a tools list change also drops this endpoint's
    /// cached `tools/list` pages. Returns when the server ends the stream, when `cancel` is
    /// triggered (the stream is closed), or at `max_duration`. Refused at 2025-era revisions,
    /// whose servers announce on the GET stream ([`HttpConfig::server_stream`]).
    pub async fn listen(
        &self,
        notifications: serde_json::Value,
        max_duration: Duration,
        cancel: Option<CancelToken>,
    ) -> Result<(), Error> {
        if !self.is_modern() {
            return Err(Error::refused(RequestError::NotInRevision {
                method: methods::SUBSCRIPTIONS_LISTEN.to_owned(),
                version: self.protocol_version(),
            }));
        }
        let params = serde_json::value::to_raw_value(&serde_json::json!({
            "notifications": notifications
        }))
        .map_err(Error::internal)?;
        let outcome = self
            .request(
                methods::SUBSCRIPTIONS_LISTEN,
                Some(params),
                RequestOptions::with_timeout(max_duration),
                SendOptions::default(),
                &mut None,
                cancel,
            )
            .await;
        match outcome {
            Ok(Payload::Raw(raw)) => {
                ResultEnvelope::read(&raw)
                    .map_err(|e| malformed_result(methods::SUBSCRIPTIONS_LISTEN, &e))?;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Sends `ping` and waits for the answer. At a stateless revision, which has no `ping`,
    /// it is refused without sending.
    pub async fn ping(&self) -> Result<(), Error> {
        self.request(
            methods::PING,
            None,
            RequestOptions::with_timeout(self.options.request_timeout),
            SendOptions::default(),
            &mut None,
            None,
        )
        .await
        .map(drop)
    }

    /// Ends the session: pending requests fail, and an HTTP session is ended with `DELETE`
    /// (bounded by the transport's close timeout); a stdio server gets its stdin closed, then
    /// is terminated, then killed.
    pub async fn close(mut self) {
        let (reply, done) = oneshot::channel();
        if self.commands.send(Command::Close { reply }).await.is_ok() {
            let _ = done.await;
        }
        if let Some(driver) = self.driver.take() {
            let _ = driver.await;
        }
    }

    async fn request(
        &self,
        method: impl Into<std::borrow::Cow<'static, str>>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
        limits: SendOptions,
        on_progress: &mut Option<ProgressSink>,
        cancel: Option<CancelToken>,
    ) -> Result<Payload, Error> {
        let params = Params {
            raw: params,
            stamped: None,
        };
        self.request_stamped(method, params, options, limits, on_progress, cancel)
            .await
    }

    /// [`request`](Self::request), with params that may carry the session's stamp already.
    async fn request_stamped(
        &self,
        method: impl Into<std::borrow::Cow<'static, str>>,
        params: Params,
        options: RequestOptions,
        limits: SendOptions,
        on_progress: &mut Option<ProgressSink>,
        cancel: Option<CancelToken>,
    ) -> Result<Payload, Error> {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let (reply, mut answer) = reply::slot(on_progress.is_some());
        self.commands
            .send(Command::Request {
                key,
                method: method.into(),
                params: params.raw,
                options,
                limits,
                stamped: params.stamped,
                reply,
                #[cfg(feature = "tracing")]
                span: tracing::Span::current(),
            })
            .await
            .map_err(|_| Error::closed())?;
        // If this future is dropped before the answer, the guard cancels the request.
        let mut guard = CancelOnDrop {
            commands: self.commands.clone(),
            key,
            armed: true,
        };
        let cancel = cancel.unwrap_or_default();
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        let outcome = loop {
            let wake = std::future::poll_fn(|cx| {
                if let Poll::Ready(delivered) = answer.poll_next(cx) {
                    return Poll::Ready(CallWake::Delivered(delivered));
                }
                if cancelled.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(CallWake::Cancelled);
                }
                Poll::Pending
            })
            .await;
            match wake {
                CallWake::Delivered(reply::Delivered::Progress(params)) => {
                    if let Some(sink) = on_progress.as_mut() {
                        sink(&redact_progress(params, &self.secrets()));
                    }
                }
                CallWake::Delivered(reply::Delivered::Answer(answer)) => break answer,
                CallWake::Cancelled => {
                    let _ = self
                        .commands
                        .send(Command::Cancel {
                            key,
                            reason: "cancelled by the caller".to_owned(),
                        })
                        .await;
                    // The session settles the request at once; keep waiting for that answer.
                    break answer.answer().await;
                }
            }
        };
        guard.armed = false;
        // Progress that arrived before the answer is delivered before the result.
        if let Some(sink) = on_progress.as_mut() {
            while let Some(params) = answer.try_progress() {
                sink(&redact_progress(params, &self.secrets()));
            }
        }
        let outcome = outcome.ok_or(());
        match outcome {
            Ok(Ok(Payload::Raw(raw))) => redact_result(raw, &self.secrets()).map(Payload::Raw),
            // Decoded only when the reply echoed no credential (the exchange checks).
            Ok(Ok(decoded)) => Ok(decoded),
            Ok(Err(error)) => Err(redact(call_error(error), &self.secrets())),
            Err(_) => Err(Error::closed()),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A client dropped without `close` still ends its driver; its requests fail as closed.
        if let Some(driver) = self.driver.take() {
            let commands = self.commands.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let (reply, done) = oneshot::channel();
                    if commands.send(Command::Close { reply }).await.is_ok() {
                        let _ = done.await;
                    }
                    let _ = driver.await;
                });
            } else {
                driver.abort();
            }
        }
    }
}

/// The params of `tools/call` as [`CallToolRequestParams`](crate::mcp::CallToolRequestParams) writes them, over the caller's
/// arguments and `_meta` rather than copies of them.
#[derive(serde::Serialize)]
struct CallParams<'a, M: serde::Serialize + ?Sized> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a JsonObject>,
    #[serde(rename = "_meta")]
    meta: CallMeta<'a, M>,
}

/// A call's `_meta`: the caller's members and the one more it gave, then the progress token
/// (which replaces one the caller set), then the envelope of the session's stamp, if given
/// (which replaces any envelope key the caller set).
struct CallMeta<'a, M: ?Sized> {
    meta: Option<&'a JsonObject>,
    member: Option<(&'a str, &'a M)>,
    token: &'a ProgressToken,
    stamp: Option<&'a modern::Stamp>,
}

impl<M: serde::Serialize + ?Sized> serde::Serialize for CallMeta<'_, M> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let members = self.meta.into_iter().flatten();
        let mut map = serializer.serialize_map(None)?;
        let replaced = |key: &str| {
            key == crate::mcp::PROGRESS_TOKEN_KEY
                || (self.stamp.is_some() && modern::is_envelope_key(key))
        };
        let member = self.member.filter(|(key, _)| !replaced(key));
        let member_key = member.map(|(key, _)| key);
        for (key, value) in
            members.filter(|(key, _)| !replaced(key) && member_key != Some(key.as_str()))
        {
            map.serialize_entry(key, value)?;
        }
        if let Some((key, value)) = member {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(crate::mcp::PROGRESS_TOKEN_KEY, self.token)?;
        if let Some(stamp) = self.stamp {
            stamp.write_members(&mut map)?;
        }
        map.end()
    }
}

/// A request's params, and the stamp they were built with, if any.
struct Params {
    raw: Option<Box<RawValue>>,
    stamped: Option<Arc<modern::Stamp>>,
}

/// What woke a waiting call. (Hand-written polling rather than `tokio::select!`, which would
/// pull tokio's proc-macro crates into the client's dependency tree for two loops.)
enum CallWake<A> {
    Delivered(reply::Delivered<A>),
    Cancelled,
}

/// What woke the driver.
enum DriverWake {
    Http((StreamId, Frame)),
    Stdio(Option<LinkEvent>),
    Command(Option<Command>),
    Deadline,
}

/// The `Mcp-Name` header for `name` (a tool, prompt or resource), encoded as the spec says.
fn mcp_name_header(name: &str) -> Option<(HeaderName, HeaderValue)> {
    HeaderValue::from_str(&mcp_headers::encode_header_value(name))
        .ok()
        .map(|value| (MCP_NAME, value))
}

const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Whether a request was lost with its stream (not answered, not refused).
fn stream_broke(error: &Error) -> bool {
    error.failure().is_some_and(|failure| {
        failure.kind == FailureKind::ConnectionLost && failure.delivery == Delivery::MayHaveReached
    })
}

fn malformed_result(method: &str, why: &dyn std::fmt::Display) -> Error {
    Error::from_failure(Failure::new(
        FailureKind::Protocol,
        Delivery::Answered,
        format!("the {method} result is malformed: {why}"),
    ))
}

/// The `arguments` of `tools/call` params (read again only to rebuild headers after a
/// relisting).
fn arguments_of(params: &RawValue) -> Option<JsonObject> {
    #[derive(serde::Deserialize)]
    struct Arguments {
        #[serde(default)]
        arguments: Option<JsonObject>,
    }
    serde_json::from_str::<Arguments>(params.get())
        .ok()
        .and_then(|a| a.arguments)
}

/// The tokens a driver sent, shared with its client for redaction (the latest
/// [`SENT_TOKENS`]).
type SentTokens = Arc<std::sync::Mutex<Vec<Secret>>>;

/// How many sent tokens are remembered for redaction.
const SENT_TOKENS: usize = 32;

/// Adds `token` to the tokens sent, unless it is there.
fn remember(sent: &SentTokens, token: &Secret) {
    if let Ok(mut sent) = sent.lock()
        && !sent.contains(token)
    {
        if sent.len() >= SENT_TOKENS {
            sent.remove(0);
        }
        sent.push(token.clone());
    }
}

/// `fixed` plus, with a token source, the tokens sent and the source's own secrets.
fn all_secrets<'a>(
    fixed: &'a [Secret],
    dynamic: Option<&(SentTokens, auth::Auth)>,
) -> Cow<'a, [Secret]> {
    let Some((sent, auth)) = dynamic else {
        return Cow::Borrowed(fixed);
    };
    let mut all = fixed.to_vec();
    if let Ok(sent) = sent.lock() {
        all.extend(sent.iter().cloned());
    }
    all.extend(auth.secrets());
    Cow::Owned(all)
}

/// Whether two URLs have the same scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    match (crate::auth::Url::parse(a), crate::auth::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

fn redact(error: Error, secrets: &[Secret]) -> Error {
    secrets
        .iter()
        .fold(error, |error, secret| error.redacted(secret))
}

/// A request's result as `T`: decoded already by the exchange, or parsed from the raw JSON.
fn typed<T: DeserializeOwned + 'static>(payload: Payload, method: &str) -> Result<T, Error> {
    let malformed = |e: &dyn std::fmt::Display| {
        Error::from_failure(Failure::new(
            FailureKind::Protocol,
            Delivery::Answered,
            format!("the {method} result is malformed: {e}"),
        ))
    };
    match payload {
        Payload::Raw(raw) => serde_json::from_str(raw.get()).map_err(|e| malformed(&e)),
        Payload::Decoded(decoded) => decoded
            .downcast::<T>()
            .map(|result| *result)
            .map_err(|_| malformed(&"decoded as another type")),
    }
}

/// A `tools/call` result, read whole or for its content only (as the call's decoder read it).
fn call_result(payload: Payload, content_only: bool) -> Result<CallToolResult, Error> {
    match content_only {
        true => typed::<ContentOnly>(payload, methods::TOOLS_CALL).map(|result| result.0),
        false => typed(payload, methods::TOOLS_CALL),
    }
}

/// A server may echo a credential in what it returns (a tool's output quoting the request's
/// headers or its own environment, a tool description): credentials are taken out of every
/// result before anyone sees it.
fn redact_result(raw: Box<RawValue>, secrets: &[Secret]) -> Result<Box<RawValue>, Error> {
    if !secrets.iter().any(|secret| secret.appears_in(raw.get())) {
        return Ok(raw);
    }
    RawValue::from_string(crate::transport::redact_all(secrets, raw.get())).map_err(|_| {
        Error::from_failure(Failure::new(
            FailureKind::Protocol,
            Delivery::Answered,
            "the result holds a credential where it cannot be redacted",
        ))
    })
}

/// Progress messages are server text too: no credential in them either.
fn redact_progress(
    mut params: ProgressNotificationParams,
    secrets: &[Secret],
) -> ProgressNotificationParams {
    if let Some(message) = params.message.as_mut().filter(|_| !secrets.is_empty()) {
        *message = crate::transport::redact_all(secrets, message);
    }
    params
}

/// This process's id, read once: `std::process::id()` is a `getpid` system call on every
/// call (glibc has not cached it since 2.25), and a progress token needs it per tool call.
fn process_id() -> u32 {
    static ID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ID.get_or_init(std::process::id)
}

fn call_error(error: CallError) -> Error {
    match error {
        CallError::Refused(refused) => Error::refused(refused),
        CallError::Failed(failure) => Error::from_failure(failure),
    }
}

/// Cancels a request whose caller went away.
struct CancelOnDrop {
    commands: mpsc::Sender<Command>,
    key: u64,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.commands.try_send(Command::Cancel {
                key: self.key,
                reason: "the caller went away".to_owned(),
            });
        }
    }
}

/// What the driver keeps per request.
struct Entry {
    key: u64,
    reply: Reply,
    limits: SendOptions,
    /// The span the request was made in: what happens on its stream is reported there, not
    /// in the span the client was made in (a client may outlive the call that made it).
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

/// A driver's token source and what it needs to run it.
struct DriverAuth {
    auth: auth::Auth,
    sent: SentTokens,
    /// For the OAuth flows' requests.
    pool: HttpPool,
    log: Option<crate::exchange::WireLog>,
    /// The last token refused and the one the source gave to replace it.
    superseded: Option<(Secret, Secret)>,
}

struct Driver {
    /// Where an HTTP session's tokens come from, when not static.
    auth: Option<DriverAuth>,
    /// The `tools/list` pages of this endpoint, dropped when its tool list changes.
    lists: Option<(ListCache, String)>,
    /// Answers the server's 2025-era requests for input.
    input_handler: Option<Arc<dyn InputHandler>>,
    /// Where the handler's answers come back.
    answers: mpsc::Sender<Command>,
    session: Session,
    link: Link,
    commands: mpsc::Receiver<Command>,
    entries: IdMap<Id, Entry>,
    keys: IdMap<u64, Id>,
    notifications: Option<mpsc::Sender<Notification<'static>>>,
    /// Who waits for the handshake.
    connect: Option<ConnectReply>,
    /// Closing has begun; who waits for it to end.
    closing: Option<Option<oneshot::Sender<()>>>,
    /// The link has finished closing (the HTTP exchange's `DELETE` is over).
    link_closed: bool,
}

#[allow(clippy::disallowed_methods)] // The driver owns the clock: the one reading of it.
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

impl Driver {
    async fn run(mut self) {
        // One timer for the loop, moved when the next deadline moves: a timer made for each
        // turn would be put into tokio's wheel and taken out again every time.
        let sleep = tokio::time::sleep_until(now().into());
        let mut sleep = std::pin::pin!(sleep);
        let mut armed: Option<std::time::Instant> = None;
        // The time of the last wake, for the turn it starts (a few microseconds old by the
        // time the outputs are moved: no deadline is that close).
        let mut woken = now();
        loop {
            self.flush_at(woken);
            if self.link_closed {
                if let Some(Some(reply)) = self.closing.take() {
                    let _ = reply.send(());
                }
                return;
            }
            let deadline = match (&self.link, self.session.poll_timeout()) {
                (Link::Http(link), session) => {
                    let exchange = link.exchange_ref().poll_timeout();
                    session.into_iter().chain(exchange).min()
                }
                (Link::Stdio { .. }, session) => session,
            };
            if deadline != armed {
                if let Some(at) = deadline {
                    sleep.as_mut().reset(at.into());
                }
                armed = deadline;
            }
            let closing = self.closing.is_some();
            // Link events first and the deadline last: an answer that has arrived is taken in
            // before a timeout could fail its request.
            let wake = std::future::poll_fn(|cx| {
                match &mut self.link {
                    Link::Http(link) => {
                        if let Poll::Ready(frame) = link.poll_frame(cx) {
                            return Poll::Ready(DriverWake::Http(frame));
                        }
                    }
                    Link::Stdio { events, .. } => {
                        if let Poll::Ready(event) = events.poll_recv(cx) {
                            return Poll::Ready(DriverWake::Stdio(event));
                        }
                    }
                }
                if !closing && let Poll::Ready(command) = self.commands.poll_recv(cx) {
                    return Poll::Ready(DriverWake::Command(command));
                }
                if armed.is_some() && sleep.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(DriverWake::Deadline);
                }
                Poll::Pending
            })
            .await;
            let now = now();
            woken = now;
            match wake {
                DriverWake::Http((stream, frame)) => {
                    if let Link::Http(link) = &mut self.link {
                        #[cfg(feature = "tracing")]
                        let _span = link
                            .exchange_ref()
                            .request_on(stream)
                            .and_then(|id| self.entries.get(id))
                            .map(|entry| entry.span.clone().entered());
                        link.handle_frame(stream, frame, now);
                    }
                }
                DriverWake::Stdio(event) => match event {
                    Some(event) => self.on_stdio_event(event, now),
                    None => {
                        // The link's tasks are gone: nothing more will arrive.
                        let failure = Failure::new(
                            FailureKind::ConnectionLost,
                            Delivery::MayHaveReached,
                            "the stdio link ended",
                        );
                        self.session.fail_all(&failure);
                        if self.closing.is_none() {
                            self.closing = Some(None);
                        }
                        self.link_closed = true;
                    }
                },
                DriverWake::Command(command) => match command {
                    Some(Command::Close { reply }) => {
                        self.begin_close(Some(reply), now).await;
                        woken = self::now();
                    }
                    Some(command) => self.on_command(command, now),
                    None => {
                        self.begin_close(None, now).await;
                        woken = self::now();
                    }
                },
                DriverWake::Deadline => {
                    self.session.handle_timeout(now);
                    if let Link::Http(link) = &mut self.link {
                        link.exchange().handle_timeout(now);
                    }
                }
            }
        }
    }

    /// Closes the session; an HTTP link then finishes its `DELETE` while the loop runs on, a
    /// stdio server is shut down here.
    async fn begin_close(&mut self, reply: Option<oneshot::Sender<()>>, now: std::time::Instant) {
        if self.closing.is_some() {
            return;
        }
        self.closing = Some(reply);
        self.session.close();
        self.flush();
        match &mut self.link {
            Link::Http(link) => link.exchange().close(now),
            Link::Stdio { link, .. } => {
                link.close().await;
                self.link_closed = true;
            }
        }
    }

    fn on_command(&mut self, command: Command, now: std::time::Instant) {
        match command {
            Command::Start { reply } => {
                self.session.start(now);
                self.connect = Some(reply);
            }
            Command::Request {
                key,
                method,
                params,
                options,
                limits,
                stamped,
                reply,
                #[cfg(feature = "tracing")]
                span,
            } => match self
                .session
                .request_stamped(&method, params, options, stamped.as_ref(), now)
            {
                Ok(id) => {
                    self.keys.insert(key, id.clone());
                    self.entries.insert(
                        id,
                        Entry {
                            key,
                            reply,
                            limits,
                            #[cfg(feature = "tracing")]
                            span,
                        },
                    );
                }
                Err(refused) => reply.send(Err(CallError::Refused(refused))),
            },
            Command::Cancel { key, reason } => {
                if let Some(id) = self.keys.get(&key).cloned() {
                    self.session.cancel(&id, &reason);
                }
            }
            Command::Answer { id, answer } => self.session.answer_server_request(&id, answer),
            Command::SwitchVersion(version) => {
                self.session.switch_version(version);
                if let Link::Http(link) = &mut self.link {
                    link.exchange().set_modern(Some(version.as_str()));
                }
            }
            Command::Reauthorized { id, sent, token } => {
                if let Link::Http(link) = &mut self.link {
                    match token {
                        Ok(token) => {
                            if let Some(auth) = &mut self.auth {
                                remember(&auth.sent, &token);
                                auth.superseded = sent.map(|old| (old, token.clone()));
                            }
                            link.exchange().resend(&id, Some(token), now);
                        }
                        Err(reason) => link.exchange().reject(&id, &reason),
                    }
                }
            }
            Command::Close { .. } => {}
        }
    }

    /// Puts the token source's current token on the next request, and starts the
    /// background refresh of one that is due.
    fn prepare_bearer(&mut self) {
        let (Some(auth), Link::Http(link)) = (&self.auth, &mut self.link) else {
            return;
        };
        let now = auth::unix_now();
        auth.auth.refresh_if_due(&auth.pool, auth.log.as_ref(), now);
        let mut token = auth.auth.token(now);
        // A source that still hands out the token it gave a replacement for: the replacement.
        if let (Some(given), Some((old, new))) = (&token, &auth.superseded)
            && given == old
        {
            token = Some(new.clone());
        }
        if token.as_ref() != link.exchange_ref().bearer() {
            if let Some(token) = &token {
                remember(&auth.sent, token);
            }
            link.exchange().set_bearer(token);
        }
    }

    /// The server refused a request's credentials: the token source is asked for a new
    /// token in a task of its own (a flow's requests, a person's approval), whose answer
    /// comes back as a command; the other requests go on meanwhile.
    fn on_refusal(&mut self, refusal: crate::exchange::Refusal) {
        let Some(auth) = &self.auth else {
            if let Link::Http(link) = &mut self.link {
                link.exchange()
                    .reject(&refusal.id, "no token source is configured");
            }
            return;
        };
        let (source, pool, log) = (auth.auth.clone(), auth.pool.clone(), auth.log.clone());
        let answers = self.answers.clone();
        tokio::spawn(async move {
            let token = source.refused(&pool, &refusal, log.as_ref()).await;
            let _ = answers
                .send(Command::Reauthorized {
                    id: refusal.id,
                    sent: refusal.sent,
                    token,
                })
                .await;
        });
    }

    fn on_stdio_event(&mut self, event: LinkEvent, now: std::time::Instant) {
        match event {
            LinkEvent::Message(message) => self.session.handle_message(message, now),
            LinkEvent::Down(failure) => {
                if let Link::Stdio {
                    link,
                    events,
                    respawn,
                } = &mut self.link
                    && let Some(config) = respawn.take()
                    && self.session.probe_lost(now)
                {
                    // A 2025-era server that exits on a message it does not know: started
                    // again, it gets `initialize` first.
                    let (events_tx, new_events) = mpsc::channel(256);
                    match StdioLink::spawn(*config, events_tx) {
                        Ok(new_link) => {
                            *link = new_link;
                            *events = new_events;
                        }
                        Err(failure) => self.session.fail_all(&failure),
                    }
                    return;
                }
                self.session.fail_all(&failure);
            }
        }
    }

    /// Moves outputs between the session and the link until neither has any.
    fn flush(&mut self) {
        self.flush_at(now());
    }

    /// [`flush`](Self::flush), at `now`.
    fn flush_at(&mut self, now: std::time::Instant) {
        loop {
            let mut busy = false;
            while let Some(output) = self.session.poll_output() {
                busy = true;
                self.on_session_output(output, now);
            }
            while let Some(output) = match &mut self.link {
                Link::Http(link) => link.poll_output(),
                Link::Stdio { .. } => None,
            } {
                busy = true;
                self.on_exchange_output(output, now);
            }
            if !busy {
                return;
            }
        }
    }

    fn on_exchange_output(&mut self, output: ExchangeOutput, now: std::time::Instant) {
        match output {
            ExchangeOutput::Message(message) => self.session.handle_message(message, now),
            ExchangeOutput::Decoded { id, result } => {
                self.session.handle_decoded_response(id, result);
            }
            ExchangeOutput::Progress(params) => self.session.handle_progress(params, now),
            ExchangeOutput::RequestFailed { id, failure } => {
                self.session.fail_request(&id, failure);
            }
            ExchangeOutput::LegacyTransport => {
                trace_info!(
                    protocol_version = "2024-11-05",
                    "era fallback: the server speaks only the legacy HTTP+SSE transport"
                );
                self.session.downgrade_to_legacy(now);
            }
            ExchangeOutput::Down(failure) => self.session.fail_all(&failure),
            ExchangeOutput::Closed { .. } => self.link_closed = true,
            ExchangeOutput::Refused(refusal) => self.on_refusal(refusal),
            // Requests and aborts are carried out by the link itself.
            _ => {}
        }
    }

    fn on_session_output(&mut self, output: Output, now: std::time::Instant) {
        match output {
            Output::Ready(ready) => {
                trace_info!(
                    protocol_version = ready.version.as_str(),
                    "protocol revision settled"
                );
                let session_id = match &mut self.link {
                    Link::Http(link) if ready.version.is_modern() => {
                        let exchange = link.exchange();
                        exchange.set_modern(Some(ready.version.as_str()));
                        exchange.note(&format!(
                            "= era: {} ({})",
                            ready.version,
                            if ready.server.is_some() {
                                "the server answered server/discover"
                            } else {
                                "known from an earlier probe"
                            }
                        ));
                        None
                    }
                    Link::Http(link) => {
                        let exchange = link.exchange();
                        exchange.note(&format!(
                            "= era: 2025 (initialize answered at {})",
                            ready.version
                        ));
                        // Before `notifications/initialized` goes out, so it carries the header.
                        exchange.set_protocol_version(ready.version.as_str());
                        exchange.open_server_stream(now);
                        exchange.session_id().map(str::to_owned)
                    }
                    Link::Stdio { respawn, .. } => {
                        // Past the handshake a server that exits is gone.
                        *respawn = None;
                        None
                    }
                };
                if let Some(connect) = self.connect.take() {
                    let stamp = self.session.stamp().cloned();
                    let _ = connect.send(Ok((*ready, session_id, stamp)));
                }
            }
            Output::Transmit(transmit) => {
                let id = transmit.request_id();
                let handshake = id.is_some() && id == self.session.initialize_id();
                let limits = match id.and_then(|id| self.entries.get(id)) {
                    Some(entry) => entry.limits.clone(),
                    // The probe's answer is read raw: it may be any result or error.
                    None if handshake && self.session.probe_version().is_some() => {
                        SendOptions::default()
                    }
                    None if handshake => SendOptions::decoding::<InitializeResult>(),
                    None => SendOptions::default(),
                };
                if handshake && let Link::Http(link) = &mut self.link {
                    // The probe goes out with the headers of the revision it names;
                    // `initialize` after it by the 2025-era rules.
                    let probing = self.session.probe_version().map(ProtocolVersion::as_str);
                    link.exchange().set_modern(probing);
                }
                self.prepare_bearer();
                match &mut self.link {
                    Link::Http(link) => link.send(transmit.message, limits, transmit.barrier, now),
                    // One writer task writes stdin in order: queued is as good as sent.
                    Link::Stdio { link, .. } => link.send(transmit.message),
                }
            }
            Output::Settled(settled) => {
                if let Link::Http(link) = &mut self.link {
                    // A request we gave up on (deadline, cancel) has its stream closed now;
                    // one that was answered is read on briefly, so the connection can be
                    // reused.
                    let answered = settled.answered();
                    link.exchange().finish(&settled.id, answered, now);
                    if answered && let Some(auth) = &self.auth {
                        auth.auth.accepted();
                    }
                }
                if self.session.initialize_id() == Some(&settled.id) {
                    // Success was reported by `Output::Ready`.
                    if let (Err(failure), Some(connect)) = (settled.outcome, self.connect.take()) {
                        let _ = connect.send(Err(CallError::Failed(failure)));
                    }
                    return;
                }
                if let Some(entry) = self.entries.remove(&settled.id) {
                    self.keys.remove(&entry.key);
                    entry.reply.send(settled.outcome.map_err(CallError::Failed));
                }
            }
            Output::Progress { id, params } => {
                if let Some(entry) = self.entries.get(&id) {
                    entry.reply.progress(params);
                }
            }
            Output::Notification(notification) => {
                if notification.method == methods::TOOLS_LIST_CHANGED
                    && let Some((lists, url)) = &self.lists
                {
                    lists.invalidate(url);
                }
                if let Some(sink) = &self.notifications {
                    let _ = sink.try_send(notification);
                }
            }
            Output::ServerRequest(request) => {
                let id = request.id.clone();
                let Some(handler) = self.input_handler.clone() else {
                    let error = crate::jsonrpc::ErrorObject::new(
                        crate::jsonrpc::METHOD_NOT_FOUND,
                        "this client has no input handler",
                    );
                    self.session.answer_server_request(&id, Err(error));
                    return;
                };
                let answers = self.answers.clone();
                let input = InputRequest {
                    key: String::new(),
                    method: request.method.into_owned(),
                    params: request.params.map(|p| p.into_owned()),
                };
                // The handler may wait on a person: its answer comes back as a command.
                tokio::spawn(async move {
                    let answer = match handler.answer(input).await {
                        Ok(value) => serde_json::value::to_raw_value(&value).map_err(|e| {
                            crate::jsonrpc::ErrorObject::new(
                                crate::jsonrpc::INTERNAL_ERROR,
                                format!("the answer is not JSON: {e}"),
                            )
                        }),
                        Err(error) => Err(crate::jsonrpc::ErrorObject::new(
                            crate::jsonrpc::INTERNAL_ERROR,
                            format!("the client could not answer: {error}"),
                        )),
                    };
                    let _ = answers.send(Command::Answer { id, answer }).await;
                });
            }
        }
    }
}

/// A `tools/call` answered -32021 (MissingRequiredClientCapability), never sent again. When the
/// capability is elicitation, the server wanted user input for a tool that may have run: real
/// servers find that out inside the tool (the TypeScript SDK v2 runs the handler, which asks
/// for an elicitation, and only then answers -32021: `fixtures/ts2-2026-confirm`), so it fails
/// as an elicitation request with its outcome unknown, as a 2025-era `elicitation/create` does
/// (SPEC.md). Any other capability stays the server's refusal (a JSON-RPC error): `None`.
fn elicitation_refusal(failure: &Failure) -> Option<Error> {
    let required = failure
        .data()
        .and_then(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .and_then(|data| data.get("requiredCapabilities").cloned());
    let wants_input = required
        .as_ref()
        .and_then(serde_json::Value::as_object)
        .is_some_and(|caps| caps.contains_key("elicitation"));
    if !wants_input {
        return None;
    }
    let named = required.map_or_else(String::new, |caps| caps.to_string());
    Some(Error::from_failure(Failure::new(
        FailureKind::ElicitationRequested,
        Delivery::MayHaveReached,
        format!(
            "the server needs user input (-32021, required capabilities {named}), which a \
             call through this client cannot give; the tool may have run"
        ),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(meta: Option<JsonObject>, member: Option<(&str, &serde_json::Value)>) -> String {
        let token = ProgressToken::String("call-1".to_owned());
        let stamp = modern::Stamp::new(modern::Envelope {
            version: ProtocolVersion::V2026_07_28,
            capabilities: ClientCapabilities::default(),
            client_info: crate::mcp::Implementation::new("mcpwire", "1"),
        });
        let arguments = serde_json::json!({"q": 1});
        let params = CallParams {
            name: "t",
            arguments: arguments.as_object(),
            meta: CallMeta {
                meta: meta.as_ref(),
                member,
                token: &token,
                stamp: Some(&stamp),
            },
        };
        serde_json::to_string(&params).expect("params")
    }

    #[test]
    fn a_call_member_goes_after_the_callers_and_replaces_one_of_its_name() {
        let scope = serde_json::json!({"tenant_id": "t1"});
        let meta = serde_json::json!({"a": 1, "host/scope": "old", "progressToken": "x"});
        let written = params(meta.as_object().cloned(), Some(("host/scope", &scope)));
        let value: serde_json::Value = serde_json::from_str(&written).expect("JSON");
        let keys: Vec<_> = value["_meta"]
            .as_object()
            .expect("_meta")
            .keys()
            .cloned()
            .collect();
        // serde_json's map sorts its keys: the order written is checked on the text.
        assert_eq!(keys.len(), 6, "{written}");
        assert_eq!(value["_meta"]["host/scope"], scope);
        assert_eq!(value["_meta"]["progressToken"], "call-1");
        assert_eq!(value["_meta"]["a"], 1);
        let at = |key: &str| written.find(&format!("\"{key}\"")).expect(key);
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
}
