//! What the stateless revision 2026-07-28 puts in messages (`docs/specification/2026-07-28/`):
//! the per-request `_meta` envelope, `server/discover` and its result, `resultType` and the
//! `input_required` round trip, cache hints, and the rules that read the era of a server from
//! its answer to the probe (`basic/versioning.mdx`, "Negotiating the era").
//!
//! Pure functions over JSON; the session decides when to call them.
//!
//! ```text
//! use mcpwire::mcp::modern::Envelope;
//! use mcpwire::mcp::{ClientCapabilities, Implementation, ProtocolVersion};
//! use serde_json::value::RawValue;
//!
//! let envelope = Envelope {
//!     version: ProtocolVersion::V2026_07_28,
//!     capabilities: ClientCapabilities::default(),
//!     client_info: Implementation::new("host", "1.0"),
//! };
//! let params = RawValue::from_string(r#"{"name":"echo","_meta":{"progressToken":7}}"#.into())?;
//! let stamped = envelope.stamp(Some(&params))?;
//! let value: serde_json::Value = serde_json::from_str(stamped.get())?;
//! assert_eq!(value["_meta"]["progressToken"], 7);
//! assert_eq!(value["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::common::{Implementation, JsonObject};
use super::de::open_struct;
use super::error_code;
use super::lifecycle::{ClientCapabilities, ServerCapabilities};
use super::version::ProtocolVersion;

/// `_meta` key: the revision the request is made at (required on every request).
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: what the client can do for this request (required; `{}` for nothing).
pub(crate) const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: who the client is.
pub(crate) const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of a result: who the server is.
pub(crate) const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The most members a params object may have for [`Envelope::stamp`] and [`retry_params`]
/// to rewrite it (a guard on a caller's input, far above any real request).
const MAX_PARAMS_MEMBERS: usize = 4096;

/// The `_meta` members a client puts on every request at a stateless revision.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Envelope {
    /// The revision (`io.modelcontextprotocol/protocolVersion`).
    pub version: ProtocolVersion,
    /// What the client can do (`io.modelcontextprotocol/clientCapabilities`): only what it
    /// can fulfil, since a server asks for input only through declared capabilities.
    pub capabilities: ClientCapabilities,
    /// Who the client is (`io.modelcontextprotocol/clientInfo`).
    pub client_info: Implementation,
}

/// Why params could not be rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum ParamsError {
    /// The params are not a JSON object (or their `_meta` is not one).
    NotAnObject,
    /// The params have more members than this module rewrites.
    TooLarge,
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamsError::NotAnObject => f.write_str("request params must be a JSON object"),
            ParamsError::TooLarge => {
                write!(
                    f,
                    "request params have more than {MAX_PARAMS_MEMBERS} members"
                )
            }
        }
    }
}

impl std::error::Error for ParamsError {}

impl Envelope {
    /// `params` with the envelope's members set in `_meta` (keeping every other member of
    /// both, in order and byte for byte; the envelope's keys replace any the caller set).
    pub(crate) fn stamp(&self, params: Option<&RawValue>) -> Result<Box<RawValue>, ParamsError> {
        self.stamp_with(params, &self.members())
    }

    /// The envelope's members as they go into `_meta`, without the braces: the text that
    /// [`Stamp`] keeps so a session serializes them once.
    fn members(&self) -> String {
        let object = serde_json::to_string(&StampedMeta(&Stamped {
            members: &[],
            meta: &[],
            envelope: self,
        }))
        .unwrap_or_default();
        object
            .strip_prefix('{')
            .and_then(|inner| inner.strip_suffix('}'))
            .unwrap_or_default()
            .to_owned()
    }

    fn stamp_with(
        &self,
        params: Option<&RawValue>,
        members: &str,
    ) -> Result<Box<RawValue>, ParamsError> {
        if let Some(stamped) = splice(params.map_or("{}", RawValue::get), members)
            .and_then(|text| RawValue::from_string(text).ok())
        {
            return Ok(stamped);
        }
        self.stamp_members(params)
    }

    /// The general path of [`stamp`](Self::stamp): the params read member by member.
    fn stamp_members(&self, params: Option<&RawValue>) -> Result<Box<RawValue>, ParamsError> {
        let (members, mut meta) = RawMembers::params_and_meta(params)?;
        for key in [
            PROTOCOL_VERSION_KEY,
            CLIENT_CAPABILITIES_KEY,
            CLIENT_INFO_KEY,
        ] {
            meta.take(key);
        }
        // One serialization of the whole object: the raw members are written as they are, and
        // nothing is parsed again (a `RawValue` built from a string is validated; one
        // serialized is not).
        serde_json::value::to_raw_value(&Stamped {
            members: &members.0,
            meta: &meta.0,
            envelope: self,
        })
        .map_err(|_| ParamsError::NotAnObject)
    }
}

/// Whether `key` is one of the envelope's (a `_meta` member that stamping replaces).
pub(crate) fn is_envelope_key(key: &str) -> bool {
    [
        PROTOCOL_VERSION_KEY,
        CLIENT_CAPABILITIES_KEY,
        CLIENT_INFO_KEY,
    ]
    .contains(&key)
}

/// An envelope with its members serialized once, for the many requests of a session.
#[cfg(feature = "session")]
#[derive(Clone, Debug)]
pub(crate) struct Stamp {
    envelope: Envelope,
    /// The members as text, for [`splice`].
    members: String,
    /// Each member's value, for [`write_members`](Self::write_members).
    #[cfg(feature = "client")]
    values: [Box<RawValue>; 3],
}

