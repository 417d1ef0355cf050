//! What the real `rkmcp` binary prints on stderr. At the default verbosity: rkmcp's own lines
//! only (`rkmcp: …` notices and the `[MCP: …]` status lines of a turn), each notice once, naming
//! the server or plugin and saying what to do — no library log lines, no timestamps or colours,
//! no Rust paths, type names or Debug output. `-v` adds the libraries' lines in the same words;
//! `--log-file` gets everything.
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use rkmcp_tests::plugin_support::{built, shared_cache};
use rkmcp_tests::*;

/// Text that only a library's log line or a Debug dump would put on stderr.
const LEAKS: &[&str] = &[
    "rkmcp::", "rmcp::", "rkmcp_", "Some(", "None", "Error {", "Error(", "\u{1b}[", " WARN ",
    " ERROR ", " INFO ",
];

/// Every line is rkmcp's own and none leaks; returns the notices (`rkmcp: warning: …` and
/// `rkmcp: error: …`).
fn own_lines_only(err: &str) -> Vec<String> {
    for line in err.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            line.starts_with("rkmcp: ")
                || line.starts_with("[MCP: ")
                || line == "[reasoning… --show-reasoning shows it]",
            "a line that is not rkmcp's own: {line:?}\nstderr:\n{err}"
        );
        for leak in LEAKS {
            assert!(!line.contains(leak), "{leak:?} in {line:?}\nstderr:\n{err}");
        }
    }
    err.lines()
        .filter(|l| l.starts_with("rkmcp: warning: ") || l.starts_with("rkmcp: error: "))
        .map(str::to_string)
        .collect()
}

/// A home folder whose data folder shares the installed model (as `scripts/setup` put it).
fn home_with_model() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data/rkmcp");
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(rkmcp_llm::store::models_dir(), data.join("models")).unwrap();
    home
}

/// `rkmcp [flags…] ask …` in `home` (config `home/rkmcp.toml`), a short answer on one thread.
fn ask(home: &Path, flags: &[&str]) -> Output {
    let mut args: Vec<&str> = flags.to_vec();
    args.extend([
        "ask",
        "--max-tokens",
        "8",
        "--threads",
        "1",
        "--ctx",
        "2048",
        "What is the current time in the Asia/Tokyo timezone?",
    ]);
    rkmcp_command(home, &args)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("RKMCP_DEPS", deps())
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run rkmcp: {e}"))
}

/// tests/servers/not_mcp.py in `mode` on a free port; killed when dropped.
struct NotMcp {
    child: Child,
    url: String,
}

impl NotMcp {
    fn start(mode: &str) -> NotMcp {
        let port = free_port();
        let child = Command::new("python3")
            .arg(repo().join("tests/servers/not_mcp.py"))
            .args([mode, &port.to_string()])
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start not_mcp.py: {e}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "not_mcp.py {mode} did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        NotMcp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for NotMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn remote(name: &str, url: &str) -> String {
    format!(
        "[[servers]]\nname = {}\nurl = {}\nconnect_timeout = \"20s\"\n",
        toml_str(name),
        toml_str(url)
    )
}

fn time_entry() -> String {
    stdio_entry(
        "time",
        &time_server().display().to_string(),
        &["--local-timezone".into(), "UTC".into()],
        "",
    )
}

/// The quick start (its real servers, the bundled detector and a guard without
/// `allowed_roots`): no warning at all — a guard that denies writes by default is the normal
/// configuration, not something to warn about on every run.
#[test]
fn the_quick_start_ask_prints_only_its_own_lines() {
    let home = home_with_model();
    let data = home.path().join("data");
    let out = Command::new(repo().join("scripts/install-plugins"))
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "install-plugins: {}", stderr(&out));
    let config = repo().join("config/quickstart.toml");
    let out = ask(home.path(), &["--config", &config.display().to_string()]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(own_lines_only(&err), Vec::<String>::new(), "{err}");
    assert!(!err.contains("allowed_roots"), "{err}");
    // The run's own lines are still there.
    assert!(err.contains("rkmcp: plugins: detector-tool-call"), "{err}");
    assert!(err.contains(" tok/s"), "{err}");
}

#[test]
fn a_server_that_cannot_start_is_one_warning_saying_what_to_check() {
    let home = home_with_model();
    write(
        home.path(),
        "rkmcp.toml",
        &stdio_entry("broken", "/nonexistent/rkmcp-test-server", &[], ""),
    );
    let out = ask(home.path(), &[]);
    let err = stderr(&out);
    assert_eq!(
        own_lines_only(&err),
        [
            "rkmcp: warning: server `broken`: cannot start `/nonexistent/rkmcp-test-server`: No such file or directory (os error 2) (is it installed and on PATH?)"
        ],
        "{err}"
    );
}

/// A web page where the MCP endpoint should be: the sentence names the server and the likely
/// causes; rmcp's own error line (`Unexpected content type: Some("text/html…")`) is not shown,
/// but the log file has it.
#[test]
fn an_html_page_instead_of_mcp_is_named_as_such() {
    let home = home_with_model();
    let web = NotMcp::start("html");
    write(home.path(), "rkmcp.toml", &remote("web", &web.url));
    let log = home.path().join("rkmcp.log");
    let out = ask(home.path(), &["--log-file", &log.display().to_string()]);
    let err = stderr(&out);
    let warnings = own_lines_only(&err);
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with("rkmcp: warning: server `web`: "),
        "{err}"
    );
    assert!(
        warnings[0].ends_with(
            "the server answered with an HTML page (text/html), not MCP — is the URL right, or is a proxy in the way?"
        ),
        "{err}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("rmcp::"),
        "library lines go to the log file: {logged}"
    );
    assert!(
        logged.contains("server `web`"),
        "and so do the notices: {logged}"
    );
}

