//! `rkmcp serve` with real clients in front and real servers behind: an rmcp client and a PyPI
//! `mcp` 2.3 client (tests/servers/serve_client.py), over stdio and streamable HTTP, with
//! server-everything, mcp-server-time and server-filesystem behind the gateway; policy (a deny
//! rule, the approval-guard-default plugin, approval asked through elicitation), elicitation and
//! sampling of a server forwarded to the client, the local model as a tool with the real default
//! model, the HTTP checks (Origin, bearer token, loopback), and --print-config.
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rkmcp_tests::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, Implementation,
    InitializeRequestParams, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

fn text_of(result: &CallToolResult) -> String {
    let v = serde_json::to_value(&result.content).unwrap_or_default();
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// server-everything and mcp-server-time behind the gateway, with a deny rule and auto_approve
/// rules; `extra` is appended (more tables).
pub(crate) fn two_servers(home: &Path, extra: &str) -> String {
    let (node, mut args) = everything_cmd();
    args.push("stdio".into());
    let toml = format!(
        "{}{}\n[chat.approval]\nauto_approve = [\"time/*\"]\ndeny = [\"everything/get-env\"]\n{extra}",
        stdio_entry("everything", &node, &args, ""),
        stdio_entry(
            "time",
            &time_server().display().to_string(),
            &["--local-timezone".to_string(), "UTC".to_string()],
            "",
        ),
    );
    write(home, "rkmcp.toml", &toml).display().to_string()
}

fn client_info() -> InitializeRequestParams {
    InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("serve-test", "0"),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// An rmcp client on `rkmcp --config CONFIG serve ARGS` over stdio.
async fn rmcp_over_stdio(
    home: &Path,
    config: &str,
    args: &[&str],
) -> RunningService<RoleClient, InitializeRequestParams> {
    let mut all = vec!["--config", config, "serve"];
    all.extend_from_slice(args);
    let cmd = tokio::process::Command::from(rkmcp_command(home, &all));
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("rkmcp serve starts");
    client_info()
        .serve(transport)
        .await
        .expect("the gateway initializes")
}

async fn call(
    client: &RunningService<RoleClient, InitializeRequestParams>,
    name: &str,
    args: Value,
) -> Result<CallToolResult, rmcp::ServiceError> {
    let mut p = CallToolRequestParams::new(name.to_string());
    p.arguments = args.as_object().cloned();
    client.peer().call_tool(p).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_over_stdio_gets_both_servers_under_the_policy() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(home.path(), "");
    let log = home.path().join("serve.jsonl");
    let log_arg = log.display().to_string();
    let client = rmcp_over_stdio(
        home.path(),
        &config,
        &["--no-local-model", "--instrumentation", &log_arg],
    )
    .await;
    let tools = client.peer().list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in [
        "everything__echo",
        "time__get_current_time",
        "time__convert_time",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(
        !names.contains(&"local_model_generate"),
        "--no-local-model still lists the model: {names:?}"
    );

    let echo = call(
        &client,
        "everything__echo",
        json!({"message": "through the gateway"}),
    )
    .await
    .expect("echo");
    assert_ne!(echo.is_error, Some(true), "{echo:?}");
    assert!(text_of(&echo).contains("through the gateway"), "{echo:?}");

    let time = call(
        &client,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await
    .expect("time");
    assert_ne!(time.is_error, Some(true), "{time:?}");
    assert!(text_of(&time).contains("UTC"), "{}", text_of(&time));

    // The deny rule beats the tool's read-only annotation.
    let denied = call(&client, "everything__get-env", json!({}))
        .await
        .expect("a result");
    assert_eq!(denied.is_error, Some(true), "{denied:?}");
    let why = text_of(&denied);
    assert!(
        why.contains("deny pattern") && why.contains("everything/get-env"),
        "{why}"
    );

    // A tool that needs a person, and a client that cannot be asked (no elicitation): denied
    // with the reason and how to allow it.
    let asked = call(
        &client,
        "everything__trigger-sampling-request",
        json!({"prompt": "hi", "maxTokens": 5}),
    )
    .await
    .expect("a result");
    assert_eq!(asked.is_error, Some(true), "{asked:?}");
    let why = text_of(&asked);
    assert!(
        why.contains("needs approval") && why.contains("auto_approve"),
        "{why}"
    );

    // An unknown tool is a JSON-RPC error that names it.
    match call(&client, "everything__nope", json!({})).await {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert!(e.message.contains("everything__nope"), "{}", e.message)
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }

    // Resources come back namespaced and can be read under that name; prompts keep the chat's
    // names.
    let resources = client
        .peer()
        .list_all_resources()
        .await
        .expect("resources/list");
    let uri = resources
        .iter()
        .map(|r| r.uri.clone())
        .find(|u| u.starts_with("everything+demo://"))
        .unwrap_or_else(|| panic!("no namespaced resource: {resources:?}"));
    let read = client
        .peer()
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri.clone()))
        .await
        .expect("resources/read");
    let contents = serde_json::to_value(&read.contents).unwrap();
    assert_eq!(contents[0]["uri"], Value::String(uri.clone()), "{contents}");
    let templates = client
        .peer()
        .list_all_resource_templates()
        .await
        .expect("templates");
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template.starts_with("everything+demo://")),
        "{templates:?}"
    );
    let prompts = client
        .peer()
        .list_all_prompts()
        .await
        .expect("prompts/list");
    assert!(
        prompts
            .iter()
            .any(|p| p.name == "everything__simple-prompt"),
        "{prompts:?}"
    );
    let prompt = client
        .peer()
        .get_prompt(rmcp::model::GetPromptRequestParams::new(
            "everything__simple-prompt",
        ))
        .await
        .expect("prompts/get");
    assert!(!prompt.messages.is_empty());
    let _ = client.cancel().await;

    // One JSON line per request, with its outcome.
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines: Vec<Value> = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        if lines.iter().any(|l| l["method"] == "prompts/get") || Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let outcome_of = |tool: &str| {
        lines
            .iter()
            .find(|l| l["method"] == "tools/call" && l["tool"] == tool)
            .map(|l| l["outcome"].as_str().unwrap_or("").to_string())
            .unwrap_or_else(|| panic!("no record of {tool}: {lines:?}"))
    };
    assert_eq!(outcome_of("everything__echo"), "ok");
    assert_eq!(outcome_of("everything__get-env"), "denied");
    assert_eq!(outcome_of("everything__nope"), "error");
    let echo_line = lines
        .iter()
        .find(|l| l["tool"] == "everything__echo")
        .unwrap();
    assert_eq!(echo_line["server"], "everything");
    assert!(echo_line["duration_us"].as_u64().is_some(), "{echo_line}");
}

