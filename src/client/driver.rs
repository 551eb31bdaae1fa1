//! The client's driver task: it owns the [`Connection`] machine and the link under it (the
//! HTTP requests in flight, or the stdio process), moves frames between them, sleeps until the
//! machine's next deadline, and runs the host's handlers and token source. It decides nothing
//! the protocol decides.

use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};

use super::auth;
use super::era::{EraCache, Verdict};
use super::options::InputHandler;
use super::reply;
use crate::connection::{
    CallTool, Connected, Connection, InputKind, OpError, OpId, Outcome, Output,
};
use crate::exchange::{Refusal, StreamId};
use crate::idmap::IdMap;
use crate::jsonrpc::{Id, Notification, Request};
use crate::mcp::modern::InputRequest;
use crate::mcp::{JsonObject, ProtocolVersion, TraceContext};
use crate::secret::Secret;
use crate::session::{Delivery, Failure, FailureKind};
use crate::transport::LinkEvent;
use crate::transport::http::{Frame, HttpLink, HttpPool};
use crate::transport::stdio::{StdioConfig, StdioLink};

/// Where an operation comes from, and where its progress and outcome go.
pub(super) type Reply = reply::ReplySender<Operation, Result<Outcome, OpError>>;

/// Who waits for the handshake.
pub(super) type ConnectReply = oneshot::Sender<Result<Connected, OpError>>;

/// An operation a client asks its driver to start.
pub(super) enum Operation {
    ListTools,
    /// Boxed: a call carries much (272 bytes), and an operation is moved several times on
    /// its way to the machine.
    CallTool(Box<CallTool>),
    Raw {
        method: String,
        params: Option<serde_json::Value>,
        timeout: Option<std::time::Duration>,
    },
    Listen {
        notifications: serde_json::Value,
        max_duration: std::time::Duration,
    },
    Ping,
}

pub(super) enum Command {
    Start {
        reply: ConnectReply,
        /// The trace context of the handshake's requests.
        trace: Option<TraceContext>,
    },
    /// An operation to start, in its reply slot.
    Operation {
        /// The client's name for it, to cancel it by.
        key: u64,
        reply: Reply,
        /// The trace context its requests carry.
        trace: Option<TraceContext>,
        #[cfg(feature = "tracing")]
        span: tracing::Span,
    },
    Cancel {
        key: u64,
        reason: String,
    },
    /// The token source's answer to a refused request: the token to send it again with, or
    /// why there is none.
    Reauthorized {
        id: Id,
        /// The token the request was refused with.
        sent: Option<Secret>,
        token: Result<Secret, auth::NoToken>,
    },
    /// The input handler's answer to a 2025-era server request.
    Answer {
        id: Id,
        answer: Result<serde_json::Value, NoAnswer>,
    },
    /// The input handler's answers to an `input_required` round.
    Input {
        op: OpId,
        answers: Result<JsonObject, String>,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
}

/// The transport under the machine: the HTTP requests in flight, or a stdio server process.
pub(super) enum Link {
    Http(Box<HttpLink>),
    Stdio {
        link: StdioLink,
        events: mpsc::Receiver<LinkEvent>,
        /// How to start the server again, once, when the machine asks for it (a server that
        /// exits on the era probe; the machine never asks past the handshake).
        respawn: Option<Box<StdioConfig>>,
    },
}

/// What the driver keeps per operation.
struct Entry {
    key: u64,
    reply: Reply,
    /// The span the operation was started in: what happens on its requests is reported
    /// there, not in the span the client was made in (a client may outlive the call that
    /// made it).
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

/// A driver's token source and what it needs to run it.
pub(super) struct DriverAuth {
    pub(super) auth: auth::Auth,
    /// For the OAuth flows' requests.
    pub(super) pool: HttpPool,
    pub(super) log: Option<crate::exchange::config::WireLog>,
    /// The last token refused and the one the source gave to replace it.
    pub(super) superseded: Option<(Secret, Secret)>,
}

/// What the driver tells its client besides operation outcomes.
pub(super) struct Shared {
    /// The revision spoken, for the client's getters (the machine's is the one in force).
    pub(super) version: std::sync::Mutex<ProtocolVersion>,
}

pub(super) struct Driver {
    pub(super) connection: Connection,
    pub(super) link: Link,
    /// Where an HTTP session's tokens come from, when not static.
    pub(super) auth: Option<DriverAuth>,
    pub(super) input_handler: Option<Arc<dyn InputHandler>>,
    pub(super) on_warning: Option<super::options::WarningSink>,
    pub(super) notifications: Option<mpsc::Sender<Notification<'static>>>,
    /// Where the handlers' and the token source's answers come back.
    pub(super) answers: mpsc::Sender<Command>,
    pub(super) commands: mpsc::Receiver<Command>,
    pub(super) shared: Arc<Shared>,
    /// Where the endpoint's era verdict is kept, told of a `-32022` switch.
    pub(super) eras: Option<(EraCache, String)>,
    /// The operations in flight. A cancellation, which names its operation by the client's
    /// key, looks for it among them: rarer than an operation, and cheaper than a second map
    /// kept up to date on every one.
    entries: IdMap<OpId, Entry>,
    /// Who waits for the handshake.
    connect: Option<ConnectReply>,
    /// Closing has begun; who waits for it to end.
    closing: Option<Option<oneshot::Sender<()>>>,
}

/// What woke the driver.
enum Wake {
    Http((StreamId, Frame)),
    Stdio(Option<LinkEvent>),
    Command(Option<Command>),
    Deadline,
}

#[allow(clippy::disallowed_methods)] // The driver owns the clock: the one reading of it.
pub(super) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl Driver {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        connection: Connection,
        link: Link,
        auth: Option<DriverAuth>,
        input_handler: Option<Arc<dyn InputHandler>>,
        on_warning: Option<super::options::WarningSink>,
        notifications: Option<mpsc::Sender<Notification<'static>>>,
        answers: mpsc::Sender<Command>,
        commands: mpsc::Receiver<Command>,
        shared: Arc<Shared>,
    ) -> Self {
        Driver {
            connection,
            link,
            auth,
            input_handler,
            on_warning,
            notifications,
            answers,
            commands,
            shared,
            eras: None,
            entries: IdMap::default(),
            connect: None,
            closing: None,
        }
    }

