//! `kimi-k3` (Kimi K3): sections opened by `<|open|>NAME …<|sep|>` and closed by
//! `<|close|>NAME<|sep|>`. Reasoning is a `think` section; calls are a `tools` section:
//! `<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="a" type="string"<|sep|>v<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>`,
//! all inside the `message` section, whose markers are never the user's text.
//! `type="string"` values are the text as written, other types JSON; the tool's schema decides
//! where the two disagree.
//!
//! A module of its own: nothing of K2's syntax (JSON arguments after `functions.NAME:0`) is left.

use serde_json::{Map, Value};

use super::grammar::{Rules, call_list, lit, xml_args_to};
use super::{Format, Grammar, Hints, LarkShape, bare_result, tojson};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{AttrArgs, attr_args, legal_close, marker_after};
use crate::detect::marker::{Block, End, MarkerDetector};
use crate::parse::{Parsed, xml_attr};

pub(crate) static FORMAT: Format = Format {
    name: "kimi-k3",
    detector: |s| Box::new(MarkerDetector::new(K3, HIDDEN, s)),
    // The message section may open before the reasoning.
    reasoning: &[
        (THINK, THINK_END),
        ("<|open|>message<|sep|><|open|>think<|sep|>", THINK_END),
    ],
    end_tokens: &[MESSAGE_END],
    // Like K2-Thinking, calls may start straight from unclosed reasoning.
    reasoning_ends: &[TOOLS],
    example,
    instructions: "To call a function, write <|open|>tools<|sep|>, then for each call <|open|>call tool=\"NAME\" index=\"N\"<|sep|> with one <|open|>argument key=\"ARG\" type=\"TYPE\"<|sep|>VALUE<|close|>argument<|sep|> per argument (type=\"string\" for text written as is, else the JSON type and a JSON value) and <|close|>call<|sep|>, then <|close|>tools<|sep|>",
    // The tool turn is a role of its own.
    result: bare_result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<|open|>tools<|sep|>", 15), ("<|open|>argument", 15)],
        // Before K2's `kimi` (60).
        names: &[("kimik3", 55)],
        family: &[],
    },
};

const THINK: &str = "<|open|>think<|sep|>";
const THINK_END: &str = "<|close|>think<|sep|>";
const TOOLS: &str = "<|open|>tools<|sep|>";
const TOOLS_END: &str = "<|close|>tools<|sep|>";
const CALL: &str = "<|open|>call";
const CALL_END: &str = "<|close|>call<|sep|>";
const ARG: &str = "<|open|>argument";
const ARG_END: &str = "<|close|>argument<|sep|>";
const SEP: &str = "<|sep|>";
const MESSAGE: &str = "<|open|>message<|sep|>";
const MESSAGE_END: &str = "<|close|>message<|sep|>";
/// Section markers that are never text: the message around the answer, and a tools close left
/// after a call that was read without its section.
const HIDDEN: &[&str] = &[MESSAGE, MESSAGE_END, TOOLS_END];

/// The `type` attribute of a value: `string` for text, else the JSON kind.
fn type_of(v: &Value) -> &'static str {
    crate::parse::json_kind(v)
}

fn example(name: &str, args: &Map<String, Value>) -> String {
    let a: String = args
        .iter()
        .map(|(k, v)| {
            let value = match v {
                Value::String(s) => s.clone(),
                other => tojson(other),
            };
            format!(
                "<|open|>argument key=\"{k}\" type=\"{}\"{SEP}{value}{ARG_END}",
                type_of(v)
            )
        })
        .collect();
    format!("{TOOLS}{CALL} tool=\"{name}\" index=\"1\"{SEP}{a}{CALL_END}{TOOLS_END}")
}

/// `<|close|>tools<|sep|>` right after a call closes (one inside a value is not), or the first
/// one of a section without calls.
fn tools_end(body: &str) -> Option<(usize, usize)> {
    let first = body.find(TOOLS_END)?;
    if !body[..first].contains(CALL) {
        return Some((first, first + TOOLS_END.len()));
    }
    marker_after(body, TOOLS_END, &[CALL_END])
}

