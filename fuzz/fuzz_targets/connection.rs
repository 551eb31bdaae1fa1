//! The client's connection machine end to end, both eras, HTTP and stdio, against an in-memory server the input scripts; see `mcpwire::internal::fuzz_connection`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_connection(data));
