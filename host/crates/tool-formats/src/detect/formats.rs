//! Per-format block definitions and body parsers.

use serde_json::{Map, Value};

use super::marker::{Block, End};
use super::whole::{Verdict, WholeSpec};
use crate::parse::{Parsed, Py, calls_from_json_value, coerce_value, looks_like_call, xml_attr};
use crate::scan::{find_first, json_value_end, py_value_end};

// ---------------------------------------------------------------------------------------------
// JSON bodies (tool-call-json, hermes)

/// One or more JSON call values (objects or arrays), optionally inside a ```json fence.
fn json_calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let text = strip_fence(inner);
    if text.is_empty() {
        return vec![Parsed::bad(raw, "empty call block")];
    }
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        match stream.next() {
            None => break,
            Some(Ok(v)) => out.extend(calls_from_json_value(raw, &v)),
            Some(Err(e)) => {
                let msg = if terminated {
                    format!("invalid JSON: {e}")
                } else {
                    format!("unterminated call block: {e}")
                };
                return vec![Parsed::bad(raw, msg)];
            }
        }
    }
    // A block cut off by the end of the response is accepted only if its JSON is complete.
    out
}

fn strip_fence(s: &str) -> &str {
    let t = s.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// End of a block whose body should be JSON: the end marker, or (when the model forgets it and
/// goes on writing) right after the JSON value once the next non-space text cannot be the marker.
/// A marker that appears before the JSON closes wins, so the decision depends only on the text
/// seen so far, whatever the chunking.
fn json_or_marker_end(body: &str, markers: &[&str]) -> Option<(usize, usize)> {
    let marker = find_first(body, markers).map(|(p, i)| (p, p + markers[i].len()));
    let ws = lead_ws(body);
    if !body[ws..].starts_with(['{', '[']) {
        return marker;
    }
    let Some(e) = json_value_end(&body[ws..]).map(|e| ws + e) else {
        return marker;
    };
    if let Some((p, _)) = marker
        && p < e
    {
        return marker;
    }
    let after = &body[e..];
    let rest = after.trim_start();
    let gap = after.len() - rest.len();
    if rest.is_empty() {
        return None;
    }
    if let Some(m) = markers.iter().find(|m| rest.starts_with(**m)) {
        return Some((e, e + gap + m.len()));
    }
    if markers.iter().any(|m| m.starts_with(rest)) {
        return None;
    }
    Some((e, e))
}

fn tool_call_json_end(body: &str) -> Option<(usize, usize)> {
    json_or_marker_end(body, &["[END_TOOL_CALL]", "[/TOOL_CALL]"])
}

pub(crate) static TOOL_CALL_JSON: &[Block] = &[Block {
    start: "[TOOL_CALL]",
    end: End::Finder {
        find: tool_call_json_end,
        closers: "",
    },
    parse: json_calls,
}];

fn hermes_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    // Qwen3 models trained on both styles sometimes put Qwen3-Coder tags inside a Hermes block.
    if inner.trim_start().starts_with("<function=") {
        return qwen_functions(raw, inner, terminated);
    }
    json_calls(raw, inner, terminated)
}

fn hermes_end(body: &str) -> Option<(usize, usize)> {
    json_or_marker_end(body, &["</tool_call>"])
}

pub(crate) static HERMES: &[Block] = &[
    Block {
        start: "<tool_call>",
        end: End::Finder {
            find: hermes_end,
            closers: "",
        },
        parse: hermes_body,
    },
    FUNCTION_TAGS[0],
    FUNCTION_TAGS[1],
];

// ---------------------------------------------------------------------------------------------
// tool-call-xml: <tool_call name="f"><argument name="a">v</argument></tool_call>

/// End of an XML call: a self-closing opening tag, or `</tool_call>`.
fn xml_end(body: &str) -> Option<(usize, usize)> {
    let gt = body.find('>')?;
    if body[..gt].ends_with('/') {
        return Some((gt + 1, gt + 1));
    }
    const END: &str = "</tool_call>";
    let p = body[gt..].find(END)? + gt;
    Some((p, p + END.len()))
}

