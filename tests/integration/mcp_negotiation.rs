//! `protocol = "auto"` never strands a user: whatever a server answers to `server/discover` (an
//! empty or wrong-shaped result, a JSON-RPC error of any code, an HTTP error, HTML, a body that is
//! not JSON, a closed connection, an exit, or nothing at all), rkmcp falls back to `initialize`,
//! lists and calls tools, says why in `servers status`, and goes straight to `initialize` when
//! the server is restarted. Real servers: tests/servers/legacy_stdio_server.py (PyPI `mcp` 2.x
//! low-level server behind a filter that answers the probe) and legacy_http_server.py (a
//! hand-written streamable HTTP server, since no SDK answers the probe this badly).
use std::path::Path;
use std::time::Duration;

use rkmcp::mcp::SessionManager;
use rkmcp::mcp::negotiate::Handshake;
use rkmcp_tests::remote_peers::Peer;
use rkmcp_tests::*;
use serde_json::{Value, json};

/// The probe's bound for the servers that stay silent (the default is 10 s). Servers that do
/// answer keep the default: a stdio server gets the probe as it is spawned, so a Python server
/// starting on a loaded 2-core machine can take seconds before it reads it.
const BOUND: &str = "2s";

fn stdio_server(name: &str, discover: &str, extra_args: &[&str], extra: &str) -> String {
    let mut args = vec![
        repo()
            .join("tests/servers/legacy_stdio_server.py")
            .display()
            .to_string(),
        "--discover".into(),
        discover.into(),
    ];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    stdio_entry(name, &python(), &args, extra)
}

fn http_server(log: &Path) -> Peer {
    let mut cmd = std::process::Command::new(python());
    cmd.arg(repo().join("tests/servers/legacy_http_server.py"));
    Peer::start_listening(cmd, log.to_path_buf())
}

