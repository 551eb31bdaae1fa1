//! Config text into binding loading and validation; see `mcpwire::internal::Target::BindingConfig`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::BindingConfig, data));
