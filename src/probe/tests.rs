//! The probe's checks and renderer on constructed inputs.

use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::check::{
    self, BodyKind, body_kind, check_framing, check_response, check_tool, check_unique_names,
    classify_discover, find_response, messages, name_follows_rule, rules, session_id_seen,
    sse_framing,
};
use super::report::*;
use crate::mcp::Tool;

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("a tool")
}

// --- framing --------------------------------------------------------------------------------

#[test]
fn lf_stream_with_a_priming_event() {
    // server-everything on a 2025-11-25 stream.
    let body = b"id: a1\ndata: \n\nevent: message\nid: a2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
    let framing = sse_framing(body);
    assert_eq!(framing.line_endings, "LF");
    assert_eq!(framing.events, 2);
    assert_eq!(framing.priming_events, 1);
    assert_eq!(framing.events_with_id, 2);
    assert_eq!(framing.empty_events_without_id, 0);
    assert!(framing.other_event_types.is_empty());
    assert!(check_framing(&framing, "x").is_empty());
}

#[test]
fn crlf_stream_without_ids() {
    // The Python SDK's framing.
    let body = b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n";
    let framing = sse_framing(body);
    assert_eq!(framing.line_endings, "CRLF");
    assert_eq!(framing.events, 1);
    assert_eq!(framing.priming_events, 0);
    assert_eq!(framing.events_with_id, 0);
    assert_eq!(framing.retry_ms, None);
}

#[test]
fn priming_with_retry_and_comments() {
    // The Python SDK with an event store: `data:` before `retry:`.
    let body = b": ping - 2026\r\nid: ev-1\r\ndata: \r\nretry: 1500\r\n\r\nevent: message\r\nid: ev-2\r\ndata: {}\r\n\r\n";
    let framing = sse_framing(body);
    assert_eq!(framing.priming_events, 1);
    assert_eq!(framing.retry_ms, Some(1500));
    assert_eq!(framing.comments, 1);
    assert_eq!(framing.events, 2);
}

#[test]
fn cr_and_mixed_line_endings_are_named() {
    assert_eq!(sse_framing(b"data: x\r\r").line_endings, "CR");
    assert_eq!(
        sse_framing(b"data: x\n\r\n").line_endings,
        "mixed (1 LF, 1 CRLF)"
    );
    assert_eq!(sse_framing(b"").line_endings, "none");
}

#[test]
fn an_unterminated_event_is_not_counted() {
    let framing = sse_framing(b"data: one\n\ndata: two\n");
    assert_eq!(framing.events, 1);
}

#[test]
fn empty_data_without_an_id_is_a_priming_deviation() {
    let framing = sse_framing(b"data: \n\nevent: endpoint\ndata: /m\n\n");
    assert_eq!(framing.empty_events_without_id, 1);
    assert_eq!(framing.other_event_types, vec!["endpoint".to_owned()]);
    let found = check_framing(&framing, "POST x: 200");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule, rules::PRIMING);
    assert_eq!(found[0].level, Level::Should);
}

#[test]
fn body_kinds_compare_media_types_without_parameters() {
    assert_eq!(
        body_kind(Some("Application/JSON; charset=utf-8"), b"{}"),
        BodyKind::Json
    );
    assert_eq!(
        body_kind(Some("text/event-stream"), b"data: x\n\n"),
        BodyKind::EventStream
    );
    assert_eq!(body_kind(Some("text/html"), b"<html>"), BodyKind::Other);
    assert_eq!(body_kind(None, b"{}"), BodyKind::Other);
    assert_eq!(body_kind(Some("application/json"), b""), BodyKind::Empty);
}

