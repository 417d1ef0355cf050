//! One live MCP server session on rmcp: connect and initialize, keep the server's lists cached and
//! refreshed on `list_changed`, and make requests with per-request timeouts.
//!
//! Logging notifications and `logging/setLevel` are deprecated by SEP-2577, but the servers people
//! run today still use them, so this module uses them on purpose.
#![allow(deprecated)]
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, CompleteRequestParams, CompleteResult,
    CreateMessageRequestParams, CreateMessageResult, CustomNotification, DiscoverRequest,
    DiscoverRequestParams, ElicitRequestParams, ElicitResult, GetPromptRequestParams,
    GetPromptResult, Implementation, InitializeRequestParams, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, NumberOrString, PingRequest, ProgressNotificationParam,
    ProgressToken, Prompt, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult,
    RequestMetaObject, Resource, ResourceTemplate, ResourceUpdatedNotificationParam,
    ServerPeerInfo, TaskStatusNotificationParams, Tool,
};
use rmcp::service::{
    ClientServiceExt, NotificationContext, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData};
use tokio::sync::broadcast;

use super::client_requests::ClientRequests;
use super::lock;
use super::negotiate::{self, AttemptError};
use rkmcp_config::{ServerConfig, TransportKind};

/// How many `input_required` rounds one multi-round request (2026-07-28) may take before rkmcp
/// gives up: enough for a form, a confirmation and a retry, not for a server looping forever.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// The shortest list lifetime honoured: a list said to go stale within milliseconds is not
/// re-fetched in a busy loop.
const MIN_LIST_TTL: Duration = Duration::from_secs(1);

/// The catalog's policy for a list's `ttlMs` (SEP-2549): a positive lifetime is re-listed when it
/// runs out (at least [`MIN_LIST_TTL`] apart); `0` ("immediately stale", what 2026-07-28 servers
/// send by default) and an absent hint leave the list to `list_changed` notifications, as a
/// timer would otherwise poll every such server forever.
fn list_lifetime(ttl_ms: Option<u64>) -> Option<Duration> {
    match ttl_ms {
        Some(ms) if ms > 0 => Some(Duration::from_millis(ms).max(MIN_LIST_TTL)),
        _ => None,
    }
}

/// Why a session could not be used. The message always names the server.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("server `{server}`: {message}")]
    Start { server: String, message: String },
    #[error("server `{server}`: {what} timed out after {}", humantime::format_duration(*timeout))]
    Timeout {
        server: String,
        what: String,
        timeout: Duration,
    },
    #[error("server `{server}`: {what} failed: {message}")]
    Request {
        server: String,
        what: String,
        message: String,
    },
    #[error("server `{server}`: transport `{transport}` is not supported yet{hint}")]
    Unsupported {
        server: String,
        transport: String,
        hint: String,
    },
}

/// Something a server told us outside a response.
#[derive(Debug, Clone)]
pub enum SessionEvent {
    Log {
        server: String,
        level: LoggingLevel,
        logger: Option<String>,
        data: serde_json::Value,
    },
    Progress {
        server: String,
        params: ProgressNotificationParam,
    },
    /// A list was re-fetched after the server said it changed, or after its `ttlMs` ran out.
    ListRefreshed { server: String, list: ListKind },
    /// `notifications/resources/updated` (a subscribed resource changed).
    ResourceUpdated { server: String, uri: String },
    /// `notifications/tasks/status`.
    TaskStatus {
        server: String,
        params: TaskStatusNotificationParams,
    },
    /// A notification rmcp has no type for (e.g. `notifications/elicitation/complete`).
    Notification {
        server: String,
        method: String,
        params: Option<serde_json::Value>,
    },
    /// The server went down, came back after a restart, or was given up on.
    Health {
        server: String,
        transition: super::health::Transition,
    },
    /// A tool call running as a task changed status (see [`super::tasks`]).
    Task {
        server: String,
        tool: String,
        task: super::tasks::TaskInfo,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

/// The server's lists as last fetched. Snapshots are cheap `Arc` clones.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    pub tools: Arc<Vec<Tool>>,
    pub resources: Arc<Vec<Resource>>,
    pub resource_templates: Arc<Vec<ResourceTemplate>>,
    pub prompts: Arc<Vec<Prompt>>,
    /// Bumped on every refresh, so callers can tell a changed list from an unchanged one.
    pub generation: u64,
    /// When a list goes stale, for lists the server gave a `ttlMs` (2026-07-28, SEP-2549).
    pub expires: HashMap<ListKind, Instant>,
}

/// rmcp's client handler for one session: records notifications, refreshes the catalog and
/// hands the server's requests (sampling, elicitation, roots) to the [`ClientRequests`].
#[derive(Clone)]
struct SessionHandler {
    server: String,
    catalog: Arc<RwLock<Catalog>>,
    events: broadcast::Sender<SessionEvent>,
    request_timeout: Duration,
    requests: Arc<dyn ClientRequests>,
    /// The version offered in `initialize` (when that handshake is used).
    initialize_version: ProtocolVersion,
    /// The session's subscribed resources (shared with [`Session`]).
    subscribed: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

impl SessionHandler {
    fn refresh_in_background(&self, kind: ListKind, peer: rmcp::Peer<RoleClient>) {
        let handler = self.clone();
        tokio::spawn(async move {
            let result = tokio::time::timeout(
                handler.request_timeout,
                fetch_into(&peer, &handler.catalog, kind),
            )
            .await;
            match result {
                Ok(Ok(ttl)) => {
                    let _ = handler.events.send(SessionEvent::ListRefreshed {
                        server: handler.server.clone(),
                        list: kind,
                    });
                    handler.expire_later(kind, ttl, peer);
                }
                Ok(Err(err)) => {
                    tracing::warn!(server = %handler.server, "re-listing {kind:?} after list_changed failed: {err}")
                }
                Err(_) => {
                    tracing::warn!(server = %handler.server, "re-listing {kind:?} after list_changed timed out")
                }
            }
        });
    }

