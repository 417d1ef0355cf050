//! Guessing the tool-call format from a chat template and/or model name.

use crate::ToolFormat;

/// Template markers, most specific first: a template that mentions the exact call syntax wins
/// over any family resemblance.
const TEMPLATE_MARKERS: &[(&str, ToolFormat)] = &[
    ("[TOOL_CALL]", ToolFormat::ToolCallJson),
    ("<argument name=", ToolFormat::ToolCallXml),
    ("<tool_call name=", ToolFormat::ToolCallXml),
    ("<function=", ToolFormat::Qwen3Coder),
    ("<parameter=", ToolFormat::Qwen3Coder),
    ("tool▁calls▁begin", ToolFormat::Deepseek),
    ("tool▁call▁begin", ToolFormat::Deepseek),
    ("<|channel|>", ToolFormat::Harmony),
    ("<|constrain|>", ToolFormat::Harmony),
    ("[TOOL_CALLS]", ToolFormat::Mistral),
    ("<|tool_call|>", ToolFormat::Granite),
    ("<tool_call>", ToolFormat::Hermes),
    ("<|python_start|>", ToolFormat::Pythonic),
    ("[func_name1(", ToolFormat::Pythonic),
    ("<|python_tag|>", ToolFormat::Llama3),
    ("tool_code", ToolFormat::Gemma),
];

/// Model-name fragments (lowercase, matched after removing `-`, `_`, `.` and spaces), most
/// specific first.
const NAME_MARKERS: &[(&str, ToolFormat)] = &[
    ("qwen3coder", ToolFormat::Qwen3Coder),
    ("gptoss", ToolFormat::Harmony),
    ("deepseek", ToolFormat::Deepseek),
    ("granite", ToolFormat::Granite),
    ("mistral", ToolFormat::Mistral),
    ("mixtral", ToolFormat::Mistral),
    ("ministral", ToolFormat::Mistral),
    ("magistral", ToolFormat::Mistral),
    ("devstral", ToolFormat::Mistral),
    ("codestral", ToolFormat::Mistral),
    ("gemma", ToolFormat::Gemma),
    ("llama4", ToolFormat::Pythonic),
    ("llama32", ToolFormat::Llama3),
    ("llama31", ToolFormat::Llama3),
    ("llama33", ToolFormat::Llama3),
    ("llama3", ToolFormat::Llama3),
    ("hermes", ToolFormat::Hermes),
    ("qwen", ToolFormat::Hermes),
    ("qwq", ToolFormat::Hermes),
    ("smollm3", ToolFormat::Hermes),
];

pub(crate) fn guess(chat_template: Option<&str>, model_name: Option<&str>) -> ToolFormat {
    if let Some(t) = chat_template {
        // Several markers may appear (e.g. a Qwen3-Coder template also contains `<tool_call>`):
        // the table order decides, not the position in the template.
        if let Some((_, f)) = TEMPLATE_MARKERS.iter().find(|(m, _)| t.contains(m)) {
            return *f;
        }
        // Llama 3.1-style JSON calls without the python tag.
        if t.contains("<|start_header_id|>") && t.contains("\"parameters\"") {
            return ToolFormat::Llama3;
        }
    }
    if let Some(n) = model_name {
        let squashed: String = n
            .to_lowercase()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '.' | ' '))
            .collect();
        if let Some((_, f)) = NAME_MARKERS.iter().find(|(m, _)| squashed.contains(m)) {
            return *f;
        }
    }
    if let Some(t) = chat_template {
        // Family resemblance only: ChatML models are mostly trained on Hermes-style calls, and
        // the Hermes form worked better than the bracket form with SmolLM2 here.
        if t.contains("<|im_start|>") {
            return ToolFormat::Hermes;
        }
        if t.contains("<|start_header_id|>") {
            return ToolFormat::Llama3;
        }
        if t.contains("<start_of_turn>") {
            return ToolFormat::Gemma;
        }
        if t.contains("[INST]") {
            return ToolFormat::Mistral;
        }
    }
    ToolFormat::ToolCallJson
}
