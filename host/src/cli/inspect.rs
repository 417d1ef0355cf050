//! The inspection commands: `config`, `servers`, `tools`, `resources`, `prompts`.
use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use super::output::{self, short};
use super::{
    ConfigCommand, Context, PromptsCommand, ResourcesCommand, ServersCommand, ToolsCommand,
    UsageError,
};
use crate::config::{self, Config};
use crate::mcp::SessionManager;

/// 1 when something failed at run time (a server, a tool), else 0.
fn exit_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub(super) fn load(ctx: &Context) -> anyhow::Result<Config> {
    Ok(ctx.load_config()?)
}

/// Starts the servers and reports the ones that failed on stderr (they stay out of stdout so
/// `--json` output remains one document).
pub(super) async fn start(
    ctx: &Context,
    config: &Config,
    only: Option<&str>,
) -> anyhow::Result<SessionManager> {
    if let Some(name) = only
        && config.server(name).is_none()
    {
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        let hint = config::nearest(name, &names)
            .map(|n| format!(" — did you mean `{n}`?"))
            .unwrap_or_default();
        return Err(UsageError(format!("no server named `{name}` in the config{hint}")).into());
    }
    if config.servers.is_empty() {
        return Err(UsageError(no_servers_hint(config)).into());
    }
    // Server requests are answered as in `ask` and `chat`: forms and sampling are asked at the
    // terminal when there is one, and sampling otherwise runs only for `[sampling]
    // auto_approve` servers.
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    super::sign_in_prompt::install_if_terminal();
    let forms = terminal.then(|| {
        std::sync::Arc::new(super::elicit_form::TerminalForms)
            as std::sync::Arc<dyn crate::chat::client::FormAsker>
    });
    let sampler = on_demand_sampler(ctx, config, terminal)?;
    let client = crate::chat::start::local_client(config, forms, ctx.global.accept_defaults);
    client.set_sampler(std::sync::Arc::new(sampler));
    let manager = SessionManager::start_with(config, only, client).await;
    if !ctx.global.json {
        for failure in manager.failures() {
            output::warn(&failure.error);
        }
    }
    Ok(manager)
}

/// Sampling for the commands that run no model of their own: the config's `[model]` (the same
/// one `ask` uses), loaded only when a server's request is let through by `[sampling]`.
fn on_demand_sampler(
    ctx: &Context,
    config: &Config,
    terminal: bool,
) -> anyhow::Result<crate::chat::sampling::Sampler> {
    use crate::chat::sampling::{Sampler, SamplingApprover, SamplingPolicy, SamplingSettings};
    let model = super::ask::model_config(ctx, &super::ask::ModelArgs::default())?;
    let settings = config.section::<crate::chat::ChatSettings>("chat")?;
    let policy = SamplingPolicy::new(config.section::<SamplingSettings>("sampling")?)
        .map_err(|e| crate::config::ConfigError::new(format!("[sampling]: {e}")))?;
    let approver = terminal.then(|| {
        std::sync::Arc::new(super::sampling_prompt::TerminalSamplingApprover)
            as std::sync::Arc<dyn SamplingApprover>
    });
    Ok(Sampler::on_demand(model, settings, policy, approver))
}

