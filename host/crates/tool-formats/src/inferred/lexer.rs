//! Matching markers, names and values at a position of the text seen so far: each answers with
//! where the match ended, that more text is needed, or that the text does not match.

use serde_json::Value;

use super::WILDCARD;
use crate::parse::{Py, near};
use crate::scan::py_value_end;

/// Why a parse stopped early.
pub(super) enum Stop {
    More,
    Fail(String),
}

pub(super) type Res<T> = Result<T, Stop>;

/// A literal match: where it ended, or that the text cannot (yet) tell.
pub(super) enum Lit {
    Ok(usize),
    More,
    No,
}

pub(super) fn skip_ws(s: &str, i: usize) -> usize {
    i + (s[i..].len() - s[i..].trim_start().len())
}

pub(super) fn skip_while(s: &str, i: usize, f: impl Fn(char) -> bool) -> usize {
    i + s[i..].find(|c: char| !f(c)).unwrap_or(s.len() - i)
}

pub(super) fn is_wild(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

pub(super) fn is_name(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Matches marker `lit` at `pos` after optional whitespace; whitespace inside `lit` matches any
/// run of whitespace, [`WILDCARD`] a run of letters, digits, `_` and `-`.
pub(super) fn lit_at(s: &str, pos: usize, lit: &str, eof: bool) -> Lit {
    lit_wild(s, pos, lit, eof, &mut None)
}

/// [`lit_at`], also giving what the first [`WILDCARD`] matched (a declared kind).
pub(super) fn lit_wild(
    s: &str,
    pos: usize,
    lit: &str,
    eof: bool,
    wild: &mut Option<(usize, usize)>,
) -> Lit {
    if lit.is_empty() {
        return Lit::Ok(pos);
    }
    let mut i = skip_ws(s, pos);
    let mut rest = lit;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(WILDCARD) {
            let from = i;
            i = skip_while(s, i, is_wild);
            if i == s.len() && !eof {
                return Lit::More;
            }
            wild.get_or_insert((from, i));
            rest = r;
            continue;
        }
        let Some(c) = rest.chars().next() else { break };
        // Between two tokens of a marker (`<|call|> fn`, `[TOOL_CALLS] [`) models may write
        // whitespace the template did not.
        let after_token = lit[..lit.len() - rest.len()].ends_with(['>', ']']);
        if after_token || matches!(c, '<' | '[') {
            i = skip_ws(s, i);
        }
        if c.is_whitespace() {
            i = skip_ws(s, i);
            rest = rest.trim_start();
            continue;
        }
        match s[i..].chars().next() {
            None if eof => return Lit::No,
            None => return Lit::More,
            Some(d) if d == c => {
                i += d.len_utf8();
                rest = &rest[c.len_utf8()..];
            }
            Some(_) => return Lit::No,
        }
    }
    Lit::Ok(i)
}

/// A closing marker: where it is missing (the text goes on with something else, or the response
/// ended), the call or section ends where its content ended, as the modules read a forgotten
/// close tag.
///
/// `definite`: the content has an end of its own (a JSON object), so whatever follows it cannot
/// be more of the call; otherwise only the end of the response or the next call's opener
/// (`next`) ends it.
pub(super) fn close_at(
    s: &str,
    pos: usize,
    lit: &str,
    eof: bool,
    definite: bool,
    next: &str,
) -> Res<usize> {
    match lit_at(s, pos, lit, eof) {
        Lit::Ok(p) => Ok(p),
        Lit::More => Err(Stop::More),
        Lit::No => {
            let rest = s[pos..].trim_start();
            if definite || (eof && rest.is_empty()) || (!next.is_empty() && rest.starts_with(next))
            {
                Ok(pos)
            } else {
                Err(Stop::Fail(format!(
                    "expected `{lit}`{}",
                    found(s, skip_ws(s, pos))
                )))
            }
        }
    }
}

pub(super) fn expect(s: &str, pos: usize, lit: &str, eof: bool) -> Res<usize> {
    match lit_at(s, pos, lit, eof) {
        Lit::Ok(p) => Ok(p),
        Lit::More => Err(Stop::More),
        Lit::No => Err(Stop::Fail(format!(
            "expected `{lit}`{}",
            found(s, skip_ws(s, pos))
        ))),
    }
}

pub(super) fn found(s: &str, at: usize) -> String {
    let near = near(&s[at..], 20);
    if near.is_empty() {
        " at the end".into()
    } else {
        format!(", found `{near}`")
    }
}

/// A tool or argument name: a letter or `_`, then letters, digits, `_`, `-` and `.` (so `[1, 2]`
/// is not a call list).
pub(super) fn name_at(s: &str, pos: usize, eof: bool) -> Result<Option<(usize, &str)>, Stop> {
    let i = skip_ws(s, pos);
    if !s[i..].starts_with(|c: char| c.is_alphabetic() || c == '_') {
        return if i == s.len() && !eof {
            Err(Stop::More)
        } else {
            Ok(None)
        };
    }
    let j = skip_while(s, i, is_name);
    if j == s.len() && !eof {
        return Err(Stop::More);
    }
    Ok(Some((j, &s[i..j])))
}

/// A JSON value at `pos` (after whitespace).
pub(super) fn json_at(s: &str, pos: usize, eof: bool) -> Res<(usize, Value)> {
    let i = skip_ws(s, pos);
    if i == s.len() {
        return Err(if eof {
            Stop::Fail("expected JSON at the end".into())
        } else {
            Stop::More
        });
    }
    let mut it = serde_json::Deserializer::from_str(&s[i..]).into_iter::<Value>();
    match it.next() {
        Some(Ok(v)) => Ok((i + it.byte_offset(), v)),
        Some(Err(e)) if e.is_eof() && !eof => Err(Stop::More),
        Some(Err(e)) => Err(Stop::Fail(format!("invalid JSON: {e}"))),
        None => Err(Stop::More),
    }
}

/// End of a string quoted with `q` starting at `s[i]` (just past the closing quote).
pub(super) fn quoted_end(s: &str, i: usize, q: char) -> Option<usize> {
    let mut esc = false;
    for (k, c) in s[i + 1..].char_indices() {
        if esc {
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == q {
            return Some(i + 1 + k + 1);
        }
    }
    None
}

/// A JSON or Python literal at `pos`.
pub(super) fn literal_at(s: &str, pos: usize, eof: bool) -> Res<(usize, Value)> {
    let i = skip_ws(s, pos);
    let Some(c) = s[i..].chars().next() else {
        return Err(if eof {
            Stop::Fail("expected a value at the end".into())
        } else {
            Stop::More
        });
    };
    let end = match c {
        '[' | '(' | '{' => py_value_end(&s[i..]).map(|e| i + e),
        '"' | '\'' => quoted_end(s, i, c),
        _ => {
            let j = skip_while(s, i, |c| c.is_alphanumeric() || "_.+-".contains(c));
            if j == s.len() && !eof {
                return Err(Stop::More);
            }
            Some(j)
        }
    };
    let Some(end) = end else {
        return Err(if eof {
            Stop::Fail(format!("unterminated value `{}`", near(&s[i..], 20)))
        } else {
            Stop::More
        });
    };
    match Py::new(&s[i..end]).literal() {
        Ok(v) => Ok((end, v)),
        Err(e) => Err(Stop::Fail(format!("bad value: {e}"))),
    }
}

/// Where a text value starting at `from` ends: at a `value_suffix` that is followed by what may
/// follow a value (the next key, the separator, or one of `follow`: the closing markers), so a
/// close tag inside the value does not end it. A value that runs into the next key lost its
/// `value_suffix`: an error, never a value swallowing the next argument. Without `follow` (a
/// lone call body), the first `value_suffix` ends it.
pub(super) fn text_value_end(
    s: &str,
    from: usize,
    eof: bool,
    value_suffix: &str,
    key_prefix: &str,
    separator: &str,
    follow: &[&str],
) -> Res<usize> {
    let token = first_token(value_suffix);
    let key = first_token(key_prefix);
    let mut nexts: Vec<&str> = vec![key, first_token(separator)];
    nexts.extend(follow.iter().map(|f| first_token(f)));
    nexts.retain(|n| !n.is_empty());
    let mut search = from;
    while let Some(at) = s[search..].find(token).map(|a| search + a) {
        if !key.is_empty() && s[from..at].contains(key) {
            return Err(Stop::Fail(format!(
                "missing `{value_suffix}` before the next `{key}`"
            )));
        }
        let after = match lit_at(s, at, value_suffix, eof) {
            Lit::Ok(q) => q,
            Lit::More => return Err(Stop::More),
            Lit::No => {
                search = at + token.len();
                continue;
            }
        };
        if follow.is_empty() {
            return Ok(at);
        }
        let rest = s[after..].trim_start();
        if rest.is_empty() {
            return if eof { Ok(at) } else { Err(Stop::More) };
        }
        if nexts.iter().any(|n| rest.starts_with(n)) {
            return Ok(at);
        }
        if nexts.iter().any(|n| n.starts_with(rest)) && !eof {
            return Err(Stop::More);
        }
        search = at + token.len();
    }
    if !key.is_empty() && s[from..].contains(key) {
        return Err(Stop::Fail(format!(
            "missing `{value_suffix}` before the next `{key}`"
        )));
    }
    Err(if eof {
        Stop::Fail(format!("missing `{value_suffix}`"))
    } else {
        Stop::More
    })
}

/// The part of a marker to search for: up to its first whitespace or wildcard.
pub(super) fn first_token(lit: &str) -> &str {
    let t = lit.split_whitespace().next().unwrap_or(lit);
    t.split(WILDCARD).next().unwrap_or(t)
}
