//! The call pipeline with tasks: one test per row of the README's table of task outcomes
//! ("Tasks and `unknown_outcome`"). A scripted 2025-11-25 server (the fault server) offers
//! task-augmented calls and runs the binding's tool as a task; the `tools/call` goes once in
//! every test: polling is not re-sending.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::binding::call::{CallEvent, Caller, ToolResult};
use mcpwire::client::CancelToken;
use serde_json::{Value, json};

use crate::binding_call::{assert_failed, assert_succeeded, binding, caller, context};
use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::{legacy_probe_reply, rpc_result};

/// What the scripted task's `tasks/get` answers on poll `n` (from 1): a task, or `None` for a
/// connection cut before any answer; and what `tasks/result` answers.
struct Script {
    get: Box<dyn Fn(usize) -> Option<Value> + Send + Sync>,
    result: Box<dyn Fn(&Recorded) -> Reply + Send + Sync>,
}

fn task(status: &str) -> Value {
    json!({"taskId": "task-7", "status": status, "createdAt": "2026-12-03T08:00:00Z",
           "lastUpdatedAt": "2026-12-03T08:00:00Z", "ttl": 60000, "pollInterval": 100})
}

/// A 2025-11-25 server offering task-augmented calls, running `tools/call` as task `task-7`.
async fn task_server(script: Script) -> FaultServer {
    let polls = AtomicUsize::new(0);
    FaultServer::start(
        move |req| match (req.method.as_str(), req.jsonrpc_method().as_deref()) {
            ("DELETE", _) => Reply::empty(200),
            (_, Some("server/discover")) => legacy_probe_reply(),
            (_, Some("initialize")) => Reply::json(
                200,
                rpc_result(
                    req,
                    json!({"protocolVersion": "2025-11-25",
                       "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                                        "requests": {"tools": {"call": {}}}}},
                       "serverInfo": {"name": "fault-tasks", "version": "1"}}),
                ),
            )
            .with_header("mcp-session-id", "sess-1"),
            (_, Some(m)) if m.starts_with("notifications/") => Reply::empty(202),
            (_, Some("tools/call")) => {
                Reply::json(200, rpc_result(req, json!({"task": task("working")})))
            }
            (_, Some("tasks/get")) => {
                let n = polls.fetch_add(1, Ordering::SeqCst) + 1;
                match (script.get)(n) {
                    Some(task) => Reply::json(200, rpc_result(req, task)),
                    None => Reply::verbatim(vec![Step::Drop]),
                }
            }
            (_, Some("tasks/result")) => (script.result)(req),
            (_, Some("tasks/cancel")) => Reply::json(200, rpc_result(req, task("cancelled"))),
            _ => Reply::empty(400),
        },
    )
    .await
}

fn text(req: &Recorded, text: &str, is_error: bool) -> Reply {
    Reply::json(
        200,
        rpc_result(
            req,
            json!({"content": [{"type": "text", "text": text}], "isError": is_error}),
        ),
    )
}

/// The binding `t` of `server`, a tool that requires tasks, with `timeout_seconds`.
fn task_caller(server: &FaultServer, timeout_seconds: u64) -> Caller {
    caller(vec![binding(
        &server.url("/mcp"),
        json!({"task_support": "required", "timeout_seconds": timeout_seconds}),
    )])
}

/// Calls `t` collecting every event's JSON line.
async fn call_events(
    caller: &Caller,
    cancel: Option<CancelToken>,
    on_task: impl Fn() + Send + 'static,
) -> (ToolResult, Vec<Value>) {
    call_tool_events(caller, "t", &json!({"q": "x"}), cancel, on_task).await
}

/// Calls binding `tool` with `arguments` collecting every event's JSON line; `on_task` is told
/// of each task event.
pub(crate) async fn call_tool_events(
    caller: &Caller,
    tool: &str,
    arguments: &Value,
    cancel: Option<CancelToken>,
    on_task: impl Fn() + Send + 'static,
) -> (ToolResult, Vec<Value>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let result = caller
        .call_events(
            tool,
            &context("call-1"),
            arguments,
            move |event| {
                if matches!(event, CallEvent::Task(_)) {
                    on_task();
                }
                if let Ok(line) = serde_json::from_str(&event.to_json_line())
                    && let Ok(mut events) = seen.lock()
                {
                    events.push(line);
                }
            },
            cancel,
        )
        .await;
    let events = events.lock().map(|e| e.clone()).unwrap_or_default();
    (result, events)
}

fn count(server: &FaultServer, method: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some(method))
        .count()
}

#[track_caller]
fn assert_ran_as_task(result: &ToolResult, server: &FaultServer) {
    assert_eq!(result.task_id(), Some("task-7"), "{result:?}");
    let line: Value = serde_json::from_str(&result.to_json_line()).expect("JSON");
    assert_eq!(line["task_id"], json!("task-7"));
    assert_eq!(count(server, "tools/call"), 1, "polling is not re-sending");
    let calls: Vec<Recorded> = server
        .requests()
        .into_iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some("tools/call"))
        .collect();
    let params = calls[0]
        .json()
        .map(|j| j["params"].clone())
        .unwrap_or_default();
    // The task lives as long as the binding waits for it (what is left of its timeout).
    let ttl = params["task"]["ttl"].as_u64().unwrap_or(0);
    assert!(ttl > 0 && ttl <= 20_000, "{params}");
}

