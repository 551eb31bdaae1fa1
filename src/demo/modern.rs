//! The demo server at protocol 2026-07-28 (`docs/specification/2026-07-28/`), over HTTP and
//! stdio alike: the per-request `_meta` envelope and its refusals, `server/discover`, results
//! stamped with `resultType` and `serverInfo`, and over Streamable HTTP the headers a request
//! mirrors from its body (`basic/transports/streamable-http.mdx`, "Request Metadata" and
//! "Server Validation"). Stateless: every request is answered from what it carries.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use super::http::Request as HttpRequest;
use super::tools::{self, StateKey};
use super::{INSTRUCTIONS, Output, call_outputs, tools_page};
use crate::jsonrpc::{self, ErrorObject, Id, Message};
use crate::mcp::error_code;
use crate::mcp::headers::{self, ParamHeader};
use crate::mcp::methods;
use crate::mcp::modern::{CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY};

/// The stateless revisions the server speaks.
pub(super) const SUPPORTED: [&str; 1] = ["2026-07-28"];

/// How long a client may reuse the answers to `server/discover` and `tools/list`: the tools
/// never change while a demo server runs.
const LIST_TTL_MS: u64 = 60_000;

/// Whether a request's params carry the envelope's protocol version, which makes a dual-era
/// server serve it at 2026-07-28 (`basic/versioning.mdx`: "A request carrying modern
/// per-request `_meta` is served statelessly according to this revision").
pub(super) fn carries_envelope(params: Option<&serde_json::value::RawValue>) -> bool {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta", default)]
        meta: Option<Map<String, Value>>,
    }
    params
        .and_then(|raw| serde_json::from_str::<Params>(raw.get()).ok())
        .and_then(|params| params.meta)
        .is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_KEY))
}

/// The server-wide facts a request is answered with.
pub(super) struct Server<'a> {
    /// Signs and checks `requestState`s.
    pub state_key: &'a StateKey,
    /// The server's clock, in milliseconds since it started.
    pub now_ms: u64,
    /// Whether a bearer token guards the server: answers are then cached per credential.
    pub private: bool,
}

/// How a 2026-07-28 request is answered.
pub(super) enum Reply {
    /// One message.
    Message(Message<'static>),
    /// A tool call's progress and result, in order, with their delays.
    Call(VecDeque<Output>),
}

/// A reply and its HTTP status (stdio has no use for the status).
pub(super) struct Answer {
    pub status: u16,
    pub reply: Reply,
}

impl Answer {
    fn ok(id: Id, result: Value) -> Answer {
        Answer {
            status: 200,
            reply: Reply::Message(super::ok(id, &stamp(result))),
        }
    }

    fn error(status: u16, id: Option<Id>, error: ErrorObject<'static>) -> Answer {
        Answer {
            status,
            reply: Reply::Message(Message::response_error(id, error)),
        }
    }
}

/// An error object with `data`.
fn error_with(code: i64, message: impl Into<String>, data: &Value) -> ErrorObject<'static> {
    let error = ErrorObject::new(code, message.into());
    match serde_json::value::to_raw_value(data) {
        Ok(data) => error.with_data(data),
        Err(_) => error,
    }
}

/// -32022 naming what the server speaks (`basic/versioning.mdx`); `requested` is left out
/// when the request named no revision.
pub(super) fn unsupported_version(requested: Option<&str>) -> ErrorObject<'static> {
    match requested {
        Some(requested) => error_with(
            error_code::UNSUPPORTED_PROTOCOL_VERSION,
            format!("Unsupported protocol version: {requested}"),
            &json!({"supported": SUPPORTED, "requested": requested}),
        ),
        None => error_with(
            error_code::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version: the request did not name a protocol version",
            &json!({"supported": SUPPORTED}),
        ),
    }
}

/// The revision an `initialize` request offers, if it is one and names one: what a server
/// speaking 2026-07-28 alone names as `requested` when it refuses it.
pub(super) fn offered_version(request: &jsonrpc::Request<'_>) -> Option<String> {
    if request.method != methods::INITIALIZE {
        return None;
    }
    let params = super::params_object(request).ok()?;
    params.get("protocolVersion")?.as_str().map(str::to_owned)
}

