//! The quick start's first run (`scripts/run`): the bundled plugins are installed into the user's
//! plugin folder, and the quick start's `ask` is answered with a detector plugin reading the
//! model and an approval-guard plugin reviewing its call — visibly, on the status lines.
use std::path::Path;
use std::process::Command;

use rkmcp_tests::*;

/// Runs `scripts/install-plugins` with `data` as `XDG_DATA_HOME`; returns its stderr.
fn install_plugins(data: &Path) -> String {
    let out = Command::new(repo().join("scripts/install-plugins"))
        .env("XDG_DATA_HOME", data)
        .output()
        .unwrap_or_else(|e| panic!("cannot run scripts/install-plugins: {e}"));
    assert!(out.status.success(), "install-plugins: {}", stderr(&out));
    stderr(&out)
}

#[test]
fn installing_the_bundled_plugins_twice_copies_them_once() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let first = install_plugins(&data);
    let folder = data.join("rkmcp/plugins");
    for name in ["approval-guard-default", "detector-tool-call"] {
        assert!(folder.join(format!("{name}.wasm")).is_file(), "{first}");
        assert!(folder.join(format!("{name}.toml")).is_file(), "{first}");
    }
    assert!(!first.contains("installed nothing"), "{first}");
    let second = install_plugins(&data);
    assert!(second.contains("installed nothing"), "{second}");
    // A changed component is copied again, and only that one.
    std::fs::write(folder.join("detector-tool-call.wasm"), b"stale").unwrap();
    let third = install_plugins(&data);
    assert!(third.contains("installed detector-tool-call;"), "{third}");
}

#[test]
fn the_quick_start_ask_uses_the_installed_detector_and_guard_plugins() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    install_plugins(&data);
    // The model store stays where scripts/setup put the model.
    std::os::unix::fs::symlink(
        rkmcp_llm::store::models_dir(),
        data.join("rkmcp").join("models"),
    )
    .unwrap();
    let config = repo().join("config/quickstart.toml");
    let out = rkmcp_command(
        home.path(),
        &[
            "--config",
            &config.display().to_string(),
            "ask",
            "--max-tokens",
            "64",
            "--threads",
            "1",
            "--ctx",
            "2048",
            "What is the current time in the Asia/Tokyo timezone?",
        ],
    )
    .env("XDG_DATA_HOME", &data)
    .env("RKMCP_DEPS", deps())
    .env("NO_COLOR", "1")
    .output()
    .unwrap_or_else(|e| panic!("cannot run rkmcp: {e}"));
    let err = stderr(&out);
    assert!(out.status.success(), "stderr: {err}");
    assert!(
        err.contains("plugins: detector-tool-call (detector: reads the answers), approval-guard-default (approval guard: reviews every call)"),
        "the start line names the plugins taking part: {err}"
    );
    assert!(
        err.contains("[MCP: Calling tool 'get_current_time' on time"),
        "the detector plugin read the model's call: {err}"
    );
    assert!(
        err.contains("[MCP: call reviewed by guard approval-guard-default and allowed by"),
        "the guard reviewed the call: {err}"
    );
    assert!(
        !err.contains("detector plugin `detector-tool-call` failed"),
        "the detector plugin did not fall back: {err}"
    );
    assert!(stdout(&out).contains("+09:00"), "answer: {}", stdout(&out));
    // The quick start is a normal configuration: nothing in it is worth a warning. (The
    // guard's manifest default, `allowed_roots = []`, once printed one on every call.)
    assert!(
        !err.contains("rkmcp: warning") && !err.contains("allowed_roots"),
        "no warnings: {err}"
    );
}
