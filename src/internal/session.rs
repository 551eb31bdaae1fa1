//! The `session` harness: an operation sequence decoded from the fuzz input drives the sans-IO
//! session machine against a model of what it must do, on a fake clock.

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::jsonrpc::{self, Id, Message};
use crate::mcp::{ProgressNotificationParams, methods};
use crate::session::{
    Config, Delivery, Failure, FailureKind, Output, RequestError, RequestOptions, Session,
};

/// The most operations one input runs, so every input runs quickly.
const MAX_OPS: usize = 512;

/// The fake clock's origin. The session never reads the clock; the harness needs one instant
/// to start from and moves it only by the input's steps.
#[allow(clippy::disallowed_methods)]
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Reads the input a byte at a time; an exhausted input reads as zeros and ends the loop.
struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&byte, rest)) => {
                self.data = rest;
                byte
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let (taken, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        taken
    }
}

/// What the harness knows of one request it made.
struct Made {
    method: String,
    /// The hard deadline.
    deadline: Instant,
    /// The idle timeout and its current deadline.
    idle: Option<(Duration, Instant)>,
    token: Option<Id>,
    handed_out: bool,
    /// When the session stopped reporting it pending (it was settled then).
    ended_at: Option<Instant>,
    settled: usize,
}

impl Made {
    fn next_deadline(&self) -> Instant {
        match self.idle {
            Some((_, idle)) => idle.min(self.deadline),
            None => self.deadline,
        }
    }
}

/// The model beside the session.
struct Model {
    session: Session,
    now: Instant,
    made: HashMap<Id, Made>,
    /// Ids of made requests, in order, so the input can pick one by index.
    order: Vec<Id>,
    /// The methods of the requests the server sent us, by id, in order (an id may repeat).
    server_requests: HashMap<Id, VecDeque<String>>,
    /// `notifications/cancelled` seen for each request.
    cancel_notices: HashMap<Id, usize>,
    closed: bool,
}

/// The `session` fuzz target. The first byte sets the pending-request limit and which
/// revisions the session accepts; the rest is a sequence of operations: make a request,
/// hand outputs to the "transport", receive a response (matching, wrong or unknown id, result
/// or error), progress, a server request (ping, elicitation, sampling, any other), arbitrary
/// JSON-RPC bytes, advance the clock, cancel, a transport failure, fail all, close, notify.
///
/// Checks, after every operation: the session and the model agree on what is pending and on
/// the next deadline; no pending request is past its deadline after `handle_timeout`, and a
/// timeout settles only a request whose deadline passed; every settlement is of a request that
/// was made and is its first; a result, a server error, or any delivery other than `NotSent`
/// only for a request handed to the transport; `notifications/cancelled` only for a request
/// handed out, never for initialize, at most once; every answer to a server request answers one
/// (ping with `{}`, anything else with -32601); nothing is transmitted after close. At the end,
/// after close, every request made has settled exactly once.
pub(crate) fn fuzz_session(data: &[u8]) {
    let mut input = Bytes { data };
    let knob = input.u8();
    let mut config = Config {
        max_pending_requests: 1 + usize::from(knob & 0x0F),
        initialize_timeout: Duration::from_millis(500 + 100 * u64::from(knob >> 4)),
        // The model is of the 2025-era handshake; the probe has its own tests.
        era: crate::session::EraPolicy::Legacy,
        ..Config::default()
    };
    if knob & 0x80 != 0 {
        config
            .accepted_versions
            .retain(|v| v.as_str() != "2025-06-18");
    }
    let now = origin();
    let mut model = Model {
        session: Session::new(config.clone()),
        now,
        made: HashMap::new(),
        order: Vec::new(),
        server_requests: HashMap::new(),
        cancel_notices: HashMap::new(),
        closed: false,
    };
    model.session.start(now);
    let initialize_id = Id::Number(0);
    model.track(
        initialize_id.clone(),
        methods::INITIALIZE,
        &RequestOptions::with_timeout(config.initialize_timeout),
    );
    let mut ops = 0;
    while !input.data.is_empty() && ops < MAX_OPS {
        ops += 1;
        model.step(&mut input, &initialize_id);
        model.check_pending();
    }
    model.session.close();
    model.closed = true;
    model.check_pending();
    model.drain(usize::MAX);
    for (id, made) in &model.made {
        assert_eq!(
            made.settled, 1,
            "request {id} settled {} times",
            made.settled
        );
    }
    assert!(model.session.poll_timeout().is_none());
}

