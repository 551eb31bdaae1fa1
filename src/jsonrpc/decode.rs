//! The strict decoder: one serde_json pass collects each object's members as borrowed raw JSON,
//! then hand-written rules classify the member set as a request, a notification or a response.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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
    decode_str(utf8(input)?)
}

/// The input as a `str`: RFC 8259 §8.1 requires UTF-8.
pub(super) fn utf8(input: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(input)
        .map_err(|e| DecodeError::NotJson(format!("invalid UTF-8 at byte {}", e.valid_up_to())))
}

/// Decodes one JSON text held in a `str`; see [`decode`].
///
/// # Errors
///
/// As for [`decode`].
pub(crate) fn decode_str(input: &str) -> Result<Packet<'_>, DecodeError> {
    let top: Top<'_> =
        serde_json::from_str(input).map_err(|e| DecodeError::NotJson(e.to_string()))?;
    match top {
        Top::Single(item) => item.map(Packet::Single),
        Top::Batch(items) if items.is_empty() => Err(DecodeError::EmptyBatch),
        Top::Batch(items) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| item.map_err(|e| e.in_batch(index)))
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

/// One would-be message, classified as soon as its object is read (so that its members are
/// never moved around): the message, or the first rule it breaks. A JSON syntax error anywhere
/// in the input still takes precedence, as it fails the whole pass.
type Item<'a> = Result<Message<'a>, DecodeError>;

/// The envelope members (spec §4, §5). Any other member is skipped without being kept.
pub(super) const ENVELOPE: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

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

/// The envelope members of one object, read in one pass. `jsonrpc` is checked as it is read,
/// `method` read as a string (or what was found instead), `id` and `error` kept as borrowed raw
/// JSON until [`classify_envelope`] checks them in their turn. `None` is an absent member, which
/// differs from one that is `null`. `params` and `result` went to a [`Payloads`] reader; this
/// only says whether they occurred and, for `params`, what was found if it is not a structured
/// value. `duplicate` is the index in [`ENVELOPE`] of the first member that occurred twice.
pub(super) struct Envelope<'a> {
    /// Whether `jsonrpc` is the string `"2.0"`.
    pub(super) jsonrpc: Option<bool>,
    pub(super) id: Option<IdMember<'a>>,
    pub(super) method: Option<Text<'a>>,
    pub(super) params: Option<Structured>,
    pub(super) result: bool,
    pub(super) error: Option<&'a RawValue>,
    pub(super) duplicate: Option<usize>,
}

impl Envelope<'_> {
    /// No members yet.
    pub(super) fn new() -> Self {
        Envelope {
            jsonrpc: None,
            id: None,
            method: None,
            params: None,
            result: false,
            error: None,
            duplicate: None,
        }
    }
}

/// An `id` member: its raw JSON (read by the serde pass, checked when its turn comes in
/// [`classify_envelope`]), or an id the fast reader parsed (`None` for `null`).
pub(super) enum IdMember<'a> {
    Raw(&'a RawValue),
    Parsed(Option<Id>),
}

impl IdMember<'_> {
    /// The id, `None` for `null`, or why it is not a valid id.
    fn parse(self) -> Result<Option<Id>, DecodeError> {
        match self {
            IdMember::Raw(raw) if raw.get() == "null" => Ok(None),
            IdMember::Raw(raw) => parse_id(raw).map(Some),
            IdMember::Parsed(id) => Ok(id),
        }
    }
}

/// A member that should be a string: the string (borrowed unless it holds escapes), or why not.
pub(super) type Text<'a> = Result<Cow<'a, str>, StrError>;

/// Whether a `params` member is a structured value (spec §4.2), or else what kind of value.
pub(super) type Structured = Result<(), &'static str>;

/// The envelope of an object whose members were all read raw.
#[inline]
fn raw_envelope(members: Members<'_, 6>) -> (Envelope<'_>, RawPayloads<'_>) {
    let [jsonrpc, id, method, params, result, error] = members.values;
    let mut payloads = RawPayloads {
        params: None,
        result,
    };
    let params = params.map(|raw| payloads.set_params(raw));
    let envelope = Envelope {
        jsonrpc: jsonrpc.map(is_version_2),
        id: id.map(IdMember::Raw),
        method: method.map(parse_str),
        params,
        result: result.is_some(),
        error,
        duplicate: members.duplicate,
    };
    (envelope, payloads)
}

