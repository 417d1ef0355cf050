//! End to end with the real embedded model (SmolLM2-135M-Instruct, llama.cpp on the CPU, installed
//! by scripts/setup) and real MCP servers, through the `rkmcp` binary: `ask` calls the real
//! `mcp-server-time` and answers from its result; `chat` reads messages and slash commands from
//! piped input. Greedy decoding keeps the model's output repeatable.
use std::io::Write;
use std::process::Stdio;

use rkmcp_tests::*;
use serde_json::Value;

const FIXTURE: &str = env!("CARGO_BIN_EXE_rkmcp-fixture-server");

/// The question of the quickstart. It names the IANA zone: SmolLM2-135M copies a zone from the
/// question but does not know that Tokyo is "Asia/Tokyo" (it asks for "UTC").
const TOKYO: &str = "What is the current time in the Asia/Tokyo timezone?";

/// When the time server's clock stands still. Greedy decoding alone did not make these tests
/// repeatable: the tiny model copies some timestamps and garbles others (at 20:20 Tokyo time on
/// 2026-11-24 it answered "2019-08-31T20:45:56"), so with the wall clock they failed by the hour.
const STOPPED_AT: &str = "2031-05-17T03:42:08Z";

fn time_config(home: &std::path::Path) -> String {
    // A stopped clock: the answer then depends on nothing but the code (see time_at.py).
    let (python, args) = time_server_at(STOPPED_AT, &["--local-timezone", "UTC"]);
    let toml = stdio_entry("time", &python, &args, "");
    write(home, "rkmcp.toml", &toml).display().to_string()
}

