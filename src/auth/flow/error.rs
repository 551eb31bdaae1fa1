//! What a [`Flow`] reports when it fails: [`Error`], with the [`Purpose`] of the request that
//! failed, and the errors of the authorization response ([`AuthorizationError`],
//! [`RedirectError`]).

use std::fmt;

#[cfg(doc)]
use super::{Flow, Output};
use crate::auth::client::RegistrationError;
use crate::auth::crypto::CryptoError;
use crate::auth::metadata::{DocumentError, ServerMetadataError};
use crate::auth::scope::ScopeError;
use crate::auth::token::{OAuthError, TokenResponseError};
use crate::auth::url::{FormError, UrlError};

/// What a request of the flow is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Purpose {
    /// Fetching protected-resource metadata.
    ResourceMetadata,
    /// Fetching authorization-server metadata.
    ServerMetadata,
    /// Dynamic client registration.
    Registration,
    /// Exchanging an authorization code.
    CodeExchange,
    /// Refreshing a token.
    Refresh,
    /// The client credentials grant.
    ClientCredentials,
    /// The JWT-bearer grant (a workload token or an ID-JAG).
    JwtBearer,
    /// The token exchange at the enterprise IdP (an ID token for an ID-JAG).
    TokenExchange,
    /// Reading an assertion (a workload token, an ID token) from its source.
    Assertion,
    /// The person's approval in the browser.
    Authorization,
}

impl fmt::Display for Purpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Purpose::ResourceMetadata => "the protected-resource metadata request",
            Purpose::ServerMetadata => "the authorization-server metadata request",
            Purpose::Registration => "the client registration",
            Purpose::CodeExchange => "the authorization code exchange",
            Purpose::Refresh => "the token refresh",
            Purpose::ClientCredentials => "the client credentials token request",
            Purpose::JwtBearer => "the JWT-bearer token request",
            Purpose::TokenExchange => "the token exchange at the enterprise IdP",
            Purpose::Assertion => "reading the assertion",
            Purpose::Authorization => "the authorization in the browser",
        })
    }
}

/// What went wrong with an authorization response (the redirect back).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorizationError {
    /// RFC 9207: `iss` is not the issuer the request went to (a mix-up attack, or a broken
    /// server). Nothing else in the response is used or shown.
    IssuerMismatch {
        /// The issuer recorded with the request.
        expected: String,
        /// The `iss` received (cut short).
        found: String,
    },
    /// RFC 9207: the server advertises `iss` but the response has none.
    IssuerMissing {
        /// The issuer recorded with the request.
        expected: String,
    },
    /// The server answered with an OAuth error (`access_denied`...).
    Denied(OAuthError),
    /// No `code` in a response that is not an error.
    NoCode,
}

impl fmt::Display for AuthorizationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthorizationError::IssuerMismatch { expected, found } => write!(
                f,
                "the authorization response comes from the issuer {found:?}, not {expected:?} (RFC 9207)"
            ),
            AuthorizationError::IssuerMissing { expected } => write!(
                f,
                "the authorization response has no `iss` though {expected:?} advertises it (RFC 9207)"
            ),
            AuthorizationError::Denied(e) => write!(f, "the authorization server refused: {e}"),
            AuthorizationError::NoCode => f.write_str("the authorization response has no code"),
        }
    }
}

