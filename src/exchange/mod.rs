//! The Streamable HTTP exchange (MCP `basic/transports.mdx`) as a sans-IO machine: what to
//! send for each message, how to read each reply, session ids, resumption, the standalone GET
//! stream, `DELETE`, and the fallback to the legacy HTTP+SSE transport of 2024-11-05.
//!
//! Like [`Session`](crate::session::Session) it owns no socket, runtime or clock. The driver
//! hands it the session's messages ([`Exchange::send`]), issues the HTTP requests it asks for
//! ([`Output::Send`]), feeds back what comes of each one ([`Exchange::handle_head`],
//! [`Exchange::handle_body`], [`Exchange::handle_end`], [`Exchange::handle_error`]), tells it
//! when the session settled a request ([`Exchange::finish`]) and sleeps until
//! [`Exchange::poll_timeout`]. Randomness (the backoff's jitter) comes from a seed the driver
//! gives.
//!
//! # Run loop
//!
//! ```text
//! loop {
//!     while let Some(output) = exchange.poll_output() {
//!         match output {
//!             Output::Send { stream, request } => issue it; its frames come back tagged `stream`,
//!             Output::Abort(stream) => drop that request or response,
//!             Output::Message(m) => session.handle_message(m, now),
//!             Output::RequestFailed { id, failure } => session.fail_request(&id, failure),
//!             Output::LegacyTransport => session.downgrade_to_legacy(now),
//!             Output::Refused(refusal) => ask the token provider (hold_refusals is on), then
//!                 exchange.resend(&refusal.id, Some(token), now) or exchange.reject(&refusal.id, why),
//!             Output::Down(failure) => session.fail_all(&failure),
//!             Output::Closed { .. } => the session is over; stop,
//!         }
//!     }
//!     wait for: a frame -> exchange.handle_{head,body,end,error}(stream, .., now)
//!               exchange.poll_timeout() -> exchange.handle_timeout(now)
//!               a session output -> exchange.send(..) / exchange.finish(..)
//! }
//! ```
//!
//! One POST per message, `Accept: application/json, text/event-stream`. A request's reply is
//! one JSON body or an event stream, decoded as bytes arrive; an event stream may carry
//! notifications and server requests before the response, and a stream that ends before the
//! response is resumed by GET with `Last-Event-ID` when an event id was seen. Responses are
//! matched to requests by the session alone: the exchange learns that a request is answered
//! from [`Exchange::finish`]. `Mcp-Session-Id` comes only from a successful initialize reply;
//! `MCP-Protocol-Version` goes on every request once the driver set it. The bearer token (the
//! config's, or the one [`Exchange::set_bearer`] put in its place) and the configured extra
//! headers ([`HttpConfig::headers`]) go on every request to the configured origin and nowhere
//! else: redirects are never followed. A 401 or 403 fails its request, or with
//! [`Exchange::hold_refusals`] waits for a new token and is sent again: the server answered the
//! credentials, so the request did not run.

#[cfg(test)]
mod tests;

use crate::idmap::IdMap;
use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, StatusCode, Uri};

use serde::de::DeserializeOwned;

use crate::jsonrpc::{self, ErrorObject, Id, Message, Response, TypedDecodeError};
use crate::mcp::{ProgressNotificationParams, error_code, methods};
use crate::secret::Secret;
use crate::session::{Delivery, Failure, FailureKind, ResumePolicy, Resumption};
use crate::sse;

/// A line of wire trace for `-v` output. Secrets are already redacted.
pub type WireLog = Arc<dyn Fn(&str) + Send + Sync>;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const EVENT_STREAM: &str = "text/event-stream";
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// 2026-07-28: the body's method, mirrored on every request POST.
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// The longest session id accepted; the specification only says it must be visible ASCII.
const MAX_SESSION_ID_BYTES: usize = 1024;
/// How much of an error body is kept for the message, and of a one-way reply for the log.
const ERROR_BODY_BYTES: usize = 512;
/// How much of a 4xx body is read at a stateless revision, where it holds a JSON-RPC error
/// (`-32020` header mismatch, `-32022` unsupported revision, `-32601`...).
const ERROR_REPLY_BYTES: usize = 16 * 1024;
/// How long, and how many bytes, a reply stream is read on for after its response, so its
/// connection can be reused.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);
const DRAIN_BYTES: usize = 64 * 1024;
/// How many one-way messages may wait; a server that floods us with requests while not
/// reading our answers cannot grow the queue past this.
const ONE_WAY_QUEUE: usize = 1024;

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
    /// (`ClientOptions::auth`, through [`Exchange::set_bearer`]).
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
            .field("legacy_fallback", &self.legacy_fallback)
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// A configuration for `url` with default limits and no token. Fails for anything but an
    /// absolute `http` or `https` URL with a host.
    pub fn new(url: &str) -> Result<Self, UrlError> {
        let uri: Uri = url.parse().map_err(|e: http::uri::InvalidUri| UrlError {
            url: url.to_owned(),
            problem: UrlProblem::Invalid(e.to_string()),
        })?;
        let problem = match uri.scheme_str() {
            Some("http" | "https") if uri.host().is_none_or(str::is_empty) => {
                Some(UrlProblem::NoHost)
            }
            Some("http" | "https") => None,
            _ => Some(UrlProblem::NotHttp),
        };
        if let Some(problem) = problem {
            return Err(UrlError {
                url: url.to_owned(),
                problem,
            });
        }
        Ok(HttpConfig {
            url: uri,
            bearer_token: None,
            headers: ExtraHeaders::new(),
            limits: HttpLimits::default(),
            resume: ResumePolicy::default(),
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
pub struct UrlError {
    url: String,
    problem: UrlProblem,
}

/// What is wrong with a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlProblem {
    /// It does not parse as a URI (the parser's reason).
    Invalid(String),
    /// Its scheme is not `http` or `https`.
    NotHttp,
    /// It names no host.
    NoHost,
}

impl UrlError {
    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &UrlProblem {
        &self.problem
    }
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = &self.url;
        match &self.problem {
            UrlProblem::Invalid(why) => write!(f, "invalid URL {url:?}: {why}"),
            UrlProblem::NotHttp => write!(f, "the URL {url:?} must start with http:// or https://"),
            UrlProblem::NoHost => write!(f, "the URL {url:?} has no host"),
        }
    }
}

impl std::error::Error for UrlError {}

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
struct ExtraHeader {
    name: HeaderName,
    secret: Secret,
    value: HeaderValue,
}

/// Headers sent on every request to the endpoint besides the ones the exchange sets
/// ([`HttpConfig::headers`]). Names are checked when added ([`ExtraHeaders::insert`]); values
/// are credentials: `Debug` shows only the names.
///
/// ```
/// # #[cfg(feature = "client")] {
/// use mcpwire::transport::Secret;
/// use mcpwire::transport::http::{HeaderError, HttpConfig};
///
/// let mut config = HttpConfig::new("https://mcp.example.com/mcp").unwrap();
/// config.headers.insert("X-Api-Key", Secret::new("k-2f9c1e7a"))?;
/// assert_eq!(config.headers.insert("Mcp-Session-Id", Secret::new("s")), Err(HeaderError::Reserved));
/// assert_eq!(config.headers.insert("X-Api-Key", Secret::new("again")), Err(HeaderError::Duplicate));
/// assert_eq!(config.headers.insert("X-Bad", Secret::new("a\r\nb")), Err(HeaderError::InvalidValue));
/// assert_eq!(format!("{:?}", config.headers), r#"{"x-api-key": Secret(<redacted>)}"#);
/// # }
/// # Ok::<(), mcpwire::exchange::HeaderError>(())
/// ```
#[derive(Clone, Default)]
pub struct ExtraHeaders(Vec<ExtraHeader>);

impl ExtraHeaders {
    /// No headers.
    pub fn new() -> Self {
        ExtraHeaders::default()
    }

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
    pub fn iter(&self) -> impl Iterator<Item = (&HeaderName, &Secret)> {
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

/// How a request is sent and its reply read.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SendOptions {
    /// Bytes of reply (bodies and streams, resumptions included) the request may receive.
    pub max_response_bytes: Option<u64>,
    /// Decodes the response with its result in the type the caller wants, in the same pass as
    /// the envelope ([`decode_result_as`]); `None` leaves the result raw.
    pub decode_result: Option<ResultDecoder>,
    /// Headers this request carries at a stateless revision, beyond those the exchange
    /// derives itself: `Mcp-Name` and the `Mcp-Param-*` headers of the tool's annotated
    /// arguments ([`crate::mcp::headers`]). Ignored at 2025-era revisions.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl SendOptions {
    /// Options that decode the result as `R` in the same pass as the envelope.
    pub fn decoding<R: DeserializeOwned + Send + 'static>() -> Self {
        SendOptions {
            decode_result: Some(decode_result_as::<R>),
            ..SendOptions::default()
        }
    }

    /// These options with a byte budget for the reply.
    pub fn with_max_response_bytes(mut self, limit: Option<u64>) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// These options with the request's `Mcp-Name` and `Mcp-Param-*` headers.
    pub fn with_headers(mut self, headers: Vec<(HeaderName, HeaderValue)>) -> Self {
        self.headers = headers;
        self
    }
}

/// A response whose result was decoded in the same pass as its envelope.
#[non_exhaustive]
pub struct DecodedResponse {
    /// The id of the request it answers.
    pub id: Option<Id>,
    /// The decoded result, or the error object.
    pub outcome: Result<Box<dyn Any + Send>, ErrorObject<'static>>,
}

/// Decodes one message that is probably a request's response (see [`decode_result_as`]).
pub type ResultDecoder =
    for<'a> fn(&'a [u8]) -> Result<DecodedResponse, jsonrpc::TypedDecodeError<'a>>;

/// A [`ResultDecoder`] for results of type `R`: [`jsonrpc::decode_response_as`], boxed.
pub fn decode_result_as<R: DeserializeOwned + Send + 'static>(
    input: &[u8],
) -> Result<DecodedResponse, jsonrpc::TypedDecodeError<'_>> {
    let response = jsonrpc::decode_response_as::<R>(input)?;
    Ok(DecodedResponse {
        id: response.id,
        outcome: match response.outcome {
            Ok(result) => Ok(Box::new(result)),
            Err(error) => Err(error.into_owned()),
        },
    })
}