#[test]
fn messages_come_from_json_batches_and_message_events() {
    let (values, bad) = messages(&BodyKind::Json, br#"[{"a":1},{"b":2}]"#);
    assert_eq!((values.len(), bad), (2, 0));
    let body = b"id: p\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: other\ndata: {}\n\ndata: not json\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\n";
    let (values, bad) = messages(&BodyKind::EventStream, body);
    assert_eq!(values.len(), 2, "{values:?}");
    assert_eq!(bad, 1);
    let response = find_response(&values, "x").expect("the response");
    assert_eq!(response["id"], "x");
    assert_eq!(check::answer_line(Some(response)), "result");
}

#[test]
fn find_response_prefers_the_request_id_then_an_id_less_error() {
    let values = vec![
        json!({"jsonrpc": "2.0", "id": "other", "result": {}}),
        json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "m"}}),
        json!({"jsonrpc": "2.0", "id": "mine", "result": {}}),
    ];
    assert_eq!(find_response(&values, "mine").unwrap()["id"], "mine");
    assert!(
        find_response(&values, "nobody")
            .unwrap()
            .get("id")
            .is_none()
    );
    assert_eq!(
        check::answer_line(find_response(&values, "nobody")),
        "error -32000 \"m\""
    );
    assert_eq!(check::answer_line(None), "no JSON-RPC response");
    // An OAuth error body (RFC 6750) is no JSON-RPC response.
    let oauth = vec![json!({"error": "invalid_token", "error_description": "d"})];
    assert!(!check::is_response(&oauth[0]));
    assert!(find_response(&oauth, "x").is_none());
}

// --- JSON-RPC members -----------------------------------------------------------------------

fn rules_broken(response: Value, modern: bool) -> Vec<(&'static str, Level)> {
    let all = [
        rules::JSONRPC_VERSION,
        rules::RESULT_XOR_ERROR,
        rules::RESPONSE_ID,
        rules::ERROR_OBJECT,
        rules::RESPONSE_MEMBERS,
        rules::RESULT_TYPE,
    ];
    check_response(&response, "r1", modern, "evidence")
        .into_iter()
        .map(|d| {
            assert_eq!(d.evidence, "evidence");
            let rule = all
                .into_iter()
                .find(|r| *r == d.rule)
                .unwrap_or_else(|| panic!("unexpected rule {}", d.rule));
            (rule, d.level)
        })
        .collect()
}

#[test]
fn well_formed_responses_break_nothing() {
    assert!(rules_broken(json!({"jsonrpc": "2.0", "id": "r1", "result": {}}), false).is_empty());
    let error = json!({"code": -32600, "message": "Session not found"});
    for id in [json!("r1"), Value::Null] {
        let response = json!({"jsonrpc": "2.0", "id": id, "error": error});
        assert!(rules_broken(response, false).is_empty());
    }
    // MCP 2025-11-25 lets an error response leave the id out (server-everything does).
    assert!(rules_broken(json!({"jsonrpc": "2.0", "error": error}), false).is_empty());
    let modern = json!({"jsonrpc": "2.0", "id": "r1", "result": {"resultType": "complete"}});
    assert!(rules_broken(modern, true).is_empty());
}

