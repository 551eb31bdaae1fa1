//! Pair tests of the typed requests for input, in both eras: URL-mode elicitation (its
//! completion notification, the `-32042` error) and sampling with tools, each checked against
//! what the client declared before the host sees it.

use super::*;
use crate::connection::input::ElicitAction;

/// A session that declares `capabilities` and hands the server's requests for input out.
fn declaring(era: session::EraPolicy, capabilities: Value) -> session::Config {
    session::Config {
        era,
        capabilities: serde_json::from_value(capabilities).expect("capabilities"),
        forward_input_requests: true,
        ..session::Config::default()
    }
}

fn url_request(id: &str, url: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
           "params": {"mode": "url", "message": "Connect your account", "url": url,
                      "elicitationId": "e-1"}})
}

fn complete(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
           "params": {"elicitationId": id}})
}

/// A 2025-11-25 pair whose `tools/call` streams `events`, then its result; every other POST
/// (the client's answers) is accepted.
fn legacy_streaming(capabilities: Value, events: Vec<Value>) -> Pair {
    Pair::with_session(
        declaring(session::EraPolicy::Legacy, capabilities),
        None,
        Box::new(move |seen| match seen.rpc_method() {
            Some("initialize") => initialized(seen),
            Some("tools/call") => {
                let mut stream = events.clone();
                stream.push(response(&id_of(seen), text_result("done")));
                Reply::Sse(stream)
            }
            _ => Reply::Status(202, Value::Null, Vec::new()),
        }),
    )
}

/// What the client sent back for the server's request `id`.
fn answer_to<'a>(pair: &'a Pair, id: &str) -> Option<&'a Value> {
    pair.seen
        .iter()
        .filter_map(|s| s.body.as_ref())
        .find(|b| b.get("id") == Some(&json!(id)) && b.get("method").is_none())
}

#[test]
fn a_2025_url_elicitation_reaches_the_host_typed_and_its_completion_once() {
    let mut pair = legacy_streaming(
        json!({"elicitation": {"url": {}}}),
        vec![
            url_request("u1", "https://mcp.example.com/connect"),
            complete("unknown-id"),
            complete("e-1"),
            complete("e-1"),
        ],
    );
    let op = pair.call("connect", json!({}));
    assert_eq!(text_of(pair.finish(op)), "done");
    let forwarded: Vec<_> = pair
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::ServerRequest(request, InputKind::Url(elicitation)) => {
                Some((request.id.clone(), elicitation.clone()))
            }
            Output::ServerRequest(request, kind) => panic!("{request:?} as {kind:?}"),
            _ => None,
        })
        .collect();
    assert_eq!(forwarded.len(), 1);
    let (id, elicitation) = &forwarded[0];
    assert_eq!(elicitation.url(), "https://mcp.example.com/connect");
    assert_eq!(elicitation.host(), "mcp.example.com");
    assert_eq!(elicitation.elicitation_id(), Some("e-1"));
    let completions: Vec<_> = pair
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::ElicitationComplete(id) => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(completions, ["e-1"], "once, and never for an unknown id");
    let result = ElicitAction::Accept.to_result();
    pair.connection
        .answer_server_request(id, Ok(result), pair.now);
    pair.drain();
    let answer = answer_to(&pair, "u1").expect("the answer went out");
    assert_eq!(answer["result"], json!({"action": "accept"}));
}

#[test]
fn a_2025_url_elicitation_the_client_did_not_declare_is_refused_with_32602() {
    for (capabilities, url) in [
        // Form only.
        (
            json!({"elicitation": {}}),
            "https://mcp.example.com/connect",
        ),
        // Declared, but plain http to a host that is not loopback.
        (
            json!({"elicitation": {"url": {}}}),
            "http://mcp.example.com/connect",
        ),
    ] {
        let mut pair = legacy_streaming(capabilities, vec![url_request("u1", url)]);
        let op = pair.call("connect", json!({}));
        assert_eq!(text_of(pair.finish(op)), "done", "the call goes on");
        assert!(
            !pair
                .outputs
                .iter()
                .any(|o| matches!(o, Output::ServerRequest(..))),
            "the host never sees it"
        );
        let answer = answer_to(&pair, "u1").expect("answered");
        assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    }
}

fn tool_sampling_request(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage",
           "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Paris?"}}],
                      "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
                      "toolChoice": {"mode": "auto"}, "maxTokens": 50}})
}

#[test]
fn a_2025_sampling_request_with_tools_is_typed_and_a_decline_is_answered_minus_1() {
    let mut pair = legacy_streaming(
        json!({"sampling": {"tools": {}}}),
        vec![tool_sampling_request("s1")],
    );
    let op = pair.call("plan", json!({}));
    assert_eq!(text_of(pair.finish(op)), "done");
    let id = pair.outputs.iter().find_map(|o| match o {
        Output::ServerRequest(request, InputKind::ToolSampling(sampling)) => {
            assert_eq!(sampling.tools[0].name, "get_weather");
            Some(request.id.clone())
        }
        _ => None,
    });
    let id = id.unwrap_or_else(|| panic!("not forwarded typed: {:?}", pair.outputs));
    pair.connection.decline_server_request(&id, pair.now);
    pair.drain();
    let answer = answer_to(&pair, "s1").expect("answered");
    assert_eq!(answer["error"]["code"], json!(-1), "{answer}");
}

