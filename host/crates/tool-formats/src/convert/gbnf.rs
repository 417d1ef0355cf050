//! JSON Schema → llama.cpp GBNF for tool calls, wrapped in each format's call syntax.
//!
//! Covers the subset tool schemas use in practice: object/properties/required, string, number,
//! integer, boolean, null, enum, const, array/items, anyOf/oneOf and type lists. Anything else
//! (`$ref`, `allOf`, patterns) falls back to "any JSON value" of the right shape.
//!
//! Objects are closed: they take only their listed properties, and `"properties": {}` (or a bare
//! `"additionalProperties": false`) means `{}`. Only an object schema that lists no properties and
//! does not close itself, or opens itself with `additionalProperties`, takes any object. JSON
//! Schema would allow extra keys, but tool authors list every parameter and extra keys are what a
//! small model invents: given an open object for a tool without parameters, SmolLM2 wrote
//! `{"answer_result": 17, …` until it ran out of tokens. Otherwise the grammar is looser than the
//! schema, never stricter.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::ToolDef;
use crate::ToolFormat;

/// A JSON Schema matching one call object `{"name": …, "arguments": …}` of any listed tool.
pub fn json_schema_for_calls(tools: &[ToolDef]) -> Value {
    let variants: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": t.input_schema},
                "required": ["name", "arguments"],
                "additionalProperties": false
            })
        })
        .collect();
    json!({"oneOf": variants})
}

const PRIMITIVES: &str = r#"ws ::= [ \t\n]{0,20}
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws (string ws ":" ws value ws ("," ws string ws ":" ws value ws)*)? "}"
array ::= "[" ws (value ws ("," ws value ws)*)? "]"
"#;

/// Nesting deeper than this becomes "any value": keeps grammars small for recursive schemas.
const MAX_DEPTH: usize = 12;
/// Objects with more optional properties than this accept them in order without the
/// any-first-property alternatives (which grow quadratically).
const MAX_OPTIONAL_ALTERNATIVES: usize = 16;

/// A GBNF string literal for `s`.
fn lit(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The GBNF literal matching the JSON text of `v`.
fn json_lit(v: &Value) -> String {
    lit(&v.to_string())
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() { "x".into() } else { s }
}

#[derive(Default)]
struct Grammar {
    rules: Vec<(String, String)>,
    names: HashSet<String>,
}

impl Grammar {
    fn new() -> Self {
        let mut g = Grammar::default();
        for line in PRIMITIVES.lines() {
            if let Some((n, _)) = line.split_once(" ::= ") {
                g.names.insert(n.to_string());
            }
        }
        for reserved in ["root", "calls", "call", "answer"] {
            g.names.insert(reserved.to_string());
        }
        g
    }

    fn add(&mut self, base: &str, body: String) -> String {
        let base = sanitize(base);
        let mut name = base.clone();
        let mut n = 2;
        while self.names.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        self.names.insert(name.clone());
        self.rules.push((name.clone(), body));
        name
    }

    /// A GBNF expression matching JSON values of `schema`.
    fn schema(&mut self, base: &str, schema: &Value, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "value".into();
        }
        let Some(obj) = schema.as_object() else {
            // `true` / missing schema: anything.
            return "value".into();
        };
        if let Some(c) = obj.get("const") {
            return json_lit(c);
        }
        if let Some(Value::Array(vals)) = obj.get("enum") {
            if vals.is_empty() {
                return "value".into();
            }
            let alts: Vec<String> = vals.iter().map(json_lit).collect();
            return format!("({})", alts.join(" | "));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(subs)) = obj.get(key)
                && !subs.is_empty()
            {
                let alts: Vec<String> = subs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| self.schema(&format!("{base}-{i}"), s, depth + 1))
                    .collect();
                return format!("({})", alts.join(" | "));
            }
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.typed(base, t, obj, depth),
            Some(Value::Array(ts)) if !ts.is_empty() => {
                let alts: Vec<String> = ts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.typed(base, t, obj, depth))
                    .collect();
                format!("({})", alts.join(" | "))
            }
            // No type but properties: an object.
            _ if obj.contains_key("properties") => self.typed(base, "object", obj, depth),
            _ => "value".into(),
        }
    }

    fn typed(
        &mut self,
        base: &str,
        ty: &str,
        obj: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> String {
        match ty {
            "string" => "string".into(),
            "integer" => "integer".into(),
            "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = match obj.get("items") {
                    Some(items) => self.schema(&format!("{base}-item"), items, depth + 1),
                    None => "value".into(),
                };
                self.add(
                    base,
                    format!("\"[\" ws ({item} ws (\",\" ws {item} ws)*)? \"]\""),
                )
            }
            "object" => self.object(base, obj, depth),
            _ => "value".into(),
        }
    }

    fn object(&mut self, base: &str, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
        let open = matches!(
            obj.get("additionalProperties"),
            Some(Value::Bool(true) | Value::Object(_))
        );
        let declared = obj.get("properties").and_then(Value::as_object);
        let closed = matches!(obj.get("additionalProperties"), Some(Value::Bool(false)));
        let Some(props) = declared.filter(|p| !p.is_empty()) else {
            // No parameters declared: `{}` when the schema says so, any object otherwise.
            return if !open && (declared.is_some() || closed) {
                self.add(base, "\"{\" ws \"}\"".to_string())
            } else {
                "object".into()
            };
        };
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut req = Vec::new();
        let mut opt = Vec::new();
        for (k, v) in props {
            let e = self.schema(&format!("{base}-{k}"), v, depth + 1);
            let kv = format!("{} ws \":\" ws {e} ws", json_lit(&Value::String(k.clone())));
            if required.contains(&k.as_str()) {
                req.push(kv)
            } else {
                opt.push(kv)
            }
        }
        let optional_tail = |from: usize, opt: &[String]| -> String {
            opt[from..]
                .iter()
                .map(|o| format!(" (\",\" ws {o})?"))
                .collect()
        };
        let body = if !req.is_empty() {
            let joined = req.join(" \",\" ws ");
            format!("\"{{\" ws {joined}{} \"}}\"", optional_tail(0, &opt))
        } else if opt.len() > MAX_OPTIONAL_ALTERNATIVES {
            format!("\"{{\" ws ({}{})? \"}}\"", opt[0], optional_tail(1, &opt))
        } else {
            let alts: Vec<String> = (0..opt.len())
                .map(|i| format!("{}{}", opt[i], optional_tail(i + 1, &opt)))
                .collect();
            format!("\"{{\" ws ({})? \"}}\"", alts.join(" | "))
        };
        self.add(base, body)
    }

    fn render(&self, head: &[(String, String)]) -> String {
        let mut out = String::new();
        for (n, b) in head.iter().chain(self.rules.iter()) {
            out.push_str(&format!("{n} ::= {b}\n"));
        }
        out.push_str(PRIMITIVES);
        out
    }
}

