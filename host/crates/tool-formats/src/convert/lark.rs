//! Tool schemas → an llguidance (Lark-syntax) grammar: the same call-or-answer structure as the
//! GBNF grammar of [`super::gbnf`], with the call object given to llguidance as a JSON Schema
//! (`%json`), so arguments are held to the schema itself instead of a hand translation of it.
//!
//! Formats with a grammar of their own ([`crate::formats::Grammar::Lark`]) put their rules into
//! the same frame: `start`, the `ANSWER` terminal (which may not start like a call) and `WS`.
//!
//! Objects are closed as in the GBNF grammar (`additionalProperties: false` wherever a schema
//! lists its properties and says nothing else); whitespace inside a call is at most 20 spaces,
//! tabs or newlines at a time (an unbounded run is where a tiny model gets lost).
use serde_json::{Map, Value, json};

use super::ToolDef;
use super::gbnf::GrammarMode;
use super::grounded::{Builder, Grounding};
use crate::ToolFormat;
use crate::formats::grammar::lit;
use crate::formats::{Grammar, LarkShape};

/// An llguidance grammar for `format` and `tools` in `mode`; `None` only without tools (every
/// format has one, unlike [`super::gbnf_grammar_with`]).
pub fn lark_grammar_with(
    format: ToolFormat,
    tools: &[ToolDef],
    mode: GrammarMode,
) -> Option<String> {
    lark_grammar_grounded(format, tools, mode, None)
}

/// [`lark_grammar_with`], with the values of JSON calls tied to the turn's text where
/// `grounding` says so ([`super::grounded`]); formats with rules of their own are not grounded.
pub fn lark_grammar_grounded(
    format: ToolFormat,
    tools: &[ToolDef],
    mode: GrammarMode,
    grounding: Option<&Grounding>,
) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let shape = match format.spec().grammar.as_ref()? {
        Grammar::Json(shape) => shape,
        Grammar::Lark(own) => return Some(own_grammar(own, tools, mode)),
    };
    let answer = format!("ANSWER: {}\n", answer_regex(shape.answer_excludes, &[]));
    if mode == GrammarMode::AnswerOnly {
        return Some(format!("start: ANSWER\n{answer}"));
    }
    let mut builder = grounding.filter(|g| g.active()).map(Builder::new);
    let mut grounded_calls = Vec::new();
    let mut plain = Vec::new();
    for t in tools {
        match builder.as_mut().and_then(|b| b.call(t, shape.args_key)) {
            Some(rule) => grounded_calls.push(rule),
            None => plain.push(t),
        }
    }
    let variants: Vec<Value> = plain
        .iter()
        .map(|t| {
            let mut args = t.input_schema.clone();
            if !args.is_object() || args.get("type").is_some_and(|ty| ty != "object") {
                args = json!({"type": "object"});
            }
            close_objects(&mut args);
            let mut properties = Map::new();
            properties.insert("name".into(), json!({"const": t.name}));
            properties.insert(shape.args_key.into(), args);
            json!({
                "type": "object",
                "properties": properties,
                "required": ["name", shape.args_key],
                "additionalProperties": false
            })
        })
        .collect();
    let schema = json!({
        "x-guidance": {"lenient": true, "whitespace_pattern": "[ \\t\\n]{1,20}"},
        "anyOf": variants
    });
    let (start, calls) = match mode {
        GrammarMode::CallOnly => ("calls", shape.one_call),
        _ => ("calls | ANSWER", shape.calls),
    };
    let mut call = grounded_calls;
    if !variants.is_empty() {
        call.insert(0, format!("%json {schema}"));
    }
    let rules = builder.map(Builder::finish).unwrap_or_default();
    Some(format!(
        "start: {start}\ncalls: {}\ncall: {}\nWS: /[ \\t\\n]{{1,20}}/\n{answer}{rules}",
        lark_body(calls),
        call.join(" | ")
    ))
}

