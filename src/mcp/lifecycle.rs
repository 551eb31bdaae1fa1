//! Session start (`basic/lifecycle.mdx`): `initialize` params and result, and the capabilities
//! each side declares.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Implementation, JsonObject};
use super::de::open_struct;
use super::version::ProtocolVersion;

/// What a client supports (schema `ClientCapabilities`). Not a closed set: members this crate
/// does not know are kept in [`extra`](Self::extra).
///
/// A client declares only what it implements: a server MUST NOT send elicitation requests in
/// modes the client did not declare (`client/elicitation.mdx`, "Capabilities").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Present if the client lists roots (`roots/list`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Present if the client samples from an LLM (`sampling/createMessage`); in 2025-11-25 it may
    /// hold `context` and `tools` markers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<JsonObject>,
    /// Present if the client handles `elicitation/create`; since 2025-06-18. In 2025-11-25 it holds
    /// `form` and/or `url` markers; an empty object means form mode only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<JsonObject>,
    /// Task support (`list`, `cancel`, `requests`), kept as raw JSON; since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ClientCapabilities via ClientCapabilitiesBuilder, expecting "client capabilities",
    {
        experimental: Option<JsonObject> = "experimental",
        roots: Option<RootsCapability> = "roots",
        sampling: Option<JsonObject> = "sampling",
        elicitation: Option<JsonObject> = "elicitation",
        tasks: Option<Value> = "tasks",
    }
}

/// The client's `roots` capability (schema `ClientCapabilities.roots`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// Whether the client sends `notifications/roots/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    RootsCapability via RootsCapabilityBuilder, expecting "the roots capability",
    {
        list_changed: Option<bool> = "listChanged",
    }
}

/// What a server supports (schema `ServerCapabilities`). Not a closed set: members this crate
/// does not know are kept in [`extra`](Self::extra). A capability is declared by being present,
/// often as an empty object (`"logging": {}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Present if the server sends log messages (`notifications/message`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Present if the server offers argument completions; since 2025-03-26.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Present if the server offers prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Present if the server offers resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Present if the server offers tools (`server/tools.mdx`: servers with tools MUST declare
    /// it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Task support (`list`, `cancel`, `requests.tools.call`), kept as raw JSON; since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ServerCapabilities via ServerCapabilitiesBuilder, expecting "server capabilities",
    {
        experimental: Option<JsonObject> = "experimental",
        logging: Option<JsonObject> = "logging",
        completions: Option<JsonObject> = "completions",
        prompts: Option<PromptsCapability> = "prompts",
        resources: Option<ResourcesCapability> = "resources",
        tools: Option<ToolsCapability> = "tools",
        tasks: Option<Value> = "tasks",
    }
}

impl ServerCapabilities {
    /// Whether the server declared that it can run `tools/call` as a task
    /// (`tasks.requests.tools.call` present); since 2025-11-25.
    #[cfg(test)]
    pub(crate) fn supports_task_tool_calls(&self) -> bool {
        self.tasks
            .as_ref()
            .and_then(|t| t.get("requests")?.get("tools")?.get("call"))
            .is_some()
    }
}

/// The server's `prompts` capability (schema `ServerCapabilities.prompts`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Whether the server sends `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    PromptsCapability via PromptsCapabilityBuilder, expecting "the prompts capability",
    {
        list_changed: Option<bool> = "listChanged",
    }
}

/// The server's `resources` capability (schema `ServerCapabilities.resources`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether the server supports `resources/subscribe`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server sends `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ResourcesCapability via ResourcesCapabilityBuilder, expecting "the resources capability",
    {
        subscribe: Option<bool> = "subscribe",
        list_changed: Option<bool> = "listChanged",
    }
}

/// The server's `tools` capability (schema `ServerCapabilities.tools`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ToolsCapability via ToolsCapabilityBuilder, expecting "the tools capability",
    {
        list_changed: Option<bool> = "listChanged",
    }
}

/// Params of `initialize` (schema `InitializeRequestParams`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The revision the client offers; it SHOULD be the latest it supports
    /// (`basic/lifecycle.mdx`, "Version Negotiation").
    pub protocol_version: String,
    /// What the client supports.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl InitializeRequestParams {
    /// Params offering `version`, with these capabilities and client info.
    pub(crate) fn new(
        version: ProtocolVersion,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        Self {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            client_info,
            meta: None,
        }
    }
}

/// Result of `initialize` (schema `InitializeResult`).
///
/// `protocolVersion` is kept as the string the server sent. The server answers with the
/// offered revision if it supports it, else with another (its latest); a client that does not
/// support the answer SHOULD disconnect (`basic/lifecycle.mdx`, "Version Negotiation"):
/// [`protocol_version`](Self::protocol_version) then names a revision that is not
/// [supported](ProtocolVersion::is_supported), or none.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use the server, a hint a client MAY give its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    InitializeResult via InitializeResultBuilder, expecting "an initialize result",
    {
        protocol_version: String = "protocolVersion" [required],
        capabilities: ServerCapabilities = "capabilities" [required],
        server_info: Implementation = "serverInfo" [required],
        instructions: Option<String> = "instructions",
        meta: Option<JsonObject> = "_meta",
    }
}

impl InitializeResult {
    /// The server's revision, if this crate knows it.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        ProtocolVersion::parse(&self.protocol_version)
    }
}