impl Model {
    fn track(&mut self, id: Id, method: &str, options: &RequestOptions) {
        let made = Made {
            method: method.to_owned(),
            deadline: self.now + options.timeout,
            idle: options.idle_timeout.map(|idle| (idle, self.now + idle)),
            token: options.progress_token.clone(),
            handed_out: false,
            ended_at: None,
            settled: 0,
        };
        assert!(
            self.made.insert(id.clone(), made).is_none(),
            "the session reused the id {id}"
        );
        self.order.push(id);
    }

    /// A made request chosen by the input, or an id nobody made.
    fn pick(&self, choice: u8) -> Id {
        if self.order.is_empty() || choice >= 0xF0 {
            return Id::Number(1000 + i64::from(choice));
        }
        self.order[usize::from(choice) % self.order.len()].clone()
    }

    fn receive(&mut self, message: &Value) {
        let text = message.to_string();
        if let Ok(message) = jsonrpc::decode_message(text.as_bytes()) {
            self.deliver(message);
        }
    }

    /// Hands a server message to the session, keeping the model's idle deadlines: progress
    /// reaches the pending request its token routes to (the latest pending request carrying
    /// it) and restarts that request's idle deadline.
    fn deliver(&mut self, message: Message<'_>) {
        self.note_server_request(&message);
        let token = match &message {
            Message::Notification(n) if n.method == methods::PROGRESS => n
                .params
                .as_deref()
                .and_then(|raw| serde_json::from_str::<ProgressNotificationParams>(raw.get()).ok())
                .map(|params| params.progress_token),
            _ => None,
        };
        let routed = token.and_then(|token| {
            self.order
                .iter()
                .rev()
                .find(|id| {
                    self.made[*id].token.as_ref() == Some(&token)
                        && self.made[*id].ended_at.is_none()
                })
                .cloned()
        });
        self.session.handle_message(message, self.now);
        if let Some(id) = routed
            && let Some(made) = self.made.get_mut(&id)
            && let Some((idle, deadline)) = &mut made.idle
            && self.session.is_pending(&id)
        {
            *deadline = self.now + *idle;
        }
    }

    fn note_server_request(&mut self, message: &Message<'_>) {
        if let Message::Request(request) = message {
            if matches!(self.session.phase(), crate::session::Phase::Closed) {
                return;
            }
            self.server_requests
                .entry(request.id.clone())
                .or_default()
                .push_back(request.method.to_string());
        }
    }

