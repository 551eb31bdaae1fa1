//! Agent identity in the flow machine, against the in-memory servers of the parent module:
//! DPoP proofs on token requests (checked with ring's verifier against the proof's own JWK),
//! the authorization server's nonce retry (once), `token_type` against what was asked for,
//! proofs for MCP requests; the JWT-bearer grant with a workload token; enterprise-managed
//! authorization (token exchange at the IdP, then the JWT-bearer grant with the ID-JAG). Every
//! secret (assertions, ID-JAGs, proofs, tokens) is then searched for in what the flow printed.

use super::*;
use crate::auth::dpop::DPOP;

const IDP: &str = "https://idp.example.com";
const WORKLOAD_JWT: &str = "eyJ.workload-secret.sig";
const ID_TOKEN: &str = "eyJ.id-token-secret.sig";
const ID_JAG: &str = "eyJ.id-jag-secret.sig";

/// The proof's header and claims, after checking its signature (ES256, ES384 or EdDSA, as
/// its header says) with the public key its own `jwk` names.
fn verified_proof(proof: &str) -> (Value, Value) {
    use ring::signature::{self, VerificationAlgorithm};
    let parts: Vec<&str> = proof.split('.').collect();
    assert_eq!(parts.len(), 3, "{proof}");
    let json = |p: &str| -> Value {
        serde_json::from_slice(&base64::decode(p, Flavor::UrlSafe, Padding::Optional).unwrap())
            .unwrap()
    };
    let (header, claims) = (json(parts[0]), json(parts[1]));
    let member = |name: &str| {
        base64::decode(
            header["jwk"][name].as_str().unwrap(),
            Flavor::UrlSafe,
            Padding::Optional,
        )
        .unwrap()
    };
    let ec = || [vec![0x04], member("x"), member("y")].concat();
    let (verifier, public): (&dyn VerificationAlgorithm, Vec<u8>) =
        match header["alg"].as_str().unwrap() {
            "ES256" => (&signature::ECDSA_P256_SHA256_FIXED, ec()),
            "ES384" => (&signature::ECDSA_P384_SHA384_FIXED, ec()),
            "EdDSA" => (&signature::ED25519, member("x")),
            other => panic!("a proof signed with {other}"),
        };
    let signature = base64::decode(parts[2], Flavor::UrlSafe, Padding::Optional).unwrap();
    signature::UnparsedPublicKey::new(verifier, &public)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .expect("the proof verifies with its jwk");
    (header, claims)
}

impl World {
    /// `url`'s answers replaced by this one.
    fn replace_route(&mut self, method: &str, url: &str, status: u16, body: Value) {
        self.routes.remove(&format!("{method} {url}"));
        self.route(method, url, status, body);
    }

    /// Notes a request answered outside the routes.
    fn record(&mut self, request: &http::Request<Vec<u8>>) {
        self.seen.push(Seen {
            method: request.method().clone(),
            url: request.uri().to_string(),
            headers: request.headers().clone(),
            body: request.body().clone(),
        });
    }
}

fn proof_of(seen: &Seen) -> Option<String> {
    seen.headers
        .get(DPOP)
        .map(|v| v.to_str().unwrap().to_owned())
}

fn dpop_config() -> Config {
    let mut config = code_config();
    config.dpop = Some(crate::auth::Dpop::new(std::sync::Arc::new(
        crate::auth::DpopKey::generate().unwrap(),
    )));
    config
}

/// The world's token answers are DPoP-bound.
fn dpop_world() -> World {
    let mut world = World::standard();
    world.tokens_issued += 1;
    world.secrets.push("dpop-at-1".into());
    world.replace_route(
        "POST",
        &format!("{AS}/token"),
        200,
        json!({"access_token": "dpop-at-1", "token_type": "DPoP", "expires_in": 3600}),
    );
    world
}

