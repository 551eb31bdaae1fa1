//! What a [`Flow`] is set up with: the MCP server, the grant, the client, the scopes, and its
//! limits and timing.

use super::Error;
#[cfg(doc)]
use super::Flow;
use crate::auth::assertion::{AssertionSource, EnterpriseIdp};
use crate::auth::client::{ApplicationType, ClientMetadata, PreRegistered};
use crate::auth::dpop::Dpop;
use crate::auth::scope::Scopes;
use crate::auth::token::clean_text;
use crate::auth::url::Url;

/// Which grant the flow obtains tokens with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GrantKind {
    /// The authorization code grant with PKCE: a person approves in a browser, which is sent
    /// back to `redirect_uri` (loopback `http`, or `https`).
    AuthorizationCode {
        /// Where the authorization server sends the browser back.
        redirect_uri: Url,
    },
    /// The client credentials grant (the `io.modelcontextprotocol/oauth-client-credentials`
    /// extension): no person, a pre-registered client with a secret or a key.
    ClientCredentials,
    /// The JWT-bearer grant (RFC 7523 section 2.1) with a workload's own token from its
    /// platform (workload identity federation, the `io.modelcontextprotocol/auth/wif`
    /// extension): no person, the token read from `workload` at each use.
    JwtBearer {
        /// Where the workload token is read.
        workload: AssertionSource,
    },
    /// Enterprise-managed authorization (the
    /// `io.modelcontextprotocol/enterprise-managed-authorization` extension): the user's ID
    /// token traded at the enterprise IdP by token exchange (RFC 8693) for an ID-JAG for the
    /// MCP server's authorization server, then the JWT-bearer grant with it there.
    EnterpriseManaged(EnterpriseIdp),
}

/// Limits and timing of a `Flow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How many step-up authorizations (403 `insufficient_scope`) may follow one another
    /// without a request being accepted in between; the spec asks for a limit, and the
    /// conformance suite for at most three authorizations in all.
    pub max_step_ups: u32,
    /// How long each HTTP request of the flow may take.
    pub request_timeout_secs: u64,
    /// How long the person has to approve in the browser.
    pub authorize_timeout_secs: u64,
    /// How long before its expiry an access token is refreshed (in the background: the token
    /// stays in use meanwhile).
    pub refresh_margin_secs: u64,
    /// A token this close to its expiry (or past it) is not sent: the request waits for its
    /// refresh (`Flow::refresh_ahead`), since a clock this far off, or a request this slow,
    /// would reach the server with an expired token and take a 401.
    pub expiry_skew_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_step_ups: 2,
            request_timeout_secs: 30,
            authorize_timeout_secs: 300,
            refresh_margin_secs: 60,
            expiry_skew_secs: 10,
        }
    }
}

/// What a `Flow` needs to know.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// The MCP endpoint the tokens are for.
    pub server: Url,
    /// The grant.
    pub grant: GrantKind,
    /// A client registered beforehand: used first, with every authorization server unless
    /// it names its issuer.
    pub pre_registered: Option<PreRegistered>,
    /// The `https` URL of this client's Client ID Metadata Document, used as `client_id`
    /// with servers that advertise `client_id_metadata_document_supported`.
    pub metadata_document: Option<Url>,
    /// How the client describes itself in a dynamic registration.
    pub client_metadata: ClientMetadata,
    /// The scopes to ask for when the server's challenge names none, before the resource's
    /// `scopes_supported` (a host's configured scope, for the client credentials grant).
    pub scope: Option<Scopes>,
    /// Ask for `offline_access` (a refresh token) when the authorization server lists it.
    pub offline_access: bool,
    /// For a server with no protected-resource metadata, use the 2025-03-26 rules: its
    /// origin as the authorization server, with metadata or the default endpoints.
    pub legacy_fallback: bool,
    /// DPoP-bound tokens (RFC 9449): proofs on token requests and MCP requests. `None`:
    /// bearer tokens only.
    pub dpop: Option<Dpop>,
    /// Limits and timing.
    pub limits: Limits,
}

impl Config {
    /// A configuration for the authorization code grant with `server` and `redirect_uri`
    /// checked: both `https` or loopback `http`.
    pub fn authorization_code(server: &str, redirect_uri: &str) -> Result<Config, Error> {
        let redirect = secure(redirect_uri)?;
        let application_type = if redirect.is_loopback() {
            ApplicationType::Native
        } else {
            ApplicationType::Web
        };
        Config::new(
            server,
            GrantKind::AuthorizationCode {
                redirect_uri: redirect,
            },
            application_type,
        )
    }

    /// A configuration for the client credentials grant with the pre-registered `client`.
    pub fn client_credentials(server: &str, client: PreRegistered) -> Result<Config, Error> {
        let mut config = Config::new(
            server,
            GrantKind::ClientCredentials,
            ApplicationType::Native,
        )?;
        config.pre_registered = Some(client);
        config.offline_access = false;
        Ok(config)
    }

    /// A configuration for the JWT-bearer grant with a workload token read from `workload`,
    /// for the pre-registered `client` (its id; a secret or key if the server wants the
    /// client authenticated too).
    pub fn jwt_bearer(
        server: &str,
        client: PreRegistered,
        workload: AssertionSource,
    ) -> Result<Config, Error> {
        let mut config = Config::client_credentials(server, client)?;
        config.grant = GrantKind::JwtBearer { workload };
        Ok(config)
    }

    /// A configuration for enterprise-managed authorization: `client` as the MCP server's
    /// authorization server knows it, `idp` where the user's ID token becomes an ID-JAG.
    pub fn enterprise_managed(
        server: &str,
        client: PreRegistered,
        idp: EnterpriseIdp,
    ) -> Result<Config, Error> {
        if !idp.token_endpoint.is_secure() {
            return Err(Error::Insecure {
                url: idp.token_endpoint.to_string(),
            });
        }
        let mut config = Config::client_credentials(server, client)?;
        config.grant = GrantKind::EnterpriseManaged(idp);
        Ok(config)
    }

    fn new(
        server: &str,
        grant: GrantKind,
        application_type: ApplicationType,
    ) -> Result<Config, Error> {
        Ok(Config {
            server: secure(server)?,
            grant,
            pre_registered: None,
            metadata_document: None,
            client_metadata: ClientMetadata {
                client_name: "mcpwire".to_owned(),
                client_uri: None,
                application_type,
            },
            scope: None,
            offline_access: true,
            legacy_fallback: true,
            dpop: None,
            limits: Limits::default(),
        })
    }
}

fn secure(text: &str) -> Result<Url, Error> {
    let url = Url::parse(text).map_err(|e| Error::Url {
        url: clean_text(text, 200),
        error: e,
    })?;
    if !url.is_secure() {
        return Err(Error::Insecure {
            url: url.to_string(),
        });
    }
    Ok(url)
}
