//! Tests for `binding::config`: the SPEC.md example, defaults, round trips, and one case per
//! refusal.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    Binding, ConfigError, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_SECONDS, Server, load_config,
    parse_config,
};

/// The binding SPEC.md shows ("Tool bindings"), as `mcp-tools` prints it.
const SPEC_EXAMPLE: &str = r#"[{"name": "search", "description": "Search the knowledge base.",
  "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
  "url": "https://SERVER/mcp", "mcp_tool": "search", "token_env": "MCP_API_KEY",
  "tenants": ["local"], "timeout_seconds": 300, "max_output_bytes": 1048576}]"#;

/// A valid HTTP binding to start each refusal case from.
fn http_binding() -> Value {
    json!({
        "name": "search",
        "description": "Search the knowledge base.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "url": "https://mcp.example.com/mcp",
        "mcp_tool": "search",
        "token_env": "MCP_API_KEY",
        "tenants": ["local"]
    })
}

/// A valid stdio binding to start each refusal case from.
fn stdio_binding() -> Value {
    json!({
        "name": "fs_read",
        "description": "",
        "input_schema": {"type": "object"},
        "command": "mcp-server-filesystem",
        "args": ["--root", "/srv/docs"],
        "env": ["HOME", "LANG"],
        "mcp_tool": "read_file",
        "tenants": ["a", "b"]
    })
}

/// `base` with `edits` applied: a `null` edit removes the member, anything else sets it.
fn with(mut base: Value, edits: Value) -> Value {
    if let (Value::Object(object), Value::Object(edits)) = (&mut base, edits) {
        for (key, value) in edits {
            if value.is_null() {
                object.remove(&key);
            } else {
                object.insert(key, value);
            }
        }
    }
    base
}

/// Loads a config the test expects to be refused.
fn refused(config: &Value) -> ConfigError {
    match parse_config(config) {
        Ok(bindings) => panic!("config accepted: {bindings:?}"),
        Err(e) => e,
    }
}

/// Loads one binding the test expects to be accepted.
fn accepted(binding: Value) -> Binding {
    match parse_config(&json!([binding])) {
        Ok(mut bindings) if bindings.len() == 1 => bindings.remove(0),
        Ok(bindings) => panic!("{} bindings", bindings.len()),
        Err(e) => panic!("refused: {e}"),
    }
}

/// One refusal case per line: `base edits => field, "message fragment"`. The binding is named
/// by its `name`, so the field and message are what each case checks.
macro_rules! refusals {
    ($($test:ident: $base:expr, $edits:tt => $field:expr, $fragment:expr;)*) => {$(
        #[test]
        fn $test() {
            let binding = with($base, json!($edits));
            let label = binding
                .get("name")
                .and_then(Value::as_str)
                .map_or("#0".to_owned(), str::to_owned);
            let error = refused(&json!([binding]));
            assert_eq!(error.binding.as_deref(), Some(label.as_str()), "{error}");
            assert_eq!(error.field.as_deref(), Some($field), "{error}");
            assert!(error.message.contains($fragment), "{error}");
        }
    )*};
}

