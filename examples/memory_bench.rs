//! Memory benchmark (issue 6): the peak RSS of the real `mcpwire call` while a hostile server
//! floods it.
//!
//! ```sh
//! cargo build --release --bin mcpwire --example memory_bench
//! target/release/examples/memory_bench            # or: memory_bench PATH/TO/mcpwire
//! ```
//!
//! The server is the integration tests' fault server (`tests/support/fault_server.rs`, included
//! here by path), run on a tokio runtime in this process; `mcpwire call` runs as a child under
//! `/usr/bin/time -f %M`, which reports the child's peak resident set (`ru_maxrss`), so only
//! the client is measured. The server writes a flood only as fast as the client reads it; its
//! byte count shows how much the client took in before it stopped. Workloads:
//!
//! - baseline: a call answered with a short text result;
//! - 100 MB of result text in one SSE event, against the default `max_output_bytes` (1 MiB);
//! - a 200 MB SSE line with no line end, against the default `max_output_bytes`;
//! - the same 200 MB line against `max_output_bytes` 512 MiB, so that the event-stream line
//!   limit (16 MiB) is what stops it.
//!
//! Target (issue 6): under 32 MiB for the floods. Not asserted anywhere by timing.

// A benchmark reads the clock; the ban in clippy.toml is for the sans-IO layers.
#![allow(clippy::disallowed_methods)]

#[path = "../tests/support/fault_server.rs"]
mod fault_server;
#[path = "../tests/support/mcp_script.rs"]
mod mcp_script;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fault_server::{Recorded, Reply};
use mcp_script::{mcp_server, rpc_result, sse_event, sse_flood};
use serde_json::json;

const MIB: u64 = 1024 * 1024;

/// One workload: what the server answers to `tools/call`, and the binding's output limit.
struct Workload {
    name: &'static str,
    max_output_bytes: u64,
    reply: fn(&Recorded) -> Reply,
}

fn result_flood(req: &Recorded) -> Reply {
    let head = format!(
        r#"event: message
data: {{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":""#,
        req.jsonrpc_id().unwrap_or_default()
    );
    sse_flood(&head, 100_000_000)
}

fn line_flood(_: &Recorded) -> Reply {
    sse_flood("event: message\ndata: ", 200_000_000)
}

fn small_result(req: &Recorded) -> Reply {
    let result = rpc_result(req, json!({"content": [{"type": "text", "text": "ok"}]}));
    Reply::sse(200, &[&sse_event(&result)])
}

fn mcpwire_path() -> PathBuf {
    if let Some(path) = std::env::args_os().nth(1) {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("current exe");
    exe.parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("mcpwire"))
        .expect("target directory")
}

/// What one run of `mcpwire call` did.
struct Measured {
    peak_rss_kib: u64,
    seconds: f64,
    exit: Option<i32>,
    result: serde_json::Value,
    server_wrote: u64,
}

fn measure(mcpwire: &PathBuf, runtime: &tokio::runtime::Runtime, workload: &Workload) -> Measured {
    let reply = workload.reply;
    let server = runtime.block_on(mcp_server(reply));
    let binding = json!([{
        "name": "t", "description": "a flood", "mcp_tool": "t",
        "input_schema": {"type": "object"}, "url": server.url("/mcp"), "tenants": ["bench"],
        "timeout_seconds": 60, "max_output_bytes": workload.max_output_bytes,
    }]);
    let file = std::env::temp_dir().join(format!("memory_bench-{}.json", std::process::id()));
    std::fs::write(&file, binding.to_string()).expect("bindings file");
    let started = Instant::now();
    let output = Command::new("/usr/bin/time")
        .args(["-f", "peak_rss_kib=%M"])
        .arg(mcpwire)
        .args(["call", "--bindings"])
        .arg(&file)
        .args(["--tool", "t", "--tenant", "bench", "--args", "{}"])
        .stdin(Stdio::null())
        .output()
        .expect("run /usr/bin/time mcpwire call");
    let seconds = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let peak_rss_kib = stderr
        .lines()
        .find_map(|line| line.strip_prefix("peak_rss_kib="))
        .and_then(|kib| kib.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in /usr/bin/time's output: {stderr}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_default();
    // Every connection closed: the count is final.
    drop(runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(10),
            server.wait_idle(Duration::from_secs(10)),
        )
        .await
    }));
    Measured {
        peak_rss_kib,
        seconds,
        exit: output.status.code(),
        result,
        server_wrote: server.bytes_written(),
    }
}

fn main() {
    let mcpwire = mcpwire_path();
    assert!(
        mcpwire.exists(),
        "no mcpwire binary at {}",
        mcpwire.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let workloads = [
        Workload {
            name: "baseline: a short result",
            max_output_bytes: MIB,
            reply: small_result,
        },
        Workload {
            name: "100 MB result, max_output_bytes 1 MiB",
            max_output_bytes: MIB,
            reply: result_flood,
        },
        Workload {
            name: "200 MB SSE line, max_output_bytes 1 MiB",
            max_output_bytes: MIB,
            reply: line_flood,
        },
        Workload {
            name: "200 MB SSE line, max_output_bytes 512 MiB",
            max_output_bytes: 512 * MIB,
            reply: line_flood,
        },
    ];
    println!(
        "mcpwire call peak RSS ({}), server in this process",
        mcpwire.display()
    );
    println!();
    println!(
        "{:<44} {:>13} {:>9} {:>6} {:>17}  outcome",
        "workload", "peak RSS MiB", "seconds", "exit", "server wrote MB"
    );
    for workload in &workloads {
        let m = measure(&mcpwire, &runtime, workload);
        let outcome = match m.result["error"]["kind"].as_str() {
            Some(kind) => format!("{kind}, unknown_outcome {}", m.result["unknown_outcome"]),
            None if m.result["is_error"] == false => "success".to_owned(),
            None => format!("no result line: {}", m.result),
        };
        println!(
            "{:<44} {:>13.1} {:>9.2} {:>6} {:>17.1}  {outcome}",
            workload.name,
            m.peak_rss_kib as f64 / 1024.0,
            m.seconds,
            m.exit.map_or("-".to_owned(), |c| c.to_string()),
            m.server_wrote as f64 / 1e6,
        );
    }
}
