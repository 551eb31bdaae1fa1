//! Interop of tasks: calls that the real servers run as tasks, polled to their result.
//! server-everything 2026.8.31's `simulate-research-query` requires task execution
//! (`execution.taskSupport: "required"`) at 2025-11-25 over Streamable HTTP.
//! `fixtures/servers/rmcp-server --tasks` runs `task_steps` and `task_confirm` as tasks on
//! rmcp 3.11's `TaskManager`, which speaks only the 2026-07-28 extension (SEP-2663): at
//! 2026-07-28 the calls become tasks; at 2025-11-25 rmcp offers no core tasks (no `tasks`
//! capability, no `execution.taskSupport`, no `tasks/result` or `tasks/list`), so the same
//! calls are answered directly.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::binding::call::{Caller, ToolResult};
use mcpwire::client::{CallOptions, ClientOptions, InputFuture, InputHandler};
use mcpwire::mcp::{
    CallToolResult, ClientCapabilities, InputRequest, JsonObject, TaskStatus, TaskSupport,
    TaskUpdate,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::binding_call::{assert_failed, assert_succeeded, binding, caller};
use crate::binding_tasks::call_tool_events;
use crate::interop::{args, offering, only_text, options, pool};
use crate::modern::Accept;
use crate::support::peers::{self, Peer, PeerServer};

/// Task statuses as a call reports them.
#[derive(Clone, Default)]
pub(crate) struct Statuses(Arc<Mutex<Vec<TaskUpdate>>>);

impl Statuses {
    pub(crate) fn sink(&self) -> mcpwire::client::TaskSink {
        let seen = self.0.clone();
        Box::new(move |update| {
            if let Ok(mut seen) = seen.lock() {
                seen.push(update.clone());
            }
        })
    }

    pub(crate) fn statuses(&self) -> Vec<TaskStatus> {
        let seen = self.0.lock().map(|seen| seen.clone()).unwrap_or_default();
        let mut statuses: Vec<TaskStatus> = seen.iter().map(|u| u.status).collect();
        statuses.dedup();
        statuses
    }
}

pub(crate) fn task_options() -> ClientOptions {
    let mut options = options();
    options.tasks = true;
    options
}

/// A client with tasks on (and `handler` answering input, if given) connected to `url`.
async fn connect_tasks(url: &str, handler: Option<Arc<dyn InputHandler>>) -> mcpwire::Client {
    let config = mcpwire::transport::http::HttpConfig::new(url).expect("config");
    let mut options = task_options();
    options.input_handler = handler;
    mcpwire::Client::connect_http(&pool(), config, options)
        .await
        .expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_runs_simulate_research_query_as_a_task_polled_to_its_report() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let client = connect_tasks(&server.url, None).await;
    let tools = client.list_tools().await.expect("tools/list");
    let tool = tools
        .iter()
        .find(|t| t.name == "simulate-research-query")
        .expect("server-everything lists simulate-research-query");
    assert!(tool.requires_task(), "{tool:?}");
    let statuses = Statuses::default();
    let mut call = CallOptions::default();
    call.timeout = std::time::Duration::from_secs(30);
    call.task_support = Some(TaskSupport::Required);
    call.on_task = Some(statuses.sink());
    let result = client
        .call_tool(
            "simulate-research-query",
            args(json!({"topic": "durable calls"})),
            call,
        )
        .await
        .unwrap_or_else(|e| panic!("{} (unknown: {}): {e}", e.kind(), e.outcome_unknown()));
    assert!(!result.is_error());
    let text = only_text(&result);
    assert!(
        text.starts_with("# Research Report: durable calls"),
        "{text}"
    );
    let task_id = result
        .meta
        .as_ref()
        .and_then(|meta| meta.get("io.modelcontextprotocol/related-task"))
        .and_then(|related| related.get("taskId"))
        .and_then(|id| id.as_str())
        .expect("the task's id in the result's _meta");
    assert!(!task_id.is_empty());
    assert_eq!(
        statuses.statuses(),
        [TaskStatus::Working, TaskStatus::Completed],
        "{:?}",
        statuses.0.lock().map(|s| s.clone())
    );
    client.close().await;
}

/// Answers each elicitation by choosing the first `oneOf` choice of the request's
/// `interpretation` property, and remembers the choices it made.
#[derive(Default)]
struct FirstChoice(Mutex<Vec<String>>);

impl InputHandler for FirstChoice {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(JsonObject::new()),
            ..ClientCapabilities::default()
        }
    }

    fn answer(&self, request: InputRequest) -> InputFuture {
        let params: Value = request
            .params
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null);
        let choice = params["requestedSchema"]["properties"]["interpretation"]["oneOf"][0]["const"]
            .as_str()
            .map(str::to_owned);
        if let (Some(choice), Ok(mut chosen)) = (&choice, self.0.lock()) {
            chosen.push(choice.clone());
        }
        let method = request.method;
        Box::pin(async move {
            match (method.as_str(), choice) {
                ("elicitation/create", Some(choice)) => {
                    Ok(json!({"action": "accept", "content": {"interpretation": choice}}))
                }
                _ => Err(format!("unexpected input request {method}: {params}").into()),
            }
        })
    }
}

