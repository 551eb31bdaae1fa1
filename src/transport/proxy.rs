//! Proxies for the HTTP pool: which proxy, if any, carries the connection to a target
//! ([`ProxyConfig`]: set in code, or read from `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY`), and
//! the CONNECT tunnel through it.
//!
//! Connections to `https` and `http` targets alike go through a `CONNECT host:port` tunnel:
//! the proxy sees that request line, a `Host` header and, when the proxy URL has credentials,
//! `Proxy-Authorization: Basic ...`, and nothing else of the conversation. The MCP requests,
//! with their `Authorization: Bearer` header, go through the tunnel: end-to-end TLS for an
//! `https` target, so the proxy sees only ciphertext. (For an `http` target the tunnelled
//! bytes are plain text that a hostile proxy could read: use `https` through proxies you do
//! not trust.) Proxy credentials are held as a [`Secret`] and never appear in `Debug` or
//! errors.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower_service::Service;

use crate::secret::Secret;

/// How long opening a tunnel may take: connecting to the proxy, sending the CONNECT and reading
/// the proxy's answer.
pub(crate) const TUNNEL_TIMEOUT: Duration = Duration::from_secs(20);

/// Which proxy carries a pool's connections, by the target's scheme, and which targets go
/// direct. The default ([`ProxyConfig::default`]) uses no proxy: the library never reads the
/// environment unless asked to ([`ProxyConfig::from_env`]); the command-line tools and the
/// binding layer do.
///
/// ```
/// use mcpwire::transport::http::ProxyConfig;
///
/// let proxy = ProxyConfig::from_lookup(|name| match name {
///     "HTTPS_PROXY" => Some("http://user:secret@proxy.internal:3128".to_owned()),
///     "NO_PROXY" => Some("localhost,.corp.example,10.0.0.0/8".to_owned()),
///     _ => None,
/// })?;
/// let target = |url: &str| url.parse::<http::Uri>().unwrap();
/// assert_eq!(proxy.proxy_for(&target("https://mcp.example.com/mcp")).as_deref(), Some("proxy.internal:3128"));
/// assert_eq!(proxy.proxy_for(&target("https://api.corp.example/mcp")), None);
/// assert_eq!(proxy.proxy_for(&target("https://10.1.2.3/mcp")), None);
/// // No HTTP_PROXY: http targets go direct.
/// assert_eq!(proxy.proxy_for(&target("http://mcp.example.com/mcp")), None);
/// // The credentials never show.
/// assert!(!format!("{proxy:?}").contains("secret"));
/// # Ok::<(), mcpwire::transport::http::ProxyError>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    http: Option<Proxy>,
    https: Option<Proxy>,
    no_proxy: Vec<NoProxy>,
}

/// One proxy: where it is, and the credentials for its `Proxy-Authorization`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Proxy {
    /// The host as written (IPv6 in brackets).
    host: String,
    port: u16,
    /// `user:password`, percent-decoded.
    credentials: Option<Secret>,
}

impl Proxy {
    /// `host:port`, for messages.
    fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.address())?;
        if self.credentials.is_some() {
            f.write_str(" (with credentials)")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("https", &self.https)
            .field("http", &self.http)
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

/// Why a proxy setting was refused. The URL is never shown: it may hold credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyError {
    /// A proxy URL is malformed.
    InvalidUrl {
        /// Where it came from: the environment variable, or `proxy`.
        origin: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A proxy URL asks for something not supported (TLS to the proxy, SOCKS).
    Unsupported {
        /// Where it came from: the environment variable, or `proxy`.
        origin: String,
        /// What is not supported.
        reason: &'static str,
    },
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyError::InvalidUrl { origin, reason } => {
                write!(f, "{origin}: not a valid proxy URL: {reason}")
            }
            ProxyError::Unsupported { origin, reason } => {
                write!(f, "{origin}: unsupported proxy URL: {reason}")
            }
        }
    }
}

