//! The client session state machine: request ids, pending requests and their deadlines,
//! routing of what the server sends, server requests, cancellation, version negotiation and,
//! per request, what is known about its delivery.
//!
//! Public here: the session's configuration ([`Config`], [`EraPolicy`], [`ResumePolicy`]) and
//! the failures it reports ([`Failure`], the [`source`](std::error::Error::source) of an
//! [`Error`](crate::Error) whose request failed, with its [`FailureKind`] and [`Delivery`]).
//! The machine itself is internal: the connection machine under the client drives it.
//!
//! Sans-IO in the manner of quinn-proto and str0m: no sockets, no runtime, no clock. The
//! transport driver feeds it messages (`Session::handle_message`), transport facts
//! (`Session::fail_request`) and the time (`Session::handle_timeout`); it asks
//! `Session::poll_timeout` when to wake up next and drains `Session::poll_output` for
//! messages to send, settled requests, progress and notifications.
//!
//! # Run loop
//!
//! ```text
//! session.start(now)
//! loop {
//!     while let Some(output) = session.poll_output() {
//!         match output {
//!             Output::Transmit(t) => transport.send(t.message),      // may later call fail_request
//!             Output::Settled(s) => hand s.outcome to whoever waits on s.id,
//!             Output::Progress { .. } | Output::Notification(_) => forward to the host,
//!         }
//!     }
//!     wait for: a message from the transport -> session.handle_message(m, now)
//!               the deadline session.poll_timeout() -> session.handle_timeout(now)
//!               a call from the host -> session.request(..) / session.cancel(..)
//! }
//! ```
//!
//! # Protocol eras
//!
//! Revisions 2024-11-05 to 2025-11-25 open a session with `initialize`. The stateless
//! 2026-07-28 revision drops the handshake and carries the version in each request's `_meta`.
//! The handshake lives in `Phase`; a stateless era becomes another way into `Ready` (no
//! initialize round trip, a `_meta` stamp on each request) while ids, routing, deadlines,
//! cancellation and delivery tracking, which both eras share, stay as they are.

mod failure;
mod resume;

#[cfg(test)]
mod tests;

use crate::deadlines::Deadlines;
use crate::idmap::IdMap;
use std::any::Any;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;

use crate::jsonrpc::{self, ErrorObject, Id, Message, Notification, Request, Response};
use crate::mcp::modern::{self, EraVerdict};
use crate::mcp::{
    self, CancelledNotificationParams, ClientCapabilities, Implementation, InitializeRequestParams,
    InitializeResult, ProgressNotificationParams, ProgressToken, ProtocolVersion, methods,
};

pub(crate) use failure::Cause;
pub use failure::{Delivery, Failure, FailureKind};
pub use resume::ResumePolicy;
pub(crate) use resume::Resumption;

/// What a session needs to know before it starts.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Who the client is (`clientInfo`).
    pub client_info: Implementation,
    /// What the client supports. The default declares nothing: no roots, sampling or
    /// elicitation, so servers should not send those requests.
    pub capabilities: ClientCapabilities,
    /// How the session finds out which era the server speaks.
    pub era: EraPolicy,
    /// The stateless revisions probed with and accepted from `server/discover`, newest
    /// preferred.
    pub modern_versions: Vec<ProtocolVersion>,
    /// How long the era probe may take.
    pub probe_timeout: Duration,
    /// Whether a probe that gets no answer in time, or whose connection ends, means a
    /// 2025-era server. True for stdio, where an old server may ignore an unknown first
    /// message or exit on it (`2026-07-28/basic/transports/stdio.mdx`); false for HTTP, where a
    /// server that does not answer is down, whatever its era.
    pub silent_probe_means_legacy: bool,
    /// The revision offered in `initialize`.
    pub offered_version: ProtocolVersion,
    /// The revisions accepted in the server's answer; anything else fails the handshake.
    pub accepted_versions: Vec<ProtocolVersion>,
    /// How long the initialize round trip may take.
    pub initialize_timeout: Duration,
    /// The most requests in flight at once; more are refused without being sent.
    pub max_pending_requests: usize,
    /// Whether the server's requests for input (`elicitation/create`,
    /// `sampling/createMessage`, `roots/list` at 2025-era revisions) go to the driver as
    /// `Output::ServerRequest`, for a handler to answer (`Session::answer_server_request`).
    /// Off by default: the session answers them itself (elicitation ends the calls in flight
    /// with an unknown outcome; the others get `-32601`).
    pub forward_input_requests: bool,
}

/// The most server requests waiting for the driver's answer at once; more are answered with
/// an error at once (a server cannot grow the table).
const MAX_FORWARDED_REQUESTS: usize = 64;

/// How a session learns the server's era.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum EraPolicy {
    /// Probe with `server/discover`; fall back to `initialize` when the answer says the
    /// server is a 2025-era one (`2026-07-28/basic/versioning.mdx`).
    #[default]
    Auto,
    /// Open with `initialize`, as a 2025-era client does.
    Legacy,
    /// The server is known to speak this stateless revision (a verdict cached from an earlier
    /// probe): the session is ready at once, and the first message sent is the first request.
    Modern(ProtocolVersion),
}

impl Default for Config {
    fn default() -> Self {
        Config {
            client_info: Implementation::new("mcpwire", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            era: EraPolicy::Auto,
            modern_versions: mcp::MODERN.to_vec(),
            probe_timeout: Duration::from_secs(10),
            silent_probe_means_legacy: false,
            offered_version: ProtocolVersion::LATEST_INITIALIZE,
            accepted_versions: mcp::SUPPORTED.to_vec(),
            initialize_timeout: Duration::from_secs(30),
            max_pending_requests: 1024,
            forward_input_requests: false,
        }
    }
}

/// Deadlines and routing for one request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub(crate) struct RequestOptions {
    /// The request fails with [`FailureKind::Timeout`] this long after it is made.
    pub timeout: Duration,
    /// If set, the request also fails ([`FailureKind::IdleTimeout`]) when this long passes
    /// without a progress notification for it; the hard `timeout` still caps the total.
    pub idle_timeout: Option<Duration>,
    /// The `progressToken` the caller put in the request's `_meta`; progress notifications
    /// carrying it are reported for this request.
    pub progress_token: Option<ProgressToken>,
}

