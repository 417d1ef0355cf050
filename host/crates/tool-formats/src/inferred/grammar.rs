//! The canonical text of calls in an inferred format (for prompts and tests) and its Lark
//! grammar for llguidance, built from the same description as the detector.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Arguments, CallSyntax, InferredFormat, Values, WILDCARD};
use crate::convert::ToolDef;
use crate::formats::grammar::{
    Rules, args_schema, is_string, json_expr, lit, ordered, params, text_until, text_value,
};
use crate::formats::{py_literal, tojson, xml_text};
use crate::parse::schema_types;

/// A marker as written in an example: the wildcard becomes the call's index.
fn spelled(marker: &str, index: usize) -> String {
    marker.replace(WILDCARD, &index.to_string())
}

/// The JSON kind of `v`, as declared-kind formats name them in their renders.
pub(super) fn kind_of(v: &Value) -> &'static str {
    crate::parse::json_kind(v)
}

/// `key_suffix` declaring the kind of `v`. A kind the renders did not show is spelled as another
/// non-text kind was: the value is JSON either way, and the schema types it.
fn declared_suffix(key_suffix: &str, kinds: &BTreeMap<String, String>, v: &Value) -> String {
    let kind = kind_of(v);
    let spelling = kinds.get(kind).or_else(|| {
        (kind != "string")
            .then(|| kinds.iter().find(|(k, _)| *k != "string").map(|(_, s)| s))
            .flatten()
    });
    match spelling {
        Some(s) => key_suffix.replacen(WILDCARD, s, 1),
        None => key_suffix.to_string(),
    }
}

fn value_text(values: &Values, v: &Value) -> String {
    match (values, v) {
        (Values::Text, v) => xml_text(v),
        (Values::Literal, v) => py_literal(v),
        (Values::Quoted { open, close }, Value::String(s)) => format!("{open}{s}{close}"),
        (Values::Quoted { .. }, v) => tojson(v),
    }
}

