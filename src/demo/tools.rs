//! The demo server's tools: their definitions (with JSON Schemas), argument checks, and what a
//! call does, as a plan of delays and progress reports followed by a result. The plan is pure
//! data (the time and the keys come in as inputs); the connection driver sleeps and writes.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::mcp::modern::CLIENT_CAPABILITIES_KEY;

/// How many tools one `tools/list` page holds: small, so clients exercise pagination.
pub(super) const PAGE_SIZE: usize = 2;

/// One step of a call before its result.
#[derive(Debug, PartialEq)]
pub(super) enum Step {
    /// Wait this long.
    Sleep(Duration),
    /// Report progress (sent only when the request carried a progress token).
    Progress {
        /// Steps done.
        progress: u64,
        /// Steps in all.
        total: u64,
        /// "step i of N".
        message: String,
    },
}

/// What a call does: its steps, then its `CallToolResult`.
#[derive(Debug)]
pub(super) struct Plan {
    /// Delays and progress reports, in order.
    pub steps: Vec<Step>,
    /// The `CallToolResult` sent after the steps.
    pub result: Value,
}

impl Plan {
    fn done(result: Value) -> Self {
        Plan {
            steps: Vec::new(),
            result,
        }
    }
}

/// What a call knows besides its tool's name and arguments.
pub(super) struct Context<'a> {
    /// Whether the request is served at 2026-07-28 (else by the 2025 rules, which have no
    /// `input_required` results and no mirrored headers).
    pub modern: bool,
    /// The `Mcp-Param-Region` header as it arrived, before decoding (HTTP at 2026-07-28; the
    /// server has already checked that it matches the argument).
    pub region_header: Option<&'a str>,
    /// The request's params: `inputResponses`, `requestState`, and the capabilities declared
    /// in `_meta`.
    pub params: &'a Map<String, Value>,
    /// Signs and checks the `requestState` of `confirm_delete`.
    pub state_key: &'a StateKey,
    /// The server's clock: milliseconds since it started (how old a `requestState` is).
    pub now_ms: u64,
}

/// Why a call is answered with a JSON-RPC error rather than a result.
#[derive(Debug, PartialEq)]
pub(super) enum Refusal {
    /// -32021: the call needs these client capabilities (`requiredCapabilities`), which the
    /// request did not declare; the server may not ask for what a client cannot give.
    MissingCapability(Value),
    /// -32602: the params do not fit (a `requestState` that fails verification, an answer
    /// that is not one).
    InvalidParams(String),
}

/// A 2×2 RGB PNG (red, green / blue, white), its image data a zlib stream holding one stored
/// (uncompressed) deflate block, so a test can check every byte without an inflater.
pub(super) const TINY_PNG: [u8; 82] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, // signature
    0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, // IHDR, 13 bytes
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, // width 2, height 2
    0x08, 0x02, 0x00, 0x00, 0x00, // depth 8, RGB, deflate, filter 0, no interlace
    0xfd, 0xd4, 0x9a, 0x73, // CRC
    0x00, 0x00, 0x00, 0x19, 0x49, 0x44, 0x41, 0x54, // IDAT, 25 bytes
    0x78, 0x01, // zlib header
    0x01, 0x0e, 0x00, 0xf1, 0xff, // final stored block, 14 bytes
    0x00, 0xff, 0x00, 0x00, 0x00, 0xff, 0x00, // filter none, red, green
    0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, // filter none, blue, white
    0x1f, 0xee, 0x05, 0xfb, // Adler-32
    0xde, 0xdd, 0xec, 0x2b, // CRC
    0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, // IEND
    0xae, 0x42, 0x60, 0x82, // CRC
];

/// Standard base64 with padding (RFC 4648 §4).
pub(super) fn base64(bytes: &[u8]) -> String {
    crate::base64::encode(bytes, crate::base64::Flavor::Standard)
}

/// The opaque cursor of the `tools/list` page starting at `offset`.
pub(super) fn cursor_for(offset: usize) -> String {
    base64(format!("mcpwire-demo/tools?offset={offset}").as_bytes())
}

/// The offset a cursor stands for, if this server issued it.
pub(super) fn offset_of(cursor: &str) -> Option<usize> {
    (PAGE_SIZE..definitions().len())
        .step_by(PAGE_SIZE)
        .find(|offset| cursor_for(*offset) == cursor)
}

