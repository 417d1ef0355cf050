//! Parsers for call bodies: JSON call objects in their common shapes, XML-ish argument tags and
//! Python call syntax.

use serde_json::{Map, Value};

/// One parsed item of a call block.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Parsed {
    Call {
        name: String,
        arguments: Value,
        id: Option<String>,
    },
    /// A call whose argument values the model wrote as text (XML-style formats): typed by the
    /// tool's schema when the detector knows it, else guessed (see [`typed_value_padded`]).
    TextCall {
        name: String,
        args: Vec<(String, String)>,
        id: Option<String>,
    },
    /// A call whose values the model wrote as text and declared the kind of in an attribute
    /// (DSML `string="true"`, Kimi K3 `type="string"`): `(key, value, is_text)`, where `is_text`
    /// means the value is the string as written and otherwise JSON. The tool's schema, when
    /// known, still decides (see `detect::declared_value`).
    DeclaredCall {
        name: String,
        args: Vec<(String, String, bool)>,
        id: Option<String>,
    },
    Bad {
        raw: String,
        error: String,
    },
    /// What opened like a call block turned out to be prose (a marker quoted in an answer that
    /// ended without any call syntax): shown as text.
    NotACall(String),
}

impl Parsed {
    pub(crate) fn bad(raw: &str, error: impl Into<String>) -> Parsed {
        Parsed::Bad {
            raw: raw.to_string(),
            error: error.into(),
        }
    }
}

/// The one place that reads a JSON text of arguments: empty means no arguments, anything but an
/// object is an error (`arguments must be a JSON object, got …`).
pub(crate) fn json_arguments(text: &str) -> Result<Value, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(t) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(v) => Err(format!("arguments must be a JSON object, got {}", kind(&v))),
        Err(e) => Err(format!("invalid JSON arguments: {e}")),
    }
}

/// A call named `name` whose arguments are the JSON text `args`, or `Bad` with `raw`.
pub(crate) fn call_with_json_args(raw: &str, name: &str, args: &str, id: Option<String>) -> Parsed {
    match json_arguments(args) {
        Ok(arguments) => Parsed::Call {
            name: name.to_string(),
            arguments,
            id,
        },
        Err(e) => Parsed::bad(raw, e),
    }
}

/// Arguments must end up a JSON object; OpenAI-style models send them as a JSON string.
pub(crate) fn normalize_arguments(v: Option<&Value>) -> Result<Value, String> {
    match v {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(Value::Object(_)) => Ok(v.cloned().unwrap_or_default()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Value::Object(Map::new())),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(Value::Object(m)),
            Ok(_) => Err("`arguments` string does not hold a JSON object".into()),
            Err(e) => Err(format!("`arguments` string is not valid JSON: {e}")),
        },
        Some(other) => Err(format!(
            "`arguments` must be an object, got {}",
            kind(other)
        )),
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A call object in any of the shapes models use: `{"name","arguments"|"parameters"}`,
/// `{"function":{…}}`, `{"type":"function","function":{…},"id":…}`.
pub(crate) fn call_from_value(v: &Value) -> Result<(String, Value, Option<String>), String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("a call must be a JSON object, got {}", kind(v)))?;
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if let Some(inner @ Value::Object(_)) = obj.get("function") {
        let (name, args, inner_id) = call_from_value(inner)?;
        return Ok((name, args, id.or(inner_id)));
    }
    // Small Llama models write `{"type": "function", "function": "NAME", "parameters": …}`.
    let name = match obj
        .get("name")
        .or_else(|| obj.get("function").filter(|f| f.is_string()))
    {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::String(_)) => return Err("`name` is empty".into()),
        Some(other) => return Err(format!("`name` must be a string, got {}", kind(other))),
        None => return Err("missing `name`".into()),
    };
    let args = obj
        .get("arguments")
        .or_else(|| obj.get("parameters"))
        .or_else(|| obj.get("args"));
    Ok((name, normalize_arguments(args)?, id))
}

