//! Result mapping: an MCP `tools/call` result turned into what mcpwire returns to its caller
//! (SPEC.md, "Result mapping"). Pure: no I/O, no session state.
//!
//! | MCP result | mcpwire result |
//! | --- | --- |
//! | text content | a text block `{"type":"text","text"}` |
//! | image content | an image block `{"type":"image","data": base64, "mime_type"}` |
//! | structured content | `structured_content` plus a text block holding the JSON; with an `output_schema`, the value must validate |
//! | `isError: true` | `is_error: true` |
//! | any other content type | the call fails |
//!
//! ## Rules in detail
//!
//! - **Blocks.** A text block keeps only its text; an image block its base64 `data`, exactly as
//!   sent (not decoded), and its `mimeType` as `mime_type`. Annotations, `_meta` and unknown
//!   members are dropped. Blocks keep their order.
//! - **Other content types** (`audio`, `resource_link`, `resource`, and any unknown type) fail
//!   a successful call with [`MappingError::UnsupportedContent`], naming the first such type.
//! - **Structured content** is returned in [`ToolOutput::structured_content`] as sent, and the
//!   content also holds it as a text block: servers usually send one (the schema says a tool
//!   returning structured content SHOULD also return it serialized in a text block), so one is
//!   appended, holding the compact JSON, only when no text block of the result already parses
//!   as JSON equal to the structured value (whitespace and key order do not matter; `40` and
//!   `40.0` differ).
//! - **Output schema.** Given the binding's compiled `output_schema`, a successful result must
//!   carry structured content ([`MappingError::MissingStructuredContent`] otherwise) that
//!   validates ([`MappingError::OutputSchema`] otherwise). Content types are checked before the
//!   schema.
//! - **Error results** (`isError: true`) are kept visible, never turned into a mapping failure:
//!   the outcome is known (SPEC.md, "Failures and `unknown_outcome`": "its content is kept in
//!   the result"). Their text and image blocks map as above; a block of any other type becomes a
//!   text block describing it, such as ``[unsupported content omitted: `audio` (audio/wav)]``.
//!   The output schema does not apply to them (MCP applies `outputSchema` to successful
//!   results), but structured content they carry is kept and mirrored as above.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::schema::{CompiledSchema, truncate};
use crate::error::ErrorKind;
use crate::mcp::{CallToolResult, ContentBlock, ResourceContents};

/// How many characters of a URI the description of an omitted block keeps.
const MAX_DESCRIBED_URI_CHARS: usize = 200;

/// A tool result as mcpwire returns it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub(crate) struct ToolOutput {
    /// Whether the tool reported an error (`isError: true`).
    pub is_error: bool,
    /// The content blocks: `{"type":"text","text"}` and
    /// `{"type":"image","data","mime_type"}` objects.
    pub content: Vec<Value>,
    /// The structured result, when the tool sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

/// Why a result cannot be returned. In every case the tool ran and its outcome is unknown to
/// the caller ([`unknown_outcome`](Self::unknown_outcome) is true).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum MappingError {
    /// A successful result holds a content block of a type mcpwire does not return.
    UnsupportedContent {
        /// The block's `type`.
        block_type: String,
    },
    /// The structured content does not validate against the binding's `output_schema`.
    OutputSchema {
        /// The validation errors.
        detail: String,
    },
    /// The binding has an `output_schema` but a successful result has no structured content.
    MissingStructuredContent,
}

impl MappingError {
    /// The error kind, for programs: [`ErrorKind::UnsupportedContent`], or
    /// [`ErrorKind::OutputSchemaMismatch`] for both [`OutputSchema`](Self::OutputSchema) and
    /// [`MissingStructuredContent`](Self::MissingStructuredContent) (SPEC.md: "result not
    /// matching `output_schema`").
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            MappingError::UnsupportedContent { .. } => ErrorKind::UnsupportedContent,
            MappingError::OutputSchema { .. } | MappingError::MissingStructuredContent => {
                ErrorKind::OutputSchemaMismatch
            }
        }
    }

    #[cfg(test)]
    /// Whether the tool may have done something nobody knows about: always true, as the tool
    /// ran and its result is not returned (SPEC.md, "Failures and `unknown_outcome`").
    pub(crate) fn unknown_outcome(&self) -> bool {
        true
    }
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedContent { block_type } => write!(
                f,
                "the result holds a content block of type `{block_type}`, which mcpwire does not \
                 return (only text, image and structured content)"
            ),
            Self::OutputSchema { detail } => {
                write!(
                    f,
                    "the structured result does not match the output schema: {detail}"
                )
            }
            Self::MissingStructuredContent => f.write_str(
                "the tool has an output schema but its result has no structured content",
            ),
        }
    }
}

