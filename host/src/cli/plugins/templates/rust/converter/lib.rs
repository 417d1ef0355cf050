//! A schema converter: turns the MCP servers' tools into the system-prompt section that teaches
//! the model the tools and the call format, and formats tool results for the model. This one
//! lists the tools and teaches `CALL name {json arguments}` lines (what the `detector` template
//! of `rkmcp plugins new` reads).

use rkmcp_plugin_sdk::{Conversion, SchemaConverter, ToolCall};

struct LineFormat;

impl SchemaConverter for LineFormat {
    fn new() -> Self {
        LineFormat
    }

    fn convert(&mut self, tools_json: &str) -> Result<Conversion, String> {
        let tools: Vec<serde_json::Value> = serde_json::from_str(tools_json)
            .map_err(|e| format!("tools are not a JSON array: {e}"))?;
        let mut prompt = String::from("You can call these tools:\n");
        for t in &tools {
            let name = t["name"].as_str().unwrap_or("?");
            let about = t["description"].as_str().unwrap_or("");
            prompt.push_str(&format!(
                "- {name}: {about} (arguments: {})\n",
                t["inputSchema"]
            ));
        }
        prompt.push_str("To call one, write a line: CALL name {\"argument\": \"value\"}\n");
        Ok(Conversion {
            system_prompt: prompt,
            grammar: None,
            json_schema: None,
        })
    }

    fn format_result(&mut self, call: ToolCall, result_json: &str) -> Result<String, String> {
        Ok(format!("RESULT {} {}\n", call.name, result_json))
    }
}

rkmcp_plugin_sdk::export_schema_converter!(LineFormat);
