//! Schema-converter plugins: one instance reused call after call, rebuilt after a fault.
use std::sync::Arc;

use serde::Serialize;

use super::Reused;
use crate::error::PluginError;
use crate::plugin::{Loaded, guarded};
use crate::wit::latest::{self, types};
use crate::wit::{SchemaConverterPre, per_version};
use rkmcp_tool_formats::ToolCall;

/// What a schema converter produced for a tools list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conversion {
    pub system_prompt: String,
    pub grammar: Option<String>,
    pub json_schema: Option<String>,
}

/// A schema-converter plugin. One instance serves calls one at a time; after a fault it is
/// discarded and the next call builds a fresh one.
pub struct SchemaConverter {
    instance: Reused<SchemaConverterPre>,
}

impl SchemaConverter {
    pub(crate) fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        Ok(SchemaConverter {
            instance: Reused::new(plugin)?,
        })
    }

    pub fn name(&self) -> &str {
        &self.instance.plugin.name
    }

    /// `tools_json`: the JSON text of an MCP `tools/list` result's `tools` array.
    pub async fn convert(&self, tools_json: &str) -> Result<Conversion, PluginError> {
        let r = self
            .instance
            .call(async |plugin, slot| {
                per_version!(&slot.bindings, b => guarded!(
                    plugin,
                    &mut slot.store,
                    "convert",
                    plugin.settings.timeout,
                    b.rkmcp_plugin_schema_converter()
                        .call_convert(&mut slot.store, tools_json)
                )
                .map(|r| r.map(latest::Conversion::from)))
                .and_then(|r| {
                    if let Ok(c) = &r {
                        let size = c.system_prompt.len()
                            + c.grammar.as_ref().map_or(0, String::len)
                            + c.json_schema.as_ref().map_or(0, String::len);
                        plugin.check_output("convert", size)?;
                    }
                    Ok(r)
                })
            })
            .await?;
        match r {
            Ok(c) => Ok(Conversion {
                system_prompt: c.system_prompt,
                grammar: c.grammar,
                json_schema: c.json_schema,
            }),
            Err(message) => Err(PluginError::Refused {
                plugin: self.name().to_string(),
                call: "convert".into(),
                message: crate::boundary::reason(message),
            }),
        }
    }

    /// Formats a tool result (JSON text of an MCP `CallToolResult`) for the model.
    pub async fn format_result(
        &self,
        call: &ToolCall,
        result_json: &str,
    ) -> Result<String, PluginError> {
        let wit_call = types::ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments_json: call.arguments.to_string(),
        };
        let r = self
            .instance
            .call(async |plugin, slot| {
                per_version!(&slot.bindings, b => guarded!(
                    plugin,
                    &mut slot.store,
                    "format-result",
                    plugin.settings.timeout,
                    b.rkmcp_plugin_schema_converter()
                        .call_format_result(&mut slot.store, &wit_call, result_json)
                ))
                .and_then(|r| {
                    if let Ok(s) = &r {
                        plugin.check_output("format-result", s.len())?;
                    }
                    Ok(r)
                })
            })
            .await?;
        r.map_err(|message| PluginError::Refused {
            plugin: self.name().to_string(),
            call: "format-result".into(),
            message: crate::boundary::reason(message),
        })
    }
}
