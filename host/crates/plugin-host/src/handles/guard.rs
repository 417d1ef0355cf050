//! Approval-guard plugins: one instance reused call after call, rebuilt after a fault.
use std::sync::Arc;

use serde::Serialize;
use tokio::sync::Mutex;

use super::{Slot, wrong_kind};
use crate::error::PluginError;
use crate::plugin::{KindPre, Loaded, guarded};
use crate::wit::latest::types;
use crate::wit::{ApprovalGuardBindings, per_version};

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
    plugin: Arc<Loaded>,
    slot: Mutex<Option<Slot<ApprovalGuardBindings>>>,
}

impl ApprovalGuard {
    pub(crate) fn new(plugin: Arc<Loaded>) -> Result<Self, PluginError> {
        match plugin.pre {
            KindPre::ApprovalGuard(_) => Ok(ApprovalGuard {
                plugin,
                slot: Mutex::new(None),
            }),
            _ => Err(wrong_kind(&plugin, "approval-guard")),
        }
    }

    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    /// Reviews a proposed call. An `ask` for a non-interactive call is turned into `deny`,
    /// because nobody is there to answer.
    pub async fn review(&self, call: &ProposedCall) -> Result<Decision, PluginError> {
        let plugin = self.plugin.clone();
        plugin.check_health()?;
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
        let mut guard = self.slot.lock().await;
        if guard.is_none() {
            let KindPre::ApprovalGuard(pre) = &plugin.pre else {
                return Err(wrong_kind(&plugin, "approval-guard"));
            };
            let mut store = plugin.new_store()?;
            let bindings = per_version!(map pre, p => guarded!(
                plugin,
                &mut store,
                "instantiate",
                plugin.settings.timeout,
                p.instantiate_async(&mut store)
            ))?;
            *guard = Some(Slot { store, bindings });
        }
        let Some(slot) = guard.as_mut() else {
            return Err(PluginError::unusable(&plugin.name, "no instance"));
        };
        let r = per_version!(&slot.bindings, b => guarded!(
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
        });
        match r {
            Ok(types::Decision::Allow) => Ok(Decision::Allow),
            Ok(types::Decision::Deny(reason)) => {
                Ok(Decision::Deny(crate::boundary::reason(reason)))
            }
            Ok(types::Decision::Ask(q)) if call.interactive => {
                Ok(Decision::Ask(crate::boundary::reason(q)))
            }
            Ok(types::Decision::Ask(q)) => Ok(Decision::Deny(format!(
                "needs approval, but rkmcp is not interactive: {}",
                crate::boundary::reason(q)
            ))),
            Err(e) => {
                *guard = None;
                Err(e)
            }
        }
    }
}
