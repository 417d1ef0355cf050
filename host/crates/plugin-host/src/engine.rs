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
    /// The cached entry failed its integrity check (changed since rkmcp wrote it); it was
    /// compiled again and replaced.
    Recompiled,
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
        if let Some(dir) = &opts.cache_dir {
            let functions = crate::function_cache::folder(dir);
            for d in [dir.join("index"), functions.clone()] {
                crate::trust::create_private_dir(&d).with_context(|| {
                    format!("cannot create the plugin compile cache {}", dir.display())
                })?;
            }
            for d in [dir.clone(), dir.join("index"), functions.clone()] {
                crate::trust::check_folder(&d).map_err(|e| {
                    anyhow::anyhow!(
                        "the plugin compile cache is not safe to run code from: {e} (or set `no_cache = true` in [plugins])"
                    )
                })?;
            }
            config
                .enable_incremental_compilation(Arc::new(
                    crate::function_cache::FunctionCache::new(functions),
                ))
                .map_err(anyhow::Error::from)?;
        }
        let engine = Engine::new(&config).map_err(anyhow::Error::from)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
        crate::wit::add_to_linker(&mut linker).map_err(anyhow::Error::from)?;
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

    /// Loads the component at `path`, from the disk cache when possible, with the SHA-256 (hex)
    /// of the content it was compiled from. A small index entry per plugin path remembers the
    /// content hash for the file's (size, mtime, inode), so a cache hit neither reads nor hashes
    /// the `.wasm` (which can be megabytes with debug info); any change to the file falls back to
    /// hashing its content. The digest is always that of the bytes compiled (or of the bytes the
    /// cached artifact was compiled from): the file is read once, and the stamp recorded for it
    /// is taken from the same open file, so a file swapped while it loads cannot pair one
    /// content's digest with another's code.
    pub fn load_file(&self, path: &Path) -> anyhow::Result<(Component, CacheOutcome, String)> {
        let meta =
            std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        let stamp = file_stamp(&meta);
        let index = self.cache_dir.as_ref().map(|dir| {
            let id = hex::encode(Sha256::digest(path.to_string_lossy().as_bytes()));
            dir.join("index").join(format!("{id}.key"))
        });
        if let Some(index) = &index
            && crate::trust::check_file(index).is_ok()
            && let Ok(text) = std::fs::read_to_string(index)
            && let Some((seen, key)) = text.trim().rsplit_once(' ')
            && seen == stamp
            && let Some((component, outcome)) = self.cached(path, key)
        {
            return Ok((component, outcome, key.to_string()));
        }
        let (bytes, stamp) = read_with_stamp(path)?;
        let (component, outcome) = self.load(path, &bytes)?;
        let key = hex::encode(Sha256::digest(&bytes));
        if let Some(index) = &index {
            let _ = write_atomically(index, format!("{stamp} {key}\n").as_bytes());
        }
        Ok((component, outcome, key))
    }

    /// Compiles `bytes` (a component) or loads its compiled form from the disk cache.
    /// The cache key covers the content and the engine's settings, so a changed engine
    /// configuration or wasmtime version never reads a stale entry.
    pub fn load(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<(Component, CacheOutcome)> {
        let Some(dir) = &self.cache_dir else {
            return Ok((self.compile(path, bytes)?, CacheOutcome::Compiled));
        };
        let key = hex::encode(Sha256::digest(bytes));
        if let Some(hit) = self.cached(path, &key) {
            return Ok(hit);
        }
        let (file, digest_file) = self.entry(&key);
        // An entry that exists but was not a hit was rejected (and said why).
        let rejected = file.exists();
        let compiled = self.engine.precompile_component(bytes).map_err(|e| {
            anyhow::anyhow!("{}: not a valid WebAssembly component: {e}", path.display())
        })?;
        // The artifact first, then its digest: a reader that sees the new artifact with the old
        // digest (or none) recompiles, it never runs an unrecorded artifact.
        let digest = ArtifactDigest {
            key: key.clone(),
            compat: self.compat.clone(),
            sha256: hex::encode(Sha256::digest(&compiled)),
        };
        let stored = write_atomically(&file, &compiled)
            .and_then(|()| write_atomically(&digest_file, digest.render().as_bytes()))
            .inspect_err(|e| tracing::warn!(dir = %dir.display(), "cannot write the plugin compile cache: {e}"))
            .is_ok();
        if stored && let Ok(meta) = std::fs::metadata(&file) {
            // Written from these bytes just now: the next load need not hash it.
            record_verified(&file.with_extension("verified"), &artifact_identity(&meta));
        }
        // SAFETY: `compiled` was produced just now by this engine.
        let component = unsafe { Component::deserialize(&self.engine, &compiled) }
            .map_err(anyhow::Error::from)?;
        Ok((
            component,
            match (stored, rejected) {
                (true, true) => CacheOutcome::Recompiled,
                (true, false) => CacheOutcome::Stored,
                (false, _) => CacheOutcome::Compiled,
            },
        ))
    }

    /// The `.cwasm` and digest files of a cache entry.
    fn entry(&self, key: &str) -> (PathBuf, PathBuf) {
        let dir = self.cache_dir.as_deref().unwrap_or(Path::new("."));
        (
            dir.join(format!("{key}-{}.cwasm", self.compat)),
            dir.join(format!("{key}-{}.digest", self.compat)),
        )
    }

    /// A cache hit, only if the artifact is exactly what this engine wrote for `key`: its
    /// SHA-256 matches the digest recorded beside it, and both files are ours and private.
    ///
    /// Hashing is paid once per artifact file, not per load: a Python plugin compiles to
    /// ~35 MB, and reading plus hashing that took longer than the whole 5 ms budget for a cached
    /// load. When the digest matches, the artifact's identity (inode, size, mtime, ctime) is
    /// recorded in a `.verified` file beside it; a later load whose artifact still has that
    /// identity maps the file without reading it. Any change to the file since (a rewrite, a
    /// copy over it, a `touch`) changes its ctime or inode, which no one but root can set back,
    /// and the artifact is hashed again. What the mapping gives up: a process with the user's
    /// own rights could change a mapped artifact in place after the check; such a process can
    /// already replace the plugin or rkmcp itself (the trust checks keep everyone else out),
    /// and rkmcp never writes an artifact in place (see [`write_atomically`]).
    fn cached(&self, path: &Path, key: &str) -> Option<(Component, CacheOutcome)> {
        let (file, digest_file) = self.entry(key);
        if !file.exists() {
            return None;
        }
        let reject = |why: String| {
            tracing::warn!(
                plugin = %path.display(),
                entry = %file.display(),
                "compile cache entry rejected ({why}); recompiling the plugin"
            );
            None
        };
        if let Err(e) = crate::trust::check_file(&file).and(crate::trust::check_file(&digest_file))
        {
            return reject(e.to_string());
        }
        let Some(recorded) = std::fs::read_to_string(&digest_file)
            .ok()
            .and_then(|t| ArtifactDigest::parse(&t))
        else {
            return reject("no digest recorded for it".into());
        };
        if recorded.key != key || recorded.compat != self.compat {
            return reject("its digest belongs to another entry".into());
        }
        let Ok(identity) = std::fs::metadata(&file).map(|m| artifact_identity(&m)) else {
            return reject("it vanished while being checked".into());
        };
        let verified_file = file.with_extension("verified");
        if crate::trust::check_file(&verified_file).is_ok()
            && std::fs::read_to_string(&verified_file).is_ok_and(|v| v.trim() == identity)
        {
            // SAFETY: this very file (same inode, size, mtime and ctime) matched the digest
            // that an engine with this compatibility hash recorded when it wrote it, in a
            // cache folder only this user can write; see above for what the mapping trusts.
            // wasmtime checks the header again.
            return match unsafe { Component::deserialize_file(&self.engine, &file) } {
                Ok(c) => Some((c, CacheOutcome::Hit)),
                Err(e) => reject(format!("{e}")),
            };
        }
        let bytes = match std::fs::read(&file) {
            Ok(b) => b,
            Err(e) => return reject(format!("unreadable: {e}")),
        };
        if hex::encode(Sha256::digest(&bytes)) != recorded.sha256 {
            return reject(
                "its content does not match the digest recorded when it was written".into(),
            );
        }
        // The identity was taken before the read: a change during the read leaves a stale
        // identity behind, and the next load hashes again.
        record_verified(&verified_file, &identity);
        // SAFETY: these bytes are, digest for digest, what `precompile_component` of an engine
        // with this compatibility hash wrote into a cache folder only this user can write;
        // wasmtime checks the header again.
        match unsafe { Component::deserialize(&self.engine, &bytes) } {
            Ok(c) => Some((c, CacheOutcome::Hit)),
            Err(e) => reject(format!("{e}")),
        }
    }

    fn compile(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<Component> {
        Component::from_binary(&self.engine, bytes).map_err(|e| {
            anyhow::anyhow!("{}: not a valid WebAssembly component: {e}", path.display())
        })
    }
}

/// What is recorded beside a `.cwasm`: which entry it is and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ArtifactDigest {
    key: String,
    compat: String,
    sha256: String,
}

