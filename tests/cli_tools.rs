//! The binaries end to end: `mcp-tools` (discovery into bindings) and `mcpwire call` / `mcpwire
//! demo` (the call pipeline), spawned as processes against a demo server, a fault server or a
//! real Python SDK server. The servers run on a tokio runtime owned by the test.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use mcpwire::binding::config::load_config;
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::rpc_result;
use crate::support::peers::{self, Peer, Sdk};

/// No spawned binary may run longer than this.
const DEADLINE: Duration = Duration::from_secs(60);
/// A token recognizable anywhere it might leak.
const TOKEN: &str = "tok-CLI-SECRET-31f9a0c2";
/// The variable holding [`TOKEN`] in the children's environment.
const TOKEN_ENV: &str = "MCPWIRE_CLI_TEST_TOKEN";

/// What a finished process did.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

/// Runs `program` with `args` and extra environment `env` (an empty value removes the
/// variable), failing the test if it runs past [`DEADLINE`].
pub(crate) fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove(TOKEN_ENV);
    for (name, value) in env {
        if value.is_empty() {
            command.env_remove(name);
        } else {
            command.env(name, value);
        }
    }
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err = thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} ran past {DEADLINE:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    Run {
        code: status.code(),
        stdout: String::from_utf8(out.join().unwrap()).expect("UTF-8 stdout"),
        stderr: String::from_utf8(err.join().unwrap()).expect("UTF-8 stderr"),
        elapsed,
    }
}

pub(crate) fn mcp_tools(args: &[&str], env: &[(&str, &str)]) -> Run {
    run(env!("CARGO_BIN_EXE_mcp-tools"), args, env)
}

pub(crate) fn mcpwire(args: &[&str], env: &[(&str, &str)]) -> Run {
    run(env!("CARGO_BIN_EXE_mcpwire"), args, env)
}

#[track_caller]
pub(crate) fn assert_exit(run: &Run, code: i32) {
    assert_eq!(run.code, Some(code), "{run:#?}");
}

/// A runtime for the test's servers (kept alive as long as they are).
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A demo server and the runtime it runs on (fields drop in order: the server first).
struct Demo {
    server: DemoServer,
    _runtime: Runtime,
}

impl Demo {
    /// A dual-era demo server (the client speaks 2026-07-28 with it).
    fn start(token: Option<&str>) -> Demo {
        Demo::start_era(token, Era::Both)
    }

    /// A demo server speaking only `era`.
    fn start_era(token: Option<&str>, era: Era) -> Demo {
        let runtime = runtime();
        let mut options = DemoOptions::default();
        options.era = era;
        options.token = token.map(str::to_owned);
        let server = runtime
            .block_on(DemoServer::start_with_options(options))
            .expect("demo server");
        Demo {
            server,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        self.server.url()
    }
}

/// A fault server and the runtime it runs on.
pub(crate) struct Fault {
    pub(crate) server: FaultServer,
    _runtime: Runtime,
}

impl Fault {
    pub(crate) fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Fault {
        let runtime = runtime();
        let server = runtime.block_on(FaultServer::start(handler));
        Fault {
            server,
            _runtime: runtime,
        }
    }
}

/// A fresh path under the target's temporary directory.
pub(crate) fn temp_path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli_tools");
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(format!("{}-{name}", std::process::id()))
}

