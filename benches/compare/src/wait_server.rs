//! The server of the `inflight` workload: one `wait` tool that answers after the `ms` it is
//! given, for as many calls at once as come (10,000 and more), over HTTP/1.1 in cleartext and
//! over HTTP/2 (and HTTP/1.1) behind TLS with ALPN. The demo server takes at most 1024
//! connections and speaks HTTP/1.1 only, and the rmcp fixture server (`fixtures/servers/
//! rmcp-server`) is built with axum's `http1` alone; a burst of 10,000 calls needs neither
//! limit in the way, so the burst gets a server of its own, on hyper (`hyper-util`'s `auto`
//! connection: HTTP/1.1 or HTTP/2 as the client speaks), with up to 20,000 streams on one
//! HTTP/2 connection.
//!
//! It speaks the least of both eras the clients need: `initialize` (a 2025-era revision,
//! negotiated as `list_server.rs` does, and an `Mcp-Session-Id`), `server/discover` (2026-07-28
//! and the 2025 revisions), `tools/list` (the one tool; at 2026-07-28 with the cache hints
//! `ttlMs` and `cacheScope`), `tools/call` of `wait` (`{"ms": N}`, N at most 60,000: "waited N ms" after N ms; a 2026-07-28 request, one whose `_meta` names
//! the revision, gets `resultType: complete`), `ping`; notifications and responses get 202,
//! `DELETE` 200, anything else 405. Replies are `application/json`. The certificate is the
//! test one of `tests/data/tls` (`server.pem`, for `127.0.0.1` and `localhost`), trusted by
//! the clients through `BENCH_CA_FILE`.

use std::convert::Infallible;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::list_server::initialize_version;

/// The longest wait a call may ask for.
const MAX_WAIT_MS: u64 = 60_000;
/// The largest request body read.
const MAX_BODY: usize = 64 << 10;

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    connections: AtomicU64,
    /// Connections that negotiated HTTP/2.
    h2_connections: AtomicU64,
}

/// A running server; dropping it stops accepting.
pub struct WaitServer {
    plain: SocketAddr,
    tls: SocketAddr,
    counts: Arc<Counts>,
    tasks: Vec<JoinHandle<()>>,
}

/// The test CA that signed the server's certificate (for `BENCH_CA_FILE`).
pub fn ca_file() -> PathBuf {
    tls_data("ca.pem")
}

fn tls_data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/tls")
        .join(name)
}

fn tls_acceptor() -> io::Result<TlsAcceptor> {
    let other = |e: &dyn std::fmt::Display| io::Error::other(e.to_string());
    let cert = CertificateDer::from_pem_file(tls_data("server.pem")).map_err(|e| other(&e))?;
    let key = PrivateKeyDer::from_pem_file(tls_data("server.key")).map_err(|e| other(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| other(&e))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| other(&e))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

impl WaitServer {
    pub async fn start() -> io::Result<WaitServer> {
        let plain = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let tls = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let acceptor = tls_acceptor()?;
        let counts = Arc::new(Counts::default());
        let server = WaitServer {
            plain: plain.local_addr()?,
            tls: tls.local_addr()?,
            counts: counts.clone(),
            tasks: vec![
                tokio::spawn(accept(plain, None, counts.clone())),
                tokio::spawn(accept(tls, Some(acceptor), counts)),
            ],
        };
        Ok(server)
    }

    /// The cleartext endpoint (HTTP/1.1).
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.plain)
    }

    /// The TLS endpoint (HTTP/2 by ALPN, or HTTP/1.1).
    pub fn tls_url(&self) -> String {
        format!("https://localhost:{}/mcp", self.tls.port())
    }

    /// HTTP requests, TCP connections and HTTP/2 connections since the start.
    pub fn stats(&self) -> (u64, u64, u64) {
        (
            self.counts.requests.load(Ordering::Relaxed),
            self.counts.connections.load(Ordering::Relaxed),
            self.counts.h2_connections.load(Ordering::Relaxed),
        )
    }
}

