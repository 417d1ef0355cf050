//! The approval chain with the real `approval-guard-default` component: a guard's deny beats
//! `--yes` and `auto_approve`, its question reaches the person, and a guard that fails denies.
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rkmcp::chat::approval::{
    ApprovalConfig, ApprovalRequest, Approver, PromptAnswer, Prompter, Verdict,
};
use rmcp::model::ToolAnnotations;
use serde_json::{Value, json};

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const GUARD: &str = "approval-guard-default";

fn request(tool: &str, arguments: Value, annotations: Option<ToolAnnotations>) -> ApprovalRequest {
    ApprovalRequest {
        server: "fs".into(),
        tool: tool.into(),
        exposed_name: format!("fs__{tool}"),
        arguments,
        annotations,
    }
}

fn config(text: &str) -> ApprovalConfig {
    toml::from_str(text).unwrap_or_else(|e| panic!("{text}\n{e}"))
}

/// TEST DOUBLE for the person at the terminal: allows once and keeps every `why` it was shown.
#[derive(Default)]
struct RecordingPrompter {
    whys: Mutex<Vec<String>>,
}

// What `#[async_trait]` would generate (the tests crate does not depend on async-trait).
impl Prompter for RecordingPrompter {
    fn ask<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        _request: &'life1 ApprovalRequest,
        why: &'life2 str,
    ) -> BoxFuture<'async_trait, PromptAnswer>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        if let Ok(mut w) = self.whys.lock() {
            w.push(why.to_string());
        }
        Box::pin(async { PromptAnswer::AllowOnce })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_guard_denies_writes_outside_its_roots_and_allows_reads() {
    let f = Fixture::new(&[(GUARD, GUARD)]);
    let host = f.host(&format!(
        "[grants.{GUARD}]\ncall_timeout_ms = 10000\nconfig = {{ allowed_roots = [\"/srv/data\"] }}\n"
    ));
    let guards = vec![host.approval_guard(GUARD).expect("guard")];
    let cfg = config(&format!(
        "guards = [\"{GUARD}\"]\nauto_approve = [\"fs/*\"]"
    ));
    // --yes and an auto_approve rule: only the guard can stop the write.
    let approver = Approver::new(&cfg, guards, None, true).expect("approver");
    assert_eq!(approver.guard_names(), [GUARD]);

    let write = request("write_file", json!({"path": "/etc/cron.d/x"}), None);
    match approver.review(&write).await {
        Verdict::Deny { by, reason } => {
            assert_eq!(by, format!("guard:{GUARD}"));
            assert!(
                reason.contains("write_file") && reason.contains("/srv/data"),
                "{reason}"
            );
        }
        v => panic!("{v:?}"),
    }
    // Inside the roots the guard asks (unannotated tool) and --yes answers.
    let inside = request("write_file", json!({"path": "/srv/data/a.txt"}), None);
    assert_eq!(
        approver.review(&inside).await,
        Verdict::Allow { by: "--yes".into() }
    );

    // Without --yes or a prompter: a read-only tool is allowed by its annotations, the guard's
    // question about an unannotated tool becomes a deny.
    let guards = vec![host.approval_guard(GUARD).expect("guard")];
    let unattended = Approver::new(
        &config(&format!("guards = [\"{GUARD}\"]")),
        guards,
        None,
        false,
    )
    .expect("approver");
    let read = request(
        "read_file",
        json!({"path": "/etc/hosts"}),
        Some(ToolAnnotations::new().read_only(true)),
    );
    assert_eq!(
        unattended.review(&read).await,
        Verdict::Allow {
            by: "annotations".into()
        }
    );
    let drop = request("drop_table", json!({"table": "t"}), None);
    match unattended.review(&drop).await {
        Verdict::Deny { by, reason } => {
            assert_eq!(by, format!("guard:{GUARD}"));
            assert!(reason.contains("not interactive"), "{reason}");
        }
        v => panic!("{v:?}"),
    }

    // With a person: the guard's question is what they are shown.
    let person = Arc::new(RecordingPrompter::default());
    let guards = vec![host.approval_guard(GUARD).expect("guard")];
    let attended = Approver::new(
        &config(&format!("guards = [\"{GUARD}\"]")),
        guards,
        Some(person.clone()),
        false,
    )
    .expect("approver");
    assert_eq!(
        attended.review(&drop).await,
        Verdict::Allow { by: "user".into() }
    );
    let whys = person.whys.lock().map(|w| w.clone()).unwrap_or_default();
    assert_eq!(whys.len(), 1, "{whys:?}");
    assert!(
        whys[0].contains(&format!("guard `{GUARD}` asks")) && whys[0].contains("drop_table"),
        "{whys:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_that_fails_denies_the_call() {
    // The same component under another name, with a fuel budget too small to even start.
    let f = Fixture::new(&[(GUARD, "starved")]);
    let host = f.host("[grants.starved]\nfuel = 1\ncall_timeout_ms = 10000\n");
    let guards = vec![host.approval_guard("starved").expect("guard")];
    let approver = Approver::new(
        &config("guards = [\"starved\"]\nauto_approve = [\"fs/*\"]"),
        guards,
        None,
        true,
    )
    .expect("approver");
    let read = request(
        "read_file",
        json!({"path": "/etc/hosts"}),
        Some(ToolAnnotations::new().read_only(true)),
    );
    match approver.review(&read).await {
        Verdict::Deny { by, reason } => {
            assert_eq!(by, "guard:starved");
            assert!(reason.starts_with("the guard failed: "), "{reason}");
            assert!(reason.contains("starved"), "{reason}");
        }
        v => panic!("{v:?}"),
    }
}
