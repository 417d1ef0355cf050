//! `rkmcp plugins new KIND NAME --lang js`: each JavaScript project builds with the command it
//! prints (componentize-js from scripts/setup.d/35-js-plugins.sh), passes `rkmcp plugins
//! check` and does what its comments say in the real host; a transport is refused.
//! The helpers are plugin_scaffold.rs's, so both languages are driven the same way.
use std::path::Path;

use rkmcp_plugin_host::{
    Decision, DetectorEvent, PluginHost, PluginsConfig, ProposedCall, SUPPORTED_VERSIONS,
    ToolAnnotations, ToolCall,
};

use super::plugin_scaffold::{check, failed, ok, rkmcp_in, run_shell, scaffold};
use rkmcp_tests::deps;

#[test]
fn js_scaffolds_build_pass_check_and_work() {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("built");
    std::fs::create_dir(&plugins).unwrap();
    let cjs = deps().join("js-plugins/node_modules/.bin/componentize-js");
    assert!(
        cjs.is_file(),
        "{} missing: run scripts/setup",
        cjs.display()
    );
    for (kind, world) in [
        ("detector", "detector"),
        ("converter", "schema-converter"),
        ("guard", "approval-guard"),
    ] {
        let name = format!("js-{kind}");
        let dir = home.path().join(&name);
        let build = scaffold(home.path(), kind, &name, &dir, &["--lang", "js"]);
        assert_eq!(build, "./build.sh");
        run_shell(&dir, &build, &[("COMPONENTIZE_JS", cjs.clone())]);
        let wasm = dir.join(format!("{name}.wasm"));
        let checked = check(home.path(), &wasm, &name);
        assert!(checked.trim_end().ends_with("ok"), "{checked}");
        assert!(checked.contains(&format!("name:      {name}")), "{checked}");
        assert!(
            checked.contains(&format!("kind:      {world}")),
            "{checked}"
        );
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
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(scaffolds_behave(&plugins));
}

/// The same behaviour plugin_scaffold.rs asks of the Rust detector and converter templates; the
/// guard is the bundled guard-js under the project's name.
async fn scaffolds_behave(plugins: &Path) {
    // The compile cache `plugins check` filled: each component is compiled once.
    let cache = plugins
        .parent()
        .unwrap_or(plugins)
        .join("cache/rkmcp/components");
    // Generous deadlines, as plugin_scaffold.rs gives the Rust and Python templates: what is
    // tested is behaviour, and on a loaded CI machine the detector's first call went past its
    // 50 ms (it takes ~0.5 ms here).
    let mut text = format!("dirs = [{plugins:?}]\ndefault_dir = false\ncache_dir = {cache:?}\n");
    for name in ["js-detector", "js-converter", "js-guard", "js-guard-broken"] {
        text.push_str(&format!("[grants.{name}]\ncall_timeout_ms = 30000\n"));
    }
    text.push_str(
        "[grants.js-guard.config]\ndeny = [\"*delete*\"]\n\
         [grants.js-guard-broken.config]\ndefault = \"sometimes\"\n",
    );
    std::fs::copy(
        plugins.join("js-guard.wasm"),
        plugins.join("js-guard-broken.wasm"),
    )
    .unwrap();
    let config: PluginsConfig = toml::from_str(&text).unwrap();
    let host = PluginHost::new(config).unwrap();

    let tools =
        r#"[{"name":"echo","description":"Echo a message","inputSchema":{"type":"object"}}]"#;
    let converter = host.schema_converter("js-converter").unwrap();
    let conv = converter.convert(tools).await.unwrap();
    assert!(
        conv.system_prompt
            .contains("- echo: Echo a message (arguments: {\"type\":\"object\"})")
            && conv.system_prompt.contains("CALL name"),
        "{}",
        conv.system_prompt
    );
    assert_eq!(conv.grammar, None);
    // A thrown string is the WIT result's error.
    let err = converter.convert("{oops").await.unwrap_err().to_string();
    assert!(err.contains("tools are not a JSON array"), "{err}");

    let mut s = host
        .detector("js-detector")
        .unwrap()
        .start_session("")
        .await
        .unwrap();
    let mut events = Vec::new();
    for chunk in [
        "Sure.\nCA",
        "LL echo {\"mes",
        "sage\": \"hi\"}\n",
        "CALL x {bad\n",
        "Done",
    ] {
        events.extend(s.feed(chunk).await.unwrap());
    }
    events.extend(s.finish().await.unwrap());
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[0], DetectorEvent::Text("Sure.\n".into()));
    assert_eq!(
        events[1],
        DetectorEvent::ToolCall(ToolCall {
            id: "call-1".into(),
            name: "echo".into(),
            arguments: serde_json::json!({"message": "hi"}),
        })
    );
    assert!(
        matches!(&events[2], DetectorEvent::Malformed { raw, error }
            if raw == "CALL x {bad\n" && error.contains("not JSON")),
        "{:?}",
        events[2]
    );
    assert_eq!(events[3], DetectorEvent::Text("Done".into()));

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
    let guard = host.approval_guard("js-guard").unwrap();
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
    // The template speaks with the project's name, not guard-js's.
    let broken = host.approval_guard("js-guard-broken").unwrap();
    match broken.review(&call("read_file", Some(true))).await.unwrap() {
        Decision::Deny(reason) => assert!(reason.starts_with("js-guard: "), "{reason}"),
        d => panic!("a broken config must deny: {d:?}"),
    }
}

#[test]
fn js_transport_is_refused_with_the_reason() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let err = failed(
        &rkmcp_in(h, &["plugins", "new", "transport", "t", "--lang", "js"]),
        "js transport",
    );
    assert!(
        err.contains("no socket API") && err.contains("--lang rust"),
        "{err}"
    );
    assert!(!h.join("t").exists(), "nothing created on error");
    // `--lang js` is listed among the languages.
    let help = ok(&rkmcp_in(h, &["plugins", "new", "--help"]), "new --help");
    assert!(help.contains("--lang js"), "{help}");
}