/// The most decoded messages whose room [`Exchange`] keeps from one response chunk to the next.
const DECODED_KEPT: usize = 16;

/// A message at most this long is decoded by the hand-written envelope reader, cheaply
/// enough to try it first as a progress notification (what most small messages on a call's
/// stream are); a longer one is most likely the response itself.
const SMALL_MESSAGE_BYTES: usize = 16 * 1024;

/// Names one HTTP request the exchange asked for, and its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(u64);

/// An HTTP request to issue.
#[derive(Clone, Debug)]
pub struct HttpRequest {
    /// `POST`, `GET` or `DELETE`.
    pub method: Method,
    /// Where to.
    pub uri: Uri,
    /// Every header, the bearer token's marked sensitive.
    pub headers: HeaderMap,
    /// The body (empty for `GET` and `DELETE`).
    pub body: Vec<u8>,
}

/// Why an HTTP request produced no response, or its body broke off.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportError {
    /// No connection could be made: nothing was sent.
    Connect(String),
    /// The connection failed after the request may have been sent.
    Lost(String),
}

/// How many times one request may be sent again after refusals of its credentials: once
/// after a 401, and the rest after 403 `insufficient_scope` (step-up); the token provider
/// keeps its own, lower, limit on step-ups.
pub const MAX_RESENDS: u8 = 3;
/// How many `WWW-Authenticate` values a [`Refusal`] keeps, and how long each may be.
const MAX_CHALLENGE_VALUES: usize = 8;
const MAX_CHALLENGE_VALUE_BYTES: usize = 8 * 1024;

/// A request whose credentials the server refused with 401 or 403 before running it
/// ([`Output::Refused`]). The request did not run, so it may be sent again with a new token.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Refusal {
    /// The refused request.
    pub id: Id,
    /// 401 or 403.
    pub status: StatusCode,
    /// The reply's `WWW-Authenticate` values only: at most 8, each at most 8 KiB (longer
    /// ones are dropped), any credential of ours in them redacted.
    pub challenges: HeaderMap,
    /// The bearer token the request carried.
    pub sent: Option<Secret>,
    /// How many times the request was sent again already.
    pub resends: u8,
}

/// A refused request waiting for the driver's [`Exchange::resend`] or [`Exchange::reject`].
#[derive(Debug)]
struct Parked {
    op: Box<RequestOp>,
    /// The request as sent, for sending again with another `Authorization`.
    request: HttpRequest,
    status: StatusCode,
    /// The failure if the driver gives up.
    failure: Failure,
}

/// What the exchange asks of its driver.
#[non_exhaustive]
pub enum Output {
    /// Issue this request, and report what comes of it under `stream`.
    Send {
        /// The name its head, body chunks and end are reported under.
        stream: StreamId,
        /// The request.
        request: HttpRequest,
    },
    /// Stop this request or its response: read no more of it (dropping it closes the stream).
    Abort(StreamId),
    /// A message from the server, for the session.
    Message(Message<'static>),
    /// A response whose result was decoded by the request's [`SendOptions::decode_result`],
    /// for the session ([`Session::handle_decoded_response`]).
    ///
    /// [`Session::handle_decoded_response`]: crate::session::Session::handle_decoded_response
    Decoded {
        /// The request it answers.
        id: Id,
        /// The result, of the type the decoder produces.
        result: Box<dyn Any + Send>,
    },
    /// A progress notification decoded in one pass, for the session
    /// ([`Session::handle_progress`]).
    ///
    /// [`Session::handle_progress`]: crate::session::Session::handle_progress
    Progress(ProgressNotificationParams),
    /// The transport could not deliver a request of the session's or read its answer. A
    /// request the session has already settled ignores this.
    RequestFailed {
        /// The request.
        id: Id,
        /// Why, and how far it got.
        failure: Failure,
    },
    /// The server speaks the legacy HTTP+SSE transport (2024-11-05): the initialize request
    /// must be sent again, at that revision ([`Session::downgrade_to_legacy`]).
    ///
    /// [`Session::downgrade_to_legacy`]: crate::session::Session::downgrade_to_legacy
    LegacyTransport,
    /// The server refused a request's credentials (401 or 403) before running it, and the
    /// request may be sent again ([`Exchange::hold_refusals`]): the driver gets a new token
    /// and calls [`Exchange::resend`], or gives up with [`Exchange::reject`]. Until then the
    /// request waits (its deadline is the session's).
    Refused(Refusal),
    /// The connection is gone for good (the legacy event stream ended): every pending
    /// request fails with this.
    Down(Failure),
    /// [`Exchange::close`] has finished: the `DELETE` was answered (its status), failed or
    /// timed out, or there was nothing to end.
    Closed {
        /// The `DELETE`'s status, if one was sent and answered.
        status: Option<StatusCode>,
    },
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Send { stream, request } => f
                .debug_struct("Send")
                .field("stream", stream)
                .field("request", request)
                .finish(),
            Output::Abort(stream) => f.debug_tuple("Abort").field(stream).finish(),
            Output::Message(message) => f.debug_tuple("Message").field(message).finish(),
            Output::Decoded { id, .. } => f
                .debug_struct("Decoded")
                .field("id", id)
                .finish_non_exhaustive(),
            Output::Progress(params) => f.debug_tuple("Progress").field(params).finish(),
            Output::RequestFailed { id, failure } => f
                .debug_struct("RequestFailed")
                .field("id", id)
                .field("failure", failure)
                .finish(),
            Output::LegacyTransport => f.write_str("LegacyTransport"),
            Output::Refused(refusal) => f.debug_tuple("Refused").field(refusal).finish(),
            Output::Down(failure) => f.debug_tuple("Down").field(failure).finish(),
            Output::Closed { status } => f.debug_struct("Closed").field("status", status).finish(),
        }
    }
}

/// What kind of reply a response is, by status and content type.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Empty,
    Json,
    EventStream,
    Other(String),
}

/// What a bounded read of a body is for, once it has its bytes.
#[derive(Debug)]
enum PrefixUse {
    /// Logged (a one-way message's reply); delivers the one-way message.
    OneWay { status: StatusCode, barrier: bool },
    /// The error of a request answered with an unusable content type.
    Unusable {
        id: Id,
        status: StatusCode,
        media_type: String,
    },
    /// Nothing (a legacy POST's reply: the answer comes on the event stream).
    Nothing,
    /// A 4xx reply at a stateless revision: the JSON-RPC error it holds answers the request;
    /// a body that holds none fails it with `failure`.
    ErrorReply { id: Id, failure: Failure },
    /// The end of the `DELETE`.
    Delete { status: StatusCode },
    /// A 400, 404 or 405 with a JSON body answering `initialize`: a -32022 answers it, any
    /// other body means the legacy HTTP+SSE transport.
    InitializeRefused { id: Id },
}

/// How the body of a response is being read.
#[derive(Debug)]
enum Read {
    /// No head yet.
    Head,
    /// An `application/json` body, collected whole (bounded).
    Json(Vec<u8>),
    /// An event stream, through the op's decoder.
    Events,
    /// Up to [`ERROR_BODY_BYTES`], then [`PrefixUse`].
    Prefix(Vec<u8>, PrefixUse),
    /// The rest of a stream whose response arrived, bounded in time and bytes.
    Drain { read: usize, deadline: Instant },
}

/// A request of the session's, across its POST and any resuming GETs.
#[derive(Debug)]
struct RequestOp {
    id: Id,
    is_initialize: bool,
    decode_result: Option<ResultDecoder>,
    budget: ByteBudget,
    resumption: Resumption,
    decoder: Option<sse::Decoder>,
    /// The current HTTP request is a GET resuming the stream.
    resuming: bool,
    /// Sent on the legacy transport: the answer comes on the event stream.
    legacy: bool,
    /// The request as sent, kept until its reply's head when refusals are held
    /// ([`Exchange::hold_refusals`]), so that it can be sent again with a new token.
    retained: Option<HttpRequest>,
    /// The bearer token it carries.
    sent_token: Option<Secret>,
    /// How many times it was sent again after a refusal, and whether one was a 401.
    resends: u8,
    resent_after_401: bool,
}

/// One logical operation of the exchange.
#[derive(Debug)]
enum Op {
    Request(Box<RequestOp>),
    /// A notification or response POST.
    OneWay {
        deadline: Instant,
        barrier: bool,
    },
    /// The standalone GET stream.
    ServerStream(Box<(sse::Decoder, Resumption)>),
    /// The legacy event stream; `Some(id)` (the initialize request's) until its `endpoint`
    /// event arrives.
    Legacy(Box<(sse::Decoder, Option<Id>)>),
    /// The `DELETE` that ends the session, and its try.
    Delete {
        attempt: u8,
        deadline: Instant,
    },
}

/// An operation and how its current response is read.
#[derive(Debug)]
struct Flight {
    op: Op,
    read: Read,
}

