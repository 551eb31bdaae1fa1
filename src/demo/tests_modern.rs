//! The demo server at protocol 2026-07-28, driven with hand-written HTTP (every rule and
//! refusal) and through the crate's own client; and each of its eras.

use serde_json::{Value, json};

use super::tests::{ACCEPT_BOTH, DEMO_TOOLS_IN_ORDER, Raw, Reply, initialize};
use super::tools::StateKey;
use super::{DemoOptions, DemoServer, Era};
use crate::mcp::modern::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY,
};

const MODERN: &str = "2026-07-28";

/// The `_meta` envelope of a request at `version`, declaring `capabilities`.
fn envelope(version: &str, capabilities: Value) -> Value {
    json!({
        PROTOCOL_VERSION_KEY: version,
        CLIENT_CAPABILITIES_KEY: capabilities,
        CLIENT_INFO_KEY: {"name": "raw-test", "version": "0"},
    })
}

/// A 2026-07-28 POST: the body and the headers a conforming client sends with it.
struct Post {
    headers: Vec<(String, String)>,
    body: String,
}

impl Post {
    /// A request at 2026-07-28 declaring no capability.
    fn new(id: i64, method: &str, params: Value) -> Post {
        Post::with_capabilities(id, method, params, json!({}))
    }

    fn with_capabilities(id: i64, method: &str, mut params: Value, capabilities: Value) -> Post {
        let mut meta = envelope(MODERN, capabilities);
        if let Some(extra) = params.get("_meta").and_then(Value::as_object) {
            for (key, value) in extra {
                meta[key] = value.clone();
            }
        }
        params["_meta"] = meta;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        Post::raw(method, body.to_string())
    }

    /// `body` as it is, with the standard headers for `method`.
    fn raw(method: &str, body: String) -> Post {
        Post {
            headers: vec![
                ("Accept".into(), ACCEPT_BOTH.into()),
                ("Content-Type".into(), "application/json".into()),
                ("MCP-Protocol-Version".into(), MODERN.into()),
                ("Mcp-Method".into(), method.into()),
            ],
            body,
        }
    }

