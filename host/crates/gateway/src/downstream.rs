//! The clients connected to the gateway, seen from the servers behind it.
//!
//! A server behind the gateway asks the gateway (its client) for sampling, elicitation and roots;
//! [`GatewayClient`] hands those requests on to the client whose call to that server is in
//! flight, or, outside any call, to the only connected client (over stdio there is exactly
//! one), when that client declared the capability. A request is never guessed onto one of
//! several clients: with calls of two clients in flight to the server, or two clients connected
//! and no call, it goes to none of them. Otherwise sampling runs on the local model under the
//! `[sampling]` rules, and elicitation is declined.
//! [`ElicitPrompter`] asks the connected client whether a tool call may run.
#![allow(deprecated)] // sampling and roots are deprecated by SEP-2577 but current servers use them.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    LoggingLevel, Root, ServerRequest,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::{Value, json};

use tokio::sync::{mpsc, oneshot};

use super::local_model::LocalModel;
use super::log_floor::most_verbose;
use super::relay::{Ask, CallTarget, CancelOnDrop, InFlight};
use rkmcp_chat::approval::{ApprovalRequest, PromptAnswer, Prompter};
use rkmcp_sessions::client_requests::{ClientRequests, NonInteractive, USER_REJECTED};

/// The connected clients (one per stdio connection or HTTP session).
#[derive(Default)]
pub struct Downstream {
    peers: Mutex<HashMap<u64, Peer<RoleServer>>>,
    /// The roots each client declared, narrowed to the configured ones.
    client_roots: Mutex<HashMap<u64, Vec<Root>>>,
    /// The level each connection set with `logging/setLevel`.
    log_levels: Mutex<HashMap<u64, LoggingLevel>>,
}

impl Downstream {
    /// Records `peer` (connection `id`) as connected.
    pub fn seen(&self, id: u64, peer: &Peer<RoleServer>) {
        let mut peers = self.live_peers();
        peers.entry(id).or_insert_with(|| peer.clone());
    }

    /// The connected clients, without those that went away (and their levels and roots).
    fn live_peers(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Peer<RoleServer>>> {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.retain(|_, p| !p.is_transport_closed());
        self.log_levels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|id, _| peers.contains_key(id));
        self.client_roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|id, _| peers.contains_key(id));
        peers
    }

    /// Every live client with its connection id (for notifications to all).
    pub fn all(&self) -> Vec<(u64, Peer<RoleServer>)> {
        let peers = self.live_peers();
        peers.iter().map(|(id, p)| (*id, p.clone())).collect()
    }

    /// Connection `id`'s client, if it is still connected.
    pub fn peer(&self, id: u64) -> Option<Peer<RoleServer>> {
        self.live_peers().get(&id).cloned()
    }

    /// The client connection, when exactly one is connected (over stdio, always).
    pub fn only_client(&self) -> Option<(u64, Peer<RoleServer>)> {
        let peers = self.live_peers();
        let mut live = peers.iter();
        match (live.next(), live.next()) {
            (Some((id, peer)), None) => Some((*id, peer.clone())),
            _ => None,
        }
    }

    /// Records the level connection `id` set; returns the level to ask the servers for: the
    /// most verbose any connected client set.
    pub fn set_log_level(&self, id: u64, level: LoggingLevel) -> LoggingLevel {
        // Clients that went away no longer count.
        drop(self.live_peers());
        let mut levels = self.log_levels.lock().unwrap_or_else(|e| e.into_inner());
        levels.insert(id, level);
        most_verbose(levels.values().copied()).unwrap_or(level)
    }

    /// The level connection `id` set, if it did.
    pub fn log_level(&self, id: u64) -> Option<LoggingLevel> {
        self.log_levels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .copied()
    }

    /// The roots the servers are given, if a client's: those of the only connected client, if
    /// it declared any. With several clients connected the servers get the configured roots,
    /// not one client's (which would point another client's calls at its directories).
    pub fn client_roots(&self) -> Option<Vec<Root>> {
        let (id, _) = self.only_client()?;
        self.client_roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
    }

    /// Records the roots connection `id` declared (already narrowed).
    pub fn set_client_roots(&self, id: u64, roots: Vec<Root>) {
        self.client_roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, roots);
    }
}

