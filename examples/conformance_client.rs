//! Conformance driver: mcpwire's client under the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, client scenarios).
//!
//! ```sh
//! cargo build --example conformance_client
//! conformance client --command target/debug/examples/conformance_client --scenario sse-retry
//! ```
//!
//! The runner starts a mock server for one scenario, appends its URL as the last argument and
//! names the scenario in `MCP_CONFORMANCE_SCENARIO`. This driver does what the scenario asks
//! through mcpwire's library API ([`Client`]) and exits 0 when that worked, 1 (with a message
//! on stderr) when it did not or when the scenario needs something mcpwire does not support,
//! 2 on a usage error. The wire conversation is logged to stderr with
//! milliseconds since start; the runner keeps it in the scenario's `stderr.txt`.
//! `scripts/conformance` runs every scenario; `CONFORMANCE.md` has the results.

// A driver reads the clock for its log; the ban in clippy.toml is for the sans-IO layers.
#![allow(clippy::disallowed_methods)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpwire::auth::{
    AssertionFuture, AssertionProvider, AssertionSource, Config, Dpop, EnterpriseIdp,
    PreRegistered, Secret, SigningKey, Url,
};
use mcpwire::client::auth::{Auth, Authorizer, Headless, OAuth};
use mcpwire::client::{CallOptions, Client, ClientOptions, InputFuture, InputHandler};
use mcpwire::mcp::InputRequest;
use mcpwire::mcp::{CallToolResult, ClientCapabilities, ContentBlock, JsonObject};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::{Value, json};

/// How long one scenario may take in all; below the runner's own per-scenario timeout, so a
/// hang shows up as this driver's message rather than a kill.
const SCENARIO_DEADLINE: Duration = Duration::from_secs(15);

/// What a scenario run came to.
enum Outcome {
    Passed(String),
    Failed(String),
    Unsupported(String),
}

fn main() -> ExitCode {
    let start = Instant::now();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=NAME conformance_client URL");
        return ExitCode::from(2);
    };
    let Ok(scenario) = std::env::var("MCP_CONFORMANCE_SCENARIO") else {
        eprintln!("conformance_client: MCP_CONFORMANCE_SCENARIO is not set");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("conformance_client: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match tokio::time::timeout(SCENARIO_DEADLINE, run(&scenario, &url, start)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Failed(format!(
                "the scenario did not finish within {} s",
                SCENARIO_DEADLINE.as_secs()
            )),
        }
    });
    let elapsed = start.elapsed().as_millis();
    match outcome {
        Outcome::Passed(what) => {
            eprintln!("conformance_client: {scenario}: ok after {elapsed} ms: {what}");
            ExitCode::SUCCESS
        }
        Outcome::Failed(why) => {
            eprintln!("conformance_client: {scenario}: FAILED after {elapsed} ms: {why}");
            ExitCode::FAILURE
        }
        Outcome::Unsupported(what) => {
            eprintln!("conformance_client: {scenario}: not supported: {what}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str, start: Instant) -> Outcome {
    match scenario {
        "initialize" => initialize(url, start).await,
        "tools_call" => tools_call(url, start).await,
        "sse-retry" => sse_retry(url, start).await,
        "request-metadata" => request_metadata(url, start).await,
        "sep-2322-client-request-state" => request_state(url, start).await,
        "http-standard-headers" => standard_headers(url, start).await,
        "http-custom-headers" => custom_headers(url, start).await,
        "http-invalid-tool-headers" => invalid_tool_headers(url, start).await,
        "json-schema-ref-no-deref" => list_only(url, start).await,
        "json-schema-2020-12-preservation" => schema_preservation(url, start).await,
        "sep-2640-client-no-prefetch" => no_prefetch(url, start).await,
        s if s.starts_with("auth/") => auth(s, url, start).await,
        s if s.starts_with("elicitation") => elicitation(url, start).await,
        other => Outcome::Unsupported(format!("unknown scenario {other:?}")),
    }
}

/// Opens a session with the wire conversation logged to stderr. The era comes from the probe
/// (`server/discover`), as for any server.
async fn connect_client(url: &str, start: Instant) -> Result<Client, mcpwire::Error> {
    connect_with(url, start, None, false).await
}

async fn connect_with(
    url: &str,
    start: Instant,
    handler: Option<Arc<dyn InputHandler>>,
    server_stream: bool,
) -> Result<Client, mcpwire::Error> {
    let pool = HttpPool::new(&TlsOptions::default())?;
    connect_http_with(&pool, url, start, client_options(handler), server_stream).await
}

/// The driver's client options: short request timeouts, warnings to stderr.
fn client_options(handler: Option<Arc<dyn InputHandler>>) -> ClientOptions {
    let mut options = ClientOptions::default();
    options.request_timeout = Duration::from_secs(10);
    options.input_handler = handler;
    options.on_warning = Some(Arc::new(|line: &str| eprintln!("warning: {line}")));
    options
}

/// Connects over `pool` with the wire conversation logged to stderr.
async fn connect_http_with(
    pool: &HttpPool,
    url: &str,
    start: Instant,
    options: ClientOptions,
    server_stream: bool,
) -> Result<Client, mcpwire::Error> {
    let mut config = HttpConfig::new(url)?;
    config.server_stream = server_stream;
    config.wire_log = Some(Arc::new(move |line: &str| {
        eprintln!("[{:>6} ms] {line}", start.elapsed().as_millis());
    }));
    Client::connect_http(pool, config, options).await
}

/// Answers a form elicitation by accepting it with every field the schema gives a default
/// (SEP-1034), and a plain value of the field's type for a required field without one; lists
/// no roots; declines sampling (no model here).
struct AcceptWithDefaults;

impl InputHandler for AcceptWithDefaults {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(JsonObject::new()),
            ..ClientCapabilities::default()
        }
    }

    fn answer(&self, request: InputRequest) -> InputFuture {
        Box::pin(async move {
            let params: Value = match &request.params {
                Some(raw) => serde_json::from_str(raw.get())?,
                None => Value::Null,
            };
            match request.method.as_str() {
                "elicitation/create" => Ok(
                    json!({"action": "accept", "content": form_answer(&params["requestedSchema"])}),
                ),
                "roots/list" => Ok(json!({"roots": []})),
                other => Err(format!("this driver does not answer {other}").into()),
            }
        })
    }
}

