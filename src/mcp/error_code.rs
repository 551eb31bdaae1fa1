//! JSON-RPC error codes MCP uses: the five JSON-RPC 2.0 standard codes (schema, "Standard JSON-RPC
//! error codes") and MCP's own codes in the implementation-defined range -32000 to -32099.

// The revision's whole vocabulary of error codes, kept together so that a rule names its
// error by a constant; not every one is named by a rule yet.
#![allow(dead_code)]

/// Invalid JSON was received.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available. A client answers unknown server requests
/// (such as `sampling/createMessage` when it does not sample) with this code.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters. Servers also use it for an unknown tool (`server/tools.mdx`,
/// "Error Handling").
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// A resource does not exist (`server/resources.mdx`, "Error Handling"); defined by the spec
/// pages, not as a schema constant.
pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;

/// The request needs a URL-mode elicitation first; the error `data` holds `elicitations`
/// (schema `URLElicitationRequiredError`, `client/elicitation.mdx`); since 2025-11-25.
pub(crate) const URL_ELICITATION_REQUIRED: i64 = -32042;

/// The request's `Mcp-*` headers and its body disagree (a header missing, or a value that is
/// not the body's); sent with HTTP 400. A client whose `Mcp-Param-*` headers came from a stale
/// tool list lists the tools again and retries once: nothing ran. Since 2026-07-28.
pub(crate) const HEADER_MISMATCH: i64 = -32020;

/// The request needs a client capability it did not declare in `_meta`; `data` holds
/// `requiredCapabilities`. Since 2026-07-28.
pub(crate) const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// The server does not speak the revision the request named; `data` holds `supported` (and
/// usually `requested`). A client retries once with a revision from `supported`. Since
/// 2026-07-28.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A short name for a code this module defines, such as `"method not found"`, for messages and
/// logs; `None` for any other code.
pub(crate) fn name(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "parse error",
        INVALID_REQUEST => "invalid request",
        METHOD_NOT_FOUND => "method not found",
        INVALID_PARAMS => "invalid params",
        INTERNAL_ERROR => "internal error",
        RESOURCE_NOT_FOUND => "resource not found",
        URL_ELICITATION_REQUIRED => "URL elicitation required",
        HEADER_MISMATCH => "header mismatch",
        MISSING_REQUIRED_CLIENT_CAPABILITY => "missing required client capability",
        UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
        _ => return None,
    })
}
