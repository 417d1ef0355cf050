//! guard-js: an approval guard written in JavaScript (componentize-js, built by
//! plugins/guard-js/build.sh via scripts/build-plugins), run by the real plugin host.
use rkmcp_plugin_host::{ApprovalGuard, Decision, PluginHost, ProposedCall, ToolAnnotations};
use serde_json::{Value, json};

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const PLUGIN: &str = "guard-js";

/// The first load compiles the ~12 MB component (cached afterwards); calls themselves are fast,
/// but a loaded 2-core CI machine gets room.
fn host(f: &Fixture, name: &str, config: &str) -> PluginHost {
    f.host(&format!(
        "[grants.{name}]\ncall_timeout_ms = 10000\n[grants.{name}.config]\n{config}\n"
    ))
}

fn call(server: &str, tool: &str, arguments: Value, read_only: Option<bool>) -> ProposedCall {
    ProposedCall {
        server: server.into(),
        tool: tool.into(),
        arguments,
        annotations: ToolAnnotations {
            read_only,
            ..ToolAnnotations::default()
        },
        interactive: true,
    }
}

fn plain(server: &str, tool: &str) -> ProposedCall {
    call(server, tool, json!({"path": "/tmp/x", "n": 1}), None)
}

async fn review(g: &ApprovalGuard, c: &ProposedCall) -> Decision {
    g.review(c)
        .await
        .unwrap_or_else(|e| panic!("review {}: {e}", c.tool))
}

fn denied(d: Decision, what: &str) -> String {
    match d {
        Decision::Deny(reason) => reason,
        d => panic!("{what} should be denied: {d:?}"),
    }
}

const RULES: &str = r#"deny = ["*delete*", "shell/*"]
deny_arguments = ["*../*", "/etc/*"]
ask = ["*write*"]
allow = ["*read*", "time/*", "*write_log"]
default = "deny""#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_decide_in_order_deny_arguments_ask_allow_then_default() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let h = host(&f, PLUGIN, RULES);
    let g = h.approval_guard(PLUGIN).expect("guard");

    let reason = denied(review(&g, &plain("fs", "delete_file")).await, "delete_file");
    assert!(
        reason.contains("*delete*") && reason.contains("fs"),
        "{reason}"
    );
    // `server/tool` patterns, even for a read-only tool.
    let ro = call("shell", "run", json!({}), Some(true));
    denied(review(&g, &ro).await, "shell/run");
    assert_eq!(review(&g, &plain("time", "now")).await, Decision::Allow);

    // A string anywhere in the arguments, named by where it sits; an allowed tool does not
    // escape it, and strings that do not match (or are not strings) do not trip it.
    let nested = json!({"opts": {"files": ["a.txt", "../../secret"]}, "n": 3});
    let reason = denied(
        review(&g, &call("fs", "read_file", nested, None)).await,
        "read_file with ../",
    );
    assert!(
        reason.contains("opts.files[1]") && reason.contains("*../*"),
        "{reason}"
    );
    let etc = call("fs", "read_file", json!({"path": "/etc/passwd"}), None);
    let reason = denied(review(&g, &etc).await, "read_file /etc");
    assert!(
        reason.contains("`path`") && reason.contains("/etc/passwd"),
        "{reason}"
    );
    let fine = call(
        "fs",
        "read_file",
        json!({"path": "notes/a..b", "etc": 1}),
        None,
    );
    assert_eq!(review(&g, &fine).await, Decision::Allow);

    // `ask` beats `allow` (write_log matches both); the question shows the arguments.
    match review(&g, &plain("fs", "write_log")).await {
        Decision::Ask(q) => assert!(q.contains("*write*") && q.contains("/tmp/x"), "{q}"),
        d => panic!("write_log: {d:?}"),
    }
    // Nobody to ask: the host turns the question into a deny.
    let mut headless = plain("fs", "write_file");
    headless.interactive = false;
    denied(review(&g, &headless).await, "write_file without a user");

    // No rule: read-only is allowed, anything else gets the default.
    let query = call("db", "query", json!({}), Some(true));
    assert_eq!(review(&g, &query).await, Decision::Allow);
    let reason = denied(review(&g, &plain("db", "query")).await, "query");
    assert!(reason.contains("default is deny"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comma_lists_and_default_ask() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let h = host(&f, PLUGIN, r#"allow = "echo, add""#);
    let g = h.approval_guard(PLUGIN).expect("guard");
    assert_eq!(review(&g, &plain("s", "add")).await, Decision::Allow);
    match review(&g, &plain("s", "sub")).await {
        Decision::Ask(q) => assert!(q.contains("`sub` on server `s`"), "{q}"),
        d => panic!("sub: {d:?}"),
    }
}

/// A rule list the guard cannot read denies everything, saying why, even a read-only call that
/// the default would allow: a typo must not open the gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_config_fails_closed_naming_the_key() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN)]);
    let read_only = call("s", "read_file", json!({}), Some(true));
    for (config, says) in [
        (r#"default = "maybe""#, ["`default`", "maybe"]),
        (r#"deny = ["ok", 3]"#, ["`deny`", "not a string"]),
        (r#"ask = ["[z-a]"]"#, ["`ask`", "[z-a]"]),
        (
            r#"deny_arguments = "['oops""#,
            ["`deny_arguments`", "unterminated"],
        ),
    ] {
        let h = host(&f, PLUGIN, config);
        let g = h.approval_guard(PLUGIN).expect("guard");
        let reason = denied(review(&g, &read_only).await, config);
        assert!(
            reason.starts_with("guard-js: ") && says.iter().all(|s| reason.contains(s)),
            "{config}: {reason}"
        );
    }
}

/// The same rule list means the same in guard-python and guard-js (both follow Python's
/// fnmatch): a user can swap one for the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decides_like_guard_python() {
    let f = Fixture::new(&[(PLUGIN, PLUGIN), ("guard-python", "guard-python")]);
    let rules = r#"deny = ["*delete*", "shell/*", "x[!a-c]?"]
ask = ["*write*", "fs/mo?e"]
allow = ["*read*", "time/*", "[tu]*", "x*"]
default = "deny""#;
    let js = host(&f, PLUGIN, rules);
    let py = f.host(&format!(
        "[grants.guard-python]\ncall_timeout_ms = 20000\n[grants.guard-python.config]\n{rules}\n"
    ));
    let js = js.approval_guard(PLUGIN).expect("guard-js");
    let py = py.approval_guard("guard-python").expect("guard-python");
    let calls = [
        ("fs", "delete_file", None),
        ("shell", "ls", Some(true)),
        ("a", "xdz", None),
        ("a", "xaz", None),
        ("fs", "write_file", None),
        ("fs", "move", None),
        ("fs", "mode", Some(true)),
        ("fs", "read_file", None),
        ("time", "now", None),
        ("db", "update", None),
        ("db", "query", Some(true)),
        ("db", "query", None),
    ];
    for (server, tool, read_only) in calls {
        let c = call(server, tool, json!({"path": "/tmp/x"}), read_only);
        let (a, b) = (review(&js, &c).await, review(&py, &c).await);
        // Reasons are worded by each guard; the verdict must agree.
        assert_eq!(
            std::mem::discriminant(&a),
            std::mem::discriminant(&b),
            "{server}/{tool}: guard-js {a:?}, guard-python {b:?}"
        );
    }
}
