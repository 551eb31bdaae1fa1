//! The checks of URL elicitations and sampling with tools, case by case.

use serde_json::{Value, json};

use super::*;

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("json")
}

fn caps(value: Value) -> ClientCapabilities {
    serde_json::from_value(value).expect("capabilities")
}

fn url_caps() -> ClientCapabilities {
    caps(json!({"elicitation": {"form": {}, "url": {}}}))
}

fn tool_caps() -> ClientCapabilities {
    caps(json!({"sampling": {"tools": {}}}))
}

fn elicit(
    params: Value,
    declared: &ClientCapabilities,
    require_id: bool,
) -> Result<InputKind, Refusal> {
    classify(
        methods::ELICITATION_CREATE,
        Some(&raw(&params)),
        declared,
        require_id,
    )
}

fn url_params(url: &str) -> Value {
    json!({"mode": "url", "message": "Connect your account", "url": url, "elicitationId": "e-1"})
}

fn url_of(kind: Result<InputKind, Refusal>) -> UrlElicitation {
    match kind {
        Ok(InputKind::Url(elicitation)) => elicitation,
        other => panic!("not a URL elicitation: {other:?}"),
    }
}

#[test]
fn a_url_elicitation_is_typed_with_its_host_and_id() {
    let elicitation = url_of(elicit(
        url_params("https://mcp.example.com/connect?elicitationId=e-1#step"),
        &url_caps(),
        true,
    ));
    assert_eq!(elicitation.message(), "Connect your account");
    assert_eq!(
        elicitation.url(),
        "https://mcp.example.com/connect?elicitationId=e-1#step"
    );
    assert_eq!(elicitation.host(), "mcp.example.com");
    assert_eq!(elicitation.elicitation_id(), Some("e-1"));
    assert!(!elicitation.has_punycode());
    // Debug leaves the query out.
    assert!(!format!("{elicitation:?}").contains("elicitationId=e-1"));
}

#[test]
fn loopback_http_passes_and_other_http_is_refused() {
    for url in [
        "http://localhost:8080/x",
        "http://127.0.0.1/x",
        "http://[::1]:3000/",
    ] {
        url_of(elicit(url_params(url), &url_caps(), true));
    }
    for url in [
        "http://mcp.example.com/connect",
        "ftp://mcp.example.com/",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "https://user:pw@mcp.example.com/",
        "https://mcp.example.com/a b",
        "https://mcp.example.com/\u{7}",
        "/relative/path",
        "",
    ] {
        let refused = elicit(url_params(url), &url_caps(), true).unwrap_err();
        assert!(refused.0.contains("URL"), "{url:?}: {refused}");
    }
    let long = format!("https://mcp.example.com/{}", "a".repeat(4096));
    assert!(elicit(url_params(&long), &url_caps(), true).is_err());
}

#[test]
fn punycode_hosts_are_flagged() {
    let elicitation = url_of(elicit(
        url_params("https://xn--pple-43d.com/login"),
        &url_caps(),
        true,
    ));
    assert!(elicitation.has_punycode());
    // Hosts that are not ASCII never reach it: the URL check refuses them.
    assert!(elicit(url_params("https://bücher.example/"), &url_caps(), true).is_err());
}

#[test]
fn hostile_params_are_refused_without_a_panic() {
    let values = [
        json!(null),
        json!(7),
        json!("x"),
        json!([]),
        json!({"mode": null}),
        json!({"mode": "url", "message": "m", "url": "https://[::1", "elicitationId": "e"}),
        json!({"mode": "url", "message": "m", "url": "https://a.example:99999/", "elicitationId": "e"}),
        json!({"mode": "url", "message": "m", "url": "https://a.example/#frag#more", "elicitationId": "e"}),
        json!({"mode": "url", "message": "m", "url": "https://a.example/%zz", "elicitationId": "e"}),
        json!({"mode": "url", "message": "m".repeat(20_000), "url": "https://a.example/", "elicitationId": "e"}),
    ];
    for value in values {
        assert!(elicit(value.clone(), &url_caps(), true).is_err(), "{value}");
        let _ = sampling(value, &tool_caps());
    }
}