impl RequestOptions {
    /// A request with a hard timeout and nothing else.
    pub(crate) fn with_timeout(timeout: Duration) -> Self {
        RequestOptions {
            timeout,
            idle_timeout: None,
            progress_token: None,
        }
    }
}

/// What the session asks of its driver.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum Output {
    /// The handshake is done: the negotiated revision and the server's `initialize` answer,
    /// parsed once. Comes before the `notifications/initialized` transmit, so a transport can
    /// put the version on that message already, and before the initialize request is settled.
    Ready(Box<Ready>),
    /// Send this message to the server.
    Transmit(Transmit),
    /// A request is finished: its result, or why it failed.
    Settled(Settled),
    /// A progress notification for a pending request.
    Progress {
        /// The request it is about.
        id: Id,
        /// The notification's params.
        params: ProgressNotificationParams,
    },
    /// A notification for the host: logging messages and list changes. Other notifications are
    /// ignored by the session.
    Notification(Notification<'static>),
    /// A request of the server's for the client's input, to answer with
    /// [`Session::answer_server_request`] ([`Config::forward_input_requests`]).
    ServerRequest(Request<'static>),
}

/// The outcome of a successful handshake.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub(crate) struct Ready {
    /// The revision both sides speak.
    pub version: ProtocolVersion,
    /// What the server said of itself: its answer to `initialize`, or at a stateless revision
    /// its `server/discover` result in the same shape. `None` when the era was known
    /// beforehand ([`EraPolicy::Modern`]) and nothing was asked.
    pub server: Option<InitializeResult>,
}

/// A message to send.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) struct Transmit {
    /// The message.
    pub message: Message<'static>,
    /// The message must be delivered before anything queued after it goes out
    /// (`notifications/initialized`: no request may overtake it). A transport that sends
    /// messages concurrently holds later ones back until this one is delivered.
    pub barrier: bool,
}

impl Transmit {
    /// The id when the message is a request of ours, whose answer the driver must read.
    pub(crate) fn request_id(&self) -> Option<&Id> {
        match &self.message {
            Message::Request(request) => Some(&request.id),
            _ => None,
        }
    }
}

/// A finished request.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) struct Settled {
    /// The request's id.
    pub id: Id,
    /// The `result`, or why there is none.
    pub outcome: Result<Payload, Failure>,
}

impl Settled {
    /// Whether the server answered the request (a result or a JSON-RPC error, or a failure
    /// the transport saw while reading the answer), as opposed to our giving up on it
    /// (timeout, cancel, close, elicitation). A transport reads an answered request's stream
    /// on briefly, so its connection can be reused, and closes an abandoned one at once.
    pub(crate) fn answered(&self) -> bool {
        match &self.outcome {
            Ok(_) => true,
            Err(failure) => !matches!(
                failure.kind,
                FailureKind::Timeout
                    | FailureKind::IdleTimeout
                    | FailureKind::Cancelled
                    | FailureKind::Closed
                    | FailureKind::ElicitationRequested
            ),
        }
    }
}

/// A request's `result`: the raw JSON, or already decoded, in the same pass as its envelope,
/// into the type the request's caller asked the transport for
/// ([`Session::handle_decoded_response`]).
#[non_exhaustive]
pub(crate) enum Payload {
    /// The result as the server sent it.
    Raw(Box<RawValue>),
    /// The result decoded; the caller who asked for the type downcasts it.
    Decoded(Box<dyn Any + Send>),
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Raw(raw) => f.debug_tuple("Raw").field(raw).finish(),
            Payload::Decoded(_) => f.write_str("Decoded(..)"),
        }
    }
}

/// Where the session is in its life.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum Phase {
    /// Created; `start` has not been called.
    New,
    /// The era probe (`server/discover`) is in flight.
    Probing,
    /// `initialize` is in flight.
    Initializing,
    /// The handshake is done; requests may be made.
    Ready {
        /// The revision both sides speak.
        version: ProtocolVersion,
    },
    /// The handshake failed, or the session was closed; nothing more is sent.
    Closed,
}

/// A request in flight.
#[derive(Debug)]
struct Pending {
    /// The request is a `tools/call` (what an `elicitation/create` ends).
    call: bool,
    delivery: Delivery,
    deadline: Instant,
    idle: Option<(Duration, Instant)>,
    progress_token: Option<ProgressToken>,
}

impl Pending {
    fn next_deadline(&self) -> Instant {
        match self.idle {
            Some((_, idle_deadline)) => idle_deadline.min(self.deadline),
            None => self.deadline,
        }
    }
}

/// A pending request's deadline now, as [`Deadlines`] asks for it.
fn deadline_in(pending: &IdMap<Id, Pending>) -> impl Fn(&Id) -> Option<Instant> + '_ {
    |id| pending.get(id).map(Pending::next_deadline)
}

/// Why a request was refused before anything was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum RequestError {
    /// The handshake has not completed.
    NotReady,
    /// The session is closed (by the host, a failed handshake, or a lost connection).
    Closed,
    /// The server did not declare the capability the method needs.
    CapabilityMissing {
        /// The method.
        method: String,
        /// The capability it needs.
        capability: &'static str,
    },
    /// Too many requests are in flight.
    TooManyPending {
        /// The limit.
        limit: usize,
    },
    /// The revision the session speaks has no such request (`ping` or `initialize` at
    /// 2026-07-28), or the request cannot carry the revision's `_meta` envelope (params that
    /// are not an object).
    NotInRevision {
        /// The method.
        method: String,
        /// The revision.
        version: ProtocolVersion,
    },
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::NotReady => f.write_str("the session is not ready"),
            RequestError::Closed => f.write_str("the session is closed"),
            RequestError::CapabilityMissing { method, capability } => write!(
                f,
                "the server does not declare the `{capability}` capability that `{method}` needs"
            ),
            RequestError::TooManyPending { limit } => {
                write!(f, "{limit} requests are already in flight")
            }
            RequestError::NotInRevision { method, version } => {
                write!(
                    f,
                    "`{method}` cannot be sent at protocol revision {version}"
                )
            }
        }
    }
}

