//! `mcpwire sse` against real server captures and bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use std::io::Write;

fn mcpwire(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpwire"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcpwire");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The child may exit before reading everything (usage errors); that is fine.
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().expect("wait for mcpwire");
    writer.join().expect("stdin writer");
    output
}

fn captures() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read captures dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "txt") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &crate::support::repo_root().join("tests/data/peer-captures"),
        &mut found,
    );
    found.sort();
    found
}

/// The body of a `curl -i` capture: the bytes after the first blank line of the header block.
fn body(capture: &Path) -> Vec<u8> {
    let raw = std::fs::read(capture).expect("read capture");
    let start = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header block")
        + 4;
    raw[start..].to_vec()
}

fn events(stdout: &[u8]) -> Vec<serde_json::Value> {
    std::str::from_utf8(stdout)
        .expect("utf-8 output")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

#[test]
fn every_real_capture_decodes_the_same_whole_and_byte_at_a_time() {
    let captures = captures();
    assert!(captures.len() >= 60, "captures missing: {}", captures.len());
    let mut with_events = 0;
    let total = captures.len();
    for capture in captures {
        let body = body(&capture);
        let whole = mcpwire(&["sse"], &body);
        let bytewise = mcpwire(&["sse", "--chunk", "1"], &body);
        let odd = mcpwire(&["sse", "-", "--chunk=7"], &body);
        assert!(whole.status.success(), "{}: {whole:?}", capture.display());
        assert_eq!(whole.stdout, bytewise.stdout, "{}", capture.display());
        assert_eq!(whole.stdout, odd.stdout, "{}", capture.display());
        let events = events(&whole.stdout);
        with_events += usize::from(!events.is_empty());
        for event in &events {
            // Every non-empty message event of a real MCP server carries one JSON-RPC message.
            if let Some(data) = event["data"].as_str().filter(|d| !d.is_empty()) {
                let message: serde_json::Value = serde_json::from_str(data)
                    .unwrap_or_else(|e| panic!("{}: {data}: {e}", capture.display()));
                assert!(
                    message["jsonrpc"] == "2.0" || message.is_array(),
                    "{}: {data}",
                    capture.display()
                );
                assert_eq!(event["event"], "message", "{}", capture.display());
            }
        }
    }
    // Only the three idle GET streams (keepalive comments or nothing) dispatch no event.
    assert_eq!(with_events, total - 3);
}

fn capture(path: &str) -> PathBuf {
    crate::support::repo_root()
        .join("tests/data/peer-captures")
        .join(path)
}

#[test]
fn python_crlf_progress_stream_decodes_to_four_messages() {
    let out = mcpwire(&["sse"], &body(&capture("py/04-tools-call-progress.txt")));
    let events = events(&out.stdout);
    assert_eq!(events.len(), 4);
    assert!(
        events
            .iter()
            .all(|e| e["id"] == "" && e["event"] == "message")
    );
    assert!(events[0]["data"].as_str().unwrap().contains("step 1 of 3"));
    assert!(
        events[3]["data"]
            .as_str()
            .unwrap()
            .contains("done after 3 steps")
    );
}

#[test]
fn typescript_stream_starts_with_a_priming_event() {
    let out = mcpwire(
        &["sse"],
        &body(&capture("everything/04-tools-call-progress.txt")),
    );
    let events = events(&out.stdout);
    assert_eq!(events.len(), 5);
    assert_eq!(events[0]["data"], "");
    assert_eq!(events[0]["id"], "e6b9d90b-59a8-4774-8b33-dc5b2bfa3888");
    assert_eq!(events[4]["id"], "41487de0-93f5-4492-aee8-e367e1f286c5");
    assert!(events[4]["data"].as_str().unwrap().contains("\"id\":3"));
}

#[test]
fn event_store_priming_event_reports_retry_at_the_end() {
    let out = mcpwire(
        &["sse", "--chunk", "1"],
        &body(&capture("py-event-store/04-tools-call-progress.txt")),
    );
    let events = events(&out.stdout);
    let last = events.last().expect("events");
    assert!(
        last.get("retry").and_then(|r| r.as_u64()).is_some(),
        "{last}"
    );
    assert_eq!(events[0]["data"], "");
    assert!(events[0]["id"].as_str().unwrap().starts_with("ev-"));
}

#[test]
fn file_argument_and_stdin_agree() {
    let path = std::env::temp_dir().join(format!("mcpwire-sse-{}.txt", std::process::id()));
    std::fs::write(&path, b"event: a\r\ndata: 1\r\n\r\nretry: 20\n").unwrap();
    let from_file = mcpwire(&["sse", path.to_str().unwrap()], b"");
    let from_stdin = mcpwire(&["sse"], b"event: a\r\ndata: 1\r\n\r\nretry: 20\n");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(from_file.stdout, from_stdin.stdout);
    assert_eq!(
        String::from_utf8(from_file.stdout).unwrap(),
        "{\"event\":\"a\",\"data\":\"1\",\"id\":\"\"}\n{\"retry\":20}\n"
    );
}

#[test]
fn a_stream_over_the_limit_exits_1_after_printing_earlier_events() {
    let out = mcpwire(
        &["sse", "--max-line-bytes", "16"],
        b"data: short\n\ndata: this line is far too long\n\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(events(&out.stdout).len(), 1);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("16-byte limit"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["sse", "--chunk", "0"][..],
        &["sse", "--chunk"],
        &["sse", "--bogus"],
        &["sse", "a", "b"],
        &["frobnicate"],
    ] {
        let out = mcpwire(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn missing_file_exits_1_and_help_exits_0() {
    let out = mcpwire(&["sse", "/nonexistent/capture.sse"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/capture.sse"));
    let help = mcpwire(&["--help"], b"");
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("mcpwire sse"));
}
