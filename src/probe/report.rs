//! What the probe found, as data ([`ProbeReport`], serialisable for `--json`) and as text for a
//! person ([`ProbeReport::render`]).

use std::fmt::Write as _;

use serde::Serialize;

/// Everything the probe learned about one server, step by step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ProbeReport {
    /// The endpoint probed, as given.
    pub url: String,
    /// Whether the server answered at all (any HTTP response). `false`: nothing could be probed.
    pub reachable: bool,
    /// Whether every step ran (the probe's deadline did not cut it short).
    pub completed: bool,
    /// Who the server says it is (from `initialize`, else from `server/discover`).
    pub server: Option<ServerSummary>,
    /// The protocol eras and revisions it speaks.
    pub eras: Eras,
    /// Every request the probe made itself, and how its reply was framed.
    pub replies: Vec<ReplySeen>,
    /// Every 429 or 503 the server answered one of the probe's own requests with: its
    /// `Retry-After`, and whether the probe waited and sent the request again or gave up.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overload: Vec<OverloadSeen>,
    /// How it handles `Mcp-Session-Id`.
    pub sessions: Sessions,
    /// Whether it needs credentials, and what its challenge and metadata say.
    pub auth: Authorization,
    /// Its tools and their schema problems.
    pub tools: Tools,
    /// Every place the server broke a rule of the specification, with the rule and the evidence.
    pub deviations: Vec<Deviation>,
    /// Steps that were skipped or could not finish, and why.
    pub notes: Vec<String>,
}

/// Who the server says it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ServerSummary {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// `serverInfo.title`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The capability names it declares (`tools`, `resources`, ...).
    pub capabilities: Vec<String>,
    /// Whether it sent `instructions`.
    pub instructions: bool,
    /// Which answer this came from: `initialize` or `server/discover`.
    pub source: String,
}

/// The protocol eras the server speaks.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Eras {
    /// What `server/discover` (protocol 2026-07-28) said.
    pub modern: ModernEra,
    /// What the 2025-era handshake (`initialize`) said.
    pub legacy: LegacyEra,
}

/// The answer to the 2026-07-28 `server/discover` probe, classified as a 2026 client would.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ModernEra {
    /// `Some(true)`: speaks 2026-07-28; `Some(false)`: a 2025-era server; `None`: no verdict
    /// (credentials needed, a server error, no answer).
    pub speaks_2026_07_28: Option<bool>,
    /// The verdict and what it rests on, in a line.
    pub verdict: String,
    /// `supportedVersions` of a DiscoverResult, or `data.supported` of a -32022 error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supported_versions: Vec<String>,
    /// The capability names a DiscoverResult declares.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// The 2025-era (initialize handshake) side.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LegacyEra {
    /// The revision the library client negotiated offering 2025-11-25, if it connected.
    pub negotiated: Option<String>,
    /// The transport that session used: `streamable-http`, or `http+sse` (the 2024-11-05
    /// transport, reached by the fallback).
    pub transport: Option<String>,
    /// Whether the client had to fall back to the legacy HTTP+SSE transport.
    pub legacy_fallback: bool,
    /// Why the client could not connect, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_error: Option<String>,
    /// What each 2025 revision offered in a raw `initialize` was answered with.
    pub offers: Vec<VersionOffer>,
}

/// One raw `initialize` offering a revision.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct VersionOffer {
    /// The revision offered.
    pub offered: String,
    /// The `protocolVersion` answered, if the server answered with a result.
    pub answered: Option<String>,
    /// The HTTP status, if any.
    pub status: Option<u16>,
    /// A JSON-RPC error or a transport failure, in a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl LegacyEra {
    /// The offered revisions the server answered with the same revision.
    pub fn accepted(&self) -> Vec<&str> {
        self.offers
            .iter()
            .filter(|o| o.answered.as_deref() == Some(o.offered.as_str()))
            .map(|o| o.offered.as_str())
            .collect()
    }
}

/// One request the probe made itself, and its reply.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ReplySeen {
    /// What was sent, e.g. `POST initialize 2025-11-25`.
    pub request: String,
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header as sent, if any.
    pub content_type: Option<String>,
    /// `json`, `sse`, `empty` or `other`.
    pub body: String,
    /// How many body bytes were read.
    pub bytes: usize,
    /// Why reading stopped: `complete`, `response read` (the stream was left once the response
    /// was in), `limit`, `deadline` or `broke: ...`.
    pub end: String,
    /// Whether the reply carried an `Mcp-Session-Id` header.
    pub session_id: bool,
    /// The framing of an event-stream body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sse: Option<SseFraming>,
    /// The JSON-RPC answer in a line: `result`, `error CODE MESSAGE`, or what was there instead.
    pub answer: String,
}

