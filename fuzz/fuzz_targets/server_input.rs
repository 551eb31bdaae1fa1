//! Server requests for input and the Skills extension's results; see
//! `mcpwire::internal::fuzz_server_input`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_server_input(data));