/// The top-level member names of each binding in `mcp-tools`' pretty-printed output, in the
/// order printed.
fn printed_member_order(stdout: &str) -> Vec<Vec<String>> {
    let mut bindings: Vec<Vec<String>> = Vec::new();
    for line in stdout.lines() {
        if line == "  {" {
            bindings.push(Vec::new());
        } else if let Some(rest) = line.strip_prefix("    \"") {
            let key = rest.split('"').next().unwrap_or_default().to_owned();
            bindings.last_mut().expect("a binding").push(key);
        }
    }
    bindings
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs `mcp-tools` against `url` for tenant `local` and writes its output to a bindings file.
fn bindings_file(url: &str, tools: &str, name: &str, env: &[(&str, &str)]) -> (PathBuf, Value) {
    let mut args = vec!["-url", url, "-tenant", "local", "-tools", tools];
    if !env.is_empty() {
        args.extend(["-token-env", TOKEN_ENV]);
    }
    let tools_run = mcp_tools(&args, env);
    assert_exit(&tools_run, 0);
    let path = temp_path(name);
    std::fs::write(&path, &tools_run.stdout).expect("write bindings");
    (path, serde_json::from_str(&tools_run.stdout).expect("JSON"))
}

/// Runs `mcpwire call` and checks that stdout holds JSON object lines and nothing else.
fn call(
    bindings: &Path,
    tool: &str,
    tenant: &str,
    args: &str,
    extra: &[&str],
) -> (Run, Vec<Value>) {
    call_with_env(bindings, tool, tenant, args, extra, &[])
}

fn call_with_env(
    bindings: &Path,
    tool: &str,
    tenant: &str,
    args: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Run, Vec<Value>) {
    let bindings = bindings.to_str().expect("UTF-8 path");
    let mut argv = vec![
        "call",
        "--bindings",
        bindings,
        "--tool",
        tool,
        "--tenant",
        tenant,
        "--args",
        args,
    ];
    argv.extend_from_slice(extra);
    let run = mcpwire(&argv, env);
    let lines = json_lines(&run.stdout);
    (run, lines)
}

#[track_caller]
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            assert!(value.is_object(), "{line}");
            value
        })
        .collect()
}

/// The last line, which must be the `tool.result`.
#[track_caller]
fn result_of<'a>(run: &'a Run, lines: &'a [Value]) -> (&'a str, &'a Value) {
    let text = run.stdout.lines().last().expect("a result line");
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "tool.result", "{run:#?}");
    assert!(
        text.starts_with(r#"{"type":"tool.result","call_id":""#),
        "{text}"
    );
    (text, result)
}

// === mcp-tools ==================================================================================

#[test]
fn mcp_tools_prints_bindings_in_the_order_named_with_the_documented_fields() {
    let demo = Demo::start(None);
    let url = demo.url();
    let run = mcp_tools(
        &["-url", &url, "-tenant", "local", "-tools", "weather,echo"],
        &[],
    );
    assert_exit(&run, 0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let bindings: Value = serde_json::from_str(&run.stdout).expect("a JSON array");
    let bindings = bindings.as_array().expect("an array");
    assert_eq!(bindings.len(), 2);
    let common = [
        "name",
        "description",
        "input_schema",
        "url",
        "mcp_tool",
        "tenants",
        "timeout_seconds",
        "max_output_bytes",
    ];
    let mut weather_order = strings(&common);
    weather_order.push("output_schema".to_owned());
    assert_eq!(
        printed_member_order(&run.stdout),
        vec![weather_order, strings(&common)]
    );
    for (binding, name) in bindings.iter().zip(["weather", "echo"]) {
        assert_eq!(binding["name"], name);
        assert_eq!(binding["mcp_tool"], name);
        assert_eq!(binding["url"], url.as_str());
        assert_eq!(binding["tenants"], json!(["local"]));
        assert_eq!(binding["timeout_seconds"], 300);
        assert_eq!(binding["max_output_bytes"], 1_048_576);
        assert!(binding.get("token_env").is_none(), "{binding}");
        assert_eq!(binding["input_schema"]["type"], "object");
    }
    let weather = &bindings[0];
    assert!(
        weather["description"]
            .as_str()
            .unwrap()
            .starts_with("A made-up weather report for a city"),
        "{weather}"
    );
    assert_eq!(weather["input_schema"]["required"], json!(["city"]));
    assert_eq!(
        weather["output_schema"]["required"],
        json!(["city", "temperature_c", "conditions", "humidity"])
    );
    assert_eq!(
        bindings[1]["description"],
        "Returns the message as \"Echo: <message>\"."
    );
    assert!(bindings[1].get("output_schema").is_none());
    // What it prints is a config mcpwire loads.
    let loaded = load_config(&run.stdout).expect("the output loads as a config");
    assert_eq!(loaded.len(), 2);
}

#[test]
fn mcp_tools_with_a_token_env_connects_with_it_and_names_it() {
    let demo = Demo::start(Some(TOKEN));
    let url = demo.url();
    let run = mcp_tools(
        &[
            "--url",
            &url,
            "--token-env",
            TOKEN_ENV,
            "--tenant",
            "local",
            "--tools",
            "echo",
        ],
        &[(TOKEN_ENV, TOKEN)],
    );
    assert_exit(&run, 0);
    let bindings: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(bindings[0]["token_env"], TOKEN_ENV);
    assert_eq!(
        printed_member_order(&run.stdout),
        vec![strings(&[
            "name",
            "description",
            "input_schema",
            "url",
            "mcp_tool",
            "token_env",
            "tenants",
            "timeout_seconds",
            "max_output_bytes",
        ])]
    );
    assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN));
}

