//! W3C trace context in a request's `_meta`: the `traceparent`, `tracestate` and `baggage`
//! members (SEP-414, "Document OpenTelemetry Trace Context Propagation Conventions": unprefixed
//! keys whose values follow W3C Trace Context and W3C Baggage), checked before anything is sent.
//!
//! The validators are written from the specifications' grammars: W3C Trace Context Level 1
//! (`traceparent` section 3.2, `tracestate` section 3.3) and W3C Baggage (section 3.2, "Definition").
//! A context that breaks them is never sent: a host's is refused, one read from the environment
//! is dropped by the caller (the CLI) with a warning.

use std::fmt;

#[cfg(feature = "client")]
use serde::ser::SerializeMap;
#[cfg(feature = "session")]
use serde_json::value::RawValue;

use super::JsonObject;

/// The `_meta` key of the W3C `traceparent` (SEP-414).
pub(crate) const TRACEPARENT_KEY: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate` (SEP-414).
pub(crate) const TRACESTATE_KEY: &str = "tracestate";
/// The `_meta` key of the W3C `baggage` (SEP-414).
pub(crate) const BAGGAGE_KEY: &str = "baggage";

/// Whether `key` is one of the three trace context keys of `_meta`.
#[cfg(feature = "session")]
pub(crate) fn is_trace_key(key: &str) -> bool {
    matches!(key, TRACEPARENT_KEY | TRACESTATE_KEY | BAGGAGE_KEY)
}

/// The most list-members a `tracestate` holds (Trace Context 3.3.1.1).
const MAX_TRACESTATE_MEMBERS: usize = 32;
/// The longest `tracestate` sent, in characters (Trace Context 3.3.1.5: the length every
/// participant must propagate; longer ones are refused rather than truncated).
const MAX_TRACESTATE_CHARS: usize = 512;
/// The most list-members a `baggage` holds (Baggage 3.3.1: 180).
const MAX_BAGGAGE_MEMBERS: usize = 180;
/// The longest `baggage` sent, in bytes (Baggage 3.3.1: 8192).
const MAX_BAGGAGE_BYTES: usize = 8192;

/// Why a trace context was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceContextError {
    /// The `traceparent` is not `00-` 32 hex digits `-` 16 hex digits `-` 2 hex digits, all
    /// lowercase.
    TraceparentFormat,
    /// The `traceparent` version is `ff` (forbidden) or one this client does not write (only `00`).
    TraceparentVersion,
    /// The trace id is all zeros.
    ZeroTraceId,
    /// The parent (span) id is all zeros.
    ZeroParentId,
    /// A `tracestate` list-member breaks the `key=value` grammar.
    TracestateMember,
    /// A `tracestate` key appears twice.
    TracestateDuplicateKey,
    /// A `tracestate` has more than 32 list-members.
    TracestateTooManyMembers,
    /// A `tracestate` is longer than 512 characters.
    TracestateTooLong,
    /// A `tracestate` without a `traceparent`: it means nothing on its own.
    TracestateWithoutTraceparent,
    /// A `baggage` list-member breaks the `key=value;property` grammar.
    BaggageMember,
    /// A `baggage` has more than 180 list-members.
    BaggageTooManyMembers,
    /// A `baggage` is longer than 8192 bytes.
    BaggageTooLong,
    /// A `_meta` trace member is not a JSON string.
    NotAString,
}

impl fmt::Display for TraceContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceContextError::TraceparentFormat => {
                "traceparent must be 00-<32 hex>-<16 hex>-<2 hex>, in lowercase"
            }
            TraceContextError::TraceparentVersion => {
                "traceparent version must be 00 (ff is forbidden; later versions are not written)"
            }
            TraceContextError::ZeroTraceId => "the traceparent's trace id is all zeros",
            TraceContextError::ZeroParentId => "the traceparent's parent id is all zeros",
            TraceContextError::TracestateMember => {
                "a tracestate member is not key=value as W3C Trace Context defines them"
            }
            TraceContextError::TracestateDuplicateKey => "a tracestate key appears twice",
            TraceContextError::TracestateTooManyMembers => {
                "tracestate has more than 32 list-members"
            }
            TraceContextError::TracestateTooLong => "tracestate is longer than 512 characters",
            TraceContextError::TracestateWithoutTraceparent => {
                "tracestate is given without a traceparent"
            }
            TraceContextError::BaggageMember => {
                "a baggage member is not key=value[;property] as W3C Baggage defines them"
            }
            TraceContextError::BaggageTooManyMembers => "baggage has more than 180 list-members",
            TraceContextError::BaggageTooLong => "baggage is longer than 8192 bytes",
            TraceContextError::NotAString => "a _meta trace context member is not a string",
        })
    }
}

impl std::error::Error for TraceContextError {}

/// A W3C trace context to send in every request's `_meta`: a checked `traceparent`, and the
/// `tracestate` and `baggage` that go with it when there are any. Made only from values that
/// follow the specifications, so what is sent is always well formed.
///
/// ```
/// use mcpwire::mcp::{TraceContext, TraceContextError};
///
/// let context = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")?
///     .with_tracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")?
///     .with_baggage("userId=alice,isProduction=false")?;
/// assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert!(context.is_sampled());
/// assert_eq!(
///     TraceContext::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
///     Err(TraceContextError::ZeroTraceId)
/// );
/// # Ok::<(), TraceContextError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
    baggage: Option<String>,
}

