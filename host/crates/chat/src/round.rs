//! The plan of one generation: which grammar holds it and at what temperature. Pure: decided from
//! the settings, the tools and what happened earlier in the turn.
use rkmcp_llm::Capabilities;
use rkmcp_tool_formats::convert::{Grounding, ToolDef, fill_named_optional};
use serde_json::Value;

use super::prompt::{self, ToolPlan};
use super::settings::{ChatSettings, GrammarEngine, ToolChoice};
use super::steps::CallText;

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
    /// Grounding (`copy_bias`): string values whose schema does not bound them are held to this
    /// many characters in the llguidance grammar. A value the model copies fits; one it invents
    /// cannot run on to the token limit (the call would be lost as unreadable).
    pub string_bound: Option<usize>,
    /// The tools the user's message named ([`super::named`]): the first round may only call
    /// them, whatever the model would have decided.
    pub named: Vec<String>,
    /// Values tied to the turn's text (`value_spans`, `value_numbers`): the llguidance grammar
    /// of a JSON call format holds them ([`rkmcp_tool_formats::convert::grounded`]).
    pub grounding: Option<Grounding>,
    /// `fill_named_optional`: the user's message; optional parameters it names are required.
    pub fill_from: Option<String>,
}

/// What the record calls a first round held to a call of the tools the user named.
pub const NAMED_TOOL: &str = "named-tool";

/// The least [`RoundState::string_bound`]: long enough for any time zone, date, name or path
/// the model writes from its own knowledge.
pub const MIN_STRING_BOUND: usize = 48;

/// The string bound for a turn whose user wrote `message`: a value copied from it fits whole.
pub fn string_bound_for(message: &str) -> usize {
    message.chars().count().max(MIN_STRING_BOUND)
}

/// How one generation is held.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundPlan {
    /// The grammar (GBNF), `None` to let the model write freely.
    pub grammar: Option<String>,
    /// The same constraint for llguidance (`grammar_engine = "llguidance"` on a backend that
    /// has it); the GBNF grammar is its fallback.
    pub guide: Option<String>,
    /// What the grammar allows, for the record (`call-or-answer`, `answer-only`, [`NAMED_TOOL`], …).
    pub grammar_name: String,
    /// `Some(0.0)`: decoded greedily (`greedy_tool_rounds`); `None`: the model's own sampling.
    pub temperature: Option<f32>,
    /// Tools left out of the grammar.
    pub excluded: Vec<String>,
    /// `argument_steps`: the round's call is written a piece at a time ([`crate::steps`]).
    pub steps: Option<CallSteps>,
}

/// A round whose call is written a piece at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSteps {
    pub call: CallText,
    /// The tools it may call, their schemas as the round's grammar holds them.
    pub tools: Vec<ToolDef>,
    /// The model may name `answer_directly` instead.
    pub answer_directly: bool,
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
    if let Some(bound) = state.string_bound {
        for t in &mut held.tools {
            bound_strings(&mut t.input_schema, bound);
        }
    }
    if let Some(message) = &state.fill_from {
        for t in &mut held.tools {
            fill_named_optional(&mut t.input_schema, message);
        }
    }
    // Every tool answered already: nothing is left to call.
    let answer_only = state.answer_only || (!excluded.is_empty() && held.tools.is_empty());
    // The user named a tool: the first round calls it (or one of them), as `tool_choice =
    // "required"` would with only those tools listed in the grammar; no `answer_directly`.
    let named = state.round == 1
        && !answer_only
        && settings.tool_choice != ToolChoice::None
        && held.tools.iter().any(|t| state.named.contains(&t.name));
    let forced;
    let settings = if named {
        held.tools.retain(|t| state.named.contains(&t.name));
        forced = ChatSettings {
            tool_choice: ToolChoice::Required,
            ..settings.clone()
        };
        &forced
    } else {
        settings
    };
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
    let guide = guide(settings, backend, offered, name, state.grounding.as_ref());
    let steps = call_steps(settings, offered, name, guide.is_some());
    let name = if named && name == "call-only" {
        NAMED_TOOL
    } else {
        name
    };
    RoundPlan {
        grammar_name: held_by(name, &grammar, &guide).to_string(),
        guide,
        grammar,
        temperature: greedy.then_some(0.0),
        excluded,
        steps,
    }
}

