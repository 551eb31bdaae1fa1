//! The event-stream decoder: bytes in, dispatched events out.
//!
//! The rules are those of the HTML standard, section 9.2.6 "Parsing an event stream" and
//! 9.2.7 "Interpreting an event stream"; comments below quote the rule each step implements.
//!
//! How it is fast: nearly every MCP stream is ASCII, so a push is copied into one buffer and
//! checked for ASCII and for its first and last line end in the same step (a push of up to
//! 64 bytes with four SSE2 compares); only other input goes through a UTF-8 decoder (the line
//! terminators and field syntax are ASCII, so decoding first and splitting lines after is
//! exactly the standard's order). Because the decoder knows where the last line end is,
//! `next_event` answers "nothing yet" without a search. Lines are interpreted in place, and an
//! event's type and single data line are handed out as slices: no allocation and no copy per
//! event. [`Decoder::decode`] goes one step further and reads the lines that lie wholly inside
//! its input without copying them at all. Only events with several data lines are assembled in
//! a second buffer.

use std::fmt;

use super::scan::{self, FirstAndLast, LineEnds, NotAscii};

/// The byte order mark that UTF-8 decoding strips once, at the start of the stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// The longest field name the decoder acts on (`retry`).
const LONGEST_FIELD_NAME: usize = 5;

/// Input is copied and scanned in blocks of at most this size, so that each block is still in
/// cache for the scan after its copy.
const BLOCK_BYTES: usize = 64 * 1024;

/// Interpreted input is dropped from the buffer once it is at least this large (or is most of
/// the buffer), so that small pushes do not each move the line in progress.
const COMPACT_BYTES: usize = 4096;

/// How far into its input [`Decoder::decode`] looks for the end of a line in progress before
/// it buffers the input whole.
const PEEK_BYTES: usize = 4096;

/// Past this size the input buffer grows straight to its bound (see [`Decoder::reserve`]).
const LARGE_BUFFER_BYTES: usize = 1024 * 1024;

/// A stretch of input without line ends at least this long is remembered by the push that
/// finds where it ends, so that `next_event` does not scan it a second time.
const LONG_LINE_BYTES: usize = 4096;

/// Size limits for one stream. Every byte the decoder keeps is counted against one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The longest line accepted, in bytes, not counting its line end. Comments and unknown
    /// fields count too: nothing unbounded is accepted even when it is not stored.
    pub max_line_bytes: usize,
    /// The largest event accepted: its joined data plus its event type, in bytes.
    pub max_event_bytes: usize,
}

