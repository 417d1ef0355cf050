//! Which converter describes the tools to the model and hands it their results: the built-in
//! converter of rkmcp-tool-formats for the tool format, or a schema-converter plugin
//! (`[chat] converter = "NAME"`, a sandboxed WebAssembly component).
//!
//! A plugin is untrusted: it may trap, run out of time or refuse. Whatever it fails on, the
//! built-in converter does instead — the tool section (and grammar) for that tool list, or that
//! one result — and a notice says so. No tool result is lost because a plugin failed on it.
use rkmcp_plugin_host::SchemaConverter;
use rkmcp_tool_formats::ToolCall;
use rkmcp_tool_formats::convert::{CallToolResultLike, ToolDef, truncate_text_content};

/// What a converter plugin made of one tool list.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginConversion {
    /// The plugin's name (for the transcript's grammar name and notices).
    pub plugin: String,
    /// The tool section of the system prompt.
    pub section: String,
    /// The grammar of the rounds that may call a tool (`None`: those rounds are unconstrained).
    pub grammar: Option<String>,
}

/// A schema-converter plugin and its last conversion.
pub struct ConverterPlugin {
    plugin: SchemaConverter,
    /// (tools JSON, what the plugin made of it): the tool list rarely changes between messages,
    /// and a plugin that failed on a list is not asked again for the same list.
    last: Option<(String, Option<PluginConversion>)>,
}

impl ConverterPlugin {
    pub fn new(plugin: SchemaConverter) -> ConverterPlugin {
        ConverterPlugin { plugin, last: None }
    }

    pub fn name(&self) -> &str {
        self.plugin.name()
    }

    /// The plugin's tool section and grammar for `tools`, or `None` and a notice when it
    /// failed (the built-in converter's section is used then).
    pub async fn convert(
        &mut self,
        tools: &[ToolDef],
    ) -> (Option<PluginConversion>, Option<String>) {
        let tools_json = match serde_json::to_string(tools) {
            Ok(j) => j,
            Err(err) => {
                return (
                    None,
                    Some(self.fallback_notice("the tool list", &err.to_string())),
                );
            }
        };
        if let Some((json, conversion)) = &self.last
            && *json == tools_json
        {
            return (conversion.clone(), None);
        }
        let (conversion, notice) = match self.plugin.convert(&tools_json).await {
            Ok(c) if c.system_prompt.trim().is_empty() => (
                None,
                Some(self.fallback_notice("the tool list", "it returned an empty tool section")),
            ),
            Ok(c) => (
                Some(PluginConversion {
                    plugin: self.name().to_string(),
                    section: c.system_prompt,
                    grammar: c.grammar.filter(|g| !g.trim().is_empty()),
                }),
                None,
            ),
            Err(err) => (
                None,
                Some(self.fallback_notice("the tool list", &err.to_string())),
            ),
        };
        self.last = Some((tools_json, conversion.clone()));
        (conversion, notice)
    }

    /// The plugin's text for one result, its text content cut to `max_chars` first (with a
    /// visible notice) so the plugin writes its wrapper around a bounded body. `Err` is the
    /// notice to show when the plugin failed; the caller then formats the result itself.
    pub async fn format_result(
        &self,
        call: &ToolCall,
        result: &CallToolResultLike,
        max_chars: usize,
    ) -> Result<String, String> {
        let what = format!("the result of '{}'", call.name);
        let bounded = truncate_text_content(result, max_chars);
        let json = serde_json::to_string(&bounded)
            .map_err(|e| self.fallback_notice(&what, &e.to_string()))?;
        match self.plugin.format_result(call, &json).await {
            Ok(text) if text.trim().is_empty() => {
                Err(self.fallback_notice(&what, "it returned empty text"))
            }
            Ok(text) => Ok(text),
            Err(err) => Err(self.fallback_notice(&what, &err.to_string())),
        }
    }

    fn fallback_notice(&self, what: &str, why: &str) -> String {
        // The plugin host's error names the plugin too; once is enough.
        let prefix = format!("plugin `{}`: ", self.name());
        let why = why.strip_prefix(&prefix).unwrap_or(why);
        format!(
            "converter plugin `{}` failed on {what} ({why}); the built-in converter is used for it",
            self.name()
        )
    }
}
