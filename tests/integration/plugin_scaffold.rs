//! `rkmcp plugins new|install|grant`: generated projects build with the command they print and
//! pass `rkmcp plugins check` in the real host; an installed plugin gets exactly what `grant`
//! wrote into the user's config, whose comments survive.
//!
//! The Rust scaffolds build in one target dir shared by all four kinds and kept between runs
//! (target/plugin-scaffold): the SDK and wit-bindgen compile once, each project in seconds. It
//! is not the test binary's own target dir, because cargo holds that one's lock while tests run.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use rkmcp_plugin_host::{
    Decision, DetectorEvent, PluginHost, PluginsConfig, ProposedCall, SUPPORTED_VERSIONS,
    ToolAnnotations, ToolCall,
};

use rkmcp_tests::plugin_support::{built, echo_server};
use rkmcp_tests::*;

pub(super) fn rkmcp_in(home: &Path, args: &[&str]) -> Output {
    output(rkmcp_in_command(home, args))
}

/// `rkmcp ARGS` isolated in `home` (data too), with no input.
fn rkmcp_in_command(home: &Path, args: &[&str]) -> Command {
    let mut cmd = rkmcp_command(home, args);
    cmd.env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::null());
    cmd
}

fn output(mut cmd: Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run rkmcp: {e}"))
}

pub(super) fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed\nstdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    stdout(out)
}

pub(super) fn failed(out: &Output, what: &str) -> String {
    assert!(
        !out.status.success(),
        "{what} should fail\nstdout: {}",
        stdout(out)
    );
    stderr(out)
}

/// `plugins check` with a generous call deadline: CPython's first call imports modules.
pub(super) fn check(home: &Path, wasm: &Path, name: &str) -> String {
    let config = write(
        home,
        "check.toml",
        &format!("[plugins.grants.{name}]\ncall_timeout_ms = 30000\n"),
    );
    // Run as a plugin author does, in the plugin's folder with a bare file name (which was once
    // refused: "cannot check : No such file", the empty path being its folder).
    let file = wasm.file_name().unwrap().to_str().unwrap();
    let mut cmd = rkmcp_in_command(
        home,
        &[
            "--config",
            &config.display().to_string(),
            "plugins",
            "check",
            file,
        ],
    );
    cmd.current_dir(wasm.parent().unwrap());
    let out = output(cmd);
    ok(&out, &format!("plugins check {}", wasm.display()))
}

pub(super) fn run_shell(dir: &Path, command: &str, envs: &[(&str, PathBuf)]) {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(command).current_dir(dir);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command}: {e}"));
    assert!(
        out.status.success(),
        "`{command}` in {} failed: {}",
        dir.display(),
        stderr(&out)
    );
}

/// The printed build command, as a user would copy it.
pub(super) fn build_command(new_out: &str) -> String {
    let mut lines = new_out.lines();
    lines
        .find(|l| l.starts_with("build it with"))
        .and_then(|_| lines.next())
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| panic!("no build command printed: {new_out}"))
}

/// `plugins new KIND NAME --dir DIR`; returns the build command it printed.
pub(super) fn scaffold(home: &Path, kind: &str, name: &str, dir: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "plugins",
        "new",
        kind,
        name,
        "--dir",
        dir.to_str().expect("utf-8 temp path"),
    ];
    args.extend_from_slice(extra);
    let printed = ok(&rkmcp_in(home, &args), &format!("plugins new {kind}"));
    let build = build_command(&printed);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        readme.contains(&build),
        "the README says how to build: {readme}"
    );
    build
}

