//! Server-sent events: a sans-IO decoder for the WHATWG event-stream format, with memory limits.
