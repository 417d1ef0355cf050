//! Tool-call formats: streaming detectors and schema converters (pure Rust, also compiled into plugins).
//!
//! Small local models write tool calls as text in many model-specific formats. A
//! [`ToolCallDetector`] is fed the streamed output chunk by chunk and splits it into text for the
//! user, complete [`ToolCall`]s and [`DetectorEvent::Malformed`] attempts (reported back to the
//! model). Detectors give the same normalized events for any chunking of the same text and hold
//! back only what could still become a marker.
//!
//! [`convert`] turns MCP tool definitions into prompt sections, RKLLM function-tool JSON, llama.cpp
//! GBNF grammars, and formats tool results for each format.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub mod convert;
mod detect;
mod formats;
mod guess;
pub mod inferred;
mod parse;
mod scan;

/// One complete tool call found in model output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// `call_N` (N counts calls per detector session) unless the format carries its own id.
    pub id: String,
    pub name: String,
    /// Always a JSON object.
    pub arguments: serde_json::Value,
}

/// What a detector found in the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectorEvent {
    /// Text to show the user; call markers are never part of it.
    Text(String),
    /// The model's reasoning (`<think>…</think>`, harmony's analysis channel, …): shown apart
    /// from the answer, never scanned for calls, and not fed back in later turns.
    Reasoning(String),
    /// A complete call.
    ToolCall(ToolCall),
    /// A call that could not be parsed. `raw` is the text the model wrote (markers included) so it
    /// can be reported back to the model; it is neither dropped nor shown as text.
    Malformed { raw: String, error: String },
}

/// Streaming detector for one tool-call format.
pub trait ToolCallDetector: Send {
    /// Feeds the next chunk. Returns nothing while holding back a possible marker prefix.
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent>;
    /// Flushes everything held at the end of a response; the detector can then take the next
    /// response (call ids keep counting).
    fn finish(&mut self) -> Vec<DetectorEvent>;
}

/// Merges adjacent `Text` (and adjacent `Reasoning`) events and drops empty ones, so event lists
/// from different chunkings compare equal.
pub fn normalize(events: Vec<DetectorEvent>) -> Vec<DetectorEvent> {
    let mut out: Vec<DetectorEvent> = Vec::with_capacity(events.len());
    for ev in events {
        match ev {
            DetectorEvent::Text(t) | DetectorEvent::Reasoning(t) if t.is_empty() => {}
            DetectorEvent::Text(t) => match out.last_mut() {
                Some(DetectorEvent::Text(prev)) => prev.push_str(&t),
                _ => out.push(DetectorEvent::Text(t)),
            },
            DetectorEvent::Reasoning(t) => match out.last_mut() {
                Some(DetectorEvent::Reasoning(prev)) => prev.push_str(&t),
                _ => out.push(DetectorEvent::Reasoning(t)),
            },
            other => out.push(other),
        }
    }
    out
}

/// What a detector session knows beyond the format.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DetectorOptions {
    /// Input schemas by tool name: arguments the model writes as text (XML-style formats) are
    /// typed by them. Without one, types are guessed.
    pub schemas: std::collections::HashMap<String, serde_json::Value>,
    /// The rendered prompt already opened a reasoning block (it ends inside `<think>`), so the
    /// reply starts as reasoning and holds a lone close marker. See [`reasoning_open_in_prompt`].
    pub reasoning_open: bool,
}

impl DetectorOptions {
    /// Options with the schemas of `tools`.
    pub fn for_tools(tools: &[convert::ToolDef]) -> DetectorOptions {
        DetectorOptions {
            schemas: tools
                .iter()
                .map(|t| (t.name.clone(), t.input_schema.clone()))
                .collect(),
            reasoning_open: false,
        }
    }
}

/// The reasoning part of a response, split off before any detector sees it: the host runs this in
/// front of detector plugins whose contract has no reasoning event (`rkmcp:plugin@0.1.0`), so a
/// call written while reasoning never reaches them.
pub struct ReasoningFilter(detect::reasoning::Splitter);

