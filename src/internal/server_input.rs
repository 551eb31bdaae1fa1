//! The `server_input` harness: what a server sends that the client checks before a host sees
//! it or a file is trusted: elicitation and sampling requests (`connection::input::classify`,
//! URL mode and sampling with tools), a `-32042` error's elicitations, and the Skills
//! extension's listing, `skills/get`, directory and file-read results
//! (`connection::skills`).

use serde_json::value::RawValue;

use crate::connection::input::{self, InputKind};
use crate::connection::input::{SamplingAnswer, SamplingContent, ToolUse};
use crate::connection::skills;
use crate::mcp::{ClientCapabilities, JsonObject};

/// The `server_input` fuzz target. The first byte picks the reader (its low 3 bits) and the
/// revision's rules (bit 3: `elicitationId` required, as at 2025-11-25); the rest is the
/// message. Checks: an accepted URL elicitation's URL is https or http to loopback, with no
/// white space or control character; an accepted sampling request with tools answers a
/// plain text reply; an accepted skill's files sit under its folder, each with a `sha256:`
/// digest, and a file read is verified against the entry; nothing panics.
pub(crate) fn fuzz_server_input(data: &[u8]) {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let require_id = knob & 8 != 0;
    match knob & 7 {
        0 | 1 => {
            let method = if knob & 7 == 0 {
                "elicitation/create"
            } else {
                "sampling/createMessage"
            };
            let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
                return;
            };
            let declared = declared();
            match input::classify(method, Some(&raw), &declared, require_id) {
                Ok(InputKind::Url(url)) => check_url(url.url()),
                Ok(InputKind::ToolSampling(sampling)) => {
                    let _ = format!("{sampling:?}");
                    let text = SamplingAnswer::new(
                        "m",
                        vec![SamplingContent::Block(Box::new(
                            crate::mcp::ContentBlock::Text(crate::mcp::TextContent::new("a")),
                        ))],
                    );
                    let _ = sampling.answer_json(&text);
                    if let Some(tool) = sampling.tools.first() {
                        let uses = SamplingAnswer::new(
                            "m",
                            vec![SamplingContent::ToolUse(ToolUse::new(
                                "u1",
                                tool.name.clone(),
                                JsonObject::new(),
                            ))],
                        );
                        let _ = sampling.answer_json(&uses);
                    }
                }
                Ok(_) | Err(_) => {}
            }
        }
        2 => {
            if let Ok(list) = input::required_elicitations(text) {
                for url in &list {
                    check_url(url.url());
                    assert!(url.elicitation_id().is_some());
                }
            }
        }
        3 | 4 => {
            // A listing page (3) or a `skills/get` result (4), then a file read checked
            // against the first skill's first file: the input's second half.
            let (entry, read) = text.split_once("\n#read\n").unwrap_or((text, ""));
            let Ok(raw) = serde_json::from_str::<Box<RawValue>>(entry) else {
                return;
            };
            let skill = if knob & 7 == 3 {
                match skills::read_list_page(&raw) {
                    Ok(page) => page.entries.into_iter().find_map(Result::ok),
                    Err(_) => None,
                }
            } else {
                skills::read_get(&raw, "skill://fuzz/SKILL.md").ok()
            };
            let Some(skill) = skill else { return };
            check_skill(&skill);
            if let Some(file) = skill.files().and_then(|files| files.first()) {
                assert!(skills::listed_file(&skill, &file.uri).is_ok());
                if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(read)
                    && let Ok(bytes) = skills::verified_file(&raw, file)
                    && let Some(size) = file.size
                {
                    assert_eq!(bytes.len() as u64, size);
                }
            }
        }
        5 => {
            let Ok(raw) = serde_json::from_str::<Box<RawValue>>(text) else {
                return;
            };
            let _ = skills::read_directory_page(&raw);
        }
        _ => {}
    }
}

/// A client that declared every input mode the checks read.
fn declared() -> ClientCapabilities {
    let mut elicitation = JsonObject::new();
    elicitation.insert("form".to_owned(), serde_json::json!({}));
    elicitation.insert("url".to_owned(), serde_json::json!({}));
    let mut sampling = JsonObject::new();
    sampling.insert("tools".to_owned(), serde_json::json!({}));
    ClientCapabilities {
        elicitation: Some(elicitation),
        sampling: Some(sampling),
        ..ClientCapabilities::default()
    }
}

fn check_url(url: &str) {
    // A scheme is case-insensitive (RFC 3986 section 3.1): `Https://` is https.
    let scheme = url
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    assert!(matches!(scheme.as_deref(), Some("https" | "http")), "{url}");
    assert!(
        !url.chars().any(|c| c.is_whitespace() || c.is_control()),
        "{url:?}"
    );
}

fn check_skill(skill: &skills::Skill) {
    assert!(skill.uri().ends_with("/SKILL.md"), "{}", skill.uri());
    let root = skill.root();
    for file in skill.files().unwrap_or_default() {
        assert!(
            file.uri == skill.uri() || file.uri.starts_with(&format!("{root}/")),
            "{} outside {root}",
            file.uri
        );
        assert!(file.digest.starts_with("sha256:"), "{}", file.digest);
    }
}