/// The content of an accepted form: defaults, and for a field without one a value of its
/// type (`true` for booleans, as the MRTR mock's confirmation wants).
fn form_answer(schema: &Value) -> Value {
    let mut content = serde_json::Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let value = match property.get("default") {
                Some(default) => default.clone(),
                None => match property["type"].as_str() {
                    Some("boolean") => json!(true),
                    Some("integer" | "number") => json!(0),
                    Some("string") => json!(""),
                    _ => continue,
                },
            };
            content.insert(name.clone(), value);
        }
    }
    Value::Object(content)
}

/// Runs `body` with a connected client, closes it, and turns the result into an outcome.
async fn with_client<F>(client: Result<Client, mcpwire::Error>, body: F) -> Outcome
where
    F: AsyncFnOnce(&Client) -> Result<String, String>,
{
    let client = match client {
        Ok(client) => client,
        Err(e) => return Outcome::Failed(format!("connecting failed: {e}")),
    };
    let outcome = body(&client).await;
    client.close().await;
    match outcome {
        Ok(what) => Outcome::Passed(what),
        Err(why) => Outcome::Failed(why),
    }
}

/// `request-metadata` (2026-07-28): the mock rejects the first request with -32022 naming
/// 2026-07-28; the probe is repeated once at that revision, every request carrying the
/// envelope and the matching header.
async fn request_metadata(url: &str, start: Instant) -> Outcome {
    with_client(connect_client(url, start).await, async |client| {
        Ok(format!("connected at {}", client.protocol_version()))
    })
    .await
}

/// `sep-2322-client-request-state`: every tool called with `{}`, `input_required` answered
/// by the handler, the state echoed exactly, a new id each round.
async fn request_state(url: &str, start: Instant) -> Outcome {
    let handler: Arc<dyn InputHandler> = Arc::new(AcceptWithDefaults);
    with_client(
        connect_with(url, start, Some(handler), false).await,
        async |client| {
            let tools = client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
            let mut done = Vec::new();
            for tool in &tools {
                let result = client
                    .call_tool(&tool.name, Some(JsonObject::new()), call_options())
                    .await
                    .map_err(|e| format!("tools/call {}: {e}", tool.name))?;
                done.push(format!("{}: {}", tool.name, texts(&result)));
            }
            Ok(done.join("; "))
        },
    )
    .await
}

