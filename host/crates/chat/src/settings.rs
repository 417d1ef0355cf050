//! The `[chat]` table: how the chat loop presents tools, constrains the model and bounds its work.
use serde::{Deserialize, Serialize};

use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::PromptStyle;

use super::approval::ApprovalConfig;

/// `auto` or a named value; `auto` is decided from the model's chat template and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Auto<T> {
    #[default]
    Auto,
    Set(T),
}

impl<'de, T: std::str::FromStr> Deserialize<'de> for Auto<T>
where
    T::Err: std::fmt::Display,
{
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(Auto::Auto);
        }
        s.parse().map(Auto::Set).map_err(serde::de::Error::custom)
    }
}

impl<T: std::fmt::Display> Serialize for Auto<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Auto::Auto => s.serialize_str("auto"),
            Auto::Set(v) => s.serialize_str(&v.to_string()),
        }
    }
}

/// Whether the model may, must or must not call a tool in the first round of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (a grammar allows an answer or a call).
    #[default]
    Auto,
    /// The first round must be a call (grammar in call-only mode); later rounds may answer.
    Required,
    /// Tools are not offered.
    None,
}

impl std::fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
        })
    }
}

impl std::str::FromStr for ToolChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            "none" => Ok(ToolChoice::None),
            other => Err(format!(
                "unknown tool choice `{other}` (expected auto, required or none)"
            )),
        }
    }
}

/// How the model decides between a tool and a plain answer when `tool_choice = "auto"` and a
/// grammar can constrain it (the CPU backend).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolDecision {
    /// The model starts writing and may begin either an answer or a call.
    Open,
    /// When the message shares words with some tool, the first round must name a tool or the
    /// pseudo-tool `answer_directly` (then it answers in a second, answer-only generation);
    /// otherwise as `open`. Tiny models, free to choose, answer in prose almost always; made to
    /// name their choice first, they pick tools (see tests/benches/tool_eval.rs).
    #[default]
    Explicit,
}

impl std::fmt::Display for ToolDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ToolDecision::Open => "open",
            ToolDecision::Explicit => "explicit",
        })
    }
}

impl std::str::FromStr for ToolDecision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "open" => Ok(ToolDecision::Open),
            "explicit" => Ok(ToolDecision::Explicit),
            other => Err(format!(
                "unknown tool decision `{other}` (expected open or explicit)"
            )),
        }
    }
}

/// Whether a model file of `model_bytes` is tiny ([`Shortlist::TINY_MODEL_BYTES`]): the `auto`
/// settings that help the embedded 135M model apply to it and not to bigger ones.
pub fn is_tiny(model_bytes: Option<u64>) -> bool {
    model_bytes.is_some_and(|b| b < Shortlist::TINY_MODEL_BYTES)
}

/// `tool_shortlist`: how many tools the model is shown per message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shortlist {
    /// [`Shortlist::TINY`] tools for a tiny model (a model file under
    /// [`Shortlist::TINY_MODEL_BYTES`]), and any tool that matches the message as well as the
    /// last of them; all tools for any other model.
    #[default]
    Auto,
    /// At most this many (0: all).
    Max(usize),
}

impl Shortlist {
    /// What the tool evaluation found best for the embedded 135M model.
    pub const TINY: usize = 1;
    /// Model files smaller than this are tiny (SmolLM2-135M Q4_1: 98 MB; Qwen2.5-0.5B Q4: ~400 MB).
    pub const TINY_MODEL_BYTES: u64 = 300 * 1024 * 1024;

    /// Whether tools that tie with the last one shown are shown too (`auto`: when the words
    /// cannot tell tools apart, the model should; a number is a hard limit).
    pub fn keeps_ties(self) -> bool {
        self == Shortlist::Auto
    }

