//! Conformance against the wire fixtures under `fixtures/`: every fixture directory is served by
//! the replay server (`mcpwire::fixture::replay`) and mcpwire runs the steps of its
//! `expect.json` through the real HTTP stack (discovery as `mcp-tools` does it, calls as
//! `mcpwire call` does them). Each step's bindings, progress events and `tool.result` must equal
//! the expectation, every request must match the recording and every recorded exchange must be
//! asked for. Each fixture runs twice: with the recorded chunking and gaps, and with the response
//! bytes written one byte at a time. No real server is needed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use mcpwire::auth::Secret;
use mcpwire::binding::call::{CallContext, Caller, TokenSource};
use mcpwire::binding::config::{Server, load_config};
use mcpwire::binding::discover::{Discovery, discover};
use mcpwire::fixture::record::{RecordOptions, Recorder, redacted_header};
use mcpwire::fixture::replay::{ReplayOptions, ReplayServer, Split};
use mcpwire::fixture::{
    Exchange, Framing, client_protocol, load_exchanges, load_provenance, server_info,
};
use mcpwire::session::EraPolicy;
use mcpwire::transport::http::{HttpPool, TlsOptions};

/// The whole fixture set may not grow past this (they are checked in).
const MAX_TOTAL_BYTES: u64 = 3 * 1024 * 1024;
/// How many fixtures replay at once.
const CONCURRENT_FIXTURES: usize = 4;
/// One fixture's replay, both steps and report, must end within this.
const FIXTURE_DEADLINE: Duration = Duration::from_secs(60);

fn root() -> PathBuf {
    crate::support::repo_root().join("fixtures")
}

/// Every directory under `fixtures/` holding an `exchanges.jsonl`, sorted.
fn fixture_dirs() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.join("exchanges.jsonl").is_file() {
                    found.push(path.clone());
                }
                walk(&path, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root(), &mut found);
    found.sort();
    found
}

fn name(dir: &Path) -> String {
    dir.strip_prefix(root())
        .unwrap_or(dir)
        .display()
        .to_string()
}

/// The made-up token every binding that names a token variable gets.
const FIXTURE_TOKEN: &str = "fixture-token";

/// Gives every binding that names a token variable the same made-up token.
struct FixtureTokens;

impl TokenSource for FixtureTokens {
    fn token(&self, _name: &str) -> Option<Secret> {
        Some(Secret::new(FIXTURE_TOKEN))
    }
}

fn same(what: &str, expected: &Value, actual: &Value) -> Result<(), String> {
    if expected == actual {
        return Ok(());
    }
    Err(format!(
        "{what}: expected\n{}\ngot\n{}",
        serde_json::to_string_pretty(expected).unwrap_or_default(),
        serde_json::to_string_pretty(actual).unwrap_or_default()
    ))
}

/// `legacy`: the step was recorded by a 2025-era client, so it is replayed by one (no probe).
async fn run_step(pool: &HttpPool, url: &str, step: &Value, legacy: bool) -> Result<(), String> {
    if let Some(what) = step.get("discover") {
        let tools = what["tools"]
            .as_array()
            .ok_or("discover.tools is not an array")?
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_owned())
            .collect();
        let url = what
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or(url)
            .to_owned();
        let mut discovery = Discovery::new(
            Server::http(url),
            what["tenant"].as_str().unwrap_or_default().to_owned(),
            tools,
        );
        discovery.timeout = Duration::from_secs(30);
        if legacy {
            discovery.era = EraPolicy::Legacy;
        }
        return match (discover(pool, &discovery).await, step.get("error")) {
            (Ok(bindings), None) => {
                let actual = serde_json::to_value(&bindings).map_err(|e| e.to_string())?;
                same("bindings", &step["bindings"], &actual)
            }
            (Ok(bindings), Some(error)) => Err(format!(
                "discovery should have failed with {error}, got {} binding(s)",
                bindings.len()
            )),
            (Err(e), expected) => same(
                "discovery error",
                expected.unwrap_or(&Value::Null),
                &Value::from(format!("{e} ({})", e.kind())),
            ),
        };
    }
    let call = step
        .get("call")
        .ok_or("a step is neither discover nor call")?;
    let bindings = load_config(&json!([call["binding"]]).to_string()).map_err(|e| e.to_string())?;
    let tool = bindings[0].name.clone();
    let urls: Vec<String> = bindings
        .iter()
        .filter_map(|binding| match &binding.server {
            Server::Http { url, .. } => Some(url.clone()),
            _ => None,
        })
        .collect();
    let caller =
        Caller::new(pool.clone(), bindings, Arc::new(FixtureTokens)).map_err(|e| e.to_string())?;
    if legacy {
        for url in &urls {
            caller.era_cache().remember(url, None);
        }
    }
    let context = CallContext::new(
        call["tenant"].as_str().unwrap_or_default().to_owned(),
        call["session_id"].as_str().unwrap_or_default().to_owned(),
        call["call_id"].as_str().unwrap_or_default().to_owned(),
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let result = caller
        .call_events(
            &tool,
            &context,
            &call["arguments"],
            move |event| {
                let line: Value = serde_json::from_str(&event.to_json_line()).expect("JSON");
                sink.lock().expect("events").push(line);
            },
            None,
        )
        .await;
    let events = Value::Array(events.lock().expect("events").clone());
    // Progress and task status events, as `mcpwire call` prints them.
    same("events", &step["events"], &events)?;
    same("tool.result", &step["result"], &result.to_json())
}

