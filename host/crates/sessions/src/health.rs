//! Server health as data: how a check's outcome maps to a state, and when (and whether) a server
//! that went down is restarted. Pure: no clocks, no I/O — the manager feeds outcomes in and does
//! what the returned [`Action`] says, so the policy is tested here without servers or timers.
//!
//! Restart timing: the first restart after a crash is immediate (a server that was fine and
//! crashed once should be back as fast as it can start); a restart that fails, or a server that
//! goes down again before it passed a health check, waits 1 s, then 2 s, doubling to 60 s. The
//! streak ends when a check finds the server healthy. `max_restarts` counts every restart.
use std::time::Duration;

/// How healthy a server looked at its last check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Answered within [`HealthPolicy::degraded_after`].
    Healthy,
    /// Answered, but slowly (up to [`HealthPolicy::unhealthy_after`]).
    Degraded,
    /// No answer in time, or an error.
    Unhealthy,
    /// The process exited or the connection closed; a restart may be pending.
    Down,
    /// Restarted `max_restarts` times and went down again: left down until rkmcp restarts.
    GaveUp,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Degraded => "degraded",
            Health::Unhealthy => "unhealthy",
            Health::Down => "down",
            Health::GaveUp => "gave up",
        }
    }

    /// Whether calls can be sent to the server in this state.
    pub fn is_up(self) -> bool {
        matches!(self, Health::Healthy | Health::Degraded)
    }
}

/// The configurable part: `health_interval`, `max_restarts` and the fixed thresholds of the spec
/// of this feature (healthy under 1 s, degraded up to 5 s; backoff 1 s doubling to 60 s).
#[derive(Debug, Clone, PartialEq)]
pub struct HealthPolicy {
    pub interval: Duration,
    pub degraded_after: Duration,
    pub unhealthy_after: Duration,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    pub max_restarts: u32,
}

impl Default for HealthPolicy {
    fn default() -> Self {
        Self {
            interval: rkmcp_config::DEFAULT_HEALTH_INTERVAL,
            degraded_after: Duration::from_secs(1),
            unhealthy_after: Duration::from_secs(5),
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            max_restarts: rkmcp_config::DEFAULT_MAX_RESTARTS,
        }
    }
}

/// What one check found.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckOutcome {
    /// The ping (or `server/discover`) answered after this long.
    Answered(Duration),
    /// It failed with an error, or did not answer within `unhealthy_after`.
    Failed(String),
    /// The transport is closed: the process exited or the connection dropped.
    Closed(String),
}

/// What the manager should do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Nothing,
    /// Restart the server after waiting this long; `attempt` counts from 1.
    Restart {
        after: Duration,
        attempt: u32,
    },
    /// Stop trying: `max_restarts` restarts were used up.
    GiveUp,
}

/// A change the user should hear about (chat prints a notice).
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    WentDown { reason: String },
    CameBack { restarts: u32 },
    GaveUp { restarts: u32 },
}

/// The sentence after the server's name: `server `x` is down: …; restarting it`.
impl std::fmt::Display for Transition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transition::WentDown { reason } => write!(f, "is down: {reason}; restarting it"),
            Transition::CameBack { restarts } => {
                write!(f, "is back (restart {restarts}); its tools are available")
            }
            Transition::GaveUp { restarts } => write!(
                f,
                "stayed down after {restarts} restarts; rkmcp gave up on it (max_restarts)"
            ),
        }
    }
}

impl HealthPolicy {
    /// The state a latency puts a server in.
    pub fn classify(&self, latency: Duration) -> Health {
        if latency < self.degraded_after {
            Health::Healthy
        } else if latency <= self.unhealthy_after {
            Health::Degraded
        } else {
            Health::Unhealthy
        }
    }

