//! OAuth metadata, token and registration answers, scopes, queries and URLs; see
//! `mcpwire::internal::Target::AuthDocuments`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::AuthDocuments, data));
