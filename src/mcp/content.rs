//! Content blocks (schema `ContentBlock`): what a tool result, a prompt message or a sampling
//! message carries, tagged by `type`.

use std::borrow::Cow;

use std::fmt;

use serde::de::{self, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::common::{Annotations, Icon, JsonObject};
use super::de::{
    MemberName, MemberSeed, Members, OrderedObject, deserialize_members, extra, once, open_struct,
};

/// Text (schema `TextContent`, `"type": "text"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    TextContent via TextContentBuilder, expecting "a text content block",
    {
        text: String = "text" [required] via super::de::once_string,
        annotations: Option<Annotations> = "annotations",
        meta: Option<JsonObject> = "_meta",
    }
    ignore ["type"]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ImageContent via ImageContentBuilder, expecting "an image content block",
    {
        data: String = "data" [required],
        mime_type: String = "mimeType" [required],
        annotations: Option<Annotations> = "annotations",
        meta: Option<JsonObject> = "_meta",
    }
    ignore ["type"]
}

/// Audio (schema `AudioContent`, `"type": "audio"`); since 2025-03-26.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    AudioContent via AudioContentBuilder, expecting "an audio content block",
    {
        data: String = "data" [required],
        mime_type: String = "mimeType" [required],
        annotations: Option<Annotations> = "annotations",
        meta: Option<JsonObject> = "_meta",
    }
    ignore ["type"]
}

/// A link to a resource the client may read or subscribe to (schema `ResourceLink`,
/// `"type": "resource_link"`); since 2025-06-18. The resource need not appear in
/// `resources/list` (`server/tools.mdx`, "Resource Links").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    ResourceLink via ResourceLinkBuilder, expecting "a resource link",
    {
        uri: String = "uri" [required],
        name: String = "name" [required],
        title: Option<String> = "title",
        description: Option<String> = "description",
        mime_type: Option<String> = "mimeType",
        size: Option<u64> = "size",
        annotations: Option<Annotations> = "annotations",
        icons: Option<Vec<Icon>> = "icons",
        meta: Option<JsonObject> = "_meta",
    }
    ignore ["type"]
}