#[test]
fn a_made_up_error_id_is_a_deviation() {
    // The Python SDK 1.x answers "server-error" for ids it did not read.
    let response =
        json!({"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "m"}});
    assert_eq!(
        rules_broken(response.clone(), false),
        vec![(rules::RESPONSE_ID, Level::Must)]
    );
    let found = check_response(&response, "r1", false, "e");
    assert!(
        found[0].what.contains("\"server-error\""),
        "{}",
        found[0].what
    );
}

#[test]
fn broken_envelopes_are_deviations() {
    assert_eq!(
        rules_broken(json!({"jsonrpc": "1.0", "id": "r1", "result": {}}), false),
        vec![(rules::JSONRPC_VERSION, Level::Must)]
    );
    assert_eq!(
        rules_broken(json!({"jsonrpc": "2.0", "result": {}}), false),
        vec![(rules::RESPONSE_ID, Level::Must)]
    );
    assert_eq!(
        rules_broken(json!({"jsonrpc": "2.0", "id": 7, "result": {}}), false),
        vec![(rules::RESPONSE_ID, Level::Must)]
    );
    let both =
        json!({"jsonrpc": "2.0", "id": "r1", "result": {}, "error": {"code": 1, "message": ""}});
    assert_eq!(
        rules_broken(both, false),
        vec![(rules::RESULT_XOR_ERROR, Level::Must)]
    );
    let bad_error = json!({"jsonrpc": "2.0", "id": "r1", "error": {"code": "x"}});
    assert_eq!(
        rules_broken(bad_error, false),
        vec![(rules::ERROR_OBJECT, Level::Must)]
    );
    let extra = json!({"jsonrpc": "2.0", "id": "r1", "result": {}, "note": 1});
    assert_eq!(
        rules_broken(extra, false),
        vec![(rules::RESPONSE_MEMBERS, Level::Should)]
    );
}

#[test]
fn modern_results_need_a_known_result_type() {
    let missing = json!({"jsonrpc": "2.0", "id": "r1", "result": {}});
    assert_eq!(
        rules_broken(missing.clone(), true),
        vec![(rules::RESULT_TYPE, Level::Must)]
    );
    // A 2025-era result has no resultType to check.
    assert!(rules_broken(missing, false).is_empty());
    let unknown = json!({"jsonrpc": "2.0", "id": "r1", "result": {"resultType": "partial"}});
    assert_eq!(
        rules_broken(unknown, true),
        vec![(rules::RESULT_TYPE, Level::Must)]
    );
    let input = json!({"jsonrpc": "2.0", "id": "r1", "result": {"resultType": "input_required"}});
    assert!(rules_broken(input, true).is_empty());
}

// --- the era verdict ------------------------------------------------------------------------

#[test]
fn a_discover_result_naming_2026_is_modern() {
    // The Python SDK 2.x's answer.
    let response = json!({"jsonrpc": "2.0", "id": "p", "result": {
        "supportedVersions": ["2026-07-28"], "resultType": "complete",
        "capabilities": {"tools": {"listChanged": true}, "prompts": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}});
    let era = classify_discover(StatusCode::OK, Some(&response));
    assert_eq!(era.speaks_2026_07_28, Some(true));
    assert_eq!(era.supported_versions, vec!["2026-07-28".to_owned()]);
    assert_eq!(
        era.capabilities,
        vec!["prompts".to_owned(), "tools".to_owned()]
    );
}

#[test]
fn legacy_answers_are_2025_era() {
    let cases = [
        // server-everything (TypeScript SDK 1.x).
        (
            400,
            Some(
                json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: Server not initialized"}, "id": null}),
            ),
        ),
        // "Unsupported protocol version" is not -32022: still legacy.
        (
            400,
            Some(
                json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: Unsupported protocol version: 2026-07-28"}, "id": null}),
            ),
        ),
        // A legacy HTTP+SSE endpoint: a 404 page.
        (404, None),
        // A mock that answers every request with an empty result.
        (
            200,
            Some(json!({"jsonrpc": "2.0", "id": "p", "result": {}})),
        ),
        // -32022 naming only 2025 revisions.
        (
            400,
            Some(
                json!({"jsonrpc": "2.0", "id": "p", "error": {"code": -32022, "message": "m", "data": {"supported": ["2025-11-25"]}}}),
            ),
        ),
        // A DiscoverResult with no revision in common.
        (
            200,
            Some(
                json!({"jsonrpc": "2.0", "id": "p", "result": {"supportedVersions": ["2027-01-01"], "capabilities": {}}}),
            ),
        ),
    ];
    for (status, response) in cases {
        let era = classify_discover(StatusCode::from_u16(status).unwrap(), response.as_ref());
        assert_eq!(
            era.speaks_2026_07_28,
            Some(false),
            "{status} {response:?}: {era:?}"
        );
        assert!(era.verdict.contains(&status.to_string()) || era.verdict.contains("lists only"));
    }
}

#[test]
fn a_corrective_unsupported_version_error_is_modern() {
    let response = json!({"jsonrpc": "2.0", "id": "p", "error": {"code": -32022, "message": "m", "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}});
    let era = classify_discover(StatusCode::BAD_REQUEST, Some(&response));
    assert_eq!(era.speaks_2026_07_28, Some(true));
    assert_eq!(era.supported_versions, vec!["2026-07-28".to_owned()]);
}

#[test]
fn auth_and_server_errors_are_no_verdict() {
    for status in [401, 403, 500, 503] {
        let era = classify_discover(StatusCode::from_u16(status).unwrap(), None);
        assert_eq!(era.speaks_2026_07_28, None, "{status}");
    }
}

// --- challenges and session ids -------------------------------------------------------------

#[test]
fn challenges_are_taken_apart_after_redaction() {
    let mut headers = HeaderMap::new();
    headers.append(
        http::header::WWW_AUTHENTICATE,
        HeaderValue::from_static(
            "Bearer resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource\", scope=\"files:read\", error=\"invalid_token\", error_description=\"token sekrit-123 expired\"",
        ),
    );
    headers.append(
        http::header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"mcp\""),
    );
    let redact = |text: &str| text.replace("sekrit-123", "[redacted]");
    let found = check::challenges(&headers, &redact);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].scheme, "Bearer");
    assert_eq!(
        found[0].resource_metadata.as_deref(),
        Some("http://127.0.0.1:1/.well-known/oauth-protected-resource")
    );
    assert_eq!(found[0].scope.as_deref(), Some("files:read"));
    assert_eq!(found[0].error.as_deref(), Some("invalid_token"));
    assert_eq!(
        found[0].error_description.as_deref(),
        Some("token [redacted] expired")
    );
    assert_eq!(found[1].scheme, "Basic");
    assert_eq!(found[1].realm.as_deref(), Some("mcp"));
}

#[test]
fn session_id_shapes() {
    let uuid = session_id_seen(b"436a60e1-ce79-4da4-ae69-9e0c4cb85de3");
    assert_eq!(
        (uuid.length, uuid.shape.as_str(), uuid.visible_ascii),
        (36, "uuid", true)
    );
    let hex = session_id_seen(b"f56940df86074050b201443e3145a9c2");
    assert_eq!((hex.shape.as_str(), hex.visible_ascii), ("hex", true));
    assert_eq!(session_id_seen(b"jwt.abc.def").shape, "other");
    assert!(!session_id_seen(b"has space").visible_ascii);
    assert!(!session_id_seen(b"caf\xc3\xa9").visible_ascii);
    assert!(!session_id_seen(b"").visible_ascii);
}

// --- tools ----------------------------------------------------------------------------------

#[test]
fn tool_names_follow_the_2025_11_25_rule() {
    for good in [
        "getUser",
        "DATA_EXPORT_v2",
        "admin.tools.list",
        "a",
        &"x".repeat(128),
    ] {
        assert!(name_follows_rule(good), "{good}");
    }
    for bad in [
        "",
        "has space",
        "comma,name",
        "ünï",
        &"x".repeat(129),
        "slash/name",
    ] {
        assert!(!name_follows_rule(bad), "{bad}");
    }
}

#[test]
fn a_good_tool_has_no_problems() {
    let (checked, found) = check_tool(&tool(json!({
        "name": "region_echo",
        "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}, "text": {"type": "string"}}},
        "outputSchema": {"type": "object", "properties": {"region": {"type": "string"}}},
    })));
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(checked.input_schema, "ok");
    assert_eq!(checked.output_schema.as_deref(), Some("ok"));
    assert!(checked.declares_output_schema);
    assert_eq!(checked.param_headers, vec!["Mcp-Param-Region".to_owned()]);
    assert!(checked.problems.is_empty());
}

#[test]
fn tool_problems_are_deviations_with_their_rules() {
    let (checked, found) = check_tool(&tool(json!({
        "name": "bad name",
        "inputSchema": {"type": "object", "properties": {
            "region": {"type": "number", "x-mcp-header": "Region"},
            "text": {"type": "string", "pattern": "(unclosed"}}},
        "outputSchema": {"type": "array"},
    })));
    let rules_seen: Vec<&str> = found.iter().map(|d| d.rule.as_str()).collect();
    assert_eq!(
        rules_seen,
        vec![
            rules::TOOL_NAME,
            rules::INPUT_SCHEMA,
            rules::OUTPUT_SCHEMA,
            rules::X_MCP_HEADER
        ],
        "{found:#?}"
    );
    assert!(
        checked.input_schema.starts_with("does not compile"),
        "{}",
        checked.input_schema
    );
    assert_eq!(
        checked.output_schema.as_deref(),
        Some("has type \"array\", not \"object\"")
    );
    assert!(
        checked.problems[3].contains("string, integer or boolean"),
        "{:?}",
        checked.problems
    );
    assert!(
        found
            .iter()
            .all(|d| d.what.starts_with("tool \"bad name\": "))
    );
}

#[test]
fn an_input_schema_must_be_an_object_schema() {
    for (schema, expected) in [
        (json!(null), "is not an object: null"),
        (
            json!({"properties": {}}),
            "has type missing, not \"object\"",
        ),
    ] {
        let (checked, found) = check_tool(&tool(json!({"name": "t", "inputSchema": schema})));
        assert_eq!(checked.input_schema, expected);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].level, Level::Must);
        assert!(!checked.declares_output_schema);
        assert_eq!(checked.output_schema, None);
    }
}

#[test]
fn duplicate_tool_names_are_flagged() {
    let listed = [
        tool(json!({"name": "a", "inputSchema": {"type": "object"}})),
        tool(json!({"name": "b", "inputSchema": {"type": "object"}})),
        tool(json!({"name": "a", "inputSchema": {"type": "object"}})),
    ];
    let found = check_unique_names(&listed);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule, rules::TOOL_NAME);
}

