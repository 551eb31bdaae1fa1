//! W3C trace context (SEP-414) end to end against the in-process demo server, which records the
//! `_meta.traceparent` of every request it receives: the client's and the call's context in
//! both eras, a binding call's, `mcpwire call`'s from the environment and its flags, and a
//! malformed context refused or dropped, never sent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mcpwire::ErrorKind;
use mcpwire::binding::call::{CallContext, Caller, EnvTokens};
use mcpwire::binding::config::load_config;
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use mcpwire::mcp::TraceContext;
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::json;

const MCPWIRE: &str = env!("CARGO_BIN_EXE_mcpwire");
/// The host's context (the client's, or the environment's).
const HOST: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
/// A call's own.
const CALL: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn context(traceparent: &str) -> TraceContext {
    TraceContext::parse(traceparent).expect("a valid traceparent")
}

async fn demo(era: Era) -> DemoServer {
    let mut options = DemoOptions::default();
    options.era = era;
    DemoServer::start_with_options(options)
        .await
        .expect("a demo server")
}

/// What the server recorded, as `(method, traceparent)` pairs of `&str`.
fn seen(server: &DemoServer) -> Vec<(String, String)> {
    server.trace_contexts()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(method, parent)| ((*method).to_owned(), (*parent).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_carries_the_clients_or_its_own_trace_context_in_both_eras() {
    for era in [Era::Modern, Era::Legacy] {
        let server = demo(era).await;
        let pool = HttpPool::new(&TlsOptions::default()).expect("a pool");
        let mut options = ClientOptions::default();
        options.trace_context = Some(context(HOST));
        let config = HttpConfig::new(&server.url()).expect("a config");
        let client = Client::connect_http(&pool, config, options)
            .await
            .expect("connect");
        client.list_tools().await.expect("tools/list");
        let mut call = CallOptions::default();
        call.trace_context = Some(context(CALL));
        let arguments = json!({"message": "hi"}).as_object().cloned();
        let result = client
            .call_tool("echo", arguments.clone(), call)
            .await
            .expect("tools/call");
        assert!(!result.is_error(), "{result:?}");
        // Trace members of the caller's own `_meta` are the call's context too.
        let mut call = CallOptions::default();
        call.meta = json!({"traceparent": CALL}).as_object().cloned();
        client
            .call_tool("echo", arguments.clone(), call)
            .await
            .expect("tools/call");
        // A malformed one is refused, and nothing is sent.
        let mut call = CallOptions::default();
        call.meta = json!({"traceparent": CALL.to_uppercase()})
            .as_object()
            .cloned();
        let refused = client
            .call_tool("echo", arguments, call)
            .await
            .expect_err("refused");
        assert_eq!(refused.kind(), ErrorKind::Config, "{refused}");
        assert!(refused.to_string().contains("never sent"), "{refused}");
        client.close().await;
        let handshake: &[(&str, &str)] = match era {
            Era::Modern => &[("server/discover", HOST)],
            // The probe first, then initialize: both are the handshake's.
            _ => &[("server/discover", HOST), ("initialize", HOST)],
        };
        let mut expected = handshake.to_vec();
        expected.extend([
            ("tools/list", HOST),
            ("tools/call", CALL),
            ("tools/call", CALL),
        ]);
        // Every page of the listing carries it (the demo server's listing has several).
        let mut seen = seen(&server);
        let pages = seen
            .iter()
            .filter(|(method, _)| method == "tools/list")
            .count();
        assert!(pages >= 1, "{seen:?}");
        seen.dedup_by(|a, b| a.0 == "tools/list" && a == b);
        assert_eq!(seen, pairs(&expected), "{era:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_call_sends_its_context_in_the_handshake_and_the_call() {
    let server = demo(Era::Both).await;
    let config = json!([{
        "name": "docs_echo",
        "description": "echoes",
        "input_schema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "url": server.url(),
        "mcp_tool": "echo",
        "tenants": ["acme"],
        "timeout_seconds": 20,
    }]);
    let bindings = load_config(&config.to_string()).expect("a valid config");
    let pool = HttpPool::new(&TlsOptions::default()).expect("a pool");
    let caller = Caller::new(pool, bindings, std::sync::Arc::new(EnvTokens)).expect("a caller");
    let mut first = CallContext::new("acme", "conversation-1", "call-1");
    first.trace_context = Some(context(CALL));
    let arguments = json!({"message": "hi"});
    let result = caller
        .call("docs_echo", &first, &arguments, |_| {}, None)
        .await;
    assert!(!result.is_error(), "{}", result.to_json_line());
    // The kept (2026-07-28) client does not send the first call's context with the next.
    let second = CallContext::new("acme", "conversation-1", "call-2");
    let result = caller
        .call("docs_echo", &second, &arguments, |_| {}, None)
        .await;
    assert!(!result.is_error(), "{}", result.to_json_line());
    assert_eq!(
        seen(&server),
        pairs(&[("server/discover", CALL), ("tools/call", CALL)])
    );
}

/// A bindings file with `echo` of the demo server at `url`.
fn bindings_file(url: &str, name: &str) -> PathBuf {
    let binding = json!([{
        "name": "echo",
        "description": "echoes",
        "input_schema": {"type": "object", "properties": {"message": {"type": "string"}}},
        "url": url,
        "mcp_tool": "echo",
        "tenants": ["local"],
        "timeout_seconds": 20,
    }]);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trace-context-{name}-{}.json", std::process::id()));
    std::fs::write(&path, binding.to_string()).expect("write the bindings");
    path
}

fn call(bindings: &Path, env: &[(&str, &str)], flags: &[&str]) -> Output {
    let mut command = Command::new(MCPWIRE);
    command
        .args(["call", "--bindings"])
        .arg(bindings)
        .args(["--tool", "echo", "--tenant", "local", "--args"])
        .arg(r#"{"message":"hi"}"#)
        .args(flags)
        .env_remove("TRACEPARENT")
        .env_remove("TRACESTATE")
        .env_remove("BAGGAGE");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run mcpwire call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcpwire_call_sends_the_environments_context_and_a_flag_wins() {
    let server = demo(Era::Modern).await;
    let bindings = bindings_file(&server.url(), "env");
    let env = [("TRACEPARENT", HOST), ("TRACESTATE", "congo=1")];
    let output = tokio::task::spawn_blocking({
        let bindings = bindings.clone();
        move || call(&bindings, &env, &[])
    })
    .await
    .expect("the call ran");
    assert!(output.status.success(), "{output:?}");
    let output = tokio::task::spawn_blocking({
        let bindings = bindings.clone();
        move || call(&bindings, &env, &["--traceparent", CALL])
    })
    .await
    .expect("the call ran");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        seen(&server),
        pairs(&[
            ("server/discover", HOST),
            ("tools/call", HOST),
            ("server/discover", CALL),
            ("tools/call", CALL),
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcpwire_call_drops_a_malformed_variable_and_refuses_a_malformed_flag() {
    let server = demo(Era::Modern).await;
    let bindings = bindings_file(&server.url(), "malformed");
    let zero = "00-00000000000000000000000000000000-b7ad6b7169203331-01";
    let output = tokio::task::spawn_blocking({
        let bindings = bindings.clone();
        move || call(&bindings, &[("TRACEPARENT", zero)], &[])
    })
    .await
    .expect("the call ran");
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("TRACEPARENT is malformed (the traceparent's trace id is all zeros)"),
        "{stderr}"
    );
    let output = tokio::task::spawn_blocking({
        let bindings = bindings.clone();
        move || {
            call(
                &bindings,
                &[("TRACEPARENT", HOST)],
                &["--traceparent", zero],
            )
        }
    })
    .await
    .expect("the call ran");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--traceparent is malformed"), "{stderr}");
    // The first call went out without a context; the second never went out.
    assert_eq!(seen(&server), Vec::<(String, String)>::new());
    assert_eq!(
        server.stats().modern_requests,
        2,
        "the first call's probe and call"
    );
}
