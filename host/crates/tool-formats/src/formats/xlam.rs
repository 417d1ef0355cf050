//! `xlam` (Salesforce xLAM): the whole message is a JSON list of calls
//! `[{"name":…,"arguments":{…}}]` (optionally fenced, or `{"tool_calls":[…]}`).

use serde_json::{Map, Value};

use super::plain_json::PLAIN_JSON;
use super::{Format, Grammar, GrammarShape, Hints, THINK, bare_result, json_call};
use crate::convert::PromptStyle;
use crate::detect::whole::WholeDetector;

pub(crate) static FORMAT: Format = Format {
    name: "xlam",
    detector: |s| Box::new(WholeDetector::new(&PLAIN_JSON, s)),
    reasoning: THINK,
    end_tokens: &["<|eot_id|>", "<|im_end|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call tools, respond only with a JSON list of calls [{\"name\": tool name, \"arguments\": object}]",
    result: bare_result,
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#""[" ws call ws ("," ws call ws)* "]""#,
        one_call: r#""[" ws call ws "]""#,
        answer_excludes: "{[",
        args_key: "arguments",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[],
        names: &[("xlam", 60)],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("[{}]", json_call(name, args, "arguments"))
}
