//! The chat loop describing tools and results with a schema-converter plugin (`[chat]
//! converter`): the real `schema-converter-default` component gives the model exactly what the
//! built-in converter gives it, a plugin with its own style writes the system prompt's tool
//! section, the grammar and the tool results, and a plugin that fails leaves the built-in
//! converter in charge without losing a result. The model is `ScriptedBackend` (a TEST DOUBLE
//! replaying scripted answers in 3-character chunks, recording every request); the server is our
//! fixture.
use std::sync::{Arc, Mutex};

use rkmcp::chat::ChatEvent;
use rkmcp::chat::TurnOutcome;
use rkmcp::chat::transcript::Transcript;
use rkmcp_llm::Role;
use rkmcp_tests::scripted_backend::{ScriptedBackend, SeenRequest, Step};
use rkmcp_tests::*;

use rkmcp_tests::plugin_support as support;
use support::Fixture;

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");
const DEFAULT: &str = "schema-converter-default";

struct Run {
    outcome: TurnOutcome,
    events: Vec<ChatEvent>,
    seen: Vec<SeenRequest>,
    transcript: Transcript,
}

/// One turn ("Echo hello") over the fixture server with `[chat]` settings `chat_toml`, plugin
/// grants `grants_toml` and a plugin folder holding `plugins` (built component, plugin name);
/// the model says `script`, on a backend that takes grammars.
async fn run(plugins: &[(&str, &str)], grants_toml: &str, chat_toml: &str, script: &[&str]) -> Run {
    let fixture = Fixture::new(plugins);
    let steps = script.iter().map(|s| Step::Say(s.to_string())).collect();
    let (backend, seen) = ScriptedBackend::new(steps, 3);
    let chat_toml = format!("tool_decision = \"open\"\n{chat_toml}");
    let backend = backend.with_grammar().shared();
    let mut engine = fixture
        .chat(FIXTURE, grants_toml, &chat_toml, backend)
        .await;
    let (outcome, events) = one_turn(&mut engine, "Echo hello").await;
    let transcript = engine.transcript().clone();
    engine.into_sessions_shutdown().await;
    Run {
        outcome,
        events,
        seen: taken(&seen),
        transcript,
    }
}

fn taken(seen: &Arc<Mutex<Vec<SeenRequest>>>) -> Vec<SeenRequest> {
    seen.lock().map(|s| s.clone()).unwrap_or_default()
}

/// A Hermes-style call (what the test converter teaches), then an answer from its result.
const HERMES_SCRIPT: [&str; 2] = [
    r#"<tool_call>{"name": "fx__echo", "arguments": {"message": "hello"}}</tool_call>"#,
    "The server said hello.",
];

fn json_call() -> &'static str {
    r#"Let me check. [TOOL_CALL]{"name": "fx__echo", "arguments": {"message": "hello"}}[END_TOOL_CALL]"#
}

/// Every message (role, text) and the grammar of one request.
type Request = (Vec<(Role, String)>, Option<String>);

/// What the model was given in each round.
fn requests(run: &Run) -> Vec<Request> {
    run.seen
        .iter()
        .map(|r| {
            (
                r.messages
                    .iter()
                    .map(|m| (m.role, m.content.clone()))
                    .collect(),
                r.grammar.clone(),
            )
        })
        .collect()
}

fn grammars(run: &Run) -> Vec<String> {
    run.transcript.turns[0]
        .rounds
        .iter()
        .map(|r| r.grammar.clone())
        .collect()
}

fn assert_call_ran(run: &Run) {
    assert_one_call_then_answer(&run.outcome, &run.events, "The server said hello.");
}

