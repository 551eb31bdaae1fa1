//! The encoder: compact JSON on exactly one line, members in a fixed order, raw members copied
//! as they are unless they hold a line break.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::{ErrorObject, Id, Message, Packet, Response};

/// Where encoded text goes: a `String` or a byte buffer. Everything pushed is valid UTF-8.
trait Sink {
    fn push(&mut self, s: &str);
}

impl Sink for String {
    fn push(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl Sink for Vec<u8> {
    fn push(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

impl Message<'_> {
    /// Encodes the message as compact JSON on one line, without a trailing newline.
    ///
    /// Members come in a fixed order: `jsonrpc`, `id`, then `method` and `params`, `result`, or
    /// `error` with `code`, `message`, `data`. Raw members are copied as they are, except that a
    /// raw member holding a line break (pretty-printed JSON) is minified, so the output never
    /// contains `\n` or `\r` and can be framed one message per line (MCP stdio transport).
    ///
    /// The encoder trusts the model: a [`Request`](super::Request) built with scalar `params`
    /// or a [`Response`] with a `None` id and a result is written as it is, and
    /// [`decode`](super::decode) would refuse it.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(size_hint(self));
        write_message(&mut out, self);
        out
    }

    /// Appends the message, encoded as by [`Message::encode`], to `out`: a writer that reuses
    /// one buffer encodes without allocating.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.reserve(size_hint(self));
        write_message(out, self);
    }
}

impl Packet<'_> {
    /// Encodes a single message as by [`Message::encode`], a batch (spec §6) as a JSON array on
    /// one line, its elements encoded as by [`Message::encode`].
    ///
    /// An empty batch encodes as `[]`, which spec §6 makes an invalid request and
    /// [`decode`](super::decode) refuses; don't send it.
    #[must_use]
    pub fn encode(&self) -> String {
        match self {
            Packet::Single(message) => message.encode(),
            Packet::Batch(messages) => encode_batch(messages),
        }
    }
}

/// Encodes messages as a batch ([`Packet::encode`] of a batch, from a slice).
#[must_use]
pub(crate) fn encode_batch(messages: &[Message<'_>]) -> String {
    let mut out = String::with_capacity(messages.iter().map(size_hint).sum::<usize>() + 2);
    write_batch(&mut out, messages);
    out
}

/// Appends messages, encoded as by [`encode_batch`], to `out`.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn encode_batch_into(messages: &[Message<'_>], out: &mut Vec<u8>) {
    out.reserve(messages.iter().map(size_hint).sum::<usize>() + 2);
    write_batch(out, messages);
}

fn write_batch<S: Sink>(out: &mut S, messages: &[Message<'_>]) {
    out.push("[");
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            out.push(",");
        }
        write_message(out, message);
    }
    out.push("]");
}

/// Room for the fixed parts plus the variable ones, so a large `result` is copied once.
fn size_hint(message: &Message<'_>) -> usize {
    let raw = |raw: &Option<Cow<'_, RawValue>>| raw.as_ref().map_or(0, |r| r.get().len());
    let id = |id: &Id| match id {
        Id::Number(_) => 20,
        Id::String(s) => s.len() + 2,
    };
    64 + match message {
        Message::Request(r) => id(&r.id) + r.method.len() + raw(&r.params),
        Message::Notification(n) => n.method.len() + raw(&n.params),
        Message::Response(r) => {
            r.id.as_ref().map_or(4, id)
                + match &r.outcome {
                    Ok(result) => result.get().len(),
                    Err(e) => e.message.len() + raw(&e.data),
                }
        }
    }
}

