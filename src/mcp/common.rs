//! Types shared by many messages: `_meta`, ids and tokens, params and results with no payload,
//! implementation info, icons, annotations, and string enums that keep unknown values.

use serde::Serialize;
use serde_json::{Map, Value};

use super::de::open_struct;

/// A JSON object. MCP uses it for `_meta`, tool arguments, schemas' sub-objects and capability
/// markers such as `"logging": {}`.
pub type JsonObject = Map<String, Value>;

/// A progress token (schema `ProgressToken`): "MUST be a string or integer value", chosen by the
/// requester and unique among its active requests (`basic/utilities/progress.mdx`). It has the
/// same shape and the same strict decoding as a request id, so it is the same type: the public
/// API names it [`Id`](crate::jsonrpc::Id).
pub(crate) type ProgressToken = crate::jsonrpc::Id;

/// The `_meta` key under which a request asks for progress notifications (schema
/// `RequestParams._meta.progressToken`).
pub(crate) const PROGRESS_TOKEN_KEY: &str = "progressToken";

/// The `_meta` key that ties a message to a task (schema `RelatedTaskMetadata`); since 2025-11-25.
pub(crate) const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";

#[cfg(test)]
/// Converts a progress token to the JSON value that goes into `_meta`.
pub(crate) fn token_to_value(token: &ProgressToken) -> Value {
    match token {
        crate::jsonrpc::Id::Number(n) => Value::from(*n),
        crate::jsonrpc::Id::String(s) => Value::from(s.as_str()),
    }
}

#[cfg(test)]
/// Reads a progress token out of a JSON value: a string, or an integer that fits `i64`.
pub(crate) fn token_from_value(value: &Value) -> Option<ProgressToken> {
    match value {
        Value::String(s) => Some(crate::jsonrpc::Id::String(s.clone())),
        Value::Number(n) => n.as_i64().map(crate::jsonrpc::Id::Number),
        _ => None,
    }
}

/// Params of a request that carries nothing but `_meta`, such as `ping` or `roots/list` (schema
/// `RequestParams`). Absent params decode as the default.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RequestParams {
    /// `_meta`; may hold `progressToken`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    RequestParams via RequestParamsBuilder, expecting "request params",
    {
        meta: Option<JsonObject> = "_meta",
    }
}

/// Params of a notification that carries nothing but `_meta`, such as
/// `notifications/initialized` or the `list_changed` notifications (schema `NotificationParams`).
/// Absent params decode as the default.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NotificationParams {
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    NotificationParams via NotificationParamsBuilder, expecting "notification params",
    {
        meta: Option<JsonObject> = "_meta",
    }
}

/// A result with no payload, such as the answer to `ping` (schema `EmptyResult`, which is
/// `Result`: `_meta` plus any member). Serializes as `{}` when empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EmptyResult {
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    EmptyResult via EmptyResultBuilder, expecting "a result",
    {
        meta: Option<JsonObject> = "_meta",
    }
}

/// Name and version of an MCP client or server (schema `Implementation`): `clientInfo` in
/// `initialize`, `serverInfo` in its reply.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name, such as `"mcpwire"`.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name; since 2025-06-18.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the implementation does; since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Website URL; since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons for a user interface; since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    Implementation via ImplementationBuilder, expecting "implementation info",
    {
        name: String = "name" [required],
        version: String = "version" [required],
        title: Option<String> = "title",
        description: Option<String> = "description",
        website_url: Option<String> = "websiteUrl",
        icons: Option<Vec<Icon>> = "icons",
    }
}

impl Implementation {
    /// An implementation with this name and version and nothing else.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            ..Self::default()
        }
    }
}

/// An icon a user interface may show (schema `Icon`); since 2025-11-25.
///
/// `src` is an `https:` or `data:` URI; consumers must reject other schemes such as
/// `javascript:` or `file:` (`basic/index.mdx`, "`icons`"). This type only carries the value.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// The icon's URI.
    pub src: String,
    /// MIME type override, such as `"image/png"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"`, or `"any"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background the icon is designed for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    Icon via IconBuilder, expecting "an icon",
    {
        src: String = "src" [required],
        mime_type: Option<String> = "mimeType",
        sizes: Option<Vec<String>> = "sizes",
        theme: Option<IconTheme> = "theme",
    }
}

/// Hints about how content is used or shown (schema `Annotations`), on content blocks and
/// resources.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for, such as `["user", "assistant"]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (optional) to 1 (effectively required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last modification, such as `"2025-01-12T15:00:58Z"`; since
    /// 2025-06-18.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    Annotations via AnnotationsBuilder, expecting "annotations",
    {
        audience: Option<Vec<Role>> = "audience",
        priority: Option<f64> = "priority",
        last_modified: Option<String> = "lastModified",
    }
}

/// Defines a string enum whose unknown values are kept in an `Other(String)` variant, so that
/// a value from a newer revision decodes and re-encodes unchanged.
macro_rules! open_string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this crate does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// The value on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $wire, )+
                    Self::Other(s) => s,
                }
            }

            /// The value for `s`; unknown strings become `Other`.
            pub fn parse(s: &str) -> Self {
                match s {
                    $( $wire => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let s = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok(Self::parse(&s))
            }
        }
    };
}
pub(crate) use open_string_enum;

open_string_enum! {
    /// A conversation role (schema `Role`), used in [`Annotations::audience`].
    #[non_exhaustive]
    pub enum Role {
        /// `"user"`.
        User = "user",
        /// `"assistant"`.
        Assistant = "assistant",
    }
}

open_string_enum! {
    /// The background an [`Icon`] is designed for (schema `Icon.theme`); since 2025-11-25.
    #[non_exhaustive]
    pub enum IconTheme {
        /// `"light"`: for light backgrounds.
        Light = "light",
        /// `"dark"`: for dark backgrounds.
        Dark = "dark",
    }
}
