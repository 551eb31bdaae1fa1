//! Talk to an MCP server that runs as a child process over stdio (newline-delimited JSON-RPC
//! on its stdin and stdout; its stderr is logging).
//!
//! ```sh
//! cargo run --example stdio                          # the demo tools, served by this program
//! cargo run --example stdio -- mcpwire demo-server --stdio
//! # the official Python SDK's server (scripts/install-peers makes the venv):
//! cargo run --example stdio -- target/peers/venv-v2/bin/python tests/peers/py_server.py --transport stdio
//! ```
//!
//! With no command, the example runs itself as the server (`stdio --serve`, which serves the
//! demo tools with `mcpwire::demo::serve_stdio`), so it needs nothing installed. It lists the
//! tools and, when the server has them, calls `echo` and `progress_report`. Exits 0 when
//! every call succeeds, 1 otherwise.

use std::time::Duration;

use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::mcp::{CallToolResult, ContentBlock};
use mcpwire::transport::stdio::StdioConfig;
use serde_json::{Value, json};

type Failure = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve") {
        // The child: a stdio MCP server on this process's stdin and stdout, until stdin
        // closes. Nothing else may be written to stdout.
        mcpwire::demo::serve_stdio(
            tokio::io::stdin(),
            tokio::io::stdout(),
            mcpwire::demo::Era::Both,
        )
        .await?;
        return Ok(());
    }
    let mut config = match args.split_first() {
        Some((program, rest)) => StdioConfig::new(program, rest.to_vec()),
        None => StdioConfig::new(std::env::current_exe()?, vec!["--serve".to_owned()]),
    };
    // The child's environment holds only PATH, HOME, LANG and a few more basics, plus what
    // `config.env` names: a host's credentials do not leak into it. Its stderr is logging.
    config.stderr_log = Some(std::sync::Arc::new(|line: &str| {
        eprintln!("server stderr: {line}")
    }));
    println!(
        "starting {} {}",
        config.program.display(),
        config.args.join(" ")
    );

    let client = Client::connect_stdio(config, ClientOptions::default()).await?;
    println!(
        "connected to {} (protocol {})",
        client
            .server()
            .map_or("an unnamed server", |s| s.server_info.name.as_str()),
        client.protocol_version().as_str()
    );
    let tools = client.list_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {}", names.join(", "));

    if names.contains(&"echo") {
        let result = call(&client, "echo", json!({"message": "hello over stdio"})).await?;
        println!("echo: {}", describe(&result));
    }
    if names.contains(&"progress_report") {
        let result = call(
            &client,
            "progress_report",
            json!({"steps": 3, "delay_ms": 50}),
        )
        .await?;
        println!("progress_report: {}", describe(&result));
    }
    if !names.contains(&"echo") && !names.contains(&"progress_report") {
        println!("(no echo or progress_report tool: listed only)");
    }

    // Closes the server's stdin; a server that does not leave is terminated, then killed.
    client.close().await;
    Ok(())
}

/// Calls `tool` with progress printed as it arrives; a tool error is a failure.
async fn call(client: &Client, tool: &str, arguments: Value) -> Result<CallToolResult, Failure> {
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(30);
    options.on_progress = Some(Box::new(|p| {
        println!(
            "  progress {} {}",
            p.progress,
            p.message.as_deref().unwrap_or("")
        );
    }));
    let result = client
        .call_tool(tool, arguments.as_object().cloned(), options)
        .await?;
    if result.is_error() {
        return Err(format!("{tool} reported an error: {}", describe(&result)).into());
    }
    Ok(result)
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
