//! The plugin lock: which file content and which grants the user approved, per plugin.
//!
//! `rkmcp plugins install` records the SHA-256 of the plugin it installed and the grants the
//! config gives it then; `rkmcp plugins grant` and `rkmcp plugins approve` record again. When a
//! plugin with an entry is loaded, the content actually compiled (the very bytes, hashed once, so
//! a file swapped between a check and the load cannot slip through) must have the recorded
//! digest, and the config must not grant it more than was approved; otherwise it is not run until
//! the user approves the new file (`rkmcp plugins approve NAME`, which shows the differences).
//! Plugins without an entry (dropped into a folder by hand) load as before, unless
//! `[plugins] require_approval = true`.
//!
//! The file lives in rkmcp's config folder, which no plugin may be granted (see
//! [`crate::PluginsConfig::protected_dirs`]). It is TOML a person can read:
//!
//! ```toml
//! [plugins.my-guard]
//! sha256 = "4f1c…"
//! grants = ["network: 127.0.0.1:8765"]
//! ```
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::Grant;

/// One plugin's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    /// SHA-256 of the approved `.wasm`, hex.
    pub sha256: String,
    /// The grants approved with it, one line per granted item ([`grant_lines`]).
    #[serde(default)]
    pub grants: Vec<String>,
}

/// The whole lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginLock {
    #[serde(default)]
    pub plugins: BTreeMap<String, LockEntry>,
}

/// Whether a plugin may run, judged from the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its content and grants are the approved ones (or within them).
    Approved,
    /// No entry for it.
    NotRecorded,
    /// The file is not the one approved.
    Changed { approved: String, found: String },
    /// The config grants it more than was approved.
    MoreGranted { added: Vec<String> },
}

impl Verdict {
    /// Why the plugin is not run, or `None` when it may be (`require_approval`: whether a
    /// plugin without an entry is refused too).
    pub fn refusal(&self, name: &str, require_approval: bool) -> Option<String> {
        let approve = format!("check it, then run `rkmcp plugins approve {name}`");
        match self {
            Verdict::Approved => None,
            Verdict::NotRecorded if !require_approval => None,
            Verdict::NotRecorded => Some(format!(
                "is not approved ([plugins] require_approval = true and the plugin lock has no \
                 entry for it); {approve}"
            )),
            Verdict::Changed { approved, found } => Some(format!(
                "its file changed since it was approved (sha256 {} approved, {} found); it is not \
                 run until you approve the new file: {approve}",
                short(approved),
                short(found)
            )),
            Verdict::MoreGranted { added } => Some(format!(
                "the config grants it more than was approved ({}); it is not run until you \
                 approve that: {approve}",
                added.join("; ")
            )),
        }
    }
}

/// The first 12 hex digits: enough to tell two files apart when reading a message.
pub fn short(sha256: &str) -> String {
    format!("{}…", &sha256[..sha256.len().min(12)])
}

/// What a grant gives, one line per item (`network: 127.0.0.1:8765`, `files: /data → /data
/// (ro)`), for recording and comparing. Only the capabilities: memory, deadline and fuel limit a
/// plugin rather than give it anything.
pub fn grant_lines(grant: &Grant) -> Vec<String> {
    crate::caps::summary(grant)
        .into_iter()
        .flat_map(|(key, items)| items.into_iter().map(move |item| format!("{key}: {item}")))
        .collect()
}

