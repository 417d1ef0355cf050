//! `llama3` (Llama 3.1–3.3 JSON): the whole message `{"name":…,"parameters":…}`
//! (`;`-separated), optionally after `<|python_tag|>`.

use serde_json::{Map, Value};

use super::{Format, Grammar, GrammarShape, Hints, bare_result, json_call};
use crate::convert::PromptStyle;
use crate::detect::bodies::{
    FUNCTION_TAGS, json_fenced_end, json_fenced_verdict, json_whole, py_statements,
};
use crate::detect::marker::{Block, End};
use crate::detect::whole::{WholeDetector, WholeSpec};
use crate::parse::{Parsed, calls_from_json_value};
use crate::scan::{code_unquoted_end, json_value_end};

pub(crate) static FORMAT: Format = Format {
    name: "llama3",
    detector: |s| Box::new(WholeDetector::new(&LLAMA3, s)),
    reasoning: &[],
    end_tokens: &["<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, respond only with a JSON object {\"name\": function name, \"parameters\": dictionary of argument name and its value}. Do not use variables",
    // Llama 3 takes the bare content in its ipython role.
    result: bare_result,
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#"("<|python_tag|>")? call (ws ";" ws call)*"#,
        one_call: r#"("<|python_tag|>")? call"#,
        answer_excludes: "{<",
        args_key: "parameters",
    })),
    prompt_style: PromptStyle::Llama3,
    hints: Hints {
        template: &[
            ("<|python_tag|>", 110),
            // Llama 3.1-style JSON calls without the python tag.
            ("\"parameters\": dictionary of argument name", 115),
        ],
        names: &[
            ("llama32", 210),
            ("llama31", 210),
            ("llama33", 210),
            ("llama3", 210),
        ],
        family: &[("<|start_header_id|>", 20)],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    json_call(name, args, "parameters")
}

/// Inside `<|python_tag|>`: `;`-separated JSON calls, or Llama's built-in `tool.call(q="…")`.
fn llama_tag_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let t = inner.trim();
    if t.starts_with('{') || t.starts_with('[') {
        let mut out = Vec::new();
        let mut rest = t;
        loop {
            rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
            if rest.is_empty() {
                break;
            }
            let Some(e) = json_value_end(rest) else {
                let msg = if terminated {
                    "unbalanced JSON"
                } else {
                    "unterminated JSON call"
                };
                out.push(Parsed::bad(raw, msg));
                break;
            };
            match serde_json::from_str::<Value>(&rest[..e]) {
                Ok(v) => out.extend(calls_from_json_value(&rest[..e], &v)),
                Err(err) => out.push(Parsed::bad(&rest[..e], format!("invalid JSON: {err}"))),
            }
            rest = &rest[e..];
        }
        if out.is_empty() {
            out.push(Parsed::bad(raw, "empty call after <|python_tag|>"));
        }
        return out;
    }
    let calls = py_statements(raw, t);
    calls
        .into_iter()
        .map(|p| match p {
            Parsed::Call {
                name,
                arguments,
                id,
            } => Parsed::Call {
                name: name.strip_suffix(".call").unwrap_or(&name).to_string(),
                arguments,
                id,
            },
            bad => bad,
        })
        .collect()
}

pub(crate) static LLAMA3: WholeSpec = WholeSpec {
    triggers: &['{', '[', '`'],
    value_end: json_fenced_end,
    verdict: json_fenced_verdict,
    parse: json_whole,
    separators: ";",
    tags: &[
        Block {
            start: "<|python_tag|>",
            // JSON or Python code: an end token inside one of its strings is text.
            end: End::Finder {
                find: |b| code_unquoted_end(b, &["<|eom_id|>", "<|eot_id|>"]),
                closers: ">",
            },
            parse: llama_tag_body,
        },
        // Llama 3.1's custom-tool prompt teaches `<function=NAME>{…}</function>`.
        FUNCTION_TAGS[0],
        FUNCTION_TAGS[1],
    ],
};