impl ReasoningFilter {
    /// The filter for `format`'s reasoning markers; `reasoning_open`: the rendered prompt opened
    /// the block. Formats that carry reasoning in their own syntax (harmony) have nothing to split.
    pub fn new(format: ToolFormat, reasoning_open: bool) -> ReasoningFilter {
        ReasoningFilter(detect::reasoning::Splitter::new(
            format.spec().reasoning,
            format.spec().reasoning_ends,
            reasoning_open && !format.spec().reasoning.is_empty(),
        ))
    }

    /// `Reasoning` events of `chunk`, and the answer text to pass on to the detector.
    pub fn feed(&mut self, chunk: &str) -> (Vec<DetectorEvent>, String) {
        let (mut events, mut answer) = (Vec::new(), String::new());
        self.0.feed(chunk, &mut events, &mut answer);
        (events, answer)
    }

    /// The end of the response: what was held back.
    pub fn finish(&mut self) -> (Vec<DetectorEvent>, String) {
        let (mut events, mut answer) = (Vec::new(), String::new());
        self.0.finish(&mut events, &mut answer);
        (events, answer)
    }
}

/// A response without its reasoning, as the history fed back to the model keeps it (chat
/// templates drop earlier turns' reasoning).
pub fn strip_reasoning(format: ToolFormat, reasoning_open: bool, response: &str) -> String {
    if format == ToolFormat::Harmony {
        return detect::harmony::strip_analysis(response);
    }
    let mut f = ReasoningFilter::new(format, reasoning_open);
    let (_, mut answer) = f.feed(response);
    answer.push_str(&f.finish().1);
    answer
}

/// Whether a rendered prompt leaves a reasoning block open for the reply: it contains `<think>`
/// (or `[THINK]`) after its last close marker — DeepSeek-R1 distills, Qwen3 thinking templates
/// and GLM put `<think>` at the end of the generation prompt. Decided from the rendered prompt,
/// never guessed from the model.
pub fn reasoning_open_in_prompt(prompt: &str) -> bool {
    [
        ("<think>", "</think>"),
        ("[THINK]", "[/THINK]"),
        ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
    ]
    .iter()
    .any(|(open, close)| match prompt.rfind(open) {
        Some(o) => prompt.rfind(close).is_none_or(|c| c < o),
        None => false,
    })
}

/// Runs a whole text through a fresh detector in one chunk (convenience for tests and callers
/// that already have the complete response).
pub fn detect_all(format: ToolFormat, text: &str) -> Vec<DetectorEvent> {
    detect_all_with(format, &DetectorOptions::default(), text)
}

/// [`detect_all`] with options.
pub fn detect_all_with(
    format: ToolFormat,
    opts: &DetectorOptions,
    text: &str,
) -> Vec<DetectorEvent> {
    let mut d = format.detector_with(opts);
    let mut ev = d.feed(text);
    ev.extend(d.finish());
    normalize(ev)
}

