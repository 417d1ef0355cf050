//! Values copied, not invented: argument grammars tied to the text of the turn.
//!
//! With a [`Grounding`], the llguidance grammar of the JSON-call formats writes a tool's
//! arguments itself (instead of handing the whole call to `%json`), so that
//! - a string the schema leaves open (no `enum`, `const`, `format`, `pattern`) is a span of whole
//!   words of the user's message (or of an earlier tool result of the turn): llguidance's
//!   `%regex {"substring_words": …}` over the text, pre-escaped for a JSON string;
//! - a number is one of the numbers the message contains (when it contains any that fit);
//! - everything else keeps its JSON Schema (`%json`).
//!
//! A parameter whose description (or the tool's, right after the parameter's name) shows a
//! format or examples (`YYYY-MM-DD`, `e.g. 'America/New_York'`, `such as '(3 + 4) * 12'`) stays
//! free text with [`Grounding::escape`], unless a word of the message has the shape of such an
//! example (`2026-12-24` for `YYYY-MM-DD`): then a span fits and the value stays a span.
//!
//! [`fill_named_optional`] is separate: optional parameters the message names (`urgent`, `2
//! passengers`, or one of an enum's values: `business`) become required, in any grammar.
use serde_json::{Value, json};

use super::ToolDef;
use crate::formats::grammar::{json_expr, lit, params};

/// Texts longer than this (in characters) are cut at a word boundary before they become spans.
pub const MAX_SPAN_TEXT: usize = 4096;
/// An array of grounded strings holds at most this many items.
pub const MAX_SPAN_ITEMS: usize = 8;
/// At most this many distinct numbers of the message are offered.
const MAX_NUMBERS: usize = 16;

/// What the values of a round's calls are tied to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grounding {
    /// The user's message.
    pub message: String,
    /// Earlier tool results of the turn (their spans are offered beside the message's).
    pub results: Vec<String>,
    /// Open strings are spans of the texts.
    pub spans: bool,
    /// With `spans`: a parameter whose description shows a format or examples that no word of
    /// the message fits stays free text.
    pub escape: bool,
    /// Numbers are among the message's numbers (when it has any that fit the schema).
    pub numbers: bool,
}

impl Grounding {
    /// Whether anything is grounded at all.
    pub fn active(&self) -> bool {
        self.spans || self.numbers
    }
}

