//! Tool arguments against the tool's JSON Schema (the MCP `inputSchema`).
//!
//! [`ArgumentValidator::check`] first repairs what small models commonly get wrong in a lossless
//! way (arguments as a JSON string, `"5"` where an integer is expected, `3` where a string is
//! expected, ...), records every such [`Coercion`], then validates with the `jsonschema` crate and
//! reports *all* errors in words a small model can act on ([`InvalidArguments`] is handed back to
//! the model as the tool's answer).
//!
//! Schemas are draft 2020-12 unless they name another draft in `$schema`. Remote `$ref`s are never
//! fetched (the crate is built without HTTP/file retrieval and the validator is offline). Inputs come
//! from servers and from the model: nothing here may panic, whatever they send.
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde_json::{Map, Number, Value};

/// Caps the schema walk: value nesting, `$ref`/`allOf` expansion per node, and messages.
const MAX_DEPTH: usize = 64;
const MAX_VIEWS: usize = 32;
const MAX_ERRORS: usize = 8;
const MAX_MESSAGE: usize = 300;
const MAX_SHOWN_VALUE: usize = 60;
const HINT: &str = "Fix the arguments and call the tool again.";

/// Compiled validators per tool, recompiled when the tool's schema changes.
#[derive(Debug, Default)]
pub struct ArgumentValidator {
    cache: HashMap<String, Compiled>,
}

#[derive(Debug)]
struct Compiled {
    /// The schema this entry was compiled from (compared on every call: servers may change a
    /// tool's schema on `tools/list_changed`).
    schema: Value,
    /// `None`: the server's schema is broken (see [`ArgumentValidator::check`]).
    validator: Option<Arc<jsonschema::Validator>>,
}

/// One lossless repair of the model's arguments (recorded in the transcript).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Coercion {
    /// JSON pointer into the arguments ("" is the arguments themselves).
    pub path: String,
    pub from: Value,
    pub to: Value,
}

/// The arguments do not match the tool's schema, with every problem found.
#[derive(Debug, Clone)]
pub struct InvalidArguments {
    pub tool: String,
    pub errors: Vec<String>,
}

impl fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid arguments for `{}`: {}. {HINT}",
            self.tool,
            self.errors.join("; ")
        )
    }
}

impl std::error::Error for InvalidArguments {}

impl ArgumentValidator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether this tool's current schema was found broken (its arguments are not validated).
    pub fn skips(&self, tool: &str) -> bool {
        self.cache
            .get(tool)
            .is_some_and(|entry| entry.validator.is_none())
    }

    /// Forgets every compiled schema.
    pub fn clear(&mut self) {
        self.cache.clear();
    }

    /// Validates `args` (a tool call's arguments as the model wrote them) against the MCP tool's
    /// `inputSchema`. Applies safe coercions in place first and returns them; on failure returns
    /// every error.
    ///
    /// A schema that is itself invalid (or uses a draft or remote `$ref` we cannot honour) is not
    /// the model's fault and the model cannot fix it: rejecting the call would make the tool
    /// unusable and send the model round in circles. So such a tool is not validated here (a
    /// warning names it, once per schema) and its arguments go to the server untouched apart from
    /// the top-level repairs (null or a JSON string becomes an object): the server judges them.
    pub fn check(
        &mut self,
        tool: &str,
        schema: &Value,
        args: &mut Value,
    ) -> Result<Vec<Coercion>, InvalidArguments> {
        let mut coercions = Vec::new();
        normalize_root(args, &mut coercions);
        let Some(validator) = self.validator_for(tool, schema) else {
            return Ok(coercions);
        };
        Walker {
            root: schema,
            out: &mut coercions,
        }
        .walk(&[schema], args, "", 0);

        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut errors = Vec::new();
            let mut total = 0usize;
            let mut listed = Vec::new();
            for err in validator.iter_errors(args) {
                total += 1;
                if errors.len() < MAX_ERRORS {
                    let msg = describe_error(&err, schema, args, &mut listed);
                    if !errors.contains(&msg) {
                        errors.push(msg);
                    }
                }
            }
            (errors, total)
        }));
        let (mut errors, total) = match outcome {
            Ok(found) => found,
            Err(_) => {
                tracing::warn!(
                    tool,
                    "the JSON Schema validator failed on these arguments; not validating them"
                );
                return Ok(coercions);
            }
        };
        if errors.is_empty() {
            return Ok(coercions);
        }
        if total > MAX_ERRORS {
            errors.push(format!("and {} more errors", total - MAX_ERRORS));
        }
        Err(InvalidArguments {
            tool: tool.to_string(),
            errors,
        })
    }

    /// The cached validator for this tool and schema, compiling it when new or changed.
    fn validator_for(&mut self, tool: &str, schema: &Value) -> Option<Arc<jsonschema::Validator>> {
        if let Some(entry) = self.cache.get(tool)
            && entry.schema == *schema
        {
            return entry.validator.clone();
        }
        let built = catch_unwind(AssertUnwindSafe(|| {
            jsonschema::options().offline().build(schema)
        }));
        let validator = match built {
            Ok(Ok(v)) => Some(Arc::new(v)),
            Ok(Err(err)) => {
                let reason = truncate(&err.to_string(), MAX_MESSAGE);
                tracing::warn!(
                    target: rkmcp_term_safe::NOTICE_TARGET,
                    "the server's input schema for `{tool}` is not a valid JSON Schema ({reason}); \
                     its arguments are not validated (the server will judge them)"
                );
                None
            }
            Err(_) => {
                tracing::warn!(
                    target: rkmcp_term_safe::NOTICE_TARGET,
                    "compiling the server's input schema for `{tool}` failed; \
                     its arguments are not validated (the server will judge them)"
                );
                None
            }
        };
        self.cache.insert(
            tool.to_string(),
            Compiled {
                schema: schema.clone(),
                validator: validator.clone(),
            },
        );
        validator
    }
}