/// Every call the transcript records, over all turns and rounds.
fn calls(transcript: &Value) -> Vec<Value> {
    transcript["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["rounds"].as_array().cloned().unwrap_or_default())
        .flat_map(|r| r["calls"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn ask_answers_the_time_in_tokyo_from_the_real_time_server() {
    let home = tempfile::tempdir().unwrap();
    let config = time_config(home.path());
    assert_tokyo_answered_from_the_time_server(&ask_tokyo(home.path(), &config));
}

/// `ask`'s report for TOKYO with the greedy flags and `config`, in `home`.
fn ask_tokyo(home: &std::path::Path, config: &str) -> Value {
    ask_json(home, config, &["--yes", "--tool-choice", "required"], TOKYO)
}

/// The first round's prompt tokens and how many of them came from a KV cache.
fn first_prompt(report: &Value) -> (u64, u64) {
    let stats = &report["transcript"]["turns"][0]["rounds"][0]["stats"];
    let count = |k: &str| {
        stats[k]
            .as_u64()
            .unwrap_or_else(|| panic!("no {k} in {stats:#}"))
    };
    (count("prompt_tokens"), count("cached_tokens"))
}

/// The second run in the same home starts from the KV state the first kept on disk: most of
/// its first prompt (the system prompt and the tool list) is not processed again, and the
/// answer still comes from the server. `prompt_cache = false` turns it off.
#[test]
fn a_second_run_takes_the_system_prompt_from_the_prompt_cache() {
    let home = tempfile::tempdir().unwrap();
    let config = time_config(home.path());
    let first = ask_tokyo(home.path(), &config);
    let (tokens, cached) = first_prompt(&first);
    assert_eq!(cached, 0, "nothing is cached before the first run");
    let kept: Vec<_> = std::fs::read_dir(home.path().join("cache/rkmcp/prompt-cache"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(kept.len(), 1, "one state file: {kept:?}");

    let second = ask_tokyo(home.path(), &config);
    let (tokens_again, cached) = first_prompt(&second);
    assert_eq!(tokens_again, tokens);
    assert!(
        cached * 10 >= tokens * 9,
        "{cached} of {tokens} prompt tokens from the cache"
    );
    assert_tokyo_answered_from_the_time_server(&second);
    let asked = |r: &Value| -> Vec<(Value, Value)> {
        calls(&r["transcript"])
            .iter()
            .map(|c| (c["tool"].clone(), c["arguments"].clone()))
            .collect()
    };
    assert_eq!(asked(&second), asked(&first), "the same calls");

    let off = write(
        home.path(),
        "off.toml",
        &format!(
            "{}\n[model]\nprompt_cache = false\n",
            std::fs::read_to_string(&config).unwrap()
        ),
    );
    let (_, cached) = first_prompt(&ask_tokyo(home.path(), &off.display().to_string()));
    assert_eq!(cached, 0, "prompt_cache = false");
}

/// With nothing but the question: the explicit decision, the tool shortlist and greedy tool
/// rounds (the defaults) make the model call the time tool and answer from its result, though
/// the configured sampling (temperature 0.7) is not greedy.
#[test]
fn ask_with_the_default_settings_calls_the_time_tool_and_answers_from_it() {
    let home = tempfile::tempdir().unwrap();
    let config = time_config(home.path());
    let args = [
        "--config",
        &config,
        "ask",
        "--json",
        "--yes",
        "--max-tokens",
        "64",
        "--threads",
        "1",
        "--ctx",
        "2048",
        TOKYO,
    ];
    let out = run_rkmcp(home.path(), &args);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("ask --json printed no JSON ({e}): {}", stdout(&out)));
    let rounds = report["transcript"]["turns"][0]["rounds"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        rounds[0]["grammar"], "tool-or-answer_directly",
        "{rounds:#?}"
    );
    assert!(
        rounds.iter().all(|r| r["greedy"] == true),
        "every round of a tool-using turn is greedy: {rounds:#?}"
    );
    assert_tokyo_answered_from_the_time_server(&report);
}

/// The model called the time tool for Asia/Tokyo, the real server answered, and the answer
/// repeats what the server said.
fn assert_tokyo_answered_from_the_time_server(report: &Value) {
    let transcript = &report["transcript"];

    // The model called the time tool for Tokyo and the real server answered.
    let calls = calls(transcript);
    let call = calls
        .iter()
        .find(|c| c["tool"] == "get_current_time" && c["outcome"] == "ok")
        .unwrap_or_else(|| panic!("no successful get_current_time call: {transcript:#}"));
    assert_eq!(call["server"], "time");
    assert_eq!(call["arguments"]["timezone"], "Asia/Tokyo", "{call:#}");
    let result_text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let result: Value = serde_json::from_str(result_text)
        .unwrap_or_else(|e| panic!("the time server's result is not JSON ({e}): {result_text}"));
    let datetime = result["datetime"].as_str().unwrap_or_default();
    assert_eq!(
        datetime, "2031-05-17T12:42:08+09:00",
        "the stopped clock, in Tokyo"
    );
    // What the model was given back contains the server's answer.
    assert!(
        call["fed_back"].as_str().unwrap_or("").contains(datetime),
        "{call:#}"
    );

    // The result reached the answer: the model repeats the time it was told (HH:MM), the date or
    // the whole timestamp.
    let answer = report["answer"].as_str().unwrap_or_default();
    let hh_mm = datetime.get(11..16).unwrap_or("??:??");
    let date = datetime.get(..10).unwrap_or("????");
    assert!(
        answer.contains(hh_mm) || answer.contains(date),
        "answer does not use the tool's result {datetime}: {answer:?}"
    );
    assert_eq!(report["cancelled"], false);
}

#[test]
fn ask_streams_the_answer_to_stdout_and_status_lines_to_stderr() {
    let home = tempfile::tempdir().unwrap();
    let config = time_config(home.path());
    let mut args = vec![
        "--config",
        &config,
        "ask",
        "--yes",
        "--tool-choice",
        "required",
        "--max-tokens",
        "64",
        TOKYO,
    ];
    args.extend_from_slice(GREEDY);
    let out = run_rkmcp(home.path(), &args);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let (so, se) = (stdout(&out), stderr(&out));
    assert!(
        se.contains("[MCP: Calling tool 'get_current_time' on time"),
        "stderr: {se}"
    );
    assert!(
        !so.contains("[MCP:"),
        "status lines leaked into stdout: {so}"
    );
    // No call markup reaches the user.
    assert!(
        !so.contains("<tool_call>") && !so.contains("TOOL_CALL"),
        "{so}"
    );
    assert!(!so.trim().is_empty(), "no answer on stdout; stderr: {se}");
}

#[test]
fn ask_without_a_terminal_denies_calls_that_need_a_person() {
    // The fixture's tools carry no annotations, so by default a person must approve them; `ask`
    // has nobody to ask and no --yes. The model is made to call (tool_choice = required).
    let home = tempfile::tempdir().unwrap();
    let toml = stdio_entry("fx", FIXTURE, &[], "allow = [\"echo\"]");
    let config = write(home.path(), "rkmcp.toml", &toml)
        .display()
        .to_string();
    let mut args = vec![
        "--config",
        &config,
        "ask",
        "--json",
        "--tool-choice",
        "required",
        "--max-rounds",
        "2",
        "--max-tokens",
        "48",
        "Echo the word banana.",
    ];
    args.extend_from_slice(GREEDY);
    let out = run_rkmcp(home.path(), &args);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let calls = calls(&report["transcript"]);
    let first = calls
        .first()
        .unwrap_or_else(|| panic!("the model made no call: {report:#}"));
    assert_eq!(first["outcome"], "denied", "{first:#}");
    let reason = first["approval"]["deny"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("--yes") && reason.contains("fx/echo"),
        "the denial should say how to allow it: {first:#}"
    );
    assert!(first.get("duration_ms").is_none(), "a denied call ran");
}

#[test]
fn chat_reads_messages_and_slash_commands_from_piped_input() {
    let home = tempfile::tempdir().unwrap();
    let toml = stdio_entry("fx", FIXTURE, &[], "allow = [\"echo\"]");
    let config = write(home.path(), "rkmcp.toml", &toml)
        .display()
        .to_string();
    let saved = home.path().join("saved.json");
    let mut args = vec!["--config", &config, "chat", "--max-tokens", "16"];
    args.extend_from_slice(GREEDY);
    let mut child = rkmcp_command(home.path(), &args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start rkmcp chat");
    let script = format!(
        "/tools\n/servers\n/tolls\n/resource fixture://doc/3\nWhat does the resource say?\n\"\"\"\nfirst line\nsecond line\n\"\"\"\n/save {}\n/exit\n",
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
    // /tools and /servers print listings; a typo gets a suggestion and the chat goes on.
    assert!(so.contains("fx__echo"), "{so}");
    assert!(so.contains("rkmcp-fixture-server"), "{so}");
    assert!(se.contains("did you mean /tools?"), "{se}");

    // The transcript has the resource, both questions (the block as one message) and answers.
    let transcript: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).expect("/save wrote nothing"))
            .unwrap();
    let messages = transcript["messages"].as_array().unwrap();
    let contents: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        contents.contains(&(
            "user",
            "Resource fixture://doc/3:\ncontents of fixture://doc/3"
        )),
        "{contents:#?}"
    );
    assert!(
        contents.contains(&("user", "What does the resource say?")),
        "{contents:#?}"
    );
    assert!(
        contents.contains(&("user", "first line\nsecond line")),
        "{contents:#?}"
    );
    assert_eq!(transcript["turns"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        contents.iter().filter(|(r, _)| *r == "assistant").count(),
        2,
        "{contents:#?}"
    );
}
