//! Tasks: the durable handle a server may give back for a request instead of its result, in
//! both eras. At 2025-11-25 they are in the core (`basic/utilities/tasks.mdx`, SEP-1686): a
//! `tools/call` with a `task` member is answered with a `CreateTaskResult` (`{"task": Task}`),
//! polled with `tasks/get`, its result fetched with `tasks/result`. At 2026-07-28 they are the
//! extension `io.modelcontextprotocol/tasks` (SEP-2663): the server answers any call of a
//! client that declared the extension with `resultType: "task"` and the task's members
//! inline, and `tasks/get` carries the result, the JSON-RPC error or the `inputRequests`.
//!
//! This module reads one task-bearing message (a `CreateTaskResult`, a `tasks/get` result, a
//! `notifications/tasks/status`) into a [`TaskState`], checking every member it uses; the
//! rules across messages (which status may follow which, how long to wait) are the
//! connection machine's.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The extension's identifier (SEP-2663), declared in `capabilities.extensions`.
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

impl super::ClientCapabilities {
    /// Declares tasks beside what is there: `tasks` (2025-11-25) and the
    /// `io.modelcontextprotocol/tasks` extension in `extensions` (2026-07-28).
    pub(crate) fn declare_tasks(&mut self) {
        if self.tasks.is_none() {
            self.tasks = Some(serde_json::json!({}));
        }
        self.declare_extension(TASKS_EXTENSION);
    }

    /// Declares extension `id` (with no settings) under `extensions`, unless the
    /// capabilities already declare it.
    pub(crate) fn declare_extension(&mut self, id: &str) {
        let extensions = self
            .extra
            .entry("extensions")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(extensions) = extensions.as_object_mut() {
            extensions
                .entry(id)
                .or_insert_with(|| serde_json::json!({}));
        }
    }
}

/// The longest task id accepted, in bytes: far above any real one (UUIDs, 36), and a bound on
/// what a hostile server makes the client echo back on every poll.
pub(crate) const MAX_TASK_ID_BYTES: usize = 256;

/// The longest `requestState` kept and echoed, in bytes.
pub(crate) const MAX_REQUEST_STATE_BYTES: usize = 64 * 1024;

/// A task's status (schema `TaskStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// `working`: the request is being processed.
    Working,
    /// `input_required`: the server needs input from the client.
    InputRequired,
    /// `completed`: the request is done; its result is available.
    Completed,
    /// `failed`: the request did not complete.
    Failed,
    /// `cancelled`: the request was cancelled before it completed.
    Cancelled,
}

impl TaskStatus {
    /// The status named on the wire.
    pub(crate) fn parse(name: &str) -> Option<TaskStatus> {
        Some(match name {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => return None,
        })
    }

    /// The wire name (`working`, `input_required`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether no other status may follow (`completed`, `failed`, `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is wrong with a server's task messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// The message is not a JSON object, or not JSON.
    NotAnObject,
    /// A 2025-11-25 `CreateTaskResult` without its `task` object.
    MissingTask,
    /// No `taskId`.
    MissingTaskId,
    /// The `taskId` is not a string, is empty, longer than 256 bytes or holds control
    /// characters.
    InvalidTaskId,
    /// The message names another task than the one asked about.
    WrongTaskId,
    /// No `status`.
    MissingStatus,
    /// A `status` that is none of the five.
    UnknownStatus,
    /// A member has the wrong type or is out of bounds (`statusMessage`, the poll interval,
    /// `requestState`, `result`, `error`, `inputRequests`).
    InvalidMember,
    /// A status other than the terminal one already seen (a terminal task never changes).
    StatusAfterTerminal,
    /// A 2026-07-28 `completed` task without its `result`, or a `failed` one without its
    /// `error`.
    TerminalWithoutResult,
    /// A 2026-07-28 `input_required` task without `inputRequests`.
    InputWithoutRequests,
    /// More polls than the client makes for one task.
    TooManyPolls,
    /// A task came back although the client did not ask for one.
    Unrequested,
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TaskError::NotAnObject => "the task message is not a JSON object",
            TaskError::MissingTask => "the CreateTaskResult has no task object",
            TaskError::MissingTaskId => "the task has no taskId",
            TaskError::InvalidTaskId => {
                "the taskId is not a non-empty string of at most 256 printable bytes"
            }
            TaskError::WrongTaskId => "the server answered about another task",
            TaskError::MissingStatus => "the task has no status",
            TaskError::UnknownStatus => "the task has an unknown status",
            TaskError::InvalidMember => "a member of the task has the wrong type or size",
            TaskError::StatusAfterTerminal => {
                "the task changed status after a terminal one (completed, failed, cancelled)"
            }
            TaskError::TerminalWithoutResult => {
                "the task is terminal but carries no result or error"
            }
            TaskError::InputWithoutRequests => "the task needs input but names no inputRequests",
            TaskError::TooManyPolls => "the task was polled more times than the client allows",
            TaskError::Unrequested => "the server created a task the client did not ask for",
        })
    }
}

