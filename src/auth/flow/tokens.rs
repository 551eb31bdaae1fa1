//! Tokens: the token endpoint's answers read into the current token and the cache, expiry
//! ahead of a request, and the reload of a cache other processes share.

#[cfg(doc)]
use super::config::Limits;
use super::{Error, Flow, GrantKind, Origin_, Output, Purpose, Stage};
use crate::auth::UnixTime;
use crate::auth::scope::Scopes;
use crate::auth::token::{
    TokenCache, TokenKey, TokenResponseError, clean_text, parse_token_response,
};
use crate::secret::Secret;

impl Flow {
    /// Whether the current token may be renewed and has expired at `now`, or will within
    /// [`Limits::expiry_skew_secs`] (or half its life, if that is shorter: a token that lives
    /// less than the skew is not renewed before every request): what
    /// [`refresh_ahead`](Flow::refresh_ahead) acts on, for a driver to ask first. Renewed:
    /// refreshed with its refresh token, or, without one, by running a grant that needs
    /// nobody again ([`renewable_by_grant`](Flow::renewable_by_grant)).
    pub(crate) fn near_expiry(&self, now: UnixTime) -> bool {
        self.token.as_ref().is_some_and(|(token, ..)| {
            let life = token
                .expires_at()
                .map_or(0, |at| at.0.saturating_sub(self.token_since.0));
            let skew = self.config.limits.expiry_skew_secs.min(life / 2);
            (token.refresh_token().is_some() || self.renewable_by_grant())
                && token.is_expired(now.plus(skew))
        })
    }

    /// Whether a token is renewed by running the flow's grant again: client credentials, a
    /// workload token, an ID-JAG. They need no person and spend nothing single-use (the
    /// assertion is read afresh), and their answers seldom carry a refresh token (RFC 6749
    /// section 4.4.3 says a client credentials answer should not).
    pub(super) fn renewable_by_grant(&self) -> bool {
        self.server_metadata.is_some()
            && self.client.is_some()
            && matches!(
                self.config.grant,
                GrantKind::ClientCredentials
                    | GrantKind::JwtBearer { .. }
                    | GrantKind::EnterpriseManaged(_)
            )
    }

    /// Runs the grant again for the current token, which has no refresh token (see
    /// [`renewable_by_grant`](Flow::renewable_by_grant)): the same key and scopes, the new
    /// token to come out as an [`Output::Token`]. The current token stays in use until then,
    /// and stays if the grant fails.
    pub(super) fn regrant(&mut self, now: UnixTime) {
        let Some((_, key, _)) = &self.token else {
            return;
        };
        if !self.renewable_by_grant() {
            return;
        }
        let key = key.clone();
        self.requested = Scopes::parse(&key.scope).ok().filter(|s| !s.is_empty());
        self.grant_without_person(key, now);
    }

    /// The shared cache's tokens as they are now, read under its lock after an
    /// [`Output::Reload`]: they replace the flow's cache. When they hold a token for the key
    /// being refreshed other than the one the flow was about to refresh, another process
    /// renewed it: one that has not expired is taken as it is, with no request; one that has
    /// is refreshed with its own refresh token. Otherwise the refresh goes ahead. Ignored
    /// when no reload was asked for.
    pub(crate) fn handle_reload(&mut self, tokens: TokenCache, now: UnixTime) {
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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn got_token(
        &mut self,
        purpose: Purpose,
        status: u16,
        body: &[u8],
        rediscover: bool,
        announce: bool,
        proof: bool,
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
        let parsed = parse_token_response(
            status,
            body,
            now,
            requested.as_ref(),
            previous.as_ref(),
            proof,
        )
        .and_then(|token| {
            // DPoP asked for and required: no silent downgrade to a bearer token.
            if self.config.dpop.is_some() && !token.is_dpop() && self.dpop_required() {
                self.spend(token.secrets().cloned().collect::<Vec<_>>());
                Err(TokenResponseError::NotDpopBound)
            } else {
                Ok(token)
            }
        });
        match parsed {
            Ok(token) => {
                self.quiet = false;
                self.refresh_refused = None;
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
            Err(error) if purpose == Purpose::Refresh && rediscover => {
                // The refresh token is spent or revoked: authorize anew.
                self.quiet = false;
                let why = match error {
                    TokenResponseError::Refused(e) => e.redacted(&self.secrets()).to_string(),
                    other => other.to_string(),
                };
                self.refresh_refused = Some(clean_text(&why, 300));
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
}
