//! The crate's error type: one [`Error`] with a [`kind`](Error::kind) for programs and a
//! message for people, carrying the session's [`Failure`] (and so what is known of delivery)
//! when a request failed.

use std::fmt;

use crate::session::{Delivery, Failure, FailureKind, RequestError};

/// What kind of failure, for programs (the CLI prints [`ErrorKind::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration or argument was invalid; nothing was attempted.
    Config,
    /// Refused locally before sending: session not ready, capability missing, too many
    /// requests in flight.
    Refused,
    /// The server could not be reached.
    Connect,
    /// The server refused the credentials (401, 403).
    Unauthorized,
    /// The server no longer knows the session.
    SessionExpired,
    /// The server answered with an unusable HTTP status.
    Http,
    /// A deadline passed.
    Timeout,
    /// The call was cancelled.
    Cancelled,
    /// The connection or stream was lost before the answer.
    ConnectionLost,
    /// The server broke the protocol.
    Protocol,
    /// The server sent more than a limit allows.
    LimitExceeded,
    /// The server answered with a JSON-RPC error.
    ServerError,
    /// The server speaks no protocol revision this client accepts.
    UnsupportedVersion,
    /// The server asked for user input during a tool call.
    ElicitationRequested,
    /// The session was closed.
    Closed,
    /// A local I/O failure (for instance starting a stdio server).
    Io,
    /// An internal failure that should not happen (a bug).
    Internal,
}

impl ErrorKind {
    /// A stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::Refused => "refused",
            ErrorKind::Connect => "connect",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::SessionExpired => "session_expired",
            ErrorKind::Http => "http_status",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::ConnectionLost => "connection_lost",
            ErrorKind::Protocol => "protocol",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::ServerError => "server_error",
            ErrorKind::UnsupportedVersion => "unsupported_version",
            ErrorKind::ElicitationRequested => "elicitation_requested",
            ErrorKind::Closed => "closed",
            ErrorKind::Io => "io",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error from the client. [`source`](std::error::Error::source) is the session's
/// [`Failure`] when a request failed, or the typed error a configuration was refused with
/// ([`UrlError`](crate::exchange::UrlError), [`TlsError`](crate::transport::http::TlsError),
/// [`ProxyError`](crate::transport::http::ProxyError)).
#[derive(Clone, Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    failure: Option<Failure>,
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message && self.failure == other.failure
    }
}

impl Eq for Error {}

/// TLS settings that cannot be used: a [`Config`](ErrorKind::Config) error.
#[cfg(feature = "client")]
impl From<crate::transport::http::TlsError> for Error {
    fn from(error: crate::transport::http::TlsError) -> Self {
        Error::config(error.to_string()).with_source(error)
    }
}

/// A URL that is no Streamable HTTP endpoint: a [`Config`](ErrorKind::Config) error.
#[cfg(feature = "client")]
impl From<crate::exchange::UrlError> for Error {
    fn from(error: crate::exchange::UrlError) -> Self {
        Error::config(error.to_string()).with_source(error)
    }
}

/// A proxy setting that cannot be used: a [`Config`](ErrorKind::Config) error.
#[cfg(feature = "client")]
impl From<crate::transport::http::ProxyError> for Error {
    fn from(error: crate::transport::http::ProxyError) -> Self {
        Error::config(error.to_string()).with_source(error)
    }
}

impl Error {
    /// An error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            failure: None,
            source: None,
        }
    }

    fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(std::sync::Arc::new(source));
        self
    }

    /// An invalid configuration.
    pub fn config(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Config, message)
    }

    /// A request failure from the session, keeping its delivery facts.
    pub fn from_failure(failure: Failure) -> Self {
        let kind = match &failure.kind {
            FailureKind::Timeout | FailureKind::IdleTimeout => ErrorKind::Timeout,
            FailureKind::Cancelled => ErrorKind::Cancelled,
            FailureKind::Closed => ErrorKind::Closed,
            FailureKind::Connect => ErrorKind::Connect,
            FailureKind::ConnectionLost => ErrorKind::ConnectionLost,
            FailureKind::HttpStatus { .. } => ErrorKind::Http,
            FailureKind::Unauthorized { .. } => ErrorKind::Unauthorized,
            FailureKind::SessionExpired => ErrorKind::SessionExpired,
            FailureKind::Protocol => ErrorKind::Protocol,
            FailureKind::LimitExceeded | FailureKind::ReplyOverBudget { .. } => {
                ErrorKind::LimitExceeded
            }
            FailureKind::ServerError { .. } => ErrorKind::ServerError,
            FailureKind::UnsupportedVersion => ErrorKind::UnsupportedVersion,
            FailureKind::ElicitationRequested => ErrorKind::ElicitationRequested,
        };
        Error {
            kind,
            message: failure.detail.clone(),
            failure: Some(failure),
            source: None,
        }
    }

    pub(crate) fn refused(refused: RequestError) -> Self {
        let kind = match refused {
            RequestError::Closed => ErrorKind::Closed,
            _ => ErrorKind::Refused,
        };
        Error::new(kind, refused.to_string())
    }

    pub(crate) fn closed() -> Self {
        Error::new(ErrorKind::Closed, "the session is closed")
    }

    pub(crate) fn internal(error: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Internal, error.to_string())
    }

    /// The same error with every occurrence of `secret` in its text replaced: a server may
    /// echo a credential back (in a challenge, an error message or its data).
    pub(crate) fn redacted(mut self, secret: &crate::transport::Secret) -> Self {
        self.message = secret.redact(&self.message);
        if let Some(failure) = &mut self.failure {
            failure.detail = secret.redact(&failure.detail);
            failure.map_data(|data| secret.redact(data));
        }
        self
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The session's account of a failed request, when a request failed.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// How far the failed request got; [`Delivery::NotSent`] when no request was involved.
    pub fn delivery(&self) -> Delivery {
        self.failure
            .as_ref()
            .map_or(Delivery::NotSent, |failure| failure.delivery)
    }

    /// Whether the request may have been acted on with its outcome unknown.
    pub fn outcome_unknown(&self) -> bool {
        self.failure.as_ref().is_some_and(Failure::outcome_unknown)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match (&self.source, &self.failure) {
            (Some(source), _) => Some(source.as_ref()),
            (None, Some(failure)) => Some(failure),
            (None, None) => None,
        }
    }
}