#[test]
fn a_server_that_needs_a_sign_in_says_how_to_sign_in() {
    let home = home_with_model();
    let secure = NotMcp::start("sign-in");
    write(home.path(), "rkmcp.toml", &remote("secure", &secure.url));
    let out = ask(home.path(), &[]);
    let err = stderr(&out);
    assert_eq!(
        own_lines_only(&err),
        [
            "rkmcp: warning: server `secure`: the server needs a sign-in (scope=mcp): run `rkmcp auth login secure`"
        ],
        "{err}"
    );
}

/// A detector plugin that panics on its first chunk: one line naming the plugin, what happened
/// and what rkmcp does instead; wasmtime's and the plugin's own stderr lines stay in the log.
#[test]
fn a_plugin_fault_is_one_line_naming_the_plugin() {
    let home = home_with_model();
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(built("testplug-hostile"), plugins.join("hostile.wasm")).unwrap();
    write(
        home.path(),
        "rkmcp.toml",
        &format!(
            "{}\n[plugins]\ndirs = [{}]\ndefault_dir = false\ncache_dir = {}\n\
             [plugins.grants.hostile]\ncall_timeout_ms = 10000\n\n\
             [chat]\ntool_format = \"tool-call-json\"\ndetector = \"hostile\"\ndetector_format = \"panic\"\n",
            time_entry(),
            toml_str(&plugins.display().to_string()),
            toml_str(&shared_cache().display().to_string()),
        ),
    );
    let out = ask(home.path(), &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(own_lines_only(&err), Vec::<String>::new(), "{err}");
    let faults: Vec<&str> = err.lines().filter(|l| l.contains("`hostile`")).collect();
    assert_eq!(
        faults,
        [
            "rkmcp: detector plugin `hostile` failed (feed: plugin panicked: hostile plugin panicked on purpose (feed #1); the instance was discarded); the built-in tool-call-json detector reads this answer instead"
        ],
        "{err}"
    );
}

/// `-v` adds the libraries' lines, in words (`rkmcp: info: [rmcp] …`); the failures rkmcp
/// words itself still appear once, and only `-vv` shows tracing's own format.
#[test]
fn verbose_shows_library_lines_without_paths_or_debug_dumps() {
    let home = tempfile::tempdir().unwrap();
    let web = NotMcp::start("html");
    write(
        home.path(),
        "rkmcp.toml",
        &format!("{}{}", time_entry(), remote("web", &web.url)),
    );
    let list = |flag: &str| {
        let out = run_rkmcp(home.path(), &[flag, "tools", "list"]);
        assert!(
            stdout(&out).contains("time__get_current_time"),
            "{}",
            stderr(&out)
        );
        stderr(&out)
    };
    let err = list("-v");
    let warnings = own_lines_only(&err);
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("an HTML page"), "{err}");
    assert!(
        err.lines().any(|l| l.starts_with("rkmcp: info: [rmcp] ")),
        "-v shows rmcp's lines: {err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("rkmcp: info: server `time`: ")),
        "and rkmcp's own: {err}"
    );
    let err = list("-vv");
    assert!(
        err.contains("rmcp::"),
        "-vv is tracing's full format: {err}"
    );
    let quiet = list("--json");
    assert_eq!(
        own_lines_only(&quiet).len(),
        0,
        "--json has the failure in its document: {quiet}"
    );
}