impl Limits {
    /// Limits of `max_line_bytes` for a line and `max_event_bytes` for an event.
    pub const fn new(max_line_bytes: usize, max_event_bytes: usize) -> Self {
        Limits {
            max_line_bytes,
            max_event_bytes,
        }
    }
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
#[non_exhaustive]
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

/// Where the event type buffer's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventType {
    /// Empty: no `event` field since the last dispatch.
    Unset,
    /// The last `event` field's value is this range of the input buffer.
    InBuffer(usize, usize),
    /// Copied to `event_type_text`, because the input buffer dropped the line.
    Copied,
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
/// [`next_event`](Decoder::next_event) until it returns `None`; or hand each chunk to
/// [`decode`](Decoder::decode) with a closure for its events, which avoids copying whole lines.
/// The two can be mixed. The output does not depend on how the input was split. Nothing is read
/// from a socket or a clock.
///
/// Memory is bounded: the decoder keeps the unparsed input (the line in progress plus what the
/// last push brought), one event's data and a few short field values, each within
/// [`Limits`]. A line that grows past the limit is refused as it arrives, never buffered. The
/// input buffer keeps its capacity, so it may stay as large as the largest push needed.
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
    /// Decoded input, always valid UTF-8 (see [`source_text`]); everything before `pos` has
    /// been interpreted. Bytes rather than a `String` so that a push can be copied in first and
    /// checked for ASCII in place, in one pass.
    buf: Vec<u8>,
    /// Where the current line starts.
    pos: usize,
    /// Where the search for the current line's end goes on: `buf[pos..search_from]` holds no
    /// line end.
    search_from: usize,
    /// `buf[clean_from..]` holds no line end: it is just after the last line end pushed (0
    /// before the first). Kept up to date by every push, so `next_event` knows without
    /// searching when no complete line is left.
    clean_from: usize,
    /// A long stretch without line ends, `buf[start..end]`, found by a push that also held
    /// the lines before it (a whole stream in one push), so that `next_event` skips it.
    long_line: Option<(usize, usize)>,
    /// The line after the last line end is already over the line limit: further input is
    /// dropped, and `next_event` reports the error once it reaches that line.
    line_overflow: bool,
    /// See [`Decoder::is_plain`].
    plain: bool,
    /// The last line ended with a CR at the very end of the input, so an LF pushed next is
    /// the second half of that CRLF.
    skip_lf: bool,
    data: Data,
    data_joined: String,
    /// The event type buffer, usually left in the input buffer like a single data value.
    event_type: EventType,
    event_type_text: String,
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
            buf: Vec::new(),
            pos: 0,
            search_from: 0,
            clean_from: 0,
            long_line: None,
            line_overflow: false,
            plain: false,
            skip_lf: false,
            data: Data::None,
            data_joined: String::new(),
            event_type: EventType::Unset,
            event_type_text: String::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            id_changed: false,
            retry_ms: None,
            dispatched: false,
            error: None,
        }
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
    #[cfg(test)]
    pub(crate) fn is_between_events(&self) -> bool {
        self.pos == self.buf.len()
            && (self.dispatched || (self.data == Data::None && self.event_type(&[]).is_empty()))
    }

    /// Bytes of memory the decoder holds (capacity, not length): for input at most the line
    /// limit plus the largest push (three times it, when every byte was invalid UTF-8 and became
    /// U+FFFD), the event limit for joined data, and the line limit for each of the event type
    /// and the two id strings.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.buf.capacity()
            + self.data_joined.capacity()
            + self.event_type_text.capacity()
            + self.id_buffer.capacity()
            + self.last_event_id.capacity()
    }

    /// Feeds the next bytes of the stream. Take the events they complete with
    /// [`next_event`](Decoder::next_event) before pushing more: unparsed input is held until
    /// then.
    #[inline(always)]
    pub fn push(&mut self, input: &[u8]) {
        // The common push: a few bytes of plain ASCII in the middle of a stream, with room
        // in the buffer. Copied and scanned in one short step.
        if input.len() <= scan::SHORT_BYTES
            && self.buf.len() + input.len() <= self.buf.capacity()
            && self.is_plain()
        {
            let start = self.buf.len();
            self.buf.extend_from_slice(input);
            if let Ok(ends) = scan::scan_short(&self.buf, start) {
                return self.appended(start, ends);
            }
            self.buf.truncate(start);
        }
        self.push_any(input);
    }

    /// Whether a push needs no step but copying: no error, no BOM or CRLF half to look for, no
    /// partial UTF-8 sequence held. Kept in `plain`, because the shortest pushes ask on every
    /// call.
    #[inline(always)]
    fn is_plain(&self) -> bool {
        debug_assert_eq!(self.plain, self.compute_plain(), "stale `plain`");
        self.plain
    }

    fn compute_plain(&self) -> bool {
        self.bom_matched.is_none()
            && !self.skip_lf
            && self.utf8_carry_len == 0
            && !self.line_overflow
            && self.error.is_none()
    }

    /// Brings `plain` up to date after one of the fields it sums up changed.
    fn refresh_plain(&mut self) {
        self.plain = self.compute_plain();
    }

    /// [`push`](Decoder::push) for every case.
    fn push_any(&mut self, input: &[u8]) {
        self.push_steps(input);
        self.refresh_plain();
    }

    fn push_steps(&mut self, mut input: &[u8]) {
        if self.error.is_some() || self.line_overflow || input.is_empty() {
            return;
        }
        self.compact(input.len());
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
        if input.len() > BLOCK_BYTES {
            // Room for the whole push at once (up to the line limit), rather than growing
            // block by block and copying what is buffered at each doubling.
            self.reserve(input.len().min(self.limits.max_line_bytes));
        }
        for block in input.chunks(BLOCK_BYTES) {
            if self.line_overflow {
                return;
            }
            self.append(block);
        }
    }

    /// Appends `bytes` to the buffer and notes where their line ends are. ASCII (nearly every
    /// MCP stream) is copied and checked in one pass and needs no decoding; anything else goes
    /// through [`decode_utf8`](Decoder::decode_utf8).
    #[inline]
    fn append(&mut self, bytes: &[u8]) {
        let start = self.buf.len();
        self.reserve(bytes.len());
        if self.utf8_carry_len == 0 {
            self.buf.extend_from_slice(bytes);
            match scan::scan_appended(&self.buf, start, &self.line_ends) {
                Ok(ends) => return self.appended(start, ends),
                Err(NotAscii) => self.buf.truncate(start),
            }
        }
        self.decode_utf8(bytes);
        let ends = self.line_ends.first_and_last(&self.buf, start);
        self.appended(start, ends);
    }

    /// Records what the text appended at `start` brought: the position after its last line
    /// end, a long stretch without line ends that it closed, and whether the line it leaves
    /// open is already over the limit (checked here, as the input arrives, so that a line that
    /// never ends is refused before more of it is buffered).
    #[inline]
    fn appended(&mut self, start: usize, ends: Option<FirstAndLast>) {
        debug_assert!(self.clean_from <= start);
        if let Some((first, last)) = ends {
            if self.search_from >= self.clean_from {
                // No line end was pending, so `first` is the next one: `next_event` starts
                // there instead of searching for it.
                self.search_from = first;
            } else if first - self.clean_from >= LONG_LINE_BYTES {
                self.long_line = Some((self.clean_from, first));
            }
            self.clean_from = last + 1;
        }
        if self.buf.len() - self.clean_from > self.limits.max_line_bytes {
            self.line_overflow = true;
            self.plain = false;
        }
    }

    /// Decodes `bytes` onto the buffer: each invalid sequence becomes one U+FFFD (the WHATWG
    /// decoder's "maximal subpart" rule, which `std` follows too), and an incomplete sequence
    /// at the end waits for the next bytes.
    fn decode_utf8(&mut self, mut bytes: &[u8]) {
        const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();
        while self.utf8_carry_len > 0 {
            let Some((&next, after)) = bytes.split_first() else {
                break;
            };
            let mut sequence = self.utf8_carry;
            sequence[self.utf8_carry_len] = next;
            match std::str::from_utf8(&sequence[..=self.utf8_carry_len]) {
                Ok(complete) => {
                    self.buf.extend_from_slice(complete.as_bytes());
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
                    self.buf.extend_from_slice(REPLACEMENT);
                }
            }
        }
        while !bytes.is_empty() {
            match std::str::from_utf8(bytes) {
                Ok(valid) => {
                    self.buf.extend_from_slice(valid.as_bytes());
                    break;
                }
                Err(error) => {
                    let (valid, after) = bytes.split_at(error.valid_up_to());
                    self.buf.extend_from_slice(valid);
                    match error.error_len() {
                        Some(invalid) => {
                            self.buf.extend_from_slice(REPLACEMENT);
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
    }

    /// Grows the buffer for `added` more bytes, doubling as usual but not past the line limit
    /// plus the new bytes: a long line never holds twice the limit. Past
    /// [`LARGE_BUFFER_BYTES`] it grows to that bound at once: each doubling would copy the
    /// line again (a 10 MiB line arriving in pieces would be copied about twice over), while
    /// address space reserved and not yet written costs no memory on the platforms this runs
    /// on (the allocator maps large blocks lazily).
    fn reserve(&mut self, added: usize) {
        let needed = self.buf.len() + added;
        if needed > self.buf.capacity() {
            let bound = self.limits.max_line_bytes.saturating_add(added);
            let doubled = self.buf.capacity().saturating_mul(2);
            let target = if doubled > LARGE_BUFFER_BYTES {
                bound
            } else {
                doubled.min(bound)
            };
            self.buf.reserve_exact(target.max(needed) - self.buf.len());
        }
    }

    /// Takes the next dispatched event. `Ok(None)` means more input is needed. After an error,
    /// every call returns it.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<Event<'_>>, Error> {
        if self.search_from >= self.clean_from
            && !self.dispatched
            && !self.line_overflow
            && self.error.is_none()
        {
            // No complete line is waiting: the answer to most small pushes, given here
            // without a call.
            return Ok(None);
        }
        self.interpret_lines()
    }

    /// Decodes `input` and hands each event it completes to `on_event`, in order: the same
    /// as [`push`](Decoder::push) followed by [`next_event`](Decoder::next_event) until
    /// `None`, but lines that lie wholly inside `input` are read where they are, so their data
    /// is never copied (only a line or event left unfinished at the end of `input` is). Stops
    /// at the first error, after handing out the events before it.
    ///
    /// ```
    /// use mcpwire::sse::{Decoder, Limits};
    ///
    /// let mut decoder = Decoder::new(Limits::default());
    /// let mut data = Vec::new();
    /// decoder.decode(b"data: one\n\ndata: t", |event| data.push(event.data().to_owned()))?;
    /// decoder.decode(b"wo\n\n", |event| data.push(event.data().to_owned()))?;
    /// assert_eq!(data, ["one", "two"]);
    /// # Ok::<(), mcpwire::sse::Error>(())
    /// ```
    pub fn decode(
        &mut self,
        input: &[u8],
        mut on_event: impl FnMut(Event<'_>),
    ) -> Result<(), Error> {
        if input.len() <= scan::SHORT_BYTES {
            // A few bytes rarely hold a whole line: buffering them is cheaper. (Events still
            // in the buffer come out first all the same: it keeps the input in order.)
            self.push(input);
            return self.drain(&mut on_event);
        }
        self.drain(&mut on_event)?;
        let mut rest = input;
        if self.buf.len() - self.clean_from >= PEEK_BYTES && self.append_long_line(rest) {
            // The line in progress is already long: this piece most likely continues it, and
            // is buffered without looking for its end first.
            return self.drain(&mut on_event);
        }
        if !self.reads_in_place() {
            // Finish the line in progress (or the stream's start) the buffered way, up to the
            // first line end. Only the input's start is searched for it: a line still going
            // on past that is long, and the input is buffered whole (copied and checked in one
            // pass where the CPU allows, as `push` would otherwise).
            let peek = &rest[..rest.len().min(PEEK_BYTES)];
            let Some(offset) = self.line_ends.find(peek) else {
                if !self.append_long_line(rest) {
                    self.push(rest);
                }
                return self.drain(&mut on_event);
            };
            let crlf = rest[offset] == b'\r' && rest.get(offset + 1) == Some(&b'\n');
            let (head, tail) = rest.split_at(offset + 1 + usize::from(crlf));
            self.push(head);
            self.drain(&mut on_event)?;
            rest = tail;
        }
        if !self.reads_in_place() || !rest.is_ascii() {
            // Input that needs decoding (or a stream still in its first bytes) is buffered.
            self.push(rest);
            return self.drain(&mut on_event);
        }
        let mut at = 0;
        while let Some(&first) = rest.get(at) {
            // A blank line (every event ends with one) is found without a call into memchr.
            let offset = match first {
                b'\r' | b'\n' => 0,
                _ => match self.line_ends.find(&rest[at..]) {
                    Some(offset) => offset,
                    None => break,
                },
            };
            if offset > self.limits.max_line_bytes {
                let error = Error::LineTooLong {
                    limit: self.limits.max_line_bytes,
                };
                self.fail(error);
                return Err(error);
            }
            let end = at + offset;
            let next = match rest[end] {
                b'\r' => match rest.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    None => {
                        // An LF at the start of the next input completes this CRLF.
                        self.skip_lf = true;
                        self.plain = false;
                        end + 1
                    }
                },
                _ => end + 1,
            };
            if offset == 0 {
                // "If the line is empty (a blank line): dispatch the event."
                if self.dispatch() {
                    on_event(self.event(rest));
                    self.finish_dispatch();
                }
            } else {
                self.interpret(rest, INPUT_BASE + at, INPUT_BASE + end);
                if let Some(error) = self.error {
                    return Err(error);
                }
            }
            at = next;
        }
        self.keep_values_of(rest);
        self.push(&rest[at..]);
        self.drain(&mut on_event)
    }

    /// Appends a piece of a line in progress (which may end in it, and more lines follow)
    /// copying and scanning it in one pass; says whether it could (plain ASCII input, a CPU
    /// with AVX2).
    fn append_long_line(&mut self, input: &[u8]) -> bool {
        if !self.is_plain() || input.len() > BLOCK_BYTES {
            return false;
        }
        self.compact(input.len());
        self.reserve(input.len());
        let start = self.buf.len();
        match scan::append_scanning(&mut self.buf, input) {
            Some(Ok(ends)) => {
                self.appended(start, ends);
                true
            }
            Some(Err(NotAscii)) | None => false,
        }
    }

    /// Whether [`decode`](Decoder::decode) can read lines in place now: nothing held in the
    /// buffer but values of the pending event, and no decoding state to carry.
    fn reads_in_place(&self) -> bool {
        self.pos == self.buf.len() && self.is_plain()
    }

    /// Hands every complete event in the buffer to `on_event`.
    fn drain(&mut self, on_event: &mut impl FnMut(Event<'_>)) -> Result<(), Error> {
        while let Some(event) = self.next_event()? {
            on_event(event);
        }
        Ok(())
    }

    /// Copies the pending event's values that still point into `input` (read in place by
    /// [`decode`](Decoder::decode)) before it goes away.
    fn keep_values_of(&mut self, input: &[u8]) {
        if let Data::Borrowed(start, end) = self.data
            && start >= INPUT_BASE
        {
            self.reserve_joined(end - start);
            self.data_joined.clear();
            self.data_joined
                .push_str(source_text(&self.buf, input, start, end));
            self.data = Data::Joined;
        }
        if let EventType::InBuffer(start, end) = self.event_type
            && start >= INPUT_BASE
        {
            self.event_type_text.clear();
            self.event_type_text
                .push_str(source_text(&self.buf, input, start, end));
            self.event_type = EventType::Copied;
        }
    }

    /// [`next_event`](Decoder::next_event) when there may be something to do: interprets
    /// complete lines until one dispatches an event.
    fn interpret_lines(&mut self) -> Result<Option<Event<'_>>, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.dispatched {
            self.finish_dispatch();
        }
        loop {
            let bytes = self.buf.as_slice();
            let mut from = self.search_from;
            if let Some((start, end)) = self.long_line
                && (start..end).contains(&from)
            {
                from = end;
            }
            // Line ends lie before `clean_from` only. A blank line (every event ends with one)
            // is found without a call into memchr.
            let found = match bytes[..self.clean_from].get(from) {
                Some(b'\r' | b'\n') => Some(0),
                Some(_) => self.line_ends.find(&bytes[from..self.clean_from]),
                None => None,
            };
            let Some(offset) = found else {
                self.search_from = bytes.len();
                if self.line_overflow {
                    let error = Error::LineTooLong {
                        limit: self.limits.max_line_bytes,
                    };
                    self.fail(error);
                    return Err(error);
                }
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
                        self.refresh_plain();
                        end + 1
                    }
                },
                _ => end + 1,
            };
            self.search_from = self.pos;
            if end == line_start {
                // "If the line is empty (a blank line): dispatch the event."
                if self.dispatch() {
                    return Ok(Some(self.event(&[])));
                }
                continue;
            }
            self.interpret(&[], line_start, end);
            if let Some(error) = self.error {
                return Err(error);
            }
        }
    }

    /// Interprets one non-empty line, `buf[start..end]`.
    fn interpret(&mut self, input: &[u8], start: usize, end: usize) {
        let line = source(&self.buf, input, start, end);
        // "If the line starts with a U+003A COLON character (:): ignore the line."
        if line[0] == b':' {
            return;
        }
        // Nearly every line is a `data:` or an `event:` line; they skip the general field
        // parsing below.
        if line.starts_with(b"data:") {
            let skip = usize::from(line.get(5) == Some(&b' '));
            return self.data_field(input, start + 5 + skip, end);
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
                let skip = usize::from(value < end && line[colon + 1] == b' ');
                (start + colon, value + skip)
            }
            // "Otherwise, the string is not empty but does not contain a U+003A COLON
            // character (:): process the field using the whole line as the field name, and
            // the empty string as the field value."
            None if line.len() <= LONGEST_FIELD_NAME => (end, end),
            None => return,
        };
        match &line[..name_end - start] {
            b"data" => self.data_field(input, value_start, end),
            b"event" => self.event_field(value_start, end),
            // "If the field value does not contain U+0000 NULL, then set the last event ID
            // buffer to the field value. Otherwise, ignore the field."
            b"id" => {
                let value = source_text(&self.buf, input, value_start, end);
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
                let value = &line[value_start - start..];
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

    /// "Set the event type buffer to the field value." The value stays in the input buffer.
    #[inline]
    fn event_field(&mut self, start: usize, end: usize) {
        self.event_type = EventType::InBuffer(start, end);
        self.check_event_size();
    }

    /// "Append the field value to the data buffer, then append a single U+000A LINE FEED (LF)
    /// character to the data buffer." The LF is written before the next value instead, which
    /// leaves out the last LF that dispatch would remove. A single value stays in place.
    fn data_field(&mut self, input: &[u8], start: usize, end: usize) {
        match self.data {
            Data::None => {
                self.data = Data::Borrowed(start, end);
                self.check_event_size();
            }
            Data::Borrowed(first_start, first_end) => {
                let joined = (first_end - first_start) + 1 + (end - start);
                if !self.fits(joined) {
                    return;
                }
                self.reserve_joined(joined);
                self.data_joined.clear();
                self.data_joined
                    .push_str(source_text(&self.buf, input, first_start, first_end));
                self.data_joined.push('\n');
                self.data_joined
                    .push_str(source_text(&self.buf, input, start, end));
                self.data = Data::Joined;
            }
            Data::Joined => {
                let joined = self.data_joined.len() + 1 + (end - start);
                if !self.fits(joined) {
                    return;
                }
                self.reserve_joined(joined);
                self.data_joined.push('\n');
                self.data_joined
                    .push_str(source_text(&self.buf, input, start, end));
            }
        }
    }

    /// The event type buffer.
    fn event_type<'t>(&'t self, input: &'t [u8]) -> &'t str {
        match self.event_type {
            EventType::Unset => "",
            EventType::InBuffer(start, end) => source_text(&self.buf, input, start, end),
            EventType::Copied => &self.event_type_text,
        }
    }

    fn event_type_len(&self) -> usize {
        match self.event_type {
            EventType::Unset => 0,
            EventType::InBuffer(start, end) => end - start,
            EventType::Copied => self.event_type_text.len(),
        }
    }

    fn data_len(&self) -> usize {
        match self.data {
            Data::None => 0,
            Data::Borrowed(start, end) => end - start,
            Data::Joined => self.data_joined.len(),
        }
    }

    #[inline]
    fn fits(&mut self, data_len: usize) -> bool {
        if data_len + self.event_type_len() > self.limits.max_event_bytes {
            self.fail(Error::EventTooLarge {
                limit: self.limits.max_event_bytes,
            });
            return false;
        }
        true
    }

    #[inline]
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
            self.event_type = EventType::Unset;
            return false;
        }
        self.dispatched = true;
        true
    }

    /// Clears the event handed out, before the next line is interpreted.
    fn finish_dispatch(&mut self) {
        self.dispatched = false;
        self.data = Data::None;
        self.data_joined.clear();
        self.event_type = EventType::Unset;
    }

    /// The event just dispatched; ranges at or above [`INPUT_BASE`] are in `input`.
    fn event<'t>(&'t self, input: &'t [u8]) -> Event<'t> {
        let data = match self.data {
            Data::Borrowed(start, end) => source_text(&self.buf, input, start, end),
            Data::Joined => &self.data_joined,
            Data::None => "",
        };
        // "Initialize event's type attribute to "message" ... If the event type buffer has a
        // value other than the empty string, change the type of the newly created event to
        // equal the value of the event type buffer."
        let event_type = match self.event_type(input) {
            "" => "message",
            set => set,
        };
        Event {
            event_type,
            data,
            last_event_id: &self.last_event_id,
        }
    }

    /// Drops interpreted input before `added` more bytes arrive, keeping the current line and
    /// a single data value still in the buffer (its range moves with it). Small amounts are
    /// left until the buffer would have to grow, so that small pushes do not each move the line
    /// in progress.
    fn compact(&mut self, added: usize) {
        // Lines after a value still in the buffer (comments, ids) would stay pinned with it;
        // past a point the value is copied out instead, so such lines cannot grow the buffer.
        let pos = self.pos;
        let pinned_too_long = |start: usize, end: usize| pos - end > (end - start).max(4096);
        if let Data::Borrowed(start, end) = self.data
            && pinned_too_long(start, end)
        {
            self.reserve_joined(end - start);
            self.data_joined.clear();
            self.data_joined
                .push_str(source_text(&self.buf, &[], start, end));
            self.data = Data::Joined;
        }
        if let EventType::InBuffer(start, end) = self.event_type
            && pinned_too_long(start, end)
        {
            self.event_type_text.clear();
            self.event_type_text
                .push_str(source_text(&self.buf, &[], start, end));
            self.event_type = EventType::Copied;
        }
        let mut keep_from = self.pos;
        if let Data::Borrowed(start, _) = self.data {
            keep_from = keep_from.min(start);
        }
        if let EventType::InBuffer(start, _) = self.event_type {
            keep_from = keep_from.min(start);
        }
        // Drop a few interpreted kilobytes only when the buffer would otherwise grow, and not
        // when they are a small part of a long line in progress (the move would cost more
        // than the memory it frees).
        if keep_from == 0
            || (keep_from < COMPACT_BYTES
                && (keep_from * 2 < self.buf.len()
                    || self.buf.len() + added <= self.buf.capacity()))
        {
            return;
        }
        self.buf.drain(..keep_from);
        self.pos -= keep_from;
        self.search_from -= keep_from;
        self.clean_from -= keep_from;
        self.long_line = self
            .long_line
            .filter(|&(_, end)| end > keep_from)
            .map(|(start, end)| (start.saturating_sub(keep_from), end - keep_from));
        if let Data::Borrowed(start, end) = &mut self.data {
            *start -= keep_from;
            *end -= keep_from;
        }
        if let EventType::InBuffer(start, end) = &mut self.event_type {
            *start -= keep_from;
            *end -= keep_from;
        }
    }

    #[cold]
    #[inline(never)]
    fn fail(&mut self, error: Error) {
        self.error = Some(error);
        self.plain = false;
        // Free what a refused stream held.
        self.buf = Vec::new();
        self.data_joined = String::new();
        self.event_type = EventType::Unset;
        self.event_type_text = String::new();
        self.pos = 0;
        self.search_from = 0;
        self.clean_from = 0;
        self.long_line = None;
        self.line_overflow = false;
        self.data = Data::None;
        self.utf8_carry_len = 0;
    }
}

