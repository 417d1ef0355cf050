//! Building blocks for the formats' own Lark (llguidance) rules: literals, JSON Schemas inline,
//! parameter lists in schema order, text values that cannot contain their closing tag, and
//! schema-typed values in the literal syntaxes of the pythonic and Gemma families.
//!
//! Parameters are held to the schema's property order: any order with the required ones present
//! would need a rule per permutation, and the order is the one the tool lists (and the model saw).

use serde_json::{Value, json};

use crate::convert::{ToolDef, close_objects};

/// Nesting deeper than this becomes "any value" of the family (a superset, keeping grammars
/// small for recursive schemas).
const MAX_DEPTH: usize = 6;

/// A Lark string literal: llguidance reads Lark strings as JSON strings.
pub(crate) fn lit(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// The arguments schema of `tool`: an object schema with its objects closed, as the JSON-call
/// grammars use it.
pub(crate) fn args_schema(tool: &ToolDef) -> Value {
    let mut args = tool.input_schema.clone();
    if !args.is_object() || args.get("type").is_some_and(|ty| ty != "object") {
        args = json!({"type": "object"});
    }
    close_objects(&mut args);
    args
}

/// `%json {…}` of `schema` (objects closed), with the whitespace rule of the JSON-call grammars.
pub(crate) fn json_expr(schema: &Value) -> String {
    let mut s = if schema.is_object() {
        schema.clone()
    } else {
        json!({})
    };
    close_objects(&mut s);
    if let Value::Object(o) = &mut s {
        o.insert(
            "x-guidance".into(),
            json!({"lenient": true, "whitespace_pattern": "[ \\t\\n]{1,20}"}),
        );
    }
    format!("%json {s}")
}

/// One parameter of a tool, in the schema's order.
pub(crate) struct Param<'a> {
    pub name: &'a str,
    pub schema: &'a Value,
    pub required: bool,
}

