//! JSON-RPC 2.0: the message model and a strict codec (requests, notifications, responses, batches).

mod id;

pub use id::Id;
