//! `WWW-Authenticate` parsing; see `mcpwire::internal::Target::AuthChallenge`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::AuthChallenge, data));
