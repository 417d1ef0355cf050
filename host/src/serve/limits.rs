//! `[serve.limits]`: what the HTTP gateway lets clients hold, so a hostile or broken client cannot
//! grow it without bound or starve the others.
//!
//! - open connections (`max_connections`): one more is answered `503` with `Retry-After` and
//!   closed at once;
//! - request headers must arrive within `header_timeout` (hyper's header read timeout): a client
//!   trickling its headers a byte at a time (slow loris) is cut off;
//! - a request body must arrive within `body_timeout` (`408`), and must be JSON: a body that is
//!   not, or nests deeper than serde_json's 128 levels, is a `400` JSON-RPC parse error (rmcp
//!   answers `415` for any undecodable body, which says the media type was wrong);
//! - sessions: at most `max_sessions_per_client` per client address and `max_sessions` in all
//!   (`429` / `503`, with a JSON-RPC error). Sessions end when a client deletes them or after
//!   rmcp's five minutes idle, which frees their place.
//!
//! The decisions are pure functions of counts ([`admit_session`]); the enforcement in
//! [`super::http`] only counts and answers.
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// `[serve.limits]` in the config.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    pub max_connections: usize,
    pub max_sessions: usize,
    pub max_sessions_per_client: usize,
    #[serde(deserialize_with = "duration")]
    pub header_timeout: Duration,
    #[serde(deserialize_with = "duration")]
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 512,
            max_sessions: 1000,
            max_sessions_per_client: 64,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
        }
    }
}

impl Limits {
    /// The limits that make no sense (a zero would refuse every client).
    pub fn check(&self) -> Result<(), String> {
        for (key, value) in [
            ("max_connections", self.max_connections),
            ("max_sessions", self.max_sessions),
            ("max_sessions_per_client", self.max_sessions_per_client),
        ] {
            if value == 0 {
                return Err(format!(
                    "[serve.limits] {key} = 0 would refuse every client; leave it out for the default"
                ));
            }
        }
        Ok(())
    }
}

/// A duration in the config: seconds (`10`, `0.5`) or text (`"10s"`, `"500ms"`).
fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(f64),
        Text(String),
    }
    let secs = match Raw::deserialize(d)? {
        Raw::Seconds(s) => s,
        Raw::Text(text) => {
            return humantime::parse_duration(text.trim()).map_err(|err| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a duration ({err}); write e.g. \"10s\", \"500ms\" or 10"
                ))
            });
        }
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(serde::de::Error::custom(format!(
            "a timeout must be a positive number of seconds, not {secs}"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Whether a client may open one more session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAdmission {
    Admitted,
    /// This client holds `max_sessions_per_client` already.
    TooManyForClient,
    /// All clients together hold `max_sessions`.
    TooManyInAll,
}

pub fn admit_session(limits: &Limits, of_client: usize, in_all: usize) -> SessionAdmission {
    if of_client >= limits.max_sessions_per_client {
        SessionAdmission::TooManyForClient
    } else if in_all >= limits.max_sessions {
        SessionAdmission::TooManyInAll
    } else {
        SessionAdmission::Admitted
    }
}

/// The sessions each client address opened, pruned against the sessions that still live.
#[derive(Default)]
pub struct SessionLedger {
    by_client: std::sync::Mutex<HashMap<IpAddr, Vec<String>>>,
}

impl SessionLedger {
    /// How many live sessions `client` holds, forgetting the ones `live` says have ended.
    pub fn count(&self, client: IpAddr, live: impl Fn(&str) -> bool) -> usize {
        let mut by_client = self.by_client.lock().unwrap_or_else(|p| p.into_inner());
        let Some(ids) = by_client.get_mut(&client) else {
            return 0;
        };
        ids.retain(|id| live(id));
        let n = ids.len();
        if n == 0 {
            by_client.remove(&client);
        }
        n
    }

    pub fn record(&self, client: IpAddr, session: String) {
        self.by_client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(client)
            .or_default()
            .push(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_at_its_limit_is_refused_before_the_gateway_is_full() {
        let limits = Limits {
            max_sessions: 10,
            max_sessions_per_client: 3,
            ..Limits::default()
        };
        assert_eq!(admit_session(&limits, 0, 0), SessionAdmission::Admitted);
        assert_eq!(admit_session(&limits, 2, 9), SessionAdmission::Admitted);
        assert_eq!(
            admit_session(&limits, 3, 3),
            SessionAdmission::TooManyForClient
        );
        assert_eq!(
            admit_session(&limits, 1, 10),
            SessionAdmission::TooManyInAll
        );
    }

    #[test]
    fn ended_sessions_free_their_place() {
        let ledger = SessionLedger::default();
        let client: IpAddr = "127.0.0.1".parse().unwrap();
        ledger.record(client, "a".into());
        ledger.record(client, "b".into());
        assert_eq!(ledger.count(client, |_| true), 2);
        assert_eq!(ledger.count(client, |id| id == "b"), 1);
        assert_eq!(ledger.count(client, |_| false), 0);
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(ledger.count(other, |_| true), 0);
    }

    #[test]
    fn limits_parse_with_durations_and_refuse_zero() {
        let limits: Limits = toml::from_str(
            "max_sessions_per_client = 4\nheader_timeout = \"2s\"\nbody_timeout = 0.5\n",
        )
        .unwrap();
        assert_eq!(limits.max_sessions_per_client, 4);
        assert_eq!(limits.header_timeout, Duration::from_secs(2));
        assert_eq!(limits.body_timeout, Duration::from_millis(500));
        assert_eq!(limits.max_connections, Limits::default().max_connections);
        let zero = Limits {
            max_connections: 0,
            ..Limits::default()
        };
        assert!(zero.check().unwrap_err().contains("max_connections"));
        let err = toml::from_str::<Limits>("header_timeout = \"soon\"").unwrap_err();
        assert!(err.to_string().contains("not a duration"), "{err}");
    }
}
