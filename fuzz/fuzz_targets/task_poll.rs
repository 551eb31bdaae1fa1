//! The task parsers and the task polling machine; see `mcpwire::internal::fuzz_task_poll`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpwire::internal::fuzz_task_poll(data));
