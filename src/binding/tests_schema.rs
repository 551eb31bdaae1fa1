//! Tests for `binding::schema`: bounded compile, no retrieval, error reports.

use serde_json::{Value, json};

use super::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, compile};

/// Compiles a schema the test expects to be fine.
fn ok(schema: Value) -> super::CompiledSchema {
    match compile(&schema) {
        Ok(compiled) => compiled,
        Err(e) => panic!("schema {schema} refused: {e}"),
    }
}

/// Compiles a schema the test expects to be refused; returns the message.
fn refused(schema: &Value) -> String {
    match compile(schema) {
        Ok(_) => panic!("schema {schema} compiled"),
        Err(e) => e,
    }
}

/// An object schema nested `levels` deep: `{"type":"object","properties":{"a": ...}}`, where
/// each step adds two levels (the schema object and its `properties` object).
fn nested_value(levels: usize) -> Value {
    let mut value = json!({});
    for _ in 1..levels {
        value = json!({ "a": value });
    }
    value
}

#[test]
fn local_defs_ref_works() {
    let schema = ok(json!({
        "type": "object",
        "properties": {"point": {"$ref": "#/$defs/point"}},
        "required": ["point"],
        "$defs": {"point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"]
        }}
    }));
    assert_eq!(
        schema.validate(&json!({"point": {"x": 1, "y": 2.5}})),
        Ok(())
    );
    assert_eq!(
        schema.validate(&json!({"point": {"x": 1}})),
        Err(r#"/point: "y" is a required property"#.to_owned())
    );
}

#[test]
fn local_definitions_ref_and_draft_07_work() {
    let schema = ok(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"$ref": "#/definitions/tag"}}},
        "definitions": {"tag": {"type": "string", "minLength": 1}}
    }));
    assert!(schema.is_valid(&json!({"tags": ["a", "b"]})));
    assert_eq!(
        schema.validate(&json!({"tags": ["a", ""]})),
        Err(r#"/tags/1: "" is shorter than 1 character"#.to_owned())
    );
}

#[test]
fn ref_to_own_id_is_local() {
    let schema = ok(json!({
        "$id": "https://example.com/tool.json",
        "type": "object",
        "properties": {"n": {"$ref": "https://example.com/tool.json#/$defs/n"}},
        "$defs": {"n": {"type": "integer"}}
    }));
    assert!(schema.is_valid(&json!({"n": 3})));
    assert!(!schema.is_valid(&json!({"n": "3"})));
}

#[test]
fn recursive_local_ref_works() {
    let schema = ok(json!({
        "$defs": {"node": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "additionalProperties": false
        }},
        "$ref": "#/$defs/node"
    }));
    assert!(schema.is_valid(&json!({"children": [{"children": []}, {}]})));
    assert!(!schema.is_valid(&json!({"children": [{"child": []}]})));
}

#[test]
fn remote_https_ref_is_refused_and_named() {
    let message = refused(&json!({
        "type": "object",
        "properties": {"q": {"$ref": "https://example.com/s.json"}}
    }));
    assert!(message.contains("https://example.com/s.json"), "{message}");
    assert!(message.contains("never fetches"), "{message}");
}

#[test]
fn file_ref_is_refused_without_reading_the_file() {
    let message = refused(&json!({"$ref": "file:///etc/passwd"}));
    assert!(message.contains("file:///etc/passwd"), "{message}");
    assert!(message.contains("never fetches"), "{message}");

    // A file that exists and holds a valid schema is refused too: it was never read.
    let path =
        std::env::temp_dir().join(format!("mcpwire-schema-test-{}.json", std::process::id()));
    std::fs::write(&path, br#"{"type": "string"}"#).expect("write temp schema");
    let uri = format!("file://{}", path.display());
    let result = compile(&json!({"$ref": uri}));
    std::fs::remove_file(&path).ok();
    let message = result.expect_err("file reference compiled");
    assert!(message.contains(&uri), "{message}");
}

#[test]
fn http_ref_is_refused_without_connecting() {
    // A listener the reference points at: nothing may connect to it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let uri = format!("http://127.0.0.1:{port}/schema.json");
    let message = refused(&json!({"$ref": uri}));
    assert!(message.contains(&uri), "{message}");
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("something connected: {other:?}"),
    }
}