    /// Re-lists `kind` when its `ttlMs` runs out, unless a newer fetch moved the expiry on.
    fn expire_later(&self, kind: ListKind, ttl: Option<Duration>, peer: rmcp::Peer<RoleClient>) {
        let Some(ttl) = ttl else { return };
        let handler = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            if peer.is_transport_closed() {
                return;
            }
            let due = handler
                .catalog
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .expires
                .get(&kind)
                .is_some_and(|at| *at <= Instant::now());
            if due {
                handler.refresh_in_background(kind, peer);
            }
        });
    }
}

/// Runs the answer to a server's request until the server cancels it (`notifications/cancelled`
/// cancels the context): the work is then dropped — a question to a person or to the gateway's
/// client is withdrawn — and no answer goes back.
async fn until_cancelled<T>(
    context: &RequestContext<RoleClient>,
    work: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    tokio::select! {
        result = work => result,
        _ = context.ct.cancelled() => Err(ErrorData::internal_error(
            "the server cancelled its request",
            None,
        )),
    }
}

impl ClientHandler for SessionHandler {
    fn get_info(&self) -> InitializeRequestParams {
        // rmcp defaults to 2026-07-28, which has no `initialize` handshake; `initialize` offers
        // the configured version or the newest one that has the handshake (see negotiate.rs).
        InitializeRequestParams::new(
            self.requests.capabilities(),
            Implementation::new("rkmcp", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(self.initialize_version.clone())
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let work = self.requests.create_message(&self.server, params);
        if !self.requests.withdraws_on_cancel() {
            return work.await;
        }
        until_cancelled(&context, work).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let work = self.requests.elicit(&self.server, params);
        if !self.requests.withdraws_on_cancel() {
            return work.await;
        }
        until_cancelled(&context, work).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(self.requests.roots()))
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Only resources subscribed to now. A server may still send an update it had under way
        // when the client unsubscribed (on 2026-07-28, rmcp hands a closed listen stream's late
        // update to this handler, its stream tag already removed).
        let subscribed = lock(&self.subscribed).contains(&params.uri);
        if !subscribed {
            tracing::debug!(server = %self.server, uri = %params.uri, "update of a resource not subscribed to, dropped");
            return;
        }
        let _ = self.events.send(SessionEvent::ResourceUpdated {
            server: self.server.clone(),
            uri: params.uri,
        });
    }

    async fn on_task_status(
        &self,
        params: TaskStatusNotificationParams,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(SessionEvent::TaskStatus {
            server: self.server.clone(),
            params,
        });
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.requests.notification(
            &self.server,
            &notification.method,
            notification.params.as_ref(),
        );
        let _ = self.events.send(SessionEvent::Notification {
            server: self.server.clone(),
            method: notification.method,
            params: notification.params,
        });
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.refresh_in_background(ListKind::Tools, context.peer);
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.refresh_in_background(ListKind::Resources, context.peer.clone());
        self.refresh_in_background(ListKind::ResourceTemplates, context.peer);
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.refresh_in_background(ListKind::Prompts, context.peer);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, level = ?params.level, "server log: {}", params.data);
        let _ = self.events.send(SessionEvent::Log {
            server: self.server.clone(),
            level: params.level,
            logger: params.logger,
            data: params.data,
        });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(SessionEvent::Progress {
            server: self.server.clone(),
            params,
        });
    }
}

