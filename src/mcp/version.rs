//! Protocol revisions: their names on the wire and what each one defines.

use std::fmt;

/// The newest revision this crate implements: `"2026-07-28"` (schema
/// `LATEST_PROTOCOL_VERSION`), the stateless one a client probes with `server/discover`.
#[cfg(test)]
pub(crate) const LATEST: &str = V2026_07_28;

/// The newest revision with an `initialize` handshake, the one a client offers there:
/// `"2025-11-25"`.
#[cfg(test)]
pub(crate) const LATEST_INITIALIZE: &str = V2025_11_25;

/// Revision 2026-07-28: stateless. No `initialize` handshake and no session: every request
/// carries the revision, the client's capabilities and its identity in `_meta`; a client may
/// ask `server/discover` what a server offers; results carry `resultType`, and a server that
/// needs input answers `input_required` instead of sending requests; Streamable HTTP mirrors
/// the method, the name and annotated arguments in `Mcp-*` headers
/// (`docs/specification/2026-07-28/changelog.mdx`).
pub(crate) const V2026_07_28: &str = "2026-07-28";

/// Revision 2025-11-25: adds icons, tasks (experimental), URL-mode elicitation, tool
/// `execution`, `Implementation.description` / `websiteUrl`, and error `-32042`
/// (`docs/specification/2025-11-25/changelog.mdx`).
pub(crate) const V2025_11_25: &str = "2025-11-25";

/// Revision 2025-06-18: adds structured tool output, resource links, elicitation, `title`
/// fields, wider `_meta`, the `MCP-Protocol-Version` HTTP header, and removes JSON-RPC
/// batching (`docs/specification/2025-06-18/changelog.mdx`).
pub(crate) const V2025_06_18: &str = "2025-06-18";

/// Revision 2025-03-26: introduces the Streamable HTTP transport, JSON-RPC batching, tool
/// annotations, audio content and the progress `message` field
/// (`docs/specification/2025-03-26/changelog.mdx`).
pub(crate) const V2025_03_26: &str = "2025-03-26";

/// Revision 2024-11-05: the legacy HTTP+SSE transport (a GET event stream plus a POST
/// endpoint announced by an `endpoint` event), kept only as a fallback.
pub(crate) const V2024_11_05: &str = "2024-11-05";

/// The stateless revisions this crate speaks, newest first: what a client probes with and
/// accepts from `server/discover`.
pub(crate) const MODERN: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

/// The revisions a Streamable HTTP client accepts in an `initialize` reply, newest first.
///
/// A client offers [`LATEST_INITIALIZE`]; a server that does not support it answers with another
/// revision, and a client that does not support that one disconnects
/// (`basic/lifecycle.mdx`, "Version Negotiation"). 2024-11-05 is not here: it belongs to the
/// legacy HTTP+SSE transport, which is a different connection procedure.
pub(crate) const SUPPORTED: [ProtocolVersion; 3] = [
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_03_26,
];

/// A known MCP protocol revision. Ordered by date, so `a < b` means `a` is older.
///
/// Decoding in this module never depends on the revision: servers send fields of newer
/// revisions on older sessions (the Python SDK sends `structuredContent` on a 2025-03-26
/// session), and every field is kept. The `has_*` / `requires_*` helpers say what a revision
/// *defines*, for callers that must decide what to send or what to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2024-11-05, legacy HTTP+SSE transport.
    V2024_11_05,
    /// 2025-03-26, the first Streamable HTTP revision.
    V2025_03_26,
    /// 2025-06-18.
    V2025_06_18,
    /// 2025-11-25, the last revision with an `initialize` handshake.
    V2025_11_25,
    /// 2026-07-28, the stateless revision; the latest.
    V2026_07_28,
}

impl ProtocolVersion {
    /// The newest revision, `LATEST`.
    #[cfg(test)]
    pub(crate) const LATEST: Self = Self::V2026_07_28;

    /// The newest revision with an `initialize` handshake, `LATEST_INITIALIZE`.
    pub const LATEST_INITIALIZE: Self = Self::V2025_11_25;