#[test]
fn rust_scaffolds_of_every_kind_build_pass_check_and_work() {
    let home = tempfile::tempdir().unwrap();
    let target = repo().join("target").join("plugin-scaffold");
    let plugins = home.path().join("built");
    std::fs::create_dir(&plugins).unwrap();
    for kind in ["detector", "converter", "guard", "transport"] {
        let name = format!("my-{kind}");
        let dir = home.path().join(&name);
        let build = scaffold(home.path(), kind, &name, &dir, &[]);
        // The printed command as it is, offline (CI has no network; the project carries
        // rkmcp's Cargo.lock, so the registry cache has every crate it needs).
        run_shell(
            &dir,
            &build.replace("cargo build", "cargo build --offline"),
            &[("CARGO_TARGET_DIR", target.clone())],
        );
        let wasm = dir.join(format!("{name}.wasm"));
        let checked = check(home.path(), &wasm, &name);
        assert!(checked.trim_end().ends_with("ok"), "{checked}");
        assert!(checked.contains(&format!("name:      {name}")), "{checked}");
        assert!(
            checked.contains(&format!(
                "contract:  rkmcp:plugin@{}",
                SUPPORTED_VERSIONS[0]
            )),
            "a new plugin uses the newest contract: {checked}"
        );
        std::fs::copy(&wasm, plugins.join(format!("{name}.wasm"))).unwrap();
        std::fs::copy(
            dir.join(format!("{name}.toml")),
            plugins.join(format!("{name}.toml")),
        )
        .unwrap();
    }
    // `plugins check` only smoke-calls them: here each template does what its comments say.
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(scaffolds_behave(&plugins, |port| {
            format!("address = \"127.0.0.1:{port}\"")
        }));
}

