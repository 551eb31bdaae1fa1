//! Scripted MCP servers on the fault server: the handshake, notifications and DELETE answered
//! the usual way, everything else left to the test.

use std::time::Duration;

use serde_json::{Value, json};

use super::fault_server::{FaultServer, Recorded, Reply, Step};

/// A JSON-RPC success response to `req`.
pub fn rpc_result(req: &Recorded, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(), "result": result})
}

/// One SSE `message` event carrying `message`.
pub fn sse_event(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

/// An initialize answer for `version` with the tools capability and session id `sess-1`.
pub fn initialize_reply(req: &Recorded, version: &str) -> Reply {
    Reply::json(
        200,
        rpc_result(
            req,
            json!({"protocolVersion": version, "capabilities": {"tools": {}},
                   "serverInfo": {"name": "fault", "version": "1"}}),
        ),
    )
    .with_header("mcp-session-id", "sess-1")
}

/// The answer a 2025-era server gives the 2026-07-28 era probe: what the TypeScript SDK 1.x
/// (server-everything) sends to a request before `initialize`, HTTP 400 with a JSON-RPC
/// error and no id.
pub fn legacy_probe_reply() -> Reply {
    Reply::json(
        400,
        json!({"jsonrpc": "2.0", "error": {"code": -32000,
               "message": "Bad Request: Server not initialized"}, "id": null}),
    )
}

/// A server that completes the handshake (2025-11-25) after answering the era probe as a
/// 2025-era server does, acknowledges notifications, responses and DELETE, and hands
/// `tools/call` (and anything else) to `call`.
pub async fn mcp_server(call: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> FaultServer {
    FaultServer::start(mcp_handler(call)).await
}

/// The handler [`mcp_server`] runs, for starting the server some other way.
pub fn mcp_handler(
    call: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    move |req| match req.method.as_str() {
        "DELETE" => Reply::empty(200),
        "POST" => match req.jsonrpc_method().as_deref() {
            Some("server/discover") => legacy_probe_reply(),
            Some("initialize") => initialize_reply(req, "2025-11-25"),
            Some(m) if m.starts_with("notifications/") => Reply::empty(202),
            None => Reply::empty(202), // a response to a server request
            _ => call(req),
        },
        _ => call(req),
    }
}

/// A `text/event-stream` reply that opens an event with `prefix` (e.g. `"event: message\ndata: "`)
/// and then floods: `flood` bytes of `x`, written as fast as the client reads them, after which
/// the stream stays open.
pub fn sse_flood(prefix: &str, flood: u64) -> Reply {
    Reply::sse_steps(
        200,
        vec![
            Step::text(prefix),
            Step::Repeat {
                bytes: vec![b'x'; 64 * 1024],
                every: Duration::ZERO,
                max_bytes: flood,
            },
            Step::Hang,
        ],
    )
}
