//! JSON-RPC 2.0: the message model and a strict codec (requests, notifications, responses, batches).
//!
//! [`decode`] reads one JSON text into a [`Packet`]: a single [`Message`] or a batch of them.
//! Decoded messages borrow from the input, so a megabyte `result` is never copied; call
//! [`Message::into_owned`] to keep one past the input's life. [`Message::encode`] writes a
//! message back as compact JSON on exactly one line.
//!
//! ```
//! use mcpwire::jsonrpc::{decode, DecodeError, Id, Message, Packet};
//!
//! let packet = decode(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#)?;
//! let Packet::Single(Message::Request(request)) = packet else { panic!("a request") };
//! assert_eq!(request.id, Id::Number(7));
//! assert_eq!(request.method, "tools/list");
//! assert_eq!(request.params.as_deref().map(|p| p.get()), Some("{}"));
//!
//! // Pretty-printed input encodes to one line.
//! let message = mcpwire::jsonrpc::decode_message(b"{\"jsonrpc\": \"2.0\",\n \"id\": \"a\",\n \"result\": {\n  \"ok\": true\n }\n}")?;
//! assert_eq!(message.encode(), r#"{"jsonrpc":"2.0","id":"a","result":{"ok":true}}"#);
//!
//! // Strict: a request with a null id is refused.
//! let error = decode(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).unwrap_err();
//! assert_eq!(error, DecodeError::NullIdOnRequest);
//! # Ok::<(), DecodeError>(())
//! ```
//!
//! # Decoding rules
//!
//! Section numbers refer to the [JSON-RPC 2.0 specification](https://www.jsonrpc.org/specification);
//! "MCP" to the Model Context Protocol's basic protocol page, which narrows it.
//!
//! * The input is one UTF-8 JSON text (RFC 8259); anything else is [`DecodeError::NotJson`].
//! * An object is one message; an array is a batch (§6) and must not be empty. Batch elements
//!   must be objects; an error in a batch names the element's index ([`DecodeError::InBatch`]).
//! * `jsonrpc` must be exactly the string `"2.0"` (§4, §5).
//! * An object with `method` is a request, or a notification when it has no `id` member
//!   (§4, §4.1). `method` must be a string; `params`, when present, an object or an array
//!   (§4.2); `id` a string or an integer that fits `i64`, never `null` (MCP).
//! * An object with `result` or `error` is a response (§5): exactly one of the two, and an `id`
//!   member, which may be `null` only with `error`. `error` is an object with an integer `code`,
//!   a string `message` and optional `data` (§5.1).
//! * Request members and response members never mix; a member named twice is refused
//!   ([`DecodeError::DuplicateMember`]).
//! * Members this model does not know are ignored and dropped on re-encoding. The spec neither
//!   allows nor forbids them, and peers that add extension members (§8) stay interoperable.
//!
//! A member that is `null` is not the same as one that is absent: `"id": null` on a response
//! is the null id, `"data": null` is kept and re-encoded, `"params": null` is refused.
//!
//! # Typed decoding
//!
//! When the caller knows what it expects, [`decode_notification_as`] and [`decode_response_as`]
//! decode the envelope by the same rules and deserialize `params` or `result` straight into the
//! caller's type in the same pass, instead of keeping it raw for a second pass. A message that
//! is valid but not of the kind asked for comes back decoded raw
//! ([`TypedDecodeError::Unexpected`]), so a caller can try the typed path first.

mod decode;
mod encode;
mod error;
mod fast;
mod id;
mod message;
#[cfg(test)]
mod tests;
mod typed;

#[cfg(any(test, feature = "fuzzing"))]
use std::borrow::Cow;

#[cfg(any(test, feature = "fuzzing"))]
use serde_json::value::RawValue;

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use decode::decode_str;
pub use decode::{decode, decode_message};
pub use error::DecodeError;
#[cfg(feature = "mcp")]
pub(crate) use fast::STRING_OR_RAW_TOKEN;
pub use id::Id;
pub use message::{ErrorObject, Message, Notification, Packet, Request, Response};
#[cfg(feature = "mcp")]
pub(crate) use typed::decode_notification_into;
pub use typed::{
    TypedDecodeError, TypedNotification, TypedResponse, decode_notification_as, decode_response_as,
};

/// Invalid JSON was received (spec §5.1).
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object (spec §5.1).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available (spec §5.1).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (spec §5.1).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error (spec §5.1).
pub const INTERNAL_ERROR: i64 = -32603;

