//! Session behaviour the public servers cannot show, against our own fixture server:
//! pagination, `list_changed` refresh, colliding tool names, a server that dies at start, one
//! that never answers, a request that times out, and no orphaned children; and progress
//! notifications from server-everything's long-running operation.
use std::time::Duration;

use rkmcp::mcp::{ListKind, SessionEvent, SessionManager};
use rkmcp_tests::*;
use serde_json::{Value, json};

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

fn fixture(name: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    stdio_entry(name, FIXTURE, &args, extra)
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_are_fetched_across_all_pages() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(
        dir.path(),
        &fixture("paged", &["--tools", "25", "--page-size", "4"], ""),
    );
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let catalog = manager.session("paged").unwrap().catalog();
    // 4 fixed tools + 25 numbered ones, served 4 per page.
    assert_eq!(catalog.tools.len(), 29);
    assert_eq!(catalog.tools.last().unwrap().name, "tool_024");
    assert_eq!(catalog.resources.len(), 5);
    assert_eq!(catalog.prompts.len(), 3);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_list_is_refreshed_on_list_changed() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(dir.path(), &fixture("dyn", &["--page-size", "2"], ""));
    let manager = SessionManager::start(&config, None).await;
    let session = manager.session("dyn").unwrap().clone();
    let before = session.catalog();
    let mut events = session.subscribe();
    let added = manager.call_tool("dyn__add_tool", None).await.unwrap();
    assert_ne!(added.is_error, Some(true));
    let refreshed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match events.recv().await {
                Ok(SessionEvent::ListRefreshed {
                    list: ListKind::Tools,
                    ..
                }) => break,
                Ok(_) => continue,
                Err(e) => panic!("event stream ended: {e}"),
            }
        }
    })
    .await;
    assert!(refreshed.is_ok(), "no refresh after tools/list_changed");
    let after = session.catalog();
    assert_eq!(after.tools.len(), before.tools.len() + 1);
    assert!(after.generation > before.generation);
    let (tools, _) = manager.tools();
    assert!(tools.iter().any(|t| t.name == "dyn__dynamic_4"));
    // The new tool can be called under its exposed name.
    let called = manager.call_tool("dyn__dynamic_4", None).await.unwrap();
    assert!(
        serde_json::to_string(&called)
            .unwrap()
            .contains("dynamic_4 called")
    );
    drop(session);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn colliding_tool_names_are_resolved_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "{}{}",
        fixture("alpha", &[], "prefix = \"\""),
        fixture("beta", &[], "prefix = \"\"")
    );
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    let (tools, collisions) = manager.tools();
    let echo: Vec<_> = tools.iter().filter(|t| t.tool.name == "echo").collect();
    assert_eq!(echo.len(), 2, "neither tool may be dropped");
    assert_eq!(echo[0].name, "echo");
    assert_eq!(
        echo[0].server, "alpha",
        "the first server in the config keeps the name"
    );
    assert_eq!(echo[1].name, "echo_2");
    assert_eq!(echo[1].server, "beta");
    assert_eq!(
        collisions.len(),
        4,
        "every fixed tool collides: {collisions:?}"
    );
    assert!(
        collisions
            .iter()
            .all(|c| c.kept_by == "alpha" && c.server == "beta")
    );
    // Both are callable and reach the right server.
    let a = manager
        .call_tool("echo", json!({"message": "a"}).as_object().cloned())
        .await
        .unwrap();
    let b = manager
        .call_tool("echo_2", json!({"message": "b"}).as_object().cloned())
        .await
        .unwrap();
    assert!(serde_json::to_string(&a).unwrap().contains("\"a\""));
    assert!(serde_json::to_string(&b).unwrap().contains("\"b\""));
    manager.shutdown().await;

    // The CLI reports collisions on stderr and in --json.
    write(dir.path(), "rkmcp.toml", &toml);
    let out = run_rkmcp(dir.path(), &["--json", "tools", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed["collisions"].as_array().map(Vec::len), Some(4));
    assert!(
        stderr(&out).contains("already used by server `alpha`"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_server_does_not_stop_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "{}{}{}",
        fixture("good", &[], ""),
        fixture("dies", &["--die"], ""),
        stdio_entry("missing", "/nonexistent/mcp-server", &[], "")
    );
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.session("good").is_some());
    let failures = manager.failures();
    assert_eq!(failures.len(), 2, "{failures:?}");
    let dies = failures.iter().find(|f| f.server == "dies").unwrap();
    assert!(dies.error.contains("server `dies`"), "{}", dies.error);
    // The error points at the server's stderr log, which holds what it said.
    let log = dir.path().join("logs/dies.log");
    assert!(
        dies.error.contains(&log.display().to_string()),
        "{}",
        dies.error
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("failing at start on purpose"), "{logged}");
    let missing = failures.iter().find(|f| f.server == "missing").unwrap();
    assert!(
        missing
            .error
            .contains("cannot start `/nonexistent/mcp-server`"),
        "{}",
        missing.error
    );
    let ok = manager
        .call_tool(
            "good__echo",
            json!({"message": "still here"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(serde_json::to_string(&ok).unwrap().contains("still here"));
    manager.shutdown().await;

    // The CLI: exit 1, the failure on stderr, the good server's tools still listed.
    write(dir.path(), "rkmcp.toml", &toml);
    let out = run_rkmcp(dir.path(), &["tools", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("good__echo"));
    assert!(
        stderr(&out).contains("server `missing`"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "{}{}",
        fixture("silent", &["--hang"], "connect_timeout = \"1s\""),
        fixture("slow", &[], "request_timeout = \"500ms\"")
    );
    let config = load_config(dir.path(), &toml);
    let started = std::time::Instant::now();
    let manager = SessionManager::start(&config, None).await;
    let silent = &manager.failures()[0];
    assert_eq!(silent.server, "silent");
    assert!(
        silent.error.contains("timed out after 1s"),
        "{}",
        silent.error
    );
    // The other server was started concurrently, not after the timeout.
    assert!(started.elapsed() < Duration::from_secs(10));

    let err = manager
        .call_tool("slow__sleep", json!({"seconds": 30}).as_object().cloned())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out after 500ms"), "{err}");
    // The session is still usable after a timed-out request.
    let ok = manager
        .call_tool(
            "slow__echo",
            json!({"message": "after"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(serde_json::to_string(&ok).unwrap().contains("after"));
    manager.shutdown().await;
}

#[test]
fn no_orphans_when_rkmcp_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    // A shell wrapper records the server's pid, then becomes the server.
    let script = write(
        dir.path(),
        "server.sh",
        &format!(
            "#!/bin/sh\necho $$ > '{}'\nexec '{}'\n",
            pid_file.display(),
            FIXTURE
        ),
    );
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    write(
        dir.path(),
        "rkmcp.toml",
        &stdio_entry("s", &script.display().to_string(), &[], ""),
    );
    let mut rkmcp = rkmcp_command(dir.path(), &["tools", "call", "s__sleep", "seconds=60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let pid: i32 = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse()
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "server never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(300));
    // SIGKILL: rkmcp gets no chance to clean up; the parent-death signal must end the server.
    rkmcp.kill().unwrap();
    rkmcp.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "server {pid} outlived a killed rkmcp"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_ask_for_progress_and_subscribers_receive_it() {
    let dir = tempfile::tempdir().unwrap();
    let (cmd, args) = everything_cmd();
    let config = load_config(
        dir.path(),
        &stdio_entry(
            "ev",
            &cmd,
            &args,
            "allow = [\"trigger-long-running-operation\"]",
        ),
    );
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let mut events = manager.session("ev").unwrap().subscribe();
    let result = manager
        .call_tool(
            "ev__trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    // Notifications are handled on their own task: give the last one a moment to arrive.
    let mut seen = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while seen.len() < 3 {
            match events.recv().await {
                Ok(SessionEvent::Progress { server, params }) => {
                    assert_eq!(server, "ev");
                    seen.push((params.progress, params.total));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    })
    .await;
    assert_eq!(
        seen,
        vec![(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))],
        "progress notifications for the call's token"
    );
    manager.shutdown().await;
}
