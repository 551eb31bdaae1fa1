//! Raw HTTP responses to the session and exchange machines, driven in memory; see `mcpwire::internal::fuzz_http_response`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_http_response(data));