/// A 429 or 503 answer to one of the probe's requests, and what the probe did about it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OverloadSeen {
    /// What was sent, as in [`ReplySeen::request`].
    pub request: String,
    /// 429 or 503.
    pub status: u16,
    /// The server's `Retry-After`, as a wait in seconds (an HTTP-date measured from the
    /// response's `Date`), when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// Which attempt this answered (1 for the first sending).
    pub attempt: u32,
    /// How long the probe waited before sending the request again; `None` when it gave up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
    /// `sent again after N ms`, or `given up` and why.
    pub outcome: String,
}

/// How an event-stream body was framed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SseFraming {
    /// `LF`, `CRLF`, `CR`, `mixed (...)`, or `none`.
    pub line_endings: String,
    /// Events with a `data` field (what a decoder dispatches).
    pub events: usize,
    /// Events with an `id` and empty data: priming events (SEP-1699).
    pub priming_events: usize,
    /// Events with empty data and no `id`: nothing to resume from.
    pub empty_events_without_id: usize,
    /// Events carrying an `id` field.
    pub events_with_id: usize,
    /// The last `retry` value, in milliseconds.
    pub retry_ms: Option<u64>,
    /// Comment lines (`: ...`).
    pub comments: usize,
    /// Event types other than `message`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_event_types: Vec<String>,
}

/// How the server handles session ids.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Sessions {
    /// The shape of the first `Mcp-Session-Id` it gave (never the value), if it gave one.
    pub session_id: Option<SessionIdSeen>,
    /// The answer to a request carrying a made-up session id.
    pub unknown_session: Option<StatusSeen>,
    /// The answer to a request without a session id, for a server that gives them.
    pub missing_session: Option<StatusSeen>,
}

/// What a session id looked like.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SessionIdSeen {
    /// Its length in bytes.
    pub length: usize,
    /// `uuid`, `hex` or `other`.
    pub shape: String,
    /// Whether every byte is visible ASCII (0x21 to 0x7E), as the spec requires.
    pub visible_ascii: bool,
}

/// An HTTP status and the JSON-RPC error that came with it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StatusSeen {
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC answer in a line.
    pub answer: String,
}

/// Whether the server needs credentials.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Authorization {
    /// Whether a request was refused with 401 or 403.
    pub required: bool,
    /// That status.
    pub status: Option<u16>,
    /// Whether the probe sent a bearer token (from `--token-env`).
    pub token_sent: bool,
    /// The `WWW-Authenticate` challenges of the refusal.
    pub challenges: Vec<Challenge>,
    /// The protected-resource metadata (RFC 9728), if it was found.
    pub metadata: Option<ResourceMetadata>,
    /// Where the metadata was looked for and what came back, when it was not found.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metadata_tried: Vec<String>,
    /// The first authorization server's metadata (RFC 8414, else OpenID discovery), if the
    /// protected-resource metadata names one and it was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metadata: Option<ServerMetadata>,
    /// The authorization extensions the metadata and challenges advertise (DPoP, client
    /// credentials, the JWT-bearer grant of workload identity federation and
    /// enterprise-managed authorization), one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// An authorization server's metadata (RFC 8414) in short: what says which grants and
/// token kinds it offers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerMetadata {
    /// Where it was fetched.
    pub url: String,
    /// `issuer`.
    pub issuer: Option<String>,
    /// `grant_types_supported`.
    pub grant_types_supported: Vec<String>,
    /// `token_endpoint_auth_methods_supported`.
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// `dpop_signing_alg_values_supported` (RFC 9449 section 5.1).
    pub dpop_signing_alg_values_supported: Vec<String>,
}

/// One `WWW-Authenticate` challenge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Challenge {
    /// The auth scheme, e.g. `Bearer`.
    pub scheme: String,
    /// `resource_metadata`: where the protected-resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs.
    pub scope: Option<String>,
    /// `error`, e.g. `invalid_token`, `insufficient_scope`.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
    /// `realm`.
    pub realm: Option<String>,
}

