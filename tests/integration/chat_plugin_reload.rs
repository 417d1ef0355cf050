//! Hot reload during one chat session (`rkmcp chat` watches its plugin folders): the approval
//! guard `gate` is replaced by another component, by a broken file, by a component of another
//! kind, removed, and put back — all while one chat engine runs, each change picked up between
//! turns by `PluginReloader` with a notice. Real components in the real plugin host, the real
//! fixture MCP server, the real folder watcher (notify); the model is `ScriptedBackend` (a TEST
//! DOUBLE) asking for the same `echo` call every turn. Nobody is at a terminal and `echo` is
//! auto-approved, so the guard alone decides: the two guard components decide differently.
//! The only waiting is for a notice, with a generous deadline.
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rkmcp::chat::ChatEngine;
use rkmcp::chat::ChatEvent;
use rkmcp::chat::approval::{Approver, Verdict};
use rkmcp::chat::reload::PluginReloader;
use rkmcp_tests::plugin_support::{Fixture, built, shared_cache};
use rkmcp_tests::scripted_backend::scripted;
use rkmcp_tests::{load_config, one_turn, stdio_entry, toml_str};

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

/// Allows `echo` (its config `allow = "echo"`): a contract 0.1.0 component.
const ALLOWS: &str = "testplug-guard";
/// Asks about an unannotated tool; with nobody to answer that is a deny (contract 0.2.0).
const ASKS: &str = "approval-guard-default";

/// How long a change may take to be seen: the debounce is 300 ms, the rest is a loaded CI
/// machine compiling a component.
const DEADLINE: Duration = Duration::from_secs(90);

/// A chat over the fixture server whose only guard is `gate`, unattended
/// (no person, no --yes), with `echo` auto-approved; and its reloader.
async fn chat(fixture: &Fixture, turns: usize) -> (ChatEngine, PluginReloader) {
    let call =
        "[TOOL_CALL]{\"name\": \"fx__echo\", \"arguments\": {\"message\": \"hi\"}}[END_TOOL_CALL]";
    let steps: Vec<&str> = (0..turns).flat_map(|_| [call, "Done."]).collect();
    let (backend, _seen) = scripted(&steps);
    let toml = format!(
        "{}\n[plugins]\ndirs = [{}]\ndefault_dir = false\ncache_dir = {}\n\
         [plugins.grants.gate]\ncall_timeout_ms = 10000\nconfig = {{ allow = \"echo\" }}\n\n\
         [chat]\ntool_format = \"tool-call-json\"\n[chat.approval]\nguards = [\"gate\"]\nauto_approve = [\"fx/echo\"]\n",
        stdio_entry("fx", FIXTURE, &[], "allow = [\"echo\"]"),
        toml_str(&fixture.plugins.path().display().to_string()),
        toml_str(&shared_cache().display().to_string()),
    );
    let config = load_config(fixture.data.path(), &toml);
    let settings: rkmcp::chat::ChatSettings = config.section("chat").expect("[chat]");
    let loaded = rkmcp::chat::start::load_plugins(&config, &settings).expect("plugins load");
    let sessions = rkmcp::mcp::SessionManager::start(&config, None).await;
    assert!(sessions.failures().is_empty(), "{:?}", sessions.failures());
    let approver = Approver::new(&settings.approval, loaded.guards, None, false).expect("approver");
    let reloader = PluginReloader::start(loaded.host, &config, &settings)
        .expect("the plugin folder is watched")
        .expect("the chat uses a plugin, so it watches");
    assert_eq!(reloader.watched(), [fixture.plugins.path()]);
    let engine = ChatEngine::new(backend, Arc::new(sessions), settings, approver);
    (engine, reloader)
}