/// Fuzz harness: checks that whatever [`decode`] accepts survives encoding, and that the
/// one-pass typed decoders agree with [`decode_message`].
///
/// If `data` decodes, it is encoded (which must yield one line), decoded again (which must
/// succeed and equal the first decoding, raw members compared after the encoder's minification),
/// and encoded again (which must be byte-identical to the first encoding). Whether or not it
/// decodes, [`decode_notification_as`] and [`decode_response_as`] (into `serde_json::Value`) must
/// give the same error, the same message, or the same params or result as a value.
///
/// # Panics
///
/// When one of these invariants breaks; that is the point.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub(crate) fn fuzz_roundtrip(data: &[u8]) {
    fuzz_typed(data);
    let Ok(first) = decode(data) else {
        return;
    };
    let first_text = first.encode();
    if encode::has_line_break(&first_text) {
        panic!("encoding is not one line: {first_text:?}");
    }
    let mut bytes = Vec::new();
    match &first {
        Packet::Single(message) => message.encode_into(&mut bytes),
        Packet::Batch(messages) => encode::encode_batch_into(messages, &mut bytes),
    }
    if bytes != first_text.as_bytes() {
        panic!("encode_into differs from encode: {first_text:?}");
    }
    let second = match decode_str(&first_text) {
        Ok(second) => second,
        Err(e) => panic!("re-decoding {first_text:?} failed: {e}"),
    };
    let expected = fuzz_expected(first);
    if second != expected {
        panic!("re-decoding changed the packet:\n{expected:?}\n{second:?}");
    }
    let second_text = second.encode();
    if second_text != first_text {
        panic!("encoding is not stable:\n{first_text}\n{second_text}");
    }
}

/// The packet the encoder's output should decode to: raw members as the encoder writes them.
#[cfg(any(test, feature = "fuzzing"))]
fn fuzz_expected(packet: Packet<'_>) -> Packet<'static> {
    fn raw(raw: Cow<'_, RawValue>) -> Cow<'static, RawValue> {
        match encode::one_line(raw.get()) {
            Cow::Borrowed(_) => Cow::Owned(raw.into_owned()),
            Cow::Owned(text) => match RawValue::from_string(text) {
                Ok(minified) => Cow::Owned(minified),
                Err(e) => panic!("minifying {:?} made invalid JSON: {e}", raw.get()),
            },
        }
    }
    fn message(message: Message<'_>) -> Message<'static> {
        match message.into_owned() {
            Message::Request(mut r) => {
                r.params = r.params.map(raw);
                Message::Request(r)
            }
            Message::Notification(mut n) => {
                n.params = n.params.map(raw);
                Message::Notification(n)
            }
            Message::Response(mut r) => {
                r.outcome = match r.outcome {
                    Ok(result) => Ok(raw(result)),
                    Err(mut e) => {
                        e.data = e.data.map(raw);
                        Err(e)
                    }
                };
                Message::Response(r)
            }
        }
    }
    match packet {
        Packet::Single(m) => Packet::Single(message(m)),
        Packet::Batch(ms) => Packet::Batch(ms.into_iter().map(message).collect()),
    }
}

/// The typed half of [`fuzz_roundtrip`].
#[cfg(any(test, feature = "fuzzing"))]
fn fuzz_typed(data: &[u8]) {
    use serde_json::Value;

    let raw = decode_message(data);
    // A raw member as a value; `None` when serde_json cannot hold it as one (a number out of
    // range, nesting past its depth limit).
    let value = |raw: &RawValue| serde_json::from_str::<Value>(raw.get()).ok();
    // The typed pass fails on a payload only where reading the whole input as a value fails too.
    let payload_fails = || serde_json::from_slice::<Value>(data).is_err();

    match (decode_notification_as::<Value>(data), &raw) {
        (Ok(typed), Ok(Message::Notification(n))) => {
            if typed.method != n.method || typed.params != n.params.as_deref().and_then(value) {
                panic!("typed notification differs: {typed:?} vs {n:?}");
            }
        }
        (Err(TypedDecodeError::Invalid(e)), Err(r)) if e == *r => {}
        (Err(TypedDecodeError::Unexpected(m)), Ok(r))
            if m == *r && !matches!(r, Message::Notification(_)) => {}
        (Err(TypedDecodeError::Payload(_)), Ok(Message::Notification(_))) if payload_fails() => {}
        (typed, raw) => panic!("decode_notification_as: {typed:?}, decode_message: {raw:?}"),
    }

    match (decode_response_as::<Value>(data), &raw) {
        (Ok(typed), Ok(Message::Response(r))) => {
            let same = typed.id == r.id
                && match (&typed.outcome, &r.outcome) {
                    (Ok(a), Ok(b)) => Some(a) == value(b).as_ref(),
                    (Err(a), Err(b)) => a == b,
                    _ => false,
                };
            if !same {
                panic!("typed response differs: {typed:?} vs {r:?}");
            }
        }
        (Err(TypedDecodeError::Invalid(e)), Err(r)) if e == *r => {}
        (Err(TypedDecodeError::Unexpected(m)), Ok(r))
            if m == *r && !matches!(r, Message::Response(_)) => {}
        (Err(TypedDecodeError::Payload(_)), Ok(Message::Response(_))) if payload_fails() => {}
        (typed, raw) => panic!("decode_response_as: {typed:?}, decode_message: {raw:?}"),
    }
}
