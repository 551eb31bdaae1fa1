//! The connection machine: one sans-IO type per client connection that owns the session, the
//! link machine under it (the Streamable HTTP [`Exchange`], or the stdio framing) and every
//! request-level rule above them: `tools/list` paging and its loop guard, the one re-send of a
//! broken list page, the `resultType` check and cache hints, which listed tools are admitted
//! and the `Mcp-*` headers their calls carry, and the whole `tools/call` operation (progress
//! token, `_meta`, `input_required` rounds, the `-32020` relist-and-retry, the `-32022`
//! revision switch, `-32021`). Credentials are taken out of everything it hands back.
//!
//! Like quinn-proto's `Connection` and str0m's `Rtc`: no sockets, no runtime, no clock. The
//! driver (the client's task) starts operations, each with an
//! [`OpId`]; it feeds in what the link delivers and the time, and drains [`Output`]s: HTTP
//! requests to issue or abort, stdio lines to write, progress, requests for the host's input,
//! refused credentials, notifications, and finished operations with their outcome. It sleeps
//! until [`Connection::poll_timeout`].
//!
//! # Run loop
//!
//! ```text
//! connection.start(now)
//! loop {
//!     while let Some(output) = connection.poll_output() {
//!         HttpSend { stream, request } -> issue it; its head, chunks and end come back as
//!                                         connection.handle_head / handle_body / handle_end
//!         StdioSend(message)           -> write the line
//!         Progress / Notification      -> the host
//!         Input { op, requests }       -> the host's input handler, then answer_input(op, ..)
//!         Refused(refusal)             -> a new token, then resend(..) or reject(..)
//!         Done { op, outcome }         -> whoever waits on op
//!     }
//!     wait for: a frame or line from the link, a host command (call_tool, list_tools, ...,
//!               cancel, close), or the deadline poll_timeout() -> handle_timeout(now)
//! }
//! ```

mod headers;
pub(crate) mod input;
pub(crate) mod ops;
pub(crate) mod skills;
pub(crate) mod task;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};
use serde_json::value::RawValue;

use crate::exchange::{
    Exchange, HttpRequest, Output as ExchangeOutput, Refusal, SendOptions, StreamId,
    TransportError, WallClock,
};
use crate::idmap::IdMap;
use crate::jsonrpc::{ErrorObject, Id, Message, Notification, Request};
use crate::mcp::{
    CallToolResult, InitializeResult, JsonObject, ProgressNotificationParams, ProgressToken,
    ProtocolVersion, Tool, methods,
};
use crate::secret::Secret;
use crate::session::{
    self, Delivery, Failure, FailureKind, Payload, RequestError, RequestOptions, Session,
};

pub(crate) use headers::HeaderBook;
pub(crate) use input::InputKind;
pub(crate) use ops::{CallArguments, CallTool, ListCacheRef};
pub(crate) use skills::SKILLS_EXTENSION;

/// Names an operation started on a [`Connection`]; its progress and its end carry it.
pub(crate) type OpId = u64;

/// The request-level limits and defaults of a connection.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    /// How long a `tools/list` page, a ping or a raw request may take by default.
    pub(crate) request_timeout: Duration,
    /// The most `tools/list` pages one listing follows.
    pub(crate) max_list_pages: usize,
    /// The most tools one listing takes.
    pub(crate) max_tools: usize,
    /// The most `input_required` rounds one call answers (2026-07-28).
    pub(crate) max_input_rounds: usize,
    /// Whether the host answers input requests (an `input_required` round goes to it as
    /// [`Output::Input`]; without one, the call fails as the spec's table says).
    pub(crate) answers_input: bool,
    /// This process's id, for the progress tokens the connection makes.
    pub(crate) process_id: u32,
    /// Whether the client speaks tasks (it declared them: `tasks` at 2025-11-25, the
    /// `io.modelcontextprotocol/tasks` extension at 2026-07-28): a call may become one.
    pub(crate) tasks: bool,
}

/// Why an operation produced no outcome.
#[derive(Debug)]
pub(crate) enum OpError {
    /// Refused by the session before anything was sent.
    Refused(RequestError),
    /// A request failed: how far it got, and why.
    Failed(Failure),
    /// The operation cannot be made as given (a tool's `input_schema` declares invalid
    /// headers).
    Config(String),
    /// Something the client itself got wrong (params it could not write).
    Internal(String),
}

impl From<Failure> for OpError {
    fn from(failure: Failure) -> Self {
        OpError::Failed(failure)
    }
}

