//! Why a JSON text is not a valid JSON-RPC 2.0 packet.

use std::fmt;

use super::{INVALID_REQUEST, PARSE_ERROR};

/// Why [`decode`](super::decode) refused its input.
///
/// Every variant names one rule; the detail it carries (a member name, what was found instead,
/// serde_json's message with line and column) is for people, not for matching on.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input is not one JSON text (syntax error, bad UTF-8, trailing data, empty input).
    NotJson(String),
    /// The top level or a batch element is not a JSON object (it holds what was found).
    NotAnObject(&'static str),
    /// The top level is an empty array, which spec §6 calls an invalid request.
    EmptyBatch,
    /// A batch where [`decode_message`](super::decode_message) expected a single message.
    UnexpectedBatch,
    /// A batch element is invalid; `index` counts from zero.
    InBatch {
        /// The position of the element in the batch.
        index: usize,
        /// What is wrong with it.
        error: Box<DecodeError>,
    },
    /// A member occurs twice (it holds the member name, such as `id` or `error.code`).
    DuplicateMember(&'static str),
    /// The `jsonrpc` member is absent.
    MissingVersion,
    /// The `jsonrpc` member is not exactly the string `"2.0"`.
    WrongVersion,
    /// The `method` member is not a string.
    MethodNotString,
    /// `params` appears without `method`.
    MissingMethod,
    /// The `params` member is not an object or array (it holds what was found).
    ParamsNotStructured(&'static str),
    /// The `id` member is not a string or an `i64` integer (it holds what was found).
    InvalidId(&'static str),
    /// A request has `"id": null`, which MCP forbids.
    NullIdOnRequest,
    /// A request member (`method`, `params`) appears with a response member (`result`, `error`).
    MethodWithResult {
        /// The request member found.
        request: &'static str,
        /// The response member found.
        response: &'static str,
    },
    /// A response has both `result` and `error`.
    ResultAndError,
    /// An object has no `method`, `result` or `error` member.
    NeitherResultNorError,
    /// A response has no `id` member.
    MissingId,
    /// A success response has `"id": null`.
    NullIdWithResult,
    /// The `error` member is malformed (it holds what is wrong).
    InvalidErrorObject(&'static str),
}

impl DecodeError {
    /// The JSON-RPC error code a server would answer this with (spec §5.1): [`PARSE_ERROR`]
    /// for [`DecodeError::NotJson`], [`INVALID_REQUEST`] for everything else.
    pub fn code(&self) -> i64 {
        match self {
            DecodeError::NotJson(_) => PARSE_ERROR,
            DecodeError::InBatch { error, .. } => error.code(),
            _ => INVALID_REQUEST,
        }
    }

    /// The position of the offending element when the error is about one element of a batch.
    #[cfg(test)]
    pub(crate) fn batch_index(&self) -> Option<usize> {
        match self {
            DecodeError::InBatch { index, .. } => Some(*index),
            _ => None,
        }
    }

    pub(crate) fn in_batch(self, index: usize) -> Self {
        DecodeError::InBatch {
            index,
            error: Box::new(self),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NotJson(message) => write!(f, "not JSON: {message}"),
            DecodeError::NotAnObject(found) => write!(f, "expected a JSON object, found {found}"),
            DecodeError::EmptyBatch => f.write_str("empty batch"),
            DecodeError::UnexpectedBatch => f.write_str("expected one message, found a batch"),
            DecodeError::InBatch { index, error } => write!(f, "batch element {index}: {error}"),
            DecodeError::DuplicateMember(name) => write!(f, "duplicate member `{name}`"),
            DecodeError::MissingVersion => f.write_str("missing member `jsonrpc`"),
            DecodeError::WrongVersion => f.write_str("`jsonrpc` is not the string \"2.0\""),
            DecodeError::MethodNotString => f.write_str("`method` is not a string"),
            DecodeError::MissingMethod => f.write_str("`params` without `method`"),
            DecodeError::ParamsNotStructured(found) => {
                write!(f, "`params` must be an object or an array, found {found}")
            }
            DecodeError::InvalidId(found) => {
                write!(f, "`id` must be a string or an i64 integer, found {found}")
            }
            DecodeError::NullIdOnRequest => f.write_str("a request's `id` must not be null"),
            DecodeError::MethodWithResult { request, response } => {
                write!(
                    f,
                    "request member `{request}` mixed with response member `{response}`"
                )
            }
            DecodeError::ResultAndError => f.write_str("response has both `result` and `error`"),
            DecodeError::NeitherResultNorError => {
                f.write_str("object has no `method`, `result` or `error`")
            }
            DecodeError::MissingId => f.write_str("response has no `id` member"),
            DecodeError::NullIdWithResult => f.write_str("success response with a null `id`"),
            DecodeError::InvalidErrorObject(what) => write!(f, "invalid `error` member: {what}"),
        }
    }
}

impl std::error::Error for DecodeError {}