/// Every tool's definition, in listing order.
pub(super) fn definitions() -> &'static [Value] {
    static DEFINITIONS: OnceLock<Vec<Value>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
        vec![
            json!({
                "name": "progress_report",
                "title": "Progress report",
                "description": "Counts to `steps`, waiting `delay_ms` before each step and reporting \
                    progress \"step i of N\" when the request carries a progressToken, then \
                    returns \"done after N steps\".",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "steps": {
                            "type": "integer", "minimum": 1, "maximum": 20, "default": 5,
                            "description": "How many steps to count."
                        },
                        "delay_ms": {
                            "type": "integer", "minimum": 0, "maximum": 1000, "default": 100,
                            "description": "Milliseconds to wait before each step."
                        }
                    },
                    "additionalProperties": false
                },
                "annotations": read_only,
            }),
            json!({
                "name": "tiny_image",
                "title": "Tiny image",
                "description": "Returns a 2x2 PNG (red, green, blue, white) as an image content block.",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
                "annotations": read_only,
            }),
            json!({
                "name": "weather",
                "title": "Weather",
                "description": "A made-up weather report for a city (the same city always gets the \
                    same report), as structured content matching the output schema.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "minLength": 1, "description": "The city's name."}
                    },
                    "required": ["city"],
                    "additionalProperties": false
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "The city, as given."},
                        "temperature_c": {"type": "number", "description": "Temperature in degrees Celsius."},
                        "conditions": {"type": "string", "description": "Sky and precipitation."},
                        "humidity": {
                            "type": "integer", "minimum": 0, "maximum": 100,
                            "description": "Relative humidity in percent."
                        }
                    },
                    "required": ["city", "temperature_c", "conditions", "humidity"],
                    "additionalProperties": false
                },
                "annotations": read_only,
            }),
            json!({
                "name": "echo",
                "title": "Echo",
                "description": "Returns the message as \"Echo: <message>\".",
                "inputSchema": {
                    "type": "object",
                    "properties": {"message": {"type": "string", "description": "Text to echo."}},
                    "required": ["message"],
                    "additionalProperties": false
                },
                "annotations": read_only,
            }),
            json!({
                "name": "fail",
                "title": "Fail",
                "description": "Always fails: returns an error result (isError: true) with the message.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"message": {"type": "string", "description": "The error text."}},
                    "required": ["message"],
                    "additionalProperties": false
                },
                "annotations": read_only,
            }),
            json!({
                "name": "progress_burst",
                "title": "Progress burst",
                "description": "Reports progress \"step i of N\" `steps` times back to back, with no \
                    delay, when the request carries a progressToken, then returns \"done after N \
                    steps\". For benchmarks of progress handling.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "steps": {
                            "type": "integer", "minimum": 1, "maximum": MAX_BURST_STEPS, "default": 1000,
                            "description": "How many progress notifications to send."
                        }
                    },
                    "additionalProperties": false
                },
                "annotations": read_only,
            }),
            json!({
                "name": "big_text",
                "title": "Big text",
                "description": "Returns one text block of exactly `bytes` bytes: lines of 99 ASCII \
                    letters, each ended by a newline. For benchmarks of large results.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "bytes": {
                            "type": "integer", "minimum": 0, "maximum": MAX_BIG_TEXT_BYTES, "default": 1024,
                            "description": "The text's length in bytes."
                        }
                    },
                    "additionalProperties": false
                },
                "annotations": read_only,
            }),
            json!({
                "name": "region_echo",
                "title": "Region echo",
                "description": "Returns the region and the Mcp-Param-Region header the request \
                    carried (the region argument is mirrored into that header at protocol \
                    2026-07-28 over HTTP; null over stdio and at 2025).",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "region": {
                            "type": "string", "x-mcp-header": "Region",
                            "description": "A region name, any text."
                        }
                    },
                    "required": ["region"],
                    "additionalProperties": false
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "description": "The region, as given."},
                        "header": {
                            "type": ["string", "null"],
                            "description": "Mcp-Param-Region as received, before decoding."
                        }
                    },
                    "required": ["region", "header"],
                    "additionalProperties": false
                },
                "annotations": read_only,
            }),
            json!({
                "name": "confirm_delete",
                "title": "Confirm delete",
                "description": "Asks the user to confirm deleting `item` (an elicitation in an \
                    input_required result, protocol 2026-07-28 only), then reports whether it \
                    was deleted. Nothing is stored, so nothing is really removed.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "item": {"type": "string", "minLength": 1, "description": "What to delete."}
                    },
                    "required": ["item"],
                    "additionalProperties": false
                },
                "annotations": {
                    "readOnlyHint": false, "destructiveHint": true,
                    "idempotentHint": true, "openWorldHint": false
                },
            }),
        ]
    })
}