#[test]
fn mcp_tools_fails_naming_a_missing_tool() {
    let demo = Demo::start(None);
    let run = mcp_tools(
        &[
            "-url",
            &demo.url(),
            "-tenant",
            "local",
            "-tools",
            "echo,no_such_tool",
        ],
        &[],
    );
    assert_exit(&run, 1);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:#?}");
    assert!(run.stderr.contains("no_such_tool"), "{run:#?}");
}

#[test]
fn mcp_tools_names_each_tool_it_cannot_bind_and_warns_of_the_ones_left_out() {
    let fault = Fault::start(|req| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => Reply::json(
            200,
            rpc_result(
                req,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                    "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}),
            ),
        ),
        Some("tools/list") => Reply::json(
            200,
            rpc_result(
                req,
                json!({"tools": [
                    {"name": "echo", "inputSchema": {"type": "object"}},
                    {"name": "bad", "inputSchema": {"type": "object",
                        "properties": {"r": {"type": "string", "x-mcp-header": "not a token"}}}},
                    {"name": "unasked", "inputSchema": {"type": "object",
                        "properties": {"r": {"type": "string", "x-mcp-header": ""}}}}
                ], "resultType": "complete"}),
            ),
        ),
        _ => Reply::empty(404),
    });
    let url = fault.server.url("/mcp");
    let run = mcp_tools(
        &["-url", &url, "-tenant", "local", "-tools", "echo,bad,gone"],
        &[],
    );
    assert_exit(&run, 1);
    assert!(run.stdout.is_empty(), "{run:#?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    // One warning per tool left out of the listing, then one error naming both problems.
    assert_eq!(lines.len(), 3, "{run:#?}");
    assert!(
        lines[0].contains("warning") && lines[0].contains("\"bad\""),
        "{run:#?}"
    );
    assert!(lines[0].contains("is not an HTTP token"), "{run:#?}");
    assert!(
        lines[1].contains("warning") && lines[1].contains("\"unasked\""),
        "{run:#?}"
    );
    let error = lines[2];
    assert!(
        error.contains("2 of the 3 named cannot be bound"),
        "{run:#?}"
    );
    assert!(error.contains("\"bad\" is on the server, but"), "{run:#?}");
    assert!(error.contains("/properties/r/x-mcp-header"), "{run:#?}");
    assert!(error.contains("\"gone\" is not on the server"), "{run:#?}");
    assert!(error.contains("usable tools: echo)"), "{run:#?}");
}

/// A token store others may read is the host's configuration at fault: the call's result
/// says `config`, and the exit code is 2, as `mcpwire --help` says of config errors.
#[cfg(unix)]
#[test]
fn mcpwire_call_with_a_token_store_others_may_read_exits_as_a_config_error() {
    use std::os::unix::fs::PermissionsExt;
    let store = temp_path("readable-store.json");
    std::fs::write(
        &store,
        r#"{"server":"http://127.0.0.1:9/mcp","redirect_uri":"http://127.0.0.1:9/cb","tokens":[]}"#,
    )
    .expect("store");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let bindings = temp_path("readable-store-bindings.json");
    let binding = json!([{
        "name": "t", "description": "", "mcp_tool": "t", "url": "http://127.0.0.1:9/mcp",
        "auth": {"grant": "authorization_code", "token_store": store.to_str().unwrap()},
        "tenants": ["x"], "input_schema": {"type": "object"},
        "timeout_seconds": 5, "max_output_bytes": 1000
    }]);
    std::fs::write(&bindings, binding.to_string()).expect("bindings");
    let (run, lines) = call(&bindings, "t", "x", "{}", &[]);
    assert_exit(&run, 2);
    assert_eq!(lines.len(), 1, "{run:#?}");
    assert_eq!(lines[0]["error"]["kind"], "config", "{run:#?}");
    assert_eq!(lines[0]["unknown_outcome"], false, "{run:#?}");
    let message = lines[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("may be read by others (mode 644)"),
        "{message}"
    );
    assert!(message.contains("chmod 600"), "{message}");
}

