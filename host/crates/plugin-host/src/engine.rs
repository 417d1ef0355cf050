//! The one shared wasmtime engine, its linker, the epoch ticker and the compiled-component cache.
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::state::PluginState;

/// Epoch tick: the granularity of call deadlines and how often a busy guest yields to tokio.
pub const TICK: Duration = Duration::from_millis(2);

/// Where a component came from when it was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheOutcome {
    /// Loaded from the disk cache (no compilation).
    Hit,
    /// Compiled and written to the disk cache.
    Stored,
    /// Compiled; no disk cache configured (or it could not be written).
    Compiled,
}

pub struct Runtime {
    pub engine: Engine,
    pub linker: Linker<PluginState>,
    pub fuel: bool,
    cache_dir: Option<PathBuf>,
    compat: String,
    stop: Arc<AtomicBool>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

pub struct RuntimeOptions {
    pub fuel: bool,
    pub pooling: bool,
    pub max_memory: usize,
    pub cache_dir: Option<PathBuf>,
}

impl Runtime {
    pub fn new(opts: RuntimeOptions) -> anyhow::Result<Runtime> {
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .consume_fuel(opts.fuel)
            // No component-model async in the contract; leaving it off saves time on every call.
            .concurrency_support(false)
            .max_wasm_stack(1 << 20)
            .async_stack_size(2 << 20);
        if opts.pooling {
            let mut pool = PoolingAllocationConfig::default();
            pool.total_component_instances(200)
                .total_core_instances(400)
                .total_memories(400)
                .total_tables(400)
                .max_memory_size(opts.max_memory)
                .max_core_instances_per_component(16)
                .max_memories_per_component(4)
                .max_tables_per_component(8);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config).map_err(anyhow::Error::from)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
        crate::v0_1_0::add_to_linker(&mut linker).map_err(anyhow::Error::from)?;
        crate::caps::net::add_name_lookup_guard(&mut linker)?;

        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let compat = format!("{:016x}", hasher.finish());

        let stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("rkmcp-plugin-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(TICK);
                        engine.increment_epoch();
                    }
                })
                .context("cannot start the plugin epoch ticker thread")?;
        }
        Ok(Runtime {
            engine,
            linker,
            fuel: opts.fuel,
            cache_dir: opts.cache_dir,
            compat,
            stop,
        })
    }

    /// Loads the component at `path`, from the disk cache when possible. A small index entry per
    /// plugin path remembers the content hash for the file's (size, mtime, inode), so a cache hit
    /// neither reads nor hashes the `.wasm` (which can be megabytes with debug info); any change
    /// to the file falls back to hashing its content.
    pub fn load_file(&self, path: &Path) -> anyhow::Result<(Component, CacheOutcome)> {
        let meta =
            std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        let stamp = file_stamp(&meta);
        let index = self.cache_dir.as_ref().map(|dir| {
            let id = hex::encode(Sha256::digest(path.to_string_lossy().as_bytes()));
            dir.join("index").join(format!("{id}.key"))
        });
        if let (Some(dir), Some(index)) = (&self.cache_dir, &index)
            && let Ok(text) = std::fs::read_to_string(index)
            && let Some((seen, key)) = text.trim().rsplit_once(' ')
            && seen == stamp
        {
            let file = dir.join(format!("{key}-{}.cwasm", self.compat));
            // SAFETY: as in `load`: our own cache entry, renamed into place, header-checked.
            if file.is_file()
                && let Ok(c) = unsafe { Component::deserialize_file(&self.engine, &file) }
            {
                return Ok((c, CacheOutcome::Hit));
            }
        }
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let out = self.load(path, &bytes)?;
        if let Some(index) = &index {
            let key = hex::encode(Sha256::digest(&bytes));
            let _ = write_atomically(index, format!("{stamp} {key}\n").as_bytes());
        }
        Ok(out)
    }

    /// Compiles `bytes` (a component) or loads its compiled form from the disk cache.
    /// The cache key covers the content and the engine's settings, so a changed engine
    /// configuration or wasmtime version never reads a stale entry.
    pub fn load(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<(Component, CacheOutcome)> {
        let Some(dir) = &self.cache_dir else {
            return Ok((self.compile(path, bytes)?, CacheOutcome::Compiled));
        };
        let key = hex::encode(Sha256::digest(bytes));
        let file = dir.join(format!("{key}-{}.cwasm", self.compat));
        if file.is_file() {
            // SAFETY: the file is in rkmcp's own cache directory, written by `precompile_component`
            // of an engine with the same compatibility hash (part of the name). wasmtime still
            // checks its header and refuses a mismatch; on any error we recompile.
            match unsafe { Component::deserialize_file(&self.engine, &file) } {
                Ok(c) => return Ok((c, CacheOutcome::Hit)),
                Err(e) => {
                    tracing::warn!(file = %file.display(), "ignoring unusable compile cache entry: {e}")
                }
            }
        }
        let compiled = self.engine.precompile_component(bytes).map_err(|e| {
            anyhow::anyhow!("{}: not a valid WebAssembly component: {e}", path.display())
        })?;
        let stored = write_atomically(&file, &compiled)
            .inspect_err(|e| tracing::warn!(dir = %dir.display(), "cannot write the plugin compile cache: {e}"))
            .is_ok();
        // SAFETY: `compiled` was produced just now by this engine.
        let component = unsafe { Component::deserialize(&self.engine, &compiled) }
            .map_err(anyhow::Error::from)?;
        Ok((
            component,
            if stored {
                CacheOutcome::Stored
            } else {
                CacheOutcome::Compiled
            },
        ))
    }

    fn compile(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<Component> {
        Component::from_binary(&self.engine, bytes).map_err(|e| {
            anyhow::anyhow!("{}: not a valid WebAssembly component: {e}", path.display())
        })
    }
}

fn file_stamp(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{}:{}.{}:{}",
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ino()
    )
}

/// Writes through a unique temporary file and a rename: another thread or process may be
/// storing the same entry, and writing into a file that someone has already renamed into
/// place (and mapped) would change code under their feet.
fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let tmp = dir.join(format!(".{name}.{}-{seq}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file)
}
