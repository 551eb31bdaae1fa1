//! The Skills extension client against in-process servers that break its rules: a looping
//! cursor, a bad entry, a tampered file, an undeclared extension or directory read.

use mcpwire::ErrorKind;
use mcpwire::client::{Client, ClientOptions};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};
use serde_json::{Value, json};

use crate::support::fault_server::{FaultServer, Recorded, Reply};
use crate::support::mcp_script::rpc_result;

const GUIDE: &[u8] = b"# Guide\n";
/// SHA-256 of [`GUIDE`] (`printf '# Guide\n' | sha256sum`).
fn guide_digest() -> String {
    "sha256:bc553ffe57e544498b12a9865dbf3abc2004c474e349c52c378eaa402287424b".to_owned()
}

fn skill() -> Value {
    json!({"uri": "skill://docs/SKILL.md",
           "frontmatter": {"name": "docs", "description": "Write docs"},
           "resources": [
               {"uri": "skill://docs/SKILL.md", "digest": format!("sha256:{}", "0".repeat(64))},
               {"uri": "skill://docs/GUIDE.md", "digest": guide_digest(), "size": GUIDE.len()}]})
}

/// A 2026-07-28 server declaring `extension` (or none), answering with `rest`.
async fn skills_server(
    extension: Option<Value>,
    rest: impl Fn(&Recorded, &str) -> Reply + Send + Sync + 'static,
) -> FaultServer {
    FaultServer::start(move |req| match req.jsonrpc_method().as_deref() {
        Some("server/discover") => {
            let mut capabilities = json!({"tools": {}, "resources": {}});
            if let Some(extension) = &extension {
                capabilities["extensions"] =
                    json!({"io.modelcontextprotocol/skills": extension.clone()});
            }
            Reply::json(
                200,
                rpc_result(
                    req,
                    json!({"supportedVersions": ["2026-07-28"], "capabilities": capabilities,
                           "resultType": "complete",
                           "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "skills", "version": "1"}}}),
                ),
            )
        }
        Some(method) => rest(req, method),
        None => Reply::empty(404),
    })
    .await
}

async fn connect(server: &FaultServer) -> Client {
    let pool = HttpPool::new(&TlsOptions::default()).expect("pool");
    let mut options = ClientOptions::default();
    options.skills = true;
    Client::connect_http(
        &pool,
        HttpConfig::new(&server.url("/mcp")).expect("config"),
        options,
    )
    .await
    .expect("connect")
}

fn complete(req: &Recorded, mut result: Value) -> Reply {
    result["resultType"] = json!("complete");
    Reply::json(200, rpc_result(req, result))
}

fn sent(server: &FaultServer, method: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.jsonrpc_method().as_deref() == Some(method))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_cursor_stops_the_listing_and_bad_entries_are_set_aside() {
    let server = skills_server(Some(json!({})), |req, method| match method {
        "skills/list" => complete(
            req,
            json!({"skills": [skill(), {"uri": "skill://x/SKILL.md", "frontmatter": {"name": "y", "description": "d"}}],
                   "nextCursor": "again", "ttlMs": 0, "cacheScope": "private"}),
        ),
        _ => Reply::empty(404),
    })
    .await;
    let client = connect(&server).await;
    let error = client.list_skills(None).await.expect_err("a loop");
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.to_string().contains("loop"), "{error}");
    assert_eq!(sent(&server, "skills/list"), 2, "stops at the first repeat");
    client.close().await;

    let server = skills_server(Some(json!({})), |req, method| match method {
        "skills/list" => complete(
            req,
            json!({"skills": [skill(), {"uri": "skill://x/SKILL.md", "frontmatter": {"name": "y", "description": "d"}}]}),
        ),
        _ => Reply::empty(404),
    })
    .await;
    let client = connect(&server).await;
    let list = client.list_skills(None).await.expect("listed");
    assert_eq!(list.skills.len(), 1);
    assert_eq!(list.rejected[0].uri, "skill://x/SKILL.md");
    assert!(
        list.rejected[0].reason.contains("not its name"),
        "{:?}",
        list.rejected
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_file_is_refused_and_a_faithful_one_kept() {
    let server = skills_server(Some(json!({})), |req, method| {
        let body = req.json().unwrap_or_default();
        match method {
            "skills/get" => complete(req, json!({"skill": skill()})),
            "resources/read" => {
                let uri = body["params"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let text = if uri.ends_with("GUIDE.md") {
                    "# Guide\n"
                } else {
                    "tampered"
                };
                complete(req, json!({"contents": [{"uri": uri, "text": text}]}))
            }
            _ => Reply::empty(404),
        }
    })
    .await;
    let client = connect(&server).await;
    let skill = client
        .get_skill("skill://docs/SKILL.md", None)
        .await
        .expect("got");
    assert_eq!(sent(&server, "resources/read"), 0, "no prefetch");
    let guide = client
        .read_skill_file(&skill, "skill://docs/GUIDE.md", None)
        .await
        .expect("verified");
    assert_eq!(guide, GUIDE);
    let error = client
        .read_skill_file(&skill, "skill://docs/SKILL.md", None)
        .await
        .expect_err("digest mismatch");
    assert_eq!(error.kind(), ErrorKind::Protocol, "{error}");
    assert!(error.to_string().contains("digest"), "{error}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_extension_or_directory_read_nothing_is_sent() {
    let server = skills_server(None, |_, _| Reply::empty(404)).await;
    let client = connect(&server).await;
    assert!(client.skills_capability().is_none());
    let error = client.list_skills(None).await.expect_err("undeclared");
    assert_eq!(error.kind(), ErrorKind::Refused);
    let error = client
        .get_skill("skill://docs/SKILL.md", None)
        .await
        .expect_err("undeclared");
    assert_eq!(error.kind(), ErrorKind::Refused);
    client.close().await;
    let server = skills_server(Some(json!({})), |_, _| Reply::empty(404)).await;
    let client = connect(&server).await;
    let error = client
        .read_skill_directory("skill://docs", None)
        .await
        .expect_err("no directoryRead");
    assert_eq!(error.kind(), ErrorKind::Refused);
    assert_eq!(sent(&server, "resources/directory/read"), 0);
    assert_eq!(sent(&server, "skills/list"), 0);
    client.close().await;
}
