//! Property tests: chunking never changes the normalized events, random input never panics,
//! text is never invented, and text without markers comes back verbatim.

mod common;

use common::{cases, run_chunks, split_at};
use proptest::prelude::*;
use rkmcp_tool_formats::{DetectorEvent, ToolFormat, normalize};

fn format_strategy() -> impl Strategy<Value = ToolFormat> {
    proptest::sample::select(ToolFormat::all().to_vec())
}

/// Pieces of every format's syntax plus ordinary text, to build inputs full of near-misses.
const FRAGMENTS: &[&str] = &[
    "[TOOL_CALL]",
    "[END_TOOL_CALL]",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<tool_call>",
    "</tool_call>",
    "<tool_call name=\"f\">",
    "<argument name=\"a\">",
    "</argument>",
    "<function=f>",
    "</function>",
    "<parameter=p>",
    "</parameter>",
    "<|python_tag|>",
    "<|eom_id|>",
    "<|python_start|>",
    "<|python_end|>",
    "```tool_code\n",
    "```",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>",
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|call|>",
    "<|end|>",
    "<|return|>",
    "<|constrain|>",
    "to=functions.f ",
    "<|tool_call|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|\"|>",
    "call:f{",
    "a:",
    "<start_function_call>",
    "<end_function_call>",
    "<escape>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "functions.f:0",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|tool_calls_section_end|>",
    "<｜DSML｜function_calls>",
    "<｜DSML｜invoke name=\"f\">",
    "<｜DSML｜parameter name=\"a\" string=\"true\">",
    "</｜DSML｜parameter>",
    "</｜DSML｜invoke>",
    "</｜DSML｜function_calls>",
    "<｜DSML｜ calls>",
    "<｜DSML｜ invoke name=\"f\">",
    "<｜DSML｜ parameter name=\"a\" string=\"false\">",
    "</｜DSML｜ parameter>",
    "</｜DSML｜ invoke>",
    "</｜DSML｜ calls>",
    "<|open|>think<|sep|>",
    "<|close|>think<|sep|>",
    "<|open|>message<|sep|>",
    "<|close|>message<|sep|>",
    "<|open|>tools<|sep|>",
    "<|open|>call tool=\"f\" index=\"1\"<|sep|>",
    "<|open|>argument key=\"a\" type=\"string\"<|sep|>",
    "<|close|>argument<|sep|>",
    "<|close|>call<|sep|>",
    "<|close|>tools<|sep|>",
    "functools",
    "<|tool_call_start|>",
    "<code>",
    "</code>",
    "<think>",
    "</think>",
    "[THINK]",
    "[/THINK]",
    "<|channel>thought",
    "<channel|>",
    " to=functions.f",
    "{\"name\": \"f\", ",
    "\"arguments\": {\"a\": 1}}",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "f(a=1)",
    "\"",
    "'",
    ";",
    ",",
    "\n",
    " ",
    "hello",
    "東京",
    "🌍",
    "<",
    "｜",
    "▁",
    "|>",
    "x",
];

fn fragment_text() -> impl Strategy<Value = String> {
    prop::collection::vec(proptest::sample::select(FRAGMENTS.to_vec()), 0..40)
        .prop_map(|v| v.concat())
}

/// Are the `Text` events (as emitted, before merging) ordered, non-overlapping slices of `input`?
fn texts_are_ordered_slices(input: &str, events: &[DetectorEvent]) -> bool {
    let mut pos = 0;
    for e in events {
        if let DetectorEvent::Text(t) = e {
            match input[pos..].find(t.as_str()) {
                Some(p) => pos += p + t.len(),
                None => return false,
            }
        }
    }
    true
}

fn one_shot_raw(format: ToolFormat, input: &str) -> Vec<DetectorEvent> {
    let mut d = format.detector();
    let mut ev = d.feed(input);
    ev.extend(d.finish());
    ev
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn corpus_random_chunkings_match_one_shot(idx in any::<prop::sample::Index>(), cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let all = cases();
        let case = &all[idx.index(all.len())];
        let len = case.input.len().max(1);
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (len + 1)).collect();
        let whole = run_chunks(case.format, [case.input.as_str()]);
        let chunked = run_chunks(case.format, split_at(&case.input, &cuts));
        prop_assert_eq!(chunked, whole, "{}/{} cut at {:?}", case.format, case.name, cuts);
    }

    #[test]
    fn text_without_markers_comes_back_verbatim(format in format_strategy(), text in "[a-zA-Z0-9 .,;:!?'\"()\n\t|=_éü東京｜▁🌍-]{0,200}", cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        let events = run_chunks(format, split_at(&text, &cuts));
        let expected = if text.is_empty() { vec![] } else { vec![DetectorEvent::Text(text.clone())] };
        prop_assert_eq!(events, expected);
    }

    #[test]
    fn fragment_soup_is_chunking_independent_and_invents_no_text(format in format_strategy(), text in fragment_text(), cuts in prop::collection::vec(any::<usize>(), 0..10)) {
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        let raw = one_shot_raw(format, &text);
        prop_assert!(texts_are_ordered_slices(&text, &raw), "{format}: text not from input: {raw:?}");
        for e in &raw {
            if let DetectorEvent::ToolCall(c) = e {
                prop_assert!(c.arguments.is_object() && !c.name.is_empty());
            }
        }
        let chunked = run_chunks(format, split_at(&text, &cuts));
        prop_assert_eq!(chunked, normalize(raw), "{} cut at {:?}", format, cuts);
    }

    #[test]
    fn arbitrary_unicode_never_panics(format in format_strategy(), text in any::<String>(), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        let chunked = run_chunks(format, split_at(&text, &cuts));
        let whole = run_chunks(format, [text.as_str()]);
        prop_assert_eq!(chunked, whole);
    }
}

#[test]
fn detector_is_reusable_and_ids_keep_counting() {
    let mut d = ToolFormat::Hermes.detector();
    let mut ev = d.feed("<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>");
    ev.extend(d.finish());
    ev.extend(d.feed("x <tool_call>{\"name\":\"b\",\"arguments\":{}}</tool_call>"));
    ev.extend(d.finish());
    let ids: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            DetectorEvent::ToolCall(c) => Some(c.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_1", "call_2"]);
}

#[test]
fn text_is_emitted_promptly_and_only_marker_prefixes_are_held() {
    let mut d = ToolFormat::Hermes.detector();
    assert_eq!(
        d.feed("Hello wor"),
        vec![DetectorEvent::Text("Hello wor".into())]
    );
    assert_eq!(d.feed("ld <tool_"), vec![DetectorEvent::Text("ld ".into())]);
    assert_eq!(d.feed("x"), vec![DetectorEvent::Text("<tool_x".into())]);
    let mut d = ToolFormat::Deepseek.detector();
    assert_eq!(
        d.feed("ok <｜tool▁"),
        vec![DetectorEvent::Text("ok ".into())]
    );
    assert!(
        d.feed("calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}")
            .is_empty()
    );
    let ev = d.feed("<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
    assert!(
        matches!(&ev[..], [DetectorEvent::ToolCall(c)] if c.name == "f"),
        "{ev:?}"
    );
    // Whole-message formats stream text at once when the message cannot be a call.
    let mut d = ToolFormat::Llama3.detector();
    assert_eq!(
        d.feed("The answer"),
        vec![DetectorEvent::Text("The answer".into())]
    );
    let mut d = ToolFormat::PlainJson.detector();
    assert!(d.feed("{\"na").is_empty());
    let mut d = ToolFormat::PlainJson.detector();
    assert_eq!(d.feed("{ oops"), vec![DetectorEvent::Text("{ oops".into())]);
}
