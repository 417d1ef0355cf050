//! [`PluginHost`]: finds plugins in the drop-in folders, loads them with the user's grants and
//! hands out per-kind handles.
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::caps::stdio::OutputLimiter;
use crate::caps::{Granted, ResolveCx};
use crate::config::{Grant, PluginsConfig, config_value_string};
use crate::engine::{CacheOutcome, Runtime, RuntimeOptions};
use crate::error::PluginError;
use crate::handles::{
    ApprovalGuard, Decision, Detector, ProposedCall, SchemaConverter, ToolAnnotations, Transport,
};
use crate::kind::{Exported, PluginKind, SUPPORTED_VERSIONS, classify};
use crate::manifest::{self, Manifest};
use crate::plugin::{Health, KindPre, Loaded, Settings};
use crate::wit::{
    ApprovalGuardPre, DetectorPre, SchemaConverterPre, TransportPre, Versioned, latest, v0_1_0,
};

mod reload;
pub use reload::{PluginVersion, Reload};

use crate::lock::{LockEntry, PluginLock, grant_lines};

/// Whether a load is held to the plugin lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    /// A plugin loaded from the folders to run (chat, serve, reload, `plugins list`).
    Held,
    /// A file the user named in `plugins check` or `plugins inspect`.
    NotHeld,
}

/// What `rkmcp plugins approve NAME` would record ([`PluginHost::pending_approval`]).
#[derive(Debug, Clone)]
pub struct PendingApproval {
    pub name: String,
    pub path: PathBuf,
    pub lock_file: PathBuf,
    /// What the lock holds now.
    pub previous: Option<LockEntry>,
    /// The file's digest now.
    pub sha256: String,
    /// The grants the config gives it now.
    pub grants: Vec<String>,
}

/// Where a plugin stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "state", content = "reason")]
pub enum PluginStatus {
    Ready,
    /// Switched off with `enabled = false` in its grant.
    Disabled,
    /// Faulted repeatedly; refused until rkmcp restarts.
    Quarantined(String),
    /// Could not be loaded (not a component, unsupported contract version, bad grant, ...).
    Error(String),
}

/// What the user granted, as shown by `rkmcp plugins`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GrantSummary {
    /// What each capability grants (files, network, env, …), by its grant key, in a fixed order.
    pub capabilities: Vec<(&'static str, Vec<String>)>,
    pub memory_mb: u64,
    pub call_timeout_ms: Option<u64>,
    pub fuel: Option<u64>,
}

impl GrantSummary {
    /// What the capability with this grant key grants (empty: nothing, or no such key).
    pub fn granted(&self, key: &str) -> &[String] {
        self.capabilities
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(&[], |(_, items)| items.as_slice())
    }

    /// Whether no capability grants anything.
    pub fn grants_nothing(&self) -> bool {
        self.capabilities.iter().all(|(_, items)| items.is_empty())
    }
}

/// JSON: `{"files": [...], "network": [...], "env": [...], "memory_mb": …}`, one key per capability.
impl Serialize for GrantSummary {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.capabilities.len() + 3))?;
        for (key, items) in &self.capabilities {
            map.serialize_entry(key, items)?;
        }
        map.serialize_entry("memory_mb", &self.memory_mb)?;
        map.serialize_entry("call_timeout_ms", &self.call_timeout_ms)?;
        map.serialize_entry("fuel", &self.fuel)?;
        map.end()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PluginInfo {
    pub name: String,
    pub path: PathBuf,
    pub kind: Option<PluginKind>,
    /// Contract version (`rkmcp:plugin@VERSION`) the component was built for.
    pub contract_version: Option<String>,
    pub manifest: Option<Manifest>,
    pub grants: GrantSummary,
    pub status: PluginStatus,
    /// How the compiled code was obtained on this load.
    pub cache: Option<CacheOutcome>,
    /// SHA-256 (hex) of the content loaded, the digest the plugin lock records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Faults seen since rkmcp started, and the last one.
    pub faults: u64,
    pub last_fault: Option<String>,
    /// Output lines (stdout, stderr, log) forwarded to the log, and dropped by the rate limit.
    pub output_lines_logged: u64,
    pub output_lines_dropped: u64,
    /// Component imports and exports (filled by [`PluginHost::inspect`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exports: Vec<String>,
}

