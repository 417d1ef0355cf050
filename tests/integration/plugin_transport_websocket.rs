//! The transport-websocket plugin against a real MCP server (PyPI `mcp`, served over WebSocket by
//! tests/servers/ws_mcp_server.py), through the real plugin host: initialize, list tools, call
//! tools, close. Also: the plugin reaches only the `host:port` its grant names, and bad config is
//! reported as such.
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use rkmcp_plugin_host::{ConnectionError, PluginConnection, PluginHost};
use serde_json::{Value, json};

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const PLUGIN: &str = "transport-websocket";
const WAIT: Duration = Duration::from_secs(20);

/// The Python of the venv scripts/setup.d/30-plugin-toolchains.sh makes.
fn venv_python() -> PathBuf {
    let deps = std::env::var_os("RKMCP_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.deps"));
    let py = deps.join("venv-plugins/bin/python");
    assert!(
        py.is_file(),
        "{} not found: run scripts/setup (scripts/setup.d/30-plugin-toolchains.sh)",
        py.display()
    );
    py
}

/// The WebSocket MCP server, stopped when dropped (closing its stdin ends it; kill is the
/// fallback).
struct WsServer {
    child: Child,
    _stdin: ChildStdin,
    url: String,
    port: u16,
}

impl WsServer {
    fn start() -> WsServer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("servers/ws_mcp_server.py");
        let mut child = Command::new(venv_python())
            .arg(&script)
            .args(["--port", "0", "--path", "/mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("server stdin");
        let stdout = child.stdout.take().expect("server stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the server's LISTENING line");
        let url = line
            .trim()
            .strip_prefix("LISTENING ")
            .unwrap_or_else(|| panic!("server did not report its address, said {line:?}"))
            .to_string();
        let port = url
            .rsplit_once(':')
            .and_then(|(_, rest)| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {url}"));
        WsServer {
            child,
            _stdin: stdin,
            url,
            port,
        }
    }
}

impl Drop for WsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn host_with(f: &Fixture, grant: &str) -> PluginHost {
    f.host(&format!(
        "[grants.{PLUGIN}]\ncall_timeout_ms = 10000\n{grant}"
    ))
}

async fn request(conn: &PluginConnection, id: u64, method: &str, params: Value) -> Value {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    conn.send(&msg.to_string())
        .await
        .unwrap_or_else(|e| panic!("send {method}: {e}"));
    loop {
        let text = conn
            .receive(WAIT)
            .await
            .unwrap_or_else(|e| panic!("receive ({method}): {e}"))
            .unwrap_or_else(|| panic!("no answer to {method} within {WAIT:?}"));
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        // Server notifications or requests may come first; only our answer counts.
        if v.get("id") == Some(&json!(id)) {
            assert!(v.get("error").is_none(), "{method} failed: {v}");
            return v["result"].clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_calls_tools_of_a_websocket_mcp_server() {
    let server = WsServer::start();
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let host = host_with(
        &f,
        &format!(
            "network = [\"127.0.0.1:{}\"]\nconfig = {{ url = \"{}\" }}\n",
            server.port, server.url
        ),
    );
    let conn = host
        .transport(PLUGIN)
        .expect("transport")
        .connect()
        .await
        .expect("connect");

    let init = request(
        &conn,
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "rkmcp-test", "version": "0"}
        }),
    )
    .await;
    assert_eq!(init["serverInfo"]["name"], "ws-test-server", "{init}");
    conn.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await
        .expect("initialized");

    // Nothing is pending now: a short receive times out with `None`.
    assert_eq!(
        conn.receive(Duration::from_millis(50))
            .await
            .expect("idle receive"),
        None
    );

    let tools = request(&conn, 2, "tools/list", json!({})).await;
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["add", "echo"], "{tools}");

    let sum = request(
        &conn,
        3,
        "tools/call",
        json!({"name": "add", "arguments": {"a": 2, "b": 40}}),
    )
    .await;
    assert_eq!(sum["structuredContent"]["result"], 42, "{sum}");
    assert_eq!(sum["content"][0]["text"], "42", "{sum}");

    // A large message (64-bit frame length, many socket reads) and non-ASCII text survive.
    let big: String = "héllo wörld ✓ ".repeat(20_000);
    let echoed = request(
        &conn,
        4,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": big}}),
    )
    .await;
    assert_eq!(
        echoed["structuredContent"]["result"].as_str(),
        Some(big.as_str())
    );

    conn.close().await.expect("close");
    match conn.send("{}").await {
        Err(ConnectionError::Closed { .. } | ConnectionError::Plugin(_)) => {}
        other => panic!("send after close: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reaches_only_the_granted_host_and_port() {
    let server = WsServer::start();
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let config = format!("config = {{ url = \"{}\" }}\n", server.url);

    // No network grant at all.
    let host = host_with(&f, &config);
    match host.transport(PLUGIN).expect("transport").connect().await {
        Err(ConnectionError::Io { message, .. }) => {
            assert!(message.contains(&server.port.to_string()), "{message}")
        }
        Err(e) => panic!("wrong error without a grant: {e}"),
        Ok(_) => panic!("connected without a network grant"),
    }

    // A grant for another port of the same host.
    let other = if server.port == 65535 {
        server.port - 1
    } else {
        server.port + 1
    };
    let host = host_with(&f, &format!("network = [\"127.0.0.1:{other}\"]\n{config}"));
    match host.transport(PLUGIN).expect("transport").connect().await {
        Err(ConnectionError::Io { message, .. }) => {
            assert!(
                message.contains("grant"),
                "the error should point at the grant: {message}"
            )
        }
        Err(e) => panic!("wrong error with another port granted: {e}"),
        Ok(_) => panic!("connected to a port that was not granted"),
    }

    // The server was reachable all along: the exact grant connects.
    let host = host_with(
        &f,
        &format!("network = [\"127.0.0.1:{}\"]\n{config}", server.port),
    );
    let conn = host
        .transport(PLUGIN)
        .expect("transport")
        .connect()
        .await
        .expect("granted connect");
    conn.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_config_is_reported_as_config_errors() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    for (config, needle) in [
        ("", "url"),
        ("config = { url = \"http://127.0.0.1:9/mcp\" }", "ws://"),
        ("config = { url = \"wss://127.0.0.1:9/mcp\" }", "TLS"),
        (
            "config = { url = \"ws://127.0.0.1:9/mcp\", connect_timeout_ms = \"soon\" }",
            "connect_timeout_ms",
        ),
    ] {
        let host = host_with(&f, &format!("network = [\"127.0.0.1:9\"]\n{config}\n"));
        match host.transport(PLUGIN).expect("transport").connect().await {
            Err(ConnectionError::Config { message, .. }) => {
                assert!(message.contains(needle), "{config}: {message}")
            }
            Err(e) => panic!("{config}: not a config error: {e}"),
            Ok(_) => panic!("{config}: connected"),
        }
    }
}

/// `transport = "plugin:transport-websocket"` in rkmcp's config: the session manager builds the
/// plugin host, connects through the plugin and uses the server like any stdio or HTTP one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_transport_is_used_like_any_other_server() {
    let server = WsServer::start();
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let toml = format!(
        "[[servers]]\nname = \"ws\"\ntransport = \"plugin:{PLUGIN}\"\n\n\
         [plugins]\ndirs = [{dir:?}]\ndefault_dir = false\ncache_dir = {cache:?}\n\n\
         [plugins.grants.{PLUGIN}]\ncall_timeout_ms = 10000\nnetwork = [\"127.0.0.1:{port}\"]\n\
         config = {{ url = \"{url}\" }}\n",
        dir = f.plugins.path().display().to_string(),
        cache = support::shared_cache().display().to_string(),
        port = server.port,
        url = server.url,
    );
    let path = f.data.path().join("rkmcp.toml");
    std::fs::write(&path, &toml).expect("write config");
    let config = rkmcp::config::load_str(&path, &toml).unwrap_or_else(|e| panic!("{e}"));
    let manager = rkmcp::mcp::SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let (tools, _) = manager.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"ws__add"), "{names:?}");
    let sum = manager
        .call_tool("ws__add", json!({"a": 20, "b": 22}).as_object().cloned())
        .await
        .expect("call through the plugin");
    assert!(
        serde_json::to_string(&sum)
            .unwrap_or_default()
            .contains("42"),
        "{sum:?}"
    );
    manager.shutdown().await;

    // Without the network grant the server fails to start, with the reason.
    let denied = toml.replace(&format!("network = [\"127.0.0.1:{}\"]\n", server.port), "");
    let config = rkmcp::config::load_str(&path, &denied).unwrap_or_else(|e| panic!("{e}"));
    let manager = rkmcp::mcp::SessionManager::start(&config, None).await;
    let failure = &manager.failures()[0];
    assert!(failure.error.contains("server `ws`"), "{}", failure.error);
    assert!(failure.error.contains("grant"), "{}", failure.error);
    manager.shutdown().await;
}
