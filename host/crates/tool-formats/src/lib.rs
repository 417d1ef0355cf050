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
mod guess;
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

/// Merges adjacent `Text` events and drops empty ones, so event lists from different chunkings
/// compare equal.
pub fn normalize(events: Vec<DetectorEvent>) -> Vec<DetectorEvent> {
    let mut out: Vec<DetectorEvent> = Vec::with_capacity(events.len());
    for ev in events {
        match ev {
            DetectorEvent::Text(t) if t.is_empty() => {}
            DetectorEvent::Text(t) => match out.last_mut() {
                Some(DetectorEvent::Text(prev)) => prev.push_str(&t),
                _ => out.push(DetectorEvent::Text(t)),
            },
            other => out.push(other),
        }
    }
    out
}

/// Runs a whole text through a fresh detector in one chunk (convenience for tests and callers
/// that already have the complete response).
pub fn detect_all(format: ToolFormat, text: &str) -> Vec<DetectorEvent> {
    let mut d = format.detector();
    let mut ev = d.feed(text);
    ev.extend(d.finish());
    normalize(ev)
}

macro_rules! formats {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )*) => {
        /// The tool-call formats this crate detects. Names (`FromStr`/`Display`) are stable
        /// kebab-case strings used in configuration.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ToolFormat {
            $( $(#[$doc])* $variant, )*
        }

        impl ToolFormat {
            const ALL: &'static [ToolFormat] = &[$(ToolFormat::$variant,)*];

            /// The stable configuration name.
            pub fn name(self) -> &'static str {
                match self {
                    $( ToolFormat::$variant => $name, )*
                }
            }
        }
    };
}

formats! {
    /// `[TOOL_CALL]{"name":…,"arguments":{…}}[END_TOOL_CALL]`
    ToolCallJson => "tool-call-json",
    /// `<tool_call name="f"><argument name="a">v</argument></tool_call>`
    ToolCallXml => "tool-call-xml",
    /// Hermes / Qwen2.5: `<tool_call>{"name":…,"arguments":{…}}</tool_call>`
    Hermes => "hermes",
    /// Qwen3-Coder: `<tool_call><function=f><parameter=a>v</parameter></function></tool_call>`
    Qwen3Coder => "qwen3-coder",
    /// Llama 3.x JSON: the whole message `{"name":…,"parameters":…}` (`;`-separated), optionally after `<|python_tag|>`.
    Llama3 => "llama3",
    /// Mistral: `[TOOL_CALLS][{…}, …]` or `[TOOL_CALLS]name[ARGS]{…}`.
    Mistral => "mistral",
    /// Llama 3.2/4 pythonic: the whole message `[f(a=1), g(b="x")]`.
    Pythonic => "pythonic",
    /// Gemma: a ```` ```tool_code ```` block with Python calls.
    Gemma => "gemma",
    /// DeepSeek R1/V3/V3.1 `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`.
    Deepseek => "deepseek",
    /// GPT-OSS harmony: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`.
    Harmony => "harmony",
    /// Granite: `<|tool_call|>[{"name":…,"arguments":{…}}]`.
    Granite => "granite",
    /// A bare JSON object `{"name":…,"arguments":…}` or an array of them as the whole message.
    PlainJson => "plain-json",
}

impl ToolFormat {
    /// A fresh streaming detector for this format.
    pub fn detector(self) -> Box<dyn ToolCallDetector> {
        detect::detector(self)
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
