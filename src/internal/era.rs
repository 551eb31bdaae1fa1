//! The `mcp_era` harness: the 2026-07-28 message rules of [`crate::mcp::modern`] (the `_meta`
//! envelope, `input_required` retries, result envelopes, era verdicts) and the session's era
//! probe, on arbitrary server answers.
//!
//! The oracle reads JSON objects with its own scanner ([`scan_members`]), which cuts the text
//! of an object at its top-level commas and colons instead of parsing it with serde, so the
//! "byte for byte" checks compare the text the input holds with the text the library wrote.

use std::time::{Duration, Instant};

use serde_json::value::RawValue;

use crate::jsonrpc::{self, Id, Message, Response};
use crate::mcp::modern::{
    self, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, CacheHint, CacheScope, Envelope, EraVerdict,
    PROTOCOL_VERSION_KEY, ParamsError, ResultEnvelope, ResultError, ResultType,
};
use crate::mcp::{self, ClientCapabilities, Implementation, ProtocolVersion, methods};
use crate::session::{
    Config, Delivery, EraPolicy, Failure, FailureKind, Output, Payload, Phase, Session,
};

/// Separates the steps of an `mcp_era` input.
pub(crate) const NEXT_STEP: &[u8] = b"\n#next-step\n";

/// The most members [`Envelope::stamp`] and [`modern::retry_params`] rewrite.
const MAX_MEMBERS: usize = 4096;

/// The most bytes of error `data` a session failure keeps (`session::failure`).
const MAX_ERROR_DATA_BYTES: usize = 64 * 1024;

/// The most steps one input runs.
const MAX_STEPS: usize = 16;

/// The fake clock's origin; the session never reads the clock.
#[allow(clippy::disallowed_methods)]
fn origin() -> Instant {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The `mcp_era` fuzz target. The first byte configures the session (bit 0: silence means a
/// 2025-era server, as on stdio; bits 1-2: the probe timeout; `0xFF`: no stateless revision to
/// probe with); the rest is up to 16 steps separated by [`NEXT_STEP`], each a kind byte and a
/// payload: `f` a transport failure of the probe (payload: failure kind, HTTP status, delivery),
/// `t` time passing (payload: milliseconds, two bytes; none: the whole probe timeout), `l` the
/// stdio server exiting (`probe_lost`), `r` the payload delivered as a JSON-RPC message as it
/// is, and any other byte the payload as a message whose response id is set to the probe's.
///
/// Checks, on every payload and on its `result` and error `data`:
/// - `Envelope::stamp` gives valid JSON whose last member is the only `_meta`, holding the three
///   envelope keys once each with our values and every other member of the caller's `_meta` in
///   order, byte for byte; every other top-level member is unchanged and in order, byte for
///   byte. It refuses exactly what is not an object, an object whose `_meta` is not one, more
///   than 4096 members (`TooLarge`), and names a Rust string cannot hold (lone surrogates).
/// - `retry_params` keeps the other members byte for byte and holds `requestState` and
///   `inputResponses` exactly when given, once, with the given text; a later round without them
///   leaves neither.
/// - `ResultEnvelope::read` accepts only a `resultType` that is absent, `null`, `"complete"` or
///   `"input_required"` (an unknown string is `UnknownType`); `input_required` holds at least
///   one input request or a string state; the kept members are the input's text. Input request
///   keys are unique: `input_requests()` refuses a repeated key (the answers go back in an
///   object keyed by them, where a repeat would be ambiguous).
/// - `era_from_result` says `Modern` only for a discover result (an object, `capabilities` an
///   object, `supportedVersions` an array of strings naming the version, `resultType` absent or
///   complete) and returns it then only; anything else is `Legacy`. `era_from_error` says `Retry`
///   exactly for -32022 whose `data` is an object with one `supported` array of strings naming
///   a version we speak (the newest of them); the cache hint reads `ttlMs` and `cacheScope`.
///
/// And a `Session` (`EraPolicy::Auto`) gets the steps as what its probe meets: each step moves
/// it as the verdict of the classifiers above says, checked after each step: still probing
/// (nothing settled, nothing but answers to server requests sent); ready at the stateless
/// revision (`Output::Ready` with the server described, the probe settled with the result,
/// nothing sent); probing again once at the version a -32022 named, under a new id with the
/// envelope at that version; falling back (the probe settled as a failure, unless withdrawn
/// because the stdio server exited, and the next message sent is `initialize` with no `_meta`);
/// or closed with the probe settled as a failure of the expected kind and nothing sent. At most
/// two probes are ever sent. Once the probe is over, later answers to it change nothing; an
/// input that leaves it unanswered ends with its timeout.
pub(crate) fn fuzz_mcp_era(data: &[u8]) {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let steps = split_steps(rest);
    for step in &steps {
        if let Some((_, payload)) = step.split_first() {
            check_payload(payload);
        }
    }
    ProbeRun::new(knob).run(&steps);
}

/// `rest` cut at every [`NEXT_STEP`], at most [`MAX_STEPS`] pieces.
fn split_steps(mut rest: &[u8]) -> Vec<&[u8]> {
    let mut steps = Vec::new();
    while steps.len() < MAX_STEPS {
        match find(rest, NEXT_STEP) {
            Some(at) => {
                steps.push(&rest[..at]);
                rest = &rest[at + NEXT_STEP.len()..];
            }
            None => {
                steps.push(rest);
                break;
            }
        }
    }
    steps
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

// ---------------------------------------------------------------------------------------------
// The oracle's reading of JSON.

const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// The members of the JSON object `text` (valid JSON), each as its decoded name and the text of
/// its value, in order, repeats kept; `None` when `text` is no object or a name does not decode
/// to a Rust string. Found by cutting the text, not by parsing it.
fn scan_members(text: &str) -> Option<Vec<(String, &str)>> {
    let inner = text
        .trim_matches(JSON_WHITESPACE)
        .strip_prefix('{')?
        .strip_suffix('}')?;
    let mut pieces = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut start) = (0usize, false, false, 0);
    for (at, byte) in inner.bytes().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => {
                pieces.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if !inner.trim_matches(JSON_WHITESPACE).is_empty() {
        pieces.push(&inner[start..]);
    }
    pieces
        .into_iter()
        .map(|piece| {
            let piece = piece.trim_matches(JSON_WHITESPACE);
            let name_end = string_end(piece)?;
            let name: String = serde_json::from_str(&piece[..name_end]).ok()?;
            let value = piece[name_end..]
                .trim_start_matches(JSON_WHITESPACE)
                .strip_prefix(':')?
                .trim_matches(JSON_WHITESPACE);
            Some((name, value))
        })
        .collect()
}

/// The end of the JSON string at the start of `text` (just past its closing quote).
fn string_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, byte) in text.bytes().enumerate().skip(1) {
        match byte {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(at + 1),
            _ => {}
        }
    }
    None
}

/// The text of the last member named `name`.
fn last<'t>(members: &[(String, &'t str)], name: &str) -> Option<&'t str> {
    members
        .iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| *value)
}

