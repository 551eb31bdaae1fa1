//! The typed messages a client handles: one marker type per method, tying the method name to its
//! params and result types, with codec helpers over JSON-RPC's raw `params` / `result` text.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::jsonrpc::{
    Message, TypedDecodeError, TypedResponse, decode_message, decode_notification_into,
    decode_response_as,
};

use super::common::{EmptyResult, NotificationParams, RequestParams};
use super::lifecycle::{InitializeRequestParams, InitializeResult};
use super::methods;
use super::notifications::{
    CancelledNotificationParams, LoggingMessageNotificationParams, ProgressNotificationParams,
};
use super::tools::{
    CallToolRequestParams, CallToolResult, ListToolsRequestParams, ListToolsResult,
};

/// The `params` text used when a message has none but its params type has all-optional members.
const EMPTY_OBJECT: &str = "{}";

/// Decodes `params`, standing in `{}` when they are absent and `optional` allows it.
fn decode_params<P: DeserializeOwned>(
    method: &str,
    params: Option<&RawValue>,
    optional: bool,
) -> Result<P, serde_json::Error> {
    use serde::de::Error as _;
    match params {
        Some(raw) => serde_json::from_str(raw.get()),
        None if optional => serde_json::from_str(EMPTY_OBJECT),
        None => Err(serde_json::Error::custom(format_args!(
            "`{method}` needs params"
        ))),
    }
}

/// A request method: its name, params and result types (the shape of schema `ClientRequest` and
/// `ServerRequest` members).
pub trait RequestMethod {
    /// The method name, such as `"tools/call"`.
    const METHOD: &'static str;
    /// Whether `params` may be absent (then they decode as if `{}` was sent).
    const PARAMS_OPTIONAL: bool;
    /// The params type.
    type Params: Serialize + DeserializeOwned;
    /// The result type.
    type Result: Serialize + DeserializeOwned;

    /// Encodes params as the raw JSON that goes into a JSON-RPC request.
    fn encode_params(params: &Self::Params) -> Result<Box<RawValue>, serde_json::Error> {
        serde_json::value::to_raw_value(params)
    }

    /// Decodes the raw `params` of a JSON-RPC request.
    fn decode_params(params: Option<&RawValue>) -> Result<Self::Params, serde_json::Error> {
        decode_params(Self::METHOD, params, Self::PARAMS_OPTIONAL)
    }

    /// Encodes a result as the raw JSON that goes into a JSON-RPC response.
    fn encode_result(result: &Self::Result) -> Result<Box<RawValue>, serde_json::Error> {
        serde_json::value::to_raw_value(result)
    }

    /// Decodes the raw `result` of a JSON-RPC response.
    fn decode_result(result: &RawValue) -> Result<Self::Result, serde_json::Error> {
        serde_json::from_str(result.get())
    }

    /// Decodes a whole JSON-RPC response to this method's request, the `result` into
    /// [`Result`](Self::Result) in the same pass as the envelope
    /// ([`decode_response_as`](crate::jsonrpc::decode_response_as)).
    ///
    /// An error response is `Ok`, with the error object in `outcome`. Whether the id is the one
    /// of a request of this method is for the caller to check.
    ///
    /// # Errors
    ///
    /// See [`TypedDecodeError`]: the input is not a valid JSON-RPC message, or it is a request
    /// or a notification (decoded raw, in [`TypedDecodeError::Unexpected`]), or its `result`
    /// does not fit.
    fn decode_response(
        input: &[u8],
    ) -> Result<TypedResponse<'_, Self::Result>, TypedDecodeError<'_>> {
        decode_response_as(input)
    }
}

/// A notification method: its name and params type (the shape of schema `ClientNotification`
/// and `ServerNotification` members).
pub trait NotificationMethod {
    /// The method name, such as `"notifications/progress"`.
    const METHOD: &'static str;
    /// Whether `params` may be absent (then they decode as if `{}` was sent).
    const PARAMS_OPTIONAL: bool;
    /// The params type.
    type Params: Serialize + DeserializeOwned;

    /// Encodes params as the raw JSON that goes into a JSON-RPC notification.
    fn encode_params(params: &Self::Params) -> Result<Box<RawValue>, serde_json::Error> {
        serde_json::value::to_raw_value(params)
    }

    /// Decodes the raw `params` of a JSON-RPC notification.
    fn decode_params(params: Option<&RawValue>) -> Result<Self::Params, serde_json::Error> {
        decode_params(Self::METHOD, params, Self::PARAMS_OPTIONAL)
    }

