//! Interop for OAuth: mcpwire's client against a real OAuth-protected MCP server whose auth code
//! somebody else wrote: `tests/peers/py_auth_server.py`, the official Python SDK's own
//! authorization support (`MCPServer` with `AuthSettings` and an authorization-server provider:
//! protected-resource and authorization-server metadata, dynamic registration, PKCE S256,
//! refresh-token rotation). The provider approves at once, so [`Headless`] follows the redirect.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::auth::{Clock, Config};
use mcpwire::client::auth::{Auth, Headless, OAuth};
use mcpwire::client::{Client, ClientOptions};
use mcpwire::mcp::ProtocolVersion;
use mcpwire::transport::http::HttpConfig;
use serde_json::{Value, json};

use crate::auth::ManualClock;
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
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_auth_authorization_code_then_a_shared_token() {
    peers::require(Peer::Python(Sdk::V2));
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

/// Tokens that live 2 s are refreshed half-way through their life (the SDK rotates the
/// refresh token each time) without a second authorization. The client's clock is the test's:
/// it moves a second on before each call, which then starts the refresh in the background,
/// and the test waits for the flow's run to end (its `on_change`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_auth_short_lived_tokens_are_refreshed() {
    peers::require(Peer::Python(Sdk::V2));
    let server = PeerServer::python_auth(&["--token-ttl", "2"]);
    let pool = pool();
    let clock = ManualClock::at(1_800_000_000);
    // Each run of the flow says so, with the token it left.
    let (ran, mut runs) = tokio::sync::mpsc::unbounded_channel();
    let at = clock.clone();
    let oauth = Arc::into_inner(oauth(&server, &pool)).expect("the only handle");
    let oauth = Arc::new(oauth.with_clock(clock.clone()).on_change(Arc::new(
        move |oauth: &OAuth| {
            let _ = ran.send(oauth.bearer(at.now()).map(|t| t.expose().to_owned()));
        },
    )));
    let wire = Arc::new(Mutex::new(Vec::new()));
    let client = connect(&server, &pool, &oauth, &wire).await;
    let mut tokens = vec![runs.recv().await.flatten().expect("the grant's token")];
    for n in 0..3 {
        clock.advance(1);
        let text = format!("call {n}");
        let echoed = call(&client, "echo_text", json!({ "text": text })).await;
        assert_eq!(only_text(&echoed), text);
        let refreshed = tokio::time::timeout(STEP, runs.recv())
            .await
            .expect("no refresh")
            .flatten()
            .expect("a token after the refresh");
        assert!(
            !tokens.contains(&refreshed),
            "call {n}: the same token again"
        );
        tokens.push(refreshed);
    }
    let seen = counts(&client).await;
    assert_eq!(seen["authorized"], 1, "{seen}");
    // Every run of the flow after the grant was one refresh (a token the server let expire
    // meanwhile, on a slow machine, is refreshed after its 401: one run more).
    let mut ran = tokens.len() as u64;
    while runs.try_recv().is_ok() {
        ran += 1;
    }
    assert_eq!(seen["refreshes"].as_u64(), Some(ran - 1), "{seen}");
    let lines = wire.lock().unwrap().clone();
    assert_no_secret_leaks(&oauth, &lines, &client);
    client.close().await;
}

/// `mcpwire probe` against the real OAuth-protected server: the 401, the SDK's challenge and
/// the protected-resource metadata it names, without a token or any flow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn py_auth_probe_reports_the_challenge_and_the_metadata() {
    use mcpwire::probe::{ProbeOptions, probe};
    peers::require(Peer::Python(Sdk::V2));
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

/// A scratch directory of this test process, removed by the test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A bounded `GET target` on 127.0.0.1:`port`: the status line and the body.
fn loopback_get(port: u16, target: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(STEP)).unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The secrets of a token store: access and refresh tokens, the client secret.
fn store_secrets(store: &Value) -> Vec<(String, String)> {
    let mut secrets = Vec::new();
    if let Some(secret) = store["client"]["client_secret"].as_str() {
        secrets.push(("client secret".to_owned(), secret.to_owned()));
    }
    for token in store["tokens"].as_array().into_iter().flatten() {
        for member in ["access_token", "refresh_token"] {
            if let Some(value) = token[member].as_str() {
                secrets.push((member.to_owned(), value.to_owned()));
            }
        }
    }
    secrets
}

