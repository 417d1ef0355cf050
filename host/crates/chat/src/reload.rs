//! Hot reload of plugins in a running `rkmcp chat`: the plugin folders are watched, and between
//! turns (never in the middle of one) a changed, added or removed `NAME.wasm` is applied with a
//! notice.
//!
//! - Changed: the new file is loaded and checked first (as at chat start: compiled, one plugin
//!   kind of a supported contract, linked, matching its world). If it loads, it replaces the old
//!   version for the next call; if not, the old version keeps running and the notice gives the
//!   cause chain. A half-written file (an editor or `cp` writing in steps) fails the same way and
//!   is picked up when the write completes.
//! - Added: announced; used only when the config names it (a plugin that was removed and comes
//!   back).
//! - Removed while in use: the loaded version keeps running until the chat ends, and the notice
//!   says so. Safest: an approval guard must never silently leave the approval path, and a
//!   detector or converter switched to the built-in one mid-conversation would change what the
//!   model is told and how its answers are read. Editors also remove files briefly while saving.
//!   To stop using a plugin, change the config and restart the chat.
//! - Transport plugins: a server's open connection is not touched; the MCP side loads the file
//!   when the server reconnects, so the notice says what that will find.
//!
//! Watching is `notify` (inotify, FSEvents, ReadDirectoryChangesW behind one API) with
//! `notify-debouncer-mini`, which turns the several events of one write into one per file.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use rkmcp_plugin_host::{PluginError, PluginHost, PluginKind, PluginVersion, Reload};

use super::engine::ChatEngine;
use super::settings::ChatSettings;
use rkmcp_config::{Config, TransportKind};

/// Quiet time after the last event of a file before it counts as changed: long enough for the
/// steps of one save or copy, short against a person typing the next message.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// What this chat uses plugins for (from the config, fixed for the session).
#[derive(Debug, Default)]
struct Roles {
    guards: Vec<String>,
    detector: Option<String>,
    converter: Option<String>,
    /// (plugin, server) for `transport = "plugin:NAME"`.
    transports: Vec<(String, String)>,
}

impl Roles {
    fn is_empty(&self) -> bool {
        self.guards.is_empty()
            && self.detector.is_none()
            && self.converter.is_none()
            && self.transports.is_empty()
    }

    /// What `name` serves as, for notices: "approval guard", "transport of server `s`".
    fn uses(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.guards.iter().any(|g| g == name) {
            out.push("approval guard".to_string());
        }
        if self.detector.as_deref() == Some(name) {
            out.push("detector".to_string());
        }
        if self.converter.as_deref() == Some(name) {
            out.push("schema converter".to_string());
        }
        for (plugin, server) in &self.transports {
            if plugin == name {
                out.push(format!("transport of server `{server}`"));
            }
        }
        out
    }
}

/// Watches the plugin folders of one chat and applies what changed between turns.
pub struct PluginReloader {
    host: PluginHost,
    roles: Roles,
    /// Plugin names whose file changed since the last [`apply`](Self::apply), filled by the
    /// watcher's thread.
    changed: Arc<Mutex<BTreeSet<String>>>,
    /// Errors the watcher reported since the last apply.
    errors: Arc<Mutex<Vec<String>>>,
    /// Plugins announced as removed: their return is announced even if the file is the same.
    removed: BTreeSet<String>,
    /// The version the chat runs of each guard, detector and converter (the host's newest
    /// version may be one that loaded but could not serve, e.g. of another kind).
    running: BTreeMap<String, PluginVersion>,
    watched: Vec<PathBuf>,
    /// Dropping it stops the watcher.
    _debouncer: Debouncer<RecommendedWatcher>,
}

