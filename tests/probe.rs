//! `mcpwire probe`: the library's `probe` against the in-process demo server and
//! fault servers that break one rule each, and the CLI end to end. The real servers are probed
//! in `interop`.

use std::time::Duration;

use mcpwire::auth::Secret;
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use mcpwire::probe::{Level, ProbeOptions, ProbeReport, probe};
use mcpwire::transport::http::{HttpPool, TlsOptions};
use serde_json::{Value, json};

use crate::cli_tools::{Fault, assert_exit, mcpwire};
use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};

/// A token recognizable anywhere it might leak.
const TOKEN: &str = "tok-PROBE-SECRET-77c1e0";

fn pool() -> HttpPool {
    HttpPool::new(&TlsOptions::default()).expect("pool")
}

fn options(url: &str) -> ProbeOptions {
    let mut options = ProbeOptions::new(url);
    options.timeout = Duration::from_secs(20);
    options.request_timeout = Duration::from_secs(5);
    options
}

async fn run(options: &ProbeOptions) -> ProbeReport {
    probe(&pool(), options).await.expect("a valid URL")
}

/// The deviation whose rule contains `rule`, or a panic listing them all.
#[track_caller]
fn deviation<'a>(report: &'a ProbeReport, rule: &str) -> &'a mcpwire::probe::Deviation {
    report
        .deviations
        .iter()
        .find(|d| d.rule.contains(rule))
        .unwrap_or_else(|| panic!("no deviation of {rule:?} in:\n{}", report.render()))
}

#[track_caller]
fn reply<'a>(report: &'a ProbeReport, request: &str) -> &'a mcpwire::probe::ReplySeen {
    report
        .replies
        .iter()
        .find(|r| r.request == request)
        .unwrap_or_else(|| panic!("no reply to {request:?} in:\n{}", report.render()))
}

/// Whatever the probe did, it never called a tool.
#[track_caller]
fn assert_no_tool_call(requests: &[Recorded]) {
    assert!(!requests.is_empty());
    for request in requests {
        assert_ne!(
            request.jsonrpc_method().as_deref(),
            Some("tools/call"),
            "{request:?}"
        );
    }
}

// --- the demo server --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_server_is_a_clean_2025_session_server() {
    let server = DemoServer::start_with_options({
        let mut options = DemoOptions::default();
        options.era = Era::Legacy;
        options
    })
    .await
    .expect("demo server");
    let report = run(&options(&server.url())).await;
    let text = report.render();
    assert!(report.reachable && report.completed, "{text}");
    assert_eq!(report.eras.modern.speaks_2026_07_28, Some(false), "{text}");
    assert_eq!(report.eras.legacy.negotiated.as_deref(), Some("2025-11-25"));
    assert_eq!(
        report.eras.legacy.transport.as_deref(),
        Some("streamable-http")
    );
    assert!(!report.eras.legacy.legacy_fallback);
    assert_eq!(
        report.eras.legacy.accepted(),
        vec!["2025-11-25", "2025-06-18", "2025-03-26"]
    );
    let server_info = report.server.as_ref().expect("server info");
    assert_eq!(server_info.name, "mcpwire-demo");
    assert_eq!(server_info.source, "initialize");
    let init = reply(&report, "POST initialize 2025-11-25");
    assert_eq!((init.status, init.body.as_str()), (200, "json"));
    assert!(init.session_id);
    let session = report.sessions.session_id.as_ref().expect("a session id");
    assert_eq!((session.length, session.shape.as_str()), (32, "hex"));
    assert!(session.visible_ascii);
    assert_eq!(
        report.sessions.unknown_session.as_ref().unwrap().status,
        404
    );
    assert_eq!(
        report.sessions.missing_session.as_ref().unwrap().status,
        400
    );
    assert!(!report.auth.required);
    assert!(report.tools.listed, "{text}");
    let names: Vec<&str> = report.tools.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, crate::support::DEMO_TOOLS);
    let weather = &report.tools.tools[2];
    assert!(weather.declares_output_schema);
    assert_eq!(weather.output_schema.as_deref(), Some("ok"));
    assert!(report.tools.tools.iter().all(|t| t.problems.is_empty()));
    assert!(report.deviations.is_empty(), "{text}");
    assert!(text.contains("Deviations  none seen\n"), "{text}");
    // Every session the probe opened (three raw initializes and the client's) was ended.
    let stats = server.stats();
    assert_eq!(stats.sessions_opened, 4, "{stats:?}");
    assert_eq!(stats.sessions_deleted, 4, "{stats:?}");
}

