//! Vector tests for every event-stream rule, each run whole, byte at a time and at every split
//! point, plus a property test against a literal reading of the standard.

use super::{Decoder, Error, Limits};

/// What a decoder produced from a stream (the fuzz harness's run, which also checks the
/// memory bound after every push).
type Outcome = crate::internal::SseRun;

fn decode_chunks<'a>(limits: Limits, chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    crate::internal::sse_run(limits, chunks)
}

/// Decodes `input` whole, byte at a time, split at every point and (for short inputs) at every
/// pair of points, and checks that all of these agree.
fn decode_every_way(limits: Limits, input: &[u8]) -> Outcome {
    let whole = decode_chunks(limits, [input]);
    let bytewise = decode_chunks(limits, input.chunks(1));
    assert_eq!(whole, bytewise, "byte-at-a-time differs for {input:?}");
    for i in 0..=input.len() {
        let (a, b) = input.split_at(i);
        assert_eq!(
            whole,
            decode_chunks(limits, [a, b]),
            "split at {i} differs for {input:?}"
        );
        if input.len() <= 48 {
            for j in i..=input.len() {
                let parts = [&input[..i], &input[i..j], &input[j..]];
                assert_eq!(
                    whole,
                    decode_chunks(limits, parts),
                    "split at {i} and {j} differs for {input:?}"
                );
            }
        }
    }
    whole
}

fn reference(input: &[u8]) -> Outcome {
    let reference = crate::internal::sse_reference(input);
    Outcome {
        events: reference.events,
        retry_ms: reference.retry_ms,
        last_event_id: reference.last_event_id,
        error: None,
    }
}

fn check(input: &[u8], expected: &[(&str, &str, &str)], retry_ms: Option<u64>) {
    let outcome = decode_every_way(Limits::default(), input);
    let expected = Outcome {
        events: expected
            .iter()
            .map(|(t, d, i)| ((*t).to_owned(), (*d).to_owned(), (*i).to_owned()))
            .collect(),
        retry_ms,
        last_event_id: outcome.last_event_id.clone(),
        error: None,
    };
    assert_eq!(outcome, expected, "for input {input:?}");
    assert_eq!(
        outcome,
        reference(input),
        "reference disagrees for {input:?}"
    );
}

/// One test per rule: `name: input => [(type, data, last_event_id), ...] (retry MS)?;`
macro_rules! vectors {
    ($($name:ident: $input:expr => [$(($ty:expr, $data:expr, $id:expr)),* $(,)?] $(retry $retry:expr)?;)*) => {
        $(
            #[test]
            fn $name() {
                let retry: Option<u64> = None $(.or(Some($retry)))?;
                check($input, &[$(($ty, $data, $id)),*], retry);
            }
        )*
    };
}

