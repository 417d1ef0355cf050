//! A call written a piece at a time (`[chat] argument_steps = true`): the real embedded model
//! (SmolLM2-135M) names the tool in one short generation, then writes each argument in one of
//! its own, with the real server-everything answering the call.
use rkmcp_tests::*;
use serde_json::Value;

fn config(home: &std::path::Path) -> String {
    let mut toml = everything_entry("allow = [\"echo\", \"get-sum\"]");
    toml += "[chat]\ntool_format = \"tool-call-json\"\nargument_steps = true\n\n[chat.approval]\n";
    toml += "auto_approve = [\"everything/echo\", \"everything/get-sum\"]\n";
    write(home, "rkmcp.toml", &toml).display().to_string()
}

/// `rkmcp ask --json QUESTION`: the transcript's first turn.
fn first_turn(question: &str) -> Value {
    let home = tempfile::tempdir().unwrap();
    let config = config(home.path());
    ask_json(home.path(), &config, &[], question)["transcript"]["turns"][0].clone()
}

#[test]
fn the_named_tools_arguments_are_written_one_at_a_time_and_the_call_runs() {
    let turn = first_turn("What is 19 plus 23? Use the get-sum tool.");
    let first = &turn["rounds"][0];
    assert_eq!(first["grammar"], "named-tool, in steps", "{first:#}");
    let call = &first["calls"][0];
    assert_eq!(call["name"], "everything__get-sum", "{first:#}");
    assert_eq!(call["outcome"], "ok", "{call:#}");
    // Both required numbers, each written in its own step; the history keeps the format's own
    // text of the call, not the steps' scratch lines.
    let args = call["arguments"].as_object().expect("arguments");
    let mut keys: Vec<&str> = args.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["a", "b"], "{call:#}");
    let mut values: Vec<i64> = args.values().filter_map(Value::as_i64).collect();
    values.sort_unstable();
    assert_eq!(values, [19, 23], "the message's numbers, copied: {call:#}");
    let raw = first["raw"].as_str().unwrap_or_default();
    assert!(
        raw.starts_with("[TOOL_CALL]{\"name\": \"everything__get-sum\"") && !raw.contains("//"),
        "{raw}"
    );
    eprintln!(
        "get-sum in steps: {} → {}",
        call["arguments"], call["fed_back"]
    );
}

/// A message that names no tool still gets the model's own decision, in steps: a tool, or
/// `answer_directly` and then an answer in which no scratch text shows.
#[test]
fn the_decision_is_a_step_too_and_an_answer_shows_no_scratch() {
    let question = "Write a short poem about the echo of the mountains.";
    let turn = first_turn(question);
    let first = &turn["rounds"][0];
    let grammar = first["grammar"].as_str().unwrap_or_default();
    assert!(
        grammar.starts_with("tool-or-answer_directly, in steps"),
        "{first:#}"
    );
    if let Some(decision) = first.get("decision") {
        assert_eq!(
            decision.as_str(),
            Some("[TOOL_CALL]{\"name\": \"answer_directly\", \"arguments\": {}}[END_TOOL_CALL]"),
            "{first:#}"
        );
        let answer = turn["answer"].as_str().unwrap_or_default();
        assert!(
            !answer.trim().is_empty() && !answer.contains("// "),
            "{turn:#}"
        );
    } else {
        assert_eq!(first["calls"][0]["name"], "everything__echo", "{first:#}");
    }
}
