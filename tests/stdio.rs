//! The stdio transport against misbehaving servers: `tests/peers/stdio_fixtures/fake_server.py`
//! (standard-library Python) in one mode per test. Banners and other non-JSON-RPC stdout lines
//! are skipped and logged, stderr is logging, shutdown escalates from closing stdin to
//! SIGTERM to SIGKILL of the whole process group, an overlong line fails the call without
//! being buffered, a server that dies mid-call fails the call at once, and the child's
//! environment holds only the basics plus what the configuration names.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mcpwire::ErrorKind;
use mcpwire::client::{CallOptions, Client, ClientOptions, InputFuture, InputHandler};
use mcpwire::mcp::InputRequest;
use mcpwire::mcp::{CallToolResult, ClientCapabilities, ProtocolVersion};
use mcpwire::transport::stdio::StdioConfig;
use serde_json::{Value, json};

use crate::support::DEMO_TOOLS;

/// No step of a test may take longer than this.
const STEP: Duration = Duration::from_secs(10);
/// What "promptly" means for a failure that needs no deadline to pass.
const PROMPT: Duration = Duration::from_secs(5);
/// The shutdown grace of the tests that time `close()`.
const GRACE: Duration = Duration::from_millis(300);
/// Scheduling slack on a busy two-core machine.
const SLACK: Duration = Duration::from_secs(1);

/// The environment variable of the environment test: set in the test process, never passed.
const SECRET_VAR: &str = "MCPWIRE_TEST_SECRET";
const SECRET_VALUE: &str = "stdio-secret-7c1e0b";
/// What every stdio server gets (`BASE_ENV` in `src/transport/stdio.rs`).
const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];

/// The Python interpreter itself, not a version-manager shim (pyenv's shim is a shell script
/// that would add its own variables to the server's environment and slow every start).
fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let output = std::process::Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .expect("python3 is needed by the stdio tests");
            assert!(output.status.success(), "python3 failed: {output:?}");
            PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
        })
        .clone()
}

fn fixture_config(mode: &str) -> StdioConfig {
    let script = crate::support::repo_root().join("tests/peers/stdio_fixtures/fake_server.py");
    let mut config = StdioConfig::new(
        python(),
        vec![script.display().to_string(), mode.to_owned()],
    );
    config.shutdown_grace = GRACE;
    config
}

/// Collects what the transport logs (stderr lines and notes about skipped stdout lines).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    /// Attaches this log to `config.stderr_log`.
    fn attach(&self, config: &mut StdioConfig) {
        let lines = self.0.clone();
        config.stderr_log = Some(Arc::new(move |line: &str| {
            lines.lock().unwrap().push(line.to_owned());
        }));
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The first line matching `wanted`, waiting for it up to [`STEP`] (stderr is read by a
    /// task of its own, so it may trail the answers on stdout).
    async fn wait_for(&self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| wanted(l)) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "no log line {what} within {STEP:?}: {:#?}",
                self.lines()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn connect(config: StdioConfig) -> Client {
    tokio::time::timeout(
        STEP,
        Client::connect_stdio(config, ClientOptions::default()),
    )
    .await
    .expect("connect took too long")
    .unwrap_or_else(|e| panic!("connect over stdio: {} ({e})", e.kind()))
}

async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, mcpwire::Error> {
    let mut options = CallOptions::default();
    options.timeout = Duration::from_secs(30);
    tokio::time::timeout(
        STEP,
        client.call_tool(tool, arguments.as_object().cloned(), options),
    )
    .await
    .expect("the call outlived its step deadline")
}

fn only_text(result: &CallToolResult) -> &str {
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(result.content.len(), 1, "{result:?}");
    result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("a text block expected: {result:?}"))
}

async fn close_timed(client: Client) -> Duration {
    let started = Instant::now();
    tokio::time::timeout(STEP, client.close())
        .await
        .expect("close() hung");
    started.elapsed()
}

/// Whether process `pid` still exists: `kill -0` succeeds. A zombie counts as gone: an
/// orphaned grandchild is reparented to PID 1, which in a container may never reap it.
fn alive(pid: u32) -> bool {
    let signalled = std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run kill")
        .success();
    if !signalled {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    state != Some('Z')
}

/// Waits (up to [`SLACK`]) for `pid` to be gone; SIGKILL is asynchronous, so a just-killed
/// grandchild may take a moment to exit.
async fn assert_gone(pid: u32, what: &str) {
    let deadline = Instant::now() + SLACK;
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) outlived close()"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Kills a server's whole process group if the test panics before `close()` did it, so a
/// failed run leaves no `sleep 600` behind.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let (Some(pid), true) = (self.0, std::thread::panicking()) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
        }
    }
}

