//! Tool bindings: the static JSON an operator copies into a host's config, discovery that
//! produces it, and the call pipeline (tenant and argument checks, a fresh MCP session per
//! call at a 2025-era revision and one request at a stateless one, progress events, result mapping, `unknown_outcome`), and the probe behind `mcpwire
//! probe`, which reports what a server speaks and where it breaks the spec before anyone binds it.

pub mod call;
pub mod config;
pub mod discover;
pub mod mapping;
pub mod probe;
pub mod schema;