fn http_entry(name: &str, peer: &Peer, mode: &str, extra: &str) -> String {
    format!(
        "[[servers]]\nname = {}\nurl = {}\n{extra}\n",
        toml_str(name),
        toml_str(&format!("{}/{mode}/mcp", peer.url))
    )
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

/// Every server of `cases` (name, what its fallback reason must contain) is up on 2025-11-25,
/// lists `echo`, answers a call, and says why it fell back.
async fn assert_all_fell_back(manager: &SessionManager, cases: &[(&str, &str)]) {
    let slow = fell_back_slow_or_as_expected(manager, cases).await;
    assert!(slow.is_empty(), "no answer within the bound: {slow:?}");
}

/// As [`assert_all_fell_back`], except that a server whose probe went unanswered for the
/// default 10 s bound (the longest rmcp allows) is returned instead of failing: a stdio server
/// gets the probe as it is spawned, and ten Python servers starting at once beside the rest of
/// the suite on 2 cores have taken longer than that to read it. The caller checks those again,
/// one at a time.
async fn fell_back_slow_or_as_expected<'a>(
    manager: &SessionManager,
    cases: &[(&'a str, &str)],
) -> Vec<&'a str> {
    let mut slow = Vec::new();
    assert!(manager.failures().is_empty(), "{:#?}", manager.failures());
    for (name, why_part) in cases {
        let session = manager
            .session(name)
            .unwrap_or_else(|| panic!("{name} is not up"));
        assert_eq!(
            session.protocol_version().map(|v| v.to_string()).as_deref(),
            Some("2025-11-25"),
            "{name}"
        );
        let tools: Vec<_> = session
            .catalog()
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(tools, ["echo"], "{name}");
        let result = manager
            .call_tool(
                &format!("{name}__echo"),
                json!({"text": name}).as_object().cloned(),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(text_of(&result), format!("echo: {name}"));
        match session.handshake() {
            Handshake::FellBack { why }
                if why == "no answer within 10s" && !why.contains(why_part) =>
            {
                slow.push(*name)
            }
            Handshake::FellBack { why } => {
                assert!(why.contains(why_part), "{name}: `{why}` lacks `{why_part}`")
            }
            other => panic!("{name}: {other:?}"),
        }
        let note = session.handshake().note().unwrap_or_default();
        assert!(
            note.starts_with("server/discover not supported: "),
            "{note}"
        );
    }
    slow
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_servers_fall_back_to_initialize_whatever_they_answer_to_the_probe() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("s_empty", "empty", "an empty result"),
        ("s_wrong_shape", "wrong-shape", "not a discover result"),
        (
            "s_method_not_found",
            "error:-32601",
            "JSON-RPC error -32601",
        ),
        ("s_invalid_request", "error:-32600", "JSON-RPC error -32600"),
        // 2026-07-28 rejection codes, on which rmcp alone would not fall back.
        (
            "s_missing_capability",
            "error:-32021",
            "JSON-RPC error -32021",
        ),
        (
            "s_unsupported_version",
            "error:-32022",
            "JSON-RPC error -32022",
        ),
        ("s_custom_code", "error:4242", "JSON-RPC error 4242"),
        ("s_null_id", "error-null-id:-32600", "JSON-RPC error -32600"),
        ("s_silent", "silent", "no answer within 2s"),
        ("s_exits", "exit", "closed the connection"),
    ];
    let toml: String = cases
        .iter()
        .map(|(name, mode, _)| {
            let bound = if *mode == "silent" {
                format!("discover_timeout = \"{BOUND}\"")
            } else {
                String::new()
            };
            stdio_server(name, mode, &[], &bound)
        })
        .collect();
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    let expected: Vec<(&str, &str)> = cases.iter().map(|(n, _, why)| (*n, *why)).collect();
    let slow = fell_back_slow_or_as_expected(&manager, &expected).await;
    // Those that were slow to start, again alone (under a new name: the handshake is remembered
    // per server): now what they answer must be the reason.
    for name in slow {
        let Some((_, mode, why)) = cases.iter().find(|(n, _, _)| *n == name) else {
            continue;
        };
        let again = format!("{name}_alone");
        let config = load_config(dir.path(), &stdio_server(&again, mode, &[], ""));
        let alone = SessionManager::start(&config, None).await;
        assert_all_fell_back(&alone, &[(again.as_str(), why)]).await;
        alone.shutdown().await;
    }
    // The silent server waited the configured bound ("no answer within 2s" above), not rmcp's
    // own 10 s (which would read "within 10s"); no upper bound on the time: its start-up on a
    // loaded machine is not the probe's.
    let silent = manager.session("s_silent").unwrap().startup;
    assert!(
        silent >= Duration::from_secs(2),
        "connecting to the silent server took {silent:?}"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_servers_fall_back_to_initialize_whatever_they_answer_to_the_probe() {
    let dir = tempfile::tempdir().unwrap();
    let peer = http_server(&dir.path().join("http.log"));
    let cases = [
        ("h_empty", "empty", "an empty result"),
        ("h_wrong_shape", "wrong-shape", "not a discover result"),
        (
            "h_method_not_found",
            "error--32601",
            "JSON-RPC error -32601",
        ),
        ("h_invalid_request", "error--32600", "JSON-RPC error -32600"),
        (
            "h_missing_capability",
            "error--32021",
            "JSON-RPC error -32021",
        ),
        ("h_custom_code", "error-4242", "JSON-RPC error 4242"),
        ("h_400", "http-400", "400"),
        ("h_404", "http-404", "404"),
        ("h_405", "http-405", "405"),
        ("h_500", "http-500", "500"),
        ("h_html", "html", "text/html"),
        ("h_not_json", "not-json", "JSON"),
        ("h_close", "close", ""),
        ("h_silent", "silent", "no answer within 2s"),
    ];
    let toml: String = cases
        .iter()
        .map(|(name, mode, _)| {
            http_entry(
                name,
                &peer,
                mode,
                &format!("discover_timeout = \"{BOUND}\""),
            )
        })
        .collect();
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    let expected: Vec<(&str, &str)> = cases.iter().map(|(n, _, why)| (*n, *why)).collect();
    let slow = fell_back_slow_or_as_expected(&manager, &expected).await;
    // Those that were slow to start, again alone: now what they answer must be the reason.
    for name in slow {
        let case: Vec<_> = expected
            .iter()
            .filter(|(n, _)| *n == name)
            .cloned()
            .collect();
        let alone = SessionManager::start(&config, Some(name)).await;
        assert_all_fell_back(&alone, &case).await;
        alone.shutdown().await;
    }
    let silent = manager.session("h_silent").unwrap().startup;
    assert!(
        silent >= Duration::from_secs(2) && silent < Duration::from_secs(5),
        "connecting to the silent server took {silent:?}"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_goes_straight_to_what_worked() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("first-requests.txt");
    let peer = http_server(&dir.path().join("http.log"));
    let toml = format!(
        "{}{}",
        stdio_server(
            "r_exits",
            "exit",
            &["--record", &record.display().to_string()],
            ""
        ),
        http_entry("r_empty", &peer, "empty", "")
    );
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.failures().is_empty(), "{:#?}", manager.failures());
    let first_requests = || std::fs::read_to_string(&record).unwrap();
    // The first process exited on the probe; the second got `initialize`.
    assert_eq!(first_requests(), "server/discover\ninitialize\n");
    let probes = || {
        peer.log_text()
            .lines()
            .filter(|l| *l == "empty server/discover")
            .count()
    };
    assert_eq!(probes(), 1);
    for name in ["r_exits", "r_empty"] {
        let session = manager.session(name).unwrap();
        session.restart().await.unwrap();
        assert!(
            matches!(session.handshake(), Handshake::FellBack { .. }),
            "{name}: {:?}",
            session.handshake()
        );
        let result = manager
            .call_tool(
                &format!("{name}__echo"),
                json!({"text": "again"}).as_object().cloned(),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&result), "echo: again");
    }
    assert_eq!(
        first_requests(),
        "server/discover\ninitialize\ninitialize\n",
        "the restarted process must get `initialize` first"
    );
    assert_eq!(probes(), 1, "the reconnect must not probe again");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pinned_protocol_is_used_as_configured() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("first-requests.txt");
    let toml = format!(
        "{}{}",
        stdio_server(
            "p_2025",
            "silent",
            &["--record", &record.display().to_string()],
            "protocol = \"2025-11-25\""
        ),
        stdio_server("p_2026", "empty", &[], "protocol = \"2026-07-28\"")
    );
    let config = load_config(dir.path(), &toml);
    let manager = SessionManager::start(&config, None).await;
    // 2025-11-25: `initialize` at once, no probe.
    let pinned = manager.session("p_2025").unwrap();
    assert_eq!(pinned.handshake(), Handshake::Pinned);
    assert_eq!(pinned.handshake().note(), None);
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "initialize\n");
    // 2026-07-28 against a server without it: refused, no fallback.
    let failure = manager
        .failures()
        .iter()
        .find(|f| f.server == "p_2026")
        .expect("a pinned 2026-07-28 must not fall back");
    assert!(
        failure.error.contains("server `p_2026`"),
        "{}",
        failure.error
    );
    manager.shutdown().await;
}

#[test]
fn servers_status_says_why_server_discover_did_not_count() {
    let home = tempfile::tempdir().unwrap();
    let peer = http_server(&home.path().join("http.log"));
    let python = deps().join("venv/bin/python").display().to_string();
    let modern = stdio_entry(
        "modern",
        &python,
        &[repo()
            .join("tests/servers/protocol_server.py")
            .display()
            .to_string()],
        "",
    );
    let toml = format!(
        "{}{}{modern}",
        stdio_server("conformance_like", "empty", &[], ""),
        http_entry("not_found", &peer, "http-404", "")
    );
    let config = write(home.path(), "rkmcp.toml", &toml);
    let config = config.display().to_string();
    let out = run_rkmcp(home.path(), &["--config", &config, "servers", "status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains(
            "2025-11-25 (server/discover not supported: it answered with an empty result)"
        ),
        "{table}"
    );
    assert!(
        table.contains("2025-11-25 (server/discover not supported: "),
        "{table}"
    );
    let status_rows = |config: &str| -> Value {
        let out = run_rkmcp(
            home.path(),
            &["--config", config, "--json", "servers", "status"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let rows = status_rows(&config);
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no row {name}: {rows}"))
    };
    let not_found = row("not_found");
    assert_eq!(not_found["protocol_version"], "2025-11-25");
    let note = not_found["protocol_note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("server/discover not supported: ") && note.contains("404"),
        "{note}"
    );
    let mut modern_row = row("modern");
    if modern_row["protocol_version"] != "2026-07-28" {
        // Three servers start at once here, one a Python interpreter importing the `mcp` package;
        // on a loaded 2-core machine its first answer can miss the 10 s discover bound (rmcp's
        // own maximum). That, and only that, is checked again with the server started alone.
        let note = modern_row["protocol_note"].as_str().unwrap_or_default();
        assert!(
            note.starts_with("server/discover not supported: no answer within"),
            "the 2026 server fell back for another reason: {modern_row}"
        );
        let alone = write(home.path(), "alone.toml", &modern);
        modern_row = status_rows(&alone.display().to_string())[0].clone();
    }
    assert_eq!(modern_row["protocol_version"], "2026-07-28", "{modern_row}");
    assert_eq!(modern_row["protocol_note"], Value::Null, "{modern_row}");
}