/// The answer terminal: text that starts with neither whitespace nor one of `excludes`, nor
/// with one of `not`.
fn answer_regex(excludes: &str, not: &[&str]) -> String {
    let excluded: String = excludes
        .chars()
        .map(|c| {
            // Escaped only where a character class (or the `/…/` literal) needs it.
            if "\\]^[-/".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect();
    let mut rx = format!("/[^{excluded} \\t\\n][\\s\\S]*/");
    for n in not {
        rx.push_str(&format!(" & ~({} /[\\s\\S]*/)", lit(n)));
    }
    rx
}

/// A format with rules of its own: the same frame as the JSON-call grammars around them.
fn own_grammar(own: &LarkShape, tools: &[ToolDef], mode: GrammarMode) -> String {
    let answer_rx = answer_regex(own.answer_excludes, own.answer_not);
    let answer = if own.answer_head.is_empty() {
        "ANSWER".to_string()
    } else {
        format!("{} ANSWER", own.answer_head)
    };
    let start = match mode {
        GrammarMode::CallOrAnswer => format!("calls | {answer}"),
        GrammarMode::CallOnly => "calls".to_string(),
        GrammarMode::AnswerOnly => answer,
    };
    // The call rules come along in every mode: an answer head may use them.
    let rules = (own.calls)(tools, mode == GrammarMode::CallOrAnswer);
    format!("start: {start}\nANSWER: {answer_rx}\nWS: /[ \\t\\n]{{1,20}}/\n{rules}")
}

/// A GBNF rule body of the call shapes in Lark: `ws` becomes an optional `WS`, and a literal
/// written like a special token (`"<|python_tag|>"`) refers to that token.
fn lark_body(gbnf: &str) -> String {
    let mut out = String::new();
    let mut chars = gbnf.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            let mut lit = String::from('"');
            while let Some(d) = chars.next() {
                lit.push(d);
                if d == '\\' {
                    if let Some(e) = chars.next() {
                        lit.push(e);
                    }
                } else if d == '"' {
                    break;
                }
            }
            let inner = &lit[1..lit.len().saturating_sub(1)];
            if inner.starts_with("<|") && inner.ends_with("|>") && !inner.contains('"') {
                out.push_str(inner);
            } else {
                out.push_str(&lit);
            }
        } else if c.is_ascii_alphabetic() {
            let mut word = String::from(c);
            while let Some(&d) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' || d == '-' {
                    word.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push_str(if word == "ws" { "WS?" } else { &word });
        } else {
            out.push(c);
        }
    }
    out
}

