//! `pythonic` (Llama 3.2 pythonic, Llama 4): the whole message `[f(a=1), g(b="x")]`, Llama 4
//! inside `<|python_start|>…<|python_end|>`.

use serde_json::{Map, Value};

use super::grammar::{Literals, PYTHON, Rules, Values, args_schema, call_list, lit};
use super::{Format, Grammar, Hints, LarkShape, bare_result, py_call};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{py_prefix_verdict, py_tag_body, py_whole};
use crate::detect::marker::{Block, End};
use crate::detect::whole::{WholeDetector, WholeSpec};
use crate::scan::{code_unquoted_end, py_value_end};

pub(crate) static FORMAT: Format = Format {
    name: "pythonic",
    detector: |s| Box::new(WholeDetector::new(&PYTHONIC, s)),
    reasoning: &[],
    end_tokens: &["<|eot_id|>", "<|eom_id|>", "<|eot|>", "<|eom|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call functions, respond only with a Python list of calls with keyword arguments: [func_name1(param=value), func_name2(param=value)]",
    result: bare_result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "[",
        answer_not: &[],
        answer_head: "",
    })),
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
        end: End::Finder {
            find: |b| code_unquoted_end(b, &["<|python_end|>"]),
            closers: ">",
        },
        parse: py_tag_body,
    }],
};

/// `[f(k=v, …), …]` with Python literals; nested values of unlisted shape are any Python
/// literal of strings, numbers, `True`/`False`/`None`, lists and dicts (a superset of what the
/// schema allows there).
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
    r.named("calls", "\"[\" call_list \"]\"");
    r.finish()
}