// --- the report -----------------------------------------------------------------------------

fn sample_report() -> ProbeReport {
    let mut report = ProbeReport {
        url: "http://127.0.0.1:3001/mcp".to_owned(),
        reachable: true,
        completed: true,
        server: Some(ServerSummary {
            name: "srv".to_owned(),
            version: "1.0".to_owned(),
            title: None,
            capabilities: vec!["tools".to_owned()],
            instructions: false,
            source: "initialize".to_owned(),
        }),
        ..ProbeReport::default()
    };
    report.eras.modern = ModernEra {
        speaks_2026_07_28: Some(false),
        verdict: "server/discover answered 400".to_owned(),
        ..ModernEra::default()
    };
    report.eras.legacy = LegacyEra {
        negotiated: Some("2025-11-25".to_owned()),
        transport: Some("streamable-http".to_owned()),
        offers: vec![
            VersionOffer {
                offered: "2025-11-25".to_owned(),
                answered: Some("2025-11-25".to_owned()),
                status: Some(200),
                error: None,
            },
            VersionOffer {
                offered: "2025-06-18".to_owned(),
                answered: Some("2025-11-25".to_owned()),
                status: Some(200),
                error: None,
            },
            VersionOffer {
                offered: "2025-03-26".to_owned(),
                answered: None,
                status: Some(400),
                error: Some("error -32602 \"no\"".to_owned()),
            },
        ],
        ..LegacyEra::default()
    };
    report.replies.push(ReplySeen {
        request: "POST initialize 2025-11-25".to_owned(),
        status: 200,
        content_type: Some("text/event-stream".to_owned()),
        body: "sse".to_owned(),
        bytes: 100,
        end: "complete".to_owned(),
        session_id: true,
        sse: Some(SseFraming {
            line_endings: "CRLF".to_owned(),
            events: 2,
            priming_events: 1,
            events_with_id: 2,
            retry_ms: Some(1500),
            ..SseFraming::default()
        }),
        answer: "result".to_owned(),
    });
    report.sessions.unknown_session = Some(StatusSeen {
        status: 400,
        answer: "error -32000 \"x\"".to_owned(),
    });
    report.tools = Tools {
        listed: true,
        via: "tools/list in a 2025-11-25 session".to_owned(),
        error: None,
        tools: vec![ToolCheck {
            name: "echo".to_owned(),
            input_schema: "ok".to_owned(),
            ..ToolCheck::default()
        }],
    };
    for _ in 0..2 {
        report.deviate(Deviation::new(
            "a request with an unknown session id was answered 400, not 404".to_owned(),
            rules::UNKNOWN_SESSION,
            Level::Must,
            "POST tools/list (made-up session id): 400".to_owned(),
        ));
    }
    report
}

