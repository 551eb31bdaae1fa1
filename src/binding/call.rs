//! The call pipeline (SPEC.md "Calling a tool"): check the tenant and the arguments, open an MCP
//! session for this call alone, call the tool with the caller's identity in `_meta`, stream
//! progress, map the result, close the session. Every outcome is a [`ToolResult`]; a failure
//! says whether the tool may have run with nobody knowing what it did (`unknown_outcome`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::config::{AuthSettings, Binding, ConfigError, ProxySetting, Server, TlsSettings};
use super::discover::connect;
use super::mapping::{ToolOutput, map_result};
pub(crate) use super::oauth::OAuthMaker;
pub use super::result::{CallContext, CallEvent, Progress, TaskEvent, ToolResult};
use super::schema::{CompiledSchema, compile};
use crate::client::auth::{Auth, OAuth};
use crate::client::{
    CallOptions, CancelToken, Client, ClientOptions, EraCache, ListCache, ProgressSink, TaskSink,
};
use crate::error::{Error, ErrorKind};
use crate::mcp::{CallToolResult, ProgressToken, TraceContext};
use crate::secret::Secret;
use crate::transport::WireLog;
use crate::transport::http::{ExtraHeaders, HttpPool, ProxyConfig, Roots, TlsError, TlsOptions};

/// The call pipeline's clock, for what is left of a binding's timeout after connecting.
#[allow(
    clippy::disallowed_methods,
    reason = "the call pipeline drives the client: it owns the clock"
)]
fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// Reads the values a binding names by environment variable: its bearer token (`token_env`)
/// and its extra headers' values (`header_env`). A trait so hosts (and tests) can supply them
/// from elsewhere.
pub trait TokenSource: Send + Sync {
    /// The value of the variable `name`, if set.
    fn token(&self, name: &str) -> Option<Secret>;
}

/// Values from the process environment.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnvTokens;

impl TokenSource for EnvTokens {
    fn token(&self, name: &str) -> Option<Secret> {
        std::env::var(name).ok().map(Secret::new)
    }
}

/// A binding with its schemas compiled once, and the pool its calls use.
struct Prepared {
    binding: Binding,
    input: CompiledSchema,
    output: Option<CompiledSchema>,
    pool: HttpPool,
    /// `binding.input_schema`, shared with every call's options (for its `Mcp-Param-*`
    /// headers) rather than copied into each.
    input_schema: Arc<Value>,
    /// `binding.mcp_tool`, shared with every call rather than copied into each.
    mcp_tool: Arc<str>,
    /// What tells this binding's OAuth from another's (its server URL and `auth` object),
    /// for [`Caller::auth`]; `None` without `auth`.
    auth_key: Option<String>,
    /// The client of the binding's last call, kept when the server speaks a stateless
    /// revision (see [`Kept`]), and how the last tries to make one ended.
    kept: Mutex<Slot>,
    /// Held while a client is made for the binding (see [`Caller::client_for`]).
    making: tokio::sync::Mutex<()>,
}

/// A binding's kept client, and the failures to make one.
#[derive(Default)]
struct Slot {
    kept: Option<Kept>,
    /// How many tries to make a client failed, and the last one's error: the calls
    /// that waited for that try fail with it.
    failures: u64,
    failure: Option<Error>,
}

impl Slot {
    fn client_for(&self, token: &Option<Secret>, headers: &ExtraHeaders) -> Option<Arc<Client>> {
        self.kept
            .as_ref()
            .filter(|kept| kept.serves(token, headers))
            .map(|kept| kept.client.clone())
    }
}

/// A client kept for a binding's next calls. At a stateless revision (2026-07-28) a client
/// holds no session: each call is one request of its own, with nothing carried from the
/// call before, so making a client per call would only repeat the same set-up. It is used
/// again only with the credentials it was made with (the token and header values are read
/// again for every call) and only while it works: a call that fails drops it, and the next
/// call makes a new one. A 2025-era server gets a fresh session per call, as before.
struct Kept {
    client: Arc<Client>,
    token: Option<Secret>,
    headers: ExtraHeaders,
}

impl Kept {
    fn serves(&self, token: &Option<Secret>, headers: &ExtraHeaders) -> bool {
        self.client.is_usable() && &self.token == token && self.headers.iter().eq(headers.iter())
    }
}

