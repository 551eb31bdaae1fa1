//! The strict decoder: one serde_json pass collects each object's members as borrowed raw JSON,
//! then hand-written rules classify the member set as a request, a notification or a response.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de};
use serde_json::value::RawValue;

use super::{DecodeError, ErrorObject, Id, Message, Notification, Packet, Request, Response};

/// Decodes one JSON text: a single message or a batch (spec §6).
///
/// The input must be UTF-8 (RFC 8259 §8.1) holding exactly one JSON value; whitespace around it
/// is allowed, anything else after it is [`DecodeError::NotJson`]. Every raw member (`params`,
/// `result`, `error.data`) borrows from `input`, and so do method names and error messages
/// without escapes; ids are owned. See the [module documentation](super) for the rules.
///
/// # Errors
///
/// The first rule the input breaks; for a batch, wrapped in [`DecodeError::InBatch`] with the
/// index of the first invalid element.
pub fn decode(input: &[u8]) -> Result<Packet<'_>, DecodeError> {
    match std::str::from_utf8(input) {
        Ok(text) => decode_str(text),
        Err(e) => Err(DecodeError::NotJson(format!(
            "invalid UTF-8 at byte {}",
            e.valid_up_to()
        ))),
    }
}

/// Decodes one JSON text held in a `str`; see [`decode`].
///
/// # Errors
///
/// As for [`decode`].
pub fn decode_str(input: &str) -> Result<Packet<'_>, DecodeError> {
    let top: Top<'_> =
        serde_json::from_str(input).map_err(|e| DecodeError::NotJson(e.to_string()))?;
    match top {
        Top::Single(item) => classify(item).map(Packet::Single),
        Top::Batch(items) if items.is_empty() => Err(DecodeError::EmptyBatch),
        Top::Batch(items) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| classify(item).map_err(|e| e.in_batch(index)))
            .collect::<Result<Vec<_>, _>>()
            .map(Packet::Batch),
    }
}

/// Decodes one JSON text that must hold a single message, not a batch.
///
/// MCP revisions from 2025-06-18 on removed batching, so a transport for them can refuse
/// batches outright.
///
/// # Errors
///
/// As for [`decode`], plus [`DecodeError::UnexpectedBatch`] for a well-formed batch.
pub fn decode_message(input: &[u8]) -> Result<Message<'_>, DecodeError> {
    match decode(input)? {
        Packet::Single(message) => Ok(message),
        Packet::Batch(_) => Err(DecodeError::UnexpectedBatch),
    }
}

// ---------------------------------------------------------------------------------------------
// The single serde_json pass.

/// The top-level value: one object-or-not, or an array of them.
enum Top<'a> {
    Single(Item<'a>),
    Batch(Vec<Item<'a>>),
}

/// One would-be message: the members of an object, or what was found instead of an object.
enum Item<'a> {
    Object(Members<'a, 6>),
    NotObject(&'static str),
}

/// The envelope members (spec §4, §5). Any other member is skipped without being kept.
const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// The error object members (spec §5.1).
const ERROR_OBJECT: [&str; 3] = ["code", "message", "data"];
const ERROR_OBJECT_PATHS: [&str; 3] = ["error.code", "error.message", "error.data"];

/// The known members of one object, each as borrowed raw JSON so that `Some(null)` (present and
/// `null`) differs from `None` (absent), plus the first known member that occurred twice.
struct Members<'a, const N: usize> {
    values: [Option<&'a RawValue>; N],
    duplicate: Option<usize>,
}

fn read_members<'de, A: MapAccess<'de>, const N: usize>(
    mut map: A,
    names: &[&'static str; N],
) -> Result<Members<'de, N>, A::Error> {
    let mut members = Members {
        values: [None; N],
        duplicate: None,
    };
    while let Some(key) = map.next_key_seed(KeySeed(names))? {
        match key.and_then(|i| members.values.get_mut(i).map(|slot| (i, slot))) {
            Some((i, slot)) => {
                let value = map.next_value::<&'de RawValue>()?;
                if slot.is_some() {
                    members.duplicate.get_or_insert(i);
                } else {
                    *slot = Some(value);
                }
            }
            None => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(members)
}

/// Maps a member name (escapes already decoded by serde_json) to its index in `names`.
struct KeySeed<'n>(&'n [&'static str]);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| *name == v))
    }
}

/// Implements the scalar `visit_*` methods of a visitor whose value for a scalar is
/// `$not_object(kind)`.
macro_rules! scalars_are_not_objects {
    ($not_object:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($not_object("a boolean"))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($not_object("a number"))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($not_object("a number"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($not_object("a number"))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($not_object("a string"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($not_object("null"))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($not_object("null"))
        }
    };
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    scalars_are_not_objects!(|kind| Top::Single(Item::NotObject(kind)));

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        read_members(map, &ENVELOPE).map(|m| Top::Single(Item::Object(m)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Item<'de>>()? {
            items.push(item);
        }
        Ok(Top::Batch(items))
    }
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TopVisitor)
    }
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Item<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    scalars_are_not_objects!(Item::NotObject);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        read_members(map, &ENVELOPE).map(Item::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Item::NotObject("an array"))
    }
}

impl<'de> Deserialize<'de> for Item<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ItemVisitor)
    }
}