/// `null` becomes `{}`; a string holding a JSON object (or nothing) becomes that object.
fn normalize_root(args: &mut Value, out: &mut Vec<Coercion>) {
    match args {
        Value::Null => *args = Value::Object(Map::new()),
        Value::String(s) => {
            let trimmed = s.trim();
            let parsed = if trimmed.is_empty() {
                Some(Value::Object(Map::new()))
            } else {
                serde_json::from_str::<Value>(trimmed)
                    .ok()
                    .filter(Value::is_object)
            };
            if let Some(object) = parsed {
                let from = std::mem::replace(args, object.clone());
                out.push(Coercion {
                    path: String::new(),
                    from,
                    to: object,
                });
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// The schema walk used for coercions and for describing errors.
//
// A "view" is a schema object that applies to a value; the views of a schema are itself, what its
// `$ref` (to `#` or `#/...` in the same document) points to and its `allOf` members, recursively.
// `anyOf`/`oneOf` are followed only when exactly one branch admits the value's type.

/// JSON types a schema allows: `None` when it does not say (or it is ambiguous to work out).
type Types = Option<Vec<&'static str>>;

const TYPE_NAMES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];

fn views_of<'s>(root: &'s Value, nodes: &[&'s Value]) -> Vec<&'s Value> {
    let mut out = Vec::new();
    let mut budget = MAX_VIEWS;
    for node in nodes {
        collect_views(root, node, &mut out, &mut budget);
    }
    out
}

fn collect_views<'s>(
    root: &'s Value,
    node: &'s Value,
    out: &mut Vec<&'s Value>,
    budget: &mut usize,
) {
    let Value::Object(map) = node else { return };
    if *budget == 0 || out.iter().any(|seen| std::ptr::eq(*seen, node)) {
        return;
    }
    *budget -= 1;
    out.push(node);
    if let Some(Value::String(reference)) = map.get("$ref")
        && let Some(target) = resolve_local_ref(root, reference)
    {
        collect_views(root, target, out, budget);
    }
    if let Some(Value::Array(all)) = map.get("allOf") {
        for member in all {
            collect_views(root, member, out, budget);
        }
    }
}

/// `#` and `#/json/pointer` (what `$defs`/`definitions` references look like); nothing else.
fn resolve_local_ref<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    if !fragment.starts_with('/') {
        return None;
    }
    root.pointer(fragment)
        .or_else(|| root.pointer(&percent_decode(fragment)?))
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return None;
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn declared_type(view: &Value) -> Types {
    match view.get("type")? {
        Value::String(t) => Some(vec![type_name(t)?]),
        Value::Array(ts) => {
            let mut out = Vec::new();
            for t in ts {
                out.push(type_name(t.as_str()?)?);
            }
            Some(out)
        }
        _ => None,
    }
}

fn type_name(t: &str) -> Option<&'static str> {
    TYPE_NAMES.iter().copied().find(|n| *n == t)
}

fn intersect(acc: Types, next: Vec<&'static str>) -> Types {
    let Some(acc) = acc else { return Some(next) };
    let mut out = Vec::new();
    for t in &acc {
        for n in &next {
            let common = match (*t, *n) {
                (a, b) if a == b => Some(a),
                ("number", "integer") | ("integer", "number") => Some("integer"),
                _ => None,
            };
            if let Some(c) = common
                && !out.contains(&c)
            {
                out.push(c);
            }
        }
    }
    Some(out)
}

/// The types the views allow together (`type` keywords, else the union over `anyOf`/`oneOf`).
fn allowed_types(root: &Value, views: &[&Value], depth: usize) -> Types {
    let mut acc: Types = None;
    for view in views {
        if let Some(t) = declared_type(view) {
            acc = intersect(acc, t);
        }
    }
    // Nested `anyOf`s (possibly through `$ref` cycles) are looked into only a little way.
    if acc.is_some() || depth > 2 {
        return acc;
    }
    for view in views {
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = view.get(key) else {
                continue;
            };
            let mut union: Vec<&'static str> = Vec::new();
            let mut known = !branches.is_empty();
            for branch in branches {
                match allowed_types(root, &views_of(root, &[branch]), depth + 1) {
                    Some(ts) => {
                        for t in ts {
                            if !union.contains(&t) {
                                union.push(t);
                            }
                        }
                    }
                    None => known = false,
                }
            }
            if known {
                acc = intersect(acc, union);
            }
        }
    }
    acc
}

fn admits(types: &[&str], value: &Value) -> bool {
    types.iter().any(|t| has_type(value, t))
}

fn has_type(value: &Value, t: &str) -> bool {
    match (t, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// Adds the one `anyOf`/`oneOf` branch that admits the value's type, where exactly one does.
fn expand_branches<'s>(root: &'s Value, views: Vec<&'s Value>, value: &Value) -> Vec<&'s Value> {
    let mut out = views.clone();
    for view in &views {
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = view.get(key) else {
                continue;
            };
            let mut matching = branches.iter().filter(|branch| {
                match allowed_types(root, &views_of(root, &[*branch]), 0) {
                    Some(ts) => admits(&ts, value),
                    None => true,
                }
            });
            if let (Some(only), None) = (matching.next(), matching.next()) {
                for v in views_of(root, &[only]) {
                    if !out.iter().any(|seen| std::ptr::eq(*seen, v)) && out.len() < MAX_VIEWS * 2 {
                        out.push(v);
                    }
                }
            }
        }
    }
    out
}

fn property_schemas<'s>(views: &[&'s Value], key: &str) -> Vec<&'s Value> {
    let mut out = Vec::new();
    for view in views {
        match view.get("properties").and_then(|p| p.get(key)) {
            Some(schema) => out.push(schema),
            None => {
                if let Some(extra @ Value::Object(_)) = view.get("additionalProperties") {
                    out.push(extra);
                }
            }
        }
    }
    out
}

