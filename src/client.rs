//! The async client a host uses: connect (initialize and initialized), list tools, call a
//! tool with progress, deadlines and cancellation, ping, close.
//!
//! Each [`Client`] is one MCP session. A driver task owns the sans-IO connection machine
//! (which owns the session, the Streamable HTTP exchange or the stdio framing, and every
//! request-level rule: paging, the era probe, the `tools/call` rounds) and the transport link
//! under it; the client talks to the driver over a channel. The driver moves frames, runs the
//! host's handlers and token source, and sleeps until the machine's next deadline, so no
//! request outlives it.
//!
//! ```no_run
//! use mcpwire::client::{CallOptions, Client, ClientOptions};
//! use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
//!
//! # async fn demo() -> Result<(), mcpwire::Error> {
//! let pool = HttpPool::new(&TlsOptions::default())?;
//! let config = HttpConfig::new("http://127.0.0.1:3001/mcp")?;
//! let client = Client::connect_http(&pool, config, ClientOptions::default()).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}: {}", tool.name, tool.description.as_deref().unwrap_or(""));
//! }
//! let mut options = CallOptions::default();
//! options.on_progress = Some(Box::new(|p| eprintln!("progress {}", p.progress)));
//! let result = client
//!     .call_tool("echo", serde_json::json!({"message": "hi"}).as_object().cloned(), options)
//!     .await?;
//! println!("{:?}", result.content);
//! client.close().await;
//! # Ok(()) }
//! ```

pub mod auth;
mod connect;
mod driver;
mod era;
mod options;
mod reply;
mod skills;
#[cfg(feature = "tracing")]
mod span;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::connection::{CallArguments, CallTool, OpError, Outcome};
use crate::error::Error;
use crate::mcp::{
    CallToolResult, InitializeResult, JsonObject, ProtocolVersion, Tool, TraceContext,
};

/// A listed tool left out at a stateless revision, and why (for discovery's diagnostics).
pub(crate) use crate::connection::Excluded as ExcludedTool;
pub use crate::connection::input::{
    ElicitAction, SamplingAnswer, SamplingContent, SamplingMessage, StopReason, ToolChoice,
    ToolResultContent, ToolSampling, ToolUse, UrlElicitation,
};
pub use crate::connection::ops::ListCache;
pub use crate::connection::skills::{
    DirectoryEntry, RejectedSkill, Skill, SkillFile, SkillList, SkillsCapability,
};
use connect::Ahead;
use driver::{Command, Operation, Shared};
pub use era::EraCache;
pub use options::{
    CallOptions, CancelToken, ClientOptions, InputFuture, InputHandler, ProgressSink, TaskSink,
    WarningSink,
};

/// One MCP session with a server.
pub struct Client {
    /// With a token source over HTTP: what a token about to expire is refreshed with before
    /// an operation starts (the flow's pool and wire log).
    ahead: Option<Ahead>,
    commands: mpsc::Sender<Command>,
    driver: Option<JoinHandle<()>>,
    next_key: AtomicU64,
    /// Shared with the era cache's verdict: a connection that skips the probe gets it without
    /// a copy.
    server: Option<Arc<InitializeResult>>,
    /// What the driver tells the client: the revision spoken.
    shared: Arc<Shared>,
    session_id: Option<String>,
    /// The trace context of requests that bring none ([`ClientOptions::trace_context`]).
    trace_context: Option<TraceContext>,
    /// The client declared the Skills extension ([`ClientOptions::skills`]).
    skills: bool,
    /// The most pages a listing follows ([`ClientOptions::max_list_pages`]).
    max_list_pages: usize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field(
                "server",
                &self.server.as_ref().map(|server| &server.server_info.name),
            )
            .field("version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Whether the client can still carry requests: its driver runs (a client whose link
    /// has gone is made again rather than kept).
    #[cfg(feature = "bindings")]
    pub(crate) fn is_usable(&self) -> bool {
        !self.commands.is_closed()
    }

    /// What the server said of itself: its answer to `initialize`, or at a stateless revision
    /// its `server/discover` result in that shape (name, version, capabilities,
    /// instructions). `None` only when the era was configured ([`EraPolicy::Modern`](crate::session::EraPolicy::Modern)) and the
    /// server was never asked.
    pub fn server(&self) -> Option<&InitializeResult> {
        self.server.as_deref()
    }

    /// The protocol revision both sides speak ([`is_modern`](ProtocolVersion::is_modern) for a
    /// stateless revision, 2026-07-28: no handshake, no session id, one POST per request).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.shared
            .version
            .lock()
            .map_or(ProtocolVersion::LATEST_INITIALIZE, |version| *version)
    }

