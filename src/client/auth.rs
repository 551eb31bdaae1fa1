//! Where an HTTP session's bearer tokens come from, and the async half of OAuth: the client
//! asks an [`Auth`] for the token of each request and, when the server refuses a request's
//! credentials (401, 403) before running it, for a new one to send the request again with.
//!
//! Two sources: a host's own [`TokenProvider`] (a token store, a secrets manager), or
//! [`OAuth`], which runs the MCP authorization spec's flows with the sans-IO
//! `Flow` and carries its requests itself on the session's pool
//! (`GET`/`POST`, each body read up to its limit, no redirect followed, every request under a
//! deadline, `https` or loopback `http` only, to the MCP server's origin and its
//! authorization server's). A person's approval goes through the host's [`Authorizer`]. A
//! static token (`HttpConfig::bearer_token`, a binding's `token_env`) needs neither.
//!
//! One [`OAuth`] serves one MCP server and may be shared by every client that connects to it
//! (an `Arc`): they share its tokens, and one flow runs at a time. A token store keeps
//! [`OAuth::cache`] and starts the next process with [`OAuth::with_cache`], or implements
//! [`TokenProvider`] itself; [`store::TokenStore`] is one that processes share (each refresh
//! under its lock, with what it holds then).
//!
//! A token is refreshed in the background once it is due (its refresh margin), while it
//! stays in use; a request about to go out with one within [`Limits::expiry_skew_secs`] of
//! its expiry, or past it (a client that sat idle), waits for its refresh instead of taking
//! a 401 (`Flow::refresh_ahead`).
//!
//! [`Limits::expiry_skew_secs`]: crate::auth::Limits::expiry_skew_secs
//!
//! ```no_run
//! use std::sync::Arc;
//! use mcpwire::auth::{Config, Url};
//! use mcpwire::client::auth::{Auth, AuthorizeFuture, Authorizer, OAuth};
//! use mcpwire::client::{Client, ClientOptions};
//! use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
//!
//! /// Shows the URL; a real one opens a browser and listens on the loopback redirect URI,
//! /// then returns the URL the browser came back to.
//! struct ShowUrl;
//!
//! impl Authorizer for ShowUrl {
//!     fn authorize(&self, url: &Url) -> AuthorizeFuture {
//!         let url = url.to_string();
//!         Box::pin(async move {
//!             eprintln!("open {url}");
//!             Err("this example does not listen for the redirect".into())
//!         })
//!     }
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let server = "https://mcp.example.com/mcp";
//! let config = Config::authorization_code(server, "http://127.0.0.1:8765/callback")?;
//! let oauth = Arc::new(OAuth::new(config, Some(Arc::new(ShowUrl)))?);
//! let mut options = ClientOptions::default();
//! options.auth = Some(Auth::oauth(oauth.clone()));
//! let pool = HttpPool::new(&TlsOptions::default())?;
//! // A 401 runs the flow; the refused request is sent again with the token.
//! let client = Client::connect_http(&pool, HttpConfig::new(server)?, options).await?;
//! # Ok(()) }
//! ```

pub mod store;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;

use crate::auth::{
    AssertionSource, Clock, Config, Flow, GrantKind, Output, Randomness,
    Refusal as ProviderRefusal, Secret, TokenCache, TokenProvider, UnixTime, Url,
};
use crate::exchange::Refusal;
use crate::exchange::config::WireLog;
use crate::transport::http::{HttpPool, RawEnd};

/// The wall clock, in the flow's terms: the driver's one reading of it for token expiry and
/// assertions (time is an input to the flow). [`SystemClock`] is this.
#[allow(clippy::disallowed_methods)]
pub(crate) fn unix_now() -> UnixTime {
    UnixTime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}

/// The system's wall clock: the [`Clock`] an [`Auth`] over a host's provider reads, and an
/// [`OAuth`] unless it is given another ([`OAuth::with_clock`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixTime {
        unix_now()
    }
}

/// A source of bearer tokens for an HTTP session ([`ClientOptions::auth`]): a host's
/// [`TokenProvider`], or [`OAuth`]. Cheap to clone.
///
/// [`ClientOptions::auth`]: crate::client::ClientOptions::auth
#[derive(Clone)]
pub struct Auth {
    /// Tells the principal apart from every other in the process (for cached pages).
    id: u64,
    source: Source,
    /// Where the time of each token request and refusal is read.
    clock: Arc<dyn Clock>,
}