/// A `CallToolResult` with one text block.
fn text_result(text: &str, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// Plans a call of tool `name`. Unknown tools and invalid arguments give `isError` results,
/// as the official SDKs do (spec `server/tools.mdx`, "Error Handling": input validation errors
/// are tool execution errors, which the model can correct).
pub(super) fn call(
    name: &str,
    arguments: &Map<String, Value>,
    context: &Context<'_>,
) -> Result<Plan, Refusal> {
    let planned = match name {
        "progress_report" => progress_report(arguments),
        "tiny_image" => only(arguments, &[]).map(|()| {
            Plan::done(json!({
                "content": [{"type": "image", "data": base64(&TINY_PNG), "mimeType": "image/png"}],
                "isError": false,
            }))
        }),
        "weather" => only(arguments, &["city"])
            .and_then(|()| string_arg(arguments, "city"))
            .and_then(|city| {
                if city.is_empty() {
                    Err("city must not be empty".to_owned())
                } else {
                    Ok(weather_result(city))
                }
            }),
        "echo" => only(arguments, &["message"])
            .and_then(|()| string_arg(arguments, "message"))
            .map(|message| Plan::done(text_result(&format!("Echo: {message}"), false))),
        "progress_burst" => progress_burst(arguments),
        "big_text" => only(arguments, &["bytes"])
            .and_then(|()| int_arg(arguments, "bytes", 0, MAX_BIG_TEXT_BYTES, 1024))
            .map(|bytes| Plan::done(text_result(&big_text(bytes as usize), false))),
        "fail" => only(arguments, &["message"])
            .and_then(|()| string_arg(arguments, "message"))
            .map(|message| Plan::done(text_result(message, true))),
        "region_echo" => only(arguments, &["region"])
            .and_then(|()| string_arg(arguments, "region"))
            .map(|region| region_echo(region, context.region_header)),
        "confirm_delete" => match only(arguments, &["item"])
            .and_then(|()| string_arg(arguments, "item"))
            .and_then(|item| {
                if item.is_empty() {
                    Err("item must not be empty".to_owned())
                } else {
                    Ok(item)
                }
            }) {
            Ok(item) => return confirm_delete(item, context),
            Err(why) => Err(why),
        },
        _ => {
            return Ok(Plan::done(text_result(
                &format!("Unknown tool: {name}"),
                true,
            )));
        }
    };
    Ok(planned.unwrap_or_else(|why| {
        Plan::done(text_result(
            &format!("Invalid arguments for tool {name}: {why}"),
            true,
        ))
    }))
}

fn region_echo(region: &str, header: Option<&str>) -> Plan {
    let shown = header.unwrap_or("(not sent)");
    Plan::done(json!({
        "content": [{"type": "text", "text": format!("region {region:?}; Mcp-Param-Region: {shown}")}],
        "structuredContent": {"region": region, "header": header},
        "isError": false,
    }))
}

/// How long a `requestState` of `confirm_delete` stays valid.
const STATE_TTL_MS: u64 = 10 * 60 * 1000;

/// `confirm_delete`: at 2026-07-28 the first call answers `input_required` with an
/// elicitation and a signed `requestState`; the retry that echoes the state with the user's
/// answer completes (`basic/patterns/mrtr.mdx`). A retry without an answer, or without the
/// state, is asked again, as the spec advises for missing input.
fn confirm_delete(item: &str, context: &Context<'_>) -> Result<Plan, Refusal> {
    if !context.modern {
        return Ok(Plan::done(text_result(
            "confirm_delete asks the user through an input_required result, which needs \
             protocol 2026-07-28; this request was served at 2025",
            true,
        )));
    }
    let params = context.params;
    let (Some(responses), Some(state)) = (params.get("inputResponses"), params.get("requestState"))
    else {
        return ask_to_confirm(item, context);
    };
    let Value::String(state) = state else {
        return Err(Refusal::InvalidParams(
            "requestState must be a string".to_owned(),
        ));
    };
    context
        .state_key
        .verify(state, item, context.now_ms)
        .map_err(|why| {
            Refusal::InvalidParams(format!("requestState failed verification: {why}"))
        })?;
    let Some(answer) = responses.as_object() else {
        return Err(Refusal::InvalidParams(
            "inputResponses must be an object".to_owned(),
        ));
    };
    let Some(answer) = answer.get("confirm") else {
        return ask_to_confirm(item, context);
    };
    let action = answer.get("action").and_then(Value::as_str);
    let confirmed = answer
        .get("content")
        .and_then(|content| content.get("confirm"))
        .and_then(Value::as_bool);
    let text = match action {
        // The form's one field defaults to true: an accepted form that leaves it out confirms.
        Some("accept") if confirmed != Some(false) => format!("Deleted {item}"),
        Some("accept") => format!("Kept {item}: the form was accepted without confirming"),
        Some("decline") => format!("Kept {item}: the user declined"),
        Some("cancel") => format!("Kept {item}: the user cancelled"),
        _ => {
            return Err(Refusal::InvalidParams(
                "inputResponses.confirm must be an elicitation result whose action is accept, \
                 decline or cancel"
                    .to_owned(),
            ));
        }
    };
    Ok(Plan::done(text_result(&text, false)))
}

/// The `input_required` result asking the user to confirm, if the request declared form
/// elicitation (the server may not ask a client for what it cannot give: -32021 otherwise).
fn ask_to_confirm(item: &str, context: &Context<'_>) -> Result<Plan, Refusal> {
    if !declares_form_elicitation(context.params) {
        return Err(Refusal::MissingCapability(
            json!({"elicitation": {"form": {}}}),
        ));
    }
    let state = context.state_key.issue(item, context.now_ms);
    Ok(Plan::done(json!({
        "resultType": "input_required",
        "inputRequests": {
            "confirm": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": format!("Delete {item}? Accept to delete it, decline to keep it."),
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "confirm": {
                                "type": "boolean", "title": "Delete", "default": true,
                                "description": format!("Delete {item}.")
                            }
                        }
                    }
                }
            }
        },
        "requestState": state,
    })))
}