    /// A `tools/call`, with `Mcp-Name`.
    fn call(id: i64, tool: &str, arguments: Value) -> Post {
        Post::new(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .with("Mcp-Name", tool)
    }

    /// The header `name` set to `value` (replacing it, whatever its case).
    fn with(mut self, name: &str, value: &str) -> Post {
        self = self.without(name);
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Another `name: value`, keeping any there is.
    fn also(mut self, name: &str, value: &str) -> Post {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn without(mut self, name: &str) -> Post {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    async fn send(&self, raw: &mut Raw) -> Reply {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        raw.request("POST", "/mcp", &headers, &self.body).await
    }
}

/// The JSON-RPC error of a refusal with `status`, after the checks every 2026-07-28 answer
/// passes (a JSON body, no session id).
fn refusal(reply: &Reply, status: u16, code: i64) -> Value {
    assert_eq!(reply.status, status, "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("mcp-session-id"), None);
    let body = reply.json();
    assert_eq!(body["error"]["code"], code, "{body}");
    body["error"].clone()
}

/// The result of a 2026-07-28 answer (JSON, or the last event of a stream), checked for what
/// every such result carries.
fn result(reply: &Reply) -> Value {
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.header("mcp-session-id"), None);
    let message = match reply.header("content-type") {
        Some("application/json") => reply.json(),
        _ => reply.events().pop().expect("an event"),
    };
    let result = message["result"].clone();
    assert!(result["resultType"].is_string(), "no resultType: {message}");
    assert_eq!(
        result["_meta"][SERVER_INFO_KEY],
        json!({"name": "mcpwire-demo", "version": env!("CARGO_PKG_VERSION")}),
        "{message}"
    );
    result
}

async fn started(era: Era) -> DemoServer {
    DemoServer::start_with_options(DemoOptions {
        era,
        ..DemoOptions::default()
    })
    .await
    .expect("start")
}

#[tokio::test]
async fn discover_answers_with_a_discover_result() {
    let server = DemoServer::start().await.expect("start");
    assert_eq!(server.era(), Era::Both);
    let mut raw = Raw::connect(&server).await;
    let reply = Post::new(1, "server/discover", json!({}))
        .send(&mut raw)
        .await;
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let answer = result(&reply);
    assert_eq!(reply.json()["id"], 1);
    assert_eq!(answer["supportedVersions"], json!([MODERN]));
    assert_eq!(
        answer["capabilities"],
        json!({"tools": {"listChanged": false}})
    );
    assert_eq!(answer["resultType"], "complete");
    assert!(
        answer["instructions"]
            .as_str()
            .is_some_and(|text| text.contains("confirm_delete"))
    );
    assert_eq!(
        (answer["ttlMs"].clone(), answer["cacheScope"].clone()),
        (json!(60000), json!("public"))
    );
    // What the client reads of it.
    let raw_result = serde_json::value::to_raw_value(&answer).unwrap();
    let (verdict, discovered) =
        crate::mcp::modern::era_from_result(&raw_result, &crate::mcp::MODERN);
    assert_eq!(
        verdict,
        crate::mcp::modern::EraVerdict::Modern(crate::mcp::ProtocolVersion::V2026_07_28)
    );
    assert_eq!(
        discovered.unwrap().server_info().unwrap().name,
        "mcpwire-demo"
    );
    let stats = server.stats();
    assert_eq!((stats.sessions_opened, stats.modern_requests), (0, 1));

    // Behind a token the answers are cached per credential.
    let guarded = DemoServer::start_with_options(DemoOptions {
        token: Some("t0ken".into()),
        ..DemoOptions::default()
    })
    .await
    .expect("start");
    let mut raw = Raw::connect(&guarded).await;
    let reply = Post::new(2, "server/discover", json!({}))
        .with("Authorization", "Bearer t0ken")
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["cacheScope"], "private");
}

#[tokio::test]
async fn tools_list_pages_and_every_result_is_stamped() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    for id in 10.. {
        let params = match &cursor {
            Value::Null => json!({}),
            cursor => json!({"cursor": cursor}),
        };
        let reply = Post::new(id, "tools/list", params).send(&mut raw).await;
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let page = result(&reply);
        assert_eq!(page["resultType"], "complete");
        assert_eq!(page["ttlMs"], 60000);
        for tool in page["tools"].as_array().expect("tools") {
            names.push(tool["name"].as_str().expect("a name").to_owned());
        }
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(names, DEMO_TOOLS_IN_ORDER);
    let reply = Post::new(3, "tools/list", json!({"cursor": "nope"}))
        .send(&mut raw)
        .await;
    let error = refusal(&reply, 200, -32602);
    assert_eq!(error["message"], "Invalid params: unknown cursor");

    // Every tool's annotations are valid, and region_echo mirrors its one argument.
    for tool in super::tools::definitions() {
        let declared = crate::mcp::headers::param_headers(&tool["inputSchema"]).expect("valid");
        match tool["name"].as_str() {
            Some("region_echo") => {
                assert_eq!(declared.len(), 1);
                assert_eq!(declared[0].header, "Mcp-Param-Region");
                assert_eq!(declared[0].path, ["region"]);
            }
            _ => assert!(declared.is_empty(), "{tool}"),
        }
    }
}

#[tokio::test]
async fn the_envelope_is_checked() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let bare = |id: i64, params: Value| {
        Post::raw(
            "tools/list",
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
                .to_string(),
        )
    };
    // The header names 2026-07-28 but the body has no envelope at all.
    let reply = bare(1, json!({})).send(&mut raw).await;
    let error = refusal(&reply, 400, -32602);
    assert_eq!(error["data"], json!({"envelope": {"missing": ["_meta"]}}));
    assert_eq!(reply.json()["id"], 1);
    let reply = bare(2, json!({"_meta": {PROTOCOL_VERSION_KEY: MODERN}}))
        .send(&mut raw)
        .await;
    let error = refusal(&reply, 400, -32602);
    assert_eq!(
        error["data"],
        json!({"envelope": {"missing": [CLIENT_CAPABILITIES_KEY]}})
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(CLIENT_CAPABILITIES_KEY)
    );
    for meta in [
        json!({PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: []}),
        json!({PROTOCOL_VERSION_KEY: 20260728, CLIENT_CAPABILITIES_KEY: {}}),
    ] {
        let reply = bare(3, json!({"_meta": meta})).send(&mut raw).await;
        refusal(&reply, 400, -32602);
    }
    let reply = bare(4, json!({"_meta": "2026-07-28"})).send(&mut raw).await;
    refusal(&reply, 400, -32602);

    // A revision the server does not speak, header and body agreeing.
    let mut params = json!({"_meta": envelope("2027-01-01", json!({}))});
    params["cursor"] = Value::Null;
    let reply = bare(5, params)
        .with("MCP-Protocol-Version", "2027-01-01")
        .send(&mut raw)
        .await;
    let error = refusal(&reply, 400, -32022);
    assert_eq!(
        error["data"],
        json!({"supported": [MODERN], "requested": "2027-01-01"})
    );
    assert_eq!(error["message"], "Unsupported protocol version: 2027-01-01");
    // What the client reads of it: a modern server, to be asked again at 2026-07-28.
    let data = error["data"].to_string();
    assert_eq!(
        crate::mcp::modern::era_from_error(-32022, Some(&data), &crate::mcp::MODERN),
        crate::mcp::modern::EraVerdict::Retry(crate::mcp::ProtocolVersion::V2026_07_28)
    );
    assert_eq!(server.stats().sessions_opened, 0);
}

/// Each way a standard header can disagree with the body, refused with 400 and -32020 naming
/// the header.
#[tokio::test]
async fn standard_headers_must_match_the_body() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let list = || Post::new(7, "tools/list", json!({}));
    let echo = || Post::call(8, "echo", json!({"message": "hi"}));
    #[rustfmt::skip]
    let cases: Vec<(&str, Post, &str)> = vec![
        ("no version header", list().without("MCP-Protocol-Version"), "MCP-Protocol-Version"),
        ("another version", list().with("MCP-Protocol-Version", "2025-11-25"), "MCP-Protocol-Version"),
        ("two version headers", list().also("mcp-protocol-version", MODERN), "MCP-Protocol-Version"),
        ("no method header", list().without("Mcp-Method"), "Mcp-Method"),
        ("another method", list().with("Mcp-Method", "tools/call"), "Mcp-Method"),
        ("the method in another case", list().with("Mcp-Method", "Tools/List"), "Mcp-Method"),
        ("no name header", echo().without("Mcp-Name"), "Mcp-Name"),
        ("another name", echo().with("Mcp-Name", "fail"), "Mcp-Name"),
        ("the name encoded wrong", echo().with("Mcp-Name", "=?base64?ZWNobw?="), "Mcp-Name"),
        ("another name, encoded", echo().with("Mcp-Name", "=?base64?ZmFpbA==?="), "Mcp-Name"),
        ("two name headers", echo().also("Mcp-Name", "echo"), "Mcp-Name"),
    ];
    for (case, post, header) in cases {
        let reply = post.send(&mut raw).await;
        let error = refusal(&reply, 400, -32020);
        let message = error["message"].as_str().unwrap();
        assert!(
            message.starts_with("Header mismatch: "),
            "{case}: {message}"
        );
        assert!(message.contains(header), "{case}: {message}");
        assert_eq!(error["data"]["mismatch"]["header"], header, "{case}");
        assert!(reply.json()["id"].is_number(), "{case}");
    }
    // A name sent encoded although it need not be is decoded before comparing.
    let reply = echo()
        .with("Mcp-Name", "=?base64?ZWNobw==?=")
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["content"][0]["text"], "Echo: hi");
    // Header names are compared ignoring case; values are not.
    let reply = echo()
        .without("Mcp-Name")
        .also("mcp-name", "echo")
        .without("Mcp-Method")
        .also("MCP-METHOD", "tools/call")
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["content"][0]["text"], "Echo: hi");

    // A value with bytes no header value may hold (RFC 9110 obs-text) is refused as such.
    let reply = echo().with("Mcp-Name", "\u{e9}cho").send(&mut raw).await;
    let error = refusal(&reply, 400, -32020);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("characters a header value may not"),
        "{error}"
    );
    // An unknown tool is checked by name only, then answered as the 2025 path answers it.
    let reply = Post::call(9, "no_such_tool", json!({}))
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["isError"], true);
}