/// Runs tests/servers/serve_client.py with `plan` against `target` (`--stdio …` or `--url …`).
fn python_client(plan: &Value, target: &[String]) -> Value {
    let python = deps().join("venv/bin/python");
    let script = repo().join("tests/servers/serve_client.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(plan.to_string())
        .args(target)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "serve_client.py failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", stdout(&out)))
}

/// `--stdio rkmcp --config CONFIG serve ARGS`, with the test's isolated environment.
fn stdio_target(config: &str, args: &[&str]) -> Vec<String> {
    let mut t = vec![
        "--stdio".to_string(),
        rkmcp().display().to_string(),
        "--config".into(),
        config.into(),
        "serve".into(),
    ];
    t.extend(args.iter().map(|a| a.to_string()));
    t
}

fn isolated_env(home: &Path) -> Value {
    json!({
        "XDG_CONFIG_HOME": home.join("config"),
        "XDG_STATE_HOME": home.join("state"),
        "XDG_CACHE_HOME": home.join("cache"),
    })
}

fn call_result<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no call {name} in {out:#}"))
}

#[test]
fn python_client_approves_through_elicitation_and_gets_the_servers_requests() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(home.path(), "");
    let plan = json!({
        "mode": "legacy",
        "approve": "allow_once",
        "env": isolated_env(home.path()),
        "calls": [
            {"name": "everything__trigger-elicitation-request", "arguments": {}},
            {"name": "everything__trigger-sampling-request", "arguments": {"prompt": "hello", "maxTokens": 5}},
        ],
    });
    let out = python_client(&plan, &stdio_target(&config, &["--no-local-model"]));
    // The approval question came first, then the server's own form, through the gateway.
    let elicitations = out["elicitations"].as_array().unwrap();
    assert!(
        elicitations[0]["fields"] == json!(["decision"])
            && elicitations[0]["message"]
                .as_str()
                .unwrap()
                .contains("trigger-elicitation-request"),
        "{out:#}"
    );
    assert!(
        elicitations
            .iter()
            .any(|e| e["fields"].as_array().unwrap().contains(&json!("name"))),
        "the server's form did not reach the client: {out:#}"
    );
    let elicited = call_result(&out, "everything__trigger-elicitation-request");
    assert_eq!(elicited["is_error"], false, "{out:#}");
    assert!(
        elicited["text"].as_str().unwrap().contains("Ada"),
        "{out:#}"
    );
    // The server's sampling request was answered by this client, not the local model.
    let sampled = call_result(&out, "everything__trigger-sampling-request");
    assert_eq!(sampled["is_error"], false, "{out:#}");
    assert!(
        sampled["text"]
            .as_str()
            .unwrap()
            .contains("sampled by the test client"),
        "{out:#}"
    );
    assert!(
        out["sampling"][0].as_str().unwrap().contains("hello"),
        "{out:#}"
    );
}

