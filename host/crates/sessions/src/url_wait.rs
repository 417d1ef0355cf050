//! URL-mode elicitation ends out of band: the user accepts, finishes at the page, and the server
//! says so with `notifications/elicitation/complete` (`elicitationId`). [`UrlCompletions`] keeps
//! the accepted visits that wait for that notification, by server and id; the session's handler
//! hands every unknown notification to [`super::ClientRequests::notification`], which resolves
//! them here.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

/// The notification that ends a URL-mode elicitation.
pub const COMPLETE_METHOD: &str = "notifications/elicitation/complete";

/// How long an accepted visit is waited for before the user is told nothing came back.
pub const URL_WAIT: Duration = Duration::from_secs(10 * 60);

/// The waiting visits, by (server, elicitation id).
type Waiting = HashMap<(String, String), oneshot::Sender<()>>;

/// Accepted URL-mode elicitations waiting for their completion notification.
#[derive(Debug, Default, Clone)]
pub struct UrlCompletions {
    waiting: Arc<Mutex<Waiting>>,
}

impl UrlCompletions {
    /// Registers a visit before the accept goes back, so a server that confirms at once is
    /// not missed. The receiver resolves on the notification (an error if the wait is replaced).
    pub fn expect(&self, server: &str, elicitation_id: &str) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.lock()
            .insert((server.to_string(), elicitation_id.to_string()), tx);
        rx
    }

    /// Handles a notification from `server`; true when it completed a waiting visit.
    pub fn notified(&self, server: &str, method: &str, params: Option<&Value>) -> bool {
        if method != COMPLETE_METHOD {
            return false;
        }
        let Some(id) = params
            .and_then(|p| p.get("elicitationId"))
            .and_then(Value::as_str)
        else {
            return false;
        };
        match self.lock().remove(&(server.to_string(), id.to_string())) {
            Some(tx) => tx.send(()).is_ok(),
            None => false,
        }
    }

    /// Forgets a visit (timed out).
    pub fn forget(&self, server: &str, elicitation_id: &str) {
        self.lock()
            .remove(&(server.to_string(), elicitation_id.to_string()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_completion_resolves_only_its_own_visit() {
        let urls = UrlCompletions::default();
        let mut mine = urls.expect("s", "e1");
        let other = urls.expect("t", "e1");
        assert!(!urls.notified(
            "s",
            "notifications/other",
            Some(&json!({"elicitationId": "e1"}))
        ));
        assert!(!urls.notified("s", COMPLETE_METHOD, Some(&json!({"elicitationId": "e2"}))));
        assert!(mine.try_recv().is_err(), "not yet");
        assert!(urls.notified("s", COMPLETE_METHOD, Some(&json!({"elicitationId": "e1"}))));
        assert!(mine.await.is_ok());
        assert!(
            !urls.notified("s", COMPLETE_METHOD, Some(&json!({"elicitationId": "e1"}))),
            "once"
        );
        drop(other);
    }
}
