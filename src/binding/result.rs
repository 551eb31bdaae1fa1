//! What a binding call gives back: the [`ToolResult`] (the `tool.result` line), the events
//! before it ([`CallEvent`]: progress and task status), and who is calling ([`CallContext`]).
//! Their JSON lines keep SPEC.md's member order.

use std::time::Duration;

use serde_json::{Value, json};

use crate::error::ErrorKind;
use crate::mcp::TraceContext;

/// Who is calling: identity sent to the server in `_meta["brain.dev/scope"]` (or the key the
/// host named, [`Caller::set_scope_key`](super::call::Caller::set_scope_key)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallContext {
    /// The tenant making the call; must be one of the binding's `tenants`.
    pub tenant_id: String,
    /// The caller's session (a host conversation, not the MCP session).
    pub session_id: String,
    /// This call's id; also the `progressToken`.
    pub call_id: String,
    /// The W3C trace context the call's requests carry in `_meta` (SEP-414): the handshake's
    /// (when the call connects) and the call's own. Without one, and with the
    /// `opentelemetry` feature, the current span's context is sent (see
    /// [`CallOptions::trace_context`](crate::client::CallOptions::trace_context)).
    pub trace_context: Option<TraceContext>,
}

impl CallContext {
    /// The identity of a call: the tenant, the caller's session and this call's id.
    pub fn new(
        tenant_id: impl Into<String>,
        session_id: impl Into<String>,
        call_id: impl Into<String>,
    ) -> Self {
        CallContext {
            tenant_id: tenant_id.into(),
            session_id: session_id.into(),
            call_id: call_id.into(),
            trace_context: None,
        }
    }
}

/// A progress report for a call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The call.
    pub call_id: String,
    /// Progress so far.
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// A message, when the server sent one.
    pub message: Option<String>,
}

/// The end of a call: the tool's result, the tool's own error, or a failure. Each variant
/// holds only what it can have, so a result is an error exactly when it says so, and only a
/// failure has an outcome that may be unknown. Built by [`Caller::call`](super::call::Caller::call); read it with the
/// methods below, or match it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolResult {
    /// The tool ran and returned its result (`is_error: false`).
    #[non_exhaustive]
    Success {
        /// The call.
        call_id: String,
        /// Mapped content blocks.
        content: Vec<Value>,
        /// Structured content, when the tool returned it.
        structured_content: Option<Value>,
        /// The id of the server's task the call ran as, if it ran as one.
        task_id: Option<String>,
    },
    /// The tool ran and reported an error of its own (`isError: true`): the outcome is known
    /// (`unknown_outcome: false`, kind [`ErrorKind::ToolError`]), and its content is kept.
    #[non_exhaustive]
    ToolError {
        /// The call.
        call_id: String,
        /// Mapped content blocks of the error result.
        content: Vec<Value>,
        /// Structured content, when the tool returned it.
        structured_content: Option<Value>,
        /// The error result's text (its first 1000 characters), or a stand-in when it has
        /// none.
        message: String,
        /// The id of the server's task the call ran as, if it ran as one.
        task_id: Option<String>,
    },
    /// The call failed: refused before sending, or the server, the connection or the result
    /// let it down.
    #[non_exhaustive]
    Failed {
        /// The call.
        call_id: String,
        /// What went wrong (never [`ErrorKind::ToolError`]).
        kind: ErrorKind,
        /// A message for people; never contains a credential.
        message: String,
        /// Whether the tool may have run with its outcome unknown.
        unknown_outcome: bool,
        /// For a [`RateLimited`](ErrorKind::RateLimited) call: how long the server asked to
        /// be left alone (its `Retry-After`), when it said.
        retry_after: Option<Duration>,
        /// The id of the server's task the call became, when it became one: the task may go
        /// on, and the server may know its outcome.
        task_id: Option<String>,
    },
}

