//! `tool-call-xml`: `<tool_call name="f"><argument name="a">v</argument></tool_call>`, values
//! as text typed by the tool's schema, `<`, `>` and `&` as XML entities.

use serde_json::{Map, Value};

use super::grammar::{Rules, call_list, lit, text_until, xml_args};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn, THINK, xml_text};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{json_calls, json_or_marker_end, lead_ws, marker_after, tag_args};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, call_with_json_args, xml_attr};
use crate::scan::unquoted_end;

pub(crate) static FORMAT: Format = Format {
    name: "tool-call-xml",
    detector: |s| Box::new(MarkerDetector::new(TOOL_CALL_XML, &[], s).with_entities()),
    reasoning: THINK,
    end_tokens: &[],
    reasoning_ends: &[],
    example,
    instructions: "To call a tool, write a <tool_call name=\"…\"> element with one <argument name=\"…\"> element per argument",
    result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<argument name=", 20), ("<tool_call name=", 20)],
        names: &[],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    let a: String = args
        .iter()
        .map(|(k, v)| format!("<argument name=\"{k}\">{}</argument>", xml_text(v)))
        .collect();
    format!("<tool_call name=\"{name}\">{a}</tool_call>")
}

fn result(r: &ResultTurn) -> String {
    format!("<tool_result name=\"{}\">{}</tool_result>", r.name, r.body)
}

/// End of an XML call: a self-closing opening tag, or `</tool_call>`.
fn xml_end(body: &str) -> Option<(usize, usize)> {
    let gt = body.find('>')?;
    if body[..gt].ends_with('/') {
        return Some((gt + 1, gt + 1));
    }
    let rest = &body[gt + 1..];
    if rest.trim_start().starts_with('{') {
        return json_or_marker_end(rest, &["</tool_call>"]).map(|(a, b)| (gt + 1 + a, gt + 1 + b));
    }
    // The element ends right after an argument closes, or right after its opening tag when it
    // has no arguments: a `</tool_call>` inside a value follows value text (`<b>x</b></tool_call>`
    // in a value included).
    if rest.trim_start().starts_with("</tool_call>") {
        let p = gt + 1 + lead_ws(rest);
        return Some((p, p + "</tool_call>".len()));
    }
    let p = gt + 1 + marker_after(rest, "</tool_call>", &["</argument>"])?.0;
    Some((p, p + "</tool_call>".len()))
}

fn xml_call(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let Some(gt) = inner.find('>') else {
        return vec![Parsed::bad(raw, "unterminated <tool_call> tag")];
    };
    let attrs = inner[..gt].trim_end_matches('/');
    let mut body = &inner[gt + 1..];
    let mut terminated = terminated;
    // The response ended right after a `</tool_call>` the end finder did not take because the
    // last `</argument>` was missing: that close tag still ends the element.
    if !terminated && let Some(b) = body.trim_end().strip_suffix("</tool_call>") {
        body = b;
        terminated = true;
    }
    let Some(name) = xml_attr(attrs, "name").filter(|n| !n.trim().is_empty()) else {
        if body.trim_start().starts_with('{') {
            return json_calls(raw, body, terminated);
        }
        return vec![Parsed::bad(raw, "<tool_call> has no name=\"…\" attribute")];
    };
    if !terminated && !inner[..gt].ends_with('/') {
        return vec![Parsed::bad(raw, "missing </tool_call>")];
    }
    // Models that mix formats put a JSON object of arguments inside the element.
    if body.trim_start().starts_with('{') {
        return vec![call_with_json_args(raw, name.trim(), body, None)];
    }
    match tag_args(body, "<argument", "</argument>", |open| {
        xml_attr(open, "name")
    }) {
        Ok(args) => vec![Parsed::TextCall {
            name: name.trim().to_string(),
            args,
            id: None,
        }],
        Err(e) => vec![Parsed::bad(raw, e)],
    }
}

pub(crate) static TOOL_CALL_XML: &[Block] = &[
    Block {
        start: "<tool_call ",
        end: End::Finder {
            find: xml_end,
            // A JSON body can end on any character (`json_or_marker_end`).
            closers: "",
        },
        parse: xml_call,
    },
    Block {
        start: "<tool_call\n",
        end: End::Finder {
            find: xml_end,
            // A JSON body can end on any character (`json_or_marker_end`).
            closers: "",
        },
        parse: xml_call,
    },
    Block {
        start: "<tool_call>",
        // A JSON body: `</tool_call>` inside one of its strings is text.
        end: End::Finder {
            find: |b| unquoted_end(b, "</tool_call>"),
            closers: ">",
        },
        parse: xml_no_attr,
    },
];

fn xml_no_attr(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    // `<tool_call>` without attributes: only a JSON body makes sense.
    if inner.trim_start().starts_with('{') {
        return json_calls(raw, inner, terminated);
    }
    vec![Parsed::bad(raw, "<tool_call> has no name=\"…\" attribute")]
}

/// One element per call with an `<argument>` per parameter; a text value cannot contain
/// `</argument>`. Values are written as the example writes them (no entities).
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    const CLOSE: &str = "</argument>";
    let mut r = Rules::default();
    let text = text_until(&mut r, CLOSE, &[]);
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = xml_args(t, &text, CLOSE, "WS?", r, |name, value, _| {
            format!("{} {value}", lit(&format!("<argument name=\"{name}\">")))
        });
        format!(
            "{} WS? {args} WS? \"</tool_call>\"",
            lit(&format!("<tool_call name=\"{}\">", t.name))
        )
    });
    r.named("calls", "call_list");
    r.finish()
}
