//! The gateway's MCP server (rmcp's [`ServerHandler`]): the configured servers' tools, resources,
//! templates and prompts under the names the chat uses, every tool call through rkmcp's approval
//! policy, and the local model as a tool.
//!
//! One [`Gateway`] value serves one client connection (stdio, or one HTTP session); all of them
//! share the sessions to the servers behind ([`Shared`]).
#![allow(deprecated)] // logging and resources/subscribe are deprecated by SEP-2577 but in use.
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResponse, Reference,
    RequestMetaObject, Resource, ResourceTemplate, ResultType, ServerCapabilities,
    SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::downstream::{Downstream, ElicitPrompter, InputPrompter, approval_input, call_state};
use super::instrumentation::{Instrumentation, Record};
use super::local_model::{self, LocalModel};
use super::log_floor::LogFloor;
use super::namespace;
use super::relay::{self, InFlight};
use rkmcp_chat::approval::{ApprovalRequest, Approver, Prompter, Verdict};
use rkmcp_sessions::manager::ResolveError;
use rkmcp_sessions::naming::{self, ServerTools};
use rkmcp_sessions::{Catalog, Session, SessionManager};

/// What every connection shares.
pub struct Shared {
    pub manager: Arc<SessionManager>,
    pub approver: Approver,
    pub local: Option<Arc<LocalModel>>,
    pub instrumentation: Instrumentation,
    pub downstream: Arc<Downstream>,
    pub inflight: Arc<InFlight>,
    /// Items per page of the gateway's own lists.
    pub page_size: usize,
    /// The configured roots: a client's roots may narrow them, never widen them.
    pub roots: rkmcp_sessions::Roots,
}

#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
    /// This connection's number (for [`Downstream`]).
    id: u64,
}

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// A prompt as the gateway lists it, and where it comes from.
struct ExposedPrompt {
    name: String,
    session: Arc<Session>,
    prompt: Prompt,
}

impl Gateway {
    pub fn new(shared: Arc<Shared>) -> Self {
        Gateway {
            shared,
            id: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// A handler for another connection (HTTP sessions).
    pub fn connection(&self) -> Self {
        Gateway::new(self.shared.clone())
    }

    /// Which of the servers' log messages go to the client of this request (see [`LogFloor`]),
    /// and the `_meta` its forwarded copy carries instead of the client's own `meta`: only that
    /// log level (the rest describes the client's connection to the gateway, not the gateway's
    /// to the server).
    fn forward_meta(
        &self,
        context: &RequestContext<RoleServer>,
        meta: &mut Option<RequestMetaObject>,
    ) -> LogFloor {
        let logs = LogFloor::for_request(
            &[meta.as_ref(), Some(&context.meta)],
            self.shared.downstream.log_level(self.id),
        );
        *meta = logs.forwarded_meta();
        logs
    }

    /// This connection as the caller of a relayed request.
    fn caller(&self) -> relay::Caller<'_> {
        relay::Caller {
            inflight: &self.shared.inflight,
            connection: self.id,
        }
    }

    fn manager(&self) -> &SessionManager {
        &self.shared.manager
    }

    /// Runs one request: a tracing span, a record with its outcome, and a caught panic becomes
    /// an internal error (logged with the method) instead of a hung client.
    async fn observe<T>(
        &self,
        method: &str,
        server: Option<&str>,
        tool: Option<&str>,
        context: &RequestContext<RoleServer>,
        outcome: impl Fn(&T) -> &'static str,
        work: impl Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        self.shared.downstream.seen(self.id, &context.peer);
        let span = tracing::info_span!(
            "mcp_request",
            method,
            server = server.unwrap_or(""),
            tool = tool.unwrap_or("")
        );
        let started = Instant::now();
        let result = tracing::Instrument::instrument(
            std::panic::AssertUnwindSafe(work).catch_unwind(),
            span,
        )
        .await;
        let mut record = Record::new(method, server, tool, started.elapsed());
        let result = match result {
            Ok(r) => r,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(
                    method,
                    server = server.unwrap_or(""),
                    tool = tool.unwrap_or(""),
                    "internal fault: {what}"
                );
                record.outcome = "panic".into();
                record.error = Some(what.clone());
                self.shared.instrumentation.record(record);
                return Err(ErrorData::internal_error(
                    format!(
                        "rkmcp serve: internal fault while handling {method} (logged); the gateway keeps running"
                    ),
                    None,
                ));
            }
        };
        match &result {
            Ok(v) => record.outcome = outcome(v).into(),
            Err(e) => {
                record.outcome = if context.ct.is_cancelled() {
                    "cancelled"
                } else {
                    "error"
                }
                .into();
                record.error = Some(e.message.to_string());
            }
        }
        self.shared.instrumentation.record(record);
        result
    }

