//! `deepseek-dsml` (DeepSeek V3.2 `function_calls`, V4 `tool_calls`):
//! `<｜DSML｜function_calls><｜DSML｜invoke name="f"><｜DSML｜parameter name="a" string="true">v</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>`.
//! `string="true"` values are strings as written; others are JSON.

use serde_json::{Map, Value};

use super::grammar::{Rules, call_list, lit, text_until, xml_args};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn, THINK, tojson};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{AttrArgs, attr_args, legal_close, marker_after};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, xml_attr};

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
const INVOKE_END: &str = "</｜DSML｜invoke>";
const PARAM_END: &str = "</｜DSML｜parameter>";

/// The tags inside a DSML block: V3.2/V4 write `<｜DSML｜invoke`, V4.1 `<｜DSML｜ invoke` (a
/// space after the bar).
pub(crate) struct Tags {
    pub invoke: &'static str,
    pub invoke_end: &'static str,
    pub param: &'static str,
    pub param_end: &'static str,
}

pub(crate) const V32: Tags = Tags {
    invoke: "<｜DSML｜invoke",
    invoke_end: INVOKE_END,
    param: "<｜DSML｜parameter",
    param_end: PARAM_END,
};

/// V3.2's template puts results in a `<function_results>` block (one `<result>` per call).
pub(crate) fn result(r: &ResultTurn) -> String {
    format!(
        "<function_results>\n<result>{}</result>\n</function_results>",
        r.body
    )
}

/// A block of `calls`/`calls_end` around one invoke per call, in `tags`.
pub(crate) fn example_in(
    tags: &Tags,
    calls: (&str, &str),
    name: &str,
    args: &Map<String, Value>,
) -> String {
    let Tags {
        invoke,
        invoke_end,
        param,
        param_end,
    } = tags;
    let params: String = args
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{param} name=\"{k}\" string=\"true\">{s}{param_end}\n"),
            other => format!(
                "{param} name=\"{k}\" string=\"false\">{}{param_end}\n",
                tojson(other)
            ),
        })
        .collect();
    format!(
        "{}\n{invoke} name=\"{name}\">\n{params}{invoke_end}\n{}",
        calls.0, calls.1
    )
}

fn example(name: &str, args: &Map<String, Value>) -> String {
    example_in(&V32, (CALLS_V32, CALLS_V32_END), name, args)
}

fn end_v32(body: &str) -> Option<(usize, usize)> {
    marker_after(body, CALLS_V32_END, &[INVOKE_END])
}

fn end_v4(body: &str) -> Option<(usize, usize)> {
    marker_after(body, CALLS_V4_END, &[INVOKE_END])
}

fn dsml_calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    calls_in(&V32, raw, inner, terminated)
}

/// The invokes of a block in `tags`.
pub(crate) fn calls_in(tags: &Tags, raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
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
        let Some(after) = t.strip_prefix(tags.invoke) else {
            let near = crate::parse::near(t, 30);
            out.push(Parsed::bad(
                raw,
                format!(
                    "unexpected text `{near}` where {} was expected",
                    tags.invoke
                ),
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
        let Some(e) = legal_close(body, tags.invoke_end, &[tags.invoke]) else {
            out.push(Parsed::bad(raw, format!("missing {}", tags.invoke_end)));
            return out;
        };
        out.push(match params_in(tags, &body[..e]) {
            Ok(args) => Parsed::DeclaredCall {
                name: name.trim().to_string(),
                args,
                id: None,
            },
            Err(err) => Parsed::bad(raw, err),
        });
        rest = &body[e + tags.invoke_end.len()..];
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "no calls in the tool-call block"));
    }
    out
}

/// `(name, value, string="true")` of each parameter; a value without `string="true"` is JSON.
fn params_in(tags: &Tags, body: &str) -> Result<Vec<(String, String, bool)>, String> {
    let spec = AttrArgs {
        open: tags.param,
        header_end: ">",
        close: tags.param_end,
        key: "name",
        text: ("string", "true"),
        noun: "parameter",
        unterminated: "unterminated parameter tag",
        keyless: "parameter without a name",
    };
    attr_args(&spec, body)
}

/// The same tags with ASCII bars (`<|DSML|…>`), which models also write. Read in their own
/// spelling, so a value that quotes either spelling stays as written.
const ASCII: Tags = Tags {
    invoke: "<|DSML|invoke",
    invoke_end: "</|DSML|invoke>",
    param: "<|DSML|parameter",
    param_end: "</|DSML|parameter>",
};

fn end_ascii_v32(body: &str) -> Option<(usize, usize)> {
    marker_after(body, "</|DSML|function_calls>", &["</|DSML|invoke>"])
}

fn end_ascii_v4(body: &str) -> Option<(usize, usize)> {
    marker_after(body, "</|DSML|tool_calls>", &["</|DSML|invoke>"])
}

fn dsml_ascii_calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    calls_in(&ASCII, raw, inner, terminated)
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

/// The V3.2 block the example teaches.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    grammar_in(&V32, (CALLS_V32, CALLS_V32_END), tools, parallel)
}

/// A block of `calls` in `tags`. The tags are plain literals (several tokens each); a text
/// value cannot contain the parameter's closing tag.
pub(crate) fn grammar_in(
    tags: &Tags,
    calls: (&str, &str),
    tools: &[ToolDef],
    parallel: bool,
) -> String {
    let mut r = Rules::default();
    let text = text_until(&mut r, tags.param_end, &[]);
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = xml_args(
            t,
            &text,
            tags.param_end,
            "WS?",
            r,
            |name, value, is_text| {
                let open = format!("{} name=\"{name}\" string=\"{is_text}\">", tags.param);
                format!("{} {value}", lit(&open))
            },
        );
        format!(
            "{} WS? {args} WS? {}",
            lit(&format!("{} name=\"{}\">", tags.invoke, t.name)),
            lit(tags.invoke_end)
        )
    });
    r.named(
        "calls",
        &format!("{} WS? call_list WS? {}", lit(calls.0), lit(calls.1)),
    );
    r.finish()
}
