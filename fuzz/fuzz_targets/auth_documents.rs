//! OAuth metadata, token and registration answers, scopes, queries and URLs; see
//! `mcpwire::internal::fuzz_auth_documents`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_auth_documents(data));