fn xml_call(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let Some(gt) = inner.find('>') else {
        return vec![Parsed::bad(raw, "unterminated <tool_call> tag")];
    };
    let attrs = inner[..gt].trim_end_matches('/');
    let body = &inner[gt + 1..];
    let Some(name) = xml_attr(attrs, "name").filter(|n| !n.trim().is_empty()) else {
        if body.trim_start().starts_with('{') {
            return json_calls(raw, body, terminated);
        }
        return vec![Parsed::bad(raw, "<tool_call> has no name=\"…\" attribute")];
    };
    if !terminated && !inner[..gt].ends_with('/') {
        return vec![Parsed::bad(raw, "missing </tool_call>")];
    }
    // Models that mix formats put a JSON object of arguments inside the element.
    if body.trim_start().starts_with('{') {
        return match serde_json::from_str::<Value>(body.trim()) {
            Ok(v @ Value::Object(_)) => vec![Parsed::Call {
                name: name.trim().to_string(),
                arguments: v,
                id: None,
            }],
            Ok(v) => vec![Parsed::bad(
                raw,
                format!(
                    "arguments must be a JSON object, got {}",
                    crate::parse::kind(&v)
                ),
            )],
            Err(e) => vec![Parsed::bad(raw, format!("invalid JSON arguments: {e}"))],
        };
    }
    match tag_args(body, "<argument", "</argument>", |open| {
        xml_attr(open, "name")
    }) {
        Ok(arguments) => vec![Parsed::Call {
            name: name.trim().to_string(),
            arguments,
            id: None,
        }],
        Err(e) => vec![Parsed::bad(raw, e)],
    }
}

/// Parses a run of `<tag …>value</tag>` elements separated by whitespace; `key` extracts the
/// argument name from the text between `open` and `>`.
fn tag_args(
    body: &str,
    open: &str,
    close: &str,
    key: impl Fn(&str) -> Option<String>,
) -> Result<Value, String> {
    let mut args = Map::new();
    let mut rest = body;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let Some(after_open) = t.strip_prefix(open) else {
            let near: String = t.chars().take(30).collect();
            return Err(format!(
                "unexpected text `{near}` where {open}…> was expected"
            ));
        };
        let gt = after_open
            .find('>')
            .ok_or_else(|| format!("unterminated {open} tag"))?;
        let k = key(&after_open[..gt])
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| format!("{open} tag without a name"))?;
        let value_and_rest = &after_open[gt + 1..];
        let end = value_and_rest
            .find(close)
            .ok_or_else(|| format!("missing {close} for `{k}`"))?;
        args.insert(k.trim().to_string(), coerce_value(&value_and_rest[..end]));
        rest = &value_and_rest[end + close.len()..];
    }
    Ok(Value::Object(args))
}

pub(crate) static TOOL_CALL_XML: &[Block] = &[
    Block {
        start: "<tool_call ",
        end: End::Finder {
            find: xml_end,
            closers: ">",
        },
        parse: xml_call,
    },
    Block {
        start: "<tool_call\n",
        end: End::Finder {
            find: xml_end,
            closers: ">",
        },
        parse: xml_call,
    },
    Block {
        start: "<tool_call>",
        end: End::Markers(&["</tool_call>"]),
        parse: xml_no_attr,
    },
];

fn xml_no_attr(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    // `<tool_call>` without attributes: only a JSON body makes sense.
    if inner.trim_start().starts_with('{') {
        return json_calls(raw, inner, terminated);
    }
    vec![Parsed::bad(raw, "<tool_call> has no name=\"…\" attribute")]
}

// ---------------------------------------------------------------------------------------------
// qwen3-coder: <tool_call><function=f><parameter=a>v</parameter></function></tool_call>

