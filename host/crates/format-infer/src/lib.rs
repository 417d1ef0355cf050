//! Reads a model's tool-call format from its chat template, for models no hand-written format
//! module covers.
//!
//! The template is rendered with synthetic conversations — an answer, one call, two calls, calls
//! with string, number and object arguments, an answer with reasoning, a tool result — and the
//! differences between the outputs give the markers: what surrounds the calls of a message, what
//! opens and closes each call, how the name and the arguments are written. The result is an
//! [`InferredFormat`]; before it is returned its own detector must read the template's calls
//! back exactly, so a description that would misread the model is an error, not a guess.
//!
//! Lives apart from `rkmcp-tool-formats`, which stays pure (it is compiled into wasm plugins),
//! and from `rkmcp-llm`, whose llama.cpp build the CLI and tests should not need.

use std::fmt;

use rkmcp_tool_formats::inferred::{Arguments, CallSyntax, Markers, Values, WILDCARD};
use rkmcp_tool_formats::{DetectorEvent, DetectorOptions, normalize};
use serde_json::{Value, json};

pub use rkmcp_tool_formats::inferred::InferredFormat;

mod choose;
mod diff;
mod gguf;
mod render;

pub use choose::{FormatChoice, choose_format};
pub use gguf::{ModelTemplate, model_template};

use diff::{common_prefix, common_suffix, marker_prefix, marker_suffix, middle};
use render::{ANSWER, REASONING, RESULT, Renderer, call_message, calls, conversation};

/// Why a template's tool-call format could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferError {
    pub reason: String,
}

impl fmt::Display for InferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot read the tool-call format from the chat template: {}",
            self.reason
        )
    }
}

impl std::error::Error for InferError {}

fn err(reason: impl Into<String>) -> InferError {
    InferError {
        reason: reason.into(),
    }
}

/// Infers the format of `template` with the usual `<s>`/`</s>` special tokens.
pub fn infer(template: &str) -> Result<InferredFormat, InferError> {
    infer_with(template, "<s>", "</s>")
}

