//! The flow machine against in-memory servers shaped like the conformance suite's mocks: an
//! MCP server with its protected-resource metadata, authorization servers with metadata,
//! registration, an authorization endpoint that redirects straight back, and a token
//! endpoint. Each test states what a scenario checks, and every secret the servers hand out
//! is then searched for in every URL, `Debug` output and error the flow produced.

use std::collections::{HashMap, VecDeque};

use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::{Value, json};

use super::crypto::tests::test_key_pem;
use super::flow::RequestId;
use super::metadata::ServerMetadataError;
use super::url::{FormError, decode_form};
use super::*;
use crate::base64::{self, Flavor, Padding};

const SERVER: &str = "https://mcp.example.com/mcp";
const AS: &str = "https://auth.example.com";
const REDIRECT: &str = "http://127.0.0.1:4567/callback";
const T0: UnixTime = UnixTime(1_800_000_000);

#[derive(Clone, Copy, PartialEq)]
enum Iss {
    Correct,
    Wrong,
    Omit,
    Normalized,
}

/// A request the servers saw.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    url: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Seen {
    fn form(&self) -> Vec<(String, String)> {
        decode_form(std::str::from_utf8(&self.body).unwrap()).unwrap()
    }

    fn param(&self, name: &str) -> Option<String> {
        self.form()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }
}

/// The servers: answers by "METHOD url" (queries ignored), several answers in turn (the
/// last one stays), 404 for anything else.
struct World {
    routes: HashMap<String, VecDeque<(u16, Vec<u8>)>>,
    seen: Vec<Seen>,
    authorizations: Vec<Url>,
    iss: Iss,
    issuer: String,
    /// Every secret the servers handed out, for the leak checks.
    secrets: Vec<String>,
    tokens_issued: u32,
    /// What an [`Output::Reload`] is answered with (another process's view of a shared
    /// cache); the flow's own cache when unset.
    shared: Option<TokenCache>,
    /// How many reloads were asked for.
    reloads: u32,
}

impl World {
    fn new() -> World {
        World {
            routes: HashMap::new(),
            seen: Vec::new(),
            authorizations: Vec::new(),
            iss: Iss::Correct,
            issuer: AS.to_owned(),
            secrets: vec!["the-code-1".into()],
            tokens_issued: 0,
            shared: None,
            reloads: 0,
        }
    }

    fn route(&mut self, method: &str, url: &str, status: u16, body: Value) {
        self.routes
            .entry(format!("{method} {url}"))
            .or_default()
            .push_back((status, body.to_string().into_bytes()));
    }

    fn prm(&mut self, at: &str, servers: &[&str], scopes: Option<&[&str]>) {
        let mut doc = json!({"resource": SERVER, "authorization_servers": servers});
        if let Some(scopes) = scopes {
            doc["scopes_supported"] = json!(scopes);
        }
        self.route("GET", at, 200, doc);
    }

    fn as_metadata(&mut self, at: &str, issuer: &str, extra: Value) {
        let mut doc = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                doc.as_object_mut().unwrap().remove(k);
            } else {
                doc[k] = v.clone();
            }
        }
        self.route("GET", at, 200, doc);
    }

    /// The authorization server's metadata at the root well-known URL, with `extra` members
    /// (null ones removed), instead of what was there.
    fn replace_as_metadata(&mut self, extra: Value) {
        let at = format!("{AS}/.well-known/oauth-authorization-server");
        self.routes.remove(&format!("GET {at}"));
        self.as_metadata(&at, AS, extra);
    }

    fn registration(
        &mut self,
        issuer: &str,
        client_id: &str,
        secret: Option<&str>,
        method: Option<&str>,
    ) {
        let mut doc = json!({"client_id": client_id, "redirect_uris": [REDIRECT]});
        if let Some(secret) = secret {
            doc["client_secret"] = json!(secret);
            self.secrets.push(secret.into());
        }
        if let Some(method) = method {
            doc["token_endpoint_auth_method"] = json!(method);
        }
        self.route("POST", &format!("{issuer}/register"), 201, doc);
    }

    fn token(&mut self, issuer: &str, extra: Value) {
        self.tokens_issued += 1;
        let access = format!("at-{}-{}", self.tokens_issued, issuer.len());
        self.secrets.push(access.clone());
        let mut doc = json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600});
        for (k, v) in extra.as_object().unwrap() {
            if let Some(s) = v.as_str().filter(|_| k == "refresh_token") {
                self.secrets.push(s.into());
            }
            doc[k] = v.clone();
        }
        self.route("POST", &format!("{issuer}/token"), 200, doc);
    }

    /// The usual setup: PRM at the path-aware URL (named in the challenge), AS metadata at
    /// the root, registration, one token.
    fn standard() -> World {
        let mut world = World::new();
        world.prm(
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            &[AS],
            None,
        );
        world.as_metadata(
            &format!("{AS}/.well-known/oauth-authorization-server"),
            AS,
            json!({}),
        );
        world.registration(AS, "client-1", None, None);
        world.token(AS, json!({}));
        world
    }

    fn answer(&mut self, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
        let url = request.uri().to_string();
        self.seen.push(Seen {
            method: request.method().clone(),
            url: url.clone(),
            headers: request.headers().clone(),
            body: request.body().clone(),
        });
        let path = url.split('?').next().unwrap();
        let key = format!("{} {path}", request.method());
        let (status, body) = match self.routes.get_mut(&key) {
            Some(answers) if answers.len() > 1 => answers.pop_front().unwrap(),
            Some(answers) => answers.front().cloned().unwrap(),
            None => (404, b"not found".to_vec()),
        };
        http::Response::builder().status(status).body(body).unwrap()
    }

    /// What the authorization endpoint does: redirect straight back with a code, the
    /// state, and `iss` as configured.
    fn redirect_for(&mut self, url: &Url) -> String {
        self.authorizations.push(url.clone());
        let query = decode_form(url.query().unwrap()).unwrap();
        let get = |n: &str| query.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let mut pairs = vec![("code", "the-code-1".to_owned())];
        if let Some(state) = get("state") {
            pairs.push(("state", state));
        }
        match self.iss {
            Iss::Correct => pairs.push(("iss", self.issuer.clone())),
            Iss::Wrong => pairs.push(("iss", "https://evil.example.com".into())),
            Iss::Normalized => pairs.push(("iss", format!("{}/", self.issuer))),
            Iss::Omit => {}
        }
        let redirect = get("redirect_uri").unwrap();
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (*a, b.as_str())).collect();
        Url::parse(&redirect)
            .unwrap()
            .with_query_pairs(&pairs)
            .unwrap()
            .to_string()
    }

    fn requests(&self) -> Vec<String> {
        self.seen
            .iter()
            .map(|s| format!("{} {}", s.method, s.url))
            .collect()
    }

    fn last(&self, method: &str, path_end: &str) -> &Seen {
        self.seen
            .iter()
            .rev()
            .find(|s| s.method == method && s.url.split('?').next().unwrap().ends_with(path_end))
            .unwrap_or_else(|| panic!("no {method} …{path_end} in {:?}", self.requests()))
    }
}

/// What a run ended in, and everything it printed on the way.
#[derive(Debug)]
enum End {
    Token(Token),
    Failed(Error),
    /// Nothing more to do (waiting for something the test did not give).
    Stalled,
}

/// Drives the flow against the world until it yields a token or fails, following each
/// authorization by the world's redirect. Collects the `Debug` of every output.
fn run(flow: &mut Flow, world: &mut World, now: UnixTime, printed: &mut Vec<String>) -> End {
    for _ in 0..100 {
        let Some(output) = flow.poll_output() else {
            return End::Stalled;
        };
        printed.push(format!("{output:?}"));
        match output {
            Output::Send { id, request, .. } => {
                printed.push(request.uri().to_string());
                let response = world.answer(&request);
                flow.handle_response(id, response, now);
            }
            Output::Authorize { url } => {
                printed.push(url.to_string());
                let redirect = world.redirect_for(&url);
                if let Err(e) = flow.handle_redirect(&redirect, now) {
                    printed.push(format!("{e:?} {e}"));
                }
            }
            Output::Token(token) => return End::Token(token),
            Output::Failed(error) => {
                printed.push(format!("{error}"));
                return End::Failed(error);
            }
            Output::Reload { .. } => {
                world.reloads += 1;
                let tokens = world.shared.clone().unwrap_or_else(|| flow.cache().clone());
                flow.handle_reload(tokens, now);
            }
            Output::Assertion { .. } => {
                flow.handle_assertion(Err("this world has no assertion".into()), now);
            }
        }
    }
    panic!("the flow did not settle");
}