impl TraceContext {
    /// A context with this `traceparent` (version `00`: `00-<trace id>-<parent id>-<flags>`,
    /// lowercase hex, neither id all zeros).
    pub fn parse(traceparent: &str) -> Result<Self, TraceContextError> {
        check_traceparent(traceparent)?;
        Ok(TraceContext {
            traceparent: traceparent.to_owned(),
            tracestate: None,
            baggage: None,
        })
    }

    /// A context from its parts: a 16-byte trace id, an 8-byte parent (span) id and the trace
    /// flags (bit 0: sampled).
    #[cfg(any(test, feature = "opentelemetry"))]
    pub(crate) fn from_ids(
        trace_id: [u8; 16],
        parent_id: [u8; 8],
        flags: u8,
    ) -> Result<Self, TraceContextError> {
        let mut traceparent = String::with_capacity(55);
        traceparent.push_str("00-");
        push_hex(&mut traceparent, &trace_id);
        traceparent.push('-');
        push_hex(&mut traceparent, &parent_id);
        traceparent.push('-');
        push_hex(&mut traceparent, &[flags]);
        TraceContext::parse(&traceparent)
    }

    /// This context with a `tracestate` (at most 32 `key=value` list-members, unique keys,
    /// at most 512 characters). An empty one (only commas and spaces) sets none.
    pub fn with_tracestate(mut self, tracestate: &str) -> Result<Self, TraceContextError> {
        let members = check_tracestate(tracestate)?;
        self.tracestate = (members > 0).then(|| tracestate.to_owned());
        Ok(self)
    }

    /// This context with a `baggage` (W3C Baggage: at most 180 `key=value` list-members with
    /// optional properties, at most 8192 bytes). An empty one sets none.
    pub fn with_baggage(mut self, baggage: &str) -> Result<Self, TraceContextError> {
        if baggage.trim_matches(is_ows).is_empty() {
            self.baggage = None;
            return Ok(self);
        }
        check_baggage(baggage)?;
        self.baggage = Some(baggage.to_owned());
        Ok(self)
    }

    /// The `traceparent`, as sent.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate`, when there is one.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The `baggage`, when there is one.
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }

    /// The trace id: 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The parent (span) id: 16 lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// Whether the caller sampled the trace (flag bit 0).
    pub fn is_sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|flags| flags & 1 == 1)
    }

    /// The context the trace members of a caller's `_meta` give (`traceparent`, `tracestate`,
    /// `baggage`), checked: `None` when it has none of them. A lone `baggage` is checked and
    /// left as it is (`Ok(None)`): it is not a trace context.
    pub(crate) fn from_meta(meta: &JsonObject) -> Result<Option<Self>, TraceContextError> {
        let text = |key: &str| match meta.get(key) {
            None => Ok(None),
            Some(serde_json::Value::String(text)) => Ok(Some(text.as_str())),
            Some(_) => Err(TraceContextError::NotAString),
        };
        let (traceparent, tracestate, baggage) = (
            text(TRACEPARENT_KEY)?,
            text(TRACESTATE_KEY)?,
            text(BAGGAGE_KEY)?,
        );
        let Some(traceparent) = traceparent else {
            if tracestate.is_some() {
                return Err(TraceContextError::TracestateWithoutTraceparent);
            }
            if let Some(baggage) = baggage {
                check_baggage(baggage)?;
            }
            return Ok(None);
        };
        let mut context = TraceContext::parse(traceparent)?;
        if let Some(tracestate) = tracestate {
            context = context.with_tracestate(tracestate)?;
        }
        if let Some(baggage) = baggage {
            context = context.with_baggage(baggage)?;
        }
        Ok(Some(context))
    }

    /// Writes the members into a `_meta` map being serialized.
    #[cfg(feature = "client")]
    pub(crate) fn write_members<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry(TRACEPARENT_KEY, &self.traceparent)?;
        if let Some(tracestate) = &self.tracestate {
            map.serialize_entry(TRACESTATE_KEY, tracestate)?;
        }
        if let Some(baggage) = &self.baggage {
            map.serialize_entry(BAGGAGE_KEY, baggage)?;
        }
        Ok(())
    }

    /// `params` with this context in its `_meta`: every other member of both kept, in order
    /// and byte for byte; a trace member the params had is replaced (the three go together).
    #[cfg(feature = "session")]
    pub(crate) fn inject(
        &self,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, super::modern::ParamsError> {
        let members = [
            Some((TRACEPARENT_KEY, self.traceparent.as_str())),
            self.tracestate
                .as_deref()
                .map(|value| (TRACESTATE_KEY, value)),
            self.baggage.as_deref().map(|value| (BAGGAGE_KEY, value)),
        ];
        super::modern::with_meta_strings(params, is_trace_key, members.iter().flatten())
    }
}

