//! One-pass typed decoding: the envelope checked by the same rules as [`decode`](super::decode),
//! with `params` or `result` deserialized straight into the caller's type in the same
//! serde_json pass.
//!
//! [`decode_message`] followed by `serde_json::from_str(params.get())` reads the payload twice
//! (once to find where it ends, once to decode it). The functions here read it once, which for a
//! small notification is most of the cost and for a 1 MiB result is half of it.
//!
//! Two readers share the work. A small input first goes to the hand-written envelope reader in
//! `fast.rs`, which takes ordinary messages and gives up on anything else; then (or for a large
//! input, directly) one serde_json pass reads the envelope with [`read_envelope`], the payload
//! going through a [`Payloads`] reader that deserializes it in place. Either way the same
//! [`classify_envelope`] applies the rules. When the pass fails, [`decode_message`] decides what
//! the error is, so that every error is the one the raw decoder gives.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de};
use serde_json::value::RawValue;

use super::decode::{
    Classified, Envelope, Payloads, RawPayloads, StrError, Structured, Text, classify_envelope,
    read_envelope, scalars_are_not_objects, utf8,
};
use super::fast::{self, FastPayloads, Reader};
use super::{
    DecodeError, ErrorObject, Id, Message, Notification, Request, Response, decode_message,
};

/// A notification whose `params` were deserialized into `P` in the same pass as the envelope;
/// see [`decode_notification_as`].
#[derive(Clone, Debug, PartialEq)]
pub struct TypedNotification<'a, P> {
    /// The method name, borrowed from the input unless it holds escapes.
    pub method: Cow<'a, str>,
    /// The params, or `None` when the member is absent.
    pub params: Option<P>,
}

/// A response whose `result` was deserialized into `R` in the same pass as the envelope; see
/// [`decode_response_as`].
#[derive(Clone, Debug, PartialEq)]
pub struct TypedResponse<'a, R> {
    /// The id of the request this answers; `None` for a `null` id (error responses only).
    pub id: Option<Id>,
    /// `Ok` with the result, or `Err` with the `error` member.
    pub outcome: Result<R, ErrorObject<'a>>,
}

/// Why [`decode_notification_as`] or [`decode_response_as`] returned no typed message.
#[derive(Debug)]
#[non_exhaustive]
pub enum TypedDecodeError<'a> {
    /// The input is not a valid JSON-RPC message: exactly the error
    /// [`decode_message`](super::decode_message) gives.
    Invalid(DecodeError),
    /// A valid message, but not what was asked for: another kind of message, or (for the
    /// `mcp` helpers) a notification of another method. It is decoded as
    /// [`decode_message`](super::decode_message) would, so the caller can handle it without
    /// decoding again.
    Unexpected(Message<'a>),
    /// A valid message of the kind asked for whose `params` or `result` does not fit the type.
    /// serde_json's error; its line and column count in the whole input.
    Payload(serde_json::Error),
}

impl TypedDecodeError<'_> {
    /// Copies whatever is borrowed, detaching the error from the input.
    pub fn into_owned(self) -> TypedDecodeError<'static> {
        match self {
            TypedDecodeError::Invalid(e) => TypedDecodeError::Invalid(e),
            TypedDecodeError::Unexpected(m) => TypedDecodeError::Unexpected(m.into_owned()),
            TypedDecodeError::Payload(e) => TypedDecodeError::Payload(e),
        }
    }
}

impl fmt::Display for TypedDecodeError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypedDecodeError::Invalid(e) => e.fmt(f),
            TypedDecodeError::Unexpected(m) => match m {
                Message::Request(r) => write!(f, "unexpected request `{}`", r.method),
                Message::Notification(n) => write!(f, "unexpected notification `{}`", n.method),
                Message::Response(_) => f.write_str("unexpected response"),
            },
            TypedDecodeError::Payload(e) => write!(f, "payload does not fit its type: {e}"),
        }
    }
}

impl std::error::Error for TypedDecodeError<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TypedDecodeError::Invalid(e) => Some(e),
            TypedDecodeError::Unexpected(_) => None,
            TypedDecodeError::Payload(e) => Some(e),
        }
    }
}