/// A message waiting to go out.
#[derive(Debug)]
enum Held {
    Message(Message<'static>, SendOptions, bool),
    ServerStream,
}

/// What the exchange learns during the session and puts on later requests.
#[derive(Debug, Default)]
struct Learned {
    session_id: Option<String>,
    protocol_version: Option<&'static str>,
    /// The session speaks (or probes for) a stateless revision: no session id, standalone
    /// stream, resumption, `DELETE` or one-way POSTs; `Mcp-*` headers on every request.
    modern: bool,
    /// Where messages go when the server speaks the legacy HTTP+SSE transport.
    legacy_endpoint: Option<Uri>,
}

/// Where closing stands.
#[derive(Debug, PartialEq, Eq)]
enum Closing {
    Open,
    /// The one-way messages still queued go out, beside the `DELETE` when there is one
    /// (which does not wait for them: a server may hold a notification's answer until the
    /// session ends).
    Flushing {
        deadline: Instant,
        deleting: bool,
        status: Option<StatusCode>,
    },
    Done,
}

/// The Streamable HTTP side of one MCP session; see the [module docs](self).
pub struct Exchange {
    config: Arc<HttpConfig>,
    /// [`HttpConfig::secrets`] and every bearer token set since: what is redacted from logs
    /// and failures.
    secrets: Vec<Secret>,
    /// The bearer token sent now: the config's, or the last one [`Exchange::set_bearer`] set.
    bearer: Option<Secret>,
    /// Refusals of credentials are handed to the driver rather than failing the request.
    hold_refusals: bool,
    /// Refused requests waiting for a new token.
    parked: IdMap<Id, Parked>,
    learned: Learned,
    flights: IdMap<StreamId, Flight>,
    /// Operations waiting to resume or reopen their stream, and when.
    waiting: Vec<(Instant, Op)>,
    one_way: VecDeque<(Message<'static>, bool)>,
    one_way_in_flight: Option<StreamId>,
    /// Everything the session sent after a barrier message that is not delivered yet.
    held: VecDeque<Held>,
    barrier_pending: bool,
    server_stream_opened: bool,
    closing: Closing,
    next_stream: u64,
    jitter: u64,
    outputs: VecDeque<Output>,
    /// The messages decoded from a response chunk, on their way to `outputs` (an empty
    /// buffer, kept for its capacity).
    decoded: Vec<Output>,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("url", &self.config.url)
            .field("flights", &self.flights.len())
            .field("waiting", &self.waiting.len())
            .field("closing", &self.closing)
            .finish_non_exhaustive()
    }
}

impl Exchange {
    /// An exchange for `config`; `seed` feeds the backoff's jitter (any value; the driver
    /// takes it from the clock or a random source, a test from a constant).
    pub fn new(config: HttpConfig, seed: u64) -> Self {
        Exchange {
            secrets: config.secrets(),
            bearer: config.bearer_token.clone(),
            hold_refusals: false,
            parked: IdMap::default(),
            config: Arc::new(config),
            learned: Learned::default(),
            flights: IdMap::default(),
            waiting: Vec::new(),
            one_way: VecDeque::new(),
            one_way_in_flight: None,
            held: VecDeque::new(),
            barrier_pending: false,
            server_stream_opened: false,
            closing: Closing::Open,
            next_stream: 0,
            // One splitmix64 step spreads a small seed over all the bits, so that seeds 1, 2,
            // 3... do not all start the xorshift sequence near zero.
            jitter: {
                let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) | 1
            },
            outputs: VecDeque::new(),
            decoded: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.learned.session_id.as_deref()
    }

    /// Whether the server turned out to speak the legacy HTTP+SSE transport.
    pub fn is_legacy(&self) -> bool {
        self.learned.legacy_endpoint.is_some()
    }

    /// Sets the negotiated revision, sent as `MCP-Protocol-Version` on every later request.
    pub fn set_protocol_version(&mut self, version: &'static str) {
        self.learned.protocol_version = Some(version);
    }

    /// Speaks stateless revision `version` (2026-07-28) from the next message on, or with
    /// `None` the 2025-era rules with no revision header until one is set (the server
    /// answered the era probe as a 2025-era one). At a stateless revision every request POST
    /// carries `MCP-Protocol-Version`, `Mcp-Method` and the request's own headers
    /// ([`SendOptions::headers`]); a 4xx reply's JSON-RPC error is the request's answer;
    /// there is no session id, standalone stream, resumption or `DELETE`, and one-way
    /// messages are not sent (the revision defines none over HTTP: a request is cancelled by
    /// closing its stream).
    pub fn set_modern(&mut self, version: Option<&'static str>) {
        self.learned.modern = version.is_some();
        self.learned.protocol_version = version;
    }

    /// Whether the exchange speaks a stateless revision.
    pub fn is_modern(&self) -> bool {
        self.learned.modern
    }

    /// Writes a line of the driver's to the wire log (redacted like the exchange's own), such
    /// as the era verdict.
    pub fn note(&self, line: &str) {
        self.log(|| line.to_owned());
    }

    /// How many bearer tokens set by [`Exchange::set_bearer`] are remembered for redaction.
    const MAX_REMEMBERED_TOKENS: usize = 32;

    /// Sends `token` as `Authorization: Bearer` from the next request on (a token provider's,
    /// replacing the config's), or no token. Every token set is remembered for redaction: a
    /// server echoing an old one is caught too.
    pub fn set_bearer(&mut self, token: Option<Secret>) {
        if let Some(token) = &token
            && !self.secrets.contains(token)
        {
            let fixed = self.config.secrets().len();
            if self.secrets.len() >= fixed + Self::MAX_REMEMBERED_TOKENS {
                self.secrets.remove(fixed);
            }
            self.secrets.push(token.clone());
        }
        self.bearer = token;
    }

    /// The bearer token requests carry now.
    pub fn bearer(&self) -> Option<&Secret> {
        self.bearer.as_ref()
    }

    /// With `true`, a request refused with 401 or 403 is not failed at once but handed to the
    /// driver as [`Output::Refused`], to be sent again with a new token: the server answered
    /// the credentials, so the request did not run. Each request is sent again at most
    /// [`MAX_RESENDS`] times, at most once after a 401 (a 401 for a token obtained after a
    /// 401 fails the request: nothing ran, and a third token would not be better), and never
    /// with the token it was refused with. Off by default: a static token's refusal is
    /// final. A request kept for sending again keeps its body until its reply's head.
    pub fn hold_refusals(&mut self, hold: bool) {
        self.hold_refusals = hold;
    }

    /// Whether refused requests wait for a new token ([`hold_refusals`](Self::hold_refusals)).
    pub fn holds_refusals(&self) -> bool {
        self.hold_refusals
    }

    /// Sends the refused request `id` again, with `token` (which also goes on every later
    /// request). A token that is the one the request was refused with fails the request
    /// instead; an `id` not waiting (settled meanwhile) is ignored.
    pub fn resend(&mut self, id: &Id, token: Option<Secret>, _now: Instant) {
        let Some(parked) = self.parked.remove(id) else {
            return;
        };
        let Parked {
            mut op,
            mut request,
            status,
            mut failure,
        } = parked;
        if token.is_none() || token == op.sent_token {
            failure.detail.push_str("; no other token to send it with");
            self.fail(op.id.clone(), failure);
            return;
        }
        self.set_bearer(token);
        op.resends += 1;
        op.resent_after_401 |= status == StatusCode::UNAUTHORIZED;
        op.sent_token = self.bearer.clone();
        request.headers.remove(AUTHORIZATION);
        if let Some(value) = self.authorization() {
            request.headers.insert(AUTHORIZATION, value);
        }
        self.log(|| {
            format!(
                "> POST {} (sent again with a new token after {status})",
                request.uri
            )
        });
        op.retained = Some(request.clone());
        self.issue(Op::Request(op), request);
    }

    /// Gives up on the refused request `id`: it fails as refused (it did not run), with
    /// `reason` (why no new token came) after the server's challenge.
    pub fn reject(&mut self, id: &Id, reason: &str) {
        let Some(Parked {
            op, mut failure, ..
        }) = self.parked.remove(id)
        else {
            return;
        };
        failure.detail = format!("{}; {}", failure.detail, self.redact(reason));
        self.fail(op.id.clone(), failure);
    }

    /// Sends a message of the session's: a request gets a POST of its own and its reply is
    /// read until the session settles it; notifications and responses are POSTed one at a
    /// time, in order. A `barrier` message (`notifications/initialized`) holds everything
    /// after it until it is delivered.
    pub fn send(
        &mut self,
        message: Message<'static>,
        limits: SendOptions,
        barrier: bool,
        now: Instant,
    ) {
        if self.closing != Closing::Open {
            self.log(|| format!("dropped a message sent after close: {:?}", message.method()));
            return;
        }
        if self.learned.modern && !matches!(message, Message::Request(_)) {
            // Cancelling is closing the request's stream, which `finish` does.
            self.log(|| format!("not sent at a stateless revision: {:?}", message.method()));
            return;
        }
        if self.barrier_pending {
            // Requests are bounded by the session's limit on requests in flight; one-way
            // messages (answers to a flooding server) by the one-way queue's.
            let held_one_way = self
                .held
                .iter()
                .filter(|held| !matches!(held, Held::Message(Message::Request(_), ..)))
                .count();
            if !matches!(message, Message::Request(_)) && held_one_way >= ONE_WAY_QUEUE {
                self.log(|| "dropped a one-way message: the queue is full".to_owned());
                return;
            }
            self.held.push_back(Held::Message(message, limits, barrier));
            return;
        }
        self.dispatch(message, limits, barrier, now);
    }

    /// Opens the standalone GET stream, when the config asks for it
    /// ([`HttpConfig::server_stream`]) and the session is not a legacy one (whose event stream
    /// is already open). Called once the session is initialized; a second call does nothing.
    pub fn open_server_stream(&mut self, now: Instant) {
        if !self.config.server_stream
            || self.server_stream_opened
            || self.is_legacy()
            || self.learned.modern
            || self.closing != Closing::Open
        {
            return;
        }
        if self.barrier_pending {
            self.held.push_back(Held::ServerStream);
            return;
        }
        self.server_stream_opened = true;
        let op = Op::ServerStream(Box::new((
            sse::Decoder::new(self.config.limits.sse),
            Resumption::reopening(self.config.resume),
        )));
        self.reopen(op, now);
    }

    /// The session settled request `id`: `answered` when a response came (its stream is read
    /// on briefly, so its connection can be reused), otherwise (timeout, cancel, close) its
    /// stream is closed at once; on HTTP, closing the stream is how a request is abandoned.
    pub fn finish(&mut self, id: &Id, answered: bool, now: Instant) {
        self.parked.remove(id);
        self.waiting
            .retain(|(_, op)| !matches!(op, Op::Request(r) if &r.id == id));
        let Some(stream) = self
            .flights
            .iter()
            .find_map(|(stream, flight)| match &flight.op {
                Op::Request(r) if &r.id == id => Some(*stream),
                Op::Legacy(legacy) if legacy.1.as_ref() == Some(id) => Some(*stream),
                _ => None,
            })
        else {
            return;
        };
        let Some(flight) = self.flights.get_mut(&stream) else {
            return;
        };
        match (&flight.read, answered) {
            (Read::Events, true) => {
                flight.read = Read::Drain {
                    read: 0,
                    deadline: now + DRAIN_TIMEOUT,
                };
            }
            _ => self.abort(stream),
        }
    }

