//! Raw HTTP responses to the session and exchange machines, driven in memory; see `mcpwire::internal::Target::HttpResponse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::HttpResponse, data));