/// Decodes one JSON-RPC notification, deserializing its `params` into `P` in the same pass.
///
/// The envelope rules are those of [`decode_message`](super::decode_message), and an input it
/// refuses is refused here with the same [`DecodeError`] (wrapped in
/// [`TypedDecodeError::Invalid`]), even when `params` also fails to fit `P`. A valid request or
/// response comes back as [`TypedDecodeError::Unexpected`]. `params` is an object or an array
/// (spec §4.2), so `P` is deserialized from a map or a sequence: any struct, map or sequence
/// type works, [`RawValue`] and `Option` do not (absent params are `None` in the result).
///
/// ```
/// use mcpwire::jsonrpc::decode_notification_as;
///
/// #[derive(serde::Deserialize)]
/// struct Progress { progress: f64 }
///
/// let n = decode_notification_as::<Progress>(
///     br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0.5}}"#,
/// )?;
/// assert_eq!(n.method, "notifications/progress");
/// assert_eq!(n.params.map(|p| p.progress), Some(0.5));
/// # Ok::<(), mcpwire::jsonrpc::TypedDecodeError<'static>>(())
/// ```
///
/// # Errors
///
/// See [`TypedDecodeError`].
pub fn decode_notification_as<'a, P: Deserialize<'a>>(
    input: &'a [u8],
) -> Result<TypedNotification<'a, P>, TypedDecodeError<'a>> {
    let mut params = None;
    let method = decode_notification_into(input, &mut params)?;
    Ok(TypedNotification { method, params })
}

/// [`decode_notification_as`], with the params written into `params` rather than moved through
/// the result (a large `P` is then copied once, not at every return); returns the method.
pub(crate) fn decode_notification_into<'a, P: Deserialize<'a>>(
    input: &'a [u8],
    params: &mut Option<P>,
) -> Result<Cow<'a, str>, TypedDecodeError<'a>> {
    let mut payloads = TypedParams::<'a, '_, P> {
        params,
        result: None,
    };
    match decode_one(input, &mut payloads) {
        Ok(Classified::Notification { method }) => Ok(method),
        Ok(Classified::Response { id, error }) => {
            let outcome = match (error, payloads.result) {
                (Some(error), _) => Err(error),
                (None, Some(result)) => Ok(Cow::Borrowed(result)),
                (None, None) => return Err(decode_again(input)),
            };
            Err(TypedDecodeError::Unexpected(Message::Response(Response {
                id,
                outcome,
            })))
        }
        // Its params were read as `P`; read them again as raw JSON.
        Ok(Classified::Request { .. }) => Err(decode_again(input)),
        Err(e) => Err(e.resolve(input, |m| matches!(m, Message::Notification(_)))),
    }
}

/// Decodes one JSON-RPC response, deserializing its `result` into `R` in the same pass.
///
/// The envelope rules are those of [`decode_message`](super::decode_message), and an input it
/// refuses is refused here with the same [`DecodeError`] (wrapped in
/// [`TypedDecodeError::Invalid`]), even when `result` also fails to fit `R`. An error response
/// is a success here: its `outcome` is `Err` with the error object. A valid request or
/// notification comes back as [`TypedDecodeError::Unexpected`], decoded raw.
///
/// ```
/// use mcpwire::jsonrpc::{Id, decode_response_as};
///
/// let r = decode_response_as::<Vec<u32>>(br#"{"jsonrpc":"2.0","id":7,"result":[1,2]}"#)?;
/// assert_eq!(r.id, Some(Id::Number(7)));
/// assert_eq!(r.outcome.ok(), Some(vec![1, 2]));
/// # Ok::<(), mcpwire::jsonrpc::TypedDecodeError<'static>>(())
/// ```
///
/// # Errors
///
/// See [`TypedDecodeError`].
pub fn decode_response_as<'a, R: Deserialize<'a>>(
    input: &'a [u8],
) -> Result<TypedResponse<'a, R>, TypedDecodeError<'a>> {
    let mut payloads = TypedResult::<'a, R> {
        params: None,
        result: None,
    };
    let params = |payloads: TypedResult<'a, R>| payloads.params.map(Cow::Borrowed);
    match decode_one(input, &mut payloads) {
        Ok(Classified::Response { id, error }) => {
            let outcome = match (error, payloads.result) {
                (Some(error), _) => Err(error),
                (None, Some(result)) => Ok(result),
                (None, None) => return Err(decode_again(input)),
            };
            Ok(TypedResponse { id, outcome })
        }
        Ok(Classified::Request { id, method }) => {
            Err(TypedDecodeError::Unexpected(Message::Request(Request {
                id,
                method,
                params: params(payloads),
            })))
        }
        Ok(Classified::Notification { method }) => Err(TypedDecodeError::Unexpected(
            Message::Notification(Notification {
                method,
                params: params(payloads),
            }),
        )),
        Err(e) => Err(e.resolve(input, |m| matches!(m, Message::Response(_)))),
    }
}