impl ToolResult {
    pub(crate) fn failure(
        call_id: &str,
        kind: ErrorKind,
        message: String,
        unknown_outcome: bool,
    ) -> Self {
        ToolResult::Failed {
            call_id: call_id.to_owned(),
            kind,
            message,
            unknown_outcome,
            retry_after: None,
            task_id: None,
        }
    }

    /// This result with the id of the server's task the call ran as.
    pub(crate) fn with_task_id(mut self, id: Option<String>) -> Self {
        match &mut self {
            ToolResult::Success { task_id, .. }
            | ToolResult::ToolError { task_id, .. }
            | ToolResult::Failed { task_id, .. } => *task_id = id,
        }
        self
    }

    /// The id of the server's task the call ran as (or became, for a failure), if any.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            ToolResult::Success { task_id, .. }
            | ToolResult::ToolError { task_id, .. }
            | ToolResult::Failed { task_id, .. } => task_id.as_deref(),
        }
    }

    /// This failure with the server's wait (a rate-limited call's `Retry-After`).
    pub(crate) fn waiting(mut self, wait: Option<Duration>) -> Self {
        if let ToolResult::Failed { retry_after, .. } = &mut self {
            *retry_after = wait;
        }
        self
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        match self {
            ToolResult::Success { call_id, .. }
            | ToolResult::ToolError { call_id, .. }
            | ToolResult::Failed { call_id, .. } => call_id,
        }
    }

    /// Whether the call failed (including a tool's own `isError` result).
    pub fn is_error(&self) -> bool {
        !matches!(self, ToolResult::Success { .. })
    }

    /// For a failure: whether the tool may have run with its outcome unknown; `None` for a
    /// success.
    pub fn unknown_outcome(&self) -> Option<bool> {
        match self {
            ToolResult::Success { .. } => None,
            ToolResult::ToolError { .. } => Some(false),
            ToolResult::Failed {
                unknown_outcome, ..
            } => Some(*unknown_outcome),
        }
    }

    /// The mapped content blocks: a result's, or a tool error's; none for a failure.
    pub fn content(&self) -> &[Value] {
        match self {
            ToolResult::Success { content, .. } | ToolResult::ToolError { content, .. } => content,
            ToolResult::Failed { .. } => &[],
        }
    }

    /// The structured content, when the tool returned it.
    pub fn structured_content(&self) -> Option<&Value> {
        match self {
            ToolResult::Success {
                structured_content, ..
            }
            | ToolResult::ToolError {
                structured_content, ..
            } => structured_content.as_ref(),
            ToolResult::Failed { .. } => None,
        }
    }

    /// For a failure: its kind ([`ErrorKind::ToolError`] for the tool's own error).
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            ToolResult::Success { .. } => None,
            ToolResult::ToolError { .. } => Some(ErrorKind::ToolError),
            ToolResult::Failed { kind, .. } => Some(*kind),
        }
    }

    /// For a failure: what went wrong, for people.
    pub fn error_message(&self) -> Option<&str> {
        match self {
            ToolResult::Success { .. } => None,
            ToolResult::ToolError { message, .. } | ToolResult::Failed { message, .. } => {
                Some(message)
            }
        }
    }

    /// For a rate-limited failure: the wait the server asked for (its `Retry-After`), when it
    /// said; the event's `error.retry_after_seconds`.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ToolResult::Failed { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    fn members(&self) -> Vec<(&'static str, Value)> {
        let mut members = vec![
            ("type", json!("tool.result")),
            ("call_id", json!(self.call_id())),
            ("is_error", json!(self.is_error())),
        ];
        if let Some(unknown) = self.unknown_outcome() {
            members.push(("unknown_outcome", json!(unknown)));
        }
        let content = self.content();
        if !content.is_empty() || !self.is_error() {
            members.push(("content", Value::Array(content.to_vec())));
        }
        if let Some(structured) = self.structured_content() {
            members.push(("structured_content", structured.clone()));
        }
        if let (Some(kind), Some(message)) = (self.error_kind(), self.error_message()) {
            // `kind` sorts before `message`, and `message` before `retry_after_seconds`, so
            // serde_json's order is the documented one.
            let mut error = json!({"kind": kind, "message": message});
            if let Some(wait) = self.retry_after() {
                // Whole seconds, as Retry-After counts them (a part second rounds up: sooner
                // is what the server asked us not to do).
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                error["retry_after_seconds"] = json!(seconds);
            }
            members.push(("error", error));
        }
        if let Some(task_id) = self.task_id() {
            members.push(("task_id", json!(task_id)));
        }
        members
    }

    /// The `tool.result` JSON event as a value (object members sorted by serde_json).
    pub fn to_json(&self) -> Value {
        object(self.members())
    }

    /// The `tool.result` event as one line of JSON with its members in the documented order
    /// (`type`, `call_id`, `is_error`, `unknown_outcome`, `content`, `structured_content`,
    /// `error`, `task_id`). `error` holds `kind` and `message` and, for a `rate_limited` call whose server
    /// sent `Retry-After`, `retry_after_seconds`: the server's wait in whole seconds (an
    /// HTTP-date already turned into a wait), after which the host may call again.
    pub fn to_json_line(&self) -> String {
        ordered_line(&self.members())
    }
}

