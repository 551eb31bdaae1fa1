//! The task parsers and the task polling machine; see `mcpwire::internal::Target::TaskPoll`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz(mcpwire::internal::Target::TaskPoll, data));
