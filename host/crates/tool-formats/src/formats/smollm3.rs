//! `smollm3` (SmolLM3): xml tools `<tool_call>{"name":…,"arguments":{…}}</tool_call>` or python
//! tools `<code>f(a=1)</code>`; reasoning in `<think>…</think>`.

use serde_json::{Map, Value};

use super::{Format, Grammar, GrammarShape, Hints, THINK, json_call, tool_response_result};
use crate::convert::PromptStyle;
use crate::detect::bodies::{json_calls, json_or_marker_end, py_statements};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;
use crate::scan::code_unquoted_end;

pub(crate) static FORMAT: Format = Format {
    name: "smollm3",
    detector: |s| Box::new(MarkerDetector::new(SMOLLM3, &["</tool_call>"], s)),
    reasoning: THINK,
    end_tokens: &["<|im_end|>"],
    reasoning_ends: &[],
    example,
    instructions: "For each function call, return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags",
    result: tool_response_result,
    // The xml-tools form the example teaches (the python-tools `<code>` form has none).
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#""<tool_call>" ws call ws "</tool_call>" (ws "<tool_call>" ws call ws "</tool_call>")*"#,
        one_call: r#""<tool_call>" ws call ws "</tool_call>""#,
        answer_excludes: "<",
        args_key: "arguments",
    })),
    prompt_style: PromptStyle::Hermes,
    hints: Hints {
        template: &[("xml_tools", 15), ("python_tools", 15)],
        names: &[("smollm3", 60)],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "<tool_call>\n{}\n</tool_call>",
        json_call(name, args, "arguments")
    )
}

fn tool_call_end(body: &str) -> Option<(usize, usize)> {
    json_or_marker_end(body, &["</tool_call>"])
}

fn code_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, "missing </code>")];
    }
    py_statements(raw, inner)
}

static SMOLLM3: &[Block] = &[
    Block {
        start: "<tool_call>",
        end: End::Finder {
            find: tool_call_end,
            closers: "",
        },
        parse: json_calls,
    },
    Block {
        start: "<code>",
        end: End::Finder {
            find: |b| code_unquoted_end(b, &["</code>"]),
            closers: ">",
        },
        parse: code_body,
    },
];
