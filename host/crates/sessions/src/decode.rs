//! Lenient decoding of a `tools/list` result: one tool at a time.
//!
//! rmcp decodes the whole result as one value, so a single tool with an unusable `inputSchema`
//! (a string, or missing) makes the result unreadable and the server's whole tool list fails
//! ("Unexpected response type"). Here each tool is decoded on its own; a tool that cannot be
//! used is dropped with a warning naming it and the server, and the others stay available.
use rmcp::model::{ListToolsResult, Tool};
use serde_json::Value;

/// Where a tool's 2025-11-25 `execution.taskSupport` is kept once rmcp has read the tool.
/// rmcp 3.11 has no field for it and drops it, yet a client must not ask for a task unless the
/// tool says "optional" or "required" (a TypeScript-SDK server runs the tool anyway and then
/// fails the call, so asking wrongly runs it twice). `_meta` survives rmcp's parse.
pub const TASK_SUPPORT_META: &str = "io.github.rkmcp/taskSupport";

/// Copies each listed tool's `execution.taskSupport` into its `_meta` under
/// [`TASK_SUPPORT_META`], in a raw JSON-RPC message, before rmcp reads it. Other messages are
/// left alone.
pub fn keep_task_support(message: &mut Value) {
    let Some(tools) = message
        .get_mut("result")
        .and_then(|r| r.get_mut("tools"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        let Some(support) = tool
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        let meta = tool
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(TASK_SUPPORT_META.into(), Value::String(support));
        }
    }
}

/// Whether `tool` may be called as a 2025-11-25 task: it said so (see [`keep_task_support`]).
pub fn allows_tasks(tool: &Tool) -> bool {
    tool.meta
        .as_ref()
        .and_then(|m| m.get(TASK_SUPPORT_META))
        .and_then(Value::as_str)
        .is_some_and(|s| s == "optional" || s == "required")
}

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
    fn task_support_survives_rmcps_parse_and_only_optional_or_required_allow_tasks() {
        let line = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
            {"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
            {"name": "must", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"},
             "_meta": {"vendor/x": 1}},
            {"name": "never", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}},
            {"name": "plain", "inputSchema": {"type": "object"}}
        ]}});
        let decoded = crate::framing::decode_line(line.to_string().as_bytes());
        let crate::framing::Decoded::Message(message) = decoded else {
            panic!("not decoded: {decoded:?}");
        };
        let rmcp::model::JsonRpcMessage::Response(response) = *message else {
            panic!("not a response");
        };
        let rmcp::model::ServerResult::ListToolsResult(list) = response.result else {
            panic!("not a tool list");
        };
        let allowed: Vec<(&str, bool)> = list
            .tools
            .iter()
            .map(|t| (t.name.as_ref(), allows_tasks(t)))
            .collect();
        assert_eq!(
            allowed,
            [
                ("slow", true),
                ("must", true),
                ("never", false),
                ("plain", false)
            ]
        );
        let must = &list.tools[1];
        assert_eq!(
            must.meta.as_ref().and_then(|m| m.get("vendor/x")),
            Some(&json!(1))
        );
    }

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