#[cfg(feature = "session")]
impl Stamp {
    pub(crate) fn new(envelope: Envelope) -> Stamp {
        let members = envelope.members();
        #[cfg(feature = "client")]
        let raw = |value: Result<Box<RawValue>, serde_json::Error>| {
            value.unwrap_or_else(|_| RawValue::NULL.to_owned())
        };
        #[cfg(feature = "client")]
        let values = [
            raw(serde_json::value::to_raw_value(envelope.version.as_str())),
            raw(serde_json::value::to_raw_value(&envelope.capabilities)),
            raw(serde_json::value::to_raw_value(&envelope.client_info)),
        ];
        Stamp {
            envelope,
            members,
            #[cfg(feature = "client")]
            values,
        }
    }

    /// Writes the envelope's members into a `_meta` being serialized, for params built with
    /// it (which must hold no other member of those names: see [`is_envelope_key`]).
    #[cfg(feature = "client")]
    pub(crate) fn write_members<M: serde::ser::SerializeMap>(
        &self,
        map: &mut M,
    ) -> Result<(), M::Error> {
        let keys = [
            PROTOCOL_VERSION_KEY,
            CLIENT_CAPABILITIES_KEY,
            CLIENT_INFO_KEY,
        ];
        for (key, value) in keys.into_iter().zip(&self.values) {
            map.serialize_entry(key, value)?;
        }
        Ok(())
    }

    pub(crate) fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// As [`Envelope::stamp`].
    pub(crate) fn stamp(&self, params: Option<&RawValue>) -> Result<Box<RawValue>, ParamsError> {
        self.envelope.stamp_with(params, &self.members)
    }
}

/// The common case of [`Envelope::stamp`] done on the text: `params` (valid JSON) with its
/// `_meta` moved last and the envelope's `members` appended to it, every other member copied
/// as it is. `None` for anything else, which the general path reads: params that are not an
/// object, a key with an escape in it (it may spell `_meta` or an envelope key), `_meta`
/// twice or not an object, envelope keys already in `_meta`, or too many members.
fn splice(params: &str, members: &str) -> Option<String> {
    let text = params.as_bytes();
    let mut at = skip_space(text, 0);
    if text.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut out = String::with_capacity(params.len() + members.len() + 16);
    out.push('{');
    let mut meta: Option<&str> = None;
    let mut count = 0;
    at = skip_space(text, at);
    if text.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let (key, start, value, end) = next_member(params, at)?;
            count += 1;
            if count > MAX_PARAMS_MEMBERS {
                return None;
            }
            if key == "_meta" {
                if meta.is_some() || !value.starts_with('{') {
                    return None;
                }
                meta = Some(&value[1..value.len() - 1]);
            } else {
                if out.len() > 1 {
                    out.push(',');
                }
                out.push_str(&params[start..end]);
            }
            at = skip_space(text, end);
            match text.get(at)? {
                b',' => at = skip_space(text, at + 1),
                b'}' => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    if skip_space(text, at) != text.len() {
        return None;
    }
    let inner = meta
        .unwrap_or_default()
        .trim_matches(|c| " \t\r\n".contains(c));
    if !inner.is_empty() {
        let (mut at, mut count) = (0, 0);
        loop {
            let (key, _, _, end) = next_member(inner, at)?;
            count += 1;
            if count > MAX_PARAMS_MEMBERS || is_envelope_key(key) {
                return None;
            }
            at = skip_space(inner.as_bytes(), end);
            match inner.as_bytes().get(at) {
                Some(b',') => at = skip_space(inner.as_bytes(), at + 1),
                None => break,
                Some(_) => return None,
            }
        }
    }
    if out.len() > 1 {
        out.push(',');
    }
    out.push_str("\"_meta\":{");
    if !inner.is_empty() {
        out.push_str(inner);
        out.push(',');
    }
    out.push_str(members);
    out.push_str("}}");
    Some(out)
}

/// The member of an object's text that starts at `at` (its key): the key, where the member
/// starts, its value's text, and where it ends. `None` when the key holds an escape.
fn next_member(text: &str, at: usize) -> Option<(&str, usize, &str, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let key_end = skip_string(bytes, at)?;
    let key = text.get(at + 1..key_end - 1)?;
    if key.contains('\\') {
        return None;
    }
    let colon = skip_space(bytes, key_end);
    if bytes.get(colon) != Some(&b':') {
        return None;
    }
    let value_start = skip_space(bytes, colon + 1);
    let value_end = skip_value(bytes, value_start)?;
    Some((key, at, text.get(value_start..value_end)?, value_end))
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while text
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        at += 1;
    }
    at
}

/// Past the string that starts at `at` (its opening quote).
fn skip_string(text: &[u8], at: usize) -> Option<usize> {
    let mut at = at + 1;
    loop {
        match text.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
}

/// Past the value that starts at `at`, in text known to be valid JSON.
fn skip_value(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at)? {
        b'"' => skip_string(text, at),
        b'{' | b'[' => {
            let (mut depth, mut at) = (0usize, at);
            loop {
                // Only quotes and brackets matter; a closing bracket of either kind ends a
                // level, the text being valid.
                at += text
                    .get(at..)?
                    .iter()
                    .position(|b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']'))?;
                match text[at] {
                    b'"' => {
                        at = skip_string(text, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    _ => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                }
                at += 1;
            }
        }
        _ => {
            let mut end = at;
            while text
                .get(end)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
            {
                end += 1;
            }
            (end > at).then_some(end)
        }
    }
}

/// Params with the envelope stamped in `_meta`, serialized as one object: `members`, then
/// `_meta` with its own members and the envelope's.
struct Stamped<'a> {
    members: &'a [(Cow<'a, str>, &'a RawValue)],
    meta: &'a [(Cow<'a, str>, &'a RawValue)],
    envelope: &'a Envelope,
}

