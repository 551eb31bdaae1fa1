//! The flow machine: from a server's refusal to a token, as a sans-IO state machine.
//!
//! This file holds the machine itself: [`Flow`] and its states, what goes in (the
//! `handle_*` calls) and what comes out ([`Output`]), and what every step shares (the
//! origin rule, request ids and deadlines, spent secrets, failing). The rest, by what it
//! owns:
//!
//! | file | owns |
//! | --- | --- |
//! | `config.rs` | [`Config`], [`GrantKind`], [`Limits`] |
//! | `error.rs` | [`Error`], [`Purpose`], [`AuthorizationError`], [`RedirectError`] |
//! | `discovery.rs` | protected-resource and authorization-server metadata, the client identity, the `resource` parameter |
//! | `grants.rs` | scope selection, cached token or grant, the authorization code with PKCE and the redirect back, client credentials, refresh |
//! | `tokens.rs` | the token endpoint's answers, expiry before a request, the shared cache's reload |
//! | `identity.rs` | grants by assertion (workload token, ID-JAG by token exchange), DPoP proofs and nonces |

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use http::{HeaderMap, StatusCode};

use super::UnixTime;
use super::assertion::AssertionSource;
use super::challenge::{self, BearerChallenge};
use super::client::{self, Identity, PreRegistered, RegistrationError};
use super::crypto::{Pkce, Randomness, SystemRandomness};
use super::dpop::{DpopChallenge, Nonces, SchemesOffered};
use super::metadata::{ResourceMetadata, ServerMetadata, ServerMetadataError};
use super::scope::Scopes;
use super::token::{Token, TokenCache, TokenKey, clean_text};
use super::url::{Origin, Url, UrlError};
use crate::secret::Secret;

pub(super) mod config;
mod discovery;
pub(super) mod error;
mod grants;
mod identity;
mod tokens;

pub(crate) use config::{Config, GrantKind};
pub(crate) use error::RedirectError;
pub(crate) use error::{AuthorizationError, Error, Purpose};

use discovery::canonical;
use identity::OwnedGrant;

/// How many used secrets a flow remembers for redaction.
const MAX_SPENT: usize = 64;
/// How many registrations (one per authorization server) a flow keeps.
const MAX_REGISTRATIONS: usize = 16;

/// Names one outgoing request of a flow; its response comes back with the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RequestId(pub(crate) u64);

/// What the driver does next.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum Output {
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
    /// A grant by assertion needs its assertion now (a workload token, or the user's ID
    /// token for the enterprise IdP): read `source` afresh (a file again, the variable
    /// again, or ask the host) and hand the result to [`Flow::handle_assertion`] within the
    /// flow's deadline ([`Flow::poll_timeout`]).
    Assertion {
        /// Where it is read.
        source: AssertionSource,
    },
    /// Only for a flow whose cache other processes share ([`Flow::share_cache`]): the flow is
    /// about to spend the refresh token of `key`'s token. Take the shared cache's lock, read
    /// it afresh and hand its tokens to [`Flow::handle_reload`]; hold the lock until the flow
    /// has nothing left to do and its cache is written back, so that no other process
    /// spends the same refresh token meanwhile. If the lock is not had within the flow's
    /// deadline ([`Flow::poll_timeout`]), [`Flow::abandon`] the refresh.
    Reload {
        /// The token about to be refreshed.
        // Only the tests read it: the client's driver reloads the whole store.
        #[cfg_attr(not(test), allow(dead_code))]
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

enum Stage {
    Idle,
    ResourceMetadata(ResourceSearch),
    ServerMetadata(ServerSearch),
    Registering,
    Authorizing(Authorizing),
    /// Waiting for the driver's assertion ([`Output::Assertion`]).
    Assertion {
        /// An ID token for the enterprise IdP (else a workload token for the JWT-bearer grant).
        exchange: bool,
        deadline: UnixTime,
    },
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
        /// The grant, to build the request again for a DPoP nonce.
        grant: OwnedGrant,
        /// The request is already the one retry a `use_dpop_nonce` answer gets.
        nonce_retried: bool,
        /// It carried a DPoP proof.
        proof: bool,
    },
}