/// Calls tools through a set of bindings. Build once, call many times: schemas are compiled
/// when it is built, connections are pooled across calls, and every call to a 2025-era
/// server gets a fresh MCP session of its own. A stateless revision (2026-07-28) has no
/// session: each call is one request of its own, carried by a client each binding keeps for
/// its calls (with the credentials read for each call; see the module's source, `Kept`).
/// A burst of calls to one origin shares at most 16 connections (the pool's default) for
/// as long as [`HttpPool::with_origin_limit`] says.
///
/// Bindings share the pool given to [`new`](Self::new) when their TLS and proxy settings
/// are the pool's; bindings whose `tls` or `proxy` (or the environment's proxies) differ get
/// a pool of their own, one per distinct setting, made (and its files read) when the caller
/// is built.
pub struct Caller {
    pool: HttpPool,
    bindings: HashMap<String, Prepared>,
    tokens: Arc<dyn TokenSource>,
    wire_log: Option<WireLog>,
    /// Shared with every call rather than copied into each.
    scope_key: Arc<str>,
    /// One OAuth per distinct server URL and `auth` object, made on its first call and kept
    /// so its tokens serve every later call.
    oauth: Mutex<HashMap<String, Arc<OAuth>>>,
    /// The era verdicts and `tools/list` pages every binding's clients share.
    era_cache: EraCache,
    list_cache: ListCache,
    options: CallerOptions,
}

/// Settings of a [`Caller`] beyond its bindings ([`Caller::set_options`]): start from
/// `CallerOptions::default()` and set the fields to change.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallerOptions {
    /// The most calls in flight at once on one client: a stateless (2026-07-28) binding's
    /// kept client, or one 2025-era session. Calls past it fail at once, `refused`, without
    /// being sent. Default 1024, the session's own default ([`crate::session::Config`]'s
    /// `max_pending_requests`): each call in flight holds its request's state, so the bound
    /// keeps a burst from growing memory without limit. A host that means to keep more calls
    /// in flight to one server raises it.
    pub max_pending_requests: usize,
}

impl Default for CallerOptions {
    fn default() -> Self {
        CallerOptions {
            max_pending_requests: crate::session::Config::default().max_pending_requests,
        }
    }
}

/// The caller's identity as a call's `_meta` carries it (members in the order a JSON object
/// of them has always been written in).
#[derive(serde::Serialize)]
struct Scope<'a> {
    call_id: &'a str,
    session_id: &'a str,
    tenant_id: &'a str,
}

/// A `_meta` key refused by [`Caller::set_scope_key`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeKeyError(String);

impl std::fmt::Display for ScopeKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not a _meta key a host may use (like example.com/scope, outside the \
             modelcontextprotocol and mcp namespaces)",
            self.0
        )
    }
}

impl std::error::Error for ScopeKeyError {}

/// The `_meta` key under which a call carries the caller's identity (tenant, session and
/// call ids) unless the host names its own ([`Caller::set_scope_key`]).
pub(crate) const DEFAULT_SCOPE_KEY: &str = "brain.dev/scope";

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.bindings.keys().collect();
        names.sort();
        f.debug_struct("Caller").field("bindings", &names).finish()
    }
}

impl Caller {
    /// Prepares bindings (already validated by [`load_config`](super::config::load_config)):
    /// compiles every input and output schema, and makes the pools of bindings whose TLS or
    /// proxy settings are not `pool`'s. A binding without `tls` gets `pool`'s TLS settings;
    /// one without `proxy` follows the process environment's `HTTPS_PROXY`, `HTTP_PROXY` and
    /// `NO_PROXY`, read now ([`ProxyConfig::from_env`]).
    ///
    /// # Errors
    ///
    /// Names the binding whose schema does not compile, or whose TLS files cannot be used;
    /// an invalid proxy variable in the environment, named.
    pub fn new(
        pool: HttpPool,
        bindings: Vec<Binding>,
        tokens: Arc<dyn TokenSource>,
    ) -> Result<Self, ConfigError> {
        let proxy = ProxyConfig::from_env().map_err(|e| ConfigError {
            binding: None,
            field: None,
            message: e.to_string(),
        })?;
        Self::with_default_proxy(pool, bindings, tokens, proxy)
    }

