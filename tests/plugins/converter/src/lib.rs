//! Test schema converter: a Hermes-style prompt, a GBNF grammar naming the tools, and
//! `<tool_response>` wrapping of results.
use exports::rkmcp::plugin::schema_converter::{Conversion, Guest};
use rkmcp::plugin::types::ToolCall;
use serde_json::Value;

wit_bindgen::generate!({
    path: "../../../wit/rkmcp-plugin@0.1.0",
    world: "schema-converter-plugin",
});

struct Plugin;

impl Guest for Plugin {
    fn convert(tools_json: String) -> Result<Conversion, String> {
        let tools: Value =
            serde_json::from_str(&tools_json).map_err(|e| format!("tools are not JSON: {e}"))?;
        let tools = tools.as_array().ok_or("tools must be a JSON array")?;
        let mut prompt = String::from("You may call these tools:\n");
        let mut names = Vec::new();
        for (i, tool) in tools.iter().enumerate() {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .ok_or(format!("tool #{i} has no name"))?;
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            prompt.push_str(&format!("- {name}: {description}\n"));
            names.push(format!("{:?}", format!("\"{name}\"")));
        }
        prompt.push_str("Call one as <tool_call>{\"name\": …, \"arguments\": {…}}</tool_call>.");
        let grammar = format!(
            "root ::= \"<tool_call>{{\\\"name\\\": \" name \", \\\"arguments\\\": \" object \"}}</tool_call>\"\nname ::= {}\nobject ::= \"{{\" [^}}]* \"}}\"",
            names.join(" | ")
        );
        Ok(Conversion {
            system_prompt: prompt,
            grammar: Some(grammar),
            json_schema: None,
        })
    }

    fn format_result(call: ToolCall, result_json: String) -> Result<String, String> {
        let result: Value =
            serde_json::from_str(&result_json).map_err(|e| format!("result is not JSON: {e}"))?;
        Ok(format!(
            "<tool_response>{}</tool_response>",
            serde_json::json!({"id": call.id, "name": call.name, "content": result})
        ))
    }
}

export!(Plugin);