#[derive(Clone)]
enum Source {
    Provider(Arc<dyn TokenProvider>),
    OAuth(Arc<OAuth>),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Source::Provider(_) => f.write_str("Auth::Provider(..)"),
            Source::OAuth(oauth) => f.debug_tuple("Auth::OAuth").field(oauth).finish(),
        }
    }
}

impl Auth {
    /// A host's token provider: asked for each request's token, and told of each refusal.
    pub fn provider(provider: Arc<dyn TokenProvider>) -> Auth {
        Auth {
            id: NEXT_AUTH.fetch_add(1, Ordering::Relaxed),
            source: Source::Provider(provider),
            clock: Arc::new(SystemClock),
        }
    }

    /// OAuth flows the client runs itself; clients given the same `oauth` share its tokens.
    /// The time is read from `oauth`'s clock ([`OAuth::with_clock`]).
    pub fn oauth(oauth: Arc<OAuth>) -> Auth {
        Auth {
            id: oauth.id,
            clock: oauth.clock.clone(),
            source: Source::OAuth(oauth),
        }
    }

    /// The time now, as this source's clock says.
    pub(crate) fn now(&self) -> UnixTime {
        self.clock.now()
    }

    /// The OAuth flows, if that is the source.
    pub(crate) fn as_oauth(&self) -> Option<&Arc<OAuth>> {
        match &self.source {
            Source::OAuth(oauth) => Some(oauth),
            Source::Provider(_) => None,
        }
    }

    /// A number that tells this principal from every other in the process.
    pub(crate) fn identity(&self) -> u64 {
        self.id
    }

    /// The token for the next request, at the time this source's clock says.
    pub(crate) fn token(&self) -> Option<Secret> {
        let now = self.now();
        match &self.source {
            Source::Provider(provider) => provider.token(now),
            Source::OAuth(oauth) => oauth.bearer(now),
        }
    }

    /// Puts a DPoP proof on `request` when the token it carries is DPoP-bound: its
    /// `Authorization: Bearer` becomes `Authorization: DPoP`, and a proof of the flow's key
    /// for its method and URI, with that token's `ath` and the server's nonce, goes in the
    /// `DPoP` header (both marked sensitive). Every request gets its own proof, made now;
    /// a request whose proof cannot be made goes as it is (the server refuses it).
    pub(crate) fn present(&self, request: &mut crate::exchange::HttpRequest) {
        let Source::OAuth(oauth) = &self.source else {
            return;
        };
        // Nothing to do (and nothing allocated) on the call path without DPoP.
        if !oauth.dpop {
            return;
        }
        let Some(token) = request
            .headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(Secret::new)
        else {
            return;
        };
        let now = self.now();
        let uri = request.uri.to_string();
        let proof =
            oauth.with_flow(|flow| flow.resource_proof(request.method.as_str(), &uri, &token, now));
        let Some(Some(Ok(proof))) = proof else {
            return;
        };
        let values = (
            http::HeaderValue::from_str(&format!("DPoP {}", token.expose())),
            http::HeaderValue::from_str(proof.expose()),
        );
        if let (Ok(mut authorization), Ok(mut dpop)) = values {
            authorization.set_sensitive(true);
            dpop.set_sensitive(true);
            request
                .headers
                .insert(http::header::AUTHORIZATION, authorization);
            request.headers.insert(crate::auth::dpop::DPOP, dpop);
        }
    }

    /// Whether `refusal` is the MCP server asking for a DPoP nonce (RFC 9449 section 9) for
    /// this source's DPoP-bound token: the nonce is then kept for the proofs to come (see
    /// [`Flow::handle_resource_nonce`]). `false`: an ordinary refusal.
    pub(crate) fn resource_nonce(&self, refusal: &Refusal) -> bool {
        let Source::OAuth(oauth) = &self.source else {
            return false;
        };
        oauth
            .with_flow(|flow| flow.handle_resource_nonce(refusal.status, &refusal.challenges))
            .unwrap_or(false)
    }

    /// The MCP server sent `nonce` as its `DPoP-Nonce` on a reply (any status, RFC 9449
    /// section 9): the proofs from now on carry it (see [`Flow::note_resource_nonce`]).
    pub(crate) fn note_nonce(&self, nonce: &http::HeaderValue) {
        if let Source::OAuth(oauth) = &self.source
            && oauth.dpop
        {
            oauth.with_flow(|flow| flow.note_resource_nonce(nonce.as_bytes()));
        }
    }

