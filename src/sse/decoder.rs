//! The event-stream decoder: bytes in, dispatched events out.
//!
//! The rules are those of the HTML standard, section 9.2.6 "Parsing an event stream" and
//! 9.2.7 "Interpreting an event stream"; comments below quote the rule each step implements.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// The byte order mark that UTF-8 decoding strips once, at the start of the stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// The longest field name the decoder acts on (`retry`); longer names are unknown fields.
const LONGEST_FIELD_NAME: usize = 5;

/// Values are scanned, validated and copied in steps of at most this size, so that the three
/// passes over a long line run on bytes that are still in cache.
const DATA_BLOCK_BYTES: usize = 64 * 1024;

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
/// returning the same error once the events decoded before it have been taken.
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

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    event_type: EventType,
    data: String,
    last_event_id: Arc<str>,
}

/// The event type, without an allocation for the default `message`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum EventType {
    Message,
    Other(Box<str>),
}

impl Event {
    /// The event type: the last `event` field's value, or `message` when none was given or it
    /// was empty.
    pub fn event_type(&self) -> &str {
        match &self.event_type {
            EventType::Message => "message",
            EventType::Other(name) => name,
        }
    }

    /// The data: the values of the event's `data` fields joined with `\n`.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// Takes the data without copying it.
    pub fn into_data(self) -> String {
        self.data
    }

    /// The stream's last event id when this event was dispatched (`""` when none was set).
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }
}

/// Where the decoder stands in the current line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// No byte of the line has been seen.
    Start,
    /// Reading the field name (its bytes so far are in `name`).
    Name,
    /// The colon was just read; one space after it is dropped.
    BeforeValue(Field),
    /// Reading the value, up to the line end.
    Value(Field),
}

/// The fields the decoder acts on; everything else, comments included, is `Ignored`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Id,
    Retry,
    Ignored,
}

impl Field {
    fn from_name(name: &[u8]) -> Field {
        match name {
            b"data" => Field::Data,
            b"event" => Field::Event,
            b"id" => Field::Id,
            b"retry" => Field::Retry,
            _ => Field::Ignored,
        }
    }
}

/// A sans-IO decoder for one `text/event-stream`.
///
/// Push bytes as they arrive, in any chunking, then take events with
/// [`next_event`](Decoder::next_event) until it returns `None`. The output does not depend on
/// how the input was split. Nothing is read from a socket or a clock.
///
/// Memory is bounded: the decoder keeps at most one event's data (up to
/// [`Limits::max_event_bytes`]), one short field value (up to [`Limits::max_line_bytes`]) and the
/// events decoded from the last chunk that have not been taken yet.
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
    /// How many bytes of a leading BOM have been matched; `None` once the stream start is past.
    bom_matched: Option<usize>,
    /// The last line ended with a CR, so an LF at the start of the next input completes it.
    skip_lf: bool,
    line: Line,
    line_bytes: usize,
    name: [u8; LONGEST_FIELD_NAME],
    name_len: usize,
    /// The value of the current `id` or `retry` line.
    value: Vec<u8>,
    /// The data buffer, decoded as it arrives.
    data: String,
    /// Whether a `data` field was seen since the last dispatch (the data may still be empty).
    has_data: bool,
    /// A valid but incomplete UTF-8 sequence at the end of the data pushed so far.
    utf8_carry: [u8; 4],
    utf8_carry_len: usize,
    event_type: Vec<u8>,
    /// The last event ID buffer: set by `id` fields.
    id_buffer: Arc<str>,
    /// The last event ID string: the buffer's value at the last dispatch.
    last_event_id: Arc<str>,
    retry_ms: Option<u64>,
    ready: VecDeque<Event>,
    error: Option<Error>,
}

