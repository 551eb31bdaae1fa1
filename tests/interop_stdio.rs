//! Interop over stdio: mcpwire's client spawning real MCP servers written by others
//! (server-everything on Node, `py_server.py` on the official Python SDK 2.x and 1.x,
//! `fixtures/servers/rmcp-server` on rmcp 3).

use std::time::{Duration, Instant};

use mcpwire::client::Client;
use mcpwire::mcp::ProtocolVersion;
use mcpwire::transport::stdio::StdioConfig;
use serde_json::json;

use crate::interop::{
    call, call_with_progress, list_names, only_text, options, py_tools, rmcp_calls, server_name,
};
use crate::support::peers::{self, Peer, Sdk};

/// How long close() waits after closing stdin (and again after SIGTERM).
const GRACE: Duration = Duration::from_secs(3);

async fn spawn(program: std::path::PathBuf, args: Vec<String>) -> Client {
    let mut config = StdioConfig::new(program, args);
    config.shutdown_grace = GRACE;
    Client::connect_stdio(config, options())
        .await
        .unwrap_or_else(|e| panic!("connect over stdio: {} ({e})", e.kind()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_stdio() {
    peers::require(Peer::Everything);
    let (program, args) = peers::everything_stdio_command();
    let client = spawn(program, args).await;
    // server-everything answers the era probe -32601: initialize follows.
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(server_name(&client), "mcp-servers/everything");
    assert_eq!(client.session_id(), None);
    let names = list_names(&client).await;
    for name in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(names.contains(name), "{name} missing from {names:?}");
    }
    let echo = call(&client, "echo", json!({"message": "over stdio"})).await;
    assert_eq!(only_text(&echo), "Echo: over stdio");
    let sum = call(&client, "get-sum", json!({"a": 40, "b": 2})).await;
    assert_eq!(only_text(&sum), "The sum of 40 and 2 is 42.");
    let (result, progress) = call_with_progress(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 0.3, "steps": 3}),
    )
    .await;
    assert!(!result.is_error());
    progress.assert_steps(3, false);
    client.ping().await.expect("ping");
    let started = Instant::now();
    client.close().await;
    assert!(started.elapsed() < GRACE, "{:?}", started.elapsed());
}

async fn python_stdio(sdk: Sdk) {
    let (program, args) = peers::python_stdio_command(sdk);
    let client = spawn(program, args).await;
    // mcp 2.x answers the era probe over stdio: 2026-07-28; mcp 1.x does not know
    // server/discover and gets initialize.
    let expected = match sdk {
        Sdk::V2 => ProtocolVersion::V2026_07_28,
        Sdk::V1 => ProtocolVersion::V2025_11_25,
    };
    assert_eq!(client.protocol_version(), expected);
    assert_eq!(server_name(&client), "mcpwire-py-test-server");
    assert_eq!(list_names(&client).await, py_tools());
    let echo = call(&client, "echo_text", json!({"text": "stdio ✓"})).await;
    assert_eq!(only_text(&echo), "stdio ✓");
    let bad = call(&client, "square", json!({"n": 2.5})).await;
    assert!(bad.is_error(), "{bad:?}");
    let weather = call(&client, "weather", json!({"city": "Kyiv"})).await;
    assert_eq!(weather.structured_content.as_ref().unwrap()["city"], "Kyiv");
    let (result, progress) =
        call_with_progress(&client, "progress", json!({"steps": 4, "delay": 0.01})).await;
    assert_eq!(only_text(&result), "done after 4 steps");
    progress.assert_steps(4, true);
    let logs = call(&client, "log_messages", json!({"count": 2})).await;
    assert_eq!(only_text(&logs), "sent 2 log messages");
    if sdk == Sdk::V1 {
        let sampling = call(&client, "ask_sampling", json!({})).await;
        assert!(
            only_text(&sampling).starts_with("sampling: client answered error -32601"),
            "{sampling:?}"
        );
        client.ping().await.expect("ping");
    } else {
        // 2026-07-28 has no ping: refused without sending.
        let refused = client.ping().await.expect_err("no ping at 2026-07-28");
        assert_eq!(refused.kind(), mcpwire::ErrorKind::Refused, "{refused}");
    }
    let started = Instant::now();
    client.close().await;
    // The server exits at EOF on stdin, before the grace period ends: no SIGTERM needed.
    assert!(started.elapsed() < GRACE, "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_v2_stdio() {
    peers::require(Peer::Python(Sdk::V2));
    python_stdio(Sdk::V2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_v1_stdio() {
    peers::require(Peer::Python(Sdk::V1));
    python_stdio(Sdk::V1).await;
}

/// rmcp 3 answers the era probe over stdio too: 2026-07-28, no initialize.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn rmcp_stdio() {
    peers::require(Peer::Rmcp);
    let client = spawn(peers::rmcp_server(), vec!["--stdio".to_owned()]).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(server_name(&client), "rmcp-example-server");
    rmcp_calls(&client).await;
    let started = Instant::now();
    client.close().await;
    assert!(started.elapsed() < GRACE, "{:?}", started.elapsed());
}
