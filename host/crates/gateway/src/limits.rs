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
//!   rmcp's five minutes idle, which frees their place. A session is bound to the client that
//!   opened it (the token's subject and client): another client's requests naming its id are
//!   answered as for an unknown session;
//! - requests in flight: at most `max_requests_per_client` POSTs of one client address at a time,
//!   an SSE answer counting until its stream ends (`429`);
//! - a wrong token costs time: each failed attempt from an address doubles the wait before its
//!   `401` (from 250 ms up to 8 s), forgotten after a success or ten quiet minutes.
//!
//! The decisions are pure functions of counts ([`admit_session`], [`failure_delay`]); the
//! enforcement in [`super::front_door`] only counts and answers.
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::resource_server::Principal;

use serde::{Deserialize, Deserializer};

/// `[serve.limits]` in the config.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    pub max_connections: usize,
    pub max_sessions: usize,
    pub max_sessions_per_client: usize,
    pub max_requests_per_client: usize,
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
            max_requests_per_client: 64,
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
            ("max_requests_per_client", self.max_requests_per_client),
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Who opened a session: the client's address (for the per-client limit) and, when clients
/// authenticate, the principal its token spoke for.
struct Opener {
    address: IpAddr,
    principal: Option<Principal>,
}

/// The sessions clients opened, pruned against the sessions that still live.
#[derive(Default)]
pub struct SessionLedger {
    sessions: Mutex<HashMap<String, Opener>>,
}

impl SessionLedger {
    /// How many live sessions `client` holds, forgetting the ones `live` says have ended.
    pub fn count(&self, client: IpAddr, live: impl Fn(&str) -> bool) -> usize {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|id, _| live(id));
        sessions.values().filter(|o| o.address == client).count()
    }

    pub fn record(&self, client: IpAddr, principal: Option<Principal>, session: String) {
        lock(&self.sessions).insert(
            session,
            Opener {
                address: client,
                principal,
            },
        );
    }

    /// Whether `principal` may use `session`: only the one that opened it. Sessions the ledger
    /// does not know are left to rmcp (which answers 404 for an unknown id).
    pub fn may_use(&self, session: &str, principal: Option<&Principal>) -> bool {
        lock(&self.sessions)
            .get(session)
            .is_none_or(|opener| opener.principal.as_ref() == principal)
    }
}

/// Requests in flight per client address.
#[derive(Default, Clone)]
pub struct InFlight {
    by_client: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One request in flight; dropping it ends it.
pub struct InFlightRequest {
    by_client: Arc<Mutex<HashMap<IpAddr, usize>>>,
    client: IpAddr,
}

impl InFlight {
    /// A place for one more request of `client`, or `None` when it has `max` in flight.
    pub fn enter(&self, client: IpAddr, max: usize) -> Option<InFlightRequest> {
        let mut by_client = lock(&self.by_client);
        let n = by_client.entry(client).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(InFlightRequest {
            by_client: self.by_client.clone(),
            client,
        })
    }

    pub fn of(&self, client: IpAddr) -> usize {
        lock(&self.by_client).get(&client).copied().unwrap_or(0)
    }
}

impl Drop for InFlightRequest {
    fn drop(&mut self) {
        let mut by_client = lock(&self.by_client);
        if let Some(n) = by_client.get_mut(&self.client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                by_client.remove(&self.client);
            }
        }
    }
}

/// How long the answer to the `failures`-th failed attempt in a row waits: nothing for none,
/// then 250 ms doubling up to 8 s. Guessing a token stays slow; a client that mistyped it once
/// hardly notices.
pub fn failure_delay(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => Duration::from_millis(250u64 << (n - 1).min(5)),
    }
}

/// Failed authentications per client address.
#[derive(Default)]
pub struct FailedAttempts {
    by_client: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

/// After this long without a failure an address starts afresh.
const FAILURES_FORGOTTEN: Duration = Duration::from_secs(600);
/// Addresses remembered at most (a spread-out attack cannot grow the table without bound).
const FAILURES_REMEMBERED: usize = 4096;

impl FailedAttempts {
    /// Counts a failure of `client`; returns how long to wait before answering it.
    pub fn failed(&self, client: IpAddr) -> Duration {
        let now = Instant::now();
        let mut by_client = lock(&self.by_client);
        if by_client.len() >= FAILURES_REMEMBERED {
            by_client.retain(|_, (_, last)| now.duration_since(*last) < FAILURES_FORGOTTEN);
            if by_client.len() >= FAILURES_REMEMBERED {
                by_client.clear();
            }
        }
        let entry = by_client.entry(client).or_insert((0, now));
        if now.duration_since(entry.1) >= FAILURES_FORGOTTEN {
            entry.0 = 0;
        }
        entry.0 = entry.0.saturating_add(1);
        entry.1 = now;
        failure_delay(entry.0)
    }

    pub fn succeeded(&self, client: IpAddr) {
        let mut by_client = lock(&self.by_client);
        if !by_client.is_empty() {
            by_client.remove(&client);
        }
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
        ledger.record(client, None, "a".into());
        ledger.record(client, None, "b".into());
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

    #[test]
    fn a_session_serves_only_the_principal_that_opened_it() {
        let ledger = SessionLedger::default();
        let client: IpAddr = "127.0.0.1".parse().unwrap();
        let alice = Principal::shared_token();
        ledger.record(client, Some(alice.clone()), "s1".into());
        ledger.record(client, None, "open".into());
        assert!(ledger.may_use("s1", Some(&alice)));
        assert!(!ledger.may_use("s1", None));
        assert!(ledger.may_use("open", None));
        assert!(!ledger.may_use("open", Some(&alice)));
        // Unknown ids are rmcp's to refuse.
        assert!(ledger.may_use("never-opened", None));
    }

    #[test]
    fn requests_in_flight_are_counted_per_client_until_dropped() {
        let in_flight = InFlight::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = in_flight.enter(a, 2).unwrap();
        let second = in_flight.enter(a, 2).unwrap();
        assert!(in_flight.enter(a, 2).is_none());
        assert!(
            in_flight.enter(b, 2).is_some(),
            "another client is not held back"
        );
        drop(first);
        assert_eq!(in_flight.of(a), 1);
        assert!(in_flight.enter(a, 2).is_some());
        drop(second);
        assert_eq!(in_flight.of(b), 0);
    }

    #[test]
    fn failed_attempts_double_the_wait_up_to_a_bound_and_a_success_resets_it() {
        assert_eq!(failure_delay(0), Duration::ZERO);
        assert_eq!(failure_delay(1), Duration::from_millis(250));
        assert_eq!(failure_delay(2), Duration::from_millis(500));
        assert_eq!(failure_delay(6), Duration::from_secs(8));
        assert_eq!(failure_delay(60), Duration::from_secs(8));
        let failures = FailedAttempts::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(failures.failed(a), Duration::from_millis(250));
        assert_eq!(failures.failed(a), Duration::from_millis(500));
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(failures.failed(b), Duration::from_millis(250));
        failures.succeeded(a);
        assert_eq!(failures.failed(a), Duration::from_millis(250));
    }
}