refusals! {
    inspect_session_is_refused: http_binding(), {"inspect_session": true}
        => "inspect_session", "not supported on an MCP binding";
    inspect_session_false_is_refused_too: stdio_binding(), {"inspect_session": false}
        => "inspect_session", "not supported on an MCP binding";
    inspect_session_wins_over_other_unknown_fields: stdio_binding(),
        {"inspect_session": {"depth": 1}, "aaa": 1, "zzz": 2}
        => "inspect_session", "not supported on an MCP binding";
    unknown_field_is_named: http_binding(), {"timeout": 30}
        => "timeout", "unknown field";
    misspelled_field_is_named: http_binding(), {"tenant": ["local"]}
        => "tenant", "unknown field";
    camel_case_field_is_unknown: http_binding(), {"inputSchema": {"type": "object"}}
        => "inputSchema", "unknown field";

    description_missing: http_binding(), {"description": null}
        => "description", "missing";
    description_not_a_string: http_binding(), {"description": ["a"]}
        => "description", "must be a string, not an array";

    input_schema_missing: http_binding(), {"input_schema": null}
        => "input_schema", "missing";
    input_schema_not_an_object: http_binding(), {"input_schema": "object"}
        => "input_schema", "must be a JSON Schema object, not a string";
    input_schema_without_type: http_binding(), {"input_schema": {"properties": {}}}
        => "input_schema", "must have \"type\": \"object\"";
    input_schema_of_a_string: http_binding(), {"input_schema": {"type": "string"}}
        => "input_schema", "must have \"type\": \"object\"";
    input_schema_type_list: http_binding(), {"input_schema": {"type": ["object", "null"]}}
        => "input_schema", "must have \"type\": \"object\"";
    input_schema_remote_ref: http_binding(),
        {"input_schema": {"type": "object", "properties": {"q": {"$ref": "https://example.com/q.json"}}}}
        => "input_schema", "https://example.com/q.json";
    input_schema_invalid: http_binding(), {"input_schema": {"type": "object", "required": "query"}}
        => "input_schema", "not a usable JSON Schema";

    output_schema_not_an_object: http_binding(), {"output_schema": true}
        => "output_schema", "must be a JSON Schema object, not a boolean";
    output_schema_file_ref: http_binding(), {"output_schema": {"$ref": "file:///etc/passwd"}}
        => "output_schema", "file:///etc/passwd";

    url_and_command: http_binding(), {"command": "server"}
        => "command", "not both";
    neither_url_nor_command: http_binding(), {"url": null}
        => "url", "needs `url` (Streamable HTTP) or `command` (stdio)";
    url_not_a_string: http_binding(), {"url": {"href": "https://x"}}
        => "url", "must be a string, not an object";
    url_empty: http_binding(), {"url": ""}
        => "url", "must be an absolute http:// or https:// URL";
    url_relative: http_binding(), {"url": "/mcp"}
        => "url", "must be an absolute http:// or https:// URL";
    url_scheme_ftp: http_binding(), {"url": "ftp://example.com/mcp"}
        => "url", "http or https scheme";
    url_scheme_file: http_binding(), {"url": "file:///tmp/mcp.sock"}
        => "url", "http or https scheme";
    url_with_password: http_binding(), {"url": "https://user:s3cret@example.com/mcp"}
        => "url", "must not contain credentials";
    url_with_user_only: http_binding(), {"url": "https://token@example.com/mcp"}
        => "url", "must not contain credentials";
    url_without_host: http_binding(), {"url": "https:///mcp"}
        => "url", "must name a host";
    url_with_port_only: http_binding(), {"url": "http://:8080/mcp"}
        => "url", "must name a host";
    url_with_bad_port: http_binding(), {"url": "http://localhost:99999/mcp"}
        => "url", "invalid port";
    url_with_empty_port: http_binding(), {"url": "http://localhost:/mcp"}
        => "url", "invalid port";
    url_with_zero_port: http_binding(), {"url": "http://localhost:0/mcp"}
        => "url", "invalid port";
    url_with_fragment: http_binding(), {"url": "https://example.com/mcp#x"}
        => "url", "fragment";
    url_with_space: http_binding(), {"url": "https://example.com/m cp"}
        => "url", "spaces or control characters";
    url_with_bad_host: http_binding(), {"url": "https://exa<mple.com/mcp"}
        => "url", "invalid host";
    url_with_bad_ipv6: http_binding(), {"url": "http://[::g]/mcp"}
        => "url", "invalid IPv6";
    url_with_unclosed_ipv6: http_binding(), {"url": "http://[::1/mcp"}
        => "url", "unclosed";

    token_env_not_a_string: http_binding(), {"token_env": 1}
        => "token_env", "must be a string, not a number";
    token_env_empty: http_binding(), {"token_env": ""}
        => "token_env", "environment variable name";
    token_env_with_dash: http_binding(), {"token_env": "MCP-KEY"}
        => "token_env", "environment variable name";
    token_env_leading_digit: http_binding(), {"token_env": "1KEY"}
        => "token_env", "environment variable name";
    token_env_with_command: stdio_binding(), {"token_env": "MCP_API_KEY"}
        => "token_env", "only allowed with `url`";
    header_env_not_an_object: http_binding(), {"header_env": ["X-Api-Key", "API_KEY"]}
        => "header_env", "must be an object mapping header names to environment variable names, not an array";
    header_env_a_string: http_binding(), {"header_env": "X-Api-Key=API_KEY"}
        => "header_env", "not a string";
    header_env_bad_name: http_binding(), {"header_env": {"X Api Key": "API_KEY"}}
        => "header_env", "header \"X Api Key\": not a valid header name";
    header_env_name_with_colon: http_binding(), {"header_env": {"X-Api-Key:": "API_KEY"}}
        => "header_env", "not a valid header name";
    header_env_name_with_newline: http_binding(), {"header_env": {"X-A\r\nX-B": "API_KEY"}}
        => "header_env", "not a valid header name";
    header_env_empty_name: http_binding(), {"header_env": {"": "API_KEY"}}
        => "header_env", "header \"\": not a valid header name";
    header_env_authorization: http_binding(), {"header_env": {"Authorization": "API_KEY"}}
        => "header_env", "name the variable in `token_env`";
    header_env_authorization_any_case: http_binding(), {"header_env": {"authorization": "API_KEY"}}
        => "header_env", "reserved for the bearer token";
    header_env_accept: http_binding(), {"header_env": {"Accept": "X"}}
        => "header_env", "header \"Accept\": set by the MCP transport itself";
    header_env_content_type: http_binding(), {"header_env": {"Content-Type": "X"}}
        => "header_env", "set by the MCP transport itself";
    header_env_content_length: http_binding(), {"header_env": {"Content-Length": "X"}}
        => "header_env", "set by the MCP transport itself";
    header_env_host: http_binding(), {"header_env": {"Host": "X"}}
        => "header_env", "set by the MCP transport itself";
    header_env_session_id: http_binding(), {"header_env": {"Mcp-Session-Id": "X"}}
        => "header_env", "set by the MCP transport itself";
    header_env_protocol_version: http_binding(), {"header_env": {"MCP-Protocol-Version": "X"}}
        => "header_env", "set by the MCP transport itself";
    header_env_last_event_id: http_binding(), {"header_env": {"Last-Event-ID": "X"}}
        => "header_env", "set by the MCP transport itself";
    header_env_any_mcp_header: http_binding(), {"header_env": {"mcp-tenant": "X"}}
        => "header_env", "header \"mcp-tenant\": set by the MCP transport itself";
    header_env_transfer_encoding: http_binding(), {"header_env": {"Transfer-Encoding": "X"}}
        => "header_env", "set by the MCP transport itself";
    header_env_duplicate_ignoring_case: http_binding(), {"header_env": {"X-Api-Key": "A", "x-api-key": "B"}}
        => "header_env", "appears more than once (header names are case-insensitive)";
    header_env_variable_not_a_string: http_binding(), {"header_env": {"X-Api-Key": 7}}
        => "header_env", "header \"X-Api-Key\": must be the name of an environment variable (a string), not a number";
    header_env_variable_an_object: http_binding(), {"header_env": {"X-Api-Key": {"env": "API_KEY"}}}
        => "header_env", "not an object";
    header_env_variable_empty: http_binding(), {"header_env": {"X-Api-Key": ""}}
        => "header_env", "must be the name of the environment variable holding its value";
    header_env_variable_with_dash: http_binding(), {"header_env": {"X-Api-Key": "API-KEY"}}
        => "header_env", "values never go in the config";
    header_env_with_command: stdio_binding(), {"header_env": {"X-Api-Key": "API_KEY"}}
        => "header_env", "only allowed with `url`";
    args_with_url: http_binding(), {"args": ["-v"]}
        => "args", "only allowed with `command`";
    env_with_url: http_binding(), {"env": ["HOME"]}
        => "env", "only allowed with `command`";

    command_not_a_string: stdio_binding(), {"command": ["npx", "server"]}
        => "command", "must be a string, not an array";
    command_empty: stdio_binding(), {"command": ""}
        => "command", "must not be empty";
    command_blank: stdio_binding(), {"command": "  "}
        => "command", "must not be empty";
    command_with_nul: stdio_binding(), {"command": "a\u{0}b"}
        => "command", "NUL";
    args_not_an_array: stdio_binding(), {"args": "--root /srv"}
        => "args", "must be an array of strings, not a string";
    args_item_not_a_string: stdio_binding(), {"args": ["--port", 8080]}
        => "args", "item 1 must be a string, not a number";
    args_item_with_nul: stdio_binding(), {"args": ["a\u{0}"]}
        => "args", "item 0 must not contain NUL";
    env_not_an_array: stdio_binding(), {"env": {"HOME": "/root"}}
        => "env", "must be an array of strings, not an object";
    env_item_not_a_name: stdio_binding(), {"env": ["HOME", "API_KEY=abc"]}
        => "env", "item 1 must be an environment variable name";
    env_duplicate: stdio_binding(), {"env": ["HOME", "HOME"]}
        => "env", "\"HOME\" appears more than once";

    mcp_tool_missing: http_binding(), {"mcp_tool": null}
        => "mcp_tool", "missing";
    mcp_tool_empty: http_binding(), {"mcp_tool": ""}
        => "mcp_tool", "must not be empty";
    mcp_tool_not_a_string: http_binding(), {"mcp_tool": false}
        => "mcp_tool", "must be a string, not a boolean";

    tenants_missing: http_binding(), {"tenants": null}
        => "tenants", "missing";
    tenants_empty: http_binding(), {"tenants": []}
        => "tenants", "at least one tenant";
    tenants_a_string: http_binding(), {"tenants": "local"}
        => "tenants", "must be an array of strings, not a string";
    tenants_item_empty: http_binding(), {"tenants": ["local", ""]}
        => "tenants", "item 1 must not be empty";
    tenants_item_not_a_string: http_binding(), {"tenants": [7]}
        => "tenants", "item 0 must be a string, not a number";
    tenants_duplicate: http_binding(), {"tenants": ["a", "b", "a"]}
        => "tenants", "\"a\" appears more than once";

    timeout_zero: http_binding(), {"timeout_seconds": 0}
        => "timeout_seconds", "must be between 1 and 86400";
    timeout_over_a_day: http_binding(), {"timeout_seconds": 86401}
        => "timeout_seconds", "must be between 1 and 86400";
    timeout_negative: http_binding(), {"timeout_seconds": -5}
        => "timeout_seconds", "must be between 1 and 86400";
    timeout_fraction: http_binding(), {"timeout_seconds": 1.5}
        => "timeout_seconds", "must be an integer between 1 and 86400";
    timeout_float_integer: http_binding(), {"timeout_seconds": 300.0}
        => "timeout_seconds", "without a fraction";
    timeout_string: http_binding(), {"timeout_seconds": "300"}
        => "timeout_seconds", "must be an integer, not a string";
    max_output_zero: http_binding(), {"max_output_bytes": 0}
        => "max_output_bytes", "must be between 1 and 1073741824";
    max_output_over_a_gib: http_binding(), {"max_output_bytes": 1_073_741_825_u64}
        => "max_output_bytes", "must be between 1 and 1073741824";
    max_output_huge: http_binding(), {"max_output_bytes": u64::MAX}
        => "max_output_bytes", "must be between 1 and 1073741824";
    max_output_bool: http_binding(), {"max_output_bytes": true}
        => "max_output_bytes", "must be an integer, not a boolean";

    tls_not_an_object: http_binding(), {"tls": "platform"}
        => "tls", "must be an object, not a string";
    tls_on_plain_http: http_binding(), {"url": "http://localhost:8080/mcp", "tls": {}}
        => "tls", "only allowed with an https:// `url`";
    tls_on_stdio: stdio_binding(), {"tls": {}}
        => "tls", "only allowed with `url`";
    tls_unknown_member: http_binding(), {"tls": {"ca": "/etc/ca.pem"}}
        => "tls.ca", "unknown field (`tls` has only: roots, ca_file";
    tls_roots_unknown: http_binding(), {"tls": {"roots": "system"}}
        => "tls.roots", "must be \"webpki\" (the bundled roots) or \"platform\"";
    tls_roots_not_a_string: http_binding(), {"tls": {"roots": ["webpki"]}}
        => "tls.roots", "must be a string, not an array";
    tls_roots_with_ca_file: http_binding(), {"tls": {"roots": "webpki", "ca_file": "/etc/ca.pem"}}
        => "tls.ca_file", "not with `roots`";
    tls_ca_file_relative: http_binding(), {"tls": {"ca_file": "certs/ca.pem"}}
        => "tls.ca_file", "must be an absolute path";
    tls_ca_file_empty: http_binding(), {"tls": {"ca_file": ""}}
        => "tls.ca_file", "must not be empty";
    tls_ca_file_nul: http_binding(), {"tls": {"ca_file": "/etc/ca\u{0}.pem"}}
        => "tls.ca_file", "NUL";
    tls_ca_file_null: http_binding(), {"tls": {"ca_file": Value::Null}}
        => "tls.ca_file", "must be a string, not null";
    tls_extra_with_ca_file: http_binding(),
        {"tls": {"ca_file": "/etc/ca.pem", "extra_ca_file": "/etc/more.pem"}}
        => "tls.extra_ca_file", "not with `ca_file`";
    tls_extra_relative: http_binding(), {"tls": {"extra_ca_file": "more.pem"}}
        => "tls.extra_ca_file", "must be an absolute path";
    tls_cert_without_key: http_binding(), {"tls": {"client_cert_file": "/etc/c.pem"}}
        => "tls.client_key_file", "missing";
    tls_key_without_cert: http_binding(), {"tls": {"client_key_file": "/etc/c.key"}}
        => "tls.client_cert_file", "missing";
    tls_key_relative: http_binding(),
        {"tls": {"client_cert_file": "/etc/c.pem", "client_key_file": "c.key"}}
        => "tls.client_key_file", "must be an absolute path";

    proxy_on_stdio: stdio_binding(), {"proxy": "none"}
        => "proxy", "only allowed with `url`";
    proxy_not_a_string: http_binding(), {"proxy": {"url": "http://proxy:3128"}}
        => "proxy", "must be a string, not an object";
    proxy_https_scheme: http_binding(), {"proxy": "https://proxy:3128"}
        => "proxy", "must be \"none\" or an http:// proxy URL";
    proxy_without_scheme: http_binding(), {"proxy": "proxy:3128"}
        => "proxy", "must be \"none\" or an http:// proxy URL";
    proxy_bad_port: http_binding(), {"proxy": "http://proxy:0"}
        => "proxy", "an invalid port";
    proxy_with_path: http_binding(), {"proxy": "http://proxy:3128/x"}
        => "proxy", "must not have a path";
    proxy_env_word_is_not_a_value: http_binding(), {"proxy": "env"}
        => "proxy", "must be \"none\" or an http:// proxy URL";
}

