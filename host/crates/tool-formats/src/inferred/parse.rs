//! The block parser of inferred formats. It runs on the text seen so far from the block's opener
//! and answers "need more", "done after N bytes" or "fails here": the answer on a prefix never
//! contradicts the answer on the whole text (it says "need more" until the text decides), so the
//! detector's events do not depend on how the stream was chunked.

use serde_json::{Map, Value};

use super::lexer::{
    Lit, Res, Stop, close_at, expect, found, json_at, lit_at, lit_wild, literal_at, name_at,
    skip_ws, text_value_end,
};
use super::{Arguments, CallSyntax, InferredFormat, Values};
use crate::parse::{Parsed, Py, kind, normalize_arguments};
use crate::scan::py_value_end;

pub(super) enum Step {
    NeedMore,
    Done {
        len: usize,
        items: Vec<Parsed>,
    },
    /// The text is not this syntax; `committed`: a call was recognisably begun (a name read), so
    /// it is a malformed call rather than prose that happens to start like one.
    Fail {
        error: String,
        committed: bool,
    },
}

/// What a call's arguments were written as.
enum Args {
    Values(Map<String, Value>),
    Text(Vec<(String, String)>),
    /// Text with the kind declared: `(key, value, is_text)`.
    Declared(Vec<(String, String, bool)>),
}

fn pairs_at(
    s: &str,
    mut pos: usize,
    eof: bool,
    syntax: &Arguments,
    follow: &[&str],
) -> Res<(usize, Args)> {
    let Arguments::Pairs {
        key_prefix,
        key_suffix,
        value_suffix,
        separator,
        values,
        kinds,
        ..
    } = syntax
    else {
        return Err(Stop::Fail("not key/value arguments".into()));
    };
    let text_kind = kinds
        .get("string")
        .filter(|_| matches!(values, Values::Text));
    let mut map = Map::new();
    let mut text = Vec::new();
    let mut declared = Vec::new();
    let mut first = true;
    loop {
        let mut p = pos;
        if !first && !separator.is_empty() {
            match lit_at(s, p, separator, eof) {
                Lit::Ok(q) => p = q,
                Lit::More => return Err(Stop::More),
                Lit::No => break,
            }
        }
        match lit_at(s, p, key_prefix, eof) {
            Lit::Ok(q) => p = q,
            Lit::More => return Err(Stop::More),
            Lit::No if first || separator.is_empty() => break,
            Lit::No => return Err(expect(s, p, key_prefix, eof).err().unwrap_or(Stop::More)),
        }
        let (q, key) = match name_at(s, p, eof)? {
            Some(k) => k,
            None if key_prefix.is_empty() && (first || separator.is_empty()) => break,
            None => {
                return Err(Stop::Fail(format!(
                    "expected an argument name{}",
                    found(s, skip_ws(s, p))
                )));
            }
        };
        let key = key.to_string();
        let mut kind = None;
        p = match lit_wild(s, q, key_suffix, eof, &mut kind) {
            Lit::Ok(p) => p,
            Lit::More => return Err(Stop::More),
            Lit::No => return Err(expect(s, q, key_suffix, eof).err().unwrap_or(Stop::More)),
        };
        match values {
            Values::Text => {
                let at = text_value_end(s, p, eof, value_suffix, key_prefix, separator, follow)
                    .map_err(|e| match e {
                        Stop::Fail(why) => Stop::Fail(format!("{why} (the value of `{key}`)")),
                        more => more,
                    })?;
                let value = s[p..at].to_string();
                match text_kind {
                    Some(t) => {
                        let is_text = kind.is_none_or(|(a, b)| s[a..b] == **t);
                        declared.push((key, value, is_text));
                    }
                    None => text.push((key, value)),
                }
                p = at;
            }
            Values::Literal => {
                let (q, v) = literal_at(s, p, eof)?;
                map.insert(key, v);
                p = q;
            }
            Values::Quoted { open, close } => {
                let i = skip_ws(s, p);
                if s[i..].starts_with(open.as_str()) {
                    let from = i + open.len();
                    let Some(at) = s[from..].find(close.as_str()) else {
                        return Err(if eof {
                            Stop::Fail(format!("unterminated string value of `{key}`"))
                        } else {
                            Stop::More
                        });
                    };
                    map.insert(key, Value::String(s[from..from + at].to_string()));
                    p = from + at + close.len();
                } else if open.starts_with(&s[i..]) && !eof {
                    return Err(Stop::More);
                } else {
                    let (q, v) = literal_at(s, p, eof)?;
                    map.insert(key, v);
                    p = q;
                }
            }
        }
        pos = expect(s, p, value_suffix, eof)?;
        first = false;
    }
    let args = if text_kind.is_some() {
        Args::Declared(declared)
    } else if matches!(values, Values::Text) {
        Args::Text(text)
    } else {
        Args::Values(map)
    };
    Ok((pos, args))
}

