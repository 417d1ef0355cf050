//! Server health and restart against a real Python MCP server that misbehaves on purpose
//! (tests/servers/flaky.py): a crash mid-call, a server that stops answering, a slow one, and a
//! server that keeps crashing until rkmcp gives up.
use std::time::Duration;

use rkmcp::mcp::health::{Health, Transition};
use rkmcp::mcp::{SessionEvent, SessionManager};
use rkmcp_tests::*;
use serde_json::json;
use tokio::sync::broadcast;

fn flaky(extra: &str) -> String {
    let python = deps().join("venv-plugins/bin/python");
    let script = repo().join("tests/servers/flaky.py");
    stdio_entry(
        "flaky",
        &python.display().to_string(),
        &[script.display().to_string()],
        extra,
    )
}

fn args(v: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    v.as_object().cloned()
}

/// Waits for the next health transition of the session.
async fn next_transition(
    events: &mut broadcast::Receiver<SessionEvent>,
    within: Duration,
) -> Transition {
    tokio::time::timeout(within, async {
        loop {
            match events.recv().await {
                Ok(SessionEvent::Health { transition, .. }) => return transition,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    })
    .await
    .expect("no health transition in time")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_server_is_restarted_and_its_tools_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(dir.path(), &flaky("env = { CRASH_AFTER = \"2\" }"));
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let session = manager.session("flaky").unwrap().clone();
    let first_pid = session.pid().unwrap();
    let mut events = session.subscribe();
    for i in 0..2 {
        let r = manager
            .call_tool("flaky__echo", args(json!({"text": format!("hi {i}")})))
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true));
    }
    // The third call kills the process mid-call: the call fails and says why.
    let err = manager
        .call_tool("flaky__echo", args(json!({"text": "boom"})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("server `flaky`"), "{err}");
    assert!(err.contains("restart"), "{err}");
    let down = next_transition(&mut events, Duration::from_secs(10)).await;
    assert!(
        matches!(&down, Transition::WentDown { reason } if reason.contains("exited or crashed")),
        "{down:?}"
    );
    let back = next_transition(&mut events, Duration::from_secs(30)).await;
    assert_eq!(back, Transition::CameBack { restarts: 1 });
    // Same Arc<Session>, new process, same tools, and calls work again.
    assert_ne!(session.pid().unwrap(), first_pid);
    assert!(manager.tools().0.iter().any(|t| t.name == "flaky__echo"));
    let r = manager
        .call_tool("flaky__echo", args(json!({"text": "again"})))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true));
    let health = session.health();
    assert_eq!(health.health, Health::Healthy);
    assert_eq!(health.restarts, 1);
    assert_eq!(session.restarts(), 1);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_in_flight_on_a_hung_server_fails_saying_the_server_restarted() {
    let dir = tempfile::tempdir().unwrap();
    // Checked every second; a ping unanswered for 5 s makes it unhealthy and restarted.
    let config = load_config(
        dir.path(),
        &flaky("health_interval = \"1s\"\nrequest_timeout = \"60s\""),
    );
    let manager = SessionManager::start(&config, None).await;
    let session = manager.session("flaky").unwrap().clone();
    let mut events = session.subscribe();
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        manager.call_tool("flaky__hang", None),
    )
    .await
    .expect("the hung call was not failed by the restart")
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("the server restarted while the request was in flight"),
        "{err}"
    );
    let down = next_transition(&mut events, Duration::from_secs(5)).await;
    assert!(
        matches!(&down, Transition::WentDown { reason } if reason.contains("no answer to ping")),
        "{down:?}"
    );
    assert_eq!(
        next_transition(&mut events, Duration::from_secs(30)).await,
        Transition::CameBack { restarts: 1 }
    );
    let r = manager
        .call_tool("flaky__echo", args(json!({"text": "alive"})))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_server_is_degraded_but_not_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(dir.path(), &flaky("health_interval = \"1s\""));
    let manager = SessionManager::start(&config, None).await;
    let session = manager.session("flaky").unwrap().clone();
    // The whole server stops for 3 s: the ping the monitor sends meanwhile is answered late.
    manager
        .call_tool("flaky__block", args(json!({"seconds": 3})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let health = session.health();
    assert_eq!(health.health, Health::Degraded, "{health:?}");
    let latency = health.last_latency.unwrap();
    assert!(latency >= Duration::from_secs(1), "{latency:?}");
    assert_eq!(health.restarts, 0);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_keeps_crashing_is_given_up_after_max_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(dir.path(), &flaky("max_restarts = 1"));
    let manager = SessionManager::start(&config, None).await;
    let session = manager.session("flaky").unwrap().clone();
    let mut events = session.subscribe();
    let _ = manager.call_tool("flaky__crash", None).await;
    assert!(matches!(
        next_transition(&mut events, Duration::from_secs(10)).await,
        Transition::WentDown { .. }
    ));
    assert_eq!(
        next_transition(&mut events, Duration::from_secs(30)).await,
        Transition::CameBack { restarts: 1 }
    );
    let _ = manager.call_tool("flaky__crash", None).await;
    assert!(matches!(
        next_transition(&mut events, Duration::from_secs(10)).await,
        Transition::WentDown { .. }
    ));
    assert_eq!(
        next_transition(&mut events, Duration::from_secs(10)).await,
        Transition::GaveUp { restarts: 1 }
    );
    assert_eq!(session.health().health, Health::GaveUp);
    let err = manager
        .call_tool("flaky__echo", args(json!({"text": "x"})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("connection closed"), "{err}");
    manager.shutdown().await;
}