#[test]
fn proxy_credentials_are_refused_unquoted() {
    let error = refused(&json!([with(
        http_binding(),
        json!({"proxy": "http://alice:pr0xyS3cret@proxy:3128"})
    )]));
    assert_eq!(error.field.as_deref(), Some("proxy"), "{error}");
    assert!(
        error.message.contains("must not contain credentials"),
        "{error}"
    );
    assert!(!error.to_string().contains("pr0xyS3cret"), "{error}");
    assert!(!error.to_string().contains("alice"), "{error}");
}

#[test]
fn tls_and_proxy_round_trip() {
    use super::{ProxySetting, TlsSettings};
    use crate::transport::http::{ClientCert, Roots};
    let binding = accepted(with(
        http_binding(),
        json!({
            "tls": {
                "ca_file": "/etc/mcp/ca.pem",
                "client_cert_file": "/etc/mcp/client.pem",
                "client_key_file": "/etc/mcp/client.key",
            },
            "proxy": "http://proxy.internal:3128",
        }),
    ));
    let Server::Http { tls, proxy, .. } = &binding.server else {
        panic!("an HTTP binding");
    };
    assert_eq!(
        tls.as_ref(),
        Some(&TlsSettings {
            roots: Roots::CaFile("/etc/mcp/ca.pem".into()),
            extra_ca_file: None,
            client_cert: Some(ClientCert {
                cert_file: "/etc/mcp/client.pem".into(),
                key_file: "/etc/mcp/client.key".into(),
            }),
        })
    );
    assert_eq!(
        proxy.as_ref(),
        Some(&ProxySetting::Url("http://proxy.internal:3128".to_owned()))
    );
    let text = serde_json::to_string(&binding).expect("serialize");
    assert!(text.contains(
        r#""token_env":"MCP_API_KEY","tls":{"ca_file":"/etc/mcp/ca.pem","client_cert_file":"/etc/mcp/client.pem","client_key_file":"/etc/mcp/client.key"},"proxy":"http://proxy.internal:3128","tenants""#
    ), "{text}");
    assert_eq!(load_config(&format!("[{text}]")), Ok(vec![binding]));

    for (tls, proxy, expected_tls, expected_proxy) in [
        (
            json!({}),
            json!("none"),
            TlsSettings::default(),
            ProxySetting::Direct,
        ),
        (
            json!({"roots": "platform", "extra_ca_file": "/etc/more.pem"}),
            json!("HTTP://[::1]:8080/"),
            TlsSettings {
                roots: Roots::Platform,
                extra_ca_file: Some("/etc/more.pem".into()),
                client_cert: None,
            },
            ProxySetting::Url("HTTP://[::1]:8080/".to_owned()),
        ),
        (
            json!({"roots": "webpki"}),
            json!("http://proxy"),
            TlsSettings::default(),
            ProxySetting::Url("http://proxy".to_owned()),
        ),
    ] {
        let binding = accepted(with(http_binding(), json!({"tls": tls, "proxy": proxy})));
        let Server::Http { tls, proxy, .. } = &binding.server else {
            panic!("an HTTP binding");
        };
        assert_eq!(tls.as_ref(), Some(&expected_tls));
        assert_eq!(proxy.as_ref(), Some(&expected_proxy));
        let text = serde_json::to_string(&binding).expect("serialize");
        assert_eq!(
            load_config(&format!("[{text}]")),
            Ok(vec![binding]),
            "{text}"
        );
    }
}

