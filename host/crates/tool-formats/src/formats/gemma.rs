//! `gemma` (Gemma 3): a ```` ```tool_code ```` block with Python calls.

use serde_json::{Map, Value};

use super::{Format, Hints, ResultTurn, py_call};
use crate::convert::PromptStyle;
use crate::detect::bodies::py_statements;
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;

pub(crate) static FORMAT: Format = Format {
    name: "gemma",
    detector: |s| Box::new(MarkerDetector::new(GEMMA, &[], s)),
    reasoning: &[],
    end_tokens: &["<end_of_turn>", "<eos>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, write the Python call with keyword arguments in a ```tool_code block",
    result,
    grammar: None,
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
        end: End::Markers(&["```"]),
        parse: gemma_body,
    },
    Block {
        start: "```tool_call",
        end: End::Markers(&["```"]),
        parse: gemma_body,
    },
];
