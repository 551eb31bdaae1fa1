//! The event-stream decoder: bytes in, dispatched events out.
//!
//! The rules are those of the HTML standard, section 9.2.6 "Parsing an event stream" and
//! 9.2.7 "Interpreting an event stream"; comments below quote the rule each step implements.
//!
//! How it is fast: input is decoded from UTF-8 once, as it is pushed, into one buffer (the
//! line terminators and field syntax are ASCII, so decoding the stream first and splitting
//! lines after is exactly the standard's order). Lines are then found with `memchr` and
//! interpreted in place, and an event whose data is one line is handed out as a slice of that
//! buffer: no allocation and no copy per event. Only events with several data lines are
//! assembled in a second buffer.

use std::fmt;

/// The byte order mark that UTF-8 decoding strips once, at the start of the stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// The longest field name the decoder acts on (`retry`).
const LONGEST_FIELD_NAME: usize = 5;

/// Input is validated, copied and scanned in blocks of at most this size, so that each block
/// is still in cache for the next pass over it.
const BLOCK_BYTES: usize = 64 * 1024;

/// Blocks at least this large are scanned for the end of the current line as they are
/// appended.
const SCAN_IN_PUSH_BYTES: usize = 4096;

/// Interpreted input is dropped from the buffer once it is at least this large (or is most of
/// the buffer), so that small pushes do not each move the line in progress.
const COMPACT_BYTES: usize = 4096;

/// Finds the next CR or LF. On x86-64 an AVX2 (or else SSE2) searcher is built once per
/// decoder and called directly: most lines are short, and `memchr::memchr2`'s per-call
/// dispatch and setup cost more than scanning them (measured with callgrind on the parser
/// bench: 78 instructions a call).
#[derive(Clone, Copy, Debug)]
struct LineEnds {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::Two>,
    /// Always `Some` on x86-64, where SSE2 is part of the baseline.
    #[cfg(target_arch = "x86_64")]
    sse2: Option<memchr::arch::x86_64::sse2::memchr::Two>,
}

impl LineEnds {
    fn new() -> Self {
        LineEnds {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::Two::new(b'\r', b'\n'),
            #[cfg(target_arch = "x86_64")]
            sse2: memchr::arch::x86_64::sse2::memchr::Two::new(b'\r', b'\n'),
        }
    }

    #[inline]
    fn find(&self, haystack: &[u8]) -> Option<usize> {
        // AVX2 pays off on long haystacks; on short ones it only adds a step down to SSE2.
        #[cfg(target_arch = "x86_64")]
        if let Some(searcher) = self.avx2.as_ref().filter(|_| haystack.len() >= 64) {
            return searcher.find(haystack);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(searcher) = &self.sse2 {
            return searcher.find(haystack);
        }
        memchr::memchr2(b'\r', b'\n', haystack)
    }
}

/// Size limits for one stream. Every byte the decoder keeps is counted against one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest line accepted, in bytes, not counting its line end. Comments and unknown
    /// fields count too: nothing unbounded is accepted even when it is not stored.
    pub max_line_bytes: usize,
    /// The largest event accepted: its joined data plus its event type, in bytes.
    pub max_event_bytes: usize,
}

impl Default for Limits {
    /// 16 MiB for a line and for an event: above any tool result the default bindings accept.
    fn default() -> Self {
        Limits {
            max_line_bytes: 16 * 1024 * 1024,
            max_event_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Why a stream was refused. After an error the decoder drops further input and keeps
/// returning the same error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A line was longer than [`Limits::max_line_bytes`].
    LineTooLong {
        /// The limit that was exceeded, in bytes.
        limit: usize,
    },
    /// An event's data and type together were larger than [`Limits::max_event_bytes`].
    EventTooLarge {
        /// The limit that was exceeded, in bytes.
        limit: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LineTooLong { limit } => {
                write!(f, "event-stream line longer than the {limit}-byte limit")
            }
            Error::EventTooLarge { limit } => {
                write!(f, "event-stream event larger than the {limit}-byte limit")
            }
        }
    }
}

impl std::error::Error for Error {}

/// One dispatched event, borrowed from the decoder until the next call to
/// [`Decoder::next_event`] (use [`Event::to_owned`] to keep it longer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    event_type: &'a str,
    data: &'a str,
    last_event_id: &'a str,
}

