//! Resource subscriptions on 2026-07-28, where updates come through `subscriptions/listen`
//! (there is no `resources/subscribe`), against tests/servers/subscriptions_server.py (PyPI
//! `mcp` 2.x): the session's subscribe/unsubscribe and `rkmcp resources watch`.
use std::time::Duration;

use rkmcp::mcp::{SessionEvent, SessionManager};
use rkmcp_tests::*;
use serde_json::Value;

const URI: &str = "counter://value";

fn subscriptions_server(extra_args: &[&str]) -> String {
    let mut args = vec![
        repo()
            .join("tests/servers/subscriptions_server.py")
            .display()
            .to_string(),
    ];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let python = deps().join("venv/bin/python").display().to_string();
    stdio_entry("counter", &python, &args, "")
}

/// The next update of [`URI`] within `limit`, if any.
async fn next_update(
    events: &mut tokio::sync::broadcast::Receiver<SessionEvent>,
    limit: Duration,
) -> Option<String> {
    tokio::time::timeout(limit, async {
        loop {
            match events.recv().await {
                Ok(SessionEvent::ResourceUpdated { uri, .. }) if uri == URI => return uri,
                Ok(_) => continue,
                Err(e) => panic!("event channel: {e}"),
            }
        }
    })
    .await
    .ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_subscription_listens_and_unsubscribing_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(dir.path(), &subscriptions_server(&[]));
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let session = manager.session("counter").unwrap();
    assert!(session.is_stateless(), "the server speaks 2026-07-28");
    let mut events = session.subscribe();
    session.subscribe_resource(URI).await.unwrap();
    assert_eq!(session.subscribed(), vec![URI.to_string()]);

    session.call_tool("bump", None).await.unwrap();
    assert!(
        next_update(&mut events, Duration::from_secs(10))
            .await
            .is_some(),
        "no update through subscriptions/listen"
    );
    session.call_tool("bump", None).await.unwrap();
    assert!(
        next_update(&mut events, Duration::from_secs(10))
            .await
            .is_some()
    );

    session.unsubscribe_resource(URI).await.unwrap();
    assert!(session.subscribed().is_empty());
    session.call_tool("bump", None).await.unwrap();
    assert_eq!(
        next_update(&mut events, Duration::from_secs(1)).await,
        None,
        "an update arrived after unsubscribing"
    );
    manager.shutdown().await;
}

#[test]
fn resources_watch_prints_one_line_per_update_on_2026() {
    let home = tempfile::tempdir().unwrap();
    let config = write(
        home.path(),
        "rkmcp.toml",
        &subscriptions_server(&["--tick", "0.3"]),
    );
    let out = run_rkmcp(
        home.path(),
        &[
            "--config",
            &config.display().to_string(),
            "resources",
            "watch",
            URI,
            "--read",
            "--count",
            "2",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line["uri"], URI, "{line}");
        assert_eq!(line["server"], "counter");
        let text = line["contents"][0]["text"].as_str().unwrap_or_default();
        assert!(text.parse::<u64>().is_ok_and(|n| n >= 1), "{line}");
    }
}
