//! Tools (`server/tools.mdx`): the tool definition, `tools/list` and `tools/call`.

use std::fmt;

use serde::de::{Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::common::{Icon, JsonObject, open_string_enum};
#[cfg(test)]
use super::common::{PROGRESS_TOKEN_KEY, ProgressToken, token_from_value, token_to_value};
use super::content::ContentBlock;
use super::de::{MemberName, open_struct};

/// A tool the server offers (schema `Tool`), as listed by `tools/list`.
///
/// Every member the server sent is kept: the known ones in fields, the rest in
/// [`extra`](Self::extra), so a tool re-serializes with nothing lost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name, used in `tools/call`. Names SHOULD be 1 to 128 characters of
    /// `A-Z a-z 0-9 _ - .` (`server/tools.mdx`, "Tool Names", since 2025-11-25); not enforced here.
    pub name: String,
    /// Display name; since 2025-06-18. Display precedence: `title`, then `annotations.title`,
    /// then `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments. The spec requires an object with `"type": "object"` (never
    /// `null`); it is kept as any JSON value here so that one bad tool does not fail a whole
    /// listing, and callers check it. The dialect is 2020-12 unless `$schema` says otherwise
    /// (`basic/index.mdx`, "JSON Schema Usage", since 2025-11-25).
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` in the tool's results; since 2025-06-18. When present,
    /// the server MUST return conforming structured results and clients SHOULD validate them
    /// (`server/tools.mdx`, "Output Schema").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints; since 2025-03-26. Untrusted unless the server is trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons; since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Execution properties (task support); since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    Tool via ToolBuilder, expecting "a tool",
    {
        name: String = "name" [required],
        title: Option<String> = "title",
        description: Option<String> = "description",
        input_schema: Value = "inputSchema" [required],
        output_schema: Option<Value> = "outputSchema",
        annotations: Option<ToolAnnotations> = "annotations",
        icons: Option<Vec<Icon>> = "icons",
        execution: Option<ToolExecution> = "execution",
        meta: Option<JsonObject> = "_meta",
    }
}

impl Tool {
    /// The name to show a person: `title`, else `annotations.title`, else `name` (schema
    /// `Tool.annotations`, "Display name precedence order").
    #[cfg(test)]
    pub(crate) fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.name)
    }

    /// Whether the tool says it must run as a task (`execution.taskSupport == "required"`). A
    /// client that does not implement tasks cannot call such a tool with a plain `tools/call`.
    pub fn requires_task(&self) -> bool {
        matches!(
            self.execution
                .as_ref()
                .and_then(|e| e.task_support.as_ref()),
            Some(TaskSupport::Required)
        )
    }
}

/// Hints about a tool's behaviour (schema `ToolAnnotations`); since 2025-03-26. All are hints,
/// not guarantees; clients MUST treat them as untrusted unless the server is trusted
/// (`server/tools.mdx`, "Tool"). Each hint's doc gives the schema's default for when it is
/// absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data, meaningful when not read-only (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world of external entities (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ToolAnnotations via ToolAnnotationsBuilder, expecting "tool annotations",
    {
        title: Option<String> = "title",
        read_only_hint: Option<bool> = "readOnlyHint",
        destructive_hint: Option<bool> = "destructiveHint",
        idempotent_hint: Option<bool> = "idempotentHint",
        open_world_hint: Option<bool> = "openWorldHint",
    }
}

/// Execution properties of a tool (schema `ToolExecution`); since 2025-11-25.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool runs as a task; `"forbidden"` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ToolExecution via ToolExecutionBuilder, expecting "tool execution properties",
    {
        task_support: Option<TaskSupport> = "taskSupport",
    }
}

open_string_enum! {
    /// Whether a tool supports task-augmented execution (schema `ToolExecution.taskSupport`);
    /// since 2025-11-25.
    #[non_exhaustive]
    pub enum TaskSupport {
        /// `"forbidden"`: no tasks (the default).
        Forbidden = "forbidden",
        /// `"optional"`: a task or a plain call.
        Optional = "optional",
        /// `"required"`: only as a task.
        Required = "required",
    }
}

/// Asks for task-augmented execution of a request (schema `TaskMetadata`); since 2025-11-25,
/// experimental. Only valid when the server declared `tasks.requests.tools.call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskMetadata {
    /// How long to keep the task after creation, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    TaskMetadata via TaskMetadataBuilder, expecting "task metadata",
    {
        ttl: Option<u64> = "ttl",
    }
}

/// Params of `tools/list` (schema `PaginatedRequestParams`). Absent params decode as the
/// default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListToolsRequestParams {
    /// The `nextCursor` of the previous page; `None` for the first page
    /// (`server/utilities/pagination.mdx`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Result of `tools/list` (schema `ListToolsResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Opaque cursor of the next page; absent on the last page. A client must guard against a
    /// server that repeats cursors forever.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ListToolsResult via ListToolsResultBuilder, expecting "a tools/list result",
    {
        tools: Vec<Tool> = "tools" [required],
        next_cursor: Option<String> = "nextCursor",
        meta: Option<JsonObject> = "_meta",
    }
}

