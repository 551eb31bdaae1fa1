//! Extra request headers (a binding's `header_env`, `HttpConfig::headers`, `mcp-tools -header`):
//! the header goes on every request of a call (initialize, initialized, tools/call, DELETE),
//! its value comes from the environment at call time, a variable that is not set fails the
//! call before anything is sent, and a server that echoes the value gets it redacted from the
//! result, progress, the wire log and Debug output. `secrets.rs` drives every failure with a
//! header value as well as a token.

use std::sync::{Arc, Mutex};

use mcpwire::auth::Secret;
use mcpwire::binding::call::{Caller, EnvTokens, TokenSource};
use mcpwire::binding::config::load_config;
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::transport::http::{HeaderError, HttpConfig};
use serde_json::{Value, json};

use crate::binding_call::{assert_failed, assert_succeeded, binding, context, pool, tool_reply};
use crate::cli_tools::{Fault, assert_exit, mcp_tools, mcpwire, temp_path};
use crate::support::fault_server::{FaultServer, Recorded, Reply};
use crate::support::mcp_script::{mcp_handler, mcp_server, rpc_result, sse_event};

/// A header value recognizable anywhere it might leak.
const VALUE: &str = "hdr-VALUE-9d4f7b21e0";
/// The variable that holds [`VALUE`].
const VALUE_ENV: &str = "MCPWIRE_HEADERS_TEST_KEY";
/// A second header's value and variable.
const TENANT: &str = "tenant-west-0042";
const TENANT_ENV: &str = "MCPWIRE_HEADERS_TEST_TENANT";

/// Hands out [`VALUE`] and [`TENANT`] for their variables.
struct Values;

impl TokenSource for Values {
    fn token(&self, name: &str) -> Option<Secret> {
        match name {
            VALUE_ENV => Some(Secret::new(VALUE)),
            TENANT_ENV => Some(Secret::new(TENANT)),
            _ => None,
        }
    }
}

/// What a server that echoes the header says.
fn echo(req: &Recorded) -> String {
    format!(
        "you sent X-Api-Key: {}",
        req.header("x-api-key").unwrap_or("nothing")
    )
}

/// A tool result that echoes the header, after a progress notification that echoes it too.
fn echoing_call(req: &Recorded) -> Reply {
    let token = req.json().unwrap()["params"]["_meta"]["progressToken"].clone();
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1, "message": echo(req)}});
    let result = rpc_result(
        req,
        json!({"content": [{"type": "text", "text": echo(req)}],
               "structuredContent": {"seen": echo(req)}}),
    );
    Reply::sse(200, &[&sse_event(&progress), &sse_event(&result)])
}

