//! Secrets (issue 6, SPEC.md "Limits and security"): a token never appears in `Debug` output,
//! error messages, results or logs, and neither does the value of an extra header (a
//! binding's `header_env`, `HttpConfig::headers`), which every case sends beside the token. Failures are driven with a token set, through the library
//! (the binding layer's [`Caller`] with a wire log, the [`Client`] with an [`HttpConfig`]
//! token, discovery) and through the binaries (`mcpwire call -v`, `mcp-tools`), against
//! servers that echo the credentials back wherever they can: bodies, challenges, redirect
//! targets, JSON-RPC errors, events, tool results. Everything printed is searched for the
//! token and the header value, their first and last eight characters, and their base64 forms.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::auth::Secret;
use mcpwire::binding::call::{CallContext, Caller, TokenSource, ToolResult};
use mcpwire::binding::config::{Binding, Server, load_config};
use mcpwire::binding::discover::{Discovery, discover};
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::transport::http::{ExtraHeaders, HttpConfig};
use serde_json::{Value, json};

use crate::binding_call::{echo_auth, pool};
use crate::cli_tools::{Fault, Run, mcp_tools, mcpwire, temp_path};
use crate::support::fault_server::{FaultServer, Recorded, Reply, Step};
use crate::support::mcp_script::{mcp_handler, rpc_result, sse_event};

/// A distinctive, random-looking token.
const TOKEN: &str = "mcpw_Zq7Xr2Lk9VbN4sHt8WdJ3pFg6YcE1uA5oM0";
/// The variable that holds [`TOKEN`] for the bindings and the binaries.
const TOKEN_ENV: &str = "MCPWIRE_SECRETS_TEST_TOKEN";
/// The value of the extra header `X-Api-Key`, as distinctive as the token.
const HEADER_VALUE: &str = "hdrv_Pm3Qw8Ty5Ui1Oa7Sd2Fg9Hj4Kl6Zx0Cv";
/// The variable that holds [`HEADER_VALUE`].
const HEADER_ENV: &str = "MCPWIRE_SECRETS_TEST_HEADER";

// --- what counts as a leak -----------------------------------------------------------------------

fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=group.len() {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The forms of [`TOKEN`] and [`HEADER_VALUE`] that must never be printed: each one, its
/// first and last eight characters, and, for each base64 alphabet, its encoding as it would
/// appear at any byte alignment inside a longer encoded text (the first 16 characters of the
/// encoding of the secret without its first 0, 1 or 2 bytes).
fn forbidden_forms() -> Vec<(String, String)> {
    const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut forms = Vec::new();
    for (what, secret) in [("the token", TOKEN), ("the header value", HEADER_VALUE)] {
        forms.extend([
            (what.to_owned(), secret.to_owned()),
            (
                format!("{what}'s first 8 characters"),
                secret[..8].to_owned(),
            ),
            (
                format!("{what}'s last 8 characters"),
                secret[secret.len() - 8..].to_owned(),
            ),
        ]);
        for (name, alphabet) in [("base64", STANDARD), ("base64url", URL_SAFE)] {
            for skip in 0..3 {
                let encoded = base64(&secret.as_bytes()[skip..], alphabet);
                forms.push((
                    format!("{what} in {name} at alignment {skip}"),
                    encoded[..16].to_owned(),
                ));
            }
        }
    }
    forms
}

/// Fails if `text` (described by `what`) holds any form of the token.
#[track_caller]
fn assert_clean(what: &str, text: &str) {
    for (form, value) in forbidden_forms() {
        assert!(
            !text.contains(&value),
            "{what} holds {form} ({value:?}):\n{text}"
        );
    }
}

#[test]
fn the_leak_check_finds_every_form() {
    // The check itself must be able to fail: each form is found, inside other text.
    assert_eq!(
        base64(
            b"Bearer",
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        ),
        "QmVhcmVy"
    );
    let echoed = format!("Bearer {TOKEN}");
    let samples = [
        echoed.clone(),
        format!("..{}..", &TOKEN[..8]),
        format!("tail {}", &TOKEN[TOKEN.len() - 8..]),
        base64(
            echoed.as_bytes(),
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        ),
        base64(
            format!("x{TOKEN}").as_bytes(),
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        ),
        base64(
            format!("xy{TOKEN}").as_bytes(),
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        ),
    ];
    let header = format!("X-Api-Key: {HEADER_VALUE}");
    let more = [
        header.clone(),
        format!("..{}", &HEADER_VALUE[..8]),
        base64(
            header.as_bytes(),
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        ),
    ];
    for sample in samples.into_iter().chain(more) {
        let caught = std::panic::catch_unwind(|| assert_clean("sample", &sample));
        assert!(caught.is_err(), "not caught: {sample}");
    }
    assert_clean("clean text", "Bearer <redacted>");
}

// --- hostile servers that echo the credentials ---------------------------------------------------

/// What the server received as credentials (the bearer token, then the extra header),
/// quoted back.
fn echo(req: &Recorded) -> String {
    format!(
        "{} and X-Api-Key: {}",
        echo_auth(req),
        req.header("x-api-key").unwrap_or("nothing")
    )
}

/// A body in which the echoed credentials straddle `at`, the point where an error message may
/// cut a server's text: the token starts 20 bytes before it.
fn echo_straddling(req: &Recorded, at: usize) -> String {
    let echoed = echo(req);
    let token_at = echoed.find(TOKEN).expect("the token was sent");
    format!("{}{echoed} and more", "a".repeat(at - 20 - token_at))
}

/// A fault-server handler.
type Handler = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// One way for a server to fail, echoing the credentials.
struct Failure {
    name: String,
    /// The failure answers the call (or `tools/list`) after a normal handshake; otherwise it
    /// answers every request, the handshake's included.
    after_handshake: bool,
    handler: Handler,
}

impl Failure {
    /// The handler for the whole server.
    fn server_handler(self) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
        let handler = self.handler;
        let whole: Handler = if self.after_handshake {
            Arc::new(mcp_handler(move |req| handler(req)))
        } else {
            handler
        };
        move |req| whole(req)
    }
}