/// Fetches one list with full pagination and stores it in the catalog. Returns how long the
/// server said the list stays fresh (`ttlMs`), if it said.
async fn fetch_into(
    peer: &rmcp::Peer<RoleClient>,
    catalog: &RwLock<Catalog>,
    kind: ListKind,
) -> Result<Option<Duration>, rmcp::ServiceError> {
    let ttl = match kind {
        ListKind::Tools => {
            let list = peer.list_all_tools_with_cache_hint().await?;
            let tools = Arc::new(list.items);
            update(catalog, kind, list.ttl_ms, |c| c.tools = tools);
            list.ttl_ms
        }
        ListKind::Resources => {
            let list = peer.list_all_resources_with_cache_hint().await?;
            let resources = Arc::new(list.items);
            update(catalog, kind, list.ttl_ms, |c| c.resources = resources);
            list.ttl_ms
        }
        ListKind::ResourceTemplates => {
            let list = peer.list_all_resource_templates_with_cache_hint().await?;
            let templates = Arc::new(list.items);
            update(catalog, kind, list.ttl_ms, |c| {
                c.resource_templates = templates
            });
            list.ttl_ms
        }
        ListKind::Prompts => {
            let list = peer.list_all_prompts_with_cache_hint().await?;
            let prompts = Arc::new(list.items);
            update(catalog, kind, list.ttl_ms, |c| c.prompts = prompts);
            list.ttl_ms
        }
    };
    Ok(list_lifetime(ttl))
}

fn update(
    catalog: &RwLock<Catalog>,
    kind: ListKind,
    ttl_ms: Option<u64>,
    f: impl FnOnce(&mut Catalog),
) {
    // A poisoned lock only means a panic elsewhere mid-update; the data is still a valid list.
    let mut guard = catalog.write().unwrap_or_else(|e| e.into_inner());
    f(&mut guard);
    guard.generation += 1;
    match list_lifetime(ttl_ms) {
        Some(ttl) => {
            guard.expires.insert(kind, Instant::now() + ttl);
        }
        None => {
            guard.expires.remove(&kind);
        }
    }
}

/// One connection to the server: replaced as a whole when the server is restarted.
struct Live {
    service: RunningService<RoleClient, SessionHandler>,
    log_path: Option<PathBuf>,
    pid: Option<u32>,
    /// How the handshake went (`servers status` reports a fallback from `server/discover`).
    handshake: negotiate::Handshake,
}

/// A connected server: initialized (up to 2025-11-25) or discovered (2026-07-28, stateless).
/// Its connection can be replaced ([`Session::restart`]) while the catalog, the event channel
/// and every `Arc<Session>` held elsewhere stay the same.
pub struct Session {
    pub config: ServerConfig,
    live: RwLock<Arc<Live>>,
    catalog: Arc<RwLock<Catalog>>,
    events: broadcast::Sender<SessionEvent>,
    /// How long connect + initialize + first listing took (the first time).
    pub startup: Duration,
    log_dir: PathBuf,
    /// Answers the server's requests; kept for restarts.
    requests: Arc<dyn ClientRequests>,
    /// Bumped by every restart: a request that fails after it changed failed because of it.
    epoch: AtomicU32,
    /// Health as the monitor last saw it (see [`super::health`]).
    health: Mutex<super::health::HealthState>,
    /// Resources subscribed to, re-subscribed after a restart.
    subscriptions: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Where the session's messages are recorded (`[audit]`); kept for restarts.
    audit: Option<Arc<rkmcp_audit::AuditLog>>,
    /// What this connection knows about tasks ([`super::tasks`]).
    pub(crate) tasks: super::tasks::TaskSupport,
    /// `subscriptions/listen` streams of a 2026-07-28 session ([`super::listen`]).
    pub(crate) listeners: super::listen::Listeners,
}

impl Session {
    /// Connects, negotiates the protocol version, fetches every list the server offers and sets
    /// the configured log level. `plugins` is needed only for `transport = "plugin:<name>"`
    /// servers; `requests` answers what the server asks of the client.
    pub async fn connect(
        config: &ServerConfig,
        log_dir: &Path,
        plugins: Option<&rkmcp_plugin_host::PluginHost>,
        requests: Arc<dyn ClientRequests>,
    ) -> Result<Session, SessionError> {
        Self::connect_audited(config, log_dir, plugins, requests, None).await
    }