    /// As [`new`](Self::new), with `default_proxy` for the bindings without `proxy` instead of
    /// the process environment (pass [`ProxyConfig::from_lookup`] to read another
    /// environment, or [`ProxyConfig::default`] (no proxy)).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_default_proxy(
        pool: HttpPool,
        bindings: Vec<Binding>,
        tokens: Arc<dyn TokenSource>,
        default_proxy: ProxyConfig,
    ) -> Result<Self, ConfigError> {
        let mut pools = Pools::new(pool.clone());
        let mut prepared = HashMap::with_capacity(bindings.len());
        for binding in bindings {
            let schema_error = |field: &str, message: String| ConfigError {
                binding: Some(binding.name.clone()),
                field: Some(field.to_owned()),
                message,
            };
            let input =
                compile(&binding.input_schema).map_err(|e| schema_error("input_schema", e))?;
            let output = match &binding.output_schema {
                Some(schema) => {
                    Some(compile(schema).map_err(|e| schema_error("output_schema", e))?)
                }
                None => None,
            };
            let binding_pool = match &binding.server {
                Server::Http { tls, proxy, .. } => pools.get(
                    tls.as_ref(),
                    proxy.as_ref(),
                    &default_proxy,
                    |field, message| ConfigError {
                        binding: Some(binding.name.clone()),
                        field: Some(field.to_owned()),
                        message,
                    },
                )?,
                Server::Stdio { .. } => pool.clone(),
            };
            prepared.insert(
                binding.name.clone(),
                Prepared {
                    input_schema: Arc::new(binding.input_schema.clone()),
                    mcp_tool: binding.mcp_tool.as_str().into(),
                    auth_key: match &binding.server {
                        Server::Http {
                            url,
                            auth: Some(settings),
                            ..
                        } => Some(format!("{url}\n{}", settings.to_json())),
                        _ => None,
                    },
                    binding,
                    input,
                    output,
                    pool: binding_pool,
                    kept: Mutex::new(Slot::default()),
                    making: tokio::sync::Mutex::new(()),
                },
            );
        }
        Ok(Caller {
            pool,
            bindings: prepared,
            tokens,
            wire_log: None,
            scope_key: DEFAULT_SCOPE_KEY.into(),
            oauth: Mutex::new(HashMap::new()),
            era_cache: EraCache::default(),
            list_cache: ListCache::default(),
            options: CallerOptions::default(),
        })
    }

    /// Replaces the caller's [`CallerOptions`]. Clients made for later calls follow them; a
    /// client a binding already keeps (made by an earlier call) keeps the settings it was
    /// made with, so set them before the first call.
    pub fn set_options(&mut self, options: CallerOptions) {
        self.options = options;
    }

    /// The caller's [`CallerOptions`].
    pub fn options(&self) -> &CallerOptions {
        &self.options
    }

    /// Names the `_meta` key that carries the caller's identity on every call (default
    /// `brain.dev/scope`). The key must be a `_meta` key a host may use: a prefix of dot
    /// labels and a slash, then a name (`example.com/scope`), and not in the reserved
    /// `modelcontextprotocol` or `mcp` namespaces (`basic/index.mdx`, "`_meta`").
    pub fn set_scope_key(&mut self, key: &str) -> Result<(), ScopeKeyError> {
        let valid = key.split_once('/').is_some_and(|(prefix, name)| {
            let labels: Vec<&str> = prefix.split('.').collect();
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && labels.iter().all(|label| {
                    !label.is_empty()
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
                && !matches!(labels.get(1), Some(&"modelcontextprotocol" | &"mcp"))
        });
        if !valid {
            return Err(ScopeKeyError(key.to_owned()));
        }
        self.scope_key = key.into();
        Ok(())
    }

    /// Sends a redacted trace of each call's wire conversation to `log`.
    pub fn set_wire_log(&mut self, log: WireLog) {
        self.wire_log = Some(log);
    }

    /// The binding called `name`.
    pub fn binding(&self, name: &str) -> Option<&Binding> {
        self.bindings.get(name).map(|p| &p.binding)
    }

    /// The connection pool given to [`new`](Self::new) (for statistics such as connections
    /// opened).
    pub fn pool(&self) -> &HttpPool {
        &self.pool
    }

    /// The era verdicts of the bindings' servers: each HTTP server is probed on its first
    /// call, unless a verdict is remembered here first ([`EraCache::remember`]).
    pub fn era_cache(&self) -> &EraCache {
        &self.era_cache
    }

    /// The pool the binding called `name` uses: [`pool`](Self::pool), or one of its own when
    /// its TLS or proxy settings differ.
    pub fn pool_for(&self, name: &str) -> Option<&HttpPool> {
        self.bindings.get(name).map(|p| &p.pool)
    }

    /// Calls the tool bound as `name`. Progress goes to `on_progress` as it arrives; the
    /// result is returned (never an `Err`: every failure is a [`ToolResult`] with
    /// `is_error: true`). `cancel` ends the call like the binding's timeout does: the request
    /// is cancelled on the wire (`notifications/cancelled`) and the call ends.
    ///
    /// With the `tracing` feature the call runs in a `call` span with the fields `binding`,
    /// `tool`, `origin` (scheme, host and port of an HTTP server; `stdio` otherwise),
    /// `call_id`, `protocol_version` (once connected) and `error_kind` (for a failure): never a
    /// token, a header value or an argument value.
    pub async fn call(
        &self,
        name: &str,
        context: &CallContext,
        arguments: &Value,
        mut on_progress: impl FnMut(Progress) + Send + 'static,
        cancel: Option<CancelToken>,
    ) -> ToolResult {
        let on_event = move |event| {
            if let CallEvent::Progress(progress) = event {
                on_progress(progress);
            }
        };
        self.call_events(name, context, arguments, on_event, cancel)
            .await
    }

    /// [`call`](Self::call), reporting every event: progress, and the status of the server's
    /// task when the call runs as one (`tool.task`). A binding with `task_support` runs as a
    /// task at 2025-11-25 when the server offers task-augmented calls; at 2026-07-28 the
    /// server decides. Once the task's id is known, a broken stream or connection does not
    /// end the call: the task is polled again (on a new connection) until it is terminal or
    /// the binding's timeout passes; the timeout or `cancel` sends `tasks/cancel`. The
    /// `tools/call` is sent once: polling is not re-sending.
    pub async fn call_events(
        &self,
        name: &str,
        context: &CallContext,
        arguments: &Value,
        on_progress: impl FnMut(CallEvent) + Send + 'static,
        cancel: Option<CancelToken>,
    ) -> ToolResult {
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let binding = self.bindings.get(name).map(|p| &p.binding);
            let span = tracing::info_span!(
                "call",
                binding = name,
                tool = binding.map(|b| b.mcp_tool.as_str()),
                origin = binding.map(|b| origin(&b.server)),
                call_id = context.call_id.as_str(),
                protocol_version = tracing::field::Empty,
                error_kind = tracing::field::Empty,
            );
            let result = self
                .call_in_span(name, context, arguments, on_progress, cancel)
                .instrument(span.clone())
                .await;
            if let Some(kind) = result.error_kind() {
                span.record("error_kind", kind.as_str());
            }
            result
        }
        // Not boxed: see `a_call_future_is_small_enough_to_spawn_cheaply`.
        #[cfg(not(feature = "tracing"))]
        self.call_in_span(name, context, arguments, on_progress, cancel)
            .await
    }

    async fn call_in_span(
        &self,
        name: &str,
        context: &CallContext,
        arguments: &Value,
        on_progress: impl FnMut(CallEvent) + Send + 'static,
        cancel: Option<CancelToken>,
    ) -> ToolResult {
        let call_id = context.call_id.as_str();
        // Step 1: check the call. Nothing is sent when it fails.
        let Some(prepared) = self.bindings.get(name) else {
            return ToolResult::failure(
                call_id,
                ErrorKind::UnknownTool,
                format!("no binding is named {name:?}"),
                false,
            );
        };
        let binding = &prepared.binding;
        if !binding.tenants.iter().any(|t| t == &context.tenant_id) {
            return ToolResult::failure(
                call_id,
                ErrorKind::TenantDenied,
                format!(
                    "tenant {:?} may not use {:?}",
                    context.tenant_id, binding.name
                ),
                false,
            );
        }
        if let Err(detail) = prepared.input.validate(arguments) {
            return ToolResult::failure(
                call_id,
                ErrorKind::InvalidArguments,
                format!("the arguments do not match the input schema: {detail}"),
                false,
            );
        }
        let Value::Object(arguments) = arguments else {
            return ToolResult::failure(
                call_id,
                ErrorKind::InvalidArguments,
                "the arguments must be a JSON object".to_owned(),
                false,
            );
        };
        let token = match &binding.server {
            Server::Http {
                token_env: Some(variable),
                ..
            } => match self.tokens.token(variable) {
                Some(token) => Some(token),
                None => {
                    return ToolResult::failure(
                        call_id,
                        ErrorKind::MissingToken,
                        format!("the environment variable {variable} holding the token is not set"),
                        false,
                    );
                }
            },
            _ => None,
        };
        let headers = match self.headers(binding) {
            Ok(headers) => headers,
            Err((kind, message)) => return ToolResult::failure(call_id, kind, message, false),
        };
        let auth = match self.auth(prepared) {
            Ok(auth) => auth,
            Err((kind, message)) => return ToolResult::failure(call_id, kind, message, false),
        };
        let timeout = Duration::from_secs(binding.timeout_seconds);
        let started = now();
        // Step 2: a session for this call alone (at a stateless revision, the client kept
        // from the binding's last call: there is no session to share).
        let (seen_failures, kept) = match prepared.kept.lock() {
            Ok(slot) => (slot.failures, slot.client_for(&token, &headers)),
            Err(_) => (0, None),
        };
        let made = match kept {
            Some(client) => Ok(client),
            // Boxed: making a client holds the whole connect (discovery, OAuth, the probe and
            // initialize), thousands of bytes that every call's future would otherwise carry,
            // a kept client's too.
            None => {
                Box::pin(self.client_for(
                    prepared,
                    token,
                    headers,
                    auth,
                    (timeout, started),
                    (context.trace_context.as_ref(), seen_failures),
                ))
                .await
            }
        };
        let client = match made {
            Ok(client) => client,
            // The tool was never called: whatever happened, its outcome is known (a probe
            // refused for overload keeps the server's wait).
            Err(error) => {
                return ToolResult::failure(call_id, error.kind(), error.to_string(), false)
                    .waiting(error.retry_after());
            }
        };
        #[cfg(feature = "tracing")]
        tracing::Span::current().record("protocol_version", client.protocol_version().as_str());
        // Steps 3 and 4: the call, with the caller's identity and live progress.
        let scope = Scope {
            call_id: &context.call_id,
            session_id: &context.session_id,
            tenant_id: &context.tenant_id,
        };
        let progress_call_id = context.call_id.clone();
        let progress = move |p: &crate::mcp::ProgressNotificationParams| Progress {
            call_id: progress_call_id.clone(),
            progress: p.progress,
            total: p.total,
            message: p.message.clone(),
        };
        let (on_progress, on_task): (ProgressSink, Option<TaskSink>) =
            if binding.task_support.is_some() {
                // Progress and task events go to the one callback, in the order they come.
                let on_progress = Arc::new(std::sync::Mutex::new(on_progress));
                let on_task = on_progress.clone();
                let task_call_id = context.call_id.clone();
                let on_progress: ProgressSink = Box::new(move |p| {
                    if let Ok(mut sink) = on_progress.lock() {
                        sink(CallEvent::Progress(progress(p)));
                    }
                });
                let on_task: TaskSink = Box::new(move |update| {
                    let event = TaskEvent {
                        call_id: task_call_id.clone(),
                        task_id: update.task_id.clone(),
                        status: update.status,
                        message: update.status_message.clone(),
                    };
                    if let Ok(mut sink) = on_task.lock() {
                        sink(CallEvent::Task(event));
                    }
                });
                (on_progress, Some(on_task))
            } else {
                // A binding without task support never runs as a task (its client declares
                // none): progress is the only event, and needs no sharing.
                let mut on_progress = on_progress;
                (
                    Box::new(move |p| on_progress(CallEvent::Progress(progress(p)))),
                    None,
                )
            };
        let options = CallOptions {
            timeout: timeout.saturating_sub(now() - started),
            idle_timeout: None,
            progress_token: Some(ProgressToken::String(context.call_id.clone())),
            meta: None,
            trace_context: context.trace_context.clone(),
            max_response_bytes: Some(binding.max_output_bytes),
            cancel,
            input_schema: Some(prepared.input_schema.clone()),
            on_progress: Some(on_progress),
            task_support: binding.task_support.clone(),
            on_task,
            // The result is mapped from its content alone (`finish_call`).
            content_only: true,
        };
        let outcome = client
            .call_tool_with(
                prepared.mcp_tool.clone(),
                Some(arguments),
                Some((self.scope_key.clone(), &scope)),
                options,
            )
            .await;
        // Step 5: close the session (DELETE), then report. A kept client that failed is
        // not used again, unless the server only said it is busy (429, 503): that refusal
        // says nothing against the client, which the next call may use as it is.
        if outcome
            .as_ref()
            .is_err_and(|error| error.kind() != ErrorKind::RateLimited)
            && let Ok(mut slot) = prepared.kept.lock()
            && slot
                .kept
                .as_ref()
                .is_some_and(|k| Arc::ptr_eq(&k.client, &client))
        {
            slot.kept = None;
        }
        if let Ok(client) = Arc::try_unwrap(client) {
            client.close().await;
        }
        finish_call(
            call_id,
            outcome,
            prepared.output.as_ref(),
            binding.max_output_bytes,
        )
    }

    /// A client for a call that no kept client serves (`seen_failures`: the binding's failed
    /// makings when the call looked for one).
    ///
    /// While a binding has no kept client, its calls make one at a time: the first makes it
    /// (probing the era if the pool has no verdict yet) and the calls that waited take it, or
    /// fail as it failed (nothing was sent), so a burst of first calls opens one client, not
    /// one per call. A 2025-era server gets a fresh session per call, made concurrently.
    async fn client_for(
        &self,
        prepared: &Prepared,
        token: Option<Secret>,
        headers: ExtraHeaders,
        auth: Option<Auth>,
        (timeout, started): (Duration, tokio::time::Instant),
        (trace, seen_failures): (Option<&TraceContext>, u64),
    ) -> Result<Arc<Client>, Error> {
        let binding = &prepared.binding;
        let http_url = match &binding.server {
            Server::Http { url, .. } => Some(url.as_str()),
            _ => None,
        };
        // A session per call: a stdio server, or one known to speak a 2025-era revision.
        let sessions =
            || http_url.is_none_or(|url| matches!(self.era_cache.verdict(url), Some(None)));
        // One maker at a time, for as long as the binding may be a stateless one.
        let mut making = None;
        if !sessions() {
            let Ok(guard) =
                tokio::time::timeout_at(started + timeout, prepared.making.lock()).await
            else {
                return Err(no_connection_in_time(timeout));
            };
            making = Some(guard);
        }
        if let Ok(slot) = prepared.kept.lock() {
            if let Some(client) = slot.client_for(&token, &headers) {
                return Ok(client);
            }
            if slot.failures > seen_failures
                && let Some(failure) = &slot.failure
            {
                return Err(failure.clone());
            }
        }
        // The first maker found a 2025-era server: sessions are made side by side.
        if sessions() {
            making = None;
        }
        // The binding's deadline bounds the connection, the era probe and initialize with
        // every authorization step they wait on. Over stdio the probe keeps its own short
        // limit: there a silent probe means a 2025-era server, not a slow one.
        let remaining = timeout.saturating_sub(now() - started);
        let defaults = crate::session::Config::default();
        let (probe_timeout, initialize_timeout) = match http_url {
            Some(_) => (remaining, remaining),
            None => (
                defaults.probe_timeout.min(remaining),
                Duration::from_secs(30).min(remaining),
            ),
        };
        let mut options = ClientOptions::with_caches(
            crate::session::Config {
                probe_timeout,
                initialize_timeout,
                max_pending_requests: self.options.max_pending_requests,
                ..defaults
            },
            self.era_cache.clone(),
            self.list_cache.clone(),
        );
        // A binding whose tool allows tasks declares them (and only such a binding: every
        // other call goes on the wire as before), and follows a task to its end.
        options.tasks = binding.task_support.is_some();
        // The binding's one OAuth (kept by the caller): a kept client holds the same.
        options.auth = auth;
        // The call's trace context for its handshake only: a kept client's later calls bring
        // their own.
        options.handshake_trace = trace.cloned();
        let credentials = (token.clone(), headers.clone());
        let connecting = connect(
            &prepared.pool,
            &binding.server,
            token,
            headers,
            options,
            self.wire_log.clone(),
        );
        let connected = match tokio::time::timeout_at(started + timeout, connecting).await {
            Ok(connected) => connected,
            Err(_) => Err(no_connection_in_time(timeout)),
        };
        match connected {
            Ok(client) => {
                let client = Arc::new(client);
                if client.protocol_version().is_modern()
                    && http_url.is_some()
                    && let Ok(mut slot) = prepared.kept.lock()
                {
                    let (token, headers) = credentials;
                    slot.kept = Some(Kept {
                        client: client.clone(),
                        token,
                        headers,
                    });
                }
                // Only now may the calls waiting on `making` look for it.
                drop(making);
                Ok(client)
            }
            Err(error) => {
                // Over HTTP every wait inside the connect (the probe, initialize, each OAuth
                // request) was given what was left of the binding's timeout, so a timeout
                // there is that deadline, whichever timer fired first.
                let error = if http_url.is_some() && error.kind() == ErrorKind::Timeout {
                    let deadline = no_connection_in_time(timeout);
                    Error::new(ErrorKind::Timeout, format!("{deadline}: {error}"))
                } else {
                    error
                };
                if let Ok(mut slot) = prepared.kept.lock() {
                    slot.failures += 1;
                    slot.failure = Some(error.clone());
                }
                Err(error)
            }
        }
    }

    /// The OAuth of a binding with `auth` (see [OAuth](super::config#oauth)): the one kept for
    /// its server and `auth` object, or a new one whose secret, key or token store is read
    /// now. A failure is the call's kind and message (naming the member, never a secret); it
    /// is not kept, so the next call reads again.
    fn auth(&self, prepared: &Prepared) -> Result<Option<Auth>, (ErrorKind, String)> {
        let (
            Some(key),
            Server::Http {
                url,
                auth: Some(settings),
                ..
            },
        ) = (&prepared.auth_key, &prepared.binding.server)
        else {
            return Ok(None);
        };
        if let Some(oauth) = self.oauth.lock().ok().and_then(|m| m.get(key).cloned()) {
            return Ok(Some(Auth::oauth(oauth)));
        }
        let limit = prepared.binding.timeout_seconds;
        let oauth = Arc::new(self.new_oauth(url, settings, limit)?);
        if let Ok(mut kept) = self.oauth.lock() {
            // Another call may have made one meanwhile: the first one kept serves both.
            let oauth = kept.entry(key.clone()).or_insert(oauth).clone();
            return Ok(Some(Auth::oauth(oauth)));
        }
        Ok(Some(Auth::oauth(oauth)))
    }

    /// `timeout_secs` (the binding's timeout) bounds each of the flow's requests: a slow
    /// token endpoint is waited for as long as the call may take, and no longer.
    fn new_oauth(
        &self,
        url: &str,
        settings: &AuthSettings,
        timeout_secs: u64,
    ) -> Result<OAuth, (ErrorKind, String)> {
        OAuthMaker {
            tokens: &self.tokens,
            wire_log: self.wire_log.as_ref(),
            timeout_secs: Some(timeout_secs),
        }
        .make(url, settings)
    }

    /// The extra headers of an HTTP binding, their values read through the token source; a
    /// variable that is not set, or holds what cannot be sent as a header, is the failure's
    /// kind and message (which name the header and the variable, never the value).
    fn headers(&self, binding: &Binding) -> Result<ExtraHeaders, (ErrorKind, String)> {
        let mut headers = ExtraHeaders::default();
        let Server::Http { header_env, .. } = &binding.server else {
            return Ok(headers);
        };
        for (name, variable) in header_env {
            let Some(value) = self.tokens.token(variable) else {
                return Err((
                    ErrorKind::MissingHeader,
                    format!(
                        "the environment variable {variable} holding the value of header \
                         {name} is not set"
                    ),
                ));
            };
            headers.insert(name, value).map_err(|e| {
                (
                    ErrorKind::InvalidHeader,
                    format!("header {name} (from the environment variable {variable}): {e}"),
                )
            })?;
        }
        Ok(headers)
    }
}

