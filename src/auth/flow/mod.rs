//! The flow machine: from a server's refusal to a token, as a sans-IO state machine.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use http::{HeaderMap, StatusCode};

use super::UnixTime;
use super::challenge::{self, BearerChallenge};
use super::client::{self, Grant as TokenGrant, Identity, PreRegistered, RegistrationError};
use super::crypto::{self, Pkce, Randomness, SystemRandomness};
use super::metadata::{
    MAX_METADATA_BYTES, ResourceMetadata, ServerMetadata, ServerMetadataError, resource_matches,
    resource_metadata_urls, server_metadata_urls,
};
use super::scope::{OFFLINE_ACCESS, Scopes};
use super::token::{
    MAX_TOKEN_RESPONSE_BYTES, OAuthError, Token, TokenCache, TokenKey, TokenResponseError,
    clean_text, parse_token_response,
};
use super::url::{Origin, Url, UrlError, decode_form};
use crate::secret::Secret;

mod config;
mod error;

pub use config::{Config, GrantKind, Limits};
pub use error::{AuthorizationError, Error, Purpose, RedirectError};

/// How many used secrets a flow remembers for redaction.
const MAX_SPENT: usize = 64;
/// How many registrations (one per authorization server) a flow keeps.
const MAX_REGISTRATIONS: usize = 16;

/// Names one outgoing request of a flow; its response comes back with the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub(crate) u64);

/// What the driver does next.
#[derive(Debug)]
#[non_exhaustive]
pub enum Output {
    /// Issue this request, reading at most `max_response_bytes` of the body (a longer one is
    /// a transport failure), within its deadline ([`Flow::poll_timeout`]); never follow a
    /// redirect. Hand the response to [`Flow::handle_response`] with `id`, or a failure to
    /// [`Flow::handle_error`]. Headers marked sensitive carry credentials.
    Send {
        /// The request's id.
        id: RequestId,
        /// The request; its URI is absolute.
        request: http::Request<Vec<u8>>,
        /// The body limit.
        max_response_bytes: usize,
    },
    /// Send the person's browser to `url`; when the authorization server sends it back to
    /// the redirect URI, hand that URL to [`Flow::handle_redirect`].
    Authorize {
        /// The authorization URL (it holds no secret: `state` and the PKCE challenge only).
        url: Url,
    },
    /// A token is ready: send (or re-send) the refused requests with it.
    Token(Token),
    /// Only for a flow whose cache other processes share ([`Flow::share_cache`]): the flow is
    /// about to spend the refresh token of `key`'s token. Take the shared cache's lock, read
    /// it afresh and hand its tokens to [`Flow::handle_reload`]; hold the lock until the flow
    /// has nothing left to do and its cache is written back, so that no other process
    /// spends the same refresh token meanwhile. If the lock is not had within the flow's
    /// deadline ([`Flow::poll_timeout`]), [`Flow::abandon`] the refresh.
    Reload {
        /// The token about to be refreshed.
        key: TokenKey,
    },
    /// The flow failed; requests waiting for a token fail with this.
    Failed(Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin_ {
    /// From a full authorization (or client credentials) that no request has used yet.
    Fresh,
    /// From a refresh no request has used yet.
    Refreshed,
    /// Accepted by the server at least once, or from the cache.
    Proven,
}

struct Pending {
    id: RequestId,
    purpose: Purpose,
    deadline: UnixTime,
    url: Url,
}

struct Authorizing {
    state: String,
    pkce: Pkce,
    issuer: String,
    iss_required: bool,
    deadline: UnixTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    /// No token, or a token refused with 401.
    Initial,
    /// 403 `insufficient_scope`.
    StepUp,
}

/// Where the search for protected-resource metadata is.
struct ResourceSearch {
    urls: Vec<Url>,
    /// The next URL to try.
    next: usize,
    /// The URL came from the challenge (no well-known fallback then).
    from_header: bool,
    tried: Vec<String>,
}

/// Where the search for an authorization server's metadata is.
struct ServerSearch {
    issuer: Url,
    urls: Vec<Url>,
    /// The next URL to try.
    next: usize,
    /// The 2025-03-26 fallback: the default endpoints when nothing is found.
    legacy: bool,
    tried: Vec<String>,
    /// A document that named another issuer, reported if nothing better is found.
    mismatch: Option<ServerMetadataError>,
}

impl ServerSearch {
    fn new(issuer: Url, legacy: bool) -> ServerSearch {
        let urls = server_metadata_urls(&issuer)
            .into_iter()
            .map(|(u, _)| u)
            .collect();
        ServerSearch {
            issuer,
            urls,
            next: 0,
            legacy,
            tried: Vec::new(),
            mismatch: None,
        }
    }
}

enum Stage {
    Idle,
    ResourceMetadata(ResourceSearch),
    ServerMetadata(ServerSearch),
    Registering,
    Authorizing(Authorizing),
    /// Waiting for the shared cache ([`Output::Reload`]) before a refresh.
    Reloading {
        rediscover: bool,
        announce: bool,
        deadline: UnixTime,
    },
    Token {
        purpose: Purpose,
        /// On a refused refresh: start over with discovery.
        rediscover: bool,
        /// Whether a token comes out as an [`Output::Token`] (not for background refreshes).
        announce: bool,
    },
}

/// The OAuth flow for one MCP server, as a sans-IO machine (see the module docs).
pub struct Flow {
    config: Config,
    stage: Stage,
    outputs: VecDeque<Output>,
    next_id: u64,
    pending: Option<Pending>,
    reason: Reason,
    challenge: Option<BearerChallenge>,
    resource_metadata: Option<ResourceMetadata>,
    /// The `resource` parameter: the metadata's resource, else the server's URL.
    resource: String,
    server_metadata: Option<ServerMetadata>,
    /// Registered clients by issuer: never used with another authorization server.
    registrations: HashMap<String, Identity>,
    client: Option<Identity>,
    requested: Option<Scopes>,
    token: Option<(Token, TokenKey, Origin_)>,
    /// When the current token was obtained (or taken from the cache): a token whose life is
    /// shorter than the refresh margin is refreshed half-way through it, not at once.
    token_since: UnixTime,
    step_ups: u32,
    cache: TokenCache,
    /// The key of the token being obtained.
    pending_key: Option<TokenKey>,
    /// A refresh nobody waits for is under way: its failure only drops the refresh token.
    quiet: bool,
    /// Other processes share the cache: every refresh starts with an [`Output::Reload`].
    shared: bool,
    /// Codes, verifiers, assertions and replaced tokens: what must never be echoed.
    spent: Vec<Secret>,
    /// PKCE verifiers, `state` values and assertion ids come from here.
    randomness: Arc<dyn Randomness>,
}

impl fmt::Debug for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flow")
            .field("server", &self.config.server)
            .field("busy", &!matches!(self.stage, Stage::Idle))
            .field("token", &self.token.as_ref().map(|(t, ..)| t))
            .finish_non_exhaustive()
    }
}

