//! Configuration: where it is looked for, how files are merged, and the resolved [`Config`].
//!
//! Lookup: `--config FILE` (or `RKMCP_CONFIG`), else the workspace's `./rkmcp.toml` or
//! `./.rkmcp/config.toml`; that file is merged over the user's `$XDG_CONFIG_HOME/rkmcp/config.toml`.
//! Servers merge by name (the later file's entry replaces the earlier one); other settings are
//! overridden key by key.
use std::fmt;
use std::path::{Path, PathBuf};

mod auth;
mod file;
mod locations;
mod raw;
mod redact;
mod resolve;
mod server;
mod signing_key;
pub mod subst;
#[cfg(test)]
mod tests;

pub use auth::{AuthConfig, Grant, SigningAlgorithm, TokenEndpointAuth};
pub use file::{Format, nearest};
pub use locations::Locations;
use raw::RawConfig;
use resolve::resolve;
pub use server::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_DISCOVER_TIMEOUT, DEFAULT_HEALTH_INTERVAL,
    DEFAULT_MAX_MESSAGE_MB, DEFAULT_MAX_RESTARTS, DEFAULT_PREFIX, DEFAULT_REQUEST_TIMEOUT,
    LOG_LEVELS, MAX_DISCOVER_TIMEOUT, PROTOCOL_VERSIONS, Protocol, ServerConfig, TransportKind,
};
pub use signing_key::SigningKey;

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
    /// `[audit]` as written (interpreted by the audit log).
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
                if redact::looks_secret(key) {
                    *value = "***".into();
                }
            }
            redact::mask_secret_args(&mut server.args);
            if let Some(url) = &mut server.url {
                *url = redact::mask_url_credentials(url);
            }
        }
        out
    }
}

/// Loads the configuration from the usual places, or from `explicit` (`--config`,
/// `RKMCP_CONFIG`); `audit` (`--audit FILE`) turns the audit log on at that path.
pub fn load(explicit: Option<PathBuf>, audit: Option<&Path>) -> Result<Config, ConfigError> {
    let mut config = load_from(&Locations::from_env(explicit))?;
    if let Some(path) = audit {
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