impl std::error::Error for TaskError {}

/// One task-bearing message, read and checked.
#[derive(Clone, Debug)]
pub(crate) struct TaskState {
    /// `taskId`.
    pub(crate) task_id: String,
    /// `status`.
    pub(crate) status: TaskStatus,
    /// `statusMessage`.
    pub(crate) status_message: Option<String>,
    /// The server's suggested wait between polls: `pollInterval` (2025-11-25, ms),
    /// `pollIntervalMilliseconds` (SEP-2663) or `pollIntervalMs` (what rmcp 3.11 sends).
    pub(crate) poll_interval: Option<Duration>,
    /// `requestState` (2026-07-28), echoed on the next request about the task.
    pub(crate) request_state: Option<String>,
    /// `result` of a completed task (2026-07-28), an object.
    pub(crate) result: Option<Box<RawValue>>,
    /// `error` of a failed task (2026-07-28), a JSON-RPC error object.
    pub(crate) error: Option<Box<RawValue>>,
    /// `inputRequests` of an `input_required` task (2026-07-28), an object.
    pub(crate) input_requests: Option<Box<RawValue>>,
}

/// The members read; each kept as sent so its type is checked here, with a typed error.
#[derive(Deserialize)]
struct Wire {
    #[serde(rename = "taskId")]
    task_id: Option<Value>,
    status: Option<Value>,
    #[serde(rename = "statusMessage")]
    status_message: Option<Value>,
    #[serde(rename = "pollInterval")]
    poll_interval: Option<Value>,
    #[serde(rename = "pollIntervalMilliseconds")]
    poll_interval_milliseconds: Option<Value>,
    #[serde(rename = "pollIntervalMs")]
    poll_interval_ms: Option<Value>,
    #[serde(rename = "requestState")]
    request_state: Option<Value>,
    result: Option<Box<RawValue>>,
    error: Option<Box<RawValue>>,
    #[serde(rename = "inputRequests")]
    input_requests: Option<Box<RawValue>>,
}

/// A 2025-11-25 `CreateTaskResult`'s wrapper.
#[derive(Deserialize)]
struct Created<'a> {
    #[serde(borrow)]
    task: Option<&'a RawValue>,
}

/// Whether a 2025-11-25 `tools/call` result is a `CreateTaskResult` (it has a `task` member)
/// rather than a `CallToolResult`.
pub(crate) fn is_created_2025(raw: &RawValue) -> bool {
    serde_json::from_str::<Created<'_>>(raw.get()).is_ok_and(|created| created.task.is_some())
}

/// Reads a 2025-11-25 `CreateTaskResult`: `{"task": Task}`.
pub(crate) fn read_created_2025(raw: &RawValue) -> Result<TaskState, TaskError> {
    if !is_object(raw) {
        return Err(TaskError::NotAnObject);
    }
    let created: Created<'_> =
        serde_json::from_str(raw.get()).map_err(|_| TaskError::NotAnObject)?;
    let task = created.task.ok_or(TaskError::MissingTask)?;
    let mut state = read_task(task)?;
    // Only the task's own members: a CreateTaskResult has no result yet.
    state.result = None;
    state.error = None;
    state.input_requests = None;
    Ok(state)
}

