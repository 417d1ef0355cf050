//! MCP sessions against real servers: server-everything over stdio and streamable HTTP,
//! mcp-server-time, server-filesystem on a temp dir.
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rkmcp::mcp::SessionManager;
use rkmcp_tests::*;
use serde_json::{Value, json};

fn args(map: Value) -> Option<serde_json::Map<String, Value>> {
    map.as_object().cloned()
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

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_stdio_lists_calls_reads_and_renders_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let (node, mut a) = everything_cmd();
    a.push("stdio".into());
    let config = load_config(dir.path(), &stdio_entry("everything", &node, &a, ""));
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());

    let (tools, collisions) = manager.tools();
    assert!(collisions.is_empty());
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");
    assert!(names.contains(&"everything__get-sum"), "{names:?}");

    let echo = manager
        .call_tool("everything__echo", args(json!({"message": "héllo ✓"})))
        .await
        .unwrap();
    assert_eq!(text_of(&echo), "Echo: héllo ✓");
    let sum = manager
        .call_tool("everything__get-sum", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert!(text_of(&sum).contains("42"), "{}", text_of(&sum));

    let session = manager.session("everything").unwrap();
    let catalog = session.catalog();
    assert!(!catalog.resources.is_empty());
    assert!(!catalog.resource_templates.is_empty());
    let uri = catalog.resources[0].uri.clone();
    let read = session.read_resource(&uri).await.unwrap();
    let read = serde_json::to_value(&read).unwrap();
    assert_eq!(read["contents"][0]["uri"], json!(uri));

    let prompt = session
        .get_prompt(
            "args-prompt",
            args(json!({"city": "Paris", "state": "Texas"})),
        )
        .await
        .unwrap();
    let prompt = serde_json::to_value(&prompt).unwrap();
    let text = prompt["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("Paris") && text.contains("Texas"), "{prompt}");

    // Completion and logging level are part of the session API.
    let completion: rmcp::model::CompleteRequestParams = serde_json::from_value(json!({
        "ref": {"type": "ref/prompt", "name": "completable-prompt"},
        "argument": {"name": "department", "value": "E"}
    }))
    .unwrap();
    let completed = session.complete(completion).await.unwrap();
    let values = serde_json::to_value(&completed).unwrap()["completion"]["values"].clone();
    assert!(
        values
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x == "Engineering")),
        "{values}"
    );
    #[allow(deprecated)] // logging/setLevel: deprecated by SEP-2577, still what servers use
    let level = rmcp::model::LoggingLevel::Debug;
    session.set_log_level(level).await.unwrap();
    assert!(session.ping().await.unwrap() < Duration::from_secs(5));

    let pid = session.pid().expect("a stdio server has a pid");
    manager.shutdown().await;
    assert!(
        !process_alive(pid),
        "server {pid} still running after shutdown"
    );
}

/// True while `pid` exists and is not a zombie.
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

struct KillOnDrop(Child);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let (node, a) = everything_cmd();
    let port = free_port();
    let server = KillOnDrop(
        Command::new(&node)
            .args(&a)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server-everything over HTTP"),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    // Wait until it accepts connections.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config = load_config(
        dir.path(),
        &format!(
            "[[servers]]\nname = \"web\"\nurl = {}\nheaders = {{ X-Test = \"yes\" }}\n",
            toml_str(&url)
        ),
    );
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let echo = manager
        .call_tool("web__echo", args(json!({"message": "over http"})))
        .await
        .unwrap();
    assert_eq!(text_of(&echo), "Echo: over http");
    let session = manager.session("web").unwrap();
    let info = session.server_info().unwrap();
    assert_eq!(info.protocol_version.to_string(), "2025-11-25");
    let prompt = session
        .get_prompt("args-prompt", args(json!({"city": "Oslo"})))
        .await
        .unwrap();
    assert!(serde_json::to_string(&prompt).unwrap().contains("Oslo"));
    manager.shutdown().await;
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn time_and_filesystem_servers_together() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("note.txt"), "remember the milk\n").unwrap();
    let files = files.canonicalize().unwrap();
    let (node, mut fs_args) = filesystem_cmd();
    fs_args.push(files.display().to_string());
    let time = time_server().display().to_string();
    let toml = format!(
        "{}{}",
        stdio_entry(
            "time",
            &time,
            &["--local-timezone".into(), "UTC".into()],
            ""
        ),
        stdio_entry("fs", &node, &fs_args, ""),
    );
    // rkmcp offers roots (default: the current directory), and server-filesystem then serves
    // the roots instead of its arguments: the roots name the folder.
    let toml = format!(
        "{toml}[roots]\npaths = [{}]\n",
        toml_str(&files.display().to_string())
    );
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());

    let now = manager
        .call_tool(
            "time__get_current_time",
            args(json!({"timezone": "Asia/Tokyo"})),
        )
        .await
        .unwrap();
    let parsed: Value = serde_json::from_str(&text_of(&now)).unwrap();
    assert_eq!(parsed["timezone"], "Asia/Tokyo");
    assert!(parsed["datetime"].as_str().unwrap().ends_with("+09:00"));

    let read = manager
        .call_tool(
            "fs__read_text_file",
            args(json!({"path": files.join("note.txt").display().to_string()})),
        )
        .await
        .unwrap();
    assert!(
        text_of(&read).contains("remember the milk"),
        "{}",
        text_of(&read)
    );
    // Outside the allowed directory the server refuses; the refusal reaches us as a tool error.
    let outside = manager
        .call_tool("fs__read_text_file", args(json!({"path": "/etc/hostname"})))
        .await;
    match outside {
        Ok(r) => assert_eq!(r.is_error, Some(true), "{}", text_of(&r)),
        Err(e) => assert!(
            e.to_string().contains("denied") || e.to_string().contains("outside"),
            "{e}"
        ),
    }
    manager.shutdown().await;
}

#[test]
fn child_sees_only_configured_and_safe_environment() {
    let dir = tempfile::tempdir().unwrap();
    let (node, mut a) = everything_cmd();
    a.push("stdio".into());
    write(
        dir.path(),
        "rkmcp.toml",
        &stdio_entry(
            "everything",
            &node,
            &a,
            "env = { GIVEN = \"to-the-server\" }",
        ),
    );
    let out = rkmcp_command(
        dir.path(),
        &["--json", "tools", "call", "everything__get-env"],
    )
    .env("RKMCP_TEST_SECRET", "do-not-leak")
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("to-the-server"), "{text}");
    assert!(text.contains("PATH"), "{text}");
    assert!(
        !text.contains("do-not-leak"),
        "the server saw rkmcp's whole environment: {text}"
    );
}