/// The input, decoded again by the strict raw decoder, as the error to report when the typed
/// pass could not give the answer.
fn decode_again(input: &[u8]) -> TypedDecodeError<'_> {
    match decode_message(input) {
        Ok(message) => TypedDecodeError::Unexpected(message),
        Err(e) => TypedDecodeError::Invalid(e),
    }
}

/// Why the one-pass decoder gave up.
enum OnePassError {
    /// The envelope rules refused the object.
    Invalid(DecodeError),
    /// The input is not one object (a batch, a scalar): the raw decoder says what is wrong.
    NotObject,
    /// serde_json failed: bad JSON, or a payload that does not fit its type.
    Serde(serde_json::Error),
}

impl OnePassError {
    /// Turns a failure of the typed pass into what the caller sees. A serde_json error may come
    /// from the payload or from anywhere else in the input, and the envelope rules take
    /// precedence over the payload's type, so the raw decoder decides: if it refuses the input,
    /// that is the error; if it accepts a message of the kind asked for, the payload was at
    /// fault.
    fn resolve(self, input: &[u8], wanted: fn(&Message<'_>) -> bool) -> TypedDecodeError<'_> {
        match self {
            OnePassError::Invalid(e) => TypedDecodeError::Invalid(e),
            OnePassError::NotObject => decode_again(input),
            OnePassError::Serde(e) => match decode_message(input) {
                Err(invalid) => TypedDecodeError::Invalid(invalid),
                Ok(message) if wanted(&message) => TypedDecodeError::Payload(e),
                Ok(message) => TypedDecodeError::Unexpected(message),
            },
        }
    }
}

/// The one pass: UTF-8 check, the fast envelope reader for a small input or else serde_json
/// over the object, with `payloads` reading `params` and `result`; then the envelope rules.
fn decode_one<'a, M: Payloads<'a> + FastPayloads<'a>>(
    input: &'a [u8],
    payloads: &mut M,
) -> Result<Classified<'a>, OnePassError> {
    let text = utf8(input).map_err(OnePassError::Invalid)?;
    if text.len() <= fast::MAX_BYTES {
        if let Some(envelope) = fast::read(text, payloads) {
            return classify_envelope(envelope).map_err(OnePassError::Invalid);
        }
        payloads.reset();
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let envelope = OneVisitor(payloads)
        .deserialize(&mut deserializer)
        .and_then(|envelope| deserializer.end().map(|()| envelope))
        .map_err(OnePassError::Serde)?;
    match envelope {
        Some(envelope) => classify_envelope(envelope).map_err(OnePassError::Invalid),
        None => Err(OnePassError::NotObject),
    }
}

/// Reads the top-level value: the envelope of an object, or `None` for anything else.
struct OneVisitor<'p, M>(&'p mut M);

impl<'de, M: Payloads<'de>> DeserializeSeed<'de> for OneVisitor<'_, M> {
    type Value = Option<Envelope<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, M: Payloads<'de>> Visitor<'de> for OneVisitor<'_, M> {
    type Value = Option<Envelope<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    scalars_are_not_objects!(|_| None);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        read_envelope(map, self.0).map(Some)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// `params` deserialized into the caller's `P`, `result` raw.
struct TypedParams<'a, 's, P> {
    params: &'s mut Option<P>,
    result: Option<&'a RawValue>,
}

impl<'a, P: Deserialize<'a>> FastPayloads<'a> for TypedParams<'a, '_, P> {
    fn reset(&mut self) {
        *self.params = None;
        self.result = None;
    }

