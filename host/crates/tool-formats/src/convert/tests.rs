use std::collections::HashSet;

use serde_json::json;

use super::*;
use crate::{DetectorEvent, ToolCall, detect_all};

fn tools() -> Vec<ToolDef> {
    serde_json::from_value(json!([
        {
            "name": "get_weather",
            "description": "Get the current weather\nfor a city.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            },
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "search.files",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": ["string", "null"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "limit": {"type": "number"},
                    "exact": {"type": "boolean"},
                    "filter": {"type": "object", "properties": {"ext": {"const": "rs"}}},
                    "any": {}
                }
            }
        },
        {"name": "ping"}
    ]))
    .unwrap()
}

#[test]
fn tool_defs_deserialize_from_mcp_json() {
    let t = tools();
    assert_eq!(t[0].annotations, Some(json!({"readOnlyHint": true})));
    assert_eq!(t[1].description, None);
    assert_eq!(
        t[2].input_schema,
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn rkllm_json_is_openai_style() {
    let v: Value = serde_json::from_str(&rkllm_function_tools_json(&tools())).unwrap();
    assert_eq!(v[0]["type"], "function");
    assert_eq!(v[0]["function"]["name"], "get_weather");
    assert_eq!(v[0]["function"]["parameters"]["required"], json!(["city"]));
    assert!(v[1]["function"].get("description").is_none());
    assert_eq!(v.as_array().map(Vec::len), Some(3));
}

#[test]
fn every_format_example_is_detected_by_its_own_detector() {
    let t = tools();
    for f in ToolFormat::all() {
        let text = call_instructions(*f, &t);
        let args = json!({"argument_name": "value"});
        let example = example_call(*f, EXAMPLE_TOOL, &args);
        assert!(text.contains(&example), "{f}: {text}");
        let mut events = detect_all(*f, &example);
        // Kimi carries its own call id (`functions.NAME:0`).
        if let [DetectorEvent::ToolCall(c)] = events.as_mut_slice()
            && c.id.starts_with("functions.")
        {
            c.id = "call_1".into();
        }
        assert_eq!(
            events,
            vec![DetectorEvent::ToolCall(ToolCall {
                id: "call_1".into(),
                name: EXAMPLE_TOOL.into(),
                arguments: args.clone()
            })],
            "{f}: {example}"
        );
    }
}

#[test]
fn prompt_styles_render_tools() {
    let t = tools();
    let hermes = render_tool_section(PromptStyle::Hermes, &t);
    assert!(
        hermes.contains("<tools>\n{")
            && hermes.contains("</tools>")
            && hermes.contains("<tool_call>")
    );
    let line = hermes
        .lines()
        .find(|l| l.contains("get_weather") && l.starts_with('{'))
        .unwrap();
    let spec: Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        spec["function"]["parameters"]["properties"]["city"]["type"],
        "string"
    );

    let llama = render_tool_section(PromptStyle::Llama3, &t);
    assert!(
        llama.contains(r#"{"name": "tool_name", "parameters": {"argument_name": "value"}}"#),
        "{llama}"
    );

    let md = render_tool_section(PromptStyle::Markdown, &t);
    assert!(
        md.contains("- **get_weather**: Get the current weather for a city."),
        "{md}"
    );
    assert!(
        md.contains("  - `city` (string, required): City name"),
        "{md}"
    );
    assert!(
        md.contains(
            r#"[TOOL_CALL]{"name": "tool_name", "arguments": {"argument_name": "value"}}[END_TOOL_CALL]"#
        ),
        "{md}"
    );

    assert_eq!(
        compact_signature(&t[0]),
        "get_weather(city: string, days?: integer, unit?: \"celsius\"|\"fahrenheit\") — Get the current weather for a city."
    );
    // Parameters in the schema's own order (serde_json keeps object order: llguidance turns
    // on its `preserve_order`).
    assert_eq!(
        compact_signature(&t[1]),
        "search.files(query?: string|null, tags?: array<string>, limit?: number, exact?: boolean, filter?: object, any?: any)"
    );
    let compact = render_tool_section(PromptStyle::Compact, &t);
    assert!(compact.lines().count() < 10, "{compact}");
    for s in PromptStyle::ALL {
        assert_eq!(s.to_string().parse::<PromptStyle>(), Ok(*s));
    }
    assert!("nope".parse::<PromptStyle>().unwrap_err().contains("nope"));
}

#[test]
fn format_defaults_pick_a_style_and_exact_syntax() {
    let t = tools();
    let p = render_prompt_for_format(ToolFormat::Qwen3Coder, &t);
    assert!(
        p.contains("<tools>") && p.contains("<function=tool_name>"),
        "{p}"
    );
    let p = render_prompt_for_format(ToolFormat::Mistral, &t);
    assert!(
        p.contains("## Available tools") && p.contains("[TOOL_CALLS]["),
        "{p}"
    );
    let p = render_tool_section_for(PromptStyle::Compact, ToolFormat::Hermes, &t);
    assert!(
        p.starts_with("Tools:\nget_weather(") && p.contains("<tool_call>"),
        "{p}"
    );
}

/// Every rule is defined once, `root` exists, and every referenced rule name is defined.
fn check_gbnf(g: &str) -> Result<(), String> {
    let mut defined = HashSet::new();
    let mut refs = Vec::new();
    for (n, line) in g.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (name, body) = line
            .split_once(" ::= ")
            .ok_or(format!("line {n} is not a rule: {line}"))?;
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("bad rule name `{name}`"));
        }
        if !defined.insert(name.to_string()) {
            return Err(format!("rule `{name}` defined twice"));
        }
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' | '[' | '{' => {
                    let close = match c {
                        '"' => '"',
                        '[' => ']',
                        _ => '}',
                    };
                    let mut closed = false;
                    while let Some(d) = chars.next() {
                        if d == '\\' {
                            chars.next();
                        } else if d == close {
                            closed = true;
                            break;
                        }
                    }
                    if !closed {
                        return Err(format!("unclosed `{c}` in rule `{name}`"));
                    }
                }
                c if c.is_ascii_alphanumeric() || c == '-' => {
                    let mut id = c.to_string();
                    while let Some(&d) = chars.peek() {
                        if d.is_ascii_alphanumeric() || d == '-' {
                            id.push(d);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    refs.push((name.to_string(), id));
                }
                _ => {}
            }
        }
    }
    if !defined.contains("root") {
        return Err("no root rule".into());
    }
    for (rule, r) in refs {
        if !defined.contains(&r) {
            return Err(format!("rule `{rule}` references undefined `{r}`"));
        }
    }
    Ok(())
}