    /// Every known revision, oldest first.
    pub const ALL: [Self; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The revision's name on the wire, such as `"2025-11-25"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => V2024_11_05,
            Self::V2025_03_26 => V2025_03_26,
            Self::V2025_06_18 => V2025_06_18,
            Self::V2025_11_25 => V2025_11_25,
            Self::V2026_07_28 => V2026_07_28,
        }
    }

    /// The revision named `s` exactly (no trimming, no case folding), or `None` if unknown.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether a Streamable HTTP client accepts this revision in an `initialize` reply: one of
    /// `SUPPORTED`.
    pub const fn is_supported(self) -> bool {
        matches!(
            self,
            Self::V2025_03_26 | Self::V2025_06_18 | Self::V2025_11_25
        )
    }

    /// Whether the revision is stateless (2026-07-28 and later): no `initialize`, no session,
    /// the `_meta` envelope on every request (`2026-07-28/basic/versioning.mdx`).
    pub const fn is_modern(self) -> bool {
        self.at_least(Self::V2026_07_28)
    }

    /// Whether this revision is `other` or newer.
    const fn at_least(self, other: Self) -> bool {
        self as u8 >= other as u8
    }

    #[cfg(test)]
    /// Whether the revision's HTTP transport is Streamable HTTP (2025-03-26 and later); 2024-11-05
    /// uses HTTP+SSE (`2025-03-26/basic/transports.mdx`, "Backwards Compatibility").
    pub(crate) const fn uses_streamable_http(self) -> bool {
        !matches!(self, Self::V2024_11_05)
    }

    /// Whether a client must send `MCP-Protocol-Version: <negotiated>` on every HTTP request
    /// after `initialize` (2025-06-18 and later; `2025-06-18/basic/transports.mdx`, "Protocol
    /// Version Header"). 2025-03-26 does not define the header: a server that receives none
    /// assumes 2025-03-26, and one that receives an unsupported value answers 400.
    pub const fn requires_protocol_version_header(self) -> bool {
        self.at_least(Self::V2025_06_18)
    }

    /// Whether a message may be a JSON-RPC batch (an array). Only 2025-03-26 allows it: batching
    /// was added there and removed in 2025-06-18 (`2025-06-18/changelog.mdx`, item 1).
    pub const fn allows_batching(self) -> bool {
        matches!(self, Self::V2025_03_26)
    }

    #[cfg(test)]
    /// Whether the revision defines `Tool.outputSchema` and `CallToolResult.structuredContent`
    /// (2025-06-18 and later; `2025-06-18/server/tools.mdx`, "Structured Content").
    pub(crate) const fn has_structured_content(self) -> bool {
        self.at_least(Self::V2025_06_18)
    }

    #[cfg(test)]
    /// Whether the revision defines the `resource_link` content block (2025-06-18 and later).
    pub(crate) const fn has_resource_links(self) -> bool {
        self.at_least(Self::V2025_06_18)
    }

    #[cfg(test)]
    /// Whether the revision defines `elicitation/create` (2025-06-18 and later).
    pub(crate) const fn has_elicitation(self) -> bool {
        self.at_least(Self::V2025_06_18)
    }

    #[cfg(any(test, feature = "client"))]
    /// Whether the revision defines URL-mode elicitation and error `-32042` (2025-11-25).
    pub(crate) const fn has_url_elicitation(self) -> bool {
        // 2026-07-28 retired -32042 with server-to-client requests.
        matches!(self, Self::V2025_11_25)
    }

    #[cfg(test)]
    /// Whether the revision defines tasks (`tasks/*`, `CallToolRequestParams.task`,
    /// `Tool.execution`; 2025-11-25, experimental).
    pub(crate) const fn has_tasks(self) -> bool {
        self.at_least(Self::V2025_11_25)
    }

    #[cfg(test)]
    /// Whether the revision defines `icons` on implementations, tools, resources and prompts
    /// (2025-11-25, SEP-973).
    pub(crate) const fn has_icons(self) -> bool {
        self.at_least(Self::V2025_11_25)
    }

    #[cfg(test)]
    /// Whether the revision defines `title` on tools, resources, prompts and implementations
    /// (2025-06-18 and later).
    pub(crate) const fn has_titles(self) -> bool {
        self.at_least(Self::V2025_06_18)
    }

    #[cfg(test)]
    /// Whether the revision defines tool annotations (`readOnlyHint` and friends), audio content,
    /// the progress `message` field and the `completions` capability (2025-03-26 and later).
    pub(crate) const fn has_tool_annotations(self) -> bool {
        self.uses_streamable_http()
    }

    #[cfg(test)]
    /// Whether `notifications/cancelled` must carry `requestId` (every revision before
    /// 2025-11-25; from 2025-11-25 it is optional because tasks are cancelled with
    /// `tasks/cancel` instead).
    pub(crate) const fn cancel_requires_request_id(self) -> bool {
        !self.at_least(Self::V2025_11_25)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(deserializer)?;
        Self::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format_args!("unknown MCP protocol version {s:?}"))
        })
    }
}