fn count(members: &[(String, &str)], name: &str) -> usize {
    members.iter().filter(|(key, _)| key == name).count()
}

/// The members not named in `names`, in order.
fn without<'m, 't>(members: &'m [(String, &'t str)], names: &[&str]) -> Vec<(&'m str, &'t str)> {
    members
        .iter()
        .filter(|(key, _)| !names.contains(&key.as_str()))
        .map(|(key, value)| (key.as_str(), *value))
        .collect()
}

fn is_valid_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).expect("the text of a JSON value")
}

/// The string a JSON value text holds, if it is a string.
fn json_string(text: &str) -> Option<String> {
    serde_json::from_str(text).ok()
}

// ---------------------------------------------------------------------------------------------
// The pure functions.

fn envelope(version: ProtocolVersion) -> Envelope {
    Envelope {
        version,
        capabilities: ClientCapabilities::default(),
        client_info: Implementation::new("fuzz \"é\"\u{1}/", "0.1"),
    }
}

/// Every check of the module's pure functions on one payload, its `result` and error `data`.
fn check_payload(payload: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Box<RawValue>>(payload) else {
        return;
    };
    check_value(&value);
    if let Ok(Message::Response(response)) = jsonrpc::decode_message(payload) {
        match &response.outcome {
            Ok(result) => check_value(result),
            Err(error) => {
                let data = error.data.as_deref().map(RawValue::get);
                check_era_from_error(error.code, data);
                if let Some(data) = &error.data {
                    check_value(data);
                }
            }
        }
    }
}

fn check_value(value: &RawValue) {
    check_stamp(value);
    check_retry(value);
    check_result_envelope(value);
    check_era_from_result(value);
    check_era_from_error(
        crate::mcp::error_code::UNSUPPORTED_PROTOCOL_VERSION,
        Some(value.get()),
    );
}