impl std::error::Error for RequestError {}

/// The client side of one MCP session.
#[derive(Debug)]
pub(crate) struct Session {
    config: Config,
    phase: Phase,
    server: Option<InitializeResult>,
    next_id: i64,
    /// The handshake's request: the probe while probing, then `initialize` if the server
    /// turned out to be a 2025-era one.
    initialize_id: Option<Id>,
    /// The revision the probe in flight names, and whether it is the corrected second try.
    probe: Option<(ProtocolVersion, bool)>,
    /// The `_meta` envelope of every request, once a stateless revision is spoken.
    envelope: Option<Arc<modern::Stamp>>,
    /// The trace context the handshake's requests carry in `_meta` (the probe, `initialize`).
    handshake_trace: Option<crate::mcp::TraceContext>,
    /// The latest time an input carried: the deadline of a request the session queues in
    /// answer to an input that carries no time (a corrected probe after a transport failure).
    last_now: Option<Instant>,
    pending: IdMap<Id, Pending>,
    /// When each of `pending` times out next, earliest first (see [`Deadlines`]).
    deadlines: Deadlines<Id>,
    progress_routes: IdMap<ProgressToken, Id>,
    outputs: VecDeque<Output>,
    /// The ids of the server requests handed to the driver and not answered yet.
    forwarded: std::collections::HashSet<Id>,
    /// Responses that arrived for no pending request that was sent (late after a timeout or
    /// cancel, unknown ids, or ids of requests still queued): dropped, counted for diagnostics.
    dropped_responses: u64,
}

impl Session {
    /// A session that will offer `config.offered_version`.
    pub(crate) fn new(config: Config) -> Self {
        Session {
            config,
            phase: Phase::New,
            server: None,
            next_id: 0,
            initialize_id: None,
            probe: None,
            envelope: None,
            handshake_trace: None,
            last_now: None,
            pending: IdMap::default(),
            deadlines: Deadlines::default(),
            progress_routes: IdMap::default(),
            outputs: VecDeque::new(),
            forwarded: std::collections::HashSet::new(),
            dropped_responses: 0,
        }
    }

    /// Opens the session as [`Config::era`] says. [`EraPolicy::Auto`] queues the era probe,
    /// `server/discover` at the newest of [`Config::modern_versions`]: a discover result
    /// makes the session ready at a stateless revision ([`Output::Ready`]); a `-32022` naming
    /// a revision in common repeats the probe once at it; anything that says the server does
    /// not know the method queues `initialize`, as [`EraPolicy::Legacy`] does at once. An
    /// answer that is no verdict (401, 403, a 5xx, no answer over HTTP) fails the probe and
    /// closes the session. [`EraPolicy::Modern`] is ready at once.
    ///
    /// `initialize` (its id is then [`initialize_id`](Session::initialize_id)): its answer
    /// moves the session to [`Phase::Ready`], reports [`Output::Ready`] and queues
    /// `notifications/initialized`, or, when the server's revision is not accepted or the
    /// answer is not an initialize result, moves it to [`Phase::Closed`]. Either way the
    /// handshake request is settled like any other.
    pub(crate) fn start(&mut self, now: Instant) {
        if !matches!(self.phase, Phase::New) {
            return;
        }
        self.last_now = Some(now);
        match self.config.era.clone() {
            EraPolicy::Legacy => self.start_initialize(now),
            EraPolicy::Modern(version) => self.become_modern(version, None),
            EraPolicy::Auto => match self.config.modern_versions.iter().copied().max() {
                Some(version) => self.send_probe(version, false, now),
                None => self.start_initialize(now),
            },
        }
    }

    /// Puts `trace` in the `_meta` of the handshake's requests (the era probe and
    /// `initialize`, each time either is sent); set before [`start`](Self::start).
    pub(crate) fn set_handshake_trace(&mut self, trace: Option<crate::mcp::TraceContext>) {
        self.handshake_trace = trace;
    }

    fn start_initialize(&mut self, now: Instant) {
        self.probe = None;
        let params = InitializeRequestParams::new(
            self.config.offered_version,
            legacy_capabilities(&self.config.capabilities),
            self.config.client_info.clone(),
        );
        let params = serde_json::value::to_raw_value(&params).ok();
        let params = match (&self.handshake_trace, params) {
            (Some(trace), Some(params)) => trace.inject(Some(&params)).ok(),
            (_, params) => params,
        };
        let id = self.enqueue_request(
            Cow::Borrowed(methods::INITIALIZE),
            params,
            RequestOptions::with_timeout(self.config.initialize_timeout),
            now,
        );
        self.initialize_id = Some(id);
        self.phase = Phase::Initializing;
    }

    fn envelope_at(&self, version: ProtocolVersion) -> modern::Envelope {
        modern::Envelope {
            version,
            capabilities: self.config.capabilities.clone(),
            client_info: self.config.client_info.clone(),
        }
    }

    fn send_probe(&mut self, version: ProtocolVersion, corrected: bool, now: Instant) {
        let traced = self
            .handshake_trace
            .as_ref()
            .and_then(|trace| trace.inject(None).ok());
        let params = self.envelope_at(version).stamp(traced.as_deref()).ok();
        let id = self.enqueue_request(
            Cow::Borrowed(methods::SERVER_DISCOVER),
            params,
            RequestOptions::with_timeout(self.config.probe_timeout),
            now,
        );
        self.initialize_id = Some(id);
        self.probe = Some((version, corrected));
        self.phase = Phase::Probing;
    }

