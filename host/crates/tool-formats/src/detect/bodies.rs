//! Body parsers and end finders shared by several formats (each format's own ones live in its
//! module under `crate::formats`).

use serde_json::Value;

use super::marker::{Block, End};
use super::whole::Verdict;
use crate::parse::{
    Parsed, Py, call_with_json_args, calls_from_json_value, looks_like_call, xml_attr,
};
use crate::scan::{find_first, json_value_end, unquoted_find};

// ---------------------------------------------------------------------------------------------
// JSON bodies (tool-call-json, hermes)

/// One or more JSON call values (objects or arrays), optionally inside a ```json fence.
pub(crate) fn json_calls(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let text = strip_fence(inner);
    if text.is_empty() {
        return vec![Parsed::bad(raw, "empty call block")];
    }
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let value_start = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Ok(v)) => out.extend(calls_from_json_value(raw, &v)),
            Some(Err(e)) => {
                let msg = if terminated {
                    format!("invalid JSON: {e}")
                } else {
                    format!("unterminated call block: {e}")
                };
                if !out.is_empty() {
                    // Several objects in one block (`{…}\n{…}`): the calls before the broken one
                    // stand, and only the rest of the block is malformed.
                    out.push(Parsed::bad(text[value_start..].trim(), msg));
                    return out;
                }
                // Hermes-2-Pro writes Python dicts (`{'name': 'f', 'arguments': {…}}`).
                if let Ok(v) = Py::new(text).literal()
                    && looks_like_call(&v)
                {
                    return calls_from_json_value(raw, &v);
                }
                return vec![Parsed::bad(raw, msg)];
            }
        }
    }
    // A block cut off by the end of the response is accepted only if its JSON is complete.
    out
}