fn qwen_functions(raw: &str, inner: &str, _terminated: bool) -> Vec<Parsed> {
    let t = inner.trim();
    if t.starts_with('{') {
        return json_calls(raw, inner, true);
    }
    let mut out = Vec::new();
    let mut rest = t;
    while !rest.trim().is_empty() {
        let r = rest.trim_start();
        let Some(after) = r.strip_prefix("<function=") else {
            let near: String = r.chars().take(30).collect();
            out.push(Parsed::bad(
                raw,
                format!("unexpected text `{near}` where <function=…> was expected"),
            ));
            return out;
        };
        let Some(end) = after.find("</function>") else {
            out.push(Parsed::bad(raw, "missing </function>"));
            return out;
        };
        out.push(qwen_one(raw, &after[..end]));
        rest = &after[end + "</function>".len()..];
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "empty call block"));
    }
    out
}

/// `name>` followed by parameters (the text after `<function=` up to `</function>`).
fn qwen_one(raw: &str, s: &str) -> Parsed {
    let Some(gt) = s.find('>') else {
        return Parsed::bad(raw, "unterminated <function=…> tag");
    };
    let name = s[..gt].trim();
    if name.is_empty() {
        return Parsed::bad(raw, "<function=> without a name");
    }
    let params = &s[gt + 1..];
    // Llama 3.x custom-tool prompts teach `<function=name>{"arg": …}</function>`.
    if params.trim_start().starts_with('{') {
        return match serde_json::from_str::<Value>(params.trim()) {
            Ok(v @ Value::Object(_)) => Parsed::Call {
                name: name.to_string(),
                arguments: v,
                id: None,
            },
            Ok(v) => Parsed::bad(
                raw,
                format!(
                    "arguments must be a JSON object, got {}",
                    crate::parse::kind(&v)
                ),
            ),
            Err(e) => Parsed::bad(raw, format!("invalid JSON arguments: {e}")),
        };
    }
    match tag_args(params, "<parameter=", "</parameter>", |open| {
        Some(open.to_string())
    }) {
        Ok(arguments) => Parsed::Call {
            name: name.to_string(),
            arguments,
            id: None,
        },
        Err(e) => Parsed::bad(raw, e),
    }
}

fn qwen_bare_function(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, "missing </function>")];
    }
    vec![qwen_one(raw, inner)]
}

/// `<function name="f">{…}</function>` (a Hermes-2-Pro variant); `inner` starts after `name=`.
fn function_name_attr(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, "missing </function>")];
    }
    let Some(gt) = inner.find('>') else {
        return vec![Parsed::bad(raw, "unterminated <function …> tag")];
    };
    let Some(name) = xml_attr(&format!("name={}", &inner[..gt]), "name") else {
        return vec![Parsed::bad(raw, "<function> has no name=\"…\" attribute")];
    };
    vec![qwen_one(raw, &format!("{name}>{}", &inner[gt + 1..]))]
}

/// Function-tag forms Hermes-style and Qwen models also emit without a `<tool_call>` wrapper.
const FUNCTION_TAGS: [Block; 2] = [
    Block {
        start: "<function=",
        end: End::Markers(&["</function>"]),
        parse: qwen_bare_function,
    },
    Block {
        start: "<function name=",
        end: End::Markers(&["</function>"]),
        parse: function_name_attr,
    },
];

pub(crate) static QWEN3_CODER: &[Block] = &[
    Block {
        start: "<tool_call>",
        end: End::Markers(&["</tool_call>"]),
        parse: qwen_functions,
    },
    FUNCTION_TAGS[0],
    FUNCTION_TAGS[1],
];

// ---------------------------------------------------------------------------------------------
// mistral: [TOOL_CALLS][{…}] or [TOOL_CALLS]name[ARGS]{…} or [TOOL_CALLS]name[CALL_ID]id[ARGS]{…}