#[test]
fn modes_the_client_did_not_declare_are_refused() {
    let form_only = caps(json!({"elicitation": {}}));
    let refused = elicit(url_params("https://a.example/"), &form_only, true).unwrap_err();
    assert!(refused.0.contains("did not declare"), "{refused}");
    let url_only = caps(json!({"elicitation": {"url": {}}}));
    let form = json!({"message": "name?", "requestedSchema": {"type": "object"}});
    assert!(elicit(form.clone(), &url_only, true).is_err());
    assert!(matches!(
        elicit(form.clone(), &form_only, true),
        Ok(InputKind::Plain)
    ));
    assert!(matches!(
        elicit(json!({"mode": "form", "message": "x"}), &url_caps(), true),
        Ok(InputKind::Plain)
    ));
    assert!(
        elicit(
            json!({"mode": "telepathy", "message": "x"}),
            &url_caps(),
            true
        )
        .is_err()
    );
    assert!(elicit(json!({"mode": 7}), &url_caps(), true).is_err());
}

#[test]
fn the_elicitation_id_is_required_at_2025_11_25_only() {
    let params = json!({"mode": "url", "message": "m", "url": "https://a.example/"});
    assert!(elicit(params.clone(), &url_caps(), true).is_err());
    let elicitation = url_of(elicit(params, &url_caps(), false));
    assert_eq!(elicitation.elicitation_id(), None);
    for bad in [json!(""), json!(5), json!("x".repeat(300))] {
        let params = json!({"mode": "url", "message": "m", "url": "https://a.example/", "elicitationId": bad});
        assert!(elicit(params, &url_caps(), false).is_err());
    }
    let no_message = json!({"mode": "url", "url": "https://a.example/", "elicitationId": "e"});
    assert!(elicit(no_message, &url_caps(), true).is_err());
    assert!(
        elicit(
            json!({"mode": "url", "message": "m", "elicitationId": "e"}),
            &url_caps(),
            true
        )
        .is_err()
    );
    assert!(
        classify(
            methods::ELICITATION_CREATE,
            Some(&raw(&json!([1]))),
            &url_caps(),
            true
        )
        .is_err()
    );
}

#[test]
fn the_required_elicitations_of_a_32042_error_are_read_and_checked() {
    let data = json!({"elicitations": [
        {"mode": "url", "elicitationId": "550e", "url": "https://mcp.example.com/connect?elicitationId=550e",
         "message": "Authorization is required"}
    ]});
    let list = required_elicitations(&data.to_string()).expect("elicitations");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].elicitation_id(), Some("550e"));
    assert_eq!(list[0].host(), "mcp.example.com");
    for bad in [
        json!({}),
        json!({"elicitations": []}),
        json!({"elicitations": [{"mode": "form", "message": "m"}]}),
        json!({"elicitations": [{"mode": "url", "message": "m", "url": "https://a.example/"}]}),
        json!({"elicitations": [{"mode": "url", "message": "m", "url": "http://evil.example/", "elicitationId": "e"}]}),
        json!({"elicitations": vec![json!({"mode": "url", "message": "m", "url": "https://a.example/", "elicitationId": "e"}); 40]}),
    ] {
        assert!(required_elicitations(&bad.to_string()).is_err(), "{bad}");
    }
    assert!(required_elicitations("not json").is_err());
}

fn text_block(text: &str) -> ContentBlock {
    serde_json::from_str(&json!({"type": "text", "text": text}).to_string()).expect("text block")
}

