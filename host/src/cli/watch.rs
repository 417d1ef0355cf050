//! `rkmcp resources watch URI`: subscribe, then one JSON line per update on stdout (for scripts:
//! `{"server":…,"uri":…,"at":"RFC 3339 time"}` plus `"contents"` with `--read`), until Ctrl-C or
//! `--count` updates. The subscription survives a server restart (the session renews it).
use std::io::Write;
use std::sync::Arc;

use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use crate::mcp::{Session, SessionEvent};

pub async fn watch(
    session: &Arc<Session>,
    uri: &str,
    read: bool,
    count: Option<u64>,
) -> anyhow::Result<()> {
    // Subscribe to events first, so no update between the two is lost.
    let mut events = session.subscribe();
    session.subscribe_resource(uri).await?;
    let mut seen = 0u64;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    while count.is_none_or(|c| seen < c) {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = &mut interrupted => break,
        };
        let updated = match event {
            Ok(SessionEvent::ResourceUpdated { uri: u, .. }) if u == uri => u,
            Ok(SessionEvent::Health { transition, .. }) => {
                eprintln!("rkmcp: server `{}` {transition}", session.name());
                continue;
            }
            Ok(_) => continue,
            Err(RecvError::Lagged(n)) => {
                eprintln!("rkmcp: {n} notifications were dropped (too many at once)");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        let mut line = json!({
            "server": session.name(),
            "uri": updated,
            "at": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        });
        if read {
            line["contents"] = match session.read_resource(uri).await {
                Ok(r) => serde_json::to_value(&r.contents)?,
                Err(e) => json!({"error": e.to_string()}),
            };
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()?;
        seen += 1;
    }
    if let Err(e) = session.unsubscribe_resource(uri).await {
        tracing::debug!("{e}");
    }
    Ok(())
}