/// The result of [`PluginHost::check`]: the plugin loaded, instantiated and answered a smoke call.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub info: PluginInfo,
    pub load_ms: f64,
    pub instantiate_ms: f64,
    /// What the smoke call did and returned.
    pub smoke: String,
}

type LoadedEntry = (std::time::SystemTime, u64, Arc<Loaded>);

struct HostInner {
    config: PluginsConfig,
    /// Folders no file grant may reach (see [`PluginsConfig::protected_dirs`]).
    protected: Vec<crate::trust::Protected>,
    rt: Arc<Runtime>,
    health: Mutex<HashMap<String, Arc<Health>>>,
    output: Mutex<HashMap<String, Arc<OutputLimiter>>>,
    /// Loaded plugins by path, with the (mtime, size) they were loaded at.
    loaded: Mutex<HashMap<PathBuf, LoadedEntry>>,
}

/// The plugin host. Cheap to clone; all clones share the engine, caches and plugin health.
#[derive(Clone)]
pub struct PluginHost {
    inner: Arc<HostInner>,
}

impl PluginHost {
    /// Creates the host: checks every grant, builds the engine and starts the epoch ticker.
    /// Must be called inside a tokio runtime.
    pub fn new(config: PluginsConfig) -> anyhow::Result<PluginHost> {
        for (name, grant) in &config.grants {
            crate::caps::check(name, grant)?;
        }
        let max_memory = config
            .grants
            .values()
            .map(Grant::memory_bytes)
            .chain([Grant::default().memory_bytes()])
            .max()
            .unwrap_or(64 << 20);
        let rt = Runtime::new(RuntimeOptions {
            fuel: config.grants.values().any(|g| g.fuel.is_some()),
            pooling: config.pooling,
            max_memory,
            cache_dir: config.resolved_cache_dir(),
        })?;
        Ok(PluginHost {
            inner: Arc::new(HostInner {
                protected: config.protected_dirs(),
                config,
                rt: Arc::new(rt),
                health: Mutex::default(),
                output: Mutex::default(),
                loaded: Mutex::default(),
            }),
        })
    }

    pub fn config(&self) -> &PluginsConfig {
        &self.inner.config
    }

