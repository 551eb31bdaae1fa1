//! The crate's error type: one [`Error`] with a [`kind`](Error::kind) for programs and a
//! message for people, carrying the session's [`Failure`] (and so what is known of delivery)
//! when a request failed; and [`ErrorKind`], the one vocabulary of failure kinds from the wire
//! up to the binding layer's `tool.result` event. Every lower layer's reason (a session
//! [`FailureKind`], a session's refusal to send, a result-mapping error) maps into it here, in one
//! place, so the kind strings programs read come from one enum.

use std::fmt;
use std::str::FromStr;

use crate::session::{Failure, FailureKind, RequestError};

/// A row of SPEC.md's "Failures and `unknown_outcome`" table: what happened to a failed tool
/// call, and so whether its outcome is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpecRow {
    /// Refused locally (tenant, arguments, config), or could not connect: the tool was never
    /// called.
    Local,
    /// The server refused before the tool was called.
    ServerRefused,
    /// The tool ran and returned `isError: true`.
    ToolError,
    /// The call failed after it was sent.
    AfterSent,
    /// The server asked for user input during the call.
    Elicitation,
    /// The result came back but cannot be used.
    Unusable,
}

impl SpecRow {
    /// Every row, in SPEC.md's order.
    #[cfg(test)]
    const ALL: [SpecRow; 6] = [
        SpecRow::Local,
        SpecRow::ServerRefused,
        SpecRow::ToolError,
        SpecRow::AfterSent,
        SpecRow::Elicitation,
        SpecRow::Unusable,
    ];

    /// The row's `unknown_outcome` column.
    fn unknown_outcome(self) -> bool {
        match self {
            SpecRow::Local | SpecRow::ServerRefused | SpecRow::ToolError => false,
            SpecRow::AfterSent | SpecRow::Elicitation | SpecRow::Unusable => true,
        }
    }

    /// The row's "what happened" column, as SPEC.md words it.
    #[cfg(test)]
    fn spec_text(self) -> &'static str {
        match self {
            SpecRow::Local => {
                "refused locally (tenant, arguments, config), or could not connect; the tool was \
                 never called"
            }
            SpecRow::ServerRefused => {
                "the server refused before the tool was called (401/403, unsupported version or \
                 a non-MCP reply to initialize, a dead session on tools/call)"
            }
            SpecRow::ToolError => {
                "the tool ran and returned `isError: true` (its content is kept in the result)"
            }
            SpecRow::AfterSent => {
                "the call failed after it was sent: connection dropped, timeout, protocol error"
            }
            SpecRow::Elicitation => {
                "the server asked for user input (`elicitation/create`) during the call"
            }
            SpecRow::Unusable => {
                "unsupported content type, result over `max_output_bytes`, result not matching \
                 `output_schema`"
            }
        }
    }
}

/// Declares [`ErrorKind`] from one list: each variant with its doc, its stable name and the
/// rows of SPEC.md's `unknown_outcome` table it reports, so the enum, its names, its doc table
/// and [`ErrorKind::ALL`] cannot disagree.
macro_rules! error_kinds {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident = $name:literal, [$($row:ident),+];
    )+) => {
        /// What kind of failure, for programs: the kind of an [`Error`], and the `error.kind`
        /// of a failed call's `tool.result` event (the binding layer's own kinds are here too,
        /// from `unknown_tool` to `output_too_large`). [`as_str`](Self::as_str) is the stable
        /// snake_case name the CLIs print and the events carry; it round-trips through
        /// [`FromStr`] and serde.
        ///
        /// Which rows of SPEC.md's "Failures and `unknown_outcome`" table each kind reports,
        /// so whether a `tool.result` of that kind has `unknown_outcome` true
        /// ([`unknown_outcome`](Self::unknown_outcome)):
        ///
        /// | row | what happened | `unknown_outcome` |
        /// | --- | --- | --- |
        /// | `Local` | refused locally (tenant, arguments, config), or could not connect; the tool was never called | false |
        /// | `ServerRefused` | the server refused before the tool was called (401/403, 429/503 for overload, unsupported version or a non-MCP reply to initialize, a dead session on tools/call), or answered the call with a JSON-RPC error | false |
        /// | `ToolError` | the tool ran and returned `isError: true` (its content is kept in the result) | false |
        /// | `AfterSent` | the call failed after it was sent: connection dropped, timeout, protocol error | true |
        /// | `Elicitation` | the server asked for user input (`elicitation/create`) during the call | true |
        /// | `Unusable` | unsupported content type, result over `max_output_bytes`, result not matching `output_schema` | true |
        ///
        /// | kind | rows |
        /// | --- | --- |
        $(#[doc = concat!("| `", $name, "` | ", $("`", stringify!($row), "` "),+, "|")])+
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorKind {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl ErrorKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant),+];

            /// A stable snake_case name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorKind::$variant => $name,)+
                }
            }

            /// The rows of SPEC.md's `unknown_outcome` table this kind reports.
            fn rows(self) -> &'static [SpecRow] {
                match self {
                    $(ErrorKind::$variant => &[$(SpecRow::$row),+],)+
                }
            }
        }
    };
}