    /// The wait before the `streak`-th restart in a row (1-based): none for the first, then
    /// 1 s, 2 s, 4 s, … capped at 60 s.
    pub fn backoff(&self, streak: u32) -> Duration {
        if streak <= 1 {
            return Duration::ZERO;
        }
        let doublings = (streak - 2).min(31);
        self.first_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }
}

/// One server's health record, kept by the manager and shown by `servers status`.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthState {
    pub health: Health,
    pub last_latency: Option<Duration>,
    pub last_error: Option<String>,
    /// Restarts so far (successful or not).
    pub restarts: u32,
    /// Restarts since the server last passed a health check.
    pub streak: u32,
    /// Whether the process can be restarted by rkmcp (stdio); HTTP servers are reconnected the
    /// same way, plugin transports too.
    pub restartable: bool,
}

impl HealthState {
    pub fn new(restartable: bool) -> Self {
        Self {
            health: Health::Healthy,
            last_latency: None,
            last_error: None,
            restarts: 0,
            streak: 0,
            restartable,
        }
    }

    /// Records a check and says what to do. A slow answer past `unhealthy_after` counts as
    /// unhealthy; unhealthy and closed both lead to a restart (with backoff) while restarts remain.
    pub fn record(
        &mut self,
        policy: &HealthPolicy,
        outcome: CheckOutcome,
    ) -> (Action, Option<Transition>) {
        let was_up = self.health.is_up();
        let reason = match outcome {
            CheckOutcome::Answered(latency) => {
                self.last_latency = Some(latency);
                self.health = policy.classify(latency);
                if self.health.is_up() {
                    self.last_error = None;
                    if self.health == Health::Healthy {
                        self.streak = 0;
                    }
                    return (Action::Nothing, None);
                }
                format!(
                    "answered only after {}",
                    humantime::format_duration(round_ms(latency))
                )
            }
            CheckOutcome::Failed(reason) => {
                self.health = Health::Unhealthy;
                reason
            }
            CheckOutcome::Closed(reason) => {
                self.health = Health::Down;
                reason
            }
        };
        self.last_error = Some(reason.clone());
        let transition = was_up.then_some(Transition::WentDown { reason });
        (self.next_restart(policy), transition)
    }

    /// A restart attempt failed (the server did not come up): try again or give up.
    pub fn restart_failed(&mut self, policy: &HealthPolicy, error: String) -> Action {
        self.health = Health::Down;
        self.last_error = Some(error);
        self.next_restart(policy)
    }

    /// The server is up again after a restart.
    pub fn restarted(&mut self, latency: Duration) -> Transition {
        self.health = Health::Healthy;
        self.last_latency = Some(latency);
        self.last_error = None;
        Transition::CameBack {
            restarts: self.restarts,
        }
    }