fn lead_ws(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

fn mistral_end(body: &str) -> Option<(usize, usize)> {
    let ws = lead_ws(body);
    let t = &body[ws..];
    if t.starts_with('[') {
        let e = ws + json_value_end(t)?;
        return Some((e, e));
    }
    let p = t.find("[ARGS]")? + "[ARGS]".len();
    let ws2 = lead_ws(&t[p..]);
    let e = ws + p + ws2 + json_value_end(&t[p + ws2..])?;
    Some((e, e))
}

fn mistral_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let t = inner.trim();
    if t.starts_with('[') || t.starts_with('{') {
        return json_calls(raw, t, terminated);
    }
    let Some((head, args)) = t.split_once("[ARGS]") else {
        return vec![Parsed::bad(
            raw,
            "expected a JSON list or `name[ARGS]{…}` after [TOOL_CALLS]",
        )];
    };
    let (name, id) = match head.split_once("[CALL_ID]") {
        Some((n, id)) => (
            n.trim(),
            Some(id.trim().to_string()).filter(|s| !s.is_empty()),
        ),
        None => (head.trim(), None),
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return vec![Parsed::bad(
            raw,
            format!("invalid tool name `{name}` before [ARGS]"),
        )];
    }
    match serde_json::from_str::<Value>(args.trim()) {
        Ok(v @ Value::Object(_)) => vec![Parsed::Call {
            name: name.to_string(),
            arguments: v,
            id,
        }],
        Ok(v) => vec![Parsed::bad(
            raw,
            format!(
                "[ARGS] must be a JSON object, got {}",
                crate::parse::kind(&v)
            ),
        )],
        Err(e) => vec![Parsed::bad(raw, format!("invalid JSON after [ARGS]: {e}"))],
    }
}

pub(crate) static MISTRAL: &[Block] = &[Block {
    start: "[TOOL_CALLS]",
    end: End::Finder {
        find: mistral_end,
        closers: "}]",
    },
    parse: mistral_body,
}];

// ---------------------------------------------------------------------------------------------
// granite: <|tool_call|>[{…}]

fn json_value_after_ws(body: &str) -> Option<(usize, usize)> {
    let ws = lead_ws(body);
    let e = ws + json_value_end(&body[ws..])?;
    Some((e, e))
}

pub(crate) static GRANITE: &[Block] = &[Block {
    start: "<|tool_call|>",
    end: End::Finder {
        find: json_value_after_ws,
        closers: "}]",
    },
    parse: json_calls,
}];

// ---------------------------------------------------------------------------------------------
// gemma: ```tool_code\nget_weather(city="Paris")\n```

fn py_statements(raw: &str, inner: &str) -> Vec<Parsed> {
    let mut p = Py::new(inner);
    let mut out = Vec::new();
    loop {
        p.ws_and(";,");
        if p.at_end() {
            break;
        }
        match p.statement() {
            Ok(calls) => out.extend(calls.into_iter().map(|(name, arguments)| {
                Parsed::Call {
                    name: name
                        .strip_prefix("default_api.")
                        .unwrap_or(&name)
                        .to_string(),
                    arguments,
                    id: None,
                }
            })),
            Err(e) => return vec![Parsed::bad(raw, e)],
        }
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "empty tool_code block"));
    }
    out
}

fn gemma_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        return vec![Parsed::bad(raw, "unterminated ```tool_code block")];
    }
    py_statements(raw, inner)
}

pub(crate) static GEMMA: &[Block] = &[
    Block {
        start: "```tool_code",
        end: End::Markers(&["```"]),
        parse: gemma_body,
    },
    Block {
        start: "```tool_call",
        end: End::Markers(&["```"]),
        parse: gemma_body,
    },
];

// ---------------------------------------------------------------------------------------------
// deepseek R1/V3/V3.1

const DS_CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const DS_CALLS_END: &str = "<｜tool▁calls▁end｜>";
const DS_CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const DS_CALL_END: &str = "<｜tool▁call▁end｜>";
const DS_SEP: &str = "<｜tool▁sep｜>";