/// A result with what every 2026-07-28 result carries: `resultType` (complete unless it says
/// otherwise) and `_meta["io.modelcontextprotocol/serverInfo"]`.
pub(super) fn stamp(mut result: Value) -> Value {
    if let Value::Object(members) = &mut result {
        members
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        let meta = members
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO_KEY.to_owned(), super::server_info());
        }
    }
    result
}

/// The `DiscoverResult`.
fn discover_result(private: bool) -> Value {
    json!({
        "supportedVersions": SUPPORTED,
        "capabilities": {"tools": {"listChanged": false}},
        "instructions": INSTRUCTIONS,
        "ttlMs": LIST_TTL_MS,
        "cacheScope": if private { "private" } else { "public" },
    })
}

/// Answers one request that carries the envelope (or, over HTTP, names a 2026 revision in
/// `MCP-Protocol-Version`). `http` holds the HTTP request for the header checks; `None` over
/// stdio, which has no header layer.
pub(super) fn answer(
    request: &jsonrpc::Request<'_>,
    http: Option<&HttpRequest>,
    server: &Server<'_>,
) -> Answer {
    let id = request.id.clone();
    let params = match super::params_object(request) {
        Ok(params) => params,
        Err(why) => {
            return Answer::error(
                400,
                Some(id),
                ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("Invalid params: {why}")),
            );
        }
    };
    let version = match envelope_version(&params) {
        Ok(version) => version,
        Err(error) => return Answer::error(400, Some(id), error),
    };
    if let Some(http) = http
        && let Err(error) = check_standard_headers(http, &request.method, &version)
    {
        return Answer::error(400, Some(id), error);
    }
    if !SUPPORTED.contains(&version.as_str()) {
        return Answer::error(400, Some(id), unsupported_version(Some(&version)));
    }
    match request.method.as_ref() {
        methods::SERVER_DISCOVER => Answer::ok(id, discover_result(server.private)),
        methods::TOOLS_LIST => match tools_page(&params) {
            Ok(mut page) => {
                page["ttlMs"] = json!(LIST_TTL_MS);
                page["cacheScope"] = json!(if server.private { "private" } else { "public" });
                Answer::ok(id, page)
            }
            Err(why) => Answer::error(
                200,
                Some(id),
                ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("Invalid params: {why}")),
            ),
        },
        methods::TOOLS_CALL => tools_call(id, &params, http, server),
        // `ping`, `initialize`, `logging/setLevel`, `subscriptions/listen`, ...: none is
        // served at this revision. Over HTTP the 404 carries the JSON-RPC error, which tells
        // it from a legacy server's bare 404 (streamable-http.mdx, "Protocol Version Header").
        method => {
            let error = error_with(
                jsonrpc::METHOD_NOT_FOUND,
                "Method not found",
                &json!(method),
            );
            Answer::error(404, Some(id), error)
        }
    }
}

/// The envelope's protocol version, or the -32602 for an envelope that is missing keys or has
/// the wrong types.
fn envelope_version(params: &Map<String, Value>) -> Result<String, ErrorObject<'static>> {
    let invalid = |why: String, missing: &[&str]| {
        error_with(
            jsonrpc::INVALID_PARAMS,
            format!("Invalid params: {why}"),
            &json!({"envelope": {"missing": missing}}),
        )
    };
    let meta = match params.get("_meta") {
        Some(Value::Object(meta)) => meta,
        Some(_) => return Err(invalid("_meta must be an object".to_owned(), &[])),
        None => {
            return Err(invalid(
                "the request is missing the required per-request envelope key(s): _meta".to_owned(),
                &["_meta"],
            ));
        }
    };
    let missing: Vec<&str> = [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY]
        .into_iter()
        .filter(|key| !meta.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        return Err(invalid(
            format!(
                "the request is missing the required per-request envelope key(s): {}",
                missing.join(", ")
            ),
            &missing,
        ));
    }
    if !meta
        .get(CLIENT_CAPABILITIES_KEY)
        .is_some_and(Value::is_object)
    {
        return Err(invalid(
            format!("_meta[\"{CLIENT_CAPABILITIES_KEY}\"] must be an object"),
            &[],
        ));
    }
    match meta.get(PROTOCOL_VERSION_KEY) {
        Some(Value::String(version)) => Ok(version.clone()),
        _ => Err(invalid(
            format!("_meta[\"{PROTOCOL_VERSION_KEY}\"] must be a string"),
            &[],
        )),
    }
}