impl Serialize for Stamped<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.members.len() + 1))?;
        for (key, value) in self.members {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry("_meta", &StampedMeta(self))?;
        map.end()
    }
}

struct StampedMeta<'a>(&'a Stamped<'a>);

impl Serialize for StampedMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Stamped { meta, envelope, .. } = self.0;
        let mut map = serializer.serialize_map(Some(meta.len() + 3))?;
        for (key, value) in *meta {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(PROTOCOL_VERSION_KEY, envelope.version.as_str())?;
        map.serialize_entry(CLIENT_CAPABILITIES_KEY, &envelope.capabilities)?;
        map.serialize_entry(CLIENT_INFO_KEY, &envelope.client_info)?;
        map.end()
    }
}

/// The members of a JSON object, in order, their values as sent: borrowed from the text
/// they were read from (a key is copied only when it holds an escape).
#[derive(Default)]
struct RawMembers<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// An object key, borrowed when it can be.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'a> RawMembers<'a> {
    /// The members of `params` (none without params) but `_meta`, and `_meta`'s, each kept
    /// raw: a `Value` would round a big integer `progressToken` and reorder keys.
    fn params_and_meta(params: Option<&'a RawValue>) -> Result<(Self, Self), ParamsError> {
        let mut members = match params {
            Some(raw) => RawMembers::parse(raw)?,
            None => RawMembers::default(),
        };
        let meta = match members.take("_meta") {
            Some(raw) => RawMembers::parse(raw)?,
            None => RawMembers::default(),
        };
        Ok((members, meta))
    }

    fn parse(raw: &'a RawValue) -> Result<Self, ParamsError> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Result<RawMembers<'de>, ParamsError>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some((Key(key), value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    if members.len() == MAX_PARAMS_MEMBERS {
                        // The rest is read, not left: serde_json refuses an object whose
                        // visitor stops before its end, which would say "not an object".
                        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                        return Ok(Err(ParamsError::TooLarge));
                    }
                    members.push((key, value));
                }
                Ok(Ok(RawMembers(members)))
            }
        }
        let mut deserializer = serde_json::Deserializer::from_str(raw.get());
        deserializer
            .deserialize_map(MembersVisitor)
            .map_err(|_| ParamsError::NotAnObject)?
    }

    /// Whether `raw` (valid JSON) is an object without members.
    fn is_empty_object(raw: &RawValue) -> bool {
        raw.get()
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
            .is_some_and(|inside| inside.trim().is_empty())
    }

    /// Removes every member named `key`, returning the last.
    fn take(&mut self, key: &str) -> Option<&'a RawValue> {
        let mut found = None;
        self.0.retain(|(name, value)| {
            if name == key {
                found = Some(*value);
                false
            } else {
                true
            }
        });
        found
    }

    fn into_raw(self) -> Box<RawValue> {
        // Serialized, not built as text and parsed again: keys escaped by serde_json, values
        // written as they are.
        serde_json::value::to_raw_value(&MembersRef(&self.0))
            .unwrap_or_else(|_| RawValue::NULL.to_owned())
    }
}

/// Raw members serialized as a JSON object.
struct MembersRef<'a, 'b>(&'b [(Cow<'a, str>, &'a RawValue)]);

impl Serialize for MembersRef<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// The params of a retry after `input_required` (`basic/patterns/input-required.mdx`): the
/// original params, with `inputResponses` and `requestState` set when given (the state echoed
/// exactly as the server sent it, escapes and all) and removed otherwise. The caller stamps a
/// fresh envelope and sends it under a new id.
pub(crate) fn retry_params(
    original: Option<&RawValue>,
    input_responses: Option<&RawValue>,
    request_state: Option<&RawValue>,
) -> Result<Box<RawValue>, ParamsError> {
    let mut members = match original {
        Some(raw) => RawMembers::parse(raw)?,
        None => RawMembers::default(),
    };
    members.take("inputResponses");
    members.take("requestState");
    if let Some(responses) = input_responses {
        members.0.push((Cow::Borrowed("inputResponses"), responses));
    }
    if let Some(state) = request_state {
        members.0.push((Cow::Borrowed("requestState"), state));
    }
    Ok(members.into_raw())
}

/// `params` (an object, or none) with string members set in its `_meta`: the params' other
/// members and `_meta`'s kept in order and byte for byte, `_meta` moved last, the members for
/// which `replaced` holds dropped and `strings` written after the rest. Used in every era (the
/// trace context of [`TraceContext::inject`](super::TraceContext)), so it is not the envelope's
/// text splice: it reads the params member by member.
#[cfg(feature = "session")]
pub(crate) fn with_meta_strings<'s>(
    params: Option<&RawValue>,
    replaced: fn(&str) -> bool,
    strings: impl Iterator<Item = &'s (&'s str, &'s str)> + Clone,
) -> Result<Box<RawValue>, ParamsError> {
    let (members, mut meta) = RawMembers::params_and_meta(params)?;
    meta.0.retain(|(key, _)| !replaced(key));
    struct Meta<'a, 'b, I> {
        meta: &'b [(Cow<'a, str>, &'a RawValue)],
        strings: I,
    }
    impl<'s, I: Iterator<Item = &'s (&'s str, &'s str)> + Clone> Serialize for Meta<'_, '_, I> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(None)?;
            for (key, value) in self.meta {
                map.serialize_entry(key, value)?;
            }
            for (key, value) in self.strings.clone() {
                map.serialize_entry(key, value)?;
            }
            map.end()
        }
    }
    struct Params<'a, 'b, I> {
        members: &'b [(Cow<'a, str>, &'a RawValue)],
        meta: Meta<'a, 'b, I>,
    }
    impl<'s, I: Iterator<Item = &'s (&'s str, &'s str)> + Clone> Serialize for Params<'_, '_, I> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(Some(self.members.len() + 1))?;
            for (key, value) in self.members {
                map.serialize_entry(key, value)?;
            }
            map.serialize_entry("_meta", &self.meta)?;
            map.end()
        }
    }
    serde_json::value::to_raw_value(&Params {
        members: &members.0,
        meta: Meta {
            meta: &meta.0,
            strings,
        },
    })
    .map_err(|_| ParamsError::NotAnObject)
}

