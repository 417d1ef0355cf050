//! The clients connected to the gateway, seen from the servers behind it.
//!
//! A server behind the gateway asks the gateway (its client) for sampling, elicitation and roots;
//! [`GatewayClient`] hands those requests on to the connected client that made the latest request
//! — over stdio there is exactly one — when that client declared the capability. Otherwise
//! sampling runs on the local model under the `[sampling]` rules, and elicitation is declined.
//! [`ElicitPrompter`] asks the connected client whether a tool call may run.
#![allow(deprecated)] // sampling and roots are deprecated by SEP-2577 but current servers use them.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, Root,
};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::{Value, json};

use tokio::sync::oneshot;

use super::local_model::LocalModel;
use super::relay::{Ask, InFlight};
use crate::chat::approval::{ApprovalRequest, PromptAnswer, Prompter};
use crate::mcp::client_requests::{ClientRequests, NonInteractive, USER_REJECTED};

/// The connected clients (one per stdio connection or HTTP session).
#[derive(Default)]
pub struct Downstream {
    peers: Mutex<HashMap<u64, Peer<RoleServer>>>,
    /// The client whose request came last: server requests go to it.
    current: Mutex<Option<Peer<RoleServer>>>,
}

impl Downstream {
    /// Records `peer` (connection `id`) as connected and as the one to ask.
    pub fn seen(&self, id: u64, peer: &Peer<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.retain(|_, p| !p.is_transport_closed());
        peers.entry(id).or_insert_with(|| peer.clone());
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(peer.clone());
    }

    /// Every live client (for notifications to all).
    pub fn all(&self) -> Vec<Peer<RoleServer>> {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.retain(|_, p| !p.is_transport_closed());
        peers.values().cloned().collect()
    }

    pub fn current(&self) -> Option<Peer<RoleServer>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|p| !p.is_transport_closed())
    }
}

/// Whether the client declared sampling / form elicitation (and can be asked mid-request: a
/// 2026-07-28 client has no back-channel).
fn can_sample(peer: &Peer<RoleServer>) -> bool {
    has_back_channel(peer)
        && peer
            .peer_info()
            .is_some_and(|i| i.capabilities.sampling.is_some())
}

fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    has_back_channel(peer)
        && peer
            .supported_elicitation_modes()
            .contains(&rmcp::service::ElicitationMode::Form)
}

fn has_back_channel(peer: &Peer<RoleServer>) -> bool {
    !peer.is_transport_closed()
        && peer
            .peer_info()
            .is_some_and(|i| i.protocol_version.has_initialize())
}

/// What answers the requests of the servers behind the gateway.
pub struct GatewayClient {
    downstream: Arc<Downstream>,
    inflight: Arc<InFlight>,
    local: Option<Arc<LocalModel>>,
    fallback: NonInteractive,
}

impl GatewayClient {
    pub fn new(
        downstream: Arc<Downstream>,
        inflight: Arc<InFlight>,
        local: Option<Arc<LocalModel>>,
        fallback: NonInteractive,
    ) -> Self {
        GatewayClient {
            downstream,
            inflight,
            local,
            fallback,
        }
    }
}

fn service_error(server: &str, what: &str, err: rmcp::ServiceError) -> ErrorData {
    match err {
        rmcp::ServiceError::McpError(data) => data,
        other => ErrorData::internal_error(
            format!("{what} for server `{server}`: the connected client did not answer: {other}"),
            None,
        ),
    }
}

#[async_trait::async_trait]
impl ClientRequests for GatewayClient {
    fn capabilities(&self) -> ClientCapabilities {
        serde_json::from_value(json!({
            "roots": { "listChanged": true },
            "sampling": {},
            "elicitation": { "form": {}, "url": {} },
        }))
        .unwrap_or_default()
    }

    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        if let Some(peer) = self.downstream.current().filter(can_sample) {
            tracing::debug!(server, "sampling request forwarded to the connected client");
            // Inside the call that caused it when there is one (over HTTP: on its stream).
            if let Some(call) = self.inflight.target(server) {
                let (tx, rx) = oneshot::channel();
                if call.send(Ask::Sampling(params.clone(), tx)).await.is_ok()
                    && let Ok(result) = rx.await
                {
                    return result;
                }
            }
            return peer
                .create_message(params)
                .await
                .map_err(|e| service_error(server, "sampling", e));
        }
        match &self.local {
            Some(local) => local.sample(server, &params).await,
            None => Err(ErrorData::new(
                USER_REJECTED,
                format!(
                    "sampling request from server `{server}` denied: the connected client does not \
                     support sampling and the local model is off (`[serve] local_model = true`)"
                ),
                None,
            )),
        }
    }

    async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let url_mode = matches!(params, ElicitRequestParams::UrlElicitationParams { .. });
        if let Some(peer) = self.downstream.current().filter(|p| {
            if url_mode {
                has_back_channel(p)
                    && p.supported_elicitation_modes()
                        .contains(&rmcp::service::ElicitationMode::Url)
            } else {
                can_elicit(p)
            }
        }) {
            if let Some(call) = self.inflight.target(server) {
                let (tx, rx) = oneshot::channel();
                if call
                    .send(Ask::Elicitation(params.clone(), tx))
                    .await
                    .is_ok()
                    && let Ok(result) = rx.await
                {
                    return result;
                }
            }
            return peer
                .create_elicitation(params)
                .await
                .map_err(|e| service_error(server, "elicitation", e));
        }
        self.fallback.elicit(server, params).await
    }

    fn roots(&self) -> Vec<Root> {
        self.fallback.roots()
    }
}

