//! Per-store state of one plugin instance: its WASI context, limits, config and deadline.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::{ResourceLimiter, StoreLimits};
use wasmtime_wasi::{ResourceTable, WasiCtx, WasiCtxView, WasiView};

use crate::caps::net::StoreNet;
use crate::caps::stdio::{LogStream, OutputLimiter};
use crate::wit::latest::{self, LogLevel};
use crate::wit::v0_1_0;

/// Wraps [`StoreLimits`] to remember that a memory grow was refused, so a later trap can be
/// reported as "memory limit reached" rather than a bare `unreachable`.
pub struct Limiter {
    inner: StoreLimits,
    pub memory_cap: usize,
    pub refused_grow: Option<usize>,
}

impl Limiter {
    pub fn new(memory_cap: usize) -> Self {
        Limiter {
            inner: wasmtime::StoreLimitsBuilder::new()
                .memory_size(memory_cap)
                .table_elements(1_000_000)
                .instances(64)
                .tables(64)
                .memories(16)
                .build(),
            memory_cap,
            refused_grow: None,
        }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = self.inner.memory_growing(current, desired, maximum)?;
        if !ok {
            self.refused_grow = Some(desired);
        }
        Ok(ok)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

pub struct PluginState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub limiter: Limiter,
    pub plugin: Arc<str>,
    pub config: Arc<BTreeMap<String, String>>,
    /// When the current call must stop; checked on every epoch tick.
    pub deadline: Instant,
    pub stderr: LogStream,
    pub log_limiter: Arc<OutputLimiter>,
    pub net: StoreNet,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl latest::types::Host for PluginState {}

impl latest::Host for PluginState {
    fn log(&mut self, level: LogLevel, message: String, fields: Vec<(String, String)>) {
        if !self.log_limiter.admit_line() {
            return;
        }
        let plugin = &*self.plugin;
        let fields = fields
            .iter()
            .map(|(k, v)| format!("{}={v:?}", rkmcp_term_safe::sanitize_inline(k)))
            .collect::<Vec<_>>()
            .join(" ");
        let fields = rkmcp_term_safe::sanitized_inline(fields);
        let message = rkmcp_term_safe::sanitize_inline(&message);
        match level {
            LogLevel::Trace => tracing::trace!(plugin, fields, "{message}"),
            LogLevel::Debug => tracing::debug!(plugin, fields, "{message}"),
            LogLevel::Info => tracing::info!(plugin, fields, "{message}"),
            // A plugin's warnings and errors are for the person using it: notices (rate-limited
            // above, and each distinct line printed once).
            LogLevel::Warn => {
                tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, plugin, fields, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: rkmcp_term_safe::NOTICE_TARGET, plugin, fields, "{message}")
            }
        }
    }

    fn config_get(&mut self, key: String) -> Option<String> {
        self.config.get(&key).cloned()
    }
}

// A 0.1.0 plugin imports 0.1.0's `host`; it is served by the same code.
impl v0_1_0::detector::rkmcp::plugin::types::Host for PluginState {}

impl v0_1_0::Host for PluginState {
    fn log(&mut self, level: v0_1_0::LogLevel, message: String, fields: Vec<(String, String)>) {
        latest::Host::log(self, v0_1_0::log_level_up(level), message, fields)
    }

    fn config_get(&mut self, key: String) -> Option<String> {
        latest::Host::config_get(self, key)
    }
}