/// `Mcp-Param-Region` must carry `region`, plain or in the `=?base64?...?=` form, and must
/// not come without it.
#[tokio::test]
async fn param_headers_are_decoded_and_checked() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let region = |region: Value| Post::call(20, "region_echo", json!({"region": region}));
    for (value, header) in [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("Zürich", "=?base64?WsO8cmljaA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("", "=?base64??="),
    ] {
        let reply = region(json!(value))
            .with("Mcp-Param-Region", header)
            .send(&mut raw)
            .await;
        let answer = result(&reply);
        assert_eq!(answer["isError"], false, "{value:?}: {answer}");
        assert_eq!(
            answer["structuredContent"],
            json!({"region": value, "header": header}),
            "{value:?}"
        );
        // The client's encoder makes the same header.
        assert_eq!(crate::mcp::headers::encode_header_value(value), header);
    }
    // Lower-case header names are the same header.
    let reply = region(json!("eu"))
        .also("mcp-param-region", "eu")
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["structuredContent"]["header"], "eu");

    for (case, post) in [
        ("no header", region(json!("eu"))),
        (
            "another value",
            region(json!("eu")).with("Mcp-Param-Region", "us"),
        ),
        (
            "another value, encoded",
            region(json!("Zürich")).with("Mcp-Param-Region", "=?base64?WnVyaWNo?="),
        ),
        (
            "the raw text of an encoded value",
            region(json!("Zürich")).with("Mcp-Param-Region", "Zürich"),
        ),
        (
            "a sentinel-shaped value sent plain",
            region(json!("=?base64?literal?=")).with("Mcp-Param-Region", "=?base64?literal?="),
        ),
        (
            "a header without the argument",
            Post::call(21, "region_echo", json!({})).with("Mcp-Param-Region", "eu"),
        ),
        (
            "two headers",
            region(json!("eu"))
                .with("Mcp-Param-Region", "eu")
                .also("Mcp-Param-Region", "eu"),
        ),
    ] {
        let reply = post.send(&mut raw).await;
        let error = refusal(&reply, 400, -32020);
        assert_eq!(
            error["data"]["mismatch"]["header"], "Mcp-Param-Region",
            "{case}: {error}"
        );
    }
    // A null argument needs no header (and the tool then refuses the arguments).
    let reply = region(Value::Null).send(&mut raw).await;
    let answer = result(&reply);
    assert_eq!(answer["isError"], true, "{answer}");
    // Other tools mirror nothing: an Mcp-Param header they do not declare is ignored.
    let reply = Post::call(22, "echo", json!({"message": "x"}))
        .with("Mcp-Param-Region", "eu")
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["content"][0]["text"], "Echo: x");
}

/// The raw JSON text of member `name` in a JSON text, exactly as written (a string member
/// without nested quotes' trouble: the scan follows escapes).
fn raw_string_member<'a>(text: &'a str, name: &str) -> &'a str {
    let key = format!("\"{name}\":\"");
    let start = text.find(&key).expect("the member") + key.len() - 1;
    let bytes = text.as_bytes();
    let mut end = start + 1;
    while bytes[end] != b'"' {
        end += if bytes[end] == b'\\' { 2 } else { 1 };
    }
    &text[start..=end]
}

