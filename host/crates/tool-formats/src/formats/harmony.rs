//! `harmony` (gpt-oss): `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`;
//! the analysis channel is reasoning. The detector is a channel state machine of its own
//! (`detect::harmony`).

use serde_json::{Map, Value, json};

use super::grammar::{Rules, args_schema, call_list, json_expr, lit};
use super::{Format, Grammar, Hints, LarkShape, ResultTurn};
use crate::convert::PromptStyle;
use crate::convert::ToolDef;
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
    grammar: Some(Grammar::Lark(LarkShape {
        calls: grammar,
        answer_excludes: "<",
        answer_not: &[],
        // A final-channel message, or plain text, after optional reasoning.
        answer_head: r#"analysis? (<|channel|> "final" <|message|>)?"#,
    })),
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

/// One call message after optional reasoning: `<|call|>` ends the turn, so there are no
/// parallel calls. The markers are special tokens of the harmony vocabulary; the reasoning text
/// may not spell one out.
fn grammar(tools: &[ToolDef], _parallel: bool) -> String {
    let mut r = Rules::default();
    call_list(tools, false, "", &mut r, |t, _| {
        format!(
            "<|channel|> {} <|constrain|> \"json\" <|message|> {} <|call|>",
            lit(&format!("commentary to=functions.{} ", t.name)),
            json_expr(&args_schema(t))
        )
    });
    r.named("THINK", r#"/[\s\S]*/ & ~(/[\s\S]*/ "<|" /[\s\S]*/)"#);
    r.named(
        "analysis",
        r#"<|channel|> "analysis" <|message|> THINK <|end|> <|start|> "assistant""#,
    );
    r.named("calls", "analysis? call_list");
    r.finish()
}
