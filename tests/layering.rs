//! The sans-IO layers must not reach for sockets, runtimes, threads or the clock: their
//! sources are checked for the names that would do so.

use std::path::Path;

const PURE_MODULES: &[&str] = &[
    "src/sse",
    "src/jsonrpc",
    "src/mcp",
    "src/session",
    "src/exchange",
    // The OAuth core: http's types, serde and ring only (the system's randomness is not I/O
    // in this sense, and ring touches no socket or clock).
    "src/auth",
    // The connection machine: every request-level rule, over the session and the exchange.
    "src/connection",
];
const FORBIDDEN: &[&str] = &[
    "tokio",
    "hyper",
    "rustls",
    "std::net",
    "std::thread",
    "std::process",
    "std::fs",
    "Instant::now",
    "SystemTime::now",
    // Reading the clock by the back door.
    ".elapsed()",
    "UNIX_EPOCH",
];

fn sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read module dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs")
            // Unit-test modules may read the clock once, to give a fake clock its origin.
            && path.file_name().is_none_or(|n| n != "tests.rs")
        {
            found.push(path);
        }
    }
}

#[test]
fn pure_layers_do_no_io() {
    let root = crate::support::repo_root();
    let mut checked = 0;
    for module in PURE_MODULES {
        let mut files = Vec::new();
        sources(&root.join(module), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read source");
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for name in FORBIDDEN {
                    assert!(
                        !code.contains(name),
                        "{}:{}: a sans-IO module mentions `{name}`",
                        file.display(),
                        number + 1
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} files checked");
}