impl<'a> Event<'a> {
    /// The event type: the last `event` field's value, or `message` when none was given or it
    /// was empty.
    pub fn event_type(&self) -> &'a str {
        self.event_type
    }

    /// The data: the values of the event's `data` fields joined with `\n`.
    pub fn data(&self) -> &'a str {
        self.data
    }

    /// The stream's last event id when this event was dispatched (`""` when none was set).
    pub fn last_event_id(&self) -> &'a str {
        self.last_event_id
    }

    /// An owned copy.
    pub fn to_owned(&self) -> OwnedEvent {
        OwnedEvent {
            event_type: self.event_type.to_owned(),
            data: self.data.to_owned(),
            last_event_id: self.last_event_id.to_owned(),
        }
    }
}

/// An [`Event`] that owns its text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedEvent {
    /// The event type.
    pub event_type: String,
    /// The data.
    pub data: String,
    /// The last event id when it was dispatched.
    pub last_event_id: String,
}

/// Where the pending event's data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Data {
    /// No `data` field yet.
    None,
    /// One `data` field so far: its value is this range of the input buffer.
    Borrowed(usize, usize),
    /// Several `data` fields: joined in `data_joined`.
    Joined,
}

/// A sans-IO decoder for one `text/event-stream`.
///
/// Push bytes as they arrive, in any chunking, then take events with
/// [`next_event`](Decoder::next_event) until it returns `None`. The output does not depend on
/// how the input was split. Nothing is read from a socket or a clock.
///
/// Memory is bounded: the decoder keeps the unparsed input (the line in progress plus what the
/// last push brought), one event's data and a few short field values, each within
/// [`Limits`]. A line that grows past the limit is refused as it arrives, never buffered.
///
/// ```
/// use mcpwire::sse::{Decoder, Limits};
///
/// let mut decoder = Decoder::new(Limits::default());
/// // A priming event (an id, empty data) and a message, with CRLF line ends split mid-pair.
/// decoder.push(b"id: ev-1\r\ndata: \r\nretry: 1500\r");
/// decoder.push(b"\n\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\n");
/// let priming = decoder.next_event()?.unwrap();
/// assert_eq!((priming.data(), priming.last_event_id()), ("", "ev-1"));
/// let message = decoder.next_event()?.unwrap();
/// assert_eq!(message.data(), "{\"a\":1}");
/// assert_eq!(decoder.retry_ms(), Some(1500));
/// assert!(decoder.next_event()?.is_none());
/// # Ok::<(), mcpwire::sse::Error>(())
/// ```
#[derive(Debug)]
pub struct Decoder {
    limits: Limits,
    line_ends: LineEnds,
    /// How many bytes of a leading BOM have been matched; `None` once the stream start is past.
    bom_matched: Option<usize>,
    /// A valid but incomplete UTF-8 sequence at the end of the input pushed so far.
    utf8_carry: [u8; 4],
    utf8_carry_len: usize,
    /// Decoded input; everything before `pos` has been interpreted.
    buf: String,
    /// Where the current line starts.
    pos: usize,
    /// How many bytes from `pos` are known to hold no line terminator.
    scanned: usize,
    /// The last line ended with a CR at the very end of the input, so an LF pushed next is
    /// the second half of that CRLF.
    skip_lf: bool,
    data: Data,
    data_joined: String,
    /// The event type buffer's value when `event_type_set`; otherwise the buffer is empty and
    /// this keeps the last value, so that the same type on the next event (nearly always
    /// `message`) is compared, not copied.
    event_type: String,
    event_type_set: bool,
    /// The last event ID buffer: set by `id` fields.
    id_buffer: String,
    /// The last event ID string: the buffer's value at the last dispatch.
    last_event_id: String,
    /// An `id` field was seen since the last dispatch.
    id_changed: bool,
    retry_ms: Option<u64>,
    /// An event was handed out; its buffers are cleared on the next call.
    dispatched: bool,
    error: Option<Error>,
}

impl Decoder {
    /// A decoder for a new stream.
    pub fn new(limits: Limits) -> Self {
        Decoder {
            limits,
            line_ends: LineEnds::new(),
            bom_matched: Some(0),
            utf8_carry: [0; 4],
            utf8_carry_len: 0,
            buf: String::new(),
            pos: 0,
            scanned: 0,
            skip_lf: false,
            data: Data::None,
            data_joined: String::new(),
            event_type: String::new(),
            event_type_set: false,
            id_buffer: String::new(),
            last_event_id: String::new(),
            id_changed: false,
            retry_ms: None,
            dispatched: false,
            error: None,
        }
    }