/// Which client a server's request is asked of.
enum Route {
    /// Inside the call that caused it (over HTTP: on that call's stream), on this client.
    Call(mpsc::Sender<Ask>, Peer<RoleServer>),
    /// The only connected client, outside any call.
    Client(Peer<RoleServer>),
    /// No client: the local model or a refusal. The reason, when it is not simply that no
    /// client can answer this kind of request.
    Nobody(Option<&'static str>),
}

/// Whether the client declared roots and can be asked for them now.
pub fn has_roots(peer: &Peer<RoleServer>) -> bool {
    has_back_channel(peer)
        && peer
            .peer_info()
            .is_some_and(|i| i.capabilities.roots.is_some())
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

pub fn has_back_channel(peer: &Peer<RoleServer>) -> bool {
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

impl GatewayClient {
    /// Where a request of `server` goes, for a client that passes `able`.
    fn route(&self, server: &str, able: impl Fn(&Peer<RoleServer>) -> bool) -> Route {
        match self.inflight.target(server) {
            CallTarget::Call { asks, connection } => match self.downstream.peer(connection) {
                Some(peer) if able(&peer) => Route::Call(asks, peer),
                _ => Route::Nobody(None),
            },
            CallTarget::SeveralClients => Route::Nobody(Some(
                "calls of several clients to this server are in flight, and the request does \
                 not say whose it is",
            )),
            CallTarget::NoCall => match self.downstream.only_client() {
                Some((_, peer)) if able(&peer) => Route::Client(peer),
                Some(_) => Route::Nobody(None),
                None if self.downstream.all().is_empty() => Route::Nobody(None),
                None => Route::Nobody(Some(
                    "several clients are connected and none has a call to this server in flight",
                )),
            },
        }
    }
}

/// The refusal's wording for a request no client is asked.
fn nobody_because(why: Option<&str>) -> String {
    why.map(|w| format!(" ({w})")).unwrap_or_default()
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
        let why = match self.route(server, can_sample) {
            Route::Call(call, peer) => {
                tracing::debug!(server, "sampling request asked inside the client's call");
                let (tx, rx) = oneshot::channel();
                if call.send(Ask::Sampling(params.clone(), tx)).await.is_ok()
                    && let Ok(result) = rx.await
                {
                    return result;
                }
                // The call ended meanwhile: its client, outside it.
                return sample(&peer, params)
                    .await
                    .map_err(|e| service_error(server, "sampling", e));
            }
            Route::Client(peer) => {
                tracing::debug!(server, "sampling request forwarded to the connected client");
                return sample(&peer, params)
                    .await
                    .map_err(|e| service_error(server, "sampling", e));
            }
            Route::Nobody(why) => why,
        };
        if let Some(why) = why {
            tracing::info!(server, "sampling request asked of no client: {why}");
        }
        match &self.local {
            Some(local) => local.sample(server, &params).await,
            None => Err(ErrorData::new(
                USER_REJECTED,
                format!(
                    "sampling request from server `{server}` denied: no connected client can \
                     answer it{} and the local model is off (`[serve] local_model = true`)",
                    nobody_because(why)
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
        let able = |p: &Peer<RoleServer>| {
            if url_mode {
                has_back_channel(p)
                    && p.supported_elicitation_modes()
                        .contains(&rmcp::service::ElicitationMode::Url)
            } else {
                can_elicit(p)
            }
        };
        match self.route(server, able) {
            Route::Call(call, peer) => {
                let (tx, rx) = oneshot::channel();
                if call
                    .send(Ask::Elicitation(params.clone(), tx))
                    .await
                    .is_ok()
                    && let Ok(result) = rx.await
                {
                    return result;
                }
                elicit(&peer, params)
                    .await
                    .map_err(|e| service_error(server, "elicitation", e))
            }
            Route::Client(peer) => elicit(&peer, params)
                .await
                .map_err(|e| service_error(server, "elicitation", e)),
            Route::Nobody(why) => {
                if let Some(why) = why {
                    tracing::info!(server, "elicitation asked of no client: {why}");
                }
                self.fallback.elicit(server, params).await
            }
        }
    }

    /// Nothing here reads the terminal: a question to the gateway's client is withdrawn with
    /// `notifications/cancelled` ([`ask_client`]); a local-model sample is discarded.
    fn withdraws_on_cancel(&self) -> bool {
        true
    }

    /// The connected client's roots where it declared some (narrowed to the configured ones),
    /// else the configured roots.
    fn roots(&self) -> Vec<Root> {
        self.downstream
            .client_roots()
            .unwrap_or_else(|| self.fallback.roots())
    }
}

/// Asks the gateway's client `request`. If the future is dropped before the answer — the server
/// behind the gateway cancelled the request it made, or the call it belongs to ended — the client
/// is told with `notifications/cancelled`, so it stops asking its user.
async fn ask_client(
    peer: &Peer<RoleServer>,
    request: ServerRequest,
) -> Result<ClientResult, rmcp::ServiceError> {
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await?;
    let mut guard = CancelOnDrop::new(
        peer.clone(),
        handle.id.clone(),
        "the server behind rkmcp cancelled its request",
    );
    let result = handle.await_response().await;
    guard.disarm();
    result
}

/// `sampling/createMessage` asked of the gateway's client ([`ask_client`]).
pub async fn sample(
    peer: &Peer<RoleServer>,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, rmcp::ServiceError> {
    let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
    match ask_client(peer, request).await? {
        ClientResult::CreateMessageResult(result) => Ok(*result),
        _ => Err(rmcp::ServiceError::UnexpectedResponse),
    }
}

/// `elicitation/create` asked of the gateway's client ([`ask_client`]).
pub async fn elicit(
    peer: &Peer<RoleServer>,
    params: ElicitRequestParams,
) -> Result<ElicitResult, rmcp::ServiceError> {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    match ask_client(peer, request).await? {
        ClientResult::ElicitResult(result) => Ok(result),
        _ => Err(rmcp::ServiceError::UnexpectedResponse),
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
        match elicit(&self.peer, params).await {
            Ok(result) => answer_of(&result),
            Err(err) => {
                tracing::info!("approval question to the client failed: {err}");
                PromptAnswer::Deny
            }
        }
    }
}

/// The key of the gateway's approval question in an `input_required` result.
pub const APPROVAL_INPUT: &str = "rkmcp_approval";

/// Approval for a client without a back-channel (2026-07-28): the question cannot be sent
/// mid-request, so the call ends with `input_required` holding it as an elicitation form
/// ([`approval_input`]); the client asks its user and sends the call again with the answer in
/// `inputResponses` and the `requestState` it got, which ties the answer to this exact call
/// (tool and arguments) — an answer echoed with other arguments is not taken.
pub struct InputPrompter {
    /// The answer the client sent back for this call, if any.
    answer: Option<PromptAnswer>,
    /// Why a person must decide, once the policy asked.
    asked: Mutex<Option<String>>,
}

impl InputPrompter {
    /// For a client that declared form elicitation in the request's `_meta`; `None` otherwise.
    pub fn for_request(
        capabilities: Option<&ClientCapabilities>,
        call_state: &str,
        responses: Option<&rmcp::model::InputResponses>,
        request_state: Option<&str>,
    ) -> Option<Arc<InputPrompter>> {
        let elicitation = capabilities.and_then(|c| c.elicitation.as_ref())?;
        // An empty `elicitation: {}` means form mode (the spec's default).
        let form = elicitation.form.is_some() || elicitation.url.is_none();
        if !form {
            return None;
        }
        let answer = match (responses.and_then(|r| r.get(APPROVAL_INPUT)), request_state) {
            (Some(response), Some(state)) if state == call_state => {
                serde_json::from_value::<ElicitResult>(response.clone())
                    .ok()
                    .map(|r| answer_of(&r))
            }
            _ => None,
        };
        Some(Arc::new(InputPrompter {
            answer,
            asked: Mutex::new(None),
        }))
    }

    /// Why the policy wants a person to decide, if it asked and no answer was at hand.
    pub fn pending_question(&self) -> Option<String> {
        if self.answer.is_some() {
            return None;
        }
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait::async_trait]
impl Prompter for InputPrompter {
    async fn ask(&self, _request: &ApprovalRequest, why: &str) -> PromptAnswer {
        if let Some(answer) = self.answer {
            return answer;
        }
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.to_string());
        PromptAnswer::Deny
    }
}

/// The state that ties an approval answer to one call: a digest of the exposed tool name and
/// its arguments.
pub fn call_state(exposed_name: &str, arguments: &Value) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(exposed_name.as_bytes());
    hash.update([0]);
    hash.update(arguments.to_string().as_bytes());
    format!("rkmcp-approval-{:x}", hash.finalize())
}

/// The `input_required` result asking the client to approve `request`.
pub fn approval_input(
    request: &ApprovalRequest,
    why: &str,
    state: String,
) -> Option<rmcp::model::InputRequiredResult> {
    let params: ElicitRequestParams = serde_json::from_value(approval_form(request, why)).ok()?;
    let mut requests = rmcp::model::InputRequests::new();
    requests.insert(
        APPROVAL_INPUT.to_string(),
        rmcp::model::InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    Some(rmcp::model::InputRequiredResult::new(
        Some(requests),
        Some(state),
    ))
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

    #[tokio::test]
    async fn an_approval_without_a_back_channel_goes_out_as_input_required_and_comes_back() {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        let req = request();
        let state = call_state(&req.exposed_name, &req.arguments);
        // First round: no answer yet; the policy's question is recorded.
        let first = InputPrompter::for_request(Some(&caps), &state, None, None).unwrap();
        assert_eq!(first.ask(&req, "it writes").await, PromptAnswer::Deny);
        assert_eq!(first.pending_question().as_deref(), Some("it writes"));
        let result = approval_input(&req, "it writes", state.clone()).unwrap();
        let v = serde_json::to_value(&result).unwrap();
        assert_eq!(v["resultType"], "input_required", "{v}");
        assert_eq!(v["requestState"], state.as_str(), "{v}");
        assert_eq!(
            v["inputRequests"][APPROVAL_INPUT]["method"], "elicitation/create",
            "{v}"
        );
        // Second round: the answer, tied to this call, is taken.
        let mut responses = rmcp::model::InputResponses::new();
        responses.insert(
            APPROVAL_INPUT.into(),
            json!({"action": "accept", "content": {"decision": "allow_once"}}),
        );
        let second =
            InputPrompter::for_request(Some(&caps), &state, Some(&responses), Some(&state))
                .unwrap();
        assert_eq!(second.ask(&req, "it writes").await, PromptAnswer::AllowOnce);
        assert_eq!(second.pending_question(), None);
        // The same answer echoed for other arguments is not taken: asked again.
        let other = call_state(&req.exposed_name, &json!({"path": "/etc/passwd"}));
        let replayed =
            InputPrompter::for_request(Some(&caps), &other, Some(&responses), Some(&state))
                .unwrap();
        assert_eq!(replayed.ask(&req, "it writes").await, PromptAnswer::Deny);
        assert!(replayed.pending_question().is_some());
        // No elicitation declared: no prompter (the call is denied with the reason).
        assert!(
            InputPrompter::for_request(Some(&ClientCapabilities::default()), &state, None, None)
                .is_none()
        );
        assert!(InputPrompter::for_request(None, &state, None, None).is_none());
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
