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

mod close;
pub(crate) mod config;
mod credentials;
mod flights;
mod legacy;
pub(crate) mod overload;
pub(crate) mod reply;
mod request;
mod resume;

pub(crate) use config::HttpConfig;
pub(crate) use config::default_port;
pub(crate) use credentials::Refusal;
#[cfg_attr(not(feature = "bindings"), allow(unused_imports))]
pub(crate) use credentials::auth_param;
pub(crate) use overload::WallClock;
#[cfg(test)]
pub(crate) use overload::tests::{assert_jittered_backoff, assert_rate_limited};
#[cfg_attr(not(feature = "bindings"), allow(unused_imports))]
pub(crate) use overload::{Jitter, given_up, is_overload, retry_after};
pub(crate) use reply::ResultDecoder;
pub(crate) use request::SendOptions;

use credentials::Parked;
use flights::Flights;
use reply::{
    ByteBudget, DRAIN_BYTES, DRAIN_TIMEOUT, ERROR_BODY_BYTES, ERROR_REPLY_BYTES, PrefixUse, Read,
    Reply, classify_reply, content_type, plain_reply,
};
use request::ONE_WAY_QUEUE;

use crate::idmap::IdMap;
use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};

use crate::jsonrpc::{Id, Message};
use crate::mcp::ProgressNotificationParams;
use crate::secret::Secret;
use crate::session::{Delivery, Failure, FailureKind, Resumption};
use crate::sse;

/// Names one HTTP request the exchange asked for, and its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct StreamId(u64);

/// An HTTP request to issue.
#[derive(Clone, Debug)]
pub(crate) struct HttpRequest {
    /// `POST`, `GET` or `DELETE`.
    pub method: Method,
    /// Where to.
    pub uri: Uri,
    /// Every header, the bearer token's marked sensitive.
    pub headers: HeaderMap,
    /// The body (empty for `GET` and `DELETE`).
    pub body: Vec<u8>,
    /// Its response stays open for as long as the session (a `GET` stream, a 2026-07-28
    /// `subscriptions/listen`): a transport that limits the requests in flight to an origin
    /// does not count it.
    pub long_lived: bool,
}

/// Why an HTTP request produced no response, or its body broke off.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum TransportError {
    /// No connection could be made: nothing was sent.
    Connect(String),
    /// The connection failed after the request may have been sent.
    Lost(String),
}

