//! The server of the `list` workload. The demo server lists its seven tools two to a page, so a
//! 100-tool `tools/list` needs a server of its own; this one is the least a Streamable HTTP
//! server can be for it. `initialize` gets a JSON reply with an `Mcp-Session-Id` and the
//! offered protocol version echoed when it is a 2025-era one (else 2025-11-25: this server has
//! only the 2025 rules); notifications and responses get 202; `tools/list` gets one
//! page of [`TOOLS`] tools (the 100 tools of `benches/parsers`' `tools_list` input, generated
//! the same way, 121 KiB), and `ping` an empty result, both in `application/json`; `DELETE` gets
//! 200 and `GET` 405 (no standalone stream). HTTP/1.1 with keep-alive and `Content-Length`
//! bodies only. Nothing is checked beyond what it takes to answer: not `Accept`, not the
//! session id.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How many tools the one `tools/list` page holds (the clients check it).
pub const TOOLS: usize = 100;

/// A running server; dropping it stops accepting (connections end with their clients).
pub struct ListServer {
    addr: SocketAddr,
    requests: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    accept: JoinHandle<()>,
}

impl ListServer {
    pub async fn start() -> io::Result<ListServer> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let tools: &'static str = String::leak(tools_result());
        let (r, c) = (requests.clone(), connections.clone());
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::Relaxed);
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, r.clone(), tools));
            }
        });
        Ok(ListServer {
            addr,
            requests,
            connections,
            accept,
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// HTTP requests and TCP connections since the start.
    pub fn stats(&self) -> (u64, u64) {
        (
            self.requests.load(Ordering::Relaxed),
            self.connections.load(Ordering::Relaxed),
        )
    }
}

impl Drop for ListServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One connection: requests one after another until the client closes it.
async fn serve(mut stream: TcpStream, requests: Arc<AtomicU64>, tools: &'static str) {
    let mut buf = Vec::with_capacity(16 << 10);
    loop {
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if buf.len() > 64 << 10 || !matches!(stream.read_buf(&mut buf).await, Ok(1..)) {
                return;
            }
        };
        let Ok(head) = std::str::from_utf8(&buf[..head_end]) else {
            return;
        };
        let mut lines = head.split("\r\n");
        let method = lines
            .next()
            .and_then(|line| line.split(' ').next())
            .unwrap_or_default()
            .to_owned();
        let mut length = 0;
        let mut close = false;
        for (name, value) in lines.filter_map(|line| line.split_once(':')) {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("connection") {
                close = value.eq_ignore_ascii_case("close");
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                return; // not for this server: both clients send Content-Length
            }
        }
        while buf.len() < head_end + length {
            if !matches!(stream.read_buf(&mut buf).await, Ok(1..)) {
                return;
            }
        }
        let body: Vec<u8> = buf.drain(..head_end + length).skip(head_end).collect();
        let n = requests.fetch_add(1, Ordering::Relaxed);
        let response = respond(&method, &body, tools, n);
        if stream.write_all(&response).await.is_err() || close {
            return;
        }
    }
}

fn respond(method: &str, body: &[u8], tools: &str, n: u64) -> Vec<u8> {
    let (status, extra, body) = match method {
        "POST" => match serde_json::from_slice::<Value>(body) {
            Ok(message) => match (message.get("id"), message["method"].as_str()) {
                (None, _) | (_, None) => ("202 Accepted", String::new(), None),
                (Some(id), Some(method)) => {
                    let (extra, result) = match method {
                        "initialize" => (
                            format!("Mcp-Session-Id: {n:032x}\r\n"),
                            json!({
                                "protocolVersion": initialize_version(
                                    message["params"]["protocolVersion"].as_str()
                                ),
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "compare-list", "version": "0.0.0"},
                            })
                            .to_string(),
                        ),
                        "tools/list" => (String::new(), tools.to_owned()),
                        "ping" => (String::new(), "{}".to_owned()),
                        _ => {
                            let error = json!({"jsonrpc": "2.0", "id": id, "error":
                                {"code": -32601, "message": "Method not found"}});
                            return http("200 OK", "", Some(error.to_string()));
                        }
                    };
                    let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
                    ("200 OK", extra, Some(reply))
                }
            },
            Err(_) => ("400 Bad Request", String::new(), None),
        },
        "DELETE" => ("200 OK", String::new(), None),
        _ => (
            "405 Method Not Allowed",
            "Allow: POST, DELETE\r\n".to_owned(),
            None,
        ),
    };
    http(status, &extra, body)
}

