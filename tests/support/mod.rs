//! Support code for the integration tests: in-process servers and peers.

pub mod fault_server;
pub mod mcp_script;
pub mod peers;

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