/// Like the parent's `run`, with a token endpoint that asks for `nonce` in the proof
/// (RFC 9449 section 8) and an assertion source answering `assertion`.
fn run_with(
    flow: &mut Flow,
    world: &mut World,
    nonce: Option<&str>,
    assertion: Result<&str, &str>,
    printed: &mut Vec<String>,
) -> End {
    for _ in 0..100 {
        let Some(output) = flow.poll_output() else {
            return End::Stalled;
        };
        printed.push(format!("{output:?}"));
        match output {
            Output::Send { id, request, .. } => {
                printed.push(request.uri().to_string());
                let is_token = request.method() == Method::POST
                    && request.uri().to_string() == format!("{AS}/token");
                let proof_nonce = request
                    .headers()
                    .get(DPOP)
                    .map(|p| verified_proof(p.to_str().unwrap()).1["nonce"].clone());
                let response = match nonce {
                    Some(nonce) if is_token && proof_nonce != Some(json!(nonce)) => {
                        world.record(&request);
                        http::Response::builder()
                            .status(400)
                            .header("dpop-nonce", nonce)
                            .body(br#"{"error":"use_dpop_nonce"}"#.to_vec())
                            .unwrap()
                    }
                    _ => world.answer(&request),
                };
                flow.handle_response(id, response, T0);
            }
            Output::Authorize { url } => {
                let redirect = world.redirect_for(&url);
                flow.handle_redirect(&redirect, T0).unwrap();
            }
            Output::Assertion { source } => {
                printed.push(source.to_string());
                flow.handle_assertion(assertion.map(Secret::new).map_err(str::to_owned), T0);
            }
            Output::Token(token) => return End::Token(token),
            Output::Failed(error) => {
                printed.push(format!("{error}"));
                return End::Failed(error);
            }
            Output::Reload { .. } => flow.handle_reload(flow.cache().clone(), T0),
        }
    }
    panic!("the flow did not settle");
}

fn refused_with(
    config: Config,
    world: &mut World,
    headers: HeaderMap,
    nonce: Option<&str>,
    assertion: Result<&str, &str>,
) -> (End, Flow, Vec<String>) {
    let mut flow = Flow::new(config);
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &headers, None, T0);
    let mut printed = Vec::new();
    let end = run_with(&mut flow, world, nonce, assertion, &mut printed);
    (end, flow, printed)
}

/// Every proof the servers saw, as a secret not to leak.
fn proofs_seen(world: &World) -> Vec<String> {
    world.seen.iter().filter_map(proof_of).collect()
}

