//! OAuth through the client (`ClientOptions::auth`) against an in-process MCP server and
//! authorization server (the fault server, scripted per test), for the faults the conformance
//! suite does not cover: a protected-resource metadata document for another resource, an
//! authorization server naming another issuer or reached over plain `http`, oversized metadata,
//! tokens kept to their origins, refresh-token rotation, a 401 after a refresh, which requests
//! are sent again after a refusal, and a leak test over every output.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcpwire::auth::{
    AuthMethod, Clock, Config, PreRegistered, Refusal, Secret, SigningKey, TokenProvider, UnixTime,
};
use mcpwire::client::auth::{Auth, Authorizer, Headless, OAuth};
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::session::EraPolicy;
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use mcpwire::{Error, ErrorKind};
use serde_json::{Value, json};

use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};

mod identity;
mod shared_store;

/// The access and refresh tokens the authorization server issues, in order.
const ACCESS: [&str; 4] = [
    "at-ONE-5f1c9e2a7b",
    "at-TWO-0d8e4b6c1a",
    "at-THREE-9a7c5e3f2d",
    "at-FOUR-4e2a0c8b6f",
];
const REFRESH: [&str; 4] = [
    "rt-ONE-7c3e9a1f5b",
    "rt-TWO-2b6d0f4a8e",
    "rt-THREE-8f4b2d6a0c",
    "rt-FOUR-1a5c9e3b7d",
];
/// The client secret a dynamic registration hands out.
const REGISTERED_SECRET: &str = "cs-REGISTERED-6b2f8d4a0e";
/// A pre-registered client's secret.
const PRE_SECRET: &str = "cs-PRE-3d9b5f1c7a";
/// The authorization code.
const CODE: &str = "code-AUTH-8e0a4c2f6b";
const REDIRECT: &str = "http://127.0.0.1:9/callback";
const PRM_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// What one tools/call gets before the tool runs normally.
enum Call {
    /// This reply; the tool does not run (a refusal before it).
    Refuse(Reply),
    /// The tool runs, then this reply (a failure after it ran).
    RunThen(Reply),
}

/// The mock's settings and what it has seen.
#[derive(Default)]
struct State {
    /// `resource` in the protected-resource metadata (default: the MCP URL).
    resource: Option<String>,
    /// The authorization servers the metadata names (default: the AS's base URL).
    authorization_servers: Option<Vec<String>>,
    /// `issuer` in the AS metadata (default: the AS's base URL).
    issuer: Option<String>,
    /// Bytes of padding in the AS metadata.
    padding: usize,
    /// Issue refresh tokens.
    refresh: bool,
    /// `expires_in` of issued tokens.
    expires_in: u64,
    /// Token endpoint methods the AS advertises.
    methods: Vec<&'static str>,
    /// An error the token endpoint answers with (status, body), for every request.
    token_error: Option<(u16, Value)>,
    /// The token endpoint never answers (its reply waits a minute).
    token_hangs: bool,
    /// How long the token endpoint takes to answer.
    token_delay_ms: u64,
    /// Access tokens the MCP server takes.
    valid: Vec<String>,
    /// How many tokens were issued.
    issued: usize,
    /// The refresh tokens still usable (rotation: each is used once).
    live_refresh: Vec<String>,
    /// Refresh tokens presented that were not usable.
    refresh_reuse: Vec<String>,
    /// What the next tools/calls get.
    calls: VecDeque<Call>,
    /// How many tools/calls ran.
    ran: usize,
    /// The AS takes Client ID Metadata Documents (`client_id_metadata_document_supported`).
    cimd: bool,
}

/// An MCP server with OAuth, and its authorization server (on its own origin, or the same).
struct Mock {
    mcp: FaultServer,
    auth: Option<FaultServer>,
    state: Arc<Mutex<State>>,
    mcp_base: Arc<OnceLock<String>>,
    as_base: Arc<OnceLock<String>>,
}

impl Mock {
    async fn start(separate_as: bool, configure: impl FnOnce(&mut State)) -> Mock {
        let mut state = State {
            expires_in: 3600,
            methods: vec!["client_secret_basic", "client_secret_post", "none"],
            ..State::default()
        };
        configure(&mut state);
        let state = Arc::new(Mutex::new(state));
        let mcp_base = Arc::new(OnceLock::<String>::new());
        let as_base = Arc::new(OnceLock::<String>::new());
        let handler = {
            let (state, mcp_base, as_base) = (state.clone(), mcp_base.clone(), as_base.clone());
            move |req: &Recorded| {
                let (mcp, auth) = (mcp_base.get().unwrap(), as_base.get().unwrap());
                handle(&state, mcp, auth, req)
            }
        };
        let mcp = FaultServer::start(handler.clone()).await;
        let _ = mcp_base.set(mcp.url("").trim_end_matches('/').to_owned());
        let auth = if separate_as {
            let server = FaultServer::start(handler).await;
            let _ = as_base.set(server.url("").trim_end_matches('/').to_owned());
            Some(server)
        } else {
            let _ = as_base.set(mcp_base.get().unwrap().clone());
            None
        };
        Mock {
            mcp,
            auth,
            state,
            mcp_base,
            as_base,
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.mcp_base.get().unwrap())
    }

    fn as_url(&self) -> &str {
        self.as_base.get().unwrap()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Every request either server received.
    fn requests(&self) -> Vec<Recorded> {
        let mut all = self.mcp.requests();
        if let Some(auth) = &self.auth {
            all.extend(auth.requests());
        }
        all
    }

    /// The MCP server's POSTs of JSON-RPC `method`.
    fn posts(&self, method: &str) -> Vec<Recorded> {
        self.mcp
            .requests()
            .into_iter()
            .filter(|r| r.jsonrpc_method().as_deref() == Some(method))
            .collect()
    }

    /// The next tools/call is refused with `status` and `challenge` before the tool runs.
    fn refuse_next_call(&self, status: u16, challenge: &str) {
        let error = if status == 403 {
            "insufficient_scope"
        } else {
            "invalid_token"
        };
        self.state().calls.push_back(Call::Refuse(
            Reply::json(status, json!({"error": error})).with_header("www-authenticate", challenge),
        ));
    }

    fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.split('?').next() == Some(path))
            .collect()
    }
}