/// Waits (up to [`STEP`]) until the server at `port` answers a request carrying `token` with
/// 401: the token expired there. The request's body is not JSON-RPC, so a server that still
/// takes the token answers it 400 without starting anything.
fn wait_until_refused(port: u16, token: &str) {
    use std::io::{Read, Write};
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    );
    let deadline = std::time::Instant::now() + STEP;
    loop {
        let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        tcp.set_read_timeout(Some(STEP)).expect("read timeout");
        tcp.write_all(request.as_bytes()).expect("send");
        let mut status = [0u8; 12];
        tcp.read_exact(&mut status).expect("a status line");
        match &status[9..12] {
            b"401" => return,
            b"400" => {}
            other => panic!("answered {}", String::from_utf8_lossy(other)),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the token was not refused within {STEP:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read_store(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("the store")).expect("JSON")
}

/// The operator's path end to end with the real binaries: `mcp-tools -login` against the
/// Python SDK's OAuth server (the test is the browser: it reads the authorization URL from
/// stderr, requests it without following the redirect, then brings the redirect to the
/// loopback listener, after a favicon request and a forged callback it must ignore), the 0600
/// store and bindings that point at it; discovery again with the store; `mcpwire call` with
/// the binding (nobody present), a refresh once the 3-second token expired with the rotated
/// tokens written back, `-refresh`, `-logout`, and a call after it failing with the outcome
/// known. No secret shows in any output.
#[test]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
fn py_auth_mcp_tools_login_then_mcpwire_call_refresh_and_logout() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    use crate::cli_tools::{Run, mcp_tools, mcpwire};

    peers::require(Peer::Python(Sdk::V2));
    let server = PeerServer::python_auth(&["--token-ttl", "3"]);
    let dir = scratch("login");
    let store = dir.join("tokens.json");
    let store_text = store.to_str().unwrap().to_owned();

    // 1. The login, with the test as the browser.
    let mut login = Command::new(env!("CARGO_BIN_EXE_mcp-tools"))
        .args(["-url", &server.url, "-login", "-token-store", &store_text])
        .args(["-tenant", "ops", "-tools", "echo_text,auth_counts"])
        .args(["-login-timeout", "30"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tools");
    let stderr = login.stderr.take().unwrap();
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let stderr_lines = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if line.starts_with("http") {
                let _ = url_tx.send(line.clone());
            }
            lines.push(line);
        }
        lines.join("\n")
    });
    let authorize = url_rx
        .recv_timeout(STEP)
        .expect("the authorization URL on stderr");
    assert!(
        authorize.starts_with(&format!("http://127.0.0.1:{}/authorize?", server.port)),
        "{authorize}"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let location = runtime
        .block_on(async {
            use mcpwire::client::auth::Authorizer;
            let url = mcpwire::auth::Url::parse(&authorize).unwrap();
            Headless::new(&pool(), STEP).authorize(&url).await
        })
        .expect("the authorization server redirects back");
    let (host_port, target) = location
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.split_once('/'))
        .expect("a loopback redirect");
    let port: u16 = host_port.parse().unwrap();
    let target = format!("/{target}");
    assert!(target.starts_with("/callback?code="), "{target}");
    let code = target
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("code="))
        .unwrap()
        .to_owned();
    let (status, _) = loopback_get(port, "/favicon.ico");
    assert!(status.contains(" 404 "), "{status}");
    let (status, _) = loopback_get(port, "/callback?code=forged&state=another");
    assert!(
        status.contains(" 400 "),
        "a callback for another state: {status}"
    );
    let (status, page) = loopback_get(port, &target);
    assert!(status.contains(" 200 "), "{status}");
    assert!(page.contains("You can close this window"), "{page}");
    let output = login.wait_with_output().expect("mcp-tools ends");
    let login_stderr = stderr_lines.join().unwrap();
    assert!(output.status.success(), "{login_stderr}");
    let login_stdout = String::from_utf8(output.stdout).unwrap();

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&store).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the store is its user's alone");
    }
    let bindings: Value = serde_json::from_str(&login_stdout).expect("bindings");
    for binding in bindings.as_array().unwrap() {
        assert_eq!(
            binding["auth"],
            json!({"grant": "authorization_code", "token_store": store_text})
        );
        assert!(binding.get("token_env").is_none());
    }
    let bindings_file = dir.join("bindings.json");
    std::fs::write(&bindings_file, &login_stdout).unwrap();
    let bindings_text = bindings_file.to_str().unwrap().to_owned();
    let after_login = read_store(&store);
    let mut secrets = store_secrets(&after_login);
    assert_eq!(secrets.len(), 3, "client secret, access and refresh tokens");
    secrets.push(("authorization code".to_owned(), code));

    // Discovery again with the store and nobody present: the stored token, no new login.
    let again = mcp_tools(
        &[
            "-url",
            &server.url,
            "-token-store",
            &store_text,
            "-tenant",
            "ops",
            "-tools",
            "echo_text",
        ],
        &[],
    );
    assert_eq!(again.code, Some(0), "{again:#?}");
    let rediscovered: Value = serde_json::from_str(&again.stdout).expect("bindings");
    assert_eq!(rediscovered[0]["auth"], bindings[0]["auth"]);

    // 2. A host's call with the store, nobody present.
    let call = |text: &str| -> Run {
        let arguments = json!({"text": text}).to_string();
        mcpwire(
            &[
                "call",
                "--bindings",
                &bindings_text,
                "--tool",
                "echo_text",
                "--tenant",
                "ops",
                "--args",
                &arguments,
                "-v",
            ],
            &[],
        )
    };
    let result = |run: &Run| -> Value {
        serde_json::from_str(run.stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|_| panic!("{run:#?}"))
    };
    let first = call("first");
    assert_eq!(result(&first)["is_error"], false, "{first:#?}");
    assert_eq!(result(&first)["content"][0]["text"], "first");

    // 3. The token expires; the next call refreshes, and the rotated tokens are written back.
    // The clock that expires it is the server's, in another process: wait until the server
    // refuses it, rather than for a time that should be enough.
    let before = read_store(&store);
    let access = before["tokens"][0]["access_token"]
        .as_str()
        .expect("a token");
    wait_until_refused(server.port, access);
    let second = call("second");
    assert_eq!(result(&second)["is_error"], false, "{second:#?}");
    let after = read_store(&store);
    assert_ne!(
        before["tokens"][0]["refresh_token"], after["tokens"][0]["refresh_token"],
        "the rotated refresh token is in the store"
    );
    assert_ne!(
        before["tokens"][0]["access_token"],
        after["tokens"][0]["access_token"]
    );
    assert_eq!(before["client"], after["client"], "the same client");
    secrets.extend(store_secrets(&before));
    secrets.extend(store_secrets(&after));

    // 4. -refresh now, then -logout.
    let refreshed = mcp_tools(&["-token-store", &store_text, "-refresh"], &[]);
    assert_eq!(refreshed.code, Some(0), "{refreshed:#?}");
    let rotated = read_store(&store);
    assert_ne!(
        after["tokens"][0]["refresh_token"],
        rotated["tokens"][0]["refresh_token"]
    );
    secrets.extend(store_secrets(&rotated));
    let counts = mcpwire(
        &[
            "call",
            "--bindings",
            &bindings_text,
            "--tool",
            "auth_counts",
            "--tenant",
            "ops",
            "--args",
            "{}",
        ],
        &[],
    );
    let seen = &result(&counts)["structured_content"];
    assert_eq!(seen["authorized"], 1, "one login: {counts:#?}");
    assert_eq!(seen["registered"], 1, "one registration: {counts:#?}");
    assert!(seen["refreshes"].as_u64().unwrap() >= 2, "{seen}");
    secrets.extend(store_secrets(&read_store(&store)));

    let logout = mcp_tools(&["-token-store", &store_text, "-logout"], &[]);
    assert_eq!(logout.code, Some(0), "{logout:#?}");
    assert!(!store.exists(), "the store is gone");
    let after_logout = call("after logout");
    let failed = result(&after_logout);
    assert_eq!(failed["is_error"], true);
    assert_eq!(failed["unknown_outcome"], false);
    assert_eq!(failed["error"]["kind"], "unauthorized");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.contains("mcp-tools -url URL -login"), "{message}");

    // Nothing printed anywhere holds a secret.
    let outputs = [
        ("login stdout", login_stdout.clone()),
        ("login stderr", login_stderr),
        (
            "discovery with the store",
            format!("{}{}", again.stdout, again.stderr),
        ),
        ("first call", format!("{}{}", first.stdout, first.stderr)),
        ("second call", format!("{}{}", second.stdout, second.stderr)),
        (
            "refresh",
            format!("{}{}", refreshed.stdout, refreshed.stderr),
        ),
        ("counts", format!("{}{}", counts.stdout, counts.stderr)),
        ("logout", format!("{}{}", logout.stdout, logout.stderr)),
        (
            "call after logout",
            format!("{}{}", after_logout.stdout, after_logout.stderr),
        ),
    ];
    assert!(
        second.stderr.contains("> auth POST"),
        "-v shows the refresh: {}",
        second.stderr
    );
    for (what, text) in &outputs {
        for (secret_name, secret) in &secrets {
            assert!(secret.len() >= 8, "{secret_name}");
            assert!(
                !text.contains(secret.as_str()),
                "the {secret_name} in the {what}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
