//! Servers that misbehave on purpose (tests/servers/hostile_server.py writes raw bytes no SDK
//! would): unreadable answers, oversize answers, log floods, tools with broken schemas,
//! launchers that leave the real server behind, binary stderr, and errors told without Rust
//! type names. Each test is one finding of issue 17.
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use rkmcp::mcp::SessionManager;
use rkmcp_tests::*;
use serde_json::json;

fn script() -> String {
    repo()
        .join("tests/servers/hostile_server.py")
        .display()
        .to_string()
}

fn hostile(name: &str, args: &[&str], extra: &str) -> String {
    let mut all = vec![script()];
    all.extend(args.iter().map(|s| s.to_string()));
    stdio_entry(name, &python(), &all, extra)
}

fn args(v: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    v.as_object().cloned()
}

fn pid_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z"))
        .unwrap_or(false)
}

fn wait_for_pid_file(path: &std::path::Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_ends(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while pid_alive(pid) {
        if Instant::now() > deadline {
            // Do not leave it behind for the next test run.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("server {pid} outlived {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Finding 7: an unreadable answer fails its request at once, naming the server and showing
/// the line; the session keeps working.
#[tokio::test(flavor = "multi_thread")]
async fn unreadable_answers_fail_the_request_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(dir.path(), &hostile("h", &[], "request_timeout = \"60s\""));
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());

    let started = Instant::now();
    let err = manager
        .call_tool("h__bad_json", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("timed out"), "{err}");
    assert!(err.contains("server `h`"), "{err}");
    assert!(err.contains("not valid JSON"), "{err}");
    assert!(
        err.contains(r#"{"jsonrpc":"2.0","id":"#),
        "the line is shown: {err}"
    );
    // Well inside the 60 s request timeout (not a speed target: it must not wait for it at all).
    assert!(started.elapsed() < Duration::from_secs(30));

    let err = manager
        .call_tool("h__bad_utf8", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not valid UTF-8"), "{err}");
    assert!(
        !err.contains('\x1b'),
        "escape sequences are not passed on: {err:?}"
    );

    let ok = manager
        .call_tool("h__echo", args(json!({"message": "still here"})))
        .await
        .unwrap();
    assert!(serde_json::to_string(&ok).unwrap().contains("still here"));
    manager.shutdown().await;
}

/// Finding 8: an answer over `max_message_mb` fails at once with the limit and the server named,
/// even though its id comes last (as the TypeScript SDK writes it).
#[tokio::test(flavor = "multi_thread")]
async fn an_oversize_answer_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(
        dir.path(),
        &hostile("h", &[], "request_timeout = \"60s\"\nmax_message_mb = 1"),
    );
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let err = manager
        .call_tool("h__huge", args(json!({"mb": 5})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("message larger than 1 MB"), "{err}");
    assert!(err.contains("server `h`"), "{err}");
    assert!(
        err.len() < 1000,
        "the message is shortened: {} bytes",
        err.len()
    );
    let ok = manager
        .call_tool("h__echo", args(json!({"message": "after"})))
        .await
        .unwrap();
    assert!(serde_json::to_string(&ok).unwrap().contains("after"));
    manager.shutdown().await;
}

/// Finding 10: tools with a string or missing `inputSchema` are left out by name; the rest of
/// the list is served.
#[tokio::test(flavor = "multi_thread")]
async fn one_bad_tool_schema_does_not_cost_the_whole_list() {
    let dir = tempfile::tempdir().unwrap();
    let toml = hostile("h", &["--bad-schemas"], "");
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let names: Vec<String> = manager
        .session("h")
        .unwrap()
        .catalog()
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"echo".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n == "stringy" || n == "schemaless"));
    manager.shutdown().await;

    write(dir.path(), "rkmcp.toml", &toml);
    let out = run_rkmcp(dir.path(), &["tools", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("h__echo"));
    let err = stderr(&out);
    assert!(err.contains("tool `stringy` left out"), "{err}");
    assert!(err.contains("tool `schemaless` left out"), "{err}");
}

/// Finding 11, orderly: a server behind `sh -c` that ignores stdin EOF ends with rkmcp's
/// shutdown, because the whole process group is signalled.
#[tokio::test(flavor = "multi_thread")]
async fn a_launched_server_ends_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    // `; true` keeps sh alive as the parent: the server is a grandchild of rkmcp.
    let line = format!(
        "'{}' '{}' --linger --pid-file '{}'; true",
        python(),
        script(),
        pid_file.display()
    );
    let config = load_config(
        dir.path(),
        &stdio_entry("h", "sh", &["-c".into(), line], ""),
    );
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let pid = wait_for_pid_file(&pid_file);
    manager.shutdown().await;
    assert_ends(pid, "an orderly shutdown");
}

/// Finding 11, SIGKILL: rkmcp gets no chance to clean up; the watchdog ends the server, a
/// grandchild that the parent-death signal does not reach.
#[test]
fn a_launched_server_ends_when_rkmcp_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let line = format!(
        "'{}' '{}' --linger --pid-file '{}'; true",
        python(),
        script(),
        pid_file.display()
    );
    write(
        dir.path(),
        "rkmcp.toml",
        &stdio_entry("h", "sh", &["-c".into(), line], ""),
    );
    let mut rkmcp = rkmcp_command(dir.path(), &["tools", "call", "h__sleep", "seconds=60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = wait_for_pid_file(&pid_file);
    std::thread::sleep(Duration::from_millis(500));
    rkmcp.kill().unwrap();
    rkmcp.wait().unwrap();
    assert_ends(pid, "a SIGKILL of rkmcp");
}

/// Finding 12: a stderr line that is not UTF-8 does not stop the copier (the server's later
/// stderr writes still work), and the log is complete once shutdown returns.
#[tokio::test(flavor = "multi_thread")]
async fn binary_stderr_is_logged_and_the_log_is_complete_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(dir.path(), &hostile("h", &["--binary-stderr"], ""));
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    // echo writes to stderr first: with a closed pipe the server would die here.
    let ok = manager
        .call_tool("h__echo", args(json!({"message": "x"})))
        .await
        .unwrap();
    assert_ne!(ok.is_error, Some(true));
    manager
        .call_tool("h__stderr_burst", args(json!({"lines": 20000})))
        .await
        .unwrap();
    manager.shutdown().await;
    let log = std::fs::read(dir.path().join("logs/h.log")).unwrap();
    let log = String::from_utf8(log).expect("the log is written as UTF-8");
    assert!(
        log.contains("binary \u{fffd}\u{fffd}\u{fffd} stderr line"),
        "{log:.300}"
    );
    assert!(log.contains("echo called"));
    assert!(log.contains("burst line 19999"));
    assert!(log.contains("burst done"), "the end of the log is missing");
}

/// Finding 13: connection errors give the cause chain a person needs, without Rust type names.
#[tokio::test(flavor = "multi_thread")]
async fn http_errors_show_the_cause_without_type_names() {
    // Something that answers every request with a 404 and a body.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let not_found = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten().take(8) {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "no MCP endpoint here";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let refused = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = load_config(
        dir.path(),
        &format!(
            "[[servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:{refused}/mcp\"\nconnect_timeout = \"10s\"\n\
             [[servers]]\nname = \"missing\"\nurl = \"http://127.0.0.1:{not_found}/mcp\"\nconnect_timeout = \"10s\"\n"
        ),
    );
    let manager = SessionManager::start(&config, None).await;
    let error = |name: &str| {
        manager
            .failures()
            .iter()
            .find(|f| f.server == name)
            .map(|f| f.error.clone())
            .unwrap_or_else(|| panic!("{name} did not fail"))
    };
    for name in ["down", "missing"] {
        let err = error(name);
        for rust in [
            "rmcp::",
            "WorkerTransport",
            "Transport [",
            "StreamableHttpError",
        ] {
            assert!(!err.contains(rust), "{rust} in: {err}");
        }
    }
    let down = error("down");
    assert!(down.to_lowercase().contains("connection refused"), "{down}");
    let missing = error("missing");
    assert!(missing.contains("404"), "{missing}");
    assert!(missing.contains("no MCP endpoint here"), "{missing}");
    manager.shutdown().await;
}

/// Finding 9: log and progress notifications waiting to be handled are bounded per server.
/// Deterministic: nothing handles the notifications handed over (the test keeps them, and with
/// them their places in the queue), so after the bound every further one is dropped and
/// counted, and the answer behind them still arrives.
#[tokio::test(flavor = "current_thread")]
async fn a_notification_flood_is_bounded() {
    use rmcp::RoleClient;
    use rmcp::model::JsonRpcMessage;
    use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
    use rmcp::transport::Transport as _;
    let message = |v: serde_json::Value| -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_value(v).unwrap()
    };
    let mut incoming: Vec<_> = (0..10_000)
        .map(|i| {
            message(json!({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": format!("line {i}")}}))
        })
        .collect();
    incoming.push(message(json!({"jsonrpc": "2.0", "id": 1, "result": {}})));
    let inner = rmcp::transport::sink_stream::SinkStreamTransport::new(
        futures::sink::drain::<TxJsonRpcMessage<RoleClient>>(),
        futures::stream::iter(incoming),
    );
    let mut tap = rkmcp::mcp::tap::wrap(inner, "h", None);
    let mut handed = Vec::new();
    while let Some(m) = tap.receive().await {
        handed.push(m);
    }
    let notifications = handed
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Notification(_)))
        .count();
    assert_eq!(
        notifications,
        rkmcp::mcp::flood::DEFAULT_LIMIT,
        "notifications handed on while none was handled"
    );
    assert!(matches!(handed.last(), Some(JsonRpcMessage::Response(_))));
}

/// Finding 13, the chain walker itself (`mcp::errors`): an error rmcp names by a Rust type is
/// told by its cause.
#[test]
fn error_chains_leave_out_rust_type_names() {
    let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
    let err = rmcp::ServiceError::TransportSend(
        rmcp::transport::DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>",
            std::any::TypeId::of::<()>(),
            Box::new(refused),
        ),
    );
    let text = rkmcp::mcp::errors::describe_service_error(&err);
    assert!(
        !text.contains("rmcp::") && !text.contains("WorkerTransport"),
        "{text}"
    );
    assert!(text.contains("Connection refused"), "{text}");
}