fn handle(state: &Mutex<State>, mcp: &str, auth: &str, req: &Recorded) -> Reply {
    let mut state = state.lock().unwrap();
    let path = req.path.split('?').next().unwrap_or("");
    match (req.method.as_str(), path) {
        ("GET", PRM_PATH) => Reply::json(
            200,
            json!({
                "resource": state.resource.clone().unwrap_or(format!("{mcp}/mcp")),
                "authorization_servers": state.authorization_servers.clone()
                    .unwrap_or(vec![auth.to_owned()]),
            }),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => Reply::json(
            200,
            json!({
                "issuer": state.issuer.clone().unwrap_or(auth.to_owned()),
                "authorization_endpoint": format!("{auth}/authorize"),
                "token_endpoint": format!("{auth}/token"),
                "registration_endpoint": format!("{auth}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": state.methods,
                "token_endpoint_auth_signing_alg_values_supported": ["ES256"],
                "client_id_metadata_document_supported": state.cimd,
                "padding": "x".repeat(state.padding),
            }),
        ),
        ("POST", "/register") => Reply::json(
            201,
            json!({"client_id": "client-7", "client_secret": REGISTERED_SECRET,
                   "token_endpoint_auth_method": "client_secret_post"}),
        ),
        ("GET", "/authorize") => {
            let query = form(req.path.split_once('?').map_or("", |(_, q)| q));
            let state_param = param(&query, "state").unwrap_or_default();
            Reply::redirect(
                302,
                &format!(
                    "{REDIRECT}?code={CODE}&state={}&iss={}",
                    encode(&state_param),
                    encode(auth)
                ),
            )
        }
        ("POST", "/token") => token(&mut state, req),
        ("POST", "/mcp") => mcp_reply(&mut state, mcp, req),
        _ => Reply::empty(404),
    }
}

fn token(state: &mut State, req: &Recorded) -> Reply {
    if state.token_hangs {
        return Reply::chunked(200, vec![Step::delay_ms(60_000)]);
    }
    if let Some((status, body)) = &state.token_error {
        return Reply::json(*status, body.clone());
    }
    let body = form(&req.body_text());
    if param(&body, "grant_type").as_deref() == Some("refresh_token") {
        let presented = param(&body, "refresh_token").unwrap_or_default();
        let Some(at) = state.live_refresh.iter().position(|r| *r == presented) else {
            state.refresh_reuse.push(presented);
            return Reply::json(400, json!({"error": "invalid_grant"}));
        };
        state.live_refresh.remove(at);
    }
    let n = state.issued;
    state.issued += 1;
    state.valid.push(ACCESS[n].to_owned());
    let mut answer = json!({"access_token": ACCESS[n], "token_type": "Bearer",
                            "expires_in": state.expires_in});
    if state.refresh {
        answer["refresh_token"] = json!(REFRESH[n]);
        state.live_refresh.push(REFRESH[n].to_owned());
    }
    if state.token_delay_ms > 0 {
        return Reply::chunked(
            200,
            vec![
                Step::delay_ms(state.token_delay_ms),
                Step::bytes(answer.to_string().into_bytes()),
            ],
        )
        .with_header("content-type", "application/json");
    }
    Reply::json(200, answer)
}

fn mcp_reply(state: &mut State, mcp: &str, req: &Recorded) -> Reply {
    let method = req.jsonrpc_method().unwrap_or_default();
    if method.starts_with("notifications/") {
        return Reply::empty(202);
    }
    let token = req
        .header("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
        .unwrap_or("");
    if !state.valid.iter().any(|v| v == token) {
        return Reply::json(401, json!({"error": "invalid_token"})).with_header(
            "www-authenticate",
            &format!(r#"Bearer resource_metadata="{mcp}{PRM_PATH}""#),
        );
    }
    let id = req.jsonrpc_id().unwrap_or(Value::Null);
    let result = match method.as_str() {
        "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                               "serverInfo": {"name": "oauth-mock", "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "write", "inputSchema": {"type": "object"}}]}),
        "tools/call" => {
            match state.calls.pop_front() {
                Some(Call::Refuse(reply)) => return reply,
                Some(Call::RunThen(reply)) => {
                    state.ran += 1;
                    return reply;
                }
                None => state.ran += 1,
            }
            json!({"content": [{"type": "text", "text": "written"}]})
        }
        _ => {
            return Reply::json(
                200,
                json!({"jsonrpc": "2.0", "id": id,
                                             "error": {"code": -32601, "message": "no"}}),
            );
        }
    };
    Reply::json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// `application/x-www-form-urlencoded` pairs, decoded.
fn form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn param(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// What a test's client wrote to its wire log and warnings.
type Lines = Arc<Mutex<Vec<String>>>;

fn pool() -> HttpPool {
    HttpPool::new(&TlsOptions::default()).unwrap()
}

/// The authorization code grant with dynamic registration (or `client`), a headless
/// authorizer.
fn code_flow(mock: &Mock, pool: &HttpPool, client: Option<PreRegistered>) -> Arc<OAuth> {
    let mut config = Config::authorization_code(&mock.url(), REDIRECT).unwrap();
    config.pre_registered = client;
    config.limits.request_timeout_secs = 5;
    let authorizer: Arc<dyn Authorizer> = Arc::new(Headless::new(pool, Duration::from_secs(5)));
    Arc::new(OAuth::new(config, Some(authorizer)).unwrap())
}

async fn connect(
    mock: &Mock,
    pool: &HttpPool,
    oauth: &Arc<OAuth>,
    lines: &Lines,
) -> Result<Client, Error> {
    let mut config = HttpConfig::new(&mock.url()).unwrap();
    let sink = lines.clone();
    config.wire_log = Some(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned());
    }));
    let mut options = ClientOptions::default();
    options.session.era = EraPolicy::Legacy;
    options.request_timeout = Duration::from_secs(10);
    options.auth = Some(Auth::oauth(oauth.clone()));
    let sink = lines.clone();
    options.on_warning = Some(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned());
    }));
    Client::connect_http(pool, config, options).await
}

fn call_options() -> CallOptions {
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(10);
    options
}

/// Nothing went to the authorization server's token, registration or authorization
/// endpoints.
fn no_token_request(mock: &Mock) {
    for path in ["/token", "/register", "/authorize"] {
        assert!(mock.requests_to(path).is_empty(), "a request to {path}");
    }
}

/// A client connected to `mock` with the authorization code grant (its own pool and log).
async fn connected(mock: &Mock) -> (Arc<OAuth>, Client) {
    let pool = pool();
    let oauth = code_flow(mock, &pool, None);
    let client = connect(mock, &pool, &oauth, &Lines::default())
        .await
        .expect("connect");
    (oauth, client)
}