    /// `NAME.wasm` files in the plugin folders; the first folder wins on a name clash.
    pub fn plugin_files(&self) -> Vec<(String, PathBuf)> {
        let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
        for dir in self.inner.config.plugin_dirs() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut paths: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            for path in paths {
                if path.extension().is_some_and(|e| e == "wasm")
                    && path.is_file()
                    && let Some(name) = path.file_stem().and_then(|s| s.to_str())
                {
                    found.entry(name.to_string()).or_insert(path);
                }
            }
        }
        found.into_iter().collect()
    }

    /// Every plugin in the folders, loaded (or failing to) with its status.
    pub fn discover(&self) -> Vec<PluginInfo> {
        self.plugin_files()
            .into_iter()
            .map(|(name, path)| self.info_for(&name, &path, false))
            .collect()
    }

    /// Everything about one plugin file (which needs no grant to be inspected).
    pub fn inspect(&self, path: &Path) -> anyhow::Result<PluginInfo> {
        let name = plugin_name(path)?;
        let info = self.info_for(&name, path, true);
        if let PluginStatus::Error(e) = &info.status
            && info.kind.is_none()
        {
            anyhow::bail!("{e}");
        }
        Ok(info)
    }

    /// Loads, instantiates and smoke-calls a plugin file with its grant.
    pub async fn check(&self, path: &Path) -> anyhow::Result<CheckReport> {
        let name = plugin_name(path)?;
        let start = Instant::now();
        // An explicit check of a file the user names is their consent to run it once: the lock
        // holds plugins loaded from the folders, not this.
        let loaded = self
            .load_file_with(&name, path, Lock::NotHeld)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        instantiate_once(&loaded).await?;
        let instantiate_ms = start.elapsed().as_secs_f64() * 1e3;
        let smoke = smoke_call(&loaded).await?;
        Ok(self.report(&loaded, load_ms, instantiate_ms, smoke))
    }

    fn report(
        &self,
        loaded: &Loaded,
        load_ms: f64,
        instantiate_ms: f64,
        smoke: String,
    ) -> CheckReport {
        CheckReport {
            info: self.info_for(&loaded.name, &loaded.path, false),
            load_ms,
            instantiate_ms,
            smoke,
        }
    }

    /// A detector by plugin name.
    pub fn detector(&self, name: &str) -> Result<Detector, PluginError> {
        Detector::new(self.load_named(name)?)
    }

    pub fn schema_converter(&self, name: &str) -> Result<SchemaConverter, PluginError> {
        SchemaConverter::new(self.load_named(name)?)
    }

    pub fn approval_guard(&self, name: &str) -> Result<ApprovalGuard, PluginError> {
        ApprovalGuard::new(self.load_named(name)?)
    }

    pub fn transport(&self, name: &str) -> Result<Transport, PluginError> {
        Transport::new(self.load_named(name)?)
    }

    /// Names of quarantined plugins with the fault that put them there.
    pub fn quarantined(&self) -> Vec<(String, String)> {
        let Ok(h) = self.inner.health.lock() else {
            return Vec::new();
        };
        let mut out: Vec<_> = h
            .iter()
            .filter_map(|(n, h)| h.quarantined().map(|r| (n.clone(), r)))
            .collect();
        out.sort();
        out
    }

    fn load_named(&self, name: &str) -> Result<Arc<Loaded>, PluginError> {
        let Some((_, path)) = self.plugin_files().into_iter().find(|(n, _)| n == name) else {
            let dirs: Vec<String> = self
                .inner
                .config
                .plugin_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            return Err(PluginError::unusable(
                name,
                format!("no {name}.wasm in the plugin folders ({})", dirs.join(", ")),
            ));
        };
        self.load_file(name, &path)
    }

    fn health(&self, name: &str) -> Arc<Health> {
        let cfg = &self.inner.config;
        let mut h = self.inner.health.lock().unwrap_or_else(|e| e.into_inner());
        h.entry(name.to_string())
            .or_insert_with(|| {
                Arc::new(Health::new(
                    cfg.quarantine_after,
                    Duration::from_secs(cfg.quarantine_window_s),
                ))
            })
            .clone()
    }

    fn output(&self, name: &str) -> Arc<OutputLimiter> {
        let mut o = self.inner.output.lock().unwrap_or_else(|e| e.into_inner());
        o.entry(name.to_string()).or_default().clone()
    }

    /// Loads (or reuses, if the file did not change) a plugin with its grant applied, held to
    /// the plugin lock.
    fn load_file(&self, name: &str, path: &Path) -> Result<Arc<Loaded>, PluginError> {
        self.load_file_with(name, path, Lock::Held)
    }

    fn load_file_with(
        &self,
        name: &str,
        path: &Path,
        lock: Lock,
    ) -> Result<Arc<Loaded>, PluginError> {
        let grant = self.inner.config.grant(name);
        if grant.enabled == Some(false) {
            return Err(PluginError::unusable(
                name,
                "is disabled in the config (enabled = false)",
            ));
        }
        let health = self.health(name);
        if let Some(reason) = health.quarantined() {
            return Err(PluginError::Quarantined {
                plugin: name.to_string(),
                reason,
            });
        }
        trusted_plugin_file(path).map_err(|e| PluginError::unusable(name, e))?;
        let meta = std::fs::metadata(path)
            .map_err(|e| PluginError::unusable(name, format!("{}: {e}", path.display())))?;
        let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
        let cached = self
            .inner
            .loaded
            .lock()
            .ok()
            .and_then(|cache| cache.get(path).cloned())
            .filter(|(m, l, _)| (*m, *l) == stamp)
            .map(|(_, _, loaded)| loaded);
        let loaded = match cached {
            Some(loaded) => loaded,
            None => {
                let loaded = Arc::new(
                    self.load_uncached(name, path, &grant, health)
                        .map_err(|e| PluginError::unusable(name, format!("{e:#}")))?,
                );
                if let Ok(mut cache) = self.inner.loaded.lock() {
                    cache.insert(path.to_path_buf(), (stamp.0, stamp.1, loaded.clone()));
                }
                loaded
            }
        };
        // Judged on the digest of the code that was compiled (never on a second read of the
        // file), and on every load, cached or not: an approval or a grant can change between two.
        if lock == Lock::Held {
            self.judge(name, &loaded.sha256, &grant)
                .map_err(|message| PluginError::unusable(name, message))?;
        }
        Ok(loaded)
    }

    /// Whether the plugin lock lets this content run with this grant.
    fn judge(&self, name: &str, sha256: &str, grant: &Grant) -> Result<(), String> {
        let config = &self.inner.config;
        let Some(file) = config.resolved_lock_file() else {
            return Ok(());
        };
        let lock = PluginLock::load(&file)?;
        match lock
            .judge(name, sha256, &grant_lines(grant))
            .refusal(name, config.require_approval)
        {
            Some(refusal) => Err(refusal),
            None => Ok(()),
        }
    }

    /// What approving the current `NAME.wasm` would record, against what the lock holds now.
    pub fn pending_approval(&self, name: &str) -> anyhow::Result<PendingApproval> {
        let Some((_, path)) = self.plugin_files().into_iter().find(|(n, _)| n == name) else {
            anyhow::bail!(
                "no {name}.wasm in the plugin folders ({})",
                self.inner
                    .config
                    .plugin_dirs()
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        let Some(lock_file) = self.inner.config.resolved_lock_file() else {
            anyhow::bail!("no config folder for the plugin lock: set XDG_CONFIG_HOME or HOME");
        };
        let bytes = std::fs::read(&path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        let lock = PluginLock::load(&lock_file).map_err(anyhow::Error::msg)?;
        let grants = grant_lines(&self.inner.config.grant(name));
        Ok(PendingApproval {
            name: name.to_string(),
            path,
            lock_file,
            previous: lock.plugins.get(name).cloned(),
            sha256,
            grants,
        })
    }

    /// Records an approval in the lock (read again and written atomically, so entries other
    /// commands wrote meanwhile are kept).
    pub fn record_approval(&self, approval: &PendingApproval) -> anyhow::Result<()> {
        let mut lock = PluginLock::load(&approval.lock_file).map_err(anyhow::Error::msg)?;
        lock.approve(&approval.name, &approval.sha256, approval.grants.clone());
        lock.save(&approval.lock_file).map_err(anyhow::Error::msg)
    }

    fn load_uncached(
        &self,
        name: &str,
        path: &Path,
        grant: &Grant,
        health: Arc<Health>,
    ) -> anyhow::Result<Loaded> {
        let rt = &self.inner.rt;
        let (component, cache, sha256) = rt.load_file(path)?;
        let (kind, version) = kind_of(path, &component, &rt.engine)?;
        let manifest = manifest::load_beside(path)?;
        let settings = settings_for(&self.inner.protected, name, kind, grant, manifest.as_ref())?;
        let instance_pre = rt.linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!(
                "{}: imports something rkmcp does not provide: {e}",
                path.display()
            )
        })?;
        let wrap = |e: wasmtime::Error| {
            anyhow::anyhow!("{}: does not match the {kind} world: {e}", path.display())
        };
        // The version was read from the component's own export names; the bindings of that
        // version check the component against its world.
        let latest = version == latest::VERSION;
        macro_rules! pre_for {
            ($module:ident :: $pre:ident) => {
                if latest {
                    Versioned::Latest(latest::$module::$pre::new(instance_pre).map_err(wrap)?)
                } else {
                    Versioned::V0_1_0(v0_1_0::$module::$pre::new(instance_pre).map_err(wrap)?)
                }
            };
        }
        let pre = match kind {
            PluginKind::Detector => KindPre::Detector(pre_for!(detector::DetectorPluginPre)),
            PluginKind::SchemaConverter => {
                KindPre::SchemaConverter(pre_for!(schema_converter::SchemaConverterPluginPre))
            }
            PluginKind::ApprovalGuard => {
                KindPre::ApprovalGuard(pre_for!(approval_guard::ApprovalGuardPluginPre))
            }
            PluginKind::Transport => KindPre::Transport(pre_for!(transport::TransportPluginPre)),
        };
        Ok(Loaded {
            name: Arc::from(name),
            path: path.to_path_buf(),
            kind,
            version,
            component,
            cache,
            sha256,
            pre,
            settings,
            output: self.output(name),
            health,
            rt: rt.clone(),
        })
    }

    fn info_for(&self, name: &str, path: &Path, with_world: bool) -> PluginInfo {
        let grant = self.inner.config.grant(name);
        let health = self.health(name);
        let output = self.output(name);
        let (faults, last_fault) = health.faults();
        let mut info = PluginInfo {
            name: name.to_string(),
            path: path.to_path_buf(),
            kind: None,
            contract_version: None,
            manifest: None,
            grants: summarize(&grant),
            status: PluginStatus::Ready,
            cache: None,
            sha256: None,
            faults,
            last_fault,
            output_lines_logged: output.stats.lines_logged.load(Ordering::Relaxed),
            output_lines_dropped: output.stats.lines_dropped.load(Ordering::Relaxed),
            imports: Vec::new(),
            exports: Vec::new(),
        };
        match manifest::load_beside(path) {
            Ok(m) => info.manifest = m,
            Err(e) => info.status = PluginStatus::Error(format!("{e:#}")),
        }
        // Inspecting needs the component even if the plugin is disabled or quarantined.
        let loaded = if grant.enabled == Some(false) || health.quarantined().is_some() {
            let rt = &self.inner.rt;
            trusted_plugin_file(path)
                .and_then(|()| rt.load_file(path).map_err(|e| format!("{e:#}")))
                .map(|(c, cache, sha256)| {
                    info.cache = Some(cache);
                    info.sha256 = Some(sha256);
                    c
                })
                .and_then(|c| {
                    let (k, v) = kind_of(path, &c, &rt.engine).map_err(|e| format!("{e:#}"))?;
                    info.kind = Some(k);
                    info.contract_version = Some(v);
                    Ok(c)
                })
        } else {
            // `inspect` names a file itself (like `check`); a plugin found in the folders is
            // shown as it would load, lock included.
            let lock = if with_world {
                Lock::NotHeld
            } else {
                Lock::Held
            };
            self.load_file_with(name, path, lock)
                .map(|l| {
                    info.kind = Some(l.kind);
                    info.contract_version = Some(l.version.clone());
                    info.cache = Some(l.cache);
                    info.sha256 = Some(l.sha256.clone());
                    l.component.clone()
                })
                .map_err(|e| match e {
                    PluginError::Unusable { message, .. } => message,
                    other => other.to_string(),
                })
        };
        match loaded {
            Ok(component) => {
                if with_world {
                    let ty = component.component_type();
                    let engine = &self.inner.rt.engine;
                    info.imports = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
                    info.exports = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
                }
            }
            Err(e) => info.status = PluginStatus::Error(e),
        }
        if info.status == PluginStatus::Ready {
            if grant.enabled == Some(false) {
                info.status = PluginStatus::Disabled;
            } else if let Some(reason) = health.quarantined() {
                info.status = PluginStatus::Quarantined(reason);
            }
        }
        info
    }
}