    /// [`Session::connect`], recording the session's messages in `audit`.
    pub async fn connect_audited(
        config: &ServerConfig,
        log_dir: &Path,
        plugins: Option<&rkmcp_plugin_host::PluginHost>,
        requests: Arc<dyn ClientRequests>,
        audit: Option<Arc<rkmcp_audit::AuditLog>>,
    ) -> Result<Session, SessionError> {
        if let Some(audit) = &audit {
            audit.server_start(config);
        }
        let started = Instant::now();
        let (events, _) = broadcast::channel(256);
        let catalog = Arc::new(RwLock::new(Catalog::default()));
        let subscriptions = Arc::new(Mutex::default());
        let handler = SessionHandler {
            server: config.name.clone(),
            catalog: catalog.clone(),
            events: events.clone(),
            request_timeout: config.request_timeout,
            requests: requests.clone(),
            initialize_version: negotiate::initialize_version(&config.protocol),
            subscribed: Arc::clone(&subscriptions),
        };
        let live = open(config, log_dir, plugins, handler, audit.clone()).await?;
        let restartable = !matches!(config.transport, TransportKind::Plugin(_));
        let session = Session {
            config: config.clone(),
            live: RwLock::new(Arc::new(live)),
            catalog,
            events,
            startup: Duration::ZERO,
            log_dir: log_dir.to_path_buf(),
            requests,
            epoch: AtomicU32::new(0),
            health: Mutex::new(super::health::HealthState::new(restartable)),
            subscriptions,
            audit,
            tasks: Default::default(),
            listeners: Default::default(),
        };
        session.refresh_all().await?;
        session.apply_log_level().await;
        Ok(Session {
            startup: started.elapsed(),
            ..session
        })
    }

    /// Replaces the connection with a new one (a new process for stdio servers), re-lists, and
    /// closes the old one. Requests still waiting on the old connection fail (see
    /// [`Session::timed`]). Returns how long the new connection took to be usable.
    /// Plugin transports cannot be restarted here (their host is not kept by the session).
    pub async fn restart(&self) -> Result<Duration, SessionError> {
        let started = Instant::now();
        let handler = SessionHandler {
            server: self.config.name.clone(),
            catalog: self.catalog.clone(),
            events: self.events.clone(),
            request_timeout: self.config.request_timeout,
            requests: self.requests.clone(),
            initialize_version: negotiate::initialize_version(&self.config.protocol),
            subscribed: Arc::clone(&self.subscriptions),
        };
        let live = Arc::new(
            open(
                &self.config,
                &self.log_dir,
                None,
                handler,
                self.audit.clone(),
            )
            .await?,
        );
        let old = std::mem::replace(
            &mut *self.live.write().unwrap_or_else(|e| e.into_inner()),
            live,
        );
        self.epoch.fetch_add(1, Ordering::SeqCst);
        // Closing the old connection (its transport, a stdio server's process) fails whatever
        // still waits on it.
        old.service.cancellation_token().cancel();
        drop(old);
        self.refresh_all().await?;
        self.apply_log_level().await;
        for uri in self.subscribed() {
            if let Err(err) = self.send_subscribe(&uri, true).await {
                tracing::warn!("after the restart: {err}");
            }
        }
        Ok(started.elapsed())
    }

