//! Discovery documents: protected-resource metadata (RFC 9728) and authorization-server
//! metadata (RFC 8414, OpenID Connect Discovery 1.0), their well-known URLs in the order the
//! MCP authorization spec gives, the checks on what they say, and the 2025-03-26 defaults for
//! servers that publish neither.
//!
//! Every document is read within [`MAX_METADATA_BYTES`], must be a JSON object whose known
//! members have the right types (unknown members are ignored, as both RFCs require), and every
//! URL in it must be `https` or loopback `http`.

use std::fmt;

use serde::Deserialize;

use super::scope::Scopes;
use super::url::Url;

/// The largest metadata document read.
pub(crate) const MAX_METADATA_BYTES: usize = 64 * 1024;
/// The most authorization servers taken from a resource's metadata.
pub(crate) const MAX_AUTHORIZATION_SERVERS: usize = 16;
/// The most entries read from any other list in a document.
pub(crate) const MAX_LIST_ENTRIES: usize = 128;

/// Why a metadata document (or a token endpoint's or registration endpoint's answer) was
/// refused. Carries no text from the document: it may hold what must not be echoed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocumentError {
    /// Over its size limit.
    TooLarge,
    /// Not JSON, not an object, or a known member of the wrong type (where serde stopped).
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// A member that is missing, empty, too long or malformed.
    Invalid(&'static str),
    /// A member whose URL is neither `https` nor loopback `http`.
    Insecure(&'static str),
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentError::TooLarge => f.write_str("the document is over its size limit"),
            DocumentError::Json { line, column } => write!(
                f,
                "the document is not a JSON object of the expected shape (line {line}, column {column})"
            ),
            DocumentError::Invalid(member) => write!(f, "the document's `{member}` is invalid"),
            DocumentError::Insecure(member) => write!(
                f,
                "the document's `{member}` is not an https (or loopback http) URL"
            ),
        }
    }
}

impl std::error::Error for DocumentError {}

/// Parses a JSON object within `limit` bytes into `T`.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    body: &[u8],
    limit: usize,
) -> Result<T, DocumentError> {
    if body.len() > limit {
        return Err(DocumentError::TooLarge);
    }
    // An object and nothing else: `T` is a struct, and serde_json refuses trailing bytes.
    let trimmed = body.trim_ascii_start();
    if !trimmed.starts_with(b"{") {
        return Err(DocumentError::Json { line: 1, column: 1 });
    }
    // RFC 8259 section 8.1: JSON text is UTF-8, all of it. serde_json reading bytes does not
    // check the strings of members `T` ignores (found by the auth_token_exchange fuzz target).
    let text = std::str::from_utf8(body).map_err(|e| {
        let before = &body[..e.valid_up_to()];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        DocumentError::Json {
            line: 1 + before.iter().filter(|&&b| b == b'\n').count(),
            column: 1 + before.len() - line_start,
        }
    })?;
    serde_json::from_str(text).map_err(|e| DocumentError::Json {
        line: e.line(),
        column: e.column(),
    })
}

fn secure_url(text: &str, member: &'static str) -> Result<Url, DocumentError> {
    let url = Url::parse(text).map_err(|_| DocumentError::Invalid(member))?;
    if !url.is_secure() {
        return Err(DocumentError::Insecure(member));
    }
    Ok(url)
}

fn bounded_list(
    list: Option<Vec<String>>,
    member: &'static str,
) -> Result<Option<Vec<String>>, DocumentError> {
    match list {
        Some(list) if list.len() > MAX_LIST_ENTRIES => Err(DocumentError::Invalid(member)),
        other => Ok(other),
    }
}

fn scopes(
    list: Option<Vec<String>>,
    member: &'static str,
) -> Result<Option<Scopes>, DocumentError> {
    bounded_list(list, member)?
        .map(|l| Scopes::from_list(&l).map_err(|_| DocumentError::Invalid(member)))
        .transpose()
}

/// An issuer identifier (RFC 8414 section 2): a secure URL with no query (and no fragment,
/// which [`Url`] never has).
pub(crate) fn issuer_url(text: &str, member: &'static str) -> Result<Url, DocumentError> {
    let url = secure_url(text, member)?;
    if url.query().is_some() {
        return Err(DocumentError::Invalid(member));
    }
    Ok(url)
}

