//! Resource subscriptions on 2026-07-28 (SEP-2575): no `resources/subscribe` and no standing
//! stream there; a `subscriptions/listen` request whose response stays open carries the
//! server's `notifications/resources/updated`. One listen stream per subscribed URI (rmcp's
//! `Peer::listen`), read by a task that turns updates into [`SessionEvent::ResourceUpdated`],
//! exactly what 2025-11-25 subscriptions produce, so `/subscribe` and `resources watch` work
//! alike on both versions. Unsubscribing cancels the stream. A stream is not resumable: after a
//! server restart the session listens again (see `Session::restart`).
use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::model::{ServerNotification, SubscriptionFilter};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::session::{Session, SessionError, SessionEvent};

/// The open listen streams of one session, by URI.
#[derive(Debug, Default)]
pub struct Listeners {
    streams: Mutex<HashMap<String, CancellationToken>>,
}

impl Listeners {
    fn replace(&self, uri: &str, token: Option<CancellationToken>) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        let old = match token {
            Some(t) => streams.insert(uri.to_string(), t),
            None => streams.remove(uri),
        };
        if let Some(old) = old {
            old.cancel();
        }
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        let streams = self.streams.get_mut().unwrap_or_else(|e| e.into_inner());
        for token in streams.values() {
            token.cancel();
        }
    }
}

/// Starts (`on`) or stops listening for updates of `uri`.
pub async fn set(session: &Session, uri: &str, on: bool) -> Result<(), SessionError> {
    if !on {
        session.listeners.replace(uri, None);
        return Ok(());
    }
    let filter = SubscriptionFilter::builder()
        .resource_subscription(uri)
        .build();
    let peer = session.peer();
    let what = format!("subscribing to `{uri}` (subscriptions/listen)");
    let mut subscription = session.timed(what.clone(), peer.listen(filter)).await?;
    let acknowledged = subscription
        .acknowledged()
        .resource_subscriptions
        .as_ref()
        .is_some_and(|uris| uris.iter().any(|u| u == uri));
    if !acknowledged {
        let _ = subscription.cancel().await;
        return Err(SessionError::Request {
            server: session.name().to_string(),
            what,
            message: "the server did not acknowledge updates for this resource".into(),
        });
    }
    let stop = CancellationToken::new();
    session.listeners.replace(uri, Some(stop.clone()));
    let events = session.event_sender();
    let server = session.name().to_string();
    let uri = uri.to_string();
    tokio::spawn(async move {
        loop {
            // Biased: once unsubscribed, an update that is also ready must not be forwarded.
            let next = tokio::select! {
                biased;
                _ = stop.cancelled() => {
                    let _ = subscription.cancel().await;
                    return;
                }
                next = subscription.next() => next,
            };
            match next {
                Ok(Some(ServerNotification::ResourceUpdatedNotification(n))) => {
                    forward(&events, &server, n.params.uri);
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    // rmcp words the end only as a Debug dump: for debugging.
                    tracing::debug!(server = %server, "the listen stream for `{uri}` ended: {:?}", subscription.end());
                    return;
                }
                Err(err) => {
                    tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %server, "the listen stream for `{uri}` failed: {err}");
                    return;
                }
            }
        }
    });
    Ok(())
}

fn forward(events: &broadcast::Sender<SessionEvent>, server: &str, uri: String) {
    let _ = events.send(SessionEvent::ResourceUpdated {
        server: server.to_string(),
        uri,
    });
}