/// A listed tool the machine left out at a stateless revision: its annotations break the
/// spec's `x-mcp-header` rules, so no call to it could carry the right headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Excluded {
    /// The tool's name.
    pub(crate) name: String,
    /// The rule broken, and where in the input schema.
    pub(crate) reason: crate::mcp::headers::AnnotationError,
}

/// What a finished operation produced.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// `tools/list`, every page: the admitted tools, and the ones left out with why.
    Tools(Vec<Tool>, Vec<Excluded>),
    /// `tools/call`.
    Call(CallToolResult),
    /// A raw request's result, or the end of a `subscriptions/listen` stream (`None`).
    Raw(Option<Box<RawValue>>),
    /// `ping` was answered.
    Pong,
}

/// What the link machine under the session is.
enum Link {
    Http(Box<Exchange>),
    /// Newline-delimited JSON: the stdio transport writes each message in order, so a
    /// message handed to it counts as sent.
    Stdio {
        /// Whether a dead server may be started again (only until the handshake is done).
        respawn: bool,
    },
}

/// What the connection asks of its driver.
#[derive(Debug)]
pub(crate) enum Output {
    /// Issue this HTTP request; report its head, chunks and end under `stream`.
    HttpSend {
        /// The name the request's frames are reported under.
        stream: StreamId,
        /// The request.
        request: HttpRequest,
    },
    /// Stop this HTTP request: read no more of it.
    HttpAbort(StreamId),
    /// Write this message as a stdio line.
    StdioSend(Message<'static>),
    /// The handshake (or the era probe) is done.
    Connected(Box<Connected>),
    /// The handshake failed.
    ConnectFailed(OpError),
    /// A progress notification for an operation.
    Progress {
        /// The operation.
        op: OpId,
        /// What the server reported, credentials taken out.
        params: ProgressNotificationParams,
    },
    /// A 2026-07-28 `input_required` round: the host answers `requests` (each under its
    /// key), then [`Connection::answer_input`].
    Input {
        /// The operation waiting.
        op: OpId,
        /// What the server asks.
        requests: Vec<crate::mcp::modern::InputRequest>,
        /// What kind of input each of `requests` is, checked (in the same order).
        kinds: Vec<InputKind>,
    },
    /// A call became a task, or its task's status changed.
    TaskStatus {
        /// The operation.
        op: OpId,
        /// The task now.
        update: crate::mcp::TaskUpdate,
    },
    /// A 2025-era request of the server's for input, to answer with
    /// [`Connection::answer_server_request`].
    ServerRequest(Request<'static>, InputKind),
    /// The server says a URL elicitation it asked for (and the host saw) is complete
    /// (`notifications/elicitation/complete`, 2025-11-25), by its `elicitationId`.
    ElicitationComplete(String),
    /// The server refused a request's credentials before running it: answer with
    /// [`Connection::resend`] (a new token) or [`Connection::reject`].
    Refused(Refusal),
    /// A request sent with the current credentials was answered: they are good.
    Accepted,
    /// The server gave a `DPoP-Nonce` on a reply (any status): the token source keeps it
    /// for the proofs of the requests to come (RFC 9449 section 9).
    DpopNonce(http::HeaderValue),
    /// A notification for the host.
    Notification(Notification<'static>),
    /// Something the host should know of that fails nothing (a tool left out of a listing).
    Warning(String),
    /// The connection speaks another stateless revision from now on (`-32022`).
    VersionSwitched(ProtocolVersion),
    /// An operation is over.
    Done {
        /// The operation.
        op: OpId,
        /// What it produced, or why it did not.
        outcome: Result<Outcome, OpError>,
    },
    /// Closing is over: nothing more will be sent.
    Closed,
}

/// What the link reports about an HTTP request in flight, one frame at a time.
#[derive(Debug)]
pub(crate) enum Frame {
    /// The response's head, and the wall clock when it arrived (the driver's reading, for a
    /// `Retry-After` HTTP-date).
    Head(StatusCode, HeaderMap, WallClock),
    /// A chunk of its body.
    Data(bytes::Bytes),
    /// Its end.
    End,
    /// No response, or its body broke off.
    Failed(TransportError),
}

/// The outcome of the handshake.
#[derive(Debug)]
pub(crate) struct Connected {
    /// The revision both sides speak.
    pub(crate) version: ProtocolVersion,
    /// What the server said of itself, when it was asked.
    pub(crate) server: Option<InitializeResult>,
    /// The `Mcp-Session-Id` the server assigned (2025-era Streamable HTTP).
    pub(crate) session_id: Option<String>,
}

/// A request in flight and the operation it serves.
struct Pending {
    op: OpId,
    /// How the request is sent: taken when it is.
    limits: SendOptions,
}

/// The sans-IO connection machine (see the [module docs](self)).
pub(crate) struct Connection {
    session: Session,
    link: Link,
    limits: Limits,
    ops: IdMap<OpId, ops::Op>,
    next_op: OpId,
    /// Each request of an operation's, by its JSON-RPC id.
    requests: IdMap<Id, Pending>,
    outputs: VecDeque<Output>,
    headers: HeaderBook,
    /// The credentials the server holds from us: scrubbed from everything handed back.
    secrets: Vec<Secret>,
    /// How many of `secrets` were given at the start (the rest are tokens sent since).
    fixed_secrets: usize,
    lists: Option<ListCacheRef>,
    /// Calls whose `-32020` relisting is over, to go on (or fail) in this turn.
    relisted: Vec<(OpId, Result<(), OpError>)>,
    /// The handshake is done (or failed).
    connected: bool,
    closing: bool,
    closed: bool,
    /// [`close`](Connection::close) was asked for while a detached request (a task's
    /// `tasks/cancel`) was in flight: it closes once that is over.
    close_deferred: bool,
    /// What the client declared it answers: a server's request for input is checked against
    /// it before the host sees it.
    declared: crate::mcp::ClientCapabilities,
    /// The ids of the URL elicitations handed to the host and not yet complete, oldest first
    /// (at most [`MAX_OPEN_ELICITATIONS`]): a completion naming any other id is ignored.
    open_elicitations: VecDeque<String>,
    /// A call has run as a task: until then no operation has a task to wake, and the turns
    /// (each asks [`poll_timeout`](Connection::poll_timeout)) need not look through them.
    tasked: bool,
}

/// The most URL elicitations remembered for their completion notifications.
const MAX_OPEN_ELICITATIONS: usize = 64;

/// The most tokens remembered for redaction beyond the fixed secrets.
const MAX_SENT_TOKENS: usize = 32;

impl Connection {
    /// A connection over Streamable HTTP, through `exchange`.
    pub(crate) fn http(
        config: session::Config,
        exchange: Exchange,
        limits: Limits,
        secrets: Vec<Secret>,
    ) -> Self {
        Connection::with(config, Link::Http(Box::new(exchange)), limits, secrets)
    }

    /// A connection to a server run as a child process speaking stdio.
    pub(crate) fn stdio(config: session::Config, limits: Limits, secrets: Vec<Secret>) -> Self {
        Connection::with(config, Link::Stdio { respawn: true }, limits, secrets)
    }

    fn with(config: session::Config, link: Link, limits: Limits, secrets: Vec<Secret>) -> Self {
        let fixed_secrets = secrets.len();
        Connection {
            tasked: false,
            relisted: Vec::new(),
            declared: config.capabilities.clone(),
            open_elicitations: VecDeque::new(),
            session: Session::new(config),
            link,
            limits,
            ops: IdMap::default(),
            next_op: 0,
            requests: IdMap::default(),
            outputs: VecDeque::new(),
            headers: HeaderBook::default(),
            secrets,
            fixed_secrets,
            lists: None,
            connected: false,
            closing: false,
            closed: false,
            close_deferred: false,
        }
    }

    /// Keeps listed pages in `lists` (2026-07-28 cache hints), and drops them when the
    /// server says its tool list changed.
    pub(crate) fn set_list_cache(&mut self, lists: ListCacheRef) {
        self.lists = Some(lists);
    }

    /// Puts `trace` in the `_meta` of the handshake's requests (the era probe, `initialize`);
    /// set before [`start`](Self::start).
    pub(crate) fn set_handshake_trace(&mut self, trace: Option<crate::mcp::TraceContext>) {
        self.session.set_handshake_trace(trace);
    }

    /// Starts the era probe or the handshake.
    pub(crate) fn start(&mut self, now: Instant) {
        self.session.start(now);
        self.flush(now);
    }

    /// The revision spoken, once the handshake is done.
    pub(crate) fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.session.protocol_version()
    }

    /// Whether a stateless revision (2026-07-28) is spoken.
    pub(crate) fn is_modern(&self) -> bool {
        self.session.is_modern()
    }

    /// The HTTP exchange, for the settings the driver makes before the first request.
    pub(crate) fn exchange(&mut self) -> Option<&mut Exchange> {
        match &mut self.link {
            Link::Http(exchange) => Some(exchange),
            Link::Stdio { .. } => None,
        }
    }

    /// The HTTP exchange, to read.
    pub(crate) fn exchange_ref(&self) -> Option<&Exchange> {
        match &self.link {
            Link::Http(exchange) => Some(exchange),
            Link::Stdio { .. } => None,
        }
    }

    /// Adds credentials to keep out of what the connection hands back (a token source's own
    /// secrets).
    pub(crate) fn add_secrets(&mut self, secrets: impl IntoIterator<Item = Secret>) {
        for secret in secrets {
            self.remember(secret);
        }
    }

    fn remember(&mut self, secret: Secret) {
        if self.secrets.contains(&secret) || secret.expose().is_empty() {
            return;
        }
        if self.secrets.len() - self.fixed_secrets >= MAX_SENT_TOKENS {
            self.secrets.remove(self.fixed_secrets);
        }
        self.secrets.push(secret);
    }

    /// The bearer token the next HTTP request carries.
    pub(crate) fn bearer(&self) -> Option<&Secret> {
        self.exchange_ref().and_then(Exchange::bearer)
    }

    /// Sends `token` as the bearer token from now on (remembered for redaction).
    pub(crate) fn set_bearer(&mut self, token: Option<Secret>) {
        if let Some(token) = &token {
            self.remember(token.clone());
        }
        if let Some(exchange) = self.exchange() {
            exchange.set_bearer(token);
        }
    }

    /// Sends the refused request `id` again with `token`.
    pub(crate) fn resend(&mut self, id: &Id, token: Option<Secret>, now: Instant) {
        if let Some(token) = &token {
            self.remember(token.clone());
        }
        if let Some(exchange) = self.exchange() {
            exchange.resend(id, token, now);
        }
        self.flush(now);
    }

    /// Sends the refused request `id` again with the same token, for the DPoP nonce its 401
    /// brought (see `Exchange::resend_for_nonce`): `false` when it may not be.
    pub(crate) fn resend_for_nonce(&mut self, id: &Id, now: Instant) -> bool {
        let resent = self
            .exchange()
            .is_some_and(|exchange| exchange.resend_for_nonce(id, now));
        self.flush(now);
        resent
    }

    /// Gives up on the refused request `id`: it fails with `reason`, caused by `cause`.
    pub(crate) fn reject(
        &mut self,
        id: &Id,
        reason: &str,
        cause: Option<session::Cause>,
        now: Instant,
    ) {
        if let Some(exchange) = self.exchange() {
            exchange.reject_with(id, reason, cause);
        }
        self.flush(now);
    }

    /// Checks the requests of an `input_required` round (2026-07-28, where `elicitationId` is
    /// optional) against what the client declared: their kinds, in order, or why one is
    /// refused.
    pub(crate) fn classify_inputs(
        &mut self,
        requests: &[crate::mcp::modern::InputRequest],
    ) -> Result<Vec<InputKind>, input::Refusal> {
        let kinds = requests
            .iter()
            .map(|r| {
                input::classify(&r.method, r.params.as_deref(), &self.declared, false).map_err(
                    |refusal| input::Refusal(format!("inputRequests {:?}: {refusal}", r.key)),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        for kind in &kinds {
            self.note_elicitation(kind);
        }
        Ok(kinds)
    }

    /// Remembers the id of a URL elicitation handed to the host, for its completion.
    fn note_elicitation(&mut self, kind: &InputKind) {
        let InputKind::Url(elicitation) = kind else {
            return;
        };
        let Some(id) = elicitation.elicitation_id() else {
            return;
        };
        if self.open_elicitations.iter().any(|open| open == id) {
            return;
        }
        if self.open_elicitations.len() >= MAX_OPEN_ELICITATIONS {
            self.open_elicitations.pop_front();
        }
        self.open_elicitations.push_back(id.to_owned());
    }

    /// `notifications/elicitation/complete`: told to the host once, for an id it was handed;
    /// unknown and already-completed ids are ignored (`client/elicitation.mdx`).
    fn on_elicitation_complete(&mut self, params: Option<&RawValue>) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Complete {
            elicitation_id: String,
        }
        let Some(complete) =
            params.and_then(|raw| serde_json::from_str::<Complete>(raw.get()).ok())
        else {
            return;
        };
        if let Some(at) = self
            .open_elicitations
            .iter()
            .position(|open| *open == complete.elicitation_id)
        {
            self.open_elicitations.remove(at);
            self.outputs
                .push_back(Output::ElicitationComplete(complete.elicitation_id));
        }
    }

    /// The host's answer to a 2025-era server request (its result), or why it has none
    /// (answered as an internal error).
    pub(crate) fn answer_server_request(
        &mut self,
        id: &Id,
        answer: Result<serde_json::Value, String>,
        now: Instant,
    ) {
        let answer = answer
            .and_then(|value| {
                serde_json::value::to_raw_value(&value)
                    .map_err(|e| format!("the answer is not JSON: {e}"))
            })
            .map_err(|why| {
                ErrorObject::new(
                    crate::jsonrpc::INTERNAL_ERROR,
                    format!("the client could not answer: {why}"),
                )
            });
        self.session.answer_server_request(id, answer);
        self.flush(now);
    }

    /// The user declined a 2025-era sampling request: answered with `-1`, as
    /// `client/sampling.mdx` ("Error Handling") says.
    pub(crate) fn decline_server_request(&mut self, id: &Id, now: Instant) {
        let error = ErrorObject::new(-1, "User rejected sampling request");
        self.session.answer_server_request(id, Err(error));
        self.flush(now);
    }

    /// The operation a stream's request belongs to, if any (for the driver's tracing).
    #[cfg(feature = "tracing")]
    pub(crate) fn op_on(&self, stream: StreamId) -> Option<OpId> {
        let id = self.exchange_ref()?.request_on(stream)?;
        self.requests.get(id).map(|pending| pending.op)
    }

    /// When the connection must be woken up next.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        [
            self.session.poll_timeout(),
            self.exchange_ref().and_then(Exchange::poll_timeout),
            self.next_task_wake(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The time has come for [`poll_timeout`](Self::poll_timeout)'s deadline.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
        if let Some(exchange) = self.exchange() {
            exchange.handle_timeout(now);
        }
        self.flush(now);
        self.wake_tasks(now);
        self.flush(now);
    }

    /// A frame of the HTTP request on `stream`.
    pub(crate) fn handle_frame(&mut self, stream: StreamId, frame: Frame, now: Instant) {
        if let Some(exchange) = self.exchange() {
            match frame {
                Frame::Head(status, headers, wall) => {
                    exchange.handle_head(stream, status, &headers, wall, now);
                }
                Frame::Data(chunk) => exchange.handle_body(stream, &chunk, now),
                Frame::End => exchange.handle_end(stream, now),
                Frame::Failed(error) => exchange.handle_error(stream, error, now),
            }
        }
        self.flush(now);
    }

    /// A message read from a stdio server.
    pub(crate) fn handle_message(&mut self, message: Message<'_>, now: Instant) {
        self.session.handle_message(message, now);
        self.flush(now);
    }

    /// The stdio server is gone. Returns whether to start it again: a 2025-era server that
    /// exits on the era probe gets `initialize` first from a new process (once, and only
    /// before the handshake is done). Otherwise everything pending fails with `failure`.
    pub(crate) fn handle_link_down(&mut self, failure: Failure, now: Instant) -> bool {
        if let Link::Stdio { respawn } = &mut self.link
            && std::mem::take(respawn)
            && self.session.probe_lost(now)
        {
            self.flush(now);
            return true;
        }
        self.session.fail_all(&failure);
        self.flush(now);
        false
    }

    /// The link is gone for good (its tasks ended): everything pending fails, and the
    /// connection is closed.
    pub(crate) fn handle_link_closed(&mut self, now: Instant) {
        let failure = Failure::new(
            FailureKind::ConnectionLost,
            Delivery::MayHaveReached,
            "the stdio link ended",
        );
        self.session.fail_all(&failure);
        self.closing = true;
        self.flush(now);
        self.finish_close();
    }

    /// Begins to close: pending operations fail, an HTTP session is ended with `DELETE`.
    /// [`Output::Closed`] says when it is over (at once for stdio, whose driver shuts the
    /// process down).
    pub(crate) fn close(&mut self, now: Instant) {
        if self.closing {
            return;
        }
        // A task's `tasks/cancel` goes out before the session ends (it is bounded by its own
        // short timeout).
        if self.ops.values().any(ops::Op::is_detached) {
            self.close_deferred = true;
            return;
        }
        self.close_deferred = false;
        self.closing = true;
        self.session.close();
        self.flush(now);
        match &mut self.link {
            Link::Http(exchange) => exchange.close(now),
            Link::Stdio { .. } => self.finish_close(),
        }
        self.flush(now);
    }

    fn finish_close(&mut self) {
        if !self.closed {
            self.closed = true;
            self.fail_ops();
            self.outputs.push_back(Output::Closed);
        }
    }

    /// Whether closing is over.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// The next thing for the driver to do.
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// Starts an operation made of one request whose answer is read by `finish`.
    fn single(
        &mut self,
        op: ops::Op,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
        limits: SendOptions,
        now: Instant,
    ) -> OpId {
        let id = self.new_op(op);
        self.send(id, method, params, None, options, limits, now);
        self.flush(now);
        id
    }

    fn new_op(&mut self, op: ops::Op) -> OpId {
        let id = self.next_op;
        self.next_op += 1;
        self.ops.insert(id, op);
        id
    }

    /// Queues a request of operation `op`; a refusal ends the operation. The method is one of
    /// `methods::*` (borrowed), or a raw request's own.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        op: OpId,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        stamped: Option<&Arc<crate::mcp::modern::Stamp>>,
        options: RequestOptions,
        limits: SendOptions,
        now: Instant,
    ) -> bool {
        match self
            .session
            .request_stamped(method, params, options, stamped, now)
        {
            Ok(id) => {
                if let Some(state) = self.ops.get_mut(&op) {
                    state.set_request(id.clone());
                }
                self.requests.insert(id, Pending { op, limits });
                true
            }
            Err(refused) => {
                self.end(op, Err(OpError::Refused(refused)));
                false
            }
        }
    }

    /// Ends operation `op` with `outcome` (credentials taken out).
    fn end(&mut self, op: OpId, outcome: Result<Outcome, OpError>) {
        let Some(state) = self.ops.remove(&op) else {
            return;
        };
        if state.is_detached() {
            return;
        }
        if let Some(parent) = state.parent() {
            // A listing made for a call (after `-32020`): the call goes on, or fails with it.
            self.relisted.push((parent, outcome.map(drop)));
            return;
        }
        let outcome = self.redact_outcome(outcome);
        self.outputs.push_back(Output::Done { op, outcome });
    }

    /// Fails every operation (the connection is closing).
    fn fail_ops(&mut self) {
        let mut ids: Vec<OpId> = self.ops.keys().copied().collect();
        ids.sort_unstable();
        for op in ids {
            self.end(op, Err(OpError::Refused(RequestError::Closed)));
        }
    }

    /// Cancels operation `op`: its request in flight is cancelled (`notifications/cancelled`
    /// when the server may have it), and the operation ends with that.
    pub(crate) fn cancel(&mut self, op: OpId, reason: &str, now: Instant) {
        let Some(state) = self.ops.get(&op) else {
            return;
        };
        if state.has_task() {
            self.task_over(op, FailureKind::Cancelled, reason, now);
            return self.flush(now);
        }
        match state.request().cloned() {
            Some(id) => self.session.cancel(&id, reason),
            // Waiting for the host's input: nothing is in flight.
            None => self.end(
                op,
                Err(OpError::Failed(Failure::new(
                    FailureKind::Cancelled,
                    Delivery::MayHaveReached,
                    reason.to_owned(),
                ))),
            ),
        }
        self.flush(now);
    }

    /// Moves outputs between the session, the link machine and the operations until none has
    /// any.
    fn flush(&mut self, now: Instant) {
        loop {
            let mut busy = false;
            while let Some(output) = self.session.poll_output() {
                busy = true;
                self.on_session_output(output, now);
            }
            while let Some(output) = match &mut self.link {
                Link::Http(exchange) => exchange.poll_output(),
                Link::Stdio { .. } => None,
            } {
                busy = true;
                self.on_exchange_output(output, now);
            }
            // Taken only when there is something: this runs on every frame.
            if !self.relisted.is_empty() {
                for (op, listed) in std::mem::take(&mut self.relisted) {
                    busy = true;
                    self.resume_after_relist(op, listed, now);
                }
            }
            if !busy {
                if self.close_deferred && !self.ops.values().any(ops::Op::is_detached) {
                    self.close(now);
                }
                return;
            }
        }
    }

    fn on_exchange_output(&mut self, output: ExchangeOutput, now: Instant) {
        match output {
            ExchangeOutput::Send { stream, request } => {
                self.outputs.push_back(Output::HttpSend { stream, request });
            }
            ExchangeOutput::Abort(stream) => self.outputs.push_back(Output::HttpAbort(stream)),
            ExchangeOutput::Message(message) => self.session.handle_message(message, now),
            ExchangeOutput::Decoded { id, result } => {
                self.session.handle_decoded_response(id, result);
            }
            ExchangeOutput::Progress(params) => self.session.handle_progress(params, now),
            ExchangeOutput::RequestFailed { id, failure } => {
                self.session.fail_request(&id, failure);
            }
            ExchangeOutput::LegacyTransport => {
                trace_info!(
                    protocol_version = "2024-11-05",
                    "era fallback: the server speaks only the legacy HTTP+SSE transport"
                );
                self.session.downgrade_to_legacy(now);
            }
            ExchangeOutput::Down(failure) => self.session.fail_all(&failure),
            ExchangeOutput::Closed { .. } => self.finish_close(),
            ExchangeOutput::Refused(refusal) => self.outputs.push_back(Output::Refused(refusal)),
            ExchangeOutput::DpopNonce(nonce) => self.outputs.push_back(Output::DpopNonce(nonce)),
        }
    }

    fn on_session_output(&mut self, output: session::Output, now: Instant) {
        match output {
            session::Output::Ready(ready) => self.on_ready(*ready, now),
            session::Output::Transmit(transmit) => {
                let id = transmit.request_id();
                let handshake = id.is_some() && id == self.session.initialize_id();
                let limits = match id.and_then(|id| self.requests.get_mut(id)) {
                    // A request is transmitted once: its options go with it.
                    Some(pending) => std::mem::take(&mut pending.limits),
                    // The probe's answer is read raw: it may be any result or error.
                    None if handshake && self.session.probe_version().is_some() => {
                        SendOptions::default()
                    }
                    None if handshake => SendOptions::decoding::<InitializeResult>(),
                    None => SendOptions::default(),
                };
                // A request that changes nothing may be sent again after a 429 or 503,
                // until its deadline (a request-level rule: which ones, and until when).
                let idempotent = matches!(&transmit.message, Message::Request(request)
                    if methods::is_idempotent(&request.method));
                let retry_until = id
                    .filter(|_| idempotent)
                    .and_then(|id| self.session.deadline_of(id));
                let limits = limits.with_retry_until(retry_until);
                let probing = self.session.probe_version().map(ProtocolVersion::as_str);
                match &mut self.link {
                    Link::Http(exchange) => {
                        if handshake {
                            // The probe goes out with the headers of the revision it names;
                            // `initialize` after it by the 2025-era rules.
                            exchange.set_modern(probing);
                        }
                        exchange.send(transmit.message, limits, transmit.barrier, now);
                    }
                    Link::Stdio { .. } => {
                        self.outputs.push_back(Output::StdioSend(transmit.message));
                    }
                }
            }
            session::Output::Settled(settled) => {
                let answered = settled.answered();
                if let Link::Http(exchange) = &mut self.link {
                    // A request given up on (deadline, cancel) has its stream closed now; one
                    // that was answered is read on briefly, so its connection can be reused.
                    exchange.finish(&settled.id, answered, now);
                    if answered && exchange.holds_refusals() {
                        self.outputs.push_back(Output::Accepted);
                    }
                }
                if self.session.initialize_id() == Some(&settled.id) {
                    // Success was reported by `Ready`.
                    if let Err(failure) = settled.outcome
                        && !self.connected
                    {
                        self.connected = true;
                        let error = self.redact_error(OpError::Failed(failure));
                        self.outputs.push_back(Output::ConnectFailed(error));
                    }
                    return;
                }
                if let Some(pending) = self.requests.remove(&settled.id) {
                    self.on_answer(pending.op, settled.outcome, now);
                }
            }
            session::Output::Progress { id, params } => {
                if let Some(pending) = self.requests.get(&id) {
                    let op = pending.op;
                    let params = self.redact_progress(params);
                    self.outputs.push_back(Output::Progress { op, params });
                }
            }
            session::Output::Notification(notification) => {
                if notification.method == methods::ELICITATION_COMPLETE {
                    self.on_elicitation_complete(notification.params.as_deref());
                }
                if notification.method == methods::TASKS_STATUS {
                    self.on_task_notification(notification.params.as_deref(), now);
                }
                if notification.method == methods::TOOLS_LIST_CHANGED
                    && let Some(lists) = &self.lists
                {
                    lists.invalidate();
                }
                self.outputs.push_back(Output::Notification(notification));
            }
            session::Output::ServerRequest(request) => {
                // A 2025-era revision: URL elicitations carry their id from 2025-11-25 on.
                let require_id = self
                    .session
                    .protocol_version()
                    .is_some_and(ProtocolVersion::has_url_elicitation);
                match input::classify(
                    &request.method,
                    request.params.as_deref(),
                    &self.declared,
                    require_id,
                ) {
                    Ok(kind) => {
                        self.note_elicitation(&kind);
                        self.outputs.push_back(Output::ServerRequest(request, kind));
                    }
                    Err(refusal) => {
                        let error = ErrorObject::new(
                            crate::jsonrpc::INVALID_PARAMS,
                            format!("the client refuses the request: {refusal}"),
                        );
                        self.session.answer_server_request(&request.id, Err(error));
                    }
                }
            }
        }
    }

    fn on_ready(&mut self, ready: session::Ready, now: Instant) {
        trace_info!(
            protocol_version = ready.version.as_str(),
            "protocol revision settled"
        );
        let session_id = match &mut self.link {
            Link::Http(exchange) if ready.version.is_modern() => {
                exchange.set_modern(Some(ready.version.as_str()));
                exchange.note(&format!(
                    "= era: {} ({})",
                    ready.version,
                    if ready.server.is_some() {
                        "the server answered server/discover"
                    } else {
                        "known from an earlier probe"
                    }
                ));
                None
            }
            Link::Http(exchange) => {
                exchange.note(&format!(
                    "= era: 2025 (initialize answered at {})",
                    ready.version
                ));
                // Before `notifications/initialized` goes out, so it carries the header.
                exchange.set_protocol_version(ready.version.as_str());
                exchange.open_server_stream(now);
                exchange.session_id().map(str::to_owned)
            }
            Link::Stdio { respawn } => {
                // Past the handshake a server that exits is gone.
                *respawn = false;
                None
            }
        };
        if !self.connected {
            self.connected = true;
            self.outputs
                .push_back(Output::Connected(Box::new(Connected {
                    version: ready.version,
                    server: ready.server,
                    session_id,
                })));
        }
    }

    /// Speaks `version` from now on (a `-32022` named it).
    fn switch_version(&mut self, version: ProtocolVersion) {
        self.session.switch_version(version);
        if let Some(exchange) = self.exchange() {
            exchange.set_modern(Some(version.as_str()));
        }
        self.outputs.push_back(Output::VersionSwitched(version));
    }

    fn redact_text(&self, text: &str) -> String {
        crate::secret::redact_all(&self.secrets, text)
    }

    fn redact_error(&self, error: OpError) -> OpError {
        if self.secrets.is_empty() {
            return error;
        }
        match error {
            OpError::Failed(mut failure) => {
                for secret in &self.secrets {
                    failure.detail = secret.redact(&failure.detail);
                    failure.map_data(|data| secret.redact(data));
                }
                OpError::Failed(failure)
            }
            OpError::Config(text) => OpError::Config(self.redact_text(&text)),
            OpError::Internal(text) => OpError::Internal(self.redact_text(&text)),
            refused => refused,
        }
    }

    fn redact_outcome(&self, outcome: Result<Outcome, OpError>) -> Result<Outcome, OpError> {
        outcome.map_err(|error| self.redact_error(error))
    }

    /// A result's text with credentials taken out, before anything reads it.
    fn redact_payload(&self, payload: Payload) -> Result<Payload, OpError> {
        let Payload::Raw(raw) = payload else {
            // Decoded only when the reply echoed no credential (the exchange checks).
            return Ok(payload);
        };
        if !self
            .secrets
            .iter()
            .any(|secret| secret.appears_in(raw.get()))
        {
            return Ok(Payload::Raw(raw));
        }
        RawValue::from_string(self.redact_text(raw.get()))
            .map(Payload::Raw)
            .map_err(|_| {
                OpError::Failed(Failure::new(
                    FailureKind::Protocol,
                    Delivery::Answered,
                    "the result holds a credential where it cannot be redacted",
                ))
            })
    }

    fn redact_progress(
        &self,
        mut params: ProgressNotificationParams,
    ) -> ProgressNotificationParams {
        if let Some(message) = params.message.as_mut().filter(|_| !self.secrets.is_empty()) {
            *message = self.redact_text(message);
        }
        params
    }

    fn warn(&mut self, message: String) {
        let message = self.redact_text(&message);
        self.outputs.push_back(Output::Warning(message));
    }
}

/// The progress token of a call that names none: unique within the process (`process`) and
/// the connection (`op`).
pub(crate) fn progress_token(process: u32, op: u64) -> ProgressToken {
    ProgressToken::String(format!("mcpwire-{process}-{op}"))
}

/// The `arguments` member of `tools/call` params, read again to rebuild headers.
fn arguments_of(params: &RawValue) -> Option<JsonObject> {
    #[derive(serde::Deserialize)]
    struct Arguments {
        #[serde(default)]
        arguments: Option<JsonObject>,
    }
    serde_json::from_str::<Arguments>(params.get())
        .ok()
        .and_then(|a| a.arguments)
}
