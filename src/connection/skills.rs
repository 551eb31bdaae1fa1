//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640), client side, pure: what
//! a `skills/list` page, a `skills/get` result and a `resources/directory/read` page hold,
//! checked; the paging loop guard; and the check of a skill file read with `resources/read`
//! against the skill's entry (listed, its digest, its size). [`Client`](crate::Client) moves
//! the requests; the rules are here.
//!
//! The no-prefetch rule (SEP-2640, "Integrity and verification": "Hosts MUST NOT retrieve a
//! skill's files ahead of need — not on connection, not on listing, and not at approval"):
//! listing and getting skills read entries only; a file is read when the host asks for it.

use std::collections::HashSet;
use std::fmt;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::mcp::{JsonObject, ServerCapabilities};

/// The extension's identifier, under `capabilities.extensions`.
pub(crate) const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
/// Enumerates the skills a server serves.
pub(crate) const SKILLS_LIST: &str = "skills/list";
/// One skill's entry, by its `SKILL.md` URI.
pub(crate) const SKILLS_GET: &str = "skills/get";
/// The direct children of a directory resource (with `directoryRead`).
pub(crate) const DIRECTORY_READ: &str = "resources/directory/read";
/// The `mimeType` of a directory resource.
const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The most files one skill may list (the SEP's interoperability limit, which hosts must
/// accept and servers should not pass).
pub(crate) const MAX_SKILL_FILES: usize = 512;
/// The most bytes one skill's files may add up to (16 MiB, the same limit).
pub(crate) const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// The most skills one listing takes.
pub(crate) const MAX_SKILLS: usize = 10_000;
/// The most entries one directory listing takes.
pub(crate) const MAX_DIRECTORY_ENTRIES: usize = 10_000;

/// What a server offers of the extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillsCapability {
    /// The server serves `resources/directory/read`.
    pub directory_read: bool,
}

/// The extension as `capabilities.extensions` declares it, if it does (an object; anything
/// else is no declaration).
pub(crate) fn capability_of(capabilities: &ServerCapabilities) -> Option<SkillsCapability> {
    let declared = capabilities
        .extra
        .get("extensions")?
        .get(SKILLS_EXTENSION)?
        .as_object()?;
    Some(SkillsCapability {
        directory_read: declared.get("directoryRead") == Some(&Value::Bool(true)),
    })
}

/// One file of a skill, with what verifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillFile {
    /// Its resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hexadecimal digits: the SHA-256 of its raw bytes.
    pub digest: String,
    /// The length of its raw bytes, when the server gave it.
    pub size: Option<u64>,
}

/// A skill's entry (`skills/list`, `skills/get`): its `SKILL.md` URI, its frontmatter and, unless
/// it is generated on demand, every file it has. Checked when read: the URI names a `SKILL.md`
/// whose folder's name is the frontmatter's `name`; the frontmatter has a `name` and a
/// `description`; the files, when listed, are the skill's `SKILL.md` and files under its
/// folder, each once, each with a well-formed digest, at most 512 and 16 MiB in all.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    uri: String,
    frontmatter: JsonObject,
    files: Option<Vec<SkillFile>>,
}

impl Skill {
    /// The resource URI of its `SKILL.md`.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Its folder: the URI without `/SKILL.md`.
    pub fn root(&self) -> &str {
        &self.uri[..self.uri.len() - "/SKILL.md".len()]
    }

    /// Its name (`frontmatter.name`): a label, not an identifier (two skills may share one).
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// What it is for (`frontmatter.description`).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Its `SKILL.md` frontmatter, every field as the server sent it.
    pub fn frontmatter(&self) -> &JsonObject {
        &self.frontmatter
    }

    /// Every file of the skill (its `SKILL.md` among them), or `None` for a skill generated
    /// on demand (`resources: "dynamic"`), whose content nothing verifies.
    pub fn files(&self) -> Option<&[SkillFile]> {
        self.files.as_deref()
    }
}