/// 2025-11-25 `input_required`: server-everything's task asks for a clarification through an
/// elicitation it queues for the `tasks/result` stream; the client's `InputHandler` answers it
/// there and the task completes with the chosen interpretation in its report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_task_input_is_answered_on_the_tasks_result_stream() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let handler = Arc::new(FirstChoice::default());
    let client = connect_tasks(&server.url, Some(handler.clone())).await;
    let statuses = Statuses::default();
    let mut call = CallOptions::default();
    call.timeout = Duration::from_secs(30);
    call.task_support = Some(TaskSupport::Required);
    call.on_task = Some(statuses.sink());
    let result = client
        .call_tool(
            "simulate-research-query",
            args(json!({"topic": "python", "ambiguous": true})),
            call,
        )
        .await
        .unwrap_or_else(|e| panic!("{} (unknown: {}): {e}", e.kind(), e.outcome_unknown()));
    assert!(!result.is_error());
    let chosen = handler.0.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(chosen.len(), 1, "one elicitation answered: {chosen:?}");
    let text = only_text(&result);
    assert!(
        text.contains(&format!("- **Clarification**: {}", chosen[0])),
        "{text}"
    );
    // The statuses the polls saw: working, then input_required. The report came on the
    // tasks/result stream that carried the elicitation; that answer has no status, and no
    // tasks/get follows it, so no `completed` is reported.
    assert_eq!(
        statuses.statuses(),
        [TaskStatus::Working, TaskStatus::InputRequired]
    );
    client.close().await;
}

// --- rmcp 3.11 (fixtures/servers/rmcp-server --tasks) ---------------------------------------

/// The rmcp server with its task tools, suggesting polls every 100 ms.
fn rmcp_tasks() -> PeerServer {
    PeerServer::rmcp(&["--tasks", "--task-poll-ms", "100"])
}

/// The task's id in a result's `_meta` (`io.modelcontextprotocol/related-task`).
fn related_task(result: &CallToolResult) -> Option<String> {
    result
        .meta
        .as_ref()?
        .get("io.modelcontextprotocol/related-task")?
        .get("taskId")?
        .as_str()
        .map(str::to_owned)
}

/// How many tasks the rmcp server started (its log names each one).
fn tasks_started(server: &PeerServer) -> usize {
    server.log_tail(10_000).matches(": task_").count()
}

