//! `deepseek-v41` (DeepSeek V4.1): DSML with a space after the bar and a `calls` block:
//! `<｜DSML｜ calls><｜DSML｜ invoke name="f"><｜DSML｜ parameter name="a" string="true">v</｜DSML｜ parameter></｜DSML｜ invoke></｜DSML｜ calls>`.
//! `string="true"` values are the text as written, others JSON; the tool's schema decides where
//! the two disagree.
//!
//! A format of its own rather than a variant of `deepseek-dsml`: the example the prompt teaches
//! and the grammar must be the syntax this model was trained on. The detector is the DeepSeek
//! one, which reads every DeepSeek syntax (a model name cannot tell the versions apart).

use serde_json::{Map, Value};

use super::deepseek::DEEPSEEK;
use super::deepseek_dsml::{Tags, calls_in, example_in, grammar_in, result};
use super::{Format, Grammar, Hints, LarkShape, THINK};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::marker_after;
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;

pub(crate) static FORMAT: Format = Format {
    name: "deepseek-v41",
    detector: |s| Box::new(MarkerDetector::new(DEEPSEEK, &[], s)),
    reasoning: THINK,
    end_tokens: &["<｜end▁of▁sentence｜>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, write a <｜DSML｜ calls> block with one <｜DSML｜ invoke name=\"NAME\"> per call and one <｜DSML｜ parameter name=\"ARG\" string=\"true|false\"> per argument (string=\"true\" for text, else a JSON value)",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        // Before `deepseek-dsml`'s `｜DSML｜` (45) and its `deepseekv4` name (80).
        template: &[("｜DSML｜ ", 40)],
        names: &[("deepseekv41", 75)],
        family: &[],
    },
};

const CALLS: &str = "<｜DSML｜ calls>";
const CALLS_END: &str = "</｜DSML｜ calls>";

const V41: Tags = Tags {
    invoke: "<｜DSML｜ invoke",
    invoke_end: "</｜DSML｜ invoke>",
    param: "<｜DSML｜ parameter",
    param_end: "</｜DSML｜ parameter>",
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    example_in(&V41, (CALLS, CALLS_END), name, args)
}

/// `</｜DSML｜ calls>` right after an invoke closes: one inside a value is not.
fn end(body: &str) -> Option<(usize, usize)> {
    marker_after(body, CALLS_END, &[V41.invoke_end])
}

fn calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    calls_in(&V41, raw, inner, terminated)
}

/// The V4.1 block, read by every DeepSeek detector.
pub(crate) const V41_BLOCK: Block = Block {
    start: CALLS,
    end: End::Finder {
        find: end,
        closers: ">",
    },
    parse: calls,
};

fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    grammar_in(&V41, (CALLS, CALLS_END), tools, parallel)
}