/// Every failure the tests drive.
fn failures() -> Vec<Failure> {
    let list: Vec<(&'static str, bool, Handler)> = vec![
        (
            "401 on initialize, echoed in the body and the challenge",
            false,
            Arc::new(|req| {
                Reply::text(401, &echo(req)).with_header(
                    "www-authenticate",
                    &format!(
                        r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", error="invalid_token", error_description="{}""#,
                        echo(req)
                    ),
                )
            }),
        ),
        (
            "401 whose challenge parameter is cut mid-token",
            false,
            Arc::new(|req| {
                Reply::empty(401).with_header(
                    "www-authenticate",
                    &format!(
                        r#"Bearer error_description="{}""#,
                        echo_straddling(req, 256)
                    ),
                )
            }),
        ),
        (
            "307 to a URL holding the token and the header value",
            false,
            Arc::new(|req| {
                let token = req
                    .header("authorization")
                    .unwrap_or("")
                    .replace("Bearer ", "");
                let key = req.header("x-api-key").unwrap_or("");
                Reply::redirect(
                    307,
                    &format!("http://127.0.0.1:9/steal?token={token}&key={key}"),
                )
            }),
        ),
        (
            "400 on the call",
            true,
            Arc::new(|req| Reply::json(400, json!({"error": echo(req)}))),
        ),
        (
            "a stream dropped after a comment and an event echoing the token",
            true,
            Arc::new(|req| {
                Reply::sse_steps(
                    200,
                    vec![
                        Step::text(&format!(
                            ": {}\n\nevent: other\ndata: {}\n\n",
                            echo(req),
                            echo(req)
                        )),
                        Step::Drop,
                    ],
                )
            }),
        ),
        (
            "progress echoing the token, then a dropped stream",
            true,
            Arc::new(|req| {
                let token = req.json().unwrap()["params"]["_meta"]["progressToken"].clone();
                let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "message": echo(req)}});
                Reply::sse_steps(200, vec![Step::text(&sse_event(&progress)), Step::Drop])
            }),
        ),
        (
            "invalid JSON in an event, holding the token",
            true,
            Arc::new(|req| {
                Reply::sse(
                    200,
                    &[&format!("event: message\ndata: {{\"{}\n\n", echo(req))],
                )
            }),
        ),
        (
            "invalid JSON in an event, the token far in",
            true,
            Arc::new(|req| {
                Reply::sse(
                    200,
                    &[&format!(
                        "event: message\ndata: [{}\"{}\n\n",
                        "1,".repeat(300),
                        echo(req)
                    )],
                )
            }),
        ),
        (
            "a JSON-RPC error echoing the token",
            true,
            Arc::new(|req| {
                Reply::json(
                    200,
                    json!({"jsonrpc": "2.0", "id": req.jsonrpc_id(),
                           "error": {"code": -32603, "message": echo(req), "data": echo(req)}}),
                )
            }),
        ),
        (
            "an isError result echoing the token",
            true,
            Arc::new(|req| {
                Reply::sse(
                    200,
                    &[&sse_event(&rpc_result(
                        req,
                        json!({"content": [{"type": "text", "text": echo(req)}], "isError": true}),
                    ))],
                )
            }),
        ),
        (
            "structured content echoing the token, against the output schema",
            true,
            Arc::new(|req| {
                Reply::sse(
                    200,
                    &[&sse_event(&rpc_result(
                        req,
                        json!({"content": [], "structuredContent": {"n": echo(req)}}),
                    ))],
                )
            }),
        ),
        (
            "an elicitation request echoing the token",
            true,
            Arc::new(|req| {
                let elicit = json!({"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create",
                    "params": {"message": echo(req), "requestedSchema": {"type": "object"}}});
                Reply::sse_steps(200, vec![Step::text(&sse_event(&elicit)), Step::Hang])
            }),
        ),
        (
            "a stream that never answers (the binding times out)",
            true,
            Arc::new(|req| {
                Reply::sse_steps(
                    200,
                    vec![Step::text(&format!(": {}\n\n", echo(req))), Step::Hang],
                )
            }),
        ),
    ];
    let mut failures: Vec<Failure> = list
        .into_iter()
        .map(|(name, after_handshake, handler)| Failure {
            name: name.to_owned(),
            after_handshake,
            handler,
        })
        .collect();
    // Answers that fail both the handshake and, after it, the call.
    let both: [(&str, Handler); 2] = [
        ("500", Arc::new(|req| Reply::text(500, &echo(req)))),
        (
            "text/html 200, cut mid-token",
            Arc::new(|req| {
                Reply::text(200, &echo_straddling(req, 512))
                    .with_header("content-type", "text/html")
            }),
        ),
    ];
    for (name, handler) in both {
        for (after_handshake, phase) in [(false, "initialize"), (true, "the call")] {
            failures.push(Failure {
                name: format!("{name} on {phase}"),
                after_handshake,
                handler: handler.clone(),
            });
        }
    }
    failures
}

