//! Async handles for each plugin kind: what the rest of rkmcp calls.
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::Mutex;
use wasmtime::Store;
use wasmtime::component::ResourceAny;

pub use rkmcp_tool_formats::{DetectorEvent, ToolCall};

use crate::error::PluginError;
use crate::plugin::{KindPre, Loaded, guarded};
use crate::state::PluginState;
use crate::wit::latest::{self, types};
use crate::wit::{
    ApprovalGuardBindings, DetectorBindings, SchemaConverterBindings, TransportBindings,
    per_version,
};

fn wrong_kind(plugin: &Loaded, wanted: &str) -> PluginError {
    PluginError::unusable(
        &plugin.name,
        format!("is a {} plugin, not a {wanted}", plugin.kind),
    )
}

// ---------------------------------------------------------------------------------------------
// Detector

/// A detector plugin. Each session (one model response) gets its own fresh instance, so a
/// fault ends only that session and the next one starts clean.
#[derive(Clone)]
pub struct Detector {
    pub(crate) plugin: Arc<Loaded>,
}

pub struct DetectorSession {
    plugin: Arc<Loaded>,
    store: Store<PluginState>,
    bindings: DetectorBindings,
    session: ResourceAny,
    ended: Option<String>,
}

impl Detector {
    pub(crate) fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        match plugin.pre {
            KindPre::Detector(_) => Ok(Detector { plugin }),
            _ => Err(wrong_kind(&plugin, "detector")),
        }
    }

    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    /// Builds and drops one instance (what every session start pays); for benches and checks.
    #[doc(hidden)]
    pub async fn instantiate_only(&self) -> Result<(), PluginError> {
        let plugin = &self.plugin;
        let KindPre::Detector(pre) = &plugin.pre else {
            return Err(wrong_kind(plugin, "detector"));
        };
        let mut store = plugin.new_store()?;
        per_version!(pre, p => guarded!(
            plugin,
            &mut store,
            "instantiate",
            plugin.settings.timeout,
            p.instantiate_async(&mut store)
        )
        .map(drop))?;
        Ok(())
    }

    /// Starts a session; `format` selects a dialect if the plugin has several ("" = default).
    pub async fn start_session(&self, format: &str) -> Result<DetectorSession, PluginError> {
        let plugin = &self.plugin;
        plugin.check_health()?;
        let KindPre::Detector(pre) = &plugin.pre else {
            return Err(wrong_kind(plugin, "detector"));
        };
        let mut store = plugin.new_store()?;
        let timeout = plugin.settings.timeout;
        let bindings = per_version!(map pre, p => guarded!(
            plugin,
            &mut store,
            "instantiate",
            timeout,
            p.instantiate_async(&mut store)
        ))?;
        let started = per_version!(&bindings, b => guarded!(
            plugin,
            &mut store,
            "start-session",
            timeout,
            b.rkmcp_plugin_detector()
                .call_start_session(&mut store, format)
        ))?;
        let session = started.map_err(|message| PluginError::Refused {
            plugin: plugin.name.to_string(),
            call: "start-session".into(),
            message: crate::boundary::reason(message),
        })?;
        Ok(DetectorSession {
            plugin: self.plugin.clone(),
            store,
            bindings,
            session,
            ended: None,
        })
    }
}

/// Bytes a result costs the host: its strings plus a fixed overhead per event, so a flood of
/// empty events is not free.
fn event_bytes(events: &[types::Event]) -> usize {
    const PER_EVENT: usize = 32;
    events
        .iter()
        .map(|e| {
            PER_EVENT
                + match e {
                    types::Event::Text(t) | types::Event::Reasoning(t) => t.len(),
                    types::Event::ToolCall(c) => c.id.len() + c.name.len() + c.arguments_json.len(),
                    types::Event::Malformed(m) => m.raw.len() + m.error.len(),
                }
        })
        .sum()
}

/// An older contract's events in the newest contract's terms (identity for the newest).
fn events_up<E: Into<types::Event>>(events: Vec<E>) -> Vec<types::Event> {
    events.into_iter().map(Into::into).collect()
}

/// Converts the plugin's events to rkmcp's native ones (see [`crate::boundary`]).
fn convert_events(events: Vec<types::Event>) -> Vec<DetectorEvent> {
    events
        .into_iter()
        .map(|e| match e {
            types::Event::Text(t) => crate::boundary::text(t),
            types::Event::Reasoning(t) => crate::boundary::reasoning(t),
            types::Event::ToolCall(c) => crate::boundary::tool_call(c.id, c.name, c.arguments_json),
            types::Event::Malformed(m) => crate::boundary::malformed(m.raw, m.error),
        })
        .collect()
}

