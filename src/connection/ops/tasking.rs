//! A `tools/call` that became a task: polling `tasks/get` at the server's interval within the
//! call's deadline, fetching the result (`tasks/result` at 2025-11-25, the terminal
//! `tasks/get` at 2026-07-28), the host's input (`tasks/update` at 2026-07-28), status
//! notifications, and `tasks/cancel` when the call is cancelled or its deadline passes.
//! Polling is never re-sending: the `tools/call` went once; every later request only reads
//! or steers the task it made.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;

use super::{Op, answered, call_outcome};
use crate::connection::task::{Step, TaskPoll};
use crate::connection::{Connection, OpError, OpId, Output};
use crate::exchange::SendOptions;
use crate::jsonrpc::ErrorObject;
use crate::mcp::tasks::{self, TaskState};
use crate::mcp::{CallToolResult, ContentOnly, ProgressToken, TaskError, methods};
use crate::session::{Delivery, Failure, FailureKind, Payload, RequestOptions};

/// How long a `tasks/cancel` may take. The call it stops has ended already (its deadline
/// passed, or the host cancelled); closing the connection waits for it this long at most.
const CANCEL_WAIT: Duration = Duration::from_secs(2);
/// How many requests about a task in a row may break (a lost stream, a request timeout short
/// of the deadline) before the call fails: each is asked again at the next poll.
const MAX_BROKEN: usize = 5;

/// A request about the task in flight.
#[derive(Debug)]
pub(in crate::connection) enum Asking {
    Get,
    Result,
    /// `tasks/update` with the answers to these keys.
    Update(Vec<String>),
}

/// The task a call made.
#[derive(Debug)]
pub(in crate::connection) struct TaskRun {
    pub(super) poll: TaskPoll,
    /// When the next `tasks/get` goes out: `None` while a request about the task is in
    /// flight or the host is answering its input.
    pub(super) wake: Option<Instant>,
    pub(super) asking: Option<Asking>,
    /// Requests broken in a row.
    broken: usize,
    /// The call's progress token: progress about the task comes under it.
    token: Option<ProgressToken>,
}

/// The `task` member of a 2025-11-25 task-augmented `tools/call`.
#[derive(Debug, serde::Serialize)]
pub(in crate::connection) struct TaskParam {
    /// How long the server should keep the task, in milliseconds: the call's own deadline.
    pub(in crate::connection) ttl: u64,
}

impl Connection {
    /// A call's answer was a `CreateTaskResult`: the task is followed from here.
    pub(super) fn start_task(
        &mut self,
        op: OpId,
        created: Result<TaskState, TaskError>,
        now: Instant,
    ) {
        let modern = self.is_modern();
        let started = created.and_then(|state| TaskPoll::created(state, modern));
        let (poll, step) = match started {
            Ok(started) => started,
            // The call was answered, but with a task that cannot be followed: the tool may
            // be running, and nobody can say what it does.
            Err(error) => return self.end(op, Err(task_failure(error, None))),
        };
        let Some(Op::Call(call)) = self.ops.get_mut(&op) else {
            return;
        };
        let token = call.task_token.take();
        trace_info!(
            task_id = poll.task_id(),
            tool = &*call.name,
            "the server made a task of the call: polling it"
        );
        let update = poll.update();
        self.tasked = true;
        call.task = Some(Box::new(TaskRun {
            poll,
            wake: None,
            asking: None,
            broken: 0,
            token,
        }));
        self.task_status(op, update);
        self.task_step(op, step, now);
    }

    /// Reports the task's status to the host, credentials taken out of its message.
    fn task_status(&mut self, op: OpId, mut update: crate::mcp::TaskUpdate) {
        if let Some(message) = update
            .status_message
            .as_mut()
            .filter(|_| !self.secrets.is_empty())
        {
            *message = self.redact_text(message);
        }
        self.outputs.push_back(Output::TaskStatus { op, update });
    }