/// Drives the four built scaffolds (`my-KIND`) in `plugins` through the host; `transport_config`
/// is the transport's config for the echo server's port (the Rust template takes an address, the
/// Python one the bundled transport's url). The Python guard has no rules by default: it gets
/// one that makes it answer as the Rust template does.
async fn scaffolds_behave(plugins: &Path, transport_config: impl Fn(u16) -> String) {
    let (port, server) = echo_server();
    // The compile cache `plugins check` filled (rkmcp_command's XDG_CACHE_HOME): each component
    // is compiled once, not again here (a Python one takes cranelift tens of seconds).
    let cache = plugins
        .parent()
        .unwrap_or(plugins)
        .join("cache/rkmcp/components");
    let text = format!(
        "dirs = [{plugins:?}]\ndefault_dir = false\ncache_dir = {cache:?}\n\
         [grants.my-transport]\ncall_timeout_ms = 30000\nnetwork = [\"127.0.0.1:{port}\"]\nconfig = {{ {} }}\n\
         [grants.my-guard]\ncall_timeout_ms = 30000\nconfig = {{ deny = \"*delete*\" }}\n\
         [grants.my-detector]\ncall_timeout_ms = 30000\n[grants.my-converter]\ncall_timeout_ms = 30000\n",
        transport_config(port)
    );
    let config: PluginsConfig = toml::from_str(&text).unwrap();
    let host = PluginHost::new(config).unwrap();

    // The converter teaches the format the detector reads.
    let tools =
        r#"[{"name":"echo","description":"Echo a message","inputSchema":{"type":"object"}}]"#;
    let conv = host
        .schema_converter("my-converter")
        .unwrap()
        .convert(tools)
        .await
        .unwrap();
    assert!(
        conv.system_prompt.contains("- echo: Echo a message")
            && conv.system_prompt.contains("CALL name"),
        "{}",
        conv.system_prompt
    );

    // Chunks split the call line anywhere; text before it stays text.
    let mut s = host
        .detector("my-detector")
        .unwrap()
        .start_session("")
        .await
        .unwrap();
    let mut events = Vec::new();
    for chunk in ["Sure.\nCA", "LL echo {\"mes", "sage\": \"hi\"}\n", "Done"] {
        events.extend(s.feed(chunk).await.unwrap());
    }
    events.extend(s.finish().await.unwrap());
    assert_eq!(
        events,
        vec![
            DetectorEvent::Text("Sure.\n".into()),
            DetectorEvent::ToolCall(ToolCall {
                id: "call-1".into(),
                name: "echo".into(),
                arguments: serde_json::json!({"message": "hi"}),
            }),
            DetectorEvent::Text("Done".into()),
        ]
    );

    let guard = host.approval_guard("my-guard").unwrap();
    let call = |tool: &str, read_only: Option<bool>| ProposedCall {
        server: "fs".into(),
        tool: tool.into(),
        arguments: serde_json::json!({"path": "a"}),
        annotations: ToolAnnotations {
            read_only,
            ..Default::default()
        },
        interactive: true,
    };
    assert_eq!(
        guard.review(&call("read_file", Some(true))).await.unwrap(),
        Decision::Allow
    );
    assert!(matches!(
        guard
            .review(&call("delete_file", Some(true)))
            .await
            .unwrap(),
        Decision::Deny(_)
    ));
    assert!(matches!(
        guard.review(&call("write_file", None)).await.unwrap(),
        Decision::Ask(_)
    ));

    // A real socket, reached through the grant only.
    let conn = host
        .transport("my-transport")
        .unwrap()
        .connect()
        .await
        .unwrap();
    assert_eq!(conn.receive(Duration::from_millis(20)).await.unwrap(), None);
    for id in 1..4 {
        conn.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await
            .unwrap();
        let reply = conn
            .receive(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("a reply");
        let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(v["id"], id, "{reply}");
    }
    conn.close().await.unwrap();
    server.join().unwrap();
}

/// Every kind in Python: the printed command builds it with componentize-py, `plugins check`
/// passes, and the four behave as the Rust templates do (the converter teaches the line format
/// the detector reads; the transport is the bundled transport-tcp-python).
#[test]
fn python_scaffolds_of_every_kind_build_pass_check_and_work() {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("built");
    std::fs::create_dir(&plugins).unwrap();
    let cpy = deps().join("venv-plugins/bin/componentize-py");
    assert!(
        cpy.is_file(),
        "{} missing: run scripts/setup",
        cpy.display()
    );
    for (kind, world) in [
        ("detector", "detector"),
        ("converter", "schema-converter"),
        ("guard", "approval-guard"),
        ("transport", "transport"),
    ] {
        let name = format!("my-{kind}");
        let dir = home.path().join(&name);
        let build = scaffold(home.path(), kind, &name, &dir, &["--lang", "python"]);
        assert_eq!(build, "./build.sh");
        run_shell(&dir, &build, &[("COMPONENTIZE_PY", cpy.clone())]);
        let wasm = dir.join(format!("{name}.wasm"));
        let checked = check(home.path(), &wasm, &name);
        assert!(
            checked.contains(&format!("kind:      {world}")),
            "{checked}"
        );
        assert!(checked.trim_end().ends_with("ok"), "{checked}");
        std::fs::copy(&wasm, plugins.join(format!("{name}.wasm"))).unwrap();
        std::fs::copy(
            dir.join(format!("{name}.toml")),
            plugins.join(format!("{name}.toml")),
        )
        .unwrap();
    }
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(scaffolds_behave(&plugins, |port| {
            format!("url = \"tcp://127.0.0.1:{port}\"")
        }));
}

#[test]
fn new_refuses_bad_requests_and_never_overwrites() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let err = failed(
        &rkmcp_in(h, &["plugins", "new", "painter", "x"]),
        "bad kind",
    );
    assert!(err.contains("painter") && err.contains("detector"), "{err}");
    let err = failed(
        &rkmcp_in(h, &["plugins", "new", "guard", "x", "--lang", "cobol"]),
        "bad lang",
    );
    assert!(err.contains("cobol") && err.contains("python"), "{err}");
    let err = failed(
        &rkmcp_in(h, &["plugins", "new", "guard", "Bad_Name"]),
        "name",
    );
    assert!(err.contains("lowercase"), "{err}");
    let err = failed(
        &rkmcp_in(
            h,
            &["plugins", "new", "guard", "g", "--sdk", "/nonexistent/sdk"],
        ),
        "missing sdk",
    );
    assert!(err.contains("/nonexistent/sdk"), "{err}");
    assert!(!h.join("g").exists(), "nothing created on error");
    std::fs::create_dir(h.join("mine")).unwrap();
    std::fs::write(h.join("mine/keep.txt"), "mine").unwrap();
    let err = failed(
        &rkmcp_in(h, &["plugins", "new", "guard", "mine"]),
        "existing dir",
    );
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(
        std::fs::read_to_string(h.join("mine/keep.txt")).unwrap(),
        "mine"
    );
    assert!(!h.join("mine/Cargo.toml").exists());
}

const USER_CONFIG: &str =
    "# my rkmcp settings\n\n[plugins]\n# slow but fine\npooling = false   # keep this comment\n";

