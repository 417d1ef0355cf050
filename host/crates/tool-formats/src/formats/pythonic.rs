//! `pythonic` (Llama 3.2 pythonic, Llama 4): the whole message `[f(a=1), g(b="x")]`, Llama 4
//! inside `<|python_start|>…<|python_end|>`.

use serde_json::{Map, Value};

use super::{Format, Hints, bare_result, py_call};
use crate::convert::PromptStyle;
use crate::detect::bodies::{py_prefix_verdict, py_tag_body, py_whole};
use crate::detect::marker::{Block, End};
use crate::detect::whole::{WholeDetector, WholeSpec};
use crate::scan::py_value_end;

pub(crate) static FORMAT: Format = Format {
    name: "pythonic",
    detector: |s| Box::new(WholeDetector::new(&PYTHONIC, s)),
    reasoning: &[],
    end_tokens: &["<|eot_id|>", "<|eom_id|>", "<|eot|>", "<|eom|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call functions, respond only with a Python list of calls with keyword arguments: [func_name1(param=value), func_name2(param=value)]",
    result: bare_result,
    grammar: None,
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<|python_start|>", 100), ("[func_name1(", 100)],
        names: &[("llama4", 205)],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("[{}]", py_call(name, args))
}

pub(crate) static PYTHONIC: WholeSpec = WholeSpec {
    triggers: &['['],
    value_end: |s, _| py_value_end(s),
    verdict: py_prefix_verdict,
    parse: py_whole,
    separators: "",
    // Llama 4 wraps pythonic calls in these tags.
    tags: &[Block {
        start: "<|python_start|>",
        end: End::Markers(&["<|python_end|>"]),
        parse: py_tag_body,
    }],
};
