//! Real MCP servers written by others, run as child processes for interop tests.
//!
//! `scripts/install-peers` installs them into [`peers_dir`]: the official TypeScript
//! `@modelcontextprotocol/server-everything`, two venvs with the official Python SDK (`mcp` 2.x
//! and 1.x) that run our own `tests/peers/py_server.py`, and the official TypeScript SDK v2 server
//! package (on the Node 22 it installs too) that runs our own `tests/peers/ts2_server.mjs`
//! (protocol 2026-07-28 and the 2025 path).
//!
//! A test that needs a peer is `#[ignore]`d with the reason [`IGNORE_REASON`] says, so a plain
//! `cargo test` lists it as *ignored*, never as passed, when nobody has installed the peers;
//! `scripts/test` (so CI) runs them with the rest (`cargo test -- --include-ignored`). Its first line is
//! [`require`], which fails the test when the peer is missing: a test run explicitly without its
//! peer fails instead of passing vacuously. A test in `tests/` that calls [`require`] without the
//! `#[ignore]` (or is ignored without calling it) fails `every_peer_test_is_ignored_and_checks_its_peer`.
//!
//! ```ignore
//! #[tokio::test]
//! #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
//! async fn python_v2_json_response() {
//!     peers::require(Peer::Python(Sdk::V2));
//!     let server = PeerServer::python(Sdk::V2, &["--json-response"]);
//!     // ... talk to server.url (http://127.0.0.1:PORT/mcp) ...
//!     // dropping `server` kills its whole process group
//! }
//! ```
//!
//! Every server listens on 127.0.0.1 only, on a free port picked here. Its stdout and stderr go to
//! a log file under the target directory ([`PeerServer::log_path`]); a failure to start panics with
//! the tail of that log. Only std is used: processes, a TCP connect for readiness, `kill` for the
//! process group.

#![allow(
    dead_code,
    reason = "test support: each interop test uses only some of the helpers"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "a process driver: waiting for a child process needs the clock"
)]

use std::fs::{self, File};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long a server may take to accept connections.
const START_DEADLINE: Duration = Duration::from_secs(20);
/// How often readiness and exit are polled.
const POLL: Duration = Duration::from_millis(50);
/// How long a server gets after SIGTERM before its process group gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// How many lines of the server's log a failure message shows.
const LOG_TAIL_LINES: usize = 40;

/// What skip and failure messages tell the reader to do.
const INSTALL_HINT: &str = "run scripts/install-peers";

/// Which major version of the official Python SDK runs `py_server.py`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sdk {
    /// `mcp` 1.x (`FastMCP`), in `venv-v1`.
    V1,
    /// `mcp` 2.x (`MCPServer`), in `venv-v2`.
    V2,
}

impl Sdk {
    fn venv(self) -> &'static str {
        match self {
            Sdk::V1 => "venv-v1",
            Sdk::V2 => "venv-v2",
        }
    }
}

/// An installable peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `@modelcontextprotocol/server-everything` (npm).
    Everything,
    /// `tests/peers/py_server.py` on the official Python SDK.
    Python(Sdk),
    /// `tests/peers/ts2_server.mjs` on the official TypeScript SDK v2 (`@modelcontextprotocol/server`)
    /// and the Node 22 that `scripts/install-peers` installs beside it.
    Ts2,
    /// `fixtures/servers/rmcp-server` on rmcp 3 (the official Rust SDK), built by
    /// `scripts/install-peers`.
    Rmcp,
}

impl Peer {
    /// The marker files `scripts/install-peers` writes when the peer's components are complete.
    fn markers(self) -> &'static [&'static str] {
        match self {
            Peer::Everything => &[".installed-everything"],
            Peer::Python(Sdk::V1) => &[".installed-venv-v1"],
            Peer::Python(Sdk::V2) => &[".installed-venv-v2"],
            Peer::Ts2 => &[".installed-node22", ".installed-ts2"],
            Peer::Rmcp => &[".installed-rmcp"],
        }
    }

    /// The files that must exist for the peer to run.
    fn entry_points(self) -> Vec<PathBuf> {
        match self {
            Peer::Everything => vec![everything_main()],
            Peer::Python(sdk) => vec![python_bin(sdk)],
            Peer::Ts2 => vec![
                node22(),
                ts2_dir().join("node_modules/@modelcontextprotocol/server/package.json"),
            ],
            Peer::Rmcp => vec![rmcp_server()],
        }
    }

    fn is_installed(self) -> bool {
        self.markers()
            .iter()
            .all(|marker| peers_dir().join(marker).is_file())
            && self.entry_points().iter().all(|path| path.is_file())
    }
}