/// `<|close|>call<|sep|>` right after an argument closes, or the first one of a call without
/// arguments.
fn call_end(body: &str) -> Option<(usize, usize)> {
    let first = body.find(CALL_END)?;
    if !body[..first].contains(ARG) {
        return Some((first, first + CALL_END.len()));
    }
    marker_after(body, CALL_END, &[ARG_END])
}

fn section(raw: &str, inner: &str, _terminated: bool) -> Vec<Parsed> {
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
        let Some(e) = legal_close(after, CALL_END, &[CALL]) else {
            out.push(Parsed::bad(raw, format!("missing {CALL_END}")));
            return out;
        };
        out.push(one_call(raw, &after[..e]));
        rest = &after[e + CALL_END.len()..];
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "no calls in the tools section"));
    }
    // Without the section's close (a stop token may cut it), complete calls still count; a
    // cut-off call was reported above as missing its close.
    out
}

/// A call without the tools section around it (`inner` follows `<|open|>call`).
fn bare_call(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, format!("missing {CALL_END}"))];
    }
    vec![one_call(raw, inner)]
}

/// ` tool="f" index="1"<|sep|>` and the arguments, up to the call's close.
fn one_call(raw: &str, s: &str) -> Parsed {
    let Some(h) = s.find(SEP) else {
        return Parsed::bad(raw, format!("call header without {SEP}"));
    };
    let Some(name) = xml_attr(&s[..h], "tool").filter(|n| !n.trim().is_empty()) else {
        return Parsed::bad(raw, "call without a tool=\"…\" attribute");
    };
    match attr_args(&ARGS, &s[h + SEP.len()..]) {
        Ok(args) => Parsed::DeclaredCall {
            name: name.trim().to_string(),
            args,
            id: None,
        },
        Err(e) => Parsed::bad(raw, e),
    }
}

/// K3's arguments: `<|open|>argument key="a" type="string"<|sep|>v<|close|>argument<|sep|>`.
const ARGS: AttrArgs = AttrArgs {
    open: ARG,
    header_end: SEP,
    close: ARG_END,
    key: "key",
    text: ("type", "string"),
    noun: "argument",
    unterminated: "argument header without <|sep|>",
    keyless: "argument without a key=\"…\" attribute",
};

pub(crate) static K3: &[Block] = &[
    Block {
        start: TOOLS,
        end: End::Finder {
            find: tools_end,
            closers: ">",
        },
        parse: section,
    },
    Block {
        start: CALL,
        end: End::Finder {
            find: call_end,
            closers: ">",
        },
        parse: bare_call,
    },
];

/// The tools section. `<|open|>`, `<|close|>` and `<|sep|>` are special tokens of the
/// vocabulary; the section names and attributes between them are text. A text value cannot
/// contain `<|close|>` as text (the detector could not tell it from the token).
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    let mut r = Rules::default();
    let text = r.add(
        "TEXT",
        &format!(r"/[\s\S]*/ & ~(/[\s\S]*/ {} /[\s\S]*/)", lit("<|close|>")),
    );
    let close = format!("<|close|> {} <|sep|>", lit("argument"));
    let text_value = format!("{text} {close}");
    let json_type = r#"("integer" | "number" | "boolean" | "null" | "array" | "object")"#;
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = xml_args_to(t, &text_value, &close, "WS?", r, |name, value, is_text| {
            let ty = if is_text {
                lit("string")
            } else {
                json_type.to_string()
            };
            format!(
                "<|open|> {} {ty} \"\\\"\" <|sep|> {value}",
                lit(&format!("argument key=\"{name}\" type=\""))
            )
        });
        format!(
            "<|open|> {} /[0-9]{{1,4}}/ \"\\\"\" <|sep|> WS? {args} WS? <|close|> \"call\" <|sep|>",
            lit(&format!("call tool=\"{}\" index=\"", t.name))
        )
    });
    r.named(
        "calls",
        "<|open|> \"tools\" <|sep|> WS? call_list WS? <|close|> \"tools\" <|sep|>",
    );
    r.finish()
}