    /// The limits this decoder enforces.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Prepares for a new connection of the same event source: the next bytes start a new
    /// stream (a BOM may lead again, a partial event is dropped, any error is cleared), while
    /// the last event id and the reconnection time are kept, as an `EventSource` keeps them.
    pub fn reset_stream(&mut self) {
        let mut fresh = Decoder::new(self.limits);
        fresh.id_buffer = std::mem::take(&mut self.last_event_id);
        fresh.last_event_id = fresh.id_buffer.clone();
        fresh.retry_ms = self.retry_ms;
        *self = fresh;
    }

    /// The last event id of the stream: the value of the `id` field in force at the last
    /// dispatch (the `Last-Event-ID` to resume with). `""` when none was set.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time set by the last valid `retry` field, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Whether the stream is between events: all input interpreted, no partial line or event
    /// pending. A stream that ends when this is false ended inside an event, which is dropped.
    pub fn is_between_events(&self) -> bool {
        self.pos == self.buf.len()
            && (self.dispatched || (self.data == Data::None && self.event_type().is_empty()))
    }

    /// Bytes of memory the decoder holds (capacity, not length): at most the line limit plus
    /// the last push for input, the event limit for joined data, and the line limit for each of
    /// the event type and the two id strings.
    pub fn buffered_bytes(&self) -> usize {
        self.buf.capacity()
            + self.data_joined.capacity()
            + self.event_type.capacity()
            + self.id_buffer.capacity()
            + self.last_event_id.capacity()
    }

    /// Feeds the next bytes of the stream. Take the events they complete with
    /// [`next_event`](Decoder::next_event) before pushing more: unparsed input is held until
    /// then.
    pub fn push(&mut self, mut input: &[u8]) {
        if self.error.is_some() || input.is_empty() {
            return;
        }
        if self.bom_matched.is_none()
            && !self.skip_lf
            && self.utf8_carry_len == 0
            && input.len() < SCAN_IN_PUSH_BYTES
            && self.push_ascii(input)
        {
            // The common small push: mid-stream ASCII that `next_event` will scan.
            return;
        }
        // UTF-8 decode: "one leading U+FEFF BYTE ORDER MARK character must be ignored if any
        // are present". The three bytes may arrive in separate pushes.
        if let Some(matched) = self.bom_matched {
            let mut matched_now = matched;
            let mut used = 0;
            while matched_now < BOM.len() && used < input.len() && input[used] == BOM[matched_now] {
                matched_now += 1;
                used += 1;
            }
            if matched_now == BOM.len() {
                self.bom_matched = None;
                input = &input[used..];
            } else if used == input.len() {
                self.bom_matched = Some(matched_now);
                return;
            } else {
                // Not a BOM after all: what was held back is ordinary content.
                self.bom_matched = None;
                self.append(&BOM[..matched_now]);
                input = &input[used..];
            }
        }
        if self.skip_lf && !input.is_empty() {
            // The second half of a CRLF whose CR ended the input interpreted so far.
            self.skip_lf = false;
            if input[0] == b'\n' {
                input = &input[1..];
            }
        }
        // Room for the whole push at once (up to the line limit), rather than growing block
        // by block and copying what is buffered at each doubling.
        self.reserve(input.len().min(self.limits.max_line_bytes));
        for block in input.chunks(BLOCK_BYTES) {
            if self.error.is_some() {
                return;
            }
            self.append(block);
        }
    }

