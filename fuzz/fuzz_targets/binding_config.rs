//! Config text into binding loading and validation; see `mcpwire::internal::fuzz_binding_config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_binding_config(data));
