//! Who gets the model first when two generations want it: the user's own turn, always.
//!
//! A server's sampling request runs on the same model as the user's conversation, and the
//! runtimes run one generation at a time. Without an order, a server could keep the model busy
//! (one long request after another) while the user waits. So generations come in two kinds:
//! the user's ([`crate::SharedBackend::generate_within`]) and ones that give way
//! ([`crate::SharedBackend::generate_giving_way`]). A user's generation that finds the model busy
//! stops the one giving way (it ends with [`crate::FinishReason::Aborted`]) and takes the model
//! next; one giving way that gets the model while a user's generation waits stops at once.
//!
//! The two checks are ordered so neither can miss the other: the waiting side counts itself
//! before looking for a running generation to stop, and the running side registers itself before
//! looking for waiters.
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::AbortHandle;

#[derive(Default)]
pub(crate) struct Priority {
    /// User generations waiting for the model.
    waiting: AtomicUsize,
    /// The generation giving way that holds the model now, if any.
    running: Mutex<Option<AbortHandle>>,
}

impl Priority {
    /// A user's generation found the model busy: counted as waiting until the guard drops, and
    /// whatever gives way is stopped.
    pub(crate) fn wait_first(&self) -> WaitingGuard<'_> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        if let Some(running) = self.slot().as_ref() {
            running.abort();
        }
        WaitingGuard(self)
    }

    /// A generation giving way now holds the model: registered until the guard drops, and
    /// stopped at once when a user's generation already waits.
    pub(crate) fn run_giving_way(&self, abort: &AbortHandle) -> RunningGuard<'_> {
        *self.slot() = Some(abort.clone());
        if self.waiting.load(Ordering::SeqCst) > 0 {
            abort.abort();
        }
        RunningGuard(self)
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<AbortHandle>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) struct WaitingGuard<'a>(&'a Priority);

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) struct RunningGuard<'a>(&'a Priority);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        *self.0.slot() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_user_stops_the_generation_giving_way() {
        let p = Priority::default();
        let sampling = AbortHandle::new();
        let running = p.run_giving_way(&sampling);
        assert!(!sampling.is_aborted());
        let waiting = p.wait_first();
        assert!(sampling.is_aborted());
        drop(running);
        drop(waiting);
        // Nobody waits any more: the next one giving way runs.
        let next = AbortHandle::new();
        let _running = p.run_giving_way(&next);
        assert!(!next.is_aborted());
    }

    #[test]
    fn one_giving_way_that_starts_while_a_user_waits_stops_at_once() {
        let p = Priority::default();
        let _waiting = p.wait_first();
        let sampling = AbortHandle::new();
        let _running = p.run_giving_way(&sampling);
        assert!(sampling.is_aborted());
    }

    #[test]
    fn a_finished_generation_is_not_stopped_by_a_later_wait() {
        let p = Priority::default();
        let sampling = AbortHandle::new();
        drop(p.run_giving_way(&sampling));
        let _waiting = p.wait_first();
        assert!(!sampling.is_aborted());
    }
}
