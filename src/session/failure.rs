//! Why a request failed, and what is known about whether the server received it.

use std::fmt;

use crate::jsonrpc::ErrorObject;

/// The most bytes of a JSON-RPC error's `data` a failure keeps for its caller to read.
const MAX_ERROR_DATA_BYTES: usize = 64 * 1024;

/// How far a request got. Together with the [`FailureKind`] this decides whether the
/// operation may have run with nobody knowing its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// Never sent: refused locally, or the connection could not be made.
    NotSent,
    /// The server turned the message away before processing it (an HTTP-level refusal such
    /// as 401, 403, 404 for an expired session, 429 or 503 for overload, or a non-MCP reply).
    Refused,
    /// Sent, and no answer arrived: the server may have received and acted on it.
    MayHaveReached,
    /// The server answered it (with a result, a JSON-RPC error, or something unusable).
    Answered,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The request's deadline passed.
    Timeout,
    /// No progress arrived within the request's idle timeout.
    IdleTimeout,
    /// The caller cancelled the request.
    Cancelled,
    /// The session was closed with the request in flight.
    Closed,
    /// The connection could not be made.
    Connect,
    /// The connection broke, or the response stream ended, before the response.
    ConnectionLost,
    /// The server answered with an HTTP status that is not a usable reply.
    HttpStatus {
        /// The status code.
        status: u16,
    },
    /// 401 or 403; the detail names the `WWW-Authenticate` challenge.
    Unauthorized {
        /// The status code.
        status: u16,
    },
    /// The server no longer knows the session (404 on a request carrying a session id).
    SessionExpired,
    /// The server's answer was not valid MCP: wrong content type, invalid JSON, a malformed
    /// result.
    Protocol,
    /// Something the server sent was larger than a configured limit.
    LimitExceeded,
    /// The reply to the request, counted across its stream and resumptions, passed the
    /// request's byte budget (`max_response_bytes`).
    ReplyOverBudget {
        /// The budget, in bytes.
        limit: u64,
    },
    /// The server answered with a JSON-RPC error.
    ServerError {
        /// The JSON-RPC error code.
        code: i64,
    },
    /// The server chose a protocol revision this client does not accept.
    UnsupportedVersion,
    /// The server asked for user input (`elicitation/create`) during a tool call.
    ElicitationRequested,
    /// The server is overloaded: it answered 429 (Too Many Requests) or 503 (Service
    /// Unavailable), so it did not handle the request. A request that may be sent twice was
    /// sent again within its deadline first; this is the last answer.
    RateLimited {
        /// The status code (429 or 503).
        status: u16,
        /// How long the server asked the client to wait (its `Retry-After`), when it said.
        retry_after: Option<std::time::Duration>,
    },
    /// The server's task messages broke the protocol's rules (a bogus task id, a status after
    /// a terminal one, a terminal task without its result, endless polling).
    Task(crate::mcp::TaskError),
}

/// A request's failure: what went wrong, how far the request got, and a message for people.
/// Its [`source`](std::error::Error::source) is the typed error that caused it, when another
/// layer had one (an OAuth flow's [`auth::Error`](crate::auth) when the credentials could not
/// be renewed).
#[derive(Clone, Debug)]
pub struct Failure {
    /// What went wrong.
    pub kind: FailureKind,
    /// How far the request got.
    pub delivery: Delivery,
    /// A human-readable account, never containing credentials.
    pub detail: String,
    /// The `data` of a JSON-RPC error, as sent (bounded).
    data: Option<std::sync::Arc<str>>,
    /// The typed error behind it, if any (never one whose text holds a credential).
    cause: Option<Cause>,
    /// The id of the server's task the request became, when it became one.
    task_id: Option<std::sync::Arc<str>>,
}

/// A typed error behind a [`Failure`].
pub(crate) type Cause = std::sync::Arc<dyn std::error::Error + Send + Sync>;

/// Failures are equal when they say the same; the typed cause is not compared.
impl PartialEq for Failure {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.delivery == other.delivery
            && self.detail == other.detail
            && self.data == other.data
            && self.task_id == other.task_id
    }
}

impl Eq for Failure {}

impl Failure {
    /// A failure.
    pub(crate) fn new(kind: FailureKind, delivery: Delivery, detail: impl Into<String>) -> Self {
        Failure {
            kind,
            delivery,
            detail: detail.into(),
            data: None,
            cause: None,
            task_id: None,
        }
    }

    /// This failure, about the server's task `task_id`.
    pub(crate) fn with_task(mut self, task_id: &str) -> Self {
        self.task_id = Some(std::sync::Arc::from(task_id));
        self
    }

    /// The id of the server's task the call became, when it became one (the task may go on,
    /// and the server may still know its outcome).
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// This failure, caused by `cause` (its [`source`](std::error::Error::source)).
    pub(crate) fn with_cause(mut self, cause: Option<Cause>) -> Self {
        self.cause = cause;
        self
    }

    /// The typed error behind this failure, if another layer had one.
    pub(crate) fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
    }

    /// The `data` member of the JSON-RPC error this failure reports, as the server sent it;
    /// `None` for other failures and for data over 64 KiB.
    pub fn data(&self) -> Option<&str> {
        self.data.as_deref()
    }

    /// Rewrites the error `data` (to take credentials a server echoed out of it).
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn map_data(&mut self, rewrite: impl FnOnce(&str) -> String) {
        if let Some(data) = &self.data {
            self.data = Some(std::sync::Arc::from(rewrite(data)));
        }
    }

    /// A JSON-RPC error response.
    pub(crate) fn from_error_object(error: &ErrorObject<'_>) -> Self {
        let mut detail = format!("server error {}: {}", error.code, error.message);
        if let Some(data) = &error.data {
            let data = data.get();
            let cut = data
                .char_indices()
                .nth(200)
                .map_or(data.len(), |(index, _)| index);
            detail.push_str(" (data: ");
            detail.push_str(&data[..cut]);
            detail.push(')');
        }
        let mut failure = Failure::new(
            FailureKind::ServerError { code: error.code },
            Delivery::Answered,
            detail,
        );
        failure.data = error
            .data
            .as_ref()
            .map(|data| data.get())
            .filter(|data| data.len() <= MAX_ERROR_DATA_BYTES)
            .map(std::sync::Arc::from);
        failure
    }

    /// Whether the operation may have been carried out with its outcome unknown: the request
    /// may have reached the server and no usable answer came back. False when it was never
    /// sent, when the server refused it before processing, and when the server answered with
    /// a JSON-RPC error (the outcome is then known: it failed).
    pub(crate) fn outcome_unknown(&self) -> bool {
        match self.delivery {
            Delivery::NotSent | Delivery::Refused => false,
            Delivery::MayHaveReached => true,
            Delivery::Answered => !matches!(
                self.kind,
                FailureKind::ServerError { .. } | FailureKind::UnsupportedVersion
            ),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|cause| cause as &(dyn std::error::Error + 'static))
    }
}