/// Where the decoder's positions at or above this refer while [`Decoder::decode`] reads lines
/// in place: to the input being decoded, at `position - INPUT_BASE`. The buffer never gets
/// this large (a `Vec` holds at most `isize::MAX` bytes).
const INPUT_BASE: usize = usize::MAX / 2 + 1;

/// The bytes of a range of the decoder's text: the buffer below [`INPUT_BASE`], `input`
/// above it.
#[inline]
fn source<'t>(buf: &'t [u8], input: &'t [u8], start: usize, end: usize) -> &'t [u8] {
    if start >= INPUT_BASE {
        &input[start - INPUT_BASE..end - INPUT_BASE]
    } else {
        &buf[start..end]
    }
}

/// [`source`] as text.
#[inline]
fn source_text<'t>(buf: &'t [u8], input: &'t [u8], start: usize, end: usize) -> &'t str {
    let bytes = source(buf, input, start, end);
    debug_assert!(std::str::from_utf8(bytes).is_ok());
    #[allow(unsafe_code)]
    // SAFETY: the decoder's text is valid UTF-8. The buffer only keeps bytes that
    // `scan_appended` found to be ASCII and text that `decode_utf8` took from `str::from_utf8` or
    // wrote as U+FFFD (a push that fails the ASCII check is truncated away before anything
    // reads it); input is read in place only after `is_ascii` said it is ASCII. Every range
    // taken from either starts and ends at an end of the text or next to an ASCII byte (a line
    // end, a field name's colon or the space after it), which are character boundaries.
    unsafe {
        std::str::from_utf8_unchecked(bytes)
    }
}