    /// Ends the session: the standalone and legacy streams close, the one-way messages still
    /// queued go out (bounded by the close timeout), then a `DELETE` ends a session the server
    /// gave an id. [`Output::Closed`] says when it is over.
    pub fn close(&mut self, now: Instant) {
        if self.closing != Closing::Open {
            return;
        }
        self.held.clear();
        self.barrier_pending = false;
        self.waiting.clear();
        self.parked.clear();
        let streams: Vec<StreamId> = self
            .flights
            .iter()
            .filter(|(_, f)| !matches!(f.op, Op::OneWay { .. }))
            .map(|(stream, _)| *stream)
            .collect();
        for stream in streams {
            self.abort(stream);
        }
        let deadline = now + self.config.close_timeout;
        for flight in self.flights.values_mut() {
            if let Op::OneWay { deadline: d, .. } = &mut flight.op {
                *d = (*d).min(deadline);
            }
        }
        let deleting = !self.is_legacy() && self.learned.session_id.is_some();
        self.closing = Closing::Flushing {
            deadline,
            deleting,
            status: None,
        };
        if deleting {
            self.send_delete(1, now);
        }
        self.advance_close(now);
    }

    /// The next instant at which [`handle_timeout`](Exchange::handle_timeout) has work to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let flights = self
            .flights
            .values()
            .filter_map(|flight| match (&flight.op, &flight.read) {
                (_, Read::Drain { deadline, .. }) => Some(*deadline),
                (Op::OneWay { deadline, .. } | Op::Delete { deadline, .. }, _) => Some(*deadline),
                _ => None,
            });
        let waiting = self.waiting.iter().map(|(at, _)| *at);
        let closing = match self.closing {
            Closing::Flushing { deadline, .. } => Some(deadline),
            _ => None,
        };
        flights.chain(waiting).chain(closing).min()
    }

