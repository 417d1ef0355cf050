//! Configuration: where it is looked for, how files are merged, and the resolved [`Config`].
//!
//! Lookup: `--config FILE` (or `RKMCP_CONFIG`), else the workspace's `./rkmcp.toml` or
//! `./.rkmcp/config.toml`; that file is merged over the user's `$XDG_CONFIG_HOME/rkmcp/config.toml`.
//! Servers merge by name (the later file's entry replaces the earlier one); other settings are
//! overridden key by key.
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod auth;
mod file;
mod raw;
pub mod subst;

pub use auth::{AuthConfig, Grant, SigningAlgorithm, TokenEndpointAuth};
pub use file::{Format, nearest};
use raw::{RawConfig, RawServer};

/// A configuration mistake (exit code 2). The message names the file, position and key.
#[derive(Debug, Clone)]
pub struct ConfigError {
    message: String,
}

impl ConfigError {
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError {
            message: message.into(),
        }
    }

    pub fn at(path: &Path, line: usize, col: usize, key: Option<String>, message: String) -> Self {
        let key = match key {
            Some(k) if !k.is_empty() && k != "." => format!(" at `{k}`"),
            _ => String::new(),
        };
        ConfigError::new(format!("{}:{line}:{col}{key}: {message}", path.display()))
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "config error: {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// How rkmcp talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportKind {
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
    /// Streamable HTTP, falling back to legacy HTTP+SSE when the server refuses the POST
    /// (the spec's backwards-compatibility procedure). The default for `url` servers.
    Auto,
    /// A WebAssembly transport plugin, `plugin:<name>`.
    Plugin(String),
}

impl serde::Serialize for TransportKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportKind::Stdio => f.write_str("stdio"),
            TransportKind::Http => f.write_str("http"),
            TransportKind::Sse => f.write_str("sse"),
            TransportKind::Auto => f.write_str("auto"),
            TransportKind::Plugin(name) => write!(f, "plugin:{name}"),
        }
    }
}

pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Tool names the model sees are `<server>__<tool>` unless configured otherwise.
pub const DEFAULT_PREFIX: &str = "{server}__";
/// The largest message accepted from a server, as rmcp's stdio and HTTP transports default to.
pub const DEFAULT_MAX_MESSAGE_MB: f64 = 16.0;

/// One MCP server, resolved: defaults applied, transport known, validated.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerConfig {
    pub name: String,
    pub enabled: bool,
    pub transport: TransportKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(with = "duration_secs")]
    pub connect_timeout: Duration,
    #[serde(with = "duration_secs")]
    pub request_timeout: Duration,
    /// How often the server is checked (`ping`); see [`crate::mcp::health`].
    #[serde(with = "duration_secs")]
    pub health_interval: Duration,
    /// Restarts of a server that went down before rkmcp gives up on it.
    pub max_restarts: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// The prefix put before this server's tool names (already expanded).
    pub prefix: String,
    /// `[servers.auth]`: how to sign in (remote servers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthConfig>,
    /// Which protocol version to speak.
    pub protocol: Protocol,
    /// The level asked for with `logging/setLevel` (one of [`LOG_LEVELS`]), where the
    /// negotiated version has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// The file this entry came from.
    pub source: PathBuf,
    /// The largest message accepted from the server, in MB.
    pub max_message_mb: f64,
}

impl ServerConfig {
    /// [`ServerConfig::max_message_mb`] in bytes.
    pub fn max_message_bytes(&self) -> usize {
        (self.max_message_mb * 1024.0 * 1024.0) as usize
    }
}

/// The MCP protocol versions rkmcp speaks, newest first (checked against rmcp's list in
/// `mcp::negotiate`).
pub const PROTOCOL_VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// `logging/setLevel` levels (RFC 5424 names, as MCP spells them).
pub const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A server's `protocol` setting.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Try 2026-07-28 (`server/discover`), fall back to `initialize` and older versions.
    #[default]
    Auto,
    /// Speak exactly this version (one of [`PROTOCOL_VERSIONS`]).
    Version(String),
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Protocol::Auto => f.write_str("auto"),
            Protocol::Version(v) => f.write_str(v),
        }
    }
}