/// The dual-era demo server: 2026-07-28 through server/discover, and sessions for a client
/// that initializes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_era_demo_server_shows_both_eras() {
    let server = DemoServer::start().await.expect("demo server");
    let report = run(&options(&server.url())).await;
    let text = report.render();
    assert!(report.reachable && report.completed, "{text}");
    assert_eq!(report.eras.modern.speaks_2026_07_28, Some(true), "{text}");
    assert_eq!(
        report.eras.legacy.negotiated.as_deref(),
        Some("2025-11-25"),
        "{text}"
    );
    assert_eq!(
        report.sessions.unknown_session.as_ref().unwrap().status,
        404,
        "{text}"
    );
    assert!(report.deviations.is_empty(), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_server_with_a_token_shows_its_challenge_and_metadata() {
    let mut demo = DemoOptions::default();
    demo.token = Some(TOKEN.into());
    demo.era = Era::Legacy;
    let server = DemoServer::start_with_options(demo)
        .await
        .expect("demo server");
    let report = run(&options(&server.url())).await;
    let text = report.render();
    assert!(report.completed, "{text}");
    assert!(report.auth.required);
    assert_eq!(report.auth.status, Some(401));
    assert!(!report.auth.token_sent);
    let challenge = &report.auth.challenges[0];
    assert_eq!(challenge.scheme, "Bearer");
    let metadata_url = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.addr()
    );
    assert_eq!(
        challenge.resource_metadata.as_deref(),
        Some(metadata_url.as_str())
    );
    let metadata = report.auth.metadata.as_ref().expect("metadata");
    assert_eq!(metadata.url, metadata_url);
    assert_eq!(metadata.resource.as_deref(), Some(server.url().as_str()));
    assert_eq!(metadata.bearer_methods_supported, vec!["header".to_owned()]);
    assert_eq!(report.eras.modern.speaks_2026_07_28, None);
    assert!(!report.tools.listed);
    assert!(
        report.notes.iter().any(|n| n.contains("--token-env")),
        "{text}"
    );
    assert!(report.deviations.is_empty(), "{text}");
    assert!(text.contains("Auth        401 without a token\n"), "{text}");

    let mut with_token = options(&server.url());
    with_token.token = Some(Secret::new(TOKEN));
    let report = run(&with_token).await;
    let text = report.render();
    assert!(report.completed && !report.auth.required, "{text}");
    assert!(report.auth.token_sent);
    assert_eq!(report.tools.tools.len(), 9, "{text}");
    assert!(!text.contains(TOKEN) && !report.to_json().contains(TOKEN));
}

// --- fault servers ----------------------------------------------------------------------------

