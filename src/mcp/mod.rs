//! MCP message types for protocol 2025-11-25 and the earlier revisions a client accepts.
