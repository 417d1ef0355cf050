//! `deepseek-dsml` (DeepSeek V3.2 `function_calls`, V4 `tool_calls`):
//! `<｜DSML｜function_calls><｜DSML｜invoke name="f"><｜DSML｜parameter name="a" string="true">v</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>`.
//! `string="true"` values are strings as written; others are JSON.

use serde_json::{Map, Value};

use super::grammar::{Rules, call_list, lit, text_until, xml_args};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn, THINK, tojson};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{legal_close, marker_after};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, typed_value, xml_attr};

pub(crate) static FORMAT: Format = Format {
    name: "deepseek-dsml",
    detector: |s| Box::new(MarkerDetector::new(super::deepseek::DEEPSEEK, &[], s)),
    reasoning: THINK,
    end_tokens: &["<｜end▁of▁sentence｜>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, write a <｜DSML｜function_calls> block with one <｜DSML｜invoke name=\"NAME\"> per call and one <｜DSML｜parameter name=\"ARG\" string=\"true|false\"> per argument (string=\"true\" for text, else a JSON value)",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("｜DSML｜", 45)],
        names: &[("deepseekv32", 80), ("deepseekv4", 80)],
        family: &[],
    },
};

const CALLS_V32: &str = "<｜DSML｜function_calls>";
const CALLS_V32_END: &str = "</｜DSML｜function_calls>";
const CALLS_V4: &str = "<｜DSML｜tool_calls>";
const CALLS_V4_END: &str = "</｜DSML｜tool_calls>";
const INVOKE: &str = "<｜DSML｜invoke";
const INVOKE_END: &str = "</｜DSML｜invoke>";
const PARAM: &str = "<｜DSML｜parameter";
const PARAM_END: &str = "</｜DSML｜parameter>";

/// V3.2's template puts results in a `<function_results>` block (one `<result>` per call).
fn result(r: &ResultTurn) -> String {
    format!(
        "<function_results>\n<result>{}</result>\n</function_results>",
        r.body
    )
}

fn example(name: &str, args: &Map<String, Value>) -> String {
    let params: String = args
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{PARAM} name=\"{k}\" string=\"true\">{s}{PARAM_END}\n"),
            other => format!(
                "{PARAM} name=\"{k}\" string=\"false\">{}{PARAM_END}\n",
                tojson(other)
            ),
        })
        .collect();
    format!("{CALLS_V32}\n{INVOKE} name=\"{name}\">\n{params}{INVOKE_END}\n{CALLS_V32_END}")
}

fn end_v32(body: &str) -> Option<(usize, usize)> {
    marker_after(body, CALLS_V32_END, &[INVOKE_END])
}

fn end_v4(body: &str) -> Option<(usize, usize)> {
    marker_after(body, CALLS_V4_END, &[INVOKE_END])
}

fn dsml_calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, "tool-call block cut off before its end")];
    }
    let mut out = Vec::new();
    let mut rest = inner;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let Some(after) = t.strip_prefix(INVOKE) else {
            let near = crate::parse::near(t, 30);
            out.push(Parsed::bad(
                raw,
                format!("unexpected text `{near}` where {INVOKE} was expected"),
            ));
            return out;
        };
        let Some(gt) = after.find('>') else {
            out.push(Parsed::bad(raw, "unterminated invoke tag"));
            return out;
        };
        let Some(name) = xml_attr(&after[..gt], "name").filter(|n| !n.trim().is_empty()) else {
            out.push(Parsed::bad(raw, "invoke without a name"));
            return out;
        };
        let body = &after[gt + 1..];
        let Some(e) = legal_close(body, INVOKE_END, &[INVOKE]) else {
            out.push(Parsed::bad(raw, format!("missing {INVOKE_END}")));
            return out;
        };
        out.push(match dsml_params(&body[..e]) {
            Ok(arguments) => Parsed::Call {
                name: name.trim().to_string(),
                arguments,
                id: None,
            },
            Err(err) => Parsed::bad(raw, err),
        });
        rest = &body[e + INVOKE_END.len()..];
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "no calls in the tool-call block"));
    }
    out
}

