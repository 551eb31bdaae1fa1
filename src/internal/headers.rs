//! The `mcp_headers` harness: header value encoding and `x-mcp-header` annotations
//! ([`crate::mcp::headers`]) on arbitrary input.

use serde_json::Value;

use crate::mcp::headers::{
    ANNOTATION, PARAM_HEADER_PREFIX, argument_header_value, decode_header_value,
    encode_header_value, param_headers,
};

/// The `mcp_headers` fuzz target. The input, read as text (lossily), must encode to a header
/// value that is printable ASCII (tab allowed inside), starts and ends with neither space nor
/// tab, and decodes back to the text exactly. Read as JSON `[schema, arguments]` (or a lone
/// schema), the annotations either are refused with an error naming `x-mcp-header`, or give
/// headers whose names are `Mcp-Param-` plus an HTTP token, unique ignoring case, whose
/// values for `arguments` obey the same value rules, and which are the same however often the
/// schema is read.
pub(crate) fn fuzz_mcp_headers(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    check_value(&encode_header_value(&text));
    assert_eq!(
        decode_header_value(&encode_header_value(&text)).as_deref(),
        Some(text.as_ref()),
        "the encoded value does not decode to the text"
    );
    let Ok(json) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (schema, arguments) = match &json {
        Value::Array(pair) if pair.len() == 2 => (&pair[0], pair[1].as_object()),
        schema => (schema, None),
    };
    match param_headers(schema) {
        Err(error) => assert!(error.to_string().contains(ANNOTATION), "{error}"),
        Ok(headers) => {
            assert_eq!(
                param_headers(schema),
                Ok(headers.clone()),
                "not deterministic"
            );
            let mut lower = Vec::new();
            for header in &headers {
                let name = header
                    .header
                    .strip_prefix(PARAM_HEADER_PREFIX)
                    .expect("the header name starts with Mcp-Param-");
                assert!(
                    !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)),
                    "{name:?} is not a token"
                );
                assert!(!header.path.is_empty(), "an annotation on the root");
                lower.push(name.to_ascii_lowercase());
                if let Some(arguments) = arguments
                    && let Some(value) = header.value_in(arguments)
                {
                    check_value(&value);
                }
            }
            let count = lower.len();
            lower.sort();
            lower.dedup();
            assert_eq!(lower.len(), count, "two headers differ only in case");
        }
    }
    if let Some(value) = argument_header_value(&json) {
        check_value(&value);
    }
}

fn check_value(value: &str) {
    assert!(
        value
            .bytes()
            .all(|b| b == b'\t' || (0x20..=0x7E).contains(&b)),
        "a header value with a byte outside printable ASCII: {value:?}"
    );
    assert!(
        !value.starts_with([' ', '\t']) && !value.ends_with([' ', '\t']),
        "a header value with surrounding whitespace: {value:?}"
    );
}
