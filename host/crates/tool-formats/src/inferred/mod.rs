//! Tool-call formats described as data instead of written as a module: the markers and the call
//! syntax a model's chat template renders, read from the template by rendering it with synthetic
//! conversations (the `rkmcp-format-infer` crate does that; this module stays pure).
//!
//! A description covers the shapes the field uses: a section around all calls of a message
//! (`<|tool_calls_section_begin|>…`), per-call markers (`<tool_call>…</tool_call>`), the name
//! written before the arguments (`[TOOL_CALLS]f[ARGS]{…}`, `<function=f>`, `call:f{…}`, `f(…)`)
//! or inside a JSON call object (`{"name": …, "arguments": …}`), and arguments as one JSON object
//! or as key/value pairs (tags, attributes, Python keyword arguments) whose values are text,
//! literals or strings between quote tokens. From it come a streaming detector with the modules'
//! guarantees ([`InferredFormat::detector`]) and a Lark grammar ([`InferredFormat::lark_grammar`]).
//!
//! Every marker is stored without surrounding whitespace; whitespace inside a marker matches any
//! run of whitespace (or none), as models are loose about newlines between tokens. `{*}` in a
//! marker stands for a run of letters, digits, `_` and `-` that differs per call (a call index,
//! an id, a `string="true"` flag).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod detector;
mod grammar;
mod lexer;
mod parse;
#[cfg(test)]
mod tests;

pub use detector::InferredDetector;

/// The wildcard written in markers for text that differs per call.
pub const WILDCARD: &str = "{*}";

/// A tool-call format read from a chat template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InferredFormat {
    /// Opens the section that holds all calls of a message; empty when each call stands alone.
    #[serde(default)]
    pub section_open: String,
    /// Closes the section; may be empty (the section ends after the last call).
    #[serde(default)]
    pub section_close: String,
    /// Opens each call (after `section_open` for the first one).
    #[serde(default)]
    pub call_open: String,
    /// Closes each call.
    #[serde(default)]
    pub call_close: String,
    /// Between two calls of one section.
    #[serde(default)]
    pub call_separator: String,
    /// The template rendered two calls in one message.
    pub parallel: bool,
    /// Calls only at the very start of a message (the opener is too common to find anywhere:
    /// `[`, `{`), as in whole-message formats.
    pub anchored: bool,
    /// How one call is written between its markers.
    pub call: CallSyntax,
    /// The reasoning block the template writes before the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Markers>,
    /// End-of-turn tokens after an answer (dropped at the very end of a response).
    #[serde(default)]
    pub end_of_turn: Vec<String>,
    /// How the template wraps a tool result in the next turn, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result: Option<Markers>,
    /// What the template writes between the generation prompt and an assistant message's
    /// content (Kimi K3's `<|open|>message<|sep|>`): the model writes it itself, so it is the
    /// frame of the answer, never its text, and reasoning may open after it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message_open: String,
}

/// An open/close marker pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Markers {
    pub open: String,
    pub close: String,
}

/// How one call is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CallSyntax {
    /// One JSON object holding the name and the arguments: `{"name": "f", "arguments": {…}}`.
    JsonObject {
        name_key: String,
        arguments_key: String,
    },
    /// The name, `name_suffix`, the arguments, then `arguments_close`.
    Named {
        /// Between the name and the arguments (`[ARGS]`, `>`, `(`, `{`, `:{*}<|…|>`).
        name_suffix: String,
        arguments: Arguments,
        /// After the arguments (`)`, `}`, `</function>`); may be empty.
        #[serde(default)]
        arguments_close: String,
    },
}

/// How the arguments of a named call are written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Arguments {
    /// One JSON object.
    Json,
    /// `key_prefix KEY key_suffix VALUE value_suffix`, `separator` between pairs.
    Pairs {
        #[serde(default)]
        key_prefix: String,
        key_suffix: String,
        #[serde(default)]
        value_suffix: String,
        #[serde(default)]
        separator: String,
        values: Values,
        /// Text values are written tight against their markers and kept as written; otherwise
        /// (a newline around each value, as Qwen3-Coder writes them) one newline each side is
        /// dropped.
        #[serde(default)]
        verbatim: bool,
        /// Where the value's kind is declared by the [`WILDCARD`] of `key_suffix` (DSML's
        /// `string="true"`, Kimi K3's `type="integer"`): what it reads for each JSON kind the
        /// renders showed (`string`, `integer`, `object`, …). A value whose kind reads as the
        /// `string` one is text as written, any other JSON; the tool's schema decides where the
        /// declaration and the schema disagree. Empty: values are typed by the schema alone.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        kinds: BTreeMap<String, String>,
    },
}