    /// A request made with the current token was answered.
    pub(crate) fn accepted(&self) {
        match &self.source {
            Source::Provider(provider) => provider.accepted(),
            Source::OAuth(oauth) => oauth.accepted(),
        }
    }

    /// The secrets to keep out of what the client returns, beyond the tokens it sent: an
    /// OAuth flow's refresh tokens, client secret, codes, verifiers and assertions.
    pub(crate) fn secrets(&self) -> Vec<Secret> {
        match &self.source {
            Source::Provider(_) => Vec::new(),
            Source::OAuth(oauth) => oauth.secrets(),
        }
    }

    /// The new token for a refused request, or why there is none.
    pub(crate) async fn refused(
        &self,
        pool: &HttpPool,
        refusal: &Refusal,
        log: Option<&WireLog>,
    ) -> Result<Secret, NoToken> {
        match &self.source {
            Source::Provider(provider) => {
                provider_refused(provider.as_ref(), refusal, self.clock.as_ref())
                    .await
                    .map_err(NoToken::from)
            }
            Source::OAuth(oauth) => oauth.refused(pool, refusal, log).await,
        }
    }

    /// Before a request goes out: an OAuth token that has expired or is about to (see
    /// [`Flow::refresh_ahead`]) is refreshed first, so the request does not take a 401 for
    /// it. Waits for a run of the flow under way (a background refresh) at most one token
    /// request's time; whatever happens, the request goes out after (with the token there
    /// is then).
    pub(crate) async fn refresh_ahead(&self, pool: &HttpPool, log: Option<&WireLog>) {
        if let Source::OAuth(oauth) = &self.source {
            // Boxed: the flow's future is large (2.4 kB), and held inline it would take that
            // room in every operation's future, with OAuth or without, to be moved on each
            // call.
            Box::pin(oauth.refresh_ahead(pool, log)).await;
        }
    }

    /// Starts the background refresh of an OAuth token that is due, if one is, at the time
    /// this source's clock says.
    pub(crate) fn refresh_if_due(&self, pool: &HttpPool, log: Option<&WireLog>) {
        if let Source::OAuth(oauth) = &self.source
            && oauth.refresh_due(self.now())
        {
            let (oauth, pool, log) = (oauth.clone(), pool.clone(), log.cloned());
            tokio::spawn(async move { oauth.refresh(&pool, log.as_ref()).await });
        }
    }
}

/// How long a provider that answered [`Pending`](ProviderRefusal::Pending) is waited for.
const PENDING_WAIT: Duration = Duration::from_secs(300);
/// How often a pending provider that cannot wake its waiter
/// ([`TokenProvider::wake_when_ready`] false) is asked again.
const PENDING_POLL: Duration = Duration::from_millis(200);

/// A waker that lets one waiting task through: a wake before the wait is kept.
struct Wakeup(tokio::sync::Notify);

impl std::task::Wake for Wakeup {
    fn wake(self: Arc<Self>) {
        self.0.notify_one();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.notify_one();
    }
}

async fn provider_refused(
    provider: &dyn TokenProvider,
    refusal: &Refusal,
    clock: &dyn Clock,
) -> Result<Secret, String> {
    match provider.refused(
        refusal.status,
        &refusal.challenges,
        refusal.sent.as_ref(),
        clock.now(),
    ) {
        ProviderRefusal::Retry(token) => Ok(token),
        ProviderRefusal::Fail(reason) => Err(reason),
        ProviderRefusal::Pending => {
            let wake = Arc::new(Wakeup(tokio::sync::Notify::new()));
            let waker = std::task::Waker::from(wake.clone());
            let fresh = || {
                provider
                    .token(clock.now())
                    .filter(|token| Some(token) != refusal.sent.as_ref())
            };
            let waited = tokio::time::timeout(PENDING_WAIT, async {
                loop {
                    if let Some(token) = fresh() {
                        return token;
                    }
                    // Registered, then asked again: a token that came in between is not missed.
                    let woken = provider.wake_when_ready(&waker);
                    if let Some(token) = fresh() {
                        return token;
                    }
                    if woken {
                        wake.0.notified().await;
                    } else {
                        tokio::time::sleep(PENDING_POLL).await;
                    }
                }
            })
            .await;
            waited.map_err(|_| {
                format!(
                    "the token provider had no new token within {} s",
                    PENDING_WAIT.as_secs()
                )
            })
        }
    }
}