/// The protected-resource metadata (RFC 9728) in short.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// Where it was fetched.
    pub url: String,
    /// `resource`.
    pub resource: Option<String>,
    /// `authorization_servers`.
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`.
    pub scopes_supported: Vec<String>,
    /// `bearer_methods_supported`.
    pub bearer_methods_supported: Vec<String>,
    /// `dpop_bound_access_tokens_required` (RFC 9728 section 2, RFC 9449).
    pub dpop_bound_access_tokens_required: bool,
    /// `dpop_signing_alg_values_supported` (RFC 9728 section 2).
    pub dpop_signing_alg_values_supported: Vec<String>,
}

/// The server's tools.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Tools {
    /// Whether the list was read (every page).
    pub listed: bool,
    /// How: `tools/list in a 2025-11-25 session`, `tools/list (2026-07-28)`, ...
    pub via: String,
    /// Why it could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// One entry per tool, in the server's order.
    pub tools: Vec<ToolCheck>,
}

/// One tool and what is wrong with it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolCheck {
    /// Its name.
    pub name: String,
    /// `ok`, or why `inputSchema` is unusable.
    pub input_schema: String,
    /// Whether it declares an `outputSchema` (a tool with structured results should; which
    /// tools return `structuredContent` cannot be known without calling them).
    pub declares_output_schema: bool,
    /// `ok` or why the `outputSchema` is unusable; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// The `Mcp-Param-*` headers its `x-mcp-header` annotations ask for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub param_headers: Vec<String>,
    /// Everything wrong with it (name rule, schemas, annotations).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// How strong the broken rule is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
#[non_exhaustive]
pub enum Level {
    /// A MUST (or MUST NOT) of the specification.
    Must,
    /// A SHOULD (or SHOULD NOT).
    Should,
}

/// One rule the server broke on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Deviation {
    /// What the server did, in a line.
    pub what: String,
    /// The rule: spec file, section, and what it says.
    pub rule: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// What was seen the first time: the request and an excerpt of the reply.
    pub evidence: String,
    /// How many times it was seen.
    pub occurrences: usize,
}

impl Deviation {
    /// A deviation seen once.
    pub(crate) fn new(what: String, rule: &str, level: Level, evidence: String) -> Self {
        Deviation {
            what,
            rule: rule.to_owned(),
            level,
            evidence,
            occurrences: 1,
        }
    }
}

impl ProbeReport {
    /// The report as one pretty-printed JSON document (the `--json` output).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Adds a deviation, or counts it again when the same one (what and rule) is listed.
    pub(crate) fn deviate(&mut self, deviation: Deviation) {
        match self
            .deviations
            .iter_mut()
            .find(|d| d.what == deviation.what && d.rule == deviation.rule)
        {
            Some(seen) => seen.occurrences += deviation.occurrences,
            None => self.deviations.push(deviation),
        }
    }

    /// The report for a person: short sections, one fact a line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "mcpwire probe {}", self.url);
        if !self.reachable {
            section(&mut out, "Server", &["not reachable".to_owned()]);
            notes(&mut out, &self.notes);
            return out;
        }
        section(&mut out, "Server", &self.server_lines());
        section(&mut out, "Eras", &self.era_lines());
        section(&mut out, "Replies", &self.reply_lines());
        if !self.overload.is_empty() {
            section(&mut out, "Overload", &self.overload_lines());
        }
        section(&mut out, "Sessions", &self.session_lines());
        section(&mut out, "Auth", &self.auth_lines());
        section(&mut out, "Tools", &self.tool_lines());
        section(&mut out, "Deviations", &self.deviation_lines());
        notes(&mut out, &self.notes);
        out
    }

    fn server_lines(&self) -> Vec<String> {
        match &self.server {
            None => vec!["(no serverInfo seen)".to_owned()],
            Some(server) => {
                let mut name = format!("{} {}", server.name, server.version);
                if let Some(title) = &server.title {
                    let _ = write!(name, " ({title:?})");
                }
                let _ = write!(name, ", from {}", server.source);
                let mut capabilities = format!("capabilities: {}", list(&server.capabilities));
                if server.instructions {
                    capabilities.push_str("; sends instructions");
                }
                vec![name, capabilities]
            }
        }
    }

    fn era_lines(&self) -> Vec<String> {
        let modern = &self.eras.modern;
        let mut lines = vec![format!(
            "2026-07-28: {}",
            match modern.speaks_2026_07_28 {
                Some(true) => format!("yes ({})", modern.verdict),
                Some(false) => format!("no ({})", modern.verdict),
                None => format!("unknown ({})", modern.verdict),
            }
        )];
        let legacy = &self.eras.legacy;
        let accepted = legacy.accepted();
        let mut line = String::from("2025: ");
        match (&legacy.negotiated, &legacy.connect_error) {
            (Some(version), _) => {
                let _ = write!(
                    line,
                    "{version} negotiated over {}",
                    legacy.transport.as_deref().unwrap_or("?")
                );
                if legacy.legacy_fallback {
                    line.push_str(" (the HTTP+SSE fallback)");
                }
            }
            (None, Some(error)) => {
                let _ = write!(line, "no session ({error})");
            }
            (None, None) => line.push_str("not tried"),
        }
        lines.push(line);
        if !legacy.offers.is_empty() {
            // Offers answered alike are named together: "2025-06-18, 2025-03-26 -> 404 ...".
            let mut others: Vec<(String, Vec<&str>)> = Vec::new();
            for offer in legacy
                .offers
                .iter()
                .filter(|o| o.answered.as_deref() != Some(o.offered.as_str()))
            {
                let outcome = match (&offer.answered, offer.status, &offer.error) {
                    (Some(answered), _, _) => answered.clone(),
                    (None, Some(status), Some(error)) => format!("{status} {error}"),
                    (None, Some(status), None) => status.to_string(),
                    (None, None, error) => error.clone().unwrap_or_else(|| "?".to_owned()),
                };
                match others.iter_mut().find(|(o, _)| *o == outcome) {
                    Some((_, offered)) => offered.push(&offer.offered),
                    None => others.push((outcome, vec![&offer.offered])),
                }
            }
            let mut line = format!("initialize accepts: {}", list_str(&accepted));
            for (outcome, offered) in others {
                let _ = write!(line, "; {} -> {outcome}", offered.join(", "));
            }
            lines.push(line);
        }
        lines
    }

    fn overload_lines(&self) -> Vec<String> {
        self.overload
            .iter()
            .map(|seen| {
                let after = seen.retry_after_seconds.map_or_else(
                    || "no Retry-After".to_owned(),
                    |s| format!("Retry-After {s} s"),
                );
                format!(
                    "{}  attempt {}: {} ({after}) -> {}",
                    seen.request, seen.attempt, seen.status, seen.outcome
                )
            })
            .collect()
    }

    fn reply_lines(&self) -> Vec<String> {
        if self.replies.is_empty() {
            return vec!["(none)".to_owned()];
        }
        let width = self
            .replies
            .iter()
            .map(|r| r.request.len())
            .max()
            .unwrap_or(0);
        self.replies
            .iter()
            .map(|reply| {
                let mut line = format!("{:width$}  {}", reply.request, reply.status);
                match (&reply.content_type, reply.body.as_str()) {
                    (_, "empty") => line.push_str(" empty"),
                    (Some(content_type), _) => {
                        let _ = write!(line, " {content_type}");
                    }
                    (None, _) => line.push_str(" (no Content-Type)"),
                }
                if let Some(sse) = &reply.sse {
                    let _ = write!(line, ", {}, {} event(s)", sse.line_endings, sse.events);
                    if sse.priming_events > 0 {
                        let _ = write!(line, ", {} priming", sse.priming_events);
                    }
                    if sse.events_with_id > 0 {
                        let _ = write!(line, ", ids");
                    }
                    if let Some(retry) = sse.retry_ms {
                        let _ = write!(line, ", retry {retry} ms");
                    }
                }
                if !reply.answer.is_empty() {
                    let _ = write!(line, ": {}", reply.answer);
                }
                if !matches!(reply.end.as_str(), "complete" | "response read") {
                    let _ = write!(line, " [{}]", reply.end);
                }
                line
            })
            .collect()
    }

    fn session_lines(&self) -> Vec<String> {
        let sessions = &self.sessions;
        let mut lines = Vec::new();
        if self.eras.legacy.legacy_fallback {
            return vec![
                "HTTP+SSE transport: the session is the endpoint event's URL (not checked)"
                    .to_owned(),
            ];
        }
        if sessions.session_id.is_none() && sessions.unknown_session.is_none() {
            return vec!["not checked".to_owned()];
        }
        match &sessions.session_id {
            Some(id) => lines.push(format!(
                "Mcp-Session-Id: {} bytes, {}, {}",
                id.length,
                id.shape,
                if id.visible_ascii {
                    "visible ASCII"
                } else {
                    "NOT visible ASCII"
                }
            )),
            None => lines.push("no Mcp-Session-Id (stateless)".to_owned()),
        }
        if let Some(seen) = &sessions.unknown_session {
            lines.push(format!(
                "made-up session id: {} {}",
                seen.status, seen.answer
            ));
        }
        if let Some(seen) = &sessions.missing_session {
            lines.push(format!("no session id: {} {}", seen.status, seen.answer));
        }
        lines
    }

    fn auth_lines(&self) -> Vec<String> {
        let auth = &self.auth;
        if !auth.required {
            return vec![format!(
                "no credentials needed{}",
                if auth.token_sent {
                    " (a token was sent)"
                } else {
                    ""
                }
            )];
        }
        let mut lines = vec![format!(
            "{} {}",
            auth.status.map_or_else(String::new, |s| s.to_string()),
            if auth.token_sent {
                "with the token given"
            } else {
                "without a token"
            }
        )];
        for challenge in &auth.challenges {
            let mut line = format!("WWW-Authenticate: {}", challenge.scheme);
            for (key, value) in [
                ("resource_metadata", &challenge.resource_metadata),
                ("scope", &challenge.scope),
                ("error", &challenge.error),
                ("error_description", &challenge.error_description),
                ("realm", &challenge.realm),
            ] {
                if let Some(value) = value {
                    let _ = write!(line, " {key}={value:?}");
                }
            }
            lines.push(line);
        }
        if auth.challenges.is_empty() {
            lines.push("no WWW-Authenticate challenge".to_owned());
        }
        match &auth.metadata {
            Some(metadata) => {
                lines.push(format!("metadata {}", metadata.url));
                lines.push(format!(
                    "  resource {}; authorization servers {}; scopes {}",
                    metadata.resource.as_deref().unwrap_or("(none)"),
                    list(&metadata.authorization_servers),
                    list(&metadata.scopes_supported)
                ));
            }
            None => lines.push(format!(
                "no protected-resource metadata ({})",
                if auth.metadata_tried.is_empty() {
                    "nowhere to look".to_owned()
                } else {
                    auth.metadata_tried.join("; ")
                }
            )),
        }
        if let Some(server) = &auth.server_metadata {
            lines.push(format!("authorization server metadata {}", server.url));
            lines.push(format!(
                "  grants {}; token endpoint methods {}; DPoP algorithms {}",
                list(&server.grant_types_supported),
                list(&server.token_endpoint_auth_methods_supported),
                list(&server.dpop_signing_alg_values_supported)
            ));
        }
        for extension in &auth.extensions {
            lines.push(format!("extension {extension}"));
        }
        lines
    }

    fn tool_lines(&self) -> Vec<String> {
        let tools = &self.tools;
        if !tools.listed {
            return vec![format!(
                "not listed{}",
                tools
                    .error
                    .as_ref()
                    .map_or_else(String::new, |e| format!(" ({e})"))
            )];
        }
        let mut lines = vec![format!("{} tool(s), via {}", tools.tools.len(), tools.via)];
        let width = tools.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for tool in &tools.tools {
            let mut line = format!("{:width$}  ", tool.name);
            if tool.problems.is_empty() {
                line.push_str("ok");
            } else {
                line.push_str(&tool.problems.join("; "));
            }
            line.push_str(if tool.declares_output_schema {
                "; outputSchema"
            } else {
                "; no outputSchema"
            });
            if !tool.param_headers.is_empty() {
                let _ = write!(line, "; headers {}", tool.param_headers.join(", "));
            }
            lines.push(line);
        }
        lines
    }

    fn deviation_lines(&self) -> Vec<String> {
        if self.deviations.is_empty() {
            return vec!["none seen".to_owned()];
        }
        let mut lines = Vec::new();
        for (number, deviation) in self.deviations.iter().enumerate() {
            let level = match deviation.level {
                Level::Must => "MUST",
                Level::Should => "SHOULD",
            };
            let times = match deviation.occurrences {
                0 | 1 => String::new(),
                n => format!(" ({n} times)"),
            };
            lines.push(format!(
                "{}. [{level}] {}{times}",
                number + 1,
                deviation.what
            ));
            lines.push(format!("   rule: {}", deviation.rule));
            lines.push(format!("   seen: {}", deviation.evidence));
        }
        lines
    }
}

/// The width of the section names, so the facts line up.
const LABEL_WIDTH: usize = 12;

fn section(out: &mut String, name: &str, lines: &[String]) {
    for (index, line) in lines.iter().enumerate() {
        let label = if index == 0 { name } else { "" };
        let _ = writeln!(out, "{label:LABEL_WIDTH$}{line}");
    }
}

fn notes(out: &mut String, notes: &[String]) {
    if !notes.is_empty() {
        section(out, "Notes", notes);
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

fn list_str(items: &[&str]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}
