//! A bound on server notifications waiting to be handled.
//!
//! rmcp hands every notification to the client handler on a task of its own, without limit: a
//! server that sends log or progress notifications faster than they are handled makes rkmcp's
//! memory grow without bound (a million log notifications took 1.7 GB). Each admitted
//! notification carries a [`Ticket`] in its extensions; rmcp drops the extensions when the
//! handler is done, which returns the ticket. When [`NotificationBudget::limit`] tickets are out,
//! further log and progress notifications are dropped and counted, with one notice per flood.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Notifications that may wait to be handled at once, per server.
pub const DEFAULT_LIMIT: usize = 256;
/// A flood is over once this long passes without a drop; the next drop starts a new notice.
const QUIET: Duration = Duration::from_secs(5);

/// Returned (by being dropped) when the notification it was given to has been handled.
#[derive(Clone)]
pub struct Ticket(#[allow(dead_code)] Arc<Returned>);

struct Returned(Arc<AtomicUsize>);

impl Drop for Returned {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub struct NotificationBudget {
    server: String,
    limit: usize,
    out: Arc<AtomicUsize>,
    dropped_total: u64,
    dropped_in_flood: u64,
    last_drop: Option<Instant>,
}

/// What to do with one notification.
pub enum Admit {
    /// Pass it on with this ticket attached.
    Pass(Ticket),
    /// Drop it; `notice` is set for the first drop of a flood.
    Drop { notice: Option<String> },
}

impl NotificationBudget {
    pub fn new(server: &str, limit: usize) -> Self {
        NotificationBudget {
            server: server.to_string(),
            limit: limit.max(1),
            out: Arc::new(AtomicUsize::new(0)),
            dropped_total: 0,
            dropped_in_flood: 0,
            last_drop: None,
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Notifications admitted and not yet handled.
    pub fn waiting(&self) -> usize {
        self.out.load(Ordering::Acquire)
    }

    pub fn dropped(&self) -> u64 {
        self.dropped_total
    }

    pub fn admit(&mut self, now: Instant) -> Admit {
        if self.waiting() < self.limit {
            self.out.fetch_add(1, Ordering::AcqRel);
            return Admit::Pass(Ticket(Arc::new(Returned(self.out.clone()))));
        }
        let new_flood = self
            .last_drop
            .is_none_or(|last| now.duration_since(last) >= QUIET);
        if new_flood {
            self.dropped_in_flood = 0;
        }
        self.last_drop = Some(now);
        self.dropped_total += 1;
        self.dropped_in_flood += 1;
        Admit::Drop {
            notice: new_flood.then(|| {
                format!(
                    "server `{}` sends notifications faster than rkmcp can handle them: \
                     dropping log and progress notifications while {} wait{}",
                    self.server,
                    self.limit,
                    if self.dropped_total > 1 {
                        format!(" ({} dropped so far)", self.dropped_total - 1)
                    } else {
                        String::new()
                    }
                )
            }),
        }
    }

    /// The summary for the end of the session, if anything was dropped.
    pub fn summary(&self) -> Option<String> {
        (self.dropped_total > 0).then(|| {
            format!(
                "server `{}`: {} log/progress notifications were dropped in all",
                self.server, self.dropped_total
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_beyond_the_limit_with_one_notice_per_flood() {
        let mut budget = NotificationBudget::new("s", 2);
        let t0 = Instant::now();
        let a = budget.admit(t0);
        let b = budget.admit(t0);
        assert!(matches!(a, Admit::Pass(_)) && matches!(b, Admit::Pass(_)));
        let notices: Vec<bool> = (0..100)
            .map(|i| match budget.admit(t0 + Duration::from_millis(i)) {
                Admit::Drop { notice } => notice.is_some(),
                Admit::Pass(_) => panic!("over the limit"),
            })
            .collect();
        assert_eq!(notices.iter().filter(|n| **n).count(), 1);
        assert!(notices[0]);
        assert_eq!(budget.dropped(), 100);
        // Handling one returns its ticket.
        drop(a);
        assert_eq!(budget.waiting(), 1);
        let c = budget.admit(t0 + Duration::from_secs(1));
        assert!(matches!(c, Admit::Pass(_)));
        // A later flood gets a notice of its own.
        let Admit::Drop { notice } = budget.admit(t0 + Duration::from_secs(30)) else {
            panic!()
        };
        assert!(notice.unwrap().contains("100 dropped so far"));
        drop((b, c));
        assert_eq!(budget.waiting(), 0);
    }
}