/// How argument values are written in key/value pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Values {
    /// Strings as they are, everything else as JSON; ended by the pair's `value_suffix`. Typed
    /// by the tool's schema.
    Text,
    /// JSON or Python literals (`"x"`, `'x'`, `5`, `True`, `[1, 2]`).
    Literal,
    /// Strings between quote tokens (`<|"|>x<|"|>`), everything else as JSON.
    Quoted { open: String, close: String },
}

/// An inferred description that cannot work, named by what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidFormat(pub String);

impl std::fmt::Display for InvalidFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unusable tool-call format description: {}", self.0)
    }
}

impl std::error::Error for InvalidFormat {}

impl InferredFormat {
    /// What starts a call block in the text: the section opener, else the call opener.
    pub fn opener(&self) -> &str {
        if self.section_open.is_empty() {
            &self.call_open
        } else {
            &self.section_open
        }
    }

    /// Checks what the detector relies on: something opens a call, and text values have an end.
    pub fn validate(&self) -> Result<(), InvalidFormat> {
        let first = self.opener().split_whitespace().next().unwrap_or("");
        if first.is_empty() && !matches!(self.call, CallSyntax::JsonObject { .. }) {
            return Err(InvalidFormat(
                "nothing opens a call (no section or call marker, and the call is not a JSON object)"
                    .into(),
            ));
        }
        if first.starts_with(WILDCARD) {
            return Err(InvalidFormat("a call cannot start with a wildcard".into()));
        }
        if let CallSyntax::Named {
            arguments:
                Arguments::Pairs {
                    values: Values::Text,
                    value_suffix,
                    ..
                },
            ..
        } = &self.call
            && value_suffix.is_empty()
        {
            return Err(InvalidFormat(
                "text values need a marker that ends them (value_suffix is empty)".into(),
            ));
        }
        if let CallSyntax::Named {
            arguments: Arguments::Pairs {
                kinds, key_suffix, ..
            },
            ..
        } = &self.call
            && !kinds.is_empty()
            && !key_suffix.contains(WILDCARD)
        {
            return Err(InvalidFormat(
                "declared value kinds need a wildcard in key_suffix to read them from".into(),
            ));
        }
        if let CallSyntax::Named { name_suffix, .. } = &self.call
            && name_suffix.is_empty()
            && matches!(
                &self.call,
                CallSyntax::Named {
                    arguments: Arguments::Pairs { key_prefix, .. },
                    ..
                } if key_prefix.is_empty()
            )
        {
            return Err(InvalidFormat(
                "the name and the first argument key run together (no marker between them)".into(),
            ));
        }
        Ok(())
    }

    /// A fresh streaming detector for this format.
    pub fn detector(
        &self,
        opts: &crate::DetectorOptions,
    ) -> Result<Box<dyn crate::ToolCallDetector>, InvalidFormat> {
        self.validate()?;
        Ok(detector::build(self, opts))
    }

    /// The text of a response without its reasoning block (what the history keeps).
    pub fn strip_reasoning(&self, reasoning_open: bool, response: &str) -> String {
        let Some(r) = &self.reasoning else {
            return response.to_string();
        };
        let pairs = detector::static_pairs(self, r);
        let mut split = crate::detect::reasoning::Splitter::new(pairs, &[], reasoning_open);
        let (mut events, mut answer) = (Vec::new(), String::new());
        split.feed(response, &mut events, &mut answer);
        split.finish(&mut events, &mut answer);
        answer
    }

    /// An llguidance (Lark) grammar holding the model to one or more calls of `tools` in this
    /// syntax, or (`allow_answer`) a plain answer; `None` without tools.
    pub fn lark_grammar(
        &self,
        tools: &[crate::convert::ToolDef],
        allow_answer: bool,
    ) -> Option<String> {
        grammar::lark(self, tools, allow_answer)
    }

    /// An exact call of `name` with `args` in this syntax (for prompts and tests).
    pub fn example(&self, name: &str, args: &serde_json::Map<String, serde_json::Value>) -> String {
        grammar::example(self, &[(name, args)])
    }

    /// Exact calls in one message.
    pub fn example_calls(
        &self,
        calls: &[(&str, &serde_json::Map<String, serde_json::Value>)],
    ) -> String {
        grammar::example(self, calls)
    }
}