/// What a protected resource says about itself (RFC 9728 section 2), the members an MCP
/// client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourceMetadata {
    /// The resource identifier, checked against the MCP server's URL by [`resource_matches`].
    pub resource: Url,
    /// The issuers of the authorization servers that serve it (at least one, as MCP requires).
    pub authorization_servers: Vec<Url>,
    /// The scopes it knows, if it lists them.
    pub scopes_supported: Option<Scopes>,
    /// RFC 9728 section 2: it takes DPoP-bound access tokens only (RFC 9449).
    pub dpop_bound_access_tokens_required: bool,
}

#[derive(Deserialize)]
struct RawResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Option<Vec<String>>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    dpop_bound_access_tokens_required: Option<bool>,
}

impl ResourceMetadata {
    /// Parses a protected-resource metadata document.
    pub(crate) fn parse(body: &[u8]) -> Result<ResourceMetadata, DocumentError> {
        let raw: RawResourceMetadata = parse_json(body, MAX_METADATA_BYTES)?;
        let resource = Url::parse(&raw.resource).map_err(|_| DocumentError::Invalid("resource"))?;
        let servers = raw.authorization_servers.unwrap_or_default();
        if servers.is_empty() || servers.len() > MAX_AUTHORIZATION_SERVERS {
            return Err(DocumentError::Invalid("authorization_servers"));
        }
        let authorization_servers = servers
            .iter()
            .map(|s| issuer_url(s, "authorization_servers"))
            .collect::<Result<_, _>>()?;
        Ok(ResourceMetadata {
            resource,
            authorization_servers,
            scopes_supported: scopes(raw.scopes_supported, "scopes_supported")?,
            dpop_bound_access_tokens_required: raw
                .dpop_bound_access_tokens_required
                .unwrap_or(false),
        })
    }
}

/// The protected-resource metadata URLs to try for an MCP server without a `resource_metadata`
/// hint, in the spec's order: the path-aware one (RFC 9728 section 3.1, the well-known suffix
/// inserted before the path), then the root one. A server at the root has only the latter.
pub(crate) fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    const SUFFIX: &str = "/.well-known/oauth-protected-resource";
    let mut urls = Vec::new();
    let path = server.path();
    if !path.is_empty() && path != "/" {
        let query = server.query().map(|q| format!("?{q}")).unwrap_or_default();
        if let Ok(url) = server.with_path(&format!("{SUFFIX}{path}{query}")) {
            urls.push(url);
        }
    }
    if let Ok(url) = server.with_path(SUFFIX) {
        urls.push(url);
    }
    urls
}

/// Whether a protected resource's metadata may be used for the MCP server at `server`: the
/// same origin (scheme and host compared ignoring case, default ports filled in, as the spec
/// asks clients to accept), and the `resource` path equal to the server's path or a parent of
/// it at a `/` boundary, its query (if it has one) equal. RFC 9728 section 3.3 wants the
/// identifier the metadata URL was formed from; a server whose metadata sits at the root names
/// its origin, one with path-aware metadata its endpoint, so both forms are taken. A trailing
/// `/` is not significant.
pub(crate) fn resource_matches(resource: &Url, server: &Url) -> bool {
    if resource.origin() != server.origin() {
        return false;
    }
    if resource.query().is_some() && resource.query() != server.query() {
        return false;
    }
    let parent = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == parent
        || path
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Which discovery standard a well-known URL belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum MetadataKind {
    /// RFC 8414, `/.well-known/oauth-authorization-server`.
    OAuth,
    /// OpenID Connect Discovery 1.0, `/.well-known/openid-configuration`.
    OpenId,
}

/// The authorization-server metadata URLs to try for `issuer`, in the spec's order. With a
/// path (`https://auth.example.com/tenant1`): RFC 8414 with the suffix inserted, OpenID with
/// it inserted, OpenID with it appended. Without: RFC 8414, then OpenID. A terminating `/` of
/// the issuer's path is removed first (RFC 8414 section 3.1).
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<(Url, MetadataKind)> {
    const OAUTH: &str = "/.well-known/oauth-authorization-server";
    const OPENID: &str = "/.well-known/openid-configuration";
    let path = issuer.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            (OAUTH.to_owned(), MetadataKind::OAuth),
            (OPENID.to_owned(), MetadataKind::OpenId),
        ]
    } else {
        vec![
            (format!("{OAUTH}{path}"), MetadataKind::OAuth),
            (format!("{OPENID}{path}"), MetadataKind::OpenId),
            (format!("{path}{OPENID}"), MetadataKind::OpenId),
        ]
    };
    candidates
        .into_iter()
        .filter_map(|(p, kind)| issuer.with_path(&p).ok().map(|u| (u, kind)))
        .collect()
}

