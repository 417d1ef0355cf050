//! Shared helpers for the integration tests: where the real test servers were installed (by
//! `scripts/setup`), where the built binaries are, and temporary configs.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod eval;
pub mod plugin_support;
pub mod remote_peers;
pub mod scripted_backend;

/// The answer text a chat turn showed the user (its `Text` events, joined).
pub fn visible_text(events: &[rkmcp::chat::ChatEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            rkmcp::chat::ChatEvent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Where `scripts/setup` installed npm and PyPI test peers.
pub fn deps() -> PathBuf {
    std::env::var_os("RKMCP_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".deps"))
}

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup (or scripts/test) first",
        path.display()
    );
    path
}

/// `node` and the server-everything entry point.
pub fn everything_cmd() -> (String, Vec<String>) {
    let script = require(
        deps().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    );
    ("node".into(), vec![script.display().to_string()])
}

pub fn filesystem_cmd() -> (String, Vec<String>) {
    let script = require(
        deps().join("node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
    );
    ("node".into(), vec![script.display().to_string()])
}

pub fn time_server() -> PathBuf {
    require(deps().join("venv/bin/mcp-server-time"))
}

/// The Python of the test servers' virtualenv (PyPI `mcp` and `mcp-server-time` are there).
pub fn python() -> String {
    let venv = deps().join("venv/bin/python3");
    if venv.exists() {
        venv.display().to_string()
    } else {
        "python3".into()
    }
}

/// Command and arguments of the real `mcp-server-time` with its clock stopped at `utc_instant`
/// (tests/servers/time_at.py): a greedy model then gets the same result on every run.
pub fn time_server_at(utc_instant: &str, server_args: &[&str]) -> (String, Vec<String>) {
    require(time_server());
    let mut args = vec![
        repo()
            .join("tests/servers/time_at.py")
            .display()
            .to_string(),
        utc_instant.to_string(),
    ];
    args.extend(server_args.iter().map(|a| a.to_string()));
    (python(), args)
}

/// A binary built in the same target directory as the running test
/// (`target/release/deps/test-xxxx` → `target/release/NAME`).
pub fn built_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    require(dir.join(name))
}

/// The `rkmcp` binary (scripts/test builds it before running the tests).
pub fn rkmcp() -> PathBuf {
    built_binary("rkmcp")
}

/// Runs `rkmcp ARGS` with an isolated environment: no user config, logs and state in `home`.
pub fn run_rkmcp(home: &Path, args: &[&str]) -> Output {
    rkmcp_command(home, args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run rkmcp: {e}"))
}

/// Flags that make the embedded model repeatable and cheap on CI's two cores.
pub const GREEDY: &[&str] = &["--temperature", "0", "--threads", "1", "--ctx", "2048"];

/// `rkmcp --config CONFIG ask --json FLAGS… --max-tokens 64 QUESTION` with [`GREEDY`] in
/// `home`: the report it printed (it must succeed).
pub fn ask_json(home: &Path, config: &str, flags: &[&str], question: &str) -> serde_json::Value {
    let mut args = vec!["--config", config, "ask", "--json"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--max-tokens", "64", question]);
    args.extend_from_slice(GREEDY);
    let out = run_rkmcp(home, &args);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("ask --json printed no JSON ({e}): {}", stdout(&out)))
}

pub fn rkmcp_command(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(rkmcp());
    cmd.args(args)
        .current_dir(home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        // Never the developer's own keyring; the keyring test asks for one it started.
        .env("RKMCP_TOKEN_STORE", "file")
        .env_remove("RKMCP_CONFIG")
        .env_remove("RUST_LOG");
    cmd
}

/// `cmd` (an `rkmcp` command) run on a pseudo-terminal, as a person at a terminal runs it:
/// `rexpect` drives it, with ANSI sequences stripped from what the test reads and `timeout` on
/// each expectation.
pub fn on_terminal(mut cmd: Command, timeout: std::time::Duration) -> rexpect::session::PtySession {
    cmd.env("TERM", "xterm-256color").env("NO_COLOR", "1");
    rexpect::session::spawn_with_options(
        cmd,
        rexpect::reader::Options::new()
            .timeout_ms(Some(timeout.as_millis() as u64))
            .strip_ansi_escape_codes(true),
    )
    .expect("cannot start rkmcp on a pseudo-terminal")
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
    }
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

/// Writes `toml` as `dir/rkmcp.toml` and loads it, with server logs kept in `dir/logs`.
pub fn load_config(dir: &Path, toml: &str) -> rkmcp::config::Config {
    let path = write(dir, "rkmcp.toml", toml);
    let mut c = rkmcp::config::load_str(&path, toml).unwrap_or_else(|e| panic!("{e}"));
    c.log_dir = dir.join("logs");
    c
}

/// Runs one user turn of `engine` to its end; returns the outcome and every event it sent.
pub async fn one_turn(
    engine: &mut rkmcp::chat::ChatEngine,
    input: &str,
) -> (rkmcp::chat::TurnOutcome, Vec<rkmcp::chat::ChatEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = engine
        .turn(input, &tx, tokio_util::sync::CancellationToken::new())
        .await
        .expect("turn failed");
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    (outcome, events)
}

/// Asserts a turn ran one tool call in its first round and answered `answer` in the second
/// (`events` are shown when it did not).
pub fn assert_one_call_then_answer(
    outcome: &rkmcp::chat::TurnOutcome,
    events: &[rkmcp::chat::ChatEvent],
    answer: &str,
) {
    assert_eq!((outcome.rounds, outcome.tool_calls), (2, 1), "{events:?}");
    assert_eq!(outcome.answer, answer);
}

/// The notices among `events`.
pub fn notices(events: &[rkmcp::chat::ChatEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            rkmcp::chat::ChatEvent::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The error of loading a chat's plugins with `[chat]` settings `chat_toml` from an empty plugin
/// folder (a detector or converter the settings name is missing); panics if they load.
pub fn chat_plugins_error(chat_toml: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugin folder");
    let toml = format!(
        "[plugins]\ndirs = [{}]\ndefault_dir = false\n[chat]\n{chat_toml}\n",
        toml_str(&plugins.display().to_string()),
    );
    let config = load_config(dir.path(), &toml);
    let settings: rkmcp::chat::ChatSettings = config.section("chat").expect("[chat]");
    match rkmcp::chat::start::load_plugins(&config, &settings) {
        Ok(_) => panic!("plugins that are not there loaded: {chat_toml}"),
        Err(e) => format!("{e:#}"),
    }
}

/// TOML string literal (paths may contain backslashes or quotes).
pub fn toml_str(s: &str) -> String {
    toml_escape(s)
}

fn toml_escape(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `[[servers]]` entry named `everything` running server-everything over stdio, `extra` its
/// further keys (`allow = ["echo"]`).
pub fn everything_entry(extra: &str) -> String {
    let (node, mut args) = everything_cmd();
    args.push("stdio".into());
    stdio_entry("everything", &node, &args, extra)
}

/// A `[[servers]]` entry for a stdio server.
pub fn stdio_entry(name: &str, command: &str, args: &[String], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| toml_str(a)).collect();
    format!(
        "[[servers]]\nname = {}\ncommand = {}\nargs = [{}]\n{extra}\n",
        toml_str(name),
        toml_str(command),
        args.join(", ")
    )
}

/// A free loopback TCP port (bound and released; good enough for a test server).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