impl serde::Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

fn parse_protocol(text: &str) -> Result<Protocol, String> {
    if text == "auto" {
        return Ok(Protocol::Auto);
    }
    if PROTOCOL_VERSIONS.contains(&text) {
        return Ok(Protocol::Version(text.to_string()));
    }
    let mut valid = vec!["auto"];
    valid.extend_from_slice(PROTOCOL_VERSIONS);
    let hint = nearest(text, &valid)
        .map(|t| format!(" — did you mean `{t}`?"))
        .unwrap_or_default();
    Err(format!(
        "`protocol = \"{text}\"` is not a protocol version rkmcp speaks{hint} (valid: {})",
        valid.join(", ")
    ))
}

fn parse_log_level(text: &str) -> Result<String, String> {
    let lower = text.to_ascii_lowercase();
    if LOG_LEVELS.contains(&lower.as_str()) {
        return Ok(lower);
    }
    let hint = nearest(&lower, LOG_LEVELS)
        .map(|t| format!(" — did you mean `{t}`?"))
        .unwrap_or_default();
    Err(format!(
        "`log_level = \"{text}\"` is not a log level{hint} (valid: {})",
        LOG_LEVELS.join(", ")
    ))
}

mod duration_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// The resolved configuration.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Config {
    /// Files read, lowest precedence first.
    pub sources: Vec<PathBuf>,
    pub servers: Vec<ServerConfig>,
    pub log_dir: PathBuf,
    /// `[plugins]` as written (interpreted by the plugin host).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub plugins: toml::Table,
    /// `[model]` as written (interpreted by the LLM backends).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub model: toml::Table,
    /// `[chat]` as written (interpreted by the chat loop).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub chat: toml::Table,
    /// `[audit]` as written (interpreted by [`crate::audit`]).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub audit: toml::Table,
    /// `[sampling]` as written (see `chat::sampling::SamplingSettings`).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub sampling: toml::Table,
    /// `[serve]` as written (see `serve::ServeSettings`).
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    pub serve: toml::Table,
    /// `[roots] paths`, made absolute from the config file's folder; empty means the current
    /// directory. Checked when the roots are built (`mcp::Roots::resolve`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<PathBuf>,
}

impl Config {
    /// Interprets a table owned by a library crate (`plugins`, `model` or `chat`) as `T`.
    /// Errors name the table, the key path and the files it was merged from.
    pub fn section<T: serde::de::DeserializeOwned + Default>(
        &self,
        name: &str,
    ) -> Result<T, ConfigError> {
        let table = match name {
            "plugins" => &self.plugins,
            "model" => &self.model,
            "chat" => &self.chat,
            "audit" => &self.audit,
            "sampling" => &self.sampling,
            "serve" => &self.serve,
            other => return Err(ConfigError::new(format!("no config section `{other}`"))),
        };
        if table.is_empty() {
            return Ok(T::default());
        }
        serde_path_to_error::deserialize(toml::Value::Table(table.clone())).map_err(|err| {
            let key = err.path().to_string();
            let files = self
                .sources
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let message = file::explain(&err.into_inner().to_string());
            let at = if key.is_empty() || key == "." {
                format!("[{name}]")
            } else {
                format!("{name}.{key}")
            };
            ConfigError::new(format!("{files}: at `{at}`: {message}"))
        })
    }

    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    pub fn enabled_servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|s| s.enabled)
    }

    /// The same config with secret-looking env values and headers replaced by `***`, for display.
    pub fn masked(&self) -> Config {
        let mut out = self.clone();
        for server in &mut out.servers {
            for (key, value) in server.env.iter_mut().chain(server.headers.iter_mut()) {
                if looks_secret(key) {
                    *value = "***".into();
                }
            }
            mask_secret_args(&mut server.args);
            if let Some(url) = &mut server.url {
                *url = mask_url_credentials(url);
            }
        }
        out
    }
}

