//! `mcpwire probe URL`: what an operator wants to know about a Streamable HTTP server before
//! binding it, found by talking to it as discovery would, and never by calling a tool.
//!
//! [`probe`] runs these steps, each bounded by [`ProbeOptions::request_timeout`], a body limit
//! and the whole probe's deadline ([`ProbeOptions::timeout`]):
//!
//! 1. **Modern era.** `POST server/discover` with the 2026-07-28 `_meta` envelope and headers,
//!    classified as a 2026 client would ([`ModernEra`]): a DiscoverResult naming 2026-07-28 (or
//!    a -32022 error whose `supported` names it) is a 2026-07-28 server, any other JSON-RPC
//!    error or non-JSON-RPC 4xx a 2025-era one, 401/403 and 5xx no evidence.
//! 2. **2025 revisions.** A raw `initialize` offering each of 2025-11-25, 2025-06-18 and
//!    2025-03-26 (every session it opens is ended with `DELETE`), then a session of the
//!    library client ([`Client::connect_http`], with a wire log) offering 2025-11-25, which
//!    falls back to the legacy HTTP+SSE transport when the server speaks only that.
//! 3. **Framing.** For every request the probe makes itself, the reply's status, content type
//!    and, for an event stream, its line endings, priming events, ids and `retry`.
//! 4. **Sessions.** `tools/list` with a made-up `Mcp-Session-Id` (the spec says 404) and, for a
//!    server that gives session ids, without one (400).
//! 5. **Auth.** A 401/403's `WWW-Authenticate` challenges, and the protected-resource metadata
//!    (RFC 9728) they name or the well-known URIs give, fetched without credentials, from
//!    https or loopback addresses only.
//! 6. **Tools.** Every page of `tools/list`, and per tool: the name rule, whether `inputSchema`
//!    and `outputSchema` compile (`compile`), whether it
//!    declares an `outputSchema`, and its `x-mcp-header` annotations
//!    (`param_headers`).
//! 7. **Deviations.** Everything seen on the wire that breaks a rule, with the rule and the
//!    evidence ([`Deviation`]).
//!
//! The probe is side-effect free: `tools/call` is never sent. The bearer token, if any, goes
//! only to the endpoint's origin, and never appears in the report.

mod check;
mod report;
#[cfg(test)]
mod tests;

pub use report::{
    Authorization, Challenge, Deviation, Eras, LegacyEra, Level, ModernEra, OverloadSeen,
    ProbeReport, ReplySeen, ResourceMetadata, ServerMetadata, ServerSummary, SessionIdSeen,
    Sessions, SseFraming, StatusSeen, ToolCheck, Tools, VersionOffer,
};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::Full;
use serde_json::{Value, json};

use self::check::{BodyKind, MODERN, cut, rules};
use crate::client::{Client, ClientOptions};
use crate::exchange::{Jitter, TransportError, given_up, is_overload, retry_after};
use crate::mcp::headers::encode_header_value;
use crate::mcp::{Implementation, ProtocolVersion, Tool};
use crate::secret::Secret;
use crate::transport::http::{HttpConfig, HttpPool, OverloadPolicy, RawEnd, RawReply, wall_clock};

/// The probe's clock, for what is left of its deadline.
#[allow(
    clippy::disallowed_methods,
    reason = "the probe drives requests and a client: it owns the clock"
)]
fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// What to probe, and its limits.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProbeOptions {
    /// The Streamable HTTP endpoint (or a legacy HTTP+SSE one), `http://` or `https://`.
    pub url: String,
    /// Sent as `Authorization: Bearer ...` to the endpoint's origin only.
    pub token: Option<Secret>,
    /// The deadline of the whole probe.
    pub timeout: Duration,
    /// How long any one request (or the client's connect) may take.
    pub request_timeout: Duration,
    /// The most body bytes read of any one reply.
    pub max_body_bytes: usize,
    /// The most `tools/list` pages the probe's own 2026-07-28 listing reads.
    pub max_list_pages: usize,
    /// How a request answered 429 or 503 is sent again (every request the probe makes
    /// changes nothing, so each may be), within the probe's deadline; the client the probe
    /// connects retries by its own [`HttpConfig::overload`].
    pub overload: OverloadPolicy,
}

impl ProbeOptions {
    /// Defaults: no token, 30 s in all, 10 s per request, 1 MiB per reply, 100 pages.
    pub fn new(url: &str) -> Self {
        ProbeOptions {
            url: url.to_owned(),
            token: None,
            timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            max_body_bytes: 1 << 20,
            max_list_pages: 100,
            overload: OverloadPolicy::default(),
        }
    }
}

/// The 2025 revisions offered in a raw `initialize`, newest first.
const OFFERS: [ProtocolVersion; 3] = [
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_03_26,
];

/// The session id of the dead-session check: no server hands this one out.
const MADE_UP_SESSION: &str = "mcpwire-probe-0000-no-such-session";

/// The largest protected-resource metadata document read.
const MAX_METADATA_BYTES: usize = 64 * 1024;

/// How long the legacy event stream is watched for its first event.
const LEGACY_STREAM_WAIT: Duration = Duration::from_secs(3);

