//! Agent identity in the flow: the grants by assertion (a workload token, an ID-JAG from the
//! enterprise IdP's token exchange), the token requests kept for a DPoP nonce retry, and
//! DPoP proofs (on token requests, and for the driver on MCP requests) with the nonces
//! servers give, per origin.

use super::{Error, Flow, GrantKind, Output, Purpose, Stage};
use crate::auth::UnixTime;
use crate::auth::assertion::{AssertionSource, parse_id_jag_response};
use crate::auth::client::{AuthMethod, Grant, Identity};
use crate::auth::crypto::CryptoError;
use std::sync::Arc;

use crate::auth::dpop::{self, Alg, DpopKey, ProofRequest};
use crate::auth::scope::Scopes;
use crate::auth::token::TokenResponseError;
use crate::auth::url::Url;
use crate::secret::Secret;

/// A token request's grant, kept with the request so that it can be built again (with a new
/// DPoP proof, and a new client assertion) when the server asks for a nonce.
#[derive(Clone)]
pub(super) enum OwnedGrant {
    AuthorizationCode {
        code: Secret,
        redirect_uri: String,
        verifier: Secret,
    },
    RefreshToken(Secret),
    ClientCredentials(Option<Scopes>),
    JwtBearer {
        assertion: Secret,
        scope: Option<Scopes>,
    },
    TokenExchange {
        subject_token: Secret,
        audience: String,
        scope: Option<Scopes>,
    },
}

impl OwnedGrant {
    pub(super) fn borrow(&self) -> Grant<'_> {
        match self {
            OwnedGrant::AuthorizationCode {
                code,
                redirect_uri,
                verifier,
            } => Grant::AuthorizationCode {
                code,
                redirect_uri,
                verifier,
            },
            OwnedGrant::RefreshToken(refresh_token) => Grant::RefreshToken { refresh_token },
            OwnedGrant::ClientCredentials(scope) => Grant::ClientCredentials {
                scope: scope.as_ref(),
            },
            OwnedGrant::JwtBearer { assertion, scope } => Grant::JwtBearer {
                assertion,
                scope: scope.as_ref(),
            },
            OwnedGrant::TokenExchange {
                subject_token,
                audience,
                scope,
            } => Grant::TokenExchange {
                subject_token,
                audience,
                scope: scope.as_ref(),
            },
        }
    }
}

impl Flow {
    /// With metadata, a client and a key for the token: a grant by assertion asks the driver
    /// for the assertion first (a workload token, or the ID token to exchange).
    pub(super) fn request_assertion(&mut self, now: UnixTime) {
        let (source, exchange) = match &self.config.grant {
            GrantKind::JwtBearer { workload } => (workload.clone(), false),
            GrantKind::EnterpriseManaged(idp) => (idp.id_token.clone(), true),
            _ => return,
        };
        self.stage = Stage::Assertion {
            exchange,
            deadline: now.plus(self.config.limits.request_timeout_secs),
        };
        self.outputs.push_back(Output::Assertion { source });
    }

    /// The driver read the assertion an [`Output::Assertion`] asked for (or could not:
    /// `Err` with why, a text with no secret in it). A workload token goes to the token
    /// endpoint with the JWT-bearer grant; an ID token to the enterprise IdP's token exchange
    /// first. Ignored when no assertion was asked for.
    pub(crate) fn handle_assertion(&mut self, assertion: Result<Secret, String>, now: UnixTime) {
        let Stage::Assertion { exchange, .. } = self.stage else {
            return;
        };
        self.stage = Stage::Idle;
        let assertion = match assertion {
            Ok(assertion) => assertion,
            Err(why) => {
                let source = self.assertion_source().map(|s| s.to_string());
                let detail = match source {
                    Some(source) => format!("{source}: {why}"),
                    None => why,
                };
                return self.fail(Error::Transport {
                    purpose: Purpose::Assertion,
                    detail: crate::auth::token::clean_text(&detail, 300),
                });
            }
        };
        self.spend([assertion.clone()]);
        let scope = self.requested.clone();
        if exchange {
            let Some(meta) = &self.server_metadata else {
                return;
            };
            let audience = meta.issuer.clone();
            self.token_request(
                Purpose::TokenExchange,
                OwnedGrant::TokenExchange {
                    subject_token: assertion,
                    audience,
                    scope,
                },
                false,
                true,
                now,
            );
        } else {
            self.token_request(
                Purpose::JwtBearer,
                OwnedGrant::JwtBearer { assertion, scope },
                false,
                true,
                now,
            );
        }
    }

