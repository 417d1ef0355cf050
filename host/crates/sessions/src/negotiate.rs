//! Protocol version negotiation, on rmcp's own lifecycle support.
//!
//! `protocol = "auto"` probes with `server/discover` (2026-07-28, stateless) and falls back to
//! `initialize` offering 2025-11-25, which a server answers with the newest version it speaks
//! (2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05). rmcp drives both phases (and the retry
//! after an "unsupported protocol version" error); this module chooses the mode, makes sure the
//! probe never strands a user, checks the version the server settled on and words the errors.
//!
//! Anything but a usable discover result means "not a 2026-07-28 server": an empty or
//! wrong-shaped result, a JSON-RPC error of any code, an HTTP error, a body that is not JSON, a
//! closed connection or a server that exits, or no answer within `discover_timeout`. The
//! [`super::probe`] layer turns what it can into the error on which rmcp sends `initialize` on the
//! same connection; when the connection cannot go on, [`start`] opens a fresh one (a new
//! process for stdio) and sends `initialize` there. What worked is remembered per server for
//! the rest of the process, so a restart or reconnect goes straight to it.
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode};

use super::probe::Probe;
use rkmcp_config::{PROTOCOL_VERSIONS, Protocol, ServerConfig};

use rkmcp_config::MAX_DISCOVER_TIMEOUT;

/// How a session's handshake went, for `servers status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handshake {
    /// `protocol` is pinned in the config.
    Pinned,
    /// `server/discover` answered: 2026-07-28.
    Discovered,
    /// `initialize`, because `server/discover` did not count (`why`); also when a restart went
    /// straight to `initialize` because of that.
    FellBack { why: String },
    /// `initialize` straight away: the legacy HTTP+SSE transport predates `server/discover`.
    LegacyTransport,
}

impl Handshake {
    /// What `servers status` adds after the version, if anything.
    pub fn note(&self) -> Option<String> {
        match self {
            Handshake::FellBack { why } => Some(format!("server/discover not supported: {why}")),
            Handshake::LegacyTransport => {
                Some("server/discover not tried: legacy HTTP+SSE transport".into())
            }
            Handshake::Pinned | Handshake::Discovered => None,
        }
    }
}

/// What `protocol = "auto"` settled on per server, for the rest of the process.
static REMEMBERED: Mutex<Vec<(String, Handshake)>> = Mutex::new(Vec::new());

/// The server's name and where it is: a changed command or URL is probed afresh.
fn memo_key(config: &ServerConfig) -> String {
    let place = match (&config.url, &config.command) {
        (Some(url), _) => url.clone(),
        (None, Some(command)) => std::iter::once(command.as_str())
            .chain(config.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\u{1f}"),
        (None, None) => config.transport.to_string(),
    };
    format!("{}\u{1e}{place}", config.name)
}

/// What worked for this server before, in this process.
pub fn remembered(config: &ServerConfig) -> Option<Handshake> {
    super::lock(&REMEMBERED)
        .iter()
        .find(|(key, _)| *key == memo_key(config))
        .map(|(_, h)| h.clone())
}

fn remember(config: &ServerConfig, handshake: &Handshake) {
    let key = memo_key(config);
    let mut memo = super::lock(&REMEMBERED);
    memo.retain(|(k, _)| *k != key);
    memo.push((key, handshake.clone()));
}

/// The probe's bound: the configured `discover_timeout`, at most rmcp's own limit.
pub fn discover_bound(config: &ServerConfig) -> Duration {
    config.discover_timeout.min(MAX_DISCOVER_TIMEOUT)
}

/// Why a connection attempt failed.
#[derive(Debug)]
pub enum AttemptError {
    /// The connection could not be opened (the command did not start, the host did not answer):
    /// there is no answer to judge, and trying `initialize` would fail the same way.
    Open(String),
    /// The handshake failed (boxed: rmcp's error is large and this travels in every `Result`).
    Handshake(Box<ClientInitializeError>),
}

/// A start that failed: the last attempt's error and, after a failed probe, why the probe did
/// not count.
#[derive(Debug)]
pub struct StartError {
    pub error: AttemptError,
    pub after_probe: Option<String>,
}

impl std::fmt::Display for StartError {
    /// The last attempt's error and, when `initialize` was the second try, why
    /// `server/discover` did not count.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.error {
            AttemptError::Open(text) => f.write_str(text)?,
            AttemptError::Handshake(err) => f.write_str(&describe(err))?,
        }
        if let Some(why) = &self.after_probe {
            write!(f, " (server/discover had failed first: {why})")?;
        }
        Ok(())
    }
}

