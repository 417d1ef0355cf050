//! One module per tool-call format: its markers and detector, the example call and instructions
//! the system prompt teaches, the wrapper its chat templates put around tool results, its
//! constrained-decoding grammar and the hints that guess it from a chat template or model name.
//!
//! Adding a format touches its module, the table in `lib.rs` (`formats!`) and its corpus folder;
//! everything else reads the [`Format`] record, so there is no `match` on formats elsewhere.

use serde_json::{Map, Value};

use crate::ToolCallDetector;
use crate::convert::PromptStyle;
use crate::detect::Setup;

pub(crate) mod deepseek;
pub(crate) mod deepseek_dsml;
pub(crate) mod deepseek_v41;
pub(crate) mod function_gemma;
pub(crate) mod gemma;
pub(crate) mod gemma4;
pub(crate) mod glm;
pub(crate) mod grammar;
pub(crate) mod granite;
pub(crate) mod harmony;
pub(crate) mod hermes;
pub(crate) mod kimi;
pub(crate) mod kimi_k3;
pub(crate) mod lfm2;
pub(crate) mod llama3;
pub(crate) mod mistral;
pub(crate) mod phi4;
pub(crate) mod plain_json;
pub(crate) mod pythonic;
pub(crate) mod qwen3_coder;
pub(crate) mod smollm3;
pub(crate) mod tool_call_json;
pub(crate) mod tool_call_xml;
pub(crate) mod xlam;

/// Everything the crate knows about one format.
pub(crate) struct Format {
    /// The stable configuration name.
    pub name: &'static str,
    /// A fresh streaming detector (without the reasoning splitter, which [`Format::reasoning`]
    /// configures).
    pub detector: fn(&Setup) -> Box<dyn ToolCallDetector>,
    /// Reasoning blocks `(open, close)` the family writes at the start of a response.
    pub reasoning: &'static [(&'static str, &'static str)],
    /// The family's own end-of-turn tokens: dropped at the very end of a response (a runtime
    /// that does not strip stop tokens leaves them there).
    pub end_tokens: &'static [&'static str],
    /// Markers that also end the reasoning block without closing it (the model starts its
    /// calls straight from its reasoning); they stay in the answer.
    pub reasoning_ends: &'static [&'static str],
    /// An exact call of `name` with `args`.
    pub example: fn(name: &str, args: &Map<String, Value>) -> String,
    /// How to call, completed by ", exactly like this:" and the example.
    pub instructions: &'static str,
    /// The tool turn's text for a result `body`.
    pub result: fn(&ResultTurn) -> String,
    /// The call syntax for constrained decoding.
    pub grammar: Option<Grammar>,
    pub prompt_style: PromptStyle,
    pub hints: Hints,
}

/// What a result wrapper gets.
pub(crate) struct ResultTurn<'a> {
    pub name: &'a str,
    pub id: &'a str,
    pub body: String,
    pub is_error: bool,
}

/// How a format's calls are held to the tools in constrained decoding.
///
/// Two kinds, because most JSON-call formats differ only in the markers around one shared call
/// object, which both engines can express from a few literals; every other format needs rules of
/// its own per tool (parameter names as literals, its own value syntax), written as a function
/// in its module so that adding a format still touches only its module, the `formats!` table and
/// its corpus folder.
pub(crate) enum Grammar {
    /// `{"name": …, "<args_key>": {…}}` call objects between literal markers: GBNF and Lark.
    Json(GrammarShape),
    /// Rules of the format's own, for llguidance (Lark) only: the GBNF fallback has no grammar
    /// for these formats (`gbnf_grammar_with` returns `None`), as translating each value syntax
    /// twice would double the code for the engine that is only a fallback.
    Lark(LarkShape),
}

/// A format's own Lark rules; the frame around them (`start`, the answer, `WS`) is shared.
pub(crate) struct LarkShape {
    /// Lark rules for `tools` that define the rule `calls`: one or more calls when `parallel`,
    /// exactly one otherwise. They may use `WS` (1–20 whitespace characters).
    pub calls: fn(tools: &[crate::convert::ToolDef], parallel: bool) -> String,
    /// Characters a plain answer may not start with (besides whitespace).
    pub answer_excludes: &'static str,
    /// Texts a plain answer may not start with, where one character would exclude too much
    /// (`functools`, ```` ```tool_ ````).
    pub answer_not: &'static [&'static str],
    /// A Lark expression before the answer text (a channel header), or empty; it may use the
    /// rules `calls` defines.
    pub answer_head: &'static str,
}

/// The format-specific part of a GBNF grammar (the call objects are shared).
#[derive(Clone, Copy)]
pub(crate) struct GrammarShape {
    /// One or more calls.
    pub calls: &'static str,
    /// Exactly one call.
    pub one_call: &'static str,
    /// Characters a plain answer may not start with.
    pub answer_excludes: &'static str,
    /// The key holding the arguments in a call object.
    pub args_key: &'static str,
}

/// Markers that point at this format; a lower rank is tried first across all formats, so a
/// template that names the exact call syntax beats a family resemblance.
pub(crate) struct Hints {
    /// Substrings of a chat template that show the exact call syntax.
    pub template: &'static [(&'static str, u16)],
    /// Model-name fragments (lowercase, without `-`, `_`, `.` and spaces).
    pub names: &'static [(&'static str, u16)],
    /// Template substrings that only show the family (tried after model names).
    pub family: &'static [(&'static str, u16)],
}

/// The usual `<think>…</think>` block.
pub(crate) const THINK: &[(&str, &str)] = &[("<think>", "</think>")];

/// `{"name": NAME, "arguments": ARGS}` with the name first, as the chat templates and grammars
/// write it (serde_json would sort the keys).
pub(crate) fn json_call(name: &str, args: &Map<String, Value>, args_key: &str) -> String {
    let quoted = Value::String(name.to_string());
    let args = tojson(&Value::Object(args.clone()));
    format!("{{\"name\": {quoted}, \"{args_key}\": {args}}}")
}

/// JSON as the chat templates' `tojson` writes it (Python's `json.dumps` with `ensure_ascii`
/// off): `", "` between items and `": "` after keys, which is what the models were trained on.
pub(crate) fn tojson(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("[{}]", a.iter().map(tojson).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), tojson(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// A Python literal of a JSON value.
pub(crate) fn py_literal(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(py_literal).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), py_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// `name(k=v, …)` with Python literals.
pub(crate) fn py_call(name: &str, args: &Map<String, Value>) -> String {
    let a: Vec<String> = args
        .iter()
        .map(|(k, v)| format!("{k}={}", py_literal(v)))
        .collect();
    format!("{name}({})", a.join(", "))
}

/// A value as XML-style formats write it: strings bare, the rest as JSON.
pub(crate) fn xml_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => tojson(other),
    }
}

/// The result body alone (formats whose tool turn is a role of its own).
pub(crate) fn bare_result(r: &ResultTurn) -> String {
    r.body.clone()
}

/// `<tool_response>` as ChatML-family templates write it.
pub(crate) fn tool_response_result(r: &ResultTurn) -> String {
    format!("<tool_response>\n{}\n</tool_response>", r.body)
}