    fn params(&mut self, text: &'a str) -> Option<usize> {
        let mut reader = Reader::payload(text);
        let structured = StructuredSeed(self.params).deserialize(&mut reader).ok()?;
        structured.ok()?;
        reader.consumed()
    }

    fn result(&mut self, _: &'a str) -> Option<usize> {
        // A raw result needs the serde pass.
        None
    }
}

impl<'de, P: Deserialize<'de>> Payloads<'de> for TypedParams<'de, '_, P> {
    fn version<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<bool, A::Error> {
        map.next_value_seed(StringSeed)
            .map(|v| matches!(v, Ok(v) if v == "2.0"))
    }

    fn method<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Text<'de>, A::Error> {
        map.next_value_seed(StringSeed)
    }

    fn params<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Structured, A::Error> {
        map.next_value_seed(StructuredSeed(&mut *self.params))
    }

    fn result<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<(), A::Error> {
        self.result = Some(map.next_value::<&'de RawValue>()?);
        Ok(())
    }
}

/// `params` raw, `result` deserialized into `R`.
struct TypedResult<'a, R> {
    params: Option<&'a RawValue>,
    result: Option<R>,
}

impl<'a, R: Deserialize<'a>> FastPayloads<'a> for TypedResult<'a, R> {
    fn reset(&mut self) {
        self.params = None;
        self.result = None;
    }

    fn params(&mut self, _: &'a str) -> Option<usize> {
        // Raw params need the serde pass.
        None
    }

    fn result(&mut self, text: &'a str) -> Option<usize> {
        let mut reader = Reader::payload(text);
        InPlace(&mut self.result).deserialize(&mut reader).ok()?;
        reader.consumed()
    }
}

impl<'de, R: Deserialize<'de>> Payloads<'de> for TypedResult<'de, R> {
    fn version<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<bool, A::Error> {
        map.next_value_seed(StringSeed)
            .map(|v| matches!(v, Ok(v) if v == "2.0"))
    }

    fn method<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Text<'de>, A::Error> {
        map.next_value_seed(StringSeed)
    }

    fn params<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Structured, A::Error> {
        let mut raw = RawPayloads::default();
        let structured = raw.set_params(map.next_value::<&'de RawValue>()?);
        self.params = raw.params;
        Ok(structured)
    }

    fn result<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<(), A::Error> {
        map.next_value_seed(InPlace(&mut self.result))
    }
}

/// Deserializes a `T` into a slot.
struct InPlace<'s, T>(&'s mut Option<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for InPlace<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        *self.0 = Some(T::deserialize(deserializer)?);
        Ok(())
    }
}

/// Deserializes a structured value (spec §4.2) into a slot for `P`, and notes what was found
/// instead of one without failing, so that the envelope rules can report it.
struct StructuredSeed<'s, P>(&'s mut Option<P>);

impl<'de, P: Deserialize<'de>> DeserializeSeed<'de> for StructuredSeed<'_, P> {
    type Value = Structured;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, P: Deserialize<'de>> Visitor<'de> for StructuredSeed<'_, P> {
    type Value = Structured;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or an array")
    }

    scalars_are_not_objects!(Err);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        *self.0 = Some(P::deserialize(MapAccessDeserializer::new(map))?);
        Ok(Ok(()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        *self.0 = Some(P::deserialize(SeqAccessDeserializer::new(seq))?);
        Ok(Ok(()))
    }
}

/// Reads `jsonrpc` or `method` straight as a string, in one scan. A string that no Rust string
/// can hold (a lone surrogate escape) fails the pass, and the raw decoder then gives its error.
struct StringSeed;

impl<'de> DeserializeSeed<'de> for StringSeed {
    type Value = Text<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StringSeed {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(StrError::NotString))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err(StrError::NotString))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err(StrError::NotString))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err(StrError::NotString))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(StrError::NotString))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Ok(Cow::Owned(v.to_owned())))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Ok(Cow::Borrowed(v)))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Ok(Cow::Owned(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err(StrError::NotString))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(StrError::NotString))
    }
}
