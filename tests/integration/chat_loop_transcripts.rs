//! The chat loop's exact transcripts, with the model replaced by `ScriptedBackend` (a TEST DOUBLE
//! that replays scripted answers in 3-character chunks) and real MCP servers: our fixture server
//! (rmcp) and `@modelcontextprotocol/server-everything`. Each test is one behaviour: a tool-free
//! answer, multi-round calls, parallel calls, invalid arguments then a fix, a denied call, a
//! failing tool, an unknown tool, a malformed call, the round limit, and cancellation of a
//! generation and of a running tool call.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rkmcp::chat::ChatEvent;
use rkmcp::chat::approval::{ApprovalConfig, Approver};
use rkmcp::chat::settings::{AfterResult, Auto, ChatSettings};
use rkmcp::chat::transcript::CallOutcome;
use rkmcp::chat::{ChatEngine, TurnOutcome};
use rkmcp::mcp::SessionManager;
use rkmcp_llm::{Message, Role, SharedBackend};
use rkmcp_tests::scripted_backend::{ScriptedBackend, SeenRequest, Step, scripted};
use rkmcp_tests::*;
use rkmcp_tool_formats::ToolFormat;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

struct Chat {
    engine: ChatEngine,
    seen: Arc<Mutex<Vec<SeenRequest>>>,
    dir: tempfile::TempDir,
}

/// A chat over the fixture server (`fx`) and, with `everything`, server-everything (`ev`),
/// calls written as `[TOOL_CALL]…[END_TOOL_CALL]`.
async fn chat(
    backend: (SharedBackend, Arc<Mutex<Vec<SeenRequest>>>),
    everything: bool,
    yes: bool,
) -> Chat {
    let settings = ChatSettings {
        tool_format: Auto::Set(ToolFormat::ToolCallJson),
        ..ChatSettings::default()
    };
    chat_with(backend, everything, yes, settings).await
}

/// [`chat`] with other settings.
async fn chat_with(
    backend: (SharedBackend, Arc<Mutex<Vec<SeenRequest>>>),
    everything: bool,
    yes: bool,
    settings: ChatSettings,
) -> Chat {
    chat_with_fixture(backend, everything, yes, settings, "").await
}

/// [`chat_with`], the fixture server's entry given `fx_options` (e.g. `allow = [...]`).
async fn chat_with_fixture(
    backend: (SharedBackend, Arc<Mutex<Vec<SeenRequest>>>),
    everything: bool,
    yes: bool,
    settings: ChatSettings,
    fx_options: &str,
) -> Chat {
    let dir = tempfile::tempdir().unwrap();
    let mut toml = stdio_entry("fx", FIXTURE, &[], fx_options);
    if everything {
        let (cmd, args) = everything_cmd();
        toml.push_str(&stdio_entry(
            "ev",
            &cmd,
            &args,
            "allow = [\"echo\", \"get-sum\"]",
        ));
    }
    let config = load_config(dir.path(), &toml);
    let sessions = SessionManager::start(&config, None).await;
    assert!(sessions.failures().is_empty(), "{:?}", sessions.failures());
    let approver = Approver::new(&ApprovalConfig::default(), Vec::new(), None, yes).unwrap();
    let (backend, seen) = backend;
    Chat {
        engine: ChatEngine::new(backend, Arc::new(sessions), settings, approver),
        seen,
        dir,
    }
}

fn call(name: &str, args: &str) -> String {
    format!("[TOOL_CALL]{{\"name\": \"{name}\", \"arguments\": {args}}}[END_TOOL_CALL]")
}

async fn turn(chat: &mut Chat, input: &str) -> (TurnOutcome, Vec<ChatEvent>) {
    one_turn(&mut chat.engine, input).await
}

