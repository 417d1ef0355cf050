//! `function-gemma` (FunctionGemma): `<start_function_call>call:NAME{key:<escape>text<escape>,n:5}<end_function_call>`,
//! the Gemma 4 literal syntax with `<escape>` as the string delimiter.

use serde_json::{Map, Value};

use super::gemma4::{call_blocks, end_outside_quotes, write_object};
use super::grammar::{Literals, Rules, Values, args_schema, call_list, lit};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;

pub(crate) static FORMAT: Format = Format {
    name: "function-gemma",
    detector: |s| Box::new(MarkerDetector::new(BLOCKS, &[END], s)),
    reasoning: &[],
    // After a call the model goes on with the token its template puts next: the response.
    end_tokens: &["<end_of_turn>", "<eos>", "<start_function_response>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, write <start_function_call>call:NAME{argument:value,…}<end_function_call> with text values between <escape> tokens",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<start_function_call>", 15)],
        names: &[("functiongemma", 115)],
        family: &[],
    },
};

const QUOTE: &str = "<escape>";
const START: &str = "<start_function_call>";
const END: &str = "<end_function_call>";

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("{START}call:{name}{}{END}", write_object(args, QUOTE))
}

fn result(r: &ResultTurn) -> String {
    format!(
        "<start_function_response>response:{}{{value:{QUOTE}{}{QUOTE}}}<end_function_response>",
        r.name, r.body
    )
}

fn end(body: &str) -> Option<(usize, usize)> {
    end_outside_quotes(body, QUOTE, END)
}

fn body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    call_blocks(raw, inner, terminated, QUOTE, END)
}

static BLOCKS: &[Block] = &[Block {
    start: START,
    end: End::Finder {
        find: end,
        closers: ">",
    },
    parse: body,
}];

/// Gemma 4's literal syntax with `<escape>` as the quote.
const LITS: Literals = Literals {
    quote: Some(QUOTE),
    ..super::gemma4::LITS
};

/// One block per call; the markers and `<escape>` are special tokens of FunctionGemma's
/// vocabulary.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    const START_TOKEN: &str = START;
    const END_TOKEN: &str = END;
    let mut r = Rules::default();
    let mut values = Values::new(&LITS, &mut r);
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = values
            .keyword_args(&args_schema(t), "\":\"", r)
            .unwrap_or_default();
        format!(
            "{START_TOKEN} {} \"{{\" {args} \"}}\" {END_TOKEN}",
            lit(&format!("call:{}", t.name))
        )
    });
    r.named("calls", "call_list");
    r.finish()
}