impl fmt::Display for TraceContext {
    /// The `traceparent` (the rest may be long; it is no secret, but neither is it useful in
    /// a message).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.traceparent)
    }
}

/// Checks the trace members of a caller's `_meta`, when it has any (see
/// [`TraceContext::from_meta`]).
#[cfg(feature = "session")]
pub(crate) fn check_meta(meta: Option<&JsonObject>) -> Result<(), TraceContextError> {
    match meta {
        Some(meta) if meta.keys().any(|key| is_trace_key(key)) => {
            TraceContext::from_meta(meta).map(drop)
        }
        _ => Ok(()),
    }
}

/// The same check for a raw request's params (`params._meta`).
#[cfg(feature = "session")]
pub(crate) fn check_params(params: Option<&serde_json::Value>) -> Result<(), TraceContextError> {
    match params.and_then(|params| params.get("_meta")) {
        Some(serde_json::Value::Object(meta)) => check_meta(Some(meta)),
        _ => Ok(()),
    }
}

#[cfg(any(test, feature = "opentelemetry"))]
fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
}

fn is_lower_hex(byte: u8) -> bool {
    byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)
}

/// Trace Context 3.2.2: `version "-" trace-id "-" parent-id "-" trace-flags`, version `00`
/// (3.2.2.1: `ff` is invalid; a later version is not one this client writes).
fn check_traceparent(value: &str) -> Result<(), TraceContextError> {
    let bytes = value.as_bytes();
    let version = bytes.get(..2).ok_or(TraceContextError::TraceparentFormat)?;
    if !version.iter().all(|&b| is_lower_hex(b)) {
        return Err(TraceContextError::TraceparentFormat);
    }
    if version != b"00" {
        return Err(TraceContextError::TraceparentVersion);
    }
    if bytes.len() != 55 || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return Err(TraceContextError::TraceparentFormat);
    }
    let (trace_id, parent_id, flags) = (&bytes[3..35], &bytes[36..52], &bytes[53..55]);
    if ![trace_id, parent_id, flags]
        .iter()
        .all(|field| field.iter().all(|&b| is_lower_hex(b)))
    {
        return Err(TraceContextError::TraceparentFormat);
    }
    if trace_id.iter().all(|&b| b == b'0') {
        return Err(TraceContextError::ZeroTraceId);
    }
    if parent_id.iter().all(|&b| b == b'0') {
        return Err(TraceContextError::ZeroParentId);
    }
    Ok(())
}