#[tokio::test]
async fn confirm_delete_asks_then_completes_with_the_state_echoed() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let elicitation = json!({"elicitation": {}});
    let first = |id: i64, capabilities: Value| {
        let params =
            json!({"name": "confirm_delete", "arguments": {"item": "report \"final\".txt"}});
        Post::with_capabilities(id, "tools/call", params, capabilities)
            .with("Mcp-Name", "confirm_delete")
    };

    // Without form elicitation declared the server may not ask: -32021.
    for capabilities in [
        json!({}),
        json!({"elicitation": {"url": {}}}),
        json!({"sampling": {}}),
    ] {
        let reply = first(30, capabilities.clone()).send(&mut raw).await;
        let error = refusal(&reply, 400, -32021);
        assert_eq!(
            error["data"],
            json!({"requiredCapabilities": {"elicitation": {"form": {}}}}),
            "{capabilities}"
        );
        assert!(error["message"].as_str().unwrap().contains("elicitation"));
    }

    for capabilities in [
        elicitation.clone(),
        json!({"elicitation": {"form": {}, "url": {}}}),
    ] {
        let reply = first(31, capabilities).send(&mut raw).await;
        let asked = result(&reply);
        assert_eq!(asked["resultType"], "input_required", "{asked}");
        let request = &asked["inputRequests"]["confirm"];
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["mode"], "form");
        assert_eq!(
            request["params"]["requestedSchema"]["properties"]["confirm"]["type"],
            "boolean"
        );
        assert!(asked["requestState"].is_string());
    }
    let reply = first(32, elicitation.clone()).send(&mut raw).await;
    let asked = result(&reply);
    let state = asked["requestState"].as_str().expect("a state").to_owned();
    // Opaque to the client, and full of escapes on the wire.
    let body = String::from_utf8(reply.body.clone()).unwrap();
    let raw_state = raw_string_member(&body, "requestState");
    assert!(raw_state.contains("\\\""), "{raw_state}");
    assert!(
        raw_state.contains("\\\\\\\""),
        "the item's quotes, escaped twice: {raw_state}"
    );
    assert_eq!(serde_json::from_str::<String>(raw_state).unwrap(), state);

    // The retry: same params plus the answer and the state spliced in byte for byte.
    let retry = |id: i64, answer: Value, raw_state: &str| {
        let answers = json!({"confirm": answer}).to_string();
        let params = json!({"name": "confirm_delete", "arguments": {"item": "report \"final\".txt"},
                            "_meta": envelope(MODERN, json!({"elicitation": {}}))});
        let mut text = params.to_string();
        text.pop();
        text.push_str(&format!(
            r#","inputResponses":{answers},"requestState":{raw_state}}}"#
        ));
        Post::raw(
            "tools/call",
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{text}}}"#),
        )
        .with("Mcp-Name", "confirm_delete")
    };
    let accept = json!({"action": "accept", "content": {"confirm": true}});
    let reply = retry(33, accept.clone(), raw_state).send(&mut raw).await;
    let done = result(&reply);
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["isError"], false);
    assert_eq!(done["content"][0]["text"], "Deleted report \"final\".txt");
    // The state is not used up: the server keeps nothing (the spec leaves single use to it).
    for (answer, text) in [
        (json!({"action": "accept"}), "Deleted report \"final\".txt"),
        (
            json!({"action": "accept", "content": {"confirm": false}}),
            "Kept report \"final\".txt: the form was accepted without confirming",
        ),
        (
            json!({"action": "decline"}),
            "Kept report \"final\".txt: the user declined",
        ),
        (
            json!({"action": "cancel"}),
            "Kept report \"final\".txt: the user cancelled",
        ),
    ] {
        let reply = retry(34, answer.clone(), raw_state).send(&mut raw).await;
        assert_eq!(result(&reply)["content"][0]["text"], text, "{answer}");
    }
    // The same state escaped another way is the same string, so it verifies too.
    let reescaped = raw_state.replace("\\\"tool\\\"", "\\\"\\u0074ool\\\"");
    assert_ne!(reescaped, raw_state);
    let reply = retry(35, accept.clone(), &reescaped).send(&mut raw).await;
    assert_eq!(
        result(&reply)["content"][0]["text"],
        "Deleted report \"final\".txt"
    );

    // A state changed by one byte, or made for another item, is refused.
    let tampered = {
        let at = raw_state.find("\\\"mac\\\":\\\"").unwrap() + 10;
        let mut bytes = raw_state.as_bytes().to_vec();
        bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
        String::from_utf8(bytes).unwrap()
    };
    let reply = retry(36, accept.clone(), &tampered).send(&mut raw).await;
    let error = refusal(&reply, 200, -32602);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("requestState failed verification")
    );
    let other = serde_json::to_string(&StateKey::new().issue("report \"final\".txt", 0)).unwrap();
    let reply = retry(37, accept.clone(), &other).send(&mut raw).await;
    refusal(&reply, 200, -32602);
    let reply = retry(38, accept.clone(), "42").send(&mut raw).await;
    refusal(&reply, 200, -32602);
    let reply = retry(39, json!({"action": "maybe"}), raw_state)
        .send(&mut raw)
        .await;
    refusal(&reply, 200, -32602);
    // A state for this item presented on another item's call.
    let params = json!({"name": "confirm_delete", "arguments": {"item": "other"},
                        "inputResponses": {"confirm": accept}, "requestState": state});
    let reply = Post::with_capabilities(40, "tools/call", params, elicitation.clone())
        .with("Mcp-Name", "confirm_delete")
        .send(&mut raw)
        .await;
    let error = refusal(&reply, 200, -32602);
    assert!(
        error["message"].as_str().unwrap().contains("another item"),
        "{error}"
    );

    // Without the answer, or without the state, the server asks again.
    let params = json!({"name": "confirm_delete", "arguments": {"item": "report \"final\".txt"},
                        "inputResponses": {}, "requestState": state});
    let reply = Post::with_capabilities(41, "tools/call", params, elicitation.clone())
        .with("Mcp-Name", "confirm_delete")
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["resultType"], "input_required");
    let params = json!({"name": "confirm_delete", "arguments": {"item": "report \"final\".txt"},
                        "inputResponses": {"confirm": {"action": "accept"}}});
    let reply = Post::with_capabilities(42, "tools/call", params, elicitation.clone())
        .with("Mcp-Name", "confirm_delete")
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["resultType"], "input_required");
}

#[test]
fn request_states_are_signed_bound_and_expire() {
    let key = StateKey::new();
    let state = key.issue("a.txt", 1_000);
    assert_eq!(key.verify(&state, "a.txt", 1_000), Ok(()));
    assert_eq!(key.verify(&state, "a.txt", 1_000 + 600_000), Ok(()));
    assert_eq!(
        key.verify(&state, "a.txt", 1_000 + 600_001),
        Err("it has expired")
    );
    assert_eq!(key.verify(&state, "a.txt", 999), Err("it has expired"));
    assert_eq!(
        key.verify(&state, "b.txt", 1_000),
        Err("it was issued for another item")
    );
    assert_eq!(
        StateKey::new().verify(&state, "a.txt", 1_000),
        Err("the signature does not match")
    );
    let moved = state.replace("\"issued_ms\":1000", "\"issued_ms\":2000");
    assert_ne!(moved, state);
    assert_eq!(
        key.verify(&moved, "a.txt", 2_000),
        Err("the signature does not match")
    );
    assert_eq!(
        key.verify("{}", "a.txt", 1_000),
        Err("not a state of this server")
    );
    assert_eq!(
        key.verify("not json", "a.txt", 1_000),
        Err("not a state of this server")
    );
}

#[tokio::test]
async fn methods_2026_07_28_does_not_have_get_404_with_a_json_rpc_error() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    for method in [
        "ping",
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "subscriptions/listen",
        "no/such",
    ] {
        let reply = Post::new(50, method, json!({})).send(&mut raw).await;
        let error = refusal(&reply, 404, -32601);
        assert_eq!(reply.json()["id"], 50, "{method}");
        assert_eq!(error["message"], "Method not found");
        assert_eq!(error["data"], method);
    }
    assert_eq!(server.stats().sessions_opened, 0);
}

