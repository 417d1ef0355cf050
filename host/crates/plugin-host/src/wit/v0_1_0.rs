//! Host adapter for contract `rkmcp:plugin@0.1.0` (wit/rkmcp-plugin@0.1.0), the previous version.
//! It does not change once released; what changes is how its results are converted up to the
//! newest types ([`super::latest`]), which are all the rest of the host sees.
//!
//! 0.1.0 differs from 0.2.0 only in `types.event` (no `reasoning` case). So the detector world
//! keeps its own `types` (its `event` must type-check against a 0.1.0 component), while the other
//! worlds take the newest `types` directly: their records and variants are the same field for
//! field, and wasmtime checks them structurally, not by package version.
use wasmtime::component::{HasSelf, Linker};

use crate::state::PluginState;
use crate::wit::latest;

pub const VERSION: &str = "0.1.0";

pub mod detector {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.1.0",
        world: "detector-plugin",
        exports: { default: async },
    });
}

pub mod schema_converter {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.1.0",
        world: "schema-converter-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::wit::latest::types,
            "rkmcp:plugin/host": crate::wit::v0_1_0::detector::rkmcp::plugin::host,
        },
    });
}

pub mod approval_guard {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.1.0",
        world: "approval-guard-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::wit::latest::types,
            "rkmcp:plugin/host": crate::wit::v0_1_0::detector::rkmcp::plugin::host,
        },
    });
}

pub mod transport {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.1.0",
        world: "transport-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::wit::latest::types,
            "rkmcp:plugin/host": crate::wit::v0_1_0::detector::rkmcp::plugin::host,
        },
    });
}

pub use detector::rkmcp::plugin::host::{Host, LogLevel};
use detector::rkmcp::plugin::types;

/// Adds this version's host imports (the same for every world).
pub fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    types::add_to_linker::<_, HasSelf<PluginState>>(linker, |s| s)?;
    detector::rkmcp::plugin::host::add_to_linker::<_, HasSelf<PluginState>>(linker, |s| s)
}

/// A 0.1.0 detector has no reasoning event; its events map one to one.
impl From<types::Event> for latest::types::Event {
    fn from(e: types::Event) -> Self {
        use latest::types as new;
        match e {
            types::Event::Text(t) => new::Event::Text(t),
            types::Event::ToolCall(c) => new::Event::ToolCall(new::ToolCall {
                id: c.id,
                name: c.name,
                arguments_json: c.arguments_json,
            }),
            types::Event::Malformed(m) => new::Event::Malformed(new::MalformedCall {
                raw: m.raw,
                error: m.error,
            }),
        }
    }
}

impl From<schema_converter::exports::rkmcp::plugin::schema_converter::Conversion>
    for latest::Conversion
{
    fn from(c: schema_converter::exports::rkmcp::plugin::schema_converter::Conversion) -> Self {
        latest::Conversion {
            system_prompt: c.system_prompt,
            grammar: c.grammar,
            json_schema: c.json_schema,
        }
    }
}

impl From<transport::exports::rkmcp::plugin::transport::TransportError> for latest::TransportError {
    fn from(e: transport::exports::rkmcp::plugin::transport::TransportError) -> Self {
        use transport::exports::rkmcp::plugin::transport::TransportError as Old;
        match e {
            Old::Closed => latest::TransportError::Closed,
            Old::Config(m) => latest::TransportError::Config(m),
            Old::Io(m) => latest::TransportError::Io(m),
            Old::Protocol(m) => latest::TransportError::Protocol(m),
        }
    }
}

/// Log levels are the same five in every version.
pub fn log_level_up(level: LogLevel) -> latest::LogLevel {
    match level {
        LogLevel::Trace => latest::LogLevel::Trace,
        LogLevel::Debug => latest::LogLevel::Debug,
        LogLevel::Info => latest::LogLevel::Info,
        LogLevel::Warn => latest::LogLevel::Warn,
        LogLevel::Error => latest::LogLevel::Error,
    }
}
