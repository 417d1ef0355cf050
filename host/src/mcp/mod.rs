//! MCP sessions: one [`session::Session`] per server on rmcp, all of them held by the
//! [`manager::SessionManager`], which also decides the tool names a model sees ([`naming`]).
pub mod child;
pub mod elicitation;
pub mod health;
pub mod http;
pub mod manager;
pub mod monitor;
pub mod naming;
pub mod plugin_transport;
pub mod session;

pub use manager::{ExposedTool, SessionManager, StartFailure};
pub use session::{Catalog, ListKind, Session, SessionError, SessionEvent};