#[tokio::test]
async fn notifications_batches_and_sessions_at_2026_07_28() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 1, "_meta": envelope(MODERN, json!({}))}});
    let reply = Post::raw("notifications/cancelled", notification.to_string())
        .send(&mut raw)
        .await;
    assert_eq!(reply.status, 202);
    assert!(reply.body.is_empty());
    assert_eq!(reply.header("mcp-session-id"), None);

    let one = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                     "params": {"_meta": envelope(MODERN, json!({}))}});
    let reply = Post::raw("tools/list", json!([one]).to_string())
        .send(&mut raw)
        .await;
    refusal(&reply, 400, -32600);
    let reply = Post::raw(
        "tools/list",
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned(),
    )
    .send(&mut raw)
    .await;
    refusal(&reply, 400, -32600);

    // A session id, even a live one, means nothing to a request carrying the envelope.
    let (session, _) = initialize(&mut raw, "2025-11-25").await;
    let reply = Post::new(2, "tools/list", json!({}))
        .with("Mcp-Session-Id", &session)
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["tools"][0]["name"], "progress_report");
    let reply = Post::new(3, "ping", json!({}))
        .with("Mcp-Session-Id", &session)
        .send(&mut raw)
        .await;
    refusal(&reply, 404, -32601);
    // And the session still works by the 2025 rules.
    let reply = raw
        .post(
            Some(&session),
            r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
        )
        .await;
    assert_eq!(reply.json()["result"], json!({}));
    let stats = server.stats();
    assert_eq!((stats.sessions_opened, stats.modern_requests), (1, 5));
}

#[tokio::test]
async fn progress_comes_on_the_request_stream() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let params = json!({"name": "progress_report", "arguments": {"steps": 3, "delay_ms": 5},
                        "_meta": {"progressToken": "tok-1"}});
    let reply = Post::new(60, "tools/call", params)
        .with("Mcp-Name", "progress_report")
        .send(&mut raw)
        .await;
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("x-accel-buffering"), Some("no"));
    let events = reply.events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (i, event) in events[..3].iter().enumerate() {
        assert_eq!(event["method"], "notifications/progress");
        assert_eq!(
            event["params"],
            json!({"progressToken": "tok-1", "progress": i + 1, "total": 3,
                   "message": format!("step {} of 3", i + 1)})
        );
    }
    assert_eq!(events[3]["id"], 60);
    let answer = result(&reply);
    assert_eq!(answer["content"][0]["text"], "done after 3 steps");
    // Without a token, no progress.
    let reply = Post::call(61, "progress_report", json!({"steps": 2, "delay_ms": 0}))
        .send(&mut raw)
        .await;
    assert_eq!(reply.events().len(), 1);
}

/// The 2025 rules still hold on the dual-era server, `server/discover` included: unknown there.
#[tokio::test]
async fn without_the_envelope_a_request_is_a_2025_one() {
    let server = DemoServer::start().await.expect("start");
    let mut raw = Raw::connect(&server).await;
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    // Outside a session, as every 2025 request but initialize (2025-11-25, Session Management).
    let reply = raw.post(None, discover).await;
    assert_eq!((reply.status, reply.error_code()), (400, -32000));
    let (session, result) = initialize(&mut raw, "2025-11-25").await;
    assert_eq!(result["protocolVersion"], "2025-11-25");
    let reply = raw.post(Some(&session), discover).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json()["error"],
        json!({"code": -32601, "message": "Method not found", "data": "server/discover"})
    );
    // An initialize offering 2026-07-28 without the envelope is a 2025 one: it gets 2025-11-25.
    let (_, result) = initialize(&mut raw, MODERN).await;
    assert_eq!(result["protocolVersion"], "2025-11-25");
    // The new tools at 2025: no mirrored header, and no way to ask for input.
    let call = |tool: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}})
        .to_string()
    };
    let reply = raw
        .request(
            "POST",
            "/mcp",
            &[
                ("Accept", ACCEPT_BOTH),
                ("Content-Type", "application/json"),
                ("Mcp-Session-Id", &session),
                ("Mcp-Param-Region", "elsewhere"),
            ],
            &call("region_echo", json!({"region": "eu"})),
        )
        .await;
    let events = reply.events();
    assert_eq!(
        events[0]["result"]["structuredContent"],
        json!({"region": "eu", "header": null})
    );
    assert!(events[0]["result"].get("resultType").is_none());
    let reply = raw
        .post(
            Some(&session),
            &call("confirm_delete", json!({"item": "x"})),
        )
        .await;
    let events = reply.events();
    assert_eq!(events[0]["result"]["isError"], true);
    assert!(
        events[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("2026-07-28")
    );
    assert_eq!(server.stats().modern_requests, 0);
}

/// A server speaking 2025 alone does not know the envelope: the probe is refused as a
/// request outside a session (not with a 2026-07-28 error), so a client falls back.
#[tokio::test]
async fn a_2025_only_server_refuses_the_probe_as_a_2025_server_would() {
    let server = started(Era::Legacy).await;
    assert_eq!(server.era(), Era::Legacy);
    let mut raw = Raw::connect(&server).await;
    let reply = Post::new(1, "server/discover", json!({}))
        .send(&mut raw)
        .await;
    assert_eq!((reply.status, reply.error_code()), (400, -32000));
    let body = reply.body.clone();
    let (verdict, _) = classify_probe_error(&body);
    assert!(
        matches!(verdict, crate::mcp::modern::EraVerdict::Legacy(_)),
        "{verdict:?}"
    );
    let (session, result) = initialize(&mut raw, "2025-11-25").await;
    assert_eq!(result["protocolVersion"], "2025-11-25");
    // In a session, the envelope is just more `_meta`: discover is unknown, the rest served.
    let reply = Post::new(2, "server/discover", json!({}))
        .with("Mcp-Session-Id", &session)
        .with("MCP-Protocol-Version", "2025-11-25")
        .send(&mut raw)
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.error_code(), -32601);
    let reply = Post::new(3, "ping", json!({}))
        .with("Mcp-Session-Id", &session)
        .with("MCP-Protocol-Version", "2025-11-25")
        .send(&mut raw)
        .await;
    assert_eq!(reply.json()["result"], json!({}));
    // A 2026 header is a revision it does not speak.
    let reply = Post::new(4, "tools/list", json!({}))
        .with("Mcp-Session-Id", &session)
        .send(&mut raw)
        .await;
    assert_eq!((reply.status, reply.error_code()), (400, -32000));
    assert_eq!(server.stats().modern_requests, 0);
}