fn no_servers_hint(config: &Config) -> String {
    if config.sources.is_empty() {
        "no config file found: pass --config FILE, or create ./rkmcp.toml (see config/example.toml)"
            .into()
    } else {
        format!(
            "no servers configured in {}",
            config
                .sources
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

pub async fn config(ctx: &Context, cmd: ConfigCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ConfigCommand::Check => {
            let config = load(ctx)?;
            // The sections owned by the plugin host and the backends are checked by their types.
            config.section::<rkmcp_plugin_host::PluginsConfig>("plugins")?;
            config.section::<rkmcp_llm::ModelConfig>("model")?;
            let config = config.masked();
            if ctx.global.json {
                output::json(&config)?;
            } else {
                if config.sources.is_empty() {
                    println!("# no config file found; using defaults");
                }
                for source in &config.sources {
                    println!("# read {}", source.display());
                }
                println!("# config is valid; secrets are masked\n");
                print!("{}", toml::to_string_pretty(&config)?);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub async fn servers(ctx: &Context, cmd: ServersCommand) -> anyhow::Result<ExitCode> {
    let config = load(ctx)?;
    match cmd {
        ServersCommand::List => {
            if ctx.global.json {
                output::json(&config.masked().servers)?;
            } else {
                let mut t = output::table(&["name", "enabled", "transport", "target", "source"]);
                for s in &config.masked().servers {
                    let target = match &s.command {
                        Some(cmd) => std::iter::once(cmd.as_str())
                            .chain(s.args.iter().map(String::as_str))
                            .collect::<Vec<_>>()
                            .join(" "),
                        None => s.url.clone().unwrap_or_default(),
                    };
                    t.add_row(vec![
                        s.name.clone(),
                        if s.enabled { "yes" } else { "no" }.into(),
                        s.transport.to_string(),
                        target,
                        s.source.display().to_string(),
                    ]);
                }
                output::print_table(&t)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        ServersCommand::Status => {
            let manager = start(ctx, &config, None).await?;
            let mut rows = Vec::new();
            for s in manager.sessions() {
                let info = s.server_info();
                let catalog = s.catalog();
                // One check now, as the monitor makes every `health_interval`.
                let policy = crate::mcp::monitor::policy_for(s);
                let outcome = match s.ping().await {
                    Ok(latency) => crate::mcp::health::CheckOutcome::Answered(latency),
                    Err(e) => crate::mcp::health::CheckOutcome::Failed(e.to_string()),
                };
                s.update_health(|h| h.record(&policy, outcome));
                let health = s.health();
                rows.push(json!({
                    "name": s.name(),
                    "status": "up",
                    "protocol_version": info.as_ref().map(|i| i.protocol_version.to_string()),
                    "stateless": s.is_stateless(),
                    // Why `protocol = "auto"` settled on `initialize`, when it did.
                    "protocol_note": s.handshake().note(),
                    "server": info.as_ref().and_then(|i| i.server_info.as_ref()).map(|i| format!("{} {}", i.name, i.version)),
                    "tools": catalog.tools.len(),
                    "resources": catalog.resources.len(),
                    "resource_templates": catalog.resource_templates.len(),
                    "prompts": catalog.prompts.len(),
                    "startup_ms": s.startup.as_secs_f64() * 1000.0,
                    "log": s.log_path().map(|p| p.display().to_string()),
                    "health": health.health.as_str(),
                    "latency_ms": health.last_latency.map(|l| l.as_secs_f64() * 1000.0),
                    "restarts": health.restarts,
                    "health_error": health.last_error,
                }));
            }
            for f in manager.failures() {
                rows.push(json!({"name": f.server, "status": "failed", "error": f.error}));
            }
            for s in config.servers.iter().filter(|s| !s.enabled) {
                rows.push(json!({"name": s.name, "status": "disabled"}));
            }
            let failed = !manager.failures().is_empty();
            manager.shutdown().await;
            if ctx.global.json {
                output::json(&rows)?;
            } else {
                let mut t = output::table(&[
                    "name",
                    "status",
                    "server",
                    "protocol",
                    "tools",
                    "resources",
                    "prompts",
                    "startup",
                    "health",
                    "latency",
                    "restarts",
                ]);
                for r in &rows {
                    let s = |k: &str| match &r[k] {
                        Value::Null => String::new(),
                        Value::String(s) => s.clone(),
                        v => v.to_string(),
                    };
                    let status = match r["error"].as_str() {
                        Some(e) => format!("failed: {e}"),
                        None => s("status"),
                    };
                    t.add_row(vec![
                        s("name"),
                        status,
                        s("server"),
                        {
                            let mut protocol = s("protocol_version");
                            if r["stateless"].as_bool() == Some(true) {
                                protocol.push_str(" stateless");
                            }
                            if let Some(note) = r["protocol_note"].as_str() {
                                protocol.push_str(&format!(" ({note})"));
                            }
                            protocol
                        },
                        s("tools"),
                        s("resources"),
                        s("prompts"),
                        r["startup_ms"]
                            .as_f64()
                            .map(|ms| format!("{ms:.0} ms"))
                            .unwrap_or_default(),
                        s("health"),
                        r["latency_ms"]
                            .as_f64()
                            .map(|ms| format!("{ms:.1} ms"))
                            .unwrap_or_default(),
                        s("restarts"),
                    ]);
                }
                output::print_table(&t)?;
            }
            Ok(exit_code(failed))
        }
        ServersCommand::Ping { server } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let mut rows = Vec::new();
            for s in manager.sessions() {
                match s.ping().await {
                    Ok(rtt) => rows.push(
                        json!({"name": s.name(), "ok": true, "rtt_ms": rtt.as_secs_f64() * 1000.0}),
                    ),
                    Err(e) => {
                        rows.push(json!({"name": s.name(), "ok": false, "error": e.to_string()}))
                    }
                }
            }
            for f in manager.failures() {
                rows.push(json!({"name": f.server, "ok": false, "error": f.error}));
            }
            manager.shutdown().await;
            let failed = rows.iter().any(|r| r["ok"] == false);
            if ctx.global.json {
                output::json(&rows)?;
            } else {
                for r in &rows {
                    match r["rtt_ms"].as_f64() {
                        Some(ms) => {
                            println!("{}: pong in {ms:.2} ms", r["name"].as_str().unwrap_or(""))
                        }
                        None => println!(
                            "{}: FAILED: {}",
                            r["name"].as_str().unwrap_or(""),
                            r["error"].as_str().unwrap_or("")
                        ),
                    }
                }
            }
            Ok(exit_code(failed))
        }
    }
}

pub async fn tools(ctx: &Context, cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    let config = load(ctx)?;
    match cmd {
        ToolsCommand::List { server } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let (tools, collisions) = manager.tools();
            for c in &collisions {
                output::warn(c);
            }
            if ctx.global.json {
                let list: Vec<Value> = tools
                    .iter()
                    .map(|t| {
                        json!({
                            "name": t.name,
                            "server": t.server,
                            "tool": t.tool.name,
                            "description": t.tool.description,
                            "inputSchema": t.tool.input_schema,
                            "annotations": t.tool.annotations,
                        })
                    })
                    .collect();
                output::json(&json!({
                    "tools": list,
                    "collisions": collisions,
                    "failures": manager.failures(),
                }))?;
            } else {
                let mut t = output::table(&["name", "server", "description"]);
                for tool in &tools {
                    t.add_row(vec![
                        tool.name.clone(),
                        tool.server.clone(),
                        short(tool.tool.description.as_deref(), 80),
                    ]);
                }
                output::print_table(&t)?;
            }
            let failed = !manager.failures().is_empty();
            manager.shutdown().await;
            Ok(exit_code(failed))
        }
        ToolsCommand::Call { name, args, pairs } => {
            let only = name.split_once('/').map(|(s, _)| s.to_string());
            let manager = start(ctx, &config, only.as_deref()).await?;
            let result = async {
                let (session, tool) = manager.resolve_tool(&name).map_err(|e| match &e {
                    // The tool may well exist on a server that failed to start (a sign-in it
                    // needs, a crash): a run-time failure, not a mistyped name.
                    crate::mcp::ResolveError::Unknown { failed_servers, .. }
                        if !failed_servers.is_empty() =>
                    {
                        anyhow::anyhow!("{e}")
                    }
                    _ => UsageError(e.to_string()).into(),
                })?;
                let schema = session
                    .catalog()
                    .tools
                    .iter()
                    .find(|t| t.name == tool)
                    .map(|t| Value::Object((*t.input_schema).clone()));
                let arguments = match args {
                    Some(text) => Some(parse_json_object(&text)?),
                    None if pairs.is_empty() => None,
                    None => Some(parse_pairs(&pairs, schema.as_ref())?),
                };
                // A call that runs as a task shows its status on stderr; Ctrl-C cancels it.
                let mut events = session.subscribe();
                let shown = tokio::spawn(async move {
                    while let Ok(event) = events.recv().await {
                        if let crate::mcp::SessionEvent::Task { server, tool, task } = event {
                            eprintln!(
                                "{}",
                                super::turn_view::dim(&super::approve_prompt::printable(
                                    &super::tasks::status_line(&server, &tool, &task)
                                ))
                            );
                        }
                    }
                });
                let called = tokio::select! {
                    r = session.call_tool(&tool, arguments) => r.map_err(anyhow::Error::from),
                    _ = tokio::signal::ctrl_c() => {
                        // Dropping the call sent tasks/cancel for a running task.
                        crate::mcp::tasks::flush_cancels(std::time::Duration::from_secs(5)).await;
                        Err(anyhow::anyhow!("interrupted: the call (and its task) was cancelled"))
                    }
                };
                shown.abort();
                called
            }
            .await;
            manager.shutdown().await;
            let result = result?;
            let is_error = result.is_error.unwrap_or(false);
            if ctx.global.json {
                output::json(&result)?;
            } else {
                print_content(&serde_json::to_value(&result.content)?);
                if result.content.is_empty()
                    && let Some(structured) = &result.structured_content
                {
                    println!("{}", serde_json::to_string_pretty(structured)?);
                }
                if is_error {
                    output::warn(format!("tool `{name}` reported an error"));
                }
            }
            Ok(exit_code(is_error))
        }
    }
}

pub async fn resources(ctx: &Context, cmd: ResourcesCommand) -> anyhow::Result<ExitCode> {
    let config = load(ctx)?;
    match cmd {
        ResourcesCommand::List { server } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let mut resources = Vec::new();
            let mut templates = Vec::new();
            for s in manager.sessions() {
                let c = s.catalog();
                for r in c.resources.iter() {
                    resources.push((s.name().to_string(), r.clone()));
                }
                for t in c.resource_templates.iter() {
                    templates.push((s.name().to_string(), t.clone()));
                }
            }
            if ctx.global.json {
                let rs: Vec<Value> = resources
                    .iter()
                    .map(|(s, r)| with_server(s, r))
                    .collect::<anyhow::Result<_>>()?;
                let ts: Vec<Value> = templates
                    .iter()
                    .map(|(s, t)| with_server(s, t))
                    .collect::<anyhow::Result<_>>()?;
                output::json(
                    &json!({"resources": rs, "resourceTemplates": ts, "failures": manager.failures()}),
                )?;
            } else {
                let mut t = output::table(&["uri", "server", "name", "mime type"]);
                for (s, r) in &resources {
                    t.add_row(vec![
                        r.uri.clone(),
                        s.clone(),
                        r.name.clone(),
                        r.mime_type.clone().unwrap_or_default(),
                    ]);
                }
                for (s, tpl) in &templates {
                    t.add_row(vec![
                        format!("{} (template)", tpl.uri_template),
                        s.clone(),
                        tpl.name.clone(),
                        tpl.mime_type.clone().unwrap_or_default(),
                    ]);
                }
                output::print_table(&t)?;
            }
            manager.shutdown().await;
            Ok(ExitCode::SUCCESS)
        }
        ResourcesCommand::Read { uri, server } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let result = async {
                let session = match &server {
                    Some(name) => manager
                        .session(name)
                        .cloned()
                        .with_context(|| format!("server `{name}` is not running"))?,
                    None => pick_resource_server(&manager, &uri)?,
                };
                Ok::<_, anyhow::Error>(session.read_resource(&uri).await?)
            }
            .await;
            manager.shutdown().await;
            let result = result?;
            if ctx.global.json {
                output::json(&result)?;
            } else {
                print_content(&serde_json::to_value(&result.contents)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        ResourcesCommand::Watch {
            uri,
            server,
            read,
            count,
        } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let session = match &server {
                Some(name) => manager
                    .session(name)
                    .cloned()
                    .with_context(|| format!("server `{name}` is not running")),
                None => pick_resource_server(&manager, &uri),
            };
            let result = match session {
                Ok(session) => super::watch::watch(&session, &uri, read, count).await,
                Err(e) => Err(e),
            };
            manager.shutdown().await;
            result.map(|()| ExitCode::SUCCESS)
        }
    }
}

/// The server that lists `uri` (or has a template whose fixed prefix matches), else the only
/// server that offers resources at all.
pub(super) fn pick_resource_server(
    manager: &SessionManager,
    uri: &str,
) -> anyhow::Result<std::sync::Arc<crate::mcp::Session>> {
    for s in manager.sessions() {
        if s.catalog().resources.iter().any(|r| r.uri == uri) {
            return Ok(s.clone());
        }
    }
    for s in manager.sessions() {
        let matches = s.catalog().resource_templates.iter().any(|t| {
            let prefix = t.uri_template.split('{').next().unwrap_or("");
            !prefix.is_empty() && uri.starts_with(prefix)
        });
        if matches {
            return Ok(s.clone());
        }
    }
    let with_resources: Vec<_> = manager
        .sessions()
        .iter()
        .filter(|s| {
            s.server_info()
                .is_some_and(|i| i.capabilities.resources.is_some())
        })
        .collect();
    match with_resources.as_slice() {
        [only] => Ok((*only).clone()),
        _ => Err(UsageError(format!("no server lists `{uri}`; name one with --server")).into()),
    }
}

pub async fn prompts(ctx: &Context, cmd: PromptsCommand) -> anyhow::Result<ExitCode> {
    let config = load(ctx)?;
    match cmd {
        PromptsCommand::List { server } => {
            let manager = start(ctx, &config, server.as_deref()).await?;
            let mut prompts = Vec::new();
            for s in manager.sessions() {
                for p in s.catalog().prompts.iter() {
                    prompts.push((s.name().to_string(), p.clone()));
                }
            }
            if ctx.global.json {
                let ps: Vec<Value> = prompts
                    .iter()
                    .map(|(s, p)| with_server(s, p))
                    .collect::<anyhow::Result<_>>()?;
                output::json(&json!({"prompts": ps, "failures": manager.failures()}))?;
            } else {
                let mut t = output::table(&["name", "server", "arguments", "description"]);
                for (s, p) in &prompts {
                    let args = p
                        .arguments
                        .iter()
                        .flatten()
                        .map(|a| {
                            if a.required.unwrap_or(false) {
                                a.name.clone()
                            } else {
                                format!("[{}]", a.name)
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ");
                    t.add_row(vec![
                        p.name.clone(),
                        s.clone(),
                        args,
                        short(p.description.as_deref(), 60),
                    ]);
                }
                output::print_table(&t)?;
            }
            manager.shutdown().await;
            Ok(ExitCode::SUCCESS)
        }
        PromptsCommand::Get { name, pairs } => {
            let (server, prompt) = match name.split_once('/') {
                Some((s, p)) => (Some(s.to_string()), p.to_string()),
                None => (None, name.clone()),
            };
            let manager = start(ctx, &config, server.as_deref()).await?;
            let result = async {
                let owners: Vec<_> = manager
                    .sessions()
                    .iter()
                    .filter(|s| s.catalog().prompts.iter().any(|p| p.name == prompt))
                    .cloned()
                    .collect();
                let session = match owners.as_slice() {
                    [one] => one.clone(),
                    [] => anyhow::bail!(UsageError(format!(
                        "no server offers a prompt named `{prompt}`"
                    ))),
                    many => anyhow::bail!(UsageError(format!(
                        "prompt `{prompt}` is offered by {}; write SERVER/{prompt}",
                        many.iter()
                            .map(|s| s.name())
                            .collect::<Vec<_>>()
                            .join(" and ")
                    ))),
                };
                // Prompt arguments are strings by the spec.
                let mut args = Map::new();
                for pair in &pairs {
                    let (k, v) = split_pair(pair)?;
                    args.insert(k.to_string(), Value::String(v.to_string()));
                }
                let args = (!args.is_empty()).then_some(args);
                Ok(session.get_prompt(&prompt, args).await?)
            }
            .await;
            manager.shutdown().await;
            let result = result?;
            if ctx.global.json {
                output::json(&result)?;
            } else {
                if let Some(d) = &result.description {
                    println!("# {d}");
                }
                for m in &result.messages {
                    let v = serde_json::to_value(m)?;
                    println!("[{}]", v["role"].as_str().unwrap_or("?"));
                    print_content(&Value::Array(vec![v["content"].clone()]));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn with_server<T: serde::Serialize>(server: &str, item: &T) -> anyhow::Result<Value> {
    let mut v = serde_json::to_value(item)?;
    if let Value::Object(m) = &mut v {
        m.insert("server".into(), Value::String(server.to_string()));
    }
    Ok(v)
}

/// Prints MCP content items for a person: text as is, binary content described, not dumped.
fn print_content(items: &Value) {
    let text = content_text(items);
    if !text.is_empty() {
        println!("{text}");
    }
}

/// MCP content items (tool results, resource contents, prompt messages) as text for a person or
/// the model: text as is, binary content described by type and size, never dumped.
pub(crate) fn content_text(items: &Value) -> String {
    let Some(items) = items.as_array() else {
        return String::new();
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        // Resource contents (resources/read) have no `type`; content blocks do.
        let kind = item["type"]
            .as_str()
            .unwrap_or(if item.get("text").is_some() {
                "text"
            } else {
                "blob"
            });
        out.push(match kind {
            "text" => item["text"].as_str().unwrap_or("").to_string(),
            "image" | "audio" => format!(
                "[{kind}: {}, {} bytes base64]",
                item["mimeType"].as_str().unwrap_or("?"),
                item["data"].as_str().map_or(0, str::len)
            ),
            "resource" => {
                let r = &item["resource"];
                match r["text"].as_str() {
                    Some(text) => {
                        format!("[resource {}]\n{text}", r["uri"].as_str().unwrap_or("?"))
                    }
                    None => format!(
                        "[resource {}: {}, {} bytes base64]",
                        r["uri"].as_str().unwrap_or("?"),
                        r["mimeType"].as_str().unwrap_or("?"),
                        r["blob"].as_str().map_or(0, str::len)
                    ),
                }
            }
            "resource_link" => format!(
                "[link {} {}]",
                item["uri"].as_str().unwrap_or("?"),
                item["name"].as_str().unwrap_or("")
            ),
            "blob" => format!(
                "[{}: {}, {} bytes base64]",
                item["uri"].as_str().unwrap_or("?"),
                item["mimeType"].as_str().unwrap_or("?"),
                item["blob"].as_str().map_or(0, str::len)
            ),
            other => format!("[{other} content] {item}"),
        });
    }
    out.join("\n")
}

fn parse_json_object(text: &str) -> anyhow::Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(UsageError(format!(
            "--args must be a JSON object like '{{\"message\": \"hi\"}}', not {other}"
        ))
        .into()),
        Err(e) => Err(UsageError(format!("--args is not valid JSON: {e}")).into()),
    }
}

pub(crate) fn split_pair(pair: &str) -> anyhow::Result<(&str, &str)> {
    match pair.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k, v)),
        _ => Err(UsageError(format!("`{pair}` is not KEY=VALUE")).into()),
    }
}

/// `key=value` pairs into tool arguments. A value is JSON when it parses as JSON, unless the
/// tool's schema says the property is a string (so `zip=02139` stays "02139").
pub fn parse_pairs(pairs: &[String], schema: Option<&Value>) -> anyhow::Result<Map<String, Value>> {
    let mut map = Map::new();
    for pair in pairs {
        let (k, v) = split_pair(pair)?;
        let declared = schema
            .and_then(|s| s["properties"][k]["type"].as_str())
            .unwrap_or("");
        let value = if declared == "string" {
            Value::String(v.to_string())
        } else {
            serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()))
        };
        map.insert(k.to_string(), value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_follow_the_schema() {
        let schema = json!({"properties": {"zip": {"type": "string"}, "n": {"type": "number"}}});
        let m = parse_pairs(
            &[
                "zip=02139".into(),
                "n=5".into(),
                "flag=true".into(),
                "s=hello world".into(),
            ],
            Some(&schema),
        )
        .unwrap();
        assert_eq!(m["zip"], json!("02139"));
        assert_eq!(m["n"], json!(5));
        assert_eq!(m["flag"], json!(true));
        assert_eq!(m["s"], json!("hello world"));
        assert!(parse_pairs(&["novalue".into()], None).is_err());
    }
}