impl DetectorSession {
    /// Feeds one chunk of model output. After a fault the session is over: every later call
    /// returns an error; start a new session (it gets a fresh instance).
    pub async fn feed(&mut self, chunk: &str) -> Result<Vec<DetectorEvent>, PluginError> {
        self.call(Some(chunk)).await
    }

    /// Flushes what the detector held back. The session is over afterwards.
    pub async fn finish(&mut self) -> Result<Vec<DetectorEvent>, PluginError> {
        let out = self.call(None).await;
        if self.ended.is_none() {
            self.ended = Some("finish was called".into());
        }
        out
    }

    /// Like [`feed`](Self::feed) but returns the contract's own events, without converting
    /// them (used by the bench to measure the bare call).
    pub async fn feed_raw(&mut self, chunk: &str) -> Result<usize, PluginError> {
        self.ensure_live()?;
        let plugin = self.plugin.clone();
        let timeout = plugin.settings.timeout;
        let r = per_version!(&self.bindings, b => guarded!(
            plugin,
            &mut self.store,
            "feed",
            timeout,
            b.rkmcp_plugin_detector().session().call_feed(
                &mut self.store,
                self.session,
                chunk
            )
        )
        .map(|events| events.len()));
        match r {
            Ok(events) => Ok(events),
            Err(e) => {
                self.ended = Some(e.to_string());
                Err(e)
            }
        }
    }

    fn ensure_live(&self) -> Result<(), PluginError> {
        match &self.ended {
            Some(why) => Err(PluginError::unusable(
                &self.plugin.name,
                format!("the detector session is over ({why})"),
            )),
            None => Ok(()),
        }
    }

    async fn call(&mut self, chunk: Option<&str>) -> Result<Vec<DetectorEvent>, PluginError> {
        self.ensure_live()?;
        let plugin = self.plugin.clone();
        let timeout = plugin.settings.timeout;
        let name = if chunk.is_some() { "feed" } else { "finish" };
        let session = self.session;
        let store = &mut self.store;
        let r = per_version!(&self.bindings, b => {
            let guest = b.rkmcp_plugin_detector().session();
            match chunk {
                Some(chunk) => guarded!(
                    plugin,
                    &mut *store,
                    "feed",
                    timeout,
                    guest.call_feed(&mut *store, session, chunk)
                )
                .map(events_up),
                None => guarded!(
                    plugin,
                    &mut *store,
                    "finish",
                    timeout,
                    guest.call_finish(&mut *store, session)
                )
                .map(events_up),
            }
        });
        let r = r.and_then(|events| {
            plugin.check_events(name, events.len())?;
            plugin.check_output(name, event_bytes(&events))?;
            Ok(events)
        });
        match r {
            Ok(events) => Ok(convert_events(events)),
            Err(e) => {
                self.ended = Some(e.to_string());
                Err(e)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Instances reused across calls (converter, guard)

struct Slot<B> {
    store: Store<PluginState>,
    bindings: B,
}

// ---------------------------------------------------------------------------------------------
// Schema converter

/// What a schema converter produced for a tools list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conversion {
    pub system_prompt: String,
    pub grammar: Option<String>,
    pub json_schema: Option<String>,
}

/// A schema-converter plugin. One instance serves calls one at a time; after a fault it is
/// discarded and the next call builds a fresh one.
pub struct SchemaConverter {
    plugin: Arc<Loaded>,
    slot: Mutex<Option<Slot<SchemaConverterBindings>>>,
}

impl SchemaConverter {
    pub(crate) fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        match plugin.pre {
            KindPre::SchemaConverter(_) => Ok(SchemaConverter {
                plugin,
                slot: Mutex::new(None),
            }),
            _ => Err(wrong_kind(&plugin, "schema-converter")),
        }
    }

    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    async fn slot<'a>(
        &self,
        guard: &'a mut Option<Slot<SchemaConverterBindings>>,
    ) -> Result<&'a mut Slot<SchemaConverterBindings>, PluginError> {
        let plugin = &self.plugin;
        plugin.check_health()?;
        if guard.is_none() {
            let KindPre::SchemaConverter(pre) = &plugin.pre else {
                return Err(wrong_kind(plugin, "schema-converter"));
            };
            let mut store = plugin.new_store()?;
            let bindings = per_version!(map pre, p => guarded!(
                plugin,
                &mut store,
                "instantiate",
                plugin.settings.timeout,
                p.instantiate_async(&mut store)
            ))?;
            *guard = Some(Slot { store, bindings });
        }
        guard
            .as_mut()
            .ok_or_else(|| PluginError::unusable(&plugin.name, "no instance"))
    }