#[test]
fn a_clients_roots_reach_the_servers_behind_only_inside_the_configured_roots() {
    let home = tempfile::tempdir().unwrap();
    let allowed = home.path().join("allowed");
    let project = allowed.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let (node, args) = filesystem_cmd();
    let config = write(
        home.path(),
        "rkmcp.toml",
        &format!(
            "[roots]\npaths = [{}]\n{}\n[chat.approval]\nauto_approve = [\"fs/*\"]\n",
            toml_str(&allowed.display().to_string()),
            stdio_entry("fs", &node, &args, "")
        ),
    )
    .display()
    .to_string();
    let project_real = std::fs::canonicalize(&project)
        .unwrap()
        .display()
        .to_string();
    let allowed_real = std::fs::canonicalize(&allowed)
        .unwrap()
        .display()
        .to_string();
    let outside_real = std::fs::canonicalize(outside.path())
        .unwrap()
        .display()
        .to_string();
    // The client narrows to the project and tries to widen to a folder outside.
    let plan = json!({
        "mode": "legacy",
        "env": isolated_env(home.path()),
        "roots": [project.display().to_string(), outside.path().display().to_string()],
        "calls": [{"name": "fs__list_allowed_directories", "until": project_real}],
    });
    let out = python_client(&plan, &stdio_target(&config, &["--no-local-model"]));
    let listed = call_result(&out, "fs__list_allowed_directories")["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let dirs: Vec<&str> = listed.lines().map(str::trim).collect();
    assert!(dirs.contains(&project_real.as_str()), "{listed}");
    assert!(!dirs.contains(&outside_real.as_str()), "{listed}");
    // Narrowed: the configured root itself is no longer offered.
    assert!(!dirs.contains(&allowed_real.as_str()), "{listed}");
}

#[test]
fn python_client_that_says_no_gets_the_denial() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(home.path(), "");
    let plan = json!({
        "mode": "legacy",
        "approve": "deny",
        "env": isolated_env(home.path()),
        "calls": [{"name": "everything__trigger-elicitation-request", "arguments": {}}],
    });
    let out = python_client(&plan, &stdio_target(&config, &["--no-local-model"]));
    let result = call_result(&out, "everything__trigger-elicitation-request");
    assert_eq!(result["is_error"], true, "{out:#}");
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("denied by the user"),
        "{out:#}"
    );
    // Only the approval question was asked: the server never ran.
    assert_eq!(out["elicitations"].as_array().unwrap().len(), 1, "{out:#}");
}