impl std::error::Error for ProxyError {}

impl ProxyConfig {
    /// One proxy for every target, `http` and `https`. See [`with_https_proxy`] for the URL.
    ///
    /// # Errors
    ///
    /// As [`with_https_proxy`].
    ///
    /// [`with_https_proxy`]: Self::with_https_proxy
    pub fn all(url: &str) -> Result<Self, ProxyError> {
        let proxy = parse_proxy_url(url, "proxy")?;
        Ok(ProxyConfig {
            http: Some(proxy.clone()),
            https: Some(proxy),
            no_proxy: Vec::new(),
        })
    }

    /// Sends connections to `https` targets through the proxy at `url`:
    /// `http://[user[:password]@]host[:port][/]` (port 80 when left out), or `host[:port]`.
    /// Percent-encoded credentials are decoded and sent as `Proxy-Authorization: Basic` on
    /// the CONNECT request only.
    ///
    /// # Errors
    ///
    /// A malformed URL, or an `https://` (TLS to the proxy) or `socks` proxy, which are not
    /// supported.
    pub fn with_https_proxy(mut self, url: &str) -> Result<Self, ProxyError> {
        self.https = Some(parse_proxy_url(url, "https proxy")?);
        Ok(self)
    }

    /// Sends connections to `http` targets through the proxy at `url` (as
    /// [`with_https_proxy`](Self::with_https_proxy); the connection is a CONNECT tunnel too).
    ///
    /// # Errors
    ///
    /// As [`with_https_proxy`](Self::with_https_proxy).
    pub fn with_http_proxy(mut self, url: &str) -> Result<Self, ProxyError> {
        self.http = Some(parse_proxy_url(url, "http proxy")?);
        Ok(self)
    }

    /// Targets that go direct, as a `NO_PROXY` list: comma-separated entries, each
    /// - `*`: every target;
    /// - a host name, `example.com`: that host and every host under it (`api.example.com`,
    ///   but not `notexample.com`); a leading `.` or `*.` means the same;
    /// - an IP address, `10.1.2.3` or `::1` (or `[::1]`), or a network, `10.0.0.0/8`;
    /// - any of these but `*` with `:port`: only that port (`example.com:8443`, `[::1]:8080`).
    ///
    /// Names are compared without resolving them: `localhost` does not cover `127.0.0.1`.
    /// Loopback targets are not exempt unless listed. Entries of no such form are ignored.
    pub fn with_no_proxy(mut self, list: &str) -> Self {
        self.no_proxy = list.split(',').filter_map(NoProxy::parse).collect();
        self
    }

    /// [`from_lookup`](Self::from_lookup) on the process environment.
    ///
    /// # Errors
    ///
    /// As [`from_lookup`](Self::from_lookup).
    pub fn from_env() -> Result<Self, ProxyError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the proxy variables through `lookup`: `HTTPS_PROXY` (or `https_proxy`) for
    /// `https` targets, `HTTP_PROXY` (or `http_proxy`) for `http` targets, and `NO_PROXY` (or
    /// `no_proxy`, see [`with_no_proxy`](Self::with_no_proxy)) for the targets that go direct.
    /// The upper-case name wins; an empty value counts as unset. `ALL_PROXY` is not read.
    ///
    /// # Errors
    ///
    /// A variable holding a proxy URL that [`with_https_proxy`](Self::with_https_proxy)
    /// refuses, named in the error.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ProxyError> {
        let read = |upper: &'static str, lower: &'static str| {
            [upper, lower].into_iter().find_map(|name| {
                lookup(name)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (name, v))
            })
        };
        let mut config = ProxyConfig::default();
        if let Some((name, url)) = read("HTTPS_PROXY", "https_proxy") {
            config.https = Some(parse_proxy_url(&url, name)?);
        }
        if let Some((name, url)) = read("HTTP_PROXY", "http_proxy") {
            config.http = Some(parse_proxy_url(&url, name)?);
        }
        if let Some((_, list)) = read("NO_PROXY", "no_proxy") {
            config = config.with_no_proxy(&list);
        }
        Ok(config)
    }

    /// Whether no target goes through a proxy.
    pub fn is_none(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    /// The proxy (`host:port`) that carries connections to `target`, or `None` when they go
    /// direct.
    pub fn proxy_for(&self, target: &Uri) -> Option<String> {
        self.route(target).map(Proxy::address)
    }

    /// The proxy for `target`, if any.
    pub(crate) fn route(&self, target: &Uri) -> Option<&Proxy> {
        let (proxy, default_port) = match target.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => (self.https.as_ref()?, 443),
            Some(s) if s.eq_ignore_ascii_case("http") => (self.http.as_ref()?, 80),
            _ => return None,
        };
        let host = target.host()?;
        let port = target.port_u16().unwrap_or(default_port);
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        if self
            .no_proxy
            .iter()
            .any(|rule| rule.covers(&host, ip, port))
        {
            return None;
        }
        Some(proxy)
    }
}

