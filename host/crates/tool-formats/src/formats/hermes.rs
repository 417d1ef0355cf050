//! `hermes` (Hermes 2/3, Qwen2.5/Qwen3, most ChatML fine-tunes):
//! `<tool_call>{"name":…,"arguments":{…}}</tool_call>`, also with Qwen3-Coder tags inside.

use serde_json::{Map, Value};

use super::{Format, Grammar, GrammarShape, Hints, THINK, json_call, tool_response_result};
use crate::convert::PromptStyle;
use crate::detect::bodies::{
    FUNCTION_TAGS, json_calls, json_or_marker_end, qwen_end, qwen_functions,
};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::Parsed;

pub(crate) static FORMAT: Format = Format {
    name: "hermes",
    detector: |s| Box::new(MarkerDetector::new(HERMES, &["</tool_call>"], s)),
    reasoning: THINK,
    end_tokens: &["<|im_end|>", "<|endoftext|>", "<|eot_id|>"],
    reasoning_ends: &[],
    example,
    instructions: "For each function call, return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags",
    result: tool_response_result,
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#""<tool_call>" ws call ws "</tool_call>" (ws "<tool_call>" ws call ws "</tool_call>")*"#,
        one_call: r#""<tool_call>" ws call ws "</tool_call>""#,
        answer_excludes: "<",
        args_key: "arguments",
    })),
    prompt_style: PromptStyle::Hermes,
    hints: Hints {
        template: &[("<tool_call>", 90)],
        // Granite 4 writes Hermes-style calls (Granite 3 has its own marker).
        names: &[
            ("hermes", 200),
            ("granite4", 95),
            ("qwen", 300),
            ("qwq", 300),
        ],
        // ChatML models are mostly trained on Hermes-style calls (and the Hermes form worked
        // better than the bracket form with SmolLM2 here).
        family: &[("<|im_start|>", 10)],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "<tool_call>\n{}\n</tool_call>",
        json_call(name, args, "arguments")
    )
}

fn hermes_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    // `<tool_call>` quoted in an answer (`Use the <tool_call> tag`): no call syntax follows and
    // no close tag ever comes, so it was prose.
    if !terminated && !inner.trim_start().starts_with(['{', '[', '<']) {
        return vec![Parsed::NotACall(raw.to_string())];
    }
    // Qwen3 models trained on both styles sometimes put Qwen3-Coder tags inside a Hermes block.
    if inner.trim_start().starts_with("<function=") {
        return qwen_functions(raw, inner, terminated);
    }
    json_calls(raw, inner, terminated)
}

fn hermes_end(body: &str) -> Option<(usize, usize)> {
    if body.trim_start().starts_with("<function=") {
        return qwen_end(body);
    }
    json_or_marker_end(body, &["</tool_call>"])
}

/// `<tool_call>{…}</tool_call>` (also used by formats whose newer models switched to it).
pub(crate) const TOOL_CALL_BLOCK: Block = Block {
    start: "<tool_call>",
    end: End::Finder {
        find: hermes_end,
        closers: "",
    },
    parse: hermes_body,
};

pub(crate) static HERMES: &[Block] = &[TOOL_CALL_BLOCK, FUNCTION_TAGS[0], FUNCTION_TAGS[1]];
