//! Approval questions at the terminal (`rkmcp chat`): which server and tool, why rkmcp asks, the
//! arguments, then `Allow? [y] once  [s] for this session  [n] deny`.
//!
//! The question goes to stderr and the answer is one line read from stdin, so it needs no extra
//! crate and works with any terminal (a `dialoguer`-style menu would put the terminal in raw mode
//! and could not be abandoned when the turn is interrupted). End of input, a read error, or three
//! answers that are not `y`, `s` or `n` deny the call. Colours only when stderr is a terminal and
//! `NO_COLOR` is not set.
//!
//! The blocking read runs in `spawn_blocking`. On a terminal it waits with `poll` in short steps,
//! so when the turn is interrupted (the approval future is dropped) the reader gives up instead
//! of swallowing the next line meant for the chat prompt.
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::chat::approval::{ApprovalRequest, PromptAnswer, Prompter};

/// String values in the arguments longer than this many characters are cut for display.
pub const MAX_STRING_CHARS: usize = 2000;
/// Answers that are not `y`, `s` or `n` before the call is denied.
const MAX_TRIES: usize = 3;
const QUESTION: &str = "Allow? [y] once  [s] for this session  [n] deny: ";

/// Asks the person at the terminal (see the [module docs](self)).
pub struct TerminalPrompter {
    colour: bool,
}

impl TerminalPrompter {
    pub fn new() -> Self {
        TerminalPrompter {
            colour: std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal(),
        }
    }
}

impl Default for TerminalPrompter {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait::async_trait]
impl Prompter for TerminalPrompter {
    async fn ask(&self, request: &ApprovalRequest, why: &str) -> PromptAnswer {
        let text = render(request, why, self.colour);
        let colour = self.colour;
        let abandoned = Arc::new(AtomicBool::new(false));
        // Set when this future is dropped (turn interrupted) or finishes.
        let _stop = StopOnDrop(abandoned.clone());
        let asking = tokio::task::spawn_blocking(move || ask_blocking(&text, colour, &abandoned));
        asking.await.unwrap_or(PromptAnswer::Deny)
    }
}

struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The question as shown, without colours: server, tool, why, and the arguments
/// pretty-printed with long strings cut.
pub fn render_request(request: &ApprovalRequest, why: &str) -> String {
    render(request, why, false)
}

