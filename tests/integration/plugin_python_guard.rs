//! guard-python: an approval guard written in Python (componentize-py, built by
//! plugins/guard-python/build.sh via scripts/build-plugins), run by the real plugin host.
use rkmcp_plugin_host::{ApprovalGuard, Decision, PluginHost, ProposedCall, ToolAnnotations};
use serde_json::json;

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const PLUGIN: &str = "guard-python";

/// CPython's first call in a fresh instance imports modules: give it room on a loaded machine.
fn host(f: &Fixture, config: &str) -> PluginHost {
    f.host(&format!(
        "[grants.{PLUGIN}]\ncall_timeout_ms = 20000\n[grants.{PLUGIN}.config]\n{config}\n"
    ))
}

fn call(server: &str, tool: &str, read_only: Option<bool>, interactive: bool) -> ProposedCall {
    ProposedCall {
        server: server.into(),
        tool: tool.into(),
        arguments: json!({"path": "/tmp/x", "n": 1}),
        annotations: ToolAnnotations {
            read_only,
            ..ToolAnnotations::default()
        },
        interactive,
    }
}

async fn review(g: &ApprovalGuard, c: &ProposedCall) -> Decision {
    g.review(c)
        .await
        .unwrap_or_else(|e| panic!("review {}: {e}", c.tool))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_decide_in_order_deny_ask_allow_then_default() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let h = host(
        &f,
        r#"deny = ["*delete*", "shell/*"]
ask = ["*write*"]
allow = ["*read*", "time/*", "*write_log"]
default = "deny""#,
    );
    let g = h.approval_guard(PLUGIN).expect("guard");

    match review(&g, &call("fs", "delete_file", None, true)).await {
        Decision::Deny(reason) => assert!(
            reason.contains("*delete*") && reason.contains("fs"),
            "{reason}"
        ),
        d => panic!("delete_file: {d:?}"),
    }
    // `server/tool` patterns.
    assert!(matches!(
        review(&g, &call("shell", "run", Some(true), true)).await,
        Decision::Deny(_)
    ));
    assert_eq!(
        review(&g, &call("time", "now", None, true)).await,
        Decision::Allow
    );
    // `ask` beats `allow` (write_log matches both).
    match review(&g, &call("fs", "write_log", None, true)).await {
        Decision::Ask(q) => assert!(q.contains("*write*") && q.contains("/tmp/x"), "{q}"),
        d => panic!("write_log: {d:?}"),
    }
    // Nobody to ask: the host turns the question into a deny.
    assert!(matches!(
        review(&g, &call("fs", "write_file", None, false)).await,
        Decision::Deny(_)
    ));
    assert_eq!(
        review(&g, &call("fs", "read_file", None, false)).await,
        Decision::Allow
    );
    // No rule: read-only is allowed, anything else gets the default.
    assert_eq!(
        review(&g, &call("db", "query", Some(true), true)).await,
        Decision::Allow
    );
    match review(&g, &call("db", "query", None, true)).await {
        Decision::Deny(reason) => assert!(reason.contains("default is deny"), "{reason}"),
        d => panic!("query: {d:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comma_lists_default_ask_and_broken_config_fails_closed() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let h = host(&f, r#"allow = "echo, add""#);
    let g = h.approval_guard(PLUGIN).expect("guard");
    assert_eq!(
        review(&g, &call("s", "add", None, true)).await,
        Decision::Allow
    );
    assert!(matches!(
        review(&g, &call("s", "sub", None, true)).await,
        Decision::Ask(_)
    ));

    let h = host(&f, r#"default = "maybe""#);
    let g = h.approval_guard(PLUGIN).expect("guard");
    match review(&g, &call("s", "read_file", Some(true), true)).await {
        Decision::Deny(reason) => assert!(
            reason.contains("default") && reason.contains("maybe"),
            "{reason}"
        ),
        d => panic!("broken config must deny: {d:?}"),
    }
}
