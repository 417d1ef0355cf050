//! Templates written for the tests (in the styles the field uses; no fetched files) and a
//! chunking checker.

#![allow(dead_code)]

pub mod lark;

use rkmcp_format_infer::InferredFormat;
use rkmcp_tool_formats::{DetectorEvent, DetectorOptions, normalize};
use serde_json::json;

/// A ChatML-like frame around `calls`, the Jinja that writes `m.tool_calls` (each `tc`), with
/// `<think>` reasoning and `<|im_end|>` turns. `{REASON}` in `calls` is not used.
pub fn chatml(calls: &str) -> String {
    frame("<|im_start|>", "<|im_end|>", "<think>", "</think>", calls)
}

/// A frame with the given turn markers and reasoning markers.
pub fn frame(start: &str, end: &str, think: &str, unthink: &str, calls: &str) -> String {
    format!(
        r#"{{%- for m in messages -%}}
{{%- if m.role == 'assistant' -%}}
{start}assistant
{{% if m.reasoning_content %}}{think}
{{{{ m.reasoning_content }}}}
{unthink}

{{% endif %}}{{{{ m.content }}}}{{% if m.tool_calls %}}{calls}{{% endif %}}{end}
{{% elif m.role == 'tool' -%}}
{start}tool
{{{{ m.content }}}}{end}
{{% else -%}}
{start}{{{{ m.role }}}}
{{{{ m.content }}}}{end}
{{% endif -%}}
{{%- endfor -%}}
{{%- if add_generation_prompt %}}{start}assistant
{{% endif -%}}"#
    )
}

/// Schemas of the tools the transcripts call.
pub fn options() -> DetectorOptions {
    let mut o = DetectorOptions::default();
    o.schemas.insert(
        "get_weather".into(),
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    );
    o.schemas.insert(
        "set_timer".into(),
        json!({"type": "object", "properties": {"minutes": {"type": "integer"}, "label": {"type": "string"}}}),
    );
    o
}

pub fn run(f: &InferredFormat, opts: &DetectorOptions, chunks: &[&str]) -> Vec<DetectorEvent> {
    let mut d = f.detector(opts).expect("valid description");
    let mut ev = Vec::new();
    for c in chunks {
        ev.extend(d.feed(c));
    }
    ev.extend(d.finish());
    normalize(ev)
}

/// The events of `text` fed whole; panics unless every two-way split and char-by-char feeding
/// give the same.
pub fn events_any_chunking(
    f: &InferredFormat,
    opts: &DetectorOptions,
    text: &str,
) -> Vec<DetectorEvent> {
    let whole = run(f, opts, &[text]);
    for (i, _) in text.char_indices().skip(1) {
        let split = run(f, opts, &[&text[..i], &text[i..]]);
        assert_eq!(split, whole, "split at byte {i} of {text:?}");
    }
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(run(f, opts, &chars), whole, "char by char: {text:?}");
    whole
}