vectors! {
    // Line ends: LF, CRLF, CR, mixed; a CR and its LF split across chunks is covered by the
    // split-point runs of every vector.
    lf_line_ends: b"data: hello\n\n" => [("message", "hello", "")];
    crlf_line_ends: b"data: hello\r\n\r\n" => [("message", "hello", "")];
    cr_line_ends: b"data: a\r\rdata: b\r\r" => [("message", "a", ""), ("message", "b", "")];
    mixed_line_ends: b"data: a\r\ndata: b\rdata: c\n\r\n" => [("message", "a\nb\nc", "")];
    lf_then_crlf_is_two_line_ends: b"data: x\n\r\n" => [("message", "x", "")];
    trailing_cr_is_a_blank_line: b"data: x\n\r" => [("message", "x", "")];
    cr_cr_lf_is_two_line_ends: b"data: x\r\r\n" => [("message", "x", "")];
    python_sdk_frame: b"event: message\r\ndata: {\"id\":1}\r\n\r\n" => [("message", "{\"id\":1}", "")];
    typescript_sdk_frame: b"event: message\nid: 0c1\ndata: {\"id\":1}\n\n" => [("message", "{\"id\":1}", "0c1")];

    // One leading BOM is dropped; a second one, or one later on, is content.
    bom_dropped_once: b"\xEF\xBB\xBFdata: x\n\n" => [("message", "x", "")];
    second_bom_makes_unknown_field: b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n" => [("message", "y", "")];
    bom_inside_value_kept: b"data: \xEF\xBB\xBFx\n\n" => [("message", "\u{FEFF}x", "")];
    partial_bom_is_content: b"\xEF\xBBdata: x\n\ndata: y\n\n" => [("message", "y", "")];
    bom_alone_then_event: b"\xEF\xBB\xBF\ndata: z\n\n" => [("message", "z", "")];

    // Comments and field parsing.
    comment_ignored: b": keepalive\ndata: x\n\n" => [("message", "x", "")];
    comment_only_dispatches_nothing: b": ping - 2026-11-30\r\n\r\n" => [];
    colon_alone_is_comment: b":\ndata: x\n\n" => [("message", "x", "")];
    field_without_colon_has_empty_value: b"data\n\n" => [("message", "", "")];
    two_bare_data_fields: b"data\ndata\n\n" => [("message", "\n", "")];
    one_leading_space_removed: b"data:  two\n\n" => [("message", " two", "")];
    no_space_after_colon: b"data:x\n\n" => [("message", "x", "")];
    tab_not_stripped: b"data:\tx\n\n" => [("message", "\tx", "")];
    colon_in_value_kept: b"data: a:b: c\n\n" => [("message", "a:b: c", "")];
    data_lines_joined: b"data: a\ndata: b\ndata:\n\n" => [("message", "a\nb\n", "")];
    empty_data_dispatches_empty_event: b"data:\n\n" => [("message", "", "")];
    unknown_field_ignored: b"foo: bar\ndata: x\nretryx: 5\n\n" => [("message", "x", "")];
    field_names_case_sensitive: b"Data: x\nDATA: y\n\n" => [];
    long_unknown_field_ignored: b"datadatadata: x\nevents: y\ndata: z\n\n" => [("message", "z", "")];
    space_before_colon_is_part_of_name: b"data : x\n\n" => [];

    // Event type.
    event_type_set: b"event: add\ndata: 1\n\n" => [("add", "1", "")];
    event_type_reset_after_dispatch: b"event: add\ndata: 1\n\ndata: 2\n\n" => [("add", "1", ""), ("message", "2", "")];
    empty_event_type_is_message: b"event:\ndata: x\n\n" => [("message", "x", "")];
    last_event_type_wins: b"event: a\nevent: b\ndata: x\n\n" => [("b", "x", "")];
    event_without_data_not_dispatched: b"event: add\n\ndata: x\n\n" => [("message", "x", "")];
    event_type_invalid_utf8: b"event: \xFF\ndata: x\n\n" => [("\u{FFFD}", "x", "")];

    // Last event id.
    id_set: b"id: 1\ndata: x\n\n" => [("message", "x", "1")];
    id_persists: b"id: 1\ndata: x\n\ndata: y\n\n" => [("message", "x", "1"), ("message", "y", "1")];
    id_with_nul_ignored: b"id: 1\ndata: x\n\nid: a\0b\ndata: y\n\n" => [("message", "x", "1"), ("message", "y", "1")];
    bare_id_resets: b"id: 1\ndata: x\n\nid\ndata: y\n\n" => [("message", "x", "1"), ("message", "y", "")];
    empty_id_resets: b"id: 1\ndata: x\n\nid:\ndata: y\n\n" => [("message", "x", "1"), ("message", "y", "")];
    id_updates_without_data: b"id: 5\n\ndata: x\n\n" => [("message", "x", "5")];
    id_after_data_in_same_event: b"data: x\nid: 7\n\n" => [("message", "x", "7")];
    id_invalid_utf8: b"id: \xFF\ndata: x\n\n" => [("message", "x", "\u{FFFD}")];
    priming_event: b"id: ev-1\r\ndata: \r\nretry: 1500\r\n\r\n" => [("message", "", "ev-1")] retry 1500;

    // Reconnection time.
    retry_digits: b"retry: 0100\n" => [] retry 100;
    retry_with_letter_ignored: b"retry: 12a\n" => [];
    retry_negative_ignored: b"retry: -1\n" => [];
    retry_two_spaces_ignored: b"retry:  5\n" => [];
    retry_empty_ignored: b"retry\nretry:\n" => [];
    retry_last_valid_wins: b"retry: 10\nretry: x\nretry: 20\nretry: 3.5\n" => [] retry 20;
    retry_huge_saturates: b"retry: 99999999999999999999999\n" => [] retry u64::MAX;
    retry_unterminated_ignored: b"retry: 10" => [];

    // An event must be closed by a blank line before the stream ends.
    unterminated_event_dropped: b"data: x\n" => [];
    unterminated_line_dropped: b"data: x" => [];
    only_closed_events_dispatched: b"data: x\n\ndata: y\n" => [("message", "x", "")];

    // UTF-8, including sequences split across chunks (every vector runs at every split).
    multibyte_characters: "data: é€𝄞\n\n".as_bytes() => [("message", "é€𝄞", "")];
    invalid_byte_replaced: b"data: a\xFFb\n\n" => [("message", "a\u{FFFD}b", "")];
    truncated_sequence_at_line_end: b"data: \xE2\x82\n\n" => [("message", "\u{FFFD}", "")];
    truncated_sequence_before_ascii: b"data: \xE2\x82A\n\n" => [("message", "\u{FFFD}A", "")];
    truncated_four_byte_sequence: b"data: \xF0\x9D\x84\ndata: x\n\n" => [("message", "\u{FFFD}\nx", "")];
    overlong_encoding: b"data: \xC0\x80\n\n" => [("message", "\u{FFFD}\u{FFFD}", "")];
    surrogate_encoding: b"data: \xED\xA0\x80\n\n" => [("message", "\u{FFFD}\u{FFFD}\u{FFFD}", "")];
    continuation_bytes_alone: b"data: \x80\x80x\n\n" => [("message", "\u{FFFD}\u{FFFD}x", "")];
    truncated_then_new_lead: b"data: \xE2\xF0\x9D\x84\x9E\n\n" => [("message", "\u{FFFD}\u{1D11E}", "")];
    invalid_name_bytes: b"\xFFdata: x\n\ndata: y\n\n" => [("message", "y", "")];
    nul_in_data_kept: b"data: a\0b\n\n" => [("message", "a\0b", "")];
}