/// Params of `tools/call` (schema `CallToolRequestParams`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallToolRequestParams {
    /// The tool's name.
    pub name: String,
    /// The arguments, an object matching the tool's `inputSchema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// `_meta`: `progressToken` (`set_progress_token`) and any
    /// caller keys such as `"brain.dev/scope"` (`set_meta`).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Asks for task-augmented execution; since 2025-11-25. The reply is then a
    /// `CreateTaskResult`, not a [`CallToolResult`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
}

impl CallToolRequestParams {
    /// A call of `name` with these arguments.
    pub fn new(name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        Self {
            name: name.into(),
            arguments,
            meta: None,
            task: None,
        }
    }

    #[cfg(test)]
    /// Sets `_meta.progressToken`, asking the server for `notifications/progress` about this call
    /// (`basic/utilities/progress.mdx`). The token must be unique among the caller's active
    /// requests.
    pub(crate) fn set_progress_token(&mut self, token: &ProgressToken) {
        self.set_meta(PROGRESS_TOKEN_KEY, token_to_value(token));
    }

    #[cfg(test)]
    /// Builder form of [`set_progress_token`](Self::set_progress_token).
    pub(crate) fn with_progress_token(mut self, token: &ProgressToken) -> Self {
        self.set_progress_token(token);
        self
    }

    #[cfg(test)]
    /// `_meta.progressToken`, if set to a string or an `i64` integer.
    pub(crate) fn progress_token(&self) -> Option<ProgressToken> {
        token_from_value(self.meta.as_ref()?.get(PROGRESS_TOKEN_KEY)?)
    }

    #[cfg(test)]
    /// Sets one `_meta` member, creating `_meta` if needed. Keys with a second label of
    /// `modelcontextprotocol` or `mcp` (such as `io.modelcontextprotocol/`) are reserved for MCP
    /// (`basic/index.mdx`, "`_meta`").
    pub(crate) fn set_meta(&mut self, key: impl Into<String>, value: Value) {
        self.meta
            .get_or_insert_with(JsonObject::new)
            .insert(key.into(), value);
    }
}

/// Result of `tools/call` (schema `CallToolResult`).
///
/// A tool's own failure is reported here with `isError: true` and readable content, not as a
/// JSON-RPC error; protocol errors (unknown tool, malformed request) are JSON-RPC errors
/// (`server/tools.mdx`, "Error Handling"). Real servers differ: the TypeScript SDK reports an
/// unknown tool as `isError: true` content.
///
/// Decoding is by hand (not derived), in one pass: each block of `content` is read straight from
/// the input, which [`ContentBlock::Unknown`] needs; members other than the four below are kept
/// in [`extra`](Self::extra). `content` is required; duplicate members are an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result, a JSON object in the schema, matching the tool's `outputSchema`
    /// if it has one; since 2025-06-18 (but decoded on every revision). A tool returning it
    /// SHOULD also return it serialized in a text block. Kept as any JSON value; `null` decodes
    /// as `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool call ended in an error; absent means false ([`is_error`](Self::is_error)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolResult {
    /// `isError`, false when absent.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }
}

impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(CallToolResultVisitor { whole: true })
    }
}

/// A [`CallToolResult`] read for its content alone, for a caller that looks at nothing else
/// (the binding layer): `_meta` and the members it does not know are checked as JSON, as
/// always, but not kept (`meta` is `None`, `extra` empty), which spares building them.
#[cfg(feature = "client")]
pub(crate) struct ContentOnly(pub(crate) CallToolResult);