#[test]
fn tls_field_names_the_file() {
    use super::TlsSettings;
    use crate::transport::http::{ClientCert, Roots};
    let tls = TlsSettings {
        roots: Roots::CaFile("/a".into()),
        extra_ca_file: Some("/b".into()),
        client_cert: Some(ClientCert {
            cert_file: "/c".into(),
            key_file: "/d".into(),
        }),
    };
    for (path, field) in [
        ("/a", "tls.ca_file"),
        ("/b", "tls.extra_ca_file"),
        ("/c", "tls.client_cert_file"),
        ("/d", "tls.client_key_file"),
        ("/e", "tls"),
    ] {
        assert_eq!(tls.field_for(std::path::Path::new(path)), field);
    }
}

#[test]
fn header_env_loads_prints_back_and_round_trips() {
    let binding = accepted(with(
        http_binding(),
        json!({"header_env": {"X-Tenant": "MCP_TENANT", "X-Api-Key": "_KEY_2"}}),
    ));
    let Server::Http { header_env, .. } = &binding.server else {
        panic!("{binding:?}");
    };
    assert_eq!(
        header_env,
        &BTreeMap::from([
            ("X-Api-Key".to_owned(), "_KEY_2".to_owned()),
            ("X-Tenant".to_owned(), "MCP_TENANT".to_owned()),
        ])
    );
    let text = serde_json::to_string(&binding).expect("serialize");
    assert!(
        text.contains(
            r#""mcp_tool":"search","token_env":"MCP_API_KEY","header_env":{"X-Api-Key":"_KEY_2","X-Tenant":"MCP_TENANT"},"tenants":["local"]"#
        ),
        "{text}"
    );
    assert_eq!(load_config(&format!("[{text}]")), Ok(vec![binding.clone()]));
    assert_eq!(Binding::from_json(&binding.to_json()), Ok(binding));
    // Absent or empty, nothing is printed.
    for edits in [json!({}), json!({"header_env": {}})] {
        let binding = accepted(with(http_binding(), edits));
        assert!(
            matches!(&binding.server, Server::Http { header_env, .. } if header_env.is_empty())
        );
        let text = serde_json::to_string(&binding).expect("serialize");
        assert!(!text.contains("header_env"), "{text}");
    }
    // Ordinary header names are fine, whatever their case.
    accepted(with(
        http_binding(),
        json!({"header_env": {"x-mcp-tenant": "A", "X-API-KEY": "B", "Cookie": "C"}}),
    ));
}

#[test]
fn header_env_bounds_its_size() {
    let many: serde_json::Map<String, Value> = (0..=super::MAX_HEADER_ENV)
        .map(|i| (format!("X-H{i}"), json!(format!("V{i}"))))
        .collect();
    let error = refused(&json!([with(http_binding(), json!({"header_env": many}))]));
    assert_eq!(error.field.as_deref(), Some("header_env"));
    assert!(error.message.contains("at most 32"), "{error}");
    let mut fewer = many;
    fewer.remove("X-H0");
    accepted(with(http_binding(), json!({"header_env": fewer})));
}

#[test]
fn header_env_never_quotes_what_is_not_a_variable_name() {
    // A value pasted where its variable's name belongs must not be echoed.
    for value in ["Bearer s3cret-value", "s3cret=1", "s3cret\n"] {
        let error = refused(&json!([with(
            http_binding(),
            json!({"header_env": {"X-Api-Key": value}})
        )]));
        assert_eq!(error.field.as_deref(), Some("header_env"));
        assert!(error.message.contains("X-Api-Key"), "{error}");
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }
}

/// `"output_schema": null` is refused (a present field must have its type); `with()` cannot set
/// null, so this case edits the object directly.
#[test]
fn output_schema_null_is_refused() {
    let mut binding = http_binding();
    if let Value::Object(object) = &mut binding {
        object.insert("output_schema".to_owned(), Value::Null);
    }
    let error = refused(&json!([binding]));
    assert_eq!(
        error.to_string(),
        "binding `search`: field `output_schema`: must be a JSON Schema object, not null"
    );
}

#[test]
fn timeout_null_is_refused() {
    let mut binding = http_binding();
    if let Value::Object(object) = &mut binding {
        object.insert("timeout_seconds".to_owned(), Value::Null);
    }
    let error = refused(&json!([binding]));
    assert_eq!(
        error.to_string(),
        "binding `search`: field `timeout_seconds`: must be an integer, not null"
    );
}

#[test]
fn spec_example_loads_and_prints_back() {
    let bindings = load_config(SPEC_EXAMPLE).expect("SPEC example");
    assert_eq!(
        bindings,
        vec![Binding {
            name: "search".to_owned(),
            description: "Search the knowledge base.".to_owned(),
            input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
            output_schema: None,
            server: Server::Http {
                url: "https://SERVER/mcp".to_owned(),
                token_env: Some("MCP_API_KEY".to_owned()),
                tls: None,
                proxy: None,
                header_env: BTreeMap::new(),
                auth: None,
            },
            mcp_tool: "search".to_owned(),
            tenants: vec!["local".to_owned()],
            timeout_seconds: 300,
            max_output_bytes: 1_048_576,
            task_support: None,
        }]
    );
    let expected: Value = serde_json::from_str(SPEC_EXAMPLE).expect("JSON");
    assert_eq!(Value::from(vec![bindings[0].to_json()]), expected);
    // Serializing the binding writes the members in SPEC.md's order.
    assert_eq!(
        serde_json::to_string(&bindings[0]).expect("serialize"),
        concat!(
            r#"{"name":"search","description":"Search the knowledge base.","#,
            r#""input_schema":{"properties":{"query":{"type":"string"}},"required":["query"],"type":"object"},"#,
            r#""url":"https://SERVER/mcp","mcp_tool":"search","token_env":"MCP_API_KEY","#,
            r#""tenants":["local"],"timeout_seconds":300,"max_output_bytes":1048576}"#
        )
    );
}

