//! Transport plugins: one instance per open connection.
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;
use wasmtime::Store;
use wasmtime::component::ResourceAny;

use crate::error::PluginError;
use crate::plugin::{Instance, Loaded, guarded};
use crate::state::PluginState;
use crate::wit::latest;
use crate::wit::{TransportBindings, TransportPre, per_version};

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
        plugin.pre::<TransportPre>()?;
        Ok(Transport { plugin })
    }

    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    /// Opens a connection with the plugin's config values.
    pub async fn connect(&self) -> Result<PluginConnection, ConnectionError> {
        let plugin = &self.plugin;
        plugin.check_health()?;
        let Instance {
            mut store,
            bindings,
        } = plugin.instantiate::<TransportPre>().await?;
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
            plugin.settings.timeout,
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
