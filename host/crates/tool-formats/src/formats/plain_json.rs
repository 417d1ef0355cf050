//! `plain-json`: a bare JSON object `{"name":…,"arguments":…}` or an array of them as the whole
//! message (optionally in a ```json fence).

use serde_json::{Map, Value, json};

use super::{Format, Grammar, GrammarShape, Hints, ResultTurn, THINK, json_call};
use crate::convert::PromptStyle;
use crate::detect::bodies::{json_fenced_end, json_fenced_verdict, json_whole};
use crate::detect::whole::{WholeDetector, WholeSpec};

pub(crate) static FORMAT: Format = Format {
    name: "plain-json",
    detector: |s| Box::new(WholeDetector::new(&PLAIN_JSON, s)),
    reasoning: THINK,
    end_tokens: &[],
    reasoning_ends: &[],
    example,
    instructions: "To call a tool, respond only with a JSON object {\"name\": tool name, \"arguments\": object}, or a JSON list of them",
    result,
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#"call | "[" ws call ws ("," ws call ws)* "]""#,
        one_call: "call",
        answer_excludes: "{[",
        args_key: "arguments",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[],
        names: &[],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    json_call(name, args, "arguments")
}

fn result(r: &ResultTurn) -> String {
    json!({"name": r.name, "id": r.id, "is_error": r.is_error, "content": r.body}).to_string()
}

pub(crate) static PLAIN_JSON: WholeSpec = WholeSpec {
    triggers: &['{', '[', '`'],
    value_end: json_fenced_end,
    verdict: json_fenced_verdict,
    parse: json_whole,
    separators: "",
    tags: &[],
};