/// One call object or an array of call objects. Each array element that is not a call becomes
/// its own `Bad` item so the good calls beside it still run.
pub(crate) fn calls_from_json_value(raw: &str, v: &Value) -> Vec<Parsed> {
    match v {
        Value::Array(items) if items.is_empty() => vec![Parsed::bad(raw, "empty list of calls")],
        Value::Array(items) => items
            .iter()
            .map(|item| match call_from_value(item) {
                Ok((name, arguments, id)) => Parsed::Call {
                    name,
                    arguments,
                    id,
                },
                Err(e) => Parsed::bad(&item.to_string(), e),
            })
            .collect(),
        Value::Object(o) if o.contains_key("tool_calls") && !o.contains_key("name") => {
            calls_from_json_value(raw, &o["tool_calls"])
        }
        Value::Object(o) if o.contains_key("tool_call") && !o.contains_key("name") => {
            calls_from_json_value(raw, &o["tool_call"])
        }
        _ => match call_from_value(v) {
            Ok((name, arguments, id)) => vec![Parsed::Call {
                name,
                arguments,
                id,
            }],
            Err(e) => vec![Parsed::bad(raw, e)],
        },
    }
}

/// Does a JSON value look like a call (or list of calls)? Used by whole-message formats to tell a
/// JSON answer from a tool call.
pub(crate) fn looks_like_call(v: &Value) -> bool {
    match v {
        // One recognisable call makes the list a call attempt; the other items are reported.
        Value::Array(items) => items.iter().any(looks_like_call),
        Value::Object(o) => {
            (o.get("name").is_some_and(Value::is_string)
                && (o.len() == 1
                    || o.contains_key("arguments")
                    || o.contains_key("parameters")
                    || o.contains_key("args")
                    || o.contains_key("id")
                    || o.contains_key("type")))
                || o.get("function").is_some_and(Value::is_object)
                // `{"type": "function", "function": "NAME", …}`, or a call that lost its name.
                || ((o.get("function").is_some_and(Value::is_string)
                    || o.get("type").and_then(Value::as_str) == Some("function"))
                    && (o.contains_key("arguments") || o.contains_key("parameters")))
                || o.get("tool_calls").is_some_and(|t| t.is_array())
                || o.get("tool_call").is_some_and(Value::is_object)
        }
        _ => false,
    }
}

/// XML/tag argument values: JSON when they parse as a number, boolean, object or array, else
/// the string itself (one surrounding newline stripped, entities decoded).
pub(crate) fn coerce_value(raw: &str) -> Value {
    let s = raw.strip_prefix('\n').unwrap_or(raw);
    let s = s.strip_suffix('\n').unwrap_or(s);
    let t = s.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t)
        && matches!(
            v,
            Value::Number(_) | Value::Bool(_) | Value::Object(_) | Value::Array(_)
        )
    {
        // An integer too long for 64 bits would lose digits as a float: an id, not a number.
        let lossy = matches!(&v, Value::Number(n) if n.is_f64())
            && t.trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit());
        if !lossy {
            return v;
        }
    }
    Value::String(decode_entities(s))
}

/// JSON Schema type names a property allows (`type` as a string or list, `anyOf`/`oneOf`
/// branches, or the kinds of its `enum`/`const` values).
pub(crate) fn schema_types(schema: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => out.push(t.as_str()),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            for b in branches {
                out.extend(schema_types(b));
            }
        }
    }
    let literals = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|e| e.iter().collect::<Vec<_>>())
        .or_else(|| schema.get("const").map(|c| vec![c]));
    if out.is_empty()
        && let Some(values) = literals
    {
        for v in values {
            out.push(json_kind(v));
        }
    }
    out
}

/// A value the model wrote as text, typed by the property's schema: strings stay strings
/// (`"123456789012345678901"` too); integers, numbers, booleans (`true`/`True`), null
/// (`null`/`None`), arrays and objects (JSON, or Python literals) by the schema. Text that does
/// not fit any non-string type the schema allows stays a string. Without a schema the type is
/// guessed ([`coerce_value`]). `entities`: the format escapes `<>&` as XML entities.
#[cfg(test)]
pub(crate) fn typed_value(raw: &str, schema: Option<&Value>, entities: bool) -> Value {
    typed_value_padded(raw, schema, entities, true)
}