/// What an authorization server says about itself (RFC 8414 section 2), the members an MCP
/// client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServerMetadata {
    /// The issuer identifier, exactly as the document gives it (equal to the one asked for).
    pub issuer: String,
    /// Where the user agent is sent; absent for servers of client credentials only.
    pub authorization_endpoint: Option<Url>,
    /// Where tokens are requested.
    pub token_endpoint: Url,
    /// RFC 7591 dynamic client registration, if offered.
    pub registration_endpoint: Option<Url>,
    /// The scopes it knows (where `offline_access` is looked for).
    pub scopes_supported: Option<Scopes>,
    /// `response_types_supported`.
    pub response_types_supported: Option<Vec<String>>,
    /// `grant_types_supported` (absent: `authorization_code` and `implicit`, RFC 8414).
    pub grant_types_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported` (absent: `client_secret_basic`, RFC 8414).
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_signing_alg_values_supported`.
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// `code_challenge_methods_supported`: PKCE, which MCP requires with `S256`.
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the server puts `iss` in its authorization responses.
    pub authorization_response_iss_parameter_supported: bool,
    /// It accepts an `https` URL naming a Client ID Metadata Document as `client_id`.
    pub client_id_metadata_document_supported: bool,
    /// RFC 9449 section 5.1: the algorithms it takes for DPoP proofs (absent: it says nothing
    /// of DPoP).
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Made up from the 2025-03-26 defaults, not read from a document.
    pub defaulted: bool,
}

#[derive(Deserialize)]
struct RawServerMetadata {
    issuer: String,
    #[serde(default)]
    authorization_endpoint: Option<String>,
    #[serde(default)]
    token_endpoint: Option<String>,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    response_types_supported: Option<Vec<String>>,
    #[serde(default)]
    grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: Option<bool>,
    #[serde(default)]
    client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// Why an authorization server's metadata was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerMetadataError {
    /// The document itself.
    Document(DocumentError),
    /// RFC 8414 section 3.3: its `issuer` is not the issuer the URL was built from (the
    /// document must then not be used).
    IssuerMismatch {
        /// The issuer asked for.
        expected: String,
        /// What the document says (cut to 200 characters).
        found: String,
    },
}

impl fmt::Display for ServerMetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerMetadataError::Document(e) => e.fmt(f),
            ServerMetadataError::IssuerMismatch { expected, found } => write!(
                f,
                "the metadata names the issuer {found:?}, not {expected:?}; it is not used"
            ),
        }
    }
}

impl std::error::Error for ServerMetadataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerMetadataError::Document(e) => Some(e),
            ServerMetadataError::IssuerMismatch { .. } => None,
        }
    }
}

impl From<DocumentError> for ServerMetadataError {
    fn from(e: DocumentError) -> Self {
        ServerMetadataError::Document(e)
    }
}