/// [`run`] with the real default converter component, configured for `format`, as
/// `[chat] converter`, over `[chat]` settings `chat_toml`.
async fn run_default_converter(format: &str, chat_toml: &str, script: &[&str]) -> Run {
    let grants = format!(
        "[plugins.grants.{DEFAULT}]\ncall_timeout_ms = 10000\nconfig = {{ format = \"{format}\" }}"
    );
    let chat = format!("{chat_toml}\nconverter = \"{DEFAULT}\"");
    run(&[(DEFAULT, DEFAULT)], &grants, &chat, script).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_converter_component_gives_the_model_exactly_what_the_builtin_converter_does() {
    let script = [json_call(), "The server said hello."];
    let chat = "tool_format = \"tool-call-json\"";
    let builtin = run(&[], "", chat, &script).await;
    assert_call_ran(&builtin);
    assert_eq!(builtin.transcript.converter, None);

    let plugin = run_default_converter("tool-call-json", chat, &script).await;
    assert_call_ran(&plugin);
    assert!(
        notices(&plugin.events).is_empty(),
        "{:?}",
        notices(&plugin.events)
    );
    assert_eq!(plugin.transcript.converter.as_deref(), Some(DEFAULT));
    assert_eq!(
        grammars(&plugin),
        ["converter plugin", "converter plugin"],
        "the plugin's grammar holds both rounds"
    );
    // System prompt, the model's call, the tool result and both grammars: byte for byte.
    assert_eq!(requests(&plugin), requests(&builtin));
    let (messages, grammar) = &requests(&plugin)[1];
    assert!(
        messages[0].1.contains("[TOOL_CALL]") && messages[0].1.contains("fx__echo"),
        "{}",
        messages[0].1
    );
    assert!(grammar.as_deref().is_some_and(|g| g.contains("fx__echo")));
    assert!(
        messages
            .iter()
            .any(|(role, text)| *role == Role::Tool && text.contains("hello")),
        "{messages:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_converter_plugin_writes_the_tool_section_the_grammar_and_the_results() {
    // The test converter teaches Hermes-style calls and wraps results in <tool_response>.
    let run = run(
        &[("testplug-converter", "mine")],
        "[plugins.grants.mine]\ncall_timeout_ms = 10000",
        "tool_format = \"hermes\"\nconverter = \"mine\"",
        &HERMES_SCRIPT,
    )
    .await;
    assert_call_ran(&run);
    assert!(
        notices(&run.events).is_empty(),
        "{:?}",
        notices(&run.events)
    );
    assert_eq!(run.transcript.converter.as_deref(), Some("mine"));

    let first = &run.seen[0];
    assert_eq!(first.messages[0].role, Role::System);
    let system = &first.messages[0].content;
    assert!(
        system
            .starts_with("You are a helpful assistant.\n\nYou may call these tools:\n- fx__echo:")
            && system
                .ends_with("Call one as <tool_call>{\"name\": …, \"arguments\": {…}}</tool_call>."),
        "{system}"
    );
    let grammar = first.grammar.as_deref().expect("the plugin's grammar");
    assert!(
        grammar.starts_with("root ::= \"<tool_call>") && grammar.contains("fx__echo"),
        "{grammar}"
    );

    // The result as the plugin wrote it, with the server's text inside.
    let second = &run.seen[1];
    let tool = second
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("a tool message");
    let body = tool
        .content
        .strip_prefix("<tool_response>")
        .and_then(|t| t.strip_suffix("</tool_response>"))
        .unwrap_or_else(|| panic!("not the plugin's wrapper: {}", tool.content));
    let body: serde_json::Value = serde_json::from_str(body).expect("JSON inside");
    assert_eq!(body["name"], "fx__echo");
    assert_eq!(body["id"], run.transcript.turns[0].rounds[0].calls[0].id);
    assert!(body["content"].to_string().contains("hello"), "{body}");
    assert_eq!(
        run.transcript.turns[0].rounds[0].calls[0].fed_back,
        tool.content
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_call_keeps_the_builtin_call_only_grammar_under_a_converter_plugin() {
    let run = run(
        &[("testplug-converter", "mine")],
        "[plugins.grants.mine]\ncall_timeout_ms = 10000",
        "tool_format = \"hermes\"\nconverter = \"mine\"\ntool_choice = \"required\"",
        &HERMES_SCRIPT,
    )
    .await;
    assert_call_ran(&run);
    // Round 1 must call: the plugin's grammar (a call or an answer) cannot say so, the built-in
    // Hermes grammar can. Round 2 may answer: the plugin's grammar again.
    assert_eq!(grammars(&run), ["call-only", "converter plugin"]);
    let builtin_call_only = run.seen[0].grammar.as_deref().expect("a grammar");
    assert!(
        !builtin_call_only.starts_with("root ::= \"<tool_call>{"),
        "{builtin_call_only}"
    );
    assert!(
        run.seen[1]
            .grammar
            .as_deref()
            .is_some_and(|g| g.starts_with("root ::= \"<tool_call>{")),
        "{:?}",
        run.seen[1].grammar
    );
    // The section is the plugin's in both rounds.
    assert!(
        run.seen
            .iter()
            .all(|r| r.messages[0].content.contains("You may call these tools:")),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_converter_plugin_that_fails_leaves_the_builtin_converter_in_charge() {
    let script = [json_call(), "The server said hello."];
    let chat = "tool_format = \"tool-call-json\"";
    let builtin = run(&[], "", chat, &script).await;
    // A config the default converter refuses: every call it gets fails.
    let failed = run_default_converter("no-such-format", chat, &script).await;
    assert_call_ran(&failed);
    let notices = notices(&failed.events);
    let on = |what: &str| {
        notices.iter().any(|n| {
            n.contains(&format!("converter plugin `{DEFAULT}` failed on {what}"))
                && n.contains("no-such-format")
                && n.contains("built-in converter")
        })
    };
    assert!(on("the tool list"), "{notices:?}");
    assert!(on("the result of 'fx__echo'"), "{notices:?}");
    // The built-in converter did the plugin's work: the model saw the same conversation,
    // the tool's result included.
    assert_eq!(requests(&failed), requests(&builtin));
    assert_eq!(grammars(&failed), grammars(&builtin));
}

#[test]
fn a_missing_converter_plugin_is_a_config_error_naming_it() {
    let err = chat_plugins_error("converter = \"no-such-converter\"");
    assert!(
        err.contains("[chat] converter") && err.contains("no-such-converter"),
        "{err}"
    );
}
