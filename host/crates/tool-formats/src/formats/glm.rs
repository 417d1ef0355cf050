//! `glm` (GLM 4.5–4.7): `<tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>`
//! (4.7 drops the newlines). String values are written bare and the rest as JSON, so values are
//! typed by the tool's schema.

use serde_json::{Map, Value};

use super::grammar::{Rules, call_list, lit, text_until, xml_args};
use super::{Format, Grammar, Hints, LarkShape, THINK, tool_response_result, xml_text};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{json_calls, json_or_marker_end, legal_close, marker_after};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, call_with_json_args};

pub(crate) static FORMAT: Format = Format {
    name: "glm",
    detector: |s| Box::new(MarkerDetector::new(GLM, &["</tool_call>"], s).with_verbatim_values()),
    reasoning: THINK,
    end_tokens: &["<|observation|>", "<|user|>", "<|endoftext|>"],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, write <tool_call> with the function name, then one <arg_key>NAME</arg_key><arg_value>VALUE</arg_value> pair per argument, then </tool_call>",
    result: tool_response_result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Hermes,
    hints: Hints {
        template: &[("<arg_key>", 15)],
        names: &[("glm4", 60), ("glm5", 60), ("glmz1", 60)],
        family: &[("[gMASK]", 25)],
    },
};

const KEY: &str = "<arg_key>";
const KEY_END: &str = "</arg_key>";
const VALUE: &str = "<arg_value>";
const VALUE_END: &str = "</arg_value>";

fn example(name: &str, args: &Map<String, Value>) -> String {
    let a: String = args
        .iter()
        .map(|(k, v)| format!("{KEY}{k}{KEY_END}\n{VALUE}{}{VALUE_END}\n", xml_text(v)))
        .collect();
    format!("<tool_call>{name}\n{a}</tool_call>")
}

/// `</tool_call>` right after a value (one inside a value is followed by more value), or the
/// first one when the call has no arguments.
fn glm_end(body: &str) -> Option<(usize, usize)> {
    let t = body.trim_start();
    if t.starts_with(['{', '[']) {
        return json_or_marker_end(body, &["</tool_call>"]);
    }
    let first = body.find("</tool_call>")?;
    if !body[..first].contains(KEY) {
        // A call without arguments.
        return Some((first, first + "</tool_call>".len()));
    }
    marker_after(body, "</tool_call>", &[VALUE_END])
}

fn glm_call(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, "missing </tool_call>")];
    }
    let t = inner.trim();
    if t.starts_with(['{', '[']) {
        return json_calls(raw, inner, terminated);
    }
    let (name, mut rest) = match t.find(KEY) {
        Some(p) => (t[..p].trim(), &t[p..]),
        None => (t, ""),
    };
    // GLM-4 (0414) writes the name and then the arguments as JSON on the next line.
    if rest.is_empty()
        && let Some(p) = name.find('{')
        && !name[..p].trim().is_empty()
        && !name[..p].trim().contains(char::is_whitespace)
    {
        return vec![call_with_json_args(raw, name[..p].trim(), &name[p..], None)];
    }
    if name.is_empty() || name.contains(['<', '>', '\n']) {
        return vec![Parsed::bad(raw, format!("invalid function name `{name}`"))];
    }
    let mut args = Vec::new();
    loop {
        let r = rest.trim_start();
        if r.is_empty() {
            break;
        }
        let Some(after_key) = r.strip_prefix(KEY) else {
            let near = crate::parse::near(r, 30);
            return vec![Parsed::bad(
                raw,
                format!("unexpected text `{near}` where {KEY} was expected"),
            )];
        };
        let Some(ke) = after_key.find(KEY_END) else {
            return vec![Parsed::bad(raw, format!("missing {KEY_END}"))];
        };
        let key = after_key[..ke].trim();
        let Some(after_value) = after_key[ke + KEY_END.len()..]
            .trim_start()
            .strip_prefix(VALUE)
        else {
            return vec![Parsed::bad(raw, format!("missing {VALUE} for `{key}`"))];
        };
        let Some(ve) = legal_close(after_value, VALUE_END, &[KEY]) else {
            return vec![Parsed::bad(raw, format!("missing {VALUE_END} for `{key}`"))];
        };
        let value = &after_value[..ve];
        if value.contains(KEY) {
            return vec![Parsed::bad(
                raw,
                format!("missing {VALUE_END} for `{key}` before the next {KEY}"),
            )];
        }
        args.push((key.to_string(), value.to_string()));
        rest = &after_value[ve + VALUE_END.len()..];
    }
    vec![Parsed::TextCall {
        name: name.to_string(),
        args,
        id: None,
    }]
}

pub(crate) static GLM: &[Block] = &[Block {
    start: "<tool_call>",
    end: End::Finder {
        find: glm_end,
        // A JSON body can end on any character (`json_or_marker_end`): re-run on every chunk.
        closers: "",
    },
    parse: glm_call,
}];

/// One `<tool_call>` per call; a text value cannot contain `</arg_value>`. GLM's vocabulary
/// has the tags as ordinary (non-control) added tokens, so they are literals.
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    let mut r = Rules::default();
    let text = text_until(&mut r, VALUE_END, &[]);
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = xml_args(t, &text, VALUE_END, "", r, |name, value, _| {
            let key = format!("{KEY}{name}{KEY_END}");
            format!("{} WS? {} {value} WS?", lit(&key), lit(VALUE))
        });
        format!(
            "{} WS? {args} \"</tool_call>\"",
            lit(&format!("<tool_call>{}", t.name))
        )
    });
    r.named("calls", "call_list");
    r.finish()
}