fn task_call(statuses: &Statuses) -> CallOptions {
    let mut call = CallOptions::default();
    call.timeout = Duration::from_secs(20);
    call.task_support = Some(TaskSupport::Optional);
    call.on_task = Some(statuses.sink());
    call
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_runs_task_steps_as_a_task_at_2026_07_28() {
    peers::require(Peer::Rmcp);
    let server = rmcp_tasks();
    let client = connect_tasks(&server.url, None).await;
    assert!(
        client.protocol_version().is_modern(),
        "rmcp 3.11 answers the era probe"
    );
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "task_steps"), "{tools:?}");
    let statuses = Statuses::default();
    let result = client
        .call_tool(
            "task_steps",
            args(json!({"steps": 3, "delay_ms": 100, "label": "client"})),
            task_call(&statuses),
        )
        .await
        .unwrap_or_else(|e| panic!("{} (unknown: {}): {e}", e.kind(), e.outcome_unknown()));
    assert!(!result.is_error());
    assert_eq!(only_text(&result), "client: completed 3 steps");
    let task_id = related_task(&result).expect("the task's id in the result's _meta");
    assert!(
        server
            .log_tail(100)
            .contains(&format!("task {task_id}: task_steps started")),
        "{}",
        server.log_tail(20)
    );
    assert_eq!(
        statuses.statuses(),
        [TaskStatus::Working, TaskStatus::Completed],
        "{:?}",
        statuses.0.lock().map(|s| s.clone())
    );
    // The status messages rmcp's task gave, in order, each seen at most once in a row.
    let messages: Vec<Option<String>> = statuses
        .0
        .lock()
        .map(|seen| seen.iter().map(|u| u.status_message.clone()).collect())
        .unwrap_or_default();
    assert!(
        messages.contains(&Some("step 3 of 3".to_owned())),
        "{messages:?}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_answers_task_steps_directly_at_2025_11_25() {
    peers::require(Peer::Rmcp);
    let server = rmcp_tasks();
    let pool = pool();
    let config = mcpwire::transport::http::HttpConfig::new(&server.url).expect("config");
    let mut options = offering(mcpwire::mcp::ProtocolVersion::V2025_11_25);
    options.tasks = true;
    let client = mcpwire::Client::connect_http(&pool, config, options)
        .await
        .expect("connect");
    assert_eq!(
        client.protocol_version(),
        mcpwire::mcp::ProtocolVersion::V2025_11_25
    );
    // rmcp declares the extension, not the core `tasks` capability of 2025-11-25.
    let capabilities = &client.server().expect("initialize result").capabilities;
    assert!(capabilities.tasks.is_none(), "{capabilities:?}");
    let tools = client.list_tools().await.expect("tools/list");
    let tool = tools
        .iter()
        .find(|t| t.name == "task_steps")
        .expect("listed");
    assert!(
        tool.execution.is_none(),
        "rmcp 3.11 has no execution.taskSupport: {tool:?}"
    );
    let statuses = Statuses::default();
    let result = client
        .call_tool(
            "task_steps",
            args(json!({"steps": 2, "delay_ms": 50, "label": "legacy"})),
            task_call(&statuses),
        )
        .await
        .unwrap_or_else(|e| panic!("{} (unknown: {}): {e}", e.kind(), e.outcome_unknown()));
    assert_eq!(only_text(&result), "legacy: completed 2 steps");
    assert_eq!(related_task(&result), None, "{result:?}");
    assert!(statuses.statuses().is_empty());
    assert_eq!(tasks_started(&server), 0, "{}", server.log_tail(20));
    // Nor does it serve the core methods that read a task's result or list tasks.
    for method in ["tasks/result", "tasks/list"] {
        let params = (method == "tasks/result").then(|| json!({"taskId": "none"}));
        let error = client
            .request_raw(method, params, None)
            .await
            .expect_err(method);
        assert!(
            error.to_string().contains("-32601"),
            "{method}: {} {error}",
            error.kind()
        );
    }
    client.close().await;
}

/// The binding `task_steps` (or `task_confirm`) of the rmcp server at `url`, allowing tasks as
/// `mcp-tools` binds every tool of a 2026-07-28 server that declares the extension.
fn rmcp_binding(url: &str, tool: &str, properties: Value) -> mcpwire::binding::config::Binding {
    binding(
        url,
        json!({
            "name": tool,
            "mcp_tool": tool,
            "input_schema": {"type": "object", "properties": properties},
            "task_support": "optional",
            "timeout_seconds": 20,
        }),
    )
}

fn steps_binding(url: &str) -> mcpwire::binding::config::Binding {
    rmcp_binding(
        url,
        "task_steps",
        json!({"steps": {"type": "integer"}, "delay_ms": {"type": "integer"},
               "label": {"type": "string"}}),
    )
}

/// Calls `tool` with `arguments`, collecting every event's JSON line.
async fn call_events(caller: &Caller, tool: &str, arguments: Value) -> (ToolResult, Vec<Value>) {
    call_tool_events(caller, tool, &arguments, None, || {}).await
}

