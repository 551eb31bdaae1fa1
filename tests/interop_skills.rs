//! The Skills extension client against the TypeScript SDK v2 server's `ext/skills`
//! (`tests/peers/ts2_server.mjs`: two skills, one per page, with `directoryRead`), at
//! 2026-07-28 and at 2025-11-25: negotiation, list (following cursors), get, the directory
//! read, verified file reads, and the no-prefetch rule (no `resources/read` before a file is
//! asked for).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::client::{Client, ClientOptions, SkillList};
use mcpwire::mcp::ProtocolVersion;
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use mcpwire::{ErrorKind, session::EraPolicy};

use crate::support::peers::{self, Peer, PeerServer};

const STEP: Duration = Duration::from_secs(15);

/// The JSON-RPC methods the client sent, from its wire log.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<String>>>);

impl Sent {
    fn methods(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

async fn connect(url: &str, era: EraPolicy, skills: bool, sent: &Sent) -> Client {
    let pool = HttpPool::new(&TlsOptions::default()).expect("pool");
    let mut config = HttpConfig::new(url).expect("config");
    let lines = sent.0.clone();
    config.wire_log = Some(Arc::new(move |line: &str| {
        // What the client sends: its lines start with '>'.
        if !line.starts_with('>') {
            return;
        }
        if let Some(at) = line.find("\"method\":\"") {
            let rest = &line[at + 10..];
            if let Some(end) = rest.find('"') {
                lines.lock().unwrap().push(rest[..end].to_owned());
            }
        }
    }));
    let mut options = ClientOptions::default();
    options.request_timeout = STEP;
    options.session.initialize_timeout = STEP;
    options.session.era = era;
    options.skills = skills;
    Client::connect_http(&pool, config, options)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

fn names(list: &SkillList) -> Vec<&str> {
    list.skills.iter().map(|s| s.name()).collect()
}

/// Runs the whole exchange at one era (the caller has checked its peer).
async fn exercise(era: EraPolicy, version: ProtocolVersion) {
    let server = PeerServer::ts2(&[]);
    let sent = Sent::default();
    let client = connect(&server.url, era.clone(), true, &sent).await;
    assert_eq!(client.protocol_version(), version);
    let capability = client.skills_capability().expect("declared");
    assert!(capability.directory_read);

    let list = client.list_skills(Some(STEP)).await.expect("skills/list");
    assert_eq!(names(&list), ["refunds", "git-workflow"], "{list:?}");
    assert!(list.rejected.is_empty(), "{:?}", list.rejected);
    let lists = sent
        .methods()
        .iter()
        .filter(|m| *m == "skills/list")
        .count();
    assert_eq!(lists, 2, "one page each: the cursor was followed");
    let git = list
        .skills
        .iter()
        .find(|s| s.name() == "git-workflow")
        .unwrap();
    assert_eq!(git.uri(), "skill://git-workflow/SKILL.md");
    assert_eq!(git.description(), "Follow the team's Git conventions");
    assert_eq!(git.files().expect("listed").len(), 2);
    let refunds = list.skills.iter().find(|s| s.name() == "refunds").unwrap();
    assert_eq!(refunds.root(), "skill://acme/refunds");
    assert_eq!(refunds.frontmatter()["license"], "MIT");

    let got = client
        .get_skill("skill://git-workflow/SKILL.md", Some(STEP))
        .await
        .expect("skills/get");
    assert_eq!(&got, git);
    let missing = client
        .get_skill("skill://nothing/SKILL.md", Some(STEP))
        .await
        .expect_err("no such skill");
    assert_eq!(missing.kind(), ErrorKind::ServerError, "{missing}");

    let children = client
        .read_skill_directory(git.root(), Some(STEP))
        .await
        .expect("resources/directory/read");
    let mut child_names: Vec<&str> = children.iter().map(|c| c.name.as_str()).collect();
    child_names.sort_unstable();
    assert_eq!(child_names, ["SKILL.md", "references"], "{children:?}");
    assert!(
        children
            .iter()
            .any(|c| c.name == "references" && c.is_directory())
    );

    // No file was read while listing, getting and reading the directory.
    assert!(
        !sent.methods().iter().any(|m| m == "resources/read"),
        "{:?}",
        sent.methods()
    );
    let guide = client
        .read_skill_file(git, "skill://git-workflow/references/GUIDE.md", Some(STEP))
        .await
        .expect("verified");
    assert_eq!(guide, b"# Guide\n\nOne commit per change.\n");
    let md = client
        .read_skill_file(git, git.uri(), Some(STEP))
        .await
        .expect("verified");
    assert!(
        String::from_utf8(md)
            .unwrap()
            .contains("name: git-workflow")
    );
    let reads = sent
        .methods()
        .iter()
        .filter(|m| *m == "resources/read")
        .count();
    assert_eq!(reads, 2, "a read per file asked for");
    // An unlisted file is refused, nothing sent.
    let unlisted = client
        .read_skill_file(git, "skill://git-workflow/secrets.md", Some(STEP))
        .await
        .expect_err("unlisted");
    assert_eq!(unlisted.kind(), ErrorKind::Refused);
    assert_eq!(
        sent.methods()
            .iter()
            .filter(|m| *m == "resources/read")
            .count(),
        2
    );
    client.close().await;

    // A client that does not declare the extension sends no skills request.
    let quiet = Sent::default();
    let undeclared = connect(&server.url, era, false, &quiet).await;
    let refused = undeclared
        .list_skills(Some(STEP))
        .await
        .expect_err("refused");
    assert_eq!(refused.kind(), ErrorKind::Refused);
    assert!(!quiet.methods().iter().any(|m| m.starts_with("skills/")));
    undeclared.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_skills_at_2026_07_28() {
    peers::require(Peer::Ts2);
    exercise(EraPolicy::Auto, ProtocolVersion::V2026_07_28).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real peer servers: run scripts/install-peers, then cargo test -- --ignored"]
async fn ts2_skills_at_2025_11_25() {
    peers::require(Peer::Ts2);
    exercise(EraPolicy::Legacy, ProtocolVersion::V2025_11_25).await;
}
