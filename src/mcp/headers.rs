//! The HTTP headers that protocol 2026-07-28 derives from a request's body
//! (`docs/specification/2026-07-28/basic/transports/streamable-http.mdx`, "Standard headers" and
//! "Custom headers"): the value encoding shared by `Mcp-Name` and `Mcp-Param-{Name}`, and the
//! `x-mcp-header` annotations of a tool's input schema that name which arguments are mirrored.
//!
//! Pure functions over strings and [`serde_json::Value`]s; the exchange puts the results on the
//! wire. Whatever an argument holds, an encoded value is printable ASCII without CR, LF or NUL:
//! anything else is sent in the `=?base64?…?=` form.

use std::fmt;

use serde_json::{Map, Value};

#[cfg(any(test, feature = "fuzzing", feature = "demo"))]
use crate::base64::Padding;
use crate::base64::{self, Flavor};

/// The schema keyword that marks a property as mirrored into a header.
pub(crate) const ANNOTATION: &str = "x-mcp-header";
/// The prefix of a mirrored argument's header name.
pub(crate) const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";
/// The largest integer sent as a header value (JSON numbers above it lose precision).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Encodes a header value: the value itself when it is safe as it is (printable ASCII or tab,
/// no leading or trailing space or tab, and not itself shaped like the encoded form), else
/// `=?base64?` + the standard, padded Base64 of its UTF-8 bytes + `?=`.
///
/// ```text
/// use mcpwire::mcp::headers::encode_header_value;
///
/// assert_eq!(encode_header_value("us-west1"), "us-west1");
/// assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
/// ```
pub(crate) fn encode_header_value(value: &str) -> String {
    let printable = value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7E).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END);
    // An empty value goes encoded too: some HTTP stacks drop headers with empty values.
    if printable && !padded && !looks_encoded && !value.is_empty() {
        return value.to_owned();
    }
    let mut encoded = String::with_capacity(SENTINEL_START.len() + value.len() * 4 / 3 + 6);
    encoded.push_str(SENTINEL_START);
    base64::encode_into(value.as_bytes(), Flavor::Standard, &mut encoded);
    encoded.push_str(SENTINEL_END);
    encoded
}

/// The header value an argument is sent as: a string as it is, an integer in decimal, a
/// boolean as `true` or `false`, each encoded by [`encode_header_value`]. `None` (no header)
/// for `null`, and for what a mirrored argument cannot be (a fraction, an integer beyond
/// ±(2^53 − 1), an object or an array): the server then refuses the call with -32020, which
/// says more than a made-up value would.
pub(crate) fn argument_header_value(argument: &Value) -> Option<String> {
    match argument {
        Value::String(text) => Some(encode_header_value(text)),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => {
            let integer = number.as_i64().or_else(|| {
                number
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64)
                    .map(|f| f as i64)
            })?;
            (integer.abs() <= MAX_SAFE_INTEGER).then(|| integer.to_string())
        }
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// One argument a tool mirrors into a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// The header's name: `Mcp-Param-` and the annotation's value as declared.
    pub header: String,
    /// The property names from the arguments object down to the argument.
    pub path: Vec<String>,
}

impl ParamHeader {
    /// The argument's encoded value in `arguments`, or `None` when it is absent or `null`
    /// (then no header is sent).
    pub(crate) fn value_in(&self, arguments: &Map<String, Value>) -> Option<String> {
        let (last, parents) = self.path.split_last()?;
        let mut object = arguments;
        for name in parents {
            object = object.get(name)?.as_object()?;
        }
        argument_header_value(object.get(last)?)
    }
}

/// Why a tool's `x-mcp-header` annotations are invalid (the tool is then not usable).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum AnnotationError {
    /// The annotation is not a string, or is empty.
    Empty {
        /// Where it is, as a JSON pointer into the input schema.
        at: String,
    },
    /// The annotation is not an HTTP token (RFC 9110 `tchar`s only).
    NotAToken {
        /// Where it is.
        at: String,
    },
    /// Two annotations name the same header, ignoring case.
    Duplicate {
        /// Where the second one is.
        at: String,
    },
    /// The annotated property's `type` is not `string`, `integer` or `boolean`.
    NotPrimitive {
        /// Where it is.
        at: String,
    },
    /// The annotation is somewhere a property path from the arguments object cannot reach
    /// (the root, `items`, `$defs`, a composition keyword, ...).
    Unreachable {
        /// Where it is.
        at: String,
    },
}

impl fmt::Display for AnnotationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnnotationError::Empty { at } => {
                write!(f, "{at}: `{ANNOTATION}` is empty or not a string")
            }
            AnnotationError::NotAToken { at } => {
                write!(f, "{at}: `{ANNOTATION}` is not an HTTP token")
            }
            AnnotationError::Duplicate { at } => write!(
                f,
                "{at}: `{ANNOTATION}` names a header another property names (ignoring case)"
            ),
            AnnotationError::NotPrimitive { at } => write!(
                f,
                "{at}: `{ANNOTATION}` is on a property whose type is not string, integer or boolean"
            ),
            AnnotationError::Unreachable { at } => write!(
                f,
                "{at}: `{ANNOTATION}` is not on a property reached through `properties` alone"
            ),
        }
    }
}