/// `http-standard-headers`: one request of each kind, so each carries its `Mcp-Method` and
/// `Mcp-Name`.
async fn standard_headers(url: &str, start: Instant) -> Outcome {
    with_client(connect_client(url, start).await, async |client| {
        let mut seen = Vec::new();
        let tools = client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        for tool in &tools {
            client
                .call_tool(&tool.name, Some(JsonObject::new()), call_options())
                .await
                .map_err(|e| format!("tools/call {}: {e}", tool.name))?;
            seen.push(tool.name.clone());
        }
        let resources = client
            .request_raw("resources/list", Some(json!({})), None)
            .await
            .map_err(|e| format!("resources/list: {e}"))?;
        let resources: Value = serde_json::from_str(resources.get()).map_err(|e| e.to_string())?;
        for resource in resources["resources"].as_array().into_iter().flatten() {
            let uri = resource["uri"].as_str().unwrap_or_default();
            client
                .request_raw("resources/read", Some(json!({"uri": uri})), None)
                .await
                .map_err(|e| format!("resources/read {uri}: {e}"))?;
            seen.push(uri.to_owned());
        }
        let prompts = client
            .request_raw("prompts/list", Some(json!({})), None)
            .await
            .map_err(|e| format!("prompts/list: {e}"))?;
        let prompts: Value = serde_json::from_str(prompts.get()).map_err(|e| e.to_string())?;
        for prompt in prompts["prompts"].as_array().into_iter().flatten() {
            let name = prompt["name"].as_str().unwrap_or_default();
            client
                .request_raw(
                    "prompts/get",
                    Some(json!({"name": name, "arguments": {}})),
                    None,
                )
                .await
                .map_err(|e| format!("prompts/get {name}: {e}"))?;
            seen.push(name.to_owned());
        }
        Ok(format!("sent {}", seen.join(", ")))
    })
    .await
}

/// `http-custom-headers`: the calls the scenario's context names, with exactly its arguments
/// (their `x-mcp-header` arguments mirrored into `Mcp-Param-*`).
async fn custom_headers(url: &str, start: Instant) -> Outcome {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    with_client(connect_client(url, start).await, async |client| {
        client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        let calls = context["toolCalls"].as_array().cloned().unwrap_or_default();
        for call in &calls {
            let name = call["name"].as_str().unwrap_or_default();
            client
                .call_tool(name, call["arguments"].as_object().cloned(), call_options())
                .await
                .map_err(|e| format!("tools/call {name}: {e}"))?;
        }
        Ok(format!("{} calls from the context", calls.len()))
    })
    .await
}

/// `http-invalid-tool-headers`: the listing leaves out the tools with invalid annotations;
/// the valid one is called.
async fn invalid_tool_headers(url: &str, start: Instant) -> Outcome {
    with_client(connect_client(url, start).await, async |client| {
        let tools = client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        if names != ["valid_tool"] {
            return Err(format!("the listing kept {names:?}"));
        }
        let arguments = json!({"region": "us-west1"}).as_object().cloned();
        client
            .call_tool("valid_tool", arguments, call_options())
            .await
            .map_err(|e| format!("tools/call valid_tool: {e}"))?;
        Ok("valid_tool called; the invalid tools were left out".to_owned())
    })
    .await
}

/// `json-schema-ref-no-deref`: list the tools; a schema's remote `$ref` is never fetched.
async fn list_only(url: &str, start: Instant) -> Outcome {
    with_client(connect_client(url, start).await, async |client| {
        let tools = client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        Ok(format!(
            "{} tools listed, no schema dereferenced",
            tools.len()
        ))
    })
    .await
}

/// `json-schema-2020-12-preservation`: the focal tool's input schema echoed back as received.
async fn schema_preservation(url: &str, start: Instant) -> Outcome {
    with_client(connect_client(url, start).await, async |client| {
        let tools = client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        let focal = tools
            .iter()
            .find(|t| t.name == "json_schema_2020_12_tool")
            .ok_or("no json_schema_2020_12_tool")?;
        let arguments = json!({"schema": focal.input_schema}).as_object().cloned();
        client
            .call_tool("json_schema_echo", arguments, call_options())
            .await
            .map_err(|e| format!("tools/call json_schema_echo: {e}"))?;
        Ok("the schema was echoed as received".to_owned())
    })
    .await
}

/// `sep-2640-client-no-prefetch`: connect, and list tools only if the server offers them;
/// nothing is fetched ahead of need.
async fn no_prefetch(url: &str, start: Instant) -> Outcome {
    with_client(connect_client(url, start).await, async |client| {
        let offers_tools = client
            .server()
            .is_some_and(|s| s.capabilities.tools.is_some());
        if offers_tools {
            client
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {e}"))?;
        }
        Ok(format!(
            "connected at {}; nothing prefetched",
            client.protocol_version()
        ))
    })
    .await
}

/// [`connect_client`] with the error as a message.
async fn connect(url: &str, start: Instant) -> Result<Client, String> {
    connect_client(url, start)
        .await
        .map_err(|e| format!("initialize failed: {e}"))
}