#[test]
fn a_client_without_a_back_channel_approves_through_input_required() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(home.path(), "");
    for (answer, ran) in [("allow_once", true), ("deny", false)] {
        // The Python client's default mode speaks 2026-07-28 with the gateway: no requests
        // from server to client, so the approval question travels as `input_required`.
        let plan = json!({
            "mode": "auto",
            "approve": answer,
            "env": isolated_env(home.path()),
            "calls": [{"name": "everything__trigger-elicitation-request", "arguments": {}}],
        });
        let out = python_client(&plan, &stdio_target(&config, &["--no-local-model"]));
        assert_eq!(out["protocol_version"], "2026-07-28", "{out:#}");
        let asked = out["elicitations"].as_array().unwrap();
        assert!(
            !asked.is_empty() && asked[0]["fields"] == json!(["decision"]),
            "{answer}: the approval question was not asked: {out:#}"
        );
        let result = call_result(&out, "everything__trigger-elicitation-request");
        let text = result["text"].as_str().unwrap_or_default();
        if ran {
            assert!(!text.contains("rkmcp denied"), "{answer}: {out:#}");
        } else {
            assert_eq!(result["is_error"], true, "{out:#}");
            assert!(text.contains("denied by the user"), "{out:#}");
        }
    }
}

/// The levels of the `chatter` log messages a client got, per server (logger), sorted.
fn chatter_levels(out: &Value) -> Vec<(String, String)> {
    let mut got: Vec<(String, String)> = out["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| {
            l["data"]
                .as_str()
                .is_some_and(|d| d.starts_with("chatter at"))
        })
        .map(|l| {
            let logger = l["logger"].as_str().unwrap_or_default();
            let server = logger.split('/').next().unwrap_or_default().to_string();
            (server, l["level"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    got.sort();
    got
}

#[test]
fn each_client_gets_the_servers_logs_at_the_level_it_asked_for() {
    // The same server behind twice: `new` speaks 2026-07-28 with the gateway (it logs only at
    // the level a request asks for in `_meta`), `old` 2025-11-25 (it logs every level and
    // leaves the filtering to its client).
    let home = tempfile::tempdir().unwrap();
    let python = deps().join("venv/bin/python").display().to_string();
    let server = repo()
        .join("tests/servers/protocol_server.py")
        .display()
        .to_string();
    let toml = format!(
        "{}{}\n[chat.approval]\nauto_approve = [\"*\"]\n",
        stdio_entry("new", &python, std::slice::from_ref(&server), ""),
        stdio_entry("old", &python, &[server], "protocol = \"2025-11-25\"\n"),
    );
    let config = write(home.path(), "rkmcp.toml", &toml)
        .display()
        .to_string();
    let calls = json!([{"name": "new__chatter"}, {"name": "old__chatter"}]);
    let levels = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(s, l)| (s.to_string(), l.to_string()))
            .collect()
    };
    let run = |plan: Value| {
        let out = python_client(&plan, &stdio_target(&config, &["--no-local-model"]));
        for name in ["new__chatter", "old__chatter"] {
            assert_eq!(
                call_result(&out, name)["text"],
                "said four things",
                "{out:#}"
            );
        }
        out
    };

    // A 2025-11-25 client sets its level with logging/setLevel.
    let out = run(json!({
        "mode": "legacy", "set_level": "warning", "calls": calls,
        "env": isolated_env(home.path()),
    }));
    assert_eq!(
        chatter_levels(&out),
        levels(&[
            ("new", "error"),
            ("new", "warning"),
            ("old", "error"),
            ("old", "warning")
        ]),
        "{out:#}"
    );

    // A 2026-07-28 client asks per request, and gets nothing when it does not ask.
    let out = run(json!({
        "mode": "auto", "log_level": "error", "calls": calls,
        "env": isolated_env(home.path()),
    }));
    assert_eq!(out["protocol_version"], "2026-07-28", "{out:#}");
    assert_eq!(
        chatter_levels(&out),
        levels(&[("new", "error"), ("old", "error")]),
        "{out:#}"
    );
    let out = run(json!({"mode": "auto", "calls": calls, "env": isolated_env(home.path())}));
    assert_eq!(chatter_levels(&out), levels(&[]), "{out:#}");
}

/// `rkmcp serve --http 127.0.0.1:PORT` running; killed on drop.
pub(crate) struct HttpGateway {
    child: Child,
    url: String,
    pub(crate) port: u16,
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn http_gateway(home: &Path, config: &str, envs: &[(&str, &str)]) -> HttpGateway {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = rkmcp_command(
        home,
        &[
            "--config",
            config,
            "serve",
            "--no-local-model",
            "--http",
            &addr,
        ],
    );
    cmd.envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("rkmcp serve --http starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[serve] {line}");
            if line.contains("serving MCP at") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the gateway did not start listening");
    HttpGateway {
        child,
        url: format!("http://{addr}/mcp"),
        port,
    }
}

/// One raw HTTP/1.1 POST of an `initialize` with extra headers; returns the status code and the
/// response head.
pub(crate) fn raw_initialize(port: u16, headers: &[(&str, &str)]) -> (u16, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    })
    .to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    // The head is enough (an SSE body may stay open).
    while !String::from_utf8_lossy(&response).contains("\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&response).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_rmcp_and_python_clients_and_refuses_foreign_origins() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(home.path(), "");
    let gw = http_gateway(home.path(), &config, &[]);

    // A page from another site must not drive the gateway (DNS rebinding).
    let (status, head) = raw_initialize(gw.port, &[("Origin", "http://evil.example")]);
    assert_eq!(status, 403, "{head}");
    let (status, head) = raw_initialize(gw.port, &[("Origin", "http://localhost:3000")]);
    assert_eq!(status, 200, "{head}");

    // rmcp's streamable HTTP client (its reqwest client needs a TLS provider, even for http).
    rkmcp::mcp::http::install_tls_provider();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(gw.url.as_str());
    let client = client_info()
        .serve(transport)
        .await
        .expect("initialize over HTTP");
    let time = call(
        &client,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await
    .expect("time over HTTP");
    assert!(text_of(&time).contains("UTC"), "{time:?}");
    let _ = client.cancel().await;

    // The Python SDK's client in its default mode (server/discover first: 2026-07-28 when the
    // gateway offers it), then pinned to the initialize handshake.
    for mode in ["auto", "legacy"] {
        let plan = json!({
            "mode": mode,
            "calls": [
                {"name": "everything__echo", "arguments": {"message": format!("http {mode}")}},
                {"name": "everything__get-env", "arguments": {}},
            ],
        });
        let out = python_client(&plan, &["--url".to_string(), gw.url.clone()]);
        let echo = call_result(&out, "everything__echo");
        assert_eq!(echo["is_error"], false, "{mode}: {out:#}");
        assert!(
            echo["text"]
                .as_str()
                .unwrap()
                .contains(&format!("http {mode}")),
            "{out:#}"
        );
        assert_eq!(
            call_result(&out, "everything__get-env")["is_error"],
            true,
            "{out:#}"
        );
    }
}

#[test]
fn http_with_a_bearer_token_refuses_requests_without_it() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(
        home.path(),
        "\n[serve.auth]\nbearer_token_env = \"RKMCP_TEST_SERVE_TOKEN\"\n",
    );
    let gw = http_gateway(
        home.path(),
        &config,
        &[("RKMCP_TEST_SERVE_TOKEN", "s3cret-token")],
    );
    let (status, head) = raw_initialize(gw.port, &[]);
    assert_eq!(status, 401, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{head}"
    );
    let (status, head) = raw_initialize(gw.port, &[("Authorization", "Bearer wrong")]);
    assert_eq!(status, 401, "{head}");
    let (status, head) = raw_initialize(gw.port, &[("Authorization", "Bearer s3cret-token")]);
    assert_eq!(status, 200, "{head}");
}

/// One raw HTTP/1.1 request; returns the status, the head and the body.
pub(crate) fn raw_http(
    port: u16,
    request_line: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut request = format!(
        "{request_line} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("a port in the URL")
}

/// A client-credentials access token of the provider for `resource` (RFC 8707).
fn provider_token(provider: &str, resource: &str) -> String {
    token_of_client(provider, resource, Machine::Post)
}

/// The provider's two machine clients (tests/servers/oidc_provider.mjs).
#[derive(Clone, Copy)]
enum Machine {
    Post,
    Basic,
}

/// A client-credentials access token of one of the provider's machine clients for `resource`.
fn token_of_client(provider: &str, resource: &str, client: Machine) -> String {
    let resource = resource.replace(':', "%3A").replace('/', "%2F");
    let (body, auth) = match client {
        Machine::Post => (
            format!(
                "grant_type=client_credentials&client_id=rkmcp-machine-post&client_secret=machine-post-secret&scope=mcp%3Atools&resource={resource}"
            ),
            None,
        ),
        Machine::Basic => (
            format!("grant_type=client_credentials&scope=mcp%3Atools&resource={resource}"),
            // rkmcp-machine-basic:machine-basic-secret
            Some("Basic cmttY3AtbWFjaGluZS1iYXNpYzptYWNoaW5lLWJhc2ljLXNlY3JldA=="),
        ),
    };
    let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
    headers.extend(auth.map(|a| ("Authorization", a)));
    let (status, head, body) = raw_http(port_of(provider), "POST /token", &headers, &body);
    assert_eq!(status, 200, "{head}\n{body}");
    let v: Value = serde_json::from_str(body.trim()).expect("a token response");
    v["access_token"]
        .as_str()
        .expect("access_token")
        .to_string()
}

#[test]
fn an_oauth_gateway_takes_only_its_issuers_tokens_issued_for_it() {
    let home = tempfile::tempdir().unwrap();
    let provider = rkmcp_tests::remote_peers::oidc_provider(3600, home.path().join("provider.log"));
    let config = two_servers(
        home.path(),
        &format!(
            "\n[serve.auth]\nissuer = {}\nscopes = [\"mcp:tools\"]\nintrospection_client_id = \"mcp-resource-server\"\nintrospection_client_secret_env = \"RKMCP_TEST_INTROSPECTION\"\n",
            toml_str(&provider.url)
        ),
    );
    let gw = http_gateway(
        home.path(),
        &config,
        &[("RKMCP_TEST_INTROSPECTION", "resource-server-secret")],
    );

    // Without a token: 401 naming the Protected Resource Metadata, which names the provider.
    let (status, head) = raw_initialize(gw.port, &[]);
    assert_eq!(status, 401, "{head}");
    let metadata_url = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        gw.port
    );
    assert!(
        head.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{head}"
    );
    let (status, head, body) = raw_http(
        gw.port,
        "GET /.well-known/oauth-protected-resource/mcp",
        &[],
        "",
    );
    assert_eq!(status, 200, "{head}");
    let metadata: Value = serde_json::from_str(body.trim()).expect("metadata JSON");
    assert_eq!(metadata["resource"], gw.url.as_str(), "{metadata}");
    assert_eq!(
        metadata["authorization_servers"],
        json!([provider.url]),
        "{metadata}"
    );

    // A real token of the provider, but issued for another server: refused, with the reason.
    let elsewhere = provider_token(&provider.url, "http://127.0.0.1:9/mcp");
    let (status, head) = raw_initialize(
        gw.port,
        &[("Authorization", &format!("Bearer {elsewhere}"))],
    );
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("invalid_token"), "{head}");
    let (status, head) = raw_initialize(gw.port, &[("Authorization", "Bearer made-up")]);
    assert_eq!(status, 401, "{head}");
    // One issued for the gateway: in.
    let mine = provider_token(&provider.url, &gw.url);
    let (status, head) = raw_initialize(gw.port, &[("Authorization", &format!("Bearer {mine}"))]);
    assert_eq!(status, 200, "{head}");

    // The session is bound to the client whose token opened it: another client of the same
    // provider, with a good token of its own, is answered as for an unknown session.
    let session = crate::serve_limits::session_id(&head);
    let in_session = |token: &str, body: &str| {
        raw_http(
            gw.port,
            "POST /mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", &format!("Bearer {token}")),
            ],
            body,
        )
    };
    let (status, head, _) = in_session(
        &mine,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(status, 202, "{head}");
    let theirs = token_of_client(&provider.url, &gw.url, Machine::Basic);
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let (status, head, body) = in_session(&theirs, ping);
    assert_eq!(
        status, 404,
        "another client used the session: {head}\n{body}"
    );
    let (status, head, body) = in_session(&mine, ping);
    assert_eq!(status, 200, "{head}\n{body}");

    // rkmcp as the gateway's client finds the provider through the metadata, signs in with the
    // client credentials grant and calls a tool behind the gateway.
    let client_home = tempfile::tempdir().unwrap();
    let client_config = write(
        client_home.path(),
        "client.toml",
        &format!(
            "[[servers]]\nname = \"gw\"\nurl = {}\nconnect_timeout = \"20s\"\n[servers.auth]\ngrant = \"client_credentials\"\nclient_id = \"rkmcp-machine-basic\"\nclient_secret = \"${{MACHINE_SECRET}}\"\nscopes = [\"mcp:tools\"]\n",
            toml_str(&gw.url)
        ),
    );
    let out = rkmcp_command(
        client_home.path(),
        &[
            "--config",
            &client_config.display().to_string(),
            "tools",
            "call",
            "gw/time__get_current_time",
            "timezone=UTC",
        ],
    )
    .env("MACHINE_SECRET", "machine-basic-secret")
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("UTC"), "{}", stdout(&out));
}

