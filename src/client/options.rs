//! What a host sets for a client and for each call, and what it plugs in: the input handler,
//! progress callbacks, cancellation.
//!
//! Every settings type of the crate (`ClientOptions`, `CallOptions`, `HttpConfig`,
//! `StdioConfig`, `TlsOptions`, `session::Config`, `Discovery`, the limits) has one style: a
//! `#[non_exhaustive]` struct with public fields, made by `Default` (or `new` with what it
//! cannot do without) and then set field by field:
//!
//! ```
//! use std::time::Duration;
//! let mut options = mcpwire::CallOptions::default();
//! options.timeout = Duration::from_secs(30);
//! options.on_progress = Some(Box::new(|p| println!("{}", p.progress)));
//! ```
//!
//! Types that check what they are given (`ProxyConfig`, which parses proxy URLs) or hold
//! state (`HttpPool`, `Auth`, `OAuth`) keep their fields private and have methods instead.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};

use super::auth;
use super::{EraCache, ListCache};
#[cfg(doc)]
use crate::connection::input::SamplingContent;
use crate::connection::input::{ElicitAction, SamplingAnswer, ToolSampling, UrlElicitation};
use crate::jsonrpc::Notification;
use crate::mcp::modern::InputRequest;
use crate::mcp::{ClientCapabilities, JsonObject, ProgressNotificationParams, TraceContext};
use crate::session;

/// How long a `tools/list` page or a ping may take by default.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Options for a session.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The session machine's configuration: client info, capabilities, era, versions, limits.
    pub session: session::Config,
    /// How long each `tools/list` page and each ping may take.
    pub request_timeout: Duration,
    /// The most `tools/list` pages read before giving up (a loop guard).
    pub max_list_pages: usize,
    /// The most tools accepted in one listing.
    pub max_tools: usize,
    /// Receives logging and list-changed notifications. Full buffers drop notifications
    /// rather than grow.
    pub notifications: Option<mpsc::Sender<Notification<'static>>>,
    /// Answers what a server asks of the user or the host during a call: the
    /// `inputRequests` of an `input_required` result (2026-07-28). Its capabilities are the
    /// ones declared. With none, a call whose server needs input fails
    /// ([`ErrorKind::ElicitationRequested`](crate::ErrorKind::ElicitationRequested)).
    pub input_handler: Option<Arc<dyn InputHandler>>,
    /// The most `input_required` rounds one call may take.
    pub max_input_rounds: usize,
    /// Receives warnings about what the server sent that the client set aside (a tool dropped
    /// from a listing for invalid `x-mcp-header` annotations). Never holds a credential.
    pub on_warning: Option<WarningSink>,
    /// Where an HTTP session's bearer tokens come from when they are not static: a host's
    /// token provider or OAuth ([`auth::Auth`]). A request the server refuses with 401 or 403
    /// (it did not run) is sent again with the new token the source gives. Not with
    /// [`HttpConfig::bearer_token`](crate::transport::http::HttpConfig::bearer_token) (a
    /// static token) at the same time; unused over stdio.
    pub auth: Option<auth::Auth>,
    /// The era verdicts of the endpoints connected to: a client probes an endpoint only when
    /// this cache has no verdict for it. Clones of these options share it (as clients made
    /// with them should); a fresh one in [`ClientOptions::default`].
    pub era_cache: EraCache,
    /// The `tools/list` pages clients made with these options may reuse, as long as their
    /// `ttlMs` says. Shared by clones, like [`era_cache`](Self::era_cache).
    pub list_cache: ListCache,
    /// The W3C trace context (`traceparent`, `tracestate`, `baggage` in `_meta`, SEP-414) of
    /// the handshake's requests and of every request that brings none of its own
    /// ([`CallOptions::trace_context`], the trace members of [`CallOptions::meta`] or of a raw
    /// request's `params._meta`) and, with the `opentelemetry` feature, finds no current span
    /// with a valid context. Checked when it is made ([`TraceContext::parse`]).
    pub trace_context: Option<TraceContext>,
    /// The handshake's own trace context, ahead of the current span's and
    /// [`trace_context`](Self::trace_context) (a binding call's, which a kept client must not
    /// send with later calls).
    pub(crate) handshake_trace: Option<TraceContext>,
    /// Speak tasks: declare them (`tasks` at 2025-11-25, the `io.modelcontextprotocol/tasks`
    /// extension at 2026-07-28), call a tool whose [`CallOptions::task_support`] allows it as
    /// a task at 2025-11-25, and follow every task a server makes of a call (polling
    /// `tasks/get` at the server's interval, between 0.1 s and 10 s, within the call's
    /// deadline; `tasks/cancel` when the call is cancelled or its deadline passes). Off by
    /// default: a server then makes no task of a call.
    pub tasks: bool,
    /// Speak the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): declare it
    /// under `capabilities.extensions`, and allow [`Client::list_skills`](crate::Client::list_skills)
    /// and the other skills methods against a server that declares it too. Off by default.
    pub skills: bool,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("session", &self.session)
            .field("request_timeout", &self.request_timeout)
            .field("max_list_pages", &self.max_list_pages)
            .field("max_tools", &self.max_tools)
            .field("input_handler", &self.input_handler.is_some())
            .field("max_input_rounds", &self.max_input_rounds)
            .field("auth", &self.auth)
            .field("trace_context", &self.trace_context)
            .field("tasks", &self.tasks)
            .field("skills", &self.skills)
            .finish_non_exhaustive()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions::with_caches(
            session::Config::default(),
            EraCache::default(),
            ListCache::default(),
        )
    }
}