    /// The `Mcp-Session-Id` the server assigned (Streamable HTTP only).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Lists every tool, following `nextCursor` page by page. A cursor seen twice, more than
    /// `max_list_pages` pages or more than `max_tools` tools is an error, never a loop.
    ///
    /// At a stateless revision a tool whose `x-mcp-header` annotations break the spec's rules
    /// is left out, with a warning ([`ClientOptions::on_warning`]), and the headers the other
    /// tools' arguments give are remembered for [`call_tool`](Client::call_tool); a page whose
    /// stream breaks before its answer is asked for once more (listing changes nothing).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_tools_and_exclusions()
            .await
            .map(|(tools, _)| tools)
    }

    /// [`list_tools`](Self::list_tools), with the tools left out and why (for discovery,
    /// which names each one it was asked for).
    pub(crate) async fn list_tools_and_exclusions(
        &self,
    ) -> Result<(Vec<Tool>, Vec<ExcludedTool>), Error> {
        match self.operate(Operation::ListTools, None, None, None).await? {
            Outcome::Tools(tools, excluded) => Ok((tools, excluded)),
            _ => Err(mismatched()),
        }
    }

    /// Calls a tool. Progress is reported to `options.on_progress` as it arrives; the call
    /// ends at its deadline, on cancellation (with `notifications/cancelled` sent when the
    /// server may have it, or at a stateless revision over HTTP by closing the call's
    /// stream), or when the future is dropped.
    ///
    /// At a stateless revision the call follows `input_required` answers (through
    /// [`ClientOptions::input_handler`], at most [`ClientOptions::max_input_rounds`] rounds,
    /// each under a new id with the server's `requestState` echoed exactly), lists the tools
    /// again and retries once after `-32020` (stale `Mcp-Param-*` headers), and retries once
    /// at another revision after `-32022`: in both cases the server refused the request
    /// before running it. A call whose stream breaks is never sent again.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        // The arguments are moved in and written once, straight into the call's params.
        let arguments = arguments.map(CallArguments::Object);
        self.call(name.into(), arguments, None, options).await
    }

    /// [`call_tool`](Self::call_tool) with borrowed arguments (the binding layer's, which
    /// it keeps) and one more `_meta` member, written after those of `options.meta` (it
    /// replaces one of the same name): the binding layer's caller identity. The name and the
    /// member's key are shared, not copied per call.
    #[cfg(feature = "bindings")]
    pub(crate) async fn call_tool_with<M: serde::Serialize + ?Sized>(
        &self,
        name: Arc<str>,
        arguments: Option<&JsonObject>,
        member: Option<(Arc<str>, &M)>,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let arguments = arguments
            .map(serde_json::value::to_raw_value)
            .transpose()
            .map_err(Error::internal)?
            .map(CallArguments::Raw);
        let member = match member {
            Some((key, value)) => Some((
                key,
                serde_json::value::to_raw_value(value).map_err(Error::internal)?,
            )),
            None => None,
        };
        self.call(name, arguments, member, options).await
    }

    /// Carries out a call made by [`call_tool`](Self::call_tool) or
    /// [`call_tool_with`](Self::call_tool_with).
    async fn call(
        &self,
        name: Arc<str>,
        arguments: Option<CallArguments>,
        member: Option<(Arc<str>, Box<RawValue>)>,
        mut options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let own = match options.trace_context.take() {
            Some(trace) => Some(trace),
            None => own_trace(options.meta.as_ref()).map_err(|error| *error)?,
        };
        let call = CallTool {
            name,
            arguments,
            meta: options.meta.take(),
            member,
            progress_token: options.progress_token.take(),
            timeout: options.timeout,
            idle_timeout: options.idle_timeout,
            max_response_bytes: options.max_response_bytes,
            content_only: options.content_only,
            input_schema: options.input_schema.take(),
            raw: false,
            trace: None,
            task_support: matches!(
                options.task_support,
                Some(crate::mcp::TaskSupport::Optional | crate::mcp::TaskSupport::Required)
            ),
        };
        let outcome = self
            .operate(
                Operation::CallTool(Box::new(call)),
                Some(Sinks {
                    progress: options.on_progress.as_mut(),
                    task: options.on_task.as_mut(),
                })
                .filter(|sinks| sinks.progress.is_some() || sinks.task.is_some()),
                options.cancel.take(),
                own,
            )
            .await?;
        match outcome {
            Outcome::Call(result) => Ok(result),
            _ => Err(mismatched()),
        }
    }

    /// Sends any request (`resources/list`, `prompts/get`, an extension's method) and returns
    /// its result as the server sent it, credentials taken out. At a stateless revision the
    /// `_meta` envelope and `Mcp-Method` are added, and `Mcp-Name` from `params.name` (or
    /// `params.uri` for `resources/read`) as the spec asks; the result's `resultType` is
    /// checked (an `input_required` result is returned as it is, for the caller to answer).
    /// `tools/call` is carried out as [`call_tool`](Self::call_tool) does, with all its
    /// rules, and its result returned raw. A request whose stream breaks is not sent again:
    /// only the caller knows whether it is safe to repeat.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, Error> {
        let own = match params.as_ref().and_then(|params| params.get("_meta")) {
            Some(serde_json::Value::Object(meta)) => {
                own_trace(Some(meta)).map_err(|error| *error)?
            }
            _ => None,
        };
        let operation = Operation::Raw {
            method: method.to_owned(),
            params,
            timeout,
        };
        match self.operate(operation, None, None, own).await? {
            Outcome::Raw(Some(raw)) => Ok(raw),
            _ => Err(mismatched()),
        }
    }

    /// Listens for what the server announces (2026-07-28 `subscriptions/listen`, which
    /// replaces the standalone GET stream): `notifications/subscriptions/acknowledged` with
    /// what was granted, then the list changes and resource updates asked for in
    /// `notifications` (for instance `{"toolsListChanged": true}`), each given to
    /// [`ClientOptions::notifications`]; a tools list change also drops this endpoint's
    /// cached `tools/list` pages. Returns when the server ends the stream, when `cancel` is
    /// triggered (the stream is closed), or at `max_duration`. Refused at 2025-era revisions,
    /// whose servers announce on the GET stream ([`HttpConfig::server_stream`](crate::transport::http::HttpConfig::server_stream)).
    pub async fn listen(
        &self,
        notifications: serde_json::Value,
        max_duration: Duration,
        cancel: Option<CancelToken>,
    ) -> Result<(), Error> {
        let operation = Operation::Listen {
            notifications,
            max_duration,
        };
        self.operate(operation, None, cancel, None).await.map(drop)
    }

    /// Sends `ping` and waits for the answer. At a stateless revision, which has no `ping`,
    /// it is refused without sending.
    pub async fn ping(&self) -> Result<(), Error> {
        self.operate(Operation::Ping, None, None, None)
            .await
            .map(drop)
    }

    /// Ends the session: pending requests fail, and an HTTP session is ended with `DELETE`
    /// (bounded by the transport's close timeout); a stdio server gets its stdin closed, then
    /// is terminated, then killed.
    pub async fn close(mut self) {
        let (reply, done) = oneshot::channel();
        if self.commands.send(Command::Close { reply }).await.is_ok() {
            let _ = done.await;
        }
        if let Some(driver) = self.driver.take() {
            let _ = driver.await;
        }
    }

    /// Starts `operation` in the driver and waits for its outcome, giving its progress to
    /// `on_progress` as it comes. Cancelled with `cancel`, or when this future is dropped.
    /// Its requests carry the trace context `own`, else (with the `opentelemetry` feature)
    /// that of its client span, else the client's ([`ClientOptions::trace_context`]).
    async fn operate(
        &self,
        operation: Operation,
        on_progress: Option<Sinks<'_>>,
        cancel: Option<CancelToken>,
        own: Option<TraceContext>,
    ) -> Result<Outcome, Error> {
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = span::of(self, &operation);
            #[cfg(feature = "opentelemetry")]
            let own = own.or_else(|| span::context_of(&span));
            let outcome = self
                .operate_in(operation, on_progress, cancel, own, span.clone())
                .instrument(span.clone())
                .await;
            span::record(&span, &outcome);
            outcome
        }
        #[cfg(not(feature = "tracing"))]
        self.operate_in(operation, on_progress, cancel, own).await
    }

    /// [`operate`](Self::operate), in the operation's span.
    async fn operate_in(
        &self,
        operation: Operation,
        mut on_progress: Option<Sinks<'_>>,
        cancel: Option<CancelToken>,
        own: Option<TraceContext>,
        #[cfg(feature = "tracing")] span: tracing::Span,
    ) -> Result<Outcome, Error> {
        if let Some((auth, pool, log)) = &self.ahead {
            auth.refresh_ahead(pool, log.as_ref()).await;
        }
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let (reply, mut answer) = reply::slot(operation, on_progress.is_some());
        self.commands
            .send(Command::Operation {
                key,
                reply,
                trace: own.or_else(|| self.trace_context.clone()),
                #[cfg(feature = "tracing")]
                span,
            })
            .await
            .map_err(|_| Error::closed())?;
        // If this future is dropped before the answer, the guard cancels the operation.
        let mut guard = CancelOnDrop {
            commands: &self.commands,
            key,
            armed: true,
        };
        // Without a token only dropping this future cancels: no token is made to watch.
        let mut cancelled = std::pin::pin!(async {
            match &cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        });
        let outcome = loop {
            let wake = std::future::poll_fn(|cx| {
                if let Poll::Ready(delivered) = answer.poll_next(cx) {
                    return Poll::Ready(Some(delivered));
                }
                if cancelled.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                Poll::Pending
            })
            .await;
            match wake {
                Some(reply::Delivered::Progress(event)) => deliver(&mut on_progress, event),
                Some(reply::Delivered::Answer(answer)) => break answer,
                None => {
                    let _ = self
                        .commands
                        .send(Command::Cancel {
                            key,
                            reason: "cancelled by the caller".to_owned(),
                        })
                        .await;
                    // The machine settles the operation at once; keep waiting for that answer.
                    break answer.answer().await;
                }
            }
        };
        guard.armed = false;
        // Progress that arrived before the answer is delivered before the result.
        while let Some(event) = answer.try_progress() {
            deliver(&mut on_progress, event);
        }
        match outcome {
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(error)) => Err(op_error(error)),
            None => Err(Error::closed()),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A client dropped without `close` still ends its driver; its requests fail as closed.
        if let Some(driver) = self.driver.take() {
            let commands = self.commands.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let (reply, done) = oneshot::channel();
                    if commands.send(Command::Close { reply }).await.is_ok() {
                        let _ = done.await;
                    }
                    let _ = driver.await;
                });
            } else {
                driver.abort();
            }
        }
    }
}

