//! Starting a chat: servers and model come up concurrently, then the approval chain is built.
use std::sync::Arc;

use rkmcp_llm::{ModelConfig, SharedBackend};
use rkmcp_plugin_host::{ApprovalGuard, Detector, PluginHost, PluginsConfig, SchemaConverter};

use super::approval::{Approver, Prompter};
use super::engine::ChatEngine;
use super::settings::ChatSettings;
use crate::config::Config;
use crate::mcp::{SessionManager, StartFailure};

/// What the front ends (`chat`, `ask`) choose besides the config.
pub struct ChatOptions {
    pub model: ModelConfig,
    pub settings: ChatSettings,
    /// Answers approval questions; `None` when nobody is at a terminal.
    pub prompter: Option<Arc<dyn Prompter>>,
    /// Approve every call (`--yes`).
    pub yes: bool,
    /// Start only this server.
    pub only_server: Option<String>,
    /// Start no servers: a plain chat with the model.
    pub no_tools: bool,
}

/// A started chat and what did not start.
pub struct StartedChat {
    pub engine: ChatEngine,
    pub failures: Vec<StartFailure>,
}

/// Starts the servers and loads the model at the same time (both take seconds).
pub async fn start_chat(config: &Config, options: ChatOptions) -> anyhow::Result<StartedChat> {
    let servers = async {
        if options.no_tools {
            None
        } else {
            Some(SessionManager::start(config, options.only_server.as_deref()).await)
        }
    };
    let model = SharedBackend::open(options.model.clone());
    let (sessions, backend) = tokio::join!(servers, model);
    let backend = match backend {
        Ok(b) => b,
        Err(err) => {
            if let Some(s) = sessions {
                s.shutdown().await;
            }
            return Err(match err {
                rkmcp_llm::LlmError::Config(msg) => crate::cli::UsageError(msg).into(),
                other => other.into(),
            });
        }
    };
    let sessions = match sessions {
        Some(s) => s,
        None => SessionManager::start(&without_servers(config), None).await,
    };
    let plugins = match load_plugins(config, &options.settings) {
        Ok(p) => p,
        Err(err) => {
            sessions.shutdown().await;
            return Err(err);
        }
    };
    let guards = plugins.guards;
    let approver = match Approver::new(
        &options.settings.approval,
        guards,
        options.prompter,
        options.yes,
    ) {
        Ok(a) => a,
        Err(err) => {
            sessions.shutdown().await;
            return Err(crate::config::ConfigError::new(format!("[chat.approval]: {err}")).into());
        }
    };
    let failures = sessions.failures().to_vec();
    let mut engine = ChatEngine::new(backend, Arc::new(sessions), options.settings, approver);
    if let Some(detector) = plugins.detector {
        engine = engine.with_detector_plugin(detector);
    }
    if let Some(converter) = plugins.converter {
        engine = engine.with_converter_plugin(converter);
    }
    Ok(StartedChat { engine, failures })
}

fn without_servers(config: &Config) -> Config {
    let mut c = config.clone();
    c.servers.clear();
    c
}

/// The plugins a chat uses, loaded from one plugin host.
#[derive(Default)]
pub struct ChatPlugins {
    /// `[chat.approval] guards`, in order.
    pub guards: Vec<ApprovalGuard>,
    /// `[chat] detector`.
    pub detector: Option<Detector>,
    /// `[chat] converter`.
    pub converter: Option<SchemaConverter>,
}

/// Loads the approval guards, the detector and the converter plugin the settings name. A plugin
/// that cannot be loaded is a configuration error: running without a guard the user asked for
/// would be unsafe, and a detector or converter the user chose silently replaced would hide the
/// problem.
pub fn load_plugins(config: &Config, settings: &ChatSettings) -> anyhow::Result<ChatPlugins> {
    let names = &settings.approval.guards;
    if names.is_empty() && settings.detector.is_none() && settings.converter.is_none() {
        return Ok(ChatPlugins::default());
    }
    let plugins: PluginsConfig = config.section("plugins")?;
    let host = PluginHost::new(plugins)?;
    let guards = names
        .iter()
        .map(|name| {
            host.approval_guard(name).map_err(|err| {
                anyhow::Error::from(crate::config::ConfigError::new(format!(
                    "[chat.approval] guards: cannot load approval guard `{name}`: {err}"
                )))
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let detector = match &settings.detector {
        Some(name) => Some(host.detector(name).map_err(|err| {
            anyhow::Error::from(crate::config::ConfigError::new(format!(
                "[chat] detector: cannot load detector plugin `{name}`: {err} (see `rkmcp plugins list`)"
            )))
        })?),
        None => None,
    };
    let converter = match &settings.converter {
        Some(name) => Some(host.schema_converter(name).map_err(|err| {
            anyhow::Error::from(crate::config::ConfigError::new(format!(
                "[chat] converter: cannot load schema-converter plugin `{name}`: {err} (see `rkmcp plugins list`)"
            )))
        })?),
        None => None,
    };
    Ok(ChatPlugins {
        guards,
        detector,
        converter,
    })
}
