//! Harnesses for the binding layer: `call_result` (a `tools/call` result through the limit,
//! the typed decoding, the result mapping and the failure classification of the call pipeline)
//! and `binding_config` (config loading and validation).

use std::sync::OnceLock;

use serde_json::Value;

use crate::binding::call::{ToolResult, finish_call};
use crate::binding::config::{
    Binding, MAX_NAME_CHARS, MAX_OUTPUT_BYTES_LIMIT, MAX_TIMEOUT_SECONDS, Server, load_config,
};
use crate::binding::schema::{CompiledSchema, compile};
use crate::error::{Error, ErrorKind};
use crate::mcp::{CallToolResult, ContentBlock, ContentOnly};
use crate::session::{Delivery, Failure, FailureKind};

/// The `max_output_bytes` a `call_result` input chooses from (its first byte, low 3 bits).
const OUTPUT_LIMITS: [u64; 8] = [16, 64, 256, 1024, 4096, 16_384, 65_536, 1_048_576];

/// The output schemas a `call_result` input chooses from (first byte, bits 3 and 4; the
/// fourth choice is none).
fn output_schemas() -> &'static [CompiledSchema] {
    static SCHEMAS: OnceLock<Vec<CompiledSchema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        [
            serde_json::json!({"type": "object"}),
            serde_json::json!({
                "type": "object",
                "properties": {
                    "temperature": {"type": "number"},
                    "conditions": {"type": "string", "maxLength": 64},
                    "humidity": {"type": "integer", "minimum": 0, "maximum": 100},
                },
                "required": ["temperature", "conditions"],
            }),
            serde_json::json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        ]
        .iter()
        .filter_map(|schema| compile(schema).ok())
        .collect()
    })
}

