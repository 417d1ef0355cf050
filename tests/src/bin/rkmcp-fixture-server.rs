//! A small MCP server of our own for the tests and the bench (stdio, on rmcp).
//!
//! It exists because the public servers do not cover everything the client must handle:
//! paginated lists, a tool list that changes while connected, a near-zero-cost `echo` for
//! measuring client overhead, a server that never answers and one that dies at start, one that
//! answers with a protocol version of its choosing, one that records `logging/setLevel`, one
//! that asks its client to sample well after a call began (`--sample-later`).
//! `--relay PROGRAM ARGS…` is no server at all: it runs PROGRAM and copies bytes between it and
//! its own stdio without reading them, the floor any stdio gateway is measured against.
//!
//! Usage: rkmcp-fixture-server [--tools N] [--page-size K] [--prefix P] [--hang] [--die]
//!        [--protocol-version V] [--logging] [--sample-later]
//!        rkmcp-fixture-server --relay PROGRAM [ARG…]
// logging/setLevel is deprecated by SEP-2577 (2026-07-28); this fixture records it on purpose.
#![allow(deprecated)]
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResult, Implementation, InitializeResult, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResult, ServerCapabilities, SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct Fixture {
    tools: Arc<Mutex<Vec<Value>>>,
    page_size: usize,
    /// `--protocol-version V`: the only version this server speaks (any string, e.g. 1999-01-01).
    protocol_version: Option<ProtocolVersion>,
    /// `--logging`: declare logging and record the level `logging/setLevel` asked for.
    logging: bool,
    log_level: Arc<Mutex<Option<String>>>,
}

fn tool_json(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
        },
    })
}

/// One page of `items` starting at the offset encoded in the cursor.
fn page(
    items: &[Value],
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<Value>, Option<String>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix("offset-")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| ErrorData::invalid_params(format!("bad cursor {c}"), None))?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| format!("offset-{end}"));
    Ok((items.get(start..end).unwrap_or(&[]).to_vec(), next))
}