impl Flow {
    /// A flow with an empty token cache.
    pub fn new(config: Config) -> Flow {
        Flow::with_cache(config, TokenCache::default())
    }

    /// A flow that takes tokens from, and puts them in, `cache`.
    pub fn with_cache(config: Config, cache: TokenCache) -> Flow {
        let resource = canonical(&config.server);
        Flow {
            config,
            stage: Stage::Idle,
            outputs: VecDeque::new(),
            next_id: 0,
            pending: None,
            reason: Reason::Initial,
            challenge: None,
            resource_metadata: None,
            resource,
            server_metadata: None,
            registrations: HashMap::new(),
            client: None,
            requested: None,
            token: None,
            token_since: UnixTime(0),
            step_ups: 0,
            cache,
            pending_key: None,
            quiet: false,
            shared: false,
            spent: Vec::new(),
            randomness: Arc::new(SystemRandomness),
        }
    }

    /// This flow, with its PKCE verifiers, `state` values and client assertion ids from
    /// `randomness` instead of the system's generator (a test's seeded source).
    pub fn with_randomness(mut self, randomness: Arc<dyn Randomness>) -> Flow {
        self.randomness = randomness;
        self
    }

    /// Sets where the flow's random values come from (see [`with_randomness`](Flow::with_randomness)).
    pub fn set_randomness(&mut self, randomness: Arc<dyn Randomness>) {
        self.randomness = randomness;
    }

    /// Says whether other processes share the cache (a token store file that several
    /// processes use at once, with an authorization server that rotates refresh tokens:
    /// two that refresh with the same refresh token leave one of them with a spent one).
    /// When they do, each refresh first asks for the shared cache's current tokens
    /// ([`Output::Reload`]), and one another process renewed meanwhile is used instead.
    pub fn share_cache(&mut self, shared: bool) {
        self.shared = shared;
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The token cache.
    pub fn cache(&self) -> &TokenCache {
        &self.cache
    }

    /// The token cache, given back (to keep for the next flow).
    pub fn into_cache(self) -> TokenCache {
        self.cache
    }

    /// The token cache, to fill or empty.
    pub fn cache_mut(&mut self) -> &mut TokenCache {
        &mut self.cache
    }

    /// The current token, if any (perhaps expired).
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref().map(|(t, ..)| t)
    }

    /// The access token to send at `now`: `None` when there is none or it has expired.
    pub fn bearer(&self, now: UnixTime) -> Option<&Secret> {
        self.token
            .as_ref()
            .filter(|(t, ..)| !t.is_expired(now))
            .map(|(t, ..)| t.access_token())
    }

    /// The client the flow uses with its authorization server, once one is chosen: the
    /// pre-registered one, or the one a dynamic registration (or a Client ID Metadata
    /// Document) gave, bound to that server's issuer. A token store keeps it so the next
    /// process presents the same client (its tokens were issued to it) as a
    /// [`Config::pre_registered`] client.
    pub fn client(&self) -> Option<PreRegistered> {
        let (identity, meta) = (self.client.as_ref()?, self.server_metadata.as_ref()?);
        Some(PreRegistered {
            client_id: identity.client_id.clone(),
            client_secret: identity.secret.clone(),
            signing_key: identity.key.clone(),
            issuer: Some(meta.issuer.clone()),
            auth_method: Some(identity.method),
        })
    }

    /// Whether the flow is getting a token (requests, or the person's approval, under way).
    pub fn is_busy(&self) -> bool {
        !matches!(self.stage, Stage::Idle)
    }

    /// Every secret the flow holds or has used: the client secret, tokens (current, cached
    /// and replaced), codes, verifiers and assertions. What a driver redacts from its logs
    /// and what a server's echo is checked against.
    pub fn secrets(&self) -> Vec<Secret> {
        let mut secrets: Vec<Secret> = self.spent.clone();
        if let Some(client) = &self.config.pre_registered {
            secrets.extend(client.client_secret.clone());
        }
        for identity in self.registrations.values().chain(self.client.as_ref()) {
            secrets.extend(identity.secret.clone());
        }
        if let Some((token, ..)) = &self.token {
            secrets.extend(token.secrets().cloned());
        }
        if let Stage::Authorizing(a) = &self.stage {
            secrets.push(a.pkce.verifier.clone());
        }
        secrets.extend(self.cache.secrets().cloned());
        secrets
    }

    /// The next thing for the driver to do.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// When [`Flow::handle_timeout`] must be called next: a request's or the approval's
    /// deadline, or when the token is to be refreshed.
    pub fn poll_timeout(&self) -> Option<UnixTime> {
        let waiting = match &self.stage {
            Stage::Authorizing(a) => Some(a.deadline),
            Stage::Reloading { deadline, .. } => Some(*deadline),
            _ => self.pending.as_ref().map(|p| p.deadline),
        };
        let refresh = match (&self.stage, &self.token) {
            (Stage::Idle, Some((token, ..))) if token.refresh_token().is_some() => {
                let half_life = token.expires_at().map(|at| {
                    self.token_since
                        .plus(at.0.saturating_sub(self.token_since.0) / 2)
                });
                token
                    .refresh_at(self.config.limits.refresh_margin_secs)
                    .max(half_life)
            }
            _ => None,
        };
        waiting.into_iter().chain(refresh).min()
    }

