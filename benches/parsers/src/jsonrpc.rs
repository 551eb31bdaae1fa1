//! JSON-RPC contenders. Each returns a check value that proves it decoded what it was meant to:
//! the progress value, the number of tools, or the length of the decoded text or image data.

use std::hint::black_box;

use mcpwire::jsonrpc::{Message, decode_message};
use mcpwire::mcp::{
    CallToolRequest, CallToolResult, ContentBlock, ListToolsRequest, NotificationMethod,
    ProgressNotification, RequestMethod,
};
use serde_json::value::RawValue;

/// Which message a row decodes (selects the typed params/result and the check value).
#[derive(Clone, Copy)]
pub enum Kind {
    Progress,
    ToolsList,
    TextResult,
    ImageResult,
}

/// The params of a notification or the result of a successful response.
fn payload<'a>(msg: &'a Message<'_>) -> &'a RawValue {
    match msg {
        Message::Notification(n) => n.params.as_deref().expect("params"),
        Message::Response(r) => r.outcome.as_deref().expect("a result, not an error"),
        Message::Request(_) => panic!("unexpected request"),
    }
}

fn content_len(result: &CallToolResult) -> u64 {
    match result.content.first().expect("one content block") {
        ContentBlock::Text(t) => t.text.len() as u64,
        ContentBlock::Image(i) => i.data.len() as u64,
        _ => panic!("unexpected content block"),
    }
}

/// mcpwire typed: the envelope and the MCP params/result in one pass
/// (`NotificationMethod::decode_notification`, `RequestMethod::decode_response`, which use
/// `jsonrpc::decode_notification_as` / `decode_response_as`).
pub fn typed(kind: Kind, input: &[u8]) -> u64 {
    let input = black_box(input);
    match kind {
        Kind::Progress => {
            let p = ProgressNotification::decode_notification(input).expect("progress params");
            black_box(&p);
            p.progress as u64
        }
        Kind::ToolsList => {
            let r = ListToolsRequest::decode_response(input).expect("tools/list response");
            let r = r.outcome.expect("a result, not an error");
            black_box(&r);
            r.tools.len() as u64
        }
        Kind::TextResult | Kind::ImageResult => {
            let r = CallToolRequest::decode_response(input).expect("tools/call response");
            let r = r.outcome.expect("a result, not an error");
            black_box(&r);
            content_len(&r)
        }
    }
}

/// What mcpwire's client runs on a reply now: the exchange's `decode_reply` with the decoder
/// the client gives each request (`decode_result_as::<T>`), the outcome downcast as the
/// client does it (through `mcpwire::internal`, as the exchange is internal).
pub fn client_path(kind: Kind, input: &[u8]) -> u64 {
    use mcpwire::internal::{ClientDecoded, decode_reply_as_client};
    let decoded = decode_reply_as_client(black_box(input), matches!(kind, Kind::ToolsList))
        .expect("mcpwire: decode_reply");
    black_box(&decoded);
    match (kind, decoded) {
        (Kind::Progress, ClientDecoded::Progress(p)) => p.progress as u64,
        (Kind::ToolsList, ClientDecoded::Tools(list)) => list.tools.len() as u64,
        (Kind::TextResult | Kind::ImageResult, ClientDecoded::Call(result)) => {
            content_len(&result)
        }
        (_, other) => panic!("unexpected output {other:?}"),
    }
}

/// What mcpwire's client did before its decode path went typed (and what it still does for a
/// reply it cannot decode in one pass): the raw decoder (`jsonrpc::decode`), the message made
/// owned, then the params or result parsed again with serde_json.
pub fn raw_then_parse(kind: Kind, input: &[u8]) -> u64 {
    let packet = mcpwire::jsonrpc::decode(black_box(input)).expect("mcpwire: decode");
    let message = packet
        .into_messages()
        .pop()
        .expect("one message")
        .into_owned();
    let raw = payload(&message);
    match kind {
        Kind::Progress => {
            let p: mcpwire::mcp::ProgressNotificationParams =
                serde_json::from_str(raw.get()).expect("progress params");
            black_box(&p);
            p.progress as u64
        }
        Kind::ToolsList => {
            let r: mcpwire::mcp::ListToolsResult =
                serde_json::from_str(raw.get()).expect("tools/list result");
            black_box(&r);
            r.tools.len() as u64
        }
        Kind::TextResult | Kind::ImageResult => {
            let r: CallToolResult = serde_json::from_str(raw.get()).expect("tools/call result");
            black_box(&r);
            content_len(&r)
        }
    }
}

/// mcpwire envelope only: `decode_message`; params/result stay raw. Check value: raw length.
pub fn envelope(input: &[u8]) -> u64 {
    let msg = decode_message(black_box(input)).expect("mcpwire: decode_message");
    let len = payload(&msg).get().len() as u64;
    black_box(&msg);
    len
}

/// `serde_json::from_slice::<serde_json::Value>` of the same bytes.
pub fn value(kind: Kind, input: &[u8]) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(black_box(input)).expect("serde_json::Value");
    let check = match kind {
        Kind::Progress => v["params"]["progress"].as_f64().expect("progress") as u64,
        Kind::ToolsList => v["result"]["tools"].as_array().expect("tools").len() as u64,
        Kind::TextResult => v["result"]["content"][0]["text"]
            .as_str()
            .expect("text")
            .len() as u64,
        Kind::ImageResult => v["result"]["content"][0]["data"]
            .as_str()
            .expect("data")
            .len() as u64,
    };
    black_box(&v);
    check
}
