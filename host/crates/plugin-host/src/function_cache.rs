//! Cranelift's incremental compilation cache on disk: the machine code of each compiled
//! function, keyed by a hash of its code and the compiler's settings.
//!
//! Why: a Python or JavaScript plugin embeds a whole interpreter (CPython ~18 MB, StarlingMonkey
//! ~12 MB), and compiling one took ~25 s of CPU on a 2-core machine. Every Python plugin carries
//! the same interpreter functions, and so does each new build of the same plugin: with this
//! cache, a second Python plugin, or the plugin its author just edited and hot-reloads, only
//! compiles the functions that differ. The whole-component cache (`.cwasm` files in the same
//! folder) still serves an unchanged plugin without compiling anything.
//!
//! Trust: an entry is machine code that will run, so it is read only when it is a regular file
//! owned by this user and writable by no one else ([`crate::trust::check_file`]), in a folder
//! with the same checks as the component cache. Entries are written whole under a temporary
//! name and renamed, so a reader never sees half an entry. An entry that fails a check, or that
//! Cranelift cannot decode, is not used: the function is compiled again (Cranelift verifies its
//! own format and version on decoding).
use std::borrow::Cow;
use std::path::{Path, PathBuf};

use wasmtime::CacheStore;

/// Entries in `DIR/XX/REST`, `XX` the first byte of the key in hex (a few thousand files per
/// folder at most for an interpreter's worth of functions).
#[derive(Debug)]
pub struct FunctionCache {
    dir: PathBuf,
}

impl FunctionCache {
    pub fn new(dir: PathBuf) -> FunctionCache {
        FunctionCache { dir }
    }

    fn entry(&self, key: &[u8]) -> Option<PathBuf> {
        let hex = hex::encode(key);
        // Cranelift's keys are SHA-256 hashes; anything too short to shard is not ours.
        if hex.len() < 8 {
            return None;
        }
        let (shard, rest) = hex.split_at(2);
        Some(self.dir.join(shard).join(rest))
    }
}

impl CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let file = self.entry(key)?;
        crate::trust::check_file(&file).ok()?;
        std::fs::read(&file).ok().map(Cow::Owned)
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let Some(file) = self.entry(key) else {
            return false;
        };
        crate::engine::write_atomically(&file, &value).is_ok()
    }
}

/// The folder of the function cache inside the component cache folder `cache_dir`.
pub fn folder(cache_dir: &Path) -> PathBuf {
    cache_dir.join("functions")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const KEY: [u8; 32] = [7; 32];

    #[test]
    fn an_entry_comes_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(dir.path().join("functions"));
        assert!(cache.get(&KEY).is_none());
        assert!(cache.insert(&KEY, b"code".to_vec()));
        assert_eq!(cache.get(&KEY).as_deref(), Some(&b"code"[..]));
        assert!(cache.insert(&KEY, b"newer".to_vec()));
        assert_eq!(cache.get(&KEY).as_deref(), Some(&b"newer"[..]));
    }

    #[test]
    fn an_entry_others_can_write_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(dir.path().join("functions"));
        assert!(cache.insert(&KEY, b"code".to_vec()));
        let file = cache.entry(&KEY).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(cache.get(&KEY).is_none());
    }

    #[test]
    fn keys_too_short_to_be_hashes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(dir.path().to_path_buf());
        assert!(!cache.insert(b"ab", b"x".to_vec()));
        assert!(cache.get(b"ab").is_none());
    }
}