/// The listed parameters of an object schema. An object that lists none takes none here (the
/// text formats cannot name keys the schema does not list).
pub(crate) fn params(schema: &Value) -> Vec<Param<'_>> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| Param {
                    name: k,
                    schema: v,
                    required: required.contains(&k.as_str()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Collects rules under unique names.
#[derive(Default)]
pub(crate) struct Rules {
    text: String,
    n: usize,
}

impl Rules {
    /// Adds `body` as a new rule (or terminal, for an upper-case `base`) and returns its name.
    pub(crate) fn add(&mut self, base: &str, body: &str) -> String {
        self.n += 1;
        let name = format!("{base}_{}", self.n);
        self.text.push_str(&format!("{name}: {body}\n"));
        name
    }

    /// Adds a rule under a fixed name.
    pub(crate) fn named(&mut self, name: &str, body: &str) {
        self.text.push_str(&format!("{name}: {body}\n"));
    }

    pub(crate) fn finish(self) -> String {
        self.text
    }
}

/// `call: …` with one alternative per tool made by `one`, and `call_list`: one call, or when
/// `parallel` one or more with `sep` between them.
pub(crate) fn call_list(
    tools: &[ToolDef],
    parallel: bool,
    sep: &str,
    rules: &mut Rules,
    mut one: impl FnMut(&ToolDef, &mut Rules) -> String,
) {
    let alts: Vec<String> = tools
        .iter()
        .map(|t| {
            let body = one(t, rules);
            rules.add("call", &body)
        })
        .collect();
    rules.named("call", &alts.join(" | "));
    if parallel {
        rules.named("call_list", &format!("call ({sep} call)*"));
    } else {
        rules.named("call_list", "call");
    }
}

/// `items` (expression, required) in order with `sep` between the present ones; `None` when
/// all may be left out and none is given. Optional items are skipped with one rule each:
/// `h_i` is a non-empty run from item `i` on.
pub(crate) fn ordered(items: &[(String, bool)], sep: &str, rules: &mut Rules) -> Option<String> {
    let n = items.len();
    // tails[i]: items i.. each after `sep`, possibly none.
    let mut tails = vec![String::new(); n + 1];
    for i in (0..n).rev() {
        let (e, req) = &items[i];
        let with_sep = if sep.is_empty() {
            e.clone()
        } else {
            format!("{sep} {e}")
        };
        tails[i] = if *req {
            format!("{with_sep} {}", tails[i + 1])
        } else {
            format!("({with_sep})? {}", tails[i + 1])
        };
    }
    let mut head: Option<String> = None;
    for i in (0..n).rev() {
        let (e, req) = &items[i];
        let this = format!("{e} {}", tails[i + 1]);
        let body = match (&head, req) {
            (Some(h), false) => format!("{this} | {h}"),
            _ => this,
        };
        head = Some(rules.add("args", &body));
    }
    let any_required = items.iter().any(|(_, r)| *r);
    match head {
        Some(h) if !any_required => Some(format!("({h})?")),
        h => h,
    }
}

/// A terminal for text that ends with the first `close` (included): the text before it cannot
/// contain `close` nor any of `forbid`.
pub(crate) fn text_until(rules: &mut Rules, close: &str, forbid: &[&str]) -> String {
    let mut body = format!(
        r"/[\s\S]*/ {} & ~(/[\s\S]*/ {} /[\s\S]+/)",
        lit(close),
        lit(close)
    );
    for f in forbid {
        body.push_str(&format!(
            r" & ~(/[\s\S]*/ {} /[\s\S]*/ {})",
            lit(f),
            lit(close)
        ));
    }
    rules.add("TEXT", &body)
}

/// A value of an XML-style format written as text and ended by `close`: strings bare (the
/// terminal `text`, which includes `close`), string enums as literals, the rest as JSON. Also
/// whether it is written as text (DSML says so in an attribute).
/// `close` is a Lark expression (a literal, or special tokens).
pub(crate) fn text_value(schema: &Value, text: &str, close: &str) -> (String, bool) {
    if let Some(words) = string_choices(schema) {
        let alts: Vec<String> = words.iter().map(|w| lit(w)).collect();
        return (format!("({}) {close}", alts.join(" | ")), true);
    }
    if is_string(schema) {
        return (text.to_string(), true);
    }
    (format!("{} {close}", json_expr(schema)), false)
}

/// The arguments of `tool` in an XML-style call: one element per listed parameter in schema
/// order, required ones present, `sep` between them. `element(name, value, is_text)` writes one
/// element around the value expression [`text_value`] gives (ended by `close`).
pub(crate) fn xml_args(
    tool: &ToolDef,
    text: &str,
    close: &str,
    sep: &str,
    rules: &mut Rules,
    element: impl Fn(&str, &str, bool) -> String,
) -> String {
    xml_args_to(tool, text, &lit(close), sep, rules, element)
}

/// [`xml_args`] with the close as a Lark expression (`text` includes it).
pub(crate) fn xml_args_to(
    tool: &ToolDef,
    text: &str,
    close: &str,
    sep: &str,
    rules: &mut Rules,
    element: impl Fn(&str, &str, bool) -> String,
) -> String {
    let schema = args_schema(tool);
    let items: Vec<(String, bool)> = params(&schema)
        .iter()
        .map(|p| {
            let (value, is_text) = text_value(p.schema, text, close);
            (element(p.name, &value, is_text), p.required)
        })
        .collect();
    ordered(&items, sep, rules).unwrap_or_default()
}

/// One call object `{"name": NAME, "<args_key>": {…}}` of `tool` as `%json`, as the JSON-call
/// grammars write it.
pub(crate) fn json_call_expr(tool: &ToolDef, args_key: &str) -> String {
    let mut properties = serde_json::Map::new();
    properties.insert("name".into(), json!({"const": tool.name}));
    properties.insert(args_key.into(), args_schema(tool));
    json_expr(&json!({
        "type": "object",
        "properties": properties,
        "required": ["name", args_key],
        "additionalProperties": false
    }))
}

/// Whether values of `schema` are strings only (written as text).
pub(crate) fn is_string(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(|t| t == "string"),
        _ => false,
    }
}

/// The strings of a `const`/`enum` that lists only strings.
fn string_choices(schema: &Value) -> Option<Vec<&str>> {
    if let Some(Value::String(c)) = schema.get("const") {
        return Some(vec![c]);
    }
    let e = schema.get("enum")?.as_array()?;
    let words: Vec<&str> = e.iter().filter_map(Value::as_str).collect();
    (!e.is_empty() && words.len() == e.len()).then_some(words)
}