/// `initialize`: the handshake (`initialize`, `notifications/initialized`), then `tools/list`
/// if the server declares tools (the mock declares nothing, and mcpwire refuses to ask a server
/// for a capability it did not declare), then close.
async fn initialize(url: &str, start: Instant) -> Outcome {
    let client = match connect(url, start).await {
        Ok(client) => client,
        Err(e) => return Outcome::Failed(e),
    };
    let version = client.protocol_version();
    let listed = if client
        .server()
        .is_none_or(|s| s.capabilities.tools.is_some())
    {
        Some(client.list_tools().await)
    } else {
        None
    };
    client.close().await;
    match listed {
        None => Outcome::Passed(format!(
            "initialized at protocol {version:?}; the server declares no tools"
        )),
        Some(Ok(tools)) => Outcome::Passed(format!(
            "initialized at protocol {version:?}, {} tools listed",
            tools.len()
        )),
        Some(Err(e)) => Outcome::Failed(format!("tools/list failed: {e}")),
    }
}

/// `tools_call`: initialize, `tools/list` (which must offer `add_numbers`), then call it and
/// check the sum in the answer.
async fn tools_call(url: &str, start: Instant) -> Outcome {
    let client = match connect(url, start).await {
        Ok(client) => client,
        Err(e) => return Outcome::Failed(e),
    };
    let outcome = async {
        let tools = client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        if !tools.iter().any(|t| t.name == "add_numbers") {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            return Err(format!("tools/list has no add_numbers: {names:?}"));
        }
        let arguments = serde_json::json!({"a": 5, "b": 3}).as_object().cloned();
        let result = client
            .call_tool("add_numbers", arguments, call_options())
            .await
            .map_err(|e| format!("tools/call add_numbers failed: {e}"))?;
        let text = texts(&result);
        if result.is_error() {
            return Err(format!("add_numbers returned isError: {text}"));
        }
        if !text.contains('8') {
            return Err(format!("add_numbers(5, 3) answered {text:?}, not 8"));
        }
        Ok(format!("add_numbers(5, 3) answered {text:?}"))
    }
    .await;
    client.close().await;
    match outcome {
        Ok(what) => Outcome::Passed(what),
        Err(why) => Outcome::Failed(why),
    }
}

/// `sse-retry` (SEP-1699): the server answers `tools/call test_reconnection` with a stream
/// holding only a priming event (`id`, `retry: 500`) and closes it; the client must wait the
/// `retry` time, resume with a GET carrying `Last-Event-ID`, and read the result there. The
/// runner measures the wait; here the result must arrive.
async fn sse_retry(url: &str, start: Instant) -> Outcome {
    let client = match connect(url, start).await {
        Ok(client) => client,
        Err(e) => return Outcome::Failed(e),
    };
    let result = client
        .call_tool("test_reconnection", None, call_options())
        .await;
    client.close().await;
    match result {
        Ok(result) if result.is_error() => Outcome::Failed(format!(
            "test_reconnection returned isError: {}",
            texts(&result)
        )),
        Ok(result) => Outcome::Passed(format!(
            "test_reconnection answered {:?} on the resumed stream",
            texts(&result)
        )),
        Err(e) => Outcome::Failed(format!("tools/call test_reconnection failed: {e}")),
    }
}

/// The client id the CIMD scenario expects: the URL of a Client ID Metadata Document (the
/// mock accepts it without fetching it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Where the mocks' `/authorize` sends the browser back; nothing listens there, the headless
/// authorizer takes the `Location` itself.
const REDIRECT_URI: &str = "http://127.0.0.1:3000/callback";

/// `auth/*`: the mock servers want an OAuth 2.1 flow (or client credentials) first, answering
/// 401 (or 403 for more scope). The client runs it through the library: `ClientOptions::auth`
/// with [`OAuth`], whose authorizer here is [`Headless`] (the mocks' `/authorize` redirects
/// straight back). The scenario's context (`MCP_CONFORMANCE_CONTEXT`) gives a pre-registered
/// client: its id and secret, or for `auth/client-credentials-jwt` an ES256 key. Then
/// `tools/list` and `tools/call test-tool`, as a host would.
async fn auth(scenario: &str, url: &str, start: Instant) -> Outcome {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let pool = match HttpPool::new(&TlsOptions::default()) {
        Ok(pool) => pool,
        Err(e) => return Outcome::Failed(format!("no HTTP pool: {e}")),
    };
    let oauth = match oauth_for(scenario, url, &context, &pool) {
        Ok(oauth) => oauth,
        Err(e) => return Outcome::Failed(format!("the OAuth configuration: {e}")),
    };
    let mut options = client_options(None);
    options.auth = Some(Auth::oauth(Arc::new(oauth)));
    let client = connect_http_with(&pool, url, start, options, false).await;
    let outcome = with_client(client, async |client| {
        let tools = client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        let result = client
            .call_tool("test-tool", Some(JsonObject::new()), call_options())
            .await
            .map_err(|e| format!("tools/call test-tool: {e}"))?;
        Ok(format!(
            "{} tools listed; test-tool answered {:?}",
            tools.len(),
            texts(&result)
        ))
    })
    .await;
    let _ = std::fs::remove_file(wif_token_path());
    outcome
}

