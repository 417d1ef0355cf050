//! The plan of one generation: which grammar holds it and at what temperature. Pure: decided from
//! the settings, the tools and what happened earlier in the turn.
use rkmcp_llm::Capabilities;

use super::prompt::{self, ToolPlan};
use super::settings::{ChatSettings, GrammarEngine};

/// Where the turn stands when a round starts.
#[derive(Debug, Clone, Default)]
pub struct RoundState {
    /// 1-based.
    pub round: u32,
    /// The model repeated a call: this round may only answer.
    pub answer_only: bool,
    /// Tools left out of this round's grammar (tools that already answered, with
    /// `after_result = "other-tools"`). The system prompt still lists them, so the prompt's
    /// prefix stays the same from round to round and its KV cache is reused.
    pub excluded: Vec<String>,
}

/// How one generation is held.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundPlan {
    /// The grammar (GBNF), `None` to let the model write freely.
    pub grammar: Option<String>,
    /// The same constraint for llguidance (`grammar_engine = "llguidance"` on a backend that
    /// has it); the GBNF grammar is its fallback.
    pub guide: Option<String>,
    /// What the grammar allows, for the record (`call-or-answer`, `answer-only`, …).
    pub grammar_name: String,
    /// `Some(0.0)`: decoded greedily (`greedy_tool_rounds`); `None`: the model's own sampling.
    pub temperature: Option<f32>,
    /// Tools left out of the grammar.
    pub excluded: Vec<String>,
}

/// The plan for a round of the turn.
pub fn plan_round(
    settings: &ChatSettings,
    plan: &ToolPlan,
    backend: Capabilities,
    state: &RoundState,
) -> RoundPlan {
    let backend_has_grammar = backend.grammar;
    let mut held = plan.clone();
    let mut excluded = Vec::new();
    if state.round > 1 && !state.excluded.is_empty() {
        held.tools.retain(|t| {
            let out = state.excluded.contains(&t.name);
            if out {
                excluded.push(t.name.clone());
            }
            !out
        });
    }
    // Every tool answered already: nothing is left to call.
    let answer_only = state.answer_only || (!excluded.is_empty() && held.tools.is_empty());
    let offered = if held.tools.is_empty() { plan } else { &held };
    let (grammar, name) = prompt::grammar_for_round(
        settings,
        offered,
        backend_has_grammar,
        state.round,
        answer_only,
    );
    // A round that must call, or that follows calls (results, rejections), is decoded greedily.
    let greedy = settings.greedy_tool_rounds
        && (state.round > 1 || matches!(name, "call-only" | "tool-or-answer_directly"));
    let guide = guide(settings, backend, offered, name);
    RoundPlan {
        grammar_name: held_by(name, &grammar, &guide).to_string(),
        guide,
        grammar,
        temperature: greedy.then_some(0.0),
        excluded,
    }
}

/// The llguidance form of the built-in grammar `name`, when llguidance is to enforce it (also
/// for formats that have no GBNF form).
fn guide(
    settings: &ChatSettings,
    backend: Capabilities,
    plan: &ToolPlan,
    name: &str,
) -> Option<String> {
    let wanted = settings.grammar_engine == GrammarEngine::Llguidance && backend.llguidance;
    if !wanted {
        return None;
    }
    prompt::guide_for(plan, name)
}

/// What holds the round, for the record: `none` when neither engine got a grammar (a format
/// with only an llguidance grammar under `grammar_engine = "gbnf"`).
fn held_by<'a>(name: &'a str, grammar: &Option<String>, guide: &Option<String>) -> &'a str {
    if grammar.is_none() && guide.is_none() {
        "none"
    } else {
        name
    }
}

