//! An operation sequence into the session machine; see `mcpwire::internal::Target::Session`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::Session, data));