/// Closes every object schema that lists its properties and does not say whether others are
/// allowed, as the GBNF grammar does.
pub fn close_objects(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.contains_key("properties") && !obj.contains_key("additionalProperties") {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = obj.get_mut(key) {
            for child in children.values_mut() {
                close_objects(child);
            }
        }
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else"] {
        if let Some(child) = obj.get_mut(key) {
            close_objects(child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = obj.get_mut(key) {
            for child in children {
                close_objects(child);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: None,
            input_schema: schema,
            annotations: None,
        }
    }

    #[test]
    fn calls_are_the_formats_markers_around_a_json_schema_of_the_call() {
        let tools = [tool(
            "time__get_current_time",
            json!({"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}),
        )];
        let g =
            lark_grammar_with(ToolFormat::ToolCallJson, &tools, GrammarMode::CallOrAnswer).unwrap();
        assert!(g.starts_with("start: calls | ANSWER\n"), "{g}");
        assert!(
            g.contains(r#"calls: "[TOOL_CALL]" WS? call WS? "[END_TOOL_CALL]" (WS? "[TOOL_CALL]" WS? call WS? "[END_TOOL_CALL]")*"#),
            "{g}"
        );
        assert!(g.contains(r"ANSWER: /[^\[ \t\n][\s\S]*/"), "{g}");
        let schema_text = g
            .lines()
            .find_map(|l| l.strip_prefix("call: %json "))
            .unwrap();
        let schema: Value = serde_json::from_str(schema_text).unwrap();
        let variant = &schema["anyOf"][0];
        assert_eq!(
            variant["properties"]["name"]["const"],
            "time__get_current_time"
        );
        // Closed like the GBNF grammar's objects; the name comes before the arguments.
        assert_eq!(
            variant["properties"]["arguments"]["additionalProperties"],
            false
        );
        let keys: Vec<&String> = variant["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "arguments"]);
    }

    #[test]
    fn call_only_and_answer_only_modes() {
        let tools = [tool("t", json!({"type": "object", "properties": {}}))];
        let one = lark_grammar_with(ToolFormat::Hermes, &tools, GrammarMode::CallOnly).unwrap();
        assert!(one.starts_with("start: calls\n"), "{one}");
        assert!(
            one.contains(r#"calls: "<tool_call>" WS? call WS? "</tool_call>""#),
            "{one}"
        );
        let answer =
            lark_grammar_with(ToolFormat::Hermes, &tools, GrammarMode::AnswerOnly).unwrap();
        assert_eq!(answer, "start: ANSWER\nANSWER: /[^< \\t\\n][\\s\\S]*/\n");
    }

    #[test]
    fn special_token_literals_refer_to_the_token() {
        assert_eq!(
            lark_body(r#"("<|python_tag|>")? call (ws ";" ws call)*"#),
            r#"(<|python_tag|>)? call (WS? ";" WS? call)*"#
        );
    }

    #[test]
    fn every_format_has_a_grammar_and_empty_tool_lists_have_none() {
        let tools = [tool("t", json!({}))];
        for f in ToolFormat::all() {
            assert!(
                lark_grammar_with(*f, &tools, GrammarMode::CallOrAnswer).is_some(),
                "{f}"
            );
            assert!(lark_grammar_with(*f, &[], GrammarMode::CallOrAnswer).is_none());
        }
    }

    #[test]
    fn own_rules_sit_in_the_shared_frame() {
        let tools = [tool(
            "get_weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}, "required": ["city"]}),
        )];
        let g = lark_grammar_with(ToolFormat::Pythonic, &tools, GrammarMode::CallOrAnswer).unwrap();
        assert!(
            g.starts_with("start: calls | ANSWER\nANSWER: /[^\\[ \\t\\n]"),
            "{g}"
        );
        assert!(g.contains(r#""get_weather" "(" "#), "{g}");
        assert!(g.contains(r#""city" "=" STR_"#), "{g}");
        assert!(g.contains("call_list: call (\",\" \" \"? call)*"), "{g}");
        let one = lark_grammar_with(ToolFormat::Pythonic, &tools, GrammarMode::CallOnly).unwrap();
        assert!(
            one.starts_with("start: calls\n") && one.contains("call_list: call\n"),
            "{one}"
        );
        let phi = lark_grammar_with(ToolFormat::Phi4, &tools, GrammarMode::AnswerOnly).unwrap();
        assert!(
            phi.starts_with(
                r#"start: ANSWER
ANSWER: /[^ \t\n][\s\S]*/ & ~("functools" /[\s\S]*/)"#
            ),
            "{phi}"
        );
        let harmony =
            lark_grammar_with(ToolFormat::Harmony, &tools, GrammarMode::AnswerOnly).unwrap();
        assert!(
            harmony.starts_with(r#"start: analysis? (<|channel|> "final" <|message|>)? ANSWER"#),
            "{harmony}"
        );
    }

    #[test]
    fn nested_objects_are_closed_unless_they_say_otherwise() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "inner": {"type": "object", "properties": {"a": {"type": "string"}}},
                "open": {"type": "object", "properties": {}, "additionalProperties": true},
                "list": {"type": "array", "items": {"type": "object", "properties": {"b": {}}}},
                "either": {"anyOf": [{"type": "object", "properties": {"c": {}}}, {"type": "null"}]}
            }
        });
        close_objects(&mut s);
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["inner"]["additionalProperties"], false);
        assert_eq!(s["properties"]["open"]["additionalProperties"], true);
        assert_eq!(
            s["properties"]["list"]["items"]["additionalProperties"],
            false
        );
        assert_eq!(
            s["properties"]["either"]["anyOf"][0]["additionalProperties"],
            false
        );
    }
}