/// A binding reads its results as [`ContentOnly`] (`_meta` and unknown members checked, not
/// kept), by the typed reader the exchange runs and by serde_json's (the client's reading of
/// a raw result). Wherever the whole result reads, both must read it too, with the same
/// content, and the pipeline must map it to the same outcome.
fn check_content_only(
    bytes: &[u8],
    whole: &CallToolResult,
    mapped: &ToolResult,
    schema: Option<&CompiledSchema>,
    limit: u64,
) {
    let response = [br#"{"jsonrpc":"2.0","id":1,"result":"#, bytes, b"}"].concat();
    let typed = crate::jsonrpc::decode_response_as::<ContentOnly>(&response)
        .ok()
        .and_then(|response| response.outcome.ok())
        .map(|content| content.0);
    let serde = serde_json::from_slice::<ContentOnly>(bytes)
        .ok()
        .map(|content| content.0);
    // The typed reader may give up (it then leaves the result to serde_json): only what it
    // reads is compared.
    let serde = serde.expect("a result read whole is read for its content");
    for content in typed.iter().chain([&serde]) {
        assert_eq!(content.content, whole.content);
        assert_eq!(content.structured_content, whole.structured_content);
        assert_eq!(content.is_error, whole.is_error);
        assert!(content.meta.is_none() && content.extra.is_empty());
    }
    let again = finish_call("call-1", Ok(serde), schema, limit);
    assert_eq!(&again, mapped, "the content alone maps to the same outcome");
}

/// The failure kinds a call's result can end in, once the result reached the client./// The failure kinds a call's result can end in, once the result reached the client.
const RESULT_FAILURE_KINDS: [&str; 5] = [
    "output_too_large",
    "protocol",
    "unsupported_content",
    "output_schema_mismatch",
    "tool_error",
];

/// The `call_result` fuzz target. The first byte chooses `max_output_bytes` and an output
/// schema; the rest is the `result` of a `tools/call` response, handled as the client and the
/// call pipeline handle it: over the limit it is refused as the transport's byte budget
/// refuses it, otherwise decoded (a malformed result is a protocol failure, as in
/// `Client::call_tool`), then mapped and classified by the pipeline's own `finish_call`.
///
/// Checks: no panic; the outcome is the one SPEC.md's tables give, worked out here from the
/// decoded blocks independently of the mapping (text and image blocks only, structured content
/// valid against the schema, `isError` results kept with `unknown_outcome` false, every
/// other failure `unknown_outcome` true); the content holds the result's blocks in order plus
/// at most one mirror of the structured content; the printed event is one line of JSON equal
/// to [`ToolResult::to_json`], and its size is bounded by the input's; a result read whole is
/// also read as [`ContentOnly`] (what a binding call reads) by both readers, with the same
/// content and the same outcome.
pub(crate) fn fuzz_call_result(data: &[u8]) {
    let Some((&knob, result_bytes)) = data.split_first() else {
        return;
    };
    let limit = OUTPUT_LIMITS[usize::from(knob & 7)];
    let schema = output_schemas().get(usize::from((knob >> 3) & 3));
    let over_limit = result_bytes.len() as u64 > limit;
    let decoded: Option<CallToolResult> = if over_limit {
        None
    } else {
        serde_json::from_slice(result_bytes).ok()
    };
    let outcome = match (&decoded, over_limit) {
        (_, true) => Err(Error::from_failure(crate::exchange::over_budget(limit))),
        (None, false) => Err(Error::from_failure(Failure::new(
            FailureKind::Protocol,
            Delivery::Answered,
            "the tools/call result is malformed",
        ))),
        (Some(result), false) => Ok(result.clone()),
    };
    let result = finish_call("call-1", outcome, schema, limit);
    check_event(&result, result_bytes.len());
    if let Some(whole) = &decoded {
        check_content_only(result_bytes, whole, &result, schema, limit);
    }

    let kind = result.error_kind().map(ErrorKind::as_str);
    if let Some(error_kind) = result.error_kind() {
        assert!(
            RESULT_FAILURE_KINDS.contains(&error_kind.as_str()),
            "unexpected kind {error_kind}"
        );
        assert!(result.is_error(), "a failure must have is_error");
        let unknown = result
            .unknown_outcome()
            .expect("a failure has unknown_outcome");
        assert!(
            error_kind
                .unknown_outcome()
                .is_none_or(|fixed| fixed == unknown),
            "{error_kind} with unknown_outcome {unknown} is in no row of SPEC.md's table"
        );
    }
    let Some(decoded) = decoded else {
        let expected = if over_limit {
            "output_too_large"
        } else {
            "protocol"
        };
        assert_eq!(kind, Some(expected));
        assert_eq!(result.unknown_outcome(), Some(true));
        assert!(result.content().is_empty());
        if over_limit {
            let error = result.error_message();
            let named = format!("max_output_bytes is {limit}");
            assert!(error.is_some_and(|m| m.contains(&named)), "{error:?}");
        }
        return;
    };

    let unsupported = decoded
        .content
        .iter()
        .any(|b| !matches!(b, ContentBlock::Text(_) | ContentBlock::Image(_)));
    let schema_fails = schema.is_some_and(|s| {
        decoded
            .structured_content
            .as_ref()
            .is_none_or(|v| !s.is_valid(v))
    });
    if decoded.is_error() {
        // The tool ran and said it failed: the outcome is known and the content is kept.
        assert_eq!(kind, Some("tool_error"));
        assert_eq!(result.unknown_outcome(), Some(false));
        assert!(
            result
                .error_message()
                .is_some_and(|m| !m.is_empty() && m.chars().count() <= 1000),
            "{result:?}"
        );
    } else if unsupported {
        assert_eq!(kind, Some("unsupported_content"));
        assert_eq!(result.unknown_outcome(), Some(true));
        assert!(result.content().is_empty());
        return;
    } else if schema_fails {
        assert_eq!(kind, Some("output_schema_mismatch"));
        assert_eq!(result.unknown_outcome(), Some(true));
        assert!(result.content().is_empty());
        return;
    } else {
        assert_eq!(kind, None);
        assert!(!result.is_error());
        assert_eq!(result.unknown_outcome(), None);
    }

    // A returned result: its blocks in order, each text or image, then at most one mirror.
    assert_eq!(
        result.structured_content(),
        decoded.structured_content.as_ref()
    );
    let blocks = decoded.content.len();
    assert!(
        result.content().len() == blocks
            || (result.content().len() == blocks + 1 && decoded.structured_content.is_some()),
        "{} blocks from {blocks}",
        result.content().len()
    );
    for (mapped, block) in result.content().iter().zip(&decoded.content) {
        match block {
            ContentBlock::Text(text) => {
                assert_eq!(
                    mapped,
                    &serde_json::json!({"type": "text", "text": text.text})
                );
            }
            ContentBlock::Image(image) => assert_eq!(
                mapped,
                &serde_json::json!({"type": "image", "data": image.data, "mime_type": image.mime_type})
            ),
            // Only an error result gets here: the block is described in a text block.
            _ => {
                assert!(decoded.is_error());
                let text = mapped.get("text").and_then(Value::as_str).unwrap_or("");
                assert!(
                    text.starts_with("[unsupported content omitted: `"),
                    "{text}"
                );
            }
        }
    }
    if let Some(mirror) = result.content().get(blocks) {
        let text = mirror.get("text").and_then(Value::as_str).unwrap_or("");
        let parsed: Option<Value> = serde_json::from_str(text).ok();
        assert_eq!(parsed.as_ref(), decoded.structured_content.as_ref());
    }
}

/// Checks the printed `tool.result` event: one line, valid JSON equal to the value form, and
/// no larger than the input can account for. The bound: blocks re-encode no longer than they
/// came (serde_json escapes minimally), a described block adds a fixed text to a type cut at
/// 200 characters, and the structured value appears twice, compact (a number can grow 4.5
/// times: `1e15` prints as `1000000000000000.0`) and again as an escaped string (at most
/// twice that); plus the envelope and an error message of at most 1000 characters.
fn check_event(result: &ToolResult, input_len: usize) {
    let line = result.to_json_line();
    assert!(!line.contains('\n'), "the event is not one line");
    let parsed: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(parsed, result.to_json());
    let bound = 14 * input_len + 8192;
    assert!(
        line.len() <= bound,
        "the event is {} bytes from a {input_len}-byte result (bound {bound})",
        line.len()
    );
}

/// The `binding_config` fuzz target: config text into `load_config`. Checks: no panic; an
/// accepted config holds only bindings that follow the documented rules, each re-validates,
/// and printing the bindings and loading the print gives the same bindings and the same
/// print; a refused config's message is bounded and never quotes a `url`, `command` or `args`
/// value (they may hold secrets).
pub(crate) fn fuzz_binding_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match load_config(text) {
        Ok(bindings) => {
            let mut names = std::collections::HashSet::new();
            for binding in &bindings {
                check_binding_rules(binding);
                assert!(
                    names.insert(binding.name.as_str()),
                    "duplicate name accepted"
                );
                assert_eq!(binding.validate(), Ok(()), "{binding:?}");
                let from_value = Binding::from_json(&binding.to_json());
                assert_eq!(from_value.as_ref(), Ok(binding));
            }
            let printed = serde_json::to_string(&bindings).unwrap_or_else(|e| panic!("{e}"));
            let reloaded = load_config(&printed).unwrap_or_else(|e| panic!("{e}: {printed}"));
            assert_eq!(reloaded, bindings, "print and load changed the bindings");
            let reprinted = serde_json::to_string(&reloaded).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(reprinted, printed, "the print is not stable");
        }
        Err(error) => {
            let message = error.to_string();
            assert!(!message.is_empty());
            assert!(message.len() <= 4096, "a {}-byte message", message.len());
            if let Ok(config) = serde_json::from_str::<Value>(text) {
                check_no_secret_quoted(&config, &message);
            }
        }
    }
}