/// Starts a session as the config's `protocol` says. `attempt(lifecycle, probe)` opens a new
/// connection and starts rmcp on it with the probe layer in place. With `protocol = "auto"`:
/// the probe first; if that connection cannot go on (`fresh_start_helps` says whether another
/// connection might), a fresh one with `initialize`. `answer_silence`: the transport delivers in
/// order (stdio, plugins), so a silent probe is answered in place; otherwise (HTTP) a probe
/// unanswered past the bound drops its connection.
pub async fn start<S, F, Fut>(
    config: &ServerConfig,
    answer_silence: bool,
    attempt: F,
    fresh_start_helps: impl Fn(&ClientInitializeError) -> bool,
) -> Result<(S, Handshake), StartError>
where
    F: Fn(ClientLifecycleMode, Option<Probe>) -> Fut,
    Fut: Future<Output = Result<S, AttemptError>>,
{
    let direct = match &config.protocol {
        Protocol::Version(_) => Some(Handshake::Pinned),
        Protocol::Auto => remembered(config).filter(|h| matches!(h, Handshake::FellBack { .. })),
    };
    if let Some(handshake) = direct {
        let mode = match &handshake {
            Handshake::Pinned => lifecycle(&config.protocol),
            _ => ClientLifecycleMode::Initialize,
        };
        return match attempt(mode, None).await {
            Ok(service) => Ok((service, handshake)),
            Err(error) => Err(StartError {
                error,
                after_probe: None,
            }),
        };
    }
    let bound = discover_bound(config);
    let probe = Probe::new(bound, answer_silence, stateless_versions());
    let first = attempt(lifecycle(&Protocol::Auto), Some(probe.clone()));
    let outcome = if answer_silence {
        Some(first.await)
    } else {
        tokio::select! {
            outcome = first => Some(outcome),
            _ = probe.silent_past_bound() => None,
        }
    };
    let why = match outcome {
        Some(Ok(service)) => {
            let handshake = if probe.initialize_sent() {
                Handshake::FellBack {
                    why: probe
                        .why_not()
                        .unwrap_or_else(|| "it answered with an error".into()),
                }
            } else {
                Handshake::Discovered
            };
            remember(config, &handshake);
            return Ok((service, handshake));
        }
        Some(Err(AttemptError::Handshake(e))) if fresh_start_helps(&e) => {
            probe.why_not().unwrap_or_else(|| probe_failure(&e))
        }
        Some(Err(error)) => {
            return Err(StartError {
                error,
                after_probe: probe.why_not(),
            });
        }
        None => probe
            .why_not()
            .unwrap_or_else(|| super::probe::silence(bound)),
    };
    tracing::debug!(server = %config.name, "server/discover not supported ({why}): connecting again with initialize");
    match attempt(ClientLifecycleMode::Initialize, None).await {
        Ok(service) => {
            let handshake = Handshake::FellBack { why };
            remember(config, &handshake);
            Ok((service, handshake))
        }
        Err(error) => Err(StartError {
            error,
            after_probe: Some(why),
        }),
    }
}

/// Why a probe that ended its connection did not count, in words.
fn probe_failure(err: &ClientInitializeError) -> String {
    match err {
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection without answering".into()
        }
        // What the HTTP exchange said (a status and body, a content type, a closed stream).
        ClientInitializeError::TransportError { error, .. } => {
            super::errors::describe(error.error.as_ref())
        }
        other => super::errors::describe(other),
    }
}

/// The version offered in `initialize`: the newest one that has that handshake.
pub fn initialize_version(protocol: &Protocol) -> ProtocolVersion {
    match protocol {
        Protocol::Version(v) if parse(v).has_initialize() => parse(v),
        _ => ProtocolVersion::LATEST_WITH_INITIALIZE,
    }
}