/// What the exchange asks of its driver.
#[non_exhaustive]
pub(crate) enum Output {
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
    /// A reply of the server's (any status: a 200 as well as a 401) carried one
    /// `DPoP-Nonce` (RFC 9449 section 9: a resource server may give a fresh nonce on any
    /// response): the proofs of the requests to come carry it. Handed out before what the
    /// reply itself leads to (its refusal, say). The value is as sent, at most
    /// `MAX_NONCE_HEADER_BYTES`; the DPoP state checks its grammar.
    DpopNonce(HeaderValue),
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
            Output::DpopNonce(nonce) => f.debug_tuple("DpopNonce").field(nonce).finish(),
            Output::Down(failure) => f.debug_tuple("Down").field(failure).finish(),
            Output::Closed { status } => f.debug_struct("Closed").field("status", status).finish(),
        }
    }
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
    /// It was sent again with the same token for a DPoP nonce (RFC 9449 section 9): once.
    nonce_resent: bool,
    /// It may be sent again after a 429 or 503 until this instant (its deadline): only a
    /// request that may be sent twice has one ([`SendOptions::retry_until`]).
    retry_until: Option<Instant>,
    /// How many times it was sent again after a 429 or 503.
    overloads: u32,
    /// The request to POST again when its wait after a 429 or 503 is over.
    repost: Option<HttpRequest>,
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
    /// The session id, kept as the header value every request carries (checked visible
    /// ASCII when learned): made once, shared by each request rather than copied into it.
    session_id: Option<HeaderValue>,
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
pub(crate) struct Exchange {
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
    flights: Flights,
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
    jitter: overload::Jitter,
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
    pub(crate) fn new(config: HttpConfig, seed: u64) -> Self {
        Exchange {
            secrets: config.secrets(),
            bearer: config.bearer_token.clone(),
            hold_refusals: false,
            parked: IdMap::default(),
            config: Arc::new(config),
            learned: Learned::default(),
            flights: Flights::default(),
            waiting: Vec::new(),
            one_way: VecDeque::new(),
            one_way_in_flight: None,
            held: VecDeque::new(),
            barrier_pending: false,
            server_stream_opened: false,
            closing: Closing::Open,
            next_stream: 0,
            jitter: overload::Jitter::new(seed),
            outputs: VecDeque::new(),
            decoded: Vec::new(),
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The session id the server assigned, if any.
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.learned
            .session_id
            .as_ref()
            .and_then(|id| id.to_str().ok())
    }

    /// Whether the server turned out to speak the legacy HTTP+SSE transport.
    pub(crate) fn is_legacy(&self) -> bool {
        self.learned.legacy_endpoint.is_some()
    }

    /// Sets the negotiated revision, sent as `MCP-Protocol-Version` on every later request.
    pub(crate) fn set_protocol_version(&mut self, version: &'static str) {
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
    pub(crate) fn set_modern(&mut self, version: Option<&'static str>) {
        self.learned.modern = version.is_some();
        self.learned.protocol_version = version;
    }

    /// Whether the exchange speaks a stateless revision.
    #[cfg(test)]
    pub(crate) fn is_modern(&self) -> bool {
        self.learned.modern
    }

    /// Writes a line of the driver's to the wire log (redacted like the exchange's own), such
    /// as the era verdict.
    pub(crate) fn note(&self, line: &str) {
        self.log(|| line.to_owned());
    }

    /// Sends a message of the session's: a request gets a POST of its own and its reply is
    /// read until the session settles it; notifications and responses are POSTed one at a
    /// time, in order. A `barrier` message (`notifications/initialized`) holds everything
    /// after it until it is delivered.
    pub(crate) fn send(
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

    /// The session settled request `id`: `answered` when a response came (its stream is read
    /// on briefly, so its connection can be reused), otherwise (timeout, cancel, close) its
    /// stream is closed at once; on HTTP, closing the stream is how a request is abandoned.
    pub(crate) fn finish(&mut self, id: &Id, answered: bool, now: Instant) {
        self.parked.remove(id);
        self.waiting
            .retain(|(_, op)| !matches!(op, Op::Request(r) if &r.id == id));
        let Some(stream) = self.flights.take_stream_of(id) else {
            return;
        };
        let Some(flight) = self.flights.get(&stream) else {
            return;
        };
        match (&flight.read, answered) {
            (Read::Events, true) => self.flights.set_read(
                stream,
                Read::Drain {
                    read: 0,
                    deadline: now + DRAIN_TIMEOUT,
                },
            ),
            _ => self.abort(stream),
        }
    }

    /// The next instant at which [`handle_timeout`](Exchange::handle_timeout) has work to do.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let waiting = self.waiting.iter().map(|(at, _)| *at);
        let closing = match self.closing {
            Closing::Flushing { deadline, .. } => Some(deadline),
            _ => None,
        };
        self.flights
            .next_deadline()
            .into_iter()
            .chain(waiting)
            .chain(closing)
            .min()
    }

    /// Does what is due at `now`: resumes streams whose wait is over, gives up on one-way
    /// POSTs, drains and `DELETE`s that took too long.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        // Closing's deadline first: nothing more goes out once it has passed.
        if let Closing::Flushing {
            deadline, status, ..
        } = self.closing
            && deadline <= now
        {
            self.one_way.clear();
            self.closed(status);
        }
        for stream in self.flights.take_due(now) {
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
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The response head of `stream` arrived, at `now` and at wall-clock time `wall` (read by
    /// the driver with the head, for a `Retry-After` HTTP-date that comes without a `Date`).
    pub(crate) fn handle_head(
        &mut self,
        stream: StreamId,
        status: StatusCode,
        headers: &HeaderMap,
        wall: WallClock,
        now: Instant,
    ) {
        // Nearly every head is a request's 2xx with a body to read: set up where its flight
        // is, rather than taken out of the flight map and put back.
        let sse = self.config.limits.sse;
        if let Some(Flight {
            op: Op::Request(op),
            read: read @ Read::Head,
        }) = self.flights.get_mut(&stream)
            && let Some(body) = plain_reply(op, status, headers, sse)
        {
            *read = body;
            if let Some(nonce) = credentials::dpop_nonce(headers) {
                self.outputs.push_back(Output::DpopNonce(nonce));
            }
            self.log_head(status, headers);
            return;
        }
        let Some(mut flight) = self.flights.remove(&stream) else {
            return;
        };
        if !matches!(flight.read, Read::Head) {
            self.flights.insert(stream, flight);
            return;
        }
        if let Some(nonce) = credentials::dpop_nonce(headers) {
            self.outputs.push_back(Output::DpopNonce(nonce));
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
            Op::Request(op) => self.request_head(stream, op, status, headers, wall, now),
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
                    // An overloaded server's own wait, when it gave one, comes before the
                    // backoff: coming back sooner is what it asked us not to do.
                    let wait = is_overload(status)
                        .then(|| retry_after(headers, wall))
                        .flatten();
                    self.schedule_reopen(Op::ServerStream(state), "was refused", wait, now);
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
    pub(crate) fn handle_body(&mut self, stream: StreamId, chunk: &[u8], now: Instant) {
        // Nearly every chunk is a request's reply: read where its flight is, rather than
        // taken out of the map and put back for each chunk. The flights are out of `self`
        // while the chunk is read (reading an event stream needs the rest of it, and touches
        // no flight); a reply being read has no deadline for the change to move.
        let mut flights = std::mem::take(&mut self.flights);
        let read = match flights.get_mut(&stream) {
            Some(Flight {
                op: Op::Request(op),
                read: Read::Json(collected),
            }) => Some(
                self.json_chunk(op, collected, chunk)
                    .map_err(|failure| (op.id.clone(), failure)),
            ),
            Some(Flight {
                op: Op::Request(op),
                read: Read::Events,
            }) => Some(
                self.request_events(op, chunk)
                    .map_err(|failure| (op.id.clone(), failure)),
            ),
            _ => None,
        };
        self.flights = flights;
        match read {
            Some(Ok(())) => return,
            Some(Err((id, failure))) => {
                self.flights.remove(&stream);
                self.outputs.push_back(Output::Abort(stream));
                self.fail(id, failure);
                return;
            }
            None => {}
        }
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

    /// A chunk of a request's JSON reply, within the request's budget and the body limit.
    fn json_chunk(
        &self,
        op: &mut RequestOp,
        collected: &mut Vec<u8>,
        chunk: &[u8],
    ) -> Result<(), Failure> {
        op.budget.take(chunk.len())?;
        let limit = self.config.limits.max_body_bytes;
        if collected.len() + chunk.len() > limit {
            return Err(Failure::new(
                FailureKind::LimitExceeded,
                Delivery::MayHaveReached,
                format!("the reply body is larger than the {limit}-byte limit"),
            ));
        }
        collected.extend_from_slice(chunk);
        Ok(())
    }

    #[cfg(feature = "tracing")]
    /// The id of the request whose response `stream` carries, if it carries one (for a
    /// driver that attributes what happens on the stream to the request's caller).
    pub(crate) fn request_on(&self, stream: StreamId) -> Option<&Id> {
        match &self.flights.get(&stream)?.op {
            Op::Request(op) => Some(&op.id),
            _ => None,
        }
    }

    /// `stream`'s body ended.
    pub(crate) fn handle_end(&mut self, stream: StreamId, now: Instant) {
        self.stream_over(stream, None, now);
    }

    /// `stream` failed: no response came (`Connect`: nothing was sent), or its body broke off.
    pub(crate) fn handle_error(&mut self, stream: StreamId, error: TransportError, now: Instant) {
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
                self.schedule_reopen(Op::ServerStream(state), &why, None, now);
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

    // --- helpers --------------------------------------------------------------------------

    fn issue(&mut self, op: Op, request: HttpRequest) -> StreamId {
        let stream = StreamId(self.next_stream);
        self.next_stream += 1;
        self.flights.issue(
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

/// The failure of a request whose reply passed its byte budget (`max_response_bytes`).
pub(crate) fn over_budget(limit: u64) -> Failure {
    Failure::new(
        FailureKind::ReplyOverBudget { limit },
        Delivery::MayHaveReached,
        format!("the reply is larger than the {limit}-byte output limit"),
    )
}