/// (a) The envelope on any params.
fn check_stamp(params: &RawValue) {
    let envelope = envelope(ProtocolVersion::V2026_07_28);
    let members = scan_members(params.get());
    let meta = members
        .as_deref()
        .and_then(|members| last(members, "_meta"))
        .map(scan_members);
    let stamped = envelope.stamp(Some(params));
    let Some(members) = members else {
        assert_eq!(
            stamped.err(),
            Some(ParamsError::NotAnObject),
            "stamped params that are not an object: {}",
            params.get()
        );
        return;
    };
    if members.len() > MAX_MEMBERS {
        assert_eq!(stamped.err(), Some(ParamsError::TooLarge));
        return;
    }
    let meta = match meta {
        None => Vec::new(),
        Some(Some(meta)) if meta.len() <= MAX_MEMBERS => meta,
        Some(Some(_)) => {
            assert_eq!(stamped.err(), Some(ParamsError::TooLarge));
            return;
        }
        Some(None) => {
            assert_eq!(
                stamped.err(),
                Some(ParamsError::NotAnObject),
                "stamped params whose _meta is not an object: {}",
                params.get()
            );
            return;
        }
    };
    let stamped = stamped.unwrap_or_else(|e| panic!("{e}: {}", params.get()));
    check_stamped(&envelope, &members, &meta, stamped.get());
}

/// The stamped text holds the envelope and everything else the params and their `_meta` held.
fn check_stamped(
    envelope: &Envelope,
    members: &[(String, &str)],
    meta: &[(String, &str)],
    out: &str,
) {
    assert!(is_valid_json(out), "stamped params are not JSON: {out}");
    let out_members = scan_members(out).expect("stamped params are an object");
    assert_eq!(count(&out_members, "_meta"), 1, "{out}");
    assert_eq!(out_members.last().map(|(k, _)| k.as_str()), Some("_meta"));
    assert_eq!(
        without(&out_members, &["_meta"]),
        without(members, &["_meta"]),
        "a member changed: {out}"
    );
    let out_meta =
        scan_members(last(&out_members, "_meta").unwrap_or_default()).expect("_meta is an object");
    check_envelope_keys(envelope, &out_meta, out);
    let keys = [
        PROTOCOL_VERSION_KEY,
        CLIENT_CAPABILITIES_KEY,
        CLIENT_INFO_KEY,
    ];
    assert_eq!(
        without(&out_meta, &keys),
        without(meta, &keys),
        "a member of _meta changed: {out}"
    );
}

/// `meta` names the envelope's version, capabilities and identity, once each.
fn check_envelope_keys(envelope: &Envelope, meta: &[(String, &str)], context: &str) {
    for key in [
        PROTOCOL_VERSION_KEY,
        CLIENT_CAPABILITIES_KEY,
        CLIENT_INFO_KEY,
    ] {
        assert_eq!(count(meta, key), 1, "{key} in {context}");
    }
    let value = |key| serde_json::from_str::<serde_json::Value>(last(meta, key).unwrap_or("null"));
    assert_eq!(
        value(PROTOCOL_VERSION_KEY).ok(),
        Some(serde_json::Value::from(envelope.version.as_str()))
    );
    assert_eq!(
        value(CLIENT_CAPABILITIES_KEY).ok(),
        serde_json::to_value(&envelope.capabilities).ok()
    );
    assert_eq!(
        value(CLIENT_INFO_KEY).ok(),
        serde_json::to_value(&envelope.client_info).ok()
    );
}

/// (b) A retry's params, given the value's own `inputRequests` as the responses and its own
/// `requestState` as the state, then a second round with neither.
fn check_retry(original: &RawValue) {
    let members = scan_members(original.get());
    let responses = members
        .as_deref()
        .and_then(|m| last(m, "inputRequests"))
        .map(raw);
    let state = members
        .as_deref()
        .and_then(|m| last(m, "requestState"))
        .map(raw);
    for (responses, state) in [
        (responses.as_deref(), state.as_deref()),
        (responses.as_deref(), None),
        (None, state.as_deref()),
    ] {
        let retry = modern::retry_params(Some(original), responses, state);
        let Some(members) = &members else {
            assert_eq!(retry.err(), Some(ParamsError::NotAnObject));
            return;
        };
        if members.len() > MAX_MEMBERS {
            assert_eq!(retry.err(), Some(ParamsError::TooLarge));
            return;
        }
        let retry = retry.unwrap_or_else(|e| panic!("{e}: {}", original.get()));
        check_retried(members, responses, state, retry.get());
        let again = modern::retry_params(Some(&retry), None, None)
            .unwrap_or_else(|e| panic!("{e}: a retry's own params {}", retry.get()));
        check_retried(members, None, None, again.get());
    }
    let fresh = modern::retry_params(None, None, state.as_deref()).expect("no params");
    check_retried(&[], None, state.as_deref(), fresh.get());
}