/// -32020: a header and the body disagree, or a header is missing or unusable.
fn mismatch(
    message: String,
    header: &str,
    received: Option<&str>,
    body: &Value,
) -> ErrorObject<'static> {
    error_with(
        error_code::HEADER_MISMATCH,
        format!("Header mismatch: {message}"),
        &json!({"mismatch": {"header": header, "received": received, "body": body}}),
    )
}

/// The one value of header `name` (lowercase; `shown` is how messages spell it), `None` when
/// absent. Sent twice, or holding bytes a field value may not (RFC 9110 §5.5: visible ASCII,
/// space and tab), it is refused: a proxy and this server could read different values.
fn single_header<'a>(
    http: &'a HttpRequest,
    name: &str,
    shown: &str,
    body: &Value,
) -> Result<Option<&'a str>, ErrorObject<'static>> {
    let mut values = http.raw_headers(name);
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(mismatch(
            format!("the {shown} header is sent more than once"),
            shown,
            None,
            body,
        ));
    }
    let text = std::str::from_utf8(value)
        .ok()
        .filter(|text| {
            text.bytes()
                .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
        })
        .ok_or_else(|| {
            mismatch(
                format!("the {shown} header holds characters a header value may not"),
                shown,
                None,
                body,
            )
        })?;
    Ok(Some(text.trim_matches([' ', '\t'])))
}

/// `MCP-Protocol-Version` must name the envelope's revision and `Mcp-Method` the body's
/// method, byte for byte.
fn check_standard_headers(
    http: &HttpRequest,
    method: &str,
    version: &str,
) -> Result<(), ErrorObject<'static>> {
    let body = json!(version);
    match single_header(http, "mcp-protocol-version", "MCP-Protocol-Version", &body)? {
        None => {
            return Err(mismatch(
                format!(
                    "the body's _meta names protocol version {version} but the \
                     MCP-Protocol-Version header is absent"
                ),
                "MCP-Protocol-Version",
                None,
                &body,
            ));
        }
        Some(header) if header != version => {
            return Err(mismatch(
                format!(
                    "the MCP-Protocol-Version header names {header} but the body's _meta \
                     names {version}"
                ),
                "MCP-Protocol-Version",
                Some(header),
                &body,
            ));
        }
        Some(_) => {}
    }
    let body = json!(method);
    match single_header(http, "mcp-method", "Mcp-Method", &body)? {
        None => Err(mismatch(
            format!("the body names method {method} but the Mcp-Method header is absent"),
            "Mcp-Method",
            None,
            &body,
        )),
        Some(header) if header != method => Err(mismatch(
            format!("the Mcp-Method header names {header} but the body names method {method}"),
            "Mcp-Method",
            Some(header),
            &body,
        )),
        Some(_) => Ok(()),
    }
}

/// A decoded `Mcp-Name` / `Mcp-Param-*` value, or the -32020 for a malformed `=?base64?…?=`.
fn decoded(header: &str, shown: &str, body: &Value) -> Result<String, ErrorObject<'static>> {
    headers::decode_header_value(header).ok_or_else(|| {
        mismatch(
            format!("the {shown} header is not valid =?base64?...?= text"),
            shown,
            Some(header),
            body,
        )
    })
}