/// The plan for the answer the model writes after choosing `answer_directly`: answer-only, with
/// the model's own sampling (an answer without tools).
pub fn plan_answer_after_decision(
    settings: &ChatSettings,
    plan: &ToolPlan,
    backend: Capabilities,
    round: u32,
) -> RoundPlan {
    let (grammar, name) = prompt::grammar_for_round(settings, plan, backend.grammar, round, true);
    let guide = guide(settings, backend, plan, name);
    RoundPlan {
        grammar_name: held_by(name, &grammar, &guide).to_string(),
        guide,
        grammar,
        temperature: None,
        excluded: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rkmcp_llm::BackendInfo;
    use rkmcp_tool_formats::ToolFormat;
    use rkmcp_tool_formats::convert::ToolDef;
    use serde_json::json;

    use super::*;
    use crate::chat::settings::Auto;

    fn tool(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: Some(format!("{name} things")),
            input_schema: json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}),
            annotations: None,
        }
    }

    fn setup(names: &[&str]) -> (ChatSettings, ToolPlan) {
        let settings = ChatSettings {
            tool_format: Auto::Set(ToolFormat::ToolCallJson),
            ..ChatSettings::default()
        };
        let info = BackendInfo {
            backend: "llama",
            model: PathBuf::from("m.gguf"),
            chat_template: "chatml".into(),
            context_length: 2048,
            capabilities: Default::default(),
            detail: String::new(),
        };
        let plan = ToolPlan::new(&settings, &info, names.iter().map(|n| tool(n)).collect());
        (settings, plan)
    }

    fn caps(grammar: bool) -> Capabilities {
        Capabilities {
            grammar,
            llguidance: grammar,
            ..Capabilities::default()
        }
    }

    fn state(round: u32, answer_only: bool, excluded: &[&str]) -> RoundState {
        RoundState {
            round,
            answer_only,
            excluded: excluded.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_first_round_names_a_tool_or_answer_directly_greedily() {
        let (settings, plan) = setup(&["time__now", "fx__echo"]);
        let r = plan_round(&settings, &plan, caps(true), &state(1, false, &[]));
        assert_eq!(r.grammar_name, "tool-or-answer_directly");
        assert_eq!(r.temperature, Some(0.0));
        let g = r.grammar.unwrap();
        assert!(
            g.contains("answer_directly") && g.contains("fx__echo"),
            "{g}"
        );
        // llguidance holds the same choice, the call object as a JSON Schema.
        let guide = r.guide.unwrap();
        assert!(guide.starts_with("start: calls\n"), "{guide}");
        assert!(
            guide.contains("\"answer_directly\"") && guide.contains("%json"),
            "{guide}"
        );
    }

    #[test]
    fn formats_with_only_an_llguidance_grammar_are_held_by_llguidance_alone() {
        let (mut settings, _) = setup(&["time__now"]);
        settings.tool_format = Auto::Set(ToolFormat::Qwen3Coder);
        let info = BackendInfo {
            backend: "llama",
            model: PathBuf::from("m.gguf"),
            chat_template: "chatml".into(),
            context_length: 2048,
            capabilities: Default::default(),
            detail: String::new(),
        };
        let plan = ToolPlan::new(&settings, &info, vec![tool("time__now")]);
        let r = plan_round(&settings, &plan, caps(true), &state(1, false, &[]));
        assert!(r.grammar.is_none(), "qwen3-coder has no GBNF form");
        assert_eq!(r.grammar_name, "call-or-answer");
        let guide = r.guide.expect("an llguidance grammar");
        assert!(guide.contains("<function=time__now>"), "{guide}");
        // With GBNF as the engine nothing holds the round, and the record says so.
        settings.grammar_engine = GrammarEngine::Gbnf;
        let r = plan_round(&settings, &plan, caps(true), &state(1, false, &[]));
        assert!(r.grammar.is_none() && r.guide.is_none());
        assert_eq!(r.grammar_name, "none");
    }

    #[test]
    fn gbnf_alone_when_asked_for_or_without_llguidance() {
        let (mut settings, plan) = setup(&["time__now"]);
        let without = Capabilities {
            grammar: true,
            ..Capabilities::default()
        };
        let r = plan_round(&settings, &plan, without, &state(1, false, &[]));
        assert!(r.grammar.is_some() && r.guide.is_none());
        settings.grammar_engine = GrammarEngine::Gbnf;
        let r = plan_round(&settings, &plan, caps(true), &state(1, false, &[]));
        assert!(r.grammar.is_some() && r.guide.is_none());
        // A user's grammar is GBNF: llguidance does not replace it.
        settings.grammar_engine = GrammarEngine::Llguidance;
        settings.grammar = Some("root ::= \"x\"".into());
        let r = plan_round(&settings, &plan, caps(true), &state(1, false, &[]));
        assert_eq!(r.grammar_name, "user");
        assert!(r.guide.is_none());
    }

    #[test]
    fn a_tool_that_answered_is_left_out_of_later_rounds() {
        let (settings, plan) = setup(&["time__now", "fx__echo"]);
        let r = plan_round(
            &settings,
            &plan,
            caps(true),
            &state(2, false, &["time__now"]),
        );
        assert_eq!(r.grammar_name, "call-or-answer");
        assert_eq!(r.excluded, ["time__now"]);
        let g = r.grammar.unwrap();
        assert!(g.contains("fx__echo") && !g.contains("time__now"), "{g}");
        // Follows calls: greedy.
        assert_eq!(r.temperature, Some(0.0));
    }

    #[test]
    fn with_every_tool_answered_the_round_may_only_answer() {
        let (settings, plan) = setup(&["time__now"]);
        let r = plan_round(
            &settings,
            &plan,
            caps(true),
            &state(2, false, &["time__now"]),
        );
        assert_eq!(r.grammar_name, "answer-only");
        let g = r.grammar.unwrap();
        assert!(!g.contains("TOOL_CALL") && !g.contains("time__now"), "{g}");
        assert!(r.guide.unwrap().starts_with("start: ANSWER\n"));
    }

    #[test]
    fn without_exclusions_a_later_round_may_call_any_tool() {
        let (settings, plan) = setup(&["time__now"]);
        let r = plan_round(&settings, &plan, caps(true), &state(2, false, &[]));
        assert_eq!(r.grammar_name, "call-or-answer");
        assert!(r.grammar.unwrap().contains("time__now"));
        assert!(r.excluded.is_empty());
    }

    #[test]
    fn a_repeat_makes_the_next_round_answer_only() {
        let (settings, plan) = setup(&["time__now", "fx__echo"]);
        let r = plan_round(&settings, &plan, caps(true), &state(3, true, &[]));
        assert_eq!(r.grammar_name, "answer-only");
    }

    #[test]
    fn without_a_grammar_backend_nothing_is_held_and_the_first_round_keeps_sampling() {
        let (settings, plan) = setup(&["time__now"]);
        let r = plan_round(&settings, &plan, caps(false), &state(1, false, &[]));
        assert_eq!((r.grammar, r.grammar_name.as_str()), (None, "none"));
        assert_eq!(r.temperature, None);
        let later = plan_round(
            &settings,
            &plan,
            caps(false),
            &state(2, false, &["time__now"]),
        );
        assert_eq!(later.grammar, None);
        assert_eq!(later.temperature, Some(0.0));
    }

    #[test]
    fn the_answer_after_answer_directly_keeps_the_models_sampling() {
        let (settings, plan) = setup(&["time__now"]);
        let r = plan_answer_after_decision(&settings, &plan, caps(true), 1);
        assert_eq!(r.grammar_name, "answer-only");
        assert_eq!(r.temperature, None);
    }
}