/// How many wire-log lines the client's session keeps.
const MAX_WIRE_LINES: usize = 500;

/// Probes the server at `options.url`. Fails only for a URL that is not an absolute `http` or
/// `https` one; a server that cannot be reached gives a report with `reachable: false`.
pub async fn probe(pool: &HttpPool, options: &ProbeOptions) -> Result<ProbeReport, String> {
    let uri = HttpConfig::new(&options.url)
        .map_err(|e| e.to_string())?
        .url;
    let mut run = Run {
        pool,
        options,
        uri,
        deadline: now() + options.timeout,
        report: ProbeReport {
            url: options.url.clone(),
            ..ProbeReport::default()
        },
        next_id: 0,
        out_of_time: false,
        issues_sessions: false,
        speaks_2025: false,
        initialize_server: None,
        discover_result: None,
        jitter: Jitter::new({
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        }),
    };
    run.report.auth.token_sent = options.token.is_some();
    // Every step is bounded by what is left of the deadline; this is the net under them.
    let finished = tokio::time::timeout(options.timeout + Duration::from_millis(500), run.steps())
        .await
        .is_ok();
    if !finished || run.out_of_time {
        run.report.notes.push(format!(
            "the probe's deadline ({} s) passed before every step ran",
            options.timeout.as_secs_f64()
        ));
        run.report.completed = false;
    }
    Ok(run.report)
}

/// One probe in progress.
struct Run<'a> {
    pool: &'a HttpPool,
    options: &'a ProbeOptions,
    uri: Uri,
    deadline: tokio::time::Instant,
    report: ProbeReport,
    next_id: u64,
    /// A step found no time left.
    out_of_time: bool,
    /// The server gave an `Mcp-Session-Id` on some initialize reply.
    issues_sessions: bool,
    /// Some raw `initialize` was answered with a result over Streamable HTTP.
    speaks_2025: bool,
    /// The first raw initialize result.
    initialize_server: Option<Value>,
    /// The DiscoverResult of a 2026-07-28 server.
    discover_result: Option<Value>,
    /// The backoffs' jitter after a 429 or 503.
    jitter: Jitter,
}

/// A reply to one of the probe's own requests, read.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    /// The JSON-RPC response to the request, if the reply held one.
    response: Option<Value>,
}

impl Answer {
    fn result(&self) -> Option<&Value> {
        self.response.as_ref().and_then(|r| r.get("result"))
    }
}

