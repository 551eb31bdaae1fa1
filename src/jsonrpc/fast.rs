//! A hand-written reader for ordinary small messages, tried before the serde pass by the typed
//! decoders.
//!
//! For a small message the fixed costs of serde_json's general machinery dominate: its string
//! scanner set up for every member name, its number parser, the envelope read as raw values.
//! Most messages are compact or pretty-printed JSON with the envelope members only, strings
//! without escapes, integer or short decimal numbers. This reader takes exactly those. It scans
//! the envelope by hand and builds the same [`Envelope`] the serde pass builds, so that
//! [`classify_envelope`] applies the same rules; it reads `params` or `result` with [`Reader`],
//! a serde `Deserializer` that makes the visitor calls serde_json makes for the same text. On
//! anything else (an escape, an unknown or repeated member, an `error` member, an exponent, a
//! payload that does not fit its type) it gives up and the serde pass reads the message from
//! the start; it never reports an error itself, so every error is serde_json's or the rules'.
//!
//! The tests below, and the typed half of the fuzz harness (`fuzz_roundtrip`), check both
//! readers against each other, with and without serde_json's `float_roundtrip` feature. With its
//! `arbitrary_precision` feature serde_json hands numbers to visitors differently; the crate does
//! not enable it.
//!
//! [`classify_envelope`]: super::decode::classify_envelope

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::Id;
use super::decode::{ENVELOPE, Envelope, IdMember, parse_integer};

/// Inputs longer than this go straight to the serde pass. For them the envelope is a small part
/// of the work, and giving up late (an unknown member after a large result) would read the
/// payload twice.
pub(super) const MAX_BYTES: usize = 16 * 1024;

