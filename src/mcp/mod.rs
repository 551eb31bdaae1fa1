//! MCP message types: protocol revisions, method names, error codes, and the params and results
//! a client sends and receives, for protocol 2025-11-25 and the earlier revisions it accepts.
//!
//! The source of truth is the official schema, `schema/2025-11-25/schema.ts` in
//! `modelcontextprotocol/modelcontextprotocol` ("schema" in these docs), with the spec pages under
//! `docs/specification/2025-11-25/` (cited by path). Older revisions are compared in
//! [`ProtocolVersion`]; every item newer than 2025-03-26 says in which revision it appeared.
//!
//! This module is pure data: no I/O, no session state. The JSON-RPC envelope belongs to
//! [`crate::jsonrpc`]; these types fill its `params` and `result` (see [`RequestMethod`] and
//! [`NotificationMethod`] for the codec helpers).
//!
//! ## Wire rules
//!
//! - **Names.** Members are camelCase as in the schema; `_meta` is a [`JsonObject`]. Optional members
//!   are `Option`s, left out when `None`. Ids and progress tokens are strings or integers, never
//!   `null` or fractions (`basic/index.mdx`, "Requests"; `basic/utilities/progress.mdx`).
//! - **Nothing lost.** Results, capabilities, tools, content blocks and notification params keep
//!   members this crate does not know in an `extra` map, so a value decodes and re-encodes
//!   with nothing lost: the schema leaves them open (`Result` has `[key: string]: unknown`;
//!   capabilities are "not a closed set"). String enums keep unknown values in `Other`.
//!   "Nothing lost" means the same JSON *value*: object members come back in key order
//!   (serde_json without `preserve_order`), and numbers in `f64` fields such as
//!   `Annotations::priority` come back as floats (`1` becomes `1.0`). Unknown content blocks
//!   keep their members in order, each member after `type` as its exact JSON text.
//! - **One pass.** Every type here decodes in one pass over its JSON: members go straight into
//!   their fields, unknown ones into `extra`, with no `#[serde(flatten)]` buffering. With
//!   [`NotificationMethod::decode_notification`] and [`RequestMethod::decode_response`] the
//!   JSON-RPC envelope is part of the same pass.
//! - **Content blocks.** A block of a known `type` must fit its type; any other `type` is kept as
//!   JSON text ([`ContentBlock::Unknown`]). See [`ContentBlock`].
//! - **One decoder for all revisions.** Decoding never depends on the negotiated revision: servers
//!   send newer members on older sessions (the Python SDK sends `structuredContent` on a
//!   2025-03-26 session). The [`ProtocolVersion`] helpers say what each revision defines, for
//!   what a client sends: the `MCP-Protocol-Version` header
//!   ([`ProtocolVersion::requires_protocol_version_header`]), batches
//!   ([`ProtocolVersion::allows_batching`]), tasks, and so on.
//! - **Tool errors are results.** A tool's own failure is a [`CallToolResult`] with
//!   `isError: true`; a JSON-RPC error means the request itself failed (`server/tools.mdx`,
//!   "Error Handling"). See `error_code`.
//!
//! ## Example
//!
//! ```
//! use mcpwire::mcp::{CallToolRequest, ContentBlock, RequestMethod};
//! use serde_json::value::RawValue;
//!
//! let result = RawValue::from_string(
//!     r#"{"content":[{"type":"text","text":"7^2 = 49"},{"type":"hologram","z":1}],"isError":false}"#
//!         .to_owned(),
//! )?;
//! let result = CallToolRequest::decode_result(&result)?;
//! assert!(!result.is_error());
//! assert_eq!(result.content[0].as_text(), Some("7^2 = 49"));
//! assert!(matches!(&result.content[1], ContentBlock::Unknown(raw) if raw.get() == r#"{"type":"hologram","z":1}"#));
//! # Ok::<(), serde_json::Error>(())
//! ```

mod common;
mod content;
mod de;
pub(crate) mod error_code;
pub(crate) mod headers;
mod lifecycle;
mod messages;
pub(crate) mod methods;
pub(crate) mod modern;
mod notifications;
pub(crate) mod tasks;
mod tools;
mod trace;
mod version;

pub use common::{
    Annotations, EmptyResult, Icon, IconTheme, Implementation, JsonObject, NotificationParams,
    RequestParams, Role,
};
pub(crate) use common::{PROGRESS_TOKEN_KEY, ProgressToken, RELATED_TASK_KEY};
pub use content::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, TextContent, TextResourceContents,
};
pub use lifecycle::{
    ClientCapabilities, InitializeRequestParams, InitializeResult, PromptsCapability,
    ResourcesCapability, RootsCapability, ServerCapabilities, ToolsCapability,
};
pub use messages::{
    CallToolRequest, CancelledNotification, InitializeRequest, InitializedNotification,
    ListToolsRequest, LoggingMessageNotification, NotificationMethod, PingRequest,
    ProgressNotification, PromptListChangedNotification, RequestMethod,
    ResourceListChangedNotification, ToolListChangedNotification,
};
pub use modern::{DiscoverResult, InputRequest};
pub use notifications::{
    CancelledNotificationParams, LoggingLevel, LoggingMessageNotificationParams,
    ProgressNotificationParams,
};
pub use tasks::{TaskError, TaskStatus, TaskUpdate};
#[cfg(feature = "client")]
pub(crate) use tools::ContentOnly;
pub use tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult, TaskMetadata,
    TaskSupport, Tool, ToolAnnotations, ToolExecution,
};
pub use trace::{TraceContext, TraceContextError};
#[cfg(feature = "session")]
pub(crate) use trace::{check_meta, check_params, is_trace_key};
pub use version::ProtocolVersion;
pub(crate) use version::{MODERN, SUPPORTED};

#[cfg(test)]
mod tests;
