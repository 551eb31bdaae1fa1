//! Arbitrary bytes and chunkings into the SSE decoder; see `mcpwire::internal::Target::SseDecode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::SseDecode, data));
