//! # mcpwire
//!
//! A Model Context Protocol (MCP) client written by hand, with no MCP SDK underneath: programs
//! link it to call tools on remote MCP servers over Streamable HTTP or stdio, at both protocol
//! eras (2026-07-28, stateless, and the 2025 revisions with their sessions). At the bottom are
//! sans-IO parsers and state machines, deterministic and fuzzed; above them thin drivers own
//! the sockets, the processes and the clock; on top, tool bindings turn a server's tools into
//! static host configuration and call them for tenants.
//!
//! ## The layers
//!
//! Each layer uses only the ones below it; the parsers, the session, the exchange, the OAuth
//! core and the connection machine above them never touch sockets, threads or clocks.
//!
//! ```text
//!  binding       bindings, discovery, the call pipeline, tool.result events   (feature bindings)
//!     |
//!  client        the async API and its driver task: moves frames, runs the host's handlers,
//!     |          sleeps to the machine's deadline                          (feature client)
//!  transport     hyper + rustls pool, CONNECT proxies, stdio processes; the clock
//!     |
//!  connection    one machine per client: every request-level rule (era probe, list paging
//!     |          and caching, the tools/call rounds), over the session and the link (sans-IO)
//!  exchange      Streamable HTTP rules    auth   OAuth 2.1 core             (sans-IO)
//!     |
//!  session       ids, pending requests, deadlines, the handshake, era choice    (sans-IO)
//!     |
//!  mcp           MCP messages, protocol versions, content blocks
//!     |
//!  jsonrpc       the JSON-RPC 2.0 model and its strict codec       sse   event-stream decoder
//! ```
//!
//! | module | owns | needs |
//! | --- | --- | --- |
//! | [`sse`] | WHATWG event-stream decoding with memory limits | std, memchr |
//! | [`jsonrpc`] | the JSON-RPC 2.0 message model and its strict codec, batches | serde, serde_json |
//! | [`mcp`] | MCP message types, protocol versions, content blocks | serde, `jsonrpc` |
//! | [`session`] | the client state machine: ids, pending requests, deadlines, the handshake (public: its configuration and the failures it reports; the machine is internal) | `mcp` |
//! | `exchange` (internal) | the Streamable HTTP exchange: requests to issue, replies, resumption, fallback | `session`, `sse`, http's types |
//! | [`auth`] | OAuth 2.1 as the MCP authorization spec has it: challenges, discovery metadata, PKCE, tokens, the flow from a 401 to a token (public: its configuration, tokens and errors; the flow machine is internal) | http's types, serde, ring |
//! | `connection` (internal) | the connection machine: operations (`list_tools`, `call_tool`, `listen`, `ping`, a raw request, `close`) in, transmits, progress, input rounds, refusals and outcomes out; credentials taken out of all it hands back | `session`, `exchange` |
//! | [`transport`] | the drivers: hyper with a pooled connection set, rustls (roots, client certificates) and CONNECT proxies; stdio processes | tokio, hyper, rustls |
//! | [`client`] | the async API: connect, list tools, call a tool, ping, close; the driver task under it | `connection`, `transport` |
//! | `binding` | binding config and validation, discovery, the call pipeline, result mapping | `client`, jsonschema |
//! | `probe` | the server diagnostic behind `mcpwire probe`: what a server speaks and where it breaks the spec | `client`, `binding` |
//!
//! [`Error`] and its [`ErrorKind`] are the one vocabulary of failures, from a session's
//! `FailureKind` up to the `error.kind` of a `tool.result` event.
//!
//! ## The run loop
//!
//! The sans-IO core is driven like quinn-proto or str0m: the driver feeds it input with the
//! current time, drains its outputs, and sleeps until the deadline it reports. The core never
//! reads a clock; the driver ([`client::Client`]'s task) is the only place that does. The
//! core is one connection machine per client, which owns the session and the link machine
//! (the Streamable HTTP exchange, or the stdio framing):
//!
//! ```text
//!  connection.start(now)                       // queues the era probe or `initialize`
//!  loop {
//!      while let Some(output) = connection.poll_output() {
//!          HttpSend { stream, request } -> issue the HTTP request   StdioSend(m) -> a line
//!          Progress / Notification      -> the host's callbacks
//!          Input { op, requests }       -> the input handler, then connection.answer_input
//!          Refused(refusal)             -> the token source, then connection.resend / reject
//!          Done { op, outcome }         -> the caller waiting on op
//!      }
//!      wait for the first of: an HTTP head, body chunk or end (connection.handle_head /
//!      handle_body / handle_end(stream, .., now)), a stdio line, a caller's command
//!      (connection.call_tool / list_tools / cancel / close ..), or connection.poll_timeout(),
//!      then connection.handle_timeout(now)
//!  }
//! ```
//!
//! The inner machines (the session, the exchange, the OAuth flow) are internal: their module
//! docs, in the source, give each one's own loop.
//!
//! ## Feature flags
//!
//! | feature | default | what it adds | pulls |
//! | --- | --- | --- | --- |
//! | `client` | yes | [`client`], [`transport`]: the async client over Streamable HTTP and stdio (with `exchange` and `auth`) | tokio, hyper, hyper-util, rustls, webpki-roots |
//! | `sse` | | [`sse`] | memchr |
//! | `jsonrpc` | | [`jsonrpc`] | serde, serde_json |
//! | `mcp` | | [`mcp`] (with `jsonrpc`) | |
//! | `parsers` | | `sse`, `jsonrpc`, `mcp` | no runtime |
//! | `session` | | [`session`]'s configuration (the machine is built, internal, to prove it needs no runtime) | no runtime |
//! | `exchange` | | nothing public: the internal exchange machine, built to prove it needs no runtime (with `session`, `sse`) | http |
//! | `auth` | | [`auth`] | http, serde, ring |
//! | `bindings` | | `binding` | jsonschema |
//! | `tracing` | | one span per binding call, an MCP client span per request after OpenTelemetry's semantic conventions for MCP, and events for retries, era fallbacks and resumptions, never a secret or an argument | tracing (no subscriber) |
//! | `opentelemetry` | | with `tracing`: a request that brings no W3C trace context of its own sends its client span's in `_meta` (see [`mcp::TraceContext`]) | opentelemetry (API), tracing-opentelemetry |
//! | `demo` | | `demo`: the embedded demo server (HTTP and stdio) the examples use | tokio macros, httparse |
//! | `fixtures` | | `fixture`: the wire-fixture format, recorder and replay server | tokio macros, httparse |
//! | `aws-lc-rs` | | aws-lc-rs instead of ring as rustls' crypto provider | aws-lc-rs |
//!
//! A build with only the parser features (`--no-default-features --features parsers`) pulls
//! neither tokio, hyper nor rustls. The command-line tools are a package of their own
//! (`mcpwire-cli`, in `src/bin`).
//!
//! ## Decoding a server-sent event stream
//!
//! ```
//! # #[cfg(feature = "sse")] {
//! use mcpwire::sse::{Decoder, Limits};
//!
//! let mut decoder = Decoder::new(Limits::default());
//! decoder.push(b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",");
//! assert!(decoder.next_event().unwrap().is_none()); // partial input is not an error
//! decoder.push(b"\"method\":\"ping\",\"id\":1}\r\n\r\n");
//! let event = decoder.next_event().unwrap().expect("one event");
//! assert_eq!(event.event_type(), "message");
//! assert_eq!(event.data(), r#"{"jsonrpc":"2.0","method":"ping","id":1}"#);
//! # }
//! ```
//!
//! ## Examples
//!
//! Programs in `examples/`, each on the public API. Given no server, each starts the embedded
//! demo server (`mcpwire::demo`, feature `demo`) itself, so `cargo run --example NAME` needs nothing else; the test
//! command runs all four.
//!
//! | example | shows |
//! | --- | --- |
//! | `http_call [URL [TOOL [ARGS]]]` | [`client::Client`] over Streamable HTTP: connect, list the tools, a call with live progress and a deadline, then a deadline too short for the work (a timeout with an unknown outcome, the session still usable) |
//! | `cancel [URL]` | a [`client::CancelToken`] pulled while a call runs: `notifications/cancelled` on the wire, [`ErrorKind::Cancelled`] at once, the session still usable |
//! | `stdio [PROGRAM ARGS...]` | a server run as a child process over stdio (by default the example itself, serving the demo tools with `demo::serve_stdio`), its stderr as logging |
//! | `host [URL]` | what a host does with `mcpwire::binding` (feature `bindings`): discover bindings, keep them in its config, load and validate it, call tools for tenants through a `binding::call::Caller` (progress events, structured output checked against its schema, concurrent calls, calls refused before sending) with the bearer token from a host-side `binding::call::TokenSource` |
#![deny(missing_docs)]
#![warn(unreachable_pub)]
// Builds without the client (the parser, exchange, auth, demo and fixture slices) compile the
// internal pieces only the client uses, to prove that they need no runtime; they are unused
// there. Every build with the client uses them all, and is checked for dead code.
#![cfg_attr(
    not(feature = "client"),
    allow(dead_code, unused_imports, unreachable_pub)
)]
// Four audited exceptions: sending SIGTERM to a stdio server's process group
// (`transport::stdio::signal_group`); and in the SSE decoder, reading text already checked to
// be ASCII or valid UTF-8 without a second check (`sse::decoder::source_text`), the SSE2
// compares that classify a short push in one step (`sse::scan::classify`, baseline x86-64),
// and the AVX2 copy that checks a long line while it copies it (`sse::scan::append_scanning`,
// after run-time detection). The SSE ones are measured wins (see BENCHMARKS.md) and are
// checked against plain versions in tests and by the `sse_decode` fuzz target.
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// `exchange` gates nothing public of its own: the items the client re-exports from it
// (`transport::http`) are the client's, and their badges say `client`.
#![cfg_attr(docsrs, doc(auto_cfg(hide(feature = "exchange"))))]

