//! Header value encoding and `x-mcp-header` annotations; see `mcpwire::internal::Target::McpHeaders`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::McpHeaders, data));
