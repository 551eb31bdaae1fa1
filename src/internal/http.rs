//! The `http_response` harness: a loopback HTTP server answers the real Streamable HTTP client
//! ([`Client`] over `HttpLink` and the hyper pool) with raw bytes from the fuzz input, for a
//! `tools/call` request, for the notifications the session sends, and for the GETs that
//! resume a response stream.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::binding::call::finish_call;
use crate::client::{CallOptions, Client, ClientOptions};
use crate::error::ErrorKind;
use crate::session::ResumePolicy;
use crate::sse;
use crate::transport::Secret;
use crate::transport::http::{HttpConfig, HttpLimits, HttpPool, TlsOptions};

/// Separates the responses in the input.
pub const NEXT_RESPONSE: &[u8] = b"\n#next-response\n";

/// The bearer token the client sends; it must never show in an error or a result.
const TOKEN: &str = "fuzz-bearer-9f3c1a77e2";

/// The call's deadline, and how much later than it the call may end.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
const SLACK: Duration = Duration::from_secs(5);

/// The `max_response_bytes` a call gets (first byte, bits 2 to 4).
const RESPONSE_LIMITS: [u64; 8] = [64, 256, 1024, 4096, 16_384, 65_536, 1 << 20, 16 << 20];

/// The reply to a notification POST when the input gives none.
const ACCEPTED: &[u8] = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";

/// The most request-head bytes the server reads.
const MAX_REQUEST_HEAD: usize = 64 * 1024;

/// What the loopback server answers, by the kind of request.
struct Script {
    /// The initialize reply (fixed: the handshake is not what is fuzzed here).
    initialize: Vec<u8>,
    /// The reply to the `tools/call` POST.
    call: Vec<u8>,
    /// The reply to every notification and response POST.
    one_way: Vec<u8>,
    /// Replies to the GETs that resume a stream, in order; after them connections are closed
    /// unanswered.
    resumes: Vec<Vec<u8>>,
    /// Seeds how replies are cut into writes.
    chunk_seed: u64,
}

/// The `http_response` fuzz target. The first byte chooses whether the initialize reply
/// carries an `Mcp-Session-Id`, the negotiated revision, the call's `max_response_bytes` and
/// how replies are cut into writes; the rest is raw HTTP responses separated by
/// [`NEXT_RESPONSE`]: the reply to `tools/call`, then the reply to every notification POST
/// (`notifications/initialized`, `notifications/cancelled`, answers to server requests;
/// `202 Accepted` when absent), then the replies to stream-resuming GETs in order.
///
/// Checks: connecting succeeds whatever a notification's reply was (a notification's answer
/// cannot fail the session); the call ends, within its deadline plus slack, in a result or a
/// classified error, where an HTTP refusal (3xx, 4xx) leaves `unknown_outcome` false, a
/// failure after the call may have run (lost stream, protocol error, limit, timeout, 5xx)
/// makes it true, and a result comes only from a 2xx reply; the binding pipeline's
/// `unknown_outcome` is the error's; the bearer token shows in no error, result or `Debug`
/// output, even when the server echoes it; closing the session ends within its bound.
pub fn fuzz_http_response(data: &[u8]) {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let mut sections = split(rest);
    if sections.is_empty() {
        return;
    }
    let call = sections.remove(0);
    let one_way = if sections.is_empty() {
        ACCEPTED.to_vec()
    } else {
        sections.remove(0)
    };
    let script = Script {
        initialize: initialize_reply(knob & 1 == 1, knob & 2 == 2),
        call,
        one_way,
        resumes: sections,
        chunk_seed: u64::from(knob >> 5),
    };
    let max_response_bytes = RESPONSE_LIMITS[usize::from((knob >> 2) & 7)];
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(exchange(script, max_response_bytes));
}

/// The input after the knob byte, cut at every [`NEXT_RESPONSE`].
fn split(mut rest: &[u8]) -> Vec<Vec<u8>> {
    let mut sections = Vec::new();
    while let Some(at) = memchr::memmem::find(rest, NEXT_RESPONSE) {
        sections.push(rest[..at].to_vec());
        rest = &rest[at + NEXT_RESPONSE.len()..];
    }
    sections.push(rest.to_vec());
    sections
}

