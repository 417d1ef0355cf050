//! Enforces [`super::health`] for one session: watches for a closed connection (cheap, every
//! [`CLOSED_POLL`]), pings every `health_interval`, and restarts the server with backoff when the
//! policy says so. Notices go out on the session's event channel.
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::health::{Action, CheckOutcome, HealthPolicy, Transition};
use super::session::Session;

/// How often a closed connection is looked for. A crash is noticed within this time, not
/// within `health_interval`; the check is a channel-state read, so it costs nothing.
pub const CLOSED_POLL: Duration = Duration::from_millis(100);

/// The policy for one server's config.
pub fn policy_for(session: &Session) -> HealthPolicy {
    HealthPolicy {
        interval: session.config.health_interval,
        max_restarts: session.config.max_restarts,
        ..HealthPolicy::default()
    }
}

/// Starts watching `session` until `stop` is cancelled or the session is dropped. The task holds
/// only a weak reference between checks, so it never keeps a session alive at shutdown.
pub fn spawn(session: &Arc<Session>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    let weak = Arc::downgrade(session);
    let policy = policy_for(session);
    tokio::spawn(async move {
        tokio::select! {
            _ = watch(weak, policy) => {}
            _ = stop.cancelled() => {}
        }
    })
}

async fn watch(weak: Weak<Session>, policy: HealthPolicy) {
    let mut last_check = Instant::now();
    loop {
        tokio::time::sleep(CLOSED_POLL).await;
        let Some(session) = weak.upgrade() else {
            return;
        };
        let outcome = if session.is_closed() {
            CheckOutcome::Closed("the connection closed (the server exited or crashed)".into())
        } else if last_check.elapsed() >= policy.interval {
            check(&session, &policy).await
        } else {
            continue;
        };
        let (action, transition) = session.update_health(|h| h.record(&policy, outcome));
        if let Some(t) = transition {
            tracing::warn!(server = %session.name(), "server `{}` {t}", session.name());
            session.announce(t);
        }
        if !recover(&session, &policy, action).await {
            return;
        }
        last_check = Instant::now();
    }
}

/// One ping, bounded by the unhealthy threshold.
async fn check(session: &Session, policy: &HealthPolicy) -> CheckOutcome {
    match tokio::time::timeout(policy.unhealthy_after, session.ping()).await {
        Ok(Ok(latency)) => CheckOutcome::Answered(latency),
        Ok(Err(err)) => CheckOutcome::Failed(err.to_string()),
        Err(_) => CheckOutcome::Failed(format!(
            "no answer to ping within {}",
            humantime::format_duration(policy.unhealthy_after)
        )),
    }
}

/// Restarts until the server is up or the policy gives up. Returns whether to keep watching.
async fn recover(session: &Session, policy: &HealthPolicy, mut action: Action) -> bool {
    loop {
        match action {
            Action::Nothing => return true,
            Action::GiveUp => {
                let restarts = session.health().restarts;
                session.announce(Transition::GaveUp { restarts });
                return false;
            }
            Action::Restart { after, attempt } => {
                tracing::info!(server = %session.name(), "restart {attempt} in {after:?}");
                tokio::time::sleep(after).await;
                match session.restart().await {
                    Ok(took) => {
                        let t = session.update_health(|h| h.restarted(took));
                        session.announce(t);
                        return true;
                    }
                    Err(err) => {
                        tracing::warn!(server = %session.name(), "restart {attempt} failed: {err}");
                        action =
                            session.update_health(|h| h.restart_failed(policy, err.to_string()));
                    }
                }
            }
        }
    }
}