    /// The time has come: a request or the approval timed out (the flow fails), or the token
    /// is due for refresh (refreshed in the background; the current one stays in use).
    pub fn handle_timeout(&mut self, now: UnixTime) {
        let expired = match &self.stage {
            Stage::Authorizing(a) if now >= a.deadline => Some(Purpose::Authorization),
            Stage::Reloading { deadline, .. } if now >= *deadline => Some(Purpose::Refresh),
            _ => self
                .pending
                .as_ref()
                .filter(|p| now >= p.deadline)
                .map(|p| p.purpose),
        };
        if let Some(purpose) = expired {
            self.fail(Error::Timeout { purpose });
            return;
        }
        if matches!(self.stage, Stage::Idle)
            && let Some(at) = self.poll_timeout()
            && now >= at
        {
            self.refresh(now, false, false);
        }
    }

    /// Starts getting a token without a refusal (before the first request, say): at once an
    /// [`Output::Token`] when a valid one is held.
    pub fn authorize(&mut self, now: UnixTime) {
        if self.is_busy() {
            return;
        }
        if let Some((token, ..)) = &self.token {
            if !token.is_expired(now) {
                self.outputs.push_back(Output::Token(token.clone()));
                return;
            }
            if token.refresh_token().is_some() {
                return self.refresh(now, true, true);
            }
        }
        self.reason = Reason::Initial;
        self.challenge = None;
        self.discover(now);
    }

    /// A request is about to go out at `now`. When the current token has expired or expires
    /// within [`Limits::expiry_skew_secs`] (or half its life, if that is shorter) and may be
    /// refreshed (and nothing is under way),
    /// its refresh starts, its token to come out as an [`Output::Token`], and this returns
    /// `true`: the driver holds the request for that token rather than send one the server
    /// would refuse with a 401 (a client that sat idle past its token's life). A token
    /// further from its expiry is sent as it is; its refresh, once due, runs in the
    /// background ([`Flow::handle_timeout`]).
    pub fn refresh_ahead(&mut self, now: UnixTime) -> bool {
        if self.is_busy() {
            return false;
        }
        if !self.near_expiry(now) {
            return false;
        }
        self.refresh(now, true, true);
        self.is_busy() || !self.outputs.is_empty()
    }

    /// The MCP server refused a request with `status` (401 or 403) and these headers; `sent`
    /// is the token the request carried. The flow answers with [`Output::Token`] (a newer
    /// token, or a new one once obtained) or [`Output::Failed`]. Several refusals while a
    /// token is being obtained get the one answer.
    ///
    /// - 401 with a token other than the current one: the current one (already renewed).
    /// - 401 with the current token: a refresh if there is a refresh token, else (or when a
    ///   refreshed token is refused too) discovery and authorization anew (the metadata is
    ///   fetched again, so an authorization server that changed is seen); a 401 for a token
    ///   just issued by a full authorization fails ([`Error::TokenRejected`]).
    /// - 403 `insufficient_scope`: a step-up authorization with the scopes asked for before
    ///   plus the challenge's, at most [`Limits::max_step_ups`] times before a request is
    ///   accepted ([`Flow::accepted`]).
    pub fn handle_refusal(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<&Secret>,
        now: UnixTime,
    ) {
        if self.is_busy() {
            return;
        }
        // A challenge that does not parse is no guidance: discovery goes on without it.
        let challenge = challenge::bearer(headers).ok().flatten();
        match status.as_u16() {
            401 => {
                if let Some((token, _, _)) = &self.token
                    && sent.is_none_or(|s| s != token.access_token())
                    && !token.is_expired(now)
                {
                    self.outputs.push_back(Output::Token(token.clone()));
                    return;
                }
                self.reason = Reason::Initial;
                self.challenge = challenge;
                let held = self.token.take();
                if let Some((token, key, origin)) = held {
                    self.cache.remove(&key);
                    self.spend(token.secrets().cloned());
                    let expired = token.is_expired(now);
                    // Expired, or worked before: renew it. Just issued and refused: the server
                    // does not take this authorization server's tokens, so no loop.
                    if token.refresh_token().is_some() && (expired || origin == Origin_::Proven) {
                        self.token = Some((token, key, origin));
                        return self.refresh(now, true, true);
                    }
                    if origin == Origin_::Fresh && sent.is_some() && !expired {
                        return self.fail(Error::TokenRejected);
                    }
                }
                self.discover(now);
            }
            403 => {
                let Some(challenge) = challenge.filter(BearerChallenge::is_insufficient_scope)
                else {
                    return self.fail(Error::Forbidden);
                };
                if self.step_ups >= self.config.limits.max_step_ups {
                    let scope = challenge.scope.clone().unwrap_or_default();
                    let step_ups = self.step_ups;
                    return self.fail(Error::InsufficientScope { scope, step_ups });
                }
                self.step_ups += 1;
                self.reason = Reason::StepUp;
                // The token held is not enough: the cache must not hand it back for the
                // step-up's scopes (the same ones when the server asks for nothing new).
                if let Some((token, key, _)) = self.token.take() {
                    self.cache.remove(&key);
                    self.spend(token.secrets().cloned());
                }
                self.challenge = Some(challenge);
                if self.server_metadata.is_some() && self.client.is_some() {
                    self.obtain(now);
                } else {
                    self.discover(now);
                }
            }
            status => self.fail(Error::NotARefusal { status }),
        }
    }

    /// The server accepted a request made with the current token: the step-up count starts
    /// again, and a 401 for this token later means it expired or was revoked (so a renewal
    /// is tried rather than a failure).
    pub fn accepted(&mut self) {
        self.step_ups = 0;
        if let Some((_, _, origin)) = &mut self.token {
            *origin = Origin_::Proven;
        }
    }

