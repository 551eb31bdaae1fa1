//! Interop for OAuth: mcpwire's client against a real OAuth-protected MCP server whose auth code
//! somebody else wrote: `tests/peers/py_auth_server.py`, the official Python SDK's own
//! authorization support (`MCPServer` with `AuthSettings` and an authorization-server provider:
//! protected-resource and authorization-server metadata, dynamic registration, PKCE S256,
//! refresh-token rotation). The provider approves at once, so [`Headless`] follows the redirect.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::auth::Config;
use mcpwire::client::auth::{Auth, Headless, OAuth};
use mcpwire::client::{Client, ClientOptions};
use mcpwire::mcp::ProtocolVersion;
use mcpwire::transport::http::HttpConfig;
use serde_json::{Value, json};

use crate::interop::{call, only_text, options, pool};
use crate::support::peers::{self, Peer, PeerServer, Sdk};

/// The deadline of one step of the flow (a request, the headless authorization).
const STEP: Duration = Duration::from_secs(15);

/// An OAuth for `server` with a loopback redirect URI nobody listens on: the headless
/// authorizer takes the redirect's `Location` instead of a browser coming back.
fn oauth(server: &PeerServer, pool: &mcpwire::transport::http::HttpPool) -> Arc<OAuth> {
    let config =
        Config::authorization_code(&server.url, "http://127.0.0.1:9/callback").expect("config");
    Arc::new(OAuth::new(config, Some(Arc::new(Headless::new(pool, STEP)))).expect("oauth"))
}

/// Connects with `oauth`, recording the wire log.
async fn connect(
    server: &PeerServer,
    pool: &mcpwire::transport::http::HttpPool,
    oauth: &Arc<OAuth>,
    wire: &Arc<Mutex<Vec<String>>>,
) -> Client {
    let mut config = HttpConfig::new(&server.url).expect("config");
    let lines = wire.clone();
    config.wire_log = Some(Arc::new(move |line: &str| {
        lines.lock().unwrap().push(line.to_owned());
    }));
    let mut options: ClientOptions = options();
    options.auth = Some(Auth::oauth(oauth.clone()));
    Client::connect_http(pool, config, options)
        .await
        .unwrap_or_else(|e| panic!("connect to {}: {} ({e})", server.url, e.kind()))
}

/// What the server's provider has counted.
async fn counts(client: &Client) -> Value {
    let result = call(client, "auth_counts", json!({})).await;
    result.structured_content.expect("structured counts")
}

/// No secret the flow held shows in the wire log or in any `Debug` output.
fn assert_no_secret_leaks(oauth: &OAuth, wire: &[String], client: &Client) {
    let secrets = oauth.secrets();
    assert!(
        secrets.len() >= 3,
        "access and refresh tokens, client secret, code, verifier: {}",
        secrets.len()
    );
    let debug = format!("{client:?} {oauth:?}");
    for secret in &secrets {
        let value = secret.expose();
        assert!(value.len() >= 8, "a real secret");
        assert!(!debug.contains(value), "a secret in Debug output");
        assert!(
            !wire.iter().any(|line| line.contains(value)),
            "a secret in the wire log"
        );
    }
}

/// The authorization code grant end to end: a 401 with the SDK's challenge, the metadata,
/// dynamic registration, the (headless) authorization, the code exchanged with the PKCE
/// verifier, then 2026-07-28 with the token. A second client sharing the `OAuth` reuses the
/// token: no second registration or authorization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn py_auth_authorization_code_then_a_shared_token() {
    if !peers::require(Peer::Python(Sdk::V2)) {
        return;
    }
    let server = PeerServer::python_auth(&[]);
    let pool = pool();
    let oauth = oauth(&server, &pool);
    let wire = Arc::new(Mutex::new(Vec::new()));
    let client = connect(&server, &pool, &oauth, &wire).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let echoed = call(&client, "echo_text", json!({"text": "with a token"})).await;
    assert_eq!(only_text(&echoed), "with a token");
    assert_eq!(
        counts(&client).await,
        json!({"registered": 1, "authorized": 1, "code_exchanges": 1, "refreshes": 0})
    );
    let second = connect(&server, &pool, &oauth, &wire).await;
    assert_eq!(
        counts(&second).await,
        json!({"registered": 1, "authorized": 1, "code_exchanges": 1, "refreshes": 0})
    );
    let lines = wire.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.starts_with("< 401")),
        "the first request was refused: {lines:#?}"
    );
    assert_no_secret_leaks(&oauth, &lines, &client);
    client.close().await;
    second.close().await;
}

/// Tokens that live 2 s are refreshed (the SDK rotates the refresh token each time) without
/// a second authorization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn py_auth_short_lived_tokens_are_refreshed() {
    if !peers::require(Peer::Python(Sdk::V2)) {
        return;
    }
    let server = PeerServer::python_auth(&["--token-ttl", "2"]);
    let pool = pool();
    let oauth = oauth(&server, &pool);
    let wire = Arc::new(Mutex::new(Vec::new()));
    let client = connect(&server, &pool, &oauth, &wire).await;
    for n in 0..4 {
        let text = format!("call {n}");
        let echoed = call(&client, "echo_text", json!({ "text": text })).await;
        assert_eq!(only_text(&echoed), text);
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
    let seen = counts(&client).await;
    assert_eq!(seen["authorized"], 1, "{seen}");
    assert!(seen["refreshes"].as_u64().unwrap() >= 1, "{seen}");
    let lines = wire.lock().unwrap().clone();
    assert_no_secret_leaks(&oauth, &lines, &client);
    client.close().await;
}

/// `mcpwire probe` against the real OAuth-protected server: the 401, the SDK's challenge and
/// the protected-resource metadata it names, without a token or any flow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn py_auth_probe_reports_the_challenge_and_the_metadata() {
    use mcpwire::binding::probe::{ProbeOptions, probe};
    if !peers::require(Peer::Python(Sdk::V2)) {
        return;
    }
    let server = PeerServer::python_auth(&[]);
    let origin = format!("http://127.0.0.1:{}", server.port);
    let mut options = ProbeOptions::new(&server.url);
    options.request_timeout = STEP;
    let report = probe(&pool(), &options).await.expect("a valid URL");
    let text = report.render();
    assert!(report.auth.required, "{text}");
    assert_eq!(report.auth.status, Some(401), "{text}");
    assert!(!report.auth.token_sent, "{text}");
    let challenge = report.auth.challenges.first().expect("a challenge");
    assert_eq!(challenge.scheme, "Bearer", "{text}");
    assert_eq!(challenge.error.as_deref(), Some("invalid_token"), "{text}");
    let where_ = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        challenge.resource_metadata.as_deref(),
        Some(where_.as_str())
    );
    let metadata = report.auth.metadata.as_ref().expect("the metadata");
    assert_eq!(
        metadata.resource.as_deref(),
        Some(server.url.as_str()),
        "{text}"
    );
    assert_eq!(metadata.authorization_servers, [origin], "{text}");
    assert_eq!(metadata.scopes_supported, ["mcp:tools"], "{text}");
}
