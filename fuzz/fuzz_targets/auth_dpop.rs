//! The DPoP parsers (`DPoP-Nonce`, the `DPoP` challenge, `use_dpop_nonce`); see
//! `mcpwire::internal::Target::AuthDpop`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::AuthDpop, data));