fn dsml_params(body: &str) -> Result<Value, String> {
    let mut args = Map::new();
    let mut rest = body;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let after = t.strip_prefix(PARAM).ok_or_else(|| {
            let near = crate::parse::near(t, 30);
            format!("unexpected text `{near}` where {PARAM} was expected")
        })?;
        let gt = after.find('>').ok_or("unterminated parameter tag")?;
        let attrs = &after[..gt];
        let key = xml_attr(attrs, "name")
            .filter(|n| !n.trim().is_empty())
            .ok_or("parameter without a name")?;
        let value_and_rest = &after[gt + 1..];
        let e = legal_close(value_and_rest, PARAM_END, &[PARAM])
            .ok_or_else(|| format!("missing {PARAM_END} for `{key}`"))?;
        let value = &value_and_rest[..e];
        if value.contains(PARAM) {
            return Err(format!(
                "missing {PARAM_END} for `{key}` before the next parameter"
            ));
        }
        let v = match xml_attr(attrs, "string").as_deref() {
            Some("true") => Value::String(value.to_string()),
            _ => serde_json::from_str::<Value>(value.trim())
                .unwrap_or_else(|_| typed_value(value, None, false)),
        };
        args.insert(key.trim().to_string(), v);
        rest = &value_and_rest[e + PARAM_END.len()..];
    }
    Ok(Value::Object(args))
}

/// The same tags with ASCII bars (`<|DSML|…>`), which models also write.
fn ascii_to_dsml(s: &str) -> String {
    s.replace("|DSML|", "｜DSML｜")
}

fn end_ascii_v32(body: &str) -> Option<(usize, usize)> {
    marker_after(body, "</|DSML|function_calls>", &["</|DSML|invoke>"])
}

fn end_ascii_v4(body: &str) -> Option<(usize, usize)> {
    marker_after(body, "</|DSML|tool_calls>", &["</|DSML|invoke>"])
}

fn dsml_ascii_calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    dsml_calls(raw, &ascii_to_dsml(inner), terminated)
}

pub(crate) const DSML_BLOCKS: [Block; 4] = [
    Block {
        start: CALLS_V32,
        end: End::Finder {
            find: end_v32,
            closers: ">",
        },
        parse: dsml_calls,
    },
    Block {
        start: CALLS_V4,
        end: End::Finder {
            find: end_v4,
            closers: ">",
        },
        parse: dsml_calls,
    },
    Block {
        start: "<|DSML|function_calls>",
        end: End::Finder {
            find: end_ascii_v32,
            closers: ">",
        },
        parse: dsml_ascii_calls,
    },
    Block {
        start: "<|DSML|tool_calls>",
        end: End::Finder {
            find: end_ascii_v4,
            closers: ">",
        },
        parse: dsml_ascii_calls,
    },
];

/// The V3.2 block the example teaches. `<｜DSML｜…>` tags are plain literals (several tokens
/// each); a text value cannot contain the parameter's closing tag.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    let mut r = Rules::default();
    let text = text_until(&mut r, PARAM_END, &[]);
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = xml_args(t, &text, PARAM_END, "WS?", r, |name, value, is_text| {
            let open = format!("{PARAM} name=\"{name}\" string=\"{is_text}\">");
            format!("{} {value}", lit(&open))
        });
        format!(
            "{} WS? {args} WS? {}",
            lit(&format!("{INVOKE} name=\"{}\">", t.name)),
            lit(INVOKE_END)
        )
    });
    r.named(
        "calls",
        &format!(
            "{} WS? call_list WS? {}",
            lit(CALLS_V32),
            lit(CALLS_V32_END)
        ),
    );
    r.finish()
}
