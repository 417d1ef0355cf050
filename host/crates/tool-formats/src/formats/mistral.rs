//! `mistral` (Mistral, Ministral, Magistral, Devstral): `[TOOL_CALLS][{…}, …]` or
//! `[TOOL_CALLS]name[ARGS]{…}` (optionally `[CALL_ID]id`); Magistral reasons in `[THINK]…[/THINK]`.

use serde_json::{Map, Value, json};

use super::{Format, Grammar, GrammarShape, Hints, ResultTurn, json_call};
use crate::convert::PromptStyle;
use crate::detect::bodies::{json_calls, lead_ws};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, call_with_json_args};
use crate::scan::json_value_end;

pub(crate) static FORMAT: Format = Format {
    name: "mistral",
    detector: |s| Box::new(MarkerDetector::new(MISTRAL, &[], s)),
    reasoning: &[("[THINK]", "[/THINK]"), ("<think>", "</think>")],
    end_tokens: &["</s>"],
    reasoning_ends: &[],
    example,
    instructions: "To call tools, write [TOOL_CALLS] followed by a JSON list of calls",
    result,
    grammar: Some(Grammar::Json(GrammarShape {
        calls: r#""[TOOL_CALLS]" "[" ws call ws ("," ws call ws)* "]""#,
        one_call: r#""[TOOL_CALLS]" "[" ws call ws "]""#,
        answer_excludes: "[",
        args_key: "arguments",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("[TOOL_CALLS]", 70)],
        names: &[
            ("mistral", 110),
            ("mixtral", 110),
            ("ministral", 110),
            ("magistral", 110),
            ("devstral", 110),
            ("codestral", 110),
        ],
        family: &[("[INST]", 50)],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    format!("[TOOL_CALLS][{}]", json_call(name, args, "arguments"))
}

/// As Mistral's templates for the JSON-list call form write it: the content first, then the id.
fn result(r: &ResultTurn) -> String {
    format!(
        "[TOOL_RESULTS] {{\"content\": {}, \"call_id\": {}}}[/TOOL_RESULTS]",
        json!(r.body),
        json!(r.id)
    )
}

fn mistral_end(body: &str) -> Option<(usize, usize)> {
    let ws = lead_ws(body);
    let t = &body[ws..];
    if t.starts_with('[') {
        let e = ws + json_value_end(t)?;
        return Some((e, e));
    }
    let p = t.find("[ARGS]")? + "[ARGS]".len();
    let ws2 = lead_ws(&t[p..]);
    let e = ws + p + ws2 + json_value_end(&t[p + ws2..])?;
    Some((e, e))
}

fn mistral_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let t = inner.trim();
    if t.starts_with('[') || t.starts_with('{') {
        return json_calls(raw, t, terminated);
    }
    let Some((head, args)) = t.split_once("[ARGS]") else {
        return vec![Parsed::bad(
            raw,
            "expected a JSON list or `name[ARGS]{…}` after [TOOL_CALLS]",
        )];
    };
    let (name, id) = match head.split_once("[CALL_ID]") {
        Some((n, id)) => (
            n.trim(),
            Some(id.trim().to_string()).filter(|s| !s.is_empty()),
        ),
        None => (head.trim(), None),
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return vec![Parsed::bad(
            raw,
            format!("invalid tool name `{name}` before [ARGS]"),
        )];
    }
    vec![call_with_json_args(raw, name, args, id)]
}

pub(crate) static MISTRAL: &[Block] = &[Block {
    start: "[TOOL_CALLS]",
    end: End::Finder {
        find: mistral_end,
        closers: "}]",
    },
    parse: mistral_body,
}];