fn result(request: &Recorded, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request.jsonrpc_id(), "result": result})
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn offered_version(request: &Recorded) -> String {
    request.json().unwrap()["params"]["protocolVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A 2025 session server with a Python-style CRLF event stream, an empty-data event without an
/// id on its initialize streams, a 400 for unknown sessions, an unknown revision answered to
/// 2025-03-26, and tools with a bad name and a bad `x-mcp-header`.
fn crlf_session_server(request: &Recorded) -> Reply {
    let session = request.header("mcp-session-id");
    match (
        request.method.as_str(),
        request.jsonrpc_method().as_deref(),
        session,
    ) {
        ("POST", Some("initialize"), None) => {
            let offered = offered_version(request);
            let answered = if offered == "2025-03-26" {
                "2099-01-01".to_owned()
            } else {
                offered
            };
            let body = result(
                request,
                json!({"protocolVersion": answered, "capabilities": {"tools": {}},
                       "serverInfo": {"name": "crlf-fault", "version": "1"}}),
            );
            Reply::sse_steps(
                200,
                vec![
                    Step::text("data: \r\n\r\n"),
                    Step::text(&format!("event: message\r\ndata: {body}\r\n\r\n")),
                ],
            )
            .with_header("mcp-session-id", "sess-1")
        }
        ("POST", Some("notifications/initialized"), Some("sess-1")) => Reply::empty(202),
        ("POST", Some("tools/list"), Some("sess-1")) => {
            let tools = json!({"tools": [
                {"name": "fine", "inputSchema": {"type": "object"}},
                {"name": "has space", "inputSchema": {"type": "object"}},
                {"name": "region", "inputSchema": {"type": "object", "properties": {
                    "where": {"type": "object", "x-mcp-header": "Where"}}}},
            ]});
            let body = result(request, tools);
            Reply::sse(200, &[&format!("event: message\r\ndata: {body}\r\n\r\n")])
        }
        ("DELETE", _, Some("sess-1")) => Reply::empty(200),
        (_, _, Some(_)) => Reply::json(400, error(Value::Null, -32000, "No valid session ID")),
        _ => Reply::json(400, error(Value::Null, -32000, "Server not initialized")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crlf_session_server_with_a_400_for_unknown_sessions() {
    let server = FaultServer::start(crlf_session_server).await;
    let report = run(&options(&server.url("/mcp"))).await;
    let text = report.render();
    assert!(report.completed, "{text}");
    let init = reply(&report, "POST initialize 2025-11-25");
    let sse = init.sse.as_ref().expect("an event stream");
    assert_eq!(sse.line_endings, "CRLF");
    assert_eq!(
        (sse.events, sse.priming_events, sse.empty_events_without_id),
        (2, 0, 1)
    );
    assert_eq!(
        report.sessions.unknown_session.as_ref().unwrap().status,
        400
    );
    let unknown = deviation(&report, "Session Management, 3");
    assert_eq!(unknown.level, Level::Must);
    assert!(
        unknown.evidence.contains("made-up session id"),
        "{unknown:?}"
    );
    assert_eq!(
        deviation(&report, "Sending Messages to the Server, 6").level,
        Level::Should
    );
    // 2025-03-26 was answered with a revision nobody knows.
    let version = deviation(&report, "Version Negotiation");
    assert!(version.what.contains("2099-01-01"), "{version:?}");
    assert_eq!(
        report.eras.legacy.accepted(),
        vec!["2025-11-25", "2025-06-18"]
    );
    // The missing-session answer is the 400 the spec asks for: no deviation for it.
    assert_eq!(
        report.sessions.missing_session.as_ref().unwrap().status,
        400
    );
    assert!(
        !report
            .deviations
            .iter()
            .any(|d| d.rule.contains("Session Management, 2"))
    );
    // Tools: a bad name and an annotation on an object property.
    assert_eq!(report.tools.tools.len(), 3, "{text}");
    assert!(report.tools.tools[0].problems.is_empty());
    assert_eq!(deviation(&report, "Tool Names").level, Level::Should);
    let header = deviation(&report, "x-mcp-header");
    assert!(header.what.starts_with("tool \"region\""), "{header:?}");
    assert!(
        text.contains("has space  the name breaks the tool name rule"),
        "{text}"
    );
    assert_no_tool_call(&server.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_that_is_not_visible_ascii() {
    let server = FaultServer::start(|request| match request.jsonrpc_method().as_deref() {
        Some("initialize") => Reply::json(
            200,
            result(
                request,
                json!({"protocolVersion": offered_version(request), "capabilities": {},
                       "serverInfo": {"name": "spacey", "version": "1"}}),
            ),
        )
        .with_header("mcp-session-id", "has a space"),
        _ => Reply::json(400, error(Value::Null, -32000, "no")),
    })
    .await;
    let report = run(&options(&server.url("/mcp"))).await;
    let text = report.render();
    assert!(report.completed, "{text}");
    let session = report.sessions.session_id.as_ref().expect("seen");
    assert!(!session.visible_ascii);
    assert_eq!(
        deviation(&report, "Session Management, 1").level,
        Level::Must
    );
    // The library client refuses such a session outright.
    assert!(report.eras.legacy.connect_error.is_some(), "{text}");
    // The raw initializes still name the server.
    assert_eq!(report.server.as_ref().unwrap().name, "spacey");
}

/// A 2026-07-28-only server: a DiscoverResult, `-32022` for initialize, two pages of tools
/// (the second without `resultType`, holding a tool whose `x-mcp-header` is on a number).
fn modern_only_server(request: &Recorded) -> Reply {
    let body = request.json().unwrap_or_default();
    let modern = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28";
    let id = request.jsonrpc_id().unwrap_or(Value::Null);
    match (
        request.method.as_str(),
        request.jsonrpc_method().as_deref(),
        modern,
    ) {
        ("POST", Some("server/discover"), true) => Reply::json(
            200,
            result(
                request,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                       "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-fault", "version": "9"}}}),
            ),
        ),
        ("POST", Some("tools/list"), true) => {
            if body["params"]["cursor"] == "p2" {
                Reply::json(
                    200,
                    result(
                        request,
                        json!({"tools": [{"name": "metric", "inputSchema": {"type": "object",
                            "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}}]}),
                    ),
                )
            } else {
                Reply::json(
                    200,
                    result(
                        request,
                        json!({"resultType": "complete", "nextCursor": "p2", "tools": [
                            {"name": "echo", "inputSchema": {"type": "object", "properties": {
                                "region": {"type": "string", "x-mcp-header": "Region"}}}}]}),
                    ),
                )
            }
        }
        ("POST", _, false) => Reply::json(
            400,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
                "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}}),
        ),
        _ => Reply::json(405, error(Value::Null, -32000, "Method not allowed."))
            .with_header("allow", "POST"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_only_server_is_listed_over_2026_requests() {
    let server = FaultServer::start(modern_only_server).await;
    let report = run(&options(&server.url("/mcp"))).await;
    let text = report.render();
    assert!(report.completed, "{text}");
    assert_eq!(report.eras.modern.speaks_2026_07_28, Some(true), "{text}");
    assert_eq!(
        report.eras.modern.supported_versions,
        vec!["2026-07-28".to_owned()]
    );
    assert!(report.eras.legacy.connect_error.is_some(), "{text}");
    assert!(report.eras.legacy.accepted().is_empty());
    assert_eq!(report.server.as_ref().unwrap().name, "modern-fault");
    assert_eq!(report.server.as_ref().unwrap().source, "server/discover");
    assert_eq!(report.tools.via, "tools/list (2026-07-28)");
    let names: Vec<&str> = report.tools.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "metric"], "{text}");
    assert_eq!(
        report.tools.tools[0].param_headers,
        vec!["Mcp-Param-Region".to_owned()]
    );
    assert!(deviation(&report, "x-mcp-header").what.contains("metric"));
    assert!(
        deviation(&report, "ResultType")
            .what
            .contains("no resultType")
    );
    // Two pages were read, one is reported.
    let listings = report
        .replies
        .iter()
        .filter(|r| r.request == "POST tools/list (2026-07-28)")
        .count();
    assert_eq!(listings, 1, "{text}");
    let requests = server.requests();
    let modern_lists = requests
        .iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some("tools/list"))
        .filter(|r| r.header("mcp-method") == Some("tools/list"))
        .filter(|r| r.header("mcp-protocol-version") == Some("2026-07-28"))
        .count();
    assert_eq!(modern_lists, 2);
    assert_no_tool_call(&requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_without_a_challenge_or_metadata() {
    let server = FaultServer::start(|request| {
        if request.path.starts_with("/.well-known/") {
            Reply::text(404, "not here")
        } else {
            Reply::empty(401)
        }
    })
    .await;
    let mut options = options(&server.url("/mcp"));
    options.token = Some(Secret::new(TOKEN));
    let report = run(&options).await;
    let text = report.render();
    assert!(report.completed, "{text}");
    assert!(report.auth.required && report.auth.token_sent);
    assert!(report.auth.challenges.is_empty());
    assert_eq!(deviation(&report, "RFC 9110").level, Level::Must);
    assert_eq!(
        deviation(&report, "Protected Resource Metadata").level,
        Level::Must
    );
    assert_eq!(report.auth.metadata_tried.len(), 2, "{text}");
    assert!(
        text.contains("Auth        401 with the token given\n"),
        "{text}"
    );
    // The token went to the endpoint, never to the metadata URLs.
    let requests = server.requests();
    for request in &requests {
        let sent = request.header("authorization").is_some();
        assert_eq!(sent, request.path == "/mcp", "{request:?}");
    }
    assert!(
        requests
            .iter()
            .any(|r| r.path == "/.well-known/oauth-protected-resource/mcp")
    );
    assert!(
        requests
            .iter()
            .any(|r| r.path == "/.well-known/oauth-protected-resource")
    );
    assert!(!text.contains(TOKEN) && !report.to_json().contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_without_a_content_type_is_a_deviation() {
    let server = FaultServer::start(|request| match request.jsonrpc_method().as_deref() {
        Some("initialize") => {
            let body = result(
                request,
                json!({"protocolVersion": offered_version(request), "capabilities": {},
                       "serverInfo": {"name": "untyped", "version": "1"}}),
            );
            Reply::new(
                200,
                crate::support::fault_server::Body::Full(body.to_string().into_bytes()),
            )
        }
        _ => Reply::json(400, error(Value::Null, -32000, "no")),
    })
    .await;
    let report = run(&options(&server.url("/mcp"))).await;
    let init = reply(&report, "POST initialize 2025-11-25");
    assert_eq!(
        (init.content_type.as_deref(), init.body.as_str()),
        (None, "other")
    );
    let found = deviation(&report, "Sending Messages to the Server, 5");
    assert!(found.what.contains("no Content-Type"), "{found:?}");
    assert_eq!(found.occurrences, 3, "{found:?}");
}

// --- the command line -------------------------------------------------------------------------

/// A demo server on a runtime of its own, for a probe run as a child process.
struct Demo {
    server: DemoServer,
    _runtime: tokio::runtime::Runtime,
}

impl Demo {
    fn start() -> Demo {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let server = runtime
            .block_on(DemoServer::start_with_options({
                let mut options = DemoOptions::default();
                options.era = Era::Legacy;
                options
            }))
            .expect("demo server");
        Demo {
            server,
            _runtime: runtime,
        }
    }
}

#[test]
fn cli_probe_prints_the_report_and_json() {
    let demo = Demo::start();
    let url = demo.server.url();
    let human = mcpwire(&["probe", &url], &[]);
    assert_exit(&human, 0);
    for section in [
        "Server ",
        "Eras ",
        "Replies ",
        "Sessions ",
        "Auth ",
        "Tools ",
        "Deviations ",
    ] {
        assert!(
            human.stdout.contains(&format!("\n{section}")),
            "{section}: {}",
            human.stdout
        );
    }
    let json = mcpwire(&["probe", "--json", &url, "-timeout-seconds", "20"], &[]);
    assert_exit(&json, 0);
    let report: Value = serde_json::from_str(&json.stdout).expect("JSON report");
    assert_eq!(report["url"], url);
    assert_eq!(report["completed"], true);
    assert_eq!(report["eras"]["legacy"]["negotiated"], "2025-11-25");
    assert_eq!(report["tools"]["tools"].as_array().unwrap().len(), 9);
    assert_eq!(report["deviations"], json!([]));
}

#[test]
fn cli_probe_exit_codes() {
    // Nothing listens on port 1.
    let unreachable = mcpwire(&["probe", "http://127.0.0.1:1/mcp"], &[]);
    assert_exit(&unreachable, 1);
    assert!(
        unreachable.stdout.contains("not reachable"),
        "{unreachable:?}"
    );
    assert!(
        unreachable.stderr.contains("could not be probed"),
        "{unreachable:?}"
    );
    for args in [
        &["probe"][..],
        &["probe", "ftp://x"],
        &["probe", "http://127.0.0.1:1/mcp", "--timeout-seconds", "0"],
        &["probe", "http://127.0.0.1:1/mcp", "--bogus"],
        &[
            "probe",
            "http://127.0.0.1:1/mcp",
            "--token-env",
            "MCPWIRE_PROBE_UNSET_VAR",
        ],
    ] {
        let run = mcpwire(args, &[("MCPWIRE_PROBE_UNSET_VAR", "")]);
        assert_exit(&run, 2);
        assert!(run.stdout.is_empty(), "{run:?}");
    }
}

#[test]
fn cli_probe_keeps_its_deadline_against_a_server_that_hangs() {
    let fault = Fault::start(|_| Reply::sse_steps(200, vec![Step::Hang]));
    let url = fault.server.url("/mcp");
    let run = mcpwire(&["probe", &url, "--timeout-seconds", "1", "--json"], &[]);
    assert_exit(&run, 1);
    assert!(run.elapsed < Duration::from_secs(4), "{run:?}");
    let report: Value = serde_json::from_str(&run.stdout).expect("JSON report");
    assert_eq!(report["reachable"], true);
    assert_eq!(report["completed"], false);
    assert!(
        report["notes"].to_string().contains("deadline"),
        "{}",
        run.stdout
    );
}

#[test]
fn cli_probe_sends_the_token_from_the_environment_and_never_prints_it() {
    let fault = Fault::start(|_| {
        Reply::empty(401).with_header(
            "www-authenticate",
            &format!("Bearer error=\"invalid_token\", error_description=\"{TOKEN} is not valid\""),
        )
    });
    let url = fault.server.url("/mcp");
    let env = [("MCPWIRE_PROBE_TOKEN", TOKEN)];
    let run = mcpwire(&["probe", &url, "-token-env", "MCPWIRE_PROBE_TOKEN"], &env);
    assert_exit(&run, 0);
    assert!(
        run.stdout.contains("401 with the token given"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("error_description=\"<redacted> is not valid\""),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN),
        "{run:?}"
    );
    let bearer = format!("Bearer {TOKEN}");
    for request in fault.server.requests() {
        let expected = (request.path == "/mcp").then_some(bearer.as_str());
        assert_eq!(request.header("authorization"), expected, "{request:?}");
    }
}
