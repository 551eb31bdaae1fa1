//! What each HTTP request carries: the request POST, the one-way POSTs sent in order behind a
//! barrier, the headers every request gets (session id, revision, `Mcp-Method`, extra headers),
//! and the per-request [`SendOptions`].

use std::time::Instant;

use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Uri};
use serde::de::DeserializeOwned;

use crate::jsonrpc::Message;
use crate::session::Resumption;

use super::reply::{ByteBudget, ResultDecoder, decode_result_as};
use super::{Closing, Exchange, Held, HttpRequest, Op, RequestOp, StreamId};

pub(super) const EVENT_STREAM: &str = "text/event-stream";
/// The `Accept` values, checked once when compiled rather than for each request.
pub(super) const ACCEPT_BOTH: HeaderValue =
    HeaderValue::from_static("application/json, text/event-stream");
pub(super) const ACCEPT_EVENTS: HeaderValue = HeaderValue::from_static(EVENT_STREAM);
pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// 2026-07-28: the body's method, mirrored on every request POST.
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(super) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// How many one-way messages may wait; a server that floods us with requests while not
/// reading our answers cannot grow the queue past this.
pub(super) const ONE_WAY_QUEUE: usize = 1024;

/// How a request is sent and its reply read.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub(crate) struct SendOptions {
    /// Bytes of reply (bodies and streams, resumptions included) the request may receive.
    pub max_response_bytes: Option<u64>,
    /// Decodes the response with its result in the type the caller wants, in the same pass as
    /// the envelope ([`decode_result_as`]); `None` leaves the result raw.
    pub decode_result: Option<ResultDecoder>,
    /// Headers this request carries at a stateless revision, beyond those the exchange
    /// derives itself: `Mcp-Name` and the `Mcp-Param-*` headers of the tool's annotated
    /// arguments ([`crate::mcp::headers`]). Ignored at 2025-era revisions.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The request may be sent twice (it changes nothing on the server: the era probe,
    /// `initialize`, a listing, `tasks/get`), and until this instant (its deadline): answered
    /// 429 or 503, it is sent again after the server's `Retry-After` or a jittered backoff,
    /// as [`HttpConfig::overload`](super::HttpConfig::overload) allows. `None` (a
    /// `tools/call`): such an answer fails it at once.
    pub retry_until: Option<Instant>,
}

impl SendOptions {
    /// Options that decode the result as `R` in the same pass as the envelope.
    pub(crate) fn decoding<R: DeserializeOwned + Send + 'static>() -> Self {
        SendOptions {
            decode_result: Some(decode_result_as::<R>),
            ..SendOptions::default()
        }
    }

    /// These options with a byte budget for the reply.
    pub(crate) fn with_max_response_bytes(mut self, limit: Option<u64>) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// These options for a request that may be sent again after a 429 or 503 until
    /// `deadline` ([`retry_until`](Self::retry_until)).
    pub(crate) fn with_retry_until(mut self, deadline: Option<Instant>) -> Self {
        self.retry_until = deadline;
        self
    }

    /// These options with the request's `Mcp-Name` and `Mcp-Param-*` headers.
    pub(crate) fn with_headers(mut self, headers: Vec<(HeaderName, HeaderValue)>) -> Self {
        self.headers = headers;
        self
    }
}

impl Exchange {
    pub(super) fn dispatch(
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
        let is_listen = request.method == crate::mcp::methods::SUBSCRIPTIONS_LISTEN;
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
            nonce_resent: false,
            retry_until: limits.retry_until,
            overloads: 0,
            repost: None,
        };
        let mut op = Box::new(op);
        let extra = match self.learned.modern {
            true => usize::from(method_header.is_some()) + limits.headers.len(),
            false => 0,
        };
        let mut request = self.build(Method::POST, uri, body, ACCEPT_BOTH, extra);
        request.long_lived = is_listen;
        if self.learned.modern {
            if let Some(value) = method_header {
                request.headers.insert(MCP_METHOD, value);
            }
            for (name, value) in limits.headers {
                request.headers.insert(name, value);
            }
        }
        // Kept until the reply's head says whether the request is sent again: for a new token
        // (held refusals), or after an overloaded server's wait.
        if (self.hold_refusals && !legacy) || op.retry_until.is_some() {
            op.retained = Some(request.clone());
        }
        self.issue(Op::Request(op), request);
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
        let request = self.build(Method::POST, uri, body, ACCEPT_BOTH, 0);
        let deadline = match self.closing {
            Closing::Flushing { deadline, .. } => deadline.min(now + self.config.post_timeout),
            _ => now + self.config.post_timeout,
        };
        let stream = self.issue(Op::OneWay { deadline, barrier }, request);
        self.one_way_in_flight = Some(stream);
    }

    /// A one-way POST is over (answered, failed or timed out): the next goes out, and a
    /// delivered barrier releases what it held.
    pub(super) fn one_way_done(&mut self, stream: StreamId, barrier: bool, now: Instant) {
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

    fn message_uri(&self) -> Uri {
        self.learned
            .legacy_endpoint
            .clone()
            .unwrap_or_else(|| self.config.url.clone())
    }

    /// A request to the endpoint (or the legacy message endpoint) with every header this
    /// session needs, and room for `extra` headers the caller adds (`Mcp-Method`, `Mcp-Name`,
    /// `Mcp-Param-*`).
    pub(super) fn build(
        &self,
        method: Method,
        uri: Uri,
        body: Vec<u8>,
        accept: HeaderValue,
        extra: usize,
    ) -> HttpRequest {
        let authorization = self.authorization();
        let session = self
            .learned
            .session_id
            .as_ref()
            .filter(|_| !self.learned.modern);
        let version = self.learned.protocol_version;
        // The map is made once, at the size of every header the request will carry: these,
        // the caller's, and what the driver (`Host`) and hyper (`Content-Length`) add. Up to
        // six fit the small table, whose 624 bytes of entries glibc serves from its per-thread
        // cache; seven to twelve take 1,248 bytes, a large chunk, for which glibc first
        // consolidates its fast bins.
        let count = 3
            + usize::from(method == Method::POST)
            + usize::from(authorization.is_some())
            + self.config.headers.0.len()
            + usize::from(session.is_some())
            + usize::from(version.is_some())
            + extra;
        let mut headers = HeaderMap::with_capacity(count);
        headers.insert(ACCEPT, accept);
        if method == Method::POST {
            headers.insert(
                CONTENT_TYPE,
                const { HeaderValue::from_static("application/json") },
            );
        }
        if let Some(value) = authorization {
            headers.insert(AUTHORIZATION, value);
        }
        // Checked when added: none of them is a header set here.
        for header in &self.config.headers.0 {
            headers.insert(header.name.clone(), header.value.clone());
        }
        if let Some(value) = session {
            headers.insert(SESSION_ID, value.clone());
        }
        if let Some(version) = version {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version));
        }
        HttpRequest {
            long_lived: method == Method::GET,
            method,
            uri,
            headers,
            body,
        }
    }
}

/// The `Mcp-Method` value of a request: without a copy for the methods a client sends (a
/// `match`, which compares lengths first, to values checked when compiled).
pub(super) fn method_header(method: &str) -> Option<HeaderValue> {
    use crate::mcp::methods::*;
    macro_rules! known {
        ($($name:ident),*) => {
            match method {
                $($name => const { HeaderValue::from_static($name) },)*
                other => return HeaderValue::from_str(other).ok(),
            }
        };
    }
    Some(known!(
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
        TASKS_RESULT
    ))
}
