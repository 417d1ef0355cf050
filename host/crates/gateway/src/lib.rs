//! `rkmcp serve`: rkmcp as an MCP server — a gateway in front of the configured servers that
//! puts rkmcp's approval policy on every tool call, and the local model as a tool.
//!
//! Data flows: config → [`rkmcp_sessions::SessionManager`] (the servers behind) → [`gateway`]
//! (rmcp's server side, one handler per client connection) → stdio or [`http`]. What the servers
//! behind ask of their client goes to the connected client ([`downstream`]); [`relay`] carries one
//! request and what happens while it runs; [`namespace`] names resources and pages lists;
//! [`local_model`] is the model as a tool and as the sampler of last resort; [`instrumentation`]
//! records every request.
//!
//! # Configuration: `[serve]` (every key optional)
//!
//! ```toml
//! [serve]
//! http = "127.0.0.1:8765"          # serve streamable HTTP here instead of stdio (--http)
//! allowed_origins = ["https://app.example.org"]   # browser Origins besides loopback ones
//! allowed_hosts = ["mcp.example.org"]             # Host names besides loopback ones
//! instrumentation = "serve.jsonl"  # one JSON line per request
//! local_model = true               # expose local_model_generate (default true)
//! local_model_wait = 60            # seconds a generation waits for the model
//! page_size = 100                  # items per page of the gateway's lists
//!
//! [serve.auth]
//! bearer_token_env = "RKMCP_SERVE_TOKEN"   # clients must send `Authorization: Bearer <it>`
//! # … or, instead of a shared token, OAuth access tokens of an authorization server:
//! issuer = "https://auth.example.org"       # whose tokens are accepted (metadata read at start)
//! resource = "https://board.example.org/mcp"  # the audience tokens must name (default: the URL served)
//! scopes = ["mcp:tools"]                    # scopes every token must carry
//! introspection_client_id = "rkmcp-gateway" # for tokens that are not JWTs (RFC 7662)
//! introspection_client_secret_env = "RKMCP_INTROSPECTION_SECRET"
//! ```
//!
//! Tool calls are approved by `[chat.approval]` (deny patterns, guard plugins, auto_approve,
//! annotations); a call that needs a person is asked of the connected client through
//! elicitation when it supports forms, and denied with the reason otherwise.
pub mod downstream;
pub mod front_door;
pub mod gateway;
pub mod http;
pub mod instrumentation;
pub mod limits;
pub mod local_model;
pub mod log_floor;
pub mod namespace;
pub mod relay;
pub mod request_check;
pub mod resource_server;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rkmcp_llm::ModelConfig;
use serde::Deserialize;

use self::log_floor::LogFloor;
pub use gateway::{Gateway, Shared};
use rkmcp_chat::approval::Approver;
use rkmcp_chat::sampling::{SamplingPolicy, SamplingSettings};
use rkmcp_chat::settings::ChatSettings;
use rkmcp_config::{Config, ConfigError};
use rkmcp_sessions::{ListKind, NonInteractive, SessionEvent, SessionManager, config_roots};

/// `[serve]` in the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// `HOST:PORT` for streamable HTTP; absent: stdio.
    pub http: Option<String>,
    pub allowed_origins: Vec<String>,
    pub allowed_hosts: Vec<String>,
    pub instrumentation: Option<PathBuf>,
    pub local_model: bool,
    pub local_model_wait: f64,
    pub page_size: usize,
    pub auth: AuthSettings,
    /// `[serve.limits]`: connections, sessions, timeouts (see [`limits`]).
    pub limits: limits::Limits,
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings {
            http: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            instrumentation: None,
            local_model: true,
            local_model_wait: 60.0,
            page_size: 100,
            auth: AuthSettings::default(),
            limits: limits::Limits::default(),
        }
    }
}

