//! MCP sessions.