impl PluginReloader {
    /// Starts watching every plugin folder that exists, if the chat uses a plugin at all
    /// (`Ok(None)` otherwise). `host` is the host the chat's plugins came from; a chat whose
    /// only plugins are transports gets a host of its own here.
    pub fn start(
        host: Option<PluginHost>,
        config: &Config,
        settings: &ChatSettings,
    ) -> anyhow::Result<Option<PluginReloader>> {
        let roles = Roles {
            guards: settings.approval.guards.clone(),
            detector: settings.detector.clone(),
            converter: settings.converter.clone(),
            transports: config
                .servers
                .iter()
                .filter_map(|s| match &s.transport {
                    TransportKind::Plugin(p) => Some((p.clone(), s.name.clone())),
                    _ => None,
                })
                .collect(),
        };
        if roles.is_empty() {
            return Ok(None);
        }
        let host = match host {
            Some(h) => h,
            None => PluginHost::new(config.section("plugins")?)?,
        };
        let changed: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let (on_change, on_error) = (changed.clone(), errors.clone());
        let mut debouncer =
            new_debouncer(DEBOUNCE, move |result: DebounceEventResult| match result {
                Ok(events) => {
                    let mut set = on_change.lock().unwrap_or_else(|e| e.into_inner());
                    set.extend(
                        events
                            .iter()
                            .filter_map(|e| PluginHost::plugin_name_of(&e.path)),
                    );
                }
                Err(err) => on_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(err.to_string()),
            })
            .context("cannot start watching the plugin folders")?;
        // What runs now: the chat loaded these from this host, so this finds them cached.
        let running = roles
            .guards
            .iter()
            .chain(&roles.detector)
            .chain(&roles.converter)
            .filter_map(|name| match host.reload(name) {
                Reload::Unchanged(v) | Reload::Reloaded { version: v, .. } => {
                    Some((name.clone(), v))
                }
                Reload::Failed { .. } | Reload::Removed { .. } => None,
            })
            .collect();
        let mut watched = Vec::new();
        // A folder that does not exist yet is not watched: a watch needs something to attach to,
        // and creating the user's folders is not the chat's business.
        for dir in host
            .config()
            .plugin_dirs()
            .into_iter()
            .filter(|d| d.is_dir())
        {
            debouncer
                .watcher()
                .watch(&dir, RecursiveMode::NonRecursive)
                .with_context(|| format!("cannot watch the plugin folder {}", dir.display()))?;
            watched.push(dir);
        }
        Ok(Some(PluginReloader {
            host,
            roles,
            changed,
            errors,
            removed: BTreeSet::new(),
            running,
            watched,
            _debouncer: debouncer,
        }))
    }