#[test]
fn install_then_grant_round_trip_keeps_comments_and_the_grant_is_used() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let name = "transport-websocket";
    let src = h.join("download");
    std::fs::create_dir(&src).unwrap();
    std::fs::copy(built(name), src.join(format!("{name}.wasm"))).unwrap();
    std::fs::copy(
        repo().join(format!("plugins/{name}/{name}.toml")),
        src.join(format!("{name}.toml")),
    )
    .unwrap();
    let config = write(h, "config/rkmcp/config.toml", USER_CONFIG);
    let wasm = src.join(format!("{name}.wasm")).display().to_string();

    let out = ok(&rkmcp_in(h, &["plugins", "install", &wasm]), "install");
    let folder = h.join("data/rkmcp/plugins");
    assert!(folder.join(format!("{name}.wasm")).is_file(), "{out}");
    assert!(folder.join(format!("{name}.toml")).is_file(), "{out}");
    assert!(
        out.contains("requests:  files: none; network: 127.0.0.1:8765; env: none"),
        "{out}"
    );
    assert!(out.contains("granted:   nothing"), "{out}");
    assert!(
        out.contains("[plugins.grants.transport-websocket]\nnetwork = [\"127.0.0.1:8765\"]"),
        "{out}"
    );

    let err = failed(
        &rkmcp_in(h, &["plugins", "install", &wasm]),
        "second install",
    );
    assert!(
        err.contains("already installed") && err.contains("--replace"),
        "{err}"
    );
    ok(
        &rkmcp_in(h, &["plugins", "install", &wasm, "--replace"]),
        "install --replace",
    );
    let junk = write(h, "junk.wasm", "not a component");
    let err = failed(
        &rkmcp_in(h, &["plugins", "install", &junk.display().to_string()]),
        "install junk",
    );
    assert!(err.contains("junk.wasm cannot be installed"), "{err}");
    assert!(!folder.join("junk.wasm").exists());

    let grant = [
        "plugins",
        "grant",
        name,
        "--network",
        "127.0.0.1:8765",
        "--env",
        "LANG",
    ];
    let err = failed(&rkmcp_in(h, &grant), "grant without a terminal");
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), USER_CONFIG);

    let mut yes = grant.to_vec();
    yes.push("--yes");
    ok(&rkmcp_in(h, &yes), "grant --yes");
    let edited = std::fs::read_to_string(&config).unwrap();
    assert!(
        edited.starts_with(USER_CONFIG),
        "comments and layout kept: {edited}"
    );
    assert!(
        edited.contains(
            "[plugins.grants.transport-websocket]\nnetwork = [\"127.0.0.1:8765\"]\nenv = [\"LANG\"]"
        ),
        "{edited}"
    );
    // Granting again adds nothing twice.
    ok(&rkmcp_in(h, &yes), "grant --yes again");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), edited);

    // The next load of the installed plugin has the grant.
    let installed = folder.join(format!("{name}.wasm")).display().to_string();
    let info = ok(&rkmcp_in(h, &["plugins", "inspect", &installed]), "inspect");
    assert!(
        info.contains("granted:   network: 127.0.0.1:8765; env: LANG"),
        "{info}"
    );

    // Folders: the real path, under the guest path asked for; rkmcp's own config folder (it
    // holds secrets) is refused before anything is written; a bad network entry is named.
    std::fs::create_dir(h.join("notes")).unwrap();
    let notes = format!("{}:/notes", h.join("notes").display());
    ok(
        &rkmcp_in(h, &["plugins", "grant", name, "--read", &notes, "--yes"]),
        "grant --read",
    );
    let with_files = std::fs::read_to_string(&config).unwrap();
    let real_notes = std::fs::canonicalize(h.join("notes")).unwrap();
    assert!(
        with_files.contains(&format!(
            "files = [{{ host = \"{}\", guest = \"/notes\", mode = \"ro\" }}]",
            real_notes.display()
        )),
        "{with_files}"
    );
    let secrets = h.join("config/rkmcp").display().to_string();
    let err = failed(
        &rkmcp_in(h, &["plugins", "grant", name, "--read", &secrets, "--yes"]),
        "grant of the config folder",
    );
    assert!(err.contains("rkmcp refuses that grant"), "{err}");
    let err = failed(
        &rkmcp_in(h, &["plugins", "grant", name, "--network", "nope", "--yes"]),
        "bad network entry",
    );
    assert!(err.contains("--network nope"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), with_files);

    // A config that cannot be written: a clear error, nothing half-written.
    let blocker = write(h, "afile", "x");
    let bad = blocker.join("config.toml").display().to_string();
    let err = failed(
        &rkmcp_in(
            h,
            &[
                "--config",
                &bad,
                "plugins",
                "grant",
                name,
                "--network",
                "1.2.3.4:5",
                "--yes",
            ],
        ),
        "unwritable config",
    );
    assert!(
        err.contains("cannot create") && err.contains("--config"),
        "{err}"
    );
}
