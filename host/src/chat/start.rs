//! Starting a chat: servers and model come up concurrently, then the approval chain is built.
use std::sync::Arc;

use rkmcp_llm::{ModelConfig, SharedBackend};
use rkmcp_plugin_host::{ApprovalGuard, Detector, PluginHost, PluginsConfig, SchemaConverter};

use super::approval::{Approver, Prompter};
use super::client::{FormAsker, LocalClient};
use super::engine::ChatEngine;
use super::sampling::{Sampler, SamplingApprover, SamplingPolicy, SamplingSettings};
use super::settings::ChatSettings;
use crate::config::Config;
use crate::mcp::{NonInteractive, Session, SessionManager, StartFailure, config_roots};

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
    /// Asks for elicitation forms; `None`: forms are declined (see `accept_defaults`).
    pub forms: Option<Arc<dyn FormAsker>>,
    /// Approves sampling requests; `None`: only `[sampling] auto_approve` servers may sample.
    pub sampling_approver: Option<Arc<dyn SamplingApprover>>,
    /// `--accept-defaults`: with nobody to ask, accept forms whose required fields have defaults.
    pub accept_defaults: bool,
}

/// The client side of server requests for a front end: terminal forms or the non-interactive
/// answers, roots from the config. Sampling is added once a model is loaded.
pub fn local_client(
    config: &Config,
    forms: Option<Arc<dyn FormAsker>>,
    accept_defaults: bool,
) -> Arc<LocalClient> {
    Arc::new(LocalClient::new(
        NonInteractive::new(config_roots(config), accept_defaults),
        forms,
    ))
}

/// What `includeContext` adds for a server: its instructions and what it offers.
pub fn server_context(session: &Session) -> String {
    let mut out = format!("Context from the MCP server `{}`:", session.name());
    if let Some(instructions) = session.server_info().and_then(|i| i.instructions.clone()) {
        out.push_str(&format!("\n{instructions}"));
    }
    let catalog = session.catalog();
    for t in catalog.tools.iter() {
        out.push_str(&format!(
            "\n- tool {}: {}",
            t.name,
            t.description.as_deref().unwrap_or("")
        ));
    }
    for r in catalog.resources.iter() {
        out.push_str(&format!("\n- resource {} ({})", r.uri, r.name));
    }
    out
}

/// A started chat and what did not start.
pub struct StartedChat {
    pub engine: ChatEngine,
    pub failures: Vec<StartFailure>,
    /// The host the chat's plugins came from (`None`: the chat uses none); hot reload loads new
    /// versions through it, so they share its compiled code and fault counts.
    pub plugin_host: Option<PluginHost>,
}

/// Starts the servers and loads the model at the same time (both take seconds).
pub async fn start_chat(config: &Config, options: ChatOptions) -> anyhow::Result<StartedChat> {
    let policy = config
        .section::<SamplingSettings>("sampling")
        .map_err(anyhow::Error::from)
        .and_then(|s| {
            SamplingPolicy::new(s).map_err(|e| crate::config::ConfigError::new(e).into())
        })?;
    let client = local_client(config, options.forms.clone(), options.accept_defaults);
    let servers = async {
        if options.no_tools {
            None
        } else {
            Some(
                SessionManager::start_with(config, options.only_server.as_deref(), client.clone())
                    .await,
            )
        }
    };
    let mut model_config = options.model.clone();
    if model_config.prompt_cache {
        model_config.prompt_cache_dir = Some(rkmcp_llm::store::prompt_cache_dir());
    }
    let model = SharedBackend::open(model_config);
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
    let plugin_host = plugins.host;
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
    let sessions = Arc::new(sessions);
    // Sampling runs on the chat's model, as a conversation of its own.
    let weak = Arc::downgrade(&sessions);
    let sampler = Sampler::new(
        backend.clone(),
        options.settings.clone(),
        policy,
        options.sampling_approver.clone(),
    )
    .with_context(Arc::new(move |server: &str| {
        let sessions = weak.upgrade()?;
        sessions.session(server).map(|s| server_context(s))
    }));
    client.set_sampler(Arc::new(sampler));
    let mut engine = ChatEngine::new(backend, sessions, options.settings, approver);
    if let Some(detector) = plugins.detector {
        engine = engine.with_detector_plugin(detector);
    }
    if let Some(converter) = plugins.converter {
        engine = engine.with_converter_plugin(converter);
    }
    Ok(StartedChat {
        engine,
        failures,
        plugin_host,
    })
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
    /// The host they were loaded from (`None` when the settings name no plugin).
    pub host: Option<PluginHost>,
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
        host: Some(host),
    })
}
