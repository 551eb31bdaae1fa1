//! Raw HTTP responses from a loopback server to the real Streamable HTTP client; see `mcpwire::internal::fuzz_http_response`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_http_response(data));