    pub(super) async fn run(mut self: Box<Self>) {
        // One timer for the loop, moved when the next deadline moves: a timer made for each
        // turn would be put into tokio's wheel and taken out again every time.
        let sleep = tokio::time::sleep_until(now().into());
        let mut sleep = std::pin::pin!(sleep);
        let mut armed: Option<Instant> = None;
        loop {
            self.drain();
            if self.connection.is_closed() {
                if let Some(Some(reply)) = self.closing.take() {
                    let _ = reply.send(());
                }
                return;
            }
            // The timer only ever moves earlier. A later deadline (each call's, once the call
            // before it armed the timer for its own) waits for the armed one: that costs one
            // wake with nothing due, at most once per armed deadline, rather than a timer-wheel
            // update on every change; the timer is then set to the deadline of that moment.
            // The machine handles a timeout that comes early as one with nothing due.
            match (self.connection.poll_timeout(), armed) {
                (Some(at), Some(current)) if at >= current => {}
                (Some(at), _) => {
                    sleep.as_mut().reset(at.into());
                    armed = Some(at);
                }
                (None, _) => {}
            }
            let closing = self.closing.is_some();
            // Link events first and the deadline last: an answer that has arrived is taken in
            // before a timeout could fail its request.
            let wake = std::future::poll_fn(|cx| {
                match &mut self.link {
                    Link::Http(link) => {
                        if let Poll::Ready(frame) = link.poll_frame(cx) {
                            return Poll::Ready(Wake::Http(frame));
                        }
                    }
                    Link::Stdio { events, .. } => {
                        if let Poll::Ready(event) = events.poll_recv(cx) {
                            return Poll::Ready(Wake::Stdio(event));
                        }
                    }
                }
                if !closing && let Poll::Ready(command) = self.commands.poll_recv(cx) {
                    return Poll::Ready(Wake::Command(command));
                }
                if armed.is_some() && sleep.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Wake::Deadline);
                }
                Poll::Pending
            })
            .await;
            let now = now();
            match wake {
                Wake::Http((stream, frame)) => {
                    #[cfg(feature = "tracing")]
                    let _span = self
                        .connection
                        .op_on(stream)
                        .and_then(|op| self.entries.get(&op))
                        .map(|entry| entry.span.clone().entered());
                    self.prepare_bearer();
                    self.connection.handle_frame(stream, frame, now);
                }
                Wake::Stdio(Some(LinkEvent::Message(message))) => {
                    self.connection.handle_message(message, now);
                }
                Wake::Stdio(Some(LinkEvent::Down(failure))) => self.on_stdio_down(failure, now),
                // The link's tasks are gone: nothing more will arrive.
                Wake::Stdio(None) => {
                    if self.closing.is_none() {
                        self.closing = Some(None);
                    }
                    self.connection.handle_link_closed(now);
                }
                Wake::Command(Some(Command::Close { reply })) => {
                    self.begin_close(Some(reply), now).await;
                }
                Wake::Command(Some(command)) => self.on_command(command, now),
                Wake::Command(None) => self.begin_close(None, now).await,
                Wake::Deadline => {
                    // Fired: set again to whatever is next.
                    armed = None;
                    self.prepare_bearer();
                    self.connection.handle_timeout(now);
                }
            }
        }
    }

    /// Closes the connection; an HTTP link then finishes its `DELETE` while the loop runs on,
    /// a stdio server is shut down here.
    async fn begin_close(&mut self, reply: Option<oneshot::Sender<()>>, now: Instant) {
        if self.closing.is_some() {
            return;
        }
        self.closing = Some(reply);
        self.connection.close(now);
        self.drain();
        if let Link::Stdio { link, .. } = &mut self.link {
            link.close().await;
        }
    }

    fn on_command(&mut self, command: Command, now: Instant) {
        match command {
            Command::Start { reply, trace } => {
                self.connect = Some(reply);
                self.prepare_bearer();
                self.connection.set_handshake_trace(trace);
                self.connection.start(now);
            }
            Command::Operation {
                key,
                reply,
                trace,
                #[cfg(feature = "tracing")]
                span,
            } => {
                let Some(operation) = reply.take_request() else {
                    return;
                };
                self.prepare_bearer();
                let connection = &mut self.connection;
                let op = match operation {
                    Operation::ListTools => connection.list_tools(trace, now),
                    Operation::CallTool(mut call) => {
                        call.trace = trace;
                        connection.call_tool(*call, now)
                    }
                    Operation::Raw {
                        method,
                        params,
                        timeout,
                    } => connection.request_raw(&method, params, timeout, trace, now),
                    Operation::Listen {
                        notifications,
                        max_duration,
                    } => connection.listen(notifications, max_duration, trace, now),
                    Operation::Ping => connection.ping(trace, now),
                };
                self.entries.insert(
                    op,
                    Entry {
                        key,
                        reply,
                        #[cfg(feature = "tracing")]
                        span,
                    },
                );
            }
            Command::Cancel { key, reason } => {
                let op = self.entries.iter().find(|(_, entry)| entry.key == key);
                if let Some(op) = op.map(|(op, _)| *op) {
                    self.connection.cancel(op, &reason, now);
                }
            }
            Command::Answer { id, answer } => match answer {
                Ok(answer) => self.connection.answer_server_request(&id, Ok(answer), now),
                Err(NoAnswer::Declined) => self.connection.decline_server_request(&id, now),
                Err(NoAnswer::Failed(why)) => {
                    self.connection.answer_server_request(&id, Err(why), now)
                }
            },
            Command::Input { op, answers } => {
                self.prepare_bearer();
                self.connection.answer_input(op, answers, now);
            }
            Command::Reauthorized { id, sent, token } => match token {
                Ok(token) => {
                    if let Some(auth) = &mut self.auth {
                        auth.superseded = sent.map(|old| (old, token.clone()));
                    }
                    self.connection.resend(&id, Some(token), now);
                }
                Err(no_token) => {
                    self.connection
                        .reject(&id, &no_token.message, no_token.cause, now);
                }
            },
            Command::Close { .. } => {}
        }
    }

    /// Puts the token source's current token on the next requests, and starts the
    /// background refresh of one that is due.
    fn prepare_bearer(&mut self) {
        let Some(auth) = &self.auth else {
            return;
        };
        auth.auth.refresh_if_due(&auth.pool, auth.log.as_ref());
        let mut token = auth.auth.token();
        // A source that still hands out the token it gave a replacement for: the replacement.
        if let (Some(given), Some((old, new))) = (&token, &auth.superseded)
            && given == old
        {
            token = Some(new.clone());
        }
        if token.as_ref() != self.connection.bearer() {
            let secrets = auth.auth.secrets();
            self.connection.add_secrets(secrets);
            self.connection.set_bearer(token);
        }
    }

    /// The server refused a request's credentials: the token source is asked for a new
    /// token in a task of its own (a flow's requests, a person's approval), whose answer
    /// comes back as a command; the other requests go on meanwhile.
    fn on_refusal(&mut self, refusal: Refusal) {
        let Some(auth) = &self.auth else {
            self.connection
                .reject(&refusal.id, "no token source is configured", None, now());
            return;
        };
        let (source, pool, log) = (auth.auth.clone(), auth.pool.clone(), auth.log.clone());
        let answers = self.answers.clone();
        tokio::spawn(async move {
            let token = source.refused(&pool, &refusal, log.as_ref()).await;
            let _ = answers
                .send(Command::Reauthorized {
                    id: refusal.id,
                    sent: refusal.sent,
                    token,
                })
                .await;
        });
    }

    fn on_stdio_down(&mut self, failure: Failure, now: Instant) {
        if !self.connection.handle_link_down(failure, now) {
            return;
        }
        let Link::Stdio {
            link,
            events,
            respawn,
        } = &mut self.link
        else {
            return;
        };
        let Some(config) = respawn.take() else {
            let failure = Failure::new(
                FailureKind::ConnectionLost,
                Delivery::MayHaveReached,
                "the stdio server exited on the era probe",
            );
            self.connection.handle_link_down(failure, now);
            return;
        };
        // A 2025-era server that exits on a message it does not know: started again, it
        // gets `initialize` first.
        let (events_tx, new_events) = mpsc::channel(256);
        match StdioLink::spawn(*config, events_tx) {
            Ok(new_link) => {
                *link = new_link;
                *events = new_events;
            }
            Err(failure) => {
                self.connection.handle_link_down(failure, now);
            }
        }
    }

    /// Carries out everything the machine asks for, until it asks for nothing.
    fn drain(&mut self) {
        while let Some(output) = self.connection.poll_output() {
            self.on_output(output);
        }
    }

    fn on_output(&mut self, output: Output) {
        match output {
            Output::HttpSend {
                stream,
                mut request,
            } => {
                if let Some(auth) = &self.auth {
                    // A DPoP-bound token goes with a proof made now, one per request.
                    auth.auth.present(&mut request);
                }
                if let Link::Http(link) = &mut self.link {
                    link.start(stream, request);
                }
            }
            Output::HttpAbort(stream) => {
                if let Link::Http(link) = &mut self.link {
                    link.abort(stream);
                }
            }
            Output::StdioSend(message) => {
                // One writer task writes stdin in order: queued is as good as sent.
                if let Link::Stdio { link, .. } = &mut self.link {
                    link.send(message);
                }
            }
            Output::Connected(connected) => {
                if let Ok(mut version) = self.shared.version.lock() {
                    *version = connected.version;
                }
                if let Some(connect) = self.connect.take() {
                    let _ = connect.send(Ok(*connected));
                }
            }
            Output::ConnectFailed(error) => {
                if let Some(connect) = self.connect.take() {
                    let _ = connect.send(Err(error));
                }
            }
            Output::Progress { op, params } => {
                if let Some(entry) = self.entries.get(&op) {
                    entry.reply.progress(params);
                }
            }
            Output::TaskStatus { op, update } => {
                if let Some(entry) = self.entries.get(&op) {
                    entry.reply.task(update);
                }
            }
            Output::Input {
                op,
                requests,
                kinds,
            } => self.on_input(op, requests, kinds),
            Output::ServerRequest(request, kind) => self.on_server_request(request, kind),
            Output::ElicitationComplete(id) => {
                if let Some(handler) = &self.input_handler {
                    handler.elicitation_complete(&id);
                }
            }
            Output::Refused(refusal) => {
                // RFC 9449 section 9: a nonce for the proof, not a refused token: sent again
                // once with the same token and a new proof.
                match &self.auth {
                    Some(auth) if auth.auth.resource_nonce(&refusal) => {
                        // Refused again for a nonce, it fails (one retry); the drain goes on.
                        self.connection.resend_for_nonce(&refusal.id, now());
                    }
                    _ => self.on_refusal(refusal),
                }
            }
            Output::Accepted => {
                if let Some(auth) = &self.auth {
                    auth.auth.accepted();
                }
            }
            Output::DpopNonce(nonce) => {
                // Before the requests that follow are presented: they carry it.
                if let Some(auth) = &self.auth {
                    auth.auth.note_nonce(&nonce);
                }
            }
            Output::Notification(notification) => {
                if let Some(sink) = &self.notifications {
                    let _ = sink.try_send(notification);
                }
            }
            Output::Warning(message) => {
                if let Some(sink) = &self.on_warning {
                    sink(&message);
                }
            }
            Output::VersionSwitched(version) => {
                if let Ok(mut current) = self.shared.version.lock() {
                    *current = version;
                }
                if let Some((eras, url)) = &self.eras {
                    // What the server said of itself stands: only the revision changed.
                    let server = eras.get(url).and_then(|verdict| verdict.server);
                    let modern = Some(version);
                    eras.put(url, Verdict { modern, server });
                }
            }
            Output::Done { op, outcome } => {
                if let Some(entry) = self.entries.remove(&op) {
                    entry.reply.send(outcome);
                }
            }
            Output::Closed => {}
        }
    }

    /// An `input_required` round: the handler answers each request in turn (it may wait on a
    /// person), in a task whose answers come back as a command.
    fn on_input(&mut self, op: OpId, requests: Vec<InputRequest>, kinds: Vec<InputKind>) {
        let Some(handler) = self.input_handler.clone() else {
            self.connection.answer_input(
                op,
                Err("this client has no input handler".to_owned()),
                now(),
            );
            return;
        };
        let answers = self.answers.clone();
        tokio::spawn(async move {
            let mut answered = JsonObject::new();
            let mut outcome = Ok(());
            for (request, kind) in requests.into_iter().zip(kinds) {
                let key = request.key.clone();
                match answer_one(&*handler, request, kind).await {
                    Ok(answer) => {
                        answered.insert(key, answer);
                    }
                    Err(error) => {
                        outcome = Err(error.to_string());
                        break;
                    }
                }
            }
            let answers_given = outcome.map(|()| answered);
            let _ = answers
                .send(Command::Input {
                    op,
                    answers: answers_given,
                })
                .await;
        });
    }

    /// A 2025-era server request for input: the handler answers it in a task of its own.
    fn on_server_request(&mut self, request: Request<'static>, kind: InputKind) {
        let id = request.id.clone();
        let Some(handler) = self.input_handler.clone() else {
            // Not forwarded without a handler (the machine answers those itself).
            let why = "this client has no input handler".to_owned();
            self.connection.answer_server_request(&id, Err(why), now());
            return;
        };
        let answers = self.answers.clone();
        let input = InputRequest {
            key: String::new(),
            method: request.method.into_owned(),
            params: request.params.map(|p| p.into_owned()),
        };
        tokio::spawn(async move {
            let answer = answer_one(&*handler, input, kind).await;
            let _ = answers.send(Command::Answer { id, answer }).await;
        });
    }
}

