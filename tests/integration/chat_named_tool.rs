//! A tool the user names gets called: the real embedded model (SmolLM2-135M) with the real
//! server-everything and mcp-server-time, as in the quick start. Left to its `answer_directly`
//! decision the model wrote a Python function for "What is 19 plus 23? Use the get-sum tool.";
//! with the tool named, the first round may only call it.
use std::io::Write;
use std::process::Stdio;

use rkmcp_tests::*;
use serde_json::Value;

/// The quick start's servers and call format (without its plugins, which tests install apart):
/// server-everything's echo, get-sum and get-tiny-image, and the time server.
fn quickstart_config(home: &std::path::Path) -> String {
    let mut toml = everything_entry("allow = [\"echo\", \"get-sum\", \"get-tiny-image\"]");
    let time = time_server().display().to_string();
    toml += &stdio_entry(
        "time",
        &time,
        &["--local-timezone".into(), "UTC".into()],
        "",
    );
    toml += "[chat]\ntool_format = \"tool-call-json\"\n\n[chat.approval]\n";
    toml += "auto_approve = [\"time/*\", \"everything/echo\", \"everything/get-sum\"]\n";
    write(home, "rkmcp.toml", &toml).display().to_string()
}

/// `rkmcp ask --json QUESTION` with the quick start's config; the report.
fn ask(question: &str) -> Value {
    let home = tempfile::tempdir().unwrap();
    let config = quickstart_config(home.path());
    ask_json(home.path(), &config, &[], question)
}

/// The first round of the transcript's first turn called everything__get-sum (held to it by
/// the `named-tool` grammar) and the server answered; the arguments are reported.
fn assert_get_sum_called(turn: &Value, mention: &str) {
    assert_eq!(
        turn["named_tools"],
        serde_json::json!([{"tool": "everything__get-sum", "mention": mention}]),
        "{turn:#}"
    );
    let first = &turn["rounds"][0];
    assert_eq!(first["grammar"], "named-tool", "{first:#}");
    assert!(first.get("decision").is_none(), "{first:#}");
    let call = &first["calls"][0];
    assert_eq!(call["name"], "everything__get-sum", "{first:#}");
    assert_eq!(call["outcome"], "ok", "{call:#}");
    eprintln!(
        "get-sum called with {} (19 and 23 asked): {}",
        call["arguments"], call["fed_back"]
    );
}

#[test]
fn chat_calls_the_get_sum_tool_the_user_named() {
    let home = tempfile::tempdir().unwrap();
    let config = quickstart_config(home.path());
    let saved = home.path().join("saved.json");
    let mut args = vec!["--config", &config, "chat", "--max-tokens", "64"];
    args.extend_from_slice(GREEDY);
    let mut child = rkmcp_command(home.path(), &args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start rkmcp chat");
    let script = format!(
        "What is 19 plus 23? Use the get-sum tool.\n/save {}\n/exit\n",
        saved.display()
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (so, se) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "stdout: {so}\nstderr: {se}");
    assert!(
        se.contains("[MCP: Calling tool 'get-sum' on everything"),
        "stderr: {se}"
    );
    let transcript: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).expect("/save wrote nothing"))
            .unwrap();
    assert_get_sum_called(&transcript["turns"][0], "get-sum");
}

#[test]
fn ask_calls_a_tool_named_with_spaces() {
    let report = ask("What is 19 plus 23? Use the get sum tool.");
    assert_get_sum_called(&report["transcript"]["turns"][0], "get sum");
}

/// A question that names no tool keeps the model's own decision (a tool or `answer_directly`),
/// and so does one that only contains a tool's name as a word.
#[test]
fn ask_without_a_named_tool_keeps_the_models_decision() {
    for question in [
        "What is the sum of 19 and 23?",
        "Write a short poem about the echo of the mountains.",
    ] {
        let report = ask(question);
        let turn = &report["transcript"]["turns"][0];
        assert!(turn.get("named_tools").is_none(), "{question}: {turn:#}");
        let first = &turn["rounds"][0];
        assert_eq!(
            first["grammar"]
                .as_str()
                .unwrap_or_default()
                .split(',')
                .next(),
            Some("tool-or-answer_directly"),
            "{question}: {first:#}"
        );
        let called: Vec<&Value> = first["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| &c["name"])
            .collect();
        eprintln!(
            "{question:?}: {} ({called:?})",
            if first.get("decision").is_some() {
                "answer_directly"
            } else {
                "a tool"
            }
        );
    }
}
