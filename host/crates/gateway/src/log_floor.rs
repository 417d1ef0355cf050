//! Which of a server's log messages reach a client of the gateway.
//!
//! - A 2025-11-25 client chooses with `logging/setLevel`, for its whole connection; until it
//!   does, it gets what the servers send.
//! - A 2026-07-28 client opts in per request with `_meta["io.modelcontextprotocol/logLevel"]`
//!   (SEP-2575); without it, nothing may be sent for that request, and nothing outside one.
//!
//! Several clients share the servers behind, so each server is asked for the most verbose level
//! any client wants ([`most_verbose`]) and the gateway filters per client: one client's
//! `setLevel` never silences another's logs.
#![allow(deprecated)] // logging is deprecated by SEP-2577 but current servers and clients use it.

use rmcp::model::{LoggingLevel, RequestMetaObject};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LogFloor {
    Everything,
    AtLeast(LoggingLevel),
    Nothing,
}

impl LogFloor {
    /// For a connection that set `level` with `logging/setLevel` (or never did: `None`).
    pub fn for_connection(level: Option<LoggingLevel>) -> LogFloor {
        level.map_or(LogFloor::Everything, LogFloor::AtLeast)
    }

    /// For one request: its `_meta` (rmcp keeps the request's own `_meta` apart from the
    /// context's, so both are read), then the connection's level.
    pub fn for_request(
        metas: &[Option<&RequestMetaObject>],
        connection: Option<LoggingLevel>,
    ) -> LogFloor {
        let metas = metas.iter().flatten();
        if let Some(level) = metas.clone().find_map(|m| m.log_level()) {
            return LogFloor::AtLeast(level);
        }
        let stateless = metas
            .filter_map(|m| m.protocol_version())
            .any(|v| !v.has_initialize());
        if stateless {
            LogFloor::Nothing
        } else {
            LogFloor::for_connection(connection)
        }
    }

    pub fn passes(self, level: LoggingLevel) -> bool {
        match self {
            LogFloor::Everything => true,
            LogFloor::AtLeast(floor) => rank(level) >= rank(floor),
            LogFloor::Nothing => false,
        }
    }

    /// The level to ask a server for on a request forwarded for this client (2026-07-28 servers
    /// send nothing without one; older ones ignore the key).
    pub fn requested(self) -> Option<LoggingLevel> {
        match self {
            LogFloor::AtLeast(level) => Some(level),
            LogFloor::Everything | LogFloor::Nothing => None,
        }
    }

    /// The `_meta` of a request forwarded for this client: only the level it asked for (none of
    /// the client's own `_meta` travels on: it describes its connection to the gateway).
    pub fn forwarded_meta(self) -> Option<RequestMetaObject> {
        self.requested().map(|level| {
            let mut meta = RequestMetaObject::new();
            meta.set_log_level(level);
            meta
        })
    }
}

/// RFC 5424 severity, least severe first (rmcp's enum has no order).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The level the servers behind are asked for: the most verbose any client set.
pub fn most_verbose(levels: impl IntoIterator<Item = LoggingLevel>) -> Option<LoggingLevel> {
    levels.into_iter().min_by_key(|l| rank(*l))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ProtocolVersion;

    #[test]
    fn a_connection_level_lets_through_that_level_and_above() {
        let floor = LogFloor::for_connection(Some(LoggingLevel::Warning));
        assert!(!floor.passes(LoggingLevel::Info));
        assert!(floor.passes(LoggingLevel::Warning));
        assert!(floor.passes(LoggingLevel::Emergency));
        assert!(LogFloor::for_connection(None).passes(LoggingLevel::Debug));
    }

    #[test]
    fn a_2026_request_gets_logs_only_when_it_asks_for_them() {
        let mut meta = RequestMetaObject::new();
        meta.set_protocol_version(ProtocolVersion::V_2026_07_28);
        let silent = LogFloor::for_request(&[None, Some(&meta)], Some(LoggingLevel::Debug));
        assert_eq!(silent, LogFloor::Nothing);
        assert!(!silent.passes(LoggingLevel::Emergency));
        meta.set_log_level(LoggingLevel::Error);
        let asked = LogFloor::for_request(&[Some(&meta)], None);
        assert_eq!(asked, LogFloor::AtLeast(LoggingLevel::Error));
        assert_eq!(asked.requested(), Some(LoggingLevel::Error));
        assert!(!asked.passes(LoggingLevel::Warning));
    }

    #[test]
    fn an_older_request_follows_its_connection() {
        let meta = RequestMetaObject::new();
        let floor = LogFloor::for_request(&[Some(&meta), None], Some(LoggingLevel::Notice));
        assert_eq!(floor, LogFloor::AtLeast(LoggingLevel::Notice));
        assert_eq!(LogFloor::for_request(&[None], None), LogFloor::Everything);
    }

    #[test]
    fn servers_are_asked_for_the_most_verbose_level_any_client_set() {
        let levels = [
            LoggingLevel::Error,
            LoggingLevel::Info,
            LoggingLevel::Warning,
        ];
        assert_eq!(most_verbose(levels), Some(LoggingLevel::Info));
        assert_eq!(most_verbose([]), None);
    }
}