impl Decoder {
    /// A decoder for a new stream.
    pub fn new(limits: Limits) -> Self {
        let empty: Arc<str> = Arc::from("");
        Decoder {
            limits,
            bom_matched: Some(0),
            skip_lf: false,
            line: Line::Start,
            line_bytes: 0,
            name: [0; LONGEST_FIELD_NAME],
            name_len: 0,
            value: Vec::new(),
            data: String::new(),
            has_data: false,
            utf8_carry: [0; 4],
            utf8_carry_len: 0,
            event_type: Vec::new(),
            id_buffer: empty.clone(),
            last_event_id: empty,
            retry_ms: None,
            ready: VecDeque::new(),
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
        let last_event_id = self.last_event_id.clone();
        let retry_ms = self.retry_ms;
        *self = Decoder::new(self.limits);
        self.id_buffer = last_event_id.clone();
        self.last_event_id = last_event_id;
        self.retry_ms = retry_ms;
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

    /// Whether the stream is between events: no partial line or event is pending. A stream
    /// that ends when this is false ended inside an event, which is then dropped.
    pub fn is_between_events(&self) -> bool {
        self.line == Line::Start && !self.has_data && self.event_type.is_empty()
    }

    /// Bytes of memory the decoder holds for the event and line in progress (capacity, not
    /// length): at most `max_event_bytes` for data, as much again for the event type and
    /// `max_line_bytes` for an `id` or `retry` value, whatever the input. Events decoded but
    /// not yet taken are counted by [`queued_bytes`](Decoder::queued_bytes).
    pub fn buffered_bytes(&self) -> usize {
        self.value.capacity() + self.data.capacity() + self.event_type.capacity()
    }

    /// Bytes of memory held by decoded events not yet taken with
    /// [`next_event`](Decoder::next_event).
    pub fn queued_bytes(&self) -> usize {
        self.ready
            .iter()
            .map(|event| event.data.capacity() + event.event_type().len())
            .sum()
    }

    /// Takes the next dispatched event. `Ok(None)` means more input is needed. Once the events
    /// decoded before an error have been taken, the error is returned on every call.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        match self.ready.pop_front() {
            Some(event) => Ok(Some(event)),
            None => self.error.map_or(Ok(None), Err),
        }
    }