fn weather_tool() -> Value {
    json!({"name": "get_weather", "description": "Weather for a city",
           "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

fn sampling(params: Value, declared: &ClientCapabilities) -> Result<InputKind, Refusal> {
    classify(
        methods::SAMPLING_CREATE_MESSAGE,
        Some(&raw(&params)),
        declared,
        true,
    )
}

fn tool_sampling(params: Value) -> ToolSampling {
    match sampling(params, &tool_caps()) {
        Ok(InputKind::ToolSampling(sampling)) => *sampling,
        other => panic!("not a tool sampling: {other:?}"),
    }
}

fn ask(text: &str) -> Value {
    json!({"role": "user", "content": {"type": "text", "text": text}})
}

#[test]
fn sampling_with_tools_is_typed() {
    let sampling = tool_sampling(json!({
        "messages": [
            ask("Weather in Paris and London?"),
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "c2", "name": "get_weather", "input": {"city": "London"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18C"}]},
                {"type": "tool_result", "toolUseId": "c2", "content": [{"type": "text", "text": "15C"}], "isError": false}]}
        ],
        "tools": [weather_tool()],
        "toolChoice": {"mode": "required"},
        "maxTokens": 1000,
        "systemPrompt": "be brief",
        "temperature": 0.2
    }));
    assert_eq!(sampling.tools.len(), 1);
    assert_eq!(sampling.tools[0].name, "get_weather");
    assert_eq!(sampling.tool_choice, ToolChoice::Required);
    assert_eq!(sampling.max_tokens, 1000);
    assert_eq!(sampling.system_prompt.as_deref(), Some("be brief"));
    assert_eq!(sampling.messages.len(), 3);
    assert!(matches!(
        &sampling.messages[1].content[1],
        SamplingContent::ToolUse(u) if u.id == "c2" && u.input["city"] == "London"
    ));
    assert!(matches!(
        &sampling.messages[2].content[0],
        SamplingContent::ToolResultContent(r) if r.tool_use_id == "c1" && r.content[0].as_text() == Some("18C")
    ));
    assert!(sampling.params.get().contains("\"temperature\":0.2"));
}

#[test]
fn sampling_without_tools_is_plain_and_tools_need_the_capability() {
    let plain = json!({"messages": [ask("hi")], "maxTokens": 10});
    assert!(matches!(
        sampling(plain.clone(), &caps(json!({"sampling": {}}))),
        Ok(InputKind::Plain)
    ));
    let with_tools = json!({"messages": [ask("hi")], "maxTokens": 10, "tools": [weather_tool()]});
    let refused = sampling(with_tools, &caps(json!({"sampling": {}}))).unwrap_err();
    assert!(refused.0.contains("sampling.tools"), "{refused}");
}

#[test]
fn broken_sampling_requests_are_refused() {
    let base = |messages: Value, extra: Value| {
        let mut params = json!({"messages": messages, "maxTokens": 10, "tools": [weather_tool()]});
        if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
            p.extend(e);
        }
        params
    };
    let tool_use = json!({"role": "assistant", "content": {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}});
    let result = |id: &str| json!({"type": "tool_result", "toolUseId": id, "content": []});
    let cases = [
        (
            "a missing tool result",
            base(json!([ask("q"), tool_use.clone(), ask("next")]), json!({})),
        ),
        (
            "an unanswered tool use at the end",
            base(json!([ask("q"), tool_use.clone()]), json!({})),
        ),
        (
            "a result for another id",
            base(
                json!([ask("q"), tool_use.clone(), {"role": "user", "content": [result("c9")]}]),
                json!({}),
            ),
        ),
        (
            "results mixed with text",
            base(
                json!([ask("q"), tool_use.clone(), {"role": "user", "content": [result("c1"), {"type": "text", "text": "x"}]}]),
                json!({}),
            ),
        ),
        (
            "a result with no tool use",
            base(
                json!([{"role": "user", "content": [result("c1")]}]),
                json!({}),
            ),
        ),
        (
            "a tool use by the user",
            base(
                json!([{"role": "user", "content": {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}}]),
                json!({}),
            ),
        ),
        (
            "a result from the assistant",
            base(
                json!([ask("q"), tool_use.clone(), {"role": "assistant", "content": [result("c1")]}]),
                json!({}),
            ),
        ),
        (
            "a tool use id twice",
            base(
                json!([ask("q"), {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}},
            {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}]}]),
                json!({}),
            ),
        ),
        (
            "a tool use without input",
            base(
                json!([ask("q"), {"role": "assistant", "content": {"type": "tool_use", "id": "c1", "name": "get_weather"}}]),
                json!({}),
            ),
        ),
        (
            "an unknown role",
            base(
                json!([{"role": "system", "content": {"type": "text", "text": "x"}}]),
                json!({}),
            ),
        ),
        (
            "an unknown tool choice",
            base(
                json!([ask("q")]),
                json!({"toolChoice": {"mode": "sometimes"}}),
            ),
        ),
        (
            "a tool choice that is not an object",
            base(json!([ask("q")]), json!({"toolChoice": "auto"})),
        ),
        (
            "no maxTokens",
            json!({"messages": [ask("q")], "tools": [weather_tool()]}),
        ),
        (
            "tools that are not an array",
            json!({"messages": [ask("q")], "maxTokens": 1, "tools": {}}),
        ),
        (
            "a tool twice",
            json!({"messages": [ask("q")], "maxTokens": 1, "tools": [weather_tool(), weather_tool()]}),
        ),
        (
            "a tool without a schema",
            json!({"messages": [ask("q")], "maxTokens": 1, "tools": [{"name": "t", "inputSchema": 3}]}),
        ),
        (
            "too many tools",
            json!({"messages": [ask("q")], "maxTokens": 1,
            "tools": (0..300).map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}})).collect::<Vec<_>>()}),
        ),
    ];
    for (what, params) in cases {
        assert!(
            sampling(params, &tool_caps()).is_err(),
            "{what} was not refused"
        );
    }
}

