//! What the model is shown: the system prompt with the tool section, the grammar that constrains
//! a round, and the tool definitions in the form each format and backend expects.
use rkmcp_llm::BackendInfo;
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{
    GrammarMode, PromptStyle, ToolDef, gbnf_grammar_with, lark_grammar_with,
    render_tool_section_for, rkllm_function_tools_json,
};

use super::convert::PluginConversion;
use super::settings::{Auto, ChatSettings, ToolChoice, ToolDecision};

/// The pseudo-tool a model names to answer without a tool (`tool_decision = "explicit"`). It is
/// never run: the engine has the model answer instead.
pub const ANSWER_DIRECTLY: &str = "answer_directly";

/// The definition the model is shown for [`ANSWER_DIRECTLY`].
pub fn answer_directly_tool() -> ToolDef {
    ToolDef {
        name: ANSWER_DIRECTLY.to_string(),
        description: Some(
            "Answer the user yourself, without a tool: greetings, general knowledge, opinions, \
             or when no other tool fits the request."
                .to_string(),
        ),
        input_schema: serde_json::json!({"type": "object", "properties": {}}),
        annotations: None,
    }
}

/// Said before the tool section when the config has no `system_prompt`. Short on purpose: the
/// embedded model has a 2k-token window and the tool section comes after it.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant.";

/// The tools of one conversation in the form the model sees them, and how it is asked to call them.
#[derive(Debug, Clone)]
pub struct ToolPlan {
    pub format: ToolFormat,
    pub style: PromptStyle,
    /// Tool definitions under their exposed (namespaced) names.
    pub tools: Vec<ToolDef>,
    /// Whether some tool shares words with the user's message (set each turn). An explicit
    /// decision is asked for only then: a greeting should not have to name a tool.
    pub tools_match: bool,
    /// The converter plugin's tool section and grammar for these tools (set each turn when
    /// `[chat] converter` names one and it did not fail); `None`: the built-in converter's.
    pub converted: Option<PluginConversion>,
}

impl ToolPlan {
    /// Picks the call format and prompt style: the config's choice, else guessed from the model's
    /// chat template name and file name.
    pub fn new(settings: &ChatSettings, info: &BackendInfo, tools: Vec<ToolDef>) -> ToolPlan {
        let format = match settings.tool_format {
            Auto::Set(f) => f,
            Auto::Auto => guess_format(info),
        };
        let style = match settings.prompt_style {
            Auto::Set(s) => s,
            Auto::Auto => format.default_prompt_style(),
        };
        ToolPlan {
            format,
            style,
            tools,
            tools_match: true,
            converted: None,
        }
    }

    /// Whether tools are offered at all this turn.
    pub fn offers_tools(&self, settings: &ChatSettings) -> bool {
        !self.tools.is_empty() && settings.tool_choice != ToolChoice::None
    }

    /// Whether the model must name a tool or [`ANSWER_DIRECTLY`] first: `tool_decision =
    /// "explicit"` with `tool_choice = "auto"`, a message that shares words with some tool, and a
    /// grammar to hold it to that (constrained decoding on a backend with grammars, a format that
    /// has one, no user grammar).
    pub fn explicit_decision(&self, settings: &ChatSettings, backend_has_grammar: bool) -> bool {
        settings.tool_decision == ToolDecision::Explicit
            && self.tools_match
            && settings.tool_choice == ToolChoice::Auto
            && settings.constrained_decoding
            && settings.grammar.is_none()
            && backend_has_grammar
            && self.offers_tools(settings)
            && gbnf_grammar_with(self.format, &self.tools, GrammarMode::CallOnly).is_some()
    }

    /// The tools as the prompt lists them: with [`ANSWER_DIRECTLY`] last when the decision is
    /// explicit.
    pub fn listed_tools(&self, explicit: bool) -> Vec<ToolDef> {
        let mut tools = self.tools.clone();
        if explicit {
            tools.push(answer_directly_tool());
        }
        tools
    }
}

/// The format for a model nobody configured: from template markers, then the model's file name.
pub fn guess_format(info: &BackendInfo) -> ToolFormat {
    let model = info
        .model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    let template = template_markers(&info.chat_template);
    ToolFormat::guess(Some(template), model.as_deref())
}

/// Backends report the template's family by name (`chatml`, `jinja (qwen)`), not its source;
/// the guesser reads markers, so a family name stands for its defining markers. Anything else
/// (a template source from a runtime) is passed through.
fn template_markers(template: &str) -> &str {
    let family = template
        .strip_prefix("jinja (")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(template);
    match family {
        // Qwen's template is ChatML with Hermes-style `<tool_call>` blocks.
        "qwen" => "<|im_start|><tool_call>",
        "chatml" => "<|im_start|>",
        "llama3" => "<|start_header_id|>",
        "gemma" => "<start_of_turn>",
        _ => template,
    }
}

