//! The floor: what the HTTP requests of an MCP client cost on the HTTP stack mcpwire runs on
//! (hyper-util's pooled client, hyper, rustls through hyper-rustls, on a current-thread tokio
//! runtime), with no MCP at all. It sends the requests mcpwire's `Client` sends, with the same
//! headers and bodies (the bytes of `fixtures/rmcp-text` and `fixtures/rmcp-2026-text`, the
//! request ids counting up), reads each reply to its end and checks only the status and, for
//! `echo`, that the reply holds the echoed text: no JSON parsed, no SSE framing read, no
//! session machine. A client can only cost more than this.
//!
//! ```sh
//! bench-floor URL WORKLOAD N [2025|2026] [WAIT_MS]
//! ```
//!
//! Workloads are those of `../mcpwire` that the comparison's table uses: `session`,
//! `concurrent`, `big`, `progress`, `list`, `inflight`. At `2025` a workload is `initialize`
//! (the `Mcp-Session-Id` of the reply kept), `notifications/initialized`, the calls, `DELETE`;
//! at `2026` it is one `server/discover`, then the calls, each POST carrying the `_meta`
//! envelope and the `Mcp-Method`/`Mcp-Name` headers. Prints the figures of
//! `bench_common::Meter` (`../../common`).

// A benchmark reads the clock.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use bench_common::timed;

type Failure = Box<dyn std::error::Error + Send + Sync>;
type Http = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The tools the `list` workload's server lists.
const TOOLS: usize = 100;

/// The 2026-07-28 `_meta` envelope's members.
const ENVELOPE: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpwire","version":"0.1.0"}"#;

/// One endpoint, in one era: what every request needs.
struct Endpoint {
    http: Http,
    uri: hyper::Uri,
    modern: bool,
    session: Option<String>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Endpoint {
    fn id(&self) -> u64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// One POST of `body`, read to its end; `method` and `name` go in the 2026 headers.
    async fn post(
        &self,
        method: &str,
        name: Option<&str>,
        body: String,
    ) -> Result<(u16, Bytes, Option<String>), Failure> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session.as_str());
        }
        if self.modern {
            request = request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method);
            if let Some(name) = name {
                request = request.header("mcp-name", name);
            }
        } else if self.session.is_some() {
            request = request.header("mcp-protocol-version", "2025-11-25");
        }
        let response = self
            .http
            .request(request.body(Full::new(Bytes::from(body)))?)
            .await?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.into_body().collect().await?.to_bytes();
        if status != 200 && status != 202 {
            return Err(format!("{method}: HTTP {status}").into());
        }
        Ok((status, body, session))
    }

    /// A request's body: `params` the JSON members of its `params` (without braces), `meta`
    /// those of its `_meta` before the 2026-07-28 envelope.
    fn body_with(&self, method: &str, params: &str, meta: &str) -> String {
        let id = self.id();
        let meta = match (self.modern, meta.is_empty()) {
            (true, true) => format!(r#""_meta":{{{ENVELOPE}}}"#),
            (true, false) => format!(r#""_meta":{{{meta},{ENVELOPE}}}"#),
            (false, true) => String::new(),
            (false, false) => format!(r#""_meta":{{{meta}}}"#),
        };
        let comma = if params.is_empty() || meta.is_empty() {
            ""
        } else {
            ","
        };
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{comma}{meta}}}}}"#
        )
    }

    fn body(&self, method: &str, params: &str) -> String {
        self.body_with(method, params, "")
    }

    async fn call(&self, tool: &str, arguments: &str) -> Result<Bytes, Failure> {
        self.call_with(tool, arguments, "").await
    }

    async fn call_with(&self, tool: &str, arguments: &str, meta: &str) -> Result<Bytes, Failure> {
        let params = format!(r#""name":"{tool}","arguments":{arguments}"#);
        let body = self.body_with("tools/call", &params, meta);
        Ok(timed!(self.post("tools/call", Some(tool), body))?.1)
    }

    async fn open(http: Http, url: &str, modern: bool) -> Result<Endpoint, Failure> {
        let mut endpoint = Endpoint {
            http,
            uri: url.parse()?,
            modern,
            session: None,
            next_id: 0.into(),
        };
        if modern {
            let body = endpoint.body("server/discover", "");
            endpoint.post("server/discover", None, body).await?;
        } else {
            let body = endpoint.body(
                "initialize",
                r#""protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpwire","version":"0.1.0"}"#,
            );
            let (_, _, session) = endpoint.post("initialize", None, body).await?;
            endpoint.session = session;
            let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            endpoint
                .post("notifications/initialized", None, initialized.to_owned())
                .await?;
        }
        Ok(endpoint)
    }

    async fn close(&self) -> Result<(), Failure> {
        let Some(session) = &self.session else {
            return Ok(());
        };
        let request = Request::builder()
            .method(Method::DELETE)
            .uri(self.uri.clone())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session.as_str())
            .header("mcp-protocol-version", "2025-11-25")
            .body(Full::new(Bytes::new()))?;
        let response = self.http.request(request).await?;
        response.into_body().collect().await?;
        Ok(())
    }
}