/// What an [`Authorizer`] comes back with: the URL the browser was sent back to (the redirect
/// URI with its query, or that path-and-query as a request target), or why there is none.
pub type AuthorizeFuture =
    Pin<Box<dyn Future<Output = Result<String, Box<dyn std::error::Error + Send + Sync>>> + Send>>;

/// What a host plugs in for the person's part of the authorization code grant: send the
/// person (their browser) to the authorization URL, and hand back where the authorization
/// server sent them. A command-line tool prints or opens the URL and listens on the loopback
/// redirect URI; a test follows the redirect itself (`Headless`, with the `testing` feature).
pub trait Authorizer: Send + Sync {
    /// Sends the person to `url` (it holds no secret: `state` and the PKCE challenge) and
    /// resolves to the redirect back. The flow checks `state`, `iss` and the rest; the
    /// authorizer needs only to bring the URL back within the flow's deadline.
    fn authorize(&self, url: &Url) -> AuthorizeFuture;
}

/// An [`Authorizer`] with no person: it requests the authorization URL itself (one bounded
/// `GET`, no redirect followed) and takes the `Location` of the redirect as the way back. For
/// authorization servers that approve at once (test and conformance servers); a real one
/// wants a person and a browser. Test tooling: only with the `testing` feature.
#[cfg(feature = "testing")]
#[derive(Clone, Debug)]
pub struct Headless {
    pool: HttpPool,
    timeout: Duration,
}

#[cfg(feature = "testing")]
impl Headless {
    /// A headless authorizer whose `GET` goes through `pool`, within `timeout`.
    pub fn new(pool: &HttpPool, timeout: Duration) -> Headless {
        Headless {
            pool: pool.clone(),
            timeout,
        }
    }
}

/// How much of the authorization endpoint's answer is read (only its head matters).
#[cfg(feature = "testing")]
const HEADLESS_BODY_BYTES: usize = 16 * 1024;

#[cfg(feature = "testing")]
impl Authorizer for Headless {
    fn authorize(&self, url: &Url) -> AuthorizeFuture {
        let (pool, timeout, url) = (self.pool.clone(), self.timeout, url.clone());
        Box::pin(async move {
            if !url.is_secure() {
                return Err(format!("{url} is neither https nor loopback http").into());
            }
            let request = http::Request::get(url.as_str())
                .body(Full::new(Bytes::new()))
                .map_err(|e| format!("{url}: {e}"))?;
            let reply = pool
                .fetch(request, HEADLESS_BODY_BYTES, timeout, &|_| false)
                .await
                .map_err(|e| format!("the authorization request failed: {e:?}"))?;
            if !reply.status.is_redirection() {
                return Err(format!(
                    "the authorization endpoint answered {} without a redirect",
                    reply.status
                )
                .into());
            }
            let location = reply
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or("the authorization endpoint's redirect has no Location")?;
            Ok(location.to_owned())
        })
    }
}

/// Why a token source has no token for a refused request: a message for people (no secret
/// in it), and the typed error behind it when there is one (an OAuth flow's
/// [`auth::Error`](crate::auth::Error)), which becomes the request's failure's
/// [`source`](std::error::Error::source).
#[derive(Debug)]
pub(crate) struct NoToken {
    pub(crate) message: String,
    pub(crate) cause: Option<crate::session::Cause>,
}

impl From<String> for NoToken {
    fn from(message: String) -> Self {
        NoToken {
            message,
            cause: None,
        }
    }
}

impl From<&str> for NoToken {
    fn from(message: &str) -> Self {
        NoToken::from(message.to_owned())
    }
}

/// Tells one principal from another, for [`Auth::identity`].
static NEXT_AUTH: AtomicU64 = AtomicU64::new(1);

/// OAuth for one MCP server, run by the client: the sans-IO `Flow` behind a lock, its
/// requests carried on the session's pool, the person's approval through an [`Authorizer`].
/// Tokens are kept in its [`TokenCache`] (by issuer, client, resource and scope) and
/// refreshed before they expire and after a 401.
pub struct OAuth {
    id: u64,
    flow: Mutex<Flow>,
    /// One flow run at a time; refusals that arrive meanwhile get its token.
    running: tokio::sync::Mutex<()>,
    authorizer: Option<Arc<dyn Authorizer>>,
    request_timeout: Duration,
    authorize_timeout: Duration,
    /// Told after each run of the flow (a grant, a refresh, a failure): a host's hook.
    on_change: Option<ChangeHook>,
    /// Where the flow's time is read.
    clock: Arc<dyn Clock>,
    /// A token store other processes share: refreshes under its lock, written back after
    /// each run.
    store: Option<Arc<store::TokenStore>>,
    /// The flow is configured for DPoP: requests may need a proof ([`Auth::present`]).
    dpop: bool,
}