/// Cancels an operation whose caller went away.
struct CancelOnDrop<'a> {
    /// The client's own sender, borrowed: the guard lives no longer than the call.
    commands: &'a mpsc::Sender<Command>,
    key: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.commands.try_send(Command::Cancel {
                key: self.key,
                reason: "the caller went away".to_owned(),
            });
        }
    }
}

/// The trace context the trace members of a caller's `_meta` give, checked: malformed ones
/// are a configuration error, and nothing is sent.
fn own_trace(meta: Option<&JsonObject>) -> Result<Option<TraceContext>, Box<Error>> {
    match meta {
        Some(meta) => TraceContext::from_meta(meta).map_err(|error| {
            Box::new(Error::config(format!(
                "the request's _meta holds a malformed W3C trace context, which is never \
                 sent: {error}"
            )))
        }),
        None => Ok(None),
    }
}

/// An operation that ended with another kind's outcome (a bug of the machine's).
fn mismatched() -> Error {
    Error::internal("the operation ended with another operation's outcome")
}

/// Where a call's progress and task status go.
struct Sinks<'a> {
    progress: Option<&'a mut ProgressSink>,
    task: Option<&'a mut TaskSink>,
}

/// Hands an event of a call to its sink.
fn deliver(sinks: &mut Option<Sinks<'_>>, event: reply::Event) {
    let Some(sinks) = sinks.as_mut() else { return };
    match event {
        reply::Event::Progress(params) => {
            if let Some(sink) = sinks.progress.as_mut() {
                sink(&params);
            }
        }
        reply::Event::Task(update) => {
            if let Some(sink) = sinks.task.as_mut() {
                sink(&update);
            }
        }
    }
}

/// The error a host sees for an operation's.
pub(crate) fn op_error(error: OpError) -> Error {
    match error {
        OpError::Refused(refused) => Error::refused(refused),
        OpError::Failed(failure) => Error::from_failure(failure),
        OpError::Config(message) => Error::config(message),
        OpError::Internal(message) => Error::internal(message),
    }
}
