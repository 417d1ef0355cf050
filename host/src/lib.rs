//! rkmcp: a chat runtime for local LLMs with a complete MCP client and WebAssembly plugins.
//!
//! The CLI over the layer crates, which follow the data flow: [`config`] is read first, [`mcp`]
//! keeps the live server sessions ([`audit`] records what crosses them), [`chat`] runs a turn
//! of the model with its tool calls, [`serve`] is the gateway, and [`cli`] exposes all of it to
//! people and scripts. Each layer is a crate of its own (`host/crates/`), so none can import
//! one above it; they are re-exported here under the paths they had as modules.
pub use rkmcp_audit as audit;
pub use rkmcp_chat as chat;
pub mod cli;
pub use rkmcp_config as config;
pub mod logging;
pub use rkmcp_gateway as serve;
pub use rkmcp_sessions as mcp;