fn history(chat: &Chat) -> Vec<(Role, String)> {
    chat.engine
        .history()
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_without_tools_is_answered_in_one_round() {
    let mut chat = chat(scripted(&["Paris is the capital of France."]), false, true).await;
    let (outcome, events) = turn(&mut chat, "What is the capital of France?").await;
    assert_eq!(outcome.answer, "Paris is the capital of France.");
    assert_eq!(
        (outcome.rounds, outcome.tool_calls, outcome.cancelled),
        (1, 0, false)
    );
    assert_eq!(visible_text(&events), "Paris is the capital of France.");
    assert_eq!(
        history(&chat),
        vec![
            (Role::User, "What is the capital of France?".to_string()),
            (
                Role::Assistant,
                "Paris is the capital of France.".to_string()
            ),
        ]
    );
    // The model saw the system prompt with the tool section, then the question.
    let seen = chat.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let system = &seen[0].messages[0];
    assert_eq!(system.role, Role::System);
    assert!(
        system.content.contains("fx__echo") && system.content.contains("[TOOL_CALL]"),
        "{}",
        system.content
    );
    // An answer without tools keeps the model's own sampling.
    assert_eq!(seen[0].temperature, None);
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_over_several_rounds_feed_each_result_back() {
    let first = format!(
        "Let me check. {}",
        call("fx__echo", r#"{"message": "hello"}"#)
    );
    let second = call("fx__echo", r#"{"message": "again"}"#);
    let mut chat = chat(
        scripted(&[&first, &second, "The server said hello, then again."]),
        false,
        true,
    )
    .await;
    let (outcome, events) = turn(&mut chat, "Echo twice").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (3, 2));
    assert_eq!(outcome.answer, "The server said hello, then again.");
    // Markers never reach the user.
    assert_eq!(
        visible_text(&events),
        "Let me check. The server said hello, then again."
    );
    assert_eq!(
        history(&chat),
        vec![
            (Role::User, "Echo twice".to_string()),
            (Role::Assistant, first.clone()),
            (
                Role::Tool,
                "[TOOL_RESULT name=fx__echo id=call00001]\nhello\n[END_TOOL_RESULT]".to_string()
            ),
            (Role::Assistant, second.clone()),
            (
                Role::Tool,
                "[TOOL_RESULT name=fx__echo id=call00002]\nagain\n[END_TOOL_RESULT]".to_string()
            ),
            (
                Role::Assistant,
                "The server said hello, then again.".to_string()
            ),
        ]
    );
    // Each round saw the conversation so far.
    let seen = chat.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().map(|s| s.messages.len()).collect::<Vec<_>>(),
        vec![2, 4, 6]
    );
    let t = chat.engine.transcript();
    let calls: Vec<_> = t.turns[0].rounds.iter().flat_map(|r| &r.calls).collect();
    assert!(
        calls
            .iter()
            .all(|c| c.outcome == CallOutcome::Ok && c.server == "fx" && c.tool == "echo")
    );
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_in_one_answer_all_run_and_come_back_in_order() {
    let both = format!(
        "{}\n{}\n{}",
        call("fx__echo", r#"{"message": "one"}"#),
        call("ev__get-sum", r#"{"a": 2, "b": 3}"#),
        call("fx__echo", r#"{"message": "three"}"#)
    );
    let mut chat = chat(scripted(&[&both, "Done."]), true, true).await;
    let (outcome, events) = turn(&mut chat, "Do three things").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (2, 3));
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolResult { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec!["fx__echo", "ev__get-sum", "fx__echo"]);
    let h = history(&chat);
    assert_eq!(h.len(), 6, "{h:#?}");
    assert!(h[2].1.contains("\none\n"), "{}", h[2].1);
    assert!(
        h[3].1.contains("ev__get-sum") && h[3].1.contains('5'),
        "{}",
        h[3].1
    );
    assert!(h[4].1.contains("\nthree\n"), "{}", h[4].1);
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_arguments_go_back_to_the_model_which_fixes_them() {
    let wrong = call("ev__get-sum", r#"{"a": "two", "b": 3}"#);
    let fixed = call("ev__get-sum", r#"{"a": "2", "b": 3}"#);
    let mut chat = chat(scripted(&[&wrong, &fixed, "2 + 3 = 5"]), true, true).await;
    let (outcome, events) = turn(&mut chat, "What is 2 + 3?").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (3, 1));
    let rejected: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Rejected { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(rejected.len(), 1, "{events:#?}");
    assert!(
        rejected[0].contains("/a") || rejected[0].contains("`a`"),
        "{}",
        rejected[0]
    );
    let h = history(&chat);
    // The error reached the model as the tool's answer; nothing ran.
    assert_eq!(h[2].0, Role::Tool);
    assert!(
        h[2].1.contains("ev__get-sum") && h[2].1.contains("Error"),
        "{}",
        h[2].1
    );
    // "2" for a number was coerced, recorded, and the call ran.
    let t = chat.engine.transcript();
    let ran = &t.turns[0].rounds[1].calls[0];
    assert_eq!(ran.outcome, CallOutcome::Ok);
    assert_eq!(ran.arguments["a"], serde_json::json!(2));
    assert_eq!(ran.coercions.len(), 1, "{:?}", ran.coercions);
    assert!(h[4].1.contains('5'), "{}", h[4].1);
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_call_does_not_run_and_the_model_is_told() {
    // No --yes, no prompter, default policy: add_tool needs approval and nobody can give it.
    let mut chat = chat(
        scripted(&[
            &call("fx__add_tool", "{}"),
            "I was not allowed to add a tool.",
        ]),
        false,
        false,
    )
    .await;
    let tools_before = chat.engine.sessions().tools().0.len();
    let (outcome, events) = turn(&mut chat, "Add a tool").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (2, 0));
    assert!(events.iter().any(|e| matches!(
        e,
        ChatEvent::Approval {
            verdict: rkmcp::chat::approval::Verdict::Deny { .. },
            ..
        }
    )));
    let h = history(&chat);
    assert!(h[2].1.contains("not allowed"), "{}", h[2].1);
    let record = &chat.engine.transcript().turns[0].rounds[0].calls[0];
    assert_eq!(record.outcome, CallOutcome::Denied);
    assert!(record.duration_ms.is_none());
    // The server never saw the call: its tool list did not grow.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(chat.engine.sessions().tools().0.len(), tools_before);
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_tool_reports_its_error_to_the_model() {
    let mut chat = chat(
        scripted(&[&call("fx__fail", "{}"), "The tool failed."]),
        false,
        true,
    )
    .await;
    let (outcome, events) = turn(&mut chat, "Try the failing tool").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (2, 1));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::ToolResult { is_error: true, .. }))
    );
    let h = history(&chat);
    assert_eq!(
        h[2].1,
        "[TOOL_RESULT name=fx__fail id=call00001]\nError: failing on purpose\n[END_TOOL_RESULT]"
    );
    assert_eq!(
        chat.engine.transcript().turns[0].rounds[0].calls[0].outcome,
        CallOutcome::ToolError
    );
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_and_malformed_calls_are_handed_back_not_dropped() {
    let unknown = call("fx__ecko", r#"{"message": "x"}"#);
    let malformed =
        "[TOOL_CALL]{\"name\": \"fx__echo\", \"arguments\": {\"message\": }[END_TOOL_CALL]";
    let mut chat = chat(scripted(&[&unknown, malformed, "Sorry."]), false, true).await;
    let (outcome, _) = turn(&mut chat, "Echo x").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (3, 0));
    let h = history(&chat);
    assert!(
        h[2].1.contains("no tool named `fx__ecko`") && h[2].1.contains("fx__echo"),
        "{}",
        h[2].1
    );
    assert!(h[4].1.contains("could not be read"), "{}", h[4].1);
    let rounds = &chat.engine.transcript().turns[0].rounds;
    assert_eq!(rounds[1].rejected[0].raw.as_deref(), Some(malformed));
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_round_limit_stops_a_model_that_keeps_calling() {
    let calls: Vec<String> = (1..=5)
        .map(|i| call("fx__echo", &format!(r#"{{"message": "again {i}"}}"#)))
        .collect();
    let steps: Vec<&str> = calls.iter().map(String::as_str).collect();
    let mut chat = chat(scripted(&steps), false, true).await;
    let (outcome, events) = turn(&mut chat, "Loop").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (5, 4));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::Notice { message } if message.contains("max_rounds")))
    );
    let turn = &chat.engine.transcript().turns[0];
    let last = turn.rounds.last().unwrap();
    assert_eq!(last.calls[0].outcome, CallOutcome::NotRun);
    assert!(last.calls[0].approval.is_none());
    assert!(
        turn.stopped
            .as_deref()
            .is_some_and(|s| s.contains("max_rounds"))
    );
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_stops_the_generation_and_keeps_what_was_said() {
    let (backend, seen) = ScriptedBackend::new(
        vec![
            Step::SayThenHang("I am thinking about".into()),
            Step::Say("Hello again.".into()),
        ],
        3,
    );
    let mut chat = chat((backend.shared(), seen), false, true).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let watcher = tokio::spawn(async move {
        let mut seen_text = String::new();
        while let Some(e) = rx.recv().await {
            if let ChatEvent::Text { text } = &e {
                seen_text.push_str(text);
                if seen_text == "I am thinking about" {
                    canceller.cancel();
                }
            }
        }
        seen_text
    });
    let outcome = chat.engine.turn("Think", &tx, cancel).await.unwrap();
    drop(tx);
    assert_eq!(watcher.await.unwrap(), "I am thinking about");
    assert!(outcome.cancelled);
    assert_eq!(
        history(&chat)[1],
        (Role::Assistant, "I am thinking about".to_string())
    );
    assert!(chat.engine.transcript().turns[0].cancelled);
    // The chat goes on.
    let (next, _) = turn(&mut chat, "Hi").await;
    assert_eq!(next.answer, "Hello again.");
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_running_tool_call_tells_the_server() {
    let mut chat = chat(
        scripted(&[
            &call("fx__sleep", r#"{"seconds": 3600}"#),
            "Stopped waiting.",
        ]),
        false,
        true,
    )
    .await;
    let log = chat.dir.path().join("logs").join("fx.log");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            if matches!(e, ChatEvent::Approval { .. }) {
                // Give the request time to reach the server before cancelling it.
                tokio::time::sleep(Duration::from_millis(300)).await;
                canceller.cancel();
            }
        }
    });
    let outcome = chat.engine.turn("Sleep", &tx, cancel).await.unwrap();
    drop(tx);
    assert!(outcome.cancelled);
    let record = &chat.engine.transcript().turns[0].rounds[0].calls[0];
    assert_eq!(record.outcome, CallOutcome::Cancelled);
    assert!(history(&chat)[2].1.contains("cancelled by the user"));
    // The server got notifications/cancelled and stopped the request.
    let mut logged = String::new();
    for _ in 0..100 {
        logged = std::fs::read_to_string(&log).unwrap_or_default();
        if logged.contains("sleep cancelled by the client") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        logged.contains("sleep cancelled by the client"),
        "server log {}: {logged}",
        log.display()
    );
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn context_pushed_into_the_chat_reaches_the_model() {
    let mut chat = chat(scripted(&["It says hi."]), false, true).await;
    chat.engine.push_context(Message::user(
        "Resource fixture://doc/1:\ncontents of fixture://doc/1",
    ));
    let (_, _) = turn(&mut chat, "What does the resource say?").await;
    let seen = chat.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].messages[1].content,
        "Resource fixture://doc/1:\ncontents of fixture://doc/1"
    );
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_call_is_not_run_again_and_the_model_may_only_answer() {
    let c = call("fx__echo", r#"{"message": "hi"}"#);
    let (backend, seen) = ScriptedBackend::new(
        vec![
            Step::Say(c.clone()),
            Step::Say(c.clone()),
            Step::Say("The echo said hi.".into()),
        ],
        3,
    );
    let mut chat = chat((backend.with_grammar().shared(), seen), false, true).await;
    let (outcome, events) = turn(&mut chat, "Echo hi").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (3, 1));
    assert_eq!(outcome.answer, "The echo said hi.");
    let rounds = &chat.engine.transcript().turns[0].rounds;
    assert_eq!(rounds[0].calls[0].outcome, CallOutcome::Ok);
    let repeat = &rounds[1].calls[0];
    assert_eq!(repeat.outcome, CallOutcome::Repeat);
    // It never reached approval: no verdict, a note instead.
    assert!(repeat.approval.is_none(), "{:?}", repeat.approval);
    assert!(
        repeat
            .note
            .as_deref()
            .is_some_and(|n| n.contains("a repeat of call00001")),
        "{:?}",
        repeat.note
    );
    assert_eq!(rounds[1].raw, c, "the repeat is kept in the transcript");
    assert!(events.iter().any(
        |e| matches!(e, ChatEvent::Notice { message } if message.contains("asked for again"))
    ));
    // The third round is constrained to a plain answer.
    assert_eq!(
        [
            rounds[0].grammar.as_str(),
            rounds[1].grammar.as_str(),
            rounds[2].grammar.as_str()
        ],
        ["tool-or-answer_directly", "call-or-answer", "answer-only"]
    );
    let grammars: Vec<Option<String>> = chat
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.grammar.clone())
        .collect();
    let last = grammars[2].as_deref().unwrap_or_default();
    assert!(!last.contains("TOOL_CALL"), "{last}");
    // The repeat is taken back: the answering round sees question, call, result — once.
    let third = chat.seen.lock().unwrap()[2].messages.clone();
    let roles: Vec<Role> = third.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::Tool],
        "{third:#?}"
    );
    chat.engine.into_sessions_shutdown().await;
}

/// A chat whose backend honours grammars, so `tool_decision = "explicit"` (the default) applies.
async fn chat_with_grammar(steps: &[&str]) -> Chat {
    let (backend, seen) =
        ScriptedBackend::new(steps.iter().map(|s| Step::Say(s.to_string())).collect(), 3);
    chat((backend.with_grammar().shared(), seen), false, true).await
}

fn grammars_seen(chat: &Chat) -> Vec<String> {
    chat.seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.grammar.clone().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_explicit_decision_to_answer_directly_is_not_a_call_and_the_model_then_answers() {
    let decision = call("answer_directly", "{}");
    let mut chat = chat_with_grammar(&[&decision, "Paris."]).await;
    // "echo" is a word of the fixture's echo tool: the model must decide.
    let (outcome, events) = turn(&mut chat, "Is Paris an echo of Rome?").await;
    assert_eq!(
        (outcome.rounds, outcome.tool_calls, outcome.answer.as_str()),
        (1, 0, "Paris.")
    );
    assert_eq!(visible_text(&events), "Paris.");
    let round = &chat.engine.transcript().turns[0].rounds[0];
    assert_eq!(round.decision.as_deref(), Some(decision.as_str()));
    assert_eq!(round.grammar, "tool-or-answer_directly, then answer-only");
    assert!(round.calls.is_empty() && round.rejected.is_empty());
    // The model was shown the pseudo-tool and held to naming a tool or it; then to an answer.
    let seen = chat.seen.lock().unwrap().clone();
    assert!(seen[0].messages[0].content.contains("answer_directly"));
    let grammars = grammars_seen(&chat);
    assert!(
        grammars[0].contains("answer_directly") && grammars[0].contains("fx__echo"),
        "{}",
        grammars[0]
    );
    assert!(!grammars[1].contains("TOOL_CALL"), "{}", grammars[1]);
    // The decision is greedy (`greedy_tool_rounds`); an answer without tools keeps the model's
    // sampling.
    let temperatures: Vec<Option<f32>> = seen.iter().map(|r| r.temperature).collect();
    assert_eq!(temperatures, [Some(0.0), None]);
    assert!(round.greedy);
    // The choice is not part of the conversation.
    assert_eq!(
        history(&chat),
        vec![
            (Role::User, "Is Paris an echo of Rome?".to_string()),
            (Role::Assistant, "Paris.".to_string()),
        ]
    );
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_that_matches_no_tool_is_answered_without_a_decision() {
    let mut chat = chat_with_grammar(&["Hello to you too!"]).await;
    let (outcome, _) = turn(&mut chat, "Hello there!").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (1, 0));
    let turn = &chat.engine.transcript().turns[0];
    assert!(!turn.tools_match);
    assert_eq!(turn.rounds[0].grammar, "call-or-answer");
    let seen = chat.seen.lock().unwrap().clone();
    assert!(!seen[0].messages[0].content.contains("answer_directly"));
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_explicit_decision_for_a_tool_runs_it_and_the_next_round_may_answer() {
    let c = call("fx__echo", r#"{"message": "hi"}"#);
    let mut chat = chat_with_grammar(&[&c, "It said hi."]).await;
    let (outcome, _) = turn(&mut chat, "Echo hi").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (2, 1));
    assert_eq!(outcome.answer, "It said hi.");
    let rounds = &chat.engine.transcript().turns[0].rounds;
    assert_eq!(
        [rounds[0].grammar.as_str(), rounds[1].grammar.as_str()],
        ["tool-or-answer_directly", "call-or-answer"]
    );
    assert!(rounds[0].decision.is_none());
    // After a result the model may answer, and the pseudo-tool is no longer a choice.
    let grammars = grammars_seen(&chat);
    assert!(!grammars[1].contains("answer_directly"), "{}", grammars[1]);
    // The round that had to call and the answer from its result are both greedy.
    let temperatures: Vec<Option<f32>> = chat
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.temperature)
        .collect();
    assert_eq!(temperatures, [Some(0.0), Some(0.0)]);
    assert_eq!([rounds[0].greedy, rounds[1].greedy], [true, true]);
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_call_twice_in_one_answer_runs_once() {
    let c = call("fx__echo", r#"{"message": "once"}"#);
    let twice = format!("{c}\n{c}");
    let mut chat = chat(scripted(&[&twice, "Done."]), false, true).await;
    let (outcome, events) = turn(&mut chat, "Echo once").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (2, 1));
    let calls = &chat.engine.transcript().turns[0].rounds[0].calls;
    assert_eq!(calls.len(), 2, "both calls are in the transcript");
    let outcomes: Vec<CallOutcome> = calls.iter().map(|c| c.outcome).collect();
    // In the model's order: the first runs, the second is its duplicate.
    assert_eq!(outcomes, [CallOutcome::Ok, CallOutcome::Duplicate]);
    assert!(calls[1].approval.is_none());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::Notice { message } if message.contains("runs once")))
    );
    chat.engine.into_sessions_shutdown().await;
}

/// A chat like [`chat_with_grammar`] with `after_result = "other-tools"` (what a tiny model gets).
async fn chat_excluding_answered(steps: &[&str]) -> Chat {
    let (backend, seen) =
        ScriptedBackend::new(steps.iter().map(|s| Step::Say(s.to_string())).collect(), 3);
    let settings = ChatSettings {
        tool_format: Auto::Set(ToolFormat::ToolCallJson),
        after_result: AfterResult::OtherTools,
        ..ChatSettings::default()
    };
    chat_with(
        (backend.with_grammar().shared(), seen),
        false,
        true,
        settings,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_answered_cannot_be_called_again_in_the_same_turn() {
    let c = call("fx__echo", r#"{"message": "hi"}"#);
    let mut chat = chat_excluding_answered(&[&c, "It said hi."]).await;
    let (outcome, _) = turn(&mut chat, "Echo hi").await;
    assert_eq!((outcome.rounds, outcome.tool_calls), (2, 1));
    assert_eq!(outcome.answer, "It said hi.");
    let turn = &chat.engine.transcript().turns[0];
    assert_eq!(turn.rounds[1].excluded, ["fx__echo"]);
    // The second round's grammar still offers the fixture's other tools, but not the one that
    // answered; the system prompt is the same in both rounds (its KV cache is reused).
    let grammars = grammars_seen(&chat);
    assert!(grammars[0].contains("fx__echo"), "{}", grammars[0]);
    assert!(
        !grammars[1].contains("fx__echo") && grammars[1].contains("fx__"),
        "{}",
        grammars[1]
    );
    let seen = chat.seen.lock().unwrap().clone();
    assert_eq!(seen[0].messages[0], seen[1].messages[0]);
    chat.engine.into_sessions_shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_chat_sheds_old_results_then_old_turns_and_says_so() {
    // The test double counts a token per 3 rendered characters in a 4096-token window; keeping
    // 3000 for the answer leaves the prompt 1096 tokens (~3300 characters): the system prompt,
    // the turn being answered (each call and result ~650 characters) and little else.
    let long = "word ".repeat(120);
    let mut steps: Vec<String> = Vec::new();
    for i in 0..6 {
        steps.push(call("fx__echo", &format!(r#"{{"message": "{i} {long}"}}"#)));
        steps.push(format!("Echoed {i}."));
    }
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let (backend, seen) =
        ScriptedBackend::new(steps.iter().map(|s| Step::Say(s.to_string())).collect(), 50);
    let settings = ChatSettings {
        tool_format: Auto::Set(ToolFormat::ToolCallJson),
        answer_reserve: 3000,
        ..ChatSettings::default()
    };
    let mut chat = chat_with_fixture(
        (backend.shared(), seen),
        false,
        true,
        settings,
        "allow = [\"echo\"]",
    )
    .await;
    let limit = 4096 - 3000;
    let mut notices = Vec::new();
    for i in 0..6 {
        let (outcome, events) = turn(&mut chat, &format!("Echo number {i}")).await;
        assert_eq!(outcome.answer, format!("Echoed {i}."));
        notices.extend(events.into_iter().filter_map(|e| match e {
            ChatEvent::Notice { message } if message.contains("context window") => Some(message),
            _ => None,
        }));
    }
    assert!(
        notices.iter().any(|n| n.contains("shortened")),
        "{notices:#?}"
    );
    assert!(
        notices.iter().any(|n| n.contains("dropped")),
        "{notices:#?}"
    );
    // Every prompt the model saw fit the budget (counted as the test double counts).
    let requests = chat.seen.lock().unwrap().clone();
    for r in &requests {
        let chars: usize = r
            .messages
            .iter()
            .map(|m| {
                format!("{}: {}\n", m.role.as_str(), m.content)
                    .chars()
                    .count()
            })
            .sum();
        assert!(
            chars.div_ceil(3) <= limit,
            "{chars} characters: {:#?}",
            r.messages
        );
    }
    // The turn being answered is whole: its question and its full result.
    let last = requests.last().unwrap();
    let n = last.messages.len();
    assert_eq!(last.messages[n - 3].content, "Echo number 5");
    assert!(last.messages[n - 1].content.contains(long.trim()));
    // What is left of the conversation starts at a question.
    assert_eq!(chat.engine.history()[0].role, Role::User);
    chat.engine.into_sessions_shutdown().await;
}