fn completed_after(polls: usize) -> Script {
    Script {
        get: Box::new(move |n| Some(task(if n < polls { "working" } else { "completed" }))),
        result: Box::new(|req| text(req, "the report", false)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_returns_the_tasks_result_with_its_id_and_status_events() {
    let server = task_server(completed_after(2)).await;
    let (result, events) = call_events(&task_caller(&server, 20), None, || {}).await;
    assert_succeeded(&result);
    assert_eq!(result.content()[0]["text"], json!("the report"));
    assert_ran_as_task(&result, &server);
    let statuses: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == json!("tool.task"))
        .map(|e| &e["status"])
        .collect();
    assert_eq!(
        statuses,
        [&json!("working"), &json!("completed")],
        "{events:?}"
    );
    assert!(events.iter().all(|e| e["task_id"] == json!("task-7")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_whose_connection_is_cut_is_polled_again_and_the_call_gets_its_result() {
    let server = task_server(Script {
        get: Box::new(|n| match n {
            // The connection drops under the first two polls, before any answer.
            1 | 2 => None,
            3 => Some(task("working")),
            _ => Some(task("completed")),
        }),
        result: Box::new(|req| text(req, "the report", false)),
    })
    .await;
    let (result, _) = call_events(&task_caller(&server, 20), None, || {}).await;
    assert_succeeded(&result);
    assert_ran_as_task(&result, &server);
    assert_eq!(count(&server, "tasks/get"), 4);
    assert!(
        server.connections_accepted() >= 2,
        "a new connection after the cut"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_reporting_is_error_is_a_known_tool_error() {
    let server = task_server(Script {
        get: Box::new(|_| Some(task("failed"))),
        result: Box::new(|req| text(req, "no sources found", true)),
    })
    .await;
    let (result, _) = call_events(&task_caller(&server, 20), None, || {}).await;
    assert_failed(&result, "tool_error", false);
    assert_ran_as_task(&result, &server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_failed_with_a_json_rpc_error_is_a_known_outcome() {
    let server = task_server(Script {
        get: Box::new(|_| Some(task("failed"))),
        result: Box::new(|req| {
            Reply::json(
                200,
                json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(),
                       "error": {"code": -32603, "message": "the research backend is down"}}),
            )
        }),
    })
    .await;
    let (result, _) = call_events(&task_caller(&server, 20), None, || {}).await;
    assert_failed(&result, "server_error", false);
    assert_ran_as_task(&result, &server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_still_working_at_the_binding_deadline_is_cancelled_and_unknown() {
    let server = task_server(Script {
        get: Box::new(|_| Some(task("working"))),
        result: Box::new(|req| text(req, "never asked", false)),
    })
    .await;
    let started = std::time::Instant::now();
    let (result, _) = call_events(&task_caller(&server, 1), None, || {}).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_failed(&result, "timeout", true);
    assert_ran_as_task(&result, &server);
    assert_eq!(
        count(&server, "tasks/cancel"),
        1,
        "the deadline sends tasks/cancel"
    );
    let cancel = server
        .requests()
        .into_iter()
        .find(|r| r.jsonrpc_method().as_deref() == Some("tasks/cancel"))
        .and_then(|r| r.json());
    assert_eq!(
        cancel.map(|c| c["params"]["taskId"].clone()),
        Some(json!("task-7"))
    );
    assert!(
        count(&server, "tasks/get") >= 5,
        "polled every 100 ms for a second"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_task_call_sends_tasks_cancel_and_is_unknown() {
    let server = task_server(Script {
        get: Box::new(|_| Some(task("working"))),
        result: Box::new(|req| text(req, "never asked", false)),
    })
    .await;
    let cancel = CancelToken::default();
    let trigger = cancel.clone();
    let (result, _) = call_events(&task_caller(&server, 20), Some(cancel), move || {
        trigger.cancel()
    })
    .await;
    assert_failed(&result, "cancelled", true);
    assert_ran_as_task(&result, &server);
    assert_eq!(
        count(&server, "tasks/cancel"),
        1,
        "the interrupt sends tasks/cancel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_the_server_cancelled_or_one_that_breaks_the_rules_is_unknown() {
    let cases: [(Value, &str); 3] = [
        (task("cancelled"), "cancelled"),
        (
            json!({"taskId": "someone-else", "status": "working"}),
            "protocol",
        ),
        (json!({"taskId": "task-7", "status": "done"}), "protocol"),
    ];
    for (answer, kind) in cases {
        let server = task_server(Script {
            get: Box::new(move |_| Some(answer.clone())),
            result: Box::new(|req| text(req, "never asked", false)),
        })
        .await;
        let (result, _) = call_events(&task_caller(&server, 20), None, || {}).await;
        assert_failed(&result, kind, true);
        assert_ran_as_task(&result, &server);
        assert_eq!(count(&server, "tasks/result"), 0);
    }
}
