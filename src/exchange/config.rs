//! How to reach one endpoint ([`HttpConfig`]): its URL and the checks on it, the size limits,
//! the extra headers sent on every request and the rules for their names and values.

use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use http::header::{AUTHORIZATION, HeaderName, HeaderValue};

use super::overload::OverloadPolicy;
use crate::secret::Secret;
use crate::session::ResumePolicy;
use crate::sse;

/// A line of wire trace for `-v` output. Secrets are already redacted.
pub type WireLog = Arc<dyn Fn(&str) + Send + Sync>;

/// Size limits for what a server sends over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpLimits {
    /// The largest `application/json` reply body, in bytes.
    pub max_body_bytes: usize,
    /// Line and event limits for `text/event-stream` replies.
    pub sse: sse::Limits,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 16 * 1024 * 1024,
            sse: sse::Limits::default(),
        }
    }
}

/// How to reach one Streamable HTTP endpoint.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint, `http://` or `https://`.
    pub url: Uri,
    /// Sent as `Authorization: Bearer ...` on every request to the endpoint's origin: a static
    /// token (a binding's `token_env`), whose refusal is final. Tokens that change (a host's
    /// token store, OAuth) come from the client's token source instead
    /// (`ClientOptions::auth`, through `Exchange::set_bearer`).
    pub bearer_token: Option<Secret>,
    /// More headers sent on every request to the endpoint (`POST`, `GET` and `DELETE`), for
    /// servers that want an API key or a tenant in a header of their own. Their values are
    /// treated as credentials, like the bearer token: marked sensitive, and redacted from the
    /// wire log, errors and results.
    pub headers: ExtraHeaders,
    /// Size limits.
    pub limits: HttpLimits,
    /// How response streams that end early are resumed.
    pub resume: ResumePolicy,
    /// How a request that may be sent twice (the era probe, `initialize`, a listing,
    /// `tasks/get`) is sent again when the server answers 429 or 503: after its
    /// `Retry-After` or a jittered backoff, within the request's deadline, a few times. A
    /// `tools/call` so answered is never sent again: it fails as rate limited.
    pub overload: OverloadPolicy,
    /// How long a notification or response POST may take.
    pub post_timeout: Duration,
    /// How long the `DELETE` that ends a session may take.
    pub close_timeout: Duration,
    /// Fall back to the legacy HTTP+SSE transport when the initialize POST is answered 400,
    /// 404 or 405.
    pub legacy_fallback: bool,
    /// Open the standalone GET stream once the session is initialized, for what the server
    /// sends outside any request (log messages, list changes, its own requests). Off by
    /// default: a session opened for one call does not need it. A server that answers the GET
    /// with 405 offers none; the stream is reopened when it ends (with `Last-Event-ID`, after
    /// the server's `retry` or a backoff), until `resume.max_attempts` tries in a row bring no
    /// event.
    pub server_stream: bool,
    /// Receives a redacted trace of the wire conversation.
    pub wire_log: Option<WireLog>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &self.url)
            .field("bearer_token", &self.bearer_token)
            .field("headers", &self.headers)
            .field("limits", &self.limits)
            .field("resume", &self.resume)
            .field("overload", &self.overload)
            .field("legacy_fallback", &self.legacy_fallback)
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// A configuration for `url` with default limits and no token. Fails for anything but an
    /// absolute `http` or `https` URL with a host.
    pub fn new(url: &str) -> Result<Self, EndpointError> {
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| EndpointError {
                url: url.to_owned(),
                problem: EndpointProblem::Invalid(e.to_string()),
            })?;
        let problem = match uri.scheme_str() {
            Some("http" | "https") if uri.host().is_none_or(str::is_empty) => {
                Some(EndpointProblem::NoHost)
            }
            Some("http" | "https") => None,
            _ => Some(EndpointProblem::NotHttp),
        };
        if let Some(problem) = problem {
            return Err(EndpointError {
                url: url.to_owned(),
                problem,
            });
        }
        Ok(HttpConfig {
            url: uri,
            bearer_token: None,
            headers: ExtraHeaders::default(),
            limits: HttpLimits::default(),
            resume: ResumePolicy::default(),
            overload: OverloadPolicy::default(),
            post_timeout: Duration::from_secs(30),
            close_timeout: Duration::from_secs(2),
            legacy_fallback: true,
            server_stream: false,
            wire_log: None,
        })
    }

    /// Every credential this config sends: the bearer token and the extra headers' values.
    /// What the server may echo, so what is redacted from what it sends back.
    pub(crate) fn secrets(&self) -> Vec<Secret> {
        self.bearer_token
            .iter()
            .chain(self.headers.iter().map(|(_, value)| value))
            .cloned()
            .collect()
    }
}

/// Why a URL is not a Streamable HTTP endpoint ([`HttpConfig::new`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointError {
    url: String,
    problem: EndpointProblem,
}

/// What is wrong with a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndpointProblem {
    /// It does not parse as a URI (the parser's reason).
    Invalid(String),
    /// Its scheme is not `http` or `https`.
    NotHttp,
    /// It names no host.
    NoHost,
}

impl EndpointError {
    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &EndpointProblem {
        &self.problem
    }
}

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = &self.url;
        match &self.problem {
            EndpointProblem::Invalid(why) => write!(f, "invalid URL {url:?}: {why}"),
            EndpointProblem::NotHttp => {
                write!(f, "the URL {url:?} must start with http:// or https://")
            }
            EndpointProblem::NoHost => write!(f, "the URL {url:?} has no host"),
        }
    }
}