    /// `resources/subscribe`: updates arrive as [`SessionEvent::ResourceUpdated`], also after a
    /// restart (the subscription is renewed).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), SessionError> {
        let subscribable = self
            .server_info()
            .and_then(|i| i.capabilities.resources.as_ref().and_then(|r| r.subscribe))
            .unwrap_or(false);
        if !subscribable {
            return Err(SessionError::Request {
                server: self.config.name.clone(),
                what: format!("subscribing to `{uri}`"),
                message: "the server does not offer resource subscriptions".into(),
            });
        }
        // Recorded first: an update may arrive before the server's answer to the subscription.
        let added = lock(&self.subscriptions).insert(uri.to_string());
        let sent = self.send_subscribe(uri, true).await;
        if sent.is_err() && added {
            lock(&self.subscriptions).remove(uri);
        }
        sent
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), SessionError> {
        lock(&self.subscriptions).remove(uri);
        self.send_subscribe(uri, false).await
    }

    /// The resources subscribed to.
    pub fn subscribed(&self) -> Vec<String> {
        lock(&self.subscriptions).iter().cloned().collect()
    }

    #[allow(deprecated)] // legacy-only in rmcp: 2026-07-28 uses subscriptions/listen.
    async fn send_subscribe(&self, uri: &str, on: bool) -> Result<(), SessionError> {
        if self.is_stateless() {
            return super::listen::set(self, uri, on).await;
        }
        let peer = self.peer();
        let what = format!(
            "{} `{uri}`",
            if on {
                "subscribing to"
            } else {
                "unsubscribing from"
            }
        );
        if on {
            self.timed(
                what,
                peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri.to_string())),
            )
            .await
        } else {
            self.timed(
                what,
                peer.unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri.to_string())),
            )
            .await
        }
    }

    /// Whether the connection is gone (the process exited, the stream closed).
    pub fn is_closed(&self) -> bool {
        self.live().service.is_transport_closed()
    }

    /// Restarts so far.
    pub fn restarts(&self) -> u32 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// The health record (`servers status`, the monitor).
    pub fn health(&self) -> super::health::HealthState {
        lock(&self.health).clone()
    }

    /// Updates the health record and returns what `f` returns.
    pub fn update_health<T>(&self, f: impl FnOnce(&mut super::health::HealthState) -> T) -> T {
        f(&mut lock(&self.health))
    }

    /// Sends an event to subscribers.
    pub(crate) fn emit(&self, event: SessionEvent) {
        let _ = self.events.send(event);
    }

    /// A sender for this session's events (tasks that outlive a call).
    pub(crate) fn event_sender(&self) -> broadcast::Sender<SessionEvent> {
        self.events.clone()
    }

    /// What answers this server's requests (also the input requests of tasks).
    pub(crate) fn client_requests(&self) -> Arc<dyn ClientRequests> {
        self.requests.clone()
    }

    /// Tells subscribers (the chat's notices).
    pub fn announce(&self, transition: super::health::Transition) {
        let _ = self.events.send(SessionEvent::Health {
            server: self.config.name.clone(),
            transition,
        });
    }

    fn live(&self) -> Arc<Live> {
        self.live.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The stderr log of a stdio server.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.live().log_path.clone()
    }

    /// The process id of a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.live().pid
    }

    /// How the handshake went: discovered, pinned, or `initialize` after a probe that did not
    /// count (and why).
    pub fn handshake(&self) -> negotiate::Handshake {
        self.live().handshake.clone()
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.server_info().map(|i| i.protocol_version.clone())
    }

    /// True for the 2026-07-28 lifecycle: no `initialize`, no session id, each request carries
    /// the version and client capabilities in `_meta`.
    pub fn is_stateless(&self) -> bool {
        self.protocol_version()
            .is_some_and(|version| !version.has_initialize())
    }

    /// Whether `logging/setLevel` may be sent: the server has logging and its protocol version
    /// has the request (2026-07-28 removed it).
    pub fn speaks_set_level(&self) -> bool {
        self.server_info()
            .is_some_and(|info| info.capabilities.logging.is_some())
            && !self.is_stateless()
    }

    /// The configured `log_level` (the config loader has checked its spelling).
    fn configured_log_level(&self) -> Option<LoggingLevel> {
        let level = self.config.log_level.as_deref()?;
        serde_json::from_value(serde_json::Value::String(level.to_string())).ok()
    }

    /// Sends `logging/setLevel` when the config asks for a level and the server has logging.
    /// A refusal is logged, not fatal: the server works without it. A 2026-07-28 server has no
    /// setLevel: the level goes with each tool call instead (see [`Self::call_tool`]).
    async fn apply_log_level(&self) {
        let Some(level) = self.configured_log_level() else {
            return;
        };
        if self.is_stateless() {
            tracing::debug!(server = %self.name(), "log_level {level:?} is sent with each tool call (`_meta`, 2026-07-28)");
            return;
        }
        if !self.speaks_set_level() {
            tracing::info!(server = %self.name(), "log_level {level:?} not sent: the server has no logging capability");
            return;
        }
        if let Err(err) = self.set_log_level(level).await {
            tracing::warn!("{err}");
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The current connection's peer (a cheap handle; a restart gives a new one).
    pub fn peer(&self) -> rmcp::Peer<RoleClient> {
        self.live().service.peer().clone()
    }

    /// What the server said about itself in `initialize`.
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.live().service.peer_info()
    }

    pub fn catalog(&self) -> Catalog {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The catalog's generation (bumped on every refresh of any list).
    pub fn catalog_generation(&self) -> u64 {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .generation
    }

    /// The annotations of the server's tool `tool`, from the catalog (no copy of the catalog).
    pub fn tool_annotations(&self, tool: &str) -> Option<rmcp::model::ToolAnnotations> {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .tools
            .iter()
            .find(|t| t.name == tool)
            .and_then(|t| t.annotations.clone())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.events.subscribe()
    }

    /// Re-fetches every list the server advertises, concurrently.
    pub async fn refresh_all(&self) -> Result<(), SessionError> {
        let caps = self
            .server_info()
            .map(|i| i.capabilities.clone())
            .unwrap_or_default();
        let mut kinds = Vec::new();
        if caps.tools.is_some() {
            kinds.push(ListKind::Tools);
        }
        if caps.resources.is_some() {
            kinds.push(ListKind::Resources);
            kinds.push(ListKind::ResourceTemplates);
        }
        if caps.prompts.is_some() {
            kinds.push(ListKind::Prompts);
        }
        let fetches = kinds.into_iter().map(|kind| async move {
            let ttl = self
                .timed(format!("listing {kind:?}").to_lowercase(), async {
                    fetch_into(&self.peer(), &self.catalog, kind).await
                })
                .await?;
            self.live()
                .service
                .service()
                .expire_later(kind, ttl, self.peer());
            Ok::<(), SessionError>(())
        });
        futures::future::try_join_all(fetches).await?;
        Ok(())
    }

    /// Tells the server the roots changed (`notifications/roots/list_changed`), where its
    /// version has that notification (2026-07-28 removed it: servers ask for roots per request).
    pub async fn notify_roots_changed(&self) -> Result<(), SessionError> {
        if self.is_stateless() {
            return Ok(());
        }
        self.timed(
            "announcing changed roots".into(),
            self.peer().notify_roots_list_changed(),
        )
        .await
    }

    /// Runs a request with this server's request timeout, naming it in errors. A timed-out
    /// request is dropped, which makes rmcp send `notifications/cancelled` for it.
    pub(crate) async fn timed<T>(
        &self,
        what: String,
        fut: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, SessionError> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        match tokio::time::timeout(self.config.request_timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(err)) => Err(SessionError::Request {
                server: self.config.name.clone(),
                what,
                message: if self.epoch.load(Ordering::SeqCst) != epoch {
                    "the server restarted while the request was in flight; try again".into()
                } else if let rmcp::ServiceError::TransportSend(inner) = &err
                    && let Some(refusal) =
                        super::http::auth_refusal(&self.config, inner.error.as_ref())
                {
                    // The server is fine; it wants a sign-in (or more scope) nobody gave.
                    refusal
                } else if matches!(
                    err,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) {
                    "the server's connection closed (it exited or crashed); rkmcp restarts \
                     servers that go down — try again shortly"
                        .into()
                } else {
                    describe_service_error(&err)
                },
            }),
            Err(_) => Err(SessionError::Timeout {
                server: self.config.name.clone(),
                what,
                timeout: self.config.request_timeout,
            }),
        }
    }

    /// `tools/call` with the server's own tool name.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<CallToolResult, SessionError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        // A token per call lets the server report progress (subscribers see SessionEvent::Progress).
        static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        let mut meta = RequestMetaObject::with_progress_token(ProgressToken(
            NumberOrString::String(format!("rkmcp-{token}").into()),
        ));
        // 2026-07-28 (SEP-2575): a server logs during a request only at the level the request
        // asks for in `_meta`; without it, it sends no log at all.
        if self.is_stateless()
            && let Some(level) = self.configured_log_level()
        {
            meta.set_log_level(level);
        }
        params.meta = Some(meta);
        // Servers with tasks run the call as a task (polled, cancelled on drop; see tasks.rs).
        if let Some(api) = super::tasks::api_for(self, tool).await
            && let Some(result) = super::tasks::call_as_task(self, api, params.clone()).await?
        {
            return Ok(result);
        }
        // rmcp's RunningService drives 2026-07-28 multi-round calls: each `input_required`
        // round's requests go to the handler (elicitation, sampling, roots) and the call is
        // retried with `inputResponses` and the `requestState`.
        let live = self.live();
        self.timed(
            format!("calling tool `{tool}`"),
            live.service
                .call_tool_with_mrtr_max_rounds(params, MAX_INPUT_ROUNDS),
        )
        .await
    }

    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, SessionError> {
        let live = self.live();
        self.timed(
            format!("reading resource `{uri}`"),
            live.service.read_resource_with_mrtr_max_rounds(
                ReadResourceRequestParams::new(uri.to_string()),
                MAX_INPUT_ROUNDS,
            ),
        )
        .await
    }

    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<GetPromptResult, SessionError> {
        let mut params = GetPromptRequestParams::new(name.to_string());
        params.arguments = arguments;
        let live = self.live();
        self.timed(
            format!("getting prompt `{name}`"),
            live.service
                .get_prompt_with_mrtr_max_rounds(params, MAX_INPUT_ROUNDS),
        )
        .await
    }

    /// `completion/complete` for a prompt argument (`reference` = prompt name) or a resource
    /// template argument (`reference` = template URI).
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, SessionError> {
        self.timed("completion".into(), self.peer().complete(params))
            .await
    }

    #[allow(deprecated)] // logging/setLevel is deprecated by SEP-2577 but current servers use it.
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), SessionError> {
        self.timed(
            "setting the log level".into(),
            self.peer()
                .set_level(rmcp::model::SetLevelRequestParams::new(level)),
        )
        .await
    }

    /// Round trip of a `ping`; on a stateless (2026-07-28) session, which has no ping, of a
    /// `server/discover` (sent directly, past rmcp's response cache, so it reaches the server).
    pub async fn ping(&self) -> Result<Duration, SessionError> {
        let started = Instant::now();
        let (what, request) = if self.is_stateless() {
            (
                "server/discover (the 2026-07-28 liveness check)",
                ClientRequest::DiscoverRequest(DiscoverRequest::new(
                    DiscoverRequestParams::default(),
                )),
            )
        } else {
            ("ping", ClientRequest::PingRequest(PingRequest::default()))
        };
        self.timed(what.into(), async {
            self.peer().send_request(request).await.map(|_| ())
        })
        .await?;
        Ok(started.elapsed())
    }

    /// Closes the session; for stdio servers this runs the spec's shutdown sequence.
    pub async fn shutdown(self) {
        let name = self.config.name.clone();
        let live = self.live.into_inner().unwrap_or_else(|e| e.into_inner());
        match Arc::try_unwrap(live) {
            Ok(mut live) => {
                if let Err(err) = live
                    .service
                    .close_with_timeout(Duration::from_secs(10))
                    .await
                {
                    tracing::warn!(server = %name, "shutdown did not complete cleanly: {err}");
                }
            }
            // A request still holds the connection: cancelling closes the transport all the same.
            Err(live) => live.service.cancellation_token().cancel(),
        }
    }
}