// First, so every module below can use its macros (the session is the lowest layer with
// events).
#[cfg(feature = "session")]
#[macro_use]
mod trace;

#[cfg(feature = "auth")]
pub mod auth;
#[cfg(any(feature = "mcp", feature = "fixtures", feature = "auth"))]
mod base64;
#[cfg(feature = "bindings")]
pub mod binding;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "client")]
mod connection;
#[cfg(feature = "session")]
mod deadlines;
#[cfg(feature = "demo")]
pub mod demo;
#[cfg(feature = "client")]
mod error;
// The Streamable HTTP exchange machine is internal: the connection machine drives it, and
// an `exchange`-only build exists to prove that it needs no runtime.
#[cfg(feature = "exchange")]
#[cfg_attr(not(feature = "client"), allow(dead_code))]
mod exchange;
#[cfg(feature = "fixtures")]
pub mod fixture;
#[cfg(any(feature = "session", feature = "exchange"))]
mod idmap;
#[cfg(feature = "jsonrpc")]
pub mod jsonrpc;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "bindings")]
pub mod probe;
#[cfg(any(feature = "exchange", feature = "auth"))]
mod secret;
// Public for the session's configuration and the failures it reports (an `Error`'s source);
// the machine itself is internal, driven by the connection machine.
#[cfg(feature = "session")]
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub mod session;
#[cfg(feature = "sse")]
pub mod sse;
#[cfg(feature = "client")]
pub mod transport;
#[cfg(any(feature = "demo", feature = "fixtures"))]
mod util;

#[cfg(feature = "client")]
pub use error::{Error, ErrorKind};

// The entry points, at the root: a client over HTTP or stdio, and the binding layer's caller.
#[cfg(feature = "bindings")]
pub use binding::call::{CallContext, Caller, ToolResult};
#[cfg(feature = "client")]
pub use client::{CallOptions, CancelToken, Client, ClientOptions, InputHandler};
#[cfg(feature = "client")]
pub use transport::http::{HttpConfig, HttpPool, TlsOptions};
#[cfg(feature = "client")]
pub use transport::stdio::StdioConfig;

// The fuzz harnesses: for fuzz/ (the `fuzzing` feature) and the unit tests, which replay the
// corpora through them; never in a user's build. Hidden from the docs, so their links to the
// crate's private items are for readers of the source (docs.rs builds with every feature).
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
#[allow(rustdoc::private_intra_doc_links)]
pub mod internal;

/// The README's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "bindings"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
