//! `granite` (IBM Granite 3.x): `<|tool_call|>[{"name":…,"arguments":{…}}]`; Granite 4's
//! Hermes-style `<tool_call>{…}</tool_call>` is read too.

use serde_json::{Map, Value};

use super::{Format, Grammar, GrammarShape, Hints, THINK, bare_result, json_call};
use crate::convert::PromptStyle;
use crate::detect::bodies::{json_calls, json_value_after_ws};
use crate::detect::marker::{Block, End, MarkerDetector};

pub(crate) static FORMAT: Format = Format {
    name: "granite",
    detector: |s| Box::new(MarkerDetector::new(GRANITE, HIDDEN, s)),
    reasoning: THINK,
    end_tokens: &["<|end_of_text|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call tools, write <|tool_call|> followed by a JSON list of calls",
    // Granite's tool role takes the bare content.
    result: bare_result,
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#""<|tool_call|>" "[" ws call ws ("," ws call ws)* "]""#,
        one_call: r#""<|tool_call|>" "[" ws call ws "]""#,
        answer_excludes: "<",
        args_key: "arguments",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<|tool_call|>", 80)],
        names: &[("granite", 100)],
        family: &[("<|start_of_role|>", 30)],
    },
};

/// Granite 3.3's thinking mode answers `<think>…</think><response>…</response>`: the response
/// tags (and a stray Hermes close tag) are markup, never text for the user.
static HIDDEN: &[&str] = &["<response>", "</response>", "</tool_call>"];

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("<|tool_call|>[{}]", json_call(name, args, "arguments"))
}

pub(crate) static GRANITE: &[Block] = &[
    Block {
        start: "<|tool_call|>",
        end: End::Finder {
            find: json_value_after_ws,
            closers: "}]",
        },
        parse: json_calls,
    },
    super::hermes::TOOL_CALL_BLOCK,
];
