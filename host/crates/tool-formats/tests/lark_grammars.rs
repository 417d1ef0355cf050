//! Every format's llguidance (Lark) grammar, run by the real llguidance parser over a byte-level
//! vocabulary: 256 single-byte tokens, the special tokens the formats' markers are in their
//! model families, and an end-of-sequence token. Each grammar compiles in every mode, accepts the
//! format's own example calls (which its detector reads back as exactly those calls) and plain
//! answers, and rejects unknown tools, missing or mistyped arguments, answers that start like a
//! call and a second call where only one is allowed.

use std::sync::{Arc, OnceLock};

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie, TokenId};
use llguidance::{Matcher, ParserFactory};
use rkmcp_tool_formats::convert::{GrammarMode, ToolDef, example_call, lark_grammar_with};
use rkmcp_tool_formats::{DetectorEvent, DetectorOptions, ToolFormat, detect_all_with};
use serde_json::{Value, json};

/// Markers that are single (control) tokens in their model family; the grammars refer to them
/// as tokens, so the test vocabulary has them and the tokenizer below emits them.
const SPECIAL: &[&str] = &[
    "<|python_tag|>",
    "<|tool_call|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|channel|>",
    "<|constrain|>",
    "<|message|>",
    "<|call|>",
    "<|end|>",
    "<|start|>",
    "<|return|>",
    "<|tool_call_start|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|\"|>",
    "<start_function_call>",
    "<end_function_call>",
    "<escape>",
    "<|open|>",
    "<|close|>",
    "<|sep|>",
];

struct Vocab {
    factory: ParserFactory,
    /// Longest first, so `<|tool_call_end|>` is not read as a shorter token.
    special: Vec<(&'static str, TokenId)>,
}

fn vocab() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| {
        let mut words: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut special = Vec::new();
        for s in SPECIAL {
            special.push((*s, words.len() as TokenId));
            let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
            w.extend_from_slice(s.as_bytes());
            words.push(w);
        }
        let mut eos = vec![TokTrie::SPECIAL_TOKEN_MARKER];
        eos.extend_from_slice(b"<|eos|>");
        words.push(eos);
        let info = TokRxInfo::new(words.len() as u32, words.len() as u32 - 1);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(TokTrie::from(&info, &words)));
        let mut factory = ParserFactory::new_simple(&env).expect("parser factory");
        factory.quiet();
        special.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        Vocab { factory, special }
    })
}

/// Bytes as byte tokens, special-token markers as their token.
fn tokenize(text: &str) -> Vec<TokenId> {
    let v = vocab();
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if let Some((s, id)) = v
            .special
            .iter()
            .find(|(s, _)| text.as_bytes()[i..].starts_with(s.as_bytes()))
        {
            out.push(*id);
            i += s.len();
        } else {
            out.push(text.as_bytes()[i] as TokenId);
            i += 1;
        }
    }
    out
}

fn matcher(grammar: &str) -> Result<Matcher, String> {
    let parser = vocab()
        .factory
        .create_parser(TopLevelGrammar::from_lark(grammar.to_string()));
    let m = Matcher::new(parser);
    match m.get_error() {
        Some(e) => Err(e),
        None => Ok(m),
    }
}

/// Whether `grammar` accepts all of `text` and may end there; `Err` says where it stopped.
fn accepts(grammar: &str, text: &str) -> Result<(), String> {
    let mut m = matcher(grammar).map_err(|e| format!("does not compile: {e}"))?;
    let toks = tokenize(text);
    let n = m.try_consume_tokens(&toks).map_err(|e| e.to_string())?;
    if n < toks.len() {
        let done: Vec<TokenId> = toks[..n].to_vec();
        return Err(format!(
            "rejected after {n} tokens ({:?} accepted)",
            String::from_utf8_lossy(
                &done
                    .iter()
                    .filter(|t| **t < 256)
                    .map(|t| *t as u8)
                    .collect::<Vec<_>>()
            )
        ));
    }
    if !m.is_accepting().map_err(|e| e.to_string())? {
        return Err("accepted as a prefix only".into());
    }
    Ok(())
}

fn tool(name: &str, schema: Value) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: None,
        input_schema: schema,
        annotations: None,
    }
}

