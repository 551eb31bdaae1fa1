//! Proxies: the client through a loopback CONNECT proxy that the tests start. Every connection
//! is a `CONNECT host:port` tunnel, for https and http targets alike: the proxy reads only the
//! CONNECT head (which never holds the bearer token), the token goes to the server inside the
//! tunnel (ciphertext for an https target), proxy credentials go on the CONNECT only, a proxy
//! that refuses (407, 403) is a connect failure with nothing sent to the server, and
//! `NO_PROXY` (given through `ProxyConfig::from_lookup`, never the process environment)
//! bypasses the proxy.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::ErrorKind;
use mcpwire::auth::Secret;
use mcpwire::binding::call::{CallContext, Caller, TokenSource};
use mcpwire::binding::config::load_config;
use mcpwire::client::{Client, ClientOptions};
use mcpwire::demo::{DemoOptions, DemoServer, Era};
use mcpwire::transport::http::{HttpConfig, HttpPool, ProxyConfig, TlsOptions};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::tls::{TlsFront, echo, test_ca};

/// No step of a test may take longer than this.
const STEP: Duration = Duration::from_secs(10);
/// The bearer token: it must reach the server and never the proxy.
const TOKEN: &str = "tok-PROXY-TEST-BEARER-5b1d7f";

/// The demo server, its endpoint guarded by [`TOKEN`].
async fn guarded_demo() -> DemoServer {
    let mut options = DemoOptions::default();
    options.token = Some(TOKEN.to_owned());
    DemoServer::start_with_options(options)
        .await
        .expect("demo server")
}

/// The variable [`Tokens`] knows.
const TOKEN_ENV: &str = "MCPWIRE_PROXY_TEST_TOKEN";
/// The proxy's password, which must never appear in errors, `Debug` or the tunnel.
const PROXY_PASSWORD: &str = "pr0xy-PASS-word-91c";
/// The longest CONNECT head the test proxy reads.
const MAX_HEAD: usize = 8 * 1024;
/// The most tunnel bytes the test proxy records per connection.
const MAX_RECORDED: usize = 4 * 1024 * 1024;

/// Hands out [`TOKEN`] for [`TOKEN_ENV`].
struct Tokens;

impl TokenSource for Tokens {
    fn token(&self, name: &str) -> Option<Secret> {
        (name == TOKEN_ENV).then(|| Secret::new(TOKEN))
    }
}

/// How the test proxy answers a CONNECT.
#[derive(Clone)]
enum Answer {
    /// 200, then splice to the target.
    Open,
    /// This status, then close.
    Refuse(u16),
    /// 200 and splice when `Proxy-Authorization` is exactly this, else 407.
    RequireAuth(String),
}

/// What the proxy saw of one connection.
#[derive(Clone, Debug, Default)]
struct Seen {
    /// The bytes read before the tunnel: the CONNECT head, up to its blank line.
    head: Vec<u8>,
    /// The CONNECT target (`host:port`).
    target: String,
    /// The status answered.
    status: u16,
    /// What the client sent into the tunnel (capped at [`MAX_RECORDED`]).
    tunnel: Arc<Mutex<Vec<u8>>>,
}

impl Seen {
    fn head_text(&self) -> String {
        String::from_utf8_lossy(&self.head).into_owned()
    }

    fn tunnel_bytes(&self) -> Vec<u8> {
        self.tunnel.lock().unwrap().clone()
    }
}

/// A loopback CONNECT proxy. Dropping it stops the listener and every connection.
struct ConnectProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: JoinHandle<()>,
}

