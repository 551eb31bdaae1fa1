//! Agent identity through the client against an in-process MCP server, authorization server
//! and enterprise IdP (issue 23): DPoP-bound tokens with both servers' nonces, the JWT-bearer
//! grant with a workload token read from a file at each use, enterprise-managed
//! authorization, and a leak test over every output for the DPoP key, proofs, workload
//! tokens, ID tokens, ID-JAGs and access tokens.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcpwire::auth::{
    AssertionFuture, AssertionProvider, AssertionSource, Config, Dpop, DpopKey, EnterpriseIdp,
    PreRegistered, Secret, SigningKey, Url,
};
use mcpwire::client::auth::{Auth, OAuth};
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::session::EraPolicy;
use mcpwire::transport::http::{HttpConfig, HttpPool};
use serde_json::{Value, json};

use super::{Lines, base64, form, param, pool};
use crate::support::fault_server::{FaultServer, Recorded, Reply};

const PRM_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
const WORKLOAD_A: &str = "eyJ.workload-A-7f3a9c1e5b.sig";
const WORKLOAD_B: &str = "eyJ.workload-B-2d8b6f0a4c.sig";
const ID_TOKEN: &str = "eyJ.id-token-9c5e1a7f3b.sig";
const ID_JAG: &str = "eyJ.id-jag-4a0c8e2b6d.sig";
const XAA_SECRET: &str = "xaa-SECRET-6e2a0c8b4f";
const AS_NONCE: &str = "as-nonce-1b5d9f3a7c";
const RS_NONCE: &str = "rs-nonce-8c2e6a0d4b";

/// What the servers do and what they saw.
#[derive(Default)]
struct State {
    /// The token endpoint and the MCP server ask for a DPoP nonce.
    nonces: bool,
    /// Access tokens issued, in order; those still taken by the MCP server.
    issued: Vec<String>,
    valid: Vec<String>,
    /// Assertions the token endpoint saw (JWT-bearer), in order.
    assertions: Vec<String>,
    /// Every DPoP proof either server saw.
    proofs: Vec<String>,
    /// How many `use_dpop_nonce` answers each server gave.
    as_nonce_answers: usize,
    rs_nonce_answers: usize,
    /// Token-exchange requests at the IdP.
    exchanges: Vec<Vec<(String, String)>>,
    /// An error the IdP answers with.
    idp_error: Option<Value>,
    /// Both servers give a fresh `DPoP-Nonce` on every answer that succeeds (RFC 9449
    /// sections 8 and 9), and take a proof only with the nonce they gave last (once they
    /// have given one), asking for it (`use_dpop_nonce`) otherwise.
    rotate: bool,
    /// The nonce each server gave last, and how many either has given.
    as_nonce: Option<String>,
    rs_nonce: Option<String>,
    nonces_given: usize,
    /// For each MCP request with a proof, in order: the nonce the server gave last before it
    /// and the one the proof carried.
    rs_proof_nonces: Vec<(Option<String>, Option<String>)>,
    /// MCP requests refused for their token (none, or one not taken).
    unauthorized: usize,
}

impl State {
    /// A new nonce, as a server rotating them gives one.
    fn next_nonce(&mut self, by: &str) -> String {
        self.nonces_given += 1;
        format!("{by}-rot-{}", self.nonces_given)
    }
}

struct Servers {
    server: FaultServer,
    state: Arc<Mutex<State>>,
    base: Arc<OnceLock<String>>,
}

impl Servers {
    async fn start(configure: impl FnOnce(&mut State)) -> Servers {
        let mut state = State::default();
        configure(&mut state);
        let state = Arc::new(Mutex::new(state));
        let base = Arc::new(OnceLock::<String>::new());
        let handler = {
            let (state, base) = (state.clone(), base.clone());
            move |req: &Recorded| handle(&mut state.lock().unwrap(), base.get().unwrap(), req)
        };
        let server = FaultServer::start(handler).await;
        let _ = base.set(server.url("").trim_end_matches('/').to_owned());
        Servers {
            server,
            state,
            base,
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base.get().unwrap())
    }

    fn base(&self) -> &str {
        self.base.get().unwrap()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }
}

/// Part `n` of a JWT as JSON (0 the header, 1 the claims); not checked: the unit tests verify
/// the signatures with ring.
fn jwt_part(jwt: &str, n: usize) -> Value {
    jwt.split('.')
        .nth(n)
        .and_then(base64url_decode)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

fn claims(jwt: &str) -> Value {
    jwt_part(jwt, 1)
}

fn header_of(jwt: &str) -> Value {
    jwt_part(jwt, 0)
}

fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c)? as u32;
        bits = (bits << 6) | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    Some(out)
}

