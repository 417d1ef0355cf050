//! All configured servers at once: started concurrently, each failure kept apart, tools exposed
//! under namespaced names.
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, Tool};

use super::client_requests::{ClientRequests, NonInteractive};
use super::naming::{self, Collision, ServerTools, ToolFilter};
use super::roots::Roots;
use super::session::{Session, SessionError};
use rkmcp_config::{Config, ServerConfig};

/// A server that could not be started, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StartFailure {
    pub server: String,
    pub error: String,
}

/// A tool as the model sees it (serialized as `ask` remembers it: chat/remembered.rs).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ExposedTool {
    /// The namespaced name (`time__get_current_time`).
    pub name: String,
    pub server: String,
    pub tool: Tool,
}

/// The live sessions, in config order.
pub struct SessionManager {
    sessions: Vec<Arc<Session>>,
    failures: Vec<StartFailure>,
    filters: BTreeMap<String, ToolFilter>,
    /// Kept alive for the connections of transport plugins.
    _plugins: Option<rkmcp_plugin_host::PluginHost>,
    /// The health monitors (one per session), stopped at shutdown.
    monitors: Vec<tokio::task::JoinHandle<()>>,
    stop_monitors: tokio_util::sync::CancellationToken,
    /// Answers the servers' sampling, elicitation and roots requests.
    requests: Arc<dyn ClientRequests>,
    /// Time from the start of [`SessionManager::start`] until every server was up (or failed).
    pub startup: Duration,
    /// The audit log, when `[audit]` or `--audit` turned it on.
    audit: Option<Arc<rkmcp_audit::AuditLog>>,
    /// Exposed names → tools, for [`SessionManager::resolve_tool`].
    index: RwLock<Option<Arc<ToolIndex>>>,
}

/// Every exposed tool name and where it goes, as of the catalog generations it was built from
/// (one per session): resolving a name is a lookup, not a renaming of every tool of every
/// server, until a list changes.
struct ToolIndex {
    generations: Vec<u64>,
    /// Exposed name → (index in `sessions`, the server's own tool name).
    names: HashMap<String, (usize, String)>,
}

impl SessionManager {
    /// Starts every enabled server (or only `only`) concurrently, answering server requests
    /// with [`NonInteractive`] (sampling refused, elicitation declined, roots from the config).
    /// A server that fails is recorded in [`SessionManager::failures`]; the others keep going.
    pub async fn start(config: &Config, only: Option<&str>) -> SessionManager {
        let roots = config_roots(config);
        Self::start_with(config, only, Arc::new(NonInteractive::new(roots, false))).await
    }