fn looks_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "auth",
        "credential",
        "cookie",
        "session",
    ]
    .iter()
    .any(|w| key.contains(w))
}

/// Masks `--api-key=…` and the value after `--token`, `--password`, ….
fn mask_secret_args(args: &mut [String]) {
    let mut mask_next = false;
    for arg in args.iter_mut() {
        if mask_next {
            *arg = "***".into();
            mask_next = false;
            continue;
        }
        if let Some(flag) = arg.strip_prefix('-') {
            match flag.split_once('=') {
                Some((name, _)) if looks_secret(name) => *arg = format!("-{name}=***"),
                None if looks_secret(flag) => mask_next = true,
                _ => {}
            }
        }
    }
}

fn mask_url_credentials(url: &str) -> String {
    // scheme://user:pass@host → scheme://***@host
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((_creds, host)) = rest.split_once('@')
        && !rest[..rest.find('/').unwrap_or(rest.len())].is_empty()
        && rest.find('@') < rest.find('/').or(Some(usize::MAX))
    {
        return format!("{scheme}://***@{host}");
    }
    url.to_string()
}

/// Where config files are looked for.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    /// `--config FILE`.
    pub explicit: Option<PathBuf>,
    /// The workspace directory (the current directory).
    pub workspace: PathBuf,
    /// The user's config file, if it should be read.
    pub user: Option<PathBuf>,
}

impl Locations {
    pub fn from_env(explicit: Option<PathBuf>) -> Locations {
        Locations {
            explicit,
            workspace: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            user: dirs::config_dir().map(|d| d.join("rkmcp").join("config.toml")),
        }
    }

    /// The files that will be read, lowest precedence first.
    pub fn files(&self) -> Result<Vec<PathBuf>, ConfigError> {
        let mut files = Vec::new();
        if let Some(user) = &self.user
            && user.is_file()
        {
            files.push(user.clone());
        }
        if let Some(explicit) = &self.explicit {
            if !explicit.is_file() {
                return Err(ConfigError::new(format!(
                    "config file {} does not exist (given with --config or RKMCP_CONFIG)",
                    explicit.display()
                )));
            }
            files.push(explicit.clone());
        } else {
            for candidate in [
                self.workspace.join("rkmcp.toml"),
                self.workspace.join(".rkmcp").join("config.toml"),
            ] {
                if candidate.is_file() {
                    files.push(candidate);
                    break;
                }
            }
        }
        Ok(files)
    }
}

/// Loads the configuration for the CLI's global flags.
pub fn load(global: &crate::cli::GlobalArgs) -> Result<Config, ConfigError> {
    let mut config = load_from(&Locations::from_env(global.config.clone()))?;
    if let Some(path) = &global.audit {
        config.audit.insert(
            "path".into(),
            toml::Value::String(path.display().to_string()),
        );
    }
    Ok(config)
}

pub fn load_from(locations: &Locations) -> Result<Config, ConfigError> {
    let files = locations.files()?;
    let mut layers = Vec::new();
    for path in &files {
        layers.push((path.clone(), file::read(path)?));
    }
    resolve(layers)
}

/// Parses config text as if it were the file `path` (for tests and `config check -`).
pub fn load_str(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let raw = file::parse(path, text, Format::of(path))?;
    resolve(vec![(path.to_path_buf(), raw)])
}