#[test]
fn mcp_tools_fails_naming_an_unset_token_variable() {
    let demo = Demo::start(None);
    let run = mcp_tools(
        &[
            "-url",
            &demo.url(),
            "-token-env",
            TOKEN_ENV,
            "-tenant",
            "local",
            "-tools",
            "echo",
        ],
        &[],
    );
    assert_exit(&run, 1);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains(TOKEN_ENV), "{run:#?}");
    assert_eq!(demo.server.stats().requests, 0, "nothing was sent");
}

#[test]
fn mcp_tools_on_401_names_the_challenge() {
    let demo = Demo::start(Some(TOKEN));
    let wrong = "tok-WRONG-0d0e0a0d";
    let run = mcp_tools(
        &[
            "-url",
            &demo.url(),
            "-token-env",
            TOKEN_ENV,
            "-tenant",
            "local",
            "-tools",
            "echo",
        ],
        &[(TOKEN_ENV, wrong)],
    );
    assert_exit(&run, 1);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("resource_metadata"), "{run:#?}");
    assert!(!run.stderr.contains(wrong), "{run:#?}");
}

#[test]
fn mcp_tools_refuses_a_bad_url_as_a_usage_error() {
    for url in ["ftp://x", "not a url"] {
        let run = mcp_tools(&["-url", url, "-tenant", "local", "-tools", "echo"], &[]);
        assert_exit(&run, 2);
        assert!(run.stdout.is_empty(), "{run:#?}");
        assert!(!run.stderr.is_empty(), "{run:#?}");
    }
}

#[test]
fn mcp_tools_usage_errors() {
    let many: Vec<String> = (0..129).map(|i| format!("t{i}")).collect();
    let many = many.join(",");
    let url = "http://127.0.0.1:9/mcp";
    let cases: Vec<Vec<&str>> = vec![
        vec!["-url", url, "-tenant", "local"],
        vec!["-url", url, "-tenant", "local", "-tools", ""],
        vec!["-url", url, "-tenant", "local", "-tools", ","],
        vec!["-url", url, "-tenant", "local", "-tools", &many],
        vec![
            "-url",
            url,
            "-command",
            "python3 server.py",
            "-tenant",
            "local",
            "-tools",
            "echo",
        ],
        vec!["-url", url, "-tools", "echo"],
        vec!["-tenant", "local", "-tools", "echo"],
        vec![
            "-url",
            url,
            "-tenant",
            "local",
            "-tools",
            "echo",
            "-frobnicate",
            "1",
        ],
    ];
    for args in cases {
        let run = mcp_tools(&args, &[]);
        assert_exit(&run, 2);
        assert!(run.stdout.is_empty(), "{args:?}: {run:#?}");
        assert!(!run.stderr.is_empty(), "{args:?}: {run:#?}");
    }
    // 128 names is allowed: this fails to connect (exit 1), not as a usage error.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let closed = format!("http://127.0.0.1:{port}/mcp");
    let most: Vec<String> = (0..128).map(|i| format!("t{i}")).collect();
    let run = mcp_tools(
        &[
            "-url",
            &closed,
            "-tenant",
            "local",
            "-tools",
            &most.join(","),
        ],
        &[],
    );
    assert_exit(&run, 1);
}

#[test]
fn mcp_tools_times_out_against_a_server_that_hangs() {
    let fault = Fault::start(|_| Reply::verbatim(vec![Step::Hang]));
    let url = fault.server.url("/mcp");
    let run = mcp_tools(
        &[
            "-url", &url, "-tenant", "local", "-tools", "echo", "-timeout", "1",
        ],
        &[],
    );
    assert_exit(&run, 1);
    assert!(run.elapsed < Duration::from_secs(3), "{run:#?}");
    assert!(
        run.stderr.to_lowercase().contains("timeout") || run.stderr.contains("longer than"),
        "{run:#?}"
    );
    assert!(!fault.server.requests().is_empty(), "it did try");
}

#[test]
fn mcp_tools_help() {
    for flag in ["-help", "--help", "-h"] {
        let run = mcp_tools(&[flag], &[]);
        assert_exit(&run, 0);
        assert!(run.stdout.contains("USAGE"), "{run:#?}");
        assert!(run.stdout.contains("-token-env"), "{run:#?}");
    }
}