/// The statuses of the `tool.task` events, repeats in a row folded.
fn event_statuses(events: &[Value]) -> Vec<String> {
    let mut statuses: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool.task")
        .filter_map(|e| e["status"].as_str().map(str::to_owned))
        .collect();
    statuses.dedup();
    statuses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_binding_call_runs_as_a_task_at_2026_07_28() {
    peers::require(Peer::Rmcp);
    let server = rmcp_tasks();
    let caller = caller(vec![steps_binding(&server.url)]);
    let (result, events) = call_events(
        &caller,
        "task_steps",
        json!({"steps": 3, "delay_ms": 100, "label": "binding"}),
    )
    .await;
    assert_succeeded(&result);
    assert_eq!(
        result.content(),
        [json!({"type": "text", "text": "binding: completed 3 steps"})]
    );
    let task_id = result.task_id().expect("the task's id").to_owned();
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "tool.task")
            .all(|e| e["task_id"] == task_id),
        "{events:?}"
    );
    assert_eq!(
        event_statuses(&events),
        ["working", "completed"],
        "{events:?}"
    );
    assert_eq!(tasks_started(&server), 1, "{}", server.log_tail(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_binding_call_is_answered_directly_at_2025_11_25() {
    peers::require(Peer::Rmcp);
    let server = rmcp_tasks();
    let caller = caller(vec![steps_binding(&server.url)]);
    caller.era_cache().remember(&server.url, None);
    let (result, events) = call_events(
        &caller,
        "task_steps",
        json!({"steps": 2, "delay_ms": 50, "label": "legacy"}),
    )
    .await;
    assert_succeeded(&result);
    assert_eq!(
        result.content(),
        [json!({"type": "text", "text": "legacy: completed 2 steps"})]
    );
    assert_eq!(result.task_id(), None, "{result:?}");
    assert!(event_statuses(&events).is_empty(), "{events:?}");
    assert_eq!(tasks_started(&server), 0, "{}", server.log_tail(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_binding_call_refuses_a_task_that_needs_input_and_cancels_it() {
    peers::require(Peer::Rmcp);
    let server = rmcp_tasks();
    let binding = rmcp_binding(
        &server.url,
        "task_confirm",
        json!({"action": {"type": "string"}}),
    );
    let caller = caller(vec![binding]);
    let (result, events) = call_events(&caller, "task_confirm", json!({"action": "deploy"})).await;
    assert_failed(&result, "elicitation_requested", true);
    let task_id = result.task_id().expect("the task's id").to_owned();
    assert!(
        event_statuses(&events).contains(&"input_required".to_owned()),
        "{events:?}"
    );
    // tasks/cancel reached rmcp, which settles the parked task as cancelled.
    let log = server.log_tail(100);
    assert!(
        log.contains(&format!("task {task_id}: tasks/cancel")),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_task_input_is_answered_with_tasks_update_at_2026_07_28() {
    peers::require(Peer::Rmcp);
    let server = rmcp_tasks();
    let handler = Arc::new(Accept(AtomicUsize::new(0)));
    let client = connect_tasks(&server.url, Some(handler.clone())).await;
    let statuses = Statuses::default();
    let result = client
        .call_tool(
            "task_confirm",
            args(json!({"action": "deploy"})),
            task_call(&statuses),
        )
        .await
        .unwrap_or_else(|e| panic!("{} (unknown: {}): {e}", e.kind(), e.outcome_unknown()));
    assert_eq!(only_text(&result), "deploy: accept");
    assert_eq!(
        handler.0.load(Ordering::SeqCst),
        1,
        "one elicitation answered"
    );
    // Made working, parked on the elicitation, then (after tasks/update, perhaps working
    // again between two polls) completed.
    let seen = statuses.statuses();
    assert_eq!(seen.first(), Some(&TaskStatus::Working), "{seen:?}");
    assert!(seen.contains(&TaskStatus::InputRequired), "{seen:?}");
    assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
    client.close().await;
}

// --- a cut connection -------------------------------------------------------------------------

/// A TCP relay in front of a server that, once a task has been made (a `"resultType":"task"`
/// or `CreateTaskResult` answer went through), closes the connection carrying the next `tasks/get` before passing it
/// on: the client must poll again on a new connection. Counts what went through.
#[derive(Default)]
struct CutRelay {
    task_seen: AtomicBool,
    cuts: AtomicUsize,
    connections: AtomicUsize,
    tool_calls: AtomicUsize,
    task_gets: AtomicUsize,
}

impl CutRelay {
    /// One poll was cut, the `tools/call` went out once (polling is not re-sending), and the
    /// client polled again on a new connection.
    fn assert_one_poll_cut_and_polled_again(&self) {
        assert_eq!(self.cuts.load(Ordering::SeqCst), 1, "the relay cut a poll");
        assert_eq!(
            self.tool_calls.load(Ordering::SeqCst),
            1,
            "polling is not re-sending"
        );
        assert!(
            self.connections.load(Ordering::SeqCst) >= 2,
            "polled again on a new connection"
        );
    }

    /// Listens on a free loopback port, relaying to `upstream` (host:port); returns the
    /// relay's address.
    async fn start(self: &Arc<Self>, upstream: String) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let relay = self.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                relay.connections.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                tokio::spawn(relay.clone().pipe(client, server));
            }
        });
        addr
    }

    async fn pipe(self: Arc<Self>, client: TcpStream, server: TcpStream) {
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = server.into_split();
        let up = {
            let relay = self.clone();
            async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match client_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    let chunk = String::from_utf8_lossy(&buf[..n]);
                    relay.tool_calls.fetch_add(
                        chunk.matches(r#""method":"tools/call""#).count(),
                        Ordering::SeqCst,
                    );
                    if chunk.contains(r#""method":"tasks/get""#) {
                        relay.task_gets.fetch_add(1, Ordering::SeqCst);
                        if relay.task_seen.load(Ordering::SeqCst)
                            && relay
                                .cuts
                                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok()
                        {
                            return; // dropping both halves closes both connections
                        }
                    }
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        };
        let down = {
            let relay = self.clone();
            async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    // A task made: the 2026-07-28 extension's answer, or 2025-11-25's
                    // `CreateTaskResult`.
                    let chunk = String::from_utf8_lossy(&buf[..n]);
                    if chunk.contains(r#""resultType":"task""#)
                        || chunk.contains(r#""task":{"taskId""#)
                    {
                        relay.task_seen.store(true, Ordering::SeqCst);
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        };
        // The first direction to end ends the connection (both halves dropped).
        tokio::select! {
            () = up => {}
            () = down => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_binding_call_survives_a_connection_cut_while_the_task_works() {
    peers::require(Peer::Rmcp);
    let server = rmcp_tasks();
    let upstream = server.url.clone();
    let relay = Arc::new(CutRelay::default());
    let addr = relay.start(authority(&upstream)).await;
    let url = format!("http://{addr}/mcp");
    let caller = caller(vec![steps_binding(&url)]);
    // Ten steps of 100 ms: the task works for a second, polled every 100 ms.
    let (result, events) = tokio::time::timeout(
        Duration::from_secs(30),
        call_events(
            &caller,
            "task_steps",
            json!({"steps": 10, "delay_ms": 100, "label": "cut"}),
        ),
    )
    .await
    .expect("the call ends within its binding's timeout");
    assert_succeeded(&result);
    assert_eq!(
        result.content(),
        [json!({"type": "text", "text": "cut: completed 10 steps"})]
    );
    assert!(result.task_id().is_some(), "{result:?}");
    relay.assert_one_poll_cut_and_polled_again();
    assert!(relay.task_gets.load(Ordering::SeqCst) >= 2);
    assert_eq!(
        event_statuses(&events),
        ["working", "completed"],
        "{events:?}"
    );
    assert_eq!(tasks_started(&server), 1, "{}", server.log_tail(20));
}

/// The `host:port` of a peer server's URL.
fn authority(url: &str) -> String {
    url.strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("host:port")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_binding_call_survives_a_connection_cut_while_the_task_works() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let relay = Arc::new(CutRelay::default());
    let addr = relay.start(authority(&server.url)).await;
    let url = format!("http://{addr}/mcp");
    // As `mcp-tools` binds it: server-everything's tool requires task execution.
    let research = binding(
        &url,
        json!({
            "name": "research",
            "mcp_tool": "simulate-research-query",
            "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}}},
            "task_support": "required",
            "timeout_seconds": 30,
        }),
    );
    let caller = caller(vec![research]);
    let (result, events) = tokio::time::timeout(
        Duration::from_secs(40),
        call_events(&caller, "research", json!({"topic": "durable calls"})),
    )
    .await
    .expect("the call ends within its binding's timeout");
    assert_succeeded(&result);
    let text = result.content()[0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("# Research Report: durable calls"),
        "{result:?}"
    );
    assert!(result.task_id().is_some(), "{result:?}");
    relay.assert_one_poll_cut_and_polled_again();
    assert_eq!(
        event_statuses(&events).last().map(String::as_str),
        Some("completed"),
        "{events:?}"
    );
}
