//! The probe's pure half: what a reply's bytes say (framing, JSON-RPC members, the era
//! verdict of `server/discover`, challenges, session ids, tool schemas), and which rule of the
//! specification each oddity breaks. No I/O: everything here works on constructed inputs.

use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::report::{Challenge, Deviation, Level, ModernEra, SessionIdSeen, SseFraming, ToolCheck};
use crate::binding::schema::compile;
use crate::mcp::Tool;
use crate::mcp::headers::param_headers;
use crate::sse;

/// The modern revision the probe speaks.
pub(crate) const MODERN: &str = "2026-07-28";

/// The `resultType` values of protocol 2026-07-28 (`basic/index.mdx`, "ResultType").
const RESULT_TYPES: [&str; 2] = ["complete", "input_required"];

/// The rules the checks cite: spec file (revision), section, and what it says.
pub(crate) mod rules {
    /// Replies to requests.
    pub(crate) const CONTENT_TYPE: &str = "basic/transports.mdx (2025-11-25), Sending Messages to the Server, 5: a request MUST be answered with Content-Type text/event-stream or application/json";
    /// Priming events.
    pub(crate) const PRIMING: &str = "basic/transports.mdx (2025-11-25), Sending Messages to the Server, 6: a stream SHOULD start with an event consisting of an event ID and an empty data field";
    /// Unknown sessions.
    pub(crate) const UNKNOWN_SESSION: &str = "basic/transports.mdx (2025-11-25), Session Management, 3: after a session ends the server MUST answer requests carrying its id with 404 Not Found";
    /// Missing session ids.
    pub(crate) const MISSING_SESSION: &str = "basic/transports.mdx (2025-11-25), Session Management, 2: a server that requires a session id SHOULD answer a request without one with 400 Bad Request";
    /// Session id characters.
    pub(crate) const SESSION_ID_ASCII: &str = "basic/transports.mdx (2025-11-25), Session Management, 1: the session id MUST only contain visible ASCII (0x21 to 0x7E)";
    /// `jsonrpc: "2.0"`.
    pub(crate) const JSONRPC_VERSION: &str =
        "JSON-RPC 2.0, 5 Response object: jsonrpc MUST be exactly \"2.0\"";
    /// `result` xor `error`.
    pub(crate) const RESULT_XOR_ERROR: &str = "JSON-RPC 2.0, 5 Response object: result is REQUIRED on success, error on error; both MUST NOT be included";
    /// Response ids.
    pub(crate) const RESPONSE_ID: &str = "JSON-RPC 2.0, 5 Response object: id MUST be the same as the id of the request (null only when it could not be read; MCP 2025-11-25 lets an error response omit it)";
    /// Error objects.
    pub(crate) const ERROR_OBJECT: &str =
        "JSON-RPC 2.0, 5.1 Error object: code MUST be an integer, message a string";
    /// Extra response members.
    pub(crate) const RESPONSE_MEMBERS: &str =
        "JSON-RPC 2.0, 5 Response object: its members are jsonrpc, result or error, and id";
    /// `resultType` (2026-07-28).
    pub(crate) const RESULT_TYPE: &str = "basic/index.mdx (2026-07-28), Result Responses / ResultType: a result MUST include resultType; a value the client does not recognise is invalid";
    /// initialize's version answer.
    pub(crate) const VERSION_NEGOTIATION: &str = "basic/lifecycle.mdx (2025-11-25), Version Negotiation: a server that supports the requested version MUST answer with it, otherwise with another version it supports";
    /// The 401 challenge header.
    pub(crate) const WWW_AUTHENTICATE: &str =
        "RFC 9110, 15.5.2 401 Unauthorized: the server MUST send a WWW-Authenticate header field";
    /// Where the protected-resource metadata is.
    pub(crate) const RESOURCE_METADATA: &str = "basic/authorization.mdx (2025-11-25), Protected Resource Metadata Discovery Requirements: servers MUST name the metadata in WWW-Authenticate (resource_metadata) or serve it at a well-known URI";
    /// The metadata's `resource`.
    pub(crate) const METADATA_RESOURCE: &str = "RFC 9728, 3.3 Protected Resource Metadata Validation: the resource value MUST be identical to the protected resource's identifier";
    /// Tool names.
    pub(crate) const TOOL_NAME: &str = "server/tools.mdx (2025-11-25), Tool Names: names SHOULD be 1 to 128 characters of A-Z a-z 0-9 _ - . and unique within a server";
    /// Input schemas.
    pub(crate) const INPUT_SCHEMA: &str = "server/tools.mdx (2025-11-25), Tool: inputSchema MUST be a valid JSON Schema object (schema.ts: type \"object\")";
    /// Output schemas.
    pub(crate) const OUTPUT_SCHEMA: &str = "server/tools.mdx (2025-11-25), Output Schema: outputSchema is a JSON Schema (schema.ts: type \"object\") that results MUST conform to";
    /// `x-mcp-header`.
    pub(crate) const X_MCP_HEADER: &str = "server/tools.mdx (2026-07-28), x-mcp-header: each annotation MUST be a unique HTTP token on a string, integer or boolean property reached through properties alone; a tool breaking this is invalid";
}

