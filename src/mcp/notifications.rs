//! Params of the notifications a client sends or receives: progress, cancellation and log
//! messages. (`notifications/initialized` and the `list_changed` notifications carry
//! [`NotificationParams`](crate::mcp::NotificationParams).)

use serde::Serialize;
use serde_json::Value;

use super::common::{JsonObject, ProgressToken, open_string_enum};
use super::de::open_struct;
use crate::jsonrpc::Id;

/// Params of `notifications/progress` (schema `ProgressNotificationParams`,
/// `basic/utilities/progress.mdx`).
///
/// `progress` and `total` MAY be floating point, and servers send both `1` and `1.0`, so both
/// are `f64`. `progress` MUST increase with each notification; a receiver may check it.
/// Notifications MUST only reference tokens of active requests; late ones are for the
/// receiver to drop.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken` (a string or an integer, as a
    /// request id is).
    pub progress_token: crate::jsonrpc::Id,
    /// Progress so far.
    pub progress: f64,
    /// Total, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable status; since 2025-03-26.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `notifications/cancelled` (schema `CancelledNotificationParams`,
/// `basic/utilities/cancellation.mdx`).
///
/// Rules for a client: it MUST NOT cancel its `initialize` request; it only references requests
/// it sent in the same direction that are still in flight; it SHOULD ignore a response that
/// arrives after it cancelled; task-augmented requests are cancelled with `tasks/cancel`
/// instead (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request to cancel. Required before 2025-11-25; optional since, where it
    /// MUST be present for non-task requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Id>,
    /// Why, for logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CancelledNotificationParams {
    /// Params cancelling `request_id`, with an optional reason.
    pub(crate) fn new(request_id: Id, reason: Option<String>) -> Self {
        Self {
            request_id: Some(request_id),
            reason,
            ..Self::default()
        }
    }
}

/// Params of `notifications/message`, one log message from the server (schema
/// `LoggingMessageNotificationParams`, `server/utilities/logging.mdx`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Name of the logger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON, often a string. Required (it may be `null`).
    pub data: Value,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ProgressNotificationParams via ProgressNotificationParamsBuilder,
    expecting "progress notification params",
    {
        progress_token: ProgressToken = "progressToken" [required],
        progress: f64 = "progress" [required],
        total: Option<f64> = "total",
        message: Option<String> = "message",
        meta: Option<JsonObject> = "_meta",
    }
}

open_struct! {
    CancelledNotificationParams via CancelledNotificationParamsBuilder,
    expecting "cancelled notification params",
    {
        request_id: Option<Id> = "requestId",
        reason: Option<String> = "reason",
        meta: Option<JsonObject> = "_meta",
    }
}

open_struct! {
    LoggingMessageNotificationParams via LoggingMessageNotificationParamsBuilder,
    expecting "logging message notification params",
    {
        level: LoggingLevel = "level" [required],
        logger: Option<String> = "logger",
        data: Value = "data" [required],
        meta: Option<JsonObject> = "_meta",
    }
}

open_string_enum! {
    /// Severity of a log message, the syslog levels of RFC 5424 (schema `LoggingLevel`). A level
    /// this crate does not know is kept in `Other`.
    pub enum LoggingLevel {
        /// `"debug"`.
        Debug = "debug",
        /// `"info"`.
        Info = "info",
        /// `"notice"`.
        Notice = "notice",
        /// `"warning"`.
        Warning = "warning",
        /// `"error"`.
        Error = "error",
        /// `"critical"`.
        Critical = "critical",
        /// `"alert"`.
        Alert = "alert",
        /// `"emergency"`.
        Emergency = "emergency",
    }
}

impl LoggingLevel {
    /// Severity rank from 0 (`debug`) to 7 (`emergency`), or `None` for an unknown level.
    pub fn rank(&self) -> Option<u8> {
        Some(match self {
            Self::Debug => 0,
            Self::Info => 1,
            Self::Notice => 2,
            Self::Warning => 3,
            Self::Error => 4,
            Self::Critical => 5,
            Self::Alert => 6,
            Self::Emergency => 7,
            Self::Other(_) => return None,
        })
    }
}
