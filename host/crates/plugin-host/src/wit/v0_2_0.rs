//! Host bindings for contract `rkmcp:plugin@0.2.0` (wit/rkmcp-plugin@0.2.0), the newest one: its
//! types are the ones the rest of the plugin host uses. Frozen once released, like every version.
use wasmtime::component::{HasSelf, Linker};

use crate::state::PluginState;

pub const VERSION: &str = "0.2.0";

pub mod detector {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.2.0",
        world: "detector-plugin",
        exports: { default: async },
    });
}

pub mod schema_converter {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.2.0",
        world: "schema-converter-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::wit::v0_2_0::detector::rkmcp::plugin::types,
            "rkmcp:plugin/host": crate::wit::v0_2_0::detector::rkmcp::plugin::host,
        },
    });
}

pub mod approval_guard {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.2.0",
        world: "approval-guard-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::wit::v0_2_0::detector::rkmcp::plugin::types,
            "rkmcp:plugin/host": crate::wit::v0_2_0::detector::rkmcp::plugin::host,
        },
    });
}

pub mod transport {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.2.0",
        world: "transport-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::wit::v0_2_0::detector::rkmcp::plugin::types,
            "rkmcp:plugin/host": crate::wit::v0_2_0::detector::rkmcp::plugin::host,
        },
    });
}

pub use detector::rkmcp::plugin::host::{Host, LogLevel};
pub use detector::rkmcp::plugin::types;
pub use schema_converter::exports::rkmcp::plugin::schema_converter::Conversion;
pub use transport::exports::rkmcp::plugin::transport::TransportError;

/// Adds this version's host imports (the same for every world).
pub fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    types::add_to_linker::<_, HasSelf<PluginState>>(linker, |s| s)?;
    detector::rkmcp::plugin::host::add_to_linker::<_, HasSelf<PluginState>>(linker, |s| s)
}