    fn step(&mut self, input: &mut Bytes<'_>, initialize_id: &Id) {
        match input.u8() % 16 {
            0 | 1 => {
                let method = match input.u8() % 5 {
                    0 | 1 => methods::TOOLS_CALL,
                    2 => methods::TOOLS_LIST,
                    3 => methods::PING,
                    _ => "prompts/list",
                };
                let timeout = Duration::from_millis(1 + u64::from(input.u16()));
                let idle = input.u8();
                let options = RequestOptions {
                    timeout,
                    idle_timeout: (idle & 1 == 1)
                        .then(|| Duration::from_millis(1 + 8 * u64::from(idle >> 1))),
                    progress_token: match input.u8() % 4 {
                        0 => None,
                        1 => Some(Id::String(format!("tok-{}", self.order.len()))),
                        _ => Some(Id::Number(self.order.len() as i64)),
                    },
                };
                let pending = self.made.values().filter(|m| m.ended_at.is_none()).count();
                match self
                    .session
                    .request(method, None, options.clone(), self.now)
                {
                    Ok(id) => {
                        assert!(
                            matches!(self.session.phase(), crate::session::Phase::Ready { .. }),
                            "a request was accepted before the session was ready"
                        );
                        self.track(id, method, &options);
                    }
                    Err(RequestError::TooManyPending { limit }) => {
                        assert!(pending >= limit, "refused at {pending} of {limit}");
                    }
                    Err(RequestError::Closed) => assert!(matches!(
                        self.session.phase(),
                        crate::session::Phase::Closed
                    )),
                    Err(_) => {}
                }
            }
            2 | 3 => {
                let n = usize::from(input.u8() % 8);
                self.drain(n);
            }
            4 | 5 => {
                let id = self.pick(input.u8());
                let message = match input.u8() % 6 {
                    0 => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "no"}})
                    }
                    1 if id == *initialize_id => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-06-18",
                        "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}})
                    }
                    2 if id == *initialize_id => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "1999-01-01",
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}})
                    }
                    3 if id == *initialize_id => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 7}})
                    }
                    _ if id == *initialize_id => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}})
                    }
                    _ => json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}),
                };
                self.receive(&message);
            }
            6 => {
                let choice = input.u8();
                let token = match self
                    .made
                    .get(&self.pick(choice))
                    .and_then(|m| m.token.clone())
                {
                    Some(token) if choice & 1 == 0 => token,
                    _ => Id::Number(i64::from(choice)),
                };
                let message = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": choice, "total": 255}});
                self.receive(&message);
            }
            7 => {
                let id = Id::Number(i64::from(input.u8() % 4));
                let method = match input.u8() % 4 {
                    0 => methods::PING,
                    1 => methods::ELICITATION_CREATE,
                    2 => "sampling/createMessage",
                    _ => "roots/list",
                };
                let calls: Vec<Id> = self
                    .made
                    .iter()
                    .filter(|(id, m)| {
                        m.method == methods::TOOLS_CALL && self.session.is_pending(id)
                    })
                    .map(|(id, _)| id.clone())
                    .collect();
                let open = !matches!(self.session.phase(), crate::session::Phase::Closed);
                self.receive(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}));
                if method == methods::ELICITATION_CREATE && open {
                    for call in calls {
                        assert!(
                            !self.session.is_pending(&call),
                            "elicitation left {call} pending"
                        );
                    }
                }
            }
            8 => {
                let len = usize::from(input.u8());
                if let Ok(packet) = jsonrpc::decode(input.take(len)) {
                    for message in packet.into_messages() {
                        self.deliver(message);
                    }
                }
            }
            9 | 10 => {
                self.now += Duration::from_millis(u64::from(input.u16()) >> (input.u8() % 8));
                self.session.handle_timeout(self.now);
            }
            11 => {
                let id = self.pick(input.u8());
                self.session.cancel(&id, "fuzz");
            }
            12 => {
                // The transport reports only on requests it was handed.
                let id = self.pick(input.u8());
                let (kind, delivery) = match input.u8() % 4 {
                    0 => (FailureKind::Connect, Delivery::NotSent),
                    1 => (FailureKind::Unauthorized { status: 401 }, Delivery::Refused),
                    2 => (FailureKind::ConnectionLost, Delivery::MayHaveReached),
                    _ => (FailureKind::Protocol, Delivery::Answered),
                };
                if self.made.get(&id).is_some_and(|m| m.handed_out) {
                    self.session
                        .fail_request(&id, Failure::new(kind, delivery, "fuzz"));
                }
            }
            13 => {
                let delivery = if input.u8() & 1 == 0 {
                    Delivery::MayHaveReached
                } else {
                    Delivery::NotSent
                };
                self.session
                    .fail_all(&Failure::new(FailureKind::ConnectionLost, delivery, "fuzz"));
                self.closed = true;
            }
            14 => {
                self.session.close();
                self.closed = true;
            }
            _ => self
                .session
                .notify("notifications/roots/list_changed", None),
        }
    }

    /// The session and the model agree on what is pending and when the next deadline is; no
    /// pending request is past its deadline.
    fn check_pending(&mut self) {
        let now = self.now;
        let mut next: Option<Instant> = None;
        for (id, made) in &mut self.made {
            let pending = self.session.is_pending(id);
            if made.ended_at.is_some() {
                assert!(!pending, "{id} is pending again");
                continue;
            }
            if !pending {
                made.ended_at = Some(now);
                continue;
            }
            let deadline = made.next_deadline();
            // `handle_timeout` runs after every clock step, and a request made or
            // progressed at `now` has a deadline at least 1 ms later.
            assert!(deadline > now, "{id} is pending past its deadline");
            next = Some(next.map_or(deadline, |n: Instant| n.min(deadline)));
        }
        assert_eq!(self.session.poll_timeout(), next, "the next deadline");
    }

    /// Takes up to `n` outputs as a driver would.
    fn drain(&mut self, n: usize) {
        for _ in 0..n {
            let Some(output) = self.session.poll_output() else {
                return;
            };
            match output {
                Output::Transmit(transmit) => {
                    assert!(
                        !self.closed,
                        "transmitted after close: {:?}",
                        transmit.message
                    );
                    self.transmitted(&transmit.message);
                }
                Output::Settled(settled) => self.settled(&settled.id, &settled.outcome),
                Output::Progress { id, .. } => {
                    assert!(self.made.contains_key(&id), "progress for {id}, never made");
                }
                Output::Notification(_) => {}
                // The handshake's outcome is checked where its initialize request settles.
                Output::Ready(_) => {}
                Output::ServerRequest(request) => {
                    panic!("forwarded a server request with forwarding off: {request:?}")
                }
            }
        }
    }

    fn transmitted(&mut self, message: &Message<'_>) {
        match message {
            Message::Request(request) => {
                let made = self
                    .made
                    .get_mut(&request.id)
                    .unwrap_or_else(|| panic!("sent {}, never made", request.id));
                assert_eq!(made.method, request.method);
                assert!(
                    made.ended_at.is_none(),
                    "sent {} after it settled",
                    request.id
                );
                assert!(!made.handed_out, "sent {} twice", request.id);
                made.handed_out = true;
            }
            Message::Notification(notification) if notification.method == methods::CANCELLED => {
                let params: Value = notification
                    .params
                    .as_deref()
                    .and_then(|raw| serde_json::from_str(raw.get()).ok())
                    .unwrap_or_default();
                let id: Id = serde_json::from_value(params["requestId"].clone())
                    .unwrap_or_else(|e| panic!("cancelled without a request id: {e}"));
                let made = self.made.get(&id);
                assert!(
                    made.is_some_and(|m| m.handed_out && m.method != methods::INITIALIZE),
                    "notifications/cancelled for {id}, which was not handed out or is initialize"
                );
                let count = self.cancel_notices.entry(id.clone()).or_default();
                *count += 1;
                assert_eq!(*count, 1, "{id} cancelled twice on the wire");
            }
            Message::Notification(_) => {}
            Message::Response(response) => {
                let id = response
                    .id
                    .clone()
                    .unwrap_or_else(|| panic!("an answer without id"));
                // Answers go out in the order the requests came.
                let method = self
                    .server_requests
                    .get_mut(&id)
                    .and_then(VecDeque::pop_front)
                    .unwrap_or_else(|| panic!("answered {id}, which the server did not ask"));
                match &response.outcome {
                    Ok(result) => {
                        assert_eq!(method, methods::PING, "answered {method} with a result");
                        assert_eq!(result.get(), "{}");
                    }
                    Err(error) => {
                        assert_ne!(method, methods::PING, "answered ping with an error");
                        assert_eq!(error.code, jsonrpc::METHOD_NOT_FOUND);
                    }
                }
            }
        }
    }

    fn settled(&mut self, id: &Id, outcome: &Result<crate::session::Payload, Failure>) {
        let made = self
            .made
            .get_mut(id)
            .unwrap_or_else(|| panic!("settled {id}, never made"));
        made.settled += 1;
        assert_eq!(made.settled, 1, "{id} settled twice");
        let ended_at = made.ended_at.unwrap_or(self.now);
        match outcome {
            Ok(_) => assert!(made.handed_out, "{id} got a result before it was sent"),
            Err(failure) => {
                if failure.delivery != Delivery::NotSent {
                    assert!(
                        made.handed_out,
                        "{id} settled {:?} ({:?}) but was never sent",
                        failure.kind, failure.delivery
                    );
                }
                if matches!(failure.kind, FailureKind::ServerError { .. }) {
                    assert!(
                        made.handed_out,
                        "{id} got a server error before it was sent"
                    );
                }
                match failure.kind {
                    FailureKind::Timeout => assert!(
                        made.deadline <= ended_at,
                        "{id} timed out before its deadline"
                    ),
                    FailureKind::IdleTimeout => assert!(
                        made.idle.is_some_and(|(_, idle)| idle <= ended_at)
                            && made.deadline > ended_at,
                        "{id} idle-timed out early"
                    ),
                    _ => {}
                }
            }
        }
    }
}
