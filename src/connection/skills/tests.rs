//! The checks of skill entries, pages and file reads.

use serde_json::{Value, json};

use super::*;

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("json")
}

fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

const SKILL_MD: &str =
    "---\nname: git-workflow\ndescription: Team conventions\n---\nUse feature branches.\n";

fn entry() -> Value {
    json!({
        "uri": "skill://git-workflow/SKILL.md",
        "frontmatter": {"name": "git-workflow", "description": "Team conventions", "license": "MIT"},
        "resources": [
            {"uri": "skill://git-workflow/SKILL.md", "digest": sha256(SKILL_MD.as_bytes()), "size": SKILL_MD.len()},
            {"uri": "skill://git-workflow/references/GUIDE.md", "digest": sha256(b"guide"), "size": 5}
        ]
    })
}

#[test]
fn an_entry_is_read_with_its_files_and_frontmatter() {
    let skill = read_skill(&entry()).expect("skill");
    assert_eq!(skill.uri(), "skill://git-workflow/SKILL.md");
    assert_eq!(skill.root(), "skill://git-workflow");
    assert_eq!(skill.name(), "git-workflow");
    assert_eq!(skill.description(), "Team conventions");
    assert_eq!(skill.frontmatter()["license"], "MIT");
    let files = skill.files().expect("listed");
    assert_eq!(files.len(), 2);
    assert_eq!(files[1].size, Some(5));
    let nested = json!({"uri": "skill://acme/billing/refunds/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "d"}, "resources": "dynamic"});
    let skill = read_skill(&nested).expect("dynamic");
    assert_eq!(skill.root(), "skill://acme/billing/refunds");
    assert!(skill.files().is_none());
}

#[test]
fn entries_that_break_the_rules_are_rejected() {
    let with = |key: &str, value: Value| {
        let mut e = entry();
        e[key] = value;
        e
    };
    let file = |uri: &str, digest: &str| json!({"uri": uri, "digest": digest});
    let good = sha256(b"x");
    let md = "skill://git-workflow/SKILL.md";
    let cases = [
        (
            "not SKILL.md",
            with("uri", json!("skill://git-workflow/README.md")),
        ),
        (
            "folder is not the name",
            with("uri", json!("skill://other/SKILL.md")),
        ),
        ("no frontmatter", with("frontmatter", json!("name: x"))),
        (
            "no description",
            with("frontmatter", json!({"name": "git-workflow"})),
        ),
        ("resources of another kind", with("resources", json!(7))),
        (
            "a file outside the folder",
            with(
                "resources",
                json!([file(md, &good), file("skill://other/x.md", &good)]),
            ),
        ),
        (
            "a dot segment",
            with(
                "resources",
                json!([file(md, &good), file("skill://git-workflow/../x", &good)]),
            ),
        ),
        (
            "a bad digest",
            with("resources", json!([file(md, "sha256:ABC")])),
        ),
        (
            "a file twice",
            with("resources", json!([file(md, &good), file(md, &good)])),
        ),
        (
            "no SKILL.md among the files",
            with(
                "resources",
                json!([file("skill://git-workflow/a.md", &good)]),
            ),
        ),
        (
            "too many files",
            with(
                "resources",
                Value::Array(
                    (0..600)
                        .map(|i| file(&format!("skill://git-workflow/f{i}"), &good))
                        .collect(),
                ),
            ),
        ),
        (
            "too many bytes",
            with(
                "resources",
                json!([{"uri": md, "digest": good, "size": 17u64 * 1024 * 1024}]),
            ),
        ),
        (
            "a bad size",
            with(
                "resources",
                json!([{"uri": md, "digest": good, "size": -1}]),
            ),
        ),
    ];
    for (what, value) in cases {
        let rejected = read_skill(&value).expect_err(what);
        assert!(!rejected.reason.is_empty(), "{what}");
    }
    assert!(read_skill(&json!([1])).is_err());
}

#[test]
fn a_list_page_keeps_good_entries_and_sets_bad_ones_aside() {
    let page = read_list_page(&raw(&json!({
        "skills": [entry(), {"uri": "skill://x/SKILL.md"}],
        "nextCursor": "c2", "ttlMs": 500, "cacheScope": "private"
    })))
    .expect("page");
    assert!(page.entries[0].is_ok());
    assert_eq!(
        page.entries[1].as_ref().unwrap_err().uri,
        "skill://x/SKILL.md"
    );
    assert_eq!(page.next_cursor.as_deref(), Some("c2"));
    assert_eq!(page.ttl_ms, Some(500));
    for bad in [
        json!({}),
        json!({"skills": {}}),
        json!({"skills": [], "nextCursor": 3}),
        json!([]),
    ] {
        assert!(read_list_page(&raw(&bad)).is_err(), "{bad}");
    }
}

#[test]
fn get_must_answer_for_the_uri_asked() {
    let result = raw(&json!({"skill": entry()}));
    assert!(read_get(&result, "skill://git-workflow/SKILL.md").is_ok());
    assert!(read_get(&result, "skill://other/SKILL.md").is_err());
    assert!(read_get(&raw(&json!({})), "skill://git-workflow/SKILL.md").is_err());
}

#[test]
fn pages_stop_at_a_repeated_cursor_the_page_limit_and_the_item_limit() {
    let mut pages = Pages::new(3, 10);
    assert_eq!(pages.next(2, Some("a".into())), Ok(Some("a".into())));
    assert!(
        pages
            .next(2, Some("a".into()))
            .unwrap_err()
            .contains("loop")
    );
    let mut pages = Pages::new(2, 10);
    assert_eq!(pages.next(1, Some("a".into())), Ok(Some("a".into())));
    assert!(
        pages
            .next(1, Some("b".into()))
            .unwrap_err()
            .contains("pages")
    );
    let mut pages = Pages::new(5, 3);
    assert!(pages.next(4, None).unwrap_err().contains("entries"));
    assert_eq!(Pages::new(5, 3).next(3, None), Ok(None));
}

#[test]
fn directory_pages_are_read() {
    let (entries, next) = read_directory_page(&raw(&json!({
        "resources": [
            {"uri": "skill://git-workflow/references", "name": "references", "mimeType": "inode/directory"},
            {"uri": "skill://git-workflow/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": 60}
        ], "ttlMs": 0, "cacheScope": "private"
    })))
    .expect("page");
    assert!(entries[0].is_directory());
    assert!(!entries[1].is_directory());
    assert_eq!(entries[1].size, Some(60));
    assert_eq!(next, None);
    assert!(read_directory_page(&raw(&json!({"resources": [{"uri": "x"}]}))).is_err());
}

#[test]
fn a_file_is_read_only_if_listed_and_kept_only_if_it_verifies() {
    let skill = read_skill(&entry()).expect("skill");
    let md = "skill://git-workflow/SKILL.md";
    assert!(matches!(
        listed_file(&skill, "skill://git-workflow/secret.md"),
        Err(FileError::Unlisted(_))
    ));
    let file = listed_file(&skill, md).expect("listed");
    let text =
        |t: &str| raw(&json!({"contents": [{"uri": md, "mimeType": "text/markdown", "text": t}]}));
    assert_eq!(
        verified_file(&text(SKILL_MD), file).expect("verified"),
        SKILL_MD.as_bytes()
    );
    // Same size, other bytes: the digest catches it.
    let altered = SKILL_MD.replace("feature", "release");
    let altered = &altered[..SKILL_MD.len().min(altered.len())];
    assert!(matches!(
        verified_file(&text(altered), file),
        Err(FileError::Mismatch(_))
    ));
    assert!(matches!(
        verified_file(&text("short"), file),
        Err(FileError::Mismatch(_))
    ));
    let guide = listed_file(&skill, "skill://git-workflow/references/GUIDE.md").expect("listed");
    let blob = raw(&json!({"contents": [{"uri": guide.uri, "blob": "Z3VpZGU="}]}));
    assert_eq!(verified_file(&blob, guide).expect("blob"), b"guide");
    for bad in [
        json!({"contents": []}),
        json!({"contents": [{"uri": "skill://git-workflow/other.md", "text": "guide"}]}),
        json!({"contents": [{"uri": guide.uri, "blob": "not base64!"}]}),
        json!({"contents": [{"uri": guide.uri}]}),
    ] {
        assert!(verified_file(&raw(&bad), guide).is_err(), "{bad}");
    }
    let dynamic = read_skill(&json!({"uri": "skill://d/SKILL.md",
        "frontmatter": {"name": "d", "description": "x"}, "resources": "dynamic"}))
    .expect("dynamic");
    assert_eq!(
        listed_file(&dynamic, "skill://d/SKILL.md"),
        Err(FileError::Dynamic)
    );
}

#[test]
fn the_capability_is_read_from_the_extensions() {
    let caps =
        |value: Value| -> ServerCapabilities { serde_json::from_value(value).expect("caps") };
    assert_eq!(capability_of(&caps(json!({}))), None);
    assert_eq!(
        capability_of(&caps(json!({"extensions": {SKILLS_EXTENSION: true}}))),
        None
    );
    assert_eq!(
        capability_of(&caps(json!({"extensions": {SKILLS_EXTENSION: {}}}))),
        Some(SkillsCapability {
            directory_read: false
        })
    );
    assert_eq!(
        capability_of(&caps(
            json!({"extensions": {SKILLS_EXTENSION: {"directoryRead": true}}})
        )),
        Some(SkillsCapability {
            directory_read: true
        })
    );
}
