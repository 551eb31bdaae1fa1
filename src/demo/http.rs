//! HTTP/1.1 framing for the demo server: request heads parsed with `httparse`, bodies framed by
//! `Content-Length` or chunked transfer coding (RFC 9112 §6-7), every read and write under a
//! deadline, every buffer bounded.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout, timeout_at};

/// Deadlines and size limits of one connection.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// How long a keep-alive connection may sit idle between requests.
    pub idle_timeout: Duration,
    /// How long a request may take to arrive once its first byte has.
    pub request_timeout: Duration,
    /// How long one write may block.
    pub write_timeout: Duration,
    /// The largest request head (request line and header fields).
    pub max_head_bytes: usize,
    /// The most header fields in a request.
    pub max_headers: usize,
    /// The largest request body, after removing the chunked coding.
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            idle_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_head_bytes: 16 * 1024,
            max_headers: 64,
            max_body_bytes: 1024 * 1024,
        }
    }
}

/// The interim response to `Expect: 100-continue` (RFC 9110 §10.1.1).
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The most bytes of chunk-size line (with extensions) or trailer section accepted.
const MAX_CHUNK_LINE_BYTES: usize = 4096;

/// One parsed request.
#[derive(Debug)]
pub(super) struct Request {
    /// The method, such as `POST`.
    pub method: String,
    /// The request target's path, without the query.
    pub path: String,
    /// Header fields in order, names lowercased.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, with any chunked coding removed.
    pub body: Vec<u8>,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
    /// Whether this is an HTTP/1.0 request, whose client knows no chunked coding.
    pub http10: bool,
}

impl Request {
    /// The first value of header `name` (lowercase), trimmed, if it is valid UTF-8.
    pub(super) fn header<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        self.headers_named(name).next()
    }

    /// Every value of header `name` (lowercase) that is valid UTF-8, trimmed.
    pub(crate) fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
            .map(str::trim)
    }

    /// Every value of header `name` (lowercase), as sent.
    pub(crate) fn raw_headers<'a, 'n>(
        &'a self,
        name: &'n str,
    ) -> impl Iterator<Item = &'a [u8]> + use<'a, 'n> {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// Whether the comma-separated header `name` lists `token` (ASCII case-insensitive).
    fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers_named(name)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The peer closed the connection between requests, or stayed idle too long.
    Closed,
    /// The socket failed, or a request started but did not finish in time.
    Io,
    /// The request is malformed or too large: answer with this status and close.
    Reject(u16, &'static str),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Io
    }
}

