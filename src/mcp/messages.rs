//! The typed messages a client handles: one marker type per method, tying the method name to its
//! params and result types, with codec helpers over JSON-RPC's raw `params` / `result` text.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

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
