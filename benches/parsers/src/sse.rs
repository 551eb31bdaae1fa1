//! SSE contenders. Each one is fed the same pre-split chunks and does the same observable work:
//! count the events it yields and add up the byte lengths of their `data`.
//!
//! `PROBE = true` builds a variant that gives up at a deadline (checked between chunks and between
//! events) so a quadratic contender cannot stall the run; the timed variant (`PROBE = false`) has
//! no such checks.

use std::convert::Infallible;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use futures_util::Stream;

/// What a contender observed. For decoders: events and summed data bytes. For the baselines:
/// `events` is the newline count (memchr) or 0 (copy), `data_bytes` the bytes scanned or copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Outcome {
    pub events: u64,
    pub data_bytes: u64,
}

/// Result of one run: the outcome, plus in a probe how much of the input was fed before the
/// deadline (`None` when everything was fed and the stream ended normally).
pub struct Run {
    pub outcome: Outcome,
    pub stopped_at: Option<f64>,
}

fn expired<const PROBE: bool>(deadline: Option<Instant>) -> bool {
    PROBE && deadline.is_some_and(|d| Instant::now() >= d)
}

fn finish<const PROBE: bool>(
    outcome: Outcome,
    fed: usize,
    total: usize,
    deadline: Option<Instant>,
) -> Run {
    let stopped = PROBE && (fed < total || expired::<PROBE>(deadline));
    Run {
        outcome,
        stopped_at: stopped.then(|| fed as f64 / total.max(1) as f64),
    }
}

/// mcpwire's sans-IO decoder through `decode`: each chunk's events handed to a closure, lines
/// that lie wholly inside the chunk read in place. (The loop is written out in both mcpwire
/// drivers: sharing it through a closure cost 19 instructions a chunk in callgrind, which the
/// 1-64 byte rows would have charged to the decoder.)
pub fn mcpwire_decode<const PROBE: bool>(chunks: &[&[u8]], deadline: Option<Instant>) -> Run {
    let mut dec = mcpwire::sse::Decoder::new(crate::sse_limits());
    let mut out = Outcome::default();
    let mut fed = 0;
    for chunk in chunks {
        if expired::<PROBE>(deadline) {
            break;
        }
        fed += 1;
        dec.decode(chunk, |ev| {
            out.events += 1;
            out.data_bytes += ev.data().len() as u64;
            black_box(&ev);
        })
        .expect("mcpwire: decode error");
    }
    finish::<PROBE>(out, fed, chunks.len(), deadline)
}

/// mcpwire's sans-IO decoder: `push` each chunk, then drain `next_event` until `None`.
pub fn mcpwire<const PROBE: bool>(chunks: &[&[u8]], deadline: Option<Instant>) -> Run {
    let mut dec = mcpwire::sse::Decoder::new(crate::sse_limits());
    let mut out = Outcome::default();
    let mut fed = 0;
    for chunk in chunks {
        if expired::<PROBE>(deadline) {
            break;
        }
        fed += 1;
        dec.push(chunk);
        while let Some(ev) = dec.next_event().expect("mcpwire: decode error") {
            out.events += 1;
            out.data_bytes += ev.data().len() as u64;
            black_box(&ev);
        }
    }
    finish::<PROBE>(out, fed, chunks.len(), deadline)
}

/// The input stream handed to the `futures::Stream` adapters: the same `&[u8]` chunks, no copy,
/// no refcount traffic (`&[u8]` is both `bytes::Buf` and `AsRef<[u8]>`), never `Pending`.
/// In a probe it counts what was fed and ends early at the deadline.
fn byte_stream<'a, const PROBE: bool>(
    chunks: &'a [&'a [u8]],
    deadline: Option<Instant>,
    fed: &'a std::cell::Cell<usize>,
) -> impl Stream<Item = Result<&'a [u8], Infallible>> + 'a {
    futures_util::stream::iter(
        chunks
            .iter()
            .take_while(move |_| {
                if PROBE {
                    if expired::<PROBE>(deadline) {
                        return false;
                    }
                    fed.set(fed.get() + 1);
                }
                true
            })
            .map(|c| Ok::<&[u8], Infallible>(*c)),
    )
}