pub(crate) fn strip_fence(s: &str) -> &str {
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
pub(crate) fn json_or_marker_end(body: &str, markers: &[&str]) -> Option<(usize, usize)> {
    // A marker inside a JSON string is part of a value, not the end.
    let marker = unquoted_find(body, markers).map(|(p, i)| (p, p + markers[i].len()));
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
    let mut e = e;
    // Several call objects in one block (`{…}\n{…}`): the block goes on after each of them.
    loop {
        let after = &body[e..];
        let rest = after.trim_start();
        if !rest.starts_with('{') {
            break;
        }
        let next = e + (after.len() - rest.len());
        // As for the first object: a marker before this value's end ends the block. Letting a
        // value that closes later win would end the block elsewhere once more text arrived than
        // when a shorter prefix ended it at the marker (found by fuzzing, streamed ≠ at once).
        match (json_value_end(rest), marker) {
            (Some(n), Some((p, _))) if p < next + n => return marker,
            (Some(n), _) => e = next + n,
            (None, _) => return marker,
        }
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

// ---------------------------------------------------------------------------------------------
// tool-call-xml: <tool_call name="f"><argument name="a">v</argument></tool_call>

/// Text-valued arguments `<open…>value</close>` separated by whitespace; `key` extracts the
/// argument name from the text between `open` and `>`.
///
/// A value ends at the first `close` followed (after whitespace) by the next `open` or the end of
/// the body, so a close tag inside a value survives. A value that runs into the next `open` tag
/// lacks its close tag: that is an error, never an argument swallowing the next one.
pub(crate) fn tag_args(
    body: &str,
    open: &str,
    close: &str,
    key: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut args = Vec::new();
    let mut rest = body;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let Some(after_open) = t.strip_prefix(open) else {
            let near = crate::parse::near(t, 30);
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
        let k = k.trim();
        let value_and_rest = &after_open[gt + 1..];
        let Some(end) = legal_close(value_and_rest, close, &[open]) else {
            // The last value lost its close tag but the element around it ended: the value is
            // the rest. A value that runs into the next open tag is an error (below).
            if value_and_rest.contains(open) {
                return Err(format!("missing {close} for `{k}` before the next {open}"));
            }
            args.push((k.to_string(), value_and_rest.to_string()));
            break;
        };
        let value = &value_and_rest[..end];
        if value.contains(open) {
            return Err(format!("missing {close} for `{k}` before the next {open}"));
        }
        args.push((k.to_string(), value.to_string()));
        rest = &value_and_rest[end + close.len()..];
    }
    Ok(args)
}

// ---------------------------------------------------------------------------------------------
// deepseek-dsml, deepseek-v41, kimi-k3: arguments whose header declares their key and kind

/// How a family writes an argument `OPEN attrs HEADER_END value CLOSE` whose attributes name the
/// key and declare whether the value is text (DSML: `<｜DSML｜parameter name="a" string="true">`,
/// Kimi K3: `<|open|>argument key="a" type="string"<|sep|>`), and its error wording.
pub(crate) struct AttrArgs {
    pub open: &'static str,
    pub header_end: &'static str,
    pub close: &'static str,
    /// The attribute holding the key.
    pub key: &'static str,
    /// The attribute and the value of it that declare text; anything else is JSON.
    pub text: (&'static str, &'static str),
    /// What the family calls an argument (in "before the next …").
    pub noun: &'static str,
    /// The errors for a header without its end and for one without the key attribute.
    pub unterminated: &'static str,
    pub keyless: &'static str,
}

/// `(key, value, is_text)` of each argument of `body`. A value ends at the first close followed
/// by the next argument or the end of the body, so a close inside a value survives; a value that
/// runs into the next argument lost its close: an error, never a value swallowing the next one.
pub(crate) fn attr_args(
    spec: &AttrArgs,
    body: &str,
) -> Result<Vec<(String, String, bool)>, String> {
    let (open, close) = (spec.open, spec.close);
    let mut args = Vec::new();
    let mut rest = body;
    loop {
        let t = rest.trim_start();
        if t.is_empty() {
            break;
        }
        let after = t.strip_prefix(open).ok_or_else(|| {
            let near = crate::parse::near(t, 30);
            format!("unexpected text `{near}` where {open} was expected")
        })?;
        let h = after.find(spec.header_end).ok_or(spec.unterminated)?;
        let attrs = &after[..h];
        let key = xml_attr(attrs, spec.key)
            .filter(|k| !k.trim().is_empty())
            .ok_or(spec.keyless)?;
        let value_and_rest = &after[h + spec.header_end.len()..];
        let e = legal_close(value_and_rest, close, &[open])
            .ok_or_else(|| format!("missing {close} for `{key}`"))?;
        let value = &value_and_rest[..e];
        if value.contains(open) {
            return Err(format!(
                "missing {close} for `{key}` before the next {}",
                spec.noun
            ));
        }
        let is_text = xml_attr(attrs, spec.text.0).as_deref() == Some(spec.text.1);
        args.push((key.trim().to_string(), value.to_string(), is_text));
        rest = &value_and_rest[e + close.len()..];
    }
    Ok(args)
}

/// The first `close` in `s` that is followed, after whitespace, by the end of `s` or one of
/// `next`: where a close tag can really end an element (one inside a value is followed by
/// more value text).
pub(crate) fn legal_close(s: &str, close: &str, next: &[&str]) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = s[from..].find(close) {
        let at = from + p;
        let after = s[at + close.len()..].trim_start();
        if after.is_empty() || next.iter().any(|n| after.starts_with(n)) {
            return Some(at);
        }
        from = at + close.len();
    }
    None
}

/// The first `marker` in a streamed `body` whose preceding text (whitespace trimmed) ends with
/// one of `after`: an end marker that can really end the block, not one quoted in a value.
pub(crate) fn marker_after(body: &str, marker: &str, after: &[&str]) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(p) = body[from..].find(marker) {
        let at = from + p;
        let before = body[..at].trim_end();
        if after.iter().any(|a| before.ends_with(a)) {
            return Some((at, at + marker.len()));
        }
        from = at + marker.len();
    }
    None
}
// ---------------------------------------------------------------------------------------------
// qwen3-coder: <tool_call><function=f><parameter=a>v</parameter></function></tool_call>

pub(crate) fn qwen_functions(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    let t = inner.trim();
    if t.starts_with('{') {
        return json_calls(raw, inner, true);
    }
    let mut out = Vec::new();
    let mut rest = t;
    while !rest.trim().is_empty() {
        let r = rest.trim_start();
        let Some(after) = r.strip_prefix("<function=") else {
            let near = crate::parse::near(r, 30);
            out.push(Parsed::bad(
                raw,
                format!("unexpected text `{near}` where <function=…> was expected"),
            ));
            return out;
        };
        let Some(end) = legal_close(after, "</function>", &["<function="]) else {
            // A model that forgot `</function>` before `</tool_call>`: the block's end ends the
            // function. Cut off by the end of the response, it is malformed.
            if terminated && !after.contains("<function=") {
                out.push(qwen_one(raw, after));
            } else {
                out.push(Parsed::bad(raw, "missing </function>"));
            }
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

/// End of a `<tool_call>` block of Qwen3-Coder functions: a `</tool_call>` right after a
/// `</function>` (or a last `</parameter>` when the model forgot `</function>`); a JSON body
/// ends as in Hermes.
pub(crate) fn qwen_end(body: &str) -> Option<(usize, usize)> {
    let t = body.trim_start();
    if t.starts_with(['{', '[']) {
        return json_or_marker_end(body, &["</tool_call>"]);
    }
    if t.starts_with("<function=") {
        return marker_after(body, "</tool_call>", &["</function>", "</parameter>"]);
    }
    if "<function=".starts_with(t) {
        // Still undecided.
        return None;
    }
    // Not the function syntax: the first close tag ends the (malformed) block.
    find_first(body, &["</tool_call>"]).map(|(p, _)| (p, p + "</tool_call>".len()))
}
/// `name>` followed by parameters (the text after `<function=` up to `</function>`).
pub(crate) fn qwen_one(raw: &str, s: &str) -> Parsed {
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
        return call_with_json_args(raw, name, params, None);
    }
    // A model that forgot `</function>` before `</tool_call>` leaves the block's end here.
    let params = params.trim_end();
    match tag_args(params, "<parameter=", "</parameter>", |open| {
        Some(open.to_string())
    }) {
        Ok(args) => Parsed::TextCall {
            name: name.to_string(),
            args,
            id: None,
        },
        Err(e) => Parsed::bad(raw, e),
    }
}
pub(crate) fn qwen_bare_function(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
    if !terminated {
        // `<function=name>` quoted in prose: no arguments follow and no close tag comes.
        let args = inner.split_once('>').map_or("", |(_, a)| a.trim_start());
        if !args.is_empty() && !args.starts_with(['{', '<']) {
            return vec![Parsed::NotACall(raw.to_string())];
        }
        return vec![Parsed::bad(raw, "missing </function>")];
    }
    vec![qwen_one(raw, inner)]
}

/// `<function name="f">{…}</function>` (a Hermes-2-Pro variant); `inner` starts after `name=`.
pub(crate) fn function_name_attr(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed> {
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

/// `</function>` right after a JSON object, a `</parameter>` or the opening tag (no
/// parameters): one inside a value follows value text (`<b>x</b></function>` included).
fn function_end(body: &str) -> Option<(usize, usize)> {
    let gt = body.find('>')? + 1;
    let rest = &body[gt..];
    if rest.trim_start().starts_with('{') {
        return json_or_marker_end(rest, &["</function>"]).map(|(a, b)| (gt + a, gt + b));
    }
    if rest.trim_start().starts_with("</function>") {
        let p = gt + lead_ws(rest);
        return Some((p, p + "</function>".len()));
    }
    marker_after(rest, "</function>", &["</parameter>"]).map(|(a, b)| (gt + a, gt + b))
}

/// Function-tag forms Hermes-style and Qwen models also emit without a `<tool_call>` wrapper.
pub(crate) const FUNCTION_TAGS: [Block; 2] = [
    Block {
        start: "<function=",
        end: End::Finder {
            find: function_end,
            // A JSON body can end on any character (`json_or_marker_end`).
            closers: "",
        },
        parse: qwen_bare_function,
    },
    Block {
        start: "<function name=",
        end: End::Finder {
            find: function_end,
            // A JSON body can end on any character (`json_or_marker_end`).
            closers: "",
        },
        parse: function_name_attr,
    },
];

// ---------------------------------------------------------------------------------------------
// mistral: [TOOL_CALLS][{…}] or [TOOL_CALLS]name[ARGS]{…} or [TOOL_CALLS]name[CALL_ID]id[ARGS]{…}

pub(crate) fn lead_ws(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

// ---------------------------------------------------------------------------------------------
// granite: <|tool_call|>[{…}]

pub(crate) fn json_value_after_ws(body: &str) -> Option<(usize, usize)> {
    let ws = lead_ws(body);
    let e = ws + json_value_end(&body[ws..])?;
    Some((e, e))
}

// ---------------------------------------------------------------------------------------------
// gemma: ```tool_code\nget_weather(city="Paris")\n```

pub(crate) fn py_statements(raw: &str, inner: &str) -> Vec<Parsed> {
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

// ---------------------------------------------------------------------------------------------
// deepseek R1/V3/V3.1

// ---------------------------------------------------------------------------------------------
// Whole-message formats

/// Could a message starting like `s` (first char `{` or `[`) be a JSON call?
pub(crate) fn json_prefix_verdict(s: &str) -> Verdict {
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

pub(crate) fn json_whole(value: &str) -> Result<Vec<Parsed>, Option<String>> {
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
pub(crate) enum Fence {
    /// Not fenced.
    No,
    /// Could still become a JSON fence opening.
    Partial,
    /// A fence for another language: not a call.
    Other,
    /// A JSON (or unlabelled) fence; the JSON starts at `body_at`.
    Open { body_at: usize },
}

pub(crate) fn open_fence(s: &str) -> Fence {
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

pub(crate) fn json_fenced_verdict(s: &str) -> Verdict {
    match open_fence(s) {
        Fence::No => json_prefix_verdict(s),
        Fence::Partial => Verdict::Maybe,
        Fence::Other => Verdict::No,
        Fence::Open { body_at } if body_at == s.len() => Verdict::Maybe,
        Fence::Open { body_at } => json_prefix_verdict(&s[body_at..]),
    }
}

/// End of a whole-message JSON value, including a closing fence when it was fenced.
pub(crate) fn json_fenced_end(s: &str, eof: bool) -> Option<usize> {
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

pub(crate) fn py_prefix_verdict(s: &str) -> Verdict {
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

pub(crate) fn py_whole(value: &str) -> Result<Vec<Parsed>, Option<String>> {
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

pub(crate) fn py_tag_body(raw: &str, inner: &str, _terminated: bool) -> Vec<Parsed> {
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