    /// The driver gave up on what is under way (the host's authorizer failed or the person
    /// went away), for the reason `why`: the flow fails ([`Output::Failed`]) and is ready to
    /// start again.
    pub fn abandon(&mut self, why: &str) {
        let purpose = match (&self.stage, &self.pending) {
            (Stage::Idle, _) => return,
            (Stage::Authorizing(_), _) => Purpose::Authorization,
            (Stage::Reloading { .. }, _) => Purpose::Refresh,
            (_, Some(pending)) => pending.purpose,
            (_, None) => Purpose::Authorization,
        };
        self.fail(Error::Transport {
            purpose,
            detail: clean_text(why, 300),
        });
    }

    /// The driver could not complete the request `id` (connect, TLS, a body over its
    /// limit, its own timeout).
    pub fn handle_error(&mut self, id: RequestId, now: UnixTime) {
        self.handle_failure(id, "", now);
    }

    /// As [`handle_error`](Flow::handle_error), with what the driver knows of the failure
    /// (`why`, cut short, shown in the error: it must hold no secret).
    pub fn handle_failure(&mut self, id: RequestId, why: &str, _now: UnixTime) {
        if let Some(pending) = self.take_pending(id) {
            self.fail(Error::Transport {
                purpose: pending.purpose,
                detail: clean_text(why, 300),
            });
        }
    }

    /// The response to the request `id`.
    pub fn handle_response(
        &mut self,
        id: RequestId,
        response: http::Response<Vec<u8>>,
        now: UnixTime,
    ) {
        let Some(pending) = self.take_pending(id) else {
            return;
        };
        let status = response.status().as_u16();
        let body = response.into_body();
        match std::mem::replace(&mut self.stage, Stage::Idle) {
            Stage::ResourceMetadata(mut search) => {
                if (200..300).contains(&status) {
                    return self.got_resource_metadata(&body, now);
                }
                search
                    .tried
                    .push(format!("{} answered {status}", pending.url));
                self.next_resource_metadata(search, now);
            }
            Stage::ServerMetadata(mut search) => {
                if (200..300).contains(&status) {
                    match ServerMetadata::parse(&body, search.issuer.as_str()) {
                        Ok(meta) => return self.got_server_metadata(meta, now),
                        Err(e @ ServerMetadataError::IssuerMismatch { .. }) => {
                            search
                                .tried
                                .push(format!("{} names another issuer", pending.url));
                            search.mismatch = Some(e);
                        }
                        Err(ServerMetadataError::Document(error)) => {
                            return self.fail(Error::Document {
                                purpose: Purpose::ServerMetadata,
                                error,
                            });
                        }
                    }
                } else {
                    search
                        .tried
                        .push(format!("{} answered {status}", pending.url));
                }
                self.next_server_metadata(search, now);
            }
            Stage::Registering => match client::parse_registration(status, &body) {
                Ok(registration) => {
                    let Some(meta) = &self.server_metadata else {
                        return;
                    };
                    let identity = Identity::new(
                        registration.client_id,
                        registration.client_secret,
                        None,
                        registration.auth_method,
                        meta,
                    );
                    if self.registrations.len() >= MAX_REGISTRATIONS {
                        self.registrations.clear();
                    }
                    self.registrations
                        .insert(meta.issuer.clone(), identity.clone());
                    self.client = Some(identity);
                    self.obtain(now);
                }
                Err(RegistrationError::Refused(e)) => {
                    let e = e.redacted(&self.secrets());
                    self.fail(Error::Registration(RegistrationError::Refused(e)));
                }
                Err(e) => self.fail(Error::Registration(e)),
            },
            Stage::Token {
                purpose,
                rediscover,
                announce,
            } => self.got_token(purpose, status, &body, rediscover, announce, now),
            stage @ (Stage::Idle | Stage::Authorizing(_) | Stage::Reloading { .. }) => {
                self.stage = stage;
            }
        }
    }

