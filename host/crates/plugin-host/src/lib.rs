//! The WebAssembly plugin host of rkmcp.
//!
//! Plugins are WebAssembly components (wasm32-wasip2) built against the WIT package
//! `rkmcp:plugin@0.2.0` (`wit/rkmcp-plugin@0.2.0/`; components built against 0.1.0 still load): streaming tool-call detectors, tool-schema
//! converters, approval guards and MCP transports. Users drop `NAME.wasm` (and optionally a
//! `NAME.toml` manifest) into a plugin folder; the plugin gets only what `[plugins.grants.NAME]`
//! in rkmcp's config grants: directories, `host:port` patterns, environment variable names,
//! memory, a per-call deadline and optionally fuel.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use rkmcp_plugin_host::{PluginHost, PluginsConfig};
//! let host = PluginHost::new(PluginsConfig::default())?;
//! for info in host.discover() {
//!     println!("{} {:?} {:?}", info.name, info.kind, info.status);
//! }
//! let mut session = host.detector("hermes")?.start_session("").await?;
//! let events = session.feed("<tool_call>{\"name\":\"t\",\"arguments\":{}}</tool_call>").await?;
//! # Ok(()) }
//! ```
//!
//! Faults (trap, deadline, memory/fuel limit, oversized result) fail only the call, name the
//! plugin, call and cause, and discard the instance; `quarantine_after` faults within
//! `quarantine_window_s` quarantine the plugin.

pub mod boundary;
pub mod budget;
mod caps;
pub mod config;
mod engine;
mod error;
mod function_cache;
pub mod grants;
mod handles;
mod host;
pub mod kind;
pub mod lock;
pub mod manifest;
mod plugin;
mod state;
pub mod trust;
mod wit;

pub use config::{FileGrant, FileMode, Grant, PluginsConfig};
pub use engine::CacheOutcome;
pub use error::{FaultCause, PluginError};
pub use handles::{
    ApprovalGuard, ConnectionError, Conversion, Decision, Detector, DetectorEvent, DetectorSession,
    PluginConnection, ProposedCall, SchemaConverter, ToolAnnotations, ToolCall, Transport,
};
pub use host::{
    CheckReport, GrantSummary, PendingApproval, PluginHost, PluginInfo, PluginStatus,
    PluginVersion, Reload,
};
pub use kind::{PluginKind, SUPPORTED_VERSIONS};
pub use plugin::STARTUP_DEADLINE;