#[test]
fn a_2025_sampling_request_with_tools_without_the_capability_is_refused() {
    let mut pair = legacy_streaming(json!({"sampling": {}}), vec![tool_sampling_request("s1")]);
    let op = pair.call("plan", json!({}));
    assert_eq!(text_of(pair.finish(op)), "done");
    assert!(
        !pair
            .outputs
            .iter()
            .any(|o| matches!(o, Output::ServerRequest(..)))
    );
    let answer = answer_to(&pair, "s1").expect("answered");
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
}

#[test]
fn a_32042_error_is_the_servers_refusal_with_its_elicitations() {
    let mut pair = Pair::with_session(
        declaring(
            session::EraPolicy::Legacy,
            json!({"elicitation": {"url": {}}}),
        ),
        None,
        Box::new(|seen| match seen.rpc_method() {
            Some("initialize") => initialized(seen),
            Some("tools/call") => Reply::Json(error(
                &id_of(seen),
                error_code::URL_ELICITATION_REQUIRED,
                "This request requires more information.",
                json!({"elicitations": [{"mode": "url", "elicitationId": "e-9",
                    "url": "https://mcp.example.com/connect?elicitationId=e-9",
                    "message": "Authorization is required."}]}),
            )),
            _ => Reply::Status(202, Value::Null, Vec::new()),
        }),
    );
    let op = pair.call("files", json!({}));
    let failure = failed(pair.finish(op));
    assert_eq!(
        failure.kind,
        FailureKind::ServerError {
            code: error_code::URL_ELICITATION_REQUIRED
        }
    );
    assert!(!failure.outcome_unknown(), "the tool did not run");
    let listed = input::required_elicitations(failure.data().expect("data")).expect("listed");
    assert_eq!(listed[0].elicitation_id(), Some("e-9"));
    assert_eq!(pair.calls_seen("tools/call").len(), 1, "never sent again");
}

/// A 2026-07-28 pair whose first `tools/call` needs `requests`, and whose retry completes.
fn modern_asking(capabilities: Value, requests: Value) -> Pair {
    let mut pair = Pair::with_session(
        declaring(session::EraPolicy::Auto, capabilities),
        None,
        Box::new(move |seen| match seen.rpc_method() {
            Some("server/discover") => discovered(seen),
            Some("tools/call") if seen.params().get("inputResponses").is_some() => {
                Reply::Json(response(&id_of(seen), text_result("finished")))
            }
            Some("tools/call") => Reply::Json(response(
                &id_of(seen),
                json!({"resultType": "input_required", "inputRequests": requests.clone(),
                       "requestState": "st"}),
            )),
            _ => Reply::Status(400, Value::Null, Vec::new()),
        }),
    );
    pair.connection.limits.answers_input = true;
    pair
}

#[test]
fn a_2026_input_round_types_url_elicitations_and_tool_sampling() {
    let mut pair = modern_asking(
        json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}}),
        json!({
            "link": {"method": "elicitation/create",
                     "params": {"mode": "url", "message": "Link", "url": "https://a.example/x"}},
            "plan": {"method": "sampling/createMessage",
                     "params": tool_sampling_request("x")["params"]},
            "roots": {"method": "roots/list"}
        }),
    );
    let op = pair.call("t", json!({}));
    pair.run(|outputs| outputs.iter().any(|o| matches!(o, Output::Input { .. })));
    let Some(Output::Input {
        requests, kinds, ..
    }) = pair
        .outputs
        .iter()
        .find(|o| matches!(o, Output::Input { .. }))
    else {
        unreachable!("ran until there was one");
    };
    assert_eq!(requests.len(), 3);
    assert!(
        matches!(&kinds[0], InputKind::Url(e) if e.elicitation_id().is_none() && e.host() == "a.example")
    );
    assert!(matches!(&kinds[1], InputKind::ToolSampling(s) if s.max_tokens == 50));
    assert!(matches!(&kinds[2], InputKind::Plain));
    let mut answers = JsonObject::new();
    answers.insert("link".to_owned(), ElicitAction::Accept.to_result());
    answers.insert(
        "plan".to_owned(),
        json!({"role": "assistant", "model": "m",
        "content": {"type": "text", "text": "sunny"}}),
    );
    answers.insert("roots".to_owned(), json!({"roots": []}));
    pair.connection.answer_input(op, Ok(answers), pair.now);
    assert_eq!(text_of(pair.finish(op)), "finished");
    let calls = pair.calls_seen("tools/call");
    assert_eq!(
        calls[1].params()["inputResponses"]["link"],
        json!({"action": "accept"})
    );
}

#[test]
fn a_2026_input_request_against_the_capabilities_fails_the_call_unsent() {
    for (capabilities, request) in [
        (
            json!({"elicitation": {}}),
            json!({"method": "elicitation/create",
                   "params": {"mode": "url", "message": "Link", "url": "https://a.example/x"}}),
        ),
        (
            json!({"elicitation": {"url": {}}}),
            json!({"method": "elicitation/create",
                   "params": {"mode": "url", "message": "Link", "url": "javascript:alert(1)"}}),
        ),
        (
            json!({"sampling": {}}),
            json!({"method": "sampling/createMessage", "params": tool_sampling_request("x")["params"]}),
        ),
    ] {
        let mut pair = modern_asking(capabilities, json!({"k": request}));
        let op = pair.call("t", json!({}));
        let failure = failed(pair.finish(op));
        assert_eq!(failure.kind, FailureKind::Protocol, "{failure:?}");
        assert!(failure.detail.contains("\"k\""), "{}", failure.detail);
        assert!(
            !pair
                .outputs
                .iter()
                .any(|o| matches!(o, Output::Input { .. })),
            "the host never sees it"
        );
        assert_eq!(pair.calls_seen("tools/call").len(), 1, "no retry");
    }
}
