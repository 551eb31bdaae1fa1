//! Talk to a Streamable HTTP MCP server with the async client: connect, list the tools, call
//! one with live progress and a deadline, then see what a deadline that is too short does.
//!
//! ```sh
//! cargo run --example http_call                        # starts the embedded demo server
//! cargo run --example http_call -- http://127.0.0.1:3001/mcp [TOOL [ARGUMENTS_JSON]]
//! ```
//!
//! The tool defaults to the demo server's `progress_report` with `{"steps": 3, "delay_ms":
//! 100}`, which reports "step i of 3" three times and returns "done after 3 steps". Exits 0
//! when the call succeeds (and, on a server with `progress_report`, the short deadline
//! expires as it should), 1 otherwise.

// The example times its calls; the ban on reading the clock is for the library's sans-IO layers.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use mcpwire::ErrorKind;
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::demo::DemoServer;
use mcpwire::mcp::{CallToolResult, ContentBlock};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::{Value, json};

type Failure = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A server from the command line, or the demo server in this process (kept alive by
    // `_demo` until the end of `main`).
    let (url, _demo) = match args.first() {
        Some(url) => (url.clone(), None),
        None => {
            let demo = DemoServer::start().await?;
            println!("started the demo server at {}", demo.url());
            (demo.url(), Some(demo))
        }
    };
    let tool = args.get(1).map_or("progress_report", String::as_str);
    let arguments: Value = match args.get(2) {
        Some(text) => serde_json::from_str(text)?,
        None => json!({"steps": 3, "delay_ms": 100}),
    };

    // One pool of keep-alive connections (and TLS settings) for every session a program
    // opens; one `Client` per MCP session. `connect_http` probes with `server/discover`
    // (protocol 2026-07-28, which the demo server speaks: no session then) and falls back to
    // `initialize` and `notifications/initialized` for a 2025-era server. A bearer token or extra headers would go on the config:
    // `config.bearer_token = Some(Secret::new(..))`, `config.headers.insert(..)`.
    let pool = HttpPool::new(&TlsOptions::default())?;
    let config = HttpConfig::new(&url)?;
    let client = Client::connect_http(&pool, config, ClientOptions::default()).await?;
    println!(
        "connected to {} (protocol {})",
        client
            .server()
            .map_or("an unnamed server", |s| s.server_info.name.as_str()),
        client.protocol_version().as_str()
    );

    // Every page of `tools/list`.
    let tools = client.list_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {}", names.join(", "));

    // The call: progress arrives on the callback as the server reports it, and the call
    // fails with `ErrorKind::Timeout` if it takes longer than `timeout`.
    println!("calling {tool} {arguments}");
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(30);
    options.on_progress = Some(Box::new(|p| {
        let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
        let message = p.message.as_deref().unwrap_or("");
        println!("  progress {}{total} {message}", p.progress);
    }));
    let result = client
        .call_tool(tool, arguments.as_object().cloned(), options)
        .await?;
    println!("result: {}", describe(&result));
    if result.is_error() {
        return Err(format!("the tool {tool} reported an error").into());
    }

    // A deadline shorter than the work: five steps of 200 ms against 300 ms. The request is
    // cancelled on the wire (`notifications/cancelled` at 2025, closing its stream at
    // 2026-07-28) and the client stays usable. The
    // tool was called, so whether it did anything is unknown: `outcome_unknown()` says so.
    if names.contains(&"progress_report") {
        let started = Instant::now();
        let mut options = CallOptions::default();
        options.timeout = Duration::from_millis(300);
        let slow = json!({"steps": 5, "delay_ms": 200});
        match client
            .call_tool("progress_report", slow.as_object().cloned(), options)
            .await
        {
            Err(error) if error.kind() == ErrorKind::Timeout => println!(
                "a 300 ms deadline: timed out after {} ms ({error}); outcome unknown: {}",
                started.elapsed().as_millis(),
                error.outcome_unknown()
            ),
            Err(error) => return Err(format!("expected a timeout, got: {error}").into()),
            Ok(result) => {
                return Err(format!("expected a timeout, got: {}", describe(&result)).into());
            }
        }
        // Any request will do (not `ping`: 2026-07-28 has none).
        client.list_tools().await?;
        println!("the client is still usable (tools/list answered)");
    }

    // Ends the session (`DELETE` of a 2025 Streamable HTTP session; nothing to end at 2026-07-28).
    client.close().await;
    Ok(())
}

/// The result's content as one line: text as it is, other blocks by their type.
fn describe(result: &CallToolResult) -> String {
    let blocks: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            other => format!("[{} block]", other.type_name()),
        })
        .collect();
    blocks.join(" | ")
}