/// A server's sampling request goes to the client whose call made it and never to another:
/// with calls of two clients in flight to the server, nothing ties the request to one of them,
/// so it goes to neither (it once went to the newest call, here the other client's).
#[test]
fn a_servers_sampling_request_never_reaches_another_client() {
    let home = tempfile::tempdir().unwrap();
    let toml = format!(
        "{}\n[chat.approval]\nauto_approve = [\"fx/*\"]\n",
        // Server-to-client requests exist only up to 2025-11-25 (a 2026-07-28 server answers
        // with an input-required result instead, which never reaches a client's back channel).
        stdio_entry(
            "fx",
            FIXTURE,
            &["--sample-later".to_string()],
            "protocol = \"2025-11-25\""
        )
    );
    let config = write(home.path(), "rkmcp.toml", &toml)
        .display()
        .to_string();
    let gw = http_gateway(home.path(), &config, &[]);
    let url = vec!["--url".to_string(), gw.url.clone()];
    let sample_later = |seconds: f64, prompt: &str| {
        json!({"mode": "legacy", "calls": [{"name": "fx__sample_later",
            "arguments": {"seconds": seconds, "prompt": prompt}}]})
    };

    // Alone, the client whose call it is is asked.
    let alone = python_client(&sample_later(0.2, "for A alone"), &url);
    assert_eq!(alone["sampling"], json!(["for A alone"]), "{alone:#}");
    let sampled = call_result(&alone, "fx__sample_later");
    assert_eq!(sampled["is_error"], false, "{alone:#}");

    // A's call asks after 6 s; B's call to the same server starts meanwhile (a second later,
    // while A's waits), so B's is the newest call when A's request comes.
    let a = std::thread::spawn({
        let url = url.clone();
        let plan = sample_later(6.0, "private to A");
        move || python_client(&plan, &url)
    });
    std::thread::sleep(Duration::from_secs(1));
    let b_plan =
        json!({"mode": "legacy", "calls": [{"name": "fx__sleep", "arguments": {"seconds": 9}}]});
    let b = python_client(&b_plan, &url);
    let a = a.join().expect("client A ran");
    assert_eq!(
        b["sampling"],
        json!([]),
        "A's sampling prompt reached B: {b:#}"
    );
    assert_eq!(a["sampling"], json!([]), "{a:#}");
    let refused = call_result(&a, "fx__sample_later");
    assert!(
        refused["text"]
            .as_str()
            .unwrap()
            .contains("several clients"),
        "{a:#}"
    );
}

