//! Harness functions for the fuzz targets and the corpus replay tests. Not a public API: the
//! fuzz crate and `tests/` call these so that every target's checks live in the library.

#[cfg(feature = "sse")]
pub(crate) use self::sse_harness::*;

/// The fuzz targets, one per `fuzz/fuzz_targets/*.rs` (named alike, in snake case); [`fuzz`]
/// runs one on an input. One entry point keeps the harness out of the crate's surface: each
/// target's checks are documented on its function here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// `fuzz_sse_decode`.
    #[cfg(feature = "sse")]
    SseDecode,
    /// `fuzz_jsonrpc_decode`.
    #[cfg(feature = "jsonrpc")]
    JsonrpcDecode,
    /// `fuzz_mcp_headers`.
    #[cfg(feature = "mcp")]
    McpHeaders,
    /// `fuzz_mcp_era`.
    #[cfg(feature = "session")]
    McpEra,
    /// `fuzz_session`.
    #[cfg(feature = "session")]
    Session,
    /// `fuzz_auth_challenge`.
    #[cfg(feature = "auth")]
    AuthChallenge,
    /// `fuzz_auth_documents`.
    #[cfg(feature = "auth")]
    AuthDocuments,
    /// `fuzz_auth_dpop`.
    #[cfg(feature = "auth")]
    AuthDpop,
    /// `fuzz_auth_token_exchange`.
    #[cfg(feature = "auth")]
    AuthTokenExchange,
    /// `fuzz_server_input`.
    #[cfg(feature = "client")]
    ServerInput,
    /// `fuzz_task_poll`.
    #[cfg(feature = "client")]
    TaskPoll,
    /// `fuzz_binding_config`.
    #[cfg(feature = "bindings")]
    BindingConfig,
    /// `fuzz_call_result`.
    #[cfg(feature = "bindings")]
    CallResult,
    /// `fuzz_connection`.
    #[cfg(feature = "bindings")]
    Connection,
    /// `fuzz_http_response`.
    #[cfg(feature = "bindings")]
    HttpResponse,
}

/// Runs the fuzz target `target` on `data`: returns, or panics on a finding.
pub fn fuzz(target: Target, data: &[u8]) {
    match target {
        #[cfg(feature = "sse")]
        Target::SseDecode => fuzz_sse_decode(data),
        #[cfg(feature = "jsonrpc")]
        Target::JsonrpcDecode => fuzz_jsonrpc_decode(data),
        #[cfg(feature = "mcp")]
        Target::McpHeaders => fuzz_mcp_headers(data),
        #[cfg(feature = "session")]
        Target::McpEra => fuzz_mcp_era(data),
        #[cfg(feature = "session")]
        Target::Session => fuzz_session(data),
        #[cfg(feature = "auth")]
        Target::AuthChallenge => fuzz_auth_challenge(data),
        #[cfg(feature = "auth")]
        Target::AuthDocuments => fuzz_auth_documents(data),
        #[cfg(feature = "auth")]
        Target::AuthDpop => fuzz_auth_dpop(data),
        #[cfg(feature = "auth")]
        Target::AuthTokenExchange => fuzz_auth_token_exchange(data),
        #[cfg(feature = "client")]
        Target::ServerInput => fuzz_server_input(data),
        #[cfg(feature = "client")]
        Target::TaskPoll => fuzz_task_poll(data),
        #[cfg(feature = "bindings")]
        Target::BindingConfig => fuzz_binding_config(data),
        #[cfg(feature = "bindings")]
        Target::CallResult => fuzz_call_result(data),
        #[cfg(feature = "bindings")]
        Target::Connection => fuzz_connection(data),
        #[cfg(feature = "bindings")]
        Target::HttpResponse => fuzz_http_response(data),
    }
}

#[cfg(test)]
mod corpus;

#[cfg(feature = "bindings")]
mod binding;
#[cfg(feature = "bindings")]
use self::binding::{fuzz_binding_config, fuzz_call_result};

#[cfg(feature = "auth")]
mod auth;
#[cfg(feature = "auth")]
use self::auth::{
    fuzz_auth_challenge, fuzz_auth_documents, fuzz_auth_dpop, fuzz_auth_token_exchange,
};

#[cfg(feature = "mcp")]
mod headers;
#[cfg(feature = "mcp")]
use self::headers::fuzz_mcp_headers;

#[cfg(feature = "exchange")]
mod reply;
#[cfg(feature = "exchange")]
pub use self::reply::{ClientDecoded, decode_reply_as_client};

#[cfg(feature = "client")]
mod server_input;
#[cfg(feature = "client")]
use self::server_input::fuzz_server_input;