fn one_call(f: &InferredFormat, name: &str, args: &Map<String, Value>, index: usize) -> String {
    let body = match &f.call {
        CallSyntax::JsonObject {
            name_key,
            arguments_key,
        } => format!(
            "{{{}: {}, {}: {}}}",
            Value::String(name_key.clone()),
            Value::String(name.to_string()),
            Value::String(arguments_key.clone()),
            tojson(&Value::Object(args.clone()))
        ),
        CallSyntax::Named {
            name_suffix,
            arguments,
            arguments_close,
        } => {
            let args_text = match arguments {
                Arguments::Json => tojson(&Value::Object(args.clone())),
                Arguments::Pairs {
                    key_prefix,
                    key_suffix,
                    value_suffix,
                    separator,
                    values,
                    kinds,
                    ..
                } => args
                    .iter()
                    .map(|(k, v)| {
                        let key_suffix = if kinds.is_empty() {
                            key_suffix.clone()
                        } else {
                            declared_suffix(key_suffix, kinds, v)
                        };
                        format!(
                            "{}{k}{}{}{}",
                            spelled(key_prefix, index),
                            spelled(&key_suffix, index),
                            value_text(values, v),
                            spelled(value_suffix, index)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(&spelled(separator, index)),
            };
            glue(
                &glue(&glue(name, &spelled(name_suffix, index)), &args_text),
                &spelled(arguments_close, index),
            )
        }
    };
    glue(
        &glue(&spelled(&f.call_open, index), &body),
        &spelled(&f.call_close, index),
    )
}

/// `a` then `b`, with a newline where the trimmed markers would glue two words together or
/// run into a code fence (`\`\`\`tool_code` and the call's name).
fn glue(a: &str, b: &str) -> String {
    let last = a.chars().next_back();
    let first = b.chars().next();
    let words = last.is_some_and(char::is_alphanumeric) && first.is_some_and(char::is_alphanumeric);
    let fence = !a.is_empty() && (b.starts_with("```") || a.ends_with("```"));
    if words || fence {
        format!("{a}\n{b}")
    } else {
        format!("{a}{b}")
    }
}

pub(super) fn example(f: &InferredFormat, calls: &[(&str, &Map<String, Value>)]) -> String {
    let texts: Vec<String> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| one_call(f, name, args, i))
        .collect();
    if f.section_open.is_empty() {
        return texts.join("\n");
    }
    let sep = if f.call_separator.is_empty() && f.call_open.is_empty() {
        "\n"
    } else {
        &f.call_separator
    };
    glue(&glue(&f.section_open, &texts.join(sep)), &f.section_close)
}

/// A marker as a Lark expression: literal pieces, whitespace as written, the wildcard as a
/// regex. Empty markers give an empty expression.
fn marker_expr(marker: &str) -> String {
    let pieces: Vec<String> = marker
        .split(WILDCARD)
        .map(|p| if p.is_empty() { String::new() } else { lit(p) })
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (i, p) in pieces.into_iter().enumerate() {
        if i > 0 {
            out.push("/[A-Za-z0-9_-]+/".into());
        }
        out.push(p);
    }
    join(&out)
}

fn join(parts: &[String]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Elements of a call with optional whitespace between them, as the detector reads them (and as
/// the template may have had it: `\`\`\`tool_code` then a newline).
fn join_ws(parts: &[String]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" WS? ")
}

/// A JSON-quoted string, as Python and JSON literals write it.
const JSON_STRING: &str = r#"/"(\\(["\\\/bfnrt]|u[0-9a-fA-F]{4})|[^"\\\x00-\x1F\x7F])*"/"#;

fn call_rule(f: &InferredFormat, tool: &ToolDef, rules: &mut Rules) -> String {
    let schema = args_schema(tool);
    let body = match &f.call {
        CallSyntax::JsonObject {
            name_key,
            arguments_key,
        } => {
            let mut properties = Map::new();
            properties.insert(name_key.clone(), serde_json::json!({"const": tool.name}));
            properties.insert(arguments_key.clone(), schema);
            json_expr(&serde_json::json!({
                "type": "object",
                "properties": properties,
                "required": [name_key, arguments_key],
                "additionalProperties": false
            }))
        }
        CallSyntax::Named {
            name_suffix,
            arguments,
            arguments_close,
        } => {
            let args = match arguments {
                Arguments::Json => json_expr(&schema),
                Arguments::Pairs {
                    key_prefix,
                    key_suffix,
                    value_suffix,
                    separator,
                    values,
                    kinds,
                    ..
                } => {
                    let text = match values {
                        Values::Text => text_until(rules, value_suffix, &[]),
                        _ => String::new(),
                    };
                    let items: Vec<(String, bool)> = params(&schema)
                        .iter()
                        .map(|p| {
                            let (text_value, is_text) = match values {
                                // `text` ends with the value suffix.
                                Values::Text => {
                                    text_value(p.schema, &text, &marker_expr(value_suffix))
                                }
                                _ => (String::new(), false),
                            };
                            // A declared kind: the text one for text, the schema's own type
                            // where the renders showed its spelling, else any kind.
                            let types = schema_types(p.schema);
                            let kind = if is_text {
                                kinds.get("string")
                            } else if let [t] = types[..] {
                                kinds.get(t)
                            } else {
                                None
                            };
                            let key_suffix = match kind {
                                Some(k) => key_suffix.replacen(WILDCARD, k, 1),
                                None => key_suffix.clone(),
                            };
                            let head = join_ws(&[
                                marker_expr(key_prefix),
                                lit(p.name),
                                marker_expr(&key_suffix),
                            ]);
                            let value = match values {
                                Values::Text => text_value,
                                Values::Literal if is_string(p.schema) => {
                                    join(&[JSON_STRING.to_string(), marker_expr(value_suffix)])
                                }
                                Values::Quoted { open, close } if is_string(p.schema) => {
                                    let t = text_until(rules, close, &[]);
                                    join(&[lit(open), t, marker_expr(value_suffix)])
                                }
                                _ => join(&[json_expr(p.schema), marker_expr(value_suffix)]),
                            };
                            (join(&[head, value]), p.required)
                        })
                        .collect();
                    ordered(&items, &marker_expr(separator), rules).unwrap_or_default()
                }
            };
            join_ws(&[
                lit(&tool.name),
                marker_expr(name_suffix),
                args,
                marker_expr(arguments_close),
            ])
        }
    };
    join_ws(&[marker_expr(&f.call_open), body, marker_expr(&f.call_close)])
}

pub(super) fn lark(f: &InferredFormat, tools: &[ToolDef], allow_answer: bool) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut rules = Rules::default();
    let alts: Vec<String> = tools
        .iter()
        .map(|t| {
            let body = call_rule(f, t, &mut rules);
            rules.add("call", &body)
        })
        .collect();
    rules.named("call", &alts.join(" | "));
    let calls = if f.section_open.is_empty() {
        if f.parallel {
            "call (WS? call)*".to_string()
        } else {
            "call".to_string()
        }
    } else {
        let more = if f.parallel {
            format!(
                "({})*",
                join(&[marker_expr(&f.call_separator), "call".into()])
            )
        } else {
            String::new()
        };
        join_ws(&[
            marker_expr(&f.section_open),
            "call".into(),
            more,
            marker_expr(&f.section_close),
        ])
    };
    rules.named("calls", &calls);
    let first = f
        .opener()
        .chars()
        .next()
        .or(matches!(f.call, CallSyntax::JsonObject { .. }).then_some('{'))
        .map(|c| {
            if "\\]^[-/".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .unwrap_or_default();
    let start = if allow_answer {
        "calls | ANSWER"
    } else {
        "calls"
    };
    Some(format!(
        "start: {start}\nANSWER: /[^{first} \\t\\n][\\s\\S]*/\nWS: /[ \\t\\n]{{1,20}}/\n{}",
        rules.finish()
    ))
}