    /// `tools_json`: the JSON text of an MCP `tools/list` result's `tools` array.
    pub async fn convert(&self, tools_json: &str) -> Result<Conversion, PluginError> {
        let plugin = self.plugin.clone();
        let mut guard = self.slot.lock().await;
        let slot = self.slot(&mut guard).await?;
        let r = per_version!(&slot.bindings, b => guarded!(
            plugin,
            &mut slot.store,
            "convert",
            plugin.settings.timeout,
            b.rkmcp_plugin_schema_converter()
                .call_convert(&mut slot.store, tools_json)
        )
        .map(|r| r.map(latest::Conversion::from)))
        .and_then(|r| {
            if let Ok(c) = &r {
                let size = c.system_prompt.len()
                    + c.grammar.as_ref().map_or(0, String::len)
                    + c.json_schema.as_ref().map_or(0, String::len);
                plugin.check_output("convert", size)?;
            }
            Ok(r)
        });
        match r {
            Ok(Ok(c)) => Ok(Conversion {
                system_prompt: c.system_prompt,
                grammar: c.grammar,
                json_schema: c.json_schema,
            }),
            Ok(Err(message)) => Err(PluginError::Refused {
                plugin: plugin.name.to_string(),
                call: "convert".into(),
                message: crate::boundary::reason(message),
            }),
            Err(e) => {
                *guard = None;
                Err(e)
            }
        }
    }

    /// Formats a tool result (JSON text of an MCP `CallToolResult`) for the model.
    pub async fn format_result(
        &self,
        call: &ToolCall,
        result_json: &str,
    ) -> Result<String, PluginError> {
        let plugin = self.plugin.clone();
        let wit_call = types::ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments_json: call.arguments.to_string(),
        };
        let mut guard = self.slot.lock().await;
        let slot = self.slot(&mut guard).await?;
        let r = per_version!(&slot.bindings, b => guarded!(
            plugin,
            &mut slot.store,
            "format-result",
            plugin.settings.timeout,
            b.rkmcp_plugin_schema_converter()
                .call_format_result(&mut slot.store, &wit_call, result_json)
        ))
        .and_then(|r| {
            if let Ok(s) = &r {
                plugin.check_output("format-result", s.len())?;
            }
            Ok(r)
        });
        match r {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(message)) => Err(PluginError::Refused {
                plugin: plugin.name.to_string(),
                call: "format-result".into(),
                message: crate::boundary::reason(message),
            }),
            Err(e) => {
                *guard = None;
                Err(e)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Approval guard

/// MCP tool annotations (hints; `None` when the server did not say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolAnnotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposedCall {
    pub server: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub annotations: ToolAnnotations,
    pub interactive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "decision", content = "message")]
pub enum Decision {
    Allow,
    Deny(String),
    Ask(String),
}

pub struct ApprovalGuard {
    plugin: Arc<Loaded>,
    slot: Mutex<Option<Slot<ApprovalGuardBindings>>>,
}