#[test]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
fn mcp_tools_discovers_over_stdio_with_command() {
    peers::require(Peer::Python(Sdk::V2));
    let (program, args) = peers::python_stdio_command(Sdk::V2);
    let program = program.display().to_string();
    let command = std::iter::once(program.clone())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let run = mcp_tools(
        &[
            "-command",
            &command,
            "-tenant",
            "local",
            "-tools",
            "weather,echo_text",
        ],
        &[],
    );
    assert_exit(&run, 0);
    let bindings: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(bindings[0]["name"], "weather");
    assert_eq!(bindings[1]["name"], "echo_text");
    for binding in bindings.as_array().unwrap() {
        assert_eq!(binding["command"], program.as_str());
        assert_eq!(binding["args"], json!(args));
        assert_eq!(binding["env"], json!([]));
        assert!(binding.get("url").is_none(), "{binding}");
    }
    assert!(bindings[0]["output_schema"].is_object());
    let order = printed_member_order(&run.stdout);
    assert_eq!(
        order[1],
        strings(&[
            "name",
            "description",
            "input_schema",
            "command",
            "args",
            "env",
            "mcp_tool",
            "tenants",
            "timeout_seconds",
            "max_output_bytes",
        ])
    );
    load_config(&run.stdout).expect("loads");
}

// === mcpwire call ===============================================================================

#[test]
fn call_round_trip_through_mcp_tools_output() {
    // The 2025 path: each call opens its own session and ends it.
    let demo = Demo::start_era(None, Era::Legacy);
    let (file, _) = bindings_file(&demo.url(), "weather,echo", "round-trip.json", &[]);
    let before = demo.server.stats();
    let (run, lines) = call(
        &file,
        "weather",
        "local",
        r#"{"city":"Lisbon"}"#,
        &["--call-id", "c-weather"],
    );
    assert_exit(&run, 0);
    assert_eq!(lines.len(), 1, "{run:#?}");
    let (text, result) = result_of(&run, &lines);
    assert!(
        text.starts_with(
            r#"{"type":"tool.result","call_id":"c-weather","is_error":false,"content":[{"#
        ),
        "{text}"
    );
    assert!(text.contains(r#"}],"structured_content":{"#), "{text}");
    assert!(result.get("unknown_outcome").is_none() && result.get("error").is_none());
    assert_eq!(result["structured_content"]["city"], "Lisbon");
    let after = demo.server.stats();
    assert_eq!(after.sessions_opened, before.sessions_opened + 1);
    assert_eq!(after.sessions_deleted, before.sessions_deleted + 1);

    let (run, lines) = call(&file, "echo", "local", r#"{"message":"hi"}"#, &[]);
    assert_exit(&run, 0);
    assert_eq!(
        lines.last().unwrap()["content"],
        json!([{"type": "text", "text": "Echo: hi"}])
    );
}

#[test]
fn call_streams_progress_lines_before_the_result() {
    let demo = Demo::start(None);
    let (file, _) = bindings_file(&demo.url(), "progress_report", "progress.json", &[]);
    let (run, lines) = call(
        &file,
        "progress_report",
        "local",
        r#"{"steps":3,"delay_ms":10}"#,
        &["--call-id", "c-prog"],
    );
    assert_exit(&run, 0);
    assert_eq!(lines.len(), 4, "{run:#?}");
    let texts: Vec<&str> = run.stdout.lines().collect();
    for (i, (text, line)) in texts.iter().zip(&lines).take(3).enumerate() {
        assert!(
            text.starts_with(r#"{"type":"tool.progress","call_id":"c-prog","progress":"#),
            "{text}"
        );
        assert_eq!(line["progress"], json!((i + 1) as f64));
        assert_eq!(line["total"], json!(3.0));
        assert_eq!(line["message"], format!("step {} of 3", i + 1));
    }
    let (_, result) = result_of(&run, &lines);
    assert_eq!(result["call_id"], "c-prog");
    assert_eq!(result["is_error"], false);
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "done after 3 steps"}])
    );
}

#[test]
fn call_of_a_failing_tool_exits_1_with_a_known_outcome() {
    let demo = Demo::start(None);
    let (file, _) = bindings_file(&demo.url(), "fail", "fail.json", &[]);
    let (run, lines) = call(&file, "fail", "local", r#"{"message":"it broke"}"#, &[]);
    assert_exit(&run, 1);
    let (text, result) = result_of(&run, &lines);
    assert_eq!(result["is_error"], true);
    assert_eq!(result["unknown_outcome"], false);
    assert_eq!(result["error"]["kind"], "tool_error");
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "it broke"}])
    );
    assert!(
        text.contains(r#""is_error":true,"unknown_outcome":false,"content":["#),
        "{text}"
    );
}

