//! Protocol versions and what servers ask of the client, against real servers: a 2026-07-28
//! server written with PyPI `mcp` 2.x (tests/servers/protocol_server.py: `server/discover`,
//! multi-round tool calls, `ttlMs`), server-everything (a 2025-11-25 server: negotiation falls
//! back to `initialize`), server-filesystem started without directories (it works in the
//! client's roots), and the fixture server answering a version rkmcp does not speak.
// Roots are deprecated by SEP-2577 (2026-07-28); servers still ask for them.
#![allow(deprecated)]
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rkmcp::mcp::{NonInteractive, Roots, SessionManager};
use rkmcp_tests::*;
use serde_json::{Value, json};

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    let v = serde_json::to_value(&result.content).unwrap_or_default();
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `[[servers]]` entry for tests/servers/protocol_server.py.
fn protocol_server(name: &str, extra_args: &[&str], extra: &str) -> String {
    let mut args = vec![
        repo()
            .join("tests/servers/protocol_server.py")
            .display()
            .to_string(),
    ];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let python = deps().join("venv/bin/python").display().to_string();
    stdio_entry(name, &python, &args, extra)
}

/// Non-interactive answers whose notices are kept for the test to read.
fn non_interactive(
    roots: Roots,
    accept_defaults: bool,
) -> (Arc<NonInteractive>, Arc<Mutex<Vec<String>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = notices.clone();
    let requests = NonInteractive::new(roots, accept_defaults)
        .with_notice(move |text| sink.lock().unwrap().push(text.to_string()));
    (Arc::new(requests), notices)
}