/// The result of `server/discover` (schema `DiscoverResult`). Only `supportedVersions` and
/// `capabilities` are required: servers differ on where they put `serverInfo` (the result's
/// `_meta`, as the schema says, or the result itself) and some leave out the cache hints.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The revisions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, a hint a client MAY give its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `serverInfo` when the server put it in the result itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Implementation>,
    /// `resultType`; absent means complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<String>,
    /// `ttlMs`: how long the result may be reused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<Value>,
    /// `cacheScope`: `public` or `private`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    DiscoverResult via DiscoverResultBuilder, expecting "a discover result",
    {
        supported_versions: Vec<String> = "supportedVersions" [required],
        capabilities: ServerCapabilities = "capabilities" [required],
        instructions: Option<String> = "instructions",
        server_info: Option<Implementation> = "serverInfo",
        result_type: Option<String> = "resultType",
        ttl_ms: Option<Value> = "ttlMs",
        cache_scope: Option<String> = "cacheScope",
        meta: Option<JsonObject> = "_meta",
    }
}

impl DiscoverResult {
    /// Who the server is: `_meta["io.modelcontextprotocol/serverInfo"]`, else a `serverInfo`
    /// member, else `None`.
    pub fn server_info(&self) -> Option<Implementation> {
        self.meta
            .as_ref()
            .and_then(|meta| meta.get(SERVER_INFO_KEY))
            .and_then(|info| serde_json::from_value(info.clone()).ok())
            .or_else(|| self.server_info.clone())
    }

    /// The newest of `ours` that the server lists, if any.
    pub(crate) fn common_version(&self, ours: &[ProtocolVersion]) -> Option<ProtocolVersion> {
        newest_common(ours, self.supported_versions.iter().map(String::as_str))
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// The cache hint of this result.
    pub(crate) fn cache_hint(&self) -> CacheHint {
        CacheHint::read(self.ttl_ms.as_ref(), self.cache_scope.as_deref())
    }
}

/// The newest version of `ours` among `theirs`.
fn newest_common<'a>(
    ours: &[ProtocolVersion],
    theirs: impl Iterator<Item = &'a str> + Clone,
) -> Option<ProtocolVersion> {
    ours.iter()
        .copied()
        .filter(|v| theirs.clone().any(|t| t == v.as_str()))
        .max()
}

/// Whether a result may be reused by whoever else asks (`server/utilities/caching.mdx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum CacheScope {
    /// Anyone may reuse it.
    Public,
    /// Only the same credentials may reuse it (the default when the server names neither).
    Private,
}

/// How long a result may be reused, and by whom (`ttlMs`, `cacheScope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CacheHint {
    /// How long; zero means not at all.
    pub ttl: Duration,
    /// By whom.
    pub scope: CacheScope,
}

impl CacheHint {
    /// Reads the hint: an absent, negative or non-integer `ttlMs` is zero; any `cacheScope`
    /// but `"public"` is private.
    pub(crate) fn read(ttl_ms: Option<&Value>, scope: Option<&str>) -> CacheHint {
        let ttl = ttl_ms.and_then(Value::as_u64).unwrap_or(0);
        CacheHint {
            ttl: Duration::from_millis(ttl),
            scope: match scope {
                Some("public") => CacheScope::Public,
                _ => CacheScope::Private,
            },
        }
    }

    /// Reads the hint from a result's members (`extra` of a typed result).
    pub(crate) fn from_members(members: &JsonObject) -> CacheHint {
        CacheHint::read(
            members.get("ttlMs"),
            members.get("cacheScope").and_then(Value::as_str),
        )
    }
}

/// A result's `resultType` (`basic/index.mdx`, "Result types").
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum ResultType {
    /// The request is done (also when the member is absent).
    Complete,
    /// The server needs input before it can finish: retry with `inputResponses`.
    InputRequired,
    /// The server made a task of the request (the tasks extension, SEP-2663): the result is
    /// a `CreateTaskResult`.
    Task,
    /// A value this client does not know: the result is invalid.
    Unknown(String),
}

impl ResultType {
    /// Reads `resultType` (absent means complete).
    pub(crate) fn read(value: Option<&str>) -> ResultType {
        match value {
            None | Some("complete") => ResultType::Complete,
            Some("input_required") => ResultType::InputRequired,
            Some("task") => ResultType::Task,
            Some(other) => ResultType::Unknown(other.to_owned()),
        }
    }
}