/// Reads a 2026-07-28 `CreateTaskResult` (`resultType: "task"`, the task's members inline):
/// the payload members a `CreateTaskResult` must not carry are not used (SEP-2663).
pub(crate) fn read_created_2026(raw: &RawValue) -> Result<TaskState, TaskError> {
    let mut state = read_task(raw)?;
    state.result = None;
    state.error = None;
    state.input_requests = None;
    Ok(state)
}

/// Reads a task object: a `Task` (2025-11-25 `tasks/get`, a status notification's params) or
/// a `DetailedTask` (2026-07-28 `tasks/get`, with `result`, `error` or `inputRequests`).
pub(crate) fn read_task(raw: &RawValue) -> Result<TaskState, TaskError> {
    if !is_object(raw) {
        return Err(TaskError::NotAnObject);
    }
    let wire: Wire = serde_json::from_str(raw.get()).map_err(|_| TaskError::InvalidMember)?;
    let task_id = match wire.task_id {
        None | Some(Value::Null) => return Err(TaskError::MissingTaskId),
        Some(Value::String(id)) if valid_task_id(&id) => id,
        Some(_) => return Err(TaskError::InvalidTaskId),
    };
    let status = match wire.status {
        None | Some(Value::Null) => return Err(TaskError::MissingStatus),
        Some(Value::String(name)) => TaskStatus::parse(&name).ok_or(TaskError::UnknownStatus)?,
        Some(_) => return Err(TaskError::UnknownStatus),
    };
    let status_message = optional_string(wire.status_message, usize::MAX)?;
    let poll_interval = [
        wire.poll_interval,
        wire.poll_interval_milliseconds,
        wire.poll_interval_ms,
    ]
    .into_iter()
    .flatten()
    .find(|value| !value.is_null())
    .map(|value| milliseconds(&value))
    .transpose()?;
    let request_state = optional_string(wire.request_state, MAX_REQUEST_STATE_BYTES)?;
    let object = |raw: Option<Box<RawValue>>| match raw {
        Some(raw) if raw.get() == "null" => Ok(None),
        Some(raw) if is_object(&raw) => Ok(Some(raw)),
        Some(_) => Err(TaskError::InvalidMember),
        None => Ok(None),
    };
    Ok(TaskState {
        task_id,
        status,
        status_message,
        poll_interval,
        request_state,
        result: object(wire.result)?,
        error: object(wire.error)?,
        input_requests: object(wire.input_requests)?,
    })
}

fn is_object(raw: &RawValue) -> bool {
    raw.get().trim_start().starts_with('{')
}

/// Whether `id` may name a task: non-empty, at most [`MAX_TASK_ID_BYTES`], no control
/// characters (it goes back in an `Mcp-Name` header at 2026-07-28).
pub(crate) fn valid_task_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_TASK_ID_BYTES && !id.chars().any(char::is_control)
}

fn optional_string(value: Option<Value>, max_bytes: usize) -> Result<Option<String>, TaskError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.len() <= max_bytes => Ok(Some(text)),
        Some(_) => Err(TaskError::InvalidMember),
    }
}

/// A non-negative number of milliseconds (a float is rounded up; over a day is taken as a
/// day: the connection caps the wait far below that anyway).
fn milliseconds(value: &Value) -> Result<Duration, TaskError> {
    const DAY_MS: f64 = 86_400_000.0;
    match value.as_f64() {
        Some(ms) if ms.is_finite() && ms >= 0.0 => {
            Ok(Duration::from_millis(ms.min(DAY_MS).ceil() as u64))
        }
        _ => Err(TaskError::InvalidMember),
    }
}