    /// Decodes `bytes` onto the buffer (each invalid sequence becomes one U+FFFD, the
    /// WHATWG decoder's "maximal subpart" rule, which `std` follows too; an incomplete sequence
    /// at the end waits for the next bytes), then scans the new text for the end of the current
    /// line while it is in cache, refusing a line that outgrows the limit.
    fn append(&mut self, mut bytes: &[u8]) {
        let start = self.buf.len();
        self.reserve(bytes.len());
        while self.utf8_carry_len > 0 {
            let Some((&next, after)) = bytes.split_first() else {
                break;
            };
            let mut sequence = self.utf8_carry;
            sequence[self.utf8_carry_len] = next;
            match std::str::from_utf8(&sequence[..=self.utf8_carry_len]) {
                Ok(complete) => {
                    self.buf.push_str(complete);
                    self.utf8_carry_len = 0;
                    bytes = after;
                }
                Err(error) if error.error_len().is_none() => {
                    self.utf8_carry = sequence;
                    self.utf8_carry_len += 1;
                    bytes = after;
                }
                Err(_) => {
                    // `next` cannot continue the sequence: the held bytes are one maximal
                    // subpart, and `next` starts afresh.
                    self.utf8_carry_len = 0;
                    self.buf.push(char::REPLACEMENT_CHARACTER);
                }
            }
        }
        if self.push_ascii(bytes) {
            bytes = &[];
        }
        while !bytes.is_empty() {
            match std::str::from_utf8(bytes) {
                Ok(valid) => {
                    self.buf.push_str(valid);
                    break;
                }
                Err(error) => {
                    let (valid, after) = bytes.split_at(error.valid_up_to());
                    self.buf
                        .push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(invalid) => {
                            self.buf.push(char::REPLACEMENT_CHARACTER);
                            bytes = &after[invalid..];
                        }
                        None => {
                            self.utf8_carry[..after.len()].copy_from_slice(after);
                            self.utf8_carry_len = after.len();
                            break;
                        }
                    }
                }
            }
        }
        if self.pos + self.scanned == start && (self.buf.len() - start >= SCAN_IN_PUSH_BYTES) {
            // The current line was open up to here and a large block arrived: look for the
            // line's end in the new text now, while it is in cache, and refuse a line that
            // outgrows the limit before more of it is buffered. (Small blocks are scanned by
            // `next_event`; scanning them here too would only add a call per push.)
            let found = self.line_ends.find(&self.buf.as_bytes()[start..]);
            self.scanned = match found {
                Some(offset) => start + offset - self.pos,
                None => self.buf.len() - self.pos,
            };
            if found.is_none() && self.scanned > self.limits.max_line_bytes {
                self.fail(Error::LineTooLong {
                    limit: self.limits.max_line_bytes,
                });
            }
        }
    }

    /// Appends `bytes` if they are all ASCII (nearly every MCP stream is), which needs no
    /// decoding; says whether it did. `from_utf8` would check them again at a fixed cost per
    /// call that dominates small pushes (measured with callgrind: about 120 instructions per
    /// 32-byte push, a quarter of the decoder's time on 1-64 byte chunks).
    #[inline]
    fn push_ascii(&mut self, bytes: &[u8]) -> bool {
        if !bytes.is_ascii() {
            return false;
        }
        self.reserve(bytes.len());
        #[allow(unsafe_code)]
        // SAFETY: every ASCII byte sequence is valid UTF-8.
        let text = unsafe { std::str::from_utf8_unchecked(bytes) };
        self.buf.push_str(text);
        true
    }

    /// Grows the buffer for `added` more bytes, doubling as usual but not past the line limit
    /// plus the new bytes: a long line never holds twice the limit.
    fn reserve(&mut self, added: usize) {
        let needed = self.buf.len() + added;
        if needed > self.buf.capacity() {
            let target = self
                .buf
                .capacity()
                .saturating_mul(2)
                .min(self.limits.max_line_bytes.saturating_add(added))
                .max(needed);
            self.buf.reserve_exact(target - self.buf.len());
        }
    }

    /// Takes the next dispatched event. `Ok(None)` means more input is needed. After an error,
    /// every call returns it.
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.dispatched {
            self.dispatched = false;
            self.data = Data::None;
            self.data_joined.clear();
            self.event_type_set = false;
        }
        loop {
            let bytes = self.buf.as_bytes();
            let from = self.pos + self.scanned;
            // A blank line (every event ends with one) is found without a call into memchr.
            let found = match bytes.get(from) {
                Some(b'\r' | b'\n') => Some(0),
                Some(_) => self.line_ends.find(&bytes[from..]),
                None => None,
            };
            let Some(offset) = found else {
                self.scanned = bytes.len() - self.pos;
                if self.scanned > self.limits.max_line_bytes {
                    let error = Error::LineTooLong {
                        limit: self.limits.max_line_bytes,
                    };
                    self.fail(error);
                    return Err(error);
                }
                self.compact();
                return Ok(None);
            };
            let end = from + offset;
            if end - self.pos > self.limits.max_line_bytes {
                self.fail(Error::LineTooLong {
                    limit: self.limits.max_line_bytes,
                });
                return Err(Error::LineTooLong {
                    limit: self.limits.max_line_bytes,
                });
            }
            let line_start = self.pos;
            self.pos = match bytes[end] {
                b'\r' => match bytes.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    None => {
                        // An LF pushed next completes this CRLF, unless bytes of an incomplete
                        // UTF-8 sequence already stand between them.
                        self.skip_lf = self.utf8_carry_len == 0;
                        end + 1
                    }
                },
                _ => end + 1,
            };
            self.scanned = 0;
            if end == line_start {
                // "If the line is empty (a blank line): dispatch the event."
                if self.dispatch() {
                    return Ok(Some(self.event()));
                }
                continue;
            }
            self.interpret(line_start, end);
            if let Some(error) = self.error {
                return Err(error);
            }
        }
    }

    /// Interprets one non-empty line, `buf[start..end]`.
    fn interpret(&mut self, start: usize, end: usize) {
        let line = &self.buf.as_bytes()[start..end];
        // "If the line starts with a U+003A COLON character (:): ignore the line."
        if line[0] == b':' {
            return;
        }
        // Nearly every line is a `data:` or an `event:` line; they skip the general field
        // parsing below.
        if line.starts_with(b"data:") {
            let skip = usize::from(line.get(5) == Some(&b' '));
            return self.data_field(start + 5 + skip, end);
        }
        if line.starts_with(b"event:") {
            let skip = usize::from(line.get(6) == Some(&b' '));
            return self.event_field(start + 6 + skip, end);
        }
        // "Collect the characters on the line before the first U+003A COLON character (:),
        // and let field be that string." Only names of up to five bytes matter, so the colon
        // is looked for among the first six.
        let head = &line[..line.len().min(LONGEST_FIELD_NAME + 1)];
        let (name_end, value_start) = match head.iter().position(|&b| b == b':') {
            Some(colon) => {
                // "If value starts with a U+0020 SPACE character, remove it from value."
                let value = start + colon + 1;
                let skip =
                    usize::from(self.buf.as_bytes().get(value) == Some(&b' ') && value < end);
                (start + colon, value + skip)
            }
            // "Otherwise, the string is not empty but does not contain a U+003A COLON
            // character (:): process the field using the whole line as the field name, and
            // the empty string as the field value."
            None if line.len() <= LONGEST_FIELD_NAME => (end, end),
            None => return,
        };
        match &self.buf.as_bytes()[start..name_end] {
            b"data" => self.data_field(value_start, end),
            b"event" => self.event_field(value_start, end),
            // "If the field value does not contain U+0000 NULL, then set the last event ID
            // buffer to the field value. Otherwise, ignore the field."
            b"id" => {
                let value = &self.buf[value_start..end];
                if !value.as_bytes().contains(&0) {
                    self.id_buffer.clear();
                    self.id_buffer.push_str(value);
                    self.id_changed = true;
                }
            }
            // "If the field value consists of only ASCII digits, then interpret the field value
            // as an integer in base ten, and set the event stream's reconnection time to that
            // integer. Otherwise, ignore the field." An empty value is ignored; a value too
            // large for u64 saturates.
            b"retry" => {
                let value = &self.buf.as_bytes()[value_start..end];
                if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                    self.retry_ms = Some(value.iter().fold(0u64, |ms, digit| {
                        ms.saturating_mul(10)
                            .saturating_add(u64::from(digit - b'0'))
                    }));
                }
            }
            _ => {}
        }
    }

    /// "Set the event type buffer to the field value."
    fn event_field(&mut self, start: usize, end: usize) {
        if end - start > self.limits.max_event_bytes {
            self.fail(Error::EventTooLarge {
                limit: self.limits.max_event_bytes,
            });
            return;
        }
        let value = &self.buf[start..end];
        if self.event_type != value {
            self.event_type.clear();
            self.event_type.push_str(value);
        }
        self.event_type_set = true;
        self.check_event_size();
    }

    /// "Append the field value to the data buffer, then append a single U+000A LINE FEED (LF)
    /// character to the data buffer." The LF is written before the next value instead, which
    /// leaves out the last LF that dispatch would remove. A single value stays in place.
    fn data_field(&mut self, start: usize, end: usize) {
        match self.data {
            Data::None => self.data = Data::Borrowed(start, end),
            Data::Borrowed(first_start, first_end) => {
                let joined = (first_end - first_start) + 1 + (end - start);
                if !self.fits(joined) {
                    return;
                }
                self.reserve_joined(joined);
                self.data_joined.clear();
                self.data_joined.push_str(&self.buf[first_start..first_end]);
                self.data_joined.push('\n');
                self.data_joined.push_str(&self.buf[start..end]);
                self.data = Data::Joined;
            }
            Data::Joined => {
                let joined = self.data_joined.len() + 1 + (end - start);
                if !self.fits(joined) {
                    return;
                }
                self.reserve_joined(joined);
                self.data_joined.push('\n');
                self.data_joined.push_str(&self.buf[start..end]);
            }
        }
        self.check_event_size();
    }

    /// The event type buffer.
    fn event_type(&self) -> &str {
        if self.event_type_set {
            &self.event_type
        } else {
            ""
        }
    }

    fn data_len(&self) -> usize {
        match self.data {
            Data::None => 0,
            Data::Borrowed(start, end) => end - start,
            Data::Joined => self.data_joined.len(),
        }
    }

    fn fits(&mut self, data_len: usize) -> bool {
        if data_len + self.event_type().len() > self.limits.max_event_bytes {
            self.fail(Error::EventTooLarge {
                limit: self.limits.max_event_bytes,
            });
            return false;
        }
        true
    }

    fn check_event_size(&mut self) {
        let data_len = self.data_len();
        self.fits(data_len);
    }

    /// Grows the joined data for `needed` bytes, doubling but never past the event limit.
    fn reserve_joined(&mut self, needed: usize) {
        if needed > self.data_joined.capacity() {
            let target = self
                .data_joined
                .capacity()
                .saturating_mul(2)
                .min(self.limits.max_event_bytes)
                .max(needed);
            self.data_joined
                .reserve_exact(target - self.data_joined.len());
        }
    }

    /// At a blank line ("Interpreting an event stream", dispatch steps): whether an event is
    /// ready to hand out.
    fn dispatch(&mut self) -> bool {
        // "Set the last event ID string of the event source to the value of the last event ID
        // buffer." This happens even when no event is dispatched.
        if self.id_changed {
            self.id_changed = false;
            self.last_event_id.clone_from(&self.id_buffer);
        }
        // "If the data buffer is an empty string, set the data buffer and the event type buffer
        // to the empty string and return."
        if self.data == Data::None {
            self.event_type_set = false;
            return false;
        }
        self.dispatched = true;
        true
    }

    fn event(&self) -> Event<'_> {
        let data = match self.data {
            Data::Borrowed(start, end) => &self.buf[start..end],
            Data::Joined => &self.data_joined,
            Data::None => "",
        };
        // "Initialize event's type attribute to "message" ... If the event type buffer has a
        // value other than the empty string, change the type of the newly created event to
        // equal the value of the event type buffer."
        let event_type = match self.event_type() {
            "" => "message",
            set => set,
        };
        Event {
            event_type,
            data,
            last_event_id: &self.last_event_id,
        }
    }

    /// Drops interpreted input, keeping the current line and a single data value still in the
    /// buffer (its range moves with it).
    fn compact(&mut self) {
        if let Data::Borrowed(start, end) = self.data
            && self.pos - end > (end - start).max(4096)
        {
            // Lines after the data value (comments, ids) would stay pinned with it; copy the
            // value out instead, so a stream of such lines cannot grow the buffer.
            self.reserve_joined(end - start);
            self.data_joined.clear();
            self.data_joined.push_str(&self.buf[start..end]);
            self.data = Data::Joined;
        }
        let keep_from = match self.data {
            Data::Borrowed(start, _) => start.min(self.pos),
            _ => self.pos,
        };
        if keep_from < COMPACT_BYTES && keep_from * 2 < self.buf.len() {
            return;
        }
        self.buf.drain(..keep_from);
        self.pos -= keep_from;
        if let Data::Borrowed(start, end) = &mut self.data {
            *start -= keep_from;
            *end -= keep_from;
        }
    }

    fn fail(&mut self, error: Error) {
        self.error = Some(error);
        // Free what a refused stream held.
        self.buf = String::new();
        self.data_joined = String::new();
        self.event_type = String::new();
        self.event_type_set = false;
        self.pos = 0;
        self.scanned = 0;
        self.data = Data::None;
        self.utf8_carry_len = 0;
    }
}
