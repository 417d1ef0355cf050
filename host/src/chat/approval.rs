//! Who allows a tool call. PLACEHOLDER with the agreed API: helper H1 replaces this file.
use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalConfig {
    pub guards: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    pub server: String,
    pub tool: String,
    pub exposed_name: String,
    pub arguments: serde_json::Value,
    pub annotations: Option<rmcp::model::ToolAnnotations>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow { by: String },
    Deny { by: String, reason: String },
}

pub enum PromptAnswer {
    AllowOnce,
    AllowSession,
    Deny,
}

#[async_trait::async_trait]
pub trait Prompter: Send + Sync {
    async fn ask(&self, request: &ApprovalRequest, why: &str) -> PromptAnswer;
}

pub struct Approver {
    yes: bool,
    prompter: Option<Arc<dyn Prompter>>,
}

impl Approver {
    pub fn new(
        _config: &ApprovalConfig,
        _guards: Vec<rkmcp_plugin_host::ApprovalGuard>,
        prompter: Option<Arc<dyn Prompter>>,
        yes: bool,
    ) -> Result<Self, String> {
        Ok(Approver { yes, prompter })
    }

    pub async fn review(&mut self, request: &ApprovalRequest) -> Verdict {
        if self.yes {
            return Verdict::Allow { by: "--yes".into() };
        }
        if let Some(p) = &self.prompter {
            return match p.ask(request, "").await {
                PromptAnswer::Deny => Verdict::Deny {
                    by: "user".into(),
                    reason: "denied".into(),
                },
                _ => Verdict::Allow { by: "user".into() },
            };
        }
        Verdict::Deny {
            by: "policy".into(),
            reason: "needs approval".into(),
        }
    }

    pub fn is_interactive(&self) -> bool {
        self.prompter.is_some()
    }
}