/// A response sent in one piece, with `Content-Length`.
#[derive(Debug)]
pub(super) struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields besides `Content-Length`, `Connection`, `Date` and `Server`.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with a `text/plain` body.
    pub(super) fn text(status: u16, body: &str) -> Self {
        Response {
            status,
            headers: vec![("Content-Type", "text/plain; charset=utf-8".to_owned())],
            body: body.as_bytes().to_vec(),
        }
    }

    /// A response with an `application/json` body.
    pub(super) fn json(status: u16, body: String) -> Self {
        Response {
            status,
            headers: vec![("Content-Type", "application/json".to_owned())],
            body: body.into_bytes(),
        }
    }

    /// Adds a header field.
    pub(super) fn with_header(mut self, name: &'static str, value: String) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// The reason phrase for the statuses this server sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// Writes a status line and header fields, ending with the empty line. `framing` is the
/// `Content-Length` or `Transfer-Encoding` field; without one the body ends when the
/// connection closes.
pub(super) fn head(
    status: u16,
    headers: &[(&'static str, String)],
    framing: Option<&str>,
    keep_alive: bool,
) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    out.push_str("Server: mcpwire-demo/");
    out.push_str(env!("CARGO_PKG_VERSION"));
    out.push_str("\r\nDate: ");
    out.push_str(&super::http_date_now());
    out.push_str("\r\n");
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    if let Some(framing) = framing {
        out.push_str(framing);
        out.push_str("\r\n");
    }
    if !keep_alive {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// One chunk of a chunked body (RFC 9112 §7.1); empty data is the last chunk.
pub(super) fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    // For the last chunk (`0\r\n`) this CRLF ends the empty trailer section.
    out.extend_from_slice(b"\r\n");
    out
}

/// A connection: the socket and the bytes read but not yet consumed.
pub(super) struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    limits: Limits,
}

impl Conn {
    pub(super) fn new(stream: TcpStream, limits: Limits) -> Self {
        Conn {
            stream,
            buf: Vec::new(),
            limits,
        }
    }

    /// Reads more bytes into the buffer before `deadline`; end of stream is `Ok(false)`.
    async fn fill(&mut self, deadline: Instant) -> Result<bool, ReadError> {
        let mut scratch = [0u8; 16 * 1024];
        match timeout_at(deadline, self.stream.read(&mut scratch)).await {
            // Timed out, or the socket failed.
            Err(_) | Ok(Err(_)) => Err(ReadError::Io),
            Ok(Ok(0)) => Ok(false),
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&scratch[..n]);
                Ok(true)
            }
        }
    }

    /// Reads the next request. Waits at most the idle timeout for it to start, then at most
    /// the request timeout for all of it.
    pub(super) async fn read_request(&mut self) -> Result<Request, ReadError> {
        if self.buf.is_empty() {
            // Time is read here, in the driver, to set the deadlines (the sans-IO rule).
            let idle_deadline = super::now() + self.limits.idle_timeout;
            match self.fill(idle_deadline).await {
                Ok(true) => {}
                Ok(false) | Err(ReadError::Io) => return Err(ReadError::Closed),
                Err(other) => return Err(other),
            }
        }
        let deadline = super::now() + self.limits.request_timeout;
        let (mut request, head_len, framing) = loop {
            match self.parse_head()? {
                Some(parsed) => break parsed,
                None => {
                    if self.buf.len() > self.limits.max_head_bytes {
                        return Err(ReadError::Reject(431, "the request head is too large"));
                    }
                    if !self.fill(deadline).await? {
                        return Err(ReadError::Io);
                    }
                }
            }
        };
        if head_len > self.limits.max_head_bytes {
            return Err(ReadError::Reject(431, "the request head is too large"));
        }
        self.buf.drain(..head_len);
        let wants_continue = request.has_token("expect", "100-continue");
        match framing {
            Framing::Length(0) => {}
            Framing::Length(length) => {
                if wants_continue && self.buf.len() < length {
                    self.write_all(CONTINUE).await?;
                }
                while self.buf.len() < length {
                    if !self.fill(deadline).await? {
                        return Err(ReadError::Io);
                    }
                }
                request.body = self.buf.drain(..length).collect();
            }
            Framing::Chunked => {
                if wants_continue && self.buf.is_empty() {
                    self.write_all(CONTINUE).await?;
                }
                request.body = self.read_chunked(deadline).await?;
            }
        }
        Ok(request)
    }

    /// Parses the head in the buffer: `None` while it is incomplete.
    fn parse_head(&self) -> Result<Option<(Request, usize, Framing)>, ReadError> {
        let mut slots = vec![httparse::EMPTY_HEADER; self.limits.max_headers];
        let mut parsed = httparse::Request::new(&mut slots);
        let head_len = match parsed.parse(&self.buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ReadError::Reject(431, "too many header fields"));
            }
            Err(httparse::Error::Version) => {
                return Err(ReadError::Reject(505, "only HTTP/1.x is served"));
            }
            Err(_) => return Err(ReadError::Reject(400, "malformed request head")),
        };
        let (Some(method), Some(target), Some(version)) =
            (parsed.method, parsed.path, parsed.version)
        else {
            return Err(ReadError::Reject(400, "malformed request line"));
        };
        let path = target.split('?').next().unwrap_or_default().to_owned();
        let headers: Vec<(String, Vec<u8>)> = parsed
            .headers
            .iter()
            .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
            .collect();
        let mut request = Request {
            method: method.to_owned(),
            path,
            headers,
            body: Vec::new(),
            keep_alive: false,
            http10: version == 0,
        };
        // HTTP/1.0 connections close after each response: simpler than its keep-alive extension.
        request.keep_alive = version == 1 && !request.has_token("connection", "close");
        let framing = framing(&request, version, self.limits.max_body_bytes)?;
        Ok(Some((request, head_len, framing)))
    }

    /// Reads and decodes a chunked body (RFC 9112 §7.1), consuming it from the buffer as it
    /// goes, so the buffer never holds more than one chunk.
    async fn read_chunked(&mut self, deadline: Instant) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let (line_len, size) = loop {
                match httparse::parse_chunk_size(&self.buf) {
                    Ok(httparse::Status::Complete(found)) => break found,
                    Ok(httparse::Status::Partial) => {
                        if self.buf.len() > MAX_CHUNK_LINE_BYTES {
                            return Err(ReadError::Reject(400, "a chunk-size line is too long"));
                        }
                        if !self.fill(deadline).await? {
                            return Err(ReadError::Io);
                        }
                    }
                    Err(_) => return Err(ReadError::Reject(400, "malformed chunk size")),
                }
            };
            self.buf.drain(..line_len);
            if size == 0 {
                self.skip_trailers(deadline).await?;
                return Ok(body);
            }
            let size = usize::try_from(size)
                .ok()
                .filter(|s| body.len().saturating_add(*s) <= self.limits.max_body_bytes)
                .ok_or(ReadError::Reject(413, "the request body is too large"))?;
            while self.buf.len() < size + 2 {
                if !self.fill(deadline).await? {
                    return Err(ReadError::Io);
                }
            }
            if &self.buf[size..size + 2] != b"\r\n" {
                return Err(ReadError::Reject(400, "a chunk does not end with CRLF"));
            }
            body.extend_from_slice(&self.buf[..size]);
            self.buf.drain(..size + 2);
        }
    }

    /// Skips the trailer section after the last chunk (RFC 9112 §7.1.2): lines up to an empty one.
    async fn skip_trailers(&mut self, deadline: Instant) -> Result<(), ReadError> {
        loop {
            if self.buf.starts_with(b"\r\n") {
                self.buf.drain(..2);
                return Ok(());
            }
            if let Some(end) = memchr::memmem::find(&self.buf, b"\r\n\r\n") {
                self.buf.drain(..end + 4);
                return Ok(());
            }
            if self.buf.len() > MAX_CHUNK_LINE_BYTES {
                return Err(ReadError::Reject(431, "the trailer section is too large"));
            }
            if !self.fill(deadline).await? {
                return Err(ReadError::Io);
            }
        }
    }

    /// Writes all of `bytes` within the write timeout.
    pub(super) async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match timeout(self.limits.write_timeout, self.stream.write_all(bytes)).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "a write timed out")),
        }
    }

    /// Sends a whole response; only its head when answering `HEAD` (RFC 9110 §9.3.2).
    pub(super) async fn send(
        &mut self,
        response: &Response,
        keep_alive: bool,
        head_only: bool,
    ) -> io::Result<()> {
        let framing = format!("Content-Length: {}", response.body.len());
        let mut bytes = head(
            response.status,
            &response.headers,
            Some(&framing),
            keep_alive,
        );
        if !head_only {
            bytes.extend_from_slice(&response.body);
        }
        self.write_all(&bytes).await
    }

    /// Closes the sending side after a refusal, then reads and discards what the client is
    /// still sending (for a short while), so that closing with unread bytes does not reset
    /// the connection before the client has read the refusal.
    pub(super) async fn linger(&mut self) {
        self.shutdown().await;
        let deadline = super::now() + Duration::from_secs(1);
        let mut scratch = [0u8; 16 * 1024];
        let mut budget = self.limits.max_body_bytes;
        while budget > 0 {
            match timeout_at(deadline, self.stream.read(&mut scratch)).await {
                Ok(Ok(n)) if n > 0 => budget = budget.saturating_sub(n),
                _ => return,
            }
        }
    }

    /// Waits until the peer closes or sends more bytes (kept for the next request), or until
    /// `until` completes. Returns `Err` once the peer has gone, `Ok(output)` otherwise. A peer
    /// that pipelines more than a head and a body's worth of bytes is no longer read from.
    pub(super) async fn watch<F: Future>(&mut self, until: F) -> Result<F::Output, PeerGone> {
        tokio::pin!(until);
        let cap = self.limits.max_head_bytes + self.limits.max_body_bytes;
        let mut scratch = [0u8; 4096];
        loop {
            let reading = self.buf.len() < cap;
            tokio::select! {
                biased;
                output = &mut until => return Ok(output),
                read = self.stream.read(&mut scratch), if reading => match read {
                    // End of stream: the client closed the connection (HTTP clients do not
                    // half-close while they wait for a response), so nobody will read the rest.
                    Ok(0) | Err(_) => return Err(PeerGone),
                    Ok(n) => self.buf.extend_from_slice(&scratch[..n]),
                },
            }
        }
    }

    /// Flushes and closes the sending side, within the write timeout.
    pub(super) async fn shutdown(&mut self) {
        let _ = timeout(self.limits.write_timeout, self.stream.shutdown()).await;
    }
}