/// [`typed_value`]; `padded`: the format writes a newline around each value (Qwen3-Coder), so
/// one is stripped on each side. Formats that write values tight (GLM) keep them verbatim.
pub(crate) fn typed_value_padded(
    raw: &str,
    schema: Option<&Value>,
    entities: bool,
    padded: bool,
) -> Value {
    let s = if padded {
        let s = raw.strip_prefix('\n').unwrap_or(raw);
        s.strip_suffix('\n').unwrap_or(s)
    } else {
        raw
    };
    let text = || {
        if entities {
            decode_entities(s)
        } else {
            s.to_string()
        }
    };
    let types = schema.map(schema_types).unwrap_or_default();
    if types.is_empty() {
        return match coerce_value(raw) {
            Value::String(_) => Value::String(text()),
            v => v,
        };
    }
    let t = s.trim();
    for ty in &types {
        let v = match *ty {
            "integer" | "number" => serde_json::from_str::<serde_json::Number>(t)
                .ok()
                .map(Value::Number),
            "boolean" => match t {
                "true" | "True" | "TRUE" => Some(Value::Bool(true)),
                "false" | "False" | "FALSE" => Some(Value::Bool(false)),
                _ => None,
            },
            "null" => matches!(t, "null" | "None" | "NULL").then_some(Value::Null),
            "object" | "array" => {
                let want_obj = *ty == "object";
                let parsed = serde_json::from_str::<Value>(t)
                    .ok()
                    .or_else(|| Py::new(t).literal().ok());
                parsed.filter(|v| {
                    if want_obj {
                        v.is_object()
                    } else {
                        v.is_array()
                    }
                })
            }
            _ => None,
        };
        if let Some(v) = v {
            return v;
        }
    }
    if types.contains(&"string") {
        return Value::String(text());
    }
    match coerce_value(raw) {
        Value::String(_) => Value::String(text()),
        v => v,
    }
}

