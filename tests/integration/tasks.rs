//! Tool calls that run as tasks, against tests/servers/tasks_server.py (PyPI `mcp` 2.x, both spec
//! versions: 2025-11-25 core tasks and the 2026-07-28 tasks extension): created, polled with
//! their status shown, the result fed back, cancelled when the call is dropped (Ctrl-C), and
//! `rkmcp tasks list|get|cancel`. The server's journal says what reached it.
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rkmcp::mcp::{SessionEvent, SessionManager};
use rkmcp_tests::*;
use serde_json::{Value, json};

const VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

fn tasks_server(name: &str, version: &str, journal: &Path, seed: bool) -> String {
    let mut args = vec![
        repo()
            .join("tests/servers/tasks_server.py")
            .display()
            .to_string(),
        "--journal".into(),
        journal.display().to_string(),
    ];
    if seed {
        args.push("--seed".into());
    }
    let python = deps().join("venv/bin/python").display().to_string();
    stdio_entry(
        name,
        &python,
        &args,
        &format!("protocol = \"{version}\"\nrequest_timeout = \"20s\""),
    )
}

fn journal(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until the journal has `line` (the server got there).
fn wait_for_journal(path: &Path, line: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = journal(path);
        if text.lines().any(|l| l.starts_with(line)) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "no `{line}` in the journal:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    let v = serde_json::to_value(&result.content).unwrap_or_default();
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn start(dir: &Path, version: &str) -> (SessionManager, PathBuf) {
    let journal = dir.join("journal.txt");
    let config = load_config(dir, &tasks_server("t", version, &journal, false));
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    (manager, journal)
}

fn args(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_capable_call_runs_as_a_task_and_its_result_comes_back() {
    for version in VERSIONS {
        let dir = tempfile::tempdir().unwrap();
        let (manager, journal_path) = start(dir.path(), version).await;
        let session = manager.session("t").unwrap();
        let mut events = session.subscribe();
        let result = session
            .call_tool("slow_count", args(json!({"n": 3, "delay": 0.3})))
            .await
            .unwrap_or_else(|e| panic!("{version}: {e}"));
        assert_eq!(text_of(&result), "counted to 3", "{version}");
        // The call went through a task, whose status was announced while it ran.
        let text = journal(&journal_path);
        assert!(
            text.contains("created task-1 slow_count"),
            "{version}: {text}"
        );
        assert!(text.contains("completed task-1"), "{version}: {text}");
        let mut statuses = Vec::new();
        while let Ok(event) = events.try_recv() {
            if let SessionEvent::Task { tool, task, .. } = event {
                assert_eq!(tool, "slow_count");
                assert_eq!(task.task_id, "task-1");
                statuses.push(format!(
                    "{} {}",
                    task.status,
                    task.status_message.unwrap_or_default()
                ));
            }
        }
        assert!(
            statuses.iter().any(|s| s.starts_with("working step")),
            "{version}: {statuses:?}"
        );
        assert!(
            statuses.last().is_some_and(|s| s.starts_with("completed")),
            "{version}: {statuses:?}"
        );
        // A tool that is not task-capable is called plainly.
        let quick = session
            .call_tool("quick", args(json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(text_of(&quick), "hi");
        assert_eq!(
            journal(&journal_path).matches("created").count(),
            1,
            "{version}"
        );
        manager.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_task_call_cancels_the_task_on_the_server() {
    for version in VERSIONS {
        let dir = tempfile::tempdir().unwrap();
        let (manager, journal_path) = start(dir.path(), version).await;
        let session = manager.session("t").unwrap();
        let mut events = session.subscribe();
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool("slow_count", args(json!({"n": 100, "delay": 0.2})))
                    .await
            })
        };
        // Wait until the task is running, then drop the call as Ctrl-C does in the chat.
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if let Ok(SessionEvent::Task { .. }) = events.recv().await {
                    break;
                }
            }
        })
        .await
        .expect("no task status");
        call.abort();
        let _ = call.await;
        let text = tokio::task::spawn_blocking(move || {
            wait_for_journal(&journal_path, "cancelled task-1")
        })
        .await
        .unwrap();
        assert!(!text.contains("completed task-1"), "{version}: {text}");
        manager.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_task_is_an_error_with_the_servers_reason() {
    for version in VERSIONS {
        let dir = tempfile::tempdir().unwrap();
        let (manager, _) = start(dir.path(), version).await;
        let session = manager.session("t").unwrap();
        let err = session
            .call_tool("fail_count", None)
            .await
            .expect_err("a failed task must not look like a result")
            .to_string();
        assert!(err.contains("server `t`"), "{version}: {err}");
        assert!(err.contains("failed on purpose"), "{version}: {err}");
        manager.shutdown().await;
    }
}

#[test]
fn tasks_command_lists_gets_and_cancels() {
    let home = tempfile::tempdir().unwrap();
    let journal_path = home.path().join("journal.txt");
    // 2025-11-25: list, get with the result, cancel refused for an ended task.
    let config = write(
        home.path(),
        "core.toml",
        &tasks_server("t", "2025-11-25", &journal_path, true),
    );
    let config = config.display().to_string();
    let out = run_rkmcp(
        home.path(),
        &["--config", &config, "--json", "tasks", "list"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed["tasks"][0]["taskId"], "seed-1", "{listed}");
    assert_eq!(listed["tasks"][0]["status"], "completed");
    assert_eq!(listed["tasks"][0]["server"], "t");

    let out = run_rkmcp(
        home.path(),
        &["--config", &config, "--json", "tasks", "get", "seed-1"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let got: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(got["task"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["content"][0]["text"], "seeded", "{got}");

    let out = run_rkmcp(
        home.path(),
        &["--config", &config, "tasks", "cancel", "seed-1"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("already ended"), "{}", stderr(&out));

    let out = run_rkmcp(home.path(), &["--config", &config, "tasks", "get", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown task"), "{}", stderr(&out));

    // 2026-07-28: get works (result inline); the extension has no tasks/list.
    let config = write(
        home.path(),
        "ext.toml",
        &tasks_server("t", "2026-07-28", &journal_path, true),
    );
    let config = config.display().to_string();
    let out = run_rkmcp(
        home.path(),
        &["--config", &config, "--json", "tasks", "get", "seed-1"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let got: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(got["result"]["content"][0]["text"], "seeded", "{got}");
    let out = run_rkmcp(home.path(), &["--config", &config, "tasks", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no tasks/list"), "{}", stderr(&out));
}

#[test]
fn ctrl_c_in_tools_call_cancels_the_running_task() {
    for version in VERSIONS {
        let home = tempfile::tempdir().unwrap();
        let journal_path = home.path().join("journal.txt");
        let config = write(
            home.path(),
            "rkmcp.toml",
            &tasks_server("t", version, &journal_path, false),
        );
        let child = rkmcp_command(
            home.path(),
            &[
                "--config",
                &config.display().to_string(),
                "tools",
                "call",
                "t__slow_count",
                "n=100",
                "delay=0.2",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        wait_for_journal(&journal_path, "created task-1");
        // Give the status line a moment, then Ctrl-C.
        std::thread::sleep(Duration::from_millis(500));
        let killed = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{version}: {err}");
        assert!(
            err.contains("task task-1 (slow_count) working"),
            "{version}: {err}"
        );
        assert!(err.contains("interrupted"), "{version}: {err}");
        let text = wait_for_journal(&journal_path, "cancelled task-1");
        assert!(!text.contains("completed task-1"), "{version}: {text}");
    }
}