impl ServerMetadata {
    /// Parses the metadata document of the issuer `expected_issuer`, which the document's
    /// `issuer` must equal exactly (simple string comparison, no normalization).
    pub(crate) fn parse(
        body: &[u8],
        expected_issuer: &str,
    ) -> Result<ServerMetadata, ServerMetadataError> {
        let raw: RawServerMetadata = parse_json(body, MAX_METADATA_BYTES)?;
        if raw.issuer != expected_issuer {
            return Err(ServerMetadataError::IssuerMismatch {
                expected: expected_issuer.to_owned(),
                found: raw.issuer.chars().take(200).collect(),
            });
        }
        issuer_url(&raw.issuer, "issuer")?;
        let endpoint =
            |text: Option<String>, member| text.map(|t| secure_url(&t, member)).transpose();
        let token_endpoint = endpoint(raw.token_endpoint, "token_endpoint")?
            .ok_or(DocumentError::Invalid("token_endpoint"))?;
        Ok(ServerMetadata {
            issuer: raw.issuer,
            authorization_endpoint: endpoint(raw.authorization_endpoint, "authorization_endpoint")?,
            token_endpoint,
            registration_endpoint: endpoint(raw.registration_endpoint, "registration_endpoint")?,
            scopes_supported: scopes(raw.scopes_supported, "scopes_supported")?,
            response_types_supported: bounded_list(
                raw.response_types_supported,
                "response_types_supported",
            )?,
            grant_types_supported: bounded_list(
                raw.grant_types_supported,
                "grant_types_supported",
            )?,
            token_endpoint_auth_methods_supported: bounded_list(
                raw.token_endpoint_auth_methods_supported,
                "token_endpoint_auth_methods_supported",
            )?,
            token_endpoint_auth_signing_alg_values_supported: bounded_list(
                raw.token_endpoint_auth_signing_alg_values_supported,
                "token_endpoint_auth_signing_alg_values_supported",
            )?,
            code_challenge_methods_supported: bounded_list(
                raw.code_challenge_methods_supported,
                "code_challenge_methods_supported",
            )?,
            authorization_response_iss_parameter_supported: raw
                .authorization_response_iss_parameter_supported
                .unwrap_or(false),
            client_id_metadata_document_supported: raw
                .client_id_metadata_document_supported
                .unwrap_or(false),
            dpop_signing_alg_values_supported: bounded_list(
                raw.dpop_signing_alg_values_supported,
                "dpop_signing_alg_values_supported",
            )?,
            defaulted: false,
        })
    }

    /// The 2025-03-26 revision's defaults for a server with no metadata: the authorization
    /// base URL is the MCP server's origin (its path discarded), with `/authorize`, `/token`
    /// and `/register` under it. That revision required PKCE of every server, hence `S256`.
    pub(crate) fn defaults_for(server: &Url) -> Result<ServerMetadata, DocumentError> {
        let at = |path: &str| {
            server
                .with_path(path)
                .map_err(|_| DocumentError::Invalid("issuer"))
        };
        if !server.is_secure() {
            return Err(DocumentError::Insecure("issuer"));
        }
        Ok(ServerMetadata {
            issuer: server.origin_text().to_owned(),
            authorization_endpoint: Some(at("/authorize")?),
            token_endpoint: at("/token")?,
            registration_endpoint: Some(at("/register")?),
            scopes_supported: None,
            response_types_supported: None,
            grant_types_supported: None,
            token_endpoint_auth_methods_supported: None,
            token_endpoint_auth_signing_alg_values_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            authorization_response_iss_parameter_supported: false,
            client_id_metadata_document_supported: false,
            dpop_signing_alg_values_supported: None,
            defaulted: true,
        })
    }

