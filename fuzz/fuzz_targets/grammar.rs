//! The grammar and schema generator on any JSON schema: a tools list whose `inputSchema` is the
//! fuzzed JSON value (and the raw text as a tools list). For every format and grammar mode it
//! must not panic (GBNF and llguidance grammars alike), and every GBNF grammar must be well
//! formed: one `name ::= body` rule per line, a `root` rule, and every rule it references defined.
#![no_main]
use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{
    GrammarMode, convert_tools, gbnf_grammar_with, lark_grammar_with, parse_tools_json,
};

/// Rule names defined and referenced in a GBNF text (references outside literals and classes).
fn check_grammar(g: &str) -> Result<(), String> {
    let mut defined = BTreeSet::new();
    let mut used = BTreeSet::new();
    for line in g
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    {
        let (name, body) = line
            .split_once("::=")
            .ok_or_else(|| format!("line without `::=`: {line:?}"))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("bad rule name {name:?}"));
        }
        defined.insert(name.to_string());
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' => loop {
                    match chars.next() {
                        Some('\\') => {
                            chars.next();
                        }
                        Some('"') => break,
                        Some(_) => {}
                        None => return Err(format!("unclosed literal in rule {name}")),
                    }
                },
                '[' => loop {
                    match chars.next() {
                        Some('\\') => {
                            chars.next();
                        }
                        Some(']') => break,
                        Some(_) => {}
                        None => return Err(format!("unclosed class in rule {name}")),
                    }
                },
                c if c.is_ascii_alphabetic() => {
                    let mut id = c.to_string();
                    while let Some(&n) = chars.peek() {
                        if n.is_ascii_alphanumeric() || n == '-' {
                            id.push(n);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    used.insert(id);
                }
                _ => {}
            }
        }
    }
    if !defined.contains("root") {
        return Err("no root rule".into());
    }
    match used.difference(&defined).next() {
        Some(missing) => Err(format!("rule `{missing}` is used but not defined")),
        None => Ok(()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut candidates = Vec::new();
    if let Ok(tools) = parse_tools_json(text) {
        candidates.push(tools);
    }
    if let Ok(schema) = serde_json::from_str::<serde_json::Value>(text) {
        let list = serde_json::json!([{"name": "t", "description": "d", "inputSchema": schema}]);
        if let Ok(tools) = parse_tools_json(&list.to_string()) {
            candidates.push(tools);
        }
    }
    for tools in candidates {
        for &format in ToolFormat::all() {
            let c = convert_tools(format, None, &tools);
            if let Some(schema) = &c.json_schema {
                serde_json::from_str::<serde_json::Value>(schema).expect("the call schema is JSON");
            }
            for mode in [
                GrammarMode::CallOrAnswer,
                GrammarMode::CallOnly,
                GrammarMode::AnswerOnly,
            ] {
                if let Some(g) = gbnf_grammar_with(format, &tools, mode) {
                    if let Err(e) = check_grammar(&g) {
                        panic!("{format} {mode:?}: {e}\n{g}");
                    }
                }
                // The llguidance grammars (every format has one): built without panicking on
                // any schema; whether llguidance compiles them is the crate's own test.
                let _ = lark_grammar_with(format, &tools, mode);
            }
        }
    }
});