fn deepseek_calls(raw: &str, inner: &str, _terminated: bool) -> Vec<Parsed> {
    let mut out = Vec::new();
    let mut rest = inner;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let Some(after) = t.strip_prefix(DS_CALL_BEGIN) else {
            let near: String = t.chars().take(30).collect();
            out.push(Parsed::bad(
                raw,
                format!("unexpected text `{near}` where {DS_CALL_BEGIN} was expected"),
            ));
            break;
        };
        match after.find(DS_CALL_END) {
            Some(e) => {
                let seg = &t[..DS_CALL_BEGIN.len() + e + DS_CALL_END.len()];
                out.push(deepseek_one(seg, &after[..e]));
                rest = &after[e + DS_CALL_END.len()..];
            }
            None => {
                out.push(deepseek_one_unterminated(t, after));
                break;
            }
        }
    }
    if out.is_empty() {
        out.push(Parsed::bad(raw, "no calls between the tool-call markers"));
    }
    out
}

fn deepseek_one_unterminated(seg: &str, body: &str) -> Parsed {
    match deepseek_one(seg, body) {
        Parsed::Bad { raw, error } => Parsed::Bad {
            raw,
            error: format!("{error} (missing {DS_CALL_END})"),
        },
        ok => ok,
    }
}

fn deepseek_one(raw: &str, body: &str) -> Parsed {
    let Some((left, right)) = body.split_once(DS_SEP) else {
        return Parsed::bad(raw, format!("missing {DS_SEP}"));
    };
    let left = left.trim();
    // R1/V3 put the type before the separator and the name on the first line after it; V3.1 puts
    // the name before the separator.
    let (name, args) = if left == "function" || left.is_empty() {
        let right = right.trim_start();
        match right.split_once('\n') {
            Some((n, a)) => (n.trim(), a),
            None => match right.find(['{', '`']) {
                Some(p) => (right[..p].trim(), &right[p..]),
                None => (right.trim(), ""),
            },
        }
    } else {
        (left, right)
    };
    if name.is_empty() {
        return Parsed::bad(raw, "tool call without a name");
    }
    let args = strip_fence(args);
    if args.is_empty() {
        return Parsed::Call {
            name: name.to_string(),
            arguments: Value::Object(Map::new()),
            id: None,
        };
    }
    match serde_json::from_str::<Value>(args) {
        Ok(v @ Value::Object(_)) => Parsed::Call {
            name: name.to_string(),
            arguments: v,
            id: None,
        },
        Ok(v) => Parsed::bad(
            raw,
            format!(
                "arguments must be a JSON object, got {}",
                crate::parse::kind(&v)
            ),
        ),
        Err(e) => Parsed::bad(raw, format!("invalid JSON arguments: {e}")),
    }
}

fn deepseek_single(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if terminated {
        vec![deepseek_one(raw, inner)]
    } else {
        vec![deepseek_one_unterminated(raw, inner)]
    }
}

/// DeepSeek's call tokens are special tokens: never text, even out of place.
pub(crate) static DEEPSEEK_HIDDEN: &[&str] = &[DS_CALLS_END, DS_CALL_END, DS_SEP];

pub(crate) static DEEPSEEK: &[Block] = &[
    Block {
        start: DS_CALLS_BEGIN,
        end: End::Markers(&[DS_CALLS_END]),
        parse: deepseek_calls,
    },
    Block {
        start: DS_CALL_BEGIN,
        end: End::Markers(&[DS_CALL_END]),
        parse: deepseek_single,
    },
];

// ---------------------------------------------------------------------------------------------
// Whole-message formats