/// The literal syntax of a pythonic or Gemma-style family.
pub(crate) struct Literals {
    /// Strings: `None` for JSON-quoted strings (Python), or the quote marker (a special token).
    pub quote: Option<&'static str>,
    /// Texts a string may not contain (the end of the block it sits in).
    pub forbid: &'static [&'static str],
    pub true_: &'static str,
    pub false_: &'static str,
    pub null: &'static str,
    /// Object keys quoted as JSON strings (Python) or bare words (Gemma).
    pub quoted_keys: bool,
    /// Between items and between a key and its value: Lark expressions.
    pub sep: &'static str,
    pub colon: &'static str,
}

/// Python literals (`True`, `"text"`, `{"k": v}`).
pub(crate) const PYTHON: Literals = Literals {
    quote: None,
    forbid: &[],
    true_: "True",
    false_: "False",
    null: "None",
    quoted_keys: true,
    sep: r#""," " "?"#,
    colon: r#"":" " "?"#,
};

/// Schema-typed values of one literal family, with the family's terminals added once.
pub(crate) struct Values<'a> {
    lits: &'a Literals,
    string: String,
    any: Option<String>,
}

impl<'a> Values<'a> {
    pub(crate) fn new(lits: &'a Literals, rules: &mut Rules) -> Values<'a> {
        let string = match lits.quote {
            None => {
                let mut body =
                    r#"/"(\\(["\\\/bfnrt]|u[0-9a-fA-F]{4})|[^"\\\x00-\x1F\x7F])*"/"#.to_string();
                for f in lits.forbid {
                    body.push_str(&format!(r" & ~(/[\s\S]*/ {} /[\s\S]*/)", lit(f)));
                }
                rules.add("STR", &body)
            }
            Some(q) => {
                // The quote is a special token; the text between may not spell it out either.
                let mut body = format!(r"/[\s\S]*/ & ~(/[\s\S]*/ {} /[\s\S]*/)", lit(q));
                for f in lits.forbid {
                    body.push_str(&format!(r" & ~(/[\s\S]*/ {} /[\s\S]*/)", lit(f)));
                }
                let text = rules.add("QTEXT", &body);
                format!("({q} {text} {q})")
            }
        };
        Values {
            lits,
            string,
            any: None,
        }
    }

    /// The literal of a JSON value.
    fn literal(&self, v: &Value) -> String {
        let l = self.lits;
        match v {
            Value::String(s) => match l.quote {
                None => lit(&v.to_string()),
                Some(q) => format!("{q} {} {q}", lit(s)),
            },
            Value::Bool(true) => lit(l.true_),
            Value::Bool(false) => lit(l.false_),
            Value::Null => lit(l.null),
            Value::Number(n) => lit(&n.to_string()),
            Value::Array(a) => {
                let items: Vec<String> = a.iter().map(|x| self.literal(x)).collect();
                format!("\"[\" {} \"]\"", items.join(&format!(" {} ", l.sep)))
            }
            Value::Object(o) => {
                let items: Vec<String> = o
                    .iter()
                    .map(|(k, x)| format!("{} {} {}", self.key(k), l.colon, self.literal(x)))
                    .collect();
                format!("\"{{\" {} \"}}\"", items.join(&format!(" {} ", l.sep)))
            }
        }
    }

    fn key(&self, k: &str) -> String {
        if self.lits.quoted_keys {
            lit(&Value::String(k.to_string()).to_string())
        } else {
            lit(k)
        }
    }

    /// Any value of the family (a superset where a schema says nothing or nests too deep).
    fn any(&mut self, rules: &mut Rules) -> String {
        if let Some(a) = &self.any {
            return a.clone();
        }
        let l = self.lits;
        let name = "anyval".to_string();
        self.any = Some(name.clone());
        let key = if l.quoted_keys {
            self.string.clone()
        } else {
            rules.add("KEY", r"/[A-Za-z_][A-Za-z0-9_]*/")
        };
        let num = rules.add("NUM", r"/-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/");
        rules.named(
            &name,
            &format!(
                "{s} | {num} | {t} | {f} | {n} | \"[\" ({name} ({sep} {name})*)? \"]\" | \"{{\" ({key} {colon} {name} ({sep} {key} {colon} {name})*)? \"}}\"",
                s = self.string,
                t = lit(l.true_),
                f = lit(l.false_),
                n = lit(l.null),
                sep = l.sep,
                colon = l.colon,
            ),
        );
        name
    }

    /// A Lark expression for values of `schema` in the family's syntax.
    pub(crate) fn value(&mut self, schema: &Value, depth: usize, rules: &mut Rules) -> String {
        let Some(obj) = schema.as_object() else {
            return self.any(rules);
        };
        if depth > MAX_DEPTH {
            return self.any(rules);
        }
        if let Some(c) = obj.get("const") {
            return self.literal(c);
        }
        if let Some(Value::Array(vals)) = obj.get("enum")
            && !vals.is_empty()
        {
            let alts: Vec<String> = vals.iter().map(|v| self.literal(v)).collect();
            return format!("({})", alts.join(" | "));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(subs)) = obj.get(key)
                && !subs.is_empty()
            {
                let alts: Vec<String> = subs
                    .iter()
                    .map(|s| self.value(s, depth + 1, rules))
                    .collect();
                return format!("({})", alts.join(" | "));
            }
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.typed(t, schema, depth, rules),
            Some(Value::Array(ts)) if !ts.is_empty() => {
                let alts: Vec<String> = ts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.typed(t, schema, depth, rules))
                    .collect();
                format!("({})", alts.join(" | "))
            }
            _ if obj.contains_key("properties") => self.typed("object", schema, depth, rules),
            _ => self.any(rules),
        }
    }

    fn typed(&mut self, ty: &str, schema: &Value, depth: usize, rules: &mut Rules) -> String {
        let l = self.lits;
        match ty {
            "string" => self.string.clone(),
            "integer" => r"/-?(0|[1-9][0-9]{0,17})/".into(),
            "number" => r"/-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,17})?([eE][-+]?[0-9]{1,3})?/".into(),
            "boolean" => format!("({} | {})", lit(l.true_), lit(l.false_)),
            "null" => lit(l.null),
            "array" => {
                let item = match schema.get("items") {
                    Some(items) => self.value(items, depth + 1, rules),
                    None => self.any(rules),
                };
                let body = format!("\"[\" ({item} ({} {item})*)? \"]\"", l.sep);
                rules.add("arr", &body)
            }
            "object" => {
                let ps = params(schema);
                let open = matches!(
                    schema.get("additionalProperties"),
                    Some(Value::Bool(true) | Value::Object(_))
                );
                if ps.is_empty() && (open || schema.get("properties").is_none()) {
                    // No listed keys: any object of the family.
                    let any = self.any(rules);
                    let key = if l.quoted_keys {
                        self.string.clone()
                    } else {
                        r"/[A-Za-z_][A-Za-z0-9_]*/".into()
                    };
                    return rules.add(
                        "obj",
                        &format!(
                            "\"{{\" ({key} {c} {any} ({s} {key} {c} {any})*)? \"}}\"",
                            c = l.colon,
                            s = l.sep
                        ),
                    );
                }
                let items: Vec<(String, bool)> = ps
                    .iter()
                    .map(|p| {
                        let v = self.value(p.schema, depth + 1, rules);
                        (format!("{} {} {v}", self.key(p.name), l.colon), p.required)
                    })
                    .collect();
                let inner = ordered(&items, l.sep, rules).unwrap_or_default();
                rules.add("obj", &format!("\"{{\" {inner} \"}}\""))
            }
            _ => self.any(rules),
        }
    }

    /// Keyword arguments of a call: `k=v` (or `k:v`) per listed parameter, in order.
    pub(crate) fn keyword_args(
        &mut self,
        schema: &Value,
        assign: &str,
        rules: &mut Rules,
    ) -> Option<String> {
        let ps = params(schema);
        let items: Vec<(String, bool)> = ps
            .iter()
            .map(|p| {
                let v = self.value(p.schema, 1, rules);
                (format!("{} {assign} {v}", lit(p.name)), p.required)
            })
            .collect();
        ordered(&items, self.lits.sep, rules)
    }
}
