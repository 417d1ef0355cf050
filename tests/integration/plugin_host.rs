//! The plugin host as rkmcp uses it: discovery, every plugin kind, contract-version refusal,
//! quarantine and the compile cache. Components come from tests/plugins/ (scripts/build-plugins).
// The plugin handles are not `Debug`, so `expect_err` is not available.
#![allow(clippy::err_expect)]
use std::net::TcpListener;
use std::time::Duration;

use rkmcp_plugin_host::{
    CacheOutcome, ConnectionError, Decision, DetectorEvent, PluginError, PluginHost, PluginKind,
    PluginStatus, ProposedCall, ToolAnnotations, ToolCall,
};

use rkmcp_tests::plugin_support as support;
use support::Fixture;

fn all_plugins() -> Fixture {
    Fixture::new(&[
        ("testplug-detector", "healthy"),
        ("testplug-hostile", "hostile"),
        ("testplug-guard", "guard"),
        ("testplug-converter", "converter"),
        ("testplug-transport", "tcp-transport"),
        ("testplug-future", "future"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_reads_kinds_manifests_and_grants() {
    let f = all_plugins();
    std::fs::write(
        f.plugins.path().join("healthy.toml"),
        "description = \"Hermes detector\"\n[requests]\nnetwork = [\"example.com:443\"]\n",
    )
    .unwrap();
    std::fs::write(f.plugins.path().join("not-a-plugin.wasm"), b"\0asm garbage").unwrap();
    let host = f.host("[grants.guard]\nenv = [\"HOME\"]\n[grants.converter]\nenabled = false");
    let infos = host.discover();
    let by = |n: &str| {
        infos
            .iter()
            .find(|i| i.name == n)
            .unwrap_or_else(|| panic!("{n} missing: {infos:?}"))
    };
    assert_eq!(by("healthy").kind, Some(PluginKind::Detector));
    assert_eq!(by("healthy").contract_version.as_deref(), Some("0.1.0"));
    let manifest = by("healthy").manifest.clone().unwrap();
    assert_eq!(manifest.description.as_deref(), Some("Hermes detector"));
    // A manifest only requests: nothing is granted without the user's config.
    assert_eq!(manifest.requests.network, vec!["example.com:443"]);
    assert!(by("healthy").grants.granted("network").is_empty());
    assert_eq!(by("guard").kind, Some(PluginKind::ApprovalGuard));
    assert_eq!(by("guard").grants.granted("env"), vec!["HOME"]);
    assert_eq!(by("converter").status, PluginStatus::Disabled);
    assert_eq!(by("converter").kind, Some(PluginKind::SchemaConverter));
    assert_eq!(by("tcp-transport").kind, Some(PluginKind::Transport));
    assert_eq!(by("hostile").status, PluginStatus::Ready);
    match &by("not-a-plugin").status {
        PluginStatus::Error(e) => assert!(e.contains("not-a-plugin.wasm"), "{e}"),
        other => panic!("{other:?}"),
    }
    let e = host.schema_converter("converter").err().expect("disabled");
    assert!(e.to_string().contains("disabled"), "{e}");
    let e = host.detector("nope").err().expect("missing");
    assert!(e.to_string().contains("nope.wasm"), "{e}");
    let e = host.detector("guard").err().expect("wrong kind");
    assert!(e.to_string().contains("approval-guard"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_contract_version_is_refused_naming_supported_versions() {
    let f = all_plugins();
    let host = f.host("");
    let info = host
        .discover()
        .into_iter()
        .find(|i| i.name == "future")
        .unwrap();
    let PluginStatus::Error(msg) = info.status else {
        panic!("{:?}", info.status)
    };
    assert!(
        msg.contains("rkmcp:plugin@9.0.0")
            && msg.contains("rkmcp:plugin@0.2.0, @0.1.0")
            && msg.contains("future.wasm"),
        "{msg}"
    );
    let err = host
        .inspect(&f.plugins.path().join("future.wasm"))
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("supports only rkmcp:plugin@0.2.0, @0.1.0"),
        "{err}"
    );
    let e = host.detector("future").err().expect("refused");
    assert!(e.to_string().contains("9.0.0"), "{e}");
    // The host keeps serving the others.
    let mut s = host
        .detector("healthy")
        .unwrap()
        .start_session("")
        .await
        .unwrap();
    assert_eq!(
        s.feed("hi").await.unwrap(),
        vec![DetectorEvent::Text("hi".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_and_check() {
    let f = all_plugins();
    let host = f.host("");
    let info = host
        .inspect(&f.plugins.path().join("healthy.wasm"))
        .unwrap();
    assert!(
        info.exports
            .iter()
            .any(|e| e == "rkmcp:plugin/detector@0.1.0"),
        "{:?}",
        info.exports
    );
    // It uses neither `log` nor `config-get`, so only the shared types are imported.
    assert!(
        info.imports.iter().any(|e| e == "rkmcp:plugin/types@0.1.0"),
        "{:?}",
        info.imports
    );
    let hostile = host
        .inspect(&f.plugins.path().join("hostile.wasm"))
        .unwrap();
    assert!(
        hostile
            .imports
            .iter()
            .any(|e| e == "rkmcp:plugin/host@0.1.0"),
        "{:?}",
        hostile.imports
    );
    for name in ["healthy", "guard", "converter", "tcp-transport"] {
        let report = host
            .check(&f.plugins.path().join(format!("{name}.wasm")))
            .await
            .unwrap();
        assert_eq!(report.info.status, PluginStatus::Ready, "{name}");
        assert!(!report.smoke.is_empty());
    }
    let report = host
        .check(&f.plugins.path().join("guard.wasm"))
        .await
        .unwrap();
    assert!(report.smoke.contains("Allow"), "{}", report.smoke);
    assert!(
        host.check(&f.plugins.path().join("future.wasm"))
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detector_events_and_formats() {
    let f = all_plugins();
    let host = f.host("");
    let d = host.detector("healthy").unwrap();
    let e = d
        .start_session("mistral")
        .await
        .err()
        .expect("unknown format");
    assert!(
        matches!(e, PluginError::Refused { .. }) && e.to_string().contains("mistral"),
        "{e}"
    );
    let mut s = d.start_session("hermes").await.unwrap();
    let text = "A<tool_call>{\"name\":\"x\",\"arguments\":{\"k\":[1,2]}}</tool_call>B<tool_call>{bad}</tool_call><tool_call>{\"name\":\"y\"}";
    let mut events = Vec::new();
    // Feed one character at a time: the marker is split everywhere.
    for ch in text.chars() {
        events.extend(s.feed(&ch.to_string()).await.unwrap());
    }
    events.extend(s.finish().await.unwrap());
    let joined_text: String = events
        .iter()
        .filter_map(|e| {
            if let DetectorEvent::Text(t) = e {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(joined_text, "AB");
    let calls: Vec<&ToolCall> = events
        .iter()
        .filter_map(|e| {
            if let DetectorEvent::ToolCall(c) = e {
                Some(c)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "x");
    assert_eq!(calls[0].arguments, serde_json::json!({"k": [1, 2]}));
    let malformed = events
        .iter()
        .filter(|e| matches!(e, DetectorEvent::Malformed { .. }))
        .count();
    assert_eq!(malformed, 2, "{events:?}");
    let after = s.feed("more").await.err().expect("session over");
    assert!(after.to_string().contains("over"), "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_guard_decisions() {
    let f = all_plugins();
    let host = f.host("[grants.guard.config]\nallow = \"always_ok, other\"");
    let g = host.approval_guard("guard").unwrap();
    let call = |tool: &str, ann: ToolAnnotations, interactive: bool| ProposedCall {
        server: "fs".into(),
        tool: tool.into(),
        arguments: serde_json::json!({"path": "/tmp"}),
        annotations: ann,
        interactive,
    };
    let ro = ToolAnnotations {
        read_only: Some(true),
        ..Default::default()
    };
    let destructive = ToolAnnotations {
        destructive: Some(true),
        ..Default::default()
    };
    assert_eq!(
        g.review(&call("read", ro, false)).await.unwrap(),
        Decision::Allow
    );
    match g
        .review(&call("rm", destructive.clone(), true))
        .await
        .unwrap()
    {
        Decision::Ask(q) => assert!(q.contains("fs/rm"), "{q}"),
        other => panic!("{other:?}"),
    }
    match g.review(&call("rm", destructive, false)).await.unwrap() {
        Decision::Deny(r) => assert!(r.contains("destructive"), "{r}"),
        other => panic!("{other:?}"),
    }
    // `ask` without a human becomes a denial in the host.
    match g
        .review(&call("write", ToolAnnotations::default(), false))
        .await
        .unwrap()
    {
        Decision::Deny(r) => assert!(r.contains("not marked read-only"), "{r}"),
        other => panic!("{other:?}"),
    }
    // Config values from the user's grant reach the plugin through config-get.
    assert_eq!(
        g.review(&call("always_ok", ToolAnnotations::default(), false))
            .await
            .unwrap(),
        Decision::Allow
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_converter_convert_and_format_result() {
    let f = all_plugins();
    let host = f.host("");
    let c = host.schema_converter("converter").unwrap();
    let tools = r#"[{"name":"add","description":"Add numbers","inputSchema":{"type":"object"}},{"name":"echo"}]"#;
    let conv = c.convert(tools).await.unwrap();
    assert!(
        conv.system_prompt.contains("- add: Add numbers"),
        "{}",
        conv.system_prompt
    );
    assert!(
        conv.grammar.as_deref().unwrap().contains("\\\"add\\\""),
        "{:?}",
        conv.grammar
    );
    let bad = c.convert("{}").await.err().expect("not an array");
    assert!(
        matches!(bad, PluginError::Refused { .. }) && bad.to_string().contains("array"),
        "{bad}"
    );
    let call = ToolCall {
        id: "call_1".into(),
        name: "add".into(),
        arguments: serde_json::json!({"a": 1}),
    };
    let text = c
        .format_result(&call, r#"{"content":[{"type":"text","text":"3"}]}"#)
        .await
        .unwrap();
    assert!(
        text.starts_with("<tool_response>") && text.contains("\"call_1\""),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_round_trip_through_granted_socket() {
    let f = all_plugins();
    let (port, server) = support::echo_server();
    let host = f.host(&format!(
        "[grants.tcp-transport]\nnetwork = [\"127.0.0.1:{port}\"]\nconfig = {{ addr = \"127.0.0.1:{port}\" }}"
    ));
    let t = host.transport("tcp-transport").unwrap();
    let conn = std::sync::Arc::new(t.connect().await.unwrap());
    // Nothing arrives before we send: receive times out with None.
    assert_eq!(conn.receive(Duration::from_millis(30)).await.unwrap(), None);
    // A receiver waiting does not block a sender.
    let rx = {
        let conn = conn.clone();
        tokio::spawn(async move { conn.receive(Duration::from_secs(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    conn.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1}}"#)
        .await
        .unwrap();
    let reply = rx.await.unwrap().unwrap().expect("a reply");
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["echo"]["n"], 1);
    for id in 2..20 {
        conn.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"m","params":{{}}}}"#
        ))
        .await
        .unwrap();
    }
    for id in 2..20 {
        let reply = conn.receive(Duration::from_secs(5)).await.unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(v["id"], id);
    }
    conn.close().await.unwrap();
    assert!(matches!(
        conn.send("{}").await,
        Err(ConnectionError::Closed { .. })
    ));
    server.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_without_network_grant_cannot_connect() {
    let f = all_plugins();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let host = f.host(&format!(
        "[grants.tcp-transport]\nconfig = {{ addr = \"127.0.0.1:{port}\" }}"
    ));
    let err = host
        .transport("tcp-transport")
        .unwrap()
        .connect()
        .await
        .err()
        .expect("denied");
    assert!(matches!(err, ConnectionError::Io { .. }), "{err}");
    let missing = f.host("");
    let err = missing
        .transport("tcp-transport")
        .unwrap()
        .connect()
        .await
        .err()
        .expect("no config");
    assert!(
        matches!(err, ConnectionError::Config { .. }) && err.to_string().contains("addr"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_faults_quarantine_the_plugin() {
    let f = all_plugins();
    let host = f.host(
        "quarantine_after = 3\nquarantine_window_s = 600\n[grants.hostile]\ncall_timeout_ms = 5000",
    );
    let d = host.detector("hostile").unwrap();
    for i in 1..=3 {
        let mut s = d.start_session("panic").await.unwrap();
        let e = s.feed("x").await.err().expect("panics");
        assert_eq!(
            matches!(
                e,
                PluginError::Fault {
                    quarantined: true,
                    ..
                }
            ),
            i == 3,
            "{e}"
        );
        if i == 3 {
            assert!(e.to_string().contains("quarantined"), "{e}");
        }
    }
    let e = d.start_session("echo").await.err().expect("quarantined");
    assert!(matches!(e, PluginError::Quarantined { .. }), "{e}");
    assert!(host.detector("hostile").is_err());
    let info = host
        .discover()
        .into_iter()
        .find(|i| i.name == "hostile")
        .unwrap();
    assert!(
        matches!(info.status, PluginStatus::Quarantined(_)),
        "{:?}",
        info.status
    );
    assert_eq!(info.faults, 3);
    assert_eq!(host.quarantined().len(), 1);
    // The healthy plugin is unaffected.
    let mut s = host
        .detector("healthy")
        .unwrap()
        .start_session("")
        .await
        .unwrap();
    assert_eq!(
        s.feed("ok").await.unwrap(),
        vec![DetectorEvent::Text("ok".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_recycles_the_instance_and_the_next_call_works() {
    let f = all_plugins();
    let host = f.host("[grants.hostile]\ncall_timeout_ms = 5000");
    let c = host.approval_guard("guard").unwrap();
    let ro = ProposedCall {
        server: "s".into(),
        tool: "t".into(),
        arguments: serde_json::json!({}),
        annotations: ToolAnnotations {
            read_only: Some(true),
            ..Default::default()
        },
        interactive: false,
    };
    assert_eq!(c.review(&ro).await.unwrap(), Decision::Allow);
    let d = host.detector("hostile").unwrap();
    let mut s = d.start_session("panic").await.unwrap();
    assert!(s.feed("").await.is_err());
    let mut s = d.start_session("echo").await.unwrap();
    assert_eq!(
        s.feed("again").await.unwrap(),
        vec![DetectorEvent::Text("again".into())]
    );
    assert_eq!(c.review(&ro).await.unwrap(), Decision::Allow);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_config_and_log_imports() {
    let f = all_plugins();
    std::fs::write(
        f.plugins.path().join("hostile.toml"),
        "[config]\ngreeting = \"from manifest\"\nlevel = 1\n",
    )
    .unwrap();
    let host =
        f.host("[grants.hostile]\ncall_timeout_ms = 5000\n[grants.hostile.config]\nlevel = 7");
    let mut s = host
        .detector("hostile")
        .unwrap()
        .start_session("config")
        .await
        .unwrap();
    assert_eq!(
        s.feed("greeting").await.unwrap(),
        vec![DetectorEvent::Text("ok:from manifest".into())]
    );
    assert_eq!(
        s.feed("level").await.unwrap(),
        vec![DetectorEvent::Text("ok:7".into())]
    );
    assert_eq!(
        s.feed("missing").await.unwrap(),
        vec![DetectorEvent::Text("err:unset".into())]
    );
    let mut s = host
        .detector("hostile")
        .unwrap()
        .start_session("log")
        .await
        .unwrap();
    assert_eq!(s.feed("hello from the plugin").await.unwrap(), vec![]);
    let info = host
        .discover()
        .into_iter()
        .find(|i| i.name == "hostile")
        .unwrap();
    assert_eq!(info.output_lines_logged, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_cache_is_hit_on_the_second_load() {
    let f = Fixture::new(&[("testplug-detector", "healthy")]);
    let cache = tempfile::tempdir().unwrap();
    let first = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    let info = first.discover().remove(0);
    assert_eq!(info.cache, Some(CacheOutcome::Stored));
    let cwasm = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
            .collect()
    };
    assert_eq!(cwasm().len(), 1);
    // A new host (a new rkmcp process) loads the compiled code from disk.
    let second = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    let info = second.discover().remove(0);
    assert_eq!(info.cache, Some(CacheOutcome::Hit));
    let mut s = second
        .detector("healthy")
        .unwrap()
        .start_session("")
        .await
        .unwrap();
    assert_eq!(
        s.feed("cached").await.unwrap(),
        vec![DetectorEvent::Text("cached".into())]
    );
    // A corrupt entry is ignored and replaced.
    // (A new file, as rkmcp itself only ever renames entries into place: truncating a file
    // that `second` has mapped would pull its code out from under it.)
    for path in cwasm() {
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"garbage").unwrap();
    }
    let third = PluginHost::new(f.config_with_cache(cache.path(), "")).unwrap();
    assert_eq!(
        third.discover().remove(0).cache,
        Some(CacheOutcome::Recompiled)
    );
    // Without a cache every load compiles.
    let none = PluginHost::new(f.config_with_cache(cache.path(), "no_cache = true")).unwrap();
    assert_eq!(
        none.discover().remove(0).cache,
        Some(CacheOutcome::Compiled)
    );
}

#[test]
fn plugins_config_rejects_unknown_keys() {
    let e = toml::from_str::<rkmcp_plugin_host::PluginsConfig>("dirz = []").unwrap_err();
    assert!(e.to_string().contains("dirz"), "{e}");
}