/// What kind of body a reply has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Json,
    EventStream,
    Empty,
    Other,
}

impl BodyKind {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            BodyKind::Json => "json",
            BodyKind::EventStream => "sse",
            BodyKind::Empty => "empty",
            BodyKind::Other => "other",
        }
    }
}

/// The reply's `Content-Type`, as sent.
pub(crate) fn content_type(headers: &HeaderMap) -> Option<String> {
    headers.get(http::header::CONTENT_TYPE).map(|v| {
        String::from_utf8_lossy(v.as_bytes())
            .chars()
            .take(100)
            .collect()
    })
}

/// The kind of body, by its media type (compared without parameters, ignoring case).
pub(crate) fn body_kind(content_type: Option<&str>, body: &[u8]) -> BodyKind {
    if body.is_empty() {
        return BodyKind::Empty;
    }
    let media = content_type
        .and_then(|ct| ct.split(';').next())
        .map(str::trim)
        .unwrap_or("");
    if media.eq_ignore_ascii_case("application/json") {
        BodyKind::Json
    } else if media.eq_ignore_ascii_case("text/event-stream") {
        BodyKind::EventStream
    } else {
        BodyKind::Other
    }
}

/// How an event-stream body is framed: its line endings, and per event block which fields it
/// has. Only blocks ended by a blank line count (as a decoder would).
pub(crate) fn sse_framing(body: &[u8]) -> SseFraming {
    let mut framing = SseFraming::default();
    let (mut lf, mut crlf, mut cr) = (0usize, 0usize, 0usize);
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\r' if body.get(i + 1) == Some(&b'\n') => {
                crlf += 1;
                lines.push(&body[start..i]);
                i += 2;
                start = i;
            }
            b'\r' => {
                cr += 1;
                lines.push(&body[start..i]);
                i += 1;
                start = i;
            }
            b'\n' => {
                lf += 1;
                lines.push(&body[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    let kinds: Vec<(&str, usize)> = [("LF", lf), ("CRLF", crlf), ("CR", cr)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    framing.line_endings = match kinds.as_slice() {
        [] => "none".to_owned(),
        [(one, _)] => (*one).to_owned(),
        many => format!(
            "mixed ({})",
            many.iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut block: Vec<(&[u8], &[u8])> = Vec::new();
    for line in lines {
        if line.is_empty() {
            event_block(&block, &mut framing);
            block.clear();
            continue;
        }
        if line.first() == Some(&b':') {
            framing.comments += 1;
            continue;
        }
        let (name, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        block.push((name, value));
    }
    framing
}

/// Counts one event block's fields into `framing`.
fn event_block(fields: &[(&[u8], &[u8])], framing: &mut SseFraming) {
    let mut has_data = false;
    let mut data_empty = true;
    let mut has_id = false;
    let mut event_type: Option<String> = None;
    for (name, value) in fields {
        match *name {
            b"data" => {
                has_data = true;
                data_empty &= value.is_empty();
            }
            b"id" => has_id = true,
            b"event" => event_type = Some(String::from_utf8_lossy(value).into_owned()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                framing.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }
    if has_id {
        framing.events_with_id += 1;
    }
    if !has_data {
        return;
    }
    framing.events += 1;
    if data_empty {
        if has_id {
            framing.priming_events += 1;
        } else {
            framing.empty_events_without_id += 1;
        }
    }
    if let Some(kind) = event_type.filter(|t| t != "message" && !t.is_empty())
        && !framing.other_event_types.contains(&kind)
        && framing.other_event_types.len() < 8
    {
        framing.other_event_types.push(kind);
    }
}

/// The JSON-RPC messages a body carries: the JSON value (each element of a batch), or the JSON
/// of each `message` event with data. Events that are not JSON are skipped and counted.
pub(crate) fn messages(kind: &BodyKind, body: &[u8]) -> (Vec<Value>, usize) {
    let mut values = Vec::new();
    let mut not_json = 0;
    let mut push = |value: Value| match value {
        Value::Array(items) => values.extend(items),
        other => values.push(other),
    };
    match kind {
        BodyKind::Json => match serde_json::from_slice(body) {
            Ok(value) => push(value),
            Err(_) => not_json += 1,
        },
        BodyKind::EventStream => {
            let mut decoder = sse::Decoder::new(sse::Limits::default());
            decoder.push(body);
            while let Ok(Some(event)) = decoder.next_event() {
                if event.data().is_empty()
                    || !(event.event_type().is_empty() || event.event_type() == "message")
                {
                    continue;
                }
                match serde_json::from_str(event.data()) {
                    Ok(value) => push(value),
                    Err(_) => not_json += 1,
                }
            }
        }
        BodyKind::Empty | BodyKind::Other => {}
    }
    (values, not_json)
}

/// Whether `message` is a JSON-RPC response: `result` or `error`, no `method`, and `jsonrpc`
/// or `id` (an OAuth error body, `{"error": "invalid_token"}`, is none).
pub(crate) fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
        && (message.get("jsonrpc").is_some() || message.get("id").is_some())
}

/// The response among `messages` that answers the request `id`: the one with that id, else an
/// error response with no or a null id, else any response (whose id is then wrong).
pub(crate) fn find_response<'a>(messages: &'a [Value], id: &str) -> Option<&'a Value> {
    let responses = || messages.iter().filter(|m| is_response(m));
    responses()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
        .or_else(|| responses().find(|m| m.get("id").is_none_or(Value::is_null)))
        .or_else(|| responses().next())
}

/// The JSON-RPC answer in a line: `result`, `error CODE "MESSAGE"`, or what is there instead.
pub(crate) fn answer_line(response: Option<&Value>) -> String {
    let Some(response) = response else {
        return "no JSON-RPC response".to_owned();
    };
    if let Some(error) = response.get("error") {
        let code = error
            .get("code")
            .map_or_else(|| "?".to_owned(), Value::to_string);
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        return format!("error {code} {:?}", cut(message, 100));
    }
    "result".to_owned()
}

/// The rules `response` (the answer to request `id`) breaks. `modern`: the request was a
/// 2026-07-28 one, whose results must carry `resultType`.
pub(crate) fn check_response(
    response: &Value,
    id: &str,
    modern: bool,
    evidence: &str,
) -> Vec<Deviation> {
    let mut found = Vec::new();
    let mut deviate = |what: String, rule: &str, level: Level| {
        found.push(Deviation::new(what, rule, level, evidence.to_owned()));
    };
    let Some(object) = response.as_object() else {
        deviate(
            "a response is not a JSON object".to_owned(),
            rules::RESULT_XOR_ERROR,
            Level::Must,
        );
        return found;
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        deviate(
            format!(
                "a response has jsonrpc {}",
                object
                    .get("jsonrpc")
                    .map_or_else(|| "missing".to_owned(), Value::to_string)
            ),
            rules::JSONRPC_VERSION,
            Level::Must,
        );
    }
    let (result, error) = (object.get("result"), object.get("error"));
    if result.is_some() && error.is_some() {
        deviate(
            "a response has both result and error".to_owned(),
            rules::RESULT_XOR_ERROR,
            Level::Must,
        );
    }
    let ours = |value: &Value| value.as_str() == Some(id);
    match (result, object.get("id")) {
        (Some(_), Some(value)) if ours(value) => {}
        (Some(_), other) => deviate(
            format!(
                "a result response has id {}, not the request's",
                other.map_or_else(|| "missing".to_owned(), Value::to_string)
            ),
            rules::RESPONSE_ID,
            Level::Must,
        ),
        (None, None) => {}
        (None, Some(value)) if value.is_null() || ours(value) => {}
        (None, Some(value)) => deviate(
            format!("an error response has id {value}, not the request's (nor null)"),
            rules::RESPONSE_ID,
            Level::Must,
        ),
    }
    if let Some(error) = error {
        let code_ok = error.get("code").is_some_and(|c| c.is_i64() || c.is_u64());
        let message_ok = error.get("message").is_some_and(Value::is_string);
        if !code_ok || !message_ok {
            deviate(
                format!("an error object is {}", cut(&error.to_string(), 120)),
                rules::ERROR_OBJECT,
                Level::Must,
            );
        }
    }
    let extra: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "jsonrpc" | "id" | "result" | "error"))
        .collect();
    if !extra.is_empty() {
        deviate(
            format!("a response has extra members: {}", extra.join(", ")),
            rules::RESPONSE_MEMBERS,
            Level::Should,
        );
    }
    if modern && let Some(result) = result {
        match result.get("resultType") {
            None => deviate(
                "a 2026-07-28 result has no resultType".to_owned(),
                rules::RESULT_TYPE,
                Level::Must,
            ),
            Some(Value::String(kind)) if RESULT_TYPES.contains(&kind.as_str()) => {}
            Some(other) => deviate(
                format!(
                    "a 2026-07-28 result has resultType {}",
                    cut(&other.to_string(), 60)
                ),
                rules::RESULT_TYPE,
                Level::Must,
            ),
        }
    }
    found
}

/// The deviations of an event-stream body's framing.
pub(crate) fn check_framing(framing: &SseFraming, evidence: &str) -> Vec<Deviation> {
    let mut found = Vec::new();
    if framing.empty_events_without_id > 0 {
        found.push(Deviation::new(
            "an event with empty data but no id: a priming event without an id to resume from"
                .to_owned(),
            rules::PRIMING,
            Level::Should,
            evidence.to_owned(),
        ));
    }
    found
}

/// The era verdict of the `server/discover` probe, as the TypeScript SDK's classifier gives it
/// (the research brief's B.3): a DiscoverResult naming 2026-07-28 is modern, a -32022 error
/// whose `supported` names it is modern (the probe would resend), every other JSON-RPC error
/// and every non-JSON-RPC 4xx is a 2025-era server; 401/403 and 5xx are no era evidence.
pub(crate) fn classify_discover(status: StatusCode, response: Option<&Value>) -> ModernEra {
    let mut era = ModernEra::default();
    let code = status.as_u16();
    if matches!(code, 401 | 403) {
        era.verdict = format!("server/discover answered {code}: credentials needed first");
        return era;
    }
    if matches!(code, 429 | 503) {
        era.verdict = format!(
            "server/discover answered {code} until the probe gave up: the server is overloaded, \
             no era evidence (see Overload)"
        );
        return era;
    }
    if status.is_server_error() {
        era.verdict = format!("server/discover answered {code}: a server error, no era evidence");
        return era;
    }
    let Some(response) = response else {
        era.speaks_2026_07_28 = Some(false);
        era.verdict = format!("server/discover answered {code} without a JSON-RPC response");
        return era;
    };
    if let Some(result) = response.get("result") {
        let versions = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .filter(|v| v.iter().all(Value::is_string));
        let capabilities = result.get("capabilities").and_then(Value::as_object);
        match (versions, capabilities) {
            (Some(versions), Some(capabilities)) => {
                era.supported_versions = strings(versions);
                era.capabilities = capabilities.keys().cloned().collect();
                let speaks = era.supported_versions.iter().any(|v| v == MODERN);
                era.speaks_2026_07_28 = Some(speaks);
                era.verdict = if speaks {
                    format!(
                        "server/discover lists {}",
                        era.supported_versions.join(", ")
                    )
                } else {
                    format!(
                        "server/discover lists only {}, none of which this client speaks",
                        era.supported_versions.join(", ")
                    )
                };
            }
            _ => {
                era.speaks_2026_07_28 = Some(false);
                era.verdict = format!(
                    "server/discover answered {code} with a result that is not a DiscoverResult: {}",
                    cut(&result.to_string(), 80)
                );
            }
        }
        return era;
    }
    let error = response.get("error");
    let error_code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
    let supported = error
        .and_then(|e| e.get("data"))
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|v| strings(v));
    if error_code == Some(-32022)
        && let Some(supported) = supported.filter(|s| !s.is_empty())
    {
        era.speaks_2026_07_28 = Some(supported.iter().any(|v| v == MODERN));
        era.verdict = format!(
            "server/discover answered {code} -32022 (unsupported version), supported: {}",
            supported.join(", ")
        );
        era.supported_versions = supported;
        return era;
    }
    era.speaks_2026_07_28 = Some(false);
    era.verdict = format!(
        "server/discover answered {code} {}",
        answer_line(Some(response))
    );
    era
}

/// The `WWW-Authenticate` challenges of a refusal, one per header field, each passed through
/// `redact` before it is taken apart.
pub(crate) fn challenges(headers: &HeaderMap, redact: &dyn Fn(&str) -> String) -> Vec<Challenge> {
    headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .take(8)
        .map(|value| {
            let text = redact(&String::from_utf8_lossy(value.as_bytes()));
            let param = |key| crate::exchange::auth_param(&text, key);
            Challenge {
                scheme: text
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(40)
                    .collect(),
                resource_metadata: param("resource_metadata"),
                scope: param("scope"),
                error: param("error"),
                error_description: param("error_description"),
                realm: param("realm"),
            }
        })
        .collect()
}

/// The shape of a session id, never its value.
pub(crate) fn session_id_seen(id: &[u8]) -> SessionIdSeen {
    let text = String::from_utf8_lossy(id);
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let groups: Vec<&str> = text.split('-').collect();
    let uuid = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && hex(g));
    SessionIdSeen {
        length: id.len(),
        shape: if uuid {
            "uuid"
        } else if hex(&text) {
            "hex"
        } else {
            "other"
        }
        .to_owned(),
        visible_ascii: !id.is_empty() && id.iter().all(|b| (0x21..=0x7E).contains(b)),
    }
}

/// Whether a tool name follows the 2025-11-25 rule: 1 to 128 of `A-Z a-z 0-9 _ - .`.
pub(crate) fn name_follows_rule(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Checks one tool: its name, both schemas, its `x-mcp-header` annotations.
pub(crate) fn check_tool(tool: &Tool) -> (ToolCheck, Vec<Deviation>) {
    let mut check = ToolCheck {
        name: tool.name.clone(),
        declares_output_schema: tool.output_schema.is_some(),
        ..ToolCheck::default()
    };
    let mut found = Vec::new();
    let evidence = format!("tools/list: tool {:?}", cut(&tool.name, 80));
    let mut problem = |check: &mut ToolCheck, what: String, rule: &str, level: Level| {
        check.problems.push(what.clone());
        found.push(Deviation::new(
            format!("tool {:?}: {what}", cut(&tool.name, 80)),
            rule,
            level,
            evidence.clone(),
        ));
    };
    if !name_follows_rule(&tool.name) {
        problem(
            &mut check,
            "the name breaks the tool name rule".to_owned(),
            rules::TOOL_NAME,
            Level::Should,
        );
    }
    check.input_schema =
        schema_problem(&tool.input_schema).map_or_else(|| "ok".to_owned(), |why| why.clone());
    if check.input_schema != "ok" {
        let what = format!("inputSchema {}", check.input_schema);
        problem(&mut check, what, rules::INPUT_SCHEMA, Level::Must);
    }
    if let Some(output) = &tool.output_schema {
        let verdict = schema_problem(output);
        check.output_schema = Some(verdict.clone().unwrap_or_else(|| "ok".to_owned()));
        if let Some(why) = verdict {
            problem(
                &mut check,
                format!("outputSchema {why}"),
                rules::OUTPUT_SCHEMA,
                Level::Must,
            );
        }
    }
    match param_headers(&tool.input_schema) {
        Ok(headers) => {
            check.param_headers = headers.into_iter().map(|h| h.header).collect();
        }
        Err(error) => problem(
            &mut check,
            format!("invalid x-mcp-header: {error}"),
            rules::X_MCP_HEADER,
            Level::Must,
        ),
    }
    (check, found)
}

/// Checks the names across a listing: each name once.
pub(crate) fn check_unique_names(tools: &[Tool]) -> Vec<Deviation> {
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    for tool in tools {
        if !seen.insert(tool.name.as_str()) {
            found.push(Deviation::new(
                format!("tool name {:?} is listed twice", cut(&tool.name, 80)),
                rules::TOOL_NAME,
                Level::Should,
                "tools/list".to_owned(),
            ));
        }
    }
    found
}

/// Why a tool schema is unusable: not an object schema, or it does not compile.
fn schema_problem(schema: &Value) -> Option<String> {
    let Some(object) = schema.as_object() else {
        return Some(format!(
            "is not an object: {}",
            cut(&schema.to_string(), 60)
        ));
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Some(format!(
            "has type {}, not \"object\"",
            object
                .get("type")
                .map_or_else(|| "missing".to_owned(), Value::to_string)
        ));
    }
    compile(schema)
        .err()
        .map(|e| format!("does not compile: {e}"))
}

fn strings(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .filter_map(Value::as_str)
        .take(32)
        .map(|s| cut(s, 64))
        .collect()
}

/// `text` cut to `max` characters, control characters shown as spaces.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}