/// Where a server is, for a span: an HTTP server's scheme, host and port (never its path or
/// query, which may carry a credential), or `stdio`.
#[cfg(feature = "tracing")]
fn origin(server: &Server) -> String {
    match server {
        Server::Http { url, .. } => match url.parse::<http::Uri>() {
            Ok(uri) => {
                let scheme = uri.scheme_str().unwrap_or("http");
                let host = uri.host().unwrap_or("");
                match uri.port_u16() {
                    Some(port) => format!("{scheme}://{host}:{port}"),
                    None => format!("{scheme}://{host}"),
                }
            }
            Err(_) => "an unparsable URL".to_owned(),
        },
        _ => "stdio".to_owned(),
    }
}

/// The pools of a [`Caller`], one per distinct TLS and proxy setting (few: a linear search).
pub(crate) struct Pools {
    pools: Vec<HttpPool>,
}

impl Pools {
    /// Starts with `base`, whose TLS settings are the default for a server without `tls`.
    pub(crate) fn new(base: HttpPool) -> Self {
        Pools { pools: vec![base] }
    }

    /// The pool for a server's `tls` and `proxy` (`default_proxy` when it has none), made
    /// when no pool has these settings yet. `error` builds the error naming a field.
    pub(crate) fn get<E>(
        &mut self,
        tls: Option<&TlsSettings>,
        proxy: Option<&ProxySetting>,
        default_proxy: &ProxyConfig,
        error: impl Fn(&str, String) -> E,
    ) -> Result<HttpPool, E> {
        let tls_options = match tls {
            Some(tls) => tls.to_options(),
            None => self.pools[0].tls().clone(),
        };
        let proxy = match proxy {
            Some(setting) => setting
                .to_config()
                .map_err(|e| error("proxy", e.to_string()))?,
            None => default_proxy.clone(),
        };
        if let Some(pool) = self
            .pools
            .iter()
            .find(|p| p.tls() == &tls_options && p.proxy() == &proxy)
        {
            return Ok(pool.clone());
        }
        let pool = HttpPool::with_proxy(&tls_options, proxy)
            .map_err(|e| error(tls_field(tls, &tls_options, &e), e.to_string()))?;
        self.pools.push(pool.clone());
        Ok(pool)
    }
}

