use serde_json::json;

use super::*;
use crate::{DetectorEvent, DetectorOptions, ToolCall, normalize};

fn hermes_like() -> InferredFormat {
    InferredFormat {
        section_open: String::new(),
        section_close: String::new(),
        call_open: "<call>".into(),
        call_close: "</call>".into(),
        call_separator: String::new(),
        parallel: true,
        anchored: false,
        call: CallSyntax::JsonObject {
            name_key: "name".into(),
            arguments_key: "arguments".into(),
        },
        reasoning: Some(Markers {
            open: "<think>".into(),
            close: "</think>".into(),
        }),
        end_of_turn: vec!["<|end|>".into()],
        tool_result: None,
        message_open: String::new(),
    }
}

fn run(f: &InferredFormat, chunks: &[&str]) -> Vec<DetectorEvent> {
    let mut d = f.detector(&DetectorOptions::default()).unwrap();
    let mut ev = Vec::new();
    for c in chunks {
        ev.extend(d.feed(c));
    }
    ev.extend(d.finish());
    normalize(ev)
}

fn call(id: &str, name: &str, args: serde_json::Value) -> DetectorEvent {
    DetectorEvent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    })
}

#[test]
fn json_calls_between_markers_in_any_chunking() {
    let f = hermes_like();
    let text = "<think>plan</think>Sure. <call>{\"name\": \"f\", \"arguments\": {\"a\": \"</call>\"}}</call> <call>{bad}</call> done<|end|>";
    let want = vec![
        DetectorEvent::Reasoning("plan".into()),
        DetectorEvent::Text("Sure. ".into()),
        call("call_1", "f", json!({"a": "</call>"})),
        DetectorEvent::Text(" ".into()),
        DetectorEvent::Malformed {
            raw: "<call>{bad}</call>".into(),
            error: "invalid JSON: key must be a string at line 1 column 2".into(),
        },
        DetectorEvent::Text(" done".into()),
    ];
    assert_eq!(run(&f, &[text]), want);
    for (i, _) in text.char_indices().skip(1) {
        assert_eq!(run(&f, &[&text[..i], &text[i..]]), want, "split at {i}");
    }
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(run(&f, &chars), want);
}

#[test]
fn description_round_trips_through_json() {
    let f = hermes_like();
    let text = serde_json::to_string(&f).unwrap();
    assert_eq!(serde_json::from_str::<InferredFormat>(&text).unwrap(), f);
}