impl ArtifactDigest {
    const TAG: &'static str = "rkmcp-cwasm-v1";

    fn render(&self) -> String {
        format!(
            "{} {} {} {}\n",
            Self::TAG,
            self.key,
            self.compat,
            self.sha256
        )
    }

    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split_ascii_whitespace();
        if parts.next()? != Self::TAG {
            return None;
        }
        let d = ArtifactDigest {
            key: parts.next()?.to_string(),
            compat: parts.next()?.to_string(),
            sha256: parts.next()?.to_string(),
        };
        parts.next().is_none().then_some(d)
    }
}

/// The file's content and the stamp of that very file (one open handle: a rename over the path
/// while it is read does not mix two files).
fn read_with_stamp(path: &Path) -> anyhow::Result<(Vec<u8>, String)> {
    use std::io::Read;
    let read = || -> std::io::Result<(Vec<u8>, String)> {
        let mut file = std::fs::File::open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let stamp = file_stamp(&file.metadata()?);
        Ok((bytes, stamp))
    };
    read().with_context(|| format!("cannot read {}", path.display()))
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

/// What identifies one artifact file's content without reading it: a rewrite or a copy over
/// it makes a new inode, or a new ctime (which `touch` and `utimensat` cannot set back).
fn artifact_identity(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{}:{}:{}:{}.{}:{}.{}",
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

/// Records that the artifact with `identity` matched its digest. Best effort: without the
/// record the next load hashes again.
fn record_verified(verified_file: &Path, identity: &str) {
    if let Err(e) = write_atomically(verified_file, format!("{identity}\n").as_bytes()) {
        tracing::debug!(file = %verified_file.display(), "cannot record a verified cache entry: {e}");
    }
}

/// Writes through a unique temporary file and a rename: another thread or process may be
/// storing the same entry, and writing into a file that someone has already renamed into
/// place (and mapped) would change code under their feet.
pub(crate) fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = file.parent().unwrap_or(Path::new("."));
    crate::trust::create_private_dir(dir)?;
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let tmp = dir.join(format!(".{name}.{}-{seq}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    crate::trust::make_private(&tmp)?;
    std::fs::rename(&tmp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_digests_round_trip_and_reject_anything_else() {
        let d = ArtifactDigest {
            key: "ab".into(),
            compat: "cd".into(),
            sha256: "ef".into(),
        };
        assert_eq!(ArtifactDigest::parse(&d.render()), Some(d.clone()));
        for bad in [
            "",
            "rkmcp-cwasm-v0 ab cd ef",
            "rkmcp-cwasm-v1 ab cd",
            "rkmcp-cwasm-v1 ab cd ef extra",
        ] {
            assert_eq!(ArtifactDigest::parse(bad), None, "{bad:?}");
        }
    }
}