fn handle(state: &mut State, base: &str, req: &Recorded) -> Reply {
    let path = req.path.split('?').next().unwrap_or("");
    if let Some(proof) = req.header("dpop") {
        state.proofs.push(proof.to_owned());
    }
    match (req.method.as_str(), path) {
        ("GET", PRM_PATH) => Reply::json(
            200,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => Reply::json(
            200,
            json!({
                "issuer": base,
                "token_endpoint": format!("{base}/token"),
                "grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                "dpop_signing_alg_values_supported": ["ES256"],
            }),
        ),
        ("POST", "/token") => token(state, req),
        ("POST", "/idp/token") => idp(state, req),
        ("POST", "/mcp") => mcp(state, base, req),
        _ => Reply::empty(404),
    }
}

fn token(state: &mut State, req: &Recorded) -> Reply {
    let body = form(&req.body_text());
    let proof = req.header("dpop");
    if state.nonces
        && let Some(proof) = proof
        && claims(proof)["nonce"] != AS_NONCE
    {
        state.as_nonce_answers += 1;
        return Reply::json(400, json!({"error": "use_dpop_nonce"}))
            .with_header("dpop-nonce", AS_NONCE);
    }
    if state.rotate
        && let (Some(proof), Some(last)) = (proof, state.as_nonce.clone())
        && claims(proof)["nonce"] != last.as_str()
    {
        state.as_nonce_answers += 1;
        return Reply::json(400, json!({"error": "use_dpop_nonce"}))
            .with_header("dpop-nonce", &last);
    }
    let assertion = param(&body, "assertion").unwrap_or_default();
    state.assertions.push(assertion.clone());
    if ![WORKLOAD_A, WORKLOAD_B, ID_JAG].contains(&assertion.as_str()) {
        return Reply::json(
            400,
            json!({"error": "invalid_grant", "error_description": format!("{assertion} is not ours")}),
        );
    }
    let access = format!(
        "at-{}-{}",
        state.issued.len() + 1,
        if proof.is_some() { "dpop" } else { "bearer" }
    );
    state.issued.push(access.clone());
    state.valid.push(access.clone());
    let token_type = if proof.is_some() { "DPoP" } else { "Bearer" };
    let reply = Reply::json(
        200,
        json!({"access_token": access, "token_type": token_type, "expires_in": 3600}),
    );
    if state.rotate {
        let nonce = state.next_nonce("as");
        state.as_nonce = Some(nonce.clone());
        return reply.with_header("dpop-nonce", &nonce);
    }
    reply
}

fn idp(state: &mut State, req: &Recorded) -> Reply {
    let body = form(&req.body_text());
    state.exchanges.push(body.clone());
    if let Some(error) = &state.idp_error {
        return Reply::json(400, error.clone());
    }
    if param(&body, "subject_token").as_deref() != Some(ID_TOKEN) {
        return Reply::json(400, json!({"error": "invalid_grant"}));
    }
    Reply::json(
        200,
        json!({"access_token": ID_JAG, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
    )
}

fn mcp(state: &mut State, base: &str, req: &Recorded) -> Reply {
    let method = req.jsonrpc_method().unwrap_or_default();
    if method.starts_with("notifications/") {
        return Reply::empty(202);
    }
    let challenge = format!(r#"DPoP resource_metadata="{base}{PRM_PATH}""#);
    let authorization = req.header("authorization").unwrap_or("");
    let (scheme, token) = authorization.split_once(' ').unwrap_or((authorization, ""));
    if !state.valid.iter().any(|v| v == token) {
        state.unauthorized += 1;
        return Reply::json(401, json!({"error": "invalid_token"}))
            .with_header("www-authenticate", &challenge);
    }
    if token.contains("dpop") {
        let Some(proof) = req.header("dpop") else {
            return Reply::json(401, json!({"error": "no proof"}))
                .with_header("www-authenticate", &challenge);
        };
        let claims = claims(proof);
        assert_eq!(
            scheme, "DPoP",
            "a DPoP-bound token goes with the DPoP scheme"
        );
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], format!("{base}/mcp"));
        assert!(
            claims["ath"].as_str().is_some_and(|a| a.len() == 43),
            "{claims}"
        );
        let carried = claims["nonce"].as_str().map(str::to_owned);
        state
            .rs_proof_nonces
            .push((state.rs_nonce.clone(), carried.clone()));
        // The nonce the server wants: its one fixed nonce, or the one it gave last.
        let wanted = match (state.nonces, state.rotate) {
            (true, _) => Some(RS_NONCE.to_owned()),
            (false, true) => state.rs_nonce.clone(),
            (false, false) => None,
        };
        if let Some(wanted) = wanted.filter(|w| carried.as_deref() != Some(w.as_str())) {
            state.rs_nonce_answers += 1;
            return Reply::json(401, json!({"error": "use_dpop_nonce"}))
                .with_header(
                    "www-authenticate",
                    &format!(
                        r#"DPoP error="use_dpop_nonce", resource_metadata="{base}{PRM_PATH}""#
                    ),
                )
                .with_header("dpop-nonce", &wanted);
        }
    } else {
        assert_eq!(scheme, "Bearer");
    }
    let id = req.jsonrpc_id().unwrap_or(Value::Null);
    let result = match method.as_str() {
        "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                               "serverInfo": {"name": "identity-mock", "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "write", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "written"}]}),
        _ => {
            return Reply::json(
                200,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
            );
        }
    };
    let reply = Reply::json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}));
    if state.rotate && token.contains("dpop") {
        let nonce = state.next_nonce("rs");
        state.rs_nonce = Some(nonce.clone());
        return reply.with_header("dpop-nonce", &nonce);
    }
    reply
}

async fn connect(
    servers: &Servers,
    pool: &HttpPool,
    oauth: &Arc<OAuth>,
    lines: &Lines,
) -> Result<Client, mcpwire::Error> {
    let mut config = HttpConfig::new(&servers.url()).unwrap();
    let sink = lines.clone();
    config.wire_log = Some(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned())
    }));
    let mut options = ClientOptions::default();
    options.session.era = EraPolicy::Legacy;
    options.request_timeout = Duration::from_secs(10);
    options.auth = Some(Auth::oauth(oauth.clone()));
    let sink = lines.clone();
    options.on_warning = Some(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned())
    }));
    Client::connect_http(pool, config, options).await
}

fn call_options() -> CallOptions {
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(10);
    options
}

/// A workload token file, as a platform leaves it (rewritten when it rotates).
struct WorkloadFile(PathBuf);

