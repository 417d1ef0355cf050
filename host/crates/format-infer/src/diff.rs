//! Common prefixes and suffixes of rendered texts, on character boundaries.

/// Length in bytes of the longest common prefix of `a` and `b`.
pub(crate) fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
        .min(b.len())
}

/// Length in bytes of the longest common suffix of `a` and `b`.
pub(crate) fn common_suffix(a: &str, b: &str) -> usize {
    let mut n = 0;
    for (x, y) in a.chars().rev().zip(b.chars().rev()) {
        if x != y {
            break;
        }
        n += x.len_utf8();
    }
    n
}

/// Whether a marker may start or end at byte `i` of `t`: next to whitespace, after a closing
/// bracket or before an opening one. A diff cut elsewhere splits a token (`<|im_end|>` and
/// `<tool_call>` share their `<`).
fn boundary(t: &str, i: usize) -> bool {
    let prev = t[..i].chars().next_back();
    let next = t[i..].chars().next();
    match (prev, next) {
        (None, _) | (_, None) => true,
        (Some(p), Some(n)) if p.is_whitespace() || n.is_whitespace() => true,
        // Right after a token's opening bracket or before its `>`: inside `<<calls>>`.
        (Some(p), Some(n)) if "<[".contains(p) || n == '>' => false,
        (Some(p), Some(n)) => ">])}".contains(p) || "<[{(".contains(n),
    }
}

/// [`common_prefix`] cut back to a marker boundary in both texts.
pub(crate) fn marker_prefix(a: &str, b: &str) -> usize {
    let mut n = common_prefix(a, b);
    while n > 0 && !(boundary(a, n) && boundary(b, n)) {
        n = a[..n].char_indices().next_back().map_or(0, |(i, _)| i);
    }
    n
}

/// [`common_suffix`] cut back to a marker boundary in both texts.
pub(crate) fn marker_suffix(a: &str, b: &str) -> usize {
    let mut n = common_suffix(a, b);
    loop {
        while n > 0 && !(boundary(a, a.len() - n) && boundary(b, b.len() - n)) {
            let c = a[a.len() - n..].chars().next().map_or(1, char::len_utf8);
            n -= c;
        }
        match closing_token(a, b, n) {
            Some(len) => n -= len,
            None => return n,
        }
    }
}

/// The length of a `<…>` token that starts the shared suffix of length `n` right after text in
/// both `a` and `b`, with another token after it. Such a token ends what precedes it (Kimi K3's
/// `<|sep|>` after a section's name or attributes: `index="1"<|sep|>`, `argument<|sep|>`), so it
/// belongs to the marker before the cut, not the one after.
fn closing_token(a: &str, b: &str, n: usize) -> Option<usize> {
    let suffix = &a[a.len() - n..];
    let len = suffix.strip_prefix('<')?.find('>')? + 2;
    let token = &suffix[..len];
    let text_before = |t: &str| {
        t[..t.len() - n]
            .chars()
            .next_back()
            .is_some_and(|c| !c.is_whitespace() && !">]".contains(c))
    };
    (!token.contains(char::is_whitespace)
        && suffix[len..].starts_with('<')
        && text_before(a)
        && text_before(b))
    .then_some(len)
}

/// What `with` adds to `base`: `with` without the prefix and suffix it shares with `base`, the
/// cuts moved outwards to marker boundaries.
pub(crate) fn middle<'a>(base: &str, with: &'a str) -> &'a str {
    let mut p = common_prefix(base, with);
    while p > 0 && !boundary(with, p) {
        p = with[..p].char_indices().next_back().map_or(0, |(i, _)| i);
    }
    let s = common_suffix(&base[p..], &with[p..]);
    let mut q = with.len() - s;
    while q < with.len() && !boundary(with, q) {
        q += with[q..].chars().next().map_or(1, char::len_utf8);
    }
    &with[p..q]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn middle_is_what_was_added() {
        assert_eq!(middle("ab<e>", "ab<c>x</c><e>"), "<c>x</c>");
        assert_eq!(middle("a\n<|e|>", "a\n<t>x</t><|e|>"), "<t>x</t>");
        assert_eq!(common_prefix("héllo", "hélp"), 4);
        assert_eq!(common_suffix("a｜b", "c｜b"), "｜b".len());
        assert_eq!(middle("same", "same"), "");
    }
}
