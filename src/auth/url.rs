//! The URLs of OAuth: absolute `http`/`https` URLs checked strictly (RFC 3986 characters, no
//! fragment, no userinfo), origins, the loopback rule, and the `application/x-www-form-urlencoded`
//! encoding of requests, query strings and redirects, all by hand and bounded.

use std::fmt;

/// The longest URL taken from a server or a configuration.
pub(crate) const MAX_URL_BYTES: usize = 2048;
/// The most parameters read from a query string or a form.
pub(crate) const MAX_FORM_PAIRS: usize = 64;

/// Why a URL was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlError {
    /// Longer than `MAX_URL_BYTES`.
    TooLong,
    /// Not `http://` or `https://` (compared ignoring case).
    Scheme,
    /// No host, or a host with characters a host cannot have.
    Host,
    /// A port that is empty, not a number, or above 65535.
    Port,
    /// User information (`user@`) in the authority: never sent, so refused.
    Userinfo,
    /// A fragment (`#`), which OAuth's URLs must not have.
    Fragment,
    /// A character RFC 3986 does not allow there, or a broken `%` escape.
    Character,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrlError::TooLong => "the URL is too long",
            UrlError::Scheme => "the URL is not http:// or https://",
            UrlError::Host => "the URL has no valid host",
            UrlError::Port => "the URL has an invalid port",
            UrlError::Userinfo => "the URL has user information",
            UrlError::Fragment => "the URL has a fragment",
            UrlError::Character => "the URL has a character it cannot have",
        })
    }
}

impl std::error::Error for UrlError {}

/// An absolute `http` or `https` URL, kept exactly as written (issuers compare as strings) with
/// its parts located.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Url {
    text: String,
    https: bool,
    /// Byte ranges into `text`.
    host: (usize, usize),
    port: Option<u16>,
    path: (usize, usize),
    query: Option<(usize, usize)>,
}

impl fmt::Debug for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Url({:?})", self.text)
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A scheme, host and port: where a request goes, for the same-origin rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Origin {
    https: bool,
    host: String,
    port: u16,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~".contains(&b)
}

/// RFC 3986 `pchar` plus `/` and `?`, less `%` (checked apart).
fn is_path_or_query_char(b: u8) -> bool {
    is_unreserved(b) || b"!$&'()*+,;=:@/?".contains(&b)
}

