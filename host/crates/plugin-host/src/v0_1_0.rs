//! Host adapter for contract `rkmcp:plugin@0.1.0` (wit/rkmcp-plugin@0.1.0). A future contract
//! version gets its own module beside this one; this one does not change once released.
use wasmtime::component::{HasSelf, Linker};

use crate::state::PluginState;

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
            "rkmcp:plugin/types": crate::v0_1_0::detector::rkmcp::plugin::types,
            "rkmcp:plugin/host": crate::v0_1_0::detector::rkmcp::plugin::host,
        },
    });
}

pub mod approval_guard {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.1.0",
        world: "approval-guard-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::v0_1_0::detector::rkmcp::plugin::types,
            "rkmcp:plugin/host": crate::v0_1_0::detector::rkmcp::plugin::host,
        },
    });
}

pub mod transport {
    wasmtime::component::bindgen!({
        path: "../../../wit/rkmcp-plugin@0.1.0",
        world: "transport-plugin",
        exports: { default: async },
        with: {
            "rkmcp:plugin/types": crate::v0_1_0::detector::rkmcp::plugin::types,
            "rkmcp:plugin/host": crate::v0_1_0::detector::rkmcp::plugin::host,
        },
    });
}

pub use detector::rkmcp::plugin::host::{Host, LogLevel};
pub use detector::rkmcp::plugin::types;

/// Adds this version's host imports (the same for every world).
pub fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    detector::rkmcp::plugin::types::add_to_linker::<_, HasSelf<PluginState>>(linker, |s| s)?;
    detector::rkmcp::plugin::host::add_to_linker::<_, HasSelf<PluginState>>(linker, |s| s)
}