/// Where the envelope pass puts `params` and `result`: borrowed raw JSON ([`RawPayloads`]), or
/// values deserialized in place into a caller's types (see `typed.rs`). The payloads live in the
/// reader, not in the [`Envelope`], so that a large typed value is written once rather than
/// moved through every layer of the pass.
pub(super) trait Payloads<'de> {
    /// Reads the value of a `jsonrpc` member: whether it is the string `"2.0"`.
    fn version<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<bool, A::Error>;

    /// Reads the value of a `method` member.
    fn method<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Text<'de>, A::Error>;

    /// Reads the value of a `params` member.
    fn params<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Structured, A::Error>;
    /// Reads the value of a `result` member.
    fn result<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<(), A::Error>;
}

/// `params` and `result` as borrowed raw JSON.
#[derive(Default)]
pub(super) struct RawPayloads<'a> {
    pub(super) params: Option<&'a RawValue>,
    pub(super) result: Option<&'a RawValue>,
}

impl<'a> RawPayloads<'a> {
    /// Keeps raw `params` if they are structured, and says whether they are.
    pub(super) fn set_params(&mut self, raw: &'a RawValue) -> Structured {
        // serde_json trims raw values, so the first byte tells the kind.
        if matches!(raw.get().as_bytes().first(), Some(b'{' | b'[')) {
            self.params = Some(raw);
            Ok(())
        } else {
            Err(json_kind(raw.get()))
        }
    }
}

/// Reads the members of one object as a would-be envelope, `params` and `result` into
/// `payloads`; other members are skipped.
pub(super) fn read_envelope<'de, M: Payloads<'de>, A: MapAccess<'de>>(
    mut map: A,
    payloads: &mut M,
) -> Result<Envelope<'de>, A::Error> {
    let mut env = Envelope::new();
    while let Some(key) = map.next_key_seed(KeySeed(&ENVELOPE))? {
        let (i, slot) = match key {
            Some(i @ 0) => {
                let value = payloads.version(&mut map)?;
                set_once(&mut env.jsonrpc, value, &mut env.duplicate, i);
                continue;
            }
            Some(i @ 2) => {
                let value = payloads.method(&mut map)?;
                set_once(&mut env.method, value, &mut env.duplicate, i);
                continue;
            }
            Some(i @ 1) => {
                let raw = map.next_value::<&'de RawValue>()?;
                set_once(&mut env.id, IdMember::Raw(raw), &mut env.duplicate, i);
                continue;
            }
            Some(3) if env.params.is_none() => {
                env.params = Some(payloads.params(&mut map)?);
                continue;
            }
            Some(4) if !env.result => {
                payloads.result(&mut map)?;
                env.result = true;
                continue;
            }
            Some(i @ 5) => (i, &mut env.error),
            Some(i) => {
                // A second `params` or `result`.
                map.next_value::<IgnoredAny>()?;
                env.duplicate.get_or_insert(i);
                continue;
            }
            None => {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
        };
        let value = map.next_value::<&'de RawValue>()?;
        set_once(slot, value, &mut env.duplicate, i);
    }
    Ok(env)
}

/// Keeps the first value of member `i`, noting a second occurrence in `duplicate`.
fn set_once<T>(slot: &mut Option<T>, value: T, duplicate: &mut Option<usize>, i: usize) {
    if slot.is_some() {
        duplicate.get_or_insert(i);
    } else {
        *slot = Some(value);
    }
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
        fn visit_bool<E: ::serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($not_object("a boolean"))
        }
        fn visit_i64<E: ::serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($not_object("a number"))
        }
        fn visit_u64<E: ::serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($not_object("a number"))
        }
        fn visit_f64<E: ::serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($not_object("a number"))
        }
        fn visit_str<E: ::serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($not_object("a string"))
        }
        fn visit_unit<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($not_object("null"))
        }
        fn visit_none<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($not_object("null"))
        }
    };
}
pub(super) use scalars_are_not_objects;

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    scalars_are_not_objects!(|kind| Top::Single(Err(DecodeError::NotAnObject(kind))));

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        ItemVisitor.visit_map(map).map(Top::Single)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ItemVisitor)? {
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

    scalars_are_not_objects!(|kind| Err(DecodeError::NotAnObject(kind)));

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        // Every member raw, read by one loop (the typed decoders use `read_envelope`).
        let members = read_members(map, &ENVELOPE)?;
        let (envelope, payloads) = raw_envelope(members);
        Ok(classify(envelope, payloads))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(DecodeError::NotAnObject("an array")))
    }
}

impl<'de> DeserializeSeed<'de> for ItemVisitor {
    type Value = Item<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Item<'de>, D::Error> {
        deserializer.deserialize_any(self)
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

/// What the envelope rules made of one object; `params` and `result` are in the
/// [`Payloads`] reader.
pub(super) enum Classified<'a> {
    Request {
        id: Id,
        method: Cow<'a, str>,
    },
    Notification {
        method: Cow<'a, str>,
    },
    Response {
        id: Option<Id>,
        error: Option<ErrorObject<'a>>,
    },
}

