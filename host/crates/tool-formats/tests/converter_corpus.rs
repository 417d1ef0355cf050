//! Every schema converter against the shared converter corpus (`converter-corpus/`): tool lists
//! (edge cases, and the tool lists of real MCP servers) and tool results (text, errors, images,
//! audio, embedded resources, links, structured content, a result far over the limit). The
//! schema-converter plugin is checked against the same corpus in
//! `tests/integration/plugin_default_plugins.rs` (component output = native output).
use std::path::PathBuf;

use rkmcp_tool_formats::convert::{
    CallToolResultLike, PromptStyle, ResultOptions, ToolDef, example_call, format_tool_result_with,
    parse_tool_result_json, parse_tools_json, render_tool_section_for, result_body,
    rkllm_function_tools_json,
};
use rkmcp_tool_formats::{DetectorEvent, ToolCall, ToolFormat, detect_all};
use serde_json::{Value, json};

fn corpus_dir(kind: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("converter-corpus")
        .join(kind)
}

fn files(kind: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(corpus_dir(kind))
        .expect("converter corpus folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("corpus file"))
        })
        .collect();
    out.sort();
    out
}

fn tool_sets() -> Vec<(String, Vec<ToolDef>)> {
    let sets: Vec<_> = files("tools")
        .into_iter()
        .map(|(name, text)| {
            let tools = parse_tools_json(&text).unwrap_or_else(|e| panic!("tools/{name}: {e}"));
            (name, tools)
        })
        .collect();
    assert!(
        sets.len() >= 3,
        "the corpus has edge cases and real servers' tools"
    );
    sets
}

fn results() -> Vec<(String, CallToolResultLike)> {
    files("results")
        .into_iter()
        .map(|(name, text)| {
            let r = parse_tool_result_json(&text).unwrap_or_else(|e| panic!("results/{name}: {e}"));
            (name, r)
        })
        .collect()
}

/// `s` as the inside of a JSON string literal.
fn json_inside(s: &str) -> String {
    let quoted = json!(s).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Arguments a call of `tool` could carry: each required property with a value of its type.
fn sample_arguments(tool: &ToolDef) -> Value {
    let props = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let required = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut args = serde_json::Map::new();
    for key in required.iter().filter_map(Value::as_str) {
        let ty = props
            .and_then(|p| p.get(key))
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match ty {
            "integer" | "number" => json!(3),
            "boolean" => json!(true),
            "array" => json!(["a", "b"]),
            "object" => json!({"k": "v"}),
            _ => json!("Genève \"centre\"\nline 2"),
        };
        args.insert(key.to_string(), value);
    }
    Value::Object(args)
}

#[test]
fn every_prompt_section_lists_every_tool_in_every_style_and_format() {
    for (set, tools) in tool_sets() {
        for &style in PromptStyle::ALL {
            for &format in ToolFormat::all() {
                let section = render_tool_section_for(style, format, &tools);
                for t in &tools {
                    assert!(
                        section.contains(&t.name),
                        "{set}/{style}/{format}: `{}` missing from\n{section}",
                        t.name
                    );
                }
                // Descriptions reach the model (their first line at least).
                for d in tools.iter().filter_map(|t| t.description.as_deref()) {
                    let first = d.lines().next().unwrap_or_default().trim();
                    assert!(
                        section.contains(first) || section.contains(&json_inside(first)),
                        "{set}/{style}/{format}: description {first:?} missing"
                    );
                }
            }
        }
    }
}

#[test]
fn the_example_call_each_format_teaches_is_read_back_by_its_detector() {
    for (set, tools) in tool_sets() {
        for &format in ToolFormat::all() {
            for t in &tools {
                let args = sample_arguments(t);
                let example = example_call(format, &t.name, &args);
                let calls: Vec<ToolCall> = detect_all(format, &example)
                    .into_iter()
                    .filter_map(|e| match e {
                        DetectorEvent::ToolCall(c) => Some(c),
                        DetectorEvent::Malformed { error, .. } => {
                            panic!("{set}/{format}: {example} is malformed: {error}")
                        }
                        DetectorEvent::Text(_) => None,
                    })
                    .collect();
                assert_eq!(calls.len(), 1, "{set}/{format}: {example}");
                assert_eq!(calls[0].name, t.name, "{set}/{format}: {example}");
                assert_eq!(calls[0].arguments, args, "{set}/{format}: {example}");
            }
        }
    }
}

#[test]
fn rkllm_function_tools_carry_every_tool_with_its_schema() {
    for (set, tools) in tool_sets() {
        let text = rkllm_function_tools_json(&tools);
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{set}: {e}"));
        let items = v.as_array().unwrap_or_else(|| panic!("{set}: {v}"));
        assert_eq!(items.len(), tools.len(), "{set}");
        for (item, t) in items.iter().zip(&tools) {
            assert_eq!(item["type"], "function", "{set}");
            assert_eq!(item["function"]["name"], t.name.as_str(), "{set}");
            assert_eq!(item["function"]["parameters"], t.input_schema, "{set}");
        }
    }
}

#[test]
fn every_result_is_given_back_in_every_format_described_and_bounded() {
    let call = ToolCall {
        id: "call00007".into(),
        name: "files__read_text_file".into(),
        arguments: json!({"path": "/data/report.csv"}),
    };
    let opts = ResultOptions { max_chars: 2000 };
    for (name, result) in results() {
        let body = result_body(&result, &opts);
        // Some formats carry the body JSON-encoded.
        let escaped = json_inside(&body);
        for &format in ToolFormat::all() {
            let out = format_tool_result_with(format, &call, &result, &opts);
            assert!(
                out.contains(&body) || out.contains(&escaped),
                "{name}/{format}: the body is not in\n{out}"
            );
            // Bounded: the limit plus the notice and the format's wrapper.
            assert!(
                out.chars().count() < opts.max_chars + 400,
                "{name}/{format}: {} chars",
                out.chars().count()
            );
        }
        match name.as_str() {
            "large-text" => assert!(
                body.contains("[… truncated: showing the first 2000 of"),
                "{body}"
            ),
            "error" => assert!(body.starts_with("Error: Access denied"), "{body}"),
            "mixed-media" => {
                // Binary content is described, never dumped; text resources are included.
                assert!(!body.contains("iVBORw0KGgo"), "{body}");
                assert!(!body.contains("UklGR") && !body.contains("UEsDB"), "{body}");
                assert!(body.contains("[image: image/png, "), "{body}");
                assert!(body.contains("[audio: audio/wav, "), "{body}");
                assert!(body.contains("north,17"), "{body}");
                assert!(body.contains("application/zip"), "{body}");
                assert!(
                    body.contains("readme.md") && body.contains("2.0 KiB"),
                    "{body}"
                );
            }
            "structured" => assert!(body.contains("42"), "{body}"),
            "text" => assert!(body.contains("2026-11-23T20:15:02+09:00"), "{body}"),
            _ => {}
        }
    }
}