/// `[serve.auth]`: who may use the HTTP endpoint — a shared bearer token, or the access tokens
/// of an OAuth authorization server ([`resource_server`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// The environment variable holding the bearer token clients must present.
    pub bearer_token_env: Option<String>,
    /// The authorization server whose access tokens are accepted (its issuer identifier).
    pub issuer: Option<String>,
    /// This gateway's resource URI, which tokens must name as their audience. Default: the URL
    /// it serves, `http://HOST:PORT/mcp`.
    pub resource: Option<String>,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
    /// The gateway's client at the issuer, to introspect tokens that are not JWTs (RFC 7662).
    pub introspection_client_id: Option<String>,
    /// The variable holding that client's secret.
    pub introspection_client_secret_env: Option<String>,
}

impl AuthSettings {
    /// Whether HTTP clients must authenticate (a bearer token or OAuth).
    pub fn required(&self) -> bool {
        self.bearer_token_env.is_some() || self.issuer.is_some()
    }

    /// The token, if one is configured. Err: the variable is named but unset or empty, or an
    /// issuer is configured too.
    pub fn bearer_token(&self) -> Result<Option<String>, String> {
        if self.bearer_token_env.is_some() && self.issuer.is_some() {
            return Err(
                "[serve.auth]: set either bearer_token_env (one shared token) or issuer (OAuth access \
                 tokens), not both"
                    .into(),
            );
        }
        let Some(var) = &self.bearer_token_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Ok(Some(t.trim().to_string())),
            _ => Err(format!(
                "[serve.auth] bearer_token_env = \"{var}\", but ${var} is unset or empty"
            )),
        }
    }
}

/// What the front end chooses besides the config.
pub struct ServeOptions {
    pub settings: ServeSettings,
    pub chat: ChatSettings,
    /// The model for `local_model_generate` and sampling; `None`: no local model.
    pub model: Option<ModelConfig>,
    /// Approve every call (`--yes`; `deny` rules and guards still apply).
    pub yes: bool,
}

/// A started gateway: the handler for the first connection and the event forwarder.
pub struct Started {
    pub gateway: Gateway,
    pub shared: Arc<Shared>,
    forwarder: tokio::task::JoinHandle<()>,
}

impl Started {
    /// Stops forwarding and closes the sessions to the servers.
    pub async fn shutdown(self) {
        let Started {
            gateway,
            shared,
            forwarder,
        } = self;
        forwarder.abort();
        let _ = forwarder.await;
        drop(gateway);
        match Arc::try_unwrap(shared) {
            Ok(shared) => {
                if let Ok(manager) = Arc::try_unwrap(shared.manager) {
                    manager.shutdown().await;
                }
            }
            Err(_) => tracing::debug!("gateway still in use at shutdown"),
        }
    }
}

/// Starts the servers behind the gateway and builds the shared state.
pub async fn start(config: &Config, options: ServeOptions) -> anyhow::Result<Started> {
    let sampling = config
        .section::<SamplingSettings>("sampling")
        .map_err(anyhow::Error::from)
        .and_then(|s| SamplingPolicy::new(s).map_err(|e| ConfigError::new(e).into()))?;
    let settings = options.settings;
    if !(settings.local_model_wait.is_finite() && settings.local_model_wait > 0.0) {
        return Err(ConfigError::new(format!(
            "[serve] local_model_wait must be a positive number of seconds, not {}",
            settings.local_model_wait
        ))
        .into());
    }
    let local = match (settings.local_model, options.model) {
        (true, Some(model)) => Some(Arc::new(local_model::LocalModel::new(
            model,
            options.chat.clone(),
            sampling,
            Duration::from_secs_f64(settings.local_model_wait),
        ))),
        _ => None,
    };
    let instrumentation = match &settings.instrumentation {
        Some(path) => instrumentation::Instrumentation::to_file(path)
            .await
            .map_err(|e| {
                ConfigError::new(format!(
                    "[serve] instrumentation: cannot open {}: {e}",
                    path.display()
                ))
            })?,
        None => instrumentation::Instrumentation::spans_only(),
    };
    let plugins = rkmcp_chat::start::load_plugins(
        config,
        &ChatSettings {
            detector: None,
            converter: None,
            ..options.chat.clone()
        },
    )?;
    let approver = Approver::new(&options.chat.approval, plugins.guards, None, options.yes)
        .map_err(|e| ConfigError::new(format!("[chat.approval]: {e}")))?;
    let downstream = Arc::new(downstream::Downstream::default());
    let inflight = Arc::new(relay::InFlight::default());
    // Nobody sits at the gateway's terminal: notices go to the log.
    let fallback = NonInteractive::new(config_roots(config), false)
        .with_notice(|text| tracing::info!("{text}"));
    let client = Arc::new(downstream::GatewayClient::new(
        downstream.clone(),
        inflight.clone(),
        local.clone(),
        fallback,
    ));
    let manager = SessionManager::start_with(config, None, client).await;
    for failure in manager.failures() {
        tracing::warn!(
            target: rkmcp_term_safe::NOTICE_TARGET,
            "server `{}` did not start: {} (its tools are not offered)",
            failure.server,
            failure.error
        );
    }
    let manager = Arc::new(manager);
    let forwarder = tokio::spawn(forward_changes(
        manager.clone(),
        downstream.clone(),
        inflight.clone(),
    ));
    let shared = Arc::new(Shared {
        manager,
        approver,
        local,
        instrumentation,
        downstream,
        inflight,
        page_size: settings.page_size.max(1),
        roots: config_roots(config),
    });
    Ok(Started {
        gateway: Gateway::new(shared.clone()),
        shared,
        forwarder,
    })
}