fn resolve(layers: Vec<(PathBuf, RawConfig)>) -> Result<Config, ConfigError> {
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
    let mut health_default = crate::mcp::health::HealthPolicy::default().interval;
    let mut restarts_default = crate::mcp::health::HealthPolicy::default().max_restarts;
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

fn positive_mb(mb: f64) -> Result<f64, String> {
    if mb.is_finite() && mb > 0.0 {
        Ok(mb)
    } else {
        Err(format!("must be a positive number of megabytes, not {mb}"))
    }
}

fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

const TRANSPORTS: &[&str] = &["stdio", "http", "sse", "auto", "plugin:<name>"];

fn parse_transport(text: &str) -> Result<TransportKind, String> {
    match text {
        "stdio" => Ok(TransportKind::Stdio),
        // `streamable-http` / `streamableHttp` are how other clients spell it.
        "http" | "streamable-http" | "streamableHttp" | "streamable_http" => {
            Ok(TransportKind::Http)
        }
        "sse" => Ok(TransportKind::Sse),
        "auto" => Ok(TransportKind::Auto),
        other => match other.strip_prefix("plugin:") {
            Some(name) if !name.is_empty() => Ok(TransportKind::Plugin(name.to_string())),
            _ => {
                let hint = nearest(other, TRANSPORTS)
                    .map(|t| format!(" — did you mean `{t}`?"))
                    .unwrap_or_default();
                Err(format!(
                    "unknown transport `{other}`{hint} (valid: {})",
                    TRANSPORTS.join(", ")
                ))
            }
        },
    }
}

/// An error about one server entry, positioned at the entry (its `name` line for TOML).
fn located(path: &Path, server: &RawServer, index: usize, message: String) -> ConfigError {
    let (line, col) = server.line.unwrap_or((1, 1));
    ConfigError::at(path, line, col, Some(format!("servers[{index}]")), message)
}

fn merge_tables(into: &mut toml::Table, from: Option<toml::Table>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Config, ConfigError> {
        load_str(Path::new("/cfg/rkmcp.toml"), text)
    }

    #[test]
    fn seed_form_infers_transport_and_applies_defaults() {
        let c = load(
            r#"
[[servers]]
name = "time"
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]

[[servers]]
name = "web"
url = "http://127.0.0.1:3000/mcp"
request_timeout = "2s"
prefix = ""
"#,
        )
        .unwrap();
        assert_eq!(c.servers[0].transport, TransportKind::Stdio);
        assert_eq!(c.servers[0].prefix, "time__");
        assert_eq!(c.servers[0].request_timeout, DEFAULT_REQUEST_TIMEOUT);
        assert_eq!(c.servers[1].transport, TransportKind::Auto);
        assert_eq!(c.servers[1].request_timeout, Duration::from_secs(2));
        assert_eq!(c.servers[1].prefix, "");
    }

    #[test]
    fn protocol_log_level_and_roots() {
        let c = load(
            "[roots]\npaths = [\"work\", \"/abs\"]\n[[servers]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"2025-06-18\"\nlog_level = \"Warning\"\n[[servers]]\nname = \"b\"\ncommand = \"x\"\n",
        )
        .unwrap();
        assert_eq!(
            c.servers[0].protocol,
            Protocol::Version("2025-06-18".into())
        );
        assert_eq!(c.servers[0].log_level.as_deref(), Some("warning"));
        assert_eq!(c.servers[1].protocol, Protocol::Auto);
        assert_eq!(c.roots, [PathBuf::from("/cfg/work"), PathBuf::from("/abs")]);
        let err = load("[[servers]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"2025-11-52\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("did you mean `2025-11-25`?"), "{err}");
        assert!(err.contains("server `a`"), "{err}");
        let err = load("[[servers]]\nname = \"a\"\ncommand = \"x\"\nlog_level = \"verbose\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a log level"), "{err}");
    }

    #[test]
    fn typo_in_key_names_position_and_suggests() {
        let err = load("[[servers]]\nname = \"a\"\ncomand = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/cfg/rkmcp.toml:3:1"), "{err}");
        assert!(err.contains("servers[0].comand"), "{err}");
        assert!(err.contains("did you mean `command`?"), "{err}");
    }

    #[test]
    fn unknown_transport_suggests() {
        let err = load("[[servers]]\nname = \"a\"\ntransport = \"stdoi\"\ncommand = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("did you mean `stdio`?"), "{err}");
        assert!(err.contains(":2:1"), "{err}");
    }

    #[test]
    fn masks_secrets() {
        let c = load(
            r#"
[[servers]]
name = "a"
command = "x"
args = ["--api-key", "sekrit", "--token=abc", "--port", "3"]
env = { GITHUB_TOKEN = "ghp_1", PATH = "/bin" }
"#,
        )
        .unwrap()
        .masked();
        let s = &c.servers[0];
        assert_eq!(s.env["GITHUB_TOKEN"], "***");
        assert_eq!(s.env["PATH"], "/bin");
        assert_eq!(s.args, ["--api-key", "***", "--token=***", "--port", "3"]);
    }

    #[test]
    fn later_layer_replaces_server_by_name() {
        let a = file::parse(
            Path::new("/u/config.toml"),
            "[[servers]]\nname = \"x\"\ncommand = \"old\"\n[[servers]]\nname = \"y\"\ncommand = \"y\"\n",
            Format::Toml,
        )
        .unwrap();
        let b = file::parse(
            Path::new("/w/rkmcp.toml"),
            "[[servers]]\nname = \"x\"\ncommand = \"new\"\n",
            Format::Toml,
        )
        .unwrap();
        let c = resolve(vec![
            ("/u/config.toml".into(), a),
            ("/w/rkmcp.toml".into(), b),
        ])
        .unwrap();
        assert_eq!(c.servers.len(), 2);
        assert_eq!(c.servers[0].command.as_deref(), Some("new"));
        assert_eq!(c.servers[0].source, PathBuf::from("/w/rkmcp.toml"));
    }

    #[test]
    fn claude_desktop_json_is_read_unchanged() {
        let c = load_str(
            Path::new("/cfg/claude_desktop_config.json"),
            r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
    "remote": { "type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"} },
    "off": { "command": "x", "disabled": true }
  }
}"#,
        )
        .unwrap();
        assert_eq!(c.servers.len(), 3);
        let fs = c.server("fs").unwrap();
        assert_eq!(fs.transport, TransportKind::Stdio);
        assert_eq!(c.server("remote").unwrap().transport, TransportKind::Http);
        assert!(!c.server("off").unwrap().enabled);
    }

    #[test]
    fn vscode_json_servers_form() {
        let c = load_str(
            Path::new("/cfg/mcp.json"),
            r#"{ "servers": { "time": { "type": "stdio", "command": "mcp-server-time" } }, "inputs": [] }"#,
        )
        .unwrap();
        assert_eq!(c.servers[0].name, "time");
    }

    #[test]
    fn json_typo_is_positioned() {
        let err = load_str(
            Path::new("/cfg/mcp.json"),
            "{\n  \"mcpServers\": {\n    \"a\": { \"comand\": \"x\" }\n  }\n}",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/cfg/mcp.json:3:"), "{err}");
        assert!(err.contains("did you mean `command`?"), "{err}");
    }

    #[test]
    fn servers_auth_is_resolved_and_its_secret_never_serialized() {
        let c = load(
            r#"
[[servers]]
name = "ci"
url = "https://ci.example.com/mcp"
[servers.auth]
grant = "client_credentials"
client_id = "rkmcp-ci"
client_secret = "s3cr3t-value"
token_endpoint_auth_method = "client_secret_basic"
scopes = ["mcp:tools"]
"#,
        )
        .unwrap();
        let auth = c.servers[0].auth.clone().unwrap();
        assert_eq!(auth.grant, Grant::ClientCredentials);
        assert_eq!(auth.client_secret.as_deref(), Some("s3cr3t-value"));
        assert_eq!(
            auth.token_endpoint_auth_method,
            Some(TokenEndpointAuth::ClientSecretBasic)
        );
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("s3cr3t-value"), "{json}");
        assert!(json.contains("\"client_secret\":\"***\""), "{json}");
    }

    #[test]
    fn enterprise_and_key_settings_never_serialize_secrets() {
        let c = load(
            r#"
[[servers]]
name = "corp"
url = "https://corp.example.com/mcp"
[servers.auth]
grant = "enterprise_managed"
client_id = "rkmcp"
client_secret = "as-s3cret"
idp_token_endpoint = "https://idp.example.com/token"
idp_client_id = "rkmcp-at-idp"
idp_client_secret = "idp-s3cret"
assertion_env = "CORP_ID_TOKEN"
"#,
        )
        .unwrap();
        let auth = c.servers[0].auth.clone().unwrap();
        assert_eq!(auth.grant, Grant::EnterpriseManaged);
        assert_eq!(auth.idp_client_secret.as_deref(), Some("idp-s3cret"));
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("s3cret"), "{json}");
        assert!(json.contains("\"idp_client_secret\":\"***\""), "{json}");
        assert!(
            json.contains("\"assertion_env\":\"CORP_ID_TOKEN\""),
            "{json}"
        );
    }

    #[test]
    fn servers_auth_mistakes_are_named() {
        let cases = [
            (
                "grant = \"client_credential\"",
                "did you mean `client_credentials`?",
            ),
            (
                "grant = \"client_credentials\"\nclient_id = \"x\"",
                "needs `auth.client_id` and `auth.client_secret`",
            ),
            ("client_secret = \"x\"", "needs `auth.client_id`"),
            (
                "client_metadata_url = \"http://x/y.json\"",
                "must be an https:// URL",
            ),
            (
                "bearer_token_env = \"MY TOKEN\"",
                "names an environment variable",
            ),
            (
                "token_endpoint_auth_method = \"private_key_jwt\"",
                "needs `auth.private_key_file`",
            ),
            (
                "token_endpoint_auth_method = \"tls_client_auth\"",
                "not supported",
            ),
            (
                "client_id = \"c\"\nprivate_key_file = \"/nonexistent/k.pem\"",
                "`auth.private_key_file`: cannot read /nonexistent/k.pem",
            ),
            (
                "private_key_file = \"/nonexistent/k.pem\"",
                "`auth.private_key_file` needs `auth.client_id`",
            ),
            (
                "client_id = \"c\"\nprivate_key_file = \"k.pem\"\nprivate_key_algorithm = \"HS256\"",
                "`auth.private_key_algorithm`: `HS256` is not a supported signing algorithm",
            ),
            (
                "grant = \"jwt_bearer\"",
                "needs `auth.assertion_file` or `auth.assertion_env`",
            ),
            (
                "grant = \"jwt_bearer\"\nassertion_env = \"A B\"",
                "`auth.assertion_env` names an environment variable",
            ),
            (
                "assertion_file = \"a.jwt\"",
                "are for `grant = \"jwt_bearer\"` or `\"enterprise_managed\"`",
            ),
            (
                "grant = \"enterprise_managed\"\nclient_id = \"c\"\nassertion_file = \"id.jwt\"",
                "needs `auth.idp_token_endpoint`",
            ),
            (
                "idp_token_endpoint = \"https://idp/token\"",
                "are for `grant = \"enterprise_managed\"`",
            ),
        ];
        for (auth, expected) in cases {
            let err = load(&format!(
                "[[servers]]\nname = \"w\"\nurl = \"https://w.example/mcp\"\n[servers.auth]\n{auth}\n"
            ))
            .unwrap_err()
            .to_string();
            assert!(err.contains(expected), "{auth}: {err}");
            assert!(err.contains("server `w`"), "{err}");
        }
        let err =
            load("[[servers]]\nname = \"s\"\ncommand = \"x\"\n[servers.auth]\nclient_id = \"c\"\n")
                .unwrap_err()
                .to_string();
        assert!(err.contains("for remote (`url`) servers"), "{err}");
    }
}
