//! The streaming detectors. Most formats are "marker blocks" (a start marker, a body, an end) and
//! share [`marker::MarkerDetector`]; formats where the call is the whole message share
//! [`whole::WholeDetector`]; harmony has its own channel state machine.

use crate::parse::Parsed;
use crate::{DetectorEvent, ToolCall, ToolCallDetector, ToolFormat};

mod formats;
mod harmony;
mod marker;
mod whole;

pub(crate) fn detector(format: ToolFormat) -> Box<dyn ToolCallDetector> {
    match format {
        ToolFormat::ToolCallJson => Box::new(marker::MarkerDetector::new(
            formats::TOOL_CALL_JSON,
            &["[END_TOOL_CALL]", "[/TOOL_CALL]"],
        )),
        ToolFormat::ToolCallXml => {
            Box::new(marker::MarkerDetector::new(formats::TOOL_CALL_XML, &[]))
        }
        ToolFormat::Hermes => Box::new(marker::MarkerDetector::new(
            formats::HERMES,
            &["</tool_call>"],
        )),
        ToolFormat::Qwen3Coder => Box::new(marker::MarkerDetector::new(
            formats::QWEN3_CODER,
            &["</tool_call>"],
        )),
        ToolFormat::Mistral => Box::new(marker::MarkerDetector::new(formats::MISTRAL, &[])),
        ToolFormat::Gemma => Box::new(marker::MarkerDetector::new(formats::GEMMA, &[])),
        ToolFormat::Deepseek => Box::new(marker::MarkerDetector::new(
            formats::DEEPSEEK,
            formats::DEEPSEEK_HIDDEN,
        )),
        ToolFormat::Granite => Box::new(marker::MarkerDetector::new(formats::GRANITE, &[])),
        ToolFormat::Llama3 => Box::new(whole::WholeDetector::new(&formats::LLAMA3)),
        ToolFormat::PlainJson => Box::new(whole::WholeDetector::new(&formats::PLAIN_JSON)),
        ToolFormat::Pythonic => Box::new(whole::WholeDetector::new(&formats::PYTHONIC)),
        ToolFormat::Harmony => Box::new(harmony::HarmonyDetector::default()),
    }
}

/// Deterministic call ids per detector session.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    count: u64,
}

impl Ids {
    pub(crate) fn events(&mut self, parsed: Vec<Parsed>, out: &mut Vec<DetectorEvent>) {
        for p in parsed {
            match p {
                Parsed::Call {
                    name,
                    arguments,
                    id,
                } => {
                    self.count += 1;
                    let id = id.unwrap_or_else(|| format!("call_{}", self.count));
                    out.push(DetectorEvent::ToolCall(ToolCall {
                        id,
                        name,
                        arguments,
                    }));
                }
                Parsed::Bad { raw, error } => out.push(DetectorEvent::Malformed { raw, error }),
            }
        }
    }
}

/// Pushes non-empty text.
pub(crate) fn push_text(out: &mut Vec<DetectorEvent>, s: &str) {
    if !s.is_empty() {
        out.push(DetectorEvent::Text(s.to_string()));
    }
}