/// One `NO_PROXY` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NoProxy {
    All,
    /// A host name (lower case, no leading dot) and everything under it.
    Domain(String, Option<u16>),
    /// A network (an address is a network of its full length).
    Network(IpAddr, u8, Option<u16>),
}

impl NoProxy {
    fn parse(entry: &str) -> Option<NoProxy> {
        let entry = entry.trim();
        if entry == "*" {
            return Some(NoProxy::All);
        }
        if entry.is_empty() || entry.contains(char::is_whitespace) {
            return None;
        }
        // `[v6]`, `[v6]:port`, `v6`, `v6/len`, `v4`, `v4:port`, `v4/len`, `name`, `name:port`.
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let (host, after) = rest.split_once(']')?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':')?.parse::<u16>().ok()?)),
            }
        } else if entry.matches(':').count() == 1 {
            let (host, port) = entry.split_once(':')?;
            (host, Some(port.parse::<u16>().ok()?))
        } else {
            (entry, None)
        };
        let (address, prefix) = match host.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix.parse::<u8>().ok()?)),
            None => (host, None),
        };
        if let Ok(ip) = address.parse::<IpAddr>() {
            let full = if ip.is_ipv4() { 32 } else { 128 };
            let prefix = prefix.unwrap_or(full);
            return (prefix <= full).then_some(NoProxy::Network(ip, prefix, port));
        }
        if prefix.is_some() {
            return None;
        }
        let name = host
            .strip_prefix("*.")
            .or_else(|| host.strip_prefix('.'))
            .unwrap_or(host)
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        valid.then_some(NoProxy::Domain(name, port))
    }

    fn covers(&self, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
        let port_ok = |wanted: &Option<u16>| wanted.is_none_or(|p| p == port);
        match self {
            NoProxy::All => true,
            NoProxy::Domain(name, wanted) => {
                port_ok(wanted)
                    && (host == name
                        || host
                            .strip_suffix(name.as_str())
                            .is_some_and(|start| start.ends_with('.')))
            }
            NoProxy::Network(network, prefix, wanted) => {
                port_ok(wanted) && ip.is_some_and(|ip| in_network(ip, *network, *prefix))
            }
        }
    }
}

/// Whether `ip` is in `network/prefix` (an IPv4-mapped IPv6 address matches its IPv4 network).
fn in_network(ip: IpAddr, network: IpAddr, prefix: u8) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let (ip, network, bits) = match (ip, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(a.to_bits()), u128::from(n.to_bits()), 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (a.to_bits(), n.to_bits(), 128),
        _ => return false,
    };
    let shift = bits - u32::from(prefix);
    shift >= bits || (ip >> shift) == (network >> shift)
}

