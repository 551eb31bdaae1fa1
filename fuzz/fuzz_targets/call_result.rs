//! A `tools/call` result through the call pipeline's limit, mapping and classification; see `mcpwire::internal::Target::CallResult`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::CallResult, data));