/// The revision an `initialize` is answered with: the one offered when it is a revision that
/// has `initialize` (the 2025 era and before), else the latest of those. This server speaks
/// only the 2025 rules; echoing a 2026-07-28 offer back would claim a revision it does not
/// speak (rmcp 3.11's default lifecycle offers 2026-07-28 in its `initialize` and then checks
/// what it got).
pub(crate) fn initialize_version(offered: Option<&str>) -> &'static str {
    const SPOKEN: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
    SPOKEN
        .into_iter()
        .find(|v| Some(*v) == offered)
        .unwrap_or(SPOKEN[0])
}

fn http(status: &str, extra: &str, body: Option<String>) -> Vec<u8> {
    let body = body.unwrap_or_default();
    let kind = if body.is_empty() {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\n{kind}{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// xorshift64 (Marsaglia 2003), as in `benches/parsers`.
struct XorShift(u64);

impl XorShift {
    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform-enough integer in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// The `ListToolsResult`: `benches/parsers/src/inputs.rs`' `tools_list` (same seed, same
/// tools), without its `nextCursor`.
fn tools_result() -> String {
    let mut rng = XorShift(0x7001_5115_7000_0001);
    let kinds = ["string", "integer", "number", "boolean"];
    let nouns = [
        "issue", "file", "repo", "query", "branch", "user", "table", "page", "ticket", "doc",
    ];
    let verbs = [
        "get", "list", "create", "update", "delete", "search", "merge", "read",
    ];
    let mut tools = Vec::with_capacity(TOOLS);
    for i in 0..TOOLS {
        let verb = verbs[rng.range(0, verbs.len() - 1)];
        let noun = nouns[rng.range(0, nouns.len() - 1)];
        let nprops = rng.range(2, 8);
        let mut props = Vec::new();
        let mut required = Vec::new();
        for p in 0..nprops {
            let kind = kinds[rng.range(0, kinds.len() - 1)];
            let name = format!("{noun}_{p}");
            let extra = match kind {
                "string" if rng.range(0, 2) == 0 => {
                    r#","enum":["open","closed","all"],"default":"open""#.to_string()
                }
                "string" => r#","minLength":1,"maxLength":256"#.to_string(),
                "integer" => format!(r#","minimum":0,"maximum":{}"#, rng.range(10, 10_000)),
                "number" => r#","minimum":0.0,"exclusiveMaximum":1.0"#.to_string(),
                _ => r#","default":false"#.to_string(),
            };
            props.push(format!(
                r#""{name}":{{"type":"{kind}","description":"The {noun} {kind} parameter number {p}, used to narrow the {verb} operation."{extra}}}"#
            ));
            if rng.range(0, 1) == 0 {
                required.push(format!(r#""{name}""#));
            }
        }
        let array_prop = r#""labels":{"type":"array","items":{"type":"string"},"description":"Labels to filter by."}"#;
        tools.push(format!(
            r#"{{"name":"{verb}_{noun}_{i}","title":"{verb} {noun} #{i}","description":"{verb} a {noun}. Returns the matching {noun} objects as JSON; fails with an error result when the {noun} does not exist or access is denied.","inputSchema":{{"type":"object","properties":{{{props},{array_prop}}},"required":[{required}],"additionalProperties":false}},"annotations":{{"readOnlyHint":{ro},"destructiveHint":{de},"idempotentHint":true,"openWorldHint":false}}}}"#,
            props = props.join(","),
            required = required.join(","),
            ro = verb == "get" || verb == "list" || verb == "search" || verb == "read",
            de = verb == "delete",
        ));
    }
    format!(r#"{{"tools":[{}]}}"#, tools.join(","))
}