    /// Does what is due at `now`: resumes streams whose wait is over, gives up on one-way
    /// POSTs, drains and `DELETE`s that took too long.
    pub fn handle_timeout(&mut self, now: Instant) {
        // Closing's deadline first: nothing more goes out once it has passed.
        if let Closing::Flushing {
            deadline, status, ..
        } = self.closing
            && deadline <= now
        {
            self.one_way.clear();
            self.closed(status);
        }
        let expired: Vec<StreamId> = self
            .flights
            .iter()
            .filter(|(_, flight)| match (&flight.op, &flight.read) {
                (_, Read::Drain { deadline, .. }) => *deadline <= now,
                (Op::OneWay { deadline, .. } | Op::Delete { deadline, .. }, _) => *deadline <= now,
                _ => false,
            })
            .map(|(stream, _)| *stream)
            .collect();
        for stream in expired {
            let Some(flight) = self.flights.remove(&stream) else {
                continue;
            };
            self.outputs.push_back(Output::Abort(stream));
            match flight.op {
                _ if matches!(flight.read, Read::Drain { .. }) => {}
                Op::OneWay { barrier, .. } => {
                    self.log(|| "< timed out".to_owned());
                    self.one_way_done(stream, barrier, now);
                }
                Op::Delete { .. } => {
                    self.log(|| "< DELETE None".to_owned());
                    self.delete_done(None, now);
                }
                _ => {}
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.waiting = later;
        for (_, op) in due {
            self.reopen(op, now);
        }
    }

    /// The next thing for the driver to do.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The response head of `stream` arrived.
    pub fn handle_head(
        &mut self,
        stream: StreamId,
        status: StatusCode,
        headers: &HeaderMap,
        now: Instant,
    ) {
        let Some(mut flight) = self.flights.remove(&stream) else {
            return;
        };
        if !matches!(flight.read, Read::Head) {
            self.flights.insert(stream, flight);
            return;
        }
        // One-way replies and the DELETE are logged once their body is read, the legacy
        // stream by its endpoint event.
        let quiet = matches!(
            flight.op,
            Op::OneWay { .. } | Op::Delete { .. } | Op::Legacy(_)
        );
        if !quiet {
            self.log_head(status, headers);
        }
        match flight.op {
            Op::Request(op) => self.request_head(stream, op, status, headers, now),
            Op::OneWay { barrier, .. } => {
                flight.read = Read::Prefix(Vec::new(), PrefixUse::OneWay { status, barrier });
                self.flights.insert(stream, flight);
            }
            Op::ServerStream(mut state) => {
                if status.is_success() && classify_reply(status, headers) == Reply::EventStream {
                    state.0.reset_stream();
                    self.flights.insert(
                        stream,
                        Flight {
                            op: Op::ServerStream(state),
                            read: Read::Events,
                        },
                    );
                } else if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
                    self.outputs.push_back(Output::Abort(stream));
                    self.schedule_reopen(Op::ServerStream(state), "was refused", now);
                } else {
                    // 405: the server offers no such stream; 404: the session is gone; 409: it
                    // allows one stream and has it; 401/403: not ours to fix.
                    self.log(|| format!("< no server stream ({status})"));
                    self.outputs.push_back(Output::Abort(stream));
                }
            }
            Op::Legacy(state) => {
                let Some(id) = state.1.clone() else {
                    return;
                };
                if status.is_success() && classify_reply(status, headers) == Reply::EventStream {
                    self.flights.insert(
                        stream,
                        Flight {
                            op: Op::Legacy(state),
                            read: Read::Events,
                        },
                    );
                } else {
                    let failure = self
                        .status_failure(status, headers, true)
                        .unwrap_or_else(|| {
                            Failure::new(
                                FailureKind::Protocol,
                                Delivery::Refused,
                                format!(
                                    "the server refused the initialize POST and its GET answered \
                                 {status} without an event stream: neither Streamable HTTP nor \
                                 the legacy HTTP+SSE transport"
                                ),
                            )
                        });
                    self.outputs.push_back(Output::Abort(stream));
                    self.fail(id, failure);
                }
            }
            Op::Delete { .. } => {
                flight.read = Read::Prefix(Vec::new(), PrefixUse::Delete { status });
                self.flights.insert(stream, flight);
            }
        }
    }

    /// A chunk of `stream`'s body arrived.
    pub fn handle_body(&mut self, stream: StreamId, chunk: &[u8], now: Instant) {
        let Some(mut flight) = self.flights.remove(&stream) else {
            return;
        };
        match (&mut flight.op, &mut flight.read) {
            (_, Read::Head) => {}
            (_, Read::Drain { read, .. }) => {
                *read += chunk.len();
                if *read > DRAIN_BYTES {
                    self.outputs.push_back(Output::Abort(stream));
                    return;
                }
            }
            (_, Read::Prefix(collected, use_)) => {
                let limit = match use_ {
                    PrefixUse::ErrorReply { .. } | PrefixUse::InitializeRefused { .. } => {
                        ERROR_REPLY_BYTES
                    }
                    _ => ERROR_BODY_BYTES,
                };
                let room = limit - collected.len();
                collected.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if collected.len() >= limit {
                    self.outputs.push_back(Output::Abort(stream));
                    self.use_prefix(stream, flight.read, now);
                    return;
                }
            }
            (Op::Request(op), Read::Json(collected)) => {
                let limit = self.config.limits.max_body_bytes;
                let failure = match op.budget.take(chunk.len()) {
                    Err(failure) => Some(failure),
                    Ok(()) if collected.len() + chunk.len() > limit => Some(Failure::new(
                        FailureKind::LimitExceeded,
                        Delivery::MayHaveReached,
                        format!("the reply body is larger than the {limit}-byte limit"),
                    )),
                    Ok(()) => None,
                };
                if let Some(failure) = failure {
                    self.outputs.push_back(Output::Abort(stream));
                    self.fail(op.id.clone(), failure);
                    return;
                }
                collected.extend_from_slice(chunk);
            }
            (Op::Request(op), Read::Events) => {
                if let Err(failure) = self.request_events(op, chunk) {
                    self.outputs.push_back(Output::Abort(stream));
                    self.fail(op.id.clone(), failure);
                    return;
                }
            }
            (Op::ServerStream(state), Read::Events) => {
                let (decoder, resumption) = &mut **state;
                let mut messages = Vec::new();
                let mut events = false;
                let decoded = decoder.decode(chunk, |event| {
                    events = true;
                    self.take_message(&event, &mut messages);
                });
                resumption.observe(decoder.last_event_id(), decoder.retry_ms());
                if events {
                    resumption.heard();
                }
                self.deliver(messages);
                if let Err(error) = decoded {
                    self.log(|| {
                        format!("< server stream stopped: the stream was refused: {error}")
                    });
                    self.outputs.push_back(Output::Abort(stream));
                    return;
                }
            }
            (Op::Legacy(state), Read::Events) => {
                if let Err(failure) = self.legacy_events(state, chunk) {
                    self.outputs.push_back(Output::Abort(stream));
                    match state.1.take() {
                        Some(id) => self.fail(id, failure),
                        None => self.outputs.push_back(Output::Down(failure)),
                    }
                    return;
                }
            }
            _ => {}
        }
        self.flights.insert(stream, flight);
    }

    /// The id of the request whose response `stream` carries, if it carries one (for a
    /// driver that attributes what happens on the stream to the request's caller).
    pub fn request_on(&self, stream: StreamId) -> Option<&Id> {
        match &self.flights.get(&stream)?.op {
            Op::Request(op) => Some(&op.id),
            _ => None,
        }
    }

    /// `stream`'s body ended.
    pub fn handle_end(&mut self, stream: StreamId, now: Instant) {
        self.stream_over(stream, None, now);
    }

    /// `stream` failed: no response came (`Connect`: nothing was sent), or its body broke off.
    pub fn handle_error(&mut self, stream: StreamId, error: TransportError, now: Instant) {
        self.stream_over(stream, Some(error), now);
    }

    fn stream_over(&mut self, stream: StreamId, error: Option<TransportError>, now: Instant) {
        let Some(flight) = self.flights.remove(&stream) else {
            return;
        };
        let why = match &error {
            None => "ended".to_owned(),
            Some(TransportError::Connect(e) | TransportError::Lost(e)) => format!("broke ({e})"),
        };
        match (flight.op, flight.read) {
            (_, Read::Drain { .. }) => {}
            (op, Read::Prefix(collected, use_)) => {
                self.use_prefix(stream, Read::Prefix(collected, use_), now);
                drop(op);
            }
            (Op::Request(op), Read::Head) => {
                let error = error.unwrap_or_else(|| TransportError::Lost("no response".into()));
                if op.resuming {
                    self.log(|| format!("< resume failed: {}", transport_detail(&error)));
                    self.schedule_resume(op, "ended", now);
                } else {
                    self.fail(op.id.clone(), send_failure(&error));
                }
            }
            (Op::Request(op), Read::Json(body)) => {
                if let Some(error) = error {
                    let failure = Failure::new(
                        FailureKind::ConnectionLost,
                        Delivery::MayHaveReached,
                        format!("the reply body broke off: {}", transport_detail(&error)),
                    );
                    self.fail(op.id.clone(), failure);
                    return;
                }
                let mut decoded = Vec::new();
                match self.decode_reply(&body, op.decode_result, &mut decoded) {
                    Ok(()) => {
                        self.outputs.extend(decoded);
                        // Ignored by the session when one of those messages answered it.
                        self.fail(
                            op.id.clone(),
                            Failure::new(
                                FailureKind::Protocol,
                                Delivery::Answered,
                                "the JSON reply does not contain the response",
                            ),
                        );
                    }
                    Err(e) => self.fail(
                        op.id.clone(),
                        Failure::new(
                            FailureKind::Protocol,
                            Delivery::Answered,
                            format!("the JSON reply is not JSON-RPC: {e}"),
                        ),
                    ),
                }
            }
            (Op::Request(op), Read::Events) => self.schedule_resume(op, &why, now),
            (Op::OneWay { barrier, .. }, _) => {
                if let Some(error) = &error {
                    self.log(|| format!("< error: {}", transport_detail(error)));
                }
                self.one_way_done(stream, barrier, now);
            }
            (Op::ServerStream(state), read) => {
                if let (Read::Head, Some(error)) = (&read, &error) {
                    self.log(|| format!("< server stream: {}", transport_detail(error)));
                }
                self.schedule_reopen(Op::ServerStream(state), &why, now);
            }
            (Op::Legacy(state), read) => {
                let (_, initialize) = *state;
                let failure = match (&read, &error, initialize) {
                    (Read::Head, Some(error), Some(id)) => {
                        self.fail(id, send_failure(error));
                        return;
                    }
                    (_, _, Some(id)) => {
                        self.fail(
                            id,
                            Failure::new(
                                FailureKind::Protocol,
                                Delivery::Refused,
                                "the legacy event stream ended before its endpoint event",
                            ),
                        );
                        return;
                    }
                    (_, None, None) => "the legacy event stream ended".to_owned(),
                    (_, Some(error), None) => format!(
                        "the legacy event stream broke ({})",
                        transport_detail(error)
                    ),
                };
                self.outputs.push_back(Output::Down(Failure::new(
                    FailureKind::ConnectionLost,
                    Delivery::MayHaveReached,
                    failure,
                )));
            }
            (Op::Delete { attempt, .. }, Read::Head) => {
                let detail = error.as_ref().map_or("no response", transport_detail);
                self.log(|| format!("< DELETE attempt {attempt} failed: {detail}"));
                if attempt < 2 {
                    // DELETE is idempotent, so a second try is safe when the first got no
                    // answer (typically a pooled connection the server had just closed).
                    self.send_delete(attempt + 1, now);
                } else {
                    self.log(|| "< DELETE None".to_owned());
                    self.delete_done(None, now);
                }
            }
            (_, _) => {}
        }
    }

    // --- requests -------------------------------------------------------------------------

    fn dispatch(
        &mut self,
        message: Message<'static>,
        limits: SendOptions,
        barrier: bool,
        now: Instant,
    ) {
        let Message::Request(request) = &message else {
            if self.one_way.len() >= ONE_WAY_QUEUE {
                self.log(|| "dropped a one-way message: the queue is full".to_owned());
                return;
            }
            if barrier {
                self.barrier_pending = true;
            }
            self.one_way.push_back((message, barrier));
            self.pump_one_way(now);
            return;
        };
        let id = request.id.clone();
        let is_initialize = request.method == crate::mcp::methods::INITIALIZE;
        let method_header = self
            .learned
            .modern
            .then(|| method_header(&request.method))
            .flatten();
        let body = message.encode().into_bytes();
        let uri = self.message_uri();
        self.log(|| format!("> POST {uri} {}", String::from_utf8_lossy(&body)));
        let legacy = self.is_legacy();
        let op = RequestOp {
            id,
            is_initialize,
            decode_result: limits.decode_result,
            budget: ByteBudget::new(limits.max_response_bytes),
            resumption: Resumption::new(self.config.resume),
            decoder: None,
            resuming: false,
            legacy,
            retained: None,
            sent_token: self.bearer.clone(),
            resends: 0,
            resent_after_401: false,
        };
        let mut op = Box::new(op);
        let mut request = self.build(Method::POST, uri, body, ACCEPT_BOTH);
        if self.learned.modern {
            if let Some(value) = method_header {
                request.headers.insert(MCP_METHOD, value);
            }
            for (name, value) in limits.headers {
                request.headers.insert(name, value);
            }
        }
        if self.hold_refusals && !legacy {
            op.retained = Some(request.clone());
        }
        self.issue(Op::Request(op), request);
    }

    fn request_head(
        &mut self,
        stream: StreamId,
        mut op: Box<RequestOp>,
        status: StatusCode,
        headers: &HeaderMap,
        now: Instant,
    ) {
        if op.resuming {
            let reply = classify_reply(status, headers);
            if status.is_success() && reply == Reply::EventStream {
                if let Some(decoder) = &mut op.decoder {
                    decoder.reset_stream();
                }
                self.flights.insert(
                    stream,
                    Flight {
                        op: Op::Request(op),
                        read: Read::Events,
                    },
                );
                return;
            }
            self.outputs.push_back(Output::Abort(stream));
            if status == StatusCode::NOT_FOUND && self.learned.session_id.is_some() {
                self.fail(
                    op.id.clone(),
                    Failure::new(
                        FailureKind::SessionExpired,
                        Delivery::MayHaveReached,
                        "the session expired while resuming the response stream",
                    ),
                );
            } else if status == StatusCode::METHOD_NOT_ALLOWED {
                self.fail(
                    op.id.clone(),
                    lost(
                        "the response stream ended before the response, and the server does \
                         not allow resuming it (GET answered 405)"
                            .to_owned(),
                    ),
                );
            } else {
                self.schedule_resume(op, "ended", now);
            }
            return;
        }
        if op.is_initialize
            && self.config.legacy_fallback
            && !self.is_legacy()
            && matches!(status.as_u16(), 400 | 404 | 405)
        {
            // A stateless-era server refuses a 2025 initialize with -32022 in a JSON body
            // (`basic/versioning`: it may be the only diagnostic a 2025 client surfaces); that
            // is its answer, not a sign of the 2024-11-05 transport. Any other body falls back.
            if classify_reply(status, headers) == Reply::Json {
                let id = op.id.clone();
                self.flights.insert(
                    stream,
                    Flight {
                        op: Op::Request(op),
                        read: Read::Prefix(Vec::new(), PrefixUse::InitializeRefused { id }),
                    },
                );
                return;
            }
            self.outputs.push_back(Output::Abort(stream));
            self.open_legacy(op.id.clone());
            return;
        }
        // The head settles whether the request can be sent again: its copy is no longer needed.
        let retained = op.retained.take();
        if matches!(status.as_u16(), 401 | 403) && !op.legacy {
            self.outputs.push_back(Output::Abort(stream));
            self.refused(op, retained, status, headers);
            return;
        }
        if let Some(failure) = self.status_failure(status, headers, op.is_initialize) {
            if self.learned.modern
                && status.is_client_error()
                && !matches!(status.as_u16(), 401 | 403)
                && classify_reply(status, headers) == Reply::Json
            {
                let id = op.id.clone();
                self.flights.insert(
                    stream,
                    Flight {
                        op: Op::Request(op),
                        read: Read::Prefix(Vec::new(), PrefixUse::ErrorReply { id, failure }),
                    },
                );
                return;
            }
            self.outputs.push_back(Output::Abort(stream));
            self.fail(op.id.clone(), failure);
            return;
        }
        if op.is_initialize
            && let Err(failure) = self.capture_session_id(headers)
        {
            self.outputs.push_back(Output::Abort(stream));
            self.fail(op.id.clone(), failure);
            return;
        }
        if op.legacy {
            // Legacy transport: the answer arrives on the event stream, not here.
            self.flights.insert(
                stream,
                Flight {
                    op: Op::Request(op),
                    read: Read::Prefix(Vec::new(), PrefixUse::Nothing),
                },
            );
            return;
        }
        let read = match classify_reply(status, headers) {
            Reply::Empty => {
                self.outputs.push_back(Output::Abort(stream));
                self.fail(
                    op.id.clone(),
                    Failure::new(
                        FailureKind::Protocol,
                        Delivery::MayHaveReached,
                        format!(
                            "the server answered {status} with no body to a request; a request \
                             needs a JSON or event-stream reply"
                        ),
                    ),
                );
                return;
            }
            Reply::Json => Read::Json(Vec::new()),
            Reply::EventStream => {
                op.decoder = Some(sse::Decoder::new(self.config.limits.sse));
                Read::Events
            }
            Reply::Other(media_type) => Read::Prefix(
                Vec::new(),
                PrefixUse::Unusable {
                    id: op.id.clone(),
                    status,
                    media_type,
                },
            ),
        };
        self.flights.insert(
            stream,
            Flight {
                op: Op::Request(op),
                read,
            },
        );
    }

    /// A request's credentials were refused (401, 403): park it for the driver, or fail it
    /// when it may not be sent again.
    fn refused(
        &mut self,
        op: Box<RequestOp>,
        retained: Option<HttpRequest>,
        status: StatusCode,
        headers: &HeaderMap,
    ) {
        let Some(mut failure) = self.status_failure(status, headers, op.is_initialize) else {
            return;
        };
        let again = status != StatusCode::UNAUTHORIZED || !op.resent_after_401;
        let request = match retained {
            Some(request) if self.hold_refusals && again && op.resends < MAX_RESENDS => request,
            _ => {
                if op.resends > 0 {
                    failure.detail.push_str(&format!(
                        " (after the request was sent again with a new token {} time{})",
                        op.resends,
                        if op.resends == 1 { "" } else { "s" }
                    ));
                }
                self.fail(op.id.clone(), failure);
                return;
            }
        };
        let mut challenges = HeaderMap::new();
        for value in headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter(|v| v.len() <= MAX_CHALLENGE_VALUE_BYTES)
            .take(MAX_CHALLENGE_VALUES)
        {
            let value = match value.to_str() {
                Ok(text) if self.secrets.iter().any(|s| s.appears_in(text)) => {
                    match HeaderValue::from_str(&self.redact(text)) {
                        Ok(value) => value,
                        Err(_) => continue,
                    }
                }
                _ => value.clone(),
            };
            challenges.append(http::header::WWW_AUTHENTICATE, value);
        }
        let refusal = Refusal {
            id: op.id.clone(),
            status,
            challenges,
            sent: op.sent_token.clone(),
            resends: op.resends,
        };
        self.parked.insert(
            op.id.clone(),
            Parked {
                op,
                request,
                status,
                failure,
            },
        );
        self.outputs.push_back(Output::Refused(refusal));
    }

    /// Decodes a chunk of a request's response stream and delivers its messages.
    fn request_events(&mut self, op: &mut RequestOp, chunk: &[u8]) -> Result<(), Failure> {
        op.budget.take(chunk.len())?;
        let Some(decoder) = &mut op.decoder else {
            return Ok(());
        };
        // Kept between chunks, so that a chunk's messages cost no allocation.
        let mut messages = std::mem::take(&mut self.decoded);
        let mut refused = None;
        let decode_result = op.decode_result;
        let mut events = false;
        // `decode` reads the events that lie wholly inside the chunk where they are.
        let decoded = decoder.decode(chunk, |event| {
            events = true;
            if refused.is_some() || event.data().is_empty() || event.event_type() != "message" {
                // After a refusal nothing more is taken; otherwise this is a priming event,
                // or an event type MCP does not use.
                return;
            }
            self.log(|| format!("< event {}", event.data()));
            match self.decode_reply(event.data().as_bytes(), decode_result, &mut messages) {
                Ok(()) => {}
                Err(error) => {
                    refused = Some(Failure::new(
                        FailureKind::Protocol,
                        Delivery::MayHaveReached,
                        format!("an event on the response stream is not JSON-RPC: {error}"),
                    ));
                }
            }
        });
        if let Err(error) = decoded {
            refused.get_or_insert_with(|| {
                Failure::new(
                    FailureKind::LimitExceeded,
                    Delivery::MayHaveReached,
                    format!("the response stream was refused: {error}"),
                )
            });
        }
        op.resumption
            .observe(decoder.last_event_id(), decoder.retry_ms());
        if events {
            op.resumption.heard();
        }
        self.outputs.extend(messages.drain(..));
        // A burst's buffer is not kept.
        if messages.capacity() <= DECODED_KEPT {
            self.decoded = messages;
        }
        refused.map_or(Ok(()), Err)
    }

    /// [`decode_reply`], the result left raw when the reply echoes the bearer token (the
    /// client takes credentials out of raw results).
    fn decode_reply(
        &self,
        data: &[u8],
        decode_result: Option<ResultDecoder>,
        out: &mut Vec<Output>,
    ) -> Result<(), jsonrpc::DecodeError> {
        decode_reply(
            data,
            decode_result.filter(|_| !self.echoes_secret(data)),
            out,
        )
    }

    /// Whether the server echoed a credential (the bearer token, an extra header's value) in
    /// these bytes.
    fn echoes_secret(&self, data: &[u8]) -> bool {
        self.secrets
            .iter()
            .any(|secret| secret.appears_in_bytes(data))
    }

    /// The request's stream ended before the session settled it: resume it after the wait
    /// the policy gives, or fail it.
    fn schedule_resume(&mut self, mut op: Box<RequestOp>, why: &str, now: Instant) {
        if self.learned.modern {
            // 2026-07-28 has no resumption: the request is lost, and only its caller knows
            // whether it may be sent again.
            self.fail(
                op.id.clone(),
                lost(format!(
                    "the response stream {why} before the response (a stateless revision \
                     does not resume streams)"
                )),
            );
            return;
        }
        let jitter = self.next_jitter();
        match op.resumption.next_attempt(now, jitter) {
            Some(at) => {
                trace_info!(
                    delay_ms = at.saturating_duration_since(now).as_millis() as u64,
                    "the response stream ended before the response: resuming it with \
                     Last-Event-ID"
                );
                self.log(|| {
                    format!(
                        "< the response stream {why} before the response; resuming in {} ms",
                        at.saturating_duration_since(now).as_millis()
                    )
                });
                self.waiting.push((at, Op::Request(op)));
            }
            None => {
                let detail = format!(
                    "the response stream {why} before the response{}",
                    if op.resumption.last_event_id().is_empty() {
                        " (no event id to resume from)"
                    } else {
                        ", and resuming it failed"
                    }
                );
                self.fail(op.id.clone(), lost(detail));
            }
        }
    }

    /// The standalone stream ended: reopen it after the wait the policy gives, or give up.
    fn schedule_reopen(&mut self, mut op: Op, why: &str, now: Instant) {
        let jitter = self.next_jitter();
        let Op::ServerStream(state) = &mut op else {
            return;
        };
        match state.1.next_attempt(now, jitter) {
            Some(at) if self.closing == Closing::Open => {
                trace_debug!(
                    delay_ms = at.saturating_duration_since(now).as_millis() as u64,
                    "the server stream ended: reopening it"
                );
                self.log(|| {
                    format!(
                        "< server stream {why}; reopening in {} ms",
                        at.saturating_duration_since(now).as_millis()
                    )
                });
                self.waiting.push((at, op));
            }
            Some(_) => {}
            None => self.log(|| "< server stream given up after quiet tries".to_owned()),
        }
    }

    /// Issues the GET that resumes a request's stream or reopens the standalone one.
    fn reopen(&mut self, mut op: Op, _now: Instant) {
        let (last_event_id, what) = match &mut op {
            Op::Request(request) => {
                request.resuming = true;
                (request.resumption.last_event_id().to_owned(), "")
            }
            Op::ServerStream(state) => (state.0.last_event_id().to_owned(), "server stream, "),
            _ => return,
        };
        let mut request = self.build(
            Method::GET,
            self.config.url.clone(),
            Vec::new(),
            EVENT_STREAM,
        );
        if !last_event_id.is_empty()
            && let Ok(value) = HeaderValue::from_str(&last_event_id)
        {
            request.headers.insert(LAST_EVENT_ID, value);
        }
        self.log(|| {
            format!(
                "> GET {} ({what}Last-Event-ID: {})",
                self.config.url,
                self.snippet(last_event_id.as_bytes())
            )
        });
        self.issue(op, request);
    }

    // --- one-way messages -----------------------------------------------------------------

    fn pump_one_way(&mut self, now: Instant) {
        if self.one_way_in_flight.is_some() {
            return;
        }
        let Some((message, barrier)) = self.one_way.pop_front() else {
            return;
        };
        let body = message.encode().into_bytes();
        let uri = self.message_uri();
        self.log(|| format!("> POST {uri} {}", String::from_utf8_lossy(&body)));
        let request = self.build(Method::POST, uri, body, ACCEPT_BOTH);
        let deadline = match self.closing {
            Closing::Flushing { deadline, .. } => deadline.min(now + self.config.post_timeout),
            _ => now + self.config.post_timeout,
        };
        let stream = self.issue(Op::OneWay { deadline, barrier }, request);
        self.one_way_in_flight = Some(stream);
    }

    /// A one-way POST is over (answered, failed or timed out): the next goes out, and a
    /// delivered barrier releases what it held.
    fn one_way_done(&mut self, stream: StreamId, barrier: bool, now: Instant) {
        if self.one_way_in_flight == Some(stream) {
            self.one_way_in_flight = None;
        }
        if barrier {
            self.barrier_pending = false;
            while !self.barrier_pending
                && let Some(held) = self.held.pop_front()
            {
                match held {
                    Held::Message(message, limits, barrier) => {
                        self.dispatch(message, limits, barrier, now);
                    }
                    Held::ServerStream => self.open_server_stream(now),
                }
            }
        }
        self.pump_one_way(now);
        self.advance_close(now);
    }

    fn use_prefix(&mut self, stream: StreamId, read: Read, now: Instant) {
        let Read::Prefix(collected, use_) = read else {
            return;
        };
        match use_ {
            PrefixUse::OneWay { status, barrier } => {
                self.log(|| format!("< {status} {}", String::from_utf8_lossy(&collected)));
                self.one_way_done(stream, barrier, now);
            }
            PrefixUse::Unusable {
                id,
                status,
                media_type,
            } => {
                let detail = format!(
                    "the server answered {status} with content type {:?}, not JSON or an event \
                     stream: {}",
                    self.redact(&media_type),
                    self.snippet(&collected)
                );
                self.fail(
                    id,
                    Failure::new(FailureKind::Protocol, Delivery::Answered, detail),
                );
            }
            PrefixUse::Nothing => {}
            PrefixUse::ErrorReply { id, failure } => {
                self.log(|| format!("< {}", self.snippet(&collected)));
                match error_reply(&collected, &id) {
                    Some(message) => self.outputs.push_back(Output::Message(message)),
                    None => self.fail(id, failure),
                }
            }
            PrefixUse::Delete { status } => {
                self.log(|| format!("< DELETE {:?}", Some(status)));
                self.delete_done(Some(status), now);
            }
            PrefixUse::InitializeRefused { id } => {
                self.log(|| format!("< {}", self.snippet(&collected)));
                let refusal = error_reply(&collected, &id).filter(|message| {
                    matches!(message, Message::Response(Response { outcome: Err(error), .. })
                        if error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION)
                });
                match refusal {
                    Some(message) => self.outputs.push_back(Output::Message(message)),
                    None => self.open_legacy(id),
                }
            }
        }
    }

    // --- legacy HTTP+SSE ------------------------------------------------------------------

    /// The server does not speak Streamable HTTP: open the legacy event stream and wait for its
    /// `endpoint` event (the initialize request is sent again there, by the session).
    fn open_legacy(&mut self, initialize: Id) {
        let request = self.build(
            Method::GET,
            self.config.url.clone(),
            Vec::new(),
            EVENT_STREAM,
        );
        self.log(|| format!("> GET {} (legacy HTTP+SSE)", self.config.url));
        let decoder = sse::Decoder::new(self.config.limits.sse);
        self.issue(Op::Legacy(Box::new((decoder, Some(initialize)))), request);
    }

    /// Decodes a chunk of the legacy event stream: the `endpoint` event first, then messages.
    fn legacy_events(
        &mut self,
        state: &mut (sse::Decoder, Option<Id>),
        chunk: &[u8],
    ) -> Result<(), Failure> {
        let (decoder, initialize) = state;
        let mut messages = Vec::new();
        let mut endpoint = None;
        let mut refused = None;
        let waiting = initialize.is_some();
        let decoded = decoder.decode(chunk, |event| {
            if waiting && endpoint.is_none() {
                // Before the endpoint event nothing else is taken.
                if event.event_type() == "endpoint" {
                    endpoint = Some(event.data().trim().to_owned());
                }
                return;
            }
            if refused.is_none() {
                self.take_message(&event, &mut messages);
            }
        });
        if let Some(reference) = endpoint {
            match resolve_same_origin(&self.config.url, &reference) {
                Ok(uri) => {
                    self.log(|| format!("< legacy endpoint {uri}"));
                    self.learned.legacy_endpoint = Some(uri);
                    *initialize = None;
                    self.outputs.push_back(Output::LegacyTransport);
                }
                Err(detail) => {
                    refused = Some(Failure::new(
                        FailureKind::Protocol,
                        Delivery::Refused,
                        self.redact(&detail),
                    ));
                }
            }
        }
        self.deliver(messages);
        if let Err(error) = decoded {
            let detail = format!("the legacy event stream was refused: {error}");
            refused.get_or_insert_with(|| match initialize {
                Some(_) => Failure::new(FailureKind::Protocol, Delivery::Refused, detail),
                None => lost(detail),
            });
        }
        refused.map_or(Ok(()), Err)
    }

    // --- closing --------------------------------------------------------------------------

    /// Closing is over once the `DELETE` (if any) is done and the one-way queue is empty.
    fn advance_close(&mut self, _now: Instant) {
        if let Closing::Flushing {
            deleting: false,
            status,
            ..
        } = self.closing
            && self.one_way_in_flight.is_none()
            && self.one_way.is_empty()
        {
            self.closed(status);
        }
    }

    fn delete_done(&mut self, answer: Option<StatusCode>, now: Instant) {
        if let Closing::Flushing {
            deleting, status, ..
        } = &mut self.closing
        {
            *deleting = false;
            *status = answer;
        }
        self.advance_close(now);
    }

    fn send_delete(&mut self, attempt: u8, now: Instant) {
        let request = self.build(
            Method::DELETE,
            self.config.url.clone(),
            Vec::new(),
            ACCEPT_BOTH,
        );
        self.log(|| format!("> DELETE {}", self.config.url));
        let deadline = now + self.config.close_timeout;
        self.issue(Op::Delete { attempt, deadline }, request);
    }

    fn closed(&mut self, status: Option<StatusCode>) {
        if self.closing == Closing::Done {
            return;
        }
        self.closing = Closing::Done;
        for stream in self.flights.keys() {
            self.outputs.push_back(Output::Abort(*stream));
        }
        self.flights.clear();
        self.outputs.push_back(Output::Closed { status });
    }

    // --- helpers --------------------------------------------------------------------------

    fn issue(&mut self, op: Op, request: HttpRequest) -> StreamId {
        let stream = StreamId(self.next_stream);
        self.next_stream += 1;
        self.flights.insert(
            stream,
            Flight {
                op,
                read: Read::Head,
            },
        );
        self.outputs.push_back(Output::Send { stream, request });
        stream
    }

    fn abort(&mut self, stream: StreamId) {
        if self.flights.remove(&stream).is_some() {
            self.outputs.push_back(Output::Abort(stream));
        }
    }

    fn fail(&mut self, id: Id, failure: Failure) {
        self.outputs
            .push_back(Output::RequestFailed { id, failure });
    }

    fn deliver(&mut self, messages: Vec<Message<'static>>) {
        self.outputs
            .extend(messages.into_iter().map(Output::Message));
    }

    /// Takes the JSON-RPC messages of a `message` event on a stream that carries no request's
    /// response (the standalone stream, the legacy one). Events that are not JSON-RPC are
    /// skipped: nobody waits on them.
    fn take_message(&self, event: &sse::Event<'_>, messages: &mut Vec<Message<'static>>) {
        if event.event_type() == "message" && !event.data().is_empty() {
            self.log(|| format!("< event {}", event.data()));
            if let Ok(packet) = jsonrpc::decode(event.data().as_bytes()) {
                messages.extend(packet.into_messages().into_iter().map(Message::into_owned));
            }
        }
    }

    fn message_uri(&self) -> Uri {
        self.learned
            .legacy_endpoint
            .clone()
            .unwrap_or_else(|| self.config.url.clone())
    }

    /// A request to the endpoint (or the legacy message endpoint) with every header this
    /// session needs.
    fn build(&self, method: Method, uri: Uri, body: Vec<u8>, accept: &'static str) -> HttpRequest {
        // Room for what the caller (`Mcp-Method`, `Mcp-Name`, some `Mcp-Param-*`), the driver
        // (`Host`) and hyper (`Content-Length`) add, so that the map is made once rather than
        // grown for each request.
        let mut headers = HeaderMap::with_capacity(12 + self.config.headers.0.len());
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if method == Method::POST {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(value) = self.authorization() {
            headers.insert(AUTHORIZATION, value);
        }
        // Checked when added: none of them is a header set here.
        for header in &self.config.headers.0 {
            headers.insert(header.name.clone(), header.value.clone());
        }
        if let Some(session_id) = &self.learned.session_id
            && !self.learned.modern
            && let Ok(value) = HeaderValue::from_str(session_id)
        {
            headers.insert(SESSION_ID, value);
        }
        if let Some(version) = self.learned.protocol_version {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version));
        }
        HttpRequest {
            method,
            uri,
            headers,
            body,
        }
    }

