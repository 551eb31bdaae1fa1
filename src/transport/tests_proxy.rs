use super::*;

fn uri(text: &str) -> Uri {
    text.parse().expect("a URI")
}

fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    }
}

#[test]
fn base64_matches_rfc_4648_vectors() {
    for (input, output) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
        // RFC 7617 §2.
        ("Aladdin:open sesame", "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
    ] {
        assert_eq!(base64(input.as_bytes()), output, "{input:?}");
    }
}

#[test]
fn proxy_urls_parse() {
    let proxy = parse_proxy_url("http://proxy.example:3128", "p").expect("valid");
    assert_eq!(proxy.address(), "proxy.example:3128");
    assert!(proxy.credentials.is_none());
    assert_eq!(
        parse_proxy_url("HTTP://Proxy.Example/", "p")
            .expect("valid")
            .address(),
        "proxy.example:80"
    );
    assert_eq!(
        parse_proxy_url("proxy:8080", "p")
            .expect("no scheme: http")
            .address(),
        "proxy:8080"
    );
    assert_eq!(
        parse_proxy_url("http://[::1]:3128", "p")
            .expect("IPv6")
            .address(),
        "[::1]:3128"
    );
    let with_credentials =
        parse_proxy_url("http://al%40ice:p%3Ass@10.0.0.1:3128", "p").expect("credentials");
    assert_eq!(with_credentials.address(), "10.0.0.1:3128");
    assert_eq!(
        with_credentials.credentials.as_ref().map(Secret::expose),
        Some("al@ice:p:ss")
    );
    let user_only = parse_proxy_url("http://bob@proxy:1", "p").expect("user only");
    assert_eq!(
        user_only.credentials.as_ref().map(Secret::expose),
        Some("bob:")
    );
}

#[test]
fn bad_proxy_urls_are_refused_without_quoting_them() {
    for (url, reason) in [
        ("https://u:hunter22@proxy:3128", "TLS to the proxy"),
        ("socks5://u:hunter22@proxy:1080", "SOCKS"),
        ("ftp://u:hunter22@proxy", "scheme"),
        ("http://u:hunter22@proxy:0", "port"),
        ("http://u:hunter22@proxy:99999", "port"),
        ("http://u:hunter22@proxy:3128/path", "path"),
        ("http://u:hunter22@", "no host"),
        ("http://u:hunter22@pro xy", "spaces"),
        ("http://u:hunter22%zz@proxy", "percent"),
        ("http://u:hunter22@[::1", "unclosed"),
        ("http://:hunter22@proxy", "user name"),
    ] {
        let error = parse_proxy_url(url, "HTTPS_PROXY").expect_err(url);
        let text = error.to_string();
        assert!(text.starts_with("HTTPS_PROXY: "), "{text}");
        assert!(text.contains(reason), "{url}: {text}");
        assert!(!text.contains("hunter22"), "{text}");
        assert!(!format!("{error:?}").contains("hunter22"), "{error:?}");
    }
}

#[test]
fn env_variables_upper_case_first_empty_is_unset() {
    let config = ProxyConfig::from_lookup(env(&[
        ("HTTPS_PROXY", "http://upper:1"),
        ("https_proxy", "http://lower:2"),
        ("HTTP_PROXY", ""),
        ("http_proxy", "http://plain:3"),
    ]))
    .expect("valid");
    assert_eq!(
        config.proxy_for(&uri("https://a.example/")).as_deref(),
        Some("upper:1")
    );
    assert_eq!(
        config.proxy_for(&uri("http://a.example/")).as_deref(),
        Some("plain:3")
    );
    let none = ProxyConfig::from_lookup(env(&[])).expect("valid");
    assert!(none.is_none());
    assert_eq!(none, ProxyConfig::default());
    let error = ProxyConfig::from_lookup(env(&[("https_proxy", "https://x:secret1@p")]))
        .expect_err("TLS to the proxy");
    assert!(error.to_string().starts_with("https_proxy: "), "{error}");
    assert!(!error.to_string().contains("secret1"), "{error}");
}