/// What [`OAuth::on_change`] calls: with the `OAuth` whose flow just ran.
pub type ChangeHook = Arc<dyn Fn(&OAuth) + Send + Sync>;

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("OAuth");
        if let Ok(flow) = self.flow.lock() {
            debug.field("flow", &*flow);
        }
        debug
            .field("authorizer", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

/// Why an [`OAuth`] cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthSetupError {
    /// The authorization code grant needs an [`Authorizer`] for the person's approval.
    NoAuthorizer,
}

impl std::fmt::Display for OAuthSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OAuthSetupError::NoAuthorizer => f.write_str(
                "the authorization code grant needs an authorizer (for the person's approval)",
            ),
        }
    }
}

impl std::error::Error for OAuthSetupError {}

impl OAuth {
    /// OAuth with `config` and an empty token cache; `authorizer` is required for the
    /// authorization code grant.
    pub fn new(
        config: Config,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Result<OAuth, OAuthSetupError> {
        OAuth::with_cache(config, TokenCache::default(), authorizer)
    }

    /// OAuth that starts with the tokens of `cache` (a token store's).
    pub fn with_cache(
        config: Config,
        cache: TokenCache,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Result<OAuth, OAuthSetupError> {
        if matches!(config.grant, GrantKind::AuthorizationCode { .. }) && authorizer.is_none() {
            return Err(OAuthSetupError::NoAuthorizer);
        }
        let limits = config.limits;
        let dpop = config.dpop.is_some();
        Ok(OAuth {
            id: NEXT_AUTH.fetch_add(1, Ordering::Relaxed),
            flow: Mutex::new(Flow::with_cache(config, cache)),
            running: tokio::sync::Mutex::new(()),
            authorizer,
            request_timeout: Duration::from_secs(limits.request_timeout_secs.max(1)),
            authorize_timeout: Duration::from_secs(limits.authorize_timeout_secs.max(1)),
            on_change: None,
            clock: Arc::new(SystemClock),
            store: None,
            dpop,
        })
    }

    /// With the time read from `clock` instead of the system's clock: token expiry, when a
    /// refresh is due, the times in client assertions (a test moves its clock by hand). Every
    /// [`Auth::oauth`] of it reads the same clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> OAuth {
        self.clock = clock;
        self
    }

    /// With PKCE verifiers, `state` values and client assertion ids from `randomness` instead
    /// of the system's generator (see [`Randomness`]).
    pub fn with_randomness(mut self, randomness: Arc<dyn Randomness>) -> OAuth {
        if let Ok(flow) = self.flow.get_mut() {
            flow.set_randomness(randomness);
        }
        self
    }

    /// With `store` as a cache other processes share: each refresh reloads it under its
    /// lock ([`Output::Reload`]), and each run of the flow ends by writing back what it
    /// changed (see the [store's docs](store)).
    fn shared_with(mut self, store: Arc<store::TokenStore>) -> OAuth {
        self.with_flow(|flow| flow.share_cache(true));
        self.store = Some(store);
        self
    }

    /// With `hook` called after each run of the flow (a grant, a refresh, in the background
    /// or not, a failure), outside its lock: a token store reads [`cache`](OAuth::cache) and
    /// [`client`](OAuth::client) there and writes what changed. It runs on the runtime's
    /// thread, so it must be quick (a small file write is).
    pub fn on_change(mut self, hook: ChangeHook) -> OAuth {
        self.on_change = Some(hook);
        self
    }

    /// The client in use with the authorization server, once one is chosen (see
    /// `Flow::client`).
    pub fn client(&self) -> Option<crate::auth::PreRegistered> {
        self.with_flow(|flow| flow.client()).flatten()
    }

    /// The MCP endpoint the tokens are for.
    pub(crate) fn server(&self) -> Option<String> {
        self.with_flow(|flow| flow.config().server.to_string())
    }

    /// A snapshot of the token cache (for a token store to keep).
    pub fn cache(&self) -> TokenCache {
        self.with_flow(|flow| flow.cache().clone())
            .unwrap_or_default()
    }

    /// Every secret the flow holds or has used (see `Flow::secrets`).
    pub fn secrets(&self) -> Vec<Secret> {
        self.with_flow(|flow| flow.secrets()).unwrap_or_default()
    }

    /// The access token to send at `now`, if one is held and valid.
    pub fn bearer(&self, now: UnixTime) -> Option<Secret> {
        self.with_flow(|flow| flow.bearer(now).cloned()).flatten()
    }

    fn with_flow<T>(&self, f: impl FnOnce(&mut Flow) -> T) -> Option<T> {
        self.flow.lock().ok().map(|mut flow| f(&mut flow))
    }

    fn accepted(&self) {
        self.with_flow(Flow::accepted);
    }

    fn refresh_due(&self, now: UnixTime) -> bool {
        self.with_flow(|flow| refresh_due(flow, now))
            .unwrap_or(false)
    }

    /// Refreshes a token that has expired or is about to, before a request goes out.
    async fn refresh_ahead(&self, pool: &HttpPool, log: Option<&WireLog>) {
        let now = self.clock.now();
        let due = self.with_flow(|flow| !flow.is_busy() && flow.near_expiry(now));
        if due != Some(true) {
            return;
        }
        // A run under way (a background refresh, another request's) settles it, or not.
        let Ok(_running) = tokio::time::timeout(self.request_timeout, self.running.lock()).await
        else {
            return;
        };
        let now = self.clock.now();
        if self.with_flow(|flow| flow.refresh_ahead(now)) == Some(true) {
            let _ = self.drive(pool, log).await;
        }
    }

    /// Refreshes a token that is due, in the background: the current one stays in use.
    async fn refresh(&self, pool: &HttpPool, log: Option<&WireLog>) {
        let Ok(_running) = self.running.try_lock() else {
            return;
        };
        let now = self.clock.now();
        let started = self.with_flow(|flow| {
            let due = refresh_due(flow, now);
            if due {
                flow.handle_timeout(now);
            }
            due
        });
        if started == Some(true) {
            let _ = self.drive(pool, log).await;
        }
    }

    /// A new token for the refused request, or why there is none (a text with no secret).
    async fn refused(
        &self,
        pool: &HttpPool,
        refusal: &Refusal,
        log: Option<&WireLog>,
    ) -> Result<Secret, NoToken> {
        let _running = self.running.lock().await;
        let now = self.clock.now();
        let current = self.with_flow(|flow| {
            // Renewed meanwhile (another request's refusal ran the flow): that token.
            if let Some(current) = flow
                .bearer(now)
                .filter(|c| Some(*c) != refusal.sent.as_ref())
            {
                return Some(current.clone());
            }
            flow.handle_refusal(
                refusal.status,
                &refusal.challenges,
                refusal.sent.as_ref(),
                now,
            );
            None
        });
        match current {
            None => Err("the token state is unusable (a thread panicked)".into()),
            Some(Some(token)) => Ok(token),
            Some(None) => match self.drive(pool, log).await {
                Ok(Some(token)) => Ok(token),
                Ok(None) => Err("the authorization flow ended without a token".into()),
                Err(reason) => Err(reason),
            },
        }
    }

    /// Runs the flow (see [`drive_flow`](OAuth::drive_flow)), writes a shared store back
    /// (under the lock a refresh took, or one taken for the write), then tells the hook.
    async fn drive(
        &self,
        pool: &HttpPool,
        log: Option<&WireLog>,
    ) -> Result<Option<Secret>, NoToken> {
        let mut held = None;
        let result = self.drive_flow(pool, log, &mut held).await;
        if let Some(store) = &self.store {
            store
                .write_back(self, held.take(), self.request_timeout)
                .await;
        }
        if let Some(hook) = &self.on_change {
            hook(self);
        }
        result
    }

    /// Runs the flow's outputs until it yields a token, fails, or has nothing left to do;
    /// a shared store's lock, once a refresh takes it, stays in `held` for the write-back.
    async fn drive_flow(
        &self,
        pool: &HttpPool,
        log: Option<&WireLog>,
        held: &mut Option<store::StoreLock>,
    ) -> Result<Option<Secret>, NoToken> {
        let note = |line: String| {
            if let Some(log) = log {
                let secrets = self.secrets();
                log(&crate::secret::redact_all(&secrets, &line));
            }
        };
        loop {
            let Some(output) = self.with_flow(Flow::poll_output) else {
                return Err("the token state is unusable (a thread panicked)".into());
            };
            match output {
                Some(Output::Send {
                    id,
                    request,
                    max_response_bytes,
                }) => {
                    let (method, uri) = (request.method().clone(), request.uri().to_string());
                    note(format!("> auth {method} {uri}"));
                    let response =
                        carry(pool, request, max_response_bytes, self.request_timeout).await;
                    let now = self.clock.now();
                    match response {
                        Ok(response) => {
                            note(format!(
                                "< auth {} ({} bytes)",
                                response.status(),
                                response.body().len()
                            ));
                            self.with_flow(|flow| flow.handle_response(id, response, now));
                        }
                        Err(why) => {
                            note(format!("< auth {method} {uri} failed: {why}"));
                            self.with_flow(|flow| flow.handle_failure(id, &why, now));
                        }
                    }
                }
                Some(Output::Authorize { url }) => {
                    // Nobody waits on a person with a shared store's lock held (a refresh
                    // that was refused led here); the write-back takes it again.
                    *held = None;
                    note(format!("> authorize {}", url.origin_text()));
                    let Some(authorizer) = &self.authorizer else {
                        self.with_flow(|flow| flow.abandon("no authorizer is configured"));
                        continue;
                    };
                    let back =
                        tokio::time::timeout(self.authorize_timeout, authorizer.authorize(&url))
                            .await;
                    let now = self.clock.now();
                    match back {
                        Ok(Ok(redirect)) => {
                            let taken = self
                                .with_flow(|flow| flow.handle_redirect(&redirect, now))
                                .unwrap_or(Err(crate::auth::RedirectError::NotWaiting));
                            match taken {
                                Ok(()) | Err(crate::auth::RedirectError::Failed) => {}
                                Err(error) => {
                                    let why = format!("the redirect back was refused: {error}");
                                    note(format!("< authorize: {why}"));
                                    self.with_flow(|flow| flow.abandon(&why));
                                }
                            }
                        }
                        Ok(Err(error)) => {
                            let why = error.to_string();
                            note(format!("< authorize: declined: {why}"));
                            self.with_flow(|flow| flow.decline(&why));
                        }
                        Err(_) => {
                            let why = format!(
                                "no redirect back within {} s",
                                self.authorize_timeout.as_secs()
                            );
                            note(format!("< authorize: {why}"));
                            self.with_flow(|flow| flow.abandon(&why));
                        }
                    }
                }
                Some(Output::Reload { .. }) => {
                    let Some(store) = &self.store else {
                        // Nobody else holds this cache: it is as fresh as it gets.
                        self.with_flow(|flow| {
                            let tokens = flow.cache().clone();
                            flow.handle_reload(tokens, self.clock.now());
                        });
                        continue;
                    };
                    if held.is_none() {
                        match store.lock(self.request_timeout).await {
                            Ok(lock) => *held = Some(lock),
                            Err(error) => {
                                let why = error.to_string();
                                note(format!("< auth lock: {why}"));
                                self.with_flow(|flow| flow.abandon(&why));
                                continue;
                            }
                        }
                    }
                    let reloaded = match held.as_ref() {
                        Some(lock) => store.reload(lock),
                        None => continue,
                    };
                    match reloaded {
                        Ok(tokens) => {
                            self.with_flow(|flow| flow.handle_reload(tokens, self.clock.now()));
                        }
                        Err(error) => {
                            let why = error.to_string();
                            note(format!("< auth reload: {why}"));
                            self.with_flow(|flow| flow.abandon(&why));
                        }
                    }
                }
                Some(Output::Assertion { source }) => {
                    note(format!("> auth assertion from {source}"));
                    let read = read_assertion(&source, self.request_timeout).await;
                    if let Err(why) = &read {
                        note(format!("< auth assertion: {why}"));
                    }
                    let now = self.clock.now();
                    self.with_flow(|flow| flow.handle_assertion(read, now));
                }
                Some(Output::Token(token)) => return Ok(Some(token.access_token().clone())),
                Some(Output::Failed(error)) => {
                    let secrets = self.secrets();
                    let text = format!("authorization failed: {error}");
                    let message = crate::secret::redact_all(&secrets, &text);
                    // The typed error goes with the message only when its text holds no
                    // secret (a server may echo one in its error description).
                    let cause: Option<crate::session::Cause> = match message == text {
                        true => Some(Arc::new(error)),
                        false => None,
                    };
                    return Err(NoToken { message, cause });
                }
                None => {
                    let busy = self.with_flow(|flow| flow.is_busy()).unwrap_or(false);
                    if !busy {
                        return Ok(None);
                    }
                    // A flow that is busy with nothing to hand out waits on a deadline only.
                    return Err("the authorization flow stalled".into());
                }
            }
        }
    }
}

/// Reads an assertion (a workload token, an ID token) from `source`, afresh: a file again
/// (a platform may have rotated it), the variable again, or the host's provider, within
/// `timeout`. The error says what went wrong, never what was read.
async fn read_assertion(source: &AssertionSource, timeout: Duration) -> Result<Secret, String> {
    use crate::auth::assertion::{MAX_ASSERTION_BYTES, clean_assertion};
    match source {
        AssertionSource::File(path) => {
            let path = path.clone();
            // A small file, read off the runtime's thread (tokio here has no `fs`).
            let read = tokio::task::spawn_blocking(move || {
                use std::io::Read;
                let file = std::fs::File::open(path)?;
                let mut bytes = Vec::new();
                // Room for surrounding whitespace, and one byte more: a longer file is
                // refused by the check below, not cut.
                let limit = (MAX_ASSERTION_BYTES + 1024 + 1) as u64;
                file.take(limit).read_to_end(&mut bytes)?;
                Ok::<_, std::io::Error>(bytes)
            });
            let bytes = tokio::time::timeout(timeout, read)
                .await
                .map_err(|_| format!("not read within {} s", timeout.as_secs()))?
                .map_err(|_| "the read was cut short".to_owned())?
                .map_err(|e| format!("cannot be read ({})", e.kind()))?;
            let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_owned())?;
            clean_assertion(&text).map_err(str::to_owned)
        }
        AssertionSource::Env(name) => match std::env::var(name) {
            Ok(text) => clean_assertion(&text).map_err(str::to_owned),
            Err(std::env::VarError::NotPresent) => Err("it is not set".to_owned()),
            Err(std::env::VarError::NotUnicode(_)) => Err("it is not UTF-8".to_owned()),
        },
        AssertionSource::Host(provider) => {
            let secret = tokio::time::timeout(timeout, provider.assertion())
                .await
                .map_err(|_| format!("no assertion within {} s", timeout.as_secs()))??;
            // The host's text is checked like a file's.
            clean_assertion(secret.expose()).map_err(str::to_owned)
        }
    }
}