fn initialize_reply(session_id: bool, older: bool) -> Vec<u8> {
    let version = if older { "2025-06-18" } else { "2025-11-25" };
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{{\"protocolVersion\":\"{version}\",\
         \"capabilities\":{{\"tools\":{{}}}},\"serverInfo\":{{\"name\":\"fuzz\",\"version\":\"1\"}}}}}}"
    );
    let session = if session_id {
        "mcp-session-id: fuzz-session-1\r\n"
    } else {
        ""
    };
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{session}connection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The status code of a raw response, if its first line reads like one. Empty lines before
/// it are skipped, as the HTTP parser does.
fn status_of(mut response: &[u8]) -> Option<u16> {
    loop {
        response = match response {
            [b'\r', b'\n', rest @ ..] | [b'\n', rest @ ..] => rest,
            _ => break,
        };
    }
    let line = response.split(|&b| b == b'\n').next()?;
    let mut parts = line.split(|&b| b == b' ');
    let version = parts.next()?;
    if !version.starts_with(b"HTTP/1.") {
        return None;
    }
    let code = parts.next()?;
    let code = std::str::from_utf8(code).ok()?.trim_end_matches('\r');
    code.parse().ok()
}

async fn exchange(script: Script, max_response_bytes: u64) {
    let Ok(listener) = TcpListener::bind("127.0.0.1:0").await else {
        return;
    };
    let Ok(address) = listener.local_addr() else {
        return;
    };
    let call_status = status_of(&script.call);
    let script = Arc::new(script);
    let server = tokio::spawn(serve(listener, script.clone()));

    let Ok(pool) = HttpPool::new(&TlsOptions::default()) else {
        return;
    };
    let Ok(mut config) = HttpConfig::new(&format!("http://{address}/mcp")) else {
        return;
    };
    config.bearer_token = Some(Secret::new(TOKEN));
    config.post_timeout = Duration::from_secs(2);
    config.close_timeout = Duration::from_secs(1);
    config.resume = ResumePolicy {
        max_attempts: 2,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
    };
    config.limits = HttpLimits {
        max_body_bytes: 256 * 1024,
        sse: sse::Limits {
            max_line_bytes: 16 * 1024,
            max_event_bytes: 64 * 1024,
        },
    };
    let connect = Client::connect_http(&pool, config, ClientOptions::default());
    let client = match tokio::time::timeout(Duration::from_secs(10), connect).await {
        Ok(Ok(client)) => client,
        Ok(Err(error)) => panic!("connecting failed on a notification's reply: {error:?}"),
        Err(_) => panic!("connecting hung"),
    };

    let options = CallOptions {
        timeout: CALL_TIMEOUT,
        max_response_bytes: Some(max_response_bytes),
        ..CallOptions::default()
    };
    let call = client.call_tool("echo", None, options);
    let outcome = tokio::time::timeout(CALL_TIMEOUT + SLACK, call)
        .await
        .unwrap_or_else(|_| panic!("the call outlived its deadline"));
    assert!(
        !format!("{outcome:?}").contains(TOKEN),
        "the token shows in the outcome"
    );
    match &outcome {
        Ok(_) => assert!(
            call_status.is_some_and(|s| (200..300).contains(&s)),
            "a result from a reply with status {call_status:?}"
        ),
        Err(error) => {
            assert!(
                !error.to_string().contains(TOKEN),
                "the token shows in {error}"
            );
            let unknown = error.outcome_unknown();
            match error.kind() {
                ErrorKind::Unauthorized => {
                    assert!(matches!(call_status, Some(401 | 403)), "{call_status:?}");
                    assert!(!unknown, "a 401/403 refusal has a known outcome");
                }
                ErrorKind::Http => {
                    // Refusals (3xx, 4xx) come before the tool runs; a 5xx may come after.
                    // Statuses outside those classes promise nothing either way.
                    let status = call_status.unwrap_or_else(|| panic!("{error:?}"));
                    if (300..600).contains(&status) {
                        assert_eq!(unknown, status >= 500, "{status}: {error:?}");
                    }
                }
                ErrorKind::ConnectionLost
                | ErrorKind::Protocol
                | ErrorKind::LimitExceeded
                | ErrorKind::Timeout => assert!(unknown, "{error:?}"),
                ErrorKind::ServerError | ErrorKind::Connect => assert!(!unknown, "{error:?}"),
                // Refused with 404 on the call, or expired while resuming its stream.
                ErrorKind::SessionExpired => assert!(
                    if unknown {
                        call_status.is_some_and(|s| (200..300).contains(&s))
                    } else {
                        call_status == Some(404)
                    },
                    "{call_status:?}: {error:?}"
                ),
                ErrorKind::ElicitationRequested => assert!(unknown),
                other => panic!("unexpected kind {other:?}: {error:?}"),
            }
        }
    }
    // The binding pipeline classifies the same way.
    let expected_unknown = outcome.as_ref().err().map(|e| e.outcome_unknown());
    let result = finish_call("call-1", outcome, None, max_response_bytes);
    if let Some(unknown) = expected_unknown {
        assert_eq!(result.unknown_outcome, Some(unknown));
    }

    tokio::time::timeout(Duration::from_secs(1) + SLACK, client.close())
        .await
        .unwrap_or_else(|_| panic!("closing the session hung"));
    server.abort();
}

/// Answers each connection's first request from the script, then closes it.
async fn serve(listener: TcpListener, script: Arc<Script>) {
    let resumes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(answer(stream, script.clone(), resumes.clone()));
    }
}

async fn answer(
    mut stream: TcpStream,
    script: Arc<Script>,
    resumes: Arc<std::sync::atomic::AtomicUsize>,
) {
    let Some((method, body)) = read_request(&mut stream).await else {
        return;
    };
    let reply: &[u8] = match method.as_str() {
        "GET" => {
            let n = resumes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match script.resumes.get(n) {
                Some(reply) => reply,
                None => return,
            }
        }
        "DELETE" => b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
        _ if contains(&body, b"\"method\":\"initialize\"") => &script.initialize,
        _ if contains(&body, b"\"method\":\"tools/call\"") => &script.call,
        _ => &script.one_way,
    };
    let mut state = script.chunk_seed | 0x9E37_79B9_7F4A_7C10;
    let mut rest = reply;
    while !rest.is_empty() {
        let take = if script.chunk_seed == 0 {
            rest.len()
        } else {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            1 + (state % 64) as usize
        };
        let (chunk, after) = rest.split_at(take.min(rest.len()));
        if stream.write_all(chunk).await.is_err() {
            return;
        }
        let _ = stream.flush().await;
        tokio::task::yield_now().await;
        rest = after;
    }
    let _ = stream.shutdown().await;
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// Reads one request: its method and body (by `content-length`), bounded.
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = memchr::memmem::find(&buffer, b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > MAX_REQUEST_HEAD {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let method = head.split(' ').next()?.to_owned();
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_REQUEST_HEAD);
    let mut body = buffer[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((method, body))
}
