//! The tool-call format for a model: a format module where the template's call syntax or the
//! model's name names one, else the format inferred from the template, else the modules' guess
//! from the template's family (or the fallback) with a notice that says why.

use rkmcp_tool_formats::ToolFormat;

use crate::{InferredFormat, infer_with};

/// What reads a model's tool calls.
#[derive(Debug, Clone, PartialEq)]
pub enum FormatChoice {
    /// A hand-written module the template or the model name points at.
    Known(ToolFormat),
    /// Read from the template.
    Inferred(Box<InferredFormat>),
    /// Nothing matched and the template could not be read: the modules' family guess or the
    /// fallback, and why the template could not be read.
    Fallback { format: ToolFormat, reason: String },
}

/// Chooses the format for a model whose template is `template` (Jinja source, with its special
/// tokens) and whose file or model name is `model`.
pub fn choose_format(template: Option<(&str, &str, &str)>, model: Option<&str>) -> FormatChoice {
    let source = template.map(|(s, _, _)| s);
    if let Some(f) = ToolFormat::guess_matched(source, model) {
        return FormatChoice::Known(f);
    }
    let format = ToolFormat::guess(source, model);
    let reason = match template {
        None => "the model has no chat template to read a tool-call format from".to_string(),
        Some((source, bos, eos)) => match infer_with(source, bos, eos) {
            Ok(f) => return FormatChoice::Inferred(Box::new(f)),
            Err(e) => e.to_string(),
        },
    };
    FormatChoice::Fallback { format, reason }
}

impl FormatChoice {
    /// What to tell the user when the choice is a fallback.
    pub fn notice(&self) -> Option<String> {
        match self {
            FormatChoice::Fallback { format, reason } => {
                Some(format!("{reason}; reading tool calls as `{format}`"))
            }
            _ => None,
        }
    }
}