/// Whether `_meta`'s client capabilities include form elicitation: `elicitation` with
/// `form`, or with neither mode named (which means form, as in 2025-06-18).
fn declares_form_elicitation(params: &Map<String, Value>) -> bool {
    let elicitation = params
        .get("_meta")
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|capabilities| capabilities.get("elicitation"))
        .and_then(Value::as_object);
    elicitation.is_some_and(|modes| {
        modes.get("form").is_some_and(Value::is_object)
            || (!modes.contains_key("form") && !modes.contains_key("url"))
    })
}

/// The key that signs `requestState`s: a `requestState` comes back through the client, so it
/// is attacker-controlled input, and what it says (which item, since when) must be checked
/// (`basic/patterns/mrtr.mdx`, "Server Requirements"). The MAC is 128 bits of SipHash under
/// std's per-process random keys: enough for a loopback demo, not a production MAC.
pub(super) struct StateKey(RandomState);

impl StateKey {
    pub(super) fn new() -> Self {
        StateKey(RandomState::new())
    }

    fn mac(&self, message: &str) -> String {
        let mut out = String::with_capacity(32);
        for half in 0..2u8 {
            let mut hasher = self.0.build_hasher();
            hasher.write_u8(half);
            hasher.write(message.as_bytes());
            out.push_str(&format!("{:016x}", hasher.finish()));
        }
        out
    }

    /// What the MAC covers: the tool, the item and the time, as one unambiguous JSON text.
    fn signed_part(item: &str, issued_ms: u64) -> String {
        json!(["confirm_delete", item, issued_ms]).to_string()
    }

    /// A state for deleting `item`, issued at `now_ms`: a JSON text (so, inside the result, a
    /// string full of escaped quotes) that only this server can make.
    pub(super) fn issue(&self, item: &str, now_ms: u64) -> String {
        let mac = self.mac(&Self::signed_part(item, now_ms));
        json!({"tool": "confirm_delete", "item": item, "issued_ms": now_ms, "mac": mac}).to_string()
    }

    /// Checks a state that came back: issued by this server, for this item, not expired.
    pub(crate) fn verify(&self, state: &str, item: &str, now_ms: u64) -> Result<(), &'static str> {
        let parsed: Value =
            serde_json::from_str(state).map_err(|_| "not a state of this server")?;
        let (Some(tool), Some(signed_item), Some(issued_ms), Some(mac)) = (
            parsed.get("tool").and_then(Value::as_str),
            parsed.get("item").and_then(Value::as_str),
            parsed.get("issued_ms").and_then(Value::as_u64),
            parsed.get("mac").and_then(Value::as_str),
        ) else {
            return Err("not a state of this server");
        };
        let expected = self.mac(&Self::signed_part(signed_item, issued_ms));
        if tool != "confirm_delete" || !super::constant_time_eq(mac.as_bytes(), expected.as_bytes())
        {
            return Err("the signature does not match");
        }
        if signed_item != item {
            return Err("it was issued for another item");
        }
        if issued_ms > now_ms || now_ms - issued_ms > STATE_TTL_MS {
            return Err("it has expired");
        }
        Ok(())
    }
}