    /// The number of tools to show (0: all) for a model file of `model_bytes`.
    pub fn resolve(self, model_bytes: Option<u64>) -> usize {
        match self {
            Shortlist::Max(n) => n,
            Shortlist::Auto if is_tiny(model_bytes) => Self::TINY,
            Shortlist::Auto => 0,
        }
    }
}

impl std::str::FromStr for Shortlist {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Shortlist::Auto);
        }
        s.parse()
            .map(Shortlist::Max)
            .map_err(|_| format!("expected \"auto\" or a number of tools, got `{s}`"))
    }
}

impl<'de> Deserialize<'de> for Shortlist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(usize),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Shortlist::Max(n)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for Shortlist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shortlist::Auto => s.serialize_str("auto"),
            Shortlist::Max(n) => s.serialize_u64(*n as u64),
        }
    }
}

/// `copy_bias`: how much a round that may call leans towards the words of the user's message.
/// Grounding on (not 0) also spends a word's bias once the model wrote it, prefers the tokens
/// that close a string as much as the words (a copied value ends where it should), and holds string
/// values the schema leaves open to the message's length (at least
/// [`crate::round::MIN_STRING_BOUND`] characters) in the llguidance grammar.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum CopyBias {
    /// [`CopyBias::TINY`] for a tiny model (a model file under
    /// [`Shortlist::TINY_MODEL_BYTES`]), none for others.
    #[default]
    Auto,
    /// Added to the logits of those tokens (0: none).
    Fixed(f32),
}

impl CopyBias {
    /// What the tool evaluation found best for the embedded 135M model.
    pub const TINY: f32 = 2.0;

    /// The bias for a model file of `model_bytes`.
    pub fn resolve(self, model_bytes: Option<u64>) -> f32 {
        match self {
            CopyBias::Fixed(b) => b,
            CopyBias::Auto if is_tiny(model_bytes) => Self::TINY,
            CopyBias::Auto => 0.0,
        }
    }
}

impl std::str::FromStr for CopyBias {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(CopyBias::Auto);
        }
        match s.parse::<f32>() {
            Ok(b) if b.is_finite() => Ok(CopyBias::Fixed(b)),
            _ => Err(format!("expected \"auto\" or a number, got `{s}`")),
        }
    }
}

impl<'de> Deserialize<'de> for CopyBias {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) if n.is_finite() => Ok(CopyBias::Fixed(n as f32)),
            Raw::Number(n) => Err(serde::de::Error::custom(format!(
                "expected a finite number, got {n}"
            ))),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for CopyBias {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CopyBias::Auto => s.serialize_str("auto"),
            CopyBias::Fixed(b) => s.serialize_f32(*b),
        }
    }
}

/// `after_result`: what the model may call once a tool answered in this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AfterResult {
    /// `other-tools` for a tiny model (a model file under [`Shortlist::TINY_MODEL_BYTES`]),
    /// `any` for others.
    #[default]
    Auto,
    /// Any listed tool (a call that already ran is still not run twice).
    Any,
    /// A tool whose call succeeded is left out of the grammar of the turn's later rounds, so
    /// the model cannot ask for it again; with no tool left the round may only answer. The
    /// 135M model otherwise repeats the call it just made, a generation the engine throws away.
    OtherTools,
}

impl AfterResult {
    /// Whether tools that answered are left out of later rounds, for a model file of
    /// `model_bytes`.
    pub fn excludes_answered(self, model_bytes: Option<u64>) -> bool {
        match self {
            AfterResult::Any => false,
            AfterResult::OtherTools => true,
            AfterResult::Auto => is_tiny(model_bytes),
        }
    }
}

/// `grammar_engine`: what enforces the generated grammars on the CPU backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GrammarEngine {
    /// llguidance: the call object as a JSON Schema, token masks in microseconds. GBNF takes
    /// over where llguidance cannot compile a grammar.
    #[default]
    Llguidance,
    /// llama.cpp's GBNF sampler.
    Gbnf,
}

