//! The Skills extension's methods on [`Client`] (SEP-2640): list, get, a directory's children and
//! a verified file read. The rules are the connection layer's (`connection::skills`); these
//! move the requests, and read nothing ahead of the host's asking.

use std::time::Duration;

use serde_json::json;

use super::Client;
use crate::connection::skills::{self, FileError, Pages};
use crate::connection::skills::{DirectoryEntry, Skill, SkillList, SkillsCapability};
use crate::error::{Error, ErrorKind};

impl Client {
    /// What the server offers of the Skills extension, when it declares it.
    pub fn skills_capability(&self) -> Option<SkillsCapability> {
        skills::capability_of(&self.server()?.capabilities)
    }

    /// The extension as both sides declared it, or why a skills request is refused before
    /// anything is sent (boxed: an error is large, and this is checked on every call).
    fn skills_negotiated(&self) -> Result<SkillsCapability, Box<Error>> {
        if !self.skills {
            return Err(Box::new(Error::new(
                ErrorKind::Refused,
                "this client does not declare the skills extension (ClientOptions::skills)",
            )));
        }
        self.skills_capability().ok_or_else(|| {
            Box::new(Error::new(
                ErrorKind::Refused,
                format!(
                    "the server does not declare the {} extension",
                    skills::SKILLS_EXTENSION
                ),
            ))
        })
    }

    /// Every skill the server lists (`skills/list`, all pages: at most
    /// [`ClientOptions::max_list_pages`](crate::ClientOptions::max_list_pages), a repeated
    /// cursor stops it as a loop, at most 10,000 skills). Entries only: no skill's files are
    /// read. Entries that break the extension's rules are set aside in
    /// [`SkillList::rejected`]. Refused unless both sides declare the extension.
    pub async fn list_skills(&self, timeout: Option<Duration>) -> Result<SkillList, Error> {
        self.skills_negotiated().map_err(|error| *error)?;
        let mut pages = Pages::new(self.max_list_pages, skills::MAX_SKILLS);
        let mut list = SkillList {
            skills: Vec::new(),
            rejected: Vec::new(),
            ttl_ms: None,
        };
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let raw = self
                .request_raw(skills::SKILLS_LIST, Some(params), timeout)
                .await?;
            let page = skills::read_list_page(&raw).map_err(protocol)?;
            if cursor.is_none() {
                list.ttl_ms = page.ttl_ms;
            }
            let count = page.entries.len();
            for entry in page.entries {
                match entry {
                    Ok(skill) => list.skills.push(skill),
                    Err(rejected) => list.rejected.push(rejected),
                }
            }
            match pages.next(count, page.next_cursor) {
                Ok(Some(next)) => cursor = Some(next),
                Ok(None) => return Ok(list),
                Err(why) => return Err(Error::new(ErrorKind::LimitExceeded, why)),
            }
        }
    }

    /// One skill's entry by the URI of its `SKILL.md` (`skills/get`), listed or not. Its
    /// files are not read. Refused unless both sides declare the extension; a server that
    /// serves no skill there answers `-32602` ([`ErrorKind::ServerError`]).
    pub async fn get_skill(&self, uri: &str, timeout: Option<Duration>) -> Result<Skill, Error> {
        self.skills_negotiated().map_err(|error| *error)?;
        let raw = self
            .request_raw(skills::SKILLS_GET, Some(json!({ "uri": uri })), timeout)
            .await?;
        skills::read_get(&raw, uri).map_err(protocol)
    }

    /// The direct children of a directory resource (`resources/directory/read`, all pages,
    /// bounded as [`list_skills`](Self::list_skills) is), for instance a skill's root
    /// ([`Skill::root`]) or a folder in it. Refused unless the server declares
    /// `directoryRead`.
    pub async fn read_skill_directory(
        &self,
        uri: &str,
        timeout: Option<Duration>,
    ) -> Result<Vec<DirectoryEntry>, Error> {
        if !self
            .skills_negotiated()
            .map_err(|error| *error)?
            .directory_read
        {
            return Err(Error::new(
                ErrorKind::Refused,
                "the server does not declare directoryRead: resources/directory/read is not offered",
            ));
        }
        let mut pages = Pages::new(self.max_list_pages, skills::MAX_DIRECTORY_ENTRIES);
        let mut entries = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut params = json!({ "uri": uri });
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let raw = self
                .request_raw(skills::DIRECTORY_READ, Some(params), timeout)
                .await?;
            let (page, next) = skills::read_directory_page(&raw).map_err(protocol)?;
            let count = page.len();
            entries.extend(page);
            match pages.next(count, next) {
                Ok(Some(next)) => cursor = Some(next),
                Ok(None) => return Ok(entries),
                Err(why) => return Err(Error::new(ErrorKind::LimitExceeded, why)),
            }
        }
    }

    /// One file of `skill` (its `SKILL.md` or a supporting file), read with `resources/read`
    /// when the host needs it and verified against the skill's entry: only a file the entry
    /// lists is asked for (an unlisted one is refused, nothing sent), and its bytes must have
    /// the listed size and SHA-256 digest, or the read fails ([`ErrorKind::Protocol`]: the
    /// skill changed or the content was altered; get the skill again). A skill generated on
    /// demand lists no files, and its files are refused: nothing could verify them.
    pub async fn read_skill_file(
        &self,
        skill: &Skill,
        uri: &str,
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, Error> {
        self.skills_negotiated().map_err(|error| *error)?;
        let file = skills::listed_file(skill, uri)
            .map_err(|error| Error::new(ErrorKind::Refused, error.to_string()))?;
        let raw = self
            .request_raw("resources/read", Some(json!({ "uri": uri })), timeout)
            .await?;
        skills::verified_file(&raw, file).map_err(|error| match error {
            FileError::Mismatch(why) => protocol(why),
            other => Error::new(ErrorKind::Refused, other.to_string()),
        })
    }
}

fn protocol(why: String) -> Error {
    Error::new(ErrorKind::Protocol, why)
}
