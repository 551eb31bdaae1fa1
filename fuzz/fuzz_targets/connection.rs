//! The client's connection machine end to end, both eras, HTTP and stdio, against an in-memory server the input scripts; see `mcpwire::internal::Target::Connection`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::Connection, data));
