//! The stdio transport (MCP `basic/transports.mdx`, "stdio"): the server is a child process;
//! messages are newline-delimited JSON on its stdin and stdout; its stderr is logging, never
//! an error.
//!
//! A line on stdout that is not JSON-RPC is skipped and logged (servers print banners), a line
//! longer than the limit ends the session, and shutdown closes stdin, waits, terminates the
//! process group, waits, then kills it.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, mpsc};

use super::{LinkEvent, LinkEvents, WireLog};
use crate::jsonrpc::{self, Message};
use crate::secret::Secret;
use crate::session::{Delivery, Failure, FailureKind};

/// Environment variables every stdio server gets, besides those a configuration names:
/// enough to find programs and a home directory, nothing that might hold a credential.
const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];

/// Parts of a variable's name that say it holds a credential (compared in upper case).
const CREDENTIAL_NAME_PARTS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "PRIVATE",
];

/// The shortest value treated as a credential: shorter ones would mangle ordinary text
/// wherever they occur.
const MIN_CREDENTIAL_BYTES: usize = 8;

/// The values among `env` that are credentials by their variable's name (`GITHUB_TOKEN`,
/// `OPENAI_API_KEY`, `DB_PASSWORD`, ...; the name holds KEY, TOKEN, SECRET, PASSWORD, PASSWD,
/// CREDENTIAL, AUTH, COOKIE or PRIVATE, in any case), at least 8 bytes long. A stdio
/// server gets its credentials this way, and may echo them in a result, a progress message,
/// an error or its stderr: the client redacts them from all of these, as it does a bearer
/// token.
pub(crate) fn credential_values(env: &[(String, String)]) -> Vec<Secret> {
    env.iter()
        .filter(|(name, value)| {
            let name = name.to_ascii_uppercase();
            value.len() >= MIN_CREDENTIAL_BYTES
                && CREDENTIAL_NAME_PARTS.iter().any(|part| name.contains(part))
        })
        .map(|(_, value)| Secret::new(value.clone()))
        .collect()
}

/// `log`, with every credential in `secrets` taken out of each line first.
fn redacting(log: Option<WireLog>, secrets: &[Secret]) -> Option<WireLog> {
    let log = log?;
    if secrets.is_empty() {
        return Some(log);
    }
    let secrets = secrets.to_vec();
    Some(Arc::new(move |line: &str| {
        log(&crate::secret::redact_all(&secrets, line))
    }))
}

/// How to run a stdio server.
#[derive(Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The program to run (looked up on `PATH` when it has no slash).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables to set, by name and value. The child starts from an empty
    /// environment plus a few harmless basics (`PATH`, `HOME`, `LANG`, ...), so credentials in
    /// the host's environment reach it only when named here. Values that are credentials by
    /// their name (it holds KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH, COOKIE or
    /// PRIVATE, in any case, and the value is at least 8 bytes long) are redacted from the
    /// logs below and from what the client returns.
    pub env: Vec<(String, String)>,
    /// The working directory, if not the current one.
    pub cwd: Option<PathBuf>,
    /// The longest line accepted on stdout, in bytes.
    pub max_line_bytes: usize,
    /// How long to wait after closing stdin, and again after terminating, before the next
    /// step of shutdown.
    pub shutdown_grace: Duration,
    /// Receives the server's stderr, line by line, and notes about skipped stdout lines.
    pub stderr_log: Option<WireLog>,
    /// Receives a trace of the messages exchanged.
    pub wire_log: Option<WireLog>,
}

impl std::fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioConfig")
            .field("program", &self.program)
            .field("args", &self.args)
            // Values may be credentials.
            .field(
                "env",
                &self.env.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("cwd", &self.cwd)
            .field("max_line_bytes", &self.max_line_bytes)
            .finish_non_exhaustive()
    }
}

impl StdioConfig {
    /// Runs `program` with `args`, default limits, nothing extra in the environment.
    pub fn new(program: impl Into<PathBuf>, args: Vec<String>) -> Self {
        StdioConfig {
            program: program.into(),
            args,
            env: Vec::new(),
            cwd: None,
            max_line_bytes: 16 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
            stderr_log: None,
            wire_log: None,
        }
    }
}

/// A running stdio server.
pub(crate) struct StdioLink {
    /// Taken at close: dropping the last sender ends the writer task, which closes stdin.
    outgoing: std::sync::Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    events: LinkEvents,
    child: Arc<Mutex<Child>>,
    pid: Option<u32>,
    grace: Duration,
    wire_log: Option<WireLog>,
}

