//! The demo server's tools over stdio (MCP `basic/transports.mdx`, "stdio"): newline-delimited
//! JSON-RPC on a reader and a writer; see [`serve_stdio`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use super::tools::{self, StateKey};
use super::{
    Era, Output, call_outputs, cancelled_request, initialize_result, invalid_params, modern,
    negotiate, ok, params_object, tools_list,
};
use crate::jsonrpc::{self, ErrorObject, Id, Message, Packet};
use crate::util::lock;

/// The longest line read, in bytes (as the HTTP server's largest body).
pub(super) const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Lines waiting to be written; a client that does not read slows the calls down.
const OUTPUT_QUEUE: usize = 256;

/// Calls in flight, by request id: a key telling calls that reuse an id apart, and the sender
/// whose firing (or dropping) stops the call.
type InFlight = Arc<Mutex<HashMap<Id, (u64, oneshot::Sender<()>)>>>;

/// Serves the demo tools as a dual-era stdio MCP server: newline-delimited JSON-RPC messages
/// read from `input` (the server's stdin) and written to `output` (its stdout), until `input`
/// ends. Must be called within a tokio runtime. `era` picks the eras: [`Era::Both`] as
/// described next; with [`Era::Legacy`] the envelope means nothing (so `server/discover` is an
/// unknown method, -32601, as from a 2025-era server); with [`Era::Modern`] every request
/// without the envelope gets -32022.
///
/// The same tools, results and progress as over HTTP ([`crate::demo`]), without sessions:
/// the process is the session. A request whose `_meta` names a protocol version is served at
/// 2026-07-28 (`server/discover`, `tools/list`, `tools/call` with `input_required`; the
/// envelope checked, -32022 for another revision, -32601 for `ping` and the rest), as over
/// HTTP but without the header checks. Anything else is served by the 2025 rules:
/// `initialize` negotiates the revision as over HTTP; `ping`, `tools/list` (pages of two) and
/// `tools/call` are answered. Calls run concurrently, each sending its progress notifications
/// (when it has a progress token) and then its result; `notifications/cancelled` stops a call
/// in flight, which then sends nothing more. Unknown methods get -32601, a line that is not
/// JSON -32700, a batch -32600. Responses and other notifications are ignored. When `input`
/// ends, calls still running are dropped and what was queued is written.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use mcpwire::demo::Era;
/// // A stdio MCP server: what `mcpwire demo-server --stdio` runs.
/// mcpwire::demo::serve_stdio(tokio::io::stdin(), tokio::io::stdout(), Era::Both).await
/// # }
/// ```
///
/// # Errors
///
/// Reading the input failed, a line was longer than 1 MiB, or the output could not be
/// written.
pub async fn serve_stdio<R, W>(input: R, output: W, era: Era) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let server = Server {
        era,
        state_key: StateKey::new(),
        started: super::now(),
    };
    let (lines, queue) = mpsc::channel::<String>(OUTPUT_QUEUE);
    let writer = tokio::spawn(write_lines(output, queue));
    let in_flight: InFlight = Arc::default();
    let mut calls = JoinSet::new();
    let mut next_key = 0u64;
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    let outcome = loop {
        while calls.try_join_next().is_some() {}
        line.clear();
        match read_line(&mut input, &mut line).await {
            Ok(0) => break Ok(()),
            Ok(_) => {}
            Err(error) => break Err(error),
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let answer = match jsonrpc::decode(text) {
            Ok(Packet::Single(Message::Request(request))) => {
                next_key += 1;
                let call = Call {
                    key: next_key,
                    lines: &lines,
                    in_flight: &in_flight,
                    calls: &mut calls,
                };
                handle_request(request, call, &server)
            }
            Ok(Packet::Single(Message::Notification(notification))) => {
                if let Some(id) = cancelled_request(&notification)
                    && let Some((_, cancel)) = lock(&in_flight).remove(&id)
                {
                    let _ = cancel.send(());
                }
                None
            }
            // This server sends no requests, so a response answers nothing.
            Ok(Packet::Single(Message::Response(_))) => None,
            Ok(Packet::Batch(_)) => Some(Message::response_error(
                None,
                ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    "Invalid Request: JSON-RPC batches are not accepted over stdio",
                ),
            )),
            Err(e) => Some(Message::response_error(
                None,
                ErrorObject::new(e.code(), format!("Invalid message: {e}")),
            )),
        };
        if let Some(answer) = answer
            && lines.send(answer.encode()).await.is_err()
        {
            break Err(std::io::ErrorKind::BrokenPipe.into());
        }
    };
    // The input is over: calls still running are dropped, what was queued is written.
    calls.shutdown().await;
    drop(lines);
    let written = writer
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::BrokenPipe.into()));
    outcome.and(written)
}