impl std::error::Error for AnnotationError {}

/// The arguments a tool's input schema mirrors into headers, in key order, or why its
/// annotations break the rules (`server/tools.mdx`, "x-mcp-header"): each must be a non-empty
/// HTTP token, unique ignoring case, on a property of type `string`, `integer` or `boolean`
/// that is reached from the root through `properties` alone. Values of `default`, `const`,
/// `enum` and `examples` are data, not schemas, and are not searched.
pub(crate) fn param_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, AnnotationError> {
    let mut found = Vec::new();
    walk(
        input_schema,
        Some(&mut Vec::new()),
        &mut String::new(),
        &mut found,
    )?;
    let mut seen: Vec<String> = Vec::with_capacity(found.len());
    for (header, at) in &found {
        let lower = header.header.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(AnnotationError::Duplicate { at: at.clone() });
        }
        seen.push(lower);
    }
    Ok(found.into_iter().map(|(header, _)| header).collect())
}

/// Visits a schema; `path` is `Some` while the schema is reached through `properties` alone
/// (the property names so far; empty at the root). `pointer` is the schema's JSON pointer,
/// one buffer grown and cut back as the walk goes (this runs on every call of a tool: no
/// string is made per member unless an annotation is found).
fn walk(
    schema: &Value,
    mut path: Option<&mut Vec<String>>,
    pointer: &mut String,
    found: &mut Vec<(ParamHeader, String)>,
) -> Result<(), AnnotationError> {
    let depth = pointer.len();
    match schema {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                use std::fmt::Write;
                let _ = write!(pointer, "/{index}");
                walk(item, None, pointer, found)?;
                pointer.truncate(depth);
            }
            Ok(())
        }
        Value::Object(object) => {
            if let Some(annotation) = object.get(ANNOTATION) {
                let at = format!("{pointer}/{ANNOTATION}");
                let name = annotation
                    .as_str()
                    .filter(|name| !name.is_empty())
                    .ok_or_else(|| AnnotationError::Empty { at: at.clone() })?;
                if !name.bytes().all(is_tchar) {
                    return Err(AnnotationError::NotAToken { at });
                }
                let Some(path) = path.as_deref().filter(|path| !path.is_empty()) else {
                    return Err(AnnotationError::Unreachable { at });
                };
                let primitive = matches!(
                    object.get("type").and_then(Value::as_str),
                    Some("string" | "integer" | "boolean")
                );
                if !primitive {
                    return Err(AnnotationError::NotPrimitive { at });
                }
                let header = ParamHeader {
                    header: format!("{PARAM_HEADER_PREFIX}{name}"),
                    path: path.clone(),
                };
                found.push((header, at));
            }
            for (key, value) in object {
                match key.as_str() {
                    ANNOTATION | "default" | "const" | "enum" | "examples" => continue,
                    // Only objects and arrays hold schemas.
                    _ if !matches!(value, Value::Object(_) | Value::Array(_)) => continue,
                    _ => {}
                }
                push_pointer(pointer, key);
                let child = pointer.len();
                if key == "properties"
                    && let Value::Object(properties) = value
                {
                    for (name, property) in properties {
                        push_pointer(pointer, name);
                        match path.as_deref_mut() {
                            Some(path) => {
                                path.push(name.clone());
                                let result = walk(property, Some(path), pointer, found);
                                path.pop();
                                result?;
                            }
                            None => walk(property, None, pointer, found)?,
                        }
                        pointer.truncate(child);
                    }
                } else {
                    walk(value, None, pointer, found)?;
                }
                pointer.truncate(depth);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Appends `/` and `key` to a JSON pointer, `~` written `~0` and `/` written `~1` (RFC 6901).
fn push_pointer(pointer: &mut String, key: &str) {
    pointer.push('/');
    for c in key.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// Decodes a header value as a server would: the `=?base64?…?=` form to its text, anything
/// else as it is. `None` for a malformed encoded form. For tests and the fuzz target.
#[cfg(any(test, feature = "fuzzing", feature = "demo"))]
pub(crate) fn decode_header_value(value: &str) -> Option<String> {
    let Some(inner) = value
        .strip_prefix(SENTINEL_START)
        .and_then(|rest| rest.strip_suffix(SENTINEL_END))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::decode(inner, Flavor::Standard, Padding::Required)?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_plain_only_when_safe() {
        for (value, header) in [
            ("us-west1", "us-west1"),
            ("us west 1", "us west 1"),
            ("test-method", "test-method"),
            ("SELECT * FROM users", "SELECT * FROM users"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
            ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
            ("\tindented", "=?base64?CWluZGVudGVk?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            ("Zürich", "=?base64?WsO8cmljaA==?="),
            ("", "=?base64??="),
            ("nul\0byte", "=?base64?bnVsAGJ5dGU=?="),
        ] {
            assert_eq!(encode_header_value(value), header, "{value:?}");
            assert_eq!(
                decode_header_value(header).as_deref(),
                Some(value),
                "{header:?}"
            );
        }
    }

    #[test]
    fn arguments_become_header_values() {
        assert_eq!(argument_header_value(&json!(42)), Some("42".into()));
        assert_eq!(argument_header_value(&json!(-7)), Some("-7".into()));
        assert_eq!(argument_header_value(&json!(42.0)), Some("42".into()));
        assert_eq!(argument_header_value(&json!(true)), Some("true".into()));
        assert_eq!(argument_header_value(&json!(false)), Some("false".into()));
        assert_eq!(argument_header_value(&json!("a b")), Some("a b".into()));
        assert_eq!(argument_header_value(&json!(null)), None);
        assert_eq!(argument_header_value(&json!(3.5)), None);
        assert_eq!(
            argument_header_value(&json!(9_007_199_254_740_992_i64)),
            None
        );
        assert_eq!(argument_header_value(&json!([1])), None);
        assert_eq!(argument_header_value(&json!({"a": 1})), None);
    }

    #[test]
    fn annotations_are_found_on_property_paths() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "nested": {"type": "object", "properties": {
                "priority": {"type": "integer", "x-mcp-header": "Priority"}}},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "data": {"default": {"x-mcp-header": "NotASchema"}, "type": "string"}}});
        let headers = param_headers(&schema).unwrap();
        let names: Vec<_> = headers.iter().map(|h| h.header.as_str()).collect();
        assert_eq!(
            names,
            [
                "Mcp-Param-Priority",
                "Mcp-Param-Region",
                "Mcp-Param-Verbose"
            ]
        );
        let arguments = json!({"region": "Zürich", "nested": {"priority": 3}, "verbose": null});
        let arguments = arguments.as_object().unwrap();
        let values: Vec<_> = headers.iter().map(|h| h.value_in(arguments)).collect();
        assert_eq!(
            values,
            [
                Some("3".to_owned()),
                Some("=?base64?WsO8cmljaA==?=".to_owned()),
                None
            ]
        );
    }

    #[test]
    fn invalid_annotations_are_refused() {
        let property = |p: Value| json!({"type": "object", "properties": {"p": p}});
        let cases = [
            (
                property(json!({"type": "string", "x-mcp-header": ""})),
                "empty",
            ),
            (
                property(json!({"type": "string", "x-mcp-header": 3})),
                "empty",
            ),
            (
                property(json!({"type": "object", "x-mcp-header": "P"})),
                "primitive",
            ),
            (
                property(json!({"type": "array", "x-mcp-header": "P"})),
                "primitive",
            ),
            (
                property(json!({"type": "null", "x-mcp-header": "P"})),
                "primitive",
            ),
            (
                property(json!({"type": "number", "x-mcp-header": "P"})),
                "primitive",
            ),
            (property(json!({"x-mcp-header": "P"})), "primitive"),
            (
                property(json!({"type": "string", "x-mcp-header": "My Region"})),
                "token",
            ),
            (
                property(json!({"type": "string", "x-mcp-header": "Region:Primary"})),
                "token",
            ),
            (
                property(json!({"type": "string", "x-mcp-header": "Région"})),
                "token",
            ),
            (
                property(json!({"type": "string", "x-mcp-header": "Region\t1"})),
                "token",
            ),
            (
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "MyField"},
                    "b": {"type": "string", "x-mcp-header": "myfield"}}}),
                "duplicate",
            ),
            (
                json!({"type": "object", "x-mcp-header": "Root", "properties": {}}),
                "unreachable",
            ),
            (
                json!({"type": "object", "properties": {"list": {"type": "array",
                    "items": {"type": "string", "x-mcp-header": "Item"}}}}),
                "unreachable",
            ),
            (
                json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}),
                "unreachable",
            ),
            (
                json!({"type": "object", "anyOf": [{"properties": {
                    "x": {"type": "string", "x-mcp-header": "X"}}}]}),
                "unreachable",
            ),
        ];
        for (schema, kind) in cases {
            let error = param_headers(&schema).expect_err(&schema.to_string());
            let matches = match kind {
                "empty" => matches!(error, AnnotationError::Empty { .. }),
                "primitive" => matches!(error, AnnotationError::NotPrimitive { .. }),
                "token" => matches!(error, AnnotationError::NotAToken { .. }),
                "duplicate" => matches!(error, AnnotationError::Duplicate { .. }),
                _ => matches!(error, AnnotationError::Unreachable { .. }),
            };
            assert!(matches, "{schema}: {error:?}");
            assert!(error.to_string().contains(ANNOTATION), "{error}");
        }
    }

    #[test]
    fn encoded_values_never_carry_control_bytes() {
        // Every single byte value, alone and around text.
        for byte in 0u8..=255 {
            let text = String::from_utf8_lossy(&[b'a', byte, b'b']).into_owned();
            let header = encode_header_value(&text);
            assert!(
                header
                    .bytes()
                    .all(|b| b == b'\t' || (0x20..=0x7E).contains(&b)),
                "{header:?}"
            );
            assert!(!header.starts_with([' ', '\t']) && !header.ends_with([' ', '\t']));
            assert_eq!(decode_header_value(&header).as_deref(), Some(text.as_str()));
        }
    }
}