macro_rules! formats {
    ($( $(#[$doc:meta])* $variant:ident => $module:ident, )*) => {
        /// The tool-call formats this crate detects. Names (`FromStr`/`Display`) are stable
        /// kebab-case strings used in configuration.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ToolFormat {
            $( $(#[$doc])* $variant, )*
        }

        impl ToolFormat {
            const ALL: &'static [ToolFormat] = &[$(ToolFormat::$variant,)*];

            /// Everything about this format, from its module under `formats`.
            pub(crate) fn spec(self) -> &'static formats::Format {
                match self {
                    $( ToolFormat::$variant => &formats::$module::FORMAT, )*
                }
            }
        }
    };
}

// The table of formats, in priority order: each has a module under `formats/` and a corpus
// folder named by its configuration name.
formats! {
    /// `[TOOL_CALL]{"name":…,"arguments":{…}}[END_TOOL_CALL]`
    ToolCallJson => tool_call_json,
    /// `<tool_call name="f"><argument name="a">v</argument></tool_call>`
    ToolCallXml => tool_call_xml,
    /// Hermes / Qwen2.5 / Qwen3: `<tool_call>{"name":…,"arguments":{…}}</tool_call>`
    Hermes => hermes,
    /// Qwen3-Coder: `<tool_call><function=f><parameter=a>v</parameter></function></tool_call>`
    Qwen3Coder => qwen3_coder,
    /// Llama 3.x JSON: the whole message `{"name":…,"parameters":…}` (`;`-separated), optionally after `<|python_tag|>`.
    Llama3 => llama3,
    /// Mistral: `[TOOL_CALLS][{…}, …]` or `[TOOL_CALLS]name[ARGS]{…}`.
    Mistral => mistral,
    /// Llama 3.2/4 pythonic: the whole message `[f(a=1), g(b="x")]`.
    Pythonic => pythonic,
    /// Gemma 3: a ```` ```tool_code ```` block with Python calls.
    Gemma => gemma,
    /// DeepSeek R1/V3/V3.1 `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>` (and DSML blocks).
    Deepseek => deepseek,
    /// GPT-OSS harmony: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`.
    Harmony => harmony,
    /// Granite: `<|tool_call|>[{"name":…,"arguments":{…}}]`.
    Granite => granite,
    /// A bare JSON object `{"name":…,"arguments":…}` or an array of them as the whole message.
    PlainJson => plain_json,
    /// Gemma 4: `<|tool_call>call:f{a:<|"|>text<|"|>,n:5}<tool_call|>`.
    Gemma4 => gemma4,
    /// FunctionGemma: `<start_function_call>call:f{a:<escape>text<escape>}<end_function_call>`.
    FunctionGemma => function_gemma,
    /// GLM 4.5–4.7: `<tool_call>f<arg_key>a</arg_key><arg_value>v</arg_value></tool_call>`.
    Glm => glm,
    /// Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`.
    KimiK2 => kimi,
    /// Kimi K3: `<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="a" type="string"<|sep|>v<|close|>argument<|sep|>…`.
    KimiK3 => kimi_k3,
    /// DeepSeek V3.2 / V4 DSML: `<｜DSML｜function_calls><｜DSML｜invoke name="f">…`.
    DeepseekDsml => deepseek_dsml,
    /// DeepSeek V4.1 DSML: `<｜DSML｜ calls><｜DSML｜ invoke name="f">…` (a space after the bar).
    DeepseekV41 => deepseek_v41,
    /// Phi-4-mini: `functools[{"name":…,"arguments":{…}}]`.
    Phi4 => phi4,
    /// LFM2: `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`.
    Lfm2 => lfm2,
    /// xLAM: a JSON list of calls as the whole message.
    Xlam => xlam,
    /// SmolLM3: `<tool_call>{…}</tool_call>` (xml tools) or `<code>f(a=1)</code>` (python tools).
    Smollm3 => smollm3,
}

impl ToolFormat {
    /// The stable configuration name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// A fresh streaming detector for this format.
    pub fn detector(self) -> Box<dyn ToolCallDetector> {
        detect::detector(self, &DetectorOptions::default())
    }

    /// A fresh streaming detector that knows the tools' schemas and whether the prompt opened a
    /// reasoning block.
    pub fn detector_with(self, opts: &DetectorOptions) -> Box<dyn ToolCallDetector> {
        detect::detector(self, opts)
    }

    /// Every format, in priority order.
    pub fn all() -> &'static [ToolFormat] {
        Self::ALL
    }

    /// Picks a format from chat-template markers first, then the model name; falls back to
    /// `tool-call-json`, which needs no special tokens.
    pub fn guess(chat_template: Option<&str>, model_name: Option<&str>) -> ToolFormat {
        guess::guess(chat_template, model_name)
    }

    /// The format a template's call-syntax marker or the model name points at, `None` when
    /// only a family resemblance or the fallback would decide: then a format inferred from the
    /// template (`rkmcp-format-infer`) is the better reading.
    pub fn guess_matched(
        chat_template: Option<&str>,
        model_name: Option<&str>,
    ) -> Option<ToolFormat> {
        guess::guess_matched(chat_template, model_name)
    }
}

impl fmt::Display for ToolFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for an unknown format name; lists the known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = ToolFormat::all().iter().map(|t| t.name()).collect();
        write!(
            f,
            "unknown tool-call format `{}` (known: {})",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownFormat {}

impl FromStr for ToolFormat {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let want = s.trim().to_ascii_lowercase().replace('_', "-");
        ToolFormat::all()
            .iter()
            .copied()
            .find(|f| f.name() == want)
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

impl Serialize for ToolFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ToolFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in ToolFormat::all() {
            assert_eq!(f.to_string().parse::<ToolFormat>(), Ok(*f));
        }
        assert_eq!(
            "Tool_Call_JSON".parse::<ToolFormat>(),
            Ok(ToolFormat::ToolCallJson)
        );
        let err = "nope".parse::<ToolFormat>().unwrap_err().to_string();
        assert!(err.contains("nope") && err.contains("hermes"), "{err}");
    }

    #[test]
    fn reasoning_open_is_read_from_the_rendered_prompt() {
        assert!(reasoning_open_in_prompt("<|im_start|>assistant\n<think>\n"));
        assert!(reasoning_open_in_prompt("<｜Assistant｜><think>\n"));
        assert!(!reasoning_open_in_prompt(
            "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        ));
        assert!(!reasoning_open_in_prompt("<|im_start|>assistant\n"));
        assert!(reasoning_open_in_prompt("[INST]hi[/INST][THINK]"));
        assert!(reasoning_open_in_prompt(
            "<|open|>message<|sep|><|open|>think<|sep|>"
        ));
    }

    #[test]
    fn prompt_opened_reasoning_hides_the_lone_close_marker() {
        let opts = DetectorOptions {
            reasoning_open: true,
            ..Default::default()
        };
        let ev = detect_all_with(ToolFormat::Hermes, &opts, "hmm\n</think>\n\nHi");
        assert_eq!(
            ev,
            vec![
                DetectorEvent::Reasoning("hmm".into()),
                DetectorEvent::Text("Hi".into())
            ]
        );
        // Without the fact from the prompt, the text stays as written.
        let ev = detect_all(ToolFormat::Hermes, "hmm\n</think>\n\nHi");
        assert_eq!(ev, vec![DetectorEvent::Text("hmm\n</think>\n\nHi".into())]);
    }

    #[test]
    fn history_drops_reasoning() {
        let raw = "<think>\nplan <tool_call>x</tool_call>\n</think>\n\n<tool_call>{\"name\":\"f\"}</tool_call>";
        assert_eq!(
            strip_reasoning(ToolFormat::Hermes, false, raw),
            "<tool_call>{\"name\":\"f\"}</tool_call>"
        );
        assert_eq!(
            strip_reasoning(ToolFormat::Hermes, true, "hm</think>Hi"),
            "Hi"
        );
        assert_eq!(strip_reasoning(ToolFormat::Hermes, false, "Hi"), "Hi");
        let harmony = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>";
        assert_eq!(
            strip_reasoning(ToolFormat::Harmony, false, harmony),
            "<|start|>assistant<|channel|>final<|message|>Hi<|return|>"
        );
        let mut f = ReasoningFilter::new(ToolFormat::Qwen3Coder, false);
        let (ev, answer) = f.feed("<think>a</think>b");
        assert_eq!(
            (ev, answer.as_str()),
            (vec![DetectorEvent::Reasoning("a".into())], "b")
        );
    }

    #[test]
    fn normalize_merges_text() {
        let ev = vec![
            DetectorEvent::Text("a".into()),
            DetectorEvent::Text(String::new()),
            DetectorEvent::Text("b".into()),
            DetectorEvent::Malformed {
                raw: "x".into(),
                error: "e".into(),
            },
            DetectorEvent::Text("c".into()),
        ];
        assert_eq!(
            normalize(ev),
            vec![
                DetectorEvent::Text("ab".into()),
                DetectorEvent::Malformed {
                    raw: "x".into(),
                    error: "e".into()
                },
                DetectorEvent::Text("c".into()),
            ]
        );
    }
}