/// Answers the flow's requests until it wants the browser; the authorization URL.
fn until_authorize(flow: &mut Flow, world: &mut World) -> Url {
    loop {
        match flow.poll_output().expect("an output") {
            Output::Send { id, request, .. } => {
                let response = world.answer(&request);
                flow.handle_response(id, response, T0);
            }
            Output::Authorize { url } => return url,
            other => panic!("{other:?}"),
        }
    }
}

fn challenge(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::WWW_AUTHENTICATE,
        HeaderValue::from_str(value).unwrap(),
    );
    headers
}

fn default_challenge() -> HeaderMap {
    challenge(
        "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
    )
}

fn code_config() -> Config {
    Config::authorization_code(SERVER, REDIRECT).unwrap()
}

/// A 401 with `headers`, run to the end.
fn refused(config: Config, world: &mut World, headers: HeaderMap) -> (End, Flow, Vec<String>) {
    let mut flow = Flow::new(config);
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &headers, None, T0);
    let mut printed = Vec::new();
    let end = run(&mut flow, world, T0, &mut printed);
    (end, flow, printed)
}

/// No secret the servers handed out, nor any the flow holds, shows in a URL, a `Debug`
/// output or an error text.
fn assert_no_leak(world: &World, flow: &Flow, printed: &[String]) {
    let mut secrets: Vec<String> = world.secrets.clone();
    secrets.extend(flow.secrets().iter().map(|s| s.expose().to_owned()));
    printed
        .iter()
        .chain(std::iter::once(&format!("{flow:?}")))
        .for_each(|text| {
            for secret in &secrets {
                assert!(
                    !text.contains(secret.as_str()),
                    "{secret:?} leaked in {text}"
                );
            }
        });
    for seen in &world.seen {
        for secret in &secrets {
            assert!(
                !seen.url.contains(secret.as_str()),
                "{secret:?} in the URL {}",
                seen.url
            );
        }
    }
    for url in &world.authorizations {
        for secret in &secrets {
            assert!(
                !url.as_str().contains(secret.as_str()),
                "{secret:?} in {url}"
            );
        }
    }
}

fn token_of(end: End) -> Token {
    match end {
        End::Token(token) => token,
        other => panic!("expected a token, got {other:?}"),
    }
}

fn failure_of(end: End) -> Error {
    match end {
        End::Failed(error) => error,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn query_param(url: &Url, name: &str) -> Option<String> {
    decode_form(url.query().unwrap_or(""))
        .unwrap()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
}

/// A randomness source that counts: byte `i` of the `n`-th fill is `n + i` (mod 256).
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicU8);

impl Randomness for Counting {
    fn fill(&self, bytes: &mut [u8]) -> Result<(), CryptoError> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = n.wrapping_add(i as u8);
        }
        Ok(())
    }
}

/// Randomness fails for good.
struct Broken;

impl Randomness for Broken {
    fn fill(&self, _bytes: &mut [u8]) -> Result<(), CryptoError> {
        Err(CryptoError::Random)
    }
}

// ---- randomness is an input ----

#[test]
fn the_verifier_and_state_come_from_the_randomness_given() {
    let mut world = World::standard();
    let mut flow =
        Flow::new(code_config()).with_randomness(std::sync::Arc::new(Counting::default()));
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let token = token_of(run(&mut flow, &mut world, T0, &mut Vec::new()));
    assert_eq!(token.access_token().expose(), "at-1-24");
    // The first fill is the PKCE verifier's 32 bytes (0, 1, ... 31), the second `state`'s 16
    // (1, 2, ... 16).
    let verifier: Vec<u8> = (0..32).collect();
    let verifier = base64::encode(&verifier, Flavor::UrlSafe);
    let state: Vec<u8> = (1..=16).collect();
    let authorize = &world.authorizations[0];
    assert_eq!(
        query_param(authorize, "state"),
        Some(base64::encode(&state, Flavor::UrlSafe))
    );
    assert_eq!(
        query_param(authorize, "code_challenge"),
        Some(super::crypto::s256_challenge(&verifier))
    );
    let token_request = world.last("POST", "/token");
    assert_eq!(token_request.param("code_verifier"), Some(verifier));
}

#[test]
fn failing_randomness_fails_the_flow_before_the_authorization_request() {
    let mut world = World::standard();
    let mut flow = Flow::new(code_config()).with_randomness(std::sync::Arc::new(Broken));
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let error = failure_of(run(&mut flow, &mut world, T0, &mut Vec::new()));
    assert!(
        matches!(error, Error::Crypto(CryptoError::Random)),
        "{error:?}"
    );
    assert!(world.authorizations.is_empty());
}

// ---- discovery (auth/metadata-default, -var1, -var2, -var3) ----