/// A task's status as a host sees it: the task, its status and the server's message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskUpdate {
    /// The task's id, as the server gave it.
    pub task_id: String,
    /// Its status now.
    pub status: TaskStatus,
    /// The server's `statusMessage`, if any (credentials taken out).
    pub status_message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap_or_else(|_| panic!("JSON: {text}"))
    }

    #[test]
    fn the_2025_create_result_and_a_2026_detailed_task_are_read() {
        let created = raw(
            r#"{"task":{"taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x",
                "ttl":60000,"pollInterval":5000,"statusMessage":"on it"}}"#,
        );
        assert!(is_created_2025(&created));
        let state = read_created_2025(&created).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(state.task_id, "t-1");
        assert_eq!(state.status, TaskStatus::Working);
        assert_eq!(state.poll_interval, Some(Duration::from_secs(5)));
        assert_eq!(state.status_message.as_deref(), Some("on it"));
        assert!(!is_created_2025(&raw(r#"{"content":[]}"#)));

        let done = raw(
            r#"{"resultType":"complete","taskId":"t-2","status":"completed","ttlSeconds":60,
                "pollIntervalMilliseconds":250,"requestState":"s1",
                "result":{"content":[{"type":"text","text":"hi"}]}}"#,
        );
        let state = read_task(&done).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(state.status, TaskStatus::Completed);
        assert_eq!(state.poll_interval, Some(Duration::from_millis(250)));
        assert_eq!(state.request_state.as_deref(), Some("s1"));
        assert!(state.result.is_some());
        // rmcp 3.11 spells the interval `pollIntervalMs`.
        let rmcp = raw(r#"{"taskId":"t","status":"working","ttlMs":1,"pollIntervalMs":1000}"#);
        let state = read_task(&rmcp).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(state.poll_interval, Some(Duration::from_secs(1)));
        // A created task's payload members are not used.
        let state = read_created_2026(&done).unwrap_or_else(|e| panic!("{e}"));
        assert!(state.result.is_none());
    }

    #[test]
    fn every_bad_member_is_its_own_typed_error() {
        let long = format!(r#"{{"taskId":"{}","status":"working"}}"#, "x".repeat(257));
        let cases: &[(&str, TaskError)] = &[
            ("[]", TaskError::NotAnObject),
            (r#""text""#, TaskError::NotAnObject),
            (r#"{"status":"working"}"#, TaskError::MissingTaskId),
            (
                r#"{"taskId":7,"status":"working"}"#,
                TaskError::InvalidTaskId,
            ),
            (
                r#"{"taskId":"","status":"working"}"#,
                TaskError::InvalidTaskId,
            ),
            (
                r#"{"taskId":"a\nb","status":"working"}"#,
                TaskError::InvalidTaskId,
            ),
            (&long, TaskError::InvalidTaskId),
            (r#"{"taskId":"t"}"#, TaskError::MissingStatus),
            (
                r#"{"taskId":"t","status":"done"}"#,
                TaskError::UnknownStatus,
            ),
            (r#"{"taskId":"t","status":3}"#, TaskError::UnknownStatus),
            (
                r#"{"taskId":"t","status":"working","pollInterval":-1}"#,
                TaskError::InvalidMember,
            ),
            (
                r#"{"taskId":"t","status":"working","pollInterval":"soon"}"#,
                TaskError::InvalidMember,
            ),
            (
                r#"{"taskId":"t","status":"working","statusMessage":{}}"#,
                TaskError::InvalidMember,
            ),
            (
                r#"{"taskId":"t","status":"completed","result":[1]}"#,
                TaskError::InvalidMember,
            ),
            (
                r#"{"taskId":"t","taskId":"u","status":"working"}"#,
                TaskError::InvalidMember,
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(read_task(&raw(text)).err(), Some(*expected), "{text}");
        }
        assert_eq!(
            read_created_2025(&raw(r#"{"content":[]}"#)).err(),
            Some(TaskError::MissingTask)
        );
        // A huge interval is read (bounded to a day); the machine caps the wait.
        let huge = raw(r#"{"taskId":"t","status":"working","pollInterval":1e300}"#);
        let state = read_task(&huge).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(state.poll_interval, Some(Duration::from_secs(86_400)));
    }
}