/// Tells every connected client when a list behind the gateway changed or a subscribed
/// resource was updated, and passes on a server's log messages sent while none of its requests
/// is in flight (those inside a request go on that request's stream, see [`relay`]). The
/// per-session readers live in a `JoinSet` owned by this future, so aborting it stops them all
/// (and lets go of nothing that holds a session).
#[allow(deprecated)] // logging is deprecated by SEP-2577 but current servers and clients use it.
async fn forward_changes(
    manager: Arc<SessionManager>,
    downstream: Arc<downstream::Downstream>,
    inflight: Arc<relay::InFlight>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut readers = tokio::task::JoinSet::new();
    for session in manager.sessions() {
        let mut events = session.subscribe();
        let name = session.name().to_string();
        let prefixed = !session.config.prefix.is_empty();
        let tx = tx.clone();
        readers.spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => {
                        if tx.send((name.clone(), prefixed, event)).is_err() {
                            return;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
    drop(tx);
    drop(manager);
    while let Some((server, prefixed, event)) = rx.recv().await {
        // During a call, a server's log messages belong to that call's client (the relay passes
        // them on), or to no client when several have calls to it in flight.
        if matches!(event, SessionEvent::Log { .. })
            && !matches!(inflight.target(&server), relay::CallTarget::NoCall)
        {
            continue;
        }
        for (id, peer) in downstream.all() {
            if let SessionEvent::Log { level, .. } = &event {
                // Outside a request, a 2026-07-28 client (no back-channel) gets no logs.
                let floor = LogFloor::for_connection(downstream.log_level(id));
                if !downstream::has_back_channel(&peer) || !floor.passes(*level) {
                    continue;
                }
            }
            let sent = match &event {
                SessionEvent::ListRefreshed { list, .. } => match list {
                    ListKind::Tools => peer.notify_tool_list_changed().await,
                    ListKind::Prompts => peer.notify_prompt_list_changed().await,
                    ListKind::Resources | ListKind::ResourceTemplates => {
                        peer.notify_resource_list_changed().await
                    }
                },
                SessionEvent::Log {
                    level,
                    logger,
                    data,
                    ..
                } => {
                    let params = relay::log_message(&server, *level, logger.clone(), data.clone());
                    peer.notify_logging_message(params).await
                }
                SessionEvent::ResourceUpdated { uri, .. } => {
                    let uri = namespace::namespaced_uri(&server, prefixed, uri);
                    peer.notify_resource_updated(
                        rmcp::model::ResourceUpdatedNotificationParam::new(uri),
                    )
                    .await
                }
                _ => Ok(()),
            };
            if let Err(err) = sent {
                tracing::debug!("a notification to a client failed: {err}");
            }
        }
    }
}

/// Serves one client on stdin/stdout until it disconnects.
pub async fn serve_stdio(started: &Started) -> anyhow::Result<()> {
    // Clients start the gateway with pipes: reading and writing them on the IO reactor saves
    // two hand-offs to tokio's blocking pool per request (stdin and stdout are blocking there).
    let service = rmcp::serve_server(started.gateway.clone(), rmcp::transport::stdio_pipes())
        .await
        .map_err(|e| anyhow::anyhow!("the client's initialization failed: {e}"))?;
    let reason = service.waiting().await;
    // rmcp's quit reason is a Debug dump of its internals: only for debugging.
    tracing::info!("the client disconnected");
    tracing::debug!("client disconnected: {reason:?}");
    Ok(())
}

/// The snippet a user pastes into a client's config to run `rkmcp serve` over stdio.
pub fn client_config(client: &str, exe: &str, config: Option<&str>) -> Result<String, String> {
    let mut args = vec![serde_json::Value::from("serve")];
    if let Some(c) = config {
        args.insert(0, serde_json::Value::from(c));
        args.insert(0, serde_json::Value::from("--config"));
    }
    let server = serde_json::json!({ "command": exe, "args": args });
    let doc = match client {
        // claude_desktop_config.json
        "claude" => serde_json::json!({ "mcpServers": { "rkmcp": server } }),
        // .vscode/mcp.json
        "vscode" => {
            let mut s = server;
            s["type"] = "stdio".into();
            serde_json::json!({ "servers": { "rkmcp": s } })
        }
        other => {
            return Err(format!(
                "--print-config: unknown client `{other}` (claude or vscode)"
            ));
        }
    };
    serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_with_defaults_and_reject_unknown_keys() {
        let s: ServeSettings = toml::from_str("").unwrap();
        assert!(s.local_model && s.http.is_none() && s.page_size == 100);
        let s: ServeSettings = toml::from_str(
            "http = \"127.0.0.1:9\"\ninstrumentation = \"x.jsonl\"\n[auth]\nbearer_token_env = \"T\"",
        )
        .unwrap();
        assert_eq!(s.http.as_deref(), Some("127.0.0.1:9"));
        assert_eq!(s.auth.bearer_token_env.as_deref(), Some("T"));
        let err = toml::from_str::<ServeSettings>("htp = 1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("htp"), "{err}");
    }

    #[test]
    fn an_unset_token_variable_is_an_error_naming_it() {
        let auth = AuthSettings {
            bearer_token_env: Some("RKMCP_TEST_SURELY_UNSET_VAR".into()),
            ..AuthSettings::default()
        };
        let err = auth.bearer_token().unwrap_err();
        assert!(err.contains("RKMCP_TEST_SURELY_UNSET_VAR"), "{err}");
        assert_eq!(AuthSettings::default().bearer_token(), Ok(None));
        // One way to authenticate, not two.
        let both = AuthSettings {
            bearer_token_env: Some("T".into()),
            issuer: Some("https://auth.example.org".into()),
            ..AuthSettings::default()
        };
        assert!(both.bearer_token().unwrap_err().contains("not both"));
        assert!(both.required() && !AuthSettings::default().required());
    }

    #[test]
    fn client_snippets() {
        let claude = client_config("claude", "/usr/bin/rkmcp", None).unwrap();
        let v: serde_json::Value = serde_json::from_str(&claude).unwrap();
        assert_eq!(v["mcpServers"]["rkmcp"]["command"], "/usr/bin/rkmcp");
        assert_eq!(
            v["mcpServers"]["rkmcp"]["args"],
            serde_json::json!(["serve"])
        );
        let vscode = client_config("vscode", "rkmcp", Some("/c.toml")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&vscode).unwrap();
        assert_eq!(v["servers"]["rkmcp"]["type"], "stdio");
        assert_eq!(
            v["servers"]["rkmcp"]["args"],
            serde_json::json!(["--config", "/c.toml", "serve"])
        );
        assert!(client_config("emacs", "rkmcp", None).is_err());
    }
}