#[test]
fn reset_stream_keeps_last_event_id_and_retry() {
    let mut decoder = Decoder::new(Limits::default());
    decoder.push(b"id: 7\nretry: 250\ndata: x\n\nevent: partial\ndata: lost");
    assert_eq!(decoder.next_event().unwrap().unwrap().data(), "x");
    assert!(!decoder.is_between_events());
    decoder.reset_stream();
    assert!(decoder.is_between_events());
    assert_eq!(
        (decoder.last_event_id(), decoder.retry_ms()),
        ("7", Some(250))
    );
    decoder.push(b"\xEF\xBB\xBFdata: y\n\n");
    let event = decoder.next_event().unwrap().unwrap();
    assert_eq!(
        (event.event_type(), event.data(), event.last_event_id()),
        ("message", "y", "7")
    );
}

fn limits(max_line_bytes: usize, max_event_bytes: usize) -> Limits {
    Limits {
        max_line_bytes,
        max_event_bytes,
    }
}

#[test]
fn line_at_the_limit_is_accepted_and_one_more_byte_is_not() {
    let ok = decode_every_way(limits(10, 100), b"data: 1234\n\n");
    assert_eq!((ok.events.len(), ok.error), (1, None));
    let too_long = decode_every_way(limits(10, 100), b"data: 12345\n\n");
    assert_eq!(too_long.error, Some(Error::LineTooLong { limit: 10 }));
    assert!(too_long.events.is_empty());
}

#[test]
fn comment_and_unknown_lines_count_against_the_line_limit() {
    for input in [
        &b": 123456789\n\n"[..],
        b"x: 12345678\n\n",
        b"retry: 1234\n\n",
    ] {
        let outcome = decode_every_way(limits(10, 100), input);
        assert_eq!(
            outcome.error,
            Some(Error::LineTooLong { limit: 10 }),
            "{input:?}"
        );
    }
}