/// A listing entry the client set aside, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedSkill {
    /// The entry's `uri`, as sent (empty when it had none).
    pub uri: String,
    /// The rule it breaks.
    pub reason: String,
}

/// A server's skills, every page of `skills/list`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SkillList {
    /// The skills, in the server's order. An empty or partial listing does not mean the
    /// server has no other skills: [`Client::get_skill`](crate::Client::get_skill) answers for
    /// any URI it serves.
    pub skills: Vec<Skill>,
    /// Entries that break the extension's rules, left out.
    pub rejected: Vec<RejectedSkill>,
    /// The first page's freshness hint (`ttlMs`, 2026-07-28), if any.
    pub ttl_ms: Option<u64>,
}

/// One child of a directory resource (`resources/directory/read`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirectoryEntry {
    /// Its resource URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its media type; `inode/directory` for a directory.
    pub mime_type: Option<String>,
    /// Its size in bytes, when given.
    pub size: Option<u64>,
    /// Its description, when given.
    pub description: Option<String>,
}

impl DirectoryEntry {
    /// Whether it is a directory (`mimeType: "inode/directory"`).
    pub fn is_directory(&self) -> bool {
        self.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE)
    }
}

/// Why a skill file read was refused or its content set aside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FileError {
    /// The URI is not among the skill's files (nothing was sent).
    Unlisted(String),
    /// The skill lists no files (generated on demand): nothing verifies it (nothing was sent).
    Dynamic,
    /// What the server sent is not the file its entry promised, or not a file at all.
    Mismatch(String),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Unlisted(uri) => {
                write!(
                    f,
                    "{uri} is not among the skill's files (an unlisted file is a change to the skill)"
                )
            }
            FileError::Dynamic => f.write_str(
                "the skill lists no files (resources: \"dynamic\"): its content cannot be verified",
            ),
            FileError::Mismatch(why) => f.write_str(why),
        }
    }
}

fn object(raw: &RawValue, what: &str) -> Result<JsonObject, String> {
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(format!("the {what} result is not an object")),
        Err(e) => Err(format!("the {what} result is not JSON: {e}")),
    }
}

fn next_cursor(object: &JsonObject, what: &str) -> Result<Option<String>, String> {
    match object.get("nextCursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => Ok(Some(cursor.clone())),
        Some(_) => Err(format!("the {what} result's nextCursor is not a string")),
    }
}

fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Reads and checks one skill entry.
pub(crate) fn read_skill(value: &Value) -> Result<Skill, RejectedSkill> {
    let uri = value
        .get("uri")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let reject = |reason: String| RejectedSkill {
        uri: uri.clone(),
        reason,
    };
    let Value::Object(entry) = value else {
        return Err(reject("the entry is not an object".to_owned()));
    };
    let Some(folder) = uri.strip_suffix("/SKILL.md").filter(|f| !f.is_empty()) else {
        return Err(reject("the uri does not name a SKILL.md".to_owned()));
    };
    let Some(Value::Object(frontmatter)) = entry.get("frontmatter") else {
        return Err(reject("the entry has no frontmatter object".to_owned()));
    };
    let (Some(Value::String(name)), Some(Value::String(_))) =
        (frontmatter.get("name"), frontmatter.get("description"))
    else {
        return Err(reject(
            "the frontmatter lacks a string name or description".to_owned(),
        ));
    };
    let last = folder.rsplit('/').next().unwrap_or_default();
    if name.is_empty() || last != name {
        return Err(reject(format!(
            "the skill's folder {last:?} is not its name {name:?}"
        )));
    }
    let files = match entry.get("resources") {
        Some(Value::String(dynamic)) if dynamic == "dynamic" => None,
        // "MAY be omitted only for dynamically generated skills".
        None => None,
        Some(Value::Array(files)) => Some(read_files(files, &uri, folder).map_err(reject)?),
        Some(_) => {
            return Err(reject(
                "resources is neither a list nor \"dynamic\"".to_owned(),
            ));
        }
    };
    Ok(Skill {
        uri,
        frontmatter: frontmatter.clone(),
        files,
    })
}