impl PluginLock {
    /// Reads the lock; a missing file is an empty lock.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(format!(
                    "cannot read the plugin lock {}: {e}",
                    path.display()
                ));
            }
        };
        toml::from_str(&text)
            .map_err(|e| format!("the plugin lock {} is not valid: {e}", path.display()))
    }

    /// Writes the lock (private to the user, replaced atomically).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let body = toml::to_string_pretty(self)
            .map_err(|e| format!("cannot write the plugin lock: {e}"))?;
        let text = format!(
            "# The plugins you approved: each file's SHA-256 and the grants approved with it.\n\
             # Written by `rkmcp plugins install`, `grant` and `approve`; a plugin whose file or\n\
             # grants differ is not run until approved again.\n\n{body}"
        );
        crate::engine::write_atomically(path, text.as_bytes())
            .map_err(|e| format!("cannot write the plugin lock {}: {e}", path.display()))
    }

    pub fn judge(&self, name: &str, sha256: &str, grants: &[String]) -> Verdict {
        let Some(entry) = self.plugins.get(name) else {
            return Verdict::NotRecorded;
        };
        if !entry.sha256.eq_ignore_ascii_case(sha256) {
            return Verdict::Changed {
                approved: entry.sha256.clone(),
                found: sha256.to_string(),
            };
        }
        let added: Vec<String> = grants
            .iter()
            .filter(|g| !entry.grants.contains(g))
            .cloned()
            .collect();
        if added.is_empty() {
            Verdict::Approved
        } else {
            Verdict::MoreGranted { added }
        }
    }

    pub fn approve(&mut self, name: &str, sha256: &str, grants: Vec<String>) {
        self.plugins.insert(
            name.to_string(),
            LockEntry {
                sha256: sha256.to_string(),
                grants,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock() -> PluginLock {
        let mut l = PluginLock::default();
        l.approve("g", "aaaa", vec!["network: 127.0.0.1:8765".into()]);
        l
    }

    #[test]
    fn only_the_approved_file_with_no_more_than_the_approved_grants_runs() {
        let l = lock();
        let net = vec!["network: 127.0.0.1:8765".to_string()];
        assert_eq!(l.judge("g", "AAAA", &net), Verdict::Approved);
        assert_eq!(
            l.judge("g", "aaaa", &[]),
            Verdict::Approved,
            "fewer grants are fine"
        );
        let changed = l.judge("g", "bbbb", &net);
        assert!(matches!(changed, Verdict::Changed { .. }), "{changed:?}");
        let refusal = changed.refusal("g", false).unwrap();
        assert!(refusal.contains("aaaa… approved, bbbb… found"), "{refusal}");
        assert!(refusal.contains("rkmcp plugins approve g"), "{refusal}");
        let more = l.judge("g", "aaaa", &[net[0].clone(), "env: HOME".into()]);
        assert_eq!(
            more,
            Verdict::MoreGranted {
                added: vec!["env: HOME".into()]
            }
        );
        assert!(more.refusal("g", false).unwrap().contains("(env: HOME)"));
    }

    #[test]
    fn a_plugin_without_an_entry_runs_unless_approval_is_required() {
        let v = lock().judge("other", "cccc", &[]);
        assert_eq!(v, Verdict::NotRecorded);
        assert_eq!(v.refusal("other", false), None);
        let refusal = v.refusal("other", true).unwrap();
        assert!(refusal.contains("require_approval = true"), "{refusal}");
    }

    #[test]
    fn the_file_round_trips_and_a_broken_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rkmcp/plugins.lock");
        assert_eq!(PluginLock::load(&path).unwrap(), PluginLock::default());
        lock().save(&path).unwrap();
        assert_eq!(PluginLock::load(&path).unwrap(), lock());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# The plugins you approved"), "{text}");
        std::fs::write(&path, "[plugins.g]\nsha = 1\n").unwrap();
        let err = PluginLock::load(&path).unwrap_err();
        assert!(err.contains("plugins.lock is not valid"), "{err}");
    }

    #[test]
    fn grant_lines_name_each_capability_item() {
        let grant: Grant =
            toml::from_str("network = [\"127.0.0.1:8765\"]\nenv = [\"LANG\"]").unwrap();
        let lines = grant_lines(&grant);
        assert!(
            lines.contains(&"network: 127.0.0.1:8765".to_string()),
            "{lines:?}"
        );
        assert!(lines.contains(&"env: LANG".to_string()), "{lines:?}");
        assert!(grant_lines(&Grant::default()).is_empty());
    }
}