#[test]
fn the_same_deviation_is_counted_not_repeated() {
    let report = sample_report();
    assert_eq!(report.deviations.len(), 1);
    assert_eq!(report.deviations[0].occurrences, 2);
}

#[test]
fn the_human_report_has_its_sections_in_order() {
    let text = sample_report().render();
    let mut at = 0;
    for section in [
        "mcpwire probe http://127.0.0.1:3001/mcp\n",
        "\nServer      srv 1.0, from initialize\n",
        "\nEras        2026-07-28: no (server/discover answered 400)\n",
        "            2025: 2025-11-25 negotiated over streamable-http\n",
        "            initialize accepts: 2025-11-25; 2025-06-18 -> 2025-11-25; 2025-03-26 -> 400 error -32602 \"no\"\n",
        "\nReplies     POST initialize 2025-11-25  200 text/event-stream, CRLF, 2 event(s), 1 priming, ids, retry 1500 ms: result\n",
        "\nSessions    no Mcp-Session-Id (stateless)\n",
        "            made-up session id: 400 error -32000 \"x\"\n",
        "\nAuth        no credentials needed\n",
        "\nTools       1 tool(s), via tools/list in a 2025-11-25 session\n",
        "            echo  ok; no outputSchema\n",
        "\nDeviations  1. [MUST] a request with an unknown session id was answered 400, not 404 (2 times)\n",
        &format!("               rule: {}\n", rules::UNKNOWN_SESSION),
        "               seen: POST tools/list (made-up session id): 400\n",
    ] {
        let found = text[at..]
            .find(section)
            .unwrap_or_else(|| panic!("{section:?} not found after byte {at} of:\n{text}"));
        at += found + section.len() - 1;
    }
    assert!(!text.contains("Notes"), "{text}");
}

