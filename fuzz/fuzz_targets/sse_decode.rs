//! Arbitrary bytes and chunkings into the SSE decoder; see `mcpwire::internal::fuzz_sse_decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_sse_decode(data));