/// Parses a proxy URL; `origin` names it in errors (which never quote it).
fn parse_proxy_url(url: &str, origin: &str) -> Result<Proxy, ProxyError> {
    let invalid = |reason| ProxyError::InvalidUrl {
        origin: origin.to_owned(),
        reason,
    };
    let url = url.trim();
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("it contains spaces or control characters"));
    }
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
            return Err(ProxyError::Unsupported {
                origin: origin.to_owned(),
                reason: "TLS to the proxy (`https://`) is not supported; give the proxy as \
                         `http://host:port` (the tunnel to an https server is still TLS from \
                         end to end)",
            });
        }
        Some((scheme, _)) if scheme.to_ascii_lowercase().starts_with("socks") => {
            return Err(ProxyError::Unsupported {
                origin: origin.to_owned(),
                reason: "SOCKS proxies are not supported; give an HTTP proxy (`http://host:port`)",
            });
        }
        Some(_) => return Err(invalid("the scheme must be http://")),
        None => url,
    };
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    if !path.is_empty() && path != "/" {
        return Err(invalid("it must not have a path, query or fragment"));
    }
    let (credentials, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            let user = percent_decode(user).ok_or_else(|| invalid("bad percent-encoding"))?;
            let password =
                percent_decode(password).ok_or_else(|| invalid("bad percent-encoding"))?;
            if user.is_empty() {
                return Err(invalid("the user name before `@` is empty"));
            }
            (Some(Secret::new(format!("{user}:{password}"))), host_port)
        }
        None => (None, authority),
    };
    let (host, port) = if host_port.starts_with('[') {
        let close = host_port
            .find(']')
            .ok_or_else(|| invalid("an unclosed `[`"))?;
        let (host, after) = host_port.split_at(close + 1);
        if host[1..close].parse::<std::net::Ipv6Addr>().is_err() {
            return Err(invalid("an invalid IPv6 address"));
        }
        (host, after.strip_prefix(':'))
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err(invalid("it has no host"));
    }
    if !host.starts_with('[')
        && !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    {
        return Err(invalid("an invalid host"));
    }
    let port = match port {
        None => 80,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0 && port.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| invalid("an invalid port (1 to 65535)"))?,
    };
    Ok(Proxy {
        host: host.to_ascii_lowercase(),
        port,
        credentials,
    })
}

/// Decodes `%XX` escapes; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Standard base64 with padding (RFC 4648 §4), for `Proxy-Authorization: Basic`.
fn base64(input: &[u8]) -> String {
    crate::base64::encode(input, crate::base64::Flavor::Standard)
}

/// The longest answer to a CONNECT read, head and all: a proxy that sends more is refused.
const MAX_REPLY_HEAD_BYTES: usize = 8 * 1024;

/// Why a tunnel could not be opened. Never shows the proxy's credentials, and of what the
/// proxy sent only its status code.
#[derive(Debug)]
pub(crate) struct TunnelFailure {
    proxy: String,
    target: String,
    problem: String,
}

impl fmt::Display for TunnelFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "through the proxy {} to {}: {}",
            self.proxy, self.target, self.problem
        )
    }
}

impl std::error::Error for TunnelFailure {}