/// A task's status during a call (`tool.task`): the call became the server's task
/// `task_id`, or the task's status changed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskEvent {
    /// The call.
    pub call_id: String,
    /// The server's task.
    pub task_id: String,
    /// Its status now.
    pub status: crate::mcp::TaskStatus,
    /// The server's status message, if any.
    pub message: Option<String>,
}

impl TaskEvent {
    fn members(&self) -> Vec<(&'static str, Value)> {
        let mut members = vec![
            ("type", json!("tool.task")),
            ("call_id", json!(self.call_id)),
            ("task_id", json!(self.task_id)),
            ("status", json!(self.status.as_str())),
        ];
        if let Some(message) = &self.message {
            members.push(("message", json!(message)));
        }
        members
    }

    /// The `tool.task` event as one line of JSON, members in the documented order (`type`,
    /// `call_id`, `task_id`, `status`, `message`).
    pub fn to_json_line(&self) -> String {
        ordered_line(&self.members())
    }
}

/// What a call reports before its result ([`Caller::call_events`](super::call::Caller::call_events)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CallEvent {
    /// A `tool.progress` event.
    Progress(Progress),
    /// A `tool.task` event.
    Task(TaskEvent),
}

impl CallEvent {
    /// The event as one line of JSON.
    pub fn to_json_line(&self) -> String {
        match self {
            CallEvent::Progress(progress) => progress.to_json_line(),
            CallEvent::Task(task) => task.to_json_line(),
        }
    }
}

impl Progress {
    fn members(&self) -> Vec<(&'static str, Value)> {
        let mut members = vec![
            ("type", json!("tool.progress")),
            ("call_id", json!(self.call_id)),
            ("progress", json!(self.progress)),
        ];
        if let Some(total) = self.total {
            members.push(("total", json!(total)));
        }
        if let Some(message) = &self.message {
            members.push(("message", json!(message)));
        }
        members
    }

    /// The `tool.progress` event as one line of JSON, members in the documented order
    /// (`type`, `call_id`, `progress`, `total`, `message`).
    pub fn to_json_line(&self) -> String {
        ordered_line(&self.members())
    }
}

/// An event's members as a JSON object value.
fn object(members: Vec<(&'static str, Value)>) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// Writes an object with its members in the given order (serde_json's `Value` sorts them).
fn ordered_line(members: &[(&str, Value)]) -> String {
    let mut line = String::from("{");
    for (index, (key, value)) in members.iter().enumerate() {
        if index > 0 {
            line.push(',');
        }
        line.push_str(&Value::from(*key).to_string());
        line.push(':');
        line.push_str(&value.to_string());
    }
    line.push('}');
    line
}