/// Where `scripts/install-peers` put the peers: `$MCPWIRE_PEERS_DIR`, else `<repo>/target/peers`.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("MCPWIRE_PEERS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => super::repo_root().join("target/peers"),
    }
}

/// The reason every peer test gives in its `#[ignore = "..."]` (an attribute takes only a
/// literal, so the tests spell it out; `every_peer_test_is_ignored_and_checks_its_peer` checks it).
pub const IGNORE_REASON: &str =
    "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored";

/// Returns when `peer` is installed; panics, naming it and how to install it, when it is not.
/// A test calls it first, and is `#[ignore]`d (see the module docs), so that without its peer it
/// is reported as ignored by a plain `cargo test` and fails when run explicitly.
pub fn require(peer: Peer) {
    assert!(
        peer.is_installed(),
        "{peer:?} is not installed in {}: {INSTALL_HINT} (an interop test never passes without \
         its peer)",
        peers_dir().display()
    );
}

fn repo_path(relative: &str) -> PathBuf {
    super::repo_root().join(relative)
}

fn everything_main() -> PathBuf {
    peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn python_bin(sdk: Sdk) -> PathBuf {
    peers_dir().join(sdk.venv()).join("bin/python")
}

fn py_server_script() -> PathBuf {
    repo_path("tests/peers/py_server.py")
}

/// The Node 22 binary `scripts/install-peers` installs (the machine's own node may be older).
pub fn node22() -> PathBuf {
    peers_dir().join("node22/node_modules/.bin/node")
}

/// The npm project holding the TypeScript SDK v2 packages that `ts2_server.mjs` loads.
fn ts2_dir() -> PathBuf {
    peers_dir().join("ts2")
}

fn ts2_server_script() -> PathBuf {
    repo_path("tests/peers/ts2_server.mjs")
}

/// The rmcp 3 server binary `scripts/install-peers` builds from `fixtures/servers/rmcp-server`.
pub fn rmcp_server() -> PathBuf {
    peers_dir().join("rmcp/rmcp-example-server")
}

/// `name` resolved on `PATH`, or `name` itself when it is not found there.
fn find_program(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// `script` on the given SDK's Python, listening on `port` on loopback, with `args`.
fn python_http_command(sdk: Sdk, script: &Path, port: u16, args: &[&str]) -> Command {
    let mut cmd = Command::new(python_bin(sdk));
    cmd.arg(script)
        .arg("--port")
        .arg(port.to_string())
        .args(args)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// The program and arguments that run `py_server.py` over stdio on the given SDK.
pub fn python_stdio_command(sdk: Sdk) -> (PathBuf, Vec<String>) {
    let args = vec![
        py_server_script().display().to_string(),
        "--transport".to_owned(),
        "stdio".to_owned(),
    ];
    (python_bin(sdk), args)
}

/// The program and arguments that run server-everything over stdio. (Its `gzip-file-as-resource`
/// tool fetches an https URL by default; call it with a `data:` URI.)
pub fn everything_stdio_command() -> (PathBuf, Vec<String>) {
    let args = vec![everything_main().display().to_string(), "stdio".to_owned()];
    (find_program("node"), args)
}

/// A peer server process listening on 127.0.0.1; dropping it kills its whole process group.
#[derive(Debug)]
pub struct PeerServer {
    /// The MCP endpoint: `http://127.0.0.1:PORT/mcp` (Streamable HTTP) or `.../sse` (HTTP+SSE).
    pub url: String,
    /// The TCP port on 127.0.0.1.
    pub port: u16,
    child: Child,
    log: PathBuf,
}

impl PeerServer {
    /// server-everything with `transport` `"streamableHttp"` (endpoint `/mcp`) or `"sse"` (the
    /// legacy HTTP+SSE transport: `GET /sse`, then POSTs to the announced `/message?sessionId=...`).
    pub fn everything(transport: &str) -> PeerServer {
        let path = match transport {
            "streamableHttp" => "/mcp",
            "sse" => "/sse",
            other => {
                panic!("server-everything transport {other:?}: use \"streamableHttp\" or \"sse\"")
            }
        };
        assert!(
            Peer::Everything.is_installed(),
            "server-everything is not installed in {}: {INSTALL_HINT}",
            peers_dir().display()
        );
        PeerServer::start(&format!("everything-{transport}"), path, |port| {
            let mut cmd = Command::new(find_program("node"));
            // server-everything calls app.listen(PORT) without a host: the preload pins it to loopback.
            cmd.arg("--require")
                .arg(repo_path("tests/peers/loopback.cjs"))
                .arg(everything_main())
                .arg(transport)
                .env("PORT", port.to_string())
                // Its gzip tool may then only fetch from loopback (its default URL is on GitHub).
                .env("GZIP_ALLOWED_DOMAINS", "localhost,127.0.0.1");
            cmd
        })
    }

    /// `tests/peers/py_server.py` on the given SDK, with extra arguments (`--json-response`,
    /// `--stateless`, `--event-store`, `--retry-ms N`, `--page-size N`, `--drop-stream-after N`,
    /// `--transport sse`). The endpoint is `/mcp`, or `/sse` with `--transport sse`.
    pub fn python(sdk: Sdk, args: &[&str]) -> PeerServer {
        assert!(
            Peer::Python(sdk).is_installed(),
            "the Python SDK {sdk:?} is not installed in {}: {INSTALL_HINT}",
            peers_dir().display()
        );
        let sse = args.windows(2).any(|w| w == ["--transport", "sse"])
            || args.contains(&"--transport=sse");
        let path = if sse { "/sse" } else { "/mcp" };
        let name = format!("py-{}", sdk.venv().trim_start_matches("venv-"));
        PeerServer::start(&name, path, |port| {
            python_http_command(sdk, &py_server_script(), port, args)
        })
    }

    /// `tests/peers/py_auth_server.py` on mcp 2.x: an OAuth-protected MCP server and its
    /// authorization server in one process, from the SDK's own auth support, with extra
    /// arguments (`--token-ttl N`, `--scopes S`). The endpoint is `/mcp`.
    pub fn python_auth(args: &[&str]) -> PeerServer {
        let sdk = Sdk::V2;
        assert!(
            Peer::Python(sdk).is_installed(),
            "the Python SDK {sdk:?} is not installed in {}: {INSTALL_HINT}",
            peers_dir().display()
        );
        let script = repo_path("tests/peers/py_auth_server.py");
        PeerServer::start("py-auth", "/mcp", |port| {
            python_http_command(sdk, &script, port, args)
        })
    }

    /// `tests/peers/py_trace_server.py` on mcp 2.x with the OpenTelemetry SDK that
    /// `scripts/install-peers` pins beside it: its tool `trace_seen` tells the trace context
    /// the SDK's server span was made from. The endpoint is `/mcp`.
    pub fn python_trace() -> PeerServer {
        let sdk = Sdk::V2;
        assert!(
            Peer::Python(sdk).is_installed(),
            "the Python SDK {sdk:?} is not installed in {}: {INSTALL_HINT}",
            peers_dir().display()
        );
        let script = repo_path("tests/peers/py_trace_server.py");
        PeerServer::start("py-trace", "/mcp", |port| {
            python_http_command(sdk, &script, port, &[])
        })
    }

    /// `tests/peers/ts2_server.mjs` (TypeScript SDK v2, `createMcpHandler`) with extra arguments
    /// (`--legacy reject`, `--response-mode sse|json`, `--keepalive-ms N`, `--ttl-ms N`,
    /// `--cache-scope public`). By default it serves protocol 2026-07-28 and, statelessly, the
    /// 2025 initialize path at `/mcp`; with `--legacy reject` only 2026-07-28.
    pub fn ts2(args: &[&str]) -> PeerServer {
        assert!(
            Peer::Ts2.is_installed(),
            "the TypeScript SDK v2 server is not installed in {}: {INSTALL_HINT}",
            peers_dir().display()
        );
        PeerServer::start("ts2", "/mcp", |port| {
            let mut cmd = Command::new(node22());
            cmd.arg(ts2_server_script())
                .arg("--port")
                .arg(port.to_string())
                .arg("--sdk-dir")
                .arg(ts2_dir())
                .args(args);
            cmd
        })
    }

    /// `fixtures/servers/rmcp-server` (rmcp 3, `StreamableHttpService`) with extra arguments
    /// (`--stateless`, `--json-response`, `--page-size N`, `--sse-retry-ms N`, `--tasks`). It serves
    /// 2026-07-28 statelessly and the 2025 revisions with an MCP session (unless
    /// `--stateless`) at `/mcp`.
    pub fn rmcp(args: &[&str]) -> PeerServer {
        assert!(
            Peer::Rmcp.is_installed(),
            "the rmcp 3 server is not installed in {}: {INSTALL_HINT}",
            peers_dir().display()
        );
        PeerServer::start("rmcp", "/mcp", |port| {
            let mut cmd = Command::new(rmcp_server());
            cmd.arg("--port").arg(port.to_string()).args(args);
            cmd
        })
    }

    /// The file that holds the server's stdout and stderr.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }

    /// Starts the command that `build(port)` makes on a free port and waits until it accepts
    /// connections. A port taken between our probe and the server's bind is retried.
    fn start(name: &str, path: &str, build: impl Fn(u16) -> Command) -> PeerServer {
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let port = free_port();
            let log = log_file(name, port);
            let mut cmd = build(port);
            let out =
                File::create(&log).unwrap_or_else(|e| panic!("create {}: {e}", log.display()));
            let err = out.try_clone().expect("clone log file handle");
            cmd.stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .process_group(0);
            let child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("{name}: cannot start {cmd:?}: {e}"));
            let mut server = PeerServer {
                url: format!("http://127.0.0.1:{port}{path}"),
                port,
                child,
                log,
            };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(why) => {
                    let tail = server.log_tail(LOG_TAIL_LINES);
                    drop(server); // stops whatever is left of it
                    let port_taken = tail.contains("already in use") || tail.contains("EADDRINUSE");
                    if port_taken && attempt < ATTEMPTS {
                        continue;
                    }
                    panic!("{name} on port {port}: {why}; last lines of its log:\n{tail}");
                }
            }
        }
        unreachable!("the last attempt panics")
    }

    /// Whether the server's log says it listens on its port: uvicorn's "Uvicorn running on
    /// http://127.0.0.1:PORT", server-everything's "... listening on port PORT" (Streamable
    /// HTTP) or "... running on port PORT" (HTTP+SSE), ts2_server's "listening on
    /// http://127.0.0.1:PORT/mcp".
    fn says_listening(&self) -> bool {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let port = self.port;
        log.contains(&format!("running on http://127.0.0.1:{port} "))
            || log.contains(&format!("listening on port {port}"))
            || log.contains(&format!("running on port {port}"))
            || log.contains(&format!("listening on http://127.0.0.1:{port}/mcp "))
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Err(format!("exited before accepting connections ({status})"));
            }
            if let Ok(stream) = TcpStream::connect_timeout(&addr, POLL) {
                // A connect to a port nobody listens on can land on itself (TCP simultaneous
                // open, when the kernel picks that same port as the source): not a server.
                let self_connected = stream.local_addr().ok() == stream.peer_addr().ok();
                // The port may also have been taken by another process's listener (parallel
                // tests bind port 0 all the time) while our server failed to bind it: only our
                // server's own log line saying it listens there counts.
                if !self_connected && self.says_listening() {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "not accepting connections after {START_DEADLINE:?}"
                ));
            }
            sleep(POLL);
        }
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        signal_group("TERM", &group);
        let deadline = Instant::now() + STOP_GRACE;
        // Reap the leader first: a zombie would still count as a member of the group.
        while self.child.try_wait().ok().flatten().is_none() || group_alive(&group) {
            if Instant::now() >= deadline {
                signal_group("KILL", &group);
                let _ = self.child.wait();
                break;
            }
            sleep(POLL);
        }
    }
}

