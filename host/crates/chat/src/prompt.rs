//! What the model is shown: the system prompt with the tool section, the grammar that constrains
//! a round, and the tool definitions in the form each format and backend expects.
use std::sync::Arc;

use rkmcp_format_infer::{FormatChoice, InferredFormat, choose_format, model_template};
use rkmcp_llm::BackendInfo;
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{
    GrammarMode, Grounding, PromptStyle, ToolDef, gbnf_grammar_with, lark_grammar_grounded,
    lark_grammar_with, render_tool_section_for, rkllm_function_tools_json,
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
    /// The call format read from the model's own chat template, when no format module matches
    /// it: it reads the model's calls and teaches the prompt's example; `format` then only
    /// shapes the tool results and the history.
    pub inferred: Option<Arc<InferredFormat>>,
    /// Why the format is only a guess (the template could not be read), said once in the chat.
    pub format_notice: Option<String>,
}

impl ToolPlan {
    /// Picks the call format and prompt style: the config's choice, else guessed from the model's
    /// chat template name and file name.
    pub fn new(settings: &ChatSettings, info: &BackendInfo, tools: Vec<ToolDef>) -> ToolPlan {
        let (format, inferred, format_notice) = match settings.tool_format {
            Auto::Set(f) => (f, None, None),
            Auto::Auto => choose_for(info),
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
            inferred,
            format_notice,
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
            && self.inferred.is_none()
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

/// The format for a model nobody configured: a module the chat template's call syntax or the
/// model's name points at; else, for a GGUF model rendered with its own Jinja template, the
/// format inferred from that template (read from the file's header); else the guess of
/// [`guess_format`], with a notice saying why when a template could not be read.
pub fn choose_for(info: &BackendInfo) -> (ToolFormat, Option<Arc<InferredFormat>>, Option<String>) {
    let guessed = guess_format(info);
    let own_jinja = info.chat_template.starts_with("jinja");
    let gguf = info
        .model
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
    if !own_jinja || !gguf {
        return (guessed, None, None);
    }
    let model = info
        .model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    let t = match model_template(&info.model) {
        Ok(t) => t,
        Err(e) => {
            // The backend loaded the model; a header this reader cannot follow is no news.
            tracing::debug!("reading the chat template for the tool-call format: {e}");
            return (guessed, None, None);
        }
    };
    match choose_format(
        Some((&t.source, &t.bos_token, &t.eos_token)),
        model.as_deref(),
    ) {
        FormatChoice::Known(f) => (f, None, None),
        FormatChoice::Inferred(f) => (guessed, Some(Arc::from(f)), None),
        // Said only for a template that writes tool calls: one without (SmolLM2's) has
        // nothing to read.
        FormatChoice::Fallback { reason, .. } if t.source.contains("tool_call") => (
            guessed,
            None,
            Some(format!("{reason}; reading tool calls as `{guessed}`")),
        ),
        FormatChoice::Fallback { .. } => (untaught_format(guessed, &info.model), None, None),
    }
}

/// The format for a model whose template writes no tool calls, so nothing taught it one: a
/// tiny model gets `tool-call-json` (one JSON object after a plain marker, no special tokens);
/// a bigger one keeps the guess from its template's family (Hermes for ChatML).
///
/// Measured with SmolLM2-135M (tool_eval, 40 questions of each part, explicit decision, `auto`
/// shortlist and grounding): chosen on the tuning part, where `tool-call-json` called the right
/// tool for 89% against Hermes' 74%, with the expected values for 54% against 37% and 60%
/// against 40% of the no-tool questions, with 163 fewer prompt tokens; the held-out part, never
/// used to choose, agreed: 79% / 30% / 71% against 70% / 21% / 57%. Bigger models are not
/// measured, so they keep the convention their template's family has.
fn untaught_format(guessed: ToolFormat, model: &std::path::Path) -> ToolFormat {
    let bytes = std::fs::metadata(model).ok().map(|m| m.len());
    if guessed == ToolFormat::Hermes && super::settings::is_tiny(bytes) {
        ToolFormat::ToolCallJson
    } else {
        guessed
    }
}

/// The tool section for a format read from the template: the tools, and an exact call in the
/// template's own syntax.
fn inferred_section(f: &InferredFormat, tools: &[ToolDef]) -> String {
    let mut out = String::from("You can call these tools:\n");
    for t in tools {
        let line = serde_json::json!({
            "name": t.name,
            "description": t.description,
            "parameters": t.input_schema,
        });
        out.push_str(&format!("{line}\n"));
    }
    if let Some(t) = tools.first() {
        let args: serde_json::Map<String, serde_json::Value> = t
            .input_schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .and_then(|p| p.keys().next())
            .map(|k| (k.clone(), serde_json::Value::String("...".into())))
            .into_iter()
            .collect();
        out.push_str(&format!(
            "To call a tool, reply with the call and nothing else, exactly like this:\n{}\n",
            f.example(&t.name, &args)
        ));
    }
    out
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
    let section = match (&plan.converted, &plan.inferred) {
        (Some(c), _) => c.section.trim_end().to_string(),
        (None, Some(f)) => inferred_section(f, &plan.listed_tools(explicit))
            .trim_end()
            .to_string(),
        (None, None) => {
            render_tool_section_for(plan.style, plan.format, &plan.listed_tools(explicit))
        }
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
    // A format read from the template has an llguidance grammar only (see [`guide_for`]); the
    // module's grammar would hold the model to another syntax.
    if let Some(f) = &plan.inferred {
        return match mode {
            GrammarMode::AnswerOnly => (None, "none"),
            _ if f.lark_grammar(&tools, true).is_some() => (None, name),
            _ => (None, "none"),
        };
    }
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
pub fn guide_for(plan: &ToolPlan, name: &str, grounding: Option<&Grounding>) -> Option<String> {
    let (mode, tools) = match name {
        "answer-only" => (GrammarMode::AnswerOnly, plan.tools.clone()),
        "call-only" => (GrammarMode::CallOnly, plan.tools.clone()),
        "tool-or-answer_directly" => (GrammarMode::CallOnly, plan.listed_tools(true)),
        "call-or-answer" => (GrammarMode::CallOrAnswer, plan.tools.clone()),
        _ => return None,
    };
    if let Some(f) = &plan.inferred {
        return match mode {
            GrammarMode::AnswerOnly => None,
            GrammarMode::CallOnly => f.lark_grammar(&tools, false),
            GrammarMode::CallOrAnswer => f.lark_grammar(&tools, true),
        };
    }
    lark_grammar_grounded(plan.format, &tools, mode, grounding)
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

    /// A GGUF file with only a header: the chat template.
    fn gguf(dir: &std::path::Path, name: &str, template: &str) -> PathBuf {
        let mut b = Vec::new();
        let s = |b: &mut Vec<u8>, t: &str| {
            b.extend((t.len() as u64).to_le_bytes());
            b.extend(t.as_bytes());
        };
        b.extend(b"GGUF");
        b.extend(3u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend(1u64.to_le_bytes());
        s(&mut b, "tokenizer.chat_template");
        b.extend(8u32.to_le_bytes());
        s(&mut b, template);
        let path = dir.join(name);
        std::fs::write(&path, b).unwrap();
        path
    }

    const CHATML: &str = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}";

    #[test]
    fn a_template_no_module_knows_is_inferred_and_taught() {
        let dir = tempfile::tempdir().unwrap();
        let calls = "{% if m.tool_calls %}{% for tc in m.tool_calls %}[CALL]{{ tc.function.name }}[ARGS]{{ tc.function.arguments|tojson }}[/CALL]{% endfor %}{% endif %}<|im_end|>\n{% endfor %}";
        let model = gguf(dir.path(), "my-model.gguf", &format!("{CHATML}{calls}"));
        let info = info("jinja", model.to_str().unwrap());
        let settings = ChatSettings::default();
        let tools = vec![ToolDef {
            name: "get_time".into(),
            description: None,
            input_schema: serde_json::json!({"type": "object", "properties": {"tz": {"type": "string"}}}),
            annotations: None,
        }];
        let plan = ToolPlan::new(&settings, &info, tools);
        let inferred = plan.inferred.as_ref().expect("inferred format");
        assert_eq!(inferred.call_open, "[CALL]");
        assert_eq!(plan.format_notice, None);
        let prompt = system_prompt(&settings, &plan, false, false);
        assert!(
            prompt.contains("[CALL]get_time[ARGS]{\"tz\": \"...\"}[/CALL]"),
            "{prompt}"
        );
        // The module's grammar would hold the model to another syntax: llguidance's own only.
        assert!(guide_for(&plan, "call-or-answer", None).is_some_and(|g| g.contains("[CALL]")));
    }

    /// SmolLM2's case: ChatML that writes no tool calls. A tiny model file gets
    /// `tool-call-json`; one of 400 MiB (sparse) keeps Hermes, ChatML's convention.
    #[test]
    fn a_template_without_tool_calls_gives_a_tiny_model_tool_call_json() {
        let dir = tempfile::tempdir().unwrap();
        let source = format!("{CHATML}<|im_end|>\n{{% endfor %}}");
        let tiny = gguf(dir.path(), "small-model.gguf", &source);
        let plan = ToolPlan::new(
            &ChatSettings::default(),
            &info("jinja (chatml)", tiny.to_str().unwrap()),
            Vec::new(),
        );
        assert_eq!(
            (plan.format, plan.inferred.is_none(), plan.format_notice),
            (ToolFormat::ToolCallJson, true, None)
        );
        let big = gguf(dir.path(), "bigger-model.gguf", &source);
        std::fs::File::options()
            .write(true)
            .open(&big)
            .and_then(|f| f.set_len(400 << 20))
            .unwrap();
        let plan = ToolPlan::new(
            &ChatSettings::default(),
            &info("jinja (chatml)", big.to_str().unwrap()),
            Vec::new(),
        );
        assert_eq!(plan.format, ToolFormat::Hermes);
        // What the config says still wins.
        let settings = ChatSettings {
            tool_format: Auto::Set(ToolFormat::Hermes),
            ..ChatSettings::default()
        };
        let plan = ToolPlan::new(
            &settings,
            &info("jinja (chatml)", tiny.to_str().unwrap()),
            Vec::new(),
        );
        assert_eq!(plan.format, ToolFormat::Hermes);
    }

    #[test]
    fn an_unreadable_template_keeps_the_guess_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        // It writes tool calls, but not their names: nothing to read them by.
        let calls = "{% if m.tool_calls %}<call/>{% endif %}<|im_end|>\n{% endfor %}";
        let source = format!("{CHATML}{calls}");
        let model = gguf(dir.path(), "my-model.gguf", &source);
        let info_of = |p: &PathBuf| info("jinja", p.to_str().unwrap());
        let plan = ToolPlan::new(&ChatSettings::default(), &info_of(&model), Vec::new());
        assert!(plan.inferred.is_none());
        let notice = plan.format_notice.unwrap_or_default();
        assert!(
            notice.contains("rendered no tool call") && notice.contains("as `tool-call-json`"),
            "{notice}"
        );
        // A known model name keeps its module, whatever the template.
        let named = gguf(dir.path(), "Qwen2.5-1.5B-Instruct.gguf", &source);
        let plan = ToolPlan::new(&ChatSettings::default(), &info_of(&named), Vec::new());
        assert_eq!(
            (plan.format, plan.inferred.is_none()),
            (ToolFormat::Hermes, true)
        );
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