#[test]
fn other_external_refs_are_refused() {
    for reference in [
        "other.json",
        "urn:example:schema",
        "http://json-schema.org/draft-07/schema#/definitions/nope",
        "https://example.com/s.json#/$defs/x",
    ] {
        let message = refused(&json!({"type": "object", "properties": {"a": {"$ref": reference}}}));
        let named = reference.split('#').next().unwrap_or(reference);
        assert!(message.contains(named), "{reference}: {message}");
    }
}

#[test]
fn unknown_meta_schema_is_refused() {
    let message = refused(&json!({"$schema": "https://example.com/my-dialect", "type": "object"}));
    assert!(
        message.contains("https://example.com/my-dialect"),
        "{message}"
    );
}

#[test]
fn standard_meta_schemas_compile_offline() {
    for dialect in [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        let schema = ok(json!({"$schema": dialect, "type": "object"}));
        assert!(schema.is_valid(&json!({})), "{dialect}");
        assert!(!schema.is_valid(&json!([])), "{dialect}");
    }
}

#[test]
fn two_mib_schema_is_refused() {
    let schema = json!({"type": "object", "description": "x".repeat(2 << 20)});
    let message = refused(&schema);
    assert!(message.contains("larger than 1048576 bytes"), "{message}");
}

#[test]
fn schema_just_under_the_size_limit_compiles() {
    let base = serde_json::to_string(&json!({"type": "object", "description": ""}))
        .expect("serialize")
        .len();
    let schema = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES - base)});
    assert_eq!(
        serde_json::to_string(&schema).expect("serialize").len(),
        MAX_SCHEMA_BYTES
    );
    ok(schema);
    let schema = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES - base + 1)});
    refused(&schema);
}

#[test]
fn hundred_deep_schema_is_refused() {
    let message = refused(&nested_value(100));
    assert_eq!(message, "the schema is nested deeper than 64 levels");
    // A real-looking deep schema: properties inside properties.
    let mut schema = json!({"type": "string"});
    for _ in 0..50 {
        schema = json!({"type": "object", "properties": {"a": schema}});
    }
    assert_eq!(
        refused(&schema),
        "the schema is nested deeper than 64 levels"
    );
}

#[test]
fn depth_limit_is_exact() {
    ok(nested_value(MAX_SCHEMA_DEPTH));
    refused(&nested_value(MAX_SCHEMA_DEPTH + 1));
    // Arrays count as levels too.
    let mut value = json!([]);
    for _ in 1..=MAX_SCHEMA_DEPTH {
        value = json!({ "enum": [value] });
    }
    refused(&value);
}

#[test]
fn typical_tool_schema_reports_errors_with_paths() {
    let schema = ok(json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "order": {"enum": ["asc", "desc"]},
            "filters": {
                "type": "object",
                "properties": {"lang": {"type": "string"}},
                "additionalProperties": false
            }
        },
        "required": ["query"],
        "additionalProperties": false
    }));
    assert_eq!(schema.validate(&json!({"query": "mcp"})), Ok(()));
    assert_eq!(
        schema.validate(
            &json!({"query": "mcp", "limit": 10, "order": "asc", "filters": {"lang": "en"}})
        ),
        Ok(())
    );
    assert_eq!(
        schema.validate(&json!({})),
        Err(r#"(root): "query" is a required property"#.to_owned())
    );
    assert_eq!(
        schema.validate(&json!({"query": "mcp", "limit": 0})),
        Err("/limit: 0 is less than the minimum of 1".to_owned())
    );
    assert_eq!(
        schema.validate(&json!({"query": "mcp", "order": "up"})),
        Err(r#"/order: "up" is not one of "asc" or "desc""#.to_owned())
    );
    assert_eq!(
        schema.validate(&json!({"query": "mcp", "extra": true})),
        Err("(root): Additional properties are not allowed ('extra' was unexpected)".to_owned())
    );
    assert_eq!(
        schema.validate(&json!({"query": "mcp", "filters": {"lang": 1}})),
        Err(r#"/filters/lang: 1 is not of type "string""#.to_owned())
    );
    let message = schema
        .validate(&json!({"query": 1, "limit": "ten"}))
        .expect_err("two errors");
    assert!(
        message.contains(r#"/query: 1 is not of type "string""#),
        "{message}"
    );
    assert!(
        message.contains(r#"/limit: "ten" is not of type "integer""#),
        "{message}"
    );
    assert_eq!(message.matches("; ").count(), 1, "{message}");
}

#[test]
fn at_most_five_errors_are_reported() {
    let schema = ok(json!({
        "type": "object",
        "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"},
            "d": {"type": "string"}, "e": {"type": "string"}, "f": {"type": "string"},
            "g": {"type": "string"}
        }
    }));
    let message = schema
        .validate(&json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7}))
        .expect_err("seven errors");
    assert_eq!(message.matches("is not of type").count(), 5, "{message}");
    assert!(message.ends_with("; and more"), "{message}");

    let message = schema
        .validate(&json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}))
        .expect_err("five errors");
    assert_eq!(message.matches("is not of type").count(), 5, "{message}");
    assert!(!message.ends_with("; and more"), "{message}");
}