/// One call at `pos` (after its `call_open`).
fn call_at(
    syntax: &CallSyntax,
    s: &str,
    pos: usize,
    eof: bool,
    committed: &mut bool,
    follow: &[&str],
) -> Res<(usize, Parsed)> {
    match syntax {
        CallSyntax::JsonObject {
            name_key,
            arguments_key,
        } => {
            let i = skip_ws(s, pos);
            if !s[i..].is_empty() && !s[i..].starts_with('{') {
                return Err(Stop::Fail(format!(
                    "expected a JSON call object{}",
                    found(s, i)
                )));
            }
            // `{"name"` at the start already makes it a call attempt.
            let key = Value::String(name_key.clone()).to_string();
            if s[i..]
                .strip_prefix('{')
                .is_some_and(|r| r.trim_start().starts_with(&key))
            {
                *committed = true;
            }
            let (end, v) = match json_at(s, i, eof) {
                // Some models write the call as a Python dict (`{'name': 'f', …}`).
                Err(Stop::Fail(e)) => match py_value_end(&s[i..]) {
                    Some(n) => match Py::new(&s[i..i + n]).literal() {
                        Ok(v) => (i + n, v),
                        Err(_) => return Err(Stop::Fail(e)),
                    },
                    None if !eof => return Err(Stop::More),
                    None => return Err(Stop::Fail(e)),
                },
                other => other?,
            };
            let Value::Object(o) = &v else {
                return Err(Stop::Fail(format!(
                    "a call must be a JSON object, got {}",
                    kind(&v)
                )));
            };
            let name = match o.get(name_key) {
                Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
                Some(_) => {
                    *committed = true;
                    return Err(Stop::Fail(format!(
                        "`{name_key}` must be a non-empty string"
                    )));
                }
                None => return Err(Stop::Fail(format!("missing `{name_key}`"))),
            };
            *committed = true;
            let arguments = normalize_arguments(o.get(arguments_key)).map_err(Stop::Fail)?;
            let id = o.get("id").and_then(Value::as_str).map(str::to_string);
            Ok((
                end,
                Parsed::Call {
                    name,
                    arguments,
                    id,
                },
            ))
        }
        CallSyntax::Named {
            name_suffix,
            arguments,
            arguments_close,
        } => {
            let Some((p, name)) = name_at(s, pos, eof)? else {
                return Err(Stop::Fail(format!(
                    "expected a tool name{}",
                    found(s, skip_ws(s, pos))
                )));
            };
            let name = name.to_string();
            *committed = true;
            let p = expect(s, p, name_suffix, eof)?;
            let (p, args) = match arguments {
                Arguments::Json => {
                    let i = skip_ws(s, p);
                    if !s[i..].is_empty() && !s[i..].starts_with('{') {
                        return Err(Stop::Fail(format!(
                            "arguments must be a JSON object{}",
                            found(s, i)
                        )));
                    }
                    let (q, v) = json_at(s, i, eof)?;
                    match v {
                        Value::Object(m) => (q, Args::Values(m)),
                        other => {
                            return Err(Stop::Fail(format!(
                                "arguments must be a JSON object, got {}",
                                kind(&other)
                            )));
                        }
                    }
                }
                pairs @ Arguments::Pairs { .. } => pairs_at(s, p, eof, pairs, follow)?,
            };
            let p = close_at(s, p, arguments_close, eof, false, "")?;
            let parsed = match args {
                Args::Values(m) => Parsed::Call {
                    name,
                    arguments: Value::Object(m),
                    id: None,
                },
                Args::Text(args) => Parsed::TextCall {
                    name,
                    args,
                    id: None,
                },
                Args::Declared(args) => Parsed::DeclaredCall {
                    name,
                    args,
                    id: None,
                },
            };
            Ok((p, parsed))
        }
    }
}