#[test]
fn defaults_apply() {
    let binding = accepted(http_binding());
    assert_eq!(binding.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
    assert_eq!(binding.max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES);
    assert_eq!(binding.output_schema, None);
    assert_eq!(binding.to_json()["timeout_seconds"], json!(300));
    assert_eq!(binding.to_json()["max_output_bytes"], json!(1_048_576));
}

#[test]
fn host_config_tools_array_is_read_and_other_members_ignored() {
    let config = json!({
        "model": "some-model",
        "inspect_session": true,
        "tools": [http_binding(), stdio_binding()],
        "limits": {"anything": [1, 2]}
    });
    let bindings = parse_config(&config).expect("host config");
    assert_eq!(bindings.len(), 2);
    assert_eq!(bindings[0].name, "search");
    assert_eq!(bindings[1].name, "fs_read");
    assert_eq!(parse_config(&json!({"tools": []})), Ok(vec![]));
    assert_eq!(load_config("[]"), Ok(vec![]));
}

#[test]
fn stdio_binding_loads_and_round_trips() {
    let binding = accepted(stdio_binding());
    assert_eq!(
        binding.server,
        Server::Stdio {
            command: "mcp-server-filesystem".to_owned(),
            args: vec!["--root".to_owned(), "/srv/docs".to_owned()],
            env: vec!["HOME".to_owned(), "LANG".to_owned()],
        }
    );
    assert_eq!(binding.description, "");
    assert_eq!(
        serde_json::to_string(&binding).expect("serialize"),
        concat!(
            r#"{"name":"fs_read","description":"","input_schema":{"type":"object"},"#,
            r#""command":"mcp-server-filesystem","args":["--root","/srv/docs"],"env":["HOME","LANG"],"#,
            r#""mcp_tool":"read_file","tenants":["a","b"],"timeout_seconds":300,"max_output_bytes":1048576}"#
        )
    );
    assert_eq!(Binding::from_json(&binding.to_json()), Ok(binding.clone()));
    // `args` and `env` may be left out.
    let bare = accepted(with(stdio_binding(), json!({"args": null, "env": null})));
    assert_eq!(
        bare.server,
        Server::Stdio {
            command: "mcp-server-filesystem".to_owned(),
            args: vec![],
            env: vec![],
        }
    );
}

#[test]
fn everything_round_trips_with_output_schema_and_limits() {
    let binding = accepted(with(
        http_binding(),
        json!({
            "name": "docs_search",
            "token_env": null,
            "output_schema": {"type": "object", "properties": {"hits": {"type": "array"}}},
            "timeout_seconds": 86400,
            "max_output_bytes": 1_073_741_824_u64,
        }),
    ));
    assert_eq!(binding.timeout_seconds, 86_400);
    assert_eq!(binding.max_output_bytes, 1_073_741_824);
    assert!(matches!(
        &binding.server,
        Server::Http {
            token_env: None,
            ..
        }
    ));
    let text = serde_json::to_string(&binding).expect("serialize");
    assert!(text.ends_with(
        r#""mcp_tool":"search","tenants":["local"],"timeout_seconds":86400,"max_output_bytes":1073741824,"output_schema":{"properties":{"hits":{"type":"array"}},"type":"object"}}"#
    ), "{text}");
    assert!(!text.contains("token_env"), "{text}");
    assert_eq!(load_config(&format!("[{text}]")), Ok(vec![binding]));
}

#[test]
fn minimum_limits_accepted() {
    let binding = accepted(with(
        http_binding(),
        json!({"timeout_seconds": 1, "max_output_bytes": 1}),
    ));
    assert_eq!((binding.timeout_seconds, binding.max_output_bytes), (1, 1));
}

#[test]
fn good_urls_are_accepted() {
    for url in [
        "https://mcp.example.com/mcp",
        "http://localhost:8080/mcp",
        "http://127.0.0.1:3000",
        "http://[::1]:8000/mcp",
        "https://[2001:db8::1]/mcp",
        "HTTPS://Example.COM/mcp?x=1",
        "https://xn--bcher-kva.example/mcp/",
        "https://my_host.internal/mcp",
    ] {
        let binding = accepted(with(http_binding(), json!({"url": url})));
        assert!(
            matches!(&binding.server, Server::Http { url: u, .. } if u == url),
            "{url}"
        );
    }
}

#[test]
fn url_errors_never_quote_the_url() {
    for url in [
        "https://user:s3cret@example.com/mcp",
        "https://s3cret@example.com/mcp",
        "https://example.com/mcp#s3cret",
        "ftp://s3cret.example.com/",
        "https://ex ample.com/s3cret",
    ] {
        let error = refused(&json!([with(http_binding(), json!({"url": url}))]));
        assert_eq!(error.field.as_deref(), Some("url"));
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }
}

#[test]
fn names_follow_the_rule() {
    for name in ["a", "docs_search", "get-sum", "Tool_9", &"x".repeat(64)] {
        assert_eq!(
            accepted(with(http_binding(), json!({"name": name}))).name,
            name
        );
    }
    for (name, fragment) in [
        (json!(""), "must be 1 to 64 characters"),
        (json!("x".repeat(65)), "must be 1 to 64 characters"),
        (json!("docs search"), "must be 1 to 64 characters"),
        (json!("docs.search"), "must be 1 to 64 characters"),
        (json!("café"), "must be 1 to 64 characters"),
        (json!(42), "must be a string, not a number"),
    ] {
        let error = refused(&json!([
            http_binding(),
            with(http_binding(), json!({"name": name}))
        ]));
        assert_eq!(error.binding.as_deref(), Some("#1"), "{error}");
        assert_eq!(error.field.as_deref(), Some("name"), "{error}");
        assert!(error.message.contains(fragment), "{error}");
    }
    let error = refused(&json!([with(http_binding(), json!({"name": null}))]));
    assert_eq!(error.to_string(), "binding #0: field `name`: missing");
}

#[test]
fn names_must_be_unique() {
    let error = refused(&json!([
        http_binding(),
        stdio_binding(),
        with(stdio_binding(), json!({"name": "search"}))
    ]));
    assert_eq!(
        error.to_string(),
        "binding `search`: field `name`: duplicate name: bindings #0 and #2 are both called `search`"
    );
    // Renaming one makes the config valid: names, not `mcp_tool`s, must differ.
    let bindings = parse_config(&json!([
        http_binding(),
        with(http_binding(), json!({"name": "docs_search"}))
    ]))
    .expect("renamed");
    assert_eq!(bindings[0].mcp_tool, bindings[1].mcp_tool);
    // Names are compared exactly.
    parse_config(&json!([
        http_binding(),
        with(http_binding(), json!({"name": "Search"}))
    ]))
    .expect("case differs");
}

#[test]
fn name_is_checked_before_unknown_members() {
    let error = refused(&json!([with(
        http_binding(),
        json!({"name": "a b", "inspect_session": true})
    )]));
    assert_eq!(error.field.as_deref(), Some("name"));
    let error = refused(&json!([with(
        http_binding(),
        json!({"inspect_session": true})
    )]));
    assert_eq!(
        error.to_string(),
        "binding `search`: field `inspect_session`: not supported on an MCP binding: an MCP \
         server's session cannot be inspected (each call runs in a fresh MCP session); remove \
         the field"
    );
}

#[test]
fn unknown_field_names_are_escaped_and_cut() {
    let long = format!("x\n{}", "y".repeat(200));
    let error = refused(&json!([with(http_binding(), json!({ long: 1 }))]));
    let field = error.field.expect("field");
    assert!(field.starts_with("x\\ny"), "{field}");
    assert!(field.chars().count() <= 65, "{field}");
}

#[test]
fn config_shape_errors() {
    let cases = [
        ("", "not valid JSON"),
        ("[{]", "not valid JSON"),
        (
            "\"tools\"",
            "a config must be an array of bindings or an object with a `tools` array, not a string",
        ),
        ("null", "not null"),
        (
            "{}",
            "field `tools`: missing: a config object holds its bindings in a `tools` array",
        ),
        (
            r#"{"tools": {}}"#,
            "field `tools`: must be an array of bindings, not an object",
        ),
        (
            "[1]",
            "binding #0: a binding must be a JSON object, not a number",
        ),
    ];
    for (text, expected) in cases {
        let error = load_config(text).expect_err(text);
        assert!(error.to_string().contains(expected), "{text}: {error}");
        assert_eq!(error.binding.is_some(), text == "[1]", "{text}");
    }
    let error = refused(&json!([
        http_binding(),
        stdio_binding(),
        [],
        stdio_binding()
    ]));
    assert_eq!(
        error.to_string(),
        "binding #2: a binding must be a JSON object, not an array"
    );
}

#[test]
fn display_forms() {
    let error = ConfigError {
        binding: Some("search".to_owned()),
        field: Some("timeout_seconds".to_owned()),
        message: "must be between 1 and 86400".to_owned(),
    };
    assert_eq!(
        error.to_string(),
        "binding `search`: field `timeout_seconds`: must be between 1 and 86400"
    );
    let error = ConfigError {
        binding: Some("#3".to_owned()),
        field: None,
        message: "m".to_owned(),
    };
    assert_eq!(error.to_string(), "binding #3: m");
    let error = ConfigError {
        binding: None,
        field: None,
        message: "m".to_owned(),
    };
    assert_eq!(error.to_string(), "m");
}

#[test]
fn first_error_in_a_binding_is_reported_and_later_bindings_wait() {
    // The first binding is fine; the second has two problems: the earlier field wins.
    let error = refused(&json!([
        http_binding(),
        with(
            stdio_binding(),
            json!({"tenants": [], "timeout_seconds": 0})
        ),
        with(http_binding(), json!({"name": "third", "url": "nope"}))
    ]));
    assert_eq!(error.binding.as_deref(), Some("fs_read"));
    assert_eq!(error.field.as_deref(), Some("tenants"));
}

#[test]
fn validate_checks_bindings_built_in_code() {
    let mut binding = accepted(http_binding());
    assert_eq!(binding.validate(), Ok(()));
    binding.timeout_seconds = 0;
    assert_eq!(
        binding.validate().map_err(|e| e.to_string()),
        Err("binding `search`: field `timeout_seconds`: must be between 1 and 86400".to_owned())
    );
    binding.timeout_seconds = 10;
    binding.server = Server::Http {
        url: "https://k:v@example.com/".to_owned(),
        token_env: None,
        tls: None,
        proxy: None,
        header_env: BTreeMap::new(),
        auth: None,
    };
    assert_eq!(
        binding.validate().map_err(|e| e.field),
        Err(Some("url".to_owned()))
    );
    binding.server = Server::Http {
        url: "https://example.com/".to_owned(),
        token_env: None,
        tls: None,
        proxy: None,
        header_env: BTreeMap::from([("Mcp-Session-Id".to_owned(), "SID".to_owned())]),
        auth: None,
    };
    assert_eq!(
        binding.validate().map_err(|e| e.field),
        Err(Some("header_env".to_owned()))
    );
    binding.server = Server::Http {
        url: "https://k:v@example.com/".to_owned(),
        token_env: None,
        tls: None,
        proxy: None,
        header_env: BTreeMap::new(),
        auth: None,
    };
    assert_eq!(
        binding.validate().map_err(|e| e.field),
        Err(Some("url".to_owned()))
    );
    binding.server = Server::Stdio {
        command: "srv".to_owned(),
        args: vec![],
        env: vec!["NOT VALID".to_owned()],
    };
    assert_eq!(
        binding.validate().map_err(|e| e.field),
        Err(Some("env".to_owned()))
    );
    binding.name = "bad name".to_owned();
    assert_eq!(
        binding.validate().map_err(|e| (e.binding, e.field)),
        Err((Some("#0".to_owned()), Some("name".to_owned())))
    );
}

#[test]
fn peer_capture_tool_schemas_make_valid_bindings() {
    // input and output schemas from tests/data/peer-captures/*/03-tools-list.txt.
    let binding = accepted(with(
        http_binding(),
        json!({
            "name": "weather",
            "mcp_tool": "weather",
            "input_schema": {"properties": {"city": {"title": "City", "type": "string"}},
                "required": ["city"], "type": "object", "title": "weatherArguments"},
            "output_schema": {"properties": {"city": {"description": "City name as given", "title": "City", "type": "string"},
                "temperature_c": {"description": "Temperature in Celsius", "title": "Temperature C", "type": "number"},
                "conditions": {"description": "Weather conditions", "title": "Conditions", "type": "string"},
                "humidity": {"description": "Relative humidity in percent", "title": "Humidity", "type": "integer"}},
                "required": ["city", "temperature_c", "conditions", "humidity"], "type": "object",
                "description": "Structured weather report.", "title": "Weather"}
        }),
    ));
    assert!(binding.output_schema.is_some());
    accepted(with(
        http_binding(),
        json!({
            "name": "get-structured-content",
            "output_schema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"temperature": {"type": "number"}}, "required": ["temperature"],
                "additionalProperties": false}
        }),
    ));
}

