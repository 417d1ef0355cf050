//! Hot reload of one plugin after its file changed, appeared or disappeared (`rkmcp chat` watches
//! the plugin folders and asks here between turns).
//!
//! The rule: a new file replaces the loaded version only once it has loaded and been checked the
//! way a chat start checks it (compiled, one plugin kind of a supported contract version, linked
//! against what rkmcp provides, matching its world). Until then — and when it fails — the last
//! good version stays in the cache, and handles already given out keep running it: a broken or
//! half-written file never takes a running plugin down.
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::PluginHost;
use crate::error::PluginError;
use crate::kind::PluginKind;
use crate::plugin::Loaded;

/// One loaded version of a plugin, as a notice names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginVersion {
    pub name: String,
    pub path: PathBuf,
    pub kind: PluginKind,
    /// Contract version (`rkmcp:plugin@VERSION`) the component was built for.
    pub contract_version: String,
    /// `version` of its manifest (`NAME.toml`), if it has one.
    pub version: Option<String>,
}

impl PluginVersion {
    fn of(loaded: &Loaded) -> PluginVersion {
        PluginVersion {
            name: loaded.name.to_string(),
            path: loaded.path.clone(),
            kind: loaded.kind,
            contract_version: loaded.version.clone(),
            // The manifest was read when this version loaded; a failure to read it now only
            // loses the version in a notice.
            version: crate::manifest::load_beside(&loaded.path)
                .ok()
                .flatten()
                .and_then(|m| m.version),
        }
    }
}

/// `approval-guard v1.2.0, contract 0.2.0` (the manifest's version only when it has one).
impl fmt::Display for PluginVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(v) = &self.version {
            write!(f, " v{}", v.trim_start_matches('v'))?;
        }
        write!(f, ", contract {}", self.contract_version)
    }
}

/// What [`PluginHost::reload`] found for one plugin name.
#[derive(Debug, Clone)]
pub enum Reload {
    /// The file is the one already loaded (same modification time and size).
    Unchanged(PluginVersion),
    /// The new file loaded and passed the checks; handles asked for from now on run it.
    /// `previous`: the version it replaces (`None`: the plugin is new to this host).
    Reloaded {
        version: PluginVersion,
        previous: Option<PluginVersion>,
    },
    /// The file did not load (`error` holds the whole cause chain); `kept` is the version that
    /// stays loaded, if there was one.
    Failed {
        path: PathBuf,
        error: PluginError,
        kept: Option<PluginVersion>,
    },
    /// No `NAME.wasm` is left in the plugin folders; `kept` is the version still loaded (handles
    /// given out keep running it; the host hands out no new ones).
    Removed { kept: Option<PluginVersion> },
}

impl PluginHost {
    /// Loads the current `NAME.wasm` of `name` if it is not the one loaded. Compiling can take
    /// seconds (a Python component): call it off the async runtime (`spawn_blocking`).
    pub fn reload(&self, name: &str) -> Reload {
        let previous = self.loaded_version(name);
        let Some((_, path)) = self.plugin_files().into_iter().find(|(n, _)| n == name) else {
            return Reload::Removed {
                kept: previous.map(|l| PluginVersion::of(&l)),
            };
        };
        match self.load_file(name, &path) {
            Ok(loaded) => {
                let version = PluginVersion::of(&loaded);
                match previous {
                    Some(p) if Arc::ptr_eq(&p, &loaded) => Reload::Unchanged(version),
                    p => Reload::Reloaded {
                        version,
                        previous: p.map(|l| PluginVersion::of(&l)),
                    },
                }
            }
            // `load_file` caches only what loaded: the last good version is still there.
            Err(error) => Reload::Failed {
                path,
                error,
                kept: previous.map(|l| PluginVersion::of(&l)),
            },
        }
    }

    /// The version of `name` this host loaded last (whatever the folders hold now).
    fn loaded_version(&self, name: &str) -> Option<Arc<Loaded>> {
        let cache = self.inner.loaded.lock().ok()?;
        // Several paths can hold a version of one name (a file in an earlier folder shadowing a
        // later one): the most recently modified file is the one loaded last.
        cache
            .iter()
            .filter(|(_, (_, _, l))| &*l.name == name)
            .max_by_key(|(_, (mtime, _, _))| *mtime)
            .map(|(_, (_, _, l))| l.clone())
    }

    /// The plugin name a file in a plugin folder stands for (`NAME.wasm` → `NAME`), `None` for
    /// any other file.
    pub fn plugin_name_of(path: &Path) -> Option<String> {
        if path.extension().is_none_or(|e| e != "wasm") {
            return None;
        }
        path.file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }
}