    /// Whether PKCE with `S256` is advertised (the MCP spec: a client MUST refuse a server
    /// whose metadata lacks `code_challenge_methods_supported`, and uses `S256`).
    pub(crate) fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    }

    /// Whether `method` is a token endpoint authentication method it accepts (RFC 8414:
    /// `client_secret_basic` alone when the member is absent).
    pub(crate) fn accepts_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }

    /// Whether the authorization server lists `offline_access` among its scopes.
    pub(crate) fn offers_offline_access(&self) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.contains(super::scope::OFFLINE_ACCESS))
    }

    /// The origins of every endpoint the metadata names (and of the issuer): where requests
    /// for this authorization server may go.
    pub(crate) fn origins(&self) -> Vec<super::url::Origin> {
        let mut origins = Vec::new();
        if let Ok(issuer) = Url::parse(&self.issuer) {
            origins.push(issuer.origin());
        }
        for url in [
            self.authorization_endpoint.as_ref(),
            Some(&self.token_endpoint),
            self.registration_endpoint.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            let origin = url.origin();
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        origins
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    fn texts(urls: &[Url]) -> Vec<&str> {
        urls.iter().map(Url::as_str).collect()
    }

    #[test]
    fn resource_metadata_urls_in_the_spec_order() {
        assert_eq!(
            texts(&resource_metadata_urls(&url(
                "https://example.com/public/mcp"
            ))),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource"
            ]
        );
        for root in ["https://example.com", "https://example.com/"] {
            assert_eq!(
                texts(&resource_metadata_urls(&url(root))),
                ["https://example.com/.well-known/oauth-protected-resource"]
            );
        }
        assert_eq!(
            texts(&resource_metadata_urls(&url(
                "http://127.0.0.1:3000/mcp?x=1"
            ))),
            [
                "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp?x=1",
                "http://127.0.0.1:3000/.well-known/oauth-protected-resource"
            ]
        );
    }

    #[test]
    fn server_metadata_urls_in_the_spec_order() {
        let with_path: Vec<(String, MetadataKind)> =
            server_metadata_urls(&url("https://auth.example.com/tenant1"))
                .into_iter()
                .map(|(u, k)| (u.as_str().to_owned(), k))
                .collect();
        assert_eq!(
            with_path,
            [
                (
                    "https://auth.example.com/.well-known/oauth-authorization-server/tenant1"
                        .into(),
                    MetadataKind::OAuth
                ),
                (
                    "https://auth.example.com/.well-known/openid-configuration/tenant1".into(),
                    MetadataKind::OpenId
                ),
                (
                    "https://auth.example.com/tenant1/.well-known/openid-configuration".into(),
                    MetadataKind::OpenId
                ),
            ]
        );
        for root in ["https://auth.example.com", "https://auth.example.com/"] {
            let urls: Vec<String> = server_metadata_urls(&url(root))
                .into_iter()
                .map(|(u, _)| u.as_str().to_owned())
                .collect();
            assert_eq!(
                urls,
                [
                    "https://auth.example.com/.well-known/oauth-authorization-server",
                    "https://auth.example.com/.well-known/openid-configuration"
                ]
            );
        }
        let trailing: Vec<String> = server_metadata_urls(&url("https://a.example/t1/"))
            .into_iter()
            .map(|(u, _)| u.as_str().to_owned())
            .collect();
        assert_eq!(
            trailing[0],
            "https://a.example/.well-known/oauth-authorization-server/t1"
        );
    }

    #[test]
    fn resource_matching() {
        let server = url("https://mcp.example.com/server/mcp");
        for yes in [
            "https://mcp.example.com/server/mcp",
            "https://mcp.example.com/server/mcp/",
            "HTTPS://MCP.EXAMPLE.COM:443/server/mcp",
            "https://mcp.example.com/server",
            "https://mcp.example.com",
            "https://mcp.example.com/",
        ] {
            assert!(resource_matches(&url(yes), &server), "{yes}");
        }
        for no in [
            "https://evil.example.com/mcp",
            "https://mcp.example.com/server/mcp/more",
            "https://mcp.example.com/serv",
            "https://mcp.example.com/other",
            "http://mcp.example.com/server/mcp",
            "https://mcp.example.com:8443/server/mcp",
            "https://mcp.example.com/server/mcp?tenant=a",
        ] {
            assert!(!resource_matches(&url(no), &server), "{no}");
        }
    }

    #[test]
    fn resource_metadata_parsing() {
        let doc = br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com/t1"],"scopes_supported":["files:read","files:write"],"bearer_methods_supported":["header"],"extra":{"nested":[1,2]}}"#;
        let parsed = ResourceMetadata::parse(doc).unwrap();
        assert_eq!(parsed.resource.as_str(), "https://mcp.example.com/mcp");
        assert_eq!(
            texts(&parsed.authorization_servers),
            ["https://auth.example.com/t1"]
        );
        assert_eq!(
            parsed.scopes_supported.unwrap().to_string(),
            "files:read files:write"
        );

        let cases: &[(&[u8], DocumentError)] = &[
            (b"", DocumentError::Json { line: 1, column: 1 }),
            (b"[]", DocumentError::Json { line: 1, column: 1 }),
            (b"null", DocumentError::Json { line: 1, column: 1 }),
            (br#"{"authorization_servers":["https://a"]}"#, DocumentError::Json { line: 1, column: 39 }),
            (br#"{"resource":"https://m","authorization_servers":[]}"#, DocumentError::Invalid("authorization_servers")),
            (br#"{"resource":"https://m"}"#, DocumentError::Invalid("authorization_servers")),
            (br#"{"resource":"m","authorization_servers":["https://a"]}"#, DocumentError::Invalid("resource")),
            (br#"{"resource":"https://m#f","authorization_servers":["https://a"]}"#, DocumentError::Invalid("resource")),
            (br#"{"resource":"https://m","authorization_servers":["http://a"]}"#, DocumentError::Insecure("authorization_servers")),
            (br#"{"resource":"https://m","authorization_servers":["https://a?x=1"]}"#, DocumentError::Invalid("authorization_servers")),
            (br#"{"resource":"https://m","authorization_servers":["https://a"],"scopes_supported":["a b"]}"#, DocumentError::Invalid("scopes_supported")),
            (br#"{"resource":"https://m","authorization_servers":"https://a"}"#, DocumentError::Json { line: 1, column: 59 }),
            (br#"{"resource":"https://m","resource":"https://n","authorization_servers":["https://a"]}"#, DocumentError::Json { line: 1, column: 34 }),
            (br#"{"resource":"https://m","authorization_servers":["https://a"]} x"#, DocumentError::Json { line: 1, column: 64 }),
        ];
        for (doc, expected) in cases {
            assert_eq!(
                ResourceMetadata::parse(doc),
                Err(*expected),
                "{}",
                String::from_utf8_lossy(doc)
            );
        }
        let many: Vec<String> = (0..=MAX_AUTHORIZATION_SERVERS)
            .map(|i| format!("\"https://a{i}\""))
            .collect();
        let doc = format!(
            r#"{{"resource":"https://m","authorization_servers":[{}]}}"#,
            many.join(",")
        );
        assert_eq!(
            ResourceMetadata::parse(doc.as_bytes()),
            Err(DocumentError::Invalid("authorization_servers"))
        );
        let big = format!(
            r#"{{"resource":"https://m","authorization_servers":["https://a"],"pad":"{}"}}"#,
            "x".repeat(MAX_METADATA_BYTES)
        );
        assert_eq!(
            ResourceMetadata::parse(big.as_bytes()),
            Err(DocumentError::TooLarge)
        );
        // Deep nesting in an ignored member is skipped (serde_json skips without recursing);
        // in a known member it stops at serde_json's recursion limit. Neither overflows.
        let deep = |member: &str| {
            format!(
                r#"{{"resource":"https://m","authorization_servers":["https://a"],"{member}":{}{}}}"#,
                "[".repeat(20_000),
                "]".repeat(20_000)
            )
        };
        assert!(ResourceMetadata::parse(deep("x").as_bytes()).is_ok());
        assert!(matches!(
            ResourceMetadata::parse(deep("scopes_supported").as_bytes()),
            Err(DocumentError::Json { .. })
        ));
    }

    const AS_DOC: &str = r#"{
        "issuer": "https://auth.example.com/t1",
        "authorization_endpoint": "https://auth.example.com/t1/authorize",
        "token_endpoint": "https://tokens.example.com/t1/token",
        "registration_endpoint": "https://auth.example.com/t1/register",
        "scopes_supported": ["mcp:basic", "offline_access"],
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["plain", "S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
        "jwks_uri": "https://auth.example.com/jwks"
    }"#;

    #[test]
    fn server_metadata_parsing_and_checks() {
        let meta = ServerMetadata::parse(AS_DOC.as_bytes(), "https://auth.example.com/t1").unwrap();
        assert!(meta.supports_s256());
        assert!(meta.offers_offline_access());
        assert!(meta.accepts_auth_method("none"));
        assert!(!meta.accepts_auth_method("client_secret_basic"));
        assert!(meta.authorization_response_iss_parameter_supported);
        assert!(meta.client_id_metadata_document_supported);
        assert_eq!(meta.origins().len(), 2);
        assert!(!meta.defaulted);

        // The issuer compares as a string: no trailing-slash or case normalization.
        for other in [
            "https://auth.example.com/t1/",
            "https://AUTH.example.com/t1",
            "https://auth.example.com",
        ] {
            assert!(matches!(
                ServerMetadata::parse(AS_DOC.as_bytes(), other),
                Err(ServerMetadataError::IssuerMismatch { .. })
            ));
        }
        let without_pkce = AS_DOC.replace(
            r#""code_challenge_methods_supported": ["plain", "S256"],"#,
            "",
        );
        let meta =
            ServerMetadata::parse(without_pkce.as_bytes(), "https://auth.example.com/t1").unwrap();
        assert!(!meta.supports_s256());
        assert!(meta.accepts_auth_method("none"));
        let plain_only = AS_DOC.replace(r#"["plain", "S256"]"#, r#"["plain"]"#);
        assert!(
            !ServerMetadata::parse(plain_only.as_bytes(), "https://auth.example.com/t1")
                .unwrap()
                .supports_s256()
        );
        let no_methods = AS_DOC.replace(
            r#""token_endpoint_auth_methods_supported": ["none", "client_secret_post"],"#,
            "",
        );
        let meta =
            ServerMetadata::parse(no_methods.as_bytes(), "https://auth.example.com/t1").unwrap();
        assert!(meta.accepts_auth_method("client_secret_basic"));
        assert!(!meta.accepts_auth_method("none"));

        let bad = [
            (
                AS_DOC.replace("https://tokens.example.com", "http://tokens.example.com"),
                DocumentError::Insecure("token_endpoint"),
            ),
            (
                AS_DOC.replace(
                    r#""token_endpoint": "https://tokens.example.com/t1/token","#,
                    "",
                ),
                DocumentError::Invalid("token_endpoint"),
            ),
            (
                AS_DOC.replace(
                    "https://auth.example.com/t1/authorize",
                    "https://auth.example.com/t1/authorize#x",
                ),
                DocumentError::Invalid("authorization_endpoint"),
            ),
            (
                AS_DOC.replace(
                    r#""authorization_response_iss_parameter_supported": true"#,
                    r#""authorization_response_iss_parameter_supported": "true""#,
                ),
                DocumentError::Json {
                    line: 10,
                    column: 64,
                },
            ),
        ];
        for (doc, expected) in bad {
            assert_eq!(
                ServerMetadata::parse(doc.as_bytes(), "https://auth.example.com/t1"),
                Err(ServerMetadataError::Document(expected))
            );
        }
        // An issuer served over plain http to a non-loopback host is refused, even matching.
        let insecure = AS_DOC.replace(
            "\"https://auth.example.com/t1\"",
            "\"http://auth.example.com/t1\"",
        );
        assert_eq!(
            ServerMetadata::parse(insecure.as_bytes(), "http://auth.example.com/t1"),
            Err(ServerMetadataError::Document(DocumentError::Insecure(
                "issuer"
            )))
        );
    }

    #[test]
    fn the_2025_03_26_defaults() {
        let meta = ServerMetadata::defaults_for(&url("http://localhost:3000/mcp")).unwrap();
        assert_eq!(meta.issuer, "http://localhost:3000");
        assert_eq!(
            meta.authorization_endpoint.as_ref().unwrap().as_str(),
            "http://localhost:3000/authorize"
        );
        assert_eq!(meta.token_endpoint.as_str(), "http://localhost:3000/token");
        assert_eq!(
            meta.registration_endpoint.as_ref().unwrap().as_str(),
            "http://localhost:3000/register"
        );
        assert!(meta.defaulted && meta.supports_s256());
        assert_eq!(
            ServerMetadata::defaults_for(&url("http://example.com/mcp")),
            Err(DocumentError::Insecure("issuer"))
        );
    }
}
