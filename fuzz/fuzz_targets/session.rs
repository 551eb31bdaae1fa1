//! An operation sequence into the session machine; see `mcpwire::internal::fuzz_session`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_session(data));
