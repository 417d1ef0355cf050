//! The default schema converter: MCP tool definitions to the Markdown tool list with
//! `[TOOL_CALL]{"name":…,"arguments":{…}}[END_TOOL_CALL]` instructions, a GBNF grammar and a
//! JSON schema for constrained decoding, and tool results as `[TOOL_RESULT …]` blocks.
//!
//! All of it is `rkmcp-tool-formats`' converter code, the same the host runs natively. Config:
//! `format` (default `tool-call-json`; any format name of rkmcp-tool-formats), `style`
//! (`markdown`, `compact`, `hermes`, `llama3`; default: the format's own) and `max_result_chars`
//! (how much of a tool result the model sees).

use rkmcp_plugin_sdk::{Conversion, SchemaConverter, ToolCall};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{
    PromptStyle, ResultOptions, convert_tools, format_tool_result_with, parse_tool_result_json,
    parse_tools_json,
};

struct DefaultConverter {
    /// The parsed config, or the error every call reports (a typo must not fall back silently).
    settings: Result<Settings, String>,
}

struct Settings {
    format: ToolFormat,
    style: Option<PromptStyle>,
    result: ResultOptions,
}

fn settings(get: impl Fn(&str) -> Option<String>) -> Result<Settings, String> {
    let format = match get("format") {
        Some(f) if !f.trim().is_empty() => f
            .parse::<ToolFormat>()
            .map_err(|e| format!("config `format`: {e}"))?,
        _ => ToolFormat::ToolCallJson,
    };
    let style = match get("style") {
        Some(s) if !s.trim().is_empty() => Some(
            s.parse::<PromptStyle>()
                .map_err(|e| format!("config `style`: {e}"))?,
        ),
        _ => None,
    };
    let mut result = ResultOptions::default();
    if let Some(n) = get("max_result_chars") {
        result.max_chars = n.trim().parse().map_err(|e| {
            format!("config `max_result_chars` must be a whole number, got `{n}`: {e}")
        })?;
    }
    Ok(Settings {
        format,
        style,
        result,
    })
}

impl SchemaConverter for DefaultConverter {
    fn new() -> Self {
        DefaultConverter {
            settings: settings(rkmcp_plugin_sdk::config_get),
        }
    }

    fn convert(&mut self, tools_json: &str) -> Result<Conversion, String> {
        let s = self.settings.as_ref().map_err(Clone::clone)?;
        let tools = parse_tools_json(tools_json)?;
        let c = convert_tools(s.format, s.style, &tools);
        Ok(Conversion {
            system_prompt: c.system_prompt,
            grammar: c.grammar,
            json_schema: c.json_schema,
        })
    }

    fn format_result(&mut self, call: ToolCall, result_json: &str) -> Result<String, String> {
        let s = self.settings.as_ref().map_err(Clone::clone)?;
        let arguments = call
            .arguments()
            .map_err(|e| format!("arguments of call `{}` are not JSON: {e}", call.id))?;
        let call = rkmcp_tool_formats::ToolCall {
            id: call.id,
            name: call.name,
            arguments,
        };
        let result = parse_tool_result_json(result_json)?;
        Ok(format_tool_result_with(s.format, &call, &result, &s.result))
    }
}

rkmcp_plugin_sdk::export_schema_converter!(DefaultConverter);

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn settings_default_and_errors() {
        let s = settings(cfg(&[])).unwrap();
        assert_eq!(s.format, ToolFormat::ToolCallJson);
        assert_eq!(s.style, None);
        let s = settings(cfg(&[("format", "hermes"), ("style", "compact")])).unwrap();
        assert_eq!(
            (s.format, s.style),
            (ToolFormat::Hermes, Some(PromptStyle::Compact))
        );
        let e = settings(cfg(&[("format", "nope")])).err().unwrap();
        assert!(e.contains("config `format`") && e.contains("nope"), "{e}");
        let e = settings(cfg(&[("max_result_chars", "lots")]))
            .err()
            .unwrap();
        assert!(e.contains("max_result_chars") && e.contains("lots"), "{e}");
    }
}