/// Whether the round's call is written a piece at a time: `argument_steps`, a round that must
/// name a tool (or `answer_directly`), held by llguidance (`held_by_llguidance`: the round has a
/// guide, which only a backend with llguidance gets; the steps' grammars are llguidance's), in
/// a JSON call format of the built-in detector and converter (the engine writes the call's text
/// itself, so nobody else may have a say in its syntax).
fn call_steps(
    settings: &ChatSettings,
    offered: &ToolPlan,
    name: &str,
    held_by_llguidance: bool,
) -> Option<CallSteps> {
    let must_name = matches!(name, "call-only" | "tool-or-answer_directly");
    if !settings.argument_steps
        || !must_name
        || !held_by_llguidance
        || settings.detector.is_some()
        || offered.converted.is_some()
        || offered.inferred.is_some()
        || offered.tools.is_empty()
    {
        return None;
    }
    Some(CallSteps {
        call: CallText::of(offered.format)?,
        tools: offered.tools.clone(),
        answer_directly: name == "tool-or-answer_directly",
    })
}

/// Gives every string schema in `schema` without a bound of its own (`maxLength`, `enum`,
/// `const`, `pattern`, `format`) a `maxLength` of `bound`. GBNF grammars ignore it (unbounded
/// strings there); llguidance, the default engine, holds it.
fn bound_strings(schema: &mut Value, bound: usize) {
    match schema {
        Value::Object(o) => {
            let is_string = match o.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            let unbounded = ["maxLength", "enum", "const", "pattern", "format"]
                .iter()
                .all(|k| !o.contains_key(*k));
            if is_string && unbounded {
                o.insert("maxLength".into(), bound.into());
            }
            for v in o.values_mut() {
                bound_strings(v, bound);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| bound_strings(v, bound)),
        _ => {}
    }
}

/// The llguidance form of the built-in grammar `name`, when llguidance is to enforce it (also
/// for formats that have no GBNF form).
fn guide(
    settings: &ChatSettings,
    backend: Capabilities,
    plan: &ToolPlan,
    name: &str,
    grounding: Option<&Grounding>,
) -> Option<String> {
    let wanted = settings.grammar_engine == GrammarEngine::Llguidance && backend.llguidance;
    if !wanted {
        return None;
    }
    prompt::guide_for(plan, name, grounding)
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
    let guide = guide(settings, backend, plan, name, None);
    RoundPlan {
        grammar_name: held_by(name, &grammar, &guide).to_string(),
        guide,
        grammar,
        temperature: None,
        excluded: Vec::new(),
        steps: None,
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
    use crate::settings::Auto;

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
            string_bound: None,
            named: Vec::new(),
            grounding: None,
            fill_from: None,
        }
    }

    #[test]
    fn grounding_bounds_the_strings_a_schema_leaves_open() {
        let mut schema = json!({"type": "object", "properties": {
            "free": {"type": "string"},
            "either": {"type": ["string", "null"]},
            "named": {"type": "string", "enum": ["a", "b"]},
            "short": {"type": "string", "maxLength": 5},
            "when": {"type": "string", "format": "date"},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}}
        }});
        bound_strings(&mut schema, 60);
        let p = &schema["properties"];
        assert_eq!(p["free"]["maxLength"], 60);
        assert_eq!(p["either"]["maxLength"], 60);
        assert_eq!(p["tags"]["items"]["maxLength"], 60);
        assert_eq!(p["short"]["maxLength"], 5);
        for open in ["named", "when", "n"] {
            assert!(p[open].get("maxLength").is_none(), "{open}: {}", p[open]);
        }
        // Copied values fit whole; invented ones get room for a time zone or a path.
        assert_eq!(string_bound_for("hi"), MIN_STRING_BOUND);
        let long = "x".repeat(80);
        assert_eq!(string_bound_for(&long), 80);

        let (settings, plan) = setup(&["fx__echo"]);
        let mut s = state(1, false, &[]);
        let r = plan_round(&settings, &plan, caps(true), &s);
        assert!(!r.guide.unwrap().contains("maxLength"));
        s.string_bound = Some(60);
        let r = plan_round(&settings, &plan, caps(true), &s);
        assert!(r.guide.unwrap().contains(r#""maxLength":60"#));
        // The plan itself (the prompt's tool list) is untouched.
        assert!(
            plan.tools[0].input_schema["properties"]["x"]
                .get("maxLength")
                .is_none()
        );
    }

    #[test]
    fn value_grounding_reaches_the_llguidance_grammar_and_named_optionals_are_required() {
        let (settings, mut plan) = setup(&["fx__echo"]);
        plan.tools[0].input_schema = json!({"type": "object", "properties": {
            "x": {"type": "string"}, "urgent": {"type": "boolean"}
        }, "required": ["x"]});
        let mut s = state(1, false, &[]);
        let r = plan_round(&settings, &plan, caps(true), &s);
        let guide = r.guide.unwrap();
        assert!(!guide.contains("substring_words"), "{guide}");
        let optional = r#"("," ws "\"urgent\"""#;
        assert!(r.grammar.unwrap().contains(optional));
        s.grounding = Some(Grounding {
            message: "an urgent hello".into(),
            spans: true,
            ..Grounding::default()
        });
        s.fill_from = Some("an urgent hello".into());
        let r = plan_round(&settings, &plan, caps(true), &s);
        let guide = r.guide.unwrap();
        assert!(
            guide.contains(r#"{"substring_words":"an urgent hello"}"#),
            "{guide}"
        );
        // `urgent` is required now: no optional group around it.
        assert!(guide.contains(r#"WS? "," WS? gkv_"#), "{guide}");
        assert!(!guide.contains(r#"(WS? "," WS? gkv_"#), "{guide}");
        // The GBNF grammar (no spans) requires it too; the plan's tools are untouched.
        let g = r.grammar.unwrap();
        assert!(
            !g.contains(optional) && g.contains(r#""\"urgent\"""#),
            "{g}"
        );
        assert_eq!(plan.tools[0].input_schema["required"], json!(["x"]));
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
    fn a_tool_the_user_named_is_the_only_choice_of_the_first_round() {
        let (settings, plan) = setup(&["time__now", "fx__echo", "fx__sum"]);
        let mut s = state(1, false, &[]);
        s.named = vec!["fx__sum".into()];
        let r = plan_round(&settings, &plan, caps(true), &s);
        assert_eq!(r.grammar_name, NAMED_TOOL);
        assert_eq!(r.temperature, Some(0.0), "a forced call is greedy");
        let g = r.grammar.unwrap();
        assert!(g.contains("fx__sum"), "{g}");
        for out in ["fx__echo", "time__now", "answer_directly"] {
            assert!(!g.contains(out), "{out} in {g}");
        }
        let guide = r.guide.unwrap();
        assert!(guide.contains("fx__sum"), "{guide}");
        for out in ["fx__echo", "time__now", "answer_directly"] {
            assert!(!guide.contains(out), "{out} in {guide}");
        }
        // Two named tools: a choice between them.
        s.named.push("fx__echo".into());
        let g = plan_round(&settings, &plan, caps(true), &s)
            .grammar
            .unwrap();
        assert!(g.contains("fx__sum") && g.contains("fx__echo"), "{g}");
        assert!(
            !g.contains("time__now") && !g.contains("answer_directly"),
            "{g}"
        );
    }

    #[test]
    fn argument_steps_write_only_the_calls_a_round_must_name_in_a_json_format() {
        let (mut settings, plan) = setup(&["time__now", "fx__echo"]);
        let first = plan_round(&settings, &plan, caps(true), &state(1, false, &[]));
        assert_eq!(first.steps, None, "off by default");
        settings.argument_steps = true;
        let steps = plan_round(&settings, &plan, caps(true), &state(1, false, &[]))
            .steps
            .expect("the explicit decision's round is written in steps");
        assert!(steps.answer_directly);
        let names: Vec<&str> = steps.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["time__now", "fx__echo"]);
        // A named tool: the steps choose among the named ones only, without answer_directly.
        let mut s = state(1, false, &[]);
        s.named = vec!["fx__echo".into()];
        let named = plan_round(&settings, &plan, caps(true), &s).steps.unwrap();
        assert!(!named.answer_directly);
        assert_eq!(named.tools.len(), 1);
        // The string bound of the round reaches the schemas the steps hold values to.
        s.string_bound = Some(60);
        let bounded = plan_round(&settings, &plan, caps(true), &s).steps.unwrap();
        assert_eq!(
            bounded.tools[0].input_schema["properties"]["x"]["maxLength"],
            60
        );
        // Rounds that may answer, answer-only rounds, no llguidance, other syntaxes: one breath.
        let later = plan_round(&settings, &plan, caps(true), &state(2, false, &[]));
        assert_eq!(later.grammar_name, "call-or-answer");
        assert_eq!(later.steps, None);
        assert_eq!(
            plan_round(&settings, &plan, caps(true), &state(1, true, &[])).steps,
            None
        );
        let gbnf_only = Capabilities {
            grammar: true,
            ..Capabilities::default()
        };
        assert_eq!(
            plan_round(&settings, &plan, gbnf_only, &state(1, false, &[])).steps,
            None
        );
        let mut pythonic = plan.clone();
        pythonic.format = ToolFormat::Pythonic;
        assert_eq!(
            plan_round(&settings, &pythonic, caps(true), &state(1, false, &[])).steps,
            None
        );
        settings.grammar_engine = GrammarEngine::Gbnf;
        assert_eq!(
            plan_round(&settings, &plan, caps(true), &state(1, false, &[])).steps,
            None
        );
    }

    #[test]
    fn a_named_tool_holds_only_the_first_round_and_never_against_the_settings() {
        let (mut settings, plan) = setup(&["time__now", "fx__sum"]);
        let named = |round: u32, answer_only: bool| RoundState {
            named: vec!["fx__sum".into()],
            ..state(round, answer_only, &[])
        };
        let r = plan_round(&settings, &plan, caps(true), &named(2, false));
        assert_eq!(r.grammar_name, "call-or-answer");
        assert!(r.grammar.unwrap().contains("time__now"));
        let r = plan_round(&settings, &plan, caps(true), &named(1, true));
        assert_eq!(r.grammar_name, "answer-only");
        // A name that is not among the listed tools changes nothing.
        let mut other = named(1, false);
        other.named = vec!["fx__gone".into()];
        let r = plan_round(&settings, &plan, caps(true), &other);
        assert_eq!(r.grammar_name, "tool-or-answer_directly");
        // Without a grammar nothing can hold the call; a user's grammar and `tool_choice =
        // "none"` win.
        let r = plan_round(&settings, &plan, caps(false), &named(1, false));
        assert_eq!(r.grammar_name, "none");
        settings.grammar = Some("root ::= \"x\"".into());
        let r = plan_round(&settings, &plan, caps(true), &named(1, false));
        assert_eq!(r.grammar_name, "user");
        settings.grammar = None;
        settings.tool_choice = ToolChoice::None;
        let r = plan_round(&settings, &plan, caps(true), &named(1, false));
        assert_eq!(r.grammar_name, "none");
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
