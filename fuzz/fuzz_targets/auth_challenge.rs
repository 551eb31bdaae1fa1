//! `WWW-Authenticate` parsing; see `mcpwire::internal::fuzz_auth_challenge`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_auth_challenge(data));