async fn start(
    toml: &str,
    dir: &Path,
    accept_defaults: bool,
) -> (SessionManager, Arc<Mutex<Vec<String>>>) {
    let config = load_config(dir, toml);
    let (requests, notices) = non_interactive(rkmcp::mcp::config_roots(&config), accept_defaults);
    let manager = SessionManager::start_with(&config, None, requests).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    (manager, notices)
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_discovers_a_2026_server_and_answers_a_multi_round_call() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, notices) = start(&protocol_server("p", &[], ""), dir.path(), true).await;
    let session = manager.session("p").unwrap();
    assert_eq!(
        session.protocol_version().map(|v| v.to_string()).as_deref(),
        Some("2026-07-28")
    );
    assert!(session.is_stateless());
    // 2026-07-28 has no ping: the liveness check is a server/discover round trip.
    session.ping().await.unwrap();
    // `greet` answers `input_required` with an elicitation; the form's default is accepted
    // (--accept-defaults) and the call is retried with inputResponses + requestState.
    let result = session.call_tool("greet", None).await.unwrap();
    assert_eq!(text_of(&result), "Hello, Ada!");
    let notices = notices.lock().unwrap().join("\n");
    assert!(notices.contains("What is your name?"), "{notices}");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_input_request_fails_the_multi_round_call() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, notices) = start(&protocol_server("p", &[], ""), dir.path(), false).await;
    let session = manager.session("p").unwrap();
    let outcome = session.call_tool("greet", None).await;
    let declined = match &outcome {
        Ok(result) => result.is_error == Some(true),
        Err(_) => true,
    };
    assert!(
        declined,
        "a declined elicitation must not greet: {outcome:?}"
    );
    let notices = notices.lock().unwrap().join("\n");
    assert!(notices.contains("declined"), "{notices}");
    assert!(notices.contains("--accept-defaults"), "{notices}");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pinned_2025_11_25_uses_initialize_and_a_standalone_elicitation() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, _) = start(
        &protocol_server("p", &[], "protocol = \"2025-11-25\""),
        dir.path(),
        true,
    )
    .await;
    let session = manager.session("p").unwrap();
    assert_eq!(
        session.protocol_version().map(|v| v.to_string()).as_deref(),
        Some("2025-11-25")
    );
    assert!(!session.is_stateless());
    let result = session.call_tool("greet", None).await.unwrap();
    assert_eq!(text_of(&result), "Hello, Ada!");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn roots_from_the_config_reach_the_server_in_both_lifecycles() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("my work");
    std::fs::create_dir(&work).unwrap();
    let expected = rkmcp::mcp::roots::to_root(&std::fs::canonicalize(&work).unwrap())
        .unwrap()
        .uri;
    assert!(expected.starts_with("file:///") && expected.ends_with("/my%20work"));
    for protocol in ["auto", "2025-11-25"] {
        let toml = format!(
            "[roots]\npaths = [\"my work\"]\n{}",
            protocol_server("p", &[], &format!("protocol = \"{protocol}\""))
        );
        let (manager, _) = start(&toml, dir.path(), false).await;
        let session = manager.session("p").unwrap();
        let result = session.call_tool("show_roots", None).await.unwrap();
        assert_eq!(text_of(&result), expected, "protocol {protocol}");
        manager.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn list_ttl_makes_rkmcp_list_again_when_it_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let calls = |manager: &SessionManager| {
        let session = manager.session("p").unwrap().clone();
        async move {
            let result = session.call_tool("tools_list_calls", None).await.unwrap();
            text_of(&result).parse::<u32>().unwrap()
        }
    };
    let (with_ttl, _) = start(
        &protocol_server("p", &["--ttl-ms", "1000"], ""),
        dir.path(),
        false,
    )
    .await;
    let (without, _) = start(&protocol_server("p", &[], ""), dir.path(), false).await;
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let relisted = calls(&with_ttl).await;
    assert!(
        relisted >= 2,
        "ttlMs 1000 ms: listed {relisted} times in 2.6 s"
    );
    assert_eq!(
        calls(&without).await,
        1,
        "ttlMs 0 (the default): listed once, not polled"
    );
    with_ttl.shutdown().await;
    without.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_falls_back_to_initialize_for_a_2025_server() {
    let dir = tempfile::tempdir().unwrap();
    let (node, mut a) = everything_cmd();
    a.push("stdio".into());
    let started = Instant::now();
    let (manager, _) = start(&stdio_entry("everything", &node, &a, ""), dir.path(), false).await;
    let session = manager.session("everything").unwrap();
    let version = session.protocol_version().map(|v| v.to_string());
    assert_eq!(version.as_deref(), Some("2025-11-25"));
    assert!(!session.is_stateless());
    // The probe is answered with "method not found" at once, not after rmcp's 10 s timeout.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "fallback took {:?}",
        started.elapsed()
    );
    let echo = manager
        .call_tool(
            "everything__echo",
            json!({"message": "hi"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&echo), "Echo: hi");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_filesystem_without_directories_works_in_the_roots_and_follows_changes() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    std::fs::create_dir(&first).unwrap();
    std::fs::create_dir(&second).unwrap();
    std::fs::write(second.join("note.txt"), "in the second root").unwrap();
    let (node, args) = filesystem_cmd();
    let toml = format!(
        "[roots]\npaths = [\"first\"]\n{}",
        stdio_entry("fs", &node, &args, "")
    );
    let (manager, _) = start(&toml, dir.path(), false).await;
    let allowed = |manager: &SessionManager| {
        let session = manager.session("fs").unwrap().clone();
        async move {
            let r = session
                .call_tool("list_allowed_directories", None)
                .await
                .unwrap();
            text_of(&r)
        }
    };
    let first_canonical = std::fs::canonicalize(&first).unwrap();
    let second_canonical = std::fs::canonicalize(&second).unwrap();
    // The server asks for roots after initialization; give it a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = allowed(&manager).await;
    while !seen.contains(&*first_canonical.to_string_lossy()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = allowed(&manager).await;
    }
    assert!(seen.contains(&*first_canonical.to_string_lossy()), "{seen}");
    assert!(
        !seen.contains(&*second_canonical.to_string_lossy()),
        "{seen}"
    );

    // /roots add: the shared list changes and servers are told (roots/list_changed).
    let roots = manager.requests().roots_handle().unwrap();
    assert!(roots.add(&second).unwrap());
    assert!(manager.notify_roots_changed().await.is_empty());
    let deadline = Instant::now() + Duration::from_secs(10);
    seen = allowed(&manager).await;
    while !seen.contains(&*second_canonical.to_string_lossy()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = allowed(&manager).await;
    }
    assert!(
        seen.contains(&*second_canonical.to_string_lossy()),
        "{seen}"
    );
    let note = manager
        .call_tool(
            "fs__read_text_file",
            json!({"path": second_canonical.join("note.txt")})
                .as_object()
                .cloned(),
        )
        .await
        .unwrap();
    assert!(
        text_of(&note).contains("in the second root"),
        "{}",
        text_of(&note)
    );
    manager.shutdown().await;
}

#[test]
fn servers_status_shows_the_negotiated_version_and_statelessness() {
    let home = tempfile::tempdir().unwrap();
    let (node, mut a) = everything_cmd();
    a.push("stdio".into());
    let toml = format!(
        "{}{}",
        protocol_server("modern", &[], ""),
        stdio_entry("legacy", &node, &a, "")
    );
    let config = write(home.path(), "rkmcp.toml", &toml);
    let out = run_rkmcp(
        home.path(),
        &[
            "--config",
            &config.display().to_string(),
            "--json",
            "servers",
            "status",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(row("modern")["protocol_version"], "2026-07-28");
    assert_eq!(row("modern")["stateless"], true);
    assert_eq!(row("legacy")["protocol_version"], "2025-11-25");
    assert_eq!(row("legacy")["stateless"], false);
}

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

fn fixture(name: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    stdio_entry(name, FIXTURE, &args, extra)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_answering_an_unknown_version_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    for (protocol, asked) in [("2025-11-25", "2025-11-25"), ("auto", "2026-07-28")] {
        let toml = fixture(
            "old",
            &["--protocol-version", "1999-01-01"],
            &format!("protocol = \"{protocol}\""),
        );
        let config = load_config(dir.path(), &toml);
        let manager = SessionManager::start(&config, None).await;
        assert!(
            manager.sessions().is_empty(),
            "protocol {protocol}: must not be up"
        );
        let error = &manager.failures()[0].error;
        assert!(error.contains("1999-01-01"), "{error}");
        assert!(error.contains(asked), "{error}");
        assert!(error.contains("server `old`"), "{error}");
        manager.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn log_level_is_set_or_sent_with_each_call_as_the_version_says() {
    let dir = tempfile::tempdir().unwrap();
    let level_seen = |protocol: &'static str, log_level: &'static str| {
        let dir = dir.path().to_path_buf();
        async move {
            let mut extra = format!("protocol = \"{protocol}\"\n");
            if !log_level.is_empty() {
                extra.push_str(&format!("log_level = \"{log_level}\"\n"));
            }
            let config = load_config(&dir, &fixture("logs", &["--logging"], &extra));
            let manager = SessionManager::start(&config, None).await;
            assert!(manager.failures().is_empty(), "{:?}", manager.failures());
            let result = manager
                .call_tool("logs__last_log_level", None)
                .await
                .unwrap();
            manager.shutdown().await;
            text_of(&result)
        }
    };
    assert_eq!(level_seen("2025-11-25", "warning").await, "warning");
    assert_eq!(level_seen("2025-11-25", "").await, "none");
    // 2026-07-28 removed logging/setLevel: the level goes with each call in `_meta`.
    assert_eq!(level_seen("2026-07-28", "warning").await, "warning (_meta)");
    assert_eq!(level_seen("2026-07-28", "").await, "none");
}
