//! `rkmcp formats infer|parse`: the real binary infers formats from template files and GGUF
//! model headers, and reads raw model output on stdin into JSON events.
use std::io::Write;
use std::process::Stdio;

use rkmcp_tests::*;
use serde_json::{Value, json};

/// A ChatML template whose calls are `[CALL]name[ARGS]{…}[/CALL]` (no format module has it).
const BRACKET_TEMPLATE: &str = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}{% if m.tool_calls %}{% for tc in m.tool_calls %}[CALL]{{ tc.function.name }}[ARGS]{{ tc.function.arguments|tojson }}[/CALL]{% endfor %}{% endif %}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}"#;

const TOOLS: &str = r#"[{"name": "set_timer", "inputSchema": {"type": "object", "properties": {"minutes": {"type": "integer"}, "label": {"type": "string"}}}}]"#;

fn parse(home: &std::path::Path, args: &[&str], input: &str) -> (Option<i32>, String, String) {
    let mut cmd = rkmcp_command(home, args);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rkmcp runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("rkmcp ends");
    (out.status.code(), stdout(&out), stderr(&out))
}

/// A GGUF file with only a header: the chat template and three tokens (BOS 0, EOS 1).
fn gguf_with_template(dir: &std::path::Path, template: &str) -> std::path::PathBuf {
    let mut b = Vec::new();
    let s = |b: &mut Vec<u8>, t: &str| {
        b.extend((t.len() as u64).to_le_bytes());
        b.extend(t.as_bytes());
    };
    b.extend(b"GGUF");
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(4u64.to_le_bytes());
    s(&mut b, "tokenizer.chat_template");
    b.extend(8u32.to_le_bytes());
    s(&mut b, template);
    s(&mut b, "tokenizer.ggml.tokens");
    b.extend(9u32.to_le_bytes());
    b.extend(8u32.to_le_bytes());
    b.extend(3u64.to_le_bytes());
    for t in ["<s>", "<|im_end|>", "x"] {
        s(&mut b, t);
    }
    s(&mut b, "tokenizer.ggml.bos_token_id");
    b.extend(4u32.to_le_bytes());
    b.extend(0u32.to_le_bytes());
    s(&mut b, "tokenizer.ggml.eos_token_id");
    b.extend(4u32.to_le_bytes());
    b.extend(1u32.to_le_bytes());
    let path = dir.join("bracket-model.gguf");
    std::fs::write(&path, b).expect("write gguf");
    path
}

#[test]
fn infer_prints_the_description_of_a_template_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.jinja", BRACKET_TEMPLATE);
    let out = run_rkmcp(
        dir.path(),
        &[
            "--json",
            "formats",
            "infer",
            "--template",
            t.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let f: Value = serde_json::from_str(&stdout(&out)).expect("JSON description");
    assert_eq!(f["call_open"], "[CALL]");
    assert_eq!(f["call_close"], "[/CALL]");
    assert_eq!(f["call"]["name_suffix"], "[ARGS]");
    assert_eq!(f["end_of_turn"][0], "<|im_end|>");
    let human = run_rkmcp(
        dir.path(),
        &["formats", "infer", "--template", t.to_str().unwrap()],
    );
    assert!(
        stdout(&human).contains("[CALL]get_weather[ARGS]{\"city\": \"Paris\"}[/CALL]"),
        "{}",
        stdout(&human)
    );
}

#[test]
fn infer_reads_a_gguf_models_template_and_says_why_one_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let model = gguf_with_template(dir.path(), BRACKET_TEMPLATE);
    let out = run_rkmcp(
        dir.path(),
        &[
            "--json",
            "formats",
            "infer",
            "--model",
            model.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let f: Value = serde_json::from_str(&stdout(&out)).expect("JSON description");
    assert_eq!(f["call_open"], "[CALL]");
    // A ChatML template without tool calls (SmolLM2's kind).
    let plain = gguf_with_template(
        dir.path(),
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
    );
    let out = run_rkmcp(
        dir.path(),
        &["formats", "infer", "--model", plain.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("rendered no tool call"),
        "{}",
        stderr(&out)
    );
    let missing = run_rkmcp(dir.path(), &["formats", "infer"]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
}

#[test]
fn parse_prints_typed_calls_reasoning_text_and_malformed_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.jinja", BRACKET_TEMPLATE);
    let tools = write(dir.path(), "tools.json", TOOLS);
    let output = "<think>need a timer</think>Sure.[CALL]set_timer[ARGS]{\"minutes\": 15, \"label\": \"tea\"}[/CALL] and [CALL]set_timer[ARGS]{oops}[/CALL]<|im_end|>";
    let (code, out, err) = parse(
        dir.path(),
        &[
            "formats",
            "parse",
            "--template",
            t.to_str().unwrap(),
            "--tools",
            tools.to_str().unwrap(),
        ],
        output,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("inferred from the template"), "{err}");
    let events: Value = serde_json::from_str(&out).expect("JSON events");
    assert_eq!(events[0], json!({"reasoning": "need a timer"}));
    assert_eq!(events[1], json!({"text": "Sure."}));
    assert_eq!(
        events[2],
        json!({"tool_call": {"id": "call_1", "name": "set_timer", "arguments": {"minutes": 15, "label": "tea"}}})
    );
    assert_eq!(events[3], json!({"text": " and "}));
    assert_eq!(
        events[4]["malformed"]["raw"],
        "[CALL]set_timer[ARGS]{oops}[/CALL]"
    );
    assert_eq!(events.as_array().map(Vec::len), Some(5), "{events:#}");
}

#[test]
fn parse_with_a_format_module_and_with_an_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = parse(
        dir.path(),
        &["formats", "parse", "--format", "hermes"],
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>",
    );
    assert_eq!(code, Some(0), "{err}");
    let events: Value = serde_json::from_str(&out).expect("JSON events");
    assert_eq!(events[0]["tool_call"]["name"], "f");
    let (code, _, err) = parse(dir.path(), &["formats", "parse", "--format", "nope"], "");
    assert_eq!(code, Some(2));
    assert!(err.contains("unknown tool-call format `nope`"), "{err}");
}