/// What any 2026-07-28 result says of itself, read without decoding the payload: its
/// `resultType` and, for `input_required`, what the server needs (the members kept raw, so the
/// state goes back exactly as it came).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResultEnvelope {
    /// `resultType`.
    #[serde(rename = "resultType", default)]
    result_type: Option<String>,
    /// `inputRequests`: a map from a key of the server's to a request for the client.
    #[serde(rename = "inputRequests", default)]
    pub input_requests: Option<Box<RawValue>>,
    /// `requestState`: opaque, echoed byte for byte on the retry.
    #[serde(rename = "requestState", default)]
    pub request_state: Option<Box<RawValue>>,
}

/// Why a result's envelope is not usable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum ResultError {
    /// The result is not a JSON object, or a member has the wrong type.
    Malformed(String),
    /// `resultType` names a type this client does not know.
    UnknownType(String),
    /// `input_required` without `inputRequests` or `requestState`.
    EmptyInputRequired,
}

impl fmt::Display for ResultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResultError::Malformed(why) => write!(f, "the result is malformed: {why}"),
            ResultError::UnknownType(kind) => {
                write!(f, "the result has an unknown resultType {kind:?}")
            }
            ResultError::EmptyInputRequired => f.write_str(
                "the result is input_required but holds neither inputRequests nor requestState",
            ),
        }
    }
}

impl std::error::Error for ResultError {}

impl ResultEnvelope {
    /// Reads the envelope of `raw`, checking it: a known `resultType`, and for
    /// `input_required` an object of requests and a string state, at least one of them.
    pub(crate) fn read(raw: &RawValue) -> Result<ResultEnvelope, ResultError> {
        if !raw.get().trim_start().starts_with('{') {
            return Err(ResultError::Malformed(
                "a result is a JSON object".to_owned(),
            ));
        }
        let envelope: ResultEnvelope =
            serde_json::from_str(raw.get()).map_err(|e| ResultError::Malformed(e.to_string()))?;
        match envelope.result_type() {
            ResultType::Complete | ResultType::Task => {}
            ResultType::Unknown(kind) => return Err(ResultError::UnknownType(kind)),
            ResultType::InputRequired => {
                if let Some(requests) = &envelope.input_requests
                    && !requests.get().trim_start().starts_with('{')
                {
                    return Err(ResultError::Malformed(
                        "inputRequests is not an object".to_owned(),
                    ));
                }
                if let Some(state) = &envelope.request_state
                    && !state.get().starts_with('"')
                {
                    return Err(ResultError::Malformed(
                        "requestState is not a string".to_owned(),
                    ));
                }
                // `{}` asks for nothing: with no state either, a retry could only repeat the
                // request as it was.
                let no_requests = envelope
                    .input_requests
                    .as_ref()
                    .is_none_or(|requests| RawMembers::is_empty_object(requests));
                if no_requests && envelope.request_state.is_none() {
                    return Err(ResultError::EmptyInputRequired);
                }
            }
        }
        Ok(envelope)
    }

    /// The result's type.
    pub(crate) fn result_type(&self) -> ResultType {
        ResultType::read(self.result_type.as_deref())
    }

    /// The input requests, each under the server's key, in order (empty when none). A key
    /// that appears twice is refused: the answers go back in one object under the same keys,
    /// where a repeated key would be ambiguous.
    /// The requests of an `inputRequests` object on its own (a 2026-07-28 task's).
    pub(crate) fn requests_in(raw: Box<RawValue>) -> Result<Vec<InputRequest>, ResultError> {
        ResultEnvelope {
            input_requests: Some(raw),
            ..ResultEnvelope::default()
        }
        .input_requests()
    }

    pub(crate) fn input_requests(&self) -> Result<Vec<InputRequest>, ResultError> {
        let Some(raw) = &self.input_requests else {
            return Ok(Vec::new());
        };
        let members = RawMembers::parse(raw).map_err(|e| ResultError::Malformed(e.to_string()))?;
        let mut requests: Vec<InputRequest> = Vec::with_capacity(members.0.len());
        let mut keys = std::collections::HashSet::with_capacity(members.0.len());
        for (key, body) in members.0 {
            let key = key.into_owned();
            if !keys.insert(key.clone()) {
                return Err(ResultError::Malformed(format!(
                    "inputRequests: the key {key:?} appears twice"
                )));
            }
            // An object: serde also reads a struct from an array.
            if !body.get().starts_with('{') {
                return Err(ResultError::Malformed(format!(
                    "inputRequests: {key:?} is not an object"
                )));
            }
            let body = serde_json::from_str::<InputRequestBody>(body.get())
                .map_err(|e| ResultError::Malformed(format!("inputRequests: {e}")))?;
            requests.push(InputRequest {
                key,
                method: body.method,
                params: body.params,
            });
        }
        Ok(requests)
    }
}