impl ClientOptions {
    /// The defaults, with this session config and these caches: for a caller that brings its
    /// own, so that none is made only to be dropped (the binding layer's connect, once per
    /// call on its 2025 path).
    pub(crate) fn with_caches(
        session: session::Config,
        era_cache: EraCache,
        list_cache: ListCache,
    ) -> Self {
        ClientOptions {
            session,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_list_pages: 100,
            max_tools: 10_000,
            notifications: None,
            input_handler: None,
            max_input_rounds: 8,
            on_warning: None,
            auth: None,
            era_cache,
            list_cache,
            trace_context: None,
            handshake_trace: None,
            tasks: false,
            skills: false,
        }
    }
}

/// Where warnings go ([`ClientOptions::on_warning`]).
pub type WarningSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The answer an [`InputHandler`] gives, or why it gives none: the result's JSON for
/// [`answer`](InputHandler::answer), the user's choice for
/// [`elicit_url`](InputHandler::elicit_url) (`InputFuture<ElicitAction>`), the assistant's
/// message or `None` when the user declined for
/// [`sample_with_tools`](InputHandler::sample_with_tools)
/// (`InputFuture<Option<SamplingAnswer>>`).
pub type InputFuture<T = serde_json::Value> =
    Pin<Box<dyn Future<Output = Result<T, Box<dyn std::error::Error + Send + Sync>>> + Send>>;

/// What a host plugs in to answer a server's requests for input during a call
/// (`elicitation/create`, `sampling/createMessage`, `roots/list`; 2026-07-28
/// `basic/patterns/input-required.mdx`). One trait for all three; the client declares exactly
/// [`capabilities`](InputHandler::capabilities), so a server asks only for what the handler
/// serves.
///
/// Each request is checked against those capabilities before the handler sees it, in both
/// eras: one in a mode or with a feature the handler did not declare, or one that breaks the
/// spec's rules, is refused (`-32602` to a 2025-era server; at 2026-07-28 the call fails as a
/// protocol error). What passes goes to one method:
///
/// | request | method |
/// | --- | --- |
/// | a form elicitation, sampling without tools, `roots/list` | [`answer`](InputHandler::answer), as sent |
/// | a URL-mode elicitation (declare `elicitation.url`) | [`elicit_url`](InputHandler::elicit_url), typed and checked |
/// | sampling with tools (declare `sampling.tools`) | [`sample_with_tools`](InputHandler::sample_with_tools), typed and checked |
///
/// The two typed methods decline by default, so a handler written before them is unchanged.
pub trait InputHandler: Send + Sync {
    /// What the handler can answer, declared in every request's `_meta` (and in `initialize`).
    fn capabilities(&self) -> ClientCapabilities;
    /// Answers one request with the result for its method (an `ElicitResult`,
    /// `CreateMessageResult` or `ListRootsResult` as JSON). An error fails the call.
    fn answer(&self, request: InputRequest) -> InputFuture;
    /// Answers a URL-mode elicitation (SEP-1036): ask the user's consent to open
    /// [`url`](UrlElicitation::url) (never open or fetch it without), and answer with their
    /// choice. Accepting means consent, not that the interaction is over: at 2025-11-25 the
    /// server may say so later ([`elicitation_complete`](InputHandler::elicitation_complete)).
    /// By default: [`ElicitAction::Decline`].
    fn elicit_url(&self, request: UrlElicitation) -> InputFuture<ElicitAction> {
        let _ = request;
        Box::pin(async { Ok(ElicitAction::Decline) })
    }
    /// Answers a sampling request that offers tools (SEP-1577) with the model's message,
    /// which may use the request's tools ([`SamplingContent::ToolUse`]). The answer is checked
    /// against the request (its tools, its [`ToolChoice`](crate::client::ToolChoice)) before it is
    /// sent; one that breaks the rules is an error. `None`: the user declined (`-1` to a
    /// 2025-era server; at 2026-07-28 the call fails). By default: `None`.
    fn sample_with_tools(&self, request: ToolSampling) -> InputFuture<Option<SamplingAnswer>> {
        let _ = request;
        Box::pin(async { Ok(None) })
    }
    /// The server says the URL elicitation with this id, which
    /// [`elicit_url`](InputHandler::elicit_url) was given, is complete
    /// (`notifications/elicitation/complete`, 2025-11-25). Told once per id; ids the handler
    /// was never given are not passed on. By default: nothing.
    fn elicitation_complete(&self, elicitation_id: &str) {
        let _ = elicitation_id;
    }
}