#[test]
fn event_at_the_limit_is_accepted_and_one_more_byte_is_not() {
    // Joined data "abc\ndef" is 7 bytes.
    let ok = decode_every_way(limits(100, 7), b"data: abc\ndata: def\n\n");
    assert_eq!(ok.events.len(), 1);
    let too_large = decode_every_way(limits(100, 6), b"data: abc\ndata: def\n\n");
    assert_eq!(too_large.error, Some(Error::EventTooLarge { limit: 6 }));
    // The event type counts too.
    let typed = decode_every_way(limits(100, 6), b"event: abcd\ndata: def\n\n");
    assert_eq!(typed.error, Some(Error::EventTooLarge { limit: 6 }));
}

#[test]
fn replacement_characters_count_at_their_decoded_size() {
    // Four invalid bytes decode to 12 bytes of U+FFFD.
    let outcome = decode_every_way(limits(100, 10), b"data: \xFF\xFF\xFF\xFF\n\n");
    assert_eq!(outcome.error, Some(Error::EventTooLarge { limit: 10 }));
}

#[test]
fn events_before_an_error_are_delivered_then_the_error_sticks() {
    let mut decoder = Decoder::new(limits(8, 100));
    decoder.push(b"data: a\n\ndata: b\n\ndata: much too long\n\ndata: c\n\n");
    assert_eq!(decoder.next_event().unwrap().unwrap().data(), "a");
    assert_eq!(decoder.next_event().unwrap().unwrap().data(), "b");
    assert_eq!(decoder.next_event(), Err(Error::LineTooLong { limit: 8 }));
    decoder.push(b"data: d\n\n");
    assert_eq!(decoder.next_event(), Err(Error::LineTooLong { limit: 8 }));
}

#[test]
fn a_200_mb_line_without_newline_stays_within_limit_plus_one_chunk() {
    const CHUNK: usize = 16 * 1024;
    let limits = Limits::default();
    let chunk = vec![b'a'; CHUNK];
    for prefix in [&b"data: "[..], b": ", b"id: ", b"unknown: ", b""] {
        let mut decoder = Decoder::new(limits);
        decoder.push(prefix);
        let mut peak = 0;
        let mut error = None;
        for _ in 0..(200 * 1024 * 1024 / CHUNK) {
            decoder.push(&chunk);
            peak = peak.max(decoder.buffered_bytes());
            if let Err(e) = decoder.next_event() {
                error = Some(e);
            }
        }
        assert_eq!(
            error,
            Some(Error::LineTooLong {
                limit: limits.max_line_bytes
            }),
            "prefix {prefix:?}"
        );
        assert!(
            peak <= limits.max_line_bytes.max(limits.max_event_bytes) + CHUNK,
            "prefix {prefix:?}: peak {peak} bytes"
        );
        assert_eq!(
            decoder.buffered_bytes(),
            0,
            "a refused stream frees its buffers"
        );
    }
}

#[test]
fn many_data_lines_stay_within_the_event_limit() {
    let limits = limits(1024, 64 * 1024);
    let mut decoder = Decoder::new(limits);
    let line = [b"data: ".as_slice(), &[b'x'; 500], b"\n"].concat();
    let mut peak = 0;
    let mut error = None;
    for _ in 0..1000 {
        decoder.push(&line);
        peak = peak.max(decoder.buffered_bytes());
        if let Err(e) = decoder.next_event() {
            error = Some(e);
            break;
        }
    }
    assert_eq!(error, Some(Error::EventTooLarge { limit: 64 * 1024 }));
    assert!(peak <= 64 * 1024 + 1024, "peak {peak} bytes");
}

/// A small deterministic generator (xorshift64*), so failures reproduce from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pieces that exercise every rule when strung together at random.
const PIECES: &[&[u8]] = &[
    b"data",
    b"data:",
    b"data: ",
    b"event",
    b"event:",
    b"id",
    b"id:",
    b"retry:",
    b"retry",
    b":",
    b" ",
    b"\r",
    b"\n",
    b"\r\n",
    b"\n\n",
    b"\0",
    b"message",
    b"x",
    b"42",
    b"7",
    b"\xEF\xBB\xBF",
    b"\xE2",
    b"\x82",
    b"\xAC",
    b"\xF0\x9D\x84\x9E",
    b"\xFF",
    b"\xC3",
    b"\xA9",
    b"\xED\xA0\x80",
    b"{\"jsonrpc\":\"2.0\"}",
    b"foo",
    b"Data",
];

