//! `NAME.toml` beside `NAME.wasm`: a description, the capabilities the plugin *requests* and
//! its default config. A manifest never grants anything; it only lets `rkmcp plugins` tell the
//! user what to grant.
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::FileMode;

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Manifest {
    pub description: Option<String>,
    /// Free-form, e.g. the format a detector understands.
    pub version: Option<String>,
    pub requests: Requests,
    /// Default config values (the user's grant overrides them key by key).
    pub config: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Requests {
    pub files: Vec<RequestedFiles>,
    pub network: Vec<String>,
    pub env: Vec<String>,
    pub memory_mb: Option<u64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RequestedFiles {
    pub guest: String,
    #[serde(default)]
    pub mode: FileMode,
    /// Why the plugin wants it.
    pub why: Option<String>,
}

/// Reads the manifest beside `wasm` if there is one.
pub fn load_beside(wasm: &Path) -> anyhow::Result<Option<Manifest>> {
    let path = wasm.with_extension("toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("cannot read plugin manifest {}: {e}", path.display()),
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("plugin manifest {}: {e}", path.display()))
}