    /// The revision the era probe in flight names (a transport puts it in its headers).
    pub(crate) fn probe_version(&self) -> Option<ProtocolVersion> {
        match self.phase {
            Phase::Probing => self.probe.map(|(version, _)| version),
            _ => None,
        }
    }

    fn become_modern(&mut self, version: ProtocolVersion, server: Option<InitializeResult>) {
        self.probe = None;
        self.envelope = Some(Arc::new(modern::Stamp::new(self.envelope_at(version))));
        self.phase = Phase::Ready { version };
        self.server.clone_from(&server);
        self.outputs
            .push_back(Output::Ready(Box::new(Ready { version, server })));
    }

    /// The probe's answer or failure. Returns the failure when it is no era verdict.
    fn finish_probe(&mut self, id: Id, outcome: Result<Payload, Failure>, now: Instant) {
        let (corrected, ours) = (
            self.probe.is_some_and(|(_, corrected)| corrected),
            self.config.modern_versions.clone(),
        );
        let verdict = match &outcome {
            Ok(Payload::Raw(raw)) => {
                let (verdict, result) = modern::era_from_result(raw, &ours);
                if let (EraVerdict::Modern(version), Some(result)) = (&verdict, result) {
                    let server = described(&result, *version);
                    self.become_modern(*version, Some(server));
                    self.settle(id, outcome);
                    return;
                }
                verdict
            }
            Ok(Payload::Decoded(_)) => EraVerdict::Legacy("an unreadable answer".to_owned()),
            Err(failure) => match failure.kind {
                FailureKind::ServerError { code } => {
                    modern::era_from_error(code, failure.data(), &ours)
                }
                // A 4xx without a JSON-RPC error in its body, or a body that is not MCP: a
                // server that does not know the method (`streamable-http.mdx`, "Backward
                // compatibility").
                FailureKind::HttpStatus { status } if (400..500).contains(&status) => {
                    EraVerdict::Legacy(failure.detail.clone())
                }
                FailureKind::Protocol => EraVerdict::Legacy(failure.detail.clone()),
                FailureKind::Timeout | FailureKind::ConnectionLost | FailureKind::Closed
                    if self.config.silent_probe_means_legacy =>
                {
                    EraVerdict::Legacy(failure.detail.clone())
                }
                // The probe never reached the server: authorization failed first, and the
                // detail names the step (a metadata request, the code exchange, a refresh...).
                FailureKind::Unauthorized { .. } => {
                    self.settle(id, outcome);
                    self.close();
                    return;
                }
                _ => {
                    let failure = Failure::new(
                        failure.kind.clone(),
                        failure.delivery,
                        format!("the era probe (server/discover) failed: {}", failure.detail),
                    )
                    .with_cause(failure.cause().cloned());
                    self.settle(id, Err(failure));
                    self.close();
                    return;
                }
            },
        };
        match verdict {
            EraVerdict::Modern(_) | EraVerdict::Legacy(_) => {
                trace_info!("era fallback: the server speaks a 2025-era revision; initializing");
                // The probe is over; its id is never reused, so an answer arriving late is
                // dropped.
                self.settle(
                    id,
                    Err(Failure::new(
                        FailureKind::Protocol,
                        Delivery::Answered,
                        "the server speaks a 2025-era revision",
                    )),
                );
                self.start_initialize(now);
            }
            EraVerdict::Retry(version) if !corrected => {
                trace_info!(
                    protocol_version = version.as_str(),
                    "the era probe was refused at its revision: probing again at one the \
                     server named"
                );
                self.settle(
                    id,
                    Err(Failure::new(
                        FailureKind::UnsupportedVersion,
                        Delivery::Answered,
                        "probing again at a revision the server named",
                    )),
                );
                self.send_probe(version, true, now);
            }
            EraVerdict::Retry(version) => {
                self.settle(
                    id,
                    Err(Failure::new(
                        FailureKind::UnsupportedVersion,
                        Delivery::Answered,
                        format!(
                            "the server rejected the era probe at {version}, a revision it \
                             says it supports, twice"
                        ),
                    )),
                );
                self.close();
            }
            EraVerdict::NoCommonVersion(theirs) => {
                self.settle(
                    id,
                    Err(Failure::new(
                        FailureKind::UnsupportedVersion,
                        Delivery::Answered,
                        format!(
                            "the server speaks only {}; this client speaks {}",
                            theirs.join(", "),
                            ours.iter()
                                .map(|v| v.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )),
                );
                self.close();
            }
        }
    }

    /// The connection of a stdio server ended during the era probe (it exited on the unknown
    /// first message, as some 2025-era servers do): when silence means a 2025-era server, the
    /// probe is withdrawn and `initialize` queued, for the driver to send to the server it
    /// starts again. Returns whether it did.
    pub(crate) fn probe_lost(&mut self, now: Instant) -> bool {
        if !matches!(self.phase, Phase::Probing) || !self.config.silent_probe_means_legacy {
            return false;
        }
        if let Some(id) = self.initialize_id.take() {
            self.withdraw(&id);
        }
        self.start_initialize(now);
        true
    }

    /// Takes back a handshake request the server never processed: no longer pending, not
    /// settled, and not sent if it is still queued.
    fn withdraw(&mut self, id: &Id) {
        if let Some(pending) = self.remove_pending(id) {
            self.forget_route(&pending);
        }
        self.outputs
            .retain(|output| !matches!(output, Output::Transmit(t) if t.request_id() == Some(id)));
    }

    /// The id of the initialize request in flight (or last sent), once `start` was called.
    pub(crate) fn initialize_id(&self) -> Option<&Id> {
        self.initialize_id.as_ref()
    }

    /// The server speaks only the legacy HTTP+SSE transport (2024-11-05), which the transport
    /// found out while delivering `initialize`. The initialize request in flight is withdrawn
    /// (not settled: the server never processed it), the session accepts and offers 2024-11-05
    /// from now on, and initialize is queued again, under the same id (it starts a new
    /// session on the legacy transport) and with a fresh deadline. Ignored unless the
    /// handshake is in progress.
    pub(crate) fn downgrade_to_legacy(&mut self, now: Instant) {
        if !matches!(self.phase, Phase::Initializing) {
            return;
        }
        let Some(old) = self.initialize_id.take() else {
            return;
        };
        self.withdraw(&old);
        let legacy = ProtocolVersion::V2024_11_05;
        self.config.offered_version = legacy;
        if !self.config.accepted_versions.contains(&legacy) {
            self.config.accepted_versions.push(legacy);
        }
        let next_id = self.next_id;
        if let Id::Number(number) = old {
            self.next_id = number;
        }
        self.start_initialize(now);
        self.next_id = self.next_id.max(next_id);
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// Where the session stands.
    pub(crate) fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The negotiated revision, once ready.
    pub(crate) fn protocol_version(&self) -> Option<ProtocolVersion> {
        match self.phase {
            Phase::Ready { version } => Some(version),
            _ => None,
        }
    }

    /// Whether the server declared task-augmented `tools/call`
    /// (`capabilities.tasks.requests.tools.call`, 2025-11-25).
    pub(crate) fn server_offers_tool_tasks(&self) -> bool {
        self.server
            .as_ref()
            .and_then(|server| server.capabilities.tasks.as_ref())
            .and_then(|tasks| tasks.pointer("/requests/tools/call"))
            .is_some_and(serde_json::Value::is_object)
    }

    /// The server's answer to `initialize`, once received and accepted.
    #[cfg(test)]
    pub(crate) fn server(&self) -> Option<&InitializeResult> {
        self.server.as_ref()
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// Whether a request is still pending.
    pub(crate) fn is_pending(&self, id: &Id) -> bool {
        self.pending.contains_key(id)
    }

    /// How many responses were dropped because no request was waiting for them.
    #[cfg(test)]
    pub(crate) fn dropped_responses(&self) -> u64 {
        self.dropped_responses
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// Queues a request. Refused, with nothing sent, when the session is not ready, when the
    /// server lacks the capability the method needs, or when too many requests are pending.
    pub(crate) fn request(
        &mut self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
        now: Instant,
    ) -> Result<Id, RequestError> {
        let method = Cow::Owned(method.to_owned());
        self.request_stamped(method, params, options, None, now)
    }

    /// The stamp this session puts on every request, at a stateless revision; a new one
    /// when the revision changes.
    #[cfg(feature = "client")]
    pub(crate) fn stamp(&self) -> Option<&Arc<modern::Stamp>> {
        self.envelope.as_ref()
    }

    /// [`request`](Self::request), with params that already carry the envelope of `stamp`
    /// (written by [`modern::Stamp::write_members`]): taken as they are while `stamp` is the
    /// session's current one, stamped as usual otherwise. The method is borrowed when it is
    /// one of the crate's names (`methods::*`), so a request does not copy it.
    pub(crate) fn request_stamped(
        &mut self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
        stamp: Option<&Arc<modern::Stamp>>,
        now: Instant,
    ) -> Result<Id, RequestError> {
        match self.phase {
            Phase::Ready { .. } => {}
            Phase::Closed => return Err(RequestError::Closed),
            _ => return Err(RequestError::NotReady),
        }
        if let Some(capability) = self.missing_capability(&method) {
            return Err(RequestError::CapabilityMissing {
                method: method.into_owned(),
                capability,
            });
        }
        if self.pending.len() >= self.config.max_pending_requests {
            return Err(RequestError::TooManyPending {
                limit: self.config.max_pending_requests,
            });
        }
        let params = match &self.envelope {
            None => params,
            Some(envelope) => {
                let not_in_revision = || RequestError::NotInRevision {
                    method: method.to_string(),
                    version: envelope.envelope().version,
                };
                // 2026-07-28 removed these: a stateless server answers them -32601.
                if matches!(
                    &*method,
                    methods::INITIALIZE | methods::PING | methods::LOGGING_SET_LEVEL
                ) {
                    return Err(not_in_revision());
                }
                match (stamp, params) {
                    (Some(stamp), Some(params)) if Arc::ptr_eq(stamp, envelope) => Some(params),
                    (_, params) => Some(
                        envelope
                            .stamp(params.as_deref())
                            .map_err(|_| not_in_revision())?,
                    ),
                }
            }
        };
        Ok(self.enqueue_request(method, params, options, now))
    }

    /// The stateless revisions this client speaks (a `-32022` may switch to one of them).
    #[cfg(feature = "client")]
    pub(crate) fn modern_versions(&self) -> &[ProtocolVersion] {
        &self.config.modern_versions
    }

    /// Whether the session speaks a stateless revision (2026-07-28): every request carries
    /// the `_meta` envelope, and there is no session to end.
    pub(crate) fn is_modern(&self) -> bool {
        self.envelope.is_some()
    }

    /// Speaks `version` from now on, another stateless revision the server named in a
    /// `-32022` answer (the caller retries the rejected request once). Ignored unless the
    /// session is ready at a stateless revision.
    pub(crate) fn switch_version(&mut self, version: ProtocolVersion) {
        if self.envelope.is_some()
            && matches!(self.phase, Phase::Ready { .. })
            && version.is_modern()
        {
            self.envelope = Some(Arc::new(modern::Stamp::new(self.envelope_at(version))));
            self.phase = Phase::Ready { version };
        }
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// Queues a notification (for instance `notifications/roots/list_changed`). Ignored unless
    /// the session is ready.
    pub(crate) fn notify(&mut self, method: &str, params: Option<Box<RawValue>>) {
        if matches!(self.phase, Phase::Ready { .. }) {
            self.transmit(Message::notification(method.to_owned(), params));
        }
    }

    /// Cancels a pending request: it is settled at once as [`FailureKind::Cancelled`], a
    /// response arriving later is dropped, and, if it may have reached the server,
    /// `notifications/cancelled` is queued. A request still waiting in the output queue is
    /// withdrawn and never sent. `initialize` is never cancelled by notification (the
    /// specification forbids it); cancelling it closes the session.
    pub(crate) fn cancel(&mut self, id: &Id, reason: &str) {
        self.abandon(id, FailureKind::Cancelled, reason.to_owned());
    }

    /// Settles a request with a failure the transport observed: could not connect
    /// ([`Delivery::NotSent`]), refused at the HTTP level ([`Delivery::Refused`]), the
    /// connection or stream lost before the response ([`Delivery::MayHaveReached`]). Nothing is
    /// sent. Ignored when the request is no longer pending.
    pub(crate) fn fail_request(&mut self, id: &Id, failure: Failure) {
        if let Some(pending) = self.remove_pending(id) {
            self.forget_route(&pending);
            if self.is_probe(id) {
                let now = self.last_now.unwrap_or(pending.deadline);
                self.finish_probe(id.clone(), Err(failure), now);
                return;
            }
            self.settle(id.clone(), Err(failure));
        }
    }

    fn is_probe(&self, id: &Id) -> bool {
        matches!(self.phase, Phase::Probing) && self.initialize_id.as_ref() == Some(id)
    }

    /// The connection is gone for good: every pending request fails with `failure`'s kind and
    /// detail, keeping what is known of its own delivery (a request never handed out stays
    /// [`Delivery::NotSent`]), and the session closes.
    pub(crate) fn fail_all(&mut self, failure: &Failure) {
        let mut ids: Vec<Id> = self.pending.keys().cloned().collect();
        ids.sort();
        for id in ids {
            if let Some(pending) = self.remove_pending(&id) {
                self.forget_route(&pending);
                let delivery = if pending.delivery == Delivery::NotSent {
                    Delivery::NotSent
                } else {
                    failure.delivery
                };
                let failure = Failure::new(failure.kind.clone(), delivery, failure.detail.clone())
                    .with_cause(failure.cause().cloned());
                self.settle(id, Err(failure));
            }
        }
        self.close();
    }

    /// Closes the session: every pending request fails with [`FailureKind::Closed`] and nothing
    /// more is sent. Requests that may have reached the server keep that fact.
    pub(crate) fn close(&mut self) {
        self.phase = Phase::Closed;
        self.outputs
            .retain(|output| !matches!(output, Output::Transmit(_)));
        let mut ids: Vec<Id> = self.pending.keys().cloned().collect();
        ids.sort();
        for id in ids {
            if let Some(pending) = self.remove_pending(&id) {
                self.forget_route(&pending);
                let failure = Failure::new(
                    FailureKind::Closed,
                    pending.delivery,
                    "the session was closed",
                );
                self.settle(id, Err(failure));
            }
        }
    }

    /// Answers a server request that was handed out as [`Output::ServerRequest`]: its result,
    /// or the error to send. Ignored for an id that is not waiting (answered already, or
    /// never handed out).
    pub(crate) fn answer_server_request(
        &mut self,
        id: &Id,
        answer: Result<Box<RawValue>, ErrorObject<'static>>,
    ) {
        if !self.forwarded.remove(id) || matches!(self.phase, Phase::Closed) {
            return;
        }
        let response = match answer {
            Ok(result) => Response::ok(id.clone(), result),
            Err(error) => Response::error(Some(id.clone()), error),
        };
        self.transmit(Message::Response(response));
    }

    /// When request `id` in flight times out (its deadline, or its idle deadline if sooner),
    /// for a transport that waits on its behalf (an overloaded server's `Retry-After`) and
    /// must not wait past it.
    pub(crate) fn deadline_of(&self, id: &Id) -> Option<Instant> {
        self.pending.get(id).map(Pending::next_deadline)
    }

    /// The next instant at which [`handle_timeout`](Session::handle_timeout) has work to do.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines
            .next_checked(|| self.pending.values().map(Pending::next_deadline).min())
    }

    /// Takes request `id` out of the pending ones.
    fn remove_pending(&mut self, id: &Id) -> Option<Pending> {
        let pending = self.pending.remove(id)?;
        self.deadlines
            .prune_ended(id, self.pending.len(), deadline_in(&self.pending));
        Some(pending)
    }

    /// Fails every request whose deadline is at or before `now`, queuing
    /// `notifications/cancelled` for those that may have reached the server.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        // In id order (what `take_due` gives).
        let expired: Vec<(Id, FailureKind)> = self
            .deadlines
            .take_due(now, self.pending.len(), deadline_in(&self.pending))
            .into_iter()
            .filter_map(|id| {
                let kind = if self.pending.get(&id)?.deadline <= now {
                    FailureKind::Timeout
                } else {
                    FailureKind::IdleTimeout
                };
                Some((id, kind))
            })
            .collect();
        self.last_now = Some(now);
        for (id, kind) in expired {
            if self.is_probe(&id)
                && let Some(pending) = self.remove_pending(&id)
            {
                let failure = Failure::new(
                    kind,
                    pending.delivery,
                    "no answer to the era probe within the probe timeout",
                );
                self.finish_probe(id, Err(failure), now);
                continue;
            }
            let detail = match kind {
                FailureKind::IdleTimeout => "no progress within the idle timeout",
                _ => "the request timed out",
            };
            self.abandon(&id, kind, detail.to_owned());
        }
    }

    /// The next thing for the driver to do.
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        let output = self.outputs.pop_front()?;
        if let Output::Transmit(transmit) = &output
            && let Some(pending) = transmit
                .request_id()
                .and_then(|id| self.pending.get_mut(id))
        {
            // From here on the bytes may reach the server unless the transport says
            // otherwise.
            pending.delivery = Delivery::MayHaveReached;
        }
        Some(output)
    }

    /// Handles one message from the server.
    pub(crate) fn handle_message(&mut self, message: Message<'_>, now: Instant) {
        self.last_now = Some(now);
        match message {
            Message::Response(response) => self.handle_response(response),
            Message::Request(request) => self.handle_server_request(request),
            Message::Notification(notification) => self.handle_notification(notification, now),
        }
    }

    /// Handles a response whose result the transport decoded, in the same pass as its
    /// envelope, into the type the request's caller asked for (see [`Payload::Decoded`]). The
    /// same rules as for a response in [`handle_message`](Session::handle_message) apply.
    pub(crate) fn handle_decoded_response(&mut self, id: Id, result: Box<dyn Any + Send>) {
        self.accept_response(id, Ok(Payload::Decoded(result)));
    }

    /// Handles a progress notification the transport decoded in one pass (the same as a
    /// `notifications/progress` message in [`handle_message`](Session::handle_message)).
    pub(crate) fn handle_progress(&mut self, params: ProgressNotificationParams, now: Instant) {
        let Some(id) = self.progress_routes.get(&params.progress_token).cloned() else {
            return;
        };
        if let Some(pending) = self.pending.get_mut(&id) {
            let before = pending.next_deadline();
            if let Some((idle, deadline)) = &mut pending.idle {
                *deadline = now + *idle;
            }
            let after = pending.next_deadline();
            if after != before {
                self.deadlines.arm(
                    after,
                    id.clone(),
                    self.pending.len(),
                    deadline_in(&self.pending),
                );
            }
            self.outputs.push_back(Output::Progress { id, params });
        }
    }

    fn handle_response(&mut self, response: Response<'_>) {
        let Some(id) = response.id else {
            // An error about something unparseable we sent; nothing to settle.
            self.dropped_responses += 1;
            return;
        };
        let outcome = match response.outcome {
            Ok(result) => Ok(Payload::Raw(result.into_owned())),
            Err(error) => Err(Failure::from_error_object(&error)),
        };
        self.accept_response(id, outcome);
    }

    fn accept_response(&mut self, id: Id, outcome: Result<Payload, Failure>) {
        // A request still waiting in the output queue has not reached the server, so a
        // response naming it (a guessed or stale id) cannot be its answer: dropped, and the
        // request goes out and waits for its own.
        if self
            .pending
            .get(&id)
            .is_none_or(|p| p.delivery == Delivery::NotSent)
        {
            self.dropped_responses += 1;
            return;
        }
        let Some(pending) = self.remove_pending(&id) else {
            return;
        };
        self.forget_route(&pending);
        if self.is_probe(&id) {
            let now = self.last_now.unwrap_or(pending.deadline);
            self.finish_probe(id, outcome, now);
        } else if self.initialize_id.as_ref() == Some(&id) {
            self.finish_handshake(id, outcome);
        } else {
            self.settle(id, outcome);
        }
    }

    fn finish_handshake(&mut self, id: Id, outcome: Result<Payload, Failure>) {
        let outcome = outcome.and_then(|payload| {
            let malformed = |e: &dyn std::fmt::Display| {
                Failure::new(
                    FailureKind::Protocol,
                    Delivery::Answered,
                    format!("the initialize result is malformed: {e}"),
                )
            };
            let (result, payload): (InitializeResult, Payload) = match payload {
                Payload::Raw(raw) => (
                    serde_json::from_str(raw.get()).map_err(|e| malformed(&e))?,
                    Payload::Raw(raw),
                ),
                Payload::Decoded(decoded) => {
                    let result = *decoded
                        .downcast::<InitializeResult>()
                        .map_err(|_| malformed(&"decoded as another type"))?;
                    (result.clone(), Payload::Decoded(Box::new(result)))
                }
            };
            let version = result
                .protocol_version()
                .filter(|v| self.config.accepted_versions.contains(v))
                .ok_or_else(|| {
                    Failure::new(
                        FailureKind::UnsupportedVersion,
                        Delivery::Answered,
                        format!(
                            "the server answered with protocol version {:?}; this client \
                             accepts {}",
                            result.protocol_version,
                            self.config
                                .accepted_versions
                                .iter()
                                .map(|v| v.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                })?;
            Ok((payload, result, version))
        });
        match outcome {
            Ok((payload, result, version)) => {
                self.phase = Phase::Ready { version };
                self.outputs.push_back(Output::Ready(Box::new(Ready {
                    version,
                    server: Some(result.clone()),
                })));
                self.server = Some(result);
                self.outputs.push_back(Output::Transmit(Transmit {
                    message: Message::notification(methods::INITIALIZED, None),
                    barrier: true,
                }));
                self.settle(id, Ok(payload));
            }
            Err(failure) => {
                self.settle(id, Err(failure));
                self.close();
            }
        }
    }

    fn handle_server_request(&mut self, request: Request<'_>) {
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        if self.config.forward_input_requests
            && matches!(
                request.method.as_ref(),
                methods::ELICITATION_CREATE
                    | methods::SAMPLING_CREATE_MESSAGE
                    | methods::ROOTS_LIST
            )
        {
            if self.forwarded.len() >= MAX_FORWARDED_REQUESTS
                || !self.forwarded.insert(request.id.clone())
            {
                let error = ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    "too many requests of the server's are waiting for an answer",
                );
                self.transmit(Message::Response(Response::error(Some(request.id), error)));
                return;
            }
            self.outputs
                .push_back(Output::ServerRequest(request.into_owned()));
            return;
        }
        let response = match request.method.as_ref() {
            // "The receiver MUST respond promptly with an empty response."
            methods::PING => Response::ok(request.id, empty_object()),
            methods::ELICITATION_CREATE => {
                // This client does not elicit: approval belongs inside the tool. The calls in
                // flight may be waiting on the answer, so they end now with their outcome
                // unknown, and the server is told they are cancelled.
                let calls: Vec<Id> = self
                    .pending
                    .iter()
                    .filter(|(_, p)| p.call)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in calls {
                    self.abandon(
                        &id,
                        FailureKind::ElicitationRequested,
                        "the server asked for user input (elicitation/create) during the call"
                            .to_owned(),
                    );
                }
                Response::error(Some(request.id), not_supported(methods::ELICITATION_CREATE))
            }
            method => Response::error(Some(request.id), not_supported(method)),
        };
        self.transmit(Message::Response(response));
    }

    fn handle_notification(&mut self, notification: Notification<'_>, now: Instant) {
        match notification.method.as_ref() {
            methods::PROGRESS => {
                if let Some(params) = notification.params.as_deref().and_then(|raw| {
                    serde_json::from_str::<ProgressNotificationParams>(raw.get()).ok()
                }) {
                    self.handle_progress(params, now);
                }
            }
            methods::LOGGING_MESSAGE
            | methods::SUBSCRIPTIONS_ACKNOWLEDGED
            | methods::TOOLS_LIST_CHANGED
            | methods::RESOURCES_LIST_CHANGED
            | methods::RESOURCES_UPDATED
            | methods::PROMPTS_LIST_CHANGED
            // The connection tells the host's input handler of the ids it was given.
            | methods::ELICITATION_COMPLETE => {
                self.outputs
                    .push_back(Output::Notification(notification.into_owned()));
            }
            // Cancellation of a server request we never received, task status and anything
            // unknown: nothing to do.
            _ => {}
        }
    }

    /// Ends a pending request from our side (cancel, timeout, elicitation): settles it,
    /// withdraws it if unsent, and tells the server if it may have it.
    fn abandon(&mut self, id: &Id, kind: FailureKind, detail: String) {
        let Some(pending) = self.remove_pending(id) else {
            return;
        };
        self.forget_route(&pending);
        let delivery = if pending.delivery == Delivery::NotSent {
            let queued = self.outputs.iter().position(
                |output| matches!(output, Output::Transmit(t) if t.request_id() == Some(id)),
            );
            if let Some(index) = queued {
                self.outputs.remove(index);
            }
            Delivery::NotSent
        } else {
            pending.delivery
        };
        let is_initialize = self.initialize_id.as_ref() == Some(id);
        if delivery == Delivery::MayHaveReached && !is_initialize {
            let params = CancelledNotificationParams::new(id.clone(), Some(detail.clone()));
            let params = serde_json::value::to_raw_value(&params).ok();
            self.transmit(Message::notification(methods::CANCELLED, params));
        }
        self.settle(id.clone(), Err(Failure::new(kind, delivery, detail)));
        if is_initialize {
            self.close();
        }
    }

    fn enqueue_request(
        &mut self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
        now: Instant,
    ) -> Id {
        let id = Id::Number(self.next_id);
        self.next_id += 1;
        if let Some(token) = &options.progress_token {
            self.progress_routes.insert(token.clone(), id.clone());
        }
        let pending = Pending {
            call: method == methods::TOOLS_CALL,
            delivery: Delivery::NotSent,
            deadline: now + options.timeout,
            idle: options.idle_timeout.map(|idle| (idle, now + idle)),
            progress_token: options.progress_token,
        };
        let at = pending.next_deadline();
        self.pending.insert(id.clone(), pending);
        self.deadlines.arm(
            at,
            id.clone(),
            self.pending.len(),
            deadline_in(&self.pending),
        );
        self.transmit(Message::Request(Request::new(id.clone(), method, params)));
        id
    }

    fn transmit(&mut self, message: Message<'static>) {
        self.outputs.push_back(Output::Transmit(Transmit {
            message,
            barrier: false,
        }));
    }

    fn settle(&mut self, id: Id, outcome: Result<Payload, Failure>) {
        self.outputs
            .push_back(Output::Settled(Settled { id, outcome }));
    }

    fn forget_route(&mut self, pending: &Pending) {
        if let Some(token) = &pending.progress_token {
            self.progress_routes.remove(token);
        }
    }

    fn missing_capability(&self, method: &str) -> Option<&'static str> {
        let capabilities = &self.server.as_ref()?.capabilities;
        let (needed, present) = match method.split_once('/') {
            Some(("tools", _)) => ("tools", capabilities.tools.is_some()),
            Some(("prompts", _)) => ("prompts", capabilities.prompts.is_some()),
            Some(("resources", _)) => ("resources", capabilities.resources.is_some()),
            Some(("logging", _)) => ("logging", capabilities.logging.is_some()),
            Some(("completion", _)) => ("completions", capabilities.completions.is_some()),
            _ => return None,
        };
        (!present).then_some(needed)
    }
}

/// The capabilities `initialize` declares: the client's, without the 2026-07-28 tasks
/// extension (`io.modelcontextprotocol/tasks`, SEP-2663). A 2025-era session reads only the
/// core tasks of 2025-11-25 (`tasks`), so it must not promise the extension's answers
/// (`resultType: "task"`), which a server such as rmcp 3.11 gives in a 2025-11-25 session of
/// a client that declared it.
fn legacy_capabilities(capabilities: &ClientCapabilities) -> ClientCapabilities {
    let mut capabilities = capabilities.clone();
    let emptied = match capabilities.extra.get_mut("extensions") {
        Some(serde_json::Value::Object(extensions)) => {
            extensions
                .remove(crate::mcp::tasks::TASKS_EXTENSION)
                .is_some()
                && extensions.is_empty()
        }
        _ => false,
    };
    if emptied {
        capabilities.extra.remove("extensions");
    }
    capabilities
}

/// A discover result in the shape of an initialize result, which is what the rest of the
/// client reads (capabilities, identity, instructions).
fn described(result: &mcp::DiscoverResult, version: ProtocolVersion) -> InitializeResult {
    InitializeResult {
        protocol_version: version.as_str().to_owned(),
        capabilities: result.capabilities.clone(),
        server_info: result.server_info().unwrap_or_default(),
        instructions: result.instructions.clone(),
        meta: result.meta.clone(),
        extra: result.extra.clone(),
    }
}

fn empty_object() -> Box<RawValue> {
    // Serializing an empty map cannot fail; the default (`null`) keeps `unwrap` out.
    serde_json::value::to_raw_value(&serde_json::Map::new()).unwrap_or_default()
}

fn not_supported(method: &str) -> ErrorObject<'static> {
    ErrorObject::new(
        jsonrpc::METHOD_NOT_FOUND,
        format!("this client does not support `{method}`"),
    )
}
