//! Config files with each kind of mistake: every one exits with code 2 and an error naming the
//! file, the line and column, the key, and what to do. Plus lookup, merging and masking.
use rkmcp_tests::*;

/// Runs `rkmcp config check` on `text` written as `name` and returns (exit code, stderr).
fn check(name: &str, text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), name, text);
    let out = run_rkmcp(
        dir.path(),
        &["--config", &path.display().to_string(), "config", "check"],
    );
    (out.status.code(), stderr(&out))
}

fn assert_error(name: &str, text: &str, expected: &[&str]) {
    let (code, err) = check(name, text);
    assert_eq!(
        code,
        Some(2),
        "expected a config error for {text:?}, got: {err}"
    );
    for needle in expected {
        assert!(err.contains(needle), "missing {needle:?} in: {err}");
    }
}

#[test]
fn typo_in_a_key_suggests_the_nearest() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncomand = \"mcp-server-time\"\n",
        &[
            "rkmcp.toml:3:1",
            "servers[0].comand",
            "did you mean `command`?",
        ],
    );
}

#[test]
fn typo_in_a_top_level_table() {
    assert_error(
        "rkmcp.toml",
        "[[server]]\nname = \"t\"\ncommand = \"x\"\n",
        &["rkmcp.toml:1:", "did you mean `servers`?"],
    );
}

#[test]
fn unknown_transport_suggests() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ntransport = \"htpp\"\nurl = \"http://x/mcp\"\n",
        &[
            "rkmcp.toml:2:1",
            "unknown transport `htpp`",
            "did you mean `http`?",
        ],
    );
}

#[test]
fn missing_environment_variable_is_named() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncommand = \"x\"\nenv = { TOKEN = \"${RKMCP_SURELY_UNSET_VAR}\" }\n",
        &[
            "rkmcp.toml:4:",
            "RKMCP_SURELY_UNSET_VAR",
            "is not set",
            ":-default",
        ],
    );
}

#[test]
fn environment_defaults_apply() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncommand = \"${RKMCP_SURELY_UNSET_VAR:-mcp-server-time}\"\nargs = [\"--tz\", \"${RKMCP_TEST_TZ}\"]\n",
    );
    let out = rkmcp_command(
        dir.path(),
        &[
            "--json",
            "--config",
            &path.display().to_string(),
            "config",
            "check",
        ],
    )
    .env("RKMCP_TEST_TZ", "Europe/Oslo")
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["servers"][0]["command"], "mcp-server-time");
    assert_eq!(v["servers"][0]["args"][1], "Europe/Oslo");
}

#[test]
fn syntax_error_is_positioned() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncommand = \"x\n",
        &["rkmcp.toml:3:"],
    );
}

#[test]
fn wrong_type_names_the_key() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncommand = \"x\"\nargs = \"--one-string\"\n",
        &["rkmcp.toml:4:", "servers[0].args"],
    );
}

#[test]
fn stdio_server_without_command() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"lonely\"\n",
        &["rkmcp.toml:2:", "server `lonely`", "needs either `command`"],
    );
}

#[test]
fn bad_duration() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncommand = \"x\"\nrequest_timeout = \"soon\"\n",
        &[
            "server `t`",
            "`request_timeout`",
            "`soon` is not a duration",
        ],
    );
}

#[test]
fn bad_glob_in_allow_list() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncommand = \"x\"\nallow = [\"get_[\"]\n",
        &["server `t`", "`get_[` is not a valid glob"],
    );
}

#[test]
fn duplicate_server_names_in_one_file() {
    assert_error(
        "rkmcp.toml",
        "[[servers]]\nname = \"t\"\ncommand = \"x\"\n[[servers]]\nname = \"t\"\ncommand = \"y\"\n",
        &["server `t` is defined twice"],
    );
}

#[test]
fn json_mistakes_are_positioned_too() {
    assert_error(
        "mcp.json",
        "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\", \"arg\": [] }\n  }\n}\n",
        &["mcp.json:3:", "mcpServers.a.arg", "did you mean `args`?"],
    );
    assert_error("mcp.json", "{ \"mcpServers\": { \"a\": ", &["mcp.json:1:"]);
}

#[test]
fn missing_config_file_given_explicitly() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_rkmcp(dir.path(), &["--config", "nope.toml", "servers", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nope.toml does not exist"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn workspace_config_merges_over_user_config_and_secrets_are_masked() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config/rkmcp/config.toml",
        "[[servers]]\nname = \"shared\"\ncommand = \"user-version\"\n[[servers]]\nname = \"mine\"\ncommand = \"only-user\"\nenv = { API_TOKEN = \"s3cret\" }\n",
    );
    write(
        dir.path(),
        ".rkmcp/config.toml",
        "[[servers]]\nname = \"shared\"\ncommand = \"workspace-version\"\n",
    );
    let out = run_rkmcp(dir.path(), &["--json", "config", "check"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["sources"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["servers"][0]["name"], "shared");
    assert_eq!(v["servers"][0]["command"], "workspace-version");
    assert_eq!(v["servers"][1]["env"]["API_TOKEN"], "***");
    assert!(!stdout(&out).contains("s3cret"));
}

#[test]
fn usage_errors_exit_2_and_runtime_failures_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "rkmcp.toml",
        "[[servers]]\nname = \"timer\"\ncommand = \"/nonexistent/x\"\n",
    );
    let out = run_rkmcp(dir.path(), &["tools", "list", "--server", "timr"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `timer`?"),
        "{}",
        stderr(&out)
    );
    let out = run_rkmcp(dir.path(), &["servers", "status"]);
    assert_eq!(out.status.code(), Some(1));
    let out = run_rkmcp(dir.path(), &["tools", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn typos_in_plugin_and_model_sections_are_caught() {
    assert_error(
        "rkmcp.toml",
        "[model]\nmax_new_token = 5\n",
        &[
            "rkmcp.toml",
            "model.max_new_token",
            "did you mean `max_new_tokens`?",
        ],
    );
    assert_error(
        "rkmcp.toml",
        "[plugins.grants.x]\nnetwrok = [\"127.0.0.1:1\"]\n",
        &[
            "rkmcp.toml",
            "plugins.grants.x.netwrok",
            "did you mean `network`?",
        ],
    );
}

#[test]
fn example_configs_are_valid() {
    for name in [
        "example.toml",
        "quickstart.toml",
        "claude_desktop_config.json",
    ] {
        let path = repo().join("config").join(name);
        let dir = tempfile::tempdir().unwrap();
        let out = rkmcp_command(
            dir.path(),
            &["--config", &path.display().to_string(), "config", "check"],
        )
        .env("RKMCP_DEPS", "/opt/deps")
        .output()
        .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
    }
}