fn tools() -> Vec<ToolDef> {
    vec![
        tool(
            "get_weather",
            json!({"type": "object", "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "units": {"type": "string", "enum": ["c", "f"]}
            }, "required": ["city"]}),
        ),
        tool(
            "set_flag",
            json!({"type": "object", "properties": {"enabled": {"type": "boolean"}}, "required": ["enabled"]}),
        ),
        tool(
            "search",
            json!({"type": "object", "properties": {
                "filter": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                }, "required": ["name"]},
                "limit": {"type": "number"}
            }, "required": ["filter"]}),
        ),
        tool("ping", json!({"type": "object", "properties": {}})),
        // An optional parameter before a required one.
        tool(
            "range",
            json!({"type": "object", "properties": {
                "from": {"type": "integer"},
                "to": {"type": "integer"},
                "step": {"type": "integer"}
            }, "required": ["to"]}),
        ),
        tool(
            "mixed",
            json!({"type": "object", "properties": {
                "v": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "any": {},
                "opt": {"type": ["integer", "null"]}
            }}),
        ),
        tool(
            "note",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
    ]
}

/// Calls every format must accept and read back.
fn good_calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "get_weather",
            json!({"city": "Paris", "days": 3, "units": "c"}),
        ),
        ("get_weather", json!({"city": "New York"})),
        ("get_weather", json!({"city": "Oslo", "units": "f"})),
        ("set_flag", json!({"enabled": true})),
        ("set_flag", json!({"enabled": false})),
        (
            "search",
            json!({"filter": {"name": "x y", "tags": ["a", "b"]}, "limit": 2.5}),
        ),
        ("search", json!({"filter": {"name": "z", "tags": []}})),
        ("ping", json!({})),
        ("range", json!({"to": 2})),
        ("range", json!({"from": 1, "to": 2})),
        ("range", json!({"to": 2, "step": 1})),
        ("range", json!({"from": -1, "to": 2, "step": 1})),
        (
            "mixed",
            json!({"v": 5, "any": {"k": [1, "x", null, true]}, "opt": null}),
        ),
        ("mixed", json!({"opt": 7})),
        ("note", json!({"text": "two\nlines, \"quoted\""})),
    ]
}

/// Strings with other formats' closing markers in them: a format whose grammar accepts one has to
/// read it back exactly.
const MARKER_TEXTS: &[&str] = &[
    "a</tool_call>b",
    "a\n</parameter>\nb",
    "a</arg_value>b",
    "a</｜DSML｜parameter>b",
    "a</argument>b",
    "a\n```\nb",
    "a)]b",
    "a}b",
    "a</｜DSML｜ parameter>b",
    "a<|close|>argument<|sep|>b",
];

/// A closing marker each format must keep out of a string value (the text formats cannot carry
/// their own closing tag), and one each JSON-string format must carry.
const MUST_REJECT: &[(&str, &str)] = &[
    ("qwen3-coder", "a\n</parameter>\nb"),
    ("glm", "a</arg_value>b"),
    ("deepseek-dsml", "a</｜DSML｜parameter>b"),
    ("deepseek-v41", "a</｜DSML｜ parameter>b"),
    ("kimi-k3", "a<|close|>argument<|sep|>b"),
    ("tool-call-xml", "a</argument>b"),
    ("gemma", "a\n```\nb"),
];
const MUST_CARRY: &[(&str, &str)] = &[
    ("hermes", "a</tool_call>b"),
    ("smollm3", "a</tool_call>b"),
    ("pythonic", "a)]b"),
    ("lfm2", "a)]b"),
    ("gemma4", "a}b"),
    ("function-gemma", "a}b"),
    ("kimi-k2", "a}b"),
    ("deepseek-v41", "a</｜DSML｜parameter>b"),
    ("kimi-k3", "a</tool_call>b"),
];

fn grammar(f: ToolFormat, mode: GrammarMode) -> String {
    lark_grammar_with(f, &tools(), mode).unwrap_or_else(|| panic!("{f}: no Lark grammar"))
}

/// The calls the detector reads from `text` (whitespace between calls aside); anything else
/// fails the test.
fn read_back(f: ToolFormat, text: &str) -> Vec<(String, Value)> {
    detect_all_with(f, &DetectorOptions::for_tools(&tools()), text)
        .into_iter()
        .filter(|e| !matches!(e, DetectorEvent::Text(t) if t.trim().is_empty()))
        .map(|e| match e {
            DetectorEvent::ToolCall(c) => (c.name, c.arguments),
            other => panic!("{f}: {text:?} read as {other:?}"),
        })
        .collect()
}

