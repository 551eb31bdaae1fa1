//! The stdio demo server driven with raw lines over an in-memory pipe, on tokio's paused
//! clock (the tools' delays pass as soon as everything else waits).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

use super::{MAX_LINE_BYTES, serve_stdio};
use crate::demo::Era;
use crate::mcp::modern::{CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY};

/// A client's end of a running stdio server.
struct Pipe {
    to_server: Option<DuplexStream>,
    from_server: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<std::io::Result<()>>,
}

impl Pipe {
    fn start() -> Pipe {
        Pipe::start_with(Era::Both)
    }

    fn start_with(era: Era) -> Pipe {
        Pipe::serving(move |input, output| serve_stdio(input, output, era))
    }

    /// Runs `serve` on one end of a pair of pipes.
    fn serving<F>(serve: impl FnOnce(DuplexStream, DuplexStream) -> F) -> Pipe
    where
        F: Future<Output = std::io::Result<()>> + Send + 'static,
    {
        let (client_in, server_out) = tokio::io::duplex(64 * 1024);
        let (server_in, client_out) = tokio::io::duplex(64 * 1024);
        Pipe {
            to_server: Some(client_out),
            from_server: BufReader::new(client_in).lines(),
            server: tokio::spawn(serve(server_in, server_out)),
        }
    }

    /// Sends a request at 2026-07-28 declaring `capabilities`, its `_meta` merged in.
    async fn modern(&mut self, id: i64, method: &str, mut params: Value, capabilities: Value) {
        let mut meta =
            json!({PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: capabilities});
        if let Some(extra) = params.get("_meta").and_then(Value::as_object) {
            for (key, value) in extra {
                meta[key] = value.clone();
            }
        }
        params["_meta"] = meta;
        self.request(id, method, params).await;
    }

    /// The next message, the answer to request `id` at 2026-07-28: its result, stamped.
    async fn modern_result(&mut self, id: i64) -> Value {
        let answer = self.next().await;
        assert_eq!(answer["id"], id, "{answer}");
        let result = answer["result"].clone();
        assert!(result["resultType"].is_string(), "{answer}");
        assert_eq!(
            result["_meta"][SERVER_INFO_KEY]["name"], "mcpwire-demo",
            "{answer}"
        );
        result
    }

    /// The next message, the error answering request `id`.
    async fn error(&mut self, id: i64, code: i64) -> Value {
        let answer = self.next().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        answer["error"].clone()
    }

    async fn send_raw(&mut self, line: &str) {
        let input = self.to_server.as_mut().expect("input open");
        input.write_all(line.as_bytes()).await.unwrap();
        input.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    /// The next message the server wrote.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.from_server.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("a line before the end");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Closes the server's input; returns every message written after this point and how
    /// the server ended.
    async fn finish(mut self) -> (Vec<Value>, std::io::Result<()>) {
        self.to_server = None;
        let mut rest = Vec::new();
        while let Some(line) = self.from_server.next_line().await.unwrap() {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        (rest, self.server.await.unwrap())
    }
}

fn initialize_params(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {},
           "clientInfo": {"name": "t", "version": "1"}})
}