/// The members of an `error` object, read by a second, small pass over its raw text.
struct ErrorMembers<'a>(Members<'a, 3>);

struct ErrorMembersVisitor;

impl<'de> Visitor<'de> for ErrorMembersVisitor {
    type Value = ErrorMembers<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        read_members(map, &ERROR_OBJECT).map(ErrorMembers)
    }
}

impl<'de> Deserialize<'de> for ErrorMembers<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ErrorMembersVisitor)
    }
}

// ---------------------------------------------------------------------------------------------
// Classification: the JSON-RPC rules, applied to the member set of one object.

fn classify(item: Item<'_>) -> Result<Message<'_>, DecodeError> {
    let members = match item {
        Item::Object(members) => members,
        Item::NotObject(found) => return Err(DecodeError::NotAnObject(found)),
    };
    if let Some(i) = members.duplicate {
        return Err(DecodeError::DuplicateMember(name_at(&ENVELOPE, i)));
    }
    let [jsonrpc, id, method, params, result, error] = members.values;

    // Spec §4 and §5: "jsonrpc ... MUST be exactly "2.0"".
    match jsonrpc {
        None => return Err(DecodeError::MissingVersion),
        Some(version) if !is_version_2(version) => return Err(DecodeError::WrongVersion),
        Some(_) => {}
    }

    let response_member = result.map(|_| "result").or(error.map(|_| "error"));
    match (method, params.is_some(), response_member) {
        // Spec §5: a response carries `result` or `error`, never request members.
        (Some(_), _, Some(response)) => Err(DecodeError::MethodWithResult {
            request: "method",
            response,
        }),
        (None, true, Some(response)) => Err(DecodeError::MethodWithResult {
            request: "params",
            response,
        }),
        (Some(method), _, None) => classify_call(id, method, params),
        (None, true, None) => Err(DecodeError::MissingMethod),
        (None, false, Some(_)) => classify_response(id, result, error).map(Message::Response),
        (None, false, None) => Err(DecodeError::NeitherResultNorError),
    }
}

/// Spec §4 (request), §4.1 (notification: no `id` member), §4.2 (parameter structures).
fn classify_call<'a>(
    id: Option<&'a RawValue>,
    method: &'a RawValue,
    params: Option<&'a RawValue>,
) -> Result<Message<'a>, DecodeError> {
    let method = match parse_str(method) {
        Ok(method) => method,
        Err(StrError::NotString) => return Err(DecodeError::MethodNotString),
        Err(StrError::Invalid(message)) => return Err(not_unicode("method", message)),
    };
    // Spec §4.2: "If present, parameters for the rpc call MUST be provided as a Structured
    // value". `null` is not structured.
    let params = match params {
        None => None,
        Some(raw) if matches!(raw.get().as_bytes().first(), Some(b'{' | b'[')) => {
            Some(Cow::Borrowed(raw))
        }
        Some(raw) => return Err(DecodeError::ParamsNotStructured(json_kind(raw.get()))),
    };
    match id {
        None => Ok(Message::Notification(Notification { method, params })),
        // MCP basic protocol, Requests: "Unlike base JSON-RPC, the ID MUST NOT be null."
        Some(raw) if raw.get() == "null" => Err(DecodeError::NullIdOnRequest),
        Some(raw) => Ok(Message::Request(Request {
            id: parse_id(raw)?,
            method,
            params,
        })),
    }
}

/// Spec §5: exactly one of `result` and `error`; `id` is required, and `null` only on errors.
fn classify_response<'a>(
    id: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
) -> Result<Response<'a>, DecodeError> {
    if result.is_some() && error.is_some() {
        return Err(DecodeError::ResultAndError);
    }
    let id = match id {
        None => return Err(DecodeError::MissingId),
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => Some(parse_id(raw)?),
    };
    match (result, error) {
        (Some(_), _) if id.is_none() => Err(DecodeError::NullIdWithResult),
        (Some(result), _) => Ok(Response {
            id,
            outcome: Ok(Cow::Borrowed(result)),
        }),
        (None, Some(error)) => Ok(Response {
            id,
            outcome: Err(parse_error_object(error)?),
        }),
        (None, None) => Err(DecodeError::NeitherResultNorError),
    }
}