/// Where the WIF scenario's workload token is written for the flow to read.
fn wif_token_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("mcpwire-wif-{}.jwt", std::process::id()))
}

/// The OAuth flow for a scenario: client credentials for the extension's scenarios, else the
/// authorization code grant with PKCE (with a pre-registered client when the context names
/// one, and a Client ID Metadata Document URL for servers that take one).
fn oauth_for(
    scenario: &str,
    url: &str,
    context: &Value,
    pool: &HttpPool,
) -> Result<OAuth, Box<dyn std::error::Error>> {
    let client = match context["client_id"].as_str() {
        Some(id) => {
            let mut client = PreRegistered::new(id);
            client.client_secret = context["client_secret"].as_str().map(Secret::new);
            if let Some(pem) = context["private_key_pem"].as_str() {
                client.signing_key = Some(Arc::new(SigningKey::from_pkcs8_pem(pem, None)?));
            }
            Some(client)
        }
        None => None,
    };
    let config = if scenario.starts_with("auth/client-credentials") {
        let client = client.ok_or("the scenario's context names no client")?;
        Config::client_credentials(url, client)?
    } else if scenario == "auth/wif-jwt-bearer" {
        // The workload token as a platform leaves it: a file, read at each use.
        let client = client.ok_or("the scenario's context names no client")?;
        let jwt = context["valid_jwt"]
            .as_str()
            .ok_or("the scenario's context has no valid_jwt")?;
        let path = wif_token_path();
        write_private(&path, jwt)?;
        Config::jwt_bearer(url, client, AssertionSource::File(path))?
    } else if scenario == "auth/enterprise-managed-authorization" {
        // The user's ID token from the host (here the scenario's context).
        let client = client.ok_or("the scenario's context names no client")?;
        let endpoint = context["idp_token_endpoint"]
            .as_str()
            .ok_or("the scenario's context has no idp_token_endpoint")?;
        let idp_client = context["idp_client_id"]
            .as_str()
            .ok_or("the scenario's context has no idp_client_id")?;
        let id_token = context["idp_id_token"]
            .as_str()
            .ok_or("the scenario's context has no idp_id_token")?;
        let idp = EnterpriseIdp::new(
            Url::parse(endpoint)?,
            PreRegistered::new(idp_client),
            AssertionSource::Host(Arc::new(FixedIdToken(Secret::new(id_token)))),
        );
        Config::enterprise_managed(url, client, idp)?
    } else {
        let mut config = Config::authorization_code(url, REDIRECT_URI)?;
        config.pre_registered = client;
        config.metadata_document = Some(Url::parse(CLIENT_METADATA_URL)?);
        if scenario.starts_with("auth/dpop") {
            // The flow makes the key, of an algorithm the servers take.
            config.dpop = Some(Dpop::default());
        }
        config
    };
    let authorizer: Arc<dyn Authorizer> = Arc::new(Headless::new(pool, Duration::from_secs(5)));
    Ok(OAuth::new(config, Some(authorizer))?)
}

/// The scenario's ID token, as a host's sign-in would hand it out.
struct FixedIdToken(Secret);

impl AssertionProvider for FixedIdToken {
    fn assertion(&self) -> AssertionFuture {
        let token = self.0.clone();
        Box::pin(async move { Ok(token) })
    }
}

/// Writes `text` to a new file only this user may read.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// `elicitation-*` (2025-11-25): the tool sends `elicitation/create` on the standalone GET
/// stream; the input handler accepts it with the schema's defaults (SEP-1034).
async fn elicitation(url: &str, start: Instant) -> Outcome {
    let handler: Arc<dyn InputHandler> = Arc::new(AcceptWithDefaults);
    with_client(
        connect_with(url, start, Some(handler), true).await,
        async |client| {
            let result = client
                .call_tool("test_client_elicitation_defaults", None, call_options())
                .await
                .map_err(|e| format!("the call failed: {e}"))?;
            Ok(format!("the tool answered {:?}", texts(&result)))
        },
    )
    .await
}

fn call_options() -> CallOptions {
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(10);
    options
}

/// The text blocks of a result, joined.
fn texts(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}