/// Asks the connected client (through form elicitation) whether a call may run.
pub struct ElicitPrompter {
    peer: Peer<RoleServer>,
}

impl ElicitPrompter {
    /// `None` when the client cannot be asked (no form elicitation, or no back-channel).
    pub fn for_peer(peer: &Peer<RoleServer>) -> Option<Arc<dyn Prompter>> {
        can_elicit(peer)
            .then(|| Arc::new(ElicitPrompter { peer: peer.clone() }) as Arc<dyn Prompter>)
    }
}

/// The approval question as an elicitation form.
pub fn approval_form(request: &ApprovalRequest, why: &str) -> Value {
    let args = serde_json::to_string_pretty(&request.arguments).unwrap_or_default();
    json!({
        "mode": "form",
        "message": format!(
            "Allow the tool `{}` of server `{}` to run? ({why})\nArguments:\n{args}",
            request.tool, request.server
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "description": "allow_once, allow_session (this tool until the gateway stops) or deny",
                    "enum": ["allow_once", "allow_session", "deny"]
                }
            },
            "required": ["decision"]
        }
    })
}

/// The answer in an elicitation result: only an accepted `allow_*` allows.
pub fn answer_of(result: &ElicitResult) -> PromptAnswer {
    if result.action != ElicitationAction::Accept {
        return PromptAnswer::Deny;
    }
    match result
        .content
        .as_ref()
        .and_then(|c| c.get("decision"))
        .and_then(Value::as_str)
    {
        Some("allow_once") => PromptAnswer::AllowOnce,
        Some("allow_session") => PromptAnswer::AllowSession,
        _ => PromptAnswer::Deny,
    }
}

#[async_trait::async_trait]
impl Prompter for ElicitPrompter {
    async fn ask(&self, request: &ApprovalRequest, why: &str) -> PromptAnswer {
        let params: ElicitRequestParams = match serde_json::from_value(approval_form(request, why))
        {
            Ok(p) => p,
            Err(err) => {
                tracing::warn!("approval form could not be built: {err}");
                return PromptAnswer::Deny;
            }
        };
        match self.peer.create_elicitation(params).await {
            Ok(result) => answer_of(&result),
            Err(err) => {
                tracing::info!("approval question to the client failed: {err}");
                PromptAnswer::Deny
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            server: "fs".into(),
            tool: "write_file".into(),
            exposed_name: "fs__write_file".into(),
            arguments: json!({"path": "/tmp/x"}),
            annotations: None,
        }
    }

    #[test]
    fn the_approval_form_is_a_valid_elicitation() {
        let form = approval_form(&request(), "it may modify data");
        let params: ElicitRequestParams = serde_json::from_value(form).expect("valid form");
        let text = serde_json::to_string(&params).unwrap_or_default();
        assert!(
            text.contains("write_file") && text.contains("/tmp/x"),
            "{text}"
        );
    }

    #[test]
    fn only_an_accepted_allow_allows() {
        let accept = |d: &str| {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"decision": d}))
        };
        assert_eq!(answer_of(&accept("allow_once")), PromptAnswer::AllowOnce);
        assert_eq!(
            answer_of(&accept("allow_session")),
            PromptAnswer::AllowSession
        );
        assert_eq!(answer_of(&accept("deny")), PromptAnswer::Deny);
        assert_eq!(answer_of(&accept("yes please")), PromptAnswer::Deny);
        assert_eq!(
            answer_of(&ElicitResult::new(ElicitationAction::Decline)),
            PromptAnswer::Deny
        );
        assert_eq!(
            answer_of(&ElicitResult::new(ElicitationAction::Cancel)),
            PromptAnswer::Deny
        );
    }
}