/// Could a message starting like `s` (first char `{` or `[`) be a JSON call?
fn json_prefix_verdict(s: &str) -> Verdict {
    let mut t = s;
    if let Some(r) = t.strip_prefix('[') {
        t = r.trim_start();
        if t.is_empty() {
            return Verdict::Maybe;
        }
        if t.starts_with(']') {
            return Verdict::Maybe;
        }
    }
    let Some(r) = t.strip_prefix('{') else {
        return Verdict::No;
    };
    let r = r.trim_start();
    if r.is_empty() {
        return Verdict::Maybe;
    }
    let Some(key) = r.strip_prefix('"') else {
        return Verdict::No;
    };
    for k in [
        "name\"",
        "function\"",
        "type\"",
        "tool_calls\"",
        "tool_call\"",
    ] {
        if key.starts_with(k) {
            return Verdict::Attempt;
        }
        if k.starts_with(key) {
            return Verdict::Maybe;
        }
    }
    Verdict::Maybe
}

fn json_whole(value: &str) -> Result<Vec<Parsed>, Option<String>> {
    let text = match open_fence(value) {
        Fence::Open { body_at } => {
            let t = value[body_at..].trim_end();
            t.strip_suffix("```").unwrap_or(t)
        }
        _ => value,
    };
    match serde_json::from_str::<Value>(text) {
        Ok(v) if looks_like_call(&v) => Ok(calls_from_json_value(value, &v)),
        Ok(_) => Err(None),
        Err(e) => Err(Some(format!("invalid JSON: {e}"))),
    }
}

/// Small models often wrap a whole-message JSON call in a ```json fence.
enum Fence {
    /// Not fenced.
    No,
    /// Could still become a JSON fence opening.
    Partial,
    /// A fence for another language: not a call.
    Other,
    /// A JSON (or unlabelled) fence; the JSON starts at `body_at`.
    Open { body_at: usize },
}

fn open_fence(s: &str) -> Fence {
    let Some(after) = s.strip_prefix("```") else {
        return if "```".starts_with(s) {
            Fence::Partial
        } else {
            Fence::No
        };
    };
    let lang_end = after.find(char::is_whitespace);
    let lang = &after[..lang_end.unwrap_or(after.len())];
    let lang_ok = lang.is_empty() || lang.eq_ignore_ascii_case("json");
    match lang_end {
        None if "json".starts_with(&lang.to_ascii_lowercase()) => Fence::Partial,
        Some(e) if lang_ok => Fence::Open {
            body_at: 3 + e + lead_ws(&after[e..]),
        },
        _ => Fence::Other,
    }
}

fn json_fenced_verdict(s: &str) -> Verdict {
    match open_fence(s) {
        Fence::No => json_prefix_verdict(s),
        Fence::Partial => Verdict::Maybe,
        Fence::Other => Verdict::No,
        Fence::Open { body_at } if body_at == s.len() => Verdict::Maybe,
        Fence::Open { body_at } => json_prefix_verdict(&s[body_at..]),
    }
}

/// End of a whole-message JSON value, including a closing fence when it was fenced.
fn json_fenced_end(s: &str, eof: bool) -> Option<usize> {
    match open_fence(s) {
        Fence::No => json_value_end(s),
        Fence::Partial | Fence::Other => None,
        Fence::Open { body_at } => {
            let e = body_at + json_value_end(&s[body_at..])?;
            let after = &s[e..];
            let rest = after.trim_start();
            if rest.starts_with("```") {
                Some(e + (after.len() - rest.len()) + 3)
            } else if "```".starts_with(rest) && !eof {
                None
            } else {
                Some(e)
            }
        }
    }
}

