//! Arbitrary bytes into the JSON-RPC codec; see `mcpwire::internal::fuzz_jsonrpc_decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_jsonrpc_decode(data));
