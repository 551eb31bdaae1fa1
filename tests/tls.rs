//! Streamable HTTP over TLS: the client against a loopback HTTPS front (tokio-rustls) that
//! terminates TLS and pipes the bytes to a [`DemoServer`]. Certificates are verified: a
//! private CA works only when passed in `TlsOptions::extra_roots`, and a certificate for
//! another name is refused. The test certificates live in `tests/data/tls/` (see its README).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::ErrorKind;
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::demo::DemoServer;
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::LazyConfigAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

/// No step of a test may take longer than this.
const STEP: Duration = Duration::from_secs(10);

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tls")
        .join(name)
}

fn cert(name: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(data(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
}

fn key(name: &str) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_file(data(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
}

/// The test CA, for `extra_roots`.
fn test_ca() -> TlsOptions {
    TlsOptions {
        extra_roots: vec![cert("ca.pem")],
    }
}

/// What the front saw of one TLS handshake.
#[derive(Clone, Debug, Default)]
struct Handshake {
    /// The SNI the client sent (none for an IP address).
    server_name: Option<String>,
    /// The ALPN protocols the client offered, in its order.
    offered_alpn: Vec<String>,
    /// The protocol agreed, when the handshake completed.
    negotiated_alpn: Option<String>,
    /// Why the handshake failed, when it did.
    error: Option<String>,
}

/// A loopback HTTPS front: TLS terminated here, bytes piped to a plain-HTTP backend. Offers
/// ALPN `http/1.1` only (the demo server speaks HTTP/1.1). Dropping it stops the listener and
/// every connection.
struct TlsFront {
    addr: SocketAddr,
    handshakes: Arc<Mutex<Vec<Handshake>>>,
    task: JoinHandle<()>,
}

impl TlsFront {
    /// Serves `cert_file`/`key_file` on `127.0.0.1` at a free port, piping to `backend`.
    async fn start(cert_file: &str, key_file: &str, backend: SocketAddr) -> TlsFront {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert(cert_file)], key(key_file))
            .expect("server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind the TLS front");
        let addr = listener.local_addr().expect("local address");
        let handshakes = Arc::new(Mutex::new(Vec::new()));
        let seen = handshakes.clone();
        let task = tokio::spawn(async move {
            // Owned by this task: aborting it drops the set, which aborts every connection.
            let mut connections = JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                connections.spawn(serve(tcp, config.clone(), backend, seen.clone()));
                while connections.try_join_next().is_some() {}
            }
        });
        TlsFront {
            addr,
            handshakes,
            task,
        }
    }

    /// `https://127.0.0.1:PORT/mcp`.
    fn url(&self) -> String {
        format!("https://{}/mcp", self.addr)
    }

    fn handshakes(&self) -> Vec<Handshake> {
        self.handshakes.lock().unwrap().clone()
    }

    /// The handshakes, once at least `count` have been recorded. A client that refuses the
    /// certificate returns before the front has read its alert, so this polls (up to [`STEP`]).
    async fn wait_handshakes(&self, count: usize) -> Vec<Handshake> {
        let deadline = tokio::time::Instant::now() + STEP;
        loop {
            let handshakes = self.handshakes();
            if handshakes.len() >= count {
                return handshakes;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{count} handshake(s) expected, saw {handshakes:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    tcp: TcpStream,
    config: Arc<ServerConfig>,
    backend: SocketAddr,
    seen: Arc<Mutex<Vec<Handshake>>>,
) {
    let mut record = Handshake::default();
    let acceptor = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), tcp);
    let start = match acceptor.await {
        Ok(start) => start,
        Err(e) => {
            record.error = Some(format!("reading the ClientHello: {e}"));
            seen.lock().unwrap().push(record);
            return;
        }
    };
    let hello = start.client_hello();
    record.server_name = hello.server_name().map(str::to_owned);
    record.offered_alpn = hello
        .alpn()
        .into_iter()
        .flatten()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let mut tls = match start.into_stream(config).await {
        Ok(tls) => tls,
        Err(e) => {
            record.error = Some(e.to_string());
            seen.lock().unwrap().push(record);
            return;
        }
    };
    record.negotiated_alpn = tls
        .get_ref()
        .1
        .alpn_protocol()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    seen.lock().unwrap().push(record);
    let Ok(mut plain) = TcpStream::connect(backend).await else {
        return;
    };
    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
}

async fn connect(pool: &HttpPool, url: &str) -> Result<Client, mcpwire::Error> {
    let config = HttpConfig::new(url).expect("URL");
    tokio::time::timeout(
        STEP,
        Client::connect_http(pool, config, ClientOptions::default()),
    )
    .await
    .expect("connect took too long")
}

async fn echo(client: &Client) {
    let arguments = json!({"message": "hi"}).as_object().cloned();
    let result = tokio::time::timeout(
        STEP,
        client.call_tool("echo", arguments, CallOptions::default()),
    )
    .await
    .expect("the call took too long")
    .expect("echo over TLS");
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(result.content.len(), 1, "{result:?}");
    assert_eq!(result.content[0].as_text(), Some("Echo: hi"), "{result:?}");
}

/// Asserts a refused handshake: `Connect`, nothing sent, and a message about the certificate.
fn assert_certificate_refused(result: Result<Client, mcpwire::Error>, why: &str) {
    let error = match result {
        Ok(client) => panic!("connected despite {why}: {client:?}"),
        Err(error) => error,
    };
    assert_eq!(error.kind(), ErrorKind::Connect, "{why}: {error}");
    assert!(!error.outcome_unknown(), "{why}: {error}");
    let message = error.to_string().to_lowercase();
    assert!(
        message.contains("certificate"),
        "{why}: the message should mention the certificate: {error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_test_ca_connects_and_calls() {
    let demo = DemoServer::start().await.expect("demo server");
    let front = TlsFront::start("server.pem", "server.key", demo.addr()).await;
    let pool = HttpPool::new(&test_ca()).expect("pool");
    let client = connect(&pool, &front.url())
        .await
        .expect("connect over TLS");
    assert!(client.session_id().is_some(), "the demo server assigns one");
    let tools = tokio::time::timeout(STEP, client.list_tools())
        .await
        .expect("list took too long")
        .expect("tools/list over TLS");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    echo(&client).await;
    echo(&client).await;
    tokio::time::timeout(STEP, client.close())
        .await
        .expect("close took too long");

    // Everything went through the front, on kept-alive connections.
    let stats = demo.stats();
    assert!(stats.sessions_opened >= 1, "{stats:?}");
    assert_eq!(stats.sessions_deleted, 1, "{stats:?}");
    // The front records a handshake when its side completes, which may trail the client's.
    let opened = pool.connections_opened();
    let handshakes = front.wait_handshakes(opened as usize).await;
    assert!(!handshakes.is_empty());
    assert_eq!(handshakes.len() as u64, opened, "{handshakes:?}");
    assert!(
        handshakes.len() < 4,
        "connections should be reused across requests: {handshakes:?}"
    );
    for handshake in &handshakes {
        assert_eq!(handshake.error, None, "{handshake:?}");
        // No SNI for an IP address (RFC 6066 §3).
        assert_eq!(handshake.server_name, None, "{handshake:?}");
        // The client offers both (ALPN decides); this front picks HTTP/1.1.
        assert_eq!(
            handshake.offered_alpn,
            ["h2", "http/1.1"],
            "the pool enables HTTP/2 and HTTP/1.1: {handshake:?}"
        );
        assert_eq!(
            handshake.negotiated_alpn.as_deref(),
            Some("http/1.1"),
            "{handshake:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_by_host_name_sends_sni() {
    let demo = DemoServer::start().await.expect("demo server");
    let front = TlsFront::start("server.pem", "server.key", demo.addr()).await;
    let pool = HttpPool::new(&test_ca()).expect("pool");
    // `localhost` may resolve to ::1 first; the front listens on 127.0.0.1 only, and the
    // connector tries every address.
    let url = format!("https://localhost:{}/mcp", front.addr.port());
    let client = connect(&pool, &url).await.expect("connect to localhost");
    echo(&client).await;
    tokio::time::timeout(STEP, client.close())
        .await
        .expect("close took too long");
    let handshakes = front.wait_handshakes(1).await;
    for handshake in &handshakes {
        assert_eq!(
            handshake.server_name.as_deref(),
            Some("localhost"),
            "{handshake:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_without_the_ca_is_refused() {
    let demo = DemoServer::start().await.expect("demo server");
    let front = TlsFront::start("server.pem", "server.key", demo.addr()).await;
    // The webpki roots only.
    let pool = HttpPool::new(&TlsOptions::default()).expect("pool");
    assert_certificate_refused(connect(&pool, &front.url()).await, "an unknown issuer");
    // The handshake was reached and refused by the client; nothing reached the server.
    let handshakes = front.wait_handshakes(1).await;
    assert!(
        handshakes.iter().all(|h| h.error.is_some()),
        "{handshakes:?}"
    );
    assert_eq!(demo.stats().requests, 0, "{:?}", demo.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_certificate_for_another_name_is_refused() {
    let demo = DemoServer::start().await.expect("demo server");
    // Signed by the trusted test CA, but for `other.invalid` only.
    let front = TlsFront::start("other.pem", "other.key", demo.addr()).await;
    let pool = HttpPool::new(&test_ca()).expect("pool");
    assert_certificate_refused(
        connect(&pool, &front.url()).await,
        "a certificate for another name",
    );
    let localhost = format!("https://localhost:{}/mcp", front.addr.port());
    assert_certificate_refused(
        connect(&pool, &localhost).await,
        "a certificate for another host name",
    );
    let handshakes = front.wait_handshakes(2).await;
    assert!(
        handshakes.iter().all(|h| h.error.is_some()),
        "{handshakes:?}"
    );
    assert_eq!(demo.stats().requests, 0, "{:?}", demo.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_invalid_extra_root_is_a_setup_error() {
    let garbage = TlsOptions {
        extra_roots: vec![CertificateDer::from(b"not a certificate".to_vec())],
    };
    let error = HttpPool::new(&garbage).expect_err("a garbage root must be refused");
    assert!(error.contains("root certificate"), "{error}");
}