    fn assertion_source(&self) -> Option<&AssertionSource> {
        match &self.config.grant {
            GrantKind::JwtBearer { workload } => Some(workload),
            GrantKind::EnterpriseManaged(idp) => Some(&idp.id_token),
            _ => None,
        }
    }

    /// The enterprise IdP's answer to the token exchange: its ID-JAG goes to the MCP
    /// server's authorization server with the JWT-bearer grant.
    pub(super) fn got_id_jag(&mut self, status: u16, body: &[u8], now: UnixTime) {
        match parse_id_jag_response(status, body) {
            Ok(id_jag) => {
                self.spend([id_jag.clone()]);
                let scope = self.requested.clone();
                self.token_request(
                    Purpose::JwtBearer,
                    OwnedGrant::JwtBearer {
                        assertion: id_jag,
                        scope,
                    },
                    false,
                    true,
                    now,
                );
            }
            Err(error) => {
                let error = match error {
                    TokenResponseError::Refused(e) => {
                        TokenResponseError::Refused(e.redacted(&self.secrets()))
                    }
                    other => other,
                };
                self.fail(Error::Token {
                    purpose: Purpose::TokenExchange,
                    error,
                });
            }
        }
    }

    /// Where a token request for `purpose` goes, and the client that makes it there: the
    /// enterprise IdP for the token exchange, else the authorization server.
    pub(super) fn token_target(&self, purpose: Purpose) -> Option<(Url, Identity, String)> {
        if purpose == Purpose::TokenExchange {
            let GrantKind::EnterpriseManaged(idp) = &self.config.grant else {
                return None;
            };
            let client = &idp.client;
            let method =
                client
                    .auth_method
                    .unwrap_or(match (&client.client_secret, &client.signing_key) {
                        (Some(_), _) => AuthMethod::ClientSecretBasic,
                        (None, Some(_)) => AuthMethod::PrivateKeyJwt,
                        (None, None) => AuthMethod::None,
                    });
            let identity = Identity {
                client_id: client.client_id.clone(),
                secret: client.client_secret.clone(),
                key: client.signing_key.clone(),
                method,
            };
            let audience = idp.token_endpoint.as_str().to_owned();
            return Some((idp.token_endpoint.clone(), identity, audience));
        }
        let (meta, client) = (self.server_metadata.as_ref()?, self.client.as_ref()?);
        Some((
            meta.token_endpoint.clone(),
            client.clone(),
            meta.issuer.clone(),
        ))
    }

    /// The enterprise IdP's origin, where the token exchange may go.
    pub(super) fn idp_origin(&self) -> Option<crate::auth::url::Origin> {
        match &self.config.grant {
            GrantKind::EnterpriseManaged(idp) => Some(idp.token_endpoint.origin()),
            _ => None,
        }
    }

    /// With DPoP configured and the authorization server's metadata at hand: the flow's key,
    /// made now if none was given (of the first algorithm both servers take, see
    /// [`Dpop`](crate::auth::dpop::Dpop)), or checked against what they take. Once made,
    /// the key stays: the tokens it binds are of no use with another.
    pub(super) fn ensure_dpop_key(&mut self) -> Result<(), Error> {
        let (Some(_), Some(meta)) = (&self.config.dpop, &self.server_metadata) else {
            return Ok(());
        };
        let server = meta.dpop_signing_alg_values_supported.as_deref();
        let resource = self.resource_algs.as_deref();
        let checked = match &self.dpop_key {
            Some(key) => key.alg().check(server, resource).map(|()| None),
            None => Alg::choose(server, resource).map(Some),
        };
        let ours = |key: &Option<Arc<DpopKey>>| match key {
            Some(key) => vec![key.alg().name()],
            None => Alg::PREFERRED.iter().map(|a| a.name()).collect(),
        };
        match checked {
            Ok(None) => Ok(()),
            Ok(Some(alg)) => {
                let key = DpopKey::generate_for(alg).map_err(Error::Crypto)?;
                self.dpop_key = Some(Arc::new(key));
                Ok(())
            }
            Err((resource, offered)) => Err(Error::DpopAlgorithm {
                resource,
                offered,
                ours: ours(&self.dpop_key),
            }),
        }
    }

