//! `tool-call-json`: `[TOOL_CALL]{"name":…,"arguments":{…}}[END_TOOL_CALL]` — needs no special
//! tokens, so it is the fallback for models without a known format.

use serde_json::{Map, Value};

use super::{Format, Grammar, GrammarShape, Hints, ResultTurn, THINK, json_call};
use crate::convert::PromptStyle;
use crate::detect::bodies::{json_calls, json_or_marker_end};
use crate::detect::marker::{Block, End, MarkerDetector};

pub(crate) static FORMAT: Format = Format {
    name: "tool-call-json",
    detector: |s| {
        Box::new(MarkerDetector::new(
            TOOL_CALL_JSON,
            &["[END_TOOL_CALL]", "[/TOOL_CALL]"],
            s,
        ))
    },
    reasoning: THINK,
    end_tokens: &[],
    reasoning_ends: &[],
    example,
    instructions: "To call a tool, write a JSON object with the tool name and its arguments between [TOOL_CALL] and [END_TOOL_CALL]",
    result,
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#""[TOOL_CALL]" ws call ws "[END_TOOL_CALL]" (ws "[TOOL_CALL]" ws call ws "[END_TOOL_CALL]")*"#,
        one_call: r#""[TOOL_CALL]" ws call ws "[END_TOOL_CALL]""#,
        answer_excludes: "[",
        args_key: "arguments",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("[TOOL_CALL]", 10)],
        names: &[],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "[TOOL_CALL]{}[END_TOOL_CALL]",
        json_call(name, args, "arguments")
    )
}

fn result(r: &ResultTurn) -> String {
    format!(
        "[TOOL_RESULT name={} id={}]\n{}\n[END_TOOL_RESULT]",
        r.name, r.id, r.body
    )
}

fn tool_call_json_end(body: &str) -> Option<(usize, usize)> {
    json_or_marker_end(body, &["[END_TOOL_CALL]", "[/TOOL_CALL]"])
}

pub(crate) static TOOL_CALL_JSON: &[Block] = &[Block {
    start: "[TOOL_CALL]",
    end: End::Finder {
        find: tool_call_json_end,
        closers: "",
    },
    parse: json_calls,
}];