fn random_stream(rng: &mut Rng) -> Vec<u8> {
    let pieces = rng.below(40);
    let mut stream = Vec::new();
    for _ in 0..pieces {
        stream.extend_from_slice(PIECES[rng.below(PIECES.len())]);
    }
    stream
}

fn random_chunks<'a>(rng: &mut Rng, input: &'a [u8]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let take = 1 + rng.below(rest.len().min(9));
        let (chunk, after) = rest.split_at(take);
        chunks.push(chunk);
        rest = after;
    }
    chunks
}

#[test]
fn agrees_with_the_reference_on_random_streams_and_chunkings() {
    let mut rng = Rng(0x5EED_5EED_1234_5678);
    for case in 0..cases(20_000) {
        let stream = random_stream(&mut rng);
        let expected = reference(&stream);
        for _ in 0..4 {
            let chunks = random_chunks(&mut rng, &stream);
            let outcome = decode_chunks(Limits::default(), chunks.iter().copied());
            assert_eq!(
                outcome, expected,
                "case {case}: stream {stream:?} chunked as {chunks:?}"
            );
        }
    }
}

#[test]
fn agrees_with_the_reference_under_tight_limits() {
    // Under limits the decoder may stop early, but every event it did deliver is one the
    // reference delivers, in order.
    let mut rng = Rng(0xC0FF_EE00_D00D_F00D);
    for case in 0..cases(5_000) {
        let stream = random_stream(&mut rng);
        let expected = reference(&stream);
        let limits = limits(1 + rng.below(24), 1 + rng.below(24));
        let whole = decode_chunks(limits, [stream.as_slice()]);
        let chunks = random_chunks(&mut rng, &stream);
        let chunked = decode_chunks(limits, chunks.iter().copied());
        assert_eq!(whole, chunked, "case {case}: {stream:?} as {chunks:?}");
        if whole.error.is_none() {
            assert_eq!(whole, expected, "case {case}: {stream:?}");
        } else {
            assert!(
                expected.events.starts_with(&whole.events),
                "case {case}: {stream:?}"
            );
        }
    }
}

/// Case count for the random tests: the default keeps `cargo test` quick; set
/// `MCPWIRE_PROPTEST_CASES` for a longer run.
fn cases(default: usize) -> usize {
    std::env::var("MCPWIRE_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

#[test]
fn decode_reads_whole_lines_in_place_and_buffers_only_the_unfinished_end() {
    let big = "x".repeat(1024 * 1024);
    let stream = format!("event: message\ndata: {big}\n\ndata: unfin");
    let mut decoder = Decoder::new(Limits::default());
    let mut seen = Vec::new();
    decoder
        .decode(stream.as_bytes(), |event| {
            seen.push((event.event_type().len(), event.data().len()));
        })
        .unwrap();
    assert_eq!(seen, [(7, big.len())]);
    // The 1 MiB line was read where it was; only "data: unfin" was kept.
    assert!(
        decoder.buffered_bytes() < 4096,
        "{} bytes held",
        decoder.buffered_bytes()
    );
    decoder
        .decode(b"ished\n\n", |event| {
            seen.push((event.event_type().len(), event.data().len()))
        })
        .unwrap();
    assert_eq!(seen, [(7, big.len()), (7, "unfinished".len())]);
}

#[test]
fn decode_agrees_when_a_line_in_progress_runs_past_its_peek() {
    // The first chunk leaves a line open; the second finishes it after 6 KiB (past how far
    // `decode` looks before buffering a chunk whole) and holds more events after it.
    let long = "x".repeat(6 * 1024);
    let second = format!("{long}\n\nevent: e\ndata: y\n\ndata: partial");
    let third = "\ndata: z\n\n";
    for chunks in [
        vec![&b"data: "[..], second.as_bytes(), third.as_bytes()],
        vec![
            &b"data: "[..],
            &second.as_bytes()[..5000],
            &second.as_bytes()[5000..],
            third.as_bytes(),
        ],
    ] {
        let outcome = decode_chunks(Limits::default(), chunks);
        let data: Vec<&str> = outcome.events.iter().map(|(_, d, _)| d.as_str()).collect();
        assert_eq!(data, [long.as_str(), "y", "partial\nz"]);
        assert_eq!(outcome.events[1].0, "e");
    }
}