impl std::error::Error for MappingError {}

/// Maps a `tools/call` result, following the rules in the [module docs](self).
///
/// # Errors
///
/// [`MappingError`] when a successful result holds another content type, or does not match
/// `output_schema`.
///
/// # Example
///
/// ```text
/// use mcpwire::binding::mapping::map_result;
/// use mcpwire::mcp::CallToolResult;
/// use serde_json::json;
///
/// let result: CallToolResult = serde_json::from_str(
///     r#"{"content":[{"type":"text","text":"7^2 = 49"}],"isError":false}"#,
/// )?;
/// let output = map_result(result, None)?;
/// assert!(!output.is_error);
/// assert_eq!(output.content, vec![json!({"type": "text", "text": "7^2 = 49"})]);
/// ```
pub(crate) fn map_result(
    result: CallToolResult,
    output_schema: Option<&CompiledSchema>,
) -> Result<ToolOutput, MappingError> {
    let is_error = result.is_error();
    let structured_content = result.structured_content;
    let structured_text = structured_content.as_ref().and_then(|structured| {
        let in_text = result
            .content
            .iter()
            .any(|block| holds_json(block, structured));
        (!in_text).then(|| structured.to_string())
    });
    let mut content = Vec::with_capacity(result.content.len() + 1);
    // The blocks are moved into the mapped content: a large text is never copied.
    for block in result.content {
        content.push(match block {
            ContentBlock::Text(text) => text_block(text.text),
            ContentBlock::Image(image) => {
                let mut block = Map::with_capacity(3);
                block.insert("type".to_owned(), Value::from("image"));
                block.insert("data".to_owned(), Value::String(image.data));
                block.insert("mime_type".to_owned(), Value::String(image.mime_type));
                Value::Object(block)
            }
            other if !is_error => {
                return Err(MappingError::UnsupportedContent {
                    block_type: other.type_name().into_owned(),
                });
            }
            other => text_block(describe_unsupported(&other)),
        });
    }
    match (output_schema, &structured_content) {
        (Some(_), None) if !is_error => return Err(MappingError::MissingStructuredContent),
        (Some(schema), Some(structured)) if !is_error => schema
            .validate(structured)
            .map_err(|detail| MappingError::OutputSchema { detail })?,
        _ => {}
    }
    content.extend(structured_text.map(text_block));

    Ok(ToolOutput {
        is_error,
        content,
        structured_content,
    })
}

/// `{"type":"text","text": text}`.
fn text_block(text: String) -> Value {
    let mut block = Map::with_capacity(2);
    block.insert("type".to_owned(), Value::from("text"));
    block.insert("text".to_owned(), Value::String(text));
    Value::Object(block)
}

/// Whether `block` is a text block whose text parses as JSON equal to `structured`.
fn holds_json(block: &ContentBlock, structured: &Value) -> bool {
    let Some(text) = block.as_text() else {
        return false;
    };
    // Only text that could be the same JSON is parsed.
    let looks_alike = match structured {
        Value::Object(_) => text.trim_start().starts_with('{'),
        Value::Array(_) => text.trim_start().starts_with('['),
        _ => true,
    };
    looks_alike && serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *structured)
}

/// The text standing in for a block of an error result that mcpwire does not return.
fn describe_unsupported(block: &ContentBlock) -> String {
    let uri = |uri: &str| truncate(uri, MAX_DESCRIBED_URI_CHARS);
    let detail = match block {
        ContentBlock::Audio(audio) => Some(audio.mime_type.clone()),
        ContentBlock::ResourceLink(link) => Some(uri(&link.uri)),
        ContentBlock::Resource(resource) => Some(match &resource.resource {
            ResourceContents::Text(t) => uri(&t.uri),
            ResourceContents::Blob(b) => uri(&b.uri),
        }),
        _ => None,
    };
    let block_type = truncate(&block.type_name(), MAX_DESCRIBED_URI_CHARS);
    match detail {
        Some(detail) => format!("[unsupported content omitted: `{block_type}` ({detail})]"),
        None => format!("[unsupported content omitted: `{block_type}`]"),
    }
}

#[cfg(test)]
#[path = "tests_mapping.rs"]
mod tests;
