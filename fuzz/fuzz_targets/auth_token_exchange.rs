//! The token-exchange (ID-JAG) and DPoP token answers; see
//! `mcpwire::internal::Target::AuthTokenExchange`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::AuthTokenExchange, data));