/// A resource's contents embedded in a result (schema `EmbeddedResource`, `"type": "resource"`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EmbeddedResource {
    /// The contents: text or a base64 blob.
    pub resource: ResourceContents,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`; since 2025-06-18.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent (never `type`).
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    EmbeddedResource via EmbeddedResourceBuilder, expecting "an embedded resource",
    {
        resource: ResourceContents = "resource" [required],
        annotations: Option<Annotations> = "annotations",
        meta: Option<JsonObject> = "_meta",
    }
    ignore ["type"]
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
#[non_exhaustive]
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
        deserialize_members::<ResourceContentsBuilder, D>(deserializer, "resource contents")
    }
}

/// Collects the members of one [`ResourceContents`] in one pass. `text` and `blob` wait as JSON
/// values (a string moves out of one without a copy) until the end says which variant the
/// object is.
#[derive(Default)]
struct ResourceContentsBuilder {
    uri: Option<String>,
    mime_type: Option<Option<String>>,
    text: Option<Value>,
    blob: Option<Value>,
    meta: Option<Option<JsonObject>>,
    extra: JsonObject,
}

impl Members for ResourceContentsBuilder {
    type Output = ResourceContents;

    fn member<'de, D: Deserializer<'de>>(
        &mut self,
        key: Cow<'_, str>,
        value: D,
    ) -> Result<(), D::Error> {
        match &*key {
            "uri" => once(&mut self.uri, value, "uri"),
            "mimeType" => once(&mut self.mime_type, value, "mimeType"),
            "text" => once(&mut self.text, value, "text"),
            "blob" => once(&mut self.blob, value, "blob"),
            "_meta" => once(&mut self.meta, value, "_meta"),
            _ => extra(&mut self.extra, key, value),
        }
    }

    fn finish<E: de::Error>(self) -> Result<ResourceContents, E> {
        let string = |value: Value| String::deserialize(value).map_err(E::custom);
        let Self {
            uri,
            mime_type,
            text,
            blob,
            meta,
            mut extra,
        } = self;
        let uri = || uri.ok_or_else(|| E::missing_field("uri"));
        match (text, blob) {
            (Some(text), blob) => {
                // Both: `text` wins, `blob` is kept as an extra member.
                if let Some(blob) = blob {
                    extra.insert("blob".to_owned(), blob);
                }
                Ok(ResourceContents::Text(TextResourceContents {
                    uri: uri()?,
                    mime_type: mime_type.flatten(),
                    text: string(text)?,
                    meta: meta.flatten(),
                    extra,
                }))
            }
            (None, Some(blob)) => Ok(ResourceContents::Blob(BlobResourceContents {
                uri: uri()?,
                mime_type: mime_type.flatten(),
                blob: string(blob)?,
                meta: meta.flatten(),
                extra,
            })),
            (None, None) => Err(E::custom(
                "resource contents have neither `text` nor `blob`",
            )),
        }
    }
}

/// Text contents of a resource (schema `TextResourceContents`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    TextResourceContents via TextResourceContentsBuilder, expecting "text resource contents",
    {
        uri: String = "uri" [required],
        mime_type: Option<String> = "mimeType",
        text: String = "text" [required],
        meta: Option<JsonObject> = "_meta",
    }
}

/// Binary contents of a resource (schema `BlobResourceContents`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    pub meta: Option<JsonObject>,
    /// Any other member, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_struct! {
    BlobResourceContents via BlobResourceContentsBuilder, expecting "blob resource contents",
    {
        uri: String = "uri" [required],
        mime_type: Option<String> = "mimeType",
        blob: String = "blob" [required],
        meta: Option<JsonObject> = "_meta",
    }
}

/// One block of content (schema `ContentBlock`), told apart by its `type` member.
///
/// Decoding rules:
/// - the block must be a JSON object with a string `type`;
/// - `text`, `image`, `audio`, `resource_link` and `resource` decode into their typed struct,
///   and a block of one of these types that does not fit it (an image without `data`, say) is an
///   error, not [`Unknown`](Self::Unknown);
/// - any other `type` is kept in [`Unknown`](Self::Unknown) as JSON text and re-serializes as
///   that text. Which revision defines which type: `resource_link` since 2025-06-18, `audio`
///   since 2025-03-26 (`ProtocolVersion::has_resource_links`). Decoding accepts all of them on
///   every revision.
///
/// A block is decoded in one pass: each member is read once, straight into its field (a 1 MiB
/// `text` is scanned and copied once). Members that come before `type` are held as JSON values
/// until `type` says what they are. So an unknown block is kept member by member rather than as
/// the bytes received: the members in the order received, each member after `type` as its
/// exact JSON text, `type` and each member before it as the same JSON value (numbers may be
/// respelled, `1e3` as `1000.0`), with no whitespace between members and escapes in member
/// names decoded. A compact block whose `type` comes first comes back byte for byte.
///
/// Serializing writes `type` first, then the struct's members, then its `extra` members.
///
/// Because [`Unknown`](Self::Unknown) holds a [`RawValue`], a `ContentBlock` decodes only from
/// serde_json (from text, or from a `serde_json::Value`), and not from inside a struct that
/// buffers its input, such as one with a `#[serde(flatten)]` member; that is why no type in
/// this module uses `flatten` for decoding.
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
    /// Any other `type`, kept as JSON text, member by member (see above).
    Unknown(Box<RawValue>),
}

impl ContentBlock {
    /// The `type` tag of a known block, or `None` for [`Unknown`](Self::Unknown) (see
    /// [`type_name`](Self::type_name)).
    pub(crate) fn known_type(&self) -> Option<&'static str> {
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

    /// Decodes one block from its JSON text, following the rules in the type's docs; an
    /// unknown block keeps `raw`, the exact text.
    #[cfg(test)]
    pub(crate) fn from_raw(raw: Box<RawValue>) -> Result<Self, serde_json::Error> {
        match serde_json::from_str::<Self>(raw.get())? {
            Self::Unknown(_) => Ok(Self::Unknown(raw)),
            known => Ok(known),
        }
    }
}

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
        deserializer.deserialize_map(BlockVisitor)
    }
}

/// Reads a [`ContentBlock`] member by member (see its docs for the rules).
struct BlockVisitor;

/// [`value_one_copy`](super::de::value_one_copy) as a seed, for `MapAccess::next_value_seed`.
struct ValueOneCopy;

impl<'de> de::DeserializeSeed<'de> for ValueOneCopy {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        super::de::value_one_copy(deserializer)
    }
}

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block (a JSON object with a string `type`)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        // The members before `type`, until it says what they are.
        let mut early: Vec<(Cow<'de, str>, Value)> = Vec::new();
        let mut block: Option<Block> = None;
        while let Some(MemberName(key)) = map.next_key()? {
            if let Some(block) = &mut block {
                if key == "type" {
                    return Err(A::Error::duplicate_field("type"));
                }
                let kind = block.kind();
                map.next_value_seed(MemberSeed(block, key))
                    .map_err(|e| in_block(kind, e))?;
            } else if key == "type" {
                let Some(MemberName(tag)) = map.next_value::<Option<MemberName<'de>>>()? else {
                    return Err(no_type());
                };
                block = Some(Block::start(tag, early.drain(..))?);
            } else if key == "text" {
                // Most likely a text block's text, perhaps a large one: read in one copy,
                // and moved into the block once `type` says it is one.
                let text = map.next_value_seed(ValueOneCopy)?;
                early.push((key, text));
            } else {
                early.push((key, map.next_value()?));
            }
        }
        match block {
            Some(block) => block.finish(),
            None => Err(no_type()),
        }
    }
}