fn block_inner(
    f: &InferredFormat,
    s: &str,
    eof: bool,
    committed: &mut bool,
) -> Res<(usize, Vec<Parsed>)> {
    let mut pos = expect(s, 0, &f.section_open, eof)?;
    let mut items = Vec::new();
    // What may follow the last argument value of a call.
    let mut follow: Vec<&str> = vec![&f.call_close, &f.section_close, &f.call_separator];
    if let CallSyntax::Named {
        arguments_close, ..
    } = &f.call
    {
        follow.push(arguments_close);
    }
    follow.retain(|m| !m.is_empty());
    loop {
        pos = expect(s, pos, &f.call_open, eof)?;
        let (p, item) = call_at(&f.call, s, pos, eof, committed, &follow)?;
        items.push(item);
        let definite = matches!(
            f.call,
            CallSyntax::JsonObject { .. }
                | CallSyntax::Named {
                    arguments: Arguments::Json,
                    ..
                }
        );
        pos = close_at(
            s,
            p,
            &f.call_close,
            eof,
            definite,
            &super::detector::trigger(f),
        )?;
        if f.section_open.is_empty() {
            return Ok((pos, items));
        }
        if !f.section_close.is_empty() {
            match lit_at(s, pos, &f.section_close, eof) {
                Lit::Ok(p) => return Ok((p, items)),
                Lit::More => return Err(Stop::More),
                Lit::No => {}
            }
            if f.call_separator.is_empty() && f.call_open.is_empty() {
                // Calls one after another (a code block of calls): the section goes on while
                // the next one parses.
                match call_at(&f.call, s, pos, eof, &mut false, &follow) {
                    Ok(_) => continue,
                    Err(Stop::More) => return Err(Stop::More),
                    Err(Stop::Fail(_)) => return Ok((pos, items)),
                }
            }
            match lit_at(s, pos, &f.call_separator, eof) {
                Lit::Ok(p) => match lit_at(s, p, &f.call_open, eof) {
                    Lit::More => return Err(Stop::More),
                    Lit::No => return Ok((pos, items)),
                    Lit::Ok(_) => pos = p,
                },
                Lit::More => return Err(Stop::More),
                // Neither the close nor another call: the section lost its close marker.
                _ => return Ok((pos, items)),
            }
            continue;
        }
        // No section close: the section goes on while the next call follows.
        if f.call_separator.is_empty() && f.call_open.is_empty() {
            return Ok((pos, items));
        }
        let p = match lit_at(s, pos, &f.call_separator, eof) {
            Lit::Ok(p) => p,
            Lit::More => return Err(Stop::More),
            Lit::No => return Ok((pos, items)),
        };
        match lit_at(s, p, &f.call_open, eof) {
            Lit::Ok(_) if !f.call_open.is_empty() => pos = p,
            Lit::More => return Err(Stop::More),
            _ => return Ok((pos, items)),
        }
    }
}

/// Parses the block that starts at `s[0]` (the opener).
pub(super) fn block(f: &InferredFormat, s: &str, eof: bool) -> Step {
    let mut committed = false;
    match block_inner(f, s, eof, &mut committed) {
        Ok((len, items)) => Step::Done { len, items },
        Err(Stop::More) if !eof => Step::NeedMore,
        Err(Stop::More) => Step::Fail {
            error: "the response ended inside a call".into(),
            committed,
        },
        Err(Stop::Fail(error)) => Step::Fail { error, committed },
    }
}

impl CallSyntax {
    /// Where one call body written in this syntax ends in `text`, which starts with it (the name,
    /// or the JSON call object): what inference uses to cut a rendered call out of a template's
    /// output with the very parser the detector runs.
    pub fn body_end(&self, text: &str) -> Option<usize> {
        call_at(self, text, 0, true, &mut false, &[])
            .ok()
            .map(|(end, _)| end)
    }
}
