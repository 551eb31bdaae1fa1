//! `mcpwire replay` and `mcpwire record` as processes: a fixture served to `mcpwire call`, a
//! request that does not match (a 500 with the diff, exit 1), and a recording made through the
//! proxy in front of a replay.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const MCPWIRE: &str = env!("CARGO_BIN_EXE_mcpwire");
const MCP_TOOLS: &str = env!("CARGO_BIN_EXE_mcp-tools");
const DEADLINE: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> PathBuf {
    crate::support::repo_root().join("fixtures").join(name)
}

/// Starts `mcpwire ARGS` and returns it with the URL it printed first.
fn start(args: &[&str]) -> (Child, String, BufReader<ChildStdout>) {
    let mut child = Command::new(MCPWIRE)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpwire");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read the URL");
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "printed {line:?}");
    (child, url, stdout)
}

/// `mcpwire replay` of a fixture that stops after 300 ms of silence (used where a request
/// does not match, so `--once` would wait for an exchange that is never asked for).
fn replay_until_idle(dir: &Path) -> (Child, String, BufReader<ChildStdout>) {
    start(&[
        "replay",
        "--fixtures",
        dir.to_str().unwrap(),
        "--idle-ms",
        "300",
    ])
}

/// Waits for the child to exit (killing it at the deadline) and collects its stderr.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcpwire did not exit within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    (status, stderr)
}

/// Writes the binding of `expect.json`'s first call step, pointed at `url`, into a file.
fn binding_file(fixture_dir: &Path, url: &str, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture_dir.join("expect.json")).expect("expect.json");
    let expect: Value = serde_json::from_str(&text.replace("{{url}}", url)).expect("json");
    let binding = expect["steps"][0]["call"]["binding"].clone();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "cli-record-replay-{name}-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, serde_json::to_string(&[binding]).expect("json")).expect("write");
    path
}

fn call(bindings: &Path, arguments: &str) -> Output {
    Command::new(MCPWIRE)
        .args(["call", "--bindings"])
        .arg(bindings)
        .args([
            "--tool",
            "echo_text",
            "--tenant",
            "local",
            "--args",
            arguments,
        ])
        .args(["--session-id", "fixture", "--call-id", "c1"])
        // The fixtures were recorded from a 2025-era client.
        .args(["--era", "2025"])
        .output()
        .expect("run mcpwire call")
}

fn last_line(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().expect("a line")).expect("a JSON line")
}

fn expected_result(fixture_dir: &Path) -> Value {
    let text = std::fs::read_to_string(fixture_dir.join("expect.json")).expect("expect.json");
    let expect: Value = serde_json::from_str(&text).expect("json");
    expect["steps"][0]["result"].clone()
}

#[test]
fn replay_serves_a_fixture_to_mcpwire_call_and_exits_0() {
    let dir = fixture("py-v2-sse-text");
    let (replay, url, _stdout) = start(&["replay", "--fixtures", dir.to_str().unwrap(), "--once"]);
    let bindings = binding_file(&dir, &url, "ok");
    let output = call(&bindings, r#"{"text":"hello fixtures"}"#);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(last_line(&output), expected_result(&dir));
    let (status, stderr) = finish(replay);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("4 request(s) answered, 0 did not match, 0 recorded exchange(s) unused"),
        "{stderr}"
    );
}

#[test]
fn replay_answers_a_request_that_does_not_match_with_its_diff_and_exits_1() {
    let dir = fixture("py-v2-sse-text");
    let (replay, url, _stdout) = replay_until_idle(&dir);
    let bindings = binding_file(&dir, &url, "mismatch");
    let output = call(&bindings, r#"{"text":"something else"}"#);
    let result = last_line(&output);
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("500")),
        "{result}"
    );
    let (status, stderr) = finish(replay);
    assert_eq!(status, Some(1), "{stderr}");
    let diff = r#"body $.params.arguments.text: expected "hello fixtures", got "something else""#;
    assert!(
        stderr.contains("does not match the expected exchange 2") && stderr.contains(diff),
        "{stderr}"
    );
    assert!(
        stderr.contains("exchange 2 was never requested: POST /mcp (tools/call)"),
        "{stderr}"
    );
}

/// `mcpwire replay --once` of a fixture with `mcpwire record --once` in front of it.
struct RecordedReplay {
    replay: Child,
    record: Child,
    /// Where the client goes: the recorder.
    proxy_url: String,
    /// The new recording's directory.
    out: PathBuf,
    _stdouts: [BufReader<ChildStdout>; 2],
}

fn record_a_replay(dir: &Path, name: &str, record_flags: &[&str]) -> RecordedReplay {
    let (replay, replay_url, replay_out) =
        start(&["replay", "--fixtures", dir.to_str().unwrap(), "--once"]);
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-record-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut args = vec![
        "record",
        "--upstream",
        &replay_url,
        "--out",
        out.to_str().unwrap(),
        "--once",
    ];
    args.extend_from_slice(record_flags);
    let (record, proxy_url, record_out) = start(&args);
    RecordedReplay {
        replay,
        record,
        proxy_url,
        out,
        _stdouts: [replay_out, record_out],
    }
}

