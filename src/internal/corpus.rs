//! Replays every checked-in fuzz corpus file through its target's harness, so the corpora are
//! regression tests on stable Rust too. Unit tests, so that the harnesses are compiled for them
//! without the `fuzzing` feature.

use std::path::Path;

fn replay(target: &str, harness: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("read corpus file");
        let outcome = std::panic::catch_unwind(|| harness(&input));
        assert!(outcome.is_ok(), "{target}: {} fails", path.display());
        count += 1;
    }
    assert!(count > 0, "{target}: empty corpus");
}

#[cfg(feature = "sse")]
#[test]
fn sse_decode_corpus() {
    replay("sse_decode", super::fuzz_sse_decode);
}

#[cfg(feature = "jsonrpc")]
#[test]
fn jsonrpc_decode_corpus() {
    replay("jsonrpc_decode", super::fuzz_jsonrpc_decode);
}

#[cfg(feature = "bindings")]
#[test]
fn call_result_corpus() {
    replay("call_result", super::fuzz_call_result);
}

#[cfg(feature = "bindings")]
#[test]
fn binding_config_corpus() {
    replay("binding_config", super::fuzz_binding_config);
}

#[cfg(feature = "mcp")]
#[test]
fn mcp_headers_corpus() {
    replay("mcp_headers", super::fuzz_mcp_headers);
}

#[cfg(feature = "client")]
#[test]
fn task_poll_corpus() {
    replay("task_poll", super::fuzz_task_poll);
}

#[cfg(feature = "client")]
#[test]
fn server_input_corpus() {
    replay("server_input", super::fuzz_server_input);
}

#[cfg(feature = "session")]
#[test]
fn mcp_era_corpus() {
    replay("mcp_era", super::fuzz_mcp_era);
}

#[cfg(feature = "session")]
#[test]
fn session_corpus() {
    replay("session", super::fuzz_session);
}

#[cfg(feature = "bindings")]
#[test]
fn http_response_corpus() {
    replay("http_response", super::fuzz_http_response);
}

#[cfg(feature = "bindings")]
#[test]
fn connection_corpus() {
    replay("connection", super::fuzz_connection);
}

#[cfg(feature = "auth")]
#[test]
fn auth_challenge_corpus() {
    replay("auth_challenge", super::fuzz_auth_challenge);
}

#[cfg(feature = "auth")]
#[test]
fn auth_dpop_corpus() {
    replay("auth_dpop", super::fuzz_auth_dpop);
}

#[cfg(feature = "auth")]
#[test]
fn auth_token_exchange_corpus() {
    replay("auth_token_exchange", super::fuzz_auth_token_exchange);
}

#[cfg(feature = "auth")]
#[test]
fn auth_documents_corpus() {
    replay("auth_documents", super::fuzz_auth_documents);
}
