//! Detector plugins: one fresh instance per model response.
use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use crate::error::PluginError;
use crate::plugin::{Instance, Loaded, guarded};
use crate::state::PluginState;
use crate::wit::latest::types;
use crate::wit::{DetectorBindings, DetectorPre, per_version};
use rkmcp_tool_formats::DetectorEvent;

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
        plugin.pre::<DetectorPre>()?;
        Ok(Detector { plugin })
    }

    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    /// Builds and drops one instance (what every session start pays); for benches and checks.
    #[doc(hidden)]
    pub async fn instantiate_only(&self) -> Result<(), PluginError> {
        self.plugin.instantiate::<DetectorPre>().await.map(drop)
    }

    /// Starts a session; `format` selects a dialect if the plugin has several ("" = default).
    pub async fn start_session(&self, format: &str) -> Result<DetectorSession, PluginError> {
        let plugin = &self.plugin;
        plugin.check_health()?;
        let Instance {
            mut store,
            bindings,
        } = plugin.instantiate::<DetectorPre>().await?;
        let started = per_version!(&bindings, b => guarded!(
            plugin,
            &mut store,
            "start-session",
            crate::plugin::startup_deadline(plugin.settings.timeout),
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