    /// The browser came back to the redirect URI: `redirect` is that URL (or its
    /// path-and-query as a request target). On success the code is exchanged for a token.
    pub fn handle_redirect(&mut self, redirect: &str, now: UnixTime) -> Result<(), RedirectError> {
        let Stage::Authorizing(authorizing) = &self.stage else {
            return Err(RedirectError::NotWaiting);
        };
        let GrantKind::AuthorizationCode { redirect_uri } = &self.config.grant else {
            return Err(RedirectError::NotWaiting);
        };
        let query = redirect_query(redirect, redirect_uri)?;
        let params = decode_form(query).map_err(RedirectError::Query)?;
        let get = |name: &str| {
            params
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        if get("state")
            .is_none_or(|s| !constant_time_eq(s.as_bytes(), authorizing.state.as_bytes()))
        {
            return Err(RedirectError::StateMismatch);
        }
        // RFC 9207 section 2.4 and the MCP table: a present `iss` is compared exactly,
        // whether advertised or not; an absent one is refused when advertised. Before
        // anything else in the response is looked at, errors included.
        match get("iss") {
            Some(iss) if iss != authorizing.issuer => {
                let error = AuthorizationError::IssuerMismatch {
                    expected: authorizing.issuer.clone(),
                    found: clean_text(iss, 200),
                };
                self.fail(Error::Authorization(error));
                return Err(RedirectError::Failed);
            }
            None if authorizing.iss_required => {
                let error = AuthorizationError::IssuerMissing {
                    expected: authorizing.issuer.clone(),
                };
                self.fail(Error::Authorization(error));
                return Err(RedirectError::Failed);
            }
            _ => {}
        }
        if let Some(code) = get("error") {
            let error = OAuthError::new(code, get("error_description"))
                .map(|e| e.redacted(&self.secrets()))
                .map_or(AuthorizationError::NoCode, AuthorizationError::Denied);
            self.fail(Error::Authorization(error));
            return Err(RedirectError::Failed);
        }
        let Some(code) = get("code").filter(|c| !c.is_empty()) else {
            self.fail(Error::Authorization(AuthorizationError::NoCode));
            return Err(RedirectError::Failed);
        };
        let code = Secret::new(code);
        let Stage::Authorizing(authorizing) = std::mem::replace(&mut self.stage, Stage::Idle)
        else {
            return Err(RedirectError::NotWaiting);
        };
        let redirect_uri = redirect_uri.as_str().to_owned();
        self.spend([code.clone(), authorizing.pkce.verifier.clone()]);
        self.token_request(
            Purpose::CodeExchange,
            TokenGrant::AuthorizationCode {
                code: &code,
                redirect_uri: &redirect_uri,
                verifier: &authorizing.pkce.verifier,
            },
            false,
            true,
            now,
        );
        if matches!(self.stage, Stage::Idle)
            && self
                .outputs
                .back()
                .is_some_and(|o| matches!(o, Output::Failed(_)))
        {
            return Err(RedirectError::Failed);
        }
        Ok(())
    }

    // ---- the steps ----

    fn discover(&mut self, now: UnixTime) {
        self.resource_metadata = None;
        self.server_metadata = None;
        self.client = None;
        self.resource = canonical(&self.config.server);
        let hint = self
            .challenge
            .as_ref()
            .and_then(|c| c.resource_metadata.clone());
        let (urls, from_header) = match hint {
            Some(text) => match Url::parse(&text) {
                Ok(url) if url.origin() == self.config.server.origin() => (vec![url], true),
                // The hint must stay on the server's origin: a refusal must not send the
                // client to fetch from anywhere the server names.
                Ok(url) => {
                    return self.fail(Error::CrossOrigin {
                        url: url.to_string(),
                    });
                }
                Err(error) => {
                    return self.fail(Error::Url {
                        url: clean_text(&text, 200),
                        error,
                    });
                }
            },
            None => (resource_metadata_urls(&self.config.server), false),
        };
        let search = ResourceSearch {
            urls,
            next: 0,
            from_header,
            tried: Vec::new(),
        };
        self.next_resource_metadata(search, now);
    }

    fn next_resource_metadata(&mut self, mut search: ResourceSearch, now: UnixTime) {
        let Some(url) = search.urls.get(search.next).cloned() else {
            if !search.from_header && self.config.legacy_fallback {
                // 2025-03-26: the MCP server's origin is the authorization server.
                let origin = self.config.server.origin_text().to_owned();
                return match Url::parse(&origin) {
                    Ok(issuer) => self.next_server_metadata(ServerSearch::new(issuer, true), now),
                    Err(error) => self.fail(Error::Url { url: origin, error }),
                };
            }
            return self.fail(Error::NoResourceMetadata {
                tried: search.tried,
            });
        };
        search.next += 1;
        self.stage = Stage::ResourceMetadata(search);
        self.get(url, Purpose::ResourceMetadata, MAX_METADATA_BYTES, now);
    }

    fn got_resource_metadata(&mut self, body: &[u8], now: UnixTime) {
        let meta = match ResourceMetadata::parse(body) {
            Ok(meta) => meta,
            Err(error) => {
                return self.fail(Error::Document {
                    purpose: Purpose::ResourceMetadata,
                    error,
                });
            }
        };
        if !resource_matches(&meta.resource, &self.config.server) {
            return self.fail(Error::ResourceMismatch {
                resource: meta.resource.to_string(),
                server: self.config.server.to_string(),
            });
        }
        let bound = self
            .config
            .pre_registered
            .as_ref()
            .and_then(|c| c.issuer.clone());
        let issuer = match &bound {
            Some(bound) => meta
                .authorization_servers
                .iter()
                .find(|s| s.as_str() == bound),
            None => meta.authorization_servers.first(),
        };
        let Some(issuer) = issuer.cloned() else {
            return self.fail(Error::ClientBoundElsewhere {
                bound: bound.unwrap_or_default(),
                offered: meta
                    .authorization_servers
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            });
        };
        self.resource = meta.resource.as_str().to_owned();
        self.resource_metadata = Some(meta);
        self.next_server_metadata(ServerSearch::new(issuer, false), now);
    }

    fn next_server_metadata(&mut self, mut search: ServerSearch, now: UnixTime) {
        let Some(url) = search.urls.get(search.next).cloned() else {
            if let Some(mismatch) = search.mismatch {
                return self.fail(Error::ServerMetadata(mismatch));
            }
            if search.legacy {
                return match ServerMetadata::defaults_for(&self.config.server) {
                    Ok(meta) => self.got_server_metadata(meta, now),
                    Err(error) => self.fail(Error::Document {
                        purpose: Purpose::ServerMetadata,
                        error,
                    }),
                };
            }
            return self.fail(Error::NoServerMetadata {
                issuer: search.issuer.to_string(),
                tried: search.tried,
            });
        };
        search.next += 1;
        self.stage = Stage::ServerMetadata(search);
        self.get(url, Purpose::ServerMetadata, MAX_METADATA_BYTES, now);
    }

    fn got_server_metadata(&mut self, meta: ServerMetadata, now: UnixTime) {
        if let GrantKind::AuthorizationCode { .. } = self.config.grant {
            if meta.authorization_endpoint.is_none() {
                return self.fail(Error::NoAuthorizationEndpoint {
                    issuer: meta.issuer,
                });
            }
            if !meta.supports_s256() {
                return self.fail(Error::PkceUnsupported {
                    issuer: meta.issuer,
                });
            }
        }
        let issuer = meta.issuer.clone();
        self.server_metadata = Some(meta);
        let meta = self.server_metadata.as_ref().expect("just set");
        // The spec's order: pre-registered, then a Client ID Metadata Document, then
        // dynamic registration. A registration is kept per issuer, never reused elsewhere.
        if let Some(client) = &self.config.pre_registered {
            if let Some(bound) = client.issuer.as_ref().filter(|b| **b != issuer) {
                return self.fail(Error::ClientBoundElsewhere {
                    bound: bound.clone(),
                    offered: vec![issuer],
                });
            }
            self.client = Some(Identity::new(
                client.client_id.clone(),
                client.client_secret.clone(),
                client.signing_key.clone(),
                client.auth_method,
                meta,
            ));
            return self.obtain(now);
        }
        let GrantKind::AuthorizationCode { redirect_uri } = &self.config.grant else {
            return self.fail(Error::NoClientIdentity { issuer });
        };
        if let Some(identity) = self.registrations.get(&issuer) {
            self.client = Some(identity.clone());
            return self.obtain(now);
        }
        if let Some(document) = self.config.metadata_document.as_ref().filter(|d| {
            meta.client_id_metadata_document_supported && client::valid_metadata_document_url(d)
        }) {
            self.client = Some(Identity::new(document.to_string(), None, None, None, meta));
            return self.obtain(now);
        }
        let Some(endpoint) = meta.registration_endpoint.clone() else {
            return self.fail(Error::NoClientIdentity { issuer });
        };
        // The scopes the client will ask for go into its registration: an authorization server
        // may take only the scopes a client registered (the Python SDK refuses any other).
        let scopes = match self.select_scopes(meta) {
            Ok(scopes) => scopes.map(|s| s.to_string()),
            Err(e) => return self.fail(e),
        };
        let Some(request) = client::registration_request(
            &endpoint,
            &self.config.client_metadata,
            redirect_uri.as_str(),
            scopes.as_deref(),
            meta,
        ) else {
            return self.fail(Error::Url {
                url: endpoint.to_string(),
                error: UrlError::Character,
            });
        };
        self.stage = Stage::Registering;
        self.send(
            endpoint,
            request,
            Purpose::Registration,
            MAX_TOKEN_RESPONSE_BYTES,
            now,
        );
    }

    /// The scopes to ask for, in the spec's order: the challenge's (on a step-up, added to
    /// what was asked before), else the resource's `scopes_supported`, else none; with
    /// `offline_access` when the authorization server offers it to a code grant.
    fn select_scopes(&self, meta: &ServerMetadata) -> Result<Option<Scopes>, Error> {
        let challenged = match self.challenge.as_ref().and_then(|c| c.scope.as_deref()) {
            Some(scope) => {
                Some(Scopes::parse(scope).map_err(Error::Scope)?).filter(|s| !s.is_empty())
            }
            None => None,
        };
        let mut scopes = match (self.reason, challenged) {
            // Step-up: what was asked before, plus what the challenge asks for.
            (Reason::StepUp, Some(challenged)) => Some(
                self.requested
                    .clone()
                    .unwrap_or_default()
                    .union(&challenged)
                    .map_err(Error::Scope)?,
            ),
            (_, Some(challenged)) => Some(challenged),
            // Else the configured scope, else the resource's scopes_supported, else none.
            (_, None) => self
                .config
                .scope
                .clone()
                .or_else(|| {
                    self.resource_metadata
                        .as_ref()
                        .and_then(|m| m.scopes_supported.clone())
                })
                .filter(|s| !s.is_empty()),
        };
        let code_grant = matches!(self.config.grant, GrantKind::AuthorizationCode { .. });
        if code_grant && self.config.offline_access && meta.offers_offline_access() {
            scopes = Some(
                scopes
                    .unwrap_or_default()
                    .with(OFFLINE_ACCESS)
                    .map_err(Error::Scope)?,
            );
        }
        Ok(scopes)
    }

    /// With metadata and a client: the scopes, then a cached token, a refresh, or a grant.
    fn obtain(&mut self, now: UnixTime) {
        let (Some(meta), Some(client)) = (&self.server_metadata, &self.client) else {
            return;
        };
        let scopes = match self.select_scopes(meta) {
            Ok(scopes) => scopes,
            Err(e) => return self.fail(e),
        };
        let key = TokenKey {
            issuer: meta.issuer.clone(),
            client_id: client.client_id.clone(),
            resource: self.resource.clone(),
            scope: scopes.as_ref().map(ToString::to_string).unwrap_or_default(),
        };
        self.requested = scopes;
        let code_grant = matches!(self.config.grant, GrantKind::AuthorizationCode { .. });
        if let Some(cached) = self.cache.get(&key).cloned() {
            if !cached.is_expired(now) {
                self.token = Some((cached.clone(), key, Origin_::Proven));
                self.token_since = now;
                self.outputs.push_back(Output::Token(cached));
                return;
            }
            if cached.refresh_token().is_some() {
                self.token = Some((cached, key, Origin_::Proven));
                self.token_since = now;
                return self.refresh(now, true, true);
            }
            self.cache.remove(&key);
        }
        if code_grant {
            self.start_authorization(key, now);
        } else {
            self.pending_key = Some(key);
            let scope = self.requested.clone();
            self.token_request(
                Purpose::ClientCredentials,
                TokenGrant::ClientCredentials {
                    scope: scope.as_ref(),
                },
                false,
                true,
                now,
            );
        }
    }

    fn start_authorization(&mut self, key: TokenKey, now: UnixTime) {
        let (Some(meta), Some(client)) = (&self.server_metadata, &self.client) else {
            return;
        };
        let GrantKind::AuthorizationCode { redirect_uri } = &self.config.grant else {
            return;
        };
        let Some(endpoint) = meta.authorization_endpoint.clone() else {
            return self.fail(Error::NoAuthorizationEndpoint {
                issuer: meta.issuer.clone(),
            });
        };
        let random = self.randomness.as_ref();
        let (pkce, state) =
            match Pkce::new(random).and_then(|p| Ok((p, crypto::random_text(random, 16)?))) {
                Ok(pair) => pair,
                Err(e) => return self.fail(Error::Crypto(e)),
            };
        let scope = self
            .requested
            .as_ref()
            .filter(|s| !s.is_empty())
            .map(ToString::to_string);
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("state", state.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", self.resource.as_str()),
        ];
        if let Some(scope) = &scope {
            pairs.push(("scope", scope));
        }
        let url = match endpoint.with_query_pairs(&pairs) {
            Ok(url) => url,
            Err(error) => {
                return self.fail(Error::Url {
                    url: endpoint.to_string(),
                    error,
                });
            }
        };
        if !self.allowed(&url) {
            return self.fail(Error::CrossOrigin {
                url: endpoint.to_string(),
            });
        }
        let authorizing = Authorizing {
            state,
            pkce,
            issuer: meta.issuer.clone(),
            iss_required: meta.authorization_response_iss_parameter_supported,
            deadline: UnixTime(
                now.0
                    .saturating_add(self.config.limits.authorize_timeout_secs),
            ),
        };
        self.pending_key = Some(key);
        self.stage = Stage::Authorizing(authorizing);
        self.outputs.push_back(Output::Authorize { url });
    }

    fn token_request(
        &mut self,
        purpose: Purpose,
        grant: TokenGrant<'_>,
        rediscover: bool,
        announce: bool,
        now: UnixTime,
    ) {
        let (Some(meta), Some(client)) = (&self.server_metadata, &self.client) else {
            return;
        };
        let endpoint = meta.token_endpoint.clone();
        match client::token_request(
            &endpoint,
            grant,
            &self.resource,
            client,
            &meta.issuer,
            now.0,
            self.randomness.as_ref(),
        ) {
            Ok((request, assertion)) => {
                self.spend(assertion);
                self.stage = Stage::Token {
                    purpose,
                    rediscover,
                    announce,
                };
                self.send(endpoint, request, purpose, MAX_TOKEN_RESPONSE_BYTES, now);
            }
            Err(e) => self.fail(Error::Crypto(e)),
        }
    }

    /// Refreshes the current token. `rediscover`: when that fails, discovery starts over;
    /// `announce`: the new token comes out as an [`Output::Token`] (else it is a background
    /// refresh whose failure only drops the refresh token).
    fn refresh(&mut self, now: UnixTime, rediscover: bool, announce: bool) {
        let Some((token, key, _)) = &self.token else {
            return;
        };
        if token.refresh_token().is_none() {
            return;
        }
        if self.server_metadata.is_none() || self.client.is_none() {
            if rediscover {
                self.token = None;
                self.discover(now);
            }
            return;
        }
        if self.shared {
            // Another process may have spent this refresh token already: ask for the shared
            // cache first (handle_reload goes on from there).
            let key = key.clone();
            self.stage = Stage::Reloading {
                rediscover,
                announce,
                deadline: now.plus(self.config.limits.request_timeout_secs),
            };
            self.outputs.push_back(Output::Reload { key });
            return;
        }
        self.send_refresh(now, rediscover, announce);
    }

    /// Whether the current token may be refreshed and has expired at `now`, or will within
    /// [`Limits::expiry_skew_secs`] (or half its life, if that is shorter: a token that lives
    /// less than the skew is not refreshed before every request): what
    /// [`refresh_ahead`](Flow::refresh_ahead) acts on, for a driver to ask first.
    pub fn near_expiry(&self, now: UnixTime) -> bool {
        self.token.as_ref().is_some_and(|(token, ..)| {
            let life = token
                .expires_at()
                .map_or(0, |at| at.0.saturating_sub(self.token_since.0));
            let skew = self.config.limits.expiry_skew_secs.min(life / 2);
            token.refresh_token().is_some() && token.is_expired(now.plus(skew))
        })
    }

    /// The shared cache's tokens as they are now, read under its lock after an
    /// [`Output::Reload`]: they replace the flow's cache. When they hold a token for the key
    /// being refreshed other than the one the flow was about to refresh, another process
    /// renewed it: one that has not expired is taken as it is, with no request; one that has
    /// is refreshed with its own refresh token. Otherwise the refresh goes ahead. Ignored
    /// when no reload was asked for.
    pub fn handle_reload(&mut self, tokens: TokenCache, now: UnixTime) {
        let Stage::Reloading {
            rediscover,
            announce,
            ..
        } = self.stage
        else {
            return;
        };
        self.stage = Stage::Idle;
        let replaced = std::mem::replace(&mut self.cache, tokens);
        // Tokens this flow may have sent that the shared cache no longer holds: still secret.
        let kept: Vec<Secret> = self.cache.secrets().cloned().collect();
        self.spend(
            replaced
                .secrets()
                .filter(|secret| !kept.contains(secret))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let Some((held, key, origin)) = self.token.take() else {
            return;
        };
        let renewed = self.cache.get(&key).filter(|fresh| {
            fresh.access_token() != held.access_token()
                || fresh.refresh_token() != held.refresh_token()
        });
        match renewed.cloned() {
            Some(fresh) if !fresh.is_expired(now) => {
                self.spend(held.secrets().cloned());
                self.token = Some((fresh.clone(), key, Origin_::Refreshed));
                self.token_since = now;
                if announce {
                    self.outputs.push_back(Output::Token(fresh));
                }
            }
            Some(fresh) if fresh.refresh_token().is_some() => {
                self.spend(held.secrets().cloned());
                self.token = Some((fresh, key, Origin_::Proven));
                self.token_since = now;
                self.send_refresh(now, rediscover, announce);
            }
            _ => {
                self.token = Some((held, key, origin));
                self.send_refresh(now, rediscover, announce);
            }
        }
    }

    /// Sends the refresh of the current token (see [`refresh`](Flow::refresh)).
    fn send_refresh(&mut self, now: UnixTime, rediscover: bool, announce: bool) {
        let Some((token, key, _)) = &self.token else {
            return;
        };
        let Some(refresh_token) = token.refresh_token().cloned() else {
            return;
        };
        self.pending_key = Some(key.clone());
        self.quiet = !announce;
        self.token_request(
            Purpose::Refresh,
            TokenGrant::RefreshToken {
                refresh_token: &refresh_token,
            },
            rediscover,
            announce,
            now,
        );
    }

    fn got_token(
        &mut self,
        purpose: Purpose,
        status: u16,
        body: &[u8],
        rediscover: bool,
        announce: bool,
        now: UnixTime,
    ) {
        let previous = match purpose {
            Purpose::Refresh => self.token.as_ref().map(|(t, ..)| t.clone()),
            _ => None,
        };
        let requested = match &previous {
            Some(previous) => previous.scope().cloned(),
            None => self.requested.clone(),
        };
        match parse_token_response(status, body, now, requested.as_ref(), previous.as_ref()) {
            Ok(token) => {
                self.quiet = false;
                if let Some((old, ..)) = self.token.take() {
                    self.spend(old.secrets().cloned());
                }
                let key = self.pending_key.take().unwrap_or_else(|| TokenKey {
                    issuer: String::new(),
                    client_id: String::new(),
                    resource: self.resource.clone(),
                    scope: String::new(),
                });
                let origin = if purpose == Purpose::Refresh {
                    Origin_::Refreshed
                } else {
                    Origin_::Fresh
                };
                self.cache.insert(key.clone(), token.clone());
                self.token = Some((token.clone(), key, origin));
                self.token_since = now;
                if announce {
                    self.outputs.push_back(Output::Token(token));
                }
            }
            Err(_) if purpose == Purpose::Refresh && rediscover => {
                // The refresh token is spent or revoked: authorize anew.
                self.quiet = false;
                if let Some((old, key, _)) = self.token.take() {
                    self.cache.remove(&key);
                    self.spend(old.secrets().cloned());
                }
                self.discover(now);
            }
            Err(error) => {
                let error = match error {
                    TokenResponseError::Refused(e) => {
                        TokenResponseError::Refused(e.redacted(&self.secrets()))
                    }
                    other => other,
                };
                self.fail(Error::Token { purpose, error });
            }
        }
    }

    fn get(&mut self, url: Url, purpose: Purpose, max_response_bytes: usize, now: UnixTime) {
        match client::get(&url) {
            Some(request) => self.send(url, request, purpose, max_response_bytes, now),
            None => self.fail(Error::Url {
                url: url.to_string(),
                error: UrlError::Character,
            }),
        }
    }

    /// Whether a request may go to `url`: https or loopback, on the MCP server's origin or
    /// one of its authorization server's (the issuer's, and those of the endpoints its
    /// validated metadata names).
    fn allowed(&self, url: &Url) -> bool {
        if !url.is_secure() {
            return false;
        }
        let origin = url.origin();
        let mut allowed: Vec<Origin> = vec![self.config.server.origin()];
        if let Stage::ServerMetadata(search) = &self.stage {
            allowed.push(search.issuer.origin());
        }
        if let Some(meta) = &self.server_metadata {
            allowed.extend(meta.origins());
        }
        allowed.contains(&origin)
    }

    fn send(
        &mut self,
        url: Url,
        request: http::Request<Vec<u8>>,
        purpose: Purpose,
        max_response_bytes: usize,
        now: UnixTime,
    ) {
        if !url.is_secure() {
            return self.fail(Error::Insecure {
                url: url.to_string(),
            });
        }
        if !self.allowed(&url) {
            return self.fail(Error::CrossOrigin {
                url: url.to_string(),
            });
        }
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.pending = Some(Pending {
            id,
            purpose,
            deadline: UnixTime(
                now.0
                    .saturating_add(self.config.limits.request_timeout_secs),
            ),
            url,
        });
        self.outputs.push_back(Output::Send {
            id,
            request,
            max_response_bytes,
        });
    }

    /// Remembers secrets that were used (codes, verifiers, assertions, replaced tokens) for
    /// [`Flow::secrets`], the latest [`MAX_SPENT`] of them.
    fn spend(&mut self, secrets: impl IntoIterator<Item = Secret>) {
        self.spent.extend(secrets);
        let excess = self.spent.len().saturating_sub(MAX_SPENT);
        self.spent.drain(..excess);
    }

    fn take_pending(&mut self, id: RequestId) -> Option<Pending> {
        if self.pending.as_ref().is_some_and(|p| p.id == id) {
            self.pending.take()
        } else {
            None
        }
    }

    fn fail(&mut self, error: Error) {
        let stage = std::mem::replace(&mut self.stage, Stage::Idle);
        self.pending = None;
        self.pending_key = None;
        if let (Stage::Reloading { .. }, Some((token, key, _))) = (stage, &self.token) {
            // The refresh never went out (the shared cache was not had): its refresh token
            // is unspent, and stays where a 401 may have taken it from.
            self.cache.insert(key.clone(), token.clone());
        }
        if std::mem::take(&mut self.quiet) {
            // A background refresh failed: keep the access token while it lasts, without the
            // refresh token that did not work.
            if let Some((token, key, origin)) = self.token.take() {
                self.spend(token.secrets().cloned());
                let kept = Token::new(
                    token.access_token().clone(),
                    None,
                    token.expires_at(),
                    token.scope().cloned(),
                );
                self.cache.insert(key.clone(), kept.clone());
                self.token = Some((kept, key, origin));
            }
            return;
        }
        self.outputs.push_back(Output::Failed(error));
    }
}

/// `https://Host/path` as the `resource` parameter when no metadata names one: scheme and
/// host in lower case (the spec's canonical form), the rest as written.
fn canonical(server: &Url) -> String {
    let text = server.as_str();
    let scheme_end = text.find("://").map_or(0, |i| i + 3);
    let authority_end = server.origin_text().len();
    format!(
        "{}{}{}",
        text[..scheme_end].to_ascii_lowercase(),
        text[scheme_end..authority_end].to_ascii_lowercase(),
        &text[authority_end..]
    )
}

/// The query of a redirect to `redirect_uri`: `redirect` is a full URL with the same origin
/// and path, or a request target (`/path?query`) with the same path.
fn redirect_query<'a>(redirect: &'a str, redirect_uri: &Url) -> Result<&'a str, RedirectError> {
    let (path, query) = if redirect.starts_with('/') {
        let (path, query) = redirect.split_once('?').unwrap_or((redirect, ""));
        (path.to_owned(), query)
    } else {
        let url = Url::parse(redirect).map_err(|_| RedirectError::WrongTarget)?;
        if url.origin() != redirect_uri.origin() {
            return Err(RedirectError::WrongTarget);
        }
        let query_at = redirect.find('?');
        (
            url.path().to_owned(),
            query_at.map_or("", |i| &redirect[i + 1..]),
        )
    };
    let expected = match redirect_uri.path() {
        "" => "/",
        p => p,
    };
    let path = if path.is_empty() {
        "/".to_owned()
    } else {
        path
    };
    if path != expected {
        return Err(RedirectError::WrongTarget);
    }
    Ok(query)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
