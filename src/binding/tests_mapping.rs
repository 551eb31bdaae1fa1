//! Tests for `binding::mapping`: every row of SPEC.md's "Result mapping" table, on real results
//! from `tests/data/peer-captures` where one exists.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{MappingError, ToolOutput, map_result};
use crate::binding::schema::{CompiledSchema, compile};
use crate::mcp::CallToolResult;

/// The JSON-RPC messages in the SSE `data:` lines of a capture under
/// `tests/data/peer-captures/`.
fn capture_messages(path: &str) -> Vec<Value> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/peer-captures")
        .join(path);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .map(|data| serde_json::from_str(data).unwrap_or_else(|e| panic!("{path}: {e}: {data}")))
        .collect()
}

/// The `tools/call` result in a capture, decoded from its JSON text as the client does.
fn captured_result(path: &str) -> CallToolResult {
    let result = capture_messages(path)
        .into_iter()
        .find_map(|message| message.get("result").cloned())
        .unwrap_or_else(|| panic!("{path}: no result"));
    serde_json::from_str(&result.to_string()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `outputSchema` of `tool` in a captured `tools/list` reply, compiled.
fn captured_output_schema(path: &str, tool: &str) -> CompiledSchema {
    let schema = capture_messages(path)
        .into_iter()
        .filter_map(|message| message.pointer("/result/tools").cloned())
        .filter_map(|tools| tools.as_array().cloned())
        .flatten()
        .find(|t| t["name"] == tool)
        .and_then(|t| t.get("outputSchema").cloned())
        .unwrap_or_else(|| panic!("{path}: no outputSchema for {tool}"));
    compile(&schema).unwrap_or_else(|e| panic!("{path} {tool}: {e}"))
}

/// A result from literal JSON.
fn result(json: Value) -> CallToolResult {
    serde_json::from_str(&json.to_string()).expect("CallToolResult")
}

fn mapped(result: &CallToolResult, schema: Option<&CompiledSchema>) -> ToolOutput {
    map_result(result.clone(), schema).unwrap_or_else(|e| panic!("mapping failed: {e}"))
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// The 4x4 PNG the Python SDK test server returns.
const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";

// ---- text content ----

#[test]
fn text_content_maps_to_text_blocks() {
    for (path, expected) in [
        ("everything/calls/call-echo.txt", "Echo: hi"),
        (
            "everything/calls/call-get-sum.txt",
            "The sum of 2 and 3.5 is 5.5.",
        ),
        ("py/calls/call-square.txt", "7^2 = 49"),
        ("py/calls/call-echo_text.txt", "hi"),
        ("py/calls/call-log_messages.txt", "sent 2 log messages"),
        ("py/calls/call-slow-2s-with-token.txt", "slept 2.0 seconds"),
    ] {
        let output = mapped(&captured_result(path), None);
        assert_eq!(
            output,
            ToolOutput {
                is_error: false,
                content: vec![text(expected)],
                structured_content: None,
            },
            "{path}"
        );
    }
}

#[test]
fn text_annotations_and_meta_are_dropped() {
    // server-everything's get-annotated-message: a text block with annotations, then an image.
    let output = mapped(
        &captured_result("everything/calls/call-get-annotated-message.txt"),
        None,
    );
    assert_eq!(output.content.len(), 2);
    assert_eq!(output.content[0], text("Error: Operation failed"));
    assert_eq!(output.content[1]["type"], "image");
    let output = mapped(
        &result(
            json!({"content": [{"type": "text", "text": "t", "_meta": {"k": 1}, "extra": true}]}),
        ),
        None,
    );
    assert_eq!(output.content, vec![text("t")]);
}

// ---- image content ----

#[test]
fn image_content_maps_to_image_blocks() {
    for path in [
        "py/calls/call-tiny_image.txt",
        "py-mcp-v1/calls/call-tiny_image.txt",
    ] {
        let output = mapped(&captured_result(path), None);
        assert_eq!(
            output.content,
            vec![json!({"type": "image", "data": TINY_PNG, "mime_type": "image/png"})],
            "{path}"
        );
    }
    let captured = captured_result("everything/calls/call-get-tiny-image.txt");
    let output = mapped(&captured, None);
    assert_eq!(output.content[0], text("Here's the image you requested:"));
    let image = &output.content[1];
    assert_eq!(image["type"], "image");
    assert_eq!(image["mime_type"], "image/png");
    // The base64 is passed through exactly as sent, not decoded or re-encoded.
    let sent = match &captured.content[1] {
        crate::mcp::ContentBlock::Image(i) => i.data.as_str(),
        other => panic!("{other:?}"),
    };
    assert_eq!(image["data"].as_str(), Some(sent));
    assert_eq!(image.as_object().map(serde_json::Map::len), Some(3));
}

// ---- structured content ----

#[test]
fn structured_content_with_its_compact_text_block_is_not_repeated() {
    // server-everything sends the compact JSON in a text block.
    let output = mapped(
        &captured_result("everything/calls/call-get-structured-content.txt"),
        None,
    );
    let structured =
        json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82});
    assert_eq!(output.structured_content, Some(structured));
    assert_eq!(output.content.len(), 1);
}

#[test]
fn structured_content_with_a_pretty_text_block_is_not_repeated() {
    // The Python SDK sends it indented; equal JSON counts, whatever the layout.
    for path in [
        "py/calls/call-weather.txt",
        "py-mcp-v1/calls/call-weather.txt",
    ] {
        let output = mapped(&captured_result(path), None);
        assert_eq!(
            output.structured_content,
            Some(
                json!({"city": "Oslo", "temperature_c": 21.5, "conditions": "Sunny", "humidity": 40})
            ),
            "{path}"
        );
        assert_eq!(output.content.len(), 1, "{path}");
        assert!(
            output.content[0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("\n  \"city\""))
        );
    }
}

#[test]
fn structured_content_without_a_text_block_gets_one() {
    let output = mapped(
        &result(json!({"content": [], "structuredContent": {"b": [1, 2], "a": "x"}})),
        None,
    );
    assert_eq!(
        output.structured_content,
        Some(json!({"a": "x", "b": [1, 2]}))
    );
    assert_eq!(output.content, vec![text(r#"{"a":"x","b":[1,2]}"#)]);
}

#[test]
fn structured_content_with_a_different_text_block_gets_one_appended() {
    let output = mapped(
        &result(json!({
            "content": [{"type": "text", "text": "It is 36 degrees."}, {"type": "text", "text": "{\"temperature\": 35}"}],
            "structuredContent": {"temperature": 36}
        })),
        None,
    );
    assert_eq!(
        output.content,
        vec![
            text("It is 36 degrees."),
            text("{\"temperature\": 35}"),
            text(r#"{"temperature":36}"#)
        ]
    );
    // A number written differently (36 vs 36.0) is not the same JSON value.
    let output = mapped(
        &result(json!({
            "content": [{"type": "text", "text": "{\"temperature\": 36.0}"}],
            "structuredContent": {"temperature": 36}
        })),
        None,
    );
    assert_eq!(output.content.len(), 2);
}

#[test]
fn structured_content_matching_the_output_schema_passes() {
    let schema = captured_output_schema("everything/03-tools-list.txt", "get-structured-content");
    let output = mapped(
        &captured_result("everything/calls/call-get-structured-content.txt"),
        Some(&schema),
    );
    assert!(output.structured_content.is_some());
    let schema = captured_output_schema("py/03-tools-list.txt", "weather");
    for path in [
        "py/calls/call-weather.txt",
        "py-mcp-v1/calls/call-weather.txt",
    ] {
        let output = mapped(&captured_result(path), Some(&schema));
        assert!(!output.is_error, "{path}");
    }
}

#[test]
fn structured_content_not_matching_the_output_schema_fails() {
    // The weather result checked against server-everything's schema for another tool.
    let schema = captured_output_schema("everything/03-tools-list.txt", "get-structured-content");
    let error = map_result(captured_result("py/calls/call-weather.txt"), Some(&schema))
        .expect_err("mismatch");
    let MappingError::OutputSchema { detail } = &error else {
        panic!("{error:?}");
    };
    assert!(
        detail.contains(r#""temperature" is a required property"#),
        "{detail}"
    );
    assert_eq!(error.kind().as_str(), "output_schema_mismatch");
    assert!(error.unknown_outcome());
    assert!(
        error
            .to_string()
            .starts_with("the structured result does not match the output schema: (root): "),
        "{error}"
    );
    // A value of the wrong type inside.
    let schema = captured_output_schema("py/03-tools-list.txt", "weather");
    let error = map_result(
        result(json!({
            "content": [],
            "structuredContent": {"city": "Oslo", "temperature_c": "warm", "conditions": "Sunny", "humidity": 40}
        })),
        Some(&schema),
    )
    .expect_err("mismatch");
    assert_eq!(
        error,
        MappingError::OutputSchema {
            detail: r#"/temperature_c: "warm" is not of type "number""#.to_owned()
        }
    );
}

#[test]
fn output_schema_without_structured_content_fails() {
    let schema = captured_output_schema("py/03-tools-list.txt", "weather");
    let error = map_result(captured_result("py/calls/call-square.txt"), Some(&schema))
        .expect_err("missing structured content");
    assert_eq!(error, MappingError::MissingStructuredContent);
    assert_eq!(error.kind().as_str(), "output_schema_mismatch");
    assert!(error.unknown_outcome());
    assert_eq!(
        error.to_string(),
        "the tool has an output schema but its result has no structured content"
    );
    // `"structuredContent": null` is no structured content.
    let error = map_result(
        result(json!({"content": [], "structuredContent": null})),
        Some(&schema),
    )
    .expect_err("null");
    assert_eq!(error, MappingError::MissingStructuredContent);
}

// ---- isError: true ----

#[test]
fn error_results_map_with_content_kept() {
    for (path, expected) in [
        (
            "py/calls/call-fail.txt",
            "Error executing tool fail: kaputt",
        ),
        (
            "py-mcp-v1/calls/call-fail.txt",
            "Error executing tool fail: kaputt",
        ),
        (
            "py/probes/p16-unknown-tool.txt",
            "Unknown tool: no-such-tool",
        ),
        (
            "everything/probes/p16-unknown-tool.txt",
            "MCP error -32602: Tool no-such-tool not found",
        ),
    ] {
        assert_eq!(
            mapped(&captured_result(path), None),
            ToolOutput {
                is_error: true,
                content: vec![text(expected)],
                structured_content: None,
            },
            "{path}"
        );
    }
    for path in [
        "everything/calls/call-echo-missing-arg.txt",
        "everything/calls/call-get-sum-bad-type.txt",
        "everything/calls/call-gzip-external-blocked.txt",
        "py/calls/call-square-missing-arg.txt",
        "py/calls/call-square-string-arg.txt",
        "py/calls/call-square-float-arg.txt",
        "py-mcp-v1/calls/call-square-missing-arg.txt",
    ] {
        let output = mapped(&captured_result(path), None);
        assert!(output.is_error, "{path}");
        assert_eq!(output.content.len(), 1, "{path}");
    }
}

#[test]
fn error_results_skip_the_output_schema() {
    // The Python test server's `fail` tool has an outputSchema; its error result has no
    // structured content, and that is not a mapping failure.
    let schema = captured_output_schema("py/03-tools-list.txt", "fail");
    let output = mapped(&captured_result("py/calls/call-fail.txt"), Some(&schema));
    assert!(output.is_error);
    assert_eq!(
        output.content,
        vec![text("Error executing tool fail: kaputt")]
    );
    // Structured content on an error result is kept (and mirrored), not validated.
    let output = mapped(
        &result(
            json!({"content": [{"type": "text", "text": "failed"}], "structuredContent": {"code": 7}, "isError": true}),
        ),
        Some(&schema),
    );
    assert!(output.is_error);
    assert_eq!(output.structured_content, Some(json!({"code": 7})));
    assert_eq!(output.content, vec![text("failed"), text(r#"{"code":7}"#)]);
}

#[test]
fn error_results_describe_unsupported_blocks() {
    let output = mapped(
        &result(json!({"isError": true, "content": [
            {"type": "text", "text": "could not finish"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///tmp/log.txt", "name": "log"},
            {"type": "resource", "resource": {"uri": "test://r", "text": "secret-ish body"}},
            {"type": "resource", "resource": {"uri": "test://b", "blob": "AAAA"}},
            {"type": "hologram", "z": 1},
            {"type": "image", "data": TINY_PNG, "mimeType": "image/png"}
        ]})),
        None,
    );
    assert!(output.is_error);
    assert_eq!(
        output.content,
        vec![
            text("could not finish"),
            text("[unsupported content omitted: `audio` (audio/wav)]"),
            text("[unsupported content omitted: `resource_link` (file:///tmp/log.txt)]"),
            text("[unsupported content omitted: `resource` (test://r)]"),
            text("[unsupported content omitted: `resource` (test://b)]"),
            text("[unsupported content omitted: `hologram`]"),
            json!({"type": "image", "data": TINY_PNG, "mime_type": "image/png"}),
        ]
    );
}

#[test]
fn is_error_false_and_absent_are_success() {
    let absent = mapped(
        &result(json!({"content": [{"type": "text", "text": "x"}]})),
        None,
    );
    let explicit = mapped(
        &result(json!({"content": [{"type": "text", "text": "x"}], "isError": false})),
        None,
    );
    assert_eq!(absent, explicit);
    assert!(!absent.is_error);
}

// ---- any other content type ----

#[test]
fn other_content_types_fail_the_call() {
    for (path, block_type) in [
        (
            "everything/calls/call-get-resource-links.txt",
            "resource_link",
        ),
        (
            "everything/calls/call-get-resource-reference.txt",
            "resource",
        ),
        ("everything/calls/call-gzip-data-uri.txt", "resource"),
        ("py/calls/call-mixed_content.txt", "resource"),
        ("py-mcp-v1/calls/call-mixed_content.txt", "resource"),
    ] {
        let error = map_result(captured_result(path), None).expect_err(path);
        assert_eq!(
            error,
            MappingError::UnsupportedContent {
                block_type: block_type.to_owned()
            },
            "{path}"
        );
        assert_eq!(error.kind().as_str(), "unsupported_content");
        assert!(error.unknown_outcome());
    }
    for (block, block_type) in [
        (
            json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
            "audio",
        ),
        (json!({"type": "hologram", "z": 1}), "hologram"),
    ] {
        let error = map_result(
            result(json!({"content": [{"type": "text", "text": "ok"}, block]})),
            None,
        )
        .expect_err(block_type);
        assert_eq!(
            error.to_string(),
            format!(
                "the result holds a content block of type `{block_type}`, which mcpwire does not \
                 return (only text, image and structured content)"
            )
        );
    }
}

#[test]
fn unsupported_content_is_reported_before_the_schema() {
    let schema = captured_output_schema("py/03-tools-list.txt", "weather");
    let error = map_result(
        captured_result("py/calls/call-mixed_content.txt"),
        Some(&schema),
    )
    .expect_err("unsupported");
    assert_eq!(error.kind().as_str(), "unsupported_content");
}

// ---- every captured call ----

#[test]
fn every_captured_call_maps_as_expected() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/peer-captures");
    let mut checked = 0;
    for server in ["everything", "py", "py-mcp-v1"] {
        let dir = root.join(server).join("calls");
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("calls folder")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        for name in entries {
            let path = format!("{server}/calls/{name}");
            let result = captured_result(&path);
            let has_other = result
                .content
                .iter()
                .any(|b| !matches!(b.known_type(), Some("text" | "image")));
            match map_result(result.clone(), None) {
                Ok(output) => {
                    assert!(!has_other || result.is_error(), "{path}");
                    assert_eq!(output.is_error, result.is_error(), "{path}");
                    assert!(output.content.len() >= result.content.len(), "{path}");
                    for block in &output.content {
                        let keys: Vec<&str> = block
                            .as_object()
                            .map(|o| o.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        assert!(
                            keys == ["text", "type"] || keys == ["data", "mime_type", "type"],
                            "{path}: {block}"
                        );
                    }
                }
                Err(MappingError::UnsupportedContent { .. }) => assert!(has_other, "{path}"),
                Err(e) => panic!("{path}: {e}"),
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "{checked}");
}

#[test]
fn tool_output_serializes_in_the_documented_shape() {
    let output = mapped(&captured_result("py/calls/call-weather.txt"), None);
    let json = serde_json::to_value(&output).expect("serialize");
    assert_eq!(json["is_error"], false);
    assert_eq!(json["structured_content"]["city"], "Oslo");
    assert_eq!(json["content"][0]["type"], "text");
    let output = mapped(&captured_result("py/calls/call-square.txt"), None);
    assert_eq!(
        serde_json::to_string(&output).expect("serialize"),
        r#"{"is_error":false,"content":[{"text":"7^2 = 49","type":"text"}]}"#
    );
}