/// The peer's connection failed while a response streamed.
#[derive(Debug)]
pub(super) struct PeerGone;

/// How a request body is delimited.
enum Framing {
    Length(usize),
    Chunked,
}

/// Decides the body framing from the header fields (RFC 9112 §6.3).
fn framing(request: &Request, version: u8, max_body: usize) -> Result<Framing, ReadError> {
    let has_length = request.headers.iter().any(|(n, _)| n == "content-length");
    if request
        .headers
        .iter()
        .any(|(n, _)| n == "transfer-encoding")
    {
        if has_length {
            // Both framings at once is how requests are smuggled; refuse (§6.1).
            return Err(ReadError::Reject(
                400,
                "both Transfer-Encoding and Content-Length",
            ));
        }
        if version == 0 {
            return Err(ReadError::Reject(
                400,
                "Transfer-Encoding in an HTTP/1.0 request",
            ));
        }
        let codings: Vec<&str> = request
            .headers_named("transfer-encoding")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        return match codings.as_slice() {
            [only] if only.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
            _ => Err(ReadError::Reject(
                501,
                "only the chunked transfer coding is supported",
            )),
        };
    }
    let mut length: Option<usize> = None;
    for (name, value) in &request.headers {
        if name != "content-length" {
            continue;
        }
        let text = std::str::from_utf8(value).unwrap_or_default().trim();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ReadError::Reject(400, "invalid Content-Length"));
        }
        // Anything too long to parse is far over the limit.
        let parsed = text.parse::<usize>().unwrap_or(usize::MAX);
        if length.is_some_and(|l| l != parsed) {
            return Err(ReadError::Reject(400, "conflicting Content-Length values"));
        }
        length = Some(parsed);
    }
    let length = length.unwrap_or(0);
    if length > max_body {
        return Err(ReadError::Reject(413, "the request body is too large"));
    }
    Ok(Framing::Length(length))
}
