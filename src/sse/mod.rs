//! Server-sent events: a sans-IO decoder for the WHATWG event-stream format, with memory limits.
//!
//! The decoder follows the HTML standard's "Parsing an event stream" and "Interpreting an event
//! stream" (section 9.2) exactly, including what is easy to get wrong: a CR at the end of one
//! chunk and an LF at the start of the next form one line end; invalid UTF-8 becomes U+FFFD even
//! when a sequence is split across chunks; one leading BOM is dropped and a second one is not;
//! an event with no `data` field is not dispatched but its `id` still counts; a `data:` line with
//! an empty value does dispatch an event with empty data (MCP servers use that as a priming
//! event); an event not closed by a blank line before the stream ends is dropped.
//!
//! It performs no I/O and reads no clock, so the transport decides when bytes arrive and how
//! long to wait for them.

mod decoder;
mod scan;

pub use decoder::{Decoder, Error, Event, Limits};

#[cfg(test)]
mod tests;