    /// `Authorization: Bearer` with the current token, marked sensitive.
    fn authorization(&self) -> Option<HeaderValue> {
        let token = self.bearer.as_ref()?;
        let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// The failure a status that is not a usable reply means, or `None` for a 2xx.
    fn status_failure(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        is_initialize: bool,
    ) -> Option<Failure> {
        if status.is_success() {
            return None;
        }
        let has_session = self.learned.session_id.is_some();
        let code = status.as_u16();
        Some(match code {
            300..=399 => Failure::new(
                FailureKind::HttpStatus { status: code },
                Delivery::Refused,
                format!(
                    "the server answered {status} (a redirect{}); redirects are not followed",
                    headers
                        .get(http::header::LOCATION)
                        .map(|l| format!(" to {}", self.snippet(l.as_bytes())))
                        .unwrap_or_default()
                ),
            ),
            401 | 403 => Failure::new(
                FailureKind::Unauthorized { status: code },
                Delivery::Refused,
                describe_challenge(status, headers, &|text| self.redact(text)),
            ),
            404 if has_session && !is_initialize => Failure::new(
                FailureKind::SessionExpired,
                Delivery::Refused,
                "the server no longer knows this session (404)",
            ),
            400..=499 => Failure::new(
                FailureKind::HttpStatus { status: code },
                Delivery::Refused,
                format!("the server refused the request with {status}"),
            ),
            _ => Failure::new(
                FailureKind::HttpStatus { status: code },
                Delivery::MayHaveReached,
                format!("the server failed with {status}"),
            ),
        })
    }

    fn capture_session_id(&mut self, headers: &HeaderMap) -> Result<(), Failure> {
        let Some(value) = headers.get(&SESSION_ID) else {
            return Ok(());
        };
        let valid = value.len() <= MAX_SESSION_ID_BYTES
            && value.as_bytes().iter().all(|b| (0x21..=0x7E).contains(b));
        let session_id = value.to_str().ok().filter(|_| valid).ok_or_else(|| {
            Failure::new(
                FailureKind::Protocol,
                Delivery::Answered,
                "the server sent an invalid Mcp-Session-Id (it must be visible ASCII)",
            )
        })?;
        self.learned.session_id = Some(session_id.to_owned());
        Ok(())
    }

    fn next_jitter(&mut self) -> f64 {
        let mut x = self.jitter;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.jitter = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    fn log_head(&self, status: StatusCode, headers: &HeaderMap) {
        self.log(|| {
            format!(
                "< {status} {}",
                content_type(headers).map_or_else(String::new, |ct| self.snippet(ct.as_bytes()))
            )
        });
    }

    fn log(&self, line: impl FnOnce() -> String) {
        if let Some(log) = &self.config.wire_log {
            // A line may end in an excerpt cut from a longer body.
            log(&self.redact_cut(line()));
        }
    }

    /// `text` with every credential replaced.
    fn redact(&self, text: &str) -> String {
        crate::secret::redact_all(&self.secrets, text)
    }

    /// `text` with every credential replaced, also a start of one where the text was cut.
    fn redact_cut(&self, text: String) -> String {
        self.secrets
            .iter()
            .fold(text, |text, secret| secret.redact_cut(&text))
    }

    /// A bounded, printable, redacted excerpt of server-sent bytes for an error message.
    fn snippet(&self, bytes: &[u8]) -> String {
        let text: String = String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_BODY_BYTES)])
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        self.redact_cut(text.trim().to_owned())
    }
}

