//! What the host makes of a plugin's results, before anything else in rkmcp sees them. Pure
//! functions on plain strings (no wasmtime types), so they are unit-tested and fuzzed on their
//! own (`fuzz/fuzz_targets/wit_boundary.rs`).
//!
//! - Text meant for people (model text from a detector, refusal reasons, questions, errors) is
//!   cleaned of control sequences: a plugin must not drive the user's terminal.
//! - A tool call whose arguments are not a JSON object becomes `Malformed`, exactly as a native
//!   detector would report it.
use rkmcp_tool_formats::{DetectorEvent, ToolCall};

/// Longest reason or error kept from a plugin; the rest is cut (with a note).
pub const MAX_REASON: usize = 2048;

/// A refusal reason, question or error message: one line, no control sequences, bounded.
pub fn reason(message: String) -> String {
    let mut clean = rkmcp_term_safe::sanitized_inline(message);
    if clean.len() > MAX_REASON {
        let mut cut = MAX_REASON;
        while !clean.is_char_boundary(cut) {
            cut -= 1;
        }
        clean.truncate(cut);
        clean.push_str(" [cut]");
    }
    clean
}

/// A detector's text event: model output the user will read.
pub fn text(t: String) -> DetectorEvent {
    DetectorEvent::Text(rkmcp_term_safe::sanitized(t))
}

/// A detector's reasoning event (contract 0.2.0): model output the user may read, dimmed.
pub fn reasoning(t: String) -> DetectorEvent {
    DetectorEvent::Reasoning(rkmcp_term_safe::sanitized(t))
}

/// A detector's tool call. The name and id are shown in approval prompts: one line, clean.
pub fn tool_call(id: String, name: String, arguments_json: String) -> DetectorEvent {
    let name = rkmcp_term_safe::sanitized_inline(name);
    match serde_json::from_str::<serde_json::Value>(&arguments_json) {
        Ok(arguments) if arguments.is_object() => DetectorEvent::ToolCall(ToolCall {
            id: rkmcp_term_safe::sanitized_inline(id),
            name,
            arguments,
        }),
        _ => DetectorEvent::Malformed {
            raw: rkmcp_term_safe::sanitized(arguments_json),
            error: format!("the arguments of tool call `{name}` are not a JSON object"),
        },
    }
}

/// A detector's report of a call it could not read.
pub fn malformed(raw: String, error: String) -> DetectorEvent {
    DetectorEvent::Malformed {
        raw: rkmcp_term_safe::sanitized(raw),
        error: reason(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_one_clean_bounded_line() {
        let r = reason("no\n[rkmcp: all tool calls approved]\x1b[2J".into());
        assert_eq!(r, "no\\n[rkmcp: all tool calls approved]\\x1b[2J");
        let long = reason("é".repeat(MAX_REASON));
        assert!(
            long.len() <= MAX_REASON + 6 && long.ends_with(" [cut]"),
            "{}",
            long.len()
        );
    }

    #[test]
    fn text_keeps_lines_but_not_escapes() {
        assert_eq!(
            text("a\nb\x1b]0;t\x07".into()),
            DetectorEvent::Text("a\nb\\x1b]0;t\\x07".into())
        );
    }

    #[test]
    fn calls_need_object_arguments() {
        match tool_call("1".into(), "t\x1b".into(), "{\"a\":1}".into()) {
            DetectorEvent::ToolCall(c) => {
                assert_eq!(c.name, "t\\x1b");
                assert_eq!(c.arguments, serde_json::json!({"a": 1}));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            tool_call("1".into(), "t".into(), "[1]".into()),
            DetectorEvent::Malformed { .. }
        ));
    }
}
