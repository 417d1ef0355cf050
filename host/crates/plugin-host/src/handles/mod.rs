//! Async handles for each plugin kind: what the rest of rkmcp calls. One module per kind; what
//! they share (the reused instance of converters and guards) is here, and building an instance
//! is [`Loaded::instantiate`].
use std::sync::Arc;

use tokio::sync::Mutex;

pub use rkmcp_tool_formats::{DetectorEvent, ToolCall};

use crate::error::PluginError;
use crate::plugin::{Instance, Loaded, Pre};

mod converter;
mod detector;
mod guard;
mod transport;

pub use converter::{Conversion, SchemaConverter};
pub use detector::{Detector, DetectorSession};
pub use guard::{ApprovalGuard, Decision, ProposedCall, ToolAnnotations};
pub use transport::{ConnectionError, PluginConnection, Transport};

/// One instance of a plugin of kind `P` reused call after call (converter, guard), one call at
/// a time. It is built on first use, and dropped after a fault (a trap, a deadline, a limit) so
/// that the next call builds a fresh one rather than run in an instance left half-way.
struct Reused<P: Pre> {
    plugin: Arc<Loaded>,
    slot: Mutex<Option<Instance<P::Bindings>>>,
}

impl<P: Pre> Reused<P> {
    fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        plugin.pre::<P>()?;
        Ok(Reused {
            plugin,
            slot: Mutex::new(None),
        })
    }

    /// Runs `call` in the instance, after checking the plugin is not quarantined. An error of
    /// `call` is a fault: the instance is dropped.
    async fn call<R>(
        &self,
        call: impl AsyncFnOnce(&Loaded, &mut Instance<P::Bindings>) -> Result<R, PluginError>,
    ) -> Result<R, PluginError> {
        let mut slot = self.slot.lock().await;
        self.plugin.check_health()?;
        let instance = match slot.take() {
            Some(instance) => instance,
            None => self.plugin.instantiate::<P>().await?,
        };
        let r = call(&self.plugin, slot.insert(instance)).await;
        if r.is_err() {
            *slot = None;
        }
        r
    }
}