fn cursor(request: &Option<PaginatedRequestParams>) -> Option<String> {
    request.as_ref().and_then(|r| r.cursor.clone())
}

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> InitializeResult {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_prompts()
            .build();
        if self.logging {
            capabilities.logging = Some(Default::default());
        }
        let info = InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("rkmcp-fixture-server", "0.1.0"));
        match &self.protocol_version {
            Some(v) => info.with_protocol_version(v.clone()),
            None => info,
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match &self.protocol_version {
            Some(v) => Cow::Owned(vec![v.clone()]),
            None => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(request.level)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        *self
            .log_level
            .lock()
            .map_err(|_| ErrorData::internal_error("poisoned", None))? =
            level.as_str().map(str::to_string);
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tools
            .lock()
            .map_err(|_| ErrorData::internal_error("poisoned", None))?
            .clone();
        let (items, next) = page(&tools, cursor(&request).as_deref(), self.page_size)?;
        from_json(json!({"tools": items, "nextCursor": next}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = |t: String| Ok(CallToolResult::success(vec![ContentBlock::text(t)]).into());
        match request.name.as_ref() {
            "echo" => text(
                args.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            "add_tool" => {
                let name = {
                    let mut tools = self
                        .tools
                        .lock()
                        .map_err(|_| ErrorData::internal_error("poisoned", None))?;
                    let name = format!("dynamic_{}", tools.len());
                    tools.push(tool_json(&name, "added at run time"));
                    name
                };
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                text(format!("added {name}"))
            }
            "sleep" => {
                let secs = args
                    .get("seconds")
                    .and_then(Value::as_f64)
                    .unwrap_or(3600.0);
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs_f64(secs)) => {
                        text("slept".into())
                    }
                    // Written to stderr (the client's server log) so tests can see that the
                    // client sent notifications/cancelled.
                    _ = context.ct.cancelled() => {
                        eprintln!("fixture: sleep cancelled by the client");
                        text("cancelled".into())
                    }
                }
            }
            "fail" => {
                Ok(CallToolResult::error(vec![ContentBlock::text("failing on purpose")]).into())
            }
            // Waits `seconds`, then asks its client to sample `prompt`: a server request made
            // well after the call began, when other calls may have started meanwhile.
            "sample_later" => {
                let secs = args.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
                let prompt = args
                    .get("prompt")
                    .and_then(Value::as_str)
                    .unwrap_or("hello")
                    .to_string();
                tokio::time::sleep(std::time::Duration::from_secs_f64(secs)).await;
                let params: rmcp::model::CreateMessageRequestParams = from_json(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 5,
                }))?;
                match context.peer.create_message(params).await {
                    Ok(result) => text(format!(
                        "sampled: {}",
                        serde_json::to_string(&result.message).unwrap_or_default()
                    )),
                    Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "sampling refused: {e}"
                    ))])
                    .into()),
                }
            }
            // The level this request asked for in `_meta` (2026-07-28), else the last setLevel.
            "last_log_level" => match context.meta.log_level() {
                Some(level) => text(format!(
                    "{} (_meta)",
                    serde_json::to_value(level)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                )),
                None => text(
                    self.log_level
                        .lock()
                        .map_err(|_| ErrorData::internal_error("poisoned", None))?
                        .clone()
                        .unwrap_or_else(|| "none".into()),
                ),
            },
            other if other.starts_with("tool_") || other.starts_with("dynamic_") => {
                text(format!("{other} called"))
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let all: Vec<Value> = (0..5)
            .map(|i| json!({"uri": format!("fixture://doc/{i}"), "name": format!("doc {i}"), "mimeType": "text/plain"}))
            .collect();
        let (items, next) = page(&all, cursor(&request).as_deref(), self.page_size)?;
        from_json(json!({"resources": items, "nextCursor": next}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let result: ReadResourceResult = from_json(json!({
            "contents": [{"uri": request.uri, "mimeType": "text/plain", "text": format!("contents of {}", request.uri)}]
        }))?;
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let all: Vec<Value> = (0..3)
            .map(|i| json!({"name": format!("prompt_{i}"), "arguments": [{"name": "topic", "required": true}]}))
            .collect();
        let (items, next) = page(&all, cursor(&request).as_deref(), self.page_size)?;
        from_json(json!({"prompts": items, "nextCursor": next}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let topic = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("topic"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("missing required argument `topic`", None))?;
        let result: GetPromptResult = from_json(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": format!("Tell me about {topic}")}}]
        }))?;
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--relay") {
        return relay(&args[at + 1..]).await;
    }
    let flag = |name: &str| args.iter().any(|a| a == name);
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if flag("--die") {
        eprintln!("fixture: failing at start on purpose");
        std::process::exit(3);
    }
    if flag("--hang") {
        // Read and discard: a server that accepts the connection but never answers.
        let mut sink = tokio::io::sink();
        tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await?;
        return Ok(());
    }
    let n: usize = value("--tools").and_then(|v| v.parse().ok()).unwrap_or(0);
    let page_size: usize = value("--page-size")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let prefix = value("--prefix").unwrap_or_default();
    let mut tools = vec![
        tool_json(&format!("{prefix}echo"), "Echoes `message` back"),
        tool_json("add_tool", "Adds a tool and announces list_changed"),
        tool_json("sleep", "Sleeps `seconds` (default an hour)"),
        tool_json("fail", "Returns a tool error"),
    ];
    // Listed only when asked for: other tests pin the fixed list.
    if flag("--sample-later") {
        tools.push(tool_json(
            "sample_later",
            "Waits `seconds`, then asks the client to sample `prompt`",
        ));
    }
    tools.extend((0..n).map(|i| tool_json(&format!("tool_{i:03}"), "numbered tool")));
    let protocol_version = value("--protocol-version")
        .map(|v| serde_json::from_value::<ProtocolVersion>(Value::String(v)))
        .transpose()?;
    let logging = flag("--logging");
    if logging {
        tools.push(tool_json(
            "last_log_level",
            "The level logging/setLevel last asked for",
        ));
    }
    let server = Fixture {
        tools: Arc::new(Mutex::new(tools)),
        page_size: page_size.max(1),
        protocol_version,
        logging,
        log_level: Arc::new(Mutex::new(None)),
    };
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// `--relay PROGRAM ARGS…`: one more process and two more pipe hops, and nothing else (the same
/// non-blocking stdio as `rkmcp serve`).
async fn relay(command: &[String]) -> anyhow::Result<()> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("--relay needs a command"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut to_child = child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
    let mut from_child = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let (mut reader, mut writer) = rmcp::transport::stdio_pipes();
    let down = async {
        tokio::io::copy(&mut reader, &mut to_child).await?;
        drop(to_child);
        anyhow::Ok(())
    };
    let up = async {
        tokio::io::copy(&mut from_child, &mut writer).await?;
        anyhow::Ok(())
    };
    tokio::try_join!(down, up)?;
    child.wait().await?;
    Ok(())
}