impl std::error::Error for EndpointError {}

/// The headers the exchange sets itself, or that frame the HTTP connection (lower case):
/// never taken as [`ExtraHeaders`]. Any `mcp-*` name is refused too.
const RESERVED_HEADERS: [&str; 15] = [
    "accept",
    "content-type",
    "content-length",
    "host",
    "authorization",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Why a header was refused as an [extra header](ExtraHeaders). Its value is never part of
/// the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderError {
    /// The name is not an HTTP field name (a token, RFC 9110 §5.1: letters, digits and
    /// ``!#$%&'*+-.^_`|~``).
    InvalidName,
    /// The exchange sets this header itself (`Accept`, `Content-Type`, `Content-Length`,
    /// `Host`, `Authorization`, `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`,
    /// any `Mcp-*`), or it frames the connection (`Connection`, `Transfer-Encoding`, ...).
    Reserved,
    /// `Authorization`: the bearer token has its own setting ([`HttpConfig::bearer_token`],
    /// a binding's `token_env`).
    Authorization,
    /// The value holds a byte a header value cannot carry: CR, LF, NUL, DEL or another
    /// control character but tab.
    InvalidValue,
    /// The name was given already (names are compared case-insensitively).
    Duplicate,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HeaderError::InvalidName => {
                "not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)"
            }
            HeaderError::Reserved => {
                "set by the MCP transport itself (Accept, Content-Type, Content-Length, Host, \
                 Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, any Mcp-* header, and the \
                 connection's own headers such as Connection and Transfer-Encoding)"
            }
            HeaderError::Authorization => {
                "reserved for the bearer token, which has its own setting (token_env in a \
                 binding, bearer_token in HttpConfig)"
            }
            HeaderError::InvalidValue => {
                "its value holds a character a header cannot carry (CR, LF, NUL or another \
                 control character)"
            }
            HeaderError::Duplicate => "given twice (header names are case-insensitive)",
        })
    }
}

impl std::error::Error for HeaderError {}

/// One extra header: its name, its value as a credential, and the value as sent (marked
/// sensitive, so `Debug` and HTTP/2's header compression leave it alone).
#[derive(Clone)]
pub(super) struct ExtraHeader {
    pub(super) name: HeaderName,
    secret: Secret,
    pub(super) value: HeaderValue,
}

/// Headers sent on every request to the endpoint besides the ones the exchange sets
/// ([`HttpConfig::headers`]). Names are checked when added ([`ExtraHeaders::insert`]); values
/// are credentials: `Debug` shows only the names.
///
/// ```
/// # #[cfg(feature = "client")] {
/// use mcpwire::auth::Secret;
/// use mcpwire::transport::http::{HeaderError, HttpConfig};
///
/// let mut config = HttpConfig::new("https://mcp.example.com/mcp").unwrap();
/// config.headers.insert("X-Api-Key", Secret::new("k-2f9c1e7a"))?;
/// assert_eq!(config.headers.insert("Mcp-Session-Id", Secret::new("s")), Err(HeaderError::Reserved));
/// assert_eq!(config.headers.insert("X-Api-Key", Secret::new("again")), Err(HeaderError::Duplicate));
/// assert_eq!(config.headers.insert("X-Bad", Secret::new("a\r\nb")), Err(HeaderError::InvalidValue));
/// assert_eq!(format!("{:?}", config.headers), r#"{"x-api-key": Secret(<redacted>)}"#);
/// # }
/// # Ok::<(), mcpwire::transport::http::HeaderError>(())
/// ```
#[derive(Clone, Default)]
pub struct ExtraHeaders(pub(super) Vec<ExtraHeader>);

impl ExtraHeaders {
    /// Checks a header name without a value: an HTTP field name that the exchange does not
    /// set itself. Returns it in its canonical (lower-case) form.
    ///
    /// # Errors
    ///
    /// [`HeaderError::InvalidName`], [`HeaderError::Authorization`] or
    /// [`HeaderError::Reserved`].
    pub fn check_name(name: &str) -> Result<HeaderName, HeaderError> {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| HeaderError::InvalidName)?;
        if name == AUTHORIZATION {
            return Err(HeaderError::Authorization);
        }
        if RESERVED_HEADERS.contains(&name.as_str()) || name.as_str().starts_with("mcp-") {
            return Err(HeaderError::Reserved);
        }
        Ok(name)
    }

    /// Adds a header sent on every request, its value a credential.
    ///
    /// # Errors
    ///
    /// The name is refused as [`check_name`](Self::check_name) says, or was added already
    /// ([`HeaderError::Duplicate`]), or the value is not a valid header value
    /// ([`HeaderError::InvalidValue`]: no control characters but tab).
    pub fn insert(&mut self, name: &str, value: Secret) -> Result<(), HeaderError> {
        let name = Self::check_name(name)?;
        if self.0.iter().any(|header| header.name == name) {
            return Err(HeaderError::Duplicate);
        }
        let mut header_value =
            HeaderValue::from_str(value.expose()).map_err(|_| HeaderError::InvalidValue)?;
        header_value.set_sensitive(true);
        self.0.push(ExtraHeader {
            name,
            secret: value,
            value: header_value,
        });
        Ok(())
    }

    /// The headers in the order added: each name (lower case) and its value.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&HeaderName, &Secret)> {
        self.0.iter().map(|header| (&header.name, &header.secret))
    }

    /// How many headers there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for ExtraHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The port `uri`'s scheme implies when it names none.
pub(crate) fn default_port(uri: &Uri) -> Option<u16> {
    match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    }
}
