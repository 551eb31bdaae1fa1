//! Streamable HTTP over TLS: the client against a loopback HTTPS front (tokio-rustls) that
//! terminates TLS and pipes the bytes to a [`DemoServer`]. Certificates are verified: a
//! private CA works only when trusted (`TlsOptions::extra_roots`, `Roots::CaFile`,
//! `extra_ca_file`, a binding's `tls`), and a certificate for another name is refused. A front
//! that requires client certificates (mutual TLS) accepts the pool's client certificate and
//! refuses a pool without one. PEM files that cannot be used are typed errors naming the file,
//! never quoting it. The platform's roots can only be shown to load: a loopback test cannot
//! add the test CA to the platform's store. The test certificates live in `tests/data/tls/`
//! (see its README).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::ErrorKind;
use mcpwire::binding::call::{CallContext, Caller, EnvTokens};
use mcpwire::binding::config::load_config;
use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use mcpwire::transport::http::{
    ClientCert, HttpConfig, HttpPool, ProxyConfig, Roots, TlsError, TlsOptions,
};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::LazyConfigAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};

/// No step of a test may take longer than this.
const STEP: Duration = Duration::from_secs(10);

pub(crate) fn data(name: &str) -> PathBuf {
    crate::support::repo_root()
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
pub(crate) fn test_ca() -> TlsOptions {
    let mut options = TlsOptions::default();
    options.extra_roots = vec![cert("ca.pem")];
    options
}

/// Only the test CA, from its file.
fn ca_file() -> TlsOptions {
    let mut options = TlsOptions::default();
    options.roots = Roots::CaFile(data("ca.pem"));
    options
}

/// The test client certificate and key.
fn client_cert() -> ClientCert {
    ClientCert::new(data("client.pem"), data("client.key"))
}

/// What the front saw of one TLS handshake.
#[derive(Clone, Debug, Default)]
pub(crate) struct Handshake {
    /// The SNI the client sent (none for an IP address).
    server_name: Option<String>,
    /// The ALPN protocols the client offered, in its order.
    offered_alpn: Vec<String>,
    /// The protocol agreed, when the handshake completed.
    negotiated_alpn: Option<String>,
    /// Why the handshake failed, when it did.
    error: Option<String>,
    /// Whether the client presented a certificate (that the front accepted).
    client_cert: bool,
}

/// A loopback HTTPS front: TLS terminated here, bytes piped to a plain-HTTP backend. Offers
/// ALPN `http/1.1` only (the demo server speaks HTTP/1.1). Dropping it stops the listener and
/// every connection.
pub(crate) struct TlsFront {
    pub(crate) addr: SocketAddr,
    handshakes: Arc<Mutex<Vec<Handshake>>>,
    task: JoinHandle<()>,
}

impl TlsFront {
    /// Serves `cert_file`/`key_file` on `127.0.0.1` at a free port, piping to `backend`.
    pub(crate) async fn start(cert_file: &str, key_file: &str, backend: SocketAddr) -> TlsFront {
        Self::start_with(cert_file, key_file, backend, None).await
    }

    /// As [`start`](Self::start); with `client_ca`, the front requires a client certificate
    /// issued by that CA (mutual TLS).
    pub(crate) async fn start_with(
        cert_file: &str,
        key_file: &str,
        backend: SocketAddr,
        client_ca: Option<&str>,
    ) -> TlsFront {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("protocol versions");
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(client_ca) => {
                let mut roots = RootCertStore::empty();
                roots.add(cert(client_ca)).expect("the client CA");
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .expect("a client verifier");
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
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
    pub(crate) fn url(&self) -> String {
        format!("https://{}/mcp", self.addr)
    }

    pub(crate) fn handshakes(&self) -> Vec<Handshake> {
        self.handshakes.lock().unwrap().clone()
    }

    /// The handshakes, once at least `count` have been recorded. A client that refuses the
    /// certificate returns before the front has read its alert, so this polls (up to [`STEP`]).
    pub(crate) async fn wait_handshakes(&self, count: usize) -> Vec<Handshake> {
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
    record.client_cert = tls.get_ref().1.peer_certificates().is_some();
    seen.lock().unwrap().push(record);
    let Ok(mut plain) = TcpStream::connect(backend).await else {
        return;
    };
    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
}

pub(crate) async fn connect(pool: &HttpPool, url: &str) -> Result<Client, mcpwire::Error> {
    let config = HttpConfig::new(url).expect("URL");
    tokio::time::timeout(
        STEP,
        Client::connect_http(pool, config, ClientOptions::default()),
    )
    .await
    .expect("connect took too long")
}

pub(crate) async fn echo(client: &Client) {
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
pub(crate) fn assert_certificate_refused(result: Result<Client, mcpwire::Error>, why: &str) {
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
    // The 2025 path, which has a session id to check.
    let mut options = DemoOptions::default();
    options.era = Era::Legacy;
    let demo = DemoServer::start_with_options(options)
        .await
        .expect("demo server");
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
    // A connect that lost the race for a request may still be under way: the count is final
    // once it is through. The front records a handshake when its side completes, which may
    // trail the client's.
    tokio::time::timeout(STEP, pool.connects_settled())
        .await
        .expect("the pool's connects took too long");
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
    let mut garbage = TlsOptions::default();
    garbage.extra_roots = vec![CertificateDer::from(b"not a certificate".to_vec())];
    let error = HttpPool::new(&garbage).expect_err("a garbage root must be refused");
    assert!(
        matches!(error, TlsError::InvalidRoot { path: None, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("root certificate"), "{error}");
    assert!(std::error::Error::source(&error).is_some(), "{error:?}");
}

/// Connects to `front` with `tls`, calls echo twice and closes.
async fn echo_over(tls: &TlsOptions, front: &TlsFront) {
    let pool = HttpPool::new(tls).expect("pool");
    let client = connect(&pool, &front.url())
        .await
        .unwrap_or_else(|e| panic!("connect with {tls:?}: {e}"));
    echo(&client).await;
    echo(&client).await;
    tokio::time::timeout(STEP, client.close())
        .await
        .expect("close took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_ca_file_is_trusted_and_replaces_the_roots() {
    let demo = DemoServer::start().await.expect("demo server");
    let front = TlsFront::start("server.pem", "server.key", demo.addr()).await;
    echo_over(&ca_file(), &front).await;
    // The webpki roots plus the test CA from a file.
    let mut extra = TlsOptions::default();
    extra.extra_ca_file = Some(data("ca.pem"));
    echo_over(&extra, &front).await;
    // A CA file is the only set of roots: another CA's file does not trust the front.
    let mut other_ca = TlsOptions::default();
    other_ca.roots = Roots::CaFile(data("client-ca.pem"));
    let pool = HttpPool::new(&other_ca).expect("pool");
    assert_certificate_refused(connect(&pool, &front.url()).await, "another CA's file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_mutual_works_with_the_client_certificate() {
    let demo = DemoServer::start().await.expect("demo server");
    let front = TlsFront::start_with(
        "server.pem",
        "server.key",
        demo.addr(),
        Some("client-ca.pem"),
    )
    .await;
    let mut tls = ca_file();
    tls.client_cert = Some(client_cert());
    echo_over(&tls, &front).await;
    let handshakes = front.wait_handshakes(1).await;
    assert!(
        handshakes
            .iter()
            .all(|h| h.error.is_none() && h.client_cert),
        "{handshakes:?}"
    );
    assert!(demo.stats().requests > 0, "{:?}", demo.stats());
}

/// Asserts that a front requiring client certificates refused the connection: a clear error
/// whose outcome is known (nothing reached the server).
async fn assert_mutual_tls_refused(tls: &TlsOptions, why: &str) {
    let demo = DemoServer::start().await.expect("demo server");
    let front = TlsFront::start_with(
        "server.pem",
        "server.key",
        demo.addr(),
        Some("client-ca.pem"),
    )
    .await;
    let pool = HttpPool::new(tls).expect("pool");
    let error = match connect(&pool, &front.url()).await {
        Ok(client) => panic!("connected {why}: {client:?}"),
        Err(error) => error,
    };
    // With TLS 1.3 the client's side of the handshake ends before the server checks the
    // client's certificate: the refusal (an alert) arrives as the answer to the first request,
    // which the server's TLS layer never passed on.
    assert_eq!(error.kind(), ErrorKind::Connect, "{why}: {error}");
    assert!(!error.outcome_unknown(), "{why}: {error}");
    let message = error.to_string().to_lowercase();
    assert!(
        message.contains("refused the tls handshake"),
        "{why}: {error}"
    );
    assert!(message.contains("client certificate"), "{why}: {error}");
    let handshakes = front.wait_handshakes(1).await;
    assert!(
        handshakes.iter().all(|h| h.error.is_some()),
        "{handshakes:?}"
    );
    assert_eq!(demo.stats().requests, 0, "{why}: {:?}", demo.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_mutual_without_a_client_certificate_is_refused() {
    assert_mutual_tls_refused(&ca_file(), "without a client certificate").await;
    // A certificate from a CA the front does not trust for clients.
    let mut untrusted = ca_file();
    untrusted.client_cert = Some(ClientCert::new(data("server.pem"), data("server.key")));
    assert_mutual_tls_refused(&untrusted, "with an untrusted client certificate").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_platform_roots_load_but_do_not_trust_the_test_ca() {
    let mut platform = TlsOptions::default();
    platform.roots = Roots::Platform;
    // The test cannot add the test CA to the platform's store, so it checks what it can: the
    // store loads (or, on a machine with none, fails as such), and does not trust the front.
    match HttpPool::new(&platform) {
        Ok(pool) => {
            let demo = DemoServer::start().await.expect("demo server");
            let front = TlsFront::start("server.pem", "server.key", demo.addr()).await;
            assert_certificate_refused(connect(&pool, &front.url()).await, "platform roots");
            // With the test CA added, the same platform roots connect.
            echo_over(
                &{
                    let mut options = platform;
                    options.extra_ca_file = Some(data("ca.pem"));
                    options
                },
                &front,
            )
            .await;
        }
        Err(error @ TlsError::PlatformRoots { .. }) => {
            eprintln!("no platform trust store on this machine: {error}");
        }
        Err(other) => panic!("platform roots: {other:?}"),
    }
}

/// A file of its own under the system's temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> TempFile {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("mcpwire-tls-{}-{n}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("write a temporary file");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Text that must never appear in an error: it stands for key material.
const KEY_MATERIAL: &str = "S3CRETKEYMATERIAL";

#[test]
fn tls_bad_pem_files_are_typed_errors_naming_the_file() {
    let pool = |tls: TlsOptions| HttpPool::new(&tls).expect_err("refused");
    let with_key = |key_file: &PathBuf| {
        let mut options = TlsOptions::default();
        options.client_cert = Some(ClientCert::new(data("client.pem"), key_file.clone()));
        options
    };
    let check = |error: &TlsError, path: &PathBuf| {
        let text = error.to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(!text.contains(KEY_MATERIAL), "{text}");
        assert!(!format!("{error:?}").contains(KEY_MATERIAL), "{error:?}");
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            assert!(!cause.to_string().contains(KEY_MATERIAL), "{cause}");
            source = cause.source();
        }
    };

    // A key cut short: a BEGIN line with no END.
    let cut = TempFile::new(
        "cut.key",
        format!(
            "-----BEGIN PRIVATE KEY-----
{KEY_MATERIAL}AAAA
"
        )
        .as_bytes(),
    );
    let error = pool(with_key(&cut.0));
    assert!(
        matches!(&error, TlsError::Pem { path, .. } if *path == cut.0),
        "{error:?}"
    );
    check(&error, &cut.0);

    // A malformed BEGIN line, which the PEM parser's own message would quote.
    let begin = TempFile::new(
        "begin.key",
        format!(
            "-----BEGIN {KEY_MATERIAL}
AAAA
-----END PRIVATE KEY-----
"
        )
        .as_bytes(),
    );
    let error = pool(with_key(&begin.0));
    assert!(
        matches!(&error, TlsError::Pem { .. } | TlsError::Missing { .. }),
        "{error:?}"
    );
    check(&error, &begin.0);

    // Bad base64 inside a key section.
    let base64 = TempFile::new(
        "base64.key",
        format!(
            "-----BEGIN PRIVATE KEY-----
{KEY_MATERIAL}!!!
-----END PRIVATE KEY-----
"
        )
        .as_bytes(),
    );
    let error = pool(with_key(&base64.0));
    assert!(matches!(&error, TlsError::Pem { .. }), "{error:?}");
    check(&error, &base64.0);

    // A key file holding only a certificate.
    let error = pool(with_key(&data("client.pem")));
    assert!(matches!(&error, TlsError::Missing { .. }), "{error:?}");
    assert!(error.to_string().contains("private key"), "{error}");

    // A key that is not the certificate's.
    let error = pool(with_key(&data("other.key")));
    assert!(matches!(&error, TlsError::ClientCert { .. }), "{error:?}");
    assert!(std::error::Error::source(&error).is_some(), "{error:?}");

    // A CA file that is missing, or holds no certificate.
    let missing = data("no-such-file.pem");
    let error = pool({
        let mut options = TlsOptions::default();
        options.roots = Roots::CaFile(missing.clone());
        options
    });
    assert!(matches!(&error, TlsError::Read { .. }), "{error:?}");
    check(&error, &missing);
    assert!(std::error::Error::source(&error).is_some(), "{error:?}");
    let empty = TempFile::new(
        "empty.pem",
        b"no PEM here
",
    );
    let error = pool({
        let mut options = TlsOptions::default();
        options.extra_ca_file = Some(empty.0.clone());
        options
    });
    assert!(matches!(&error, TlsError::Missing { .. }), "{error:?}");
    assert!(error.to_string().contains("certificate"), "{error}");
    check(&error, &empty.0);
}

/// A binding for the demo server's `echo` at `url`, with `extra` members.
fn echo_binding(url: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut binding = json!({
        "name": "echo", "description": "", "input_schema": {"type": "object"},
        "url": url, "mcp_tool": "echo", "tenants": ["acme"], "timeout_seconds": 20
    });
    for (key, value) in extra.as_object().expect("an object") {
        binding[key] = value.clone();
    }
    binding
}

pub(crate) fn call_context() -> CallContext {
    CallContext::new("acme", "s", "c1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_binding_settings_choose_the_pool() {
    let demo = DemoServer::start().await.expect("demo server");
    let front = TlsFront::start_with(
        "server.pem",
        "server.key",
        demo.addr(),
        Some("client-ca.pem"),
    )
    .await;
    let path = |name: &str| data(name).display().to_string();
    let config = json!([
        echo_binding(
            &front.url(),
            json!({"name": "mutual", "tls": {
                "ca_file": path("ca.pem"),
                "client_cert_file": path("client.pem"),
                "client_key_file": path("client.key"),
            }})
        ),
        echo_binding(
            &front.url(),
            json!({"name": "no_cert", "tls": {"ca_file": path("ca.pem")}})
        ),
        echo_binding(&front.url(), json!({"name": "webpki"})),
    ]);
    let bindings = load_config(&config.to_string()).expect("bindings");
    let caller = Caller::with_default_proxy(
        HttpPool::new(&TlsOptions::default()).expect("pool"),
        bindings,
        Arc::new(EnvTokens),
        ProxyConfig::default(),
    )
    .expect("caller");
    let call = |name: &'static str| {
        let caller = &caller;
        async move {
            tokio::time::timeout(
                STEP,
                caller.call(
                    name,
                    &call_context(),
                    &json!({"message": "hi"}),
                    |_| {},
                    None,
                ),
            )
            .await
            .expect("the call took too long")
        }
    };
    let result = call("mutual").await;
    assert!(!result.is_error(), "{}", result.to_json_line());
    for name in ["no_cert", "webpki"] {
        let result = call(name).await;
        assert!(result.is_error(), "{name}: {}", result.to_json_line());
        assert_eq!(
            result.unknown_outcome(),
            Some(false),
            "{}",
            result.to_json_line()
        );
        let error = result.error_message().expect("an error");
        assert_eq!(
            result.error_kind().map(ErrorKind::as_str),
            Some("connect"),
            "{name}: {error:?}"
        );
        assert!(
            error.to_lowercase().contains("certificate"),
            "{name}: {error:?}"
        );
    }
    // The binding without `tls` shares the caller's pool; the other two have their own.
    let shared = caller.pool_for("webpki").expect("a pool");
    assert_eq!(shared.tls(), caller.pool().tls());
    assert_ne!(
        caller.pool_for("mutual").expect("a pool").tls(),
        shared.tls()
    );

    // A file that cannot be used stops the caller from being built, naming binding and field.
    let bad = load_config(
        &json!([echo_binding(
            &front.url(),
            json!({"name": "bad", "tls": {
                "extra_ca_file": path("missing.pem"),
            }})
        )])
        .to_string(),
    )
    .expect("valid JSON");
    let error = Caller::with_default_proxy(
        HttpPool::new(&TlsOptions::default()).expect("pool"),
        bad,
        Arc::new(EnvTokens),
        ProxyConfig::default(),
    )
    .expect_err("a missing file");
    assert_eq!(error.binding.as_deref(), Some("bad"), "{error}");
    assert_eq!(error.field.as_deref(), Some("tls.extra_ca_file"), "{error}");
    assert!(error.message.contains("missing.pem"), "{error}");
}
