//! Ctrl-C during `mcpwire call`: the call is cancelled on the wire (`notifications/cancelled`,
//! then the session's `DELETE`), the last stdout line is a failed `tool.result` whose outcome
//! is unknown (the tool was running), and the process exits 1 at once. Everything runs as
//! processes: `mcpwire demo-server`, `mcp-tools` for the bindings, `mcpwire call`.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const MCPWIRE: &str = env!("CARGO_BIN_EXE_mcpwire");
const MCP_TOOLS: &str = env!("CARGO_BIN_EXE_mcp-tools");
/// How long starting a process and reading its first output may take.
const STARTUP: Duration = Duration::from_secs(20);
/// How soon after SIGINT `mcpwire call` must have exited.
const AFTER_INTERRUPT: Duration = Duration::from_secs(3);

/// Kills and reaps a child process when dropped (the test's end or a panic).
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads `child`'s stdout line by line on a thread; the channel closes at EOF.
fn stdout_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines, receiver) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

/// Reads all of `child`'s stderr on a thread.
fn stderr_text(child: &mut Child) -> thread::JoinHandle<String> {
    let mut stderr = child.stderr.take().expect("piped stderr");
    thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    })
}

fn bindings_file(url: &str) -> PathBuf {
    let output = Command::new(MCP_TOOLS)
        .args(["-url", url, "-tenant", "t", "-tools", "progress_report"])
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-tools");
    assert!(
        output.status.success(),
        "mcp-tools failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-interrupt-{}.json", std::process::id()));
    std::fs::write(&path, &output.stdout).expect("write the bindings file");
    path
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
}

#[test]
fn cli_ctrl_c_cancels_the_call() {
    // The 2025 path, where a cancelled call is a notifications/cancelled and the session
    // ends with DELETE (at 2026-07-28 the client closes the call's stream instead).
    let mut server = Command::new(MCPWIRE)
        .args(["demo-server", "--era", "2025"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mcpwire demo-server");
    let server_lines = stdout_lines(&mut server);
    let _server = ChildGuard(server);
    let url = server_lines
        .recv_timeout(STARTUP)
        .expect("the demo server should print its URL");
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    let bindings = bindings_file(&url);

    let mut call = Command::new(MCPWIRE)
        .args(["call", "--bindings"])
        .arg(&bindings)
        .args([
            "--tool",
            "progress_report",
            "--tenant",
            "t",
            "--args",
            r#"{"steps":20,"delay_ms":500}"#,
            "-v",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpwire call");
    let pid = call.id();
    let lines = stdout_lines(&mut call);
    let wire_log = stderr_text(&mut call);
    let mut call = ChildGuard(call);

    // The tool is running once it reports progress.
    let first = lines
        .recv_timeout(STARTUP)
        .expect("a tool.progress line should come first");
    assert_eq!(json(&first)["type"], "tool.progress", "{first}");
    let interrupted = Instant::now();
    let signalled = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(signalled.success(), "kill -INT {pid} failed");

    let status = loop {
        if let Some(status) = call.0.try_wait().expect("wait for mcpwire call") {
            break status;
        }
        assert!(
            interrupted.elapsed() < AFTER_INTERRUPT,
            "mcpwire call still running {AFTER_INTERRUPT:?} after SIGINT"
        );
        thread::sleep(Duration::from_millis(10));
    };
    let elapsed = interrupted.elapsed();
    let mut stdout: Vec<String> = vec![first];
    stdout.extend(lines.iter());
    let wire_log = wire_log.join().expect("the stderr reader");
    std::fs::remove_file(&bindings).ok();

    assert_eq!(
        status.code(),
        Some(1),
        "exit status {status} after {elapsed:?}; stdout {stdout:#?}"
    );
    let last = json(stdout.last().expect("some stdout"));
    assert_eq!(last["type"], "tool.result", "{stdout:#?}");
    assert_eq!(last["is_error"], true, "{last}");
    assert_eq!(last["unknown_outcome"], true, "{last}");
    assert_eq!(last["error"]["kind"], "cancelled", "{last}");
    // Everything before it is progress, and it came to a stop short of the 20 steps.
    let progress = &stdout[..stdout.len() - 1];
    for line in progress {
        assert_eq!(json(line)["type"], "tool.progress", "{stdout:#?}");
    }
    assert!(progress.len() < 20, "{stdout:#?}");
    assert_eq!(json(progress[0].as_str())["call_id"], last["call_id"]);

    // On the wire: the request was cancelled, then the session ended.
    let cancelled = wire_log
        .lines()
        .position(|l| l.starts_with("mcpwire: > POST") && l.contains("notifications/cancelled"))
        .unwrap_or_else(|| panic!("no notifications/cancelled was sent:\n{wire_log}"));
    let deleted = wire_log
        .lines()
        .position(|l| l.starts_with("mcpwire: > DELETE"))
        .unwrap_or_else(|| panic!("the session was not ended with DELETE:\n{wire_log}"));
    assert!(cancelled < deleted, "{wire_log}");
}
