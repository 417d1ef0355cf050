//! `lfm2` (Liquid LFM2): `<|tool_call_start|>[f(a=1), g(b="x")]<|tool_call_end|>` (Python call
//! list; a JSON list of calls is read too).

use serde_json::{Map, Value};

use super::grammar::{Literals, PYTHON, Rules, Values, args_schema, call_list, lit};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn, THINK, py_call};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{json_calls, lead_ws, py_tag_body};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;
use crate::scan::{code_unquoted_end, find_first, py_value_end, unquoted_end};

pub(crate) static FORMAT: Format = Format {
    name: "lfm2",
    detector: |s| Box::new(MarkerDetector::new(LFM2, &[END], s)),
    reasoning: THINK,
    end_tokens: &["<|im_end|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call functions, write <|tool_call_start|> followed by a Python list of calls with keyword arguments and <|tool_call_end|>",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<|tool_call_start|>", 15)],
        names: &[("lfm2", 60)],
        family: &[],
    },
};

const START: &str = "<|tool_call_start|>";
const END: &str = "<|tool_call_end|>";

/// LFM2's templates wrap the tool turn's content in its response tokens.
fn result(r: &ResultTurn) -> String {
    format!("<|tool_response_start|>{}<|tool_response_end|>", r.body)
}

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("{START}[{}]{END}", py_call(name, args))
}

/// The end marker after the call list (a marker inside a quoted value does not count).
fn end(body: &str) -> Option<(usize, usize)> {
    let ws = lead_ws(body);
    let t = &body[ws..];
    if t.starts_with("[{") || t.starts_with('{') {
        return unquoted_end(body, END);
    }
    if t.starts_with('[') {
        return match py_value_end(t) {
            Some(e) => {
                let after = ws + e;
                find_first(&body[after..], &[END]).map(|(p, _)| (after + p, after + p + END.len()))
            }
            None => None,
        };
    }
    // Python statements: an end marker inside one of their strings is text.
    code_unquoted_end(body, &[END])
}

fn body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, format!("missing {END}"))];
    }
    let t = inner.trim();
    if t.starts_with("[{") || t.starts_with('{') {
        return json_calls(raw, t, terminated);
    }
    py_tag_body(raw, t, terminated)
}

static LFM2: &[Block] = &[Block {
    start: START,
    end: End::Finder {
        find: end,
        closers: ">",
    },
    parse: body,
}];

/// The Python call list the example teaches between LFM2's special tokens (the JSON list the
/// detector also reads is not offered).
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    const LITS: Literals = PYTHON;
    const SEP: &str = PYTHON.sep;
    let mut r = Rules::default();
    let mut values = Values::new(&LITS, &mut r);
    call_list(tools, parallel, SEP, &mut r, |t, r| {
        let args = values
            .keyword_args(&args_schema(t), "\"=\"", r)
            .unwrap_or_default();
        format!("{} \"(\" {args} \")\"", lit(&t.name))
    });
    r.named(
        "calls",
        "<|tool_call_start|> \"[\" call_list \"]\" <|tool_call_end|>",
    );
    r.finish()
}