/// Infers the format of `template`, rendered with the model's `bos`/`eos` tokens.
pub fn infer_with(template: &str, bos: &str, eos: &str) -> Result<InferredFormat, InferError> {
    let r = Renderer::new(template, bos, eos)
        .map_err(|e| err(format!("the template does not compile: {e}")))?;
    let assistant = |content: &str| json!({"role": "assistant", "content": content});
    let empty = r
        .render(&conversation(vec![assistant("")]), false)
        .map_err(|e| err(format!("rendering an assistant answer failed: {e}")))?;
    let answered = r
        .render(&conversation(vec![assistant(ANSWER)]), false)
        .map_err(|e| err(format!("rendering an assistant answer failed: {e}")))?;
    // Templates differ in whether arguments are an object (transformers) or a JSON string
    // (OpenAI's wire form, which some templates concatenate): the first that reads back wins.
    let mut first_error = None;
    for string_args in [false, true] {
        match calls_format(&r, &empty, string_args) {
            Ok(mut f) => {
                f.end_of_turn = end_of_turn(&answered);
                // The model's end-of-sequence token also ends a turn where a runtime leaves it.
                if !eos.is_empty() && !f.end_of_turn.iter().any(|t| t == eos) {
                    f.end_of_turn.push(eos.to_string());
                }
                f.reasoning = reasoning(&r, &answered, template);
                f.message_open = message_open(&r, &answered, f.reasoning.as_ref());
                f.tool_result = tool_result(&r, string_args);
                check(&f, &r, &empty, string_args)?;
                return Ok(f);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| err("no call syntax found")))
}

/// The text a template adds for an assistant message with the calls `which`.
fn call_text(
    r: &Renderer,
    empty: &str,
    which: &[usize],
    string_args: bool,
) -> Result<String, String> {
    let full = r.render(&conversation(vec![call_message(which, string_args)]), false)?;
    Ok(middle(empty, &full).to_string())
}

fn calls_format(
    r: &Renderer,
    empty: &str,
    string_args: bool,
) -> Result<InferredFormat, InferError> {
    let t1 = call_text(r, empty, &[0], string_args).map_err(|e| {
        err(format!(
            "rendering a message with one tool call failed: {e}"
        ))
    })?;
    let all = calls();
    if !t1.contains(all[0].0) {
        return Err(err(format!(
            "the template rendered no tool call (an assistant message calling `{}` renders without the name)",
            all[0].0
        )));
    }
    let t3 = call_text(r, empty, &[1], string_args)
        .map_err(|e| err(format!("rendering a call with two arguments failed: {e}")))?;
    // A template may refuse two calls in one message (Llama 3.1): then calls stand alone.
    let t2 = call_text(r, empty, &[0, 1], string_args).ok();
    let mut call = call_syntax(&t1, t2.as_deref(), &t3)?;
    declared_kinds(&mut call, r, empty, string_args, &t3);
    let start1 = body_start(&call, &t1, 0, all[0].0)
        .ok_or_else(|| err("the call's start could not be found in the rendered call"))?;
    let end1 = body_end(&call, &t1, start1)?;
    let (pre, post) = (&t1[..start1], &t1[end1..]);
    let mut f = InferredFormat {
        section_open: String::new(),
        section_close: String::new(),
        call_open: pre.trim().to_string(),
        call_close: post.trim().to_string(),
        call_separator: String::new(),
        parallel: false,
        anchored: false,
        call,
        reasoning: None,
        end_of_turn: Vec::new(),
        tool_result: None,
        message_open: String::new(),
    };
    if let Some(t2) = &t2
        && let Some((between, pre2, post2)) = two_calls(&f.call, t2)
        && pre2.trim() == pre.trim()
        && post2.trim() == post.trim()
    {
        let cs = marker_suffix(pre, between);
        let mut cp = marker_prefix(post, between);
        while cp > between.len() - cs {
            cp = post[..cp].char_indices().next_back().map_or(0, |(i, _)| i);
        }
        f.section_open = pre[..pre.len() - cs].trim().to_string();
        f.call_open = pre[pre.len() - cs..].trim().to_string();
        f.call_close = post[..cp].trim().to_string();
        f.section_close = post[cp..].trim().to_string();
        f.call_separator = between[cp..between.len() - cs].trim().to_string();
        f.parallel = true;
    }
    let opener = f.opener().trim();
    f.anchored = opener.chars().count() < 3;
    // `f(…)` and `call:f{…}`: the bracket the name suffix opens closes the arguments, apart
    // from the call's own close marker (which a model may leave to its stop token).
    if let CallSyntax::Named {
        name_suffix,
        arguments_close,
        ..
    } = &mut f.call
        && arguments_close.is_empty()
    {
        let close = match name_suffix.chars().last() {
            Some('(') => Some(')'),
            Some('{') => Some('}'),
            _ => None,
        };
        if let Some(c) = close
            && let Some(rest) = f.call_close.strip_prefix(c)
        {
            *arguments_close = c.to_string();
            f.call_close = rest.trim().to_string();
        }
    }
    Ok(f)
}

/// Where the call of `name` starts in `t` at or after `from`: its name, or the JSON call object
/// holding it.
fn body_start(call: &CallSyntax, t: &str, from: usize, name: &str) -> Option<usize> {
    let n = from + t[from..].find(name)?;
    match call {
        CallSyntax::Named { .. } => Some(n),
        CallSyntax::JsonObject { name_key, .. } => t[from..n]
            .char_indices()
            .rev()
            .filter(|(_, c)| *c == '{')
            .map(|(i, _)| from + i)
            .find(|&b| {
                json_at(t, b)
                    .is_some_and(|(_, v)| v.get(name_key).and_then(Value::as_str) == Some(name))
            }),
    }
}

fn body_end(call: &CallSyntax, t: &str, start: usize) -> Result<usize, InferError> {
    call.body_end(&t[start..])
        .map(|e| start + e)
        .ok_or_else(|| {
            err(format!(
                "the call syntax read from the template does not parse its own call `{}`",
                t[start..].trim()
            ))
        })
}

/// For two calls in one message: the text between them, before the first and after the second.
fn two_calls<'a>(call: &CallSyntax, t2: &'a str) -> Option<(&'a str, &'a str, &'a str)> {
    let all = calls();
    let s1 = body_start(call, t2, 0, all[0].0)?;
    let e1 = s1 + call.body_end(&t2[s1..])?;
    let s2 = body_start(call, t2, e1, all[1].0)?;
    let e2 = s2 + call.body_end(&t2[s2..])?;
    Some((&t2[e1..s2], &t2[..s1], &t2[e2..]))
}

