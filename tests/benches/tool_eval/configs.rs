//! Configurations: `FORMAT[/STYLE][:MODE][@N][+SUFFIX…]` and the chat settings they mean.
use rkmcp::chat::settings::{
    Auto, ChatSettings, CopyBias, GrammarEngine, Shortlist, SpanEscape, ToolChoice, ToolDecision,
    ValueNumbers, ValueSpans,
};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::PromptStyle;
use serde::Serialize;

pub const DEFAULT_CONFIGS: &[&str] = &[
    // Free generation (no grammar): the speed baseline.
    "auto:plain@auto",
    // Hermes (ChatML's convention), explicit decision, `auto` shortlist, no grounding; held by
    // llguidance, then by llama.cpp's GBNF sampler.
    "hermes:explicit@auto+copy0",
    "hermes:explicit@auto+copy0+gbnf",
    // Hermes with grounding (`copy_bias = "auto"`, 2 for this model), and a stronger bias.
    "hermes:explicit@auto",
    "hermes:explicit@auto+copy4",
    // `tool-call-json` without grounding, then the defaults: `auto` is `tool-call-json` for a
    // tiny model whose template writes no tool calls (SmolLM2's), with grounding.
    "tool-call-json:explicit@auto+copy0",
    "auto:explicit@auto",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Plain,
    Answer,
    Explicit,
    Required,
}

/// What makes two configurations the same run: format, style, mode, shortlist, engine, bias,
/// named tools, value settings.
pub type SpecKey = (
    String,
    String,
    Mode,
    Shortlist,
    GrammarEngine,
    String,
    bool,
    String,
);

/// `+spans` (`value_spans = "message"`), `+spans-results` (`"message+results"`), `+escape`
/// (`span_escape = "examples"`), `+nums` (`value_numbers = "message"`), `+fill`
/// (`fill_named_optional = true`), `+steps` (`argument_steps = true`).
#[derive(Debug, Clone, Copy)]
pub struct ValueSettings {
    pub spans: ValueSpans,
    pub escape: SpanEscape,
    pub numbers: ValueNumbers,
    pub fill_named_optional: bool,
    pub argument_steps: bool,
}

impl Default for ValueSettings {
    fn default() -> Self {
        Self {
            spans: ValueSpans::Off,
            escape: SpanEscape::None,
            numbers: ValueNumbers::Any,
            fill_named_optional: false,
            argument_steps: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub format: Auto<ToolFormat>,
    pub style: Auto<PromptStyle>,
    pub mode: Mode,
    /// `@N`: `tool_shortlist = N`; `@auto`: the default (`auto`); none: all tools.
    pub shortlist: Shortlist,
    /// `+gbnf`: llama.cpp's GBNF sampler instead of llguidance (the default).
    pub engine: GrammarEngine,
    /// `+copyN`: `copy_bias = N`; none: the default (`auto`).
    pub copy_bias: CopyBias,
    /// `+unnamed`: `named_tools = false`.
    pub named_tools: bool,
    pub values: ValueSettings,
}

/// What the `+SUFFIX` parts of a configuration set.
#[derive(Debug, Clone)]
pub struct Suffixes {
    pub engine: GrammarEngine,
    pub copy_bias: CopyBias,
    pub named_tools: bool,
    pub values: ValueSettings,
}

/// Splits the `+SUFFIX` parts off a configuration (`auto:explicit@auto+copy0+gbnf`): returns
/// the head (`auto:explicit@auto`) and what the suffixes set. Every suffix is parsed here.
pub fn parse_suffixes(full: &str) -> Result<(&str, Suffixes), String> {
    let mut s = full;
    let mut out = Suffixes {
        engine: GrammarEngine::Llguidance,
        copy_bias: CopyBias::Auto,
        named_tools: true,
        values: ValueSettings::default(),
    };
    while let Some((head, suffix)) = s.rsplit_once('+') {
        if suffix == "gbnf" {
            out.engine = GrammarEngine::Gbnf;
        } else if suffix == "unnamed" {
            out.named_tools = false;
        } else if suffix == "spans" {
            out.values.spans = ValueSpans::Message;
        } else if suffix == "spans-results" {
            out.values.spans = ValueSpans::MessageResults;
        } else if suffix == "escape" {
            out.values.escape = SpanEscape::Examples;
        } else if suffix == "nums" {
            out.values.numbers = ValueNumbers::Message;
        } else if suffix == "fill" {
            out.values.fill_named_optional = true;
        } else if suffix == "steps" {
            out.values.argument_steps = true;
        } else if let Some(n) = suffix.strip_prefix("copy") {
            out.copy_bias = n
                .parse::<f32>()
                .map(CopyBias::Fixed)
                .map_err(|_| format!("`+{suffix}`: expected +copyN with a number N"))?;
        } else {
            return Err(format!(
                "unknown suffix `+{suffix}` (+gbnf, +copyN, +unnamed, +spans, +spans-results, +escape, +nums, +fill, +steps)"
            ));
        }
        s = head;
    }
    Ok((s, out))
}

pub fn parse_spec(full: &str) -> Result<Spec, String> {
    let (s, suffixes) = parse_suffixes(full)?;
    let (spec, shortlist) = match s.split_once('@') {
        Some((spec, n)) => (
            spec,
            n.parse::<Shortlist>().map_err(|e| format!("`@{n}`: {e}"))?,
        ),
        None => (s, Shortlist::Max(0)),
    };
    let (head, mode) = match spec.split_once(':') {
        Some((h, m)) => (h, m),
        None => (spec, "answer"),
    };
    let mode = match mode {
        "plain" => Mode::Plain,
        "answer" => Mode::Answer,
        "explicit" => Mode::Explicit,
        "required" => Mode::Required,
        other => {
            return Err(format!(
                "unknown mode `{other}` (plain, answer, explicit, required)"
            ));
        }
    };
    let (format, style) = match head.split_once('/') {
        Some((f, st)) => (f, Some(st)),
        None => (head, None),
    };
    let format = if format == "auto" {
        Auto::Auto
    } else {
        Auto::Set(format.parse::<ToolFormat>().map_err(|e| e.to_string())?)
    };
    let style = match style {
        Some(st) => Auto::Set(st.parse::<PromptStyle>()?),
        None => Auto::Auto,
    };
    Ok(Spec {
        name: full.to_string(),
        format,
        style,
        mode,
        shortlist,
        engine: suffixes.engine,
        copy_bias: suffixes.copy_bias,
        named_tools: suffixes.named_tools,
        values: suffixes.values,
    })
}

pub fn settings_for(spec: &Spec) -> ChatSettings {
    ChatSettings {
        tool_format: spec.format,
        prompt_style: spec.style,
        tool_choice: if spec.mode == Mode::Required {
            ToolChoice::Required
        } else {
            ToolChoice::Auto
        },
        tool_decision: if spec.mode == Mode::Explicit {
            ToolDecision::Explicit
        } else {
            ToolDecision::Open
        },
        constrained_decoding: spec.mode != Mode::Plain,
        tool_shortlist: spec.shortlist,
        grammar_engine: spec.engine,
        copy_bias: spec.copy_bias,
        named_tools: spec.named_tools,
        value_spans: spec.values.spans,
        span_escape: spec.values.escape,
        value_numbers: spec.values.numbers,
        fill_named_optional: spec.values.fill_named_optional,
        argument_steps: spec.values.argument_steps,
        // Detect and validate the first round's calls, run none of them.
        max_rounds: 1,
        ..ChatSettings::default()
    }
}
