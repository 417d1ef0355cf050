//! Plugin kinds and contract versions, read from a component's exports.
use std::fmt;

use serde::Serialize;

/// Contract versions this host can run, newest first. Each has its own host module
/// (`src/wit/v0_1_0.rs`, ...), like one host adapter per WIT version.
pub use crate::wit::SUPPORTED_VERSIONS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginKind {
    Detector,
    SchemaConverter,
    ApprovalGuard,
    Transport,
}

impl PluginKind {
    pub const ALL: [PluginKind; 4] = [
        PluginKind::Detector,
        PluginKind::SchemaConverter,
        PluginKind::ApprovalGuard,
        PluginKind::Transport,
    ];

    /// The exported interface name inside package `rkmcp:plugin`.
    pub fn interface(self) -> &'static str {
        match self {
            PluginKind::Detector => "detector",
            PluginKind::SchemaConverter => "schema-converter",
            PluginKind::ApprovalGuard => "approval-guard",
            PluginKind::Transport => "transport",
        }
    }

    /// Per-call deadline when the grant sets none. A detector runs on every streamed chunk,
    /// so it gets little; a transport's `receive` adds its own timeout on top of this margin.
    pub fn default_timeout_ms(self) -> u64 {
        match self {
            PluginKind::Detector => 50,
            PluginKind::SchemaConverter => 1000,
            PluginKind::ApprovalGuard => 500,
            PluginKind::Transport => 5000,
        }
    }
}

impl fmt::Display for PluginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.interface())
    }
}

/// What a component's export names say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exported {
    Supported {
        kind: PluginKind,
        version: String,
    },
    /// Exports `rkmcp:plugin/...` but only of versions this host does not run.
    Unsupported {
        versions: Vec<String>,
    },
    /// Exports nothing of `rkmcp:plugin` that names a plugin kind.
    NotAPlugin {
        exports: Vec<String>,
    },
    /// Exports more than one kind; one component is one plugin.
    Several {
        kinds: Vec<PluginKind>,
    },
}

/// Classifies a component by its export names (`rkmcp:plugin/detector@0.1.0`, ...).
pub fn classify<'a>(export_names: impl IntoIterator<Item = &'a str>) -> Exported {
    let mut found = Vec::new();
    let mut unsupported = Vec::new();
    let mut all = Vec::new();
    for name in export_names {
        all.push(name.to_string());
        let Some(rest) = name.strip_prefix("rkmcp:plugin/") else {
            continue;
        };
        let (iface, version) = rest.split_once('@').unwrap_or((rest, ""));
        let Some(kind) = PluginKind::ALL.into_iter().find(|k| k.interface() == iface) else {
            continue;
        };
        if SUPPORTED_VERSIONS.contains(&version) {
            found.push((kind, version.to_string()));
        } else {
            unsupported.push(if version.is_empty() {
                "(none)".to_string()
            } else {
                version.to_string()
            });
        }
    }
    match found.len() {
        1 => {
            let (kind, version) = found.remove(0);
            Exported::Supported { kind, version }
        }
        0 if !unsupported.is_empty() => {
            unsupported.dedup();
            Exported::Unsupported {
                versions: unsupported,
            }
        }
        0 => Exported::NotAPlugin { exports: all },
        _ => Exported::Several {
            kinds: found.into_iter().map(|(k, _)| k).collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_exports() {
        assert_eq!(
            classify(["rkmcp:plugin/detector@0.1.0"]),
            Exported::Supported {
                kind: PluginKind::Detector,
                version: "0.1.0".into()
            }
        );
        assert_eq!(
            classify(["rkmcp:plugin/detector@0.2.0"]),
            Exported::Supported {
                kind: PluginKind::Detector,
                version: "0.2.0".into()
            }
        );
        assert_eq!(
            classify(["rkmcp:plugin/detector@9.0.0"]),
            Exported::Unsupported {
                versions: vec!["9.0.0".into()]
            }
        );
        assert!(matches!(
            classify(["wasi:cli/run@0.2.0"]),
            Exported::NotAPlugin { .. }
        ));
        assert!(matches!(
            classify([
                "rkmcp:plugin/detector@0.1.0",
                "rkmcp:plugin/transport@0.1.0"
            ]),
            Exported::Several { .. }
        ));
    }
}
