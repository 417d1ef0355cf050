//! MCP sessions: one [`session::Session`] per server on rmcp, all of them held by the
//! [`manager::SessionManager`], which also decides the tool names a model sees ([`naming`]).
//! Version negotiation is [`negotiate`]; what servers ask of the client (sampling, elicitation,
//! roots) is answered by a [`client_requests::ClientRequests`] the front end chooses.
pub mod auth;
pub mod child;
pub mod client_requests;
pub mod decode;
pub mod elicitation;
pub mod errors;
pub mod flood;
pub mod framing;
pub mod health;
pub mod http;
pub mod listen;
pub mod manager;
pub mod monitor;
pub mod naming;
pub mod negotiate;
pub mod plugin_transport;
pub mod probe;
pub mod roots;
pub mod session;
pub mod skills;
pub mod sse;
pub mod stdio_transport;
pub mod tap;
pub mod tasks;
pub mod url_wait;
pub mod watchdog;

pub use client_requests::{ClientRequests, NonInteractive};
pub use manager::{ExposedTool, ResolveError, SessionManager, StartFailure, config_roots};
pub use roots::Roots;
pub use session::{Catalog, ListKind, Session, SessionError, SessionEvent};

/// Locks `m`, also after a thread panicked while holding it: the sessions' shared state stays
/// usable (a poisoned lock would otherwise take the whole session down with one bad handler).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
