//! Lenient decoding of a `tools/list` result: one tool at a time.
//!
//! rmcp decodes the whole result as one value, so a single tool with an unusable `inputSchema`
//! (a string, or missing) makes the result unreadable and the server's whole tool list fails
//! ("Unexpected response type"). Here each tool is decoded on its own; a tool that cannot be
//! used is dropped with a warning naming it and the server, and the others stay available.
use rmcp::model::{ListToolsResult, Tool};
use serde_json::Value;

/// A tool left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct DroppedTool {
    /// Its name, or `#N` (its position) when it has none.
    pub name: String,
    pub reason: String,
}

/// Decodes a `tools/list` result tool by tool. `Err` when the result is not a tool list at
/// all (no `tools` array): then there is nothing to save.
pub fn tools_result(value: &Value) -> Result<(ListToolsResult, Vec<DroppedTool>), String> {
    let object = value
        .as_object()
        .ok_or_else(|| "the result is not a JSON object".to_string())?;
    let items = object
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| "the result has no `tools` list".to_string())?;
    let mut tools = Vec::with_capacity(items.len());
    let mut dropped = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match tool(item) {
            Ok(tool) => tools.push(tool),
            Err(reason) => dropped.push(DroppedTool {
                name: item
                    .get("name")
                    .and_then(Value::as_str)
                    .map(|n| super::framing::shorten(n.as_bytes()))
                    .unwrap_or_else(|| format!("#{index}")),
                reason,
            }),
        }
    }
    // Everything but the tools (cursor, _meta, …) decoded as rmcp would.
    let mut rest = object.clone();
    rest.insert("tools".into(), Value::Array(Vec::new()));
    let mut result: ListToolsResult = serde_json::from_value(Value::Object(rest))
        .map_err(|e| format!("the result is not a tool list: {e}"))?;
    result.tools = tools;
    Ok((result, dropped))
}

/// One tool, with the checks rmcp's decoding does not make.
fn tool(item: &Value) -> Result<Tool, String> {
    match item.get("inputSchema") {
        None => return Err("it has no `inputSchema`".into()),
        Some(Value::Object(_)) => {}
        Some(other) => {
            return Err(format!(
                "its `inputSchema` is {}, not a JSON Schema object",
                kind(other)
            ));
        }
    }
    serde_json::from_value::<Tool>(item.clone()).map_err(|e| format!("it cannot be read: {e}"))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_tools_are_dropped_and_named() {
        let value = json!({
            "tools": [
                {"name": "good", "inputSchema": {"type": "object"}},
                {"name": "stringy", "inputSchema": "{\"type\":\"object\"}"},
                {"name": "missing"},
                {"inputSchema": {"type": "object"}},
            ],
            "nextCursor": "page-2",
        });
        let (result, dropped) = tools_result(&value).unwrap();
        assert_eq!(result.tools.len(), 1);
        assert_eq!(result.tools[0].name, "good");
        assert_eq!(result.next_cursor.as_deref(), Some("page-2"));
        let names: Vec<&str> = dropped.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["stringy", "missing", "#3"]);
        assert!(dropped[0].reason.contains("a string"), "{:?}", dropped[0]);
    }

    #[test]
    fn not_a_tool_list_is_an_error() {
        assert!(tools_result(&json!({"content": []})).is_err());
    }
}
