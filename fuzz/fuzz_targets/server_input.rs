//! Server requests for input and the Skills extension's results; see
//! `mcpwire::internal::Target::ServerInput`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::ServerInput, data));