/// Connects and negotiates one connection (see [`negotiate::start`]: with `protocol = "auto"`
/// possibly two, the second with `initialize`).
async fn open(
    config: &ServerConfig,
    log_dir: &Path,
    plugins: Option<&rkmcp_plugin_host::PluginHost>,
    handler: SessionHandler,
    audit: Option<Arc<rkmcp_audit::AuditLog>>,
) -> Result<Live, SessionError> {
    let name = config.name.clone();
    let start_err = |message: String| SessionError::Start {
        server: name.clone(),
        message,
    };
    // The attempts borrow these (each may run twice: probe, then `initialize`).
    let (server, handler, audit) = (name.as_str(), &handler, &audit);
    let connecting = async {
        match &config.transport {
            TransportKind::Stdio => {
                let attempt = |mode, probe| async move {
                    let spawned = super::child::spawn(config, log_dir).map_err(|e| {
                        AttemptError::Open(format!(
                            "cannot start `{}`: {e}{}",
                            config.command.as_deref().unwrap_or_default(),
                            if e.kind() == std::io::ErrorKind::NotFound {
                                " (is it installed and on PATH?)"
                            } else {
                                ""
                            }
                        ))
                    })?;
                    let log_path = spawned.log_path.clone();
                    let pid = spawned.child.id();
                    let transport = super::stdio_transport::StdioTransport::new(
                        server,
                        spawned,
                        config.max_message_bytes(),
                    );
                    let service = serve_on(
                        handler.clone(),
                        transport,
                        server,
                        audit.clone(),
                        mode,
                        probe,
                    )
                    .await
                    .map_err(|e| AttemptError::Handshake(Box::new(e)))?;
                    Ok::<_, AttemptError>((service, Some(log_path), pid))
                };
                let log_hint = format!(
                    " (its stderr is in {})",
                    log_dir.join(format!("{server}.log")).display()
                );
                negotiate::start(config, true, attempt, |_| true)
                    .await
                    .map_err(|e| match &e.error {
                        AttemptError::Open(_) => start_err(e.to_string()),
                        AttemptError::Handshake(_) => start_err(format!("{e}{log_hint}")),
                    })
            }
            // Remote servers (and their sign-in) live in `http`, `sse` and `auth`.
            TransportKind::Http | TransportKind::Sse | TransportKind::Auto => {
                super::http::connect(config, |transport, mode, probe| {
                    serve_on(
                        handler.clone(),
                        transport,
                        server,
                        audit.clone(),
                        mode,
                        probe,
                    )
                })
                .await
                .map(|(service, handshake)| ((service, None, None), handshake))
                .map_err(|e| match e {
                    // The session's own wording, without "initialize failed: ".
                    super::http::ConnectError::Initialize(e) => start_err(e.to_string()),
                    other => start_err(other.to_string()),
                })
            }
            TransportKind::Plugin(plugin) => {
                let host =
                    plugins.ok_or_else(|| start_err("the plugin host is not available".into()))?;
                let gave_up = Arc::new(AtomicBool::new(false));
                let attempt = |mode, probe| {
                    let gave_up = gave_up.clone();
                    async move {
                        let transport = host.transport(plugin).map_err(|e| {
                            AttemptError::Open(format!("transport plugin `{plugin}`: {e}"))
                        })?;
                        let conn = transport
                            .connect()
                            .await
                            .map_err(|e| AttemptError::Open(e.to_string()))?;
                        let service = serve_on(
                            handler.clone(),
                            super::plugin_transport::PluginTransport::new(conn, server, gave_up),
                            server,
                            audit.clone(),
                            mode,
                            probe,
                        )
                        .await
                        .map_err(|e| AttemptError::Handshake(Box::new(e)))?;
                        Ok::<_, AttemptError>((service, None, None))
                    }
                };
                // A plugin that flooded the probe's connection with garbage is closed, not
                // given a second connection.
                let fresh_start_helps = |_: &_| !gave_up.load(Ordering::Acquire);
                negotiate::start(config, true, attempt, fresh_start_helps)
                    .await
                    .map_err(|e| start_err(e.to_string()))
            }
        }
    };
    let ((service, log_path, pid), handshake) =
        tokio::time::timeout(config.connect_timeout, connecting)
            .await
            .map_err(|_| SessionError::Timeout {
                server: name.clone(),
                what: "connecting and initializing".into(),
                timeout: config.connect_timeout,
            })??;
    let service = check_negotiated(service, config)
        .await
        .map_err(&start_err)?;
    Ok(Live {
        service,
        log_path,
        pid,
        handshake,
    })
}