/// `value_spans`: whether string values the schema leaves open (no `enum`, `const`, `format`,
/// `pattern`) must be spans of whole words of the turn's text (llguidance grammars of the JSON
/// call formats; see `rkmcp_tool_formats::convert::grounded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ValueSpans {
    /// Free strings.
    #[default]
    #[serde(rename = "off")]
    Off,
    /// Spans of the user's message.
    #[serde(rename = "message")]
    Message,
    /// Spans of the user's message or of a tool result earlier in the turn.
    #[serde(rename = "message+results")]
    MessageResults,
}

/// `span_escape`: which grounded strings may still be free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanEscape {
    /// None: every open string is a span.
    #[default]
    None,
    /// A parameter whose description (or the tool's, right after its name) shows a format or
    /// examples (`YYYY-MM-DD`, `e.g. 'America/New_York'`) that no word of the message has the
    /// shape of.
    Examples,
}

/// `value_numbers`: which numbers a call may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueNumbers {
    /// Any number the schema allows.
    #[default]
    Any,
    /// One of the numbers the message writes in digits (`$1,000` → 1000), when it has any that
    /// fit; any number otherwise.
    Message,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChatSettings {
    /// The system prompt before the tool section.
    pub system_prompt: Option<String>,
    /// How the model writes calls (`auto`: from the chat template, then the model name).
    pub tool_format: Auto<ToolFormat>,
    /// How tools are listed in the system prompt (`auto`: the format's own style).
    pub prompt_style: Auto<PromptStyle>,
    pub tool_choice: ToolChoice,
    /// With `tool_choice = "auto"` and a grammar: may the model start answering right away
    /// (`open`), or must it first name a tool or `answer_directly` (`explicit`)?
    pub tool_decision: ToolDecision,
    /// List only the N tools that best match the user's message (0: all; `auto`: a few for a
    /// tiny model, all for others). Small models choose far better among a few.
    pub tool_shortlist: Shortlist,
    /// When the user's message names a tool (`get-sum`, "the sum tool", see
    /// [`crate::named`]), the first round may only call it (a grammar holds it to that),
    /// and it is listed whatever the shortlist chose.
    pub named_tools: bool,
    /// Constrain the CPU backend with a grammar so a call, once started, is a valid call of a
    /// listed tool with schema-valid arguments.
    pub constrained_decoding: bool,
    /// What enforces those grammars: `llguidance` (the default) or `gbnf`.
    pub grammar_engine: GrammarEngine,
    /// Added to the logits of the tokens of the user's message in rounds that may call (CPU
    /// backend), so a small model copies values from the message instead of inventing them
    /// (`auto`: [`CopyBias::TINY`] for a tiny model, none for others).
    pub copy_bias: CopyBias,
    /// String values the schema leaves open are spans of the user's message (`message`), or
    /// also of the turn's earlier tool results (`message+results`); `off`: free strings.
    pub value_spans: ValueSpans,
    /// With `value_spans`: `examples` lets a parameter stay free text when its description
    /// shows a format or examples no word of the message fits; `none`: always spans.
    pub span_escape: SpanEscape,
    /// `message`: a number is one of the numbers in the user's message (when it has any that
    /// fit); `any`: any number.
    pub value_numbers: ValueNumbers,
    /// Optional parameters the user's message names (`urgent`, `2 passengers`, or one of an
    /// enum's values) must be written.
    pub fill_named_optional: bool,
    /// Write a call one piece at a time ([`crate::steps`]): the tool first, then each
    /// argument in a short generation of its own with its parameter's name, type and
    /// description right before it. For JSON call formats held by llguidance, in the rounds
    /// that must name a tool (or `answer_directly`).
    pub argument_steps: bool,
    /// Generate → call → feed back, at most this many times per user turn.
    pub max_rounds: u32,
    /// Rounds that must call (a forced call, the explicit decision) and rounds that answer from
    /// tool results decode greedily (temperature 0) on backends that sample per generation: a
    /// small model picks the tool and its arguments, and reports a result, far more faithfully
    /// so. Answers without tools keep the model's sampling.
    pub greedy_tool_rounds: bool,
    /// How many times one turn may hand invalid calls back to the model to fix.
    pub max_fix_attempts: u32,
    /// What the model may call after a tool answered (`auto`: `other-tools` for tiny models).
    pub after_result: AfterResult,
    /// Run the independent calls of one response concurrently.
    pub parallel_calls: bool,
    /// Characters of a tool result kept for the model (a notice marks the cut).
    pub result_max_chars: usize,
    /// Tokens of the context window kept free for the answer: a longer prompt sheds the
    /// oldest tool results (shortened), then the oldest turns, with a notice.
    pub answer_reserve: u32,
    /// Extra stop sequences.
    pub stop: Vec<String>,
    pub approval: ApprovalConfig,
    /// A detector plugin (its name in the plugin folder) that reads the model's answers instead
    /// of the built-in detector; the built-in one takes over if the plugin fails.
    pub detector: Option<String>,
    /// The dialect asked of the detector plugin (default: the tool format's name).
    pub detector_format: Option<String>,
    /// A schema-converter plugin (its name in the plugin folder) that writes the tool section of
    /// the system prompt, the grammar of call rounds and the tool results the model reads; the
    /// built-in converter takes over for anything the plugin fails on.
    pub converter: Option<String>,
    /// Show the model's reasoning (`<think>…</think>`, harmony's analysis channel) dimmed
    /// before its answer; hidden by default (a status line says the model is reasoning).
    /// Reasoning is never scanned for calls and never fed back in later turns.
    pub show_reasoning: bool,
    /// Keep each server configuration's tool list in the cache folder, so `ask` generates its
    /// first round from the last run's list while the servers start (when they can: the model
    /// on the NPU, or a core left beside the CPU backend's threads); the round stands only if
    /// the servers, once up, list exactly those tools (else it is discarded and redone).
    pub remember_tools: bool,
    /// A grammar for every round instead of the generated one (`ask --grammar`); not a config key.
    #[serde(skip)]
    pub grammar: Option<String>,
}