#[test]
fn every_format_has_a_grammar_that_compiles_in_every_mode() {
    for f in ToolFormat::all() {
        for mode in [
            GrammarMode::CallOrAnswer,
            GrammarMode::CallOnly,
            GrammarMode::AnswerOnly,
        ] {
            let g = grammar(*f, mode);
            if let Err(e) = matcher(&g) {
                panic!("{f} {mode:?}: {e}\n{g}");
            }
        }
    }
}

#[test]
fn examples_are_accepted_and_read_back_as_the_same_call() {
    for f in ToolFormat::all() {
        let any = grammar(*f, GrammarMode::CallOrAnswer);
        let one = grammar(*f, GrammarMode::CallOnly);
        let answer_only = grammar(*f, GrammarMode::AnswerOnly);
        for (name, args) in good_calls() {
            let text = example_call(*f, name, &args);
            for (g, mode) in [(&any, "call-or-answer"), (&one, "call-only")] {
                if let Err(e) = accepts(g, &text) {
                    panic!("{f} {mode}: example {text:?} {e}\n{g}");
                }
            }
            assert!(
                accepts(&answer_only, &text).is_err(),
                "{f}: answer-only took {text:?}"
            );
            assert_eq!(
                read_back(*f, &text),
                vec![(name.to_string(), args.clone())],
                "{f}: {text:?}"
            );
        }
    }
}

#[test]
fn plain_answers_are_accepted_unless_a_call_is_required() {
    for f in ToolFormat::all() {
        for text in ["The weather in Paris is sunny.", "Hi!\n\n- a list\n- done"] {
            accepts(&grammar(*f, GrammarMode::CallOrAnswer), text)
                .unwrap_or_else(|e| panic!("{f}: {text:?} {e}"));
            accepts(&grammar(*f, GrammarMode::AnswerOnly), text)
                .unwrap_or_else(|e| panic!("{f}: {text:?} {e}"));
            assert!(
                accepts(&grammar(*f, GrammarMode::CallOnly), text).is_err(),
                "{f}: call-only took {text:?}"
            );
        }
    }
}

#[test]
fn wrong_calls_are_rejected() {
    let bad: Vec<(&str, &str, Value)> = vec![
        ("unknown tool", "delete_all", json!({"city": "Paris"})),
        (
            "missing required argument",
            "get_weather",
            json!({"days": 3}),
        ),
        (
            "string for an integer",
            "get_weather",
            json!({"city": "Paris", "days": "three"}),
        ),
        (
            "value outside the enum",
            "get_weather",
            json!({"city": "Paris", "units": "kelvin"}),
        ),
        (
            "string for a boolean",
            "set_flag",
            json!({"enabled": "yes"}),
        ),
        ("unlisted argument", "ping", json!({"anything": 1})),
        (
            "nested object missing its required key",
            "search",
            json!({"filter": {"tags": ["a"]}}),
        ),
    ];
    for f in ToolFormat::all() {
        for mode in [GrammarMode::CallOrAnswer, GrammarMode::CallOnly] {
            let g = grammar(*f, mode);
            for (what, name, args) in &bad {
                let text = example_call(*f, name, args);
                assert!(
                    accepts(&g, &text).is_err(),
                    "{f} {mode:?}: {what} accepted: {text:?}"
                );
            }
        }
    }
}

#[test]
fn an_answer_cannot_start_like_a_call() {
    for f in ToolFormat::all() {
        let g = grammar(*f, GrammarMode::CallOrAnswer);
        let ex = example_call(*f, "get_weather", &json!({"city": "Paris"}));
        let at = ex.find("get_weather").expect("the name is in the example");
        let text = format!("{}Sorry, I cannot call tools.", &ex[..at]);
        assert!(accepts(&g, &text).is_err(), "{f}: accepted {text:?}");
        // Nor does whitespace open a way around the call syntax.
        let text = format!(" {ex}");
        assert!(accepts(&g, &text).is_err(), "{f}: accepted {text:?}");
    }
}

#[test]
fn only_one_call_when_a_call_is_required() {
    for f in ToolFormat::all() {
        let one = grammar(*f, GrammarMode::CallOnly);
        let a = example_call(*f, "get_weather", &json!({"city": "Paris"}));
        let b = example_call(*f, "ping", &json!({}));
        for sep in ["", "\n", ";", ", "] {
            let text = format!("{a}{sep}{b}");
            assert!(accepts(&one, &text).is_err(), "{f}: two calls {text:?}");
        }
    }
}

