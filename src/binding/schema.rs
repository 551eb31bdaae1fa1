//! JSON Schema checks for tool arguments and structured results, on the `jsonschema` crate,
//! bounded before compiling and never fetching a remote `$ref`.
//!
//! SPEC.md, "Calling a tool", step 1: "the arguments must validate against `input_schema` (JSON
//! Schema; no remote `$ref` fetching, ever)"; "Result mapping": "with an `output_schema`, the
//! value must validate".
//!
//! ## Rules
//!
//! - **Bounded compile.** [`compile`] refuses a schema nested deeper than [`MAX_SCHEMA_DEPTH`]
//!   levels or longer than [`MAX_SCHEMA_BYTES`] bytes as compact JSON, before the `jsonschema`
//!   crate sees it. Depth is checked first (without recursing past the limit), so the size check,
//!   which serializes, never recurses deeply either; it stops counting at the limit.
//! - **No retrieval.** The validator is built with a retriever that refuses every URI, so a
//!   `$ref` (or `$schema`) naming a resource the schema does not itself contain is a compile
//!   error naming that URI, whatever its scheme (`https:`, `http:`, `file:`, `urn:`, relative
//!   names). The crate's default features (HTTP and file resolving) are off as well, but the
//!   refusing retriever does not depend on that: feature unification elsewhere in a build cannot
//!   turn fetching back on. Local references (`#/$defs/...`, `#/definitions/...`, anchors, and
//!   URIs matching an embedded `$id`) work, and so do the standard meta-schemas (draft 4, 6, 7,
//!   2019-09 and 2020-12), which `jsonschema` bundles.
//! - **Dialect.** The schema's `$schema` picks the draft; without one it is 2020-12, the MCP
//!   default (`server/tools.mdx`, 2025-11-25). `format` is an annotation only, as in 2020-12.
//! - **Errors.** [`CompiledSchema::validate`] reports at most [`MAX_REPORTED_ERRORS`] errors,
//!   each as `<instance path>: <message>` (a JSON Pointer; the root is shown as `(root)`), each
//!   message cut to [`MAX_ERROR_CHARS`] characters, joined with `"; "`, and ends with
//!   `"; and more"` when more errors were found.

use std::fmt;
use std::io;

use jsonschema::{Retrieve, Uri, Validator};
use serde_json::Value;

/// The longest schema accepted, in bytes of compact JSON (1 MiB).
pub(crate) const MAX_SCHEMA_BYTES: usize = 1 << 20;

/// The deepest nesting accepted: an object or array at the top is level 1, each object or array
/// inside adds one.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

/// How many validation errors [`CompiledSchema::validate`] reports at most.
pub(crate) const MAX_REPORTED_ERRORS: usize = 5;

/// How many characters of one error message [`CompiledSchema::validate`] keeps (the message
/// quotes the offending value, which may be large).
pub(crate) const MAX_ERROR_CHARS: usize = 300;

/// A JSON Schema compiled by [`compile`], ready to validate values.
pub(crate) struct CompiledSchema {
    validator: Validator,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("draft", &self.validator.draft())
            .finish_non_exhaustive()
    }
}

/// Compiles `schema`, following the rules in the [module docs](self).
///
/// # Errors
///
/// A message saying why: too deep, too large, a reference to a resource outside the schema (the
/// message names it), or anything else `jsonschema` refuses (an invalid schema, a bad regex).
///
/// # Example
///
/// ```text
/// use mcpwire::binding::schema::compile;
/// use serde_json::json;
///
/// let schema = compile(&json!({
///     "type": "object",
///     "properties": {"query": {"type": "string"}},
///     "required": ["query"],
/// }))?;
/// assert!(schema.validate(&json!({"query": "rust"})).is_ok());
/// assert_eq!(
///     schema.validate(&json!({"query": 7})).unwrap_err(),
///     r#"/query: 7 is not of type "string""#,
/// );
///
/// let remote = compile(&json!({"$ref": "https://example.com/s.json"})).unwrap_err();
/// assert!(remote.contains("https://example.com/s.json"), "{remote}");
/// ```
pub(crate) fn compile(schema: &Value) -> Result<CompiledSchema, String> {
    check_depth(schema)?;
    check_size(schema)?;
    let validator = jsonschema::options()
        .with_retriever(RefuseRetrieval)
        .build(schema)
        .map_err(|e| {
            truncate(
                &format!("not a usable JSON Schema: {e}"),
                2 * MAX_ERROR_CHARS,
            )
        })?;
    Ok(CompiledSchema { validator })
}

impl CompiledSchema {
    /// Checks `value` against the schema.
    ///
    /// # Errors
    ///
    /// The first [`MAX_REPORTED_ERRORS`] errors, formatted as the [module docs](self) say.
    pub(crate) fn validate(&self, value: &Value) -> Result<(), String> {
        let mut errors = self.validator.iter_errors(value);
        let mut report = String::new();
        for (index, error) in errors.by_ref().take(MAX_REPORTED_ERRORS).enumerate() {
            if index > 0 {
                report.push_str("; ");
            }
            let path = error.instance_path().as_str();
            report.push_str(if path.is_empty() { "(root)" } else { path });
            report.push_str(": ");
            report.push_str(&truncate(&error.to_string(), MAX_ERROR_CHARS));
        }
        if report.is_empty() {
            return Ok(());
        }
        if errors.next().is_some() {
            report.push_str("; and more");
        }
        Err(report)
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// Whether `value` validates, without building error messages.
    pub(crate) fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }
}

/// The retriever given to `jsonschema`: it refuses every URI, so nothing is ever fetched.
struct RefuseRetrieval;

impl Retrieve for RefuseRetrieval {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "`{}` is outside this schema, and mcpwire never fetches schema references",
            truncate(uri.as_str(), MAX_ERROR_CHARS)
        )
        .into())
    }
}

/// Refuses a value nested deeper than [`MAX_SCHEMA_DEPTH`], without recursing past it.
fn check_depth(schema: &Value) -> Result<(), String> {
    fn depth_ok(value: &Value, level: usize) -> bool {
        match value {
            Value::Array(items) => {
                level <= MAX_SCHEMA_DEPTH && items.iter().all(|item| depth_ok(item, level + 1))
            }
            Value::Object(members) => {
                level <= MAX_SCHEMA_DEPTH
                    && members.values().all(|member| depth_ok(member, level + 1))
            }
            _ => true,
        }
    }
    if depth_ok(schema, 1) {
        Ok(())
    } else {
        Err(format!(
            "the schema is nested deeper than {MAX_SCHEMA_DEPTH} levels"
        ))
    }
}

/// Refuses a value whose compact JSON is longer than [`MAX_SCHEMA_BYTES`], counting without
/// buffering and stopping at the limit.
fn check_size(schema: &Value) -> Result<(), String> {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            if self.0 > MAX_SCHEMA_BYTES {
                return Err(io::Error::other("too large"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, schema) {
        Ok(()) => Ok(()),
        Err(_) if counter.0 > MAX_SCHEMA_BYTES => Err(format!(
            "the schema is larger than {MAX_SCHEMA_BYTES} bytes as JSON"
        )),
        Err(e) => Err(format!("the schema cannot be serialized: {e}")),
    }
}

/// `text` cut to at most `max` characters, with `…` marking a cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or(text)),
    }
}

#[cfg(test)]
#[path = "tests_schema.rs"]
mod tests;
