//! The polling machine of one task: what the client does after each task-bearing message
//! (the `CreateTaskResult`, each `tasks/get` answer, a `notifications/tasks/status`). Pure:
//! it is told what the server said and says what to do next, with how long to wait; the
//! connection machine sends the requests and keeps the clock.
//!
//! Its rules: a message about another task, a status after a terminal one, a terminal
//! 2026-07-28 task without its result or error, more than [`MAX_POLLS`] polls, are typed
//! errors ([`TaskError`]); the server's poll interval is honoured between
//! [`MIN_POLL_INTERVAL`] and [`MAX_POLL_INTERVAL`] (a huge one is capped, a zero one
//! floored); 2026-07-28 input requests already answered are not asked again.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::value::RawValue;

use crate::mcp::modern::{InputRequest, ResultEnvelope};
use crate::mcp::tasks::TaskState;
use crate::mcp::{TaskError, TaskStatus, TaskUpdate};

/// The shortest wait between polls, whatever the server suggests.
pub(crate) const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between polls, whatever the server suggests (the call's deadline bounds
/// it further).
pub(crate) const MAX_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// The wait between polls when the server suggests none.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The most polls of one task.
pub(crate) const MAX_POLLS: usize = 10_000;
/// The most input request keys remembered as answered for one task.
const MAX_ANSWERED_KEYS: usize = 1024;

/// What to do next about a task.
#[derive(Debug)]
pub(crate) enum Step {
    /// Ask `tasks/get` after this long.
    Poll(Duration),
    /// 2025-11-25: ask `tasks/result` now (the task is terminal, or needs input, whose
    /// requests come on that request's stream).
    FetchResult,
    /// 2026-07-28: the host answers these, then `tasks/update` carries the answers.
    Input(Vec<InputRequest>),
    /// 2026-07-28: the task completed with this result.
    Complete(Box<RawValue>),
    /// 2026-07-28: the task failed with this JSON-RPC error object.
    Failed(Box<RawValue>),
    /// The server cancelled the task (the client did not ask), with its message.
    Cancelled(Option<String>),
}

/// One task, followed from its creation to a terminal status.
#[derive(Debug)]
pub(crate) struct TaskPoll {
    task_id: String,
    modern: bool,
    status: TaskStatus,
    status_message: Option<String>,
    request_state: Option<String>,
    interval: Duration,
    polls: usize,
    answered: HashSet<String>,
}

impl TaskPoll {
    /// The task a `CreateTaskResult` made, and the first step.
    pub(crate) fn created(state: TaskState, modern: bool) -> Result<(TaskPoll, Step), TaskError> {
        let mut poll = TaskPoll {
            task_id: state.task_id.clone(),
            modern,
            status: TaskStatus::Working,
            status_message: None,
            request_state: None,
            interval: DEFAULT_POLL_INTERVAL,
            polls: 0,
            answered: HashSet::new(),
        };
        let step = match state.status {
            // A task is created working; one created further on is polled for the rest (a
            // CreateTaskResult carries no result, error or input requests).
            TaskStatus::Working | TaskStatus::InputRequired => poll.on_state(state)?,
            _ => {
                poll.take(&state)?;
                match (modern, poll.status) {
                    (false, TaskStatus::Cancelled) => Step::Cancelled(poll.status_message.clone()),
                    (false, _) => Step::FetchResult,
                    (true, _) => Step::Poll(Duration::ZERO),
                }
            }
        };
        Ok((poll, step))
    }

    /// The task's id.
    pub(crate) fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The last status seen.
    pub(crate) fn status(&self) -> TaskStatus {
        self.status
    }

    /// The `requestState` to echo on the next request about the task (2026-07-28).
    pub(crate) fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// The wait between polls now.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// The task as the host sees it.
    pub(crate) fn update(&self) -> TaskUpdate {
        TaskUpdate {
            task_id: self.task_id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
        }
    }

    /// Counts a `tasks/get` about to go out: past [`MAX_POLLS`] it is an error.
    pub(crate) fn count_poll(&mut self) -> Result<(), TaskError> {
        self.polls += 1;
        if self.polls > MAX_POLLS {
            return Err(TaskError::TooManyPolls);
        }
        Ok(())
    }

    /// Marks 2026-07-28 input requests as answered: a later `tasks/get` that lists them
    /// again does not ask the host twice.
    pub(crate) fn answered(&mut self, keys: impl IntoIterator<Item = String>) {
        for key in keys {
            if self.answered.len() >= MAX_ANSWERED_KEYS {
                return;
            }
            self.answered.insert(key);
        }
    }

    /// Takes the members of `state` in; returns whether the status or its message changed.
    fn take(&mut self, state: &TaskState) -> Result<bool, TaskError> {
        if state.task_id != self.task_id {
            return Err(TaskError::WrongTaskId);
        }
        if self.status.is_terminal() && state.status != self.status {
            return Err(TaskError::StatusAfterTerminal);
        }
        let changed = state.status != self.status || state.status_message != self.status_message;
        self.status = state.status;
        self.status_message.clone_from(&state.status_message);
        if let Some(interval) = state.poll_interval {
            self.interval = interval.clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL);
        }
        // The most recent message's state, and none when it carried none (SEP-2663).
        if self.modern {
            self.request_state.clone_from(&state.request_state);
        }
        Ok(changed)
    }

    /// A `tasks/get` answer or a status notification: the next step. On an error nothing
    /// of `state` is taken in.
    pub(crate) fn on_state(&mut self, state: TaskState) -> Result<Step, TaskError> {
        if state.task_id != self.task_id {
            return Err(TaskError::WrongTaskId);
        }
        if self.status.is_terminal() && state.status != self.status {
            return Err(TaskError::StatusAfterTerminal);
        }
        let interval = state.poll_interval.map_or(self.interval, |i| {
            i.clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
        });
        let step = match (self.modern, state.status) {
            (_, TaskStatus::Working) => Step::Poll(interval),
            (_, TaskStatus::Cancelled) => Step::Cancelled(state.status_message.clone()),
            (false, _) => Step::FetchResult,
            (true, TaskStatus::Completed) => Step::Complete(
                state
                    .result
                    .clone()
                    .ok_or(TaskError::TerminalWithoutResult)?,
            ),
            (true, TaskStatus::Failed) => Step::Failed(
                state
                    .error
                    .clone()
                    .ok_or(TaskError::TerminalWithoutResult)?,
            ),
            (true, TaskStatus::InputRequired) => {
                let raw = state
                    .input_requests
                    .clone()
                    .ok_or(TaskError::InputWithoutRequests)?;
                let requests =
                    ResultEnvelope::requests_in(raw).map_err(|_| TaskError::InvalidMember)?;
                let fresh: Vec<InputRequest> = requests
                    .into_iter()
                    .filter(|request| !self.answered.contains(&request.key))
                    .collect();
                if fresh.is_empty() {
                    // Answered already; the server has not caught up yet.
                    Step::Poll(interval)
                } else {
                    Step::Input(fresh)
                }
            }
        };
        self.take(&state)?;
        Ok(step)
    }
}