fn check_retried(
    original: &[(String, &str)],
    responses: Option<&RawValue>,
    state: Option<&RawValue>,
    out: &str,
) {
    assert!(is_valid_json(out), "retry params are not JSON: {out}");
    let out_members = scan_members(out).expect("retry params are an object");
    let names = ["inputResponses", "requestState"];
    assert_eq!(
        without(&out_members, &names),
        without(original, &names),
        "{out}"
    );
    for (name, given) in [("inputResponses", responses), ("requestState", state)] {
        assert_eq!(
            count(&out_members, name),
            usize::from(given.is_some()),
            "{name} in {out}"
        );
        assert_eq!(
            last(&out_members, name),
            given.map(RawValue::get),
            "{name} not echoed byte for byte"
        );
    }
}

/// (c) The envelope of a result.
fn check_result_envelope(result: &RawValue) {
    let read = ResultEnvelope::read(result);
    let members = scan_members(result.get());
    let Some(members) = members else {
        if !result.get().starts_with('{') {
            assert!(
                matches!(read, Err(ResultError::Malformed(_))),
                "{read:?} for {}",
                result.get()
            );
        }
        return;
    };
    let result_type = last(&members, "resultType");
    match result_type.map(json_string) {
        None => {}
        // `task`: the tasks extension's `CreateTaskResult` (SEP-2663).
        Some(Some(kind)) if kind == "complete" || kind == "input_required" || kind == "task" => {}
        Some(Some(kind)) => {
            let once = ["resultType", "inputRequests", "requestState"]
                .iter()
                .all(|name| count(&members, name) <= 1);
            if once {
                assert_eq!(
                    read.as_ref().err(),
                    Some(&ResultError::UnknownType(kind.clone()))
                );
            }
            assert!(read.is_err(), "accepted resultType {kind:?}");
        }
        // `null` reads as absent (serde's reading of an optional member).
        Some(None) if result_type == Some("null") => {}
        Some(None) => assert!(
            matches!(read, Err(ResultError::Malformed(_))),
            "a resultType that is not a string: {read:?}"
        ),
    }
    let Ok(envelope) = read else {
        return;
    };
    let kept = |name| last(&members, name).filter(|text| *text != "null");
    assert_eq!(
        envelope.request_state.as_deref().map(RawValue::get),
        kept("requestState")
    );
    assert_eq!(
        envelope.input_requests.as_deref().map(RawValue::get),
        kept("inputRequests")
    );
    match envelope.result_type() {
        ResultType::Complete => assert!(
            result_type.is_none_or(
                |kind| kind == "null" || json_string(kind).as_deref() == Some("complete")
            ),
            "complete for resultType {result_type:?}"
        ),
        ResultType::InputRequired => check_input_required(&envelope),
        ResultType::Task => assert_eq!(
            result_type.and_then(json_string).as_deref(),
            Some("task"),
            "task for resultType {result_type:?}"
        ),
        ResultType::Unknown(kind) => panic!("accepted an unknown resultType {kind:?}"),
    }
}

fn check_input_required(envelope: &ResultEnvelope) {
    if let Some(state) = &envelope.request_state {
        assert!(
            json_string(state.get()).is_some(),
            "requestState {}",
            state.get()
        );
    }
    let requests = envelope
        .input_requests
        .as_deref()
        .map(|requests| scan_members(requests.get()).expect("inputRequests is an object"))
        .unwrap_or_default();
    assert!(
        !requests.is_empty() || envelope.request_state.is_some(),
        "input_required with nothing to answer and no state"
    );
    let read = envelope.input_requests();
    let mut names: Vec<&str> = requests.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    if names.len() < requests.len() {
        assert!(
            read.is_err(),
            "input requests under a repeated key were accepted"
        );
        return;
    }
    let Ok(read) = read else {
        return;
    };
    assert_eq!(read.len(), requests.len());
    for (request, (name, body)) in read.iter().zip(&requests) {
        assert_eq!(&request.key, name);
        let body = scan_members(body).expect("an input request is an object");
        assert_eq!(
            Some(&request.method),
            last(&body, "method").and_then(json_string).as_ref()
        );
        assert_eq!(
            request.params.as_deref().map(RawValue::get),
            last(&body, "params").filter(|text| *text != "null")
        );
    }
}

/// (d) The era a result of the probe says.
fn check_era_from_result(result: &RawValue) {
    let (verdict, discovered) = modern::era_from_result(result, &mcp::MODERN);
    match verdict {
        EraVerdict::Modern(version) => {
            assert!(mcp::MODERN.contains(&version));
            let discovered = discovered.expect("a modern verdict comes with its result");
            let members = scan_members(result.get()).expect("a discover result is an object");
            for name in ["supportedVersions", "capabilities"] {
                assert_eq!(count(&members, name), 1, "{name} in {}", result.get());
            }
            let supported: Vec<String> =
                serde_json::from_str(last(&members, "supportedVersions").unwrap_or_default())
                    .expect("supportedVersions is an array of strings");
            assert!(supported.iter().any(|v| v == version.as_str()));
            assert_eq!(discovered.supported_versions, supported);
            assert!(
                scan_members(last(&members, "capabilities").unwrap_or_default()).is_some(),
                "capabilities are not an object"
            );
            if let Some(kind) = last(&members, "resultType").filter(|text| *text != "null") {
                assert_eq!(
                    json_string(kind).as_deref(),
                    Some("complete"),
                    "a discover result of type {kind}"
                );
            }
            check_cache_hint(&members, discovered.cache_hint());
        }
        EraVerdict::Legacy(_) => assert!(discovered.is_none()),
        other => panic!("a result gave {other:?}"),
    }
}

