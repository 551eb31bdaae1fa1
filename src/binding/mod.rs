//! Tool bindings: the static JSON an operator copies into a host's config, discovery that
//! produces it, and the call pipeline (tenant and argument checks, a fresh MCP session per
//! call at a 2025-era revision and one request at a stateless one, progress events, result
//! mapping, `unknown_outcome`). The server diagnostic behind `mcpwire probe` sits above this
//! layer, in a module of its own (`mcpwire::probe`).

pub mod call;
pub mod config;
pub mod discover;
pub(crate) mod mapping;
mod oauth;
mod result;
pub(crate) mod schema;