fn valid_escapes(bytes: &[u8]) -> bool {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

impl Url {
    /// Parses and checks `text`.
    pub fn parse(text: &str) -> Result<Url, UrlError> {
        if text.len() > MAX_URL_BYTES {
            return Err(UrlError::TooLong);
        }
        // Compared as bytes: the text may be anything, and a cut of it at 7 or 8 bytes may
        // fall inside a character.
        let starts = |prefix: &[u8]| {
            text.as_bytes()
                .get(..prefix.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
        };
        let (https, rest_at) = if starts(b"https://") {
            (true, 8)
        } else if starts(b"http://") {
            (false, 7)
        } else {
            return Err(UrlError::Scheme);
        };
        if text.contains('#') {
            return Err(UrlError::Fragment);
        }
        let bytes = text.as_bytes();
        let authority_end = bytes[rest_at..]
            .iter()
            .position(|&b| b == b'/' || b == b'?')
            .map_or(bytes.len(), |p| rest_at + p);
        let authority = &text[rest_at..authority_end];
        if authority.contains('@') {
            return Err(UrlError::Userinfo);
        }
        let (host, port) = split_host_port(authority)?;
        let host_start = rest_at;
        let host = (host_start, host_start + host.len());
        let tail = &bytes[authority_end..];
        if !tail.iter().all(|&b| is_path_or_query_char(b) || b == b'%') || !valid_escapes(tail) {
            return Err(UrlError::Character);
        }
        let query_at = tail
            .iter()
            .position(|&b| b == b'?')
            .map(|p| authority_end + p);
        let path = (authority_end, query_at.unwrap_or(bytes.len()));
        let query = query_at.map(|q| (q + 1, bytes.len()));
        Ok(Url {
            text: text.to_owned(),
            https,
            host,
            port,
            path,
            query,
        })
    }

    /// The URL as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the scheme is `https`.
    pub(crate) fn is_https(&self) -> bool {
        self.https
    }

    /// The host as written (an IPv6 literal with its brackets).
    pub(crate) fn host(&self) -> &str {
        &self.text[self.host.0..self.host.1]
    }

    /// The path as written: empty, or starting with `/`.
    pub fn path(&self) -> &str {
        &self.text[self.path.0..self.path.1]
    }

    /// The query without its `?`, if there is one.
    pub fn query(&self) -> Option<&str> {
        self.query.map(|(a, b)| &self.text[a..b])
    }

    /// The scheme, host (lower case) and port (the default one when none is written).
    pub(crate) fn origin(&self) -> Origin {
        Origin {
            https: self.https,
            host: self.host().to_ascii_lowercase(),
            port: self.port.unwrap_or(if self.https { 443 } else { 80 }),
        }
    }

    /// `scheme://host[:port]` as written, without path or query.
    pub(crate) fn origin_text(&self) -> &str {
        &self.text[..self.path.0]
    }

    /// Whether the host is a loopback name or address: `localhost`, `127.0.0.0/8` or `[::1]`.
    pub(crate) fn is_loopback(&self) -> bool {
        let host = self.host().to_ascii_lowercase();
        if host == "localhost" || host == "[::1]" {
            return true;
        }
        let octets: Vec<&str> = host.split('.').collect();
        octets.len() == 4
            && octets[0] == "127"
            && octets
                .iter()
                .all(|o| !o.is_empty() && o.len() <= 3 && o.parse::<u8>().is_ok())
    }

    /// Whether credentials may go to this URL: `https`, or plain `http` to a loopback host
    /// (OAuth 2.1 section 1.5; the MCP authorization spec's "Communication Security").
    pub(crate) fn is_secure(&self) -> bool {
        self.https || self.is_loopback()
    }

    /// The same origin with another path and query (`path_and_query` starts with `/`).
    pub(crate) fn with_path(&self, path_and_query: &str) -> Result<Url, UrlError> {
        Url::parse(&format!("{}{path_and_query}", self.origin_text()))
    }

    /// This URL with `pairs` added to its query, form-encoded.
    pub(crate) fn with_query_pairs(&self, pairs: &[(&str, &str)]) -> Result<Url, UrlError> {
        let mut text = self.text.clone();
        let mut separator = match self.query() {
            None => '?',
            Some("") => '\0',
            Some(_) => '&',
        };
        for (name, value) in pairs {
            if separator != '\0' {
                text.push(separator);
            }
            separator = '&';
            encode_component_into(name, &mut text);
            text.push('=');
            encode_component_into(value, &mut text);
        }
        Url::parse(&text)
    }

    /// The URL as an `http::Uri` for a request.
    pub(crate) fn to_uri(&self) -> Result<http::Uri, UrlError> {
        self.text.parse().map_err(|_| UrlError::Character)
    }
}

fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), UrlError> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']').ok_or(UrlError::Host)?;
        let inside = &authority[1..close];
        if inside.is_empty()
            || !inside
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return Err(UrlError::Host);
        }
        let rest = &authority[close + 1..];
        match rest.strip_prefix(':') {
            Some(port) => (&authority[..=close], Some(port)),
            None if rest.is_empty() => (authority, None),
            None => return Err(UrlError::Host),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty()
        || (!host.starts_with('[')
            && !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_'))
    {
        return Err(UrlError::Host);
    }
    let port = match port {
        None => None,
        Some(p) if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(UrlError::Port);
        }
        Some(p) => Some(p.parse::<u16>().map_err(|_| UrlError::Port)?),
    };
    Ok((host, port))
}

/// Appends `value` percent-encoded: every byte but RFC 3986's unreserved characters as `%XX`
/// (so a space is `%20`, which form decoders read as a space too).
pub(crate) fn encode_component_into(value: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in value.as_bytes() {
        if is_unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
}

/// `value` percent-encoded (see [`encode_component_into`]).
pub(crate) fn encode_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    encode_component_into(value, &mut out);
    out
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
pub(crate) fn encode_form(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_component_into(name, &mut out);
        out.push('=');
        encode_component_into(value, &mut out);
    }
    out
}