impl Run<'_> {
    async fn steps(&mut self) {
        if !self.discover().await {
            return;
        }
        if self.report.auth.required {
            self.auth_metadata().await;
            self.report.notes.push(
                "not probed further: the server refused the request for credentials (give one \
                 with --token-env)"
                    .to_owned(),
            );
            self.report.completed = !self.out_of_time;
            return;
        }
        for version in OFFERS {
            self.initialize(version).await;
        }
        let client = self.connect().await;
        let legacy = self.report.eras.legacy.legacy_fallback;
        if !legacy && (self.speaks_2025 || client.is_some()) {
            self.sessions(client.as_ref()).await;
        }
        let modern = self.report.eras.modern.speaks_2026_07_28 == Some(true);
        match &client {
            Some(client) => {
                self.client_tools(client).await;
                if modern {
                    // The 2026-07-28 answer's framing and resultType, for the record.
                    let _ = self.modern_tools(false).await;
                }
            }
            None if modern => match self.modern_tools(true).await {
                Some(Ok(tools)) => {
                    self.report.tools.via = format!("tools/list ({MODERN})");
                    self.analyse_tools(&tools);
                }
                Some(Err(error)) => self.report.tools.error = Some(error),
                None => {}
            },
            None => {
                self.report.tools.error = Some("no session to list them in (see Eras)".to_owned());
            }
        }
        if let Some(client) = client
            && let Some(budget) = self.budget("closing the session")
        {
            let _ = tokio::time::timeout(budget, client.close()).await;
        }
        if legacy {
            self.legacy_stream().await;
        }
        if self.report.auth.required {
            self.auth_metadata().await;
        }
        self.fill_server();
        self.report.completed = !self.out_of_time;
    }

    /// What is left of the deadline, capped at `cap`; `None` (and a note) when nothing is.
    fn budget_capped(&mut self, what: &str, cap: Duration) -> Option<Duration> {
        let left = self.deadline.saturating_duration_since(now());
        if left.is_zero() {
            if !self.out_of_time {
                self.report
                    .notes
                    .push(format!("skipped from {what} on: no time left"));
            }
            self.out_of_time = true;
            return None;
        }
        Some(left.min(cap))
    }

    fn budget(&mut self, what: &str) -> Option<Duration> {
        self.budget_capped(what, self.options.request_timeout)
    }

    fn fresh_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}-{}", self.next_id)
    }

    fn redact(&self, text: &str) -> String {
        match &self.options.token {
            Some(token) => token.redact(text),
            None => text.to_owned(),
        }
    }

    /// The 2026-07-28 per-request `_meta` envelope.
    fn envelope() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {
                "name": "mcpwire-probe",
                "version": env!("CARGO_PKG_VERSION"),
            },
        })
    }

    /// A request to the endpoint, carrying the bearer token if one was given. (Only the
    /// endpoint gets it: the metadata documents are fetched by [`Run::get_metadata`], without.)
    fn request(
        &self,
        method: Method,
        accept: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Option<Request<Full<Bytes>>> {
        let mut builder = Request::builder()
            .method(method)
            .uri(self.uri.clone())
            .header(ACCEPT, accept);
        if !body.is_empty() {
            builder = builder.header(CONTENT_TYPE, "application/json");
        }
        if let Some(token) = &self.options.token
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        {
            value.set_sensitive(true);
            builder = builder.header(AUTHORIZATION, value);
        }
        for (name, value) in headers {
            builder = builder.header(*name, value.as_str());
        }
        builder.body(Full::new(Bytes::from(body))).ok()
    }

    /// POSTs one JSON-RPC request and reads and checks its reply.
    async fn post(
        &mut self,
        label: &str,
        body: &Value,
        headers: &[(&str, String)],
        modern: bool,
    ) -> Option<Answer> {
        let id = body
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut retries = 0;
        loop {
            let Some(request) = self.request(
                Method::POST,
                "application/json, text/event-stream",
                headers,
                body.to_string().into_bytes(),
            ) else {
                self.report
                    .notes
                    .push(format!("{label}: the request could not be built"));
                return None;
            };
            let budget = self.budget(label)?;
            let stop = |so_far: &[u8]| sse_has_response(so_far, &id);
            let reply = self
                .fetch(label, request, self.options.max_body_bytes, budget, &stop)
                .await?;
            if !is_overload(reply.status) {
                return Some(self.observe(label, reply, Some(&id), modern));
            }
            // Overloaded: the request did not run, and sending it again changes nothing. The
            // decision is the exchange's rule, on the probe's deadline.
            let status = reply.status.as_u16();
            let wait = retry_after(&reply.headers, wall_clock());
            let at = now();
            let next = self.options.overload.next_attempt(
                retries,
                wait,
                at.into_std(),
                Some(self.deadline.into_std()),
                self.jitter.next(),
            );
            let answer = self.observe(label, reply, Some(&id), modern);
            let mut seen = OverloadSeen {
                request: label.to_owned(),
                status,
                retry_after_seconds: wait.map(|wait| wait.as_secs()),
                attempt: retries + 1,
                waited_ms: None,
                outcome: String::new(),
            };
            match next {
                Ok(again) => {
                    let waited = again.saturating_duration_since(at.into_std());
                    seen.waited_ms = Some(waited.as_millis() as u64);
                    seen.outcome = format!("sent again after {} ms", waited.as_millis());
                    self.report.overload.push(seen);
                    tokio::time::sleep_until(again.into()).await;
                    retries += 1;
                }
                Err(why) => {
                    seen.outcome = format!(
                        "given up{}",
                        given_up(why, wait).replace("request's", "probe's")
                    );
                    self.report.overload.push(seen);
                    return Some(answer);
                }
            }
        }
    }

    async fn fetch(
        &mut self,
        label: &str,
        request: Request<Full<Bytes>>,
        max_body_bytes: usize,
        budget: Duration,
        stop: &(dyn Fn(&[u8]) -> bool + Sync),
    ) -> Option<RawReply> {
        match self.pool.fetch(request, max_body_bytes, budget, stop).await {
            Ok(reply) => {
                self.report.reachable = true;
                Some(reply)
            }
            Err(TransportError::Connect(detail) | TransportError::Lost(detail)) => {
                let detail = cut(&self.redact(&detail), 200);
                self.report.notes.push(format!("{label}: {detail}"));
                None
            }
        }
    }

    /// Records a reply in `replies` and checks it: its content type, its framing, the JSON-RPC
    /// response to request `id`, and a refusal's challenge.
    fn observe(&mut self, label: &str, reply: RawReply, id: Option<&str>, modern: bool) -> Answer {
        let status = reply.status;
        let content_type = check::content_type(&reply.headers);
        let kind = check::body_kind(content_type.as_deref(), &reply.body);
        let sse = (kind == BodyKind::EventStream).then(|| check::sse_framing(&reply.body));
        let (messages, _) = check::messages(&kind, &reply.body);
        let response = id.and_then(|id| check::find_response(&messages, id).cloned());
        // Redacted before it is cut, so a cut cannot split an echoed token past recognition.
        let excerpt = cut(
            &self.redact(&String::from_utf8_lossy(
                &reply.body[..reply.body.len().min(4096)],
            )),
            160,
        );
        let evidence = format!(
            "{label}: {} {}{}",
            status.as_u16(),
            content_type.as_deref().unwrap_or("(no Content-Type)"),
            if excerpt.is_empty() {
                String::new()
            } else {
                format!(" {excerpt}")
            }
        );
        let complete = matches!(reply.end, RawEnd::Complete | RawEnd::Stopped);
        if id.is_some() && status.is_success() {
            match kind {
                BodyKind::Json | BodyKind::EventStream => {
                    if response.is_none() && complete {
                        let (rule, level) = if kind == BodyKind::Json {
                            (rules::CONTENT_TYPE, Level::Must)
                        } else {
                            (
                                "basic/transports.mdx (2025-11-25), Sending Messages to the \
                                 Server, 6: the SSE stream SHOULD eventually include the JSON-RPC \
                                 response",
                                Level::Should,
                            )
                        };
                        self.report.deviate(Deviation::new(
                            format!("a {} reply to a request held no response", kind.name()),
                            rule,
                            level,
                            evidence.clone(),
                        ));
                    }
                }
                BodyKind::Empty | BodyKind::Other => self.report.deviate(Deviation::new(
                    format!(
                        "a request was answered {} with {}",
                        status.as_u16(),
                        match (&kind, &content_type) {
                            (BodyKind::Empty, _) => "an empty body".to_owned(),
                            (_, Some(ct)) => format!("Content-Type {ct}"),
                            (_, None) => "no Content-Type".to_owned(),
                        }
                    ),
                    rules::CONTENT_TYPE,
                    Level::Must,
                    evidence.clone(),
                )),
            }
        }
        // A refusal's body belongs to HTTP authentication (RFC 6750), not to JSON-RPC.
        let refused = matches!(status.as_u16(), 401 | 403);
        if let (Some(id), Some(response), false) = (id, &response, refused) {
            for deviation in check::check_response(response, id, modern, &evidence) {
                self.report.deviate(deviation);
            }
        }
        if let Some(framing) = &sse {
            for deviation in check::check_framing(framing, &evidence) {
                self.report.deviate(deviation);
            }
        }
        if refused {
            self.refused(status, &reply.headers, &evidence);
        }
        self.report.replies.push(ReplySeen {
            request: label.to_owned(),
            status: status.as_u16(),
            content_type,
            body: kind.name().to_owned(),
            bytes: reply.body.len(),
            end: match &reply.end {
                RawEnd::Complete => "complete".to_owned(),
                RawEnd::Stopped => "response read".to_owned(),
                RawEnd::Limit => "limit".to_owned(),
                RawEnd::Deadline => "deadline".to_owned(),
                RawEnd::Broke(why) => format!("broke: {}", cut(why, 80)),
            },
            session_id: reply.headers.contains_key("mcp-session-id"),
            sse,
            answer: if id.is_some() {
                check::answer_line(response.as_ref())
            } else {
                String::new()
            },
        });
        Answer {
            status,
            headers: reply.headers,
            response,
        }
    }

    /// A 401 or 403: the challenge, once.
    fn refused(&mut self, status: StatusCode, headers: &HeaderMap, evidence: &str) {
        if self.report.auth.required {
            return;
        }
        let redact = |text: &str| self.redact(text);
        let challenges = check::challenges(headers, &redact);
        if status == StatusCode::UNAUTHORIZED && challenges.is_empty() {
            self.report.deviate(Deviation::new(
                "a 401 came without a WWW-Authenticate challenge".to_owned(),
                rules::WWW_AUTHENTICATE,
                Level::Must,
                evidence.to_owned(),
            ));
        }
        self.report.auth.required = true;
        self.report.auth.status = Some(status.as_u16());
        self.report.auth.challenges = challenges;
    }

    /// Step 1: `server/discover`. False when the server could not be reached at all.
    async fn discover(&mut self) -> bool {
        let id = self.fresh_id("server-discover-probe");
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "server/discover",
            "params": {"_meta": Self::envelope()},
        });
        let headers = [
            ("mcp-protocol-version", MODERN.to_owned()),
            ("mcp-method", encode_header_value("server/discover")),
        ];
        let label = format!("POST server/discover ({MODERN})");
        let Some(answer) = self.post(&label, &body, &headers, true).await else {
            if !self.report.reachable {
                self.report.eras.modern.verdict = "no answer".to_owned();
            }
            return self.report.reachable;
        };
        let era = check::classify_discover(answer.status, answer.response.as_ref());
        if era.speaks_2026_07_28 == Some(true) {
            self.discover_result = answer.result().cloned();
        }
        self.report.eras.modern = era;
        true
    }

    /// Step 2a: a raw `initialize` offering `version`; its session, if any, is ended.
    async fn initialize(&mut self, version: ProtocolVersion) {
        let id = self.fresh_id("initialize-probe");
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": version.as_str(),
                "capabilities": {},
                "clientInfo": {"name": "mcpwire-probe", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        let label = format!("POST initialize {version}");
        let mut offer = VersionOffer {
            offered: version.as_str().to_owned(),
            ..VersionOffer::default()
        };
        let Some(answer) = self.post(&label, &body, &[], false).await else {
            offer.error = Some("no answer".to_owned());
            self.report.eras.legacy.offers.push(offer);
            return;
        };
        offer.status = Some(answer.status.as_u16());
        match answer.result() {
            Some(result) => {
                let answered = result
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(|v| cut(v, 40));
                if let Some(answered) = &answered {
                    self.speaks_2025 = true;
                    if answered != version.as_str()
                        && ProtocolVersion::parse(answered).is_none()
                        && answered != MODERN
                    {
                        self.report.deviate(Deviation::new(
                            format!(
                                "initialize offering {version} was answered with {answered}, a \
                                 revision neither offered nor known"
                            ),
                            rules::VERSION_NEGOTIATION,
                            Level::Should,
                            format!("{label}: protocolVersion {answered:?}"),
                        ));
                    }
                }
                if self.initialize_server.is_none() {
                    self.initialize_server = Some(result.clone());
                }
                offer.answered = answered;
            }
            None => offer.error = Some(check::answer_line(answer.response.as_ref())),
        }
        self.report.eras.legacy.offers.push(offer);
        let Some(session) = answer.headers.get("mcp-session-id").cloned() else {
            return;
        };
        self.issues_sessions = true;
        let seen = check::session_id_seen(session.as_bytes());
        if !seen.visible_ascii {
            self.report.deviate(Deviation::new(
                "an Mcp-Session-Id holds bytes that are not visible ASCII".to_owned(),
                rules::SESSION_ID_ASCII,
                Level::Must,
                format!("{label}: a {}-byte session id", seen.length),
            ));
        }
        if self.report.sessions.session_id.is_none() {
            self.report.sessions.session_id = Some(seen);
        }
        // End the session the probe opened (a refusal or no answer changes nothing).
        if let Ok(session) = session.to_str().map(str::to_owned)
            && let Some(request) = self.request(
                Method::DELETE,
                "application/json, text/event-stream",
                &[
                    ("mcp-session-id", session),
                    ("mcp-protocol-version", version.as_str().to_owned()),
                ],
                Vec::new(),
            )
            && let Some(budget) = self.budget("ending a session")
        {
            let _ = self.pool.fetch(request, 4096, budget, &|_| false).await;
        }
    }

    /// Step 2b: a session of the library client, offering 2025-11-25.
    async fn connect(&mut self) -> Option<Client> {
        let budget = self.budget("the client's connect")?;
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let mut config = match HttpConfig::new(&self.options.url) {
            Ok(config) => config,
            Err(error) => {
                self.report.eras.legacy.connect_error = Some(error.to_string());
                return None;
            }
        };
        config.bearer_token = self.options.token.clone();
        config.post_timeout = budget;
        let sink = lines.clone();
        config.wire_log = Some(Arc::new(move |line: &str| {
            if let Ok(mut lines) = sink.lock()
                && lines.len() < MAX_WIRE_LINES
            {
                lines.push(cut(line, 200));
            }
        }));
        let mut options = ClientOptions {
            request_timeout: budget,
            ..ClientOptions::default()
        };
        options.session.initialize_timeout = budget;
        // This step examines the 2025-era handshake; the modern era was probed above.
        options.session.era = crate::session::EraPolicy::Legacy;
        options.session.client_info =
            Implementation::new("mcpwire-probe", env!("CARGO_PKG_VERSION"));
        let connected = tokio::time::timeout(
            budget + Duration::from_millis(200),
            Client::connect_http(self.pool, config, options),
        )
        .await;
        let legacy = lines
            .lock()
            .map(|lines| lines.iter().any(|l| l.contains("(legacy HTTP+SSE)")))
            .unwrap_or(false);
        let era = &mut self.report.eras.legacy;
        match connected {
            Ok(Ok(client)) => {
                self.report.reachable = true;
                let legacy = legacy || client.protocol_version() == ProtocolVersion::V2024_11_05;
                era.negotiated = Some(client.protocol_version().as_str().to_owned());
                era.legacy_fallback = legacy;
                era.transport = Some(
                    if legacy {
                        "http+sse"
                    } else {
                        "streamable-http"
                    }
                    .to_owned(),
                );
                if let Some(session) = client.session_id() {
                    self.issues_sessions = true;
                    if self.report.sessions.session_id.is_none() {
                        self.report.sessions.session_id =
                            Some(check::session_id_seen(session.as_bytes()));
                    }
                }
                if let Some(server) = client.server() {
                    self.report.server = Some(ServerSummary {
                        name: cut(&server.server_info.name, 100),
                        version: cut(&server.server_info.version, 40),
                        title: server.server_info.title.as_deref().map(|t| cut(t, 100)),
                        capabilities: capability_names(
                            &serde_json::to_value(&server.capabilities).unwrap_or_default(),
                        ),
                        instructions: server.instructions.is_some(),
                        source: "initialize".to_owned(),
                    });
                }
                Some(client)
            }
            Ok(Err(error)) => {
                era.connect_error = Some(cut(
                    &redact_with(&self.options.token, &format!("{}: {error}", error.kind())),
                    200,
                ));
                era.legacy_fallback = legacy;
                None
            }
            Err(_) => {
                era.connect_error = Some(format!("no session within {} ms", budget.as_millis()));
                None
            }
        }
    }

    /// Step 4: the session checks.
    async fn sessions(&mut self, client: Option<&Client>) {
        let version = client
            .map(Client::protocol_version)
            .unwrap_or(ProtocolVersion::V2025_11_25);
        let version_header = version
            .requires_protocol_version_header()
            .then(|| ("mcp-protocol-version", version.as_str().to_owned()));
        let tools_list = |run: &mut Self| {
            let id = run.fresh_id("tools-list-probe");
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})
        };
        if let Some(client) = client {
            let mut headers: Vec<(&str, String)> = version_header.iter().cloned().collect();
            if let Some(session) = client.session_id() {
                headers.push(("mcp-session-id", session.to_owned()));
            }
            let body = tools_list(self);
            let label = if client.session_id().is_some() {
                "POST tools/list (in the session)"
            } else {
                "POST tools/list"
            };
            let _ = self.post(label, &body, &headers, false).await;
        }
        let mut headers: Vec<(&str, String)> = version_header.iter().cloned().collect();
        headers.push(("mcp-session-id", MADE_UP_SESSION.to_owned()));
        let body = tools_list(self);
        let label = "POST tools/list (made-up session id)";
        if let Some(answer) = self.post(label, &body, &headers, false).await {
            let seen = StatusSeen {
                status: answer.status.as_u16(),
                answer: check::answer_line(answer.response.as_ref()),
            };
            if self.issues_sessions && answer.status != StatusCode::NOT_FOUND {
                self.report.deviate(Deviation::new(
                    format!(
                        "a request with an unknown session id was answered {}, not 404",
                        seen.status
                    ),
                    rules::UNKNOWN_SESSION,
                    Level::Must,
                    format!("{label}: {} {}", seen.status, seen.answer),
                ));
            }
            self.report.sessions.unknown_session = Some(seen);
        }
        if !self.issues_sessions {
            return;
        }
        let headers: Vec<(&str, String)> = version_header.iter().cloned().collect();
        let body = tools_list(self);
        let label = "POST tools/list (no session id)";
        if let Some(answer) = self.post(label, &body, &headers, false).await {
            let seen = StatusSeen {
                status: answer.status.as_u16(),
                answer: check::answer_line(answer.response.as_ref()),
            };
            if answer.status != StatusCode::BAD_REQUEST {
                self.report.deviate(Deviation::new(
                    format!(
                        "a request without a session id was answered {}, not 400",
                        seen.status
                    ),
                    rules::MISSING_SESSION,
                    Level::Should,
                    format!("{label}: {} {}", seen.status, seen.answer),
                ));
            }
            self.report.sessions.missing_session = Some(seen);
        }
    }

    /// Step 6 over the client's session.
    async fn client_tools(&mut self, client: &Client) {
        let Some(budget) = self.budget_capped("tools/list", self.options.timeout) else {
            return;
        };
        match tokio::time::timeout(budget, client.list_tools()).await {
            Ok(Ok(tools)) => {
                self.report.tools.via =
                    format!("tools/list in a {} session", client.protocol_version());
                self.analyse_tools(&tools);
            }
            Ok(Err(error)) => {
                self.report.tools.error = Some(cut(
                    &redact_with(&self.options.token, &format!("{}: {error}", error.kind())),
                    200,
                ));
            }
            Err(_) => {
                self.report.tools.error = Some("tools/list ran out of time".to_owned());
                self.out_of_time = true;
            }
        }
    }

    /// Step 6 over 2026-07-28 requests: the first page only (`all_pages` false), or every page.
    /// `None` when the first request got no answer.
    async fn modern_tools(&mut self, all_pages: bool) -> Option<Result<Vec<Tool>, String>> {
        let mut tools = Vec::new();
        let mut cursors = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        for page in 0..self.options.max_list_pages {
            let id = self.fresh_id("tools-list-probe");
            let mut params = json!({"_meta": Self::envelope()});
            if let Some(cursor) = &cursor {
                params["cursor"] = Value::String(cursor.clone());
            }
            let body =
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
            let headers = [
                ("mcp-protocol-version", MODERN.to_owned()),
                ("mcp-method", encode_header_value("tools/list")),
            ];
            let label = format!("POST tools/list ({MODERN})");
            let answer = self.post(&label, &body, &headers, true).await;
            if page > 0 {
                // Later pages are framed like the first: one line in the report is enough.
                self.report.replies.pop();
            }
            let answer = answer?;
            let Some(result) = answer.result() else {
                return Some(Err(format!(
                    "tools/list ({MODERN}) answered {} {}",
                    answer.status.as_u16(),
                    check::answer_line(answer.response.as_ref())
                )));
            };
            let Some(listed) = result.get("tools").and_then(Value::as_array) else {
                return Some(Err(format!(
                    "tools/list ({MODERN}) result has no tools array"
                )));
            };
            for value in listed {
                match serde_json::from_value::<Tool>(value.clone()) {
                    Ok(tool) => tools.push(tool),
                    Err(error) => {
                        return Some(Err(format!(
                            "tools/list ({MODERN}) holds a malformed tool: {}",
                            cut(&error.to_string(), 120)
                        )));
                    }
                }
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) if all_pages => {
                    if !cursors.insert(next.to_owned()) {
                        return Some(Err(format!(
                            "tools/list repeated the cursor {:?}",
                            cut(next, 60)
                        )));
                    }
                    cursor = Some(next.to_owned());
                }
                _ => return Some(Ok(tools)),
            }
        }
        Some(Err(format!(
            "tools/list has more than {} pages",
            self.options.max_list_pages
        )))
    }

    fn analyse_tools(&mut self, tools: &[Tool]) {
        self.report.tools.listed = true;
        for tool in tools {
            let (checked, deviations) = check::check_tool(tool);
            self.report.tools.tools.push(checked);
            for deviation in deviations {
                self.report.deviate(deviation);
            }
        }
        for deviation in check::check_unique_names(tools) {
            self.report.deviate(deviation);
        }
    }

    /// The legacy HTTP+SSE event stream's framing: its first event.
    async fn legacy_stream(&mut self) {
        let label = "GET (HTTP+SSE event stream)";
        let Some(request) = self.request(Method::GET, "text/event-stream", &[], Vec::new()) else {
            return;
        };
        let Some(budget) = self.budget_capped(label, LEGACY_STREAM_WAIT) else {
            return;
        };
        let first_event = |body: &[u8]| check::sse_framing(body).events > 0;
        let Some(reply) = self
            .fetch(label, request, 64 * 1024, budget, &first_event)
            .await
        else {
            return;
        };
        let _ = self.observe(label, reply, None, false);
        if let Some(seen) = self.report.replies.last_mut()
            && let Some(sse) = &seen.sse
        {
            seen.answer = if sse.other_event_types.iter().any(|t| t == "endpoint") {
                "an endpoint event first".to_owned()
            } else {
                "no endpoint event".to_owned()
            };
            if seen.end == "response read" {
                seen.end = "complete".to_owned();
            }
        }
    }

    /// Step 5: the protected-resource metadata, from the challenge's `resource_metadata` or
    /// the well-known URIs, fetched without credentials.
    async fn auth_metadata(&mut self) {
        let mut candidates: Vec<String> = self
            .report
            .auth
            .challenges
            .iter()
            .filter_map(|c| c.resource_metadata.clone())
            .collect();
        let named = !candidates.is_empty();
        let origin = format!(
            "{}://{}",
            self.uri.scheme_str().unwrap_or("http"),
            self.uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let path = self.uri.path().trim_end_matches('/');
        if !path.is_empty() {
            candidates.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
        candidates.dedup();
        for url in candidates.into_iter().take(4) {
            match self.get_metadata(&url).await {
                Ok(metadata) => {
                    let endpoint = self.options.url.trim_end_matches('/');
                    if let Some(resource) = &metadata.resource
                        && !endpoint.starts_with(resource.trim_end_matches('/'))
                    {
                        self.report.deviate(Deviation::new(
                            format!(
                                "the protected-resource metadata names resource {resource}, not \
                                 this endpoint"
                            ),
                            rules::METADATA_RESOURCE,
                            Level::Must,
                            format!("GET {url}: resource {resource:?}"),
                        ));
                    }
                    let server = metadata.authorization_servers.first().cloned();
                    self.report.auth.metadata = Some(metadata);
                    if let Some(issuer) = server {
                        self.report.auth.server_metadata = self.server_metadata(&issuer).await;
                    }
                    self.report.auth.extensions = extensions(&self.report.auth);
                    return;
                }
                Err(why) => self
                    .report
                    .auth
                    .metadata_tried
                    .push(format!("{url}: {why}")),
            }
        }
        if !named {
            self.report.deviate(Deviation::new(
                "no protected-resource metadata: the challenge names none and the \
                       well-known URIs serve none"
                    .to_owned(),
                rules::RESOURCE_METADATA,
                Level::Must,
                self.report.auth.metadata_tried.join("; "),
            ));
        }
    }

    /// The authorization server `issuer`'s metadata: RFC 8414's path-aware well-known URL,
    /// then OpenID discovery's, fetched as the resource metadata is; `None` when neither
    /// serves a JSON document.
    async fn server_metadata(&mut self, issuer: &str) -> Option<ServerMetadata> {
        let uri: Uri = issuer.parse().ok()?;
        let origin = format!("{}://{}", uri.scheme_str()?, uri.authority()?.as_str());
        let path = uri.path().trim_end_matches('/');
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ];
        for url in candidates {
            let Ok(document) = self
                .get_json(&url, "the authorization server metadata")
                .await
            else {
                continue;
            };
            return Some(ServerMetadata {
                url,
                issuer: document
                    .get("issuer")
                    .and_then(Value::as_str)
                    .map(|s| cut(s, 200)),
                grant_types_supported: strings(&document, "grant_types_supported"),
                token_endpoint_auth_methods_supported: strings(
                    &document,
                    "token_endpoint_auth_methods_supported",
                ),
                dpop_signing_alg_values_supported: strings(
                    &document,
                    "dpop_signing_alg_values_supported",
                ),
            });
        }
        None
    }

    /// Fetches one metadata document: https, or http on a loopback host; never with a token.
    async fn get_metadata(&mut self, url: &str) -> Result<ResourceMetadata, String> {
        let document = self.get_json(url, "the resource metadata").await?;
        Ok(ResourceMetadata {
            url: url.to_owned(),
            resource: document
                .get("resource")
                .and_then(Value::as_str)
                .map(|s| cut(s, 200)),
            authorization_servers: strings(&document, "authorization_servers"),
            scopes_supported: strings(&document, "scopes_supported"),
            bearer_methods_supported: strings(&document, "bearer_methods_supported"),
            dpop_bound_access_tokens_required: document
                .get("dpop_bound_access_tokens_required")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            dpop_signing_alg_values_supported: strings(
                &document,
                "dpop_signing_alg_values_supported",
            ),
        })
    }

    /// GETs one JSON document (`what`, for the time budget): https, or http on a loopback
    /// host; never with a token; a 200 with JSON, else why not.
    async fn get_json(&mut self, url: &str, what: &str) -> Result<Value, String> {
        let uri: Uri = url.parse().map_err(|_| "not a URL".to_owned())?;
        let loopback = matches!(
            uri.host(),
            Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
        );
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if loopback => {}
            _ => return Err("not fetched: only https or loopback http".to_owned()),
        }
        let request = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|_| "the request could not be built".to_owned())?;
        let budget = self.budget(what).ok_or_else(|| "no time left".to_owned())?;
        let reply = match self
            .pool
            .fetch(request, MAX_METADATA_BYTES, budget, &|_| false)
            .await
        {
            Ok(reply) => reply,
            Err(TransportError::Connect(e) | TransportError::Lost(e)) => return Err(cut(&e, 100)),
        };
        if reply.status != StatusCode::OK {
            return Err(reply.status.as_u16().to_string());
        }
        serde_json::from_slice(&reply.body).map_err(|_| "200 but not JSON".to_owned())
    }

    /// The server summary when the client's session gave none: a raw initialize's, else a
    /// DiscoverResult's.
    fn fill_server(&mut self) {
        if self.report.server.is_some() {
            return;
        }
        let (result, source) = match (&self.initialize_server, &self.discover_result) {
            (Some(result), _) => (result, "initialize"),
            (None, Some(result)) => (result, "server/discover"),
            (None, None) => return,
        };
        let info = result
            .get("serverInfo")
            .or_else(|| {
                result
                    .get("_meta")
                    .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
            })
            .cloned()
            .unwrap_or_default();
        let text = |key: &str| info.get(key).and_then(Value::as_str).map(|s| cut(s, 100));
        self.report.server = Some(ServerSummary {
            name: text("name").unwrap_or_default(),
            version: text("version").unwrap_or_default(),
            title: text("title"),
            capabilities: capability_names(result.get("capabilities").unwrap_or(&Value::Null)),
            instructions: result.get("instructions").is_some(),
            source: source.to_owned(),
        });
    }
}

