//! Header value encoding and `x-mcp-header` annotations; see `mcpwire::internal::fuzz_mcp_headers`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_mcp_headers(data));
