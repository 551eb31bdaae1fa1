//! Support code for the integration tests: in-process servers and peers.

pub mod fault_server;
pub mod mcp_script;
pub mod peers;

use std::path::Path;

/// The repository's root: the integration tests belong to the CLI package, whose manifest is
/// src/bin/Cargo.toml, and read the fixtures, captures, sources and peers from the root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("src/bin is two levels below the repository root")
}

/// The tools of `mcpwire::demo::DemoServer` (and `mcpwire demo-server --stdio`), in the order
/// `tools/list` gives them.
pub const DEMO_TOOLS: [&str; 9] = [
    "progress_report",
    "tiny_image",
    "weather",
    "echo",
    "fail",
    "progress_burst",
    "big_text",
    "region_echo",
    "confirm_delete",
];