/// A JSON value starting at `t[at]`, with its end.
fn json_at(t: &str, at: usize) -> Option<(usize, Value)> {
    let mut it = serde_json::Deserializer::from_str(&t[at..]).into_iter::<Value>();
    match it.next() {
        Some(Ok(v)) => Some((at + it.byte_offset(), v)),
        _ => None,
    }
}

/// Arguments as rendered: an object, or a JSON string holding one.
fn same_args(v: &Value, want: &Value) -> bool {
    match v {
        Value::String(s) => serde_json::from_str::<Value>(s).is_ok_and(|p| &p == want),
        other => other == want,
    }
}

/// How one call is written, from the one-call renders (`t1`: a string argument, `t3`: a number
/// and a string) and the two-call render `t2` (where a per-call index may show).
fn call_syntax(t1: &str, t2: Option<&str>, t3: &str) -> Result<CallSyntax, InferError> {
    let all = calls();
    let (name, args) = (&all[0].0, &all[0].1);
    let n1 = t1.find(name).unwrap_or(0);
    // A JSON object around the name that also holds the arguments.
    for (b, _) in t1[..n1].char_indices().rev().filter(|(_, c)| *c == '{') {
        if let Some((_, Value::Object(o))) = json_at(t1, b) {
            let name_key = o
                .iter()
                .find(|(_, v)| v.as_str() == Some(name))
                .map(|(k, _)| k);
            let args_key = o.iter().find(|(_, v)| same_args(v, args)).map(|(k, _)| k);
            if let (Some(n), Some(a)) = (name_key, args_key) {
                return Ok(CallSyntax::JsonObject {
                    name_key: n.clone(),
                    arguments_key: a.clone(),
                });
            }
        }
    }
    // The name, then the arguments as one JSON object.
    let name_end = n1 + name.len();
    for (b, _) in t1[name_end..].char_indices().filter(|(_, c)| *c == '{') {
        let b = name_end + b;
        if json_at(t1, b).is_some_and(|(_, v)| v == *args) {
            let mut name_suffix = t1[name_end..b].trim().to_string();
            if let Some(t2) = t2
                && let Some(other) = second_name_suffix(t2)
            {
                name_suffix = merge_wild(&name_suffix, other.trim()).ok_or_else(|| {
                    err(format!(
                        "the text between name and arguments differs between calls (`{name_suffix}` and `{}`)",
                        other.trim()
                    ))
                })?;
            }
            return Ok(CallSyntax::Named {
                name_suffix,
                arguments: Arguments::Json,
                arguments_close: String::new(),
            });
        }
    }
    let mut syntax = pairs_syntax(t3)?;
    if let Some(t2) = t2
        && let CallSyntax::Named {
            name_suffix,
            arguments: Arguments::Pairs { key_prefix, .. },
            ..
        } = &mut syntax
        && let Some(other) = second_pairs_name_suffix(t2, key_prefix)
        && let Some(merged) = merge_wild(name_suffix, other)
    {
        // Otherwise the calls stand alone (the two-call render does not read back).
        *name_suffix = merged;
    }
    Ok(syntax)
}

/// In a two-call render, the text between the second call's name and its first key/value pair
/// (where a per-call index may show: `tool="f" index="2"<|sep|>`).
fn second_pairs_name_suffix<'a>(t2: &'a str, key_prefix: &str) -> Option<&'a str> {
    let all = calls();
    let first = t2.find(all[0].0)?;
    let n = first + t2[first..].find(all[1].0)? + all[1].0.len();
    let key = ["minutes", "label"]
        .iter()
        .filter_map(|k| t2[n..].find(k))
        .min()?;
    let head = t2[n..n + key].trim();
    Some(head.strip_suffix(key_prefix).unwrap_or(head).trim())
}

