//! Starting a chat: servers and model come up concurrently, then the approval chain is built.
use std::sync::Arc;

use rkmcp_llm::{ModelConfig, SharedBackend};
use rkmcp_plugin_host::{ApprovalGuard, Detector, PluginHost, PluginsConfig, SchemaConverter};
use tokio_util::sync::CancellationToken;

use super::approval::{Approver, Prompter};
use super::client::{FormAsker, LocalClient};
use super::engine::{ChatEngine, EarlyRound};
use super::remembered::{RememberedTools, ToolListMemory};
use super::sampling::{Sampler, SamplingApprover, SamplingPolicy, SamplingSettings};
use super::settings::ChatSettings;
use rkmcp_config::Config;
use rkmcp_sessions::{NonInteractive, Session, SessionManager, StartFailure, config_roots};

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
    /// `ask`: the question, known before the servers are up, so its first round may start
    /// from the tool list remembered from the last run (`[chat] remember_tools`).
    pub early_question: Option<String>,
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
    /// The early question's first round, generated from the remembered tool list while the
    /// servers started, and whether their list confirmed it: pass it to
    /// [`ChatEngine::turn_from`].
    pub early: Option<EarlyRound>,
}

/// Starts the servers and loads the model at the same time (both take seconds). With an
/// [`ChatOptions::early_question`] and a tool list remembered from the last run with the same
/// servers, the model also generates the question's first round from that list while the
/// servers start ([`StartedChat::early`]); their list, once they are up, decides whether it
/// stands.
pub async fn start_chat(config: &Config, options: ChatOptions) -> anyhow::Result<StartedChat> {
    let policy = config
        .section::<SamplingSettings>("sampling")
        .map_err(anyhow::Error::from)
        .and_then(|s| {
            SamplingPolicy::new(s).map_err(|e| rkmcp_config::ConfigError::new(e).into())
        })?;
    let client = local_client(config, options.forms.clone(), options.accept_defaults);
    // Plugins and the approval chain before the model: an early round already reads the
    // model's output with the detector plugin and lists the tools through the converter.
    let plugins = load_plugins(config, &options.settings)?;
    let approver = Approver::new(
        &options.settings.approval,
        plugins.guards,
        options.prompter.clone(),
        options.yes,
    )
    .map_err(|err| rkmcp_config::ConfigError::new(format!("[chat.approval]: {err}")))?;
    let memory = (!options.no_tools && options.settings.remember_tools)
        .then(|| ToolListMemory::for_config(config, options.only_server.as_deref()))
        .flatten();
    // Read once: what an early round starts from, and what the live list is compared with
    // before it is written again.
    let kept = memory.as_ref().and_then(ToolListMemory::load);
    let remembered = kept
        .clone()
        .filter(|_| options.early_question.is_some() && servers_can_start_beside(&options.model));
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
    let settings = options.settings.clone();
    let (detector, converter) = (plugins.detector, plugins.converter);
    let placeholder = Arc::new(SessionManager::none(client.clone()));
    let early_question = options.early_question.clone();
    let model_then_round = async move {
        let backend = SharedBackend::open(model_config).await?;
        let mut engine = ChatEngine::new(backend.clone(), placeholder, settings, approver);
        if let Some(detector) = detector {
            engine = engine.with_detector_plugin(detector);
        }
        if let Some(converter) = converter {
            engine = engine.with_converter_plugin(converter);
        }
        let early = match (remembered, early_question) {
            (Some(remembered), Some(question)) => {
                engine.list_remembered(remembered.exposed());
                // A failed early round costs nothing but its time: the turn runs as usual.
                match engine
                    .early_round(&question, &CancellationToken::new())
                    .await
                {
                    Ok(round) => Some((round, remembered)),
                    Err(err) => {
                        tracing::debug!("no early first round: {err:#}");
                        None
                    }
                }
            }
            _ => None,
        };
        Ok::<_, rkmcp_llm::LlmError>((backend, engine, early))
    };
    let (sessions, built) = tokio::join!(servers, model_then_round);
    let (backend, mut engine, early) = match built {
        Ok(b) => b,
        Err(err) => {
            if let Some(s) = sessions {
                s.shutdown().await;
            }
            // An invalid model setting keeps its kind: the CLI makes it exit code 2.
            return Err(err.into());
        }
    };
    let sessions = match sessions {
        Some(s) => s,
        None => SessionManager::start(&without_servers(config), None).await,
    };
    let live = RememberedTools::from_live(&sessions);
    let early = early.map(|(mut round, remembered)| {
        match &live {
            Some(live) if remembered.same_as(live) => round.stands(),
            Some(live) => round.discard(remembered.difference(live)),
            None => round.discard("a server did not start".into()),
        }
        tracing::debug!(
            "early first round from {} remembered tools: {:.0} ms",
            remembered.tool_count(),
            round.elapsed_ms()
        );
        round
    });
    if let (Some(memory), Some(live)) = (&memory, &live)
        && kept.as_ref().is_none_or(|kept| !kept.same_as(live))
    {
        memory.save(live);
    }
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
    engine.attach_sessions(sessions);
    if early.is_none() {
        engine.refresh_tools();
    }
    Ok(StartedChat {
        engine,
        failures,
        plugin_host: plugins.host,
        early,
    })
}

/// Whether the servers can start while the model writes an early round: it runs on the NPU, or
/// the CPU backend's threads leave a core free. With the model on every core the two only take
/// turns: measured on 2 cores with the time server, an early round at 2 threads took 1.00x the
/// wall time of a plain `ask` and 1.15x its CPU (llama.cpp's threads spin while they wait for a
/// core); at 1 thread, with a core left for the server, 0.86x the wall time.
fn servers_can_start_beside(model: &ModelConfig) -> bool {
    if matches!(
        rkmcp_llm::plan(model),
        Ok((rkmcp_llm::BackendKind::Rkllm, _))
    ) {
        return true;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = model.threads.map_or(cores.min(8), |t| t as usize);
    cores > threads
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
                anyhow::Error::from(rkmcp_config::ConfigError::new(format!(
                    "[chat.approval] guards: cannot load approval guard `{name}`: {err}"
                )))
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let detector = match &settings.detector {
        Some(name) => Some(host.detector(name).map_err(|err| {
            anyhow::Error::from(rkmcp_config::ConfigError::new(format!(
                "[chat] detector: cannot load detector plugin `{name}`: {err} (see `rkmcp plugins list`)"
            )))
        })?),
        None => None,
    };
    let converter = match &settings.converter {
        Some(name) => Some(host.schema_converter(name).map_err(|err| {
            anyhow::Error::from(rkmcp_config::ConfigError::new(format!(
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