/// Whether a decoded header value stands for the argument `body`: the same string, the same
/// integer compared as a number (`42.0` and `42` agree, as the spec advises), the same boolean.
fn header_matches(decoded: &str, body: &Value) -> bool {
    match body {
        Value::String(text) => decoded == text,
        Value::Bool(flag) => decoded == if *flag { "true" } else { "false" },
        Value::Number(number) => {
            let (Ok(header), Some(body)) = (decoded.parse::<f64>(), number.as_f64()) else {
                return false;
            };
            header.fract() == 0.0 && header == body
        }
        _ => false,
    }
}

/// The argument at a declaration's property path; `None` when absent or `null`.
fn argument_at<'a>(arguments: &'a Map<String, Value>, param: &ParamHeader) -> Option<&'a Value> {
    let (last, parents) = param.path.split_last()?;
    let mut object = arguments;
    for name in parents {
        object = object.get(name)?.as_object()?;
    }
    object.get(last).filter(|value| !value.is_null())
}

/// `Mcp-Name` must name the tool, and each `x-mcp-header` argument of the tool must come with
/// its `Mcp-Param-*` header holding the same value (and none without the argument). Returns
/// the raw `Mcp-Param-Region`, which `region_echo` reports.
fn check_call_headers<'a>(
    http: &'a HttpRequest,
    name: &str,
    arguments: &Map<String, Value>,
) -> Result<Option<&'a str>, ErrorObject<'static>> {
    let body = json!(name);
    let header = single_header(http, "mcp-name", "Mcp-Name", &body)?.ok_or_else(|| {
        mismatch(
            format!("the body calls tool {name} but the Mcp-Name header is absent"),
            "Mcp-Name",
            None,
            &body,
        )
    })?;
    if decoded(header, "Mcp-Name", &body)? != name {
        return Err(mismatch(
            format!("the Mcp-Name header names {header} but the body calls tool {name}"),
            "Mcp-Name",
            Some(header),
            &body,
        ));
    }
    let declared = tools::definitions()
        .iter()
        .find(|tool| tool["name"] == name)
        .and_then(|tool| headers::param_headers(&tool["inputSchema"]).ok())
        .unwrap_or_default();
    let mut region = None;
    for param in &declared {
        let shown = param.header.as_str();
        let lower = shown.to_ascii_lowercase();
        let argument = argument_at(arguments, param);
        let body = argument.cloned().unwrap_or(Value::Null);
        let at = param.path.join(".");
        let header = single_header(http, &lower, shown, &body)?;
        match (header, argument) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(
                    format!("the body has argument {at} but the {shown} header is absent"),
                    shown,
                    None,
                    &body,
                ));
            }
            (Some(header), None) => {
                return Err(mismatch(
                    format!("the {shown} header is sent but the body has no argument {at}"),
                    shown,
                    Some(header),
                    &body,
                ));
            }
            (Some(header), Some(argument)) => {
                if !header_matches(&decoded(header, shown, &body)?, argument) {
                    return Err(mismatch(
                        format!("the {shown} header does not match the body's argument {at}"),
                        shown,
                        Some(header),
                        &body,
                    ));
                }
            }
        }
        if lower == "mcp-param-region" {
            region = header;
        }
    }
    Ok(region)
}

fn tools_call(
    id: Id,
    params: &Map<String, Value>,
    http: Option<&HttpRequest>,
    server: &Server<'_>,
) -> Answer {
    let mut region = None;
    // Without a string name the call is refused by `call_outputs`, with -32602.
    if let (Some(http), Some(name)) = (http, params.get("name").and_then(Value::as_str)) {
        let empty = Map::new();
        let arguments = params
            .get("arguments")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        match check_call_headers(http, name, arguments) {
            Ok(header) => region = header,
            Err(error) => return Answer::error(400, Some(id), error),
        }
    }
    let context = tools::Context {
        modern: true,
        region_header: region,
        params,
        state_key: server.state_key,
        now_ms: server.now_ms,
    };
    match call_outputs(&id, params, &context) {
        Ok(outputs) => Answer {
            status: 200,
            reply: Reply::Call(outputs),
        },
        Err((status, refusal)) => Answer {
            status,
            reply: Reply::Message(refusal),
        },
    }
}