/// Starts rmcp on one fresh connection, behind the audit tap and the probe layer.
async fn serve_on<T>(
    handler: SessionHandler,
    transport: T,
    server: &str,
    audit: Option<Arc<rkmcp_audit::AuditLog>>,
    mode: rmcp::service::ClientLifecycleMode,
    probe: Option<super::probe::Probe>,
) -> Result<RunningService<RoleClient, SessionHandler>, rmcp::service::ClientInitializeError>
where
    T: rmcp::transport::Transport<RoleClient> + 'static,
{
    handler
        .serve_with_lifecycle(
            super::probe::wrap(super::tap::wrap(transport, server, audit), probe),
            mode,
        )
        .await
}

/// Refuses (and closes) a session whose server settled on a version rkmcp does not speak.
async fn check_negotiated(
    service: RunningService<RoleClient, SessionHandler>,
    config: &ServerConfig,
) -> Result<RunningService<RoleClient, SessionHandler>, String> {
    let negotiated = service.peer_info().map(|i| i.protocol_version.clone());
    if let Some(version) = negotiated
        && let Err(err) = negotiate::check_negotiated(&config.protocol, &version)
    {
        // Close the connection (and a stdio server) before reporting.
        let _ = service.cancel().await;
        return Err(err.to_string());
    }
    Ok(service)
}

/// rmcp's error text for an MCP error is its Debug form; show code and message instead.
fn describe_service_error(err: &rmcp::ServiceError) -> String {
    super::errors::describe_service_error(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_lifetimes() {
        assert_eq!(list_lifetime(None), None);
        assert_eq!(list_lifetime(Some(0)), None, "ttlMs 0 must not poll");
        assert_eq!(list_lifetime(Some(5)), Some(MIN_LIST_TTL));
        assert_eq!(list_lifetime(Some(90_000)), Some(Duration::from_secs(90)));
    }
}