/// The documented field rules, checked on an accepted binding.
fn check_binding_rules(binding: &Binding) {
    let name_chars = binding.name.chars().count();
    assert!(
        (1..=MAX_NAME_CHARS).contains(&name_chars),
        "{:?}",
        binding.name
    );
    assert!(
        binding
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{:?}",
        binding.name
    );
    assert!(binding.input_schema.get("type") == Some(&Value::from("object")));
    assert!((1..=MAX_TIMEOUT_SECONDS).contains(&binding.timeout_seconds));
    assert!((1..=MAX_OUTPUT_BYTES_LIMIT).contains(&binding.max_output_bytes));
    assert!(!binding.mcp_tool.is_empty());
    assert!(!binding.tenants.is_empty());
    assert!(binding.tenants.iter().all(|t| !t.is_empty()));
    let distinct: std::collections::HashSet<_> = binding.tenants.iter().collect();
    assert_eq!(distinct.len(), binding.tenants.len(), "repeated tenant");
    let env_name = |name: &str| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match &binding.server {
        Server::Http {
            url,
            token_env,
            tls,
            proxy,
            header_env,
            auth,
            ..
        } => {
            assert!(token_env.is_none() || auth.is_none(), "token_env and auth");
            // Schemes are case-insensitive (RFC 3986, section 3.1).
            let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            assert!(
                matches!(scheme.as_deref(), Some("http" | "https")),
                "{url:?}"
            );
            assert!(!url.contains('#') && !url.chars().any(|c| c.is_control() || c == ' '));
            assert!(token_env.as_deref().is_none_or(env_name), "{token_env:?}");
            if let Some(tls) = tls {
                assert_eq!(scheme.as_deref(), Some("https"), "tls on {url:?}");
                let files = [
                    match &tls.roots {
                        crate::transport::http::Roots::CaFile(file) => Some(file),
                        _ => None,
                    },
                    tls.extra_ca_file.as_ref(),
                    tls.client_cert.as_ref().map(|c| &c.cert_file),
                    tls.client_cert.as_ref().map(|c| &c.key_file),
                ];
                assert!(
                    files.into_iter().flatten().all(|f| f.is_absolute()),
                    "{tls:?}"
                );
            }
            if let Some(crate::binding::config::ProxySetting::Url(proxy)) = proxy {
                assert!(
                    proxy.to_ascii_lowercase().starts_with("http://"),
                    "{proxy:?}"
                );
                assert!(!proxy.contains('@'), "credentials in {proxy:?}");
            }
            assert!(header_env.len() <= crate::binding::config::MAX_HEADER_ENV);
            for (name, variable) in header_env {
                assert!(
                    crate::exchange::config::ExtraHeaders::check_name(name).is_ok(),
                    "{name:?}"
                );
                assert!(env_name(variable), "{variable:?}");
            }
        }
        Server::Stdio { command, args, env } => {
            assert!(!command.is_empty() && !command.contains('\0'));
            assert!(args.iter().all(|a| !a.contains('\0')));
            assert!(env.iter().all(|e| env_name(e)), "{env:?}");
        }
    }
}