/// In a two-call render, the text between the second call's name and its JSON arguments.
fn second_name_suffix(t2: &str) -> Option<&str> {
    let all = calls();
    let first = t2.find(all[0].0)?;
    let n = first + t2[first..].find(all[1].0)? + all[1].0.len();
    let b = t2[n..]
        .char_indices()
        .filter(|(_, c)| *c == '{')
        .map(|(i, _)| n + i)
        .find(|&b| json_at(t2, b).is_some_and(|(_, v)| v == all[1].1))?;
    Some(&t2[n..b])
}

/// Two spellings of one marker that differ only in a run of letters and digits (a call index,
/// an id): the marker with [`WILDCARD`] there.
fn merge_wild(a: &str, b: &str) -> Option<String> {
    if a == b {
        return Some(a.to_string());
    }
    let is_wild = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    // The wildcard matches greedily, so the fixed text around it may not start or end with
    // characters it would take (`string="true"` and `string="false"` share the `e`).
    let mut p = common_prefix(a, b);
    while let Some(c) = a[..p].chars().next_back().filter(|c| is_wild(*c)) {
        p -= c.len_utf8();
    }
    let mut s = common_suffix(&a[p..], &b[p..]);
    while let Some(c) = a[a.len() - s..].chars().next().filter(|c| is_wild(*c)) {
        s -= c.len_utf8();
    }
    let (ma, mb) = (&a[p..a.len() - s], &b[p..b.len() - s]);
    let wild = |m: &str| m.chars().all(is_wild);
    (wild(ma) && wild(mb)).then(|| format!("{}{WILDCARD}{}", &a[..p], &a[a.len() - s..]))
}