#[test]
fn listening_beyond_loopback_needs_a_token() {
    let home = tempfile::tempdir().unwrap();
    let config = two_servers(home.path(), "");
    let out = run_rkmcp(
        home.path(),
        &["--config", &config, "serve", "--http", "0.0.0.0:0"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bearer_token_env"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_plugin_denies_a_write_through_the_gateway() {
    use rkmcp_tests::plugin_support::{Fixture, shared_cache};
    const GUARD: &str = "approval-guard-default";
    let fixture = Fixture::new(&[(GUARD, GUARD)]);
    let home = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let (node, mut args) = filesystem_cmd();
    args.push(served.path().display().to_string());
    let toml = format!(
        "{}\n[roots]\npaths = [{}]\n\n[plugins]\ndirs = [{}]\ndefault_dir = false\ncache_dir = {}\n[plugins.grants.{GUARD}]\ncall_timeout_ms = 10000\nconfig = {{ allowed_roots = [{}] }}\n\n[chat.approval]\nguards = [\"{GUARD}\"]\n",
        stdio_entry("fs", &node, &args, ""),
        toml_str(&served.path().display().to_string()),
        toml_str(&fixture.plugins.path().display().to_string()),
        toml_str(&shared_cache().display().to_string()),
        toml_str(&elsewhere.path().display().to_string()),
    );
    let config = write(home.path(), "rkmcp.toml", &toml)
        .display()
        .to_string();
    // --yes approves whatever the guard does not deny.
    let client = rmcp_over_stdio(home.path(), &config, &["--no-local-model", "--yes"]).await;
    let target = served.path().join("written.txt");
    let result = call(
        &client,
        "fs__write_file",
        json!({"path": target.display().to_string(), "content": "x"}),
    )
    .await
    .expect("a result");
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text_of(&result).contains(&format!("guard:{GUARD}")),
        "{}",
        text_of(&result)
    );
    assert!(!target.exists(), "the denied write happened");
    // A read in the same folder is allowed by the same guard.
    std::fs::write(served.path().join("r.txt"), "readable").unwrap();
    let read = call(
        &client,
        "fs__read_text_file",
        json!({"path": served.path().join("r.txt").display().to_string()}),
    )
    .await
    .expect("read");
    assert!(text_of(&read).contains("readable"), "{read:?}");
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_is_a_tool_with_the_real_default_model() {
    let home = tempfile::tempdir().unwrap();
    let config = write(home.path(), "rkmcp.toml", "").display().to_string();
    let client = rmcp_over_stdio(home.path(), &config, &["--threads", "1", "--ctx", "1024"]).await;
    let tools = client.peer().list_all_tools().await.expect("tools/list");
    let tool = tools
        .iter()
        .find(|t| t.name == "local_model_generate")
        .unwrap_or_else(|| panic!("no local_model_generate in {tools:?}"));
    assert!(tool.input_schema.contains_key("properties"));
    // Two calls at once: the model runs one generation at a time, the other waits its turn.
    let args =
        json!({"prompt": "Say hello in one short sentence.", "max_tokens": 12, "temperature": 0});
    let (a, b) = tokio::join!(
        call(&client, "local_model_generate", args.clone()),
        call(&client, "local_model_generate", args)
    );
    for r in [a.expect("first"), b.expect("second")] {
        assert_ne!(r.is_error, Some(true), "{r:?}");
        assert!(!text_of(&r).trim().is_empty(), "{r:?}");
    }
    // Bad arguments are a tool error naming the argument.
    let bad = call(
        &client,
        "local_model_generate",
        json!({"prompt": "x", "max_tokens": -3}),
    )
    .await
    .expect("a result");
    assert_eq!(bad.is_error, Some(true));
    assert!(text_of(&bad).contains("max_tokens"), "{bad:?}");
    let _ = client.cancel().await;
}

#[test]
fn print_config_gives_paste_ready_snippets() {
    let home = tempfile::tempdir().unwrap();
    let config = write(home.path(), "rkmcp.toml", "").display().to_string();
    let out = run_rkmcp(
        home.path(),
        &["--config", &config, "serve", "--print-config", "claude"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let entry = &v["mcpServers"]["rkmcp"];
    assert!(
        Path::new(entry["command"].as_str().unwrap()).is_absolute(),
        "{v}"
    );
    assert_eq!(entry["args"][0], "--config");
    assert_eq!(entry["args"][2], "serve");
    let out = run_rkmcp(home.path(), &["serve", "--print-config", "vscode"]);
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["servers"]["rkmcp"]["type"], "stdio", "{v}");
    let out = run_rkmcp(home.path(), &["serve", "--print-config", "notepad"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("claude or vscode"),
        "{}",
        stderr(&out)
    );
}