/// Where the fast reader puts `params` and `result`.
pub(super) trait FastPayloads<'a> {
    /// Forgets what was read, for the serde pass after the fast reader gave up.
    fn reset(&mut self);
    /// Reads the structured `params` value at the start of `text` (which starts with `{` or
    /// `[`) and returns its length, or `None` to give up.
    fn params(&mut self, text: &'a str) -> Option<usize>;
    /// Reads the `result` value at the start of `text` and returns its length, or `None` to
    /// give up.
    fn result(&mut self, text: &'a str) -> Option<usize>;
}

/// Reads the envelope of `text` (valid UTF-8), or gives up with `None`.
pub(super) fn read<'a, M: FastPayloads<'a>>(
    text: &'a str,
    payloads: &mut M,
) -> Option<Envelope<'a>> {
    let b = text.as_bytes();
    let mut env = Envelope::new();
    let mut seen = [false; ENVELOPE.len()];
    let mut i = skip_ws(b, 0);
    if *b.get(i)? != b'{' {
        return None;
    }
    i = skip_ws(b, i + 1);
    if *b.get(i)? == b'}' {
        i += 1;
    } else {
        loop {
            let (index, next) = member_name(b, i)?;
            if std::mem::replace(seen.get_mut(index)?, true) {
                return None;
            }
            i = skip_ws(b, next);
            if *b.get(i)? != b':' {
                return None;
            }
            i = skip_ws(b, i + 1);
            i = match index {
                0 => {
                    if b.get(i..i + 5) == Some(b"\"2.0\"") {
                        env.jsonrpc = Some(true);
                        i + 5
                    } else {
                        let (version, next) = plain_str(text, i)?;
                        env.jsonrpc = Some(version == "2.0");
                        next
                    }
                }
                1 => {
                    let (id, next) = id(text, i)?;
                    env.id = Some(IdMember::Parsed(id));
                    next
                }
                2 => {
                    let (method, next) = plain_str(text, i)?;
                    env.method = Some(Ok(Cow::Borrowed(method)));
                    next
                }
                3 => {
                    // Spec §4.2: a structured value; anything else is for the serde pass to
                    // report.
                    if !matches!(b.get(i), Some(b'{' | b'[')) {
                        return None;
                    }
                    env.params = Some(Ok(()));
                    i + payloads.params(text.get(i..)?)?
                }
                4 => {
                    env.result = true;
                    i + payloads.result(text.get(i..)?)?
                }
                _ => return None,
            };
            i = skip_ws(b, i);
            match *b.get(i)? {
                b',' => i = skip_ws(b, i + 1),
                b'}' => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_ws(b, i) == b.len()).then_some(env)
}

/// The envelope member whose name (a plain string) is at `i`: its index in [`ENVELOPE`], and
/// the index after the name's closing quote.
fn member_name(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let rest = b.get(i..)?;
    // Each comparison is with a constant, which compiles to a few word compares.
    let (index, len) = match rest.get(1)? {
        b'j' if rest.starts_with(b"\"jsonrpc\"") => (0, 9),
        b'i' if rest.starts_with(b"\"id\"") => (1, 4),
        b'm' if rest.starts_with(b"\"method\"") => (2, 8),
        b'p' if rest.starts_with(b"\"params\"") => (3, 8),
        b'r' if rest.starts_with(b"\"result\"") => (4, 8),
        b'e' if rest.starts_with(b"\"error\"") => (5, 7),
        _ => return None,
    };
    Some((index, i + len))
}

/// The index of the first byte at or after `i` that is not JSON whitespace (RFC 8259 §2).
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// A JSON string at `i` without escapes or control characters: its contents and the index
/// after its closing quote.
fn plain_str(text: &str, i: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if *b.get(i)? != b'"' {
        return None;
    }
    let start = i + 1;
    let len = stop(b.get(start..)?)?;
    let end = start + len;
    if *b.get(end)? != b'"' {
        return None;
    }
    Some((text.get(start..end)?, end + 1))
}

/// The index of the first byte of `b` that ends a plain string: the closing quote, a backslash
/// (an escape) or a control character, which RFC 8259 §7 does not allow unescaped.
///
/// Eight bytes at a time: in each 64-bit word, the high bit of a byte is set in
/// `(x - 0x0101..01 * k) & !x` when the byte is below `k`, and in `(y - 0x0101..01) & !y` with
/// `y = x ^ 0x0101..01 * c` when the byte is `c`. A byte above a match may be flagged too (the
/// subtraction borrows through it), so only the lowest flag counts, and it is always a match.
/// Bytes from 0x80 up (UTF-8 sequences) have the high bit set in `x`, so they are never flagged.
fn stop(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let has = |x: u64, c: u8| {
        let y = x ^ (ONES * u64::from(c));
        y.wrapping_sub(ONES) & !y
    };
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().ok()?);
        let control = x.wrapping_sub(ONES * 0x20) & !x;
        let found = (control | has(x, b'"') | has(x, b'\\')) & HIGH;
        if found != 0 {
            return Some(i + found.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    let tail = b.get(i..)?;
    tail.iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| i + p)
}

/// An id at `i`: a plain string, an integer that fits `i64` (RFC 8259 §6 grammar, no fraction
/// or exponent), or `null` (`None`); and the index after it.
fn id(text: &str, i: usize) -> Option<(Option<Id>, usize)> {
    let b = text.as_bytes();
    match *b.get(i)? {
        b'"' => {
            let (id, next) = plain_str(text, i)?;
            Some((Some(Id::String(id.to_owned())), next))
        }
        b'n' => (text.get(i..i + 4)? == "null").then_some((None, i + 4)),
        _ => {
            let rest = b.get(i..)?;
            let len = rest
                .iter()
                .position(|c| !matches!(c, b'-' | b'0'..=b'9'))
                .unwrap_or(rest.len());
            let number = text.get(i..i + len)?;
            let digits = number.strip_prefix('-').unwrap_or(number);
            let plain = !digits.is_empty()
                && digits.bytes().all(|c| c.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'));
            if !plain {
                return None;
            }
            let n = parse_integer(number).ok()?;
            Some((Some(Id::Number(n)), i + len))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A serde `Deserializer` for compact payloads.

/// The fast reader gave up; the serde pass will read the message and report any error.
#[derive(Debug)]
pub(super) struct GiveUp;

impl fmt::Display for GiveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not for the fast reader")
    }
}

impl std::error::Error for GiveUp {}

impl de::Error for GiveUp {
    fn custom<T: fmt::Display>(_: T) -> Self {
        GiveUp
    }
}

/// Reads one payload value (`params` or `result`) into any `Deserialize` type, making exactly
/// the visitor calls serde_json makes for the same text, so that the value is the same.
///
/// It reads plain strings (borrowed, as serde_json borrows them), integers, decimals whose value
/// is one exact division (see [`Reader::number`]), `true`, `false`, `null`, arrays and objects,
/// with serde_json's nesting limit. Anything else (an escape, an exponent, a number serde_json
/// reads differently, a request serde_json would refuse, such as a map where there is no object)
/// makes it give up rather than guess.
pub(super) struct Reader<'a> {
    text: &'a str,
    pos: usize,
    /// serde_json's `remaining_depth`: 128 at the top of a message, one level used by the
    /// envelope, and one more for each array or object entered; 0 is too deep.
    depth: u8,
    /// Set when the reader gave up. A visitor may swallow an error and go on, and the reader
    /// may have given up where serde_json would not; once set, every later read fails and
    /// [`Reader::consumed`] says there is no value.
    failed: bool,
}

impl<'a> Reader<'a> {
    /// A reader for the value at the start of `text`, a member of the envelope object.
    pub(super) fn payload(text: &'a str) -> Self {
        Reader {
            text,
            pos: 0,
            depth: 127,
            failed: false,
        }
    }

    /// How many bytes of the text the value took, or `None` if the reader gave up on the way.
    pub(super) fn consumed(&self) -> Option<usize> {
        (!self.failed).then_some(self.pos)
    }

    /// Gives up for good.
    fn fail(&mut self) -> GiveUp {
        self.failed = true;
        GiveUp
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, without consuming it.
    fn peek(&mut self) -> Result<u8, GiveUp> {
        if self.failed {
            return Err(self.fail());
        }
        self.pos = skip_ws(self.bytes(), self.pos);
        match self.bytes().get(self.pos) {
            Some(&b) => Ok(b),
            None => Err(self.fail()),
        }
    }

    /// Consumes `expected` after optional whitespace.
    fn expect(&mut self, expected: u8) -> Result<(), GiveUp> {
        if self.peek()? == expected {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.fail())
        }
    }

    /// Consumes a literal (`null`, `true`, `false`) at the current position.
    fn literal(&mut self, literal: &[u8]) -> Result<(), GiveUp> {
        let end = self.pos + literal.len();
        if self.bytes().get(self.pos..end) == Some(literal) {
            self.pos = end;
            Ok(())
        } else {
            Err(self.fail())
        }
    }

    /// A plain string at the current position.
    fn string(&mut self) -> Result<&'a str, GiveUp> {
        let (s, next) = plain_str(self.text, self.pos).ok_or_else(|| self.fail())?;
        self.pos = next;
        Ok(s)
    }

    /// Enters an array or object at the current position (serde_json's `check_recursion!`).
    fn enter(&mut self) -> Result<(), GiveUp> {
        match self.depth.checked_sub(1) {
            Some(depth) if depth > 0 => {
                self.depth = depth;
                self.pos += 1;
                Ok(())
            }
            _ => Err(self.fail()),
        }
    }

    /// Leaves an array or object at its closing byte.
    fn leave(&mut self, close: u8) -> Result<(), GiveUp> {
        self.depth = self.depth.saturating_add(1);
        self.expect(close)
    }

    /// A number at the current position, as serde_json reads it (`parse_integer`,
    /// `parse_number`): an integer without fraction or exponent is `u64` when positive, `i64`
    /// when negative, and `f64` for `-0`. A decimal `-?int.frac` is read when its digits fit a
    /// `u64` below 2^53 and it has at most 22 fraction digits: its value is then the integer of
    /// all its digits divided by 10^frac, one exact IEEE division, which is what serde_json
    /// computes both with and without its `float_roundtrip` feature. Other numbers (exponents,
    /// more digits) make the reader give up.
    fn number(&mut self) -> Result<Number, GiveUp> {
        let b = self.bytes();
        let mut i = self.pos;
        let negative = b.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        // Digits accumulate with wrapping arithmetic; more than 19 make the reader give up
        // below, before the value is used.
        let mut significand: u64 = 0;
        let int_start = i;
        while let Some(&c @ b'0'..=b'9') = b.get(i) {
            significand = significand
                .wrapping_mul(10)
                .wrapping_add(u64::from(c - b'0'));
            i += 1;
        }
        let int_len = i - int_start;
        // RFC 8259 §6: at least one digit, no leading zero.
        if int_len == 0 || (int_len > 1 && b.get(int_start) == Some(&b'0')) || int_len > 19 {
            return Err(self.fail());
        }
        let number = match b.get(i) {
            Some(b'.') => {
                i += 1;
                let frac_start = i;
                while let Some(&c @ b'0'..=b'9') = b.get(i) {
                    significand = significand
                        .wrapping_mul(10)
                        .wrapping_add(u64::from(c - b'0'));
                    i += 1;
                }
                let frac_len = i - frac_start;
                if frac_len == 0 || int_len + frac_len > 19 || significand >= 1 << 53 {
                    return Err(self.fail());
                }
                let value = significand as f64 / POW10.get(frac_len).ok_or_else(|| self.fail())?;
                Number::F64(if negative { -value } else { value })
            }
            _ if !negative => Number::U64(significand),
            _ => {
                // serde_json: "Convert into a float if we underflow, or on `-0`."
                let neg = (significand as i64).wrapping_neg();
                if neg >= 0 {
                    Number::F64(-(significand as f64))
                } else {
                    Number::I64(neg)
                }
            }
        };
        if matches!(b.get(i), Some(b'e' | b'E')) {
            return Err(self.fail());
        }
        self.pos = i;
        Ok(number)
    }

    /// Skips one value, checking its syntax as serde_json's `ignore_value` does (which has no
    /// nesting limit).
    fn skip(&mut self) -> Result<(), GiveUp> {
        // Open arrays and objects, innermost last: a bit per level, 1 for an object.
        let mut stack: u64 = 0;
        let mut open = 0u32;
        loop {
            match self.peek()? {
                b'n' => self.literal(b"null")?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => self.skip_number()?,
                c @ (b'[' | b'{') => {
                    if open == 64 {
                        return Err(self.fail());
                    }
                    self.pos += 1;
                    stack = stack << 1 | u64::from(c == b'{');
                    open += 1;
                    let close = if c == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.pos += 1;
                        stack >>= 1;
                        open -= 1;
                    } else {
                        if c == b'{' {
                            self.key_colon()?;
                        }
                        continue;
                    }
                }
                _ => return Err(self.fail()),
            }
            // After a value: a comma and the next one, or the end of the enclosing container.
            loop {
                if open == 0 {
                    return Ok(());
                }
                let object = stack & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.pos += 1;
                        if object {
                            self.peek()?;
                            self.key_colon()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return Err(self.fail()),
                }
                self.pos += 1;
                stack >>= 1;
                open -= 1;
            }
        }
    }

    /// A member name and its colon, in an object being skipped.
    fn key_colon(&mut self) -> Result<(), GiveUp> {
        self.string()?;
        self.expect(b':')
    }

    /// Skips a number, checking RFC 8259 §6 grammar.
    fn skip_number(&mut self) -> Result<(), GiveUp> {
        let b = self.bytes();
        let mut i = self.pos;
        let digits = |from: usize| {
            b.get(from..).map_or(0, |rest| {
                rest.iter().take_while(|c| c.is_ascii_digit()).count()
            })
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let int_len = digits(i);
        if int_len == 0 || (int_len > 1 && b.get(i) == Some(&b'0')) {
            return Err(self.fail());
        }
        i += int_len;
        if b.get(i) == Some(&b'.') {
            let frac_len = digits(i + 1);
            if frac_len == 0 {
                return Err(self.fail());
            }
            i += 1 + frac_len;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let exp_len = digits(i);
            if exp_len == 0 {
                return Err(self.fail());
            }
            i += exp_len;
        }
        self.pos = i;
        Ok(())
    }
}

/// A number as serde_json hands it to a visitor.
enum Number {
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Number {
    fn visit<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        match self {
            Number::U64(n) => visitor.visit_u64(n),
            Number::I64(n) => visitor.visit_i64(n),
            Number::F64(n) => visitor.visit_f64(n),
        }
    }
}

/// 10^0 to 10^22, each exactly representable as an `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The name serde_json's `RawValue` asks for.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// The newtype name under which a string that may be large is asked for
/// ([`crate::mcp::de`]'s one-copy reader). This reader hands a string without escapes to
/// `visit_borrowed_str`, found in one pass; anything else goes to `visit_newtype_struct`, as
/// every other deserializer does with a name it does not know, which reads the value raw.
pub(crate) const STRING_OR_RAW_TOKEN: &str = "$mcpwire::StringOrRaw";

impl<'de> Deserializer<'de> for &mut Reader<'de> {
    type Error = GiveUp;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        match self.peek()? {
            b'n' => {
                self.literal(b"null")?;
                visitor.visit_unit()
            }
            b't' => {
                self.literal(b"true")?;
                visitor.visit_bool(true)
            }
            b'f' => {
                self.literal(b"false")?;
                visitor.visit_bool(false)
            }
            b'-' | b'0'..=b'9' => self.number()?.visit(visitor),
            b'"' => visitor.visit_borrowed_str(self.string()?),
            b'[' => self.deserialize_seq(visitor),
            b'{' => self.deserialize_map(visitor),
            _ => Err(self.fail()),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        match self.peek()? {
            b't' | b'f' => self.deserialize_any(visitor),
            _ => Err(self.fail()),
        }
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.number()?.visit(visitor),
            _ => Err(self.fail()),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, _: V) -> Result<V::Value, GiveUp> {
        // serde_json parses these with `f32` precision.
        Err(self.fail())
    }

    fn deserialize_i128<V: Visitor<'de>>(self, _: V) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_u128<V: Visitor<'de>>(self, _: V) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        match self.peek()? {
            b'"' => visitor.visit_borrowed_str(self.string()?),
            _ => Err(self.fail()),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            visitor.visit_unit()
        } else {
            Err(self.fail())
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        if name == STRING_OR_RAW_TOKEN
            && self.peek()? == b'"'
            && let Some((text, next)) = plain_str(self.text, self.pos)
        {
            self.pos = next;
            return visitor.visit_borrowed_str(text);
        }
        if name == RAW_VALUE_TOKEN {
            // The reader cannot make a `RawValue`, but it knows the value's extent: serde_json
            // makes the raw value from exactly that text (a text block's `text` is read this
            // way, `mcp::de::once_string`), and the rest of the message stays on the fast path.
            self.peek()?;
            let start = self.pos;
            self.skip()?;
            let text = &self.text[start..self.pos];
            return serde_json::Deserializer::from_str(text)
                .deserialize_newtype_struct(RAW_VALUE_TOKEN, visitor)
                .map_err(|_| self.fail());
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        if self.peek()? != b'[' {
            return Err(self.fail());
        }
        self.enter()?;
        let value = visitor.visit_seq(Elements {
            reader: &mut *self,
            first: true,
        })?;
        self.leave(b']')?;
        Ok(value)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        if self.peek()? != b'{' {
            return Err(self.fail());
        }
        self.enter()?;
        let value = visitor.visit_map(Members {
            reader: &mut *self,
            first: true,
        })?;
        self.leave(b'}')?;
        Ok(value)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, GiveUp> {
        match self.peek()? {
            b'[' => self.deserialize_seq(visitor),
            b'{' => self.deserialize_map(visitor),
            _ => Err(self.fail()),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        self.skip()?;
        visitor.visit_unit()
    }
}

/// The elements of an array (serde_json's `SeqAccess`).
struct Elements<'r, 'a> {
    reader: &'r mut Reader<'a>,
    first: bool,
}

impl<'de> SeqAccess<'de> for Elements<'_, 'de> {
    type Error = GiveUp;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, GiveUp> {
        match self.reader.peek()? {
            b']' => return Ok(None),
            b',' if !self.first => {
                self.reader.pos += 1;
                if self.reader.peek()? == b']' {
                    return Err(self.reader.fail());
                }
            }
            _ if self.first => {}
            _ => return Err(self.reader.fail()),
        }
        self.first = false;
        seed.deserialize(&mut *self.reader).map(Some)
    }
}

/// The members of an object (serde_json's `MapAccess`).
struct Members<'r, 'a> {
    reader: &'r mut Reader<'a>,
    first: bool,
}

impl<'de> MapAccess<'de> for Members<'_, 'de> {
    type Error = GiveUp;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, GiveUp> {
        match self.reader.peek()? {
            b'}' => return Ok(None),
            b',' if !self.first => {
                self.reader.pos += 1;
                if self.reader.peek()? != b'"' {
                    return Err(self.reader.fail());
                }
            }
            b'"' if self.first => {}
            _ => return Err(self.reader.fail()),
        }
        self.first = false;
        let key = self.reader.string()?;
        seed.deserialize(Key(key, &mut self.reader.failed))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, GiveUp> {
        self.reader.expect(b':')?;
        seed.deserialize(&mut *self.reader)
    }
}

/// Defines `deserialize_*` methods that give up.
macro_rules! give_up {
    ($de:lifetime; $($method:ident)*) => {$(
        fn $method<V: Visitor<$de>>(self, _: V) -> Result<V::Value, GiveUp> {
            Err(self.fail())
        }
    )*};
}

/// A member name (serde_json's `MapKey`), for the requests every string-keyed type makes.
struct Key<'a, 'f>(&'a str, &'f mut bool);

impl Key<'_, '_> {
    /// Gives up for good (see [`Reader::fail`]).
    fn fail(self) -> GiveUp {
        *self.1 = true;
        GiveUp
    }
}

impl<'de> Deserializer<'de> for Key<'de, '_> {
    type Error = GiveUp;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, GiveUp> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, _: V) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_option<V: Visitor<'de>>(self, _: V) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: V,
    ) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    // Numbers in quotes, bytes, units, sequences and maps: serde_json reads some of these
    // differently from a plain string, so give up on all of them.
    give_up! {'de;
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64 deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_seq deserialize_map
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: V,
    ) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, GiveUp> {
        Err(self.fail())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::Value;

    use super::{Reader, stop};

    /// A small deterministic generator (xorshift64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn digits(&mut self, n: u64) -> String {
            (0..n)
                .map(|_| char::from(b'0' + self.below(10) as u8))
                .collect()
        }
    }

    /// What the reader makes of `text` as `T`, if it does not give up.
    fn read<'a, T: Deserialize<'a>>(text: &'a str) -> Option<(T, usize)> {
        let mut reader = Reader::payload(text);
        let value = T::deserialize(&mut reader).ok()?;
        Some((value, reader.consumed()?))
    }

    /// A raw value (what `mcp::de::once_string` asks for a text block's `text`) is read on the
    /// fast path, as exactly the value's text; a string with escapes still makes the reader
    /// give up (it reads plain strings only), and the serde pass reads it.
    #[test]
    fn a_raw_value_is_read_as_its_exact_text() {
        for text in [
            r#""plain""#,
            r#"{"a": [1, 2.5, {"b": null}], "c": "d"}"#,
            "-12.5e3",
            "true",
            "[]",
        ] {
            let (raw, consumed) = read::<Box<serde_json::value::RawValue>>(text).expect(text);
            assert_eq!(raw.get(), text);
            assert_eq!(consumed, text.len());
        }
        assert!(read::<Box<serde_json::value::RawValue>>(r#""a\nb""#).is_none());
    }

    /// A tool result's text blocks stay on the fast path (their `text` is read as a raw value).
    #[cfg(feature = "mcp")]
    #[test]
    fn a_call_result_with_text_is_read_on_the_fast_path() {
        let result = r#"{"content": [{"type": "text", "text": "hello"}, {"text": "before", "type": "text"}]}"#;
        let (fast, _) = read::<crate::mcp::CallToolResult>(result).expect("the fast path");
        let slow: crate::mcp::CallToolResult = serde_json::from_str(result).unwrap();
        assert_eq!(fast, slow);
    }

    /// A text without escapes is handed over in one pass (one with escapes makes the reader
    /// give up, for serde_json to read the message): what serde_json reads, exactly sized; a
    /// text that is not a string is refused as serde_json refuses it.
    #[test]
    fn a_plain_text_is_read_in_one_pass_as_serde_json_reads_it() {
        use crate::mcp::{CallToolResult, ContentBlock};
        let texts = [r#""""#, r#""plain""#, r#""é€😀 raw UTF-8""#];
        for text in texts {
            for result in [
                format!(r#"{{"content": [{{"type": "text", "text": {text}}}]}}"#),
                format!(r#"{{"content": [{{"text": {text}, "type": "text"}}]}}"#),
            ] {
                let (fast, _) = read::<CallToolResult>(&result)
                    .unwrap_or_else(|| panic!("the fast path: {result}"));
                let slow: CallToolResult = serde_json::from_str(&result).unwrap();
                assert_eq!(fast, slow, "{result}");
                let Some(ContentBlock::Text(block)) = fast.content.first() else {
                    panic!("{result}");
                };
                assert_eq!(block.text.capacity(), block.text.len(), "{result}");
            }
        }
        for wrong in ["7", "null", r#"["a"]"#, r#"{"a": "b"}"#] {
            let result = format!(r#"{{"content": [{{"type": "text", "text": {wrong}}}]}}"#);
            let slow = serde_json::from_str::<CallToolResult>(&result);
            assert!(slow.is_err(), "{result}");
            assert!(read::<CallToolResult>(&result).is_none(), "{result}");
        }
    }

    /// Whenever the reader reads `text`, it reads all of it (up to trailing whitespace) and
    /// exactly as serde_json does, as a `Value` (compared as text, so `-0.0` differs from
    /// `0.0`) and as an `f64` (compared bit for bit).
    fn agrees(text: &str) -> bool {
        let Some((value, consumed)) = read::<Value>(text) else {
            return false;
        };
        assert_eq!(text[consumed..].trim(), "", "{text}");
        let expected: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(value.to_string(), expected.to_string(), "{text}");
        if let Some((f, _)) = read::<f64>(text) {
            let expected: f64 = serde_json::from_str(text).unwrap();
            assert_eq!(f.to_bits(), expected.to_bits(), "{text}");
        }
        true
    }

    #[test]
    fn reader_reads_numbers_as_serde_json_does() {
        for text in [
            "0",
            "-0",
            "1",
            "-1",
            "0.5",
            "-0.5",
            "0.0",
            "-0.0",
            "1.0",
            "4242",
            "100000",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "9999999999999999999",
            "-9999999999999999999",
            "900719925474099.1",
            "0.1",
            "0.3",
            "123456789.123456",
            "0.000000000000000001",
        ] {
            assert!(agrees(text), "{text} should be read");
        }
        // Given up: serde_json reads them differently or they are not JSON.
        for text in [
            "18446744073709551616",
            "1e3",
            "1E3",
            "1.5e3",
            "01",
            "-",
            "1.",
            ".5",
            "-01",
            "9007199254740993.0",
            "0.0000000000000000000001",
            "+1",
            "1x",
        ] {
            let read = read::<Value>(text);
            assert!(
                read.is_none() || read.is_some_and(|(_, n)| n < text.len()),
                "{text}"
            );
        }
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        let mut read = 0;
        for _ in 0..20_000 {
            let sign = if rng.below(2) == 0 { "-" } else { "" };
            let int = match rng.below(4) {
                0 => "0".to_owned(),
                _ => {
                    let len = 1 + rng.below(20);
                    format!("{}{}", 1 + rng.below(9), rng.digits(len - 1))
                }
            };
            let text = match rng.below(2) {
                0 => format!("{sign}{int}"),
                _ => {
                    let len = 1 + rng.below(23);
                    format!("{sign}{int}.{}", rng.digits(len))
                }
            };
            if agrees(&text) {
                read += 1;
            }
        }
        assert!(read > 5_000, "only {read} numbers read");
    }

    #[test]
    fn reader_reads_documents_as_serde_json_does() {
        let texts = [
            r#"{"progressToken":"call-17","progress":4242,"total":100000,"message":"step 4242"}"#,
            " { \"a\" : [ 1 , -2.5 , true , false , null , { } , [ ] , \"é😀\" ] } ",
            r#"[[[[]]],{"a":{"b":{"c":[1]}}}]"#,
            r#"{"a":1,"a":2}"#,
            r#""plain""#,
            "null",
        ];
        for text in texts {
            assert!(agrees(text), "{text} should be read");
        }
        for text in [
            r#"{"a":"\n"}"#,
            r#"{"a\u0041":1}"#,
            r#"[1,]"#,
            r#"{"a":1,}"#,
            r#"{,}"#,
            r#"[,1]"#,
            r#"{"a" 1}"#,
            r#"{1:1}"#,
            "[1 2]",
            "nul",
            "\"tab\there\"",
        ] {
            assert!(read::<Value>(text).is_none(), "{text}");
        }
    }

    #[test]
    fn reader_nests_as_deep_as_serde_json_in_an_envelope() {
        // Inside an envelope serde_json has 127 levels left: a payload may nest 126 deep.
        for depth in [125, 126, 127, 128] {
            let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let envelope = format!(r#"{{"v":{nested}}}"#);
            let serde_json_reads = serde_json::from_str::<Value>(&envelope).is_ok();
            assert_eq!(
                read::<Value>(&nested).is_some(),
                serde_json_reads,
                "{depth}"
            );
            // Skipped values have no limit, as in serde_json's `ignore_value`.
            if depth <= 64 {
                assert!(read::<serde::de::IgnoredAny>(&nested).is_some());
            }
        }
    }

    #[test]
    fn stop_matches_naive() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        let alphabet: &[u8] = &[
            b'a', b'"', b'\\', 0, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xa9, 0xff, b'!', b'#', b'[', b']',
        ];
        let mut state = 0x1234_5678_9abc_def0_u64;
        for len in 0..40 {
            for _ in 0..500 {
                let b: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        // Mostly plain bytes, so that stops come late as well as early.
                        if state.is_multiple_of(4) {
                            alphabet[(state >> 8) as usize % alphabet.len()]
                        } else {
                            b'a' + (state >> 16) as u8 % 26
                        }
                    })
                    .collect();
                assert_eq!(stop(&b), naive(&b), "{b:?}");
            }
        }
    }
}
