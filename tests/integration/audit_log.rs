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
        // A file holds at most the limit, or one entry that alone is larger (after the record
        // of the hash chain that starts each file).
        let text = std::fs::read_to_string(&path).unwrap();
        let largest = text.lines().map(str::len).max().unwrap_or(0) as u64;
        let first = text.lines().next().map(str::len).unwrap_or(0) as u64;
        assert!(
            len <= 4195 || len <= largest + 1 + first + 1,
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
    // Six runs and their rotations kept one hash chain.
    let out = run_rkmcp(
        dir.path(),
        &["--audit", &audit.display().to_string(), "audit", "verify"],
    );
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}{}", stderr(&out));
    assert!(
        shown.starts_with("audit log intact: ") && shown.contains(" lines in 3 files"),
        "{shown}"
    );
}

// ---- The hash chain (issue 35): `rkmcp audit verify` on logs written by real runs. ----

/// A log written by two real runs of `rkmcp tools call` (the second continues the chain).
fn real_log(dir: &std::path::Path) -> std::path::PathBuf {
    let audit = dir.join("audit.jsonl");
    write(dir, "rkmcp.toml", &config_text(""));
    for i in 0..2 {
        let out = run_rkmcp(
            dir,
            &[
                "--audit",
                &audit.display().to_string(),
                "tools",
                "call",
                "h__echo",
                &format!("message=call-{i}"),
            ],
        );
        assert!(
            stdout(&out).contains(&format!("call-{i}")),
            "{}",
            stderr(&out)
        );
    }
    audit
}

fn log_lines(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(lines.len() >= 8, "a real run writes a few lines: {text}");
    lines
}

fn rewrite_log(path: &std::path::Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// `rkmcp audit verify FILE`: exit code and stdout (stderr shown on failure).
fn verify_log(dir: &std::path::Path, audit: &std::path::Path, extra: &[&str]) -> (i32, String) {
    let path = audit.display().to_string();
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["audit", "verify", &path]);
    let out = run_rkmcp(dir, &args);
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "exit {code}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    (code, stdout(&out))
}

#[test]
fn audit_verify_finds_a_real_log_intact() {
    let dir = tempfile::tempdir().unwrap();
    let audit = real_log(dir.path());
    let lines = log_lines(&audit);
    // Every line carries its link and hash.
    for line in &lines {
        let entry: Value = serde_json::from_str(line).unwrap();
        assert_eq!(entry["chain"].as_str().map(str::len), Some(64), "{line}");
        assert_eq!(entry["prev"].as_str().map(str::len), Some(64), "{line}");
    }
    let (code, out) = verify_log(dir.path(), &audit, &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.lines().next().unwrap_or(""),
        format!("audit log intact: {} lines in 1 file", lines.len()),
        "{out}"
    );
    // The configured log is the default; --json says the same.
    let out = run_rkmcp(
        dir.path(),
        &[
            "--json",
            "--audit",
            &audit.display().to_string(),
            "audit",
            "verify",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["intact"], true, "{report}");
    assert_eq!(report["lines"], lines.len());
    assert_eq!(report["problem"], Value::Null);
}

#[test]
fn audit_verify_names_an_edited_line() {
    let dir = tempfile::tempdir().unwrap();
    let audit = real_log(dir.path());
    let mut lines = log_lines(&audit);
    let k = lines.len() / 2;
    assert!(lines[k].starts_with("{\"time\":\"2"), "{}", lines[k]);
    lines[k] = lines[k].replacen("{\"time\":\"2", "{\"time\":\"1", 1);
    rewrite_log(&audit, &lines);
    let (code, out) = verify_log(dir.path(), &audit, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("audit log tampered: ")
            && out.contains(&format!("audit.jsonl line {} was edited", k + 1))
            && out.contains("does not match its hash"),
        "{out}"
    );
    let (code, out) = verify_log(dir.path(), &audit, &["--json"]);
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["intact"], false);
    assert_eq!(report["problem"]["kind"], "edited");
    assert_eq!(report["problem"]["line"], k + 1);
}

#[test]
fn audit_verify_names_a_removed_line() {
    let dir = tempfile::tempdir().unwrap();
    let audit = real_log(dir.path());
    let mut lines = log_lines(&audit);
    let k = lines.len() / 2;
    lines.remove(k);
    rewrite_log(&audit, &lines);
    let (code, out) = verify_log(dir.path(), &audit, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("audit.jsonl line {} follows removed lines", k + 1))
            && out.contains(&format!("between {} line {k} and it", audit.display())),
        "{out}"
    );
}

#[test]
fn audit_verify_names_swapped_lines_as_reordered() {
    let dir = tempfile::tempdir().unwrap();
    let audit = real_log(dir.path());
    let mut lines = log_lines(&audit);
    let k = lines.len() / 2;
    lines.swap(k, k + 1);
    rewrite_log(&audit, &lines);
    let (code, out) = verify_log(dir.path(), &audit, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "audit.jsonl line {} is out of order (reordered): it belongs right after {} line {}",
            k + 1,
            audit.display(),
            k + 2
        )),
        "{out}"
    );
}

#[test]
fn audit_verify_reports_lines_written_before_chaining_and_checks_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    // What an rkmcp older than the chain wrote.
    let old = [
        json!({"time": "2025-01-01T00:00:00.000Z", "server": "h", "kind": "server_start", "transport": "stdio"}),
        json!({"time": "2025-01-01T00:00:01.000Z", "server": "h", "kind": "tool_call", "tool": "echo", "decision": "allow", "decided_by": "user"}),
    ];
    std::fs::write(
        &audit,
        old.iter().map(|e| format!("{e}\n")).collect::<String>(),
    )
    .unwrap();
    real_log(dir.path());
    let lines = log_lines(&audit);
    assert!(
        lines[2].contains("\"event\":\"restart\"") && lines[2].contains("before chaining"),
        "the new chain says why it starts: {}",
        lines[2]
    );
    let (code, out) = verify_log(dir.path(), &audit, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with(&format!(
            "audit log intact: {} lines in 1 file (2 unchained, written before chaining)",
            lines.len()
        )) && out.contains("unchained (written before chaining)"),
        "{out}"
    );
    // The chained part after them is still checked.
    let mut lines = lines;
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen("{\"time\":\"2", "{\"time\":\"1", 1);
    rewrite_log(&audit, &lines);
    let (code, out) = verify_log(dir.path(), &audit, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("line {} was edited", last + 1)),
        "{out}"
    );
}

#[test]
fn audit_verify_without_a_log_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "rkmcp.toml", "");
    let out = run_rkmcp(dir.path(), &["audit", "verify"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no audit log is configured"),
        "{}",
        stderr(&out)
    );
    let missing = dir.path().join("nowhere.jsonl");
    let out = run_rkmcp(
        dir.path(),
        &["audit", "verify", &missing.display().to_string()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("there is no audit log at {}", missing.display())),
        "{}",
        stderr(&out)
    );
}