/// Replays one fixture and runs its expectation; the error says what differed.
/// How a fixture is run.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Straight against the replay server, with its bytes cut as given.
    Replay(Split),
    /// Through the recording proxy in front of the replay server: the new recording must equal
    /// the fixture (the proxy and the replay server are each other's inverse).
    Rerecord,
}

/// Replays one fixture and runs its expectation; the error says what differed.
async fn replay_fixture(dir: PathBuf, mode: Mode) -> Result<(), String> {
    // A connection the recorder itself cut (`mcpwire record --cut-poll`) is not the server's
    // doing: a recorder in front of the replay sees the replay close it, which it records as
    // it should, but not as the fault did. Such a fixture is replayed (both splits), not
    // re-recorded.
    let provenance = std::fs::read_to_string(dir.join("provenance.json")).unwrap_or_default();
    if matches!(mode, Mode::Rerecord) && provenance.contains("record --cut-poll") {
        return Ok(());
    }
    let exchanges = load_exchanges(&dir)?;
    let original = exchanges.clone();
    let split = match mode {
        Mode::Replay(split) => split,
        Mode::Rerecord => Split::Recorded,
    };
    let expect_path = dir.join("expect.json");
    let expect_text = std::fs::read_to_string(&expect_path)
        .map_err(|e| format!("cannot read {}: {e}", expect_path.display()))?;
    let mut options = ReplayOptions::default();
    options.split = split;
    let server = ReplayServer::start(exchanges, options, None)
        .await
        .map_err(|e| e.to_string())?;
    let (url, addr, recorder) = match mode {
        Mode::Replay(_) => (server.url(), server.local_addr(), None),
        Mode::Rerecord => {
            let options = RecordOptions::new(&server.url(), "127.0.0.1:0".parse().expect("addr"))?;
            let recorder = Recorder::start(options).await.map_err(|e| e.to_string())?;
            let addr = recorder.local_addr();
            let url = server
                .url()
                .replace(&server.local_addr().to_string(), &addr.to_string());
            (url, addr, Some(recorder))
        }
    };
    let expect_text = expect_text
        .replace("{{url}}", &url)
        .replace("{{addr}}", &addr.to_string());
    let expect: Value = serde_json::from_str(&expect_text)
        .map_err(|e| format!("{}: {e}", expect_path.display()))?;
    let steps = expect["steps"]
        .as_array()
        .filter(|s| !s.is_empty())
        .ok_or("expect.json has no steps")?;
    // A conversation recorded from a 2025-era client opens with `initialize`: the replaying
    // client is told the verdict the recording client had, as a host that kept it would be,
    // so it opens the same way. One recorded from a client that probed (`server/discover`
    // first) is replayed by one that probes too: nothing is seeded.
    let exchanges =
        std::fs::read_to_string(dir.join("exchanges.jsonl")).map_err(|e| e.to_string())?;
    let first = exchanges.lines().next().unwrap_or_default();
    let seed_2025 = !first.contains("server/discover");
    for (number, step) in steps.iter().enumerate() {
        // Each step was recorded by a process of its own (`mcp-tools`, `mcpwire call`), so
        // each gets a pool of its own: nothing a step learnt (an era verdict, a tool list)
        // carries over to the next.
        let pool = HttpPool::new(&TlsOptions::default()).map_err(|e| e.to_string())?;
        run_step(&pool, &url, step, seed_2025)
            .await
            .map_err(|e| format!("step {number}: {e}"))?;
    }
    // A stream the client closed last may still be winding down on the server's side.
    for _ in 0..40 {
        if server.report().is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let report = server.report();
    if !report.is_ok() {
        return Err(report.describe(server.exchanges()));
    }
    match recorder {
        Some(recorder) => {
            // The client does not wait for the answers to its notifications.
            for _ in 0..100 {
                if recorder.pending() == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let again = recorder.finish();
            // The token the client sent (to the fixtures with a `token_env`) is not kept.
            let text = mcpwire::fixture::exchanges_to_jsonl(&again);
            if text.contains(FIXTURE_TOKEN) {
                return Err(format!(
                    "re-recording: the recording holds the token {FIXTURE_TOKEN:?}"
                ));
            }
            same_wire(&original, &again)
        }
        None => Ok(()),
    }
}

/// What must survive a round trip through the replay server and the recorder: everything but
/// the Host header, the timing, how a length-delimited body was cut into reads, and the
/// credentials the recorder redacts.
fn wire_view(exchange: &Exchange) -> Value {
    let request = &exchange.request;
    let headers: Vec<(&str, String)> = request
        .headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("host"))
        .map(|(n, v)| (n.as_str(), redacted_header(n, v)))
        .collect();
    let response = exchange.response.as_ref().map(|r| {
        let chunks: Vec<Vec<u8>> = if r.framing == Framing::Chunked {
            r.chunks.iter().map(|c| c.data.0.clone()).collect()
        } else {
            vec![r.chunks.iter().flat_map(|c| c.data.0.clone()).collect()]
        };
        json!({"status": r.status, "headers": r.headers, "framing": format!("{:?}", r.framing),
               "chunks": chunks.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>(),
               "end": format!("{:?}", r.end)})
    });
    json!({"method": request.method, "target": request.target, "headers": headers,
           "body": String::from_utf8_lossy(&request.body.0), "response": response,
           "client_closed": exchange.client_closed_ms.is_some()})
}

fn same_wire(original: &[Exchange], again: &[Exchange]) -> Result<(), String> {
    let mut left: Vec<Value> = again.iter().map(wire_view).collect();
    for (index, exchange) in original.iter().enumerate() {
        let want = wire_view(exchange);
        match left.iter().position(|v| *v == want) {
            Some(found) => {
                left.remove(found);
            }
            None => {
                return Err(format!(
                    "re-recording: exchange {index} did not come back the same:\n{}\nrecorded again:\n{}",
                    serde_json::to_string_pretty(&want).unwrap_or_default(),
                    serde_json::to_string_pretty(&left).unwrap_or_default()
                ));
            }
        }
    }
    match left.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "re-recording: {} extra exchange(s): {left:?}",
            left.len()
        )),
    }
}