fn progress_report(arguments: &Map<String, Value>) -> Result<Plan, String> {
    only(arguments, &["steps", "delay_ms"])?;
    let steps = int_arg(arguments, "steps", 1, 20, 5)?;
    let delay = Duration::from_millis(int_arg(arguments, "delay_ms", 0, 1000, 100)?);
    let mut plan = Vec::with_capacity(2 * steps as usize);
    for i in 1..=steps {
        if !delay.is_zero() {
            plan.push(Step::Sleep(delay));
        }
        plan.push(Step::Progress {
            progress: i,
            total: steps,
            message: format!("step {i} of {steps}"),
        });
    }
    Ok(Plan {
        steps: plan,
        result: text_result(&format!("done after {steps} steps"), false),
    })
}

/// The most progress notifications one `progress_burst` call sends.
const MAX_BURST_STEPS: u64 = 100_000;

/// The longest `big_text` result, in bytes: 16 MiB, the default limit of an SSE event in
/// mcpwire's client (a result this long plus its envelope is refused there, on purpose).
const MAX_BIG_TEXT_BYTES: u64 = 16 * 1024 * 1024;

fn progress_burst(arguments: &Map<String, Value>) -> Result<Plan, String> {
    only(arguments, &["steps"])?;
    let steps = int_arg(arguments, "steps", 1, MAX_BURST_STEPS, 1000)?;
    let plan = (1..=steps)
        .map(|i| Step::Progress {
            progress: i,
            total: steps,
            message: format!("step {i} of {steps}"),
        })
        .collect();
    Ok(Plan {
        steps: plan,
        result: text_result(&format!("done after {steps} steps"), false),
    })
}

/// `len` bytes of lines of 99 letters (`a` to `z`, cycling) each ended by `\n`; the last line
/// may be cut short.
pub(super) fn big_text(len: usize) -> String {
    // ASCII only, so `len` chars are `len` bytes.
    let line: Vec<char> = (0..99u8)
        .map(|i| char::from(b'a' + i % 26))
        .chain(std::iter::once('\n'))
        .collect();
    line.iter().cycle().take(len).collect()
}

/// The made-up report: FNV-1a of the lowercased name picks every value.
pub(super) fn weather_report(city: &str) -> Value {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in city.to_lowercase().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // -10.0 ..= 35.0 °C in tenths; tenths / 10.0 is the double nearest the decimal value.
    let tenths = (hash % 451) as i64 - 100;
    let pick = (hash >> 20) as usize;
    let conditions = if tenths < 0 {
        ["Snow", "Fog", "Clear"][pick % 3]
    } else {
        ["Sunny", "Partly cloudy", "Cloudy", "Rain", "Windy"][pick % 5]
    };
    json!({
        "city": city,
        "temperature_c": tenths as f64 / 10.0,
        "conditions": conditions,
        "humidity": 20 + (hash >> 40) % 76,
    })
}

/// Structured content, plus the same JSON as a text block for clients that read only text
/// (spec `server/tools.mdx`, "Structured Content").
fn weather_result(city: &str) -> Plan {
    let report = weather_report(city);
    let text = serde_json::to_string_pretty(&report).unwrap_or_else(|_| report.to_string());
    Plan::done(json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": report,
        "isError": false,
    }))
}

/// Refuses members outside `allowed` (the schemas say `additionalProperties: false`).
fn only(arguments: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match arguments.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(unknown) => Err(format!("unexpected argument {unknown:?}")),
        None => Ok(()),
    }
}

/// A required string argument.
fn string_arg<'a>(arguments: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    match arguments.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("{name} must be a string")),
        None => Err(format!("{name} is required")),
    }
}

/// An optional integer argument in `min..=max` (a number with a zero fraction counts, as in
/// JSON Schema 2020-12).
fn int_arg(
    arguments: &Map<String, Value>,
    name: &str,
    min: u64,
    max: u64,
    default: u64,
) -> Result<u64, String> {
    let Some(value) = arguments.get(name) else {
        return Ok(default);
    };
    let out_of_range = || format!("{name} must be an integer from {min} to {max}");
    let number = match value {
        Value::Number(n) => n,
        _ => return Err(out_of_range()),
    };
    let integer = match (number.as_u64(), number.as_f64()) {
        (Some(u), _) => u,
        (None, Some(f)) if f.fract() == 0.0 && f >= min as f64 && f <= max as f64 => f as u64,
        _ => return Err(out_of_range()),
    };
    if (min..=max).contains(&integer) {
        Ok(integer)
    } else {
        Err(out_of_range())
    }
}