/// One turn asking for the `echo` call; the approval verdict it got.
async fn verdict(engine: &mut ChatEngine) -> Verdict {
    let (_, events) = one_turn(engine, "Echo hi").await;
    events
        .iter()
        .find_map(|e| match e {
            ChatEvent::Approval { verdict, .. } => Some(verdict.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the turn asked for no approval: {events:?}"))
}

fn assert_allowed(v: &Verdict) {
    assert!(matches!(v, Verdict::Allow { .. }), "{v:?}");
}

/// Denied by the guard `gate` as the asking component denies when nobody can answer.
fn assert_denied_by_gate(v: &Verdict) {
    match v {
        Verdict::Deny { by, reason } => {
            assert_eq!(by, "guard:gate");
            assert!(reason.contains("not interactive"), "{reason}");
        }
        v => panic!("expected a deny by guard:gate, got {v:?}"),
    }
}

/// Applies changes between turns until a notice containing `what` appears; returns them all.
async fn notice(reloader: &mut PluginReloader, engine: &mut ChatEngine, what: &str) -> Vec<String> {
    let start = Instant::now();
    let mut seen = Vec::new();
    loop {
        seen.extend(reloader.apply(engine).await);
        if seen.iter().any(|n| n.contains(what)) {
            for n in &seen {
                assert!(
                    !n.chars().any(char::is_control),
                    "control characters: {n:?}"
                );
            }
            return seen;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "no notice with {what:?} within {DEADLINE:?}; notices: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn put(component: &str, dest: &Path) {
    // A plain copy over the old file: truncate, then several writes (what `cp` does).
    std::fs::copy(built(component), dest).expect("copy component");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_replaced_broken_and_removed_during_one_chat() {
    let fixture = Fixture::new(&[(ALLOWS, "gate")]);
    let gate = fixture.plugins.path().join("gate.wasm");
    let (mut engine, mut reloader) = chat(&fixture, 7).await;
    // Nothing changed yet: no notice, and the first guard allows.
    assert_eq!(reloader.apply(&mut engine).await, Vec::<String>::new());
    assert_allowed(&verdict(&mut engine).await);

    // Replaced by another guard: the next call is reviewed by the new one.
    put(ASKS, &gate);
    let notes = notice(&mut reloader, &mut engine, "plugin `gate` reloaded").await;
    let note = notes
        .iter()
        .find(|n| n.contains("reloaded"))
        .expect("notice");
    assert!(
        note.contains("approval-guard") && note.contains("contract 0.2.0"),
        "{note}"
    );
    assert!(
        note.contains("was approval-guard, contract 0.1.0"),
        "{note}"
    );
    assert_denied_by_gate(&verdict(&mut engine).await);

    // Replaced by a file that is no component: the notice says why, the running guard stays.
    std::fs::write(&gate, b"\0asm\x01\0\0\0 this is not a component").expect("write");
    let notes = notice(&mut reloader, &mut engine, "does not load").await;
    let note = notes
        .iter()
        .find(|n| n.contains("does not load"))
        .expect("notice");
    assert!(
        note.contains(&gate.display().to_string())
            && note.contains("(approval-guard, contract 0.2.0) keeps running as approval guard"),
        "{note}"
    );
    assert_denied_by_gate(&verdict(&mut engine).await);

    // Replaced by a detector: it loads, but cannot be a guard; the running guard stays.
    put("testplug-detector", &gate);
    let notes = notice(&mut reloader, &mut engine, "cannot serve as approval guard").await;
    assert!(
        notes.iter().any(|n| n.contains("detector")),
        "the notice names what the file is: {notes:?}"
    );
    assert_denied_by_gate(&verdict(&mut engine).await);

    // Removed: the loaded guard keeps reviewing (a guard never leaves the approval path
    // silently; without it, auto_approve would allow the call).
    std::fs::remove_file(&gate).expect("remove");
    let notes = notice(&mut reloader, &mut engine, "was removed").await;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("keeps running the loaded version")
                && n.contains("as approval guard until it ends")),
        "{notes:?}"
    );
    assert_denied_by_gate(&verdict(&mut engine).await);

    // Put back (the first guard): used again from the next call.
    put(ALLOWS, &gate);
    notice(&mut reloader, &mut engine, "plugin `gate` reloaded").await;
    assert_allowed(&verdict(&mut engine).await);

    // A plugin the chat does not use is only announced; its name reaches the terminal without
    // the control sequences in it.
    put(ALLOWS, &fixture.plugins.path().join("\u{1b}[2Jextra.wasm"));
    let notes = notice(&mut reloader, &mut engine, "this chat does not use it").await;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("added") && n.contains("extra")),
        "{notes:?}"
    );
    assert_allowed(&verdict(&mut engine).await);

    engine.into_sessions_shutdown().await;
}