/// A port nothing listens on.
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}/mcp")
}

// --- the library -----------------------------------------------------------------------------------

struct Tokens;

impl TokenSource for Tokens {
    fn token(&self, name: &str) -> Option<Secret> {
        match name {
            TOKEN_ENV => Some(Secret::new(TOKEN)),
            HEADER_ENV => Some(Secret::new(HEADER_VALUE)),
            _ => None,
        }
    }
}

/// The binding for `url`, as a host's config would hold it: a 1 s deadline, the token from
/// [`TOKEN_ENV`], the header `X-Api-Key` from [`HEADER_ENV`], and an output schema the echo
/// cannot satisfy.
fn binding_json(url: &str) -> Value {
    json!({
        "name": "t", "description": "a tool", "mcp_tool": "t",
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object", "properties": {"n": {"type": "number"}}},
        "url": url, "token_env": TOKEN_ENV, "header_env": {"X-Api-Key": HEADER_ENV},
        "tenants": ["acme"], "timeout_seconds": 1,
    })
}

fn bindings(url: &str) -> Vec<Binding> {
    load_config(&json!([binding_json(url)]).to_string()).expect("binding")
}

/// Calls through a [`Caller`] with a wire log; returns everything it printed or returned.
async fn call_and_capture(url: &str) -> (ToolResult, String) {
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let mut caller = Caller::new(pool(), bindings(url), Arc::new(Tokens)).expect("caller");
    caller.set_wire_log(Arc::new(move |line: &str| {
        sink.lock().unwrap().push(line.to_owned())
    }));
    let context = CallContext::new("acme", "s", "c");
    let progress: Arc<Mutex<Vec<String>>> = Arc::default();
    let progress_sink = progress.clone();
    let result = caller
        .call(
            "t",
            &context,
            &json!({}),
            move |p| progress_sink.lock().unwrap().push(p.to_json_line()),
            None,
        )
        .await;
    let printed = format!(
        "{}\n{result:?}\n{caller:?}\n{:?}\n{}\n{}",
        result.to_json_line(),
        caller.binding("t"),
        lines.lock().unwrap().join("\n"),
        progress.lock().unwrap().join("\n"),
    );
    (result, printed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_in_what_the_binding_layer_returns_or_logs() {
    for failure in failures() {
        let name = failure.name.clone();
        let server = FaultServer::start(failure.server_handler()).await;
        let (result, printed) = call_and_capture(&server.url("/mcp")).await;
        assert!(result.is_error(), "{name}: {result:?}");
        // The token and the header did go out, so the server could echo them.
        assert_eq!(
            server.requests()[0].header("authorization"),
            Some(&*format!("Bearer {TOKEN}")),
            "{name}"
        );
        assert_eq!(
            server.requests()[0].header("x-api-key"),
            Some(HEADER_VALUE),
            "{name}"
        );
        assert_clean(&name, &printed);
    }
    let (result, printed) = call_and_capture(&refused_url()).await;
    assert_eq!(result.error_kind().unwrap().as_str(), "connect");
    assert_clean("connection refused", &printed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_in_client_errors_or_debug_output() {
    for failure in failures() {
        let name = failure.name.clone();
        let server = FaultServer::start(failure.server_handler()).await;
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = lines.clone();
        let mut config = HttpConfig::new(&server.url("/mcp")).unwrap();
        config.bearer_token = Some(Secret::new(TOKEN));
        config
            .headers
            .insert("X-Api-Key", Secret::new(HEADER_VALUE))
            .unwrap();
        config.wire_log = Some(Arc::new(move |line: &str| {
            sink.lock().unwrap().push(line.to_owned())
        }));
        let mut printed = format!("{config:?}\n");
        match Client::connect_http(&pool(), config, ClientOptions::default()).await {
            Err(error) => printed.push_str(&format!("{error}\n{error:?}\n")),
            Ok(client) => {
                printed.push_str(&format!("{client:?}\n"));
                let mut options = CallOptions::default();
                options.timeout = Duration::from_secs(1);
                match client.call_tool("t", None, options).await {
                    Err(error) => printed.push_str(&format!("{error}\n{error:?}\n")),
                    Ok(result) => printed.push_str(&format!("{result:?}\n")),
                }
                client.close().await;
            }
        }
        printed.push_str(&lines.lock().unwrap().join("\n"));
        assert_clean(&name, &printed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_in_discovery_errors() {
    for failure in failures() {
        let name = failure.name.clone();
        let server = FaultServer::start(failure.server_handler()).await;
        let mut headers = ExtraHeaders::default();
        headers
            .insert("X-Api-Key", Secret::new(HEADER_VALUE))
            .unwrap();
        let mut discovery = Discovery::new(
            Server::http(server.url("/mcp"))
                .with_token_env(TOKEN_ENV)
                .with_header_env([("X-Api-Key".to_owned(), HEADER_ENV.to_owned())].into()),
            "acme".to_owned(),
            vec!["t".to_owned()],
        );
        discovery.token = Some(Secret::new(TOKEN));
        discovery.headers = headers;
        discovery.timeout = Duration::from_secs(1);
        let outcome = discover(&pool(), &discovery).await;
        let printed = match &outcome {
            Ok(bindings) => format!("{discovery:?}\n{bindings:?}"),
            Err(error) => format!("{discovery:?}\n{error}\n{error:?}"),
        };
        assert_clean(&name, &printed);
    }
}

// --- the binaries ----------------------------------------------------------------------------------

fn printed(run: &Run) -> String {
    format!("{}\n{}", run.stdout, run.stderr)
}

/// Runs `mcpwire call -v` through a bindings file holding `binding`, with the token in the
/// environment.
fn cli_call(binding: Value, file: &str) -> Run {
    let path = temp_path(file);
    std::fs::write(&path, json!([binding]).to_string()).expect("bindings file");
    let run = mcpwire(
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
        &[(TOKEN_ENV, TOKEN), (HEADER_ENV, HEADER_VALUE)],
    );
    let _ = std::fs::remove_file(&path);
    run
}

#[test]
fn no_token_in_what_mcpwire_call_prints() {
    for (index, failure) in failures().into_iter().enumerate() {
        let name = failure.name.clone();
        let fault = Fault::start(failure.server_handler());
        let run = cli_call(
            binding_json(&fault.server.url("/mcp")),
            &format!("secrets-{index}.json"),
        );
        assert_eq!(run.code, Some(1), "{name}: {run:#?}");
        assert!(run.stderr.contains("> POST"), "{name}: traced: {run:#?}");
        assert_clean(&name, &printed(&run));
    }
    let run = cli_call(binding_json(&refused_url()), "secrets-refused.json");
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert_clean("connection refused", &printed(&run));
}

#[test]
fn no_token_in_what_mcp_tools_prints() {
    let mut cases: Vec<(String, Option<Fault>)> = Vec::new();
    for failure in failures() {
        if !failure.after_handshake {
            cases.push((
                failure.name.clone(),
                Some(Fault::start(failure.server_handler())),
            ));
        }
    }
    // tools/list failures after a good handshake.
    for (name, handler) in [
        (
            "tools/list answered 500",
            Arc::new(|req: &Recorded| Reply::text(500, &echo(req))) as Handler,
        ),
        (
            "tools/list answered with invalid JSON",
            Arc::new(|req: &Recorded| {
                Reply::sse(
                    200,
                    &[&format!("event: message\ndata: {{{}\n\n", echo(req))],
                )
            }),
        ),
        (
            "tools/list that never answers",
            Arc::new(|_: &Recorded| Reply::sse_steps(200, vec![Step::Hang])),
        ),
    ] {
        let fault = Fault::start(mcp_handler(move |req| handler(req)));
        cases.push((name.to_owned(), Some(fault)));
    }
    cases.push(("connection refused".to_owned(), None));
    for (name, fault) in &cases {
        let url = match fault {
            Some(fault) => fault.server.url("/mcp"),
            None => refused_url(),
        };
        let run = mcp_tools(
            &[
                "-url",
                &url,
                "-token-env",
                TOKEN_ENV,
                "-header",
                &format!("X-Api-Key={HEADER_ENV}"),
                "-tenant",
                "acme",
                "-tools",
                "t",
                "-timeout",
                "1",
            ],
            &[(TOKEN_ENV, TOKEN), (HEADER_ENV, HEADER_VALUE)],
        );
        assert_eq!(run.code, Some(1), "{name}: {run:#?}");
        assert!(!run.stderr.is_empty(), "{name}: says why: {run:#?}");
        assert_clean(name, &printed(&run));
    }
}

#[test]
fn no_token_in_what_a_failing_stdio_binding_prints() {
    // A stdio server gets no bearer token, but the token is in the caller's environment: a
    // server that cannot start, and one that dies mid-handshake, must not bring it out.
    for (name, command, args) in [
        (
            "a program that does not exist",
            "/nonexistent/mcp-server",
            vec![],
        ),
        (
            "a server that exits at once",
            "sh",
            vec!["-c", "echo starting >&2; exit 3"],
        ),
    ] {
        let binding = json!({
            "name": "t", "description": "a tool", "mcp_tool": "t",
            "input_schema": {"type": "object"}, "command": command, "args": args,
            "tenants": ["acme"], "timeout_seconds": 2,
        });
        let run = cli_call(binding, &format!("secrets-stdio-{}.json", args.len()));
        assert_eq!(run.code, Some(1), "{name}: {run:#?}");
        assert_clean(name, &printed(&run));
    }
}