    /// Whether token requests to the authorization server carry a DPoP proof: DPoP is
    /// configured and the flow has its key ([`ensure_dpop_key`](Flow::ensure_dpop_key)).
    pub(super) fn dpop_at_server(&self) -> bool {
        self.config.dpop.is_some() && self.server_metadata.is_some() && self.dpop_key.is_some()
    }

    /// Whether a `Bearer` answer to a DPoP token request is refused (see
    /// [`Dpop`](crate::auth::dpop::Dpop)).
    pub(super) fn dpop_required(&self) -> bool {
        self.config.dpop.as_ref().is_some_and(|d| d.required)
            || self
                .resource_metadata
                .as_ref()
                .is_some_and(|m| m.dpop_bound_access_tokens_required)
            || self.dpop_only
    }

    /// A DPoP proof for a token request to `endpoint` at `now`, with the nonce its origin
    /// gave, if any.
    pub(super) fn token_proof(
        &mut self,
        endpoint: &Url,
        now: UnixTime,
    ) -> Result<Option<Secret>, CryptoError> {
        let Some(key) = &self.dpop_key else {
            return Ok(None);
        };
        let request = ProofRequest {
            method: "POST",
            uri: endpoint.as_str(),
            access_token: None,
            nonce: self.nonces.get(endpoint),
        };
        let proof = key.proof(&request, now.0, self.randomness.as_ref())?;
        self.spend([proof.clone()]);
        Ok(Some(proof))
    }

    /// A DPoP proof for an MCP request (`method`, absolute `uri`) made at `now` with the
    /// access token `token`: `None` unless `token` is the flow's current DPoP-bound token
    /// (a bearer token gets no proof). The proof binds the token (`ath`) and carries the
    /// nonce the MCP server's origin gave last. For the driver, which then sends
    /// `Authorization: DPoP` with the proof in the `DPoP` header.
    pub(crate) fn resource_proof(
        &self,
        method: &str,
        uri: &str,
        token: &Secret,
        now: UnixTime,
    ) -> Option<Result<Secret, CryptoError>> {
        self.config.dpop.as_ref()?;
        let key = self.dpop_key.as_ref()?;
        let (current, ..) = self.token.as_ref()?;
        if !current.is_dpop() || current.access_token() != token {
            return None;
        }
        let nonce = Url::parse(uri)
            .ok()
            .and_then(|url| self.resource_nonces.get(&url));
        let request = ProofRequest {
            method,
            uri,
            access_token: Some(token),
            nonce,
        };
        Some(key.proof(&request, now.0, self.randomness.as_ref()))
    }

    /// The MCP server refused a request with `status` and `headers`: when that is a DPoP
    /// nonce challenge (a 401 with a `DPoP` challenge `error="use_dpop_nonce"` and one valid
    /// `DPoP-Nonce`, RFC 9449 section 9) and the flow holds a DPoP-bound token, the nonce is
    /// kept for the server's origin (replacing the one before) for the proofs to come, and
    /// this returns `true`: the token stays, and the driver sends the request again once
    /// with a new proof instead of handing the refusal to [`handle_refusal`](Flow::handle_refusal).
    pub(crate) fn handle_resource_nonce(
        &mut self,
        status: http::StatusCode,
        headers: &http::HeaderMap,
    ) -> bool {
        let bound = self.token.as_ref().is_some_and(|(t, ..)| t.is_dpop());
        let Some(nonce) = dpop::resource_nonce(status.as_u16(), headers).filter(|_| bound) else {
            return false;
        };
        let server = self.config.server.clone();
        self.resource_nonces.put(&server, nonce);
        true
    }

    /// The MCP server sent `nonce` as its `DPoP-Nonce` on a reply of any status (RFC 9449
    /// section 9: a resource server may give a fresh nonce on any response, a 200 too): with
    /// DPoP configured and a nonce of the grammar, it replaces the one kept for the server's
    /// origin, and the next proof carries it.
    pub(crate) fn note_resource_nonce(&mut self, nonce: &[u8]) {
        if self.config.dpop.is_some()
            && let Some(nonce) = dpop::parse_nonce(nonce)
        {
            let server = self.config.server.clone();
            self.resource_nonces.put(&server, nonce);
        }
    }

    /// Keeps a `DPoP-Nonce` a server sent on an answer to a request to `url`.
    pub(super) fn note_nonce(&mut self, url: &Url, headers: &http::HeaderMap) {
        if self.config.dpop.is_some()
            && let Some(nonce) = dpop::nonce_header(headers)
        {
            self.nonces.put(url, nonce);
        }
    }
}