    /// Decodes a whole JSON-RPC notification of this method, its `params` into
    /// [`Params`](Self::Params) in the same pass as the envelope
    /// ([`decode_notification_as`](crate::jsonrpc::decode_notification_as)). Absent params
    /// decode as `{}` when [`PARAMS_OPTIONAL`](Self::PARAMS_OPTIONAL) allows it.
    ///
    /// ```
    /// use mcpwire::mcp::{NotificationMethod, ProgressNotification};
    ///
    /// let params = ProgressNotification::decode_notification(
    ///     br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}"#,
    /// )?;
    /// assert_eq!(params.progress, 2.0);
    /// # Ok::<(), mcpwire::jsonrpc::TypedDecodeError<'static>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// See [`TypedDecodeError`]: the input is not a valid JSON-RPC message, or it is not a
    /// notification of this method (decoded raw, in [`TypedDecodeError::Unexpected`]), or its
    /// `params` do not fit.
    fn decode_notification(input: &[u8]) -> Result<Self::Params, TypedDecodeError<'_>> {
        let mut params = None;
        match decode_notification_into::<Self::Params>(input, &mut params) {
            Ok(method) if method == Self::METHOD => match params {
                Some(params) => Ok(params),
                None => decode_params(Self::METHOD, None, Self::PARAMS_OPTIONAL)
                    .map_err(TypedDecodeError::Payload),
            },
            // Another method: its params were read as ours (and happened to fit); read again.
            Ok(_) => Err(decode_again(input)),
            // Params that do not fit may belong to another method.
            Err(TypedDecodeError::Payload(e)) => match decode_message(input) {
                Ok(Message::Notification(n)) if n.method == Self::METHOD => {
                    Err(TypedDecodeError::Payload(e))
                }
                Ok(other) => Err(TypedDecodeError::Unexpected(other)),
                Err(invalid) => Err(TypedDecodeError::Invalid(invalid)),
            },
            Err(other) => Err(other),
        }
    }
}

/// The input, decoded raw, as the message that was not asked for.
fn decode_again(input: &[u8]) -> TypedDecodeError<'_> {
    match decode_message(input) {
        Ok(message) => TypedDecodeError::Unexpected(message),
        Err(invalid) => TypedDecodeError::Invalid(invalid),
    }
}

/// Defines an uninhabited marker type per method and its trait impl.
macro_rules! request_methods {
    ($( $(#[$m:meta])* $name:ident = $method:expr, optional $opt:literal, $params:ty => $result:ty; )+) => {$(
        $(#[$m])*
        #[derive(Debug)]
        pub enum $name {}

        impl RequestMethod for $name {
            const METHOD: &'static str = $method;
            const PARAMS_OPTIONAL: bool = $opt;
            type Params = $params;
            type Result = $result;
        }
    )+};
}

/// Defines an uninhabited marker type per notification and its trait impl.
macro_rules! notification_methods {
    ($( $(#[$m:meta])* $name:ident = $method:expr, optional $opt:literal, $params:ty; )+) => {$(
        $(#[$m])*
        #[derive(Debug)]
        pub enum $name {}

        impl NotificationMethod for $name {
            const METHOD: &'static str = $method;
            const PARAMS_OPTIONAL: bool = $opt;
            type Params = $params;
        }
    )+};
}

request_methods! {
    /// `initialize`, client → server (schema `InitializeRequest`).
    InitializeRequest = methods::INITIALIZE, optional false,
        InitializeRequestParams => InitializeResult;
    /// `ping`, either direction, answered with an empty result (schema `PingRequest`).
    PingRequest = methods::PING, optional true, RequestParams => EmptyResult;
    /// `tools/list`, client → server (schema `ListToolsRequest`).
    ListToolsRequest = methods::TOOLS_LIST, optional true,
        ListToolsRequestParams => ListToolsResult;
    /// `tools/call`, client → server (schema `CallToolRequest`).
    CallToolRequest = methods::TOOLS_CALL, optional false,
        CallToolRequestParams => CallToolResult;
}

notification_methods! {
    /// `notifications/initialized`, client → server after accepting the `initialize` reply
    /// (schema `InitializedNotification`).
    InitializedNotification = methods::INITIALIZED, optional true, NotificationParams;
    /// `notifications/progress`, either direction (schema `ProgressNotification`).
    ProgressNotification = methods::PROGRESS, optional false, ProgressNotificationParams;
    /// `notifications/cancelled`, either direction (schema `CancelledNotification`).
    CancelledNotification = methods::CANCELLED, optional false, CancelledNotificationParams;
    /// `notifications/message`, server → client (schema `LoggingMessageNotification`).
    LoggingMessageNotification = methods::LOGGING_MESSAGE, optional false,
        LoggingMessageNotificationParams;
    /// `notifications/tools/list_changed`, server → client (schema
    /// `ToolListChangedNotification`).
    ToolListChangedNotification = methods::TOOLS_LIST_CHANGED, optional true, NotificationParams;
    /// `notifications/resources/list_changed`, server → client (schema
    /// `ResourceListChangedNotification`).
    ResourceListChangedNotification = methods::RESOURCES_LIST_CHANGED, optional true,
        NotificationParams;
    /// `notifications/prompts/list_changed`, server → client (schema
    /// `PromptListChangedNotification`).
    PromptListChangedNotification = methods::PROMPTS_LIST_CHANGED, optional true,
        NotificationParams;
}
