//! One server's resolved settings: how rkmcp talks to it, timeouts, protocol version, limits,
//! and the parsers for the values written in the config.
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::{AuthConfig, nearest};

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
/// How long `protocol = "auto"` waits for `server/discover` before it sends `initialize`. A
/// 2026-07-28 server answers the probe from memory, so the wait is the server's start-up (stdio
/// servers get the probe as soon as they are spawned). rmcp's own limit: a Node or Python server
/// on a loaded 2-core board takes more than 5 s to read the probe, and a shorter bound sent a
/// 2026-07-28 server to `initialize`. A server that ignores the probe costs this once per process
/// (the outcome is remembered per server); set it lower for such a server.
pub const DEFAULT_DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// rmcp's auto lifecycle gives up on `server/discover` after 10 s by itself; a longer
/// `discover_timeout` would not be honoured.
pub const MAX_DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a server is checked (`ping`) unless configured otherwise.
pub const DEFAULT_HEALTH_INTERVAL: Duration = Duration::from_secs(30);
/// Restarts of a server that went down before rkmcp gives up on it, unless configured otherwise.
pub const DEFAULT_MAX_RESTARTS: u32 = 5;
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
    /// How long `protocol = "auto"` waits for an answer to `server/discover` (at most
    /// [`MAX_DISCOVER_TIMEOUT`]).
    #[serde(with = "duration_secs")]
    pub discover_timeout: Duration,
    /// How often the server is checked (`ping`; the MCP session layer's health monitor).
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

pub(super) fn parse_protocol(text: &str) -> Result<Protocol, String> {
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

pub(super) fn parse_log_level(text: &str) -> Result<String, String> {
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

pub(super) mod duration_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// A `discover_timeout`: more than nothing, at most rmcp's own limit on the probe.
pub(super) fn discover_timeout(d: Duration) -> Result<Duration, String> {
    let max = MAX_DISCOVER_TIMEOUT;
    if d.is_zero() || d > max {
        return Err(format!(
            "must be more than 0 and at most {} (rmcp gives up on `server/discover` by itself then), not {}",
            humantime::format_duration(max),
            humantime::format_duration(d)
        ));
    }
    Ok(d)
}

pub(super) fn positive_mb(mb: f64) -> Result<f64, String> {
    if mb.is_finite() && mb > 0.0 {
        Ok(mb)
    } else {
        Err(format!("must be a positive number of megabytes, not {mb}"))
    }
}

pub(super) fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub(super) const TRANSPORTS: &[&str] = &["stdio", "http", "sse", "auto", "plugin:<name>"];

pub(super) fn parse_transport(text: &str) -> Result<TransportKind, String> {
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