/// Opens a CONNECT tunnel to `target` through `proxy` (RFC 9110 §9.3.6), within
/// [`TUNNEL_TIMEOUT`]: connects to the proxy with `connector`, sends `CONNECT host:port`
/// (with `Proxy-Authorization` when the proxy URL has credentials), and reads the answer's
/// head, at most [`MAX_REPLY_HEAD_BYTES`]. A 2xx opens the tunnel; anything else is refused,
/// its status shown.
pub(crate) async fn tunnel(
    mut connector: HttpConnector,
    proxy: &Proxy,
    target: &Uri,
) -> Result<TokioIo<TcpStream>, TunnelFailure> {
    let default_port = if target.scheme_str() == Some("http") {
        80
    } else {
        443
    };
    // The host as the URI writes it: an IPv6 address keeps its brackets, as the
    // authority-form of CONNECT wants.
    let authority = format!(
        "{}:{}",
        target.host().unwrap_or_default(),
        target.port_u16().unwrap_or(default_port)
    );
    let failure = |problem: String| TunnelFailure {
        proxy: proxy.address(),
        target: authority.clone(),
        problem,
    };
    if target.host().is_none_or(str::is_empty) {
        return Err(failure("the target has no host".to_owned()));
    }
    let proxy_uri: Uri = format!("http://{}/", proxy.address())
        .parse()
        .map_err(|_| failure("the proxy address is not a valid URI".to_owned()))?;
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(credentials) = &proxy.credentials {
        head.push_str("Proxy-Authorization: Basic ");
        head.push_str(&base64(credentials.expose().as_bytes()));
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let opening = async {
        std::future::poll_fn(|cx| connector.poll_ready(cx))
            .await
            .map_err(|e| failure(format!("cannot connect to the proxy: {e}")))?;
        let mut stream = connector
            .call(proxy_uri)
            .await
            .map_err(|e| failure(format!("cannot connect to the proxy: {}", error_chain(&e))))?
            .into_inner();
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| failure(format!("sending the CONNECT failed: {e}")))?;
        read_reply(&mut stream, proxy.credentials.is_some())
            .await
            .map_err(failure)?;
        Ok(TokioIo::new(stream))
    };
    tokio::time::timeout(TUNNEL_TIMEOUT, opening)
        .await
        .unwrap_or_else(|_| {
            Err(failure(format!(
                "the proxy did not open the tunnel within {} s",
                TUNNEL_TIMEOUT.as_secs()
            )))
        })
}

/// Reads the proxy's answer to CONNECT up to the end of its head. `Ok` for a 2xx; the error
/// says why not, showing the status code and nothing else the proxy sent.
async fn read_reply(
    stream: &mut (impl AsyncRead + Unpin),
    sent_credentials: bool,
) -> Result<(), String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let room = MAX_REPLY_HEAD_BYTES - buffer.len();
        if room == 0 {
            return Err(format!(
                "the proxy's answer to CONNECT is longer than {MAX_REPLY_HEAD_BYTES} bytes"
            ));
        }
        let read = stream
            .read(&mut chunk[..room.min(1024)])
            .await
            .map_err(|e| format!("reading the proxy's answer failed: {e}"))?;
        if read == 0 {
            return Err("the proxy closed the connection without answering the CONNECT".to_owned());
        }
        buffer.extend_from_slice(&chunk[..read]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut reply = httparse::Response::new(&mut headers);
        match reply.parse(&buffer) {
            Ok(httparse::Status::Partial) => continue,
            Ok(httparse::Status::Complete(head_len)) => {
                let code = reply.code.unwrap_or_default();
                return match code {
                    200..=299 if head_len == buffer.len() => Ok(()),
                    // Nothing may come before the client speaks (TLS or HTTP) in the tunnel.
                    200..=299 => Err("the proxy sent data before the tunnel opened".to_owned()),
                    407 if sent_credentials => {
                        Err("the proxy refused the credentials in the proxy URL \
                         (407 Proxy Authentication Required)"
                            .to_owned())
                    }
                    407 => Err("the proxy requires credentials (407 Proxy Authentication \
                                Required): give them in the proxy URL, \
                                http://user:password@host:port"
                        .to_owned()),
                    code => Err(format!(
                        "the proxy refused the CONNECT ({code}{})",
                        http::StatusCode::from_u16(code)
                            .ok()
                            .and_then(|s| s.canonical_reason())
                            .map(|reason| format!(" {reason}"))
                            .unwrap_or_default()
                    )),
                };
            }
            Err(_) => return Err("the proxy's answer to CONNECT is not HTTP".to_owned()),
        }
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
#[path = "tests_proxy.rs"]
mod tests;
