//! Content blocks (schema `ContentBlock`): what a tool result, a prompt message or a sampling
//! message carries, tagged by `type`.

use std::borrow::Cow;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::common::{Annotations, Icon, JsonObject, Meta};

/// Deserializes a flattened `extra` map without the `type` tag, which belongs to the enclosing
/// [`ContentBlock`], so that a block re-serializes with exactly one `type`.
fn extra_without_type<'de, D: Deserializer<'de>>(deserializer: D) -> Result<JsonObject, D::Error> {
    let mut extra = JsonObject::deserialize(deserializer)?;
    extra.remove("type");
    Ok(extra)
}

/// Text (schema `TextContent`, `"type": "text"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten, deserialize_with = "extra_without_type")]
    pub extra: JsonObject,
}

impl TextContent {
    /// A text block holding `text` and nothing else.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

/// An image (schema `ImageContent`, `"type": "image"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// The image bytes, base64-encoded, as sent (not decoded here).
    pub data: String,
    /// The image's MIME type, such as `"image/png"`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten, deserialize_with = "extra_without_type")]
    pub extra: JsonObject,
}

/// Audio (schema `AudioContent`, `"type": "audio"`); since 2025-03-26.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// The audio bytes, base64-encoded, as sent (not decoded here).
    pub data: String,
    /// The audio's MIME type, such as `"audio/wav"`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten, deserialize_with = "extra_without_type")]
    pub extra: JsonObject,
}

/// A link to a resource the client may read or subscribe to (schema `ResourceLink`,
/// `"type": "resource_link"`); since 2025-06-18. The resource need not appear in
/// `resources/list` (`server/tools.mdx`, "Resource Links").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The resource's MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size of the raw content in bytes (before base64), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons; since 2025-11-25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten, deserialize_with = "extra_without_type")]
    pub extra: JsonObject,
}

/// A resource's contents embedded in a result (schema `EmbeddedResource`, `"type": "resource"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The contents: text or a base64 blob.
    pub resource: ResourceContents,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten, deserialize_with = "extra_without_type")]
    pub extra: JsonObject,
}

impl EmbeddedResource {
    /// An embedded resource holding `resource` and nothing else.
    pub fn new(resource: ResourceContents) -> Self {
        Self {
            resource,
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The contents of a resource (schema `TextResourceContents | BlobResourceContents`).
///
/// The two are told apart by their members, as the schema has no tag: an object with `text` is
/// [`Text`](Self::Text), else one with `blob` is [`Blob`](Self::Blob), else it is an error.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents, base64-encoded.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The resource's URI.
    pub fn uri(&self) -> &str {
        match self {
            Self::Text(t) => &t.uri,
            Self::Blob(b) => &b.uri,
        }
    }

    /// The resource's MIME type, if sent.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Text(t) => t.mime_type.as_deref(),
            Self::Blob(b) => b.mime_type.as_deref(),
        }
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(t) => t.serialize(serializer),
            Self::Blob(b) => b.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Buffer into a map (it works under `#[serde(flatten)]` too), then pick by member.
        let map = JsonObject::deserialize(deserializer)?;
        let value = serde_json::Value::Object(map);
        let has = |key| value.get(key).is_some();
        if has("text") {
            TextResourceContents::deserialize(value)
                .map(Self::Text)
                .map_err(D::Error::custom)
        } else if has("blob") {
            BlobResourceContents::deserialize(value)
                .map(Self::Blob)
                .map_err(D::Error::custom)
        } else {
            Err(D::Error::custom(
                "resource contents have neither `text` nor `blob`",
            ))
        }
    }
}

/// Text contents of a resource (schema `TextResourceContents`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Binary contents of a resource (schema `BlobResourceContents`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The bytes, base64-encoded, as sent (not decoded here).
    pub blob: String,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One block of content (schema `ContentBlock`), told apart by its `type` member.
///
/// Decoding rules:
/// - the block must be a JSON object with a string `type`;
/// - `text`, `image`, `audio`, `resource_link` and `resource` decode into their typed struct,
///   and a block of one of these types that does not fit it (an image without `data`, say) is an
///   error, not [`Unknown`](Self::Unknown);
/// - any other `type` is kept byte for byte in [`Unknown`](Self::Unknown) and re-serializes
///   unchanged. Which revision defines which type: `resource_link` since 2025-06-18, `audio`
///   since 2025-03-26 (`ProtocolVersion::has_resource_links`). Decoding accepts all of them on
///   every revision.
///
/// Serializing writes `type` first, then the struct's members, then its `extra` members.
///
/// Because [`Unknown`](Self::Unknown) holds a [`RawValue`], a `ContentBlock` decodes only from
/// serde_json (from text, or from a `serde_json::Value`), and not from inside a struct that
/// buffers its input, such as one with a `#[serde(flatten)]` member; that is why
/// [`CallToolResult`](crate::mcp::CallToolResult) implements `Deserialize` by hand.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `"type": "text"`.
    Text(TextContent),
    /// `"type": "image"`.
    Image(ImageContent),
    /// `"type": "audio"`; since 2025-03-26.
    Audio(AudioContent),
    /// `"type": "resource_link"`; since 2025-06-18.
    ResourceLink(ResourceLink),
    /// `"type": "resource"`.
    Resource(EmbeddedResource),
    /// Any other `type`, kept as the exact JSON text that was received.
    Unknown(Box<RawValue>),
}

