//! URL-mode elicitation and sampling with tools against real servers: server-everything's
//! `trigger-url-elicitation` at 2025-11-25 (the `elicitation/create` request path and the
//! `-32042` error path), and the TypeScript SDK v2 server's `link_account` and `plan_weather`
//! (`tests/peers/ts2_server.mjs`) at 2026-07-28, through `input_required`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::ErrorKind;
use mcpwire::client::{
    CallOptions, Client, ClientOptions, ElicitAction, InputFuture, InputHandler, SamplingAnswer,
    SamplingContent, ToolChoice, ToolSampling, ToolUse, UrlElicitation,
};
use mcpwire::mcp::{CallToolResult, ClientCapabilities, InputRequest, JsonObject, ProtocolVersion};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::{Value, json};

use crate::support::peers::{self, Peer, PeerServer};

const STEP: Duration = Duration::from_secs(15);

/// Answers URL elicitations with `action` and tool samplings with one `get_weather` use,
/// recording what it saw.
struct Host {
    action: ElicitAction,
    urls: Mutex<Vec<UrlElicitation>>,
    samplings: Mutex<Vec<ToolSampling>>,
}

impl Host {
    fn new(action: ElicitAction) -> Arc<Host> {
        Arc::new(Host {
            action,
            urls: Mutex::new(Vec::new()),
            samplings: Mutex::new(Vec::new()),
        })
    }
}

impl InputHandler for Host {
    fn capabilities(&self) -> ClientCapabilities {
        serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}},
                                      "sampling": {"tools": {}}}))
        .expect("capabilities")
    }

    fn answer(&self, request: InputRequest) -> InputFuture {
        let method = request.method;
        Box::pin(async move { Err(format!("not expected: {method}").into()) })
    }

    fn elicit_url(&self, request: UrlElicitation) -> InputFuture<ElicitAction> {
        self.urls.lock().unwrap().push(request);
        let action = self.action;
        Box::pin(async move { Ok(action) })
    }

    fn sample_with_tools(&self, request: ToolSampling) -> InputFuture<Option<SamplingAnswer>> {
        self.samplings.lock().unwrap().push(request);
        let mut input = JsonObject::new();
        input.insert("city".to_owned(), json!("Paris"));
        let content = vec![SamplingContent::ToolUse(ToolUse::new(
            "toolu_1",
            "get_weather",
            input,
        ))];
        Box::pin(async move { Ok(Some(SamplingAnswer::new("interop-model", content))) })
    }
}

async fn connect(url: &str, handler: Arc<Host>) -> Client {
    let pool = HttpPool::new(&TlsOptions::default()).expect("pool");
    let config = HttpConfig::new(url).expect("config");
    let mut options = ClientOptions::default();
    options.request_timeout = STEP;
    options.session.initialize_timeout = STEP;
    options.input_handler = Some(handler);
    Client::connect_http(&pool, config, options)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, mcpwire::Error> {
    let mut options = CallOptions::default();
    options.timeout = STEP;
    client
        .call_tool(name, arguments.as_object().cloned(), options)
        .await
}

fn texts(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn everything_http_url_elicitation_request_and_error_paths() {
    peers::require(Peer::Everything);
    let server = PeerServer::everything("streamableHttp");
    for action in [ElicitAction::Accept, ElicitAction::Decline] {
        let host = Host::new(action);
        let client = connect(&server.url, host.clone()).await;
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
        let tools = client.list_tools().await.expect("tools/list");
        assert!(
            tools.iter().any(|t| t.name == "trigger-url-elicitation"),
            "registered for a client that declares elicitation.url"
        );
        // The request path: elicitation/create with mode "url", answered by elicit_url.
        let url = "https://example.com/connect?step=1";
        let result = call(
            &client,
            "trigger-url-elicitation",
            json!({"url": url, "elicitationId": "mcpwire-e-1", "message": "Open it"}),
        )
        .await
        .expect("the call");
        let text = texts(&result);
        let want = match action {
            ElicitAction::Accept => "User completed the URL elicitation flow",
            _ => "User declined to open the URL",
        };
        assert!(text.contains(want), "{text}");
        {
            let urls = host.urls.lock().unwrap();
            assert_eq!(urls.len(), 1);
            assert_eq!(urls[0].url(), url);
            assert_eq!(urls[0].host(), "example.com");
            assert_eq!(urls[0].elicitation_id(), Some("mcpwire-e-1"));
            assert_eq!(urls[0].message(), "Open it");
        }
        // The error path: -32042 with the prerequisite elicitation, nothing run, never
        // re-sent by the client.
        let error = call(
            &client,
            "trigger-url-elicitation",
            json!({"url": "https://example.com/other", "errorPath": true}),
        )
        .await
        .expect_err("-32042");
        assert_eq!(error.kind(), ErrorKind::ServerError, "{error}");
        assert!(!error.outcome_unknown());
        let listed = error.url_elicitations().expect("a -32042").expect("valid");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].host(), "modelcontextprotocol.io");
        assert!(listed[0].elicitation_id().is_some_and(|id| id.len() == 36));
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_2026_url_elicitation_and_sampling_with_tools_through_input_required() {
    peers::require(Peer::Ts2);
    let server = PeerServer::ts2(&[]);
    let host = Host::new(ElicitAction::Accept);
    let client = connect(&server.url, host.clone()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let linked = call(
        &client,
        "link_account",
        json!({"url": "https://auth.example.com/start"}),
    )
    .await
    .expect("link_account");
    assert_eq!(texts(&linked), "link: accept");
    {
        let urls = host.urls.lock().unwrap();
        assert_eq!(urls[0].host(), "auth.example.com");
        assert_eq!(urls[0].elicitation_id(), None);
    }
    let planned = call(&client, "plan_weather", json!({"city": "Paris"}))
        .await
        .expect("plan_weather");
    assert_eq!(
        texts(&planned),
        r#"stop toolUse; uses: get_weather {"city":"Paris"}"#
    );
    {
        let samplings = host.samplings.lock().unwrap();
        assert_eq!(samplings[0].tool_choice, ToolChoice::Required);
        assert_eq!(samplings[0].tools[0].name, "get_weather");
        assert_eq!(samplings[0].max_tokens, 200);
    }
    // A URL the client refuses (plain http to another host): the call fails before the host
    // sees it, and is not retried.
    let refused = call(
        &client,
        "link_account",
        json!({"url": "http://evil.example/"}),
    )
    .await
    .expect_err("refused");
    assert_eq!(refused.kind(), ErrorKind::Protocol, "{refused}");
    assert_eq!(host.urls.lock().unwrap().len(), 1);
    client.close().await;
}