#[cfg(feature = "client")]
impl<'de> Deserialize<'de> for ContentOnly {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(CallToolResultVisitor { whole: false })
            .map(ContentOnly)
    }
}

/// A result's `content`, read into a list sized for the one block most results hold (a
/// list grown from empty starts at room for four, an allocation four times larger).
struct ContentList(Vec<ContentBlock>);

impl<'de> Deserialize<'de> for ContentList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentListVisitor;
        impl<'de> Visitor<'de> for ContentListVisitor {
            type Value = ContentList;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of content blocks")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ContentList, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).clamp(1, 16));
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(ContentList(blocks))
            }
        }
        deserializer.deserialize_seq(ContentListVisitor)
    }
}

/// A `_meta` object read and dropped.
struct SkippedObject;

impl<'de> Deserialize<'de> for SkippedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SkippedObjectVisitor;
        impl<'de> Visitor<'de> for SkippedObjectVisitor {
            type Value = SkippedObject;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SkippedObject, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(SkippedObject)
            }
        }
        deserializer.deserialize_map(SkippedObjectVisitor)
    }
}

/// Reads a [`CallToolResult`] member by member; all of it, or only what [`ContentOnly`]
/// keeps.
struct CallToolResultVisitor {
    whole: bool,
}

impl<'de> Visitor<'de> for CallToolResultVisitor {
    type Value = CallToolResult;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a CallToolResult object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallToolResult, A::Error> {
        /// Stores a member's value, refusing a second occurrence.
        fn once<T, E: serde::de::Error>(
            slot: &mut Option<T>,
            value: T,
            name: &'static str,
        ) -> Result<(), E> {
            if slot.replace(value).is_some() {
                return Err(E::duplicate_field(name));
            }
            Ok(())
        }
        let mut content = None;
        let mut structured_content = None;
        let mut is_error = None;
        let mut meta = None;
        let mut extra = JsonObject::new();
        // What a `ContentOnly` read saw and dropped, for the checks for duplicates.
        let (mut result_type_seen, mut skipped) = (false, Vec::new());
        while let Some(MemberName(key)) = map.next_key()? {
            match &*key {
                "content" => once(&mut content, map.next_value::<ContentList>()?.0, "content")?,
                "structuredContent" => once(
                    &mut structured_content,
                    map.next_value::<Option<Value>>()?,
                    "structuredContent",
                )?,
                "isError" => once(&mut is_error, map.next_value::<Option<bool>>()?, "isError")?,
                "_meta" => {
                    // Read whole, or checked and dropped (`None` either way when null).
                    let value = match self.whole {
                        true => map.next_value::<Option<JsonObject>>()?,
                        false => map.next_value::<Option<SkippedObject>>()?.and(None),
                    };
                    once(&mut meta, value, "_meta")?;
                }
                // 2026-07-28: only a complete result is a CallToolResult; an `input_required`
                // one is read by the caller from the raw result (`modern::ResultEnvelope`).
                "resultType" => {
                    let value = map.next_value::<Value>()?;
                    if value.as_str() != Some("complete") {
                        return Err(A::Error::custom(format_args!(
                            "resultType {value} is not a complete result"
                        )));
                    }
                    let seen = match self.whole {
                        true => extra.insert("resultType".to_owned(), value).is_some(),
                        false => std::mem::replace(&mut result_type_seen, true),
                    };
                    if seen {
                        return Err(A::Error::duplicate_field("resultType"));
                    }
                }
                _ => {
                    let seen = match self.whole {
                        true => extra.contains_key(&*key),
                        false => skipped.contains(&key),
                    };
                    if seen {
                        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    match self.whole {
                        true => {
                            let value = map.next_value::<Value>()?;
                            extra.insert(key.into_owned(), value);
                        }
                        false => {
                            map.next_value::<IgnoredAny>()?;
                            skipped.push(key);
                        }
                    }
                }
            }
        }
        Ok(CallToolResult {
            content: content.ok_or_else(|| A::Error::missing_field("content"))?,
            structured_content: structured_content.flatten(),
            is_error: is_error.flatten(),
            meta: meta.flatten(),
            extra,
        })
    }
}
