//! The config as written in one file, before merging and defaults. Every field is optional so
//! that a workspace file can override just what it names.
use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    pub servers: Vec<RawServer>,
    /// Where per-server stderr logs go (default `$XDG_STATE_HOME/rkmcp/logs`).
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub log_dir: Option<String>,
    /// Defaults for every server.
    #[serde(default)]
    pub defaults: RawDefaults,
    /// `[plugins]`: the plugin folders and the capabilities the user grants each plugin.
    #[serde(default)]
    pub plugins: Option<toml::Table>,
    /// `[model]`: the LLM backend and model.
    #[serde(default)]
    pub model: Option<toml::Table>,
    /// `[chat]`: the chat loop.
    #[serde(default)]
    pub chat: Option<toml::Table>,
    /// `[audit]`: the audit log (interpreted by the audit log).
    #[serde(default)]
    pub audit: Option<toml::Table>,
    /// `[sampling]`: servers' `sampling/createMessage` on the local model.
    #[serde(default)]
    pub sampling: Option<toml::Table>,
    /// `[serve]`: `rkmcp serve`, the MCP gateway.
    #[serde(default)]
    pub serve: Option<toml::Table>,
    /// `[roots]`: the directories servers may work in.
    #[serde(default)]
    pub roots: Option<RawRoots>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoots {
    /// Directories (relative ones from the config file's folder); default: the current directory.
    #[serde(default, deserialize_with = "super::subst::strings")]
    pub paths: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDefaults {
    pub connect_timeout: Option<RawDuration>,
    pub request_timeout: Option<RawDuration>,
    /// How long `protocol = "auto"` waits for an answer to `server/discover`.
    pub discover_timeout: Option<RawDuration>,
    /// How often each server is checked (ping).
    pub health_interval: Option<RawDuration>,
    /// Restarts of a server that went down before rkmcp gives up on it.
    pub max_restarts: Option<u32>,
    /// Tool-name prefix template; `{server}` is replaced by the server name.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub prefix: Option<String>,
    /// The largest message accepted from a server, in MB.
    pub max_message_mb: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub name: Option<String>,
    pub enabled: Option<bool>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub transport: Option<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub command: Option<String>,
    #[serde(default, deserialize_with = "super::subst::strings")]
    pub args: Vec<String>,
    #[serde(default, deserialize_with = "super::subst::string_map")]
    pub env: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub cwd: Option<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub url: Option<String>,
    #[serde(default, deserialize_with = "super::subst::string_map")]
    pub headers: BTreeMap<String, String>,
    pub connect_timeout: Option<RawDuration>,
    pub request_timeout: Option<RawDuration>,
    /// How long `protocol = "auto"` waits for an answer to `server/discover`.
    pub discover_timeout: Option<RawDuration>,
    pub health_interval: Option<RawDuration>,
    pub max_restarts: Option<u32>,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub prefix: Option<String>,
    /// The largest message accepted from this server, in MB (default 16).
    pub max_message_mb: Option<f64>,
    /// `[servers.auth]`: how to sign in to a remote server.
    #[serde(default)]
    pub auth: Option<RawAuth>,
    /// `"auto"` (default) or a protocol version to use.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub protocol: Option<String>,
    /// The level asked for with `logging/setLevel` after connecting.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub log_level: Option<String>,
    /// Where the entry starts in its file (JSON forms only; TOML positions come from the parser).
    #[serde(skip)]
    pub line: Option<(usize, usize)>,
}

/// `[servers.auth]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    /// `authorization_code` (a person signs in with `rkmcp auth login`) or `client_credentials`.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub grant: Option<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub client_id: Option<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub client_secret: Option<String>,
    /// Token endpoint authentication for a confidential client: `client_secret_basic` or
    /// `client_secret_post` (default: what the server advertises).
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub token_endpoint_auth_method: Option<String>,
    /// The HTTPS URL of this client's metadata document (a client ID metadata document).
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for (default: what the server's challenge or metadata names).
    #[serde(default, deserialize_with = "super::subst::strings")]
    pub scopes: Vec<String>,
    /// The name of an environment variable holding a static bearer token.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub bearer_token_env: Option<String>,
    /// `private_key_jwt`: the client's private key (PEM file; relative to the config's folder).
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub private_key_file: Option<String>,
    /// `private_key_jwt`: the signing algorithm (default: the one the key fits).
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub private_key_algorithm: Option<String>,
    /// `jwt_bearer` / `enterprise_managed`: a file holding the JWT to start from.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub assertion_file: Option<String>,
    /// `jwt_bearer` / `enterprise_managed`: an environment variable holding that JWT.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub assertion_env: Option<String>,
    /// `enterprise_managed`: the identity provider's token endpoint (RFC 8693 token exchange).
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub idp_token_endpoint: Option<String>,
    /// `enterprise_managed`: rkmcp's client at the identity provider.
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub idp_client_id: Option<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    pub idp_client_secret: Option<String>,
}

/// A duration: a number of seconds (`30`, `0.5`) or a string (`"30s"`, `"500ms"`, `"2m"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawDuration {
    Seconds(f64),
    Text(String),
    #[serde(skip)]
    Millis(f64),
}

impl RawDuration {
    pub fn to_duration(&self) -> Result<std::time::Duration, String> {
        let secs = match self {
            RawDuration::Seconds(s) => *s,
            RawDuration::Millis(ms) => ms / 1000.0,
            RawDuration::Text(text) => {
                return humantime::parse_duration(text.trim()).map_err(|err| {
                    format!(
                        "`{text}` is not a duration ({err}); write e.g. \"30s\", \"500ms\" or 30"
                    )
                });
            }
        };
        if !secs.is_finite() || secs <= 0.0 {
            return Err(format!(
                "a timeout must be a positive number of seconds, not {secs}"
            ));
        }
        Ok(std::time::Duration::from_secs_f64(secs))
    }
}