/// `text` on one line, without control characters, at most [`MAX_SPAN_TEXT`] characters (cut
/// at a space), written as the inside of a JSON string: every whole-word span of it is then a
/// valid JSON string body (`\"` and `\\` are runs of punctuation, never split).
pub fn span_text(text: &str) -> String {
    let one_line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let cut = match one_line.char_indices().nth(MAX_SPAN_TEXT) {
        Some((at, _)) => {
            let head = &one_line[..at];
            head.rfind(' ').map_or(head, |sp| &head[..sp])
        }
        None => &one_line,
    };
    let quoted = Value::String(cut.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// The numbers written in digits in `message`, as JSON number texts, in order, each once:
/// `$1,000` → `1000`, `3.5`, `-3` (a minus right before the digits, after a space or at the
/// start), `2026-12-24` → `2026`, `12`, `24`.
pub fn message_numbers(message: &str) -> Vec<String> {
    let chars: Vec<char> = message.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let negative = i > 0
            && chars[i - 1] == '-'
            && (i == 1 || chars[i - 2].is_whitespace() || chars[i - 2] == '(');
        let mut digits = String::new();
        let mut j = i;
        while j < chars.len() {
            let c = chars[j];
            if c.is_ascii_digit() {
                digits.push(c);
            } else if c == ','
                && j + 3 < chars.len()
                && chars[j + 1..].iter().take(3).all(char::is_ascii_digit)
                && chars.get(j + 4).is_none_or(|d| !d.is_ascii_digit())
            {
                // A thousands separator: `1,000`.
            } else if c == '.'
                && !digits.contains('.')
                && chars.get(j + 1).is_some_and(char::is_ascii_digit)
            {
                digits.push('.');
            } else {
                break;
            }
            j += 1;
        }
        i = j;
        let Ok(n) = digits.parse::<f64>() else {
            continue;
        };
        let n = if negative { -n } else { n };
        let Some(text) = number_text(n) else {
            continue;
        };
        if !out.contains(&text) && out.len() < MAX_NUMBERS {
            out.push(text);
        }
    }
    out
}

/// The JSON text of `n`: `1000`, `3.5`, `-3`.
fn number_text(n: f64) -> Option<String> {
    if !n.is_finite() {
        return None;
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        Some(format!("{}", n as i64))
    } else {
        serde_json::Number::from_f64(n).map(|x| x.to_string())
    }
}

/// Lower-case words of `text` (letters, digits, `_`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `word` (lower case) is `name` or its plural.
fn names(word: &str, name: &str) -> bool {
    word == name || word.strip_suffix('s') == Some(name) || word.strip_suffix("es") == Some(name)
}

/// Makes the optional top-level parameters of `schema` that `message` names required: the
/// parameter's name (or, with `_`/`-`, all of its parts) is a word of the message, or one of
/// its enum's string values is. The model then has to write them.
pub fn fill_named_optional(schema: &mut Value, message: &str) {
    let said = words(message);
    let has = |w: &str| said.iter().any(|s| names(s, w));
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut add = Vec::new();
    for (name, p) in props {
        if required.contains(name) {
            continue;
        }
        let parts = words(&name.replace(['-', '_'], " "));
        let by_name = !parts.is_empty() && parts.iter().all(|w| has(w));
        let by_value = p
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .chain(enum_values_in_any_of(p))
            .filter_map(Value::as_str)
            .any(|v| {
                let vw = words(v);
                !vw.is_empty() && vw.iter().all(|w| has(w))
            });
        if by_name || by_value {
            add.push(Value::String(name.clone()));
        }
    }
    if add.is_empty() {
        return;
    }
    if let Some(o) = schema.as_object_mut() {
        let req = o.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(r) = req {
            r.extend(add);
        }
    }
}

/// The enum values of `anyOf`/`oneOf` alternatives (`Literal[…] | None` in Python servers).
fn enum_values_in_any_of(p: &Value) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| p.get(k).and_then(Value::as_array))
        .flatten()
        .filter_map(|alt| alt.get("enum").and_then(Value::as_array))
        .flatten()
}

/// Whether `schema` is a string the schema leaves open.
fn open_string(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    o.get("type").and_then(Value::as_str) == Some("string")
        && ["enum", "const", "format", "pattern"]
            .iter()
            .all(|k| !o.contains_key(*k))
}

/// A number or integer schema without `enum`/`const`.
fn open_number(schema: &Value) -> Option<bool> {
    let o = schema.as_object()?;
    if o.contains_key("enum") || o.contains_key("const") {
        return None;
    }
    match o.get("type").and_then(Value::as_str)? {
        "integer" => Some(true),
        "number" => Some(false),
        _ => None,
    }
}

/// Letters → `a`, digits → `9` (runs collapsed), everything else kept: `2026-12-24` → `9-9-9`.
fn shape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let k = if c.is_alphabetic() {
            'a'
        } else if c.is_ascii_digit() {
            '9'
        } else {
            c
        };
        if (k == 'a' || k == '9') && out.ends_with(k) {
            continue;
        }
        out.push(k);
    }
    out
}

