//! The `mcpwire` command-line tool.
fn main() {}
