//! Support code for the integration tests: in-process servers and peers.

pub mod fault_server;
pub mod mcp_script;
pub mod peers;