/// Where the wildcard after each key declares the value's kind (`string="true"`,
/// `type="integer"`): how it spells each kind. It must spell text the same wherever the text
/// stands among the arguments (`set_timer`'s label is second, `make_note`'s title first), or it
/// is a position (an argument index), not a kind.
fn declared_kinds(call: &mut CallSyntax, r: &Renderer, empty: &str, string_args: bool, t3: &str) {
    let CallSyntax::Named {
        arguments:
            Arguments::Pairs {
                key_suffix,
                values: Values::Text,
                kinds,
                ..
            },
        ..
    } = call
    else {
        return;
    };
    let Some((pre, _)) = key_suffix.split_once(WILDCARD) else {
        return;
    };
    let read = |t: &str, key: &str| -> Option<String> {
        let at = t.find(&format!("{key}{pre}"))? + key.len() + pre.len();
        let spelled: String = t[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        (!spelled.is_empty()).then_some(spelled)
    };
    let Ok(t4) = call_text(r, empty, &[2], string_args) else {
        return;
    };
    let (Some(text), Some(integer), Some(text2), Some(object)) = (
        read(t3, "label"),
        read(t3, "minutes"),
        read(&t4, "title"),
        read(&t4, "meta"),
    ) else {
        return;
    };
    if text != text2 || text == integer || text == object {
        return;
    }
    let mut seen = std::collections::BTreeMap::from([
        ("string".to_string(), text.clone()),
        ("integer".to_string(), integer.clone()),
        ("object".to_string(), object),
    ]);
    // The other kinds, where the template renders a call of every kind the same way.
    let probe = r
        .render(
            &conversation(vec![render::probe_message(string_args)]),
            false,
        )
        .map(|full| middle(empty, &full).to_string());
    if let Ok(p) = probe
        && read(&p, "probe_string").as_ref() == Some(&text)
        && read(&p, "probe_integer").as_ref() == Some(&integer)
    {
        for (key, kind) in render::PROBE_KINDS {
            if let Some(s) = read(&p, key)
                && (kind == "string" || s != text)
            {
                seen.entry(kind.to_string()).or_insert(s);
            }
        }
    }
    *kinds = seen;
}

/// Key/value arguments, from the render of `set_timer(minutes=15, label="tea")`.
fn pairs_syntax(t3: &str) -> Result<CallSyntax, InferError> {
    let unreadable = || {
        err(
            "the arguments are written neither as a JSON object nor as key/value pairs the renders tell apart",
        )
    };
    let n = t3.find("set_timer").ok_or_else(unreadable)? + "set_timer".len();
    let find = |from: usize, what: &str| t3[from..].find(what).map(|p| from + p);
    let km = find(n, "minutes").ok_or_else(unreadable)?;
    let kl = find(n, "label").ok_or_else(unreadable)?;
    let vm = find(km + 7, "15").ok_or_else(unreadable)?;
    let vl = find(kl + 5, "tea").ok_or_else(unreadable)?;
    let (mid_num, mid_str) = (&t3[km + 7..vm], &t3[kl + 5..vl]);
    let (key_suffix, quote) = if mid_num == mid_str {
        (mid_num.to_string(), "")
    } else if let Some(q) = mid_str.strip_prefix(mid_num) {
        (mid_num.to_string(), q)
    } else {
        let merged = merge_wild(mid_num, mid_str).ok_or_else(|| {
            err(format!(
                "a number and a string argument are introduced differently (`{mid_num}` and `{mid_str}`)"
            ))
        })?;
        (merged, "")
    };
    let after_str = &t3[vl + 3..];
    let close = if quote.is_empty() || after_str.starts_with(quote) {
        quote.to_string()
    } else {
        let mirror = if let Some(r) = quote.strip_prefix('<') {
            format!("</{r}")
        } else if let Some(r) = quote.strip_prefix('[') {
            format!("[/{r}")
        } else {
            String::new()
        };
        if mirror.is_empty() || !after_str.starts_with(&mirror) {
            return Err(err(format!(
                "the string quote `{quote}` has no closing quote the render shows"
            )));
        }
        mirror
    };
    let values = match quote.trim() {
        "" => Values::Text,
        "\"" | "'" => Values::Literal,
        q => Values::Quoted {
            open: q.to_string(),
            close: close.trim().to_string(),
        },
    };
    // The pairs in the order the template wrote them, each as (key start, value end).
    let num = (km, vm + 2);
    let string = (kl, vl + 3 + close.len());
    let (a, b) = if num.0 < string.0 {
        (num, string)
    } else {
        (string, num)
    };
    let head = &t3[n..a.0];
    let between = &t3[a.1..b.0];
    let after = &t3[b.1..];
    let kp = marker_suffix(head, between);
    let key_prefix = &head[head.len() - kp..];
    let name_suffix = &head[..head.len() - kp];
    let rest = &between[..between.len() - kp];
    let vs = marker_prefix(rest, after);
    // A newline around each value is the template's padding, not part of the value.
    let verbatim = !(mid_num.ends_with('\n') && rest.starts_with('\n'));
    Ok(CallSyntax::Named {
        name_suffix: name_suffix.trim().to_string(),
        arguments: Arguments::Pairs {
            key_prefix: key_prefix.trim().to_string(),
            key_suffix: key_suffix.trim().to_string(),
            value_suffix: rest[..vs].trim().to_string(),
            separator: rest[vs..].trim().to_string(),
            values,
            verbatim,
            kinds: Default::default(),
        },
        arguments_close: String::new(),
    })
}

/// The first special-looking token after an answer (`<|im_end|>`, `<end_of_turn>`, `</s>`).
fn end_of_turn(answered: &str) -> Vec<String> {
    let Some(p) = answered.find(ANSWER) else {
        return Vec::new();
    };
    let tail = answered[p + ANSWER.len()..].trim_start();
    let mut token = tail.split_whitespace().next().unwrap_or("");
    // Markers written without whitespace between (`<|close|>message<|sep|><|close|>assistant…`):
    // the turn ends where its first token comes again, the start of the next marker.
    if let Some(first) = bracket_token(token)
        && let Some(again) = token[first.len()..].find(first)
    {
        token = &token[..first.len() + again];
    }
    let special = token.starts_with('<') || token.starts_with('[') || token.contains('|');
    if special {
        vec![token.to_string()]
    } else {
        Vec::new()
    }
}

/// The `<…>` or `[…]` token `t` starts with.
fn bracket_token(t: &str) -> Option<&str> {
    let close = match t.chars().next()? {
        '<' => '>',
        '[' => ']',
        _ => return None,
    };
    t.find(close).map(|e| &t[..=e])
}

/// What the template writes for an assistant message after its generation prompt and before
/// the content (Kimi K3's `<|open|>message<|sep|>`): with the prompt ending before it, the model
/// writes it. Only markup counts: no whitespace, no reasoning markers (a template that writes
/// an empty `<think></think>` before every answer is not framing the message).
fn message_open(r: &Renderer, answered: &str, reasoning: Option<&Markers>) -> String {
    let Ok(prompt) = r.render(&conversation(Vec::new()), true) else {
        return String::new();
    };
    let Some(rest) = answered.strip_prefix(prompt.as_str()) else {
        return String::new();
    };
    let Some(p) = rest.find(ANSWER) else {
        return String::new();
    };
    let m = rest[..p].trim();
    let markup = m.starts_with(['<', '['])
        && !m.contains(char::is_whitespace)
        && reasoning.is_none_or(|r| !m.contains(&r.open) && !m.contains(&r.close));
    if markup { m.to_string() } else { String::new() }
}

/// The reasoning markers the template writes around `reasoning_content` (or `thinking`); else
/// `<think>`/`</think>` when the template names them.
fn reasoning(r: &Renderer, answered: &str, template: &str) -> Option<Markers> {
    for key in ["reasoning_content", "thinking"] {
        let msg = json!({"role": "assistant", "content": ANSWER, key: REASONING});
        let Ok(with) = r.render(&conversation(vec![msg]), false) else {
            continue;
        };
        let mid = middle(answered, &with);
        let Some(p) = mid.find(REASONING) else {
            continue;
        };
        let after = &mid[p + REASONING.len()..];
        let after = after.find(ANSWER).map_or(after, |a| &after[..a]);
        let (open, close) = (mid[..p].trim(), after.trim());
        if !open.is_empty() && !close.is_empty() {
            return Some(Markers {
                open: open.to_string(),
                close: close.to_string(),
            });
        }
    }
    (template.contains("<think>") && template.contains("</think>")).then(|| Markers {
        open: "<think>".into(),
        close: "</think>".into(),
    })
}

/// What the template writes around a tool result in the next turn.
fn tool_result(r: &Renderer, string_args: bool) -> Option<Markers> {
    let call = call_message(&[0], string_args);
    let before = r.render(&conversation(vec![call.clone()]), false).ok()?;
    let result = json!({"role": "tool", "content": RESULT, "tool_call_id": "abc123def", "name": calls()[0].0});
    let after = r.render(&conversation(vec![call, result]), false).ok()?;
    let mid = middle(&before, &after);
    let p = mid.find(RESULT)?;
    Some(Markers {
        open: mid[..p].trim().to_string(),
        close: mid[p + RESULT.len()..].trim().to_string(),
    })
}

/// The description must read the template's own renders back: every synthetic call, alone and
/// two in one message, with its arguments typed by the tools' schemas.
fn check(
    f: &InferredFormat,
    r: &Renderer,
    empty: &str,
    string_args: bool,
) -> Result<(), InferError> {
    let mut opts = DetectorOptions::default();
    for t in render::tools() {
        opts.schemas.insert(
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            t["function"]["parameters"].clone(),
        );
    }
    let all = calls();
    let mut cases: Vec<Vec<usize>> = vec![vec![0], vec![1], vec![2]];
    if f.parallel {
        cases.push(vec![0, 1]);
    }
    for which in cases {
        let text = match call_text(r, empty, &which, string_args) {
            Ok(t) => t,
            Err(e) => return Err(err(format!("rendering the calls {which:?} failed: {e}"))),
        };
        let mut d = f.detector(&opts).map_err(|e| err(e.to_string()))?;
        let mut events = d.feed(&text);
        events.extend(d.finish());
        let got: Vec<(String, Value)> = normalize(events)
            .into_iter()
            .filter_map(|e| match e {
                DetectorEvent::ToolCall(c) => Some((c.name, c.arguments)),
                _ => None,
            })
            .collect();
        let want: Vec<(String, Value)> = which
            .iter()
            .map(|&i| (all[i].0.to_string(), all[i].1.clone()))
            .collect();
        if got != want {
            return Err(err(format!(
                "the inferred description reads the template's own call `{}` as {got:?} (ambiguous markers)",
                text.trim()
            )));
        }
    }
    Ok(())
}