pub(crate) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Value of `attr="…"` (or single quotes) inside a tag's attribute text.
pub(crate) fn xml_attr(attrs: &str, attr: &str) -> Option<String> {
    let mut rest = attrs;
    while let Some(p) = rest.find(attr) {
        let before_ok = p == 0 || rest[..p].ends_with(|c: char| c.is_whitespace());
        let after = rest[p + attr.len()..].trim_start();
        if before_ok && let Some(after_eq) = after.strip_prefix('=') {
            let after_eq = after_eq.trim_start();
            let q = after_eq.chars().next()?;
            if q == '"' || q == '\'' {
                let v = &after_eq[1..];
                let end = v.find(q)?;
                return Some(decode_entities(&v[..end]));
            }
            let end = after_eq
                .find(|c: char| c.is_whitespace() || c == '>')
                .unwrap_or(after_eq.len());
            return Some(after_eq[..end].to_string());
        }
        rest = &rest[p + attr.len()..];
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Python call syntax: `[f(a=1, b="x"), mod.g(c=[1, 2])]`, `f(a=1)` per line.

pub(crate) struct Py<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Py<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Py { s, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    pub(crate) fn ws(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(&format!("expected `{c}`")))
        }
    }

    fn err(&self, what: &str) -> String {
        let near = near(self.rest(), 20);
        if near.is_empty() {
            format!("{what} at end of input")
        } else {
            format!("{what} at byte {} (near `{near}`)", self.pos)
        }
    }

    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.pos >= self.s.len()
    }

    fn ident(&mut self) -> Option<&'a str> {
        self.name_like(false)
    }

    /// A Python identifier, or with `hyphens` an MCP tool name written as one (`get-sum`: MCP
    /// names may contain `-`, and models copy the name they were shown).
    fn name_like(&mut self, hyphens: bool) -> Option<&'a str> {
        self.ws();
        let r = self.rest();
        let mut end = 0;
        for (i, c) in r.char_indices() {
            let ok = if i == 0 {
                c.is_alphabetic() || c == '_'
            } else {
                c.is_alphanumeric() || c == '_' || (hyphens && c == '-')
            };
            if !ok {
                break;
            }
            end = i + c.len_utf8();
        }
        if end == 0 {
            return None;
        }
        self.pos += end;
        Some(&r[..end])
    }

    /// Skips whitespace and any of the `extra` separator characters.
    pub(crate) fn ws_and(&mut self, extra: &str) {
        loop {
            self.ws();
            match self.rest().chars().next() {
                Some(c) if extra.contains(c) => self.pos += c.len_utf8(),
                _ => break,
            }
        }
    }

    /// One statement of a code block: a call, `print(call)`, or a `[call, …]` list.
    pub(crate) fn statement(&mut self) -> Result<Vec<(String, Value)>, String> {
        self.ws();
        if self.rest().starts_with('[') {
            return self.call_list();
        }
        if self.rest().starts_with("print(") {
            self.pos += "print(".len();
            let c = self.call()?;
            self.expect(')')?;
            return Ok(vec![c]);
        }
        Ok(vec![self.call()?])
    }

    /// `name(kw=value, …)` with a dotted name.
    pub(crate) fn call(&mut self) -> Result<(String, Value), String> {
        let mut name = self
            .name_like(true)
            .ok_or_else(|| self.err("expected a function name"))?
            .to_string();
        while self.rest().starts_with('.') {
            self.pos += 1;
            let part = self
                .name_like(true)
                .ok_or_else(|| self.err("expected a name after `.`"))?;
            name.push('.');
            name.push_str(part);
        }
        self.expect('(')?;
        let mut args = Map::new();
        loop {
            if self.eat(')') {
                break;
            }
            let save = self.pos;
            let key = self.ident();
            let key = match key {
                Some(k) if self.eat('=') => k.to_string(),
                _ => {
                    self.pos = save;
                    return Err(self.err("expected a keyword argument `name=value` (positional arguments are not supported)"));
                }
            };
            let v = self.value()?;
            args.insert(key, v);
            if !self.eat(',') {
                self.expect(')')?;
                break;
            }
        }
        Ok((name, Value::Object(args)))
    }

    /// `[call, call, …]`
    pub(crate) fn call_list(&mut self) -> Result<Vec<(String, Value)>, String> {
        self.expect('[')?;
        let mut out = Vec::new();
        loop {
            if self.eat(']') {
                break;
            }
            out.push(self.call()?);
            if !self.eat(',') {
                self.expect(']')?;
                break;
            }
        }
        Ok(out)
    }

    /// One Python literal that must fill the whole text.
    pub(crate) fn literal(&mut self) -> Result<Value, String> {
        let v = self.value()?;
        if self.at_end() {
            Ok(v)
        } else {
            Err(self.err("unexpected text after the value"))
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        let r = self.rest();
        let c = r
            .chars()
            .next()
            .ok_or_else(|| self.err("expected a value"))?;
        match c {
            '"' | '\'' => self.string().map(Value::String),
            '[' | '(' => {
                let close = if c == '[' { ']' } else { ')' };
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.eat(close) {
                        break;
                    }
                    items.push(self.value()?);
                    if !self.eat(',') {
                        self.expect(close)?;
                        break;
                    }
                }
                Ok(Value::Array(items))
            }
            '{' => {
                self.pos += 1;
                let mut m = Map::new();
                loop {
                    if self.eat('}') {
                        break;
                    }
                    let k = match self.value()? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    self.expect(':')?;
                    let v = self.value()?;
                    m.insert(k, v);
                    if !self.eat(',') {
                        self.expect('}')?;
                        break;
                    }
                }
                Ok(Value::Object(m))
            }
            _ => {
                let end = r
                    .find(|ch: char| !(ch.is_alphanumeric() || matches!(ch, '.' | '-' | '+' | '_')))
                    .unwrap_or(r.len());
                let tok = &r[..end];
                let v = match tok {
                    "True" | "true" => Value::Bool(true),
                    "False" | "false" => Value::Bool(false),
                    "None" | "null" => Value::Null,
                    _ => match serde_json::from_str::<serde_json::Number>(tok) {
                        Ok(n) => Value::Number(n),
                        Err(_) => match tok
                            .parse::<f64>()
                            .ok()
                            .and_then(serde_json::Number::from_f64)
                        {
                            Some(n) => Value::Number(n),
                            None => return Err(self.err("expected a value")),
                        },
                    },
                };
                self.pos += end;
                Ok(v)
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let r = self.rest();
        let q = r
            .chars()
            .next()
            .ok_or_else(|| self.err("expected a string"))?;
        let mut out = String::new();
        let mut chars = r.char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            if c == q {
                self.pos += i + 1;
                return Ok(out);
            }
            if c == '\\' {
                match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, 'r')) => out.push('\r'),
                    Some((_, '0')) => out.push('\0'),
                    Some((_, other)) => out.push(other),
                    None => break,
                }
            } else {
                out.push(c);
            }
        }
        Err(self.err("unterminated string"))
    }
}