    /// Carries out what the task's polling machine says.
    fn task_step(&mut self, op: OpId, step: Step, now: Instant) {
        let answers_input = self.limits.answers_input;
        let kinds = match &step {
            Step::Input(requests) if answers_input => match self.classify_inputs(requests) {
                Ok(kinds) => kinds,
                Err(refusal) => {
                    let task_id = match self.ops.get(&op) {
                        Some(Op::Call(call)) => call
                            .task
                            .as_deref()
                            .map(|run| run.poll.task_id().to_owned())
                            .unwrap_or_default(),
                        _ => return,
                    };
                    let error = answered(
                        FailureKind::Protocol,
                        format!(
                            "the server's task {task_id:?} asks for input against the client's \
                             capabilities: {refusal}"
                        ),
                    );
                    self.cancel_task(op, now);
                    return self.end_task(op, Err(with_task(error, &task_id)));
                }
            },
            _ => Vec::new(),
        };
        let Some(Op::Call(call)) = self.ops.get_mut(&op) else {
            return;
        };
        let deadline = call.deadline;
        let (content_only, raw) = (call.content_only, call.raw);
        let Some(run) = call.task.as_deref_mut() else {
            return;
        };
        let task_id = run.poll.task_id().to_owned();
        match step {
            Step::Poll(wait) => {
                run.asking = None;
                run.wake = Some((now + wait).min(deadline));
            }
            Step::FetchResult => {
                run.wake = None;
                self.send_task(op, methods::TASKS_RESULT, None, now);
            }
            Step::Input(requests) if answers_input => {
                run.wake = None;
                let asked = requests
                    .iter()
                    .map(|r| r.method.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                call.waiting = Some((asked, None));
                run.asking = Some(Asking::Update(
                    requests.iter().map(|r| r.key.clone()).collect(),
                ));
                self.outputs.push_back(Output::Input {
                    op,
                    requests,
                    kinds,
                });
            }
            Step::Input(requests) => {
                let asked = requests
                    .iter()
                    .map(|r| r.method.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let error = answered(
                    FailureKind::ElicitationRequested,
                    format!(
                        "the server's task {task_id:?} needs input ({asked}) before the tool \
                         can finish, and this client has no input handler"
                    ),
                );
                // It would wait for input that never comes: it is told to stop.
                self.cancel_task(op, now);
                self.end_task(op, Err(with_task(error, &task_id)));
            }
            Step::Complete(result) => {
                let outcome = call_outcome(Payload::Raw(result), content_only, raw);
                self.end_task(op, outcome.map_err(|e| with_task(e, &task_id)));
            }
            Step::Failed(error) => {
                let failure = match serde_json::from_str::<WireError>(error.get()) {
                    Ok(wire) => Failure::from_error_object(&ErrorObject {
                        code: wire.code,
                        message: Cow::Owned(wire.message),
                        data: wire.data.map(Cow::Owned),
                    }),
                    Err(_) => Failure::new(
                        FailureKind::Task(TaskError::InvalidMember),
                        Delivery::Answered,
                        format!(
                            "the task {task_id:?} failed with an error that is no JSON-RPC error"
                        ),
                    ),
                };
                self.end_task(op, Err(with_task(OpError::Failed(failure), &task_id)));
            }
            Step::Cancelled(message) => {
                let failure = Failure::new(
                    FailureKind::Cancelled,
                    Delivery::MayHaveReached,
                    format!(
                        "the server cancelled the task {task_id:?}{}; the tool may have run in part",
                        message.map_or_else(String::new, |m| format!(" ({m})"))
                    ),
                );
                self.end_task(op, Err(with_task(OpError::Failed(failure), &task_id)));
            }
        }
    }

    /// Ends a task call with `outcome`, the task's id in its result's `_meta`
    /// (`io.modelcontextprotocol/related-task`) or its failure.
    fn end_task(&mut self, op: OpId, outcome: Result<super::Outcome, OpError>) {
        let task_id = match self.ops.get(&op) {
            Some(Op::Call(call)) => call.task.as_ref().map(|run| run.poll.task_id().to_owned()),
            _ => None,
        };
        let outcome = match (outcome, task_id) {
            (Ok(super::Outcome::Call(mut result)), Some(task_id)) => {
                related_task(&mut result, &task_id);
                Ok(super::Outcome::Call(result))
            }
            (outcome, _) => outcome,
        };
        self.end(op, outcome);
    }

    /// Sends a request about the call's task: `tasks/get`, `tasks/result`, `tasks/cancel` or
    /// `tasks/update` (with `responses`).
    fn send_task(
        &mut self,
        op: OpId,
        method: &'static str,
        responses: Option<Box<RawValue>>,
        now: Instant,
    ) {
        let modern = self.is_modern();
        let request_timeout = self.limits.request_timeout;
        let Some(Op::Call(call)) = self.ops.get_mut(&op) else {
            return;
        };
        let left = call.deadline.saturating_duration_since(now);
        let (max_bytes, content_only, raw) = (call.max_response_bytes, call.content_only, call.raw);
        let Some(run) = call.task.as_deref_mut() else {
            return;
        };
        let task_id = run.poll.task_id().to_owned();
        if method == methods::TASKS_GET
            && let Err(error) = run.poll.count_poll()
        {
            return self.end_task(op, Err(task_failure(error, Some(&task_id))));
        }
        let timeout = match method {
            // The result waits for the task (2025-11-25): as long as the call may.
            methods::TASKS_RESULT => left,
            _ => left.min(request_timeout),
        };
        run.asking = Some(match method {
            methods::TASKS_GET => Asking::Get,
            methods::TASKS_RESULT => Asking::Result,
            _ => match run.asking.take() {
                Some(Asking::Update(keys)) => Asking::Update(keys),
                _ => Asking::Update(Vec::new()),
            },
        });
        run.wake = None;
        let params = task_params(&task_id, run.poll.request_state().filter(|_| modern));
        let params = match responses {
            Some(responses) => serde_json::to_string(&params).ok().and_then(|text| {
                // `inputResponses` goes in as the host wrote it.
                let head = text.strip_suffix('}')?;
                RawValue::from_string(format!("{head},\"inputResponses\":{}}}", responses.get()))
                    .ok()
            }),
            None => serde_json::value::to_raw_value(&params).ok(),
        };
        let options = RequestOptions {
            timeout,
            idle_timeout: None,
            progress_token: run.token.clone(),
        };
        // What reads the answer: the 2025 result as the call's own; the rest raw.
        let limits = match (method, raw, content_only) {
            (methods::TASKS_RESULT, false, true) => SendOptions::decoding::<ContentOnly>(),
            (methods::TASKS_RESULT, false, false) => SendOptions::decoding::<CallToolResult>(),
            _ => SendOptions::default(),
        };
        let mut limits = limits.with_max_response_bytes(max_bytes);
        if modern {
            limits = limits.with_headers(named(&task_id));
        }
        self.send(
            op,
            Cow::Borrowed(method),
            params,
            None,
            options,
            limits,
            now,
        );
    }

    /// An answer to a request about the call's task.
    pub(super) fn on_task_answer(
        &mut self,
        op: OpId,
        outcome: Result<Payload, Failure>,
        now: Instant,
    ) {
        let modern = self.is_modern();
        let Some(Op::Call(call)) = self.ops.get_mut(&op) else {
            return;
        };
        let (content_only, raw_wanted) = (call.content_only, call.raw);
        let deadline = call.deadline;
        let Some(run) = call.task.as_deref_mut() else {
            return;
        };
        let task_id = run.poll.task_id().to_owned();
        let asking = run.asking.take();
        let failure = match outcome {
            Ok(payload) => {
                run.broken = 0;
                let payload = match self.redact_payload(payload) {
                    Ok(payload) => payload,
                    Err(error) => return self.end_task(op, Err(with_task(error, &task_id))),
                };
                return self.on_task_payload(op, asking, payload, (content_only, raw_wanted), now);
            }
            Err(failure) => failure,
        };
        // The deadline passed during the request: the call is over, and the task is told.
        if now >= deadline {
            return self.task_over(op, FailureKind::Timeout, "the call's deadline passed", now);
        }
        let broke = matches!(
            failure.kind,
            FailureKind::ConnectionLost | FailureKind::Timeout | FailureKind::IdleTimeout
        );
        match asking {
            // A read that broke is asked again at the next poll: it changes nothing.
            Some(Asking::Get | Asking::Result) if broke && run.broken < MAX_BROKEN => {
                run.broken += 1;
                trace_info!(
                    task_id = task_id.as_str(),
                    "a request about the task broke; polling it again"
                );
                let wait = run.poll.interval();
                run.wake = Some((now + wait).min(deadline));
            }
            // The input went (the server acknowledges even unknown tasks); poll on.
            Some(Asking::Update(keys)) if !broke => {
                run.poll.answered(keys);
                let wait = run.poll.interval();
                run.wake = Some((now + wait).min(deadline));
            }
            _ => {
                let error = match (modern, &failure.kind) {
                    // The task's own error (2025-11-25 `tasks/result` returns exactly what
                    // the call would have): its outcome is known.
                    (false, FailureKind::ServerError { .. })
                        if matches!(asking, Some(Asking::Result)) =>
                    {
                        OpError::Failed(failure)
                    }
                    _ => OpError::Failed(Failure::new(
                        failure.kind.clone(),
                        Delivery::MayHaveReached,
                        format!(
                            "the task {task_id:?} could not be followed: {}",
                            failure.detail
                        ),
                    )),
                };
                self.end_task(op, Err(with_task(error, &task_id)));
            }
        }
    }

    fn on_task_payload(
        &mut self,
        op: OpId,
        asking: Option<Asking>,
        payload: Payload,
        (content_only, raw_wanted): (bool, bool),
        now: Instant,
    ) {
        let modern = self.is_modern();
        let Some(Op::Call(call)) = self.ops.get_mut(&op) else {
            return;
        };
        let deadline = call.deadline;
        let Some(run) = call.task.as_deref_mut() else {
            return;
        };
        let task_id = run.poll.task_id().to_owned();
        match asking {
            Some(Asking::Result) => {
                let outcome = call_outcome(payload, content_only, raw_wanted);
                self.end_task(op, outcome.map_err(|e| with_task(e, &task_id)))
            }
            Some(Asking::Update(keys)) => {
                run.poll.answered(keys);
                let wait = run.poll.interval();
                run.wake = Some((now + wait).min(deadline));
            }
            Some(Asking::Get) => {
                let Payload::Raw(raw) = payload else {
                    let error = task_failure(TaskError::NotAnObject, Some(&task_id));
                    return self.end_task(op, Err(error));
                };
                if modern && let Err(error) = crate::mcp::modern::ResultEnvelope::read(&raw) {
                    let error = super::malformed(methods::TASKS_GET, &error);
                    return self.end_task(op, Err(with_task(error, &task_id)));
                }
                self.on_task_state(op, tasks::read_task(&raw), now);
            }
            None => {}
        }
    }

    /// A task message about the call's task (a `tasks/get` answer, a status notification).
    fn on_task_state(&mut self, op: OpId, state: Result<TaskState, TaskError>, now: Instant) {
        let Some(Op::Call(call)) = self.ops.get_mut(&op) else {
            return;
        };
        let Some(run) = call.task.as_deref_mut() else {
            return;
        };
        let task_id = run.poll.task_id().to_owned();
        let before = run.poll.update();
        let step = state.and_then(|state| run.poll.on_state(state));
        let update = run.poll.update();
        let step = match step {
            Ok(step) => step,
            Err(error) => return self.end_task(op, Err(task_failure(error, Some(&task_id)))),
        };
        if update != before {
            self.task_status(op, update);
        }
        self.task_step(op, step, now);
    }

    /// A `notifications/tasks/status`: the task it names is brought up to date, if a call is
    /// waiting on it between polls (one with a request in flight gets its answer).
    pub(in crate::connection) fn on_task_notification(
        &mut self,
        params: Option<&RawValue>,
        now: Instant,
    ) {
        let Some(params) = params else { return };
        let Ok(state) = tasks::read_task(params) else {
            return;
        };
        let waiting = self.ops.iter().find_map(|(op, state_of)| match state_of {
            Op::Call(call) => call
                .task
                .as_ref()
                .filter(|run| run.poll.task_id() == state.task_id && run.asking.is_none())
                .filter(|_| call.waiting.is_none())
                .map(|_| *op),
            _ => None,
        });
        if let Some(op) = waiting {
            self.on_task_state(op, Ok(state), now);
        }
    }

    /// The earliest poll any task waits for.
    pub(in crate::connection) fn next_task_wake(&self) -> Option<Instant> {
        if !self.tasked {
            return None;
        }
        self.ops
            .values()
            .filter_map(|op| match op {
                Op::Call(call) => call.task.as_ref()?.wake,
                _ => None,
            })
            .min()
    }

    /// Sends the polls that are due; a task whose call's deadline passed is cancelled.
    pub(in crate::connection) fn wake_tasks(&mut self, now: Instant) {
        if !self.tasked {
            return;
        }
        let mut due: Vec<(OpId, bool)> = self
            .ops
            .iter()
            .filter_map(|(op, state)| match state {
                Op::Call(call) => {
                    let wake = call.task.as_ref()?.wake?;
                    (wake <= now).then_some((*op, now >= call.deadline))
                }
                _ => None,
            })
            .collect();
        due.sort_unstable();
        for (op, late) in due {
            if late {
                self.task_over(op, FailureKind::Timeout, "the call's deadline passed", now);
            } else {
                self.send_task(op, methods::TASKS_GET, None, now);
            }
        }
    }

    /// The host's answers to a task's input requests (2026-07-28): `tasks/update`.
    pub(super) fn answer_task_input(
        &mut self,
        op: OpId,
        answers: Result<crate::mcp::JsonObject, String>,
        now: Instant,
    ) {
        let task_id = match self.ops.get(&op) {
            Some(Op::Call(call)) => match &call.task {
                Some(run) => run.poll.task_id().to_owned(),
                None => return,
            },
            _ => return,
        };
        match answers.and_then(|answers| {
            serde_json::value::to_raw_value(&answers).map_err(|error| error.to_string())
        }) {
            Ok(responses) => self.send_task(op, methods::TASKS_UPDATE, Some(responses), now),
            Err(error) => {
                let error = answered(
                    FailureKind::ElicitationRequested,
                    format!("the input handler gave no answer to the task {task_id:?}: {error}"),
                );
                // The task would wait for us: it is told to stop.
                self.cancel_task(op, now);
                self.end_task(op, Err(with_task(error, &task_id)));
            }
        }
    }

    /// The call is over (`kind`: its deadline passed, or the host cancelled): it ends now,
    /// and the task is told with `tasks/cancel` (a request of its own, which closing the
    /// connection waits for, [`CANCEL_WAIT`] at most). A request about the task in flight
    /// is dropped first.
    pub(in crate::connection) fn task_over(
        &mut self,
        op: OpId,
        kind: FailureKind,
        why: &str,
        now: Instant,
    ) {
        let Some(Op::Call(call)) = self.ops.get(&op) else {
            return;
        };
        let Some(run) = call.task.as_deref() else {
            return;
        };
        let task_id = run.poll.task_id().to_owned();
        let failure = Failure::new(
            kind,
            Delivery::MayHaveReached,
            format!(
                "{why} while the server's task {task_id:?} was {} (tasks/cancel sent); the tool \
                 may have run",
                run.poll.status()
            ),
        )
        .with_task(&task_id);
        self.cancel_task(op, now);
        self.end_task(op, Err(OpError::Failed(failure)));
    }

    /// Drops the request about the call's task in flight, and sends `tasks/cancel` for the
    /// task as an operation of its own, which ends unreported.
    fn cancel_task(&mut self, op: OpId, now: Instant) {
        let modern = self.is_modern();
        let Some(Op::Call(call)) = self.ops.get_mut(&op) else {
            return;
        };
        let in_flight = call.request.take();
        call.waiting = None;
        let Some(run) = call.task.as_deref_mut() else {
            return;
        };
        run.wake = None;
        run.asking = None;
        let task_id = run.poll.task_id().to_owned();
        let params = task_params(&task_id, run.poll.request_state().filter(|_| modern));
        if let Some(id) = in_flight {
            self.requests.remove(&id);
            self.session.cancel(&id, "the call is over");
        }
        let limits = match modern {
            true => SendOptions::default().with_headers(named(&task_id)),
            false => SendOptions::default(),
        };
        let cancel = self.new_op(Op::Single {
            request: None,
            kind: super::Single::Detached,
        });
        self.send(
            cancel,
            Cow::Borrowed(methods::TASKS_CANCEL),
            serde_json::value::to_raw_value(&params).ok(),
            None,
            RequestOptions::with_timeout(CANCEL_WAIT),
            limits,
            now,
        );
    }
}

/// The params of a request about a task: its id, and the `requestState` to echo.
fn task_params(
    task_id: &str,
    request_state: Option<&str>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut params = serde_json::Map::new();
    params.insert("taskId".to_owned(), task_id.into());
    if let Some(state) = request_state {
        params.insert("requestState".to_owned(), state.into());
    }
    params
}

/// The `Mcp-Name` header of a request about a task at 2026-07-28: its id (SEP-2663).
fn named(task_id: &str) -> Vec<(http::HeaderName, http::HeaderValue)> {
    crate::connection::headers::mcp_name_header(task_id)
        .into_iter()
        .collect()
}

/// A failed task's `error` (2026-07-28): a JSON-RPC error object.
#[derive(serde::Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<Box<RawValue>>,
}

/// `error` with the task's id on it (a failure's).
fn with_task(error: OpError, task_id: &str) -> OpError {
    match error {
        OpError::Failed(failure) => OpError::Failed(failure.with_task(task_id)),
        other => other,
    }
}

/// A task message that breaks the rules: the call was answered, so the tool may be running
/// with nobody knowing what it does.
fn task_failure(error: TaskError, task_id: Option<&str>) -> OpError {
    let failure = Failure::new(
        FailureKind::Task(error),
        Delivery::Answered,
        format!("the server's task broke the protocol: {error}"),
    );
    OpError::Failed(match task_id {
        Some(id) => failure.with_task(id),
        None => failure,
    })
}

/// Puts `io.modelcontextprotocol/related-task` with the task's id in a result's `_meta`.
fn related_task(result: &mut CallToolResult, task_id: &str) {
    let meta = result.meta.get_or_insert_with(Default::default);
    meta.insert(
        crate::mcp::RELATED_TASK_KEY.to_owned(),
        serde_json::json!({ "taskId": task_id }),
    );
}
