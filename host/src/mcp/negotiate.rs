//! Protocol version negotiation, on rmcp's own lifecycle support.
//!
//! `protocol = "auto"` probes with `server/discover` (2026-07-28, stateless) and falls back to
//! `initialize` offering 2025-11-25, which a server answers with the newest version it speaks
//! (2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05). rmcp drives both phases (and the retry
//! after an "unsupported protocol version" error); this module only chooses the mode, checks the
//! version the server settled on and words the errors.
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode};

use crate::config::{PROTOCOL_VERSIONS, Protocol};

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
fn stateless_versions() -> Vec<ProtocolVersion> {
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

/// With `protocol = "auto"` the first request is `server/discover`; a server that hangs up on
/// a method it does not know fails there. Say how to skip the probe.
pub fn probe_hint(protocol: &Protocol, err: &ClientInitializeError) -> &'static str {
    let probe_failed = matches!(
        err,
        ClientInitializeError::ConnectionClosed(during) if during.contains("discover")
    ) || matches!(
        err,
        ClientInitializeError::TransportError { context, .. } if context.contains("discover")
    );
    if *protocol == Protocol::Auto && probe_failed {
        " (rkmcp first asked `server/discover`, the 2026-07-28 handshake; for a server that cannot take that, set `protocol = \"2025-11-25\"`)"
    } else {
        ""
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