#[test]
fn an_unreachable_server_says_so_and_why() {
    let report = ProbeReport {
        url: "http://127.0.0.1:1/mcp".to_owned(),
        notes: vec!["POST server/discover (2026-07-28): connection refused".to_owned()],
        ..ProbeReport::default()
    };
    let text = report.render();
    assert!(text.contains("Server      not reachable\n"), "{text}");
    assert!(text.contains("Notes       POST server/discover"), "{text}");
    assert!(!text.contains("Tools"), "{text}");
}

#[test]
fn the_auth_section_names_challenge_and_metadata() {
    let mut report = sample_report();
    report.auth = Authorization {
        required: true,
        status: Some(401),
        token_sent: false,
        challenges: vec![Challenge {
            scheme: "Bearer".to_owned(),
            resource_metadata: Some(
                "http://127.0.0.1/.well-known/oauth-protected-resource".to_owned(),
            ),
            ..Challenge::default()
        }],
        metadata: Some(ResourceMetadata {
            url: "http://127.0.0.1/.well-known/oauth-protected-resource".to_owned(),
            resource: Some("http://127.0.0.1/mcp".to_owned()),
            authorization_servers: vec!["https://as.example".to_owned()],
            scopes_supported: vec!["mcp:tools".to_owned()],
            bearer_methods_supported: vec!["header".to_owned()],
            ..ResourceMetadata::default()
        }),
        metadata_tried: Vec::new(),
        ..Authorization::default()
    };
    let text = report.render();
    assert!(text.contains("Auth        401 without a token\n"), "{text}");
    assert!(
        text.contains("WWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\"\n"),
        "{text}"
    );
    assert!(
        text.contains("resource http://127.0.0.1/mcp; authorization servers https://as.example; scopes mcp:tools"),
        "{text}"
    );
}

#[test]
fn the_json_report_keeps_the_field_names() {
    let json: Value = serde_json::from_str(&sample_report().to_json()).expect("JSON");
    assert_eq!(json["reachable"], true);
    assert_eq!(json["eras"]["modern"]["speaks_2026_07_28"], false);
    assert_eq!(
        json["eras"]["legacy"]["offers"][1]["answered"],
        "2025-11-25"
    );
    assert_eq!(json["replies"][0]["sse"]["priming_events"], 1);
    assert_eq!(json["replies"][0]["sse"]["line_endings"], "CRLF");
    assert_eq!(json["deviations"][0]["level"], "MUST");
    assert_eq!(json["deviations"][0]["occurrences"], 2);
    assert_eq!(json["tools"]["tools"][0]["declares_output_schema"], false);
    assert_eq!(json["sessions"]["unknown_session"]["status"], 400);
}