#[test]
fn dpop_the_token_request_carries_a_proof_and_the_token_is_bound() {
    let mut world = dpop_world();
    let dpop_challenge = challenge(
        "DPoP resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
    );
    let (end, flow, mut printed) =
        refused_with(dpop_config(), &mut world, dpop_challenge, None, Ok(""));
    let token = token_of(end);
    assert!(token.is_dpop());
    // The DPoP challenge's resource_metadata led discovery, as a Bearer one does.
    assert!(world.requests()[0].ends_with("/.well-known/oauth-protected-resource/mcp"));
    let request = world.last("POST", "/token");
    let (header, claims) = verified_proof(&proof_of(request).expect("a proof"));
    assert_eq!(header["typ"], "dpop+jwt");
    assert_eq!(header["alg"], "ES256");
    assert!(header["jwk"].get("d").is_none());
    assert_eq!(claims["htm"], "POST");
    assert_eq!(claims["htu"], format!("{AS}/token"));
    assert_eq!(claims["iat"], T0.0);
    assert!(claims.get("ath").is_none(), "no token yet");
    assert!(request.headers[DPOP].is_sensitive());
    // Metadata and registration requests carry none.
    assert!(
        world
            .seen
            .iter()
            .filter(|s| !s.url.ends_with("/token"))
            .all(|s| proof_of(s).is_none())
    );

    // A proof for an MCP request with that token: ath binds it; none for another token.
    let uri = "https://mcp.example.com/mcp?x=1";
    let proof = flow
        .resource_proof("POST", uri, token.access_token(), T0)
        .unwrap()
        .unwrap();
    let (_, claims) = verified_proof(proof.expose());
    assert_eq!(claims["htu"], SERVER);
    assert_eq!(claims["ath"], crate::auth::dpop::ath(token.access_token()));
    let second = flow
        .resource_proof("POST", uri, token.access_token(), T0)
        .unwrap()
        .unwrap();
    assert_ne!(verified_proof(second.expose()).1["jti"], claims["jti"]);
    assert!(
        flow.resource_proof("POST", uri, &Secret::new("other"), T0)
            .is_none()
    );
    printed.extend(
        [proof.expose().to_owned(), second.expose().to_owned()]
            .map(|p| format!("{:?}", Secret::new(p))),
    );
    world.secrets.extend(proofs_seen(&world));
    assert_no_leak(&world, &flow, &printed);

    // The MCP server's nonce goes into the proofs that follow.
    let mut flow = flow;
    let mut asks = challenge(r#"DPoP error="use_dpop_nonce""#);
    asks.insert("dpop-nonce", HeaderValue::from_static("rs-nonce-7"));
    assert!(!flow.handle_resource_nonce(StatusCode::FORBIDDEN, &asks));
    assert!(!flow.handle_resource_nonce(StatusCode::UNAUTHORIZED, &default_challenge()));
    assert!(flow.handle_resource_nonce(StatusCode::UNAUTHORIZED, &asks));
    let proof = flow
        .resource_proof("GET", SERVER, token.access_token(), T0)
        .unwrap()
        .unwrap();
    let (_, claims) = verified_proof(proof.expose());
    assert_eq!(claims["nonce"], "rs-nonce-7");
    assert_eq!(claims["htm"], "GET");
}

#[test]
fn dpop_the_authorization_servers_nonce_is_retried_once() {
    let mut world = dpop_world();
    let (end, flow, printed) = refused_with(
        dpop_config(),
        &mut world,
        default_challenge(),
        Some("as-nonce-1"),
        Ok(""),
    );
    assert!(token_of(end).is_dpop());
    let token_requests: Vec<&Seen> = world
        .seen
        .iter()
        .filter(|s| s.url.ends_with("/token"))
        .collect();
    assert_eq!(token_requests.len(), 2, "{:?}", world.requests());
    let first = verified_proof(&proof_of(token_requests[0]).unwrap()).1;
    let retry = verified_proof(&proof_of(token_requests[1]).unwrap()).1;
    assert!(first.get("nonce").is_none());
    assert_eq!(retry["nonce"], "as-nonce-1");
    assert_ne!(
        first["jti"], retry["jti"],
        "a new proof, not the same one again"
    );
    // The same grant both times (the code was not spent by the nonce answer).
    assert_eq!(
        token_requests[0].param("code"),
        token_requests[1].param("code")
    );
    world.secrets.extend(proofs_seen(&world));
    assert_no_leak(&world, &flow, &printed);

    // A server that keeps asking gets one retry, then the flow fails.
    let mut world = dpop_world();
    let mut flow = Flow::new(dpop_config());
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    let mut printed = Vec::new();
    // The nonce it asks for never matches what it gave: always refused.
    let end = run_with_moving_nonce(&mut flow, &mut world, &mut printed);
    let error = failure_of(end);
    assert!(
        matches!(&error, Error::Token { purpose: Purpose::CodeExchange, error: TokenResponseError::Refused(e) } if e.code == "use_dpop_nonce"),
        "{error:?}"
    );
    let tries = world
        .seen
        .iter()
        .filter(|s| s.url.ends_with("/token"))
        .count();
    assert_eq!(tries, 2, "one request and one retry");
}

/// A token endpoint whose nonce changes each time: every proof is refused.
fn run_with_moving_nonce(flow: &mut Flow, world: &mut World, printed: &mut Vec<String>) -> End {
    let mut n = 0;
    for _ in 0..100 {
        let Some(output) = flow.poll_output() else {
            return End::Stalled;
        };
        printed.push(format!("{output:?}"));
        match output {
            Output::Send { id, request, .. } if request.uri().to_string().ends_with("/token") => {
                n += 1;
                world.record(&request);
                let response = http::Response::builder()
                    .status(400)
                    .header("dpop-nonce", format!("nonce-{n}"))
                    .body(br#"{"error":"use_dpop_nonce"}"#.to_vec())
                    .unwrap();
                flow.handle_response(id, response, T0);
            }
            Output::Send { id, request, .. } => {
                let response = world.answer(&request);
                flow.handle_response(id, response, T0);
            }
            Output::Authorize { url } => {
                let redirect = world.redirect_for(&url);
                flow.handle_redirect(&redirect, T0).unwrap();
            }
            Output::Token(token) => return End::Token(token),
            Output::Failed(error) => return End::Failed(error),
            other => panic!("{other:?}"),
        }
    }
    panic!("the flow did not settle");
}

#[test]
fn dpop_a_bearer_answer_is_refused_only_where_dpop_is_required() {
    // The 401 offered only DPoP: a Bearer token is refused, not used.
    let mut world = World::standard();
    let dpop_only = challenge(
        "DPoP resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
    );
    let (end, flow, printed) = refused_with(dpop_config(), &mut world, dpop_only, None, Ok(""));
    assert_eq!(
        failure_of(end),
        Error::Token {
            purpose: Purpose::CodeExchange,
            error: TokenResponseError::NotDpopBound
        }
    );
    assert!(flow.token().is_none());
    assert_no_leak(&world, &flow, &printed);

    // The configuration says required: refused even with a Bearer challenge.
    let mut config = dpop_config();
    if let Some(dpop) = &mut config.dpop {
        dpop.required = true;
    }
    let mut world = World::standard();
    let (end, ..) = refused_with(config, &mut world, default_challenge(), None, Ok(""));
    assert!(matches!(
        failure_of(end),
        Error::Token {
            error: TokenResponseError::NotDpopBound,
            ..
        }
    ));

    // The resource's metadata says required: refused.
    let mut world = World::standard();
    let prm = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    world.replace_route(
        "GET",
        prm,
        200,
        json!({"resource": SERVER, "authorization_servers": [AS], "dpop_bound_access_tokens_required": true}),
    );
    let (end, ..) = refused_with(dpop_config(), &mut world, default_challenge(), None, Ok(""));
    assert!(matches!(
        failure_of(end),
        Error::Token {
            error: TokenResponseError::NotDpopBound,
            ..
        }
    ));

    // Nothing requires it: the Bearer token is taken as a bearer token (no proof for it).
    let mut world = World::standard();
    let (end, mut flow, _) =
        refused_with(dpop_config(), &mut world, default_challenge(), None, Ok(""));
    let token = token_of(end);
    assert!(!token.is_dpop());
    let mut asks = challenge(r#"DPoP error="use_dpop_nonce""#);
    asks.insert("dpop-nonce", HeaderValue::from_static("n-1"));
    assert!(
        !flow.handle_resource_nonce(StatusCode::UNAUTHORIZED, &asks),
        "a bearer token's refusal is an ordinary one"
    );
    assert!(
        proof_of(world.last("POST", "/token")).is_some(),
        "it was asked for"
    );
    assert!(
        flow.resource_proof("POST", SERVER, token.access_token(), T0)
            .is_none()
    );

    // Without DPoP configured, a DPoP answer is not taken.
    let mut world = dpop_world();
    let (end, ..) = refused_with(code_config(), &mut world, default_challenge(), None, Ok(""));
    assert!(matches!(
        failure_of(end),
        Error::Token {
            error: TokenResponseError::UnsupportedTokenType(t),
            ..
        } if t == "DPoP"
    ));
}

/// DPoP with no key given: the flow makes one for the servers' algorithms.
fn dpop_made_config() -> Config {
    let mut config = code_config();
    config.dpop = Some(crate::auth::Dpop::default());
    config
}

#[test]
fn dpop_a_server_that_takes_none_of_our_algorithms_fails_the_flow_before_the_login() {
    for (config, ours) in [
        (dpop_config(), vec!["ES256"]),
        (dpop_made_config(), vec!["ES256", "ES384", "EdDSA"]),
    ] {
        let mut world = World::standard();
        world.replace_as_metadata(json!({"dpop_signing_alg_values_supported": ["RS256", "PS256"]}));
        let (end, ..) = refused_with(config, &mut world, default_challenge(), None, Ok(""));
        let error = failure_of(end);
        assert_eq!(
            error,
            Error::DpopAlgorithm {
                resource: false,
                offered: vec!["RS256".into(), "PS256".into()],
                ours: ours.clone(),
            }
        );
        assert!(error.to_string().contains("RS256, PS256 only"), "{error}");
        // Neither a login nor a token request: it failed on the metadata.
        assert!(!world.requests().iter().any(|r| r.contains("/token")));
    }

    // The given ES256 key where only ES384 is taken: no fallback to a bearer token.
    let mut world = World::standard();
    world.replace_as_metadata(json!({"dpop_signing_alg_values_supported": ["ES384"]}));
    let (end, ..) = refused_with(dpop_config(), &mut world, default_challenge(), None, Ok(""));
    assert!(matches!(
        failure_of(end),
        Error::DpopAlgorithm {
            resource: false,
            ..
        }
    ));

    let mut world = dpop_world();
    world.replace_as_metadata(json!({"dpop_signing_alg_values_supported": ["ES256", "RS256"]}));
    let (end, ..) = refused_with(dpop_config(), &mut world, default_challenge(), None, Ok(""));
    assert!(token_of(end).is_dpop());
}

#[test]
fn dpop_a_made_key_is_of_the_first_algorithm_the_servers_take() {
    for (listed, challenge_algs, expected) in [
        (None, None, "ES256"),
        (Some(json!(["RS256", "ES384", "ES256"])), None, "ES256"),
        (Some(json!(["PS256", "ES384"])), None, "ES384"),
        (Some(json!(["EdDSA"])), None, "EdDSA"),
        (
            Some(json!(["ES256", "EdDSA"])),
            Some("EdDSA PS256"),
            "EdDSA",
        ),
        (None, Some("ES384"), "ES384"),
    ] {
        let mut world = dpop_world();
        if let Some(listed) = listed {
            world.replace_as_metadata(json!({"dpop_signing_alg_values_supported": listed}));
        }
        let headers = match challenge_algs {
            Some(algs) => challenge(&format!(
                "DPoP algs=\"{algs}\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
            )),
            None => default_challenge(),
        };
        let (end, flow, _) = refused_with(dpop_made_config(), &mut world, headers, None, Ok(""));
        let token = token_of(end);
        assert!(token.is_dpop(), "{expected}");
        let proof = proof_of(world.last("POST", "/token")).expect("a proof");
        let (header, _) = verified_proof(&proof);
        assert_eq!(header["alg"], expected);
        // The MCP request's proof is of the same key.
        let resource = flow
            .resource_proof("POST", SERVER, token.access_token(), T0)
            .unwrap()
            .unwrap();
        let (resource_header, _) = verified_proof(resource.expose());
        assert_eq!(resource_header["jwk"], header["jwk"], "{expected}");
    }

    // The MCP server takes only what the authorization server does not.
    let mut world = World::standard();
    world.replace_as_metadata(json!({"dpop_signing_alg_values_supported": ["ES256"]}));
    let headers = challenge(
        "DPoP algs=\"PS256\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
    );
    let (end, ..) = refused_with(dpop_made_config(), &mut world, headers, None, Ok(""));
    assert_eq!(
        failure_of(end),
        Error::DpopAlgorithm {
            resource: true,
            offered: vec!["PS256".into()],
            ours: vec!["ES256", "ES384", "EdDSA"],
        }
    );
}

#[test]
fn dpop_the_refresh_is_bound_to_the_same_key() {
    let mut world = World::standard();
    world.routes.remove(&format!("POST {AS}/token"));
    world
        .secrets
        .extend(["dpop-at-1".into(), "dpop-rt-1".into(), "dpop-at-2".into()]);
    world.route(
        "POST",
        &format!("{AS}/token"),
        200,
        json!({"access_token": "dpop-at-1", "token_type": "DPoP", "expires_in": 60, "refresh_token": "dpop-rt-1"}),
    );
    world.route(
        "POST",
        &format!("{AS}/token"),
        200,
        json!({"access_token": "dpop-at-2", "token_type": "DPoP", "expires_in": 3600}),
    );
    let (end, mut flow, mut printed) =
        refused_with(dpop_config(), &mut world, default_challenge(), None, Ok(""));
    let first = token_of(end);
    // Expired: the next request waits for the refresh.
    assert!(flow.refresh_ahead(T0.plus(61)));
    let end = run_with(&mut flow, &mut world, None, Ok(""), &mut printed);
    let second = token_of(end);
    assert!(second.is_dpop());
    assert_ne!(second.access_token(), first.access_token());
    let refresh = world.last("POST", "/token");
    assert_eq!(
        refresh.param("grant_type").as_deref(),
        Some("refresh_token")
    );
    let proofs: Vec<Value> = world
        .seen
        .iter()
        .filter_map(proof_of)
        .map(|p| verified_proof(&p).0["jwk"].clone())
        .collect();
    assert_eq!(proofs.len(), 2);
    assert_eq!(proofs[0], proofs[1], "the refresh proves the same key");
    world.secrets.extend(proofs_seen(&world));
    assert_no_leak(&world, &flow, &printed);
}

// ---- workload identity federation: the JWT-bearer grant ----

fn jwt_bearer_world() -> World {
    let mut world = World::standard();
    world.replace_as_metadata(json!({"grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer"], "registration_endpoint": null, "authorization_endpoint": null}));
    world.secrets.push(WORKLOAD_JWT.into());
    world
}

#[test]
fn jwt_bearer_sends_the_workload_token_as_the_assertion() {
    let mut world = jwt_bearer_world();
    let source = AssertionSource::File("/var/run/secrets/tokens/mcp".into());
    let config = Config::jwt_bearer(SERVER, PreRegistered::new("wif-client"), source).unwrap();
    let (end, flow, printed) = refused_with(
        config,
        &mut world,
        default_challenge(),
        None,
        Ok(WORKLOAD_JWT),
    );
    token_of(end);
    assert!(world.authorizations.is_empty(), "no person");
    let request = world.last("POST", "/token");
    assert_eq!(
        request.param("grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert_eq!(request.param("assertion").as_deref(), Some(WORKLOAD_JWT));
    assert_eq!(request.param("client_id").as_deref(), Some("wif-client"));
    assert_eq!(request.param("resource").as_deref(), Some(SERVER));
    assert_eq!(
        world
            .seen
            .iter()
            .filter(|s| s.url.ends_with("/token"))
            .count(),
        1
    );
    assert!(
        printed
            .iter()
            .any(|p| p.contains("/var/run/secrets/tokens/mcp"))
    );
    assert_no_leak(&world, &flow, &printed);
}

#[test]
fn jwt_bearer_a_refusal_is_not_retried_and_a_missing_token_fails_before_any_request() {
    let mut world = jwt_bearer_world();
    world.replace_route(
        "POST",
        &format!("{AS}/token"),
        400,
        json!({"error": "invalid_grant", "error_description": format!("assertion {WORKLOAD_JWT} expired")}),
    );
    let source = AssertionSource::Env("WORKLOAD_TOKEN".into());
    let config =
        Config::jwt_bearer(SERVER, PreRegistered::new("wif-client"), source.clone()).unwrap();
    let (end, flow, printed) = refused_with(
        config,
        &mut world,
        default_challenge(),
        None,
        Ok(WORKLOAD_JWT),
    );
    let error = failure_of(end);
    assert!(matches!(
        &error,
        Error::Token { purpose: Purpose::JwtBearer, error: TokenResponseError::Refused(e) } if e.code == "invalid_grant"
    ));
    assert_eq!(
        world
            .seen
            .iter()
            .filter(|s| s.url.ends_with("/token"))
            .count(),
        1,
        "no retry, no other grant"
    );
    // The server echoed the assertion: redacted.
    assert!(!error.to_string().contains(WORKLOAD_JWT), "{error}");
    assert_no_leak(&world, &flow, &printed);

    let mut world = jwt_bearer_world();
    let config = Config::jwt_bearer(SERVER, PreRegistered::new("wif-client"), source).unwrap();
    let (end, ..) = refused_with(
        config,
        &mut world,
        default_challenge(),
        None,
        Err("it is not set"),
    );
    let error = failure_of(end);
    assert_eq!(
        error.to_string(),
        "reading the assertion could not be completed: the environment variable WORKLOAD_TOKEN: it is not set"
    );
    assert!(!world.seen.iter().any(|s| s.url.ends_with("/token")));
}

// ---- enterprise-managed authorization ----

fn enterprise_world() -> World {
    let mut world = World::standard();
    world.replace_as_metadata(json!({"grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer"], "token_endpoint_auth_methods_supported": ["client_secret_basic"], "registration_endpoint": null}));
    world.route(
        "POST",
        &format!("{IDP}/token"),
        200,
        json!({"access_token": ID_JAG, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A", "expires_in": 300}),
    );
    world
        .secrets
        .extend([ID_TOKEN.into(), ID_JAG.into(), "xaa-secret".into()]);
    world
}

fn enterprise_config() -> Config {
    let mut client = PreRegistered::new("xaa-client");
    client.client_secret = Some(Secret::new("xaa-secret"));
    let idp = EnterpriseIdp::new(
        Url::parse(&format!("{IDP}/token")).unwrap(),
        PreRegistered::new("idp-client"),
        AssertionSource::Env("ID_TOKEN".into()),
    );
    Config::enterprise_managed(SERVER, client, idp).unwrap()
}

#[test]
fn enterprise_managed_exchanges_the_id_token_then_sends_the_id_jag() {
    let mut world = enterprise_world();
    let (end, flow, printed) = refused_with(
        enterprise_config(),
        &mut world,
        default_challenge(),
        None,
        Ok(ID_TOKEN),
    );
    token_of(end);
    let exchange = world.last("POST", "idp.example.com/token");
    assert_eq!(
        exchange.param("grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:token-exchange")
    );
    assert_eq!(exchange.param("subject_token").as_deref(), Some(ID_TOKEN));
    assert_eq!(
        exchange.param("subject_token_type").as_deref(),
        Some("urn:ietf:params:oauth:token-type:id_token")
    );
    assert_eq!(
        exchange.param("requested_token_type").as_deref(),
        Some("urn:ietf:params:oauth:token-type:id-jag")
    );
    assert_eq!(exchange.param("audience").as_deref(), Some(AS));
    assert_eq!(exchange.param("resource").as_deref(), Some(SERVER));
    assert_eq!(exchange.param("client_id").as_deref(), Some("idp-client"));
    assert!(proof_of(exchange).is_none());

    let grant = world.last("POST", "auth.example.com/token");
    assert_eq!(
        grant.param("grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert_eq!(grant.param("assertion").as_deref(), Some(ID_JAG));
    let basic = grant.headers[http::header::AUTHORIZATION].to_str().unwrap();
    let decoded = base64::decode(
        basic.strip_prefix("Basic ").unwrap(),
        Flavor::Standard,
        Padding::Required,
    )
    .unwrap();
    assert_eq!(decoded, b"xaa-client:xaa-secret");
    // The order: metadata, the exchange at the IdP, then the grant.
    let order: Vec<String> = world.requests();
    let exchange_at = order
        .iter()
        .position(|r| r.contains("idp.example.com"))
        .unwrap();
    let grant_at = order
        .iter()
        .rposition(|r| r == &format!("POST {AS}/token"))
        .unwrap();
    assert!(exchange_at < grant_at, "{order:?}");
    assert!(flow.secrets().iter().any(|s| s.expose() == ID_JAG));
    assert_no_leak(&world, &flow, &printed);
}

#[test]
fn enterprise_managed_refusals_and_answers_that_are_not_id_jags() {
    let mut world = enterprise_world();
    world.replace_route(
        "POST",
        &format!("{IDP}/token"),
        400,
        json!({"error": "invalid_grant", "error_description": format!("bad token {ID_TOKEN}")}),
    );
    let (end, flow, printed) = refused_with(
        enterprise_config(),
        &mut world,
        default_challenge(),
        None,
        Ok(ID_TOKEN),
    );
    let error = failure_of(end);
    assert!(matches!(
        &error,
        Error::Token { purpose: Purpose::TokenExchange, error: TokenResponseError::Refused(e) } if e.code == "invalid_grant"
    ));
    assert!(!error.to_string().contains(ID_TOKEN));
    assert!(!world.seen.iter().any(|s| s.url == format!("{AS}/token")));
    assert_no_leak(&world, &flow, &printed);

    let mut world = enterprise_world();
    world.replace_route(
        "POST",
        &format!("{IDP}/token"),
        200,
        json!({"access_token": ID_JAG, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer"}),
    );
    let (end, ..) = refused_with(
        enterprise_config(),
        &mut world,
        default_challenge(),
        None,
        Ok(ID_TOKEN),
    );
    assert!(matches!(
        failure_of(end),
        Error::Token {
            purpose: Purpose::TokenExchange,
            error: TokenResponseError::Document(_)
        }
    ));

    // An IdP endpoint that is neither https nor loopback is refused up front.
    let idp = EnterpriseIdp::new(
        Url::parse("http://idp.example.com/token").unwrap(),
        PreRegistered::new("idp-client"),
        AssertionSource::Env("ID_TOKEN".into()),
    );
    assert!(matches!(
        Config::enterprise_managed(SERVER, PreRegistered::new("c"), idp),
        Err(Error::Insecure { .. })
    ));
}

#[test]
fn an_assertion_that_never_comes_times_out() {
    let config = Config::jwt_bearer(
        SERVER,
        PreRegistered::new("wif-client"),
        AssertionSource::Env("WORKLOAD_TOKEN".into()),
    )
    .unwrap();
    let mut world = jwt_bearer_world();
    let mut flow = Flow::new(config);
    flow.handle_refusal(StatusCode::UNAUTHORIZED, &default_challenge(), None, T0);
    loop {
        match flow.poll_output().expect("an output") {
            Output::Send { id, request, .. } => {
                let response = world.answer(&request);
                flow.handle_response(id, response, T0);
            }
            Output::Assertion { .. } => break,
            other => panic!("{other:?}"),
        }
    }
    let deadline = flow.poll_timeout().expect("a deadline");
    flow.handle_timeout(UnixTime(deadline.0 - 1));
    assert!(flow.poll_output().is_none());
    flow.handle_timeout(deadline);
    assert!(matches!(
        flow.poll_output(),
        Some(Output::Failed(Error::Timeout {
            purpose: Purpose::Assertion
        }))
    ));
    // A late answer changes nothing.
    flow.handle_assertion(Ok(Secret::new(WORKLOAD_JWT)), deadline);
    assert!(flow.poll_output().is_none());
}

// ---- renewal ahead of expiry, for grants with no refresh token ----

#[test]
fn grants_that_need_nobody_run_again_ahead_of_expiry() {
    let skew = Limits::default().expiry_skew_secs;
    let cc_world = || {
        let mut world = World::standard();
        world.replace_as_metadata(json!({"grant_types_supported": ["client_credentials"], "token_endpoint_auth_methods_supported": ["client_secret_basic"], "authorization_endpoint": null}));
        world.secrets.push("cc-secret".into());
        world
    };
    let cc_config = || {
        let mut client = PreRegistered::new("cc-client");
        client.client_secret = Some(Secret::new("cc-secret"));
        Config::client_credentials(SERVER, client).unwrap()
    };
    let wif_config = || {
        let source = AssertionSource::File("/var/run/secrets/tokens/mcp".into());
        Config::jwt_bearer(SERVER, PreRegistered::new("wif-client"), source).unwrap()
    };
    let cases: [(&str, World, Config, &str, &str); 3] = [
        (
            "client_credentials",
            cc_world(),
            cc_config(),
            "",
            "client_credentials",
        ),
        (
            "jwt_bearer",
            jwt_bearer_world(),
            wif_config(),
            WORKLOAD_JWT,
            "urn:ietf:params:oauth:grant-type:jwt-bearer",
        ),
        (
            "enterprise_managed",
            enterprise_world(),
            enterprise_config(),
            ID_TOKEN,
            "urn:ietf:params:oauth:grant-type:jwt-bearer",
        ),
    ];
    for (name, mut world, config, assertion, grant_type) in cases {
        // Two more answers: the token endpoint issues a new token each time.
        world.token(AS, json!({}));
        world.token(AS, json!({}));
        let grants = |world: &World| {
            world
                .seen
                .iter()
                .filter(|s| s.url == format!("{AS}/token"))
                .map(|s| s.param("grant_type").unwrap_or_default())
                .collect::<Vec<_>>()
        };
        let (end, mut flow, mut printed) =
            refused_with(config, &mut world, default_challenge(), None, Ok(assertion));
        let first = token_of(end);
        assert!(first.refresh_token().is_none(), "{name}");
        assert_eq!(first.expires_at(), Some(T0.plus(3600)), "{name}");
        // Far from expiry: sent as it is, nothing runs.
        for now in [T0.plus(100), T0.plus(3600 - skew - 1)] {
            assert!(!flow.near_expiry(now), "{name} at {now:?}");
            assert!(!flow.refresh_ahead(now), "{name} at {now:?}");
            assert!(flow.poll_output().is_none() && !flow.is_busy(), "{name}");
        }
        assert_eq!(grants(&world).len(), 1, "{name}");
        // Within the skew of its expiry: the grant runs again before the request goes out.
        let near = T0.plus(3600 - skew);
        assert!(flow.near_expiry(near), "{name}");
        assert!(flow.refresh_ahead(near), "{name}");
        let second = token_of(run_with(
            &mut flow,
            &mut world,
            None,
            Ok(assertion),
            &mut printed,
        ));
        assert_ne!(second.access_token(), first.access_token(), "{name}");
        assert_eq!(
            flow.token().map(Token::access_token),
            Some(second.access_token())
        );
        assert_eq!(
            grants(&world),
            [grant_type, grant_type],
            "{name}: the same grant again"
        );
        // Idle past its expiry: the same, before any request takes a 401.
        let idle = T0.plus(100_000);
        assert!(flow.refresh_ahead(idle), "{name}");
        let third = token_of(run_with(
            &mut flow,
            &mut world,
            None,
            Ok(assertion),
            &mut printed,
        ));
        assert_ne!(third.access_token(), second.access_token(), "{name}");
        assert_eq!(grants(&world).len(), 3, "{name}");
        if name == "enterprise_managed" {
            let exchanges = world
                .seen
                .iter()
                .filter(|s| s.url == format!("{IDP}/token"));
            assert_eq!(exchanges.count(), 3, "a new ID-JAG each time");
        }
        assert_no_leak(&world, &flow, &printed);
    }
}

#[test]
fn a_grant_run_again_that_fails_keeps_the_token_it_had() {
    let mut world = jwt_bearer_world();
    let source = AssertionSource::Env("WORKLOAD_TOKEN".into());
    let config = Config::jwt_bearer(SERVER, PreRegistered::new("wif-client"), source).unwrap();
    let (end, mut flow, mut printed) = refused_with(
        config,
        &mut world,
        default_challenge(),
        None,
        Ok(WORKLOAD_JWT),
    );
    let first = token_of(end);
    let near = T0.plus(3600 - Limits::default().expiry_skew_secs);
    assert!(flow.refresh_ahead(near));
    let end = run_with(
        &mut flow,
        &mut world,
        None,
        Err("it is not set"),
        &mut printed,
    );
    assert!(matches!(
        failure_of(end),
        Error::Transport {
            purpose: Purpose::Assertion,
            ..
        }
    ));
    // The token, still valid for a few seconds, goes with the request.
    assert_eq!(flow.bearer(near), Some(first.access_token()));
    assert!(!flow.is_busy());
}

#[test]
fn dpop_a_nonce_on_any_answer_of_the_mcp_server_goes_in_the_next_proof() {
    let mut world = dpop_world();
    let (end, mut flow, _) =
        refused_with(dpop_config(), &mut world, default_challenge(), None, Ok(""));
    let token = token_of(end);
    let nonce_of = |flow: &Flow| {
        let proof = flow
            .resource_proof("POST", SERVER, token.access_token(), T0)
            .unwrap()
            .unwrap();
        verified_proof(proof.expose()).1["nonce"].clone()
    };
    assert_eq!(nonce_of(&flow), Value::Null);
    // A 200's `DPoP-Nonce`, then the next one: the newest replaces the one before.
    flow.note_resource_nonce(b"rs-200-1");
    assert_eq!(nonce_of(&flow), "rs-200-1");
    flow.note_resource_nonce(b"rs-200-2");
    assert_eq!(nonce_of(&flow), "rs-200-2");
    // Not of the grammar: ignored, the kept one stays.
    for bad in [&b""[..], b"a b", b"a\"b", "é".as_bytes()] {
        flow.note_resource_nonce(bad);
        assert_eq!(nonce_of(&flow), "rs-200-2", "{bad:?}");
    }
    // Without DPoP nothing is kept.
    let mut world = World::standard();
    let (end, mut flow, _) = refused(code_config(), &mut world, default_challenge());
    let bearer = token_of(end);
    flow.note_resource_nonce(b"n");
    assert!(
        flow.resource_proof("POST", SERVER, bearer.access_token(), T0)
            .is_none()
    );
}