impl Default for ChatSettings {
    fn default() -> Self {
        ChatSettings {
            system_prompt: None,
            tool_format: Auto::Auto,
            prompt_style: Auto::Auto,
            tool_choice: ToolChoice::Auto,
            tool_decision: ToolDecision::default(),
            tool_shortlist: Shortlist::Auto,
            named_tools: true,
            constrained_decoding: true,
            grammar_engine: GrammarEngine::Llguidance,
            copy_bias: CopyBias::Auto,
            value_spans: ValueSpans::Off,
            span_escape: SpanEscape::None,
            value_numbers: ValueNumbers::Any,
            fill_named_optional: false,
            argument_steps: false,
            greedy_tool_rounds: true,
            max_rounds: 5,
            max_fix_attempts: 2,
            after_result: AfterResult::Auto,
            parallel_calls: true,
            result_max_chars: rkmcp_tool_formats::convert::DEFAULT_RESULT_LIMIT,
            answer_reserve: 256,
            show_reasoning: false,
            remember_tools: true,
            stop: Vec::new(),
            approval: ApprovalConfig::default(),
            detector: None,
            detector_format: None,
            converter: None,
            grammar: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_shortlist_takes_auto_or_a_number_and_auto_depends_on_the_model_size() {
        let parse = |t: &str| toml::from_str::<ChatSettings>(t).map(|s| s.tool_shortlist);
        assert_eq!(parse("tool_shortlist = 4").unwrap(), Shortlist::Max(4));
        assert_eq!(parse("tool_shortlist = \"auto\"").unwrap(), Shortlist::Auto);
        assert_eq!(parse("").unwrap(), Shortlist::Auto);
        let err = parse("tool_shortlist = \"some\"").unwrap_err().to_string();
        assert!(err.contains("auto") && err.contains("some"), "{err}");
        assert_eq!(Shortlist::Auto.resolve(Some(98 << 20)), Shortlist::TINY);
        assert_eq!(Shortlist::Auto.resolve(Some(2 << 30)), 0);
        assert_eq!(Shortlist::Auto.resolve(None), 0);
        assert_eq!(Shortlist::Max(0).resolve(Some(1)), 0);
    }

    #[test]
    fn copy_bias_takes_auto_or_a_number_and_auto_depends_on_the_model_size() {
        let parse = |t: &str| toml::from_str::<ChatSettings>(t).map(|s| s.copy_bias);
        assert_eq!(parse("").unwrap(), CopyBias::Auto);
        assert_eq!(parse("copy_bias = 3").unwrap(), CopyBias::Fixed(3.0));
        assert_eq!(parse("copy_bias = 1.5").unwrap(), CopyBias::Fixed(1.5));
        assert_eq!(parse("copy_bias = \"auto\"").unwrap(), CopyBias::Auto);
        let err = parse("copy_bias = \"lots\"").unwrap_err().to_string();
        assert!(err.contains("auto") && err.contains("lots"), "{err}");
        assert_eq!("0".parse::<CopyBias>(), Ok(CopyBias::Fixed(0.0)));
        assert!("inf".parse::<CopyBias>().is_err());
        assert_eq!(CopyBias::Auto.resolve(Some(98 << 20)), CopyBias::TINY);
        assert_eq!(CopyBias::Auto.resolve(Some(2 << 30)), 0.0);
        assert_eq!(CopyBias::Auto.resolve(None), 0.0);
        assert_eq!(CopyBias::Fixed(0.0).resolve(Some(1)), 0.0);
    }

    #[test]
    fn value_grounding_settings_take_their_names() {
        let parse = |t: &str| toml::from_str::<ChatSettings>(t);
        let d = parse("").unwrap();
        assert_eq!(
            (
                d.value_spans,
                d.span_escape,
                d.value_numbers,
                d.fill_named_optional
            ),
            (ValueSpans::Off, SpanEscape::None, ValueNumbers::Any, false)
        );
        let s = parse(
            "value_spans = \"message+results\"\nspan_escape = \"examples\"\nvalue_numbers = \"message\"\nfill_named_optional = true",
        )
        .unwrap();
        assert_eq!(
            (
                s.value_spans,
                s.span_escape,
                s.value_numbers,
                s.fill_named_optional
            ),
            (
                ValueSpans::MessageResults,
                SpanEscape::Examples,
                ValueNumbers::Message,
                true
            )
        );
        assert_eq!(
            parse("value_spans = \"message\"").unwrap().value_spans,
            ValueSpans::Message
        );
        for (bad, known) in [
            ("value_spans = \"results\"", "message+results"),
            ("span_escape = \"all\"", "examples"),
            ("value_numbers = \"some\"", "message"),
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains(known), "{bad}: {err}");
        }
    }

    #[test]
    fn after_result_takes_its_names_and_auto_depends_on_the_model_size() {
        let parse = |t: &str| toml::from_str::<ChatSettings>(t).map(|s| s.after_result);
        assert_eq!(parse("").unwrap(), AfterResult::Auto);
        assert_eq!(
            parse("after_result = \"other-tools\"").unwrap(),
            AfterResult::OtherTools
        );
        assert_eq!(parse("after_result = \"any\"").unwrap(), AfterResult::Any);
        assert!(parse("after_result = \"none\"").is_err());
        assert!(AfterResult::Auto.excludes_answered(Some(98 << 20)));
        assert!(!AfterResult::Auto.excludes_answered(Some(2 << 30)));
        assert!(!AfterResult::Auto.excludes_answered(None));
        assert!(AfterResult::OtherTools.excludes_answered(None));
        assert!(!AfterResult::Any.excludes_answered(Some(1)));
    }
}