/// Inside `<|python_tag|>`: `;`-separated JSON calls, or Llama's built-in `tool.call(q="…")`.
fn llama_tag_body(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let t = inner.trim();
    if t.starts_with('{') || t.starts_with('[') {
        let mut out = Vec::new();
        let mut rest = t;
        loop {
            rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
            if rest.is_empty() {
                break;
            }
            let Some(e) = json_value_end(rest) else {
                let msg = if terminated {
                    "unbalanced JSON"
                } else {
                    "unterminated JSON call"
                };
                out.push(Parsed::bad(raw, msg));
                break;
            };
            match serde_json::from_str::<Value>(&rest[..e]) {
                Ok(v) => out.extend(calls_from_json_value(&rest[..e], &v)),
                Err(err) => out.push(Parsed::bad(&rest[..e], format!("invalid JSON: {err}"))),
            }
            rest = &rest[e..];
        }
        if out.is_empty() {
            out.push(Parsed::bad(raw, "empty call after <|python_tag|>"));
        }
        return out;
    }
    let calls = py_statements(raw, t);
    calls
        .into_iter()
        .map(|p| match p {
            Parsed::Call {
                name,
                arguments,
                id,
            } => Parsed::Call {
                name: name.strip_suffix(".call").unwrap_or(&name).to_string(),
                arguments,
                id,
            },
            bad => bad,
        })
        .collect()
}

pub(crate) static LLAMA3: WholeSpec = WholeSpec {
    triggers: &['{', '[', '`'],
    value_end: json_fenced_end,
    verdict: json_fenced_verdict,
    parse: json_whole,
    separators: ";",
    tags: &[Block {
        start: "<|python_tag|>",
        end: End::Markers(&["<|eom_id|>", "<|eot_id|>"]),
        parse: llama_tag_body,
    }],
};

pub(crate) static PLAIN_JSON: WholeSpec = WholeSpec {
    triggers: &['{', '[', '`'],
    value_end: json_fenced_end,
    verdict: json_fenced_verdict,
    parse: json_whole,
    separators: "",
    tags: &[],
};

fn py_prefix_verdict(s: &str) -> Verdict {
    let Some(r) = s.strip_prefix('[') else {
        return Verdict::No;
    };
    let r = r.trim_start();
    let mut chars = r.char_indices().peekable();
    match chars.peek() {
        None => return Verdict::Maybe,
        Some((_, ']')) => return Verdict::Maybe,
        Some((_, c)) if c.is_alphabetic() || *c == '_' => {}
        Some(_) => return Verdict::No,
    }
    for (i, c) in chars {
        if c.is_alphanumeric() || matches!(c, '_' | '.' | '-') {
            continue;
        }
        let after = r[i..].trim_start();
        return match after.chars().next() {
            None => Verdict::Maybe,
            Some('(') => Verdict::Attempt,
            Some(_) => Verdict::No,
        };
    }
    Verdict::Maybe
}

fn py_whole(value: &str) -> Result<Vec<Parsed>, Option<String>> {
    match Py::new(value).call_list() {
        Ok(calls) if calls.is_empty() => Err(None),
        Ok(calls) => Ok(calls
            .into_iter()
            .map(|(name, arguments)| Parsed::Call {
                name,
                arguments,
                id: None,
            })
            .collect()),
        Err(e) => Err(Some(e)),
    }
}

fn py_tag_body(raw: &str, inner: &str, _terminated: bool) -> Vec<Parsed> {
    let t = inner.trim();
    if t.starts_with('[') {
        return match Py::new(t).call_list() {
            Ok(calls) if !calls.is_empty() => calls
                .into_iter()
                .map(|(name, arguments)| Parsed::Call {
                    name,
                    arguments,
                    id: None,
                })
                .collect(),
            Ok(_) => vec![Parsed::bad(raw, "empty call list")],
            Err(e) => vec![Parsed::bad(raw, e)],
        };
    }
    py_statements(raw, t)
}

pub(crate) static PYTHONIC: WholeSpec = WholeSpec {
    triggers: &['['],
    value_end: |s, _| py_value_end(s),
    verdict: py_prefix_verdict,
    parse: py_whole,
    separators: "",
    // Llama 4 wraps pythonic calls in these tags.
    tags: &[Block {
        start: "<|python_start|>",
        end: End::Markers(&["<|python_end|>"]),
        parse: py_tag_body,
    }],
};