    /// Every tool under its exposed name (plus the local model's tool).
    fn tools(&self) -> Vec<Tool> {
        let (exposed, _) = self.manager().tools();
        let mut tools: Vec<Tool> = exposed
            .into_iter()
            .map(|t| {
                let mut tool = t.tool;
                tool.name = t.name.into();
                tool
            })
            .collect();
        if self.shared.local.is_some() {
            tools.push(local_model::tool());
        }
        tools
    }

    fn prompts(&self) -> Vec<ExposedPrompt> {
        let sessions = self.manager().sessions();
        let catalogs: Vec<_> = sessions.iter().map(|s| (s, s.catalog().prompts)).collect();
        let inputs: Vec<ServerTools<'_>> = catalogs
            .iter()
            .map(|(s, prompts)| ServerTools {
                server: s.name(),
                prefix: &s.config.prefix,
                tools: prompts.iter().map(|p| p.name.as_str()).collect(),
            })
            .collect();
        let (names, _) = naming::assign(&inputs);
        let all = catalogs
            .iter()
            .flat_map(|(s, prompts)| prompts.iter().map(move |p| (*s, p)));
        names
            .into_iter()
            .zip(all)
            .map(|(n, (s, p))| ExposedPrompt {
                name: n.exposed,
                session: s.clone(),
                prompt: p.clone(),
            })
            .collect()
    }

    /// The server and its own URI for a URI a client sent.
    fn route_uri(&self, uri: &str) -> Result<(Arc<Session>, String), ErrorData> {
        if let Some((server, own)) = namespace::split_uri(uri)
            && let Some(s) = self.manager().session(&server)
            && !s.config.prefix.is_empty()
        {
            return Ok((s.clone(), own.to_string()));
        }
        let unprefixed: Vec<&Arc<Session>> = self
            .manager()
            .sessions()
            .iter()
            .filter(|s| s.config.prefix.is_empty())
            .collect();
        let listed = unprefixed.iter().find(|s| {
            let c = s.catalog();
            c.resources.iter().any(|r| r.uri == uri)
                || c.resource_templates
                    .iter()
                    .any(|t| namespace::matches_template(&t.uri_template, uri))
        });
        let offering = || {
            unprefixed.iter().find(|s| {
                s.server_info()
                    .is_some_and(|i| i.capabilities.resources.is_some())
            })
        };
        match listed.or_else(offering) {
            Some(s) => Ok(((*s).clone(), uri.to_string())),
            None => Err(ErrorData::resource_not_found(
                format!("no server behind rkmcp offers the resource `{uri}`"),
                Some(serde_json::json!({"uri": uri})),
            )),
        }
    }

    fn uri_out(session: &Session, uri: &str) -> String {
        namespace::namespaced_uri(session.name(), !session.config.prefix.is_empty(), uri)
    }

    /// Every session's `list` (resources or templates), each item's URI (`uri`) as the
    /// gateway's clients see it.
    fn catalog_items<T: Clone>(
        &self,
        list: impl Fn(&Catalog) -> &Arc<Vec<T>>,
        uri: impl Fn(&mut T) -> &mut String,
    ) -> Vec<T> {
        let mut all = Vec::new();
        for session in self.manager().sessions().iter() {
            let catalog = session.catalog();
            all.extend(list(&catalog).iter().map(|item| {
                let mut item = item.clone();
                let own = uri(&mut item);
                *own = Self::uri_out(session, own);
                item
            }));
        }
        all
    }

    /// The page of `all` the request's cursor asks for, as the list's result.
    fn page<T: Clone, R: ListResult<T>>(
        &self,
        all: Vec<T>,
        request: &Option<PaginatedRequestParams>,
    ) -> Result<R, ErrorData> {
        let (items, next) =
            namespace::page(&all, cursor(request).as_deref(), self.shared.page_size)?;
        Ok(R::page(items, next))
    }

    /// Asks a client that declared roots for them (in the background: a handler must not wait
    /// on the client it serves), keeps those inside the configured roots, and tells the servers
    /// behind that their client's roots changed.
    fn refresh_client_roots(&self, peer: &rmcp::Peer<RoleServer>) {
        if !super::downstream::has_roots(peer) {
            return;
        }
        let peer = peer.clone();
        let shared = self.shared.clone();
        let connection = self.id;
        tokio::spawn(async move {
            let asked = match peer.list_roots().await {
                Ok(result) => result.roots,
                Err(err) => {
                    tracing::warn!(
                        "the client's roots/list failed: {err}; the configured roots stay"
                    );
                    return;
                }
            };
            let (kept, dropped) =
                rkmcp_sessions::roots::narrow_roots(&asked, &shared.roots.paths());
            for why in dropped {
                tracing::warn!("a root of the client is not passed on: {why}");
            }
            shared.downstream.set_client_roots(connection, kept);
            for err in shared.manager.notify_roots_changed().await {
                tracing::debug!("telling a server its roots changed failed: {err}");
            }
        });
    }