/// How rmcp should start the session.
pub fn lifecycle(protocol: &Protocol) -> ClientLifecycleMode {
    match protocol {
        Protocol::Auto => ClientLifecycleMode::Auto {
            preferred_versions: stateless_versions(),
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
        Protocol::Version(v) if !parse(v).has_initialize() => ClientLifecycleMode::Discover {
            preferred_versions: vec![parse(v)],
        },
        Protocol::Version(_) => ClientLifecycleMode::Initialize,
    }
}

/// Versions offered to `server/discover`, newest first: the ones without `initialize`.
pub fn stateless_versions() -> Vec<ProtocolVersion> {
    supported()
        .into_iter()
        .filter(|v| !v.has_initialize())
        .collect()
}

/// Every version rkmcp speaks, newest first.
pub fn supported() -> Vec<ProtocolVersion> {
    PROTOCOL_VERSIONS.iter().map(|v| parse(v)).collect()
}

fn parse(version: &str) -> ProtocolVersion {
    // ProtocolVersion's Deserialize maps known strings to its constants and keeps others.
    serde_json::from_value(serde_json::Value::String(version.to_string()))
        .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// The version the server settled on, refused when rkmcp does not speak it.
pub fn check_negotiated(
    protocol: &Protocol,
    negotiated: &ProtocolVersion,
) -> Result<(), UnsupportedVersion> {
    if PROTOCOL_VERSIONS.contains(&negotiated.as_str()) {
        Ok(())
    } else {
        Err(UnsupportedVersion {
            offered: match protocol {
                Protocol::Auto => format!(
                    "{} or {}",
                    ProtocolVersion::LATEST,
                    ProtocolVersion::LATEST_WITH_INITIALIZE
                ),
                Protocol::Version(v) => v.clone(),
            },
            answered: negotiated.to_string(),
        })
    }
}

/// A server that answered with a version rkmcp does not speak.
#[derive(Debug, thiserror::Error)]
#[error(
    "the server answered with protocol version `{answered}`, which rkmcp does not support (rkmcp asked for {offered}; it speaks {})",
    PROTOCOL_VERSIONS.join(", ")
)]
pub struct UnsupportedVersion {
    pub offered: String,
    pub answered: String,
}

/// Words a failed start for people: which phase failed and why, without Rust type names.
pub fn describe(err: &ClientInitializeError) -> String {
    match err {
        ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => format!(
            "no protocol version in common: the server speaks {}, rkmcp asked for {}",
            list(server_supported),
            list(client_supported)
        ),
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => format!(
            "initialize failed: {} (server/discover had failed first: {})",
            describe(fallback),
            describe(discover)
        ),
        ClientInitializeError::JsonRpcError(data) => {
            format!("{} (JSON-RPC error {})", data.message, data.code.0)
        }
        ClientInitializeError::ExpectedInitResult(Some(_)) => {
            "the server answered the handshake with something that is not its result".into()
        }
        ClientInitializeError::ConnectionClosed(during) => {
            format!("the connection closed while waiting for the {during}")
        }
        // Transport errors carry their cause chain, worded without rmcp's type names.
        other => super::errors::describe(other),
    }
}

fn list(versions: &[ProtocolVersion]) -> String {
    if versions.is_empty() {
        return "no version it named".into();
    }
    versions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_versions_are_the_ones_rmcp_knows() {
        let mut known: Vec<&str> = ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .map(|v| v.as_str())
            .collect();
        known.reverse();
        assert_eq!(known, PROTOCOL_VERSIONS);
    }

    #[test]
    fn modes_per_setting() {
        assert!(matches!(
            lifecycle(&Protocol::Auto),
            ClientLifecycleMode::Auto { ref preferred_versions, .. }
                if preferred_versions == &[ProtocolVersion::V_2026_07_28]
        ));
        assert_eq!(
            lifecycle(&Protocol::Version("2026-07-28".into())),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28]
            }
        );
        let pinned = Protocol::Version("2025-06-18".into());
        assert_eq!(lifecycle(&pinned), ClientLifecycleMode::Initialize);
        assert_eq!(initialize_version(&pinned), ProtocolVersion::V_2025_06_18);
        assert_eq!(
            initialize_version(&Protocol::Auto),
            ProtocolVersion::V_2025_11_25
        );
    }

    #[test]
    fn unknown_answer_is_refused_naming_both_versions() {
        let answered: ProtocolVersion = serde_json::from_str("\"1999-01-01\"").unwrap();
        let err = check_negotiated(&Protocol::Auto, &answered)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`1999-01-01`"), "{err}");
        assert!(err.contains("2025-11-25"), "{err}");
        assert!(check_negotiated(&Protocol::Auto, &ProtocolVersion::V_2024_11_05).is_ok());
    }
}