fn weather_request(choice: &str) -> ToolSampling {
    tool_sampling(json!({"messages": [ask("Paris?")], "maxTokens": 100,
                         "tools": [weather_tool()], "toolChoice": {"mode": choice}}))
}

fn use_weather(id: &str) -> SamplingContent {
    let mut input = JsonObject::new();
    input.insert("city".to_owned(), json!("Paris"));
    SamplingContent::ToolUse(ToolUse::new(id, "get_weather", input))
}

#[test]
fn a_tool_use_answer_is_written_with_its_stop_reason() {
    let request = weather_request("auto");
    let answer = SamplingAnswer::new("model-x", vec![use_weather("c1"), use_weather("c2")]);
    let written = request.answer_json(&answer).expect("answer");
    assert_eq!(
        written,
        json!({"role": "assistant", "model": "model-x", "stopReason": "toolUse", "content": [
            {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "c2", "name": "get_weather", "input": {"city": "Paris"}}]})
    );
    let text = SamplingContent::Block(Box::new(text_block("Sunny")));
    let mut answer = SamplingAnswer::new("model-x", vec![text]);
    answer.stop_reason = Some(StopReason::EndTurn);
    assert_eq!(
        request.answer_json(&answer).expect("answer"),
        json!({"role": "assistant", "model": "model-x", "stopReason": "endTurn",
               "content": {"type": "text", "text": "Sunny"}})
    );
}

#[test]
fn answers_that_break_the_request_are_refused() {
    let text = || SamplingContent::Block(Box::new(text_block("Sunny")));
    let cases: Vec<(&str, ToolSampling, SamplingAnswer)> = vec![
        (
            "no content",
            weather_request("auto"),
            SamplingAnswer::new("m", vec![]),
        ),
        (
            "a tool use under toolChoice none",
            weather_request("none"),
            SamplingAnswer::new("m", vec![use_weather("c1")]),
        ),
        (
            "no tool use under toolChoice required",
            weather_request("required"),
            SamplingAnswer::new("m", vec![text()]),
        ),
        (
            "an unknown tool",
            weather_request("auto"),
            SamplingAnswer::new(
                "m",
                vec![SamplingContent::ToolUse(ToolUse::new(
                    "c1",
                    "rm_rf",
                    JsonObject::new(),
                ))],
            ),
        ),
        (
            "an id twice",
            weather_request("auto"),
            SamplingAnswer::new("m", vec![use_weather("c1"), use_weather("c1")]),
        ),
        (
            "an empty id",
            weather_request("auto"),
            SamplingAnswer::new("m", vec![use_weather("")]),
        ),
        (
            "a tool result",
            weather_request("auto"),
            SamplingAnswer::new(
                "m",
                vec![SamplingContent::ToolResultContent(ToolResultContent {
                    tool_use_id: "c1".to_owned(),
                    content: vec![],
                    is_error: false,
                })],
            ),
        ),
        ("toolUse with no tool use", weather_request("auto"), {
            let mut answer = SamplingAnswer::new("m", vec![text()]);
            answer.stop_reason = Some(StopReason::ToolUse);
            answer
        }),
    ];
    for (what, request, answer) in cases {
        assert!(
            request.answer_json(&answer).is_err(),
            "{what} was not refused"
        );
    }
}

#[test]
fn other_methods_are_plain() {
    assert!(matches!(
        classify(
            methods::ROOTS_LIST,
            None,
            &ClientCapabilities::default(),
            true
        ),
        Ok(InputKind::Plain)
    ));
}