/// The OAuth flow for one MCP server, as a sans-IO machine (see the module docs).
pub(crate) struct Flow {
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
    /// Why the last refresh was refused, while the flow authorizes anew because of it: a
    /// failure to authorize then says that a login is needed because of this.
    refresh_refused: Option<String>,
    /// Other processes share the cache: every refresh starts with an [`Output::Reload`].
    shared: bool,
    /// Codes, verifiers, assertions and replaced tokens: what must never be echoed.
    spent: Vec<Secret>,
    /// PKCE verifiers, `state` values and assertion ids come from here.
    randomness: Arc<dyn Randomness>,
    /// DPoP nonces the authorization server gave, by origin (RFC 9449 section 8).
    nonces: Nonces,
    /// DPoP nonces the MCP server gave, by origin (section 9): apart from the authorization
    /// server's, since the two may share an origin and each has its own.
    resource_nonces: Nonces,
    /// The MCP server's last 401 offered only the `DPoP` scheme.
    dpop_only: bool,
    /// The key of the DPoP proofs: the configured one, else one made for the servers'
    /// algorithms once the authorization server's metadata is known.
    dpop_key: Option<Arc<super::DpopKey>>,
    /// The `algs` of the MCP server's last `DPoP` challenge that named any (RFC 9449
    /// section 7.1): the algorithms it takes proofs in.
    resource_algs: Option<Vec<String>>,
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
    #[cfg(test)]
    pub(crate) fn new(config: Config) -> Flow {
        Flow::with_cache(config, TokenCache::default())
    }

    /// A flow that takes tokens from, and puts them in, `cache`.
    pub(crate) fn with_cache(config: Config, cache: TokenCache) -> Flow {
        let resource = canonical(&config.server);
        Flow {
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
            refresh_refused: None,
            shared: false,
            spent: Vec::new(),
            randomness: Arc::new(SystemRandomness),
            nonces: Nonces::default(),
            resource_nonces: Nonces::default(),
            dpop_only: false,
            dpop_key: config.dpop.as_ref().and_then(|d| d.key.clone()),
            resource_algs: None,
            config,
        }
    }

    /// This flow, with its PKCE verifiers, `state` values and client assertion ids from
    /// `randomness` instead of the system's generator (a test's seeded source).
    #[cfg(test)]
    pub(crate) fn with_randomness(mut self, randomness: Arc<dyn Randomness>) -> Flow {
        self.randomness = randomness;
        self
    }

    /// Sets where the flow's random values come from (see [`with_randomness`](Flow::with_randomness)).
    pub(crate) fn set_randomness(&mut self, randomness: Arc<dyn Randomness>) {
        self.randomness = randomness;
    }