#[test]
fn record_in_front_of_a_replay_writes_the_same_conversation() {
    let dir = fixture("py-v2-sse-text");
    let chain = record_a_replay(&dir, "record", &["--mode", "a replay of py-v2-sse-text"]);
    let (replay, record, out) = (chain.replay, chain.record, chain.out);
    let bindings = binding_file(&dir, &chain.proxy_url, "record");
    let output = call(&bindings, r#"{"text":"hello fixtures"}"#);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(last_line(&output), expected_result(&dir));
    let (status, stderr) = finish(record);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("recorded 4 exchange(s)"), "{stderr}");
    let (status, stderr) = finish(replay);
    assert_eq!(status, Some(0), "{stderr}");

    let original = mcpwire::fixture::load_exchanges(&dir).expect("original");
    let again = mcpwire::fixture::load_exchanges(&out).expect("new recording");
    assert_eq!(again.len(), original.len());
    for (a, b) in original.iter().zip(&again) {
        assert_eq!(a.request.body, b.request.body);
        let (a, b) = (a.response.as_ref().unwrap(), b.response.as_ref().unwrap());
        assert_eq!(
            (&a.status, &a.headers, a.end),
            (&b.status, &b.headers, b.end)
        );
        assert_eq!(
            mcpwire::fixture::body_bytes(a),
            mcpwire::fixture::body_bytes(b)
        );
    }
    let provenance = mcpwire::fixture::load_provenance(&out).expect("provenance");
    assert_eq!(provenance.server.name, "mcpwire-py-test-server");
    assert_eq!(provenance.mode, "a replay of py-v2-sse-text");
    assert!(!provenance.constructed);
    assert!(
        provenance.command.starts_with("mcpwire record --upstream "),
        "{}",
        provenance.command
    );
}

/// `mcp-tools` against a replay of a discovery fixture, with `extra` flags.
fn discover_from(dir: &Path, url: &str, extra: &[&str]) -> (Output, Value) {
    let text = std::fs::read_to_string(dir.join("expect.json")).expect("expect.json");
    let expect: Value = serde_json::from_str(&text.replace("{{url}}", url)).expect("json");
    let step = &expect["steps"][0];
    let tools: Vec<&str> = step["discover"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t.as_str().expect("a name"))
        .collect();
    let output = Command::new(MCP_TOOLS)
        .args(["-url", url, "-tenant", "local", "-tools", &tools.join(",")])
        .args(extra)
        .output()
        .expect("run mcp-tools");
    (output, step["bindings"].clone())
}

#[test]
fn mcp_tools_discovers_from_recordings_of_either_era() {
    // Recorded from a client that probed: mcp-tools probes the same way. Recorded from a
    // 2025-era client: `-era 2025` opens with initialize as it did.
    for (name, extra) in [
        ("ts2-2026-discovery", &[][..]),
        ("py-v2-2026-discovery", &["-era", "auto"][..]),
        ("py-v2-sse-discovery", &["-era", "2025"][..]),
    ] {
        let dir = fixture(name);
        let (replay, url, _stdout) =
            start(&["replay", "--fixtures", dir.to_str().unwrap(), "--once"]);
        let (output, bindings) = discover_from(&dir, &url, extra);
        assert!(output.status.success(), "{name}: {output:?}");
        let printed: Value = serde_json::from_slice(&output.stdout).expect("bindings JSON");
        assert_eq!(printed, bindings, "{name}");
        let (status, stderr) = finish(replay);
        assert_eq!(status, Some(0), "{name}: {stderr}");
    }
    // Without it, the probe is not in a 2025 recording: the replay answers 500 with the diff.
    let dir = fixture("py-v2-sse-discovery");
    let (replay, url, _stdout) = replay_until_idle(&dir);
    let (output, _) = discover_from(&dir, &url, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let (status, stderr) = finish(replay);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains(r#"header mcp-method: expected (absent), got "server/discover""#),
        "{stderr}"
    );
    // An era that is neither auto, 2025 nor a stateless revision is a usage error.
    for extra in [&["-era", "2024"][..], &["-era", "2025-11-25"][..]] {
        let (output, _) = discover_from(&dir, "http://127.0.0.1:9/mcp", extra);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {output:?}");
    }
}

#[test]
fn record_in_front_of_a_modern_replay_says_the_client_spoke_2026_07_28() {
    let dir = fixture("ts2-2026-region-echo");
    let chain = record_a_replay(&dir, "modern", &[]);
    let (replay, record, out) = (chain.replay, chain.record, chain.out);
    let bindings = binding_file(&dir, &chain.proxy_url, "modern");
    let text = std::fs::read_to_string(dir.join("expect.json")).expect("expect.json");
    let expect: Value = serde_json::from_str(&text).expect("json");
    let arguments = expect["steps"][0]["call"]["arguments"].to_string();
    // No --era: the client probes, as the recording's client did.
    let output = Command::new(MCPWIRE)
        .args(["call", "--bindings"])
        .arg(&bindings)
        .args(["--tool", "region_echo", "--tenant", "local", "--args"])
        .arg(&arguments)
        .args(["--session-id", "fixture", "--call-id", "c1"])
        .output()
        .expect("run mcpwire call");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(last_line(&output), expected_result(&dir));
    let (status, stderr) = finish(record);
    assert_eq!(status, Some(0), "{stderr}");
    let (status, stderr) = finish(replay);
    assert_eq!(status, Some(0), "{stderr}");

    let provenance = mcpwire::fixture::load_provenance(&out).expect("provenance");
    assert_eq!(provenance.server.name, "mcpwire-ts2-test-server");
    assert_eq!(provenance.protocol.as_deref(), Some("2026-07-28"));
    let again = mcpwire::fixture::load_exchanges(&out).expect("new recording");
    let header = |exchanges: &[mcpwire::fixture::Exchange]| -> Vec<String> {
        exchanges
            .iter()
            .flat_map(|e| &e.request.headers)
            .filter(|(n, _)| n.eq_ignore_ascii_case("mcp-param-region"))
            .map(|(_, v)| v.clone())
            .collect()
    };
    let original = mcpwire::fixture::load_exchanges(&dir).expect("original");
    assert_eq!(header(&again), header(&original));
    assert_eq!(header(&again), ["=?base64?U8OjbyBQYXVsbw==?="]);
}