    /// `resolved`: where `request.name` goes ([`SessionManager::resolve_tool`], done once by
    /// the caller, which also names the server in the request's record).
    async fn call(
        &self,
        request: CallToolRequestParams,
        resolved: Result<(Arc<Session>, String), ResolveError>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let arguments = request.arguments.clone().unwrap_or_default();
        let asker = Asker::for_call(&name, &arguments, &request, context);
        let prompter = asker.prompter();
        if name == local_model::TOOL_NAME
            && let Some(local) = &self.shared.local
        {
            let approval = ApprovalRequest {
                server: local_model::SERVER_NAME.into(),
                tool: name.clone(),
                exposed_name: name.clone(),
                arguments: Value::Object(arguments.clone()),
                annotations: local_model::tool().annotations,
            };
            if let Verdict::Deny { by, reason } =
                self.shared.approver.review_with(&approval, prompter).await
            {
                return Ok(asker.refusal(&approval, &by, &reason));
            }
            return Ok(local.generate(&arguments).await.into());
        }
        let (session, tool) =
            resolved.map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let annotations = session.tool_annotations(&tool);
        let approval = ApprovalRequest {
            server: session.name().to_string(),
            tool: tool.clone(),
            exposed_name: name.clone(),
            arguments: Value::Object(arguments),
            annotations,
        };
        if let Verdict::Deny { by, reason } =
            self.shared.approver.review_with(&approval, prompter).await
        {
            return Ok(asker.refusal(&approval, &by, &reason));
        }
        let mut forwarded = request;
        // The gateway's own question was answered here; the server never asked anything.
        forwarded.input_responses = None;
        forwarded.request_state = None;
        forwarded.name = tool.clone().into();
        // The client's progress token arrives in the request's `_meta` (rmcp keeps it there).
        let theirs = forwarded
            .meta
            .as_ref()
            .and_then(|m| m.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        // rmcp gives the request its own progress token; the server's progress under it goes
        // back under the client's.
        let logs = self.forward_meta(context, &mut forwarded.meta);
        let what = format!("calling tool `{tool}`");
        let peer = session.peer();
        // Listening before the call goes out: its first progress may come at once.
        let events = session.subscribe();
        let (ours, answer) = relay::send_tool_call(&peer, forwarded)
            .await
            .map_err(|e| relay::service_error(session.name(), &what, e))?;
        let response = relay::relay_with_events(
            &session,
            events,
            context,
            self.caller(),
            logs,
            &what,
            theirs.map(|t| (ours, t)),
            answer,
        )
        .await?;
        Ok(match response {
            CallToolResponse::Complete(mut result) => {
                complete(&mut result.result_type);
                CallToolResponse::Complete(result)
            }
            other => other,
        })
    }
}

/// Who answers the approval question of one call: the client through a form sent mid-request
/// (it has a back-channel), the client through `input_required` (2026-07-28: no back-channel,
/// the call comes back with the answer), or nobody (denied with the reason).
enum Asker {
    Live(Arc<dyn Prompter>),
    Input {
        prompter: Arc<InputPrompter>,
        state: String,
    },
    Nobody,
}

impl Asker {
    fn for_call(
        name: &str,
        arguments: &serde_json::Map<String, Value>,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Asker {
        if let Some(live) = ElicitPrompter::for_peer(&context.peer) {
            return Asker::Live(live);
        }
        let state = call_state(name, &Value::Object(arguments.clone()));
        let capabilities = context
            .meta
            .client_capabilities()
            .or_else(|| request.meta.as_ref().and_then(|m| m.client_capabilities()));
        match InputPrompter::for_request(
            capabilities.as_ref(),
            &state,
            request.input_responses.as_ref(),
            request.request_state.as_deref(),
        ) {
            Some(prompter) => Asker::Input { prompter, state },
            None => Asker::Nobody,
        }
    }

    fn prompter(&self) -> Option<Arc<dyn Prompter>> {
        match self {
            Asker::Live(p) => Some(p.clone()),
            Asker::Input { prompter, .. } => Some(prompter.clone() as Arc<dyn Prompter>),
            Asker::Nobody => None,
        }
    }

    /// The answer to a denied call: the question as `input_required` when the policy wanted a
    /// person and the client can be asked that way, else the denial.
    fn refusal(&self, approval: &ApprovalRequest, by: &str, reason: &str) -> CallToolResponse {
        if let Asker::Input { prompter, state } = self
            && let Some(why) = prompter.pending_question()
            && let Some(input) = approval_input(approval, &why, state.clone())
        {
            return CallToolResponse::InputRequired(input);
        }
        denied(by, reason).into()
    }
}

/// A result relayed from a server that spoke an older version carries no `resultType`; a
/// 2026-07-28 client needs it (rmcp strips `complete` again for older clients).
fn complete(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}

fn denied(by: &str, reason: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "rkmcp denied this call ({by}): {reason}"
    ))])
}

