//! Cancel a tool call in flight with a `CancelToken`: the request is cancelled on the wire
//! (`notifications/cancelled` at 2025; at 2026-07-28, which the demo server speaks, by closing
//! the call's stream), the call ends at once with `ErrorKind::Cancelled`, and the client goes
//! on.
//!
//! ```sh
//! cargo run --example cancel                          # starts the embedded demo server
//! cargo run --example cancel -- http://127.0.0.1:3001/mcp   # a server with `progress_report`
//! ```
//!
//! The call is the demo server's `progress_report`, ten steps of 500 ms; it is cancelled as
//! soon as the first progress report arrives. Exits 0 when the call ends cancelled, long
//! before it would have finished, and the server still answers; 1 otherwise.

// The example times the call; the ban on reading the clock is for the library's sans-IO layers.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use mcpwire::ErrorKind;
use mcpwire::client::{CallOptions, CancelToken, Client, ClientOptions};
use mcpwire::demo::DemoServer;
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::json;

type Failure = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    let (url, _demo) = match std::env::args().nth(1) {
        Some(url) => (url, None),
        None => {
            let demo = DemoServer::start().await?;
            println!("started the demo server at {}", demo.url());
            (demo.url(), Some(demo))
        }
    };
    let pool = HttpPool::new(&TlsOptions::default())?;
    let client =
        Client::connect_http(&pool, HttpConfig::new(&url)?, ClientOptions::default()).await?;

    // A token is cheap to clone; `cancel()` on any clone, from any task or thread (a Ctrl-C
    // handler, a host's "stop" button), ends every call watching it. Here the progress
    // callback pulls it as soon as the server reports the first step.
    let cancel = CancelToken::default();
    let trigger = cancel.clone();
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(30);
    options.cancel = Some(cancel);
    options.on_progress = Some(Box::new(move |p| {
        println!(
            "  progress {} {}; cancelling",
            p.progress,
            p.message.as_deref().unwrap_or("")
        );
        trigger.cancel();
    }));
    let started = Instant::now();
    let arguments = json!({"steps": 10, "delay_ms": 500});
    println!("calling progress_report {arguments} (about 5 s of work)");
    let outcome = client
        .call_tool("progress_report", arguments.as_object().cloned(), options)
        .await;
    let elapsed = started.elapsed();
    match outcome {
        // The request reached the server, so the tool may have done part of its work:
        // `outcome_unknown()` is true, as for a timeout.
        Err(error) if error.kind() == ErrorKind::Cancelled => println!(
            "cancelled after {} ms: {error} (outcome unknown: {})",
            elapsed.as_millis(),
            error.outcome_unknown()
        ),
        Err(error) => return Err(format!("expected a cancelled call, got: {error}").into()),
        Ok(result) => return Err(format!("expected a cancelled call, got {result:?}").into()),
    }
    if elapsed >= Duration::from_secs(4) {
        return Err(format!("the cancel took effect only after {elapsed:?}").into());
    }

    // The session is not hurt: the next request is answered as usual.
    // Any request will do (not `ping`: 2026-07-28 has none).
    client.list_tools().await?;
    println!("the client is still usable (tools/list answered)");
    client.close().await;
    Ok(())
}
