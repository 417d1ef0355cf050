//! Async handles for each plugin kind: what the rest of rkmcp calls. One module per kind; what
//! they share (the kind check, the reusable instance slot) is here.
use wasmtime::Store;

pub use rkmcp_tool_formats::{DetectorEvent, ToolCall};

use crate::error::PluginError;
use crate::plugin::Loaded;
use crate::state::PluginState;

mod converter;
mod detector;
mod guard;
mod transport;

pub use converter::{Conversion, SchemaConverter};
pub use detector::{Detector, DetectorSession};
pub use guard::{ApprovalGuard, Decision, ProposedCall, ToolAnnotations};
pub use transport::{ConnectionError, PluginConnection, Transport};

fn wrong_kind(plugin: &Loaded, wanted: &str) -> PluginError {
    PluginError::unusable(
        &plugin.name,
        format!("is a {} plugin, not a {wanted}", plugin.kind),
    )
}

/// An instance reused across calls (converter, guard): its store and bindings.
struct Slot<B> {
    store: Store<PluginState>,
    bindings: B,
}
