//! URL-mode elicitation and sampling with tools through the host's `InputHandler`, in both
//! eras, against in-process servers: the typed methods, their defaults (decline), the
//! completion notification, and the `-32042` error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::ErrorKind;
use mcpwire::client::{
    CallOptions, Client, ClientOptions, ElicitAction, InputFuture, InputHandler, SamplingAnswer,
    SamplingContent, ToolChoice, ToolSampling, ToolUse, UrlElicitation,
};
use mcpwire::mcp::{ClientCapabilities, InputRequest, JsonObject, ProtocolVersion};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::{Value, json};

use crate::hostile::url_elicitation_required;
use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::{mcp_server, rpc_result, sse_event};

const WAIT: Duration = Duration::from_secs(10);

fn declared() -> ClientCapabilities {
    serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}},
                                  "sampling": {"tools": {}}}))
    .expect("capabilities")
}

/// A handler that implements the typed methods and records what it saw.
#[derive(Default)]
struct Typed {
    urls: Mutex<Vec<UrlElicitation>>,
    samplings: Mutex<Vec<ToolSampling>>,
    completed: Mutex<Vec<String>>,
}

impl InputHandler for Typed {
    fn capabilities(&self) -> ClientCapabilities {
        declared()
    }

    fn answer(&self, request: InputRequest) -> InputFuture {
        let method = request.method;
        Box::pin(async move { Err(format!("not expected: {method}").into()) })
    }

    fn elicit_url(&self, request: UrlElicitation) -> InputFuture<ElicitAction> {
        self.urls.lock().unwrap().push(request);
        Box::pin(async { Ok(ElicitAction::Accept) })
    }

    fn sample_with_tools(&self, request: ToolSampling) -> InputFuture<Option<SamplingAnswer>> {
        let tool = request.tools[0].name.clone();
        self.samplings.lock().unwrap().push(request);
        let mut input = JsonObject::new();
        input.insert("city".to_owned(), json!("Paris"));
        let answer = SamplingAnswer::new(
            "test-model",
            vec![SamplingContent::ToolUse(ToolUse::new(
                "call-1", tool, input,
            ))],
        );
        Box::pin(async move { Ok(Some(answer)) })
    }

    fn elicitation_complete(&self, elicitation_id: &str) {
        self.completed
            .lock()
            .unwrap()
            .push(elicitation_id.to_owned());
    }
}

/// A handler written before the typed methods: it declares URL mode and tools, and
/// implements only `answer`.
struct Untyped;

impl InputHandler for Untyped {
    fn capabilities(&self) -> ClientCapabilities {
        declared()
    }

    fn answer(&self, request: InputRequest) -> InputFuture {
        let method = request.method;
        Box::pin(async move { Err(format!("not expected: {method}").into()) })
    }
}

fn url_elicitation(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
           "params": {"mode": "url", "elicitationId": "e-1", "message": "Connect your account",
                      "url": "https://mcp.example.com/connect?elicitationId=e-1"}})
}

fn sampling_params() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Weather?"}}],
           "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
           "toolChoice": {"mode": "required"}, "maxTokens": 100})
}

async fn connect(server: &FaultServer, handler: Arc<dyn InputHandler>) -> Client {
    let pool = HttpPool::new(&TlsOptions::default()).expect("pool");
    let config = HttpConfig::new(&server.url("/mcp")).expect("config");
    let mut options = ClientOptions::default();
    options.input_handler = Some(handler);
    Client::connect_http(&pool, config, options)
        .await
        .expect("connect")
}

/// A 2025-11-25 server whose `tools/call` asks for a URL elicitation and a sampling with
/// tools, says the elicitation is complete (twice, and once for an id it never sent), then
/// answers.
async fn asking_2025() -> FaultServer {
    mcp_server(|req| {
        let sampling = json!({"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage",
                              "params": sampling_params()});
        let complete = |id: &str| {
            json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                   "params": {"elicitationId": id}})
        };
        let done = rpc_result(req, json!({"content": [{"type": "text", "text": "done"}]}));
        Reply::sse_steps(
            200,
            vec![
                Step::text(&sse_event(&url_elicitation("u-1"))),
                Step::text(&sse_event(&sampling)),
                Step::delay_ms(300),
                Step::text(&sse_event(&complete("never-sent"))),
                Step::text(&sse_event(&complete("e-1"))),
                Step::text(&sse_event(&complete("e-1"))),
                Step::delay_ms(100),
                Step::text(&sse_event(&done)),
            ],
        )
    })
    .await
}

