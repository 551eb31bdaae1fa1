//! The 2026-07-28 envelope, retries, result types and era verdicts, and the session's era probe;
//! see `mcpwire::internal::Target::McpEra`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::McpEra, data));
