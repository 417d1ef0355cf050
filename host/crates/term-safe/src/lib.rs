//! Makes untrusted text safe to print on a terminal.
//!
//! Plugins and servers are not trusted, but their strings (refusal reasons, panic messages, log
//! lines, descriptions) end up on the user's terminal. A raw `ESC` there can retitle the window,
//! clear the screen, move the cursor over earlier output or forge a line such as
//! "[rkmcp: all tool calls approved]"; a carriage return can overwrite the start of a line; a
//! bidi override can make text read differently from what it is.
//!
//! Every such character is *escaped* (shown as `\x1b`, `\u{202e}`, ...) rather than dropped:
//! the text stays readable, nothing is silently hidden, and once the introducing control
//! character is visible the rest of an escape sequence is plain printable text. This needs no
//! escape-sequence parser (and so cannot be confused by a malformed one), which is why it is
//! hand-written rather than taken from an ANSI-stripping crate: those remove well-formed
//! sequences only and leave C1 controls and bidi overrides alone.
use std::borrow::Cow;
use std::fmt::Write as _;

/// The tracing target of a notice: a line the person at the terminal must see (a server that
/// did not start, a sign-in needed, a plugin fault). rkmcp prints these on stderr at every
/// verbosity as `rkmcp: warning: …`; every other log line goes to the log file or shows with `-v`.
/// Emit one with `tracing::warn!(target: NOTICE_TARGET, server = %name, "…")`; the message must
/// be a sentence for a person (no Rust type names, no Debug output) that says what to do.
pub const NOTICE_TARGET: &str = "rkmcp_notice";

/// Whether `c` must not reach a terminal raw. `\n` and `\t` are allowed here; see [`sanitize`]
/// and [`sanitize_inline`] for which of them each keeps.
fn is_unsafe(c: char) -> bool {
    matches!(c,
        // C0 controls (ESC, BEL, CR, BS, ...) and DEL.
        '\0'..='\x1f' | '\x7f'
        // C1 controls: 0x9b is a one-character CSI on many terminals.
        | '\u{80}'..='\u{9f}'
        // Bidi embeddings, overrides and isolates, and the invisible direction marks.
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
        // Line and paragraph separators: line breaks the terminal may honour but we did not see.
        | '\u{2028}' | '\u{2029}')
}

fn escape_into(out: &mut String, c: char) {
    // Writing to a String cannot fail.
    let _ = match c {
        '\n' => write!(out, "\\n"),
        '\t' => write!(out, "\\t"),
        '\r' => write!(out, "\\r"),
        c if (c as u32) < 0x100 => write!(out, "\\x{:02x}", c as u32),
        c => write!(out, "\\u{{{:x}}}", c as u32),
    };
}

fn escape_where(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| is_unsafe(c) && !keep(c);
    let Some(first) = s.find(bad) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if bad(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line text (a description, a tool result shown to the user): keeps `\n` and `\t`,
/// escapes every other control character and bidi control.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| c == '\n' || c == '\t')
}

/// One-line text (a log line, an error reason, a name in a table): also escapes `\n`, so the
/// text cannot start a line of its own that looks like rkmcp's.
pub fn sanitize_inline(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| c == '\t')
}

/// [`sanitize`] into an owned string, for values that are stored (error fields).
pub fn sanitized(s: String) -> String {
    match sanitize(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(o) => o,
    }
}

/// [`sanitize_inline`] into an owned string.
pub fn sanitized_inline(s: String) -> String {
    match sanitize_inline(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(o) => o,
    }
}

/// Whether `s` can be printed as it is by [`sanitize`]'s rules.
pub fn is_clean(s: &str) -> bool {
    !s.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let s = "Héllo, wörld — 你好 👋\n\tindented";
        assert!(matches!(sanitize(s), Cow::Borrowed(x) if x == s));
        assert!(is_clean(s));
    }

    #[test]
    fn escape_sequences_become_visible() {
        // Title change, screen clear, cursor-up + a forged approval line.
        let s = "\x1b]0;pwned\x07\x1b[2J\x1b[1A[rkmcp: all tool calls approved]";
        let out = sanitize(s);
        assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out}");
        assert_eq!(
            out,
            "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[1A[rkmcp: all tool calls approved]"
        );
    }

    #[test]
    fn c1_controls_cr_del_and_bidi_are_escaped() {
        let s = "a\u{9b}31mb\rc\x7fd\u{202e}evil\u{2066}x\u{2069}\u{200f}\u{2028}";
        let out = sanitize(s);
        assert_eq!(
            out,
            "a\\x9b31mb\\rc\\x7fd\\u{202e}evil\\u{2066}x\\u{2069}\\u{200f}\\u{2028}"
        );
        assert!(is_clean(&out));
    }

    #[test]
    fn inline_also_escapes_newlines() {
        assert_eq!(sanitize("a\nb\tc"), "a\nb\tc");
        assert_eq!(sanitize_inline("a\nb\tc"), "a\\nb\tc");
        assert_eq!(sanitized_inline("x\n[rkmcp] ok".into()), "x\\n[rkmcp] ok");
        assert_eq!(sanitized("clean".into()), "clean");
    }

    #[test]
    fn every_char_of_the_output_is_safe() {
        // Exhaustive over the BMP's first planes that matter: the output never contains an
        // unsafe character, whatever came in.
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        assert!(is_clean(&sanitize(&all)));
        assert!(!sanitize_inline(&all).contains('\n'));
    }
}