fn answer_to(requests: &[Recorded], id: &str) -> Value {
    requests
        .iter()
        .filter_map(Recorded::json)
        .find(|m| m["id"] == id && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer to {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_server_gets_typed_answers_and_the_handler_hears_the_completion_once() {
    let server = asking_2025().await;
    let handler = Arc::new(Typed::default());
    let client = connect(&server, handler.clone()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let result = client
        .call_tool("connect", None, CallOptions::default())
        .await
        .expect("the call goes on");
    assert_eq!(result.content[0].as_text(), Some("done"));
    let requests = server.wait_for_requests(6, WAIT).await;
    let initialize = requests
        .iter()
        .find(|r| r.jsonrpc_method().as_deref() == Some("initialize"))
        .and_then(Recorded::json)
        .expect("initialize");
    assert_eq!(
        initialize["params"]["capabilities"],
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}})
    );
    assert_eq!(
        answer_to(&requests, "u-1")["result"],
        json!({"action": "accept"})
    );
    assert_eq!(
        answer_to(&requests, "s-1")["result"],
        json!({"role": "assistant", "model": "test-model", "stopReason": "toolUse",
               "content": {"type": "tool_use", "id": "call-1", "name": "get_weather",
                           "input": {"city": "Paris"}}})
    );
    client.close().await;
    let urls = handler.urls.lock().unwrap();
    assert_eq!(urls.len(), 1);
    assert_eq!(urls[0].host(), "mcp.example.com");
    assert_eq!(urls[0].elicitation_id(), Some("e-1"));
    let samplings = handler.samplings.lock().unwrap();
    assert_eq!(samplings[0].tool_choice, ToolChoice::Required);
    assert_eq!(*handler.completed.lock().unwrap(), ["e-1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_without_the_typed_methods_declines_both() {
    let server = asking_2025().await;
    let client = connect(&server, Arc::new(Untyped)).await;
    client
        .call_tool("connect", None, CallOptions::default())
        .await
        .expect("the call goes on");
    let requests = server.wait_for_requests(6, WAIT).await;
    assert_eq!(
        answer_to(&requests, "u-1")["result"],
        json!({"action": "decline"})
    );
    let sampling = answer_to(&requests, "s-1");
    assert_eq!(sampling["error"]["code"], -1, "{sampling}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_32042_error_gives_the_host_its_elicitations_and_the_call_is_not_sent_again() {
    let server = mcp_server(|req| url_elicitation_required(req, "e-7")).await;
    let client = connect(&server, Arc::new(Typed::default())).await;
    let error = client
        .call_tool("files", None, CallOptions::default())
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::ServerError);
    assert!(!error.outcome_unknown(), "the tool did not run");
    let listed = error.url_elicitations().expect("a -32042").expect("valid");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].elicitation_id(), Some("e-7"));
    assert_eq!(listed[0].message(), "Authorization is required.");
    let calls = server
        .requests()
        .iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some("tools/call"))
        .count();
    assert_eq!(calls, 1);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_input_round_answers_url_and_tool_sampling_requests_typed() {
    let server = FaultServer::start(|req| {
        let body = req.json().unwrap_or_default();
        match req.jsonrpc_method().as_deref() {
            Some("server/discover") => crate::modern::discover(req),
            Some("tools/call") if body["params"].get("inputResponses").is_none() => Reply::json(
                200,
                rpc_result(
                    req,
                    json!({"resultType": "input_required", "requestState": "st-1",
                           "inputRequests": {
                               "link": {"method": "elicitation/create", "params": {
                                   "mode": "url", "message": "Link your account",
                                   "url": "https://auth.example.com/start"}},
                               "plan": {"method": "sampling/createMessage",
                                        "params": sampling_params()}}}),
                ),
            ),
            Some("tools/call") => {
                let responses = &body["params"]["inputResponses"];
                let text = format!(
                    "{} {}",
                    responses["link"], responses["plan"]["content"]["name"]
                );
                Reply::json(
                    200,
                    rpc_result(
                        req,
                        json!({"resultType": "complete",
                               "content": [{"type": "text", "text": text}]}),
                    ),
                )
            }
            _ => Reply::empty(404),
        }
    })
    .await;
    let handler = Arc::new(Typed::default());
    let client = connect(&server, handler.clone()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let result = client
        .call_tool("link", None, CallOptions::default())
        .await
        .expect("finished");
    assert_eq!(
        result.content[0].as_text(),
        Some(r#"{"action":"accept"} "get_weather""#)
    );
    client.close().await;
    let urls = handler.urls.lock().unwrap();
    assert_eq!(urls[0].host(), "auth.example.com");
    assert_eq!(urls[0].elicitation_id(), None, "optional at 2026-07-28");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_url_elicitation_to_plain_http_fails_the_call_before_the_host_sees_it() {
    let server = FaultServer::start(|req| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => crate::modern::discover(req),
        Some("tools/call") => Reply::json(
            200,
            rpc_result(
                req,
                json!({"resultType": "input_required",
                       "inputRequests": {"link": {"method": "elicitation/create", "params": {
                           "mode": "url", "message": "Link", "url": "http://evil.example/"}}}}),
            ),
        ),
        _ => Reply::empty(404),
    })
    .await;
    let handler = Arc::new(Typed::default());
    let client = connect(&server, handler.clone()).await;
    let error = client
        .call_tool("link", None, CallOptions::default())
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Protocol, "{error}");
    assert!(error.to_string().contains("https"), "{error}");
    assert!(handler.urls.lock().unwrap().is_empty());
    client.close().await;
}
