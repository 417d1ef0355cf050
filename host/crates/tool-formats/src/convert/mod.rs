//! Converters: MCP tool definitions to prompt sections, RKLLM function-tool JSON, JSON Schema,
//! llama.cpp GBNF and llguidance (Lark) grammars; MCP tool results to text in each format.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ToolFormat;

mod gbnf;
pub mod grounded;
mod lark;
mod result;

pub use gbnf::{GrammarMode, gbnf_grammar, gbnf_grammar_with, json_schema_for_calls};
pub use grounded::{Grounding, fill_named_optional, value_grammar};
pub use lark::{close_objects, lark_grammar_grounded, lark_grammar_with};
pub use result::{
    CallToolResultLike, ContentItem, DEFAULT_RESULT_LIMIT, EmbeddedResource, ResultOptions,
    format_tool_result, format_tool_result_with, result_body, truncate_text_content,
};

/// A tool as MCP's `tools/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// How the tool list is presented in the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptStyle {
    /// Hermes/Qwen: `<tools>` block of OpenAI-style JSON function specs plus `<tool_call>` instructions.
    Hermes,
    /// Llama 3.1: JSON function specs and the `{"name", "parameters"}` reply instruction.
    Llama3,
    /// A Markdown list with `[TOOL_CALL]` instructions.
    Markdown,
    /// One-line signatures `get_weather(city: string) — desc` for small context windows.
    Compact,
}

impl PromptStyle {
    pub const ALL: &'static [PromptStyle] = &[
        PromptStyle::Hermes,
        PromptStyle::Llama3,
        PromptStyle::Markdown,
        PromptStyle::Compact,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PromptStyle::Hermes => "hermes",
            PromptStyle::Llama3 => "llama3",
            PromptStyle::Markdown => "markdown",
            PromptStyle::Compact => "compact",
        }
    }

    /// The call format a style's built-in instructions teach.
    pub fn native_format(self) -> ToolFormat {
        match self {
            PromptStyle::Hermes => ToolFormat::Hermes,
            PromptStyle::Llama3 => ToolFormat::Llama3,
            PromptStyle::Markdown | PromptStyle::Compact => ToolFormat::ToolCallJson,
        }
    }
}

impl fmt::Display for PromptStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PromptStyle {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let want = s.trim().to_ascii_lowercase();
        PromptStyle::ALL
            .iter()
            .copied()
            .find(|p| p.name() == want)
            .ok_or_else(|| {
                format!("unknown prompt style `{s}` (known: hermes, llama3, markdown, compact)")
            })
    }
}

impl ToolFormat {
    /// The prompt style that suits models using this format.
    pub fn default_prompt_style(self) -> PromptStyle {
        self.spec().prompt_style
    }
}

/// OpenAI-style function spec of one tool (what chat templates and RKLLM expect).
pub fn openai_function(tool: &ToolDef) -> Value {
    let mut f = Map::new();
    f.insert("name".into(), Value::String(tool.name.clone()));
    if let Some(d) = &tool.description {
        f.insert("description".into(), Value::String(d.clone()));
    }
    f.insert("parameters".into(), tool.input_schema.clone());
    json!({"type": "function", "function": Value::Object(f)})
}

/// `[{"type":"function","function":{name,description,parameters}}, …]` for
/// `rkllm_set_function_tools`.
pub fn rkllm_function_tools_json(tools: &[ToolDef]) -> String {
    Value::Array(tools.iter().map(openai_function).collect()).to_string()
}

/// An exact example call of `name` with `args` in `format`.
pub fn example_call(format: ToolFormat, name: &str, args: &Value) -> String {
    let obj = args.as_object().cloned().unwrap_or_default();
    (format.spec().example)(name, &obj)
}

/// The tool and arguments of the syntax example: placeholders, not a listed tool. Small models
/// copy the example — with a real tool in it they call that tool for every question (measured by
/// the tool_eval bench: 18% right tool with the first tool as example, see the notes there).
pub const EXAMPLE_TOOL: &str = "tool_name";

/// Instructions that tell the model the exact call syntax of `format`, with a placeholder example.
pub fn call_instructions(format: ToolFormat, _tools: &[ToolDef]) -> String {
    let example = example_call(format, EXAMPLE_TOOL, &json!({"argument_name": "value"}));
    let how = format.spec().instructions;
    format!(
        "{how}, exactly like this:\n{example}\nUse the name of the listed tool that fits the question and the arguments it asks for. After a call, stop and wait for the result. If no tool is needed, answer normally without any call syntax."
    )
}

/// Short type of a schema for signatures: `string`, `integer`, `"a"|"b"`, `array<string>`.
fn short_type(schema: &Value) -> String {
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("|");
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => match schema.get("items") {
            Some(items) => format!("array<{}>", short_type(items)),
            None => "array".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() => "any".into(),
        _ => "any".into(),
    }
}

