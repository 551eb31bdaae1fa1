//! The grants: the scopes to ask for, a cached token or a grant, the authorization code
//! with PKCE (the authorization URL and the redirect back), client credentials and refresh,
//! each built into its token request.

use super::{
    AuthorizationError, Authorizing, Error, Flow, GrantKind, Origin_, Output, OwnedGrant, Purpose,
    Reason, RedirectError, Stage,
};
use crate::auth::UnixTime;
use crate::auth::client;
use crate::auth::crypto::{self, Pkce};
use crate::auth::dpop::DPOP;
use crate::auth::metadata::ServerMetadata;
use crate::auth::scope::{OFFLINE_ACCESS, Scopes};
use crate::auth::token::{MAX_TOKEN_RESPONSE_BYTES, OAuthError, TokenKey, clean_text};
use crate::auth::url::{Url, decode_form};
use crate::secret::Secret;

impl Flow {
    /// The scopes to ask for, in the spec's order: the challenge's (on a step-up, added to
    /// what was asked before), else the resource's `scopes_supported`, else none; with
    /// `offline_access` when the authorization server offers it to a code grant.
    pub(super) fn select_scopes(&self, meta: &ServerMetadata) -> Result<Option<Scopes>, Error> {
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
    pub(super) fn obtain(&mut self, now: UnixTime) {
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
            self.grant_without_person(key, now);
        }
    }

    /// The grants that need nobody, for the token of `key` with the scopes
    /// requested: client credentials, else the assertion first (a
    /// workload token, or the ID token to exchange).
    pub(super) fn grant_without_person(&mut self, key: TokenKey, now: UnixTime) {
        self.pending_key = Some(key);
        if let GrantKind::ClientCredentials = self.config.grant {
            let scope = self.requested.clone();
            self.token_request(
                Purpose::ClientCredentials,
                OwnedGrant::ClientCredentials(scope),
                false,
                true,
                now,
            );
        } else {
            self.request_assertion(now);
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

    /// The browser came back to the redirect URI: `redirect` is that URL (or its
    /// path-and-query as a request target). On success the code is exchanged for a token.
    pub(crate) fn handle_redirect(
        &mut self,
        redirect: &str,
        now: UnixTime,
    ) -> Result<(), RedirectError> {
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
            OwnedGrant::AuthorizationCode {
                code,
                redirect_uri,
                verifier: authorizing.pkce.verifier,
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

    pub(super) fn token_request(
        &mut self,
        purpose: Purpose,
        grant: OwnedGrant,
        rediscover: bool,
        announce: bool,
        now: UnixTime,
    ) {
        self.send_token_request(purpose, grant, rediscover, announce, false, now);
    }

    /// Builds and sends a token request (see [`token_request`](Flow::token_request));
    /// `nonce_retried`: it is the one retry after a `use_dpop_nonce` answer. A request to
    /// the authorization server carries a DPoP proof when DPoP is configured (of the key
    /// made or checked for the servers' algorithms, which fails the flow when they take none
    /// of ours); the token exchange at the enterprise IdP carries none.
    pub(super) fn send_token_request(
        &mut self,
        purpose: Purpose,
        grant: OwnedGrant,
        rediscover: bool,
        announce: bool,
        nonce_retried: bool,
        now: UnixTime,
    ) {
        let Some((endpoint, identity, audience)) = self.token_target(purpose) else {
            return;
        };
        let built = client::token_request(
            &endpoint,
            grant.borrow(),
            &self.resource,
            &identity,
            &audience,
            now.0,
            self.randomness.as_ref(),
        );
        let (mut request, assertion) = match built {
            Ok(built) => built,
            Err(e) => return self.fail(Error::Crypto(e)),
        };
        self.spend(assertion);
        if purpose != Purpose::TokenExchange
            && let Err(e) = self.ensure_dpop_key()
        {
            return self.fail(e);
        }
        let proof = if purpose != Purpose::TokenExchange && self.dpop_at_server() {
            match self.token_proof(&endpoint, now) {
                Ok(proof) => proof,
                Err(e) => return self.fail(Error::Crypto(e)),
            }
        } else {
            None
        };
        if let Some(proof) = &proof {
            match http::HeaderValue::from_str(proof.expose()) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    request.headers_mut().insert(DPOP, value);
                }
                Err(_) => return self.fail(Error::Crypto(crate::auth::CryptoError::Sign)),
            }
        }
        self.stage = Stage::Token {
            purpose,
            rediscover,
            announce,
            grant,
            nonce_retried,
            proof: proof.is_some(),
        };
        self.send(endpoint, request, purpose, MAX_TOKEN_RESPONSE_BYTES, now);
    }

    /// Refreshes the current token. `rediscover`: when that fails, discovery starts over;
    /// `announce`: the new token comes out as an [`Output::Token`] (else it is a background
    /// refresh whose failure only drops the refresh token).
    pub(super) fn refresh(&mut self, now: UnixTime, rediscover: bool, announce: bool) {
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

    /// Sends the refresh of the current token (see [`refresh`](Flow::refresh)).
    pub(super) fn send_refresh(&mut self, now: UnixTime, rediscover: bool, announce: bool) {
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
            OwnedGrant::RefreshToken(refresh_token),
            rediscover,
            announce,
            now,
        );
    }
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