/// The value of `name=` in a line like `pid=12 child=34`.
fn field(line: &str, name: &str) -> u32 {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_banner_and_stderr_are_logged_not_errors() {
    let log = Log::default();
    let mut config = fixture_config("chatty");
    log.attach(&mut config);
    // A polite server exits at EOF: close() must not wait out a long grace.
    config.shutdown_grace = Duration::from_secs(5);
    let client = connect(config).await;
    assert_eq!(
        client
            .server()
            .expect("the server described itself")
            .server_info
            .name,
        "fake-stdio-chatty"
    );
    let tools = tokio::time::timeout(STEP, client.list_tools())
        .await
        .expect("tools/list took too long")
        .expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "env"]);
    let echo = call(&client, "echo", json!({"message": "hi"}))
        .await
        .expect("echo");
    assert_eq!(only_text(&echo), "Echo: hi");
    tokio::time::timeout(STEP, client.ping())
        .await
        .expect("ping took too long")
        .expect("ping");

    // Each stdout line that is not JSON-RPC was skipped, and said so.
    for skipped in [
        "fake-stdio-server 0.0.1 starting up",
        "WARNING: this line is not JSON {",
        r#"{"hello": "a JSON line that is not JSON-RPC"}"#,
    ] {
        let line = log
            .wait_for(&format!("about skipping {skipped:?}"), |l| {
                l.contains(skipped)
            })
            .await;
        assert!(line.contains("skipped"), "{line:?}");
        assert!(!line.starts_with("stderr: "), "{line:?}");
    }
    // stderr arrives line by line, marked as such.
    for wanted in [
        "stderr: chatty: started",
        "stderr: chatty: got initialize",
        "stderr: chatty: got tools/list",
        "stderr: chatty: got tools/call",
        "stderr: chatty: got ping",
    ] {
        log.wait_for(wanted, |l| l == wanted).await;
    }
    let elapsed = close_timed(client).await;
    assert!(
        elapsed < Duration::from_secs(2),
        "a server that exits at stdin EOF was not waited for briefly: {elapsed:?}"
    );
    log.wait_for("about stdin closing", |l| {
        l == "stderr: chatty: stdin closed, exiting"
    })
    .await;
    // The blank stdout line was skipped silently; nothing else was skipped.
    let skipped: Vec<String> = log
        .lines()
        .into_iter()
        .filter(|l| !l.starts_with("stderr: "))
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_stubborn_server_and_its_child_are_killed() {
    let log = Log::default();
    let mut config = fixture_config("stubborn");
    log.attach(&mut config);
    let client = connect(config).await;
    let line = log.wait_for("with the pids", |l| l.contains("pid=")).await;
    let (pid, child) = (field(&line, "pid"), field(&line, "child"));
    let _guard = GroupGuard(Some(pid));
    assert!(alive(pid) && alive(child), "{line}");
    let echo = call(&client, "echo", json!({"message": "still here"}))
        .await
        .expect("echo");
    assert_eq!(only_text(&echo), "Echo: still here");

    // Closing stdin is ignored (one grace), SIGTERM is ignored (another), SIGKILL works.
    let elapsed = close_timed(client).await;
    assert!(
        elapsed >= 2 * GRACE - Duration::from_millis(20),
        "close() returned before the server exited: {elapsed:?}"
    );
    assert!(
        elapsed < 2 * GRACE + SLACK,
        "close() took {elapsed:?} with a {GRACE:?} grace"
    );
    assert_gone(pid, "the server").await;
    assert_gone(child, "the server's child (same process group)").await;
    log.wait_for("about ignoring EOF", |l| {
        l == "stderr: stubborn: stdin closed, sleeping on"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_ignoring_eof_is_terminated() {
    let log = Log::default();
    let mut config = fixture_config("ignores-eof");
    log.attach(&mut config);
    let client = connect(config).await;
    let line = log.wait_for("with the pid", |l| l.contains("pid=")).await;
    let pid = field(&line, "pid");
    let _guard = GroupGuard(Some(pid));
    let elapsed = close_timed(client).await;
    // One grace for stdin EOF, then SIGTERM ends it at once.
    assert!(
        elapsed >= GRACE - Duration::from_millis(20),
        "close() returned before the server exited: {elapsed:?}"
    );
    assert!(
        elapsed < GRACE + SLACK,
        "close() took {elapsed:?} with a {GRACE:?} grace; SIGTERM should have ended it"
    );
    assert_gone(pid, "the server").await;
}

/// Calls `echo` on a server in a `huge` mode with a 64 KiB line limit: the call fails at
/// once and the 2 MiB line is never read whole. Returns the client, still open.
async fn overlong_line(mode: &str) -> Client {
    let log = Log::default();
    let mut config = fixture_config(mode);
    log.attach(&mut config);
    config.max_line_bytes = 64 * 1024;
    let client = connect(config).await;
    let started = Instant::now();
    let error = call(&client, "echo", json!({"message": "hi"}))
        .await
        .expect_err("a 2 MiB line must not be accepted");
    assert!(
        started.elapsed() < PROMPT,
        "the call failed only after {:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.outcome_unknown(), "the request was sent: {error}");
    // The client stopped reading and closed its end: the writer got EPIPE long before the
    // 2 MiB were through, so at most a few buffers' worth were ever read.
    let line = log
        .wait_for("from the writer", |l| l.starts_with("stderr: huge: "))
        .await;
    let written: u64 = line
        .rsplit(' ')
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line:?}"));
    assert!(line.contains("pipe broke"), "{line:?}");
    assert!(written < 1024 * 1024, "{line:?}");
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_overlong_line_fails_the_call() {
    // This server exits at stdin EOF, so close() is quick.
    let client = overlong_line("huge").await;
    let elapsed = close_timed(client).await;
    assert!(elapsed < GRACE + SLACK, "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_close_after_overlong_line_stops_a_lingering_server() {
    // The same, but the server ignores stdin EOF: close() must still escalate to SIGTERM.
    let client = overlong_line("huge-lingers").await;
    let elapsed = close_timed(client).await;
    assert!(elapsed < 2 * GRACE + SLACK, "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_close_stops_a_server_that_closed_its_stdout() {
    let log = Log::default();
    let mut config = fixture_config("closes-stdout");
    log.attach(&mut config);
    let client = connect(config).await;
    let started = Instant::now();
    let error = call(&client, "echo", json!({"message": "hi"}))
        .await
        .expect_err("the server closed its stdout without answering");
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    assert_eq!(error.kind(), ErrorKind::ConnectionLost, "{error}");
    assert!(error.outcome_unknown(), "the request was sent: {error}");
    log.wait_for("about stdout", |l| {
        l == "stderr: closes-stdout: stdout closed, sleeping on"
    })
    .await;
    // It is alive and ignores stdin EOF (it is not reading): only SIGTERM ends it.
    let elapsed = close_timed(client).await;
    assert!(elapsed < 2 * GRACE + SLACK, "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_exiting_mid_call_fails_the_call() {
    let client = connect(fixture_config("exit-on-call")).await;
    let started = Instant::now();
    let error = call(&client, "echo", json!({"message": "hi"}))
        .await
        .expect_err("the server exited without answering");
    assert!(
        started.elapsed() < PROMPT,
        "the call failed only after {:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), ErrorKind::ConnectionLost, "{error}");
    assert!(error.outcome_unknown(), "the request was sent: {error}");
    let elapsed = close_timed(client).await;
    assert!(elapsed < GRACE, "the server is already gone: {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_exiting_after_initialize_fails_the_next_call() {
    let client = connect(fixture_config("exit-after-init")).await;
    let started = Instant::now();
    let error = call(&client, "echo", json!({"message": "hi"}))
        .await
        .expect_err("the server is gone");
    assert!(
        started.elapsed() < PROMPT,
        "the call failed only after {:?}",
        started.elapsed()
    );
    // Depending on whether the call was sent before the exit was noticed, it was lost on the
    // way or refused by a closed session; either way it fails at once and says so.
    match error.kind() {
        ErrorKind::ConnectionLost => assert!(error.outcome_unknown(), "{error}"),
        ErrorKind::Closed | ErrorKind::Refused => assert!(!error.outcome_unknown(), "{error}"),
        other => panic!("{other}: {error}"),
    }
    let elapsed = close_timed(client).await;
    assert!(elapsed < GRACE, "the server is already gone: {elapsed:?}");
}

/// The environment the `env` tool reports.
async fn child_environment(config: StdioConfig) -> BTreeMap<String, String> {
    let client = connect(config).await;
    let result = call(&client, "env", json!({})).await.expect("env");
    let environment = serde_json::from_str(only_text(&result)).expect("the env tool's JSON");
    close_timed(client).await;
    environment
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_child_sees_only_basics_and_named_variables() {
    if std::env::var_os(SECRET_VAR).is_none() {
        // Setting a variable in this multi-threaded process would race with every other
        // test; run this test again in a child test process that has it from the start.
        let exe = std::env::current_exe().expect("the test binary");
        let mut rerun = tokio::process::Command::new(exe);
        rerun
            .args([
                "stdio::stdio_child_sees_only_basics_and_named_variables",
                "--exact",
                "--test-threads=1",
            ])
            .env(SECRET_VAR, SECRET_VALUE)
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(60), rerun.output())
            .await
            .expect("the rerun took too long")
            .expect("rerun the test binary");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("test result: ok. 1 passed"),
            "the rerun with {SECRET_VAR} set failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let host: BTreeMap<String, String> = std::env::vars().collect();

    // Nothing named: the basics only, and the secret stays home.
    let mut config = fixture_config("polite");
    config.env = vec![("MCPWIRE_PASSED".to_owned(), "passed-value".to_owned())];
    let seen = child_environment(config).await;
    assert!(!seen.contains_key(SECRET_VAR), "{seen:#?}");
    for (name, value) in &seen {
        if name == "MCPWIRE_PASSED" {
            assert_eq!(value, "passed-value");
            continue;
        }
        assert!(
            BASE_ENV.contains(&name.as_str()),
            "{name} reached the child without being named: {seen:#?}"
        );
        assert_eq!(host.get(name), Some(value), "{name} should be the host's");
    }
    assert!(seen.contains_key("MCPWIRE_PASSED"), "{seen:#?}");
    for name in BASE_ENV {
        assert_eq!(
            seen.get(*name),
            host.get(*name),
            "{name} should pass through"
        );
    }

    // Named in the configuration, it arrives. Its name says it is a credential, so the value
    // the server echoes comes back redacted: the whole value matched, so it arrived intact.
    let mut config = fixture_config("polite");
    config.env = vec![(SECRET_VAR.to_owned(), SECRET_VALUE.to_owned())];
    let seen = child_environment(config).await;
    assert_eq!(seen.get(SECRET_VAR).map(String::as_str), Some("<redacted>"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_passed_to_a_stdio_server_do_not_come_back() {
    let mut config = fixture_config("polite");
    config.env = vec![
        ("SERVICE_API_KEY".to_owned(), SECRET_VALUE.to_owned()),
        ("SERVICE_REGION".to_owned(), "eu-west-1-region".to_owned()),
    ];
    let log = Log::default();
    log.attach(&mut config);
    let trace = Log::default();
    let lines = trace.0.clone();
    config.wire_log = Some(Arc::new(move |line: &str| {
        lines.lock().unwrap().push(line.to_owned());
    }));
    let client = connect(config).await;
    // The server echoes what it is sent: a result quoting the credential.
    let echoed = call(
        &client,
        "echo",
        json!({"message": format!("key={SECRET_VALUE}")}),
    )
    .await
    .expect("echo");
    assert_eq!(only_text(&echoed), "Echo: key=<redacted>");
    // Its environment: the credential redacted, a variable named otherwise left alone.
    let result = call(&client, "env", json!({})).await.expect("env");
    let seen: BTreeMap<String, String> =
        serde_json::from_str(only_text(&result)).expect("the env tool's JSON");
    assert_eq!(seen["SERVICE_API_KEY"], "<redacted>");
    assert_eq!(seen["SERVICE_REGION"], "eu-west-1-region");
    close_timed(client).await;
    // The wire trace carried the credential both ways; the log shows neither.
    let traced = trace.lines().join("\n");
    assert!(traced.contains("<redacted>"), "{traced}");
    for line in trace.lines().iter().chain(log.lines().iter()) {
        assert!(!line.contains(SECRET_VALUE), "leaked: {line}");
    }
}

// --- the stdio demo server (`mcpwire demo-server --stdio`) -----------------------------------

/// `mcpwire demo-server --stdio`, the crate's own stdio server (no Python needed).
fn demo_config() -> StdioConfig {
    demo_config_with(&[])
}

/// `mcpwire demo-server --stdio` and `extra` arguments.
fn demo_config_with(extra: &[&str]) -> StdioConfig {
    let mut args = vec!["demo-server".to_owned(), "--stdio".to_owned()];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let mut config = StdioConfig::new(env!("CARGO_BIN_EXE_mcpwire"), args);
    // Long, so that a close quicker than this shows the server left on its own.
    config.shutdown_grace = DEMO_GRACE;
    config
}

/// The shutdown grace given to the stdio demo server.
const DEMO_GRACE: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_demo_server_lists_calls_reports_progress_and_outlives_a_timeout() {
    let client = tokio::time::timeout(
        STEP,
        Client::connect_stdio(demo_config(), ClientOptions::default()),
    )
    .await
    .expect("in time")
    .expect("connect");
    assert_eq!(
        client
            .server()
            .expect("the server described itself")
            .server_info
            .name,
        "mcpwire-demo"
    );
    // The client probed over stdio and the dual-era server answered server/discover.
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, DEMO_TOOLS);

    let progress: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = progress.clone();
    let mut options = CallOptions::default();
    options.timeout = STEP;
    options.on_progress = Some(Box::new(move |p| {
        let message = p.message.as_deref().unwrap_or("");
        sink.lock()
            .unwrap()
            .push(format!("{} {message}", p.progress))
    }));
    let arguments = json!({"steps": 3, "delay_ms": 20});
    let result: CallToolResult = client
        .call_tool("progress_report", arguments.as_object().cloned(), options)
        .await
        .expect("call");
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        json!([{"type": "text", "text": "done after 3 steps"}])
    );
    assert_eq!(
        *progress.lock().unwrap(),
        ["1 step 1 of 3", "2 step 2 of 3", "3 step 3 of 3"]
    );

    // A deadline shorter than the call: it times out (notifications/cancelled goes out, as
    // at 2025) and the server goes on.
    let started = Instant::now();
    let slow = json!({"steps": 5, "delay_ms": 1000});
    let mut options = CallOptions::default();
    options.timeout = Duration::from_millis(300);
    let error = client
        .call_tool("progress_report", slow.as_object().cloned(), options)
        .await
        .expect_err("a timeout");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    let echo = json!({"message": "still here"});
    let result = client
        .call_tool("echo", echo.as_object().cloned(), CallOptions::default())
        .await
        .expect("echo after the timeout");
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        json!([{"type": "text", "text": "Echo: still here"}])
    );
    // The server ends when its stdin closes: no need to terminate it.
    let started = Instant::now();
    client.close().await;
    assert!(started.elapsed() < DEMO_GRACE, "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_on_the_era_probe_is_started_again_for_initialize() {
    let log = Log::default();
    let mut config = fixture_config("exit-before-init");
    log.attach(&mut config);
    let client = connect(config).await;
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    assert!(!client.protocol_version().is_modern());
    log.wait_for("the exit on the probe", |l| {
        l.contains("exiting on server/discover")
    })
    .await;
    let echo = call(&client, "echo", json!({"message": "second process"}))
        .await
        .expect("the restarted server answers");
    assert_eq!(echo.content[0].as_text().unwrap(), "Echo: second process");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_silent_on_the_era_probe_gets_initialize_after_the_probe_timeout() {
    let mut options = ClientOptions::default();
    options.session.probe_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let client = tokio::time::timeout(
        STEP,
        Client::connect_stdio(fixture_config("silent-before-init"), options),
    )
    .await
    .expect("connect took too long")
    .expect("connect");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(!client.protocol_version().is_modern());
    let echo = call(&client, "echo", json!({"message": "late"}))
        .await
        .unwrap();
    assert_eq!(echo.content[0].as_text().unwrap(), "Echo: late");
    client.close().await;
}

/// Accepts every elicitation, counting them.
struct Accept(Mutex<usize>);

impl InputHandler for Accept {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(serde_json::Map::new()),
            ..ClientCapabilities::default()
        }
    }

    fn answer(&self, request: InputRequest) -> InputFuture {
        assert_eq!(request.method, "elicitation/create");
        *self.0.lock().unwrap() += 1;
        Box::pin(async { Ok(json!({"action": "accept", "content": {"confirm": true}})) })
    }
}

async fn connect_demo(extra: &[&str], options: ClientOptions) -> Client {
    tokio::time::timeout(
        STEP,
        Client::connect_stdio(demo_config_with(extra), options),
    )
    .await
    .expect("in time")
    .expect("connect")
}

async fn confirm_delete(client: &Client) -> Result<CallToolResult, mcpwire::Error> {
    let arguments = json!({"item": "notes.txt"});
    client
        .call_tool(
            "confirm_delete",
            arguments.as_object().cloned(),
            CallOptions::default(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_demo_server_asks_for_input_at_2026_07_28() {
    let handler = Arc::new(Accept(Mutex::new(0)));
    let mut options = ClientOptions::default();
    options.input_handler = Some(handler.clone());
    let client = connect_demo(&[], options).await;
    assert!(client.protocol_version().is_modern());
    let result = confirm_delete(&client).await.expect("a result");
    assert_eq!(result.content[0].as_text(), Some("Deleted notes.txt"));
    assert_eq!(*handler.0.lock().unwrap(), 1);
    // No header layer over stdio: region_echo saw no Mcp-Param-Region.
    let region = json!({"region": "Zürich"});
    let result = client
        .call_tool(
            "region_echo",
            region.as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .expect("a result");
    assert_eq!(
        result.structured_content,
        Some(json!({"region": "Zürich", "header": null}))
    );
    client.close().await;

    // Declaring nothing, the call is refused with -32021: an elicitation request, its outcome
    // unknown (servers may run the tool before they answer so).
    let client = connect_demo(&[], ClientOptions::default()).await;
    let error = confirm_delete(&client).await.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::ElicitationRequested, "{error}");
    assert!(error.to_string().contains("-32021"), "{error}");
    assert!(error.outcome_unknown(), "{error}");
    client.close().await;
    // Declaring elicitation with no handler, the server asks and nobody answers.
    let mut options = ClientOptions::default();
    options.session.capabilities.elicitation = Some(serde_json::Map::new());
    let client = connect_demo(&[], options).await;
    let error = confirm_delete(&client).await.expect_err("nobody to answer");
    assert_eq!(error.kind(), ErrorKind::ElicitationRequested, "{error}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_demo_server_in_each_era() {
    // 2025 alone: server/discover is an unknown method, so the client initializes.
    let client = connect_demo(&["--era", "2025"], ClientOptions::default()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let names: Vec<String> = client
        .list_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, DEMO_TOOLS);
    let result = confirm_delete(&client).await.expect("a result");
    assert!(result.is_error(), "{result:?}");
    client.ping().await.expect("ping at 2025");
    client.close().await;
    // 2026-07-28 alone.
    let client = connect_demo(&["--era", "2026"], ClientOptions::default()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let echo = json!({"message": "modern"});
    let result = client
        .call_tool("echo", echo.as_object().cloned(), CallOptions::default())
        .await
        .expect("echo");
    assert_eq!(result.content[0].as_text(), Some("Echo: modern"));
    client.close().await;
}