/// `ttlMs` is a count of milliseconds only as a non-negative integer; `cacheScope` is public
/// only when it says so.
fn check_cache_hint(members: &[(String, &str)], hint: CacheHint) {
    let ttl = last(members, "ttlMs")
        .filter(|text| text.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|text| text.parse::<u64>().ok())
        .unwrap_or(0);
    assert_eq!(hint.ttl, Duration::from_millis(ttl));
    let public = last(members, "cacheScope").and_then(json_string).as_deref() == Some("public");
    assert_eq!(hint.scope == CacheScope::Public, public);
}

/// (d) The era an error answering the probe says.
fn check_era_from_error(code: i64, data: Option<&str>) {
    let verdict = modern::era_from_error(code, data, &mcp::MODERN);
    let members = data.and_then(scan_members);
    let supported: Option<Vec<String>> = members
        .as_deref()
        .filter(|members| count(members, "supported") == 1)
        .and_then(|members| last(members, "supported"))
        .and_then(|text| serde_json::from_str(text).ok());
    let is_unsupported = code == crate::mcp::error_code::UNSUPPORTED_PROTOCOL_VERSION;
    let common = supported.as_ref().and_then(|supported| {
        mcp::MODERN
            .iter()
            .copied()
            .filter(|v| supported.iter().any(|name| name == v.as_str()))
            .max()
    });
    match &verdict {
        EraVerdict::Retry(version) => {
            assert!(is_unsupported, "Retry for error {code}");
            let names = members
                .as_deref()
                .and_then(|members| last(members, "supported"))
                .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
                .expect("Retry without a supported list");
            assert!(names.iter().any(|name| name == version.as_str()));
            assert!(mcp::MODERN.contains(version));
        }
        EraVerdict::Modern(_) => panic!("an error gave {verdict:?}"),
        EraVerdict::NoCommonVersion(theirs) => {
            assert!(is_unsupported);
            assert!(
                theirs
                    .iter()
                    .all(|name| mcp::MODERN.iter().all(|v| v.as_str() != name)),
                "{theirs:?} names a version we speak"
            );
        }
        EraVerdict::Legacy(_) => {}
    }
    if is_unsupported && let Some(common) = common {
        assert_eq!(verdict, EraVerdict::Retry(common), "{data:?}");
    }
    if !is_unsupported || data.is_none() {
        assert!(matches!(verdict, EraVerdict::Legacy(_)), "{verdict:?}");
    }
    let retry = match verdict {
        EraVerdict::Retry(version) if is_unsupported => Some(version),
        _ => None,
    };
    if is_unsupported {
        assert_eq!(modern::supported_in_error(data, &mcp::MODERN), retry);
    }
}

// ---------------------------------------------------------------------------------------------
// (e) The session's probe.

/// What a step must do to the probe.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Nothing: the probe still waits.
    Stay,
    /// Ready at this stateless revision.
    Modern(ProtocolVersion),
    /// The probe is sent again at this revision.
    Reprobe(ProtocolVersion),
    /// `initialize` is queued; `settled` says whether the probe is settled (it is withdrawn
    /// unsettled when the stdio server exited).
    Fallback { settled: bool },
    /// Closed, the probe failing with this kind.
    Fail(FailureKind),
}

struct ProbeRun {
    session: Session,
    now: Instant,
    silent_means_legacy: bool,
    probe_timeout: Duration,
    /// Every probe sent: its id, its revision and its deadline.
    probes: Vec<(Id, ProtocolVersion, Instant)>,
    /// Every request id handed to the transport.
    sent_ids: Vec<Id>,
    /// How often each probe was settled.
    settled: Vec<usize>,
    /// Whether the probe is over (and how).
    over: bool,
}

impl ProbeRun {
    fn new(knob: u8) -> Self {
        let probe_timeout = [10_000, 1_000, 60_000, 100][usize::from((knob >> 1) & 3)];
        let config = Config {
            era: EraPolicy::Auto,
            silent_probe_means_legacy: knob & 1 == 1,
            probe_timeout: Duration::from_millis(probe_timeout),
            modern_versions: if knob == 0xFF {
                Vec::new()
            } else {
                mcp::MODERN.to_vec()
            },
            ..Config::default()
        };
        ProbeRun {
            silent_means_legacy: config.silent_probe_means_legacy,
            probe_timeout: config.probe_timeout,
            session: Session::new(config),
            now: origin(),
            probes: Vec::new(),
            sent_ids: Vec::new(),
            settled: Vec::new(),
            over: false,
        }
    }