impl ConnectProxy {
    async fn start(answer: Answer) -> ConnectProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("local address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                connections.spawn(proxy_connection(tcp, answer.clone(), record.clone()));
                while connections.try_join_next().is_some() {}
            }
        });
        ConnectProxy { addr, seen, task }
    }

    /// `http://127.0.0.1:PORT`.
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://alice:PASSWORD@127.0.0.1:PORT`.
    fn url_with_credentials(&self) -> String {
        format!("http://alice:{PROXY_PASSWORD}@{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn proxy_connection(mut client: TcpStream, answer: Answer, record: Arc<Mutex<Vec<Seen>>>) {
    // Read the head, byte by byte past what was read, to keep nothing of the tunnel in it.
    let mut head = Vec::new();
    let read_head = async {
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if head.len() >= MAX_HEAD || client.read(&mut byte).await.ok()? == 0 {
                return None;
            }
            head.push(byte[0]);
        }
        Some(())
    };
    if tokio::time::timeout(STEP, read_head)
        .await
        .ok()
        .flatten()
        .is_none()
    {
        return;
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let target = text
        .strip_prefix("CONNECT ")
        .and_then(|rest| rest.split_once(' '))
        .map(|(target, _)| target.to_owned())
        .unwrap_or_default();
    let authorization = text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_owned())
    });
    let status = match &answer {
        Answer::Open => 200,
        Answer::Refuse(status) => *status,
        Answer::RequireAuth(expected) if authorization.as_ref() == Some(expected) => 200,
        Answer::RequireAuth(_) => 407,
    };
    let seen = Seen {
        head: head.clone(),
        target: target.clone(),
        status,
        tunnel: Arc::default(),
    };
    let tunnel = seen.tunnel.clone();
    record.lock().unwrap().push(seen);
    if status != 200 {
        let reply = format!(
            "HTTP/1.1 {status} No\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n"
        );
        let _ = client.write_all(reply.as_bytes()).await;
        return;
    }
    let Ok(upstream) = TcpStream::connect(&target).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            .await;
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let up = async {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            let n = match client_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            {
                let mut recorded = tunnel.lock().unwrap();
                let room = MAX_RECORDED.saturating_sub(recorded.len());
                recorded.extend_from_slice(&buffer[..n.min(room)]);
            }
            if upstream_write.write_all(&buffer[..n]).await.is_err() {
                break;
            }
        }
        let _ = upstream_write.shutdown().await;
    };
    let down = async {
        let _ = tokio::io::copy(&mut upstream_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    };
    tokio::join!(up, down);
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

fn http_config(url: &str) -> HttpConfig {
    let mut config = HttpConfig::new(url).expect("URL");
    config.bearer_token = Some(Secret::new(TOKEN));
    config
}

async fn connect(pool: &HttpPool, url: &str) -> Result<Client, mcpwire::Error> {
    tokio::time::timeout(
        STEP,
        Client::connect_http(pool, http_config(url), ClientOptions::default()),
    )
    .await
    .expect("connect took too long")
}

async fn echo_and_close(pool: &HttpPool, url: &str) {
    let client = connect(pool, url).await.expect("connect through the proxy");
    echo(&client).await;
    tokio::time::timeout(STEP, client.close())
        .await
        .expect("close took too long");
    settle(pool).await;
}

/// Waits until `pool` opens no more connections. A connect that lost the race for a request
/// (another connection came free first) goes on in the background, past the session's close,
/// and the proxy sees it before the pool counts it: what the proxy saw and the pool's count
/// are final, and each tunnel's TLS handshake recorded, only once it is through.
async fn settle(pool: &HttpPool) {
    tokio::time::timeout(STEP, pool.connects_settled())
        .await
        .expect("the pool's connects took too long");
}

/// Asserts that every connection the proxy saw was a CONNECT to `target` whose head holds
/// neither the bearer token nor an `Authorization` header.
fn assert_tunnels_to(proxy: &ConnectProxy, target: SocketAddr) -> Vec<Seen> {
    let seen = proxy.seen();
    assert!(!seen.is_empty(), "the proxy saw no connection");
    for tunnel in &seen {
        let head = tunnel.head_text();
        assert_eq!(tunnel.target, target.to_string(), "{head}");
        assert!(
            head.starts_with(&format!("CONNECT {target} HTTP/1.1\r\n")),
            "{head}"
        );
        assert!(head.contains(&format!("\r\nHost: {target}\r\n")), "{head}");
        assert!(!contains(&tunnel.head, TOKEN), "{head}");
        assert!(!contains(&tunnel.head, "\nauthorization:"), "{head}");
        assert!(!contains(&tunnel.head, "bearer"), "{head}");
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_tunnels_https_and_sees_only_ciphertext() {
    // The 2025 path, whose session shows the server got the token.
    let mut options = DemoOptions::default();
    options.token = Some(TOKEN.to_owned());
    options.era = Era::Legacy;
    let demo = DemoServer::start_with_options(options)
        .await
        .expect("demo server");
    let front = TlsFront::start("server.pem", "server.key", demo.addr()).await;
    let proxy = ConnectProxy::start(Answer::Open).await;
    let pool = HttpPool::with_proxy(&test_ca(), ProxyConfig::all(&proxy.url()).expect("proxy"))
        .expect("pool");
    echo_and_close(&pool, &front.url()).await;
    let seen = assert_tunnels_to(&proxy, front.addr);
    assert_eq!(seen.len() as u64, pool.connections_opened(), "{seen:?}");
    for tunnel in &seen {
        let bytes = tunnel.tunnel_bytes();
        // A TLS handshake record first, and never the token in the clear.
        assert_eq!(
            bytes.first(),
            Some(&0x16),
            "not TLS: {:?}",
            &bytes[..bytes.len().min(16)]
        );
        assert!(
            !contains(&bytes, TOKEN),
            "the token crossed the proxy in the clear"
        );
        assert!(
            !contains(&bytes, "authorization"),
            "headers crossed in the clear"
        );
    }
    // The server got the token (it refuses requests without it) and the session.
    let stats = demo.stats();
    assert!(
        stats.sessions_opened >= 1 && stats.sessions_deleted == 1,
        "{stats:?}"
    );
}

/// `connects_settled` returns at once when no connect is under way, and waits for one that
/// is: here a tunnel whose proxy holds the CONNECT, until it hangs up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_says_when_its_connects_are_through() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind the proxy");
    let proxy = format!("http://{}", listener.local_addr().expect("local address"));
    let pool = HttpPool::with_proxy(
        &TlsOptions::default(),
        ProxyConfig::all(&proxy).expect("proxy"),
    )
    .expect("pool");
    settle(&pool).await;
    let connecting = {
        let pool = pool.clone();
        tokio::spawn(async move { connect(&pool, "http://127.0.0.1:9/mcp").await })
    };
    // The CONNECT arrives: the connect is under way until the proxy answers.
    let (mut held, _) = tokio::time::timeout(STEP, listener.accept())
        .await
        .expect("no CONNECT")
        .expect("accept");
    let mut head = [0u8; 8];
    held.read_exact(&mut head).await.expect("the CONNECT");
    assert_eq!(&head, b"CONNECT ");
    let settled = pool.connects_settled();
    tokio::pin!(settled);
    tokio::select! {
        biased;
        () = &mut settled => panic!("settled while the CONNECT waits for its answer"),
        () = std::future::ready(()) => {}
    }
    drop(held);
    tokio::time::timeout(STEP, settled)
        .await
        .expect("not settled after the proxy hung up");
    let error = connecting
        .await
        .expect("the connect task")
        .expect_err("no tunnel");
    assert_eq!(error.kind(), ErrorKind::Connect, "{error}");
    assert_eq!(pool.connections_opened(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_tunnels_http_and_the_token_stays_in_the_tunnel() {
    // The 2025 path, whose session shows the server got the token.
    let mut options = DemoOptions::default();
    options.token = Some(TOKEN.to_owned());
    options.era = Era::Legacy;
    let demo = DemoServer::start_with_options(options)
        .await
        .expect("demo server");
    let proxy = ConnectProxy::start(Answer::Open).await;
    let pool = HttpPool::with_proxy(
        &TlsOptions::default(),
        ProxyConfig::all(&proxy.url()).expect("proxy"),
    )
    .expect("pool");
    echo_and_close(&pool, &demo.url()).await;
    let seen = assert_tunnels_to(&proxy, demo.addr());
    // Inside the tunnel: origin-form requests carrying the token to the server. (Plain text,
    // as http is: a proxy that reads its tunnels could read them.)
    let tunnelled: Vec<u8> = seen.iter().flat_map(Seen::tunnel_bytes).collect();
    assert!(
        contains(&tunnelled, "POST /mcp HTTP/1.1\r\n"),
        "origin-form"
    );
    assert!(!contains(&tunnelled, "POST http://"), "absolute-form sent");
    assert!(contains(
        &tunnelled,
        &format!("authorization: Bearer {TOKEN}")
    ));
    assert!(demo.stats().sessions_deleted == 1, "{:?}", demo.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_credentials_go_on_the_connect_only() {
    let demo = guarded_demo().await;
    // base64("alice:pr0xy-PASS-word-91c")
    let basic = "Basic YWxpY2U6cHIweHktUEFTUy13b3JkLTkxYw==";
    let proxy = ConnectProxy::start(Answer::RequireAuth(basic.to_owned())).await;
    let config = ProxyConfig::all(&proxy.url_with_credentials()).expect("proxy");
    let pool = HttpPool::with_proxy(&TlsOptions::default(), config.clone()).expect("pool");
    for debug in [format!("{config:?}"), format!("{pool:?}")] {
        assert!(!debug.contains(PROXY_PASSWORD), "{debug}");
        assert!(!debug.contains("alice"), "{debug}");
        assert!(!debug.contains("YWxpY2U6"), "{debug}");
    }
    echo_and_close(&pool, &demo.url()).await;
    let seen = assert_tunnels_to(&proxy, demo.addr());
    for tunnel in &seen {
        assert_eq!(tunnel.status, 200, "{}", tunnel.head_text());
        assert!(
            tunnel
                .head_text()
                .contains(&format!("\r\nProxy-Authorization: {basic}\r\n")),
            "{}",
            tunnel.head_text()
        );
        // The server never gets the proxy's credentials.
        let bytes = tunnel.tunnel_bytes();
        assert!(
            !contains(&bytes, "proxy-authorization"),
            "sent into the tunnel"
        );
        assert!(!contains(&bytes, "YWxpY2U6"), "sent into the tunnel");
        assert!(!contains(&bytes, PROXY_PASSWORD), "sent into the tunnel");
    }

    // Wrong credentials: a 407, a clear connect failure that shows none of them.
    let wrong = ConnectProxy::start(Answer::RequireAuth("Basic d3Jvbmc=".to_owned())).await;
    let pool = HttpPool::with_proxy(
        &TlsOptions::default(),
        ProxyConfig::all(&wrong.url_with_credentials()).expect("proxy"),
    )
    .expect("pool");
    let error = connect(&pool, &demo.url()).await.expect_err("407");
    assert_eq!(error.kind(), ErrorKind::Connect, "{error}");
    assert!(!error.outcome_unknown(), "{error}");
    let text = format!("{error} {error:?}");
    assert!(text.contains("407"), "{text}");
    assert!(text.contains("refused the credentials"), "{text}");
    for secret in [PROXY_PASSWORD, "alice", "YWxpY2U6"] {
        assert!(!text.contains(secret), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_refusals_are_connect_failures_with_a_known_outcome() {
    let demo = guarded_demo().await;
    for (status, fragment) in [
        (
            407,
            "the proxy requires credentials (407 Proxy Authentication Required)",
        ),
        (403, "the proxy refused the CONNECT (403 Forbidden)"),
    ] {
        let proxy = ConnectProxy::start(Answer::Refuse(status)).await;
        let pool = HttpPool::with_proxy(
            &TlsOptions::default(),
            ProxyConfig::all(&proxy.url()).expect("proxy"),
        )
        .expect("pool");
        let error = connect(&pool, &demo.url()).await.expect_err("refused");
        assert_eq!(error.kind(), ErrorKind::Connect, "{error}");
        assert!(!error.outcome_unknown(), "{error}");
        let text = error.to_string();
        assert!(text.contains(fragment), "{status}: {text}");
        assert!(
            text.contains(&format!("through the proxy {}", proxy.addr)),
            "{text}"
        );
        assert!(!text.contains(TOKEN), "{text}");
        let seen = assert_tunnels_to(&proxy, demo.addr());
        assert!(seen.iter().all(|s| s.status == status), "{seen:?}");
        assert!(seen.iter().all(|s| s.tunnel_bytes().is_empty()), "{seen:?}");
    }
    assert_eq!(demo.stats().requests, 0, "{:?}", demo.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_refusals_fail_before_anything_reaches_the_server() {
    let demo = guarded_demo().await;
    let front = TlsFront::start("server.pem", "server.key", demo.addr()).await;
    for (status, fragment) in [
        (
            407,
            "the proxy requires credentials (407 Proxy Authentication Required)",
        ),
        (403, "the proxy refused the CONNECT (403 Forbidden)"),
        (502, "the proxy refused the CONNECT (502 Bad Gateway)"),
    ] {
        let proxy = ConnectProxy::start(Answer::Refuse(status)).await;
        // Through a binding, as a host calls a tool.
        let ca = crate::tls::data("ca.pem").display().to_string();
        let config = json!([{
            "name": "echo", "description": "", "input_schema": {"type": "object"},
            "url": front.url(), "mcp_tool": "echo", "tenants": ["acme"],
            "token_env": TOKEN_ENV, "timeout_seconds": 20,
            "tls": {"ca_file": ca}, "proxy": proxy.url(),
        }]);
        let caller = Caller::with_default_proxy(
            HttpPool::new(&TlsOptions::default()).expect("pool"),
            load_config(&config.to_string()).expect("bindings"),
            Arc::new(Tokens),
            ProxyConfig::default(),
        )
        .expect("caller");
        let result = tokio::time::timeout(
            STEP,
            caller.call("echo", &context(), &json!({"message": "hi"}), |_| {}, None),
        )
        .await
        .expect("the call took too long");
        let line = result.to_json_line();
        assert!(result.is_error(), "{line}");
        assert_eq!(result.unknown_outcome(), Some(false), "{line}");
        let message = result.error_message().expect("an error");
        assert_eq!(
            result.error_kind().map(ErrorKind::as_str),
            Some("connect"),
            "{line}"
        );
        assert!(message.contains(fragment), "{status}: {line}");
        assert!(message.contains(&proxy.addr.to_string()), "{line}");
        assert!(!message.contains(TOKEN), "{line}");
        let seen = assert_tunnels_to(&proxy, front.addr);
        assert!(seen.iter().all(|s| s.status == status), "{seen:?}");
        assert!(seen.iter().all(|s| s.tunnel_bytes().is_empty()), "{seen:?}");
    }
    assert_eq!(demo.stats().requests, 0, "{:?}", demo.stats());
    assert_eq!(front.handshakes().len(), 0);
}

fn context() -> CallContext {
    CallContext::new("acme", "s", "c1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_unreachable_is_a_connect_failure() {
    let demo = DemoServer::start().await.expect("demo server");
    // A port nobody listens on: bound, then closed.
    let closed = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind")
        .local_addr()
        .expect("address");
    let pool = HttpPool::with_proxy(
        &TlsOptions::default(),
        ProxyConfig::all(&format!("http://alice:{PROXY_PASSWORD}@{closed}")).expect("proxy"),
    )
    .expect("pool");
    let error = connect(&pool, &demo.url())
        .await
        .expect_err("no proxy there");
    assert_eq!(error.kind(), ErrorKind::Connect, "{error}");
    assert!(!error.outcome_unknown(), "{error}");
    let text = error.to_string();
    assert!(text.contains("cannot connect to the proxy"), "{text}");
    assert!(text.contains(&closed.to_string()), "{text}");
    assert!(!text.contains(PROXY_PASSWORD), "{text}");
    assert_eq!(demo.stats().requests, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_environment_no_proxy_and_binding_settings() {
    let demo = guarded_demo().await;
    let proxy = ConnectProxy::start(Answer::Open).await;
    let proxy_url = proxy.url();
    let environment = |no_proxy: &'static str| {
        let proxy_url = proxy_url.clone();
        ProxyConfig::from_lookup(move |name| match name {
            "http_proxy" => Some(proxy_url.clone()),
            "NO_PROXY" => Some(no_proxy.to_owned()),
            _ => None,
        })
        .expect("proxy variables")
    };
    let binding = |name: &str, proxy: Option<&str>| {
        let mut binding = json!({
            "name": name, "description": "", "input_schema": {"type": "object"},
            "url": demo.url(), "mcp_tool": "echo", "tenants": ["acme"],
            "token_env": TOKEN_ENV, "timeout_seconds": 20,
        });
        if let Some(proxy) = proxy {
            binding["proxy"] = json!(proxy);
        }
        binding
    };
    let other_proxy = ConnectProxy::start(Answer::Open).await;
    let config = json!([
        binding("from_env", None),
        binding("direct", Some("none")),
        binding("own_proxy", Some(&other_proxy.url())),
    ]);
    let bindings = load_config(&config.to_string()).expect("bindings");
    let call = |caller: Caller, name: &'static str| async move {
        let result = tokio::time::timeout(
            STEP,
            caller.call(name, &context(), &json!({"message": "hi"}), |_| {}, None),
        )
        .await
        .expect("the call took too long");
        assert!(!result.is_error(), "{name}: {}", result.to_json_line());
        caller
    };
    let pool = || HttpPool::new(&TlsOptions::default()).expect("pool");

    // `localhost` does not cover 127.0.0.1 (names are not resolved): proxied.
    let caller = Caller::with_default_proxy(
        pool(),
        bindings.clone(),
        Arc::new(Tokens),
        environment("localhost,.example.com"),
    )
    .expect("caller");
    let caller = call(caller, "from_env").await;
    settle(caller.pool()).await;
    assert_tunnels_to(&proxy, demo.addr());
    let through = proxy.seen().len();
    // `"proxy": "none"` goes direct whatever the environment says.
    let caller = call(caller, "direct").await;
    assert_eq!(proxy.seen().len(), through);
    // A binding's own proxy.
    let caller = call(caller, "own_proxy").await;
    assert_tunnels_to(&other_proxy, demo.addr());
    assert_eq!(proxy.seen().len(), through);
    drop(caller);

    // NO_PROXY naming the address (or its port, or a network) bypasses the proxy.
    for no_proxy in ["127.0.0.1", "other.example, 127.0.0.0/8", "*"] {
        let caller = Caller::with_default_proxy(
            pool(),
            bindings.clone(),
            Arc::new(Tokens),
            environment(no_proxy),
        )
        .expect("caller");
        call(caller, "from_env").await;
        assert_eq!(proxy.seen().len(), through, "NO_PROXY={no_proxy}");
    }
    let port_only = format!("127.0.0.1:{}", demo.addr().port());
    let port_only: &'static str = Box::leak(port_only.into_boxed_str());
    let caller =
        Caller::with_default_proxy(pool(), bindings, Arc::new(Tokens), environment(port_only))
            .expect("caller");
    call(caller, "from_env").await;
    assert_eq!(proxy.seen().len(), through, "NO_PROXY={port_only}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_and_mutual_tls_from_the_command_line() {
    use crate::cli_tools::{assert_exit, mcp_tools, mcpwire};
    let demo = guarded_demo().await;
    let front = crate::tls::TlsFront::start_with(
        "server.pem",
        "server.key",
        demo.addr(),
        Some("client-ca.pem"),
    )
    .await;
    let proxy = ConnectProxy::start(Answer::Open).await;
    let path = |name: &str| crate::tls::data(name).display().to_string();
    let (ca, cert, key) = (path("ca.pem"), path("client.pem"), path("client.key"));
    let url = front.url();
    let proxy_url = proxy.url();
    let env = [
        ("HTTPS_PROXY", proxy_url.as_str()),
        ("https_proxy", ""),
        ("NO_PROXY", ""),
        ("no_proxy", ""),
        (TOKEN_ENV, TOKEN),
    ];
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    let owned = env.clone();
    let discovered = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = owned
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        #[rustfmt::skip]
        let args = [
            "-url", &url, "-token-env", TOKEN_ENV, "-tenant", "acme", "-tools", "echo",
            "-ca-file", &ca, "-client-cert", &cert, "-client-key", &key,
        ];
        mcp_tools(&args, &env)
    })
    .await
    .expect("mcp-tools");
    assert_exit(&discovered, 0);
    let bindings = load_config(&discovered.stdout).expect("printed bindings");
    let printed: serde_json::Value = serde_json::from_str(&discovered.stdout).expect("JSON");
    assert_eq!(
        printed[0]["tls"],
        json!({"ca_file": path("ca.pem"), "client_cert_file": path("client.pem"),
               "client_key_file": path("client.key")}),
        "{}",
        discovered.stdout
    );
    assert!(printed[0].get("proxy").is_none(), "{}", discovered.stdout);
    assert_eq!(bindings.len(), 1);
    let through = assert_tunnels_to(&proxy, front.addr).len();

    let file = std::env::temp_dir().join(format!("mcpwire-proxy-{}.json", std::process::id()));
    std::fs::write(&file, &discovered.stdout).expect("write the bindings");
    let file_arg = file.display().to_string();
    let called = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        #[rustfmt::skip]
        let args = [
            "call", "--bindings", &file_arg, "--tool", "echo", "--tenant", "acme",
            "--args", r#"{"message":"hi"}"#,
        ];
        mcpwire(&args, &env)
    })
    .await
    .expect("mcpwire call");
    let _ = std::fs::remove_file(&file);
    assert_exit(&called, 0);
    assert!(called.stdout.contains("Echo: hi"), "{called:#?}");
    assert!(assert_tunnels_to(&proxy, front.addr).len() > through);
    assert!(!called.stdout.contains(TOKEN) && !called.stderr.contains(TOKEN));

    // Flags that mean nothing for a stdio server, or break the bindings' rules, are usage
    // errors.
    for args in [
        vec![
            "-command", "srv", "-tenant", "a", "-tools", "t", "-proxy", "none",
        ],
        vec![
            "-url",
            "http://127.0.0.1:9/mcp",
            "-tenant",
            "a",
            "-tools",
            "t",
            "-ca-file",
            "/x",
        ],
        vec![
            "-url",
            "https://h/mcp",
            "-tenant",
            "a",
            "-tools",
            "t",
            "-client-cert",
            "/x",
        ],
        vec![
            "-url",
            "https://h/mcp",
            "-tenant",
            "a",
            "-tools",
            "t",
            "-roots",
            "system",
        ],
        vec![
            "-url",
            "https://h/mcp",
            "-tenant",
            "a",
            "-tools",
            "t",
            "-proxy",
            "https://p:1",
        ],
    ] {
        let run = tokio::task::spawn_blocking(move || mcp_tools(&args, &[]))
            .await
            .expect("mcp-tools");
        assert_exit(&run, 2);
    }
}
