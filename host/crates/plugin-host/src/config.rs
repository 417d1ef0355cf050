//! The `[plugins]` table of rkmcp's config: where plugins live and what the user grants each.
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::kind::PluginKind;

/// `[plugins]` in rkmcp's TOML config.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PluginsConfig {
    /// Extra plugin folders, searched after the default folder.
    pub dirs: Vec<PathBuf>,
    /// Also search `$XDG_DATA_HOME/rkmcp/plugins` (default: true).
    pub default_dir: bool,
    /// Compiled-component cache; default `$XDG_CACHE_HOME/rkmcp/components`.
    pub cache_dir: Option<PathBuf>,
    /// Disable the on-disk compile cache (every load compiles).
    pub no_cache: bool,
    /// A plugin is quarantined after this many faults (trap, deadline, limit) ...
    pub quarantine_after: u32,
    /// ... within this many seconds.
    pub quarantine_window_s: u64,
    /// Use wasmtime's pooling allocator (faster instantiation, reserves virtual memory up front).
    pub pooling: bool,
    /// Per plugin name: what the user grants. Nothing is granted to a plugin without an entry.
    pub grants: BTreeMap<String, Grant>,
    /// The plugin lock (approved digests and grants; see [`crate::lock`]); default
    /// `$XDG_CONFIG_HOME/rkmcp/plugins.lock`.
    pub lock_file: Option<PathBuf>,
    /// Refuse plugins the lock has no entry for (default: only plugins with an entry are held
    /// to it; a file dropped into a plugin folder by hand loads).
    pub require_approval: bool,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            dirs: Vec::new(),
            default_dir: true,
            cache_dir: None,
            no_cache: false,
            quarantine_after: 3,
            quarantine_window_s: 60,
            pooling: false,
            grants: BTreeMap::new(),
            lock_file: None,
            require_approval: false,
        }
    }
}

/// `[plugins.grants.NAME]`: everything here is denied unless written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Grant {
    /// Set to false to switch a plugin off without removing its file.
    pub enabled: Option<bool>,
    /// Host directories the plugin sees (WASI preopens).
    pub files: Vec<FileGrant>,
    /// `host:port` patterns the plugin may connect to (`127.0.0.1:8765`, `*.example.com:443`).
    pub network: Vec<String>,
    /// Names of host environment variables the plugin may read.
    pub env: Vec<String>,
    /// Linear-memory cap in MiB (default 64).
    pub memory_mb: Option<u64>,
    /// Deadline for one call in ms (default depends on the kind; see [`PluginKind::default_timeout_ms`]).
    /// A fresh instance's start-up (instantiation, a detector session's start) gets at least
    /// [`crate::STARTUP_DEADLINE`].
    pub call_timeout_ms: Option<u64>,
    /// Fuel (instruction budget) per call; unset = no fuel metering.
    pub fuel: Option<u64>,
    /// Largest result one call may return, in KiB (default 4096).
    pub max_output_kb: Option<u64>,
    /// The plugin's own config values (over the manifest's defaults), read with `config-get`.
    pub config: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileGrant {
    /// Directory on the host (must exist; `..` and symlinks are resolved before granting).
    pub host: PathBuf,
    /// Absolute path under which the plugin sees it.
    pub guest: String,
    #[serde(default)]
    pub mode: FileMode,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileMode {
    #[default]
    Ro,
    Rw,
}

pub const DEFAULT_MEMORY_MB: u64 = 64;
pub const DEFAULT_MAX_OUTPUT_KB: u64 = 4096;

impl Grant {
    pub fn memory_bytes(&self) -> usize {
        let mb = self.memory_mb.unwrap_or(DEFAULT_MEMORY_MB);
        usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }

    pub fn timeout_ms(&self, kind: PluginKind) -> u64 {
        self.call_timeout_ms.unwrap_or(kind.default_timeout_ms())
    }

    pub fn max_output_bytes(&self) -> usize {
        let kb = self.max_output_kb.unwrap_or(DEFAULT_MAX_OUTPUT_KB);
        usize::try_from(kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
}

/// A config value as the plugin sees it: strings as they are, everything else as TOML text.
pub fn config_value_string(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn xdg_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() && PathBuf::from(&v).is_absolute() => Some(PathBuf::from(v)),
        _ => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(fallback)),
    }
}

impl PluginsConfig {
    /// The folders searched for `NAME.wasm`, in order (earlier folders win on a name clash).
    pub fn plugin_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if self.default_dir
            && let Some(d) = xdg_dir("XDG_DATA_HOME", ".local/share")
        {
            dirs.push(d.join("rkmcp").join("plugins"));
        }
        dirs.extend(self.dirs.iter().cloned());
        dirs
    }

    pub fn resolved_cache_dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        self.cache_dir.clone().or_else(|| {
            xdg_dir("XDG_CACHE_HOME", ".cache").map(|d| d.join("rkmcp").join("components"))
        })
    }

    /// Folders no file grant may reach: the compile cache and plugin folders (no read-write
    /// grant: writing there runs code as the user) and rkmcp's config folder (no grant at all:
    /// it holds secrets).
    pub fn protected_dirs(&self) -> Vec<crate::trust::Protected> {
        use crate::trust::{Protected, normalize};
        let mut out = Vec::new();
        if let Some(c) = self.resolved_cache_dir() {
            out.push(Protected {
                path: normalize(&c),
                what: "the plugin compile cache",
                no_read: false,
            });
        }
        for d in self.plugin_dirs() {
            out.push(Protected {
                path: normalize(&d),
                what: "a plugin folder",
                no_read: false,
            });
        }
        if let Some(lock) = &self.lock_file {
            // A plugin that could write the lock could approve itself.
            out.push(Protected {
                path: normalize(lock),
                what: "the plugin lock",
                no_read: false,
            });
        }
        if let Some(c) = xdg_dir("XDG_CONFIG_HOME", ".config") {
            out.push(Protected {
                path: normalize(&c.join("rkmcp")),
                what: "rkmcp's config folder",
                no_read: true,
            });
        }
        out
    }

    /// Where the plugin lock is (`None`: no config folder, so no lock).
    pub fn resolved_lock_file(&self) -> Option<PathBuf> {
        self.lock_file.clone().or_else(|| {
            xdg_dir("XDG_CONFIG_HOME", ".config").map(|d| d.join("rkmcp").join("plugins.lock"))
        })
    }

    pub fn grant(&self, name: &str) -> Grant {
        self.grants.get(name).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_shape() {
        let cfg: PluginsConfig = toml::from_str(
            r#"
            dirs = ["./plugins"]
            [grants.ws-transport]
            files = [{ host = "/data", guest = "/data", mode = "ro" }]
            network = ["127.0.0.1:8765", "*.example.com:443"]
            env = ["HOME"]
            memory_mb = 32
            call_timeout_ms = 50
            fuel = 100000000
            config = { url = "ws://127.0.0.1:8765/mcp", retries = 3 }
            "#,
        )
        .unwrap();
        let g = cfg.grant("ws-transport");
        assert_eq!(g.files[0].mode, FileMode::Ro);
        assert_eq!(g.memory_bytes(), 32 << 20);
        assert_eq!(config_value_string(&g.config["retries"]), "3");
        assert_eq!(
            config_value_string(&g.config["url"]),
            "ws://127.0.0.1:8765/mcp"
        );
        assert_eq!(cfg.grant("other"), Grant::default());
        assert_eq!(Grant::default().memory_bytes(), 64 << 20);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = toml::from_str::<PluginsConfig>("[grants.x]\nnetwrk = []").unwrap_err();
        assert!(e.to_string().contains("netwrk"), "{e}");
    }
}