    /// Feeds the next bytes of the stream. Events completed by them are queued for
    /// [`next_event`](Decoder::next_event); take them before pushing much more, since queued
    /// events are not counted against the limits.
    pub fn push(&mut self, mut input: &[u8]) {
        if self.error.is_some() {
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
                self.feed(&BOM[..matched_now]);
                input = &input[used..];
            }
        }
        self.feed(input);
    }

    fn feed(&mut self, input: &[u8]) {
        let mut pos = 0;
        if self.skip_lf && !input.is_empty() {
            // The second half of a CRLF whose CR ended the previous input.
            self.skip_lf = false;
            if input[0] == b'\n' {
                pos = 1;
            }
        }
        while pos < input.len() && self.error.is_none() {
            let rest = &input[pos..];
            match self.line {
                Line::Start => match rest[0] {
                    // "If the line is empty (a blank line): dispatch the event."
                    b'\r' | b'\n' => {
                        pos += self.end_line(rest);
                        self.dispatch();
                    }
                    // "If the line starts with a U+003A COLON character (:): ignore the line."
                    b':' => {
                        self.line = Line::Value(Field::Ignored);
                        self.line_bytes = 1;
                        pos += 1;
                    }
                    _ => {
                        self.line = Line::Name;
                        self.name_len = 0;
                    }
                },
                Line::Name => {
                    let end = memchr::memchr3(b':', b'\r', b'\n', rest);
                    let name_part = &rest[..end.unwrap_or(rest.len())];
                    if !self.count_line_bytes(name_part.len()) {
                        return;
                    }
                    pos += name_part.len();
                    let name_fits = self.name_len + name_part.len() <= LONGEST_FIELD_NAME;
                    if name_fits {
                        self.name[self.name_len..self.name_len + name_part.len()]
                            .copy_from_slice(name_part);
                        self.name_len += name_part.len();
                    } else {
                        // Too long to be a known field: the rest of the line is ignored.
                        self.line = Line::Value(Field::Ignored);
                        continue;
                    }
                    let Some(end) = end else { continue };
                    let field = Field::from_name(&self.name[..self.name_len]);
                    if rest[end] == b':' {
                        // "Collect the characters on the line before the first U+003A COLON
                        // character (:), and let field be that string."
                        if !self.count_line_bytes(1) {
                            return;
                        }
                        pos += 1;
                        self.begin_value(field);
                        self.line = Line::BeforeValue(field);
                    } else {
                        // "Otherwise, the string is not empty but does not contain a U+003A
                        // COLON character (:): process the field using the whole line as the
                        // field name, and the empty string as the field value."
                        self.begin_value(field);
                        self.finish_field(field);
                        pos += self.end_line(&rest[end..]);
                    }
                }
                Line::BeforeValue(field) => {
                    // "If value starts with a U+0020 SPACE character, remove it from value."
                    if rest[0] == b' ' {
                        if !self.count_line_bytes(1) {
                            return;
                        }
                        pos += 1;
                    }
                    self.line = Line::Value(field);
                }
                Line::Value(field) => {
                    // Each step stops one byte past the line's remaining room, so the line limit
                    // can only be crossed by a step's last byte, and after the event limit has
                    // been checked for the same bytes: which limit is reported then does not
                    // depend on how the input was chunked.
                    let room = self.limits.max_line_bytes - self.line_bytes;
                    let step = rest.len().min(room + 1).min(DATA_BLOCK_BYTES);
                    let scan = &rest[..step];
                    let end = memchr::memchr2(b'\r', b'\n', scan);
                    let value_part = &scan[..end.unwrap_or(scan.len())];
                    match field {
                        Field::Data => self.push_data(value_part),
                        Field::Event => {
                            extend_within(
                                &mut self.event_type,
                                value_part,
                                self.limits.max_event_bytes,
                            );
                            self.check_event_size();
                        }
                        Field::Id | Field::Retry => {
                            extend_within(&mut self.value, value_part, self.limits.max_line_bytes);
                        }
                        Field::Ignored => {}
                    }
                    if self.error.is_some() || !self.count_line_bytes(value_part.len()) {
                        return;
                    }
                    pos += value_part.len();
                    if let Some(end) = end {
                        self.finish_field(field);
                        pos += self.end_line(&rest[end..]);
                    }
                }
            }
        }
    }

    /// Consumes the line end at the start of `rest` (CR, LF or CRLF) and returns its length.
    /// A CR at the very end of the input may be the first half of a CRLF split across pushes.
    fn end_line(&mut self, rest: &[u8]) -> usize {
        self.line = Line::Start;
        self.line_bytes = 0;
        if rest[0] == b'\r' {
            match rest.get(1) {
                Some(b'\n') => 2,
                Some(_) => 1,
                None => {
                    self.skip_lf = true;
                    1
                }
            }
        } else {
            1
        }
    }

    /// Work done when a field's name is known, before any byte of its value.
    fn begin_value(&mut self, field: Field) {
        match field {
            // "Append the field value to the data buffer, then append a single U+000A LINE FEED
            // (LF) character to the data buffer." The LF is written before the next line's
            // value instead, which leaves out the last LF that dispatch would remove.
            Field::Data => {
                if self.has_data {
                    self.append_data("\n");
                }
                self.has_data = true;
            }
            // "Set the event type buffer to the field value."
            Field::Event => self.event_type.clear(),
            Field::Id | Field::Retry => self.value.clear(),
            Field::Ignored => {}
        }
    }

    /// Work done at the end of a field's line.
    fn finish_field(&mut self, field: Field) {
        match field {
            Field::Data => {
                if self.utf8_carry_len > 0 {
                    // The line ended inside a multi-byte sequence: one U+FFFD replaces it.
                    self.utf8_carry_len = 0;
                    self.append_data("\u{FFFD}");
                }
            }
            // "If the field value does not contain U+0000 NULL, then set the last event ID
            // buffer to the field value. Otherwise, ignore the field."
            Field::Id => {
                if !self.value.contains(&0) {
                    self.id_buffer = Arc::from(String::from_utf8_lossy(&self.value));
                }
            }
            // "If the field value consists of only ASCII digits, then interpret the field value
            // as an integer in base ten, and set the event stream's reconnection time to that
            // integer. Otherwise, ignore the field." An empty value is ignored; a value too
            // large for u64 saturates.
            Field::Retry => {
                if !self.value.is_empty() && self.value.iter().all(u8::is_ascii_digit) {
                    let ms = self.value.iter().fold(0u64, |ms, digit| {
                        ms.saturating_mul(10)
                            .saturating_add(u64::from(digit - b'0'))
                    });
                    self.retry_ms = Some(ms);
                }
            }
            Field::Event | Field::Ignored => {}
        }
    }

    /// Dispatches the event at a blank line ("Interpreting an event stream", dispatch steps).
    fn dispatch(&mut self) {
        // "Set the last event ID string of the event source to the value of the last event ID
        // buffer." This happens even when no event is dispatched.
        self.last_event_id = self.id_buffer.clone();
        // "If the data buffer is an empty string, set the data buffer and the event type buffer
        // to the empty string and return."
        if !self.has_data {
            self.event_type.clear();
            return;
        }
        self.has_data = false;
        let data = std::mem::take(&mut self.data);
        // "Initialize event's type attribute to "message" ... If the event type buffer has a
        // value other than the empty string, change the type of the newly created event to
        // equal the value of the event type buffer."
        let event_type = match self.event_type.as_slice() {
            b"" | b"message" => EventType::Message,
            other => EventType::Other(String::from_utf8_lossy(other).into()),
        };
        self.event_type.clear();
        self.ready.push_back(Event {
            event_type,
            data,
            last_event_id: self.last_event_id.clone(),
        });
    }

    /// Appends part of a data value, decoding UTF-8 as it goes: each invalid sequence becomes
    /// one U+FFFD (the WHATWG decoder's "maximal subpart" rule, which `std` follows too) and an
    /// incomplete sequence at the end waits for the next bytes.
    fn push_data(&mut self, bytes: &[u8]) {
        // Each input byte adds at least one byte to the event size (see `event_size`), so an
        // event that cannot fit is refused before its bytes are copied.
        if self.event_size() + bytes.len() > self.limits.max_event_bytes {
            self.fail(Error::EventTooLarge {
                limit: self.limits.max_event_bytes,
            });
            return;
        }
        self.reserve_data(bytes.len());
        self.decode_data(bytes);
    }

    fn decode_data(&mut self, mut bytes: &[u8]) {
        while self.utf8_carry_len > 0 {
            let Some((&next, after)) = bytes.split_first() else {
                return;
            };
            let mut sequence = self.utf8_carry;
            sequence[self.utf8_carry_len] = next;
            match std::str::from_utf8(&sequence[..=self.utf8_carry_len]) {
                Ok(complete) => {
                    self.utf8_carry_len = 0;
                    if !self.append_data(complete) {
                        return;
                    }
                    bytes = after;
                }
                Err(error) if error.error_len().is_none() => {
                    self.utf8_carry = sequence;
                    self.utf8_carry_len += 1;
                    self.check_event_size();
                    bytes = after;
                }
                Err(_) => {
                    // `next` cannot continue the sequence: the held bytes are one maximal
                    // subpart, and `next` starts afresh.
                    self.utf8_carry_len = 0;
                    if !self.append_data("\u{FFFD}") {
                        return;
                    }
                }
            }
        }
        loop {
            let (valid, rest) = match std::str::from_utf8(bytes) {
                Ok(valid) => (valid, None),
                Err(error) => {
                    let (valid, after) = bytes.split_at(error.valid_up_to());
                    (
                        std::str::from_utf8(valid).unwrap_or_default(),
                        Some((after, error.error_len())),
                    )
                }
            };
            if !self.append_data(valid) {
                return;
            }
            match rest {
                None => return,
                Some((after, Some(invalid))) => {
                    if !self.append_data("\u{FFFD}") {
                        return;
                    }
                    bytes = &after[invalid..];
                }
                Some((after, None)) => {
                    self.utf8_carry[..after.len()].copy_from_slice(after);
                    self.utf8_carry_len = after.len();
                    self.check_event_size();
                    return;
                }
            }
        }
    }

    /// Appends decoded data, refusing the event if it would pass the limit. Growth goes through
    /// `reserve_data`, so the buffer's capacity never passes the limit either.
    fn append_data(&mut self, decoded: &str) -> bool {
        let limit = self.limits.max_event_bytes;
        if self.data.len() + decoded.len() + self.event_type.len() > limit {
            self.fail(Error::EventTooLarge { limit });
            return false;
        }
        self.reserve_data(decoded.len());
        self.data.push_str(decoded);
        true
    }

    /// Counts bytes of the current line against the limit; on overflow records the error.
    fn count_line_bytes(&mut self, added: usize) -> bool {
        self.line_bytes += added;
        if self.line_bytes > self.limits.max_line_bytes {
            self.fail(Error::LineTooLong {
                limit: self.limits.max_line_bytes,
            });
            return false;
        }
        true
    }

    /// The size charged to the current event: decoded data, the raw bytes of a pending
    /// partial UTF-8 sequence, and the raw event type. It never shrinks as input is consumed
    /// and grows by at least one per byte of data or event type, which keeps limit checks
    /// independent of chunking.
    fn event_size(&self) -> usize {
        self.data.len() + self.utf8_carry_len + self.event_type.len()
    }

    fn check_event_size(&mut self) {
        if self.event_size() > self.limits.max_event_bytes {
            self.fail(Error::EventTooLarge {
                limit: self.limits.max_event_bytes,
            });
        }
    }

    /// Reserves room for `added` more data bytes, doubling as usual but never past the limit,
    /// so a buffer near the limit does not hold twice the limit.
    fn reserve_data(&mut self, added: usize) {
        let needed = self.data.len() + added;
        if needed > self.data.capacity() {
            let target = self
                .data
                .capacity()
                .saturating_mul(2)
                .min(self.limits.max_event_bytes)
                .max(needed);
            self.data.reserve_exact(target - self.data.len());
        }
    }

    fn fail(&mut self, error: Error) {
        self.error = Some(error);
        // Free what a refused stream held; only the events already decoded are kept.
        self.data = String::new();
        self.value = Vec::new();
        self.event_type = Vec::new();
        self.has_data = false;
        self.utf8_carry_len = 0;
    }
}

/// Appends to a field buffer, growing it by doubling as usual but never past `max` bytes of
/// capacity unless the content itself needs more (callers keep the content within `max + 1`).
fn extend_within(buffer: &mut Vec<u8>, bytes: &[u8], max: usize) {
    let needed = buffer.len() + bytes.len();
    if needed > buffer.capacity() {
        let target = buffer.capacity().saturating_mul(2).min(max).max(needed);
        buffer.reserve_exact(target - buffer.len());
    }
    buffer.extend_from_slice(bytes);
}