#[test]
fn gbnf_grammars_are_well_formed() {
    let t = tools();
    let mut with_grammar = 0;
    for f in ToolFormat::all() {
        let Some(g) = gbnf_grammar(*f, &t) else {
            continue;
        };
        with_grammar += 1;
        check_gbnf(&g).unwrap_or_else(|e| panic!("{f}: {e}\n{g}"));
        assert!(
            g.contains(r#""\"get_weather\"""#) && g.contains(r#""\"search.files\"""#),
            "{f}:\n{g}"
        );
        assert!(
            g.contains(r#"("\"celsius\"" | "\"fahrenheit\"")"#),
            "{f}: enum\n{g}"
        );
        assert!(g.contains(r#""\"rs\"""#), "{f}: const\n{g}");
    }
    assert!(with_grammar >= 3);
    for f in [
        ToolFormat::ToolCallJson,
        ToolFormat::Hermes,
        ToolFormat::PlainJson,
    ] {
        assert!(gbnf_grammar(f, &t).is_some(), "{f}");
    }
    assert_eq!(gbnf_grammar(ToolFormat::Hermes, &[]), None);
    let g = gbnf_grammar(ToolFormat::Hermes, &t).unwrap();
    assert!(g.starts_with("root ::= calls | answer\n"), "{g}");
    assert!(g.contains(r#"calls ::= "<tool_call>""#));
    assert!(g.contains("answer ::= [^< \\t\\n] .*"), "{g}");
    // Required `city` comes first and is not optional; `days` and `unit` are optional.
    let weather = g
        .lines()
        .find(|l| l.starts_with("args-get-weather ::="))
        .unwrap();
    assert!(
        weather.contains(r#""{" ws "\"city\"" ws ":" ws string ws (","#),
        "{weather}"
    );
    let llama = gbnf_grammar(ToolFormat::Llama3, &t).unwrap();
    assert!(llama.contains(r#""\"parameters\"""#));
    check_gbnf("root ::= x\n").unwrap_err();
    check_gbnf("a ::= \"x\"\n").unwrap_err();
}

#[test]
fn call_schema_lists_each_tool() {
    let s = json_schema_for_calls(&tools());
    let variants = s["oneOf"].as_array().unwrap();
    assert_eq!(variants.len(), 3);
    assert_eq!(variants[0]["properties"]["name"]["const"], "get_weather");
    assert_eq!(variants[0]["required"], json!(["name", "arguments"]));
}

fn call() -> ToolCall {
    ToolCall {
        id: "call_7".into(),
        name: "get_weather".into(),
        arguments: json!({}),
    }
}

#[test]
fn results_are_wrapped_per_format_and_binary_is_described() {
    let r: CallToolResultLike = serde_json::from_value(json!({
        "content": [
            {"type": "text", "text": "Sunny, 21°C"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "mimeType": "application/octet-stream", "blob": "AAECAwQF"}},
            {"type": "resource", "resource": {"uri": "file:///n.txt", "mimeType": "text/plain", "text": "note"}},
            {"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv", "mimeType": "text/csv", "size": 2048},
            {"type": "hologram", "x": 1}
        ]
    }))
    .unwrap();
    let h = format_tool_result(ToolFormat::Hermes, &call(), &r);
    assert!(
        h.starts_with("<tool_response>\nSunny, 21°C\n[image: image/png, 8 B]\n"),
        "{h}"
    );
    assert!(h.contains("[audio: audio/wav, 3 B]"), "{h}");
    assert!(
        h.contains("[resource: file:///a.bin (application/octet-stream, 6 B)]"),
        "{h}"
    );
    assert!(
        h.contains("[resource: file:///n.txt (text/plain)]\nnote"),
        "{h}"
    );
    assert!(
        h.contains("[resource link: big.csv <file:///big.csv> (text/csv, 2.0 KiB)]"),
        "{h}"
    );
    assert!(
        h.contains("[unsupported content item]") && h.ends_with("\n</tool_response>"),
        "{h}"
    );
    assert!(!h.contains("iVBORw0KGgo") && !h.contains("AAECAwQF"));

    let m = format_tool_result(ToolFormat::Mistral, &call(), &r);
    let inner: Value = serde_json::from_str(
        m.strip_prefix("[TOOL_RESULTS]")
            .unwrap()
            .strip_suffix("[/TOOL_RESULTS]")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(inner["call_id"], "call_7");
    let j = format_tool_result(ToolFormat::ToolCallJson, &call(), &r);
    assert!(
        j.starts_with("[TOOL_RESULT name=get_weather id=call_7]\n")
            && j.ends_with("\n[END_TOOL_RESULT]")
    );
    let err = CallToolResultLike {
        content: vec![ContentItem::Text {
            text: "no such city".into(),
        }],
        is_error: true,
        structured_content: None,
    };
    assert_eq!(
        format_tool_result(ToolFormat::Llama3, &call(), &err),
        "Error: no such city"
    );
    let pj: Value =
        serde_json::from_str(&format_tool_result(ToolFormat::PlainJson, &call(), &err)).unwrap();
    assert_eq!(pj["is_error"], true);
    let structured = CallToolResultLike {
        content: vec![],
        is_error: false,
        structured_content: Some(json!({"t": 21})),
    };
    assert_eq!(
        format_tool_result(ToolFormat::Granite, &call(), &structured),
        "{\"t\":21}"
    );
    for f in ToolFormat::all() {
        assert!(
            format_tool_result(*f, &call(), &err).contains("no such city"),
            "{f}"
        );
    }
}

#[test]
fn long_results_are_truncated_with_a_notice() {
    let text = "é".repeat(50) + &"x".repeat(100);
    let r = CallToolResultLike {
        content: vec![ContentItem::Text { text }],
        ..Default::default()
    };
    let out = format_tool_result_with(
        ToolFormat::Llama3,
        &call(),
        &r,
        &ResultOptions { max_chars: 60 },
    );
    assert_eq!(
        out,
        format!(
            "{}{}\n[… truncated: showing the first 60 of 150 characters]",
            "é".repeat(50),
            "x".repeat(10)
        )
    );
    let short = format_tool_result_with(
        ToolFormat::Llama3,
        &call(),
        &r,
        &ResultOptions { max_chars: 150 },
    );
    assert!(!short.contains("truncated"));
    assert_eq!(ResultOptions::default().max_chars, DEFAULT_RESULT_LIMIT);
}

#[test]
fn conversion_bundle_and_input_errors() {
    let t = tools();
    let c = convert_tools(ToolFormat::Hermes, None, &t);
    assert!(c.system_prompt.contains("<tools>") && c.grammar.is_some());
    let schema: Value = serde_json::from_str(c.json_schema.as_deref().unwrap()).unwrap();
    assert_eq!(schema["oneOf"].as_array().map(Vec::len), Some(3));
    let c = convert_tools(ToolFormat::Gemma, Some(PromptStyle::Compact), &t);
    assert!(c.system_prompt.starts_with("Tools:\n") && c.grammar.is_none());
    assert_eq!(
        convert_tools(ToolFormat::Hermes, None, &[]).json_schema,
        None
    );

    let listed =
        parse_tools_json(r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}"#)
            .unwrap();
    assert_eq!(listed[0].name, "a");
    let err =
        parse_tools_json(r#"[{"name": "ok"}, {"name": "bad", "description": 5}]"#).unwrap_err();
    assert!(err.starts_with("tools[1] (`bad`):"), "{err}");
    let err = parse_tools_json(r#"[{"description": "x"}]"#).unwrap_err();
    assert!(err.contains("tools[0]") && err.contains("name"), "{err}");
    assert!(
        parse_tools_json("{")
            .unwrap_err()
            .contains("not valid JSON")
    );
    assert!(parse_tools_json("3").unwrap_err().contains("a number"));

    let r =
        parse_tool_result_json(r#"{"content": [{"type": "text", "text": "hi"}], "isError": true}"#)
            .unwrap();
    assert!(r.is_error);
    assert!(
        parse_tool_result_json(r#"{"content": 5}"#)
            .unwrap_err()
            .starts_with("tool result JSON:")
    );
}

#[test]
fn text_content_is_cut_to_one_budget_with_notices_and_other_content_kept() {
    let text = |t: &str| ContentItem::Text {
        text: t.to_string(),
    };
    let image = ContentItem::Image {
        data: "AAAA".into(),
        mime_type: "image/png".into(),
    };
    let r = CallToolResultLike {
        content: vec![text("abcdef"), image.clone(), text("ghijkl"), text("mno")],
        ..Default::default()
    };
    let cut = truncate_text_content(&r, 8);
    assert_eq!(
        cut.content,
        vec![
            text("abcdef"),
            image,
            text("gh\n[… truncated: showing the first 2 of 6 characters]"),
            text("[… truncated: 3 more characters not shown]"),
        ]
    );
    assert_eq!(truncate_text_content(&r, 15), r);
}