fn properties(schema: &Value) -> (Vec<(String, Value)>, Vec<String>) {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    (props, required)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `get_weather(city: string, days?: integer) — Get the forecast`
pub fn compact_signature(tool: &ToolDef) -> String {
    let (props, required) = properties(&tool.input_schema);
    let params: Vec<String> = props
        .iter()
        .map(|(k, v)| {
            let opt = if required.contains(k) { "" } else { "?" };
            format!("{k}{opt}: {}", short_type(v))
        })
        .collect();
    let mut s = format!("{}({})", tool.name, params.join(", "));
    if let Some(d) = tool
        .description
        .as_deref()
        .map(one_line)
        .filter(|d| !d.is_empty())
    {
        s.push_str(" — ");
        s.push_str(&d);
    }
    s
}

/// The tool list alone, in `style`.
pub fn render_tool_list(style: PromptStyle, tools: &[ToolDef]) -> String {
    match style {
        PromptStyle::Hermes => {
            let lines: Vec<String> = tools
                .iter()
                .map(|t| openai_function(t).to_string())
                .collect();
            format!(
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{}\n</tools>",
                lines.join("\n")
            )
        }
        PromptStyle::Llama3 => {
            let specs: Vec<String> = tools
                .iter()
                .map(|t| serde_json::to_string_pretty(&openai_function(t)).unwrap_or_default())
                .collect();
            format!(
                "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n{}",
                specs.join("\n\n")
            )
        }
        PromptStyle::Markdown => {
            let mut s = String::from("## Available tools\n");
            for t in tools {
                s.push_str(&format!("\n- **{}**", t.name));
                if let Some(d) = t
                    .description
                    .as_deref()
                    .map(one_line)
                    .filter(|d| !d.is_empty())
                {
                    s.push_str(&format!(": {d}"));
                }
                let (props, required) = properties(&t.input_schema);
                for (k, v) in props {
                    let req = if required.contains(&k) {
                        ", required"
                    } else {
                        ""
                    };
                    s.push_str(&format!("\n  - `{k}` ({}{req})", short_type(&v)));
                    if let Some(d) = v.get("description").and_then(Value::as_str).map(one_line) {
                        s.push_str(&format!(": {d}"));
                    }
                }
            }
            s
        }
        PromptStyle::Compact => {
            let lines: Vec<String> = tools.iter().map(compact_signature).collect();
            format!("Tools:\n{}", lines.join("\n"))
        }
    }
}

/// The tool section of a system prompt: the list in `style` plus instructions for the style's
/// native call format.
pub fn render_tool_section(style: PromptStyle, tools: &[ToolDef]) -> String {
    render_tool_section_for(style, style.native_format(), tools)
}

/// The list in `style` with instructions for any call `format` (e.g. a compact list for a
/// Hermes model on a small context window).
pub fn render_tool_section_for(
    style: PromptStyle,
    format: ToolFormat,
    tools: &[ToolDef],
) -> String {
    let heading = if style == PromptStyle::Hermes {
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    } else {
        ""
    };
    format!(
        "{heading}{}\n\n{}",
        render_tool_list(style, tools),
        call_instructions(format, tools)
    )
}

/// The tool section for a model using `format`, in that format's default style.
pub fn render_prompt_for_format(format: ToolFormat, tools: &[ToolDef]) -> String {
    render_tool_section_for(format.default_prompt_style(), format, tools)
}

/// Everything a schema converter hands the runtime for one tool list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversion {
    /// The system-prompt section describing the tools and the exact call syntax.
    pub system_prompt: String,
    /// GBNF for constrained decoding, where the format has one.
    pub grammar: Option<String>,
    /// JSON Schema of one call object, as text.
    pub json_schema: Option<String>,
}

/// The prompt section (in `style`, or the format's default), grammar and call schema for `tools`.
pub fn convert_tools(
    format: ToolFormat,
    style: Option<PromptStyle>,
    tools: &[ToolDef],
) -> Conversion {
    let style = style.unwrap_or(format.default_prompt_style());
    Conversion {
        system_prompt: render_tool_section_for(style, format, tools),
        grammar: gbnf_grammar(format, tools),
        json_schema: (!tools.is_empty()).then(|| json_schema_for_calls(tools).to_string()),
    }
}

/// Parses the JSON text of an MCP `tools` array (or a whole `tools/list` result), naming the
/// offending tool on error.
pub fn parse_tools_json(text: &str) -> Result<Vec<ToolDef>, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("tools JSON is not valid JSON: {e}"))?;
    let items = match v {
        Value::Array(items) => items,
        Value::Object(mut o) => match o.remove("tools") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(
                    "tools JSON: expected an array of tools or an object with a `tools` array"
                        .into(),
                );
            }
        },
        other => {
            return Err(format!(
                "tools JSON: expected an array of tools, got {}",
                crate::parse::kind(&other)
            ));
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .map(|n| format!(" (`{n}`)"))
                .unwrap_or_default();
            serde_json::from_value::<ToolDef>(item).map_err(|e| format!("tools[{i}]{name}: {e}"))
        })
        .collect()
}

/// Parses the JSON text of an MCP `CallToolResult`.
pub fn parse_tool_result_json(text: &str) -> Result<CallToolResultLike, String> {
    serde_json::from_str(text).map_err(|e| format!("tool result JSON: {e}"))
}

#[cfg(test)]
mod tests;