    fn run(mut self, steps: &[&[u8]]) {
        self.session.start(self.now);
        let outputs = self.drain();
        if self.session.is_modern() || !matches!(self.session.phase(), Phase::Probing) {
            // No stateless revision to probe with: a 2025-era client.
            self.check_fallback(&outputs, false);
            return;
        }
        let [Output::Transmit(probe)] = outputs.as_slice() else {
            panic!("start sent {outputs:?}");
        };
        let version = self.session.probe_version().expect("probing at a version");
        self.note_probe(probe, version);
        for step in steps {
            let Some((&kind, payload)) = step.split_first() else {
                continue;
            };
            if self.over {
                self.late(kind, payload);
            } else {
                let expect = self.act(kind, payload);
                let outputs = self.drain();
                self.check(expect, &outputs);
            }
        }
        if !self.over {
            let deadline = self.probes.last().map_or(self.now, |probe| probe.2);
            self.now = self.now.max(deadline);
            self.session.handle_timeout(self.now);
            let outputs = self.drain();
            let expect = self.silence(FailureKind::Timeout);
            self.check(expect, &outputs);
            assert!(self.over, "the probe outlived its timeout");
        }
        assert!(self.probes.len() <= 2, "{} probes sent", self.probes.len());
        for (index, times) in self.settled.iter().enumerate() {
            assert!(*times <= 1, "probe {index} settled {times} times");
        }
    }

    fn current(&self) -> &(Id, ProtocolVersion, Instant) {
        self.probes.last().expect("a probe was sent")
    }

    /// Performs one step; returns what it must do to the probe.
    fn act(&mut self, kind: u8, payload: &[u8]) -> Expect {
        let probe = self.current().0.clone();
        match kind {
            b'f' => {
                let failure = failure(payload);
                let expect = self.verdict_of_failure(&failure);
                self.session.fail_request(&probe, failure);
                expect
            }
            b't' => {
                let by = match payload {
                    [high, low, ..] => {
                        Duration::from_millis(u64::from(u16::from_be_bytes([*high, *low])))
                    }
                    _ => self.probe_timeout,
                };
                self.now += by;
                self.session.handle_timeout(self.now);
                if self.now >= self.current().2 {
                    self.silence(FailureKind::Timeout)
                } else {
                    Expect::Stay
                }
            }
            b'l' => {
                let lost = self.session.probe_lost(self.now);
                assert_eq!(lost, self.silent_means_legacy);
                if lost {
                    Expect::Fallback { settled: false }
                } else {
                    Expect::Stay
                }
            }
            _ => {
                let Ok(message) = jsonrpc::decode_message(payload) else {
                    return Expect::Stay;
                };
                let message = match message {
                    Message::Response(response) if kind != b'r' && response.id.is_some() => {
                        Message::Response(Response {
                            id: Some(probe.clone()),
                            outcome: response.outcome,
                        })
                    }
                    other => other,
                };
                let expect = match &message {
                    Message::Response(response) if response.id.as_ref() == Some(&probe) => {
                        self.verdict_of_response(response)
                    }
                    _ => Expect::Stay,
                };
                self.session.handle_message(message, self.now);
                expect
            }
        }
    }

    /// What the answer `response` to the probe must do, by the classifiers.
    fn verdict_of_response(&self, response: &Response<'_>) -> Expect {
        match &response.outcome {
            Ok(result) => match modern::era_from_result(result, &mcp::MODERN).0 {
                EraVerdict::Modern(version) => Expect::Modern(version),
                _ => Expect::Fallback { settled: true },
            },
            Err(error) => {
                let data = error
                    .data
                    .as_deref()
                    .map(RawValue::get)
                    .filter(|data| data.len() <= MAX_ERROR_DATA_BYTES);
                match modern::era_from_error(error.code, data, &mcp::MODERN) {
                    EraVerdict::Retry(version) if self.probes.len() == 1 => {
                        Expect::Reprobe(version)
                    }
                    EraVerdict::Retry(_) | EraVerdict::NoCommonVersion(_) => {
                        Expect::Fail(FailureKind::UnsupportedVersion)
                    }
                    _ => Expect::Fallback { settled: true },
                }
            }
        }
    }