error_kinds! {
    /// A configuration or argument was invalid; nothing was attempted.
    Config = "config", [Local];
    /// Refused locally before sending: session not ready, capability missing, too many
    /// requests in flight.
    Refused = "refused", [Local];
    /// The server could not be reached.
    Connect = "connect", [Local];
    /// The server refused the credentials (401, 403).
    Unauthorized = "unauthorized", [ServerRefused];
    /// The server no longer knows the session.
    SessionExpired = "session_expired", [ServerRefused, AfterSent];
    /// The server answered with an unusable HTTP status.
    Http = "http_status", [ServerRefused, AfterSent];
    /// A deadline passed.
    Timeout = "timeout", [Local, AfterSent];
    /// The call was cancelled.
    Cancelled = "cancelled", [Local, AfterSent];
    /// The connection or stream was lost before the answer.
    ConnectionLost = "connection_lost", [Local, AfterSent];
    /// The server broke the protocol.
    Protocol = "protocol", [ServerRefused, AfterSent];
    /// The server sent more than a limit allows (while connecting; a tool call's reply over
    /// its limits is [`OutputTooLarge`](Self::OutputTooLarge)).
    LimitExceeded = "limit_exceeded", [Local];
    /// The server answered with a JSON-RPC error.
    ServerError = "server_error", [ServerRefused];
    /// The server speaks no protocol revision this client accepts.
    UnsupportedVersion = "unsupported_version", [ServerRefused];
    /// The server asked for user input during a tool call.
    ElicitationRequested = "elicitation_requested", [Elicitation];
    /// The session was closed.
    Closed = "closed", [Local, AfterSent];
    /// The server is overloaded (429 or 503, often with a `Retry-After`): it refused the
    /// request before handling it, so a refused call did not run. [`Error::retry_after`]
    /// says when the server asked to be tried again.
    RateLimited = "rate_limited", [ServerRefused];
    /// A local I/O failure (for instance starting a stdio server).
    Io = "io", [Local];
    /// An internal failure that should not happen (a bug).
    Internal = "internal", [Local, AfterSent];
    /// No binding has the name a call asked for.
    UnknownTool = "unknown_tool", [Local];
    /// The calling tenant is not among the binding's `tenants`.
    TenantDenied = "tenant_denied", [Local];
    /// The arguments do not match the binding's `input_schema` (or are not an object).
    InvalidArguments = "invalid_arguments", [Local];
    /// The environment variable a binding's `token_env` names is not set.
    MissingToken = "missing_token", [Local];
    /// The environment variable of a binding's `header_env` entry is not set.
    MissingHeader = "missing_header", [Local];
    /// The value of a binding's `header_env` entry cannot be sent as a header.
    InvalidHeader = "invalid_header", [Local];
    /// The tool ran and reported an error of its own (`isError: true`).
    ToolError = "tool_error", [ToolError];
    /// A successful result holds a content block of a type mcpwire does not return.
    UnsupportedContent = "unsupported_content", [Unusable];
    /// A successful result does not match the binding's `output_schema` (or has no
    /// structured content although the binding has one).
    OutputSchemaMismatch = "output_schema_mismatch", [Unusable];
    /// The reply to a tool call passed a limit: the binding's `max_output_bytes`, or an
    /// event-stream line or event over its own limit.
    OutputTooLarge = "output_too_large", [Unusable];
}