fn holds(body: &[u8], text: &str) -> bool {
    body.windows(text.len()).any(|w| w == text.as_bytes())
}

async fn echo(endpoint: &Endpoint) -> Result<(), Failure> {
    let body = endpoint.call("echo", r#"{"message":"hello"}"#).await?;
    if !holds(&body, "Echo: hello") {
        return Err("echo: no echo in the reply".into());
    }
    Ok(())
}

fn http() -> Result<Http, Failure> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(file) = std::env::var_os("BENCH_CA_FILE") {
        let pem = std::fs::read(file)?;
        for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
            roots.add(cert?)?;
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut connector = HttpConnector::new();
    connector.enforce_http(false);
    connector.set_nodelay(true);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(connector);
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(std::time::Duration::from_secs(30))
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .build(https))
}

async fn run(url: &str, workload: &str, n: usize, modern: bool, wait: u64) -> Result<(), Failure> {
    let endpoint = Arc::new(Endpoint::open(http()?, url, modern).await?);
    match workload {
        "session" => {
            for _ in 0..n {
                echo(&endpoint).await?;
            }
        }
        "concurrent" | "inflight" => {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let endpoint = endpoint.clone();
                if workload == "concurrent" {
                    tasks.spawn(async move { echo(&endpoint).await });
                } else {
                    tasks.spawn(async move {
                        let body = endpoint
                            .call("wait", &format!(r#"{{"ms":{wait}}}"#))
                            .await?;
                        if !holds(&body, &format!("waited {wait} ms")) {
                            return Err::<(), Failure>("wait: not the reply".into());
                        }
                        Ok(())
                    });
                }
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
        }
        "big" => {
            let body = endpoint
                .call("big_text", &format!(r#"{{"bytes":{n}}}"#))
                .await?;
            if body.len() < n {
                return Err(format!("big_text: {} bytes", body.len()).into());
            }
        }
        "progress" => {
            let arguments = format!(r#"{{"steps":{n}}}"#);
            let body = endpoint
                .call_with("progress_burst", &arguments, r#""progressToken":1"#)
                .await?;
            let events = body
                .windows(22)
                .filter(|w| *w == b"notifications/progress")
                .count();
            let end = &body[body.len().saturating_sub(200)..];
            if events != n || !holds(end, &format!("done after {n} steps")) {
                return Err(format!("progress_burst: {events} notifications").into());
            }
        }
        "list" => {
            for _ in 0..n {
                let body = endpoint.body("tools/list", "");
                let (_, body, _) = timed!(endpoint.post("tools/list", None, body))?;
                let last = format!("_{}\"", TOOLS - 1);
                if !holds(&body, &last) {
                    return Err("tools/list: not 100 tools".into());
                }
            }
        }
        other => return Err(format!("unknown workload {other}").into()),
    }
    endpoint.close().await
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, workload, n, rest @ ..] = &args[..] else {
        eprintln!("usage: bench-floor URL WORKLOAD N [2025|2026] [WAIT_MS]");
        std::process::exit(2);
    };
    let n: usize = n.parse().unwrap_or_else(|_| {
        eprintln!("N must be a count");
        std::process::exit(2)
    });
    let modern = match rest.first().map(String::as_str) {
        None | Some("2025") => false,
        Some("2026") => true,
        Some(other) => {
            eprintln!("unknown era {other}: 2025 or 2026");
            std::process::exit(2)
        }
    };
    let wait: u64 = rest.get(1).and_then(|w| w.parse().ok()).unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let meter = bench_common::Meter::start();
    if let Err(e) = runtime.block_on(run(url, workload, n, modern, wait)) {
        // The whole chain: hyper's own message ("client error (SendRequest)") names no cause.
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        eprintln!("bench-floor {workload} {n}: {message}");
        std::process::exit(1);
    }
    meter.finish();
}
