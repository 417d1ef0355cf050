//! The audit log (issue 17): every MCP message both ways and the tool calls, in JSON lines, with
//! secrets kept out, rotated by size, and readable with `rkmcp audit tail`.
use rkmcp::mcp::SessionManager;
use rkmcp_tests::*;
use serde_json::{Value, json};

const ENV_SECRET: &str = "s3cr3t-env-value";
const HEADER_SECRET: &str = "s3cr3t-header-token";
const ARG_SECRET: &str = "s3cr3t-password-arg";
const FLAG_SECRET: &str = "s3cr3t-flag-token";

fn config_text(audit: &str) -> String {
    let script = repo().join("tests/servers/hostile_server.py");
    let port = free_port();
    format!(
        "{}[[servers]]\nname = \"web\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nheaders = {{ Authorization = \"Bearer {HEADER_SECRET}\" }}\nconnect_timeout = \"5s\"\n{audit}",
        // The second server is never reachable: only its start (with the header) is recorded.
        stdio_entry(
            "h",
            &python(),
            &[
                script.display().to_string(),
                "--token".into(),
                FLAG_SECRET.into()
            ],
            &format!("env = {{ API_KEY = \"{ENV_SECRET}\" }}"),
        ),
    )
}

fn entries(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_never_reach_the_audit_file() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit/audit.jsonl");
    let config = load_config(
        dir.path(),
        &config_text(&format!("[audit]\npath = \"{}\"\n", audit.display())),
    );
    let manager = SessionManager::start(&config, None).await;
    assert!(manager.session("h").is_some(), "{:?}", manager.failures());
    // A secret in an argument under a secret-looking key, and a config secret inside a value
    // that the server echoes back.
    manager
        .call_tool(
            "h__echo",
            json!({"message": format!("hello {ENV_SECRET}"), "password": ARG_SECRET})
                .as_object()
                .cloned(),
        )
        .await
        .unwrap();
    manager.shutdown().await;

    let text = std::fs::read_to_string(&audit).unwrap();
    for secret in [ENV_SECRET, HEADER_SECRET, ARG_SECRET, FLAG_SECRET] {
        assert!(
            !text.contains(secret),
            "{secret} reached the audit log:\n{text}"
        );
    }
    let all = entries(&audit);
    let kinds: Vec<&str> = all.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(kinds.contains(&"server_start"), "{kinds:?}");
    // Both directions of the call, with what may be shown still there.
    let call = all
        .iter()
        .find(|e| e["message"]["method"] == "tools/call")
        .expect("the call is recorded");
    assert_eq!(call["server"], "h");
    assert_eq!(call["direction"], "to_server");
    assert_eq!(
        call["message"]["params"]["arguments"]["password"],
        "[redacted]"
    );
    assert_eq!(
        call["message"]["params"]["arguments"]["message"],
        "hello [redacted]"
    );
    assert!(
        all.iter().any(|e| e["direction"] == "from_server"
            && e["message"]["result"]["content"][0]["text"] == "hello [redacted]"),
        "the answer is recorded"
    );
    let web = all
        .iter()
        .find(|e| e["kind"] == "server_start" && e["server"] == "web")
        .unwrap();
    assert_eq!(web["headers"]["Authorization"], "[redacted]");
    let mode = std::fs::metadata(&audit).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o077,
        0,
        "only the owner may read it"
    );
}

#[test]
fn the_log_rotates_and_audit_tail_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    // ~4 KB per file: a few calls fill several.
    write(
        dir.path(),
        "rkmcp.toml",
        &config_text("[audit]\nmax_size_mb = 0.004\nkeep = 2\n"),
    );
    for i in 0..6 {
        let out = run_rkmcp(
            dir.path(),
            &[
                "--audit",
                &audit.display().to_string(),
                "tools",
                "call",
                "h__echo",
                &format!("message=call-{i}"),
            ],
        );
        // `web` never starts: exit 1, but `h` answered.
        assert!(
            stdout(&out).contains(&format!("call-{i}")),
            "{}",
            stderr(&out)
        );
    }
    let rotated = |n: usize| {
        let mut p = audit.as_os_str().to_owned();
        p.push(format!(".{n}"));
        std::path::PathBuf::from(p)
    };
    assert!(rotated(1).exists() && rotated(2).exists());
    assert!(!rotated(3).exists(), "only `keep` rotated files are kept");
    for path in [audit.clone(), rotated(1), rotated(2)] {
        let len = std::fs::metadata(&path).unwrap().len();
        // A file holds at most the limit, or one entry that alone is larger.
        let largest = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(str::len)
            .max()
            .unwrap_or(0) as u64;
        assert!(
            len <= 4195 || len <= largest + 1,
            "{} is {len} bytes",
            path.display()
        );
    }
    // The newest call is in the current file; `audit tail` shows it, filtered by server.
    let out = run_rkmcp(
        dir.path(),
        &[
            "--audit",
            &audit.display().to_string(),
            "audit",
            "tail",
            "--server",
            "h",
            "-n",
            "50",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("call-5"), "{shown}");
    assert!(shown.lines().all(|l| l.contains(" h ")), "{shown}");
    let out = run_rkmcp(
        dir.path(),
        &[
            "--json",
            "--audit",
            &audit.display().to_string(),
            "audit",
            "tail",
            "-n",
            "3",
        ],
    );
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
}