impl Drop for WaitServer {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn accept(listener: TcpListener, tls: Option<TlsAcceptor>, counts: Arc<Counts>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors and the like: back off rather than spin.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        counts.connections.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let (tls, counts) = (tls.clone(), counts.clone());
        tokio::spawn(async move {
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder.http2().max_concurrent_streams(Some(20_000));
            let service = {
                let counts = counts.clone();
                hyper::service::service_fn(move |request| handle(request, counts.clone()))
            };
            match tls {
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
                Some(acceptor) => {
                    let Ok(Ok(stream)) =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream))
                            .await
                    else {
                        return;
                    };
                    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                        counts.h2_connections.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}

fn reply(
    status: StatusCode,
    session: Option<String>,
    body: Option<String>,
) -> Response<Full<Bytes>> {
    let mut response = Response::builder().status(status);
    if let Some(session) = session {
        response = response.header("mcp-session-id", session);
    }
    if body.is_some() {
        response = response.header("content-type", "application/json");
    }
    response
        .body(Full::new(body.map(Bytes::from).unwrap_or_default()))
        .unwrap_or_default()
}

async fn handle(
    request: Request<Incoming>,
    counts: Arc<Counts>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let n = counts.requests.fetch_add(1, Ordering::Relaxed);
    match *request.method() {
        hyper::Method::POST => {}
        hyper::Method::DELETE => return Ok(reply(StatusCode::OK, None, None)),
        _ => return Ok(reply(StatusCode::METHOD_NOT_ALLOWED, None, None)),
    }
    let Ok(body) = Limited::new(request.into_body(), MAX_BODY).collect().await else {
        return Ok(reply(StatusCode::BAD_REQUEST, None, None));
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body.to_bytes()) else {
        return Ok(reply(StatusCode::BAD_REQUEST, None, None));
    };
    let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
        return Ok(reply(StatusCode::ACCEPTED, None, None));
    };
    let params = &message["params"];
    let modern =
        params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str() == Some("2026-07-28");
    let mut session = None;
    let result = match method {
        "initialize" => {
            session = Some(format!("{n:032x}"));
            json!({
                "protocolVersion": initialize_version(params["protocolVersion"].as_str()),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "compare-wait", "version": "0.0.0"},
            })
        }
        "server/discover" => json!({
            "resultType": "complete",
            "supportedVersions": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
            "capabilities": {"tools": {}},
            // Both required by the DiscoverResult schema (rmcp 3.11 refuses a result without).
            "ttlMs": 60_000,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "compare-wait", "version": "0.0.0"}},
        }),
        "tools/list" => json!({"tools": [{
            "name": "wait",
            "description": "Answers after `ms` milliseconds.",
            "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]},
        }]}),
        "tools/call" if params["name"] == "wait" => {
            let ms = params["arguments"]["ms"]
                .as_u64()
                .unwrap_or(0)
                .min(MAX_WAIT_MS);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            json!({"content": [{"type": "text", "text": format!("waited {ms} ms")}], "isError": false})
        }
        "tools/call" => json!({
            "content": [{"type": "text", "text": "unknown tool"}], "isError": true,
        }),
        "ping" => json!({}),
        _ => {
            let error = json!({"jsonrpc": "2.0", "id": id, "error":
                {"code": -32601, "message": "Method not found"}});
            return Ok(reply(StatusCode::OK, None, Some(error.to_string())));
        }
    };
    let mut result = result;
    if modern && let Some(object) = result.as_object_mut() {
        object
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        if method == "tools/list" {
            // A 2026-07-28 listing is cacheable and carries its hints (the demo server's
            // values): the Python SDK refuses one without, and lists the tools before it calls.
            object.insert("ttlMs".to_owned(), Value::from(60_000));
            object.insert("cacheScope".to_owned(), Value::from("public"));
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    Ok(reply(StatusCode::OK, session, Some(body)))
}