#[cfg(feature = "client")]
mod task;
#[cfg(feature = "client")]
use self::task::fuzz_task_poll;

#[cfg(feature = "session")]
mod era;
#[cfg(feature = "session")]
use self::era::fuzz_mcp_era;

#[cfg(feature = "session")]
mod session;
#[cfg(feature = "session")]
use self::session::fuzz_session;

#[cfg(feature = "bindings")]
mod connection;
#[cfg(feature = "bindings")]
use self::connection::fuzz_connection;

#[cfg(feature = "bindings")]
mod http;
#[cfg(feature = "bindings")]
use self::http::fuzz_http_response;

#[cfg(feature = "sse")]
mod sse_harness {
    use crate::sse::{Decoder, Error, Limits};

    /// What the reference reading of the standard produced from a whole stream.
    #[derive(Debug, Default, PartialEq, Eq)]
    pub(crate) struct SseReference {
        /// Dispatched events as (type, data, last event id).
        pub events: Vec<(String, String, String)>,
        /// The last valid `retry` value.
        pub retry_ms: Option<u64>,
        /// The last event id string after the stream.
        pub last_event_id: String,
    }

    /// The standard read literally: decode the whole stream as UTF-8 (dropping one BOM), split it
    /// into lines, interpret each line. Slow and obviously right; the decoder must agree with it.
    pub(crate) fn sse_reference(input: &[u8]) -> SseReference {
        let body = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
        let text = String::from_utf8_lossy(body);
        let mut lines = Vec::new();
        let mut line = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    lines.push(std::mem::take(&mut line));
                }
                '\n' => lines.push(std::mem::take(&mut line)),
                c => line.push(c),
            }
        }
        // What is left in `line` is an unterminated last line: it is never processed.
        let (mut data, mut event_type, mut id_buffer) =
            (String::new(), String::new(), String::new());
        let mut outcome = SseReference::default();
        for line in lines {
            if line.is_empty() {
                outcome.last_event_id = id_buffer.clone();
                if data.is_empty() {
                    event_type.clear();
                    continue;
                }
                if data.ends_with('\n') {
                    data.pop();
                }
                let kind = if event_type.is_empty() {
                    "message".to_owned()
                } else {
                    event_type.clone()
                };
                outcome
                    .events
                    .push((kind, std::mem::take(&mut data), id_buffer.clone()));
                event_type.clear();
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.find(':') {
                Some(colon) => {
                    let value = &line[colon + 1..];
                    (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
                }
                None => (line.as_str(), ""),
            };
            match field {
                "event" => event_type = value.to_owned(),
                "data" => {
                    data.push_str(value);
                    data.push('\n');
                }
                "id" if !value.contains('\0') => id_buffer = value.to_owned(),
                "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                    outcome.retry_ms = Some(value.bytes().fold(0u64, |ms, d| {
                        ms.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                    }));
                }
                _ => {}
            }
        }
        outcome
    }

    /// One decoder run: events as (type, data, last event id), the final reconnection time and
    /// last event id, and the error, if any.
    #[derive(Debug, PartialEq, Eq)]
    pub(crate) struct SseRun {
        /// Dispatched events as (type, data, last event id).
        pub events: Vec<(String, String, String)>,
        /// The decoder's reconnection time at the end.
        pub retry_ms: Option<u64>,
        /// The decoder's last event id at the end.
        pub last_event_id: String,
        /// The error that stopped the stream, if any.
        pub error: Option<Error>,
    }

    /// Decodes `chunks` in order three ways: with `push` and `next_event`, with `decode`
    /// (lines read in place), and alternating the two. Checks that the three agree and, after
    /// every chunk, that the decoder holds no more than its limits allow plus what the chunk
    /// itself may expand to.
    pub(crate) fn sse_run<'a>(
        limits: Limits,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> SseRun {
        let chunks: Vec<&[u8]> = chunks.into_iter().collect();
        let pushed = sse_run_with(limits, &chunks, |_| false);
        let decoded = sse_run_with(limits, &chunks, |_| true);
        assert_eq!(pushed, decoded, "decode differs from push and next_event");
        let alternating = sse_run_with(limits, &chunks, |i| i % 2 == 1);
        assert_eq!(pushed, alternating, "alternating decode and push differs");
        pushed
    }

    /// One run of [`sse_run`]: chunk `i` goes through `decode` when `use_decode(i)`.
    fn sse_run_with(limits: Limits, chunks: &[&[u8]], use_decode: fn(usize) -> bool) -> SseRun {
        let mut decoder = Decoder::new(limits);
        let mut events = Vec::new();
        let mut error = None;
        let mut largest_chunk = 0;
        for (i, chunk) in chunks.iter().enumerate() {
            largest_chunk = largest_chunk.max(chunk.len());
            if error.is_some() {
                // Later input must not change anything: feed it, but expect the same error.
                let again = if use_decode(i) {
                    decoder.decode(chunk, |_| panic!("an event after an error"))
                } else {
                    decoder.push(chunk);
                    decoder.next_event().map(|_| ())
                };
                assert_eq!(again.err(), error, "the error does not stick");
                continue;
            }
            let result = if use_decode(i) {
                decoder.decode(chunk, |event| {
                    events.push((
                        event.event_type().to_owned(),
                        event.data().to_owned(),
                        event.last_event_id().to_owned(),
                    ));
                })
            } else {
                decoder.push(chunk);
                loop {
                    match decoder.next_event() {
                        Ok(Some(event)) => events.push((
                            event.event_type().to_owned(),
                            event.data().to_owned(),
                            event.last_event_id().to_owned(),
                        )),
                        Ok(None) => break Ok(()),
                        Err(e) => break Err(e),
                    }
                }
            };
            match result {
                Ok(()) => {
                    // Between chunks the decoder holds at most: the line in progress and
                    // pinned values (each within the line limit, in a buffer that may
                    // double), room for the largest chunk so far as decoded (up to three
                    // bytes per input byte; the buffer keeps its capacity), joined data
                    // within the event limit, and short field values.
                    let (line, event) = (limits.max_line_bytes, limits.max_event_bytes);
                    let bound = 9 * line + event + 3 * largest_chunk + 8192;
                    assert!(
                        decoder.buffered_bytes() <= bound,
                        "decoder holds {} bytes, bound {bound}",
                        decoder.buffered_bytes()
                    );
                }
                Err(e) => error = Some(e),
            }
        }
        SseRun {
            events,
            retry_ms: decoder.retry_ms(),
            last_event_id: decoder.last_event_id().to_owned(),
            error,
        }
    }

    /// The `sse_decode` fuzz target. The first three bytes choose the limits and the chunking;
    /// the rest is the stream. Checks: the same output for whole, chunked (1 to 17 bytes),
    /// split in two and (for short inputs) byte-at-a-time input, each through `push`, `decode`
    /// and both alternating; the memory bound after every push; agreement with
    /// [`sse_reference`] when no limit was hit, and a prefix of its events when one was.
    pub(crate) fn fuzz_sse_decode(data: &[u8]) {
        let Some((&[line_knob, event_knob, seed], stream)) = data.split_first_chunk::<3>() else {
            return;
        };
        let limits = if line_knob < 16 {
            Limits::default()
        } else {
            Limits {
                max_line_bytes: usize::from(line_knob),
                max_event_bytes: usize::from(event_knob) * 4 + 1,
            }
        };
        let whole = sse_run(limits, [stream]);
        let mut state = u64::from(seed) | 0x9E37_79B9_7F4A_7C15;
        let mut chunks = Vec::new();
        let mut rest = stream;
        while !rest.is_empty() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let take = 1 + (state % 17) as usize;
            let (chunk, after) = rest.split_at(take.min(rest.len()));
            chunks.push(chunk);
            rest = after;
        }
        let chunked = sse_run(limits, chunks.iter().copied());
        assert_eq!(whole, chunked, "chunking changed the output: {chunks:?}");
        // Two large pieces: a line left open by the first is finished in the second, the way
        // `decode` meets a long line arriving in big reads.
        let (first, second) = stream.split_at(stream.len() * usize::from(seed) / 256);
        assert_eq!(
            whole,
            sse_run(limits, [first, second]),
            "splitting at {} changed the output",
            first.len()
        );
        if stream.len() <= 4096 {
            assert_eq!(
                whole,
                sse_run(limits, stream.chunks(1)),
                "byte-at-a-time differs"
            );
        }
        let reference = sse_reference(stream);
        if whole.error.is_none() {
            assert_eq!(whole.events, reference.events);
            assert_eq!(whole.retry_ms, reference.retry_ms);
            assert_eq!(whole.last_event_id, reference.last_event_id);
        } else {
            assert!(reference.events.starts_with(&whole.events));
        }
    }
}

/// The `jsonrpc_decode` fuzz target: decoding never panics, and whatever decodes re-encodes to
/// one line that decodes to the same message and encodes to the same bytes again.
#[cfg(feature = "jsonrpc")]
pub(crate) fn fuzz_jsonrpc_decode(data: &[u8]) {
    crate::jsonrpc::fuzz_roundtrip(data);
}