/// Spec §5.1: `code` an integer, `message` a string, `data` optional and any value.
fn parse_error_object(raw: &RawValue) -> Result<ErrorObject<'_>, DecodeError> {
    let text = raw.get();
    if !text.starts_with('{') {
        return Err(DecodeError::InvalidErrorObject("not an object"));
    }
    let ErrorMembers(members) =
        serde_json::from_str(text).map_err(|e| DecodeError::NotJson(e.to_string()))?;
    if let Some(i) = members.duplicate {
        return Err(DecodeError::DuplicateMember(name_at(
            &ERROR_OBJECT_PATHS,
            i,
        )));
    }
    let [code, message, data] = members.values;
    let code = match code {
        None => return Err(DecodeError::InvalidErrorObject("no `code` member")),
        Some(code) if json_kind(code.get()) != "a number" => {
            return Err(DecodeError::InvalidErrorObject("`code` is not a number"));
        }
        Some(code) => parse_integer(code.get()).map_err(|_| {
            DecodeError::InvalidErrorObject("`code` is not an integer in the i64 range")
        })?,
    };
    let message = match message.map(parse_str) {
        None => return Err(DecodeError::InvalidErrorObject("no `message` member")),
        Some(Ok(message)) => message,
        Some(Err(StrError::NotString)) => {
            return Err(DecodeError::InvalidErrorObject("`message` is not a string"));
        }
        Some(Err(StrError::Invalid(message))) => {
            return Err(not_unicode("error.message", message));
        }
    };
    Ok(ErrorObject {
        code,
        message,
        data: data.map(Cow::Borrowed),
    })
}

fn name_at<const N: usize>(names: &[&'static str; N], i: usize) -> &'static str {
    names.get(i).copied().unwrap_or("?")
}

/// Spec §4: "jsonrpc: A String specifying the version of the JSON-RPC protocol. MUST be exactly
/// "2.0"." An escaped spelling of the same string (`"2\u002e0"`) is the same string.
fn is_version_2(raw: &RawValue) -> bool {
    let text = raw.get();
    text == r#""2.0""# || matches!(parse_str(raw), Ok(version) if version == "2.0")
}

enum StrError {
    /// The value is not a JSON string.
    NotString,
    /// The value is a JSON string that Rust cannot hold (a lone surrogate escape).
    Invalid(String),
}

/// Reads a raw JSON string, borrowing it when it has no escapes.
fn parse_str(raw: &RawValue) -> Result<Cow<'_, str>, StrError> {
    let text = raw.get();
    if !text.starts_with('"') {
        return Err(StrError::NotString);
    }
    if !text.contains('\\') {
        // A valid JSON string without escapes is its content between the quotes.
        if let Some(inner) = text.get(1..text.len() - 1) {
            return Ok(Cow::Borrowed(inner));
        }
    }
    serde_json::from_str::<String>(text)
        .map(Cow::Owned)
        .map_err(|e| {
            // The position serde_json reports is within `raw`, not within the input: drop it.
            let message = e.to_string();
            let position = format!(" at line {} column {}", e.line(), e.column());
            StrError::Invalid(match message.strip_suffix(&position) {
                Some(message) => message.to_owned(),
                None => message,
            })
        })
}

/// A string member holding an escape that no Rust string can hold. RFC 8259 §8.2 leaves such
/// strings (lone surrogates, `"\ud800"`) to the implementation; serde_json refuses them.
fn not_unicode(member: &str, message: String) -> DecodeError {
    DecodeError::NotJson(format!(
        "`{member}` is not a valid Unicode string: {message}"
    ))
}

/// Spec §4: an id is "a String, Number, or NULL value"; MCP narrows it to strings and integers,
/// and spec §4 footnote 2 says numbers "SHOULD NOT contain fractional parts". `-0` reads as `0`.
fn parse_id(raw: &RawValue) -> Result<Id, DecodeError> {
    match parse_str(raw) {
        Ok(s) => Ok(Id::String(s.into_owned())),
        Err(StrError::Invalid(message)) => Err(not_unicode("id", message)),
        Err(StrError::NotString) => match json_kind(raw.get()) {
            "a number" => parse_integer(raw.get())
                .map(Id::Number)
                .map_err(DecodeError::InvalidId),
            other => Err(DecodeError::InvalidId(other)),
        },
    }
}

/// Reads the raw text of a JSON number as an `i64`, refusing fractions (`1.0`), exponents
/// (`1e2`) and values outside the `i64` range.
fn parse_integer(raw: &str) -> Result<i64, &'static str> {
    if raw.contains('.') {
        Err("a number with a fraction")
    } else if raw.contains(['e', 'E']) {
        Err("a number with an exponent")
    } else {
        raw.parse::<i64>()
            .map_err(|_| "an integer outside the i64 range")
    }
}

/// What kind of value a raw JSON text holds (serde_json trims raw values, so the first byte
/// decides).
pub(crate) fn json_kind(raw: &str) -> &'static str {
    match raw.as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(b'-' | b'0'..=b'9') => "a number",
        _ => "nothing",
    }
}