async fn replay_all(mode: Mode) {
    let dirs = fixture_dirs();
    assert!(
        dirs.len() >= 10,
        "only {} fixtures under {}",
        dirs.len(),
        root().display()
    );
    // A few at a time: the cancellation fixtures give a whole call one second, and a replay
    // that writes one byte per syscall must not starve the client of that second.
    let permits = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_FIXTURES));
    let mut tasks = tokio::task::JoinSet::new();
    for dir in dirs.clone() {
        let permits = permits.clone();
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore");
            let outcome = tokio::time::timeout(FIXTURE_DEADLINE, replay_fixture(dir.clone(), mode))
                .await
                .unwrap_or_else(|_| Err(format!("did not finish within {FIXTURE_DEADLINE:?}")));
            (dir, outcome)
        });
    }
    let mut failures = Vec::new();
    let mut passed = 0;
    while let Some(joined) = tasks.join_next().await {
        let (dir, outcome) = joined.expect("a fixture task panicked");
        match outcome {
            Ok(()) => passed += 1,
            Err(why) => failures.push(format!("{} ({mode:?}): {why}", name(&dir))),
        }
    }
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
    assert_eq!(passed, dirs.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_replays_with_the_recorded_chunking() {
    replay_all(Mode::Replay(Split::Recorded)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_replays_one_byte_at_a_time() {
    replay_all(Mode::Replay(Split::EveryByte)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recording_a_replay_gives_the_fixture_back() {
    replay_all(Mode::Rerecord).await;
}

#[test]
fn fixtures_say_where_they_came_from() {
    let mut total = 0;
    for dir in fixture_dirs() {
        let provenance = load_provenance(&dir).unwrap_or_else(|e| panic!("{e}"));
        let constructed_dir = name(&dir).starts_with("constructed/");
        assert_eq!(
            provenance.constructed,
            constructed_dir,
            "{}: constructed fixtures live under fixtures/constructed/ and only there",
            name(&dir)
        );
        for (field, value) in [
            ("server.name", &provenance.server.name),
            ("mode", &provenance.mode),
            ("date", &provenance.date),
            ("command", &provenance.command),
            ("recorder", &provenance.recorder),
        ] {
            assert!(
                !value.is_empty(),
                "{}: provenance {field} is empty",
                name(&dir)
            );
        }
        // A recording from a client that probed says which revision it spoke, as the
        // recording shows; one that says so must say what the recording shows.
        let exchanges = load_exchanges(&dir).unwrap_or_else(|e| panic!("{e}"));
        let probed = exchanges.first().is_some_and(|e| {
            serde_json::from_slice::<Value>(&e.request.body.0)
                .is_ok_and(|v| v["method"] == "server/discover")
        });
        if probed || provenance.protocol.is_some() {
            assert_eq!(
                provenance.protocol,
                client_protocol(&exchanges),
                "{}: provenance protocol",
                name(&dir)
            );
        }
        if probed && !provenance.constructed {
            assert_eq!(
                server_info(&exchanges).as_ref(),
                Some(&provenance.server),
                "{}: provenance server is the server/discover answer's serverInfo",
                name(&dir)
            );
        }
        for entry in std::fs::read_dir(&dir).expect("read fixture dir").flatten() {
            total += entry.metadata().map_or(0, |m| m.len());
        }
    }
    assert!(
        total < MAX_TOTAL_BYTES,
        "the fixtures take {total} bytes (limit {MAX_TOTAL_BYTES})"
    );
}

#[tokio::test]
async fn a_request_that_does_not_match_gets_a_diff_and_fails_the_replay() {
    let dir = root().join("py-v2-sse-text");
    let server = ReplayServer::start(
        load_exchanges(&dir).expect("fixture"),
        ReplayOptions::default(),
        None,
    )
    .await
    .expect("start replay");
    let pool = HttpPool::new(&TlsOptions::default()).expect("pool");
    let mut discovery = Discovery::new(
        Server::http(server.url()),
        "local",
        vec!["echo_text".into()],
    );
    discovery.timeout = Duration::from_secs(10);
    // Recorded by a 2025-era client: replayed by one.
    discovery.era = EraPolicy::Legacy;
    // The recording holds a tools/call after initialize, not a tools/list.
    let error = discover(&pool, &discovery)
        .await
        .expect_err("tools/list is not in the recording");
    assert!(error.to_string().contains("500"), "{error}");
    let report = server.report();
    assert!(!report.is_ok());
    assert_eq!(report.mismatches.len(), 1, "{report:?}");
    let diff = &report.mismatches[0];
    assert!(
        diff.contains("(tools/list) does not match the expected exchange 2")
            && diff.contains(r#"body $.method: expected "tools/call", got "tools/list""#),
        "{diff}"
    );
    assert!(report.unused.contains(&2), "{report:?}");
}

/// The bytes of a recorded request, as its client sent them.
fn request_bytes(exchange: &Exchange) -> Vec<u8> {
    let request = &exchange.request;
    let mut bytes = format!("{} {} HTTP/1.1\r\n", request.method, request.target).into_bytes();
    for (name, value) in &request.headers {
        bytes.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(&request.body.0);
    bytes
}

#[tokio::test]
async fn a_request_the_recorded_client_gave_up_on_is_held_open_until_the_client_closes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // The call timed out on the client's side before the server sent anything.
    let exchanges = load_exchanges(&root().join("ts2-2026-cancel")).expect("fixture");
    let call = exchanges
        .iter()
        .position(|e| e.response.is_none())
        .expect("an unanswered request");
    assert!(exchanges[call].client_closed_ms.is_some(), "{exchanges:?}");
    let request = request_bytes(&exchanges[call]);
    let mut server_closed = exchanges.clone();
    server_closed[call].client_closed_ms = None;
    for (exchanges, held) in [(exchanges, true), (server_closed, false)] {
        let server = ReplayServer::start(exchanges, ReplayOptions::default(), None)
            .await
            .expect("start replay");
        let mut stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        stream.write_all(&request).await.expect("send");
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await;
        match held {
            // Nothing comes and the connection stays open, as the server kept it.
            true => assert!(read.is_err(), "the replay answered: {read:?}"),
            // The recording's server closed without an answer: so does the replay, at once.
            false => assert!(matches!(read, Ok(Ok(0))), "{read:?}"),
        }
        drop(stream);
        let report = server.report();
        assert!(report.mismatches.is_empty(), "{report:?}");
        assert_eq!(report.served, 1);
    }
}