#[track_caller]
fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(VALUE),
        "{what} holds the header value:\n{text}"
    );
    assert!(
        !text.contains(&VALUE[..10]),
        "{what} holds a start of the header value:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_headers_go_on_every_request_of_a_call_and_their_echo_is_redacted() {
    let server = mcp_server(echoing_call).await;
    let bindings = vec![binding(
        &server.url("/mcp"),
        json!({"header_env": {"X-Api-Key": VALUE_ENV, "X-Tenant": TENANT_ENV}}),
    )];
    let mut caller = Caller::new(pool(), bindings, Arc::new(Values)).expect("caller");
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = log.clone();
    caller.set_wire_log(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned())
    }));
    let progress: Arc<Mutex<Vec<String>>> = Arc::default();
    let progress_sink = progress.clone();
    let result = caller
        .call(
            "t",
            &context("call-h"),
            &json!({"q": "x"}),
            move |p| {
                progress_sink
                    .lock()
                    .unwrap()
                    .push(p.message.unwrap_or_default())
            },
            None,
        )
        .await;
    assert_succeeded(&result);

    // Every request of the call carried both headers, with the values from the source.
    let requests = server.requests();
    let seen: Vec<(String, Option<String>)> = requests
        .iter()
        .map(|r| (r.method.clone(), r.jsonrpc_method()))
        .collect();
    let seen: Vec<(&str, Option<&str>)> = seen
        .iter()
        .map(|(method, rpc)| (method.as_str(), rpc.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("POST", Some("server/discover")),
            ("POST", Some("initialize")),
            ("POST", Some("notifications/initialized")),
            ("POST", Some("tools/call")),
            ("DELETE", None),
        ]
    );
    for request in &requests {
        assert_eq!(
            request.header_all("x-api-key"),
            [VALUE],
            "{} {:?}",
            request.method,
            request.jsonrpc_method()
        );
        assert_eq!(request.header_all("x-tenant"), [TENANT]);
        // Beside the transport's own headers, not instead of them.
        assert!(request.header("accept").is_some());
        assert_eq!(request.header("authorization"), None);
    }

    // The server echoed the value: the result, progress, log and Debug output hide it.
    assert_eq!(
        result.content(),
        [
            json!({"type": "text", "text": "you sent X-Api-Key: <redacted>"}),
            // Structured content also comes as a text block holding its JSON.
            json!({"type": "text", "text": r#"{"seen":"you sent X-Api-Key: <redacted>"}"#}),
        ]
    );
    assert_eq!(
        result.structured_content(),
        Some(&json!({"seen": "you sent X-Api-Key: <redacted>"}))
    );
    assert_eq!(
        *progress.lock().unwrap(),
        ["you sent X-Api-Key: <redacted>"]
    );
    let log = log.lock().unwrap().join("\n");
    assert!(log.contains("> DELETE"), "{log}");
    assert!(log.contains("<redacted>"), "the echo was logged: {log}");
    assert_clean("the wire log", &log);
    assert_clean(
        "the result",
        &format!("{}\n{result:?}", result.to_json_line()),
    );
    assert_clean(
        "the caller",
        &format!("{caller:?}\n{:?}", caller.binding("t")),
    );
    // The other header's value was echoed nowhere, so nothing else was touched.
    assert!(!log.contains(TENANT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_variable_that_is_not_set_fails_the_call_before_anything_is_sent() {
    const UNSET: &str = "MCPWIRE_HEADERS_TEST_SURELY_UNSET_VARIABLE";
    assert!(std::env::var_os(UNSET).is_none());
    let server = FaultServer::start(|_| Reply::empty(500)).await;
    let bindings = vec![binding(
        &server.url("/mcp"),
        json!({"header_env": {"X-Api-Key": UNSET}}),
    )];
    let caller = Caller::new(pool(), bindings, Arc::new(EnvTokens)).unwrap();
    let result = caller
        .call("t", &context("call-u"), &json!({"q": "x"}), |_| {}, None)
        .await;
    assert_failed(&result, "missing_header", false);
    let message = result.error_message().unwrap();
    assert!(
        message.contains(UNSET) && message.contains("X-Api-Key"),
        "{message}"
    );
    assert_eq!(server.connections_accepted(), 0);
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_value_that_cannot_be_sent_fails_the_call_before_anything_is_sent() {
    struct Injecting;
    impl TokenSource for Injecting {
        fn token(&self, _: &str) -> Option<Secret> {
            Some(Secret::new("k-123\r\nX-Injected: yes"))
        }
    }
    let server = FaultServer::start(|_| Reply::empty(500)).await;
    let bindings = vec![binding(
        &server.url("/mcp"),
        json!({"header_env": {"X-Api-Key": VALUE_ENV}}),
    )];
    let caller = Caller::new(pool(), bindings, Arc::new(Injecting)).unwrap();
    let result = caller
        .call("t", &context("call-i"), &json!({"q": "x"}), |_| {}, None)
        .await;
    assert_failed(&result, "invalid_header", false);
    let message = result.error_message().unwrap();
    assert!(message.contains(VALUE_ENV), "{message}");
    assert!(!message.contains("Injected"), "{message}");
    assert_eq!(server.connections_accepted(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_sends_the_headers_and_redacts_their_echo_from_errors() {
    // The call is answered with a JSON-RPC error quoting the header.
    let server = mcp_server(|req| {
        Reply::json(
            200,
            json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(),
                   "error": {"code": -32603, "message": echo(req), "data": echo(req)}}),
        )
    })
    .await;
    let mut config = HttpConfig::new(&server.url("/mcp")).unwrap();
    config
        .headers
        .insert("X-Api-Key", Secret::new(VALUE))
        .unwrap();
    // What the exchange owns is refused, through the public API too.
    for (name, error) in [
        ("Mcp-Session-Id", HeaderError::Reserved),
        ("mcp-protocol-version", HeaderError::Reserved),
        ("Authorization", HeaderError::Authorization),
        ("Content-Length", HeaderError::Reserved),
        ("Bad Name", HeaderError::InvalidName),
    ] {
        assert_eq!(
            config.headers.insert(name, Secret::new("v-1234")),
            Err(error),
            "{name}"
        );
    }
    assert_eq!(
        config.headers.insert("X-Other", Secret::new("a\nb")),
        Err(HeaderError::InvalidValue)
    );
    assert_eq!(config.headers.len(), 1);
    let printed_config = format!("{config:?}");
    assert!(printed_config.contains("x-api-key"), "{printed_config}");
    assert_clean("the config", &printed_config);

    let client = Client::connect_http(&pool(), config, ClientOptions::default())
        .await
        .expect("connect");
    let error = client
        .call_tool("t", None, CallOptions::default())
        .await
        .expect_err("a JSON-RPC error");
    assert!(error.to_string().contains("<redacted>"), "{error}");
    assert_clean("the error", &format!("{error}\n{error:?}\n{client:?}"));
    client.close().await;
    let requests = server.requests();
    // The era probe, initialize, initialized, the call, DELETE.
    assert_eq!(requests.len(), 5, "{requests:?}");
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-api-key") == Some(VALUE))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_needs_a_header_refuses_a_call_without_it() {
    // The header is what lets the call through: without header_env the server says 401.
    let answer = mcp_handler(|req| tool_reply(req, json!({"content": []})));
    let guarded = FaultServer::start(move |req| {
        if req.header("x-api-key") == Some(VALUE) {
            answer(req)
        } else {
            Reply::text(401, "no key")
        }
    })
    .await;
    let call = |header_env: Value| {
        let url = guarded.url("/mcp");
        async move {
            let bindings = vec![binding(&url, header_env)];
            let caller = Caller::new(pool(), bindings, Arc::new(Values)).unwrap();
            caller
                .call("t", &context("call-g"), &json!({"q": "x"}), |_| {}, None)
                .await
        }
    };
    assert_failed(&call(json!({})).await, "unauthorized", false);
    assert_succeeded(&call(json!({"header_env": {"X-Api-Key": VALUE_ENV}})).await);
}

// --- the binaries ----------------------------------------------------------------------------

/// A server that lists tool `t` and answers calls echoing the header, but only to requests
/// that carry it.
fn guarded_server() -> Fault {
    let answer = mcp_handler(|req| match req.jsonrpc_method().as_deref() {
        Some("tools/list") => Reply::json(
            200,
            rpc_result(
                req,
                json!({"tools": [{"name": "t", "description": "echoes",
                                  "inputSchema": {"type": "object"}}]}),
            ),
        ),
        _ => echoing_call(req),
    });
    Fault::start(move |req| {
        if req.header("x-api-key") != Some(VALUE) {
            return Reply::text(401, &echo(req));
        }
        answer(req)
    })
}

#[test]
fn mcp_tools_sends_the_header_and_writes_header_env_then_mcpwire_call_sends_it() {
    let fault = guarded_server();
    let url = fault.server.url("/mcp");
    let env = [(VALUE_ENV, VALUE)];
    let header = format!("X-Api-Key={VALUE_ENV}");
    let run = mcp_tools(
        &[
            "-url", &url, "-header", &header, "-tenant", "acme", "-tools", "t",
        ],
        &env,
    );
    assert_exit(&run, 0);
    assert_clean("mcp-tools", &format!("{}\n{}", run.stdout, run.stderr));
    let bindings: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(bindings[0]["header_env"], json!({"X-Api-Key": VALUE_ENV}));
    assert!(load_config(&run.stdout).is_ok());
    let discovery = fault.server.requests();
    assert!(discovery.len() >= 3, "{discovery:?}");
    assert!(
        discovery
            .iter()
            .all(|r| r.header("x-api-key") == Some(VALUE))
    );

    // The printed bindings, called as a host would: the header goes out, its echo does not
    // come back, not even in the -v wire log.
    let path = temp_path("headers-bindings.json");
    std::fs::write(&path, &run.stdout).unwrap();
    let call = mcpwire(
        &[
            "call",
            "--bindings",
            path.to_str().unwrap(),
            "--tool",
            "t",
            "--tenant",
            "acme",
            "--args",
            "{}",
            "-v",
        ],
        &env,
    );
    let _ = std::fs::remove_file(&path);
    assert_exit(&call, 0);
    assert!(call.stderr.contains("> POST"), "{call:#?}");
    assert!(
        call.stdout.contains("you sent X-Api-Key: <redacted>"),
        "{call:#?}"
    );
    assert_clean("mcpwire call", &format!("{}\n{}", call.stdout, call.stderr));
    let after = &fault.server.requests()[discovery.len()..];
    assert!(after.len() >= 4, "{after:?}");
    assert!(after.iter().all(|r| r.header("x-api-key") == Some(VALUE)));

    // Without the variable, the call fails before anything is sent.
    let path = temp_path("headers-bindings-2.json");
    std::fs::write(&path, &run.stdout).unwrap();
    let before = fault.server.requests().len();
    let unset = mcpwire(
        &[
            "call",
            "--bindings",
            path.to_str().unwrap(),
            "--tool",
            "t",
            "--tenant",
            "acme",
            "--args",
            "{}",
        ],
        &[(VALUE_ENV, "")],
    );
    let _ = std::fs::remove_file(&path);
    assert_exit(&unset, 1);
    assert!(unset.stdout.contains("\"missing_header\""), "{unset:#?}");
    assert!(
        unset.stdout.contains("\"unknown_outcome\":false"),
        "{unset:#?}"
    );
    assert_eq!(fault.server.requests().len(), before);
}

#[test]
fn mcp_tools_refuses_bad_header_flags() {
    let url = "http://127.0.0.1:9/mcp";
    let cases: [(&[&str], &str); 7] = [
        (&["-header", "X-Api-Key"], "NAME=VAR"),
        (&["-header", "Authorization=KEY"], "token_env"),
        (
            &["-header", "Mcp-Session-Id=KEY"],
            "set by the MCP transport",
        ),
        (&["-header", "Bad Name=KEY"], "not a valid header name"),
        (
            &["-header", "X-Api-Key=s3cret value"],
            "not the value itself",
        ),
        (&["-header", "X-A=K1", "-header", "x-a=K2"], "twice"),
        (&["-command", "server", "-header", "X-A=K1"], "-url servers"),
    ];
    for (flags, fragment) in cases {
        let mut args = vec!["-tenant", "acme", "-tools", "t"];
        if !flags.contains(&"-command") {
            args.extend(["-url", url]);
        }
        args.extend(flags);
        let run = mcp_tools(&args, &[]);
        assert_exit(&run, 2);
        assert!(run.stderr.contains(fragment), "{flags:?}: {run:#?}");
        assert!(!run.stderr.contains("s3cret"), "{run:#?}");
    }
    // A variable that is not set is a failure of the discovery, not of usage.
    let run = mcp_tools(
        &[
            "-url",
            url,
            "-header",
            "X-Api-Key=MCPWIRE_HEADERS_TEST_SURELY_UNSET",
            "-tenant",
            "acme",
            "-tools",
            "t",
        ],
        &[],
    );
    assert_exit(&run, 1);
    assert!(
        run.stderr.contains("MCPWIRE_HEADERS_TEST_SURELY_UNSET"),
        "{run:#?}"
    );
}

#[test]
fn mcp_tools_help_names_the_header_flag() {
    let run = mcp_tools(&["-help"], &[]);
    assert_exit(&run, 0);
    assert!(run.stdout.contains("-header NAME=VAR"), "{}", run.stdout);
}