/// The whole system prompt: the configured (or default) prompt, then the tool section.
pub fn system_prompt(
    settings: &ChatSettings,
    plan: &ToolPlan,
    native_tools: bool,
    explicit: bool,
) -> String {
    let base = settings
        .system_prompt
        .as_deref()
        .unwrap_or(DEFAULT_SYSTEM_PROMPT)
        .trim();
    // A backend with native function calling puts the tool list into its own template.
    if !plan.offers_tools(settings) || native_tools {
        return base.to_string();
    }
    let section = match &plan.converted {
        Some(c) => c.section.trim_end().to_string(),
        None => render_tool_section_for(plan.style, plan.format, &plan.listed_tools(explicit)),
    };
    if explicit {
        format!("{base}\n\n{section}\nIf none of the tools fits, call {ANSWER_DIRECTLY}.")
    } else {
        format!("{base}\n\n{section}")
    }
}

/// The GBNF grammar for `round` (1-based) of a turn and what it allows, or `None` to let the
/// model write freely (or, for formats with only an llguidance grammar, to leave it to
/// [`guide_for`]: the name then still says what the round allows).
///
/// `tool_choice = required` forces a call in the first round only: after a result the model
/// must be able to answer.
pub fn grammar_for_round(
    settings: &ChatSettings,
    plan: &ToolPlan,
    backend_has_grammar: bool,
    round: u32,
    answer_only: bool,
) -> (Option<String>, &'static str) {
    if let Some(g) = &settings.grammar {
        return (Some(g.clone()), "user");
    }
    if !settings.constrained_decoding || !backend_has_grammar || !plan.offers_tools(settings) {
        return (None, "none");
    }
    let explicit = plan.explicit_decision(settings, backend_has_grammar);
    let (mode, name) = if answer_only {
        (GrammarMode::AnswerOnly, "answer-only")
    } else if settings.tool_choice == ToolChoice::Required && round == 1 {
        (GrammarMode::CallOnly, "call-only")
    } else if explicit && round == 1 {
        (GrammarMode::CallOnly, "tool-or-answer_directly")
    } else {
        (GrammarMode::CallOrAnswer, "call-or-answer")
    };
    // A converter plugin's grammar (a call or an answer, in the syntax its section teaches) holds
    // the rounds where the model may do either; a forced call and an answer-only round keep the
    // built-in grammar of the tool format, which the plugin's syntax must match to be read.
    if let (GrammarMode::CallOrAnswer, Some(c)) = (mode, &plan.converted) {
        return match &c.grammar {
            Some(g) => (Some(g.clone()), "converter plugin"),
            None => (None, "none"),
        };
    }
    let tools = plan.listed_tools(explicit && name == "tool-or-answer_directly");
    match gbnf_grammar_with(plan.format, &tools, mode) {
        Some(g) => (Some(g), name),
        // Formats whose grammar only llguidance can express: the round is named, and
        // [`guide_for`] gives the grammar when llguidance enforces it.
        None if lark_grammar_with(plan.format, &tools, mode).is_some() => (None, name),
        None => (None, "none"),
    }
}

/// The llguidance grammar allowing what the built-in GBNF grammar named `name` allows (as
/// [`grammar_for_round`] chose it for `plan`), or `None` where there is none: a user's or a
/// converter plugin's grammar (GBNF syntax), or a format without a grammar.
pub fn guide_for(plan: &ToolPlan, name: &str) -> Option<String> {
    let (mode, tools) = match name {
        "answer-only" => (GrammarMode::AnswerOnly, plan.tools.clone()),
        "call-only" => (GrammarMode::CallOnly, plan.tools.clone()),
        "tool-or-answer_directly" => (GrammarMode::CallOnly, plan.listed_tools(true)),
        "call-or-answer" => (GrammarMode::CallOrAnswer, plan.tools.clone()),
        _ => return None,
    };
    lark_grammar_with(plan.format, &tools, mode)
}

/// The tool list as RKLLM's `rkllm_set_function_tools` takes it, for backends with native tools.
pub fn native_tools_json(settings: &ChatSettings, plan: &ToolPlan) -> Option<String> {
    plan.offers_tools(settings)
        .then(|| rkllm_function_tools_json(&plan.tools))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn info(template: &str, model: &str) -> BackendInfo {
        BackendInfo {
            backend: "llama",
            model: PathBuf::from(model),
            chat_template: template.into(),
            context_length: 2048,
            capabilities: Default::default(),
            detail: String::new(),
        }
    }

    #[test]
    fn the_format_is_guessed_from_the_template_family_name() {
        let cases = [
            (
                "chatml",
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                ToolFormat::Hermes,
            ),
            (
                "jinja (chatml)",
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                ToolFormat::Hermes,
            ),
            ("jinja (qwen)", "model.gguf", ToolFormat::Hermes),
            ("llama3", "Llama-3.2-1B-Instruct.gguf", ToolFormat::Llama3),
            ("gemma", "model.gguf", ToolFormat::Gemma),
            // The model's name is more specific than the family resemblance.
            ("chatml", "Qwen3-Coder-30B.gguf", ToolFormat::Qwen3Coder),
            ("jinja", "unknown.gguf", ToolFormat::ToolCallJson),
        ];
        for (template, model, want) in cases {
            assert_eq!(
                guess_format(&info(template, model)),
                want,
                "{template} {model}"
            );
        }
    }
}
