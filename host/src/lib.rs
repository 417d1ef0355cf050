//! rkmcp: a chat runtime for local LLMs with a complete MCP client and WebAssembly plugins.
//!
//! The modules follow the data flow: [`config`] is read first, [`mcp`] keeps the live server
//! sessions, and [`cli`] exposes them to people and scripts.
pub use rkmcp_audit as audit;
pub use rkmcp_chat as chat;
pub mod cli;
pub use rkmcp_config as config;
pub mod logging;
pub use rkmcp_sessions as mcp;
pub mod serve;
