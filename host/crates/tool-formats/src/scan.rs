//! Low-level scanning helpers shared by the detectors: marker search with hold-back, and
//! finding where a JSON or Python value closes without parsing it.

/// Earliest occurrence of any of `markers` in `hay`: `(byte position, marker index)`.
/// On a tie the longest marker wins, so `<tool_call>` beats a shorter `<tool_call` alias.
pub(crate) fn find_first(hay: &str, markers: &[&str]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for (i, m) in markers.iter().enumerate() {
        if m.is_empty() {
            continue;
        }
        if let Some(p) = hay.find(m) {
            best = match best {
                None => Some((p, i)),
                Some((bp, bi)) if p < bp || (p == bp && m.len() > markers[bi].len()) => {
                    Some((p, i))
                }
                keep => keep,
            };
        }
    }
    best
}

/// Length in bytes of the longest suffix of `hay` that is a proper prefix of a marker: the part
/// that must be held back because the next chunk could complete it into a marker.
pub(crate) fn held_suffix(hay: &str, markers: &[&str]) -> usize {
    let longest = markers.iter().map(|m| m.len()).max().unwrap_or(0);
    if longest == 0 || hay.is_empty() {
        return 0;
    }
    let lo = hay.len().saturating_sub(longest - 1);
    let mut start = lo;
    while start < hay.len() {
        if hay.is_char_boundary(start) {
            let tail = &hay[start..];
            if markers
                .iter()
                .any(|m| m.len() > tail.len() && m.starts_with(tail))
            {
                return hay.len() - start;
            }
        }
        start += 1;
    }
    0
}

/// Largest char boundary `<= i`.
pub(crate) fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Where the JSON object or array starting at `s[0]` closes (index just past it), ignoring
/// brackets inside strings. `None` while it is still open. Only structure is checked here;
/// serde_json decides validity afterwards.
pub(crate) fn json_value_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'{') | Some(b'[') => {}
        _ => return None,
    }
    let mut depth = 0usize;
    let mut in_str = false;
    let mut esc = false;
    for (i, &c) in b.iter().enumerate() {
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Like [`json_value_end`] for a Python literal/call list starting with `[`, `(` or `{`:
/// both quote kinds delimit strings.
pub(crate) fn py_value_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'[') | Some(b'(') | Some(b'{') => {}
        _ => return None,
    }
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut esc = false;
    for (i, &c) in b.iter().enumerate() {
        if let Some(q) = quote {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            b'"' | b'\'' => quote = Some(c),
            b'[' | b'(' | b'{' => depth += 1,
            b']' | b')' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The first of `markers` in `body` outside JSON strings (`"…"` with backslash escapes, ended
/// by a raw newline too):
/// `(position, marker index)`. A marker quoted in an argument value does not end the block.
pub(crate) fn unquoted_find(body: &str, markers: &[&str]) -> Option<(usize, usize)> {
    find_outside_strings(body, markers, b"\"")
}

/// [`unquoted_find`] for code (Python calls, or JSON): strings in either quote kind, so a
/// block's end marker inside `'…'` or `"…"` does not end the block.
pub(crate) fn code_unquoted_find(body: &str, markers: &[&str]) -> Option<(usize, usize)> {
    find_outside_strings(body, markers, b"\"'")
}

/// [`code_unquoted_find`] for one or more markers, as `(position, position after the marker)`.
pub(crate) fn code_unquoted_end(body: &str, markers: &[&str]) -> Option<(usize, usize)> {
    code_unquoted_find(body, markers).map(|(p, i)| (p, p + markers[i].len()))
}

fn find_outside_strings(body: &str, markers: &[&str], quotes: &[u8]) -> Option<(usize, usize)> {
    let b = body.as_bytes();
    let mut quote: Option<u8> = None;
    let mut esc = false;
    for (i, &c) in b.iter().enumerate() {
        if let Some(q) = quote {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == q || c == b'\n' {
                // A raw newline cannot be inside a JSON (or one-line Python) string: the quotes
                // were broken, so the damage stays within one line.
                quote = None;
            }
            continue;
        }
        if quotes.contains(&c) {
            quote = Some(c);
            continue;
        }
        if let Some(m) = markers
            .iter()
            .position(|m| m.as_bytes().first() == Some(&c) && body[i..].starts_with(m))
        {
            return Some((i, m));
        }
    }
    None
}

/// [`unquoted_find`] for one marker, as `(position, position after the marker)`.
pub(crate) fn unquoted_end(body: &str, marker: &str) -> Option<(usize, usize)> {
    unquoted_find(body, &[marker]).map(|(p, _)| (p, p + marker.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_back_only_marker_prefixes() {
        assert_eq!(held_suffix("hello <tool", &["<tool_call>"]), 5);
        assert_eq!(held_suffix("hello <tox", &["<tool_call>"]), 0);
        assert_eq!(
            held_suffix("a<｜tool", &["<｜tool▁calls▁begin｜>"]),
            "<｜tool".len()
        );
        assert_eq!(held_suffix("", &["<x>"]), 0);
    }

    #[test]
    fn first_marker_prefers_earliest_then_longest() {
        assert_eq!(
            find_first("ab<f=x <tool_call>", &["<tool_call>", "<f="]),
            Some((2, 1))
        );
        assert_eq!(
            find_first("[TOOL_CALLS]", &["[TOOL_CALL", "[TOOL_CALLS]"]),
            Some((0, 1))
        );
        assert_eq!(find_first("none", &["<x>"]), None);
    }

    #[test]
    fn json_end_ignores_brackets_in_strings() {
        let s = r#"{"a":"}]\"{","b":[1,{"c":2}]} tail"#;
        assert_eq!(json_value_end(s), Some(s.len() - 5));
        assert_eq!(json_value_end(r#"{"a":"#), None);
        assert_eq!(py_value_end("[f(a=')'), g()] x"), Some(15));
        assert_eq!(unquoted_end(r#"{"a":"<e>"}<e>"#, "<e>"), Some((11, 14)));
        assert_eq!(unquoted_end(r#"{"a":"<e>\"<e>"#, "<e>"), None);
        assert_eq!(unquoted_end(r#"'<e>'<e>"#, "<e>"), Some((1, 4)));
        assert_eq!(
            code_unquoted_end(r#"f(a='<e>', b="<e>")<e>"#, &["<e>"]),
            Some((19, 22))
        );
        assert_eq!(code_unquoted_end("f(a='x\n<e>", &["<e>"]), Some((7, 10)));
    }
}