fn read_files(files: &[Value], uri: &str, folder: &str) -> Result<Vec<SkillFile>, String> {
    if files.len() > MAX_SKILL_FILES {
        return Err(format!(
            "the skill lists {} files (at most {MAX_SKILL_FILES})",
            files.len()
        ));
    }
    let prefix = format!("{folder}/");
    let mut seen = HashSet::with_capacity(files.len());
    let mut total: u64 = 0;
    let mut typed = Vec::with_capacity(files.len());
    for file in files {
        let file_uri = file.get("uri").and_then(Value::as_str).unwrap_or_default();
        let digest = file
            .get("digest")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !file_uri.starts_with(&prefix) || file_uri.len() == prefix.len() {
            return Err(format!(
                "the file {file_uri:?} is not in the skill's folder"
            ));
        }
        if file_uri
            .split('/')
            .any(|segment| segment == ".." || segment == ".")
        {
            return Err(format!("the file {file_uri:?} has a dot segment"));
        }
        if !is_digest(digest) {
            return Err(format!("the file {file_uri:?} has no sha256 digest"));
        }
        if !seen.insert(file_uri.to_owned()) {
            return Err(format!("the file {file_uri:?} is listed twice"));
        }
        let size = match file.get("size") {
            None => None,
            Some(size) => Some(
                size.as_u64()
                    .ok_or_else(|| format!("the file {file_uri:?} has a bad size"))?,
            ),
        };
        total = total.saturating_add(size.unwrap_or(0));
        if total > MAX_SKILL_BYTES {
            return Err(format!("the skill's files pass {MAX_SKILL_BYTES} bytes"));
        }
        typed.push(SkillFile {
            uri: file_uri.to_owned(),
            digest: digest.to_owned(),
            size,
        });
    }
    if !seen.contains(uri) {
        return Err("the files do not include the skill's SKILL.md".to_owned());
    }
    Ok(typed)
}

/// One `skills/list` page: its entries (each read or rejected), its next cursor and its
/// freshness hint.
pub(crate) struct ListPage {
    pub(crate) entries: Vec<Result<Skill, RejectedSkill>>,
    pub(crate) next_cursor: Option<String>,
    pub(crate) ttl_ms: Option<u64>,
}

pub(crate) fn read_list_page(raw: &RawValue) -> Result<ListPage, String> {
    let result = object(raw, SKILLS_LIST)?;
    let Some(Value::Array(skills)) = result.get("skills") else {
        return Err("the skills/list result has no skills array".to_owned());
    };
    Ok(ListPage {
        entries: skills.iter().map(read_skill).collect(),
        next_cursor: next_cursor(&result, SKILLS_LIST)?,
        ttl_ms: result.get("ttlMs").and_then(Value::as_u64),
    })
}

/// A `skills/get` result for `uri`: its skill, which must be the one asked for.
pub(crate) fn read_get(raw: &RawValue, uri: &str) -> Result<Skill, String> {
    let result = object(raw, SKILLS_GET)?;
    let Some(entry) = result.get("skill") else {
        return Err("the skills/get result has no skill".to_owned());
    };
    let skill = read_skill(entry).map_err(|rejected| format!("the skill: {}", rejected.reason))?;
    if skill.uri != uri {
        return Err(format!(
            "skills/get for {uri} answered with the skill {}",
            skill.uri
        ));
    }
    Ok(skill)
}