/// Instantiates the plugin once in a fresh store, under its deadline, and drops the instance:
/// its imports link and its start-up code runs. Timed apart from the smoke call.
async fn instantiate_once(loaded: &Arc<Loaded>) -> Result<(), PluginError> {
    match &loaded.pre {
        KindPre::Detector(_) => loaded.instantiate::<DetectorPre>().await.map(drop),
        KindPre::SchemaConverter(_) => loaded.instantiate::<SchemaConverterPre>().await.map(drop),
        KindPre::ApprovalGuard(_) => loaded.instantiate::<ApprovalGuardPre>().await.map(drop),
        KindPre::Transport(_) => loaded.instantiate::<TransportPre>().await.map(drop),
    }
}

/// One typical call of the plugin's kind, through the same handle the chat uses; says what it
/// returned.
async fn smoke_call(loaded: &Arc<Loaded>) -> Result<String, PluginError> {
    Ok(match loaded.kind {
        PluginKind::Detector => {
            let mut s = Detector::new(loaded.clone())?.start_session("").await?;
            let mut events = s.feed("Hello from rkmcp plugins check.").await?;
            events.extend(s.finish().await?);
            format!(
                "feed + finish returned {} event(s): {events:?}",
                events.len()
            )
        }
        PluginKind::SchemaConverter => {
            let tools = r#"[{"name":"echo","description":"Echo a message","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]"#;
            let conv = SchemaConverter::new(loaded.clone())?.convert(tools).await?;
            format!(
                "convert(1 tool) returned a {}-byte prompt{}",
                conv.system_prompt.len(),
                if conv.grammar.is_some() {
                    " and a grammar"
                } else {
                    ""
                }
            )
        }
        PluginKind::ApprovalGuard => {
            let call = ProposedCall {
                server: "check".into(),
                tool: "read_file".into(),
                arguments: serde_json::json!({"path": "README.md"}),
                annotations: ToolAnnotations {
                    read_only: Some(true),
                    ..Default::default()
                },
                interactive: false,
            };
            let d: Decision = ApprovalGuard::new(loaded.clone())?.review(&call).await?;
            format!("review(read-only call) = {d:?}")
        }
        PluginKind::Transport => {
            "instantiated (connect is not tried: it would open a real connection)".to_string()
        }
    })
}