#[tokio::test(start_paused = true)]
async fn stdio_answers_initialize_tools_list_ping_and_calls_with_progress() {
    let mut pipe = Pipe::start();
    pipe.request(0, "initialize", initialize_params("2025-06-18"))
        .await;
    let init = pipe.next().await;
    assert_eq!(init["id"], 0);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "mcpwire-demo");
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": false})
    );
    pipe.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    // Every page of tools/list, by cursor.
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    for id in 1.. {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        pipe.request(id, "tools/list", params).await;
        let page = pipe.next().await;
        assert_eq!(page["id"], id);
        for tool in page["result"]["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_owned());
        }
        cursor = page["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(names, crate::demo::tests::DEMO_TOOLS_IN_ORDER);

    pipe.request(20, "ping", json!({})).await;
    assert_eq!(
        pipe.next().await,
        json!({"jsonrpc": "2.0", "id": 20, "result": {}})
    );

    pipe.request(
        21,
        "tools/call",
        json!({"name": "progress_report", "arguments": {"steps": 3, "delay_ms": 50},
               "_meta": {"progressToken": "p-1"}}),
    )
    .await;
    for step in 1..=3 {
        let progress = pipe.next().await;
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(
            progress["params"],
            json!({"progressToken": "p-1", "progress": step, "total": 3,
                   "message": format!("step {step} of 3")})
        );
    }
    let result = pipe.next().await;
    assert_eq!(result["id"], 21);
    assert_eq!(
        result["result"]["content"],
        json!([{"type": "text", "text": "done after 3 steps"}])
    );

    // Without a progress token, only the result.
    pipe.request(
        22,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "over stdio"}}),
    )
    .await;
    let echo = pipe.next().await;
    assert_eq!(echo["id"], 22);
    assert_eq!(echo["result"]["content"][0]["text"], "Echo: over stdio");

    let (rest, ended) = pipe.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_calls_run_concurrently_and_a_cancelled_one_sends_nothing_more() {
    let mut pipe = Pipe::start();
    pipe.request(0, "initialize", initialize_params("2025-11-25"))
        .await;
    pipe.next().await;
    pipe.request(
        1,
        "tools/call",
        json!({"name": "progress_report", "arguments": {"steps": 5, "delay_ms": 1000},
               "_meta": {"progressToken": 1}}),
    )
    .await;
    let first = pipe.next().await;
    assert_eq!(first["params"]["progress"], 1);
    // A second call is answered while the first one runs.
    pipe.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "meanwhile"}}),
    )
    .await;
    assert_eq!(pipe.next().await["id"], 2);
    pipe.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 1, "reason": "test"}}),
    )
    .await;
    pipe.request(3, "ping", json!({})).await;
    assert_eq!(pipe.next().await["id"], 3);
    // Long past the call's remaining four seconds: nothing more came for it.
    tokio::time::sleep(Duration::from_secs(10)).await;
    // Its id is free again.
    pipe.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "again"}}),
    )
    .await;
    let again = pipe.next().await;
    assert_eq!(again["id"], 1);
    assert_eq!(again["result"]["content"][0]["text"], "Echo: again");
    let (rest, ended) = pipe.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_refuses_what_it_cannot_answer() {
    let mut pipe = Pipe::start();
    pipe.send_raw("this is not JSON").await;
    let parse = pipe.next().await;
    assert_eq!(parse["id"], Value::Null);
    assert_eq!(parse["error"]["code"], -32700);

    pipe.send_raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)
        .await;
    assert_eq!(pipe.next().await["error"]["code"], -32600);

    pipe.request(2, "resources/list", json!({})).await;
    let unknown = pipe.next().await;
    assert_eq!(unknown["id"], 2);
    assert_eq!(unknown["error"]["code"], -32601);

    pipe.request(3, "tools/call", json!({"arguments": {}}))
        .await;
    assert_eq!(pipe.next().await["error"]["code"], -32602);

    pipe.request(4, "initialize", json!({})).await;
    assert_eq!(pipe.next().await["error"]["code"], -32602);

    // An id already in flight.
    let slow = json!({"name": "progress_report", "arguments": {"steps": 2, "delay_ms": 1000}});
    pipe.request(5, "tools/call", slow.clone()).await;
    pipe.request(5, "tools/call", slow).await;
    let duplicate = pipe.next().await;
    assert_eq!(duplicate["id"], 5);
    assert_eq!(duplicate["error"]["code"], -32600);
    // Responses and unknown notifications get no answer; the first call still ends.
    pipe.send(json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        .await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "notifications/whatever"}))
        .await;
    let result = pipe.next().await;
    assert_eq!(result["id"], 5);
    assert_eq!(result["result"]["content"][0]["text"], "done after 2 steps");
    let (rest, ended) = pipe.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_ends_with_its_input_dropping_calls_in_flight() {
    let mut pipe = Pipe::start();
    pipe.request(
        1,
        "tools/call",
        json!({"name": "progress_report", "arguments": {"steps": 20, "delay_ms": 1000}}),
    )
    .await;
    pipe.request(2, "ping", json!({})).await;
    assert_eq!(pipe.next().await["id"], 2);
    let (rest, ended) = pipe.finish().await;
    assert!(rest.is_empty(), "the dropped call sent {rest:?}");
    ended.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_refuses_an_overlong_line() {
    let mut pipe = Pipe::start();
    let (to_server, server) = (pipe.to_server.take().unwrap(), pipe.server);
    let writer = tokio::spawn(async move {
        let mut to_server = to_server;
        // Whatever the server has read when it gives up, the rest fails to go in.
        let _ = to_server.write_all(&vec![b'x'; MAX_LINE_BYTES + 2]).await;
        to_server
    });
    let ended = server.await.unwrap();
    let error = ended.expect_err("an overlong line ends the server");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    drop(writer.await.unwrap());
    // A line of exactly the limit is fine (and answered as not JSON).
    let mut pipe = Pipe::start();
    let mut long = String::from("x");
    long.push_str(&" ".repeat(MAX_LINE_BYTES - 1));
    pipe.send_raw(&long).await;
    assert_eq!(pipe.next().await["error"]["code"], -32700);
    pipe.finish().await.1.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_serves_2026_07_28_to_a_request_with_the_envelope() {
    let mut pipe = Pipe::start();
    pipe.modern(1, "server/discover", json!({}), json!({}))
        .await;
    let discovered = pipe.modern_result(1).await;
    assert_eq!(discovered["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        discovered["capabilities"],
        json!({"tools": {"listChanged": false}})
    );
    assert_eq!(discovered["resultType"], "complete");

    pipe.modern(2, "tools/list", json!({}), json!({})).await;
    let page = pipe.modern_result(2).await;
    assert_eq!(page["tools"][0]["name"], "progress_report");
    assert!(page["nextCursor"].is_string());

    let call = json!({"name": "progress_report", "arguments": {"steps": 2, "delay_ms": 10},
                      "_meta": {"progressToken": "p"}});
    pipe.modern(3, "tools/call", call, json!({})).await;
    for step in 1..=2 {
        let progress = pipe.next().await;
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(progress["params"]["progress"], step);
    }
    let done = pipe.modern_result(3).await;
    assert_eq!(done["content"][0]["text"], "done after 2 steps");

    // No header layer over stdio: nothing mirrored, nothing checked.
    let call = json!({"name": "region_echo", "arguments": {"region": "Zürich"}});
    pipe.modern(4, "tools/call", call, json!({})).await;
    assert_eq!(
        pipe.modern_result(4).await["structuredContent"],
        json!({"region": "Zürich", "header": null})
    );

    // A call at 2026-07-28 is cancelled as at 2025 over stdio.
    let slow = json!({"name": "progress_report", "arguments": {"steps": 5, "delay_ms": 1000},
                      "_meta": {"progressToken": 9}});
    pipe.modern(5, "tools/call", slow, json!({})).await;
    assert_eq!(pipe.next().await["params"]["progress"], 1);
    pipe.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 5}}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(10)).await;

    for method in [
        "ping",
        "initialize",
        "logging/setLevel",
        "subscriptions/listen",
    ] {
        pipe.modern(6, method, json!({}), json!({})).await;
        let error = pipe.error(6, -32601).await;
        assert_eq!(error["data"], method);
    }
    let (rest, ended) = pipe.finish().await;
    assert!(rest.is_empty(), "{rest:?}");
    ended.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_checks_the_envelope() {
    let mut pipe = Pipe::start();
    pipe.request(
        1,
        "tools/list",
        json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}),
    )
    .await;
    let error = pipe.error(1, -32602).await;
    assert_eq!(
        error["data"],
        json!({"envelope": {"missing": [CLIENT_CAPABILITIES_KEY]}})
    );
    pipe.request(
        2,
        "tools/list",
        json!({"_meta": {PROTOCOL_VERSION_KEY: "2027-01-01", CLIENT_CAPABILITIES_KEY: {}}}),
    )
    .await;
    let error = pipe.error(2, -32022).await;
    assert_eq!(
        error["data"],
        json!({"supported": ["2026-07-28"], "requested": "2027-01-01"})
    );
    pipe.finish().await.1.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_confirm_delete_round_trip() {
    let mut pipe = Pipe::start();
    let call = json!({"name": "confirm_delete", "arguments": {"item": "a.txt"}});
    pipe.modern(1, "tools/call", call.clone(), json!({})).await;
    let error = pipe.error(1, -32021).await;
    assert_eq!(
        error["data"],
        json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
    );
    pipe.modern(2, "tools/call", call.clone(), json!({"elicitation": {}}))
        .await;
    let asked = pipe.modern_result(2).await;
    assert_eq!(asked["resultType"], "input_required");
    assert_eq!(
        asked["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = asked["requestState"].clone();
    assert!(state.is_string());

    let mut retry = call.clone();
    retry["inputResponses"] =
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    retry["requestState"] = state.clone();
    pipe.modern(3, "tools/call", retry.clone(), json!({"elicitation": {}}))
        .await;
    let done = pipe.modern_result(3).await;
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["content"][0]["text"], "Deleted a.txt");

    // The state is the server's own: any change is refused.
    retry["requestState"] = json!(state.as_str().unwrap().replace("a.txt", "b.txt"));
    pipe.modern(4, "tools/call", retry, json!({"elicitation": {}}))
        .await;
    pipe.error(4, -32602).await;
    pipe.finish().await.1.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stdio_eras_alone() {
    // 2025 alone: the probe is an unknown method, as server-everything answers it.
    let mut pipe = Pipe::start_with(Era::Legacy);
    pipe.modern(1, "server/discover", json!({}), json!({}))
        .await;
    let error = pipe.error(1, -32601).await;
    assert_eq!(error["data"], "server/discover");
    pipe.request(2, "initialize", initialize_params("2025-11-25"))
        .await;
    assert_eq!(pipe.next().await["result"]["protocolVersion"], "2025-11-25");
    // The envelope is just more _meta: no stamp on the result.
    pipe.modern(3, "tools/list", json!({}), json!({})).await;
    let page = pipe.next().await;
    assert!(page["result"].get("resultType").is_none(), "{page}");
    pipe.finish().await.1.unwrap();

    // 2026-07-28 alone: every 2025 request gets -32022.
    let mut pipe = Pipe::start_with(Era::Modern);
    pipe.request(1, "initialize", initialize_params("2025-11-25"))
        .await;
    let error = pipe.error(1, -32022).await;
    assert_eq!(
        error["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
    pipe.request(2, "tools/list", json!({})).await;
    let error = pipe.error(2, -32022).await;
    assert_eq!(error["data"], json!({"supported": ["2026-07-28"]}));
    pipe.modern(3, "server/discover", json!({}), json!({}))
        .await;
    assert_eq!(
        pipe.modern_result(3).await["supportedVersions"],
        json!(["2026-07-28"])
    );
    pipe.finish().await.1.unwrap();
}