    fn next_restart(&mut self, policy: &HealthPolicy) -> Action {
        if !self.restartable {
            return Action::Nothing;
        }
        if self.restarts >= policy.max_restarts {
            self.health = Health::GaveUp;
            return Action::GiveUp;
        }
        self.restarts += 1;
        self.streak += 1;
        Action::Restart {
            after: policy.backoff(self.streak),
            attempt: self.restarts,
        }
    }
}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis().min(u64::MAX as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn latency_thresholds() {
        let p = HealthPolicy::default();
        assert_eq!(p.classify(Duration::from_millis(3)), Health::Healthy);
        assert_eq!(p.classify(Duration::from_millis(999)), Health::Healthy);
        assert_eq!(p.classify(secs(1)), Health::Degraded);
        assert_eq!(p.classify(secs(5)), Health::Degraded);
        assert_eq!(p.classify(Duration::from_millis(5001)), Health::Unhealthy);
    }

    #[test]
    fn backoff_is_immediate_then_doubles_from_one_second_to_a_minute() {
        let p = HealthPolicy::default();
        let waits: Vec<u64> = (1..=9).map(|a| p.backoff(a).as_secs()).collect();
        assert_eq!(waits, [0, 1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(p.backoff(u32::MAX), secs(60));
    }

    #[test]
    fn crash_restarts_with_backoff_then_gives_up_after_max_restarts() {
        let p = HealthPolicy {
            max_restarts: 3,
            ..HealthPolicy::default()
        };
        let mut s = HealthState::new(true);
        let (action, transition) = s.record(&p, CheckOutcome::Closed("process exited".into()));
        assert_eq!(
            action,
            Action::Restart {
                after: secs(0),
                attempt: 1
            }
        );
        assert_eq!(
            transition,
            Some(Transition::WentDown {
                reason: "process exited".into()
            })
        );
        assert_eq!(s.health, Health::Down);
        // The restart did not come up: the next one waits, no second "down" notice.
        assert_eq!(
            s.restart_failed(&p, "initialize failed".into()),
            Action::Restart {
                after: secs(1),
                attempt: 2
            }
        );
        assert_eq!(
            s.restarted(Duration::from_millis(40)),
            Transition::CameBack { restarts: 2 }
        );
        assert!(s.health.is_up());
        // Down again before any check passed: still the same streak, so it waits longer.
        let (action, _) = s.record(&p, CheckOutcome::Closed("process exited".into()));
        assert_eq!(
            action,
            Action::Restart {
                after: secs(2),
                attempt: 3
            }
        );
        assert_eq!(s.restart_failed(&p, "again".into()), Action::GiveUp);
        assert_eq!(s.health, Health::GaveUp);
        assert_eq!(s.restarts, 3);
    }

    #[test]
    fn a_healthy_check_ends_the_streak_so_the_next_crash_restarts_at_once() {
        let p = HealthPolicy::default();
        let mut s = HealthState::new(true);
        s.record(&p, CheckOutcome::Closed("exited".into()));
        s.restarted(Duration::from_millis(5));
        s.record(&p, CheckOutcome::Answered(Duration::from_millis(5)));
        let (action, _) = s.record(&p, CheckOutcome::Closed("exited".into()));
        assert_eq!(
            action,
            Action::Restart {
                after: Duration::ZERO,
                attempt: 2
            }
        );
    }

    #[test]
    fn slow_answers_degrade_without_restarting_and_recover() {
        let p = HealthPolicy::default();
        let mut s = HealthState::new(true);
        assert_eq!(
            s.record(&p, CheckOutcome::Answered(secs(2))),
            (Action::Nothing, None)
        );
        assert_eq!(s.health, Health::Degraded);
        assert_eq!(s.last_latency, Some(secs(2)));
        s.record(&p, CheckOutcome::Answered(Duration::from_millis(10)));
        assert_eq!(s.health, Health::Healthy);
        assert_eq!(s.restarts, 0);
    }

    #[test]
    fn unhealthy_server_is_restarted_and_the_notice_names_why() {
        let p = HealthPolicy::default();
        let mut s = HealthState::new(true);
        let (action, transition) = s.record(&p, CheckOutcome::Answered(secs(7)));
        assert_eq!(s.health, Health::Unhealthy);
        assert!(matches!(action, Action::Restart { attempt: 1, .. }));
        assert_eq!(
            transition,
            Some(Transition::WentDown {
                reason: "answered only after 7s".into()
            })
        );
        let (action, _) = s.record(&p, CheckOutcome::Failed("ping timed out".into()));
        assert!(matches!(action, Action::Restart { attempt: 2, .. }));
        assert_eq!(s.last_error.as_deref(), Some("ping timed out"));
    }

    #[test]
    fn servers_rkmcp_cannot_restart_are_only_marked() {
        let p = HealthPolicy::default();
        let mut s = HealthState::new(false);
        let (action, _) = s.record(&p, CheckOutcome::Closed("connection reset".into()));
        assert_eq!(action, Action::Nothing);
        assert_eq!(s.health, Health::Down);
        assert_eq!(s.restarts, 0);
    }
}