impl ErrorKind {
    /// Whether a failed call's `tool.result` of this kind has `unknown_outcome` true: `Some`
    /// when the kind alone decides, `None` when it depends on how far the call got (a
    /// timeout while connecting is known not to have run the tool, one after the call was
    /// sent is not).
    pub fn unknown_outcome(self) -> Option<bool> {
        let rows = self.rows();
        let first = rows[0].unknown_outcome();
        rows.iter()
            .all(|row| row.unknown_outcome() == first)
            .then_some(first)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`ErrorKind`]'s.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnknownKind {
    /// The name, as given.
    pub name: String,
}

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not an mcpwire error kind", self.name)
    }
}

impl std::error::Error for UnknownKind {}

impl FromStr for ErrorKind {
    type Err = UnknownKind;

    /// The kind named by its [`as_str`](Self::as_str) name.
    fn from_str(name: &str) -> Result<Self, UnknownKind> {
        ErrorKind::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| UnknownKind {
                name: name.to_owned(),
            })
    }
}

impl serde::Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ErrorKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// The session's reason for a failed request, as a kind.
impl From<&FailureKind> for ErrorKind {
    fn from(kind: &FailureKind) -> Self {
        match kind {
            FailureKind::Timeout | FailureKind::IdleTimeout => ErrorKind::Timeout,
            FailureKind::Cancelled => ErrorKind::Cancelled,
            FailureKind::Closed => ErrorKind::Closed,
            FailureKind::Connect => ErrorKind::Connect,
            FailureKind::ConnectionLost => ErrorKind::ConnectionLost,
            FailureKind::HttpStatus { .. } => ErrorKind::Http,
            FailureKind::Unauthorized { .. } => ErrorKind::Unauthorized,
            FailureKind::SessionExpired => ErrorKind::SessionExpired,
            FailureKind::Protocol | FailureKind::Task(_) => ErrorKind::Protocol,
            FailureKind::LimitExceeded | FailureKind::ReplyOverBudget { .. } => {
                ErrorKind::LimitExceeded
            }
            FailureKind::ServerError { .. } => ErrorKind::ServerError,
            FailureKind::UnsupportedVersion => ErrorKind::UnsupportedVersion,
            FailureKind::ElicitationRequested => ErrorKind::ElicitationRequested,
            FailureKind::RateLimited { .. } => ErrorKind::RateLimited,
        }
    }
}

/// A request the session refused before sending, as a kind.
impl From<&RequestError> for ErrorKind {
    fn from(refused: &RequestError) -> Self {
        match refused {
            RequestError::Closed => ErrorKind::Closed,
            _ => ErrorKind::Refused,
        }
    }
}