/// Minimal executor: poll with a no-op waker until the stream ends. The input never returns
/// `Pending`, so neither does the adapter.
fn drain<S, T, E, const PROBE: bool>(
    stream: S,
    deadline: Option<Instant>,
    mut each: impl FnMut(T),
) -> bool
where
    S: Stream<Item = Result<T, E>>,
    E: std::fmt::Debug,
{
    let mut stream = pin!(stream);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match stream.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(Ok(item))) => each(item),
            Poll::Ready(Some(Err(e))) => panic!("decode error: {e:?}"),
            Poll::Ready(None) => return true,
            Poll::Pending => unreachable!("the input stream is never pending"),
        }
        if expired::<PROBE>(deadline) {
            return false;
        }
    }
}

/// sse-stream 0.2 (the version rmcp uses): `SseStream::from_bytes_stream`, its only entry point
/// for a byte stream (it wraps the stream in an http-body `StreamBody`, as rmcp does).
pub fn sse_stream_02<const PROBE: bool>(chunks: &[&[u8]], deadline: Option<Instant>) -> Run {
    let fed = std::cell::Cell::new(0);
    let stream =
        sse_stream_02::SseStream::from_bytes_stream(byte_stream::<PROBE>(chunks, deadline, &fed));
    let mut out = Outcome::default();
    drain::<_, _, _, PROBE>(stream, deadline, |sse: sse_stream_02::Sse| {
        out.events += 1;
        out.data_bytes += sse.data.as_ref().map_or(0, |d| d.len()) as u64;
        black_box(&sse);
    });
    finish::<PROBE>(
        out,
        if PROBE { fed.get() } else { chunks.len() },
        chunks.len(),
        deadline,
    )
}

/// sse-stream 0.3: `SseByteStream::new`, which its docs recommend for byte streams (no
/// http-body frame adaptation, memchr + simdutf8 default features on).
pub fn sse_stream_03<const PROBE: bool>(chunks: &[&[u8]], deadline: Option<Instant>) -> Run {
    let fed = std::cell::Cell::new(0);
    let stream = sse_stream::SseByteStream::new(byte_stream::<PROBE>(chunks, deadline, &fed));
    let mut out = Outcome::default();
    drain::<_, _, _, PROBE>(stream, deadline, |sse: sse_stream::Sse| {
        out.events += 1;
        out.data_bytes += sse.data.as_ref().map_or(0, |d| d.len()) as u64;
        black_box(&sse);
    });
    finish::<PROBE>(
        out,
        if PROBE { fed.get() } else { chunks.len() },
        chunks.len(),
        deadline,
    )
}

/// eventsource-stream: `Eventsource::eventsource()` on the byte stream.
pub fn eventsource_stream<const PROBE: bool>(chunks: &[&[u8]], deadline: Option<Instant>) -> Run {
    use eventsource_stream::Eventsource;
    let fed = std::cell::Cell::new(0);
    let stream = byte_stream::<PROBE>(chunks, deadline, &fed).eventsource();
    let mut out = Outcome::default();
    drain::<_, _, _, PROBE>(stream, deadline, |ev: eventsource_stream::Event| {
        out.events += 1;
        out.data_bytes += ev.data.len() as u64;
        black_box(&ev);
    });
    finish::<PROBE>(
        out,
        if PROBE { fed.get() } else { chunks.len() },
        chunks.len(),
        deadline,
    )
}

/// Baseline: find every `\n` with memchr, over the same chunks. A lower bound for any decoder
/// that has to look at every byte.
pub fn memchr_newlines(chunks: &[&[u8]]) -> Run {
    let mut out = Outcome::default();
    for chunk in chunks {
        let chunk = black_box(*chunk);
        out.events += memchr::memchr_iter(b'\n', chunk).count() as u64;
        out.data_bytes += chunk.len() as u64;
    }
    Run {
        outcome: out,
        stopped_at: None,
    }
}

/// Baseline: copy every chunk into one reused, pre-reserved buffer (what any buffering decoder
/// does at least once).
pub fn plain_copy(chunks: &[&[u8]], buf: &mut Vec<u8>) -> Run {
    buf.clear();
    for chunk in chunks {
        buf.extend_from_slice(black_box(chunk));
    }
    black_box(&buf);
    Run {
        outcome: Outcome {
            events: 0,
            data_bytes: buf.len() as u64,
        },
        stopped_at: None,
    }
}