/// The shortest `url`, `command` or `args` value checked against an error message; shorter
/// ones may turn up in a message by coincidence (as part of a field name, say).
const MIN_SECRET_CHARS: usize = 12;

/// A refused config's message must not quote any `url`, `command` or `args` value, unless the
/// same text also sits in a member the message may quote (a name, a key, another string).
fn check_no_secret_quoted(config: &Value, message: &str) {
    let items: &[Value] = match config {
        Value::Array(items) => items,
        Value::Object(host) => match host.get("tools") {
            Some(Value::Array(items)) => items,
            _ => return,
        },
        _ => return,
    };
    let mut secrets = Vec::new();
    let mut others = Vec::new();
    for item in items {
        let Value::Object(members) = item else {
            collect_strings(item, &mut others);
            continue;
        };
        for (key, value) in members {
            others.push(key.clone());
            match (key.as_str(), value) {
                ("url" | "command", Value::String(s)) => secrets.push(s.clone()),
                ("args", Value::Array(args)) => {
                    for arg in args {
                        match arg {
                            Value::String(s) => secrets.push(s.clone()),
                            other => collect_strings(other, &mut others),
                        }
                    }
                }
                (_, other) => collect_strings(other, &mut others),
            }
        }
    }
    for secret in secrets {
        if secret.chars().count() < MIN_SECRET_CHARS
            || others.iter().any(|other| other.contains(secret.as_str()))
        {
            continue;
        }
        assert!(
            !message.contains(secret.as_str()),
            "the message quotes a secret value {secret:?}: {message}"
        );
    }
}

/// Every string and object key in `value`.
fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(members) => {
            for (key, v) in members {
                out.push(key.clone());
                collect_strings(v, out);
            }
        }
        _ => {}
    }
}
