//! `gemma` (Gemma 3): a ```` ```tool_code ```` block with Python calls.

use serde_json::{Map, Value};

use super::grammar::{Literals, PYTHON, Rules, Values, args_schema, call_list, lit};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn, py_call};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::py_statements;
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;
use crate::scan::code_unquoted_end;

pub(crate) static FORMAT: Format = Format {
    name: "gemma",
    detector: |s| Box::new(MarkerDetector::new(GEMMA, &[], s)),
    reasoning: &[],
    end_tokens: &["<end_of_turn>", "<eos>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, write the Python call with keyword arguments in a ```tool_code block",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "",
        // A Markdown code block is a fine answer; only the tool blocks are calls.
        answer_not: &["```tool_"],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("tool_code", 120)],
        names: &[("gemma", 120)],
        family: &[("<start_of_turn>", 40)],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("```tool_code\n{}\n```", py_call(name, args))
}

fn result(r: &ResultTurn) -> String {
    format!("```tool_output\n{}\n```", r.body)
}

fn gemma_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, "unterminated ```tool_code block")];
    }
    py_statements(raw, inner)
}

pub(crate) static GEMMA: &[Block] = &[
    Block {
        start: "```tool_code",
        end: End::Finder {
            find: |b| code_unquoted_end(b, &["```"]),
            closers: "`",
        },
        parse: gemma_body,
    },
    Block {
        start: "```tool_call",
        end: End::Finder {
            find: |b| code_unquoted_end(b, &["```"]),
            closers: "`",
        },
        parse: gemma_body,
    },
];

/// Python calls, one per line, in a `tool_code` block; a string cannot contain the block's end.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    const LITS: Literals = Literals {
        forbid: &["```"],
        ..PYTHON
    };
    const SEP: &str = r#""\n""#;
    let mut r = Rules::default();
    let mut values = Values::new(&LITS, &mut r);
    call_list(tools, parallel, SEP, &mut r, |t, r| {
        let args = values
            .keyword_args(&args_schema(t), "\"=\"", r)
            .unwrap_or_default();
        format!("{} \"(\" {args} \")\"", lit(&t.name))
    });
    r.named("calls", r#""```tool_code\n" call_list "\n```""#);
    r.finish()
}