fn item_schemas<'s>(views: &[&'s Value], index: usize) -> Vec<&'s Value> {
    let mut out = Vec::new();
    for view in views {
        let prefix = match (view.get("prefixItems"), view.get("items")) {
            (Some(Value::Array(prefix)), _) | (None, Some(Value::Array(prefix))) => Some(prefix),
            _ => None,
        };
        if let Some(prefix) = prefix {
            if let Some(schema) = prefix.get(index) {
                out.push(schema);
                continue;
            }
            // Past the tuple: 2020-12 `items`, or older drafts' `additionalItems`.
            let rest = if view.get("prefixItems").is_some() {
                view.get("items")
            } else {
                view.get("additionalItems")
            };
            if let Some(schema @ Value::Object(_)) = rest {
                out.push(schema);
            }
        } else if let Some(schema @ Value::Object(_)) = view.get("items") {
            out.push(schema);
        }
    }
    out
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

struct Walker<'s, 'o> {
    root: &'s Value,
    out: &'o mut Vec<Coercion>,
}

impl<'s> Walker<'s, '_> {
    fn walk(&mut self, nodes: &[&'s Value], value: &mut Value, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let views = views_of(self.root, nodes);
        if views.is_empty() {
            return;
        }
        if let Some(types) = allowed_types(self.root, &views, 0) {
            self.coerce(&views, &types, value, path);
        }
        let views = expand_branches(self.root, views, value);
        match value {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    let schemas = property_schemas(&views, key);
                    if !schemas.is_empty() {
                        let child_path = format!("{path}/{}", escape_pointer(key));
                        self.walk(&schemas, child, &child_path, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    let schemas = item_schemas(&views, index);
                    if !schemas.is_empty() {
                        self.walk(&schemas, item, &format!("{path}/{index}"), depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// Replaces `value` when its type is not allowed and exactly one lossless conversion to an
    /// allowed type exists (or it is an integer-valued float where only integers are allowed).
    fn coerce(
        &mut self,
        views: &[&'s Value],
        types: &[&'static str],
        value: &mut Value,
        path: &str,
    ) {
        let replacement = if admits(types, value) {
            integral_float(types, value)
        } else {
            let mut candidates: Vec<Value> = Vec::new();
            for t in types {
                let converted = match *t {
                    "array" => to_array(self.root, views, value),
                    other => convert(value, other),
                };
                if let Some(c) = converted
                    && !candidates.contains(&c)
                {
                    candidates.push(c);
                }
            }
            match (candidates.pop(), candidates.is_empty()) {
                (Some(only), true) => Some(only),
                _ => None,
            }
        };
        if let Some(to) = replacement {
            let from = std::mem::replace(value, to.clone());
            self.out.push(Coercion {
                path: path.to_string(),
                from,
                to,
            });
        }
    }
}

/// 5.0 → 5 where the schema says integer (and not number): some servers deserialize strictly.
fn integral_float(types: &[&str], value: &Value) -> Option<Value> {
    if !types.contains(&"integer") || types.contains(&"number") {
        return None;
    }
    let Value::Number(n) = value else { return None };
    if n.is_i64() || n.is_u64() {
        return None;
    }
    float_to_integer(n.as_f64()?)
}

fn float_to_integer(f: f64) -> Option<Value> {
    // Exact for every f64 in the i64 range with no fraction.
    if f.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f)
    {
        Some(Value::Number(Number::from(f as i64)))
    } else {
        None
    }
}

/// A lossless conversion of a scalar to `target`, if there is one.
fn convert(value: &Value, target: &str) -> Option<Value> {
    match (value, target) {
        (Value::String(s), "integer") => parse_integer(s.trim()),
        (Value::String(s), "number") => parse_number(s.trim()),
        (Value::String(s), "boolean") => {
            let s = s.trim();
            if s.eq_ignore_ascii_case("true") {
                Some(Value::Bool(true))
            } else if s.eq_ignore_ascii_case("false") {
                Some(Value::Bool(false))
            } else {
                None
            }
        }
        (Value::String(s), "object") => {
            let s = s.trim();
            if s.starts_with('{') {
                serde_json::from_str::<Value>(s)
                    .ok()
                    .filter(Value::is_object)
            } else {
                None
            }
        }
        (Value::Number(n), "string") => Some(Value::String(n.to_string())),
        (Value::Number(n), "integer") => float_to_integer(n.as_f64()?),
        _ => None,
    }
}

/// Digits with an optional sign and an optional all-zero fraction ("5", "-5", "5.0").
fn parse_integer(s: &str) -> Option<Value> {
    let whole = match s.split_once('.') {
        Some((whole, fraction)) if fraction.bytes().all(|b| b == b'0') => whole,
        Some(_) => return None,
        None => s,
    };
    let digits = whole.strip_prefix(['+', '-']).unwrap_or(whole);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Ok(i) = whole.parse::<i64>() {
        Some(Value::Number(Number::from(i)))
    } else {
        whole
            .parse::<u64>()
            .ok()
            .map(|u| Value::Number(Number::from(u)))
    }
}

/// A decimal number ("2.5", "-3", "1e3"); not "inf"/"NaN" and nothing that overflows.
fn parse_number(s: &str) -> Option<Value> {
    if let Some(integer) = parse_integer(s)
        && !s.contains('.')
    {
        return Some(integer);
    }
    let looks_numeric = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        && s.bytes().any(|b| b.is_ascii_digit());
    if !looks_numeric {
        return None;
    }
    let f = s.parse::<f64>().ok().filter(|f| f.is_finite())?;
    Number::from_f64(f).map(Value::Number)
}

/// A string holding a JSON array is parsed; any other single value becomes a one-element array
/// when the item schema plainly admits it (or after one scalar coercion of its own).
fn to_array(root: &Value, views: &[&Value], value: &Value) -> Option<Value> {
    if let Value::String(s) = value {
        let s = s.trim();
        if s.starts_with('[') {
            return serde_json::from_str::<Value>(s)
                .ok()
                .filter(Value::is_array);
        }
    }
    if matches!(value, Value::Null | Value::Array(_)) {
        return None;
    }
    let item_views = views_of(root, &item_schemas(views, 0));
    if item_views.is_empty() {
        return Some(Value::Array(vec![value.clone()]));
    }
    let types = allowed_types(root, &item_views, 0)?;
    if admits(&types, value) {
        return Some(Value::Array(vec![value.clone()]));
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Error messages for the model.

/// The views that apply at `pointer` inside `args`, following the same rules as the coercions.
fn views_at<'s>(root: &'s Value, args: &Value, pointer: &str) -> Vec<&'s Value> {
    let mut views = views_of(root, &[root]);
    let mut value = args;
    for segment in pointer_segments(pointer).into_iter().take(MAX_DEPTH) {
        views = expand_branches(root, views, value);
        let (schemas, next) = match value {
            Value::Object(map) => (property_schemas(&views, &segment), map.get(&segment)),
            Value::Array(items) => match segment.parse::<usize>() {
                Ok(i) => (item_schemas(&views, i), items.get(i)),
                Err(_) => return Vec::new(),
            },
            _ => return Vec::new(),
        };
        let Some(next) = next else { return Vec::new() };
        views = views_of(root, &schemas);
        value = next;
    }
    expand_branches(root, views, value)
}

fn pointer_segments(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// `a.b[0]` for `/a/b/0`; empty for the root.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer_segments(pointer) {
        if !out.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) && !segment.is_empty() {
            out.push('[');
            out.push_str(&segment);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

/// "`a` (at /a)" for a value inside the arguments, "the arguments" for the root.
fn location(pointer: &str) -> String {
    if pointer.is_empty() {
        "the arguments".to_string()
    } else {
        format!("`{}` (at {pointer})", dotted(pointer))
    }
}

/// One error in words; `listed` holds the objects whose expected properties were already listed
/// (once is enough).
fn describe_error(
    err: &jsonschema::ValidationError<'_>,
    schema: &Value,
    args: &Value,
    listed: &mut Vec<String>,
) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;
    let pointer = err.instance_path().as_str();
    let message = match err.kind() {
        Kind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            let place = if pointer.is_empty() {
                String::new()
            } else {
                format!(" in {}", location(pointer))
            };
            format!(
                "missing required property `{name}`{place}{}",
                expected_properties(schema, args, pointer, listed)
            )
        }
        Kind::AdditionalProperties { unexpected } | Kind::UnevaluatedProperties { unexpected } => {
            let views = views_at(schema, args, pointer);
            let known = known_properties(&views);
            let names: Vec<&str> = known.iter().map(|(n, _)| n.as_str()).collect();
            let list: Vec<String> = unexpected
                .iter()
                .map(|u| match rkmcp_config::nearest(u, &names) {
                    Some(n) => format!("`{u}` (did you mean `{n}`?)"),
                    None => format!("`{u}`"),
                })
                .collect();
            let place = if pointer.is_empty() {
                String::new()
            } else {
                format!(" in {}", location(pointer))
            };
            let noun = if unexpected.len() == 1 {
                "property"
            } else {
                "properties"
            };
            format!(
                "unknown {noun} {}{place} (not allowed){}",
                list.join(", "),
                expected_properties(schema, args, pointer, listed)
            )
        }
        Kind::AnyOf { .. } | Kind::OneOfNotValid { .. } => {
            let views = views_of(schema, &views_at(schema, args, pointer));
            let expected = match allowed_types(schema, &views, 0) {
                Some(types) if !types.is_empty() => format!(" (expected {})", types.join(" or ")),
                _ => String::new(),
            };
            format!(
                "{}: {} matches none of the allowed alternatives{expected}",
                location(pointer),
                short_value(err.instance())
            )
        }
        _ => format!(
            "{}: {}",
            location(pointer),
            err.masked_with(short_value(err.instance()))
        ),
    };
    truncate(&message, MAX_MESSAGE)
}

/// The properties an object schema names, required first: (name, "name (type, required)").
fn known_properties(views: &[&Value]) -> Vec<(String, String)> {
    let mut required: Vec<&str> = Vec::new();
    for view in views {
        if let Some(Value::Array(names)) = view.get("required") {
            required.extend(names.iter().filter_map(Value::as_str));
        }
    }
    let mut seen: Vec<(String, String, bool)> = Vec::new();
    for view in views {
        let Some(Value::Object(props)) = view.get("properties") else {
            continue;
        };
        for (name, prop) in props {
            if seen.iter().any(|(n, _, _)| n == name) {
                continue;
            }
            let is_required = required.contains(&name.as_str());
            let mut details: Vec<String> = Vec::new();
            // The root is unknown here: `$ref`s inside a property are not followed for the label.
            if let Some(types) = declared_type(prop) {
                details.push(types.join("|"));
            }
            if is_required {
                details.push("required".to_string());
            }
            let label = if details.is_empty() {
                name.clone()
            } else {
                format!("{name} ({})", details.join(", "))
            };
            seen.push((name.clone(), label, is_required));
        }
    }
    seen.sort_by_key(|(_, _, req)| !*req);
    seen.into_iter().map(|(n, l, _)| (n, l)).collect()
}

fn expected_properties(
    schema: &Value,
    args: &Value,
    pointer: &str,
    listed: &mut Vec<String>,
) -> String {
    if listed.iter().any(|p| p == pointer) {
        return String::new();
    }
    listed.push(pointer.to_string());
    let views = views_at(schema, args, pointer);
    let known = known_properties(&views);
    if known.is_empty() {
        return String::new();
    }
    let mut out = String::from(" - expected properties: ");
    for (i, (_, label)) in known.iter().enumerate() {
        if out.len() + label.len() > 220 {
            out.push_str(", ...");
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(label);
    }
    out
}

fn short_value(value: &Value) -> String {
    truncate(&value.to_string(), MAX_SHOWN_VALUE)
}

/// At most `max` bytes, cut at a char boundary, with "..." when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(3);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: &Value, args: Value) -> (Value, Result<Vec<Coercion>, InvalidArguments>) {
        let mut args = args;
        let result = ArgumentValidator::new().check("t", schema, &mut args);
        (args, result)
    }

    fn coercion(path: &str, from: Value, to: Value) -> Coercion {
        Coercion {
            path: path.to_string(),
            from,
            to,
        }
    }

    fn sum_schema() -> Value {
        json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        })
    }

    #[test]
    fn valid_arguments_pass_untouched() {
        let (args, result) = check(&sum_schema(), json!({"a": 2, "b": 3.5}));
        assert_eq!(result.unwrap(), vec![]);
        assert_eq!(args, json!({"a": 2, "b": 3.5}));
    }

    #[test]
    fn string_to_integer_number_and_boolean() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "padded": {"type": "integer"},
                "whole": {"type": "integer"},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean"},
                "off": {"type": "boolean"}
            }
        });
        let (args, result) = check(
            &schema,
            json!({"count": "5", "padded": " 5 ", "whole": "5.0", "ratio": "2.5",
                   "flag": "TRUE", "off": "false"}),
        );
        let coercions = result.unwrap();
        assert_eq!(
            args,
            json!({"count": 5, "padded": 5, "whole": 5, "ratio": 2.5, "flag": true, "off": false})
        );
        assert_eq!(coercions.len(), 6);
        assert!(coercions.contains(&coercion("/count", json!("5"), json!(5))));
        assert!(coercions.contains(&coercion("/ratio", json!("2.5"), json!(2.5))));
        assert!(coercions.contains(&coercion("/flag", json!("TRUE"), json!(true))));
    }

    #[test]
    fn number_to_string_and_integral_float_to_integer() {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}
        });
        let (args, result) = check(&schema, json!({"name": 3, "n": 5.0}));
        let coercions = result.unwrap();
        assert_eq!(args, json!({"name": "3", "n": 5}));
        assert!(args["n"].is_i64());
        assert_eq!(coercions.len(), 2);
        assert!(coercions.contains(&coercion("/n", json!(5.0), json!(5))));
        assert!(coercions.contains(&coercion("/name", json!(3), json!("3"))));
    }

    #[test]
    fn fractional_string_is_not_an_integer() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let (args, result) = check(&schema, json!({"n": "5.5"}));
        let err = result.unwrap_err();
        assert_eq!(args, json!({"n": "5.5"}));
        assert!(err.errors[0].contains("`n` (at /n)"), "{err}");
    }

    #[test]
    fn non_numeric_string_stays_an_error_naming_the_path() {
        let (args, result) = check(&sum_schema(), json!({"a": "two", "b": "3"}));
        let err = result.unwrap_err();
        assert_eq!(args, json!({"a": "two", "b": 3}));
        assert_eq!(err.errors.len(), 1, "{err}");
        assert_eq!(
            err.errors[0],
            r#"`a` (at /a): "two" is not of type "number""#
        );
        let text = err.to_string();
        assert!(text.starts_with("invalid arguments for `t`: "), "{text}");
        assert!(
            text.ends_with("Fix the arguments and call the tool again."),
            "{text}"
        );
    }

    #[test]
    fn nested_properties_and_array_items_are_coerced() {
        let schema = json!({
            "type": "object",
            "properties": {
                "filter": {
                    "type": "object",
                    "properties": {"limit": {"type": "integer"}}
                },
                "ids": {"type": "array", "items": {"type": "integer"}}
            }
        });
        let (args, result) = check(
            &schema,
            json!({"filter": {"limit": "10"}, "ids": ["1", 2, "3"]}),
        );
        let coercions = result.unwrap();
        assert_eq!(args, json!({"filter": {"limit": 10}, "ids": [1, 2, 3]}));
        assert!(coercions.contains(&coercion("/filter/limit", json!("10"), json!(10))));
        assert!(coercions.contains(&coercion("/ids/2", json!("3"), json!(3))));
    }

    #[test]
    fn single_value_becomes_an_array_and_json_strings_are_parsed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "nums": {"type": "array", "items": {"type": "integer"}},
                "opts": {"type": "object", "properties": {"x": {"type": "integer"}}}
            }
        });
        let (args, result) = check(
            &schema,
            json!({"tags": "urgent", "nums": "[1, \"2\"]", "opts": "{\"x\": \"4\"}"}),
        );
        let coercions = result.unwrap();
        assert_eq!(
            args,
            json!({"tags": ["urgent"], "nums": [1, 2], "opts": {"x": 4}})
        );
        assert!(coercions.contains(&coercion("/tags", json!("urgent"), json!(["urgent"]))));
        assert!(coercions.contains(&coercion("/nums/1", json!("2"), json!(2))));
        assert!(coercions.contains(&coercion("/opts/x", json!("4"), json!(4))));
    }

    #[test]
    fn ambiguous_types_are_not_coerced_unless_one_target_fits() {
        let schema = json!({
            "type": "object",
            "properties": {
                "either": {"type": ["string", "integer"]},
                "nullable": {"type": ["integer", "null"]},
                "any_of": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "two": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}
            }
        });
        let (args, result) = check(
            &schema,
            json!({"either": "5", "nullable": "7", "any_of": "8", "two": "1"}),
        );
        let coercions = result.unwrap();
        // "5" is already allowed; "7" and "8" have one target; "1" cannot be a boolean.
        assert_eq!(
            args,
            json!({"either": "5", "nullable": 7, "any_of": 8, "two": 1})
        );
        assert_eq!(coercions.len(), 3, "{coercions:?}");

        let schema =
            json!({"type": "object", "properties": {"v": {"type": ["integer", "boolean"]}}});
        let (args, result) = check(&schema, json!({"v": "true"}));
        assert_eq!(args, json!({"v": true}));
        assert_eq!(result.unwrap().len(), 1);
    }

    #[test]
    fn missing_required_lists_expected_properties() {
        let schema = json!({
            "type": "object",
            "properties": {
                "format": {"type": "string"},
                "timezone": {"type": "string"}
            },
            "required": ["timezone"]
        });
        let (_, result) = check(&schema, json!({"format": "iso"}));
        let err = result.unwrap_err();
        assert_eq!(err.errors.len(), 1);
        assert_eq!(
            err.errors[0],
            "missing required property `timezone` - expected properties: \
             timezone (string, required), format (string)"
        );
    }

    #[test]
    fn unknown_property_is_reported_with_a_suggestion() {
        let schema = json!({
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
            "additionalProperties": false
        });
        let (_, result) = check(&schema, json!({"timezone": "UTC", "timezon": "x"}));
        let err = result.unwrap_err();
        assert_eq!(err.errors.len(), 1, "{err}");
        assert!(
            err.errors[0].contains("unknown property `timezon`"),
            "{err}"
        );
        assert!(err.errors[0].contains("did you mean `timezone`?"), "{err}");
        assert!(
            err.errors[0].contains("timezone (string, required)"),
            "{err}"
        );

        // With `required` also failing, the expected properties are listed once.
        let (_, result) = check(&schema, json!({"tz": "x"}));
        let err = result.unwrap_err();
        assert_eq!(err.errors.len(), 2, "{err}");
        assert_eq!(
            err.to_string().matches("expected properties").count(),
            1,
            "{err}"
        );
    }

    #[test]
    fn all_errors_are_reported() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "string", "enum": ["x", "y"]}},
            "required": ["a", "b", "c"]
        });
        let (_, result) = check(&schema, json!({"a": "two", "b": "z"}));
        let err = result.unwrap_err();
        assert_eq!(err.errors.len(), 3, "{err}");
        assert!(err.errors.iter().any(|e| e.contains("`c`")), "{err}");
        assert!(
            err.errors.iter().any(|e| e.contains("`b` (at /b)")),
            "{err}"
        );
    }

    #[test]
    fn string_encoded_arguments_are_parsed() {
        let (args, result) = check(&sum_schema(), json!("{\"a\": 1, \"b\": \"2\"}"));
        let coercions = result.unwrap();
        assert_eq!(args, json!({"a": 1, "b": 2}));
        assert_eq!(
            coercions[0],
            coercion(
                "",
                json!("{\"a\": 1, \"b\": \"2\"}"),
                json!({"a": 1, "b": "2"})
            )
        );
        assert_eq!(coercions[1], coercion("/b", json!("2"), json!(2)));
    }

    #[test]
    fn null_arguments_become_an_empty_object() {
        let schema = json!({"type": "object", "properties": {}});
        let (args, result) = check(&schema, Value::Null);
        assert_eq!(result.unwrap(), vec![]);
        assert_eq!(args, json!({}));
        // ... which still has to satisfy `required`.
        let (_, result) = check(&sum_schema(), Value::Null);
        assert_eq!(result.unwrap_err().errors.len(), 2);
    }

    #[test]
    fn non_object_arguments_are_an_error() {
        let (_, result) = check(&sum_schema(), json!("not json"));
        let err = result.unwrap_err();
        assert!(err.errors[0].starts_with("the arguments: "), "{err}");
    }

    #[test]
    fn broken_schema_skips_validation_without_panicking() {
        for schema in [
            json!({"type": "text"}),
            json!({"type": "object", "properties": {"a": {"type": 5}}}),
            json!({"$ref": "https://example.com/remote.json"}),
            json!({"$ref": "#/$defs/missing"}),
            json!({"type": "object", "properties": {"a": {"pattern": "(unclosed"}}}),
            json!({"$schema": "https://example.com/custom-meta", "type": "object"}),
            json!(42),
        ] {
            let mut validator = ArgumentValidator::new();
            let mut args = json!({"a": "1"});
            let result = validator.check("t", &schema, &mut args);
            assert!(result.is_ok(), "{schema}: {result:?}");
            assert!(validator.skips("t"), "{schema}");
            assert_eq!(args, json!({"a": "1"}), "{schema}");
        }
        // Top-level repairs still happen.
        let mut validator = ArgumentValidator::new();
        let mut args = json!("{\"a\": 1}");
        let coercions = validator.check("t", &json!({"type": "text"}), &mut args);
        assert_eq!(args, json!({"a": 1}));
        assert_eq!(coercions.unwrap().len(), 1);
    }

    #[test]
    fn older_drafts_are_honoured() {
        // Draft 4: exclusiveMaximum is a boolean; 2020-12 would reject this schema.
        let schema = json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}}
        });
        let (_, result) = check(&schema, json!({"n": 10}));
        assert!(result.unwrap_err().errors[0].contains("`n` (at /n)"));
        let (_, result) = check(&schema, json!({"n": "9"}));
        assert_eq!(result.unwrap().len(), 1);
    }

    #[test]
    fn cache_notices_a_changed_schema() {
        let mut validator = ArgumentValidator::new();
        let strings = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let mut args = json!({"a": "x"});
        assert!(validator.check("t", &strings, &mut args).is_ok());
        let mut args = json!({"a": "x"});
        assert!(validator.check("t", &sum_schema(), &mut args).is_err());
        // And back, and another tool with its own schema.
        let mut args = json!({"a": "x"});
        assert!(validator.check("t", &strings, &mut args).is_ok());
        let mut args = json!({"a": "x"});
        assert!(validator.check("u", &sum_schema(), &mut args).is_err());
        assert_eq!(validator.cache.len(), 2);
    }

    #[test]
    fn refs_into_defs_and_definitions_are_followed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "point": {"$ref": "#/$defs/Point"},
                "size": {"$ref": "#/definitions/Size"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]}
            },
            "$defs": {
                "Point": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                    "required": ["x", "y"]
                }
            },
            "definitions": {"Size": {"type": "number"}}
        });
        let (args, result) = check(
            &schema,
            json!({"point": {"x": "1", "y": 2}, "size": "1.5", "maybe": {"x": 3, "y": "4"}}),
        );
        let coercions = result.unwrap();
        assert_eq!(
            args,
            json!({"point": {"x": 1, "y": 2}, "size": 1.5, "maybe": {"x": 3, "y": 4}})
        );
        assert_eq!(coercions.len(), 3, "{coercions:?}");

        let (_, result) = check(&schema, json!({"point": {"x": 1}}));
        let err = result.unwrap_err();
        assert!(
            err.errors[0].contains("missing required property `y` in `point`"),
            "{err}"
        );
        assert!(err.errors[0].contains("x (integer, required)"), "{err}");
    }

    #[test]
    fn recursive_refs_terminate() {
        let schema = json!({
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}
                },
                "loop": {"$ref": "#/$defs/loop"}
            },
            "type": "object",
            "properties": {"head": {"$ref": "#/$defs/node"}, "odd": {"$ref": "#/$defs/loop"}}
        });
        let mut args =
            json!({"head": {"v": "1", "next": {"v": "2", "next": {"v": 3}}}, "odd": "1"});
        let mut coercions = Vec::new();
        Walker {
            root: &schema,
            out: &mut coercions,
        }
        .walk(&[&schema], &mut args, "", 0);
        assert_eq!(args["head"]["next"]["v"], json!(2));
        assert_eq!(coercions.len(), 2, "{coercions:?}");
        // The whole check (the crate compiles the same schema) terminates too.
        let _ = check(&schema, args);
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "number"}}});
        let (_, result) = check(&schema, json!({"a": "é".repeat(500)}));
        let err = result.unwrap_err();
        assert!(err.errors[0].len() <= MAX_MESSAGE, "{err}");
    }

    #[test]
    fn validator_can_move_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ArgumentValidator>();
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(str::to_string),
                prop_oneof![
                    Just("type"),
                    Just("properties"),
                    Just("items"),
                    Just("required"),
                    Just("anyOf"),
                    Just("oneOf"),
                    Just("allOf"),
                    Just("$ref"),
                    Just("prefixItems"),
                    Just("additionalProperties"),
                    Just("$defs"),
                ]
                .prop_map(str::to_string),
                "[a-z]{1,3}",
            ]
        }

        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|i| json!(i)),
                any::<f64>().prop_map(|f| json!(f)),
                "[a-z0-9 .{}\\[\\]\":,-]{0,12}".prop_map(Value::String),
                prop_oneof![
                    Just("5"),
                    Just("5.0"),
                    Just("true"),
                    Just("{\"a\":1}"),
                    Just("[1]"),
                    Just("integer"),
                    Just("string"),
                    Just("object"),
                    Just("#"),
                    Just("#/$defs/a"),
                ]
                .prop_map(|s| Value::String(s.to_string())),
            ];
            leaf.prop_recursive(4, 32, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                    prop::collection::vec((key(), inner), 0..5)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
        }

        fn schemas() -> Vec<Value> {
            vec![
                sum_schema(),
                json!({
                    "type": "object",
                    "properties": {
                        "a": {"type": ["integer", "null"]},
                        "b": {"type": "array", "items": {"type": "boolean"}},
                        "c": {"anyOf": [{"$ref": "#/$defs/o"}, {"type": "string"}]}
                    },
                    "$defs": {"o": {"type": "object", "properties": {"a": {"$ref": "#"}}}},
                    "additionalProperties": false
                }),
                json!({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}),
                json!({"allOf": [{"$ref": "#/$defs/x"}], "$defs": {"x": {"$ref": "#/$defs/x"}}}),
                json!({"type": "bogus"}),
            ]
        }

        proptest! {
            #[test]
            fn random_arguments_never_panic(args in json_value(), pick in 0usize..5) {
                let schemas = schemas();
                let schema = &schemas[pick % schemas.len()];
                let mut validator = ArgumentValidator::new();
                let mut args = args;
                let first = validator.check("t", schema, &mut args);
                // Coercions are idempotent: a second pass changes nothing more.
                if first.is_ok() {
                    let again = validator.check("t", schema, &mut args);
                    prop_assert_eq!(again.map(|c| c.len()).unwrap_or(0), 0);
                }
            }

            #[test]
            fn random_schemas_never_panic(schema in json_value(), args in json_value()) {
                let mut args = args;
                let _ = ArgumentValidator::new().check("t", &schema, &mut args);
            }
        }
    }
}