/// Sends `signal` to the process group `group` (`-PGID`) with kill(1); errors are ignored.
fn signal_group(signal: &str, group: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", group])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Whether any process of the group still exists (`kill -0 -PGID`).
fn group_alive(group: &str) -> bool {
    Command::new("kill")
        .args(["-0", "--", group])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A port that was free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    // The kernel may hand the same port to two probes in a row; servers started by this
    // process never share one.
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A fresh log file path under the target directory.
fn log_file(name: &str, port: u16) -> PathBuf {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("peer-logs");
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{name}-{}-{seq}-{port}.log", std::process::id()))
}

fn tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::ChildStdin;

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpwire-peers-test","version":"0"}}}"#;
    const IO_TIMEOUT: Duration = Duration::from_secs(10);

    /// A hand-written HTTP/1.1 request with `Connection: close`. Reads until the server closes
    /// the connection or `done(response so far)`; returns the status and the raw response (head
    /// and body, chunked or not).
    fn http(
        port: u16,
        request_line: &str,
        headers: &[(&str, &str)],
        body: &str,
        done: impl Fn(&str) -> bool,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("read timeout");
        let mut request =
            format!("{request_line} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        stream.write_all(request.as_bytes()).expect("send request");
        let mut response = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => response.extend_from_slice(&buf[..n]),
                // A signal to the test process (a child's SIGCHLD, with the other tests'
                // handlers installed) interrupts a blocking read; `read` does not retry it.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!(
                    "reading the response: {e}; so far: {}",
                    String::from_utf8_lossy(&response)
                ),
            }
            if done(&String::from_utf8_lossy(&response)) {
                break;
            }
        }
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP/1.1 response: {text:?}"));
        (status, text)
    }

    /// Whether a trimmed source line is a call of [`require`] (a statement of its own).
    fn is_require_call(line: &str) -> bool {
        let call = line
            .trim_start_matches("crate::support::peers::")
            .trim_start_matches("peers::");
        call.starts_with("require(") && call.ends_with(");")
    }

    /// Every test in `tests/` that calls [`require`] is `#[ignore = IGNORE_REASON]`, and every
    /// test ignored for that reason calls it: no peer test can pass, or run, without its peer
    /// unnoticed. Reads the sources, so it needs no peer.
    #[test]
    fn every_peer_test_is_ignored_and_checks_its_peer() {
        let ignore = format!("#[ignore = {IGNORE_REASON:?}]");
        let mut files = Vec::new();
        for dir in ["tests", "tests/support"] {
            for entry in fs::read_dir(super::super::repo_root().join(dir)).expect("read tests/") {
                let path = entry.expect("dir entry").path();
                if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        let (mut calls, mut ignored, mut problems) = (0, 0, Vec::new());
        for path in &files {
            let source = fs::read_to_string(path).expect("read a test source");
            let lines: Vec<&str> = source.lines().map(str::trim).collect();
            let is_fn = |line: &str| {
                line.starts_with("fn ") || line.starts_with("async fn ") || line.contains(" fn ")
            };
            for (at, line) in lines.iter().enumerate() {
                let place = format!("{}:{}", path.display(), at + 1);
                if is_require_call(line) {
                    calls += 1;
                    // The attributes (and doc lines) above the enclosing fn.
                    let Some(fn_at) = (0..at).rev().find(|&i| is_fn(lines[i])) else {
                        problems.push(format!("{place}: a require outside a fn"));
                        continue;
                    };
                    let attributes = (0..fn_at)
                        .rev()
                        .take_while(|&i| {
                            let l = lines[i];
                            l.starts_with("#[") || l.starts_with("///") || l.starts_with("$(")
                        })
                        .map(|i| lines[i]);
                    if !attributes.clone().any(|l| l == ignore) {
                        problems.push(format!("{place}: {} is not {ignore}", lines[fn_at]));
                    }
                } else if *line == ignore {
                    ignored += 1;
                    let Some(fn_at) = (at..lines.len()).find(|&i| is_fn(lines[i])) else {
                        problems.push(format!("{place}: an ignore without a fn"));
                        continue;
                    };
                    // Its first statements (a test checks its peer before anything else).
                    let head = &lines[fn_at + 1..lines.len().min(fn_at + 12)];
                    if !head.iter().any(|l| is_require_call(l)) {
                        problems.push(format!("{place}: {} never calls require", lines[fn_at]));
                    }
                }
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
        assert!(
            calls > 40 && ignored > 40,
            "found {calls} calls, {ignored} ignored tests"
        );
    }

    fn post_initialize_to(port: u16, path: &str) -> (u16, String) {
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        http(port, &format!("POST {path}"), &headers, INITIALIZE, |_| {
            false
        })
    }

    fn post_initialize(server: &PeerServer) {
        let path = server
            .url
            .trim_start_matches(&format!("http://127.0.0.1:{}", server.port));
        let (status, response) = post_initialize_to(server.port, path);
        assert_eq!(status, 200, "initialize answered {response}");
        assert!(
            response.contains(r#""protocolVersion""#),
            "no protocolVersion in {response}"
        );
        assert!(
            response.contains(r#""serverInfo""#),
            "no serverInfo in {response}"
        );
    }

    /// The legacy transport's GET stream opens with an `endpoint` event naming the POST URL.
    fn get_sse_endpoint(server: &PeerServer) -> String {
        // The stream stays open: stop once the event's data line is complete.
        let endpoint_seen = |so_far: &str| {
            so_far
                .split_once("event: endpoint")
                .and_then(|(_, rest)| rest.split_once("data:"))
                .is_some_and(|(_, data)| data.contains('\n'))
        };
        let (status, response) = http(
            server.port,
            "GET /sse",
            &[("Accept", "text/event-stream")],
            "",
            endpoint_seen,
        );
        assert_eq!(status, 200, "GET /sse answered {response}");
        assert!(
            response.contains("event: endpoint"),
            "no endpoint event in {response}"
        );
        response
    }

    fn send_line(stdin: &mut ChildStdin, line: &str) {
        stdin
            .write_all(line.as_bytes())
            .expect("write to the server's stdin");
        stdin.write_all(b"\n").expect("write to the server's stdin");
        stdin.flush().expect("flush the server's stdin");
    }

    /// Spawns a stdio server, sends initialize, and returns the first line it writes.
    fn stdio_initialize(program: &Path, args: &[String]) -> String {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        let mut stdin = child.stdin.take().expect("stdin");
        send_line(&mut stdin, INITIALIZE);
        let stdout = child.stdout.take().expect("stdout");
        // Read on a thread so a silent server fails the test instead of hanging it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(START_DEADLINE);
        drop(stdin); // EOF: the server should exit by itself
        let deadline = Instant::now() + STOP_GRACE;
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            sleep(POLL);
        }
        if child.try_wait().ok().flatten().is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        line.unwrap_or_else(|_| {
            panic!(
                "{} wrote nothing within {START_DEADLINE:?}",
                program.display()
            )
        })
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn everything_streamable_http_answers_initialize() {
        require(Peer::Everything);
        let server = PeerServer::everything("streamableHttp");
        assert!(server.url.ends_with("/mcp"), "{}", server.url);
        post_initialize(&server);
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn everything_sse_transport_announces_its_endpoint() {
        require(Peer::Everything);
        let server = PeerServer::everything("sse");
        let response = get_sse_endpoint(&server);
        assert!(response.contains("/message?sessionId="), "{response}");
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn python_v2_answers_initialize() {
        require(Peer::Python(Sdk::V2));
        post_initialize(&PeerServer::python(Sdk::V2, &[]));
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn python_v1_answers_initialize() {
        require(Peer::Python(Sdk::V1));
        post_initialize(&PeerServer::python(Sdk::V1, &[]));
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn python_json_response_mode_answers_with_json() {
        for sdk in [Sdk::V1, Sdk::V2] {
            require(Peer::Python(sdk));
            let server = PeerServer::python(sdk, &["--json-response", "--stateless"]);
            let (status, response) = post_initialize_to(server.port, "/mcp");
            assert_eq!(status, 200, "{sdk:?}: {response}");
            let lower = response.to_ascii_lowercase();
            assert!(
                lower.contains("content-type: application/json"),
                "{sdk:?}: {response}"
            );
            assert!(
                !lower.contains("mcp-session-id"),
                "{sdk:?} stateless sent a session id: {response}"
            );
        }
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn python_sse_transport_announces_its_endpoint() {
        for sdk in [Sdk::V1, Sdk::V2] {
            require(Peer::Python(sdk));
            let server = PeerServer::python(sdk, &["--transport", "sse"]);
            assert!(server.url.ends_with("/sse"), "{}", server.url);
            let response = get_sse_endpoint(&server);
            assert!(
                response.contains("/messages/?session_id="),
                "{sdk:?}: {response}"
            );
        }
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn python_stdio_answers_initialize() {
        for sdk in [Sdk::V1, Sdk::V2] {
            require(Peer::Python(sdk));
            let (program, args) = python_stdio_command(sdk);
            let line = stdio_initialize(&program, &args);
            assert!(line.contains(r#""id":1"#), "{sdk:?}: {line}");
            assert!(
                line.contains(r#""protocolVersion":"2025-11-25""#),
                "{sdk:?}: {line}"
            );
        }
    }

    /// A 2026-07-28 `server/discover` POST with the envelope and headers the revision asks for.
    fn post_server_discover(port: u16) -> (u16, String) {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpwire-peers-test","version":"0"}}}}"#;
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "server/discover"),
        ];
        http(port, "POST /mcp", &headers, body, |_| false)
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn ts2_answers_initialize_on_the_2025_path() {
        require(Peer::Ts2);
        let server = PeerServer::ts2(&[]);
        assert!(server.url.ends_with("/mcp"), "{}", server.url);
        post_initialize(&server);
        assert!(
            server
                .log_tail(5)
                .contains("@modelcontextprotocol/server 2."),
            "{}",
            server.log_tail(5)
        );
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn ts2_answers_server_discover() {
        require(Peer::Ts2);
        let server = PeerServer::ts2(&[]);
        let (status, response) = post_server_discover(server.port);
        assert_eq!(status, 200, "{response}");
        assert!(
            response.contains(r#""supportedVersions":["2026-07-28"]"#),
            "{response}"
        );
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn ts2_legacy_reject_refuses_initialize() {
        require(Peer::Ts2);
        let server = PeerServer::ts2(&["--legacy", "reject"]);
        let (status, response) = post_initialize_to(server.port, "/mcp");
        assert_eq!(status, 400, "{response}");
        assert!(response.contains(r#""code":-32022"#), "{response}");
        let (status, response) = post_server_discover(server.port);
        assert_eq!(status, 200, "{response}");
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn everything_stdio_answers_initialize() {
        require(Peer::Everything);
        let (program, args) = everything_stdio_command();
        let line = stdio_initialize(&program, &args);
        assert!(line.contains(r#""protocolVersion":"2025-11-25""#), "{line}");
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn dropping_a_server_frees_its_port_and_keeps_its_log() {
        require(Peer::Python(Sdk::V2));
        let server = PeerServer::python(Sdk::V2, &[]);
        let (port, log) = (server.port, server.log_path().to_owned());
        let started = Instant::now();
        drop(server);
        assert!(
            started.elapsed() < STOP_GRACE,
            "stopping took {:?}",
            started.elapsed()
        );
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        assert!(
            TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
            "port {port} still accepts connections"
        );
        assert!(tail(&log, 50).contains("mcp 2."), "{}", tail(&log, 50));
    }

    #[test]
    #[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
    fn servers_listen_on_loopback_only() {
        require(Peer::Everything);
        require(Peer::Python(Sdk::V2));
        require(Peer::Ts2);
        // /proc/net/tcp lists listening sockets (state 0A) as hex local_address:port.
        let servers = [
            PeerServer::everything("streamableHttp"),
            PeerServer::python(Sdk::V2, &[]),
            PeerServer::ts2(&[]),
        ];
        let table = fs::read_to_string("/proc/net/tcp").expect("read /proc/net/tcp")
            + &fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
        for server in &servers {
            let port = format!(":{:04X}", server.port);
            let mut listening = 0;
            for line in table.lines() {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else {
                    continue;
                };
                if local.ends_with(&port) && *state == "0A" {
                    listening += 1;
                    // 0100007F is 127.0.0.1 in /proc/net/tcp byte order.
                    assert!(
                        local.starts_with("0100007F:"),
                        "{} listens on {local}",
                        server.url
                    );
                }
            }
            assert!(listening > 0, "nothing listens on port {}", server.port);
        }
    }
}