/// An error from the client. [`source`](std::error::Error::source) is the session's
/// [`Failure`] when a request failed, or the typed error a configuration was refused with
/// ([`EndpointError`](crate::transport::http::EndpointError), [`TlsError`](crate::transport::http::TlsError),
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
impl From<crate::exchange::config::EndpointError> for Error {
    fn from(error: crate::exchange::config::EndpointError) -> Self {
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
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
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
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Config, message)
    }

    /// A request failure from the session, keeping its delivery facts.
    pub(crate) fn from_failure(failure: Failure) -> Self {
        Error {
            kind: ErrorKind::from(&failure.kind),
            message: failure.detail.clone(),
            failure: Some(failure),
            source: None,
        }
    }

    pub(crate) fn refused(refused: RequestError) -> Self {
        Error::new(ErrorKind::from(&refused), refused.to_string())
    }

    pub(crate) fn closed() -> Self {
        Error::new(ErrorKind::Closed, "the session is closed")
    }

    pub(crate) fn internal(error: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Internal, error.to_string())
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The session's account of a failed request, when a request failed.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// Whether the request may have been acted on with its outcome unknown.
    pub fn outcome_unknown(&self) -> bool {
        self.failure.as_ref().is_some_and(Failure::outcome_unknown)
    }

    /// For a [`ServerError`](ErrorKind::ServerError) with code `-32042`
    /// (`URLElicitationRequiredError`, 2025-11-25): the URL elicitations the server needs
    /// completed before the request can be made again, checked as
    /// [`InputHandler::elicit_url`](crate::InputHandler::elicit_url)'s are. The request did not
    /// run (the server refused it before), so a host may present them and, once the user is
    /// done, make the request again. `None` for any other error; an error when the server's
    /// list breaks the rules.
    pub fn url_elicitations(&self) -> Option<Result<Vec<crate::client::UrlElicitation>, String>> {
        let failure = self.failure.as_ref()?;
        match failure.kind {
            FailureKind::ServerError { code }
                if code == crate::mcp::error_code::URL_ELICITATION_REQUIRED =>
            {
                Some(crate::connection::input::required_elicitations(
                    failure.data().unwrap_or("null"),
                ))
            }
            _ => None,
        }
    }

    /// For a [`RateLimited`](ErrorKind::RateLimited) error: how long the server asked the
    /// client to wait before trying again (its `Retry-After`, an HTTP-date turned into a
    /// wait); `None` when it did not say, and for every other error.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self.failure.as_ref()?.kind {
            FailureKind::RateLimited { retry_after, .. } => retry_after,
            _ => None,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Delivery;

    /// The kind names on the wire (the `tool.result` event's `error.kind`, the CLIs' output):
    /// a contract, so spelled out here rather than derived.
    const NAMES: [&str; 28] = [
        "config",
        "refused",
        "connect",
        "unauthorized",
        "session_expired",
        "http_status",
        "timeout",
        "cancelled",
        "connection_lost",
        "protocol",
        "limit_exceeded",
        "server_error",
        "unsupported_version",
        "elicitation_requested",
        "closed",
        "rate_limited",
        "io",
        "internal",
        "unknown_tool",
        "tenant_denied",
        "invalid_arguments",
        "missing_token",
        "missing_header",
        "invalid_header",
        "tool_error",
        "unsupported_content",
        "output_schema_mismatch",
        "output_too_large",
    ];

    #[test]
    fn the_kind_names_are_the_contract() {
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, NAMES);
    }

    #[test]
    fn every_kind_round_trips() {
        for &kind in ErrorKind::ALL {
            let name = kind.as_str();
            assert_eq!(kind.to_string(), name);
            assert_eq!(name.parse::<ErrorKind>(), Ok(kind));
            let json = serde_json::to_value(kind).expect("serializes");
            assert_eq!(json, serde_json::Value::from(name));
            assert_eq!(serde_json::from_value::<ErrorKind>(json).ok(), Some(kind));
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name} is not snake_case"
            );
        }
        assert_eq!(
            "Timeout".parse::<ErrorKind>(),
            Err(UnknownKind {
                name: "Timeout".to_owned()
            })
        );
        assert!(serde_json::from_str::<ErrorKind>(r#""no_such_kind""#).is_err());
        assert!(serde_json::from_str::<ErrorKind>("7").is_err());
    }

    #[test]
    fn every_failure_kind_maps_into_the_taxonomy() {
        let cases = [
            (FailureKind::Timeout, ErrorKind::Timeout),
            (FailureKind::IdleTimeout, ErrorKind::Timeout),
            (FailureKind::Cancelled, ErrorKind::Cancelled),
            (FailureKind::Closed, ErrorKind::Closed),
            (FailureKind::Connect, ErrorKind::Connect),
            (FailureKind::ConnectionLost, ErrorKind::ConnectionLost),
            (FailureKind::HttpStatus { status: 500 }, ErrorKind::Http),
            (
                FailureKind::Unauthorized { status: 401 },
                ErrorKind::Unauthorized,
            ),
            (FailureKind::SessionExpired, ErrorKind::SessionExpired),
            (FailureKind::Protocol, ErrorKind::Protocol),
            (FailureKind::LimitExceeded, ErrorKind::LimitExceeded),
            (
                FailureKind::ReplyOverBudget { limit: 1 },
                ErrorKind::LimitExceeded,
            ),
            (
                FailureKind::ServerError { code: -32602 },
                ErrorKind::ServerError,
            ),
            (
                FailureKind::UnsupportedVersion,
                ErrorKind::UnsupportedVersion,
            ),
            (
                FailureKind::ElicitationRequested,
                ErrorKind::ElicitationRequested,
            ),
            (
                FailureKind::RateLimited {
                    status: 429,
                    retry_after: None,
                },
                ErrorKind::RateLimited,
            ),
        ];
        for (failure, kind) in cases {
            assert_eq!(ErrorKind::from(&failure), kind, "{failure:?}");
            let error = Error::from_failure(Failure::new(failure, Delivery::NotSent, "x"));
            assert_eq!(error.kind(), kind);
        }
        assert_eq!(ErrorKind::from(&RequestError::Closed), ErrorKind::Closed);
    }

    /// The rows of SPEC.md's "Failures and `unknown_outcome`" table: (what happened, whether
    /// the outcome is unknown), in order.
    fn spec_rows(spec: &str) -> Vec<(String, bool)> {
        let table = spec
            .split("| what happened | unknown_outcome |")
            .nth(1)
            .expect("SPEC.md has the unknown_outcome table");
        table
            .lines()
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .map(|line| {
                let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
                assert_eq!(cells.len(), 2, "{line}");
                let verdict = cells[1].trim();
                let unknown = match verdict.split(|c: char| !c.is_alphabetic()).next() {
                    Some("true") => true,
                    Some("false") => false,
                    _ => panic!("no true or false in {verdict:?}"),
                };
                (cells[0].trim().to_owned(), unknown)
            })
            .collect()
    }

    #[test]
    fn the_spec_table_rows_are_exactly_the_kinds_rows() {
        let ours: Vec<(String, bool)> = SpecRow::ALL
            .iter()
            .map(|row| (row.spec_text().to_owned(), row.unknown_outcome()))
            .collect();
        // The steering repository's SPEC.md beside this one, when it is there (it is on the
        // developers' machines and in CI); the rows above are its words.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/SPEC.md");
        match std::fs::read_to_string(path) {
            Ok(spec) => assert_eq!(spec_rows(&spec), ours),
            Err(error) => eprintln!("{path}: {error}; checking the kinds against the copy"),
        }
        // Every row is reported by some kind, and every kind reports only rows of the table.
        for row in SpecRow::ALL {
            assert!(
                ErrorKind::ALL.iter().any(|kind| kind.rows().contains(&row)),
                "no kind reports {row:?}"
            );
        }
        for &kind in ErrorKind::ALL {
            assert!(!kind.rows().is_empty(), "{kind}");
        }
        // The kinds whose verdict is fixed.
        assert_eq!(ErrorKind::TenantDenied.unknown_outcome(), Some(false));
        assert_eq!(ErrorKind::ToolError.unknown_outcome(), Some(false));
        assert_eq!(ErrorKind::Unauthorized.unknown_outcome(), Some(false));
        assert_eq!(ErrorKind::OutputTooLarge.unknown_outcome(), Some(true));
        assert_eq!(
            ErrorKind::ElicitationRequested.unknown_outcome(),
            Some(true)
        );
        assert_eq!(ErrorKind::Timeout.unknown_outcome(), None);
        assert_eq!(ErrorKind::Connect.unknown_outcome(), Some(false));
        assert_eq!(ErrorKind::RateLimited.unknown_outcome(), Some(false));
    }

    #[test]
    fn a_rate_limited_error_carries_the_servers_wait() {
        let wait = std::time::Duration::from_secs(7);
        let error = Error::from_failure(Failure::new(
            FailureKind::RateLimited {
                status: 429,
                retry_after: Some(wait),
            },
            Delivery::Refused,
            "overloaded",
        ));
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(wait));
        assert!(!error.outcome_unknown());
        assert_eq!(Error::closed().retry_after(), None);
    }

    #[test]
    fn the_spec_table_parser_reads_a_table() {
        let spec = "x\n| what happened | unknown_outcome |\n| --- | --- |\n| a, b | false |\n\
                    | c | true; why |\n\nafter";
        assert_eq!(
            spec_rows(spec),
            [("a, b".to_owned(), false), ("c".to_owned(), true)]
        );
    }
}