/// The era verdict the client's rules give a JSON-RPC error body.
fn classify_probe_error(body: &[u8]) -> (crate::mcp::modern::EraVerdict, i64) {
    let body: Value = serde_json::from_slice(body).expect("JSON");
    let code = body["error"]["code"].as_i64().expect("a code");
    let data = body["error"].get("data").map(Value::to_string);
    (
        crate::mcp::modern::era_from_error(code, data.as_deref(), &crate::mcp::MODERN),
        code,
    )
}

/// A POST with `Accept` and `Content-Type` and then `headers`.
async fn post(raw: &mut Raw, headers: Vec<(&str, &str)>, body: String) -> Reply {
    let mut all = vec![
        ("Accept", ACCEPT_BOTH),
        ("Content-Type", "application/json"),
    ];
    all.extend(headers);
    raw.request("POST", "/mcp", &all, &body).await
}

/// A server speaking 2026-07-28 alone names what it speaks to every 2025 request.
#[tokio::test]
async fn a_2026_only_server_refuses_2025_requests_with_32022() {
    let server = started(Era::Modern).await;
    let mut raw = Raw::connect(&server).await;
    for (offered, requested) in [("2025-11-25", json!("2025-11-25")), (MODERN, json!(MODERN))] {
        let reply = post(&mut raw, vec![], super::tests::init_body(offered)).await;
        let error = refusal(&reply, 400, -32022);
        assert_eq!(
            error["data"],
            json!({"supported": [MODERN], "requested": requested})
        );
        assert_eq!(reply.json()["id"], 1);
    }
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.to_owned();
    let reply = post(
        &mut raw,
        vec![("MCP-Protocol-Version", "2025-11-25")],
        list.clone(),
    )
    .await;
    let error = refusal(&reply, 400, -32022);
    assert_eq!(error["data"]["requested"], "2025-11-25");
    let discover = r#"{"jsonrpc":"2.0","id":3,"method":"server/discover"}"#.to_owned();
    let reply = post(&mut raw, vec![], discover).await;
    let error = refusal(&reply, 400, -32022);
    assert_eq!(error["data"], json!({"supported": [MODERN]}));
    assert_eq!(
        error["message"],
        "Unsupported protocol version: the request did not name a protocol version"
    );
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
    let reply = post(&mut raw, vec![], note).await;
    refusal(&reply, 400, -32022);
    assert!(reply.json()["id"].is_null());
    for method in ["GET", "DELETE"] {
        let reply = raw
            .request(method, "/mcp", &[("Accept", ACCEPT_BOTH)], "")
            .await;
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.header("allow"), Some("POST"));
    }
    // 2026-07-28 itself is served.
    let reply = Post::new(4, "server/discover", json!({}))
        .send(&mut raw)
        .await;
    assert_eq!(result(&reply)["supportedVersions"], json!([MODERN]));
    let stats = server.stats();
    assert_eq!((stats.sessions_opened, stats.modern_requests), (0, 1));
}

#[test]
fn eras_have_names() {
    for (era, name) in [
        (Era::Both, "both"),
        (Era::Legacy, "2025"),
        (Era::Modern, "2026"),
    ] {
        assert_eq!(era.as_str(), name);
        assert_eq!(era.to_string(), name);
        assert_eq!(Era::parse(name), Some(era));
    }
    assert_eq!(Era::parse("2025-11-25"), None);
    assert_eq!(Era::default(), Era::Both);
    let options = DemoOptions {
        token: Some("s3cret".into()),
        era: Era::Modern,
    };
    assert!(!format!("{options:?}").contains("s3cret"));
}

// --- through the crate's client ------------------------------------------------------------