impl StdioLink {
    /// Starts the server. Fails (nothing sent) when the program cannot be started.
    pub(crate) fn spawn(mut config: StdioConfig, events: LinkEvents) -> Result<Self, Failure> {
        let secrets = credential_values(&config.env);
        config.stderr_log = redacting(config.stderr_log.take(), &secrets);
        config.wire_log = redacting(config.wire_log.take(), &secrets);
        let mut command = Command::new(&config.program);
        command
            .args(&config.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // Its own process group, so shutdown reaches the processes it starts too.
            .process_group(0);
        for name in BASE_ENV {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        for (name, value) in &config.env {
            command.env(name, value);
        }
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| {
            Failure::new(
                FailureKind::Connect,
                Delivery::NotSent,
                format!("could not start {}: {e}", config.program.display()),
            )
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Failure::new(
                FailureKind::Connect,
                Delivery::NotSent,
                "the child process has no pipes",
            ));
        };
        let (outgoing, queue) = mpsc::channel(1024);
        tokio::spawn(write_lines(stdin, queue, events.clone()));
        tokio::spawn(read_lines(
            stdout,
            config.max_line_bytes,
            events.clone(),
            config.stderr_log.clone(),
            config.wire_log.clone(),
        ));
        tokio::spawn(forward_stderr(stderr, config.stderr_log.clone()));
        Ok(StdioLink {
            outgoing: std::sync::Mutex::new(Some(outgoing)),
            events,
            child: Arc::new(Mutex::new(child)),
            pid,
            grace: config.shutdown_grace,
            wire_log: config.wire_log,
        })
    }

    /// Queues a message for the server's stdin.
    pub(crate) fn send(&self, message: Message<'static>) {
        let mut line = message.encode().into_bytes();
        if let Some(log) = &self.wire_log {
            log(&format!("> {}", String::from_utf8_lossy(&line)));
        }
        line.push(b'\n');
        let queued = self
            .outgoing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|outgoing| outgoing.try_send(line).is_ok());
        if queued == Some(false) {
            // The server stopped reading its stdin with a thousand messages waiting.
            let _ = self.events.try_send(LinkEvent::Down(Failure::new(
                FailureKind::ConnectionLost,
                Delivery::MayHaveReached,
                "the server is not reading its stdin",
            )));
        }
    }

    /// Shuts the server down: closes stdin, waits up to the grace period for it to exit,
    /// terminates its process group, waits again, then kills the group. Each step waits on the
    /// process itself (a server that closed its stdout may still be running), so this returns
    /// within about three grace periods whatever the server does.
    pub(crate) async fn close(&self) {
        // Dropping the only sender ends the writer task once the queue is written, which
        // closes stdin: the server's signal to exit.
        drop(
            self.outgoing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
        let mut child = self.child.lock().await;
        if tokio::time::timeout(self.grace, child.wait()).await.is_ok() {
            return;
        }
        if let Some(pid) = self.pid {
            terminate_group(pid);
        }
        if tokio::time::timeout(self.grace, child.wait()).await.is_ok() {
            return;
        }
        let _ = child.start_kill();
        if let Some(pid) = self.pid {
            kill_group(pid);
        }
        let _ = tokio::time::timeout(self.grace, child.wait()).await;
    }
}

async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut queue: mpsc::Receiver<Vec<u8>>,
    events: LinkEvents,
) {
    while let Some(line) = queue.recv().await {
        let written = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        };
        if let Err(error) = written.await {
            let _ = events
                .send(LinkEvent::Down(Failure::new(
                    FailureKind::ConnectionLost,
                    Delivery::MayHaveReached,
                    format!("writing to the server's stdin failed: {error}"),
                )))
                .await;
            return;
        }
    }
    // Queue closed: dropping stdin here tells the server to exit.
}

