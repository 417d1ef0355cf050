//! `qwen3-coder` (Qwen3-Coder, Qwen3.5):
//! `<tool_call><function=f><parameter=a>v</parameter></function></tool_call>`, values as text
//! typed by the tool's schema.

use serde_json::{Map, Value};

use super::grammar::{Rules, call_list, lit, text_until, xml_args};
use super::{Format, Grammar, Hints, LarkShape, THINK, tool_response_result, xml_text};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
use crate::detect::bodies::{FUNCTION_TAGS, qwen_end, qwen_functions};
use crate::detect::marker::{Block, End, MarkerDetector};

pub(crate) static FORMAT: Format = Format {
    name: "qwen3-coder",
    detector: |s| Box::new(MarkerDetector::new(QWEN3_CODER, &["</tool_call>"], s)),
    reasoning: THINK,
    end_tokens: &["<|im_end|>", "<|endoftext|>"],
    // Qwen3.5 may start its calls inside its reasoning, without closing it.
    reasoning_ends: &["<tool_call>\n<function=", "<tool_call><function="],
    example,
    instructions: "To call a function, write <tool_call><function=NAME> with one <parameter=NAME> element per argument",
    result: tool_response_result,
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        answer_head: "",
    })),
    prompt_style: PromptStyle::Hermes,
    hints: Hints {
        template: &[("<function=", 30), ("<parameter=", 30)],
        // Qwen3.5 was trained on the Qwen3-Coder XML form.
        names: &[("qwen3coder", 10), ("qwen35", 10)],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    let a: String = args
        .iter()
        .map(|(k, v)| format!("<parameter={k}>\n{}\n</parameter>\n", xml_text(v)))
        .collect();
    format!("<tool_call>\n<function={name}>\n{a}</function>\n</tool_call>")
}

pub(crate) static QWEN3_CODER: &[Block] = &[
    Block {
        start: "<tool_call>",
        end: End::Finder {
            find: qwen_end,
            // A JSON body can end on any character (`json_or_marker_end`): re-run on every chunk.
            closers: "",
        },
        parse: qwen_functions,
    },
    FUNCTION_TAGS[0],
    FUNCTION_TAGS[1],
];

/// One `<tool_call>` per call; a text value sits between the newlines the example writes and
/// cannot contain `</parameter>`. The tags are literals (ordinary tokens or text in Qwen's
/// vocabulary).
fn grammar(tools: &[ToolDef], parallel: bool) -> String {
    const CLOSE: &str = "\n</parameter>";
    let mut r = Rules::default();
    let text = text_until(&mut r, CLOSE, &["</parameter>"]);
    call_list(tools, parallel, "WS?", &mut r, |t, r| {
        let args = xml_args(t, &text, CLOSE, "", r, |name, value, _| {
            format!("{} {value} WS?", lit(&format!("<parameter={name}>\n")))
        });
        format!(
            "\"<tool_call>\" WS? {} WS? {args} \"</function>\" WS? \"</tool_call>\"",
            lit(&format!("<function={}>", t.name))
        )
    });
    r.named("calls", "call_list");
    r.finish()
}