#[cfg(feature = "client")]
mod client {
    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};

    use super::{MODERN, started};
    use crate::ErrorKind;
    use crate::client::{CallOptions, Client, ClientOptions, InputFuture, InputHandler};
    use crate::demo::tests::DEMO_TOOLS_IN_ORDER;
    use crate::demo::{DemoServer, Era, lock};
    use crate::mcp::modern::InputRequest;
    use crate::mcp::{ClientCapabilities, ProtocolVersion};
    use crate::session::EraPolicy;
    use crate::transport::http::{HttpConfig, HttpPool, TlsOptions};

    /// A client of `server` whose wire trace is kept in `log`.
    async fn connect(
        server: &DemoServer,
        options: ClientOptions,
    ) -> (Result<Client, crate::Error>, Arc<Mutex<Vec<String>>>) {
        let pool = HttpPool::new(&TlsOptions::default()).expect("a pool");
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = log.clone();
        let mut config = HttpConfig::new(&server.url()).expect("a config");
        config.wire_log = Some(Arc::new(move |line: &str| {
            lock(&sink).push(line.to_owned())
        }));
        (Client::connect_http(&pool, config, options).await, log)
    }

    fn arguments(value: Value) -> Option<crate::mcp::JsonObject> {
        value.as_object().cloned()
    }

    /// Calls `tool` with `arguments` and the default options.
    async fn call(
        client: &Client,
        tool: &str,
        arguments: Value,
    ) -> Result<crate::mcp::CallToolResult, crate::Error> {
        let arguments = arguments.as_object().cloned();
        client
            .call_tool(tool, arguments, CallOptions::default())
            .await
    }

    /// Calls `confirm_delete` for `item`.
    async fn delete(
        client: &Client,
        item: &str,
    ) -> Result<crate::mcp::CallToolResult, crate::Error> {
        call(client, "confirm_delete", json!({"item": item})).await
    }

    #[tokio::test]
    async fn the_client_negotiates_2026_07_28_and_calls_every_kind_of_tool() {
        let server = DemoServer::start().await.expect("start");
        let (client, log) = connect(&server, ClientOptions::default()).await;
        let client = client.expect("connect");
        assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
        assert!(client.protocol_version().is_modern());
        assert_eq!(client.session_id(), None);
        assert_eq!(
            client.server().expect("discovered").server_info.name,
            "mcpwire-demo"
        );
        let tools = client.list_tools().await.expect("tools");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, DEMO_TOOLS_IN_ORDER);

        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = CallOptions {
            on_progress: Some(Box::new(move |p| lock(&sink).push(p.progress))),
            ..CallOptions::default()
        };
        let result = client
            .call_tool(
                "progress_report",
                arguments(json!({"steps": 3, "delay_ms": 5})),
                options,
            )
            .await
            .expect("a result");
        assert_eq!(result.content[0].as_text(), Some("done after 3 steps"));
        assert_eq!(*lock(&seen), [1.0, 2.0, 3.0]);
        let result = call(&client, "weather", json!({"city": "Lisbon"}))
            .await
            .expect("a result");
        assert_eq!(
            result.structured_content,
            Some(crate::demo::tools::weather_report("Lisbon"))
        );

        // The header the client mirrored, as the server received it.
        for (region, header) in [
            ("us-west1", "us-west1"),
            ("Zürich", "=?base64?WsO8cmljaA==?="),
        ] {
            let result = call(&client, "region_echo", json!({"region": region}))
                .await
                .expect("a result");
            assert!(!result.is_error(), "{result:?}");
            assert_eq!(
                result.structured_content,
                Some(json!({"region": region, "header": header}))
            );
        }
        // No ping at this revision: refused without being sent.
        let error = client.ping().await.expect_err("no ping at 2026-07-28");
        assert_eq!(error.kind(), ErrorKind::Refused, "{error}");
        client.close().await;

        let stats = server.stats();
        assert_eq!((stats.sessions_opened, stats.sessions_deleted), (0, 0));
        // The probe, five pages, four calls; no DELETE, no GET, no initialize.
        assert_eq!(stats.modern_requests, 10, "{stats:?}");
        assert_eq!(stats.requests, 10, "{stats:?}");
        let log = lock(&log).clone();
        assert!(
            log.iter().all(|line| !line.contains("\"initialize\"")),
            "{log:#?}"
        );
    }

    /// A call made before any listing has no `Mcp-Param-Region` to send: the server refuses
    /// it with -32020, and the client lists the tools and sends it again, once (nothing ran).
    #[tokio::test]
    async fn a_call_before_the_listing_is_refused_then_retried_with_the_header() {
        let server = DemoServer::start().await.expect("start");
        let (client, log) = connect(&server, ClientOptions::default()).await;
        let client = client.expect("connect");
        let result = call(&client, "region_echo", json!({"region": "Zürich"}))
            .await
            .expect("a result after the retry");
        assert_eq!(
            result.structured_content,
            Some(json!({"region": "Zürich", "header": "=?base64?WsO8cmljaA==?="}))
        );
        let log = lock(&log).clone();
        let posts: Vec<&str> = log
            .iter()
            .filter(|line| line.starts_with("> POST"))
            .map(|line| {
                ["server/discover", "tools/list", "tools/call"]
                    .into_iter()
                    .find(|method| line.contains(&format!("\"method\":\"{method}\"")))
                    .unwrap_or("?")
            })
            .collect();
        let mut expected = vec!["server/discover", "tools/call"];
        expected.extend(["tools/list"; 5]);
        expected.push("tools/call");
        assert_eq!(posts, expected, "{log:#?}");
        assert!(log.iter().any(|line| line.contains("-32020")), "{log:#?}");
    }

    /// Answers each elicitation with `answer`, keeping what it was asked.
    struct Confirmer {
        answer: Value,
        asked: Mutex<Vec<(String, String, Value)>>,
    }

    impl InputHandler for Confirmer {
        fn capabilities(&self) -> ClientCapabilities {
            ClientCapabilities {
                elicitation: Some(serde_json::Map::new()),
                ..ClientCapabilities::default()
            }
        }

        fn answer(&self, request: InputRequest) -> InputFuture {
            let params = request
                .params
                .as_ref()
                .map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
            lock(&self.asked).push((request.key, request.method, params));
            let answer = self.answer.clone();
            Box::pin(async move { Ok(answer) })
        }
    }

    /// The raw text of the `requestState` member in each wire-log line that has one.
    fn states_in(log: &[String], prefix: &str) -> Vec<String> {
        log.iter()
            .filter(|line| line.starts_with(prefix) && line.contains("\"requestState\":\""))
            .map(|line| super::raw_string_member(line, "requestState").to_owned())
            .collect()
    }

    #[tokio::test]
    async fn confirm_delete_completes_through_an_input_handler() {
        let server = DemoServer::start().await.expect("start");
        let handler = Arc::new(Confirmer {
            answer: json!({"action": "accept", "content": {"confirm": true}}),
            asked: Mutex::default(),
        });
        let options = ClientOptions {
            input_handler: Some(handler.clone()),
            ..ClientOptions::default()
        };
        let (client, log) = connect(&server, options).await;
        let client = client.expect("connect");
        assert!(client.protocol_version().is_modern());
        let result = delete(&client, "Bericht \"März\".txt")
            .await
            .expect("a result");
        assert!(!result.is_error(), "{result:?}");
        assert_eq!(
            result.content[0].as_text(),
            Some("Deleted Bericht \"März\".txt")
        );
        let asked = lock(&handler.asked).clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(
            (asked[0].0.as_str(), asked[0].1.as_str()),
            ("confirm", "elicitation/create")
        );
        assert_eq!(
            asked[0].2["message"],
            "Delete Bericht \"März\".txt? Accept to delete it, decline to keep it."
        );
        // The state went back byte for byte, escapes and all, under a new id.
        let log = lock(&log).clone();
        let issued = states_in(&log, "< ");
        let echoed = states_in(&log, "> POST");
        assert_eq!(issued.len(), 1, "{log:#?}");
        assert_eq!(echoed, issued, "{log:#?}");
        assert!(issued[0].contains("\\\""));
        let calls: Vec<&String> = log
            .iter()
            .filter(|line| line.starts_with("> POST") && line.contains("\"tools/call\""))
            .collect();
        assert_eq!(calls.len(), 2, "{log:#?}");
        let id = |line: &str| {
            let body: Value = serde_json::from_str(&line[line.find('{').unwrap()..]).unwrap();
            body["id"].clone()
        };
        assert_ne!(id(calls[0]), id(calls[1]));
        assert!(!calls[0].contains("inputResponses"));
        assert!(calls[1].contains("\"inputResponses\":{\"confirm\":{\"action\":\"accept\""));

        // A user who declines keeps the item; the call still completes.
        let handler = Arc::new(Confirmer {
            answer: json!({"action": "decline"}),
            asked: Mutex::default(),
        });
        let options = ClientOptions {
            input_handler: Some(handler),
            ..ClientOptions::default()
        };
        let (client, _) = connect(&server, options).await;
        let result = delete(&client.expect("connect"), "a")
            .await
            .expect("a result");
        assert_eq!(
            result.content[0].as_text(),
            Some("Kept a: the user declined")
        );
    }

    #[tokio::test]
    async fn confirm_delete_fails_without_an_input_handler() {
        let server = DemoServer::start().await.expect("start");
        // Declaring nothing, the client is refused with -32021. This server refuses before the
        // tool runs, but others run it first (the TypeScript SDK v2), and nothing on the wire
        // tells them apart: an elicitation request whose outcome is unknown.
        let (client, _) = connect(&server, ClientOptions::default()).await;
        let client = client.expect("connect");
        let error = delete(&client, "a").await.expect_err("no way to confirm");
        assert_eq!(error.kind(), ErrorKind::ElicitationRequested, "{error}");
        assert!(error.to_string().contains("-32021"), "{error}");
        assert!(error.to_string().contains("elicitation"), "{error}");
        assert!(error.outcome_unknown(), "{error}");
        let failure = error.failure().expect("a failure");
        assert_eq!(
            failure.kind,
            crate::session::FailureKind::ElicitationRequested
        );

        // Declaring elicitation with nobody to answer, the server asks and the call fails.
        let mut options = ClientOptions::default();
        options.session.capabilities.elicitation = Some(serde_json::Map::new());
        let (client, _) = connect(&server, options).await;
        let error = delete(&client.expect("connect"), "a")
            .await
            .expect_err("nobody to answer");
        assert_eq!(error.kind(), ErrorKind::ElicitationRequested, "{error}");
        assert!(error.to_string().contains("elicitation/create"), "{error}");
    }

    #[tokio::test]
    async fn the_client_falls_back_to_2025_against_a_2025_only_server() {
        let server = started(Era::Legacy).await;
        let (client, log) = connect(&server, ClientOptions::default()).await;
        let client = client.expect("connect");
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
        assert_eq!(client.session_id().map(str::len), Some(32));
        let names: Vec<String> = client
            .list_tools()
            .await
            .expect("tools")
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, DEMO_TOOLS_IN_ORDER);
        let result = call(&client, "region_echo", json!({"region": "Zürich"}))
            .await
            .expect("a result");
        assert_eq!(
            result.structured_content,
            Some(json!({"region": "Zürich", "header": null}))
        );
        let result = delete(&client, "a").await.expect("a result");
        assert!(result.is_error());
        client.ping().await.expect("ping at 2025");
        client.close().await;
        let stats = server.stats();
        assert_eq!((stats.sessions_opened, stats.sessions_deleted), (1, 1));
        assert_eq!(stats.modern_requests, 0);
        let log = lock(&log).clone();
        assert!(log[0].contains("\"server/discover\""), "{log:#?}");
        assert!(
            log.iter().any(|line| line.contains("\"initialize\"")),
            "{log:#?}"
        );
    }

    #[tokio::test]
    async fn a_2026_only_server_serves_the_client() {
        let server = started(Era::Modern).await;
        let (client, _) = connect(&server, ClientOptions::default()).await;
        let client = client.expect("connect");
        assert_eq!(client.protocol_version().as_str(), MODERN);
        let result = call(&client, "echo", json!({"message": "hi"}))
            .await
            .expect("a result");
        assert_eq!(result.content[0].as_text(), Some("Echo: hi"));
        client.close().await;
        assert_eq!(server.stats().sessions_opened, 0);
    }

    /// A client that speaks 2025 alone gets the -32022 the server sends its `initialize`
    /// (`basic/versioning.mdx`: "this message may be the only diagnostic they can surface").
    #[tokio::test]
    async fn a_2026_only_server_refuses_a_2025_client_with_32022() {
        let server = started(Era::Modern).await;
        let mut options = ClientOptions::default();
        options.session.era = EraPolicy::Legacy;
        let (client, log) = connect(&server, options).await;
        let error = client.expect_err("a 2025 client is refused");
        let log = lock(&log).clone();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::UnsupportedVersion | ErrorKind::ServerError
            ),
            "{error}: {log:#?}"
        );
        assert!(
            log.iter().all(|line| !line.starts_with("> GET")),
            "{error}: {log:#?}"
        );
        assert_eq!(server.stats().sessions_opened, 0);
    }
}