fn render(request: &ApprovalRequest, why: &str, colour: bool) -> String {
    let paint = |code: &str, text: &str| {
        if colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    let mut out = String::new();
    out.push_str(&paint("1;33", "Approve a tool call?"));
    out.push('\n');
    out.push_str(&format!("  server:    {}\n", printable(&request.server)));
    out.push_str(&format!("  tool:      {}", printable(&request.tool)));
    if request.exposed_name != format!("{}__{}", request.server, request.tool) {
        out.push_str(&paint(
            "2",
            &format!(
                "  (the model calls it {})",
                printable(&request.exposed_name)
            ),
        ));
    }
    out.push('\n');
    let why = printable_lines(why);
    let mut lines = why.lines();
    out.push_str(&format!("  why:       {}\n", lines.next().unwrap_or("")));
    for line in lines {
        out.push_str(&format!("             {line}\n"));
    }
    let (shown, cut) = cut_long_strings(&request.arguments, MAX_STRING_CHARS);
    let pretty = serde_json::to_string_pretty(&shown).unwrap_or_else(|_| shown.to_string());
    out.push_str("  arguments:\n");
    for line in pretty.lines() {
        out.push_str(&format!("    {line}\n"));
    }
    if cut > 0 {
        out.push_str(&paint(
            "2",
            &format!(
                "  ({cut} characters of long strings are not shown; each keeps its first {MAX_STRING_CHARS})"
            ),
        ));
        out.push('\n');
    }
    out
}

/// A copy of `value` whose strings longer than `max` characters keep their first `max` and a
/// notice; also returns how many characters were cut in total.
fn cut_long_strings(value: &Value, max: usize) -> (Value, usize) {
    fn walk(v: &Value, max: usize, cut: &mut usize) -> Value {
        match v {
            Value::String(s) => {
                let total = s.chars().count();
                if total <= max {
                    return v.clone();
                }
                let kept: String = s.chars().take(max).collect();
                *cut += total - max;
                Value::String(format!("{kept}… [{} more characters cut]", total - max))
            }
            Value::Array(items) => Value::Array(items.iter().map(|i| walk(i, max, cut)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), walk(v, max, cut)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut cut = 0;
    let shown = walk(value, max, &mut cut);
    (shown, cut)
}

/// Text from a server or plugin on one line, with control characters, bidi overrides and
/// isolates, direction marks and line separators escaped (see `rkmcp_term_safe`), so it cannot
/// move the cursor, clear the screen, fake a prompt or read in another order than it is.
pub(crate) fn printable(text: &str) -> String {
    rkmcp_term_safe::sanitize_inline(text).into_owned()
}

/// Like [`printable`], but keeps line breaks.
pub(crate) fn printable_lines(text: &str) -> String {
    text.split('\n')
        .map(printable)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `y`/`yes`, `s`/`session`, `n`/`no` (any case, surrounding blanks ignored); anything else is
/// `None` (ask again).
fn parse_answer(line: &str) -> Option<PromptAnswer> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(PromptAnswer::AllowOnce),
        "s" | "session" => Some(PromptAnswer::AllowSession),
        "n" | "no" => Some(PromptAnswer::Deny),
        _ => None,
    }
}

enum ReadLine {
    Line(String),
    /// End of input, a read error, or the question was abandoned.
    Nothing(&'static str),
}

fn ask_blocking(text: &str, colour: bool, abandoned: &AtomicBool) -> PromptAnswer {
    // stderr is not held locked while waiting: other tasks log there.
    let say = |s: &str| {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(s.as_bytes());
        let _ = err.flush();
    };
    say(&format!("\n{text}"));
    let question = if colour {
        format!("\x1b[1m{QUESTION}\x1b[0m")
    } else {
        QUESTION.to_string()
    };
    for _ in 0..MAX_TRIES {
        say(&question);
        match read_line(abandoned) {
            ReadLine::Line(line) => match parse_answer(&line) {
                Some(answer) => return answer,
                None => say("Please answer y, s or n.\n"),
            },
            ReadLine::Nothing(why) => {
                say(&format!("\n{why}: the call is denied.\n"));
                return PromptAnswer::Deny;
            }
        }
    }
    say("No valid answer: the call is denied.\n");
    PromptAnswer::Deny
}

fn read_line(abandoned: &AtomicBool) -> ReadLine {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        loop {
            if abandoned.load(Ordering::SeqCst) {
                return ReadLine::Nothing("interrupted");
            }
            match wait_readable(100) {
                Ok(true) => break,
                Ok(false) => {}
                Err(_) => return ReadLine::Nothing("the terminal cannot be read"),
            }
        }
    }
    let mut line = String::new();
    match stdin.lock().read_line(&mut line) {
        Ok(0) => ReadLine::Nothing("end of input"),
        Ok(_) => ReadLine::Line(line),
        Err(_) => ReadLine::Nothing("the answer cannot be read"),
    }
}

/// Waits up to `timeout_ms` for stdin to have input (or to be closed).
#[cfg(unix)]
fn wait_readable(timeout_ms: i32) -> std::io::Result<bool> {
    let mut fd = libc::pollfd {
        fd: libc::STDIN_FILENO,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `fd` is one valid pollfd that outlives the call; nfds = 1.
    let n = unsafe { libc::poll(&mut fd, 1, timeout_ms) };
    if n < 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(err);
    }
    // POLLHUP/POLLERR count as ready: the read then reports end of input or the error.
    Ok(n > 0)
}

#[cfg(not(unix))]
fn wait_readable(_timeout_ms: i32) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(arguments: Value) -> ApprovalRequest {
        ApprovalRequest {
            server: "fs".into(),
            tool: "write_file".into(),
            exposed_name: "fs__write_file".into(),
            arguments,
            annotations: None,
        }
    }

    #[test]
    fn renders_server_tool_why_and_pretty_arguments() {
        let text = render_request(
            &request(json!({"path": "/tmp/a.txt", "content": "hi"})),
            "the tool may modify data (destructiveHint)",
        );
        assert!(text.contains("  server:    fs\n"), "{text}");
        assert!(text.contains("  tool:      write_file\n"), "{text}");
        assert!(
            text.contains("  why:       the tool may modify data (destructiveHint)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "    {\n      \"content\": \"hi\",\n      \"path\": \"/tmp/a.txt\"\n    }\n"
            ) || text.contains(
                "    {\n      \"path\": \"/tmp/a.txt\",\n      \"content\": \"hi\"\n    }\n"
            ),
            "{text}"
        );
        assert!(!text.contains('\x1b'), "no colours: {text:?}");
        assert!(!text.contains("not shown"), "{text}");
        assert!(!text.contains("the model calls it"), "{text}");
    }

    #[test]
    fn cuts_long_strings_and_says_how_much() {
        let long = "é".repeat(5000);
        let text = render_request(&request(json!({"content": long, "n": [1, "x"]})), "why");
        assert!(text.contains("… [3000 more characters cut]"), "{text}");
        assert!(
            text.contains("3000 characters of long strings are not shown"),
            "{text}"
        );
        assert!(text.contains(&"é".repeat(2000)));
        assert!(!text.contains(&"é".repeat(2001)));
        let (_, cut) = cut_long_strings(&json!(["a".repeat(2001), {"k": "b".repeat(2500)}]), 2000);
        assert_eq!(cut, 501);
    }

    #[test]
    fn escapes_control_characters_and_indents_multi_line_reasons() {
        let mut r = request(json!({}));
        r.tool = "evil\x1b[2Jtool".into();
        r.exposed_name = "re\u{202e}named".into();
        let text = render_request(&r, "guard `g` asks: Sure?\nline two\x07\u{2066}");
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{2066}'),
            "{text:?}"
        );
        assert!(text.contains("evil\\x1b[2Jtool"), "{text}");
        assert!(
            text.contains("(the model calls it re\\u{202e}named)"),
            "{text}"
        );
        assert!(
            text.contains("\n             line two\\x07\\u{2066}\n"),
            "{text}"
        );
    }

    #[test]
    fn colours_only_when_asked() {
        let text = render(&request(json!({})), "why", true);
        assert!(
            text.starts_with("\x1b[1;33mApprove a tool call?\x1b[0m\n"),
            "{text:?}"
        );
    }

    #[test]
    fn parses_answers() {
        assert_eq!(parse_answer("y\n"), Some(PromptAnswer::AllowOnce));
        assert_eq!(parse_answer(" YES "), Some(PromptAnswer::AllowOnce));
        assert_eq!(parse_answer("s"), Some(PromptAnswer::AllowSession));
        assert_eq!(
            parse_answer("Session\r\n"),
            Some(PromptAnswer::AllowSession)
        );
        assert_eq!(parse_answer("n"), Some(PromptAnswer::Deny));
        assert_eq!(parse_answer("no"), Some(PromptAnswer::Deny));
        assert_eq!(parse_answer(""), None);
        assert_eq!(parse_answer("maybe"), None);
    }
}