/// What a `tools/call` needs to run: its key, where its lines go, the calls in flight.
struct Call<'a> {
    key: u64,
    lines: &'a mpsc::Sender<String>,
    in_flight: &'a InFlight,
    calls: &'a mut JoinSet<()>,
}

impl Call<'_> {
    /// Starts a call's outputs; answers at once only when its id is already in use.
    fn start(self, id: Id, outputs: VecDeque<Output>) -> Option<Message<'static>> {
        let (cancel, cancelled) = oneshot::channel();
        {
            let mut in_flight = lock(self.in_flight);
            if in_flight.contains_key(&id) {
                let error = ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("Invalid Request: request id {id} is already in use"),
                );
                return Some(Message::response_error(Some(id), error));
            }
            in_flight.insert(id.clone(), (self.key, cancel));
        }
        self.calls.spawn(run_call(
            (id, self.key),
            outputs,
            cancelled,
            self.lines.clone(),
            self.in_flight.clone(),
        ));
        None
    }
}

/// What the whole process shares: the eras it speaks, the key of its `requestState`s, its
/// clock's start.
struct Server {
    era: Era,
    state_key: StateKey,
    started: tokio::time::Instant,
}

impl Server {
    fn now_ms(&self) -> u64 {
        super::now().duration_since(self.started).as_millis() as u64
    }
}

/// Answers a request at once, or starts a call and answers nothing yet.
fn handle_request(
    request: jsonrpc::Request<'_>,
    call: Call<'_>,
    server: &Server,
) -> Option<Message<'static>> {
    let id = request.id.clone();
    if server.era != Era::Legacy && modern::carries_envelope(request.params.as_deref()) {
        let facts = modern::Server {
            state_key: &server.state_key,
            now_ms: server.now_ms(),
            private: false,
        };
        return match modern::answer(&request, None, &facts).reply {
            modern::Reply::Message(message) => Some(message),
            modern::Reply::Call(outputs) => call.start(id, outputs),
        };
    }
    if server.era == Era::Modern {
        let error = modern::unsupported_version(modern::offered_version(&request).as_deref());
        return Some(Message::response_error(Some(id), error));
    }
    let params = match params_object(&request) {
        Ok(params) => params,
        Err(why) => return Some(invalid_params(id, &why)),
    };
    Some(match request.method.as_ref() {
        "initialize" => match negotiate(&request) {
            Ok(version) => ok(id, &initialize_result(version)),
            Err(refusal) => refusal,
        },
        "ping" => ok(id, &json!({})),
        "tools/list" => tools_list(id, &params),
        "tools/call" => {
            let context = tools::Context {
                modern: false,
                region_header: None,
                params: &params,
                state_key: &server.state_key,
                now_ms: server.now_ms(),
            };
            let outputs = match call_outputs(&id, &params, &context) {
                Ok(outputs) => outputs,
                Err((_, refusal)) => return Some(refusal),
            };
            return call.start(id, outputs);
        }
        method => {
            let mut error = ErrorObject::new(jsonrpc::METHOD_NOT_FOUND, "Method not found");
            if let Ok(data) = serde_json::value::to_raw_value(method) {
                error = error.with_data(data);
            }
            Message::response_error(Some(id), error)
        }
    })
}

/// Runs one call's outputs, stopping when it is cancelled; then takes it off the calls in
/// flight (unless a later call with the same id took its place).
async fn run_call(
    (id, key): (Id, u64),
    outputs: VecDeque<Output>,
    mut cancelled: oneshot::Receiver<()>,
    lines: mpsc::Sender<String>,
    in_flight: InFlight,
) {
    for output in outputs {
        // Cancelled (or the sender dropped): nothing more, and no result.
        if !matches!(
            cancelled.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        ) {
            break;
        }
        match output {
            Output::Send(line) => {
                if lines.send(line).await.is_err() {
                    break;
                }
            }
            Output::Sleep(delay) => {
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    _ = &mut cancelled => break,
                }
            }
        }
    }
    let mut in_flight = lock(&in_flight);
    if in_flight.get(&id).is_some_and(|(k, _)| *k == key) {
        in_flight.remove(&id);
    }
}

/// Reads one line (without a limit on how the input is chunked) into `line`; `Ok(0)` at the
/// end of the input. A line longer than [`MAX_LINE_BYTES`] is an error.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(line.len());
        }
        let (taken, done) = match memchr::memchr(b'\n', available) {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        if line.len() + taken > MAX_LINE_BYTES + 1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line is longer than {MAX_LINE_BYTES} bytes"),
            ));
        }
        line.extend_from_slice(&available[..taken]);
        input.consume(taken);
        if done {
            return Ok(line.len());
        }
    }
}

/// Writes each line and a newline, flushing when no more are waiting.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut queue: mpsc::Receiver<String>,
) -> std::io::Result<()> {
    while let Some(line) = queue.recv().await {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        if queue.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await
}

#[cfg(test)]
#[path = "tests_stdio.rs"]
mod tests;