fn no_type<E: de::Error>() -> E {
    E::custom("a content block has no string `type` member")
}

/// An error about a block of a known type, saying which.
fn in_block<E: de::Error>(kind: Option<&'static str>, error: impl fmt::Display) -> E {
    match kind {
        Some(kind) => E::custom(format_args!("`{kind}` content block: {error}")),
        None => E::custom(error),
    }
}

/// A block being read, once its `type` is known.
enum Block {
    Text(TextContentBuilder),
    Image(ImageContentBuilder),
    Audio(AudioContentBuilder),
    ResourceLink(ResourceLinkBuilder),
    Resource(EmbeddedResourceBuilder),
    /// The members of a block of another type, in order.
    Unknown(Vec<(String, Kept)>),
}

/// A member of an unknown block: its exact text, or its value if it came before `type`.
enum Kept {
    Value(Value),
    Raw(Box<RawValue>),
}

impl Serialize for Kept {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Kept::Value(value) => value.serialize(serializer),
            Kept::Raw(raw) => raw.serialize(serializer),
        }
    }
}

impl Block {
    /// The block for `tag`, with the members that came before it.
    fn start<'e, E: de::Error>(
        tag: Cow<'_, str>,
        early: impl Iterator<Item = (Cow<'e, str>, Value)>,
    ) -> Result<Self, E> {
        let mut block = match &*tag {
            "text" => Self::Text(TextContentBuilder::default()),
            "image" => Self::Image(ImageContentBuilder::default()),
            "audio" => Self::Audio(AudioContentBuilder::default()),
            "resource_link" => Self::ResourceLink(ResourceLinkBuilder::default()),
            "resource" => Self::Resource(EmbeddedResourceBuilder::default()),
            _ => {
                let mut members: Vec<(String, Kept)> = early
                    .map(|(key, value)| (key.into_owned(), Kept::Value(value)))
                    .collect();
                members.push((
                    "type".to_owned(),
                    Kept::Value(Value::String(tag.into_owned())),
                ));
                return Ok(Self::Unknown(members));
            }
        };
        let kind = block.kind();
        for (key, value) in early {
            let value = match (&mut block, &*key, value) {
                (Self::Text(text), "text", Value::String(string)) => {
                    // Moved in rather than read again from the value.
                    if text.text.is_some() {
                        return Err(in_block(kind, E::duplicate_field("text")));
                    }
                    text.text = Some(string);
                    continue;
                }
                (_, _, value) => value,
            };
            block.member(key, value).map_err(|e| in_block(kind, e))?;
        }
        Ok(block)
    }

    /// The `type` of a known block.
    fn kind(&self) -> Option<&'static str> {
        Some(match self {
            Self::Text(_) => "text",
            Self::Image(_) => "image",
            Self::Audio(_) => "audio",
            Self::ResourceLink(_) => "resource_link",
            Self::Resource(_) => "resource",
            Self::Unknown(_) => return None,
        })
    }
}

impl Members for Block {
    type Output = ContentBlock;

    fn member<'de, D: Deserializer<'de>>(
        &mut self,
        key: Cow<'_, str>,
        value: D,
    ) -> Result<(), D::Error> {
        match self {
            Self::Text(b) => b.member(key, value),
            Self::Image(b) => b.member(key, value),
            Self::Audio(b) => b.member(key, value),
            Self::ResourceLink(b) => b.member(key, value),
            Self::Resource(b) => b.member(key, value),
            Self::Unknown(members) => {
                let raw = Box::<RawValue>::deserialize(value)?;
                members.push((key.into_owned(), Kept::Raw(raw)));
                Ok(())
            }
        }
    }

    fn finish<E: de::Error>(self) -> Result<ContentBlock, E> {
        let kind = self.kind();
        let block = match self {
            Self::Text(b) => b.finish().map(ContentBlock::Text),
            Self::Image(b) => b.finish().map(ContentBlock::Image),
            Self::Audio(b) => b.finish().map(ContentBlock::Audio),
            Self::ResourceLink(b) => b.finish().map(ContentBlock::ResourceLink),
            Self::Resource(b) => b.finish().map(ContentBlock::Resource),
            Self::Unknown(members) => {
                return serde_json::value::to_raw_value(&OrderedObject(&members))
                    .map(ContentBlock::Unknown)
                    .map_err(E::custom);
            }
        };
        block.map_err(|e: E| in_block(kind, e))
    }
}