    /// [`SessionManager::start`] with the caller's answers to server requests (the chat's
    /// terminal prompts, the conformance client, …).
    pub async fn start_with(
        config: &Config,
        only: Option<&str>,
        requests: Arc<dyn ClientRequests>,
    ) -> SessionManager {
        let started = Instant::now();
        let servers: Vec<&ServerConfig> = config
            .enabled_servers()
            .filter(|s| only.is_none_or(|o| o == s.name))
            .collect();
        let log_dir: PathBuf = config.log_dir.clone();
        let mut failures = Vec::new();
        // The plugin host is built only when a server needs a transport plugin.
        let needs_plugins = servers
            .iter()
            .any(|s| matches!(s.transport, rkmcp_config::TransportKind::Plugin(_)));
        let plugins = if needs_plugins {
            match config
                .section::<rkmcp_plugin_host::PluginsConfig>("plugins")
                .map_err(anyhow::Error::from)
                .and_then(rkmcp_plugin_host::PluginHost::new)
            {
                Ok(host) => Some(host),
                Err(err) => {
                    tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, "the plugin host is unavailable, so servers with a transport plugin do not start: {err:#}");
                    None
                }
            }
        } else {
            None
        };
        let audit = match rkmcp_audit::AuditLog::from_config(config) {
            Ok(audit) => audit.map(Arc::new),
            Err(err) => {
                tracing::error!(target: rkmcp_term_safe::NOTICE_TARGET, "{}", crate::errors::describe(&err));
                None
            }
        };
        let results = futures::future::join_all(servers.iter().map(|server| {
            Session::connect_audited(
                server,
                &log_dir,
                plugins.as_ref(),
                requests.clone(),
                audit.clone(),
            )
        }))
        .await;
        let mut sessions = Vec::new();
        let mut filters = BTreeMap::new();
        for (server, result) in servers.iter().zip(results) {
            match result {
                Ok(session) => {
                    tracing::info!(server = %server.name, "started in {:?}", session.startup);
                    // Globs were validated when the config was loaded.
                    if let Ok(filter) = ToolFilter::new(&server.allow, &server.deny) {
                        filters.insert(server.name.clone(), filter);
                    }
                    sessions.push(Arc::new(session));
                }
                Err(err) => {
                    // Reported to the user by the caller; here only for log files.
                    tracing::info!("{err}");
                    failures.push(StartFailure {
                        server: server.name.clone(),
                        error: err.to_string(),
                    });
                }
            }
        }
        let stop_monitors = tokio_util::sync::CancellationToken::new();
        let monitors = sessions
            .iter()
            .map(|s| super::monitor::spawn(s, stop_monitors.child_token()))
            .collect();
        SessionManager {
            sessions,
            failures,
            filters,
            _plugins: plugins,
            monitors,
            stop_monitors,
            requests,
            startup: started.elapsed(),
            audit,
            index: RwLock::default(),
        }
    }

    /// A manager of no servers, for a chat whose servers are still starting (its sessions are
    /// replaced once they are up): no audit log of its own, nothing to shut down.
    pub fn none(requests: Arc<dyn ClientRequests>) -> SessionManager {
        SessionManager {
            sessions: Vec::new(),
            failures: Vec::new(),
            filters: BTreeMap::new(),
            _plugins: None,
            monitors: Vec::new(),
            stop_monitors: tokio_util::sync::CancellationToken::new(),
            requests,
            startup: Duration::ZERO,
            audit: None,
            index: RwLock::default(),
        }
    }

    /// What answers the servers' requests.
    pub fn requests(&self) -> &Arc<dyn ClientRequests> {
        &self.requests
    }

    /// Sends `notifications/roots/list_changed` to every live server whose version has it; the
    /// errors of the servers that could not be told are returned (the others were told).
    pub async fn notify_roots_changed(&self) -> Vec<SessionError> {
        futures::future::join_all(self.sessions.iter().map(|s| s.notify_roots_changed()))
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }

    pub fn sessions(&self) -> &[Arc<Session>] {
        &self.sessions
    }

    pub fn session(&self, name: &str) -> Option<&Arc<Session>> {
        self.sessions.iter().find(|s| s.name() == name)
    }

    pub fn failures(&self) -> &[StartFailure] {
        &self.failures
    }

    /// The audit log, if one is configured.
    pub fn audit(&self) -> Option<&Arc<rkmcp_audit::AuditLog>> {
        self.audit.as_ref()
    }

    /// Every permitted tool of every live server under its exposed name, plus the renames
    /// collisions forced. Computed from the current catalogs, so it follows `list_changed`.
    pub fn tools(&self) -> (Vec<ExposedTool>, Vec<Collision>) {
        let catalogs: Vec<_> = self
            .sessions
            .iter()
            .map(|s| {
                let filter = self.filters.get(s.name());
                let tools: Vec<Tool> = s
                    .catalog()
                    .tools
                    .iter()
                    .filter(|t| filter.is_none_or(|f| f.permits(&t.name)))
                    .cloned()
                    .collect();
                (s, tools)
            })
            .collect();
        let inputs: Vec<ServerTools<'_>> = catalogs
            .iter()
            .map(|(s, tools)| ServerTools {
                server: s.name(),
                prefix: &s.config.prefix,
                tools: tools.iter().map(|t| t.name.as_ref()).collect(),
            })
            .collect();
        let (names, collisions) = naming::assign(&inputs);
        let all_tools = catalogs.iter().flat_map(|(_, tools)| tools.iter());
        let exposed = names
            .into_iter()
            .zip(all_tools)
            .map(|(n, tool)| ExposedTool {
                name: n.exposed,
                server: n.server,
                tool: tool.clone(),
            })
            .collect();
        (exposed, collisions)
    }

    /// The index of exposed names, rebuilt when a catalog changed since it was built.
    fn index(&self) -> Arc<ToolIndex> {
        let current = |index: &ToolIndex| {
            index
                .generations
                .iter()
                .copied()
                .eq(self.sessions.iter().map(|s| s.catalog_generation()))
        };
        if let Some(index) = self
            .index
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            && current(index)
        {
            return index.clone();
        }
        // Generations read before the catalogs: a list that changes meanwhile makes the next
        // lookup rebuild, never keeps a stale index.
        let generations = self
            .sessions
            .iter()
            .map(|s| s.catalog_generation())
            .collect();
        let (tools, _) = self.tools();
        let mut names = HashMap::with_capacity(tools.len());
        for t in tools {
            if let Some(i) = self.sessions.iter().position(|s| s.name() == t.server) {
                // The first of equal names wins, as a scan of the list would find it.
                names
                    .entry(t.name)
                    .or_insert_with(|| (i, t.tool.name.to_string()));
            }
        }
        let index = Arc::new(ToolIndex { generations, names });
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = Some(index.clone());
        index
    }

    /// Finds a tool by exposed name, or by `server/tool` with the server's own tool name.
    pub fn resolve_tool(&self, name: &str) -> Result<(Arc<Session>, String), ResolveError> {
        if let Some((server, tool)) = name.split_once('/')
            && let Some(session) = self.session(server)
        {
            return if self.filters.get(server).is_none_or(|f| f.permits(tool)) {
                Ok((session.clone(), tool.to_string()))
            } else {
                Err(ResolveError::Denied(name.to_string()))
            };
        }
        if let Some((i, tool)) = self.index().names.get(name)
            && let Some(session) = self.sessions.get(*i)
        {
            return Ok((session.clone(), tool.clone()));
        }
        // Not an exposed name: a unique bare name, or an error with a suggestion.
        let (tools, _) = self.tools();
        if let Some(t) = tools.iter().find(|t| t.name == name)
            && let Some(session) = self.session(&t.server)
        {
            return Ok((session.clone(), t.tool.name.to_string()));
        }
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        // A bare tool name that is unique across servers is accepted as a convenience.
        let bare: Vec<&ExposedTool> = tools.iter().filter(|t| t.tool.name == name).collect();
        if bare.len() == 1
            && let Some(session) = self.session(&bare[0].server)
        {
            return Ok((session.clone(), name.to_string()));
        }
        Err(ResolveError::Unknown {
            name: name.to_string(),
            suggestion: rkmcp_config::nearest(name, &names).map(str::to_string),
            failed_servers: self.failures.iter().map(|f| f.server.clone()).collect(),
        })
    }

    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> anyhow::Result<CallToolResult> {
        let (session, tool) = self.resolve_tool(name)?;
        Ok(session.call_tool(&tool, arguments).await?)
    }

    /// Closes every session concurrently.
    pub async fn shutdown(self) {
        self.stop_monitors.cancel();
        // A monitor in the middle of a restart holds its session: wait for them to let go.
        futures::future::join_all(self.monitors).await;
        let sessions = self
            .sessions
            .into_iter()
            .filter_map(|s| match Arc::try_unwrap(s) {
                Ok(session) => Some(session),
                Err(shared) => {
                    // Still referenced elsewhere: it shuts down when the last reference drops.
                    tracing::debug!(server = %shared.name(), "session still in use at shutdown");
                    None
                }
            });
        futures::future::join_all(sessions.map(Session::shutdown)).await;
    }
}

/// The configured roots; a root that cannot be used is reported and left out (servers still
/// start, with the roots that work).
pub fn config_roots(config: &Config) -> Roots {
    let base = std::env::current_dir().unwrap_or_default();
    match Roots::resolve(&config.roots, &base) {
        Ok(roots) => roots,
        Err(err) => {
            tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, "[roots]: {err}");
            Roots::new(
                config
                    .roots
                    .iter()
                    .filter_map(|p| std::fs::canonicalize(p).ok())
                    .filter(|p| p.is_dir()),
            )
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no tool named `{name}`{}{}", suggestion.as_ref().map(|s| format!(" — did you mean `{s}`?")).unwrap_or_default(), if failed_servers.is_empty() { String::new() } else { format!(" (servers that failed to start: {})", failed_servers.join(", ")) })]
    Unknown {
        name: String,
        suggestion: Option<String>,
        failed_servers: Vec<String>,
    },
    #[error("tool `{0}` is excluded by the server's allow/deny lists")]
    Denied(String),
}