impl ApprovalGuard {
    pub(crate) fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        match plugin.pre {
            KindPre::ApprovalGuard(_) => Ok(ApprovalGuard {
                plugin,
                slot: Mutex::new(None),
            }),
            _ => Err(wrong_kind(&plugin, "approval-guard")),
        }
    }

    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    /// Reviews a proposed call. An `ask` for a non-interactive call is turned into `deny`,
    /// because nobody is there to answer.
    pub async fn review(&self, call: &ProposedCall) -> Result<Decision, PluginError> {
        let plugin = self.plugin.clone();
        plugin.check_health()?;
        let a = &call.annotations;
        let wit_call = types::ProposedCall {
            server: call.server.clone(),
            tool: call.tool.clone(),
            arguments_json: call.arguments.to_string(),
            annotations: types::ToolAnnotations {
                read_only: a.read_only,
                destructive: a.destructive,
                idempotent: a.idempotent,
                open_world: a.open_world,
            },
            interactive: call.interactive,
        };
        let mut guard = self.slot.lock().await;
        if guard.is_none() {
            let KindPre::ApprovalGuard(pre) = &plugin.pre else {
                return Err(wrong_kind(&plugin, "approval-guard"));
            };
            let mut store = plugin.new_store()?;
            let bindings = per_version!(map pre, p => guarded!(
                plugin,
                &mut store,
                "instantiate",
                plugin.settings.timeout,
                p.instantiate_async(&mut store)
            ))?;
            *guard = Some(Slot { store, bindings });
        }
        let Some(slot) = guard.as_mut() else {
            return Err(PluginError::unusable(&plugin.name, "no instance"));
        };
        let r = per_version!(&slot.bindings, b => guarded!(
            plugin,
            &mut slot.store,
            "review",
            plugin.settings.timeout,
            b.rkmcp_plugin_approval_guard()
                .call_review(&mut slot.store, &wit_call)
        ))
        .and_then(|d| {
            let size = match &d {
                types::Decision::Allow => 0,
                types::Decision::Deny(s) | types::Decision::Ask(s) => s.len(),
            };
            plugin.check_output("review", size)?;
            Ok(d)
        });
        match r {
            Ok(types::Decision::Allow) => Ok(Decision::Allow),
            Ok(types::Decision::Deny(reason)) => {
                Ok(Decision::Deny(crate::boundary::reason(reason)))
            }
            Ok(types::Decision::Ask(q)) if call.interactive => {
                Ok(Decision::Ask(crate::boundary::reason(q)))
            }
            Ok(types::Decision::Ask(q)) => Ok(Decision::Deny(format!(
                "needs approval, but rkmcp is not interactive: {}",
                crate::boundary::reason(q)
            ))),
            Err(e) => {
                *guard = None;
                Err(e)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Transport

/// Errors of a plugin connection: the transport's own errors, or a fault of the plugin.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectionError {
    #[error("transport plugin `{plugin}`: the connection is closed")]
    Closed { plugin: String },
    #[error("transport plugin `{plugin}`: bad config: {message}")]
    Config { plugin: String, message: String },
    #[error("transport plugin `{plugin}`: I/O error: {message}")]
    Io { plugin: String, message: String },
    #[error("transport plugin `{plugin}`: protocol error: {message}")]
    Protocol { plugin: String, message: String },
    #[error(transparent)]
    Plugin(#[from] PluginError),
}

impl ConnectionError {
    fn from_wit(plugin: &str, e: latest::TransportError) -> Self {
        use latest::TransportError as E;
        let plugin = plugin.to_string();
        let r = crate::boundary::reason;
        match e {
            E::Closed => ConnectionError::Closed { plugin },
            E::Config(message) => ConnectionError::Config {
                plugin,
                message: r(message),
            },
            E::Io(message) => ConnectionError::Io {
                plugin,
                message: r(message),
            },
            E::Protocol(message) => ConnectionError::Protocol {
                plugin,
                message: r(message),
            },
        }
    }
}

/// A transport plugin; [`connect`](Self::connect) opens one connection (one instance).
#[derive(Clone)]
pub struct Transport {
    pub(crate) plugin: Arc<Loaded>,
}

/// Longest single guest `receive`: a longer wait is split into slices so `send` (which needs
/// the same instance) is never blocked for longer than this.
const RECEIVE_SLICE: Duration = Duration::from_millis(20);

impl Transport {
    pub(crate) fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        match plugin.pre {
            KindPre::Transport(_) => Ok(Transport { plugin }),
            _ => Err(wrong_kind(&plugin, "transport")),
        }
    }

    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    /// Opens a connection with the plugin's config values.
    pub async fn connect(&self) -> Result<PluginConnection, ConnectionError> {
        let plugin = &self.plugin;
        plugin.check_health()?;
        let KindPre::Transport(pre) = &plugin.pre else {
            return Err(wrong_kind(plugin, "transport").into());
        };
        let mut store = plugin.new_store()?;
        let timeout = plugin.settings.timeout;
        let bindings = per_version!(map pre, p => guarded!(
            plugin,
            &mut store,
            "instantiate",
            timeout,
            p.instantiate_async(&mut store)
        ))?;
        let config: Vec<(String, String)> = plugin
            .settings
            .config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let conn = per_version!(&bindings, b => guarded!(
            plugin,
            &mut store,
            "connect",
            timeout,
            b.rkmcp_plugin_transport()
                .call_connect(&mut store, &config)
        )
        .map(|r| r.map_err(latest::TransportError::from)))?
        .map_err(|e| ConnectionError::from_wit(&plugin.name, e))?;
        Ok(PluginConnection {
            plugin: self.plugin.clone(),
            inner: Mutex::new(ConnInner {
                store,
                bindings,
                conn,
                dead: None,
                closed: false,
            }),
        })
    }
}

struct ConnInner {
    store: Store<PluginState>,
    bindings: TransportBindings,
    conn: ResourceAny,
    /// Set after a fault: the instance is gone, every later call reports this.
    dead: Option<PluginError>,
    closed: bool,
}

/// One open connection of a transport plugin. Methods take `&self` so a sender and a
/// receiver task can share it (`Arc<PluginConnection>`); calls into the plugin are serialised.
pub struct PluginConnection {
    plugin: Arc<Loaded>,
    inner: Mutex<ConnInner>,
}

impl PluginConnection {
    pub fn plugin_name(&self) -> &str {
        &self.plugin.name
    }

    /// Sends one JSON-RPC message.
    pub async fn send(&self, message: &str) -> Result<(), ConnectionError> {
        let plugin = &self.plugin;
        let mut inner = self.inner.lock().await;
        let inner = &mut *inner;
        if inner.closed {
            return Err(ConnectionError::Closed {
                plugin: plugin.name.to_string(),
            });
        }
        if let Some(e) = &inner.dead {
            return Err(e.clone().into());
        }
        let conn = inner.conn;
        let r = per_version!(&inner.bindings, b => guarded!(
            plugin,
            &mut inner.store,
            "send",
            plugin.settings.timeout,
            b.rkmcp_plugin_transport().connection().call_send(&mut inner.store, conn, message)
        )
        .map(|r| r.map_err(latest::TransportError::from)));
        match r {
            Ok(r) => r.map_err(|e| ConnectionError::from_wit(&plugin.name, e)),
            Err(e) => {
                inner.dead = Some(e.clone());
                Err(e.into())
            }
        }
    }

    /// The next message, or `None` if `timeout` passed without one.
    pub async fn receive(&self, timeout: Duration) -> Result<Option<String>, ConnectionError> {
        let plugin = &self.plugin;
        let end = Instant::now() + timeout;
        loop {
            let slice = end
                .saturating_duration_since(Instant::now())
                .min(RECEIVE_SLICE);
            let mut guard = self.inner.lock().await;
            let inner = &mut *guard;
            if inner.closed {
                return Err(ConnectionError::Closed {
                    plugin: plugin.name.to_string(),
                });
            }
            if let Some(e) = &inner.dead {
                return Err(e.clone().into());
            }
            let ms = slice.as_millis() as u32;
            let conn = inner.conn;
            let r = per_version!(&inner.bindings, b => guarded!(
                plugin,
                &mut inner.store,
                "receive",
                plugin.settings.timeout + slice,
                b.rkmcp_plugin_transport().connection().call_receive(&mut inner.store, conn, ms)
            )
            .map(|r| r.map_err(latest::TransportError::from)));
            match r {
                Ok(Ok(Some(message))) => {
                    if let Err(e) = plugin.check_output("receive", message.len()) {
                        inner.dead = Some(e.clone());
                        return Err(e.into());
                    }
                    return Ok(Some(message));
                }
                Ok(Ok(None)) if Instant::now() < end => {}
                Ok(Ok(None)) => return Ok(None),
                Ok(Err(e)) => return Err(ConnectionError::from_wit(&plugin.name, e)),
                Err(e) => {
                    inner.dead = Some(e.clone());
                    return Err(e.into());
                }
            }
            drop(guard);
            tokio::task::yield_now().await;
        }
    }

    /// Closes the connection; later calls return `Closed`.
    pub async fn close(&self) -> Result<(), ConnectionError> {
        let plugin = &self.plugin;
        let mut inner = self.inner.lock().await;
        let inner = &mut *inner;
        if inner.dead.is_some() || inner.closed {
            return Ok(());
        }
        let conn = inner.conn;
        let r = per_version!(&inner.bindings, b => guarded!(
            plugin,
            &mut inner.store,
            "close",
            plugin.settings.timeout,
            b.rkmcp_plugin_transport().connection().call_close(&mut inner.store, conn)
        )
        .map(|r| r.map_err(latest::TransportError::from)));
        inner.closed = true;
        match r {
            Ok(r) => r.map_err(|e| ConnectionError::from_wit(&plugin.name, e)),
            Err(e) => {
                inner.dead = Some(e.clone());
                Err(e.into())
            }
        }
    }
}