/// `OWS` of both specifications: spaces and horizontal tabs.
fn is_ows(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Trace Context 3.3.1: `list-member *( OWS "," OWS list-member )`, empty list-members
/// allowed (and not counted), at most 32 of them, unique keys, at most 512 characters.
/// Returns how many list-members it has.
fn check_tracestate(value: &str) -> Result<usize, TraceContextError> {
    if value.len() > MAX_TRACESTATE_CHARS {
        return Err(TraceContextError::TracestateTooLong);
    }
    let mut keys: Vec<&str> = Vec::new();
    for member in value.split(',').map(|m| m.trim_matches(is_ows)) {
        if member.is_empty() {
            continue;
        }
        let (key, item) = member
            .split_once('=')
            .ok_or(TraceContextError::TracestateMember)?;
        if !is_tracestate_key(key) || !is_tracestate_value(item) {
            return Err(TraceContextError::TracestateMember);
        }
        if keys.contains(&key) {
            return Err(TraceContextError::TracestateDuplicateKey);
        }
        keys.push(key);
        if keys.len() > MAX_TRACESTATE_MEMBERS {
            return Err(TraceContextError::TracestateTooManyMembers);
        }
    }
    Ok(keys.len())
}

/// `lcalpha / DIGIT / "_" / "-" / "*" / "/"`: the characters after a key's first.
fn is_key_char(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"_-*/".contains(&byte)
}

/// Trace Context 3.3.1.3.1: `simple-key = lcalpha 0*255( key-char )`, or
/// `multi-tenant-key = tenant-id "@" system-id` with `tenant-id = ( lcalpha / DIGIT )
/// 0*240( key-char )` and `system-id = lcalpha 0*13( key-char )`.
fn is_tracestate_key(key: &str) -> bool {
    let rest_ok = |part: &[u8], max_rest: usize| {
        part.len() <= max_rest + 1 && part[1..].iter().all(|&b| is_key_char(b))
    };
    match key.split_once('@') {
        None => {
            let bytes = key.as_bytes();
            !bytes.is_empty() && bytes[0].is_ascii_lowercase() && rest_ok(bytes, 255)
        }
        Some((tenant, system)) => {
            let (tenant, system) = (tenant.as_bytes(), system.as_bytes());
            !tenant.is_empty()
                && (tenant[0].is_ascii_lowercase() || tenant[0].is_ascii_digit())
                && rest_ok(tenant, 240)
                && !system.is_empty()
                && system[0].is_ascii_lowercase()
                && rest_ok(system, 13)
        }
    }
}

/// Trace Context 3.3.1.3.2: `value = 0*255(chr) nblk-chr`, `nblk-chr = %x21-2B / %x2D-3C /
/// %x3E-7E`, `chr = %x20 / nblk-chr`: 1 to 256 printable characters but `,` and `=`, not
/// ending in a space.
fn is_tracestate_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    let nblk = |b: u8| matches!(b, 0x21..=0x2b | 0x2d..=0x3c | 0x3e..=0x7e);
    matches!(bytes.last(), Some(&last) if nblk(last))
        && bytes.len() <= 256
        && bytes.iter().all(|&b| b == b' ' || nblk(b))
}

/// Baggage 3.2.1: `list-member 0*179( OWS "," OWS list-member )`, `list-member = key OWS "="
/// OWS value *( OWS ";" OWS property )`, `property = key OWS "=" OWS value / key OWS`; at most
/// 8192 bytes.
fn check_baggage(value: &str) -> Result<(), TraceContextError> {
    if value.len() > MAX_BAGGAGE_BYTES {
        return Err(TraceContextError::BaggageTooLong);
    }
    for (count, member) in value.split(',').enumerate() {
        if count == MAX_BAGGAGE_MEMBERS {
            return Err(TraceContextError::BaggageTooManyMembers);
        }
        let mut parts = member.split(';');
        let first = parts.next().unwrap_or_default();
        if !is_baggage_pair(first, false) || !parts.all(|property| is_baggage_pair(property, true))
        {
            return Err(TraceContextError::BaggageMember);
        }
    }
    Ok(())
}

/// `key OWS "=" OWS value`, or (a property) a lone `key`, with optional whitespace around.
fn is_baggage_pair(text: &str, property: bool) -> bool {
    let text = text.trim_matches(is_ows);
    match text.split_once('=') {
        Some((key, value)) => {
            is_token(key.trim_end_matches(is_ows))
                && value
                    .trim_start_matches(is_ows)
                    .bytes()
                    .all(is_baggage_octet)
        }
        None => property && is_token(text),
    }
}