/// One `resources/directory/read` page: its entries and next cursor.
pub(crate) fn read_directory_page(
    raw: &RawValue,
) -> Result<(Vec<DirectoryEntry>, Option<String>), String> {
    let result = object(raw, DIRECTORY_READ)?;
    let Some(Value::Array(resources)) = result.get("resources") else {
        return Err("the resources/directory/read result has no resources array".to_owned());
    };
    let entries = resources
        .iter()
        .map(|resource| {
            let text = |name: &str| {
                resource
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            match (text("uri"), text("name")) {
                (Some(uri), Some(name)) => Ok(DirectoryEntry {
                    uri,
                    name,
                    mime_type: text("mimeType"),
                    size: resource.get("size").and_then(Value::as_u64),
                    description: text("description"),
                }),
                _ => Err("a directory entry lacks a uri or a name".to_owned()),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((entries, next_cursor(&result, DIRECTORY_READ)?))
}

/// The cursor loop guard of a paged listing: at most `max_pages` pages, never a cursor
/// twice, at most `max_items` items in all.
pub(crate) struct Pages {
    seen: HashSet<String>,
    pages: usize,
    max_pages: usize,
    items: usize,
    max_items: usize,
}

impl Pages {
    pub(crate) fn new(max_pages: usize, max_items: usize) -> Pages {
        Pages {
            seen: HashSet::new(),
            pages: 0,
            max_pages,
            items: 0,
            max_items,
        }
    }

    /// A page of `items` came with `next`: the cursor to ask for, `None` when done, or why the
    /// listing stops.
    pub(crate) fn next(
        &mut self,
        items: usize,
        next: Option<String>,
    ) -> Result<Option<String>, String> {
        self.pages += 1;
        self.items = self.items.saturating_add(items);
        if self.items > self.max_items {
            return Err(format!("the listing passes {} entries", self.max_items));
        }
        let Some(cursor) = next else { return Ok(None) };
        if !self.seen.insert(cursor.clone()) {
            return Err(format!(
                "the server repeated the cursor {cursor:?} (a loop)"
            ));
        }
        if self.pages >= self.max_pages {
            return Err(format!(
                "the listing has more than {} pages",
                self.max_pages
            ));
        }
        Ok(Some(cursor))
    }
}

/// The entry a read of `uri` is checked against, before anything is sent: the skill must
/// list its files, and `uri` among them.
pub(crate) fn listed_file<'a>(skill: &'a Skill, uri: &str) -> Result<&'a SkillFile, FileError> {
    let files = skill.files().ok_or(FileError::Dynamic)?;
    files
        .iter()
        .find(|file| file.uri == uri)
        .ok_or_else(|| FileError::Unlisted(uri.to_owned()))
}

/// The bytes of a `resources/read` result for `file`, verified: one content of its URI, text
/// (UTF-8 bytes) or blob (Base64), of the listed size and SHA-256 digest.
pub(crate) fn verified_file(raw: &RawValue, file: &SkillFile) -> Result<Vec<u8>, FileError> {
    let mismatch = |why: String| FileError::Mismatch(why);
    let result = object(raw, "resources/read").map_err(mismatch)?;
    let Some(Value::Array(contents)) = result.get("contents") else {
        return Err(mismatch(
            "the resources/read result has no contents".to_owned(),
        ));
    };
    let [content] = contents.as_slice() else {
        return Err(mismatch(format!(
            "the resources/read result has {} contents, not one",
            contents.len()
        )));
    };
    if content.get("uri").and_then(Value::as_str) != Some(file.uri.as_str()) {
        return Err(mismatch(format!("the content read is not {}", file.uri)));
    }
    let bytes = match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), None) => text.as_bytes().to_vec(),
        (None, Some(Value::String(blob))) => crate::base64::decode(
            blob,
            crate::base64::Flavor::Standard,
            crate::base64::Padding::Required,
        )
        .ok_or_else(|| mismatch(format!("the blob of {} is not Base64", file.uri)))?,
        _ => {
            return Err(mismatch(format!(
                "{} has neither text nor a blob",
                file.uri
            )));
        }
    };
    if file.size.is_some_and(|size| size != bytes.len() as u64) {
        return Err(mismatch(format!(
            "{} is {} bytes, not the {} its entry lists",
            file.uri,
            bytes.len(),
            file.size.unwrap_or_default()
        )));
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest.as_ref() {
        hex.push_str(&format!("{byte:02x}"));
    }
    if file.digest != format!("sha256:{hex}") {
        return Err(mismatch(format!(
            "the content of {} does not match its digest (stale or altered: get the skill again)",
            file.uri
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