/// The JSON-RPC error response in a 4xx body, as the answer to request `id`: a server that
/// could not read the request's id (or would not) answers with `"id": null`, and the HTTP
/// request it answers says whose error it is.
fn error_reply(body: &[u8], id: &Id) -> Option<Message<'static>> {
    let packet = jsonrpc::decode(body).ok()?;
    let mut messages = packet.into_messages();
    if messages.len() != 1 {
        return None;
    }
    match messages.pop()? {
        Message::Response(response) => match response.outcome {
            Err(error) if response.id.as_ref().is_none_or(|named| named == id) => Some(
                Message::Response(Response::error(Some(id.clone()), error.into_owned())),
            ),
            _ => None,
        },
        _ => None,
    }
}

/// Decodes one message of a request's reply (a JSON body or an event's data) into outputs for
/// the session, in one pass where it can: a small message is read first as a progress
/// notification, a response straight into the request's result type
/// ([`SendOptions::decode_result`]). Anything else, and anything those readers do not take,
/// goes through the raw decoder, whose messages and errors are the reference. Public for the
/// benchmarks, which measure the path the client runs.
#[doc(hidden)]
pub fn decode_reply(
    data: &[u8],
    decode_result: Option<ResultDecoder>,
    out: &mut Vec<Output>,
) -> Result<(), jsonrpc::DecodeError> {
    let batch = data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    // Which reader goes first is a guess at what the message is, and only saves a pass:
    // either reader gives what it does not take to the next. A reply that names no method
    // near its start is most likely the response, read straight into its type.
    let response_first = decode_result.is_some() && !names_method_early(data);
    if !batch && !response_first && data.len() <= SMALL_MESSAGE_BYTES {
        match jsonrpc::decode_notification_as::<ProgressNotificationParams>(data) {
            Ok(notification) if notification.method == methods::PROGRESS => {
                // Progress without params names no request: nothing to route.
                out.extend(notification.params.map(Output::Progress));
                return Ok(());
            }
            Err(TypedDecodeError::Unexpected(message))
                if decode_result.is_none() || !matches!(message, Message::Response(_)) =>
            {
                out.push(Output::Message(message.into_owned()));
                return Ok(());
            }
            // A response (decoded below), another notification whose params fit, params
            // that do not fit, or an input for the raw decoder to judge.
            _ => {}
        }
    }
    if !batch && let Some(decode) = decode_result {
        match decode(data) {
            Ok(DecodedResponse {
                id: Some(id),
                outcome: Ok(result),
            }) => {
                out.push(Output::Decoded { id, result });
                return Ok(());
            }
            Ok(DecodedResponse {
                id,
                outcome: Err(error),
            }) => {
                out.push(Output::Message(Message::Response(Response::error(
                    id, error,
                ))));
                return Ok(());
            }
            Err(TypedDecodeError::Unexpected(message)) => {
                out.push(Output::Message(message.into_owned()));
                return Ok(());
            }
            // A result that does not fit its type (the caller's own reading of the raw
            // result says why), or an input for the raw decoder to judge.
            _ => {}
        }
    }
    let packet = jsonrpc::decode(data)?;
    out.extend(
        packet
            .into_messages()
            .into_iter()
            .map(|message| Output::Message(message.into_owned())),
    );
    Ok(())
}

