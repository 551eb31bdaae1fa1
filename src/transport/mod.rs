//! Transport drivers: the only code that touches sockets and processes.
//!
//! [`http`] carries the requests of the sans-IO `exchange` machine on
//! hyper and reports their frames back; [`stdio`] runs a server process and reports what it
//! writes as link events. Both report on bounded channels, so a server that floods is slowed
//! by backpressure instead of filling memory. Neither knows of pending requests or deadlines:
//! the client driver owns the clock and tells them when the session settles a request.
//! The HTTP pool's TLS settings and proxies (`tls`, `proxy`; their types are exported from
//! [`http`]) are fixed when a pool is made.

pub mod http;
mod proxy;
pub mod stdio;
mod tls;

use crate::jsonrpc::Message;
use crate::session::Failure;

pub use crate::exchange::config::WireLog;

/// What a transport reports to the driver.
#[derive(Debug)]
pub(crate) enum LinkEvent {
    /// A message from the server.
    Message(Message<'static>),
    /// The connection is gone for good (the process exited):
    /// every pending request fails with this.
    Down(Failure),
}

/// Where a transport sends its events.
pub(crate) type LinkEvents = tokio::sync::mpsc::Sender<LinkEvent>;