/// Drives a [`TaskPoll`] with a sequence of raw task messages, as a server would send them:
/// the fuzz harness's entry (`fuzz_targets/task_poll.rs`). Returns how many steps ran; every
/// error is a typed one, and nothing panics or grows without bound.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn fuzz_poll(modern: bool, messages: &[&[u8]]) -> usize {
    let mut messages = messages.iter();
    let Some(first) = messages.next() else {
        return 0;
    };
    let Ok(text) = std::str::from_utf8(first) else {
        return 0;
    };
    let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
        return 0;
    };
    let created = match modern {
        true => crate::mcp::tasks::read_created_2026(&raw),
        false => crate::mcp::tasks::read_created_2025(&raw),
    };
    let Ok((mut poll, mut step)) = created.and_then(|state| TaskPoll::created(state, modern))
    else {
        return 1;
    };
    let mut steps = 1;
    for message in messages {
        match step {
            Step::Poll(wait) => assert!(wait <= MAX_POLL_INTERVAL),
            Step::Input(ref requests) => {
                poll.answered(requests.iter().map(|r| r.key.clone()));
            }
            _ => {}
        }
        let terminal = poll.status().is_terminal();
        if poll.count_poll().is_err() {
            return steps;
        }
        let Ok(text) = std::str::from_utf8(message) else {
            continue;
        };
        let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
            continue;
        };
        let Ok(state) = crate::mcp::tasks::read_task(&raw) else {
            continue;
        };
        let before = poll.status();
        match poll.on_state(state) {
            Ok(next) => {
                // A terminal status never changes.
                assert!(!terminal || poll.status() == before);
                step = next;
            }
            Err(_) => assert!(poll.status() == before),
        }
        steps += 1;
    }
    steps
}