#[test]
fn metadata_default_from_the_challenge() {
    let mut world = World::standard();
    let (end, flow, printed) = refused(code_config(), &mut world, default_challenge());
    let token = token_of(end);
    assert_eq!(token.access_token().expose(), "at-1-24");
    assert_eq!(
        world.requests(),
        [
            "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "GET https://auth.example.com/.well-known/oauth-authorization-server",
            "POST https://auth.example.com/register",
            "POST https://auth.example.com/token",
        ]
    );
    // The authorization request.
    let authorize = &world.authorizations[0];
    assert!(
        authorize
            .as_str()
            .starts_with("https://auth.example.com/authorize?")
    );
    assert_eq!(
        query_param(authorize, "response_type").as_deref(),
        Some("code")
    );
    assert_eq!(
        query_param(authorize, "client_id").as_deref(),
        Some("client-1")
    );
    assert_eq!(
        query_param(authorize, "redirect_uri").as_deref(),
        Some(REDIRECT)
    );
    assert_eq!(
        query_param(authorize, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(query_param(authorize, "resource").as_deref(), Some(SERVER));
    assert_eq!(query_param(authorize, "scope"), None);
    let state = query_param(authorize, "state").unwrap();
    assert!(state.len() >= 22);
    // The token request: the verifier matches the challenge; the resource is the same.
    let token_request = world.last("POST", "/token");
    let verifier = token_request.param("code_verifier").unwrap();
    assert_eq!(
        query_param(authorize, "code_challenge").unwrap(),
        super::crypto::s256_challenge(&verifier)
    );
    assert_eq!(
        token_request.param("grant_type").as_deref(),
        Some("authorization_code")
    );
    assert_eq!(token_request.param("code").as_deref(), Some("the-code-1"));
    assert_eq!(
        token_request.param("redirect_uri").as_deref(),
        Some(REDIRECT)
    );
    assert_eq!(token_request.param("resource").as_deref(), Some(SERVER));
    assert_eq!(
        token_request.param("client_id").as_deref(),
        Some("client-1")
    );
    assert!(
        token_request
            .headers
            .get(http::header::AUTHORIZATION)
            .is_none()
    );
    // The registration: a native client with refresh tokens (SEP-837, SEP-2207).
    let registration: Value =
        serde_json::from_slice(&world.last("POST", "/register").body).unwrap();
    assert_eq!(registration["application_type"], "native");
    assert_eq!(registration["redirect_uris"], json!([REDIRECT]));
    assert!(
        registration["grant_types"]
            .as_array()
            .unwrap()
            .contains(&json!("refresh_token"))
    );
    assert_eq!(flow.bearer(T0).unwrap().expose(), "at-1-24");
    assert_eq!(flow.bearer(T0.plus(3600)), None);
    assert!(!flow.is_busy());
    assert_no_leak(&world, &flow, &printed);
}

#[test]
fn metadata_var1_path_aware_well_known_and_openid() {
    let mut world = World::standard();
    world
        .routes
        .remove(&format!("GET {AS}/.well-known/oauth-authorization-server"));
    world.as_metadata(
        &format!("{AS}/.well-known/openid-configuration"),
        AS,
        json!({}),
    );
    let (end, _, _) = refused(code_config(), &mut world, HeaderMap::new());
    token_of(end);
    assert_eq!(
        world.requests()[..3],
        [
            "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "GET https://auth.example.com/.well-known/oauth-authorization-server",
            "GET https://auth.example.com/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn metadata_var2_root_prm_and_path_inserted_issuer() {
    let issuer = "https://auth.example.com/tenant1";
    let mut world = World::new();
    world.issuer = issuer.into();
    world.route(
        "GET",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        200,
        json!({"resource": "https://mcp.example.com", "authorization_servers": [issuer]}),
    );
    world.as_metadata(
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        issuer,
        json!({}),
    );
    world.registration(issuer, "client-1", None, None);
    world.token(issuer, json!({}));
    let (end, _, _) = refused(code_config(), &mut world, HeaderMap::new());
    token_of(end);
    let requests = world.requests();
    assert_eq!(
        requests[0],
        "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        requests[1],
        "GET https://mcp.example.com/.well-known/oauth-protected-resource"
    );
    assert_eq!(
        requests[2],
        "GET https://auth.example.com/.well-known/oauth-authorization-server/tenant1"
    );
    assert!(
        !requests
            .iter()
            .any(|r| r.ends_with("/.well-known/oauth-authorization-server"))
    );
    // The resource parameter is the one the metadata names.
    assert_eq!(
        query_param(&world.authorizations[0], "resource").as_deref(),
        Some("https://mcp.example.com")
    );
    assert_eq!(
        world.last("POST", "/token").param("resource").as_deref(),
        Some("https://mcp.example.com")
    );
}

#[test]
fn metadata_var3_custom_prm_and_path_appended_openid() {
    let issuer = "https://auth.example.com/tenant1";
    let mut world = World::new();
    world.issuer = issuer.into();
    world.prm(
        "https://mcp.example.com/custom/metadata/location.json",
        &[issuer],
        None,
    );
    world.as_metadata(
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
        issuer,
        json!({}),
    );
    world.registration(issuer, "client-1", None, None);
    world.token(issuer, json!({}));
    let headers = challenge(
        "Bearer resource_metadata=\"https://mcp.example.com/custom/metadata/location.json\"",
    );
    let (end, _, _) = refused(code_config(), &mut world, headers);
    token_of(end);
    assert_eq!(
        world.requests()[..4],
        [
            "GET https://mcp.example.com/custom/metadata/location.json",
            "GET https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "GET https://auth.example.com/.well-known/openid-configuration/tenant1",
            "GET https://auth.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
}

// ---- the 2025-03-26 fallbacks ----

#[test]
fn backcompat_metadata_at_the_server_root() {
    let origin = "https://mcp.example.com";
    let mut world = World::new();
    world.issuer = origin.into();
    world.as_metadata(
        &format!("{origin}/.well-known/oauth-authorization-server"),
        origin,
        json!({
            "authorization_endpoint": format!("{origin}/oauth/authorize"),
            "token_endpoint": format!("{origin}/oauth/token"),
            "registration_endpoint": format!("{origin}/oauth/register"),
        }),
    );
    world.registration(&format!("{origin}/oauth"), "client-1", None, None);
    world.token(&format!("{origin}/oauth"), json!({}));
    world.iss = Iss::Omit;
    let (end, _, _) = refused(code_config(), &mut world, challenge("Bearer"));
    token_of(end);
    assert_eq!(
        world.requests(),
        [
            "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "GET https://mcp.example.com/.well-known/oauth-protected-resource",
            "GET https://mcp.example.com/.well-known/oauth-authorization-server",
            "POST https://mcp.example.com/oauth/register",
            "POST https://mcp.example.com/oauth/token",
        ]
    );
    assert_eq!(
        query_param(&world.authorizations[0], "resource").as_deref(),
        Some(SERVER)
    );
}

#[test]
fn backcompat_default_endpoints() {
    let origin = "https://mcp.example.com";
    let mut world = World::new();
    world.registration(origin, "client-1", None, None);
    world.token(origin, json!({}));
    world.iss = Iss::Omit;
    let (end, _, _) = refused(code_config(), &mut world, HeaderMap::new());
    token_of(end);
    assert_eq!(
        world.requests()[2..],
        [
            "GET https://mcp.example.com/.well-known/oauth-authorization-server",
            "GET https://mcp.example.com/.well-known/openid-configuration",
            "POST https://mcp.example.com/register",
            "POST https://mcp.example.com/token",
        ]
    );
    assert!(
        world.authorizations[0]
            .as_str()
            .starts_with("https://mcp.example.com/authorize?")
    );

    // Without the fallback, a server with no metadata is a failure.
    let mut config = code_config();
    config.legacy_fallback = false;
    let mut world = World::new();
    let error = failure_of(refused(config, &mut world, HeaderMap::new()).0);
    assert!(
        matches!(error, Error::NoResourceMetadata { ref tried } if tried.len() == 2),
        "{error:?}"
    );
    // A metadata URL named in the challenge that is not there is no reason to guess either.
    let mut world = World::new();
    let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
    assert!(
        matches!(error, Error::NoResourceMetadata { .. }),
        "{error:?}"
    );
}

// ---- scopes (auth/scope-*) and offline access ----

/// A world whose resource lists `mcp:profile` and whose challenge asks for `mcp:basic`.
fn challenged_world() -> (World, HeaderMap) {
    let mut world = World::standard();
    world.prm(
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        &[AS],
        Some(&["mcp:profile"]),
    );
    world
        .routes
        .get_mut("GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        .unwrap()
        .pop_front();
    let headers = challenge(
        "Bearer scope=\"mcp:basic\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
    );
    (world, headers)
}

/// A world whose resource lists `scopes` and whose challenge names none.
fn supported_world(scopes: &[&str]) -> World {
    let mut world = World::standard();
    world.routes.clear();
    world.prm(
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        &[AS],
        Some(scopes),
    );
    world.as_metadata(
        &format!("{AS}/.well-known/oauth-authorization-server"),
        AS,
        json!({}),
    );
    world.registration(AS, "client-1", None, None);
    world.token(AS, json!({}));
    world
}

#[test]
fn scope_selection() {
    // From the challenge.
    let (mut world, headers) = challenged_world();
    let (end, _, _) = refused(code_config(), &mut world, headers);
    let token = token_of(end);
    assert_eq!(
        query_param(&world.authorizations[0], "scope").as_deref(),
        Some("mcp:basic")
    );
    assert_eq!(token.scope().unwrap().to_string(), "mcp:basic");

    // From the resource's scopes_supported.
    let mut world = supported_world(&["mcp:basic", "mcp:read", "mcp:write"]);
    let (end, _, _) = refused(code_config(), &mut world, default_challenge());
    token_of(end);
    assert_eq!(
        query_param(&world.authorizations[0], "scope").as_deref(),
        Some("mcp:basic mcp:read mcp:write")
    );

    // A configured scope comes before the resource's scopes_supported...
    let mut world = supported_world(&["mcp:basic", "mcp:read"]);
    let mut config = code_config();
    config.scope = Some(Scopes::parse("mcp:configured").unwrap());
    let (end, _, _) = refused(config.clone(), &mut world, default_challenge());
    token_of(end);
    assert_eq!(
        query_param(&world.authorizations[0], "scope").as_deref(),
        Some("mcp:configured")
    );
    // ...and after the challenge's.
    let (mut world, headers) = challenged_world();
    let (end, _, _) = refused(config, &mut world, headers);
    token_of(end);
    assert_eq!(
        query_param(&world.authorizations[0], "scope").as_deref(),
        Some("mcp:basic")
    );

    // Neither: no scope parameter at all (checked in metadata_default_from_the_challenge).
    // An invalid scope in the challenge stops the flow.
    let mut world = World::standard();
    let headers = challenge(
        "Bearer scope=\"a\\\"b\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
    );
    let error = failure_of(refused(code_config(), &mut world, headers).0);
    assert_eq!(error, Error::Scope(ScopeError::Character));
}

#[test]
fn offline_access_only_when_the_server_lists_it() {
    let mut world = World::standard();
    world.replace_as_metadata(json!({"scopes_supported": ["mcp:basic", "offline_access"]}));
    let (end, _, _) = refused(
        code_config(),
        &mut world,
        challenge(
            "Bearer scope=\"mcp:basic\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
        ),
    );
    token_of(end);
    assert_eq!(
        query_param(&world.authorizations[0], "scope").as_deref(),
        Some("mcp:basic offline_access")
    );

    let mut world = World::standard();
    world.replace_as_metadata(json!({"scopes_supported": ["mcp:basic", "mcp:read"]}));
    let (end, _, _) = refused(code_config(), &mut world, default_challenge());
    token_of(end);
    assert_eq!(query_param(&world.authorizations[0], "scope"), None);
}

#[test]
fn step_up_asks_for_the_union_and_stops_at_the_limit() {
    let mut world = World::standard();
    world.token(AS, json!({"scope": "mcp:basic mcp:write"}));
    world.token(AS, json!({}));
    let prm = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    let (end, mut flow, mut printed) = refused(
        code_config(),
        &mut world,
        challenge(&format!(
            "Bearer scope=\"mcp:basic\", resource_metadata=\"{prm}\""
        )),
    );
    let first = token_of(end);
    flow.accepted();
    let step_up = challenge(&format!(
        "Bearer error=\"insufficient_scope\", scope=\"mcp:write\", resource_metadata=\"{prm}\""
    ));
    flow.handle_refusal(
        StatusCode::FORBIDDEN,
        &step_up,
        Some(first.access_token()),
        T0,
    );
    let second = token_of(run(&mut flow, &mut world, T0, &mut printed));
    assert_ne!(second.access_token(), first.access_token());
    assert_eq!(
        query_param(&world.authorizations[1], "scope").as_deref(),
        Some("mcp:basic mcp:write")
    );
    // The metadata was not fetched again for the step-up.
    assert_eq!(
        world
            .seen
            .iter()
            .filter(|s| s.url.contains(".well-known"))
            .count(),
        2
    );

    // A server that never has enough: at most three authorizations in all, then a failure.
    for _ in 0..5 {
        flow.handle_refusal(
            StatusCode::FORBIDDEN,
            &step_up,
            flow.bearer(T0).cloned().as_ref(),
            T0,
        );
        match run(&mut flow, &mut world, T0, &mut printed) {
            End::Token(_) => {}
            End::Failed(error) => {
                assert_eq!(
                    error,
                    Error::InsufficientScope {
                        scope: "mcp:write".into(),
                        step_ups: 2
                    }
                );
                break;
            }
            End::Stalled => panic!("stalled"),
        }
    }
    assert_eq!(world.authorizations.len(), 3);
    // A 403 that is not about scope fails at once.
    flow.handle_refusal(StatusCode::FORBIDDEN, &HeaderMap::new(), None, T0);
    assert_eq!(
        failure_of(run(&mut flow, &mut world, T0, &mut printed)),
        Error::Forbidden
    );
    assert_no_leak(&world, &flow, &printed);
}

// ---- client identity and token endpoint authentication ----

#[test]
fn token_endpoint_auth_methods_after_registration() {
    for (method, secret) in [
        ("client_secret_basic", Some("s-basic-1")),
        ("client_secret_post", Some("s-post-1")),
        ("none", None),
    ] {
        let mut world = World::standard();
        world.routes.clear();
        world.prm(
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            &[AS],
            None,
        );
        world.as_metadata(
            &format!("{AS}/.well-known/oauth-authorization-server"),
            AS,
            json!({"token_endpoint_auth_methods_supported": [method]}),
        );
        world.registration(AS, "client-7", secret, Some(method));
        world.token(AS, json!({}));
        let (end, flow, printed) = refused(code_config(), &mut world, default_challenge());
        token_of(end);
        let request = world.last("POST", "/token");
        let basic = request.headers.get(http::header::AUTHORIZATION);
        match method {
            "client_secret_basic" => {
                let value = basic.unwrap().to_str().unwrap();
                let decoded = base64::decode(
                    value.strip_prefix("Basic ").unwrap(),
                    Flavor::Standard,
                    Padding::Required,
                )
                .unwrap();
                assert_eq!(decoded, b"client-7:s-basic-1");
                assert!(basic.unwrap().is_sensitive());
                assert_eq!(request.param("client_secret"), None);
            }
            "client_secret_post" => {
                assert!(basic.is_none());
                assert_eq!(request.param("client_secret").as_deref(), Some("s-post-1"));
                assert_eq!(request.param("client_id").as_deref(), Some("client-7"));
            }
            _ => {
                assert!(basic.is_none());
                assert_eq!(request.param("client_secret"), None);
                assert_eq!(request.param("client_id").as_deref(), Some("client-7"));
            }
        }
        assert_no_leak(&world, &flow, &printed);
    }
}

#[test]
fn pre_registered_client_without_registration() {
    let mut world = World::standard();
    world.routes.clear();
    world.prm(
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        &[AS],
        None,
    );
    world.as_metadata(
        &format!("{AS}/.well-known/oauth-authorization-server"),
        AS,
        json!({"registration_endpoint": null, "token_endpoint_auth_methods_supported": ["client_secret_basic"]}),
    );
    world.token(AS, json!({}));
    world.secrets.push("pre-registered-secret".into());
    let mut config = code_config();
    let mut client = PreRegistered::new("pre-registered-client");
    client.client_secret = Some(Secret::new("pre-registered-secret"));
    config.pre_registered = Some(client);
    let (end, flow, printed) = refused(config, &mut world, default_challenge());
    token_of(end);
    assert!(!world.requests().iter().any(|r| r.contains("/register")));
    let value = world.last("POST", "/token").headers[http::header::AUTHORIZATION]
        .to_str()
        .unwrap()
        .to_owned();
    let decoded = base64::decode(
        value.strip_prefix("Basic ").unwrap(),
        Flavor::Standard,
        Padding::Required,
    )
    .unwrap();
    assert_eq!(decoded, b"pre-registered-client:pre-registered-secret");
    assert_eq!(
        query_param(&world.authorizations[0], "client_id").as_deref(),
        Some("pre-registered-client")
    );
    assert_no_leak(&world, &flow, &printed);

    // Without any way to a client id, the flow says so.
    let mut world = World::standard();
    world.routes.clear();
    world.prm(
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        &[AS],
        None,
    );
    world.as_metadata(
        &format!("{AS}/.well-known/oauth-authorization-server"),
        AS,
        json!({"registration_endpoint": null}),
    );
    let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
    assert_eq!(error, Error::NoClientIdentity { issuer: AS.into() });
}

#[test]
fn client_id_metadata_document_before_registration() {
    let document = "https://conformance-test.local/client-metadata.json";
    let mut world = World::standard();
    world.replace_as_metadata(json!({"client_id_metadata_document_supported": true}));
    let mut config = code_config();
    config.metadata_document = Some(Url::parse(document).unwrap());
    let (end, _, _) = refused(config.clone(), &mut world, default_challenge());
    token_of(end);
    assert!(!world.requests().iter().any(|r| r.contains("/register")));
    assert_eq!(
        query_param(&world.authorizations[0], "client_id").as_deref(),
        Some(document)
    );
    assert_eq!(
        world.last("POST", "/token").param("client_id").as_deref(),
        Some(document)
    );

    // Not advertised: registration, as before.
    let mut world = World::standard();
    let (end, _, _) = refused(config, &mut world, default_challenge());
    token_of(end);
    assert!(world.requests().iter().any(|r| r.contains("/register")));
}

// ---- refusals before any token is asked for ----

#[test]
fn resource_mismatch_stops_before_authorization() {
    let mut world = World::standard();
    world
        .routes
        .remove("GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    world.route(
        "GET",
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        200,
        json!({"resource": "https://evil.example.com/mcp", "authorization_servers": [AS]}),
    );
    let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
    assert_eq!(
        error,
        Error::ResourceMismatch {
            resource: "https://evil.example.com/mcp".into(),
            server: SERVER.into()
        }
    );
    assert_eq!(world.seen.len(), 1);
    assert!(world.authorizations.is_empty());
}

#[test]
fn pkce_is_required() {
    let mut world = World::standard();
    world.replace_as_metadata(json!({"code_challenge_methods_supported": null}));
    let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
    assert_eq!(error, Error::PkceUnsupported { issuer: AS.into() });
    assert!(world.authorizations.is_empty());
    assert!(!world.requests().iter().any(|r| r.starts_with("POST")));
}

#[test]
fn metadata_issuer_mismatch_is_never_used() {
    let mut world = World::standard();
    world
        .routes
        .remove(&format!("GET {AS}/.well-known/oauth-authorization-server"));
    world.as_metadata(
        &format!("{AS}/.well-known/oauth-authorization-server"),
        "https://attacker.example.com",
        json!({}),
    );
    let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
    assert!(
        matches!(
            error,
            Error::ServerMetadata(ServerMetadataError::IssuerMismatch { .. })
        ),
        "{error:?}"
    );
    assert!(world.authorizations.is_empty());
    assert!(!world.requests().iter().any(|r| r.starts_with("POST")));
}

#[test]
fn a_metadata_hint_on_another_origin_is_not_fetched() {
    let mut world = World::standard();
    let headers = challenge("Bearer resource_metadata=\"https://elsewhere.example.com/prm\"");
    let error = failure_of(refused(code_config(), &mut world, headers).0);
    assert_eq!(
        error,
        Error::CrossOrigin {
            url: "https://elsewhere.example.com/prm".into()
        }
    );
    assert!(world.seen.is_empty());
}

#[test]
fn insecure_endpoints_are_refused() {
    assert!(matches!(
        Config::authorization_code("http://mcp.example.com/mcp", REDIRECT),
        Err(Error::Insecure { .. })
    ));
    assert!(matches!(
        Config::authorization_code(SERVER, "http://example.com/callback"),
        Err(Error::Insecure { .. })
    ));
    assert!(Config::authorization_code("http://localhost:3000/mcp", REDIRECT).is_ok());
    let mut world = World::standard();
    world.replace_as_metadata(json!({"token_endpoint": "http://auth.example.com/token"}));
    let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
    assert_eq!(
        error,
        Error::Document {
            purpose: Purpose::ServerMetadata,
            error: super::metadata::DocumentError::Insecure("token_endpoint")
        }
    );
}

// ---- the authorization response (RFC 9207, state) ----

#[test]
fn iss_in_the_authorization_response() {
    // (advertised, what the redirect carries, accepted)
    let cases = [
        (Some(true), Iss::Correct, true),
        (None, Iss::Omit, true),
        (Some(false), Iss::Correct, true),
        (Some(true), Iss::Omit, false),
        (Some(true), Iss::Wrong, false),
        (None, Iss::Wrong, false),
        (Some(true), Iss::Normalized, false),
    ];
    for (advertised, iss, accepted) in cases {
        let mut world = World::standard();
        world.replace_as_metadata(
            json!({"authorization_response_iss_parameter_supported": advertised}),
        );
        world.iss = iss;
        let (end, flow, printed) = refused(code_config(), &mut world, default_challenge());
        let token_requested = world.requests().iter().any(|r| r.ends_with("/token"));
        assert_eq!(world.authorizations.len(), 1);
        if accepted {
            token_of(end);
            assert!(token_requested);
        } else {
            let error = failure_of(end);
            assert!(
                matches!(
                    error,
                    Error::Authorization(
                        AuthorizationError::IssuerMismatch { .. }
                            | AuthorizationError::IssuerMissing { .. }
                    )
                ),
                "{error:?}"
            );
            assert!(
                !token_requested,
                "the code must not reach the token endpoint"
            );
        }
        assert_no_leak(&world, &flow, &printed);
    }
}

#[test]
fn the_redirect_is_checked() {
    let mut world = World::standard();
    let mut flow = Flow::new(code_config());
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let mut printed = Vec::new();
    let url = until_authorize(&mut flow, &mut world);
    let good = world.redirect_for(&url);
    let state = query_param(&url, "state").unwrap();
    // Not this flow's state, no state, another path, another origin, a broken query: ignored.
    let forged = good.replace(&state, "forged");
    assert_eq!(
        flow.handle_redirect(&forged, T0),
        Err(RedirectError::StateMismatch)
    );
    assert_eq!(
        flow.handle_redirect(&format!("{REDIRECT}?code=x"), T0),
        Err(RedirectError::StateMismatch)
    );
    assert_eq!(
        flow.handle_redirect(&good.replace("/callback", "/other"), T0),
        Err(RedirectError::WrongTarget)
    );
    assert_eq!(
        flow.handle_redirect(&good.replace("127.0.0.1:4567", "127.0.0.1:4568"), T0),
        Err(RedirectError::WrongTarget)
    );
    assert_eq!(
        flow.handle_redirect(&format!("{good}&state=again"), T0),
        Err(RedirectError::Query(FormError::Duplicate))
    );
    assert!(flow.is_busy() && flow.poll_output().is_none());
    // The request target form works too; then the code is exchanged.
    let target = good.strip_prefix("http://127.0.0.1:4567").unwrap();
    assert_eq!(flow.handle_redirect(target, T0), Ok(()));
    token_of(run(&mut flow, &mut world, T0, &mut printed));
    assert_eq!(
        flow.handle_redirect(target, T0),
        Err(RedirectError::NotWaiting)
    );

    // An error response with the right state (and iss) ends the flow, its text cleaned.
    let mut world = World::standard();
    let mut flow = Flow::new(code_config());
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let url = until_authorize(&mut flow, &mut world);
    let state = query_param(&url, "state").unwrap();
    let denied = Url::parse(REDIRECT)
        .unwrap()
        .with_query_pairs(&[
            ("error", "access_denied"),
            ("error_description", "no\r\nthanks"),
            ("state", &state),
            ("iss", AS),
        ])
        .unwrap();
    assert_eq!(
        flow.handle_redirect(denied.as_str(), T0),
        Err(RedirectError::Failed)
    );
    match flow.poll_output() {
        Some(Output::Failed(Error::Authorization(AuthorizationError::Denied(e)))) => {
            assert_eq!(e.code, "access_denied");
            assert_eq!(e.description.as_deref(), Some("nothanks"));
        }
        other => panic!("{other:?}"),
    }
}

// ---- tokens: refresh, rotation, 401 with a token, migration, cache ----

#[test]
fn refresh_before_expiry_and_rotation() {
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world.token(AS, json!({"refresh_token": "rt-1", "expires_in": 600}));
    world.token(AS, json!({"refresh_token": "rt-2", "expires_in": 600}));
    world.token(AS, json!({"expires_in": 600}));
    let (end, mut flow, mut printed) = refused(code_config(), &mut world, default_challenge());
    let first = token_of(end);
    assert_eq!(first.refresh_token().unwrap().expose(), "rt-1");
    let due = T0.plus(600 - 60);
    assert_eq!(flow.poll_timeout(), Some(due));
    flow.handle_timeout(T0.plus(10));
    assert!(flow.poll_output().is_none(), "not due yet");
    flow.handle_timeout(due);
    // A background refresh: a request, then the new token is simply there.
    assert!(matches!(
        run(&mut flow, &mut world, due, &mut printed),
        End::Stalled
    ));
    let request = world.last("POST", "/token");
    assert_eq!(
        request.param("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(request.param("refresh_token").as_deref(), Some("rt-1"));
    assert_eq!(request.param("resource").as_deref(), Some(SERVER));
    let second = flow.token().unwrap().clone();
    assert_ne!(second.access_token(), first.access_token());
    assert_eq!(second.refresh_token().unwrap().expose(), "rt-2");
    // The next answer brings no refresh token: the rotated one is kept.
    let due = due.plus(600 - 60);
    flow.handle_timeout(due);
    assert!(matches!(
        run(&mut flow, &mut world, due, &mut printed),
        End::Stalled
    ));
    assert_eq!(
        world
            .last("POST", "/token")
            .param("refresh_token")
            .as_deref(),
        Some("rt-2")
    );
    assert_eq!(
        flow.token().unwrap().refresh_token().unwrap().expose(),
        "rt-2"
    );
    assert_no_leak(&world, &flow, &printed);
}

#[test]
fn a_token_shorter_lived_than_the_refresh_margin_is_refreshed_half_way() {
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world.token(AS, json!({"refresh_token": "rt-1", "expires_in": 30}));
    let (end, flow, _) = refused(code_config(), &mut world, default_challenge());
    token_of(end);
    // 60 s before expiry would be before it was issued: due at once, on every request.
    assert_eq!(flow.poll_timeout(), Some(T0.plus(15)));
}

#[test]
fn a_failed_background_refresh_keeps_the_token_and_drops_the_refresh_token() {
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world.token(AS, json!({"refresh_token": "rt-1", "expires_in": 600}));
    world.route(
        "POST",
        &format!("{AS}/token"),
        400,
        json!({"error": "invalid_grant"}),
    );
    let (end, mut flow, mut printed) = refused(code_config(), &mut world, default_challenge());
    let first = token_of(end);
    flow.handle_timeout(T0.plus(540));
    assert!(matches!(
        run(&mut flow, &mut world, T0.plus(540), &mut printed),
        End::Stalled
    ));
    assert_eq!(flow.token().unwrap().access_token(), first.access_token());
    assert!(flow.token().unwrap().refresh_token().is_none());
    assert_eq!(flow.poll_timeout(), None);
}

/// A flow that got a token with refresh token `rt-1` (expiring at `T0 + 600`), and the
/// world with `answers` queued at the token endpoint for what follows.
fn with_refreshable_token(answers: &[Value]) -> (World, Flow, Token) {
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world.token(AS, json!({"refresh_token": "rt-1", "expires_in": 600}));
    for answer in answers {
        world.token(AS, answer.clone());
    }
    let (end, flow, _) = refused(code_config(), &mut world, default_challenge());
    (world, flow, token_of(end))
}

/// How many refresh requests the world saw.
fn refreshes(world: &World) -> Vec<String> {
    world
        .seen
        .iter()
        .filter(|s| s.param("grant_type").as_deref() == Some("refresh_token"))
        .map(|s| s.param("refresh_token").unwrap_or_default())
        .collect()
}

/// A second process's flow: the same cache (a token store read before the first one
/// refreshed), sharing it, after a 401 at `now` (it knows no metadata yet).
fn second_process(cache: TokenCache, world: &mut World, now: UnixTime) -> End {
    let mut flow = Flow::with_cache(code_config(), cache);
    flow.share_cache(true);
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, now);
    run(&mut flow, world, now, &mut Vec::new())
}

#[test]
fn a_shared_cache_renewed_by_another_process_is_taken_instead_of_refreshing_again() {
    let (mut world, flow, first) =
        with_refreshable_token(&[json!({"refresh_token": "rt-2", "expires_in": 600})]);
    let stale = flow.into_cache();
    let later = T0.plus(700);
    // Process A: expired, reloads (nothing new), refreshes, and its cache is written back.
    let a = token_of(second_process(stale.clone(), &mut world, later));
    assert_ne!(a.access_token(), first.access_token());
    assert_eq!(a.refresh_token().unwrap().expose(), "rt-2");
    assert_eq!(refreshes(&world), ["rt-1"]);
    let mut written = stale.clone();
    let key = stale.iter().next().unwrap().0.clone();
    written.insert(key.clone(), a.clone());
    // Process B read the store before A wrote it: under the lock it finds A's token, and
    // never spends rt-1 (which the server would refuse).
    world.shared = Some(written);
    let reloads = world.reloads;
    let b = token_of(second_process(stale, &mut world, later));
    assert_eq!(world.reloads, reloads + 1, "B reloaded before refreshing");
    assert_eq!(b.access_token(), a.access_token());
    assert_eq!(refreshes(&world), ["rt-1"], "one refresh in all");
}

#[test]
fn a_shared_token_renewed_but_itself_expired_is_refreshed_with_its_own_refresh_token() {
    let (mut world, flow, first) =
        with_refreshable_token(&[json!({"refresh_token": "rt-3", "expires_in": 600})]);
    let stale = flow.into_cache();
    let key = stale.iter().next().unwrap().0.clone();
    let mut written = stale.clone();
    // Another process refreshed long ago (rt-1 is spent; rt-2 is the live one), and that
    // token has expired too.
    written.insert(
        key,
        Token::new(
            Secret::new("at-other"),
            Some(Secret::new("rt-2")),
            Some(T0.plus(650)),
            None,
        ),
    );
    world.shared = Some(written);
    let now = T0.plus(2_000);
    let token = token_of(second_process(stale, &mut world, now));
    assert_ne!(token.access_token(), first.access_token());
    assert_eq!(token.refresh_token().unwrap().expose(), "rt-3");
    assert_eq!(refreshes(&world), ["rt-2"], "never the spent rt-1");
}

#[test]
fn a_refresh_whose_shared_cache_cannot_be_had_keeps_every_token() {
    let (mut world, mut flow, first) = with_refreshable_token(&[]);
    flow.share_cache(true);
    let due = T0.plus(540);
    flow.handle_timeout(due);
    let Some(Output::Reload { key }) = flow.poll_output() else {
        panic!("a reload before the refresh");
    };
    assert_eq!(
        flow.cache().get(&key).map(Token::access_token),
        Some(first.access_token())
    );
    assert!(flow.is_busy());
    // The driver's wait for the lock is bounded, and so is the flow's.
    assert_eq!(
        flow.poll_timeout(),
        Some(due.plus(Limits::default().request_timeout_secs))
    );
    flow.abandon("the token store /x/tokens.json.lock was not had within 35 s");
    match flow.poll_output() {
        Some(Output::Failed(error)) => {
            let text = error.to_string();
            assert!(text.contains("token refresh"), "{text}");
            assert!(text.contains("tokens.json.lock"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!flow.is_busy());
    // The refresh token was not spent: it stays, in the token and in the cache.
    let held = flow.token().unwrap();
    assert_eq!(held.refresh_token().unwrap().expose(), "rt-1");
    assert_eq!(
        flow.cache()
            .get(&key)
            .and_then(Token::refresh_token)
            .map(Secret::expose),
        Some("rt-1")
    );
    assert!(refreshes(&world).is_empty());
    // The deadline passing fails a reload as well.
    flow.handle_timeout(due.plus(1));
    assert!(matches!(flow.poll_output(), Some(Output::Reload { .. })));
    flow.handle_timeout(due.plus(1 + Limits::default().request_timeout_secs));
    assert!(matches!(
        flow.poll_output(),
        Some(Output::Failed(Error::Timeout { .. }))
    ));
    assert_eq!(
        flow.token().unwrap().refresh_token().unwrap().expose(),
        "rt-1"
    );
    assert!(matches!(
        run(&mut flow, &mut world, due, &mut Vec::new()),
        End::Stalled
    ));
    // After a 401 (which takes the token out of the cache to renew it) as well.
    let expired = T0.plus(700);
    let sent = flow.token().unwrap().access_token().clone();
    flow.handle_refusal(
        StatusCode::UNAUTHORIZED,
        &default_challenge(),
        Some(&sent),
        expired,
    );
    assert!(matches!(flow.poll_output(), Some(Output::Reload { .. })));
    flow.abandon("the token store's lock was not had");
    assert!(matches!(flow.poll_output(), Some(Output::Failed(_))));
    assert_eq!(
        flow.cache()
            .get(&key)
            .and_then(Token::refresh_token)
            .map(Secret::expose),
        Some("rt-1")
    );
    assert!(refreshes(&world).is_empty());
}

#[test]
fn a_request_about_to_go_out_with_a_token_near_its_expiry_waits_for_its_refresh() {
    let (mut world, mut flow, first) =
        with_refreshable_token(&[json!({"refresh_token": "rt-2", "expires_in": 600})]);
    let skew = Limits::default().expiry_skew_secs;
    assert!(skew > 0);
    // Far from expiry, and within the refresh margin but not the skew: sent as it is (the
    // margin's refresh runs in the background).
    for now in [T0.plus(100), T0.plus(600 - skew - 1)] {
        assert!(!flow.refresh_ahead(now), "at {now:?}");
        assert!(flow.poll_output().is_none());
        assert!(!flow.is_busy());
    }
    // Within the skew of its expiry: refreshed before the request goes out.
    let near = T0.plus(600 - skew);
    assert!(flow.refresh_ahead(near));
    let renewed = token_of(run(&mut flow, &mut world, near, &mut Vec::new()));
    assert_ne!(renewed.access_token(), first.access_token());
    assert_eq!(flow.bearer(near), Some(renewed.access_token()));
    assert_eq!(refreshes(&world), ["rt-1"]);
    // Idle past its expiry: the same, without a 401 first.
    let idle = near.plus(10_000);
    assert_eq!(flow.bearer(idle), None);
    assert!(flow.refresh_ahead(idle));
    let again = token_of(run(&mut flow, &mut world, idle, &mut Vec::new()));
    assert_eq!(flow.bearer(idle), Some(again.access_token()));
    assert_eq!(refreshes(&world), ["rt-1", "rt-2"]);
    // A token that lives less than twice the skew: held back only in the second half of
    // its life, not on every request.
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world.token(AS, json!({"refresh_token": "rt-short", "expires_in": 8}));
    let (end, mut flow, _) = refused(code_config(), &mut world, default_challenge());
    token_of(end);
    assert!(!flow.refresh_ahead(T0.plus(3)));
    assert!(flow.refresh_ahead(T0.plus(4)));
    // Nothing to refresh with: nothing to wait for (the 401 path decides).
    let mut world = World::standard();
    let (end, mut flow, _) = refused(code_config(), &mut world, default_challenge());
    assert!(token_of(end).refresh_token().is_none());
    assert!(!flow.refresh_ahead(T0.plus(10_000)));
    assert!(flow.poll_output().is_none());
    assert!(!flow.is_busy());
}

#[test]
fn unauthorized_with_a_token() {
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world.token(AS, json!({"refresh_token": "rt-1"}));
    world.token(AS, json!({}));
    world.token(AS, json!({}));
    let (end, mut flow, mut printed) = refused(code_config(), &mut world, default_challenge());
    let first = token_of(end);
    // A 401 for a token never accepted, just issued: the server does not take our tokens.
    let mut fresh = Flow::new(code_config());
    let mut other_world = World::standard();
    fresh.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let t = token_of(run(&mut fresh, &mut other_world, T0, &mut printed));
    fresh.handle_refusal(
        StatusCode::UNAUTHORIZED,
        &default_challenge(),
        Some(t.access_token()),
        T0,
    );
    assert_eq!(
        failure_of(run(&mut fresh, &mut other_world, T0, &mut printed)),
        Error::TokenRejected
    );

    // Never accepted but expired: renewed, not taken for a rejection.
    let mut world2 = World::standard();
    world2.routes.remove(&format!("POST {AS}/token"));
    world2.token(AS, json!({"refresh_token": "rt-9", "expires_in": 60}));
    world2.token(AS, json!({}));
    let (end, mut expiring, _) = refused(code_config(), &mut world2, default_challenge());
    let old = token_of(end);
    let later = T0.plus(61);
    expiring.handle_refusal(
        StatusCode::UNAUTHORIZED,
        &default_challenge(),
        Some(old.access_token()),
        later,
    );
    token_of(run(&mut expiring, &mut world2, later, &mut printed));
    assert_eq!(
        world2
            .last("POST", "/token")
            .param("refresh_token")
            .as_deref(),
        Some("rt-9")
    );
    // `authorize` with an expired token and a refresh token refreshes too.
    let mut world3 = World::standard();
    world3.routes.remove(&format!("POST {AS}/token"));
    world3.token(AS, json!({"refresh_token": "rt-8", "expires_in": 60}));
    world3.token(AS, json!({}));
    let (end, mut idle, _) = refused(code_config(), &mut world3, default_challenge());
    token_of(end);
    idle.authorize(later);
    token_of(run(&mut idle, &mut world3, later, &mut printed));
    assert_eq!(
        world3.last("POST", "/token").param("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(world3.authorizations.len(), 1);

    // Accepted once, then refused: refreshed, and announced.
    flow.accepted();
    flow.handle_refusal(
        StatusCode::UNAUTHORIZED,
        &default_challenge(),
        Some(first.access_token()),
        T0,
    );
    let second = token_of(run(&mut flow, &mut world, T0, &mut printed));
    assert_eq!(
        world.last("POST", "/token").param("grant_type").as_deref(),
        Some("refresh_token")
    );
    // A request still carrying the old token is answered with the new one at once.
    flow.handle_refusal(
        StatusCode::UNAUTHORIZED,
        &default_challenge(),
        Some(first.access_token()),
        T0,
    );
    assert_eq!(
        token_of(run(&mut flow, &mut world, T0, &mut printed)).access_token(),
        second.access_token()
    );
    // The refreshed token refused too: discovery and authorization anew.
    let before = world.authorizations.len();
    flow.handle_refusal(
        StatusCode::UNAUTHORIZED,
        &default_challenge(),
        Some(second.access_token()),
        T0,
    );
    let third = token_of(run(&mut flow, &mut world, T0, &mut printed));
    assert_eq!(world.authorizations.len(), before + 1);
    assert_ne!(third.access_token(), second.access_token());
    // Other statuses are not for the flow.
    flow.handle_refusal(StatusCode::BAD_REQUEST, &HeaderMap::new(), None, T0);
    assert_eq!(
        failure_of(run(&mut flow, &mut world, T0, &mut printed)),
        Error::NotARefusal { status: 400 }
    );
    assert_no_leak(&world, &flow, &printed);
}

#[test]
fn authorization_server_migration_registers_again() {
    let as2 = "https://auth2.example.com";
    let prm = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    let mut world = World::standard();
    world.routes.remove(&format!("GET {prm}"));
    world.prm(prm, &[AS], None);
    world.prm(prm, &[as2], None);
    world.registration(as2, "as2-client", None, None);
    world.as_metadata(
        &format!("{as2}/.well-known/oauth-authorization-server"),
        as2,
        json!({}),
    );
    world.token(as2, json!({}));
    let (end, mut flow, mut printed) = refused(code_config(), &mut world, default_challenge());
    let first = token_of(end);
    flow.accepted();
    world.issuer = as2.into();
    flow.handle_refusal(
        StatusCode::UNAUTHORIZED,
        &default_challenge(),
        Some(first.access_token()),
        T0,
    );
    let second = token_of(run(&mut flow, &mut world, T0, &mut printed));
    assert_ne!(second.access_token(), first.access_token());
    assert!(world.requests().contains(&format!("POST {as2}/register")));
    assert_eq!(
        query_param(&world.authorizations[1], "client_id").as_deref(),
        Some("as2-client")
    );
    assert!(world.seen.iter().filter(|s| s.url.starts_with(as2)).all(
        |s| !s.url.contains("client-1") && s.param("client_id").is_none_or(|c| c != "client-1")
    ));
    // A pre-registered client bound to the first server is not taken to the second.
    let mut config = code_config();
    let mut client = PreRegistered::new("bound-client");
    client.issuer = Some(AS.into());
    config.pre_registered = Some(client);
    let mut world = World::standard();
    world.routes.remove(&format!("GET {prm}"));
    world.prm(prm, &[as2], None);
    let error = failure_of(refused(config, &mut world, default_challenge()).0);
    assert_eq!(
        error,
        Error::ClientBoundElsewhere {
            bound: AS.into(),
            offered: vec![as2.into()]
        }
    );
}

#[test]
fn the_cache_serves_a_second_flow() {
    let mut world = World::standard();
    let (end, flow, _) = refused(code_config(), &mut world, default_challenge());
    let first = token_of(end);
    assert_eq!(flow.cache().len(), 1);
    let cache = flow.into_cache();
    let mut second = Flow::with_cache(code_config(), cache);
    second.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let mut printed = Vec::new();
    let again = token_of(run(&mut second, &mut world, T0, &mut printed));
    assert_eq!(again.access_token(), first.access_token());
    assert_eq!(world.authorizations.len(), 1, "no second authorization");
    // `authorize` with a valid token answers at once.
    second.authorize(T0);
    assert!(matches!(second.poll_output(), Some(Output::Token(_))));
}

// ---- client credentials (the extension) ----

#[test]
fn client_credentials_with_a_secret_and_with_a_key() {
    let mut world = World::standard();
    world.replace_as_metadata(json!({"grant_types_supported": ["client_credentials"], "token_endpoint_auth_methods_supported": ["client_secret_basic"], "authorization_endpoint": null}));
    world.secrets.push("conformance-test-secret".into());
    let mut client = PreRegistered::new("conformance-test-client");
    client.client_secret = Some(Secret::new("conformance-test-secret"));
    let config = Config::client_credentials(SERVER, client).unwrap();
    let (end, flow, printed) = refused(config, &mut world, default_challenge());
    token_of(end);
    assert!(world.authorizations.is_empty());
    let request = world.last("POST", "/token");
    assert_eq!(
        request.param("grant_type").as_deref(),
        Some("client_credentials")
    );
    assert_eq!(request.param("resource").as_deref(), Some(SERVER));
    let value = request.headers[http::header::AUTHORIZATION]
        .to_str()
        .unwrap();
    let decoded = base64::decode(
        value.strip_prefix("Basic ").unwrap(),
        Flavor::Standard,
        Padding::Required,
    )
    .unwrap();
    assert_eq!(decoded, b"conformance-test-client:conformance-test-secret");
    assert_no_leak(&world, &flow, &printed);

    let mut world = World::standard();
    world.replace_as_metadata(json!({"grant_types_supported": ["client_credentials"], "token_endpoint_auth_methods_supported": ["private_key_jwt"], "token_endpoint_auth_signing_alg_values_supported": ["ES256"]}));
    let key = std::sync::Arc::new(SigningKey::from_pkcs8_pem(&test_key_pem(), None).unwrap());
    let mut client = PreRegistered::new("conformance-test-client");
    client.signing_key = Some(key.clone());
    let config = Config::client_credentials(SERVER, client).unwrap();
    let (end, flow, printed) = refused(config, &mut world, default_challenge());
    token_of(end);
    let request = world.last("POST", "/token");
    assert_eq!(
        request.param("client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    assert_eq!(request.param("client_id"), None);
    let jwt = request.param("client_assertion").unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    let claims: Value = serde_json::from_slice(
        &base64::decode(parts[1], Flavor::UrlSafe, Padding::Optional).unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], "conformance-test-client");
    assert_eq!(claims["sub"], "conformance-test-client");
    assert_eq!(claims["aud"], AS);
    assert_eq!(claims["iat"], T0.0);
    let signature = base64::decode(parts[2], Flavor::UrlSafe, Padding::Optional).unwrap();
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::ECDSA_P256_SHA256_FIXED,
        key.public_key(),
    )
    .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
    .unwrap();
    // The assertion is a secret of the flow: redacted from everything printed.
    assert!(flow.secrets().iter().any(|s| s.expose() == jwt));
    assert_no_leak(&world, &flow, &printed);

    // Without a pre-registered client there is nothing to use.
    let mut config = Config::client_credentials(SERVER, PreRegistered::new("x")).unwrap();
    config.pre_registered = None;
    let mut world = World::standard();
    let error = failure_of(refused(config, &mut world, default_challenge()).0);
    assert_eq!(error, Error::NoClientIdentity { issuer: AS.into() });
}

// ---- failures of the servers and the driver ----

#[test]
fn token_endpoint_errors_are_typed_and_redacted() {
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world.route(
        "POST",
        &format!("{AS}/token"),
        400,
        json!({"error": "invalid_grant", "error_description": "code the-code-1 was used"}),
    );
    let (end, flow, printed) = refused(code_config(), &mut world, default_challenge());
    let error = failure_of(end);
    match &error {
        Error::Token {
            purpose: Purpose::CodeExchange,
            error: TokenResponseError::Refused(e),
        } => {
            assert_eq!(e.code, "invalid_grant");
            assert_eq!(e.description.as_deref(), Some("code <redacted> was used"));
        }
        other => panic!("{other:?}"),
    }
    assert_no_leak(&world, &flow, &printed);

    for (status, body, expected) in [
        (
            200,
            json!({"access_token": "a b", "token_type": "Bearer"}),
            "access_token",
        ),
        (
            200,
            json!({"access_token": "x", "token_type": "DPoP"}),
            "DPoP",
        ),
        (503, json!({}), "503"),
    ] {
        let mut world = World::standard();
        world.routes.remove(&format!("POST {AS}/token"));
        world.route("POST", &format!("{AS}/token"), status, body);
        let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
        assert!(
            matches!(error, Error::Token { .. }) && error.to_string().contains(expected),
            "{error}"
        );
    }
}

#[test]
fn timeouts_and_transport_failures() {
    let mut flow = Flow::new(code_config());
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let Some(Output::Send { id, .. }) = flow.poll_output() else {
        panic!()
    };
    assert_eq!(flow.poll_timeout(), Some(T0.plus(30)));
    flow.handle_timeout(T0.plus(29));
    assert!(flow.poll_output().is_none());
    flow.handle_timeout(T0.plus(30));
    assert!(matches!(
        flow.poll_output(),
        Some(Output::Failed(Error::Timeout {
            purpose: Purpose::ResourceMetadata
        }))
    ));
    // A late answer is ignored.
    flow.handle_response(id, http::Response::new(Vec::new()), T0.plus(31));
    assert!(flow.poll_output().is_none() && !flow.is_busy());

    flow.authorize(T0);
    let Some(Output::Send { id, .. }) = flow.poll_output() else {
        panic!()
    };
    flow.handle_error(RequestId(id.0 + 100), T0);
    assert!(
        flow.poll_output().is_none(),
        "another request's failure is not this one's"
    );
    flow.handle_error(id, T0);
    assert!(matches!(
        flow.poll_output(),
        Some(Output::Failed(Error::Transport {
            purpose: Purpose::ResourceMetadata,
            ..
        }))
    ));

    // The person never comes back.
    let mut world = World::standard();
    let mut flow = Flow::new(code_config());
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    until_authorize(&mut flow, &mut world);
    assert_eq!(flow.poll_timeout(), Some(T0.plus(300)));
    flow.handle_timeout(T0.plus(300));
    assert!(matches!(
        flow.poll_output(),
        Some(Output::Failed(Error::Timeout {
            purpose: Purpose::Authorization
        }))
    ));
}

#[test]
fn hostile_documents_fail_cleanly() {
    let prm = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    let bodies: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"not json".to_vec(),
        b"[1,2,3]".to_vec(),
        vec![b'{'; 70_000],
        br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":[]}"#.to_vec(),
        br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["javascript:alert(1)"]}"#.to_vec(),
        br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["http://auth.example.com"]}"#.to_vec(),
    ];
    for body in bodies {
        let mut world = World::standard();
        world
            .routes
            .insert(format!("GET {prm}"), VecDeque::from([(200, body.clone())]));
        let error = failure_of(refused(code_config(), &mut world, default_challenge()).0);
        assert!(
            matches!(
                error,
                Error::Document {
                    purpose: Purpose::ResourceMetadata,
                    ..
                }
            ),
            "{error:?}"
        );
    }
    // Every response cut short, at every length, into every request of a full flow.
    let mut world = World::standard();
    refused(code_config(), &mut world, default_challenge());
    let answers: Vec<(String, Vec<u8>)> = world
        .routes
        .iter()
        .map(|(k, v)| (k.clone(), v.front().unwrap().1.clone()))
        .collect();
    for (route, body) in answers {
        for cut in (0..body.len()).step_by(7) {
            let mut world = World::standard();
            world
                .routes
                .insert(route.clone(), VecDeque::from([(200, body[..cut].to_vec())]));
            let end = refused(code_config(), &mut world, default_challenge()).0;
            assert!(
                matches!(end, End::Failed(_)),
                "{route} cut at {cut}: {end:?}"
            );
        }
    }
}

mod identity;