/// The `Mcp-Method` value of a request: without a copy for the methods a client sends.
fn method_header(method: &str) -> Option<HeaderValue> {
    use crate::mcp::methods::*;
    const KNOWN: [&str; 12] = [
        TOOLS_CALL,
        TOOLS_LIST,
        SERVER_DISCOVER,
        RESOURCES_READ,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        PROMPTS_GET,
        PROMPTS_LIST,
        COMPLETION_COMPLETE,
        SUBSCRIPTIONS_LISTEN,
        TASKS_GET,
        TASKS_RESULT,
    ];
    match KNOWN.iter().find(|known| **known == method) {
        Some(known) => Some(HeaderValue::from_static(known)),
        None => HeaderValue::from_str(method).ok(),
    }
}

/// How far into a message [`names_method_early`] looks: past `{"jsonrpc":"2.0",` and a
/// typical id.
const METHOD_SNIFF_BYTES: usize = 64;

/// Whether a `"method"` key (or string) appears in the first bytes of a message, as it does
/// in the notifications and requests servers send and rarely in a response.
fn names_method_early(data: &[u8]) -> bool {
    // Built once: building a searcher costs more than searching 64 bytes with it.
    static METHOD_KEY: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
        std::sync::OnceLock::new();
    METHOD_KEY
        .get_or_init(|| memchr::memmem::Finder::new(b"\"method\""))
        .find(&data[..data.len().min(METHOD_SNIFF_BYTES)])
        .is_some()
}

fn lost(detail: String) -> Failure {
    Failure::new(
        FailureKind::ConnectionLost,
        Delivery::MayHaveReached,
        detail,
    )
}

fn transport_detail(error: &TransportError) -> &str {
    match error {
        TransportError::Connect(detail) | TransportError::Lost(detail) => detail,
    }
}

/// The failure of a request that got no response head.
fn send_failure(error: &TransportError) -> Failure {
    match error {
        TransportError::Connect(detail) => Failure::new(
            FailureKind::Connect,
            Delivery::NotSent,
            format!("could not connect: {detail}"),
        ),
        TransportError::Lost(detail) => Failure::new(
            FailureKind::ConnectionLost,
            Delivery::MayHaveReached,
            format!("the connection failed: {detail}"),
        ),
    }
}

fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok())
}

/// Media types are compared without parameters and case-insensitively
/// (`text/event-stream; charset=utf-8` is an event stream).
fn classify_reply(status: StatusCode, headers: &HeaderMap) -> Reply {
    let declared_empty = headers
        .get(CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() == b"0");
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT || declared_empty {
        return Reply::Empty;
    }
    let Some(value) = content_type(headers) else {
        return Reply::Other(String::new());
    };
    let media_type = value.split(';').next().unwrap_or("").trim();
    if media_type.eq_ignore_ascii_case("application/json") {
        Reply::Json
    } else if media_type.eq_ignore_ascii_case(EVENT_STREAM) {
        Reply::EventStream
    } else {
        Reply::Other(media_type.chars().take(100).collect())
    }
}

/// Names the `WWW-Authenticate` challenge of a 401 or 403: scheme, `resource_metadata`,
/// `scope`, `error`. Each challenge goes through `redact` whole, before its parameters are
/// cut to length: a cut could split an echoed credential so that it no longer matches.
fn describe_challenge(
    status: StatusCode,
    headers: &HeaderMap,
    redact: &dyn Fn(&str) -> String,
) -> String {
    let challenges: Vec<String> = headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(redact)
        .collect();
    if challenges.is_empty() {
        return format!(
            "the server refused the credentials with {status} and sent no WWW-Authenticate challenge"
        );
    }
    let mut described = Vec::new();
    for challenge in &challenges {
        let scheme = challenge.split_whitespace().next().unwrap_or("");
        let mut parts = vec![format!("scheme {scheme}")];
        for key in [
            "resource_metadata",
            "scope",
            "error",
            "error_description",
            "realm",
        ] {
            if let Some(value) = auth_param(challenge, key) {
                parts.push(format!("{key}={value:?}"));
            }
        }
        described.push(parts.join(", "));
    }
    format!(
        "the server refused the credentials with {status}; WWW-Authenticate: {}",
        described.join("; ")
    )
}

/// The value of one `key=value` or `key="value"` parameter of an auth challenge.
pub(crate) fn auth_param(challenge: &str, key: &str) -> Option<String> {
    let mut rest = challenge;
    while let Some(position) = rest.find(key) {
        let before_ok =
            position == 0 || matches!(rest.as_bytes()[position - 1], b' ' | b',' | b'\t');
        let after = rest[position + key.len()..].trim_start();
        if before_ok && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let value = if let Some(quoted) = value.strip_prefix('"') {
                quoted.split('"').next().unwrap_or("")
            } else {
                value.split([',', ' ']).next().unwrap_or("")
            };
            return Some(value.chars().take(256).collect());
        }
        rest = &rest[position + key.len()..];
    }
    None
}

/// Resolves the legacy `endpoint` event's URI against the base URL, refusing another origin
/// (the bearer token must never go there).
fn resolve_same_origin(base: &Uri, reference: &str) -> Result<Uri, String> {
    let resolved: Uri = if reference.starts_with("http://") || reference.starts_with("https://") {
        reference
            .parse()
            .map_err(|e| format!("the legacy endpoint {reference:?} is not a URI: {e}"))?
    } else {
        let path = if reference.starts_with('/') {
            reference.to_owned()
        } else {
            let base_path = base.path();
            let directory = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
            format!("{directory}{reference}")
        };
        let scheme = base.scheme_str().unwrap_or("http");
        let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
        format!("{scheme}://{authority}{path}")
            .parse()
            .map_err(|e| format!("the legacy endpoint {reference:?} is not a URI: {e}"))?
    };
    let same_origin = resolved.scheme() == base.scheme()
        && resolved.host() == base.host()
        && resolved.port_u16().or(default_port(&resolved))
            == base.port_u16().or(default_port(base));
    if same_origin {
        Ok(resolved)
    } else {
        Err(format!(
            "the legacy endpoint {reference:?} is on another origin than {base}; refusing to \
             send messages (and credentials) there"
        ))
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

/// The failure of a request whose reply passed its byte budget (`max_response_bytes`).
pub(crate) fn over_budget(limit: u64) -> Failure {
    Failure::new(
        FailureKind::ReplyOverBudget { limit },
        Delivery::MayHaveReached,
        format!("the reply is larger than the {limit}-byte output limit"),
    )
}

/// Counts reply bytes against a request's limit, across resumptions.
#[derive(Debug)]
struct ByteBudget {
    remaining: Option<u64>,
    limit: u64,
}

impl ByteBudget {
    fn new(limit: Option<u64>) -> Self {
        ByteBudget {
            remaining: limit,
            limit: limit.unwrap_or(u64::MAX),
        }
    }

    fn take(&mut self, bytes: usize) -> Result<(), Failure> {
        let Some(remaining) = &mut self.remaining else {
            return Ok(());
        };
        *remaining = remaining
            .checked_sub(bytes as u64)
            .ok_or_else(|| over_budget(self.limit))?;
        Ok(())
    }
}