/// Why a query string or form was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum FormError {
    /// Longer than `MAX_URL_BYTES`, or more than `MAX_FORM_PAIRS` parameters.
    TooLong,
    /// A `%` not followed by two hex digits.
    Escape,
    /// A name or value that is not UTF-8 once decoded.
    NotUtf8,
    /// The same name twice (OAuth: parameters "MUST NOT be included more than once").
    Duplicate,
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FormError::TooLong => "the query is too long",
            FormError::Escape => "the query has a broken % escape",
            FormError::NotUtf8 => "the query is not UTF-8",
            FormError::Duplicate => "the query names a parameter twice",
        })
    }
}

impl std::error::Error for FormError {}

fn decode_component(text: &str) -> Result<String, FormError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |j: usize| {
                    bytes
                        .get(j)
                        .and_then(|&b| char::from(b).to_digit(16))
                        .ok_or(FormError::Escape)
                };
                out.push((hex(i + 1)? * 16 + hex(i + 2)?) as u8);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| FormError::NotUtf8)
}

/// Decodes a query string or form body (`+` is a space), refusing broken escapes, text that
/// is not UTF-8 and repeated names. Empty segments (`a=1&&b=2`) are skipped; a name without
/// `=` has an empty value.
pub(crate) fn decode_form(text: &str) -> Result<Vec<(String, String)>, FormError> {
    if text.len() > MAX_URL_BYTES {
        return Err(FormError::TooLong);
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for segment in text.split('&').filter(|s| !s.is_empty()) {
        if pairs.len() == MAX_FORM_PAIRS {
            return Err(FormError::TooLong);
        }
        let (name, value) = segment.split_once('=').unwrap_or((segment, ""));
        let name = decode_component(name)?;
        if pairs.iter().any(|(n, _)| *n == name) {
            return Err(FormError::Duplicate);
        }
        pairs.push((name, decode_component(value)?));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_good_urls() {
        let url = Url::parse("HTTPS://Auth.Example.com:8443/tenant1/x?a=1&b=%20").unwrap();
        assert!(url.is_https());
        assert_eq!(url.host(), "Auth.Example.com");
        assert_eq!(url.path(), "/tenant1/x");
        assert_eq!(url.query(), Some("a=1&b=%20"));
        assert_eq!(url.origin_text(), "HTTPS://Auth.Example.com:8443");
        assert_eq!(url.origin().to_string(), "https://auth.example.com:8443");
        assert_eq!(
            url.as_str(),
            "HTTPS://Auth.Example.com:8443/tenant1/x?a=1&b=%20"
        );

        let bare = Url::parse("https://mcp.example.com").unwrap();
        assert_eq!(bare.path(), "");
        assert_eq!(bare.query(), None);
        assert_eq!(
            bare.origin(),
            Url::parse("https://MCP.example.com:443/x")
                .unwrap()
                .origin()
        );
        assert_ne!(
            bare.origin(),
            Url::parse("http://mcp.example.com").unwrap().origin()
        );
        let v6 = Url::parse("http://[::1]:3000/callback").unwrap();
        assert_eq!(v6.host(), "[::1]");
        assert!(v6.is_loopback() && v6.is_secure());
        assert_eq!(Url::parse("http://h?x").unwrap().path(), "");
    }

    #[test]
    fn loopback_and_secure() {
        for yes in [
            "http://localhost:1/",
            "http://LOCALHOST",
            "http://127.0.0.1:8080/x",
            "http://127.1.2.3",
            "http://[::1]",
        ] {
            assert!(Url::parse(yes).unwrap().is_loopback(), "{yes}");
        }
        for no in [
            "http://localhost.evil.com",
            "http://127.0.0.1.evil.com",
            "http://128.0.0.1",
            "http://127.0.0.256",
            "http://[::2]",
            "http://example.com",
        ] {
            let url = Url::parse(no).unwrap();
            assert!(!url.is_loopback() && !url.is_secure(), "{no}");
        }
        assert!(Url::parse("https://example.com").unwrap().is_secure());
    }

    #[test]
    fn bad_urls_are_refused() {
        let cases = [
            ("mcp.example.com", UrlError::Scheme),
            ("ftp://x", UrlError::Scheme),
            ("https:/x", UrlError::Scheme),
            ("https://", UrlError::Host),
            ("https:///path", UrlError::Host),
            ("https://:443", UrlError::Host),
            ("https://mcp.example.com#fragment", UrlError::Fragment),
            ("https://a/b#", UrlError::Fragment),
            ("https://user:pass@a/", UrlError::Userinfo),
            ("https://a@b", UrlError::Userinfo),
            ("https://a:/", UrlError::Port),
            ("https://a:65536/", UrlError::Port),
            ("https://a:-1/", UrlError::Port),
            ("https://a:1:2/", UrlError::Port),
            ("https://a b/", UrlError::Host),
            ("https://[::1/", UrlError::Host),
            ("https://[]/", UrlError::Host),
            ("https://[::1]x/", UrlError::Host),
            ("https://ex%41mple.com/", UrlError::Host),
            ("https://a/b c", UrlError::Character),
            ("https://a/\\evil", UrlError::Character),
            ("https://a/%zz", UrlError::Character),
            ("https://a/%4", UrlError::Character),
            ("https://a/é", UrlError::Character),
            ("https://a/\"x\"", UrlError::Character),
            ("https://a/\n", UrlError::Character),
        ];
        for (text, expected) in cases {
            assert_eq!(Url::parse(text), Err(expected), "{text:?}");
        }
        // A first character of several bytes where the scheme would end (a fuzzing find).
        assert_eq!(Url::parse("abcdef\u{fffd}xyz"), Err(UrlError::Scheme));
        assert_eq!(Url::parse("https:/\u{e9}"), Err(UrlError::Scheme));
        let long = format!("https://a/{}", "x".repeat(MAX_URL_BYTES));
        assert_eq!(Url::parse(&long), Err(UrlError::TooLong));
    }

    #[test]
    fn query_pairs_are_encoded() {
        let url = Url::parse("https://as.example.com/authorize").unwrap();
        let with = url
            .with_query_pairs(&[("resource", "https://mcp.example.com"), ("scope", "a b+c")])
            .unwrap();
        assert_eq!(
            with.as_str(),
            "https://as.example.com/authorize?resource=https%3A%2F%2Fmcp.example.com&scope=a%20b%2Bc"
        );
        let kept = Url::parse("https://as.example.com/authorize?tenant=x")
            .unwrap()
            .with_query_pairs(&[("a", "1")])
            .unwrap();
        assert_eq!(
            kept.as_str(),
            "https://as.example.com/authorize?tenant=x&a=1"
        );
        let empty = Url::parse("https://as.example.com/authorize?")
            .unwrap()
            .with_query_pairs(&[("a", "1")])
            .unwrap();
        assert_eq!(empty.as_str(), "https://as.example.com/authorize?a=1");
        assert_eq!(encode_component("é~-._ /"), "%C3%A9~-._%20%2F");
    }

    #[test]
    fn forms_round_trip_and_hostile_ones_fail() {
        let pairs = [("code", "a b&c=d/é"), ("state", "+%")];
        let text = encode_form(&pairs);
        let back = decode_form(&text).unwrap();
        assert_eq!(
            back,
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            decode_form("a=1+2&&b&c=%41").unwrap(),
            [
                ("a".into(), "1 2".into()),
                ("b".into(), String::new()),
                ("c".into(), "A".into())
            ]
        );
        assert_eq!(decode_form("a=%"), Err(FormError::Escape));
        assert_eq!(decode_form("a=%4"), Err(FormError::Escape));
        assert_eq!(decode_form("a=%g0"), Err(FormError::Escape));
        assert_eq!(decode_form("a=%ff"), Err(FormError::NotUtf8));
        assert_eq!(decode_form("a=1&a=2"), Err(FormError::Duplicate));
        assert_eq!(decode_form("%61=1&a=2"), Err(FormError::Duplicate));
        let many: Vec<String> = (0..=MAX_FORM_PAIRS).map(|i| format!("p{i}=1")).collect();
        assert_eq!(decode_form(&many.join("&")), Err(FormError::TooLong));
        assert_eq!(
            decode_form(&"a".repeat(MAX_URL_BYTES + 1)),
            Err(FormError::TooLong)
        );
    }
}