    /// The folders being watched.
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }

    /// Applies every change seen since the last call: call it between turns. Returns the
    /// notices for the user, one line each, free of control sequences (file names and plugin
    /// errors are not ours).
    pub async fn apply(&mut self, engine: &mut ChatEngine) -> Vec<String> {
        let mut notices: Vec<String> =
            std::mem::take(&mut *self.errors.lock().unwrap_or_else(|e| e.into_inner()))
                .into_iter()
                .map(|e| format!("watching the plugin folders: {e}"))
                .collect();
        let names = std::mem::take(&mut *self.changed.lock().unwrap_or_else(|e| e.into_inner()));
        for name in names {
            let host = self.host.clone();
            let n = name.clone();
            // Compiling a component takes from milliseconds to seconds (a Python one): off the
            // async runtime, whose other tasks (server notifications) keep running meanwhile.
            match tokio::task::spawn_blocking(move || host.reload(&n)).await {
                Ok(outcome) => notices.extend(self.settle(&name, outcome, engine)),
                Err(err) => notices.push(format!(
                    "plugin `{name}`: reloading stopped unexpectedly ({err}); the loaded version keeps running"
                )),
            }
        }
        notices
            .into_iter()
            .map(rkmcp_term_safe::sanitized_inline)
            .collect()
    }

    /// The notice for one plugin's reload outcome, after putting a new version in place.
    fn settle(&mut self, name: &str, outcome: Reload, engine: &mut ChatEngine) -> Option<String> {
        let uses = self.roles.uses(name);
        let role = uses.join(" and ");
        match outcome {
            // A removed file that came back as it was: the chat never stopped running it.
            Reload::Unchanged(v) => self.removed.remove(name).then(|| {
                format!(
                    "plugin `{name}` is back in {} ({v}), unchanged",
                    folder(&v.path)
                )
            }),
            Reload::Reloaded { version, previous } => {
                self.removed.remove(name);
                if uses.is_empty() {
                    return Some(format!(
                        "plugin `{name}` {} in {} ({version}); this chat does not use it",
                        if previous.is_some() {
                            "changed"
                        } else {
                            "added"
                        },
                        folder(&version.path)
                    ));
                }
                let was = self
                    .running
                    .get(name)
                    .map(|p| format!(", was {p}"))
                    .unwrap_or_default();
                Some(match self.swap(name, &version, engine) {
                    Ok(()) => {
                        if !self.is_transport_only(name) {
                            self.running.insert(name.to_string(), version.clone());
                        }
                        format!(
                            "plugin `{name}` reloaded ({version}{was}) from {}; the {role} uses it {}",
                            version.path.display(),
                            if self.is_transport_only(name) {
                                "when it reconnects"
                            } else {
                                "from the next call on"
                            }
                        )
                    }
                    Err(why) => format!(
                        "plugin `{name}`: the new {} loaded but cannot serve as {role}: {why}; the loaded version{} keeps running",
                        version.path.display(),
                        self.running
                            .get(name)
                            .map(|v| format!(" ({v})"))
                            .unwrap_or_default()
                    ),
                })
            }
            Reload::Failed { path, error, .. } => {
                let why = match error {
                    PluginError::Unusable { message, .. } => message,
                    other => other.to_string(),
                };
                Some(match (uses.is_empty(), self.running.get(name)) {
                    (false, _) if self.is_transport_only(name) => format!(
                        "plugin `{name}`: the new {} does not load: {why}; the {role} keeps its connection, but reconnecting fails until the file is fixed",
                        path.display()
                    ),
                    (false, Some(kept)) => format!(
                        "plugin `{name}`: the new {} does not load: {why}; the loaded version ({kept}) keeps running as {role}",
                        path.display()
                    ),
                    _ => format!("plugin `{name}`: {} does not load: {why}", path.display()),
                })
            }
            Reload::Removed { kept } => {
                self.removed.insert(name.to_string());
                let from = kept
                    .as_ref()
                    .map(|k| format!(" from {}", folder(&k.path)))
                    .unwrap_or_default();
                let running = self
                    .running
                    .get(name)
                    .map(|v| format!(" ({v})"))
                    .unwrap_or_default();
                Some(if uses.is_empty() {
                    format!("plugin `{name}` was removed{from}")
                } else if self.is_transport_only(name) {
                    format!(
                        "plugin `{name}` was removed{from}; the {role} keeps its connection, but reconnecting fails while the file is missing"
                    )
                } else {
                    format!(
                        "plugin `{name}` was removed{from}; this chat keeps running the loaded version{running} as {role} until it ends (a removed plugin never leaves a chat silently); restart the chat to run without it"
                    )
                })
            }
        }
    }

    /// Whether `name` serves only as a transport (the MCP side loads it on reconnect).
    fn is_transport_only(&self, name: &str) -> bool {
        let r = &self.roles;
        r.transports.iter().any(|(p, _)| p == name)
            && !r.guards.iter().any(|g| g == name)
            && r.detector.as_deref() != Some(name)
            && r.converter.as_deref() != Some(name)
    }

    /// Puts the newly loaded version of `name` in place for every role the chat uses it in.
    /// All handles are made first, so a plugin is never half swapped.
    fn swap(
        &self,
        name: &str,
        version: &PluginVersion,
        engine: &mut ChatEngine,
    ) -> Result<(), String> {
        let r = &self.roles;
        let text = |e: PluginError| match e {
            PluginError::Unusable { message, .. } => message,
            other => other.to_string(),
        };
        let guard = if r.guards.iter().any(|g| g == name) {
            Some(self.host.approval_guard(name).map_err(text)?)
        } else {
            None
        };
        let detector = if r.detector.as_deref() == Some(name) {
            Some(self.host.detector(name).map_err(text)?)
        } else {
            None
        };
        let converter = if r.converter.as_deref() == Some(name) {
            Some(self.host.schema_converter(name).map_err(text)?)
        } else {
            None
        };
        if r.transports.iter().any(|(p, _)| p == name) && version.kind != PluginKind::Transport {
            return Err(format!("it is a {}, not a transport", version.kind));
        }
        if let Some(g) = guard {
            engine.replace_guard(g);
        }
        if let Some(d) = detector {
            engine.replace_detector_plugin(d);
        }
        if let Some(c) = converter {
            engine.replace_converter_plugin(c);
        }
        Ok(())
    }
}

fn folder(path: &Path) -> String {
    path.parent()
        .map_or_else(|| path.display().to_string(), |p| p.display().to_string())
}
