//! Arbitrary bytes into the JSON-RPC codec; see `mcpwire::internal::Target::JsonrpcDecode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::JsonrpcDecode, data));