/// What a grammar allows besides calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrammarMode {
    /// A plain answer or valid calls.
    #[default]
    CallOrAnswer,
    /// Exactly one valid call: for "a tool must be called" rounds, and for tiny models, which
    /// given the choice almost always answer in prose (SmolLM2-135M did in every format here).
    /// One, because a tiny model forced to call repeats the call until the token limit.
    CallOnly,
    /// Only a plain answer: after the model repeated a call whose result it already has.
    AnswerOnly,
}

/// A GBNF grammar that lets the model either answer in plain text or emit valid calls of the
/// listed tools (schema-valid arguments) in `format`. `None` when there are no tools, and for
/// formats whose grammar is Lark only (the XML-style, pythonic and special-token ones: see
/// [`crate::formats::Grammar`]; [`super::lark_grammar_with`] has one for every format).
///
/// The plain answer may not start with whitespace or the call syntax's first character, so
/// once the model starts a call it has to finish a valid one.
pub fn gbnf_grammar(format: ToolFormat, tools: &[ToolDef]) -> Option<String> {
    gbnf_grammar_with(format, tools, GrammarMode::CallOrAnswer)
}

/// [`gbnf_grammar`] with a choice of [`GrammarMode`].
pub fn gbnf_grammar_with(
    format: ToolFormat,
    tools: &[ToolDef],
    mode: GrammarMode,
) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let Some(crate::formats::Grammar::Json(crate::formats::GrammarShape {
        calls,
        one_call,
        answer_excludes,
        args_key,
    })) = format.spec().grammar
    else {
        return None;
    };
    let escaped: String = answer_excludes
        .chars()
        .map(|c| {
            if c == ']' || c == '\\' {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect();
    let answer = format!("[^{escaped} \\t\\n] .*");
    if mode == GrammarMode::AnswerOnly {
        return Some(format!("root ::= {answer}\n"));
    }
    let mut g = Grammar::new();
    let mut alts = Vec::new();
    for t in tools {
        let args = g.schema(&format!("args-{}", t.name), &t.input_schema, 0);
        // A schema that is not an object (or absent) still needs object arguments.
        let args = if matches!(
            args.as_str(),
            "value" | "string" | "integer" | "number" | "boolean" | "null"
        ) {
            "object".to_string()
        } else {
            args
        };
        let body = format!(
            "\"{{\" ws \"\\\"name\\\"\" ws \":\" ws {} ws \",\" ws {} ws \":\" ws {args} ws \"}}\"",
            json_lit(&Value::String(t.name.clone())),
            json_lit(&Value::String(args_key.into())),
        );
        alts.push(g.add(&format!("call-{}", t.name), body));
    }
    let mut head = vec![
        ("root".to_string(), "calls | answer".to_string()),
        ("calls".to_string(), calls.to_string()),
        ("call".to_string(), alts.join(" | ")),
        ("answer".to_string(), answer),
    ];
    if mode == GrammarMode::CallOnly {
        head[0].1 = "calls".to_string();
        head[1].1 = one_call.to_string();
        head.pop();
    }
    Some(g.render(&head))
}
