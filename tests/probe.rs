//! `mcpwire probe`: the library's `binding::probe` against the in-process demo server and
//! fault servers that break one rule each, and the CLI end to end. The real servers are probed
//! in `interop`.

use std::time::Duration;

use mcpwire::binding::probe::{Level, ProbeOptions, ProbeReport, probe};
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use mcpwire::transport::Secret;
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
fn deviation<'a>(report: &'a ProbeReport, rule: &str) -> &'a mcpwire::binding::probe::Deviation {
    report
        .deviations
        .iter()
        .find(|d| d.rule.contains(rule))
        .unwrap_or_else(|| panic!("no deviation of {rule:?} in:\n{}", report.render()))
}

#[track_caller]
fn reply<'a>(report: &'a ProbeReport, request: &str) -> &'a mcpwire::binding::probe::ReplySeen {
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
    let server = DemoServer::start_with_options(DemoOptions::default().era(Era::Legacy))
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
