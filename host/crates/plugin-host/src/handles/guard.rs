//! Approval-guard plugins: one instance reused call after call, rebuilt after a fault.
use std::sync::Arc;

use serde::Serialize;

use super::Reused;
use crate::error::PluginError;
use crate::plugin::{Loaded, guarded};
use crate::wit::latest::types;
use crate::wit::{ApprovalGuardPre, per_version};

/// MCP tool annotations (hints; `None` when the server did not say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolAnnotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposedCall {
    pub server: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub annotations: ToolAnnotations,
    pub interactive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "decision", content = "message")]
pub enum Decision {
    Allow,
    Deny(String),
    Ask(String),
}

pub struct ApprovalGuard {
    instance: Reused<ApprovalGuardPre>,
}

impl ApprovalGuard {
    pub(crate) fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        Ok(ApprovalGuard {
            instance: Reused::new(plugin)?,
        })
    }

    pub fn name(&self) -> &str {
        &self.instance.plugin.name
    }

    /// Reviews a proposed call. An `ask` for a non-interactive call is turned into `deny`,
    /// because nobody is there to answer.
    pub async fn review(&self, call: &ProposedCall) -> Result<Decision, PluginError> {
        let a = &call.annotations;
        let wit_call = types::ProposedCall {
            server: call.server.clone(),
            tool: call.tool.clone(),
            arguments_json: call.arguments.to_string(),
            annotations: types::ToolAnnotations {
                read_only: a.read_only,
                destructive: a.destructive,
                idempotent: a.idempotent,
                open_world: a.open_world,
            },
            interactive: call.interactive,
        };
        let decision = self
            .instance
            .call(async |plugin, slot| {
                per_version!(&slot.bindings, b => guarded!(
                    plugin,
                    &mut slot.store,
                    "review",
                    plugin.settings.timeout,
                    b.rkmcp_plugin_approval_guard()
                        .call_review(&mut slot.store, &wit_call)
                ))
                .and_then(|d| {
                    let size = match &d {
                        types::Decision::Allow => 0,
                        types::Decision::Deny(s) | types::Decision::Ask(s) => s.len(),
                    };
                    plugin.check_output("review", size)?;
                    Ok(d)
                })
            })
            .await?;
        Ok(match decision {
            types::Decision::Allow => Decision::Allow,
            types::Decision::Deny(reason) => Decision::Deny(crate::boundary::reason(reason)),
            types::Decision::Ask(q) if call.interactive => {
                Decision::Ask(crate::boundary::reason(q))
            }
            types::Decision::Ask(q) => Decision::Deny(format!(
                "needs approval, but rkmcp is not interactive: {}",
                crate::boundary::reason(q)
            )),
        })
    }
}