#[test]
fn no_proxy_rules() {
    let config = ProxyConfig::all("http://proxy:3128")
        .expect("valid")
        .with_no_proxy(
            " example.com, .corp.test,*.wild.test, 10.0.0.0/8 ,192.168.1.7, ::1, \
             [fd00::1]:8443, api.port.test:8080, 2001:db8::/32, bad entry, 300.1.1.1/40",
        );
    let direct = |url: &str| config.proxy_for(&uri(url)).is_none();
    // A name covers itself and what is under it, on a label boundary.
    assert!(direct("https://example.com/"));
    assert!(direct("https://EXAMPLE.com./"));
    assert!(direct("https://api.example.com/"));
    assert!(!direct("https://notexample.com/"));
    assert!(direct("https://corp.test/"));
    assert!(direct("https://a.b.corp.test/"));
    assert!(direct("https://wild.test/"));
    assert!(direct("https://x.wild.test/"));
    // Addresses and networks.
    assert!(direct("http://10.200.3.4/"));
    assert!(!direct("http://11.0.0.1/"));
    assert!(direct("http://192.168.1.7:9000/"));
    assert!(!direct("http://192.168.1.8/"));
    assert!(direct("http://[::1]:8080/"));
    assert!(direct("http://[2001:db8:1::5]/"));
    assert!(direct("http://[::ffff:10.1.1.1]/"));
    // With a port: that port only (the scheme's default when the URL has none).
    assert!(direct("https://[fd00::1]:8443/"));
    assert!(!direct("https://[fd00::1]/"));
    assert!(direct("http://api.port.test:8080/"));
    assert!(!direct("http://api.port.test/"));
    // Loopback is not exempt unless listed, and names are not resolved.
    assert!(!direct("http://127.0.0.1:8080/"));
    assert!(!direct("http://localhost:8080/"));
    assert!(!direct("https://other.example/"));

    let everything = config.clone().with_no_proxy("*");
    assert_eq!(everything.proxy_for(&uri("https://any.example/")), None);
    let v4_port = config.clone().with_no_proxy("127.0.0.1:8080,localhost");
    assert_eq!(v4_port.proxy_for(&uri("http://127.0.0.1:8080/")), None);
    assert!(v4_port.proxy_for(&uri("http://127.0.0.1:8081/")).is_some());
    assert_eq!(v4_port.proxy_for(&uri("http://localhost:1/")), None);
}

#[test]
fn debug_hides_credentials() {
    let config = ProxyConfig::default()
        .with_https_proxy("http://user:topsecret@proxy:3128")
        .expect("valid")
        .with_no_proxy("localhost");
    let debug = format!("{config:?}");
    assert!(!debug.contains("topsecret"), "{debug}");
    assert!(!debug.contains("user"), "{debug}");
    assert!(debug.contains("proxy:3128 (with credentials)"), "{debug}");
}

async fn reply(bytes: &'static [u8], credentials: bool) -> Result<(), String> {
    let (mut client, mut server) = tokio::io::duplex(64);
    let writer = tokio::spawn(async move {
        for chunk in bytes.chunks(7) {
            if server.write_all(chunk).await.is_err() {
                return;
            }
        }
    });
    let result = tokio::time::timeout(Duration::from_secs(5), read_reply(&mut client, credentials))
        .await
        .expect("the reply is read in time");
    writer.abort();
    result
}

#[tokio::test]
async fn connect_replies() {
    reply(b"HTTP/1.1 200 Connection established\r\n\r\n", false)
        .await
        .expect("200 opens the tunnel");
    reply(b"HTTP/1.0 204 No Content\r\nVia: x\r\n\r\n", false)
        .await
        .expect("any 2xx opens the tunnel");
    let refused = reply(
        b"HTTP/1.1 403 Go Away <script>secret-echo</script>\r\nX-Echo: secret-echo\r\n\r\n",
        false,
    )
    .await
    .expect_err("403");
    assert_eq!(refused, "the proxy refused the CONNECT (403 Forbidden)");
    let auth = reply(b"HTTP/1.1 407 Auth\r\n\r\n", false)
        .await
        .expect_err("407");
    assert!(
        auth.contains("407") && auth.contains("requires credentials"),
        "{auth}"
    );
    let bad_auth = reply(b"HTTP/1.1 407 Auth\r\n\r\n", true)
        .await
        .expect_err("407");
    assert!(bad_auth.contains("refused the credentials"), "{bad_auth}");
    let early = reply(b"HTTP/1.1 200 OK\r\n\r\nHELLO", false)
        .await
        .expect_err("data before the tunnel");
    assert!(early.contains("before the tunnel"), "{early}");
    let eof = reply(b"HTTP/1.1 200", false).await.expect_err("cut short");
    assert!(eof.contains("closed"), "{eof}");
    let garbage = reply(b"SSH-2.0-OpenSSH\r\n\r\n", false)
        .await
        .expect_err("not HTTP");
    assert!(garbage.contains("not HTTP"), "{garbage}");
    static LONG: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
        let mut long = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..30 {
            long.extend_from_slice(b"X-Pad: ");
            long.extend(std::iter::repeat_n(b'x', 300));
            long.extend_from_slice(b"\r\n");
        }
        long
    });
    let long: &'static [u8] = LONG.as_slice();
    let too_long = reply(long, false).await.expect_err("too long");
    assert!(too_long.contains("longer than 8192 bytes"), "{too_long}");
}
