//! `phi4-mini` (Phi-4-mini): `functools[{"name":…,"arguments":{…}}, …]`, or between its
//! `<|tool_call|>` and `<|/tool_call|>` tokens as llama.cpp's Phi-4-mini template renders calls.

use serde_json::{Map, Value};

use super::grammar::{Rules, call_list, json_call_expr};
use super::{Format, Grammar, Hints, LarkShape, bare_result, json_call};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{json_calls, json_or_marker_end, json_value_after_ws};
use crate::detect::marker::{Block, End, MarkerDetector};

pub(crate) static FORMAT: Format = Format {
    name: "phi4-mini",
    detector: |s| Box::new(MarkerDetector::new(PHI4, &[TAG_END], s)),
    reasoning: &[],
    end_tokens: &["<|end|>", "<|endoftext|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call functions, write functools followed by a JSON list of calls",
    result: bare_result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "",
        // One character would exclude every answer starting with `f`.
        answer_not: &["functools"],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("functools[", 15)],
        names: &[("phi4mini", 60), ("phi4mm", 60)],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("functools[{}]", json_call(name, args, "arguments"))
}

const TAG_END: &str = "<|/tool_call|>";

fn tag_end(body: &str) -> Option<(usize, usize)> {
    json_or_marker_end(body, &[TAG_END])
}

static PHI4: &[Block] = &[
    Block {
        start: "functools",
        end: End::Finder {
            find: json_value_after_ws,
            closers: "}]",
        },
        parse: json_calls,
    },
    Block {
        start: "<|tool_call|>",
        end: End::Finder {
            find: tag_end,
            // A JSON body can end on any character (`json_or_marker_end`).
            closers: "",
        },
        parse: json_calls,
    },
];

/// `functools[…]` around the JSON call objects of the JSON-call formats. Lark only, because
/// the answer has to avoid a word, which GBNF's character class cannot say.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    let mut r = Rules::default();
    call_list(tools, parallel, r#"WS? "," WS?"#, &mut r, |t, _| {
        json_call_expr(t, "arguments")
    });
    r.named("calls", r#""functools[" WS? call_list WS? "]""#);
    r.finish()
}