#[test]
fn long_values_are_cut_in_messages() {
    let schema = ok(json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
    let message = schema
        .validate(&json!({"a": "é".repeat(10_000)}))
        .expect_err("not an integer");
    assert!(message.starts_with("/a: \"ééé"), "{message}");
    assert!(message.ends_with('…'), "{message}");
    assert!(message.chars().count() < 400, "{}", message.len());
}

#[test]
fn invalid_schemas_are_refused() {
    assert!(refused(&json!({"type": "nonsense"})).starts_with("not a usable JSON Schema"));
    assert!(
        refused(&json!({"type": "string", "pattern": "(unclosed"})).starts_with("not a usable")
    );
    assert!(refused(&json!({"minimum": "zero"})).starts_with("not a usable"));
}

#[test]
fn real_output_schemas_from_peer_captures() {
    // `get-structured-content` of @modelcontextprotocol/server-everything (draft-07 dialect)
    // and its real structured result.
    let everything = ok(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"temperature": {"type": "number", "description": "Temperature in celsius"},
            "conditions": {"type": "string", "description": "Weather conditions description"},
            "humidity": {"type": "number", "description": "Humidity percentage"}},
        "required": ["temperature", "conditions", "humidity"], "additionalProperties": false}),
    );
    assert_eq!(
        everything
            .validate(&json!({"temperature":36,"conditions":"Light rain / drizzle","humidity":82})),
        Ok(())
    );
    assert_eq!(
        everything.validate(&json!({"temperature":36,"conditions":"Light rain / drizzle"})),
        Err(r#"(root): "humidity" is a required property"#.to_owned())
    );
    // `weather` of the Python SDK test server (no `$schema`: 2020-12).
    let weather = ok(
        json!({"properties": {"city": {"description": "City name as given", "title": "City", "type": "string"},
        "temperature_c": {"description": "Temperature in Celsius", "title": "Temperature C", "type": "number"},
        "conditions": {"description": "Weather conditions", "title": "Conditions", "type": "string"},
        "humidity": {"description": "Relative humidity in percent", "title": "Humidity", "type": "integer"}},
        "required": ["city", "temperature_c", "conditions", "humidity"], "type": "object",
        "description": "Structured weather report.", "title": "Weather"}),
    );
    assert_eq!(
        weather.validate(
            &json!({"city":"Oslo","temperature_c":21.5,"conditions":"Sunny","humidity":40})
        ),
        Ok(())
    );
    assert_eq!(
        weather.validate(
            &json!({"city":"Oslo","temperature_c":21.5,"conditions":"Sunny","humidity":40.5})
        ),
        Err(r#"/humidity: 40.5 is not of type "integer""#.to_owned())
    );
}

#[test]
fn format_is_an_annotation_only() {
    let schema = ok(json!({"type": "string", "format": "email"}));
    assert!(schema.is_valid(&json!("not an email")));
}

#[test]
fn compiled_schemas_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<super::CompiledSchema>();
}

#[test]
fn remote_ref_in_unused_defs_is_refused() {
    // References are resolved when the schema is compiled, even where no value leads.
    let message = refused(&json!({
        "type": "object",
        "$defs": {"unused": {"$ref": "https://example.com/unused.json"}}
    }));
    assert!(
        message.contains("https://example.com/unused.json"),
        "{message}"
    );
}