#[derive(Deserialize)]
struct InputRequestBody {
    method: String,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

/// One thing a server needs from the client before it can finish a request: an
/// `elicitation/create`, `sampling/createMessage` or `roots/list` request, in the shape of the
/// 2025-era server requests.
#[derive(Debug)]
pub struct InputRequest {
    /// The server's key for it; the answer goes back under the same key.
    pub key: String,
    /// The request's method.
    pub method: String,
    /// The request's params.
    pub params: Option<Box<RawValue>>,
}

/// What the answer to the era probe (`server/discover`) says about the server.
#[derive(Debug, PartialEq)]
#[non_exhaustive]
pub(crate) enum EraVerdict {
    /// The server speaks a stateless revision: this one, the newest both sides know.
    Modern(ProtocolVersion),
    /// The server speaks a stateless revision but not the one probed with: probe again at
    /// this one (once).
    Retry(ProtocolVersion),
    /// The server speaks an older revision: open a session with `initialize`.
    Legacy(String),
    /// The server speaks only stateless revisions this client does not know.
    NoCommonVersion(Vec<String>),
}

/// Reads the era from a result of the probe: a complete `DiscoverResult` with a stateless
/// revision in common means modern; anything else (`{}` from a server that answers every
/// request, a discover result with no revision in common, or of a `resultType` other than
/// `complete`) means a 2025-era server.
pub(crate) fn era_from_result(
    raw: &RawValue,
    ours: &[ProtocolVersion],
) -> (EraVerdict, Option<DiscoverResult>) {
    match serde_json::from_str::<DiscoverResult>(raw.get()) {
        // An unknown `resultType` makes a result invalid (`basic/index.mdx`), and
        // `server/discover` is not a request a server may answer `input_required`.
        Ok(result) if ResultType::read(result.result_type.as_deref()) != ResultType::Complete => (
            EraVerdict::Legacy(format!(
                "the server/discover answer has resultType {:?}",
                result.result_type.unwrap_or_default()
            )),
            None,
        ),
        Ok(result) => match result.common_version(ours) {
            Some(version) => (EraVerdict::Modern(version), Some(result)),
            None => (
                EraVerdict::Legacy(format!(
                    "server/discover lists no revision this client speaks ({})",
                    result.supported_versions.join(", ")
                )),
                None,
            ),
        },
        Err(e) => (
            EraVerdict::Legacy(format!(
                "the server/discover answer is not a discover result ({e})"
            )),
            None,
        ),
    }
}

/// Reads the era from a JSON-RPC error answering the probe. Only
/// `-32022 UnsupportedProtocolVersion` with a `supported` list is evidence of a stateless
/// server: with a revision in common the probe is repeated at it (even the one just sent: a
/// server may reject a probe for another reason and name the version anyway), with only
/// stateless revisions unknown to this client the connection fails, and with only older
/// revisions the server is a 2025-era one. Any other error (`-32601`, `-32600`, `-32000` "not
/// initialized", `-32000` "Unsupported protocol version" from a 2025-era SDK) means the server
/// does not know `server/discover`: 2025-era.
pub(crate) fn era_from_error(
    code: i64,
    data: Option<&str>,
    ours: &[ProtocolVersion],
) -> EraVerdict {
    if code != error_code::UNSUPPORTED_PROTOCOL_VERSION {
        return EraVerdict::Legacy(format!("server/discover answered error {code}"));
    }
    #[derive(Deserialize)]
    struct Supported {
        supported: Vec<String>,
    }
    // An object: serde also reads a struct from an array (`[["2026-07-28"]]`).
    let Some(Supported { supported }) = data
        .filter(|data| data.trim_start().starts_with('{'))
        .and_then(|data| serde_json::from_str::<Supported>(data).ok())
    else {
        return EraVerdict::Legacy(
            "server/discover answered -32022 without a list of supported revisions".to_owned(),
        );
    };
    if let Some(version) = newest_common(ours, supported.iter().map(String::as_str)) {
        return EraVerdict::Retry(version);
    }
    let stateless = supported.iter().any(|name| {
        ProtocolVersion::parse(name)
            .map_or_else(|| name.as_str() > "2026", ProtocolVersion::is_modern)
    });
    if stateless {
        EraVerdict::NoCommonVersion(supported)
    } else {
        EraVerdict::Legacy(format!("the server supports only {}", supported.join(", ")))
    }
}

/// The newest of `ours` in the `supported` list of a `-32022` error's data.
pub(crate) fn supported_in_error(
    data: Option<&str>,
    ours: &[ProtocolVersion],
) -> Option<ProtocolVersion> {
    match era_from_error(error_code::UNSUPPORTED_PROTOCOL_VERSION, data, ours) {
        EraVerdict::Retry(version) => Some(version),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn envelope() -> Envelope {
        Envelope {
            version: ProtocolVersion::V2026_07_28,
            capabilities: ClientCapabilities::default(),
            client_info: Implementation::new("c", "1"),
        }
    }

    #[test]
    fn stamping_keeps_every_member_byte_for_byte_and_replaces_envelope_keys() {
        let params = raw(
            r#"{"name":"t\u00e9","arguments":{"x":"\/a","n":1.50},"_meta":{"progressToken":3,"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}"#,
        );
        let stamped = envelope().stamp(Some(&params)).unwrap();
        let text = stamped.get();
        assert!(
            text.starts_with(r#"{"name":"t\u00e9","arguments":{"x":"\/a","n":1.50},"_meta":"#),
            "{text}"
        );
        let value: Value = serde_json::from_str(text).unwrap();
        let meta = &value["_meta"];
        assert_eq!(meta["progressToken"], 3);
        assert_eq!(meta[PROTOCOL_VERSION_KEY], "2026-07-28");
        assert_eq!(meta[CLIENT_CAPABILITIES_KEY], json!({}));
        assert_eq!(meta[CLIENT_INFO_KEY], json!({"name": "c", "version": "1"}));
        assert_eq!(
            envelope()
                .stamp(None)
                .unwrap()
                .get()
                .matches("_meta")
                .count(),
            1
        );
        for bad in ["[1]", "\"s\"", r#"{"_meta":[]}"#, "null"] {
            assert_eq!(
                envelope().stamp(Some(&raw(bad))).unwrap_err(),
                ParamsError::NotAnObject,
                "{bad}"
            );
        }
    }

    #[test]
    fn the_text_splice_agrees_with_the_member_by_member_stamp() {
        let envelope = envelope();
        let members = envelope.members();
        let spliced = [
            "{}",
            " { } ",
            r#"{"name":"echo"}"#,
            r#"{"name":"echo","arguments":{"message":"hi \" } ]"},"_meta":{"progressToken":"t"}}"#,
            r#"{"_meta":{"progressToken":7,"brain.dev/scope":{"tenant":"a"}},"name":"x"}"#,
            r#"{ "a" : [1, {"b": "}"}, true, null, -1.5e3] , "_meta" : { } , "c":"\u00e9" }"#,
            r#"{"_meta":{}}"#,
            r#"{"x":"\\","_meta":{"k":"\\\""}}"#,
        ];
        for params in spliced {
            let text = splice(params, &members).unwrap_or_else(|| panic!("spliced: {params}"));
            let fast: Value = serde_json::from_str(&text).unwrap();
            let general = envelope.stamp_members(Some(&raw(params))).unwrap();
            assert_eq!(
                fast,
                serde_json::from_str::<Value>(general.get()).unwrap(),
                "{params}"
            );
            assert!(
                text.ends_with("}}") && text.matches("\"_meta\"").count() == 1,
                "{text}"
            );
        }
        // Left to the general path, which gives the same answer as before.
        let general = [
            r#"{"\u005fmeta":{"progressToken":1}}"#,
            r#"{"_meta":{"progressToken":1},"_meta":{"x":2}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol\/clientInfo":{}}}"#,
            r#"{"_meta":[]}"#,
            "[1]",
            "null",
        ];
        for params in general {
            assert_eq!(splice(params, &members), None, "{params}");
            assert_eq!(
                envelope
                    .stamp(Some(&raw(params)))
                    .map(|r| r.get().to_owned()),
                envelope
                    .stamp_members(Some(&raw(params)))
                    .map(|r| r.get().to_owned()),
                "{params}"
            );
        }
        let many = format!(
            "{{{}}}",
            (0..=MAX_PARAMS_MEMBERS)
                .map(|i| format!("\"k{i}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(splice(&many, &members), None);
        assert_eq!(
            envelope.stamp(Some(&raw(&many))).unwrap_err(),
            ParamsError::TooLarge
        );
    }

    #[test]
    fn a_retry_echoes_the_state_exactly_and_drops_stale_members() {
        let original =
            raw(r#"{"name":"t","arguments":{},"requestState":"old","inputResponses":{}}"#);
        let state = raw(r#""{\"nonce\":\"\u00e9\/\"}""#);
        let responses = raw(r#"{"confirm":{"action":"accept"}}"#);
        let retry = retry_params(Some(&original), Some(&responses), Some(&state)).unwrap();
        assert_eq!(
            retry.get(),
            r#"{"name":"t","arguments":{},"inputResponses":{"confirm":{"action":"accept"}},"requestState":"{\"nonce\":\"\u00e9\/\"}"}"#
        );
        let retry = retry_params(Some(&original), Some(&responses), None).unwrap();
        assert!(!retry.get().contains("requestState"), "{}", retry.get());
    }

    #[test]
    fn result_envelopes_are_checked() {
        let complete = ResultEnvelope::read(&raw(r#"{"content":[]}"#)).unwrap();
        assert_eq!(complete.result_type(), ResultType::Complete);
        let needs = ResultEnvelope::read(&raw(
            r#"{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"ok?"}},"b":{"method":"roots/list"}},"requestState":"s"}"#,
        ))
        .unwrap();
        assert_eq!(needs.result_type(), ResultType::InputRequired);
        let requests = needs.input_requests().unwrap();
        assert_eq!(requests.len(), 2);
        assert_eq!(
            (requests[0].key.as_str(), requests[0].method.as_str()),
            ("a", "elicitation/create")
        );
        assert!(requests[1].params.is_none());
        assert_eq!(needs.request_state.as_deref().unwrap().get(), "\"s\"");
        // `task` is the tasks extension's (SEP-2663); anything else is unknown.
        assert_eq!(
            ResultEnvelope::read(&raw(r#"{"resultType":"task"}"#))
                .unwrap()
                .result_type(),
            ResultType::Task
        );
        assert_eq!(
            ResultEnvelope::read(&raw(r#"{"resultType":"later"}"#)).unwrap_err(),
            ResultError::UnknownType("later".to_owned())
        );
        assert_eq!(
            ResultEnvelope::read(&raw(r#"{"resultType":"input_required"}"#)).unwrap_err(),
            ResultError::EmptyInputRequired
        );
        for bad in [
            r#"{"resultType":"input_required","requestState":7}"#,
            r#"{"resultType":"input_required","inputRequests":[]}"#,
            r#"{"resultType":5}"#,
            "[]",
        ] {
            assert!(ResultEnvelope::read(&raw(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn era_verdicts() {
        let ours = [ProtocolVersion::V2026_07_28];
        let (verdict, result) = era_from_result(
            &raw(
                r#"{"supportedVersions":["2026-07-28","2027-01-01"],"capabilities":{},"serverInfo":{"name":"s","version":"1"}}"#,
            ),
            &ours,
        );
        assert_eq!(verdict, EraVerdict::Modern(ProtocolVersion::V2026_07_28));
        assert_eq!(result.unwrap().server_info().unwrap().name, "s");
        for legacy in [
            r#"{}"#,
            r#"{"supportedVersions":["2025-11-25"],"capabilities":{}}"#,
            r#"{"supportedVersions":"2026-07-28","capabilities":{}}"#,
        ] {
            assert!(
                matches!(
                    era_from_result(&raw(legacy), &ours).0,
                    EraVerdict::Legacy(_)
                ),
                "{legacy}"
            );
        }
        assert_eq!(
            era_from_error(
                -32022,
                Some(r#"{"supported":["2026-07-28"],"requested":"2026-07-28"}"#),
                &ours
            ),
            EraVerdict::Retry(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(
            era_from_error(-32022, Some(r#"{"supported":["2027-02-02"]}"#), &ours),
            EraVerdict::NoCommonVersion(vec!["2027-02-02".to_owned()])
        );
        for (code, data) in [
            (-32022, Some(r#"{"supported":["2025-11-25"]}"#)),
            (-32022, None),
            (-32022, Some(r#"{"supported":"x"}"#)),
            (-32601, None),
            (-32000, Some(r#"{"supported":["2026-07-28"]}"#)),
            (-32020, None),
        ] {
            assert!(
                matches!(era_from_error(code, data, &ours), EraVerdict::Legacy(_)),
                "{code} {data:?}"
            );
        }
    }

    #[test]
    fn stamping_keeps_the_callers_meta_members_as_sent() {
        // Numbers serde_json's `Value` would round or refuse, escapes, and the order.
        let params = raw(
            r#"{"name":"t","_meta":{"progressToken":12345678901234567890123,"z":1.50,"a":"\u00e9","io.modelcontextprotocol/clientInfo":"old","n":1e400}}"#,
        );
        let stamped = envelope().stamp(Some(&params)).unwrap();
        let text = stamped.get();
        assert!(
            text.starts_with(
                r#"{"name":"t","_meta":{"progressToken":12345678901234567890123,"z":1.50,"a":"\u00e9","n":1e400,"#
            ),
            "{text}"
        );
        for key in [
            PROTOCOL_VERSION_KEY,
            CLIENT_CAPABILITIES_KEY,
            CLIENT_INFO_KEY,
        ] {
            assert_eq!(text.matches(key).count(), 1, "{key} in {text}");
        }
        assert!(!text.contains("\"old\""), "{text}");
        assert!(serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
    }

    #[test]
    fn more_members_than_the_limit_are_too_large() {
        let object = |n: usize| {
            let members: Vec<String> = (0..n).map(|i| format!("\"m{i}\":{i}")).collect();
            raw(&format!("{{{}}}", members.join(",")))
        };
        let at_limit = object(MAX_PARAMS_MEMBERS);
        assert!(envelope().stamp(Some(&at_limit)).is_ok());
        assert!(retry_params(Some(&at_limit), None, None).is_ok());
        // One over the limit, and more (the members after the limit are still read).
        for n in [1, 2, 100] {
            let over = object(MAX_PARAMS_MEMBERS + n);
            let meta_over = raw(&format!(r#"{{"_meta":{}}}"#, over.get()));
            assert_eq!(
                envelope().stamp(Some(&over)).err(),
                Some(ParamsError::TooLarge),
                "{n} over"
            );
            assert_eq!(
                retry_params(Some(&over), None, None).err(),
                Some(ParamsError::TooLarge),
                "{n} over"
            );
            assert_eq!(
                envelope().stamp(Some(&meta_over)).err(),
                Some(ParamsError::TooLarge),
                "{n} over in _meta"
            );
        }
    }

    #[test]
    fn a_discover_result_is_complete_and_supported_is_in_an_object() {
        let ours = [ProtocolVersion::V2026_07_28];
        for kind in ["task", "input_required"] {
            let result = raw(&format!(
                r#"{{"supportedVersions":["2026-07-28"],"capabilities":{{}},"resultType":"{kind}"}}"#
            ));
            assert!(
                matches!(
                    era_from_result(&result, &ours),
                    (EraVerdict::Legacy(_), None)
                ),
                "{kind}"
            );
        }
        let complete = raw(
            r#"{"supportedVersions":["2026-07-28"],"capabilities":{},"resultType":"complete"}"#,
        );
        assert!(matches!(
            era_from_result(&complete, &ours).0,
            EraVerdict::Modern(_)
        ));
        // serde reads a struct from an array too; error data is an object.
        assert!(matches!(
            era_from_error(-32022, Some(r#"[["2026-07-28"]]"#), &ours),
            EraVerdict::Legacy(_)
        ));
        assert_eq!(supported_in_error(Some(r#"[["2026-07-28"]]"#), &ours), None);
    }

    #[test]
    fn input_required_needs_a_request_or_a_state_and_unique_keys() {
        assert_eq!(
            ResultEnvelope::read(&raw(
                r#"{"resultType":"input_required","inputRequests":{}}"#
            ))
            .unwrap_err(),
            ResultError::EmptyInputRequired
        );
        assert!(
            ResultEnvelope::read(&raw(
                r#"{"resultType":"input_required","inputRequests":{},"requestState":"s"}"#
            ))
            .is_ok()
        );
        for bad in [
            r#"{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"},"a":{"method":"roots/list"}}}"#,
            r#"{"resultType":"input_required","inputRequests":{"r":["roots/list",null]}}"#,
        ] {
            let envelope = ResultEnvelope::read(&raw(bad)).unwrap();
            assert!(
                matches!(envelope.input_requests(), Err(ResultError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn cache_hints_default_to_nothing_private() {
        assert_eq!(
            CacheHint::read(None, None),
            CacheHint {
                ttl: Duration::ZERO,
                scope: CacheScope::Private
            }
        );
        assert_eq!(
            CacheHint::read(Some(&json!(-5)), Some("public")).ttl,
            Duration::ZERO
        );
        assert_eq!(
            CacheHint::read(Some(&json!(1500)), Some("public")),
            CacheHint {
                ttl: Duration::from_millis(1500),
                scope: CacheScope::Public
            }
        );
    }
}
