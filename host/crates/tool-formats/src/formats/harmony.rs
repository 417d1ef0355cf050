//! `harmony` (gpt-oss): `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`;
//! the analysis channel is reasoning. The detector is a channel state machine of its own
//! (`detect::harmony`).

use serde_json::{Map, Value, json};

use super::{Format, Hints, ResultTurn};
use crate::convert::PromptStyle;
use crate::detect::harmony::HarmonyDetector;

pub(crate) static FORMAT: Format = Format {
    name: "harmony",
    detector: |s| Box::new(HarmonyDetector::new(s)),
    // Reasoning is the analysis channel, read by the detector itself.
    reasoning: &[],
    // The channel state machine reads its own end tokens.
    end_tokens: &[],
    reasoning_ends: &[],
    example,
    instructions: "To call a function, send a commentary message to=functions.NAME with JSON arguments",
    result,
    grammar: None,
    prompt_style: PromptStyle::Markdown,
    hints: Hints {
        template: &[("<|channel|>", 60), ("<|constrain|>", 60)],
        names: &[("gptoss", 30)],
        family: &[],
    },
};

fn example(name: &str, args: &Map<String, Value>) -> String {
    let args = Value::Object(args.clone());
    format!("<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>")
}

fn result(r: &ResultTurn) -> String {
    format!(
        "<|start|>functions.{} to=assistant<|channel|>commentary<|message|>{}<|end|>",
        r.name,
        json!(r.body)
    )
}