/// An HTTP binding with `auth` instead of `token_env`.
fn auth_binding(auth: Value) -> Value {
    with(http_binding(), json!({"token_env": null, "auth": auth}))
}

#[test]
fn auth_blocks_load_and_round_trip() {
    use super::{AuthSettings, ClientCredential, SecretRef};
    let cases = [
        (
            json!({"grant": "client_credentials", "client_id": "host-1",
                   "client_secret_env": "MCP_CLIENT_SECRET", "scope": "mcp:tools other",
                   "token_endpoint_auth_method": "client_secret_post"}),
            AuthSettings::ClientCredentials {
                client_id: "host-1".into(),
                credential: ClientCredential::SecretEnv("MCP_CLIENT_SECRET".into()),
                scope: Some("mcp:tools other".into()),
                token_endpoint_auth_method: Some("client_secret_post".into()),
                dpop: false,
            },
        ),
        (
            json!({"grant": "client_credentials", "client_id": "host-1",
                   "client_secret_file": "/run/secrets/mcp"}),
            AuthSettings::client_credentials(
                "host-1",
                ClientCredential::SecretFile("/run/secrets/mcp".into()),
            ),
        ),
        (
            json!({"grant": "client_credentials", "client_id": "host-1",
                   "private_key_file": "/etc/mcp/key.pem",
                   "token_endpoint_auth_method": "private_key_jwt"}),
            AuthSettings::ClientCredentials {
                client_id: "host-1".into(),
                credential: ClientCredential::PrivateKeyFile("/etc/mcp/key.pem".into()),
                scope: None,
                token_endpoint_auth_method: Some("private_key_jwt".into()),
                dpop: false,
            },
        ),
        (
            json!({"grant": "client_credentials", "client_id": "host-1",
                   "private_key_env": "MCP_KEY_PEM"}),
            AuthSettings::client_credentials(
                "host-1",
                ClientCredential::PrivateKeyEnv("MCP_KEY_PEM".into()),
            ),
        ),
        (
            json!({"grant": "authorization_code", "token_store": "/home/op/.mcp/tokens.json"}),
            AuthSettings::authorization_code("/home/op/.mcp/tokens.json"),
        ),
        (
            json!({"grant": "client_credentials", "client_id": "host-1",
                   "client_secret_env": "MCP_CLIENT_SECRET", "dpop": true}),
            AuthSettings::ClientCredentials {
                client_id: "host-1".into(),
                credential: ClientCredential::SecretEnv("MCP_CLIENT_SECRET".into()),
                scope: None,
                token_endpoint_auth_method: None,
                dpop: true,
            },
        ),
        (
            json!({"grant": "jwt_bearer", "client_id": "workload-1",
                   "workload_token_file": "/var/run/secrets/tokens/mcp"}),
            AuthSettings::jwt_bearer(
                "workload-1",
                SecretRef::File("/var/run/secrets/tokens/mcp".into()),
            ),
        ),
        (
            json!({"grant": "jwt_bearer", "client_id": "workload-1",
                   "client_secret_file": "/run/secrets/mcp",
                   "workload_token_env": "WORKLOAD_TOKEN", "scope": "mcp:tools",
                   "token_endpoint_auth_method": "client_secret_basic", "dpop": true}),
            AuthSettings::JwtBearer {
                client_id: "workload-1".into(),
                credential: Some(ClientCredential::SecretFile("/run/secrets/mcp".into())),
                workload_token: SecretRef::Env("WORKLOAD_TOKEN".into()),
                scope: Some("mcp:tools".into()),
                token_endpoint_auth_method: Some("client_secret_basic".into()),
                dpop: true,
            },
        ),
        (
            json!({"grant": "enterprise_managed", "client_id": "xaa-client",
                   "client_secret_env": "XAA_SECRET",
                   "idp_token_endpoint": "https://idp.example.com/oauth2/token",
                   "idp_client_id": "idp-client", "idp_client_secret_file": "/run/secrets/idp",
                   "id_token_file": "/run/user/id_token", "dpop": true}),
            AuthSettings::EnterpriseManaged {
                client_id: "xaa-client".into(),
                credential: Some(ClientCredential::SecretEnv("XAA_SECRET".into())),
                idp_token_endpoint: "https://idp.example.com/oauth2/token".into(),
                idp_client_id: "idp-client".into(),
                idp_client_secret: Some(SecretRef::File("/run/secrets/idp".into())),
                id_token: SecretRef::File("/run/user/id_token".into()),
                scope: None,
                token_endpoint_auth_method: None,
                dpop: true,
            },
        ),
    ];
    for (auth, expected) in cases {
        let binding = accepted(auth_binding(auth.clone()));
        let Server::Http {
            auth: Some(loaded),
            token_env: None,
            ..
        } = &binding.server
        else {
            panic!("{:?}", binding.server);
        };
        assert_eq!(loaded, &expected);
        assert_eq!(binding.to_json()["auth"], auth);
        let printed = serde_json::to_string(&binding).unwrap();
        assert!(
            printed.contains(r#""mcp_tool":"search","auth":{"#),
            "auth comes after mcp_tool: {printed}"
        );
        let again = load_config(&format!("[{printed}]")).unwrap();
        assert_eq!(again, vec![binding.clone()]);
        binding.validate().unwrap();
    }
}

#[test]
fn auth_refusals_name_the_binding_and_the_member() {
    let cc = |extra: Value| {
        let mut auth = json!({"grant": "client_credentials", "client_id": "host-1",
                              "client_secret_env": "MCP_CLIENT_SECRET"});
        if let (Value::Object(auth), Value::Object(extra)) = (&mut auth, extra) {
            for (k, v) in extra {
                if v.is_null() {
                    auth.remove(&k);
                } else {
                    auth.insert(k, v);
                }
            }
        }
        auth
    };
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            with(
                http_binding(),
                json!({"auth": {"grant": "authorization_code", "token_store": "/t.json"}}),
            ),
            "auth",
            "not with `token_env`: both would set the Authorization header",
        ),
        (
            with(
                stdio_binding(),
                json!({"auth": {"grant": "authorization_code", "token_store": "/t.json"}}),
            ),
            "auth",
            "only allowed with `url`",
        ),
        (
            auth_binding(json!("client_credentials")),
            "auth",
            "must be an object, not a string",
        ),
        (
            auth_binding(cc(json!({"grant": null}))),
            "auth.grant",
            "missing",
        ),
        (
            auth_binding(cc(json!({"grant": "password"}))),
            "auth.grant",
            "must be \"client_credentials\", \"authorization_code\", \"jwt_bearer\" or \"enterprise_managed\"",
        ),
        (
            auth_binding(cc(json!({"grant": 1}))),
            "auth.grant",
            "must be a string, not a number",
        ),
        (
            auth_binding(cc(json!({"issuer": "x"}))),
            "auth.issuer",
            "unknown field",
        ),
        (
            auth_binding(cc(json!({"client_id": null}))),
            "auth.client_id",
            "missing",
        ),
        (
            auth_binding(cc(json!({"client_id": ""}))),
            "auth.client_id",
            "non-empty",
        ),
        (
            auth_binding(cc(json!({"client_id": 7}))),
            "auth.client_id",
            "must be a string",
        ),
        (
            auth_binding(cc(json!({"client_secret_env": null}))),
            "auth.client_secret_env",
            "missing: name the client's secret or key",
        ),
        (
            auth_binding(cc(json!({"client_secret_file": "/run/s"}))),
            "auth.client_secret_file",
            "give one secret source, not 2 (client_secret_env, client_secret_file)",
        ),
        (
            auth_binding(cc(json!({"private_key_env": "KEY"}))),
            "auth.private_key_env",
            "give one secret source, not 2",
        ),
        (
            auth_binding(cc(json!({"client_secret_env": "s3cr3t value!"}))),
            "auth.client_secret_env",
            "must be the name of an environment variable",
        ),
        (
            auth_binding(cc(
                json!({"client_secret_env": null, "client_secret_file": "run/s"}),
            )),
            "auth.client_secret_file",
            "must be an absolute path",
        ),
        (
            auth_binding(cc(
                json!({"client_secret_env": null, "private_key_file": "key.pem"}),
            )),
            "auth.private_key_file",
            "must be an absolute path",
        ),
        (
            auth_binding(cc(json!({"scope": "a\tb"}))),
            "auth.scope",
            "scope tokens",
        ),
        (
            auth_binding(cc(json!({"scope": ["a"]}))),
            "auth.scope",
            "must be a string, not an array",
        ),
        (
            auth_binding(cc(json!({"token_endpoint_auth_method": "none"}))),
            "auth.token_endpoint_auth_method",
            "must be client_secret_basic, client_secret_post or private_key_jwt",
        ),
        (
            auth_binding(cc(json!({"token_endpoint_auth_method": "private_key_jwt"}))),
            "auth.token_endpoint_auth_method",
            "private_key_jwt does not go with client_secret_env",
        ),
        (
            auth_binding(cc(json!({"token_store": "/t.json"}))),
            "auth.token_store",
            "not with \"grant\": \"client_credentials\"",
        ),
        (
            auth_binding(json!({"grant": "authorization_code"})),
            "auth.token_store",
            "missing",
        ),
        (
            auth_binding(json!({"grant": "authorization_code", "token_store": "tokens.json"})),
            "auth.token_store",
            "must be an absolute path",
        ),
        (
            auth_binding(
                json!({"grant": "authorization_code", "token_store": "/t.json",
                                "client_id": "x"}),
            ),
            "auth.client_id",
            "not with \"grant\": \"authorization_code\"",
        ),
        (
            auth_binding(
                json!({"grant": "authorization_code", "token_store": "/t.json",
                                "dpop": true}),
            ),
            "auth.dpop",
            "not with \"grant\": \"authorization_code\" (DPoP-bound tokens are not kept",
        ),
        (
            auth_binding(cc(json!({"dpop": "yes"}))),
            "auth.dpop",
            "must be true or false",
        ),
        (
            auth_binding(cc(json!({"workload_token_env": "W"}))),
            "auth.workload_token_env",
            "not with \"grant\": \"client_credentials\"",
        ),
        (
            auth_binding(json!({"grant": "jwt_bearer", "client_id": "w"})),
            "auth.workload_token_file",
            "missing: name the workload token",
        ),
        (
            auth_binding(json!({"grant": "jwt_bearer", "client_id": "w",
                                "workload_token_env": "W", "workload_token_file": "/w"})),
            "auth.workload_token_file",
            "give one of workload_token_env and workload_token_file, not both",
        ),
        (
            auth_binding(json!({"grant": "jwt_bearer", "client_id": "w",
                                "workload_token_env": "eyJ s3cr3t"})),
            "auth.workload_token_env",
            "must be the name of an environment variable",
        ),
        (
            auth_binding(json!({"grant": "jwt_bearer", "client_id": "w",
                                "workload_token_file": "w.jwt"})),
            "auth.workload_token_file",
            "must be an absolute path",
        ),
        (
            auth_binding(json!({"grant": "jwt_bearer", "client_id": "w",
                                "workload_token_file": "/w", "token_endpoint_auth_method": "client_secret_post"})),
            "auth.token_endpoint_auth_method",
            "client_secret_post needs a client secret or key",
        ),
        (
            auth_binding(json!({"grant": "jwt_bearer", "client_id": "w",
                                "workload_token_file": "/w", "id_token_file": "/i"})),
            "auth.id_token_file",
            "not with \"grant\": \"jwt_bearer\"",
        ),
        (
            auth_binding(json!({"grant": "enterprise_managed", "client_id": "c",
                                "idp_client_id": "i", "id_token_env": "ID"})),
            "auth.idp_token_endpoint",
            "missing",
        ),
        (
            auth_binding(json!({"grant": "enterprise_managed", "client_id": "c",
                                "idp_token_endpoint": "http://idp.example.com/token",
                                "idp_client_id": "i", "id_token_env": "ID"})),
            "auth.idp_token_endpoint",
            "must be an https URL",
        ),
        (
            auth_binding(json!({"grant": "enterprise_managed", "client_id": "c",
                                "idp_token_endpoint": "https://idp.example.com/token",
                                "id_token_env": "ID"})),
            "auth.idp_client_id",
            "missing",
        ),
        (
            auth_binding(json!({"grant": "enterprise_managed", "client_id": "c",
                                "idp_token_endpoint": "https://idp.example.com/token",
                                "idp_client_id": "i"})),
            "auth.id_token_file",
            "missing: name the user's ID token",
        ),
        (
            auth_binding(json!({"grant": "enterprise_managed", "client_id": "c",
                                "idp_token_endpoint": "https://idp.example.com/token",
                                "idp_client_id": "i", "id_token_env": "ID",
                                "workload_token_env": "W"})),
            "auth.workload_token_env",
            "not with \"grant\": \"enterprise_managed\"",
        ),
    ];
    for (config, field, message) in cases {
        let error = refused(&json!([config]));
        let name = config["name"].as_str().unwrap();
        assert_eq!(error.binding.as_deref(), Some(name), "{error}");
        assert_eq!(error.field.as_deref(), Some(field), "{error}");
        assert!(error.message.contains(message), "{error}");
        assert!(!error.to_string().contains("s3cr3t"), "{error}");
    }
}

#[test]
fn task_support_is_optional_or_required_and_prints_back() {
    let base = |extra: &str| {
        format!(
            r#"[{{"name": "t", "description": "", "input_schema": {{"type": "object"}},
                "url": "https://h/mcp", "mcp_tool": "t", "tenants": ["a"]{extra}}}]"#
        )
    };
    for value in ["optional", "required"] {
        let bindings = load_config(&base(&format!(r#", "task_support": "{value}""#)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            bindings[0].task_support.as_ref().map(|s| s.as_str()),
            Some(value)
        );
        assert_eq!(bindings[0].to_json()["task_support"], json!(value));
    }
    let none = load_config(&base("")).unwrap_or_else(|e| panic!("{e}"));
    assert!(none[0].task_support.is_none());
    assert!(none[0].to_json().get("task_support").is_none());
    for bad in [
        r#", "task_support": "forbidden""#,
        r#", "task_support": true"#,
    ] {
        let error = load_config(&base(bad)).expect_err(bad);
        assert!(error.to_string().contains("task_support"), "{error}");
    }
}