/// The `tls` member a [`TlsError`] is about.
fn tls_field(tls: Option<&TlsSettings>, options: &TlsOptions, error: &TlsError) -> &'static str {
    let path = match error {
        TlsError::Read { path, .. }
        | TlsError::Pem { path, .. }
        | TlsError::Missing { path, .. }
        | TlsError::InvalidRoot {
            path: Some(path), ..
        } => Some(path),
        TlsError::ClientCert { cert_file, .. } => Some(cert_file),
        _ => None,
    };
    match (tls, path) {
        (Some(tls), Some(path)) => tls.field_for(path),
        (Some(_), None) if matches!(options.roots, Roots::Platform) => "tls.roots",
        _ => "tls",
    }
}

/// The end of a call from what the client returned: the result mapped, or the failure
/// classified. Pure, so the `call_result` fuzz target drives exactly this.
pub(crate) fn finish_call(
    call_id: &str,
    outcome: Result<CallToolResult, Error>,
    output_schema: Option<&CompiledSchema>,
    max_output_bytes: u64,
) -> ToolResult {
    let task_id = match &outcome {
        Ok(result) => result
            .meta
            .as_ref()
            .and_then(|meta| meta.get(crate::mcp::RELATED_TASK_KEY))
            .and_then(|related| related.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        Err(error) => error
            .failure()
            .and_then(|failure| failure.task_id())
            .map(str::to_owned),
    };
    let result = match outcome {
        Ok(result) => match map_result(result, output_schema) {
            Ok(output) => tool_output(call_id, output),
            // The tool ran but what came back cannot be used: nobody knows what it did.
            Err(error) => ToolResult::failure(call_id, error.kind(), error.to_string(), true),
        },
        Err(error) => failed_call(call_id, &error, max_output_bytes),
    };
    result.with_task_id(task_id)
}

fn tool_output(call_id: &str, output: ToolOutput) -> ToolResult {
    if output.is_error {
        // The tool ran and said it failed: the outcome is known, and its content is kept.
        let message = output
            .content
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let message: String = message.chars().take(1000).collect();
        return ToolResult::ToolError {
            call_id: call_id.to_owned(),
            content: output.content,
            structured_content: output.structured_content,
            message: if message.is_empty() {
                "the tool reported an error".to_owned()
            } else {
                message
            },
            task_id: None,
        };
    }
    ToolResult::Success {
        call_id: call_id.to_owned(),
        content: output.content,
        structured_content: output.structured_content,
        task_id: None,
    }
}

fn failed_call(call_id: &str, error: &Error, max_output_bytes: u64) -> ToolResult {
    // A reply over a limit is, once the call was made, the call's output being too large.
    let kind = match error.kind() {
        ErrorKind::LimitExceeded => ErrorKind::OutputTooLarge,
        kind => kind,
    };
    let mut message = error.to_string();
    // Name the binding's setting only when it is what stopped the call (the transport's byte
    // budget is set from it); an event-stream line or event over its own limit is reported as
    // it is.
    if error
        .failure()
        .is_some_and(|f| matches!(f.kind, crate::session::FailureKind::ReplyOverBudget { .. }))
    {
        message = format!("{message} (max_output_bytes is {max_output_bytes})");
    }
    ToolResult::failure(call_id, kind, message, error.outcome_unknown())
        .waiting(error.retry_after())
}

/// No client within the binding's deadline: nothing was sent.
fn no_connection_in_time(timeout: Duration) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!(
            "no connection to the server within the binding's timeout of {} s (the tool was \
             not called)",
            timeout.as_secs()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Delivery, Failure, FailureKind};

    fn limit_failure(detail: String) -> Error {
        Error::from_failure(Failure::new(
            FailureKind::LimitExceeded,
            Delivery::MayHaveReached,
            detail,
        ))
    }

    #[test]
    fn only_the_output_budget_is_named_as_max_output_bytes() {
        let over = Error::from_failure(crate::exchange::over_budget(1024));
        let budget = failed_call("c", &over, 1024);
        let message = budget.error_message().expect("an error");
        assert_eq!(
            budget.error_kind().map(ErrorKind::as_str),
            Some("output_too_large")
        );
        assert!(message.ends_with("(max_output_bytes is 1024)"), "{message}");

        let line = crate::sse::Error::LineTooLong { limit: 16 };
        let stopped = failed_call(
            "c",
            &limit_failure(format!("the response stream was refused: {line}")),
            1024,
        );
        let message = stopped.error_message().expect("an error");
        assert_eq!(
            stopped.error_kind().map(ErrorKind::as_str),
            Some("output_too_large")
        );
        assert!(!message.contains("max_output_bytes"), "{message}");
        assert_eq!(stopped.unknown_outcome(), Some(true));
    }

    /// A host spawns each call (`tokio::spawn(caller.call(..))`), and tokio moves the future
    /// several times on the way into its task cell, so it must stay small. Making a client
    /// (the whole connect: discovery, OAuth, probe, initialize) is the big part and lives in a
    /// box of its own, made only when no kept client serves the call; the call itself is not
    /// boxed, as a box of that size per call costs the sequential path more than the moves
    /// (`benches/compare/instructions.sh`). 7,408 bytes with every step inline.
    #[test]
    fn a_call_future_is_small_enough_to_spawn_cheaply() {
        let config = serde_json::json!([{
            "name": "echo", "description": "echoes", "input_schema": {"type": "object"},
            "url": "http://127.0.0.1:9/mcp", "mcp_tool": "echo", "tenants": ["acme"],
        }]);
        let bindings = crate::binding::config::load_config(&config.to_string()).expect("config");
        let pool = HttpPool::new(&crate::transport::http::TlsOptions::default()).expect("a pool");
        let caller =
            Caller::with_default_proxy(pool, bindings, Arc::new(EnvTokens), ProxyConfig::default())
                .expect("a caller");
        let context = CallContext::new("acme", "s", "c");
        let arguments = serde_json::json!({});
        let call = caller.call("echo", &context, &arguments, |_| {}, None);
        assert!(
            std::mem::size_of_val(&call) <= 4096,
            "{}",
            std::mem::size_of_val(&call)
        );
        let events = caller.call_events("echo", &context, &arguments, |_| {}, None);
        assert!(
            std::mem::size_of_val(&events) <= 4096,
            "{}",
            std::mem::size_of_val(&events)
        );
    }
}

#[cfg(all(test, feature = "tracing", feature = "demo"))]
#[path = "tests_tracing.rs"]
mod tests_tracing;
