//! The token-exchange (ID-JAG) and DPoP token answers; see
//! `mcpwire::internal::fuzz_auth_token_exchange`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_auth_token_exchange(data));