    /// What a transport failure of the probe must do (2026-07-28 `basic/versioning.mdx` and
    /// the transports' "Backward compatibility"): a JSON-RPC error without data, a 4xx that is
    /// not a modern error and a reply that is not MCP mean a 2025-era server; silence means
    /// one only on stdio; anything else (auth, 5xx, no connection, limits) is no verdict.
    fn verdict_of_failure(&self, failure: &Failure) -> Expect {
        match &failure.kind {
            FailureKind::ServerError { .. } | FailureKind::Protocol => {
                Expect::Fallback { settled: true }
            }
            FailureKind::HttpStatus { status } if (400..500).contains(status) => {
                Expect::Fallback { settled: true }
            }
            FailureKind::Timeout | FailureKind::ConnectionLost | FailureKind::Closed => {
                self.silence(failure.kind.clone())
            }
            other => Expect::Fail(other.clone()),
        }
    }

    fn silence(&self, kind: FailureKind) -> Expect {
        if self.silent_means_legacy {
            Expect::Fallback { settled: true }
        } else {
            Expect::Fail(kind)
        }
    }

    /// A step after the probe is over: a late answer to a probe, a failure reported for one,
    /// or the server exiting, changes nothing.
    fn late(&mut self, kind: u8, payload: &[u8]) {
        let probe = self.probes[usize::from(kind) % self.probes.len()].0.clone();
        let before = format!("{:?}", self.session.phase());
        match kind {
            b'f' => self.session.fail_request(&probe, failure(payload)),
            b'l' => assert!(!self.session.probe_lost(self.now), "lost after the probe"),
            _ => {
                let Ok(Message::Response(response)) = jsonrpc::decode_message(payload) else {
                    return;
                };
                let late = Response {
                    id: Some(probe),
                    outcome: response.outcome,
                };
                self.session
                    .handle_message(Message::Response(late), self.now);
            }
        }
        let outputs = self.drain();
        assert!(
            outputs.is_empty(),
            "a late answer to the probe did {outputs:?}"
        );
        assert_eq!(format!("{:?}", self.session.phase()), before);
    }

    /// Every output queued now; notes probes sent and probes settled.
    fn drain(&mut self) -> Vec<Output> {
        let mut outputs = Vec::new();
        while let Some(output) = self.session.poll_output() {
            match &output {
                Output::Transmit(transmit) => {
                    if let Some(id) = transmit.request_id() {
                        assert!(!self.sent_ids.contains(id), "the id {id} was used again");
                        self.sent_ids.push(id.clone());
                    }
                }
                Output::Settled(settled) => {
                    if let Some(index) = self.probes.iter().position(|p| p.0 == settled.id) {
                        self.settled[index] += 1;
                    }
                }
                _ => {}
            }
            outputs.push(output);
        }
        outputs
    }

    fn note_probe(&mut self, transmit: &crate::session::Transmit, version: ProtocolVersion) {
        let Message::Request(request) = &transmit.message else {
            panic!("the probe is not a request: {transmit:?}");
        };
        assert_eq!(request.method, methods::SERVER_DISCOVER);
        let params = request.params.as_deref().expect("the probe has params");
        let members = scan_members(params.get()).expect("the probe's params are an object");
        let meta = scan_members(last(&members, "_meta").expect("the probe has _meta"))
            .expect("_meta is an object");
        let mut expected = envelope(version);
        expected.client_info = Config::default().client_info;
        check_envelope_keys(&expected, &meta, params.get());
        assert!(
            self.probes.iter().all(|p| p.0 != request.id),
            "a probe under an old id"
        );
        self.probes
            .push((request.id.clone(), version, self.now + self.probe_timeout));
        self.settled.push(0);
    }