/// A handle that cancels a call from anywhere (another task, a signal handler).
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<(AtomicBool, Notify)>);

impl CancelToken {
    /// Cancels every call watching this token.
    pub fn cancel(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }

    /// Whether [`cancel`](CancelToken::cancel) was called.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    /// Completes once the token is cancelled.
    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// A progress callback.
pub type ProgressSink = Box<dyn FnMut(&ProgressNotificationParams) + Send>;

/// A callback told when a call becomes a task and each time its status changes.
pub type TaskSink = Box<dyn FnMut(&crate::mcp::TaskUpdate) + Send>;

/// Options for one tool call.
#[non_exhaustive]
pub struct CallOptions {
    /// The hard deadline for the call.
    pub timeout: Duration,
    /// Fail when no progress arrives for this long (the hard deadline still caps it).
    pub idle_timeout: Option<Duration>,
    /// The `progressToken` to send in `_meta` (a string or an integer, as a request id is); a
    /// fresh unique one when `None`.
    pub progress_token: Option<crate::jsonrpc::Id>,
    /// More `_meta` members to send (for instance a caller's identity). Trace members
    /// (`traceparent`, `tracestate`, `baggage`) are the call's trace context when
    /// [`trace_context`](Self::trace_context) is `None`; malformed ones refuse the call
    /// ([`ErrorKind::Config`](crate::ErrorKind::Config)), nothing sent.
    pub meta: Option<JsonObject>,
    /// The call's W3C trace context, sent in its `_meta` (SEP-414). Ahead of the trace members
    /// of [`meta`](Self::meta) (which it replaces), of the current span's context (with the
    /// `opentelemetry` feature) and of [`ClientOptions::trace_context`].
    pub trace_context: Option<TraceContext>,
    /// The most reply bytes the call may receive, counted as they stream in.
    pub max_response_bytes: Option<u64>,
    /// Cancels the call when triggered.
    pub cancel: Option<CancelToken>,
    /// Called with each progress notification, in order, before the result is returned.
    pub on_progress: Option<ProgressSink>,
    /// The tool's input schema, when the caller has it (a binding) and the tool was not listed
    /// by this client: at a stateless revision over HTTP its `x-mcp-header` annotations give
    /// the call's `Mcp-Param-*` headers.
    /// Shared (an `Arc`), so that a caller making many calls with one schema copies none.
    pub input_schema: Option<Arc<serde_json::Value>>,
    /// The tool's `execution.taskSupport` (from its listing): with
    /// [`ClientOptions::tasks`], a tool that allows or requires tasks is called as one at
    /// 2025-11-25 when the server offers task-augmented calls. At 2026-07-28 the server
    /// decides.
    pub task_support: Option<crate::mcp::TaskSupport>,
    /// Told when the call becomes a task and each time the task's status changes.
    pub on_task: Option<TaskSink>,
    /// Reads the result without its `_meta` and unknown members (the binding layer, which
    /// maps only the content).
    pub(crate) content_only: bool,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            timeout: Duration::from_secs(300),
            idle_timeout: None,
            progress_token: None,
            meta: None,
            trace_context: None,
            max_response_bytes: None,
            cancel: None,
            on_progress: None,
            input_schema: None,
            task_support: None,
            on_task: None,
            content_only: false,
        }
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("progress_token", &self.progress_token)
            .field("trace_context", &self.trace_context)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}
