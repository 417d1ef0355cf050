//! The chat loop reading the model's answers with a detector plugin (`[chat] detector`): the real
//! `detector-tool-call` component gives the same conversation as the built-in detector, and a
//! plugin that refuses the format or crashes half-way through an answer hands over to the
//! built-in detector without losing or repeating anything. The model is `ScriptedBackend` (a
//! TEST DOUBLE replaying scripted answers in 3-character chunks); the server is our fixture.

use rkmcp::chat::ChatEvent;
use rkmcp::chat::TurnOutcome;
use rkmcp_llm::{Message, Role};
use rkmcp_tests::scripted_backend::scripted;
use rkmcp_tests::*;

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

fn call(name: &str, args: &str) -> String {
    format!("[TOOL_CALL]{{\"name\": \"{name}\", \"arguments\": {args}}}[END_TOOL_CALL]")
}

/// The answers of every test: some words, a call, then an answer from its result.
fn script() -> Vec<String> {
    vec![
        format!(
            "Let me check. {} One moment.",
            call("fx__echo", r#"{"message": "hello"}"#)
        ),
        "The server said hello.".to_string(),
    ]
}

struct Run {
    outcome: TurnOutcome,
    events: Vec<ChatEvent>,
    history: Vec<Message>,
    detector: Option<String>,
}

/// One turn over the fixture server with `[chat]` settings `chat_toml` and a plugin folder
/// holding `plugins` (built component, plugin name).
async fn run(plugins: &[(&str, &str)], chat_toml: &str) -> Run {
    let fixture = Fixture::new(plugins);
    let script = script();
    let steps: Vec<&str> = script.iter().map(String::as_str).collect();
    let (backend, _seen) = scripted(&steps);
    let grants = "[plugins.grants.hostile]\ncall_timeout_ms = 10000\n[plugins.grants.detector-tool-call]\ncall_timeout_ms = 10000";
    let chat_toml = format!("tool_format = \"tool-call-json\"\n{chat_toml}");
    let mut engine = fixture.chat(FIXTURE, grants, &chat_toml, backend).await;
    let (outcome, events) = one_turn(&mut engine, "Echo hello").await;
    let history = engine.history().to_vec();
    let detector = engine.transcript().detector.clone();
    engine.into_sessions_shutdown().await;
    Run {
        outcome,
        events,
        history,
        detector,
    }
}

fn roles_and_text(history: &[Message]) -> Vec<(Role, String)> {
    history
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect()
}

/// What the built-in detector makes of the script: the reference for every plugin run.
fn assert_same_conversation(run: &Run, builtin: &Run) {
    assert_one_call_then_answer(&run.outcome, &run.events, "The server said hello.");
    assert_eq!(visible_text(&run.events), visible_text(&builtin.events));
    assert_eq!(
        roles_and_text(&run.history),
        roles_and_text(&builtin.history)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detector_plugin_reads_answers_exactly_like_the_builtin_detector() {
    let builtin = run(&[], "").await;
    assert_eq!(builtin.detector, None);
    let shown = visible_text(&builtin.events);
    assert!(
        shown.starts_with("Let me check.")
            && shown.contains("One moment.")
            && shown.ends_with("The server said hello.")
            && !shown.contains("TOOL_CALL"),
        "{shown}"
    );
    assert!(notices(&builtin.events).is_empty());

    let plugin = run(
        &[("detector-tool-call", "detector-tool-call")],
        "detector = \"detector-tool-call\"",
    )
    .await;
    assert_eq!(plugin.detector.as_deref(), Some("detector-tool-call"));
    assert!(
        notices(&plugin.events).is_empty(),
        "{:?}",
        notices(&plugin.events)
    );
    assert_same_conversation(&plugin, &builtin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detector_plugin_that_refuses_the_format_hands_over_to_the_builtin_detector() {
    let builtin = run(&[], "").await;
    // The hostile test plugin knows only its own modes, not "tool-call-json".
    let refused = run(&[("testplug-hostile", "hostile")], "detector = \"hostile\"").await;
    let notices = notices(&refused.events);
    assert!(
        notices
            .iter()
            .any(|n| n.contains("`hostile`") && n.contains("unknown mode")),
        "{notices:?}"
    );
    assert_same_conversation(&refused, &builtin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detector_plugin_that_crashes_mid_answer_loses_and_repeats_nothing() {
    let builtin = run(&[], "").await;
    // Healthy (it shows the text) until the chunk that starts the call, where it panics.
    let crashed = run(
        &[("testplug-hostile", "hostile")],
        "detector = \"hostile\"\ndetector_format = \"echo-until-bracket\"",
    )
    .await;
    let notices = notices(&crashed.events);
    assert!(
        notices
            .iter()
            .any(|n| n.contains("`hostile`") && n.contains("built-in tool-call-json detector")),
        "{notices:?}"
    );
    // The text the plugin had shown is not shown again, and the call still ran.
    assert_same_conversation(&crashed, &builtin);
}

#[test]
fn a_missing_detector_plugin_is_a_config_error_naming_it() {
    let err = chat_plugins_error("detector = \"no-such-detector\"");
    assert!(
        err.contains("[chat] detector") && err.contains("no-such-detector"),
        "{err}"
    );
}
