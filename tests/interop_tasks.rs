//! Interop of tasks: calls that the real servers run as tasks, polled to their result.
//! server-everything 2026.8.31's `simulate-research-query` requires task execution
//! (`execution.taskSupport: "required"`) at 2025-11-25 over Streamable HTTP.

use std::sync::{Arc, Mutex};

use mcpwire::client::{CallOptions, ClientOptions};
use mcpwire::mcp::{TaskStatus, TaskSupport, TaskUpdate};
use serde_json::json;

use crate::interop::{args, only_text, options, pool};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_runs_simulate_research_query_as_a_task_polled_to_its_report() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    let pool = pool();
    let config = mcpwire::HttpConfig::new(&server.url).expect("config");
    let client = mcpwire::Client::connect_http(&pool, config, task_options())
        .await
        .expect("connect");
    let tools = client.list_tools().await.expect("tools/list");
    let tool = tools
        .iter()
        .find(|t| t.name == "simulate-research-query")
        .expect("server-everything lists simulate-research-query");
    assert!(tool.requires_task(), "{tool:?}");
    let statuses = Statuses::default();
    let mut call = CallOptions::new();
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