fn write_message<S: Sink>(out: &mut S, message: &Message<'_>) {
    out.push(r#"{"jsonrpc":"2.0","#);
    match message {
        Message::Request(r) => {
            out.push(r#""id":"#);
            write_id(out, &r.id);
            out.push(r#","method":"#);
            write_string(out, &r.method);
            write_params(out, r.params.as_deref());
        }
        Message::Notification(n) => {
            out.push(r#""method":"#);
            write_string(out, &n.method);
            write_params(out, n.params.as_deref());
        }
        Message::Response(Response { id, outcome }) => {
            out.push(r#""id":"#);
            match id {
                Some(id) => write_id(out, id),
                None => out.push("null"),
            }
            match outcome {
                Ok(result) => {
                    out.push(r#","result":"#);
                    write_raw(out, result);
                }
                Err(error) => {
                    out.push(r#","error":"#);
                    write_error(out, error);
                }
            }
        }
    }
    out.push("}");
}

fn write_params<S: Sink>(out: &mut S, params: Option<&RawValue>) {
    if let Some(params) = params {
        out.push(r#","params":"#);
        write_raw(out, params);
    }
}

fn write_error<S: Sink>(out: &mut S, error: &ErrorObject<'_>) {
    out.push(r#"{"code":"#);
    out.push(&error.code.to_string());
    out.push(r#","message":"#);
    write_string(out, &error.message);
    if let Some(data) = &error.data {
        out.push(r#","data":"#);
        write_raw(out, data);
    }
    out.push("}");
}

fn write_id<S: Sink>(out: &mut S, id: &Id) {
    match id {
        Id::Number(n) => out.push(decimal(*n, &mut [0; 20])),
        Id::String(s) => write_string(out, s),
    }
}

/// `n` in decimal, written at the end of `digits` (every `i64` fits in 20 bytes), without the
/// allocation of `to_string`: an id is written for every message.
fn decimal(n: i64, digits: &mut [u8; 20]) -> &str {
    let mut rest = n.unsigned_abs();
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        start -= 1;
        digits[start] = b'-';
    }
    // Only ASCII digits and a sign were written.
    std::str::from_utf8(&digits[start..]).unwrap_or("0")
}

/// Writes `s` as a JSON string. serde_json escapes exactly `"`, `\` and the control characters
/// below U+0020; a string without them is copied between quotes, the rest go through serde_json.
fn write_string<S: Sink>(out: &mut S, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push(&serde_json::Value::from(s).to_string());
    } else {
        out.push("\"");
        out.push(s);
        out.push("\"");
    }
}

/// Writes a raw JSON value as it is, or minified when it holds a line break.
fn write_raw<S: Sink>(out: &mut S, raw: &RawValue) {
    let json = raw.get();
    if has_line_break(json) {
        minify_into(out, json);
    } else {
        out.push(json);
    }
}

/// Whether `s` contains `\n` or `\r`: memchr's vector search (already in the tree through
/// serde_json), which a byte fold does not match on short messages, the common case, and which
/// keeps megabyte results fast.
pub(crate) fn has_line_break(s: &str) -> bool {
    memchr::memchr2(b'\n', b'\r', s.as_bytes()).is_some()
}

/// Copies the valid JSON text `json` to `out` without the whitespace outside strings
/// (RFC 8259 §2: space, tab, line feed, carriage return).
///
/// Only valid JSON is handled: a raw line break cannot occur inside a JSON string (RFC 8259 §7
/// requires control characters to be escaped), so the result holds none.
fn minify_into<S: Sink>(out: &mut S, json: &str) {
    let mut start = 0;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in json.as_bytes().iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b' ' | b'\t' | b'\n' | b'\r' => {
                // Both ends sit next to an ASCII byte, so they are character boundaries.
                if let Some(span) = json.get(start..i) {
                    out.push(span);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if let Some(span) = json.get(start..) {
        out.push(span);
    }
}

/// `json` without the whitespace outside strings when it holds a line break; as it is
/// otherwise. This is what the encoder writes for a raw member. For the fuzz harness and tests.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn one_line(json: &str) -> Cow<'_, str> {
    if has_line_break(json) {
        let mut out = String::with_capacity(json.len());
        minify_into(&mut out, json);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(json)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimal_writes_what_to_string_writes() {
        for n in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            99,
            100,
            12_345,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            assert_eq!(super::decimal(n, &mut [0; 20]), n.to_string());
        }
    }
}