/// Connects with the authorization code grant, which must fail with a message holding
/// `expected`, and with nothing sent to the token, registration or authorization endpoints.
async fn refused_before_any_token(mock: &Mock, expected: &str) -> Error {
    let pool = pool();
    let oauth = code_flow(mock, &pool, None);
    let error = connect(mock, &pool, &oauth, &Lines::default())
        .await
        .expect_err("refused");
    assert!(error.to_string().contains(expected), "{error}");
    assert!(!error.outcome_unknown(), "{error}");
    // The flow's typed error is the failure's source: Error -> Failure -> auth::Error.
    use std::error::Error as _;
    let failure = error.source().expect("the failure");
    let flow = failure
        .source()
        .and_then(|cause| cause.downcast_ref::<mcpwire::auth::Error>())
        .unwrap_or_else(|| panic!("no typed OAuth error behind {error}"));
    assert!(error.to_string().contains(&flow.to_string()), "{flow}");
    no_token_request(mock);
    error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_code_flow_gets_a_token_and_the_refused_initialize_is_sent_again() {
    let mock = Mock::start(true, |_| {}).await;
    let (_oauth, client) = connected(&mock).await;
    let result = client
        .call_tool("write", None, call_options())
        .await
        .expect("call");
    assert!(!result.is_error());
    client.close().await;
    let initializes = mock.posts("initialize");
    assert_eq!(initializes.len(), 2, "refused once, then sent again");
    assert_eq!(initializes[0].header("authorization"), None);
    assert_eq!(
        initializes[1].header("authorization"),
        Some(format!("Bearer {}", ACCESS[0]).as_str())
    );
    assert_eq!(initializes[0].body, initializes[1].body, "the same request");
    assert_eq!(mock.state().ran, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_metadata_for_another_resource_stops_before_any_token_request() {
    let mock = Mock::start(false, |s| {
        s.resource = Some("http://127.0.0.1:1/elsewhere".to_owned());
    })
    .await;
    let error = refused_before_any_token(&mock, "is for http://127.0.0.1:1/elsewhere").await;
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert_eq!(mock.requests_to(PRM_PATH).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_server_metadata_naming_another_issuer_is_refused() {
    let mock = Mock::start(true, |s| s.issuer = Some("https://evil.example".to_owned())).await;
    let error = refused_before_any_token(&mock, "evil.example").await;
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_failure_on_the_era_probe_names_the_oauth_step_not_the_probe() {
    // The first request is the era probe; the server refuses it, and the flow fails at the
    // authorization-server metadata. The message names that step.
    let mock = Mock::start(true, |s| s.issuer = Some("https://evil.example".to_owned())).await;
    let pool = pool();
    let oauth = code_flow(&mock, &pool, None);
    let mut options = ClientOptions::default();
    options.session.era = EraPolicy::Auto;
    options.auth = Some(Auth::oauth(oauth));
    let config = HttpConfig::new(&mock.url()).unwrap();
    let error = Client::connect_http(&pool, config, options)
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Unauthorized, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("authorization failed: authorization-server metadata: "),
        "{text}"
    );
    assert!(!text.contains("era probe"), "{text}");
    assert_eq!(mock.posts("server/discover").len(), 1, "one probe, refused");
    no_token_request(&mock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_plain_http_authorization_server_off_loopback_is_not_contacted() {
    let mock = Mock::start(false, |s| {
        s.authorization_servers = Some(vec!["http://auth.example.com".to_owned()]);
    })
    .await;
    refused_before_any_token(&mock, "is not an https (or loopback http) URL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_oversized_server_metadata_is_refused() {
    let mock = Mock::start(true, |s| s.padding = 2 * 1024 * 1024).await;
    refused_before_any_token(
        &mock,
        "authorization-server metadata request could not be completed: the body is larger than 65536 bytes",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_tokens_go_to_the_mcp_server_only_and_never_in_a_url() {
    let mock = Mock::start(true, |s| s.refresh = true).await;
    let (_oauth, client) = connected(&mock).await;
    client.list_tools().await.unwrap();
    client.close().await;
    let auth_server = mock.auth.as_ref().unwrap().requests();
    assert!(!auth_server.is_empty());
    for request in &auth_server {
        assert!(
            request
                .header("authorization")
                .is_none_or(|a| !a.starts_with("Bearer")),
            "a bearer token went to the authorization server: {request:?}"
        );
        let text = format!("{} {}", request.path, request.body_text());
        assert!(!text.contains(ACCESS[0]), "{text}");
    }
    for request in mock.mcp.requests() {
        for secret in [ACCESS[0], REFRESH[0], REGISTERED_SECRET, CODE] {
            assert!(!request.path.contains(secret), "{}", request.path);
        }
        assert!(!request.body_text().contains(REFRESH[0]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_resource_metadata_hint_on_another_origin_is_not_fetched() {
    let mock = Mock::start(true, |_| {}).await;
    // The MCP server's challenge names the authorization server's origin.
    let hint = format!("{}{PRM_PATH}", mock.as_url());
    let pool = pool();
    let server = FaultServer::start(move |_req: &Recorded| {
        Reply::json(401, json!({"error": "invalid_token"})).with_header(
            "www-authenticate",
            &format!(r#"Bearer resource_metadata="{hint}""#),
        )
    })
    .await;
    let mut config = Config::authorization_code(&server.url("/mcp"), REDIRECT).unwrap();
    config.limits.request_timeout_secs = 5;
    let authorizer: Arc<dyn Authorizer> = Arc::new(Headless::new(&pool, Duration::from_secs(5)));
    let oauth = Arc::new(OAuth::new(config, Some(authorizer)).unwrap());
    let mut http = HttpConfig::new(&server.url("/mcp")).unwrap();
    http.legacy_fallback = false;
    let mut options = ClientOptions::default();
    options.session.era = EraPolicy::Legacy;
    options.auth = Some(Auth::oauth(oauth));
    let error = Client::connect_http(&pool, http, options)
        .await
        .expect_err("refused");
    assert!(error.to_string().contains("on another origin"), "{error}");
    assert!(
        mock.requests().is_empty(),
        "nothing fetched from the other origin"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_401_is_answered_with_a_refresh_and_rotated_refresh_tokens_are_used() {
    let mock = Mock::start(true, |s| s.refresh = true).await;
    let (oauth, client) = connected(&mock).await;
    for round in 1..=2 {
        // The server revokes the token in use: the tools/call is refused, refreshed, sent again.
        mock.state().valid.clear();
        let result = client
            .call_tool("write", None, call_options())
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(!result.is_error());
    }
    client.close().await;
    let refreshes: Vec<String> = mock
        .requests_to("/token")
        .iter()
        .map(|r| form(&r.body_text()))
        .filter(|f| param(f, "grant_type").as_deref() == Some("refresh_token"))
        .filter_map(|f| param(&f, "refresh_token"))
        .collect();
    assert_eq!(
        refreshes,
        [REFRESH[0], REFRESH[1]],
        "each refresh with the rotated token"
    );
    let state = mock.state();
    assert!(state.refresh_reuse.is_empty(), "{:?}", state.refresh_reuse);
    assert_eq!(state.ran, 2, "each call ran once");
    assert_eq!(
        mock.requests_to("/authorize").len(),
        1,
        "one authorization only"
    );
    assert_eq!(
        oauth.bearer(mcpwire_now()).as_ref().map(Secret::expose),
        Some(ACCESS[2])
    );
}

/// The wall clock, as the flow reads it.
fn mcpwire_now() -> mcpwire::auth::UnixTime {
    mcpwire::auth::UnixTime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
}

/// A clock the test moves by hand: the OAuth driver's time ([`OAuth::with_clock`]).
pub(crate) struct ManualClock(std::sync::atomic::AtomicU64);

impl ManualClock {
    pub(crate) fn at(secs: u64) -> Arc<ManualClock> {
        Arc::new(ManualClock(secs.into()))
    }

    pub(crate) fn advance(&self, secs: u64) {
        self.0.fetch_add(secs, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixTime {
        UnixTime(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_token_due_for_refresh_is_refreshed_in_the_background() {
    // Expiring in 100 s, within the 60 s refresh margin: refreshed in the background
    // half-way through its life (50 s on, by the OAuth driver's clock, which the test moves),
    // not on every request, and used meanwhile. (Only a token within the 10 s expiry skew
    // would hold the request back for its refresh: see the kept-idle-client test.)
    let mock = Mock::start(false, |s| {
        s.refresh = true;
        s.expires_in = 100;
    })
    .await;
    let clock = ManualClock::at(1_800_000_000);
    // Each run of the flow (the grant, then the refresh) says so, with the token it left.
    let (ran, mut runs) = tokio::sync::mpsc::unbounded_channel();
    let pool = pool();
    let oauth = Arc::into_inner(code_flow(&mock, &pool, None)).expect("the only handle");
    let at = clock.clone();
    let oauth = Arc::new(oauth.with_clock(clock.clone()).on_change(Arc::new(
        move |oauth: &OAuth| {
            let _ = ran.send(oauth.bearer(at.now()).map(|t| t.expose().to_owned()));
        },
    )));
    let client = connect(&mock, &pool, &oauth, &Lines::default())
        .await
        .expect("connect");
    assert_eq!(
        runs.recv().await,
        Some(Some(ACCESS[0].to_owned())),
        "the grant"
    );
    client.list_tools().await.unwrap();
    clock.advance(2);
    client.list_tools().await.unwrap();
    assert_eq!(
        oauth.bearer(clock.now()).as_ref().map(Secret::expose),
        Some(ACCESS[0]),
        "not refreshed before half its life"
    );
    // Half-way through the token's life, the next request starts the refresh, and goes with
    // the current token.
    clock.advance(48);
    client.list_tools().await.unwrap();
    let refreshed = tokio::time::timeout(Duration::from_secs(10), runs.recv())
        .await
        .expect("no refresh");
    assert_eq!(refreshed, Some(Some(ACCESS[1].to_owned())));
    client.list_tools().await.unwrap();
    client.close().await;
    let lists = mock.posts("tools/list");
    assert_eq!(
        lists.last().unwrap().header("authorization"),
        Some(format!("Bearer {}", ACCESS[1]).as_str())
    );
    let with_the_first = lists
        .iter()
        .filter(|r| r.header("authorization") == Some(&format!("Bearer {}", ACCESS[0])))
        .count();
    assert_eq!(
        with_the_first, 3,
        "the first token until the refresh was through"
    );
    let state = mock.state();
    assert!(state.refresh_reuse.is_empty());
    assert_eq!(state.issued, 2, "one grant, one refresh");
    drop(state);
    assert!(runs.try_recv().is_err(), "the flow ran only twice");
    let refused = mock
        .mcp
        .requests()
        .iter()
        .filter(|r| r.path == "/mcp" && r.header("authorization").is_none())
        .count();
    assert_eq!(refused, 1, "only the first request went without a token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_kept_client_idle_past_its_tokens_expiry_refreshes_before_it_sends() {
    // A 2 s token, the client idle until it has expired (the flow's clock is the wall
    // clock, in whole seconds, so this waits for it, bounded): the next request waits for
    // the refresh rather than go out without a token and take a 401.
    let mock = Mock::start(false, |s| {
        s.refresh = true;
        s.expires_in = 2;
    })
    .await;
    let (oauth, client) = connected(&mock).await;
    let unauthorized = |mock: &Mock| {
        mock.mcp
            .requests()
            .iter()
            .filter(|r| r.path == "/mcp" && r.header("authorization").is_none())
            .count()
    };
    assert_eq!(
        unauthorized(&mock),
        1,
        "the first request found the server's challenge"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    while oauth.bearer(mcpwire_now()).is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the token never expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.list_tools().await.unwrap();
    client.close().await;
    assert_eq!(
        unauthorized(&mock),
        1,
        "no request went out without a token"
    );
    let lists = mock.posts("tools/list");
    let sent = lists
        .last()
        .unwrap()
        .header("authorization")
        .unwrap()
        .to_owned();
    assert_ne!(sent, format!("Bearer {}", ACCESS[0]), "a renewed token");
    let refreshes = mock
        .requests_to("/token")
        .iter()
        .filter(|r| param(&form(&r.body_text()), "grant_type").as_deref() == Some("refresh_token"))
        .count();
    assert!(refreshes >= 1);
    assert!(mock.state().refresh_reuse.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_401_after_a_refresh_fails_the_call_with_the_outcome_known() {
    let mock = Mock::start(true, |s| s.refresh = true).await;
    let (_oauth, client) = connected(&mock).await;
    // The token in use is revoked, and so is the one the refresh brings.
    mock.state().valid.clear();
    mock.refuse_next_call(401, r#"Bearer error="invalid_token""#);
    let error = client
        .call_tool("write", None, call_options())
        .await
        .expect_err("refused twice");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert!(!error.outcome_unknown(), "nothing ran: {error}");
    assert_eq!(mock.state().ran, 0);
    let calls = mock.posts("tools/call").len();
    assert_eq!(calls, 2, "sent once more after the refresh, not again");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_tools_call_is_sent_again_only_after_a_refusal_before_it_ran() {
    let mock = Mock::start(true, |_| {}).await;
    let (_oauth, client) = connected(&mock).await;
    // 403 insufficient_scope: a step-up, then the call again, which runs once.
    mock.refuse_next_call(
        403,
        r#"Bearer error="insufficient_scope", scope="files:write""#,
    );
    client
        .call_tool("write", None, call_options())
        .await
        .expect("stepped up");
    assert_eq!(mock.state().ran, 1);
    let scopes: Vec<Option<String>> = mock
        .requests_to("/authorize")
        .iter()
        .map(|r| param(&form(r.path.split_once('?').unwrap().1), "scope"))
        .collect();
    assert_eq!(scopes, [None, Some("files:write".to_owned())]);
    // The tool ran and the server failed after it: never sent again.
    mock.state()
        .calls
        .push_back(Call::RunThen(Reply::text(500, "the tool crashed")));
    let error = client
        .call_tool("write", None, call_options())
        .await
        .expect_err("failed after it ran");
    assert!(error.outcome_unknown(), "{error}");
    assert_eq!(mock.state().ran, 2);
    let calls = mock.posts("tools/call").len();
    assert_eq!(calls, 3, "the refused call twice, the failed one once");
    client.close().await;
}

/// Every secret of the flows below, and the texts they must appear in none of: the wire log,
/// warnings, `Debug` of the client, its options, the OAuth flow and every error, and every
/// error's `Display`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_no_secret_appears_in_any_output() {
    let pool = pool();
    let lines = Lines::default();
    let mut texts: Vec<String> = Vec::new();

    // 1. Authorization code, registered client, refresh on a 401, a tool's output echoing the
    //    token.
    let mock = Mock::start(true, |s| s.refresh = true).await;
    let oauth = code_flow(&mock, &pool, None);
    let client = connect(&mock, &pool, &oauth, &lines)
        .await
        .expect("connect");
    mock.state().valid.clear();
    client.list_tools().await.unwrap();
    let echo = format!(
        r#"Bearer error="invalid_token", error_description="{} is revoked""#,
        ACCESS[1]
    );
    mock.refuse_next_call(401, &echo);
    let error = client.call_tool("write", None, call_options()).await;
    assert!(error.is_ok(), "refreshed and sent again: {error:?}");
    texts.push(format!("{client:?} {oauth:?} {error:?}"));
    if let Err(error) = &error {
        texts.push(error.to_string());
    }
    client.close().await;
    let verifiers: Vec<String> = mock
        .requests_to("/token")
        .iter()
        .filter_map(|r| param(&form(&r.body_text()), "code_verifier"))
        .collect();
    assert_eq!(verifiers.len(), 1, "one code exchange");

    // 2. A pre-registered client whose token endpoint echoes its secret in an error.
    let echo = Mock::start(false, |s| {
        s.methods = vec!["client_secret_post"];
        s.token_error = Some((
            400,
            json!({"error": "invalid_client",
                   "error_description": format!("client secret {PRE_SECRET} code {CODE} refused")}),
        ));
    })
    .await;
    let mut pre = PreRegistered::new("pre-client");
    pre.client_secret = Some(Secret::new(PRE_SECRET));
    pre.auth_method = Some(AuthMethod::ClientSecretPost);
    let oauth2 = code_flow(&echo, &pool, Some(pre));
    let error = connect(&echo, &pool, &oauth2, &lines)
        .await
        .expect_err("the token endpoint refuses");
    assert!(error.to_string().contains("invalid_client"), "{error}");
    texts.push(format!("{error:?} {oauth2:?}"));
    texts.push(error.to_string());
    let verifier2 = echo
        .requests_to("/token")
        .iter()
        .find_map(|r| param(&form(&r.body_text()), "code_verifier"))
        .expect("a code exchange");

    // 3. Client credentials with an ES256 assertion.
    let cc = Mock::start(false, |s| s.methods = vec!["private_key_jwt"]).await;
    let (key, _der) = SigningKey::generate(None).unwrap();
    let mut client_cc = PreRegistered::new("cc-client");
    client_cc.signing_key = Some(Arc::new(key));
    let config = Config::client_credentials(&cc.url(), client_cc).unwrap();
    let oauth3 = Arc::new(OAuth::new(config, None).unwrap());
    let client = connect(&cc, &pool, &oauth3, &lines).await.expect("connect");
    client.list_tools().await.unwrap();
    let options_debug = format!("{:?}", ClientOptions::default());
    texts.push(format!("{client:?} {oauth3:?} {options_debug}"));
    client.close().await;
    let assertions: Vec<String> = cc
        .requests_to("/token")
        .iter()
        .filter_map(|r| param(&form(&r.body_text()), "client_assertion"))
        .collect();
    assert_eq!(assertions.len(), 1, "one assertion");

    texts.extend(lines.lock().unwrap().iter().cloned());
    assert!(
        texts.iter().any(|t| t.contains("> auth POST")),
        "the wire log covers the flows' requests"
    );
    let mut secrets: Vec<(&str, String)> = vec![
        ("access token 1", ACCESS[0].to_owned()),
        ("access token 2", ACCESS[1].to_owned()),
        ("access token 3", ACCESS[2].to_owned()),
        ("refresh token 1", REFRESH[0].to_owned()),
        ("refresh token 2", REFRESH[1].to_owned()),
        ("registered client secret", REGISTERED_SECRET.to_owned()),
        ("pre-registered client secret", PRE_SECRET.to_owned()),
        ("authorization code", CODE.to_owned()),
        ("PKCE verifier 1", verifiers[0].clone()),
        ("PKCE verifier 2", verifier2),
        ("client assertion", assertions[0].clone()),
    ];
    secrets.push((
        "assertion signature",
        assertions[0].rsplit('.').next().unwrap().to_owned(),
    ));
    for text in &texts {
        for (what, secret) in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "the {what} appears in: {text}"
            );
        }
    }
}

/// A host's token store: hands out `current`, answers a refusal as `answer` says, counts
/// what it was told, and keeps the wakers of those waiting for a new token when `wakes`.
struct HostTokens {
    current: Arc<Mutex<Option<Secret>>>,
    answer: fn(&HostTokens) -> Refusal,
    refusals: Mutex<Vec<(u16, Option<String>)>>,
    accepted: std::sync::atomic::AtomicUsize,
    wakes: bool,
    waiting: Arc<Waiting>,
}

/// The wakers of those waiting for a host's new token, and a signal for each one kept.
#[derive(Default)]
struct Waiting {
    wakers: Mutex<Vec<std::task::Waker>>,
    kept: std::sync::Condvar,
}

impl HostTokens {
    /// The store gets `token` (a person logged in elsewhere) and wakes everyone waiting.
    fn replace(current: &Mutex<Option<Secret>>, waiting: &Waiting, token: &str) {
        *current.lock().unwrap() = Some(Secret::new(token));
        let wakers = std::mem::take(&mut *waiting.wakers.lock().unwrap());
        wakers.into_iter().for_each(std::task::Waker::wake);
    }
}

impl TokenProvider for HostTokens {
    fn token(&self, _now: mcpwire::auth::UnixTime) -> Option<Secret> {
        self.current.lock().unwrap().clone()
    }

    fn refused(
        &self,
        status: mcpwire::auth::StatusCode,
        _headers: &mcpwire::auth::HeaderMap,
        sent: Option<&Secret>,
        _now: mcpwire::auth::UnixTime,
    ) -> Refusal {
        self.refusals
            .lock()
            .unwrap()
            .push((status.as_u16(), sent.map(|s| s.expose().to_owned())));
        (self.answer)(self)
    }

    fn accepted(&self) {
        self.accepted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn wake_when_ready(&self, waker: &std::task::Waker) -> bool {
        if self.wakes {
            self.waiting.wakers.lock().unwrap().push(waker.clone());
            self.waiting.kept.notify_all();
        }
        self.wakes
    }
}

const HOST_OLD: &str = "host-OLD-5c1e9a3f7b";
const HOST_NEW: &str = "host-NEW-0b4d8f2a6c";

/// Connects to `mock` (which takes only `HOST_NEW`) with a host token provider that starts
/// with `HOST_OLD` and answers refusals with `answer`; calls the tool once.
async fn with_host_tokens(
    answer: fn(&HostTokens) -> Refusal,
) -> (Arc<HostTokens>, Mock, Result<(), Error>) {
    with_host_tokens_waking(answer, false).await
}

/// As [`with_host_tokens`], with a provider that wakes its waiters when `wakes`.
async fn with_host_tokens_waking(
    answer: fn(&HostTokens) -> Refusal,
    wakes: bool,
) -> (Arc<HostTokens>, Mock, Result<(), Error>) {
    let mock = Mock::start(false, |s| s.valid = vec![HOST_NEW.to_owned()]).await;
    let tokens = Arc::new(HostTokens {
        current: Arc::new(Mutex::new(Some(Secret::new(HOST_OLD)))),
        answer,
        refusals: Mutex::default(),
        accepted: Default::default(),
        wakes,
        waiting: Arc::default(),
    });
    let mut options = ClientOptions::default();
    options.session.era = EraPolicy::Legacy;
    options.auth = Some(Auth::provider(tokens.clone()));
    let outcome = async {
        let client =
            Client::connect_http(&pool(), HttpConfig::new(&mock.url()).unwrap(), options).await?;
        let called = client
            .call_tool("write", None, call_options())
            .await
            .map(drop);
        client.close().await;
        called
    }
    .await;
    (tokens, mock, outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_host_token_provider_gives_the_token_a_refused_request_is_sent_again_with() {
    let (tokens, mock, outcome) = with_host_tokens(|_| Refusal::Retry(Secret::new(HOST_NEW))).await;
    outcome.expect("sent again with the new token");
    assert_eq!(
        *tokens.refusals.lock().unwrap(),
        [(401, Some(HOST_OLD.to_owned()))],
        "told once, of the token sent"
    );
    assert!(tokens.accepted.load(std::sync::atomic::Ordering::Relaxed) >= 2);
    assert_eq!(mock.state().ran, 1);
    // A provider still handing out the old token: the new one, once given, stays in use.
    assert!(
        mock.posts("tools/call")
            .iter()
            .all(|r| r.header("authorization") == Some(&format!("Bearer {HOST_NEW}")))
    );
}

/// A pending provider that can wake its waiter is not polled: the client registers its
/// waker, and the store, which gets the new token only once someone waits for it (a person
/// logging in elsewhere), wakes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_pending_host_token_provider_wakes_the_request_waiting_for_it() {
    let (tokens, mock, outcome) = with_host_tokens_waking(
        |tokens| {
            let (current, waiting) = (tokens.current.clone(), tokens.waiting.clone());
            std::thread::spawn(move || {
                let wakers = waiting.wakers.lock().unwrap();
                drop(waiting.kept.wait_while(wakers, |w| w.is_empty()).unwrap());
                HostTokens::replace(&current, &waiting, HOST_NEW);
            });
            Refusal::Pending
        },
        true,
    )
    .await;
    outcome.expect("sent again once the provider had a new token");
    assert_eq!(tokens.refusals.lock().unwrap().len(), 1);
    assert_eq!(mock.state().ran, 1);
}

/// A pending provider that cannot wake its waiter (the trait's default) is asked again for
/// its token until it has a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_pending_host_token_provider_that_cannot_wake_is_asked_again() {
    let (tokens, mock, outcome) = with_host_tokens(|tokens| {
        // The new token is in the store by the time the client asks again.
        *tokens.current.lock().unwrap() = Some(Secret::new(HOST_NEW));
        Refusal::Pending
    })
    .await;
    outcome.expect("sent again once the provider had a new token");
    assert_eq!(tokens.refusals.lock().unwrap().len(), 1);
    assert_eq!(mock.state().ran, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_a_host_token_provider_that_gives_up_fails_the_request_as_refused() {
    let (_tokens, mock, outcome) =
        with_host_tokens(|_| Refusal::Fail("the token store is locked".to_owned())).await;
    let error = outcome.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert!(!error.outcome_unknown());
    assert!(
        error.to_string().contains("the token store is locked"),
        "{error}"
    );
    assert!(!error.to_string().contains(HOST_OLD), "{error}");
    assert_eq!(mock.posts("initialize").len(), 1, "not sent again");
}

// ---- OAuth through the binding layer (a binding's `auth` block and the Caller) ----

/// The variable the bindings below name for the client secret.
const SECRET_ENV: &str = "MCPWIRE_TEST_CLIENT_SECRET";

/// Hands out [`PRE_SECRET`] for [`SECRET_ENV`], and counts how often it was asked.
#[derive(Default)]
struct ClientSecretEnv(std::sync::atomic::AtomicUsize);

impl mcpwire::binding::call::TokenSource for ClientSecretEnv {
    fn token(&self, name: &str) -> Option<Secret> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (name == SECRET_ENV).then(|| Secret::new(PRE_SECRET))
    }
}

/// A Caller over `mock`'s tool `write` as binding `w`, with `auth`, its wire log in `lines`.
fn auth_caller(
    mock: &Mock,
    auth: Value,
    tokens: Arc<dyn mcpwire::binding::call::TokenSource>,
    lines: &Lines,
) -> mcpwire::binding::call::Caller {
    auth_caller_within(mock, auth, tokens, lines, 20)
}

/// [`auth_caller`] with the binding's `timeout_seconds`.
fn auth_caller_within(
    mock: &Mock,
    auth: Value,
    tokens: Arc<dyn mcpwire::binding::call::TokenSource>,
    lines: &Lines,
    timeout_seconds: u64,
) -> mcpwire::binding::call::Caller {
    let binding = json!([{
        "name": "w", "description": "", "input_schema": {"type": "object"},
        "url": mock.url(), "mcp_tool": "write", "tenants": ["acme"],
        "timeout_seconds": timeout_seconds, "auth": auth,
    }]);
    let bindings = mcpwire::binding::config::load_config(&binding.to_string()).unwrap();
    let mut caller = mcpwire::binding::call::Caller::new(pool(), bindings, tokens).unwrap();
    let sink = lines.clone();
    caller.set_wire_log(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned());
    }));
    caller
}

async fn call_w(
    caller: &mcpwire::binding::call::Caller,
    n: usize,
) -> mcpwire::binding::call::ToolResult {
    let context = mcpwire::binding::call::CallContext::new("acme", "conv", format!("call-{n}"));
    caller.call("w", &context, &json!({}), |_| {}, None).await
}

fn client_credentials(extra: Value) -> Value {
    let mut auth = json!({"grant": "client_credentials", "client_id": "host-client",
                          "client_secret_env": SECRET_ENV,
                          "token_endpoint_auth_method": "client_secret_post"});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            auth.as_object_mut().unwrap().remove(k);
        } else {
            auth[k] = v.clone();
        }
    }
    auth
}

/// A token endpoint that never answers: the call ends at the binding's own deadline (3 s),
/// not at the era probe's default limit (10 s), as a timeout reported against that deadline,
/// its outcome known (the tool was not called).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_binding_deadline_bounds_a_token_endpoint_that_never_answers() {
    let mock = Mock::start(true, |s| {
        s.methods = vec!["client_secret_post"];
        s.token_hangs = true;
    })
    .await;
    let caller = auth_caller_within(
        &mock,
        client_credentials(json!({})),
        Arc::new(ClientSecretEnv::default()),
        &Lines::default(),
        3,
    );
    let started = std::time::Instant::now();
    let result = call_w(&caller, 0).await;
    let took = started.elapsed();
    assert_eq!(result.error_kind(), Some(ErrorKind::Timeout), "{result:?}");
    assert_eq!(result.unknown_outcome(), Some(false), "{result:?}");
    let message = result.error_message().unwrap();
    assert!(message.contains("binding's timeout of 3 s"), "{message}");
    assert_eq!(mock.requests_to("/token").len(), 1, "the grant was waiting");
    assert_eq!(mock.state().ran, 0);
    // The deadline, not the probe's 10 s (a bound, not a timing: a 3 s deadline that ends
    // the call is well under 10 s on any machine that runs the suite).
    assert!(took < Duration::from_secs(9), "{took:?}");
}

/// A token endpoint slower than the era probe's default limit (10 s) is waited for under a
/// binding whose deadline allows it: the probe waits on the authorization as long as the
/// call may take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_binding_a_token_endpoint_slower_than_the_probe_limit_is_waited_for() {
    let mock = Mock::start(true, |s| {
        s.methods = vec!["client_secret_post"];
        s.token_delay_ms = 11_000;
    })
    .await;
    let caller = auth_caller_within(
        &mock,
        client_credentials(json!({})),
        Arc::new(ClientSecretEnv::default()),
        &Lines::default(),
        60,
    );
    let result = call_w(&caller, 0).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(mock.requests_to("/token").len(), 1);
    assert_eq!(mock.state().ran, 1);
}

/// A client credentials binding: the grant runs on the first call (after the server's 401),
/// with the secret from the binding's variable, the configured scope, and the token is kept
/// for the Caller's later calls (one token request for three calls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_binding_client_credentials_token_is_kept_across_calls() {
    let mock = Mock::start(true, |s| s.methods = vec!["client_secret_post"]).await;
    let lines = Lines::default();
    let tokens = Arc::new(ClientSecretEnv::default());
    let caller = auth_caller(
        &mock,
        client_credentials(json!({"scope": "files:read"})),
        tokens.clone(),
        &lines,
    );
    assert_eq!(
        tokens.0.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "read at call time"
    );
    for n in 0..3 {
        let result = call_w(&caller, n).await;
        assert!(!result.is_error(), "{result:?}");
    }
    let token_requests = mock.requests_to("/token");
    assert_eq!(token_requests.len(), 1, "one grant for three calls");
    let body = form(&token_requests[0].body_text());
    assert_eq!(
        param(&body, "grant_type").as_deref(),
        Some("client_credentials")
    );
    assert_eq!(param(&body, "client_id").as_deref(), Some("host-client"));
    assert_eq!(param(&body, "client_secret").as_deref(), Some(PRE_SECRET));
    assert_eq!(param(&body, "scope").as_deref(), Some("files:read"));
    assert_eq!(param(&body, "resource"), Some(mock.url()));
    assert_eq!(mock.state().ran, 3);
    let texts = format!("{caller:?} {:?}", lines.lock().unwrap());
    for secret in [PRE_SECRET, ACCESS[0]] {
        assert!(!texts.contains(secret), "{texts}");
    }
}

/// Through the binding layer, SPEC.md's rule: a tools/call refused with 401 before the tool
/// ran is sent again with a new token (and runs once); when the token the refresh brought
/// is refused too, the call fails as `unauthorized` with `unknown_outcome: false`, sent
/// once more and no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_binding_a_refused_call_is_sent_again_and_a_401_after_a_refresh_fails_known() {
    let mock = Mock::start(true, |s| {
        s.methods = vec!["client_secret_post"];
        s.refresh = true;
    })
    .await;
    let lines = Lines::default();
    let caller = auth_caller(
        &mock,
        client_credentials(json!({})),
        Arc::new(ClientSecretEnv::default()),
        &lines,
    );
    assert!(!call_w(&caller, 0).await.is_error());
    mock.refuse_next_call(401, r#"Bearer error="invalid_token""#);
    let result = call_w(&caller, 1).await;
    assert!(
        !result.is_error(),
        "sent again with the new token: {result:?}"
    );
    assert_eq!(mock.state().ran, 2);
    assert_eq!(mock.posts("tools/call").len(), 3, "the refused call twice");
    let grants: Vec<Option<String>> = mock
        .requests_to("/token")
        .iter()
        .map(|r| param(&form(&r.body_text()), "grant_type"))
        .collect();
    assert_eq!(
        grants,
        [
            Some("client_credentials".to_owned()),
            Some("refresh_token".to_owned())
        ]
    );

    mock.refuse_next_call(401, r#"Bearer error="invalid_token""#);
    mock.refuse_next_call(401, r#"Bearer error="invalid_token""#);
    let result = call_w(&caller, 2).await;
    assert_eq!(
        result.error_kind(),
        Some(ErrorKind::Unauthorized),
        "{result:?}"
    );
    assert_eq!(
        result.unknown_outcome(),
        Some(false),
        "nothing ran: {result:?}"
    );
    assert_eq!(mock.state().ran, 2, "the tool did not run");
    assert_eq!(
        mock.posts("tools/call").len(),
        5,
        "sent once more after the refresh"
    );
    let line = result.to_json_line();
    let mut texts = vec![line, format!("{caller:?}")];
    texts.extend(lines.lock().unwrap().iter().cloned());
    for text in &texts {
        for secret in [
            PRE_SECRET, ACCESS[0], ACCESS[1], ACCESS[2], REFRESH[0], REFRESH[1],
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

/// The secret is read when a call is made: an unset variable or a missing file fails that
/// call (`missing_token`, naming the member, nothing sent), and the next call reads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_binding_secrets_are_read_at_call_time_and_missing_ones_fail_before_sending() {
    let mock = Mock::start(true, |s| s.methods = vec!["client_secret_basic"]).await;
    let lines = Lines::default();
    struct Unset;
    impl mcpwire::binding::call::TokenSource for Unset {
        fn token(&self, _name: &str) -> Option<Secret> {
            None
        }
    }
    let caller = auth_caller(
        &mock,
        client_credentials(json!({})),
        Arc::new(Unset),
        &lines,
    );
    let result = call_w(&caller, 0).await;
    assert_eq!(
        result.error_kind(),
        Some(ErrorKind::MissingToken),
        "{result:?}"
    );
    assert_eq!(result.unknown_outcome(), Some(false));
    let message = result.error_message().unwrap();
    assert!(
        message.contains(SECRET_ENV) && message.contains("auth.client_secret_env"),
        "{message}"
    );
    assert!(mock.requests().is_empty(), "nothing was sent");

    let dir = std::env::temp_dir().join(format!("mcpwire-auth-binding-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("secret");
    let auth = client_credentials(json!({
        "client_secret_env": null, "client_secret_file": file.to_str().unwrap(),
        "token_endpoint_auth_method": "client_secret_basic",
    }));
    let caller = auth_caller(&mock, auth, Arc::new(Unset), &lines);
    let result = call_w(&caller, 1).await;
    assert_eq!(
        result.error_kind(),
        Some(ErrorKind::MissingToken),
        "{result:?}"
    );
    assert!(
        result
            .error_message()
            .unwrap()
            .contains("auth.client_secret_file"),
        "{result:?}"
    );
    std::fs::write(&file, format!("{PRE_SECRET}\n")).unwrap();
    let result = call_w(&caller, 2).await;
    assert!(
        !result.is_error(),
        "the file is read on the next call: {result:?}"
    );
    let token = &mock.requests_to("/token")[0];
    let basic = token.header("authorization").unwrap_or_default();
    assert!(basic.starts_with("Basic "), "client_secret_basic: {basic}");
    assert!(param(&form(&token.body_text()), "client_secret").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Standard base64 with padding, for a PEM body.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A `private_key_env` binding: the PEM key from the variable signs an ES256 client
/// assertion (`private_key_jwt`); a variable holding something else fails the call as a
/// config error that names the member and quotes nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_binding_private_key_jwt_from_a_pem_in_the_environment() {
    let mock = Mock::start(false, |s| s.methods = vec!["private_key_jwt"]).await;
    let (_key, der) = SigningKey::generate(None).unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64(&der)
    );
    struct Key(String);
    impl mcpwire::binding::call::TokenSource for Key {
        fn token(&self, name: &str) -> Option<Secret> {
            (name == "MCPWIRE_TEST_KEY").then(|| Secret::new(self.0.clone()))
        }
    }
    let auth = client_credentials(json!({
        "client_secret_env": null, "private_key_env": "MCPWIRE_TEST_KEY",
        "token_endpoint_auth_method": "private_key_jwt",
    }));
    let lines = Lines::default();
    let caller = auth_caller(&mock, auth.clone(), Arc::new(Key(pem.clone())), &lines);
    let result = call_w(&caller, 0).await;
    assert!(!result.is_error(), "{result:?}");
    let body = form(&mock.requests_to("/token")[0].body_text());
    assert_eq!(
        param(&body, "client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    let assertion = param(&body, "client_assertion").expect("an assertion");
    assert!(param(&body, "client_secret").is_none());
    let texts = format!("{caller:?} {result:?} {:?}", lines.lock().unwrap());
    assert!(!texts.contains(&assertion), "{texts}");

    let caller = auth_caller(&mock, auth, Arc::new(Key("not-a-key-5f1e".into())), &lines);
    let result = call_w(&caller, 1).await;
    assert_eq!(result.error_kind(), Some(ErrorKind::Config), "{result:?}");
    let message = result.error_message().unwrap();
    assert!(message.contains("auth.private_key_env"), "{message}");
    assert!(!message.contains("not-a-key"), "{message}");
}

/// The authorization code grant through a token store: an operator's login (here headless)
/// fills it; a Caller whose binding points at it calls with the stored token (no second
/// registration or authorization), refreshes after a 401 and writes the rotated refresh
/// token back; when the refresh token is refused too, the call fails as `unauthorized`,
/// outcome known, saying to log in again. No secret (tokens, the registered client's secret,
/// the code, the PKCE verifier) shows in any result, the wire log or `Debug`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_binding_token_store_is_used_refreshed_written_back_and_spent() {
    use mcpwire::client::auth::store::TokenStore;
    let mock = Mock::start(true, |s| s.refresh = true).await;
    let dir = std::env::temp_dir().join(format!("mcpwire-auth-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.json");

    // The login.
    let pool = pool();
    let store = Arc::new(TokenStore::create(&path, &mock.url(), REDIRECT));
    let authorizer: Arc<dyn Authorizer> = Arc::new(Headless::new(&pool, Duration::from_secs(5)));
    let oauth = Arc::new(store.oauth(authorizer).unwrap());
    let lines = Lines::default();
    let client = connect(&mock, &pool, &oauth, &lines).await.expect("login");
    client.close().await;
    let stored = |path: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    };
    let first = stored(&path);
    assert_eq!(first["client"]["client_id"], "client-7");
    assert_eq!(first["client"]["client_secret"], REGISTERED_SECRET);
    assert_eq!(first["tokens"][0]["refresh_token"], REFRESH[0]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // The host, nobody present.
    let auth = json!({"grant": "authorization_code", "token_store": path.to_str().unwrap()});
    let caller = auth_caller(&mock, auth, Arc::new(ClientSecretEnv::default()), &lines);
    let mut results = Vec::new();
    let result = call_w(&caller, 0).await;
    assert!(!result.is_error(), "{result:?}");
    results.push(result);
    assert_eq!(
        mock.requests_to("/register").len(),
        1,
        "no second registration"
    );
    assert_eq!(
        mock.requests_to("/authorize").len(),
        1,
        "no second authorization"
    );
    assert_eq!(
        mock.requests_to("/token").len(),
        1,
        "the stored token served"
    );

    mock.state().valid.clear();
    let result = call_w(&caller, 1).await;
    assert!(!result.is_error(), "refreshed: {result:?}");
    results.push(result);
    let rotated = stored(&path);
    assert_eq!(
        rotated["tokens"][0]["refresh_token"], REFRESH[1],
        "written back"
    );
    assert_eq!(rotated["tokens"][0]["access_token"], ACCESS[1]);

    {
        let mut state = mock.state();
        state.valid.clear();
        state.live_refresh.clear();
    }
    let result = call_w(&caller, 2).await;
    assert_eq!(
        result.error_kind(),
        Some(ErrorKind::Unauthorized),
        "{result:?}"
    );
    assert_eq!(result.unknown_outcome(), Some(false), "{result:?}");
    let message = result.error_message().unwrap();
    // What happened (the refresh refused), and that a login is needed: no browser is named.
    assert!(
        message.contains("the token refresh was refused (invalid_grant"),
        "{message}"
    );
    assert!(message.contains("a new login is needed"), "{message}");
    assert!(message.contains("log in again"), "{message}");
    assert!(!message.contains("in the browser"), "{message}");
    assert_eq!(mock.state().ran, 2, "the third call's tool never ran");
    results.push(result);

    let verifier = mock
        .requests_to("/token")
        .iter()
        .find_map(|r| param(&form(&r.body_text()), "code_verifier"))
        .expect("the code exchange");
    let mut texts: Vec<String> = results
        .iter()
        .map(|r| format!("{} {r:?}", r.to_json_line()))
        .collect();
    texts.push(format!("{caller:?} {store:?} {oauth:?}"));
    texts.extend(lines.lock().unwrap().iter().cloned());
    let secrets = [
        ACCESS[0],
        ACCESS[1],
        REFRESH[0],
        REFRESH[1],
        REGISTERED_SECRET,
        CODE,
        &verifier,
    ];
    for text in &texts {
        for secret in secrets {
            assert!(!text.contains(secret), "a secret in {text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
