//! Transport drivers: the only code that touches sockets, processes and the clock.
//!
//! A transport takes the messages the [`session`](crate::session) wants sent and reports
//! back what arrived and what went wrong, as link events on a bounded channel (so a server
//! that floods is slowed by backpressure instead of filling memory). It knows nothing of
//! pending requests or deadlines: the client driver aborts a request's transport task when the
//! session settles it.

pub mod http;
mod secret;
pub mod stdio;

use crate::jsonrpc::{Id, Message};
use crate::session::Failure;

pub use secret::Secret;
pub(crate) use secret::redact_all;

/// What a transport reports to the driver.
#[derive(Debug)]
pub(crate) enum LinkEvent {
    /// A message from the server.
    Message(Message<'static>),
    /// The transport could not deliver a request or read its answer.
    RequestFailed(Id, Failure),
    /// The server speaks the legacy HTTP+SSE transport (2024-11-05); the session must accept
    /// that revision.
    LegacyTransport,
    /// The connection is gone for good (a process exited, the legacy event stream ended):
    /// every pending request fails with this.
    Down(Failure),
}

/// Where a transport sends its events.
pub(crate) type LinkEvents = tokio::sync::mpsc::Sender<LinkEvent>;

/// A line of wire trace for `-v` output. Secrets are already redacted.
pub type WireLog = std::sync::Arc<dyn Fn(&str) + Send + Sync>;
