//! The integration test binary: one binary, one module per area.

mod cli_sse;
mod fuzz_corpus;
mod layering;