/// A plugin is code the user runs: its folder and file must be writable by the user alone.
fn trusted_plugin_file(path: &Path) -> Result<(), String> {
    let folder = path.parent().unwrap_or(Path::new("."));
    crate::trust::check_folder(folder)
        .and_then(|()| crate::trust::check_file(path))
        .map_err(|e| format!("refusing to load {}: {e}", path.display()))
}

fn plugin_name(path: &Path) -> anyhow::Result<String> {
    path.file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{}: cannot derive a plugin name from this file name",
                path.display()
            )
        })
}

fn kind_of(
    path: &Path,
    component: &wasmtime::component::Component,
    engine: &wasmtime::Engine,
) -> anyhow::Result<(PluginKind, String)> {
    let ty = component.component_type();
    let names: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    match classify(names.iter().map(String::as_str)) {
        Exported::Supported { kind, version } => Ok((kind, version)),
        Exported::Unsupported { versions } => anyhow::bail!(
            "{}: built for contract rkmcp:plugin@{}, but this rkmcp supports only rkmcp:plugin@{}; rebuild the plugin against a supported version",
            path.display(),
            versions.join(", @"),
            SUPPORTED_VERSIONS.join(", @")
        ),
        Exported::NotAPlugin { exports } => anyhow::bail!(
            "{}: not an rkmcp plugin: it exports none of rkmcp:plugin/{{detector,schema-converter,approval-guard,transport}}@{} (exports: {})",
            path.display(),
            SUPPORTED_VERSIONS.join("|"),
            if exports.is_empty() {
                "none".to_string()
            } else {
                exports.join(", ")
            }
        ),
        Exported::Several { kinds } => anyhow::bail!(
            "{}: exports several plugin kinds ({}); a component must be exactly one kind",
            path.display(),
            kinds
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn settings_for(
    protected: &[crate::trust::Protected],
    name: &str,
    kind: PluginKind,
    grant: &Grant,
    manifest: Option<&Manifest>,
) -> anyhow::Result<Settings> {
    let granted = Granted::resolve(&ResolveCx {
        plugin: name,
        grant,
        protected,
    })?;
    let mut config: BTreeMap<String, String> = manifest
        .map(|m| {
            m.config
                .iter()
                .map(|(k, v)| (k.clone(), config_value_string(v)))
                .collect()
        })
        .unwrap_or_default();
    for (k, v) in &grant.config {
        config.insert(k.clone(), config_value_string(v));
    }
    Ok(Settings {
        granted,
        memory: grant.memory_bytes(),
        timeout: Duration::from_millis(grant.timeout_ms(kind)),
        fuel: grant.fuel,
        max_output: grant.max_output_bytes(),
        config: Arc::new(config),
    })
}

fn summarize(g: &Grant) -> GrantSummary {
    GrantSummary {
        capabilities: crate::caps::summary(g),
        memory_mb: (g.memory_bytes() >> 20) as u64,
        call_timeout_ms: g.call_timeout_ms,
        fuel: g.fuel,
    }
}