#[test]
fn call_as_a_wrong_tenant_is_denied_without_sending() {
    let demo = Demo::start(None);
    let (file, _) = bindings_file(&demo.url(), "echo", "tenant.json", &[]);
    let before = demo.server.stats();
    let (run, lines) = call(&file, "echo", "intruder", r#"{"message":"hi"}"#, &[]);
    assert_exit(&run, 1);
    let (_, result) = result_of(&run, &lines);
    assert_eq!(result["error"]["kind"], "tenant_denied");
    assert_eq!(result["unknown_outcome"], false);
    assert_eq!(
        demo.server.stats().requests,
        before.requests,
        "nothing sent"
    );
}

#[test]
fn call_usage_errors_exit_2() {
    let demo = Demo::start(None);
    let (file, bindings) = bindings_file(&demo.url(), "echo,weather", "usage.json", &[]);

    // Invalid --args JSON.
    let (run, lines) = call(&file, "echo", "local", "{message: hi}", &[]);
    assert_exit(&run, 2);
    assert!(lines.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("--args"), "{run:#?}");

    // An unknown flag.
    let (run, lines) = call(
        &file,
        "echo",
        "local",
        r#"{"message":"hi"}"#,
        &["--frobnicate"],
    );
    assert_exit(&run, 2);
    assert!(lines.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("--frobnicate"), "{run:#?}");

    // A binding with inspect_session.
    let mut edited = bindings.clone();
    edited[1]["inspect_session"] = json!(true);
    let inspect = temp_path("inspect.json");
    std::fs::write(&inspect, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let (run, lines) = call(&inspect, "echo", "local", r#"{"message":"hi"}"#, &[]);
    assert_exit(&run, 2);
    assert!(lines.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("weather"), "{run:#?}");
    assert!(run.stderr.contains("inspect_session"), "{run:#?}");

    // A missing bindings file.
    let (run, lines) = call(
        &temp_path("no-such-file.json"),
        "echo",
        "local",
        r#"{"message":"hi"}"#,
        &[],
    );
    assert_exit(&run, 2);
    assert!(lines.is_empty(), "{run:#?}");
}

#[test]
fn call_ids_are_echoed_or_fresh() {
    let demo = Demo::start(None);
    let (file, _) = bindings_file(&demo.url(), "echo", "ids.json", &[]);
    let args = r#"{"message":"hi"}"#;
    let (run, lines) = call(&file, "echo", "local", args, &["--call-id", "my-call-1"]);
    assert_exit(&run, 0);
    assert_eq!(result_of(&run, &lines).1["call_id"], "my-call-1");
    let (run, first) = call(&file, "echo", "local", args, &[]);
    assert_exit(&run, 0);
    let (run, second) = call(&file, "echo", "local", args, &[]);
    assert_exit(&run, 0);
    let first = first.last().unwrap()["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = second.last().unwrap()["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!first.is_empty());
    assert_ne!(first, second);
}

#[test]
fn call_verbose_traces_the_wire_without_the_token() {
    // The 2025 path, whose trace has the most to hide (initialize, the session).
    let demo = Demo::start_era(Some(TOKEN), Era::Legacy);
    let env = [(TOKEN_ENV, TOKEN)];
    let (file, bindings) = bindings_file(&demo.url(), "echo", "verbose.json", &env);
    assert_eq!(bindings[0]["token_env"], TOKEN_ENV);
    let (run, lines) = call_with_env(
        &file,
        "echo",
        "local",
        r#"{"message":"traced"}"#,
        &["-v"],
        &env,
    );
    assert_exit(&run, 0);
    assert_eq!(
        lines.last().unwrap()["content"],
        json!([{"type": "text", "text": "Echo: traced"}])
    );
    assert!(run.stderr.contains("initialize"), "{}", run.stderr);
    assert!(run.stderr.contains("tools/call"), "{}", run.stderr);
    assert!(!run.stderr.contains(TOKEN), "{}", run.stderr);
    assert!(!run.stdout.contains(TOKEN), "{}", run.stdout);

    // Without the token the call is refused before anything is sent.
    let before = demo.server.stats();
    let (run, lines) = call(&file, "echo", "local", r#"{"message":"hi"}"#, &[]);
    assert_exit(&run, 1);
    assert_eq!(result_of(&run, &lines).1["error"]["kind"], "missing_token");
    assert_eq!(demo.server.stats().requests, before.requests);
}

// === mcpwire demo ===============================================================================

#[test]
fn demo_prints_bindings_then_results() {
    let run = mcpwire(&["demo"], &[]);
    assert_exit(&run, 0);
    let values: Vec<Value> = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("stdout is not JSON values ({e}): {}", run.stdout));
    let bindings = values[0].as_array().expect("the bindings array first");
    let names: Vec<&str> = bindings
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["progress_report", "tiny_image", "weather"]);
    // After the pretty-printed array, one JSON object per line.
    let array_end = run
        .stdout
        .find("\n]\n")
        .expect("the array ends on its own line")
        + 3;
    let events = json_lines(&run.stdout[array_end..]);
    assert_eq!(events.len(), values.len() - 1);
    assert!(events.iter().any(|e| e["type"] == "tool.progress"));
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.result")
        .collect();
    assert_eq!(results.len(), 5, "{events:?}");
    let kinds: Vec<&str> = results
        .iter()
        .map(|r| r["error"]["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["", "", "", "tenant_denied", "invalid_arguments"]);
    assert_eq!(results[1]["content"][0]["type"], "image");
    assert_eq!(results[2]["structured_content"]["city"], "Lisbon");
}

#[test]
fn demo_negotiates_2026_07_28_and_shows_the_2025_path_on_request() {
    for (args, version, era) in [
        (&["demo"][..], "2026-07-28", "both"),
        (&["demo", "--era", "2025"][..], "2025-11-25", "2025"),
        (&["demo", "--era=2026"][..], "2026-07-28", "2026"),
    ] {
        let run = mcpwire(args, &[]);
        assert_exit(&run, 0);
        let last = run.stdout.lines().last().expect("some stdout");
        let summary: Value = serde_json::from_str(last).expect("a JSON line");
        assert_eq!(summary["type"], "demo.summary", "{args:?}");
        assert_eq!(summary["protocol_version"], version, "{args:?}");
        assert_eq!(summary["server_era"], era, "{args:?}");
        let (requests, modern) = (&summary["http_requests"], &summary["modern_requests"]);
        if version == "2025-11-25" {
            assert_eq!(modern, 0, "{summary}");
            assert_eq!(
                summary["mcp_sessions_opened"],
                summary["mcp_sessions_deleted"]
            );
            assert_ne!(summary["mcp_sessions_opened"], 0, "{summary}");
        } else {
            assert_eq!(modern, requests, "{summary}");
            assert_eq!(summary["mcp_sessions_opened"], 0, "{summary}");
        }
        assert!(
            run.stderr
                .contains(&format!("protocol {version} negotiated")),
            "{}",
            run.stderr
        );
    }
    for command in ["demo", "demo-server"] {
        let run = mcpwire(&[command, "--era", "2027"], &[]);
        assert_exit(&run, 2);
        assert!(run.stderr.contains("both, 2025 or 2026"), "{run:#?}");
    }
}

#[test]
fn mcp_tools_and_mcpwire_call_work_with_the_stdio_demo_server() {
    let command = format!("{} demo-server --stdio", env!("CARGO_BIN_EXE_mcpwire"));
    let run = mcp_tools(
        &[
            "-command",
            &command,
            "-tenant",
            "local",
            "-tools",
            "progress_report,echo",
        ],
        &[],
    );
    assert_exit(&run, 0);
    let bindings: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(bindings[0]["command"], env!("CARGO_BIN_EXE_mcpwire"));
    assert_eq!(bindings[0]["args"], json!(["demo-server", "--stdio"]));
    assert_eq!(bindings[1]["mcp_tool"], "echo");
    let path = temp_path("stdio-demo-bindings.json");
    std::fs::write(&path, &run.stdout).unwrap();
    let call = mcpwire(
        &[
            "call",
            "--bindings",
            path.to_str().unwrap(),
            "--tool",
            "progress_report",
            "--tenant",
            "local",
            "--args",
            r#"{"steps": 2, "delay_ms": 10}"#,
            "--call-id",
            "c-stdio",
        ],
        &[],
    );
    let _ = std::fs::remove_file(&path);
    assert_exit(&call, 0);
    let events: Vec<Value> = call
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(events.len(), 3, "{call:#?}");
    assert_eq!(events[0]["type"], "tool.progress");
    assert_eq!(events[1]["progress"], 2.0);
    assert_eq!(
        events[2],
        json!({"type": "tool.result", "call_id": "c-stdio", "is_error": false,
               "content": [{"type": "text", "text": "done after 2 steps"}]})
    );
}

#[test]
fn demo_server_refuses_unknown_options() {
    let run = mcpwire(&["demo-server", "--frobnicate"], &[]);
    assert_exit(&run, 2);
    assert!(run.stderr.contains("--frobnicate"), "{run:#?}");
}

/// The login flags: what goes together, `-help` telling how to log in, refresh and log out,
/// `-logout` of no store, and a store others may read refused.
#[test]
fn mcp_tools_login_flags_are_checked() {
    let url = "http://127.0.0.1:9/mcp";
    let usage = [
        (
            vec!["-url", url, "-login", "-tenant", "t", "-tools", "x"],
            "-login needs -token-store",
        ),
        (
            vec![
                "-url",
                url,
                "-token-store",
                "/tmp/s.json",
                "-token-env",
                "K",
                "-tenant",
                "t",
                "-tools",
                "x",
            ],
            "not both",
        ),
        (vec!["-refresh"], "-refresh needs -token-store"),
        (
            vec!["-token-store", "/tmp/s.json", "-refresh", "-url", url],
            "takes only -token-store",
        ),
        (
            vec!["-token-store", "/tmp/s.json", "-refresh", "-logout"],
            "not both",
        ),
        (
            vec!["-url", url, "-login=yes", "-token-store", "/tmp/s.json"],
            "-login takes no value",
        ),
        (
            vec![
                "-command",
                "srv",
                "-token-store",
                "/tmp/s.json",
                "-tenant",
                "t",
                "-tools",
                "x",
            ],
            "-token-store applies to -url servers",
        ),
        (
            vec!["-url", url, "-redirect-port", "70000"],
            "-redirect-port must be a port",
        ),
        (
            vec!["-url", url, "-login-timeout", "0"],
            "-login-timeout must be",
        ),
    ];
    for (args, expected) in usage {
        let run = mcp_tools(&args, &[]);
        assert_exit(&run, 2);
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
    }
    let help = mcp_tools(&["-help"], &[]);
    assert_exit(&help, 0);
    for flag in [
        "-login",
        "-token-store",
        "-refresh",
        "-logout",
        "LOGGING IN, REFRESHING, LOGGING OUT",
    ] {
        assert!(help.stdout.contains(flag), "{flag}");
    }
    let dir = std::env::temp_dir().join(format!("mcpwire-cli-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("tokens.json");
    let store_text = store.to_str().unwrap();
    let none = mcp_tools(&["-token-store", store_text, "-logout"], &[]);
    assert_exit(&none, 0);
    assert!(none.stderr.contains("no token store"), "{}", none.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&store, "{}").unwrap();
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = mcp_tools(&["-token-store", store_text, "-refresh"], &[]);
        assert_exit(&refused, 1);
        assert!(refused.stderr.contains("chmod 600"), "{}", refused.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-login` with a server that never asks for authorization: the bindings have no `auth` and
/// no store is written. With one that refuses but has no OAuth (a static API key): the login
/// fails with one line, and no store is left.
#[test]
fn mcp_tools_login_with_servers_that_do_not_take_oauth() {
    let open = Demo::start(None);
    let store = temp_path("login-open.json");
    let store_text = store.to_str().unwrap();
    let login = |url: &str| {
        let args = ["-url", url, "-login", "-token-store", store_text];
        mcp_tools(
            &[&args[..], &["-tenant", "t", "-tools", "echo"]].concat(),
            &[],
        )
    };
    let run = login(&open.url());
    assert_exit(&run, 0);
    assert!(
        run.stderr.contains("did not ask for authorization"),
        "{}",
        run.stderr
    );
    let bindings: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(bindings[0].get("auth").is_none(), "{bindings}");
    assert!(!store.exists());

    let keyed = Demo::start(Some(TOKEN));
    let run = login(&keyed.url());
    assert_exit(&run, 1);
    assert!(run.stderr.contains("unauthorized"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(!store.exists(), "no store for a failed login");
}
