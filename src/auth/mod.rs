//! OAuth 2.1 for an MCP client, as the MCP authorization spec defines it (revisions
//! 2025-11-25 and 2026-07-28, `basic/authorization`, with the 2025-03-26 fallbacks), as a
//! sans-IO core: it parses what servers send, builds the requests to send them, and runs
//! the flow from a server's refusal to a token in `Flow`. It owns no socket, runtime or
//! clock: the driver issues the requests, opens the browser, and gives the time. Public here:
//! the configuration, tokens, the host's traits and the errors; the parsers and the flow
//! machine are internal, driven by [`client::auth::OAuth`](crate::client::auth::OAuth).
//!
//! What it owns:
//!
//! | piece | spec |
//! | --- | --- |
//! | `challenge`: `WWW-Authenticate` parsing, the `Bearer` challenge | RFC 9110 11.6.1, RFC 6750 3, RFC 9728 5.1 |
//! | `metadata`: protected-resource and authorization-server metadata, their well-known URLs, the `resource` and `issuer` checks, the 2025-03-26 defaults | RFC 9728, RFC 8414, OpenID Discovery |
//! | PKCE `S256`, `state`, ES256 client assertions | RFC 7636, RFC 7523 |
//! | the authorization URL and response (`state`, `iss`), the token requests and answers | OAuth 2.1, RFC 8707, RFC 9207 |
//! | client identity: pre-registered, Client ID Metadata Document, dynamic registration | RFC 7591, the CIMD draft |
//! | [`Scopes`] and the spec's scope selection, step-up on 403 `insufficient_scope` | RFC 6749 3.3 |
//! | [`Token`], refresh and rotation, [`TokenCache`] by issuer, client, resource and scope | OAuth 2.1 4.3 |
//! | [`TokenProvider`]: what the client asks of whoever supplies tokens | |
//! | DPoP ([`Dpop`], [`DpopKey`]): proofs on token and MCP requests, nonces per origin, `token_type` checked | RFC 9449 |
//! | grants by assertion: a workload token ([`GrantKind::JwtBearer`]), an ID-JAG from the enterprise IdP ([`EnterpriseIdp`]) | RFC 7523, RFC 8693 |
//!
//! Every parser has a documented size limit and refuses what does not follow its grammar;
//! nothing panics on what a server sends. Secrets (tokens, the client secret, codes, PKCE
//! verifiers, assertions) are [`Secret`]s: redacted in `Debug` and
//! errors, never put in a URL, sent only to the MCP server's origin and its authorization
//! server's, and only over `https` or loopback `http`.
//!
//! # Run loop
//!
//! ```text
//! let mut flow = Flow::new(Config::authorization_code(SERVER, "http://127.0.0.1:PORT/callback")?);
//! // The MCP server answered 401 or 403:
//! flow.handle_refusal(status, &headers, sent_token, now);
//! loop {
//!     while let Some(output) = flow.poll_output() {
//!         match output {
//!             Output::Send { id, request, max_response_bytes } =>
//!                 issue it (no redirects followed, the body read up to the limit), then
//!                 flow.handle_response(id, response, now) or flow.handle_error(id, now),
//!             Output::Authorize { url } =>
//!                 open url in a browser; when it comes back to the redirect URI,
//!                 flow.handle_redirect(&callback_url, now),
//!             Output::Token(token) => re-send the refused request with token.access_token(),
//!             Output::Failed(error) => fail the refused request (it did not run),
//!             Output::Reload { .. } => (a cache other processes share, Flow::share_cache)
//!                 take its lock, read it, flow.handle_reload(tokens, now); write the cache
//!                 back and release the lock once the flow has nothing left to do,
//!         }
//!     }
//!     sleep until flow.poll_timeout(), then flow.handle_timeout(now)
//! }
//! // Before each request: hold it for the token if the current one is about to expire.
//! if flow.refresh_ahead(now) { run the outputs as above, then send it with the token }
//! // A request made with the token was accepted:
//! flow.accepted();
//! ```
//!
//! Time is [`UnixTime`] (the wall clock, in seconds): token expiry and signed assertions are
//! in wall-clock time, and a token store outlives the process.
//!
//! The flow, from a 401: the challenge's `resource_metadata` (on the server's origin), else
//! the path-aware then root well-known URLs; the metadata's `resource` must match the server;
//! its first authorization server (or the one a pre-registered client belongs to); that
//! server's metadata by RFC 8414 then OpenID discovery, its `issuer` exactly the one asked
//! for, PKCE `S256` advertised; the client id (pre-registered, else a Client ID Metadata
//! Document the server accepts, else a registration, kept per issuer); the scopes (the
//! challenge's, else the resource's `scopes_supported`, else none; `offline_access` when the
//! authorization server lists it); then the browser with `state`, the PKCE challenge and
//! `resource`; the redirect checked (`state`, then `iss` per RFC 9207, then errors); the
//! code exchanged with the verifier and `resource`. With the client credentials grant, the
//! token request follows the metadata directly. A server with no protected-resource metadata
//! is taken as the 2025-03-26 revision had it: its origin is the authorization server, with
//! metadata at the root or the default `/authorize`, `/token` and `/register`.

pub(crate) mod assertion;
pub(crate) mod client;
mod crypto;
pub(crate) mod dpop;
mod flow;
mod provider;
pub(crate) mod token;

pub(crate) mod challenge;
pub(crate) mod metadata;
pub(crate) mod scope;
pub(crate) mod url;

pub use assertion::{AssertionFuture, AssertionProvider, AssertionSource, EnterpriseIdp};
pub use client::{ApplicationType, AuthMethod, ClientMetadata, PreRegistered, RegistrationError};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use crypto::SystemRandomness;
pub use crypto::{CryptoError, Randomness, SigningKey};
pub use dpop::{Dpop, DpopKey};
pub(crate) use flow::{Flow, Output, RedirectError};
pub use flow::{
    config::{Config, GrantKind, Limits},
    error::{AuthorizationError, Error, Purpose},
};
pub use provider::{Refusal, TokenProvider};
pub use scope::{ScopeError, Scopes};
pub use token::{OAuthError, Token, TokenCache, TokenKey, TokenResponseError};
pub use url::{Url, UrlError};

pub use crate::secret::Secret;

/// The `http` types [`TokenProvider::refused`] takes, for implementors that do not depend on
/// the `http` crate themselves.
pub use http::{HeaderMap, StatusCode};

/// Wall-clock time in whole seconds since the Unix epoch, as the driver read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(pub u64);

impl UnixTime {
    /// `secs` seconds later (saturating).
    pub(crate) fn plus(self, secs: u64) -> UnixTime {
        UnixTime(self.0.saturating_add(secs))
    }
}

/// Where a driver of this module reads the wall clock: token expiry, refresh deadlines and
/// assertion times are computed from what it says. The machines here never read a clock; the
/// OAuth driver (`client::auth::OAuth`) asks its `Clock`, the system's unless it was given
/// another (a test's, which it moves by hand).
pub trait Clock: Send + Sync {
    /// The time now.
    fn now(&self) -> UnixTime;
}

#[cfg(test)]
mod tests;
