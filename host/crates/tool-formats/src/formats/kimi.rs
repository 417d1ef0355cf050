//! `kimi-k2` (Kimi K2):
//! `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`.
//! The call id (`functions.NAME:0`) is kept as the call's id.

use serde_json::{Map, Value};

use super::grammar::{Rules, args_schema, call_list, json_expr, lit};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn, THINK, tojson};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, call_with_json_args};
use crate::scan::{unquoted_end, unquoted_find};

pub(crate) static FORMAT: Format = Format {
    name: "kimi-k2",
    detector: |s| Box::new(MarkerDetector::new(KIMI, HIDDEN, s)),
    reasoning: THINK,
    end_tokens: &["<|im_end|>"],
    // K2-Thinking may start its calls without closing its reasoning.
    reasoning_ends: &["<|tool_calls_section_begin|>"],
    example,
    instructions: "To call a function, write <|tool_calls_section_begin|>, then for each call <|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|> followed by the JSON arguments and <|tool_call_end|>, then <|tool_calls_section_end|>",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[
            ("<|tool_calls_section_begin|>", 15),
            ("<|tool_call_argument_begin|>", 15),
        ],
        names: &[("kimi", 60)],
        family: &[],
    },
};

const SECTION: &str = "<|tool_calls_section_begin|>";
const SECTION_ALT: &str = "<|tool_call_section_begin|>";
const SECTION_END: &str = "<|tool_calls_section_end|>";
const SECTION_END_ALT: &str = "<|tool_call_section_end|>";
const CALL: &str = "<|tool_call_begin|>";
const ARGS: &str = "<|tool_call_argument_begin|>";
const CALL_END: &str = "<|tool_call_end|>";
const HIDDEN: &[&str] = &[SECTION_END, SECTION_END_ALT];

fn example(name: &str, args: &Map<String, Value>) -> String {
    let args = tojson(&Value::Object(args.clone()));
    format!("{SECTION}{CALL}functions.{name}:0{ARGS}{args}{CALL_END}{SECTION_END}")
}

fn result(r: &ResultTurn) -> String {
    format!("## Return of {}\n{}", r.id, r.body)
}

fn section_end(body: &str) -> Option<(usize, usize)> {
    unquoted_find(body, &[SECTION_END, SECTION_END_ALT])
        .map(|(p, i)| (p, p + [SECTION_END, SECTION_END_ALT][i].len()))
}

/// `functions.get_weather:0` → `get_weather`.
fn name_of(id: &str) -> &str {
    let id = id.trim();
    let id = id.strip_prefix("functions.").unwrap_or(id);
    match id.rsplit_once(':') {
        Some((n, idx)) if idx.chars().all(|c| c.is_ascii_digit()) => n,
        _ => id,
    }
}

fn kimi_calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut rest = inner;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let Some(after) = t.strip_prefix(CALL) else {
            let near = crate::parse::near(t, 30);
            out.push(Parsed::bad(
                raw,
                format!("unexpected text `{near}` where {CALL} was expected"),
            ));
            return out;
        };
        let Some(a) = after.find(ARGS) else {
            out.push(Parsed::bad(raw, format!("missing {ARGS}")));
            return out;
        };
        let id = after[..a].trim();
        let args = &after[a + ARGS.len()..];
        let Some((e, next)) = unquoted_end(args, CALL_END) else {
            out.push(Parsed::bad(raw, format!("missing {CALL_END}")));
            return out;
        };
        let name = name_of(id);
        if name.is_empty() {
            out.push(Parsed::bad(raw, "tool call without a name"));
        } else {
            let id = Some(id.to_string()).filter(|s| !s.is_empty());
            out.push(call_with_json_args(raw, name, &args[..e], id));
        }
        rest = &args[next..];
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "no calls in the tool-call section"));
    }
    // Without the section end (a stop token), complete calls still count; a cut-off call was
    // reported above as missing its end.
    let _ = terminated;
    out
}

/// A call without the section markers around it (`inner` follows `<|tool_call_begin|>`).
fn kimi_bare_call(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, format!("missing {CALL_END}"))];
    }
    let Some((id, args)) = inner.split_once(ARGS) else {
        return vec![Parsed::bad(raw, format!("missing {ARGS}"))];
    };
    let name = name_of(id);
    if name.is_empty() {
        return vec![Parsed::bad(raw, "tool call without a name")];
    }
    let id = Some(id.trim().to_string()).filter(|s| !s.is_empty());
    vec![call_with_json_args(raw, name, args, id)]
}

pub(crate) static KIMI: &[Block] = &[
    Block {
        start: SECTION,
        end: End::Finder {
            find: section_end,
            closers: ">",
        },
        parse: kimi_calls,
    },
    Block {
        start: SECTION_ALT,
        end: End::Finder {
            find: section_end,
            closers: ">",
        },
        parse: kimi_calls,
    },
    Block {
        start: CALL,
        end: End::Finder {
            find: |b| unquoted_end(b, CALL_END),
            closers: ">",
        },
        parse: kimi_bare_call,
    },
];

/// The section of calls; the markers are special tokens of Kimi K2's vocabulary.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    let mut r = Rules::default();
    call_list(tools, parallel, "WS?", &mut r, |t, _| {
        format!(
            "<|tool_call_begin|> {} /[0-9]{{1,4}}/ <|tool_call_argument_begin|> {} <|tool_call_end|>",
            lit(&format!("functions.{}:", t.name)),
            json_expr(&args_schema(t))
        )
    });
    r.named(
        "calls",
        "<|tool_calls_section_begin|> call_list <|tool_calls_section_end|>",
    );
    r.finish()
}
