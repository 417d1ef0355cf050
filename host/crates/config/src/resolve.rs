//! Resolving the merged file layers into a [`Config`]: defaults applied, every server's
//! transport inferred and validated, errors positioned at the entry that caused them.
use super::raw::RawServer;
use super::server::*;
use super::*;

pub(super) fn resolve(layers: Vec<(PathBuf, RawConfig)>) -> Result<Config, ConfigError> {
    let mut config = Config {
        sources: layers.iter().map(|(p, _)| p.clone()).collect(),
        log_dir: dirs::state_dir()
            .or_else(dirs::cache_dir)
            .unwrap_or_else(std::env::temp_dir)
            .join("rkmcp")
            .join("logs"),
        ..Config::default()
    };
    let mut connect_default = DEFAULT_CONNECT_TIMEOUT;
    let mut request_default = DEFAULT_REQUEST_TIMEOUT;
    let mut discover_default = DEFAULT_DISCOVER_TIMEOUT;
    let mut health_default = DEFAULT_HEALTH_INTERVAL;
    let mut restarts_default = DEFAULT_MAX_RESTARTS;
    let mut prefix_default = DEFAULT_PREFIX.to_string();
    let mut max_message_default = DEFAULT_MAX_MESSAGE_MB;
    // Servers by name in first-seen order; a later layer replaces an entry wholesale.
    let mut servers: Vec<(PathBuf, String, RawServer)> = Vec::new();
    for (path, raw) in layers {
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(dir) = raw.log_dir {
            config.log_dir = base.join(dir);
        }
        let defaults_key = |key: &str| format!("{}: `defaults.{key}`", path.display());
        if let Some(d) = &raw.defaults.connect_timeout {
            connect_default = d.to_duration().map_err(|e| {
                ConfigError::new(format!("{}: {e}", defaults_key("connect_timeout")))
            })?;
        }
        if let Some(d) = &raw.defaults.request_timeout {
            request_default = d.to_duration().map_err(|e| {
                ConfigError::new(format!("{}: {e}", defaults_key("request_timeout")))
            })?;
        }
        if let Some(d) = &raw.defaults.discover_timeout {
            discover_default = d.to_duration().and_then(discover_timeout).map_err(|e| {
                ConfigError::new(format!("{}: {e}", defaults_key("discover_timeout")))
            })?;
        }
        if let Some(d) = &raw.defaults.health_interval {
            health_default = d.to_duration().map_err(|e| {
                ConfigError::new(format!("{}: {e}", defaults_key("health_interval")))
            })?;
        }
        if let Some(n) = raw.defaults.max_restarts {
            restarts_default = n;
        }
        if let Some(p) = raw.defaults.prefix {
            prefix_default = p;
        }
        if let Some(mb) = raw.defaults.max_message_mb {
            max_message_default = positive_mb(mb).map_err(|e| {
                ConfigError::new(format!("{}: {e}", defaults_key("max_message_mb")))
            })?;
        }
        merge_tables(&mut config.audit, raw.audit);
        merge_tables(&mut config.plugins, raw.plugins);
        merge_tables(&mut config.model, raw.model);
        merge_tables(&mut config.chat, raw.chat);
        merge_tables(&mut config.sampling, raw.sampling);
        merge_tables(&mut config.serve, raw.serve);
        if let Some(roots) = raw.roots {
            config.roots = roots.paths.iter().map(|p| base.join(p)).collect();
        }
        let mut seen_here = Vec::new();
        for (index, server) in raw.servers.into_iter().enumerate() {
            let Some(name) = server.name.clone() else {
                return Err(located(
                    &path,
                    &server,
                    index,
                    "a server needs a `name`".into(),
                ));
            };
            if !valid_server_name(&name) {
                return Err(located(
                    &path,
                    &server,
                    index,
                    format!(
                        "server name `{name}` may only use letters, digits, `-` and `_` (it becomes part of tool names)"
                    ),
                ));
            }
            if seen_here.contains(&name) {
                return Err(located(
                    &path,
                    &server,
                    index,
                    format!("server `{name}` is defined twice in this file"),
                ));
            }
            seen_here.push(name.clone());
            match servers.iter_mut().find(|(_, n, _)| *n == name) {
                Some(slot) => *slot = (path.clone(), name, server),
                None => servers.push((path.clone(), name, server)),
            }
        }
    }
    for (index, (path, name, raw)) in servers.into_iter().enumerate() {
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let err = |msg: String| located(&path, &raw, index, format!("server `{name}`: {msg}"));
        let transport = match raw.transport.as_deref() {
            Some(t) => parse_transport(t).map_err(&err)?,
            None if raw.command.is_some() => TransportKind::Stdio,
            None if raw.url.is_some() => TransportKind::Auto,
            None => {
                return Err(err(
                    "needs either `command` (a stdio server) or `url` (an HTTP server)".into(),
                ));
            }
        };
        match &transport {
            TransportKind::Stdio if raw.command.is_none() => {
                return Err(err("transport `stdio` needs a `command`".into()));
            }
            TransportKind::Http | TransportKind::Sse | TransportKind::Auto if raw.url.is_none() => {
                return Err(err(format!("transport `{transport}` needs a `url`")));
            }
            _ => {}
        }
        if let Some(url) = &raw.url
            && !(url.starts_with("http://") || url.starts_with("https://"))
            && matches!(
                transport,
                TransportKind::Http | TransportKind::Sse | TransportKind::Auto
            )
        {
            return Err(err(format!(
                "`url` must start with http:// or https://, not `{url}`"
            )));
        }
        for pattern in raw.allow.iter().chain(&raw.deny) {
            globset::Glob::new(pattern)
                .map_err(|e| err(format!("`{pattern}` is not a valid glob: {e}")))?;
        }
        let connect_timeout = match &raw.connect_timeout {
            Some(d) => d
                .to_duration()
                .map_err(|e| err(format!("`connect_timeout`: {e}")))?,
            None => connect_default,
        };
        let request_timeout = match &raw.request_timeout {
            Some(d) => d
                .to_duration()
                .map_err(|e| err(format!("`request_timeout`: {e}")))?,
            None => request_default,
        };
        let discover_timeout = match &raw.discover_timeout {
            Some(d) => d
                .to_duration()
                .and_then(discover_timeout)
                .map_err(|e| err(format!("`discover_timeout`: {e}")))?,
            None => discover_default,
        };
        let max_message_mb = match raw.max_message_mb {
            Some(mb) => positive_mb(mb).map_err(|e| err(format!("`max_message_mb`: {e}")))?,
            None => max_message_default,
        };
        let auth = match &raw.auth {
            Some(a) if matches!(transport, TransportKind::Stdio) => {
                let _ = a;
                return Err(err(
                    "`[servers.auth]` is for remote (`url`) servers; a stdio server gets credentials through `env`".into(),
                ));
            }
            Some(a) => Some(auth::resolve_auth(a, &base).map_err(&err)?),
            None => None,
        };
        let health_interval = match &raw.health_interval {
            Some(d) => d
                .to_duration()
                .map_err(|e| err(format!("`health_interval`: {e}")))?,
            None => health_default,
        };
        let protocol = match raw.protocol.as_deref() {
            Some(text) => parse_protocol(text).map_err(&err)?,
            None => Protocol::Auto,
        };
        let log_level = raw
            .log_level
            .as_deref()
            .map(parse_log_level)
            .transpose()
            .map_err(&err)?;
        let prefix = raw
            .prefix
            .clone()
            .unwrap_or_else(|| prefix_default.clone())
            .replace("{server}", &name);
        config.servers.push(ServerConfig {
            enabled: raw.enabled.unwrap_or(true),
            transport,
            command: raw.command.clone(),
            args: raw.args.clone(),
            env: raw.env.clone(),
            cwd: raw.cwd.as_ref().map(|c| base.join(c)),
            url: raw.url.clone(),
            headers: raw.headers.clone(),
            connect_timeout,
            request_timeout,
            discover_timeout,
            health_interval,
            max_restarts: raw.max_restarts.unwrap_or(restarts_default),
            allow: raw.allow.clone(),
            deny: raw.deny.clone(),
            prefix,
            auth,
            protocol,
            log_level,
            source: path.clone(),
            name,
            max_message_mb,
        });
    }
    Ok(config)
}
/// An error about one server entry, positioned at the entry (its `name` line for TOML).
pub(super) fn located(
    path: &Path,
    server: &RawServer,
    index: usize,
    message: String,
) -> ConfigError {
    let (line, col) = server.line.unwrap_or((1, 1));
    ConfigError::at(path, line, col, Some(format!("servers[{index}]")), message)
}

pub(super) fn merge_tables(into: &mut toml::Table, from: Option<toml::Table>) {
    let Some(from) = from else { return };
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge_tables(a, Some(b)),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}