    /// Says whether other processes share the cache (a token store file that several
    /// processes use at once, with an authorization server that rotates refresh tokens:
    /// two that refresh with the same refresh token leave one of them with a spent one).
    /// When they do, each refresh first asks for the shared cache's current tokens
    /// ([`Output::Reload`]), and one another process renewed meanwhile is used instead.
    pub(crate) fn share_cache(&mut self, shared: bool) {
        self.shared = shared;
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The token cache.
    pub(crate) fn cache(&self) -> &TokenCache {
        &self.cache
    }

    /// The token cache, given back (to keep for the next flow).
    #[cfg(test)]
    pub(crate) fn into_cache(self) -> TokenCache {
        self.cache
    }

    /// The token cache, to fill or empty.
    #[cfg(test)]
    pub(crate) fn cache_mut(&mut self) -> &mut TokenCache {
        &mut self.cache
    }

    /// The current token, if any (perhaps expired).
    pub(crate) fn token(&self) -> Option<&Token> {
        self.token.as_ref().map(|(t, ..)| t)
    }

    /// The access token to send at `now`: `None` when there is none or it has expired.
    pub(crate) fn bearer(&self, now: UnixTime) -> Option<&Secret> {
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
    pub(crate) fn client(&self) -> Option<PreRegistered> {
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
    pub(crate) fn is_busy(&self) -> bool {
        !matches!(self.stage, Stage::Idle)
    }

    /// Every secret the flow holds or has used: the client secret, tokens (current, cached
    /// and replaced), codes, verifiers and assertions. What a driver redacts from its logs
    /// and what a server's echo is checked against.
    pub(crate) fn secrets(&self) -> Vec<Secret> {
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
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// When [`Flow::handle_timeout`] must be called next: a request's or the approval's
    /// deadline, or when the token is to be refreshed.
    pub(crate) fn poll_timeout(&self) -> Option<UnixTime> {
        let waiting = match &self.stage {
            Stage::Authorizing(a) => Some(a.deadline),
            Stage::Reloading { deadline, .. } | Stage::Assertion { deadline, .. } => {
                Some(*deadline)
            }
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
    pub(crate) fn handle_timeout(&mut self, now: UnixTime) {
        let expired = match &self.stage {
            Stage::Authorizing(a) if now >= a.deadline => Some(Purpose::Authorization),
            Stage::Reloading { deadline, .. } if now >= *deadline => Some(Purpose::Refresh),
            Stage::Assertion { deadline, .. } if now >= *deadline => Some(Purpose::Assertion),
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
    #[cfg(test)]
    pub(crate) fn authorize(&mut self, now: UnixTime) {
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
    /// renewed (and nothing is under way), its renewal starts, the new token to come out as
    /// an [`Output::Token`], and this returns `true`: the driver holds the request for that
    /// token rather than send one the server would refuse with a 401 (a client that sat idle
    /// past its token's life). The renewal is a refresh with the token's refresh token, or,
    /// without one, the flow's grant run again when it needs nobody (client credentials, a
    /// workload token, an ID-JAG). A token further from its expiry is sent as it is; its
    /// refresh, once due, runs in the background ([`Flow::handle_timeout`]).
    pub(crate) fn refresh_ahead(&mut self, now: UnixTime) -> bool {
        if self.is_busy() {
            return false;
        }
        if !self.near_expiry(now) {
            return false;
        }
        match self
            .token
            .as_ref()
            .is_some_and(|(t, ..)| t.refresh_token().is_some())
        {
            true => self.refresh(now, true, true),
            false => self.regrant(now),
        }
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
    pub(crate) fn handle_refusal(
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
        if status == StatusCode::UNAUTHORIZED {
            self.dpop_only = SchemesOffered::of(headers).dpop_only();
            if let Some(algs) = DpopChallenge::of(headers).and_then(|c| c.algs) {
                self.resource_algs = Some(algs);
            }
        }
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
    pub(crate) fn accepted(&mut self) {
        self.step_ups = 0;
        if let Some((_, _, origin)) = &mut self.token {
            *origin = Origin_::Proven;
        }
    }

    /// The driver gave up on what is under way (the host's authorizer failed or the person
    /// went away), for the reason `why`: the flow fails ([`Output::Failed`]) and is ready to
    /// start again.
    /// The authorizer could not get a person's approval (nobody is there to give it, or the
    /// person declined): the flow fails saying that a login is needed, and why one is (the
    /// refused refresh that led here, if one did).
    pub(crate) fn decline(&mut self, why: &str) {
        if matches!(self.stage, Stage::Idle) {
            return;
        }
        let refresh = self.refresh_refused.take();
        self.fail(Error::LoginNeeded {
            refresh,
            why: clean_text(why, 300),
        });
    }

    pub(crate) fn abandon(&mut self, why: &str) {
        let purpose = match (&self.stage, &self.pending) {
            (Stage::Idle, _) => return,
            (Stage::Authorizing(_), _) => Purpose::Authorization,
            (Stage::Reloading { .. }, _) => Purpose::Refresh,
            (Stage::Assertion { .. }, _) => Purpose::Assertion,
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
    #[cfg(test)]
    pub(crate) fn handle_error(&mut self, id: RequestId, now: UnixTime) {
        self.handle_failure(id, "", now);
    }

    /// As [`handle_error`](Flow::handle_error), with what the driver knows of the failure
    /// (`why`, cut short, shown in the error: it must hold no secret).
    pub(crate) fn handle_failure(&mut self, id: RequestId, why: &str, _now: UnixTime) {
        if let Some(pending) = self.take_pending(id) {
            self.fail(Error::Transport {
                purpose: pending.purpose,
                detail: clean_text(why, 300),
            });
        }
    }

    /// The response to the request `id`.
    pub(crate) fn handle_response(
        &mut self,
        id: RequestId,
        response: http::Response<Vec<u8>>,
        now: UnixTime,
    ) {
        let Some(pending) = self.take_pending(id) else {
            return;
        };
        let status = response.status().as_u16();
        let (parts, body) = response.into_parts();
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
                grant,
                nonce_retried,
                proof,
            } => {
                if proof {
                    self.note_nonce(&pending.url, &parts.headers);
                    // RFC 9449 section 8: the server wants a nonce; one retry with a new proof.
                    if !nonce_retried
                        && super::dpop::server_nonce(status, &parts.headers, &body).is_some()
                    {
                        return self
                            .send_token_request(purpose, grant, rediscover, announce, true, now);
                    }
                }
                if purpose == Purpose::TokenExchange {
                    return self.got_id_jag(status, &body, now);
                }
                self.got_token(purpose, status, &body, rediscover, announce, proof, now)
            }
            stage @ (Stage::Idle
            | Stage::Authorizing(_)
            | Stage::Reloading { .. }
            | Stage::Assertion { .. }) => {
                self.stage = stage;
            }
        }
    }

    // ---- what the steps share ----

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
        allowed.extend(self.idp_origin());
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
                )
                .bound(token.is_dpop());
                self.cache.insert(key.clone(), kept.clone());
                self.token = Some((kept, key, origin));
            }
            return;
        }
        self.outputs.push_back(Output::Failed(error));
    }
}
