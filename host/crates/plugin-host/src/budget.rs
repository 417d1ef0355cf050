//! How many unreadable messages a transport plugin may deliver before its connection is
//! closed. Pure policy (time is passed in), used by the adapter that parses what a transport
//! returns (`host/crates/sessions/src/plugin_transport.rs`).
//!
//! A transport that returns garbage in a loop would otherwise be logged once per message
//! (hundreds of MB of stderr in seconds) while the user waits for a timeout. The first few
//! bad messages are reported, the rest are counted, and once `limit` arrive within `window`
//! the connection is closed with one error naming the plugin.
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// What to do with one bad message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadVerdict {
    /// Report it (one log line).
    Report,
    /// Count it silently: enough have been reported.
    Quiet,
    /// Close the connection: `count` bad messages arrived within the window.
    Close { count: usize },
}

#[derive(Debug, Clone)]
pub struct BadMessageBudget {
    limit: usize,
    window: Duration,
    reported_max: usize,
    reported: usize,
    recent: VecDeque<Instant>,
    total: u64,
}

impl Default for BadMessageBudget {
    /// 20 bad messages within 10 s close the connection; the first 3 are reported.
    fn default() -> Self {
        BadMessageBudget::new(20, Duration::from_secs(10), 3)
    }
}

impl BadMessageBudget {
    pub fn new(limit: usize, window: Duration, reported_max: usize) -> Self {
        BadMessageBudget {
            limit: limit.max(1),
            window,
            reported_max,
            reported: 0,
            recent: VecDeque::new(),
            total: 0,
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// Bad messages seen on this connection.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Records one bad message arriving at `now`.
    pub fn record(&mut self, now: Instant) -> BadVerdict {
        self.total += 1;
        self.recent.push_back(now);
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > self.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.limit {
            return BadVerdict::Close {
                count: self.recent.len(),
            };
        }
        if self.reported < self.reported_max {
            self.reported += 1;
            BadVerdict::Report
        } else {
            BadVerdict::Quiet
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_reported_a_few_times_then_closed() {
        let mut b = BadMessageBudget::new(5, Duration::from_secs(10), 2);
        let t = Instant::now();
        let verdicts: Vec<_> = (0..5).map(|_| b.record(t)).collect();
        assert_eq!(
            verdicts,
            [
                BadVerdict::Report,
                BadVerdict::Report,
                BadVerdict::Quiet,
                BadVerdict::Quiet,
                BadVerdict::Close { count: 5 }
            ]
        );
    }

    #[test]
    fn occasional_bad_messages_never_close() {
        let mut b = BadMessageBudget::new(3, Duration::from_secs(10), 3);
        let t = Instant::now();
        for i in 0..100u64 {
            let v = b.record(t + Duration::from_secs(6 * i));
            assert!(!matches!(v, BadVerdict::Close { .. }), "closed at {i}");
        }
        assert_eq!(b.total(), 100);
    }
}