/// Whether `flow` holds a token whose refresh is due (and is not busy getting one).
fn refresh_due(flow: &Flow, now: UnixTime) -> bool {
    !flow.is_busy() && flow.token().is_some() && flow.poll_timeout().is_some_and(|at| at <= now)
}

/// Carries one request of a flow: `https` or loopback `http` only, the body read up to
/// `max_response_bytes`, no redirect followed, within `timeout`.
async fn carry(
    pool: &HttpPool,
    request: http::Request<Vec<u8>>,
    max_response_bytes: usize,
    timeout: Duration,
) -> Result<http::Response<Vec<u8>>, String> {
    let secure = Url::parse(&request.uri().to_string()).is_ok_and(|url| url.is_secure());
    if !secure {
        return Err("not https or loopback http".to_owned());
    }
    let (parts, body) = request.into_parts();
    let request = http::Request::from_parts(parts, Full::new(Bytes::from(body)));
    let reply = pool
        .fetch(request, max_response_bytes, timeout, &|_| false)
        .await
        .map_err(|e| match e {
            crate::exchange::TransportError::Connect(d)
            | crate::exchange::TransportError::Lost(d) => d,
        })?;
    match reply.end {
        RawEnd::Complete => {
            let mut response = http::Response::new(reply.body);
            *response.status_mut() = reply.status;
            *response.headers_mut() = reply.headers;
            Ok(response)
        }
        RawEnd::Limit => Err(format!(
            "the body is larger than {max_response_bytes} bytes"
        )),
        RawEnd::Deadline => Err(format!("no whole answer within {} s", timeout.as_secs())),
        RawEnd::Stopped => Err("stopped".to_owned()),
        RawEnd::Broke(why) => Err(format!("the body broke off: {why}")),
    }
}