/// One page of a list result. rmcp's four list results share their shape but no trait.
trait ListResult<T> {
    fn page(items: Vec<T>, next: Option<String>) -> Self;
}

macro_rules! list_result {
    ($($result:ty => $item:ty),* $(,)?) => {$(
        impl ListResult<$item> for $result {
            fn page(items: Vec<$item>, next: Option<String>) -> Self {
                let mut result = <$result>::with_all_items(items);
                result.next_cursor = next;
                result
            }
        }
    )*};
}

list_result! {
    ListToolsResult => Tool,
    ListResourcesResult => Resource,
    ListResourceTemplatesResult => ResourceTemplate,
    ListPromptsResult => Prompt,
}

fn cursor(params: &Option<PaginatedRequestParams>) -> Option<String> {
    params.as_ref().and_then(|p| p.cursor.clone())
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> InitializeResult {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_completions()
            .build();
        capabilities.logging = Some(Default::default());
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("rkmcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "rkmcp: the tools, resources and prompts of the MCP servers configured in rkmcp, \
                 behind its approval policy, and the local model (local_model_generate).",
            )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.observe("tools/list", None, None, &context, |_| "ok", async {
            self.page(self.tools(), &request)
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let resolved = self.manager().resolve_tool(&name);
        let server = resolved
            .as_ref()
            .ok()
            .map(|(s, _)| s.name().to_string())
            .or_else(|| (name == local_model::TOOL_NAME).then(|| local_model::SERVER_NAME.into()));
        let outcome = |r: &CallToolResponse| match r {
            CallToolResponse::Complete(c) if c.is_error == Some(true) => {
                let denied = c
                    .content
                    .first()
                    .and_then(|b| b.as_text())
                    .is_some_and(|t| t.text.starts_with("rkmcp denied"));
                if denied { "denied" } else { "tool_error" }
            }
            CallToolResponse::Complete(_) => "ok",
            CallToolResponse::InputRequired(_) => "input_required",
            CallToolResponse::Task(_) => "task",
            _ => "ok",
        };
        self.observe(
            "tools/call",
            server.as_deref(),
            Some(&name),
            &context,
            outcome,
            self.call(request, resolved, &context),
        )
        .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.observe("resources/list", None, None, &context, |_| "ok", async {
            let all = self.catalog_items(|c| &c.resources, |r: &mut Resource| &mut r.uri);
            self.page(all, &request)
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.observe(
            "resources/templates/list",
            None,
            None,
            &context,
            |_| "ok",
            async {
                let all = self.catalog_items(
                    |c| &c.resource_templates,
                    |t: &mut ResourceTemplate| &mut t.uri_template,
                );
                self.page(all, &request)
            },
        )
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let routed = self.route_uri(&request.uri);
        let server = routed.as_ref().ok().map(|(s, _)| s.name().to_string());
        self.observe(
            "resources/read",
            server.as_deref(),
            None,
            &context,
            |_| "ok",
            async {
                let (session, own) = routed?;
                let mut forwarded = request.clone();
                forwarded.uri = own.clone();
                let logs = self.forward_meta(&context, &mut forwarded.meta);
                let peer = session.peer();
                let response = relay::relay(
                    &session,
                    &context,
                    self.caller(),
                    logs,
                    &format!("reading resource `{own}`"),
                    peer.read_resource_once(forwarded),
                )
                .await?;
                Ok(match response {
                    ReadResourceResponse::Complete(mut result) => {
                        complete(&mut result.result_type);
                        if session.config.prefix.is_empty() {
                            return Ok(ReadResourceResponse::Complete(result));
                        }
                        for item in &mut result.contents {
                            // Contents name their URI; the client knows the namespaced one.
                            if let Ok(mut v) = serde_json::to_value(&*item)
                                && let Some(own) = v.get("uri").and_then(Value::as_str)
                            {
                                let namespaced = Self::uri_out(&session, own);
                                v["uri"] = Value::String(namespaced);
                                if let Ok(back) = serde_json::from_value(v) {
                                    *item = back;
                                }
                            }
                        }
                        ReadResourceResponse::Complete(result)
                    }
                    other => other,
                })
            },
        )
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.observe(
            "resources/subscribe",
            None,
            None,
            &context,
            |_| "ok",
            async {
                let (session, own) = self.route_uri(&request.uri)?;
                session
                    .subscribe_resource(&own)
                    .await
                    .map_err(|e| ErrorData::invalid_params(e.to_string(), None))
            },
        )
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.observe(
            "resources/unsubscribe",
            None,
            None,
            &context,
            |_| "ok",
            async {
                let (session, own) = self.route_uri(&request.uri)?;
                session
                    .unsubscribe_resource(&own)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))
            },
        )
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.observe("prompts/list", None, None, &context, |_| "ok", async {
            let all: Vec<Prompt> = self
                .prompts()
                .into_iter()
                .map(|p| {
                    let mut prompt = p.prompt;
                    prompt.name = p.name;
                    prompt
                })
                .collect();
            self.page(all, &request)
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let found = self.prompts().into_iter().find(|p| p.name == request.name);
        let server = found.as_ref().map(|p| p.session.name().to_string());
        self.observe(
            "prompts/get",
            server.as_deref(),
            None,
            &context,
            |_| "ok",
            async {
                let Some(found) = found else {
                    return Err(ErrorData::invalid_params(
                        format!("no prompt named `{}` behind rkmcp", request.name),
                        None,
                    ));
                };
                let mut forwarded = request.clone();
                forwarded.name = found.prompt.name.clone();
                let logs = self.forward_meta(&context, &mut forwarded.meta);
                let peer = found.session.peer();
                let response = relay::relay(
                    &found.session,
                    &context,
                    self.caller(),
                    logs,
                    &format!("getting prompt `{}`", found.prompt.name),
                    peer.get_prompt_once(forwarded),
                )
                .await?;
                Ok(match response {
                    GetPromptResponse::Complete(mut result) => {
                        complete(&mut result.result_type);
                        GetPromptResponse::Complete(result)
                    }
                    other => other,
                })
            },
        )
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.observe(
            "completion/complete",
            None,
            None,
            &context,
            |_| "ok",
            async {
                let mut forwarded = request.clone();
                let logs = self.forward_meta(&context, &mut forwarded.meta);
                let session = match &mut forwarded.r#ref {
                    Reference::Prompt(p) => {
                        let found = self
                            .prompts()
                            .into_iter()
                            .find(|e| e.name == p.name)
                            .ok_or_else(|| {
                                ErrorData::invalid_params(
                                    format!("no prompt named `{}`", p.name),
                                    None,
                                )
                            })?;
                        p.name = found.prompt.name.clone();
                        found.session
                    }
                    Reference::Resource(r) => {
                        let (session, own) = self.route_uri(&r.uri)?;
                        r.uri = own;
                        session
                    }
                    _ => {
                        return Err(ErrorData::invalid_params(
                            "completion for a reference kind rkmcp does not know",
                            None,
                        ));
                    }
                };
                let peer = session.peer();
                let mut result = relay::relay(
                    &session,
                    &context,
                    self.caller(),
                    logs,
                    "completion",
                    peer.complete(forwarded),
                )
                .await?;
                complete(&mut result.result_type);
                Ok(result)
            },
        )
        .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Every server behind that logs gets the client's level (a server that fails to take
        // it keeps its configured `log_level`, and the failure is logged, not the client's).
        self.observe("logging/setLevel", None, None, &context, |_| "ok", async {
            // The servers are asked for the most verbose level any client wants; what this
            // client did not ask for is filtered out on its way (see `LogFloor`).
            let level = self.shared.downstream.set_log_level(self.id, request.level);
            let sessions = self.manager().sessions();
            let asks = sessions
                .iter()
                .filter(|s| s.speaks_set_level())
                .map(|s| s.set_log_level(level));
            for err in futures::future::join_all(asks)
                .await
                .into_iter()
                .filter_map(Result::err)
            {
                tracing::warn!("forwarding logging/setLevel: {err}");
            }
            Ok(())
        })
        .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.shared.downstream.seen(self.id, &context.peer);
        tracing::info!("client initialized");
        self.refresh_client_roots(&context.peer);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.shared.downstream.seen(self.id, &context.peer);
        self.refresh_client_roots(&context.peer);
    }
}