/// Why the handler gave no answer to a request for input.
#[derive(Debug)]
pub(super) enum NoAnswer {
    /// The user declined a sampling request (`-1` at 2025-era revisions).
    Declined,
    /// The handler failed, or its answer broke the request's rules.
    Failed(String),
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAnswer::Declined => f.write_str("the user declined the sampling request"),
            NoAnswer::Failed(why) => f.write_str(why),
        }
    }
}

/// Asks the handler the method its kind calls for, and checks a sampling answer against
/// its request.
async fn answer_one(
    handler: &dyn InputHandler,
    request: InputRequest,
    kind: InputKind,
) -> Result<serde_json::Value, NoAnswer> {
    let failed =
        |error: Box<dyn std::error::Error + Send + Sync>| NoAnswer::Failed(error.to_string());
    match kind {
        InputKind::Plain => handler.answer(request).await.map_err(failed),
        InputKind::Url(elicitation) => handler
            .elicit_url(elicitation)
            .await
            .map(|action| action.to_result())
            .map_err(failed),
        InputKind::ToolSampling(sampling) => {
            let rules = sampling.clone();
            match handler.sample_with_tools(*sampling).await.map_err(failed)? {
                Some(answer) => rules.answer_json(&answer).map_err(|why| {
                    NoAnswer::Failed(format!("the sampling answer is refused: {why}"))
                }),
                None => Err(NoAnswer::Declined),
            }
        }
    }
}