/// RFC 9110 `token = 1*tchar` (Baggage 3.2.1.1 keys).
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Baggage 3.2.1.2: `baggage-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E` (printable
/// ASCII but space, `"`, `,`, `;` and `\`; anything else is percent-encoded).
fn is_baggage_octet(byte: u8) -> bool {
    matches!(byte, 0x21 | 0x23..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "session")]
    use serde_json::value::RawValue;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    /// A list of `n` members `k0=v,k1=v,...`.
    fn many(n: usize) -> String {
        (0..n)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// One case per line: the value, and the error it gives (`None`: accepted).
    macro_rules! cases {
        ($check:expr, $($value:expr => $expected:expr),+ $(,)?) => {
            $(
                let value: String = $value.into();
                let expected: Option<TraceContextError> = $expected;
                assert_eq!($check(value.as_str()).err(), expected, "{value:?}");
            )+
        };
    }

    #[test]
    fn traceparent_is_checked_strictly() {
        use TraceContextError::*;
        cases!(TraceContext::parse,
            PARENT => None,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" => None,
            // Flags other than sampled are carried as they are.
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03" => None,
            "" => Some(TraceparentFormat),
            "0" => Some(TraceparentFormat),
            "00" => Some(TraceparentFormat),
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" => Some(TraceparentVersion),
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" => Some(TraceparentVersion),
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what" => Some(TraceparentVersion),
            "0X-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" => Some(TraceparentFormat),
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01" => Some(TraceparentFormat),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01" => Some(TraceparentFormat),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0G" => Some(TraceparentFormat),
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01" => Some(TraceparentFormat),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01" => Some(TraceparentFormat),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" => Some(TraceparentFormat),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1" => Some(TraceparentFormat),
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01" => Some(TraceparentFormat),
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" => Some(TraceparentFormat),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 " => Some(TraceparentFormat),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01" => Some(ZeroTraceId),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01" => Some(ZeroParentId),
            // Multi-byte text whose length is 55 bytes never panics.
            format!("00-{}-00f067aa0ba902b7-01", "é".repeat(16)) => Some(TraceparentFormat),
        );
    }

    #[test]
    fn the_parts_of_a_traceparent() {
        let context = TraceContext::parse(PARENT).unwrap();
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent_id(), "00f067aa0ba902b7");
        assert!(context.is_sampled());
        let unsampled = TraceContext::from_ids([0xab; 16], [0x01; 8], 0).unwrap();
        assert_eq!(
            unsampled.traceparent(),
            "00-abababababababababababababababab-0101010101010101-00"
        );
        assert!(!unsampled.is_sampled());
        assert_eq!(
            TraceContext::from_ids([0; 16], [1; 8], 1),
            Err(TraceContextError::ZeroTraceId)
        );
        assert_eq!(
            TraceContext::from_ids([1; 16], [0; 8], 1),
            Err(TraceContextError::ZeroParentId)
        );
    }

    #[test]
    fn tracestate_follows_the_list_rules() {
        use TraceContextError::*;
        let with = |value: &str| TraceContext::parse(PARENT).unwrap().with_tracestate(value);
        cases!(with,
            "congo=t61rcWkgMzE" => None,
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE" => None,
            " rojo=1 ,\tcongo=2\t" => None,
            "rojo=1,,congo=2" => None,
            "tenant@system=1" => None,
            "0tenant@system=1" => None,
            "a_-*/z=1" => None,
            "k=a value with spaces" => None,
            "k=!~" => None,
            many(32) => None,
            many(33) => Some(TracestateTooManyMembers),
            format!("k={}", "v".repeat(256)) => None,
            format!("k={}", "v".repeat(257)) => Some(TracestateMember),
            format!("a={},b={}", "v".repeat(250), "v".repeat(250)) => None,
            format!("a={},b={},c=1", "v".repeat(255), "v".repeat(250)) => Some(TracestateTooLong),
            format!("{}=1", "k".repeat(256)) => None,
            format!("{}=1", "k".repeat(257)) => Some(TracestateMember),
            format!("{}@{}=1", "t".repeat(241), "s".repeat(14)) => None,
            format!("{}@s=1", "t".repeat(242)) => Some(TracestateMember),
            format!("t@{}=1", "s".repeat(15)) => Some(TracestateMember),
            "Congo=1" => Some(TracestateMember),
            "0congo=1" => Some(TracestateMember),
            "congo" => Some(TracestateMember),
            "congo=" => Some(TracestateMember),
            "=1" => Some(TracestateMember),
            "congo=a=b" => Some(TracestateMember),
            "congo=ends with space " => None, // the list's whitespace is trimmed first
            "congo=\u{7f}" => Some(TracestateMember),
            "congo=é" => Some(TracestateMember),
            "t@=1" => Some(TracestateMember),
            "@s=1" => Some(TracestateMember),
            "t@0s=1" => Some(TracestateMember),
            "a@b@c=1" => Some(TracestateMember),
            "rojo=1,rojo=2" => Some(TracestateDuplicateKey),
        );
        // Only commas and spaces: no tracestate at all.
        assert_eq!(with(" , ").unwrap().tracestate(), None);
        assert_eq!(with("a=1").unwrap().tracestate(), Some("a=1"));
    }

    #[test]
    fn baggage_follows_the_w3c_grammar() {
        use TraceContextError::*;
        let with = |value: &str| TraceContext::parse(PARENT).unwrap().with_baggage(value);
        cases!(with,
            "userId=alice" => None,
            "userId=alice,isProduction=false" => None,
            "key1 = value1 , key2=value2" => None,
            "key1=value1;property1;property2=p2" => None,
            "key1=value1 ; property1 = x" => None,
            "key=" => None,
            "key=%E2%9C%93" => None,
            "serverNode=DF%2028,userId=Am%C3%A9lie" => None,
            many(180) => None,
            many(181) => Some(BaggageTooManyMembers),
            format!("k={}", "v".repeat(8190)) => None,
            format!("k={}", "v".repeat(8191)) => Some(BaggageTooLong),
            "novalue" => Some(BaggageMember),
            "=value" => Some(BaggageMember),
            "key=va lue" => Some(BaggageMember),
            "key=\"quoted\"" => Some(BaggageMember),
            "key=back\\slash" => Some(BaggageMember),
            "ke y=value" => Some(BaggageMember),
            "key=value,,other=1" => Some(BaggageMember),
            "key=value;" => Some(BaggageMember),
            "key=é" => Some(BaggageMember),
            "key(1)=value" => Some(BaggageMember),
        );
        assert_eq!(with("  ").unwrap().baggage(), None);
    }

    #[test]
    fn a_callers_meta_is_read_and_checked() {
        use serde_json::json;
        let meta = |value: serde_json::Value| value.as_object().cloned().unwrap();
        let read = |value| TraceContext::from_meta(&meta(value));
        assert_eq!(read(json!({"other": 1})), Ok(None));
        let context = read(json!({"traceparent": PARENT, "tracestate": "a=1", "baggage": "b=2"}))
            .unwrap()
            .unwrap();
        assert_eq!(context.tracestate(), Some("a=1"));
        assert_eq!(context.baggage(), Some("b=2"));
        assert_eq!(read(json!({"baggage": "b=2"})), Ok(None));
        assert_eq!(
            read(json!({"baggage": "b 2"})),
            Err(TraceContextError::BaggageMember)
        );
        assert_eq!(
            read(json!({"tracestate": "a=1"})),
            Err(TraceContextError::TracestateWithoutTraceparent)
        );
        assert_eq!(
            read(json!({"traceparent": 7})),
            Err(TraceContextError::NotAString)
        );
        assert_eq!(
            read(json!({"traceparent": PARENT.to_uppercase()})),
            Err(TraceContextError::TraceparentFormat)
        );
        #[cfg(feature = "session")]
        check_the_callers_members(meta);
    }

    #[cfg(feature = "session")]
    fn check_the_callers_members(meta: impl Fn(serde_json::Value) -> JsonObject) {
        use serde_json::json;
        assert_eq!(check_meta(None), Ok(()));
        assert_eq!(check_meta(Some(&meta(json!({"x": 1})))), Ok(()));
        assert_eq!(
            check_params(Some(&json!({"_meta": {"traceparent": "nope"}}))),
            Err(TraceContextError::TraceparentFormat)
        );
        assert_eq!(check_params(Some(&json!({"_meta": 3}))), Ok(()));
    }

    #[cfg(feature = "session")]
    #[test]
    fn injected_members_replace_the_params_own_and_keep_the_rest() {
        let context = TraceContext::parse(PARENT)
            .unwrap()
            .with_tracestate("a=1")
            .unwrap();
        let injected = context.inject(None).unwrap();
        assert_eq!(
            injected.get(),
            format!(r#"{{"_meta":{{"traceparent":"{PARENT}","tracestate":"a=1"}}}}"#)
        );
        let params = RawValue::from_string(
            r#"{"cursor":"c\u00e9","_meta":{"progressToken":12345678901234567890123,"tracestate":"old=1","baggage":"old=2"},"z":1.50}"#
                .to_owned(),
        )
        .unwrap();
        let injected = context.inject(Some(&params)).unwrap();
        assert_eq!(
            injected.get(),
            format!(
                r#"{{"cursor":"c\u00e9","z":1.50,"_meta":{{"progressToken":12345678901234567890123,"traceparent":"{PARENT}","tracestate":"a=1"}}}}"#
            )
        );
        let not_an_object = RawValue::from_string("[1]".to_owned()).unwrap();
        assert!(context.inject(Some(&not_an_object)).is_err());
    }
}