/// Why a flow failed. The texts name URLs and the servers' error codes, never a secret.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A configured URL does not parse.
    Url {
        /// The URL (cut short).
        url: String,
        /// What is wrong with it.
        error: UrlError,
    },
    /// A URL credentials would go to is neither `https` nor loopback `http`.
    Insecure {
        /// The URL.
        url: String,
    },
    /// A request would go to an origin that is neither the MCP server's nor its
    /// authorization server's.
    CrossOrigin {
        /// The URL.
        url: String,
    },
    /// No protected-resource metadata (and no 2025-03-26 fallback).
    NoResourceMetadata {
        /// Each URL tried and what it answered.
        tried: Vec<String>,
    },
    /// No usable authorization-server metadata for the issuer.
    NoServerMetadata {
        /// The issuer.
        issuer: String,
        /// Each URL tried and what it answered.
        tried: Vec<String>,
    },
    /// A metadata document was refused.
    Document {
        /// Which request fetched it.
        purpose: Purpose,
        /// What was wrong.
        error: DocumentError,
    },
    /// The authorization server's metadata was refused (its issuer, typically).
    ServerMetadata(ServerMetadataError),
    /// The protected resource's metadata is for another resource (RFC 8707, RFC 9728): no
    /// token is requested for it.
    ResourceMismatch {
        /// The `resource` the metadata names.
        resource: String,
        /// The MCP server's URL.
        server: String,
    },
    /// The authorization server does not advertise PKCE with `S256`, so the MCP spec
    /// forbids going on.
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// The authorization server has no authorization endpoint for the code grant.
    NoAuthorizationEndpoint {
        /// The issuer.
        issuer: String,
    },
    /// No way to get a client id: not pre-registered, no metadata document the server takes,
    /// no registration endpoint (or the client credentials grant without a pre-registered
    /// client).
    NoClientIdentity {
        /// The issuer.
        issuer: String,
    },
    /// The pre-registered client belongs to another authorization server than the one the
    /// resource names now.
    ClientBoundElsewhere {
        /// The client's issuer.
        bound: String,
        /// The issuers the resource names.
        offered: Vec<String>,
    },
    /// DPoP is configured, but a server takes proofs signed with none of the algorithms this
    /// client signs with (ES256, ES384, EdDSA; only the configured key's when one was given):
    /// no proof is left out silently (RFC 9449 sections 5.1 and 7.1).
    DpopAlgorithm {
        /// Whose list it is: the MCP server's `DPoP` challenge `algs` (`true`), else the
        /// authorization server's `dpop_signing_alg_values_supported`.
        resource: bool,
        /// The algorithms it takes (cut short; empty when it lists none).
        offered: Vec<String>,
        /// What this client would have signed with.
        ours: Vec<&'static str>,
    },
    /// A scope string from a server does not parse.
    Scope(ScopeError),
    /// A cryptographic step failed.
    Crypto(CryptoError),
    /// The registration endpoint refused or answered badly.
    Registration(RegistrationError),
    /// A token endpoint refused or answered badly.
    Token {
        /// Which grant.
        purpose: Purpose,
        /// What it said.
        error: TokenResponseError,
    },
    /// The authorization response is refused.
    Authorization(AuthorizationError),
    /// The driver could not complete a request (connect, TLS, a body over its limit), or gave
    /// up on the person's approval.
    Transport {
        /// Which request.
        purpose: Purpose,
        /// What the driver said of it (cut short; empty when it said nothing).
        detail: String,
    },
    /// A new authorization needs a person, and the authorizer could not get one's approval
    /// (nobody is there, as for an unattended host, or the person declined).
    LoginNeeded {
        /// Why the stored refresh token could not be used, when a refused refresh led here.
        refresh: Option<String>,
        /// What the authorizer said.
        why: String,
    },
    /// A request, or the person, took longer than allowed.
    Timeout {
        /// What was waited for.
        purpose: Purpose,
    },
    /// The server still wants more scopes after the step-up limit.
    InsufficientScope {
        /// The scope it asks for last.
        scope: String,
        /// How many step-ups were made.
        step_ups: u32,
    },
    /// The server refused with 403 for a reason other than scope.
    Forbidden,
    /// The server refused, with 401, a token just issued for it.
    TokenRejected,
    /// Not a refusal an OAuth flow can answer (a status other than 401 or 403).
    NotARefusal {
        /// The status.
        status: u16,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url { url, error } => write!(f, "{url:?}: {error}"),
            Error::Insecure { url } => write!(
                f,
                "{url} is neither https nor loopback http; credentials are not sent there"
            ),
            Error::CrossOrigin { url } => write!(
                f,
                "{url} is on another origin than the MCP server and its authorization server"
            ),
            Error::NoResourceMetadata { tried } => write!(
                f,
                "the server publishes no protected-resource metadata (tried: {})",
                tried.join("; ")
            ),
            Error::NoServerMetadata { issuer, tried } => write!(
                f,
                "no authorization-server metadata for {issuer} (tried: {})",
                tried.join("; ")
            ),
            Error::Document { purpose, error } => write!(f, "{purpose}: {error}"),
            Error::ServerMetadata(e) => write!(f, "authorization-server metadata: {e}"),
            Error::ResourceMismatch { resource, server } => write!(
                f,
                "the protected-resource metadata is for {resource}, not {server}; no token is requested"
            ),
            Error::PkceUnsupported { issuer } => write!(
                f,
                "the authorization-server metadata: {issuer} does not advertise PKCE with S256 \
                 (code_challenge_methods_supported); the MCP spec forbids going on"
            ),
            Error::NoAuthorizationEndpoint { issuer } => write!(
                f,
                "the authorization-server metadata: {issuer} has no authorization endpoint"
            ),
            Error::NoClientIdentity { issuer } => write!(
                f,
                "no client id for {issuer}: not pre-registered, no client metadata document it \
                 accepts, and no registration endpoint"
            ),
            Error::ClientBoundElsewhere { bound, offered } => write!(
                f,
                "the configured client belongs to {bound}, but the server names {}",
                offered.join(", ")
            ),
            Error::DpopAlgorithm {
                resource,
                offered,
                ours,
            } => write!(
                f,
                "{} takes DPoP proofs signed with {}; this client signs them with {}",
                match resource {
                    true => "the MCP server",
                    false => "the authorization server",
                },
                match offered.is_empty() {
                    true => "no algorithm".to_owned(),
                    false => offered.join(", ") + " only",
                },
                ours.join(", ")
            ),
            Error::Scope(e) => e.fmt(f),
            Error::Crypto(e) => e.fmt(f),
            Error::Registration(e) => write!(f, "the client registration: {e}"),
            Error::Token { purpose, error } => write!(f, "{purpose}: {error}"),
            Error::Authorization(e) => write!(f, "{}: {e}", Purpose::Authorization),
            Error::Transport { purpose, detail } if detail.is_empty() => {
                write!(f, "{purpose} could not be completed")
            }
            Error::Transport { purpose, detail } => {
                write!(f, "{purpose} could not be completed: {detail}")
            }
            Error::LoginNeeded {
                refresh: Some(refresh),
                why,
            } => write!(
                f,
                "the token refresh was refused ({refresh}), and a new login is needed: {why}"
            ),
            Error::LoginNeeded { refresh: None, why } => {
                write!(f, "a new login is needed: {why}")
            }
            Error::Timeout { purpose } => write!(f, "{purpose} timed out"),
            Error::InsufficientScope { scope, step_ups } => write!(
                f,
                "the server still asks for the scope {scope:?} after {step_ups} step-up authorizations"
            ),
            Error::Forbidden => {
                f.write_str("the server refused the request (403) for a reason other than scope")
            }
            Error::TokenRejected => {
                f.write_str("the server refused (401) a token just issued for it")
            }
            Error::NotARefusal { status } => {
                write!(
                    f,
                    "HTTP {status} is not a refusal an authorization flow can answer"
                )
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Url { error, .. } => Some(error),
            Error::Document { error, .. } => Some(error),
            Error::ServerMetadata(e) => Some(e),
            Error::Scope(e) => Some(e),
            Error::Crypto(e) => Some(e),
            Error::Registration(e) => Some(e),
            Error::Token { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Why `Flow::handle_redirect` did not take a redirect.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum RedirectError {
    /// The flow is not waiting for one.
    NotWaiting,
    /// Not the redirect URI (another path or origin).
    WrongTarget,
    /// The query does not parse.
    Query(FormError),
    /// `state` is missing or not the one sent: not this flow's response. The flow goes on
    /// waiting.
    StateMismatch,
    /// The response was this flow's and ended it: the reason is in `Output::Failed`.
    Failed,
}

impl fmt::Display for RedirectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedirectError::NotWaiting => f.write_str("no authorization is waiting for a redirect"),
            RedirectError::WrongTarget => f.write_str("the redirect is not to the redirect URI"),
            RedirectError::Query(e) => e.fmt(f),
            RedirectError::StateMismatch => {
                f.write_str("the redirect's state is not this authorization's")
            }
            RedirectError::Failed => f.write_str("the authorization failed"),
        }
    }
}

impl std::error::Error for RedirectError {}