/// Reads newline-delimited messages from stdout, within the line limit.
async fn read_lines(
    stdout: impl AsyncRead + Unpin,
    max_line_bytes: usize,
    events: LinkEvents,
    stderr_log: Option<WireLog>,
    wire_log: Option<WireLog>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let end = loop {
        line.clear();
        match read_line_limited(&mut reader, &mut line, max_line_bytes).await {
            Ok(0) => {
                break Failure::new(
                    FailureKind::ConnectionLost,
                    Delivery::MayHaveReached,
                    "the server process closed its stdout (it exited)",
                );
            }
            Ok(_) => {}
            Err(LineError::TooLong) => {
                break Failure::new(
                    FailureKind::LimitExceeded,
                    Delivery::MayHaveReached,
                    format!("the server wrote a line longer than the {max_line_bytes}-byte limit"),
                );
            }
            Err(LineError::Io(error)) => {
                break Failure::new(
                    FailureKind::ConnectionLost,
                    Delivery::MayHaveReached,
                    format!("reading the server's stdout failed: {error}"),
                );
            }
        }
        let text = trim_line_end(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match jsonrpc::decode(text) {
            Ok(packet) => {
                if let Some(log) = &wire_log {
                    log(&format!("< {}", String::from_utf8_lossy(text)));
                }
                for message in packet.into_messages() {
                    if events
                        .send(LinkEvent::Message(message.into_owned()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
            Err(error) => {
                if let Some(log) = &stderr_log {
                    let shown: String =
                        String::from_utf8_lossy(&text[..text.len().min(200)]).into();
                    log(&format!(
                        "skipped a stdout line that is not JSON-RPC ({error}): {shown}"
                    ));
                }
            }
        }
    };
    let _ = events.send(LinkEvent::Down(end)).await;
}

enum LineError {
    TooLong,
    Io(std::io::Error),
}

/// Reads one line (up to and including `\n`) into `line`, refusing more than `limit` bytes
/// without buffering them. Returns the bytes read; 0 at end of stream.
async fn read_line_limited(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    line: &mut Vec<u8>,
    limit: usize,
) -> Result<usize, LineError> {
    loop {
        let available = reader.fill_buf().await.map_err(LineError::Io)?;
        if available.is_empty() {
            return Ok(line.len());
        }
        let (take, done) = match memchr::memchr(b'\n', available) {
            Some(newline) => (newline + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > limit + 2 {
            return Err(LineError::TooLong);
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            return Ok(line.len());
        }
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Forwards stderr to the log line by line (long lines cut), or discards it.
async fn forward_stderr(stderr: impl AsyncRead + Unpin, log: Option<WireLog>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_limited(&mut reader, &mut line, 64 * 1024).await {
            Ok(0) | Err(LineError::Io(_)) => return,
            Ok(_) => {
                if let Some(log) = &log {
                    log(&format!(
                        "stderr: {}",
                        String::from_utf8_lossy(trim_line_end(&line))
                    ));
                }
            }
            Err(LineError::TooLong) => {
                // Skip the rest of an overlong line.
                let mut skipped = Vec::new();
                let _ = reader.read_until(b'\n', &mut skipped).await;
            }
        }
    }
}

/// Sends SIGTERM to the process group `pid` leads.
fn terminate_group(pid: u32) {
    signal_group(pid, libc::SIGTERM);
}

/// Sends SIGKILL to the process group `pid` leads.
fn kill_group(pid: u32) {
    signal_group(pid, libc::SIGKILL);
}

#[allow(unsafe_code)]
fn signal_group(pid: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours. The negative pid
    // addresses the process group the child leads (it was spawned with process_group(0)), so
    // the signal reaches only the server and the processes it started.
    unsafe {
        libc::kill(-pid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_values_go_by_the_variable_name_and_skip_short_values() {
        let env: Vec<(String, String)> = [
            ("GITHUB_TOKEN", "ghp_0123456789"),
            ("openai_api_key", "sk-abcdefgh"),
            ("DB_PASSWORD", "hunter2hunter2"),
            ("SERVICE_AUTH", "short"),
            ("REGION", "eu-west-1-region"),
            ("LOG_LEVEL", "debug"),
        ]
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
        let exposed: Vec<String> = credential_values(&env)
            .iter()
            .map(|secret| secret.expose().to_owned())
            .collect();
        assert_eq!(exposed, ["ghp_0123456789", "sk-abcdefgh", "hunter2hunter2"]);
    }

    #[test]
    fn a_redacting_log_hides_every_credential() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        let log: WireLog = Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned()));
        let secrets = [Secret::new("first-secret"), Secret::new("second-secret")];
        let log = redacting(Some(log), &secrets).expect("a log");
        log("a first-secret and a second-secret");
        assert_eq!(*lines.lock().unwrap(), ["a <redacted> and a <redacted>"]);
    }
}
