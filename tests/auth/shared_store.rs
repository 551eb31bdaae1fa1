//! One token store shared by many `mcpwire call` processes at once, against an authorization
//! server whose refresh tokens are single use (the mock's rotation): the token has expired,
//! every process finds it so, and exactly one of them refreshes it; the others take the
//! token it wrote back, under the store's lock. Every call succeeds and the store stays
//! valid.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpwire::client::auth::store::TokenStore;
use mcpwire::client::auth::{Authorizer, Headless};
use serde_json::{Value, json};

use super::{ACCESS, Lines, Mock, REDIRECT, REFRESH, connect, form, param, pool};

/// How many `mcpwire call` processes run at once.
const PROCESSES: usize = 16;
/// No process may run longer than this (they take well under a second each).
const DEADLINE: Duration = Duration::from_secs(30);

/// What one process did.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Starts every process before waiting for any, so that they race for the refresh; waits for
/// all, killing any that outlives [`DEADLINE`].
fn run_all(args: Vec<Vec<String>>) -> Vec<Run> {
    let started = Instant::now();
    let mut children: Vec<Child> = args
        .iter()
        .map(|args| {
            Command::new(env!("CARGO_BIN_EXE_mcpwire"))
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn mcpwire")
        })
        .collect();
    // Drained while the children run, so that none blocks on a full pipe.
    let readers: Vec<_> = children
        .iter_mut()
        .map(|child| {
            let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
            std::thread::spawn(move || {
                let (mut o, mut e) = (String::new(), String::new());
                let _ = out.read_to_string(&mut o);
                let _ = err.read_to_string(&mut e);
                (o, e)
            })
        })
        .collect();
    let mut codes = vec![None; children.len()];
    let mut done = vec![false; children.len()];
    while done.iter().any(|d| !d) {
        for (i, child) in children.iter_mut().enumerate() {
            if !done[i]
                && let Some(status) = child.try_wait().expect("wait")
            {
                codes[i] = status.code();
                done[i] = true;
            }
        }
        if started.elapsed() > DEADLINE {
            for child in &mut children {
                let _ = child.kill();
                let _ = child.wait();
            }
            panic!("mcpwire call ran past {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    readers
        .into_iter()
        .zip(codes)
        .map(|(reader, code)| {
            let (stdout, stderr) = reader.join().unwrap();
            Run {
                code,
                stdout,
                stderr,
            }
        })
        .collect()
}

/// The refresh tokens the token endpoint was asked to take, in order.
fn refreshes(mock: &Mock) -> Vec<String> {
    mock.requests_to("/token")
        .iter()
        .map(|r| form(&r.body_text()))
        .filter(|f| param(f, "grant_type").as_deref() == Some("refresh_token"))
        .map(|f| param(&f, "refresh_token").unwrap_or_default())
        .collect()
}

fn stored(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Makes the store's token expired (as if the processes started an hour later) and the MCP
/// server refuse it, keeping the file's mode.
fn expire(mock: &Mock, path: &Path) {
    let mut store = stored(path);
    store["tokens"][0]["expires_at"] = json!(1_000);
    std::fs::write(path, serde_json::to_vec_pretty(&store).unwrap()).unwrap();
    mock.state().valid.clear();
}

/// One round: [`PROCESSES`] calls at once; what each printed.
async fn round(bindings: &Path, round: usize) -> Vec<Run> {
    let args: Vec<Vec<String>> = (0..PROCESSES)
        .map(|i| {
            [
                "call",
                "--bindings",
                bindings.to_str().unwrap(),
                "--tool",
                "w",
                "--tenant",
                "acme",
                "--args",
                "{}",
                "--call-id",
                &format!("c-{round}-{i}"),
            ]
            .map(str::to_owned)
            .to_vec()
        })
        .collect();
    tokio::task::spawn_blocking(move || run_all(args))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_sixteen_processes_share_a_token_store_and_refresh_once_per_expiry() {
    let mock = Mock::start(true, |s| s.refresh = true).await;
    let dir: PathBuf =
        std::env::temp_dir().join(format!("mcpwire-shared-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.json");

    // The operator's login, once.
    let pool = pool();
    let store = Arc::new(TokenStore::create(&path, &mock.url(), REDIRECT));
    let authorizer: Arc<dyn Authorizer> = Arc::new(Headless::new(&pool, Duration::from_secs(5)));
    let oauth = Arc::new(store.oauth(authorizer).unwrap());
    let client = connect(&mock, &pool, &oauth, &Lines::default())
        .await
        .expect("login");
    client.close().await;
    assert_eq!(stored(&path)["tokens"][0]["refresh_token"], REFRESH[0]);

    let bindings = dir.join("bindings.json");
    let config = json!([{
        "name": "w", "description": "", "input_schema": {"type": "object"},
        "url": mock.url(), "mcp_tool": "write", "tenants": ["acme"], "timeout_seconds": 20,
        "auth": {"grant": "authorization_code", "token_store": path.to_str().unwrap()},
    }]);
    std::fs::write(&bindings, config.to_string()).unwrap();

    for n in 1..=2 {
        expire(&mock, &path);
        let ran_before = mock.state().ran;
        let started = Instant::now();
        let runs = round(&bindings, n).await;
        let elapsed = started.elapsed();
        let failed: Vec<&Run> = runs
            .iter()
            .filter(|r| r.code != Some(0) || !r.stdout.contains("\"tool.result\""))
            .collect();
        let seen = refreshes(&mock);
        eprintln!(
            "round {n}: {PROCESSES} processes, {} failed, {} refreshes seen in all ({} refused), \
             {elapsed:?}",
            failed.len(),
            seen.len(),
            mock.state().refresh_reuse.len()
        );
        assert!(failed.is_empty(), "{} failed: {failed:#?}", failed.len());
        assert_eq!(
            mock.state().ran - ran_before,
            PROCESSES,
            "every tool ran once"
        );
        // One refresh per expiry, each with the live refresh token: none was spent twice.
        assert_eq!(seen, REFRESH[..n], "refresh tokens presented");
        assert!(mock.state().refresh_reuse.is_empty());
        // The store is valid, holds the rotated token, and can go on.
        let after = TokenStore::load(&path).expect("the store loads");
        assert_eq!(after.token_count(), 1);
        assert!(after.has_usable_token(mcpwire::auth::UnixTime(2_000_000_000)));
        let text = stored(&path);
        assert_eq!(text["tokens"][0]["access_token"], ACCESS[n]);
        assert_eq!(text["tokens"][0]["refresh_token"], REFRESH[n]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for file in [&path, &after.lock_path()] {
                let mode = std::fs::metadata(file).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "{}", file.display());
            }
        }
        // Nothing secret in what the processes printed.
        for run in &runs {
            for secret in [ACCESS[n - 1], ACCESS[n], REFRESH[n - 1], REFRESH[n]] {
                assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
            }
        }
        assert!(
            elapsed < Duration::from_secs(15),
            "{PROCESSES} calls took {elapsed:?}"
        );
    }

    // `mcp-tools -refresh` spends the refresh token now, under the same lock, and writes the
    // rotated token back.
    let store_arg = path.to_str().unwrap().to_owned();
    let refreshed = tokio::task::spawn_blocking(move || {
        crate::cli_tools::mcp_tools(&["-token-store", &store_arg, "-refresh"], &[])
    })
    .await
    .unwrap();
    assert_eq!(refreshed.code, Some(0), "{refreshed:#?}");
    assert_eq!(refreshes(&mock), REFRESH[..3], "refresh tokens presented");
    assert_eq!(stored(&path)["tokens"][0]["refresh_token"], REFRESH[3]);
    assert!(mock.state().refresh_reuse.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
