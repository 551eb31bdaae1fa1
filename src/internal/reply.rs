//! The client's reply decoding, for the parser benchmarks (`benches/parsers`): they measure
//! the path the client runs beside the bare parsers, and the exchange that owns it is internal.

use crate::exchange::Output;
use crate::exchange::reply::{decode_reply, decode_result_as};
use crate::mcp::{CallToolResult, ListToolsResult, ProgressNotificationParams};

/// What [`decode_reply_as_client`] read.
#[derive(Debug)]
pub enum ClientDecoded {
    /// A progress notification.
    Progress(ProgressNotificationParams),
    /// A `tools/list` result.
    Tools(Box<ListToolsResult>),
    /// A `tools/call` result.
    Call(Box<CallToolResult>),
}

/// Decodes one reply body as the client does: the exchange's one-pass `decode_reply` with the
/// decoder the client gives the request (`ListToolsResult` when `list`, else
/// `CallToolResult`), the outcome downcast. `None` for anything else.
pub fn decode_reply_as_client(input: &[u8], list: bool) -> Option<ClientDecoded> {
    let decoder = match list {
        true => decode_result_as::<ListToolsResult>,
        false => decode_result_as::<CallToolResult>,
    };
    let mut out = Vec::with_capacity(1);
    decode_reply(input, Some(decoder), &mut out).ok()?;
    match out.pop()? {
        Output::Progress(params) => Some(ClientDecoded::Progress(params)),
        Output::Decoded { result, .. } if list => result.downcast().ok().map(ClientDecoded::Tools),
        Output::Decoded { result, .. } => result.downcast().ok().map(ClientDecoded::Call),
        _ => None,
    }
}
