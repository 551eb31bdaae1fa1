//! A `tools/call` result through the call pipeline's limit, mapping and classification; see `mcpwire::internal::fuzz_call_result`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_call_result(data));
