//! The DPoP parsers (`DPoP-Nonce`, the `DPoP` challenge, `use_dpop_nonce`); see
//! `mcpwire::internal::fuzz_auth_dpop`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_auth_dpop(data));