/// A format placeholder: `YYYY-MM-DD`, `HH:MM`, `hh:mm:ss`, `MM/DD/YYYY`.
fn placeholder(word: &str) -> bool {
    let mut parts = 0;
    for part in word.split(['-', ':', '/', '.']) {
        if part.is_empty() || part.len() > 4 || !part.chars().all(|c| "YMDHSymdhs".contains(c)) {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// What a description shows a value looks like: `None` when it shows nothing; otherwise the
/// shapes of its examples a message word may have (empty: examples no single word fits).
fn shown_format(text: &str) -> Option<Vec<String>> {
    let lower = text.to_lowercase();
    let mut shapes = Vec::new();
    let mut shown = false;
    for w in text.split_whitespace() {
        let w = w.trim_matches(|c: char| "()[],;.'\"`".contains(c));
        if placeholder(w) {
            shown = true;
            // Placeholder letters stand for digits.
            shapes.push(shape(
                &w.chars()
                    .map(|c| if c.is_alphabetic() { '0' } else { c })
                    .collect::<String>(),
            ));
        }
    }
    let marked = [
        "e.g",
        "for example",
        "such as",
        "for instance",
        "like '",
        "like \"",
    ]
    .iter()
    .any(|m| lower.contains(m));
    // Examples count when quoted: "an item such as a note, photo or file" shows none.
    let examples = quoted(text);
    if marked && !examples.is_empty() {
        shown = true;
        for q in examples {
            if !q.contains(' ') {
                let s = shape(&q);
                // A bare word would fit every word of the message: only the word itself.
                shapes.push(if s == "a" { q.to_lowercase() } else { s });
            }
        }
    }
    shown.then_some(shapes)
}

/// Texts between matching `'…'`, `"…"` or `` `…` `` quotes.
fn quoted(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for q in ['\'', '"', '`'] {
        let mut parts = text.split(q);
        parts.next();
        while let Some(inside) = parts.next() {
            if !inside.is_empty() && inside.len() < 60 {
                out.push(inside.to_string());
            }
            parts.next();
        }
    }
    out
}

/// The part of a tool's description about `param`: the words right after its name (`date is
/// YYYY-MM-DD`, `a date (YYYY-MM-DD)`, `expression such as '…'`).
fn tool_says_about(tool_description: &str, param: &str) -> Option<String> {
    let ws: Vec<&str> = tool_description.split_whitespace().collect();
    let param = param.to_lowercase();
    for (i, w) in ws.iter().enumerate() {
        let bare: String = w
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
            .to_lowercase();
        if bare == param {
            // The words up to the end of the clause, at most three.
            let mut after = Vec::new();
            if !w.ends_with(['.', ';', ',']) {
                for a in ws[i + 1..].iter().take(3) {
                    after.push(*a);
                    if a.ends_with(['.', ';', ',']) {
                        break;
                    }
                }
            }
            let mut text = after.join(" ");
            // An example marker reaches its quoted example.
            if text.contains("such as") || text.contains("e.g") || text.contains("like") {
                text = ws[i + 1..].join(" ");
            }
            return Some(text);
        }
    }
    None
}

/// Whether a grounded value of `param` should stay free text: its description (or the tool's,
/// about it) shows a format or examples, and no word of the message has their shape.
fn escapes(param: &str, schema: &Value, tool_description: &str, message: &str) -> bool {
    let own = schema
        .get("description")
        .and_then(Value::as_str)
        .and_then(shown_format);
    let shown = own.or_else(|| {
        tool_says_about(tool_description, param)
            .as_deref()
            .and_then(shown_format)
    });
    let Some(shapes) = shown else {
        return false;
    };
    let fits = message.split_whitespace().any(|w| {
        let w = w.trim_matches(|c: char| ".,;:!?'\"`".contains(c));
        !w.is_empty() && (shapes.contains(&shape(w)) || shapes.contains(&w.to_lowercase()))
    });
    !fits
}

/// Builds the grounded rules of one grammar.
pub(crate) struct Builder<'a> {
    g: &'a Grounding,
    rules: String,
    n: usize,
    /// The terminal of a grounded string (with its quotes), once made.
    span: Option<String>,
    numbers: Vec<String>,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(g: &'a Grounding) -> Self {
        Builder {
            g,
            rules: String::new(),
            n: 0,
            span: None,
            numbers: if g.numbers {
                message_numbers(&g.message)
            } else {
                Vec::new()
            },
        }
    }

    fn add(&mut self, base: &str, body: &str) -> String {
        self.n += 1;
        let name = format!("{base}_{}", self.n);
        self.rules.push_str(&format!("{name}: {body}\n"));
        name
    }

    /// The terminal of a quoted span of the texts.
    fn span_terminal(&mut self) -> String {
        if let Some(s) = &self.span {
            return s.clone();
        }
        let mut alts = Vec::new();
        for text in std::iter::once(&self.g.message).chain(&self.g.results) {
            let body = span_text(text);
            if body.is_empty() {
                continue;
            }
            let arg = json!({ "substring_words": body });
            // Whole words without a space at either end; never empty.
            alts.push(self.add("GSPAN", &format!("%regex {arg} & /[^ ](.*[^ ])?/")));
        }
        let name = if alts.is_empty() {
            // Nothing to copy from: any string.
            self.add(
                "GSTR",
                r#"/"(\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4}|[^"\\\x00-\x1f])*"/"#,
            )
        } else {
            let inner = self.add("GSPANS", &alts.join(" | "));
            self.add("GSTR", &format!("\"\\\"\" {inner} \"\\\"\""))
        };
        self.span = Some(name.clone());
        name
    }

    /// A Lark expression for the value of `param`; `None` when nothing in it is grounded.
    fn value(&mut self, param: &str, schema: &Value, tool_description: &str) -> Option<String> {
        if self.g.spans && open_string(schema) {
            if self.g.escape && escapes(param, schema, tool_description, &self.g.message) {
                return None;
            }
            return Some(self.span_terminal());
        }
        if let Some(integer) = open_number(schema) {
            let fit: Vec<String> = self
                .numbers
                .iter()
                .filter(|n| !integer || !n.contains('.'))
                .filter(|n| in_range(n, schema))
                .map(|n| lit(n))
                .collect();
            if fit.is_empty() {
                return None;
            }
            return Some(format!("({})", fit.join(" | ")));
        }
        let o = schema.as_object()?;
        if self.g.spans && o.get("type").and_then(Value::as_str) == Some("array") {
            let items = o.get("items")?;
            if !open_string(items) {
                return None;
            }
            if self.g.escape && escapes(param, items, tool_description, &self.g.message) {
                return None;
            }
            let item = self.span_terminal();
            let min = o.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let max = o
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(MAX_SPAN_ITEMS as u64)
                .clamp(1, MAX_SPAN_ITEMS as u64);
            let more = format!("(WS? \",\" WS? {item})~0..{}", max - 1);
            let list = format!("{item} {more}");
            let list = if min == 0 { format!("({list})?") } else { list };
            return Some(format!("\"[\" WS? {list} WS? \"]\""));
        }
        // `type: [string, null]`, `anyOf: [{string}, {null}]` (Python's `str | None`).
        let alts: Vec<Value> = match (o.get("type"), o.get("anyOf").or_else(|| o.get("oneOf"))) {
            (Some(Value::Array(ts)), None) => ts
                .iter()
                .map(|t| {
                    let mut one = schema.clone();
                    one["type"] = t.clone();
                    one
                })
                .collect(),
            (None, Some(Value::Array(subs))) => subs.clone(),
            _ => return None,
        };
        let mut any = false;
        let mut out = Vec::new();
        for alt in &alts {
            match self.value(param, alt, tool_description) {
                Some(e) => {
                    any = true;
                    out.push(e);
                }
                None => out.push(json_expr(alt)),
            }
        }
        any.then(|| format!("({})", out.join(" | ")))
    }

    /// A rule for one call `{"name": …, "<args_key>": {…}}` of `tool` with grounded values, or
    /// `None` when none of its values is grounded (the call stays `%json`).
    pub(crate) fn call(&mut self, tool: &ToolDef, args_key: &str) -> Option<String> {
        let args = crate::formats::grammar::args_schema(tool);
        let ps = params(&args);
        let desc = tool.description.as_deref().unwrap_or("");
        let mut any = false;
        let mut kvs = Vec::new();
        for p in &ps {
            let v = match self.value(p.name, p.schema, desc) {
                Some(v) => {
                    any = true;
                    v
                }
                None => json_expr(p.schema),
            };
            let kv = format!("{} WS? \":\" WS? {v}", lit(&lit(p.name)));
            kvs.push((self.add("gkv", &kv), p.required));
        }
        if !any {
            return None;
        }
        // Keys in the schema's order, optional ones may be left out: `head_i` when nothing came
        // before key i, `tail_i` after something did.
        let n = kvs.len();
        let mut tail = String::new();
        let mut head = String::new();
        for i in (0..n).rev() {
            let (kv, required) = &kvs[i];
            let t = if *required {
                format!("WS? \",\" WS? {kv} {tail}")
            } else {
                format!("(WS? \",\" WS? {kv})? {tail}")
            };
            let h = if *required {
                format!("{kv} {tail}")
            } else if head.is_empty() {
                format!("({kv} {tail})?")
            } else {
                format!("{kv} {tail} | {head}")
            };
            tail = self.add("gtail", t.trim());
            head = self.add("ghead", h.trim());
        }
        // `head` may be empty only where every key is optional.
        let obj = format!("\"{{\" WS? {head} WS? \"}}\"");
        let call = format!(
            "\"{{\" WS? {} WS? \":\" WS? {} WS? \",\" WS? {} WS? \":\" WS? {obj} WS? \"}}\"",
            lit(&lit("name")),
            lit(&lit(&tool.name)),
            lit(&lit(args_key)),
        );
        Some(self.add("gcall", &call))
    }

    pub(crate) fn finish(self) -> String {
        self.rules
    }
}

/// An llguidance grammar for one argument's value alone (a call written one argument at a
/// time): optional whitespace, the value of `param` as `schema` allows it, grounded as
/// `grounding` says (a span of the message, one of its numbers) or held to the schema (`%json`),
/// then optionally one of `followers`. `tool_description` is the tool's, for
/// [`Grounding::escape`]. References (`$ref`) resolve against `schema` itself, so a caller
/// copies the tool's `$defs` into it.
///
/// Why followers: a model writing a value as it would inside a call ends it with `,` or `}`.
/// Without them a number could only end with the end-of-turn token, which a small model rarely
/// prefers to one more digit (`19` → `190000…`); with them it ends where it would have.
pub fn value_grammar(
    param: &str,
    schema: &Value,
    tool_description: &str,
    grounding: Option<&Grounding>,
    followers: &[&str],
) -> String {
    let mut builder = grounding.filter(|g| g.active()).map(Builder::new);
    let value = builder
        .as_mut()
        .and_then(|b| b.value(param, schema, tool_description))
        .unwrap_or_else(|| json_expr(schema));
    let rules = builder.map(Builder::finish).unwrap_or_default();
    let after = if followers.is_empty() {
        String::new()
    } else {
        let alts: Vec<String> = followers.iter().map(|f| lit(f)).collect();
        format!(" (WS? ({}))?", alts.join(" | "))
    };
    format!("start: WS? value{after}\nvalue: {value}\nWS: /[ \\t\\n]{{1,20}}/\n{rules}")
}

/// Whether the JSON number `n` is within the schema's `minimum`/`maximum`.
fn in_range(n: &str, schema: &Value) -> bool {
    let Ok(x) = n.parse::<f64>() else {
        return false;
    };
    let min = schema.get("minimum").and_then(Value::as_f64);
    let max = schema.get("maximum").and_then(Value::as_f64);
    min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_text_is_one_line_json_string_inside_and_capped() {
        assert_eq!(
            span_text("say \"hi\"\n\tto C:\\x"),
            r#"say \"hi\" to C:\\x"#
        );
        assert_eq!(span_text("a\u{7}b"), "ab");
        let long = "word ".repeat(2000);
        let cut = span_text(&long);
        assert!(
            cut.len() <= MAX_SPAN_TEXT && cut.ends_with("word"),
            "{}",
            cut.len()
        );
    }

    #[test]
    fn numbers_are_read_as_written() {
        assert_eq!(
            message_numbers("a budget of $1,000 and 3.5 kg, then 8 and -3 on 2026-12-24"),
            ["1000", "3.5", "8", "-3", "2026", "12", "24"]
        );
        assert_eq!(message_numbers("for two"), Vec::<String>::new());
        assert_eq!(message_numbers("17 and 17."), ["17"]);
        assert_eq!(message_numbers("1,5 items"), ["1", "5"]);
    }

    #[test]
    fn optional_parameters_the_message_names_become_required() {
        let schema = json!({"type": "object", "properties": {
            "to": {"type": "string"}, "urgent": {"type": "boolean"},
            "passengers": {"type": "integer"},
            "cabin": {"type": "string", "enum": ["economy", "business", "first"]},
            "seating": {"anyOf": [{"enum": ["indoor", "outdoor"], "type": "string"}, {"type": "null"}]},
            "from_unit": {"type": "string"}
        }, "required": ["to"]});
        let filled = |m: &str| {
            let mut s = schema.clone();
            fill_named_optional(&mut s, m);
            s["required"].clone()
        };
        assert_eq!(
            filled("Send an urgent message to Carol"),
            json!(["to", "urgent"])
        );
        assert_eq!(
            filled("2 passengers in business class, indoors, from unit"),
            json!(["to", "passengers", "cabin", "seating", "from_unit"])
        );
        assert_eq!(filled("flights to Rome"), json!(["to"]));
        let mut none = json!({"type": "object", "properties": {"urgent": {}}});
        fill_named_optional(&mut none, "urgent!");
        assert_eq!(none["required"], json!(["urgent"]));
    }

    #[test]
    fn the_grammar_spans_the_message_and_leaves_ungrounded_tools_to_json() {
        use crate::ToolFormat;
        use crate::convert::{GrammarMode, lark_grammar_grounded};
        let tool = |name: &str, schema: Value| ToolDef {
            name: name.into(),
            description: None,
            input_schema: schema,
            annotations: None,
        };
        let tools = [
            tool(
                "note",
                json!({"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}, "required": ["text"]}),
            ),
            tool(
                "ping",
                json!({"type": "object", "properties": {"on": {"type": "boolean"}}}),
            ),
        ];
        let g = Grounding {
            message: "say \"hi\"\n3 times".into(),
            spans: true,
            numbers: true,
            ..Grounding::default()
        };
        let out = lark_grammar_grounded(
            ToolFormat::ToolCallJson,
            &tools,
            GrammarMode::CallOrAnswer,
            Some(&g),
        )
        .unwrap();
        assert!(
            out.contains(
                r#"%regex {"substring_words":"say \\\"hi\\\" 3 times"} & /[^ ](.*[^ ])?/"#
            ),
            "{out}"
        );
        assert!(out.contains(r#""\"n\"" WS? ":" WS? ("3")"#), "{out}");
        assert!(out.contains(r#""\"text\"" WS? ":" WS? GSTR_"#), "{out}");
        // `ping` has no grounded value: it stays in the call's JSON Schema.
        let call = out.lines().find_map(|l| l.strip_prefix("call: ")).unwrap();
        assert!(call.starts_with("%json {"), "{call}");
        assert!(
            call.contains(r#""ping""#) && !call.contains(r#""note""#),
            "{call}"
        );
        assert!(call.contains(" | gcall_"), "{call}");
        // Without anything grounded the grammar is the plain one.
        let off = Grounding {
            message: g.message.clone(),
            ..Grounding::default()
        };
        assert_eq!(
            lark_grammar_grounded(
                ToolFormat::ToolCallJson,
                &tools,
                GrammarMode::CallOrAnswer,
                Some(&off)
            ),
            crate::convert::lark_grammar_with(
                ToolFormat::ToolCallJson,
                &tools,
                GrammarMode::CallOrAnswer
            )
        );
    }

    #[test]
    fn formats_in_descriptions_escape_unless_a_word_fits() {
        let tz = json!({"type": "string", "description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use 'UTC' if none."});
        assert!(escapes("timezone", &tz, "", "What time is it in Tokyo?"));
        assert!(!escapes("timezone", &tz, "", "Time in Asia/Tokyo?"));
        assert!(!escapes("timezone", &tz, "", "the current UTC time"));
        let plain = json!({"type": "string"});
        let book = "Book a table. date is YYYY-MM-DD, time is HH:MM (24 h).";
        assert!(escapes("date", &plain, book, "on December 20, 2026"));
        assert!(!escapes("date", &plain, book, "on 2026-12-20."));
        assert!(!escapes("time", &plain, book, "at 19:30."));
        assert!(!escapes("restaurant", &plain, book, "at Luigi's"));
        let remind =
            "Set a reminder with a text on a date (YYYY-MM-DD), optionally at a time (HH:MM).";
        assert!(!escapes("text", &plain, remind, "buy milk"));
        assert!(escapes("date", &plain, remind, "tomorrow"));
        let calc = "Evaluate an arithmetic expression such as '(3 + 4) * 12' or 'sqrt(81)'.";
        assert!(escapes("expression", &plain, calc, "square root of 81"));
        assert!(!escapes("expression", &plain, calc, "Compute sqrt(144)"));
        let tags =
            "Add one or more tags (a list of words) to an item such as a note, photo or file.";
        assert!(!escapes("item", &plain, tags, "Tag the photo beach.jpg"));
    }
}