fn redact_with(token: &Option<Secret>, text: &str) -> String {
    match token {
        Some(token) => token.redact(text),
        None => text.to_owned(),
    }
}

fn capability_names(capabilities: &Value) -> Vec<String> {
    capabilities
        .as_object()
        .map(|c| c.keys().take(32).map(|k| cut(k, 40)).collect())
        .unwrap_or_default()
}

/// Whether an event-stream body read so far holds the response to request `id` (so the probe
/// need not wait for a server that keeps the stream open).
fn sse_has_response(body: &[u8], id: &str) -> bool {
    let ends_event =
        body.ends_with(b"\n\n") || body.ends_with(b"\r\n\r\n") || body.ends_with(b"\r\r");
    if !ends_event || id.is_empty() {
        return false;
    }
    let (messages, _) = check::messages(&BodyKind::EventStream, body);
    messages
        .iter()
        .any(|m| check::is_response(m) && m.get("id").and_then(Value::as_str) == Some(id))
}

/// The strings of the array `key` of `document` (at most 32, each cut to 200 characters).
fn strings(document: &Value, key: &str) -> Vec<String> {
    document
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .take(32)
                .map(|s| cut(s, 200))
                .collect()
        })
        .unwrap_or_default()
}

/// The authorization extensions `auth` shows: DPoP (RFC 9449, from the challenges and both
/// metadata documents), client credentials, and the JWT-bearer grant (RFC 7523) that
/// workload identity federation and enterprise-managed authorization use.
fn extensions(auth: &Authorization) -> Vec<String> {
    let mut found = Vec::new();
    let dpop_challenge = auth
        .challenges
        .iter()
        .any(|c| c.scheme.eq_ignore_ascii_case("dpop"));
    let resource = auth.metadata.as_ref();
    let server = auth.server_metadata.as_ref();
    let server_algs = server
        .map(|s| s.dpop_signing_alg_values_supported.clone())
        .unwrap_or_default();
    let required = resource.is_some_and(|m| m.dpop_bound_access_tokens_required);
    if dpop_challenge || required || !server_algs.is_empty() {
        let mut line = "io.modelcontextprotocol/auth/dpop: DPoP-bound tokens".to_owned();
        if !server_algs.is_empty() {
            line.push_str(&format!(
                " (authorization server algorithms {})",
                server_algs.join(", ")
            ));
        }
        if required {
            line.push_str("; required by the resource");
        } else if dpop_challenge {
            line.push_str("; the challenge offers the DPoP scheme");
        }
        found.push(line);
    }
    let grants = server
        .map(|s| s.grant_types_supported.as_slice())
        .unwrap_or_default();
    if grants.iter().any(|g| g == "client_credentials") {
        found.push(
            "io.modelcontextprotocol/oauth-client-credentials: the client credentials grant"
                .to_owned(),
        );
    }
    if grants
        .iter()
        .any(|g| g == crate::auth::assertion::JWT_BEARER)
    {
        found.push(
            "io.modelcontextprotocol/auth/wif and io.modelcontextprotocol/enterprise-managed-authorization: \
             the JWT-bearer grant (a workload token, or an ID-JAG from an enterprise IdP)"
                .to_owned(),
        );
    }
    found
}