/// The first `chars` characters of `rest` for an error message, control characters escaped:
/// the error is one line, shown to people and to the model (and a detector plugin's errors are
/// escaped the same way at the plugin boundary, so native and plugin errors agree).
pub(crate) fn near(rest: &str, chars: usize) -> String {
    rest.chars()
        .take(chars)
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The JSON Schema type name of `v` (`integer` for whole numbers): what formats that declare a
/// value's kind write (`type="integer"`), and what a schema's `type` says.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn call_shapes() {
        let (n, a, id) = call_from_value(&json!({"name":"f","parameters":{"x":1}})).unwrap();
        assert_eq!((n.as_str(), a, id), ("f", json!({"x":1}), None));
        let (n, a, id) = call_from_value(
            &json!({"type":"function","id":"c9","function":{"name":"g","arguments":"{\"y\":2}"}}),
        )
        .unwrap();
        assert_eq!(
            (n.as_str(), a, id.as_deref()),
            ("g", json!({"y":2}), Some("c9"))
        );
        assert!(
            call_from_value(&json!({"arguments":{}}))
                .unwrap_err()
                .contains("name")
        );
        assert!(
            call_from_value(&json!({"name":"f","arguments":[1]}))
                .unwrap_err()
                .contains("object")
        );
    }

    #[test]
    fn coercion() {
        assert_eq!(coerce_value("42"), json!(42));
        assert_eq!(coerce_value("\ntrue\n"), json!(true));
        assert_eq!(coerce_value("Paris"), json!("Paris"));
        assert_eq!(coerce_value("null"), json!("null"));
        assert_eq!(coerce_value("\"q\""), json!("\"q\""));
        assert_eq!(coerce_value("a &lt; b"), json!("a < b"));
        assert_eq!(
            coerce_value("123456789012345678901"),
            json!("123456789012345678901")
        );
        assert_eq!(coerce_value("-12"), json!(-12));
    }

    #[test]
    fn text_values_typed_by_schema() {
        let s = |t: serde_json::Value| json!({ "type": t });
        let big = "123456789012345678901";
        assert_eq!(
            typed_value(big, Some(&s(json!("string"))), false),
            json!(big)
        );
        assert_eq!(
            typed_value("\n42\n", Some(&s(json!("integer"))), false),
            json!(42)
        );
        assert_eq!(
            typed_value("2.5", Some(&s(json!("number"))), false),
            json!(2.5)
        );
        assert_eq!(
            typed_value("True", Some(&s(json!("boolean"))), false),
            json!(true)
        );
        assert_eq!(
            typed_value("None", Some(&s(json!(["string", "null"]))), false),
            json!(null)
        );
        assert_eq!(
            typed_value("Paris", Some(&s(json!(["string", "null"]))), false),
            json!("Paris")
        );
        assert_eq!(
            typed_value("{'a': [1, None]}", Some(&s(json!("object"))), false),
            json!({"a": [1, null]})
        );
        assert_eq!(
            typed_value("[1, 2]", Some(&s(json!("array"))), false),
            json!([1, 2])
        );
        // Text that fits no type the schema allows stays text.
        assert_eq!(
            typed_value("many", Some(&s(json!("integer"))), false),
            json!("many")
        );
        assert_eq!(
            typed_value("c", Some(&json!({"enum": ["c", "f"]})), false),
            json!("c")
        );
        assert_eq!(
            typed_value("a &lt; b", Some(&s(json!("string"))), true),
            json!("a < b")
        );
        assert_eq!(
            typed_value("a &lt; b", Some(&s(json!("string"))), false),
            json!("a &lt; b")
        );
        // Without a schema: guessed.
        assert_eq!(typed_value("7", None, false), json!(7));
        assert_eq!(typed_value("x", None, false), json!("x"));
    }

    #[test]
    fn json_arguments_must_be_an_object() {
        assert_eq!(json_arguments(" "), Ok(json!({})));
        assert_eq!(json_arguments(r#"{"a":1}"#), Ok(json!({"a":1})));
        assert!(
            json_arguments("[1]")
                .unwrap_err()
                .contains("must be a JSON object, got an array")
        );
        assert!(
            json_arguments("{")
                .unwrap_err()
                .contains("invalid JSON arguments")
        );
    }

    #[test]
    fn python_calls() {
        let mut p = Py::new(
            r#"[get_weather(city="Paris", days=3), m.f(x=[1, 'a\'b'], y={"k": None}, z=True)]"#,
        );
        let calls = p.call_list().unwrap();
        assert_eq!(
            calls[0],
            ("get_weather".into(), json!({"city":"Paris","days":3}))
        );
        assert_eq!(
            calls[1],
            ("m.f".into(), json!({"x":[1,"a'b"],"y":{"k":null},"z":true}))
        );
        assert!(
            Py::new("[f(1)]")
                .call_list()
                .unwrap_err()
                .contains("positional")
        );
        assert!(Py::new("[f(a=\"x)]").call_list().is_err());
    }

    #[test]
    fn attributes() {
        assert_eq!(
            xml_attr(r#" name="get_weather""#, "name").as_deref(),
            Some("get_weather")
        );
        assert_eq!(
            xml_attr(r#" id='1' name='x y'"#, "name").as_deref(),
            Some("x y")
        );
        assert_eq!(xml_attr(r#" rename="a""#, "name"), None);
    }
}