impl ContentBlock {
    /// The `type` tag of a known block, or `None` for [`Unknown`](Self::Unknown) (see
    /// [`type_name`](Self::type_name)).
    pub fn known_type(&self) -> Option<&'static str> {
        Some(match self {
            Self::Text(_) => "text",
            Self::Image(_) => "image",
            Self::Audio(_) => "audio",
            Self::ResourceLink(_) => "resource_link",
            Self::Resource(_) => "resource",
            Self::Unknown(_) => return None,
        })
    }

    /// The block's `type` tag, also for [`Unknown`](Self::Unknown) blocks (read again from the
    /// kept JSON; `"?"` if that somehow fails).
    pub fn type_name(&self) -> Cow<'_, str> {
        match self {
            Self::Unknown(raw) => peek_type(raw.get())
                .ok()
                .flatten()
                .unwrap_or(Cow::Borrowed("?")),
            known => Cow::Borrowed(known.known_type().unwrap_or("?")),
        }
    }

    /// The text of a [`Text`](Self::Text) block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// Decodes one block from its JSON text, following the rules in the type's docs.
    pub fn from_raw(raw: Box<RawValue>) -> Result<Self, serde_json::Error> {
        let text = raw.get();
        if !text.trim_start().starts_with('{') {
            return Err(serde_json::Error::custom(
                "a content block must be a JSON object",
            ));
        }
        let Some(kind) = peek_type(text)? else {
            return Err(serde_json::Error::custom(
                "a content block has no string `type` member",
            ));
        };
        fn typed<'a, T: Deserialize<'a>>(
            kind: &str,
            text: &'a str,
        ) -> Result<T, serde_json::Error> {
            serde_json::from_str(text)
                .map_err(|e| serde_json::Error::custom(format_args!("`{kind}` content block: {e}")))
        }
        let known = KNOWN_TYPES.iter().copied().find(|t| *t == kind);
        drop(kind);
        Ok(match known {
            Some(kind @ "text") => Self::Text(typed(kind, text)?),
            Some(kind @ "image") => Self::Image(typed(kind, text)?),
            Some(kind @ "audio") => Self::Audio(typed(kind, text)?),
            Some(kind @ "resource_link") => Self::ResourceLink(typed(kind, text)?),
            Some(kind @ "resource") => Self::Resource(typed(kind, text)?),
            _ => Self::Unknown(raw),
        })
    }
}

/// The `type` tags of the blocks [`ContentBlock`] decodes into typed structs.
const KNOWN_TYPES: [&str; 5] = ["text", "image", "audio", "resource_link", "resource"];

/// Reads the `type` member of a JSON object without decoding the rest: `Ok(None)` if it is
/// missing, an error if it is not a string.
fn peek_type(json: &str) -> Result<Option<Cow<'_, str>>, serde_json::Error> {
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<Tag<'_>>(json).map(|tag| tag.kind)
}

impl PartialEq for ContentBlock {
    /// Known blocks compare by value; [`Unknown`](Self::Unknown) blocks compare by their exact
    /// JSON text.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Text(a), Self::Text(b)) => a == b,
            (Self::Image(a), Self::Image(b)) => a == b,
            (Self::Audio(a), Self::Audio(b)) => a == b,
            (Self::ResourceLink(a), Self::ResourceLink(b)) => a == b,
            (Self::Resource(a), Self::Resource(b)) => a == b,
            (Self::Unknown(a), Self::Unknown(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(t: TextContent) -> Self {
        Self::Text(t)
    }
}

impl From<ImageContent> for ContentBlock {
    fn from(i: ImageContent) -> Self {
        Self::Image(i)
    }
}

impl From<AudioContent> for ContentBlock {
    fn from(a: AudioContent) -> Self {
        Self::Audio(a)
    }
}

impl From<ResourceLink> for ContentBlock {
    fn from(r: ResourceLink) -> Self {
        Self::ResourceLink(r)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(r: EmbeddedResource) -> Self {
        Self::Resource(r)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type")]
        enum Tagged<'a> {
            #[serde(rename = "text")]
            Text(&'a TextContent),
            #[serde(rename = "image")]
            Image(&'a ImageContent),
            #[serde(rename = "audio")]
            Audio(&'a AudioContent),
            #[serde(rename = "resource_link")]
            ResourceLink(&'a ResourceLink),
            #[serde(rename = "resource")]
            Resource(&'a EmbeddedResource),
        }
        match self {
            Self::Text(t) => Tagged::Text(t).serialize(serializer),
            Self::Image(i) => Tagged::Image(i).serialize(serializer),
            Self::Audio(a) => Tagged::Audio(a).serialize(serializer),
            Self::ResourceLink(r) => Tagged::ResourceLink(r).serialize(serializer),
            Self::Resource(r) => Tagged::Resource(r).serialize(serializer),
            Self::Unknown(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Self::from_raw(raw).map_err(D::Error::custom)
    }
}