    /// The session did what `expect` says; `outputs` are what the step queued.
    fn check(&mut self, expect: Expect, outputs: &[Output]) {
        let probe_index = self.probes.len() - 1;
        let settled_probe = outputs.iter().find_map(|output| match output {
            Output::Settled(s) if s.id == self.probes[probe_index].0 => Some(s),
            _ => None,
        });
        let ready = outputs.iter().any(|o| matches!(o, Output::Ready(_)));
        let transmits: Vec<&crate::session::Transmit> = outputs
            .iter()
            .filter_map(|o| match o {
                Output::Transmit(t) => Some(t),
                _ => None,
            })
            .collect();
        match expect {
            Expect::Stay => {
                assert!(
                    matches!(self.session.phase(), Phase::Probing),
                    "{:?}",
                    self.session.phase()
                );
                assert!(settled_probe.is_none() && !ready, "{outputs:?}");
                assert!(
                    transmits
                        .iter()
                        .all(|t| matches!(t.message, Message::Response(_))),
                    "only answers to server requests go out while probing: {outputs:?}"
                );
            }
            Expect::Modern(version) => {
                assert_eq!(self.session.protocol_version(), Some(version));
                assert!(self.session.is_modern());
                let readies: Vec<_> = outputs
                    .iter()
                    .filter_map(|o| match o {
                        Output::Ready(ready) => Some(ready),
                        _ => None,
                    })
                    .collect();
                assert_eq!(readies.len(), 1);
                assert_eq!(readies[0].version, version);
                assert!(readies[0].server.is_some(), "the server is described");
                let settled = settled_probe.expect("the probe is settled");
                assert!(matches!(settled.outcome, Ok(Payload::Raw(_))));
                assert!(
                    transmits.is_empty(),
                    "sent after a modern verdict: {outputs:?}"
                );
                self.over = true;
            }
            Expect::Reprobe(version) => {
                assert!(matches!(self.session.phase(), Phase::Probing));
                assert_eq!(self.session.probe_version(), Some(version));
                let settled = settled_probe.expect("the first probe is settled");
                assert!(settled.outcome.is_err());
                let [transmit] = transmits.as_slice() else {
                    panic!("a re-probe sent {outputs:?}");
                };
                self.note_probe(transmit, version);
                assert!(!ready);
            }
            Expect::Fallback { settled } => {
                assert!(
                    matches!(self.session.phase(), Phase::Initializing),
                    "{:?}",
                    self.session.phase()
                );
                match settled_probe {
                    Some(s) => assert!(settled && s.outcome.is_err(), "{s:?}"),
                    None => assert!(!settled, "the probe is not settled"),
                }
                self.check_fallback(outputs, ready);
            }
            Expect::Fail(kind) => {
                assert!(
                    matches!(self.session.phase(), Phase::Closed),
                    "{:?}",
                    self.session.phase()
                );
                let settled = settled_probe.expect("the probe is settled");
                let failure = settled.outcome.as_ref().expect_err("the probe failed");
                assert_eq!(failure.kind, kind, "{failure}");
                match kind {
                    FailureKind::UnsupportedVersion | FailureKind::Unauthorized { .. } => {}
                    _ => assert!(failure.detail.contains("era probe"), "{failure}"),
                }
                assert!(
                    transmits.is_empty(),
                    "sent after the probe failed: {outputs:?}"
                );
                assert!(!ready);
                self.over = true;
            }
        }
    }

    /// The first message sent after a fallback is a 2025-era `initialize`.
    fn check_fallback(&mut self, outputs: &[Output], ready: bool) {
        assert!(matches!(self.session.phase(), Phase::Initializing));
        assert!(!ready && !self.session.is_modern());
        let first = outputs.iter().find_map(|o| match o {
            Output::Transmit(t) => Some(&t.message),
            _ => None,
        });
        let Some(Message::Request(request)) = first else {
            panic!("the first message after the fallback is no request: {outputs:?}");
        };
        assert_eq!(request.method, methods::INITIALIZE);
        assert_eq!(self.session.initialize_id(), Some(&request.id));
        let params = request.params.as_deref().expect("initialize has params");
        let members = scan_members(params.get()).expect("initialize params are an object");
        assert_eq!(count(&members, "_meta"), 0, "initialize with _meta");
        assert_eq!(
            last(&members, "protocolVersion")
                .and_then(json_string)
                .as_deref(),
            Some(ProtocolVersion::LATEST_INITIALIZE.as_str())
        );
        self.over = true;
    }
}

/// A transport failure from the payload: kind, status (two bytes), delivery.
fn failure(payload: &[u8]) -> Failure {
    let byte = |at: usize| payload.get(at).copied().unwrap_or(0);
    let status = u16::from_be_bytes([byte(1), byte(2)]);
    let kind = match byte(0) % 14 {
        0 => FailureKind::ServerError {
            code: i64::from(i16::from_be_bytes([byte(1), byte(2)])) - 32_000,
        },
        1 => FailureKind::HttpStatus { status },
        2 => FailureKind::Unauthorized {
            status: if status % 2 == 0 { 401 } else { 403 },
        },
        3 => FailureKind::Connect,
        4 => FailureKind::ConnectionLost,
        5 => FailureKind::Protocol,
        6 => FailureKind::Timeout,
        7 => FailureKind::Closed,
        8 => FailureKind::LimitExceeded,
        9 => FailureKind::ReplyOverBudget {
            limit: u64::from(status),
        },
        10 => FailureKind::SessionExpired,
        11 => FailureKind::UnsupportedVersion,
        12 => FailureKind::IdleTimeout,
        _ => FailureKind::Cancelled,
    };
    let delivery = match byte(3) % 4 {
        0 => Delivery::Refused,
        1 => Delivery::NotSent,
        2 => Delivery::MayHaveReached,
        _ => Delivery::Answered,
    };
    Failure::new(kind, delivery, "a transport failure of the fuzz input")
}