impl WorkloadFile {
    fn new(name: &str, token: &str) -> WorkloadFile {
        let path = std::env::temp_dir().join(format!("mcpwire-{name}-{}.jwt", std::process::id()));
        let file = WorkloadFile(path);
        file.rotate(token);
        file
    }

    fn rotate(&self, token: &str) {
        std::fs::write(&self.0, format!("{token}\n")).unwrap();
    }
}

impl Drop for WorkloadFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A DPoP key made from a PKCS#8 DER the test keeps, to search outputs for.
fn dpop_key() -> (Dpop, Vec<u8>) {
    let (_, der) = SigningKey::generate(None).unwrap();
    let key = DpopKey::from_signing_key(SigningKey::from_pkcs8_der(&der, None).unwrap()).unwrap();
    (Dpop::new(Arc::new(key)), der)
}

fn jwt_bearer_oauth(servers: &Servers, file: &WorkloadFile, dpop: Option<Dpop>) -> Arc<OAuth> {
    let mut config = Config::jwt_bearer(
        &servers.url(),
        PreRegistered::new("wif-workload"),
        AssertionSource::File(file.0.clone()),
    )
    .unwrap();
    config.dpop = dpop;
    config.limits.request_timeout_secs = 5;
    Arc::new(OAuth::new(config, None).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_dpop_bound_tokens_with_both_nonces_and_a_workload_token_read_at_each_use() {
    let servers = Servers::start(|s| s.nonces = true).await;
    let pool = pool();
    let lines = Lines::default();
    let file = WorkloadFile::new("wif-dpop", WORKLOAD_A);
    let (dpop, _der) = dpop_key();
    let thumbprint = dpop.key.as_ref().expect("a key").thumbprint().to_owned();
    let oauth = jwt_bearer_oauth(&servers, &file, Some(dpop));
    let client = connect(&servers, &pool, &oauth, &lines)
        .await
        .expect("connect");
    client.list_tools().await.expect("tools/list");
    // The platform rotates the workload token; the server revokes the access token.
    file.rotate(WORKLOAD_B);
    servers.state().valid.clear();
    let result = client
        .call_tool("write", None, call_options())
        .await
        .expect("tools/call");
    assert!(!result.is_error());
    client.close().await;

    let state = servers.state();
    assert_eq!(
        state.assertions,
        [WORKLOAD_A, WORKLOAD_B],
        "the file is read again at each use"
    );
    assert!(
        state.issued.iter().all(|t| t.contains("dpop")),
        "{:?}",
        state.issued
    );
    assert_eq!(
        state.as_nonce_answers, 1,
        "the AS nonce is asked for once, then kept"
    );
    assert_eq!(
        state.rs_nonce_answers, 1,
        "the MCP server's nonce is asked for once, then kept"
    );
    // Every proof is its own (unique jti), of the one key.
    let jtis: std::collections::HashSet<String> = state
        .proofs
        .iter()
        .map(|p| claims(p)["jti"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        jtis.len(),
        state.proofs.len(),
        "a fresh proof for every request"
    );
    assert!(state.proofs.len() >= 6, "{}", state.proofs.len());
    let keys: std::collections::HashSet<String> = state
        .proofs
        .iter()
        .map(|p| header_of(p)["jwk"].to_string())
        .collect();
    assert_eq!(keys.len(), 1);
    assert!(
        state
            .proofs
            .iter()
            .all(|p| header_of(p)["typ"] == "dpop+jwt")
    );
    // MCP requests: the DPoP scheme and a proof on each (the mock asserts htm, htu and ath).
    let mcp_requests: Vec<Recorded> = servers
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/mcp" && r.header("authorization").is_some())
        .collect();
    assert!(
        mcp_requests
            .iter()
            .all(|r| r.header("authorization").unwrap().starts_with("DPoP "))
    );
    assert!(mcp_requests.iter().all(|r| r.header("dpop").is_some()));
    assert_eq!(thumbprint.len(), 43);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_a_missing_workload_token_fails_before_any_token_request() {
    let servers = Servers::start(|_| {}).await;
    let pool = pool();
    let file = WorkloadFile::new("wif-missing", WORKLOAD_A);
    let oauth = jwt_bearer_oauth(&servers, &file, None);
    std::fs::remove_file(&file.0).unwrap();
    let error = connect(&servers, &pool, &oauth, &Lines::default())
        .await
        .expect_err("no token");
    let text = error.to_string();
    assert!(text.contains("reading the assertion"), "{text}");
    assert!(
        text.contains(&file.0.display().to_string()),
        "names the file: {text}"
    );
    assert!(!error.outcome_unknown());
    assert!(servers.state().assertions.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_nonces_rotated_on_every_success_are_carried_by_the_next_proof() {
    // RFC 9449 sections 8 and 9: both servers give a new nonce on each 200; every next
    // proof must carry the newest one, or it takes a `use_dpop_nonce` refusal.
    let servers = Servers::start(|s| s.rotate = true).await;
    let pool = pool();
    let file = WorkloadFile::new("wif-rotate", WORKLOAD_A);
    let clock = super::ManualClock::at(1_800_000_000);
    let oauth = jwt_bearer_oauth(&servers, &file, Some(Dpop::default()));
    let oauth = Arc::new(Arc::into_inner(oauth).unwrap().with_clock(clock.clone()));
    let client = connect(&servers, &pool, &oauth, &Lines::default())
        .await
        .expect("connect");
    for _ in 0..4 {
        client.list_tools().await.expect("tools/list");
    }
    // Near the token's expiry the grant runs again: its proof carries the authorization
    // server's nonce from the first token answer (a 200).
    clock.advance(3600 - 5);
    client
        .call_tool("write", None, call_options())
        .await
        .expect("tools/call");
    client.list_tools().await.expect("tools/list");
    client.close().await;

    let state = servers.state();
    assert_eq!(state.issued.len(), 2, "{:?}", state.issued);
    assert!(state.issued.iter().all(|t| t.contains("dpop")));
    assert_eq!(
        state.as_nonce_answers, 0,
        "the token answer's nonce was used"
    );
    assert_eq!(state.rs_nonce_answers, 0, "each 200's nonce was used");
    assert_eq!(
        state.unauthorized, 1,
        "only the first request, with no token"
    );
    let proofs = &state.rs_proof_nonces;
    assert!(proofs.len() >= 7, "{proofs:?}");
    assert_eq!(
        proofs[0],
        (None, None),
        "no nonce before the server gave one"
    );
    assert!(
        proofs.iter().all(|(given, carried)| given == carried),
        "each proof carries the nonce given last: {proofs:?}"
    );
    let second_grant = state
        .proofs
        .iter()
        .filter(|p| claims(p)["htu"] == format!("{}/token", servers.base()))
        .nth(1)
        .expect("two token requests with proofs");
    assert_eq!(claims(second_grant)["nonce"], "as-rot-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_a_kept_client_runs_its_grant_again_before_the_token_expires() {
    // No refresh token with these grants: near expiry (and idle past it) the grant runs
    // again before the request goes out, so no request takes a 401 for an old token.
    let file = WorkloadFile::new("wif-ahead", WORKLOAD_A);
    for enterprise in [false, true] {
        let servers = Servers::start(|_| {}).await;
        let pool = pool();
        let clock = super::ManualClock::at(1_800_000_000);
        let oauth = match enterprise {
            false => jwt_bearer_oauth(&servers, &file, None),
            true => enterprise_oauth(&servers, Arc::new(Mutex::new(0))),
        };
        let oauth = Arc::new(Arc::into_inner(oauth).unwrap().with_clock(clock.clone()));
        let client = connect(&servers, &pool, &oauth, &Lines::default())
            .await
            .expect("connect");
        client.list_tools().await.expect("tools/list");
        assert_eq!(servers.state().issued.len(), 1);
        clock.advance(1000);
        client.list_tools().await.expect("tools/list");
        assert_eq!(servers.state().issued.len(), 1, "far from expiry: no grant");
        // Within the expiry skew (10 s), then idle well past the expiry.
        clock.advance(2600 - 5);
        client.list_tools().await.expect("tools/list");
        assert_eq!(servers.state().issued.len(), 2, "enterprise: {enterprise}");
        clock.advance(100_000);
        client
            .call_tool("write", None, call_options())
            .await
            .expect("tools/call");
        client.close().await;
        let state = servers.state();
        assert_eq!(state.issued.len(), 3, "enterprise: {enterprise}");
        assert_eq!(
            state.unauthorized, 1,
            "only the first request, before any token (enterprise: {enterprise})"
        );
        if enterprise {
            assert_eq!(state.exchanges.len(), 3, "a new ID-JAG each time");
        }
        let lists = servers
            .server
            .requests()
            .into_iter()
            .filter(|r| r.jsonrpc_method().as_deref() == Some("tools/call"))
            .map(|r| r.header("authorization").unwrap_or("").to_owned())
            .collect::<Vec<_>>();
        assert_eq!(lists, [format!("Bearer {}", state.issued[2])]);
    }
}

/// The user's ID token from the host's own sign-in.
struct HostIdToken(Arc<Mutex<usize>>);

impl AssertionProvider for HostIdToken {
    fn assertion(&self) -> AssertionFuture {
        *self.0.lock().unwrap() += 1;
        Box::pin(async { Ok(Secret::new(ID_TOKEN)) })
    }
}

fn enterprise_oauth(servers: &Servers, asked: Arc<Mutex<usize>>) -> Arc<OAuth> {
    let mut client = PreRegistered::new("xaa-client");
    client.client_secret = Some(Secret::new(XAA_SECRET));
    let idp = EnterpriseIdp::new(
        Url::parse(&format!("{}/idp/token", servers.base())).unwrap(),
        PreRegistered::new("idp-client"),
        AssertionSource::Host(Arc::new(HostIdToken(asked))),
    );
    let config = Config::enterprise_managed(&servers.url(), client, idp).unwrap();
    Arc::new(OAuth::new(config, None).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_enterprise_managed_authorization_end_to_end() {
    let servers = Servers::start(|_| {}).await;
    let pool = pool();
    let asked = Arc::new(Mutex::new(0));
    let oauth = enterprise_oauth(&servers, asked.clone());
    let client = connect(&servers, &pool, &oauth, &Lines::default())
        .await
        .expect("connect");
    client
        .call_tool("write", None, call_options())
        .await
        .expect("tools/call");
    client.close().await;
    assert_eq!(*asked.lock().unwrap(), 1, "the host was asked once");
    let state = servers.state();
    let exchange = &state.exchanges[0];
    assert_eq!(param(exchange, "subject_token").as_deref(), Some(ID_TOKEN));
    assert_eq!(param(exchange, "audience").as_deref(), Some(servers.base()));
    assert_eq!(param(exchange, "resource"), Some(servers.url()));
    assert_eq!(state.assertions, [ID_JAG]);
    let grant = servers
        .server
        .requests()
        .into_iter()
        .find(|r| r.path == "/token")
        .unwrap();
    let basic = grant.header("authorization").unwrap();
    assert_eq!(
        basic,
        format!(
            "Basic {}",
            base64(format!("xaa-client:{XAA_SECRET}").as_bytes())
        )
    );
}

/// Every secret of the agent-identity flows, and the texts they must appear in none of: the
/// wire log, warnings, `Debug` of the clients, the OAuth flows and every error, each error's
/// `Display`. The servers echo them back where they can (error descriptions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_no_secret_appears_in_any_output() {
    let pool = pool();
    let lines = Lines::default();
    let mut texts: Vec<String> = Vec::new();

    // 1. DPoP with both nonces and a rotated workload token.
    let servers = Servers::start(|s| s.nonces = true).await;
    let file = WorkloadFile::new("wif-leak", WORKLOAD_A);
    let (dpop, der) = dpop_key();
    texts.push(format!("{dpop:?} {:?}", dpop.key));
    let oauth = jwt_bearer_oauth(&servers, &file, Some(dpop));
    let client = connect(&servers, &pool, &oauth, &lines)
        .await
        .expect("connect");
    client.list_tools().await.unwrap();
    file.rotate(WORKLOAD_B);
    servers.state().valid.clear();
    client
        .call_tool("write", None, call_options())
        .await
        .unwrap();
    texts.push(format!("{client:?} {oauth:?}"));
    client.close().await;

    // 2. A workload token the server refuses, echoing it.
    let refusing = Servers::start(|_| {}).await;
    let bad = WorkloadFile::new("wif-leak-bad", "eyJ.unknown-workload-5b1d.sig");
    let oauth2 = jwt_bearer_oauth(&refusing, &bad, None);
    let error = connect(&refusing, &pool, &oauth2, &lines)
        .await
        .expect_err("refused");
    assert!(error.to_string().contains("invalid_grant"), "{error}");
    texts.push(format!("{error} {error:?} {oauth2:?}"));

    // 3. Enterprise-managed, then an IdP that echoes the ID token in its error.
    let ema = Servers::start(|_| {}).await;
    let oauth3 = enterprise_oauth(&ema, Arc::default());
    let client = connect(&ema, &pool, &oauth3, &lines)
        .await
        .expect("connect");
    client
        .call_tool("write", None, call_options())
        .await
        .unwrap();
    texts.push(format!("{client:?} {oauth3:?}"));
    client.close().await;
    let echoing = Servers::start(|s| {
        s.idp_error = Some(json!({"error": "invalid_grant", "error_description": format!("ID token {ID_TOKEN} expired")}));
    })
    .await;
    let oauth4 = enterprise_oauth(&echoing, Arc::default());
    let error = connect(&echoing, &pool, &oauth4, &lines)
        .await
        .expect_err("refused");
    assert!(error.to_string().contains("invalid_grant"), "{error}");
    texts.push(format!("{error} {error:?} {oauth4:?}"));

    texts.extend(lines.lock().unwrap().iter().cloned());
    assert!(
        texts.iter().any(|t| t.contains("> auth assertion from")),
        "the log covers the assertion reads"
    );
    let state = servers.state();
    let mut secrets: Vec<(String, String)> = vec![
        ("workload token A".into(), WORKLOAD_A.into()),
        ("workload token B".into(), WORKLOAD_B.into()),
        (
            "a refused workload token".into(),
            "eyJ.unknown-workload-5b1d.sig".into(),
        ),
        ("ID token".into(), ID_TOKEN.into()),
        ("ID-JAG".into(), ID_JAG.into()),
        ("client secret".into(), XAA_SECRET.into()),
        ("DPoP private key (DER, base64)".into(), base64(&der)),
    ];
    for (n, token) in state.issued.iter().chain(&ema.state().issued).enumerate() {
        secrets.push((format!("access token {n}"), token.clone()));
    }
    assert!(state.proofs.len() >= 6);
    for (n, proof) in state.proofs.iter().enumerate() {
        secrets.push((format!("proof {n}"), proof.clone()));
        secrets.push((
            format!("proof {n}'s signature"),
            proof.rsplit('.').next().unwrap().to_owned(),
        ));
    }
    // The private scalar (PKCS#8 v1 P-256 as ring writes it: `04 20` then 32 bytes at 36),
    // in hex and in base64 at each alignment.
    assert_eq!(der[34..36], [0x04, 0x20], "the scalar's OCTET STRING");
    let scalar = &der[36..68];
    secrets.push((
        "the DPoP private scalar (hex)".into(),
        scalar.iter().map(|b| format!("{b:02x}")).collect(),
    ));
    for skip in 0..3 {
        let encoded = base64(&scalar[skip..]);
        secrets.push((
            "the DPoP private scalar (base64)".into(),
            encoded[..16].to_owned(),
        ));
        let url_safe = encoded.replace('+', "-").replace('/', "_");
        secrets.push((
            "the DPoP private scalar (base64url)".into(),
            url_safe[..16].to_owned(),
        ));
    }
    for text in &texts {
        for (what, secret) in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "the {what} appears in: {text}"
            );
        }
    }
}

// ---- the binding `auth` block: the new grants through the Caller and `mcpwire call` ----

/// A host's token source holding the workload token under `WORKLOAD_TOKEN`.
struct HostVariables(Mutex<Vec<String>>);

impl mcpwire::binding::call::TokenSource for HostVariables {
    fn token(&self, name: &str) -> Option<Secret> {
        self.0.lock().unwrap().push(name.to_owned());
        (name == "WORKLOAD_TOKEN").then(|| Secret::new(WORKLOAD_A))
    }
}

fn binding_json(servers: &Servers, auth: Value) -> Value {
    json!([{
        "name": "w", "description": "", "input_schema": {"type": "object"},
        "url": servers.url(), "mcp_tool": "write", "tenants": ["acme"], "timeout_seconds": 20,
        "auth": auth,
    }])
}

/// A `jwt_bearer` binding with `dpop: true` and the workload token in a host variable: the
/// grant runs at the first call, the variable is read through the host's token source, and
/// every MCP request carries a DPoP proof; the token is kept for the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_binding_jwt_bearer_with_dpop_through_the_caller() {
    let servers = Servers::start(|s| s.nonces = true).await;
    let auth = json!({"grant": "jwt_bearer", "client_id": "wif-workload",
                      "workload_token_env": "WORKLOAD_TOKEN", "dpop": true});
    let bindings =
        mcpwire::binding::config::load_config(&binding_json(&servers, auth).to_string()).unwrap();
    let tokens = Arc::new(HostVariables(Mutex::default()));
    let caller = mcpwire::binding::call::Caller::new(pool(), bindings, tokens.clone()).unwrap();
    assert!(tokens.0.lock().unwrap().is_empty(), "read at call time");
    for n in 0..2 {
        let context = mcpwire::binding::call::CallContext::new("acme", "conv", format!("c-{n}"));
        let result = caller.call("w", &context, &json!({}), |_| {}, None).await;
        assert!(!result.is_error(), "{result:?}");
    }
    let state = servers.state();
    assert_eq!(state.assertions, [WORKLOAD_A], "one grant for two calls");
    assert!(state.issued.iter().all(|t| t.contains("dpop")));
    assert!(
        tokens
            .0
            .lock()
            .unwrap()
            .iter()
            .all(|v| v == "WORKLOAD_TOKEN")
    );
    let texts = format!("{caller:?}");
    for secret in [WORKLOAD_A, state.issued[0].as_str()] {
        assert!(!texts.contains(secret), "{texts}");
    }
}

/// `mcpwire call` through bindings with the new grants: `jwt_bearer` with `dpop` and the
/// workload token in a file, and `enterprise_managed` with the ID token in a file and the
/// client secret in a variable. Nothing secret in what it prints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_binding_grants_through_mcpwire_call() {
    let servers = Servers::start(|s| s.nonces = true).await;
    let workload = WorkloadFile::new("cli-wif", WORKLOAD_A);
    let id_token = WorkloadFile::new("cli-id-token", ID_TOKEN);
    let runs = [
        json!({"grant": "jwt_bearer", "client_id": "wif-workload",
               "workload_token_file": workload.0.display().to_string(), "dpop": true}),
        json!({"grant": "enterprise_managed", "client_id": "xaa-client",
               "client_secret_env": "MCPWIRE_TEST_XAA_SECRET",
               "idp_token_endpoint": format!("{}/idp/token", servers.base()),
               "idp_client_id": "idp-client",
               "id_token_file": id_token.0.display().to_string()}),
    ];
    for (n, auth) in runs.into_iter().enumerate() {
        let path = crate::cli_tools::temp_path(&format!("identity-bindings-{n}.json"));
        std::fs::write(&path, binding_json(&servers, auth).to_string()).unwrap();
        let args: Vec<String> = [
            "call",
            "--bindings",
            path.to_str().unwrap(),
            "--tool",
            "w",
            "--tenant",
            "acme",
            "--args",
            "{}",
            "-v",
        ]
        .map(str::to_owned)
        .to_vec();
        let run = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            crate::cli_tools::mcpwire(&args, &[("MCPWIRE_TEST_XAA_SECRET", XAA_SECRET)])
        })
        .await
        .unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(run.code, Some(0), "{run:#?}");
        assert!(run.stdout.contains(r#""is_error":false"#), "{}", run.stdout);
        let printed = format!("{}\n{}", run.stdout, run.stderr);
        let state = servers.state();
        let mut secrets = vec![
            WORKLOAD_A.to_owned(),
            ID_TOKEN.into(),
            ID_JAG.into(),
            XAA_SECRET.into(),
        ];
        secrets.extend(state.issued.iter().cloned());
        secrets.extend(state.proofs.iter().cloned());
        for secret in &secrets {
            assert!(!printed.contains(secret.as_str()), "{secret} in {printed}");
        }
    }
    let state = servers.state();
    assert_eq!(state.assertions, [WORKLOAD_A, ID_JAG]);
    assert!(state.issued[0].contains("dpop") && !state.issued[1].contains("dpop"));
    assert_eq!(state.exchanges.len(), 1);
}

/// `mcpwire probe` says what the servers advertise of agent identity: the DPoP challenge,
/// the authorization server's DPoP algorithms and its JWT-bearer grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_probe_reports_dpop_and_the_extensions() {
    let servers = Servers::start(|_| {}).await;
    let url = servers.url();
    let run = tokio::task::spawn_blocking(move || {
        crate::cli_tools::mcpwire(&["probe", "--json", &url, "-timeout-seconds", "20"], &[])
    })
    .await
    .unwrap();
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("{run:#?}"));
    let auth = &report["auth"];
    assert_eq!(auth["challenges"][0]["scheme"], "DPoP", "{auth}");
    assert_eq!(
        auth["server_metadata"]["dpop_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let extensions: Vec<&str> = auth["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(extensions.len(), 2, "{extensions:?}");
    assert!(extensions[0].starts_with("io.modelcontextprotocol/auth/dpop: DPoP-bound tokens (authorization server algorithms ES256)"), "{extensions:?}");
    assert!(
        extensions[1].contains("the JWT-bearer grant"),
        "{extensions:?}"
    );
    let url = servers.url();
    let human =
        tokio::task::spawn_blocking(move || crate::cli_tools::mcpwire(&["probe", &url], &[]))
            .await
            .unwrap();
    assert!(
        human
            .stdout
            .contains("extension io.modelcontextprotocol/auth/dpop"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("DPoP algorithms ES256"),
        "{}",
        human.stdout
    );
}

/// `mcp-tools -url URL -auth AUTH -tenant acme -tools write`, off the runtime's threads.
async fn mcp_tools_with_auth(servers: &Servers, auth: &Value) -> crate::cli_tools::Run {
    let (url, auth) = (servers.url(), auth.to_string());
    tokio::task::spawn_blocking(move || {
        crate::cli_tools::mcp_tools(
            &[
                "-url", &url, "-auth", &auth, "-tenant", "acme", "-tools", "write",
            ],
            &[],
        )
    })
    .await
    .unwrap()
}

/// `mcp-tools -auth`: discovery with a `jwt_bearer` block (DPoP, the workload token from a
/// file), the block written into the bindings, and `mcpwire call` through what it printed;
/// a block the config rules refuse is a usage error naming the member, quoting no secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_mcp_tools_writes_the_auth_block_it_discovered_with() {
    let servers = Servers::start(|s| s.nonces = true).await;
    let workload = WorkloadFile::new("mcp-tools-wif", WORKLOAD_A);
    let auth = json!({"grant": "jwt_bearer", "client_id": "wif-workload",
                      "workload_token_file": workload.0.display().to_string(), "dpop": true});
    let run = mcp_tools_with_auth(&servers, &auth).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let bindings: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(bindings[0]["auth"], auth);
    assert_eq!(
        servers.state().assertions,
        [WORKLOAD_A],
        "discovered with the grant"
    );
    assert!(servers.state().issued[0].contains("dpop"));

    let path = crate::cli_tools::temp_path("mcp-tools-auth-bindings.json");
    std::fs::write(&path, &run.stdout).unwrap();
    let file = path.display().to_string();
    let call = tokio::task::spawn_blocking(move || {
        crate::cli_tools::mcpwire(
            &[
                "call",
                "--bindings",
                &file,
                "--tool",
                "write",
                "--tenant",
                "acme",
                "--args",
                "{}",
            ],
            &[],
        )
    })
    .await
    .unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(call.code, Some(0), "{call:#?}");
    assert_eq!(servers.state().assertions, [WORKLOAD_A, WORKLOAD_A]);

    for (auth, member) in [
        (
            json!({"grant": "jwt_bearer", "client_id": "w", "workload_token_env": "eyJ s3cr3t"}),
            "auth.workload_token_env",
        ),
        (
            json!({"grant": "authorization_code", "token_store": "/t.json"}),
            "-login",
        ),
        (
            json!({"grant": "client_credentials", "client_id": "c", "client_secret_env": "S", "extra": 1}),
            "auth.extra",
        ),
    ] {
        let run = mcp_tools_with_auth(&servers, &auth).await;
        assert_eq!(run.code, Some(2), "{run:#?}");
        assert!(run.stderr.contains(member), "{member}: {}", run.stderr);
        assert!(!run.stderr.contains("s3cr3t"), "{}", run.stderr);
    }
}

/// `mcp-tools -login` with a pre-registered client (`-client-id`, its secret from a variable),
/// `-scope` and `-v`: no registration, the client's id and secret at the token endpoint, the
/// scope asked for, the client kept in the store; the wire log on stderr shows the login's
/// OAuth requests and none of its secrets. The test is the browser.
/// What `mcp-tools -login` against `mock` left: its output, its stderr, and the
/// authorization URL it printed (which the test's headless browser followed, then brought
/// back to the login's loopback listener).
struct Login {
    output: std::process::Output,
    stderr: String,
    authorize: String,
}

/// Runs `mcp-tools -url MOCK -login -token-store STORE -tenant ops -tools write` with
/// `extra` flags and `env`, playing the person's browser.
async fn mcp_tools_login(
    mock: &super::Mock,
    store: &std::path::Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Login {
    use std::io::{BufRead, Read, Write};
    use std::process::{Command, Stdio};

    let mut login = Command::new(env!("CARGO_BIN_EXE_mcp-tools"))
        .args([
            "-url",
            &mock.url(),
            "-login",
            "-token-store",
            store.to_str().unwrap(),
        ])
        .args(extra)
        .args(["-tenant", "ops", "-tools", "write", "-login-timeout", "30"])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tools");
    let stderr = login.stderr.take().unwrap();
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let lines = std::thread::spawn(move || {
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
    let authorize =
        tokio::task::spawn_blocking(move || url_rx.recv_timeout(Duration::from_secs(20)))
            .await
            .unwrap()
            .expect("the authorization URL on stderr");
    let location = {
        use mcpwire::client::auth::Authorizer;
        let url = mcpwire::auth::Url::parse(&authorize).unwrap();
        mcpwire::client::auth::Headless::new(&pool(), Duration::from_secs(10))
            .authorize(&url)
            .await
            .expect("redirected back")
    };
    // The mock sends the browser to a fixed redirect URI: the listener's port is the one the
    // authorization URL names; the query (code, state, iss) is the mock's.
    let query = authorize.split_once('?').unwrap().1;
    let redirect_uri = param(&form(query), "redirect_uri").expect("a redirect_uri");
    let port: u16 = redirect_uri
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(port, _)| port.parse().ok())
        .expect("a loopback redirect URI");
    let target = format!("/callback?{}", location.split_once('?').unwrap().1);
    let page = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            stream,
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    })
    .await
    .unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let output = tokio::task::spawn_blocking(move || login.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    Login {
        output,
        stderr: lines.join().unwrap(),
        authorize,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_mcp_tools_login_with_a_pre_registered_client_scope_and_a_wire_log() {
    let mock = super::Mock::start(true, |s| s.methods = vec!["client_secret_post"]).await;
    let store = crate::cli_tools::temp_path("identity-login-store.json");
    let _ = std::fs::remove_file(&store);
    let flags = [
        "-client-id",
        "pre-client",
        "-client-secret-env",
        "MCPWIRE_TEST_PRE_SECRET",
        "-scope",
        "files:read",
        "-v",
    ];
    let env = [("MCPWIRE_TEST_PRE_SECRET", super::PRE_SECRET)];
    let Login {
        output,
        stderr,
        authorize,
    } = mcp_tools_login(&mock, &store, &flags, &env).await;
    assert!(authorize.contains("client_id=pre-client"), "{authorize}");
    assert!(authorize.contains("scope=files%3Aread"), "{authorize}");
    assert!(output.status.success(), "{stderr}");
    assert!(mock.requests_to("/register").is_empty(), "no registration");
    let token = &mock.requests_to("/token")[0];
    let body = form(&token.body_text());
    assert_eq!(param(&body, "client_id").as_deref(), Some("pre-client"));
    assert_eq!(
        param(&body, "client_secret").as_deref(),
        Some(super::PRE_SECRET)
    );
    assert!(
        stderr.contains("> auth POST"),
        "the login's requests are logged: {stderr}"
    );
    let stored: Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    assert_eq!(stored["client"]["client_id"], "pre-client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for secret in [super::PRE_SECRET, super::CODE, super::ACCESS[0]] {
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
        assert!(!stdout.contains(secret), "{secret} in {stdout}");
    }
    let _ = std::fs::remove_file(&store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_mcp_tools_login_with_a_client_id_metadata_document() {
    // The authorization server takes Client ID Metadata Documents and also offers dynamic
    // registration: the document's URL is the client id, and nothing registers.
    const DOCUMENT: &str = "https://client.example.com/mcp-tools/client.json";
    let mock = super::Mock::start(true, |s| s.cimd = true).await;
    let store = crate::cli_tools::temp_path("identity-cimd-store.json");
    let _ = std::fs::remove_file(&store);
    let Login {
        output,
        stderr,
        authorize,
    } = mcp_tools_login(&mock, &store, &["-client-metadata-url", DOCUMENT], &[]).await;
    assert!(output.status.success(), "{stderr}");
    let query = form(authorize.split_once('?').unwrap().1);
    assert_eq!(param(&query, "client_id").as_deref(), Some(DOCUMENT));
    assert!(mock.requests_to("/register").is_empty(), "no registration");
    let tokens = mock.requests_to("/token");
    assert_eq!(tokens.len(), 1, "one code exchange");
    let body = form(&tokens[0].body_text());
    assert_eq!(param(&body, "client_id").as_deref(), Some(DOCUMENT));
    assert_eq!(
        param(&body, "grant_type").as_deref(),
        Some("authorization_code")
    );
    assert_eq!(param(&body, "client_secret"), None, "a public client");
    assert!(tokens[0].header("authorization").is_none());
    // The store holds the token, for the document's client, and the binding written uses it.
    let stored: Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    assert_eq!(stored["client"]["client_id"], DOCUMENT);
    assert!(
        stored["client"]
            .get("client_secret")
            .is_none_or(Value::is_null)
    );
    let tokens = stored["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 1, "{stored}");
    assert_eq!(tokens[0]["access_token"], super::ACCESS[0]);
    assert_eq!(tokens[0]["client_id"], DOCUMENT);
    // The tools were listed with that token, once the login was through.
    let lists = mock.posts("tools/list");
    assert!(
        lists
            .iter()
            .any(|r| r.header("authorization")
                == Some(format!("Bearer {}", super::ACCESS[0]).as_str())),
        "tools/list with the new token"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    for secret in [super::CODE, super::ACCESS[0]] {
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
        assert!(!stdout.contains(secret), "{secret} in {stdout}");
    }
    let _ = std::fs::remove_file(&store);
}

/// The login flags' usage rules.
#[test]
fn identity_mcp_tools_login_flags_are_checked() {
    let store = crate::cli_tools::temp_path("identity-flags-store.json");
    let store = store.to_str().unwrap();
    let url = "http://127.0.0.1:1/mcp";
    let base = ["-url", url, "-tenant", "t", "-tools", "x"];
    for (extra, expected) in [
        (vec!["-client-id", "c"], "-client-id applies to -login"),
        (vec!["-scope", "a"], "-scope applies to -login"),
        (
            vec!["-login", "-token-store", store, "-client-secret-env", "S"],
            "a client secret needs -client-id",
        ),
        (
            vec![
                "-login",
                "-token-store",
                store,
                "-client-id",
                "c",
                "-client-secret-env",
                "S",
                "-client-secret-file",
                "/s",
            ],
            "not both",
        ),
        (
            vec![
                "-login",
                "-token-store",
                store,
                "-client-metadata-url",
                "http://app.example/c.json",
            ],
            "-client-metadata-url must be an https URL with a path",
        ),
        (
            vec!["-login", "-token-store", store, "-scope", "a\"b"],
            "-scope must be scope tokens",
        ),
        (
            vec!["-auth", "{}", "-token-store", store],
            "-auth applies to -url servers",
        ),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let run = crate::cli_tools::mcp_tools(&args, &[]);
        assert_eq!(run.code, Some(2), "{args:?}: {run:#?}");
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
    }
}