/// The message an object's envelope and raw payloads make, or the first rule they break.
#[inline]
fn classify<'a>(
    envelope: Envelope<'a>,
    payloads: RawPayloads<'a>,
) -> Result<Message<'a>, DecodeError> {
    let params = payloads.params.map(Cow::Borrowed);
    Ok(match classify_envelope(envelope)? {
        Classified::Request { id, method } => Message::Request(Request { id, method, params }),
        Classified::Notification { method } => {
            Message::Notification(Notification { method, params })
        }
        Classified::Response { id, error } => Message::Response(Response {
            id,
            outcome: match (error, payloads.result) {
                (Some(error), _) => Err(error),
                (None, Some(result)) => Ok(Cow::Borrowed(result)),
                // `classify_envelope` saw a result.
                (None, None) => return Err(DecodeError::NeitherResultNorError),
            },
        }),
    })
}

/// Applies the JSON-RPC rules to the members of one object, in a fixed order so that an input
/// breaking several rules always gets the same error.
#[inline]
pub(super) fn classify_envelope(env: Envelope<'_>) -> Result<Classified<'_>, DecodeError> {
    if let Some(i) = env.duplicate {
        return Err(DecodeError::DuplicateMember(name_at(&ENVELOPE, i)));
    }
    let Envelope {
        jsonrpc,
        id,
        method,
        params,
        result,
        error,
        duplicate: _,
    } = env;

    // Spec §4 and §5: "jsonrpc ... MUST be exactly "2.0"".
    match jsonrpc {
        None => return Err(DecodeError::MissingVersion),
        Some(true) => {}
        Some(false) => return Err(DecodeError::WrongVersion),
    }

    let response_member = if result {
        Some("result")
    } else {
        error.map(|_| "error")
    };
    match (method, params, response_member) {
        // Spec §5: a response carries `result` or `error`, never request members.
        (Some(_), _, Some(response)) => Err(DecodeError::MethodWithResult {
            request: "method",
            response,
        }),
        (None, Some(_), Some(response)) => Err(DecodeError::MethodWithResult {
            request: "params",
            response,
        }),
        (Some(method), params, None) => classify_call(id, method, params),
        (None, Some(_), None) => Err(DecodeError::MissingMethod),
        (None, None, Some(_)) => classify_response(id, result, error),
        (None, None, None) => Err(DecodeError::NeitherResultNorError),
    }
}

/// Spec §4 (request), §4.1 (notification: no `id` member), §4.2 (parameter structures).
fn classify_call<'a>(
    id: Option<IdMember<'a>>,
    method: Text<'a>,
    params: Option<Structured>,
) -> Result<Classified<'a>, DecodeError> {
    let method = match method {
        Ok(method) => method,
        Err(StrError::NotString) => return Err(DecodeError::MethodNotString),
        Err(StrError::Invalid(message)) => return Err(not_unicode("method", message)),
    };
    // Spec §4.2: "If present, parameters for the rpc call MUST be provided as a Structured
    // value". `null` is not structured.
    if let Some(Err(found)) = params {
        return Err(DecodeError::ParamsNotStructured(found));
    }
    match id.map(IdMember::parse) {
        None => Ok(Classified::Notification { method }),
        // MCP basic protocol, Requests: "Unlike base JSON-RPC, the ID MUST NOT be null."
        Some(Ok(None)) => Err(DecodeError::NullIdOnRequest),
        Some(Ok(Some(id))) => Ok(Classified::Request { id, method }),
        Some(Err(invalid)) => Err(invalid),
    }
}

/// Spec §5: exactly one of `result` and `error`; `id` is required, and `null` only on errors.
fn classify_response<'a>(
    id: Option<IdMember<'a>>,
    result: bool,
    error: Option<&'a RawValue>,
) -> Result<Classified<'a>, DecodeError> {
    if result && error.is_some() {
        return Err(DecodeError::ResultAndError);
    }
    let id = match id {
        None => return Err(DecodeError::MissingId),
        Some(id) => id.parse()?,
    };
    match (result, error) {
        (true, _) if id.is_none() => Err(DecodeError::NullIdWithResult),
        (true, _) => Ok(Classified::Response { id, error: None }),
        (false, Some(error)) => Ok(Classified::Response {
            id,
            error: Some(parse_error_object(error)?),
        }),
        (false, None) => Err(DecodeError::NeitherResultNorError),
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

/// Why a member is not a string this decoder can use.
pub(super) enum StrError {
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
pub(super) fn parse_integer(raw: &str) -> Result<i64, &'static str> {
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