#[test]
fn strings_with_closing_markers_are_read_back_exactly_or_rejected() {
    let mut carried = 0;
    for f in ToolFormat::all() {
        let g = grammar(*f, GrammarMode::CallOrAnswer);
        for probe in MARKER_TEXTS {
            let args = json!({"text": probe});
            let text = example_call(*f, "note", &args);
            let ok = accepts(&g, &text).is_ok();
            if ok {
                carried += 1;
                assert_eq!(
                    read_back(*f, &text),
                    vec![("note".to_string(), args.clone())],
                    "{f}: {text:?}"
                );
            }
            if MUST_REJECT.contains(&(f.name(), probe)) {
                assert!(!ok, "{f}: took its own closing tag in {text:?}");
            }
            if MUST_CARRY.contains(&(f.name(), probe)) {
                assert!(ok, "{f}: rejected {text:?}");
            }
        }
    }
    assert!(carried > 50, "{carried}");
}

/// Two calls (`get_weather` for Paris, then `ping`) in each format's own multi-call syntax.
/// Harmony has none: `<|call|>` ends the turn after one call.
const PARALLEL: &[(&str, &str)] = &[
    (
        "tool-call-json",
        "[TOOL_CALL]{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}[END_TOOL_CALL]\n[TOOL_CALL]{\"name\": \"ping\", \"arguments\": {}}[END_TOOL_CALL]",
    ),
    (
        "tool-call-xml",
        "<tool_call name=\"get_weather\"><argument name=\"city\">Paris</argument></tool_call>\n<tool_call name=\"ping\"></tool_call>",
    ),
    (
        "hermes",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>",
    ),
    (
        "qwen3-coder",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=ping>\n</function>\n</tool_call>",
    ),
    (
        "llama3",
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"ping\", \"parameters\": {}}",
    ),
    (
        "mistral",
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"ping\", \"arguments\": {}}]",
    ),
    ("pythonic", "[get_weather(city=\"Paris\"), ping()]"),
    (
        "gemma",
        "```tool_code\nget_weather(city=\"Paris\")\nping()\n```",
    ),
    (
        "deepseek",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>ping\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    ),
    (
        "granite",
        "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"ping\", \"arguments\": {}}]",
    ),
    (
        "plain-json",
        "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"ping\", \"arguments\": {}}]",
    ),
    (
        "gemma4",
        "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|><|tool_call>call:ping{}<tool_call|>",
    ),
    (
        "function-gemma",
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call><start_function_call>call:ping{}<end_function_call>",
    ),
    (
        "glm",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>ping\n</tool_call>",
    ),
    (
        "kimi-k2",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.ping:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
    ),
    (
        "deepseek-dsml",
        "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"ping\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    ),
    (
        "deepseek-v41",
        "<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"get_weather\">\n<｜DSML｜ parameter name=\"city\" string=\"true\">Paris</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n<｜DSML｜ invoke name=\"ping\">\n</｜DSML｜ invoke>\n</｜DSML｜ calls>",
    ),
    (
        "kimi-k3",
        "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool=\"ping\" index=\"2\"<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
    ),
    (
        "phi4-mini",
        "functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"ping\", \"arguments\": {}}]",
    ),
    (
        "lfm2",
        "<|tool_call_start|>[get_weather(city=\"Paris\"), ping()]<|tool_call_end|>",
    ),
    (
        "xlam",
        "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"ping\", \"arguments\": {}}]",
    ),
    (
        "smollm3",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>",
    ),
];

#[test]
fn parallel_calls_where_the_format_has_them() {
    for f in ToolFormat::all() {
        let Some((_, text)) = PARALLEL.iter().find(|(n, _)| *n == f.name()) else {
            assert_eq!(*f, ToolFormat::Harmony, "{f}: no parallel example");
            continue;
        };
        accepts(&grammar(*f, GrammarMode::CallOrAnswer), text)
            .unwrap_or_else(|e| panic!("{f}: {text:?} {e}"));
        assert!(
            accepts(&grammar(*f, GrammarMode::CallOnly), text).is_err(),
            "{f}: call-only took two calls"
        );
        assert_eq!(
            read_back(*f, text),
            vec![
                ("get_weather".to_string(), json!({"city": "Paris"})),
                ("ping".to_string(), json!({})),
            ],
            "{f}"
        );
    }
}
