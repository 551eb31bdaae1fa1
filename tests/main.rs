//! The integration test binary: one binary, one module per area.

// Tests may read the clock (to check that a call ended within its deadline); the ban on
// `Instant::now` in clippy.toml is for the library's sans-IO layers.
#![allow(clippy::disallowed_methods)]

mod auth;
mod binding_call;
mod binding_tasks;
mod cli_interrupt;
mod cli_record_replay;
mod cli_sse;
mod cli_tools;
mod client_http;
mod fixtures;
mod headers;
mod hostile;
mod input;
mod interop;
mod interop_auth;
mod interop_input;
mod interop_skills;
mod interop_stdio;
mod interop_tasks;
mod layering;
mod modern;
mod overload;
mod probe;
mod proxy;
mod secrets;
mod skills;
mod stdio;
mod support;
mod tls;
mod trace_context;
